-- ==========================================================================
-- Citus: statistics aggregates that Citus splits across its workers
-- ==========================================================================
-- perpca_stats(float8[]) has an internal state, which Citus cannot move:
-- over a distributed table it aggregates on the workers only when grouping by
-- the distribution column.  These two have the state type perpca_stats, so
-- Citus runs them on the workers for any grouping (worker_partial_agg) and
-- combines one state per group and shard on the coordinator
-- (coord_combine_agg).  The work per row is perpca_stats(float8[])'s.

CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[])
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[], text)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_accum_nulls' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_final(@extschema@.perpca_stats)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[]) IS
    'internal: transition function of perpca_stats_distributed(float8[]) (perpca_stats(float8[])''s, on a perpca_stats-typed state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[], text) IS
    'internal: transition function of perpca_stats_distributed(float8[], text) (perpca_stats(float8[], text)''s, on a perpca_stats-typed state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats) IS
    'internal: combine function of perpca_stats_distributed and perpca_merge_distributed, and the transition of the latter (merges a perpca_stats value into the state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_final(@extschema@.perpca_stats) IS
    'internal: final function of perpca_stats_distributed and perpca_merge_distributed (the state as a plain perpca_stats value)';

CREATE OR REPLACE AGGREGATE perpca_stats_distributed(float8[]) (
    SFUNC = perpca_internal.stats_dist_accum,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,                 -- as perpca_stats(float8[])
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats_distributed(float8[]) IS
    'perpca_stats(float8[]) with a perpca_stats transition state, for Citus: aggregates on the workers for any GROUP BY (one state per group and shard reaches the coordinator); the same bits as perpca_stats(float8[]) for the same rows in the same order (README: Reference, Statistics)';

CREATE OR REPLACE AGGREGATE perpca_stats_distributed(float8[], text) (
    SFUNC = perpca_internal.stats_dist_accum,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats_distributed(float8[], text) IS
    'perpca_stats(float8[], text) with a perpca_stats transition state, for Citus: with nulls ''skip'' rows with a NULL, NaN or infinite element are left out and counted, on the workers and through the coordinator''s combine (README: Reference, Statistics)';

CREATE OR REPLACE AGGREGATE perpca_merge_distributed(@extschema@.perpca_stats) (
    SFUNC = perpca_internal.stats_dist_combine,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_merge_distributed(@extschema@.perpca_stats) IS
    'perpca_merge(perpca_stats) with a perpca_stats transition state, for Citus: merges on the workers for any GROUP BY, then on the coordinator (README: Reference, Statistics)';
