-- perpca_stats sketches (perpca_sketch, Frequent Directions): the format,
-- its text and binary forms, validation, accessors.
SET extra_float_digits = 0;

CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' / ' || nullif(detail, ''), '');
END $$;

-- ---------------------------------------------------------------------------
-- The text form: rows (1,2), (3,5.5), (0,1) have mean (4/3, 17/6) and
-- M2 = [[14/3, 43/6], [43/6, 67/6]] (trace 95/6).  A sketch with ell = 2
-- keeps it exactly as two rows B with B'B = M2 (delta = 0): the Welford rows
-- sqrt(1/2) (x2 - x1) and sqrt(2/3) (x3 - mean12).
-- ---------------------------------------------------------------------------
CREATE TABLE lit(s perpca_stats);
INSERT INTO lit VALUES ('v3 n=3 d=2 skipped=0 ell=2 rows=2 delta=0 trace=15.833333333333332 mean={1.3333333333333333,2.8333333333333335} mean_lo={0,0} sketch={1.414213562373095,2.4748737341529163,-1.632993161855452,-2.245365597551247}');
SELECT s FROM lit;
SELECT perpca_stats_form(s), perpca_count(s), perpca_dim(s), perpca_skipped(s), perpca_mean(s) FROM lit;
-- the covariance of a sketch is its estimate B'B/n (here exact)
SELECT perpca_covariance(s) FROM lit;
-- text and binary round trips give the same bytes
SELECT s::text::perpca_stats::text = s::text AS text_round_trip,
       perpca_stats_send(s::text::perpca_stats) = perpca_stats_send(s) AS send_round_trip FROM lit;
\copy lit TO 'results/sketch_lit.bin' WITH (FORMAT binary)
CREATE TABLE lit_copy(s perpca_stats);
\copy lit_copy FROM 'results/sketch_lit.bin' WITH (FORMAT binary)
SELECT perpca_stats_send(c.s) = perpca_stats_send(l.s) AS binary_round_trip FROM lit l, lit_copy c;
SELECT encode(perpca_stats_send(s), 'hex') FROM lit;
-- an empty sketch, and one with rows skipped
SELECT 'v3 n=0 d=3 skipped=4 ell=5 rows=0 delta=0 trace=0 mean={0,0,0} mean_lo={0,0,0} sketch={}'::perpca_stats;
SELECT perpca_skipped('v3 n=0 d=3 skipped=4 ell=5 rows=0 delta=0 trace=0 mean={0,0,0} mean_lo={0,0,0} sketch={}'::perpca_stats);
SELECT perpca_mean('v3 n=0 d=3 skipped=0 ell=5 rows=0 delta=0 trace=0 mean={0,0,0} mean_lo={0,0,0} sketch={}'::perpca_stats) IS NULL AS no_mean;
-- a shrunk sketch: delta > 0, one row of B (ell = 1) with trace >= |B|^2 + ell delta
SELECT perpca_covariance('v3 n=4 d=2 skipped=0 ell=1 rows=1 delta=1 trace=6 mean={0,0} mean_lo={0,0} sketch={2,0}'::perpca_stats);

-- ---------------------------------------------------------------------------
-- Bad values: a clear error each, nothing stored.
-- ---------------------------------------------------------------------------
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=0 rows=0 delta=0 trace=0 mean={1,2} mean_lo={0,0} sketch={}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=5000 rows=0 delta=0 trace=0 mean={1,2} mean_lo={0,0} sketch={}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=1 rows=2 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0,0,1}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=-1 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=0 trace=0.5 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=1 trace=1.5 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=2 d=2 skipped=0 ell=3 rows=3 delta=0 trace=3 mean={1,2} mean_lo={0,0} sketch={1,0,1,0,1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=1 d=2 skipped=0 ell=3 rows=0 delta=0 trace=1 mean={1,2} mean_lo={0,0} sketch={}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0,1}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,NaN}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=-1 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} m2={1,0,1}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=16001 skipped=0 ell=2 rows=0 delta=0 trace=0 mean={1} mean_lo={0} sketch={}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v5 n=3 d=2 mean={1,2} mean_lo={0,0} m2={1,0,1}'::perpca_stats$$);

