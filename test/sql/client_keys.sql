-- client_keys: a model matches every one of its own rows, whatever the type
-- of their key.  Keys are written by the key type's output function under
-- fixed settings (ISO dates, UTC, ...), numeric without trailing zeros, so
-- that boolean, inet, numeric of any scale, dates and timestamps read under
-- another TimeZone and DateStyle, uuid, text and composites all match.
CREATE SCHEMA keys;
SET search_path = keys, public;
SET TimeZone = 'UTC';
CREATE TYPE keys.pair AS (n int, tag text);
CREATE TABLE keys.r AS
SELECT i, g,
       g % 2 = 0 AS kb,
       ('10.0.0.' || g)::inet AS ki,
       CASE WHEN i % 2 = 0 THEN 1.0 ELSE 1.00 END + g AS kn,
       DATE '2024-01-01' + g AS kd,
       TIMESTAMPTZ '2024-01-01 23:30:00+00' + g * INTERVAL '1 day' AS kt,
       ('00000000-0000-0000-0000-00000000000' || g)::uuid AS ku,
       'key ' || g AS kx,
       ROW(g, 'k' || g)::keys.pair AS kc,
       ARRAY[sin(i), cos(1.3 * i), sin(0.7 * i) + g, cos(2.1 * i) * g, sin(0.3 * i) * cos(i)]::float8[] AS x
  FROM generate_series(1, 400) i, LATERAL (SELECT i % 4 AS g) s;
-- One model per key type, trained in UTC.
SELECT string_agg(model_name, ' ' ORDER BY model_name) AS trained
  FROM unnest(ARRAY['kb', 'ki', 'kn', 'kd', 'kt', 'ku', 'kx', 'kc']) AS k,
       LATERAL perpca_train('keys.m_' || k, format('SELECT %I, x FROM keys.r', k), n_global => 1, n_local => 1);
-- The keys as the models store them.
SELECT 'kb' AS k, string_agg(client, ' | ' ORDER BY client) FROM m_kb_clients
UNION ALL SELECT 'kn', string_agg(client, ' | ' ORDER BY client) FROM m_kn_clients
UNION ALL SELECT 'kd', string_agg(client, ' | ' ORDER BY client) FROM m_kd_clients
UNION ALL SELECT 'kt', string_agg(client, ' | ' ORDER BY client) FROM m_kt_clients
UNION ALL SELECT 'kc', string_agg(client, ' | ' ORDER BY client) FROM m_kc_clients;
-- Read in another zone and date style: every row finds its client.
SET TimeZone = 'Europe/Paris';
SET DateStyle = 'SQL, DMY';
SET extra_float_digits = 0;
SELECT count(*) FILTER (WHERE perpca_model_error('m_kb', kb, x, unknown => 'error') IS NOT NULL) AS kb,
       count(*) FILTER (WHERE perpca_model_error('m_ki', ki, x, unknown => 'error') IS NOT NULL) AS ki,
       count(*) FILTER (WHERE perpca_model_error('m_kn', kn, x, unknown => 'error') IS NOT NULL) AS kn,
       count(*) FILTER (WHERE perpca_model_error('m_kd', kd, x, unknown => 'error') IS NOT NULL) AS kd,
       count(*) FILTER (WHERE perpca_model_error('m_kt', kt, x, unknown => 'error') IS NOT NULL) AS kt,
       count(*) FILTER (WHERE perpca_model_error('m_ku', ku, x, unknown => 'error') IS NOT NULL) AS ku,
       count(*) FILTER (WHERE perpca_model_error('m_kx', kx, x, unknown => 'error') IS NOT NULL) AS kx,
       count(*) FILTER (WHERE perpca_model_error('m_kc', kc, x, unknown => 'error') IS NOT NULL) AS kc
  FROM keys.r;
-- numeric 1.00 and 1.0 are one key, whatever scale the caller writes.
SELECT perpca_model_error('m_kn', 2.000, x, unknown => 'error') = perpca_model_error('m_kn', 2.0, x, unknown => 'error') AS same
  FROM keys.r WHERE i = 1;
-- Evaluation and a refresh in this zone find the same clients.
SELECT count(*) AS clients, bool_and(known) AS all_known
  FROM perpca_evaluate('m_kt', 'SELECT kt, x FROM keys.r');
SELECT outcome FROM perpca_refresh('m_kt');
SELECT outcome FROM perpca_refresh('m_kd');
RESET TimeZone;
RESET DateStyle;
RESET extra_float_digits;
SELECT perpca_drop('keys.m_' || k) FROM unnest(ARRAY['kb', 'ki', 'kn', 'kd', 'kt', 'ku', 'kx', 'kc']) AS k;
DROP SCHEMA keys CASCADE;
RESET search_path;
