-- ==========================================================================
-- Fit: global and local components across the clients of a query (perpca_fit)
-- ==========================================================================

-- Every option may be NULL, meaning its default (so wrappers pass theirs through).
CREATE OR REPLACE FUNCTION perpca_fit(
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
    scale text DEFAULT 'none',
    hops int DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text, text, text, int) IS
    'Personalized PCA: global components shared by all clients (rows of the query) and local components per client; solver ''lbfgs'' (default: best-response local components and L-BFGS over the global ones) or ''paper'' (the paper''s Algorithm 2, with update and retraction); init ''best'' keeps the best of several starts; init => ''given'' starts from the components returned by the start query (client, kind, component, pc); scale ''standard'' divides each feature by its pooled standard deviation (perpca_scale_factors) before the fit, so components and variances are in standardized units (default ''none''); hops (lbfgs, init ''best'', default 4): after the starts, the weakest global direction of the best optimum so far is handed to another candidate direction and the fit re-converged, until this many hops in a row find no better optimum (0: starts only; more: more time for more certainty of the best optimum); a NULL option means its default';

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

-- The options of a fit, checked before a caller runs its (possibly long)
-- input query: perpca_fit parses every option before it reads any client, so
-- a fit of no clients fails on a bad option first, else with "no clients".
-- It runs in the caller's search_path, as the start query will.
CREATE OR REPLACE FUNCTION perpca_internal.check_fit_options(
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
