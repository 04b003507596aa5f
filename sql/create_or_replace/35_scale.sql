-- ==========================================================================
-- Feature scaling (fit option scale => 'standard'): the divisors come from
-- the statistics (the pooled standard deviation of each feature, ddof 0); a
-- model stores them in <model>_info.scale_factors and every function that
-- reads the model applies them (src/scale.c).
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_scale_factors(s perpca_stats, OUT scale_factors float8[], OUT constant_features int[])
    AS 'MODULE_PATHNAME', 'perpca_scale_factors' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION perpca_scale_factors(perpca_stats) IS
    'the divisors of scale => ''standard'' for these (merged) statistics: each feature''s standard deviation about the mean of all rows (ddof 0, as sklearn''s StandardScaler); a constant feature keeps divisor 1 and is listed in constant_features (1-based) (README: Reference, Statistics)';

CREATE OR REPLACE FUNCTION perpca_internal.scale_stats(s perpca_stats, scale_factors float8[]) RETURNS perpca_stats
    AS 'MODULE_PATHNAME', 'perpca_scale_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.scale_stats(perpca_stats, float8[]) IS
    'internal: the statistics of the rows with each feature divided by scale_factors (mean / s, M2 / s s''); a NULL scale_factors returns s unchanged';

CREATE OR REPLACE FUNCTION perpca_internal.scale_vector(x float8[], scale_factors float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'perpca_scale_vector' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.scale_vector(float8[], float8[]) IS
    'internal: x divided elementwise by scale_factors; a NULL scale_factors returns x unchanged';
