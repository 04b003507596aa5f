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
# (clusters from the private binaries; on 17 and 18 the files of VERSION_TAP).
# Each version ends with "PostgreSQL X.Y: N passed, M failed", and the run with
# one line "N passed, M failed" over all versions (pg_regress tests, TAP files,
# package checks); exit status 0 only if nothing failed.  Works as root
# (installs missing packages, builds the root filesystems, then runs the
# clusters as the unprivileged user "perpca") or as a normal user, who gets
# PostgreSQL 15 and one line saying why 17 and 18 were skipped.
# The sanitizer run (scripts/sanitize.sh: the suite under ASan/UBSan against a
# cached ASan build of PostgreSQL 15) ends the 15 run; PERPCA_SANITIZE=0 skips
# it.  As root the ASan build is made on first use; a normal user without it
# gets a warning and the run goes on without sanitizers.
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
		-h | --help) sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument: $arg (try --help)" ;;
	esac
done
for v in $PG_LIST; do
	case "$v" in 15 | 17 | 18) ;; *) die "--pg: PostgreSQL $v is not tested (15, 17, 18)" ;; esac
done

SANITIZE=1
[ "$QUICK" = 1 ] || [ "${PERPCA_SANITIZE:-1}" = 0 ] && SANITIZE=0
ASAN_PREFIX=${PERPCA_ASAN_PREFIX:-/var/cache/perpca/pg15-asan}
# The version this machine (or the root filesystem the run is in) has.
LOCAL_PG=${PERPCA_IN_ROOTFS:-$PG_MAJOR}
# The TAP files that also run on 17 and 18: those whose subject changes with
# the server (dump/restore, postgres_fdw, Citus, pgvector's packages, the
# extension upgrade, roles and security-restricted operations, pg_cron, the
# maintenance operations' search_path).  The others test perpca's own code
# (numerics, locking, cancel, crash recovery, federated fits over libpq, the
# README's example), which is the same on every server, and run on 15; with
# PERPCA_MATRIX_FULL=1 every file runs everywhere (README, Testing: the time).
VERSION_TAP='^(001_dump_restore|010_fdw_shards|045_citus|047_pgvector|065_upgrade|070_model_owner|900_pg_cron|910_maintenance_cron)$'

T0=$SECONDS
PASSED=0
FAILED=0
FAILED_NAMES=()

