-- ==========================================================================
-- Results a user can read and act on (src/results.c, src/monitor.c):
-- named loadings, what each component explains in each client, control
-- limits for new rows, and clusters of clients by their local subspaces.
-- Each reads the model with the checked C reader (model_read.c).
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_internal.f_upper_quantile(alpha float8, d1 float8, d2 float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'perpca_f_upper_quantile' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.f_upper_quantile(float8, float8, float8) IS
    'internal: the upper alpha quantile of the F(d1, d2) distribution (regularized incomplete beta, inverted), as perpca_model_monitor''s T^2 limit uses it';

CREATE OR REPLACE FUNCTION perpca_loadings(model text)
RETURNS TABLE (kind text, client text, component int, feature text, loading float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_loadings(text) IS
    'one row per feature of each component: kind, client (NULL for global), component, the feature''s name (<model>_info.feature_names, else x1 .. xd) and its loading (the unit vector''s entry, in scaled units under scale ''standard'') (README: Reference, Models)';

CREATE OR REPLACE FUNCTION perpca_component_variance(model text)
RETURNS TABLE (client text, kind text, component int, variance float8, ratio float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_component_variance(text) IS
    'for each client, each global and local component''s variance in the client''s training rows and its share of the client''s total_variance, from the statistics stored with the model (no rows read) (README: Reference, Models)';

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
    'process control of a row x of a client: Hotelling''s T^2 of its scores and Q (squared prediction error), each with its limit, and out_of_control; limits ''gaussian'' (Gaussian rows) or ''calibrated'' (on held-out rows); missing ''error'' or ''skip'' (README: Reference, Models)';
COMMENT ON FUNCTION perpca_model_monitor(text, anyelement, float8[], float8, text, text) IS
    'perpca_model_monitor with the client key in its own type (int, bigint, uuid, date, ...), matched as its text form (README: Reference, Models)';

CREATE OR REPLACE FUNCTION perpca_clusters(model text, k int DEFAULT NULL)
RETURNS TABLE (client text, cluster int, distance_to_center float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_clusters(text, int) IS
    'spectral clustering of the clients by their local subspaces (rho as perpca_similarity), seeded: the same clusters on every call; k NULL: the largest eigengap, or one cluster when the spectrum has no cluster structure, named in a NOTICE (README: Reference, Models)';

-- A model's history (src/model_read.c reads <model>_history, written by
-- perpca_train and perpca_refresh through perpca_internal.history_append).
CREATE OR REPLACE FUNCTION perpca_model_history(model text)
RETURNS TABLE (version bigint, at timestamptz, kind text, clients int, "rows" bigint, rounds_run int,
               converged boolean, objective float8, seconds float8, role name, warning text,
               entry int, outcome text, starts jsonb, clients_added int, clients_dropped int, warm_start boolean,
               sketch_bound float8)
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_model_history(text) IS
    'one row per perpca_train and perpca_refresh of the model, in order: the version it left, when, clients, rows, rounds, convergence, objective, seconds, role, warning, outcome, starts, clients added and dropped, warm start, sketch_bound (README: Reference, Models)';
