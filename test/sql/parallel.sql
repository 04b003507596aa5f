--
-- Parallel query: perpca_stats and perpca_merge run as real Partial /
-- Finalize aggregates (combine, serialize and deserialize in use), and the
-- parallel answer equals the serial one to 1e-12 relative.
--
CREATE SCHEMA perpca_parallel;
SET search_path = perpca_parallel, public;
SET extra_float_digits = 0;
\i test/include/compare.sql

-- 40000 deterministic rows, d = 12, 16 groups, a large common offset so the
-- centred covariance is small next to the raw second moment.  Every 97th row
-- is NULL (skipped by the aggregate).  Rows are spread over about 700 pages,
-- so both workers get plenty of blocks.
CREATE TABLE t (id int, g int, x float8[]);
INSERT INTO t
SELECT i, i % 16,
       CASE WHEN i % 97 = 0 THEN NULL ELSE
       ARRAY(SELECT 1000.0 + (j + 1) * sin(i * 0.61 * (j + 1) + (i % 16))
                    + 0.25 * cos(i * 0.013 * j) + (i % 16) * 0.5 * j
               FROM generate_series(0, 11) AS j) END
  FROM generate_series(1, 40000) AS i;
ANALYZE t;

-- Serial reference answers.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE serial_g AS SELECT g, perpca_stats(x) AS s FROM t GROUP BY g;
CREATE TABLE serial_all AS SELECT perpca_stats(x) AS s FROM t;
-- Per-(group, chunk) statistics: the input of perpca_merge (1600 rows).
CREATE TABLE chunks AS SELECT g, id % 100 AS k, perpca_stats(x) AS s FROM t GROUP BY 1, 2;
ANALYZE chunks;
CREATE TABLE serial_merge_g AS SELECT g, perpca_merge(s) AS s FROM chunks GROUP BY g;

-- Force parallel plans.  Without leader participation every row goes through
-- a worker, so the leader only combines deserialized partial states.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;

-- Grouped, hashed partial aggregation allowed.
SET enable_hashagg = on;
EXPLAIN (COSTS OFF)
CREATE TABLE par_hash_g AS SELECT g, perpca_stats(x) AS s FROM t GROUP BY g;
CREATE TABLE par_hash_g AS SELECT g, perpca_stats(x) AS s FROM t GROUP BY g;

-- Grouped, sorted aggregation only.
SET enable_hashagg = off;
EXPLAIN (COSTS OFF)
CREATE TABLE par_sort_g AS SELECT g, perpca_stats(x) AS s FROM t GROUP BY g;
CREATE TABLE par_sort_g AS SELECT g, perpca_stats(x) AS s FROM t GROUP BY g;
RESET enable_hashagg;

-- Ungrouped.
EXPLAIN (COSTS OFF)
CREATE TABLE par_all AS SELECT perpca_stats(x) AS s FROM t;
CREATE TABLE par_all AS SELECT perpca_stats(x) AS s FROM t;

-- The workers really run: two launched, both scan (rows are per-loop means).
-- The plan is read from its JSON form, the same on every version (the text
-- form of PostgreSQL 18 adds buffers and fractional row counts).
CREATE FUNCTION analyzed_plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || query INTO plan;
    RETURN QUERY
    WITH RECURSIVE n(node, depth, path) AS (
        SELECT plan -> 0 -> 'Plan', 0, ARRAY[0]::bigint[]
        UNION ALL
        SELECT c.value, n.depth + 1, n.path || c.ordinality
          FROM n, jsonb_array_elements(n.node -> 'Plans') WITH ORDINALITY AS c
    )
    SELECT repeat('  ', depth)
           || concat_ws(' ', node ->> 'Partial Mode',
                        CASE WHEN (node ->> 'Parallel Aware')::boolean THEN 'Parallel' END,
                        node ->> 'Node Type', 'on ' || (node ->> 'Relation Name'))
           || format(' (actual rows=%s loops=%s)', round((node ->> 'Actual Rows')::numeric), node ->> 'Actual Loops')
           || CASE WHEN node ? 'Workers Planned'
                   THEN format(' workers planned=%s launched=%s', node ->> 'Workers Planned', node ->> 'Workers Launched')
                   ELSE '' END
      FROM n ORDER BY path;
END $$;
SELECT analyzed_plan('SELECT perpca_count(perpca_stats(x)) FROM t') AS plan;

-- perpca_merge, grouped and ungrouped.
EXPLAIN (COSTS OFF)
CREATE TABLE par_merge_g AS SELECT g, perpca_merge(s) AS s FROM chunks GROUP BY g;
CREATE TABLE par_merge_g AS SELECT g, perpca_merge(s) AS s FROM chunks GROUP BY g;
EXPLAIN (COSTS OFF)
CREATE TABLE par_merge_all AS SELECT perpca_merge(s) AS s FROM chunks;
CREATE TABLE par_merge_all AS SELECT perpca_merge(s) AS s FROM chunks;

RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

-- Sanity: the reference has the expected shape.
SELECT count(*) AS groups, sum(perpca_count(s)) AS rows, min(perpca_dim(s)) AS d
  FROM serial_g;
SELECT perpca_count(s) AS rows FROM serial_all;

-- The comparison can fail: a neighbouring group, a group missing one row,
-- and a single value moved by 1e-6 are all told apart.
SELECT stats_close(a.s, b.s, 1e-12) AS other_group_close
  FROM serial_g a JOIN serial_g b ON b.g = a.g + 1 WHERE a.g = 3;
SELECT stats_close(a.s, (SELECT perpca_stats(x) FROM t WHERE g = 3 AND id <> 3), 1e-12)
       AS missing_row_close
  FROM serial_g a WHERE a.g = 3;
SELECT stats_close(a.s, (SELECT perpca_stats(CASE WHEN id = 3 THEN
                                   array_prepend(x[1] + 1e-6, x[2:]) ELSE x END)
                           FROM t WHERE g = 3), 1e-12) AS perturbed_close
  FROM serial_g a WHERE a.g = 3;

-- Parallel equals serial, every group present on both sides.
SELECT count(*) = 16 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS hash_close
  FROM serial_g r FULL JOIN par_hash_g p USING (g);
SELECT count(*) = 16 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS sort_close
  FROM serial_g r FULL JOIN par_sort_g p USING (g);
SELECT stats_close(p.s, r.s, 1e-12) AS all_close
  FROM serial_all r, par_all p;

-- perpca_merge: parallel equals serial merge and the raw-row statistics.
SELECT count(*) = 16 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS merge_close,
       bool_and(stats_close(p.s, raw.s, 1e-12)) AS merge_equals_raw
  FROM serial_merge_g r FULL JOIN par_merge_g p USING (g) JOIN serial_g raw USING (g);
SELECT stats_close(p.s, r.s, 1e-12) AS merge_all_close
  FROM serial_all r, par_merge_all p;

SET client_min_messages = warning;
DROP SCHEMA perpca_parallel CASCADE;
RESET client_min_messages;
RESET search_path;
RESET extra_float_digits;
