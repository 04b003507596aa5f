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
--   (b) it runs only the caller's own SQL text, as the caller, or touches
--       only the caller's own (temporary) objects or the catalog, or
--   (c) it touches a model, and then checks for itself, before it reads
--       anything, that the model is plain tables of one owner whose
--       privileges the current user has (perpca_internal.model_lock,
--       model_owner + model_check_owner) or the role's (run_as),
-- and it is reached from a path that runs as the caller (perpca_train,
-- perpca_refresh and perpca_personalize run their PL/pgSQL bodies through
-- SPI as the caller) or as a model's owner (an ordinary role) inside the
-- security-restricted operation of run_as and personalize.c; or by Citus
-- or the shards of a federated fit, which check EXECUTE as the caller.
-- The extension's schema keeps PostgreSQL's default (EXECUTE for PUBLIC),
-- except perpca_fit_federated (60_federated.sql).
-- ==========================================================================

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA perpca_internal FROM PUBLIC;

-- (a) Pure computation on the arguments, called by the write path's SQL as
-- the writer (one_select: stage_start, source_bind; model_fill_clients,
-- model_personalize).
GRANT EXECUTE ON FUNCTION
    perpca_internal.one_select(pg_catalog.text, pg_catalog.text),
    perpca_internal.scale_stats(@extschema@.perpca_stats, pg_catalog.float8[]),
    perpca_internal.scale_vector(pg_catalog.float8[], pg_catalog.float8[]),
    perpca_internal.client_monitor_stats(@extschema@.perpca_stats, pg_catalog.float8[], pg_catalog.float8[])
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

-- (b) The fit of a train or refresh: runs the caller's query text (and its
-- warm-start query) as the caller; called by model_store as the writer.
GRANT EXECUTE ON FUNCTION perpca_internal.fit(pg_catalog.text, pg_catalog.jsonb) TO PUBLIC;

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

-- (b) The stage of a train or refresh: temporary tables of the caller's
-- session (readable by the model's owner), filled by the caller's query as
-- the current user (stage_start) or from the model's view <model>_source,
-- which must be a view of the current user (stage_fill); new tables created
-- as the caller (CREATE on the schema needed), or columns added to them
-- (ALTER TABLE: the table's owner only); catalog reads.
GRANT EXECUTE ON FUNCTION
    perpca_internal.stage_create(pg_catalog.regrole),
    perpca_internal.stage_fill(pg_catalog.text, pg_catalog.text, pg_catalog.text),
    perpca_internal.stage_command(pg_catalog.text, pg_catalog.text, pg_catalog.text),
    perpca_internal.stage_start(pg_catalog.text, pg_catalog.regrole, pg_catalog.text),
    perpca_internal.stage_digest(pg_catalog.jsonb, pg_catalog.text[]),
    perpca_internal.model_create(pg_catalog.text, pg_catalog.text),
    perpca_internal.history_create(pg_catalog.text, pg_catalog.text),
    perpca_internal.model_columns_add(pg_catalog.text, pg_catalog.text, pg_catalog.text),
    perpca_internal.model_owner(pg_catalog.text, pg_catalog.text),
    perpca_internal.model_check_owner(pg_catalog.text, pg_catalog.regrole)
    TO PUBLIC;

-- (c) The bodies of perpca_train and perpca_refresh (run through SPI as the
-- caller: model_owner + model_check_owner before anything else touches an
-- existing model), the switch to the owner (run_as: the caller must have
-- the role's privileges), the model lock (write and drop check the owner's
-- privileges before any lock; read is refused from SQL), and what runs as
-- the owner (each starts with model_lock(..., 'write'); source_bind with
-- missing_ok, which checks CREATE on the schema for a new model).
GRANT EXECUTE ON FUNCTION
    perpca_internal.train(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb,
                          pg_catalog.bool, pg_catalog.text, pg_catalog.text[]),
    perpca_internal.refresh(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool, pg_catalog.text),
    perpca_internal.run_as(pg_catalog.regrole, pg_catalog.text, "any"),
    perpca_internal.run_as_caught(pg_catalog.regrole, pg_catalog.text, "any"),
    perpca_internal.source_bind(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text),
    perpca_internal.model_lock(pg_catalog.text, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.text),
    perpca_internal.model_refresh(pg_catalog.text, pg_catalog.text, pg_catalog.bool),
    perpca_internal.model_store(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb,
                                pg_catalog.text, pg_catalog.text[]),
    perpca_internal.history_append(pg_catalog.text, pg_catalog.text, pg_catalog.jsonb),
    perpca_internal.model_fill_clients(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text,
                                       pg_catalog.float8[], pg_catalog.text, pg_catalog.text,
                                       @extschema@.perpca_stats, pg_catalog.float8[]),
    perpca_internal.model_personalize(pg_catalog.text, pg_catalog.text, pg_catalog.text, @extschema@.perpca_stats,
                                      pg_catalog.int4, pg_catalog.float8[])
    TO PUBLIC;

-- Not granted (superusers and roles granted EXECUTE only): functions no
-- path of a plain caller reaches -- model_name_parts, fit_options,
-- evaluate_stats, query_columns, stats_query (C calls their code
-- directly) and f_upper_quantile (for the tests).
