-- ==========================================================================
-- Evaluation: held-out reconstruction error and explained variance of a
-- stored model (perpca_evaluate); choosing the ranks is 75_ranks.sql
-- ==========================================================================

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
