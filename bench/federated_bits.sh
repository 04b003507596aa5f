#!/usr/bin/env bash
# bench/federated_bits.sh -- the same bits federated or not, repeated
# (the goal: three shard layouts x two answer orders x 10 runs, one
# md5 of the fitted model and the single node's round count).
#
#   bash bench/federated_bits.sh            RUNS=10 (default)
#
# Each run is the TAP test test/t/041_federated_bits.pl on a fresh cluster
# (scripts/test.sh --quick --pg=15 --only=...): per fit option set, the
# single-node fit and 3 layouts x 2 answer orders over postgres_fdw shards.
# The test itself fails on a second md5 within a run; this script gathers
# the md5s and rounds the test notes over all runs and prints, per option
# set, how many distinct md5s and round counts it saw (the goal: 1 and 1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${RUNS:-10}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/perpca-fedbits.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
for i in $(seq "$RUNS"); do
	bash scripts/test.sh --quick --pg=15 --only='^041_federated_bits$' >"$OUT/run$i.log" 2>&1 ||
		{ tail -n 30 "$OUT/run$i.log" >&2; echo "run $i failed" >&2; exit 1; }
	echo "run $i of $RUNS: passed" >&2
done
echo "runs: $RUNS; per option set: fits seen (single node + 3 layouts x 2 orders per run), distinct md5s, distinct round counts (goal: 1 and 1)"
cat "$OUT"/run*.log | sed -n 's/^# \(.*\): \(single node \)\{0,1\}\([0-9]*\) rounds, md5 \([0-9a-f]*\)$/\1|\3|\4/p' |
	awk -F'|' '{ split($1, a, ", layout"); set = a[1]; n[set]++;
		if (!((set, $3) in m)) { m[set, $3] = 1; md5[set]++ }
		if (!((set, $2) in r)) { r[set, $2] = 1; rounds[set]++; rl[set] = rl[set] " " $2 } }
		END { for (s in n) printf "%-40s fits %4d  md5s %d  round counts %d (%s )\n", s, n[s], md5[s], rounds[s], rl[s] }' | sort
