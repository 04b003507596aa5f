#!/usr/bin/env bash
# bench/wide_rank_bench.sh -- a fit of many components on dense statistics (r a large part of d)
#
#   PGHOST=... PGPORT=... bash bench/wide_rank_bench.sh
#   D=1536 NGROUPS=8 ROWS=2000 R1=64 R2=192 CAP=900 (defaults: the LSA corpus's shape)
#   D=768 NGROUPS=8 ROWS=1000 R1=32 R2=96            (the smaller case)
#
# Each group's rows are Gaussian with a planted spectrum: R1 coordinates
# shared by every group (standard deviation 3 down to 2), R2 coordinates of
# its own (2 down to 1.5; groups overlap once D - R1 < NGROUPS x R2) and unit
# noise elsewhere.  ROWS > D: dense statistics (d x d), kept in wr_stats_D
# (built once, seeded).  Prints the default fit's backend CPU and wall
# seconds, rounds, why it stopped and its objective, beside the floor: one
# exact top-(R1 + R2) eigendecomposition (bench/eigh_floor.c: dsytrd,
# dstemr, dormtr, as linalg_eigh_top) of a D x D covariance per group, the
# least a fit costs that reads each client's spectrum once.
set -euo pipefail
D=${D:-1536}
GROUPS_=${NGROUPS:-8}
ROWS=${ROWS:-2000}
R1=${R1:-64}
R2=${R2:-192}
CAP=${CAP:-900}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
T=wr_stats_$D

have=$("${PSQL[@]}" -c "SELECT count(*) FROM pg_tables WHERE tablename = '$T'")
if [ "$have" = 0 ]; then
	t0=$(date +%s.%N)
	"${PSQL[@]}" <<SQL
SELECT setseed(0.48);
CREATE TABLE $T AS
SELECT c AS client, perpca_stats(x) AS stats
  FROM (SELECT c, ARRAY(SELECT CASE WHEN j < $R1 THEN 3.0 - j::float8 / $R1
                                    WHEN (j - $R1 - (c - 1) * $R2 + 64 * ($D - $R1)) % ($D - $R1) < $R2
                                    THEN 2.0 - 0.5 * ((j - $R1 - (c - 1) * $R2 + 64 * ($D - $R1)) % ($D - $R1)) / $R2
                                    ELSE 1.0 END
                               * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
                          FROM generate_series(0, $D - 1) AS j WHERE i > 0) AS x
          FROM generate_series(1, $GROUPS_) AS c, generate_series(1, $ROWS) AS i) AS r
 GROUP BY c;
SQL
	t1=$(date +%s.%N)
	printf 'statistics: %d groups x %d rows, d = %d, built in %.1f s (once)\n' "$GROUPS_" "$ROWS" "$D" \
		"$(echo "$t1 - $t0" | bc)"
fi

cat >"$TMP/fit.sql" <<SQL
SET statement_timeout = '${CAP}s';
\\o /dev/null
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM $T', $R1, $R2);
\\o
SELECT rounds_run, stopped, round(objective::numeric, 6) FROM perpca_last_fit();
SQL
if times=$(OPENBLAS_NUM_THREADS=1 backend_cpu "$TMP/fit.sql" "${PSQL[@]}" 2>"$TMP/fail"); then
	read -r cpu wall <<<"$times"
	printf 'fit d = %d, r = %d + %d, %d groups: backend CPU %s s, wall %s s; rounds|stopped|objective %s\n' \
		"$D" "$R1" "$R2" "$GROUPS_" "$cpu" "$wall" "$(tr '\n' ' ' <"$TMP/out")"
else
	printf 'fit d = %d, r = %d + %d, %d groups: cancelled at %s s (%s)\n' "$D" "$R1" "$R2" "$GROUPS_" \
		"$CAP" "$(head -c 200 "$TMP/fail" | tr '\n' ' ')"
fi

cc -O2 -o "$TMP/eigh_floor" "$HERE/eigh_floor.c" -llapacke -lopenblas -lm
one=$(OPENBLAS_NUM_THREADS=1 "$TMP/eigh_floor" "$D" "$ROWS" $((R1 + R2)))
printf 'floor: one top-%d eigendecomposition of a %d x %d S_i per group: %s s x %d = %.2f s CPU\n' \
	$((R1 + R2)) "$D" "$D" "$one" "$GROUPS_" "$(echo "$one * $GROUPS_" | bc)"
