#!/usr/bin/env bash
# scripts/test.sh -- build perpca and run every test on a private throwaway cluster
#
#   bash scripts/test.sh            everything (what CI runs), then the sanitizer run
#   bash scripts/test.sh --quick    skip the slow TAP group (test/t/9[0-9][0-9]_*.pl)
#                                   and the sanitizer run
#   bash scripts/test.sh --quick --only=REGEX
#                                   only the tests whose name (fit, 090_reference)
#                                   matches the extended regular expression
#
# Steps: build with -Werror; install into a private copy of PostgreSQL 15;
# pg_regress on test/sql/*.sql (compared with expected/*.out) against a
# throwaway cluster; each TAP test in test/t/*.pl with prove and
# PostgreSQL::Test::Cluster (clusters from the private binaries).
# Ends with one line "N passed, M failed" (pg_regress tests + TAP files);
# exit status 0 only if nothing failed.  Works as root (installs missing
# packages, then runs as the unprivileged user "perpca") or as a normal user.
# The sanitizer run (scripts/sanitize.sh: the suite under ASan/UBSan against a
# cached ASan build of PostgreSQL) ends a full run; PERPCA_SANITIZE=0 skips it.
# As root the ASan build is made on first use; a normal user without it gets
# a warning and the run goes on without sanitizers.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK=0
ONLY=
for arg in "$@"; do
	case "$arg" in
		--quick) QUICK=1 ;;
		--only=*) ONLY=${arg#--only=} ;;
		-h | --help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument: $arg (try --help)" ;;
	esac
done

SANITIZE=1
[ "$QUICK" = 1 ] || [ "${PERPCA_SANITIZE:-1}" = 0 ] && SANITIZE=0
ASAN_PREFIX=${PERPCA_ASAN_PREFIX:-/var/cache/perpca/pg15-asan}
if [ "$SANITIZE" = 1 ] && [ "$(id -u)" -eq 0 ] && [ -z "${PERPCA_REEXECED:-}" ]; then
	# Needs root (apt-get); cached, so only the first run pays for it.
	say "ASan PostgreSQL for the sanitizer run: $ASAN_PREFIX"
	bash "$REPO_ROOT/scripts/asan-postgres.sh" "$ASAN_PREFIX" || die "could not build the ASan PostgreSQL"
fi

# Citus for test/t/045_citus.pl: built (cached) as root before dropping root,
# so that apt-get can install its build packages; the unprivileged run gets
# the build's directory, a skip reason or the failure in PERPCA_CITUS_*.
if [ "$(id -u)" -eq 0 ] && [ -z "${PERPCA_REEXECED:-}" ]; then
	ensure_packages
	citus_prepare
	pgvector_prepare
fi

prepare_user test.sh 0 "$@"

T0=$SECONDS
PASSED=0
FAILED=0
FAILED_NAMES=()

# Printed by the EXIT trap, after cleanup, so that it is the last line.
summary() {
	echo
	if [ ${#FAILED_NAMES[@]} -gt 0 ]; then
		echo "failed: ${FAILED_NAMES[*]}"
	fi
	echo "(wall time $((SECONDS - T0)) s)"
	echo "$PASSED passed, $FAILED failed"
}

on_exit() {
	local rc=$1
	finish "$rc" test
	# a step that stopped the script (cluster start, ...) counts as a failure
	if [ "$rc" -ne 0 ] && [ "$FAILED" -eq 0 ]; then
		FAILED=1; FAILED_NAMES+=("${ABORT_REASON:-harness (see messages above)}")
	fi
	summary
	exit "$rc"
}

make_work test
trap 'on_exit $?' EXIT

# ---- build and private install -------------------------------------------
if ! build_tree PERPCA_CFLAGS=-Werror; then
	FAILED=$((FAILED + 1)); FAILED_NAMES+=(build)
	exit 1
fi
if ! private_install; then
	FAILED=$((FAILED + 1)); FAILED_NAMES+=(install)
	exit 1
fi
citus_prepare
citus_install "$INST"
pgvector_prepare
pgvector_install "$INST"

# ---- pg_regress: test/sql/*.sql -------------------------------------------
shopt -s nullglob
regress_files=()
for f in "$BUILD"/test/sql/*.sql; do
	if [ -z "$ONLY" ] || [[ "$(basename "$f" .sql)" =~ $ONLY ]]; then regress_files+=("$f"); fi
done
regress_names=$(for f in "${regress_files[@]}"; do basename "$f" .sql; done | tr '\n' ' ')
if [ ${#regress_files[@]} -gt 0 ]; then
	cluster_start
	say "pg_regress: ${#regress_files[@]} test(s)"
	rc=0
	# TAP_TESTS= : the TAP tests run below, with the private binaries in PATH.
	make -C "$BUILD" installcheck TAP_TESTS= bindir="$PGBIN" ${ONLY:+REGRESS="$regress_names"} \
		PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER" \
		2>&1 | tee "$WORK/regress.log" || rc=$?
	ok=$(grep -cE '^(test +| +)[^ ]+ +\.\.\. ok' "$WORK/regress.log" || true)
	bad=$(grep -E '^(test +| +)[^ ]+ +\.\.\. (FAILED|failed)' "$WORK/regress.log" |
		sed -E 's/^(test +| +)([^ ]+).*/\2/' || true)
	nbad=$(printf '%s' "$bad" | grep -c . || true)
	PASSED=$((PASSED + ok))
	FAILED=$((FAILED + nbad))
	for n in $bad; do FAILED_NAMES+=("$n"); done
	if [ "$rc" -ne 0 ] && [ "$nbad" -eq 0 ]; then
		# pg_regress itself failed (could not connect, crash, ...)
		FAILED=$((FAILED + 1)); FAILED_NAMES+=(pg_regress)
	fi
	if [ "$rc" -ne 0 ]; then
		if [ -f "$BUILD/regression.diffs" ]; then
			echo "---- regression.diffs ----"
			cat "$BUILD/regression.diffs"
		fi
		echo "---- server log (last 60 lines) ----"
		tail -n 60 "$SERVER_LOG" || true
	fi
	cluster_stop
else
	say "pg_regress: no tests in test/sql"
fi

# ---- TAP: test/t/*.pl ------------------------------------------------------
tap_files=()
for f in "$BUILD"/test/t/*.pl; do
	case "$(basename "$f")" in
		9[0-9][0-9]_*)
			if [ "$QUICK" = 1 ]; then
				say "skipping slow TAP test $(basename "$f") (--quick)"
				continue
			fi ;;
	esac
	if [ -z "$ONLY" ] || [[ "$(basename "$f" .pl)" =~ $ONLY ]]; then tap_files+=("$f"); fi
done
if [ ${#tap_files[@]} -gt 0 ]; then
	say "TAP: ${#tap_files[@]} file(s)"
	PGXS_DIR=$INST$PG_SYS_LIB/lib/pgxs
	mkdir -p "$BUILD/tmp_check"
	for f in "${tap_files[@]}"; do
		name=test/t/$(basename "$f")
		# PATH: initdb, pg_ctl, psql, pg_dump of the PRIVATE installation.
		# shellcheck disable=SC2086 # PROVE_FLAGS may hold several flags
		if (cd "$BUILD" && env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
			PATH="$PGBIN:$PATH" TESTDIR="$BUILD" \
			PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
			prove -I "$PGXS_DIR/src/test/perl" -I "$BUILD/test/t" \
			${PROVE_FLAGS:-} "$name"); then
			PASSED=$((PASSED + 1))
		else
			FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name")
			log=$BUILD/tmp_check/log/regress_log_$(basename "$f" .pl)
			if [ -f "$log" ]; then
				echo "---- $log (last 80 lines) ----"
				tail -n 80 "$log"
			fi
		fi
	done
else
	say "TAP: no tests in test/t"
fi

# ---- sanitizers: the suite again under ASan/UBSan ----------------------------
if [ "$SANITIZE" = 1 ]; then
	if [ -x "$ASAN_PREFIX/bin/postgres" ] && [ -f "$ASAN_PREFIX/.asan-built" ]; then
		say "sanitizer run (scripts/sanitize.sh)"
		rc=0
		bash "$REPO_ROOT/scripts/sanitize.sh" 2>&1 | tee "$WORK/sanitize.log" || rc=$?
		counts=$(tail -n 1 "$WORK/sanitize.log")
		if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
			PASSED=$((PASSED + BASH_REMATCH[1]))
			FAILED=$((FAILED + BASH_REMATCH[2]))
			[ "${BASH_REMATCH[2]}" -gt 0 ] && FAILED_NAMES+=("$(grep '^failed: ' "$WORK/sanitize.log" | tail -n 1)")
		fi
		if [ "$rc" -ne 0 ] && ! [[ "$counts" =~ [1-9][0-9]*\ failed$ ]]; then
			FAILED=$((FAILED + 1)); FAILED_NAMES+=(sanitize.sh)
		fi
	else
		warn "no ASan PostgreSQL in $ASAN_PREFIX: sanitizer run skipped (run as root once, or see README, Sanitizers)"
	fi
fi

if [ $((PASSED + FAILED)) -eq 0 ]; then
	ABORT_REASON="no tests found"
	exit 1
fi
[ "$FAILED" -eq 0 ]
