-- ==========================================================================
-- Models: a fit stored as plain tables <model>_components, <model>_clients
-- and <model>_info, and the functions that read them
-- ==========================================================================

-- Every change of a stored model takes a new version from this sequence, so
-- that backends caching the model notice a replaced or personalized model.
CREATE SEQUENCE perpca_model_version;
GRANT USAGE ON SEQUENCE perpca_model_version TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('perpca_model_version', '');
COMMENT ON SEQUENCE perpca_model_version IS
    'version numbers of stored models (a new one for every train, replace or personalize)';

-- The tables of a model: name parts and quoted qualified table names.
CREATE FUNCTION perpca_model_tables(model text, OUT schema_name text, OUT base text,
                                    OUT components text, OUT clients text, OUT info text,
                                    OUT present boolean)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    parts text[] := pg_catalog.parse_ident(model);
    n int := pg_catalog.cardinality(parts);
BEGIN
    IF n > 2 THEN
        RAISE EXCEPTION 'improper model name "%"', model USING ERRCODE = 'invalid_name',
            DETAIL = 'A model name is a table name prefix, optionally qualified by a schema name.';
    END IF;
    base := parts[n];
    IF pg_catalog.octet_length(base) > 52 THEN
        RAISE EXCEPTION 'model name "%" is too long', base USING ERRCODE = 'name_too_long',
            DETAIL = 'A model name has at most 52 bytes, so that "<model>_components" is a valid table name.';
    END IF;
    IF n = 2 THEN
        schema_name := parts[1];
    ELSE
        SELECT ns.nspname INTO schema_name
          FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
         WHERE c.oid = pg_catalog.to_regclass(pg_catalog.quote_ident(base || '_info'));
        schema_name := coalesce(schema_name, pg_catalog.current_schema());
        IF schema_name IS NULL THEN
            RAISE EXCEPTION 'no schema has been selected to create the model in'
                USING ERRCODE = 'invalid_schema_name',
                      HINT = 'Qualify the model name with a schema or set search_path.';
        END IF;
    END IF;
    components := pg_catalog.format('%I.%I', schema_name, base || '_components');
    clients := pg_catalog.format('%I.%I', schema_name, base || '_clients');
    info := pg_catalog.format('%I.%I', schema_name, base || '_info');
    present := pg_catalog.to_regclass(info) IS NOT NULL;
    IF present AND (pg_catalog.to_regclass(components) IS NULL OR pg_catalog.to_regclass(clients) IS NULL) THEN
        RAISE EXCEPTION 'model "%" is incomplete', model USING ERRCODE = 'data_corrupted',
            DETAIL = pg_catalog.format('Table %s exists but %s or %s does not.', info, components, clients);
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_model_tables(text) IS
    'internal: schema, base name and quoted table names of a model, and whether it exists';