-- ---------------------------------------------------------------------------
-- Dimensions: a sketch may have d up to 16,000; exact values keep 4,096.
-- ---------------------------------------------------------------------------
SELECT perpca_dim(format('v3 n=2 d=5000 skipped=0 ell=4 rows=1 delta=0 trace=1 mean={%s} mean_lo={%s} sketch={%s}',
       array_to_string(array_fill(0, ARRAY[5000]), ','), array_to_string(array_fill(0, ARRAY[5000]), ','),
       '1,' || array_to_string(array_fill(0, ARRAY[4999]), ','))::perpca_stats) AS wide_sketch_d;
SELECT pg_temp.err(format($$SELECT perpca_covariance('v3 n=2 d=5000 skipped=0 ell=4 rows=1 delta=0 trace=1 mean={%s} mean_lo={%s} sketch={%s}'::perpca_stats)$$,
       array_to_string(array_fill(0, ARRAY[5000]), ','), array_to_string(array_fill(0, ARRAY[5000]), ','),
       '1,' || array_to_string(array_fill(0, ARRAY[4999]), ',')));
SELECT pg_temp.err(format($$SELECT 'v1 n=0 d=5000 mean={%s} mean_lo={%s} m2={}'::perpca_stats$$,
       array_to_string(array_fill(0, ARRAY[5000]), ','), array_to_string(array_fill(0, ARRAY[5000]), ',')));
