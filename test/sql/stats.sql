-- perpca_stats: type input/output, the aggregates, accessors and every bad input.
SET extra_float_digits = 0;

-- err(q): run q and show its SQLSTATE and message instead of failing.
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

-- relerr(a, b): max |a - b| / max |b| over two arrays of the same shape.
CREATE FUNCTION pg_temp.relerr(a float8[], b float8[]) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(abs(x - y)) / greatest(max(abs(y)), 1e-300)
    FROM unnest(a, b) AS u(x, y)
$$;

-- ---------------------------------------------------------------------------
-- A small case worked by hand: rows (1,2), (3,5.5), (0,1).
-- mean = (4/3, 17/6); M2 = [[42/9, 7.1666..], [.., 11.1666..]]; covariance = M2/3.
-- ---------------------------------------------------------------------------
CREATE TABLE small(x float8[]);
INSERT INTO small VALUES ('{1,2}'), ('{3,5.5}'), (NULL), ('{0,1}');
SELECT perpca_stats(x) FROM small;
SELECT perpca_count(s), perpca_dim(s), perpca_mean(s),
       perpca_covariance(s), perpca_covariance(s, centered => false)
FROM (SELECT perpca_stats(x) AS s FROM small) q;
-- hand-computed values, to 1e-15
SELECT pg_temp.relerr(perpca_mean(s), ARRAY[4.0/3, 17.0/6]) < 1e-15 AS mean_ok,
       pg_temp.relerr(perpca_covariance(s), ARRAY[[14.0/9, 43.0/18], [43.0/18, 67.0/18]]) < 1e-15 AS cov_ok,
       pg_temp.relerr(perpca_covariance(s, false), ARRAY[[10.0/3, 37.0/6], [37.0/6, 47.0/4]]) < 1e-15 AS moment_ok
FROM (SELECT perpca_stats(x) AS s FROM small) q;
-- one row: zero covariance
SELECT perpca_covariance(perpca_stats(x)) FROM (VALUES ('{7,8,9}'::float8[])) v(x);

-- NULL rows only, or no rows at all: the aggregates return NULL
SELECT perpca_stats(x) IS NULL AS all_null FROM (VALUES (NULL::float8[]), (NULL)) v(x);
SELECT perpca_stats(x) IS NULL AS no_rows FROM small WHERE false;
SELECT perpca_merge(s) IS NULL AS merge_no_rows FROM (SELECT NULL::perpca_stats) v(s);

-- ---------------------------------------------------------------------------
-- Numerical stability: data offset 1e6 from the origin, unit spread, compared
-- with the oracle's two-pass float64 computation (test/fixtures/gen_stats.py).
-- The requirement is 1e-9 relative; the reference-point accumulation gives ~1e-15.
-- ---------------------------------------------------------------------------
CREATE TABLE rows_offset(grp int, x float8[]);
\copy rows_offset FROM 'test/data/stats_offset_rows.csv' CSV HEADER
CREATE TABLE expected_offset(grp int, n bigint, mean float8[], covariance float8[], moment float8[]);
\copy expected_offset FROM 'test/data/stats_offset_expected.csv' CSV HEADER
CREATE TABLE stats_offset AS
    SELECT grp, perpca_stats(x) AS s FROM rows_offset GROUP BY grp;
SELECT e.grp, perpca_count(s) = e.n AS n_ok,
       pg_temp.relerr(perpca_mean(s), e.mean) < 1e-14 AS mean_ok,
       pg_temp.relerr(perpca_covariance(s), e.covariance) < 1e-12 AS cov_ok,
       pg_temp.relerr(perpca_covariance(s, false), e.moment) < 1e-14 AS moment_ok
FROM stats_offset JOIN expected_offset e USING (grp) ORDER BY grp;

