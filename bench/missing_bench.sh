#!/usr/bin/env bash
# missing_bench.sh -- perpca_stats(x, 'skip') against perpca_stats(x) on
# complete rows, d = 64 and d = 784, in one run.
#
# Goal: 'skip' within 1.05x of the one-argument form when no row
# is skipped: the missing-value check must cost next to nothing.  The two
# queries take turns REPS times (default 7) on the same table, serial plans,
# work_mem large enough that nothing spills; each prints its min-max, and the
# ratio of the minima (min against min: the run least disturbed by the rest of
# the machine) is compared with the goal.  A third case times a table where
# one row in ten has a NULL: what skipping costs against filtering the rows
# out in SQL first (WHERE array_position(x, NULL) IS NULL).
#
# Connects with the usual libpq variables (PGHOST, PGPORT, PGUSER,
# PGDATABASE) to a server that has perpca installed, e.g. the cluster that
# `bash scripts/demo.sh --keep` leaves running.
set -euo pipefail
REPS=${REPS:-7}
SETTINGS="SET max_parallel_workers_per_gather = 0; SET work_mem = '2GB'; SET jit = off;"
WARM="SELECT perpca_count(perpca_stats(ARRAY[1]::float8[]))"

# ms SQL: one timing of SQL, in milliseconds (a new session, library loaded).
ms() {
    psql -X -q -v ON_ERROR_STOP=1 -c "$SETTINGS" -c "$WARM" -c '\timing on' -c "$1" \
        | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
lo() { echo "$1" | tr ' ' '\n' | grep . | sort -g | head -1; }
hi() { echo "$1" | tr ' ' '\n' | grep . | sort -g | tail -1; }

# run_case NAME D ROWS GROUPS QUERY_A LABEL_A QUERY_B LABEL_B [GAPS]
run_case() {
    local name=$1 d=$2 rows=$3 groups=$4 qa=$5 la=$6 qb=$7 lb=$8 gaps=${9:-0} ta="" tb=""
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS perpca;
DROP TABLE IF EXISTS $name;
CREATE UNLOGGED TABLE $name AS
    SELECT i % $groups AS g,
           ARRAY(SELECT CASE WHEN $gaps > 0 AND i % $gaps = 0 AND j = 1 THEN NULL ELSE random() END
                   FROM generate_series(1, $d) AS j WHERE i > 0) AS x
    FROM generate_series(1, $rows) AS i;
VACUUM ANALYZE $name;
SQL
    qa=${qa//TABLE/$name}
    qb=${qb//TABLE/$name}
    ms "$qa" >/dev/null	# warm the cache
    for _ in $(seq "$REPS"); do
        ta="$ta $(ms "$qa")"
        tb="$tb $(ms "$qb")"
    done
    awk -v n="$name" -v d="$d" -v r="$rows" -v g="$groups" -v la="$la" -v lb="$lb" \
        -v a0="$(lo "$ta")" -v a1="$(hi "$ta")" -v b0="$(lo "$tb")" -v b1="$(hi "$tb")" 'BEGIN {
        printf "%s: d=%d, %d rows, %d groups (min-max of %s runs, ms)\n", n, d, r, g, ENVIRON["REPS"]
        printf "  %-40s %8.1f-%-8.1f\n", la, a0, a1
        printf "  %-40s %8.1f-%-8.1f\n", lb, b0, b1
        printf "  ratio of the minima %.3f%s\n", b0 / a0, n ~ /gaps/ ? "" : " (goal <= 1.05)" }'
    psql -X -q -c "DROP TABLE $name"
}
export REPS

ONE="SELECT sum(perpca_count(s)) FROM (SELECT g, perpca_stats(x) AS s FROM TABLE GROUP BY g) q"
SKIP="SELECT sum(perpca_count(s)) FROM (SELECT g, perpca_stats(x, 'skip') AS s FROM TABLE GROUP BY g) q"
FILTER="SELECT sum(perpca_count(s)) FROM (SELECT g, perpca_stats(x) AS s FROM TABLE WHERE array_position(x, NULL) IS NULL GROUP BY g) q"

echo "perpca_stats(x, 'skip') benchmark (serial plans, $REPS runs each, $(nproc) cores, load average $(cut -d" " -f1-3 /proc/loadavg))"
run_case missing_d64 64 300000 100 "$ONE" "perpca_stats(x)" "$SKIP" "perpca_stats(x, 'skip')"
run_case missing_d784 784 20000 10 "$ONE" "perpca_stats(x)" "$SKIP" "perpca_stats(x, 'skip')"
run_case missing_d64_gaps 64 300000 100 "$FILTER" "WHERE array_position(x, NULL) IS NULL" "$SKIP" "perpca_stats(x, 'skip'), 10% rows skipped" 10
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg)"
