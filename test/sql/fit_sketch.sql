-- perpca_fit on sketched statistics (Frequent Directions: n, mean and
-- trace exact, M2 approximated by B'B with 0 <= M2 - B'B <= delta I) and on a
-- mix of dense, thin and sketched clients, against the numpy oracle
-- (test/fixtures/gen_fit_sketch.py): the fit, the bound it states for its
-- objective (per client and in total), the paths that refuse sketches, and a
-- sketched fit at d = 16,000 (the model that stores the bound:
-- fit_sketch_model.sql).
SET extra_float_digits = 0;
\i test/include/fit_helpers.sql
\copy ref FROM 'test/data/fit_sketch_ref.csv' CSV HEADER

CREATE TABLE sk (client int, problem text, form text, n bigint, ell int, delta float8,
                 stats perpca_stats, exact perpca_stats);
\copy sk FROM 'test/data/fit_sketch_stats.csv' CSV HEADER
CREATE TEMP TABLE expected (name text, value float8);
\copy expected FROM 'test/data/fit_sketch_expected.csv' CSV HEADER
CREATE FUNCTION pg_temp.x(key text) RETURNS float8 LANGUAGE sql AS $$ SELECT value FROM expected WHERE name = key $$;
-- |a - b| <= tol |b|
CREATE FUNCTION pg_temp.near(a float8, b float8, tol float8) RETURNS boolean LANGUAGE sql AS $$ SELECT abs(a - b) <= tol * abs(b) $$;

-- f = sum_i 1/2 (tr(U'S_iU) + tr(V_i'S_iV_i)) of the fit in fo, on the fit's
-- statistics (stats) or on the exact statistics of the same rows (exact)
CREATE FUNCTION pg_temp.objective_on(on_exact boolean, prob text) RETURNS float8 LANGUAGE sql AS $$
WITH u AS (SELECT array_agg(pc ORDER BY component) AS u FROM fo WHERE kind = 'global'),
v AS (SELECT client, array_agg(pc ORDER BY component) AS v FROM fo WHERE kind = 'local' GROUP BY client)
SELECT sum(0.5 * (perpca_explained_variance(CASE WHEN on_exact THEN s.exact ELSE s.stats END, u.u)
                + perpca_explained_variance(CASE WHEN on_exact THEN s.exact ELSE s.stats END, v.v)))
FROM sk s CROSS JOIN u JOIN v ON v.client = s.client::text WHERE s.problem = prob
$$;

-- the committed values: six sketched clients; two sketched, two thin, two dense
SELECT problem, perpca_stats_form(stats) AS form, count(*) AS clients, min(ell) AS ell,
       bool_and(delta > 0) FILTER (WHERE form = 'sketch') AS shrunk
FROM sk GROUP BY 1, 2 ORDER BY 1, 2;

-- 1. All sketched: the fit is the oracle's on S_i = B'B/n_i; the bound is
-- 1/2 sum_i (n_global + n_local) delta_i / n_i, in the objective's units
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM sk WHERE problem = ''sketch''', 2, 2)$$) AS rows,
       pg_temp.suberr('opt_sketch') < 1e-8 AS matches_oracle,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT converged, pg_temp.near(objective, pg_temp.x('objective_sketch'), 1e-9) AS oracle_objective,
       pg_temp.near(sketch_bound, pg_temp.x('bound_sketch'), 1e-12) AS bound_is_the_formula
FROM perpca_last_fit();
SELECT l.client, l.n = s.n AS n, l.sketch_rows, l.sketch_delta = s.delta AS delta, l.components,
       pg_temp.near(l.sketch_bound, l.components * s.delta / (2 * s.n), 1e-15) AS bound
FROM perpca_last_fit_clients() l JOIN sk s ON s.client::text = l.client AND s.problem = 'sketch'
ORDER BY l.client;
SELECT pg_temp.near(sum(sketch_bound), (SELECT sketch_bound FROM perpca_last_fit()), 1e-14) AS total_is_the_sum
FROM perpca_last_fit_clients();
-- the sketched objective, recomputed; the exact objective of the same
-- components (on the exact statistics) exceeds it by at most the bound
SELECT pg_temp.near(pg_temp.objective_on(false, 'sketch'), objective, 1e-9) AS sketched_objective,
       pg_temp.near(pg_temp.objective_on(true, 'sketch'), pg_temp.x('exact_objective_sketch'), 1e-7) AS oracle_exact_objective,
       pg_temp.objective_on(true, 'sketch') - objective BETWEEN 0 AND sketch_bound AS exact_within_bound
FROM perpca_last_fit();
-- weights => 'samples': N / sum n_i * sum_i n_i bound_i
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM sk WHERE problem = ''sketch''', 2, 2, weights => 'samples')$$) AS rows;
SELECT pg_temp.near((SELECT sketch_bound FROM perpca_last_fit()),
                    count(*) * sum(l.n * l.sketch_bound) / sum(l.n), 1e-12) AS weighted_bound
