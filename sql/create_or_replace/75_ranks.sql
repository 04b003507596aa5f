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
    'fits Personalized PCA for every pair of global_ranks x local_ranks on training rows and scores each on held-out rows (the heldout query or a repeatable split); recommended marks one pair (error or share rule) and note says why (README: Reference, Evaluation and choosing the ranks)';
