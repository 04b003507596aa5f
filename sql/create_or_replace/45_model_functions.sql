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
    'variance, explained-variance ratio and cumulative ratio of each component (global rows first, then each client''s local rows) and top_features, the three largest absolute loadings by feature name (README: Reference, Models)';

CREATE OR REPLACE FUNCTION perpca_model_theta(model text, threshold float8 DEFAULT 0.05,
                                   OUT theta_est float8, OUT hint text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_theta(text, float8) IS
    'the model''s misalignment theta_est = 1 - lambda_max(mean of the local projectors), with a hint when it is below threshold (README: Reference, Models)';

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
    'scores of a row x of a client: the global scores, then the client''s local ones, centred as the fit did; unknown => ''global'' (default) or ''error'' for a client the model has never seen; missing => ''error'' (default), ''skip'' or ''observed'' (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_scores(text, anyelement, float8[], text, text) IS
    'perpca_model_scores with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_global_part(text, text, float8[], text, text) IS
    'global part of x, centre + U U^T (x - centre): what the clients share (the background); global part + local part + residual = x (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_global_part(text, anyelement, float8[], text, text) IS
    'perpca_model_global_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_local_part(text, text, float8[], text, text) IS
    'local part of x, V V^T (x - centre): what is unique to the client (the foreground); zero for a client the model has never seen (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_local_part(text, anyelement, float8[], text, text) IS
    'perpca_model_local_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_reconstruct(text, text, float8[], text, text) IS
    'reconstruction of x from the global and the client''s local components (global part + local part) (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_reconstruct(text, anyelement, float8[], text, text) IS
    'perpca_model_reconstruct with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_residual(text, text, float8[], text, text) IS
    'residual of x: x minus its reconstruction from the global and the client''s local components; with missing => ''observed'' NULL at the missing coordinates (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_residual(text, anyelement, float8[], text, text) IS
    'perpca_model_residual with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_error(text, text, float8[], text, text) IS
    'reconstruction error of x, the squared norm of its residual (an anomaly score); its mean over a client''s training rows is the client''s train_error; with missing => ''observed'' the sum over the observed coordinates only (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_error(text, anyelement, float8[], text, text) IS
    'perpca_model_error with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';
COMMENT ON FUNCTION perpca_similarity(text, boolean) IS
    'client distance rho = ||P_Va - P_Vb||_F^2 / r2 between the local subspaces of each unordered pair of clients (client_a < client_b, byte order); all_pairs => true gives every ordered pair and each client with itself (distance 0) (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_impute(text, text, float8[], text) IS
    'x with each NULL, NaN or infinite element replaced by its conditional expectation given the observed ones under the model''s probabilistic PCA form for the client, in the data''s units; observed elements unchanged, bit for bit (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_impute(text, anyelement, float8[], text) IS
    'perpca_model_impute with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';

CREATE OR REPLACE FUNCTION perpca_evaluate_imputation(model text, query text, share float8 DEFAULT 0.1,
                                                      seed bigint DEFAULT 0, missing text DEFAULT 'observed')
RETURNS TABLE (client text, n bigint, hidden bigint, error float8, mean_error float8, ratio float8,
               skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_imputation(text, text, float8, bigint, text) IS
    'masked evaluation: hides each observed entry of the query''s rows with probability share (seeded), fills them by perpca_model_impute and scores per client: rows n, hidden entries, error, mean_error (filling with the client''s centre), ratio, skipped (README: Reference, Models)';
