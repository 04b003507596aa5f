#!/usr/bin/env bash
# bench/project_bench.sh -- per-row cost of the model-aware functions against
# the pure array functions on the same components.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/project_bench.sh [rows] [d] [clients]
#
# Builds a throwaway database perpca_project_bench with random rows, trains a
# model (n_global 5, n_local 5), then times, best of 5 runs each:
#   scan   SELECT sum(x[1])                                       (scan floor)
#   pure   perpca_residual(x, pcs, mean) joined to a per-client table of
#          [U; V_i] as a 2-D array and the client's mean
#   model  perpca_model_residual('m', client, x)
# and the same pair for the scores.  The goal is model/pure <= 1.5 per row,
# with the scan cost subtracted from both.
set -euo pipefail
ROWS=${1:-200000}
D=${2:-50}
CLIENTS=${3:-20}
DB=perpca_project_bench
PSQL=(psql -X -q -v ON_ERROR_STOP=1)

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
"${PSQL[@]}" -d $DB <<SQL
CREATE EXTENSION perpca;
SELECT setseed(0.42);
CREATE TABLE obs AS
SELECT 'c' || (i % $CLIENTS) AS client,
       ARRAY(SELECT random() * (1 + (j % 7)) + (i % $CLIENTS) * 0.01 * j + 0 * i
               FROM generate_series(1, $D) j) AS x
  FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE obs;
SELECT model_name, d, n_clients, rounds_run FROM perpca_train('m',
    'SELECT client, perpca_stats(x) FROM obs GROUP BY client', 5, 5, rounds => 200);
CREATE TABLE w AS
SELECT c.client, c.mean,
       (SELECT array_agg(pc ORDER BY kind, component) FROM m_components k
         WHERE k.client IS NULL OR k.client = c.client) AS pcs
  FROM m_clients c;
SQL

# Best wall time (ms) of 5 runs of a query.
best() {
	local q=$1 best=""
	for _ in 1 2 3 4 5; do
		local t
		t=$(PGOPTIONS="-c max_parallel_workers_per_gather=0" "${PSQL[@]}" -d $DB -At -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $q" \
			| python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])')
		if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $t < $best else 1)"; then best=$t; fi
	done
	echo "$best"
}

SCAN=$(best "SELECT sum(x[1]) FROM obs")
PURE_R=$(best "SELECT sum((perpca_residual(o.x, w.pcs, w.mean))[1]) FROM obs o JOIN w USING (client)")
MODEL_R=$(best "SELECT sum((perpca_model_residual('m', client, x))[1]) FROM obs")
PURE_S=$(best "SELECT sum((perpca_scores(o.x, w.pcs, w.mean))[1]) FROM obs o JOIN w USING (client)")
MODEL_S=$(best "SELECT sum((perpca_model_scores('m', client, x))[1]) FROM obs")
JOIN=$(best "SELECT sum(o.x[1] + w.mean[1]) FROM obs o JOIN w USING (client)")

python3 - "$ROWS" "$D" "$SCAN" "$JOIN" "$PURE_R" "$MODEL_R" "$PURE_S" "$MODEL_S" <<'PY'
import sys
rows, d = int(sys.argv[1]), int(sys.argv[2])
scan, join, pr, mr, ps, ms = map(float, sys.argv[3:])
us = lambda ms_: 1000.0 * ms_ / rows
print(f"rows={rows} d={d} r=5+5, best of 5, one backend, no parallel workers")
print(f"scan only            {us(scan):7.3f} us/row")
print(f"scan + join to w     {us(join):7.3f} us/row")
for name, p, m in (("residual", pr, mr), ("scores", ps, ms)):
    net_p, net_m = us(p) - us(scan), us(m) - us(scan)
    ratio = net_m / net_p
    print(f"{name:9s} pure {us(p):7.3f}  model {us(m):7.3f} us/row;"
          f" net of scan: pure {net_p:6.3f} model {net_m:6.3f}  ratio {ratio:4.2f}"
          f"  ({'meets' if ratio <= 1.5 else 'MISSES'} the 1.5x goal)")
PY
"${PSQL[@]}" -d postgres -c "DROP DATABASE $DB" || true
