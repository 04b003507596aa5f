#!/usr/bin/env bash
# scripts/suite.sh -- run the test suite once, on this machine's PostgreSQL
#
#   suite.sh [--quick] [--only=REGEX] [--tap=REGEX] [--no-regress] [--sanitize=DIR]
#
# 1. Build perpca with -Werror in a scratch copy of the tree, and install it
#    into a private copy of the server's directories, with the Citus and
#    pgvector builds named by PERPCA_CITUS_BUILD and PERPCA_PGVECTOR_BUILD
#    (scripts/prepare.sh extras; the TAP tests read the _SKIP and _FAILED ones).
# 2. pg_regress on test/sql/*.sql (compared with expected/) against a
#    throwaway cluster from the private binaries (not with --no-regress).
# 3. The TAP files test/t/*.pl whose names match --tap (default: all), with
#    PostgreSQL::Test::Cluster, PERPCA_TAP_JOBS (default 2) at a time, the
#    slow group 9NN first (its files mostly wait for pg_cron's next minute).
# --quick leaves out the slow group; --only keeps the tests whose name (fit,
# 090_reference) matches.  --sanitize=DIR runs against the ASan PostgreSQL in
# DIR (scripts/prepare.sh asan) with perpca built with -fsanitize=address,
# undefined, and any sanitizer report fails.
#
# Output: the tests' output on stderr; on stdout one TAP line per test
# ("ok - NAME", "not ok - NAME", or "ok - NAME # SKIP REASON" when a TAP file
# skipped everything), then the plan "1..N".  As root it runs itself as the
# user perpca (PERPCA_RUN_USER) in a copy of the tree.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK=0 ONLY='' TAP_RE='' REGRESS=1 ASAN=''
for arg in "$@"; do
	case "$arg" in
		--quick) QUICK=1 ;;
		--only=*) ONLY=${arg#--only=} ;;
		--tap=*) TAP_RE=${arg#--tap=} ;;
		--no-regress) REGRESS=0 ;;
		--sanitize=*) ASAN=${arg#--sanitize=} ;;
		*) usage; exit 2 ;;
	esac
done
if [ "$(id -u)" -eq 0 ]; then
	ensure_packages
	as_user suite.sh 0 "$@"
	exit
fi
ensure_packages
selected() { [ -z "$ONLY" ] || [[ "$1" =~ $ONLY ]]; }
shopt -s nullglob

make_work suite
RESULTS=$WORK/results.tap
: >"$RESULTS"
exec 3>&1
on_exit() {
	local rc=$1
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok' "$RESULTS"; then
		echo "not ok - the suite stopped (status $rc: see its output)" >>"$RESULTS"
	fi
	cat "$RESULTS" >&3
	echo "1..$(grep -c . "$RESULTS")" >&3
	finish "$rc" "${ASAN:+sanitize}${ASAN:-suite}"
}
trap 'on_exit $?' EXIT
step_failed() { echo "not ok - $1" >>"$RESULTS"; exit 1; }

# ---- 1. build and private installation ---------------------------------------
t=$SECONDS
PG_CONFIG=pg_config
if [ -n "$ASAN" ]; then
	# PostgreSQL leaks on purpose at exit: no leak check; reports go to files.
	mkdir -p "$WORK/reports"
	export ASAN_OPTIONS="detect_leaks=0:log_path=$WORK/reports/asan:detect_stack_use_after_return=0"
	export UBSAN_OPTIONS="print_stacktrace=1:log_path=$WORK/reports/ubsan"
	cp -a "$ASAN" "$WORK/pg"
	PGBIN=$WORK/pg/bin PG_CONFIG=$WORK/pg/bin/pg_config
	flags="-fsanitize=address,undefined -fno-sanitize=alignment -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
	build_tree PG_CONFIG="$PG_CONFIG" PERPCA_CFLAGS="$flags" LDFLAGS_SL="$flags" || step_failed build
	make -C "$BUILD" install PG_CONFIG="$PG_CONFIG" >"$WORK/install.log" 2>&1 || step_failed install
else
	# No LLVM bitcode (it is for JIT inlining, which no test uses).
	build_tree PERPCA_CFLAGS=-Werror with_llvm=no || step_failed build
	private_install with_llvm=no || step_failed install
	for extra in CITUS PGVECTOR; do
		dir=PERPCA_${extra}_BUILD
		[ -d "${!dir:-}" ] || continue
		(cd "${!dir}" && tar --exclude='./.*-built' -cf - .) | tar -C "$INST" -xf - ||
			export "PERPCA_${extra}_FAILED=could not copy ${!dir} into $INST"
	done
fi
say "time: build and installation: $((SECONDS - t)) s"

