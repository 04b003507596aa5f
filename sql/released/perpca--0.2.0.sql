-- perpca 0.2.0: Personalized PCA in SQL
\echo Use "CREATE EXTENSION perpca" to load this file. \quit

-- Internal functions (called by perpca's own SQL and by the federated
-- coordinator) live in their own schema, out of the user's way.
CREATE SCHEMA perpca_internal;
COMMENT ON SCHEMA perpca_internal IS 'perpca: internal and shard-side functions (not for direct use)';
GRANT USAGE ON SCHEMA perpca_internal TO PUBLIC;

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
    -- bytes a group's state holds, for the planner's sizing of hash
    -- aggregates: about a thin group's at d ~ 300-600 with its rows in
    -- TOAST (mean, sums, first row) or a dense one's at d ~ 40 (d x d
    -- co-moments, a block of rows); more with larger d.  200 groups (the
    -- planner's guess for a table without statistics) still fit in the
    -- default work_mem.
    SSPACE = 16384,
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
    SSPACE = 16384,                 -- as perpca_stats(float8[])
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
CREATE FUNCTION perpca_total_variance(s perpca_stats, mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_explained_variance(s perpca_stats, components float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_explained_variance(s perpca_stats, components float8[], mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int,
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;
CREATE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int, mean float8[],
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

COMMENT ON FUNCTION perpca_total_variance(perpca_stats) IS
    'total variance tr(S) of a group about its own mean (sum of the eigenvalues of its covariance)';
COMMENT ON FUNCTION perpca_total_variance(perpca_stats, float8[]) IS
    'total second moment tr(S) of a group about the point mean (a zero mean gives the uncentered moment)';
COMMENT ON FUNCTION perpca_explained_variance(perpca_stats, float8[]) IS
    'variance of a group about its own mean captured by the k x d orthonormal components C: tr(C S C^T)';
COMMENT ON FUNCTION perpca_explained_variance(perpca_stats, float8[], float8[]) IS
    'second moment of a group about the point mean captured by the k x d orthonormal components C: tr(C S C^T)';
COMMENT ON FUNCTION perpca_local_pcs(perpca_stats, float8[], int) IS
    'local components of a group with the global components frozen: top n_local eigenvectors of its covariance deflated by the global components (largest entry positive)';
COMMENT ON FUNCTION perpca_local_pcs(perpca_stats, float8[], int, float8[]) IS
    'local components of a group about the point mean with the global components frozen: top n_local eigenvectors of the deflated second moment';

-- ==========================================================================
-- Fit: global and local components across the clients of a query (perpca_fit)
-- ==========================================================================

-- Every option may be NULL, meaning its default (so wrappers pass theirs through).
CREATE FUNCTION perpca_fit(
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT 5000,
    tolerance float8 DEFAULT NULL,
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
    start text DEFAULT NULL,
    solver text DEFAULT 'lbfgs',
    scale text DEFAULT 'none')
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text) IS
    'Personalized PCA: global components shared by all clients (rows of the query) and local components per client; solver ''lbfgs'' (default: best-response local components and L-BFGS over the global ones) or ''paper'' (the paper''s Algorithm 2, with update and retraction); init ''best'' keeps the best of several starts; init => ''given'' starts from the components returned by the start query (client, kind, component, pc); scale ''standard'' divides each feature by its pooled standard deviation (perpca_scale_factors) before the fit, so components and variances are in standardized units (default ''none''); a NULL option means its default';

CREATE FUNCTION perpca_last_fit()
RETURNS TABLE (method text, rounds_run int, converged boolean, objective float8,
               kkt_residual float8, theta_est float8, step float8,
               n_clients int, d int, seconds float8,
               solver text, start text, gradient_norm float8, options jsonb)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit() IS
    'diagnostics of the last perpca_fit call in this session (no row before the first): rounds of all starts (0 for the closed-form methods, which always converge), objective sum_i N w_i f_i, KKT residual, theta_est, final step (paper solver), the solver, the winning start, the Riemannian gradient norm and the effective options (defaults filled in) as jsonb';

CREATE FUNCTION perpca_last_fit_starts()
RETURNS TABLE (start text, objective float8, rounds_run int, converged boolean, chosen boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_starts() IS
    'one row per start of the last perpca_fit or perpca_fit_federated in this session: its objective, rounds and convergence, and whether it was kept';

CREATE FUNCTION perpca_last_fit_rounds()
RETURNS TABLE (start text, round int, objective float8, gradient_norm float8,
               kkt_residual float8, step float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_rounds() IS
    'one row per round of the last perpca_fit or perpca_fit_federated in this session: objective, Riemannian gradient norm (solver lbfgs), KKT residual (solver paper) and step, for convergence plots';

-- The options of a fit, checked before a caller runs its (possibly long)
-- input query: perpca_fit parses every option before it reads any client, so
-- a fit of no clients fails on a bad option first, else with "no clients".
-- It runs in the caller's search_path, as the start query will.
CREATE FUNCTION perpca_internal.check_fit_options(
    rounds int, tolerance float8, step float8, update text, retraction text, init text,
    seed bigint, center text, weights text, method text, adaptive boolean, start text,
    solver text, scale text) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    state text;
BEGIN
    PERFORM pg_catalog.count(*) FROM @extschema@.perpca_fit(
        'SELECT NULL::text, NULL::@extschema@.perpca_stats WHERE false', 1, 0,
        rounds => rounds, tolerance => tolerance, step => step, update => $4,
        retraction => retraction, init => init, seed => seed, center => center,
        weights => weights, method => method, adaptive => adaptive, start => start,
        solver => solver, scale => scale);
EXCEPTION WHEN data_exception THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
    IF state OPERATOR(pg_catalog.<>) '22000' THEN   -- 22000: no clients, so every option was valid
        RAISE;
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.check_fit_options(int, float8, float8, text, text, text, bigint, text, text, text, boolean, text, text, text) IS
    'internal: raises perpca_fit''s error for an invalid option (22023 naming it), before a caller reads its input';
-- ==========================================================================
-- Feature scaling (fit option scale => 'standard'): the divisors come from
-- the statistics (the pooled standard deviation of each feature, ddof 0); a
-- model stores them in <model>_info.scale_factors and every function that
-- reads the model applies them (src/scale.c).
-- ==========================================================================

CREATE FUNCTION perpca_scale_factors(s perpca_stats, OUT scale_factors float8[], OUT constant_features int[])
    AS 'MODULE_PATHNAME', 'perpca_scale_factors' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_scale_factors(perpca_stats) IS
    'the divisors of scale => ''standard'' for these (merged) statistics: each feature''s standard deviation about the mean of all rows (population, ddof 0, as sklearn''s StandardScaler), from the statistics alone; a feature whose standard deviation is at most 1e-12 times its root mean square keeps divisor 1 and is listed in constant_features (1-based)';

CREATE FUNCTION perpca_internal.scale_stats(s perpca_stats, scale_factors float8[]) RETURNS perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_scale_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.scale_stats(perpca_stats, float8[]) IS
    'internal: the statistics of the rows with each feature divided by scale_factors (mean / s, M2 / s s''); a NULL scale_factors returns s unchanged';

CREATE FUNCTION perpca_internal.scale_vector(x float8[], scale_factors float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_scale_vector' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.scale_vector(float8[], float8[]) IS
    'internal: x divided elementwise by scale_factors; a NULL scale_factors returns x unchanged';

-- The stored divisors of a model (NULL: unscaled, also for a model stored before the scale option).
CREATE FUNCTION perpca_internal.last_fit_scale_factors(OUT scale_factors float8[], OUT constant_features int[])
    AS 'MODULE_PATHNAME', 'perpca_last_fit_scale_factors' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION perpca_internal.last_fit_scale_factors() IS
    'internal: the divisors the last perpca_fit of this session divided its input by, and its constant features (NULLs when unscaled); perpca_train stores them with the model';

CREATE FUNCTION perpca_internal.perpca_model_scale_factors(info text) RETURNS float8[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    result float8[];
BEGIN
    IF NOT EXISTS (SELECT FROM pg_attribute
                    WHERE attrelid = info::regclass AND attname = 'scale_factors' AND NOT attisdropped) THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT scale_factors FROM %s', info) INTO result;
    RETURN result;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_scale_factors(text) IS
    'internal: the scale_factors divisors stored in a model''s info table (quoted name), NULL when unscaled or stored before the scale option';
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

-- Every change of a stored model takes a new version from this sequence, so
-- that backends caching the model notice a replaced or personalized model.
CREATE SEQUENCE perpca_model_version;
GRANT USAGE ON SEQUENCE perpca_model_version TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('perpca_model_version', '');
COMMENT ON SEQUENCE perpca_model_version IS
    'version numbers of stored models (a new one for every train, replace or personalize)';

-- One row of perpca_fit's result, as a model holds it between the fit and the store.
CREATE TYPE perpca_internal.perpca_fit_row AS (client text, kind text, component int, pc float8[], variance float8);
COMMENT ON TYPE perpca_internal.perpca_fit_row IS 'internal: a row of perpca_fit''s result';

-- How model names are written and read: the naming rule for error hints,
-- and the parts of a name (src/model_read.c, one reader for C and SQL).
CREATE FUNCTION perpca_internal.perpca_model_name_rule() RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.perpca_model_name_rule() IS
    'internal: the naming rule of models, for error hints';
CREATE FUNCTION perpca_internal.model_name_parts(model text) RETURNS text[]
    AS 'MODULE_PATHNAME', 'perpca_model_name_parts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.model_name_parts(text) IS
    'internal: {[schema,] base} of a model name read as SQL identifiers, or the improper-name error with the naming rule';

-- The tables of a model: name parts and quoted qualified table names.
CREATE FUNCTION perpca_internal.perpca_model_tables(model text, OUT schema_name text, OUT base text,
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
CREATE FUNCTION perpca_internal.perpca_model_tables_existing(model text, OUT components text, OUT clients text, OUT info text)
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
CREATE FUNCTION perpca_internal.perpca_model_owner(schema_name text, base text) RETURNS regrole
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
CREATE FUNCTION perpca_internal.perpca_model_check_owner(model text, owner regrole) RETURNS void
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
CREATE FUNCTION perpca_internal.perpca_accept_invalidations() RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.perpca_accept_invalidations() IS
    'internal: processes pending catalog invalidations, so that lookups after an advisory lock see what other sessions committed meanwhile';

-- Lock a model against other writers (readers go on): first a transaction
-- advisory lock on its qualified name, which also serializes the creation
-- of a new model, then its tables if they exist.  lock_not_available when
-- busy and not wait.
CREATE FUNCTION perpca_internal.perpca_model_lock(model text, schema_name text, base text, wait boolean) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- 1885696624 = 'perp': perpca's class of advisory locks
    key int := hashtext(format('%I.%I', schema_name, base));
    tables text := format('%I.%I, %I.%I, %I.%I', schema_name, base || '_info',
                          schema_name, base || '_components', schema_name, base || '_clients');
BEGIN
    IF wait THEN
        PERFORM pg_advisory_xact_lock(1885696624, key);
    ELSIF NOT pg_try_advisory_xact_lock(1885696624, key) THEN
        RAISE EXCEPTION 'model "%" is being refreshed or changed by another transaction', model
            USING ERRCODE = 'lock_not_available',
                  DETAIL = 'Another transaction holds the model''s lock.',
                  HINT = 'Try again when it has finished, or pass wait => true to wait for it.';
    END IF;
    -- The model may have been created or dropped while this session waited.
    PERFORM perpca_internal.perpca_accept_invalidations();
    IF to_regclass(format('%I.%I', schema_name, base || '_info')) IS NOT NULL THEN
        BEGIN
            EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE%s', tables,
                           CASE WHEN wait THEN '' ELSE ' NOWAIT' END);
        EXCEPTION WHEN lock_not_available THEN
            RAISE EXCEPTION 'model "%" is being refreshed or changed by another transaction', model
                USING ERRCODE = 'lock_not_available',
                      DETAIL = 'Another transaction holds a lock on the model''s tables that excludes writers.',
                      HINT = 'Try again when it has finished, or pass wait => true to wait for it.';
        END;
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_lock(text, text, text, boolean) IS
    'internal: takes a model''s advisory lock (also for a model not created yet), then locks its tables in SHARE ROW EXCLUSIVE mode (readers go on, writers wait), failing at once unless wait';

-- Create the three tables of a model.
CREATE FUNCTION perpca_internal.perpca_model_create(schema_name text, base text) RETURNS void
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
            source text NOT NULL CHECK (source OPERATOR(pg_catalog.=) ANY (ARRAY['fit', 'personalize'])))$f$,
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
CREATE FUNCTION perpca_internal.perpca_model_fill_clients(schema_name text, base text, src text, center text,
                                                          global_mean float8[], source text,
                                                          one_client text, one_stats perpca_stats,
                                                          scale_factors float8[])
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Means in the data's units; variances, ratios and errors in the units
    -- the fit saw (divided by scale_factors, NULL = unscaled).
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
                   coalesce(@extschema@.perpca_explained_variance(c.stats, v.v, c.centre), 0) AS lv
              FROM c CROSS JOIN u LEFT JOIN v ON v.client = c.client)
        INSERT INTO %I.%I (client, n, mean, n_local, total_variance, global_ratio, local_ratio,
                           residual_ratio, train_error, source)
        SELECT client, n, mean, r2, tv, gv / tv, lv / tv, (tv - gv - lv) / tv, tv - gv - lv, $3
          FROM f
        ON CONFLICT (client) DO UPDATE
           SET n = excluded.n, mean = excluded.mean, n_local = excluded.n_local,
               total_variance = excluded.total_variance, global_ratio = excluded.global_ratio,
               local_ratio = excluded.local_ratio, residual_ratio = excluded.residual_ratio,
               train_error = excluded.train_error, source = excluded.source$f$,
        src, schema_name, base || '_components', schema_name, base || '_components',
        schema_name, base || '_clients')
    USING center, global_mean, source, one_client, one_stats, scale_factors;
END
$$;
COMMENT ON FUNCTION perpca_internal.perpca_model_fill_clients(text, text, text, text, float8[], text, text, perpca_stats, float8[]) IS
    'internal: writes the clients rows of a model (mean in the data''s units; variance ratios and training error of the statistics divided by scale_factors, NULL = unscaled) from statistics';

-- The clients of a train or refresh, staged once: the fit and the per-client
-- figures read the same rows.  A temporary table, created by the caller (a
-- security-restricted operation may not create one) and usable by role
-- reader (the model's owner when the model is written as its owner).
CREATE FUNCTION perpca_internal.perpca_stage_create(reader regrole) RETURNS void
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
CREATE FUNCTION perpca_internal.perpca_stage_fill(query text) RETURNS void
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
CREATE FUNCTION perpca_internal.perpca_model_store(
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
CREATE FUNCTION perpca_internal.perpca_stage_start(query text, reader regrole) RETURNS void
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

CREATE FUNCTION perpca_train(model text, query text, n_global int, n_local int,
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

CREATE FUNCTION perpca_drop(model text, if_exists boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables(model);
BEGIN
    IF NOT t.present THEN
        IF if_exists THEN
            RAISE NOTICE 'model "%" does not exist, skipping', model;
            RETURN;
        END IF;
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object',
            DETAIL = pg_catalog.format('No table %s was found.', t.info),
            HINT = 'Pass if_exists => true to skip a missing model. ' OPERATOR(pg_catalog.||) perpca_internal.perpca_model_name_rule();
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute
                    WHERE attrelid OPERATOR(pg_catalog.=) t.info::regclass
                      AND attname OPERATOR(pg_catalog.=) 'version' AND NOT attisdropped) THEN
        RAISE EXCEPTION 'table % is not the info table of a perpca model', t.info
            USING ERRCODE = 'wrong_object_type';
    END IF;
    PERFORM perpca_internal.perpca_model_lock(model, t.schema_name, t.base, true);
    EXECUTE pg_catalog.format('DROP TABLE %s, %s, %s', t.components, t.clients, t.info);
END
$$;
COMMENT ON FUNCTION perpca_drop(text, boolean) IS
    'drops the tables of a model; with if_exists => true a missing model is only a notice';

-- Local components of one client, computed and stored; the caller holds the model's lock.
CREATE FUNCTION perpca_internal.perpca_model_personalize(schema_name text, base text, client text,
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
CREATE FUNCTION perpca_internal.perpca_model_key(model text, key_type regtype, model_key_type text, key text)
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
CREATE FUNCTION perpca_internal.perpca_personalize_key(model text, key_type regtype, client text,
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

CREATE FUNCTION perpca_personalize(model text, client text, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT * FROM perpca_internal.perpca_personalize_key(model, 'text'::regtype, client, stats, n_local);
END;
COMMENT ON FUNCTION perpca_personalize(text, text, perpca_stats, int) IS
    'computes local components for a (new) client from its statistics with the global components frozen and stores them in the model; n_local defaults to the model''s; another role''s model is written as its owner';

CREATE FUNCTION perpca_personalize(model text, client anyelement, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
BEGIN
    RETURN QUERY SELECT * FROM perpca_internal.perpca_personalize_key(model, pg_catalog.pg_typeof(client),
                                                                      client::text, stats, n_local);
END
$$;
COMMENT ON FUNCTION perpca_personalize(text, anyelement, perpca_stats, int) IS
    'perpca_personalize with the client key in its own type (int, bigint, uuid, date, ...), which must be the type of the model''s keys; matched as its text form';
-- ==========================================================================
-- Reading a stored model: component info, theta, row-wise projection and
-- client similarity.  models.c and model_read.c read a model's tables
-- straight from the heap, after checking that they are plain tables of one
-- owner that the caller may read (no SQL runs on them, so the model's owner
-- cannot make the caller run her code), and cache it per backend.
-- ==========================================================================

CREATE FUNCTION perpca_component_info(model text)
RETURNS TABLE (client text, kind text, component int, variance float8,
               explained_variance_ratio float8, cumulative_explained_variance_ratio float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_component_info(text) IS
    'variance, explained-variance ratio and cumulative ratio of each component (as ML.PRINCIPAL_COMPONENT_INFO), global rows first, then each client''s local rows.  Global rows divide by <model>_info.total_variance, the fit''s weighted mean over clients (weights option) of each client''s total variance about its centre; their cumulative ratio runs over the global components.  Local rows divide by their own client''s total variance about its centre (<model>_clients.total_variance); their cumulative ratio starts at the client''s global_ratio (the share of its variance the global components capture), so the last local row is global_ratio + local_ratio.  A ratio is NULL when its total is NULL or 0';

CREATE FUNCTION perpca_model_theta(model text, threshold float8 DEFAULT 0.05,
                                   OUT theta_est float8, OUT hint text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_theta(text, float8) IS
    'the model''s misalignment theta_est = 1 - lambda_max(mean of the local projectors), with a hint when it is below threshold';

-- Row-wise projection on a stored model (read once per backend and cached).
-- Each takes the client key as text (also for literals such as 'c1') or in
-- any other type (int, bigint, uuid, date, ...), converted to text by the
-- type's output function as the fit stored it.
CREATE FUNCTION perpca_model_scores(model text, client text, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_scores(model text, client anyelement, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_global_part(model text, client text, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_global_part(model text, client anyelement, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_local_part(model text, client text, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_local_part(model text, client anyelement, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_reconstruct(model text, client text, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_reconstruct(model text, client anyelement, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_residual(model text, client text, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_residual(model text, client anyelement, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_error(model text, client text, x float8[], unknown text DEFAULT 'global')
    RETURNS float8 AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_error(model text, client anyelement, x float8[], unknown text DEFAULT 'global')
    RETURNS float8 AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_similarity(model text, all_pairs boolean DEFAULT false,
                                  OUT client_a text, OUT client_b text, OUT distance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION perpca_model_scores(text, text, float8[], text) IS
    'scores of a row x of a client: n_global global scores then the client''s local scores, after centering as the fit did; a client the model has never seen gets the global scores only (unknown => ''global'', one NOTICE per statement) or an error (unknown => ''error'')';
COMMENT ON FUNCTION perpca_model_scores(text, anyelement, float8[], text) IS
    'perpca_model_scores with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_global_part(text, text, float8[], text) IS
    'global part of x, centre + U U^T (x - centre): what the clients share (the background); global part + local part + residual = x';
COMMENT ON FUNCTION perpca_model_global_part(text, anyelement, float8[], text) IS
    'perpca_model_global_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_local_part(text, text, float8[], text) IS
    'local part of x, V V^T (x - centre): what is unique to the client (the foreground); zero for a client the model has never seen';
COMMENT ON FUNCTION perpca_model_local_part(text, anyelement, float8[], text) IS
    'perpca_model_local_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_reconstruct(text, text, float8[], text) IS
    'reconstruction of x from the global and the client''s local components (global part + local part)';
COMMENT ON FUNCTION perpca_model_reconstruct(text, anyelement, float8[], text) IS
    'perpca_model_reconstruct with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_residual(text, text, float8[], text) IS
    'residual of x: x minus its reconstruction from the global and the client''s local components';
COMMENT ON FUNCTION perpca_model_residual(text, anyelement, float8[], text) IS
    'perpca_model_residual with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_error(text, text, float8[], text) IS
    'reconstruction error of x, the squared norm of its residual (an anomaly score); its mean over a client''s training rows is the client''s train_error';
COMMENT ON FUNCTION perpca_model_error(text, anyelement, float8[], text) IS
    'perpca_model_error with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_similarity(text, boolean) IS
    'client distance rho = ||P_Va - P_Vb||_F^2 / r2 between the local subspaces of each unordered pair of clients, once with client_a < client_b (byte order), for clustering clients by what makes them different; all_pairs => true gives every ordered pair and each client with itself (distance 0)';
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
CREATE FUNCTION perpca_merge(a perpca_stats, b perpca_stats) RETURNS perpca_stats
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT @extschema@.perpca_merge(v.s) FROM (VALUES (a), (b)) AS v(s));
COMMENT ON FUNCTION perpca_merge(perpca_stats, perpca_stats) IS
    'merges two perpca_stats values as the perpca_merge aggregate does (a NULL is skipped), e.g. in INSERT ... ON CONFLICT DO UPDATE SET stats = perpca_merge(t.stats, excluded.stats)';

-- Run one SQL command as the owner of relation (src/model_store.c).
CREATE FUNCTION perpca_internal.perpca_run_as_owner(relation regclass, schema regnamespace, command text,
                                                    VARIADIC args "any")
RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.perpca_run_as_owner(regclass, regnamespace, text, "any") IS
    'internal: runs command (parameters $1.. from args) as the owner of relation, inside a security-restricted operation with search_path = pg_catalog, schema, pg_temp, and returns the first column (jsonb) of its first row; insufficient_privilege unless the caller has the owner''s privileges';

-- The refresh itself, run as the model's owner: the source query into the
-- stage, the fit and the store, and what changed.
CREATE FUNCTION perpca_internal.perpca_model_refresh(schema_name text, base text, warm boolean)
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

CREATE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false)
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
-- ==========================================================================
-- Federated: PerPCA rounds run where the data live.  The coordinator
-- (perpca_fit_federated) keeps one libpq connection per shard; each round
-- sends U out and gets one weighted sum of the shard's clients' U_i back.
-- The perpca_internal.shard_* functions are the shard side of that protocol.
-- ==========================================================================

CREATE FUNCTION perpca_internal.shard_open(fit_id text, query text, n_global int, n_local int,
                                  weights text, seed bigint,
                                  OUT n_clients int, OUT dim int, OUT n_rows bigint,
                                  OUT mean_sum float8[], OUT stats_bytes bigint, OUT keys text[])
    AS 'MODULE_PATHNAME', 'perpca_shard_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_open(text, text, int, int, text, bigint) IS
    'federated fit, shard side: runs the query (client, perpca_stats [, local rank]) here and keeps its clients in this session under fit_id; returns their count, dimension, rows, sum of n_i mean_i (1 x d), the bytes of their statistics and their keys';

CREATE FUNCTION perpca_internal.shard_scale(fit_id text, mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_scale' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_scale(text, float8[]) IS
    'federated fit, shard side, scale ''standard'': sum over this shard''s clients of M2_i,jj + n_i (mean_i,j - mean_j)^2 about the pooled mean (1 x d each), from which the coordinator takes the pooled standard deviations';

CREATE FUNCTION perpca_internal.shard_init(fit_id text, center float8[], scale_factors float8[] DEFAULT NULL,
                                  OUT weight float8, OUT lambda_max float8)
    AS 'MODULE_PATHNAME', 'perpca_shard_init' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_init(text, float8[], float8[]) IS
    'federated fit, shard side: divides the clients'' statistics by scale_factors (1 x d; NULL: unscaled), then builds each client''s S_i about center (1 x d; NULL: its own mean); returns the sum of the client weights and max lambda_max(S_i)';

CREATE FUNCTION perpca_internal.shard_basis(fit_id text, qu boolean, exact boolean) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_basis' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_basis(text, boolean, boolean) IS
    'federated fit, shard side: a d x q basis B with B B'' = the sum over the clients of their stacked local PCs (scaled for qu), for the disPCA and Qu starts';

CREATE FUNCTION perpca_internal.shard_apply(fit_id text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_apply' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_apply(text, float8[]) IS
    'federated fit, shard side: sum_i w_i S_i X for a d x q matrix X (the pooled start)';

CREATE FUNCTION perpca_internal.shard_start_local(fit_id text, u float8[], init text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'perpca_shard_start_local' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_start_local(text, float8[], text) IS
    'federated fit, shard side: the paper solver''s start of every client''s local components given U';

CREATE FUNCTION perpca_internal.shard_round(fit_id text, u float8[], step float8, update text,
                                   retraction text, want_kkt boolean,
                                   OUT weight float8, OUT objective float8, OUT u_sum float8[],
                                   OUT g_sum float8[], OUT gradient_v float8, OUT change float8,
                                   OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_round' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_round(text, float8[], float8, text, text, boolean) IS
    'federated fit, shard side: one round of the paper''s client steps against U; weighted sums over the clients';

CREATE FUNCTION perpca_internal.shard_evaluate(fit_id text, u float8[], tol float8,
                                   OUT weight float8, OUT objective float8, OUT u_sum float8[],
                                   OUT g_sum float8[], OUT gradient_v float8, OUT change float8,
                                   OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_evaluate' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_evaluate(text, float8[], float8) IS
    'federated fit, shard side: one L-BFGS evaluation: every client''s best response to U; sum_i w_i f_i and sum_i w_i of the gradient terms';

CREATE FUNCTION perpca_internal.shard_finish(fit_id text, u float8[], best_response boolean,
                                   OUT weight float8, OUT objective float8, OUT u_sum float8[],
                                   OUT g_sum float8[], OUT gradient_v float8, OUT change float8,
                                   OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_finish' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_finish(text, float8[], boolean) IS
    'federated fit, shard side: local components feasible against the final U and ordered; sums for the diagnostics and the order of U';

CREATE FUNCTION perpca_internal.shard_result(fit_id text)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8, weight float8)
    AS 'MODULE_PATHNAME', 'perpca_shard_result' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_result(text) IS
    'federated fit, shard side: the local components of this shard''s clients after shard_finish, with each client''s weight';

CREATE FUNCTION perpca_internal.shard_close(fit_id text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'perpca_shard_close' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_close(text) IS
    'federated fit, shard side: frees the state of fit_id in this session (false if it was not open); it is also freed when the session ends';

CREATE FUNCTION perpca_fit_federated(
    shards text[],
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT 5000,
    tolerance float8 DEFAULT NULL,
    step float8 DEFAULT NULL,
    update text DEFAULT 'stgd',
    retraction text DEFAULT 'polar',
    init text DEFAULT 'best',
    center text DEFAULT 'client',
    weights text DEFAULT 'equal',
    verbose boolean DEFAULT false,
    adaptive boolean DEFAULT NULL,
    solver text DEFAULT 'lbfgs',
    seed bigint DEFAULT 0,
    scale text DEFAULT 'none')
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text) IS
    'Personalized PCA with the clients on shards (libpq connection strings): the query runs on every shard, only U and d x n_global sums per shard cross the network each round; the same fit engine, options and rows as perpca_fit (a client key on two shards is an error); scale ''standard'' takes the pooled standard deviations from one extra round trip of d numbers per shard';
-- It opens connections with the server's credentials: superusers, and roles granted EXECUTE.
REVOKE EXECUTE ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text) FROM PUBLIC;

CREATE FUNCTION perpca_last_federated_fit()
RETURNS TABLE (rounds_run int, converged boolean, objective float8, kkt_residual float8, step float8,
               n_shards int, n_clients int, d int, setup_bytes bigint, round_bytes bigint,
               result_bytes bigint, round_binary_bytes bigint, stats_binary_bytes bigint,
               seconds float8, solver text, theta_est float8, gradient_norm float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION perpca_last_federated_fit() IS
    'diagnostics of the last perpca_fit_federated call in this session, with the bytes it moved (text payload of commands and answers: setup, per round, result; round_binary_bytes = the same round as packed float8) and the binary size of the statistics it did not move';
-- ==========================================================================
-- Evaluation: held-out reconstruction error and explained variance of a
-- stored model (perpca_evaluate), and choosing the ranks (perpca_choose_ranks)
-- ==========================================================================

CREATE FUNCTION perpca_internal.evaluate_stats(client text, s @extschema@.perpca_stats, centre float8[],
                                               u float8[], v float8[],
                                               OUT error float8, OUT total_variance float8,
                                               OUT global_variance float8, OUT local_variance float8)
    AS 'MODULE_PATHNAME', 'perpca_evaluate_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.evaluate_stats(text, @extschema@.perpca_stats, float8[], float8[], float8[]) IS
    'internal: mean squared residual tr((I-Q) M (I-Q)), total tr M, tr(U M U'') and tr(V M V'') of a client''s rows with second moment M about centre, Q = W''W for W = [u; v] (NULL figures for NULL statistics)';

CREATE FUNCTION perpca_internal.query_columns(query text) RETURNS regtype[]
    AS 'MODULE_PATHNAME', 'perpca_query_columns' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.query_columns(text) IS
    'internal: the types of the columns a query returns, from its plan (the query is not run)';

-- A query (client, x float8[]) or (client, perpca_stats) as (client text, stats perpca_stats), one row per client.
CREATE FUNCTION perpca_internal.stats_query(query text, what text DEFAULT 'query') RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    types regtype[] := perpca_internal.query_columns(query);
BEGIN
    IF pg_catalog.cardinality(types) < 2 THEN
        RAISE EXCEPTION 'the % must return at least two columns, (client, x float8[]) or (client, perpca_stats)', what
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF types[2] = 'float8[]'::regtype THEN
        RETURN pg_catalog.format(
            'SELECT q.client::text AS client, @extschema@.perpca_stats(q.x) AS stats FROM (%s) AS q(client, x) GROUP BY 1',
            query);
    ELSIF types[2] IN ('float4[]'::regtype, 'numeric[]'::regtype, 'int4[]'::regtype, 'int8[]'::regtype,
                       'int2[]'::regtype) THEN
        RETURN pg_catalog.format(
            'SELECT q.client::text AS client, @extschema@.perpca_stats(q.x::float8[]) AS stats FROM (%s) AS q(client, x) GROUP BY 1',
            query);
    ELSIF types[2] = '@extschema@.perpca_stats'::regtype THEN
        RETURN pg_catalog.format(
            'SELECT q.client::text AS client, @extschema@.perpca_merge(q.x) AS stats FROM (%s) AS q(client, x) GROUP BY 1',
            query);
    END IF;
    RAISE EXCEPTION 'the second column of the % has type %, not float8[] or perpca_stats', what, types[2]
        USING ERRCODE = 'datatype_mismatch',
              HINT = 'Return (client, x float8[]) rows or (client, perpca_stats(x)) statistics.';
END
$$;
COMMENT ON FUNCTION perpca_internal.stats_query(text, text) IS
    'internal: wraps a query of rows (client, x float8[]) or statistics (client, perpca_stats) into one returning (client text, stats perpca_stats), one row per client';

CREATE FUNCTION perpca_evaluate(model text, query text)
RETURNS TABLE (client text, known boolean, n bigint, error float8, total_variance float8,
               global_ratio float8, local_ratio float8, explained_ratio float8)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables_existing(model);
BEGIN
    RETURN QUERY EXECUTE pg_catalog.format($f$
        WITH i AS (SELECT center, global_mean, d, perpca_internal.perpca_model_scale_factors(%L) AS scale_factors FROM %s),
        u AS (SELECT pg_catalog.array_agg(pc ORDER BY component) AS u FROM %s WHERE kind = 'global'),
        v AS (SELECT client, pg_catalog.array_agg(pc ORDER BY component) AS v
                FROM %s WHERE kind = 'local' GROUP BY client),
        q AS (%s),
        e AS (
            SELECT q.client, k.client IS NOT NULL AS known,
                   perpca_internal.scale_stats(q.stats, i.scale_factors) AS stats, u.u, v.v,
                   perpca_internal.scale_vector(
                       CASE i.center WHEN 'client' THEN coalesce(k.mean, i.global_mean)
                                     WHEN 'global' THEN i.global_mean
                                     ELSE pg_catalog.array_fill(0::float8, ARRAY[i.d]) END,
                       i.scale_factors) AS centre
              FROM q CROSS JOIN i CROSS JOIN u
              LEFT JOIN %s k ON k.client = q.client
              LEFT JOIN v ON v.client = q.client AND k.client IS NOT NULL)
        SELECT e.client, e.known, coalesce(@extschema@.perpca_count(e.stats), 0), r.error, r.total_variance,
               r.global_variance / r.total_variance, r.local_variance / r.total_variance,
               (r.global_variance + r.local_variance) / r.total_variance
          FROM e CROSS JOIN LATERAL perpca_internal.evaluate_stats(e.client, e.stats, e.centre, e.u, e.v) r
         ORDER BY e.client COLLATE "C"$f$,
        t.info, t.info, t.components, t.components, perpca_internal.stats_query(query), t.clients);
END
$$;
COMMENT ON FUNCTION perpca_evaluate(text, text) IS
    'held-out evaluation of a stored model on a query of rows (client, x float8[]) or statistics (client, perpca_stats): per client the rows n, the mean squared reconstruction error (||residual||^2 per row, as perpca_model_error), the second moment about the model''s centre and the shares of it explained by the global part, the local part and both; a client the model has never seen (known false) is evaluated on the global components only; a scaled model (scale ''standard'') divides the rows by its stored scale_factors first, so error, total_variance and the ratios are in standardized units, as perpca_model_error';

CREATE FUNCTION perpca_evaluate_summary(model text, query text,
                                        OUT clients int, OUT unseen_clients int, OUT n bigint,
                                        OUT error float8, OUT error_samples float8,
                                        OUT global_ratio float8, OUT global_ratio_samples float8,
                                        OUT local_ratio float8, OUT local_ratio_samples float8,
                                        OUT explained_ratio float8, OUT explained_ratio_samples float8)
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT pg_catalog.count(*)::int,
           (pg_catalog.count(*) FILTER (WHERE NOT e.known))::int,
           pg_catalog.sum(e.n)::bigint,
           pg_catalog.avg(e.error),
           pg_catalog.sum(e.n * e.error) / pg_catalog.sum(e.n),
           pg_catalog.sum(e.global_ratio * e.total_variance) / pg_catalog.sum(e.total_variance),
           pg_catalog.sum(e.n * e.global_ratio * e.total_variance) / pg_catalog.sum(e.n * e.total_variance),
           pg_catalog.sum(e.local_ratio * e.total_variance) / pg_catalog.sum(e.total_variance),
           pg_catalog.sum(e.n * e.local_ratio * e.total_variance) / pg_catalog.sum(e.n * e.total_variance),
           pg_catalog.sum(e.explained_ratio * e.total_variance) / pg_catalog.sum(e.total_variance),
           pg_catalog.sum(e.n * e.explained_ratio * e.total_variance) / pg_catalog.sum(e.n * e.total_variance)
      FROM @extschema@.perpca_evaluate(model, query) AS e
     WHERE e.n > 0;
END;
COMMENT ON FUNCTION perpca_evaluate_summary(text, text) IS
    'the whole model on a query of rows or statistics, as perpca_evaluate: error = mean of the clients'' errors (equal weights, the paper''s metric), error_samples = mean over all rows; ratios = explained over total second moment summed over clients (equal weights) or over rows (_samples)';

-- ---- choosing the ranks --------------------------------------------------

-- The recommendation rule of perpca_choose_ranks over a finished scan.
CREATE FUNCTION perpca_internal.recommend_ranks(heldout_errors float8[], totals int[], theta float8[],
                                                n_locals int[], within float8, min_theta float8,
                                                variance float8)
RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
    WITH p AS (
        SELECT u.i, u.e, u.t, u.th, u.l
          FROM ROWS FROM (pg_catalog.unnest(heldout_errors), pg_catalog.unnest(totals),
                          pg_catalog.unnest(theta), pg_catalog.unnest(n_locals))
               WITH ORDINALITY AS u(e, t, th, l, i)
         WHERE u.e IS NOT NULL)
    SELECT p.i FROM p
     WHERE p.e <= (SELECT pg_catalog.min(p2.e) FROM p AS p2) + within * variance
       AND (p.l = 0 OR p.th >= min_theta)
     ORDER BY p.t, p.e, p.i
     LIMIT 1;
END;
COMMENT ON FUNCTION perpca_internal.recommend_ranks(float8[], int[], float8[], int[], float8, float8, float8) IS
    'internal: position of the recommended pair of a rank scan: the smallest n_global + n_local whose held-out error exceeds the best by at most within x variance (the held-out total variance) and whose theta_est is at least min_theta (pairs without local components need no theta), the lower held-out error on ties';

CREATE FUNCTION perpca_choose_ranks(
    query text,
    heldout text DEFAULT NULL,
    global_ranks int[] DEFAULT '{0,1,2,3,4}',
    local_ranks int[] DEFAULT '{0,1,2,3,4}',
    within float8 DEFAULT 0.02,
    min_theta float8 DEFAULT 0.05,
    holdout float8 DEFAULT 0.2,
    rounds int DEFAULT NULL, tolerance float8 DEFAULT NULL, step float8 DEFAULT NULL,
    update text DEFAULT NULL, retraction text DEFAULT NULL, init text DEFAULT NULL,
    seed bigint DEFAULT NULL, center text DEFAULT NULL, weights text DEFAULT NULL,
    adaptive boolean DEFAULT NULL, solver text DEFAULT NULL, scale text DEFAULT NULL)
RETURNS TABLE (n_global int, n_local int, objective float8, train_error float8,
               heldout_error float8, heldout_error_samples float8, heldout_explained_ratio float8,
               theta_est float8, rounds_run int, converged boolean, seconds float8, recommended boolean)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    scan constant text := 'pg_temp.perpca_rank_scan';
    train_src constant text := 'SELECT client, stats FROM pg_temp.perpca_ranks_train';
    held_src constant text := 'SELECT client, stats FROM pg_temp.perpca_ranks_heldout';
    types regtype[];
    train_q text;
    held_q text;
    cut bigint;
    opts text;
    dim int;
    pairs int[][];
    g int;
    l int;
    k int := 0;
    fit record;
    tr record;
    he record;
    secs float8;
    app text := pg_catalog.current_setting('application_name');
    best int;
BEGIN
    IF query IS NULL THEN
        RAISE EXCEPTION 'query must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF within IS NULL OR within < 0 OR min_theta IS NULL OR holdout IS NULL OR NOT (holdout > 0 AND holdout < 1) THEN
        RAISE EXCEPTION 'within must be >= 0, min_theta not NULL and holdout between 0 and 1 (exclusive)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF solver IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.pg_proc p
            WHERE p.proname = 'perpca_train' AND p.pronamespace = '@extschema@'::regnamespace
              AND 'solver' = ANY (p.proargnames)) THEN
        RAISE EXCEPTION 'perpca_train has no solver option in this version'
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Leave solver NULL: the scan then fits with perpca_fit''s default solver.';
    END IF;
    PERFORM perpca_internal.check_fit_options(rounds, tolerance, step, $11, retraction, init, seed,
                                              center, weights, NULL, adaptive, NULL, solver, scale);
    IF heldout IS NOT NULL THEN
        train_q := query;
        held_q := heldout;
    ELSE
        -- Deterministic split on a hash of the row key (third column): repeatable across calls.
        types := perpca_internal.query_columns(query);
        IF pg_catalog.cardinality(types) < 3 OR types[2] = '@extschema@.perpca_stats'::regtype THEN
            RAISE EXCEPTION 'without a held-out query, the query must return rows (client, x float8[], key)'
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Add a row key as third column (the split hashes it), or pass heldout => a second query.';
        END IF;
        cut := pg_catalog.round(holdout * 10000)::bigint;
        train_q := pg_catalog.format(
            'SELECT q.client, q.x FROM (%s) AS q(client, x, key) WHERE pg_catalog.abs(pg_catalog.hashtextextended(q.key::text, 0) %% 10000) >= %s',
            query, cut);
        held_q := pg_catalog.format(
            'SELECT q.client, q.x FROM (%s) AS q(client, x, key) WHERE pg_catalog.abs(pg_catalog.hashtextextended(q.key::text, 0) %% 10000) < %s',
            query, cut);
    END IF;

    -- Left over from a call that failed earlier in this transaction.
    IF pg_catalog.to_regclass('pg_temp.perpca_ranks_train') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_ranks_train;
    END IF;
    IF pg_catalog.to_regclass('pg_temp.perpca_ranks_heldout') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_ranks_heldout;
    END IF;
    IF pg_catalog.to_regclass('pg_temp.perpca_ranks_result') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_ranks_result;
    END IF;
    EXECUTE 'CREATE TEMPORARY TABLE perpca_ranks_train AS ' || perpca_internal.stats_query(train_q, 'query');
    EXECUTE 'CREATE TEMPORARY TABLE perpca_ranks_heldout AS ' || perpca_internal.stats_query(held_q, 'held-out query');
    CREATE TEMPORARY TABLE perpca_ranks_result (i int, n_global int, n_local int, objective float8,
        train_error float8, heldout_error float8, heldout_error_samples float8, heldout_explained_ratio float8,
        theta_est float8, rounds_run int, converged boolean, seconds float8, heldout_variance float8);
    SELECT pg_catalog.max(@extschema@.perpca_dim(s.stats)) INTO dim FROM pg_temp.perpca_ranks_train s;
    IF dim IS NULL THEN
        RAISE EXCEPTION 'the training part of the query has no rows' USING ERRCODE = 'no_data_found';
    END IF;

    opts := coalesce(', rounds => ' || rounds, '')
        || coalesce(', tolerance => ' || pg_catalog.quote_literal(tolerance) || '::float8', '')
        || coalesce(', step => ' || pg_catalog.quote_literal(step) || '::float8', '')
        || coalesce(', update => ' || pg_catalog.quote_literal($11), '')
        || coalesce(', retraction => ' || pg_catalog.quote_literal(retraction), '')
        || coalesce(', init => ' || pg_catalog.quote_literal(init), '')
        || coalesce(', seed => ' || seed, '')
        || coalesce(', center => ' || pg_catalog.quote_literal(center), '')
        || coalesce(', weights => ' || pg_catalog.quote_literal(weights), '')
        || coalesce(', adaptive => ' || adaptive, '')
        || coalesce(', solver => ' || pg_catalog.quote_literal(solver), '')
        || coalesce(', scale => ' || pg_catalog.quote_literal(scale), '');

    SELECT pg_catalog.array_agg(ARRAY[a.g, b.l] ORDER BY a.g, b.l) INTO pairs
      FROM (SELECT DISTINCT x AS g FROM pg_catalog.unnest(global_ranks) AS x) a,
           (SELECT DISTINCT y AS l FROM pg_catalog.unnest(local_ranks) AS y) b
     WHERE a.g >= 0 AND b.l >= 0 AND a.g + b.l BETWEEN 1 AND dim;
    IF pairs IS NULL THEN
        RAISE EXCEPTION 'no pair of ranks to fit: need n_global, n_local >= 0 with 1 <= n_global + n_local <= %', dim
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    FOR k IN 1 .. pg_catalog.array_length(pairs, 1) LOOP
        g := pairs[k][1];
        l := pairs[k][2];
        RAISE NOTICE 'perpca_choose_ranks: fitting pair %/% (n_global %, n_local %)',
            k, pg_catalog.array_length(pairs, 1), g, l;
        PERFORM pg_catalog.set_config('application_name',
            pg_catalog.format('perpca_choose_ranks %s/%s: n_global %s, n_local %s',
                              k, pg_catalog.array_length(pairs, 1), g, l), true);
        EXECUTE pg_catalog.format('SELECT * FROM @extschema@.perpca_train(%L, %L, %s, %s, replace => true%s)',
                                  scan, train_src, g, l, opts) INTO STRICT fit;
        SELECT f.seconds INTO secs FROM @extschema@.perpca_last_fit() AS f;
        SELECT * INTO STRICT tr FROM @extschema@.perpca_evaluate_summary(scan, train_src);
        SELECT * INTO STRICT he FROM @extschema@.perpca_evaluate_summary(scan, held_src);
        INSERT INTO pg_temp.perpca_ranks_result
        VALUES (k, g, l, fit.objective, tr.error, he.error, he.error_samples, he.explained_ratio,
                CASE WHEN l > 0 THEN fit.theta_est END, fit.rounds_run, fit.converged, secs,
                (SELECT pg_catalog.avg(e.total_variance)
                   FROM @extschema@.perpca_evaluate(scan, held_src) AS e WHERE e.n > 0));
    END LOOP;
    PERFORM @extschema@.perpca_drop(scan);
    PERFORM pg_catalog.set_config('application_name', app, true);

    SELECT perpca_internal.recommend_ranks(pg_catalog.array_agg(r.heldout_error ORDER BY r.i),
                                           pg_catalog.array_agg(r.n_global + r.n_local ORDER BY r.i),
                                           pg_catalog.array_agg(r.theta_est ORDER BY r.i),
                                           pg_catalog.array_agg(r.n_local ORDER BY r.i), within, min_theta,
                                           pg_catalog.max(r.heldout_variance))
      INTO best FROM pg_temp.perpca_ranks_result r;
    IF best IS NULL THEN
        RAISE NOTICE 'perpca_choose_ranks: no pair is within % of the best held-out error with theta_est >= %', within, min_theta
            USING HINT = 'Widen the grid, raise within or lower min_theta.';
    END IF;
    RETURN QUERY
        SELECT r.n_global, r.n_local, r.objective, r.train_error, r.heldout_error, r.heldout_error_samples,
               r.heldout_explained_ratio, r.theta_est, r.rounds_run, r.converged, r.seconds, r.i IS NOT DISTINCT FROM best
          FROM pg_temp.perpca_ranks_result r ORDER BY r.i;
    DROP TABLE pg_temp.perpca_ranks_train, pg_temp.perpca_ranks_heldout, pg_temp.perpca_ranks_result;
END
$$;
COMMENT ON FUNCTION perpca_choose_ranks(text, text, int[], int[], float8, float8, float8, int, float8, float8, text, text, text, bigint, text, text, boolean, text, text) IS
    'fits PerPCA for every pair of global_ranks x local_ranks on the query''s training rows and evaluates each on held-out rows (the heldout query, or a repeatable split of the query''s rows (client, x, key) by a hash of key, holdout of them held out); per pair the training objective, train and held-out error (equal weights; _samples per row), theta_est, rounds and seconds; recommended marks the smallest n_global + n_local whose held-out error is at most within x (held-out total variance) above the best pair''s and whose theta_est >= min_theta; fit options pass to perpca_train (NULL = its default)';
-- ==========================================================================
-- Citus: statistics aggregates that Citus splits across its workers
-- ==========================================================================
-- perpca_stats(float8[]) has an internal state, which Citus cannot move:
-- over a distributed table it aggregates on the workers only when grouping by
-- the distribution column.  These two have the state type perpca_stats, so
-- Citus runs them on the workers for any grouping (worker_partial_agg) and
-- combines one state per group and shard on the coordinator
-- (coord_combine_agg).  The work per row is perpca_stats(float8[])'s.

CREATE FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[])
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION perpca_internal.stats_dist_final(@extschema@.perpca_stats)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[]) IS
    'internal: transition function of perpca_stats_distributed(float8[]) (perpca_stats(float8[])''s, on a perpca_stats-typed state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats) IS
    'internal: combine function of perpca_stats_distributed and perpca_merge_distributed, and the transition of the latter (merges a perpca_stats value into the state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_final(@extschema@.perpca_stats) IS
    'internal: final function of perpca_stats_distributed and perpca_merge_distributed (the state as a plain perpca_stats value)';

CREATE AGGREGATE perpca_stats_distributed(float8[]) (
    SFUNC = perpca_internal.stats_dist_accum,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,                 -- as perpca_stats(float8[])
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats_distributed(float8[]) IS
    'perpca_stats(float8[]) with a perpca_stats transition state, for Citus: aggregates on the workers for any GROUP BY (one state per group and shard reaches the coordinator); the same bits as perpca_stats(float8[]) for the same rows in the same order';

CREATE AGGREGATE perpca_merge_distributed(@extschema@.perpca_stats) (
    SFUNC = perpca_internal.stats_dist_combine,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_merge_distributed(@extschema@.perpca_stats) IS
    'perpca_merge(perpca_stats) with a perpca_stats transition state, for Citus: merges on the workers for any GROUP BY, then on the coordinator';
