#!/usr/bin/env bash
# bench/span_fit.sh -- a fit of sketched tenants in the span of their rows, against the fit in d
#
#   PGHOST=... PGPORT=... PGUSER=<superuser> PGDATABASE=... nice -n 10 bash bench/span_fit.sh
#   TENANTS=20 ROWS=5000 D=16000 ELL=64 R1=3 R2=2 (defaults)  OLD=0 (skip the fit in d)  KEEP=1
#   LIBS="before=/path/a/perpca.so after=/path/b/perpca.so" (the span fit with each build in turn)
#
# TENANTS tenants of ROWS vector(D) rows each (planted structure plus noise,
# not real data: bench/planted_vectors.py), each sketched at ELL
# (perpca_sketch(v, ELL)) into a stored table, one tenant's rows at a time
# (their table is dropped after its sketch; the sketches are kept for the
# next run unless KEEP=0 ... they are reused when there).  Then the same fit
# (R1 + R2, default options) twice, each in its own session: in the span of
# the sketches' rows (the default) and in all D dimensions
# (perpca.fit_span = off, what 0.4.0 did).  For each: the backend's CPU
# seconds (utime + stime of /proc/<pid>/stat around the fit), its peak
# memory (VmHWM, which needs a superuser's pg_read_file; it counts the
# shared buffers the backend touched, so a bare session's is printed
# beside), its private peak (the largest RssAnon sampled from this machine
# every 20 ms while the session lives: palloc'd and malloc'd memory, not
# the shared buffers), the fit's seconds, rounds and objective.  With LIBS,
# the span fit runs once per build of perpca.so (each renamed in turn into
# the server's library directory, which needs write access there), so
# builds compare on one server and one table in one run.  Then the relative
# difference of the objectives and the projector distances between the two
# fits' global and (largest over tenants) local components.  Goals: the span
# fit <= 10 s of CPU and <= 150 MB peak, the objectives equal to 1e-9
# relative.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
TENANTS=${TENANTS:-20}
ROWS=${ROWS:-5000}
D=${D:-16000}
ELL=${ELL:-64}
R1=${R1:-3}
R2=${R2:-2}
OLD=${OLD:-1}
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
tbl=span_sketch_${D}_${ROWS}_${ELL}

q -c 'CREATE EXTENSION IF NOT EXISTS perpca_vector CASCADE'
echo "server $(q -c 'SHOW server_version'), shared_buffers $(q -c 'SHOW shared_buffers'), perpca $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'perpca'"), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# the sketches, one tenant's rows at a time (unless they are there)
if [ "$(q -c "SELECT to_regclass('$tbl') IS NOT NULL")" != t ] || [ "$(q -c "SELECT count(*) FROM $tbl")" != "$TENANTS" ]; then
	q -c "DROP TABLE IF EXISTS $tbl; CREATE UNLOGGED TABLE $tbl (tenant int PRIMARY KEY, stats perpca_stats NOT NULL)"
	for ((t = 0; t < TENANTS; t++)); do
		q -c "DROP TABLE IF EXISTS span_rows; CREATE UNLOGGED TABLE span_rows (tenant int NOT NULL, v vector($D) NOT NULL)"
		/usr/bin/python3 "$here/planted_vectors.py" 1 "$ROWS" "$D" "$t" | q -c "COPY span_rows FROM STDIN (FORMAT binary)"
		q -c "SET max_parallel_workers_per_gather = 0" \
			-c "INSERT INTO $tbl SELECT tenant, perpca_sketch(v, $ELL) FROM span_rows GROUP BY tenant"
	done
	q -c "DROP TABLE span_rows" -c "VACUUM ANALYZE $tbl"
fi
echo "== $TENANTS tenants x $ROWS rows, d = $D, sketched at ell = $ELL: $(q -c "SELECT string_agg(DISTINCT perpca_stats_form(stats), ', ') || ' values, ' || pg_size_pretty(sum(pg_column_size(stats))) FROM $tbl"); fit $R1 + $R2"

# the backend's VmHWM (MB) and CPU ticks, as SQL expressions
hwm="round((regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]::numeric / 1024, 1)"
ticks="(SELECT m[1]::bigint + m[2]::bigint FROM regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/stat'), '\) \S+ (?:\S+ ){10}(\d+) (\d+)') m)"
hz=$(getconf CLK_TCK)

# the largest RssAnon (MB) of backend $1 while it lives, sampled every 20 ms: its private memory
# (palloc'd and malloc'd, LAPACK's and OpenBLAS's buffers too; not the shared buffers it touched)
rss_anon_peak() {
	local max=0 k v _
	while [ -r "/proc/$1/status" ]; do
		while read -r k v _; do
			[ "$k" = RssAnon: ] && { [ "$v" -gt "$max" ] && max=$v; break; }
		done <"/proc/$1/status" 2>/dev/null || break
		sleep 0.02
	done
	awk -v kb="$max" 'BEGIN { printf "%.1f", kb / 1024 }'
}

