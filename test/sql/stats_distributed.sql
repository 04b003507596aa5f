-- stats_distributed: perpca_stats_distributed(float8[]) and perpca_merge_distributed(perpca_stats),
-- the statistics aggregates with a perpca_stats transition state (for Citus, see test/t/045_citus.pl).
-- On one server they must give perpca_stats' / perpca_merge's bits for the same rows in the same order,
-- under hash, sorted, spilled and window plans, with rows inline and in TOAST; a parallel plan
-- (partial states flattened to perpca_stats values in the workers) gives the same statistics.
SET client_min_messages = warning;
SET jit = off;
SET max_parallel_workers_per_gather = 0;

CREATE TABLE dist_small (id int, g int, x float8[]);
INSERT INTO dist_small
SELECT i, (i * 7) % 40,
       ARRAY(SELECT round((sin(i * 1.3 + j * 0.7) * 1000)::numeric, 3)::float8 + 1e6 * (i % 3)
             FROM generate_series(1, 5) AS j)
FROM generate_series(1, 600) AS i;
-- thin groups (one or two rows), NULL rows (skipped) and an all-NULL group
INSERT INTO dist_small
SELECT 1000 + i, 40 + i % 10, ARRAY[i, -i, i * 0.5, 1e6, i % 3]::float8[] FROM generate_series(1, 15) AS i;
INSERT INTO dist_small VALUES (901, 5, NULL), (902, 17, NULL), (903, 99, NULL);
-- d = 300: rows stored out of line, which a thin group keeps in TOAST until it is flattened
CREATE TABLE dist_toast (id int, g int, x float8[]);
ALTER TABLE dist_toast ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO dist_toast
SELECT i, CASE WHEN i <= 300 THEN 0 ELSE 1 + i % 30 END,
       ARRAY(SELECT sin(i * 0.37 + j * 1.1) * 10 + cos(j) FROM generate_series(1, 300) AS j)
FROM generate_series(1, 900) AS i;
ANALYZE dist_small, dist_toast;

-- same_bits(table, strategy): groups, and groups whose perpca_stats_distributed value has the
-- bits of perpca_stats under the given plan ('hash', 'sort' or 'spill')
CREATE FUNCTION same_bits(tab text, strategy text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    PERFORM set_config('enable_hashagg', (strategy <> 'sort')::text, true);
    PERFORM set_config('enable_sort', (strategy = 'sort')::text, true);
    PERFORM set_config('work_mem', CASE WHEN strategy = 'spill' THEN '64kB' ELSE '4MB' END, true);
    EXECUTE format($q$
        SELECT count(*) || ' groups, ' || count(*) FILTER (WHERE a.s::text IS NOT DISTINCT FROM b.s::text) || ' same bits'
          FROM (SELECT g, perpca_stats_distributed(x) AS s FROM (SELECT * FROM %1$I ORDER BY g, id) t GROUP BY g) a
          FULL JOIN (SELECT g, perpca_stats(x) AS s FROM (SELECT * FROM %1$I ORDER BY g, id) t GROUP BY g) b USING (g)$q$,
        tab) INTO r;
    RETURN r;
END
$$;
BEGIN;
SELECT t, s, same_bits(t, s) FROM unnest(ARRAY['dist_small', 'dist_toast']) AS t,
       unnest(ARRAY['hash', 'sort', 'spill']) AS s;
COMMIT;

-- both forms occur; the all-NULL group is NULL; whole table; an empty input is NULL
SELECT perpca_stats_form(s) AS form, count(*)
FROM (SELECT g, perpca_stats_distributed(x) AS s FROM dist_toast GROUP BY g) q GROUP BY 1 ORDER BY 1;
SELECT perpca_stats_distributed(x) IS NULL AS all_null FROM dist_small WHERE g = 99;
SELECT perpca_stats_distributed(x)::text = perpca_stats(x)::text AS whole_table_same_bits FROM dist_small;
SELECT perpca_stats_distributed(x) IS NULL AS empty FROM dist_small WHERE false;

-- a running window: the final function runs after every row, the state goes on
SELECT count(*) AS rows, count(*) FILTER (WHERE a::text = b::text) AS same_bits
FROM (SELECT perpca_stats_distributed(x) OVER w AS a, perpca_stats(x) OVER w AS b
        FROM dist_small WHERE g IN (3, 41) WINDOW w AS (PARTITION BY g ORDER BY id)) q;

-- perpca_merge_distributed: perpca_merge's bits
SELECT count(*) AS groups, count(*) FILTER (WHERE a.s::text = b.s::text) AS same_bits
FROM (SELECT g % 5 AS k, perpca_merge_distributed(s) AS s
        FROM (SELECT g, perpca_stats(x) AS s FROM dist_small GROUP BY g ORDER BY g) q GROUP BY 1) a
FULL JOIN (SELECT g % 5 AS k, perpca_merge(s) AS s
        FROM (SELECT g, perpca_stats(x) AS s FROM dist_small GROUP BY g ORDER BY g) q GROUP BY 1) b USING (k);

-- a parallel plan: partial states leave the workers as perpca_stats values
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT g, perpca_stats_distributed(x) FROM dist_toast GROUP BY g;
SELECT count(*) AS groups,
       count(*) FILTER (WHERE perpca_count(a.s) = perpca_count(b.s)
                          AND perpca_mean(a.s)::text IS NOT NULL
                          AND (SELECT max(abs(u - v)) FROM unnest(perpca_covariance(a.s), perpca_covariance(b.s)) AS z(u, v)) < 1e-9
                          AND (SELECT max(abs(u - v)) FROM unnest(perpca_mean(a.s), perpca_mean(b.s)) AS z(u, v)) < 1e-12) AS close
FROM (SELECT g, perpca_stats_distributed(x) AS s FROM dist_toast GROUP BY g) a
FULL JOIN (SELECT g, perpca_stats(x) AS s FROM dist_toast GROUP BY g) b USING (g);
RESET ALL;
SET client_min_messages = warning;

-- errors: rows of two dimensions, NaN, calls outside an aggregate
SELECT perpca_stats_distributed(x) FROM (VALUES (ARRAY[1, 2]::float8[]), (ARRAY[1, 2, 3]::float8[])) v(x);
SELECT perpca_stats_distributed(x) FROM (VALUES (ARRAY[1, 2]::float8[]), (ARRAY['NaN', 2]::float8[])) v(x);
SELECT perpca_internal.stats_dist_accum(NULL, ARRAY[1, 2]::float8[]);
SELECT perpca_internal.stats_dist_final(NULL);

DROP FUNCTION same_bits(text, text);
DROP TABLE dist_small, dist_toast;
