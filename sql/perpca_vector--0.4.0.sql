-- perpca_vector 0.4.0: perpca on pgvector's vector and halfvec columns.
-- Every function is C in perpca's own module ($libdir/perpca), which reads and
-- writes pgvector's storage itself, so perpca builds and runs without pgvector;
-- this script is what needs it (requires = 'perpca, vector').
\echo Use "CREATE EXTENSION perpca_vector" to load this file. \quit

-- perpca_vector lives in perpca's schema, so that @extschema@ names perpca's
-- objects too (PostgreSQL 15 has no @extschema:perpca@); and the type "vector"
-- this script names must be pgvector's (it is resolved here, once: the
-- functions below hold its OID, nothing looks it up by name later).
DO $check$
DECLARE
    perpca_ns pg_catalog.oid;
BEGIN
    SELECT e.extnamespace INTO perpca_ns
      FROM pg_catalog.pg_extension e
     WHERE e.extname OPERATOR(pg_catalog.=) 'perpca';
    IF perpca_ns IS DISTINCT FROM '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid THEN
        RAISE EXCEPTION 'perpca_vector must be created in the schema of perpca, %',
            perpca_ns::pg_catalog.regnamespace
            USING ERRCODE = 'invalid_schema_name',
                  HINT = pg_catalog.format('CREATE EXTENSION perpca_vector SCHEMA %s',
                                           perpca_ns::pg_catalog.regnamespace);
    END IF;
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
           AND d.deptype OPERATOR(pg_catalog.=) 'e'
           AND e.extname OPERATOR(pg_catalog.=) 'vector'
           AND d.objid OPERATOR(pg_catalog.=) 'vector'::pg_catalog.regtype::pg_catalog.oid)
       OR NOT EXISTS (
        SELECT FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
           AND d.deptype OPERATOR(pg_catalog.=) 'e'
           AND e.extname OPERATOR(pg_catalog.=) 'vector'
           AND d.objid OPERATOR(pg_catalog.=) 'halfvec'::pg_catalog.regtype::pg_catalog.oid) THEN
        RAISE EXCEPTION 'the types "vector" and "halfvec" seen from perpca''s schema are not pgvector''s'
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = pg_catalog.format('"vector" is %s and "halfvec" %s.',
                                             'vector'::pg_catalog.regtype::pg_catalog.oid,
                                             'halfvec'::pg_catalog.regtype::pg_catalog.oid);
    END IF;
END
$check$;

-- ==========================================================================
-- In: perpca_stats over vector and halfvec rows.  Same transition (for rows
-- of these types), state, combine, serialize and final functions as
-- perpca_stats(float8[]): the result is the value perpca_stats(v::real[]::float8[])
-- gives, bit for bit.
-- ==========================================================================

CREATE FUNCTION perpca_vector_stats_accum(internal, vector) RETURNS internal
    AS '$libdir/perpca', 'perpca_vector_stats_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_halfvec_stats_accum(internal, halfvec) RETURNS internal
    AS '$libdir/perpca', 'perpca_halfvec_stats_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_vector_stats_accum(internal, vector) IS
    'transition function of perpca_stats(vector): reads the vector''s float4 values in place';
COMMENT ON FUNCTION perpca_halfvec_stats_accum(internal, halfvec) IS
    'transition function of perpca_stats(halfvec): reads the halfvec''s binary16 values in place';

CREATE AGGREGATE perpca_stats(vector) (
    SFUNC = @extschema@.perpca_vector_stats_accum,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_stats_final,
    COMBINEFUNC = @extschema@.perpca_stats_combine,
    SERIALFUNC = @extschema@.perpca_stats_serialize,
    DESERIALFUNC = @extschema@.perpca_stats_deserialize,
    SSPACE = 16384,                 -- as perpca_stats(float8[])
    PARALLEL = SAFE
);
CREATE AGGREGATE perpca_stats(halfvec) (
    SFUNC = @extschema@.perpca_halfvec_stats_accum,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_stats_final,
    COMBINEFUNC = @extschema@.perpca_stats_combine,
    SERIALFUNC = @extschema@.perpca_stats_serialize,
    DESERIALFUNC = @extschema@.perpca_stats_deserialize,
    SSPACE = 16384,
    PARALLEL = SAFE
);
-- perpca_stats(v, nulls), as perpca_stats(x, nulls) for float8[]: pgvector's
-- values hold no NaN or infinity, so 'skip' leaves nothing out of rows that
-- pgvector made; the form is there so that one query serves both column types.
CREATE FUNCTION perpca_vector_stats_accum_nulls(internal, vector, text) RETURNS internal
    AS '$libdir/perpca', 'perpca_vector_stats_accum_nulls' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_halfvec_stats_accum_nulls(internal, halfvec, text) RETURNS internal
    AS '$libdir/perpca', 'perpca_halfvec_stats_accum_nulls' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_vector_stats_accum_nulls(internal, vector, text) IS
    'transition function of perpca_stats(vector, text)';
COMMENT ON FUNCTION perpca_halfvec_stats_accum_nulls(internal, halfvec, text) IS
    'transition function of perpca_stats(halfvec, text)';
