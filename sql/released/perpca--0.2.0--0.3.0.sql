-- perpca 0.2.0 -> 0.3.0: what must change before the install parts run.
\echo Use "ALTER EXTENSION perpca UPDATE" to load this file. \quit
--
-- The upgrade script sql/perpca--0.2.0--0.3.0.sql is this file, then the
-- create-once parts that are new in 0.3.0 (Makefile: NEW_ONCE_0_3_0), then
-- every part of sql/create_or_replace/ (see sql/README).  So here goes only
-- what CREATE OR REPLACE cannot do: dropping objects that 0.3.0 no longer
-- has, or whose signature, argument names, defaults or result type change
-- (CREATE OR REPLACE refuses those), and ALTERs of objects created once.
-- onesource: options checked by C (perpca_internal.fit_options), no longer by a fit over no clients
DROP FUNCTION perpca_internal.check_fit_options(int, float8, float8, text, text, text, bigint, text, text, text, boolean, text, text, text);
-- onesource: the fit's divisors come back from perpca_internal.fit, not from session state
DROP FUNCTION perpca_internal.last_fit_scale_factors();
-- onesource: write path renamed and given options as one jsonb (perpca_internal.run_as, stage_*, model_store, model_create, model_refresh)
DROP FUNCTION perpca_internal.perpca_run_as_owner(regclass, regnamespace, text, "any");
DROP FUNCTION perpca_internal.perpca_model_refresh(text, text, boolean);
DROP FUNCTION perpca_internal.perpca_model_store(text, text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text);
DROP FUNCTION perpca_internal.perpca_stage_fill(text);
DROP FUNCTION perpca_internal.perpca_stage_create(regrole);
DROP FUNCTION perpca_internal.perpca_stage_start(text, regrole);
DROP FUNCTION perpca_internal.perpca_model_create(text, text);
-- onesource: names are resolved and models locked in C (model_write.c, model_lock.c)
DROP FUNCTION perpca_internal.perpca_model_tables_existing(text);
DROP FUNCTION perpca_internal.perpca_model_tables(text);
DROP FUNCTION perpca_internal.perpca_accept_invalidations();
-- perpca_choose_ranks moves to C (75_ranks.sql) and gains target_explained_ratio and a note column.
DROP FUNCTION perpca_choose_ranks(text, text, int[], int[], float8, float8, float8, int, float8, float8, text, text, text, bigint, text, text, boolean, text, text);
DROP FUNCTION perpca_internal.recommend_ranks(float8[], int[], float8[], int[], float8, float8, float8);
-- perpca_component_info gains top_features.
DROP FUNCTION perpca_component_info(text);

