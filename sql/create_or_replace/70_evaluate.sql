-- ==========================================================================
-- Evaluation: held-out reconstruction error and explained variance of a
-- stored model (perpca_evaluate), and choosing the ranks (perpca_choose_ranks)
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
    'internal: wraps a query of rows (client, x float8[]) or statistics (client, perpca_stats) into one returning (client text, stats perpca_stats), one row per client; every name in the wrapper is schema-qualified';

-- Both read the model with the checked C reader (src/model_read.c: plain
-- tables of one owner, read from the heap, nothing of the owner's runs) and
-- run the query as the caller (src/evaluate.c).
CREATE OR REPLACE FUNCTION perpca_evaluate(model text, query text)
RETURNS TABLE (client text, known boolean, n bigint, error float8, total_variance float8,
               global_ratio float8, local_ratio float8, explained_ratio float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate(text, text) IS
    'held-out evaluation of a stored model on a query of rows (client, x float8[]) or statistics (client, perpca_stats): per client the rows n, the mean squared reconstruction error (||residual||^2 per row, as perpca_model_error), the second moment about the model''s centre and the shares of it explained by the global part, the local part and both (NULL for a client whose second moment is 0); a client the model has never seen (known false) is evaluated on the global components only; a scaled model (scale ''standard'') divides the rows by its stored scale_factors first, so error, total_variance and the ratios are in standardized units, as perpca_model_error';

CREATE OR REPLACE FUNCTION perpca_evaluate_summary(model text, query text,
                                        OUT clients int, OUT unseen_clients int, OUT n bigint,
                                        OUT error float8, OUT error_samples float8,
                                        OUT global_ratio float8, OUT global_ratio_samples float8,
                                        OUT local_ratio float8, OUT local_ratio_samples float8,
                                        OUT explained_ratio float8, OUT explained_ratio_samples float8)
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION perpca_evaluate_summary(text, text) IS
    'the whole model on a query of rows or statistics, as perpca_evaluate: error = mean of the clients'' errors (equal weights, the paper''s metric), error_samples = mean over all rows; ratios = explained over total second moment summed over clients (equal weights) or over rows (_samples), NULL when that sum is 0';

-- ---- choosing the ranks --------------------------------------------------

-- The recommendation rule of perpca_choose_ranks over a finished scan.
CREATE OR REPLACE FUNCTION perpca_internal.recommend_ranks(heldout_errors float8[], totals int[], theta float8[],
                                                n_locals int[], within float8, min_theta float8,
                                                variance float8)
RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
    WITH p AS (
        SELECT u.i, u.e, u.t, u.th, u.l
          FROM ROWS FROM (pg_catalog.unnest(heldout_errors), pg_catalog.unnest(totals),
                          pg_catalog.unnest(theta), pg_catalog.unnest(n_locals))
               WITH ORDINALITY AS u(e, t, th, l, i)
         WHERE u.e IS NOT NULL)
    SELECT p.i FROM p
     WHERE p.e <= (SELECT pg_catalog.min(p2.e) FROM p AS p2) + within * variance
       AND (p.l = 0 OR p.th >= min_theta)
     ORDER BY p.t, p.e, p.i
     LIMIT 1;
END;
COMMENT ON FUNCTION perpca_internal.recommend_ranks(float8[], int[], float8[], int[], float8, float8, float8) IS
    'internal: position of the recommended pair of a rank scan: the smallest n_global + n_local whose held-out error exceeds the best by at most within x variance (the held-out total variance) and whose theta_est is at least min_theta (pairs without local components need no theta), the lower held-out error on ties';

CREATE OR REPLACE FUNCTION perpca_choose_ranks(
    query text,
    heldout text DEFAULT NULL,
    global_ranks int[] DEFAULT '{0,1,2,3,4}',
    local_ranks int[] DEFAULT '{0,1,2,3,4}',
    within float8 DEFAULT 0.02,
    min_theta float8 DEFAULT 0.05,
    holdout float8 DEFAULT 0.2,
    rounds int DEFAULT NULL, tolerance float8 DEFAULT NULL, step float8 DEFAULT NULL,
    update text DEFAULT NULL, retraction text DEFAULT NULL, init text DEFAULT NULL,
    seed bigint DEFAULT NULL, center text DEFAULT NULL, weights text DEFAULT NULL,
    adaptive boolean DEFAULT NULL, solver text DEFAULT NULL, scale text DEFAULT NULL)
RETURNS TABLE (n_global int, n_local int, objective float8, train_error float8,
               heldout_error float8, heldout_error_samples float8, heldout_explained_ratio float8,
               theta_est float8, rounds_run int, converged boolean, seconds float8, recommended boolean)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    scan constant text := 'pg_temp.perpca_rank_scan';
    train_src constant text := 'SELECT client, stats FROM pg_temp.perpca_ranks_train';
    held_src constant text := 'SELECT client, stats FROM pg_temp.perpca_ranks_heldout';
    types regtype[];
    train_q text;
    held_q text;
    cut bigint;
    opts text;
    dim int;
    pairs int[][];
    g int;
    l int;
    k int := 0;
    fit record;
    tr record;
    he record;
    secs float8;
    app text := pg_catalog.current_setting('application_name');
    best int;
BEGIN
    IF query IS NULL THEN
        RAISE EXCEPTION 'query must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF within IS NULL OR within < 0 OR min_theta IS NULL OR holdout IS NULL OR NOT (holdout > 0 AND holdout < 1) THEN
        RAISE EXCEPTION 'within must be >= 0, min_theta not NULL and holdout between 0 and 1 (exclusive)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF solver IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.pg_proc p
            WHERE p.proname = 'perpca_train' AND p.pronamespace = '@extschema@'::regnamespace
              AND 'solver' = ANY (p.proargnames)) THEN
        RAISE EXCEPTION 'perpca_train has no solver option in this version'
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Leave solver NULL: the scan then fits with perpca_fit''s default solver.';
    END IF;
    PERFORM perpca_internal.check_fit_options(rounds, tolerance, step, $11, retraction, init, seed,
                                              center, weights, NULL, adaptive, NULL, solver, scale);
    IF heldout IS NOT NULL THEN
        train_q := query;
        held_q := heldout;
    ELSE
        -- Deterministic split on a hash of the row key (third column): repeatable across calls.
        types := perpca_internal.query_columns(query);
        IF pg_catalog.cardinality(types) < 3 OR types[2] = '@extschema@.perpca_stats'::regtype THEN
            RAISE EXCEPTION 'without a held-out query, the query must return rows (client, x float8[], key)'
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Add a row key as third column (the split hashes it), or pass heldout => a second query.';
        END IF;
        cut := pg_catalog.round(holdout * 10000)::bigint;
        train_q := pg_catalog.format(
            'SELECT q.client, q.x FROM (%s) AS q(client, x, key) WHERE pg_catalog.abs(pg_catalog.hashtextextended(q.key::text, 0) %% 10000) >= %s',
            query, cut);
        held_q := pg_catalog.format(
            'SELECT q.client, q.x FROM (%s) AS q(client, x, key) WHERE pg_catalog.abs(pg_catalog.hashtextextended(q.key::text, 0) %% 10000) < %s',
            query, cut);
    END IF;

    -- Left over from a call that failed earlier in this transaction.
    IF pg_catalog.to_regclass('pg_temp.perpca_ranks_train') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_ranks_train;
    END IF;
    IF pg_catalog.to_regclass('pg_temp.perpca_ranks_heldout') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_ranks_heldout;
    END IF;
    IF pg_catalog.to_regclass('pg_temp.perpca_ranks_result') IS NOT NULL THEN
        DROP TABLE pg_temp.perpca_ranks_result;
    END IF;
    EXECUTE 'CREATE TEMPORARY TABLE perpca_ranks_train AS ' || perpca_internal.stats_query(train_q, 'query');
    EXECUTE 'CREATE TEMPORARY TABLE perpca_ranks_heldout AS ' || perpca_internal.stats_query(held_q, 'held-out query');
    CREATE TEMPORARY TABLE perpca_ranks_result (i int, n_global int, n_local int, objective float8,
        train_error float8, heldout_error float8, heldout_error_samples float8, heldout_explained_ratio float8,
        theta_est float8, rounds_run int, converged boolean, seconds float8, heldout_variance float8);
    SELECT pg_catalog.max(@extschema@.perpca_dim(s.stats)) INTO dim FROM pg_temp.perpca_ranks_train s;
    IF dim IS NULL THEN
        RAISE EXCEPTION 'the training part of the query has no rows' USING ERRCODE = 'no_data_found';
    END IF;

    opts := coalesce(', rounds => ' || rounds, '')
        || coalesce(', tolerance => ' || pg_catalog.quote_literal(tolerance) || '::float8', '')
        || coalesce(', step => ' || pg_catalog.quote_literal(step) || '::float8', '')
        || coalesce(', update => ' || pg_catalog.quote_literal($11), '')
        || coalesce(', retraction => ' || pg_catalog.quote_literal(retraction), '')
        || coalesce(', init => ' || pg_catalog.quote_literal(init), '')
        || coalesce(', seed => ' || seed, '')
        || coalesce(', center => ' || pg_catalog.quote_literal(center), '')
        || coalesce(', weights => ' || pg_catalog.quote_literal(weights), '')
        || coalesce(', adaptive => ' || adaptive, '')
        || coalesce(', solver => ' || pg_catalog.quote_literal(solver), '')
        || coalesce(', scale => ' || pg_catalog.quote_literal(scale), '');

    SELECT pg_catalog.array_agg(ARRAY[a.g, b.l] ORDER BY a.g, b.l) INTO pairs
      FROM (SELECT DISTINCT x AS g FROM pg_catalog.unnest(global_ranks) AS x) a,
           (SELECT DISTINCT y AS l FROM pg_catalog.unnest(local_ranks) AS y) b
     WHERE a.g >= 0 AND b.l >= 0 AND a.g + b.l BETWEEN 1 AND dim;
    IF pairs IS NULL THEN
        RAISE EXCEPTION 'no pair of ranks to fit: need n_global, n_local >= 0 with 1 <= n_global + n_local <= %', dim
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    FOR k IN 1 .. pg_catalog.array_length(pairs, 1) LOOP
        g := pairs[k][1];
        l := pairs[k][2];
        RAISE NOTICE 'perpca_choose_ranks: fitting pair %/% (n_global %, n_local %)',
            k, pg_catalog.array_length(pairs, 1), g, l;
        PERFORM pg_catalog.set_config('application_name',
            pg_catalog.format('perpca_choose_ranks %s/%s: n_global %s, n_local %s',
                              k, pg_catalog.array_length(pairs, 1), g, l), true);
        EXECUTE pg_catalog.format('SELECT * FROM @extschema@.perpca_train(%L, %L, %s, %s, replace => true%s)',
                                  scan, train_src, g, l, opts) INTO STRICT fit;
        SELECT f.seconds INTO secs FROM @extschema@.perpca_last_fit() AS f;
        SELECT * INTO STRICT tr FROM @extschema@.perpca_evaluate_summary(scan, train_src);
        SELECT * INTO STRICT he FROM @extschema@.perpca_evaluate_summary(scan, held_src);
        INSERT INTO pg_temp.perpca_ranks_result
        VALUES (k, g, l, fit.objective, tr.error, he.error, he.error_samples, he.explained_ratio,
                CASE WHEN l > 0 THEN fit.theta_est END, fit.rounds_run, fit.converged, secs,
                (SELECT pg_catalog.avg(e.total_variance)
                   FROM @extschema@.perpca_evaluate(scan, held_src) AS e WHERE e.n > 0));
    END LOOP;
    PERFORM @extschema@.perpca_drop(scan);
    PERFORM pg_catalog.set_config('application_name', app, true);

    SELECT perpca_internal.recommend_ranks(pg_catalog.array_agg(r.heldout_error ORDER BY r.i),
                                           pg_catalog.array_agg(r.n_global + r.n_local ORDER BY r.i),
                                           pg_catalog.array_agg(r.theta_est ORDER BY r.i),
                                           pg_catalog.array_agg(r.n_local ORDER BY r.i), within, min_theta,
                                           pg_catalog.max(r.heldout_variance))
      INTO best FROM pg_temp.perpca_ranks_result r;
    IF best IS NULL THEN
        RAISE NOTICE 'perpca_choose_ranks: no pair is within % of the best held-out error with theta_est >= %', within, min_theta
            USING HINT = 'Widen the grid, raise within or lower min_theta.';
    END IF;
    RETURN QUERY
        SELECT r.n_global, r.n_local, r.objective, r.train_error, r.heldout_error, r.heldout_error_samples,
               r.heldout_explained_ratio, r.theta_est, r.rounds_run, r.converged, r.seconds, r.i IS NOT DISTINCT FROM best
          FROM pg_temp.perpca_ranks_result r ORDER BY r.i;
    DROP TABLE pg_temp.perpca_ranks_train, pg_temp.perpca_ranks_heldout, pg_temp.perpca_ranks_result;
END
$$;
COMMENT ON FUNCTION perpca_choose_ranks(text, text, int[], int[], float8, float8, float8, int, float8, float8, text, text, text, bigint, text, text, boolean, text, text) IS
    'fits PerPCA for every pair of global_ranks x local_ranks on the query''s training rows and evaluates each on held-out rows (the heldout query, or a repeatable split of the query''s rows (client, x, key) by a hash of key, holdout of them held out); per pair the training objective, train and held-out error (equal weights; _samples per row), theta_est, rounds and seconds; recommended marks the smallest n_global + n_local whose held-out error is at most within x (held-out total variance) above the best pair''s and whose theta_est >= min_theta; fit options pass to perpca_train (NULL = its default)';
