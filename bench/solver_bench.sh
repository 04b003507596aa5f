#!/usr/bin/env bash
# bench/solver_bench.sh -- the two solvers of perpca_fit, in one run
#
#   PGHOST=... PGPORT=... PGDATABASE=... bash bench/solver_bench.sh
#   CASES="b2 text22 text55 synth" PAPER=1 RANDOM_STARTS=20 (defaults)
#
# Cases:
#   b2      the B2-like fixture test/data/fit_b_stats.csv (d = 15, 30 clients, 2 + 10)
#   text22  a real corpus from Debian packages (bench/text_corpus.py: the Python
#   text55  sources of python3.11 and /usr/lib/python3/dist-packages, groups of
#           >= 40 files, d = 800 identifiers), 2 + 2 and 5 + 5
#   synth   synthetic of the same shape as the issue's goal: d = 800, 30 groups
#           of 500 rows (dense statistics), 5 + 5
# For each: the default fit (solver 'lbfgs', init 'best'), the rounds of the
# winning start and of all starts, wall seconds and the backend's CPU seconds
# (this machine is shared: CPU time is the steadier figure); solver 'paper'
# with its defaults (skip with PAPER=0); and the best objective over
# RANDOM_STARTS seeded random starts of the new solver, which the default
# must match (to 1e-9 relative).  Floors: the paper's solver (0.1.0's
# algorithm) and the time of one pass over the statistics.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CASES=${CASES:-"b2 text22 text55 synth"}
PAPER=${PAPER:-1}
RANDOM_STARTS=${RANDOM_STARTS:-20}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# CPU seconds (user + system) of the backend that runs the SQL in file $1; its output in $TMP/out.
backend_cpu() {
	local pidfile=$TMP/pid
	rm -f "$pidfile"
	{ echo "SELECT pg_backend_pid() AS pid \\gset"; echo "\\o $pidfile"; echo "SELECT :pid;"; echo "\\o"; cat "$1"; } >"$TMP/run.sql"
	"${PSQL[@]}" -f "$TMP/run.sql" >"$TMP/out" 2>"$TMP/err" &
	local job=$! pid="" last=0 t
	for _ in $(seq 300); do [ -s "$pidfile" ] && break; sleep 0.1; done
	pid=$(tr -dc 0-9 <"$pidfile")
	while kill -0 "$pid" 2>/dev/null && kill -0 "$job" 2>/dev/null; do
		t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && last=$t
		sleep 0.1
	done
	wait "$job" || { cat "$TMP/err" >&2; return 1; }
	echo "scale=2; $last / $(getconf CLK_TCK)" | bc
}

load_case() {
	case "$1" in
	b2)
		"${PSQL[@]}" -c "DROP TABLE IF EXISTS sb_stats; CREATE TABLE sb_stats (client int, n int, stats perpca_stats)"
		"${PSQL[@]}" -c "\\copy sb_stats FROM 'test/data/fit_b_stats.csv' CSV HEADER"
		echo "2 10" ;;
	text22 | text55)
		if [ ! -f "$TMP/corpus.csv" ]; then
			python3 bench/text_corpus.py 800 "$TMP/corpus.csv" 40 2>"$TMP/corpus.log"
			"${PSQL[@]}" -c "DROP TABLE IF EXISTS sb_rows; CREATE TABLE sb_rows (client text, x float8[])"
			"${PSQL[@]}" -c "\\copy sb_rows FROM '$TMP/corpus.csv' CSV HEADER"
		fi
		"${PSQL[@]}" -c "DROP TABLE IF EXISTS sb_stats; CREATE TABLE sb_stats AS SELECT client, perpca_stats(x) AS stats FROM sb_rows GROUP BY client"
		[ "$1" = text22 ] && echo "2 2" || echo "5 5" ;;
	synth)
		python3 - "$TMP/synth.csv" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(1)
