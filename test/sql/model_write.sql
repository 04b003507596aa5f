--
-- The write path (src/model_write.c, 40_models.sql, 50_refresh.sql): options
-- declared once and defaulted in C, the fit's result stored directly, groups
-- without variance, and the errors of perpca_train's arguments.
--
CREATE SCHEMA perpca_write;
SET search_path = perpca_write, public;
SET extra_float_digits = 0;
\set VERBOSITY default
CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/project_obs.csv' csv header

-- ---- options: declared once, defaulted by the C parser ----------------------
-- Every option of the user-facing signatures defaults to NULL (the C parser's default).
SELECT p.proname, count(*) AS options,
       bool_and(a.dflt LIKE 'NULL::%' OR a.name = 'replace') AS defaults_null
  FROM pg_proc p,
       LATERAL (SELECT split_part(s, ' DEFAULT ', 1) AS head, split_part(s, ' DEFAULT ', 2) AS dflt,
                       trim(both '"' from split_part(s, ' ', 1)) AS name
                  FROM unnest(string_to_array(pg_get_function_arguments(p.oid), ', ')) AS s
                 WHERE s LIKE '% DEFAULT %') a
 WHERE p.proname IN ('perpca_fit', 'perpca_train', 'perpca_fit_federated') AND p.pronamespace = 'public'::regnamespace
 GROUP BY 1 ORDER BY 1;
-- The effective options and the check: a function that returns, or the option's error.
SELECT perpca_internal.fit_options('{"n_global": 2, "n_local": 1}') - 'tolerance' AS defaults;
SELECT (perpca_internal.fit_options('{"n_global": 2, "n_local": 1, "solver": "paper"}') ->> 'tolerance')::float8 AS paper_tolerance;
SELECT perpca_internal.fit_options('{"n_global": 2, "n_local": 1, "retraction": "qr", "step": 0.5, "other": 1}')
       -> 'retraction' AS retraction, perpca_internal.fit_options('{"n_global": 2, "n_local": 1, "step": 0.5}') -> 'adaptive' AS adaptive;
SELECT perpca_internal.fit_options('{"n_global": 2, "n_local": 1, "retraction": "svd"}');
SELECT perpca_internal.fit_options('{"n_global": 2, "n_local": 1, "rounds": -1}');
SELECT perpca_internal.fit_options('{"n_global": 2, "n_local": 1, "rounds": "many"}');
SELECT perpca_internal.fit_options('{"n_local": 1}');
SELECT perpca_internal.fit_options('{"n_global": 0, "n_local": 0}');
-- No check runs a fit: the old trick (a fit over no clients) is gone.
SELECT count(*) AS check_fit_options FROM pg_proc WHERE proname = 'check_fit_options';

-- ---- the fit's result stored directly ----------------------------------------
SELECT model_name, d, n_clients, converged
  FROM perpca_train('m', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$, 2, 1,
                    retraction => 'qr', rounds => 3000, step => 0.5);
-- What perpca_fit returns with the same options is what the model holds.
SELECT count(*) AS components,
       bool_and(f.pc = c.pc AND f.variance IS NOT DISTINCT FROM c.variance) AS same_rows
  FROM perpca_fit($$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client ORDER BY client COLLATE "C"$$,
                  2, 1, retraction => 'qr', rounds => 3000, step => 0.5) f
  JOIN m_components c ON c.kind = f.kind AND c.component = f.component AND c.client IS NOT DISTINCT FROM f.client;
-- The effective options are recorded, and the 0.1.0 option columns hold theirs.
SELECT options ->> 'retraction' AS retraction, retraction AS retraction_column, options ->> 'solver' AS solver,
       rounds_max, step, adaptive, search_path
  FROM m_info;
-- A refresh passes them back as one value: the same options.
SELECT outcome, clients, warm_start FROM perpca_refresh('m', warm => false);
SELECT options ->> 'retraction' AS retraction, options ->> 'solver' AS solver, rounds_max, step FROM m_info;

-- ---- groups without variance: fit, store, refresh, with a NOTICE ------------
CREATE TABLE flat_obs AS SELECT client, x FROM obs WHERE client IN ('a', 'b', 'c');
INSERT INTO flat_obs VALUES ('one_row', '{1,2,3,4,5,6,7,8}'),
    ('constant', '{1,1,1,1,1,1,1,1}'), ('constant', '{1,1,1,1,1,1,1,1}');
SELECT model_name, n_clients FROM perpca_train('flat', 'SELECT client, perpca_stats(x) FROM flat_obs GROUP BY client', 2, 1);
SELECT client, n, total_variance, global_ratio, local_ratio, residual_ratio, train_error
  FROM flat_clients WHERE total_variance = 0 ORDER BY client;
SELECT outcome, clients FROM perpca_refresh('flat');
DELETE FROM flat_obs WHERE client = 'constant';
SELECT outcome, clients, clients_dropped FROM perpca_refresh('flat');
-- A new store with one row only.
SELECT model_name, n_clients FROM perpca_train('one', $$SELECT 'x', perpca_stats('{1,2,3}'::float8[])$$, 1, 0);
SELECT outcome, clients FROM perpca_refresh('one');

-- ---- perpca_train's arguments --------------------------------------------------
SELECT * FROM perpca_train(NULL, 'SELECT 1', 1, 1);
SELECT * FROM perpca_train('x', NULL, 1, 1);
SELECT * FROM perpca_train('x', 'SELECT 1', NULL, 1);
SELECT * FROM perpca_train('x', 'SELECT 1', 1, 1, retraction => 'svd');
SELECT * FROM perpca_refresh(repeat('x', 53));
SELECT * FROM perpca_train(repeat('x', 53), 'SELECT 1', 1, 1);
-- A start query with unnamed columns works in perpca_train as in perpca_fit.
SELECT model_name, n_clients, converged
  FROM perpca_train('warm', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$, 2, 1,
                    init => 'given',
                    start => $$SELECT client, kind, component, pc FROM m_components WHERE kind = 'global'
                               UNION ALL SELECT NULL, 'global', 99, array_fill(0::float8, ARRAY[8])$$);
SELECT model_name, n_clients, converged
  FROM perpca_train('warm2', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$, 2, 1,
                    init => 'given',
                    start => $$SELECT NULL::text, 'global', component + 0, pc FROM m_components WHERE kind = 'global'$$);

-- ---- feature names: stored with the model, kept by a refresh ------------------
SELECT model_name FROM perpca_train('named', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$,
                                    2, 1, feature_names => ARRAY['f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7', 'f8']);
SELECT feature_names FROM named_info;
SELECT outcome FROM perpca_refresh('named');
SELECT feature_names FROM named_info;
SELECT feature IS NOT NULL AND feature LIKE 'f_' AS named_loadings, count(*) FROM perpca_loadings('named') GROUP BY 1;
SELECT * FROM perpca_train('badnames', $$SELECT client, perpca_stats(x) FROM obs GROUP BY client$$, 2, 1,
                           feature_names => ARRAY['a', 'b']);
SELECT * FROM perpca_train('badnames', $$SELECT client, perpca_stats(x) FROM obs GROUP BY client$$, 2, 1,
                           feature_names => ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', NULL]);
SELECT feature_names IS NULL AS unnamed FROM m_info;

SET client_min_messages = warning;
DROP SCHEMA perpca_write CASCADE;
