#!/usr/bin/env bash
# scripts/sanitize.sh -- the test suite under AddressSanitizer and UndefinedBehaviorSanitizer
#
#   bash scripts/sanitize.sh            pg_regress suite + the TAP files of SANITIZE_TAP
#   bash scripts/sanitize.sh --regress  pg_regress suite only
#   PERPCA_SANITIZE_FULL=1 bash scripts/sanitize.sh
#                                       every TAP file but the slow 9NN group
#
# The extension is built with -fsanitize=address,undefined (-fno-sanitize-recover, so
# that UBSan findings are errors) against a private PostgreSQL 15 that is itself built
# with ASan and assertions (scripts/asan-postgres.sh, cached in $PERPCA_ASAN_PREFIX,
# default $PERPCA_CACHE_DIR/pg15-asan; built on first use when run as root, about
# 8.5 minutes on 2 idle cores).  A throwaway cluster from that build runs the suite;
# every sanitizer report goes to a file, and any report fails the run (as does any
# failed test).  scripts/test.sh runs this beside the suite on 15 (not with --quick).
# Ends with one line "N passed, M failed, K skipped"; exit status 0 only if nothing failed.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TAP=1
for arg in "$@"; do
	case "$arg" in
		--regress) TAP=0 ;;
		-h | --help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument: $arg (try --help)" ;;
	esac
done

ASAN_PREFIX=${PERPCA_ASAN_PREFIX:-$PERPCA_CACHE_DIR/pg15-asan}
# The TAP files that drive perpca's C code along paths pg_regress does not:
# binary send/receive and one-thread BLAS (001), partial aggregates over
# postgres_fdw (010), concurrent sessions, locks and the model cache (020,
# 070, 085), a killed server (030), the federated fit's libpq client (040),
# cancels and timeouts in the middle of C loops (050, 060), refreshes as the
# owner under a restricted search_path (075_refresh_anywhere), hostile
# objects met by the C readers (075_hostile_schema, 076), seeded fuzzing of
# the input and receive functions (080).  Left out, with nothing of perpca's
# C that the others do not run: 065_upgrade (the SQL upgrade scripts; the
# upgraded functions are the ones pg_regress runs), 090_reference (the
# README against the catalog), 095_own_table (the README's example, the same
# calls as pg_regress's examples); 045_citus and 047_pgvector skip anyway
# (no Citus or pgvector built against the ASan server) and
# 078_similarity_memory skips under ASan (its 64 MB bound means nothing with
# shadow memory).  PERPCA_SANITIZE_FULL=1 runs them all.
SANITIZE_TAP='^(001_dump_restore|010_fdw_shards|020_concurrency|030_crash|040_federated|050_cancel|060_rank_progress|070_model_owner|075_hostile_schema|075_refresh_anywhere|076_escalation|080_stats_fuzz|085_isolation)$'

if [ "$(id -u)" -eq 0 ] && [ -z "${PERPCA_REEXECED:-}" ]; then
	ensure_packages
	bash "$REPO_ROOT/scripts/asan-postgres.sh" "$ASAN_PREFIX" || die "could not build the ASan PostgreSQL"
fi
prepare_user sanitize.sh 0 "$@"
[ -x "$ASAN_PREFIX/bin/postgres" ] && [ -f "$ASAN_PREFIX/.asan-built" ] ||
	die "no ASan PostgreSQL in $ASAN_PREFIX: build it once as root with
    sudo bash scripts/asan-postgres.sh $ASAN_PREFIX
  (or run scripts/sanitize.sh or scripts/test.sh as root, which do that)"

T0=$SECONDS
PASSED=0
FAILED=0
SKIPPED=0
FAILED_NAMES=()
SKIP_LINES=()
make_work sanitize
REPORTS=$WORK/reports
mkdir -p "$REPORTS"
# PostgreSQL leaks on purpose at exit: no leak check.  Reports go to files.
export ASAN_OPTIONS="detect_leaks=0:log_path=$REPORTS/asan:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$REPORTS/ubsan"

