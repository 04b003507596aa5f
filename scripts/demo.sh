#!/usr/bin/env bash
# scripts/demo.sh -- the main job: build perpca, start a private throwaway
# cluster, load a demo dataset of heterogeneous stores, show per-store
# statistics and (when perpca_fit exists) the fitted global/local components.
#
#   bash scripts/demo.sh           run the demo, then stop and remove the cluster
#   bash scripts/demo.sh --keep    leave the cluster running and print how to connect
#   bash scripts/demo.sh --examples  also run the examples (examples/*.sql: digits,
#                                  video) and draw their pictures into docs/examples/
#                                  (installs python3-matplotlib, python3-psycopg2)
#
# The SQL lives in examples/demo.sql (data and statistics) and
# examples/demo_fit.sql (run only if the extension has a function perpca_fit).
# Works as root (installs missing packages, runs as user "perpca") or as a
# normal user who has the packages.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KEEP=0
EXAMPLES=0
for arg in "$@"; do
	case "$arg" in
		--keep) KEEP=1 ;;
		--examples) EXAMPLES=1 ;;
		-h | --help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument: $arg (try --help)" ;;
	esac
done

[ "$EXAMPLES" = 1 ] && PERPCA_PACKAGES+=(python3-matplotlib python3-psycopg2)
ensure_packages
if [ "$(id -u)" -eq 0 ]; then
	# Started as root: the demo runs as the user perpca in a copy of the tree;
	# the pictures come back through a scratch directory it may write to.
	[ "$EXAMPLES" = 1 ] && export PERPCA_EXAMPLES_OUT=$(mktemp -d /tmp/perpca-examples.XXXXXX) &&
		chmod 777 "$PERPCA_EXAMPLES_OUT"
	rc=0
	as_user demo.sh "$KEEP" "$@" || rc=$?
	if [ "$EXAMPLES" = 1 ]; then
		[ "$rc" -eq 0 ] && mkdir -p "$REPO_ROOT/docs/examples" && cp "$PERPCA_EXAMPLES_OUT"/*.png "$REPO_ROOT/docs/examples/" &&
			chown -R --reference="$REPO_ROOT" "$REPO_ROOT/docs/examples" && say "pictures written to $REPO_ROOT/docs/examples/"
		rm -rf "$PERPCA_EXAMPLES_OUT"
	fi
	exit "$rc"
fi

make_work demo
trap 'finish $? demo' EXIT

# shellcheck disable=SC2119 # no extra make arguments for the demo
build_tree || die "build failed"
private_install || die "private installation failed"
cluster_start

DB=perpca_demo
"$PGBIN/createdb" "$DB"
say "running examples/demo.sql"
"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$DB" -f "$BUILD/examples/demo.sql"

if [ "$EXAMPLES" = 1 ]; then
	# The examples read their data by paths relative to the tree's root.
	for ex in digits video; do
		say "running examples/$ex.sql"
		(cd "$BUILD" && "$PGBIN/psql" -X -v ON_ERROR_STOP=1 -d "$DB" -f "examples/$ex.sql")
	done
	say "drawing the pictures (examples/plot.py)"
	PGDATABASE=$DB /usr/bin/python3 "$BUILD/examples/plot.py" \
		--out "${PERPCA_EXAMPLES_OUT:-$REPO_ROOT/docs/examples}"
else
	say "pictures of examples on real data: docs/examples.md;"
	say "run them yourself with: bash scripts/demo.sh --examples"
fi

if [ "$KEEP" = 1 ]; then
	# shellcheck disable=SC2034 # read by finish() in lib.sh
	KEEP_CLUSTER=1
	# Started as root: the server runs as $PGUSER, and the whole copy is $TMPDIR.
	as='' top=$WORK
	if [ -n "${PERPCA_STAGE:-}" ]; then
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