# Run a part of the run (CMD...), show its output, and add the counts of its
# closing "N passed, M failed" line; a part that fails without a count, or
# whose status says failure while it counts none, counts as one failure, NAME.
run_part() {
	local name=$1 log rc
	shift
	log=$(mktemp "${TMPDIR:-/tmp}/perpca-part.XXXXXX")
	set +e
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	set -e
	local counts
	counts=$(counts_of "$log")
	if [ -n "$counts" ]; then
		PASSED=$((PASSED + ${counts% *}))
		FAILED=$((FAILED + ${counts#* }))
		if [ "${counts#* }" -gt 0 ]; then
			FAILED_NAMES+=("$(grep '^failed: ' "$log" | tail -n 1 | sed 's/^failed: //')")
		elif [ "$rc" -ne 0 ]; then
			FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name")
		fi
	else
		FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name")
	fi
	# The output of the last part stays readable until the next one.
	[ -n "${LAST_PART_LOG:-}" ] && rm -f "$LAST_PART_LOG"
	LAST_PART_LOG=$log
	return 0
}

# The closing lines of a run: the failures, the time, the counts.
summary() {
	echo
	if [ ${#FAILED_NAMES[@]} -gt 0 ]; then
		echo "failed: ${FAILED_NAMES[*]}"
	fi
	echo "(wall time $((SECONDS - T0)) s)"
	echo "$PASSED passed, $FAILED failed"
}

# "PostgreSQL 17.12" of the machine (or root filesystem) the run is on.
pg_version() { "$PG_SYS_LIB/bin/pg_config" --version 2>/dev/null | awk '{print $1, $2}'; }

# ---- one version, on this machine (or in the root filesystem it runs in) --
version_main() {
	local where="Debian $(cat /etc/debian_version 2>/dev/null)"
	say "$(pg_version) ($where)"
	if [ "$(id -u)" -eq 0 ]; then
		[ -n "${PERPCA_REEXECED:-}" ] && die "re-executed as root: refusing to loop"
		if [ "$SANITIZE" = 1 ]; then
			# Needs root (apt-get); cached, so only the first run pays for it.
			say "ASan PostgreSQL for the sanitizer run: $ASAN_PREFIX"
			bash "$REPO_ROOT/scripts/asan-postgres.sh" "$ASAN_PREFIX" || die "could not build the ASan PostgreSQL"
		fi
		ensure_packages
		# Citus for test/t/045_citus.pl: built (cached) as root, so that
		# apt-get can install its build packages; the unprivileged run gets
		# the build's directory, a skip reason or the failure in PERPCA_CITUS_*.
		citus_prepare
		pgvector_prepare
		if [ -z "$ONLY" ] || [[ package =~ $ONLY ]]; then
			run_part package bash "$REPO_ROOT/scripts/package.sh" test
			# pg_regress on test/sql ran in full against the installed package:
			# the same files on the same code need not run again.
			if [ -z "$ONLY" ] && grep -q '^ok - package: installcheck' "$LAST_PART_LOG" &&
				! grep -q '^not ok - package: installcheck' "$LAST_PART_LOG"; then
				export PERPCA_REGRESS_DONE="against the installed package (package: installcheck above)"
			fi
		fi
		export PERPCA_TEST_PART=suite
		run_part suite run_unprivileged test.sh 0 "${PART_ARGS[@]}"
	else
		ensure_packages
		if [ -z "$ONLY" ] || [[ package =~ $ONLY ]]; then
			echo "package: skipped: installing the Debian package needs root (scripts/package.sh build OUTDIR builds it)"
		fi
		run_part suite env PERPCA_TEST_PART=suite bash "$REPO_ROOT/scripts/test.sh" "${PART_ARGS[@]}"
	fi
	echo
	echo "$(pg_version): $PASSED passed, $FAILED failed ($((SECONDS - T0)) s)"
	summary
	[ "$FAILED" -eq 0 ]
}

# ---- the matrix: each version, then the counts of all -----------------------
matrix_main() {
	local v lines=() before_p before_f t out rc skipped=() skip_reason=
	local -A ensure_pid=() ensure_log=()
	# The root filesystems are made (or checked) in the background while the
	# versions before them run: debootstrap mostly waits for the network.
	if [ "$(id -u)" -eq 0 ]; then
		for v in $PG_LIST; do
			[ "$v" = "$LOCAL_PG" ] && continue
			ensure_log[$v]=$(mktemp "${TMPDIR:-/tmp}/perpca-rootfs-$v.XXXXXX")
			bash "$REPO_ROOT/scripts/rootfs.sh" ensure "$v" >"${ensure_log[$v]}" 2>&1 &
			ensure_pid[$v]=$!
		done
	fi
	for v in $PG_LIST; do
		before_p=$PASSED before_f=$FAILED t=$SECONDS
		if [ "$v" = "$LOCAL_PG" ]; then
			echo
			say "==== PostgreSQL $v ===="
			run_part "pg$v" bash "$REPO_ROOT/scripts/test.sh" --pg="$v" "${PART_ARGS[@]}"
		else
			rc=0
			if [ -n "${ensure_pid[$v]:-}" ]; then
				wait "${ensure_pid[$v]}" || rc=$?
				cat "${ensure_log[$v]}"
				out=$(tail -n 1 "${ensure_log[$v]}")
				rm -f "${ensure_log[$v]}"
			else
				out=$(bash "$REPO_ROOT/scripts/rootfs.sh" ensure "$v" | tail -n 1) || rc=$?
			fi
			if [ "$rc" -eq 3 ]; then
				# (the same reason for each: said once, at the end)
				skipped+=("$v")
				skip_reason=${out#skip: }
				continue
			elif [ "$rc" -ne 0 ]; then
				FAILED=$((FAILED + 1)); FAILED_NAMES+=("rootfs-$v")
				lines+=("PostgreSQL $v: no root filesystem (scripts/rootfs.sh ensure $v failed)")
				continue
			fi
			echo
			say "==== PostgreSQL $v ===="
			run_part "pg$v" env PERPCA_SANITIZE=0 bash "$REPO_ROOT/scripts/rootfs.sh" run "$v" -- \
				bash /work/repo/scripts/test.sh --pg="$v" "${PART_ARGS[@]}"
		fi
		lines+=("PostgreSQL $v: $((PASSED - before_p)) passed, $((FAILED - before_f)) failed ($((SECONDS - t)) s)")
	done
	if [ ${#skipped[@]} -gt 0 ]; then
		local list=${skipped[*]}
		lines+=("PostgreSQL ${list// /, }: skipped: $skip_reason")
	fi
	echo
	printf '%s\n' "${lines[@]}"
	summary
	[ "$FAILED" -eq 0 ]
}

# ---- the suite on one version (unprivileged) --------------------------------
suite_main() {
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
	if [ -n "${PERPCA_REGRESS_DONE:-}" ]; then
		say "pg_regress: ran $PERPCA_REGRESS_DONE"
		regress_files=()
	fi
	regress_names=$(for f in "${regress_files[@]}"; do basename "$f" .sql; done | tr '\n' ' ')
	if [ ${#regress_files[@]} -gt 0 ]; then
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
	else
		[ -n "${PERPCA_REGRESS_DONE:-}" ] || say "pg_regress: no tests in test/sql"
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
		if [ -n "${PERPCA_IN_ROOTFS:-}" ] && [ "${PERPCA_MATRIX_FULL:-0}" != 1 ] &&
			! [[ "$(basename "$f" .pl)" =~ $VERSION_TAP ]]; then
			say "skipping TAP test $(basename "$f") on PostgreSQL $PG_MAJOR (it runs on 15; PERPCA_MATRIX_FULL=1 runs it here)"
			continue
		fi
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
				PATH="$PGBIN:$PATH" TESTDIR="$BUILD" TESTDATADIR="$BUILD/tmp_check" TESTLOGDIR="$BUILD/tmp_check/log" \
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
