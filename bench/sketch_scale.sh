#!/usr/bin/env bash
# bench/sketch_scale.sh -- memory at scale: sketched statistics (perpca_sketch, ell = 64)
# against the exact ones (perpca_stats, dense at these sizes) on vector columns.
#
#   PGHOST=... PGPORT=... PGUSER=<superuser> PGDATABASE=... nice -n 10 bash bench/sketch_scale.sh
#   CASES="1536:500:1000:50 3072:100:4000:10"  d:tenants:rows per tenant:tenants of the exact fit
#   ELL=64 R1=5 R2=5 KEEP=1 (leave the tables for another run)
#
# Two tables of vector(d) rows (UNLOGGED; planted structure plus noise, not real
# data: bench/planted_vectors.py), 500 tenants x 1,000 rows at d = 1,536 (3 GB)
# and 100 x 4,000 at d = 3,072 (5 GB).  For each:
#   - the aggregate's rows per second, serial plan, on the same rows (the tenants
#     of the exact fit): perpca_stats(v) (dense: n > d/2) against
#     perpca_sketch(v, ELL); then perpca_sketch over the whole table.  Goal:
#     sketch >= 2x exact.
#   - the fit's peak backend memory (VmHWM from /proc/<pg_backend_pid()>/status,
#     one session per fit, which needs a superuser's pg_read_file), R1 + R2, on
#     stored statistics: exact dense on the first E tenants, sketched on the same
#     E, sketched on all.  Goal: sketched <= 1/8 of exact.  The exact fit of all
#     tenants is not run (it would need ~16 GB at d = 1,536 on a shared machine):
#     its figure is the E-tenant fit's per-tenant slope times the tenants, and is
#     printed as an estimate.
# A bare session's VmHWM (perpca loaded, nothing done) is printed beside them:
# VmHWM counts the shared buffers a backend touched too, so a small
# shared_buffers (128 MB) keeps that part small.  Tables are dropped at the end
# unless KEEP=1.  Needs perpca_vector with perpca_sketch(vector, int).
#
#   MEMORY=1 nice -n 10 bash bench/sketch_scale.sh
#   (CASES default "1536:50:1000:50 3072:10:4000:10")
# Memory only, on few tenants: no aggregate timing and no fit of all
# tenants.  On the same E tenants it fits the exact (dense) statistics and
# their sketches, with the default options and with init => 'dispca',
# hops => 0, and prints the peaks side by side with the sketches' size.
# Goal: the sketched peak <= 1/8 of the exact one on the same tenants
# (bench/README.md); on few tenants the sketched fit's fixed part decides it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MEMORY=${MEMORY:-0}
if [ "$MEMORY" = 1 ]; then CASES=${CASES:-1536:50:1000:50 3072:10:4000:10}; fi
CASES=${CASES:-1536:500:1000:50 3072:100:4000:10}
ELL=${ELL:-64}
R1=${R1:-5}
R2=${R2:-5}
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
SET="SET max_parallel_workers_per_gather = 0; SET jit = off; SET work_mem = '256MB';
     SET enable_hashagg = off; SET enable_sort = off;"

q -c 'CREATE EXTENSION IF NOT EXISTS perpca_vector CASCADE'
have_sketch=$(q -c "SELECT count(*) FROM pg_proc WHERE proname = 'perpca_sketch'")
datadir=$(q -c 'SHOW data_directory')
echo "server $(q -c 'SHOW server_version'), shared_buffers $(q -c 'SHOW shared_buffers'), perpca $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'perpca'"), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# make_table NAME D TENANTS ROWS: the table, unless it is there with its rows
make_table() {
	local name=$1 d=$2 t=$3 rows=$4 need avail
	if [ "$(q -c "SELECT to_regclass('$name') IS NOT NULL")" = t ] &&
		[ "$(q -c "SELECT count(*) FROM $name")" = $((t * rows)) ]; then
		q -c "CREATE INDEX IF NOT EXISTS ${name}_tenant ON $name (tenant)" -c "VACUUM ANALYZE $name"
		return
	fi
	need=$(((4 * d + 40) * t * rows * 11 / 10 / 1048576))
	avail=$(($(df -B1 --output=avail "$datadir" | tail -1) / 1048576))
	[ "$avail" -gt $((need + 4096)) ] || { echo "$name needs ${need} MB; $avail MB free" >&2; exit 1; }
	q -c "DROP TABLE IF EXISTS $name; CREATE UNLOGGED TABLE $name (tenant int NOT NULL, v vector($d) NOT NULL)"
	/usr/bin/python3 "$here/planted_vectors.py" "$t" "$rows" "$d" |
		q -c "COPY $name FROM STDIN (FORMAT binary)"
	q -c "CREATE INDEX ${name}_tenant ON $name (tenant)" -c "VACUUM ANALYZE $name"
}

