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
    'variance, explained-variance ratio and cumulative ratio of each component (as ML.PRINCIPAL_COMPONENT_INFO), global rows first, then each client''s local rows.  Global rows divide by <model>_info.total_variance, the fit''s weighted mean over clients (weights option) of each client''s total variance about its centre; their cumulative ratio runs over the global components.  Local rows divide by their own client''s total variance about its centre (<model>_clients.total_variance); their cumulative ratio starts at the client''s global_ratio (the share of its variance the global components capture), so the last local row is global_ratio + local_ratio.  A ratio is NULL when its total is NULL or 0.  top_features names the three features with the largest absolute loadings (name and loading; names from <model>_info.feature_names, else x1 .. xd)';

CREATE OR REPLACE FUNCTION perpca_model_theta(model text, threshold float8 DEFAULT 0.05,
                                   OUT theta_est float8, OUT hint text)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_theta(text, float8) IS
    'the model''s misalignment theta_est = 1 - lambda_max(mean of the local projectors), with a hint when it is below threshold';

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
    'scores of a row x of a client: n_global global scores then the client''s local scores, after centering as the fit did; a client the model has never seen gets the global scores only (unknown => ''global'', one NOTICE per statement) or an error (unknown => ''error'').  missing => ''observed'': a row with NULL, NaN or infinite elements gets the posterior mean of its scores given the observed coordinates under the model''s probabilistic PCA form (every row is then scored so, also a complete one), NULL when fewer coordinates are observed than there are scores; missing => ''skip'': such a row gets NULL (one NOTICE per statement counts them); missing => ''error'' (default): such an element is an error';
COMMENT ON FUNCTION perpca_model_scores(text, anyelement, float8[], text, text) IS
    'perpca_model_scores with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_global_part(text, text, float8[], text, text) IS
    'global part of x, centre + U U^T (x - centre): what the clients share (the background); global part + local part + residual = x';
COMMENT ON FUNCTION perpca_model_global_part(text, anyelement, float8[], text, text) IS
    'perpca_model_global_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_local_part(text, text, float8[], text, text) IS
    'local part of x, V V^T (x - centre): what is unique to the client (the foreground); zero for a client the model has never seen';
COMMENT ON FUNCTION perpca_model_local_part(text, anyelement, float8[], text, text) IS
    'perpca_model_local_part with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_reconstruct(text, text, float8[], text, text) IS
    'reconstruction of x from the global and the client''s local components (global part + local part)';
COMMENT ON FUNCTION perpca_model_reconstruct(text, anyelement, float8[], text, text) IS
    'perpca_model_reconstruct with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_residual(text, text, float8[], text, text) IS
    'residual of x: x minus its reconstruction from the global and the client''s local components; with missing => ''observed'' NULL at the missing coordinates';
COMMENT ON FUNCTION perpca_model_residual(text, anyelement, float8[], text, text) IS
    'perpca_model_residual with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_model_error(text, text, float8[], text, text) IS
    'reconstruction error of x, the squared norm of its residual (an anomaly score); its mean over a client''s training rows is the client''s train_error; with missing => ''observed'' the sum over the observed coordinates only';
COMMENT ON FUNCTION perpca_model_error(text, anyelement, float8[], text, text) IS
    'perpca_model_error with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';
COMMENT ON FUNCTION perpca_similarity(text, boolean) IS
    'client distance rho = ||P_Va - P_Vb||_F^2 / r2 between the local subspaces of each unordered pair of clients, once with client_a < client_b (byte order), for clustering clients by what makes them different; all_pairs => true gives every ordered pair and each client with itself (distance 0)';
COMMENT ON FUNCTION perpca_model_impute(text, text, float8[], text) IS
    'x with each NULL, NaN or infinite element replaced by its conditional expectation given the observed elements, under the model''s probabilistic PCA form for the client (its global and local components with their variances and isotropic noise, the client''s mean and the model''s scale), in the data''s units; observed elements are returned unchanged, bit for bit; a row with nothing observed gets the client''s centre';
COMMENT ON FUNCTION perpca_model_impute(text, anyelement, float8[], text) IS
    'perpca_model_impute with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';

CREATE OR REPLACE FUNCTION perpca_evaluate_imputation(model text, query text, share float8 DEFAULT 0.1,
                                                      seed bigint DEFAULT 0, missing text DEFAULT 'observed')
RETURNS TABLE (client text, n bigint, hidden bigint, error float8, mean_error float8, ratio float8,
               skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_imputation(text, text, float8, bigint, text) IS
    'masked evaluation: the query returns rows (client, x) of any form of the row reader (a numeric array, a vector or halfvec, numeric feature columns); missing => ''observed'' (default: a row''s gaps stay gaps), ''skip'' (a row with a gap is left out, counted in skipped) or ''error''; each observed entry is hidden with probability share (seeded by seed and the row, so the same rows hide the same entries in any order), filled by perpca_model_impute, and scored per client: rows n, hidden entries, error (mean squared error of the model''s filling on the hidden entries, in the data''s units), mean_error (that of filling with the client''s centre, its mean under center ''client'') and ratio = error / mean_error';
