--
-- Model administration (42_model_admin.sql, src/model_lock.c, src/personalize.c):
-- personalizing a client whose group has no variance (one row, or equal
-- rows: 0.2.0 failed with 22012 "division by zero"), and the errors of
-- personalize and drop.
--
CREATE TABLE adm_obs AS
SELECT 'c' || (i % 3) AS client, ARRAY[sin(i), cos(3 * i), sin(5 * i)]::float8[] AS x
  FROM generate_series(1, 60) AS i;
SELECT model_name FROM perpca_train('adm_m', 'SELECT client, perpca_stats(x) FROM adm_obs GROUP BY client', 1, 1);

-- One row, and five equal rows: local components are stored, the ratios are NULL, with a NOTICE.
SELECT component, array_length(pc, 1) AS d
  FROM perpca_personalize('adm_m', 'one', (SELECT perpca_stats(ARRAY[1, 2, 3]::float8[])));
SELECT component, array_length(pc, 1) AS d
  FROM perpca_personalize('adm_m', 'flat', (SELECT perpca_stats(ARRAY[1, 2, 3]::float8[]) FROM generate_series(1, 5)));
SELECT client, n, total_variance, global_ratio IS NULL AS no_ratio, source
  FROM adm_m_clients WHERE client IN ('one', 'flat') ORDER BY client;

-- Errors: a missing model, NULL arguments, a key of another type, another dimension.
\set VERBOSITY terse
SELECT * FROM perpca_personalize('adm_none', 'a', (SELECT perpca_stats(ARRAY[1, 2, 3]::float8[])));
SELECT * FROM perpca_personalize('adm_m', NULL::text, (SELECT perpca_stats(ARRAY[1, 2, 3]::float8[])));
SELECT * FROM perpca_personalize(NULL, 'a', (SELECT perpca_stats(ARRAY[1, 2, 3]::float8[])));
SELECT * FROM perpca_personalize('adm_m', 7, (SELECT perpca_stats(ARRAY[1, 2, 3]::float8[])));
SELECT * FROM perpca_personalize('adm_m', 'a', (SELECT perpca_stats(ARRAY[1, 2]::float8[])));
SELECT perpca_drop('adm_none');
SELECT perpca_drop('nosuchschema.adm_m');
SELECT perpca_drop('nosuchschema.adm_m', if_exists => true);
\set VERBOSITY default