# ms SQL: milliseconds of SQL in a new session (serial plan, libraries loaded first)
ms() {
	psql -X -q -v ON_ERROR_STOP=1 -c "$SET" -c "SELECT perpca_count(perpca_stats('[1,2]'::vector)), vector_dims('[1]'::vector)" \
		-c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
}

# peak QUERY [OPTIONS]: "MB seconds rounds objective" of a fit in its own session
peak() {
	q <<-SQL | tail -1 | tr '|' ' '
		SELECT count(*) AS fit_rows FROM perpca_fit('$1', $R1, $R2${2:+, $2}) \gset
		SELECT round((regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]::numeric / 1024, 1),
		       round(seconds::numeric, 1), rounds_run, objective FROM perpca_last_fit();
	SQL
}
bare=$(q -c "SELECT perpca_count(perpca_stats('[1]'::vector))" \
	-c "SELECT round((regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]::numeric / 1024, 1)" | tail -1)

# memory_case NAME E: the exact and sketched fits' peaks on the first E tenants, printed side by side
memory_case() {
	local name=$1 e=$2 ex sk skd size
	q -c "$SET" -c "DROP TABLE IF EXISTS ${name}_exact, ${name}_sketch;
	        CREATE UNLOGGED TABLE ${name}_exact AS SELECT tenant, perpca_stats(v) AS stats FROM $name WHERE tenant < $e GROUP BY tenant;
	        CREATE UNLOGGED TABLE ${name}_sketch AS SELECT tenant, perpca_sketch(v, $ELL) AS stats FROM $name WHERE tenant < $e GROUP BY tenant"
	echo "   exact statistics: $(q -c "SELECT string_agg(f || ' ' || pg_size_pretty(b), ', ') FROM (SELECT perpca_stats_form(stats) f, sum(pg_column_size(stats)) b FROM ${name}_exact GROUP BY 1) s")"
	size=$(q -c "SELECT round(sum(pg_column_size(stats)) / 1048576.0, 1) FROM ${name}_sketch")
	ex=$(peak "SELECT tenant, stats FROM ${name}_exact")
	sk=$(peak "SELECT tenant, stats FROM ${name}_sketch")
	skd=$(peak "SELECT tenant, stats FROM ${name}_sketch" "init => 'dispca', hops => 0")
	echo "   VmHWM MB, s, rounds, objective: exact $ex; sketched $sk; sketched dispca, no hops $skd"
	results+=("$d $e $size ${ex%% *} ${sk%% *} ${skd%% *}")
}

results=()
if [ "$MEMORY" = 1 ]; then
	for c in $CASES; do
		IFS=: read -r d t rows e <<<"$c"
		echo "== d = $d: $t tenants x $rows rows (planted $R1 + $R2 + noise), fits on $e tenants"
		make_table "scale_$d" "$d" "$t" "$rows"
		memory_case "scale_$d" "$e"
	done
	echo
	echo "bare session VmHWM: $bare MB; ELL = $ELL; fits $R1 + $R2; peaks in MB (VmHWM of the fit's session)"
	printf '%-5s %-7s %-11s %-9s %-18s %-18s %s\n' d tenants "sketches" exact "sketched (ratio)" "dispca, 0 hops" "goal <= 1/8"
	for r in "${results[@]}"; do
		# shellcheck disable=SC2086
		set -- $r
		awk -v d="$1" -v e="$2" -v size="$3" -v ex="$4" -v sk="$5" -v skd="$6" 'BEGIN {
			printf "%-5d %-7d %7.1f MB %9.1f %7.1f (1/%.1f) %7.1f (1/%.1f) %s\n", d, e, size, ex, sk, ex / sk,
			       skd, ex / skd, (sk * 8 <= ex) ? "met" : "NOT met" }'
	done
	if [ "${KEEP:-0}" != 1 ]; then
		for c in $CASES; do q -c "DROP TABLE IF EXISTS scale_${c%%:*}, scale_${c%%:*}_exact, scale_${c%%:*}_sketch"; done
	fi
	exit 0
