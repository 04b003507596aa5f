#!/usr/bin/env bash
# femnist_bench.sh -- many small clients: FEMNIST's shape (3,550 writers with
# ~89 images of 784 pixels each), synthetic rows.
#
# Every client has far fewer rows than dimensions, so perpca_stats keeps its
# centred rows (the thin form) and perpca_fit computes S_i W = Y_i'(Y_i W)/n
# without forming any d x d matrix.  Reports the statistics scan, the fit's
# setup and time per round, and the fitting backend's peak memory (VmHWM)
# against what dense d x d statistics would need (N d^2 doubles).
#
#   PGHOST=... PGPORT=... PGUSER=<superuser> PGDATABASE=... bash bench/femnist_bench.sh
#   sizes: N=3550 D=784 ROWS_PER=89 ROUNDS=100 NGLOBAL=2 NLOCAL=3 (defaults)
set -euo pipefail
N=${N:-3550}
D=${D:-784}
ROWS_PER=${ROWS_PER:-89}
ROUNDS=${ROUNDS:-100}
NGLOBAL=${NGLOBAL:-2}
NLOCAL=${NLOCAL:-3}
ROWS=$(( N * ROWS_PER ))

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

echo "FEMNIST-shaped benchmark: N=$N clients, d=$D, ~$ROWS_PER rows each ($ROWS rows), $NGLOBAL global + $NLOCAL local components"
q -c "CREATE EXTENSION IF NOT EXISTS perpca" 2>/dev/null
t0=$(date +%s.%N)
q <<SQL
DROP TABLE IF EXISTS femnist_rows, femnist_stats;
CREATE UNLOGGED TABLE femnist_rows AS
    SELECT (random() * $N)::int % $N AS client,
           ARRAY(SELECT random() FROM generate_series(1, $D) WHERE i > 0) AS x
    FROM generate_series(1, $ROWS) AS i;
SQL
t1=$(date +%s.%N)
q <<SQL
SET work_mem = '8GB';
SET max_parallel_workers_per_gather = 0;
CREATE UNLOGGED TABLE femnist_stats AS
    SELECT client, perpca_stats(x) AS stats FROM femnist_rows GROUP BY client;
SQL
t2=$(date +%s.%N)
forms=$(q -c "SELECT string_agg(f || ' ' || c, ', ') FROM (SELECT perpca_stats_form(stats) f, count(*) c FROM femnist_stats GROUP BY 1) s")
size=$(q -c "SELECT pg_size_pretty(sum(pg_column_size(stats))) FROM femnist_stats")
awk -v a="$t0" -v b="$t1" -v c="$t2" -v f="$forms" -v s="$size" 'BEGIN {
    printf "  rows generated in %.1f s; statistics (GROUP BY client, serial) in %.1f s: %s, %s stored\n", b - a, c - b, f, s }'

# one session per fit, so VmHWM is that fit's peak
fit() {
    q <<SQL
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM femnist_stats', $NGLOBAL, $NLOCAL,
                                rounds => $1, tolerance => 0);
SELECT seconds FROM perpca_last_fit();
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1];
SQL
}
mapfile -t out0 < <(fit 0)
mapfile -t out1 < <(fit "$ROUNDS")
setup=${out0[1]} mem0=${out0[2]} total=${out1[1]} mem1=${out1[2]}
awk -v s="$setup" -v t="$total" -v r="$ROUNDS" -v m0="$mem0" -v m1="$mem1" -v n="$N" -v d="$D" 'BEGIN {
    printf "  perpca_fit setup (read clients, start, output; rounds => 0): %.1f s, peak backend memory %.2f GB\n", s, m0 / 1048576
    printf "  perpca_fit %d rounds: %.1f s in all, %.2f s per round, peak backend memory %.2f GB\n", r, t, (t - s) / r, m1 / 1048576
    printf "  dense statistics would need N d^2 doubles = %.1f GB for the S_i alone\n", n * d * d * 8 / 1e9 }'
q -c "DROP TABLE femnist_rows, femnist_stats"
