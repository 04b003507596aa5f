#!/usr/bin/env bash
# scripts/test.sh -- build perpca and run every test, on each PostgreSQL version
#
#   bash scripts/test.sh                  everything: what CI runs (through .ci/run)
#   bash scripts/test.sh --pg=17          some versions only (--pg=15,18)
#   bash scripts/test.sh --quick          without the slow TAP group (test/t/9NN_*.pl)
#                                         and without the sanitizer run
#   bash scripts/test.sh --quick --only=REGEX
#                                         only the tests whose name matches: the basenames
#                                         of test/sql/*.sql and test/t/*.pl, and "package"
#
# What runs where.  Each version runs as parts, side by side, and so do the versions:
#
#   part       runs                                            on
#   package    scripts/package.sh test: the Debian package     every version (root only)
#              built, installed, checked (pg_regress on it)
#   suite      scripts/suite.sh: build, private installation,  every version: on 15 every
#              pg_regress (unless the package part runs it),   TAP file, on 17 and 18
#              the TAP files                                   those of VERSION_TAP
#   sanitizer  scripts/suite.sh --sanitize: ASan and UBSan,    15 (not with --quick, nor
#              pg_regress and the TAP files of SANITIZE_TAP    with PERPCA_SANITIZE=0)
#
# 15 is this machine's (Debian 12); 17 and 18 run in Debian root filesystems.
# A part first has scripts/prepare.sh make its environment ready: packages,
# root filesystems, Citus, pgvector and the ASan PostgreSQL, built once and
# cached in PERPCA_CACHE_DIR (default /var/cache/perpca).  That needs root;
# a normal user runs 15's suite (and the sanitizer run when the ASan build is
# in the cache), and the rest counts as skipped, with the reason.
#
# Each part prints one TAP line per test on stdout and its log on stderr; the
# log is shown whole when the part ends.  The run ends with a table (a row per
# part), a line per skip and per failure, and "N passed, M failed, K skipped";
# the exit status is 0 only if nothing failed.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK=0 ONLY='' VERSIONS="15 17 18" ARGS=()
for arg in "$@"; do
	case "$arg" in
		--quick) QUICK=1 ARGS+=("$arg") ;;
		--only=*) ONLY=${arg#--only=} ARGS+=("$arg") ;;
		--pg=*) VERSIONS=${arg#--pg=} VERSIONS=${VERSIONS//,/ } ;;
		-h | --help) usage; exit 0 ;;
		*) die "unknown argument: $arg (try --help)" ;;
	esac
done
for v in $VERSIONS; do [[ "$v" =~ ^(15|17|18)$ ]] || die "--pg: PostgreSQL $v is not tested (15, 17, 18)"; done

# The TAP files that also run on 17 and 18: those whose subject changes with
# the server (dump/restore, postgres_fdw, Citus, pgvector, the upgrade, roles
# and privileges, search_path and security-restricted operations, refreshes
# from any session, lock orders, pg_cron).  The others test perpca's own code
# (numerics, memory, cancel, crash recovery, federated fits, the README's
# example), the same on every server.
VERSION_TAP='^(001_dump_restore|010_fdw_shards|045_citus|047_pgvector|065_upgrade|070_model_owner|075_hostile_schema|075_refresh_anywhere|076_bound_query|076_escalation|076_planted_casts|077_internal_execute|085_isolation|900_pg_cron|910_maintenance_cron)$'
# The TAP files that drive perpca's C code along paths pg_regress does not:
# binary send/receive (001), partial aggregates over postgres_fdw (010),
# concurrent sessions and locks (020, 070, 085), a killed server (030), the
# federated fit's libpq client (040), cancels (050, 060), refreshes as the
# owner, hostile objects met by the C readers (075, 076), fuzzing (080).
SANITIZE_TAP='^(001_dump_restore|010_fdw_shards|020_concurrency|030_crash|040_federated|050_cancel|060_rank_progress|070_model_owner|075_hostile_schema|075_refresh_anywhere|076_escalation|076_planted_casts|080_stats_fuzz|085_isolation)$'

ROOT=0
[ "$(id -u)" -eq 0 ] && ROOT=1
PACKAGE=0
if [ "$ROOT" = 1 ] && { [ -z "$ONLY" ] || [[ package =~ $ONLY ]]; }; then PACKAGE=1; fi
# pg_regress runs once per version: against the installed package when its
# part runs in full (as root, without --only), else in the suite part.  On 15
# the package part leaves a postgresql-15-perpca installed before the run alone
# and skips its checks: then the suite part runs pg_regress.  (17 and 18 start
# from their root filesystems, where the package is never installed.)
regress_in_package() {
	[ "$PACKAGE" = 1 ] && [ -z "$ONLY" ] || return 1
	[ "$1" != 15 ] || [ -n "$(missing_from postgresql-15-perpca)" ]
}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/perpca-run.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
T0=$SECONDS

