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
