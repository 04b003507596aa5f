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
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=1 trace=2.5 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=3 rows=3 delta=0 trace=3 mean={1,2} mean_lo={0,0} sketch={1,0,1,0,1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=1 d=2 skipped=0 ell=3 rows=0 delta=0 trace=1 mean={1,2} mean_lo={0,0} sketch={}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0,1}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,NaN}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=-1 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} sketch={1,0}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=2 skipped=0 ell=2 rows=1 delta=0 trace=9 mean={1,2} mean_lo={0,0} m2={1,0,1}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v3 n=3 d=16001 skipped=0 ell=2 rows=0 delta=0 trace=0 mean={1} mean_lo={0} sketch={}'::perpca_stats$$);
SELECT pg_temp.err($$SELECT 'v4 n=3 d=2 mean={1,2} mean_lo={0,0} m2={1,0,1}'::perpca_stats$$);

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
