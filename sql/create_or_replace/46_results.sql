-- ==========================================================================
-- Results a user can read and act on (src/results.c, src/monitor.c):
-- named loadings, what each component explains in each client, control
-- limits for new rows, and clusters of clients by their local subspaces.
-- Each reads the model with the checked C reader (model_read.c).
-- ==========================================================================

-- Written with each client's row of <model>_clients (perpca_internal.model_fill_clients).
CREATE OR REPLACE FUNCTION perpca_internal.client_monitor_stats(s @extschema@.perpca_stats, u float8[], v float8[],
                                                               OUT score_covariance float8[],
                                                               OUT residual_moments float8[])
    AS 'MODULE_PATHNAME', 'perpca_client_monitor_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.client_monitor_stats(@extschema@.perpca_stats, float8[], float8[]) IS
    'internal: for a client''s statistics s (in the model''s units) and components W = [u; v], the scores'' covariance W S W'' and the residual spectrum {tr R, tr R^2, tr R^3}, R = (I - W''W) S (I - W''W), S the covariance of its rows (NULLs for NULL or empty statistics)';

CREATE OR REPLACE FUNCTION perpca_internal.f_upper_quantile(alpha float8, d1 float8, d2 float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'perpca_f_upper_quantile' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.f_upper_quantile(float8, float8, float8) IS
    'internal: the upper alpha quantile of the F(d1, d2) distribution (regularized incomplete beta, inverted), as perpca_model_monitor''s T^2 limit uses it';

CREATE OR REPLACE FUNCTION perpca_loadings(model text)
RETURNS TABLE (kind text, client text, component int, feature text, loading float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_loadings(text) IS
    'one row per feature of each component: kind ''global'' (client NULL) or ''local'', the component''s number, the feature''s name (<model>_info.feature_names, else x1 .. xd) and its loading (the component''s unit-vector entry, in the model''s scaled units for scale ''standard''); global rows first, then clients bytewise';

CREATE OR REPLACE FUNCTION perpca_component_variance(model text)
RETURNS TABLE (client text, kind text, component int, variance float8, ratio float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_component_variance(text) IS
    'for each client, each global and local component''s variance in that client''s training rows (w'' M w, M their second moment about the model''s centre for the client) and its share of the client''s total_variance, from the statistics stored with the model (no rows read); the local rows equal <model>_components.variance';

CREATE OR REPLACE FUNCTION perpca_model_monitor(model text, client text, x float8[], alpha float8 DEFAULT 0.01,
                                                missing text DEFAULT 'error', limits text DEFAULT 'gaussian',
                                                OUT t2 float8, OUT t2_limit float8, OUT q float8,
                                                OUT q_limit float8, OUT out_of_control boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_model_monitor(model text, client anyelement, x float8[], alpha float8 DEFAULT 0.01,
                                                missing text DEFAULT 'error', limits text DEFAULT 'gaussian',
                                                OUT t2 float8, OUT t2_limit float8, OUT q float8,
                                                OUT q_limit float8, OUT out_of_control boolean)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_monitor(text, text, float8[], float8, text, text) IS
    'multivariate process control of a row x of a client against the client''s own training distribution: Hotelling''s T^2 of its scores (about the client''s mean, with the scores'' stored covariance) and Q = ||residual||^2 (the squared prediction error), each with its limit (T^2: the F-distribution limit for a new observation, k (n^2 - 1) / (n (n - k)) F(k, n - k); Q: Jackson and Mudholkar from the stored residual spectrum), each at level 1 - sqrt(1 - alpha) so that out_of_control (either above its limit) has false-alarm rate alpha for Gaussian rows; a client the model has never seen gets Q against the global components, NULL T^2 and limits, and the unknown-client NOTICE; missing => ''error'' (a NULL, NaN or infinite element is an error naming it and the client) or ''skip'' (such a row gives NULL, counted in one NOTICE per statement); ''observed'' is refused (the limits are those of complete rows); limits => ''calibrated'' (a model trained with calibration => share, alpha between 0.0025 and 0.25) scales both limits at alpha 0.01 by the split-conformal threshold of the held-out rows'' scores max(T^2 / T^2 limit, Q / Q limit), the client''s own when it has at least 399 held-out rows, else the pooled ones, so that the false-alarm rate is at most alpha for rows exchangeable with the held-out ones';
COMMENT ON FUNCTION perpca_model_monitor(text, anyelement, float8[], float8, text, text) IS
    'perpca_model_monitor with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form';

CREATE OR REPLACE FUNCTION perpca_clusters(model text, k int DEFAULT NULL)
RETURNS TABLE (client text, cluster int, distance_to_center float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_clusters(text, int) IS
    'spectral clustering of the clients by their local subspaces, as the paper does: affinity 1 - rho/2 (rho as perpca_similarity), the top k eigenvectors of D^-1/2 A D^-1/2 divided by sqrt(D), k-means with a fixed seed (the same clusters on every call), clusters numbered by their first client (bytewise); distance_to_center is the client''s distance to its cluster''s centre in that embedding; k NULL: the largest eigengap among k = 2 .. 20, named in a NOTICE, or one cluster when that split is no cluster structure (mu_k <= 0 or (1 - mu_k+1) / (1 - mu_k) < 1.3), with a NOTICE saying so';

-- A model's history (src/model_history.c reads <model>_history, written by
-- perpca_train and perpca_refresh through perpca_internal.history_append).
CREATE OR REPLACE FUNCTION perpca_model_history(model text)
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean,
               sketch_bound float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_history(text) IS
    'one row per perpca_train (kind ''train'') and perpca_refresh (kind ''refresh'') of the model, in order (entry): the model version it left, when it ended, clients and rows fitted, rounds run, convergence, objective, wall-clock seconds, the role that ran it, a warning (not converged; ''unchanged: ...''; ''failed: SQLSTATE: message''), outcome ''fitted'', ''unchanged'' (nothing fitted) or ''failed'' (the old model stayed), the starts of the fit with their rounds, and for a refresh the clients added and dropped and whether it started warm, and the bound the clients'' sketches put on the objective (perpca_last_fit().sketch_bound: 0 for exact statistics; NULL for rows written before 0.4.0 and failed refreshes); needs SELECT on <model>_info and <model>_history; a model stored before 0.3.0 has no history until its first refresh';
