-- ==========================================================================
-- Model administration: naming, finding, locking and checking a model's
-- tables (the lock itself is src/model_lock.c: one order for every function
-- that touches a model), dropping a model and personalizing a client.
--
-- Search path: every function here pins search_path = pg_catalog, pg_temp
-- or is C; a model name is resolved by the C code with the caller's
-- search_path before anything else runs.  Ownership: a model that belongs
-- to another role is written as that role, inside a security-restricted
-- operation (perpca_internal.perpca_run_as_owner, see 50_refresh.sql).
-- ==========================================================================

-- How model names are written and read: the naming rule for error hints,
-- and the parts of a name (src/model_read.c, one reader for C and SQL).
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_name_rule() RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.perpca_model_name_rule() IS
    'internal: the naming rule of models, for error hints';
CREATE OR REPLACE FUNCTION perpca_internal.model_name_parts(model text) RETURNS text[]
    AS 'MODULE_PATHNAME', 'perpca_model_name_parts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.model_name_parts(text) IS
    'internal: {[schema,] base} of a model name read as SQL identifiers, or the improper-name error with the naming rule';

-- The tables of a model: name parts and quoted qualified table names.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_tables(model text, OUT schema_name text, OUT base text,
                                    OUT components text, OUT clients text, OUT info text,
                                    OUT present boolean)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    parts text[] := perpca_internal.model_name_parts(model);
    n int := pg_catalog.cardinality(parts);
BEGIN
    base := parts[n];  -- at most 52 bytes (model_name_parts checks)
    IF n OPERATOR(pg_catalog.=) 2 THEN
        schema_name := parts[1];
    ELSE
        SELECT ns.nspname INTO schema_name
          FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace ns ON ns.oid OPERATOR(pg_catalog.=) c.relnamespace
         WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(pg_catalog.quote_ident(pg_catalog.concat(base, '_info')));
        schema_name := coalesce(schema_name, pg_catalog.current_schema());
        IF schema_name IS NULL THEN
            RAISE EXCEPTION 'no schema has been selected to create the model in'
                USING ERRCODE = 'invalid_schema_name',
                      HINT = 'Qualify the model name with a schema or set search_path.';
        END IF;
    END IF;
    components := pg_catalog.format('%I.%I', schema_name, pg_catalog.concat(base, '_components'));
    clients := pg_catalog.format('%I.%I', schema_name, pg_catalog.concat(base, '_clients'));
    info := pg_catalog.format('%I.%I', schema_name, pg_catalog.concat(base, '_info'));
    present := pg_catalog.to_regclass(info) IS NOT NULL;
    IF present AND (pg_catalog.to_regclass(components) IS NULL OR pg_catalog.to_regclass(clients) IS NULL) THEN
        RAISE EXCEPTION 'model "%" is incomplete', model USING ERRCODE = 'data_corrupted',
            DETAIL = pg_catalog.format('Table %s exists but %s or %s does not.', info, components, clients);
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_tables(text) IS
    'internal: schema, base name and quoted table names of a model, and whether it exists';

-- The model's tables, raising undefined_object when it does not exist.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_tables_existing(model text, OUT components text, OUT clients text, OUT info text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables(model);
BEGIN
    IF NOT t.present THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object',
            DETAIL = pg_catalog.format('No table %s was found.', t.info),
            HINT = 'Create it with perpca_train(). ' OPERATOR(pg_catalog.||) perpca_internal.perpca_model_name_rule();
    END IF;
    components := t.components;
    clients := t.clients;
    info := t.info;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_tables_existing(text) IS
    'internal: quoted table names of an existing model (undefined_object otherwise)';

-- The owner of an existing model, after checking that its three relations
-- are plain tables of one owner (a view or a foreign table in their place
-- could run another role's code for whoever reads or writes the model).
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_owner(schema_name text, base text) RETURNS regrole
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad text;
    owners int;
    owner regrole;
BEGIN
    SELECT string_agg(format('%I.%I', n.nspname, c.relname), ', ' ORDER BY c.relname)
             FILTER (WHERE c.relkind <> 'r'),
           count(DISTINCT c.relowner), min(c.relowner::oid)::regrole
      INTO bad, owners, owner
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid IN (to_regclass(format('%I.%I', schema_name, base || '_components')),
                     to_regclass(format('%I.%I', schema_name, base || '_clients')),
                     to_regclass(format('%I.%I', schema_name, base || '_info')));
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'model "%.%" is not made of plain tables', schema_name, base
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = format('%s: not a table.', bad),
                  HINT = 'A model is three tables written by perpca_train(); drop what replaced them and train the model again.';
    END IF;
    IF owners <> 1 THEN
        RAISE EXCEPTION 'the tables of model "%.%" have different owners', schema_name, base
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Give the three tables of the model one owner (ALTER TABLE ... OWNER TO).';
    END IF;
    RETURN owner;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_owner(text, text) IS
    'internal: the owner of a model, after checking that its relations are plain tables with one owner';

-- Raise insufficient_privilege unless the current user has the privileges of the model's owner.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_check_owner(model text, owner regrole) RETURNS void
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of model "%"', model USING ERRCODE = 'insufficient_privilege',
            DETAIL = format('The model is owned by role %s.', owner),
            HINT = 'Only the owner of a model, or a member of the owning role, may refresh, replace or change it.';
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_check_owner(text, regrole) IS
    'internal: insufficient_privilege unless the current user has the privileges of the model''s owner';

-- Process pending catalog invalidations (src/model_store.c).
CREATE OR REPLACE FUNCTION perpca_internal.perpca_accept_invalidations() RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.perpca_accept_invalidations() IS
    'internal: processes pending catalog invalidations, so that lookups after an advisory lock see what other sessions committed meanwhile';

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
