-- ==========================================================================
-- Models: a fit stored as plain tables <model>_components, <model>_clients
-- and <model>_info, and the functions that write them
--
-- Search path: the entry points resolve an unqualified model name (and run
-- the caller's clients query) through the caller's search_path, so they
-- qualify every function and operator they use (OPERATOR(pg_catalog.=),
-- pg_catalog.format, ...).  The internal functions that only compute and
-- write pin search_path = pg_catalog, pg_temp.
--
-- Ownership: a model that belongs to another role is written as that role,
-- inside a security-restricted operation (perpca_internal.perpca_run_as_owner,
-- see 50_refresh.sql), never with the caller's privileges.
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
    base := parts[n];
    IF pg_catalog.octet_length(base) OPERATOR(pg_catalog.>) 52 THEN
        RAISE EXCEPTION 'model name "%" is too long', base USING ERRCODE = 'name_too_long',
            DETAIL = 'A model name has at most 52 bytes, so that "<model>_components" is a valid table name.';
    END IF;
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

-- Create the three tables of a model.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_create(schema_name text, base text) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    components text := format('%I.%I', schema_name, base || '_components');
    clients text := format('%I.%I', schema_name, base || '_clients');
    info text := format('%I.%I', schema_name, base || '_info');
BEGIN
    -- Constraints are written with pg_catalog's operators: they are stored
    -- bound, so they must not bind to whatever a search_path offers.
    EXECUTE format($f$
        CREATE TABLE %s (
            client text,
            kind text NOT NULL CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['global', 'local'])),
            component int NOT NULL CHECK (component OPERATOR(pg_catalog.>=) 1),
            pc float8[] NOT NULL,
            variance float8,
            CHECK ((kind OPERATOR(pg_catalog.=) 'global') OPERATOR(pg_catalog.=) (client IS NULL)),
            UNIQUE NULLS NOT DISTINCT (kind, client, component))$f$, components);
    EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', components);
    EXECUTE format($f$
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
            source text NOT NULL CHECK (source OPERATOR(pg_catalog.=) ANY (ARRAY['fit', 'personalize'])),
            score_covariance float8[],
            residual_moments float8[])$f$,
        clients);
    EXECUTE format($f$
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
            version bigint NOT NULL,
            client_type text,
            options jsonb,
            scale_factors float8[],
            constant_features int[])$f$, info);
    EXECUTE format('COMMENT ON TABLE %s IS %L', components,
        'perpca model ' || base || ': global (client NULL) and local principal components');
    EXECUTE format('COMMENT ON TABLE %s IS %L', clients,
        'perpca model ' || base || ': one row per client (mean, explained-variance ratios, training error)');
    EXECUTE format('COMMENT ON TABLE %s IS %L', info,
        'perpca model ' || base || ': options, source query, key type, diagnostics and version of the fit');
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_create(text, text) IS 'internal: creates the tables of a new model';

-- Write the clients rows of a model from the statistics of the FROM item
-- src (client text, stats perpca_stats), which may use $4 and $5.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_fill_clients(schema_name text, base text, src text, center text,
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
    -- A model stored before 0.3.0 gets the columns of perpca_model_monitor
    -- and perpca_component_variance when its owner writes it.
    IF NOT monitor AND pg_has_role((SELECT relowner FROM pg_class WHERE oid = clients), 'USAGE') THEN
        EXECUTE format('ALTER TABLE %s ADD COLUMN IF NOT EXISTS score_covariance float8[], '
                       'ADD COLUMN IF NOT EXISTS residual_moments float8[]', clients);
        monitor := true;
    END IF;
    -- Means in the data's units; variances, ratios and errors in the units
    -- the fit saw (divided by scale_factors, NULL = unscaled); the scores'
    -- covariance and residual spectrum (client_monitor_stats) too.
    EXECUTE format($f$
        WITH r AS (
            SELECT s.client, s.stats AS raw, perpca_internal.scale_stats(s.stats, $6) AS stats FROM %s s),
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
             CROSS JOIN LATERAL perpca_internal.client_monitor_stats(c.stats, u.u, v.v) AS ms)
        INSERT INTO %I.%I (client, n, mean, n_local, total_variance, global_ratio, local_ratio,
                           residual_ratio, train_error, source%s)
        SELECT client, n, mean, r2, tv, gv / tv, lv / tv, (tv - gv - lv) / tv, tv - gv - lv, $3%s
          FROM f
        ON CONFLICT (client) DO UPDATE
           SET n = excluded.n, mean = excluded.mean, n_local = excluded.n_local,
               total_variance = excluded.total_variance, global_ratio = excluded.global_ratio,
               local_ratio = excluded.local_ratio, residual_ratio = excluded.residual_ratio,
               train_error = excluded.train_error, source = excluded.source%s$f$,
        src, schema_name, base || '_components', schema_name, base || '_components',
        schema_name, base || '_clients',
        CASE WHEN monitor THEN ', score_covariance, residual_moments' ELSE '' END,
        CASE WHEN monitor THEN ', score_covariance, residual_moments' ELSE '' END,
        CASE WHEN monitor THEN ', score_covariance = excluded.score_covariance, '
                               'residual_moments = excluded.residual_moments' ELSE '' END)
    USING center, global_mean, source, one_client, one_stats, scale_factors;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_fill_clients(text, text, text, text, float8[], text, text, perpca_stats, float8[]) IS
    'internal: writes the clients rows of a model (mean in the data''s units; variance ratios and training error of the statistics divided by scale_factors, NULL = unscaled) from statistics';

