#!/usr/bin/env bash
# bench/round_bench.sh -- what one round of the default fit costs against its
# BLAS floor, what the setup costs, and the d = 4096 fit against its minute
#
#   PGHOST=... PGPORT=... PGDATABASE=... bash bench/round_bench.sh
#   CASES="digits text include thin big" (default; thin and big build their
#   own tables: ~1 min each, or THIN_TABLE=... BIG_TABLE=... reuse a table
#   of (client, stats) of that shape)
#
# Cases:
#   digits, text, include, perl, man  the real corpora of bench/lib.sh
#          (10 + 5 for digits, 5 + 5 for the others): per round, the CPU ms against the floor of
#          solver_bench.sh, the BLAS time of one S_i X per dense client plus
#          one Y_i'(Y_i X) per thin client (X with r1 + r2 columns, numpy over
#          the same OpenBLAS, one thread).  Goal: a round <= 3x the floor.
#   thin   thin_bench.sh's shape (d = 3000, 50 clients x 400 rows, 2 + 3;
#          planted rows from numpy, ~1 min to build):
#          per round and setup against one read of the statistics.  Goals:
#          a round <= 0.5 reads, the setup <= 3 reads.
#   big    d = 4096, 3 dense groups of 2,500 rows (5 shared + 5 own planted
#          directions, so that 5 + 5 fits the model), the default fit, setup
#          included.  Goal: < 60 s.
# Setup = the backend CPU of the same fit with rounds => 1, hops => 0 (the
# statistics read, lambda_max, local PCs, the disPCA start, one round, the
# final tight best responses); a round = (CPU of the default fit - setup) /
# (its rounds - 1).  CPU seconds of the backend (from /proc; the machine may
# be shared, CPU time is the steadier figure), wall seconds beside them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CASES=${CASES:-"digits text include thin big"}
PY=${PY:-/usr/bin/python3}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. bench/lib.sh
export OPENBLAS_NUM_THREADS=1
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=error"

# "cpu_s wall_s" of the backend that runs the SQL $1 (bench/lib.sh); the query's output in $TMP/out.
run() {
	printf '%s\n' "$1" >"$TMP/query.sql"
	backend_cpu "$TMP/query.sql" "${PSQL[@]}"
}

# rb_stats of planted rows: d $1, $2 clients x $3 rows, $4 shared and $5 own
# directions per client (smooth waves, decreasing scores) plus uniform noise.
planted() {
	"$PY" - "$TMP/planted.csv" "$@" <<'PY'
import sys
import numpy as np
out, d, nc, rows, g, l = sys.argv[1], *map(int, sys.argv[2:])
rng = np.random.default_rng(7)
j = np.arange(1, d + 1)
shared = np.array([np.sin(j * (0.0037 + 0.0061 * p) + p) for p in range(g)])
with open(out, "w") as f:
    f.write("client,x\n")
    for c in range(nc):
        own = np.array([np.sin(j * (0.05 + 0.017 * p + 0.001 * c) + p) for p in range(l)])
        a = rng.uniform(-0.5, 0.5, (rows, g)) * np.linspace(3, 1.9, g)
        b = rng.uniform(-0.5, 0.5, (rows, l)) * np.linspace(2, 1.2, l)
        X = a @ shared + b @ own + 0.3 * rng.uniform(-0.5, 0.5, (rows, d))
        for x in X:
            f.write('%d,"{%s}"\n' % (c, ",".join("%.5g" % v for v in x)))
PY
	"${PSQL[@]}" -c "DROP TABLE IF EXISTS rb_rows, rb_stats; CREATE TABLE rb_rows (client int, x float8[])"
	"${PSQL[@]}" -c "\\copy rb_rows FROM '$TMP/planted.csv' CSV HEADER"
	"${PSQL[@]}" -c "CREATE TABLE rb_stats AS SELECT client, perpca_stats(x) AS stats FROM rb_rows GROUP BY client; DROP TABLE rb_rows"
	rm -f "$TMP/planted.csv"
}

