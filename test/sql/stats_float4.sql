-- stats_float4: thin statistics that keep float4 rows as they came
-- (format version 4, what perpca_stats(vector) and perpca_stats(halfvec)
-- give a thin group; test/t/047_pgvector.pl checks that path on pgvector).
-- Here the values are made from their text form: the mean and mean_lo of a
-- float8[] group's thin value of the same float4 numbers, and the rows
-- themselves.  Checked: text and binary forms, that the centred rows, the
-- covariance and fits equal the float8 thin value's bit for bit, merges
-- (float4 + float4 stays float4 while thin; + float8 thin; + dense; past
-- the threshold), old values still read as they were (a committed fixture
-- written by 0.4.0), malformed values rejected with their SQLSTATEs.
CREATE SCHEMA perpca_float4;
SET search_path = perpca_float4, public;

-- 4 clients of d = 10, 4 or 5 rows each (thin: n <= 5), float4 numbers
-- (exact arithmetic: the same on every machine, as the fixture below needs)
CREATE TABLE rows4 AS
SELECT i, c, ARRAY(SELECT (c * 3 + ((i * 7 + j * 13) % 17 - 8) / 3.0 + ((i * j) % 5) / 7.0)::real
                   FROM generate_series(1, 10) AS j) AS x
FROM (SELECT i, i % 4 AS c FROM generate_series(1, 18) AS i) s;

-- The float4 thin value of rows in order: the float8 thin value's mean (the
-- same arithmetic) and the float4 rows, as version 4's text.
CREATE FUNCTION float4_value(rows real[][], skipped int DEFAULT 0) RETURNS perpca_stats
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT (regexp_replace(regexp_replace(s::text, '^v[12] n=(\d+) d=(\d+)( skipped=\d+)?', 'v4 n=\1 d=\2 skipped=' || skipped),
                         ' rows=.*$', '') || ' rows={' || replace(replace(rows::text, '{', ''), '}', '') || '}')::perpca_stats
    FROM (SELECT perpca_stats(r::float8[] ORDER BY k) AS s
            FROM (SELECT k, array_agg(rows[k][j] ORDER BY j) AS r
                    FROM generate_subscripts(rows, 1) AS k, generate_subscripts(rows, 2) AS j GROUP BY k) q) t
$$;
-- rows' braces become the one list of version 4 (row-major)
CREATE FUNCTION rows_of(cl int) RETURNS real[][] LANGUAGE sql STABLE AS $$
  SELECT array_agg(x ORDER BY i) FROM rows4 WHERE c = cl
$$;
CREATE TABLE v4 AS SELECT c, float4_value(rows_of(c)) AS s FROM generate_series(0, 3) AS c;
CREATE TABLE v1 AS SELECT c, perpca_stats(x::float8[] ORDER BY i) AS s FROM rows4 GROUP BY c;

-- the forms, counts, versions (the first byte of the binary form) and sizes
SELECT c, perpca_stats_form(s), perpca_count(s), perpca_skipped(s), perpca_dim(s),
       encode(substr(perpca_stats_send(s), 1, 2), 'hex') AS version_form
FROM v4 ORDER BY c;
SELECT v4.c, pg_column_size(v4.s) AS float4_bytes, pg_column_size(v1.s) AS float8_bytes
FROM v4 JOIN v1 USING (c) ORDER BY c;
SELECT s::text FROM v4 WHERE c = 1;

-- text round trip; the mean is the float8 value's
SELECT bool_and(s::text::perpca_stats::text = s::text) AS text_round_trip FROM v4;
SELECT bool_and(perpca_mean(v4.s)::text = perpca_mean(v1.s)::text) AS same_mean FROM v4 JOIN v1 USING (c);

-- the centred rows are the float8 thin value's bits: a copy widened (scaling
-- by ones widens it, and dividing by 1 changes no bit) is that value
SELECT bool_and(perpca_internal.scale_stats(v4.s, array_fill(1::float8, ARRAY[10]))::text = v1.s::text) AS widened_is_float8
FROM v4 JOIN v1 USING (c);
SELECT bool_and(perpca_covariance(v4.s)::text = perpca_covariance(v1.s)::text
            AND perpca_covariance(v4.s, false)::text = perpca_covariance(v1.s, false)::text) AS same_covariance
FROM v4 JOIN v1 USING (c);
SELECT bool_and((perpca_scale_factors(v4.s)).scale_factors::text = (perpca_scale_factors(v1.s)).scale_factors::text) AS same_scale
FROM v4 JOIN v1 USING (c);