FROM perpca_last_fit_clients() l;
-- exact inputs: a bound of 0
SELECT pg_temp.run($$perpca_fit('SELECT client, exact FROM sk WHERE problem = ''sketch''', 2, 2)$$) AS rows;
SELECT sketch_bound FROM perpca_last_fit();
SELECT sum(sketch_rows) AS sketch_rows, sum(sketch_delta) AS delta, sum(sketch_bound) AS bound FROM perpca_last_fit_clients();

-- 2. Mixed: two sketched, two thin and two dense clients in one fit
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM sk WHERE problem = ''mixed''', 2, 2)$$) AS rows,
       pg_temp.suberr('opt_mixed') < 1e-8 AS matches_oracle,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT converged, pg_temp.near(objective, pg_temp.x('objective_mixed'), 1e-9) AS oracle_objective,
       pg_temp.near(sketch_bound, pg_temp.x('bound_mixed'), 1e-12) AS bound_is_the_formula,
       pg_temp.objective_on(true, 'mixed') - objective BETWEEN 0 AND sketch_bound AS exact_within_bound
FROM perpca_last_fit();
SELECT s.form, l.sketch_rows, l.sketch_bound > 0 AS bounded FROM perpca_last_fit_clients() l
JOIN sk s ON s.client::text = l.client AND s.problem = 'mixed' ORDER BY l.client;
-- every start, the paper's solver and the one-shot methods take them
SELECT i AS init, pg_temp.run(format($$perpca_fit('SELECT client, stats FROM sk WHERE problem = ''mixed''', 2, 2, init => %L)$$, i)) AS rows,
       pg_temp.suberr('opt_mixed') < 1e-8 AS matches_oracle
FROM unnest(ARRAY['dispca', 'qu', 'pooled', 'random']) i;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM sk WHERE problem = ''mixed''', 2, 2, solver => 'paper', rounds => 20000, tolerance => 1e-10)$$) AS rows,
       pg_temp.suberr('opt_mixed') < 1e-6 AS paper_matches_oracle;
SELECT m AS method, pg_temp.run(format($$perpca_fit('SELECT client, stats FROM sk WHERE problem = ''mixed''', 2, 2, method => %L)$$, m)) AS rows,
       pg_temp.infeasibility() < 1e-10 AS feasible,
       (SELECT sketch_bound > 0 FROM perpca_last_fit()) AS bounded
FROM unnest(ARRAY['dispca', 'cpca', 'indiv']) m;
-- local ranks of the third column count in each client's bound
SELECT pg_temp.run($$perpca_fit('SELECT client, stats, CASE WHEN client = 1 THEN 0 ELSE 2 END FROM sk WHERE problem = ''mixed''', 2, 2)$$) AS rows;
SELECT client, components FROM perpca_last_fit_clients() ORDER BY client LIMIT 2;
-- a client whose rows were all equal: a sketch without rows (S_i = 0 about
-- its own mean) is kept, without variance, and states no bound
CREATE TEMP TABLE flat AS
SELECT 7 AS client, format('v3 n=5 d=40 skipped=0 ell=4 rows=0 delta=0 trace=0 mean=%s mean_lo=%s sketch={}',
                           array_fill(1::float8, ARRAY[40]), array_fill(0::float8, ARRAY[40]))::perpca_stats AS stats;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM sk WHERE problem = ''mixed'' UNION ALL SELECT client, stats FROM flat', 2, 2)$$) AS rows,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT client, sketch_rows, sketch_bound FROM perpca_last_fit_clients() WHERE client = '7';
-- perpca_total_variance of a sketch is its exact trace / n; the variance the
-- components capture is the sketch's
SELECT s.form, pg_temp.near(perpca_total_variance(s.stats), perpca_total_variance(s.exact), 1e-12) AS exact_total,
       perpca_explained_variance(s.stats, (SELECT array_agg(pc ORDER BY component) FROM fo WHERE kind = 'global'))
         <= perpca_explained_variance(s.exact, (SELECT array_agg(pc ORDER BY component) FROM fo WHERE kind = 'global'))
            * (1 + 1e-12) AS sketch_below  -- to rounding: a thin or dense client's value is its exact one
FROM sk s WHERE s.problem = 'mixed' ORDER BY s.client;

-- 3. Paths that need exact statistics refuse sketches, saying what to do
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
    hint text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' / ' || nullif(hint, ''), '');
END $$;
SELECT pg_temp.err($$SELECT * FROM perpca_fit('SELECT client, stats FROM sk WHERE problem = ''mixed''', 2, 2, scale => 'standard')$$);
-- the same client is named whatever order the clients come in
SELECT pg_temp.err($$SELECT * FROM perpca_fit('SELECT client, stats FROM sk WHERE problem = ''mixed'' ORDER BY client DESC', 2, 2, scale => 'standard')$$);
-- A model of exact statistics: its bound is 0 in info, clients and history;
-- a client personalized from a sketch stores its own share; held-out
-- statistics of a sketch are refused by the evaluation
SELECT model_name, n_clients, converged FROM perpca_train('exact_model', 'SELECT client, exact FROM public.sk WHERE problem = ''mixed''', 2, 2);
SELECT sketch_bound FROM exact_model_info;
SELECT count(*) AS clients, sum(sketch_bound) AS bound FROM exact_model_clients;
SELECT entry, kind, outcome, sketch_bound FROM perpca_model_history('exact_model');
SELECT count(*) AS local FROM perpca_personalize('exact_model', 'new', (SELECT stats FROM sk WHERE problem = 'sketch' AND client = 1), 2);
SELECT pg_temp.near(c.sketch_bound, 4 * s.delta / (2 * s.n), 1e-15) AS personalized_bound,
       pg_temp.near(c.total_variance, perpca_total_variance(s.exact), 1e-12) AS exact_total_variance,
       c.score_covariance IS NOT NULL AS monitored
