--
-- A model's history (perpca_model_history, the row perpca_refresh returns),
-- refreshes of unchanged data (nothing fitted), failed refreshes
-- (on_error 'raise' | 'record'), and training from a query of plain numeric
-- feature columns, against numpy (test/fixtures/gen_results.py: the data of
-- test/data/results_obs.csv and its loadings, results_loadings.csv).
--
CREATE SCHEMA perpca_history;
SET search_path = perpca_history, public;
SET extra_float_digits = 0;
\i test/include/compare.sql
-- The SQLSTATE and message of a statement's error, or 'ok'.
CREATE FUNCTION try(sql text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- ---- training from feature columns -----------------------------------------
CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/results_obs.csv' csv header
CREATE TABLE wide AS
SELECT client, obs, x[1] AS alpha, x[2] AS beta, x[3] AS gamma, x[4] AS delta,
       x[5] AS epsilon, x[6] AS zeta, x[7] AS eta, x[8] AS theta
  FROM obs;
SELECT model_name, d, n_clients, converged
  FROM perpca_train('arr', 'SELECT client, perpca_stats(x) FROM perpca_history.obs GROUP BY client', 2, 1);
SELECT model_name, d, n_clients, converged
  FROM perpca_train('cols', 'SELECT client, alpha, beta, gamma, delta, epsilon, zeta, eta, theta FROM perpca_history.wide',
                    2, 1);
-- The column names are the feature names.
SELECT feature_names FROM cols_info;
SELECT kind, client, component, feature FROM perpca_loadings('cols') LIMIT 3;
-- The same model as from the arrays.
SELECT count(*) AS components, bool_and(arrays_close(a.pc, c.pc, 1e-9)) AS same_components
  FROM arr_components a JOIN cols_components c USING (kind, client, component);
SELECT bool_and(arrays_close(a.mean, c.mean, 1e-12) AND a.n = c.n) AS same_clients
  FROM arr_clients a JOIN cols_clients c USING (client);
-- numpy's components (signed as the fixture signs them), feature by feature in column order.
CREATE TABLE loadings (kind text, client text, component int, loadings float8[]);
\copy loadings from 'test/data/results_loadings.csv' csv header
SELECT count(*) AS components,
       bool_and(arrays_close(signed(l.pcs), e.loadings, 1e-6)) AS equal_numpy
  FROM (SELECT kind, client, component,
               array_agg(loading ORDER BY array_position('{alpha,beta,gamma,delta,epsilon,zeta,eta,theta}', feature)) AS pcs
          FROM perpca_loadings('cols') GROUP BY 1, 2, 3) l
  JOIN loadings e ON e.kind = l.kind AND e.client IS NOT DISTINCT FROM l.client AND e.component = l.component;

-- Integer and numeric columns are features too, an integer key is a key.
SELECT model_name, d, n_clients
  FROM perpca_train('ints', $$SELECT length(client), round(alpha * 10)::int AS a, beta::numeric AS b,
                                     gamma::real AS c, delta FROM perpca_history.wide$$, 1, 1);
SELECT client_type, feature_names FROM ints_info;
-- Anything else is 42804; so is a query of the key alone.
SELECT try($$SELECT * FROM perpca_train('bad', 'SELECT client, alpha, client AS label, obs > 3 AS late FROM perpca_history.wide', 1, 1)$$);
SELECT try($$SELECT * FROM perpca_train('bad', 'SELECT client FROM perpca_history.wide', 1, 1)$$);
-- A NULL feature is an error, as in perpca_stats.
SELECT try($$SELECT * FROM perpca_train('bad', 'SELECT client, alpha, NULLIF(beta, beta) AS beta FROM perpca_history.wide', 1, 1)$$)
       LIKE '22004:%' AS null_feature;
-- feature_names must match the columns (rename in the query instead); equal ones are fine.
SELECT try($$SELECT * FROM perpca_train('named', 'SELECT client, alpha, beta, gamma FROM perpca_history.wide', 1, 1,
                                        feature_names => '{a,b,c}')$$);
SELECT model_name FROM perpca_train('named', 'SELECT client, alpha, beta, gamma FROM perpca_history.wide', 1, 1,
                                    feature_names => '{alpha,beta,gamma}');
SELECT to_regclass('bad_info') IS NULL AS no_bad_model;

-- ---- history ---------------------------------------------------------------
-- The train's row.
SELECT entry, version = (SELECT version FROM cols_info) AS current_version, kind, clients, rows,
       rounds_run = (SELECT rounds FROM cols_info) AS rounds, converged,
       objective = (SELECT objective FROM cols_info) AS objective, seconds >= 0 AS seconds,
       role = current_user AS role, warning, outcome, jsonb_array_length(starts) > 0 AS starts,
       clients_added, clients_dropped, warm_start
  FROM perpca_model_history('cols');
-- Unchanged data: nothing is fitted, the model keeps its version, and the
-- row (returned and kept) says so.
SELECT version AS v0, objective AS o0 FROM cols_info \gset
SELECT entry, version = :v0 AS same_version, kind, clients, rows, rounds_run, converged,
       objective = (SELECT objective FROM cols_info) AS same_objective, outcome, warning, clients_added, clients_dropped
  FROM perpca_refresh('cols');
SELECT version = :v0 AS model_untouched FROM cols_info;
-- Changed data: a refit, warm-started, with the rounds of each of its starts.
INSERT INTO wide SELECT client, obs + 1000, alpha + 0.5, beta, gamma, delta, epsilon, zeta, eta, theta - 0.25
  FROM wide WHERE obs <= 10;
SELECT entry, version > :v0 AS new_version, kind, clients, rows, rounds_run > 0 AS fitted, outcome, warm_start,
       clients_added, clients_dropped,
       (SELECT array_agg(s ->> 'start') FROM jsonb_array_elements(starts) s) AS starts,
       ARRAY(SELECT (s ->> 'start', (s ->> 'rounds_run')::int, (s ->> 'chosen')::boolean)::text
               FROM jsonb_array_elements(starts) s)
         = ARRAY(SELECT (s.start, s.rounds_run, s.chosen)::text FROM perpca_last_fit_starts() s) AS starts_as_last_fit,
       rounds_run = (SELECT sum((s ->> 'rounds_run')::int) FROM jsonb_array_elements(starts) s) AS rounds_of_starts
  FROM perpca_refresh('cols');
-- A new client (and a new key) is a change too.
INSERT INTO wide SELECT 'm9', obs, alpha, beta, gamma, delta, epsilon, zeta, eta, theta FROM wide WHERE client = 'm1';
SELECT clients, clients_added, outcome FROM perpca_refresh('cols');
-- warm => false refits unchanged data anyway.
SELECT rounds_run > 0 AS fitted, outcome, warm_start FROM perpca_refresh('cols', warm => false);
SELECT entry, kind, outcome, rounds_run > 0 AS fitted FROM perpca_model_history('cols');

-- ---- failed refreshes ------------------------------------------------------
CREATE TABLE before AS
SELECT w.client, w.obs, perpca_model_scores('cols', w.client, ARRAY[alpha, beta, gamma, delta, epsilon, zeta, eta, theta]) AS s
  FROM wide w;
SELECT version AS v1 FROM cols_info \gset
-- The owner breaks the query in its view (renaming a column of wide would
-- not: the view, bound at train, follows the rename).
-- The view binds the query with its aggregation per client: (client, stats).
CREATE OR REPLACE VIEW perpca_history.cols_source AS
SELECT client, perpca_stats(ARRAY[alpha, beta, gamma, delta, epsilon, zeta, eta, theta / 0]) AS stats
  FROM perpca_history.wide GROUP BY client;
-- 'raise' (the default): an error, as ever; the transaction is gone, and so is its history row.
SELECT try($$SELECT * FROM perpca_refresh('cols')$$);
-- 'record': a WARNING, the old model stays, the row says why.
SELECT version = :v1 AS same_version, kind, clients, rows, rounds_run, converged, objective, outcome, warning
  FROM perpca_refresh('cols', on_error => 'record');
SELECT version = :v1 AS model_untouched FROM cols_info;
SELECT count(*) AS rows, bool_and(b.s = perpca_model_scores('cols', w.client,
                                      ARRAY[alpha, beta, gamma, delta, epsilon, zeta, eta, theta])) AS same_scores
  FROM wide w JOIN before b USING (client, obs);
SELECT entry, kind, outcome, converged, warning FROM perpca_model_history('cols') WHERE entry >= 5;
-- A failure in the fit (not the query) is recorded the same way.
CREATE OR REPLACE VIEW perpca_history.cols_source AS
SELECT client, perpca_stats(ARRAY[alpha, beta, gamma, delta, epsilon, zeta, eta, theta]) AS stats
  FROM perpca_history.wide GROUP BY client;
SELECT outcome, warning FROM perpca_refresh('cols', on_error => 'record');
UPDATE cols_info SET options = jsonb_set(options, '{solver}', '"bogus"');
SELECT outcome, warning LIKE 'failed: 22023: %' AS invalid_option FROM perpca_refresh('cols', on_error => 'record');
SELECT try($$SELECT * FROM perpca_refresh('cols', on_error => 'ignore')$$);

-- ---- models without a history, readers, drop ------------------------------
-- A model stored before 0.3.0 has no history table: no rows until its first
-- refresh, which creates it.
DROP TABLE arr_history;
SELECT count(*) AS no_history FROM perpca_model_history('arr');
SELECT entry, kind, outcome FROM perpca_refresh('arr');
SELECT entry, kind, outcome FROM perpca_model_history('arr');
-- Another role reads a history only with SELECT on the model's info and history tables.
CREATE ROLE perpca_hist_reader;
GRANT USAGE ON SCHEMA perpca_history TO perpca_hist_reader;
SET ROLE perpca_hist_reader;
SELECT try($$SELECT * FROM perpca_model_history('perpca_history.arr')$$);
RESET ROLE;
GRANT SELECT ON arr_info TO perpca_hist_reader;
SET ROLE perpca_hist_reader;
SELECT try($$SELECT * FROM perpca_model_history('perpca_history.arr')$$);
RESET ROLE;
GRANT SELECT ON arr_history TO perpca_hist_reader;
SET ROLE perpca_hist_reader;
SELECT count(*) FROM perpca_model_history('perpca_history.arr');
RESET ROLE;
-- It is read as a table (no view, no row-level security, the column types perpca gave it).
ALTER TABLE arr_history ENABLE ROW LEVEL SECURITY;
SET ROLE perpca_hist_reader;
SELECT try($$SELECT * FROM perpca_model_history('perpca_history.arr')$$);
RESET ROLE;
ALTER TABLE arr_history DISABLE ROW LEVEL SECURITY;
ALTER TABLE arr_history RENAME TO arr_history_real;
CREATE VIEW arr_history AS SELECT * FROM arr_history_real;
SELECT try($$SELECT * FROM perpca_model_history('arr')$$);
SELECT try($$SELECT * FROM perpca_refresh('arr', warm => false)$$);
DROP VIEW arr_history;
ALTER TABLE arr_history_real RENAME TO arr_history;
ALTER TABLE arr_history ALTER COLUMN rows TYPE numeric;
SELECT try($$SELECT * FROM perpca_model_history('arr')$$);
ALTER TABLE arr_history ALTER COLUMN rows TYPE bigint;
REVOKE ALL ON arr_info, arr_history FROM perpca_hist_reader;
REVOKE ALL ON SCHEMA perpca_history FROM perpca_hist_reader;
DROP ROLE perpca_hist_reader;
-- perpca_drop drops the history with the model.
SELECT perpca_drop('cols');
SELECT to_regclass('cols_history') IS NULL AS history_dropped;
SELECT try($$SELECT * FROM perpca_model_history('cols')$$);

DROP SCHEMA perpca_history CASCADE;
