-- ==========================================================================
-- Projection: pure functions on float8[] components (rows orthonormal)
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_scores(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_scores(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_reconstruct(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_reconstruct(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_residual(x float8[], components float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_residual(x float8[], components float8[], mean float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION perpca_scores(float8[], float8[]) IS
    'scores C x of x (d values) on the k x d components C whose rows are orthonormal, e.g. array_agg(pc ORDER BY component) (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_scores(float8[], float8[], float8[]) IS
    'scores C (x - mean) of x on the k x d components C, centering x at mean first (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_reconstruct(float8[], float8[]) IS
    'reconstruction C^T C x of x from the k x d orthonormal components C (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_reconstruct(float8[], float8[], float8[]) IS
    'reconstruction mean + C^T C (x - mean) of x from the k x d orthonormal components C (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_residual(float8[], float8[]) IS
    'residual x - C^T C x of x after projecting on the k x d orthonormal components C (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_residual(float8[], float8[], float8[]) IS
    'residual (x - mean) - C^T C (x - mean) of x after centering and projecting on the components C (README: Reference, Projection on any float8[] PC table)';

CREATE OR REPLACE FUNCTION perpca_total_variance(s perpca_stats) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_total_variance(s perpca_stats, mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_explained_variance(s perpca_stats, components float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_explained_variance(s perpca_stats, components float8[], mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int,
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;
CREATE OR REPLACE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int, mean float8[],
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

COMMENT ON FUNCTION perpca_total_variance(perpca_stats) IS
    'total variance tr(S) of a group about its own mean (sum of the eigenvalues of its covariance) (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_total_variance(perpca_stats, float8[]) IS
    'total second moment tr(S) of a group about the point mean (a zero mean gives the uncentered moment) (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_explained_variance(perpca_stats, float8[]) IS
    'variance of a group about its own mean captured by the k x d orthonormal components C: tr(C S C^T) (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_explained_variance(perpca_stats, float8[], float8[]) IS
    'second moment of a group about the point mean captured by the k x d orthonormal components C: tr(C S C^T) (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_local_pcs(perpca_stats, float8[], int) IS
    'local components of a group with the global components frozen: top n_local eigenvectors of its covariance deflated by the global components (largest entry positive) (README: Reference, Projection on any float8[] PC table)';
COMMENT ON FUNCTION perpca_local_pcs(perpca_stats, float8[], int, float8[]) IS
    'local components of a group about the point mean with the global components frozen: top n_local eigenvectors of the deflated second moment (README: Reference, Projection on any float8[] PC table)';

