--
-- The one row contract (src/row_reader.c, docs/missing-values.md): every
-- function that reads rows takes the same input forms and the same option
-- missing => 'error' | 'skip' | 'observed'; skipped rows are counted the same
-- way; groups that contribute nothing (no rows left, no variance) are named
-- in a NOTICE, never an error.
--
CREATE SCHEMA perpca_missing_rows;
SET search_path = perpca_missing_rows, public;
SET extra_float_digits = 0;

-- 4 groups of 3 features; g1 has 2 rows with a gap, 'gaps' has only rows
-- with gaps (empty after skipping), 'one' has one row (no variance).
CREATE TABLE t (g text, a float8, b int, c numeric, x float8[], xi int[], xn numeric[]);
INSERT INTO t
SELECT 'g' || (i % 3), sin(i), (i * 7) % 11, round(cos(i * 1.3)::numeric, 4),
       ARRAY[sin(i), (i * 7) % 11, round(cos(i * 1.3)::numeric, 4)],
       ARRAY[(i * 3) % 7, (i * 7) % 11, (i * 5) % 13],
       ARRAY[round(sin(i)::numeric, 3), (i * 7) % 11, round(cos(i * 1.3)::numeric, 4)]
  FROM generate_series(1, 60) AS i;
UPDATE t SET a = NULL, x[1] = NULL, xi[1] = NULL, xn[1] = NULL WHERE g = 'g1' AND b IN (3, 5);
INSERT INTO t VALUES ('gaps', NULL, 1, 2, ARRAY[NULL, 1, 2], ARRAY[NULL, 1, 2], ARRAY[NULL, 1, 2]),
                     ('gaps', 1, NULL, 2, ARRAY[1, NULL, 2], ARRAY[1, NULL, 2], ARRAY[1, NULL, 2]),
                     ('one', 1, 2, 3, ARRAY[1, 2, 3], ARRAY[1, 2, 3], ARRAY[1, 2, 3]);
SELECT count(*) FILTER (WHERE a IS NULL OR b IS NULL) AS rows_with_gaps FROM t;

