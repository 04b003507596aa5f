-- perpca_fit: converged subspaces, feasibility, options and baselines against
-- the numpy oracle (test/fixtures/gen_fit.py writes test/data/fit_*).
SET extra_float_digits = 0;

CREATE TEMP TABLE e_stats (client int, n int, stats perpca_stats);
\copy e_stats FROM 'test/data/fit_e_stats.csv' CSV HEADER
CREATE TEMP TABLE b_stats (client int, n int, stats perpca_stats);
\copy b_stats FROM 'test/data/fit_b_stats.csv' CSV HEADER
\i test/include/fit_helpers.sql
\copy ref FROM 'test/data/fit_e_ref.csv' CSV HEADER
CREATE TEMP TABLE ref_b (LIKE ref);
\copy ref_b FROM 'test/data/fit_b_ref.csv' CSV HEADER
INSERT INTO ref SELECT 'b_' || name, kind, client, k, vector FROM ref_b;
CREATE TEMP TABLE val (name text, value float8);
\copy val FROM 'test/data/fit_e_values.csv' CSV HEADER

-- 1. Defaults on the oracle's part (e) fixture, uncentered S_i as in the paper
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats ORDER BY client', 2, 3, center => 'none')$$) AS rows;
SELECT pg_temp.suberr('opt_none') < 1e-8 AS matches_oracle,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT l.method, l.converged, l.rounds_run < 5000 AS under_default_rounds,
       abs(l.objective - (SELECT value FROM val WHERE name = 'objective_none')) < 1e-8 AS objective_ok,
       l.kkt_residual < 1e-12 AS kkt_small,
       abs(l.theta_est - (SELECT value FROM val WHERE name = 'theta_est_none')) < 1e-8 AS theta_ok,
       l.n_clients, l.d
FROM perpca_last_fit() l;
-- rows: global first, component order by decreasing variance, unit vectors, sign convention
SELECT kind, client, component, round(variance::numeric, 6) AS variance
FROM fo WHERE client IS NULL OR client = '1' ORDER BY kind, client, component;
SELECT bool_and(abs(pg_temp.dot(pc, pc) - 1) < 1e-12) AS unit,
       bool_and(array_length(pc, 1) = 10) AS length_d,
       bool_and((SELECT x FROM unnest(pc) x ORDER BY abs(x) DESC LIMIT 1) > 0) AS largest_entry_positive
FROM fo;
-- the objective is the paper's f = sum_i 1/2 [tr(U'S_iU) + tr(V_i'S_iV_i)]
SELECT abs((SELECT 0.5 * 20 * sum(variance) FROM fo WHERE kind = 'global')
           + (SELECT 0.5 * sum(variance) FROM fo WHERE kind = 'local')
           - (SELECT objective FROM perpca_last_fit())) < 1e-9 AS variances_sum_to_objective;

-- 2. center: the clients' own covariances (default) and about the pooled mean
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3)$$) AS rows,
       pg_temp.suberr('opt_client') < 1e-8 AS center_client;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'global')$$) AS rows,
       pg_temp.suberr('opt_global') < 1e-8 AS center_global,
       pg_temp.suberr('opt_client') > 1e-4 AS differs_from_client;

-- 3. weights => 'samples' maximizes sum_i n_i f_i
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', weights => 'samples')$$) AS rows,
       pg_temp.suberr('opt_samples') < 1e-8 AS samples,
       pg_temp.suberr('opt_none') > 1e-4 AS differs_from_equal;

-- 4. every start and retraction reaches the same optimum (part (e) is init-independent)
SELECT i AS init, pg_temp.run(format($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', init => %L)$$, i)) AS rows,
       pg_temp.suberr('opt_none') < 1e-8 AS matches_oracle, pg_temp.infeasibility() < 1e-10 AS feasible
FROM unnest(ARRAY['best', 'dispca', 'qu', 'pooled', 'random']) i;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', init => 'random', seed => 7)$$) AS rows,
       pg_temp.suberr('opt_none') < 1e-8 AS seed_7;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', retraction => 'qr')$$) AS rows,
       pg_temp.suberr('opt_none') < 1e-8 AS qr, pg_temp.infeasibility() < 1e-10 AS feasible;
-- same seed, same answer, bit for bit (random start)
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, init => 'random', seed => 3, rounds => 50)$$) AS rows;
CREATE TEMP TABLE fo_first AS SELECT * FROM fo;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, init => 'random', seed => 3, rounds => 50)$$) AS rows;
SELECT count(*) AS differing_rows FROM (SELECT * FROM fo EXCEPT SELECT * FROM fo_first) x;

