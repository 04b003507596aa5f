-- perpca: Personalized PCA in SQL (created once: what an upgrade from 0.2.0 already has)
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

-- Models: the version sequence and the fit-row type (created once)

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
    'merges perpca_stats values as if their rows had been aggregated together (counts exactly; means and co-moments up to rounding); once a sketch is among them the result is a sketch with the smallest ell met: thin values enter as their rows, dense ones as their top ell eigenpairs shrunk as Frequent Directions shrinks (delta grows by the (ell+1)-th eigenvalue)';

-- Sketched statistics (Frequent Directions; sketch.c, sketch_agg.c).
CREATE OR REPLACE FUNCTION perpca_sketch_accum(internal, float8[], int) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_accum_nulls(internal, float8[], int, text) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_serialize(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_deserialize(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_sketch_final(internal) RETURNS perpca_stats
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_sketch_accum(internal, float8[], int) IS 'transition function of perpca_sketch(float8[], int)';
COMMENT ON FUNCTION perpca_sketch_accum_nulls(internal, float8[], int, text) IS 'transition function of perpca_sketch(float8[], int, text)';
COMMENT ON FUNCTION perpca_sketch_combine(internal, internal) IS 'combine function of the perpca_sketch aggregates (merges two Frequent Directions sketches)';
COMMENT ON FUNCTION perpca_sketch_serialize(internal) IS 'serialize function of the perpca_sketch aggregates';
COMMENT ON FUNCTION perpca_sketch_deserialize(bytea, internal) IS 'deserialize function of the perpca_sketch aggregates';
COMMENT ON FUNCTION perpca_sketch_final(internal) IS 'final function of the perpca_sketch aggregates';

CREATE OR REPLACE AGGREGATE perpca_sketch(float8[], int) (
    SFUNC = perpca_sketch_accum,
    STYPE = internal,
    FINALFUNC = perpca_sketch_final,
    COMBINEFUNC = perpca_sketch_combine,
    SERIALFUNC = perpca_sketch_serialize,
    DESERIALFUNC = perpca_sketch_deserialize,
    -- bytes a group's state holds at most, for the planner's sizing of hash
    -- aggregates: its buffer of 2 ell rows at ell = 64, d = 1024 (a small
    -- group's buffer is smaller; it grows by doubling)
    SSPACE = 1048576,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_sketch(float8[], int) IS
    'perpca_sketch(x, ell): sketched statistics of the (non-NULL) rows of a group, a perpca_stats value: exact count, mean and total variance, and a Frequent-Directions sketch B (at most ell rows) of the centred rows with 0 <= M2 - B''B <= delta I; exact (delta = 0) for a group of at most ell + 1 rows; d up to 16000; a NULL, NaN or infinite element is an error';
CREATE OR REPLACE AGGREGATE perpca_sketch(float8[], int, text) (
    SFUNC = perpca_sketch_accum_nulls,
    STYPE = internal,
    FINALFUNC = perpca_sketch_final,
    COMBINEFUNC = perpca_sketch_combine,
    SERIALFUNC = perpca_sketch_serialize,
    DESERIALFUNC = perpca_sketch_deserialize,
    SSPACE = 1048576,               -- as perpca_sketch(float8[], int)
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE perpca_sketch(float8[], int, text) IS
    'perpca_sketch(x, ell, nulls): with nulls ''skip'' the rows with a NULL, NaN or infinite element are left out and counted (perpca_skipped); with ''error'' such a row is an error, as in perpca_sketch(x, ell)';

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
    'how the value stores its co-moments: ''thin'' (the centred rows, while n <= d/2), ''dense'' (packed d x d matrix) or ''sketch'' (perpca_sketch: ell rows B and delta with 0 <= M2 - B''B <= delta I)';
COMMENT ON FUNCTION perpca_count(perpca_stats) IS 'number of rows n summarized by the statistics';
COMMENT ON FUNCTION perpca_skipped(perpca_stats) IS
    'number of rows left out of the statistics for a NULL, NaN or infinite element (perpca_stats(x, ''skip'')), summed by perpca_merge; 0 for values stored before perpca 0.3.0';
COMMENT ON FUNCTION perpca_dim(perpca_stats) IS 'dimension d of the rows';
COMMENT ON FUNCTION perpca_mean(perpca_stats) IS 'mean vector (d values); NULL when n = 0';
COMMENT ON FUNCTION perpca_covariance(perpca_stats, boolean) IS
    'd x d covariance scaled by 1/n; with centered => false the uncentered second moment (1/n) sum x x^T; NULL when n = 0.  For a sketch, the sketch''s estimate B''B/n (below the covariance by at most delta/n in every direction); an error for a sketch of d > 4096';


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
    hops int DEFAULT NULL,
    missing text DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text, int, text) IS
    'Personalized PCA: global components shared by all clients of the query (statistics (client, perpca_stats[, n_local]), or rows of any form the row reader takes -- a numeric array, a vector or halfvec, numeric feature columns -- aggregated per client; missing => ''error'' (default) or ''skip'' for rows with NULL, NaN or infinite elements, ''observed'' refused; a client without rows is left out with a NOTICE) and local components per client; solver ''lbfgs'' (default: best-response local components and L-BFGS over the global ones) or ''paper'' (the paper''s Algorithm 2 and its step options); init ''best'' keeps the best of several starts; init => ''given'' starts from the components returned by the start query (client, kind, component, pc); scale ''standard'' divides each feature by its pooled standard deviation (perpca_scale_factors) before the fit, so components and variances are in standardized units (default ''none''); hops (lbfgs, init ''best'', default 4): after the starts, the two weakest global directions of the best optimum so far are replaced by random ones and the fit converged again, until this many hops in a row find no better optimum (0: the starts only; more: more certainty for more time); a NULL or omitted option means its default (README: Reference)';

CREATE OR REPLACE FUNCTION perpca_last_fit()
RETURNS TABLE (method text, rounds_run int, converged boolean, objective float8,
               kkt_residual float8, theta_est float8, step float8,
               n_clients int, d int, seconds float8,
               solver text, start text, gradient_norm float8, options jsonb,
               rows_skipped bigint, stopped text, sketch_bound float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit() IS
    'diagnostics of the last perpca_fit call in this session (no row before the first): rounds of all starts (0 for the closed-form methods, which always converge), objective sum_i N w_i f_i, KKT residual, theta_est, final step (paper solver), the solver, the winning start, the Riemannian gradient norm, the effective options (defaults filled in) as jsonb, and the rows the clients'' statistics left out for missing values (perpca_stats(x, ''skip''); 0 for a federated fit), and why the fit stopped, in words (the search''s stopping rule and how the chosen run ended; NULL for the closed-form methods), and sketch_bound: for any components, the objective on the exact statistics minus the objective on the sketched ones lies between 0 and this, N / sum_i w_i * sum_i w_i (n_global + n_local_i) delta_i / (2 n_i) (0 for exact inputs; per client in perpca_last_fit_clients)';

CREATE OR REPLACE FUNCTION perpca_last_fit_clients()
RETURNS TABLE (client text, n bigint, sketch_rows int, sketch_delta float8, components int,
               sketch_bound float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_clients() IS
    'one row per client of the last perpca_fit in this session (no rows before the first; the clients of perpca_train and perpca_refresh too): its rows n, its sketch''s rows (of B, at most ell) and delta (0 <= M2 - B''B <= delta I; both 0 for exact statistics), the components its objective counts (n_global + its n_local), and its share of perpca_last_fit().sketch_bound, components * delta / (2 n), in the units of f_i = 1/2 tr(W_i''S_iW_i): f_i on the exact statistics minus f_i on the sketch lies between 0 and this for any components';

CREATE OR REPLACE FUNCTION perpca_last_fit_starts()
RETURNS TABLE (start text, objective float8, rounds_run int, converged boolean, chosen boolean,
               basin int, ended text)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_starts() IS
    'one row per start of the last perpca_fit or perpca_fit_federated in this session: its objective, rounds and convergence, whether it was kept, its basin (the number of the row whose run first found the optimum it ended at; NULL: none known) and how it ended (converged, screened, known basin, budget, round limit, stalled, objective converged)';

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
-- Models: a fit stored as plain tables <model>_components, <model>_clients,
-- <model>_info and <model>_history, and the view <model>_source holding its
-- query, bound once.
--
-- Everything that writes a model is C: perpca_train and perpca_refresh
-- (src/model_write.c), perpca_personalize (src/personalize.c) and
-- perpca_drop (src/model_lock.c) lock the model in one order
-- (src/model_lock.c), write it as its owner inside a security-restricted
-- operation (src/run_as_owner.c) through one module (src/model_store.c),
-- and make its tables from the one declaration of their columns
-- (src/model_schema.c).  Nothing here is PL/pgSQL: this file only
-- declares.
-- ==========================================================================

-- How model names are written and read: the naming rule for error hints,
-- and the parts of a name (src/model_read.c, one reader for C and SQL).
CREATE OR REPLACE FUNCTION perpca_internal.model_name_parts(model text) RETURNS text[]
    AS 'MODULE_PATHNAME', 'perpca_model_name_parts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.model_name_parts(text) IS
    'internal: {[schema,] base} of a model name read as SQL identifiers, or the improper-name error with the naming rule';

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

-- ==========================================================================
-- Model administration: locking a model's
-- tables (the lock itself is src/model_lock.c: one order for every function
-- that touches a model), dropping a model and personalizing a client.
--
-- Every function here is C; a model name is resolved by the C code with the
-- caller's search_path before anything else runs.  Ownership: a model that
-- belongs to another role is written as that role, inside a
-- security-restricted operation (src/run_as_owner.c).
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
-- display (default: model).  perpca's own paths lock in C; this SQL form is
-- not executable by PUBLIC (95_privileges.sql): for superusers and the tests.
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

-- Both forms are C (src/personalize.c): the model is locked (its owner's
-- privileges checked), its key type, dimension and scale read with the
-- checked C reader, and the client's rows are computed and written as the
-- owner, restricted, by the one module that writes models (src/model_store.c).
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

-- The clients of a query of rows (any form of the row reader) or statistics,
-- read as the caller under missing, each personalized as above (0.4.0).  A
-- name of its own: an overload of perpca_personalize would make a call whose
-- statistics are an untyped literal, perpca_personalize('m', 'c', '...'),
-- ambiguous (perpca_stats or int), which 0.3.0 resolved.
CREATE OR REPLACE FUNCTION perpca_personalize_clients(model text, query text, n_local int DEFAULT NULL,
                                                      missing text DEFAULT 'error')
RETURNS TABLE (client text, n bigint, skipped bigint, local_components int)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_personalize_clients(text, text, int, text) IS
    'perpca_personalize for every client of a query of rows (any form of the row reader: a numeric array, a vector or halfvec, numeric feature columns) or statistics (client, perpca_stats), run as the caller: per client its rows n, the rows left out for missing values (skipped; missing => ''skip'', else a NULL, NaN or infinite element is an error; ''observed'' is refused) and the local components stored (a client with no rows left stores nothing: n 0, named in a NOTICE); n_local as in the statistics form';

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
    'scores of a row x of a client: n_global global scores then the client''s local scores, after centering as the fit did; a client the model has never seen gets the global scores only (unknown => ''global'', one NOTICE per statement) or an error (unknown => ''error'').  missing => ''observed'': a row with NULL, NaN or infinite elements gets the posterior mean of its scores given the observed coordinates under the model''s probabilistic PCA form (every row is then scored so, also a complete one), NULL when fewer coordinates are observed than there are scores; missing => ''skip'': such a row gets NULL (one NOTICE per statement counts them); missing => ''error'' (default): such an element is an error';
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
                                                      seed bigint DEFAULT 0, missing text DEFAULT 'observed')
RETURNS TABLE (client text, n bigint, hidden bigint, error float8, mean_error float8, ratio float8,
               skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_imputation(text, text, float8, bigint, text) IS
    'masked evaluation: the query returns rows (client, x) of any form of the row reader (a numeric array, a vector or halfvec, numeric feature columns); missing => ''observed'' (default: a row''s gaps stay gaps), ''skip'' (a row with a gap is left out, counted in skipped) or ''error''; each observed entry is hidden with probability share (seeded by seed and the row, so the same rows hide the same entries in any order), filled by perpca_model_impute, and scored per client: rows n, hidden entries, error (mean squared error of the model''s filling on the hidden entries, in the data''s units), mean_error (that of filling with the client''s centre, its mean under center ''client'') and ratio = error / mean_error';
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
                                                missing text DEFAULT 'error',
                                                OUT t2 float8, OUT t2_limit float8, OUT q float8,
                                                OUT q_limit float8, OUT out_of_control boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_monitor(model text, client anyelement, x float8[], alpha float8 DEFAULT 0.01,
                                                missing text DEFAULT 'error',
                                                OUT t2 float8, OUT t2_limit float8, OUT q float8,
                                                OUT q_limit float8, OUT out_of_control boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_monitor(text, text, float8[], float8, text) IS
    'multivariate process control of a row x of a client against the client''s own training distribution: Hotelling''s T^2 of its scores (about the client''s mean, with the scores'' stored covariance) and Q = ||residual||^2 (the squared prediction error), each with its limit (T^2: the F-distribution limit for a new observation, k (n^2 - 1) / (n (n - k)) F(k, n - k); Q: Jackson and Mudholkar from the stored residual spectrum), each at level 1 - sqrt(1 - alpha) so that out_of_control (either above its limit) has false-alarm rate alpha for Gaussian rows; a client the model has never seen gets Q against the global components, NULL T^2 and limits, and the unknown-client NOTICE; missing => ''error'' (a NULL, NaN or infinite element is an error naming it and the client) or ''skip'' (such a row gives NULL, counted in one NOTICE per statement); ''observed'' is refused (the limits are those of complete rows)';
COMMENT ON FUNCTION perpca_model_monitor(text, anyelement, float8[], float8, text) IS
    'perpca_model_monitor with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';

CREATE OR REPLACE FUNCTION perpca_clusters(model text, k int DEFAULT NULL)
RETURNS TABLE (client text, cluster int, distance_to_center float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_clusters(text, int) IS
    'spectral clustering of the clients by their local subspaces, as the paper does: affinity 1 - rho/2 (rho as perpca_similarity), the top k eigenvectors of D^-1/2 A D^-1/2 divided by sqrt(D), k-means with a fixed seed (the same clusters on every call), clusters numbered by their first client (bytewise); distance_to_center is the client''s distance to its cluster''s centre in that embedding; k NULL: the largest eigengap among k = 2 .. 20, named in a NOTICE, or one cluster when that split is no cluster structure (mu_k <= 0 or (1 - mu_k+1) / (1 - mu_k) < 1.3), with a NOTICE saying so';

-- A model's history (src/model_history.c reads <model>_history, written by
-- perpca_train and perpca_refresh through perpca_internal.history_append).
CREATE OR REPLACE FUNCTION perpca_model_history(model text)
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean,
               sketch_bound float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_history(text) IS
    'one row per perpca_train (kind ''train'') and perpca_refresh (kind ''refresh'') of the model, in order (entry): the model version it left, when it ended, clients and rows fitted, rounds run, convergence, objective, wall-clock seconds, the role that ran it, a warning (not converged; ''unchanged: ...''; ''failed: SQLSTATE: message''), outcome ''fitted'', ''unchanged'' (nothing fitted) or ''failed'' (the old model stayed), the starts of the fit with their rounds, and for a refresh the clients added and dropped and whether it started warm, and the bound the clients'' sketches put on the objective (perpca_last_fit().sketch_bound: 0 for exact statistics; NULL for rows written before 0.4.0 and failed refreshes); needs SELECT on <model>_info and <model>_history; a model stored before 0.3.0 has no history until its first refresh';
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
-- refresh.  perpca_refresh is C (src/model_write.c), from the call to the
-- last row: as the owner through src/run_as_owner.c, writing through
-- src/model_store.c.
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_refresh(model text, warm boolean DEFAULT true, wait boolean DEFAULT false,
                                          on_error text DEFAULT 'raise')
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean,
               sketch_bound float8)
    AS 'MODULE_PATHNAME', 'perpca_refresh' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_refresh(text, boolean, boolean, text) IS
    'refits a stored model from its source query (bound when it was trained, in the view <model>_source, which it reads; a model stored before 0.4.0 binds its recorded text there at its first refresh) and its recorded options and swaps the result in atomically, and returns the row it appends to the model''s history (perpca_model_history); runs as the model''s owner inside a security-restricted operation (like REFRESH MATERIALIZED VIEW) with search_path = pg_catalog, pg_temp, so it refreshes the same from any session; only the owner or a member of the owning role may refresh (insufficient_privilege otherwise); warm => true starts from the stored components and fits nothing when the statistics, options and feature names are bit for bit those of the stored model (outcome ''unchanged'', rounds_run 0, a DEBUG1 message: the history row is the record); warm => false always refits from scratch; clients new in the query get local components, clients gone from it (including personalized ones) are dropped; a second refresh of the same model fails at once (lock_not_available) unless wait => true; on_error ''raise'' (default): a failed refit is an error; ''record'': whatever the refit raises is caught (a 57014 of the owner''s code too; not a cancel or timeout of the caller''s statement), the old model stays, a WARNING is raised and the row (outcome ''failed'', converged false, warning ''failed: SQLSTATE: message'') is appended and returned';
-- ==========================================================================
-- Federated: PerPCA rounds run where the data live.  The coordinator
-- (perpca_fit_federated) keeps one libpq connection per shard; each round
-- sends U out and gets one weighted sum of the shard's clients' U_i back.
-- The perpca_internal.shard_* functions are the shard side of that protocol.
-- Sums come back exact, as the layers of an expansion (a few float8 per
-- entry that add up exactly to the shard's sum; sums = the expansion of
-- weight, objective and gradient_v, layers x 3): the coordinator's total is
-- the same whatever the grouping of the clients into shards.
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_internal.shard_open(fit_id text, query text, n_global int, n_local int,
                                  weights text, seed bigint, missing text DEFAULT NULL,
                                  OUT n_clients int, OUT dim int, OUT n_rows bigint,
                                  OUT mean_sum float8[], OUT stats_bytes bigint, OUT keys text[],
                                  OUT rows_skipped bigint)
    AS 'MODULE_PATHNAME', 'perpca_shard_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_open(text, text, int, int, text, bigint, text) IS
    'federated fit, shard side: runs the query (client, perpca_stats [, local rank]) or rows of any form the row reader takes (aggregated per client under missing) here and keeps its clients in this session under fit_id; returns their count, dimension, rows, sum of n_i mean_i (1 x d), the bytes of their statistics, their keys and the rows left out for missing values';

CREATE OR REPLACE FUNCTION perpca_internal.shard_scale(fit_id text, mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_scale' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_scale(text, float8[]) IS
    'federated fit, shard side, scale ''standard'': sum over this shard''s clients of M2_i,jj + n_i (mean_i,j - mean_j)^2 about the pooled mean (1 x d each), from which the coordinator takes the pooled standard deviations';

CREATE OR REPLACE FUNCTION perpca_internal.shard_init(fit_id text, center float8[], scale_factors float8[] DEFAULT NULL,
                                  OUT weight float8, OUT lambda_max float8)
    AS 'MODULE_PATHNAME', 'perpca_shard_init' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_init(text, float8[], float8[]) IS
    'federated fit, shard side: divides the clients'' statistics by scale_factors (1 x d; NULL: unscaled), then builds each client''s S_i about center (1 x d; NULL: its own mean); returns the sum of the client weights and max lambda_max(S_i)';

CREATE OR REPLACE FUNCTION perpca_internal.shard_basis(fit_id text, qu boolean, exact boolean,
                                   OUT basis float8[], OUT keys text[], OUT columns int[])
    AS 'MODULE_PATHNAME', 'perpca_shard_basis' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_basis(text, boolean, boolean) IS
    'federated fit, shard side: the clients'' stacked local PCs (d x q, scaled for qu), one block of columns per client in the byte order of the keys, with the keys and the blocks'' widths, for the disPCA and Qu starts';

CREATE OR REPLACE FUNCTION perpca_internal.shard_apply(fit_id text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_shard_apply' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_apply(text, float8[]) IS
    'federated fit, shard side: sum_i w_i S_i X for a d x q matrix X (the pooled start), as the layers of its exact expansion ((layers x d) x q)';

CREATE OR REPLACE FUNCTION perpca_internal.shard_start_local(fit_id text, u float8[], init text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'perpca_shard_start_local' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_start_local(text, float8[], text) IS
    'federated fit, shard side: the paper solver''s start of every client''s local components given U';

CREATE OR REPLACE FUNCTION perpca_internal.shard_round(fit_id text, u float8[], step float8, update text,
                                   retraction text, want_kkt boolean,
                                   OUT sums float8[], OUT u_sum float8[], OUT g_sum float8[],
                                   OUT change float8, OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_round' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_round(text, float8[], float8, text, text, boolean) IS
    'federated fit, shard side: one round of the paper''s client steps against U; weighted sums over the clients';

CREATE OR REPLACE FUNCTION perpca_internal.shard_evaluate(fit_id text, u float8[], tol float8,
                                   OUT sums float8[], OUT u_sum float8[], OUT g_sum float8[],
                                   OUT change float8, OUT gram float8[], OUT exact int)
    AS 'MODULE_PATHNAME', 'perpca_shard_evaluate' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.shard_evaluate(text, float8[], float8) IS
    'federated fit, shard side: one L-BFGS evaluation: every client''s best response to U; sum_i w_i f_i and sum_i w_i of the gradient terms';

CREATE OR REPLACE FUNCTION perpca_internal.shard_finish(fit_id text, u float8[], best_response boolean,
                                   OUT sums float8[], OUT u_sum float8[], OUT g_sum float8[],
                                   OUT change float8, OUT gram float8[], OUT exact int)
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
    hops int DEFAULT NULL,
    missing text DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text, int, text) IS
    'Personalized PCA with the clients on shards (libpq connection strings): the query runs on every shard, only U and d x n_global sums per shard cross the network each round; the same fit engine, options and rows as perpca_fit (a client key on two shards is an error); scale ''standard'' takes the pooled standard deviations from one extra round trip of d numbers per shard';
-- It opens connections with the server's credentials: superusers, and roles granted EXECUTE.
REVOKE EXECUTE ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean, text, bigint, text, int, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION perpca_last_federated_fit()
RETURNS TABLE (rounds_run int, converged boolean, objective float8, kkt_residual float8, step float8,
               n_shards int, n_clients int, d int, setup_bytes bigint, round_bytes bigint,
               result_bytes bigint, round_binary_bytes bigint, stats_binary_bytes bigint,
               seconds float8, solver text, theta_est float8, gradient_norm float8, rows_skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION perpca_last_federated_fit() IS
    'diagnostics of the last perpca_fit_federated call in this session, with the bytes it moved (text payload of commands and answers: setup, per round, result; round_binary_bytes = the same round as packed float8), the binary size of the statistics it did not move, and the rows the shards left out for missing values (missing => ''skip'', or their statistics'' own)';
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
    'internal: wraps a query of rows (any form of the row reader) or statistics (client, perpca_stats) into one returning (client text, stats perpca_stats), one row per client; every name in the wrapper is schema-qualified';

-- Both read the model with the checked C reader (src/model_read.c: plain
-- tables of one owner, read from the heap, nothing of the owner's runs) and
-- run the query as the caller (src/evaluate.c).
CREATE OR REPLACE FUNCTION perpca_evaluate(model text, query text, missing text DEFAULT 'error')
RETURNS TABLE (client text, known boolean, n bigint, error float8, total_variance float8,
               global_ratio float8, local_ratio float8, explained_ratio float8, skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate(text, text, text) IS
    'held-out evaluation of a stored model on a query of rows (any form of the row reader: a numeric array, a vector or halfvec, numeric feature columns) or statistics (client, perpca_stats): per client the rows n, the rows left out for missing values (skipped; missing => ''skip'', else a NULL, NaN or infinite element is an error; ''observed'' is refused; a client with no rows left has n 0 and NULL figures, named in a NOTICE), the mean squared reconstruction error (||residual||^2 per row, as perpca_model_error), the second moment about the model''s centre and the shares of it explained by the global part, the local part and both (NULL for a client whose second moment is 0); a client the model has never seen (known false) is evaluated on the global components only; a scaled model (scale ''standard'') divides the rows by its stored scale_factors first, so error, total_variance and the ratios are in standardized units, as perpca_model_error';

CREATE OR REPLACE FUNCTION perpca_evaluate_summary(model text, query text, missing text DEFAULT 'error',
                                        OUT clients int, OUT unseen_clients int, OUT n bigint,
                                        OUT error float8, OUT error_samples float8,
                                        OUT global_ratio float8, OUT global_ratio_samples float8,
                                        OUT local_ratio float8, OUT local_ratio_samples float8,
                                        OUT explained_ratio float8, OUT explained_ratio_samples float8,
                                        OUT skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_summary(text, text, text) IS
    'the whole model on a query of rows or statistics, as perpca_evaluate (missing and skipped as there): error = mean of the clients'' errors (equal weights, the paper''s metric), error_samples = mean over all rows; ratios = explained over total second moment summed over clients (equal weights) or over rows (_samples), NULL when that sum is 0';
-- ==========================================================================
-- Choosing the ranks (perpca_choose_ranks, src/ranks.c): every pair of a grid
-- fitted on training rows and evaluated on held-out rows, in memory (no
-- table is written, so a scan runs on a hot standby too)
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_choose_ranks(
    query text,
    heldout text DEFAULT NULL,
    global_ranks int[] DEFAULT NULL,
    local_ranks int[] DEFAULT NULL,
    within float8 DEFAULT 0.02,
    min_theta float8 DEFAULT 0.05,
    holdout float8 DEFAULT 0.2,
    rounds int DEFAULT NULL, tolerance float8 DEFAULT NULL, step float8 DEFAULT NULL,
    update text DEFAULT NULL, retraction text DEFAULT NULL, init text DEFAULT NULL,
    seed bigint DEFAULT NULL, center text DEFAULT NULL, weights text DEFAULT NULL,
    adaptive boolean DEFAULT NULL, solver text DEFAULT NULL, scale text DEFAULT NULL,
    target_explained_ratio float8 DEFAULT NULL, hops int DEFAULT NULL, missing text DEFAULT NULL,
    verbose boolean DEFAULT NULL)
RETURNS TABLE (n_global int, n_local int, objective float8, train_error float8,
               heldout_error float8, heldout_error_samples float8, heldout_explained_ratio float8,
               theta_est float8, rounds_run int, converged boolean, seconds float8, recommended boolean,
               note text, skipped bigint, heldout_skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_choose_ranks(text, text, int[], int[], float8, float8, float8, int, float8, float8, text, text, text, bigint, text, text, boolean, text, text, float8, int, text, boolean) IS
    'fits PerPCA for every pair of global_ranks x local_ranks (NULL: 0 .. 3, at most d - 2, local ranks at most one less than the fewest training rows of a client) on the query''s training rows and evaluates each on held-out rows (the heldout query, or a repeatable split of the query''s rows (client, x, key) by a hash of key, holdout of them held out); per pair the training objective, train and held-out error (equal weights; _samples per row), the held-out explained ratio, theta_est, rounds and seconds.  Pairs with n_global + n_local >= d are left out (note says so): they explain held-out rows exactly.  recommended marks one pair: by the error rule (target_explained_ratio NULL) the smallest n_global + n_local whose best pair no larger pair improves on by more than noise would (going from k to k'' components removes (k'' - k)/(d - k) of the held-out error, plus within x the held-out mean total variance), or by the share rule the smallest whose held-out explained ratio reaches target_explained_ratio; of that size, the pair that explains held-out rows best.  min_theta only annotates: a pair with theta_est below it may be recommended, and its note says its local subspaces are alike.  The error rule recommends nothing when no pair explains 1.5 times its share (n_global + n_local) / d of the held-out variance (no low-rank structure).  note says for every pair why it was or was not recommended.  While the recommended pair sits on an edge of the grid (the largest or smallest global or local rank of the grid) beyond which a pair can be measured, the grid is widened one rank on that side and the new pairs fitted, at most 12 times; a side given as one rank is not widened; the added pairs'' notes say "added when the grid was widened (widening k)".  When the answer still sits on such an edge its note says so, and a NOTICE says which way to move the grid.  verbose => true: a NOTICE per pair as it is fitted (else at DEBUG1), and each fit''s own progress.  Rows of any form the row reader takes (a numeric array, vector or halfvec, numeric feature columns) or statistics; missing => ''skip'' leaves out rows with gaps (one NOTICE per query says so; skipped and heldout_skipped count them in the training and held-out rows).  Fit options pass to the fits as perpca_fit''s (NULL = its default)';
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
--   (b) it runs only the caller's own SQL text, as the caller,
-- and a path of a plain caller reaches it through SQL: the write path of
-- perpca_train, perpca_refresh and perpca_personalize is C (model_write.c,
-- model_store.c, personalize.c) and calls these few by SQL as the writer
-- (the caller, or a model's owner inside the security-restricted operation
-- of run_as_owner.c); Citus and the shards of a federated fit check EXECUTE
-- as the caller.  Everything else the write path does is C.
-- The extension's schema keeps PostgreSQL's default (EXECUTE for PUBLIC),
-- except perpca_fit_federated (60_federated.sql).
-- ==========================================================================

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA perpca_internal FROM PUBLIC;

-- (a) Pure computation on the arguments, called by the SQL of the write
-- path (src/model_store.c: the clients' figures, a personalized client's
-- components) as the model's owner.
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

-- (b) The fit of a train or refresh: runs the query text it is given (the
-- writer's stage, and its warm-start table) as the current user, as
-- perpca_fit does; called by src/model_store.c as the model's owner.
GRANT EXECUTE ON FUNCTION perpca_internal.fit(pg_catalog.text, pg_catalog.jsonb) TO PUBLIC;

-- (b) The shard side of perpca_fit_federated, called over libpq by the role
-- of each connection string: runs that role's query as that role and keeps
-- its clients in that session only (by fit_id).
GRANT EXECUTE ON FUNCTION
    perpca_internal.shard_open(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.int4,
                               pg_catalog.text, pg_catalog.int8, pg_catalog.text),
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

-- Not granted (superusers and roles granted EXECUTE only): functions no
-- path of a plain caller reaches through SQL -- model_name_parts,
-- fit_options, evaluate_stats, query_columns, stats_query (C calls their
-- code directly), model_lock (perpca's paths lock in C) and
-- f_upper_quantile (for the tests).
