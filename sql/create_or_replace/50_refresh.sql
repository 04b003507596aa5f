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
-- refresh.  perpca_refresh is C (src/model_write.c).
-- ==========================================================================

-- Run one SQL command as a role (a model's owner), restricted (src/run_as_owner.c).
CREATE OR REPLACE FUNCTION perpca_internal.run_as(role regrole, command text, VARIADIC args "any")
RETURNS jsonb
    AS 'MODULE_PATHNAME', 'perpca_run_as' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.run_as(regrole, text, "any") IS
    'internal: runs command (parameters $1.. from args) as role, inside a security-restricted operation with search_path = pg_catalog, pg_temp, and returns the first column (jsonb) of its first row; insufficient_privilege unless the caller has the role''s privileges';

-- The same in a subtransaction, for on_error => 'record': whatever the
-- command raises (a query_canceled of the owner's code included) comes back
-- as {"error": {"sqlstate", "message"}}; only an interrupt of the caller's
-- statement (cancel, statement or lock timeout) is raised again.
CREATE OR REPLACE FUNCTION perpca_internal.run_as_caught(role regrole, command text, VARIADIC args "any")
RETURNS jsonb
    AS 'MODULE_PATHNAME', 'perpca_run_as_caught' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.run_as_caught(regrole, text, "any") IS
    'internal: run_as in a subtransaction: an error of the command comes back as {"error": {"sqlstate", "message"}} (the subtransaction rolled back), except an interrupt of the caller''s statement (a cancel, a statement or lock timeout), which is raised';

-- The refresh itself, run as the model's owner: the source query into the
-- stage; when the digest of the staged statistics (and options and feature
-- names) equals the stored one and warm is true, nothing is fitted;
-- otherwise the fit and the store.  What happened, as jsonb (a row of the
-- history without kind, at, seconds and role).
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
    fit jsonb;
    staged jsonb;
    names text[];
    digest text;
    use_start boolean;
    personalized boolean := true;
    before text[];
    after text[];
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the model's owner's privileges, checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
    EXECUTE format('SELECT to_jsonb(i) FROM %s i', info) INTO STRICT m;
    -- The effective options the model recorded; a model stored by 0.1.0 has
    -- them in its option columns (rounds_max: the rounds option).
    options := coalesce(m -> 'options', (m - 'rounds') || jsonb_build_object('rounds', m -> 'rounds_max'))
               || jsonb_build_object('n_global', m -> 'n_global', 'n_local', m -> 'n_local');
    path := coalesce(m ->> 'search_path', 'pg_catalog, @extschema@');
    -- The query was bound at train, in the view <model>_source; a model
    -- stored before 0.4.0 (no source_view) has its text bound here, once.
    -- (source_view is recorded at once: an unchanged refresh stores nothing else)
    IF m ->> 'source_view' IS NULL THEN
        fit := perpca_internal.source_bind(schema_name, base, m ->> 'source_query', path);
        PERFORM perpca_internal.model_columns_add(schema_name, base, 'info');
        EXECUTE format('UPDATE %s SET source_view = $1', info) USING fit ->> 'view';
    END IF;
    staged := perpca_internal.stage_fill(schema_name, base, coalesce(options ->> 'missing', 'error'));
    -- A query of feature columns names the features at every refresh.
    names := CASE WHEN jsonb_typeof(staged -> 'feature_names') = 'array' THEN
                      ARRAY(SELECT t.e FROM jsonb_array_elements_text(staged -> 'feature_names')
                                            WITH ORDINALITY AS t(e, i) ORDER BY t.i)
                  WHEN jsonb_typeof(m -> 'feature_names') = 'array' THEN
                      ARRAY(SELECT t.e FROM jsonb_array_elements_text(m -> 'feature_names')
                                            WITH ORDINALITY AS t(e, i) ORDER BY t.i) END;
    -- (a model stored before 0.3.0, or missing columns of its current form, is fitted and stored anew)
    IF warm AND m -> 'options' IS NOT NULL
       AND m ?& ARRAY['client_type', 'scale_factors', 'constant_features', 'search_path', 'feature_names',
                      'stats_digest']
       AND EXISTS (SELECT FROM pg_attribute WHERE attrelid = clients::regclass AND attname = 'residual_moments'
                                             AND NOT attisdropped) THEN
        -- (personalized clients are not in the query: a refresh drops them, so it fits)
        EXECUTE format('SELECT EXISTS (SELECT FROM %s WHERE source = %L)', clients, 'personalize') INTO personalized;
    END IF;
    IF warm AND m -> 'options' IS NOT NULL AND NOT personalized THEN
        digest := perpca_internal.stage_digest(m -> 'options', names);
        IF digest = m ->> 'stats_digest' THEN
            RETURN jsonb_build_object(
                'outcome', 'unchanged', 'version', m -> 'version', 'clients', m -> 'n_clients',
                'rows', (SELECT sum(@extschema@.perpca_count(s.stats)) FROM pg_temp.perpca_train_src s),
                'rounds_run', 0, 'converged', m -> 'converged', 'objective', m -> 'objective',
                'clients_added', 0, 'clients_dropped', 0, 'digest', digest,
                'warning', 'unchanged: the statistics, options and feature names are those of the stored model; nothing was fitted');
        END IF;
    END IF;

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

    fit := perpca_internal.model_store(schema_name, base, m ->> 'source_query', options, path, names);

    EXECUTE format('SELECT array_agg(client) FROM %s', clients) INTO after;
    RETURN jsonb_build_object(
        'outcome', 'fitted', 'version', fit -> 'version', 'clients', fit -> 'n_clients', 'rows', fit -> 'rows',
        'rounds_run', fit -> 'rounds_run', 'converged', fit -> 'converged', 'objective', fit -> 'objective',
        'clients_added', (SELECT count(*) FROM unnest(after) AS a(c) WHERE a.c <> ALL (coalesce(before, '{}'))),
        'clients_dropped', (SELECT count(*) FROM unnest(before) AS b(c) WHERE b.c <> ALL (coalesce(after, '{}'))),
        'warm_start', use_start, 'starts', fit -> 'starts', 'digest', fit -> 'digest',
        'warning', CASE WHEN NOT (fit ->> 'converged')::boolean THEN
                       format('did not converge in %s rounds', fit ->> 'rounds_run') END);
END
$$;
COMMENT ON FUNCTION perpca_internal.model_refresh(text, text, boolean) IS
    'internal: the body of perpca_refresh, run as the model''s owner: stages the source query with the recorded search_path; unless warm is false, unchanged statistics (the stored digest) are not fitted again; else refits with the recorded options and stores';

-- The body of perpca_refresh (src/model_write.c resolved the name and
-- locked the model with model_lock.c, which checked its owner).  With
-- on_error 'record', whatever the refit raises is caught (run_as_caught: a
-- 57014 of the owner's code too; only a cancel or timeout of the caller's
-- statement is not), the model stays as it was, and the failure is the
-- history's row.
CREATE OR REPLACE FUNCTION perpca_internal.refresh(schema_name text, base text, model text, warm boolean,
                                                   on_error text)
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    began timestamptz := clock_timestamp();
    owner regrole := perpca_internal.model_owner(schema_name, base);
    r jsonb;
    state text;
    message text;
BEGIN
    PERFORM perpca_internal.model_check_owner(model, owner);
    PERFORM perpca_internal.stage_create(owner);
    IF on_error = 'record' THEN
        r := perpca_internal.run_as_caught(owner, 'SELECT perpca_internal.model_refresh($1, $2, $3)',
                                           schema_name, base, warm);
        IF r ? 'error' THEN
            state := r -> 'error' ->> 'sqlstate';
            message := r -> 'error' ->> 'message';
            RAISE WARNING 'refresh of model "%" failed: %', model, message
                USING DETAIL = format('SQLSTATE %s. The model is unchanged; the failure is in its history.', state),
                      HINT = format('SELECT * FROM perpca_model_history(%L) shows it.', model);
            r := jsonb_build_object('outcome', 'failed', 'rounds_run', 0, 'converged', false,
                                    'warm_start', warm, 'warning', format('failed: %s: %s', state, message));
        END IF;
    ELSE
        r := perpca_internal.run_as(owner, 'SELECT perpca_internal.model_refresh($1, $2, $3)',
                                    schema_name, base, warm);
    END IF;
    DROP TABLE pg_temp.perpca_train_src;
    IF r ->> 'outcome' = 'unchanged' THEN
        -- DEBUG1, not NOTICE: the history row is the record, and a nightly
        -- pg_cron refresh of unchanged data should not write to the server log
        RAISE DEBUG 'model "%" is unchanged: nothing was fitted', model
            USING HINT = 'perpca_refresh(..., warm => false) refits it anyway.';
    END IF;
    r := perpca_internal.run_as(owner, 'SELECT perpca_internal.history_append($1, $2, $3)', schema_name, base,
             r || jsonb_build_object('at', clock_timestamp(), 'kind', 'refresh',
                                     'seconds', extract(epoch FROM clock_timestamp() - began),
                                     'role', current_user));
    RETURN QUERY SELECT * FROM jsonb_to_record(r) AS h(
        version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
        converged boolean, objective float8, seconds float8, role name, warning text,
        entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean);
END
$$;
COMMENT ON FUNCTION perpca_internal.refresh(text, text, text, boolean, text) IS
    'internal: the body of perpca_refresh (the caller holds the model''s write lock): stages and refits the model as its owner, appends the history row and returns it; on_error ''record'' catches whatever the refit raises (not a cancel or timeout of the caller''s statement) into that row';

CREATE OR REPLACE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false,
                                          on_error text DEFAULT 'raise')
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean)
    AS 'MODULE_PATHNAME', 'perpca_refresh' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_refresh(text, boolean, boolean, text) IS
    'refits a stored model from its source query (bound when it was trained, in the view <model>_source, which it reads; a model stored before 0.4.0 binds its recorded text there at its first refresh) and its recorded options and swaps the result in atomically, and returns the row it appends to the model''s history (perpca_model_history); runs as the model''s owner inside a security-restricted operation (like REFRESH MATERIALIZED VIEW) with search_path = pg_catalog, pg_temp, so it refreshes the same from any session; only the owner or a member of the owning role may refresh (insufficient_privilege otherwise); warm => true starts from the stored components and fits nothing when the statistics, options and feature names are bit for bit those of the stored model (outcome ''unchanged'', rounds_run 0, a DEBUG1 message: the history row is the record); warm => false always refits from scratch; clients new in the query get local components, clients gone from it (including personalized ones) are dropped; a second refresh of the same model fails at once (lock_not_available) unless wait => true; on_error ''raise'' (default): a failed refit is an error; ''record'': whatever the refit raises is caught (a 57014 of the owner''s code too; not a cancel or timeout of the caller''s statement), the old model stays, a WARNING is raised and the row (outcome ''failed'', converged false, warning ''failed: SQLSTATE: message'') is appended and returned';
