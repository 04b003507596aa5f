#!/usr/bin/env bash
# bench/write_bench.sh -- a train and a refresh of a model of many clients:
# the backend's CPU seconds of this tree against the last release (OLD_REF,
# default v0.4.0) in the same run (bench/versus.sh builds both and starts a
# throwaway cluster for each; as root it runs as PERPCA_RUN_USER).
#
#   nice -n 10 bash bench/write_bench.sh
#   CLIENTS=1000 ROWS=20 D=10 REPS=3     the defaults
#   NEW=host:port OLD=host:port          running servers instead of building
#
# Rows: CLIENTS clients of ROWS rows in d = D, sharing 2 directions, with 2 of
# their own (setseed: the same rows on both servers).  Each repetition trains
#   perpca_train('m', 'SELECT client, x FROM obs', 2, 2, replace => true)
# on the first period, adds a second period of a tenth of the rows, and
# refreshes (warm: the statistics changed, so it fits).  Printed: the least
# CPU of REPS for each step and version, and now / old.  Floor: 1.00x (the
# engine's rewrite may not cost time).  Never a pass/fail test.
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$BENCH/../scripts/lib.sh"
PERPCA_PACKAGES+=(bc)
VERSUS_KNOBS="CLIENTS ROWS D REPS"
# shellcheck source=bench/versus.sh
. "$BENCH/versus.sh"
versus_as_user write_bench.sh "$@"
versus_knobs
CLIENTS=${CLIENTS:-1000} ROWS=${ROWS:-20} D=${D:-10} REPS=${REPS:-3}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
export OPENBLAS_NUM_THREADS=1
export PGOPTIONS="-c client_min_messages=warning"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/perpca-write.XXXXXX")
versus_servers
[ -n "$OLD_HOST" ] || die "write_bench compares two versions: OLD=- is not supported"

rows_sql="
SELECT perpca_drop('m', if_exists => true);
DROP TABLE IF EXISTS dirs, obs, later;
SELECT setseed(0.29);
CREATE TABLE dirs AS
SELECT c, k, ARRAY(SELECT random() - 0.5 FROM generate_series(1, $D) j WHERE k > -1 ORDER BY j) AS v
  FROM generate_series(0, $CLIENTS) c, generate_series(1, 2) k;
CREATE TABLE obs AS
SELECT 'c' || c AS client, CASE WHEN i <= 0.9 * $ROWS THEN 1 ELSE 2 END AS period,
       (SELECT array_agg(g.v[j] * a + l.v[j] * b + 0.1 * (random() - 0.5) ORDER BY j)
          FROM generate_series(1, $D) j) AS x
  FROM generate_series(1, $CLIENTS) c, generate_series(1, $ROWS) i,
       LATERAL (SELECT v FROM dirs WHERE dirs.c = 0 AND k = 1 + i % 2) g,
       LATERAL (SELECT v FROM dirs WHERE dirs.c = c.c AND k = 1 + (i / 2) % 2) l,
       LATERAL (SELECT 3 * (random() - 0.5) AS a, random() - 0.5 AS b) s;
CREATE TABLE later AS SELECT * FROM obs WHERE period = 2;
DELETE FROM obs WHERE period = 2;
ANALYZE obs;"
echo "$rows_sql" | new_psql >/dev/null
echo "$rows_sql" | old_psql >/dev/null

train_sql="SELECT count(*) FROM perpca_train('m', 'SELECT client, x FROM public.obs', 2, 2, replace => true);"
refresh_sql="INSERT INTO obs SELECT * FROM later;
SELECT outcome FROM perpca_refresh('m');"
reset_sql="DELETE FROM obs WHERE period = 2;"

# The least CPU seconds of REPS runs of step $1 on the server of psql command $2...
least() {
	local step=$1 best="" cpu i
	shift
	for i in $(seq "$REPS"); do
		echo "$train_sql" >"$TMP/train.sql"
		echo "$refresh_sql" >"$TMP/refresh.sql"
		"$@" -c "$reset_sql" >/dev/null
		cpu=$(session_cpu "$TMP/train.sql" "$@")
		[ "$step" = refresh ] && cpu=$(session_cpu "$TMP/refresh.sql" "$@")
		best=$(echo "$cpu $best" | awk '{ print ($2 == "" || $1 < $2) ? $1 : $2 }')
	done
	echo "$best"
}

printf '%-8s %10s %10s %8s\n' step "$OV CPU" "now CPU" now/old
for step in train refresh; do
	o=$(least "$step" old_psql) n=$(least "$step" new_psql)
	printf '%-8s %9.3fs %9.3fs %7.2fx\n' "$step" "$o" "$n" "$(echo "scale=4; $n / $o" | bc)"
done
echo "$CLIENTS clients x $ROWS rows, d = $D, 2 + 2; floor 1.00x; load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(date -u '+%F %H:%M UTC')"