-- The model's tables, raising undefined_object when it does not exist.
CREATE FUNCTION perpca_model_tables_existing(model text, OUT components text, OUT clients text, OUT info text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    t record := @extschema@.perpca_model_tables(model);
BEGIN
    IF NOT t.present THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object',
            HINT = 'Create it with perpca_train().';
    END IF;
    components := t.components;
    clients := t.clients;
    info := t.info;
END
$$;
COMMENT ON FUNCTION perpca_model_tables_existing(text) IS
    'internal: quoted table names of an existing model (undefined_object otherwise)';

-- Effective value (as text) of an option of perpca_fit: the given one or perpca_fit's default.
CREATE FUNCTION perpca_fit_option(option text, given text) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    expr text;
    result text;
BEGIN
    IF given IS NOT NULL THEN
        RETURN given;
    END IF;
    SELECT pg_catalog.pg_get_function_arg_default(p.oid, a.i) INTO expr
      FROM pg_catalog.pg_proc p,
           LATERAL pg_catalog.generate_subscripts(p.proargnames, 1) AS a(i)
     WHERE p.oid = (SELECT oid FROM pg_catalog.pg_proc
                     WHERE proname = 'perpca_fit'
                       AND pronamespace = '@extschema@'::regnamespace
                     ORDER BY pronargs DESC LIMIT 1)
       AND p.proargnames[a.i] = option;
    IF expr IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE 'SELECT (' || expr || ')::text' INTO result;
    RETURN result;
END
$$;
COMMENT ON FUNCTION perpca_fit_option(text, text) IS
    'internal: the value perpca_fit uses for an option, given or defaulted';

-- Create the three tables of a model.
CREATE FUNCTION perpca_model_create(t record) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
BEGIN
    EXECUTE pg_catalog.format($f$
        CREATE TABLE %s (
            client text,
            kind text NOT NULL CHECK (kind IN ('global', 'local')),
            component int NOT NULL CHECK (component >= 1),
            pc float8[] NOT NULL,
            variance float8,
            CHECK ((kind = 'global') = (client IS NULL)),
            UNIQUE NULLS NOT DISTINCT (kind, client, component))$f$, t.components);
    EXECUTE pg_catalog.format('ALTER TABLE %s REPLICA IDENTITY FULL', t.components);
    EXECUTE pg_catalog.format($f$
        CREATE TABLE %s (
            client text PRIMARY KEY,
            n bigint NOT NULL,
            mean float8[] NOT NULL,
            n_local int NOT NULL,
            total_variance float8,
            global_ratio float8,
            local_ratio float8,
            residual_ratio float8,
            train_error float8,
            source text NOT NULL CHECK (source IN ('fit', 'personalize')))$f$, t.clients);
    EXECUTE pg_catalog.format($f$
        CREATE TABLE %s (
            model text PRIMARY KEY,
            d int NOT NULL,
            n_global int NOT NULL,
            n_local int,
            n_clients int NOT NULL,
            method text, rounds_max int, tolerance float8, step float8, adaptive boolean, update text,
            retraction text, init text, seed bigint, center text NOT NULL, weights text,
            source_query text NOT NULL,
            rounds int, converged boolean, objective float8, kkt_residual float8,
            theta_est float8, step_used float8, fit_seconds float8,
            global_mean float8[] NOT NULL,
            total_variance float8,
            fitted_at timestamptz NOT NULL,
            version bigint NOT NULL)$f$, t.info);
    EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', t.components,
        'perpca model ' || t.base || ': global (client NULL) and local principal components');
    EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', t.clients,
        'perpca model ' || t.base || ': one row per client (mean, explained-variance ratios, training error)');
    EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', t.info,
        'perpca model ' || t.base || ': options, source query, diagnostics and version of the fit');
END
$$;
COMMENT ON FUNCTION perpca_model_create(record) IS 'internal: creates the tables of a new model';