FROM exact_model_clients c, sk s WHERE c.client = 'new' AND s.problem = 'sketch' AND s.client = 1;
SELECT count(*) AS monitored FROM perpca_model_monitor('exact_model', 'new', (SELECT perpca_mean(exact) FROM sk WHERE problem = 'sketch' AND client = 1));
SELECT pg_temp.err($$SELECT * FROM perpca_evaluate('exact_model', 'SELECT client, stats FROM sk WHERE problem = ''mixed''')$$);
SELECT count(*) AS evaluated FROM perpca_evaluate('exact_model', 'SELECT client, exact FROM sk WHERE problem = ''mixed''');
SELECT perpca_drop('exact_model');

-- 4. d = 16,000: sketched clients fit without any d x d matrix; the dense-only
-- method refuses, naming why.  The sketches' rows are a planted direction
-- plus small noise, written as literals from generate_series.
CREATE FUNCTION pg_temp.wide(c int, ell int, n int) RETURNS perpca_stats LANGUAGE sql AS $$
WITH b AS (SELECT r, array_agg(CASE WHEN j = r + c THEN 10.0 / r ELSE 0.01 * sin(j * r + c) END ORDER BY j) AS row
           FROM generate_series(1, ell) r, generate_series(1, 16000) j GROUP BY r)
SELECT format('v3 n=%s d=16000 skipped=0 ell=%s rows=%s delta=0.5 trace=%s mean=%s mean_lo=%s sketch={%s}',
              n, ell, ell,
              (SELECT sum(x * x) FROM b, unnest(b.row) x) + 2 * ell * 0.5,
              array_fill(c::float8, ARRAY[16000]), array_fill(0::float8, ARRAY[16000]),
              (SELECT string_agg(array_to_string(row, ','), ',' ORDER BY r) FROM b))::perpca_stats
$$;
CREATE TEMP TABLE wide AS SELECT c AS client, pg_temp.wide(c, 8, 40) AS stats FROM generate_series(1, 3) c;
SELECT client, perpca_dim(stats), perpca_stats_form(stats) FROM wide ORDER BY client;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM wide', 1, 1)$$) AS rows,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT d, n_clients, theta_est BETWEEN 0 AND 1 AS theta, pg_temp.near(sketch_bound, 3 * 2 * 0.5 / (2 * 40), 1e-12) AS bound
FROM perpca_last_fit();
-- the projection functions and the variance helpers take d = 16,000 too
SELECT cardinality(perpca_scores(array_fill(1.0::float8, ARRAY[16000]),
                                 (SELECT array_agg(pc ORDER BY component) FROM fo WHERE kind = 'global'))) AS scores,
       perpca_explained_variance(stats, (SELECT array_agg(pc ORDER BY component) FROM fo WHERE kind = 'global'))
         <= perpca_total_variance(stats) AS explained
FROM wide WHERE client = 1;
SELECT count(*) AS local FROM perpca_local_pcs((SELECT stats FROM wide WHERE client = 2),
                                                (SELECT array_agg(pc ORDER BY component) FROM fo WHERE kind = 'global'), 12);
SELECT pg_temp.err($$SELECT * FROM perpca_fit('SELECT client, stats FROM wide', 1, 1, method => 'cpca')$$);
-- a model at d = 16,000: stored (with its clients' monitor figures), and its row functions
CREATE TABLE wide_stats AS SELECT client, stats FROM wide;
SELECT model_name, d, n_clients FROM perpca_train('wide_model', 'SELECT client, stats FROM public.wide_stats', 1, 1);
SELECT pg_temp.near(sketch_bound, 3 * 2 * 0.5 / (2 * 40), 1e-12) AS bound FROM wide_model_info;
SELECT count(*) AS clients, bool_and(score_covariance IS NOT NULL AND residual_moments IS NOT NULL) AS monitored
FROM wide_model_clients;
SELECT cardinality(perpca_model_scores('wide_model', '2', array_fill(2.5::float8, ARRAY[16000]))) AS scores,
       perpca_model_error('wide_model', '2', array_fill(2.5::float8, ARRAY[16000])) >= 0 AS error,
       cardinality(perpca_model_reconstruct('wide_model', '2', array_fill(2.5::float8, ARRAY[16000]))) AS reconstructed;
SELECT perpca_drop('wide_model');
-- the covariance of a sketch past 4,096 dimensions: 54000, before any d x d allocation
SELECT pg_temp.err($$SELECT perpca_covariance(stats) FROM wide WHERE client = 1$$);
DROP TABLE wide_stats;
DROP TABLE sk;
