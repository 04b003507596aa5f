-- ==========================================================================
-- Reading a stored model: component info, theta, row-wise projection and
-- client similarity (models.c caches the model per backend)
-- ==========================================================================


CREATE FUNCTION perpca_component_info(model text)
RETURNS TABLE (client text, kind text, component int, variance float8,
               explained_variance_ratio float8, cumulative_explained_variance_ratio float8)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables_existing(model);
BEGIN
    RETURN QUERY EXECUTE pg_catalog.format($f$
        SELECT NULL::text, 'global'::text, c.component, c.variance, c.variance / i.total_variance,
               sum(c.variance) OVER (ORDER BY c.component) / i.total_variance
          FROM %s c CROSS JOIN %s i
         WHERE c.kind = 'global'
        UNION ALL
        SELECT c.client, 'local', c.component, c.variance, c.variance / k.total_variance,
               k.global_ratio + sum(c.variance) OVER (PARTITION BY c.client ORDER BY c.component)
                                / k.total_variance
          FROM %s c JOIN %s k ON k.client = c.client
         WHERE c.kind = 'local'
         ORDER BY 1 NULLS FIRST, 3$f$, t.components, t.info, t.components, t.clients);
END
$$;
COMMENT ON FUNCTION perpca_component_info(text) IS
    'variance, explained-variance ratio and cumulative ratio of each component (as ML.PRINCIPAL_COMPONENT_INFO): global components against the fit''s weighted mean total variance, local ones against their client''s total variance, cumulated on top of the client''s global share';

CREATE FUNCTION perpca_model_theta(model text, threshold float8 DEFAULT 0.05,
                                   OUT theta_est float8, OUT hint text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables_existing(model);
BEGIN
    EXECUTE pg_catalog.format('SELECT theta_est FROM %s', t.info) INTO theta_est;
    IF theta_est < threshold THEN
        hint := 'theta_est is small: the local components of the clients are nearly aligned, so global and local parts are not separable; lower n_local';
    END IF;
END
$$;
COMMENT ON FUNCTION perpca_model_theta(text, float8) IS
    'the model''s misalignment theta_est = 1 - lambda_max(mean of the local projectors), with a hint when it is below threshold';

-- Row-wise projection on a stored model (read once per backend and cached).
CREATE FUNCTION perpca_model_scores(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_global_part(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_local_part(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_reconstruct(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_residual(model text, client text, x float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_model_error(model text, client text, x float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_similarity(model text, OUT client_a text, OUT client_b text, OUT distance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION perpca_model_scores(text, text, float8[]) IS
    'scores of a row x of a client: n_global global scores then the client''s local scores, after centering as the fit did; a client the model has never seen gets the global scores only';
COMMENT ON FUNCTION perpca_model_global_part(text, text, float8[]) IS
    'global part of x, centre + U U^T (x - centre): what the clients share (the background); global part + local part + residual = x';
COMMENT ON FUNCTION perpca_model_local_part(text, text, float8[]) IS
    'local part of x, V V^T (x - centre): what is unique to the client (the foreground); zero for a client the model has never seen';
COMMENT ON FUNCTION perpca_model_reconstruct(text, text, float8[]) IS
    'reconstruction of x from the global and the client''s local components (global part + local part)';
COMMENT ON FUNCTION perpca_model_residual(text, text, float8[]) IS
    'residual of x: x minus its reconstruction from the global and the client''s local components';
COMMENT ON FUNCTION perpca_model_error(text, text, float8[]) IS
    'reconstruction error of x, the squared norm of its residual (an anomaly score); its mean over a client''s training rows is the client''s train_error';
COMMENT ON FUNCTION perpca_similarity(text) IS
    'client distance rho = ||P_Va - P_Vb||_F^2 / r2 between the local subspaces of every ordered pair of clients (0 on the diagonal), for clustering clients by what makes them different';

