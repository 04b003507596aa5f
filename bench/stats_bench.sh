#!/usr/bin/env bash
# stats_bench.sh -- perpca_stats(x) GROUP BY g against its floors, in one run.
#
# Floors, each + a plain single-threaded blocked dsyrk over the same number
# of rows (bench/dsyrk_floor.c):
#   scan: the same GROUP BY with sum(array_length(x, 1)), which detoasts
#         each row but reads only its header;
#   sum:  the same GROUP BY with sum_floor(x), a trivial C aggregate that
#         reads every value (bench/sum_floor.c, built here against the
#         server's headers and loaded for the run: needs a superuser and a
#         server on this machine; PG_CONFIG names its pg_config).
# Goal: aggregate <= 1.3 x (sum + dsyrk), the fairer floor.  Cases: d=64
# with rows interleaved across 100 groups and the same stored group by group
# (the difference is the cost of writing each row into its group's block
# when 100 groups' blocks do not fit in the cache), d=784.  Serial plans,
# work_mem large enough that nothing spills; the three queries take turns
# REPS times (default 5) and each prints its min-max.
#
# Connects with the usual libpq variables (PGHOST, PGPORT, PGUSER,
# PGDATABASE) to a server that has perpca installed, e.g. the cluster that
# `bash scripts/demo.sh --keep` leaves running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cc -O2 -o "$tmp/dsyrk_floor" "$here/dsyrk_floor.c" -lopenblas
cc -O2 -fPIC -shared -I"$("${PG_CONFIG:-pg_config}" --includedir-server)" -o "$tmp/sum_floor.so" "$here/sum_floor.c"
chmod 755 "$tmp/sum_floor.so"
REPS=${REPS:-5}
psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS perpca;
DROP AGGREGATE IF EXISTS sum_floor(float8[]);
DROP FUNCTION IF EXISTS sum_floor_accum(float8, float8[]);
CREATE FUNCTION sum_floor_accum(float8, float8[]) RETURNS float8
    AS '$tmp/sum_floor.so', 'sum_floor_accum' LANGUAGE C STRICT;
CREATE AGGREGATE sum_floor(float8[]) (SFUNC = sum_floor_accum, STYPE = float8, INITCOND = '0');
SQL
trap 'psql -X -q -c "DROP AGGREGATE IF EXISTS sum_floor(float8[]); DROP FUNCTION IF EXISTS sum_floor_accum(float8, float8[])"; rm -rf "$tmp"' EXIT

SETTINGS="SET max_parallel_workers_per_gather = 0; SET work_mem = '2GB'; SET jit = off;"
# Loads both libraries in the session before the timing: loading perpca.so
# (with OpenBLAS and LAPACK) takes ~20 ms in a new backend, which is not the
# aggregate's work; it is timed once, separately.
WARM="SELECT perpca_count(perpca_stats(ARRAY[1]::float8[])), sum_floor(ARRAY[1]::float8[])"

# ms SQL: one timing of SQL in a new session (libraries loaded): "wall cpu",
# in ms; cpu is the backend's own CPU time, all its threads (OpenBLAS may
# start some) summed from /proc/PID/task/*/schedstat, which anyone may read
# (the server must run on this machine): the load of other processes on a
# shared machine inflates it far less than the wall time.
ms() {
    psql -X -q -v ON_ERROR_STOP=1 -c "$SETTINGS" -c "$WARM" -f - <<SQL | awk '
        /^Time: / { wall = $2; next }
        /^[0-9]+$/ { if (t0 == "") t0 = $1; else t1 = $1 }
        END { printf "%.1f %.1f\n", wall, (t1 - t0) / 1e6 }'
SELECT pg_backend_pid() AS bpid \gset
\setenv BPID :bpid
\o /dev/null
\! cat /proc/\$BPID/task/*/schedstat | awk '{ s += \$1 } END { print s }'
\timing on
$1;
\timing off
\! cat /proc/\$BPID/task/*/schedstat | awk '{ s += \$1 } END { print s }'
SQL
}
# lo LIST / hi LIST: smallest / largest of the timings in LIST
lo() { echo "$1" | tr ' ' '\n' | grep . | sort -g | head -1; }
hi() { echo "$1" | tr ' ' '\n' | grep . | sort -g | tail -1; }

