#!/usr/bin/env bash
# bench/solver_bench.sh -- the default fit on real corpora: its optimum against
# seeded random starts, its time against 0.2.0's in the same run, and its
# rounds against their BLAS floor
#
#   PGHOST=... PGPORT=... PGDATABASE=... bash bench/solver_bench.sh
#   OLD_PGHOST=... OLD_PGPORT=...   a second server with perpca 0.2.0 (optional:
#                                   git worktree add /tmp/perpca-020 0306f40, then
#                                   build and install it into its own server)
#   CASES="digits text include perl man"  RANDOM_STARTS=20  (defaults)
#
# Cases (real data from Debian packages; bench/text_corpus.py):
#   digits   the UCI digits by class (python3-sklearn: 1,797 images, d = 64,
#            10 clients), 10 + 5
#   text     Python sources (python3.11, python3-*), groups of >= 40 files,
#            d = 800 identifiers, 5 + 5
#   include  C headers under /usr/include, groups >= 30 files, d = 400, 5 + 5
#   perl     Perl modules, groups >= 30 files, d = 400, 5 + 5
#   man      manual pages, groups >= 30 pages, d = 400, 5 + 5
# For each: the default fit (solver 'lbfgs', init 'best': starts and hops)
# on this server and on the 0.2.0 server, with objective, rounds (the
# winner's / all) and the backend's CPU seconds (the machine may be shared:
# CPU time is the steadier figure); the products of the clients per round;
# the CPU time per round (setup included) against the floor: the BLAS time
# of one S_i X product per dense client plus one Y_i'(Y_i X) per thin
# client, X with r1 + r2 columns (numpy over the same OpenBLAS, one thread);
# and the best of RANDOM_STARTS seeded random starts, which the default must
# reach (to 1e-9 relative).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CASES=${CASES:-"digits text include perl man"}
RANDOM_STARTS=${RANDOM_STARTS:-20}
PY=${PY:-/usr/bin/python3}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OPENBLAS_NUM_THREADS=1
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

# psql against the 0.2.0 server.
old_psql() { PGHOST=${OLD_PGHOST:-$PGHOST} PGPORT=$OLD_PGPORT "${PSQL[@]}" "$@"; }

# CPU seconds (user + system) of the backend that runs the SQL in file $1 (psql: $2...); its output in $TMP/out.
backend_cpu() {
	local file=$1 pidfile=$TMP/pid
	shift
	rm -f "$pidfile"
	{ echo "SELECT pg_backend_pid() AS pid \\gset"; echo "\\o $pidfile"; echo "SELECT :pid;"; echo "\\o"; cat "$file"; } >"$TMP/run.sql"
	"$@" -f "$TMP/run.sql" >"$TMP/out" 2>"$TMP/err" &
	local job=$! pid="" last=0 t
	for _ in $(seq 600); do [ -s "$pidfile" ] && break; sleep 0.1; done
	pid=$(tr -dc 0-9 <"$pidfile")
	while kill -0 "$pid" 2>/dev/null && kill -0 "$job" 2>/dev/null; do
		t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && last=$t
		sleep 0.1
	done
	wait "$job" || { cat "$TMP/err" >&2; return 1; }
	echo "scale=2; $last / $(getconf CLK_TCK)" | bc
}

# The rows of case $1 into $TMP/$1.csv (client, x); prints "r1 r2".
make_rows() {
	case "$1" in
	digits)
		"$PY" - "$TMP/$1.csv" <<'PY'
import sys
from sklearn.datasets import load_digits
d = load_digits()
with open(sys.argv[1], "w") as out:
    out.write("client,x\n")
    for x, y in zip(d.data, d.target):
        out.write('%d,"{%s}"\n' % (y, ",".join("%g" % v for v in x)))
PY
		echo "10 5" ;;
	text) "$PY" bench/text_corpus.py 800 "$TMP/$1.csv" 40 python 2>/dev/null; echo "5 5" ;;
	include | perl | man) "$PY" bench/text_corpus.py 400 "$TMP/$1.csv" 30 "$1" 2>/dev/null; echo "5 5" ;;
	esac
}

