-- perpca_fit on thin statistics (S_i W = Y'(Y W)/n, S_i never formed) and
-- warm starts (init => 'given', start => query of components), against the
-- numpy oracle (test/fixtures/gen_fit_thin.py, test/fixtures/gen_fit.py).
SET extra_float_digits = 0;
\i test/include/fit_helpers.sql
\copy ref FROM 'test/data/fit_thin_ref.csv' CSV HEADER

CREATE TEMP TABLE thin_rows (client int, x float8[]);
\copy thin_rows FROM 'test/data/fit_thin_rows.csv' CSV HEADER
CREATE TEMP TABLE thin_stats AS
    SELECT client, perpca_stats(x) AS stats FROM thin_rows GROUP BY client;
-- ten clients with 8 rows in d = 20 are thin, two with 60 rows dense
SELECT perpca_stats_form(stats) AS form, count(*) AS clients, min(perpca_count(stats)) AS n
FROM thin_stats GROUP BY 1 ORDER BY 1;

-- 1. Thin and dense clients together reach the oracle's optimum for every centre
SELECT c AS center,
       pg_temp.run(format($$perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, center => %L)$$, c)) AS rows,
       pg_temp.suberr('opt_' || c) < 1e-8 AS matches_oracle,
       pg_temp.infeasibility() < 1e-10 AS feasible
FROM unnest(ARRAY['client', 'none', 'global']) c;
-- every start and the baselines work on thin clients too
SELECT i AS init, pg_temp.run(format($$perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => %L)$$, i)) AS rows,
       pg_temp.suberr('opt_client') < 1e-8 AS matches_oracle
FROM unnest(ARRAY['dispca', 'qu', 'pooled', 'random']) i;
SELECT m AS method, pg_temp.run(format($$perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, method => %L)$$, m)) AS rows,
       pg_temp.infeasibility() < 1e-10 AS feasible
FROM unnest(ARRAY['dispca', 'cpca', 'indiv']) m;

-- 2. Warm start from a converged fit: U and each V_i from the start query
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM thin_stats', 2, 2)$$) AS rows;
SELECT rounds_run AS cold_rounds_over_10 FROM (SELECT rounds_run > 10 AS rounds_run FROM perpca_last_fit()) q;
CREATE TEMP TABLE start_fit AS SELECT * FROM fo;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM thin_stats', 2, 2,
                                init => 'given', start => 'SELECT client, kind, component, pc FROM start_fit')$$) AS rows,
       pg_temp.suberr('opt_client') < 1e-8 AS matches_oracle;
SELECT converged, rounds_run <= 3 AS warm_rounds_at_most_3 FROM perpca_last_fit();
-- a start that lacks a client (a new client) and has one the query lacks (a dropped client)
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM thin_stats', 2, 2,
                                init => 'given',
                                start => 'SELECT client, kind, component, pc FROM start_fit WHERE client IS DISTINCT FROM ''3''
                                          UNION ALL SELECT ''99'', ''local'', 1, pc FROM start_fit WHERE client = ''3'' AND component = 1')$$) AS rows,
       pg_temp.suberr('opt_client') < 1e-8 AS matches_oracle,
       pg_temp.infeasibility() < 1e-10 AS feasible;
-- the order of the start rows does not matter
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => 'given',
                                start => 'SELECT client, kind, component, pc FROM start_fit ORDER BY random()')$$) AS rows,
       pg_temp.suberr('opt_client') < 1e-8 AS order_of_start_rows_irrelevant;

-- 3. Errors of the start query
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => 'given');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, start => 'SELECT 1');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => 'given', start => 'SELECT 1');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => 'given',
                                start => 'SELECT client, kind, component, pc FROM start_fit WHERE component = 1');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => 'given',
                                start => 'SELECT client, kind, component, pc[1:5] FROM start_fit');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => 'given',
                                start => 'SELECT client, kind, component, NULL::float8[] FROM start_fit');
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM thin_stats', 2, 2, init => 'given',
                                start => 'DELETE FROM start_fit');
SELECT count(*) AS start_fit_untouched FROM start_fit;
