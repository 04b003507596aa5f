-- stats_combine: combining the partial states of groups whose rows wait in
-- TOAST (d = 300, thin groups) fetches nothing.  A Finalize aggregate over
-- groups split across partitions (partition-wise aggregation) or across
-- parallel processes holds about what the serial plan holds, not every
-- group's rows; its values equal the serial plan's to 1e-12, in the thin
-- form where the union is thin and in the dense one where it is not.
CREATE SCHEMA perpca_combine;
SET search_path = perpca_combine, public;
\i test/include/compare.sql
SET client_min_messages = warning;
SET jit = off;
SET max_parallel_workers_per_gather = 0;
SET work_mem = '64MB';

-- 20 thin groups of 60 rows (thin while n <= 150) and 2 groups of 200 rows
-- (dense), 2.4 kB rows stored out of line; ids in table order
CREATE TABLE flat (id int, g int, x float8[]);
ALTER TABLE flat ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO flat
SELECT i, CASE WHEN i < 1200 THEN i % 20 ELSE 20 + i % 2 END,
       ARRAY(SELECT sin(i * 0.37 + j * 1.1) * 10 + cos(j) + (i % 20) FROM generate_series(1, 300) AS j)
FROM generate_series(0, 1599) AS i;
-- The same rows partitioned by id: every group is spread over 4 partitions.
CREATE TABLE split (id int, g int, x float8[]) PARTITION BY RANGE (id);
SELECT format('CREATE TABLE split_%s PARTITION OF split FOR VALUES FROM (%s) TO (%s)', k, k * 400, (k + 1) * 400)
FROM generate_series(0, 3) AS k \gexec
ALTER TABLE split ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO split SELECT * FROM flat ORDER BY id;
ANALYZE flat, split;

SELECT pg_relation_size(reltoastrelid) > 1600 * 2400 AS rows_in_toast
FROM pg_class WHERE oid = 'flat'::regclass;
SELECT count(DISTINCT tableoid) AS partitions, min(n) AS min_rows_per_group_and_partition
FROM (SELECT tableoid, g, count(*) AS n FROM split GROUP BY 1, 2) q;

-- agg_shape(query): the aggregate nodes' modes and strategies
CREATE FUNCTION agg_shape(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || query INTO plan;
    RETURN (SELECT string_agg(DISTINCT concat_ws(' ', n ->> 'Partial Mode', n ->> 'Strategy'), ', ')
            FROM jsonb_path_query(plan, 'strict $.**') AS n
            WHERE jsonb_typeof(n) = 'object' AND n ->> 'Node Type' = 'Aggregate');
END $$;
-- top_agg_kb(query): peak memory (kB) of the topmost aggregate node, from EXPLAIN ANALYZE
\i test/include/agg_plan.sql
CREATE FUNCTION top_agg_kb(query text) RETURNS int LANGUAGE sql AS $$
    SELECT (node ->> 'Peak Memory Usage')::int FROM agg_plan(query)
$$;

CREATE TABLE ref AS SELECT g, perpca_stats(x) AS s FROM flat GROUP BY g;
CREATE TABLE serial_kb AS
SELECT top_agg_kb('SELECT g, perpca_stats(x) FROM flat GROUP BY g') AS kb;

-- Partition-wise: a partial aggregate per partition, a Finalize on top that
-- combines 4 partial states per group (no serialization in one process).
SET enable_partitionwise_aggregate = on;
SELECT agg_shape('SELECT g, perpca_stats(x) FROM split GROUP BY g') AS plan;
SELECT count(*) AS groups,
       count(*) FILTER (WHERE perpca_stats_form(p.s) = 'thin') AS thin,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS close_to_serial
FROM ref r FULL JOIN (SELECT g, perpca_stats(x) AS s FROM split GROUP BY g) p USING (g);
-- The Finalize holds about what the serial aggregate holds (each group's
-- state, one row per partition and the rest as TOAST pointers), not the
-- thin groups' rows (fetching them at the combine held them all).
SELECT k.kb < 1.5 * s.kb AS finalize_about_serial
FROM serial_kb s, (SELECT top_agg_kb('SELECT g, perpca_stats(x) FROM split GROUP BY g') AS kb) k;
RESET enable_partitionwise_aggregate;

-- Parallel: partial aggregates in the workers and the leader, states
-- serialized (pending rows as TOAST pointers), deserialized and combined by
-- the Finalize, which keeps only what it combines into.
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET enable_sort = off;
SELECT agg_shape('SELECT g, perpca_stats(x) FROM flat GROUP BY g') AS plan;
SELECT count(*) AS groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS close_to_serial
FROM ref r FULL JOIN (SELECT g, perpca_stats(x) AS s FROM flat GROUP BY g) p USING (g);
-- (Rows split between processes as the scan hands out blocks; deserialized
-- states kept until the end held up to twice the serial plan's memory.)
SELECT k.kb < 1.5 * s.kb AS finalize_about_serial
FROM serial_kb s, (SELECT top_agg_kb('SELECT g, perpca_stats(x) FROM flat GROUP BY g') AS kb) k;
RESET ALL;

SET client_min_messages = warning;
DROP SCHEMA perpca_combine CASCADE;
RESET client_min_messages;
RESET search_path;
