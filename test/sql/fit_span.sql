-- A fit whose clients are all thin or sketched runs in the span of their
-- stacked rows (src/fit_span.c) and lifts its components back to d: the same
-- fit as in all d dimensions (perpca.fit_span = off, the diagnostic that
-- forces it), objective to 1e-9 relative, components to 1e-6 in projector
-- distance.  Sketched, thin about the pooled centre and uncentred (the
-- offsets join the span), repeated rows (a rank-deficient Gram matrix),
-- weights; and the fits the span leaves to the path in d, bit for bit the
-- same: a dense client among thin ones, more components than the span
-- has dimensions, rows not well below d, another method, a warm start.
SET extra_float_digits = 0;

-- rows of d = 200 with structure shared by every client and each client's own
CREATE TABLE span_rows AS
SELECT c AS client, r, array_agg((3 * sin(0.05 * j + r) + 2 * cos(0.3 * j * c + r * r)
                                  + sin(j * r * 0.7 + c) * 0.5 + c * 0.1 * cos(j))::float8 ORDER BY j) AS x
FROM generate_series(1, 5) c, generate_series(1, 40) r, generate_series(1, 200) j
GROUP BY c, r;

CREATE TABLE span_stats AS
SELECT client,
       perpca_sketch(x, 8) AS sketch,
       perpca_stats(x) FILTER (WHERE r <= 8) AS thin,
       perpca_stats(x) FILTER (WHERE r <= 4) AS four,
       perpca_stats(x) FILTER (WHERE r <= 2) AS two,
       perpca_stats(x) AS whole
FROM span_rows GROUP BY client;
ALTER TABLE span_stats ADD COLUMN doubled perpca_stats;
UPDATE span_stats SET doubled = (SELECT perpca_merge(v) FROM (VALUES (four), (four)) AS m(v));
SELECT perpca_stats_form(sketch) AS sketch, perpca_stats_form(thin) AS thin, perpca_stats_form(doubled) AS doubled,
       perpca_stats_form(whole) AS whole, count(*) AS clients
FROM span_stats GROUP BY 1, 2, 3, 4;

