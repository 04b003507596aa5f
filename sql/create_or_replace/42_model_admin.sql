-- ==========================================================================
-- Model administration: locking a model's
-- tables (the lock itself is src/model_lock.c: one order for every function
-- that touches a model), dropping a model and personalizing a client.
--
-- Search path: every function here pins search_path = pg_catalog, pg_temp
-- or is C; a model name is resolved by the C code with the caller's
-- search_path before anything else runs.  Ownership: a model that belongs
-- to another role is written as that role, inside a security-restricted
-- operation (perpca_internal.perpca_run_as_owner, see 50_refresh.sql).
-- ==========================================================================

-- Find and lock a model's tables in the one order of src/model_lock.c: for
-- writers and drop first the model's name lock (which no SQL command can
-- take, so no other role can hold it; it also serializes the creation of a
-- new model), then <model>_info, _clients, _components.  purpose: 'read'
-- (ACCESS SHARE), 'write' (SHARE ROW EXCLUSIVE: readers go on, writers
-- wait; the model may not exist yet), 'drop' (ACCESS EXCLUSIVE).  Checks that
-- the tables are plain tables of one owner and, for write and drop, that the
-- caller has the owner's privileges (before any lock is requested).
-- undefined_object for a missing model (read, drop; unless missing_ok),
-- lock_not_available when busy and not wait, read_only_sql_transaction for
-- write and drop on a hot standby.  An unqualified name is resolved with the
-- search_path the function is called with.  Messages name the model as
-- display (default: model).
CREATE OR REPLACE FUNCTION perpca_internal.model_lock(model text, purpose text, wait boolean DEFAULT true,
                                                      missing_ok boolean DEFAULT false, display text DEFAULT NULL,
                                                      OUT present boolean, OUT schema_name text, OUT base text,
                                                      OUT info oid, OUT clients oid, OUT components oid,
                                                      OUT owner oid)
RETURNS record
    AS 'MODULE_PATHNAME', 'perpca_model_lock_sql' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.model_lock(text, text, boolean, boolean, text) IS
    'internal: finds and locks a model''s tables in the one order of every perpca function (name lock for write/drop, then info, clients, components), after checking kind, owner and the caller''s rights; see src/model_lock.c';

-- The lock of a model to be written, for the PL/pgSQL write path: model_lock(..., 'write').
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_lock(model text, schema_name text, base text, wait boolean) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write', wait, false, model);
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_lock(text, text, text, boolean) IS
    'internal: perpca_internal.model_lock(schema_name.base, ''write'', wait): the model''s name lock, then its tables in SHARE ROW EXCLUSIVE mode (readers go on, writers wait), failing at once unless wait';

CREATE OR REPLACE FUNCTION perpca_drop(model text, if_exists boolean DEFAULT false) RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_drop(text, boolean) IS
    'drops the tables of a model (after locking them in the order every perpca function uses, and checking that they are plain tables of one owner whose privileges the caller has, and that the info table is a perpca model''s); with if_exists => true a missing model is only a notice';

-- Local components of one client, computed and stored; the caller holds the model's lock.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_personalize(schema_name text, base text, client text,
                                                         stats perpca_stats, n_local int)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp SET extra_float_digits = 3 AS $$
DECLARE
    components text := format('%I.%I', schema_name, base || '_components');
    info text := format('%I.%I', schema_name, base || '_info');
    m record;
    u float8[];
    centre float8[];
    factors float8[] := perpca_internal.perpca_model_scale_factors(info);
    scaled @extschema@.perpca_stats;
    result jsonb;
BEGIN
    EXECUTE format('SELECT d, n_local, center, global_mean FROM %s', info) INTO STRICT m;
    IF @extschema@.perpca_dim(stats) <> m.d THEN
        RAISE EXCEPTION 'stats has dimension %, expected %', @extschema@.perpca_dim(stats), m.d
            USING ERRCODE = 'data_exception';
    END IF;
    EXECUTE format('SELECT array_agg(pc ORDER BY component) FROM %s WHERE kind = %L', components, 'global')
        INTO u;
    -- The local components live where the model's components do: in the scaled features.
    scaled := perpca_internal.scale_stats(stats, factors);
    centre := CASE m.center WHEN 'client' THEN @extschema@.perpca_mean(scaled)
                            WHEN 'global' THEN perpca_internal.scale_vector(m.global_mean, factors)
                            ELSE array_fill(0::float8, ARRAY[m.d]) END;
    EXECUTE format('DELETE FROM %s WHERE kind = %L AND client = $1', components, 'local') USING client;
    EXECUTE format('INSERT INTO %s (client, kind, component, pc, variance)
                    SELECT $1, %L, l.component, l.pc, l.variance
                      FROM @extschema@.perpca_local_pcs($2, $3, $4, $5) l',
                   components, 'local')
        USING client, scaled, u, coalesce(n_local, m.n_local), centre;
    PERFORM perpca_internal.perpca_model_fill_clients(schema_name, base, '(SELECT $4 AS client, $5 AS stats)',
                                                      m.center, m.global_mean, 'personalize', client, stats,
                                                      factors);
    -- nextval() first: Citus refuses it inside an UPDATE of a reference table.
    EXECUTE format('UPDATE %s SET version = $1', info) USING nextval('@extschema@.perpca_model_version');
    EXECUTE format('SELECT jsonb_agg(jsonb_build_object(''component'', component, ''pc'', pc, ''variance'', variance)
                                     ORDER BY component)
                      FROM %s WHERE kind = %L AND client = $1', components, 'local')
        INTO result USING client;
    RETURN result;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_personalize(text, text, text, perpca_stats, int) IS
    'internal: computes and stores the local components of one client with the global components frozen';

