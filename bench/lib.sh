# bench/lib.sh -- what the benchmarks share (sourced, not run): the rows of the
# real corpora, the BLAS floor of one round over them, and the backend CPU
# time of a query (solver_bench.sh, round_bench.sh, gauntlet.sh); the CPU
# time and page faults of one aggregate query (vector_bench.sh,
# sketch_agg_bench.sh).
# The caller sets TMP (a scratch folder) and PY (python3 with numpy).
LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# "cpu_s wall_s" of the backend that runs the SQL in file $1 with the psql
# command $2...: CPU (user + system, from /proc; the machine may be shared,
# CPU time is the steadier figure) and wall seconds.  Its output in $TMP/out.
backend_cpu() {
	local file=$1 pidfile=$TMP/pid
	shift
	rm -f "$pidfile"
	{ echo "SELECT pg_backend_pid() AS pid \\gset"; echo "\\o $pidfile"; echo "SELECT :pid;"; echo "\\o"; cat "$file"; } >"$TMP/run.sql"
	local t0 t1
	t0=$(date +%s.%N)
	"$@" -f "$TMP/run.sql" >"$TMP/out" 2>"$TMP/err" &
	local job=$! pid="" last=0 t
	for _ in $(seq 1200); do [ -s "$pidfile" ] && break; sleep 0.05; done
	pid=$(tr -dc 0-9 <"$pidfile")
	while kill -0 "$pid" 2>/dev/null && kill -0 "$job" 2>/dev/null; do
		t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && last=$t
		sleep 0.05
	done
	wait "$job" || { cat "$TMP/err" >&2; return 1; }
	t1=$(date +%s.%N)
	echo "$(echo "scale=2; $last / $(getconf CLK_TCK)" | bc) $(echo "scale=2; ($t1 - $t0) / 1" | bc)"
}

# The rows of the real corpus $1 into $TMP/$1.csv (client, x); prints "r1 r2".
#   digits   the UCI digits by class (python3-sklearn: 1,797 images, d = 64,
#            10 clients), 10 + 5
#   text     Python sources (python3.11, python3-*), groups of >= 40 files,
#            d = 800 identifiers, 5 + 5
#   include  C headers under /usr/include, groups >= 30 files, d = 400, 5 + 5
#   perl     Perl modules, groups >= 30 files, d = 400, 5 + 5
#   man      manual pages, groups >= 30 pages, d = 400, 5 + 5
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
	text) "$PY" "$LIB_DIR/text_corpus.py" 800 "$TMP/$1.csv" 40 python 2>/dev/null; echo "5 5" ;;
	include | perl | man) "$PY" "$LIB_DIR/text_corpus.py" 400 "$TMP/$1.csv" 30 "$1" 2>/dev/null; echo "5 5" ;;
	*) echo "unknown case: $1" >&2; return 1 ;;
	esac
}

# The floor of one round over the rows in $TMP/$1.csv, X with $2 columns:
# prints "ms thin", the BLAS time (numpy over the same OpenBLAS, one thread)
# of one S_i X per dense client (n > d/2) plus one Y_i'(Y_i X) per thin
# client, and the number of thin clients.
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
print("%.3f %d" % (1000 * best, sum(1 for S, _, _ in ops if S is None)))
PY
}

# Table $1 (client text, stats perpca_stats) from the rows in $TMP/$2.csv, with the psql command $3...
load_stats() {
	local table=$1 csv=$TMP/$2.csv
	shift 2
	"$@" -c "DROP TABLE IF EXISTS ${table}_rows, $table; CREATE TABLE ${table}_rows (client text, x float8[])"
	"$@" -c "\\copy ${table}_rows FROM '$csv' CSV HEADER"
	"$@" -c "CREATE TABLE $table AS SELECT client, perpca_stats(x) AS stats FROM ${table}_rows GROUP BY client; DROP TABLE ${table}_rows"
}

# The aggregate benchmarks' queries: serial plans, jit off, work_mem large
# enough that nothing spills, both libraries loaded before the timing.
SETTINGS="SET max_parallel_workers_per_gather = 0; SET work_mem = '1GB'; SET jit = off;"
# Loads both libraries in the session before the timing (not the query's work).
WARM="SELECT perpca_count(perpca_stats('[1]'::vector)), vector_dims('[1]'::vector)"

# The backend's CPU time so far, in clock ticks (utime + stime of /proc/self/stat),
# and its minor page faults.
CPU="SELECT f[12]::bigint + f[13]::bigint, f[8] FROM string_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ') AS f"
TICK=$(getconf CLK_TCK)

# ms SQL: the backend CPU time of SQL, in milliseconds (a new session, libraries
# loaded), and after a colon the minor page faults it took.
ms() {
	psql -X -q -At -F ' ' -v ON_ERROR_STOP=1 -c "$SETTINGS" -c "$WARM" -c "$CPU" -c "$1" -c "$CPU" |
		awk -v tick="$TICK" 'NR == 2 {t0 = $1; f0 = $2} NR == 4 {printf "%.1f:%d\n", ($1 - t0) * 1000 / tick, $2 - f0}'
}
# ms_warm SQL N: the same in a warm session: SQL once, then N times timed; the
# mean backend CPU time of a run in ms and, after a colon, its mean minor page faults
ms_warm() {
	local args=(-c "$SETTINGS" -c "$WARM" -c "$1" -c "$CPU") i
	for i in $(seq "$2"); do args+=(-c "$1"); done
	psql -X -q -At -F ' ' -v ON_ERROR_STOP=1 "${args[@]}" -c "$CPU" |
		awk -v tick="$TICK" -v n="$2" 'NF == 2 {c++; if (c == 2) {t0 = $1; f0 = $2} if (c == 3) printf "%.1f:%d\n", ($1 - t0) * 1000 / tick / n, ($2 - f0) / n}'
}
# lo TIMES: the best (least CPU) of "ms:faults" figures, as "ms faults"
lo() { echo "$1" | tr ' ' '\n' | { grep . || true; } | sort -t: -k1,1g | head -1 | tr : ' '; }
