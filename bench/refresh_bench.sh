#!/usr/bin/env bash
# bench/refresh_bench.sh -- rounds and time of a warm refresh against a cold refit.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/refresh_bench.sh [rows] [d] [clients] [new_fraction]
#
# Builds a throwaway database perpca_refresh_bench with random rows of
# `clients` clients that share n_global = 3 directions and have n_local = 3
# of their own, and a statistics table keyed by (client, period).  It trains
# the model on the first periods, appends the statistics of the rows of a
# new period (new_fraction of the rows, default 0.1, plus one new client),
# then, best of 3 each:
#   cold   perpca_train(..., replace => true) with the recorded options
#   warm   perpca_refresh(model)  (the stored components one of the starts;
#          the statistics changed, so it fits: a refresh of unchanged
#          statistics fits nothing, see docs/operations.md)
# and prints rounds (perpca_last_fit) and milliseconds of both, and the ratio.
# The fits read only the statistics table, so the times are those of the
# rounds plus storing the model.  KEEP=1 keeps the database.
set -euo pipefail
ROWS=${1:-200000}
D=${2:-40}
CLIENTS=${3:-20}
NEW=${4:-0.1}
DB=perpca_refresh_bench
PSQL=(psql -X -q -v ON_ERROR_STOP=1)

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
"${PSQL[@]}" -d $DB <<SQL
CREATE EXTENSION perpca;
SELECT setseed(0.17);
-- shared directions G (3 x d) and per-client directions L_c (3 x d): random, not orthogonalized
CREATE TABLE dirs AS
SELECT k, c, ARRAY(SELECT random() - 0.5 FROM generate_series(1, $D) j WHERE k > -1 ORDER BY j) AS v
  FROM generate_series(1, 3) k, generate_series(-1, $CLIENTS) c;
CREATE TABLE obs AS
SELECT 'c' || c AS client,
       CASE WHEN i <= (1 - $NEW) * $ROWS / ($CLIENTS + 1) THEN 1 ELSE 2 END AS period,
       (SELECT array_agg(x ORDER BY j) FROM (
            SELECT j, sum(s.w * d.v[j]) + 0.3 * (random() - 0.5) AS x
              FROM generate_series(1, $D) j,
                   (SELECT k, c2, (random() - 0.5) * CASE WHEN c2 = -1 THEN 6 ELSE 3 END AS w
                      FROM generate_series(1, 3) k, (VALUES (-1), (c)) AS cc(c2)) s
              JOIN dirs d ON d.k = s.k AND d.c = s.c2
             GROUP BY j) r) AS x
  FROM generate_series(0, $CLIENTS) c, generate_series(1, $ROWS / ($CLIENTS + 1)) i;
CREATE TABLE obs_stats (client text, period int, stats perpca_stats NOT NULL, PRIMARY KEY (client, period));
-- period 1 of clients c0..c(N-1); client cN only appears in period 2
INSERT INTO obs_stats SELECT client, period, perpca_stats(x) FROM obs
 WHERE period = 1 AND client <> 'c$CLIENTS' GROUP BY 1, 2;
SELECT model_name, n_clients, rounds_run, converged FROM perpca_train('m',
    'SELECT client, perpca_merge(stats) FROM obs_stats GROUP BY client', 3, 3);
INSERT INTO obs_stats SELECT client, period, perpca_stats(x) FROM obs WHERE period = 2 GROUP BY 1, 2
    ON CONFLICT (client, period) DO UPDATE SET stats = perpca_merge(obs_stats.stats, excluded.stats);
SQL

# "rounds ms" of one run of a statement that fits (rounds of the session's last fit), rolled back.
run() {
	"${PSQL[@]}" -d $DB -At -F ' ' <<SQL | tail -n 1
BEGIN;
SELECT clock_timestamp() AS t0 \gset
$1;
SELECT rounds_run, round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 1) FROM perpca_last_fit();
ROLLBACK;
SQL
}

# Best of 3 by time: prints "rounds ms".
best() {
	local best_ms="" rounds=""
	for _ in 1 2 3; do
		local r ms
		read -r r ms <<<"$(run "$1")"
		if [ -z "$best_ms" ] || python3 -c "import sys; sys.exit(0 if $ms < $best_ms else 1)"; then
			best_ms=$ms; rounds=$r
		fi
	done
	echo "$rounds $best_ms"
}

read -r COLD_R COLD_MS <<<"$(best "SELECT 1 FROM perpca_train('m', 'SELECT client, perpca_merge(stats) FROM obs_stats GROUP BY client', 3, 3, replace => true)")"
read -r WARM_R WARM_MS <<<"$(best "SELECT 1 FROM perpca_refresh('m')")"
read -r SAME_R SAME_MS <<<"$(best "SELECT 1 FROM perpca_refresh('m', warm => false)")"

python3 - "$ROWS" "$D" "$CLIENTS" "$NEW" "$COLD_R" "$COLD_MS" "$WARM_R" "$WARM_MS" "$SAME_R" "$SAME_MS" <<'PY'
import sys
rows, d, clients, new, cr, cms, wr, wms, sr, sms = sys.argv[1:]
cr, wr, sr = int(cr), int(wr), int(sr)
cms, wms, sms = float(cms), float(wms), float(sms)
print(f"rows={rows} d={d} clients={clients}+1 new rows={float(new):.0%} (n_global 3, n_local 3, default tolerance)")
print(f"{'fit':<32}{'rounds':>8}{'ms':>10}")
print(f"{'cold: perpca_train replace':<32}{cr:>8}{cms:>10.1f}")
print(f"{'cold: perpca_refresh warm=>false':<32}{sr:>8}{sms:>10.1f}")
print(f"{'warm: perpca_refresh':<32}{wr:>8}{wms:>10.1f}")
print(f"rounds cold/warm = {cr / max(wr, 1):.1f}x, time cold/warm = {cms / wms:.1f}x"
      " (init 'best' also runs 20 probe rounds that perpca_last_fit does not count)")
PY
if [ "${KEEP:-0}" = 1 ]; then echo "kept database $DB"; else "${PSQL[@]}" -d postgres -c "DROP DATABASE $DB"; fi
