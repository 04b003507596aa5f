--
-- Stored models: perpca_train, the model-aware projection functions, model
-- insight (component info, similarity, theta), perpca_personalize, replace
-- and drop.  Expected values come from the numpy oracle's converged fit on
-- the same data (test/fixtures/gen_project.py), for each center option.
--
CREATE SCHEMA perpca_model;
SET search_path = perpca_model, public;
SET extra_float_digits = 0;
\i test/include/compare.sql
\i test/include/row_helpers.sql

CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/project_obs.csv' csv header
CREATE TABLE exp_rows (center text, client text, obs int, global_part float8[], local_part float8[],
                       residual float8[], error float8, abs_scores float8[]);
\copy exp_rows from 'test/data/model_expected.csv' csv header
CREATE TABLE exp_clients (center text, client text, total_variance float8, global_ratio float8,
                          local_ratio float8, residual_ratio float8, train_error float8);
\copy exp_clients from 'test/data/model_clients.csv' csv header
CREATE TABLE exp_summary (center text, theta_est float8, objective float8);
\copy exp_summary from 'test/data/model_summary.csv' csv header
CREATE TABLE exp_components (center text, client text, kind text, component int, pc float8[],
                             variance float8, ratio float8, cumulative float8);
\copy exp_components from 'test/data/model_components.csv' csv header
CREATE TABLE exp_similarity (center text, client_a text, client_b text, distance float8);
\copy exp_similarity from 'test/data/model_similarity.csv' csv header
CREATE TABLE exp_personalize (center text, pcs float8[], variance float8[]);
\copy exp_personalize from 'test/data/model_personalize.csv' csv header

-- One model per center option, trained on clients a..e ("new" is never seen).
SELECT model_name, d, n_clients
  FROM perpca_train('m_client', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$,
                    2, 2, tolerance => 1e-11, center => 'client');
SELECT model_name, d, n_clients
  FROM perpca_train('m_global', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$,
                    2, 2, tolerance => 1e-11, center => 'global');
SELECT model_name, d, n_clients
  FROM perpca_train('m_none', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$,
                    2, 2, tolerance => 1e-11, center => 'none');
CREATE VIEW models AS
SELECT 'client' AS center, 'm_client' AS model UNION ALL
SELECT 'global', 'm_global' UNION ALL
SELECT 'none', 'm_none';

-- The tables, with their options.
SELECT model, d, n_global, n_local, n_clients, method, rounds_max, tolerance, update, retraction,
       init, seed, center, weights, source_query
  FROM m_client_info;
SELECT c.relname, c.relreplident, obj_description(c.oid, 'pg_class') IS NOT NULL AS commented
  FROM pg_class c WHERE c.relnamespace = 'perpca_model'::regnamespace AND c.relname LIKE 'm\_client\_%' AND c.relkind = 'r'
 ORDER BY 1;

-- Summary, per-client figures and components against numpy.
SELECT s.center, close(i.theta_est, s.theta_est, 1e-8) AS theta_est, close(i.objective, s.objective, 1e-10) AS objective
  FROM exp_summary s, LATERAL (SELECT * FROM m_client_info WHERE s.center = 'client' UNION ALL
                               SELECT * FROM m_global_info WHERE s.center = 'global' UNION ALL
                               SELECT * FROM m_none_info WHERE s.center = 'none') i
 ORDER BY 1;
CREATE VIEW all_clients AS
SELECT 'client' AS center, * FROM m_client_clients UNION ALL
SELECT 'global', * FROM m_global_clients UNION ALL
SELECT 'none', * FROM m_none_clients;
SELECT e.center, count(*) AS clients,
       bool_and(c.n = 150 AND c.n_local = 2 AND c.source = 'fit') AS counts,
       bool_and(close(c.total_variance, e.total_variance, 1e-11)) AS total_variance,
       bool_and(close(c.global_ratio, e.global_ratio, 1e-8)) AS global_ratio,
       bool_and(close(c.local_ratio, e.local_ratio, 1e-8)) AS local_ratio,
       bool_and(close(c.residual_ratio, e.residual_ratio, 1e-8)) AS residual_ratio,
       bool_and(close(c.train_error, e.train_error, 1e-8)) AS train_error
  FROM exp_clients e JOIN all_clients c USING (center, client)
 GROUP BY 1 ORDER BY 1;
