#!/usr/bin/env bash
# bench/flat_bench.sh -- a fit past the data's rank on a flat spectrum (4,096 features, 3 clients)
#
#   PGHOST=... PGPORT=... [OLD_PGPORT=... OLD_PGHOST=...] bash bench/flat_bench.sh
#   D=4096 NGROUPS=3 ROWS=4200 R1=5 R2=5 CAP=180 (defaults: a flat spectrum past the data's rank)
#
# Each group's rows are 1 global direction (variance 50) + 1 direction of
# its own (variance 20) + isotropic unit noise in all D coordinates; the
# fit asks for R1 + R2 = 5 + 5, as a user who does not know the ranks would,
# so beyond the planted directions the spectrum is flat.  Prints the time to
# build the statistics (once; kept in fb_stats), then the default fit's wall
# seconds (setup included: the fit call from the statistics), rounds, why it
# stopped and its objective; with OLD_PGPORT, the same fit on that server
# (0.3.0, say; the statistics are copied there in binary) under a cap of CAP
# seconds.  Goal: under 60 s (0.3.0 was cancelled at 180 s).
set -euo pipefail
D=${D:-4096}
GROUPS_=${NGROUPS:-3}
ROWS=${ROWS:-4200}
R1=${R1:-5}
R2=${R2:-5}
CAP=${CAP:-180}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
OLD=(psql -X -q -At -v ON_ERROR_STOP=1 -h "${OLD_PGHOST:-${PGHOST:-}}" -p "${OLD_PGPORT:-0}")

have=$("${PSQL[@]}" -c "SELECT count(*) FROM pg_tables WHERE tablename = 'fb_stats'")
if [ "$have" = 0 ]; then
	t0=$(date +%s.%N)
	# Gaussian scores and noise by Box-Muller; seeded, so every run has the same rows
	"${PSQL[@]}" <<SQL
SELECT setseed(0.34);
CREATE TABLE fb_stats AS
SELECT c AS client, perpca_stats(x) AS stats
  FROM (SELECT c, ARRAY(SELECT sqrt(50.0) * s.a * cos(0.0123 * j) * sqrt(2.0 / $D)
                             + sqrt(20.0) * s.b * sin(0.037 * (j + 1) * c + c) * sqrt(2.0 / $D)
                             + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
                          FROM generate_series(0, $D - 1) AS j) AS x
          FROM generate_series(1, $GROUPS_) AS c, generate_series(1, $ROWS) AS i,
               LATERAL (SELECT sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS a,
                               sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS b
                         WHERE i > 0) AS s) AS r
 GROUP BY c;
SQL
	t1=$(date +%s.%N)
	printf 'statistics: %d groups x %d rows, d = %d, built in %.1f s (once)\n' "$GROUPS_" "$ROWS" "$D" \
		"$(echo "$t1 - $t0" | bc)"
fi

# The default fit at R1 + R2 on the server of psql command "$@": seconds, rounds, stop, objective;
# the backend's CPU seconds from /proc/PID/schedstat (a server on this machine; "-" otherwise).
fit() {
	local EXTRA=${EXTRA:-}
	"$@" <<SQL
SET statement_timeout = '${CAP}s';
LOAD 'perpca';
SELECT pg_backend_pid() AS pid \\gset
\\setenv FB_PID :pid
\\! cut -d' ' -f1 /proc/\$FB_PID/schedstat > $TMPD/cpu0 2>/dev/null || echo - > $TMPD/cpu0
\\timing on
SELECT count(*) FROM perpca_fit('SELECT client, stats FROM fb_stats', $R1, $R2);
\\timing off
\\! cut -d' ' -f1 /proc/\$FB_PID/schedstat > $TMPD/cpu1 2>/dev/null || echo - > $TMPD/cpu1
$EXTRA
SELECT rounds_run, converged, round(objective::numeric, 6) FROM perpca_last_fit();
SQL
}

report() {
	local name=$1 out=$2
	local ms rounds conv obj cpu=-
	ms=$(grep -o 'Time: [0-9.]*' <<<"$out" | awk '{print $2}' | head -1)
	read -r rounds conv obj < <(tail -1 <<<"$out" | tr '|' ' ')
	if [ "$(cat "$TMPD/cpu0")" != - ] && [ "$(cat "$TMPD/cpu1")" != - ]; then
		cpu=$(echo "scale=1; ($(cat "$TMPD/cpu1") - $(cat "$TMPD/cpu0")) / 1000000000" | bc)
	fi
	printf '%-8s %8.1f s (CPU %s s)  %5s rounds  converged %s  objective %s\n' "$name" "$(echo "$ms / 1000" | bc -l)" \
		"$cpu" "$rounds" "$conv" "$obj"
}

if out=$(EXTRA="SELECT 'start', start, basin, ended, rounds_run FROM perpca_last_fit_starts();
SELECT 'stopped', stopped FROM perpca_last_fit();" fit "${PSQL[@]}" 2>&1); then
	grep -E '^(start|stopped)\|' <<<"$out" | sed 's/^/  /'
	report "this" "$(grep -vE '^(start|stopped)\|' <<<"$out")"
else
	printf '%-8s > %d s (cancelled by statement_timeout)\n' "this" "$CAP"
fi
if [ -n "${OLD_PGPORT:-}" ]; then
	if [ "$("${OLD[@]}" -c "SELECT count(*) FROM pg_tables WHERE tablename = 'fb_stats'")" = 0 ]; then
		"${OLD[@]}" -c "CREATE TABLE fb_stats (client int, stats perpca_stats)"
		"${PSQL[@]}" -c "COPY fb_stats TO STDOUT (FORMAT binary)" |
			"${OLD[@]}" -c "COPY fb_stats FROM STDIN (FORMAT binary)"
	fi
	if out=$(fit "${OLD[@]}" 2>&1); then
		report "old" "$out"
	else
		printf '%-8s > %d s (cancelled by statement_timeout)\n' "old" "$CAP"
	fi
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "goal: this < 60 s"
