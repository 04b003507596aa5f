-- ==========================================================================
-- Refresh: refit a stored model from its source query (warm-started from
-- the stored components) and merge statistics kept per period.
--
-- The source query is text written by the model's owner.  Like REFRESH
-- MATERIALIZED VIEW, a refresh runs it (and writes the model) as the owner,
-- inside a security-restricted operation with search_path = pg_catalog,
-- perpca's schema, pg_temp; only the owner or a member of the owning role
-- may refresh.
-- ==========================================================================

-- Two perpca_stats values merged (NULLs skipped), for upserts of per-period statistics.
CREATE OR REPLACE FUNCTION perpca_merge(a perpca_stats, b perpca_stats) RETURNS perpca_stats
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT @extschema@.perpca_merge(v.s) FROM (VALUES (a), (b)) AS v(s));
COMMENT ON FUNCTION perpca_merge(perpca_stats, perpca_stats) IS
    'merges two perpca_stats values as the perpca_merge aggregate does (a NULL is skipped), e.g. in INSERT ... ON CONFLICT DO UPDATE SET stats = perpca_merge(t.stats, excluded.stats)';

-- Run one SQL command as the owner of relation (src/model_store.c).
CREATE OR REPLACE FUNCTION perpca_internal.perpca_run_as_owner(relation regclass, schema regnamespace, command text,
                                                    VARIADIC args "any")
RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.perpca_run_as_owner(regclass, regnamespace, text, "any") IS
    'internal: runs command (parameters $1.. from args) as the owner of relation, inside a security-restricted operation with search_path = pg_catalog, schema, pg_temp, and returns the first column (jsonb) of its first row; insufficient_privilege unless the caller has the owner''s privileges';

-- The refresh itself, run as the model's owner: the source query into the
-- stage, the fit and the store, and what changed.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_refresh(schema_name text, base text, warm boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    components text := pg_catalog.format('%I.%I', schema_name, pg_catalog.concat(base, '_components'));
    clients text := pg_catalog.format('%I.%I', schema_name, pg_catalog.concat(base, '_clients'));
    info text := pg_catalog.format('%I.%I', schema_name, pg_catalog.concat(base, '_info'));
    m jsonb;
    fit record;
    use_start boolean;
    before text[];
    after text[];
    version bigint;
BEGIN
    EXECUTE pg_catalog.format('SELECT pg_catalog.to_jsonb(i) FROM %s i', info) INTO STRICT m;
    -- Models stored by 0.1.0 have no options column: their option columns hold the same.
    m := m OPERATOR(pg_catalog.||) coalesce(m OPERATOR(pg_catalog.->) 'options', '{}'::jsonb);
    EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(client) FROM %s', clients) INTO before;
    use_start := warm AND (m OPERATOR(pg_catalog.->>) 'method') OPERATOR(pg_catalog.=) 'perpca';

    PERFORM perpca_internal.perpca_stage_fill(m OPERATOR(pg_catalog.->>) 'source_query');
    SELECT * INTO STRICT fit
      FROM perpca_internal.perpca_model_store(schema_name, base, m OPERATOR(pg_catalog.->>) 'source_query',
               (m OPERATOR(pg_catalog.->>) 'n_global')::int, (m OPERATOR(pg_catalog.->>) 'n_local')::int,
               rounds => coalesce((m OPERATOR(pg_catalog.->>) 'rounds')::int, (m OPERATOR(pg_catalog.->>) 'rounds_max')::int),
               tolerance => (m OPERATOR(pg_catalog.->>) 'tolerance')::float8,
               step => (m OPERATOR(pg_catalog.->>) 'step')::float8,
               update => m OPERATOR(pg_catalog.->>) 'update',
               retraction => m OPERATOR(pg_catalog.->>) 'retraction',
               -- warm: the stored U is one of the L-BFGS solver's starts (init 'best'
               -- keeps the best objective); the paper's solver continues from it
               init => CASE WHEN use_start AND (m OPERATOR(pg_catalog.->>) 'solver') OPERATOR(pg_catalog.=) 'paper' THEN 'given'
                            WHEN use_start THEN 'best'
                            WHEN (m OPERATOR(pg_catalog.->>) 'init') OPERATOR(pg_catalog.=) 'given' THEN NULL
                            ELSE m OPERATOR(pg_catalog.->>) 'init' END,
               seed => (m OPERATOR(pg_catalog.->>) 'seed')::bigint,
               center => m OPERATOR(pg_catalog.->>) 'center',
               weights => m OPERATOR(pg_catalog.->>) 'weights',
               method => m OPERATOR(pg_catalog.->>) 'method',
               verbose => false,
               adaptive => (m OPERATOR(pg_catalog.->>) 'adaptive')::boolean,
               start => CASE WHEN use_start
                             THEN pg_catalog.format('SELECT client, kind, component, pc FROM %s', components)
                        END,
               solver => m OPERATOR(pg_catalog.->>) 'solver',
               -- models stored before the scale option have none: unscaled
               scale => m OPERATOR(pg_catalog.->>) 'scale');

    EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(client) FROM %s', clients) INTO after;
    EXECUTE pg_catalog.format('SELECT version FROM %s', info) INTO STRICT version;
    RETURN pg_catalog.jsonb_build_object(
        'model_name', fit.model_name, 'version', version, 'n_clients', fit.n_clients,
        'clients_added', (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(after) AS a(c)
                           WHERE a.c OPERATOR(pg_catalog.<>) ALL (coalesce(before, '{}'))),
        'clients_dropped', (SELECT pg_catalog.count(*) FROM pg_catalog.unnest(before) AS b(c)
                             WHERE b.c OPERATOR(pg_catalog.<>) ALL (coalesce(after, '{}'))),
        'warm_start', use_start, 'rounds_run', fit.rounds_run, 'converged', fit.converged,
        'objective', fit.objective);
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_refresh(text, text, boolean) IS
    'internal: the body of perpca_refresh, run as the model''s owner: stages the source query, refits, stores';

