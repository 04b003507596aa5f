#!/usr/bin/env bash
# scripts/test.sh -- build perpca and run every test, on each PostgreSQL version
#
#   bash scripts/test.sh            everything (what CI runs): PostgreSQL 15 (this
#                                   machine's), then 17 and 18 in root filesystems
#                                   (scripts/rootfs.sh), then the sanitizer run (on 15)
#   bash scripts/test.sh --pg=17    one version (or a list: --pg=15,18)
#   bash scripts/test.sh --quick    skip the slow TAP group (test/t/9[0-9][0-9]_*.pl)
#                                   and the sanitizer run
#   bash scripts/test.sh --quick --only=REGEX
#                                   only the tests whose name (fit, 090_reference,
#                                   package) matches the extended regular expression
#
# For each version: the Debian package (scripts/package.sh: dpkg-buildpackage,
# install, CREATE EXTENSION, the upgrade from 0.1.0 and installcheck against
# the installed files; as root only); then the suite: build with -Werror;
# install into a private copy of PostgreSQL; pg_regress on test/sql/*.sql
# (compared with expected/*.out, or an alternative expected/NAME_1.out)
# against a throwaway cluster (not again when the package test ran it in
# full); each TAP test in test/t/*.pl with prove and PostgreSQL::Test::Cluster
# (clusters from the private binaries; on 17 and 18 the files of VERSION_TAP),
# PERPCA_TAP_JOBS (default 2) files at a time.
# The versions run side by side, and so do the package test, the suite and
# the sanitizer run of one version: each part writes a log of its own, shown
# whole when the part ends ("==== NAME: ... ====").  Each version ends with
# "PostgreSQL X.Y: N passed, M failed, K skipped", and the run with each
# version's line, the wall times of the parts ("time: ..." lines), a line
# "skipped: NAME: REASON" per skip and one line "N passed, M failed, K
# skipped" over all versions (pg_regress tests, TAP files, package checks; a
# TAP file that skips everything is a skip, never a pass: scripts/run_tap.pl);
# exit status 0 only if nothing failed.  Works as root
# (installs missing packages, builds the root filesystems, then runs the
# clusters as the unprivileged user "perpca") or as a normal user, who gets
# PostgreSQL 15 and one line saying why 17 and 18 were skipped.
# The sanitizer run (scripts/sanitize.sh: pg_regress and the TAP files that
# drive perpca's C code, under ASan/UBSan against a cached ASan build of
# PostgreSQL 15) runs beside the suite on 15; PERPCA_SANITIZE=0 skips it.  As
# root the ASan build is made on first use; a normal user without it gets a
# warning and the run goes on without sanitizers.  What is built once goes to
# PERPCA_CACHE_DIR (default /var/cache/perpca).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK=0
ONLY=
PG_LIST=
PART_ARGS=()
for arg in "$@"; do
	case "$arg" in
		--quick) QUICK=1; PART_ARGS+=("$arg") ;;
		--only=*) ONLY=${arg#--only=}; PART_ARGS+=("$arg") ;;
		--pg=*) PG_LIST=${arg#--pg=}; PG_LIST=${PG_LIST//,/ } ;;
		-h | --help) sed -n '2,41p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument: $arg (try --help)" ;;
	esac
done
for v in $PG_LIST; do
	case "$v" in 15 | 17 | 18) ;; *) die "--pg: PostgreSQL $v is not tested (15, 17, 18)" ;; esac
done

SANITIZE=1
[ "$QUICK" = 1 ] || [ "${PERPCA_SANITIZE:-1}" = 0 ] && SANITIZE=0
ASAN_PREFIX=${PERPCA_ASAN_PREFIX:-$PERPCA_CACHE_DIR/pg15-asan}
# The version this machine (or the root filesystem the run is in) has.
LOCAL_PG=${PERPCA_IN_ROOTFS:-$PG_MAJOR}
# The TAP files that also run on 17 and 18: those whose subject changes with
# the server (dump/restore, postgres_fdw, Citus, pgvector's packages, the
# extension upgrade, roles and privileges, search_path and security-restricted operations,
# refreshes from any session, lock orders under the server's isolation
# tester, pg_cron, the maintenance operations' search_path).  The others test
# perpca's own code (numerics, memory, cancel, crash recovery, federated fits
# over libpq, the README's example), the same on every server, and run on
# 15; with
# PERPCA_MATRIX_FULL=1 every file runs everywhere (README, Testing: the time).
VERSION_TAP='^(001_dump_restore|010_fdw_shards|045_citus|047_pgvector|065_upgrade|070_model_owner|075_hostile_schema|075_refresh_anywhere|076_bound_query|076_escalation|077_internal_execute|085_isolation|900_pg_cron|910_maintenance_cron)$'

