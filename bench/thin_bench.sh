#!/usr/bin/env bash
# bench/thin_bench.sh -- a fit over thin clients against one read of their statistics
#
#   PGHOST=... PGPORT=... PGDATABASE=... bash bench/thin_bench.sh
#   D=3000 CLIENTS=50 ROWS=400 R1=2 R2=3 (defaults: thin clients,
#   460 MB of statistics; every client has n <= d/2 rows, so it is stored thin)
#   INPUT=vector: the rows as pgvector's vector (perpca_vector installed):
#   thin values of float4 rows (format version 4, half the bytes), which the
#   fit reads widened to doubles
#
# Prints: the size of the statistics, the time of one read of them (the
# floor: detoasting every value), the default fit (solver 'lbfgs', all
# starts and hops), the same without hops (hops => 0: what the hops cost)
# and a 1-round fit of the paper's solver (0.1.0's setup cost), each
# with its wall and backend CPU seconds, the ratio to the read, and the
# backend's peak memory (VmHWM) against the statistics' size.  Goal: fit <=
# 10x the read; peak memory < 2x the statistics plus a few d x d workspaces.
set -euo pipefail
D=${D:-3000}
CLIENTS=${CLIENTS:-50}
ROWS=${ROWS:-400}
R1=${R1:-2}
R2=${R2:-3}
INPUT=${INPUT:-float8}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
case $INPUT in
	float8) cast="" ;;
	vector) cast="::real[]::vector"; "${PSQL[@]}" -c 'CREATE EXTENSION IF NOT EXISTS perpca_vector CASCADE' ;;
	*) echo "INPUT must be float8 or vector" >&2; exit 2 ;;
esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Planted structure: each row is 2 shared patterns (sines) and 3 patterns of
# its client, with random scores, plus small uniform noise.
"${PSQL[@]}" -c "DROP TABLE IF EXISTS tb_stats; CREATE TABLE tb_stats AS
  SELECT c AS client, perpca_stats(x$cast) AS stats
    FROM (SELECT r % $CLIENTS AS c,
                 ARRAY(SELECT a1 * sin(j * 0.013) + a2 * cos(j * 0.029)
                              + b1 * sin(j * (0.05 + 0.001 * (r % $CLIENTS)))
                              + b2 * cos(j * (0.07 + 0.0013 * (r % $CLIENTS)))
                              + b3 * sin(j * (0.11 + 0.0007 * (r % $CLIENTS)) + 1)
                              + 0.3 * (random() - 0.5)
                         FROM generate_series(1, $D) j) AS x
            FROM (SELECT r, 3 * (random() - 0.5) AS a1, 2.5 * (random() - 0.5) AS a2,
                         2 * (random() - 0.5) AS b1, 1.5 * (random() - 0.5) AS b2,
                         1.2 * (random() - 0.5) AS b3
                    FROM generate_series(1, $CLIENTS * $ROWS) r) s) t
   GROUP BY c"
size=$("${PSQL[@]}" -c "SELECT pg_size_pretty(sum(pg_column_size(stats))), sum(pg_column_size(stats)), min(perpca_stats_form(stats)), max(perpca_stats_form(stats)) FROM tb_stats")
echo "statistics: $CLIENTS clients x $ROWS rows of $INPUT, d = $D: $size (size | bytes | forms)"

# Run $1 in a fresh backend; print "wall_s cpu_s peak_kB" (wall from \timing, CPU and VmHWM from /proc).
measure() {
	local pidfile=$TMP/pid
	rm -f "$pidfile"
	printf '%s\n' "SELECT pg_backend_pid() AS pid \\gset" "\\o $pidfile" "SELECT :pid;" "\\o" "\\timing on" "$1" >"$TMP/run.sql"
	"${PSQL[@]}" -f "$TMP/run.sql" >"$TMP/out" 2>&1 &
	local job=$! pid cpu=0 hwm=0 t h
	for _ in $(seq 300); do [ -s "$pidfile" ] && break; sleep 0.1; done
	pid=$(tr -dc 0-9 <"$pidfile")
	while kill -0 "$job" 2>/dev/null; do
		t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && cpu=$t
		h=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null) && hwm=$h
		sleep 0.1
	done
	wait "$job"
	printf '%s %s %s\n' "$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$TMP/out" | tail -1 | awk '{printf "%.2f", $1 / 1000}')" \
		"$(echo "scale=2; $cpu / $(getconf CLK_TCK)" | bc)" "$hwm"
}

read -r rwall rcpu rhwm < <(measure "SELECT count(*) FROM tb_stats WHERE perpca_dim(stats) > 0 AND perpca_count(stats) > 0;")
echo "read of the statistics (floor): ${rwall} s wall, ${rcpu} s CPU, peak ${rhwm} kB"
for fit in "perpca_fit('SELECT client, stats FROM tb_stats', $R1, $R2)" \
		   "perpca_fit('SELECT client, stats FROM tb_stats', $R1, $R2, hops => 0)" \
		   "perpca_fit('SELECT client, stats FROM tb_stats', $R1, $R2, solver => 'paper', rounds => 1, tolerance => 0)"; do
	read -r fwall fcpu fhwm < <(measure "SELECT count(*) FROM $fit;")
	echo "$fit: ${fwall} s wall (${fcpu} s CPU) = $(echo "scale=1; $fwall / $rwall" | bc)x the read; peak ${fhwm} kB"
done
"${PSQL[@]}" -c "DROP TABLE tb_stats"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