-- ---------------------------------------------------------------------------
-- Text and binary round trips are bit-exact.
-- ---------------------------------------------------------------------------
SELECT grp, s::text::perpca_stats::text = s::text AS text_roundtrip
FROM stats_offset ORDER BY grp;
SELECT bool_and(perpca_stats_send(s::text::perpca_stats) = perpca_stats_send(s)) AS send_identical
FROM stats_offset;
CREATE TABLE stats_copy(grp int, s perpca_stats);
\copy stats_offset TO 'results/stats_offset.bin' WITH (FORMAT binary)
\copy stats_copy FROM 'results/stats_offset.bin' WITH (FORMAT binary)
SELECT grp, perpca_stats_send(c.s) = perpca_stats_send(o.s) AS binary_roundtrip
FROM stats_offset o JOIN stats_copy c USING (grp) ORDER BY grp;
-- an empty group (n = 0) is a valid value
SELECT 'v1 n=0 d=2 mean={0,0} mean_lo={0,0} m2={0,0,0}'::perpca_stats;
SELECT perpca_count(s), perpca_mean(s) IS NULL AS mean_null, perpca_covariance(s) IS NULL AS cov_null
FROM (SELECT 'v1 n=0 d=2 mean={0,0} mean_lo={0,0} m2={0,0,0}'::perpca_stats AS s) q;
-- blanks between fields are allowed
SELECT perpca_count('  v1  n=2 d=1  mean={ 1.5 } mean_lo={0} m2={0.5} '::perpca_stats);

-- ---------------------------------------------------------------------------
-- perpca_merge equals aggregating all rows together.
-- ---------------------------------------------------------------------------
WITH parts AS (
    SELECT grp, ntile(3) OVER (PARTITION BY grp ORDER BY x) AS part, x FROM rows_offset
), partial AS (
    SELECT grp, part, perpca_stats(x) AS s FROM parts GROUP BY grp, part
), merged AS (
    SELECT grp, perpca_merge(s) AS s FROM partial GROUP BY grp
)
SELECT grp, perpca_count(m.s) = perpca_count(w.s) AS n_equal,
       pg_temp.relerr(perpca_mean(m.s), perpca_mean(w.s)) < 1e-15 AS mean_equal,
       pg_temp.relerr(perpca_covariance(m.s), perpca_covariance(w.s)) < 1e-12 AS cov_equal
FROM merged m JOIN stats_offset w USING (grp) ORDER BY grp;
-- merging everything at once equals one pass over all rows
SELECT pg_temp.relerr(perpca_covariance(m), perpca_covariance(w)) < 1e-12 AS total_equal,
       perpca_count(m) = 3237 AS total_n
FROM (SELECT perpca_merge(s) AS m FROM stats_offset) a,
     (SELECT perpca_stats(x) AS w FROM rows_offset) b;
-- NULLs and empty values are neutral in a merge
SELECT perpca_merge(s)::text = (SELECT perpca_stats(x)::text FROM small) AS neutral
FROM (SELECT perpca_stats(x) AS s FROM small
      UNION ALL SELECT NULL
      UNION ALL SELECT 'v1 n=0 d=2 mean={0,0} mean_lo={0,0} m2={0,0,0}') q;

-- ---------------------------------------------------------------------------
-- Thin values: a group with at most d/2 rows keeps its centred rows instead
-- of a d x d matrix.  d = 12 here: groups of 1, 3 and 6 rows are thin, 7 and
-- 40 rows dense; all agree with the oracle's two-pass float64 answers.
-- ---------------------------------------------------------------------------
CREATE TABLE rows_thin(grp int, x float8[]);
\copy rows_thin FROM 'test/data/stats_thin_rows.csv' CSV HEADER
CREATE TABLE expected_thin(grp int, n bigint, mean float8[], covariance float8[], moment float8[]);
\copy expected_thin FROM 'test/data/stats_thin_expected.csv' CSV HEADER
CREATE TABLE stats_thin AS SELECT grp, perpca_stats(x) AS s FROM rows_thin GROUP BY grp;
SELECT e.grp, perpca_count(s) AS n, perpca_stats_form(s) AS form,
       pg_temp.relerr(perpca_mean(s), e.mean) < 1e-14 AS mean_ok,
       pg_temp.relerr(perpca_covariance(s), e.covariance) < 1e-12 AS cov_ok,
       pg_temp.relerr(perpca_covariance(s, false), e.moment) < 1e-14 AS moment_ok,
       s::text::perpca_stats::text = s::text AS text_roundtrip,
       perpca_stats_send(s::text::perpca_stats) = perpca_stats_send(s) AS send_roundtrip
