--
-- Rows with missing values: perpca_stats(x, 'skip') leaves out the rows with
-- a NULL, NaN or infinite element and counts them; the statistics equal
-- those of the complete rows (numpy: test/fixtures/gen_missing.py) and the
-- count survives merges, parallel and partition-wise plans, Citus's
-- aggregate, the text and binary forms.  perpca_stats(x) names the element.
-- Values stored by 0.2.0 (text and binary) read as "nothing skipped".
--
CREATE SCHEMA perpca_missing_stats;
SET search_path = perpca_missing_stats, public;
SET extra_float_digits = 0;
SET jit = off;
\i test/include/compare.sql

CREATE FUNCTION err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    hint text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' / ' || nullif(hint, ''), '');
END $$;

-- complete(x): a row without NULL, NaN or infinite element
CREATE FUNCTION complete(x float8[]) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT x IS NOT NULL AND NOT EXISTS (SELECT FROM unnest(x) v WHERE v IS NULL OR v IN ('NaN', 'Infinity', '-Infinity'))
$$;
-- body(s): the text form without the skipped count (every bit of the statistics)
CREATE FUNCTION body(s perpca_stats) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT regexp_replace(s::text, '^v2 (n=[0-9]+ d=[0-9]+) skipped=[0-9]+ ', 'v1 \1 ')
$$;

CREATE TABLE rows (grp int, id int, x float8[]);
\copy rows from 'test/data/missing_rows.csv' csv header
CREATE TABLE expected (grp int, n bigint, skipped bigint, mean float8[], covariance float8[]);
\copy expected from 'test/data/missing_stats_expected.csv' csv header
-- NULL rows are ignored, not counted
INSERT INTO rows VALUES (1, 1001, NULL), (3, 1002, NULL);
SELECT grp, count(*) AS rows, count(*) FILTER (WHERE x IS NOT NULL AND NOT complete(x)) AS incomplete,
       count(*) FILTER (WHERE x IS NULL) AS null_rows
  FROM rows GROUP BY grp ORDER BY grp;

-- Against numpy: counts, mean and covariance of the complete rows.
CREATE TABLE skip_g AS SELECT grp, perpca_stats(x, 'skip') AS s FROM rows GROUP BY grp;
SELECT e.grp, perpca_count(s) = e.n AS n, perpca_skipped(s) = e.skipped AS skipped,
       perpca_count(s), perpca_skipped(s), perpca_stats_form(s) AS form,
       coalesce(arrays_close(perpca_mean(s), e.mean, 1e-13, 1e-300), perpca_mean(s) IS NULL AND e.mean IS NULL) AS mean,
       coalesce(arrays_close(perpca_covariance(s), e.covariance, 1e-10, 1e-300),
                perpca_covariance(s) IS NULL AND e.covariance IS NULL) AS covariance
  FROM skip_g JOIN expected e USING (grp) ORDER BY grp;

-- The same bits as perpca_stats over the complete rows (same rows, same order).
SELECT grp, body(a) = b::text AS same_bits, perpca_stats_form(a) AS form
  FROM (SELECT grp, perpca_stats(x, 'skip') AS a, perpca_stats(x) FILTER (WHERE complete(x)) AS b
          FROM (SELECT * FROM rows ORDER BY id) o GROUP BY grp) q
 WHERE grp <> 4 ORDER BY grp;

-- 'error' is the one-argument form; on complete rows 'skip' changes nothing.
SELECT perpca_stats(x, 'error')::text = perpca_stats(x)::text AS error_is_default,
       perpca_stats(x, 'skip')::text = perpca_stats(x)::text AS skip_on_complete,
       perpca_skipped(perpca_stats(x, 'skip')) AS skipped
  FROM (SELECT x FROM rows WHERE complete(x) ORDER BY id) q;

-- Text form: version 2 carries the count and round-trips; nothing skipped is version 1.
SELECT s::text AS all_missing, perpca_mean(s) IS NULL AS no_mean, perpca_covariance(s) IS NULL AS no_cov
  FROM skip_g WHERE grp = 4;