-- Runs a statement; its SQLSTATE and message, or 'ok'.
CREATE FUNCTION outcome(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text;
    msg text;
    hint text;
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
    RETURN state || ': ' || msg || coalesce(' / ' || nullif(hint, ''), '');
END
$$;

-- ------------------------------------------------------------------------
-- 1. Every reader of rows, with gaps, in each mode
-- ------------------------------------------------------------------------

-- The aggregate: its positional form; 'observed' is refused at once.
SELECT perpca_count(perpca_stats(x, 'skip')) AS n, perpca_skipped(perpca_stats(x, 'skip')) AS skipped FROM t;
SELECT outcome($q$SELECT perpca_stats(x) FROM perpca_missing_rows.t$q$) AS aggregate_error;
SELECT outcome($q$SELECT perpca_stats(x, 'observed') FROM perpca_missing_rows.t$q$) AS aggregate_observed;

-- A fit of rows of every form: 'error' names the element and the function's option,
-- 'skip' counts (perpca_last_fit().rows_skipped), 'observed' is refused before a row is read.
SELECT outcome($q$SELECT * FROM perpca_fit('SELECT g, x FROM perpca_missing_rows.t', 1, 1)$q$) AS fit_error;
SELECT form, count(*) AS components, (SELECT rows_skipped FROM perpca_last_fit()) AS rows_skipped
  FROM (VALUES ('float8[]', 'SELECT g, x FROM perpca_missing_rows.t'),
               ('int[]', 'SELECT g, xi FROM perpca_missing_rows.t'),
               ('numeric[]', 'SELECT g, xn FROM perpca_missing_rows.t'),
               ('columns', 'SELECT g, a, b, c FROM perpca_missing_rows.t')) AS f(form, q)
 CROSS JOIN LATERAL perpca_fit(f.q, 1, 1, missing => 'skip') AS r
 GROUP BY form ORDER BY form;
SELECT outcome($q$SELECT * FROM perpca_fit('SELECT g, x FROM perpca_missing_rows.t', 1, 1, missing => 'observed')$q$) AS fit_observed;
SELECT outcome($q$SELECT * FROM perpca_fit('SELECT g, x FROM perpca_missing_rows.t', 1, 1, missing => 'fill')$q$) AS fit_bad_mode;

-- Train from feature columns: the same three answers, the mode recorded.
SELECT outcome($q$SELECT * FROM perpca_train('perpca_missing_rows.m_err', 'SELECT g, a, b, c FROM perpca_missing_rows.t', 1, 1)$q$) AS train_error;
SELECT outcome($q$SELECT * FROM perpca_train('perpca_missing_rows.m_obs', 'SELECT g, a, b, c FROM perpca_missing_rows.t', 1, 1, missing => 'observed')$q$) AS train_observed;
SELECT model_name, d, n_clients FROM perpca_train('m', 'SELECT g, a, b, c FROM t', 1, 1, missing => 'skip');
SELECT rows_skipped, options ->> 'missing' AS fit_missing FROM perpca_last_fit();
SELECT options ->> 'missing' AS recorded, feature_names FROM m_info;
SELECT client, n, total_variance = 0 AS flat, global_ratio IS NULL AS no_ratio FROM m_clients ORDER BY client;

-- Train from statistics: the statistics carry their own choice (perpca_skipped).
SELECT model_name, n_clients FROM perpca_train('m_stats', 'SELECT g, perpca_stats(x, ''skip'') FROM t GROUP BY g', 1, 1);
SELECT rows_skipped FROM perpca_last_fit();
SELECT outcome($q$SELECT * FROM perpca_train('perpca_missing_rows.m_s2', 'SELECT g, perpca_stats(x, ''skip'') FROM perpca_missing_rows.t GROUP BY g', 1, 1, missing => 'observed')$q$) AS train_stats_observed;

-- Refresh reads with the recorded mode: a new gap is skipped, not an error.
INSERT INTO t VALUES ('g2', 0.5, NULL, 1, ARRAY[0.5, NULL, 1], ARRAY[1, NULL, 1], ARRAY[0.5, NULL, 1]);
SELECT outcome, clients, rows, clients_dropped FROM perpca_refresh('m', warm => false);
SELECT rows_skipped FROM perpca_last_fit();

-- Choose ranks.
SELECT outcome($q$SELECT * FROM perpca_choose_ranks('SELECT g, x, a FROM perpca_missing_rows.t', global_ranks => '{1}', local_ranks => '{0}')$q$) AS ranks_error;
-- the rows left out are counted in the result (0.3.0: a NOTICE only)
SELECT n_global, n_local, skipped, heldout_skipped FROM perpca_choose_ranks('SELECT g, xn, b FROM t', heldout => 'SELECT g, xn FROM t',
                                                  global_ranks => '{1}', local_ranks => '{0,1}', missing => 'skip');
SELECT outcome($q$SELECT * FROM perpca_choose_ranks('SELECT g, x, a FROM perpca_missing_rows.t', missing => 'observed')$q$) AS ranks_observed;

-- Personalize every client of a query of rows (perpca_personalize_clients,
-- 0.4.0; perpca_personalize's statistics carry the aggregate's choice): one
-- row per client, the same three answers.  A 3-argument call of
-- perpca_personalize with untyped statistics still resolves (as in 0.3.0).
SELECT model_name FROM perpca_train('m_p', 'SELECT g, x FROM t WHERE g = ''g0''', 1, 1);
SELECT outcome($q$SELECT * FROM perpca_personalize_clients('perpca_missing_rows.m_p', 'SELECT g, x FROM perpca_missing_rows.t')$q$) AS personalize_error;
SELECT * FROM perpca_personalize_clients('m_p', 'SELECT g || ''_p'', a, b, c FROM t', missing => 'skip');
SELECT client, n, source FROM m_p_clients WHERE client LIKE '%\_p' ORDER BY client;
SELECT client, n, skipped, local_components FROM perpca_personalize_clients('m_p', 'SELECT g || ''_p'', perpca_stats(x, ''skip'') FROM t GROUP BY g', n_local => 0);
SELECT outcome($q$SELECT * FROM perpca_personalize_clients('perpca_missing_rows.m_p', 'SELECT g, x FROM perpca_missing_rows.t', missing => 'observed')$q$) AS personalize_observed;
SELECT count(*) AS untyped_stats FROM perpca_personalize('m_p', 'lit', 'v1 n=2 d=3 mean={1,2,3} mean_lo={0,0,0} m2={1,0,0,0,0,0}');

-- Evaluate and its summary: rows of every form, skipped counted per client.
SELECT outcome($q$SELECT * FROM perpca_evaluate('perpca_missing_rows.m', 'SELECT g, x FROM perpca_missing_rows.t')$q$) AS evaluate_error;
SELECT client, known, n, skipped, error IS NULL AS no_error FROM perpca_evaluate('m', 'SELECT g, xi FROM t', missing => 'skip') ORDER BY client;
SELECT clients, n, skipped FROM perpca_evaluate_summary('m', 'SELECT g, a, b, c FROM t', missing => 'skip');
SELECT outcome($q$SELECT * FROM perpca_evaluate('perpca_missing_rows.m', 'SELECT g, x FROM perpca_missing_rows.t', missing => 'observed')$q$) AS evaluate_observed;
SELECT outcome($q$SELECT * FROM perpca_evaluate_summary('perpca_missing_rows.m', 'SELECT g, x FROM perpca_missing_rows.t', missing => 'observed')$q$) AS summary_observed;

-- Evaluate imputation: 'observed' (its default) keeps gaps as gaps, 'skip' leaves such rows out, 'error' refuses them.
SELECT client, n, skipped FROM perpca_evaluate_imputation('m', 'SELECT g, a, b, c FROM t', 0.3, 7) ORDER BY client;
SELECT client, n, skipped FROM perpca_evaluate_imputation('m', 'SELECT g, xi FROM t', 0.3, 7, missing => 'skip') ORDER BY client;
SELECT outcome($q$SELECT * FROM perpca_evaluate_imputation('perpca_missing_rows.m', 'SELECT g, x FROM perpca_missing_rows.t', missing => 'error')$q$) AS imputation_error;

-- The row functions: 'skip' returns NULL for a row with a gap (one NOTICE counts them).
SELECT count(*) FILTER (WHERE s IS NULL) AS null_rows, count(*) AS rows
  FROM (SELECT perpca_model_scores('m', g, x, missing => 'skip') AS s FROM t WHERE g = 'g1') q;
SELECT count(*) FILTER (WHERE e IS NULL) AS null_rows, count(*) AS rows
  FROM (SELECT perpca_model_error('m', g, x, missing => 'observed') AS e FROM t WHERE g = 'g1') q;
SELECT outcome($q$SELECT perpca_model_error('perpca_missing_rows.m', g, x) FROM perpca_missing_rows.t$q$) AS row_error;

-- No wrapper SQL as CONTEXT on a user's error.
\set VERBOSITY default
SELECT * FROM perpca_evaluate('m', 'SELECT g, x FROM t');
SELECT * FROM perpca_train('m_ctx', 'SELECT g, a, b, c FROM t', 1, 1);
SELECT * FROM perpca_train('m_ctx', 'SELECT g, a / 0 FROM t', 1, 1);
SELECT * FROM perpca_personalize_clients('m', 'SELECT g, x FROM t');
SELECT * FROM perpca_personalize_clients('m', 'SELECT g, a / 0 FROM t');
SELECT * FROM perpca_personalize('m', 'new', (SELECT perpca_stats(x) FROM t WHERE g = 'g1'));
SELECT * FROM perpca_choose_ranks('SELECT g, x FROM t', heldout => 'SELECT g, x FROM t', global_ranks => '{1}', local_ranks => '{0}');
-- an error inside personalize's write (here a trigger of the model's owner) shows none of its internal SQL either
CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no new clients today'; END $$;
CREATE TRIGGER boom BEFORE INSERT ON m_p_clients FOR EACH ROW EXECUTE FUNCTION boom();
SELECT * FROM perpca_personalize('m_p', 'zz', (SELECT perpca_stats(x) FROM t WHERE g = 'g0'));
DROP TRIGGER boom ON m_p_clients;

