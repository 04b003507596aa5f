-- ==========================================================================
-- Refresh: refit a stored model from its source query (warm-started from
-- the stored components).
--
-- The source query is text written by the model's owner.  Like REFRESH
-- MATERIALIZED VIEW, a refresh runs it (and writes the model) as the owner,
-- inside a security-restricted operation, with the search_path recorded
-- when the model was trained (<model>_info.search_path; models stored
-- before 0.3.0: pg_catalog, perpca's schema); only the owner or a member of
-- the owning role may refresh.  perpca_refresh is C (src/model_write.c).
-- ==========================================================================

-- Run one SQL command as a role (a model's owner), restricted (src/run_as_owner.c).
CREATE OR REPLACE FUNCTION perpca_internal.run_as(role regrole, command text, VARIADIC args "any")
RETURNS jsonb
    AS 'MODULE_PATHNAME', 'perpca_run_as' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.run_as(regrole, text, "any") IS
    'internal: runs command (parameters $1.. from args) as role, inside a security-restricted operation with search_path = pg_catalog, pg_temp, and returns the first column (jsonb) of its first row; insufficient_privilege unless the caller has the role''s privileges';

-- The refresh itself, run as the model's owner: the source query into the
-- stage, the fit and the store, and what changed.
CREATE OR REPLACE FUNCTION perpca_internal.model_refresh(schema_name text, base text, warm boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    components text := format('%I.%I', schema_name, base || '_components');
    clients text := format('%I.%I', schema_name, base || '_clients');
    info text := format('%I.%I', schema_name, base || '_info');
    m jsonb;
    options jsonb;
    path text;
    fit record;
    use_start boolean;
    before text[];
    after text[];
    version bigint;
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the model's owner's privileges, checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
    EXECUTE format('SELECT to_jsonb(i) FROM %s i', info) INTO STRICT m;
    -- The effective options the model recorded; a model stored by 0.1.0 has
    -- them in its option columns (rounds_max: the rounds option).
    options := coalesce(m -> 'options', (m - 'rounds') || jsonb_build_object('rounds', m -> 'rounds_max'))
               || jsonb_build_object('n_global', m -> 'n_global', 'n_local', m -> 'n_local');
    path := coalesce(m ->> 'search_path', 'pg_catalog, @extschema@');
    EXECUTE format('SELECT array_agg(client) FROM %s', clients) INTO before;
    use_start := warm AND options ->> 'method' = 'perpca';
    -- warm: the stored U is one of the L-BFGS solver's starts (init 'best'
    -- keeps the best objective); the paper's solver continues from it
    options := options || jsonb_build_object(
        'init', CASE WHEN use_start AND options ->> 'solver' = 'paper' THEN 'given'
                     WHEN use_start THEN 'best'
                     WHEN options ->> 'init' = 'given' THEN NULL
                     ELSE options ->> 'init' END,
        'start', CASE WHEN use_start THEN format('SELECT client, kind, component, pc FROM %s', components) END,
        'verbose', false);

    PERFORM perpca_internal.stage_fill(m ->> 'source_query', path);
    SELECT * INTO STRICT fit
      FROM perpca_internal.model_store(schema_name, base, m ->> 'source_query', options, path,
                                       CASE WHEN jsonb_typeof(m -> 'feature_names') = 'array' THEN
                                           ARRAY(SELECT t.e FROM jsonb_array_elements_text(m -> 'feature_names')
                                                                 WITH ORDINALITY AS t(e, i) ORDER BY t.i) END);

    EXECUTE format('SELECT array_agg(client) FROM %s', clients) INTO after;
    EXECUTE format('SELECT version FROM %s', info) INTO STRICT version;
    RETURN jsonb_build_object(
        'model_name', fit.model_name, 'version', version, 'n_clients', fit.n_clients,
        'clients_added', (SELECT count(*) FROM unnest(after) AS a(c) WHERE a.c <> ALL (coalesce(before, '{}'))),
        'clients_dropped', (SELECT count(*) FROM unnest(before) AS b(c) WHERE b.c <> ALL (coalesce(after, '{}'))),
        'warm_start', use_start, 'rounds_run', fit.rounds_run, 'converged', fit.converged,
        'objective', fit.objective);
END
$$;
COMMENT ON FUNCTION perpca_internal.model_refresh(text, text, boolean) IS
    'internal: the body of perpca_refresh, run as the model''s owner: stages the source query with the recorded search_path, refits with the recorded options, stores';

-- The body of perpca_refresh (src/model_write.c resolved the name and
-- locked the model with model_lock.c, which checked its owner).
CREATE OR REPLACE FUNCTION perpca_internal.refresh(schema_name text, base text, model text, warm boolean)
RETURNS TABLE (model_name text, version bigint, n_clients int, clients_added int, clients_dropped int,
               warm_start boolean, rounds_run int, converged boolean, objective float8)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    owner regrole := perpca_internal.model_owner(schema_name, base);
    r jsonb;
BEGIN
    PERFORM perpca_internal.model_check_owner(model, owner);
    PERFORM perpca_internal.stage_create(owner);
    r := perpca_internal.run_as(owner, 'SELECT perpca_internal.model_refresh($1, $2, $3)',
                                schema_name, base, warm);
    DROP TABLE pg_temp.perpca_train_src;
    RETURN QUERY SELECT r ->> 'model_name', (r ->> 'version')::bigint, (r ->> 'n_clients')::int,
                        (r ->> 'clients_added')::int, (r ->> 'clients_dropped')::int,
                        (r ->> 'warm_start')::boolean, (r ->> 'rounds_run')::int,
                        (r ->> 'converged')::boolean, (r ->> 'objective')::float8;
END
$$;
COMMENT ON FUNCTION perpca_internal.refresh(text, text, text, boolean) IS
    'internal: the body of perpca_refresh (the caller holds the model''s write lock): stages and refits the model as its owner';

CREATE OR REPLACE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false)
RETURNS TABLE (model_name text, version bigint, n_clients int, clients_added int, clients_dropped int,
               warm_start boolean, rounds_run int, converged boolean, objective float8)
    AS 'MODULE_PATHNAME', 'perpca_refresh' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_refresh(text, boolean, boolean) IS
    'refits a stored model from its recorded source query and options and swaps the result in atomically (the old model stays if the refit fails); runs as the model''s owner inside a security-restricted operation (like REFRESH MATERIALIZED VIEW) with the search_path recorded when the model was trained, so it refreshes the same from any session; only the owner or a member of the owning role may refresh (insufficient_privilege otherwise); warm => true starts from the stored components; clients new in the query get local components, clients gone from it (including personalized ones) are dropped; a second refresh of the same model fails at once (lock_not_available) unless wait => true';