-- No advisory lock is taken by a writer (0.2.0's could be taken by anyone).
BEGIN;
SELECT count(*) FROM perpca_personalize('adm_m', 'two', (SELECT perpca_stats(x) FROM adm_obs WHERE client = 'c1'));
SELECT count(*) AS advisory_locks FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;

SELECT perpca_drop('adm_m');
DROP TABLE adm_obs;

-- n_local = 0: a client personalized without local components is
-- described by the global components alone, about its centre; numpy's
-- global-only figures (test/fixtures/gen_personalize.py, on the data and
-- converged fits of gen_project.py, one model per center option).
CREATE TABLE adm_rows (client text, obs int, x float8[]);
\copy adm_rows from 'test/data/project_obs.csv' csv header
CREATE TABLE adm_exp (center text, obs int, global_part float8[], residual float8[], error float8,
                      abs_scores float8[]);
\copy adm_exp from 'test/data/personalize_global_only.csv' csv header
CREATE TABLE adm_exp_client (center text, total_variance float8, global_ratio float8, train_error float8);
\copy adm_exp_client from 'test/data/personalize_global_only_client.csv' csv header
CREATE FUNCTION adm_close(a float8[], b float8[], tol float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT array_dims(a) = array_dims(b)
       AND (SELECT max(abs(u.x - u.y)) <= tol * greatest(max(abs(u.y)), 1) FROM unnest(a, b) AS u(x, y))
$$;
SELECT count(*) AS models FROM (VALUES ('client'), ('global'), ('none')) AS c(center),
       LATERAL perpca_train('adm_' || center, $$SELECT client, perpca_stats(x) FROM adm_rows WHERE client <> 'new' GROUP BY client$$,
                            2, 2, tolerance => 1e-11, center => center);
-- Its old local components (from a personalize with the model's n_local) go.
SELECT count(*) AS local_components_before FROM perpca_personalize('adm_client', 'new', (SELECT perpca_stats(x) FROM adm_rows WHERE client = 'new'));
SELECT c.center, (SELECT count(*) FROM perpca_personalize('adm_' || c.center, 'new',
                                                           (SELECT perpca_stats(x) FROM adm_rows WHERE client = 'new'),
                                                           n_local => 0)) AS local_components
  FROM (VALUES ('client'), ('global'), ('none')) AS c(center) ORDER BY 1;
SELECT client, n, n_local, local_ratio, source FROM adm_client_clients WHERE client = 'new';
SELECT count(*) AS stored_local_components FROM adm_client_components WHERE client = 'new';
SELECT e.center, count(*) AS rows,
       bool_and(adm_close(perpca_model_global_part('adm_' || e.center, 'new', o.x), e.global_part, 1e-7)) AS global_part,
       bool_and(perpca_model_local_part('adm_' || e.center, 'new', o.x) = array_fill(0::float8, ARRAY[8])) AS local_part_zero,
       bool_and(adm_close(perpca_model_reconstruct('adm_' || e.center, 'new', o.x), e.global_part, 1e-7)) AS reconstruct,
       bool_and(adm_close(perpca_model_residual('adm_' || e.center, 'new', o.x), e.residual, 1e-7)) AS residual,
       bool_and(abs(perpca_model_error('adm_' || e.center, 'new', o.x) - e.error) <= 1e-7 * greatest(e.error, 1)) AS error,
       bool_and(adm_close(ARRAY(SELECT abs(s) FROM unnest(perpca_model_scores('adm_' || e.center, 'new', o.x)) AS s),
                          e.abs_scores, 1e-7)) AS abs_scores
  FROM adm_exp e JOIN adm_rows o ON o.client = 'new' AND o.obs = e.obs
 GROUP BY 1 ORDER BY 1;
SELECT e.center, abs(c.total_variance - e.total_variance) <= 1e-10 * e.total_variance AS total_variance,
       abs(c.global_ratio - e.global_ratio) <= 1e-8 AS global_ratio,
       abs(c.train_error - e.train_error) <= 1e-8 * e.train_error AS train_error
  FROM adm_exp_client e,
       LATERAL (SELECT * FROM adm_client_clients WHERE e.center = 'client' AND client = 'new' UNION ALL
                SELECT * FROM adm_global_clients WHERE e.center = 'global' AND client = 'new' UNION ALL
                SELECT * FROM adm_none_clients WHERE e.center = 'none' AND client = 'new') c
 ORDER BY 1;

-- A model with global components only: personalize takes its n_local (0).
SELECT model_name FROM perpca_train('adm_g', $$SELECT client, perpca_stats(x) FROM adm_rows WHERE client <> 'new' GROUP BY client$$,
                                    2, 0, tolerance => 1e-11, center => 'client');
SELECT count(*) AS local_components FROM perpca_personalize('adm_g', 'new', (SELECT perpca_stats(x) FROM adm_rows WHERE client = 'new'));
SELECT c.n_local, abs(c.train_error - e.err) <= 1e-10 * c.train_error AS mean_error_is_train_error
  FROM adm_g_clients c, (SELECT avg(perpca_model_error('adm_g', 'new', x)) AS err FROM adm_rows WHERE client = 'new') e
 WHERE c.client = 'new';

-- n_local out of 0 .. d - n_global: invalid_parameter_value.
\set VERBOSITY terse
SELECT * FROM perpca_personalize('adm_client', 'new', (SELECT perpca_stats(x) FROM adm_rows WHERE client = 'new'), n_local => -1);
SELECT * FROM perpca_personalize('adm_client', 'new', (SELECT perpca_stats(x) FROM adm_rows WHERE client = 'new'), n_local => 7);
\set VERBOSITY default
SELECT perpca_drop(m) FROM (VALUES ('adm_client'), ('adm_global'), ('adm_none'), ('adm_g')) AS v(m);
DROP FUNCTION adm_close(float8[], float8[], float8);
DROP TABLE adm_rows, adm_exp, adm_exp_client;
