--
-- Control limits calibrated on held-out training rows: perpca_train(...,
-- calibration => share) and perpca_model_monitor(..., limits =>
-- 'calibrated'), on exchangeable heavy-tailed rows
-- (test/fixtures/gen_calibrated.py): the calibrated false-alarm rate is
-- within its binomial range where the Gaussian one is not; a client with
-- enough held-out rows is calibrated on its own, the others on the pooled
-- scores; the split is the same at every read; a refresh recomputes it.
--
CREATE SCHEMA perpca_calibrated;
SET search_path = perpca_calibrated, public;
SET extra_float_digits = 0;
CREATE TABLE rows (id serial, set text, client text, x float8[]);
\copy rows (set, client, x) from 'test/data/calibrated_rows.csv' csv header
CREATE TABLE train AS SELECT client, x FROM rows WHERE set = 'train';
CREATE TABLE fresh AS SELECT client, x FROM rows WHERE set = 'new';
SELECT set, count(*) FROM rows GROUP BY set ORDER BY set;

-- ---- a model holding out a fifth of its rows -------------------------------
-- (the Gaussian limits flag more than twice alpha of these heavy-tailed rows: a WARNING)
SELECT model_name, n_clients FROM perpca_train('cal', 'SELECT client, x FROM perpca_calibrated.train', 2, 1,
                                                calibration => 0.2);
-- the share and the split are recorded; the held-out rows are about a fifth, left out of the fit
SELECT calibration, calibration_split, calibration_rows BETWEEN 0.17 * 3150 AND 0.23 * 3150 AS a_fifth,
       (SELECT sum(n) FROM cal_clients) + calibration_rows AS all_rows
  FROM cal_info;
SELECT count(*) FILTER (WHERE heldout) = (SELECT calibration_rows FROM cal_info) AS view_agrees,
       count(*) FILTER (WHERE NOT heldout) = (SELECT sum(n) FROM cal_clients) AS fit_rows_agree
  FROM cal_calibration;
-- the source view aggregates the rows not held out, bound with the split
SELECT pg_get_viewdef('cal_source') ~ 'hash_record_extended' AS split_bound;
-- per client: "big" has enough held-out rows (>= 399) for its own scores, the others use the pooled ones
SELECT client, calibration_rows >= 399 AS own, calibration_scores IS NOT NULL AS stores_scores,
       cardinality(calibration_scores) = floor((calibration_rows + 1) * 0.25) AS keeps_enough
  FROM cal_clients ORDER BY client;
SELECT cardinality(calibration_scores) = floor((calibration_rows + 1) * 0.25) AS pooled_keeps_enough,
       (SELECT bool_and(a >= b) FROM unnest(calibration_scores[1:cardinality(calibration_scores) - 1],
                                            calibration_scores[2:]) AS u(a, b)) AS descending
  FROM cal_info;
-- the training rows each kind flags at alpha = 0.01: Gaussian above twice alpha, calibrated near alpha
SELECT flagged_gaussian > 0.02 AS gaussian_too_many,
       flagged_calibrated BETWEEN 0.005 AND 0.02 AS calibrated_near_alpha
  FROM cal_info;

-- ---- new rows of the same law ----------------------------------------------
-- At alpha = 0.01 the calibrated rate is within its binomial range (3,000
-- rows, about 630 calibration rows: 0.01 +- 4 sd of both), the Gaussian one is not.
CREATE TABLE judged AS
SELECT f.client, (perpca_model_monitor('cal', f.client, f.x, 0.01)).out_of_control AS gaussian,
       (perpca_model_monitor('cal', f.client, f.x, 0.01, limits => 'calibrated')).out_of_control AS calibrated
  FROM fresh f;
SELECT count(*) AS rows,
       avg(calibrated::int) BETWEEN 0.01 - 4 * sqrt(0.0099 * (1.0 / 3000 + 1.0 / 630))
                                AND 0.01 + 4 * sqrt(0.0099 * (1.0 / 3000 + 1.0 / 630)) AS calibrated_in_range,
       avg(gaussian::int) > 0.02 AS gaussian_too_many
  FROM judged;