-- 5. solver 'paper' with a fixed step (no adaptation) reaches the same optimum: choice 1's fixed points are the KKT points
SELECT pg_temp.run(format($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', step => %s, rounds => 20000, solver => 'paper')$$,
                          (SELECT 2 * value FROM val WHERE name = 'polar_step'))) AS rows,
       pg_temp.suberr('opt_none') < 1e-8 AS fixed_step;
SELECT step = (SELECT 2 * value FROM val WHERE name = 'polar_step') AS step_kept, converged FROM perpca_last_fit();

-- 6. update => 'polar' (choice 2 / Algorithm 1) converges to its own O(step)-shifted fixed point
SELECT pg_temp.run(format($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', update => 'polar',
                                        step => %s, rounds => 20000, tolerance => 1e-12, solver => 'paper')$$,
                          (SELECT value FROM val WHERE name = 'polar_step'))) AS rows,
       pg_temp.suberr('polar') < 1e-8 AS matches_oracle_choice2,
       pg_temp.suberr('opt_none') > 1e-8 AS biased_from_kkt_point,
       pg_temp.infeasibility() < 1e-10 AS feasible;

-- 7. rounds and tolerance: tolerance 0 runs exactly `rounds` (solver 'paper')
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, rounds => 7, tolerance => 0, solver => 'paper')$$) AS rows,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT method, rounds_run, converged FROM perpca_last_fit();
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, rounds => 0)$$) AS rows,
       pg_temp.infeasibility() < 1e-10 AS feasible_start;
SELECT rounds_run, converged FROM perpca_last_fit();

-- 8. verbose: a NOTICE at rounds 1, 2, 5, 10, ... and the last
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM e_stats', 2, 3, rounds => 3, tolerance => 0,
                                init => 'dispca', verbose => true);

-- 9. baselines
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', method => 'dispca')$$) AS rows,
       pg_temp.suberr('dispca') < 1e-8 AS dispca, pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT method, rounds_run, abs(objective - (SELECT value FROM val WHERE name = 'objective_dispca')) < 1e-8 AS objective_ok,
       kkt_residual > 1e-6 AS not_stationary, step IS NULL AS no_step
FROM perpca_last_fit();
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', method => 'cpca', weights => 'samples')$$) AS rows,
       pg_temp.suberr('cpca_samples') < 1e-8 AS cpca;
SELECT kind, count(*) FROM fo GROUP BY kind ORDER BY kind;
SELECT method, kkt_residual IS NULL AS no_kkt, theta_est IS NULL AS no_theta FROM perpca_last_fit();
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 3, center => 'none', method => 'indiv')$$) AS rows,
       pg_temp.suberr('indiv') < 1e-8 AS indiv;
SELECT kind, count(*) FROM fo GROUP BY kind ORDER BY kind;

-- 10. a third integer column gives each client its own number of local components
SELECT pg_temp.run($$perpca_fit('SELECT client, stats, client % 4 FROM e_stats', 2, 3)$$) AS rows,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT client, count(*) FROM fo WHERE client IN ('1', '2', '3', '4') GROUP BY client ORDER BY client;
SELECT converged, kkt_residual < 1e-12 AS kkt_small FROM perpca_last_fit();

-- 11. n_global = 0 and n_local = 0 are allowed
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 0, 3)$$) AS rows, pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM e_stats', 2, 0)$$) AS rows, pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT theta_est IS NULL AS theta_without_locals FROM perpca_last_fit();

-- 12. output order: global rows first, then clients in query order; any client type
SELECT kind, client, component FROM perpca_fit('SELECT ''c'' || client, stats FROM e_stats WHERE client <= 3 ORDER BY client DESC', 1, 1);

-- 13. a well-posed B2-like problem with a small global eigengap: the defaults still converge
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM b_stats', 2, 10)$$) AS rows,
       pg_temp.suberr('b_opt_client') < 1e-8 AS matches_oracle,
       pg_temp.infeasibility() < 1e-10 AS feasible;
SELECT converged, rounds_run < 5000 AS under_default_rounds FROM perpca_last_fit();
