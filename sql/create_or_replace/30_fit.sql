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
