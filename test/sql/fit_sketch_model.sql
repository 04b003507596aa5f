-- A model trained on sketched statistics (with dense and thin clients, the
-- fixture of fit_sketch.sql, test/fixtures/gen_fit_sketch.py): it stores the
-- bound its fit states (info: total; clients: each one's share), its history
-- shows it, refreshes and a personalized client keep it; the paths that need
-- exact statistics refuse sketches.
SET extra_float_digits = 0;

CREATE TABLE skm (client int, problem text, form text, n bigint, ell int, delta float8,
                 stats perpca_stats, exact perpca_stats);
\copy skm FROM 'test/data/fit_sketch_stats.csv' CSV HEADER
CREATE TEMP TABLE expected (name text, value float8);
\copy expected FROM 'test/data/fit_sketch_expected.csv' CSV HEADER
CREATE FUNCTION pg_temp.x(key text) RETURNS float8 LANGUAGE sql AS $$ SELECT value FROM expected WHERE name = key $$;
-- |a - b| <= tol |b|
CREATE FUNCTION pg_temp.near(a float8, b float8, tol float8) RETURNS boolean LANGUAGE sql AS $$ SELECT abs(a - b) <= tol * abs(b) $$;

CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    hint text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' / ' || nullif(hint, ''), '');
END $$;

-- Trained on a query of sketches (mixed with thin and dense clients)
SELECT model_name, n_clients, converged FROM perpca_train('sketched', 'SELECT client, stats FROM public.skm WHERE problem = ''mixed''', 2, 2);
SELECT pg_temp.near(sketch_bound, pg_temp.x('bound_mixed'), 1e-12) AS info_bound,
       (SELECT max(abs(a - b)) FROM unnest(global_mean, (SELECT perpca_mean(perpca_merge(exact)) FROM skm WHERE problem = 'mixed')) AS t(a, b))
         < 1e-13 AS pooled_mean
FROM sketched_info;
SELECT c.client, s.form, pg_temp.near(c.sketch_bound, 4 * s.delta / (2 * s.n), 1e-15) OR (s.delta = 0 AND c.sketch_bound = 0) AS client_bound,
       pg_temp.near(c.total_variance, perpca_total_variance(s.exact), 1e-12) AS exact_total_variance,
       c.train_error >= 0 AS error, c.score_covariance IS NOT NULL AS monitored
FROM sketched_clients c JOIN skm s ON s.client::text = c.client AND s.problem = 'mixed' ORDER BY c.client;
SELECT entry, kind, outcome, pg_temp.near(sketch_bound, pg_temp.x('bound_mixed'), 1e-12) AS bound FROM perpca_model_history('sketched');
SELECT outcome, pg_temp.near(sketch_bound, pg_temp.x('bound_mixed'), 1e-12) AS bound FROM perpca_refresh('sketched');
SELECT outcome, pg_temp.near(sketch_bound, pg_temp.x('bound_mixed'), 1e-12) AS bound FROM perpca_refresh('sketched', warm => false);
SELECT entry, kind, outcome, pg_temp.near(sketch_bound, pg_temp.x('bound_mixed'), 1e-12) AS bound FROM perpca_model_history('sketched');
-- the model's functions on a sketched client: scores, the monitor
SELECT cardinality(perpca_model_scores('sketched', '1', (SELECT perpca_mean(exact) FROM skm WHERE problem = 'mixed' AND client = 1))) AS scores;
SELECT count(*) AS monitored FROM perpca_model_monitor('sketched', '1', (SELECT perpca_mean(exact) FROM skm WHERE problem = 'mixed' AND client = 1));
-- a client personalized from a sketch gets its own share of the bound
SELECT count(*) AS local FROM perpca_personalize('sketched', 'new', (SELECT stats FROM skm WHERE problem = 'sketch' AND client = 1), 2);
SELECT pg_temp.near(sketch_bound, 4 * (SELECT delta / (2 * n) FROM skm WHERE problem = 'sketch' AND client = 1), 1e-15) AS personalized_bound
FROM sketched_clients WHERE client = 'new';
-- evaluation and choosing the ranks need exact statistics
SELECT pg_temp.err($$SELECT * FROM perpca_evaluate('sketched', 'SELECT client, stats FROM skm WHERE problem = ''mixed''')$$);
SELECT count(*) AS evaluated FROM perpca_evaluate('sketched', 'SELECT client, exact FROM skm WHERE problem = ''mixed''');
SELECT pg_temp.err($$SELECT * FROM perpca_choose_ranks('SELECT client, stats FROM skm WHERE problem = ''mixed''',
                                                         heldout => 'SELECT client, exact FROM skm WHERE problem = ''mixed''',
                                                         global_ranks => '{1}', local_ranks => '{1}')$$);
SELECT perpca_drop('sketched');

DROP TABLE skm;

-- A model of sketches aggregated from rows (perpca_sketch), refreshed when
-- rows and a client come: each fit states its bound
CREATE TABLE skrows AS
SELECT 'c' || (i % 4) AS client,
       ARRAY[sin(i), cos(1.3 * i), 2 * sin(0.7 * i), cos(0.3 * i), sin(2.1 * i), (i % 4) * 0.5 + sin(0.1 * i),
             cos(1.7 * i), sin(3.3 * i)]::float8[] AS x
FROM generate_series(1, 400) i;
SELECT model_name, n_clients FROM perpca_train('sketched_rows', 'SELECT client, perpca_sketch(x, 3) FROM public.skrows GROUP BY client', 1, 1);
SELECT perpca_stats_form(perpca_sketch(x, 3)) AS form FROM skrows;
SELECT sketch_bound > 0 AS bounded, (SELECT count(*) FROM sketched_rows_clients WHERE sketch_bound > 0) AS clients_bounded
FROM sketched_rows_info;
INSERT INTO skrows SELECT 'c4', ARRAY[sin(i), cos(i), 1, 0, sin(2 * i), 0, cos(2 * i), 1]::float8[] FROM generate_series(401, 460) i;
SELECT outcome, clients_added, sketch_bound > 0 AS bounded FROM perpca_refresh('sketched_rows');
SELECT entry, kind, outcome, sketch_bound > 0 AS bounded FROM perpca_model_history('sketched_rows');
SELECT perpca_drop('sketched_rows');
DROP TABLE skrows;
