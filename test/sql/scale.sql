--
-- Feature scaling: scale => 'standard' divides each feature by its pooled
-- standard deviation (from the statistics), stored in the model and applied
-- by every function that reads it.  References: sklearn's StandardScaler +
-- PCA and the numpy oracle on the pre-scaled UCI wine data
-- (test/fixtures/gen_scale.py).  perpca_fit_federated's scaling is tested
-- against perpca_fit in test/t/040_federated.pl.
--
CREATE SCHEMA perpca_scale;
SET search_path = perpca_scale, public;
SET extra_float_digits = 0;
\i test/include/compare.sql
\i test/include/row_helpers.sql
-- The d x d projector of k x d orthonormal rows, flattened row-major.
CREATE FUNCTION projector(a float8[]) RETURNS float8[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT array_agg((SELECT sum(a[k][i] * a[k][j]) FROM generate_subscripts(a, 1) AS k) ORDER BY i, j)
      FROM generate_subscripts(a, 2) AS i, generate_subscripts(a, 2) AS j
$$;

CREATE TABLE wine (client text, row int, x float8[]);
\copy wine from 'test/data/scale_wine.csv' csv header
CREATE TABLE ref (kind text, component int, value float8[]);
\copy ref from 'test/data/scale_sklearn.csv' csv header
CREATE TABLE ref_rows (row int, abs_scores float8[], reconstruct float8[], residual float8[], error float8);
\copy ref_rows from 'test/data/scale_rows.csv' csv header
CREATE TABLE ref_perpca (kind text, client text, value float8[]);
\copy ref_perpca from 'test/data/scale_perpca.csv' csv header
CREATE TABLE wine_stats AS SELECT client, perpca_stats(x) AS stats FROM wine GROUP BY client;

-- The divisors from the statistics are StandardScaler's (ddof 0); none is constant.
SELECT arrays_close(f.scale_factors, (SELECT value FROM ref WHERE kind = 'scale'), 1e-13, 1e-300) AS scale_ok,
       f.constant_features
  FROM wine_stats s0, LATERAL (SELECT * FROM perpca_scale_factors((SELECT perpca_merge(stats) FROM wine_stats))) f
 LIMIT 1;

-- Unscaled, the first component is proline (feature 13), the one measured in the hundreds.
CREATE TABLE fit_none AS
SELECT * FROM perpca_fit('SELECT client, stats FROM perpca_scale.wine_stats', 3, 0, method => 'cpca',
                         center => 'global', weights => 'samples');
SELECT (SELECT abs(pc[13]) > 0.99 FROM fit_none WHERE component = 1) AS proline_first,
       (SELECT options ->> 'scale' FROM perpca_last_fit()) AS scale;

-- Scaled cpca = StandardScaler + PCA: |cos| of each component, the projector, the variances.
CREATE TABLE fit_std AS
SELECT * FROM perpca_fit('SELECT client, stats FROM perpca_scale.wine_stats', 3, 0, method => 'cpca',
                         center => 'global', weights => 'samples', scale => 'standard');
SELECT (SELECT options ->> 'scale' FROM perpca_last_fit()) AS scale,
       (SELECT converged FROM perpca_last_fit()) AS converged;
SELECT f.component,
       close(abs((SELECT sum(a * b) FROM unnest(f.pc, r.value) AS u(a, b))), 1, 1e-10) AS cos_ok,
       close(f.variance, v.value[1], 1e-10) AS variance_ok,
       close(f.variance / 13, q.value[1], 1e-10) AS ratio_ok
  FROM fit_std f
  JOIN ref r ON r.kind = 'pc' AND r.component = f.component
  JOIN ref v ON v.kind = 'variance' AND v.component = f.component
  JOIN ref q ON q.kind = 'ratio' AND q.component = f.component
 ORDER BY f.component;
SELECT arrays_close(projector((SELECT array_agg(pc ORDER BY component) FROM fit_std)),
                    projector((SELECT array_agg(value ORDER BY component) FROM ref WHERE kind = 'pc')),
                    1e-10) AS projector_ok;

-- Thin clients (rows kept, n <= d/2) scale their rows: the same fit.
CREATE TABLE wine_thin AS
SELECT client || '_' || (row % 20) AS client, perpca_stats(x) AS stats FROM wine GROUP BY 1;
SELECT count(*) FILTER (WHERE perpca_stats_form(stats) = 'thin') > 0 AS some_thin FROM wine_thin;
SELECT arrays_close(projector((SELECT array_agg(pc ORDER BY component)
                                 FROM perpca_fit('SELECT client, stats FROM perpca_scale.wine_thin', 3, 0,
                                                 method => 'cpca', center => 'global', weights => 'samples',
                                                 scale => 'standard'))),
                    projector((SELECT array_agg(value ORDER BY component) FROM ref WHERE kind = 'pc')),
                    1e-10) AS thin_projector_ok;

-- 'none' (and NULL, the default) leave the fit as it was.
SELECT (SELECT array_agg(pc ORDER BY component) FROM fit_none) =
       (SELECT array_agg(pc ORDER BY component)
          FROM perpca_fit('SELECT client, stats FROM perpca_scale.wine_stats', 3, 0, method => 'cpca',
                          center => 'global', weights => 'samples', scale => NULL)) AS null_is_none;

-- ---- a stored model: projections apply the stored scale ------------------
SELECT model_name, d, n_clients, converged
  FROM perpca_train('wine_cpca', 'SELECT client, stats FROM perpca_scale.wine_stats', 3, 0, method => 'cpca',
                    center => 'global', weights => 'samples', scale => 'standard');
SELECT arrays_close(scale_factors, (SELECT value FROM ref WHERE kind = 'scale'), 1e-13, 1e-300) AS scale_stored,
       constant_features, options ->> 'scale' AS scale_option,
       arrays_close(global_mean, (SELECT value FROM ref WHERE kind = 'mean'), 1e-13, 1e-300) AS mean_in_data_units
  FROM wine_cpca_info;
-- Scores and error in standardized units, reconstruction and residual in the data's.
SELECT count(*) AS rows,
       bool_and(arrays_close(absolute(perpca_model_scores('wine_cpca', w.client, w.x)), r.abs_scores, 1e-9)) AS scores_ok,
       bool_and(arrays_close(perpca_model_reconstruct('wine_cpca', w.client, w.x), r.reconstruct, 1e-10, 1e-300)) AS reconstruct_ok,
       bool_and(arrays_close(perpca_model_residual('wine_cpca', w.client, w.x), r.residual, 1e-8)) AS residual_ok,
       bool_and(close(perpca_model_error('wine_cpca', w.client, w.x), r.error, 1e-9)) AS error_ok,
       bool_and(arrays_close(add(add(perpca_model_global_part('wine_cpca', w.client, w.x),
                                     perpca_model_local_part('wine_cpca', w.client, w.x)),
                                 perpca_model_residual('wine_cpca', w.client, w.x)), w.x, 1e-12)) AS parts_sum_to_x
  FROM wine w JOIN ref_rows r USING (row);
-- perpca_component_info: standardized variances; the global ratios are sklearn's explained_variance_ratio_.
SELECT i.component, close(i.explained_variance_ratio, q.value[1], 1e-10) AS ratio_ok
  FROM perpca_component_info('wine_cpca') i JOIN ref q ON q.kind = 'ratio' AND q.component = i.component
 ORDER BY i.component;
-- perpca_evaluate on rows and on statistics: the mean of perpca_model_error per client.
SELECT e.client, e.n,
       close(e.error, (SELECT avg(r.error) FROM ref_rows r JOIN wine w USING (row) WHERE w.client = e.client), 1e-9) AS rows_ok,
       close(s.error, e.error, 1e-10) AS stats_ok
  FROM perpca_evaluate('wine_cpca', 'SELECT client, x FROM perpca_scale.wine') e
  JOIN perpca_evaluate('wine_cpca', 'SELECT client, stats FROM perpca_scale.wine_stats') s USING (client)
 ORDER BY e.client;
-- train_error (the clients table) is the same standardized error.
SELECT c.client, close(c.train_error, (SELECT avg(r.error) FROM ref_rows r JOIN wine w USING (row) WHERE w.client = c.client), 1e-9) AS train_error_ok
  FROM wine_cpca_clients c ORDER BY c.client;

-- ---- PerPCA (global + local) scaled = the oracle on pre-scaled data ---------
SELECT model_name, n_clients, converged
  FROM perpca_train('wine_pp', 'SELECT client, stats FROM perpca_scale.wine_stats', 2, 1, scale => 'standard',
                    tolerance => 1e-12);
SELECT close((SELECT objective FROM wine_pp_info), (SELECT value[1] FROM ref_perpca WHERE kind = 'objective'), 1e-9) AS objective_ok,
       arrays_close(projector((SELECT array_agg(pc ORDER BY component) FROM wine_pp_components WHERE kind = 'global')),
                    (SELECT value FROM ref_perpca WHERE kind = 'global'), 1e-6) AS global_ok;
SELECT r.client,
       arrays_close(projector((SELECT array_agg(pc ORDER BY component) FROM wine_pp_components c
                                WHERE c.kind = 'local' AND c.client = r.client)), r.value, 1e-6) AS local_ok
  FROM ref_perpca r WHERE r.kind = 'local' ORDER BY r.client;
-- Parts sum to x, evaluate matches the row errors, for a model with local parts too.
SELECT bool_and(arrays_close(add(add(perpca_model_global_part('wine_pp', w.client, w.x),
                                     perpca_model_local_part('wine_pp', w.client, w.x)),
                                 perpca_model_residual('wine_pp', w.client, w.x)), w.x, 1e-12)) AS parts_sum_to_x
  FROM wine w;
SELECT e.client, close(e.error, (SELECT avg(perpca_model_error('wine_pp', w.client, w.x)) FROM wine w WHERE w.client = e.client), 1e-10) AS evaluate_ok,
       close(e.error, c.train_error, 1e-10) AS train_error_ok
  FROM perpca_evaluate('wine_pp', 'SELECT client, stats FROM perpca_scale.wine_stats') e
  JOIN wine_pp_clients c USING (client) ORDER BY e.client;

-- perpca_personalize scales the new client's statistics: the same local components as the fit's.
CREATE TABLE before_personalize AS SELECT * FROM wine_pp_components WHERE kind = 'local' AND client = 'c1';
SELECT count(*) FROM perpca_personalize('wine_pp', 'c1', (SELECT stats FROM wine_stats WHERE client = 'c1'));
SELECT arrays_close(projector((SELECT array_agg(pc) FROM wine_pp_components WHERE kind = 'local' AND client = 'c1')),
                    projector((SELECT array_agg(pc) FROM before_personalize)), 1e-8) AS personalize_ok;

-- perpca_refresh reuses the stored scale option.
SELECT outcome, clients, converged FROM perpca_refresh('wine_pp', warm => false);
SELECT options ->> 'scale' AS scale_option, scale_factors IS NOT NULL AS scale_stored FROM wine_pp_info;

-- perpca_choose_ranks passes scale to perpca_train: its held-out error is the scaled model's.
CREATE TABLE scan AS
SELECT * FROM perpca_choose_ranks('SELECT client, stats FROM perpca_scale.wine_stats',
                                  heldout => 'SELECT client, x FROM perpca_scale.wine WHERE row % 4 = 0',
                                  global_ranks => '{2}', local_ranks => '{1}', scale => 'standard');
SELECT n_global, n_local, converged, recommended FROM scan;
SELECT model_name FROM perpca_train('wine_scan', 'SELECT client, stats FROM perpca_scale.wine_stats', 2, 1,
                                    scale => 'standard');
SELECT close((SELECT heldout_error FROM scan), error, 1e-9) AS scan_is_scaled
  FROM perpca_evaluate_summary('wine_scan', 'SELECT client, x FROM perpca_scale.wine WHERE row % 4 = 0');

-- ---- a model stored before the scale option: read as unscaled ---------------
SELECT model_name FROM perpca_train('wine_old', 'SELECT client, stats FROM perpca_scale.wine_stats', 3, 0,
                                    method => 'cpca', center => 'global', weights => 'samples');
SELECT scale_factors IS NULL AS unscaled, constant_features IS NULL AS no_constant FROM wine_old_info;
CREATE TABLE old_errors AS SELECT row, perpca_model_error('wine_old', client, x) AS error FROM wine;
ALTER TABLE wine_old_info DROP COLUMN scale_factors, DROP COLUMN constant_features;
SELECT bool_and(o.error = perpca_model_error('wine_old', w.client, w.x)) AS same_errors
  FROM wine w JOIN old_errors o USING (row);
SELECT count(*) AS clients FROM perpca_evaluate('wine_old', 'SELECT client, x FROM perpca_scale.wine');
SELECT count(*) FROM perpca_personalize('wine_old', 'c9', (SELECT stats FROM wine_stats WHERE client = 'c1'), 1);
-- Replacing it adds the columns.
SELECT model_name FROM perpca_train('wine_old', 'SELECT client, stats FROM perpca_scale.wine_stats', 3, 0,
                                    method => 'cpca', center => 'global', scale => 'standard', replace => true);
SELECT scale_factors IS NOT NULL AS scaled FROM wine_old_info;

-- ---- a constant feature: left unscaled, named in a NOTICE and in the model ---
CREATE TABLE flat (client text, x float8[]);
INSERT INTO flat
SELECT 'g' || (i % 3), ARRAY[sin(i), 7.5, 100 * cos(3 * i), 0, (i % 5)::float8]
  FROM generate_series(1, 60) AS i;
SELECT * FROM perpca_scale_factors((SELECT perpca_stats(x) FROM flat));
SELECT model_name FROM perpca_train('flat_m', 'SELECT client, perpca_stats(x) FROM perpca_scale.flat GROUP BY client',
                                    1, 1, scale => 'standard');
SELECT scale_factors[2] AS s2, scale_factors[4] AS s4, constant_features FROM flat_m_info;
-- (Zero rows of every S_i: no component has weight there beyond the solver's
-- rounding, ~1e-12 after tens of L-BFGS steps.)
SELECT bool_and(abs(pc[2]) < 1e-9 AND abs(pc[4]) < 1e-9) AS flat_features_unused FROM flat_m_components;
SELECT bool_and(arrays_close(add(add(perpca_model_global_part('flat_m', client, x),
                                     perpca_model_local_part('flat_m', client, x)),
                                 perpca_model_residual('flat_m', client, x)), x, 1e-12)) AS parts_sum_to_x
  FROM flat;

-- ---- errors ----------------------------------------------------------------
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM perpca_scale.wine_stats', 2, 0, scale => 'zscore');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY terse
SELECT model_name FROM perpca_train('bad', 'SELECT client, stats FROM perpca_scale.wine_stats', 2, 0, scale => 'unit');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM perpca_choose_ranks('SELECT client, stats FROM perpca_scale.wine_stats',
                                  heldout => 'SELECT client, stats FROM perpca_scale.wine_stats',
                                  global_ranks => '{1}', local_ranks => '{0}', scale => 'z');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT count(*) FROM perpca_fit_federated(ARRAY['dbname=nowhere'], 'SELECT client, stats FROM wine_stats', 2, 0,
                                          scale => 'unit');
\echo :LAST_ERROR_SQLSTATE
SELECT perpca_internal.scale_vector(ARRAY[1, 2]::float8[], ARRAY[1, 0]::float8[]);
\echo :LAST_ERROR_SQLSTATE
SELECT perpca_internal.scale_vector(ARRAY[1, 2]::float8[], ARRAY[1, 2, 3]::float8[]);
SELECT perpca_scale_factors((SELECT perpca_merge(stats) FROM wine_stats WHERE false));

SELECT perpca_drop('wine_cpca'), perpca_drop('wine_pp'), perpca_drop('wine_old'), perpca_drop('flat_m'),
       perpca_drop('wine_scan');
DROP SCHEMA perpca_scale CASCADE;
