#!/usr/bin/env bash
# stats_dist_bench.sh -- perpca_stats_distributed(x) against perpca_stats(x), serial.
#
#   PGHOST=... PGPORT=... PGUSER=... PGDATABASE=... bash bench/stats_dist_bench.sh
#   (REPS=5 timings per query and round, default)
#
# perpca_stats_distributed (the aggregate for Citus, src/stats_dist_agg.c)
# runs perpca_stats' own transition on a state wrapped as an expanded
# perpca_stats value; its serial cost should be perpca_stats'.  Three tables:
# dense groups at d = 64, 1,500 thin groups at d = 784 (rows in TOAST), and a
# few dense groups at d = 784.  For each, the two aggregates take turns twice
# (REPS timings each, best kept) over
#   SELECT sum(perpca_count(s)) FROM (SELECT g, AGG(x) AS s FROM t GROUP BY g) q
# (the outer sum keeps the planner from dropping the unused aggregate),
# serial plans, work_mem 2GB, jit off.  Prints the best times and the ratio.
set -euo pipefail
REPS=${REPS:-5}
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
SETTINGS="SET max_parallel_workers_per_gather = 0; SET work_mem = '2GB'; SET jit = off;"
trap '"${PSQL[@]}" -c "DROP TABLE IF EXISTS sdb_64, sdb_784thin, sdb_784, sdb_many" >/dev/null 2>&1 || true' EXIT

# best AGG TABLE: the smallest of REPS timings, in ms
best() {
	local t b=""
	for _ in $(seq "$REPS"); do
		t=$("${PSQL[@]}" -c "$SETTINGS" -c '\timing on' \
			-c "SELECT sum(perpca_count(s)) FROM (SELECT g, $1(x) AS s FROM $2 GROUP BY g) q" |
			sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
		b=$(printf '%s\n%s\n' "$b" "$t" | grep . | sort -g | head -1)
	done
	echo "$b"
}

# run_case TABLE D ROWS GROUPS
run_case() {
	local name=$1 d=$2 rows=$3 groups=$4 a b
	"${PSQL[@]}" -c "DROP TABLE IF EXISTS $name" -c "CREATE UNLOGGED TABLE $name AS
		SELECT i % $groups AS g, ARRAY(SELECT random() FROM generate_series(1, $d) WHERE i > 0) AS x
		  FROM generate_series(1, $rows) AS i" -c "VACUUM ANALYZE $name"
	for round in 1 2; do
		a=$(best perpca_stats "$name")
		b=$(best perpca_stats_distributed "$name")
		printf '%-12s d=%-4s rows=%-7s groups=%-5s round %s: perpca_stats %9.1f ms  perpca_stats_distributed %9.1f ms  ratio %.2f\n' \
			"$name" "$d" "$rows" "$groups" "$round" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print b / a }')"
	done
}

"${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS perpca"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
run_case sdb_64 64 300000 20
run_case sdb_784thin 784 60000 1500
run_case sdb_784 784 30000 4
run_case sdb_many 6 500000 50000