CREATE OR REPLACE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false)
RETURNS TABLE (model_name text, version bigint, n_clients int, clients_added int, clients_dropped int,
               warm_start boolean, rounds_run int, converged boolean, objective float8)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables(model);
    owner regrole;
    r jsonb;
BEGIN
    IF NOT t.present THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object',
            DETAIL = pg_catalog.format('No table %s was found.', t.info),
            HINT = 'Create it with perpca_train(). ' OPERATOR(pg_catalog.||) perpca_internal.perpca_model_name_rule();
    END IF;
    owner := perpca_internal.perpca_model_owner(t.schema_name, t.base);
    PERFORM perpca_internal.perpca_model_check_owner(model, owner);
    -- Lock first, then read: a refresh that waited starts from the model the other one stored.
    PERFORM perpca_internal.perpca_model_lock(model, t.schema_name, t.base, wait);
    PERFORM perpca_internal.perpca_stage_create(owner);
    r := perpca_internal.perpca_run_as_owner(t.info::regclass, '@extschema@'::regnamespace,
             'SELECT perpca_internal.perpca_model_refresh($1, $2, $3)', t.schema_name, t.base, warm);
    DROP TABLE pg_temp.perpca_train_src;
    RETURN QUERY SELECT r OPERATOR(pg_catalog.->>) 'model_name', (r OPERATOR(pg_catalog.->>) 'version')::bigint,
                        (r OPERATOR(pg_catalog.->>) 'n_clients')::int,
                        (r OPERATOR(pg_catalog.->>) 'clients_added')::int,
                        (r OPERATOR(pg_catalog.->>) 'clients_dropped')::int,
                        (r OPERATOR(pg_catalog.->>) 'warm_start')::boolean,
                        (r OPERATOR(pg_catalog.->>) 'rounds_run')::int,
                        (r OPERATOR(pg_catalog.->>) 'converged')::boolean,
                        (r OPERATOR(pg_catalog.->>) 'objective')::float8;
END
$$;
COMMENT ON FUNCTION perpca_refresh(text, boolean, boolean) IS
    'refits a stored model from its recorded source query and options and swaps the result in atomically (the old model stays if the refit fails); runs as the model''s owner inside a security-restricted operation with search_path = pg_catalog, perpca''s schema, pg_temp (like REFRESH MATERIALIZED VIEW), and only the owner or a member of the owning role may refresh (insufficient_privilege otherwise); warm => true starts from the stored components; clients new in the query get local components, clients gone from it (including personalized ones) are dropped; a second refresh of the same model fails at once (lock_not_available) unless wait => true';
