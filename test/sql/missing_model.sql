--
-- Rows with missing coordinates on a stored model: missing => 'observed'
-- scores a row by the posterior mean under the model's probabilistic PCA
-- form, perpca_model_impute fills the gaps with their conditional
-- expectation; both against numpy (test/fixtures/gen_missing.py, which
-- conditions the d x d Gaussian), on the model m_client of test/sql/model.sql.
--
CREATE SCHEMA perpca_missing_model;
SET search_path = perpca_missing_model, public;
SET extra_float_digits = 0;
\i test/include/compare.sql
\i test/include/row_helpers.sql

CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/project_obs.csv' csv header
CREATE TABLE rows (client text, obs int, x float8[]);
\copy rows from 'test/data/missing_model_rows.csv' csv header
CREATE TABLE expected (client text, obs int, observed int, scores float8[], reconstruct float8[],
                       error float8, impute float8[]);
\copy expected from 'test/data/missing_model_expected.csv' csv header

SELECT model_name, d, n_clients
  FROM perpca_train('m_client', $$SELECT client, perpca_stats(x) FROM obs WHERE client <> 'new' GROUP BY client$$,
                    2, 2, tolerance => 1e-11, center => 'client');

-- observed(x): how many elements are neither NULL, NaN nor infinite
CREATE FUNCTION observed(x float8[]) RETURNS int LANGUAGE sql IMMUTABLE AS $$
    SELECT count(*)::int FROM unnest(x) v WHERE v IS NOT NULL AND v NOT IN ('NaN', 'Infinity', '-Infinity')
$$;
SELECT observed, count(*) AS rows FROM rows JOIN expected USING (client, obs) GROUP BY 1 ORDER BY 1;
SELECT bool_and(observed(r.x) = e.observed) AS fixture_consistent FROM rows r JOIN expected e USING (client, obs);

-- Against numpy: scores (up to the components' signs), reconstruction, the
-- error on the observed coordinates and the imputation.  Rows with fewer
-- observed coordinates than components (4, or 2 for the unseen client) are NULL.
SET client_min_messages = warning;
CREATE TABLE got AS
SELECT r.client, r.obs,
       perpca_model_scores('m_client', r.client, r.x, missing => 'observed') AS scores,
       perpca_model_reconstruct('m_client', r.client, r.x, missing => 'observed') AS reconstruct,
       perpca_model_error('m_client', r.client, r.x, missing => 'observed') AS error,
       perpca_model_residual('m_client', r.client, r.x, missing => 'observed') AS residual,
       perpca_model_global_part('m_client', r.client, r.x, missing => 'observed') AS global_part,
       perpca_model_local_part('m_client', r.client, r.x, missing => 'observed') AS local_part,
       perpca_model_impute('m_client', r.client, r.x) AS impute
  FROM rows r;
RESET client_min_messages;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE e.scores IS NULL) AS too_few,
       bool_and((g.scores IS NULL) = (e.scores IS NULL)) AS null_when_too_few,
       bool_and(g.scores IS NULL OR arrays_close(absolute(g.scores), absolute(e.scores), 1e-7)) AS scores,
       bool_and(g.reconstruct IS NULL OR arrays_close(g.reconstruct, e.reconstruct, 1e-7)) AS reconstruct,
       bool_and(g.error IS NULL OR close(g.error, e.error, 1e-6)) AS error,
       bool_and(arrays_close(g.impute, e.impute, 1e-7)) AS impute
  FROM got g JOIN expected e USING (client, obs);
-- observed elements come back bit for bit; the gaps are filled with finite values
SELECT bool_and(r.x[j] = g.impute[j]) FILTER (WHERE r.x[j] IS NOT NULL AND r.x[j] NOT IN ('NaN', 'Infinity', '-Infinity')) AS observed_unchanged,
       bool_and(g.impute[j] NOT IN ('NaN', 'Infinity', '-Infinity') AND g.impute[j] IS NOT NULL) AS all_finite,
       count(*) FILTER (WHERE r.x[j] IS NULL OR r.x[j] IN ('NaN', 'Infinity', '-Infinity')) AS filled
  FROM rows r JOIN got g USING (client, obs), generate_subscripts(r.x, 1) j;