-- The text form of a client key, after checking that its type can match the model's keys.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_key(model text, key_type regtype, model_key_type text, key text)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF key IS NULL THEN
        RAISE EXCEPTION 'client must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- A string key matches any model (keys are stored as text, as 0.1.0 required them).
    IF (SELECT typcategory FROM pg_type WHERE oid = key_type) = 'S'
       OR format_type(key_type, NULL) = coalesce(model_key_type, 'text') THEN
        RETURN key;
    END IF;
    RAISE EXCEPTION 'client key of type % cannot match model "%"', format_type(key_type, NULL), model
        USING ERRCODE = 'datatype_mismatch',
              DETAIL = format('The model was trained on client keys of type %s.', coalesce(model_key_type, 'text')),
              HINT = format('Pass the key as %s (or as text).', coalesce(model_key_type, 'text'));
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_key(text, regtype, text, text) IS
    'internal: the text form of a client key whose type matches the model''s key type (or is a string type)';

-- perpca_personalize with the client key's type given: the key's type must match the model's.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_personalize_key(model text, key_type regtype, client text,
                                                       stats perpca_stats, n_local int)
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables(model);
    owner regrole;
    model_key_type text;
    key text;
    r jsonb;
BEGIN
    IF NOT t.present THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object',
            DETAIL = pg_catalog.format('No table %s was found.', t.info),
            HINT = 'Create it with perpca_train(). ' OPERATOR(pg_catalog.||) perpca_internal.perpca_model_name_rule();
    END IF;
    IF client IS NULL OR stats IS NULL THEN
        RAISE EXCEPTION 'client and stats must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    owner := perpca_internal.perpca_model_owner(t.schema_name, t.base);
    PERFORM perpca_internal.perpca_model_check_owner(model, owner);
    PERFORM perpca_internal.perpca_model_lock(model, t.schema_name, t.base, true);
    EXECUTE pg_catalog.format('SELECT pg_catalog.to_jsonb(i) OPERATOR(pg_catalog.->>) %L FROM %s i',
                              'client_type', t.info) INTO model_key_type;
    key := perpca_internal.perpca_model_key(model, key_type, model_key_type, client);
    IF owner::oid OPERATOR(pg_catalog.=) pg_catalog.current_user()::regrole::oid THEN
        r := perpca_internal.perpca_model_personalize(t.schema_name, t.base, key, stats, n_local);
    ELSE
        r := perpca_internal.perpca_run_as_owner(t.info::regclass, '@extschema@'::regnamespace,
                 'SELECT perpca_internal.perpca_model_personalize($1, $2, $3, $4, $5)',
                 t.schema_name, t.base, key, stats, n_local);
    END IF;
    RETURN QUERY SELECT (e OPERATOR(pg_catalog.->>) 'component')::int,
                        ARRAY(SELECT v::float8
                                FROM pg_catalog.jsonb_array_elements_text(e OPERATOR(pg_catalog.->) 'pc') AS v),
                        (e OPERATOR(pg_catalog.->>) 'variance')::float8
                   FROM pg_catalog.jsonb_array_elements(r) AS e;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_personalize_key(text, regtype, text, perpca_stats, int) IS
    'internal: perpca_personalize for a client key of type key_type (in its text form)';

CREATE OR REPLACE FUNCTION perpca_personalize(model text, client text, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT * FROM perpca_internal.perpca_personalize_key(model, 'text'::regtype, client, stats, n_local);
END;
COMMENT ON FUNCTION perpca_personalize(text, text, perpca_stats, int) IS
    'computes local components for a (new) client from its statistics with the global components frozen and stores them in the model; n_local defaults to the model''s; another role''s model is written as its owner';

CREATE OR REPLACE FUNCTION perpca_personalize(model text, client anyelement, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
BEGIN
    RETURN QUERY SELECT * FROM perpca_internal.perpca_personalize_key(model, pg_catalog.pg_typeof(client),
                                                                      client::text, stats, n_local);
END
$$;
COMMENT ON FUNCTION perpca_personalize(text, anyelement, perpca_stats, int) IS
    'perpca_personalize with the client key in its own type (int, bigint, uuid, date, ...), which must be the type of the model''s keys; matched as its text form';
