#!/usr/bin/env bash
# bench/memory_bench.sh -- the backend's peak memory of a fit over many small groups
#
#   PGHOST=... PGPORT=... PGUSER=<superuser> PGDATABASE=... bash bench/memory_bench.sh
#   NGROUPS=20000 D=8 ROWS=50 R1=2 R2=2 (defaults: 20,000 small groups)
#
# One session per fit, so VmHWM (read from /proc/self/status, which needs a
# superuser's pg_read_file) is that fit's peak: the default fit (L-BFGS,
# starts and hops), hops => 0, and solver => 'paper'.  Prints each peak in
# MB and the default's ratio to the paper solver's.  Goal: <= 1.2
# (0.3.0: 296 MB against 126 MB, 2.3).
set -euo pipefail
GROUPS_=${NGROUPS:-20000}
D=${D:-8}
ROWS=${ROWS:-50}
R1=${R1:-2}
R2=${R2:-2}
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

if [ "$(q -c "SELECT count(*) FROM pg_tables WHERE tablename = 'mb_stats'")" = 0 ]; then
	q <<SQL
SELECT setseed(0.5);
CREATE TABLE mb_stats AS
SELECT c AS client, perpca_stats(x) AS stats
  FROM (SELECT i % $GROUPS_ AS c,
               ARRAY(SELECT (j + 1) * sin(i * 0.001 * (j + 1)) + (i % $GROUPS_ % 7) * cos(j * (i % 5))
                            + random() FROM generate_series(0, $D - 1) AS j) AS x
          FROM generate_series(1, $GROUPS_ * $ROWS) AS i) AS r
 GROUP BY c;
SQL
fi
# peak MB and seconds of one fit with the given options, in its own session
peak() {
	q <<SQL | tail -1
SELECT count(*) AS fit_rows FROM perpca_fit('SELECT client, stats FROM mb_stats', $R1, $R2 $1) \gset
SELECT round((regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1]::numeric / 1024, 1),
       round(seconds::numeric, 1), rounds_run FROM perpca_last_fit();
SQL
}
read -r lb lbs lbr < <(peak "" | tr '|' ' ')
read -r h0 h0s h0r < <(peak ", hops => 0" | tr '|' ' ')
read -r pp pps ppr < <(peak ", solver => 'paper'" | tr '|' ' ')
printf '%d groups, d = %d, %d + %d:\n' "$GROUPS_" "$D" "$R1" "$R2"
printf '  default (lbfgs)      %7.1f MB  %6.1f s  %5d rounds\n' "$lb" "$lbs" "$lbr"
printf '  hops => 0            %7.1f MB  %6.1f s  %5d rounds\n' "$h0" "$h0s" "$h0r"
printf "  solver => 'paper'    %7.1f MB  %6.1f s  %5d rounds\n" "$pp" "$pps" "$ppr"
awk -v a="$lb" -v b="$pp" 'BEGIN { printf "  default / paper: %.2f (goal <= 1.2; 0.3.0: 296 / 126 = 2.35)\n", a / b }'
