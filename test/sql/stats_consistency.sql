-- perpca_stats values that no rows have are refused at input; what perpca
-- writes (merges of values at the edge of float8) reads back; statistics at
-- the edge of float8's range give the fit a clear error, never an internal one.
SET extra_float_digits = 0;

-- err(q): run q and show its SQLSTATE, message and detail instead of failing.
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
-- Text input: co-moments beyond Cauchy-Schwarz, thin rows not centred at
-- their mean, thin rows whose squares overflow
-- ---------------------------------------------------------------------------
SELECT pg_temp.err($$SELECT 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={1,100,1}'::perpca_stats$$) AS off_diagonal;
SELECT pg_temp.err($$SELECT 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={1,-1.01,1}'::perpca_stats$$) AS negative;
SELECT pg_temp.err($$SELECT 'v1 n=3 d=3 mean={0,0,0} mean_lo={0,0,0} m2={4,0,0,0,0,1e-300}'::perpca_stats$$) AS zero_diagonal;
-- at the bound (perfectly correlated columns), and a rounding past it, are fine
SELECT 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={4,-6,9}'::perpca_stats::text AS at_bound;
SELECT 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={4,6.000000000000001,9}'::perpca_stats::text AS rounded;
SELECT pg_temp.err($$SELECT 'v1 n=1 d=2 mean={0,0} mean_lo={0,0} rows={5,5}'::perpca_stats$$) AS thin_one_row;
SELECT pg_temp.err($$SELECT 'v1 n=2 d=4 mean={0,0,0,0} mean_lo={0,0,0,0} rows={1,2,3,4,-1,-2,-3,-3}'::perpca_stats$$) AS thin_not_centred;
SELECT pg_temp.err($$SELECT 'v1 n=2 d=4 mean={0,0,0,0} mean_lo={0,0,0,0} rows={1e+308,0,0,0,-1e+308,0,0,0}'::perpca_stats$$) AS thin_overflow;
SELECT 'v1 n=2 d=4 mean={0,0,0,0} mean_lo={0,0,0,0} rows={1,2,3,4,-1,-2,-3,-4}'::perpca_stats::text AS thin_centred;

-- ---------------------------------------------------------------------------
-- What perpca writes reads back: a merge that overflows is an error, not
-- a value with Infinity that its own input refuses
-- ---------------------------------------------------------------------------
SELECT pg_temp.err($$SELECT perpca_merge(v) FROM (VALUES ('v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={1e+308,1e+308,1e+308}'::perpca_stats),
                                                          ('v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={1e+308,1e+308,1e+308}')) AS t(v)$$) AS merge_overflow;
SELECT pg_temp.err($$SELECT perpca_merge('v1 n=3 d=2 mean={1e+308,0} mean_lo={0,0} m2={1,0,1}'::perpca_stats,
                                         'v1 n=3 d=2 mean={-1e+308,0} mean_lo={0,0} m2={1,0,1}')$$) AS merge_means_apart;
-- a thin group whose squared deviations overflow (was: a thin value that input refuses)
SELECT pg_temp.err($$SELECT perpca_stats(x) FROM (VALUES (ARRAY[1e154, 0, 0, 0]::float8[]), (ARRAY[-1e154, 0, 0, 0])) AS t(x)$$) AS thin_group;
SELECT pg_temp.err($$SELECT perpca_merge(v) FROM (VALUES ('v1 n=1 d=4 mean={1e+154,0,0,0} mean_lo={0,0,0,0} rows={0,0,0,0}'::perpca_stats),
                                                          ('v1 n=1 d=4 mean={-1e+154,0,0,0} mean_lo={0,0,0,0} rows={0,0,0,0}')) AS t(v)$$) AS thin_merge;
-- statistics scaled by a model's tiny scale factors (was: a value with Infinity)
SELECT pg_temp.err($$SELECT perpca_internal.scale_stats('v1 n=3 d=2 mean={1,0} mean_lo={0,0} m2={1e+300,0,1}'::perpca_stats, '{1e-10,1}')$$) AS scaled;
CREATE TABLE edge (id int, v perpca_stats);
INSERT INTO edge VALUES
    (1, 'v1 n=3 d=2 mean={1.7e+308,-1.7e+308} mean_lo={0,0} m2={1e+308,-1e+308,1e+308}'),
    (2, 'v1 n=1 d=4 mean={1.7e+308,0,0,-1e+308} mean_lo={0,0,0,0} rows={0,0,0,0}'),
    (3, 'v1 n=2 d=4 mean={1e+300,0,0,0} mean_lo={0,0,0,0} rows={1e+153,1,0,0,-1e+153,-1,0,0}'),
    (4, 'v3 n=3 d=2 skipped=0 ell=1 rows=1 delta=0 trace=1e+308 mean={0,0} mean_lo={0,0} sketch={1e+154,0}');
-- each with itself, then all of the same dimension: each result, if any, reads back
CREATE FUNCTION pg_temp.round_trip(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v perpca_stats;
BEGIN
    EXECUTE q INTO v;
    RETURN CASE WHEN v::text::perpca_stats::text = v::text THEN 'reads back' ELSE 'differs' END;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT id, pg_temp.round_trip(format('SELECT perpca_merge(v, v) FROM edge WHERE id = %s', id)) AS with_itself
  FROM edge ORDER BY id;
SELECT perpca_dim(v) AS d, pg_temp.round_trip(format('SELECT perpca_merge(v) FROM edge WHERE perpca_dim(v) = %s', perpca_dim(v))) AS all_merged
  FROM edge GROUP BY 1 ORDER BY 1;

-- ---------------------------------------------------------------------------
-- The fit at the edge of float8's range: a clear error (22003) or a result
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.fit_outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    solver text;
    outcome text := '';
    k bigint;
BEGIN
    FOREACH solver IN ARRAY ARRAY['lbfgs', 'paper'] LOOP
        BEGIN
            SELECT count(*) INTO k FROM perpca_fit(q, 1, 1, solver => solver);
            outcome := outcome || solver || ': ' || k || ' rows; ';
        EXCEPTION WHEN OTHERS THEN
            outcome := outcome || solver || ': ' || SQLSTATE || ' ' || SQLERRM || '; ';
        END;
    END LOOP;
    RETURN outcome;
END $$;
SET client_min_messages = warning;
-- thin clients with rows of 1e308 (were: symmetric eigensolver failed, SVD failed)
SELECT pg_temp.fit_outcome($q$SELECT * FROM (VALUES ('a', 'v1 n=1 d=4 mean={1e+308,0,0,0} mean_lo={0,0,0,0} rows={0,0,0,0}'::perpca_stats),
    ('b', 'v1 n=2 d=4 mean={-1e+308,0,0,0} mean_lo={0,0,0,0} rows={1e+154,1,0,0,-1e+154,-1,0,0}')) AS v$q$) AS thin_huge;
-- dense clients of co-moments 1e308
SELECT pg_temp.fit_outcome($q$SELECT * FROM (VALUES ('a', 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={1e+308,0,1e+308}'::perpca_stats),
    ('b', 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={1e+308,1e+308,1e+308}')) AS v$q$) AS dense_huge;
-- rows of 1e-160 (were: retraction failed (LAPACK info -6) with the paper's
-- solver), of 1e-100 (were: components off by 0.04), 1e70 (a model whose
-- tr R^3 is infinite) and 1e100: an error; of 1e-45 and 1e45: a result
SELECT k, pg_temp.fit_outcome(format($q$SELECT 'c' || (i %% 3), perpca_stats(ARRAY(SELECT e * %s::float8 FROM unnest(ARRAY[sin(i), cos(3 * i), sin(7 * i), cos(11 * i)]) AS e))
    FROM generate_series(1, 60) AS i GROUP BY 1$q$, k)) AS outcome
  FROM unnest(ARRAY['1e-160', '1e-100', '1e-45', '1e45', '1e70', '1e100']) AS k;
-- a model of rows of 1e45 is one its functions read
SELECT model_name FROM perpca_train('edge_model', $q$SELECT 'c' || (i % 3), perpca_stats(ARRAY(SELECT e * 1e45 FROM unnest(ARRAY[sin(i), cos(3 * i), sin(7 * i), cos(11 * i)]) AS e))
    FROM generate_series(1, 60) AS i GROUP BY 1$q$, 1, 1);
SELECT count(*) AS components, bool_and(variance > 1e89 AND variance < 1e91) AS variances_scaled
  FROM perpca_component_variance('edge_model');
SELECT round((m.q / 1e90)::numeric, 6) AS q_over_1e90, m.out_of_control
  FROM perpca_model_monitor('edge_model', 'c1', ARRAY[1e45, 0, -1e45, 2e45]::float8[]) AS m;
SELECT perpca_drop('edge_model');
-- one client of little variance beside others is fine
SELECT pg_temp.fit_outcome($q$SELECT * FROM (VALUES ('a', 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={1e-310,0,1e-310}'::perpca_stats),
    ('b', 'v1 n=3 d=2 mean={0,0} mean_lo={0,0} m2={2,1,2}'), ('c', 'v1 n=3 d=2 mean={1,0} mean_lo={0,0} m2={1,0,3}')) AS v$q$) AS one_tiny;
-- the local components of one client at the edge
SELECT pg_temp.err($$SELECT * FROM perpca_local_pcs('v1 n=3 d=2 mean={1e+308,0} mean_lo={0,0} m2={1e+308,0,1e+308}'::perpca_stats, '{{1,0}}', 1, '{-1e+308,0}')$$) AS local_pcs;
RESET client_min_messages;
