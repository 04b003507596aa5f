-- ==========================================================================
-- Models: a fit stored as plain tables <model>_components, <model>_clients
-- and <model>_info, and the functions that write them
--
-- Search path: perpca_train and perpca_refresh are C (src/model_write.c):
-- they resolve an unqualified model name through the caller's search_path
-- and record that search_path for the model's query; every internal
-- function here pins search_path = pg_catalog, pg_temp.  The model's query
-- is bound once, at train, with the recorded search_path: its owner creates
-- the view <model>_source holding it (source_bind), as for a materialized
-- view, and train and every refresh read that view (stage_fill).
--
-- Ownership: a model that belongs to another role is written as that role,
-- inside a security-restricted operation (perpca_internal.run_as, see
-- 50_refresh.sql and src/run_as_owner.c), never with the caller's privileges.
-- ==========================================================================

-- How model names are written and read: the naming rule for error hints,
-- and the parts of a name (src/model_read.c, one reader for C and SQL).
CREATE OR REPLACE FUNCTION perpca_internal.model_name_parts(model text) RETURNS text[]
    AS 'MODULE_PATHNAME', 'perpca_model_name_parts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.model_name_parts(text) IS
    'internal: {[schema,] base} of a model name read as SQL identifiers, or the improper-name error with the naming rule';

