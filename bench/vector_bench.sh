#!/usr/bin/env bash
# vector_bench.sh -- perpca_stats(vector) against the double cast and the read floor.
#
# For d = 384, 768 and 1536 (DIMS), a table of vector(d) rows, and three queries:
#   read:   sum(vector_dims(v)), which detoasts every row and reads its header:
#           reading the column alone;
#   vector: perpca_stats(v), pgvector's storage read in place (perpca_vector);
#   cast:   perpca_stats(v::real[]::float8[]), two arrays per row.
#   hold:   cardinality(array_agg(v)) (thin case only): PostgreSQL's own
#           aggregate that keeps every row of a group, the same bytes a thin
#           value must hold.  On this project's 2-core VM a first touch of a
#           fresh 4 kB page costs 25-50 us (100x bare metal), so holding a
#           group's rows costs more than reading them; the minor page faults of
#           each query are printed beside its time.
# Two cases each (CASES, default "thin dense"):
#   thin:  GROUP BY g with groups of d/4 rows (a group stays in the thin form: its
#          rows as float4 and their mean, no d x d matrix), the case where reading
#          the rows and writing them into the result is the work: the floor is
#          the read + writing a result of the rows' own size, a float4 thin
#          value's bytes per group into fresh memory (bench/write_floor.c:
#          allocate, copy the rows from a source in cache, free, per group);
#          the sizes of the thin values are printed beside those of the
#          float8[] path's (pg_column_size);
#   dense: one group of all rows: perpca_stats must also add each row to the d x d
#          co-moment matrix (a rank-k BLAS update, ~d^2 flops a row), so the read
#          floor + a plain dsyrk over the same rows (bench/dsyrk_floor.c) is the
#          floor there.
# Goal: vector within 1.2x of the floor, and faster than the cast.  Serial plans,
# jit off, work_mem large enough that nothing spills; the queries take turns REPS
# times (default 3); the best time of each is printed as rows per second.
# Times are the CPU time (user + system) of the backend that runs the query,
# read from /proc/self/stat (a superuser's pg_read_file), and the dsyrk
# floor's process CPU time: on a shared machine the wall clock measures the
# neighbours, the CPU time much less so.
# Each query is timed twice: cold, as the first query of a new session (which
# also maps the table's shared buffers into the backend: on this VM about
# 300 ms of the read floor), and warm, the mean of WARM_RUNS (default 5) runs
# in one session after a first run, as a pooled connection runs it.
#
# Connects with the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE) to
# a server where perpca_vector can be created (perpca and pgvector installed),
# e.g. the cluster that `bash scripts/demo.sh --keep` leaves running with
# pgvector added.  ROWS_384, ROWS_768, ROWS_1536 set the table sizes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/dsyrk_floor" "$here/dsyrk_floor.c" -lopenblas
cc -O2 -o "$tmp/first_touch" "$here/first_touch.c"
cc -O2 -o "$tmp/write_floor" "$here/write_floor.c"
REPS=${REPS:-3}
WARM_RUNS=${WARM_RUNS:-5}
DIMS=${DIMS:-384 768 1536}
CASES=${CASES:-thin dense}

psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS perpca_vector CASCADE'