T0=$SECONDS
PASSED=0
FAILED=0
SKIPPED=0
FAILED_NAMES=()
SKIP_LINES=()

# ---- parts side by side ----------------------------------------------------
# job_start NAME CMD...: run CMD in the background, its output in a log of its
# own; job_wait: wait until one of the started jobs ends and set JOB_NAME,
# JOB_RC, JOB_SECS and JOB_FILE (its log).
declare -A JOB_PID=() JOB_LOG=() JOB_T0=()
JOBS_DIR=
job_start() {
	local name=$1
	shift
	[ -n "$JOBS_DIR" ] || JOBS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/perpca-parts.XXXXXX")
	JOB_LOG[$name]=$JOBS_DIR/$name.log
	JOB_T0[$name]=$SECONDS
	"$@" >"${JOB_LOG[$name]}" 2>&1 </dev/null &
	JOB_PID[$name]=$!
}
job_wait() {
	local pid= rc=0 n
	wait -n -p pid "${JOB_PID[@]}" || rc=$?
	for n in "${!JOB_PID[@]}"; do
		[ "${JOB_PID[$n]}" = "$pid" ] && break
	done
	[ "${JOB_PID[$n]:-}" = "$pid" ] || die "lost track of a part (pid '$pid', status $rc)"
	JOB_NAME=$n JOB_RC=$rc JOB_SECS=$((SECONDS - JOB_T0[$n])) JOB_FILE=${JOB_LOG[$n]}
	unset "JOB_PID[$n]"
}
jobs_running() { echo "${#JOB_PID[@]}"; }

# Add the counts of the closing "N passed, M failed[, K skipped]" line of LOG
# (a part that ended with status RC), and keep its "skipped: " lines; a part
# that fails without a count, or whose status says failure while it counts
# none, counts as one failure, NAME.
add_counts() {
	local name=$1 log=$2 rc=$3 counts p f k
	counts=$(counts_of "$log")
	if [ -n "$counts" ]; then
		read -r p f k <<<"$counts"
		PASSED=$((PASSED + p))
		FAILED=$((FAILED + f))
		SKIPPED=$((SKIPPED + k))
		# (the last K such lines: the part's closing list)
		[ "$k" -gt 0 ] && mapfile -t -O "${#SKIP_LINES[@]}" SKIP_LINES < <(grep '^skipped: ' "$log" | tail -n "$k" | sed 's/^skipped: //')
		if [ "$f" -gt 0 ]; then
			FAILED_NAMES+=("$(grep '^failed: ' "$log" | tail -n 1 | sed 's/^failed: //')")
		elif [ "$rc" -ne 0 ]; then
			FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name")
		fi
	else
		FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name")
	fi
}

# Show the log of the part that just ended (job_wait) in one block, and add
# its counts.
show_part() {
	echo
	echo "==== $JOB_NAME: its output ($JOB_SECS s) ===="
	cat "$JOB_FILE"
	echo "==== $JOB_NAME: end ($JOB_SECS s, status $JOB_RC) ===="
	echo "==> time: part $JOB_NAME: $JOB_SECS s"
	add_counts "$JOB_NAME" "$JOB_FILE" "$JOB_RC"
}