# The floor of one round in ms for $1 clients of shape d $2, n $3 rows, X with $4 columns (random data: same cost).
floor_shape_ms() {
	"$PY" - "$@" <<'PY'
import sys, time
import numpy as np
nc, d, n, k = map(int, sys.argv[1:])
rng = np.random.default_rng(0)
X = np.linalg.qr(rng.standard_normal((d, k)))[0]
if n > d // 2:
    A = rng.standard_normal((d, d)); S = A + A.T
    op = lambda: S @ X
else:
    Y = rng.standard_normal((n, d))
    op = lambda: Y.T @ (Y @ X)
op(); best = float("inf")
for _ in range(5):
    t = time.process_time(); op(); best = min(best, time.process_time() - t)
print("%.3f" % (1000 * best * nc))
PY
}

# Setup and default fit of table $1 at r1 $2, r2 $3: sets setup_cpu, fit_cpu, fit_wall, rounds, products.
fit_case() {
	local q="'SELECT client, stats FROM $1 ORDER BY client'" wall
	read -r setup_cpu wall < <(run "SELECT count(*) FROM perpca_fit($q, $2, $3, rounds => 1, hops => 0);")
	read -r fit_cpu fit_wall < <(run "SELECT count(*) FROM perpca_fit($q, $2, $3);
SELECT l.rounds_run, (SELECT sum(products) FROM perpca_last_fit_rounds()), round(l.objective::numeric, 6) FROM perpca_last_fit() l;")
	IFS='|' read -r rounds products objective < <(tail -1 "$TMP/out")
	per_round=$(echo "scale=2; 1000 * ($fit_cpu - $setup_cpu) / ($rounds - 1)" | bc)
}

printf '%-8s | %-14s | %-8s | %-9s | %-26s | %-22s | %s\n' case shape rounds "prod/rnd" "round ms vs floor" "setup CPU s" "default fit CPU s (wall)"
for c in $CASES; do
	case "$c" in
	digits | text | include | perl | man)
		read -r r1 r2 < <(make_rows "$c" | tail -1)
		read -r floor _ < <(floor_ms "$c" $((r1 + r2)))
		load_stats rb_stats "$c" "${PSQL[@]}"
		shape="d=$("${PSQL[@]}" -c "SELECT max(perpca_dim(stats)) FROM rb_stats"), $("${PSQL[@]}" -c "SELECT count(*) FROM rb_stats") cl"
		fit_case rb_stats "$r1" "$r2"
		printf '%-8s | %-14s | %-8s | %-9s | %-26s | %-22s | %s\n' "$c" "$shape" "$rounds" \
			"$(echo "scale=1; $products / $rounds" | bc)" \
			"$per_round vs $floor = $(echo "scale=1; $per_round / $floor" | bc)x" "$setup_cpu" "$fit_cpu ($fit_wall)"
		;;
	thin)
		t=${THIN_TABLE:-rb_stats}
		[ -n "${THIN_TABLE:-}" ] || planted 3000 50 400 2 3
		read -r read_cpu read_wall < <(run "SELECT count(*) FROM $t WHERE perpca_dim(stats) > 0 AND perpca_count(stats) > 0;")
		fit_case "$t" 2 3
		floor=$(floor_shape_ms 50 3000 400 5)
		printf '%-8s | %-14s | %-8s | %-9s | %-26s | %-22s | %s\n' thin "d=3000, 50x400" "$rounds" \
			"$(echo "scale=1; $products / $rounds" | bc)" \
			"$per_round = $(echo "scale=2; $per_round / 1000 / $read_cpu" | bc) reads, $(echo "scale=1; $per_round / $floor" | bc)x floor" \
			"$setup_cpu = $(echo "scale=1; $setup_cpu / $read_cpu" | bc) reads" "$fit_cpu ($fit_wall); read $read_cpu s"
		;;
	big)
		t=${BIG_TABLE:-rb_stats}
		[ -n "${BIG_TABLE:-}" ] || planted 4096 3 2500 5 5
		fit_case "$t" 5 5
		floor=$(floor_shape_ms 3 4096 2500 10)
		printf '%-8s | %-14s | %-8s | %-9s | %-26s | %-22s | %s\n' big "d=4096, 3 dense" "$rounds" \
			"$(echo "scale=1; $products / $rounds" | bc)" \
			"$per_round vs $floor = $(echo "scale=1; $per_round / $floor" | bc)x" "$setup_cpu" \
			"$fit_cpu ($fit_wall) vs goal 60 s"
		;;
	esac
done
"${PSQL[@]}" -c "DROP TABLE IF EXISTS rb_stats"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
