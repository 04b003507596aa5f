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
    'refits a model from its bound query and options as its owner, swaps it in atomically and returns its history row; warm => true: nothing fitted when nothing changed; wait => true: queues behind another refresh; on_error => ''record'': a failure is a row (README: Reference, Models)';