-- Fill the clients table from the clients' statistics (in the temporary table src) and the components.
CREATE FUNCTION perpca_model_fill_clients(t record, src text, center text, global_mean float8[], source text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
BEGIN
    EXECUTE pg_catalog.format($f$
        WITH c AS (
            SELECT s.client::text AS client, s.stats,
                   CASE $1 WHEN 'client' THEN @extschema@.perpca_mean(s.stats)
                           WHEN 'global' THEN $2
                           ELSE pg_catalog.array_fill(0::float8, ARRAY[@extschema@.perpca_dim(s.stats)]) END AS centre
              FROM %s s),
        u AS (SELECT pg_catalog.array_agg(pc ORDER BY component) AS u FROM %s WHERE kind = 'global'),
        v AS (SELECT client, pg_catalog.array_agg(pc ORDER BY component) AS v, count(*)::int AS r2
                FROM %s WHERE kind = 'local' GROUP BY client),
        f AS (
            SELECT c.client, @extschema@.perpca_count(c.stats) AS n, @extschema@.perpca_mean(c.stats) AS mean,
                   coalesce(v.r2, 0) AS r2,
                   @extschema@.perpca_total_variance(c.stats, c.centre) AS tv,
                   coalesce(@extschema@.perpca_explained_variance(c.stats, u.u, c.centre), 0) AS gv,
                   coalesce(@extschema@.perpca_explained_variance(c.stats, v.v, c.centre), 0) AS lv
              FROM c CROSS JOIN u LEFT JOIN v ON v.client = c.client)
        INSERT INTO %s (client, n, mean, n_local, total_variance, global_ratio, local_ratio,
                        residual_ratio, train_error, source)
        SELECT client ,n, mean, r2, tv, gv / tv, lv / tv, (tv - gv - lv) / tv, tv - gv - lv, $3
          FROM f
        ON CONFLICT (client) DO UPDATE
           SET n = excluded.n, mean = excluded.mean, n_local = excluded.n_local,
               total_variance = excluded.total_variance, global_ratio = excluded.global_ratio,
               local_ratio = excluded.local_ratio, residual_ratio = excluded.residual_ratio,
               train_error = excluded.train_error, source = excluded.source$f$,
        src, t.components, t.components, t.clients)
    USING center, global_mean, source;
END
$$;
COMMENT ON FUNCTION perpca_model_fill_clients(record, text, text, float8[], text) IS
    'internal: writes the clients rows of a model (mean, variance ratios, training error) from statistics';

CREATE FUNCTION perpca_train(model text, clients text, n_global int, n_local int,
                             rounds int DEFAULT NULL, tolerance float8 DEFAULT NULL,
                             step float8 DEFAULT NULL, update text DEFAULT NULL,
                             retraction text DEFAULT NULL, init text DEFAULT NULL,
                             seed bigint DEFAULT NULL, center text DEFAULT NULL,
                             weights text DEFAULT NULL, method text DEFAULT NULL,
                             verbose boolean DEFAULT false, adaptive boolean DEFAULT NULL,
                             replace boolean DEFAULT false, start text DEFAULT NULL)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    t record := @extschema@.perpca_model_tables(model);
    has_n_local boolean;
    call text;
    diag record;
    gmean float8[];
    eff_center text;
    eff_weights text;
    total float8;
BEGIN
    IF t.present AND NOT replace THEN
        RAISE EXCEPTION 'model "%" already exists', model USING ERRCODE = 'duplicate_table',
            HINT = 'Pass replace => true to replace it, or drop it with perpca_drop().';
    END IF;

    -- Run the clients query once; the fit and the per-client figures read the same rows.
    IF pg_catalog.to_regclass('pg_temp.perpca_train_src') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_train_src;
    END IF;
    IF pg_catalog.to_regclass('pg_temp.perpca_train_fit') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_train_fit;
    END IF;
    EXECUTE pg_catalog.format('CREATE TEMPORARY TABLE perpca_train_src (client, stats) AS %s', clients);
    has_n_local := EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                            WHERE attrelid = pg_catalog.to_regclass('pg_temp.perpca_train_src') AND attnum = 3
                              AND NOT attisdropped);
    call := pg_catalog.format('SELECT * FROM @extschema@.perpca_fit(%L, %s, %s',
        'SELECT client::text, stats' ||
        CASE WHEN has_n_local THEN ', ' || pg_catalog.quote_ident(
            (SELECT attname FROM pg_catalog.pg_attribute
              WHERE attrelid = pg_catalog.to_regclass('pg_temp.perpca_train_src') AND attnum = 3)) ELSE '' END ||
        ' FROM pg_temp.perpca_train_src', n_global, n_local);
    call := call
        || coalesce(', rounds => ' || rounds, '')
        || coalesce(', tolerance => ' || pg_catalog.quote_literal(tolerance) || '::float8', '')
        || coalesce(', step => ' || pg_catalog.quote_literal(step) || '::float8', '')
        || coalesce(', update => ' || pg_catalog.quote_literal($8), '')
        || coalesce(', retraction => ' || pg_catalog.quote_literal(retraction), '')
        || coalesce(', init => ' || pg_catalog.quote_literal(init), '')
        || coalesce(', seed => ' || seed, '')
        || coalesce(', center => ' || pg_catalog.quote_literal(center), '')
        || coalesce(', weights => ' || pg_catalog.quote_literal(weights), '')
        || coalesce(', method => ' || pg_catalog.quote_literal(method), '')
        || coalesce(', adaptive => ' || adaptive, '') || coalesce(', start => ' || pg_catalog.quote_literal(start), '')
        || pg_catalog.format(', verbose => %L)', $15);
    EXECUTE 'CREATE TEMPORARY TABLE perpca_train_fit AS ' || call;
    SELECT * INTO diag FROM @extschema@.perpca_last_fit();

    eff_center := @extschema@.perpca_fit_option('center', center);
    eff_weights := @extschema@.perpca_fit_option('weights', weights);
    SELECT @extschema@.perpca_mean(@extschema@.perpca_merge(s.stats)) INTO gmean FROM pg_temp.perpca_train_src s;

    -- Swap: lock out other writers of this model (readers go on), then replace the rows.
    IF t.present THEN
        EXECUTE pg_catalog.format('LOCK TABLE %s, %s, %s IN SHARE ROW EXCLUSIVE MODE',
                                  t.info, t.components, t.clients);
        EXECUTE pg_catalog.format('DELETE FROM %s', t.components);
        EXECUTE pg_catalog.format('DELETE FROM %s', t.clients);
        EXECUTE pg_catalog.format('DELETE FROM %s', t.info);
    ELSE
        PERFORM @extschema@.perpca_model_create(t);
    END IF;

    EXECUTE pg_catalog.format('INSERT INTO %s (client, kind, component, pc, variance)
                               SELECT client, kind, component, pc, variance FROM pg_temp.perpca_train_fit',
                              t.components);
    PERFORM @extschema@.perpca_model_fill_clients(t, 'pg_temp.perpca_train_src', eff_center, gmean, 'fit');
    EXECUTE pg_catalog.format(
        'SELECT CASE WHEN $1 = %L THEN avg(total_variance)
                     ELSE sum(n * total_variance) / sum(n) END FROM %s', 'equal', t.clients)
        INTO total USING eff_weights;
    EXECUTE pg_catalog.format($f$
        INSERT INTO %s (model, d, n_global, n_local, n_clients, method, rounds_max, tolerance, step,
                        adaptive, update, retraction, init, seed, center, weights, source_query,
                        rounds, converged, objective, kkt_residual, theta_est, step_used,
                        fit_seconds, global_mean, total_variance, fitted_at, version)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                $18, $19, $20, $21, $22, $23, $24, $25, $26, pg_catalog.now(),
                pg_catalog.nextval('@extschema@.perpca_model_version'))$f$, t.info)
    USING t.base, diag.dim, n_global, n_local, diag.n_clients, diag.method,
          @extschema@.perpca_fit_option('rounds', rounds::text)::int,
          @extschema@.perpca_fit_option('tolerance', tolerance::text)::float8,
          step, adaptive,
          @extschema@.perpca_fit_option('update', $8),
          @extschema@.perpca_fit_option('retraction', retraction),
          @extschema@.perpca_fit_option('init', init),
          @extschema@.perpca_fit_option('seed', seed::text)::bigint,
          eff_center, eff_weights, clients, diag.rounds, diag.converged, diag.objective,
          diag.kkt_residual, diag.theta_est, diag.step, diag.seconds, gmean, total;

    DROP TABLE pg_temp.perpca_train_src;
    DROP TABLE pg_temp.perpca_train_fit;
    RETURN QUERY SELECT t.base, diag.dim, diag.n_clients, diag.rounds, diag.converged,
                        diag.objective, diag.theta_est;
