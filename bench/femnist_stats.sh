#!/usr/bin/env bash
# femnist_stats.sh -- perpca_stats(x) GROUP BY client with thousands of thin
# groups (FEMNIST's shape), under every plan, in one run.
#
# Plans: HashAggregate with work_mem = 4MB (spills) and 4GB (all states in
# memory), Sort + GroupAggregate (enable_hashagg = off), and the plan the
# planner picks at default settings; each on rows interleaved across groups
# (client = i % N) and clustered by group (client = i / ROWS_PER).  Serial
# plans, jit off.  The plans take turns REPS times, so that other load on
# the machine hits them alike, each table warmed by an untimed run before
# its plans; each cell prints min-max over the runs of the wall time and of
# the CPU time of the backend and its parallel workers, and the batches and
# memory of one EXPLAIN ANALYZE.  Goal: the worst serial plan within 1.3x
# of the best.
#
#   PGHOST=... PGPORT=... PGUSER=<superuser> PGDATABASE=... bash bench/femnist_stats.sh
#   sizes: N=355 (default: a tenth of FEMNIST) D=784 ROWS_PER=89 REPS=3
#   FULL=1 sets N=3550: FEMNIST's 316k rows, two tables of 2.5 GB each
#   (check free disk space first; building them takes a few minutes).
#
# Rows are drawn from a pool of at most 10,000 distinct random rows (so the
# tables build quickly); every row is stored separately, out of line as a
# real table's rows of d = 784 are.  Tables are dropped at the end
# (KEEP=1 keeps them; REUSE=1 uses femnist_inter and femnist_clust if they
# exist).  The parallel plans (2 workers, parallel costs 0, work_mem 4MB
# and 4GB) report the Partial HashAggregate's batches and memory per
# process; their CPU time includes the workers'.
set -euo pipefail
N=${N:-355}
[ "${FULL:-0}" = 1 ] && N=3550
D=${D:-784}
ROWS_PER=${ROWS_PER:-89}
REPS=${REPS:-3}
ROWS=$(( N * ROWS_PER ))
POOL=$(( ROWS < 10000 ? ROWS : 10000 ))

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

if [ "${REUSE:-0}" = 1 ] && [ "$(q -c "SELECT count(*) FROM pg_class WHERE relname IN ('femnist_inter', 'femnist_clust')")" = 2 ]; then
	N=$(q -c "SELECT count(DISTINCT client) FROM femnist_inter")
	ROWS=$(q -c "SELECT count(*) FROM femnist_inter")
	D=$(q -c "SELECT cardinality(x) FROM femnist_inter LIMIT 1")
	ROWS_PER=$(( ROWS / N ))
	echo "reusing femnist_inter and femnist_clust"
else
echo "building: $N groups x $ROWS_PER rows, d=$D ($ROWS rows), interleaved and clustered"
q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS perpca;
DROP TABLE IF EXISTS femnist_pool, femnist_inter, femnist_clust;
SELECT setseed(0.5) \\g /dev/null
CREATE UNLOGGED TABLE femnist_pool AS
    SELECT i AS id, ARRAY(SELECT random() FROM generate_series(1, $D) WHERE i >= 0) AS x
    FROM generate_series(0, $POOL - 1) AS i;
CREATE UNLOGGED TABLE femnist_inter AS
    SELECT (i % $N)::int AS client, p.x
    FROM generate_series(0::bigint, $ROWS - 1) AS i JOIN femnist_pool p ON p.id = (i * 7919) % $POOL;
CREATE UNLOGGED TABLE femnist_clust AS
    SELECT (i / $ROWS_PER)::int AS client, p.x
    FROM generate_series(0::bigint, $ROWS - 1) AS i JOIN femnist_pool p ON p.id = (i * 7919) % $POOL;
DROP TABLE femnist_pool;
VACUUM ANALYZE femnist_inter;
VACUUM ANALYZE femnist_clust;
SQL
fi
size=$(q -c "SELECT pg_size_pretty(pg_total_relation_size('femnist_inter'))")

BASE="SET max_parallel_workers_per_gather = 0; SET jit = off;"
PAR="SET jit = off; SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
     SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET enable_sort = off;"
declare -A SET=(
	[hash_4MB]="$BASE SET work_mem = '4MB'; SET enable_sort = off;"
	[hash_4GB]="$BASE SET work_mem = '4GB'; SET enable_sort = off;"
	[sort_4MB]="$BASE SET work_mem = '4MB'; SET enable_hashagg = off;"
	[default]="$BASE"
	[par_4MB]="$PAR SET work_mem = '4MB';"
	[par_4GB]="$PAR SET work_mem = '4GB';"
)
PLANS=(hash_4MB hash_4GB sort_4MB default par_4MB par_4GB)
TABLES=(femnist_inter femnist_clust)
query() { echo "SELECT sum(perpca_count(s)) FROM (SELECT client, perpca_stats(x) AS s FROM $1 GROUP BY client) q"; }