-- fits on the float4 values equal fits on the float8 ones
SELECT kind, client, component, round(variance::numeric, 9) AS variance, pc::text = pc8::text AS same_pc
FROM (SELECT * FROM perpca_fit('SELECT c, s FROM perpca_float4.v4', 1, 1, seed => 3)) a
JOIN (SELECT kind, client, component, pc AS pc8 FROM perpca_fit('SELECT c, s FROM perpca_float4.v1', 1, 1, seed => 3)) b
  USING (kind, client, component)
ORDER BY kind, client, component;
SELECT kind, client, component, pc::text = pc8::text AS same_pc
FROM (SELECT * FROM perpca_fit('SELECT c, s FROM perpca_float4.v4', 1, 1, seed => 3, scale => 'standard')) a
JOIN (SELECT kind, client, component, pc AS pc8 FROM perpca_fit('SELECT c, s FROM perpca_float4.v1', 1, 1, seed => 3, scale => 'standard')) b
  USING (kind, client, component)
ORDER BY kind, client, component;

-- merges: float4 + float4 stays float4 thin (the rows in order: the value of
-- all of them) while n <= d/2 (2 + 3 rows of client 0 and 2)
SELECT perpca_stats_form(m), perpca_count(m), encode(substr(perpca_stats_send(m), 1, 1), 'hex') AS version,
       m::text = float4_value((rows_of(0))[1:2][1:10] || (rows_of(2))[1:3][1:10])::text AS same_as_all_rows
FROM (SELECT perpca_merge(s ORDER BY k) AS m FROM (
        SELECT 1 AS k, float4_value((rows_of(0))[1:2][1:10]) AS s
        UNION ALL SELECT 2, float4_value((rows_of(2))[1:3][1:10])) u) q;
-- past it: dense, the float8 rows' statistics (to rounding)
SELECT perpca_stats_form(m), perpca_count(m),
       (SELECT max(abs(a - b)) < 1e-12 FROM unnest(perpca_covariance(m), perpca_covariance(e)) AS u(a, b)) AS close
FROM (SELECT perpca_merge(s ORDER BY c) AS m FROM v4 WHERE c IN (0, 1, 2)) q,
     (SELECT perpca_stats(x::float8[] ORDER BY i) AS e FROM rows4 WHERE c IN (0, 1, 2)) r;
-- float4 + float8 thin: float8 thin (2 + 3 rows); + dense: dense
SELECT perpca_stats_form(m), perpca_count(m), encode(substr(perpca_stats_send(m), 1, 1), 'hex') AS version,
       (SELECT max(abs(a - b)) < 1e-12 FROM unnest(perpca_covariance(m), perpca_covariance(e)) AS u(a, b)) AS close
FROM (SELECT perpca_merge(s ORDER BY k) AS m
        FROM (SELECT 1 AS k, float4_value((rows_of(0))[1:2][1:10]) AS s
              UNION ALL SELECT 2, perpca_stats(x::float8[]) FROM rows4 WHERE c = 2 AND i <= 10) u) q,
     (SELECT perpca_stats(x::float8[]) AS e FROM rows4 WHERE (c = 0 AND i <= 8) OR (c = 2 AND i <= 10)) r;
SELECT perpca_stats_form(m), perpca_count(m),
       (SELECT max(abs(a - b)) < 1e-12 FROM unnest(perpca_covariance(m), perpca_covariance(e)) AS u(a, b)) AS close
FROM (SELECT perpca_merge(s ORDER BY k) AS m
        FROM (SELECT 1 AS k, s FROM v4 WHERE c = 0
              UNION ALL SELECT 2, perpca_stats(x::float8[]) FROM rows4 WHERE c <> 0) u) q,
     (SELECT perpca_stats(x::float8[]) AS e FROM rows4) r;
