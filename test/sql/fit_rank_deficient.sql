-- A fit whose data-sparse clients have fewer dimensions than the local
-- components asked for.  The rows come from
-- test/fixtures/gen_rank_deficient.py: the paper's "Shared knowledge" setup
-- made small (d = 15, 10 clients, 5 of them with 10 rows); fitted at 2 + 10
-- centred (the sparse clients' S_i has rank 9) and at 2 + 11 uncentred
-- (rank 10).  Such a client's local block is its whole range plus a
-- completion orthogonal to U: the eigensolver's vectors for the zero
-- eigenvalues may lie in span U, and with them the gradient disagreed with
-- the objective, so that L-BFGS found no step along an ascent direction and
-- stopped short ("no step improves the objective").  The fit must converge,
-- reach the paper solver's objective (the numpy oracle's Algorithm 2, 20,000
-- rounds from the disPCA start) and the optimum of the oracle's L-BFGS, and
-- keep [U, V_i] orthonormal.
CREATE TEMP TABLE rd_rows (client int, x float8[]);
\copy rd_rows FROM 'test/data/rank_deficient_rows.csv' CSV HEADER
CREATE TEMP TABLE rd_expected (center text, n_local int, paper float8, optimum float8);
\copy rd_expected FROM 'test/data/rank_deficient_expected.csv' CSV HEADER
CREATE TEMP TABLE rd AS SELECT client, perpca_stats(x) AS stats FROM rd_rows GROUP BY client;
\i test/include/fit_helpers.sql

-- centred, 2 + 10: the sparse clients' S_i has rank 9
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM rd', 2, 10)$$) AS rows;
SELECT l.converged, l.stopped NOT LIKE '%stalled%' AS not_stalled,
       l.objective >= e.paper AS reaches_paper,
       abs(l.objective - e.optimum) < 1e-10 * e.optimum AS reaches_optimum,
       pg_temp.infeasibility() < 1e-10 AS feasible,
       (SELECT count(*) FROM perpca_last_fit_starts() WHERE ended = 'stalled') AS stalled_runs
FROM perpca_last_fit() l, rd_expected e WHERE e.center = 'client';
-- a sparse client's 10th local component carries no variance
SELECT client, component, abs(variance) < 1e-12 AS empty
FROM fo WHERE kind = 'local' AND client IN ('1', '6') AND component >= 9 ORDER BY client, component;

-- uncentred, 2 + 11: rank 10
SELECT pg_temp.run($$perpca_fit('SELECT client, stats FROM rd', 2, 11, center => 'none')$$) AS rows;
SELECT l.converged, l.stopped NOT LIKE '%stalled%' AS not_stalled,
       l.objective >= e.paper AS reaches_paper,
       abs(l.objective - e.optimum) < 1e-10 * e.optimum AS reaches_optimum,
       pg_temp.infeasibility() < 1e-10 AS feasible,
       (SELECT count(*) FROM perpca_last_fit_starts() WHERE ended = 'stalled') AS stalled_runs
FROM perpca_last_fit() l, rd_expected e WHERE e.center = 'none';

-- personalizing a client with U frozen: 5 rows, centred rank 4, n_local 10;
-- its local components are orthogonal to the model's global ones, and the 6
-- past its rank carry no variance
CREATE TABLE rd_train AS SELECT * FROM rd;	-- a model's source is no temporary table
SELECT model_name FROM perpca_train('rd_model', 'SELECT client, stats FROM rd_train', 2, 10);
CREATE TEMP TABLE rd_new AS SELECT * FROM perpca_personalize('rd_model', 'new',
  (SELECT perpca_stats(x) FROM (SELECT x FROM rd_rows WHERE client = 1 ORDER BY x LIMIT 5) s), n_local => 10);
SELECT count(DISTINCT p.component) AS components,
       max(abs(pg_temp.dot(p.pc, g.pc))) < 1e-12 AS orthogonal_to_global,
       count(DISTINCT p.component) FILTER (WHERE abs(p.variance) < 1e-12) AS empty
FROM rd_new p, rd_model_components g WHERE g.kind = 'global';
SELECT perpca_drop('rd_model');
DROP TABLE rd_train;