on_exit() {
	local rc=$1
	finish "$rc" sanitize
	if [ "$rc" -ne 0 ] && [ "$FAILED" -eq 0 ]; then
		FAILED=1; FAILED_NAMES+=("${ABORT_REASON:-harness (see messages above)}")
	fi
	echo
	local l
	for l in "${SKIP_LINES[@]}"; do echo "skipped: $l"; done
	[ ${#FAILED_NAMES[@]} -gt 0 ] && echo "failed: ${FAILED_NAMES[*]}"
	echo "(sanitizer wall time $((SECONDS - T0)) s)"
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	exit "$rc"
}
trap 'on_exit $?' EXIT

# ---- the ASan PostgreSQL (a writable copy) and the sanitized extension ------
ASAN_INST=$WORK/pg
say "copying the ASan PostgreSQL from $ASAN_PREFIX"
cp -a "$ASAN_PREFIX" "$ASAN_INST"
PGBIN=$ASAN_INST/bin
PG_CONFIG_ASAN=$PGBIN/pg_config
copy_tree "$REPO_ROOT" "$BUILD"
say "building perpca with -fsanitize=address,undefined in $BUILD"
t0=$SECONDS
SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize=alignment -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if ! make -C "$BUILD" -j"$(nproc)" PG_CONFIG="$PG_CONFIG_ASAN" \
	PERPCA_CFLAGS="$SAN_FLAGS" LDFLAGS_SL="$SAN_FLAGS" >"$WORK/build.log" 2>&1 ||
	! make -C "$BUILD" install PG_CONFIG="$PG_CONFIG_ASAN" >>"$WORK/build.log" 2>&1; then
	cat "$WORK/build.log"
	FAILED=$((FAILED + 1)); FAILED_NAMES+=(build)
	exit 1
fi
say "time: sanitized build and install: $((SECONDS - t0)) s"

# ---- a throwaway cluster from the ASan build ----------------------------------
PORT=$(pick_port)
say "starting an ASan cluster (port $PORT, socket in $SOCK)"
"$PGBIN/initdb" -D "$PGDATA_DIR" -A trust -N --no-locale -E UTF8 >"$WORK/initdb.log" 2>&1 ||
	{ cat "$WORK/initdb.log"; exit 1; }
cat >>"$PGDATA_DIR/postgresql.conf" <<EOF
listen_addresses = ''
port = $PORT
unix_socket_directories = '$SOCK'
fsync = off
log_min_messages = warning
EOF
[ -f "$BUILD/test/cluster.conf" ] && cat "$BUILD/test/cluster.conf" >>"$PGDATA_DIR/postgresql.conf"
OPENBLAS_NUM_THREADS=1 "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$SERVER_LOG" -w -t 300 start \
	>"$WORK/pg_ctl.log" 2>&1 || { cat "$WORK/pg_ctl.log"; tail -n 50 "$SERVER_LOG"; exit 1; }
PGHOST=$SOCK PGUSER=$(id -un) PGDATABASE=postgres
export PGHOST PGPORT=$PORT PGUSER PGDATABASE

# ---- pg_regress ---------------------------------------------------------------
say "pg_regress under ASan/UBSan"
rc=0 t0=$SECONDS
make -C "$BUILD" installcheck TAP_TESTS= PG_CONFIG="$PG_CONFIG_ASAN" bindir="$PGBIN" \
	2>&1 | tee "$WORK/regress.log" || rc=$?
ok=$(grep -cE '^(test +| +)[^ ]+ +\.\.\. ok' "$WORK/regress.log" || true)
bad=$(grep -E '^(test +| +)[^ ]+ +\.\.\. (FAILED|failed)' "$WORK/regress.log" |
	sed -E 's/^(test +| +)([^ ]+).*/\2/' || true)
PASSED=$((PASSED + ok))
for n in $bad; do FAILED=$((FAILED + 1)); FAILED_NAMES+=("asan:$n"); done
if [ "$rc" -ne 0 ]; then
	[ -z "$bad" ] && { FAILED=$((FAILED + 1)); FAILED_NAMES+=(asan:pg_regress); }
	[ -f "$BUILD/regression.diffs" ] && cat "$BUILD/regression.diffs"
	tail -n 60 "$SERVER_LOG" || true
fi
"$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 120 stop >/dev/null 2>&1 || true
say "time: pg_regress under ASan/UBSan: $((SECONDS - t0)) s"

# ---- TAP (clusters from the ASan binaries) ------------------------------------------
if [ "$TAP" = 1 ]; then
	PGXS_DIR=$("$PG_CONFIG_ASAN" --pgxs)
	PGXS_DIR=${PGXS_DIR%/src/makefiles/pgxs.mk}
	mkdir -p "$BUILD/tmp_check/results"
	for f in "$BUILD"/test/t/*.pl; do
		case "$(basename "$f")" in 9[0-9][0-9]_*) continue ;; esac
		if [ "${PERPCA_SANITIZE_FULL:-0}" != 1 ] && ! [[ "$(basename "$f" .pl)" =~ $SANITIZE_TAP ]]; then
			say "not under ASan/UBSan: $(basename "$f") (see SANITIZE_TAP; PERPCA_SANITIZE_FULL=1 runs it)"
			continue
		fi
		name=test/t/$(basename "$f")
		say "TAP under ASan/UBSan: $name"
		t0=$SECONDS
		result=$BUILD/tmp_check/results/$(basename "$f" .pl).tap
		(cd "$BUILD" && env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
			PATH="$PGBIN:$PATH" TESTDIR="$BUILD" PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress" \
			perl "$REPO_ROOT/scripts/run_tap.pl" "asan:$name" "$name" "$PGXS_DIR/src/test/perl" "$BUILD/test/t" \
			>"$result") 2>&1 || true
		cat "$result"
		if grep -q '^ok - .* # SKIP ' "$result"; then
			SKIPPED=$((SKIPPED + 1)); SKIP_LINES+=("asan:$name: $(sed 's/^ok - .* # SKIP //' "$result")")
		elif grep -q '^ok - ' "$result"; then
			PASSED=$((PASSED + 1))
			say "time: asan:$name: $((SECONDS - t0)) s"
		else
			FAILED=$((FAILED + 1)); FAILED_NAMES+=("asan:$name")
			log=$BUILD/tmp_check/log/regress_log_$(basename "$f" .pl)
			[ -f "$log" ] && tail -n 60 "$log"
		fi
	done
fi

# ---- any sanitizer report fails -------------------------------------------------
shopt -s nullglob
reports=("$REPORTS"/*)
if [ ${#reports[@]} -gt 0 ]; then
	for r in "${reports[@]}"; do
		echo "---- sanitizer report $r ----"
		head -n 60 "$r"
	done
	FAILED=$((FAILED + 1)); FAILED_NAMES+=("sanitizer reports: ${#reports[@]}")
else
	say "no sanitizer report"
	PASSED=$((PASSED + 1))
fi
# Server-side reports also show in the server logs of the TAP clusters.
if grep -lE 'ERROR: AddressSanitizer|runtime error:' "$SERVER_LOG" "$BUILD"/tmp_check/log/*.log 2>/dev/null; then
	FAILED=$((FAILED + 1)); FAILED_NAMES+=("sanitizer messages in server logs")
fi
[ "$FAILED" -eq 0 ]