# run SETTINGS SQL: "wall_ms cpu_ms" of one run; cpu = user + system time
# from /proc (the server must run on this machine) of the backend and of
# its parallel workers (the postmaster's reaped children: run on a cluster
# of your own, as other sessions' exits count there too), which other load
# on the machine disturbs much less than the wall time
run() {
	q <<SQL | awk '/^CPU/ {c[++n] = $2 + $3} /^Time:/ {w = $2} END {print w, (c[2] - c[1]) * 10}'
$1
SELECT pg_backend_pid() AS bpid \gset
\setenv BPID :bpid
\! sleep 0.3; awk '{print \$4}' /proc/\$BPID/stat | { read -r pm; echo CPU \$(awk '{print \$14 + \$15}' /proc/\$BPID/stat) \$(awk '{print \$16 + \$17}' /proc/\$pm/stat); }
\timing on
$2 \g /dev/null
\timing off
\! sleep 0.3; awk '{print \$4}' /proc/\$BPID/stat | { read -r pm; echo CPU \$(awk '{print \$14 + \$15}' /proc/\$BPID/stat) \$(awk '{print \$16 + \$17}' /proc/\$pm/stat); }
SQL
}

# shape SETTINGS SQL: "plan, batches, memory" from one EXPLAIN ANALYZE
shape() {
	q -c "$1" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) $2" | python3 -c '
import json, sys
def aggs(p):
    if p.get("Node Type") == "Aggregate" and p.get("Strategy") != "Plain":
        yield p
    for c in p.get("Plans", []):
        yield from aggs(c)
out = []
for p in aggs(json.load(sys.stdin)[0]["Plan"]):
    kind = {"Hashed": "HashAggregate", "Sorted": "GroupAggregate"}[p["Strategy"]]
    if p.get("Partial Mode", "Simple") != "Simple":
        kind = p["Partial Mode"] + " " + kind
    if p["Strategy"] == "Hashed":
        procs = [p] + p.get("Workers", [])
        out.append("%s: %s batches, %s MB" % (kind,
            "/".join(str(w.get("HashAgg Batches", "?")) for w in procs),
            "/".join("%.0f" % (w.get("Peak Memory Usage", 0) / 1024.0) for w in procs)))
    else:
        s = p["Plans"][0]
        out.append("%s (%s)" % (kind, s.get("Sort Method", s.get("Node Type"))))
print("; ".join(out))'
}

declare -A W C
load0=$(cut -d" " -f1-3 /proc/loadavg)
for rep in $(seq "$REPS"); do
	for t in "${TABLES[@]}"; do
		# warm the caches with this table (untimed): otherwise the first plan
		# after switching tables reads the TOAST table back into shared buffers
		q -c "$BASE" -c "$(query "$t")" >/dev/null
		for p in "${PLANS[@]}"; do
			read -r w c < <(run "${SET[$p]}" "$(query "$t")")
			W[$t.$p]="${W[$t.$p]:-} $w"
			C[$t.$p]="${C[$t.$p]:-} $c"
		done
	done
done
load1=$(cut -d" " -f1-3 /proc/loadavg)

# range LIST: "min-max" in seconds;  best LIST: min in ms
range() { echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {printf "%.2f-%.2f", v[1] / 1000, v[NR] / 1000}'; }
best() { echo "$1" | tr ' ' '\n' | grep . | sort -g | head -1; }

echo
echo "perpca_stats(x) GROUP BY client: $N groups x $ROWS_PER rows, d=$D, table $size; $REPS runs each (min-max)"
echo "$(nproc) cores, load average $load0 before, $load1 after; cpu = CPU time of the backend and its parallel workers"
printf '%-9s %-12s %-12s %-12s %-12s  %s\n' "plan" "inter wall s" "inter cpu s" "clust wall s" "clust cpu s" \
	"shape (interleaved; batches and memory: leader/workers)"
for p in "${PLANS[@]}"; do
	printf '%-9s %-12s %-12s %-12s %-12s  %s\n' "$p" \
		"$(range "${W[femnist_inter.$p]}")" "$(range "${C[femnist_inter.$p]}")" \
		"$(range "${W[femnist_clust.$p]}")" "$(range "${C[femnist_clust.$p]}")" \
		"$(shape "${SET[$p]}" "$(query femnist_inter)")"
done
for t in "${TABLES[@]}"; do
	for kind in wall cpu; do
		for p in hash_4MB hash_4GB sort_4MB default; do
			if [ $kind = wall ]; then echo "$p $(best "${W[$t.$p]}")"; else echo "$p $(best "${C[$t.$p]}")"; fi
		done | sort -k2 -g | awk -v t="$t" -v k="$kind" '{v[NR] = $2; n[NR] = $1} END {
			printf "%s, %s: best %s %.2f s, worst %s %.2f s: worst/best %.2f (goal <= 1.30)\n",
				t, k, n[1], v[1] / 1000, n[NR], v[NR] / 1000, v[NR] / v[1] }'
	done
	bs=$(for p in hash_4MB hash_4GB sort_4MB default; do echo "${W[$t.$p]}"; done | tr ' ' '\n' | grep . | sort -g | head -1)
	cs=$(for p in hash_4MB hash_4GB sort_4MB default; do echo "${C[$t.$p]}"; done | tr ' ' '\n' | grep . | sort -g | head -1)
	for p in par_4MB par_4GB; do
		awk -v t="$t" -v b="$bs" -v p="$(best "${W[$t.$p]}")" -v cb="$cs" -v cp="$(best "${C[$t.$p]}")" -v n="$p" 'BEGIN {
			printf "%s: %s (2 workers) %.2f s wall, best serial %.2f s: speed-up %.2fx; CPU %.2f s against %.2f s (%.2fx)\n",
				t, n, p / 1000, b / 1000, b / p, cp / 1000, cb / 1000, cp / cb }'
	done
done
if [ "${KEEP:-0}" != 1 ]; then
	q -c "DROP TABLE femnist_inter, femnist_clust"
fi