SELECT bool_and(s::text::perpca_stats::text = s::text) AS round_trip,
       bool_and(perpca_skipped(s::text::perpca_stats) = perpca_skipped(s)) AS count_kept,
       bool_and(s::text LIKE 'v2 n=% d=6 skipped=%') AS version_2
  FROM skip_g;
SELECT perpca_stats(x, 'skip')::text LIKE 'v1 %' AS version_1_when_nothing_skipped
  FROM rows WHERE complete(x);
SELECT 'v2 n=1 d=1 skipped=0 mean={1} mean_lo={0} m2={0}'::perpca_stats AS zero_count_is_version_1;

-- Binary form: version 2 carries the count (COPY BINARY out and in).
CREATE TABLE bin (grp int, s perpca_stats);
-- (a file in the throwaway cluster's data directory)
DO $$
DECLARE
    f text := current_setting('data_directory') || '/perpca_missing_stats.bin';
BEGIN
    EXECUTE format('COPY perpca_missing_stats.skip_g TO %L WITH (FORMAT binary)', f);
    EXECUTE format('COPY perpca_missing_stats.bin FROM %L WITH (FORMAT binary)', f);
END $$;
SELECT count(*) AS values, bool_and(b.s::text = g.s::text) AS identical
  FROM bin b JOIN skip_g g USING (grp);
SELECT substr(perpca_stats_send(s), 1, 1) AS version_byte, perpca_skipped(s)
  FROM skip_g WHERE grp = 4;

-- Merges add the counts: perpca_merge of per-id values, in any grouping.
SELECT grp, perpca_skipped(perpca_merge(s)) AS merged, e.skipped
  FROM (SELECT grp, id % 5 AS k, perpca_stats(x, 'skip') AS s FROM rows GROUP BY 1, 2) q
  JOIN expected e USING (grp) GROUP BY grp, e.skipped ORDER BY grp;
SELECT perpca_skipped(perpca_merge(s)) AS total, (SELECT sum(skipped) FROM expected) AS expected
  FROM skip_g;
SELECT stats_close(perpca_merge(s), (SELECT perpca_stats(x, 'skip') FROM rows WHERE grp = 3), 1e-12) AS merged_stats
  FROM (SELECT perpca_stats(x, 'skip') AS s FROM rows WHERE grp = 3 GROUP BY id % 7) q;

-- perpca_stats_distributed(x, 'skip') (Citus's form) gives the same value.
SELECT grp, perpca_stats_distributed(x, 'skip')::text = perpca_stats(x, 'skip')::text AS same
  FROM (SELECT * FROM rows ORDER BY id) o GROUP BY grp ORDER BY grp;
SELECT perpca_skipped(perpca_merge_distributed(s)) AS merged_distributed FROM skip_g;

-- ---------------------------------------------------------------------------
-- The one-argument form: the element, its position and d, and a hint.
-- ---------------------------------------------------------------------------
SELECT DISTINCT regexp_replace(err(format('SELECT perpca_stats(%L::float8[])', x::text)),
                               'element [0-9]+ of 6 is [-A-Za-z]+', 'element J of 6 is BAD') AS message
  FROM rows WHERE grp = 4;
SELECT x::text AS row, err(format('SELECT perpca_stats(%L::float8[])', x::text)) AS message
  FROM rows WHERE grp = 4 AND id % 5 = 0 ORDER BY id;
-- every bad token in every position is caught, and each row is skipped
SELECT count(*) AS rows, count(*) FILTER (WHERE err(format('SELECT perpca_stats(%L::float8[])', x::text))
                                               LIKE '22%element%of 6 is%') AS errors,
       (SELECT perpca_skipped(perpca_stats(x, 'skip')) FROM rows WHERE grp = 4) AS skipped
  FROM rows WHERE grp = 4;
SELECT err($$SELECT perpca_stats(x, 'nope') FROM rows$$) AS bad_option,
       err($$SELECT perpca_stats(x, NULL) FROM rows$$) AS null_option,
       err($$SELECT perpca_stats(x, 'skip') FROM (VALUES ('{1,NULL}'::float8[]), ('{1,2,3}')) v(x)$$) AS dimension;
-- all rows missing, or none at all
SELECT perpca_stats(x, 'skip') IS NULL AS no_rows_is_null FROM rows WHERE false;
SELECT perpca_stats(x, 'skip') IS NULL AS null_rows_only_is_null FROM (VALUES (NULL::float8[])) v(x);

-- Finite values that are large: accepted while the sums
-- fit, an out-of-range error (not "NaN or infinite") when they do not.
SELECT perpca_stats(x) FROM (VALUES (ARRAY[1e308, -1e308]::float8[]), (ARRAY[1e308, -1e308])) v(x);
SELECT err($$SELECT perpca_stats(x) FROM (VALUES (ARRAY[1e308]::float8[]), (ARRAY[-1e308])) v(x)$$) AS overflow;
SELECT err($$SELECT perpca_stats(x) FROM (VALUES (ARRAY[1e200, 0]::float8[]), (ARRAY[-1e200, 0]), (ARRAY[0, 1])) v(x)$$) AS squares;

-- ---------------------------------------------------------------------------
-- Plans: parallel (Partial / Finalize: serialized states), partition-wise,
-- and rows waiting in TOAST, carry the count exactly.
-- ---------------------------------------------------------------------------
\i test/include/agg_plan.sql
CREATE TABLE big (id int, g int, x float8[]);
INSERT INTO big
SELECT i, i % 8,
       CASE WHEN i % 101 = 0 THEN NULL
            WHEN i % 13 = 0 THEN ARRAY[i, 'NaN', 1, 2, 3, 4]::float8[]
            WHEN i % 17 = 0 THEN ARRAY[i, 1, 2, 3, 4, NULL]::float8[]
            WHEN i % 19 = 0 THEN ARRAY['-Infinity', 1, 2, 3, 4, i]::float8[]
            ELSE ARRAY(SELECT 100 + (j + 1) * sin(i * 0.61 * (j + 1)) FROM generate_series(0, 5) j) END
  FROM generate_series(1, 30000) i;
ANALYZE big;
CREATE TABLE big_expected AS
SELECT g, count(*) FILTER (WHERE x IS NOT NULL AND NOT complete(x)) AS skipped,
       count(*) FILTER (WHERE complete(x)) AS n
  FROM big GROUP BY g;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE big_serial AS SELECT g, perpca_stats(x, 'skip') AS s FROM big GROUP BY g;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SELECT node ->> 'Partial Mode' AS mode, plan::text LIKE '%Partial%' AS has_partial,
       plan::text LIKE '%Gather%' AS gathered
  FROM agg_plan($$SELECT g, perpca_stats(x, 'skip') FROM big GROUP BY g$$);
SELECT count(*) AS groups, bool_and(perpca_skipped(p.s) = e.skipped) AS skipped_exact,
       bool_and(perpca_count(p.s) = e.n) AS n_exact, bool_and(stats_close(p.s, b.s, 1e-12)) AS stats
  FROM (SELECT g, perpca_stats(x, 'skip') AS s FROM big GROUP BY g) p
  JOIN big_expected e USING (g) JOIN big_serial b USING (g);
SELECT perpca_skipped(perpca_stats(x, 'skip')) = (SELECT sum(skipped) FROM big_expected) AS whole_table
  FROM big;
SELECT perpca_skipped(perpca_merge(s)) = (SELECT sum(skipped) FROM big_expected) AS parallel_merge
  FROM (SELECT g, id % 50 AS k, perpca_stats(x, 'skip') AS s FROM big GROUP BY 1, 2) q;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;

-- Partition-wise: complete per partition (by g) and partial + Finalize (by id % 8).
SET max_parallel_workers_per_gather = 0;
SET enable_partitionwise_aggregate = on;
CREATE TABLE bigp (id int, g int, x float8[]) PARTITION BY LIST (g);
CREATE TABLE bigp_a PARTITION OF bigp FOR VALUES IN (0, 1, 2, 3);
CREATE TABLE bigp_b PARTITION OF bigp FOR VALUES IN (4, 5, 6, 7);
INSERT INTO bigp SELECT * FROM big ORDER BY id;
ANALYZE bigp;
SELECT plan::text LIKE '%Append%' AS below_append, node ->> 'Partial Mode' AS top_mode
  FROM agg_plan($$SELECT id % 8, perpca_stats(x, 'skip') FROM bigp GROUP BY 1$$);
SELECT count(*) AS groups, bool_and(perpca_skipped(p.s) = e.skipped) AS skipped_exact,
       bool_and(perpca_count(p.s) = e.n) AS n_exact
  FROM (SELECT g, perpca_stats(x, 'skip') AS s FROM bigp GROUP BY g) p JOIN big_expected e USING (g);
SELECT sum(perpca_skipped(s)) = (SELECT sum(skipped) FROM big_expected) AS partial_partitionwise
  FROM (SELECT id % 8 AS k, perpca_stats(x, 'skip') AS s FROM bigp GROUP BY 1) q;
RESET enable_partitionwise_aggregate;
RESET max_parallel_workers_per_gather;

-- d = 300 rows in TOAST: a thin group keeps them there until its final
-- function, which checks them when it fetches them.
CREATE TABLE toast (id int, g int, x float8[]);
ALTER TABLE toast ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO toast
SELECT i, i % 3, ARRAY(SELECT sin(i * 0.37 + j * 1.1) * 10 FROM generate_series(1, 299) j)
                 || CASE WHEN i % 4 = 0 THEN 'NaN'::float8 WHEN i % 9 = 0 THEN 'Infinity' ELSE i END
  FROM generate_series(1, 120) i;
SELECT g, perpca_stats_form(s) AS form, perpca_count(s) AS n, perpca_skipped(s) AS skipped,
       perpca_count(s) + perpca_skipped(s) AS total
  FROM (SELECT g, perpca_stats(x, 'skip') AS s FROM toast GROUP BY g) q ORDER BY g;
SELECT err($$SELECT perpca_stats(x) FROM toast WHERE g = 0$$) AS toast_error;
-- the thin value of the complete TOAST rows, bit for bit
SELECT g, body(perpca_stats(x, 'skip')) = perpca_stats(x) FILTER (WHERE complete(x))::text AS same_as_complete
  FROM (SELECT * FROM toast WHERE id < 60 ORDER BY id) o GROUP BY g ORDER BY g;

-- ---------------------------------------------------------------------------
-- Values stored by perpca 0.2.0 (text and binary COPY, written by 0.2.0's
-- build): they read, mean "nothing skipped" and are written back unchanged.
-- ---------------------------------------------------------------------------
CREATE TABLE v020_text (id int, s perpca_stats);
\copy v020_text from 'test/data/missing_v020.csv' csv header
CREATE TABLE v020_bin (id int, s perpca_stats);
\copy v020_bin from 'test/data/missing_v020.bin' with (format binary)
SELECT t.id, perpca_stats_form(t.s) AS form, perpca_count(t.s) AS n, perpca_skipped(t.s) AS skipped,
       perpca_skipped(b.s) AS skipped_bin, t.s::text = b.s::text AS same,
       t.s::text LIKE 'v1 %' AS still_v1, substr(perpca_stats_send(b.s), 1, 1) AS version_byte
  FROM v020_text t JOIN v020_bin b USING (id) ORDER BY id;
-- merged with a value that skipped rows: the counts add
SELECT perpca_count(perpca_merge(s)) AS n, perpca_skipped(perpca_merge(s)) AS skipped
  FROM (SELECT s FROM v020_text WHERE id <> 3
        UNION ALL SELECT perpca_stats(x, 'skip') FROM (VALUES (ARRAY[1, 2, 3, NULL]::float8[]),
                                                              (ARRAY[1, 2, 3, 4]::float8[])) v(x)) q;
-- malformed version 2 values
SELECT err($$SELECT 'v2 n=1 d=1 skipped=-1 mean={1} mean_lo={0} m2={0}'::perpca_stats$$) AS negative,
       err($$SELECT 'v2 n=1 d=1 mean={1} mean_lo={0} m2={0}'::perpca_stats$$) AS no_count;

RESET ALL;
DROP SCHEMA perpca_missing_stats CASCADE;
