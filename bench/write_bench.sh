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
# their own (setseed: the same rows on both servers).  Each repetition, in one
# session, trains
#   perpca_train('m', 'SELECT client, x FROM obs', 2, 2, replace => true)
# on the first period, adds a second period of a tenth of the rows, and
# refreshes (warm: the statistics changed, so it fits); between the two it
# fits each step's statistics alone with perpca_fit (the refresh's with its
# options: init 'best' from the trained components), which runs the same
# rounds.  Repetitions alternate between the versions.  Printed for each step
# and version: the least CPU of REPS, the rounds, the fit's least CPU and
# CPU a round, and the rest (the whole less the fit: the write path), then
# now / old of each, so that more rounds and a slower path can be told
# apart.  Floor: 1.00x (the engine's rewrite may not cost time).  Never a
# pass/fail test.
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

# The SQL of one repetition, in one session: the train, the fit of its
# statistics alone, the fit of the refresh's statistics alone (with the
# refresh's options: init 'best' from the trained components) and the
# refresh, each between two readings of the backend's CPU time into
# $TMP/marks (as session_cpu), each printing its rounds.
rep_sql() {
	local mark="\\! cut -d' ' -f1 /proc/\$VERSUS_PID/schedstat >> $TMP/marks"
	local fit="SELECT count(*) FROM perpca_fit('SELECT client, stats FROM public.fit_in ORDER BY client COLLATE \"C\"', 2, 2"
	local stats="DROP TABLE IF EXISTS fit_in; CREATE TABLE fit_in AS SELECT client, perpca_stats(x) AS stats FROM obs GROUP BY client;"
	cat <<-EOF
		LOAD 'perpca';
		SELECT pg_backend_pid() AS pid \gset
		\setenv VERSUS_PID :pid
		DELETE FROM obs WHERE period = 2;
		$mark
		SELECT rounds_run FROM perpca_train('m', 'SELECT client, x FROM public.obs', 2, 2, replace => true);
		$mark
		$stats
		$mark
		$fit) \g /dev/null
		$mark
		SELECT rounds_run FROM perpca_last_fit();
		INSERT INTO obs SELECT * FROM later;
		$stats
		$mark
		$fit, init => 'best', start => 'SELECT client, kind, component, pc FROM public.m_components') \g /dev/null
		$mark
		SELECT rounds_run FROM perpca_last_fit();
		$mark
		SELECT rounds_run FROM perpca_refresh('m');
		$mark
	EOF
}

# One repetition on the server of psql command $1...; prints the CPU seconds
# and rounds of "train fit-alone refresh fit-alone":
#   train_cpu train_rounds fit_cpu fit_rounds refresh_cpu refresh_rounds fit_cpu fit_rounds
rep() {
	local -a m o
	rm -f "$TMP/marks"
	rep_sql >"$TMP/run.sql"
	"$@" -f "$TMP/run.sql" >"$TMP/out"
	mapfile -t m <"$TMP/marks"
	mapfile -t o <"$TMP/out"
	if [ "${#m[@]}" -ne 8 ] || [ "${#o[@]}" -ne 4 ]; then die "a repetition printed ${#o[@]} rounds and ${#m[@]} CPU readings"; fi
	echo "$(((m[1] - m[0]) / 1000)) ${o[0]} $(((m[3] - m[2]) / 1000)) ${o[1]}" \
		"$(((m[7] - m[6]) / 1000)) ${o[3]} $(((m[5] - m[4]) / 1000)) ${o[2]}"
}

# The least CPU of the repetitions in file $1 for the step in columns $2
# (its CPU, rounds, then the fit's alone); prints "cpu rounds fit_cpu
# fit_rounds rest" in seconds, rest = the least whole less the least fit
# (rounds as "a/b" when the repetitions disagree).
least() {
	awk -v c="$2" '
		function lo(v, k) { if (!(k in best) || v < best[k]) best[k] = v }
		function seen(v, k) { if (!(k in r)) r[k] = v; else if (index("/" r[k] "/", "/" v "/") == 0) r[k] = r[k] "/" v }
		{ lo($c / 1e6, 1); seen($(c + 1), 2); lo($(c + 2) / 1e6, 3); seen($(c + 3), 4) }
		END { printf "%.3f %s %.3f %s %.3f\n", best[1], r[2], best[3], r[4], best[1] - best[3] }' "$1"
}

# One step's lines: both versions and now / old.
report() {
	local step=$1 col=$2 o n
	read -r -a o < <(least "$TMP/old.reps" "$col")
	read -r -a n < <(least "$TMP/now.reps" "$col")
	line "$step" "$OV" "${o[@]}"
	line "$step" now "${n[@]}"
	printf '%-8s %-8s %7.2fx %8s %7.2fx %8.2fx %7.2fx\n' "$step" now/old "$(ratio "${n[0]}" "${o[0]}")" "" \
		"$(ratio "${n[2]}" "${o[2]}")" "$(ratio "$(per_round "${n[2]}" "${n[3]}")" "$(per_round "${o[2]}" "${o[3]}")")" \
		"$(ratio "${n[4]}" "${o[4]}")"
}
ratio() { echo "scale=4; $1 / $2" | bc; }
per_round() { echo "scale=6; $1 * 1000 / ${2%%/*}" | bc; }
# (rounds: the step's, and the fit's alone after a bar where they differ)
line() {
	local rounds=$4
	[ "$4" = "$6" ] || rounds="$4|$6"
	printf '%-8s %-8s %7.3fs %8s %7.3fs %7.3fms %7.3fs\n' "$1" "$2" "$3" "$rounds" "$5" "$(per_round "$5" "$6")" "$7"
}

: >"$TMP/old.reps"
: >"$TMP/now.reps"
# alternately, so that both versions meet the same load
for _ in $(seq "$REPS"); do
	rep old_psql >>"$TMP/old.reps"
	rep new_psql >>"$TMP/now.reps"
done
printf '%-8s %-8s %8s %8s %8s %9s %8s\n' step version CPU rounds "fit CPU" "fit/round" "rest"
report train 1
report refresh 5
echo "$CLIENTS clients x $ROWS rows, d = $D, 2 + 2; floor 1.00x; load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(date -u '+%F %H:%M UTC')"
