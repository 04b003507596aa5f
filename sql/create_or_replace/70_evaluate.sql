-- ==========================================================================
-- Evaluation: held-out reconstruction error and explained variance of a
-- stored model (perpca_evaluate); choosing the ranks is 75_ranks.sql
-- ==========================================================================

CREATE OR REPLACE FUNCTION perpca_internal.evaluate_stats(client text, s @extschema@.perpca_stats, centre float8[],
                                               u float8[], v float8[],
                                               OUT error float8, OUT total_variance float8,
                                               OUT global_variance float8, OUT local_variance float8)
    AS 'MODULE_PATHNAME', 'perpca_evaluate_stats' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION perpca_internal.evaluate_stats(text, @extschema@.perpca_stats, float8[], float8[], float8[]) IS
    'internal: mean squared residual tr((I-Q) M (I-Q)), total tr M, tr(U M U'') and tr(V M V'') of a client''s rows with second moment M about centre, Q = W''W for W = [u; v] (NULL figures for NULL statistics)';

CREATE OR REPLACE FUNCTION perpca_internal.query_columns(query text) RETURNS regtype[]
    AS 'MODULE_PATHNAME', 'perpca_query_columns' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.query_columns(text) IS
    'internal: the types of the columns a query returns, from its plan (the query is not run)';

-- A query (client, x float8[]) or (client, perpca_stats) as (client text, stats perpca_stats), one row per client.
CREATE OR REPLACE FUNCTION perpca_internal.stats_query(query text, what text DEFAULT 'query') RETURNS text
    AS 'MODULE_PATHNAME', 'perpca_stats_query' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_internal.stats_query(text, text) IS
    'internal: wraps a query of rows (any form of the row reader) or statistics (client, perpca_stats) into one returning (client text, stats perpca_stats), one row per client; every name in the wrapper is schema-qualified';

-- Both read the model with the checked C reader (src/model_read.c: plain
-- tables of one owner, read from the heap, nothing of the owner's runs) and
-- run the query as the caller (src/evaluate.c).
CREATE OR REPLACE FUNCTION perpca_evaluate(model text, query text, missing text DEFAULT 'error')
RETURNS TABLE (client text, known boolean, n bigint, error float8, total_variance float8,
               global_ratio float8, local_ratio float8, explained_ratio float8, skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate(text, text, text) IS
    'evaluation of a model on a query of rows or statistics: per client rows n, skipped, mean squared reconstruction error, second moment about the model''s centre, the global, local and explained ratios; an unseen client: the global part only (README: Reference, Evaluation and choosing the ranks)';

CREATE OR REPLACE FUNCTION perpca_evaluate_summary(model text, query text, missing text DEFAULT 'error',
                                        OUT clients int, OUT unseen_clients int, OUT n bigint,
                                        OUT error float8, OUT error_samples float8,
                                        OUT global_ratio float8, OUT global_ratio_samples float8,
                                        OUT local_ratio float8, OUT local_ratio_samples float8,
                                        OUT explained_ratio float8, OUT explained_ratio_samples float8,
                                        OUT skipped bigint)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_summary(text, text, text) IS
    'the whole model on a query of rows or statistics, as perpca_evaluate: error = mean of the clients'' errors (equal weights, the paper''s metric), error_samples over rows; ratios over clients (equal weights) or over rows (_samples) (README: Reference, Evaluation and choosing the ranks)';
