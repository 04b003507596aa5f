--
-- Results a user can read and act on: loadings with names, per-component
-- variance per client, control limits (T^2, Q) and clusters of clients,
-- against numpy/scipy/scikit-learn (test/fixtures/gen_results.py).
--
CREATE SCHEMA perpca_results;
SET search_path = perpca_results, public;
SET extra_float_digits = 0;
\i test/include/compare.sql
CREATE FUNCTION close(a float8, b float8, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT abs(a - b) <= tol * greatest(abs(b), 1e-300) $$;
-- two labelings are the same partition (up to the numbering of the groups)
CREATE FUNCTION same_partition(a int[], b int[]) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT count(DISTINCT (x, y)) = count(DISTINCT x) AND count(DISTINCT x) = count(DISTINCT y)
      FROM unnest(a, b) AS u(x, y)
$$;

-- ---- the F quantile against scipy.stats.f.isf -----------------------------
CREATE TABLE fq (alpha float8, d1 float8, d2 float8, q float8);
\copy fq from 'test/data/results_fq.csv' csv header
SELECT count(*) AS quantiles,
       bool_and(close(perpca_internal.f_upper_quantile(alpha, d1, d2), q, 1e-9)) AS equal_scipy
  FROM fq;

-- ---- a model of four clients (2 global + 1 local, d = 8) ------------------
CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/results_obs.csv' csv header
SELECT model_name FROM perpca_train('mon', 'SELECT client, perpca_stats(x) FROM perpca_results.obs GROUP BY client', 2, 1);
SELECT client, array_dims(score_covariance) AS scores, cardinality(residual_moments) AS moments
  FROM mon_clients ORDER BY client;

-- Per-component variance per client, from the stored statistics: numpy's w'Sw and w'Sw / tr S.
CREATE TABLE variance (client text, kind text, component int, variance float8, ratio float8);
\copy variance from 'test/data/results_variance.csv' csv header
SELECT count(*) AS rows,
       bool_and(close(v.variance, e.variance, 1e-6) AND close(v.ratio, e.ratio, 1e-6)) AS equal_numpy
  FROM perpca_component_variance('mon') v JOIN variance e USING (client, kind, component);
SELECT client, kind, component FROM perpca_component_variance('mon') LIMIT 4;
-- The local rows are the stored local variances; the global ones add up to global_ratio.
SELECT bool_and(close(v.variance, c.variance, 1e-9)) AS local_as_stored
  FROM perpca_component_variance('mon') v JOIN mon_components c USING (client, kind, component)
 WHERE kind = 'local';
SELECT bool_and(close(s.ratio, c.global_ratio, 1e-9)) AS global_sum_is_global_ratio
  FROM (SELECT client, sum(ratio) AS ratio FROM perpca_component_variance('mon') WHERE kind = 'global'
         GROUP BY client) s JOIN mon_clients c USING (client);

-- Loadings: one row per feature, x1 .. xd without names; numpy's components.
CREATE TABLE loadings (kind text, client text, component int, loadings float8[]);
\copy loadings from 'test/data/results_loadings.csv' csv header
SELECT kind, client, component, feature FROM perpca_loadings('mon') LIMIT 3;
SELECT count(*) AS components,
       bool_and(arrays_close(signed(l.pcs), e.loadings, 1e-6)) AS equal_numpy
  FROM (SELECT kind, client, component, array_agg(loading ORDER BY substr(feature, 2)::int) AS pcs
          FROM perpca_loadings('mon') GROUP BY 1, 2, 3) l
  JOIN loadings e ON e.kind = l.kind AND e.client IS NOT DISTINCT FROM l.client AND e.component = l.component;
-- Names from <model>_info.feature_names (a new model version, so readers see them).
SET client_min_messages = warning;
ALTER TABLE mon_info ADD COLUMN IF NOT EXISTS feature_names text[];
RESET client_min_messages;
UPDATE mon_info SET feature_names = '{alpha,beta,gamma,delta,epsilon,zeta,eta,theta}',
                    version = nextval('perpca_model_version');
SELECT kind, client, component, feature FROM perpca_loadings('mon') LIMIT 3;
SELECT kind, component, top_features ~ '^[a-z]+ [+-][0-9.]+, [a-z]+ [+-][0-9.]+, [a-z]+ [+-][0-9.]+$' AS top_three
  FROM perpca_component_info('mon') WHERE client IS NULL OR client = 'm1';
-- top_features are the three largest |loading| of the component, in that order.
SELECT bool_and(i.top_features = t.top) AS top_features_match
  FROM perpca_component_info('mon') i
  JOIN (SELECT kind, client, component,
               string_agg(feature || ' ' || to_char(loading, 'SG0.00'), ', ' ORDER BY abs(loading) DESC) AS top
          FROM (SELECT *, row_number() OVER (PARTITION BY kind, client, component ORDER BY abs(loading) DESC) AS r
                  FROM perpca_loadings('mon')) x
         WHERE r <= 3 GROUP BY 1, 2, 3) t
    ON t.kind = i.kind AND t.client IS NOT DISTINCT FROM i.client AND t.component = i.component;
UPDATE mon_info SET feature_names = '{a,b}', version = nextval('perpca_model_version');
SELECT count(*) FROM perpca_loadings('mon');
UPDATE mon_info SET feature_names = NULL, version = nextval('perpca_model_version');

-- ---- control limits -------------------------------------------------------
-- T^2, Q and their limits at alpha = 0.01 on 160 rows: numpy's and scipy's.
CREATE TABLE checkrows (client text, obs int, x float8[], t2 float8, t2_limit float8, q float8, q_limit float8);
\copy checkrows from 'test/data/results_check.csv' csv header
SELECT count(*) AS rows,
       bool_and(close((m).t2, c.t2, 1e-6)) AS t2,
       bool_and(close((m).t2_limit, c.t2_limit, 1e-9)) AS t2_limit,
       bool_and(close((m).q, c.q, 1e-6)) AS q,
       bool_and(close((m).q_limit, c.q_limit, 1e-6)) AS q_limit,
       bool_and((m).out_of_control = ((m).t2 > (m).t2_limit OR (m).q > (m).q_limit)) AS flag
  FROM (SELECT c.*, perpca_model_monitor('mon', c.client, c.x) AS m FROM checkrows c) c;
-- Q is perpca_model_error (center 'client').
SELECT bool_and(close((perpca_model_monitor('mon', client, x)).q, perpca_model_error('mon', client, x), 1e-9)) AS q_is_error
  FROM checkrows;

-- 20,000 rows from N(mean_i, S_i), the model's own structure (S_i = L L'):
-- the share out of control at alpha = 0.01 is within what a binomial test
-- allows (0.5% .. 2%), and so is each statistic's share at 1 - sqrt(0.99).
CREATE TABLE chol (client text, mean float8[], chol float8[]);
\copy chol from 'test/data/results_chol.csv' csv header
SELECT setseed(0.42);
CREATE TABLE z AS
SELECT c.client, r, ARRAY(SELECT sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
                            FROM generate_series(1, 8) WHERE r > 0) AS z
  FROM chol c, generate_series(1, 5000) r ORDER BY c.client, r;
