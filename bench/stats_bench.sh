#!/usr/bin/env bash
# stats_bench.sh -- perpca_stats(x) GROUP BY g against its floors, in one run.
#
# Floors: the scan floor (the same GROUP BY with sum(array_length(x, 1)))
# and a plain single-threaded blocked dsyrk over the same number of rows
# (bench/dsyrk_floor.c).  Goal: aggregate <= 1.3 x (scan + dsyrk).
# Serial plans, work_mem large enough that nothing spills, best of 5 runs.
#
# Connects with the usual libpq variables (PGHOST, PGPORT, PGUSER,
# PGDATABASE) to a server that has perpca installed, e.g. the cluster that
# `bash scripts/demo.sh --keep` leaves running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/dsyrk_floor" "$here/dsyrk_floor.c" -lopenblas

SETTINGS="SET max_parallel_workers_per_gather = 0; SET work_mem = '2GB'; SET jit = off;"

# best_ms SQL: the smallest of five timings of SQL, in milliseconds.
best_ms() {
    for _ in 1 2 3 4 5; do
        psql -X -q -v ON_ERROR_STOP=1 -c "$SETTINGS" -c '\timing on' -c "$1" \
            | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
    done | sort -g | head -1
}

# run_case NAME D ROWS GROUPS
run_case() {
    local name=$1 d=$2 rows=$3 groups=$4 block
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS perpca;
DROP TABLE IF EXISTS $name;
CREATE UNLOGGED TABLE $name AS
    SELECT i % $groups AS g,
           ARRAY(SELECT random() FROM generate_series(1, $d) WHERE i > 0) AS x
    FROM generate_series(1, $rows) AS i;
VACUUM ANALYZE $name;
SQL
    # the extension's block size (BLOCK_ROWS in src/stats.c)
    block=128
    local scan agg blas rank1
    scan=$(best_ms "SELECT sum(n) FROM (SELECT g, sum(array_length(x, 1)) AS n FROM $name GROUP BY g) q")
    agg=$(best_ms "SELECT sum(perpca_dim(s)) FROM (SELECT g, perpca_stats(x) AS s FROM $name GROUP BY g) q")
    blas=$(OPENBLAS_NUM_THREADS=1 "$tmp/dsyrk_floor" "$d" "$rows" "$groups" "$block")
    rank1=$(OPENBLAS_NUM_THREADS=1 "$tmp/dsyrk_floor" "$d" "$rows" "$groups" 1)
    awk -v n="$name" -v d="$d" -v r="$rows" -v g="$groups" -v s="$scan" -v a="$agg" \
        -v b="$blas" -v r1="$rank1" 'BEGIN {
        floor = s + b * 1000;
        printf "%-10s d=%-4d rows=%-7d groups=%-4d scan %8.1f ms  dsyrk %7.1f ms  floor %8.1f ms  perpca_stats %8.1f ms  ratio %.2f (goal <= 1.30)  [per-row dsyr %.1f ms]\n",
               n, d, r, g, s, b * 1000, floor, a, a / floor, r1 * 1000 }'
    psql -X -q -c "DROP TABLE $name"
}

echo "perpca_stats benchmark (serial plans, best of 5)"
run_case bench_d64 64 300000 100
run_case bench_d784 784 20000 10
