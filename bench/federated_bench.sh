#!/usr/bin/env bash
# bench/federated_bench.sh -- bytes and time of perpca_fit_federated against
# shipping the clients' statistics to one node and running perpca_fit there.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/federated_bench.sh [d] [clients] [rows] [shards]
#   REPEAT=10: runs of each fit for the determinism check at the end
#
# Builds one database per shard (perpca_fed_bench_s1, ...) on the same server,
# each holding its share of `clients` clients with `rows` random rows in d
# dimensions (three shared directions, two of its own per client, noise), and a
# coordinator database perpca_fed_bench holding every client.  Then:
#   federated  perpca_fit_federated over the shard databases (libpq, loopback)
#   single     perpca_fit on the coordinator's copy of all clients
# and prints rounds, seconds, the bytes the federated fit moved (text payload:
# setup, per round, result; and a round as packed float8) and what shipping
# the statistics once costs (binary perpca_stats, and its text form, which is
# what postgres_fdw ships).  The shard connection strings are built from
# PGHOST/PGPORT/PGUSER (those set); the server's backends open them.
set -euo pipefail
D=${1:-50}
CLIENTS=${2:-40}
ROWS=${3:-2000}
SHARDS=${4:-2}
REPEAT=${REPEAT:-10}
NG=${NG:-3}
NL=${NL:-2}
DB=perpca_fed_bench
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

conninfo() {
	local s="dbname=$1"
	[ -n "${PGHOST:-}" ] && s="$s host=$PGHOST"
	[ -n "${PGPORT:-}" ] && s="$s port=$PGPORT"
	[ -n "${PGUSER:-}" ] && s="$s user=$PGUSER"
	echo "$s"
}

# Rows of the clients c with c % SHARDS = k (k < 0: every client).
rows_sql() {
	local k=$1
	cat <<SQL
DO \$\$ BEGIN PERFORM setseed(0.25); END \$\$;
CREATE TABLE obs AS
SELECT c AS client,
       ARRAY(SELECT (random() - 0.5) * CASE WHEN j = 1 THEN 6 WHEN j = 2 THEN 4.5 WHEN j = 3 THEN 3.5
                                            WHEN j = 4 + (2 * c) % ($D - 4) THEN 5
                                            WHEN j = 4 + (2 * c + 1) % ($D - 4) THEN 3 ELSE 1 END
               FROM generate_series(1, $D) j) AS x
  FROM generate_series(1, $CLIENTS) c, generate_series(1, $ROWS) i;
-- every database draws the same rows, then keeps its own clients
DELETE FROM obs WHERE NOT ($k < 0 OR client % $SHARDS = $k);
CREATE TABLE stats AS SELECT client, perpca_stats(x) AS s FROM obs GROUP BY client;
SQL
}

SHARD_LIST=""
"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
"${PSQL[@]}" -d $DB -c "CREATE EXTENSION perpca" -c "$(rows_sql -1)"
for k in $(seq 0 $((SHARDS - 1))); do
	"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS ${DB}_s$k" -c "CREATE DATABASE ${DB}_s$k"
	"${PSQL[@]}" -d "${DB}_s$k" -c "CREATE EXTENSION perpca" -c "$(rows_sql "$k")"
	SHARD_LIST="$SHARD_LIST${SHARD_LIST:+, }'$(conninfo "${DB}_s$k")'"
done

Q="'SELECT client, s FROM stats ORDER BY client'"
"${PSQL[@]}" -d $DB <<SQL
\\pset footer off
SELECT count(*) AS rows FROM perpca_fit_federated(ARRAY[$SHARD_LIST], $Q, $NG, $NL) \\g /dev/null
CREATE TEMP TABLE fed AS SELECT * FROM perpca_last_federated_fit();
SELECT count(*) AS rows FROM perpca_fit($Q, $NG, $NL) \\g /dev/null
CREATE TEMP TABLE single AS SELECT * FROM perpca_last_fit();
\\echo d = $D, $CLIENTS clients x $ROWS rows, $SHARDS shards, n_global $NG, n_local $NL
SELECT 'federated' AS fit, rounds_run, converged, round(seconds::numeric, 3) AS seconds,
       round(objective::numeric, 6) AS objective FROM fed
UNION ALL
SELECT 'single node', rounds_run, converged, round(seconds::numeric, 3), round(objective::numeric, 6) FROM single;
SELECT setup_bytes, round_bytes, round_binary_bytes, result_bytes,
       setup_bytes + rounds_run * round_bytes + result_bytes AS federated_total,
       stats_binary_bytes AS stats_binary,
       (SELECT sum(octet_length(s::text)) FROM stats) AS stats_text,
       round(((SELECT sum(octet_length(s::text)) FROM stats) - setup_bytes - result_bytes) / round_bytes, 1)
           AS break_even_rounds_text
  FROM fed;
SQL

# Determinism: REPEAT runs of each, every second federated run with the shard
# list reversed (the shards answer in another order); every run of a kind
# must give the same rounds and the same objective, bit for bit.
REVERSED="ARRAY[$(echo "$SHARD_LIST" | tr ',' '\n' | sed 's/^ *//' | tac | paste -sd, | sed 's/,/, /g')]"
"${PSQL[@]}" -d $DB <<SQL
CREATE TEMP TABLE runs (kind text, run int, rounds int, objective float8);
DO \$\$
BEGIN
  FOR i IN 1..$REPEAT LOOP
    PERFORM count(*) FROM perpca_fit_federated(CASE WHEN i % 2 = 0 THEN $REVERSED ELSE ARRAY[$SHARD_LIST] END,
                                              $Q, $NG, $NL);
    INSERT INTO runs SELECT 'federated', i, rounds_run, objective FROM perpca_last_federated_fit();
    PERFORM count(*) FROM perpca_fit($Q, $NG, $NL);
    INSERT INTO runs SELECT 'single node', i, rounds_run, objective FROM perpca_last_fit();
  END LOOP;
END
\$\$;
\echo $REPEAT runs of each (federated: shard list reversed every second run)
SELECT kind, count(*) AS runs, count(DISTINCT rounds) AS distinct_rounds, min(rounds) AS rounds,
       count(DISTINCT objective) AS distinct_objectives FROM runs GROUP BY kind ORDER BY kind;
SQL

"${PSQL[@]}" -d postgres -c "DROP DATABASE $DB"
for k in $(seq 0 $((SHARDS - 1))); do
	"${PSQL[@]}" -d postgres -c "DROP DATABASE ${DB}_s$k"
done
