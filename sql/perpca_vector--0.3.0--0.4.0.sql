-- perpca_vector 0.3.0 -> 0.4.0: perpca_sketch over vector and halfvec rows.
\echo Use "ALTER EXTENSION perpca_vector UPDATE TO '0.4.0'" to load this file. \quit

-- ==========================================================================
-- In (0.4.0): perpca_sketch over vector and halfvec rows.  Same state,
-- combine, serialize and final functions as perpca_sketch(float8[], int):
-- for the same rows in the same order, the value perpca_sketch(v::real[]::float8[], ell)
-- gives, bit for bit; d up to pgvector's 16,000.
-- ==========================================================================

CREATE FUNCTION perpca_vector_sketch_accum(internal, vector, int) RETURNS internal
    AS '$libdir/perpca', 'perpca_vector_sketch_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_halfvec_sketch_accum(internal, halfvec, int) RETURNS internal
    AS '$libdir/perpca', 'perpca_halfvec_sketch_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_vector_sketch_accum_nulls(internal, vector, int, text) RETURNS internal
    AS '$libdir/perpca', 'perpca_vector_sketch_accum_nulls' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_halfvec_sketch_accum_nulls(internal, halfvec, int, text) RETURNS internal
    AS '$libdir/perpca', 'perpca_halfvec_sketch_accum_nulls' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_vector_sketch_accum(internal, vector, int) IS
    'transition function of perpca_sketch(vector, int): reads the vector''s float4 values in place';
COMMENT ON FUNCTION perpca_halfvec_sketch_accum(internal, halfvec, int) IS
    'transition function of perpca_sketch(halfvec, int): reads the halfvec''s binary16 values in place';
COMMENT ON FUNCTION perpca_vector_sketch_accum_nulls(internal, vector, int, text) IS
    'transition function of perpca_sketch(vector, int, text)';
COMMENT ON FUNCTION perpca_halfvec_sketch_accum_nulls(internal, halfvec, int, text) IS
    'transition function of perpca_sketch(halfvec, int, text)';

CREATE AGGREGATE perpca_sketch(vector, int) (
    SFUNC = @extschema@.perpca_vector_sketch_accum,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_sketch_final,
    COMBINEFUNC = @extschema@.perpca_sketch_combine,
    SERIALFUNC = @extschema@.perpca_sketch_serialize,
    DESERIALFUNC = @extschema@.perpca_sketch_deserialize,
    SSPACE = 1048576,               -- as perpca_sketch(float8[], int)
    PARALLEL = SAFE
);
CREATE AGGREGATE perpca_sketch(halfvec, int) (
    SFUNC = @extschema@.perpca_halfvec_sketch_accum,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_sketch_final,
    COMBINEFUNC = @extschema@.perpca_sketch_combine,
    SERIALFUNC = @extschema@.perpca_sketch_serialize,
    DESERIALFUNC = @extschema@.perpca_sketch_deserialize,
    SSPACE = 1048576,
    PARALLEL = SAFE
);
CREATE AGGREGATE perpca_sketch(vector, int, text) (
    SFUNC = @extschema@.perpca_vector_sketch_accum_nulls,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_sketch_final,
    COMBINEFUNC = @extschema@.perpca_sketch_combine,
    SERIALFUNC = @extschema@.perpca_sketch_serialize,
    DESERIALFUNC = @extschema@.perpca_sketch_deserialize,
    SSPACE = 1048576,
    PARALLEL = SAFE
);
CREATE AGGREGATE perpca_sketch(halfvec, int, text) (
    SFUNC = @extschema@.perpca_halfvec_sketch_accum_nulls,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_sketch_final,
    COMBINEFUNC = @extschema@.perpca_sketch_combine,
    SERIALFUNC = @extschema@.perpca_sketch_serialize,
    DESERIALFUNC = @extschema@.perpca_sketch_deserialize,
    SSPACE = 1048576,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_sketch(vector, int) IS
    'perpca_sketch(v, ell) for vector rows: a Frequent-Directions sketch of the group''s centred rows (exact n, mean, total variance; at most ell rows B with 0 <= M2 - B''B <= delta I), the value perpca_sketch(v::real[]::float8[], ell) gives; d up to 16000';
COMMENT ON AGGREGATE perpca_sketch(halfvec, int) IS
    'perpca_sketch(v, ell) for halfvec rows: the value perpca_sketch(v::real[]::float8[], ell) gives; d up to 16000';
COMMENT ON AGGREGATE perpca_sketch(vector, int, text) IS
    'perpca_sketch(v, ell, nulls) for vector rows: with nulls ''skip'' a row with a NaN or infinite value (which pgvector never makes) is left out and counted, with ''error'' it is an error';
COMMENT ON AGGREGATE perpca_sketch(halfvec, int, text) IS
    'perpca_sketch(v, ell, nulls) for halfvec rows: with nulls ''skip'' a row with a NaN or infinite value (which pgvector never makes) is left out and counted, with ''error'' it is an error';