-- The clients of a train or refresh, staged once: the fit and the per-client
-- figures read the same rows.  A temporary table, created by the caller (a
-- security-restricted operation may not create one) and usable by role
-- reader (the model's owner when the model is written as its owner).
CREATE OR REPLACE FUNCTION perpca_internal.perpca_stage_create(reader regrole) RETURNS void
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
COMMENT ON FUNCTION perpca_internal.perpca_stage_create(regrole) IS
    'internal: creates the temporary table that holds the clients of a train or refresh, usable by reader';

-- Run a clients query (client, perpca_stats[, n_local]) once into the stage,
-- with the search_path of the caller (train) or of the owner's restricted
-- refresh, recording the type of the client key.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_stage_fill(query text) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
BEGIN
    EXECUTE pg_catalog.format(
        'INSERT INTO pg_temp.perpca_train_src
         SELECT pg_catalog.pg_typeof(q.perpca_client_key), q.*
           FROM (%s
                ) AS q(perpca_client_key, perpca_client_stats)',
        pg_catalog.regexp_replace(query, '[;[:space:]]+$', ''));
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_stage_fill(text) IS
    'internal: runs a clients query into the temporary stage of a train, with its key type';

-- Fit the staged clients and store the result as model schema_name.base
-- (new, or replacing the rows of an existing one); the caller holds the
-- model's lock.  Options pass through to perpca_fit by name; the effective
-- ones are recorded in <model>_info.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_model_store(
    schema_name text, base text, source_query text, n_global int, n_local int,
    rounds int, tolerance float8, step float8, update text, retraction text, init text,
    seed bigint, center text, weights text, method text, verbose boolean, adaptive boolean,
    start text, solver text, scale text)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    components text := format('%I.%I', schema_name, base || '_components');
    clients text := format('%I.%I', schema_name, base || '_clients');
    info text := format('%I.%I', schema_name, base || '_info');
    fitted perpca_internal.perpca_fit_row[];
    diag record;
    opts jsonb;
    key_type text;
    gmean float8[];
    merged @extschema@.perpca_stats;
    factors record;
    total float8;
BEGIN
    SELECT format_type(s.client_type, NULL) INTO key_type FROM pg_temp.perpca_train_src s LIMIT 1;

    SELECT array_agg(ROW(f.client, f.kind, f.component, f.pc, f.variance)::perpca_internal.perpca_fit_row) INTO fitted
      FROM @extschema@.perpca_fit(
               format('SELECT client, stats%s FROM pg_temp.perpca_train_src ORDER BY client COLLATE "C"',
                      CASE WHEN EXISTS (SELECT FROM pg_temp.perpca_train_src WHERE perpca_train_src.n_local IS NOT NULL)
                           THEN ', n_local' ELSE '' END),
               n_global, n_local, rounds => rounds, tolerance => tolerance, step => step,
               update => $9, retraction => retraction, init => init, seed => seed,
               center => center, weights => weights, method => method, verbose => $16,
               adaptive => adaptive, start => start, solver => solver, scale => scale) AS f;
    SELECT * INTO STRICT diag FROM @extschema@.perpca_last_fit();
    opts := to_jsonb(diag) -> 'options';
    SELECT @extschema@.perpca_merge(s.stats ORDER BY s.client COLLATE "C") INTO merged FROM pg_temp.perpca_train_src s;
    gmean := @extschema@.perpca_mean(merged);
    -- The divisors the fit divided its input by (NULL: unscaled).
    SELECT * INTO STRICT factors FROM perpca_internal.last_fit_scale_factors();

    -- Swap: lock out other writers of this model (readers go on), then replace the rows.
    IF to_regclass(info) IS NOT NULL THEN
        EXECUTE format('LOCK TABLE %s, %s, %s IN SHARE ROW EXCLUSIVE MODE', info, components, clients);
        EXECUTE format('DELETE FROM %s', components);
        EXECUTE format('DELETE FROM %s', clients);
        EXECUTE format('DELETE FROM %s', info);
        -- A model stored by 0.1.0 gets the columns 0.2.0 added, once.
        IF NOT EXISTS (SELECT FROM pg_attribute
                        WHERE attrelid = info::regclass AND attname = 'options' AND NOT attisdropped) THEN
            EXECUTE format('ALTER TABLE %s ADD COLUMN IF NOT EXISTS client_type text, ADD COLUMN options jsonb', info);
        END IF;
        IF NOT EXISTS (SELECT FROM pg_attribute
                        WHERE attrelid = info::regclass AND attname = 'scale_factors' AND NOT attisdropped) THEN
            EXECUTE format('ALTER TABLE %s ADD COLUMN scale_factors float8[], ADD COLUMN constant_features int[]', info);
        END IF;
    ELSE
        PERFORM perpca_internal.perpca_model_create(schema_name, base);
    END IF;

    EXECUTE format('INSERT INTO %s (client, kind, component, pc, variance)
                    SELECT u.client, u.kind, u.component, u.pc, u.variance
                      FROM unnest($1) AS u',
                   components) USING fitted;
    PERFORM perpca_internal.perpca_model_fill_clients(schema_name, base, 'pg_temp.perpca_train_src',
                                                      opts ->> 'center', gmean, 'fit', NULL, NULL, factors.scale_factors);
    EXECUTE format('SELECT CASE WHEN $1 = %L THEN avg(total_variance)
                                ELSE sum(n::float8 * total_variance) / sum(n::float8) END FROM %s',
                   'equal', clients)
        INTO total USING opts ->> 'weights';
    EXECUTE format($f$
        INSERT INTO %s (model, d, n_global, n_local, n_clients, method, rounds_max, tolerance, step,
                        adaptive, update, retraction, init, seed, center, weights, source_query,
                        rounds, converged, objective, kkt_residual, theta_est, step_used,
                        fit_seconds, global_mean, total_variance, fitted_at, version, client_type, options,
                        scale_factors, constant_features)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                $18, $19, $20, $21, $22, $23, $24, $25, $26, now(),
                nextval('@extschema@.perpca_model_version'), $27, $28, $29, $30)$f$, info)
    USING base, diag.d, n_global, n_local, diag.n_clients, opts ->> 'method',
          (opts ->> 'rounds')::int, (opts ->> 'tolerance')::float8, (opts ->> 'step')::float8,
          (opts ->> 'adaptive')::boolean,
          opts ->> 'update', opts ->> 'retraction', opts ->> 'init', (opts ->> 'seed')::bigint,
          opts ->> 'center', opts ->> 'weights', source_query, diag.rounds_run, diag.converged, diag.objective,
          diag.kkt_residual, diag.theta_est, diag.step, diag.seconds, gmean, total, key_type, opts,
          factors.scale_factors, factors.constant_features;

    RETURN QUERY SELECT base, diag.d, diag.n_clients, diag.rounds_run, diag.converged,
                        diag.objective, diag.theta_est;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_store(text, text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text) IS
    'internal: fits the staged clients and stores (or replaces) the model''s rows, with the effective options';

