-- ==========================================================================
-- Who may execute perpca's internal functions (perpca_internal.*): decided
-- here, in one place, after every part has created its functions.
--
-- Default deny: EXECUTE on every function of perpca_internal is revoked from
-- PUBLIC, then granted back to PUBLIC for the functions below only, each for
-- a stated reason.  A new internal function is therefore not executable by
-- PUBLIC until it is listed here (and in the allow list of
-- test/t/077_internal_execute.pl, which fails on any difference, and in the
-- table of docs/security.md).  A function may be listed only if
--   (a) it is pure computation on its arguments, or
--   (b) it runs only the caller's own SQL text, as the caller,
-- and a path of a plain caller reaches it through SQL: the write path of
-- perpca_train, perpca_refresh and perpca_personalize is C (model_write.c,
-- model_store.c, personalize.c) and calls these few by SQL as the writer
-- (the caller, or a model's owner inside the security-restricted operation
-- of run_as_owner.c); Citus and the shards of a federated fit check EXECUTE
-- as the caller.  Everything else the write path does is C.
-- The extension's schema keeps PostgreSQL's default (EXECUTE for PUBLIC),
-- except perpca_fit_federated (60_federated.sql).
-- ==========================================================================

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA perpca_internal FROM PUBLIC;

-- (a) Pure computation on the arguments, called by the SQL functions of
-- releases before 0.4.0 until ALTER EXTENSION UPDATE.
GRANT EXECUTE ON FUNCTION
    perpca_internal.scale_stats(@extschema@.perpca_stats, pg_catalog.float8[]),
    perpca_internal.scale_vector(pg_catalog.float8[], pg_catalog.float8[])
    TO PUBLIC;

-- (a) Support functions of perpca_stats_distributed and
-- perpca_merge_distributed: Citus (worker_partial_agg, coord_combine_agg)
-- checks EXECUTE on them as the caller, as nodeAgg.c does for the owner.
GRANT EXECUTE ON FUNCTION
    perpca_internal.stats_dist_accum(@extschema@.perpca_stats, pg_catalog.float8[]),
    perpca_internal.stats_dist_accum(@extschema@.perpca_stats, pg_catalog.float8[], pg_catalog.text),
    perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats),
    perpca_internal.stats_dist_final(@extschema@.perpca_stats)
    TO PUBLIC;

-- (b) The shard side of perpca_fit_federated, called over libpq by the role
-- of each connection string: runs that role's query as that role and keeps
-- its clients in that session only (by fit_id).
GRANT EXECUTE ON FUNCTION
    perpca_internal.shard_open(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.int4,
                               pg_catalog.text, pg_catalog.int8, pg_catalog.text),
    perpca_internal.shard_scale(pg_catalog.text, pg_catalog.float8[]),
    perpca_internal.shard_init(pg_catalog.text, pg_catalog.float8[], pg_catalog.float8[]),
    perpca_internal.shard_basis(pg_catalog.text, pg_catalog.bool, pg_catalog.bool),
    perpca_internal.shard_apply(pg_catalog.text, pg_catalog.float8[]),
    perpca_internal.shard_start_local(pg_catalog.text, pg_catalog.float8[], pg_catalog.text),
    perpca_internal.shard_round(pg_catalog.text, pg_catalog.float8[], pg_catalog.float8, pg_catalog.text,
                                pg_catalog.text, pg_catalog.bool),
    perpca_internal.shard_evaluate(pg_catalog.text, pg_catalog.float8[], pg_catalog.float8),
    perpca_internal.shard_finish(pg_catalog.text, pg_catalog.float8[], pg_catalog.bool),
    perpca_internal.shard_result(pg_catalog.text),
    perpca_internal.shard_close(pg_catalog.text)
    TO PUBLIC;

-- Not granted (superusers and roles granted EXECUTE only): functions no
-- path of a plain caller reaches through SQL -- model_name_parts and
-- fit_options (C calls their code directly), model_lock (perpca's paths lock in C) and
-- f_upper_quantile (for the tests).