# ---- 2. pg_regress --------------------------------------------------------------
names=
for f in "$BUILD"/test/sql/*.sql; do
	selected "$(basename "$f" .sql)" && names+="$(basename "$f" .sql) "
done
if [ "$REGRESS" = 1 ] && [ -n "$names" ]; then
	t=$SECONDS
	cluster_start || step_failed "cluster start"
	rc=0
	make -C "$BUILD" installcheck TAP_TESTS= PG_CONFIG="$PG_CONFIG" bindir="$PGBIN" \
		${ONLY:+REGRESS="$names"} >"$WORK/regress.log" 2>&1 || rc=$?
	cat "$WORK/regress.log" >&2
	regress_tap <"$WORK/regress.log" >>"$RESULTS"
	if [ "$rc" -ne 0 ]; then
		grep -q '^not ok' "$RESULTS" || echo "not ok - pg_regress (exit $rc)" >>"$RESULTS"
		[ -f "$BUILD/regression.diffs" ] && cat "$BUILD/regression.diffs" >&2
		tail -n 60 "$SERVER_LOG" >&2
	fi
	cluster_stop
	say "time: pg_regress: $((SECONDS - t)) s"
fi

# ---- 3. TAP files -----------------------------------------------------------------
PGXS_DIR=$("$PGBIN/pg_config" --pgxs)
PGXS_DIR=${PGXS_DIR%/src/makefiles/pgxs.mk}
mkdir -p "$WORK/tap" "$BUILD/tmp_check"
# One file (scripts/run_tap.pl): its output to tap/NAME.log, its result line to tap/NAME.tap.
tap_file() {
	local rel=test/t/$1.pl
	(cd "$BUILD" && env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE PATH="$PGBIN:$PATH" \
		TESTDIR="$BUILD" TESTDATADIR="$BUILD/tmp_check" TESTLOGDIR="$BUILD/tmp_check/log" \
		PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
		perl scripts/run_tap.pl "$rel" "$rel" "$PGXS_DIR/src/test/perl" "$BUILD/test/t") \
		>"$WORK/tap/$1.tap" 2>"$WORK/tap/$1.log" || true
	if ! grep -q '^ok' "$WORK/tap/$1.tap" && [ -f "$BUILD/tmp_check/log/regress_log_$1" ]; then
		{ echo "---- regress_log_$1 (last 80 lines) ----"; tail -n 80 "$BUILD/tmp_check/log/regress_log_$1"; } >>"$WORK/tap/$1.log"
	fi
}
declare -A running=()
# Wait for one file, then show its output and keep its result.
tap_wait() {
	local pid n
	wait -n -p pid "${!running[@]}" || true
	n=${running[$pid]}
	unset "running[$pid]"
	{ echo "---- test/t/$n.pl ($((SECONDS - ${started[$n]})) s) ----"; cat "$WORK/tap/$n.log"; } >&2
	cat "$WORK/tap/$n.tap" >>"$RESULTS"
}
declare -A started=()
t=$SECONDS
for f in "$BUILD"/test/t/9[0-9][0-9]_*.pl "$BUILD"/test/t/[0-8][0-9][0-9]_*.pl; do
	n=$(basename "$f" .pl)
	{ [ -z "$TAP_RE" ] || [[ "$n" =~ $TAP_RE ]]; } && selected "$n" || continue
	[ "$QUICK" = 1 ] && [[ "$n" == 9* ]] && continue
	while [ "${#running[@]}" -ge "${PERPCA_TAP_JOBS:-2}" ]; do tap_wait; done
	started[$n]=$SECONDS
	tap_file "$n" &
	running[$!]=$n
done
while [ "${#running[@]}" -gt 0 ]; do tap_wait; done
say "time: TAP files: $((SECONDS - t)) s"

# ---- sanitizer reports --------------------------------------------------------------
if [ -n "$ASAN" ]; then
	reports=("$WORK"/reports/*)
	if [ ${#reports[@]} -eq 0 ]; then
		echo "ok - sanitizer reports: none" >>"$RESULTS"
	else
		for r in "${reports[@]}"; do { echo "---- $r ----"; head -n 60 "$r"; } >&2; done
		echo "not ok - sanitizer reports: ${#reports[@]}" >>"$RESULTS"
	fi
	# (server-side reports also show in the clusters' logs)
	if grep -lE 'ERROR: AddressSanitizer|runtime error:' "$SERVER_LOG" "$BUILD"/tmp_check/log/*.log >&2 2>/dev/null; then
		echo "not ok - sanitizer messages in server logs" >>"$RESULTS"
	fi
fi
# ---- BLAS argument errors ------------------------------------------------------------
# OpenBLAS answers a call with an invalid argument by printing "On entry to
# DSYRK parameter number 10 had an illegal value" and returning without
# computing: a wrong result that no test's output need show.
if grep -lE 'On entry to [A-Z0-9_]+ +parameter number' "$SERVER_LOG" "$BUILD"/tmp_check/log/*.log >&2 2>/dev/null; then
	echo "not ok - BLAS argument errors in server logs" >>"$RESULTS"
else
	echo "ok - BLAS argument errors in server logs: none" >>"$RESULTS"
fi
! grep -q '^not ok' "$RESULTS"