# Start the parts (NAME CMD... each, separated by ---), then show each as it ends.
run_parts() {
	local args=() a
	for a in "$@" ---; do
		if [ "$a" = --- ]; then
			if [ ${#args[@]} -gt 0 ]; then
				say "part ${args[0]}: started (its output follows when it ends)"
				job_start "${args[@]}"
			fi
			args=()
		else
			args+=("$a")
		fi
	done
	while [ "$(jobs_running)" -gt 0 ]; do
		job_wait
		show_part
	done
}

# The closing lines of a run: the failures, the time, the counts.
summary() {
	echo
	local s
	for s in "${SKIP_LINES[@]}"; do echo "skipped: $s"; done
	if [ ${#FAILED_NAMES[@]} -gt 0 ]; then
		echo "failed: ${FAILED_NAMES[*]}"
	fi
	echo "(wall time $((SECONDS - T0)) s)"
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
}

# Count a skip: NAME and its REASON.
add_skip() { SKIPPED=$((SKIPPED + 1)); SKIP_LINES+=("$1: $2"); }

# "PostgreSQL 17.12" of the machine (or root filesystem) the run is on.
pg_version() { "$PG_SYS_LIB/bin/pg_config" --version 2>/dev/null | awk '{print $1, $2}'; }

# ---- one version, on this machine (or in the root filesystem it runs in) --
version_main() {
	local where="Debian $(cat /etc/debian_version 2>/dev/null)" t parts=() regress_deferred=0
	say "$(pg_version) ($where)"
	if [ "$(id -u)" -eq 0 ]; then
		[ -n "${PERPCA_REEXECED:-}" ] && die "re-executed as root: refusing to loop"
		t=$SECONDS
		ensure_packages
		if [ "$SANITIZE" = 1 ]; then
			# First: on a fresh machine it builds the ASan PostgreSQL
			# (scripts/sanitize.sh as root does), the longest build.
			say "part sanitizer: started (its output follows when it ends)"
			job_start sanitizer bash "$REPO_ROOT/scripts/sanitize.sh"
		fi
		# Citus for test/t/045_citus.pl: built (cached) as root, so that
		# apt-get can install its build packages; the unprivileged run gets
		# the build's directory, a skip reason or the failure in PERPCA_CITUS_*.
		citus_prepare
		pgvector_prepare
		say "time: packages, Citus and pgvector ready: $((SECONDS - t)) s"
		if [ -z "$ONLY" ] || [[ package =~ $ONLY ]]; then
			parts+=(package bash "$REPO_ROOT/scripts/package.sh" test ---)
			# pg_regress on test/sql runs in full against the installed
			# package: the same files on the same code need not run again
			# (unless the package's installcheck does not pass: see below).
			[ -z "$ONLY" ] && regress_deferred=1
		fi
		if [ "$regress_deferred" = 1 ]; then
			parts+=(suite unprivileged_suite PERPCA_REGRESS_DONE="against the installed package (part package)" -- "${PART_ARGS[@]}" ---)
		else
			parts+=(suite unprivileged_suite -- "${PART_ARGS[@]}" ---)
		fi
	else
		ensure_packages
		if [ -z "$ONLY" ] || [[ package =~ $ONLY ]]; then
			add_skip package "installing the Debian package needs root (scripts/package.sh build OUTDIR builds it)"
		fi
		parts+=(suite env PERPCA_TEST_PART=suite bash "$REPO_ROOT/scripts/test.sh" "${PART_ARGS[@]}" ---)
		if [ "$SANITIZE" = 1 ]; then
			if [ -x "$ASAN_PREFIX/bin/postgres" ] && [ -f "$ASAN_PREFIX/.asan-built" ]; then
				parts+=(sanitizer bash "$REPO_ROOT/scripts/sanitize.sh" ---)
			else
				add_skip sanitizer "no ASan PostgreSQL in $ASAN_PREFIX (run as root once, or see CONTRIBUTING.md, Sanitizers)"
			fi
		fi
	fi
	run_parts "${parts[@]}"
	if [ "$regress_deferred" = 1 ] && ! { grep -q '^ok - package: installcheck' "$JOBS_DIR/package.log" &&
		! grep -q '^not ok - package: installcheck' "$JOBS_DIR/package.log"; }; then
		say "the package's installcheck did not pass in full: pg_regress from the build tree too"
		run_parts regress unprivileged_suite PERPCA_SUITE_REGRESS_ONLY=1 -- "${PART_ARGS[@]}"
	fi
	rm -rf "$JOBS_DIR"
	echo
	echo "$(pg_version): $PASSED passed, $FAILED failed, $SKIPPED skipped ($((SECONDS - T0)) s)"
	summary
	[ "$FAILED" -eq 0 ]
}

# As root: the suite part as the unprivileged user, with the settings
# VAR=VALUE... (up to --) and the arguments after --.
unprivileged_suite() {
	export PERPCA_TEST_PART=suite
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		export "${1?}"
		shift
	done
	shift
	run_unprivileged test.sh 0 "$@"
}

# The run of version N in its root filesystem: make (or check) it, then run
# this script there.  Exit status 3 with "skip: REASON" when that cannot be.
rootfs_version() {
	local v=$1 out rc=0
	shift
	out=$(bash "$REPO_ROOT/scripts/rootfs.sh" ensure "$v") || rc=$?
	if [ "$rc" -eq 3 ]; then
		echo "$out"
		return 3
	elif [ "$rc" -ne 0 ]; then
		echo "PostgreSQL $v: no root filesystem (scripts/rootfs.sh ensure $v failed)"
		return 1
	fi
	PERPCA_SANITIZE=0 bash "$REPO_ROOT/scripts/rootfs.sh" run "$v" -- \
		bash /work/repo/scripts/test.sh --pg="$v" "$@"
}

# ---- the matrix: the versions side by side, then the counts of all -----------
matrix_main() {
	local v lines=() skipped=() skip_reason= before_p before_f before_k
	local -A line=()
	for v in $PG_LIST; do
		if [ "$v" = "$LOCAL_PG" ]; then
			job_start "pg$v" bash "$REPO_ROOT/scripts/test.sh" --pg="$v" "${PART_ARGS[@]}"
		else
			# (the root filesystem is made on first use: debootstrap mostly
			# waits for the network, the other versions run meanwhile)
			job_start "pg$v" rootfs_version "$v" "${PART_ARGS[@]}"
		fi
		say "PostgreSQL $v: started (its output follows when it ends)"
	done
	while [ "$(jobs_running)" -gt 0 ]; do
		job_wait
		v=${JOB_NAME#pg}
		if [ "$JOB_RC" -eq 3 ] && grep -q '^skip: ' "$JOB_FILE"; then
			# (the same reason for each: said once, at the end)
			skipped+=("$v")
			skip_reason=$(grep '^skip: ' "$JOB_FILE" | tail -n 1 | sed 's/^skip: //')
			continue
		fi
		before_p=$PASSED before_f=$FAILED before_k=$SKIPPED
		local nnames=${#FAILED_NAMES[@]} nskips=${#SKIP_LINES[@]} i
		show_part
		# (which version each failure and skip is from)
		for ((i = nnames; i < ${#FAILED_NAMES[@]}; i++)); do
			FAILED_NAMES[i]="pg$v: ${FAILED_NAMES[i]}"
		done
		for ((i = nskips; i < ${#SKIP_LINES[@]}; i++)); do
			SKIP_LINES[i]="pg$v: ${SKIP_LINES[i]}"
		done
		line[$v]="PostgreSQL $v: $((PASSED - before_p)) passed, $((FAILED - before_f)) failed, $((SKIPPED - before_k)) skipped ($JOB_SECS s)"
	done
	for v in $PG_LIST; do
		[ -n "${line[$v]:-}" ] && lines+=("${line[$v]}")
	done
	if [ ${#skipped[@]} -gt 0 ]; then
		local list
		list=$(printf '%s\n' "${skipped[@]}" | sort -n | tr '\n' ' ')
		list=${list% }
		lines+=("PostgreSQL ${list// /, }: skipped: $skip_reason")
		for v in $list; do add_skip "PostgreSQL $v" "$skip_reason"; done
	fi
	echo
	echo "---- wall times of the parts (s) ----"
	local f
	for f in "$JOBS_DIR"/*.log; do
		grep -E '^==> time: ' "$f" | sed "s/^==> time: /$(basename "$f" .log): /" || true
	done
	rm -rf "$JOBS_DIR"
	echo
	printf '%s\n' "${lines[@]}"
	if [ -n "$ONLY" ] && [ $((PASSED + FAILED + SKIPPED)) -eq 0 ]; then
		echo "no test matched --only='$ONLY' on any version"
		summary
		return 1
	fi
	summary
	[ "$FAILED" -eq 0 ]
}

# ---- the suite on one version (unprivileged) --------------------------------
suite_main() {
	on_exit() {
		local rc=$1
		finish "$rc" test
		[ -n "$JOBS_DIR" ] && rm -rf "$JOBS_DIR"
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
	# No LLVM bitcode here (it is for JIT inlining, which no test uses): the
	# package build compiles it, as Debian does, on each version.
	local t=$SECONDS
	if ! build_tree PERPCA_CFLAGS=-Werror with_llvm=no; then
		FAILED=$((FAILED + 1)); FAILED_NAMES+=(build)
		exit 1
	fi
	say "time: build (-Werror): $((SECONDS - t)) s"
	t=$SECONDS
	if ! private_install with_llvm=no; then
		FAILED=$((FAILED + 1)); FAILED_NAMES+=(install)
		exit 1
	fi
	citus_prepare
	citus_install "$INST"
	pgvector_prepare
	pgvector_install "$INST"
	say "time: private installation (with Citus, pgvector): $((SECONDS - t)) s"

	# ---- pg_regress: test/sql/*.sql -------------------------------------------
	shopt -s nullglob
	regress_files=()
	for f in "$BUILD"/test/sql/*.sql; do
		if [ -z "$ONLY" ] || [[ "$(basename "$f" .sql)" =~ $ONLY ]]; then regress_files+=("$f"); fi
	done
	if [ -n "${PERPCA_REGRESS_DONE:-}" ]; then
		say "pg_regress: runs $PERPCA_REGRESS_DONE"
		regress_files=()
	fi
	regress_names=$(for f in "${regress_files[@]}"; do basename "$f" .sql; done | tr '\n' ' ')
	if [ ${#regress_files[@]} -gt 0 ]; then
		t=$SECONDS
		cluster_start
		say "pg_regress: ${#regress_files[@]} test(s)"
		rc=0
		# TAP_TESTS= : the TAP tests run below, with the private binaries in PATH.
		make -C "$BUILD" installcheck TAP_TESTS= bindir="$PGBIN" ${ONLY:+REGRESS="$regress_names"} \
			PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER" \
			2>&1 | tee "$WORK/regress.log" || rc=$?
		ok=$(regress_passed <"$WORK/regress.log")
		bad=$(regress_failed <"$WORK/regress.log")
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
		say "time: pg_regress: $((SECONDS - t)) s"
	elif [ -z "${PERPCA_REGRESS_DONE:-}" ]; then
		say "pg_regress: no test here${ONLY:+ matches --only}"
	fi

	# ---- TAP: test/t/*.pl ------------------------------------------------------
	tap_files=()
	# The slow group first: its files mostly wait (pg_cron runs at the next
	# minute), so they start early and overlap the others.
	for f in "$BUILD"/test/t/9[0-9][0-9]_*.pl "$BUILD"/test/t/[0-8][0-9][0-9]_*.pl; do
		[ "${PERPCA_SUITE_REGRESS_ONLY:-0}" = 1 ] && break
		case "$(basename "$f")" in
			9[0-9][0-9]_*)
				if [ "$QUICK" = 1 ]; then
					say "skipping slow TAP test $(basename "$f") (--quick)"
					continue
				fi ;;
		esac
		if [ -n "${PERPCA_IN_ROOTFS:-}" ] && [ "${PERPCA_MATRIX_FULL:-0}" != 1 ] &&
			! [[ "$(basename "$f" .pl)" =~ $VERSION_TAP ]]; then
			say "skipping TAP test $(basename "$f") on PostgreSQL $PG_MAJOR (it runs on 15; PERPCA_MATRIX_FULL=1 runs it here)"
			continue
		fi
		if [ -z "$ONLY" ] || [[ "$(basename "$f" .pl)" =~ $ONLY ]]; then tap_files+=("$f"); fi
	done
	if [ ${#tap_files[@]} -gt 0 ]; then
		local jobs=${PERPCA_TAP_JOBS:-2}
		t=$SECONDS
		say "TAP: ${#tap_files[@]} file(s), $jobs at a time (PERPCA_TAP_JOBS)"
		PGXS_DIR=$INST$PG_SYS_LIB/lib/pgxs
		mkdir -p "$BUILD/tmp_check/results"
		for f in "${tap_files[@]}"; do
			while [ "$(jobs_running)" -ge "$jobs" ]; do tap_done; done
			job_start "$(basename "$f" .pl)" run_tap "$f"
		done
		while [ "$(jobs_running)" -gt 0 ]; do tap_done; done
		say "time: TAP, ${#tap_files[@]} file(s): $((SECONDS - t)) s"
	elif [ "${PERPCA_SUITE_REGRESS_ONLY:-0}" != 1 ]; then
		say "TAP: no test here${ONLY:+ matches --only}"
	fi

	if [ $((PASSED + FAILED + SKIPPED)) -eq 0 ]; then
		if [ -n "$ONLY" ]; then
			# Not a failure: the files of this version are a selection.
			say "no test on PostgreSQL $PG_MAJOR matches --only='$ONLY': nothing counted here"
			exit 0
		fi
		ABORT_REASON="no tests found"
		exit 1
	fi
	[ "$FAILED" -eq 0 ]
}

# One TAP file (scripts/run_tap.pl), clusters from the private installation
# (suite_main); its result line goes to $BUILD/tmp_check/results/NAME.tap.
run_tap() {
	local f=$1 name log result
	name=test/t/$(basename "$f")
	result=$BUILD/tmp_check/results/$(basename "$f" .pl).tap
	# PATH: initdb, pg_ctl, psql, pg_dump of the PRIVATE installation.
	(cd "$BUILD" && env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
		PATH="$PGBIN:$PATH" TESTDIR="$BUILD" TESTDATADIR="$BUILD/tmp_check" TESTLOGDIR="$BUILD/tmp_check/log" \
		PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
		perl "$REPO_ROOT/scripts/run_tap.pl" "$name" "$name" "$PGXS_DIR/src/test/perl" "$BUILD/test/t" \
		>"$result")
	grep -q '^ok - ' "$result" && return 0
	log=$BUILD/tmp_check/log/regress_log_$(basename "$f" .pl)
	if [ -f "$log" ]; then
		echo "---- $log (last 80 lines) ----"
		tail -n 80 "$log"
	fi
	return 1
}

# Wait for one TAP file of suite_main, show its output and count it.
tap_done() {
	job_wait
	cat "$JOB_FILE"
	say "time: test/t/$JOB_NAME.pl: $JOB_SECS s"
	local result
	result=$(cat "$BUILD/tmp_check/results/$JOB_NAME.tap" 2>/dev/null || true)
	echo "$result"
	if [[ "$result" == "ok - "*" # SKIP "* ]]; then
		add_skip "test/t/$JOB_NAME.pl" "${result#* # SKIP }"
	elif [ "$JOB_RC" -eq 0 ] && [[ "$result" == "ok - "* ]]; then
		PASSED=$((PASSED + 1))
	else
		FAILED=$((FAILED + 1)); FAILED_NAMES+=("test/t/$JOB_NAME.pl")
	fi
}

# ---- which part this process is -----------------------------------------
if [ "${PERPCA_TEST_PART:-}" = suite ]; then
	[ "$(id -u)" -ne 0 ] || die "the suite part runs unprivileged"
	suite_main
	exit 0
elif [ -z "$PG_LIST" ] && [ -n "${PERPCA_IN_ROOTFS:-}" ]; then
	PG_LIST=$PERPCA_IN_ROOTFS
fi
PG_LIST=${PG_LIST:-15 17 18}
if [ "$PG_LIST" = "$LOCAL_PG" ]; then
	version_main
else
	matrix_main
fi
