-- ==========================================================================
-- Refresh: refit a stored model from its source query (warm-started from
-- the stored components).
--
-- The source query is the owner's, bound once when the model was trained:
-- the view <model>_source.  Like REFRESH MATERIALIZED VIEW, a refresh reads
-- it (and writes the model) as the owner, inside a security-restricted
-- operation, and parses no text: what was planted in a schema of the
-- recorded search_path after training cannot bind into it.  A model stored
-- before 0.4.0 (<model>_info.source_view NULL) has its text bound into the
-- view at its first refresh, with the search_path it recorded
-- (<model>_info.search_path; models stored before 0.3.0: pg_catalog,
-- perpca's schema).  Only the owner or a member of the owning role may
-- refresh.  perpca_refresh is C (src/model_write.c), from the call to the
-- last row: as the owner through src/run_as_owner.c, writing through
-- src/model_store.c.
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false,
                                          on_error text DEFAULT 'raise')
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean,
               sketch_bound float8)
    AS 'MODULE_PATHNAME', 'perpca_refresh' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_refresh(text, boolean, boolean, text) IS
    'refits a stored model from its source query (bound when it was trained, in the view <model>_source, which it reads; a model stored before 0.4.0 binds its recorded text there at its first refresh) and its recorded options and swaps the result in atomically, and returns the row it appends to the model''s history (perpca_model_history); runs as the model''s owner inside a security-restricted operation (like REFRESH MATERIALIZED VIEW) with search_path = pg_catalog, pg_temp, so it refreshes the same from any session; only the owner or a member of the owning role may refresh (insufficient_privilege otherwise); warm => true starts from the stored components and fits nothing when the statistics, options and feature names are bit for bit those of the stored model (outcome ''unchanged'', rounds_run 0, a DEBUG1 message: the history row is the record); warm => false always refits from scratch; clients new in the query get local components, clients gone from it (including personalized ones) are dropped; a second refresh of the same model fails at once (lock_not_available) unless wait => true; on_error ''raise'' (default): a failed refit is an error; ''record'': whatever the refit raises is caught (a 57014 of the owner''s code too; not a cancel or timeout of the caller''s statement), the old model stays, a WARNING is raised and the row (outcome ''failed'', converged false, warning ''failed: SQLSTATE: message'') is appended and returned';