# The floor of one round in ms: per client, S_i X (dense, n > d/2) or Y_i'(Y_i X) (thin).
floor_ms() {
	"$PY" - "$TMP/$1.csv" "$2" <<'PY'
import csv, sys, time, collections
import numpy as np
k = int(sys.argv[2])
groups = collections.defaultdict(list)
with open(sys.argv[1]) as f:
    for row in csv.DictReader(f):
        groups[row["client"]].append([float(v) for v in row["x"].strip("{}").split(",")])
ops = []
for rows in groups.values():
    Y = np.array(rows); Y -= Y.mean(axis=0); n, d = Y.shape
    X = np.linalg.qr(np.random.default_rng(0).standard_normal((d, k)))[0]
    ops.append((Y.T @ Y / n, None, X) if n > d // 2 else (None, Y, X))
def once():
    for S, Y, X in ops:
        if S is not None: S @ X
        else: Y.T @ (Y @ X)
once(); best = float("inf")
for _ in range(7):
    t = time.process_time(); once(); best = min(best, time.process_time() - t)
print("%.2f %d" % (1000 * best, sum(1 for S, _, _ in ops if S is None)))
PY
}

load() {
	"$@" -c "DROP TABLE IF EXISTS sb_rows, sb_stats; CREATE TABLE sb_rows (client text, x float8[])"
	"$@" -c "\\copy sb_rows FROM '$TMP/$c.csv' CSV HEADER"
	"$@" -c "CREATE TABLE sb_stats AS SELECT client, perpca_stats(x) AS stats FROM sb_rows GROUP BY client; DROP TABLE sb_rows"
}

printf '%-7s | %4s | %-9s | %-30s | %-38s | %6s | %-22s | %s\n' case d "clients" "0.2.0: objective rounds CPU" "now: objective rounds(win/all) CPU" "now/old" "ms/round floor ratio" "best of random starts"
for c in $CASES; do
	read -r r1 r2 < <(make_rows "$c" | tail -1)
	read -r floor nthin < <(floor_ms "$c" $((r1 + r2)))
	q="'SELECT client, stats FROM sb_stats ORDER BY client'"
	load "${PSQL[@]}"
	nclients=$("${PSQL[@]}" -c "SELECT count(*) FROM sb_stats")
	d=$("${PSQL[@]}" -c "SELECT max(perpca_dim(stats)) FROM sb_stats")
	old="-"
	if [ -n "${OLD_PGPORT:-}" ]; then
		load old_psql
		echo "SELECT count(*) FROM perpca_fit($q, $r1, $r2); SELECT l.objective, l.rounds_run FROM perpca_last_fit() l;" >"$TMP/old.sql"
		ocpu=$(backend_cpu "$TMP/old.sql" old_psql)
		IFS='|' read -r oobj orounds < <(tail -1 "$TMP/out")
		old=$(printf '%.6f %s %ss' "$oobj" "$orounds" "$ocpu")
		old_psql -c "DROP TABLE sb_stats"
	fi
	echo "SELECT count(*) FROM perpca_fit($q, $r1, $r2); SELECT l.objective, (SELECT rounds_run FROM perpca_last_fit_starts() WHERE chosen) || '/' || l.rounds_run, (SELECT sum(products) FROM perpca_last_fit_rounds()) FROM perpca_last_fit() l;" >"$TMP/new.sql"
	cpu=$(backend_cpu "$TMP/new.sql" "${PSQL[@]}")
	IFS='|' read -r obj rounds products < <(tail -1 "$TMP/out")
	all=${rounds#*/}
	ratio="-"
	[ -n "${OLD_PGPORT:-}" ] && ratio=$(echo "scale=2; $cpu / $ocpu" | bc)
	per=$(echo "scale=2; 1000 * $cpu / $all" | bc)
	best="-"
	if [ "$RANDOM_STARTS" -gt 0 ]; then
		best=$("${PSQL[@]}" -c "CREATE FUNCTION pg_temp.random_objective(s bigint) RETURNS float8 LANGUAGE plpgsql AS \$\$
		  BEGIN PERFORM count(*) FROM perpca_fit($q, $r1, $r2, init => 'random', seed => s);
		        RETURN (SELECT objective FROM perpca_last_fit()); END \$\$;
		  SET client_min_messages = error;
		  SELECT max(pg_temp.random_objective(s)) FROM generate_series(1, $RANDOM_STARTS) s")
		best=$(printf '%.6f (%s)' "$best" "$(awk -v a="$obj" -v b="$best" 'BEGIN { print (a >= b - 1e-9 * (b < 0 ? -b : b)) ? "default reaches it" : "DEFAULT IS WORSE" }')")
	fi
	printf '%-7s | %4s | %-9s | %-30s | %-38s | %6s | %-22s | %s\n' "$c" "$d" "$nclients ($nthin thin)" "$old" \
		"$(printf '%.6f %s %ss' "$obj" "$rounds" "$cpu")" "$ratio" "$per $floor $(echo "scale=1; $per / $floor" | bc)x" "$best"
	echo "        products per round: $(echo "scale=1; $products / $all" | bc) (${nclients} clients)"
done
"${PSQL[@]}" -c "DROP TABLE IF EXISTS sb_stats"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
