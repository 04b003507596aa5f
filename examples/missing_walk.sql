-- The walk of examples/missing_walk.sh: every step with the gaps left in.
DROP TABLE IF EXISTS tx CASCADE;
CREATE EXTENSION IF NOT EXISTS perpca;
SELECT perpca_drop('tx_model', if_exists => true);
CREATE TABLE tx (city text, year int, month int, sales float8, volume float8, median float8,
                 listings float8, inventory float8, date float8) PARTITION BY RANGE (year);
CREATE TABLE tx_2000_2014 PARTITION OF tx FOR VALUES FROM (2000) TO (2015);
CREATE TABLE tx_2015 PARTITION OF tx FOR VALUES FROM (2015) TO (2016);
\copy tx FROM '@CSV@' CSV HEADER NULL ''
SELECT count(*) AS rows, count(DISTINCT city) AS cities,
       count(*) FILTER (WHERE sales IS NULL OR volume IS NULL OR median IS NULL OR listings IS NULL OR inventory IS NULL) AS rows_with_gaps
  FROM tx;
-- the training view: 2000-2014 without the held-back city, log units
CREATE VIEW train_rows AS
SELECT city, ln(1 + sales) AS sales, ln(1 + volume) AS volume, ln(1 + median) AS median, ln(1 + listings) AS listings, ln(1 + inventory) AS inventory
  FROM tx WHERE year < 2015 AND city <> 'Austin';
-- 1. choose ranks, gaps left in
SELECT n_global, n_local, round(heldout_explained_ratio::numeric, 4) AS heldout_ratio, round(theta_est::numeric, 3) AS theta, recommended, skipped, heldout_skipped, note
  FROM perpca_choose_ranks('SELECT city, sales, volume, median, listings, inventory FROM train_rows',
                           heldout => 'SELECT city, ln(1 + sales), ln(1 + volume), ln(1 + median), ln(1 + listings), ln(1 + inventory) FROM tx WHERE year = 2015 AND city <> ''Austin''',
                           global_ranks => '{1,2,3}', local_ranks => '{0,1,2}', missing => 'skip');
-- without the option: an error that names the element and the option (expected)
SELECT * FROM perpca_choose_ranks('SELECT city, sales, volume, median, listings, inventory FROM train_rows', heldout => 'SELECT city, sales, volume, median, listings, inventory FROM train_rows');
-- 2. train from columns
SELECT * FROM perpca_train('tx_model', 'SELECT city, sales, volume, median, listings, inventory FROM train_rows', 2, 1, missing => 'skip');
SELECT rows_skipped, options->>'missing' AS missing FROM perpca_last_fit();
SELECT count(*) AS clients, count(*) FILTER (WHERE global_ratio IS NULL) AS no_ratio FROM tx_model_clients;
-- 3. evaluate the held-out year
SELECT clients, n, skipped, round(explained_ratio::numeric, 4) AS explained FROM perpca_evaluate_summary('tx_model',
  'SELECT city, ln(1 + sales), ln(1 + volume), ln(1 + median), ln(1 + listings), ln(1 + inventory) FROM tx WHERE year = 2015 AND city <> ''Austin''', missing => 'skip');
SELECT client, n, skipped FROM perpca_evaluate('tx_model',
  'SELECT city, ln(1 + sales), ln(1 + volume), ln(1 + median), ln(1 + listings), ln(1 + inventory) FROM tx WHERE year = 2015', missing => 'skip') WHERE skipped > 0 OR n = 0;
-- imputation of the held-out year with its gaps
SELECT sum(n) AS rows, sum(hidden) AS hidden, round((sum(error * hidden) / sum(mean_error * hidden))::numeric, 3) AS ratio_to_centre
  FROM perpca_evaluate_imputation('tx_model', 'SELECT city, ln(1 + sales), ln(1 + volume), ln(1 + median), ln(1 + listings), ln(1 + inventory) FROM tx WHERE year = 2015 AND city <> ''Austin''', 0.2, 1);
-- 4. personalize the held-out city from its rows with gaps (feature columns, as train read them)
SELECT * FROM perpca_personalize_clients('tx_model',
  'SELECT city, ln(1 + sales), ln(1 + volume), ln(1 + median), ln(1 + listings), ln(1 + inventory) FROM tx WHERE city = ''Austin'' AND year < 2015',
  missing => 'skip');
SELECT client, n, round(global_ratio::numeric, 3) AS global_ratio, round(local_ratio::numeric, 3) AS local_ratio, source FROM tx_model_clients WHERE client = 'Austin';
-- score held-out rows with gaps
SELECT count(*) AS rows, count(s) AS scored FROM (SELECT perpca_model_scores('tx_model', city, ARRAY[ln(1 + sales), ln(1 + volume), ln(1 + median), ln(1 + listings), ln(1 + inventory)], missing => 'observed') AS s FROM tx WHERE year = 2015) q;
-- 5. refresh with the new year in (the view now includes it), gaps left in
CREATE OR REPLACE VIEW train_rows AS
SELECT city, ln(1 + sales) AS sales, ln(1 + volume) AS volume, ln(1 + median) AS median, ln(1 + listings) AS listings, ln(1 + inventory) AS inventory
  FROM tx WHERE city <> 'Austin';
SELECT outcome, clients, rows, clients_added, clients_dropped, converged FROM perpca_refresh('tx_model');
SELECT rows_skipped FROM perpca_last_fit();
-- a city loses all its rows overnight (every row has a gap): the refresh still fits
UPDATE tx SET inventory = NULL WHERE city = 'Abilene';
SELECT outcome, clients, rows, clients_added, clients_dropped FROM perpca_refresh('tx_model');
SELECT version, kind, outcome, clients, rows, clients_added, clients_dropped, converged FROM perpca_model_history('tx_model');
