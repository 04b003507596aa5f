-- Projection (0.1.0 -> 0.2.0): a centre vector argument is called mean, as in
-- perpca_scores; `center` is only ever the fit's text option.  Input parameter
-- names cannot be changed in place, so the three functions are created again.
DROP FUNCTION perpca_total_variance(perpca_stats, float8[]);
DROP FUNCTION perpca_explained_variance(perpca_stats, float8[], float8[]);
DROP FUNCTION perpca_local_pcs(perpca_stats, float8[], int, float8[]);
CREATE FUNCTION perpca_total_variance(s perpca_stats, mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_explained_variance(s perpca_stats, components float8[], mean float8[]) RETURNS float8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION perpca_local_pcs(s perpca_stats, global_pcs float8[], n_local int, mean float8[],
                                 OUT component int, OUT pc float8[], OUT variance float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;
COMMENT ON FUNCTION perpca_total_variance(perpca_stats, float8[]) IS
    'total second moment tr(S) of a group about the point mean (a zero mean gives the uncentered moment)';
COMMENT ON FUNCTION perpca_explained_variance(perpca_stats, float8[], float8[]) IS
    'second moment of a group about the point mean captured by the k x d orthonormal components C: tr(C S C^T)';
COMMENT ON FUNCTION perpca_local_pcs(perpca_stats, float8[], int, float8[]) IS
    'local components of a group about the point mean with the global components frozen: top n_local eigenvectors of the deflated second moment';