d, N, n, r1, r2 = 800, 30, 500, 5, 5
U = np.linalg.qr(rng.standard_normal((d, r1)))[0]
with open(sys.argv[1], "w") as out:
    out.write("client,x\n")
    for g in range(N):
        V = rng.standard_normal((d, r2)); V -= U @ (U.T @ V); V = np.linalg.qr(V)[0]
        Y = (rng.standard_normal((n, r1)) * np.linspace(3, 2, r1)) @ U.T \
          + (rng.standard_normal((n, r2)) * np.linspace(2.5, 1.5, r2)) @ V.T + 0.5 * rng.standard_normal((n, d))
        for row in Y:
            out.write('%d,"{%s}"\n' % (g, ",".join("%.6g" % v for v in row)))
PY
		"${PSQL[@]}" -c "DROP TABLE IF EXISTS sb_rows2; CREATE TABLE sb_rows2 (client int, x float8[])"
		"${PSQL[@]}" -c "\\copy sb_rows2 FROM '$TMP/synth.csv' CSV HEADER"
		"${PSQL[@]}" -c "DROP TABLE IF EXISTS sb_stats; CREATE TABLE sb_stats AS SELECT client, perpca_stats(x) AS stats FROM sb_rows2 GROUP BY client; DROP TABLE sb_rows2"
		echo "5 5" ;;
	esac
}

printf '%-7s | %-6s | %-22s | %7s | %6s | %6s | %-16s | %s\n' case solver "rounds (winner / all)" "wall s" "CPU s" "read s" objective "best of random starts"
for c in $CASES; do
	read -r r1 r2 < <(load_case "$c" | tail -1)
	q="'SELECT client, stats FROM sb_stats ORDER BY client'"
	read_s=$("${PSQL[@]}" -c "\\timing on" -c "SELECT count(*) FROM sb_stats WHERE stats IS NOT NULL AND perpca_dim(stats) > 0" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | awk '{printf "%.2f", $1 / 1000}')
	echo "SELECT count(*) FROM perpca_fit($q, $r1, $r2); SELECT (SELECT rounds_run FROM perpca_last_fit_starts() WHERE chosen) || ' / ' || l.rounds_run, round(l.seconds::numeric, 2), l.objective FROM perpca_last_fit() l;" >"$TMP/lbfgs.sql"
	cpu=$(backend_cpu "$TMP/lbfgs.sql")
	IFS='|' read -r rounds wall obj < <(tail -1 "$TMP/out")
	best="-"
	if [ "$RANDOM_STARTS" -gt 0 ]; then
		best=$("${PSQL[@]}" -c "SELECT max(o) FROM (SELECT (SELECT count(*) FROM perpca_fit($q, $r1, $r2, init => 'random', seed => s)) AS n,
		                                                    (SELECT objective FROM perpca_last_fit()) AS o
		                                               FROM generate_series(1, $RANDOM_STARTS) s) t")
		best="$best ($(awk -v a="$obj" -v b="$best" 'BEGIN { print (a >= b - 1e-9 * (b < 0 ? -b : b)) ? "default matches" : "DEFAULT IS WORSE" }'))"
	fi
	printf '%-7s | %-6s | %-22s | %7s | %6s | %6s | %-16.10g | %s\n' "$c" lbfgs "$rounds" "$wall" "$cpu" "$read_s" "$obj" "$best"
	if [ "$PAPER" = 1 ]; then
		echo "SELECT count(*) FROM perpca_fit($q, $r1, $r2, solver => 'paper'); SELECT l.rounds_run || CASE WHEN l.converged THEN '' ELSE ' (not converged)' END, round(l.seconds::numeric, 2), l.objective FROM perpca_last_fit() l;" >"$TMP/paper.sql"
		cpu=$(backend_cpu "$TMP/paper.sql")
		IFS='|' read -r rounds wall obj < <(tail -1 "$TMP/out")
		printf '%-7s | %-6s | %-22s | %7s | %6s | %6s | %-16.10g |\n' "$c" paper "$rounds" "$wall" "$cpu" "$read_s" "$obj"
	fi
done
"${PSQL[@]}" -c "DROP TABLE IF EXISTS sb_stats, sb_rows"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
