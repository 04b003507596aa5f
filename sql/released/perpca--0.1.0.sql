-- perpca 0.1.0: Personalized PCA in SQL
\echo Use "CREATE EXTENSION perpca" to load this file. \quit

-- ==========================================================================
-- Statistics: the perpca_stats type and its aggregates
-- ==========================================================================

CREATE TYPE perpca_stats;

CREATE FUNCTION perpca_stats_in(cstring) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_out(perpca_stats) RETURNS cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_recv(internal) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_send(perpca_stats) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE perpca_stats (
    INPUT = perpca_stats_in,
    OUTPUT = perpca_stats_out,
    RECEIVE = perpca_stats_recv,
    SEND = perpca_stats_send,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = double,
    -- out of line without compression: floating-point data rarely compress,
    -- and trying costs time on every large value
    STORAGE = external
);

COMMENT ON TYPE perpca_stats IS
    'sufficient statistics of one group: row count, dimension, mean and centered co-moment matrix';
COMMENT ON FUNCTION perpca_stats_in(cstring) IS 'text input of perpca_stats';
COMMENT ON FUNCTION perpca_stats_out(perpca_stats) IS 'text output of perpca_stats (round-trips bit-exactly)';
COMMENT ON FUNCTION perpca_stats_recv(internal) IS 'binary input of perpca_stats';
COMMENT ON FUNCTION perpca_stats_send(perpca_stats) IS 'binary output of perpca_stats';