-- The owner of an existing model, after checking that its three relations
-- are plain tables of one owner (a view or a foreign table in their place
-- could run another role's code for whoever reads or writes the model).
CREATE OR REPLACE FUNCTION perpca_internal.model_owner(schema_name text, base text) RETURNS regrole
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
COMMENT ON FUNCTION perpca_internal.model_owner(text, text) IS
    'internal: the owner of a model, after checking that its relations are plain tables with one owner';

-- Raise insufficient_privilege unless the current user has the privileges of the model's owner.
CREATE OR REPLACE FUNCTION perpca_internal.model_check_owner(model text, owner regrole) RETURNS void
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of model "%"', model USING ERRCODE = 'insufficient_privilege',
            DETAIL = format('The model is owned by role %s.', owner),
            HINT = 'Only the owner of a model, or a member of the owning role, may refresh, replace or change it.';
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.model_check_owner(text, regrole) IS
    'internal: insufficient_privilege unless the current user has the privileges of the model''s owner';

-- Create the three tables of a model, and its history table when there is
-- none: columns, constraints and comments as declared once in
-- src/model_schema.c (model_store.c runs the DDL as the current user).
CREATE OR REPLACE FUNCTION perpca_internal.model_create(schema_name text, base text) RETURNS void
    AS 'MODULE_PATHNAME', 'perpca_model_create' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.model_create(text, text) IS 'internal: creates the tables of a new model (and its history table when there is none)';

-- A model's history: one row per train and refresh, in <model>_history,
-- a plain table of the model's owner (dumped with the model, dropped by
-- perpca_drop, locked after the model's three tables: model_lock.c).  Read
-- by perpca_model_history (src/model_history.c, the checked C reader).
CREATE OR REPLACE FUNCTION perpca_internal.history_create(schema_name text, base text) RETURNS void
    AS 'MODULE_PATHNAME', 'perpca_history_create' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.history_create(text, text) IS
    'internal: creates the history table of a model, unless it exists';

-- A model stored by an earlier version gets the columns declared since
-- (src/model_schema.c) when its owner next writes it.
CREATE OR REPLACE FUNCTION perpca_internal.model_columns_add(schema_name text, base text, tbl text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'perpca_model_columns_add' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.model_columns_add(text, text, text) IS
    'internal: adds to a model''s table tbl (info, clients, components or history) the columns declared since the version that stored it, as the current user; whether it added any';

-- Append one row (jsonb, by column name) to a model's history, as the model's
-- owner (through run_as); the row with its entry number.  A model stored
-- before 0.3.0 gets its history table here, at its first refresh; when its
-- owner may not create tables in the model's schema, the row is returned
-- but not kept (NOTICE).
CREATE OR REPLACE FUNCTION perpca_internal.history_append(schema_name text, base text, r jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    history text := format('%I.%I', schema_name, base || '_history');
    rel regclass := to_regclass(history);
    entry int;
    version bigint;
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the model's owner's privileges, checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
    IF NOT r ? 'version' THEN
        EXECUTE format('SELECT version FROM %I.%I', schema_name, base || '_info') INTO version;
        r := r || jsonb_build_object('version', version);
    END IF;
    IF rel IS NULL THEN
        IF NOT has_schema_privilege(schema_name, 'CREATE') THEN
            RAISE NOTICE 'model "%.%" keeps no history: role % may not create tables in schema %',
                         schema_name, base, current_user, quote_ident(schema_name)
                USING HINT = 'Grant CREATE on the schema to the model''s owner; the next refresh creates the table.';
            RETURN r;
        END IF;
        PERFORM perpca_internal.history_create(schema_name, base);
    ELSIF (SELECT c.relkind <> 'r' OR c.relowner <> current_user::regrole::oid FROM pg_class c WHERE c.oid = rel) THEN
        RAISE EXCEPTION 'the history of model "%.%" is not a table of its owner', schema_name, base
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = format('%s is not a plain table owned by role %s.', history, current_user),
                  HINT = 'Drop it: the next train or refresh starts a new history.';
    END IF;
    EXECUTE format('SELECT coalesce(max(entry), 0) + 1 FROM %s', history) INTO entry;
    r := r || jsonb_build_object('entry', entry);
    EXECUTE format('INSERT INTO %s SELECT * FROM jsonb_populate_record(NULL::%s, $1)', history, history) USING r;
    RETURN r;
END
$$;
COMMENT ON FUNCTION perpca_internal.history_append(text, text, jsonb) IS
    'internal: appends one row to a model''s history as its owner (creating the table of a model stored before 0.3.0) and returns it with its entry number';

-- A digest (SHA-256, hex) of the staged clients (key type, key, statistics,
-- n_local, in key byte order), the options that define the fit (without
-- init, start and verbose, which a refresh sets) and the feature names: a
-- refresh whose digest equals the stored one has nothing new to fit.
CREATE OR REPLACE FUNCTION perpca_internal.stage_digest(options jsonb, feature_names text[]) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- (PL/pgSQL, not SQL: its plan follows the stage, a new table at every train and refresh)
    RETURN (SELECT encode(sha256(convert_to(concat_ws(E'\n',
                      string_agg(concat_ws(' ', s.client_type::text, quote_literal(s.client),
                                           encode(sha256(@extschema@.perpca_stats_send(s.stats)), 'hex'), s.n_local),
                                 E'\n' ORDER BY s.client COLLATE "C"),
                      (options - ARRAY['init', 'start', 'verbose'])::text,
                      feature_names::text), 'UTF8')), 'hex')
              FROM pg_temp.perpca_train_src s);
END
$$;
COMMENT ON FUNCTION perpca_internal.stage_digest(jsonb, text[]) IS
    'internal: SHA-256 of the staged clients'' statistics (bit for bit, in key byte order), the options that define the fit and the feature names: what perpca_refresh compares to skip a refit of unchanged data';

-- Write the clients rows of a model from the statistics of the FROM item
-- src (client text, stats perpca_stats), which may use $4 and $5.
CREATE OR REPLACE FUNCTION perpca_internal.model_fill_clients(schema_name text, base text, src text, center text,
                                                          global_mean float8[], source text,
                                                          one_client text, one_stats perpca_stats,
                                                          scale_factors float8[])
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    clients regclass := format('%I.%I', schema_name, base || '_clients')::regclass;
    monitor boolean := EXISTS (SELECT FROM pg_attribute
                                WHERE attrelid = clients AND attname = 'residual_moments' AND NOT attisdropped);
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the model's owner's privileges, checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
    -- A model stored before 0.3.0 gets the columns of perpca_model_monitor
    -- and perpca_component_variance when its owner writes it.
    IF NOT monitor AND pg_has_role((SELECT relowner FROM pg_class WHERE oid = clients), 'USAGE') THEN
        PERFORM perpca_internal.model_columns_add(schema_name, base, 'clients');
        monitor := true;
    END IF;
    -- Means in the data's units; variances, ratios and errors in the units
    -- the fit saw (divided by scale_factors, NULL = unscaled); the scores'
    -- covariance and residual spectrum (client_monitor_stats) too.
    EXECUTE format($f$
        WITH r AS (
            SELECT s.client, s.stats AS raw, perpca_internal.scale_stats(s.stats, $6) AS stats FROM %s s
             WHERE @extschema@.perpca_count(s.stats) > 0),
        c AS (
            SELECT r.client, r.raw, r.stats,
                   CASE $1 WHEN 'client' THEN @extschema@.perpca_mean(r.stats)
                           WHEN 'global' THEN perpca_internal.scale_vector($2, $6)
                           ELSE array_fill(0::float8, ARRAY[@extschema@.perpca_dim(r.stats)]) END AS centre
              FROM r),
        u AS (SELECT array_agg(pc ORDER BY component) AS u FROM %I.%I WHERE kind = 'global'),
        v AS (SELECT client, array_agg(pc ORDER BY component) AS v, count(*)::int AS r2
                FROM %I.%I WHERE kind = 'local' GROUP BY client),
        f AS (
            SELECT c.client, @extschema@.perpca_count(c.stats) AS n, @extschema@.perpca_mean(c.raw) AS mean,
                   coalesce(v.r2, 0) AS r2,
                   @extschema@.perpca_total_variance(c.stats, c.centre) AS tv,
                   coalesce(@extschema@.perpca_explained_variance(c.stats, u.u, c.centre), 0) AS gv,
                   coalesce(@extschema@.perpca_explained_variance(c.stats, v.v, c.centre), 0) AS lv,
                   ms.score_covariance, ms.residual_moments
              FROM c CROSS JOIN u LEFT JOIN v ON v.client = c.client
             CROSS JOIN LATERAL perpca_internal.client_monitor_stats(c.stats, u.u, v.v) AS ms),
        -- A client without variance (one row, or constant rows) has no ratios.
        w AS (
            INSERT INTO %I.%I (client, n, mean, n_local, total_variance, global_ratio, local_ratio,
                               residual_ratio, train_error, source%s)
            SELECT client, n, mean, r2, tv, gv / nullif(tv, 0), lv / nullif(tv, 0),
                   (tv - gv - lv) / nullif(tv, 0), tv - gv - lv, $3%s
              FROM f
            ON CONFLICT (client) DO UPDATE
               SET n = excluded.n, mean = excluded.mean, n_local = excluded.n_local,
                   total_variance = excluded.total_variance, global_ratio = excluded.global_ratio,
                   local_ratio = excluded.local_ratio, residual_ratio = excluded.residual_ratio,
                   train_error = excluded.train_error, source = excluded.source%s
            RETURNING client, total_variance)
        SELECT count(*) FROM w$f$,
        src, schema_name, base || '_components', schema_name, base || '_components',
        schema_name, base || '_clients',
        CASE WHEN monitor THEN ', score_covariance, residual_moments' ELSE '' END,
        CASE WHEN monitor THEN ', score_covariance, residual_moments' ELSE '' END,
        CASE WHEN monitor THEN ', score_covariance = excluded.score_covariance, '
                               'residual_moments = excluded.residual_moments' ELSE '' END)
    USING center, global_mean, source, one_client, one_stats, scale_factors;
END
$$;
COMMENT ON FUNCTION perpca_internal.model_fill_clients(text, text, text, text, float8[], text, text, perpca_stats, float8[]) IS
    'internal: writes the clients rows of a model (mean in the data''s units; variance ratios and training error of the statistics divided by scale_factors, NULL = unscaled) from statistics; a client without variance gets NULL ratios (the reader of the clients names it in its NOTICE, src/row_reader.c)';

-- The clients of a train or refresh, staged once: the fit and the per-client
-- figures read the same rows.  A temporary table, created by the caller (a
-- security-restricted operation may not create one) and usable by role
-- reader (the model's owner when the model is written as its owner).
CREATE OR REPLACE FUNCTION perpca_internal.stage_create(reader regrole) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF to_regclass('pg_temp.perpca_train_src') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_train_src;
    END IF;
    CREATE TEMPORARY TABLE perpca_train_src (client_type regtype, client text,
                                             stats @extschema@.perpca_stats, n_local int);
    IF reader::oid <> current_user::regrole::oid THEN
        EXECUTE format('GRANT SELECT, INSERT ON pg_temp.perpca_train_src TO %s', reader);
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.stage_create(regrole) IS
    'internal: creates the temporary table that holds the clients of a train or refresh, usable by reader';

-- The reader of a model's query (src/row_reader.c): planned, not run, as
-- the current user with the given search_path.
CREATE OR REPLACE FUNCTION perpca_internal.stage_command(query text, search_path text, missing text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'perpca_stage_command' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.stage_command(text, text, text) IS
    'internal: the INSERT that stages a model''s query (statistics as they come; rows of any form -- a numeric array, vector or halfvec, numeric feature columns -- aggregated per client under missing) and the names of its feature columns, from planning it with the given search_path';

-- The check of every query text the write path runs (src/query_check.c):
-- exactly one SELECT, or 0A000; the statement's own text.
CREATE OR REPLACE FUNCTION perpca_internal.one_select(query text, what text) RETURNS text
    AS 'MODULE_PATHNAME', 'perpca_one_select_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.one_select(text, text) IS
    'internal: the text of query if it is exactly one SELECT (VALUES, TABLE; no INTO, no data-modifying WITH), else feature_not_supported naming it what';

-- Bind a model's query once: create (or, for a replace, create anew) the
-- view <base>_source holding it, as the current user (the model's owner,
-- through run_as) with the given search_path, which is in effect for the
-- CREATE VIEW alone.  PostgreSQL binds the view's functions, operators,
-- casts and relations now, as for a materialized view; every later read
-- (stage_fill) runs what was bound, whatever is created in those schemas
-- afterwards.  A model stored before 0.4.0 is bound by its first refresh.
CREATE OR REPLACE FUNCTION perpca_internal.source_bind(schema_name text, base text, query text,
                                                       search_path text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    view text := format('%I.%I', schema_name, base || '_source');
    command text := format('CREATE VIEW %s AS %s', view, perpca_internal.one_select(query, 'the query of a model'));
    rel regclass;
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the owner's privileges (or
    -- CREATE on the schema, for a new model) checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write', true, true);
    rel := to_regclass(view);
    IF rel IS NOT NULL THEN
        IF (SELECT c.relkind <> 'v' OR c.relowner <> current_user::regrole::oid FROM pg_class c WHERE c.oid = rel) THEN
            RAISE EXCEPTION 'relation % is in the way of the source view of model "%.%"', view, schema_name, base
                USING ERRCODE = 'duplicate_table',
                      DETAIL = format('It is not a view owned by role %s.', current_user),
                      HINT = 'Rename or drop it: perpca_train keeps a model''s query in the view <model>_source.';
        END IF;
        EXECUTE format('DROP VIEW %s', view);
    END IF;
    IF NOT has_schema_privilege(schema_name, 'CREATE') THEN
        RAISE EXCEPTION 'role % may not create the view % that binds the query of model "%.%"',
                        current_user, view, schema_name, base
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('Grant CREATE on schema %s to role %s (a model stored before 0.4.0 binds its query at its first refresh).',
                                quote_ident(schema_name), current_user);
    END IF;
    -- Only the CREATE VIEW runs with the model's search_path (the command is
    -- written before: no expression here is evaluated under that path).
    PERFORM set_config('search_path', search_path, true);
    EXECUTE command;
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    EXECUTE format('COMMENT ON VIEW %s IS %L', view,
        'perpca model ' || base || ': its query, bound when it was trained; read by every refresh (perpca_train(..., replace => true) changes it)');
    RETURN jsonb_build_object('view', view);
END
$$;
COMMENT ON FUNCTION perpca_internal.source_bind(text, text, text, text) IS
    'internal: creates (or creates anew) the view <base>_source holding a model''s query, as the current user with the given search_path, so the query is bound once as a materialized view''s is';

-- Read a model's view <base>_source (source_bind) once into the stage,
-- recording the type of the client key.  Its rows are statistics (client,
-- perpca_stats[, n_local]) or rows of any form the one row reader takes
-- (src/row_reader.c: a numeric array, a vector or halfvec, numeric feature
-- columns), aggregated per client under missing ('error' or 'skip',
-- recorded in the model's options); feature columns name the features.
-- Called through run_as: as the model's owner, inside a security-restricted
-- operation, at train as at refresh; the view must be a view of the current
-- user (no other role's code is read here).
CREATE OR REPLACE FUNCTION perpca_internal.stage_fill(schema_name text, base text, missing text DEFAULT 'error')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    view text := format('%I.%I', schema_name, base || '_source');
    rel regclass := to_regclass(view);
    body text := format('SELECT * FROM %s', view);
    staged jsonb;
    n bigint;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'the view %, which holds the query of model "%.%", does not exist', view, schema_name, base
            USING ERRCODE = 'undefined_table',
                  HINT = 'It was dropped (DROP ... CASCADE of a relation its query reads?). Train the model again with perpca_train(..., replace => true).';
    END IF;
    IF (SELECT c.relkind <> 'v' OR c.relowner <> current_user::regrole::oid FROM pg_class c WHERE c.oid = rel) THEN
        RAISE EXCEPTION '% is not the source view of model "%.%"', view, schema_name, base
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = format('It is not a view owned by role %s, the model''s owner.', current_user),
                  HINT = 'Drop it and train the model again with perpca_train(..., replace => true).';
    END IF;
    staged := perpca_internal.stage_command(body, 'pg_catalog, pg_temp', missing);
    -- The view's query was bound by source_bind: nothing here is looked up
    -- in the model's search_path.
    EXECUTE staged ->> 'command';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN jsonb_build_object('clients', n, 'feature_names', staged -> 'feature_names');
END
$$;
COMMENT ON FUNCTION perpca_internal.stage_fill(text, text, text) IS
    'internal: reads the view <base>_source of a model (a view of the current user, the model''s owner) into the temporary stage of a train or refresh, with its key type; rows of any form (perpca_internal.stage_command) are aggregated per client under missing and the view''s feature column names returned as feature_names';

-- Fit the staged clients and store the result as model schema_name.base
-- (new, or replacing the rows of an existing one); the caller holds the
-- model's lock.  The fit's result comes back whole from perpca_internal.fit;
-- the info row is filled by column name from the effective options and the
-- diagnostics, so no option is named here.
CREATE OR REPLACE FUNCTION perpca_internal.model_store(schema_name text, base text, source_query text,
                                                       options jsonb, search_path text,
                                                       feature_names text[] DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp SET extra_float_digits = 3 AS $$
DECLARE
    components text := format('%I.%I', schema_name, base || '_components');
    clients text := format('%I.%I', schema_name, base || '_clients');
    info text := format('%I.%I', schema_name, base || '_info');
    f record;
    diag jsonb;
    opts jsonb;
    key_type text;
    gmean float8[];
    merged @extschema@.perpca_stats;
    total float8;
    digest text;
    version bigint;
    nrows bigint;
    starts jsonb;
BEGIN
    SELECT format_type(s.client_type, NULL) INTO key_type FROM pg_temp.perpca_train_src s LIMIT 1;
    SELECT * INTO STRICT f
      FROM perpca_internal.fit(
               format('SELECT client, stats%s FROM pg_temp.perpca_train_src ORDER BY client COLLATE "C"',
                      CASE WHEN EXISTS (SELECT FROM pg_temp.perpca_train_src WHERE perpca_train_src.n_local IS NOT NULL)
                           THEN ', n_local' ELSE '' END),
               options);
    diag := f.diagnostics;
    opts := diag -> 'options';
    IF feature_names IS NOT NULL AND (array_ndims(feature_names) IS DISTINCT FROM 1
           OR cardinality(feature_names) <> (diag ->> 'd')::int OR array_position(feature_names, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION 'feature_names must hold one name for each of the % features, without NULLs', diag ->> 'd'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('It has %s names.', coalesce(cardinality(feature_names), 0));
    END IF;
    SELECT @extschema@.perpca_merge(s.stats ORDER BY s.client COLLATE "C") INTO merged FROM pg_temp.perpca_train_src s;
    gmean := @extschema@.perpca_mean(merged);
    nrows := @extschema@.perpca_count(merged);
    digest := perpca_internal.stage_digest(opts, feature_names);
    SELECT jsonb_agg(jsonb_build_object('start', st.start, 'rounds_run', st.rounds_run, 'objective', st.objective,
                                        'converged', st.converged, 'chosen', st.chosen))
      INTO starts FROM @extschema@.perpca_last_fit_starts() AS st;
    version := nextval('@extschema@.perpca_model_version');

    -- Swap: lock out other writers of this model (readers go on), then replace the rows.
    IF to_regclass(info) IS NOT NULL THEN
        PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
        EXECUTE format('DELETE FROM %s', components);
        EXECUTE format('DELETE FROM %s', clients);
        EXECUTE format('DELETE FROM %s', info);
        -- A model stored by an earlier version gets the columns added since, once.
        PERFORM perpca_internal.model_columns_add(schema_name, base, 'info');
    ELSE
        PERFORM perpca_internal.model_create(schema_name, base);
    END IF;

    EXECUTE format('INSERT INTO %s (client, kind, component, pc, variance)
                    SELECT u.client, u.kind, u.component, u.pc, u.variance
                      FROM unnest($1) AS u',
                   components) USING f.components;
    PERFORM perpca_internal.model_fill_clients(schema_name, base, 'pg_temp.perpca_train_src',
                                                      opts ->> 'center', gmean, 'fit', NULL, NULL, f.scale_factors);
    EXECUTE format('SELECT CASE WHEN $1 = %L THEN avg(total_variance)
                                ELSE sum(n::float8 * total_variance) / sum(n::float8) END FROM %s',
                   'equal', clients)
        INTO total USING opts ->> 'weights';
    -- The 0.1.0 option columns take the options of their name (rounds_max:
    -- the rounds option; rounds: the rounds run).
    EXECUTE format('INSERT INTO %s SELECT * FROM jsonb_populate_record(NULL::%s, $1)', info, info)
    USING (opts - 'rounds') || jsonb_build_object(
              'model', base, 'd', diag -> 'd', 'n_global', options -> 'n_global',
              'n_local', options -> 'n_local', 'n_clients', diag -> 'n_clients',
              'rounds_max', opts -> 'rounds', 'source_query', source_query,
              'rounds', diag -> 'rounds_run', 'converged', diag -> 'converged',
              'objective', diag -> 'objective', 'kkt_residual', diag -> 'kkt_residual',
              'theta_est', diag -> 'theta_est', 'step_used', diag -> 'step',
              'fit_seconds', diag -> 'seconds', 'global_mean', to_jsonb(gmean),
              'total_variance', total, 'fitted_at', now(),
              'version', version, 'client_type', key_type,
              'options', opts, 'scale_factors', to_jsonb(f.scale_factors),
              'constant_features', to_jsonb(f.constant_features), 'search_path', search_path,
              'feature_names', to_jsonb(feature_names), 'stats_digest', digest,
              'source_view', format('%I.%I', schema_name, base || '_source'));

    RETURN jsonb_build_object('model_name', base, 'd', diag -> 'd', 'n_clients', diag -> 'n_clients',
                              'rounds_run', diag -> 'rounds_run', 'converged', diag -> 'converged',
                              'objective', diag -> 'objective', 'theta_est', diag -> 'theta_est',
                              'version', version, 'rows', nrows, 'starts', starts, 'digest', digest);
END
$$;
COMMENT ON FUNCTION perpca_internal.model_store(text, text, text, jsonb, text, text[]) IS
    'internal: fits the staged clients with options (jsonb) and stores (or replaces) the model''s rows, with the effective options, the search_path its query runs with, the names of its features (NULL: unnamed) and the digest of its statistics; returns the fit''s figures, version, rows and starts (jsonb) for the history';

-- Run a warm-start query (client, kind, component, pc) once into a temporary
-- table, as the caller and with the model's search_path, readable by reader.
CREATE OR REPLACE FUNCTION perpca_internal.stage_start(query text, reader regrole, search_path text) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- Named columns: the query's own may be unnamed ("?column?" twice).
    command text := concat('CREATE TEMPORARY TABLE perpca_train_start (client, kind, component, pc) AS ',
                           perpca_internal.one_select(query, 'start query'));
BEGIN
    IF to_regclass('pg_temp.perpca_train_start') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_train_start;
    END IF;
    -- Only the query runs with the model's search_path.
    PERFORM set_config('search_path', search_path, true);
    EXECUTE command;
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF reader::oid <> current_user::regrole::oid THEN
        EXECUTE format('GRANT SELECT ON pg_temp.perpca_train_start TO %s', reader);
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.stage_start(text, regrole, text) IS
    'internal: runs perpca_train''s warm-start query once, as the caller, into a temporary table usable by reader';

-- The body of perpca_train (src/model_write.c resolved the name, checked the
-- options, locked the model and recorded the caller's search_path).
CREATE OR REPLACE FUNCTION perpca_internal.train(schema_name text, base text, model text, query text,
                                                 options jsonb, replace boolean, search_path text,
                                                 feature_names text[])
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info text := format('%I.%I', schema_name, base || '_info');
    began timestamptz := clock_timestamp();
    owner regrole;
    staged jsonb;
    names text[];
    r jsonb;
BEGIN
    -- perpca_train (C) holds the model's write lock (model_lock.c) and checked the owner.
    IF to_regclass(info) IS NOT NULL AND NOT coalesce(replace, false) THEN
        RAISE EXCEPTION 'model "%" already exists', model USING ERRCODE = 'duplicate_table',
            HINT = 'Pass replace => true to replace it, or drop it with perpca_drop().';
    END IF;
    owner := CASE WHEN to_regclass(info) IS NOT NULL THEN perpca_internal.model_owner(schema_name, base)
                  ELSE current_user::regrole END;
    PERFORM perpca_internal.model_check_owner(model, owner);
    IF options ->> 'start' IS NOT NULL THEN
        PERFORM perpca_internal.stage_start(options ->> 'start', owner, search_path);
        options := options || jsonb_build_object('start', 'SELECT * FROM pg_temp.perpca_train_start');
    END IF;

    -- The query is bound once, by the owner, with the caller's search_path:
    -- the view <model>_source (a replace binds it anew).  It is read the way
    -- every refresh will read it: as the owner, restricted.
    PERFORM perpca_internal.stage_create(owner);
    PERFORM perpca_internal.run_as(owner, 'SELECT perpca_internal.source_bind($1, $2, $3, $4)',
                                   schema_name, base, query, search_path);
    staged := perpca_internal.run_as(owner, 'SELECT perpca_internal.stage_fill($1, $2, $3)', schema_name, base,
                                     coalesce(options ->> 'missing', 'error'));
    -- A query of feature columns names the features; feature_names, when
    -- given too, must say the same (a refresh reads the names from the query).
    names := feature_names;
    IF jsonb_typeof(staged -> 'feature_names') = 'array' THEN
        names := ARRAY(SELECT t.e FROM jsonb_array_elements_text(staged -> 'feature_names') WITH ORDINALITY AS t(e, i)
                        ORDER BY t.i);
        IF feature_names IS NOT NULL AND feature_names IS DISTINCT FROM names THEN
            RAISE EXCEPTION 'feature_names differ from the names of the query''s feature columns'
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = format('The query''s feature columns are %s; feature_names are %s.', names, feature_names),
                      HINT = 'Name the columns in the query instead (SELECT client, a AS name, ...): every refresh reads the names from it.';
        END IF;
    END IF;
    -- Another role's model is written as that role.
    r := perpca_internal.run_as(owner, 'SELECT perpca_internal.model_store($1, $2, $3, $4, $5, $6)',
                                schema_name, base, query, options, search_path, names);
    PERFORM perpca_internal.run_as(owner, 'SELECT perpca_internal.history_append($1, $2, $3)', schema_name, base,
        jsonb_build_object('version', r -> 'version', 'at', clock_timestamp(), 'kind', 'train',
                           'clients', r -> 'n_clients', 'rows', r -> 'rows', 'rounds_run', r -> 'rounds_run',
                           'converged', r -> 'converged', 'objective', r -> 'objective',
                           'seconds', extract(epoch FROM clock_timestamp() - began), 'role', current_user,
                           'warning', CASE WHEN NOT (r ->> 'converged')::boolean THEN
                                          format('did not converge in %s rounds', r ->> 'rounds_run') END,
                           'outcome', 'fitted', 'starts', r -> 'starts', 'digest', r -> 'digest'));
    RETURN QUERY SELECT r ->> 'model_name', (r ->> 'd')::int, (r ->> 'n_clients')::int,
                        (r ->> 'rounds_run')::int, (r ->> 'converged')::boolean,
                        (r ->> 'objective')::float8, (r ->> 'theta_est')::float8;
    DROP TABLE pg_temp.perpca_train_src;
    IF to_regclass('pg_temp.perpca_train_start') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_train_start;
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.train(text, text, text, text, jsonb, boolean, text, text[]) IS
    'internal: the body of perpca_train: checks and locks the model, stages the query as the caller the way a refresh will run it (numeric feature columns aggregated, their names the feature names), fits, stores and appends to the history as the model''s owner';

-- Options: named arguments with DEFAULT NULL, read by name in C
-- (src/model_write.c, src/fit_options.c), which holds every default.
CREATE OR REPLACE FUNCTION perpca_train(model text, query text, n_global int, n_local int,
                             rounds int DEFAULT NULL, tolerance float8 DEFAULT NULL,
                             step float8 DEFAULT NULL, update text DEFAULT NULL,
                             retraction text DEFAULT NULL, init text DEFAULT NULL,
                             seed bigint DEFAULT NULL, center text DEFAULT NULL,
                             weights text DEFAULT NULL, method text DEFAULT NULL,
                             verbose boolean DEFAULT NULL, adaptive boolean DEFAULT NULL,
                             replace boolean DEFAULT false, start text DEFAULT NULL,
                             solver text DEFAULT NULL, scale text DEFAULT NULL,
                             feature_names text[] DEFAULT NULL, hops int DEFAULT NULL,
                             missing text DEFAULT NULL)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
    AS 'MODULE_PATHNAME', 'perpca_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text, text[], int, text) IS
    'fits PerPCA on a query returning (client, perpca_stats[, n_local]) or rows of any form the row reader takes (a numeric array, a vector or halfvec, numeric feature columns), aggregated per client under missing (''error'', the default, or ''skip''; recorded in <model>_info.options and applied at every refresh; a client left without rows is named in a NOTICE and left out), and stores the model as tables <model>_components, <model>_clients and <model>_info; the client key may be of any type (its type is recorded); the query must be one SELECT; it is bound now, with the search_path in effect (recorded in <model>_info.search_path), in the view <model>_source, which the owner owns and every refresh reads, and read now as every refresh will (restricted, as the owner), so a query that could not be refreshed fails now; replace => true swaps an existing model atomically (another role''s model is written as its owner); NULL options take perpca_fit''s defaults (the effective ones are recorded in <model>_info.options); start is perpca_fit''s warm-start query (with init => ''given''); scale => ''standard'' divides each feature by its pooled standard deviation, stored in <model>_info.scale_factors and applied by every function that reads the model; feature_names (d names) are stored in <model>_info.feature_names for perpca_loadings and top_features';