CREATE VIEW all_components AS
SELECT 'client' AS center, * FROM m_client_components UNION ALL
SELECT 'global', * FROM m_global_components UNION ALL
SELECT 'none', * FROM m_none_components;
SELECT e.center, e.kind, count(*) AS components,
       bool_and(arrays_close(c.pc, e.pc, 1e-7)) AS pc,
       bool_and(close(c.variance, e.variance, 1e-9)) AS variance
  FROM exp_components e JOIN all_components c
    ON c.center = e.center AND c.kind = e.kind AND c.component = e.component
   AND c.client IS NOT DISTINCT FROM e.client
 GROUP BY 1, 2 ORDER BY 1, 2;

-- Component info (ML.PRINCIPAL_COMPONENT_INFO style).
SELECT m.center, count(*) AS rows,
       bool_and(close(i.variance, e.variance, 1e-9)) AS variance,
       bool_and(close(i.explained_variance_ratio, e.ratio, 1e-9)) AS ratio,
       bool_and(close(i.cumulative_explained_variance_ratio, e.cumulative, 1e-8)) AS cumulative
  FROM models m CROSS JOIN LATERAL perpca_component_info(m.model) i
  JOIN exp_components e ON e.center = m.center AND e.kind = i.kind AND e.component = i.component
                       AND e.client IS NOT DISTINCT FROM i.client
 GROUP BY 1 ORDER BY 1;
SELECT client, kind, component, round(explained_variance_ratio::numeric, 3) AS ratio,
       round(cumulative_explained_variance_ratio::numeric, 3) AS cumulative
  FROM perpca_component_info('m_client') WHERE client IS NULL OR client = 'a';

-- Projections of rows of seen clients and of the unseen client "new".
SELECT m.center, e.client = 'new' AS unseen, count(*) AS rows,
       bool_and(arrays_close(perpca_model_global_part(m.model, o.client, o.x), e.global_part, 1e-7)) AS global_part,
       bool_and(arrays_close(perpca_model_local_part(m.model, o.client, o.x), e.local_part, 1e-7)) AS local_part,
       bool_and(arrays_close(perpca_model_residual(m.model, o.client, o.x), e.residual, 1e-7)) AS residual,
       bool_and(close(perpca_model_error(m.model, o.client, o.x), e.error, 1e-7)) AS error,
       bool_and(arrays_close(absolute(perpca_model_scores(m.model, o.client, o.x)), e.abs_scores, 1e-7)) AS abs_scores
  FROM exp_rows e JOIN models m USING (center) JOIN obs o USING (client, obs)
 GROUP BY 1, 2 ORDER BY 1, 2;

-- Identities on every row: the parts add up to x, reconstruction = global + local parts,
-- scores are the pure perpca_scores on the stored components, centred as the fit was.
SELECT m.center,
       bool_and(arrays_close(add(add(perpca_model_global_part(m.model, o.client, o.x),
                                     perpca_model_local_part(m.model, o.client, o.x)),
                                 perpca_model_residual(m.model, o.client, o.x)), o.x, 1e-12)) AS parts_sum_to_x,
       bool_and(arrays_close(perpca_model_reconstruct(m.model, o.client, o.x),
                             add(perpca_model_global_part(m.model, o.client, o.x),
                                 perpca_model_local_part(m.model, o.client, o.x)), 1e-12)) AS reconstruct
  FROM models m CROSS JOIN obs o GROUP BY 1 ORDER BY 1;
SELECT bool_and(arrays_close(perpca_model_scores('m_client', o.client, o.x),
                             perpca_scores(o.x, w.pcs, c.mean), 1e-12)) AS scores_match_pure
  FROM obs o JOIN m_client_clients c USING (client),
       LATERAL (SELECT array_agg(pc ORDER BY kind, component) AS pcs FROM m_client_components k
                 WHERE k.client IS NULL OR k.client = o.client) w;

-- The mean error over a client's training rows is its stored train_error.
SELECT m.center, count(*) AS clients, bool_and(close(t.err, c.train_error, 1e-10)) AS mean_error_is_train_error
  FROM models m
 CROSS JOIN LATERAL (SELECT client, avg(perpca_model_error(m.model, client, x)) AS err
                       FROM obs WHERE client <> 'new' GROUP BY client) t
  JOIN all_clients c ON c.center = m.center AND c.client = t.client
 GROUP BY 1 ORDER BY 1;

-- Client similarity rho_ij against numpy.
SELECT m.center, count(*) AS pairs, bool_and(close(s.distance, e.distance, 1e-8)) AS distance,
       bool_and((s.client_a = s.client_b) = (s.distance = 0)) AS zero_only_on_diagonal
  FROM models m CROSS JOIN LATERAL perpca_similarity(m.model) s
  JOIN exp_similarity e ON e.center = m.center AND e.client_a = s.client_a AND e.client_b = s.client_b
 GROUP BY 1 ORDER BY 1;

