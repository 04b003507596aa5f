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
    @OPTIONS: rounds tolerance step update retraction init seed center weights adaptive solver
        scale@,
    target_explained_ratio float8 DEFAULT NULL,
    @OPTIONS(ranks): hops missing verbose@)
RETURNS TABLE (n_global int, n_local int, objective float8, train_error float8,
               heldout_error float8, heldout_error_samples float8, heldout_explained_ratio float8,
               theta_est float8, rounds_run int, converged boolean, seconds float8, recommended boolean,
               note text, skipped bigint, heldout_skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_choose_ranks(@ARGTYPES(ranks)@) IS
    'fits Personalized PCA for every pair of global_ranks x local_ranks on training rows and scores each on held-out rows (the heldout query or a repeatable split); recommended marks one pair (error or share rule) and note says why (README: Reference, Evaluation and choosing the ranks)';