-- Aggregate support functions (internal state).
CREATE FUNCTION perpca_stats_accum(internal, float8[]) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_stats_merge_accum(internal, perpca_stats) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_stats_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_stats_serialize(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_deserialize(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_stats_final(internal) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION perpca_stats_accum(internal, float8[]) IS 'transition function of perpca_stats(float8[])';
COMMENT ON FUNCTION perpca_stats_merge_accum(internal, perpca_stats) IS 'transition function of perpca_merge(perpca_stats)';
COMMENT ON FUNCTION perpca_stats_combine(internal, internal) IS 'combine function of the perpca_stats aggregates (pairwise merge)';
COMMENT ON FUNCTION perpca_stats_serialize(internal) IS 'serialize function of the perpca_stats aggregates';
COMMENT ON FUNCTION perpca_stats_deserialize(bytea, internal) IS 'deserialize function of the perpca_stats aggregates';
COMMENT ON FUNCTION perpca_stats_final(internal) IS 'final function of the perpca_stats aggregates';

CREATE AGGREGATE perpca_stats(float8[]) (
    SFUNC = perpca_stats_accum,
    STYPE = internal,
    FINALFUNC = perpca_stats_final,
    COMBINEFUNC = perpca_stats_combine,
    SERIALFUNC = perpca_stats_serialize,
    DESERIALFUNC = perpca_stats_deserialize,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats(float8[]) IS
    'count, mean and centered co-moment matrix of the (non-NULL) rows of a group';

CREATE AGGREGATE perpca_merge(perpca_stats) (
    SFUNC = perpca_stats_merge_accum,
    STYPE = internal,
    FINALFUNC = perpca_stats_final,
    COMBINEFUNC = perpca_stats_combine,
    SERIALFUNC = perpca_stats_serialize,
    DESERIALFUNC = perpca_stats_deserialize,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_merge(perpca_stats) IS
    'merges perpca_stats values exactly as if their rows had been aggregated together';

-- Accessors.
CREATE FUNCTION perpca_count(perpca_stats) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_dim(perpca_stats) RETURNS int
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_mean(perpca_stats) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_covariance(s perpca_stats, centered boolean DEFAULT true) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION perpca_stats_form(perpca_stats) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_stats_form(perpca_stats) IS
    'how the value stores its co-moments: ''thin'' (the centred rows, while n <= d/2) or ''dense'' (packed d x d matrix)';
COMMENT ON FUNCTION perpca_count(perpca_stats) IS 'number of rows n summarized by the statistics';
COMMENT ON FUNCTION perpca_dim(perpca_stats) IS 'dimension d of the rows';
COMMENT ON FUNCTION perpca_mean(perpca_stats) IS 'mean vector (d values); NULL when n = 0';
COMMENT ON FUNCTION perpca_covariance(perpca_stats, boolean) IS
    'd x d covariance scaled by 1/n; with centered => false the uncentered second moment (1/n) sum x x^T; NULL when n = 0';

-- ==========================================================================
-- Projection: pure functions on float8[] components (rows orthonormal)
-- ==========================================================================

CREATE FUNCTION perpca_scores(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_scores(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_reconstruct(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_reconstruct(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_residual(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_residual(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION perpca_scores(float8[], float8[]) IS
    'scores C x of x (d values) on the k x d components C whose rows are orthonormal, e.g. array_agg(pc ORDER BY component)';
COMMENT ON FUNCTION perpca_scores(float8[], float8[], float8[]) IS
    'scores C (x - mean) of x on the k x d components C, centering x at mean first';
COMMENT ON FUNCTION perpca_reconstruct(float8[], float8[]) IS
    'reconstruction C^T C x of x from the k x d orthonormal components C';
COMMENT ON FUNCTION perpca_reconstruct(float8[], float8[], float8[]) IS
    'reconstruction mean + C^T C (x - mean) of x from the k x d orthonormal components C';
COMMENT ON FUNCTION perpca_residual(float8[], float8[]) IS
    'residual x - C^T C x of x after projecting on the k x d orthonormal components C';
COMMENT ON FUNCTION perpca_residual(float8[], float8[], float8[]) IS
    'residual (x - mean) - C^T C (x - mean) of x after centering and projecting on the components C';

CREATE FUNCTION perpca_total_variance(s perpca_stats) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_total_variance(s perpca_stats, center float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_explained_variance(s perpca_stats, components float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_explained_variance(s perpca_stats, components float8[], center float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int,
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;
CREATE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int, center float8[],
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

COMMENT ON FUNCTION perpca_total_variance(perpca_stats) IS
    'total variance tr(S) of a group about its own mean (sum of the eigenvalues of its covariance)';
COMMENT ON FUNCTION perpca_total_variance(perpca_stats, float8[]) IS
    'total second moment tr(S) of a group about the given centre (a zero centre gives the uncentered moment)';
COMMENT ON FUNCTION perpca_explained_variance(perpca_stats, float8[]) IS
    'variance of a group about its own mean captured by the k x d orthonormal components C: tr(C S C^T)';
COMMENT ON FUNCTION perpca_explained_variance(perpca_stats, float8[], float8[]) IS
    'second moment of a group about the given centre captured by the k x d orthonormal components C: tr(C S C^T)';
COMMENT ON FUNCTION perpca_local_pcs(perpca_stats, float8[], int) IS
    'local components of a group with the global components frozen: top n_local eigenvectors of its covariance deflated by the global components (largest entry positive)';
COMMENT ON FUNCTION perpca_local_pcs(perpca_stats, float8[], int, float8[]) IS
    'local components of a group about the given centre with the global components frozen: top n_local eigenvectors of the deflated second moment';

-- ==========================================================================
-- Fit: federated PerPCA rounds across the clients of a query (perpca_fit)
-- ==========================================================================

CREATE FUNCTION perpca_fit(
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT 5000,
    tolerance float8 DEFAULT 1e-9,
    step float8 DEFAULT NULL,
    update text DEFAULT 'stgd',
    retraction text DEFAULT 'polar',
    init text DEFAULT 'best',
    seed bigint DEFAULT 0,
    center text DEFAULT 'client',
    weights text DEFAULT 'equal',
    method text DEFAULT 'perpca',
    verbose boolean DEFAULT false,
    adaptive boolean DEFAULT NULL,
    start text DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text) IS
    'Personalized PCA: global components shared by all clients (rows of the query) and local components per client; init => ''given'' starts from the components returned by the start query (client, kind, component, pc)';

CREATE FUNCTION perpca_last_fit()
RETURNS TABLE (method text, rounds int, converged boolean, objective float8,
               kkt_residual float8, theta_est float8, step float8,
               n_clients int, dim int, seconds float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit() IS
    'diagnostics of the last perpca_fit call in this session (no row before the first)';

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

CREATE FUNCTION perpca_component_info(model text)
RETURNS TABLE (client text, kind text, component int, variance float8,
               explained_variance_ratio float8, cumulative_explained_variance_ratio float8)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    t record := @extschema@.perpca_model_tables_existing(model);
BEGIN
    RETURN QUERY EXECUTE pg_catalog.format($f$
        SELECT NULL::text, 'global'::text, c.component, c.variance, c.variance / i.total_variance,
               sum(c.variance) OVER (ORDER BY c.component) / i.total_variance
          FROM %s c CROSS JOIN %s i
         WHERE c.kind = 'global'
        UNION ALL
        SELECT c.client, 'local', c.component, c.variance, c.variance / k.total_variance,
               k.global_ratio + sum(c.variance) OVER (PARTITION BY c.client ORDER BY c.component)
                                / k.total_variance
          FROM %s c JOIN %s k ON k.client = c.client
         WHERE c.kind = 'local'
         ORDER BY 1 NULLS FIRST, 3$f$, t.components, t.info, t.components, t.clients);
END
$$;
COMMENT ON FUNCTION perpca_component_info(text) IS
    'variance, explained-variance ratio and cumulative ratio of each component (as ML.PRINCIPAL_COMPONENT_INFO): global components against the fit''s weighted mean total variance, local ones against their client''s total variance, cumulated on top of the client''s global share';

CREATE FUNCTION perpca_model_theta(model text, threshold float8 DEFAULT 0.05,
                                   OUT theta_est float8, OUT hint text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    t record := @extschema@.perpca_model_tables_existing(model);
BEGIN
    EXECUTE pg_catalog.format('SELECT theta_est FROM %s', t.info) INTO theta_est;
    IF theta_est < threshold THEN
        hint := 'theta_est is small: the local components of the clients are nearly aligned, so global and local parts are not separable; lower n_local';
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_model_theta(text, float8) IS
    'the model''s misalignment theta_est = 1 - lambda_max(mean of the local projectors), with a hint when it is below threshold';

-- Row-wise projection on a stored model (read once per backend and cached).
CREATE FUNCTION perpca_model_scores(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_global_part(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_local_part(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_reconstruct(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_residual(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_error(model text, client text, x float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_similarity(model text, OUT client_a text, OUT client_b text, OUT distance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION perpca_model_scores(text, text, float8[]) IS
    'scores of a row x of a client: n_global global scores then the client''s local scores, after centering as the fit did; a client the model has never seen gets the global scores only';
COMMENT ON FUNCTION perpca_model_global_part(text, text, float8[]) IS
    'global part of x, centre + U U^T (x - centre): what the clients share (the background); global part + local part + residual = x';
COMMENT ON FUNCTION perpca_model_local_part(text, text, float8[]) IS
    'local part of x, V V^T (x - centre): what is unique to the client (the foreground); zero for a client the model has never seen';
COMMENT ON FUNCTION perpca_model_reconstruct(text, text, float8[]) IS
    'reconstruction of x from the global and the client''s local components (global part + local part)';
COMMENT ON FUNCTION perpca_model_residual(text, text, float8[]) IS
    'residual of x: x minus its reconstruction from the global and the client''s local components';
COMMENT ON FUNCTION perpca_model_error(text, text, float8[]) IS
    'reconstruction error of x, the squared norm of its residual (an anomaly score); its mean over a client''s training rows is the client''s train_error';
COMMENT ON FUNCTION perpca_similarity(text) IS
    'client distance rho = ||P_Va - P_Vb||_F^2 / r2 between the local subspaces of every ordered pair of clients (0 on the diagonal), for clustering clients by what makes them different';

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

-- ==========================================================================
-- Federated: PerPCA rounds run where the data live.  The coordinator
-- (perpca_fit_federated) keeps one libpq connection per shard; each round
-- sends U out and gets one weighted sum of the shard's clients' U_i back.
-- The perpca_shard_* functions are the shard side of that protocol.
-- ==========================================================================

CREATE FUNCTION perpca_shard_open(fit_id text, query text, n_global int, n_local int,
                                  weights text DEFAULT 'equal',
                                  OUT n_clients int, OUT dim int, OUT n_rows bigint,
                                  OUT mean_sum float8[], OUT stats_bytes bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_open(text, text, int, int, text) IS
    'federated fit, shard side: runs the query (client, perpca_stats [, local rank]) here and keeps its clients in this session under fit_id; returns their count, dimension, rows, sum of n_i mean_i and the bytes of their statistics';

CREATE FUNCTION perpca_shard_init(fit_id text, centre float8[], init text DEFAULT 'dispca',
                                  update text DEFAULT 'stgd', retraction text DEFAULT 'polar',
                                  OUT weight float8, OUT lambda_max float8, OUT basis float8[])
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_init(text, float8[], text, text, text) IS
    'federated fit, shard side: builds each client''s S_i about centre (NULL: its own mean) and returns the sum of the client weights, max lambda_max(S_i) and a d x q basis B with B B'' = sum_i L_i L_i'' over the clients'' top n_global + n_local eigenvectors (the disPCA start)';

CREATE FUNCTION perpca_shard_round(fit_id text, u float8[], step float8,
                                   OUT u_sum float8[], OUT weight float8,
                                   OUT objective float8, OUT change float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_round(text, float8[], float8) IS
    'federated fit, shard side: one round''s client steps against U (d x n_global); returns sum_i w_i U_i, sum_i w_i, sum_i w_i f_i and the largest local projector change (w_i = 1, or n_i for weights ''samples'')';

CREATE FUNCTION perpca_shard_finish(fit_id text, u float8[],
                                    OUT gram float8[], OUT objective float8, OUT gradient float8[],
                                    OUT gradient_v float8, OUT weight float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_finish(text, float8[]) IS
    'federated fit, shard side: makes every client''s local components orthogonal to the final U and orders them; returns sum_i w_i U''S_iU, sum_i w_i f_i, sum_i w_i G_U,i, sum_i w_i ||G_V,i||^2 and sum_i w_i';

CREATE FUNCTION perpca_shard_result(fit_id text)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_result(text) IS
    'federated fit, shard side: the local components of this shard''s clients after perpca_shard_finish';

CREATE FUNCTION perpca_shard_close(fit_id text) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_close(text) IS
    'federated fit, shard side: frees the state of fit_id in this session (false if it was not open); it is also freed when the session ends';

CREATE FUNCTION perpca_fit_federated(
    shards text[],
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT 5000,
    tolerance float8 DEFAULT 1e-9,
    step float8 DEFAULT NULL,
    update text DEFAULT 'stgd',
    retraction text DEFAULT 'polar',
    init text DEFAULT 'dispca',
    center text DEFAULT 'client',
    weights text DEFAULT 'equal',
    verbose boolean DEFAULT false,
    adaptive boolean DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean) IS
    'Personalized PCA with the client steps run on the shards (libpq connection strings): the query runs on every shard, only U and one sum per shard cross the network each round; same rows as perpca_fit';
-- It opens connections with the server's credentials: superusers, and roles granted EXECUTE.
REVOKE EXECUTE ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean) FROM PUBLIC;

CREATE FUNCTION perpca_last_federated_fit()
RETURNS TABLE (rounds int, converged boolean, objective float8, kkt_residual float8, step float8,
               n_shards int, n_clients int, dim int, setup_bytes bigint, round_bytes bigint,
               result_bytes bigint, round_binary_bytes bigint, stats_binary_bytes bigint,
               seconds float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION perpca_last_federated_fit() IS
    'diagnostics of the last perpca_fit_federated call in this session, with the bytes it moved (text payload of commands and answers: setup, per round, result; round_binary_bytes = the same round as packed float8) and the binary size of the statistics it did not move';