-- the limits of both kinds are T^2 and Q limits; calibrated ones are the
-- limits at 0.01 times the conformal threshold: its own for "big", the pooled one for c1
CREATE FUNCTION threshold(scores float8[], n bigint, alpha float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$ SELECT scores[floor((n + 1) * alpha)::int] $$;
SELECT c.client, c.calibration_scores IS NOT NULL AS own,
       abs(k.t2_limit / g.t2_limit
           - CASE WHEN c.calibration_scores IS NOT NULL THEN threshold(c.calibration_scores, c.calibration_rows, 0.05)
                  ELSE threshold(i.calibration_scores, i.calibration_rows, 0.05) END) < 1e-9 AS threshold_t2,
       abs(k.q_limit / g.q_limit - k.t2_limit / g.t2_limit) < 1e-9 AS same_for_q
  FROM cal_clients c, cal_info i,
       LATERAL (SELECT x FROM fresh f WHERE f.client = c.client LIMIT 1) f,
       perpca_model_monitor('cal', c.client, f.x, 0.05, limits => 'calibrated') k,
       perpca_model_monitor('cal', c.client, f.x, 0.01) g
 WHERE c.client IN ('big', 'c1') ORDER BY c.client;
-- a smaller alpha, a higher threshold: fewer alarms
SELECT count(*) FILTER (WHERE (perpca_model_monitor('cal', client, x, 0.0025, limits => 'calibrated')).out_of_control)
       < (SELECT count(*) FILTER (WHERE calibrated) FROM judged) AS fewer
  FROM fresh;
-- an unseen client: Q against the global components, no limit of either kind
SELECT t2 IS NULL AS no_t2, q_limit IS NULL AS no_limit, out_of_control IS NULL AS not_judged
  FROM perpca_model_monitor('cal', 'unseen', (SELECT x FROM fresh LIMIT 1), limits => 'calibrated');

-- ---- errors -----------------------------------------------------------------
\set VERBOSITY default
\set ON_ERROR_STOP 0
-- a share outside (0, 1)
SELECT * FROM perpca_train('bad', 'SELECT client, x FROM perpca_calibrated.train', 2, 1, calibration => 1);
SELECT * FROM perpca_train('bad', 'SELECT client, x FROM perpca_calibrated.train', 2, 1, calibration => -0.1);
SELECT * FROM perpca_train('bad', 'SELECT client, x FROM perpca_calibrated.train', 2, 1, calibration => 'NaN');
-- statistics cannot be split
SELECT * FROM perpca_train('bad', 'SELECT client, perpca_stats(x) FROM perpca_calibrated.train GROUP BY client', 2, 1,
                           calibration => 0.2);
-- a model without calibration
SELECT model_name FROM perpca_train('plain', 'SELECT client, x FROM perpca_calibrated.train', 2, 1, calibration => 0);
SELECT * FROM perpca_model_monitor('plain', 'c1', (SELECT x FROM fresh LIMIT 1), limits => 'calibrated');
-- alpha outside the calibrated range, an unknown kind of limits
SELECT * FROM perpca_model_monitor('cal', 'c1', (SELECT x FROM fresh LIMIT 1), 0.001, limits => 'calibrated');
SELECT * FROM perpca_model_monitor('cal', 'c1', (SELECT x FROM fresh LIMIT 1), 0.3, limits => 'calibrated');
SELECT * FROM perpca_model_monitor('cal', 'c1', (SELECT x FROM fresh LIMIT 1), limits => 'empirical');
\set ON_ERROR_STOP 1
\set VERBOSITY terse
-- a model without calibration has no calibration view, no figures and no second pass
SELECT to_regclass('plain_calibration') IS NULL AS no_view, calibration IS NULL AND flagged_gaussian IS NULL AS no_figures
  FROM plain_info;
SELECT count(*) FILTER (WHERE calibration_rows IS NOT NULL) AS clients_calibrated FROM plain_clients;

-- ---- a refresh splits the same way and recomputes ----------------------------
CREATE TABLE before AS SELECT client, x, heldout FROM cal_calibration;
INSERT INTO train SELECT client, x FROM fresh WHERE client = 'c1';
SELECT outcome FROM perpca_refresh('cal');
SELECT count(*) AS old_rows, bool_and(b.heldout = c.heldout) AS same_split
  FROM before b JOIN (SELECT DISTINCT client, x, heldout FROM cal_calibration) c USING (client, x);
SELECT calibration_rows > (SELECT count(*) FILTER (WHERE heldout) FROM before) AS more_heldout,
       (SELECT calibration_rows FROM cal_clients WHERE client = 'c1')
         = (SELECT count(*) FROM cal_calibration WHERE heldout AND client = 'c1') AS c1_recounted
  FROM cal_info;
-- train again without calibration: its view goes
SELECT model_name FROM perpca_train('cal', 'SELECT client, x FROM perpca_calibrated.train', 2, 1, replace => true);
SELECT to_regclass('cal_calibration') IS NULL AS view_dropped, calibration IS NULL AS no_share FROM cal_info;
SELECT model_name FROM perpca_train('cal', 'SELECT client, x FROM perpca_calibrated.train', 2, 1, calibration => 0.2,
                                    replace => true);
SELECT perpca_drop('cal');
SELECT to_regclass('cal_calibration') IS NULL AND to_regclass('cal_source') IS NULL AS views_dropped;

RESET search_path;
DROP SCHEMA perpca_calibrated CASCADE;