END
$$;
COMMENT ON FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text) IS
    'fits PerPCA on a query returning (client, perpca_stats[, n_local]) and stores the model as tables <model>_components, <model>_clients and <model>_info; replace => true swaps an existing model atomically; NULL options take perpca_fit''s defaults; start is perpca_fit''s warm-start query (with init => ''given'')';

CREATE FUNCTION perpca_drop(model text, if_exists boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    t record := @extschema@.perpca_model_tables(model);
BEGIN
    IF NOT t.present THEN
        IF if_exists THEN
            RAISE NOTICE 'model "%" does not exist, skipping', model;
            RETURN;
        END IF;
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                    WHERE attrelid = t.info::regclass AND attname = 'version' AND NOT attisdropped) THEN
        RAISE EXCEPTION 'table % is not the info table of a perpca model', t.info
            USING ERRCODE = 'wrong_object_type';
    END IF;
    EXECUTE pg_catalog.format('DROP TABLE %s, %s, %s', t.components, t.clients, t.info);
END
$$;
COMMENT ON FUNCTION perpca_drop(text, boolean) IS
    'drops the tables of a model; with if_exists => true a missing model is only a notice';

CREATE FUNCTION perpca_personalize(model text, client text, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    t record := @extschema@.perpca_model_tables(model);
    m record;
    u float8[];
    centre float8[];
BEGIN
    IF client IS NULL OR stats IS NULL THEN
        RAISE EXCEPTION 'client and stats must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.perpca_model_tables_existing(model);
    EXECUTE pg_catalog.format('LOCK TABLE %s, %s, %s IN SHARE ROW EXCLUSIVE MODE',
                              t.info, t.components, t.clients);
    EXECUTE pg_catalog.format('SELECT d, n_local, center, global_mean FROM %s', t.info) INTO m;
    IF @extschema@.perpca_dim(stats) <> m.d THEN
        RAISE EXCEPTION 'stats has dimension %, expected %', @extschema@.perpca_dim(stats), m.d
            USING ERRCODE = 'data_exception';
    END IF;
    EXECUTE pg_catalog.format('SELECT array_agg(pc ORDER BY component) FROM %s WHERE kind = %L',
                              t.components, 'global') INTO u;
    centre := CASE m.center WHEN 'client' THEN @extschema@.perpca_mean(stats)
                            WHEN 'global' THEN m.global_mean
                            ELSE pg_catalog.array_fill(0::float8, ARRAY[m.d]) END;
    EXECUTE pg_catalog.format('DELETE FROM %s WHERE kind = %L AND client = $1', t.components, 'local')
        USING client;
    EXECUTE pg_catalog.format('INSERT INTO %s (client, kind, component, pc, variance)
                               SELECT $1, %L, l.component, l.pc, l.variance
                                 FROM @extschema@.perpca_local_pcs($2, $3, $4, $5) l',
                              t.components, 'local')
        USING client, stats, u, coalesce(n_local, m.n_local), centre;
    IF pg_catalog.to_regclass('pg_temp.perpca_personalize_src') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_personalize_src;
    END IF;
    CREATE TEMPORARY TABLE perpca_personalize_src AS SELECT client, stats;
    PERFORM @extschema@.perpca_model_fill_clients(t, 'pg_temp.perpca_personalize_src', m.center,
                                                  m.global_mean, 'personalize');
    DROP TABLE pg_temp.perpca_personalize_src;
    EXECUTE pg_catalog.format('UPDATE %s SET version = pg_catalog.nextval(%L)', t.info,
                              '@extschema@.perpca_model_version');
    RETURN QUERY EXECUTE pg_catalog.format(
        'SELECT component, pc, variance FROM %s WHERE kind = %L AND client = $1 ORDER BY component',
        t.components, 'local') USING client;
END
$$;
COMMENT ON FUNCTION perpca_personalize(text, text, perpca_stats, int) IS
    'computes local components for a (new) client from its statistics with the global components frozen and stores them in the model; n_local defaults to the model''s';
