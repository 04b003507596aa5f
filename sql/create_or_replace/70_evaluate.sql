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
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    types regtype[] := perpca_internal.query_columns(query);
BEGIN
    IF pg_catalog.cardinality(types) < 2 THEN
        RAISE EXCEPTION 'the % must return at least two columns, (client, x float8[]) or (client, perpca_stats)', what
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF types[2] = 'float8[]'::regtype THEN
        RETURN pg_catalog.format(
            'SELECT q.client::text AS client, @extschema@.perpca_stats(q.x) AS stats FROM (%s) AS q(client, x) GROUP BY 1',
            query);
    ELSIF types[2] IN ('float4[]'::regtype, 'numeric[]'::regtype, 'int4[]'::regtype, 'int8[]'::regtype,
                       'int2[]'::regtype) THEN
        RETURN pg_catalog.format(
            'SELECT q.client::text AS client, @extschema@.perpca_stats(q.x::float8[]) AS stats FROM (%s) AS q(client, x) GROUP BY 1',
            query);
    ELSIF types[2] = '@extschema@.perpca_stats'::regtype THEN
        RETURN pg_catalog.format(
            'SELECT q.client::text AS client, @extschema@.perpca_merge(q.x) AS stats FROM (%s) AS q(client, x) GROUP BY 1',
            query);
    END IF;
    RAISE EXCEPTION 'the second column of the % has type %, not float8[] or perpca_stats', what, types[2]
        USING ERRCODE = 'datatype_mismatch',
              HINT = 'Return (client, x float8[]) rows or (client, perpca_stats(x)) statistics.';
END
$$;
COMMENT ON FUNCTION perpca_internal.stats_query(text, text) IS
    'internal: wraps a query of rows (client, x float8[]) or statistics (client, perpca_stats) into one returning (client text, stats perpca_stats), one row per client';

CREATE OR REPLACE FUNCTION perpca_evaluate(model text, query text)
RETURNS TABLE (client text, known boolean, n bigint, error float8, total_variance float8,
               global_ratio float8, local_ratio float8, explained_ratio float8)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE AS $$
DECLARE
    t record := perpca_internal.perpca_model_tables_existing(model);
BEGIN
    RETURN QUERY EXECUTE pg_catalog.format($f$
        WITH i AS (SELECT center, global_mean, d, perpca_internal.perpca_model_scale_factors(%L) AS scale_factors FROM %s),
        u AS (SELECT pg_catalog.array_agg(pc ORDER BY component) AS u FROM %s WHERE kind = 'global'),
        v AS (SELECT client, pg_catalog.array_agg(pc ORDER BY component) AS v
                FROM %s WHERE kind = 'local' GROUP BY client),
        q AS (%s),
        e AS (
            SELECT q.client, k.client IS NOT NULL AS known,
                   perpca_internal.scale_stats(q.stats, i.scale_factors) AS stats, u.u, v.v,
                   perpca_internal.scale_vector(
                       CASE i.center WHEN 'client' THEN coalesce(k.mean, i.global_mean)
                                     WHEN 'global' THEN i.global_mean
                                     ELSE pg_catalog.array_fill(0::float8, ARRAY[i.d]) END,
                       i.scale_factors) AS centre
              FROM q CROSS JOIN i CROSS JOIN u
              LEFT JOIN %s k ON k.client = q.client
              LEFT JOIN v ON v.client = q.client AND k.client IS NOT NULL)
        SELECT e.client, e.known, coalesce(@extschema@.perpca_count(e.stats), 0), r.error, r.total_variance,
               r.global_variance / r.total_variance, r.local_variance / r.total_variance,
               (r.global_variance + r.local_variance) / r.total_variance
          FROM e CROSS JOIN LATERAL perpca_internal.evaluate_stats(e.client, e.stats, e.centre, e.u, e.v) r
         ORDER BY e.client COLLATE "C"$f$,
        t.info, t.info, t.components, t.components, perpca_internal.stats_query(query), t.clients);
END
$$;
COMMENT ON FUNCTION perpca_evaluate(text, text) IS
    'held-out evaluation of a stored model on a query of rows (client, x float8[]) or statistics (client, perpca_stats): per client the rows n, the mean squared reconstruction error (||residual||^2 per row, as perpca_model_error), the second moment about the model''s centre and the shares of it explained by the global part, the local part and both; a client the model has never seen (known false) is evaluated on the global components only; a scaled model (scale ''standard'') divides the rows by its stored scale_factors first, so error, total_variance and the ratios are in standardized units, as perpca_model_error';

CREATE OR REPLACE FUNCTION perpca_evaluate_summary(model text, query text,
                                        OUT clients int, OUT unseen_clients int, OUT n bigint,
                                        OUT error float8, OUT error_samples float8,
                                        OUT global_ratio float8, OUT global_ratio_samples float8,
                                        OUT local_ratio float8, OUT local_ratio_samples float8,
                                        OUT explained_ratio float8, OUT explained_ratio_samples float8)
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT pg_catalog.count(*)::int,
           (pg_catalog.count(*) FILTER (WHERE NOT e.known))::int,
           pg_catalog.sum(e.n)::bigint,
           pg_catalog.avg(e.error),
           pg_catalog.sum(e.n * e.error) / pg_catalog.sum(e.n),
           pg_catalog.sum(e.global_ratio * e.total_variance) / pg_catalog.sum(e.total_variance),
           pg_catalog.sum(e.n * e.global_ratio * e.total_variance) / pg_catalog.sum(e.n * e.total_variance),
           pg_catalog.sum(e.local_ratio * e.total_variance) / pg_catalog.sum(e.total_variance),
           pg_catalog.sum(e.n * e.local_ratio * e.total_variance) / pg_catalog.sum(e.n * e.total_variance),
           pg_catalog.sum(e.explained_ratio * e.total_variance) / pg_catalog.sum(e.total_variance),
           pg_catalog.sum(e.n * e.explained_ratio * e.total_variance) / pg_catalog.sum(e.n * e.total_variance)
      FROM @extschema@.perpca_evaluate(model, query) AS e
     WHERE e.n > 0;
END;
COMMENT ON FUNCTION perpca_evaluate_summary(text, text) IS
    'the whole model on a query of rows or statistics, as perpca_evaluate: error = mean of the clients'' errors (equal weights, the paper''s metric), error_samples = mean over all rows; ratios = explained over total second moment summed over clients (equal weights) or over rows (_samples)';
