#!/usr/bin/env bash
# scripts/demo.sh -- the main job: build perpca, start a private throwaway
# cluster, load a demo dataset of heterogeneous stores, show per-store
# statistics and (when perpca_fit exists) the fitted global/local components.
#
#   bash scripts/demo.sh           run the demo, then stop and remove the cluster
#   bash scripts/demo.sh --keep    leave the cluster running and print how to connect
#
# The SQL lives in scripts/demo.sql (data and statistics) and
# scripts/demo_fit.sql (run only if the extension has a function perpca_fit).
# Works as root (installs missing packages, runs as user "perpca") or as a
# normal user who has the packages.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KEEP=0
for arg in "$@"; do
	case "$arg" in
		--keep) KEEP=1 ;;
		-h | --help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument: $arg (try --help)" ;;
	esac
done

prepare_user demo.sh "$KEEP" "$@"

make_work demo
trap 'finish $? demo' EXIT

# shellcheck disable=SC2119 # no extra make arguments for the demo
build_tree || die "build failed"
private_install || die "private installation failed"
cluster_start

DB=perpca_demo
"$PGBIN/createdb" "$DB"
say "running scripts/demo.sql"
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$DB" -f "$BUILD/scripts/demo.sql"

if [ "$KEEP" = 1 ]; then
	# shellcheck disable=SC2034 # read by finish() in lib.sh
	KEEP_CLUSTER=1
	# Started as root: the server runs as $PGUSER, and the whole copy is $TMPDIR.
	as='' top=$WORK
	if [ -n "${PERPCA_REEXECED:-}" ]; then
		as="runuser -u $PGUSER -- " top=$TMPDIR
	fi
	cat <<-EOF

		The cluster is still running (data in $PGDATA_DIR).
		Connect with:
		  $PGBIN/psql -h $PGHOST -p $PGPORT -U $PGUSER -d $DB
		Stop it and remove everything with:
		  $as$PGBIN/pg_ctl -D $PGDATA_DIR stop && rm -rf $top
	EOF
else
	say "demo finished; stopping the throwaway cluster"
fi
