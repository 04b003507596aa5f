--
-- Partitioned tables: with enable_partitionwise_aggregate the aggregate runs
-- below the Append, complete per partition when the table is partitioned by
-- the group column, partial per partition plus a Finalize otherwise; the
-- answers equal those of the unpartitioned table to 1e-12 relative.
--
CREATE SCHEMA perpca_partition;
SET search_path = perpca_partition, public;
SET extra_float_digits = 0;
\i test/include/compare.sql
-- Plans below are serial; parallel partition-wise plans come at the end.
SET max_parallel_workers_per_gather = 0;

-- The unpartitioned reference: 24000 deterministic rows, d = 8, 12 groups,
-- one row per 20 minutes through 2024 (each group spans every quarter).
CREATE TABLE flat (id int, g int, ts timestamp, x float8[]);
INSERT INTO flat
SELECT i, i % 12, timestamp '2024-01-01' + i * interval '20 minutes',
       ARRAY(SELECT 50.0 + (j + 1) * sin(i * 0.37 * (j + 1) + (i % 12))
                    + 0.5 * cos(i * 0.0021 * (j + 2)) + (i % 12) * 0.25 * j
               FROM generate_series(0, 7) AS j)
  FROM generate_series(0, 23999) AS i;

-- Partitioned by the group column: LIST and HASH.
CREATE TABLE by_list (id int, g int, ts timestamp, x float8[]) PARTITION BY LIST (g);
CREATE TABLE by_list_a PARTITION OF by_list FOR VALUES IN (0, 1, 2, 3);
CREATE TABLE by_list_b PARTITION OF by_list FOR VALUES IN (4, 5, 6, 7);
CREATE TABLE by_list_c PARTITION OF by_list FOR VALUES IN (8, 9, 10, 11);
INSERT INTO by_list SELECT * FROM flat ORDER BY id;

CREATE TABLE by_hash (id int, g int, ts timestamp, x float8[]) PARTITION BY HASH (g);
CREATE TABLE by_hash_0 PARTITION OF by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE by_hash_1 PARTITION OF by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE by_hash_2 PARTITION OF by_hash FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO by_hash SELECT * FROM flat ORDER BY id;

-- Partitioned by time: every group is spread over all four partitions.
CREATE TABLE by_time (id int, g int, ts timestamp, x float8[]) PARTITION BY RANGE (ts);
CREATE TABLE by_time_q1 PARTITION OF by_time FOR VALUES FROM ('2024-01-01') TO ('2024-04-01');
CREATE TABLE by_time_q2 PARTITION OF by_time FOR VALUES FROM ('2024-04-01') TO ('2024-07-01');
CREATE TABLE by_time_q3 PARTITION OF by_time FOR VALUES FROM ('2024-07-01') TO ('2024-10-01');
CREATE TABLE by_time_q4 PARTITION OF by_time FOR VALUES FROM ('2024-10-01') TO ('2025-01-01');
INSERT INTO by_time SELECT * FROM flat ORDER BY id;

ANALYZE flat, by_list, by_hash, by_time;

-- Every group really is spread over the four time partitions.
SELECT count(DISTINCT tableoid) AS partitions, min(n) AS min_rows_per_group_and_partition
  FROM (SELECT tableoid, g, count(*) AS n FROM by_time GROUP BY 1, 2) q;

CREATE TABLE ref_g AS SELECT g, perpca_stats(x) AS s FROM flat GROUP BY g;
CREATE TABLE ref_all AS SELECT perpca_stats(x) AS s FROM flat;

-- The comparison can fail: a neighbouring group and a group missing a row
-- are told apart.
SELECT stats_close(a.s, b.s, 1e-12) AS other_group_close
  FROM ref_g a JOIN ref_g b ON b.g = a.g + 1 WHERE a.g = 5;
SELECT stats_close(a.s, (SELECT perpca_stats(x) FROM flat WHERE g = 5 AND id <> 5), 1e-12)
       AS missing_row_close
  FROM ref_g a WHERE a.g = 5;

SET enable_partitionwise_aggregate = on;

