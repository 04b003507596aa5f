-- Best responses whose block is wide (12 b > the operator's order), where
-- LOBPCG is not used: a dense client's first response is exact, the later
-- ones come from subspace iteration started at its previous answer; a thin
-- client's are exact (its Gram matrix's, or its factor's SVD when it has
-- fewer rows than the block).  d = 120, 2 + 16 (block 24), three dense
-- clients, a thin one of 40 rows and one of 20.  The fit must reach the
-- optimum of the numpy oracle's L-BFGS with exact best responses, and each
-- client's local variances there.  The rows come from an integer hash
-- computed here and in test/fixtures/gen_wide_block.py.
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE wb_expected (objective float8);
\copy wb_expected FROM 'test/data/wide_block_expected.csv' CSV HEADER
CREATE TEMP TABLE wb_local (client int, component int, variance float8);
\copy wb_local FROM 'test/data/wide_block_local.csv' CSV HEADER
-- client c's rows r: x[r, j] = (h / 2^32 - 0.5) / s, h the hash of (c, r, j), s = j + 8 for
-- j < 2 (two strong axes all share), ((j + 11 c) mod 120) + 20 else
CREATE TEMP TABLE wb AS
SELECT c AS client, perpca_stats(x ORDER BY r) AS stats
FROM (SELECT c, r, ARRAY(SELECT (h3::float8 / 4294967296 - 0.5) / CASE WHEN j < 2 THEN j + 8 ELSE ((j + 11 * c) % 120) + 20 END
                         FROM (SELECT j, h2 # (h2 >> 16) AS h3
                               FROM (SELECT j, ((h1 # (h1 >> 16)) * 73244475) & 4294967295 AS h2
                                     FROM (SELECT j, ((h0 # (h0 >> 16)) * 73244475) & 4294967295 AS h1
                                           FROM (SELECT j, ((c::int8 * 1000003 + r) * 120 + j + 7777777) & 4294967295 AS h0
                                                 FROM generate_series(0, 119) j) a) b) e) f
                         ORDER BY j) AS x
      FROM (VALUES (1, 240), (2, 240), (3, 240), (4, 40), (5, 20)) n(c, rows),
           generate_series(1, n.rows) r) g
GROUP BY c;
SELECT client, perpca_stats_form(stats), perpca_count(stats) FROM wb ORDER BY client;
CREATE TEMP TABLE wb_fit AS
SELECT * FROM perpca_fit('SELECT client, stats FROM wb', 2, 16, init => 'dispca', hops => 0);
-- numpy's optimum, to 1e-10 (relative); the rounds after the first iterated
SELECT l.d, l.converged, abs(l.objective - e.objective) < 1e-10 * e.objective AS objective_matches,
       (SELECT sum(inner_iterations) FROM perpca_last_fit_rounds()) > 0 AS iterated
FROM perpca_last_fit() l, wb_expected e;
-- every client's local variances, to 1e-8 (relative)
SELECT f.client, count(*) AS components,
       bool_and(abs(f.variance - e.variance) < 1e-8 * e.variance) AS variances_match
FROM wb_fit f JOIN wb_local e ON e.client = f.client::int AND e.component = f.component
WHERE f.kind = 'local'
GROUP BY f.client
ORDER BY f.client;
RESET max_parallel_workers_per_gather;
