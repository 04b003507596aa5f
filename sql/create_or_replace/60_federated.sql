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
    'internal: federated fit, shard side: reads the query (statistics or rows, under missing) and keeps its clients in this session under fit_id; returns their count, dimension, rows, sum of n_i mean_i, their statistics'' bytes, their keys and the rows skipped';

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

-- Options: as perpca_fit's, DEFAULT NULL, from the option table and read by
-- name in C (src/fit_options.c, sql/options.awk).
CREATE OR REPLACE FUNCTION perpca_fit_federated(
    shards text[],
    query text,
    n_global int,
    n_local int,
    @OPTIONS(federated): rounds tolerance step update retraction init center weights verbose
        adaptive solver seed scale hops missing@)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_fit_federated(@ARGTYPES(federated)@) IS
    'Personalized PCA with the clients on shards (libpq connection strings): the query runs on every shard and only U and d x n_global sums per shard cross the network each round; the fit engine, options and rows of perpca_fit (README: Reference, Federated fits)';
-- It opens connections with the server's credentials: superusers, and roles granted EXECUTE.
REVOKE EXECUTE ON FUNCTION perpca_fit_federated(@ARGTYPES(federated)@) FROM PUBLIC;

CREATE OR REPLACE FUNCTION perpca_last_federated_fit()
RETURNS TABLE (rounds_run int, converged boolean, objective float8, kkt_residual float8, step float8,
               n_shards int, n_clients int, d int, setup_bytes bigint, round_bytes bigint,
               result_bytes bigint, round_binary_bytes bigint, stats_binary_bytes bigint,
               seconds float8, solver text, theta_est float8, gradient_norm float8, rows_skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION perpca_last_federated_fit() IS
    'diagnostics of the last perpca_fit_federated in this session, with the bytes it moved (setup, per round, result; a round as packed float8), the binary size of the statistics it did not move, and the rows the shards skipped (README: Reference, Federated fits)';