# fit SPAN: "MB cpu_s seconds rounds objective anon_MB" of the fit in its own session, its rows kept in
# span_fit_SPAN, its backend's RssAnon sampled from here (the server runs on this machine)
fit() {
	local pidfile out job
	pidfile=$(mktemp) out=$(mktemp)
	q >"$out" <<-SQL &
		SELECT pg_backend_pid() \g $pidfile
		SET perpca.fit_span = $1;
		DROP TABLE IF EXISTS span_fit_$1;
		SELECT $ticks AS t0 \gset
		CREATE UNLOGGED TABLE span_fit_$1 AS SELECT * FROM perpca_fit('SELECT tenant, stats FROM $tbl', $R1, $R2);
		SELECT $hwm, round(($ticks - :t0) / $hz.0, 2), round(seconds::numeric, 2), rounds_run, objective FROM perpca_last_fit();
	SQL
	job=$!
	while [ ! -s "$pidfile" ] && kill -0 "$job" 2>/dev/null; do sleep 0.01; done
	anon=$(rss_anon_peak "$(tr -dc 0-9 <"$pidfile")")
	wait "$job"
	echo "$(tail -1 "$out" | tr '|' ' ') $anon"
	rm -f "$pidfile" "$out"
}

# LIBS="name=path ...": the span fit once with each build of perpca.so, installed in turn (renamed into
# the server's library directory: new sessions load it); the last stays installed
libdir=$(q -c "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")
use_lib() {
	cp "$1" "$libdir/perpca.so.new" && mv "$libdir/perpca.so.new" "$libdir/perpca.so"
}
bare=$(q -c "SELECT perpca_count(perpca_stats('{1}'::float8[]))" -c "SELECT $hwm" | tail -1)
bare_anon=$(q -c "SELECT perpca_count(perpca_stats('{1}'::float8[]))" -c "SELECT ${hwm//VmHWM/RssAnon}" | tail -1)
# what one read of every stored value costs (detoasted whole, its header checked), twice in one session:
# the span fit reads its rows about five times over (a check at reading, the Gram matrix's panels, the lift)
read_cpu=$(q <<-SQL | tail -1
	SELECT perpca_count(perpca_stats('{1}'::float8[]));
	SELECT $ticks AS t0 \gset
	SELECT count(*) FROM $tbl WHERE perpca_dim(stats) > 0;
	SELECT $ticks AS t1 \gset
	SELECT count(*) FROM $tbl WHERE perpca_dim(stats) > 0;
	SELECT round((:t1 - :t0) / $hz.0, 2) || ' and ' || round(($ticks - :t1) / $hz.0, 2);
SQL
)
echo "   one read of the $TENANTS stored values, twice: $read_cpu CPU s"
rows=()
dist="- -"
for lib in ${LIBS:-current=}; do
	name=${lib%%=*}
	[ -z "${lib#*=}" ] || use_lib "${lib#*=}"
	on=$(fit on)
	echo "   in the span ($name): VmHWM MB, CPU s, fit s, rounds, objective, RssAnon peak MB: $on"
	rows+=("$name $on")
done
if [ "$OLD" = 1 ]; then
	off=$(fit off)
	echo "   in d:        VmHWM MB, CPU s, fit s, rounds, objective, RssAnon peak MB: $off"
	# projector distance sqrt(2 (r - ||A'B||_F^2)) between the two fits' components of one kind and client
	dist=$(q <<-SQL
		WITH ip AS (
		  SELECT a.client, a.kind, sum(x * y) AS p
		  FROM span_fit_on a JOIN span_fit_off b ON a.kind = b.kind AND a.client IS NOT DISTINCT FROM b.client,
		       unnest(a.pc, b.pc) AS u(x, y)
		  GROUP BY a.client, a.kind, a.component, b.component),
		per AS (
		  SELECT client, kind, sqrt(greatest(2 * (sqrt(count(*)) - sum(p * p)), 0)) AS dist FROM ip GROUP BY client, kind)
		SELECT (SELECT max(dist) FROM per WHERE kind = 'global') || ' ' || (SELECT max(dist) FROM per WHERE kind = 'local')
	SQL
	)
	rows+=("in_d $off")
fi
echo
echo "bare session: VmHWM $bare MB, RssAnon $bare_anon MB; $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
# the last span row (the build left installed) against the fit in d
printf '%s\n' "${rows[@]}" | awk -v dg="${dist%% *}" -v dl="${dist##* }" '
	{ name[NR] = $1; mb[NR] = $2; cpu[NR] = $3; s[NR] = $4; rounds[NR] = $5; obj[NR] = $6; anon[NR] = $7 }
	END {
		printf "%-12s %8s %10s %14s %8s %8s  %s\n", "fit", "CPU s", "VmHWM MB", "RssAnon pk MB", "fit s", "rounds", "objective"
		for (i = 1; i <= NR; i++)
			printf "%-12s %8.2f %10.1f %14.1f %8.2f %8d  %.15g\n", (name[i] == "in_d") ? "in d" : "span " name[i],
			       cpu[i], mb[i], anon[i], s[i], rounds[i], obj[i]
		last = (name[NR] == "in_d") ? NR - 1 : NR
		printf "goals (span %s): CPU <= 10 s: %s; peak <= 150 MB: VmHWM %s, RssAnon %s", name[last],
		       (cpu[last] <= 10) ? "met" : "NOT met", (mb[last] <= 150) ? "met" : "NOT met", (anon[last] <= 150) ? "met" : "NOT met"
		if (name[NR] == "in_d") {
			rel = (obj[last] - obj[NR]) / obj[NR]; if (rel < 0) rel = -rel
			printf "; objective %.2e relative to the fit in d: %s\n", rel, (rel <= 1e-9) ? "met" : "NOT met"
			printf "projector distance to the fit in d: global %s, local (largest) %s\n", dg, dl
		} else printf "\n"
	}'
[ "${KEEP:-1}" = 1 ] || q -c "DROP TABLE IF EXISTS $tbl"
q -c "DROP TABLE IF EXISTS span_fit_on, span_fit_off"
