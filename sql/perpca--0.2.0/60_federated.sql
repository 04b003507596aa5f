-- ==========================================================================
-- Federated: PerPCA rounds run where the data live.  The coordinator
-- (perpca_fit_federated) keeps one libpq connection per shard; each round
-- sends U out and gets one weighted sum of the shard's clients' U_i back.
-- The perpca_shard_* functions are the shard side of that protocol.
-- ==========================================================================

CREATE FUNCTION perpca_shard_open(fit_id text, query text, n_global int, n_local int,
                                  weights text DEFAULT 'equal',
                                  OUT n_clients int, OUT dim int, OUT n_rows bigint,
                                  OUT mean_sum float8[], OUT stats_bytes bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_open(text, text, int, int, text) IS
    'federated fit, shard side: runs the query (client, perpca_stats [, local rank]) here and keeps its clients in this session under fit_id; returns their count, dimension, rows, sum of n_i mean_i and the bytes of their statistics';

CREATE FUNCTION perpca_shard_init(fit_id text, centre float8[], init text DEFAULT 'dispca',
                                  update text DEFAULT 'stgd', retraction text DEFAULT 'polar',
                                  OUT weight float8, OUT lambda_max float8, OUT basis float8[])
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_init(text, float8[], text, text, text) IS
    'federated fit, shard side: builds each client''s S_i about centre (NULL: its own mean) and returns the sum of the client weights, max lambda_max(S_i) and a d x q basis B with B B'' = sum_i L_i L_i'' over the clients'' top n_global + n_local eigenvectors (the disPCA start)';

CREATE FUNCTION perpca_shard_round(fit_id text, u float8[], step float8,
                                   OUT u_sum float8[], OUT weight float8,
                                   OUT objective float8, OUT change float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_round(text, float8[], float8) IS
    'federated fit, shard side: one round''s client steps against U (d x n_global); returns sum_i w_i U_i, sum_i w_i, sum_i w_i f_i and the largest local projector change (w_i = 1, or n_i for weights ''samples'')';

CREATE FUNCTION perpca_shard_finish(fit_id text, u float8[],
                                    OUT gram float8[], OUT objective float8, OUT gradient float8[],
                                    OUT gradient_v float8, OUT weight float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_finish(text, float8[]) IS
    'federated fit, shard side: makes every client''s local components orthogonal to the final U and orders them; returns sum_i w_i U''S_iU, sum_i w_i f_i, sum_i w_i G_U,i, sum_i w_i ||G_V,i||^2 and sum_i w_i';

CREATE FUNCTION perpca_shard_result(fit_id text)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_result(text) IS
    'federated fit, shard side: the local components of this shard''s clients after perpca_shard_finish';

CREATE FUNCTION perpca_shard_close(fit_id text) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_shard_close(text) IS
    'federated fit, shard side: frees the state of fit_id in this session (false if it was not open); it is also freed when the session ends';

CREATE FUNCTION perpca_fit_federated(
    shards text[],
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT 5000,
    tolerance float8 DEFAULT 1e-9,
    step float8 DEFAULT NULL,
    update text DEFAULT 'stgd',
    retraction text DEFAULT 'polar',
    init text DEFAULT 'dispca',
    center text DEFAULT 'client',
    weights text DEFAULT 'equal',
    verbose boolean DEFAULT false,
    adaptive boolean DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean) IS
    'Personalized PCA with the client steps run on the shards (libpq connection strings): the query runs on every shard, only U and one sum per shard cross the network each round; same rows as perpca_fit';
-- It opens connections with the server's credentials: superusers, and roles granted EXECUTE.
REVOKE EXECUTE ON FUNCTION perpca_fit_federated(text[], text, int, int, int, float8, float8, text, text, text, text, text, boolean, boolean) FROM PUBLIC;

CREATE FUNCTION perpca_last_federated_fit()
RETURNS TABLE (rounds int, converged boolean, objective float8, kkt_residual float8, step float8,
               n_shards int, n_clients int, dim int, setup_bytes bigint, round_bytes bigint,
               result_bytes bigint, round_binary_bytes bigint, stats_binary_bytes bigint,
               seconds float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION perpca_last_federated_fit() IS
    'diagnostics of the last perpca_fit_federated call in this session, with the bytes it moved (text payload of commands and answers: setup, per round, result; round_binary_bytes = the same round as packed float8) and the binary size of the statistics it did not move';
