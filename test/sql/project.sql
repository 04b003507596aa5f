--
-- Projection functions on plain arrays, checked against numpy
-- (test/fixtures/gen_project.py): scores, reconstruction and residual with
-- and without a mean, the variance helpers on perpca_stats, local components
-- with the global ones frozen; then shapes, dimensions and NULLs.
--
CREATE SCHEMA perpca_project;
SET search_path = perpca_project, public;
SET extra_float_digits = 0;
\i test/include/compare.sql

-- The comparisons can fail.
SELECT arrays_close('{1,2,3}', '{1,2,3.0001}', 1e-6) AS close_detects_difference,
       arrays_close('{1,2,3}', '{{1,2,3}}', 1e-6) AS close_detects_shape,
       round(projector_distance('{{1,0,0}}', '{{0,1,0}}')::numeric, 12) AS orthogonal_lines;

CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/project_obs.csv' csv header
CREATE TABLE basis (name text, value float8[]);
\copy basis from 'test/data/project_basis.csv' csv header
CREATE TABLE pure (client text, obs int, scores float8[], recon float8[], resid float8[],
                   scores_c float8[], recon_c float8[], resid_c float8[]);
\copy pure from 'test/data/project_pure.csv' csv header
CREATE TABLE variance (client text, total_own float8, total_mean float8, explained_own float8,
                       explained_mean float8, local_pcs float8[], local_variance float8[]);
\copy variance from 'test/data/project_variance.csv' csv header

SELECT (SELECT count(*) FROM obs) AS rows, (SELECT count(*) FROM pure) AS expected_rows,
       (SELECT array_dims(value) FROM basis WHERE name = 'U') AS basis_dims;

-- Small exact cases.
SELECT perpca_scores('{1,2,3}', '{{1,0,0},{0,1,0}}') AS scores,
       perpca_reconstruct('{1,2,3}', '{{1,0,0},{0,1,0}}') AS recon,
       perpca_residual('{1,2,3}', '{{1,0,0},{0,1,0}}') AS resid,
       perpca_scores('{1,2,3}', '{{1,0,0},{0,1,0}}', '{1,1,1}') AS scores_c,
       perpca_reconstruct('{1,2,3}', '{{1,0,0},{0,1,0}}', '{1,1,1}') AS recon_c,
       perpca_residual('{1,2,3}', '{{1,0,0},{0,1,0}}', '{1,1,1}') AS resid_c;

-- Against numpy, without and with a mean.
SELECT count(*) AS checked,
       bool_and(arrays_close(perpca_scores(o.x, u.value), p.scores, 1e-12)) AS scores,
       bool_and(arrays_close(perpca_reconstruct(o.x, u.value), p.recon, 1e-12)) AS recon,
       bool_and(arrays_close(perpca_residual(o.x, u.value), p.resid, 1e-12)) AS resid,
       bool_and(arrays_close(perpca_scores(o.x, u.value, m.value), p.scores_c, 1e-12)) AS scores_c,
       bool_and(arrays_close(perpca_reconstruct(o.x, u.value, m.value), p.recon_c, 1e-12)) AS recon_c,
       bool_and(arrays_close(perpca_residual(o.x, u.value, m.value), p.resid_c, 1e-12)) AS resid_c
  FROM pure p JOIN obs o USING (client, obs),
       (SELECT value FROM basis WHERE name = 'U') u, (SELECT value FROM basis WHERE name = 'mean') m;

-- A PC table a user builds, aggregated with array_agg(pc ORDER BY component).
CREATE TABLE my_pcs AS
SELECT k AS component, ARRAY(SELECT value[k][j] FROM generate_subscripts(value, 2) AS j) AS pc
  FROM basis, generate_subscripts(value, 1) AS k WHERE name = 'U';
SELECT bool_and(arrays_close(perpca_scores(o.x, c.pcs), p.scores, 1e-12)) AS from_pc_table,
       bool_and(arrays_close(perpca_reconstruct(o.x, c.pcs), p.recon, 1e-12)) AS recon_from_pc_table
  FROM pure p JOIN obs o USING (client, obs),
       (SELECT array_agg(pc ORDER BY component) AS pcs FROM my_pcs) c;

