#!/usr/bin/env bash
# sketch_agg_bench.sh -- perpca_sketch(v, 64) against perpca_stats(v) on vector columns.
#
# For d = 1536 and 3072 (DIMS), a table of vector(d) rows in groups of
# tenant sizes (1,000 rows at d = 1536, 4,000 at d = 3072: more than
# d/2 rows, so the exact statistics are dense, d x d), and three queries per
# table, serial plans:
#   read:   sum(vector_dims(v)) GROUP BY g, reading the column alone;
#   exact:  perpca_stats(v) GROUP BY g (dense: a rank-k update of the d x d
#           co-moments, ~d^2 flops a row);
#   sketch: perpca_sketch(v, 64) GROUP BY g (Frequent Directions, O(d ell) a
#           row: a shrink of the 2 ell-row buffer every ell rows).
# Goal: the sketch at >= 2x the rows per second of the exact aggregate at the
# same d, printed beside it.  Times are the CPU time (user + system) of the
# backend that runs the query, read from /proc/self/stat (a superuser's
# pg_read_file): on a shared machine the wall clock measures the neighbours,
# the CPU time much less so.  The queries take turns REPS times (default 3);
# the best time of each is printed.
#
# Also the shrink itself, both ways src/sketch.c could do it (bench/fd_shrink_bench.c:
# dsyrk + dsyevd + dgemm on the Gram matrix, against dgesdd on the buffer), at
# ell = 64 and d = 1536 .. 16000.
#
# Connects with the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE) to
# a server where perpca_vector can be created (perpca and pgvector installed).
# ROWS_1536, ROWS_3072 set the table sizes (default 6000 and 8000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/fd_shrink_bench" "$here/fd_shrink_bench.c" -lopenblas -llapacke -lm
REPS=${REPS:-3}
DIMS=${DIMS:-1536 3072}
ELL=${ELL:-64}

psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS perpca_vector CASCADE'


# run_case D ROWS PER: the table, the three queries, the figures
run_case() {
	local d=$1 rows=$2 per=$3 name=bench_sketch_$1
	psql -X -q -v ON_ERROR_STOP=1 <<-SQL
		DROP TABLE IF EXISTS $name;
		CREATE UNLOGGED TABLE $name AS
		    SELECT (i - 1) / $per AS g,
		           ARRAY(SELECT (j % 17) * 0.01 * sin(i * 0.001 * j) + random()
		                 FROM generate_series(1, $d) AS j WHERE i > 0)::vector($d) AS v
		    FROM generate_series(1, $rows) AS i;
		VACUUM ANALYZE $name;
	SQL
	local kind q t
	declare -A times=()
	for _ in $(seq "$REPS"); do
		for kind in read exact sketch; do
			case $kind in
				read) q="sum(vector_dims(v))" ;;
				exact) q="perpca_count(perpca_stats(v))" ;;
				sketch) q="perpca_count(perpca_sketch(v, $ELL))" ;;
			esac
			q="SELECT sum(x) FROM (SELECT g, $q AS x FROM $name GROUP BY g) s"
			t=$(ms "$q")
			times[$kind]="${times[$kind]:-} $t"
		done
	done
	awk -v d="$d" -v n="$rows" -v per="$per" -v ell="$ELL" \
		-v r="$(lo "${times[read]}")" -v e="$(lo "${times[exact]}")" -v s="$(lo "${times[sketch]}")" 'BEGIN {
		printf "d=%d, %d rows in groups of %d (exact form: dense)\n", d, n, per
		printf "  %-26s %9.1f ms %10.0f rows/s\n", "read (vector_dims)", r, n / r * 1000
		printf "  %-26s %9.1f ms %10.0f rows/s\n", "perpca_stats(v)", e, n / e * 1000
		printf "  %-26s %9.1f ms %10.0f rows/s  %.2fx the exact rows/s (goal >= 2.00: %s)\n",
			"perpca_sketch(v, " ell ")", s, n / s * 1000, e / s, ((e / s >= 2) ? "met" : "NOT met")
	}'
	psql -X -q -c "DROP TABLE $name"
}

echo "perpca_sketch(vector) benchmark (backend CPU time, serial plans, best of $REPS, $(nproc) cores, load average $(cut -d" " -f1-3 /proc/loadavg))"
for d in $DIMS; do
	case $d in
		1536) run_case 1536 "${ROWS_1536:-6000}" 1000 ;;
		3072) run_case 3072 "${ROWS_3072:-8000}" 4000 ;;
		*) run_case "$d" $((10000000 / d)) $((d * 2)) ;;
	esac
done
echo "one FD shrink of a 2 ell x d buffer, ell = $ELL (CPU time, best of 3; the sketch uses the Gram route)"
for d in 1536 3072 8000 16000; do
	OPENBLAS_NUM_THREADS=1 "$tmp/fd_shrink_bench" "$ELL" "$d" 3
done
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg)"