CREATE TABLE gauss AS
SELECT z.client, z.r,
       ARRAY(SELECT c.mean[i] + (SELECT sum(c.chol[i][j] * z.z[j]) FROM generate_series(1, 8) j)
               FROM generate_series(1, 8) i) AS x
  FROM z JOIN chol c USING (client);
CREATE TABLE monitored AS SELECT client, (perpca_model_monitor('mon', client, x, 0.01)).* FROM gauss;
SELECT count(*) AS rows,
       avg(out_of_control::int) BETWEEN 0.005 AND 0.02 AS share_in_range,
       avg((t2 > t2_limit)::int) BETWEEN 0.0025 AND 0.01 AS t2_share_in_range,
       avg((q > q_limit)::int) BETWEEN 0.0025 AND 0.01 AS q_share_in_range
  FROM monitored;
-- A smaller alpha flags fewer rows.
SELECT count(*) FILTER (WHERE (perpca_model_monitor('mon', client, x, 0.001)).out_of_control)
       < (SELECT count(*) FILTER (WHERE out_of_control) FROM monitored) AS fewer
  FROM gauss;

-- A client the model has never seen: Q against the global components, no limits, the NOTICE.
SELECT t2, t2_limit, q > 0 AS q, q_limit, out_of_control
  FROM perpca_model_monitor('mon', 'new', (SELECT x FROM obs LIMIT 1));
-- Keys of another type (anyelement), as the row functions take them.
SELECT out_of_control IS NOT NULL AS judged FROM perpca_model_monitor('mon', 'm1'::varchar, (SELECT x FROM obs LIMIT 1));