FROM stats_thin JOIN expected_thin e USING (grp) ORDER BY grp;
-- a one-row group: zero covariance, the row itself as mean
SELECT perpca_covariance(s) = array_fill(0::float8, ARRAY[12, 12]) AS zero_cov,
       perpca_mean(s) = (SELECT x FROM rows_thin WHERE grp = 1) AS mean_is_row
FROM stats_thin WHERE grp = 1;
-- merging thin values stays thin while the rows fit (1 + 3 rows), then turns dense
SELECT perpca_stats_form(perpca_merge(s)) AS form_1_2,
       pg_temp.relerr(perpca_covariance(perpca_merge(s)),
                      (SELECT perpca_covariance(perpca_stats(x)) FROM rows_thin WHERE grp IN (1, 2))) < 1e-12 AS cov_1_2
FROM stats_thin WHERE grp IN (1, 2);
SELECT perpca_stats_form(m) AS form_all, perpca_count(m) AS n_all,
       pg_temp.relerr(perpca_covariance(m), (SELECT perpca_covariance(perpca_stats(x)) FROM rows_thin)) < 1e-12 AS cov_all,
       pg_temp.relerr(perpca_mean(m), (SELECT perpca_mean(perpca_stats(x)) FROM rows_thin)) < 1e-15 AS mean_all
FROM (SELECT perpca_merge(s ORDER BY grp DESC) AS m FROM stats_thin) q;
-- a hand-written thin value: rows (1,0,0,0), (3,0,0,0) -> mean (2,0,0,0), rows centred
SELECT perpca_covariance('v1 n=2 d=4 mean={2,0,0,0} mean_lo={0,0,0,0} rows={-1,0,0,0,1,0,0,0}'::perpca_stats);
-- parallel partial aggregation combines thin and dense partial states exactly
-- (groups 0..399 get 3 rows each and stay thin; groups 1000..1049 get 22 rows)
CREATE TABLE rows_many AS
    SELECT CASE WHEN rn <= 1200 THEN rn % 400 ELSE 1000 + rn % 50 END AS grp, x
    FROM (SELECT row_number() OVER () AS rn, x FROM rows_thin, generate_series(1, 40)) q;
ANALYZE rows_many;
CREATE TABLE serial_many AS SELECT grp, perpca_stats(x) AS s FROM rows_many GROUP BY grp;
BEGIN;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
SET LOCAL enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT grp, perpca_stats(x) FROM rows_many GROUP BY grp;
CREATE TEMP TABLE parallel_many AS SELECT grp, perpca_stats(x) AS s FROM rows_many GROUP BY grp;
COMMIT;
SELECT count(*) AS groups, bool_and(perpca_count(p.s) = perpca_count(q.s)) AS n_equal,
       max(pg_temp.relerr(perpca_covariance(p.s), perpca_covariance(q.s))) < 1e-12 AS cov_equal,
       string_agg(DISTINCT perpca_stats_form(p.s), ',') AS forms
FROM parallel_many p JOIN serial_many q USING (grp);

-- ---------------------------------------------------------------------------
-- Progress of long scans: perpca.progress_rows (0 = off) sends a NOTICE every
-- that many rows a process aggregates (serial plan here: one process).
-- ---------------------------------------------------------------------------
SET max_parallel_workers_per_gather = 0;
SET perpca.progress_rows = 1000;
SELECT perpca_count(perpca_stats(ARRAY[i, 2 * i]::float8[])) FROM generate_series(1, 2500) i;
RESET perpca.progress_rows;
SELECT perpca_count(perpca_stats(ARRAY[i, 2 * i]::float8[])) FROM generate_series(1, 2500) i;
RESET max_parallel_workers_per_gather;
SELECT pg_temp.err($$SET perpca.progress_rows = -1$$);

