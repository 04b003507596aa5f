-- ==========================================================================
-- Fit: federated PerPCA rounds across the clients of a query (perpca_fit)
-- ==========================================================================

CREATE FUNCTION perpca_fit(
    query text,
    n_global int,
    n_local int,
    rounds int DEFAULT 5000,
    tolerance float8 DEFAULT 1e-9,
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
    start text DEFAULT NULL)
RETURNS TABLE (client text, kind text, component int, pc float8[], variance float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION perpca_fit(text, int, int, int, float8, float8, text, text, text, bigint, text, text, text, boolean, boolean, text) IS
    'Personalized PCA: global components shared by all clients (rows of the query) and local components per client; init => ''given'' starts from the components returned by the start query (client, kind, component, pc)';

CREATE FUNCTION perpca_last_fit()
RETURNS TABLE (method text, rounds int, converged boolean, objective float8,
               kkt_residual float8, theta_est float8, step float8,
               n_clients int, dim int, seconds float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION perpca_last_fit() IS
    'diagnostics of the last perpca_fit call in this session (no row before the first)';