-- a float4 thin value merged with a sketch: the float8 thin value's sketch
-- (to rounding: the two enter the merge's state differently)
SELECT perpca_stats_form(m), perpca_count(m) = perpca_count(e) AS same_count,
       (SELECT max(abs(a - b)) < 1e-12 FROM unnest(perpca_covariance(m), perpca_covariance(e)) AS u(a, b)) AS close
FROM (SELECT perpca_merge(s ORDER BY k) AS m, perpca_merge(t ORDER BY k) AS e
        FROM (SELECT 1 AS k, v4.s, v1.s AS t FROM v4 JOIN v1 USING (c) WHERE c = 1
              UNION ALL SELECT 2, perpca_sketch(x::float8[], 3), perpca_sketch(x::float8[], 3) FROM rows4 WHERE c = 3) q) r;
-- skipped rows counted, written in the header
SELECT float4_value(rows_of(3), 2)::text ~ '^v4 n=4 d=10 skipped=2 ' AS skipped_text,
       perpca_skipped(float4_value(rows_of(3), 2)), perpca_skipped(perpca_merge(s))
FROM (SELECT float4_value(rows_of(3), 2) AS s UNION ALL SELECT s FROM v4 WHERE c = 3) q;

-- one row, and rows all equal: no variance, the mean is the row
SELECT perpca_covariance(s) = array_fill(0::float8, ARRAY[3, 3]) AS zero, perpca_mean(s)
FROM (VALUES ('v4 n=2 d=3 skipped=0 mean={1.5,-2,0.25} mean_lo={0,0,0} rows={1.5,-2,0.25,1.5,-2,0.25}'::perpca_stats)) v(s);

-- values of 0.4.0 (test/data/stats_v040.txt: perpca_stats of float8[] and
-- of vector rows, thin with and without skipped rows, dense, a sketch)
-- read as they were written: text and binary unchanged, versions 1 to 3
CREATE TABLE old (id int, what text, txt text);
\copy old from 'test/data/stats_v040.txt' csv header
SELECT id, what, perpca_stats_form(txt::perpca_stats), txt::perpca_stats::text = txt AS same_text,
       encode(substr(perpca_stats_send(txt::perpca_stats), 1, 1), 'hex') AS version
FROM old ORDER BY id;
-- an old float8 thin value of vector rows is the widened float4 value of the same rows
SELECT o.id, perpca_internal.scale_stats(n.s, array_fill(1::float8, ARRAY[perpca_dim(n.s)]))::text = o.txt AS same_bits
FROM old o JOIN (SELECT 2 AS id, float4_value(rows_of(1)) AS s) n USING (id);
-- old and new values merge: thin (float8) while n <= d/2, then dense
SELECT perpca_stats_form(m), perpca_count(m), encode(substr(perpca_stats_send(m), 1, 1), 'hex') AS version
FROM (SELECT perpca_merge(s) AS m FROM (
  SELECT txt::perpca_stats AS s FROM old WHERE id = 1 UNION ALL SELECT float4_value((rows_of(1))[1:1][1:10])) q) r;
SELECT perpca_stats_form(m), perpca_count(m) FROM (SELECT perpca_merge(s) AS m FROM (
  SELECT txt::perpca_stats AS s FROM old WHERE id = 2 UNION ALL SELECT s FROM v4 WHERE c = 1) q) r;

-- malformed values: errors with their SQLSTATEs
\set VERBOSITY sqlstate
SELECT 'v4 n=1 d=2 skipped=0 mean={1,2} mean_lo={0,0} rows={1,3}'::perpca_stats;              -- mean not the rows'
SELECT 'v4 n=1 d=2 skipped=0 mean={1,2} mean_lo={0,0} rows={1,1e39}'::perpca_stats;           -- beyond float4
SELECT 'v4 n=1 d=2 skipped=0 mean={1,2} mean_lo={0,0} rows={1,NaN}'::perpca_stats;            -- not a number
SELECT 'v4 n=1 d=2 skipped=0 mean={1,2} mean_lo={0,0} rows={1}'::perpca_stats;                -- too few
SELECT 'v4 n=1 d=2 skipped=0 mean={1,2} mean_lo={0,0} rows={1,2,3}'::perpca_stats;            -- too many
SELECT 'v4 n=1 d=2 skipped=0 mean={1,2} mean_lo={0,0} m2={1,2,3}'::perpca_stats;              -- a dense body
SELECT 'v4 n=1 d=2 mean={1,2} mean_lo={0,0} rows={1,2}'::perpca_stats;                         -- no skipped count
SELECT 'v4 n=1 d=2 skipped=-1 mean={1,2} mean_lo={0,0} rows={1,2}'::perpca_stats;             -- negative
SELECT 'v4 n=1 d=2 skipped=0 ell=2 mean={1,2} mean_lo={0,0} rows={1,2}'::perpca_stats;        -- a sketch's field
SELECT 'v5 n=1 d=2 skipped=0 mean={1,2} mean_lo={0,0} rows={1,2}'::perpca_stats;              -- a newer version
SELECT 'v0 n=1 d=2 mean={1,2} mean_lo={0,0} rows={1,2}'::perpca_stats;
SELECT 'v4 n=0 d=2 skipped=0 mean={1,0} mean_lo={0,0} rows={}'::perpca_stats;                 -- no rows, a mean
\set VERBOSITY default