# ---- the parts: scripts/prepare.sh, then the part itself -------------------------
prepare() { bash "$REPO_ROOT/scripts/prepare.sh" "$@"; }
# The root filesystem of V, its Citus and pgvector lines in ROOTFS; status 3
# (and a TAP line) when it cannot be had here.
rootfs() {
	local rc=0
	ROOTFS=$(prepare rootfs "$1") || rc=$?
	[ "$rc" -ne 3 ] || echo "ok - PostgreSQL $1 # SKIP ${ROOTFS#skip: }"
	return "$rc"
}
package_part() {
	local rc=0
	if [ "$1" = 15 ]; then bash "$REPO_ROOT/scripts/package.sh" test; return; fi
	rootfs "$1" || rc=$?
	[ "$rc" -eq 0 ] || return $((rc == 3 ? 0 : rc))
	prepare enter "$1" -- bash /work/repo/scripts/package.sh test
}
suite_part() {
	local v=$1 extras=()
	shift
	if [ "$v" = 15 ]; then
		mapfile -t extras < <(prepare extras)
		env "${extras[@]}" bash "$REPO_ROOT/scripts/suite.sh" "$@"
	else
		local rc=0
		rootfs "$v" || rc=$?
		[ "$rc" -eq 0 ] || return $((rc == 3 ? 0 : rc))
		mapfile -t extras < <(grep '=' <<<"$ROOTFS")
		prepare enter "$v" -- env "${extras[@]}" bash /work/repo/scripts/suite.sh --tap="$VERSION_TAP" "$@"
	fi
}
sanitizer_part() {
	local dir rc=0
	dir=$(prepare asan) || rc=$?
	case "$rc" in
		0) bash "$REPO_ROOT/scripts/suite.sh" --sanitize="$dir" --tap="$SANITIZE_TAP" "$@" ;;
		3) echo "ok - sanitizer run # SKIP ${dir#skip: }" ;;
		*) echo "not ok - the ASan PostgreSQL (scripts/prepare.sh asan, exit $rc)" ;;
	esac
}

# ---- start them all ---------------------------------------------------------------
declare -A PART=() STARTED=()
REGRESS_IN_SUITE=''
start() {
	local name=$1
	shift
	say "$name: started (its output follows when it ends)"
	STARTED[$name]=$SECONDS
	"$@" >"$OUT/$name.tap" 2>"$OUT/$name.log" </dev/null &
	PART[$!]=$name
}
skipped() { echo "ok - $2 # SKIP $3" >"$OUT/$1.tap"; : >"$OUT/$1.log"; STARTED[$1]=$SECONDS; }
for v in $VERSIONS; do
	if [ "$v" != 15 ] && [ "$ROOT" = 0 ]; then
		skipped "pg$v" "PostgreSQL $v" "it runs in a Debian root filesystem, which only root can make and enter"
		continue
	fi
	if [ "$PACKAGE" = 1 ]; then start "pg$v-package" package_part "$v"
	elif [ -z "$ONLY" ] || [[ package =~ $ONLY ]]; then
		skipped "pg$v-package" package "installing the Debian package needs root (scripts/package.sh build OUTDIR builds it)"
	fi
	no_regress=()
	if regress_in_package "$v"; then no_regress=(--no-regress); else REGRESS_IN_SUITE+=" $v"; fi
	start "pg$v-suite" suite_part "$v" "${no_regress[@]}" "${ARGS[@]}"
	if [ "$v" = 15 ] && [ "$QUICK" = 0 ] && [ "${PERPCA_SANITIZE:-1}" != 0 ]; then
		start "pg$v-sanitizer" sanitizer_part "${ARGS[@]}"
	fi
done

# ---- show each part when it ends ------------------------------------------------
declare -A ROW=()
while [ ${#PART[@]} -gt 0 ]; do
	rc=0
	wait -n -p pid "${!PART[@]}" || rc=$?
	name=${PART[$pid]}
	unset "PART[$pid]"
	secs=$((SECONDS - STARTED[$name]))
	tap=$OUT/$name.tap
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok' "$tap"; then echo "not ok - $name stopped (status $rc)" >>"$tap"; fi
	if [ -z "$ONLY" ] && ! grep -q '^\(not \)\?ok' "$tap"; then echo "not ok - $name ran no test" >>"$tap"; fi
	# A package installed during the run: the package part skipped its checks,
	# and the suite part had left pg_regress to it.
	v=${name#pg} v=${v%-package}
	if [ "$name" = "pg$v-package" ] && [[ " $REGRESS_IN_SUITE " != *" $v "* ]] && grep -q '^ok - package: checks # SKIP' "$tap"; then
		echo "not ok - package: pg_regress on PostgreSQL $v ran in neither part" >>"$tap"
	fi
	echo
	echo "==== $name: its output ($secs s) ===="
	cat "$OUT/$name.log" "$tap"
	echo "==== $name: end ($secs s, status $rc) ===="
	ROW[$name]=$secs
done

# ---- the table, the skips and failures, the counts -----------------------------
echo
printf '%-16s %7s %7s %8s %8s\n' part passed failed skipped seconds
P=0 F=0 K=0
for tap in "$OUT"/*.tap; do
	name=$(basename "$tap" .tap)
	read -r p f k < <(awk '/^ok .*# SKIP/ {k++; next} /^ok/ {p++} /^not ok/ {f++} END {print p+0, f+0, k+0}' "$tap")
	printf '%-16s %7d %7d %8d %8s\n' "$name" "$p" "$f" "$k" "${ROW[$name]:--}"
	P=$((P + p)) F=$((F + f)) K=$((K + k))
	sed -n "s/^ok - \(.*\) # SKIP /skipped: $name: \1: /p; s/^not ok - /failed: $name: /p" "$tap" >>"$OUT/notes"
done
echo
[ -f "$OUT/notes" ] && sort -s -k1,1 "$OUT/notes"
echo "(wall time $((SECONDS - T0)) s)"
if [ -n "$ONLY" ] && [ $((P + F + K)) -eq 0 ]; then
	echo "no test matched --only='$ONLY'"
	F=1
fi
echo "$P passed, $F failed, $K skipped"
[ "$F" -eq 0 ]
