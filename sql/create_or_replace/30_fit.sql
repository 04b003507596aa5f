-- ==========================================================================
-- Fit: global and local components across the clients of a query (perpca_fit)
-- ==========================================================================

-- Options: named arguments with DEFAULT NULL, written by make from the option
-- table of src/fit_options.c (sql/options.awk); the C parser reads them by
-- name and holds every default, so NULL means "the default".
CREATE OR REPLACE FUNCTION perpca_fit(
    query text,
    n_global int,
    n_local int,
    @OPTIONS(fit): rounds tolerance step update retraction init seed center weights method verbose
        adaptive start solver scale hops missing@)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION perpca_fit(@ARGTYPES(fit)@) IS
    'Personalized PCA: global components shared by all clients of the query (statistics, or rows aggregated per client) and local components per client; fit options (solver, init, center, weights, method, scale, missing, hops, ...); NULL means the default (README: Reference, Fitting)';

CREATE OR REPLACE FUNCTION perpca_last_fit()
RETURNS TABLE (method text, rounds_run int, converged boolean, objective float8,
               kkt_residual float8, theta_est float8, step float8,
               n_clients int, d int, seconds float8,
               solver text, start text, gradient_norm float8, options jsonb,
               rows_skipped bigint, stopped text, sketch_bound float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit() IS
    'diagnostics of this session''s last perpca_fit (train and refresh too; no row before the first): rounds, convergence, objective, KKT residual, theta_est, solver, start kept, gradient norm, effective options, rows skipped, why it stopped, sketch_bound (README: Reference, Fitting)';

CREATE OR REPLACE FUNCTION perpca_last_fit_clients()
RETURNS TABLE (client text, n bigint, sketch_rows int, sketch_delta float8, components int,
               sketch_bound float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_clients() IS
    'one row per client of this session''s last perpca_fit (train and refresh too): its rows n, its sketch''s rows and delta (0 for exact statistics), the components its objective counts, and its share of perpca_last_fit().sketch_bound (README: Reference, Fitting)';

CREATE OR REPLACE FUNCTION perpca_last_fit_starts()
RETURNS TABLE (start text, objective float8, rounds_run int, converged boolean, chosen boolean,
               basin int, ended text)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_starts() IS
    'one row per start and hop of the last perpca_fit or perpca_fit_federated in this session: its objective, rounds, convergence, whether it was kept, its basin, and how it ended (README: Reference, Fitting)';

CREATE OR REPLACE FUNCTION perpca_last_fit_rounds()
RETURNS TABLE (start text, round int, objective float8, gradient_norm float8,
               kkt_residual float8, step float8, products bigint, inner_iterations bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit_rounds() IS
    'one row per round of the last perpca_fit or perpca_fit_federated in this session: objective, gradient norm (lbfgs), KKT residual (paper), step, and the round''s work (operator products, eigensolver iterations), for convergence plots (README: Reference, Fitting)';

-- Options as one value: what the write path and other internal callers pass.
CREATE OR REPLACE FUNCTION perpca_internal.fit_options(options jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'perpca_fit_options' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.fit_options(jsonb) IS
    'internal: the effective fit options (defaults filled in, ranks included) of a jsonb object of options named as perpca_fit''s arguments (NULL or absent: the default; other keys ignored), or perpca_fit''s error (22023 naming it) for an invalid one';
