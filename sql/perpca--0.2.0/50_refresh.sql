-- ==========================================================================
-- Refresh: refit a stored model from its source query (warm-started from
-- the stored components) and merge statistics kept per period
-- ==========================================================================

-- Two perpca_stats values merged (NULLs skipped), for upserts of per-period statistics.
CREATE FUNCTION perpca_merge(a perpca_stats, b perpca_stats) RETURNS perpca_stats
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT @extschema@.perpca_merge(v.s) FROM (VALUES (a), (b)) AS v(s));
COMMENT ON FUNCTION perpca_merge(perpca_stats, perpca_stats) IS
    'merges two perpca_stats values as the perpca_merge aggregate does (a NULL is skipped), e.g. in INSERT ... ON CONFLICT DO UPDATE SET stats = perpca_merge(t.stats, excluded.stats)';

-- Lock a model against other writers (readers go on); lock_not_available when busy and not wait.
CREATE FUNCTION perpca_model_lock(model text, t record, wait boolean) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
BEGIN
    EXECUTE pg_catalog.format('LOCK TABLE %s, %s, %s IN SHARE ROW EXCLUSIVE MODE%s',
                              t.info, t.components, t.clients, CASE WHEN wait THEN '' ELSE ' NOWAIT' END);
EXCEPTION WHEN lock_not_available THEN
    RAISE EXCEPTION 'model "%" is being refreshed or changed by another transaction', model
        USING ERRCODE = 'lock_not_available',
              DETAIL = 'Another transaction holds a lock on the model''s tables that excludes writers.',
              HINT = 'Try again when it has finished, or pass wait => true to wait for it.';
END
$$;
COMMENT ON FUNCTION perpca_model_lock(text, record, boolean) IS
    'internal: locks the tables of a model in SHARE ROW EXCLUSIVE mode (readers go on, writers wait), failing at once unless wait';

CREATE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false)
RETURNS TABLE (model_name text, version bigint, n_clients int, clients_added int, clients_dropped int,
               warm_start boolean, rounds_run int, converged boolean, objective float8)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    t record := @extschema@.perpca_model_tables_existing(model);
    m record;
    fit record;
    use_start boolean;
    before text[];
    after text[];
BEGIN
    -- Lock first, then read: a refresh that waited starts from the model the other one stored.
    PERFORM @extschema@.perpca_model_lock(model, t, wait);
    EXECUTE pg_catalog.format('SELECT * FROM %s', t.info) INTO STRICT m;
    EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(client) FROM %s', t.clients) INTO before;
    use_start := warm AND m.method = 'perpca';

    SELECT * INTO STRICT fit
      FROM @extschema@.perpca_train(model, m.source_query, m.n_global, m.n_local,
               rounds => m.rounds_max, tolerance => m.tolerance, step => m.step,
               update => m.update, retraction => m.retraction,
               init => CASE WHEN use_start THEN 'given' WHEN m.init = 'given' THEN NULL ELSE m.init END,
               seed => m.seed, center => m.center, weights => m.weights, method => m.method,
               adaptive => m.adaptive, replace => true,
               start => CASE WHEN use_start
                             THEN pg_catalog.format('SELECT client, kind, component, pc FROM %s', t.components)
                        END);

    EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(client) FROM %s', t.clients) INTO after;
    model_name := fit.model_name;
    EXECUTE pg_catalog.format('SELECT version FROM %s', t.info) INTO STRICT version;
    n_clients := fit.n_clients;
    clients_added := (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(after) AS a(c)
                       WHERE a.c <> ALL (coalesce(before, '{}')));
    clients_dropped := (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(before) AS b(c)
                         WHERE b.c <> ALL (coalesce(after, '{}')));
    warm_start := use_start;
    rounds_run := fit.rounds_run;
    converged := fit.converged;
    objective := fit.objective;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION perpca_refresh(text, boolean, boolean) IS
    'refits a stored model from its recorded source query and options and swaps the result in atomically (the old model stays if the refit fails); warm => true starts from the stored components; clients new in the query get local components, clients gone from it (including personalized ones) are dropped; a second refresh of the same model fails at once (lock_not_available) unless wait => true';