-- ------------------------------------------------------------------------
-- 2. A group empty after skipping: train, refresh, personalize, impute, evaluate
-- ------------------------------------------------------------------------

-- 'gaps' was named at train and is not a client of the model.
SELECT count(*) AS gaps_clients FROM m_clients WHERE client = 'gaps';
-- A group that loses all its rows overnight: the refresh fits the others.
UPDATE t SET a = NULL WHERE g = 'g0';
SELECT outcome, clients, clients_dropped FROM perpca_refresh('m', warm => false);
SELECT string_agg(client, ',' ORDER BY client) AS clients FROM m_clients;
-- The same with statistics: NULL statistics, or n = 0.
SELECT model_name, n_clients FROM perpca_train('m_stats', 'SELECT g, CASE WHEN g = ''one'' THEN NULL ELSE perpca_stats(x, ''skip'') END FROM t GROUP BY g', 1, 1, replace => true);
SELECT outcome, clients FROM perpca_refresh('m_stats', warm => false);
-- Personalize from statistics with no rows, or from a query: a NOTICE, nothing stored.
SELECT * FROM perpca_personalize('m', 'gaps', (SELECT perpca_stats(x, 'skip') FROM t WHERE g = 'gaps'));
SELECT * FROM perpca_personalize_clients('m', 'SELECT g, x FROM t WHERE g = ''gaps''', missing => 'skip');
SELECT count(*) AS stored FROM m_clients WHERE client = 'gaps';
-- Impute and score it: a client the model does not know.
SELECT perpca_model_impute('m', 'gaps', ARRAY[NULL, 1, 2]::float8[]) IS NOT NULL AS imputed;
-- Evaluate: its row has n = 0 and NULL figures.
SELECT client, n, skipped, error IS NULL AS no_error FROM perpca_evaluate('m', 'SELECT g, x FROM t WHERE g = ''gaps''', missing => 'skip');
SELECT client, n, hidden, skipped FROM perpca_evaluate_imputation('m', 'SELECT g, x FROM t WHERE g = ''gaps''', missing => 'skip');