-- the parts add up to the reconstruction; the residual is NULL exactly at the gaps
SELECT bool_and(arrays_close(add(g.global_part, g.local_part), g.reconstruct, 1e-12)) AS parts_add_up,
       bool_and(array_positions(g.residual, NULL) =
                ARRAY(SELECT j FROM generate_subscripts(r.x, 1) j
                       WHERE r.x[j] IS NULL OR r.x[j] IN ('NaN', 'Infinity', '-Infinity') ORDER BY j)) AS residual_gaps,
       bool_and(close(g.error, (SELECT sum(v * v) FROM unnest(g.residual) v), 1e-12)) AS error_is_observed_residual
  FROM rows r JOIN got g USING (client, obs) WHERE g.scores IS NOT NULL;
-- imputation at the gaps is the reconstruction there
SELECT bool_and(g.impute[j] = g.reconstruct[j]) AS impute_is_reconstruction
  FROM rows r JOIN got g USING (client, obs), generate_subscripts(r.x, 1) j
 WHERE g.reconstruct IS NOT NULL AND (r.x[j] IS NULL OR r.x[j] IN ('NaN', 'Infinity', '-Infinity'));
-- a complete row under 'observed': the projection's scores, each shrunk by l_k / lambda_k < 1
SELECT bool_and(abs(p) < abs(s) AND sign(p) = sign(s)) AS shrunk
  FROM (SELECT perpca_model_scores('m_client', client, x, missing => 'observed') AS po,
               perpca_model_scores('m_client', client, x) AS so
          FROM obs WHERE client <> 'new' AND obs <= 3) q, unnest(po, so) u(p, s);

-- One counted NOTICE per call site and query for the rows scored NULL.
SELECT count(*) AS rows, count(s) AS scored
  FROM (SELECT perpca_model_scores('m_client', client, x, missing => 'observed') AS s FROM rows) q;
SELECT count(e) AS scored FROM (SELECT perpca_model_error('m_client', client, x, 'global', 'observed') AS e FROM rows WHERE client = 'a') q;

-- The default, missing => 'error': the element, its position and d, and a hint;
-- the same words as perpca_stats.
\set VERBOSITY default
SELECT perpca_model_scores('m_client', 'a', '{1,2,NULL,4,5,6,7,8}');
SELECT perpca_model_error('m_client', 'a', '{1,2,3,4,5,6,7,NaN}', missing => 'error');
SELECT perpca_model_residual('m_client', 'a', '{-Infinity,2,3,4,5,6,7,8}');
\set VERBOSITY terse
SELECT perpca_model_scores('m_client', 'a', '{1,2,NULL,4,5,6,7,8}', missing => 'ignore');
SELECT perpca_model_scores('m_client', 'a', '{1,2,NULL,4,5,6,7,8}', missing => NULL) IS NULL AS strict;
SELECT perpca_model_impute('m_client', 'a', '{1,2,NULL,4,5,6,7}');
SELECT perpca_model_impute('m_client', 'a', '{{1,2},{NULL,4}}');
SELECT perpca_model_impute('m_client', 'zzz', '{1,2,NULL,4,5,6,7,8}', unknown => 'error');
\set VERBOSITY default

-- perpca_model_monitor reads its row under the same option: the error names
-- the element and the client, with a hint; 'skip' gives NULL for a row with
-- a gap and one NOTICE counts them; 'observed' is refused (limits are those
-- of complete rows).
SELECT * FROM perpca_model_monitor('m_client', 'a', '{1,2,NULL,4,5,6,7,8}');
SELECT * FROM perpca_model_monitor('m_client', 'a'::varchar, '{1,2,NaN,4,5,6,7,8}', 0.05, 'error');
SELECT count(*) AS rows, count(*) FILTER (WHERE observed(r.x) < 8) AS with_gaps,
       bool_and((m.q IS NULL) = (observed(r.x) < 8)) AS null_where_gaps
  FROM rows r, perpca_model_monitor('m_client', r.client, r.x, missing => 'skip') m;