-- Run a warm-start query (client, kind, component, pc) once into a temporary
-- table, as the caller and with the caller's search_path (the fit itself
-- runs with a fixed one), readable by reader.
CREATE OR REPLACE FUNCTION perpca_internal.perpca_stage_start(query text, reader regrole) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
BEGIN
    IF pg_catalog.to_regclass('pg_temp.perpca_train_start') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_train_start;
    END IF;
    EXECUTE pg_catalog.concat('CREATE TEMPORARY TABLE perpca_train_start AS ',
                              pg_catalog.regexp_replace(query, '[;[:space:]]+$', ''));
    IF reader::oid OPERATOR(pg_catalog.<>) pg_catalog.current_user()::regrole::oid THEN
        EXECUTE pg_catalog.format('GRANT SELECT ON pg_temp.perpca_train_start TO %s', reader);
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_stage_start(text, regrole) IS
    'internal: runs perpca_train''s warm-start query once, as the caller, into a temporary table usable by reader';

CREATE OR REPLACE FUNCTION perpca_train(model text, query text, n_global int, n_local int,
                             rounds int DEFAULT NULL, tolerance float8 DEFAULT NULL,
                             step float8 DEFAULT NULL, update text DEFAULT NULL,
                             retraction text DEFAULT NULL, init text DEFAULT NULL,
                             seed bigint DEFAULT NULL, center text DEFAULT NULL,
                             weights text DEFAULT NULL, method text DEFAULT NULL,
                             verbose boolean DEFAULT false, adaptive boolean DEFAULT NULL,
                             replace boolean DEFAULT false, start text DEFAULT NULL,
                             solver text DEFAULT NULL, scale text DEFAULT NULL)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables(model);
    owner regrole;
    r jsonb;