# run_case NAME D ROWS GROUPS [clustered]: rows interleaved across groups
# (g = i % GROUPS), or with "clustered" stored group by group
run_case() {
    local name=$1 d=$2 rows=$3 groups=$4 order=${5:-interleaved} g block
    g="i % $groups"
    [ "$order" = clustered ] && g="(i - 1) / ($rows / $groups)"
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
DROP TABLE IF EXISTS $name;
CREATE UNLOGGED TABLE $name AS
    SELECT $g AS g,
           ARRAY(SELECT random() FROM generate_series(1, $d) WHERE i > 0) AS x
    FROM generate_series(1, $rows) AS i;
VACUUM ANALYZE $name;
SQL
    # the extension's block size (BLOCK_ROWS in src/stats_agg.c)
    block=128
    local q_scan q_sum q_agg q t blas blas_cpu rank1 out="" kind
    q_scan="SELECT sum(n) FROM (SELECT g, sum(array_length(x, 1)) AS n FROM $name GROUP BY g) q"
    q_sum="SELECT sum(v) FROM (SELECT g, sum_floor(x) AS v FROM $name GROUP BY g) q"
    q_agg="SELECT sum(perpca_dim(s)) FROM (SELECT g, perpca_stats(x) AS s FROM $name GROUP BY g) q"
    ms "$q_scan" >/dev/null	# warm the cache
    for _ in $(seq "$REPS"); do
        for kind in scan sum agg; do
            q=q_$kind
            t=$(ms "${!q}")
            out="$out $kind $t"
        done
    done
    blas=$(OPENBLAS_NUM_THREADS=1 "$tmp/dsyrk_floor" "$d" "$rows" "$groups" "$block")
    blas_cpu=$(OPENBLAS_NUM_THREADS=1 "$tmp/dsyrk_floor" "$d" "$rows" "$groups" "$block" cpu)
    rank1=$(OPENBLAS_NUM_THREADS=1 "$tmp/dsyrk_floor" "$d" "$rows" "$groups" 1 cpu)
    echo "$out" | awk -v n="$name" -v o="$order" -v d="$d" -v r="$rows" -v g="$groups" \
        -v b="$blas" -v bc="$blas_cpu" -v r1="$rank1" '
    function put(k, w, c) {
        if (!(k in w0) || w < w0[k]) w0[k] = w; if (!(k in w1) || w > w1[k]) w1[k] = w
        if (!(k in c0) || c < c0[k]) c0[k] = c; if (!(k in c1) || c > c1[k]) c1[k] = c }
    { for (i = 1; i + 2 <= NF; i += 3) put($i, $(i + 1), $(i + 2)) }
    END {
        b *= 1000; bc *= 1000
        printf "%s: d=%d, %d rows, %d groups, %s (min-max of the runs, ms)\n", n, d, r, g, o
        printf "  %-13s %17s %17s\n", "", "wall", "backend CPU"
        printf "  %-13s %7.1f-%-9.1f %7.1f-%-9.1f\n", "scan floor", w0["scan"], w1["scan"], c0["scan"], c1["scan"]
        printf "  %-13s %7.1f-%-9.1f %7.1f-%-9.1f\n", "sum floor", w0["sum"], w1["sum"], c0["sum"], c1["sum"]
        printf "  %-13s %17.1f %17.1f\n", "dsyrk", b, bc
        printf "  %-13s %7.1f-%-9.1f %7.1f-%-9.1f\n", "perpca_stats", w0["agg"], w1["agg"], c0["agg"], c1["agg"]
        printf "  [per-row dsyr instead of dsyrk: %.1f ms CPU]\n", r1 * 1000
        printf "  CPU, best against best: %.2f to scan + dsyrk, %.2f to sum + dsyrk (goal <= 1.30)\n",
               c0["agg"] / (c0["scan"] + bc), c0["agg"] / (c0["sum"] + bc)
        printf "  wall, best against best: %.2f to scan + dsyrk, %.2f to sum + dsyrk\n",
               w0["agg"] / (w0["scan"] + b), w0["agg"] / (w0["sum"] + b) }'
    psql -X -q -c "DROP TABLE $name"
}

echo "perpca_stats benchmark (serial plans, $REPS runs each, $(nproc) cores, load average $(cut -d" " -f1-3 /proc/loadavg))"
load=$(psql -X -q -c '\timing on' -c "$WARM" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
echo "loading the libraries in a new session (first call, not in the timings below): $load ms"
run_case bench_d64 64 300000 100
run_case bench_d64c 64 300000 100 clustered
run_case bench_d784 784 20000 10
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg)"
