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
