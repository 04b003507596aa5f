-- ==========================================================================
-- Statistics: the perpca_stats type and its aggregates
-- ==========================================================================

CREATE TYPE perpca_stats;

CREATE FUNCTION perpca_stats_in(cstring) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_out(perpca_stats) RETURNS cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_recv(internal) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_send(perpca_stats) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE perpca_stats (
    INPUT = perpca_stats_in,
    OUTPUT = perpca_stats_out,
    RECEIVE = perpca_stats_recv,
    SEND = perpca_stats_send,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = double,
    -- out of line without compression: floating-point data rarely compress,
    -- and trying costs time on every large value
    STORAGE = external
);

COMMENT ON TYPE perpca_stats IS
    'sufficient statistics of one group: row count, dimension, mean and centered co-moment matrix';

