-- Three stationary points, and the best one is missed by both starts.
-- The rows come from test/fixtures/gen_basins.py (d = 12, 9 clients, 1 + 1);
-- the numpy oracle's reference L-BFGS found exactly three local maxima from
-- 200 random starts, with the objectives of test/data/basins_expected.csv:
-- U along direction A (0) 18.75, the best; B (1) 18.0; C (2) 16.5.  The
-- pooled and the disPCA starts both converge to B, and the pooled variance
-- B leaves is largest along C.
CREATE TEMP TABLE basin_rows (client int, x float8[]);
\copy basin_rows FROM 'test/data/basins_rows.csv' CSV HEADER
CREATE TEMP TABLE basin_expected (point text, objective float8);
\copy basin_expected FROM 'test/data/basins_expected.csv' CSV HEADER
CREATE TEMP TABLE basins AS SELECT client, perpca_stats(x) AS stats FROM basin_rows GROUP BY client;

-- 1. each point is a stationary point: a fit started there stays there
CREATE FUNCTION pg_temp.from_axis(k int, OUT objective float8, OUT converged boolean) LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM count(*) FROM perpca_fit('SELECT client, stats FROM basins', 1, 1, init => 'given',
          start => format($$SELECT NULL::text, 'global'::text, 1, array_fill(0::float8, ARRAY[%s]) || 1::float8 || array_fill(0::float8, ARRAY[%s])$$, k, 11 - k));
  SELECT l.objective, l.converged INTO objective, converged FROM perpca_last_fit() l;
END $f$;
SELECT e.point, abs(f.objective - e.objective) < 1e-9 * e.objective AS stays, f.converged
FROM basin_expected e, pg_temp.from_axis(ascii(e.point) - ascii('A')) f
ORDER BY e.point;

-- 2. the starts alone (hops => 0) end at B: both miss the best basin
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM basins', 1, 1, hops => 0);
SELECT round(objective::numeric, 9) AS starts_only FROM perpca_last_fit();
SELECT start, round(objective::numeric, 6) AS objective FROM perpca_last_fit_starts()
WHERE start NOT LIKE 'hop %' ORDER BY start;

-- 3. the default finds A, the best of the three
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM basins', 1, 1);
SELECT abs(objective - (SELECT max(objective) FROM basin_expected)) < 1e-9 * objective AS default_finds_best,
       converged,
       (SELECT abs(abs(pc[1]) - 1) < 1e-9 FROM perpca_fit('SELECT client, stats FROM basins', 1, 1)
         WHERE kind = 'global') AS global_is_direction_a
FROM perpca_last_fit();
