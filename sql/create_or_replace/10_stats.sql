-- ==========================================================================
-- Statistics: the aggregates over perpca_stats (the type: create_once/10_stats_type.sql)
-- ==========================================================================

-- Aggregate support functions (internal state).
CREATE OR REPLACE FUNCTION perpca_stats_accum(internal, float8[]) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_accum_nulls(internal, float8[], text) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_merge_accum(internal, perpca_stats) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_serialize(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_deserialize(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_final(internal) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- The type's I/O functions are created once (sql/create_once/10_stats_type.sql);
-- their comments are here so that an upgrade brings them up to date.
COMMENT ON FUNCTION perpca_stats_in(cstring) IS 'text input of perpca_stats (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_out(perpca_stats) IS 'text output of perpca_stats (round-trips bit-exactly) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_recv(internal) IS 'binary input of perpca_stats (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_send(perpca_stats) IS 'binary output of perpca_stats (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_accum(internal, float8[]) IS 'transition function of perpca_stats(float8[]) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_accum_nulls(internal, float8[], text) IS 'transition function of perpca_stats(float8[], text) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_merge_accum(internal, perpca_stats) IS 'transition function of perpca_merge(perpca_stats) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_combine(internal, internal) IS 'combine function of the perpca_stats aggregates (pairwise merge) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_serialize(internal) IS 'serialize function of the perpca_stats aggregates (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_deserialize(bytea, internal) IS 'deserialize function of the perpca_stats aggregates (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_stats_final(internal) IS 'final function of the perpca_stats aggregates (README: Reference, Statistics)';

CREATE OR REPLACE AGGREGATE perpca_stats(float8[]) (
    SFUNC = perpca_stats_accum,
    STYPE = internal,
    FINALFUNC = perpca_stats_final,
    COMBINEFUNC = perpca_stats_combine,
    SERIALFUNC = perpca_stats_serialize,
    DESERIALFUNC = perpca_stats_deserialize,
    -- bytes a group's state holds, for the planner's sizing of hash
    -- aggregates: about a thin group's at d ~ 300-600 with its rows in
    -- TOAST (mean, sums, first row) or a dense one's at d ~ 40 (d x d
    -- co-moments, a block of rows); more with larger d.  200 groups (the
    -- planner's guess for a table without statistics) still fit in the
    -- default work_mem.
    SSPACE = 16384,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats(float8[]) IS
    'count, mean and centered co-moment matrix of the (non-NULL) rows of a group; a NULL, NaN or infinite element is an error (README: Reference, Statistics)';

-- perpca_stats(x, 'skip'): rows with a missing value left out and counted.
CREATE OR REPLACE AGGREGATE perpca_stats(float8[], text) (
    SFUNC = perpca_stats_accum_nulls,
    STYPE = internal,
    FINALFUNC = perpca_stats_final,
    COMBINEFUNC = perpca_stats_combine,
    SERIALFUNC = perpca_stats_serialize,
    DESERIALFUNC = perpca_stats_deserialize,
    SSPACE = 16384,                 -- as perpca_stats(float8[])
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats(float8[], text) IS
    'perpca_stats(x, nulls): with nulls ''skip'' the rows with a NULL, NaN or infinite element are left out of the statistics and counted (perpca_skipped); with ''error'' such a row is an error, as in perpca_stats(x).  NULL rows are ignored either way (README: Reference, Statistics)';

CREATE OR REPLACE AGGREGATE perpca_merge(perpca_stats) (
    SFUNC = perpca_stats_merge_accum,
    STYPE = internal,
    FINALFUNC = perpca_stats_final,
    COMBINEFUNC = perpca_stats_combine,
    SERIALFUNC = perpca_stats_serialize,
    DESERIALFUNC = perpca_stats_deserialize,
    SSPACE = 16384,                 -- as perpca_stats(float8[])
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_merge(perpca_stats) IS
    'merges perpca_stats values as if their rows had been aggregated together (counts exactly, the rest up to rounding); with a sketch among them the result is a sketch of the smallest ell met (README: Reference, Statistics)';

-- Sketched statistics (Frequent Directions; sketch.c, sketch_agg.c).
CREATE OR REPLACE FUNCTION perpca_sketch_accum(internal, float8[], int) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_accum_nulls(internal, float8[], int, text) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_serialize(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_deserialize(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_final(internal) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_sketch_accum(internal, float8[], int) IS 'transition function of perpca_sketch(float8[], int) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_sketch_accum_nulls(internal, float8[], int, text) IS 'transition function of perpca_sketch(float8[], int, text) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_sketch_combine(internal, internal) IS 'combine function of the perpca_sketch aggregates (merges two Frequent Directions sketches) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_sketch_serialize(internal) IS 'serialize function of the perpca_sketch aggregates (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_sketch_deserialize(bytea, internal) IS 'deserialize function of the perpca_sketch aggregates (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_sketch_final(internal) IS 'final function of the perpca_sketch aggregates (README: Reference, Statistics)';

CREATE OR REPLACE AGGREGATE perpca_sketch(float8[], int) (
    SFUNC = perpca_sketch_accum,
    STYPE = internal,
    FINALFUNC = perpca_sketch_final,
    COMBINEFUNC = perpca_sketch_combine,
    SERIALFUNC = perpca_sketch_serialize,
    DESERIALFUNC = perpca_sketch_deserialize,
    -- bytes a group's state holds at most, for the planner's sizing of hash
    -- aggregates: its buffer of 2 ell rows at ell = 64, d = 1024 (a small
    -- group's buffer is smaller; it grows by doubling)
    SSPACE = 1048576,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_sketch(float8[], int) IS
    'perpca_sketch(x, ell): sketched statistics of a group''s (non-NULL) rows: exact count, mean and total variance, and a Frequent-Directions sketch of at most ell rows with 0 <= M2 - B''B <= delta I; exact for at most ell + 1 rows; d up to 16000 (README: Reference, Statistics)';
CREATE OR REPLACE AGGREGATE perpca_sketch(float8[], int, text) (
    SFUNC = perpca_sketch_accum_nulls,
    STYPE = internal,
    FINALFUNC = perpca_sketch_final,
    COMBINEFUNC = perpca_sketch_combine,
    SERIALFUNC = perpca_sketch_serialize,
    DESERIALFUNC = perpca_sketch_deserialize,
    SSPACE = 1048576,               -- as perpca_sketch(float8[], int)
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_sketch(float8[], int, text) IS
    'perpca_sketch(x, ell, nulls): with nulls ''skip'' the rows with a NULL, NaN or infinite element are left out and counted (perpca_skipped); with ''error'' such a row is an error, as in perpca_sketch(x, ell) (README: Reference, Statistics)';

-- Accessors.
CREATE OR REPLACE FUNCTION perpca_count(perpca_stats) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_skipped(perpca_stats) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_dim(perpca_stats) RETURNS int
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_mean(perpca_stats) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_covariance(s perpca_stats, centered boolean DEFAULT true) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION perpca_stats_form(perpca_stats) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_stats_form(perpca_stats) IS
    'how the value stores its co-moments: ''thin'' (the centred rows, while n <= d/2), ''dense'' (packed d x d matrix) or ''sketch'' (perpca_sketch: ell rows B and delta with 0 <= M2 - B''B <= delta I) (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_count(perpca_stats) IS 'number of rows n summarized by the statistics (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_skipped(perpca_stats) IS
    'number of rows left out of the statistics for a NULL, NaN or infinite element (perpca_stats(x, ''skip'')), summed by perpca_merge; 0 for values stored before perpca 0.3.0 (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_dim(perpca_stats) IS 'dimension d of the rows (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_mean(perpca_stats) IS 'mean vector (d values); NULL when n = 0 (README: Reference, Statistics)';
COMMENT ON FUNCTION perpca_covariance(perpca_stats, boolean) IS
    'd x d covariance scaled by 1/n; with centered => false the uncentered second moment (1/n) sum x x^T; NULL when n = 0.  For a sketch, the sketch''s estimate B''B/n (below the covariance by at most delta/n in every direction); an error for a sketch of d > 4096 (README: Reference, Statistics)';


-- Two perpca_stats values merged (NULLs skipped), for upserts of per-period statistics.
CREATE OR REPLACE FUNCTION perpca_merge(a perpca_stats, b perpca_stats) RETURNS perpca_stats
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN (SELECT @extschema@.perpca_merge(v.s) FROM (VALUES (a), (b)) AS v(s));
COMMENT ON FUNCTION perpca_merge(perpca_stats, perpca_stats) IS
    'merges two perpca_stats values as the perpca_merge aggregate does (a NULL is skipped), e.g. in INSERT ... ON CONFLICT DO UPDATE SET stats = perpca_merge(t.stats, excluded.stats) (README: Reference, Statistics)';