\set VERBOSITY terse
SELECT * FROM perpca_model_monitor('m_client', 'a', '{1,2,3,4,5,6,7,8}', missing => 'observed');
\set VERBOSITY default

-- Client keys of any type, as the other row functions.
SELECT arrays_close(perpca_model_impute('m_client', 'a'::varchar, x), perpca_model_impute('m_client', 'a', x), 0) AS any_key_type
  FROM rows WHERE client = 'a' AND obs = 2;
-- a complete row comes back unchanged
SELECT perpca_model_impute('m_client', 'a', x) = x AS complete_unchanged FROM obs WHERE client = 'a' AND obs = 9;

-- A fit over statistics that skipped rows: one NOTICE, and perpca_last_fit()
-- counts them; the model is the one of the complete rows, bit for bit.
CREATE TABLE gappy AS
SELECT client, obs, CASE WHEN obs % 10 = 0 THEN ARRAY[NULL::float8] || x[2:8]
                         WHEN obs % 25 = 0 THEN x[1:7] || 'NaN'::float8 ELSE x END AS x
  FROM obs WHERE client <> 'new';
SELECT model_name, n_clients
  FROM perpca_train('m_skip', $$SELECT client, perpca_stats(x, 'skip') FROM gappy GROUP BY client$$,
                    2, 2, tolerance => 1e-11, center => 'client');
SELECT rows_skipped, (SELECT count(*) FROM gappy WHERE observed(x) < 8) AS incomplete_rows FROM perpca_last_fit();
SELECT model_name FROM perpca_train('m_complete', $$SELECT client, perpca_stats(x) FROM gappy WHERE observed(x) = 8 GROUP BY client$$,
                    2, 2, tolerance => 1e-11, center => 'client');
SELECT rows_skipped FROM perpca_last_fit();
SELECT count(*) AS components, bool_and(a.pc = b.pc AND a.variance = b.variance) AS identical
  FROM m_skip_components a JOIN m_complete_components b USING (kind, client, component);
-- a client whose every row was skipped: named in a NOTICE and left out (0.3.0: an error)
\set VERBOSITY default
SELECT count(*) AS components, count(*) FILTER (WHERE client = 'a') AS of_a, count(DISTINCT client) AS clients
  FROM perpca_fit($$SELECT client, perpca_stats(CASE WHEN client = 'a' THEN x || NULL::float8 ELSE x || 1.0::float8 END, 'skip')
                    FROM gappy GROUP BY client$$, 2, 2);
\set VERBOSITY terse

-- Masked evaluation: hide a share of the observed entries at random (seeded), fill them,
-- compare with the client's mean.
CREATE TABLE ev AS SELECT * FROM perpca_evaluate_imputation('m_client', 'SELECT client, x FROM perpca_missing_model.obs', 0.2, 7);
SELECT client, n, hidden BETWEEN 0.1 * 8 * n AND 0.3 * 8 * n AS about_share, ratio < 1 AS beats_mean,
       round(ratio::numeric, 2) AS ratio
  FROM ev ORDER BY client;
-- the same seed hides the same entries whatever the order of the rows (the sums differ in
-- their last bits), another seed others
CREATE FUNCTION ev_text(model text, query text, seed bigint) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(concat_ws(' ', client, n, hidden, round(error::numeric, 9), round(mean_error::numeric, 9)), '; ' ORDER BY client)
      FROM perpca_evaluate_imputation(model, query, 0.2, seed)