-- The three parts add up: reconstruction + residual = x.
SELECT bool_and(arrays_close(
           ARRAY(SELECT a + b FROM unnest(perpca_reconstruct(o.x, u.value, m.value),
                                          perpca_residual(o.x, u.value, m.value)) AS t(a, b)),
           o.x, 1e-12)) AS recon_plus_resid_is_x
  FROM obs o, (SELECT value FROM basis WHERE name = 'U') u, (SELECT value FROM basis WHERE name = 'mean') m;

-- Variance helpers and local components with U frozen, per client.
CREATE TABLE st AS SELECT client, perpca_stats(x) AS s FROM obs GROUP BY client;
SELECT v.client,
       abs(perpca_total_variance(st.s) - v.total_own) <= 1e-11 * v.total_own AS total_own,
       abs(perpca_total_variance(st.s, m.value) - v.total_mean) <= 1e-11 * v.total_mean AS total_mean,
       abs(perpca_explained_variance(st.s, u.value) - v.explained_own) <= 1e-11 * v.explained_own AS explained_own,
       abs(perpca_explained_variance(st.s, u.value, m.value) - v.explained_mean) <= 1e-11 * v.explained_mean AS explained_mean,
       arrays_close((SELECT array_agg(l.pc ORDER BY l.component) FROM perpca_local_pcs(st.s, u.value, 2) l),
                    v.local_pcs, 1e-8) AS local_pcs,
       arrays_close((SELECT array_agg(l.variance ORDER BY l.component) FROM perpca_local_pcs(st.s, u.value, 2) l),
                    v.local_variance, 1e-10) AS local_variance,
       (SELECT projector_distance(array_agg(l.pc ORDER BY l.component), u.value) FROM perpca_local_pcs(st.s, u.value, 2) l)
           BETWEEN 4 - 1e-12 AND 4 + 1e-12 AS local_orthogonal_to_global
  FROM variance v JOIN st USING (client),
       (SELECT value FROM basis WHERE name = 'U') u, (SELECT value FROM basis WHERE name = 'mean') m
 ORDER BY v.client;

-- Properties: IMMUTABLE STRICT PARALLEL SAFE.
SELECT p.proname, p.pronargs, p.provolatile, p.proisstrict, p.proparallel
  FROM pg_proc p
 WHERE p.proname IN ('perpca_scores', 'perpca_reconstruct', 'perpca_residual', 'perpca_total_variance',
                     'perpca_explained_variance', 'perpca_local_pcs')
 ORDER BY 1, 2;

-- NULL arguments give NULL (STRICT).
SELECT perpca_scores(NULL, '{{1,0}}') IS NULL AS null_x,
       perpca_residual('{1,2}', NULL) IS NULL AS null_components,
       perpca_reconstruct('{1,2}', '{{1,0}}', NULL) IS NULL AS null_mean;

-- Wrong shapes, dimensions and values.
SELECT perpca_scores('{1,2,3}', '{1,0,0}');
SELECT perpca_scores('{1,2,3}', '{{{1,0,0}}}');
SELECT perpca_scores('{1,2,3}', '{}');
SELECT perpca_scores('{1,2,3}', '{{1,0},{0,1}}');
SELECT perpca_scores('{{1,2,3}}', '{{1,0,0}}');
SELECT perpca_reconstruct('{1,2,3}', '{{1,0,0}}', '{0,0}');
SELECT perpca_residual('{1,NULL,3}', '{{1,0,0}}');
SELECT perpca_residual('{1,2,3}', '{{1,NULL,0}}');
SELECT perpca_scores('{1,NaN,3}', '{{1,0,0}}');
SELECT perpca_explained_variance(s, '{{1,0,0}}') FROM st LIMIT 1;
SELECT perpca_total_variance(s, '{0,0,0}') FROM st LIMIT 1;
SELECT * FROM perpca_local_pcs((SELECT s FROM st LIMIT 1), (SELECT value FROM basis WHERE name = 'U'), 7);
SELECT * FROM perpca_local_pcs((SELECT s FROM st LIMIT 1), (SELECT value FROM basis WHERE name = 'U'), 0);

SET client_min_messages = warning;
DROP SCHEMA perpca_project CASCADE;
RESET client_min_messages;
RESET search_path;
RESET extra_float_digits;
