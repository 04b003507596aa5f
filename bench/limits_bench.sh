#!/usr/bin/env bash
# limits_bench.sh -- the false-alarm rate of perpca_model_monitor's two kinds
# of control limits on a real panel, and the chart of one country.
#
# The panel: the Summers-Heston data of Debian's r-cran-plm (125 countries,
# 1961-1985; bench/limits_panel.R: log GDP per head, its growth, population
# growth, savings rate), one client per country.  Its training period
# 1961-1980 is split at random 80/20 (setseed(SEED), default 0.47, in row order: the same split
# at every run); the model (1 + 1, scale 'standard') is trained on the 80%
# with calibration => 0.2 (a fifth of those rows held out to calibrate the
# limits), and the rows it never saw are monitored at alpha = 0.01 and 0.05:
#   held-out 20% of the training period  goal: calibrated 0.5%-2% at 0.01
#   the later period 1981-1985           no goal (serial correlation and
#                                        drift: not exchangeable)
# with the Gaussian figure beside each, and the model's own report (the share
# of its training rows each kind flags, <model>_info).
#
# With CHART=FILE.png it also draws one country's control chart with both
# kinds of limits (bench/limits_chart.py, python3-matplotlib).
#
# Connects with the usual libpq variables (PGHOST, PGPORT, PGUSER,
# PGDATABASE) to a server that has perpca installed, e.g. the cluster that
# `bash scripts/demo.sh --keep` leaves running.  Needs Rscript with
# r-cran-plm (apt-get install r-cran-plm).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
COUNTRY=${COUNTRY:-IRAN}
SEED=${SEED:-0.47}

Rscript "$HERE/limits_panel.R" "$TMP/panel.csv"
psql -X -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS perpca;
SELECT perpca_drop('limits_model', if_exists => true) \\gset
DROP TABLE IF EXISTS limits_panel;
CREATE TABLE limits_panel (country text, year int, x float8[], part text);
\copy limits_panel (country, year, x) from '$TMP/panel.csv' csv header
SELECT setseed($SEED) \\gset
WITH r AS (SELECT country, year, random() AS u FROM limits_panel WHERE year <= 1980 ORDER BY country, year)
UPDATE limits_panel p SET part = CASE WHEN r.u < 0.8 THEN 'train' ELSE 'test' END
  FROM r WHERE r.country = p.country AND r.year = p.year;
UPDATE limits_panel SET part = 'later' WHERE year > 1980;
SELECT part, count(*) AS rows FROM limits_panel GROUP BY part ORDER BY part;
SET client_min_messages = warning;
SELECT model_name, n_clients, converged
  FROM perpca_train('limits_model', 'SELECT country, x FROM public.limits_panel WHERE part = ''train''', 1, 1,
                    scale => 'standard', calibration => 0.2, replace => true);
\echo
\echo 'The report of the model on its training rows (alpha = 0.01):'
SELECT (SELECT sum(n) FROM limits_model_clients) AS fit_rows, calibration_rows AS held_out_rows,
       round((100 * flagged_gaussian)::numeric, 2) AS "gaussian %", round((100 * flagged_calibrated)::numeric, 2) AS "calibrated %"
  FROM limits_model_info;
\echo
\echo 'Rows the model never saw (goal: calibrated 0.5%-2% of the held-out 20% at alpha = 0.01):'
SELECT p.part, a.alpha, count(*) AS rows,
       round(100 * avg((perpca_model_monitor('limits_model', p.country, p.x, a.alpha)).out_of_control::int)::numeric, 2)
         AS "gaussian %",
       round(100 * avg((perpca_model_monitor('limits_model', p.country, p.x, a.alpha,
                                             limits => 'calibrated')).out_of_control::int)::numeric, 2) AS "calibrated %",
       CASE WHEN p.part = 'test' AND a.alpha = 0.01 THEN
            CASE WHEN avg((perpca_model_monitor('limits_model', p.country, p.x, a.alpha,
                                                limits => 'calibrated')).out_of_control::int) BETWEEN 0.005 AND 0.02
                 THEN 'met' ELSE 'not met' END END AS goal
  FROM limits_panel p, (VALUES (0.01), (0.05)) AS a(alpha)
 WHERE p.part IN ('test', 'later')
 GROUP BY p.part, a.alpha ORDER BY p.part DESC, a.alpha;
SQL

if [ -n "${CHART:-}" ]; then
	psql -X -q -v ON_ERROR_STOP=1 -c "\\copy (
SELECT p.year, p.part, g.t2, g.t2_limit, k.t2_limit AS t2_cal, g.q, g.q_limit, k.q_limit AS q_cal
  FROM limits_panel p,
       perpca_model_monitor('limits_model', p.country, p.x, 0.01) g,
       perpca_model_monitor('limits_model', p.country, p.x, 0.01, limits => 'calibrated') k
 WHERE p.country = '$COUNTRY' ORDER BY p.year) TO '$TMP/chart.csv' csv header"
	/usr/bin/python3 "$HERE/limits_chart.py" "$TMP/chart.csv" "$COUNTRY" "$CHART"
	echo "chart of $COUNTRY written to $CHART"
fi
psql -X -q -c "SELECT perpca_drop('limits_model')" -c "DROP TABLE limits_panel" >/dev/null
