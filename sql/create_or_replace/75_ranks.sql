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
    'fits PerPCA for every pair of global_ranks x local_ranks (NULL: 0 .. 3, at most d - 2, local ranks at most one less than the fewest training rows of a client) on the query''s training rows and evaluates each on held-out rows (the heldout query, or a repeatable split of the query''s rows (client, x, key) by a hash of key, holdout of them held out); per pair the training objective, train and held-out error (equal weights; _samples per row), the held-out explained ratio, theta_est, rounds and seconds.  Pairs with n_global + n_local >= d are left out (note says so): they explain held-out rows exactly.  recommended marks one pair: by the error rule (target_explained_ratio NULL) the smallest n_global + n_local whose best pair no larger pair improves on by more than noise would (going from k to k'' components removes (k'' - k)/(d - k) of the held-out error, plus within x the held-out mean total variance), or by the share rule the smallest whose held-out explained ratio reaches target_explained_ratio; of that size, the pair that explains held-out rows best.  min_theta only annotates: a pair with theta_est below it may be recommended, and its note says its local subspaces are alike.  The error rule recommends nothing when no pair explains 1.5 times its share (n_global + n_local) / d of the held-out variance (no low-rank structure).  note says for every pair why it was or was not recommended.  While the recommended pair sits on an edge of the grid (the largest or smallest global or local rank of the grid) beyond which a pair can be measured, the grid is widened one rank on that side and the new pairs fitted, at most 12 times; a side given as one rank is not widened; the added pairs'' notes say "added when the grid was widened (widening k)".  When the answer still sits on such an edge its note says so, and a NOTICE says which way to move the grid.  verbose => true: a NOTICE per pair as it is fitted (else at DEBUG1), and each fit''s own progress.  Rows of any form the row reader takes (a numeric array, vector or halfvec, numeric feature columns) or statistics; missing => ''skip'' leaves out rows with gaps (one NOTICE per query says so; skipped and heldout_skipped count them in the training and held-out rows).  Fit options pass to the fits as perpca_fit''s (NULL = its default)';