-- The row-wise model functions gain missing => 'error' | 'observed' (issue 25).
DROP FUNCTION IF EXISTS @extschema@.perpca_model_scores(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_scores(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_global_part(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_global_part(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_local_part(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_local_part(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_reconstruct(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_reconstruct(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_residual(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_residual(text, anyelement, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_error(text, text, float8[], text);
DROP FUNCTION IF EXISTS @extschema@.perpca_model_error(text, anyelement, float8[], text);
-- perpca_last_fit gains the column rows_skipped (issue 25).
DROP FUNCTION @extschema@.perpca_last_fit();
-- onesource: internal names without the perpca_ prefix; helpers with no caller left dropped
DROP FUNCTION perpca_internal.perpca_model_owner(text, text);
DROP FUNCTION perpca_internal.perpca_model_check_owner(text, regrole);
DROP FUNCTION perpca_internal.perpca_model_fill_clients(text, text, text, text, float8[], text, text, perpca_stats, float8[]);
DROP FUNCTION perpca_internal.perpca_model_scale_factors(text);
DROP FUNCTION perpca_internal.perpca_model_name_rule();
-- onesource: perpca_train gains feature_names (issue 27)
DROP FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text);

-- perpca_last_fit_rounds gains the columns products and inner_iterations.
DROP FUNCTION perpca_last_fit_rounds();

-- perpca_fit gains the option hops.
DROP FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text);

-- trust: 0.2.0's PL/pgSQL model lock has no caller left (models are locked by perpca_internal.model_lock, C)
DROP FUNCTION perpca_internal.perpca_model_lock(text, text, text, boolean);

-- perpca_fit_federated gains the option hops (perpca_train and perpca_choose_ranks gain it too; their 0.2.0 signatures are dropped above).
DROP FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text);
-- perpca_refresh gains on_error and returns the row it appends to the model's history (issue 27).
DROP FUNCTION perpca_refresh(text, boolean, boolean);
-- ==========================================================================
-- Statistics: the aggregates over perpca_stats (the type: create_once/10_stats_type.sql)
-- ==========================================================================

-- Aggregate support functions (internal state).
CREATE OR REPLACE FUNCTION perpca_stats_accum(internal, float8[]) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_accum_nulls(internal, float8[], text) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_merge_accum(internal, perpca_stats) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_serialize(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_deserialize(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_stats_final(internal) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION perpca_stats_accum(internal, float8[]) IS 'transition function of perpca_stats(float8[])';
COMMENT ON FUNCTION perpca_stats_accum_nulls(internal, float8[], text) IS 'transition function of perpca_stats(float8[], text)';
COMMENT ON FUNCTION perpca_stats_merge_accum(internal, perpca_stats) IS 'transition function of perpca_merge(perpca_stats)';
COMMENT ON FUNCTION perpca_stats_combine(internal, internal) IS 'combine function of the perpca_stats aggregates (pairwise merge)';
COMMENT ON FUNCTION perpca_stats_serialize(internal) IS 'serialize function of the perpca_stats aggregates';
COMMENT ON FUNCTION perpca_stats_deserialize(bytea, internal) IS 'deserialize function of the perpca_stats aggregates';
COMMENT ON FUNCTION perpca_stats_final(internal) IS 'final function of the perpca_stats aggregates';

CREATE OR REPLACE AGGREGATE perpca_stats(float8[]) (
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
    'count, mean and centered co-moment matrix of the (non-NULL) rows of a group; a NULL, NaN or infinite element is an error';

-- perpca_stats(x, 'skip'): rows with a missing value left out and counted.
CREATE OR REPLACE AGGREGATE perpca_stats(float8[], text) (
    SFUNC = perpca_stats_accum_nulls,
    STYPE = internal,
    FINALFUNC = perpca_stats_final,
    COMBINEFUNC = perpca_stats_combine,
    SERIALFUNC = perpca_stats_serialize,
    DESERIALFUNC = perpca_stats_deserialize,
    SSPACE = 16384,                 -- as perpca_stats(float8[])
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats(float8[], text) IS
    'perpca_stats(x, nulls): with nulls ''skip'' the rows with a NULL, NaN or infinite element are left out of the statistics and counted (perpca_skipped); with ''error'' such a row is an error, as in perpca_stats(x).  NULL rows are ignored either way';

CREATE OR REPLACE AGGREGATE perpca_merge(perpca_stats) (
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
    'merges perpca_stats values as if their rows had been aggregated together (counts exactly; means and co-moments up to rounding)';

-- Accessors.
CREATE OR REPLACE FUNCTION perpca_count(perpca_stats) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_skipped(perpca_stats) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_dim(perpca_stats) RETURNS int
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_mean(perpca_stats) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_covariance(s perpca_stats, centered boolean DEFAULT true) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION perpca_stats_form(perpca_stats) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_stats_form(perpca_stats) IS
    'how the value stores its co-moments: ''thin'' (the centred rows, while n <= d/2) or ''dense'' (packed d x d matrix)';
COMMENT ON FUNCTION perpca_count(perpca_stats) IS 'number of rows n summarized by the statistics';
COMMENT ON FUNCTION perpca_skipped(perpca_stats) IS
    'number of rows left out of the statistics for a NULL, NaN or infinite element (perpca_stats(x, ''skip'')), summed by perpca_merge; 0 for values stored before perpca 0.3.0';
COMMENT ON FUNCTION perpca_dim(perpca_stats) IS 'dimension d of the rows';
COMMENT ON FUNCTION perpca_mean(perpca_stats) IS 'mean vector (d values); NULL when n = 0';
COMMENT ON FUNCTION perpca_covariance(perpca_stats, boolean) IS
    'd x d covariance scaled by 1/n; with centered => false the uncentered second moment (1/n) sum x x^T; NULL when n = 0';


-- Two perpca_stats values merged (NULLs skipped), for upserts of per-period statistics.
CREATE OR REPLACE FUNCTION perpca_merge(a perpca_stats, b perpca_stats) RETURNS perpca_stats
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN (SELECT @extschema@.perpca_merge(v.s) FROM (VALUES (a), (b)) AS v(s));
COMMENT ON FUNCTION perpca_merge(perpca_stats, perpca_stats) IS
    'merges two perpca_stats values as the perpca_merge aggregate does (a NULL is skipped), e.g. in INSERT ... ON CONFLICT DO UPDATE SET stats = perpca_merge(t.stats, excluded.stats)';
-- ==========================================================================
-- Projection: pure functions on float8[] components (rows orthonormal)
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_scores(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_scores(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_reconstruct(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_reconstruct(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_residual(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_residual(x float8[], components float8[], mean float8[]) RETURNS float8[]
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

CREATE OR REPLACE FUNCTION perpca_total_variance(s perpca_stats) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_total_variance(s perpca_stats, mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_explained_variance(s perpca_stats, components float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_explained_variance(s perpca_stats, components float8[], mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int,
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;
CREATE OR REPLACE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int, mean float8[],
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

-- Options: named arguments with DEFAULT NULL; the C parser (src/fit_options.c)
-- reads them by name and holds every default, so NULL means "the default".
CREATE OR REPLACE FUNCTION perpca_fit(
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT NULL,
    tolerance float8 DEFAULT NULL,
    step float8 DEFAULT NULL,
    update text DEFAULT NULL,
    retraction text DEFAULT NULL,
    init text DEFAULT NULL,
    seed bigint DEFAULT NULL,
    center text DEFAULT NULL,
    weights text DEFAULT NULL,
    method text DEFAULT NULL,
    verbose boolean DEFAULT NULL,
    adaptive boolean DEFAULT NULL,
    start text DEFAULT NULL,
    solver text DEFAULT NULL,
    scale text DEFAULT NULL,
    hops int DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text, int) IS
    'Personalized PCA: global components shared by all clients (rows of the query) and local components per client; solver ''lbfgs'' (default: best-response local components and L-BFGS over the global ones) or ''paper'' (the paper''s Algorithm 2 and its step options); init ''best'' keeps the best of several starts; init => ''given'' starts from the components returned by the start query (client, kind, component, pc); scale ''standard'' divides each feature by its pooled standard deviation (perpca_scale_factors) before the fit, so components and variances are in standardized units (default ''none''); hops (lbfgs, init ''best'', default 4): after the starts, the two weakest global directions of the best optimum so far are replaced by random ones and the fit converged again, until this many hops in a row find no better optimum (0: the starts only; more: more certainty for more time); a NULL or omitted option means its default (README: Reference)';

CREATE OR REPLACE FUNCTION perpca_last_fit()
RETURNS TABLE (method text, rounds_run int, converged boolean, objective float8,
               kkt_residual float8, theta_est float8, step float8,
               n_clients int, d int, seconds float8,
               solver text, start text, gradient_norm float8, options jsonb,
               rows_skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit() IS
    'diagnostics of the last perpca_fit call in this session (no row before the first): rounds of all starts (0 for the closed-form methods, which always converge), objective sum_i N w_i f_i, KKT residual, theta_est, final step (paper solver), the solver, the winning start, the Riemannian gradient norm, the effective options (defaults filled in) as jsonb, and the rows the clients'' statistics left out for missing values (perpca_stats(x, ''skip''); 0 for a federated fit)';

CREATE OR REPLACE FUNCTION perpca_last_fit_starts()
RETURNS TABLE (start text, objective float8, rounds_run int, converged boolean, chosen boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_starts() IS
    'one row per start of the last perpca_fit or perpca_fit_federated in this session: its objective, rounds and convergence, and whether it was kept';

CREATE OR REPLACE FUNCTION perpca_last_fit_rounds()
RETURNS TABLE (start text, round int, objective float8, gradient_norm float8,
               kkt_residual float8, step float8, products bigint, inner_iterations bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_rounds() IS
    'one row per round of the last perpca_fit or perpca_fit_federated in this session: objective, Riemannian gradient norm (solver lbfgs), KKT residual (solver paper), step, and the work of the round summed over the clients: operator products (S_i X with a block X, or a thin client''s Gram matrix times a block) and inner eigensolver iterations of the best responses, for convergence plots and to see where a round''s time goes';

-- Options as one value: what the write path and other internal callers pass.
CREATE OR REPLACE FUNCTION perpca_internal.fit_options(options jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'perpca_fit_options' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.fit_options(jsonb) IS
    'internal: the effective fit options (defaults filled in, ranks included) of a jsonb object of options named as perpca_fit''s arguments (NULL or absent: the default; other keys ignored), or perpca_fit''s error (22023 naming it) for an invalid one';

CREATE OR REPLACE FUNCTION perpca_internal.fit(query text, options jsonb,
                                               OUT components perpca_internal.perpca_fit_row[],
                                               OUT diagnostics jsonb, OUT scale_factors float8[],
                                               OUT constant_features int[])
    AS 'MODULE_PATHNAME', 'perpca_internal_fit' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.fit(text, jsonb) IS
    'internal: perpca_fit of query with options as one jsonb object, its whole result from one call: the rows, the diagnostics (perpca_last_fit''s columns, effective options under "options") and the divisors of a scaled fit (NULLs when unscaled); what perpca_train and perpca_refresh store';
-- ==========================================================================
-- Feature scaling (fit option scale => 'standard'): the divisors come from
-- the statistics (the pooled standard deviation of each feature, ddof 0); a
-- model stores them in <model>_info.scale_factors and every function that
-- reads the model applies them (src/scale.c).
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_scale_factors(s perpca_stats, OUT scale_factors float8[], OUT constant_features int[])
    AS 'MODULE_PATHNAME', 'perpca_scale_factors' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_scale_factors(perpca_stats) IS
    'the divisors of scale => ''standard'' for these (merged) statistics: each feature''s standard deviation about the mean of all rows (population, ddof 0, as sklearn''s StandardScaler), from the statistics alone; a feature whose standard deviation is at most 1e-12 times its root mean square keeps divisor 1 and is listed in constant_features (1-based)';

CREATE OR REPLACE FUNCTION perpca_internal.scale_stats(s perpca_stats, scale_factors float8[]) RETURNS perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_scale_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.scale_stats(perpca_stats, float8[]) IS
    'internal: the statistics of the rows with each feature divided by scale_factors (mean / s, M2 / s s''); a NULL scale_factors returns s unchanged';

CREATE OR REPLACE FUNCTION perpca_internal.scale_vector(x float8[], scale_factors float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_scale_vector' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.scale_vector(float8[], float8[]) IS
    'internal: x divided elementwise by scale_factors; a NULL scale_factors returns x unchanged';
-- ==========================================================================
-- Models: a fit stored as plain tables <model>_components, <model>_clients
-- and <model>_info, and the functions that write them
--
-- Search path: perpca_train and perpca_refresh are C (src/model_write.c):
-- they resolve an unqualified model name through the caller's search_path
-- and record that search_path for the model's query; every internal
-- function here pins search_path = pg_catalog, pg_temp.  The model's query
-- runs with the recorded search_path, at train as at every refresh.
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

-- Create the three tables of a model.
CREATE OR REPLACE FUNCTION perpca_internal.model_create(schema_name text, base text) RETURNS void
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
    -- The option columns (method .. weights) are those of 0.1.0; every option,
    -- these and later ones, is in options (jsonb), which a refresh reads.
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
            constant_features int[],
            search_path text,
            feature_names text[],
            stats_digest text)$f$, info);
    EXECUTE format('COMMENT ON TABLE %s IS %L', components,
        'perpca model ' || base || ': global (client NULL) and local principal components');
    EXECUTE format('COMMENT ON TABLE %s IS %L', clients,
        'perpca model ' || base || ': one row per client (mean, explained-variance ratios, training error)');
    EXECUTE format('COMMENT ON TABLE %s IS %L', info,
        'perpca model ' || base || ': options, source query and the search_path it runs with, key type, diagnostics and version of the fit');
    PERFORM perpca_internal.history_create(schema_name, base);
END
$$;
COMMENT ON FUNCTION perpca_internal.model_create(text, text) IS 'internal: creates the tables of a new model (and its history table when there is none)';

-- A model's history: one row per train and refresh, in <model>_history,
-- a plain table of the model's owner (dumped with the model, dropped by
-- perpca_drop, locked after the model's three tables: model_lock.c).  Read
-- by perpca_model_history (src/model_history.c, the checked C reader).
CREATE OR REPLACE FUNCTION perpca_internal.history_create(schema_name text, base text) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    history text := format('%I.%I', schema_name, base || '_history');
BEGIN
    IF to_regclass(history) IS NOT NULL THEN
        RETURN;                 -- a model trained again under its old name continues its history
    END IF;
    EXECUTE format($f$
        CREATE TABLE %s (
            entry int PRIMARY KEY CHECK (entry OPERATOR(pg_catalog.>=) 1),
            version bigint,
            at timestamptz NOT NULL,
            kind text NOT NULL CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['train', 'refresh'])),
            clients int,
            rows bigint,
            rounds_run int,
            converged boolean,
            objective float8,
            seconds float8,
            role name,
            warning text,
            outcome text NOT NULL CHECK (outcome OPERATOR(pg_catalog.=) ANY (ARRAY['fitted', 'unchanged', 'failed'])),
            starts jsonb,
            clients_added int,
            clients_dropped int,
            warm_start boolean,
            digest text)$f$, history);
    EXECUTE format('COMMENT ON TABLE %s IS %L', history,
        'perpca model ' || base || ': one row per train and refresh (perpca_model_history)');
END
$$;
COMMENT ON FUNCTION perpca_internal.history_create(text, text) IS
    'internal: creates the history table of a model, unless it exists';

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
    flat text[];
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the model's owner's privileges, checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
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
        SELECT array_agg(client ORDER BY client COLLATE "C") FROM w WHERE total_variance = 0$f$,
        src, schema_name, base || '_components', schema_name, base || '_components',
        schema_name, base || '_clients',
        CASE WHEN monitor THEN ', score_covariance, residual_moments' ELSE '' END,
        CASE WHEN monitor THEN ', score_covariance, residual_moments' ELSE '' END,
        CASE WHEN monitor THEN ', score_covariance = excluded.score_covariance, '
                               'residual_moments = excluded.residual_moments' ELSE '' END)
    INTO flat USING center, global_mean, source, one_client, one_stats, scale_factors;
    IF flat IS NOT NULL THEN
        RAISE NOTICE '% of model "%" % no variance and contribute% nothing to the fit',
                     CASE WHEN cardinality(flat) = 1 THEN 'client ' || quote_literal(flat[1])
                          ELSE cardinality(flat) || ' clients' END, base,
                     CASE WHEN cardinality(flat) = 1 THEN 'has' ELSE 'have' END,
                     CASE WHEN cardinality(flat) = 1 THEN 's' ELSE '' END
            USING DETAIL = 'A client whose rows are all equal (or who has one row) has NULL variance ratios.';
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_internal.model_fill_clients(text, text, text, text, float8[], text, text, perpca_stats, float8[]) IS
    'internal: writes the clients rows of a model (mean in the data''s units; variance ratios and training error of the statistics divided by scale_factors, NULL = unscaled) from statistics; a client without variance gets NULL ratios and a NOTICE';

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

-- The columns of a query's result, planned (not run) as the current user
-- with the given search_path (src/model_write.c).
CREATE OR REPLACE FUNCTION perpca_internal.query_shape(query text, search_path text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'perpca_query_shape' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.query_shape(text, text) IS
    'internal: the result columns of a query ([{name, type, base}], base the type under any domain), from planning it with the given search_path';

-- Run a clients query once into the stage, with the model's search_path
-- (recorded at train), recording the type of the client key.  Its rows are
-- either (client, perpca_stats[, n_local]) or (client, numeric feature
-- columns ...), which are aggregated here, perpca_stats(ARRAY[c1, ..]) per
-- client (a NULL feature is an error, as in perpca_stats); then the result
-- names the features after the columns.  Called through run_as: as the
-- model's owner (or the trainer), inside a security-restricted operation,
-- at train as at refresh.
CREATE OR REPLACE FUNCTION perpca_internal.stage_fill(query text, search_path text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    body text := regexp_replace(query, '[;[:space:]]+$', '');
    cols jsonb := perpca_internal.query_shape(body, search_path);
    ncols int := jsonb_array_length(cols);
    names text[];
    bad text;
    command text;
    n bigint;
BEGIN
    IF ncols >= 2 AND (cols -> 1 ->> 'type')::oid = '@extschema@.perpca_stats'::regtype::oid THEN
        command := format(
            'INSERT INTO pg_temp.perpca_train_src
             SELECT pg_catalog.pg_typeof(q.perpca_client_key), q.*
               FROM (%s
                    ) AS q(perpca_client_key, perpca_client_stats)', body);
    ELSE
        SELECT string_agg(format('%s (%s)', quote_ident(c ->> 'name'), format_type((c ->> 'type')::oid, NULL)),
                          ', ' ORDER BY i)
          INTO bad
          FROM jsonb_array_elements(cols) WITH ORDINALITY AS t(c, i)
         WHERE i > 1 AND (c ->> 'base')::oid <> ALL (ARRAY['int2'::regtype, 'int4'::regtype, 'int8'::regtype,
                                                           'float4'::regtype, 'float8'::regtype,
                                                           'numeric'::regtype]::oid[]);
        IF ncols < 2 OR bad IS NOT NULL THEN
            RAISE EXCEPTION 'a model''s query must return a client key, then perpca_stats or numeric feature columns'
                USING ERRCODE = 'datatype_mismatch',
                      DETAIL = CASE WHEN ncols < 2 THEN format('The query returns %s column.', ncols)
                                    ELSE format('Not numeric: %s.', bad) END,
                      HINT = 'Return (client, perpca_stats(x) ... GROUP BY client), or (client, c1, c2, ...) with '
                             'numeric columns (smallint, integer, bigint, real, double precision, numeric).';
        END IF;
        SELECT array_agg(c ->> 'name' ORDER BY i) INTO names
          FROM jsonb_array_elements(cols) WITH ORDINALITY AS t(c, i) WHERE i > 1;
        SELECT format(
            'INSERT INTO pg_temp.perpca_train_src (client_type, client, stats)
             SELECT pg_catalog.pg_typeof(q.perpca_client_key), q.perpca_client_key,
                    @extschema@.perpca_stats(ARRAY[%s])
               FROM (%s
                    ) AS q(perpca_client_key, %s)
              GROUP BY q.perpca_client_key',
            string_agg(format('q.perpca_f%s::pg_catalog.float8', i), ', ' ORDER BY i), body,
            string_agg(format('perpca_f%s', i), ', ' ORDER BY i))
          INTO command
          FROM generate_series(1, ncols - 1) AS i;
    END IF;
    -- Only the query runs with the model's search_path: everything else here
    -- is evaluated before and after (the function's SET restores it on error).
    PERFORM set_config('search_path', search_path, true);
    EXECUTE command;
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    RETURN jsonb_build_object('clients', n, 'feature_names', to_jsonb(names));
END
$$;
COMMENT ON FUNCTION perpca_internal.stage_fill(text, text) IS
    'internal: runs a clients query into the temporary stage of a train or refresh with the given search_path, with its key type; a query of numeric feature columns is aggregated per client (perpca_stats) and its column names returned as feature_names';

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
    added text;
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
        SELECT string_agg(format('ADD COLUMN %I %s', c.name, c.type), ', ') INTO added
          FROM (VALUES ('client_type', 'text'), ('options', 'jsonb'), ('scale_factors', 'float8[]'),
                       ('constant_features', 'int[]'), ('search_path', 'text'),
                       ('feature_names', 'text[]'), ('stats_digest', 'text')) AS c(name, type)
         WHERE NOT EXISTS (SELECT FROM pg_attribute a
                            WHERE a.attrelid = info::regclass AND a.attname = c.name AND NOT a.attisdropped);
        IF added IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %s %s', info, added);
        END IF;
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
              'feature_names', to_jsonb(feature_names), 'stats_digest', digest);

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
                           regexp_replace(query, '[;[:space:]]+$', ''));
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

    -- The caller's query runs once, as the caller, the way every refresh
    -- will run it: restricted, with the recorded search_path.
    PERFORM perpca_internal.stage_create(owner);
    staged := perpca_internal.run_as(current_user::regrole, 'SELECT perpca_internal.stage_fill($1, $2)',
                                     query, search_path);
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
                             feature_names text[] DEFAULT NULL, hops int DEFAULT NULL)
RETURNS TABLE (model_name text, d int, n_clients int, rounds_run int, converged boolean,
               objective float8, theta_est float8)
    AS 'MODULE_PATHNAME', 'perpca_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_train(text, text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, boolean, text, text, text, text[], int) IS
    'fits PerPCA on a query returning (client, perpca_stats[, n_local]) and stores the model as tables <model>_components, <model>_clients and <model>_info; the client key may be of any type (its type is recorded); the query runs as it will at every refresh (restricted, with the search_path in effect now, recorded in <model>_info.search_path), so a query that could not be refreshed fails now; replace => true swaps an existing model atomically (another role''s model is written as its owner); NULL options take perpca_fit''s defaults (the effective ones are recorded in <model>_info.options); start is perpca_fit''s warm-start query (with init => ''given''); scale => ''standard'' divides each feature by its pooled standard deviation, stored in <model>_info.scale_factors and applied by every function that reads the model; feature_names (d names) are stored in <model>_info.feature_names for perpca_loadings and top_features';

-- ==========================================================================
-- Model administration: locking a model's
-- tables (the lock itself is src/model_lock.c: one order for every function
-- that touches a model), dropping a model and personalizing a client.
--
-- Search path: every function here pins search_path = pg_catalog, pg_temp
-- or is C; a model name is resolved by the C code with the caller's
-- search_path before anything else runs.  Ownership: a model that belongs
-- to another role is written as that role, inside a security-restricted
-- operation (perpca_internal.run_as, see 50_refresh.sql).
-- ==========================================================================

-- Find and lock a model's tables in the one order of src/model_lock.c: for
-- writers and drop first the model's name lock (which no SQL command can
-- take, so no other role can hold it; it also serializes the creation of a
-- new model), then <model>_info, _clients, _components.  purpose: 'write'
-- (SHARE ROW EXCLUSIVE: readers go on, writers wait; with missing_ok the
-- model may not exist yet and would be created) or 'drop' (ACCESS
-- EXCLUSIVE); readers lock in C (ACCESS SHARE), so 'read' is refused here
-- (it would check no privilege).  Checks that
-- the tables are plain tables of one owner and, for write and drop, that the
-- caller has the owner's privileges (before any lock is requested).
-- undefined_object for a missing model (unless missing_ok),
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
    'internal: finds and locks a model''s tables for write or drop in the one order of every perpca function (name lock, then info, clients, components), after checking kind, owner and that the caller has the owner''s privileges; see src/model_lock.c';

CREATE OR REPLACE FUNCTION perpca_drop(model text, if_exists boolean DEFAULT false) RETURNS void
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_drop(text, boolean) IS
    'drops the tables of a model (after locking them in the order every perpca function uses, and checking that they are plain tables of one owner whose privileges the caller has, and that the info table is a perpca model''s); with if_exists => true a missing model is only a notice';

-- Local components of one client, computed and stored, and returned.  Run by
-- perpca_personalize (src/personalize.c) as the model's owner, inside a
-- security-restricted operation, after it locked the model and checked the
-- key, the statistics and n_local with the checked C reader; factors are
-- the model's scale_factors as that reader read them (NULL: unscaled).
-- Executable by PUBLIC (the owner runs it), so it checks for itself, with
-- model_lock, that the model is plain tables of one owner whose privileges
-- the current user has, before it reads anything.  n_local = 0: the client
-- keeps no local components (its old ones are deleted); its figures, scores
-- and errors then use the global components alone.
CREATE OR REPLACE FUNCTION perpca_internal.model_personalize(schema_name text, base text, client text,
                                                             stats perpca_stats, n_local int, factors float8[])
RETURNS TABLE (component int, pc float8[], variance float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    components text := format('%I.%I', schema_name, base || '_components');
    info text := format('%I.%I', schema_name, base || '_info');
    m record;
    u float8[];
    centre float8[];
    scaled @extschema@.perpca_stats;
BEGIN
    -- Executable by PUBLIC (95_privileges.sql): the model's owner's privileges, checked first.
    PERFORM FROM perpca_internal.model_lock(format('%I.%I', schema_name, base), 'write');
    EXECUTE format('SELECT d, n_local, center, global_mean FROM %s', info) INTO STRICT m;
    EXECUTE format('SELECT array_agg(pc ORDER BY component) FROM %s WHERE kind OPERATOR(pg_catalog.=) %L',
                   components, 'global')
        INTO u;
    -- The local components live where the model's components do: in the scaled features.
    scaled := perpca_internal.scale_stats(stats, factors);
    centre := CASE m.center WHEN 'client' THEN @extschema@.perpca_mean(scaled)
                            WHEN 'global' THEN perpca_internal.scale_vector(m.global_mean, factors)
                            ELSE array_fill(0::float8, ARRAY[m.d]) END;
    EXECUTE format('DELETE FROM %s WHERE kind OPERATOR(pg_catalog.=) %L AND client OPERATOR(pg_catalog.=) $1',
                   components, 'local') USING client;
    IF coalesce(n_local, m.n_local) OPERATOR(pg_catalog.<>) 0 THEN
        EXECUTE format('INSERT INTO %s (client, kind, component, pc, variance)
                        SELECT $1, %L, l.component, l.pc, l.variance
                          FROM @extschema@.perpca_local_pcs($2, $3, $4, $5) l',
                       components, 'local')
            USING client, scaled, u, coalesce(n_local, m.n_local), centre;
    END IF;
    PERFORM perpca_internal.model_fill_clients(schema_name, base, '(SELECT $4 AS client, $5 AS stats)',
                                                      m.center, m.global_mean, 'personalize', client, stats,
                                                      factors);
    -- nextval() first: Citus refuses it inside an UPDATE of a reference table.
    EXECUTE format('UPDATE %s SET version = $1', info) USING nextval('@extschema@.perpca_model_version');
    RETURN QUERY EXECUTE format('SELECT k.component, k.pc, k.variance FROM %s k
                                  WHERE k.kind OPERATOR(pg_catalog.=) %L AND k.client OPERATOR(pg_catalog.=) $1
                                  ORDER BY k.component', components, 'local')
        USING client;
END
$$;
COMMENT ON FUNCTION perpca_internal.model_personalize(text, text, text, perpca_stats, int, float8[]) IS
    'internal: computes, stores and returns the local components of one client with the global components frozen (none for n_local = 0); run as the model''s owner by perpca_personalize; refuses a model whose owner''s privileges the current user lacks (model_lock)';

-- Both forms are C (src/model_lock.c): the model is locked (its owner's
-- privileges checked), its key type, dimension and scale read with the
-- checked C reader, and model_personalize runs as the owner.
CREATE OR REPLACE FUNCTION perpca_personalize(model text, client text, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize(text, text, perpca_stats, int) IS
    'computes local components for a (new) client from its statistics with the global components frozen and stores them in the model; n_local defaults to the model''s (0 to n_global''s complement; 0: no local components, the client is described by the global components alone); another role''s model is written as its owner (inside a security-restricted operation), and only the owner or a member of the owning role may personalize';

CREATE OR REPLACE FUNCTION perpca_personalize(model text, client anyelement, stats perpca_stats, n_local int DEFAULT NULL)
RETURNS TABLE (component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize(text, anyelement, perpca_stats, int) IS
    'perpca_personalize with the client key in its own type (int, bigint, uuid, date, ...), which must be the type of the model''s keys; matched as its text form (the type''s output function)';

-- 0.2.0's personalize helpers (the SQL-language perpca_personalize depended
-- on perpca_personalize_key, so they go once it is replaced; no-ops on a
-- fresh install).
DROP FUNCTION IF EXISTS perpca_internal.perpca_personalize_key(text, regtype, text, perpca_stats, int);
DROP FUNCTION IF EXISTS perpca_internal.perpca_model_key(text, regtype, text, text);
DROP FUNCTION IF EXISTS perpca_internal.perpca_model_personalize(text, text, text, perpca_stats, int);
-- ==========================================================================
-- Reading a stored model: component info, theta, row-wise projection and
-- client similarity.  model_functions.c and model_read.c read a model's tables
-- straight from the heap, after checking that they are plain tables of one
-- owner that the caller may read (no SQL runs on them, so the model's owner
-- cannot make the caller run her code), and cache it per backend.
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_component_info(model text)
RETURNS TABLE (client text, kind text, component int, variance float8,
               explained_variance_ratio float8, cumulative_explained_variance_ratio float8,
               top_features text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_component_info(text) IS
    'variance, explained-variance ratio and cumulative ratio of each component (as ML.PRINCIPAL_COMPONENT_INFO), global rows first, then each client''s local rows.  Global rows divide by <model>_info.total_variance, the fit''s weighted mean over clients (weights option) of each client''s total variance about its centre; their cumulative ratio runs over the global components.  Local rows divide by their own client''s total variance about its centre (<model>_clients.total_variance); their cumulative ratio starts at the client''s global_ratio (the share of its variance the global components capture), so the last local row is global_ratio + local_ratio.  A ratio is NULL when its total is NULL or 0.  top_features names the three features with the largest absolute loadings (name and loading; names from <model>_info.feature_names, else x1 .. xd)';

CREATE OR REPLACE FUNCTION perpca_model_theta(model text, threshold float8 DEFAULT 0.05,
                                   OUT theta_est float8, OUT hint text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_theta(text, float8) IS
    'the model''s misalignment theta_est = 1 - lambda_max(mean of the local projectors), with a hint when it is below threshold';

-- Row-wise projection on a stored model (read once per backend and cached).
-- Each takes the client key as text (also for literals such as 'c1') or in
-- any other type (int, bigint, uuid, date, ...), converted to text by the
-- type's output function as the fit stored it.
CREATE OR REPLACE FUNCTION perpca_model_scores(model text, client text, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_scores(model text, client anyelement, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_global_part(model text, client text, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_global_part(model text, client anyelement, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_local_part(model text, client text, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_local_part(model text, client anyelement, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_reconstruct(model text, client text, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_reconstruct(model text, client anyelement, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_residual(model text, client text, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_residual(model text, client anyelement, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_error(model text, client text, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8 AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_error(model text, client anyelement, x float8[], unknown text DEFAULT 'global',
                                               missing text DEFAULT 'error')
    RETURNS float8 AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_impute(model text, client text, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_impute(model text, client anyelement, x float8[], unknown text DEFAULT 'global')
    RETURNS float8[] AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_similarity(model text, all_pairs boolean DEFAULT false,
                                  OUT client_a text, OUT client_b text, OUT distance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION perpca_model_scores(text, text, float8[], text, text) IS
    'scores of a row x of a client: n_global global scores then the client''s local scores, after centering as the fit did; a client the model has never seen gets the global scores only (unknown => ''global'', one NOTICE per statement) or an error (unknown => ''error'').  missing => ''observed'': a row with NULL, NaN or infinite elements gets the posterior mean of its scores given the observed coordinates under the model''s probabilistic PCA form (every row is then scored so, also a complete one), NULL when fewer coordinates are observed than there are scores; missing => ''error'' (default): such an element is an error';
COMMENT ON FUNCTION perpca_model_scores(text, anyelement, float8[], text, text) IS
    'perpca_model_scores with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_global_part(text, text, float8[], text, text) IS
    'global part of x, centre + U U^T (x - centre): what the clients share (the background); global part + local part + residual = x';
COMMENT ON FUNCTION perpca_model_global_part(text, anyelement, float8[], text, text) IS
    'perpca_model_global_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_local_part(text, text, float8[], text, text) IS
    'local part of x, V V^T (x - centre): what is unique to the client (the foreground); zero for a client the model has never seen';
COMMENT ON FUNCTION perpca_model_local_part(text, anyelement, float8[], text, text) IS
    'perpca_model_local_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_reconstruct(text, text, float8[], text, text) IS
    'reconstruction of x from the global and the client''s local components (global part + local part)';
COMMENT ON FUNCTION perpca_model_reconstruct(text, anyelement, float8[], text, text) IS
    'perpca_model_reconstruct with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_residual(text, text, float8[], text, text) IS
    'residual of x: x minus its reconstruction from the global and the client''s local components; with missing => ''observed'' NULL at the missing coordinates';
COMMENT ON FUNCTION perpca_model_residual(text, anyelement, float8[], text, text) IS
    'perpca_model_residual with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_error(text, text, float8[], text, text) IS
    'reconstruction error of x, the squared norm of its residual (an anomaly score); its mean over a client''s training rows is the client''s train_error; with missing => ''observed'' the sum over the observed coordinates only';
COMMENT ON FUNCTION perpca_model_error(text, anyelement, float8[], text, text) IS
    'perpca_model_error with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_similarity(text, boolean) IS
    'client distance rho = ||P_Va - P_Vb||_F^2 / r2 between the local subspaces of each unordered pair of clients, once with client_a < client_b (byte order), for clustering clients by what makes them different; all_pairs => true gives every ordered pair and each client with itself (distance 0)';
COMMENT ON FUNCTION perpca_model_impute(text, text, float8[], text) IS
    'x with each NULL, NaN or infinite element replaced by its conditional expectation given the observed elements, under the model''s probabilistic PCA form for the client (its global and local components with their variances and isotropic noise, the client''s mean and the model''s scale), in the data''s units; observed elements are returned unchanged, bit for bit; a row with nothing observed gets the client''s centre';
COMMENT ON FUNCTION perpca_model_impute(text, anyelement, float8[], text) IS
    'perpca_model_impute with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';

CREATE OR REPLACE FUNCTION perpca_evaluate_imputation(model text, query text, share float8 DEFAULT 0.1,
                                                      seed bigint DEFAULT 0)
RETURNS TABLE (client text, n bigint, hidden bigint, error float8, mean_error float8, ratio float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_imputation(text, text, float8, bigint) IS
    'masked evaluation: the query returns rows (client, x float8[]); each observed entry is hidden with probability share (seeded by seed and the row, so the same rows hide the same entries in any order), filled by perpca_model_impute, and scored per client: rows n, hidden entries, error (mean squared error of the model''s filling on the hidden entries, in the data''s units), mean_error (that of filling with the client''s centre, its mean under center ''client'') and ratio = error / mean_error';
-- ==========================================================================
-- Results a user can read and act on (src/results.c, src/monitor.c):
-- named loadings, what each component explains in each client, control
-- limits for new rows, and clusters of clients by their local subspaces.
-- Each reads the model with the checked C reader (model_read.c).
-- ==========================================================================

-- Written with each client's row of <model>_clients (perpca_internal.model_fill_clients).
CREATE OR REPLACE FUNCTION perpca_internal.client_monitor_stats(s @extschema@.perpca_stats, u float8[], v float8[],
                                                               OUT score_covariance float8[],
                                                               OUT residual_moments float8[])
    AS 'MODULE_PATHNAME', 'perpca_client_monitor_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.client_monitor_stats(@extschema@.perpca_stats, float8[], float8[]) IS
    'internal: for a client''s statistics s (in the model''s units) and components W = [u; v], the scores'' covariance W S W'' and the residual spectrum {tr R, tr R^2, tr R^3}, R = (I - W''W) S (I - W''W), S the covariance of its rows (NULLs for NULL or empty statistics)';

CREATE OR REPLACE FUNCTION perpca_internal.f_upper_quantile(alpha float8, d1 float8, d2 float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'perpca_f_upper_quantile' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.f_upper_quantile(float8, float8, float8) IS
    'internal: the upper alpha quantile of the F(d1, d2) distribution (regularized incomplete beta, inverted), as perpca_model_monitor''s T^2 limit uses it';

CREATE OR REPLACE FUNCTION perpca_loadings(model text)
RETURNS TABLE (kind text, client text, component int, feature text, loading float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_loadings(text) IS
    'one row per feature of each component: kind ''global'' (client NULL) or ''local'', the component''s number, the feature''s name (<model>_info.feature_names, else x1 .. xd) and its loading (the component''s unit-vector entry, in the model''s scaled units for scale ''standard''); global rows first, then clients bytewise';

CREATE OR REPLACE FUNCTION perpca_component_variance(model text)
RETURNS TABLE (client text, kind text, component int, variance float8, ratio float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_component_variance(text) IS
    'for each client, each global and local component''s variance in that client''s training rows (w'' M w, M their second moment about the model''s centre for the client) and its share of the client''s total_variance, from the statistics stored with the model (no rows read); the local rows equal <model>_components.variance';

CREATE OR REPLACE FUNCTION perpca_model_monitor(model text, client text, x float8[], alpha float8 DEFAULT 0.01,
                                                OUT t2 float8, OUT t2_limit float8, OUT q float8,
                                                OUT q_limit float8, OUT out_of_control boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_monitor(model text, client anyelement, x float8[], alpha float8 DEFAULT 0.01,
                                                OUT t2 float8, OUT t2_limit float8, OUT q float8,
                                                OUT q_limit float8, OUT out_of_control boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_monitor(text, text, float8[], float8) IS
    'multivariate process control of a row x of a client against the client''s own training distribution: Hotelling''s T^2 of its scores (about the client''s mean, with the scores'' stored covariance) and Q = ||residual||^2 (the squared prediction error), each with its limit (T^2: the F-distribution limit for a new observation, k (n^2 - 1) / (n (n - k)) F(k, n - k); Q: Jackson and Mudholkar from the stored residual spectrum), each at level 1 - sqrt(1 - alpha) so that out_of_control (either above its limit) has false-alarm rate alpha for Gaussian rows; a client the model has never seen gets Q against the global components, NULL T^2 and limits, and the unknown-client NOTICE';
COMMENT ON FUNCTION perpca_model_monitor(text, anyelement, float8[], float8) IS
    'perpca_model_monitor with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';

CREATE OR REPLACE FUNCTION perpca_clusters(model text, k int DEFAULT NULL)
RETURNS TABLE (client text, cluster int, distance_to_center float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_clusters(text, int) IS
    'spectral clustering of the clients by their local subspaces, as the paper does: affinity 1 - rho/2 (rho as perpca_similarity), the top k eigenvectors of D^-1/2 A D^-1/2 divided by sqrt(D), k-means with a fixed seed (the same clusters on every call), clusters numbered by their first client (bytewise); distance_to_center is the client''s distance to its cluster''s centre in that embedding; k NULL: the largest eigengap among k = 2 .. 20, named in a NOTICE';

-- A model's history (src/model_history.c reads <model>_history, written by
-- perpca_train and perpca_refresh through perpca_internal.history_append).
CREATE OR REPLACE FUNCTION perpca_model_history(model text)
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_history(text) IS
    'one row per perpca_train (kind ''train'') and perpca_refresh (kind ''refresh'') of the model, in order (entry): the model version it left, when it ended, clients and rows fitted, rounds run, convergence, objective, wall-clock seconds, the role that ran it, a warning (not converged; ''unchanged: ...''; ''failed: SQLSTATE: message''), outcome ''fitted'', ''unchanged'' (nothing fitted) or ''failed'' (the old model stayed), the starts of the fit with their rounds, and for a refresh the clients added and dropped and whether it started warm; needs SELECT on <model>_info and <model>_history; a model stored before 0.3.0 has no history until its first refresh';
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
    staged := perpca_internal.stage_fill(m ->> 'source_query', path);
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
-- on_error 'record', an error of the refit (not a cancel) is caught, the
-- model stays as it was, and the failure is the history's row.
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
        BEGIN
            r := perpca_internal.run_as(owner, 'SELECT perpca_internal.model_refresh($1, $2, $3)',
                                        schema_name, base, warm);
        EXCEPTION WHEN OTHERS THEN      -- not query_canceled: a cancel or timeout stays an error
            GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
            RAISE WARNING 'refresh of model "%" failed: %', model, message
                USING DETAIL = format('SQLSTATE %s. The model is unchanged; the failure is in its history.', state),
                      HINT = format('SELECT * FROM perpca_model_history(%L) shows it.', model);
            r := jsonb_build_object('outcome', 'failed', 'rounds_run', 0, 'converged', false,
                                    'warm_start', warm, 'warning', format('failed: %s: %s', state, message));
        END;
    ELSE
        r := perpca_internal.run_as(owner, 'SELECT perpca_internal.model_refresh($1, $2, $3)',
                                    schema_name, base, warm);
    END IF;
    DROP TABLE pg_temp.perpca_train_src;
    IF r ->> 'outcome' = 'unchanged' THEN
        RAISE NOTICE 'model "%" is unchanged: nothing was fitted', model
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
    'internal: the body of perpca_refresh (the caller holds the model''s write lock): stages and refits the model as its owner, appends the history row and returns it; on_error ''record'' catches a failed refit (not a cancel) into that row';

CREATE OR REPLACE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false,
                                          on_error text DEFAULT 'raise')
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean)
    AS 'MODULE_PATHNAME', 'perpca_refresh' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_refresh(text, boolean, boolean, text) IS
    'refits a stored model from its recorded source query and options and swaps the result in atomically, and returns the row it appends to the model''s history (perpca_model_history); runs as the model''s owner inside a security-restricted operation (like REFRESH MATERIALIZED VIEW) with the search_path recorded when the model was trained, so it refreshes the same from any session; only the owner or a member of the owning role may refresh (insufficient_privilege otherwise); warm => true starts from the stored components and fits nothing when the statistics, options and feature names are bit for bit those of the stored model (outcome ''unchanged'', rounds_run 0, a NOTICE); warm => false always refits from scratch; clients new in the query get local components, clients gone from it (including personalized ones) are dropped; a second refresh of the same model fails at once (lock_not_available) unless wait => true; on_error ''raise'' (default): a failed refit is an error; ''record'': it is caught (not a cancel), the old model stays, a WARNING is raised and the row (outcome ''failed'', converged false, warning ''failed: SQLSTATE: message'') is appended and returned';
-- ==========================================================================
-- Federated: PerPCA rounds run where the data live.  The coordinator
-- (perpca_fit_federated) keeps one libpq connection per shard; each round
-- sends U out and gets one weighted sum of the shard's clients' U_i back.
-- The perpca_internal.shard_* functions are the shard side of that protocol.
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_internal.shard_open(fit_id text, query text, n_global int, n_local int,
                                  weights text, seed bigint,
                                  OUT n_clients int, OUT dim int, OUT n_rows bigint,
                                  OUT mean_sum float8[], OUT stats_bytes bigint, OUT keys text[])
    AS 'MODULE_PATHNAME', 'perpca_shard_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_open(text, text, int, int, text, bigint) IS
    'federated fit, shard side: runs the query (client, perpca_stats [, local rank]) here and keeps its clients in this session under fit_id; returns their count, dimension, rows, sum of n_i mean_i (1 x d), the bytes of their statistics and their keys';

CREATE OR REPLACE FUNCTION perpca_internal.shard_scale(fit_id text, mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_scale' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_scale(text, float8[]) IS
    'federated fit, shard side, scale ''standard'': sum over this shard''s clients of M2_i,jj + n_i (mean_i,j - mean_j)^2 about the pooled mean (1 x d each), from which the coordinator takes the pooled standard deviations';

CREATE OR REPLACE FUNCTION perpca_internal.shard_init(fit_id text, center float8[], scale_factors float8[] DEFAULT NULL,
                                  OUT weight float8, OUT lambda_max float8)
    AS 'MODULE_PATHNAME', 'perpca_shard_init' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_init(text, float8[], float8[]) IS
    'federated fit, shard side: divides the clients'' statistics by scale_factors (1 x d; NULL: unscaled), then builds each client''s S_i about center (1 x d; NULL: its own mean); returns the sum of the client weights and max lambda_max(S_i)';

CREATE OR REPLACE FUNCTION perpca_internal.shard_basis(fit_id text, qu boolean, exact boolean) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_basis' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_basis(text, boolean, boolean) IS
    'federated fit, shard side: a d x q basis B with B B'' = the sum over the clients of their stacked local PCs (scaled for qu), for the disPCA and Qu starts';

CREATE OR REPLACE FUNCTION perpca_internal.shard_apply(fit_id text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_apply' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_apply(text, float8[]) IS
    'federated fit, shard side: sum_i w_i S_i X for a d x q matrix X (the pooled start)';

CREATE OR REPLACE FUNCTION perpca_internal.shard_start_local(fit_id text, u float8[], init text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'perpca_shard_start_local' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_start_local(text, float8[], text) IS
    'federated fit, shard side: the paper solver''s start of every client''s local components given U';

CREATE OR REPLACE FUNCTION perpca_internal.shard_round(fit_id text, u float8[], step float8, update text,
                                   retraction text, want_kkt boolean,
                                   OUT weight float8, OUT objective float8, OUT u_sum float8[],
                                   OUT g_sum float8[], OUT gradient_v float8, OUT change float8,
                                   OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_round' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_round(text, float8[], float8, text, text, boolean) IS
    'federated fit, shard side: one round of the paper''s client steps against U; weighted sums over the clients';

CREATE OR REPLACE FUNCTION perpca_internal.shard_evaluate(fit_id text, u float8[], tol float8,
                                   OUT weight float8, OUT objective float8, OUT u_sum float8[],
                                   OUT g_sum float8[], OUT gradient_v float8, OUT change float8,
                                   OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_evaluate' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_evaluate(text, float8[], float8) IS
    'federated fit, shard side: one L-BFGS evaluation: every client''s best response to U; sum_i w_i f_i and sum_i w_i of the gradient terms';

CREATE OR REPLACE FUNCTION perpca_internal.shard_finish(fit_id text, u float8[], best_response boolean,
                                   OUT weight float8, OUT objective float8, OUT u_sum float8[],
                                   OUT g_sum float8[], OUT gradient_v float8, OUT change float8,
                                   OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_finish' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_finish(text, float8[], boolean) IS
    'federated fit, shard side: local components feasible against the final U and ordered; sums for the diagnostics and the order of U';

CREATE OR REPLACE FUNCTION perpca_internal.shard_result(fit_id text)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8, weight float8)
    AS 'MODULE_PATHNAME', 'perpca_shard_result' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_result(text) IS
    'federated fit, shard side: the local components of this shard''s clients after shard_finish, with each client''s weight';

CREATE OR REPLACE FUNCTION perpca_internal.shard_close(fit_id text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'perpca_shard_close' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_close(text) IS
    'federated fit, shard side: frees the state of fit_id in this session (false if it was not open); it is also freed when the session ends';

-- Options: as perpca_fit's, DEFAULT NULL, read by name in C (src/fit_options.c).
CREATE OR REPLACE FUNCTION perpca_fit_federated(
    shards text[],
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT NULL,
    tolerance float8 DEFAULT NULL,
    step float8 DEFAULT NULL,
    update text DEFAULT NULL,
    retraction text DEFAULT NULL,
    init text DEFAULT NULL,
    center text DEFAULT NULL,
    weights text DEFAULT NULL,
    verbose boolean DEFAULT NULL,
    adaptive boolean DEFAULT NULL,
    solver text DEFAULT NULL,
    seed bigint DEFAULT NULL,
    scale text DEFAULT NULL,
    hops int DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text, int) IS
    'Personalized PCA with the clients on shards (libpq connection strings): the query runs on every shard, only U and d x n_global sums per shard cross the network each round; the same fit engine, options and rows as perpca_fit (a client key on two shards is an error); scale ''standard'' takes the pooled standard deviations from one extra round trip of d numbers per shard';
-- It opens connections with the server's credentials: superusers, and roles granted EXECUTE.
REVOKE EXECUTE ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text, int) FROM PUBLIC;

CREATE OR REPLACE FUNCTION perpca_last_federated_fit()
RETURNS TABLE (rounds_run int, converged boolean, objective float8, kkt_residual float8, step float8,
               n_shards int, n_clients int, d int, setup_bytes bigint, round_bytes bigint,
               result_bytes bigint, round_binary_bytes bigint, stats_binary_bytes bigint,
               seconds float8, solver text, theta_est float8, gradient_norm float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION perpca_last_federated_fit() IS
    'diagnostics of the last perpca_fit_federated call in this session, with the bytes it moved (text payload of commands and answers: setup, per round, result; round_binary_bytes = the same round as packed float8) and the binary size of the statistics it did not move';
-- ==========================================================================
-- Evaluation: held-out reconstruction error and explained variance of a
-- stored model (perpca_evaluate); choosing the ranks is 75_ranks.sql
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_internal.evaluate_stats(client text, s @extschema@.perpca_stats, centre float8[],
                                               u float8[], v float8[],
                                               OUT error float8, OUT total_variance float8,
                                               OUT global_variance float8, OUT local_variance float8)
    AS 'MODULE_PATHNAME', 'perpca_evaluate_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.evaluate_stats(text, @extschema@.perpca_stats, float8[], float8[], float8[]) IS
    'internal: mean squared residual tr((I-Q) M (I-Q)), total tr M, tr(U M U'') and tr(V M V'') of a client''s rows with second moment M about centre, Q = W''W for W = [u; v] (NULL figures for NULL statistics)';

CREATE OR REPLACE FUNCTION perpca_internal.query_columns(query text) RETURNS regtype[]
    AS 'MODULE_PATHNAME', 'perpca_query_columns' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.query_columns(text) IS
    'internal: the types of the columns a query returns, from its plan (the query is not run)';

-- A query (client, x float8[]) or (client, perpca_stats) as (client text, stats perpca_stats), one row per client.
CREATE OR REPLACE FUNCTION perpca_internal.stats_query(query text, what text DEFAULT 'query') RETURNS text
    AS 'MODULE_PATHNAME', 'perpca_stats_query' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.stats_query(text, text) IS
    'internal: wraps a query of rows (client, x float8[]) or statistics (client, perpca_stats) into one returning (client text, stats perpca_stats), one row per client; every name in the wrapper is schema-qualified';

-- Both read the model with the checked C reader (src/model_read.c: plain
-- tables of one owner, read from the heap, nothing of the owner's runs) and
-- run the query as the caller (src/evaluate.c).
CREATE OR REPLACE FUNCTION perpca_evaluate(model text, query text)
RETURNS TABLE (client text, known boolean, n bigint, error float8, total_variance float8,
               global_ratio float8, local_ratio float8, explained_ratio float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate(text, text) IS
    'held-out evaluation of a stored model on a query of rows (client, x float8[]) or statistics (client, perpca_stats): per client the rows n, the mean squared reconstruction error (||residual||^2 per row, as perpca_model_error), the second moment about the model''s centre and the shares of it explained by the global part, the local part and both (NULL for a client whose second moment is 0); a client the model has never seen (known false) is evaluated on the global components only; a scaled model (scale ''standard'') divides the rows by its stored scale_factors first, so error, total_variance and the ratios are in standardized units, as perpca_model_error';

CREATE OR REPLACE FUNCTION perpca_evaluate_summary(model text, query text,
                                        OUT clients int, OUT unseen_clients int, OUT n bigint,
                                        OUT error float8, OUT error_samples float8,
                                        OUT global_ratio float8, OUT global_ratio_samples float8,
                                        OUT local_ratio float8, OUT local_ratio_samples float8,
                                        OUT explained_ratio float8, OUT explained_ratio_samples float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_summary(text, text) IS
    'the whole model on a query of rows or statistics, as perpca_evaluate: error = mean of the clients'' errors (equal weights, the paper''s metric), error_samples = mean over all rows; ratios = explained over total second moment summed over clients (equal weights) or over rows (_samples), NULL when that sum is 0';
-- ==========================================================================
-- Choosing the ranks (perpca_choose_ranks, src/ranks.c): every pair of a grid
-- fitted on training rows and evaluated on held-out rows, in memory (no
-- table is written, so a scan runs on a hot standby too)
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_choose_ranks(
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
    adaptive boolean DEFAULT NULL, solver text DEFAULT NULL, scale text DEFAULT NULL,
    target_explained_ratio float8 DEFAULT NULL, hops int DEFAULT NULL)
RETURNS TABLE (n_global int, n_local int, objective float8, train_error float8,
               heldout_error float8, heldout_error_samples float8, heldout_explained_ratio float8,
               theta_est float8, rounds_run int, converged boolean, seconds float8, recommended boolean,
               note text)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_choose_ranks(text, text, int[], int[], float8, float8, float8, int, float8, float8, text, text, text, bigint, text, text, boolean, text, text, float8, int) IS
    'fits PerPCA for every pair of global_ranks x local_ranks on the query''s training rows and evaluates each on held-out rows (the heldout query, or a repeatable split of the query''s rows (client, x, key) by a hash of key, holdout of them held out); per pair the training objective, train and held-out error (equal weights; _samples per row), the held-out explained ratio, theta_est, rounds and seconds.  Pairs with n_global + n_local >= d are left out (note says so): they explain held-out rows exactly.  recommended marks, by the error rule (target_explained_ratio NULL), the smallest n_global + n_local whose held-out error is at most within x (held-out total variance) above the best pair''s, or, by the share rule, the smallest whose held-out explained ratio reaches target_explained_ratio; both only among pairs with theta_est >= min_theta or no local components; the error rule recommends nothing when no pair explains 1.5 times its share (n_global + n_local) / d of the held-out variance (no low-rank structure).  A NOTICE says which way to move a grid whose answer is at its edge.  Fit options pass to the fits as perpca_fit''s (NULL = its default)';
-- ==========================================================================
-- Citus: statistics aggregates that Citus splits across its workers
-- ==========================================================================
-- perpca_stats(float8[]) has an internal state, which Citus cannot move:
-- over a distributed table it aggregates on the workers only when grouping by
-- the distribution column.  These two have the state type perpca_stats, so
-- Citus runs them on the workers for any grouping (worker_partial_agg) and
-- combines one state per group and shard on the coordinator
-- (coord_combine_agg).  The work per row is perpca_stats(float8[])'s.

CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[])
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[], text)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_accum_nulls' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_internal.stats_dist_final(@extschema@.perpca_stats)
    RETURNS @extschema@.perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_stats_dist_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[]) IS
    'internal: transition function of perpca_stats_distributed(float8[]) (perpca_stats(float8[])''s, on a perpca_stats-typed state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_accum(@extschema@.perpca_stats, float8[], text) IS
    'internal: transition function of perpca_stats_distributed(float8[], text) (perpca_stats(float8[], text)''s, on a perpca_stats-typed state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats) IS
    'internal: combine function of perpca_stats_distributed and perpca_merge_distributed, and the transition of the latter (merges a perpca_stats value into the state)';
COMMENT ON FUNCTION perpca_internal.stats_dist_final(@extschema@.perpca_stats) IS
    'internal: final function of perpca_stats_distributed and perpca_merge_distributed (the state as a plain perpca_stats value)';

CREATE OR REPLACE AGGREGATE perpca_stats_distributed(float8[]) (
    SFUNC = perpca_internal.stats_dist_accum,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,                 -- as perpca_stats(float8[])
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats_distributed(float8[]) IS
    'perpca_stats(float8[]) with a perpca_stats transition state, for Citus: aggregates on the workers for any GROUP BY (one state per group and shard reaches the coordinator); the same bits as perpca_stats(float8[]) for the same rows in the same order';

CREATE OR REPLACE AGGREGATE perpca_stats_distributed(float8[], text) (
    SFUNC = perpca_internal.stats_dist_accum,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_stats_distributed(float8[], text) IS
    'perpca_stats(float8[], text) with a perpca_stats transition state, for Citus: with nulls ''skip'' rows with a NULL, NaN or infinite element are left out and counted, on the workers and through the coordinator''s combine';

CREATE OR REPLACE AGGREGATE perpca_merge_distributed(@extschema@.perpca_stats) (
    SFUNC = perpca_internal.stats_dist_combine,
    STYPE = @extschema@.perpca_stats,
    FINALFUNC = perpca_internal.stats_dist_final,
    COMBINEFUNC = perpca_internal.stats_dist_combine,
    SSPACE = 16384,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_merge_distributed(@extschema@.perpca_stats) IS
    'perpca_merge(perpca_stats) with a perpca_stats transition state, for Citus: merges on the workers for any GROUP BY, then on the coordinator';
-- ==========================================================================
-- Who may execute perpca's internal functions (perpca_internal.*): decided
-- here, in one place, after every part has created its functions.
--
-- Default deny: EXECUTE on every function of perpca_internal is revoked from
-- PUBLIC, then granted back to PUBLIC for the functions below only, each for
-- a stated reason.  A new internal function is therefore not executable by
-- PUBLIC until it is listed here (and in the allow list of
-- test/t/077_internal_execute.pl, which fails on any difference, and in the
-- table of docs/security.md).  A function may be listed only if
--   (a) it is pure computation on its arguments, or
--   (b) it runs only the caller's own SQL text, as the caller, or touches
--       only the caller's own (temporary) objects or the catalog, or
--   (c) it touches a model, and then checks for itself, before it reads
--       anything, that the model is plain tables of one owner whose
--       privileges the current user has (perpca_internal.model_lock,
--       model_owner + model_check_owner) or the role's (run_as),
-- and it is reached from a path that runs as the caller (perpca_train,
-- perpca_refresh and perpca_personalize run their PL/pgSQL bodies through
-- SPI as the caller) or as a model's owner (an ordinary role) inside the
-- security-restricted operation of run_as and personalize.c; or by Citus
-- or the shards of a federated fit, which check EXECUTE as the caller.
-- The extension's schema keeps PostgreSQL's default (EXECUTE for PUBLIC),
-- except perpca_fit_federated (60_federated.sql).
-- ==========================================================================

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA perpca_internal FROM PUBLIC;

-- (a) Pure computation on the arguments, called by the write path's SQL as
-- the writer (model_fill_clients, model_personalize).
GRANT EXECUTE ON FUNCTION
    perpca_internal.scale_stats(@extschema@.perpca_stats, pg_catalog.float8[]),
    perpca_internal.scale_vector(pg_catalog.float8[], pg_catalog.float8[]),
    perpca_internal.client_monitor_stats(@extschema@.perpca_stats, pg_catalog.float8[], pg_catalog.float8[])
    TO PUBLIC;

-- (a) Support functions of perpca_stats_distributed and
-- perpca_merge_distributed: Citus (worker_partial_agg, coord_combine_agg)
-- checks EXECUTE on them as the caller, as nodeAgg.c does for the owner.
GRANT EXECUTE ON FUNCTION
    perpca_internal.stats_dist_accum(@extschema@.perpca_stats, pg_catalog.float8[]),
    perpca_internal.stats_dist_accum(@extschema@.perpca_stats, pg_catalog.float8[], pg_catalog.text),
    perpca_internal.stats_dist_combine(@extschema@.perpca_stats, @extschema@.perpca_stats),
    perpca_internal.stats_dist_final(@extschema@.perpca_stats)
    TO PUBLIC;

-- (b) The fit of a train or refresh: runs the caller's query text (and its
-- warm-start query) as the caller; called by model_store as the writer.
GRANT EXECUTE ON FUNCTION perpca_internal.fit(pg_catalog.text, pg_catalog.jsonb) TO PUBLIC;

-- (b) The shard side of perpca_fit_federated, called over libpq by the role
-- of each connection string: runs that role's query as that role and keeps
-- its clients in that session only (by fit_id).
GRANT EXECUTE ON FUNCTION
    perpca_internal.shard_open(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.int4,
                               pg_catalog.text, pg_catalog.int8),
    perpca_internal.shard_scale(pg_catalog.text, pg_catalog.float8[]),
    perpca_internal.shard_init(pg_catalog.text, pg_catalog.float8[], pg_catalog.float8[]),
    perpca_internal.shard_basis(pg_catalog.text, pg_catalog.bool, pg_catalog.bool),
    perpca_internal.shard_apply(pg_catalog.text, pg_catalog.float8[]),
    perpca_internal.shard_start_local(pg_catalog.text, pg_catalog.float8[], pg_catalog.text),
    perpca_internal.shard_round(pg_catalog.text, pg_catalog.float8[], pg_catalog.float8, pg_catalog.text,
                                pg_catalog.text, pg_catalog.bool),
    perpca_internal.shard_evaluate(pg_catalog.text, pg_catalog.float8[], pg_catalog.float8),
    perpca_internal.shard_finish(pg_catalog.text, pg_catalog.float8[], pg_catalog.bool),
    perpca_internal.shard_result(pg_catalog.text),
    perpca_internal.shard_close(pg_catalog.text)
    TO PUBLIC;

-- (b) The stage of a train or refresh: temporary tables of the caller's
-- session (readable by the model's owner), filled by the caller's query as
-- the current user; new tables created as the caller (CREATE on the schema
-- needed); catalog reads; the plan (not a run) of the caller's query, as the
-- caller (query_shape: its column names and types, as the catalog shows them).
GRANT EXECUTE ON FUNCTION
    perpca_internal.stage_create(pg_catalog.regrole),
    perpca_internal.stage_fill(pg_catalog.text, pg_catalog.text),
    perpca_internal.stage_start(pg_catalog.text, pg_catalog.regrole, pg_catalog.text),
    perpca_internal.stage_digest(pg_catalog.jsonb, pg_catalog.text[]),
    perpca_internal.query_shape(pg_catalog.text, pg_catalog.text),
    perpca_internal.model_create(pg_catalog.text, pg_catalog.text),
    perpca_internal.history_create(pg_catalog.text, pg_catalog.text),
    perpca_internal.model_owner(pg_catalog.text, pg_catalog.text),
    perpca_internal.model_check_owner(pg_catalog.text, pg_catalog.regrole)
    TO PUBLIC;

-- (c) The bodies of perpca_train and perpca_refresh (run through SPI as the
-- caller: model_owner + model_check_owner before anything else touches an
-- existing model), the switch to the owner (run_as: the caller must have
-- the role's privileges), the model lock (write and drop check the owner's
-- privileges before any lock; read is refused from SQL), and what runs as
-- the owner (each starts with model_lock(..., 'write')).
GRANT EXECUTE ON FUNCTION
    perpca_internal.train(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb,
                          pg_catalog.bool, pg_catalog.text, pg_catalog.text[]),
    perpca_internal.refresh(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool, pg_catalog.text),
    perpca_internal.run_as(pg_catalog.regrole, pg_catalog.text, "any"),
    perpca_internal.model_lock(pg_catalog.text, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.text),
    perpca_internal.model_refresh(pg_catalog.text, pg_catalog.text, pg_catalog.bool),
    perpca_internal.model_store(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb,
                                pg_catalog.text, pg_catalog.text[]),
    perpca_internal.history_append(pg_catalog.text, pg_catalog.text, pg_catalog.jsonb),
    perpca_internal.model_fill_clients(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text,
                                       pg_catalog.float8[], pg_catalog.text, pg_catalog.text,
                                       @extschema@.perpca_stats, pg_catalog.float8[]),
    perpca_internal.model_personalize(pg_catalog.text, pg_catalog.text, pg_catalog.text, @extschema@.perpca_stats,
                                      pg_catalog.int4, pg_catalog.float8[])
    TO PUBLIC;

-- Not granted (superusers and roles granted EXECUTE only): functions no
-- path of a plain caller reaches -- model_name_parts, fit_options,
-- evaluate_stats, query_columns, stats_query (C calls their code
-- directly) and f_upper_quantile (for the tests).
