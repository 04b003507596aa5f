--
-- Incremental statistics: a table of perpca_stats keyed by (client, period)
-- that a scheduled job appends to from the new rows only, perpca_merge
-- rolling the periods up.  The model's source query reads only that table,
-- so refreshing it never rescans the raw rows.
--
CREATE SCHEMA perpca_incremental;
SET search_path = perpca_incremental, public;
SET extra_float_digits = 0;
\i test/include/compare.sql

-- All rows (clients a..e, 150 rows each, d = 8); period p holds rows 25(p-1)+1 .. 25p.
CREATE TABLE obs (client text, obs int, x float8[]);
\copy obs from 'test/data/project_obs.csv' csv header
CREATE TABLE readings (id bigint GENERATED ALWAYS AS IDENTITY, client text NOT NULL, period int NOT NULL, x float8[]);
-- The statistics table, and where the job stopped reading.
CREATE TABLE readings_stats (client text, period int, stats perpca_stats NOT NULL, PRIMARY KEY (client, period));
CREATE TABLE readings_done (last_id bigint NOT NULL);
INSERT INTO readings_done VALUES (0);

-- The job: merge the statistics of the rows it has not read yet into their (client, period).
-- One statement; run it as often as you like (each row is read exactly once).
CREATE FUNCTION append_job() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    WITH batch AS (
        SELECT r.id, r.client, r.period, r.x FROM readings r, readings_done d WHERE r.id > d.last_id),
    done AS (
        UPDATE readings_done SET last_id = (SELECT max(id) FROM batch) WHERE EXISTS (SELECT FROM batch)),
    merged AS (
        INSERT INTO readings_stats (client, period, stats)
        SELECT client, period, perpca_stats(x) FROM batch GROUP BY client, period
        ON CONFLICT (client, period) DO UPDATE SET stats = perpca_merge(readings_stats.stats, excluded.stats)
        RETURNING 1)
    SELECT count(*) FROM merged
$$;

-- Rows arrive in batches that do not line up with the periods (so periods get merged into).
CREATE FUNCTION arrive(from_obs int, to_obs int) RETURNS void LANGUAGE sql VOLATILE AS $$
    INSERT INTO readings (client, period, x)
    SELECT client, (obs - 1) / 25 + 1, x FROM obs
     WHERE client <> 'new' AND obs BETWEEN from_obs AND to_obs ORDER BY obs, client
$$;
SELECT arrive(1, 40);
SELECT append_job() AS upserted;
SELECT append_job() AS upserted_again;
SELECT arrive(41, 60);
SELECT append_job() AS upserted;
SELECT period, count(*) AS clients, sum(perpca_count(stats)) AS rows FROM readings_stats GROUP BY 1 ORDER BY 1;

-- Each (client, period) holds exactly the statistics of its rows.
SELECT count(*) AS cells, bool_and(stats_close(s.stats, r.stats, 1e-12)) AS cells_match_raw
  FROM readings_stats s
  JOIN (SELECT client, period, perpca_stats(x) AS stats FROM readings GROUP BY 1, 2) r USING (client, period);

-- The model reads the statistics table only; rolling the periods up gives each client's statistics.
SELECT model_name, n_clients
  FROM perpca_train('inc', 'SELECT client, perpca_merge(stats) FROM perpca_incremental.readings_stats GROUP BY client', 2, 2);
SELECT client, n FROM inc_clients ORDER BY 1;

-- More rows arrive; the job appends them; the refresh sees all rows without reading them.
SELECT arrive(61, 150);
SELECT append_job() AS upserted;
SELECT outcome, clients, clients_added, clients_dropped, warm_start, converged FROM perpca_refresh('inc');
SELECT client, n FROM inc_clients ORDER BY 1;

-- The same model as a fit on the raw rows.
SELECT model_name FROM perpca_train('raw', 'SELECT client, perpca_stats(x) FROM perpca_incremental.readings GROUP BY client', 2, 2);
SELECT count(*) AS clients, bool_and(arrays_close(i.mean, r.mean, 1e-12)) AS means,
       bool_and(abs(i.total_variance - r.total_variance) <= 1e-10 * r.total_variance) AS total_variance
  FROM inc_clients i JOIN raw_clients r USING (client);
SELECT abs(i.objective - r.objective) <= 1e-8 * abs(r.objective) AS same_objective FROM inc_info i, raw_info r;

-- Compaction: roll periods 1..4 into period 0 in one statement; then period 5 into it as well.
WITH old AS (DELETE FROM readings_stats WHERE period BETWEEN 1 AND 4 RETURNING client, stats)
INSERT INTO readings_stats (client, period, stats)
SELECT client, 0, perpca_merge(stats) FROM old GROUP BY client
ON CONFLICT (client, period) DO UPDATE SET stats = perpca_merge(readings_stats.stats, excluded.stats);
WITH old AS (DELETE FROM readings_stats WHERE period = 5 RETURNING client, stats)
INSERT INTO readings_stats (client, period, stats)
SELECT client, 0, perpca_merge(stats) FROM old GROUP BY client
ON CONFLICT (client, period) DO UPDATE SET stats = perpca_merge(readings_stats.stats, excluded.stats);
SELECT period, count(*) AS clients, sum(perpca_count(stats)) AS rows FROM readings_stats GROUP BY 1 ORDER BY 1;
SELECT count(*) AS clients, bool_and(stats_close(s.stats, r.stats, 1e-11)) AS rollup_matches_raw
  FROM (SELECT client, perpca_merge(stats) AS stats FROM readings_stats GROUP BY 1) s
  JOIN (SELECT client, perpca_stats(x) AS stats FROM readings GROUP BY 1) r USING (client);

-- History is archived away: the raw rows are gone, a refresh still has all of them.
TRUNCATE readings;
SELECT clients, clients_dropped, converged FROM perpca_refresh('inc');
SELECT client, n FROM inc_clients ORDER BY 1;
SELECT abs(i.objective - r.objective) <= 1e-8 * abs(r.objective) AS same_objective_without_raw_rows
  FROM inc_info i, raw_info r;

-- A sliding window is a WHERE on the period in the source query.
SELECT model_name, n_clients
  FROM perpca_train('recent', 'SELECT client, perpca_merge(stats) FROM perpca_incremental.readings_stats WHERE period >= 6 GROUP BY client', 2, 2);
SELECT client, n FROM recent_clients ORDER BY 1;

-- The two-argument perpca_merge: NULLs are skipped, dimensions must agree.
SELECT perpca_count(perpca_merge(NULL, s1)) AS null_left, perpca_count(perpca_merge(s1, NULL)) AS null_right,
       stats_close(perpca_merge(s1, s2), s12, 1e-12) AS merge_is_union
  FROM (SELECT perpca_stats(x) FILTER (WHERE obs <= 75) AS s1, perpca_stats(x) FILTER (WHERE obs > 75) AS s2,
               perpca_stats(x) AS s12
          FROM obs WHERE client = 'a') s;
SELECT perpca_merge(perpca_stats(ARRAY[1, 2]::float8[]), perpca_stats(ARRAY[1, 2, 3]::float8[]));

SET client_min_messages = warning;
DROP SCHEMA perpca_incremental CASCADE;
RESET client_min_messages;
RESET search_path;
RESET extra_float_digits;