-- theta_est with a hint when small.
SELECT round(theta_est::numeric, 6) AS theta_est, hint FROM perpca_model_theta('m_client');
SELECT round(theta_est::numeric, 6) AS theta_est, hint FROM perpca_model_theta('m_client', threshold => 0.5);

-- Personalize the unseen client with U frozen; the model functions see it at once.
SELECT array_length(perpca_model_scores('m_client', 'new', x), 1) AS scores_before FROM obs WHERE client = 'new' AND obs = 1;
SELECT m.center,
       arrays_close(p.pcs, e.pcs, 1e-7) AS pcs, arrays_close(p.variance, e.variance, 1e-8) AS variance
  FROM models m JOIN exp_personalize e USING (center),
       LATERAL (SELECT array_agg(pc ORDER BY component) AS pcs, array_agg(variance ORDER BY component) AS variance
                  FROM perpca_personalize(m.model, 'new',
                                          (SELECT perpca_stats(x) FROM obs WHERE client = 'new'))) p
 ORDER BY 1;
SELECT array_length(perpca_model_scores('m_client', 'new', x), 1) AS scores_after FROM obs WHERE client = 'new' AND obs = 1;
SELECT client, n, n_local, source, close(train_error, (SELECT avg(perpca_model_error('m_client', 'new', x))
                                                         FROM obs WHERE client = 'new'), 1e-10) AS train_error
  FROM m_client_clients WHERE client = 'new';
SELECT count(*) AS pairs_after_personalize FROM perpca_similarity('m_client');

-- Replacing: refused without replace, atomic with it, and seen by this session's cache.
SELECT version AS v1 FROM m_client_info \gset
SELECT * FROM perpca_train('m_client', 'SELECT 1', 2, 2);
SELECT * FROM perpca_train('m_client', $$SELECT client, perpca_stats(x) FROM obs GROUP BY client$$,
                           2, 9, replace => true);
SELECT version = :v1 AS failed_fit_left_model, (SELECT count(*) FROM m_client_components) AS components
  FROM m_client_info;
BEGIN;
SELECT model_name, n_clients FROM perpca_train('m_client', $$SELECT client, perpca_stats(x) FROM obs GROUP BY client$$,
                                               2, 1, replace => true);
SELECT array_length(perpca_model_scores('m_client', 'a', x), 1) AS scores_in_transaction FROM obs WHERE obs = 1 AND client = 'a';
ROLLBACK;
SELECT array_length(perpca_model_scores('m_client', 'a', x), 1) AS scores_after_rollback FROM obs WHERE obs = 1 AND client = 'a';
SELECT model_name, n_clients FROM perpca_train('m_client', $$SELECT client, perpca_stats(x) FROM obs GROUP BY client$$,
                                               2, 1, replace => true);
SELECT version > :v1 AS new_version, n_local, (SELECT count(*) FROM m_client_clients) AS clients FROM m_client_info;
SELECT array_length(perpca_model_scores('m_client', 'a', x), 1) AS scores_after_replace FROM obs WHERE obs = 1 AND client = 'a';

-- Clients with their own n_local (third column of the query).
SELECT model_name, n_clients FROM perpca_train('m_ranks',
    $$SELECT client, perpca_stats(x), CASE WHEN client = 'a' THEN 3 ELSE 1 END FROM obs GROUP BY client$$, 2, 1);
SELECT client, n_local FROM m_ranks_clients ORDER BY 1;
SELECT client, array_length(perpca_model_scores('m_ranks', client, x), 1) AS scores
  FROM obs WHERE obs = 1 ORDER BY 1;

-- Quoted and schema-qualified model names.
CREATE SCHEMA "Perpca Other";
SELECT model_name FROM perpca_train('"Perpca Other"."My Model"',
    $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$, 2, 2);
SELECT count(*) AS components FROM "Perpca Other"."My Model_components";
SELECT count(*) AS rows, bool_and(arrays_close(perpca_model_residual('"Perpca Other"."My Model"', o.client, o.x),
                                                e.residual, 1e-7)) AS qualified_name_works
  FROM exp_rows e JOIN obs o USING (client, obs) WHERE e.center = 'client';
SELECT perpca_drop('"Perpca Other"."My Model"');
SELECT count(*) AS tables_left FROM pg_class WHERE relnamespace = '"Perpca Other"'::regnamespace;

