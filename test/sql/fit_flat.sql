-- A fit past the data's rank on a flat spectrum, whose optimum is known
-- exactly.  The rows come from test/fixtures/gen_flat.py (d = 12, 3
-- clients, 1 + 1 planted, fitted at 3 + 3; the noise floor's eigengaps are
-- 1e-4 of the largest eigenvalue): the optimum is the best of the axis
-- triples, checked with the numpy oracle's L-BFGS.  Past the planted
-- directions the objective barely changes while U still moves, so L-BFGS
-- stops on the objective (ended 'objective converged'): when the gain still
-- to come, estimated from the rate of the last two windows of 10 rounds, is
-- below 1e-11 of f.  Stopping there must still reach the optimum: within
-- 1e-10 (relative), below the 1e-9 the gauntlet counts as reaching it.
CREATE TEMP TABLE flat_rows (client int, x float8[]);
\copy flat_rows FROM 'test/data/flat_rows.csv' CSV HEADER
CREATE TEMP TABLE flat_expected (objective float8);
\copy flat_expected FROM 'test/data/flat_expected.csv' CSV HEADER
CREATE TEMP TABLE flat AS SELECT client, perpca_stats(x) AS stats FROM flat_rows GROUP BY client;

-- the default fit reaches the optimum, and its chosen run stopped on the objective
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM flat', 3, 3);
SELECT abs(l.objective - e.objective) < 1e-10 * e.objective AS reaches_optimum, l.converged,
       l.stopped LIKE '%: objective converged (the objective stopped gaining while U moves among nearly equal directions)' AS says_flat
FROM perpca_last_fit() l, flat_expected e;
SELECT ended FROM perpca_last_fit_starts() WHERE chosen;
-- no run passes the optimum, and the runs the flat rule stopped are within 1e-10 of where they were going
SELECT bool_and(s.objective <= e.objective * (1 + 1e-12)) AS none_above,
       bool_and(abs(s.objective - e.objective) < 1e-10 * e.objective)
         FILTER (WHERE s.ended = 'objective converged') AS flat_ends_at_optimum
FROM perpca_last_fit_starts() s, flat_expected e;

-- at 4 + 3 the global directions a hop would replace lie in a flat cluster
-- (pooled variances within 2%), but the screened hop's best candidate is
-- already a better optimum than the starts': the search must run it (a flat
-- cluster alone does not skip the hop, fit_start.c's FLAT_HOP_SPREAD)
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM flat', 4, 3, hops => 0);
CREATE TEMP TABLE starts_only AS SELECT objective FROM perpca_last_fit();
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM flat', 4, 3);
SELECT l.objective > s.objective * (1 + 1e-6) AS hop_gains, l.stopped NOT LIKE '%no hop run%' AS hop_run
FROM perpca_last_fit() l, starts_only s;

-- ... and where the directions a hop would replace lie in a flat cluster and
-- no candidate beats the optimum, no hop is run.  Diagonal covariances,
-- built exactly: each client has 32 rows, +-a e_j with a^2 = 16 var_j on
-- each of the 16 axes, so S_i = M2 / n = diag(var).  A shared axis of
-- variance 100; one local axis per client (2.5; 0.1 in the other clients,
-- so its pooled variance, 0.9, stays below the floor); a floor of 1.00,
-- 0.99, 0.98, ... shared by all.  At 4 + 2 the optimum takes the shared axis
-- and the floor's top three as global, each client's own axis and the
-- floor's fourth as local: 1/2 * 3 * (100 + 1 + .99 + .98 + 2.5 + .97) =
-- 159.66.  The two weakest global directions and the one above them (1.00,
-- .99, .98) lie within 2.04% of the weakest, inside FLAT_HOP_SPREAD (5%),
-- and a hop could only bring in weaker floor axes.
CREATE TEMP TABLE diag_rows AS
SELECT c AS client,
       (SELECT array_agg(CASE WHEN k = j THEN s * sqrt(var * 16) ELSE 0 END ORDER BY k)
        FROM generate_series(0, 15) k)::float8[] AS x
FROM (SELECT c, j, CASE WHEN j = 0 THEN 100.0
                        WHEN j BETWEEN 1 AND 3 THEN CASE WHEN j = c THEN 2.5 ELSE 0.1 END
                        ELSE 1.0 - 0.01 * (j - 4) END AS var
      FROM generate_series(1, 3) c, generate_series(0, 15) j) v,
     (VALUES (1.0), (-1.0)) sg(s);
CREATE TEMP TABLE diag AS SELECT client, perpca_stats(x) AS stats FROM diag_rows GROUP BY client;
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM diag', 4, 2);
SELECT abs(objective - 159.66) < 1e-10 * 159.66 AS reaches_optimum,
       stopped LIKE 'the starts agreed on one basin whose weakest global directions carry nearly equal pooled variance (a flat spectrum)%: no hop run;%' AS no_hop
FROM perpca_last_fit();
SELECT count(*) AS runs, count(*) FILTER (WHERE start LIKE 'hop%') AS hops FROM perpca_last_fit_starts();