-- a sketch cannot be scaled (its columns' variances are not kept)
SELECT pg_temp.err($$SELECT perpca_scale_factors(s) FROM lit$$);

-- ---------------------------------------------------------------------------
-- The aggregate against the numpy reference of Frequent Directions
-- (test/fixtures/gen_sketch.py): 4 groups of d = 12 rows far from the origin,
-- 300 rows at ell = 4, 120 at ell = 3, 5 rows at ell = 6 (exact), 1 row.
-- ---------------------------------------------------------------------------
-- relerr(a, b): max |a - b| / max |b| over two arrays of as many values.
CREATE FUNCTION pg_temp.relerr(a float8[], b float8[]) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(abs(x - y)) / greatest(max(abs(y)), 1e-300) FROM unnest(a, b) AS u(x, y)
$$;
-- a sketch's delta and trace, from its text form
CREATE FUNCTION pg_temp.delta(s perpca_stats) RETURNS float8 LANGUAGE sql AS $$
    SELECT substring(s::text from ' delta=([^ ]+) ')::float8 $$;
CREATE FUNCTION pg_temp.trace(s perpca_stats) RETURNS float8 LANGUAGE sql AS $$
    SELECT substring(s::text from ' trace=([^ ]+) ')::float8 $$;
-- u^T C u for the d x d array C and the k-th of the unit vectors in probes
CREATE FUNCTION pg_temp.quad(c float8[], probes float8[], k int, d int) RETURNS float8 LANGUAGE sql AS $$
    SELECT sum(probes[(k - 1) * d + i] * c[i][j] * probes[(k - 1) * d + j])
    FROM generate_series(1, d) i, generate_series(1, d) j $$;
-- guarantee(s, e): 0 <= u^T (M2 - B'B) u <= delta for every probe u (eigenvectors
-- of the exact M2 and random directions; rounding 1e-9 trace), delta below the
-- bounds ||A - A_k||^2 / (s + 1 - k), s = ceil(ell / 8) rows shrunk per shrink
-- (alpha-FD, alpha = 1/8; tighter than the paper's / (alpha ell - k)), k = 0 .. min(2, s);
-- group 5 (ell = 9, s = 2) tells alpha = 1/8 from 1/4 (s = 3) by its delta;
-- n, mean and trace exact.
CREATE TABLE sk_exp(grp int, n bigint, ell int, mean float8[], trace float8, delta float8,
                    bbn float8[], bounds float8[], probes float8[], quad float8[]);
\copy sk_exp FROM 'test/data/sketch_expected.csv' CSV HEADER
CREATE FUNCTION pg_temp.guarantee(s perpca_stats, e sk_exp) RETURNS text LANGUAGE sql AS $$
    SELECT CASE
        WHEN perpca_count(s) <> e.n THEN 'n'
        WHEN pg_temp.relerr(perpca_mean(s), e.mean) > 1e-14 THEN 'mean'
        WHEN abs(pg_temp.trace(s) - e.trace) > 1e-12 * e.trace THEN 'trace'
        WHEN e.n > 1 AND EXISTS (
            SELECT FROM generate_series(1, array_length(e.quad, 1)) k
            WHERE e.quad[k] - e.n * pg_temp.quad(perpca_covariance(s), e.probes, k, 12)
                  NOT BETWEEN -1e-9 * e.trace AND pg_temp.delta(s) + 1e-9 * e.trace) THEN 'psd bound'
        WHEN EXISTS (SELECT FROM unnest(e.bounds) b WHERE pg_temp.delta(s) > b * (1 + 1e-12) AND e.n > e.ell) THEN 'delta bound'
        ELSE 'ok' END $$;

CREATE TABLE sk_rows(grp int, id int, x float8[]);
\copy sk_rows FROM 'test/data/sketch_rows.csv' CSV HEADER
-- NULL rows are ignored
INSERT INTO sk_rows VALUES (1, 0, NULL), (4, 0, NULL);
ANALYZE sk_rows;

-- serial, rows in id order: the reference's delta and B'B (up to rounding)
CREATE TABLE sk_serial AS
SELECT r.grp, perpca_sketch(r.x, e.ell ORDER BY r.id) AS s
FROM sk_rows r JOIN sk_exp e USING (grp) GROUP BY r.grp;
SELECT e.grp, perpca_stats_form(s), perpca_dim(s), pg_temp.guarantee(s, e),
       pg_temp.delta(s) = 0 AS exact,
       abs(pg_temp.delta(s) - e.delta) <= 1e-8 * e.delta AS delta_as_reference,
       CASE WHEN e.n > 1 THEN pg_temp.relerr(perpca_covariance(s), e.bbn) < 1e-8 END AS bb_as_reference,
       substring(s::text from ' ell=[0-9]+ rows=[0-9]+') AS shape
FROM sk_serial JOIN sk_exp e USING (grp) ORDER BY grp;
-- a group of at most ell + 1 rows is exact: its covariance is the exact one
SELECT pg_temp.relerr(perpca_covariance(s), (SELECT perpca_covariance(perpca_stats(x)) FROM sk_rows WHERE grp = 3)) < 1e-12 AS small_group_exact
FROM sk_serial WHERE grp = 3;
-- text and binary round trips of the aggregate's values
SELECT grp, s::text::perpca_stats::text = s::text AS text_round_trip,
       perpca_stats_send(s::text::perpca_stats) = perpca_stats_send(s) AS send_round_trip
FROM sk_serial ORDER BY grp;
\copy sk_serial TO 'results/sketch_serial.bin' WITH (FORMAT binary)
CREATE TABLE sk_copy (LIKE sk_serial);
\copy sk_copy FROM 'results/sketch_serial.bin' WITH (FORMAT binary)
SELECT count(*) AS binary_copies_equal FROM sk_copy c JOIN sk_serial s USING (grp)
WHERE perpca_stats_send(c.s) = perpca_stats_send(s.s);

-- the 'skip' form: NULL elements and NaN rows left out and counted
SELECT perpca_count(s), perpca_skipped(s), pg_temp.relerr(perpca_mean(s), (SELECT mean FROM sk_exp WHERE grp = 2)) < 1e-14 AS mean_ok
FROM (SELECT perpca_sketch(x, 3, 'skip' ORDER BY id) AS s FROM (
        SELECT id, x FROM sk_rows WHERE grp = 2
        UNION ALL SELECT 1000, '{1,NULL,3,4,5,6,7,8,9,10,11,12}'
        UNION ALL SELECT 1001, '{1,NaN,3,4,5,6,7,8,9,10,11,12}'
        UNION ALL SELECT 1002, '{1,2,3,4,5,6,7,8,9,10,11,Infinity}') q) v;
SELECT perpca_sketch(x, 3, 'skip') AS all_skipped
FROM (VALUES ('{1,NULL,3}'::float8[]), ('{NaN,1,2}')) v(x);

-- ---------------------------------------------------------------------------
-- Other plans: FD depends on the order of rows, so the bits may differ; the
-- guarantee holds in each.
-- ---------------------------------------------------------------------------
\i test/include/agg_plan.sql
-- parallel: two workers read the table, the leader merges their sketches
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET enable_sort = off;
SELECT node ->> 'Partial Mode' AS parallel_mode
FROM agg_plan($$SELECT grp, perpca_sketch(x, 4) FROM sk_rows GROUP BY grp$$);
CREATE TABLE sk_parallel AS
SELECT r.grp, perpca_sketch(r.x, 4) AS s FROM sk_rows r GROUP BY r.grp;
RESET ALL;
SET extra_float_digits = 0;
SELECT grp, pg_temp.guarantee(s, e) FROM sk_parallel JOIN sk_exp e USING (grp) WHERE e.ell = 4 ORDER BY grp;
-- partition-wise aggregation over partitions by id: partial sketches combined
CREATE TABLE sk_part (grp int, id int, x float8[]) PARTITION BY RANGE (id);
CREATE TABLE sk_part1 PARTITION OF sk_part FOR VALUES FROM (MINVALUE) TO (100);
CREATE TABLE sk_part2 PARTITION OF sk_part FOR VALUES FROM (100) TO (200);
CREATE TABLE sk_part3 PARTITION OF sk_part FOR VALUES FROM (200) TO (MAXVALUE);
INSERT INTO sk_part SELECT * FROM sk_rows;
ANALYZE sk_part;
SET enable_partitionwise_aggregate = on;
SET max_parallel_workers_per_gather = 0;
SELECT node ->> 'Partial Mode' AS partitionwise_mode
FROM agg_plan($$SELECT grp, perpca_sketch(x, 4) FROM sk_part GROUP BY grp$$);
CREATE TABLE sk_pw AS SELECT grp, perpca_sketch(x, 4) AS s FROM sk_part GROUP BY grp;
RESET ALL;
SET extra_float_digits = 0;
SELECT grp, pg_temp.guarantee(s, e) FROM sk_pw JOIN sk_exp e USING (grp) WHERE e.ell = 4 ORDER BY grp;

-- perpca_merge of partial sketches (40 parts of group 1, merged in both orders)
CREATE TABLE sk_parts AS
SELECT grp, id % 40 AS part, perpca_sketch(x, 4 ORDER BY id) AS s FROM sk_rows WHERE grp IN (1, 4) GROUP BY grp, id % 40;
SELECT grp, pg_temp.guarantee(perpca_merge(s ORDER BY part), e) AS merged,
       pg_temp.guarantee(perpca_merge(s ORDER BY part DESC), e) AS merged_reversed,
       min(perpca_stats_form(s)) AS parts_form
FROM sk_parts JOIN sk_exp e USING (grp) WHERE e.ell = 4 GROUP BY grp, e.* ORDER BY grp;
-- a sketch merged with exact statistics: thin rows enter as rows, a dense
-- value as its top eigenpairs (FD-shrunk); the result is a sketch
SELECT grp, perpca_stats_form(m), pg_temp.guarantee(m, e)
FROM (SELECT grp, perpca_merge(s ORDER BY k) AS m FROM (
        SELECT grp, 1 AS k, perpca_sketch(x, 4 ORDER BY id) AS s FROM sk_rows WHERE id <= 100 GROUP BY grp
        UNION ALL SELECT grp, 2, perpca_stats(x) FROM sk_rows WHERE id > 100 AND id <= 104 GROUP BY grp
        UNION ALL SELECT grp, 3, perpca_stats(x) FROM sk_rows WHERE id > 104 GROUP BY grp) q
      GROUP BY grp) m JOIN sk_exp e USING (grp) WHERE e.ell = 4 ORDER BY grp;
SELECT perpca_stats_form(perpca_merge(s)) FROM (VALUES ((SELECT perpca_stats(x) FROM sk_rows WHERE grp = 1)), ((SELECT s FROM sk_serial WHERE grp = 1))) v(s);
-- perpca_merge of sketches in a parallel plan (its states serialized as sketches)
ANALYZE sk_parts;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET enable_sort = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT node ->> 'Partial Mode' AS merge_parallel_mode
FROM agg_plan($$SELECT grp, perpca_merge(s) FROM sk_parts GROUP BY grp$$);
CREATE TABLE sk_merged_parallel AS SELECT grp, perpca_merge(s) AS s FROM sk_parts GROUP BY grp;
RESET ALL;
SET extra_float_digits = 0;
SELECT grp, pg_temp.guarantee(s, e) FROM sk_merged_parallel JOIN sk_exp e USING (grp) WHERE grp = 1;
-- a sketch of as many rows of B as rows (typed) merged with thin values: the
-- result still has at most n rows of B, and reads back (how many of the 4
-- are kept depends on the BLAS's rounding: B'B has rank 3 here)
SELECT m::text::perpca_stats::text = m::text AS merged_reads_back, perpca_count(m),
       substring(m::text from ' ell=[0-9]+') AS ell,
       substring(m::text from ' rows=([0-9]+)')::int BETWEEN 3 AND perpca_count(m) AS rows_3_to_n
FROM (SELECT perpca_merge(s ORDER BY k) AS m FROM (VALUES
        (1, 'v3 n=2 d=3 skipped=0 ell=5 rows=2 delta=0 trace=2 mean={0,0,0} mean_lo={0,0,0} sketch={1,0,0,0,0,0}'::perpca_stats),
        (2, (SELECT perpca_stats(x) FROM (VALUES ('{1,2,3}'::float8[]), ('{2,1,0}')) v(x)))) q(k, s)) r;
-- the smallest ell wins
SELECT substring(perpca_merge(s)::text from ' ell=[0-9]+') AS merged_ell
FROM (SELECT perpca_sketch(x, 3) AS s FROM sk_rows WHERE grp = 1 AND id <= 50
      UNION ALL SELECT perpca_sketch(x, 5) FROM sk_rows WHERE grp = 1 AND id > 50) q;

-- ---------------------------------------------------------------------------
-- Bad input: a clear error, nothing lost.
-- ---------------------------------------------------------------------------
SELECT pg_temp.err($$SELECT perpca_sketch(x, 0) FROM sk_rows$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, -3) FROM sk_rows$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 13) FROM sk_rows$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 5000) FROM sk_rows$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, NULL) FROM sk_rows$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, CASE WHEN id < 3 THEN 2 ELSE 3 END) FROM sk_rows$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 2) FROM (VALUES ('{1,2,3}'::float8[]), ('{1,2}')) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 2) FROM (VALUES ('{1,2,3}'::float8[]), ('{1,NaN,3}')) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 2) FROM (VALUES ('{1,2,3}'::float8[]), ('{1,NULL,3}')) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 2, 'observed') FROM (VALUES ('{1,2,3}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 2, 'maybe') FROM (VALUES ('{1,2,3}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 2) FROM (VALUES ('{{1,2},{3,4}}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_sketch(x, 2) FROM (VALUES ('{1e300,2,3}'::float8[]), ('{-1e300,2,3}'), ('{1e300,2,3}')) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_merge(s) FROM (VALUES ((SELECT s FROM sk_serial WHERE grp = 1)), ('v3 n=0 d=3 skipped=0 ell=2 rows=0 delta=0 trace=0 mean={0,0,0} mean_lo={0,0,0} sketch={}')) v(s)$$);
-- no rows, NULL rows only: NULL
SELECT perpca_sketch(x, 2) IS NULL AS no_rows FROM sk_rows WHERE false;
SELECT perpca_sketch(x, 2) IS NULL AS null_rows FROM (VALUES (NULL::float8[])) v(x);
-- one row: no variance, exact
SELECT perpca_sketch(x, 2) FROM (VALUES ('{1,2,3}'::float8[])) v(x);
-- a sketch up to d = 16000; exact statistics stop at 4096
SELECT perpca_dim(s), perpca_count(s), substring(s::text from ' ell=[0-9]+ rows=[0-9]+') AS shape
FROM (SELECT perpca_sketch(ARRAY(SELECT sin(i * j) FROM generate_series(1, 16000) j), 2) AS s
      FROM generate_series(1, 6) i) q;
SELECT pg_temp.err($$SELECT perpca_sketch(array_fill(1::float8, ARRAY[16001]), 2)$$);
SELECT pg_temp.err($$SELECT perpca_stats(array_fill(1::float8, ARRAY[5000]))$$);

-- the test's objects (agg_plan is shared with the other statistics tests)
DROP FUNCTION agg_plan(text);
DROP FUNCTION pg_temp.guarantee(perpca_stats, sk_exp);
DROP TABLE lit, lit_copy, sk_exp, sk_rows, sk_serial, sk_copy, sk_parallel, sk_part, sk_pw, sk_parts, sk_merged_parallel;
