--
-- Maintenance operations: from PostgreSQL 17 on, REFRESH MATERIALIZED VIEW
-- (like CREATE INDEX, VACUUM, ANALYZE and CLUSTER) runs with search_path
-- restricted to pg_catalog, pg_temp.  A materialized view of anomaly scores
-- over a model, and one of perpca_stats per client, with perpca in its own
-- schema and the data in another, refresh plain and CONCURRENTLY, whatever
-- the session's search_path; the refreshed rows equal a direct query.
-- The first view shows the search_path the refresh ran with: the session's on
-- 15 (maintenance.out), pg_catalog, pg_temp on 17 and 18 (maintenance_1.out).
-- (test/t/910_maintenance_cron.pl refreshes the same views from pg_cron.)
--
SELECT current_database() AS regress_db \gset
CREATE DATABASE perpca_maintenance;
\c perpca_maintenance
CREATE SCHEMA perpca;
CREATE EXTENSION perpca SCHEMA perpca;
CREATE SCHEMA app;
CREATE TABLE app.obs (client text, obs int, x float8[]);
\copy app.obs from 'test/data/project_obs.csv' csv header
DELETE FROM app.obs WHERE client = 'new';
CREATE TABLE app.feed AS SELECT client, obs, x FROM app.obs WHERE obs <= 100;
SET search_path = app, perpca, public;
SELECT model_name FROM perpca_train('app.m', 'SELECT client, perpca_stats(x) FROM app.feed GROUP BY client', 2, 2);

-- The search_path in effect where the view's query runs.
CREATE FUNCTION app.seen_search_path() RETURNS text LANGUAGE sql STABLE
    AS $$SELECT pg_catalog.current_setting('search_path')$$;
CREATE MATERIALIZED VIEW app.anomaly AS
SELECT client, obs, perpca_model_error('app.m', client, x) AS error,
       perpca_model_scores('app.m', client, x) AS scores,
       app.seen_search_path() AS search_path
  FROM app.feed;
CREATE UNIQUE INDEX ON app.anomaly (client, obs);
CREATE MATERIALIZED VIEW app.client_stats AS
SELECT client, perpca_stats(x) AS stats FROM app.feed GROUP BY client;
CREATE UNIQUE INDEX ON app.client_stats (client);

-- The rows of the views against the same functions called directly.
CREATE FUNCTION app.views_match() RETURNS TABLE (anomaly_rows bigint, anomaly_equal boolean,
                                                 stats_rows bigint, stats_equal boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT (SELECT count(*) FROM app.anomaly),
           (SELECT count(*) FROM app.feed f JOIN app.anomaly a USING (client, obs)
             WHERE a.error OPERATOR(pg_catalog.=) perpca.perpca_model_error('app.m', f.client, f.x)
               AND a.scores OPERATOR(pg_catalog.=) perpca.perpca_model_scores('app.m', f.client, f.x))
           OPERATOR(pg_catalog.=) (SELECT count(*) FROM app.feed),
           (SELECT count(*) FROM app.client_stats),
           (SELECT count(*) FROM (SELECT client, perpca.perpca_stats(x) AS stats FROM app.feed GROUP BY client) f
              JOIN app.client_stats s USING (client)
             WHERE s.stats::text OPERATOR(pg_catalog.=) f.stats::text)
           OPERATOR(pg_catalog.=) (SELECT count(DISTINCT client) FROM app.feed)
$$;
SELECT DISTINCT search_path FROM app.anomaly;
SELECT * FROM app.views_match();

-- New rows for every client, then a refresh from the session's own path.
INSERT INTO app.feed SELECT client, obs, x FROM app.obs WHERE obs BETWEEN 101 AND 120;
REFRESH MATERIALIZED VIEW app.anomaly;
REFRESH MATERIALIZED VIEW app.client_stats;
SELECT DISTINCT search_path FROM app.anomaly;
SELECT * FROM app.views_match();

-- A session that searches only pg_catalog: plain and CONCURRENTLY.
INSERT INTO app.feed SELECT client, obs, x FROM app.obs WHERE obs BETWEEN 121 AND 135;
SET search_path = pg_catalog;
REFRESH MATERIALIZED VIEW app.anomaly;
REFRESH MATERIALIZED VIEW app.client_stats;
SELECT * FROM app.views_match();
INSERT INTO app.feed SELECT client, obs, x FROM app.obs WHERE obs > 135;
REFRESH MATERIALIZED VIEW CONCURRENTLY app.anomaly;
REFRESH MATERIALIZED VIEW CONCURRENTLY app.client_stats;
SELECT DISTINCT search_path FROM app.anomaly;
SELECT * FROM app.views_match();

-- A new model version (refreshed by its query) reaches the view on its next
-- refresh; ANALYZE and VACUUM of the views run under the same restriction.
SELECT clients FROM perpca.perpca_refresh('app.m');
REFRESH MATERIALIZED VIEW CONCURRENTLY app.anomaly;
SELECT * FROM app.views_match();
ANALYZE app.anomaly, app.client_stats;
VACUUM app.anomaly, app.client_stats;
SELECT count(*) AS anomaly_rows FROM app.anomaly;

\c :regress_db
DROP DATABASE perpca_maintenance;