-- ------------------------------------------------------------------------
-- 3. A client without variance (one row) under missing => 'observed'
-- ------------------------------------------------------------------------

-- 0.3.0: 22000 "the model has no client global ratio".  Its rows are its centre.
SELECT perpca_model_scores('m', 'one', ARRAY[1, NULL, 3]::float8[], missing => 'observed') AS scores;
SELECT perpca_model_impute('m', 'one', ARRAY[NULL, NULL, 3]::float8[]) AS imputed;
SELECT perpca_model_reconstruct('m', 'one', ARRAY[5, 2, 3]::float8[], missing => 'observed') AS reconstructed;
SELECT client, n, hidden FROM perpca_evaluate_imputation('m', 'SELECT g, x FROM t WHERE g = ''one''', 0.5, 3);
-- Personalized from one row: stored, its ratios NULL, then scored.
SELECT count(*) AS components FROM perpca_personalize('m', 'single', (SELECT perpca_stats(x) FROM t WHERE g = 'one'));
SELECT n, total_variance, global_ratio IS NULL AS no_ratio FROM m_clients WHERE client = 'single';
SELECT perpca_model_impute('m', 'single', ARRAY[NULL, 2, NULL]::float8[]) AS imputed;

DROP SCHEMA perpca_missing_rows CASCADE;