CREATE AGGREGATE perpca_stats(vector, text) (
    SFUNC = @extschema@.perpca_vector_stats_accum_nulls,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_stats_final,
    COMBINEFUNC = @extschema@.perpca_stats_combine,
    SERIALFUNC = @extschema@.perpca_stats_serialize,
    DESERIALFUNC = @extschema@.perpca_stats_deserialize,
    SSPACE = 16384,
    PARALLEL = SAFE
);
CREATE AGGREGATE perpca_stats(halfvec, text) (
    SFUNC = @extschema@.perpca_halfvec_stats_accum_nulls,
    STYPE = internal,
    FINALFUNC = @extschema@.perpca_stats_final,
    COMBINEFUNC = @extschema@.perpca_stats_combine,
    SERIALFUNC = @extschema@.perpca_stats_serialize,
    DESERIALFUNC = @extschema@.perpca_stats_deserialize,
    SSPACE = 16384,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats(vector, text) IS
    'perpca_stats(v, nulls) for vector rows: with nulls ''skip'' a row with a NaN or infinite value (which pgvector never makes) is left out and counted (perpca_skipped), with ''error'' it is an error; NULL rows are ignored either way';
COMMENT ON AGGREGATE perpca_stats(halfvec, text) IS
    'perpca_stats(v, nulls) for halfvec rows: with nulls ''skip'' a row with a NaN or infinite value (which pgvector never makes) is left out and counted (perpca_skipped), with ''error'' it is an error; NULL rows are ignored either way';
COMMENT ON AGGREGATE perpca_stats(vector) IS
    'count, mean and centered co-moment matrix of the (non-NULL) vector rows of a group: the value perpca_stats(v::real[]::float8[]) gives, without the two arrays per row';
COMMENT ON AGGREGATE perpca_stats(halfvec) IS
    'count, mean and centered co-moment matrix of the (non-NULL) halfvec rows of a group: the value perpca_stats(v::real[]::float8[]) gives, without the two arrays per row';

-- ==========================================================================
-- Out: the row functions on a stored model, for a vector row, returning a
-- vector (float8 for the error).  The arithmetic is the float8[] functions'
-- (in double precision); each result value is then rounded to float4, as the
-- cast float8[]::vector rounds it.
-- ==========================================================================

CREATE FUNCTION perpca_model_scores(model text, client text, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_scores_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_scores(model text, client anyelement, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_scores_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_global_part(model text, client text, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_global_part_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_global_part(model text, client anyelement, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_global_part_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_local_part(model text, client text, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_local_part_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_local_part(model text, client anyelement, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_local_part_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_reconstruct(model text, client text, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_reconstruct_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_reconstruct(model text, client anyelement, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_reconstruct_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_residual(model text, client text, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_residual_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_residual(model text, client anyelement, x vector, unknown text DEFAULT 'global')
    RETURNS vector AS '$libdir/perpca', 'perpca_model_residual_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_error(model text, client text, x vector, unknown text DEFAULT 'global')
    RETURNS float8 AS '$libdir/perpca', 'perpca_model_error_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_error(model text, client anyelement, x vector, unknown text DEFAULT 'global')
    RETURNS float8 AS '$libdir/perpca', 'perpca_model_error_vector' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION perpca_model_scores(text, text, vector, text) IS
    'perpca_model_scores for a vector row: the n_global global scores then the client''s local scores, as a vector (for example to store in a vector(k) column with an HNSW index)';
COMMENT ON FUNCTION perpca_model_scores(text, anyelement, vector, text) IS
    'perpca_model_scores for a vector row, with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_global_part(text, text, vector, text) IS
    'perpca_model_global_part for a vector row: centre + U U^T (x - centre), what the clients share, as a vector';
COMMENT ON FUNCTION perpca_model_global_part(text, anyelement, vector, text) IS
    'perpca_model_global_part for a vector row, with the client key in its own type, matched as its text form';
COMMENT ON FUNCTION perpca_model_local_part(text, text, vector, text) IS
    'perpca_model_local_part for a vector row: V V^T (x - centre), what is unique to the client, as a vector';
COMMENT ON FUNCTION perpca_model_local_part(text, anyelement, vector, text) IS
    'perpca_model_local_part for a vector row, with the client key in its own type, matched as its text form';
COMMENT ON FUNCTION perpca_model_reconstruct(text, text, vector, text) IS
    'perpca_model_reconstruct for a vector row: global part + local part, as a vector';
COMMENT ON FUNCTION perpca_model_reconstruct(text, anyelement, vector, text) IS
    'perpca_model_reconstruct for a vector row, with the client key in its own type, matched as its text form';
COMMENT ON FUNCTION perpca_model_residual(text, text, vector, text) IS
    'perpca_model_residual for a vector row: x minus its reconstruction, as a vector';
COMMENT ON FUNCTION perpca_model_residual(text, anyelement, vector, text) IS
    'perpca_model_residual for a vector row, with the client key in its own type, matched as its text form';
COMMENT ON FUNCTION perpca_model_error(text, text, vector, text) IS
    'perpca_model_error for a vector row: the squared norm of its (standardized) residual, computed in double precision';
COMMENT ON FUNCTION perpca_model_error(text, anyelement, vector, text) IS
    'perpca_model_error for a vector row, with the client key in its own type, matched as its text form';

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