-- Partitioned by the group column: one complete aggregate per partition.
EXPLAIN (COSTS OFF)
SELECT g, perpca_stats(x) FROM by_list GROUP BY g;
EXPLAIN (COSTS OFF)
SELECT g, perpca_stats(x) FROM by_hash GROUP BY g;

SELECT count(*) = 12 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS list_close
  FROM ref_g r FULL JOIN (SELECT g, perpca_stats(x) AS s FROM by_list GROUP BY g) p USING (g);
SELECT count(*) = 12 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS hash_close
  FROM ref_g r FULL JOIN (SELECT g, perpca_stats(x) AS s FROM by_hash GROUP BY g) p USING (g);

-- Partitioned by time: partial aggregate per partition, combined on top,
-- both grouped and ungrouped.
EXPLAIN (COSTS OFF)
SELECT g, perpca_stats(x) FROM by_time GROUP BY g;
EXPLAIN (COSTS OFF)
SELECT perpca_stats(x) FROM by_time;

SELECT count(*) = 12 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS time_close
  FROM ref_g r FULL JOIN (SELECT g, perpca_stats(x) AS s FROM by_time GROUP BY g) p USING (g);
SELECT stats_close((SELECT perpca_stats(x) FROM by_time), s, 1e-12) AS time_all_close
  FROM ref_all;
SELECT stats_close((SELECT perpca_stats(x) FROM by_list), s, 1e-12) AS list_all_close
  FROM ref_all;

-- perpca_merge of per-partition statistics equals the whole.
SELECT count(*) = 12 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS merged_partitions_close
  FROM ref_g r FULL JOIN
       (SELECT g, perpca_merge(s) AS s
          FROM (SELECT tableoid, g, perpca_stats(x) AS s FROM by_time GROUP BY 1, 2) q
         GROUP BY g) p USING (g);
SELECT stats_close(m.s, r.s, 1e-12) AS merged_all_close
  FROM ref_all r,
       (SELECT perpca_merge(s) AS s
          FROM (SELECT tableoid, perpca_stats(x) AS s FROM by_time GROUP BY 1) q) m;

-- Statistics kept per (day, group) in a table partitioned by quarter:
-- perpca_merge runs partition-wise too (partial merge per partition).
CREATE TABLE rollup (day date, g int, s perpca_stats) PARTITION BY RANGE (day);
CREATE TABLE rollup_q1 PARTITION OF rollup FOR VALUES FROM ('2024-01-01') TO ('2024-04-01');
CREATE TABLE rollup_q2 PARTITION OF rollup FOR VALUES FROM ('2024-04-01') TO ('2024-07-01');
CREATE TABLE rollup_q3 PARTITION OF rollup FOR VALUES FROM ('2024-07-01') TO ('2024-10-01');
CREATE TABLE rollup_q4 PARTITION OF rollup FOR VALUES FROM ('2024-10-01') TO ('2025-01-01');
INSERT INTO rollup SELECT ts::date, g, perpca_stats(x) FROM flat GROUP BY 1, 2;
ANALYZE rollup;
SELECT count(*) AS rollup_rows FROM rollup;

EXPLAIN (COSTS OFF)
SELECT g, perpca_merge(s) FROM rollup GROUP BY g;
SELECT count(*) = 12 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS rollup_close
  FROM ref_g r FULL JOIN (SELECT g, perpca_merge(s) AS s FROM rollup GROUP BY g) p USING (g);

-- Partition-wise and parallel together: partial aggregates in workers under
-- a Parallel Append, combined after the Gather.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT g, perpca_stats(x) FROM by_time GROUP BY g;
SELECT count(*) = 12 AS all_groups,
       bool_and(p.s IS NOT NULL AND stats_close(p.s, r.s, 1e-12)) AS parallel_time_close
  FROM ref_g r FULL JOIN (SELECT g, perpca_stats(x) AS s FROM by_time GROUP BY g) p USING (g);
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

RESET enable_partitionwise_aggregate;
SET client_min_messages = warning;
DROP SCHEMA perpca_partition CASCADE;
RESET client_min_messages;
RESET search_path;
RESET extra_float_digits;