-- Properties of the functions.
SELECT p.proname, p.provolatile, p.proisstrict, p.proparallel
  FROM pg_proc p
 WHERE p.proname IN ('perpca_model_scores', 'perpca_model_global_part', 'perpca_model_local_part',
                     'perpca_model_reconstruct', 'perpca_model_residual', 'perpca_model_error',
                     'perpca_similarity', 'perpca_component_info', 'perpca_model_theta',
                     'perpca_train', 'perpca_drop', 'perpca_personalize', 'perpca_personalize_clients')
 ORDER BY 1;

-- The row functions in parallel workers give the serial answer.
SELECT sum(perpca_model_error('m_global', client, x)) AS serial_sum FROM obs \gset
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
-- Forces parallel plans; named force_parallel_mode before PostgreSQL 16.
SELECT CASE WHEN current_setting('server_version_num')::int >= 160000
            THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END AS force_parallel \gset
SET :force_parallel = on;
EXPLAIN (COSTS OFF) SELECT sum(perpca_model_error('m_global', client, x)) FROM obs;
SELECT close(sum(perpca_model_error('m_global', client, x)), :serial_sum, 1e-12) AS parallel_equals_serial FROM obs;
RESET :force_parallel;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

-- NULLs, unknown models, bad names and dimensions.
SELECT perpca_model_scores(NULL, 'a', '{1}') IS NULL AS null_model,
       perpca_model_scores('m_global', NULL, '{1}') IS NULL AS null_client,
       perpca_model_error('m_global', 'a', NULL) IS NULL AS null_x;
SELECT perpca_model_scores('no_such_model', 'a', '{1,2,3,4,5,6,7,8}');
SELECT perpca_model_scores('a.b.c', 'a', '{1,2,3,4,5,6,7,8}');
SELECT perpca_model_scores('m_global', 'a', '{1,2,3}');
SELECT perpca_model_scores('m_global', 'a', '{{1,2,3,4,5,6,7,8}}');
SELECT * FROM perpca_similarity('no_such_model');
SELECT * FROM perpca_component_info('no_such_model');
SELECT * FROM perpca_personalize('m_global', 'z', (SELECT perpca_stats(ARRAY[1, 2]::float8[])));
SELECT * FROM perpca_train(repeat('x', 53), 'SELECT 1', 1, 1);
SELECT perpca_drop('no_such_model');
SELECT perpca_drop('no_such_model', if_exists => true);

-- Options are checked before the input query runs (1/0 would fail if it ran).
\set VERBOSITY terse
SELECT * FROM perpca_train('m_bad', 'SELECT 1/0', 1, 1, scale => 'stdandard');
SELECT * FROM perpca_train('m_bad', 'SELECT 1/0', 1, 1, rounds => -1);
SELECT * FROM perpca_choose_ranks('SELECT 1/0', center => 'x');
\set VERBOSITY default

-- A warm start query runs as the caller, with the caller's search_path
-- (unqualified m_client_components here; it ran with the fit's fixed
-- search_path before, where the table is not found).
SELECT model_name, converged
  FROM perpca_train('m_warm', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$,
                    2, 2, tolerance => 1e-11, init => 'given',
                    start => 'SELECT client, kind, component, pc FROM m_client_components');
SELECT start FROM perpca_last_fit();
SELECT perpca_drop('m_warm');

-- Model names are SQL identifiers: unquoted ones fold to lower case, quoted
-- ones keep it; the error for a missing one says which table it looked for.
SELECT model_name FROM perpca_train('CaseModel', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$, 1, 1);
SELECT relname FROM pg_class WHERE relname LIKE 'casemodel\_%' ORDER BY 1;
SELECT perpca_model_error('casemodel', 'a', x) = perpca_model_error('CASEMODEL', 'a', x) AS folded
  FROM obs WHERE client = 'a' LIMIT 1;
SELECT perpca_model_error('"CaseModel"', 'a', '{1,2,3,4,5,6,7,8}');
SELECT perpca_model_error('case model', 'a', '{1,2,3,4,5,6,7,8}');
SELECT perpca_drop('perpca_model.casemodel.extra');
SELECT perpca_drop('casemodel');

-- Dropping a model removes its tables; the cache notices.
SELECT perpca_drop('m_ranks');
SELECT count(*) AS tables_left FROM pg_class WHERE relname LIKE 'm\_ranks%';
SELECT perpca_model_scores('m_ranks', 'a', '{1,2,3,4,5,6,7,8}');

SET client_min_messages = warning;
DROP SCHEMA perpca_model CASCADE;
DROP SCHEMA "Perpca Other" CASCADE;
RESET client_min_messages;
RESET search_path;
RESET extra_float_digits;