# run_case D ROWS: the table, both cases, the figures
run_case() {
	local d=$1 rows=$2 name=bench_vec_$1 per=$(($1 / 4)) blas
	psql -X -q -v ON_ERROR_STOP=1 <<-SQL
		DROP TABLE IF EXISTS $name;
		CREATE UNLOGGED TABLE $name AS
		    SELECT (i - 1) / $per AS g,
		           ARRAY(SELECT random() FROM generate_series(1, $d) WHERE i > 0)::vector($d) AS v
		    FROM generate_series(1, $rows) AS i;
		VACUUM ANALYZE $name;
	SQL
	local bytes
	bytes=$(psql -X -A -t -c "SELECT pg_size_pretty(pg_total_relation_size('$name'))")
	blas=$(OPENBLAS_NUM_THREADS=1 "$tmp/dsyrk_floor" "$d" "$rows" 1 128 cpu)
	write=$("$tmp/write_floor" "$d" $((rows / per)) "$per" cpu)
	psql -X -A -t -c "SELECT 'thin values: ' || sum(pg_column_size(a)) || ' bytes (vector), ' || sum(pg_column_size(b)) || ' (float8[] rows, the 0.4.0 form): ' || round(sum(pg_column_size(a))::numeric / sum(pg_column_size(b)), 3) FROM (SELECT g, perpca_stats(v) AS a, perpca_stats(v::real[]::float8[]) AS b FROM $name GROUP BY g) q"
	local case kind q t best
	for case in $CASES; do
		declare -A times=() wtimes=()
		for _ in $(seq "$REPS"); do
			for kind in read hold vector cast; do
				[ "$kind$case" = holddense ] && continue
				case $kind in
					read) q="sum(vector_dims(v))" ;;
					hold) q="cardinality(array_agg(v))" ;;
					vector) q="perpca_count(perpca_stats(v))" ;;
					cast) q="perpca_count(perpca_stats(v::real[]::float8[]))" ;;
				esac
				if [ "$case" = thin ]; then
					q="SELECT sum(x) FROM (SELECT g, $q AS x FROM $name GROUP BY g) s"
				else
					q="SELECT $q FROM $name"
				fi
				[ "$kind$_" = read1 ] && ms "$q" >/dev/null # warm the cache
				t=$(ms "$q")
				times[$kind]="${times[$kind]:-} $t"
				t=$(ms_warm "$q" "$WARM_RUNS")
				wtimes[$kind]="${wtimes[$kind]:-} $t"
			done
		done
		local r h v k
		r=$(lo "${times[read]}") v=$(lo "${times[vector]}") k=$(lo "${times[cast]}") h=$(lo "${times[hold]:-}")
		report "$case" "$d" "$rows" "$per" "$bytes" "$blas" "$r" "$h" "$v" "$k" "cold (first query of a session)" "$write"
		r=$(lo "${wtimes[read]}") v=$(lo "${wtimes[vector]}") k=$(lo "${wtimes[cast]}") h=$(lo "${wtimes[hold]:-}")
		report "$case" "$d" "$rows" "$per" "$bytes" "$blas" "$r" "$h" "$v" "$k" "warm (mean of $WARM_RUNS runs after a first)" "$write"
		unset times wtimes
	done
	psql -X -q -c "DROP TABLE $name"
}

# report CASE D ROWS PER SIZE BLAS READ HOLD VECTOR CAST LABEL WRITE: one case's figures
report() {
	awk -v c="$1" -v d="$2" -v n="$3" -v per="$4" -v sz="$5" -v b="$6" \
		-v r="$7" -v h="$8" -v v="$9" -v k="${10}" -v label="${11}" -v w="${12}" 'BEGIN {
		split(r, R, " "); split(h, H, " "); split(v, V, " "); split(k, K, " ")
		b *= 1000; w *= 1000
		if (c == "thin") {
			printf "d=%d, %d rows (%s), thin: groups of %d rows, %s\n", d, n, sz, per, label
			f = R[1] + w; fname = "read + write"
		} else {
			printf "d=%d, %d rows, dense: one group (dsyrk floor %.1f ms), %s\n", d, n, b, label
			f = R[1] + b; fname = "read + dsyrk"
		}
		line = "  %-22s %9.1f ms %10.0f rows/s %8d faults"
		printf line "\n", "read (vector_dims)", R[1], n / R[1] * 1000, R[2]
		if (c == "thin")
			printf line "  %.2fx the read floor\n", "hold (array_agg)", H[1], n / H[1] * 1000, H[2], H[1] / f
		if (c == "dense")
			printf "  %-22s %9.1f ms %10.0f rows/s\n", "read + dsyrk floor", f, n / f * 1000
		if (c == "thin")
			printf "  %-22s %9.1f ms %10.0f rows/s  (write_floor.c: %.1f ms)\n", "read + write floor", f, n / f * 1000, w
		printf line "  %.2fx the %s floor (goal <= 1.20)", "perpca_stats(vector)", V[1], n / V[1] * 1000, V[2], V[1] / f, fname
		if (c == "thin")
			printf "; %.2fx hold", V[1] / H[1]
		printf "\n"
		printf line "  %.2fx the vector path\n", "perpca_stats(cast)", K[1], n / K[1] * 1000, K[2], K[1] / V[1]
	}'
}

echo "perpca_stats(vector) benchmark (backend CPU time, serial plans, best of $REPS, $(nproc) cores, load average $(cut -d" " -f1-3 /proc/loadavg))"
echo "fresh memory: $("$tmp/first_touch" 64)"
for d in $DIMS; do
	case $d in
		384) rows=${ROWS_384:-40000} ;;
		768) rows=${ROWS_768:-20000} ;;
		1536) rows=${ROWS_1536:-10000} ;;
		*) rows=$((15000000 / d)) ;;
	esac
	run_case "$d" "$rows"
done
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg)"
