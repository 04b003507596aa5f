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
# undefined, and any sanitizer report fails; then it checks itself: a build of
# perpca with a planted overflow of palloc'd memory and a planted reference
# leak must be caught (the tests "planted_overflow" and "planted_leak").
# Any run fails on PostgreSQL's WARNINGs of leaked references and of memory
# written past a chunk's end in the servers' logs, and on BLAS argument errors.
# PERPCA_PLANT=overflow,leak builds perpca with those defects (to see a run fail).
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
	if [ -n "$ASAN" ]; then finish "$rc" sanitize; else finish "$rc" suite; fi
}
trap 'on_exit $?' EXIT
step_failed() { echo "not ok - $1" >>"$RESULTS"; exit 1; }
# PostgreSQL leaks on purpose at exit: no leak check; reports go to files in DIR.
sanitizer_reports_to() {
	mkdir -p "$1"
	export ASAN_OPTIONS="detect_leaks=0:log_path=$1/asan:detect_stack_use_after_return=0"
	export UBSAN_OPTIONS="print_stacktrace=1:log_path=$1/ubsan"
}
# The compiler flags of the planted defects named in LIST ("overflow,leak"):
# -DPERPCA_PLANT_OVERFLOW writes one element past a palloc'd array,
# -DPERPCA_PLANT_LEAK leaves a relation open (src/stats.c).
plant_flags() {
	local d
	for d in ${1//,/ }; do
		case "$d" in overflow | leak) printf -- '-DPERPCA_PLANT_%s ' "${d^^}" ;; *) die "PERPCA_PLANT: no defect '$d' (overflow, leak)" ;; esac
	done
}
PLANT_FLAGS=$(plant_flags "${PERPCA_PLANT:-}")

# ---- 1. build and private installation ---------------------------------------
t=$SECONDS
PG_CONFIG=pg_config
if [ -n "$ASAN" ]; then
	sanitizer_reports_to "$WORK/reports"
	cp -a "$ASAN" "$WORK/pg"
	PGBIN=$WORK/pg/bin PG_CONFIG=$WORK/pg/bin/pg_config
	flags="-fsanitize=address,undefined -fno-sanitize=alignment -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
	build_tree PG_CONFIG="$PG_CONFIG" PERPCA_CFLAGS="$flags $PLANT_FLAGS" LDFLAGS_SL="$flags" ||
		step_failed build
	make -C "$BUILD" install PG_CONFIG="$PG_CONFIG" >"$WORK/install.log" 2>&1 || step_failed install
else
	# No LLVM bitcode (it is for JIT inlining, which no test uses).
	build_tree PERPCA_CFLAGS="-Werror $PLANT_FLAGS" with_llvm=no || step_failed build
	private_install with_llvm=no || step_failed install
	# (ensure_packages installs postgresql-N-cron: its tests must not skip here)
	export PERPCA_PG_CRON_REQUIRED=1
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