$$;
SET client_min_messages = warning;
SELECT ev_text('m_client', 'SELECT client, x FROM perpca_missing_model.obs', 7) =
       ev_text('m_client', 'SELECT client, x FROM perpca_missing_model.obs ORDER BY obs DESC, client', 7) AS order_free,
       ev_text('m_client', 'SELECT client, x FROM perpca_missing_model.obs', 7) <>
       ev_text('m_client', 'SELECT client, x FROM perpca_missing_model.obs', 8) AS seed_matters;
RESET client_min_messages;
-- rows with their own gaps: only observed entries are hidden and scored; keys of any type
SELECT client, n, hidden <= 8 * n AS bounded
  FROM perpca_evaluate_imputation('m_client', 'SELECT client::varchar, x FROM perpca_missing_model.rows', 0.5)
 ORDER BY client;
SELECT perpca_evaluate_imputation('m_client', 'SELECT client, x FROM perpca_missing_model.obs', 1.5);
SELECT perpca_evaluate_imputation('m_client', 'SELECT client, obs FROM perpca_missing_model.obs');
SELECT perpca_evaluate_imputation('m_client', 'SELECT NULL::text, x FROM perpca_missing_model.obs');

-- A scaled model (scale => 'standard') fills gaps as the unscaled model of the
-- data divided by its scale factors does, times the factors.  Both fits run to
-- 1e-13: two separately converged fits agree only to what their tolerance and
-- the eigengap allow (at 1e-11 the fills differ by up to 5e-9 when the two
-- take different paths).
SET client_min_messages = warning;
CREATE TABLE sobs AS
SELECT client, obs, ARRAY(SELECT v * j * j FROM unnest(x) WITH ORDINALITY u(v, j) ORDER BY j) AS x
  FROM obs WHERE client <> 'new';
SELECT model_name FROM perpca_train('m_scaled', $$SELECT client, perpca_stats(x) FROM sobs GROUP BY client$$,
                                    2, 2, tolerance => 1e-13, scale => 'standard');
CREATE TABLE dobs AS
SELECT client, obs, ARRAY(SELECT v / f FROM unnest(x, (SELECT scale_factors FROM m_scaled_info)) u(v, f)) AS x FROM sobs;
SELECT model_name FROM perpca_train('m_divided', $$SELECT client, perpca_stats(x) FROM dobs GROUP BY client$$,
                                    2, 2, tolerance => 1e-13);
SELECT max(abs(a - b * f) / greatest(abs(a), 1)) < 1e-9 AS scaled_impute,
       (SELECT max(abs(p - q)) < 1e-9
          FROM sobs s JOIN dobs d USING (client, obs),
               unnest(perpca_model_scores('m_scaled', s.client, s.x[1:2] || NULL::float8 || s.x[4:8], missing => 'observed'),
                      perpca_model_scores('m_divided', d.client, d.x[1:2] || NULL::float8 || d.x[4:8], missing => 'observed')) v(p, q)
         WHERE s.obs < 20) AS scaled_scores
  FROM (SELECT perpca_model_impute('m_scaled', s.client, s.x[1:2] || NULL::float8 || s.x[4:5] || 'NaN'::float8 || s.x[7:8]) AS ia,
               perpca_model_impute('m_divided', d.client, d.x[1:2] || NULL::float8 || d.x[4:5] || 'NaN'::float8 || d.x[7:8]) AS ib
          FROM sobs s JOIN dobs d USING (client, obs) WHERE s.obs < 20) q,
       unnest(ia, ib, (SELECT scale_factors FROM m_scaled_info)) u(a, b, f);
SELECT perpca_drop('perpca_missing_model.m_scaled');
SELECT perpca_drop('perpca_missing_model.m_divided');
RESET client_min_messages;

RESET ALL;
SELECT perpca_drop('perpca_missing_model.m_skip');
SELECT perpca_drop('perpca_missing_model.m_complete');
SELECT perpca_drop('perpca_missing_model.m_client');
DROP SCHEMA perpca_missing_model CASCADE;