-- The fit of q in the span and in d (the table of each: f_on, f_off): the
-- objectives' relative difference, bit-equal or not, and the projector
-- distances sqrt(2 (r - ||A'B||_F^2)) between the global and (largest over
-- clients) local components.
CREATE FUNCTION pg_temp.span_vs_d(q text, r1 int, r2 int, extra text DEFAULT '')
RETURNS TABLE (rel float8, same_bits boolean, global_dist float8, local_dist float8)
LANGUAGE plpgsql AS $f$
DECLARE
  o_on float8;
  o_off float8;
BEGIN
  DROP TABLE IF EXISTS pg_temp.f_on, pg_temp.f_off;
  PERFORM set_config('perpca.fit_span', 'on', true);
  EXECUTE format('CREATE TEMP TABLE f_on AS SELECT * FROM perpca_fit(%L, %s, %s%s)', q, r1, r2, extra);
  SELECT objective INTO o_on FROM perpca_last_fit();
  PERFORM set_config('perpca.fit_span', 'off', true);
  EXECUTE format('CREATE TEMP TABLE f_off AS SELECT * FROM perpca_fit(%L, %s, %s%s)', q, r1, r2, extra);
  SELECT objective INTO o_off FROM perpca_last_fit();
  PERFORM set_config('perpca.fit_span', 'on', true);
  RETURN QUERY
  WITH ip AS (
    SELECT a.client, a.kind, sum(u.x * u.y) AS p
    FROM f_on a JOIN f_off b ON a.kind = b.kind AND a.client IS NOT DISTINCT FROM b.client,
         unnest(a.pc, b.pc) AS u(x, y)
    GROUP BY a.client, a.kind, a.component, b.component),
  per AS (
    SELECT client, kind, sqrt(greatest(2 * (sqrt(count(*)) - sum(p * p)), 0)) AS dist FROM ip GROUP BY client, kind)
  SELECT abs(o_on - o_off) / abs(o_off),
         (SELECT count(*) FROM f_on) = (SELECT count(*) FROM f_off) AND
         NOT EXISTS (SELECT 1 FROM f_on a
                     WHERE NOT EXISTS (SELECT 1 FROM f_off b
                                       WHERE b.client IS NOT DISTINCT FROM a.client AND b.kind = a.kind
                                         AND b.component = a.component AND b.pc = a.pc AND b.variance = a.variance)),
         (SELECT max(dist) FROM per WHERE kind = 'global'),
         coalesce((SELECT max(dist) FROM per WHERE kind = 'local'), 0);
END
$f$;

-- 1. In the span: sketches (40 rows of B in d = 200), thin clients about
-- the pooled centre and uncentred (each offset a row of the span), weights
-- by samples, the paper's solver, local ranks of their own, scaled
-- features; the same objective and components as in d,
-- not the same bits (the arithmetic runs in other coordinates)
SELECT name, rel < 1e-9 AS same_objective, same_bits, global_dist < 1e-6 AS same_global,
       local_dist < 1e-6 AS same_local
FROM (VALUES ('sketch', 'SELECT client, sketch FROM span_stats', 2, 2, ''),
             ('thin, center global', 'SELECT client, thin FROM span_stats', 2, 3, ', center => ''global'''),
             ('thin, center none', 'SELECT client, thin FROM span_stats', 1, 2, ', center => ''none'''),
             ('sketch, weights samples', 'SELECT client, sketch FROM span_stats', 2, 1, ', weights => ''samples'''),
             ('thin, solver paper', 'SELECT client, thin FROM span_stats', 2, 2, ', solver => ''paper'', tolerance => 1e-12, rounds => 50000'),
             ('thin, local ranks', 'SELECT client, thin, client % 3 FROM span_stats', 2, 0, ''),
             ('thin, scale standard', 'SELECT client, thin FROM span_stats', 2, 2, ', scale => ''standard'''))
     AS t(name, q, r1, r2, extra),
     LATERAL pg_temp.span_vs_d(q, r1, r2, extra);

-- the span's dimension: verbose says it (40 rows of B)
SET client_min_messages = notice;
CREATE TEMP TABLE quiet AS SELECT * FROM perpca_fit('SELECT client, sketch FROM span_stats', 2, 2, verbose => true, init => 'dispca', hops => 0, rounds => 0);
DROP TABLE quiet;

-- 2. Repeated rows: each thin client holds its 4 rows twice (merged with
-- itself), so the Gram matrix of the 40 stacked rows is singular (each
-- client's 8 centred rows span at most 3 dimensions, and the clients share
-- some); the span keeps the 13 it has (verbose) and the fit is the same
SELECT rel < 1e-9 AS same_objective, same_bits, global_dist < 1e-6 AS same_global, local_dist < 1e-6 AS same_local
FROM pg_temp.span_vs_d('SELECT client, doubled FROM span_stats', 1, 2);
CREATE TEMP TABLE quiet AS SELECT * FROM perpca_fit('SELECT client, doubled FROM span_stats', 1, 2, verbose => true, init => 'dispca', hops => 0, rounds => 0);
DROP TABLE quiet;

-- 3. Left to the fit in d, bit for bit: a dense client among thin ones; more
-- components (2 + 4) than the span of five clients of two rows has
-- dimensions (one each: five); rows not well below d (all 40 rows of each of 5
-- clients: 200 rows in d = 200); method 'cpca'; a warm start
CREATE TABLE span_mixed AS
SELECT client, perpca_stats(x) AS stats FROM span_rows JOIN generate_series(1, 3) k ON true WHERE client = 1 GROUP BY client
UNION ALL SELECT client, thin FROM span_stats WHERE client > 1;
SELECT client, perpca_stats_form(stats) FROM span_mixed ORDER BY client;
CREATE TABLE span_start AS SELECT client, kind, component, pc FROM perpca_fit('SELECT client, thin FROM span_stats', 2, 2);
SELECT name, same_bits
FROM (VALUES ('dense among thin', 'SELECT client, stats FROM span_mixed', 2, 2, ''),
             ('ranks above the span', 'SELECT client, two FROM span_stats', 2, 4, ''),
             ('rows not well below d', 'SELECT client, whole FROM span_stats', 2, 2, ''),
             ('method cpca', 'SELECT client, thin FROM span_stats', 2, 2, ', method => ''cpca'''),
             ('warm start', 'SELECT client, thin FROM span_stats', 2, 2,
              ', init => ''given'', start => ''SELECT client, kind, component, pc FROM span_start'''))
     AS t(name, q, r1, r2, extra),
     LATERAL pg_temp.span_vs_d(q, r1, r2, extra);

-- the components come back in d, [U, V_i] orthonormal for every client
CREATE TEMP TABLE f AS SELECT * FROM perpca_fit('SELECT client, sketch FROM span_stats', 2, 2);
SELECT kind, count(*) AS components, bool_and(array_length(pc, 1) = 200) AS in_d FROM f GROUP BY kind ORDER BY kind;
SELECT d, n_clients FROM perpca_last_fit();
WITH w AS (SELECT c.client, f.kind, f.component, f.pc
           FROM (SELECT DISTINCT client FROM f WHERE client IS NOT NULL) c JOIN f ON f.client = c.client OR f.client IS NULL)
SELECT count(*) AS pairs,
       max(abs(s.ip - CASE WHEN a.kind = b.kind AND a.component = b.component THEN 1 ELSE 0 END)) < 1e-12 AS orthonormal
FROM w a JOIN w b USING (client), LATERAL (SELECT sum(u.x * u.y) AS ip FROM unnest(a.pc, b.pc) AS u(x, y)) s;