-- ---------------------------------------------------------------------------
-- Bad input to the aggregate: clear errors with SQLSTATEs.
-- ---------------------------------------------------------------------------
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES ('{1,NULL}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES ('{{1,2},{3,4}}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES ('{}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES ('{1,NaN}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES ('{Infinity,1}'::float8[])) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES ('{-Infinity,1}'::float8[])) v(x)$$);
-- a bad value in the middle of many rows is caught too
SELECT pg_temp.err($$SELECT perpca_stats(ARRAY[i, CASE WHEN i = 500 THEN 'NaN'::float8 ELSE 1 END])
                     FROM generate_series(1, 1000) i$$);
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES ('{1,2,3}'::float8[]), ('{1,2}')) v(x)$$);
SELECT pg_temp.err($$SELECT perpca_stats(array_fill(1.0::float8, ARRAY[4097]))$$);
SELECT perpca_dim(perpca_stats(array_fill(1.0::float8, ARRAY[300]))) AS d300;
SELECT pg_temp.err($$SELECT perpca_merge(s) FROM (VALUES ('v1 n=1 d=1 mean={1} mean_lo={0} m2={0}'::perpca_stats),
                                                        ('v1 n=1 d=2 mean={1,2} mean_lo={0,0} m2={0,0,0}')) v(s)$$);

-- ---------------------------------------------------------------------------
-- Malformed text input: clear errors, never a crash.
-- ---------------------------------------------------------------------------
SELECT pg_temp.err($$SELECT ''::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'garbage'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v5 n=1 d=1 mean={1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=-1 d=1 mean={0} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=0 mean={} mean_lo={0} m2={}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=99999999999 mean={1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=5000 mean={1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=x d=1 mean={1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=2 mean={1} mean_lo={0} m2={0,0,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=2 mean={1,2,3} mean_lo={0,0,0} m2={0,0,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=2 mean={1,2} mean_lo={0,0} m2={0,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={NaN} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1} mean_lo={0} m2={inf}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1e999} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1e-400} mean_lo={0} m2={0}'::perpca_stats$$);
-- subnormal values are fine and round-trip
SELECT perpca_mean(s) = '{5e-324}' AS subnormal_mean, s::text::perpca_stats::text = s::text AS roundtrip
FROM (SELECT perpca_stats(ARRAY[5e-324::float8]) AS s) q;
SELECT pg_temp.err($$SELECT 'v1 n=2 d=1 mean={1} mean_lo={0} m2={-1}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=0 d=1 mean={1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1} mean_lo={0} m2={0} extra'::perpca_stats$$);
-- Only the forms perpca_stats_out writes (0.1.0 and 0.2.0 wrote the same):
-- a mean_lo beyond the rounding error of mean, hexadecimal, a plus sign,
-- leading zeros and "E" are 22P02.
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1} mean_lo={5} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={0x10} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=+2 d=1 mean={1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=02 d=1 mean={1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1E5} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={+1} mean_lo={0} m2={0}'::perpca_stats$$);
SELECT 'v1 n=2 d=2 mean={-1.5e-07,0} mean_lo={1.2e-23,0} m2={1e+100,0,0}'::perpca_stats AS canonical_forms;
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1} mean_lo={0} m2={0'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean=1 m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1} m2={0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=1 mean={1} mean_lo={NaN} m2={0}'::perpca_stats$$);
-- thin values: the row list must hold n x d values
SELECT pg_temp.err($$SELECT 'v1 n=2 d=3 mean={0,0,0} mean_lo={0,0,0} rows={1,2,3}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=1 d=3 mean={0,0,0} mean_lo={0,0,0} rows={1,2,NaN}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v1 n=999999999999 d=3 mean={0,0,0} mean_lo={0,0,0} rows={1}'::perpca_stats$$);
