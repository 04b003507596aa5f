-- stats_plans: perpca_stats gives the same bits under every plan, and the
-- planner knows how large a group's state is.
--
-- Plans: HashAggregate in memory, HashAggregate spilled to disk, Sort +
-- GroupAggregate, and a parallel plan (Partial HashAggregate in one worker,
-- states serialized, Finalize in the leader).  Rows reach every plan in the
-- same order within a group (table order; the sorted plan reads a subquery
-- ordered by group and id), so the values must match bit for bit, thin and
-- dense, with rows stored inline (d = 5) and in TOAST (d = 300, whose rows
-- a thin group keeps in TOAST until its final function).
SET client_min_messages = warning;
SET jit = off;

CREATE TABLE plan_small (id int, g int, x float8[]);
INSERT INTO plan_small
SELECT i, (i * 7) % 60,
       ARRAY(SELECT round((sin(i * 1.3 + j * 0.7) * 1000)::numeric, 3)::float8 + 1e6 * (i % 3)
             FROM generate_series(1, 5) AS j)
FROM generate_series(1, 900) AS i;
-- ten thin groups (one or two rows), and NULL rows, which are skipped
INSERT INTO plan_small
SELECT 1000 + i, 60 + i % 10, ARRAY[i, -i, i * 0.5, 1e6, i % 3]::float8[] FROM generate_series(1, 15) AS i;
INSERT INTO plan_small VALUES (901, 5, NULL), (902, 17, NULL);

-- d = 300: 2.4 kB rows, stored out of line (no compression)
CREATE TABLE plan_toast (id int, g int, x float8[]);
ALTER TABLE plan_toast ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO plan_toast
SELECT i, CASE WHEN i <= 400 THEN i % 2 ELSE 2 + i % 38 END,
       ARRAY(SELECT sin(i * 0.37 + j * 1.1) * 10 + cos(j) FROM generate_series(1, 300) AS j)
FROM generate_series(1, 1400) AS i;
-- The same rows in tables partitioned by group, for the parallel plan:
-- there a worker scans whole partitions, so each group's rows meet in one
-- process, in table order, as they do in the serial plans.
CREATE TABLE plan_small_p (id int, g int, x float8[]) PARTITION BY HASH (g);
CREATE TABLE plan_toast_p (id int, g int, x float8[]) PARTITION BY HASH (g);
SELECT format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS 4, REMAINDER %s)', t || r, t, r)
FROM unnest(ARRAY['plan_small_p', 'plan_toast_p']) AS t, generate_series(0, 3) AS r \gexec
ALTER TABLE plan_toast_p ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO plan_small_p SELECT * FROM plan_small ORDER BY id;
INSERT INTO plan_toast_p SELECT * FROM plan_toast ORDER BY id;
ANALYZE plan_small, plan_toast, plan_small_p, plan_toast_p;

-- the d = 300 rows really are in TOAST, and both forms occur
SELECT pg_relation_size(reltoastrelid) > 1400 * 2400 AS rows_in_toast
FROM pg_class WHERE oid = 'plan_toast'::regclass;
SELECT perpca_stats_form(s) AS form, count(*)
FROM (SELECT g, perpca_stats(x) AS s FROM plan_toast GROUP BY g) q GROUP BY 1 ORDER BY 1;
SELECT perpca_stats_form(s) AS form, count(*)
FROM (SELECT g, perpca_stats(x) AS s FROM plan_small GROUP BY g) q GROUP BY 1 ORDER BY 1;