-- ---- errors and an older model ---------------------------------------------
\set VERBOSITY terse
SELECT * FROM perpca_model_monitor('mon', 'm1', (SELECT x FROM obs LIMIT 1), 0);
SELECT * FROM perpca_model_monitor('mon', 'm1', (SELECT x FROM obs LIMIT 1), 1.5);
SELECT * FROM perpca_model_monitor('mon', 'm1', ARRAY[1, 2]::float8[]);
SELECT * FROM perpca_internal.f_upper_quantile(0.01, 0, 3);
-- A model stored before 0.3.0 (no per-client statistics): a clear error, until it is refreshed.
ALTER TABLE mon_clients DROP COLUMN score_covariance, DROP COLUMN residual_moments;
UPDATE mon_info SET version = nextval('perpca_model_version');
SELECT * FROM perpca_model_monitor('mon', 'm1', (SELECT x FROM obs LIMIT 1));
SELECT * FROM perpca_component_variance('mon');
SELECT count(*) AS loadings_still_read FROM perpca_loadings('mon');
\set VERBOSITY default
SET client_min_messages = warning;
SELECT outcome FROM perpca_refresh('mon');
RESET client_min_messages;
SELECT count(*) AS rows, bool_and(close(v.variance, e.variance, 1e-6)) AS refreshed
  FROM perpca_component_variance('mon') v JOIN variance e USING (client, kind, component);

-- A client added by perpca_personalize gets its statistics too.
SELECT count(*) AS personalized
  FROM perpca_personalize('mon', 'm5', (SELECT perpca_stats(x) FROM obs WHERE client = 'm1'), 1);
SELECT bool_and(out_of_control IS NOT NULL) AS judged, count(*) AS rows
  FROM obs, perpca_model_monitor('mon', 'm5', x) WHERE client = 'm1';
SELECT count(*) AS components FROM perpca_component_variance('mon') WHERE client = 'm5';

-- ---- clusters of clients ----------------------------------------------------
CREATE TABLE cobs (problem text, client text, obs int, x float8[]);
\copy cobs from 'test/data/clusters_obs.csv' csv header
CREATE TABLE cexpected (problem text, client text, planted int, sklearn int);
\copy cexpected from 'test/data/clusters_expected.csv' csv header
SET client_min_messages = warning;
SELECT model_name FROM perpca_train('cl_planted', $$SELECT client, perpca_stats(x) FROM perpca_results.cobs
                                                   WHERE problem = 'planted' GROUP BY client$$, 2, 3);
SELECT model_name FROM perpca_train('cl_noisy', $$SELECT client, perpca_stats(x) FROM perpca_results.cobs
                                                 WHERE problem = 'noisy' GROUP BY client$$, 2, 2);
RESET client_min_messages;
-- Three planted groups of four clients: exact, with k given and by the eigengap (NOTICE).
-- (Distances rounded: their last digits follow the BLAS build, which differs
-- between the Debian releases the suite runs on.)
SELECT client, cluster, round(distance_to_center::numeric, 8) AS distance_to_center
  FROM perpca_clusters('cl_planted', 3);
SELECT same_partition(array_agg(c.cluster ORDER BY c.client), array_agg(e.planted ORDER BY c.client)) AS planted,
       same_partition(array_agg(c.cluster ORDER BY c.client), array_agg(e.sklearn ORDER BY c.client)) AS sklearn
  FROM perpca_clusters('cl_planted') c JOIN cexpected e ON e.problem = 'planted' AND e.client = c.client;
-- Overlapping groups: the same partition as scikit-learn's SpectralClustering
-- (affinity = 'precomputed') on the same rho, and the same on every call.
SELECT same_partition(array_agg(c.cluster ORDER BY c.client), array_agg(e.sklearn ORDER BY c.client)) AS sklearn,
       same_partition(array_agg(c.cluster ORDER BY c.client), array_agg(e.planted ORDER BY c.client)) AS planted
  FROM perpca_clusters('cl_noisy', 4) c JOIN cexpected e ON e.problem = 'noisy' AND e.client = c.client;
SELECT bool_and(a.cluster = b.cluster AND a.distance_to_center = b.distance_to_center) AS deterministic
  FROM perpca_clusters('cl_noisy', 4) a JOIN perpca_clusters('cl_noisy', 4) b USING (client);
-- Clusters are numbered by their first client; distances are to the cluster's centre.
SELECT min(client) AS first_client, cluster, count(*) AS clients, bool_and(distance_to_center >= 0) AS distances
  FROM perpca_clusters('cl_planted', 3) GROUP BY cluster ORDER BY cluster;
\set VERBOSITY terse
SELECT * FROM perpca_clusters('cl_planted', 0);
SELECT * FROM perpca_clusters('cl_planted', 13);
SELECT * FROM perpca_clusters(NULL, 2);
SELECT model_name FROM perpca_train('no_local', 'SELECT client, perpca_stats(x) FROM perpca_results.obs GROUP BY client', 2, 0);
SELECT * FROM perpca_clusters('no_local', 2);
\set VERBOSITY default

-- Every new object is commented.
SELECT p.proname, obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p
 WHERE p.proname IN ('perpca_loadings', 'perpca_component_variance', 'perpca_model_monitor', 'perpca_clusters',
                     'f_upper_quantile')
 ORDER BY 1, 2;

SET client_min_messages = warning;
DROP SCHEMA perpca_results CASCADE;