BEGIN
    IF $2 IS NULL OR n_global IS NULL THEN
        RAISE EXCEPTION 'query and n_global must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF t.present THEN
        PERFORM perpca_internal.perpca_model_check_owner(model,
                    perpca_internal.perpca_model_owner(t.schema_name, t.base));
    END IF;
    -- Lock first, then look: of sessions creating one model at once, one
    -- creates it and the others find it (and replace it, or fail cleanly).
    PERFORM perpca_internal.perpca_model_lock(model, t.schema_name, t.base, true);
    t := perpca_internal.perpca_model_tables(model);
    IF t.present AND NOT coalesce(replace, false) THEN
        RAISE EXCEPTION 'model "%" already exists', model USING ERRCODE = 'duplicate_table',
            HINT = 'Pass replace => true to replace it, or drop it with perpca_drop().';
    END IF;
    owner := CASE WHEN t.present THEN perpca_internal.perpca_model_owner(t.schema_name, t.base)
                  ELSE pg_catalog.current_user()::regrole END;
    PERFORM perpca_internal.perpca_model_check_owner(model, owner);
    IF start IS NOT NULL THEN
        PERFORM perpca_internal.perpca_stage_start(start, owner);
        start := 'SELECT * FROM pg_temp.perpca_train_start';
    END IF;
    PERFORM perpca_internal.check_fit_options(rounds, tolerance, step, $8, retraction, init, seed,
                                              center, weights, method, adaptive, start, solver, scale);

    -- The caller's query runs as the caller, once.
    PERFORM perpca_internal.perpca_stage_create(owner);
    PERFORM perpca_internal.perpca_stage_fill($2);
    IF owner::oid OPERATOR(pg_catalog.=) pg_catalog.current_user()::regrole::oid THEN
        RETURN QUERY SELECT * FROM perpca_internal.perpca_model_store(
                 t.schema_name, t.base, $2, n_global, n_local, rounds, tolerance, step, $8,
                 retraction, init, seed, center, weights, method, $15, adaptive, start, solver, scale);
    ELSE
        -- Another role's model is written as that role.
        r := perpca_internal.perpca_run_as_owner(t.info::regclass, '@extschema@'::regnamespace,
                 'SELECT pg_catalog.to_jsonb(s) FROM perpca_internal.perpca_model_store($1, $2, $3, $4, $5, $6,
                      $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) AS s',
                 t.schema_name, t.base, $2, n_global, n_local, rounds, tolerance, step, $8,
                 retraction, init, seed, center, weights, method, $15, adaptive, start, solver, scale);
        RETURN QUERY SELECT r OPERATOR(pg_catalog.->>) 'model_name', (r OPERATOR(pg_catalog.->>) 'd')::int,
                            (r OPERATOR(pg_catalog.->>) 'n_clients')::int,
                            (r OPERATOR(pg_catalog.->>) 'rounds_run')::int,
                            (r OPERATOR(pg_catalog.->>) 'converged')::boolean,
                            (r OPERATOR(pg_catalog.->>) 'objective')::float8,
                            (r OPERATOR(pg_catalog.->>) 'theta_est')::float8;
    END IF;
    DROP TABLE pg_temp.perpca_train_src;
    IF pg_catalog.to_regclass('pg_temp.perpca_train_start') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_train_start;
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text) IS
    'fits PerPCA on a query returning (client, perpca_stats[, n_local]) and stores the model as tables <model>_components, <model>_clients and <model>_info; the client key may be of any type (its type is recorded); replace => true swaps an existing model atomically (another role''s model is written as its owner); NULL options take perpca_fit''s defaults (the effective ones are recorded in <model>_info.options); start is perpca_fit''s warm-start query (with init => ''given''); solver is perpca_fit''s; scale => ''standard'' divides each feature by its pooled standard deviation, stored in <model>_info.scale_factors and applied by every function that reads the model';