-- plan_shape(query): the aggregate node's strategy, and for a hash
-- aggregate whether it spilled, from EXPLAIN ANALYZE
\i test/include/agg_plan.sql
CREATE FUNCTION plan_shape(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
    node jsonb;
BEGIN
    SELECT * INTO plan, node FROM agg_plan(query);
    RETURN concat_ws(' ', node ->> 'Partial Mode', node ->> 'Strategy',
        CASE WHEN node ->> 'Strategy' = 'Hashed' THEN
            CASE WHEN (node ->> 'HashAgg Batches')::int > 1 THEN 'spilled' ELSE 'in memory' END END,
        CASE WHEN plan::text LIKE '%"Partial Mode": "Partial"%' THEN 'with partial aggregation' END);
END $$;

-- run_plan(tab, label): the query under the plan's settings, into plan_results
CREATE TABLE plan_results (tab text, plan text, shape text, g int, n bigint, digest text);
CREATE FUNCTION run_plan(tab text, label text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    q text := format('SELECT g, perpca_stats(x) AS s FROM %I GROUP BY g',
                     tab || CASE WHEN label = 'parallel' THEN '_p' ELSE '' END);
BEGIN
    IF label = 'sorted' THEN
        q := format('SELECT g, perpca_stats(x) AS s FROM (SELECT g, x FROM %I ORDER BY g, id) o GROUP BY g', tab);
    END IF;
    EXECUTE format('INSERT INTO plan_results SELECT %L, %L, %L, g, perpca_count(s), md5(perpca_stats_send(s)) FROM (%s) q',
                   tab, label, plan_shape(q), q);
END $$;

-- hash aggregate, all states in memory
SET work_mem = '64MB';
SET enable_sort = off;
SET max_parallel_workers_per_gather = 0;
SELECT run_plan('plan_small', 'hash in memory'), run_plan('plan_toast', 'hash in memory');
-- hash aggregate spilling to disk
SET work_mem = '64kB';
SELECT run_plan('plan_small', 'hash spilled'), run_plan('plan_toast', 'hash spilled');
-- Sort + GroupAggregate
RESET enable_sort;
SET enable_hashagg = off;
SELECT run_plan('plan_small', 'sorted'), run_plan('plan_toast', 'sorted');
-- parallel: workers aggregate whole partitions, states are serialized,
-- the leader combines and finalizes
RESET enable_hashagg;
SET work_mem = '64MB';
SET enable_sort = off;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = '1GB';
SELECT run_plan('plan_small', 'parallel'), run_plan('plan_toast', 'parallel');
RESET ALL;
SET client_min_messages = warning;

-- each plan ran as intended
SELECT tab, plan, shape, count(*) AS groups, sum(n) AS rows
FROM plan_results GROUP BY tab, plan, shape ORDER BY tab, plan;

-- every plan gives the same bits as the in-memory hash aggregate
SELECT r.tab, r.plan, count(*) AS groups_differing
FROM plan_results r JOIN plan_results h
  ON h.tab = r.tab AND h.g = r.g AND h.plan = 'hash in memory'
WHERE r.digest IS DISTINCT FROM h.digest OR r.n <> h.n
GROUP BY 1, 2 ORDER BY 1, 2;
SELECT tab, count(DISTINCT plan) AS plans, count(*) / count(DISTINCT plan) AS groups
FROM plan_results GROUP BY tab ORDER BY tab;

-- the thin values of rows kept in TOAST equal those of the same rows in memory
SELECT count(*) AS groups_differing
FROM (SELECT g, md5(perpca_stats_send(perpca_stats(x))) AS h FROM plan_toast GROUP BY g) a
JOIN (SELECT g, md5(perpca_stats_send(perpca_stats(x ORDER BY id))) AS h FROM
        (SELECT id, g, x::text::float8[] AS x FROM plan_toast) c GROUP BY g) b USING (g)
WHERE a.h <> b.h;

-- a malformed row waiting in TOAST fails as it would have at once
INSERT INTO plan_toast VALUES (2001, 5, ARRAY(SELECT 1.0::float8 FROM generate_series(1, 299)) || 'NaN'::float8);
SELECT perpca_count(perpca_stats(x)) FROM plan_toast WHERE g = 5;
DELETE FROM plan_toast WHERE id = 2001;
INSERT INTO plan_toast VALUES (2002, 5, ARRAY(SELECT 1.0::float8 FROM generate_series(1, 301)));
SELECT perpca_count(perpca_stats(x)) FROM plan_toast WHERE g = 5;
DELETE FROM plan_toast WHERE id = 2002;

-- as a window aggregate (final function after every row) the running values
-- equal the aggregate over each prefix
SELECT count(*) AS prefixes_differing
FROM (SELECT id, md5(perpca_stats_send(perpca_stats(x) OVER (ORDER BY id))) AS h
      FROM plan_toast WHERE g = 0 AND id <= 201) w
JOIN LATERAL (SELECT md5(perpca_stats_send(perpca_stats(x ORDER BY id))) AS h
              FROM plan_toast p WHERE p.g = 0 AND p.id <= w.id) a ON true
WHERE w.h <> a.h;

-- The planner sizes a hash aggregate with the declared state size (SSPACE,
-- 16 kB): 1000 groups' states do not fit in the default work_mem (4MB), so
-- at default settings it sorts and aggregates one group at a time (with
-- PostgreSQL's default guess of 8 kB it would hash and spill); with room
-- for them it hashes.
SELECT aggtransspace FROM pg_aggregate
WHERE aggfnoid IN ('perpca_stats(float8[])'::regprocedure, 'perpca_merge(perpca_stats)'::regprocedure);
CREATE TABLE plan_groups AS
SELECT i % 1000 AS g, ARRAY[sin(i), cos(i), i % 7]::float8[] AS x FROM generate_series(1, 8000) AS i;
ANALYZE plan_groups;
EXPLAIN (COSTS OFF) SELECT g, perpca_stats(x) FROM plan_groups GROUP BY g;
SET work_mem = '64MB';
EXPLAIN (COSTS OFF) SELECT g, perpca_stats(x) FROM plan_groups GROUP BY g;
RESET work_mem;

DROP TABLE plan_small, plan_toast, plan_small_p, plan_toast_p, plan_results, plan_groups;
DROP FUNCTION plan_shape(text), run_plan(text, text), agg_plan(text);
