#!/usr/bin/env bash
# parallel_stats.sh -- perpca_stats(x) GROUP BY g, serial vs parallel, in one run.
#
# Floor: the scan floor, the same GROUP BY with sum(array_length(x, 1)),
# serial and parallel.  Ideal speed-up with 2 workers is min(cores, 3)
# (two workers plus the leader); on a 2-core machine the goal is that
# perpca_stats scales like the scan floor does (speed-up ratio >= 0.9 of the
# floor's), since combining 2-3 partial states per group costs next to nothing.
# Best of 3 runs each; jit off; work_mem large enough that nothing spills.
#
# Connects with the usual libpq variables (PGHOST, PGPORT, PGUSER,
# PGDATABASE) to a server that has perpca installed.  Sizes:
#   ROWS (default 3000000), DIM (64), NGROUPS (100), WORKERS (2).
# The table (about 1.7 GB at the defaults; building it takes ~30 s) is
# dropped at the end.  Other load on the machine skews the parallel figures:
# the load average is printed before and after the timings.
set -euo pipefail

ROWS=${ROWS:-3000000}
DIM=${DIM:-64}
NGROUPS=${NGROUPS:-100}
WORKERS=${WORKERS:-2}
TABLE=bench_parallel_stats

COMMON="SET work_mem = '1GB'; SET jit = off;"
SERIAL="$COMMON SET max_parallel_workers_per_gather = 0;"
PARALLEL="$COMMON SET max_parallel_workers_per_gather = $WORKERS;
  SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
  SET min_parallel_table_scan_size = 0;"

AGG="SELECT g, perpca_stats(x) FROM $TABLE GROUP BY g"
SCAN="SELECT g, sum(array_length(x, 1)) FROM $TABLE GROUP BY g"

q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# best_ms SETTINGS SQL: the smallest of three timings of SQL, in milliseconds.
# The result rows go to /dev/null, so the 100 perpca_stats values are still
# sent to the client (as they would be in use).
best_ms() {
	for _ in 1 2 3; do
		q -c "$1" -c '\timing on' -c "$2" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
	done | sort -g | head -1
}

# launched SETTINGS SQL: "Workers Launched" of one EXPLAIN ANALYZE (0 if serial).
launched() {
	q -At -c "$1" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $2" |
		sed -n 's/.*Workers Launched: \([0-9]*\).*/\1/p' | head -1 | grep . || echo 0
}

echo "building $TABLE: $ROWS rows, d=$DIM, $NGROUPS groups ..."
q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS perpca;
DROP TABLE IF EXISTS $TABLE;
SELECT setseed(0.5) \\g /dev/null
CREATE UNLOGGED TABLE $TABLE AS
    SELECT i % $NGROUPS AS g,
           ARRAY(SELECT random() + (i % $NGROUPS) FROM generate_series(1, $DIM) WHERE i > 0) AS x
    FROM generate_series(1, $ROWS) AS i;
VACUUM ANALYZE $TABLE;
SQL
size=$(q -At -c "SELECT pg_size_pretty(pg_table_size('$TABLE'))")
# Warm the OS cache.
q -c "$SERIAL" -c "$SCAN" >/dev/null

load0=$(cut -d" " -f1-3 /proc/loadavg)
scan_s=$(best_ms "$SERIAL" "$SCAN")
scan_p=$(best_ms "$PARALLEL" "$SCAN")
agg_s=$(best_ms "$SERIAL" "$AGG")
agg_p=$(best_ms "$PARALLEL" "$AGG")
w_scan=$(launched "$PARALLEL" "$SCAN")
w_agg=$(launched "$PARALLEL" "$AGG")
load1=$(cut -d" " -f1-3 /proc/loadavg)

echo
echo "perpca_stats GROUP BY g: serial vs parallel ($WORKERS workers planned), best of 3"
echo "table $size, $ROWS rows, d=$DIM, $NGROUPS groups, $(nproc) cores, load average $load0 before, $load1 after"
awk -v ss="$scan_s" -v sp="$scan_p" -v as="$agg_s" -v ap="$agg_p" \
	-v ws="$w_scan" -v wa="$w_agg" -v rows="$ROWS" 'BEGIN {
	printf "%-34s %10s %10s %9s %9s\n", "query", "serial ms", "parallel ms", "speed-up", "launched"
	printf "%-34s %10.1f %10.1f %8.2fx %9d\n", "scan floor: sum(array_length(x,1))", ss, sp, ss / sp, ws
	printf "%-34s %10.1f %10.1f %8.2fx %9d\n", "perpca_stats(x)", as, ap, as / ap, wa
	printf "\n"
	printf "perpca_stats over the scan floor: serial %.2fx, parallel %.2fx\n", as / ss, ap / sp
	printf "perpca_stats rows/s: serial %.0f, parallel %.0f\n", rows / as * 1000, rows / ap * 1000
	r = (as / ap) / (ss / sp)
	printf "speed-up relative to the floor'"'"'s: %.2f (goal >= 0.90): %s\n", r, (r >= 0.9 ? "met" : "NOT met")
}'

q -c "DROP TABLE $TABLE"