# ---- what the logs show -------------------------------------------------------------
# Each prints what it finds in the server logs FILES... (or, for the sanitizer,
# the report files in DIR and the logs), and fails when it finds nothing.
# The lines of the existing FILES... that match the extended regex RE.
grep_logs() {
	local re=$1 f files=()
	shift
	for f; do [ -f "$f" ] && files+=("$f"); done
	[ ${#files[@]} -gt 0 ] && grep -HE "$re" "${files[@]}"
}
# Sanitizer reports: ASan and UBSan write them to the files of log_path; a
# program started without it writes them to its stderr (a server's log).
sanitizer_findings() {
	local dir=$1
	shift
	find "$dir" -type f 2>/dev/null | grep . && return 0
	grep_logs 'ERROR: AddressSanitizer|runtime error:' "$@"
}
# PostgreSQL's WARNINGs of a reference left held at the end of a transaction
# (relation, buffer, cache, snapshot, plan, TupleDesc, file, memory segment,
# hash scan: "... reference leak", "resource was not closed" from 17 on) and of
# its memory checks (--enable-cassert: a write past a chunk's end, a damaged
# memory context).  Each is a defect that no test's output need show.
LEAK_RE='WARNING: +(.*(reference leak|refcount leak|resource was not closed|still referenced|leaked (parallel|hash_seq_search|override)|leaking still-referenced|not closed at end-of-transaction)|snapshot .* still active|detected write past chunk end|problem in (alloc set|Generation|slab))'
leak_findings() { grep_logs "$LEAK_RE" "$@"; }
# OpenBLAS answers a call with an invalid argument by printing "On entry to
# DSYRK parameter number 10 had an illegal value" and returning without
# computing: a wrong result that no test's output need show.
blas_findings() { grep_logs 'On entry to [A-Z0-9_]+ +parameter number' "$@"; }

# log_check NAME FINDER ARGS...: one TAP line, "ok - NAME: none" or "not ok -
# NAME" with what FINDER found (the first 20 lines) on stderr.
log_check() {
	local name=$1 found
	shift
	if found=$("$@"); then
		{ echo "---- $name ----"; head -n 20 <<<"$found"; } >&2
		echo "not ok - $name" >>"$RESULTS"
	else
		echo "ok - $name: none" >>"$RESULTS"
	fi
}

LOGS=("$SERVER_LOG" "$BUILD"/tmp_check/log/*.log)
if [ -n "$ASAN" ]; then
	for r in "$WORK"/reports/*; do { echo "---- $r ----"; head -n 60 "$r"; } >&2; done
	log_check "sanitizer reports" sanitizer_findings "$WORK/reports" "${LOGS[@]}"
fi
log_check "leak and memory-check WARNINGs in server logs" leak_findings "${LOGS[@]}"
log_check "BLAS argument errors in server logs" blas_findings "${LOGS[@]}"

# ---- the sanitizer run checks itself -------------------------------------------------
# perpca rebuilt with both planted defects (only src/stats.c recompiles) on a
# cluster of its own: each defect's query must leave what the checks above
# look for, found by the same functions.
planted_check() {
	local p=$WORK/planted q='SELECT perpca_%s(perpca_stats(x)) FROM (VALUES (ARRAY[1, 2, 3, 4]::float8[])) v(x)'
	touch "$BUILD/src/stats.c"
	if ! make -C "$BUILD" PG_CONFIG="$PG_CONFIG" PERPCA_CFLAGS="$flags $(plant_flags overflow,leak)" LDFLAGS_SL="$flags" \
		install >"$p-build.log" 2>&1; then
		cat "$p-build.log" >&2
		echo "not ok - planted defects: build" >>"$RESULTS"
		return
	fi
	PGDATA_DIR=$p-data SERVER_LOG=$p-server.log
	sanitizer_reports_to "$p-reports"
	cluster_start || { echo "not ok - planted defects: cluster start" >>"$RESULTS"; return; }
	# (the second query's backend ends at ASan's report: psql fails)
	"$PGBIN/psql" -X -q -c 'CREATE EXTENSION perpca' -c "$(printf "$q" covariance)" >"$p-psql.log" 2>&1 || true
	"$PGBIN/psql" -X -q -c "$(printf "$q" mean)" >>"$p-psql.log" 2>&1 || true
	cluster_stop
	cat "$p-psql.log" >&2
	planted_line planted_overflow "one element written past a palloc'd array" \
		overflow_findings "$p-reports" "$SERVER_LOG"
	planted_line planted_leak "a relation left open" leak_of_pg_type "$SERVER_LOG"
}
# Sanitizer findings, of which a report names the function of the planted
# overflow; prints the reports' first lines.
overflow_findings() { sanitizer_findings "$@" >/dev/null && grep -r -q perpca_mean "$1" && head -n 8 "$1"/*; }
# The leak WARNINGs, of which one names the relation of the planted leak.
leak_of_pg_type() { leak_findings "$@" | grep -F 'relation "pg_type"'; }
# planted_line NAME WHAT FINDER ARGS...: "ok - NAME: the sanitizer run catches WHAT".
planted_line() {
	local name=$1 what=$2 found
	shift 2
	if found=$("$@"); then
		{ echo "---- $name: found ----"; head -n 20 <<<"$found"; } >&2
		echo "ok - $name: the sanitizer run catches $what" >>"$RESULTS"
	else
		echo "not ok - $name: the sanitizer run does not catch $what" >>"$RESULTS"
	fi
}
if [ -n "$ASAN" ] && { selected planted_overflow || selected planted_leak; }; then
	t=$SECONDS
	planted_check
	say "time: planted defects: $((SECONDS - t)) s"
fi
! grep -q '^not ok' "$RESULTS"