fi
for c in $CASES; do
	IFS=: read -r d t rows e <<<"$c"
	name=scale_$d
	echo "== d = $d: $t tenants x $rows rows (planted $R1 + $R2 + noise), exact fit on $e tenants"
	make_table "$name" "$d" "$t" "$rows"
	echo "   table $(q -c "SELECT pg_size_pretty(pg_total_relation_size('$name'))")"
	agg="SELECT count(*) FROM (SELECT tenant, %s AS s FROM $name WHERE tenant < $e GROUP BY tenant) q WHERE perpca_count(s) > 0"
	# shellcheck disable=SC2059
	ex_ms=$(ms "$(printf "$agg" "perpca_stats(v)")")
	ex_rate=$((e * rows * 1000 / ${ex_ms%.*}))
	echo "   perpca_stats(v)        on $e tenants: ${ex_ms} ms, $ex_rate rows/s"
	q -c "$SET" -c "DROP TABLE IF EXISTS ${name}_exact; CREATE UNLOGGED TABLE ${name}_exact AS
	        SELECT tenant, perpca_stats(v) AS stats FROM $name WHERE tenant < $e GROUP BY tenant"
	echo "   exact statistics: $(q -c "SELECT f || ' ' || pg_size_pretty(b) FROM (SELECT perpca_stats_form(stats) f, sum(pg_column_size(stats)) b FROM ${name}_exact GROUP BY 1) s")"
	ex_fit=$(peak "SELECT tenant, stats FROM ${name}_exact")
	echo "   exact fit on $e tenants: VmHWM MB, s, rounds, objective: $ex_fit"
	if [ "$have_sketch" = 0 ]; then
		echo "   perpca_sketch is not installed: the sketched side is not run"
		results+=("$d $t $rows $e $ex_rate - - $ex_fit - - - - - - - - - - - -")
		continue
	fi
	# shellcheck disable=SC2059
	sk_ms=$(ms "$(printf "$agg" "perpca_sketch(v, $ELL)")")
	sk_rate=$((e * rows * 1000 / ${sk_ms%.*}))
	echo "   perpca_sketch(v, $ELL)  on $e tenants: ${sk_ms} ms, $sk_rate rows/s"
	all_ms=$(ms "DROP TABLE IF EXISTS ${name}_sketch; CREATE UNLOGGED TABLE ${name}_sketch AS
	        SELECT tenant, perpca_sketch(v, $ELL) AS stats FROM $name GROUP BY tenant")
	all_rate=$((t * rows * 1000 / ${all_ms%.*}))
	echo "   perpca_sketch(v, $ELL)  on all $t tenants (stored): ${all_ms} ms, $all_rate rows/s"
	echo "   sketched statistics: $(q -c "SELECT f || ' ' || pg_size_pretty(b) FROM (SELECT perpca_stats_form(stats) f, sum(pg_column_size(stats)) b FROM ${name}_sketch GROUP BY 1) s")"
	sk_fit=$(peak "SELECT tenant, stats FROM ${name}_sketch WHERE tenant < $e")
	echo "   sketched fit on $e tenants: $sk_fit"
	all_fit=$(peak "SELECT tenant, stats FROM ${name}_sketch")
	echo "   sketched fit on all $t tenants: $all_fit"
	results+=("$d $t $rows $e $ex_rate $sk_rate $all_rate $ex_fit $sk_fit $all_fit")
done

echo
echo "bare session VmHWM: $bare MB; ELL = $ELL; fits $R1 + $R2, default options"
printf '%-5s %-12s | %-26s | %-44s | %s\n' d "tenants" "aggregate rows/s (same rows)" "fit peak MB on E tenants (s)" "all tenants: sketched MB (s) vs exact est."
for r in "${results[@]}"; do
	# shellcheck disable=SC2086
	set -- $r
	awk -v d="$1" -v t="$2" -v rows="$3" -v e="$4" -v exr="$5" -v skr="$6" -v allr="$7" \
		-v exm="$8" -v exs="$9" -v skm="${12}" -v sks="${13}" -v allm="${16}" -v alls="${17}" -v bare="$bare" 'BEGIN {
		rr = (skr == "-") ? "-" : sprintf("%.2fx", skr / exr)
		mr = (skm == "-") ? "-" : sprintf("1/%.1f", exm / skm)
		est = bare + (exm - bare) * t / e
		ar = (allm == "-") ? "-" : sprintf("1/%.1f", est / allm)
		printf "%-5d %4dx%-7d | %7d vs %-7s %-6s (>=2x) | E=%-3d exact %7.1f (%s) sketch %6s (%s) %-7s (<=1/8) | %s MB (%s) vs ~%.0f MB: %s (<=1/8)\n",
		       d, t, rows, exr, skr, rr, e, exm, exs, skm, sks, mr, allm, alls, est, ar }'
done
if [ "${KEEP:-0}" != 1 ]; then
	for c in $CASES; do
		d=${c%%:*}
		q -c "DROP TABLE IF EXISTS scale_$d, scale_${d}_exact, scale_${d}_sketch"
	done
fi
