# shellcheck shell=bash
# scripts/lib.sh -- what the scripts share (sourced, not run): messages, Debian
# packages, running as the unprivileged user, a private installation of
# PostgreSQL with perpca, throwaway clusters, results as TAP lines.

# The PostgreSQL major version: the machine's 15, or the one of the root
# filesystem a run is in (scripts/prepare.sh enter sets PERPCA_PG_MAJOR).
PG_MAJOR=${PERPCA_PG_MAJOR:-15}
PG_SYS_LIB=/usr/lib/postgresql/$PG_MAJOR
PG_SYS_SHARE=/usr/share/postgresql/$PG_MAJOR
PERPCA_PACKAGES=("postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"
	"postgresql-$PG_MAJOR-cron" libopenblas-dev liblapacke-dev libipc-run-perl
	python3-numpy make gcc libc6-dev perl)
# The From Python page's test (test/t/096_python.pl) on this machine's version.
[ -n "${PERPCA_IN_ROOTFS:-}" ] || PERPCA_PACKAGES+=(python3-psycopg python3-psycopg2)
# Building the Debian package (scripts/package.sh, debian/).
PERPCA_DEB_BUILD_PACKAGES=(build-essential dpkg-dev debhelper postgresql-server-dev-all fakeroot)
# The user that runs the clusters when a script starts as root (PostgreSQL
# refuses to run as root); the first port tried for a cluster; the cache of
# what is built once (scripts/prepare.sh).
PERPCA_RUN_USER=${PERPCA_RUN_USER:-perpca}
PERPCA_PORT_BASE=${PERPCA_PORT_BASE:-55432}
PERPCA_CACHE_DIR=${PERPCA_CACHE_DIR:-/var/cache/perpca}
# Locks every user can open: apt-get/dpkg one at a time, and the server's
# directories while the package test installs into them.
if [ -d /run/lock ] && [ -w /run/lock ]; then LOCKS=/run/lock; else LOCKS=/tmp; fi
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Third-party sources (the Citus and pgvector tarballs): PERPCA_VENDOR_DIR, by
# default ../shared/vendor next to this tree, or next to the main checkout of
# its git worktree, or of the repository (or worktree) it was cloned from.
if [ -z "${PERPCA_VENDOR_DIR:-}" ]; then
	origin=$(git -C "$REPO_ROOT" remote get-url origin 2>/dev/null || true)
	origin=${origin#file://}
	for top in "$REPO_ROOT" "$(git -C "$REPO_ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/.." \
		"$origin" "$(git -C "${origin:-/nonexistent}" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/.."; do
		[ -d "$top/../shared/vendor" ] && { PERPCA_VENDOR_DIR=$(cd "$top/../shared/vendor" && pwd); break; }
	done
	export PERPCA_VENDOR_DIR=${PERPCA_VENDOR_DIR:-$REPO_ROOT/../shared/vendor}
fi

say() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
skip() { echo "skip: $*"; exit 3; }
# The script's opening comment, without its first line.
usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; }

apt_get() { flock "$LOCKS/perpca-apt.lock" apt-get -o DPkg::Lock::Timeout=600 "$@"; }

# The packages among the arguments that are not installed, one per line.
missing_from() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed || echo "$p"
	done
}

# Root: apt-get the missing packages of the suite.  Others: fail with the command.
ensure_packages() {
	local missing
	command -v dpkg-query >/dev/null || die "dpkg-query not found: these scripts expect Debian 12 (or a derivative)"
	missing=$(missing_from "${PERPCA_PACKAGES[@]}" "$@" | tr '\n' ' ')
	[ -n "${missing// /}" ] || return 0
	[ "$(id -u)" -eq 0 ] || die "missing Debian packages: $missing
  install them (as root) with:  sudo apt-get install -y $missing
  or run this script as root, which installs them itself."
	say "installing missing packages: $missing"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt_get update -q >&2 &&
		DEBIAN_FRONTEND=noninteractive apt_get install -y -q --no-install-recommends $missing >&2 ||
		die "apt-get install $missing failed"
}

# Copy the source tree SRC to DST, without git data and build outputs.
copy_tree() {
	mkdir -p "$2"
	tar -C "$1" --exclude=./.git --exclude=./results --exclude=./log --exclude=./tmp_check \
		--exclude=./regression.diffs --exclude=./regression.out --exclude=./bench/out \
		--exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . | tar -C "$2" --no-same-owner -xf -
}

# As root: run scripts/SCRIPT ARGS... as PERPCA_RUN_USER in a copy of the tree,
# with a clean environment (CI, TERM and the PERPCA_* settings pass); logs of a
# failed run come back to log/.  With KEEP=1 and success the copy stays.
as_user() {
	local script=$1 keep=$2 stage home rc=0 v
	shift 2
	id -u "$PERPCA_RUN_USER" >/dev/null 2>&1 ||
		useradd --system --user-group --create-home --home-dir "/var/lib/$PERPCA_RUN_USER" \
			--shell /bin/bash "$PERPCA_RUN_USER" || id -u "$PERPCA_RUN_USER" >/dev/null ||
		die "useradd $PERPCA_RUN_USER failed"
	stage=$(mktemp -d /tmp/perpca-root.XXXXXX)
	copy_tree "$REPO_ROOT" "$stage/repo"
	chown -R "$PERPCA_RUN_USER:" "$stage"
	chmod 755 "$stage"
	home=$(getent passwd "$PERPCA_RUN_USER" | cut -d: -f6)
	local -a pass=()
	for v in CI TERM $(compgen -e PERPCA_); do [ -n "${!v+x}" ] && pass+=("$v=${!v}"); done
	say "running scripts/$script as user $PERPCA_RUN_USER in $stage/repo"
	(cd "$stage" && runuser -u "$PERPCA_RUN_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
		HOME="${home:-$stage}" USER="$PERPCA_RUN_USER" LOGNAME="$PERPCA_RUN_USER" LANG=C.UTF-8 \
		TMPDIR="$stage" "${pass[@]}" PERPCA_STAGE="$stage" bash "$stage/repo/scripts/$script" "$@") || rc=$?
	if [ -d "$stage/repo/log" ]; then
		mkdir -p "$REPO_ROOT/log" && cp -a "$stage/repo/log/." "$REPO_ROOT/log/"
		chown -R --reference="$REPO_ROOT" "$REPO_ROOT/log"
	fi
	if [ "$keep" = 1 ] && [ "$rc" -eq 0 ]; then say "kept $stage (remove it with: rm -rf $stage)"; else rm -rf "$stage"; fi
	return "$rc"
}

# The scratch directory WORK of a run NAME, and the paths in it.
make_work() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/perpca-$1.XXXXXX")
	BUILD=$WORK/src INST=$WORK/inst PGDATA_DIR=$WORK/data SERVER_LOG=$WORK/server.log SOCK=$WORK/sock
	PGBIN=$INST$PG_SYS_LIB/bin
	# (Unix socket paths are limited to 107 bytes)
	[ ${#SOCK} -le 80 ] || SOCK=$(mktemp -d /tmp/perpca-sock.XXXXXX)
	mkdir -p "$SOCK" && chmod 700 "$SOCK"
}

# Build a copy of the tree in BUILD; arguments go to make.
build_tree() {
	copy_tree "$REPO_ROOT" "$BUILD"
	say "building in $BUILD"
	make -C "$BUILD" -j"$(nproc)" "$@" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; return 1; }
	grep -E 'warning:' "$WORK/build.log" >&2 || true
}

# A private installation in INST: real copies of the system's PostgreSQL
# directories (PostgreSQL finds its files relative to its binaries), without
# any perpca of the system, plus this build (make install arguments: "$@").
private_install() {
	say "private installation in $INST"
	mkdir -p "$INST$(dirname "$PG_SYS_LIB")" "$INST$(dirname "$PG_SYS_SHARE")"
	flock -s "$LOCKS/perpca-pg-files.lock" sh -c 'cp -a "$1" "$3$(dirname "$1")/" && cp -a "$2" "$3$(dirname "$2")/"' \
		x "$PG_SYS_LIB" "$PG_SYS_SHARE" "$INST" || return 1
	rm -rf "$INST$PG_SYS_SHARE"/extension/perpca.control "$INST$PG_SYS_SHARE"/extension/perpca--* \
		"$INST$PG_SYS_LIB"/lib/perpca.so "$INST$PG_SYS_LIB"/lib/bitcode/perpca*
	make -C "$BUILD" install DESTDIR="$INST" "$@" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; return 1; }
	[ "$("$PGBIN/pg_config" --sharedir)" = "$INST$PG_SYS_SHARE" ] ||
		{ warn "the private pg_config does not report $INST$PG_SYS_SHARE"; return 1; }
}

# A port for a throwaway cluster: it listens only on a Unix socket, so the
# port only names the socket; still, skip ports something listens on.
pick_port() {
	local p=$PERPCA_PORT_BASE
	while [ "$p" -lt $((PERPCA_PORT_BASE + 200)) ] && (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

# initdb and start a cluster from the binaries in PGBIN; export PGHOST and co.
cluster_start() {
	local port
	port=$(pick_port)
	say "starting a throwaway cluster (port $port, socket in $SOCK)"
	"$PGBIN/initdb" -D "$PGDATA_DIR" -A trust -N --no-locale -E UTF8 >"$WORK/initdb.log" 2>&1 ||
		{ cat "$WORK/initdb.log" >&2; return 1; }
	cat >>"$PGDATA_DIR/postgresql.conf" <<-EOF
		listen_addresses = ''
		port = $port
		unix_socket_directories = '$SOCK'
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		log_min_messages = warning
		log_line_prefix = '%m [%p] %q%a '
	EOF
	if [ -f "$BUILD/test/cluster.conf" ]; then cat "$BUILD/test/cluster.conf" >>"$PGDATA_DIR/postgresql.conf"; fi
	OPENBLAS_NUM_THREADS=1 "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$SERVER_LOG" -w -t 300 start >"$WORK/pg_ctl.log" 2>&1 ||
		{ cat "$WORK/pg_ctl.log" >&2; tail -n 50 "$SERVER_LOG" >&2; return 1; }
	export PGHOST=$SOCK PGPORT=$port PGUSER=$(id -un) PGDATABASE=postgres
}

cluster_stop() {
	[ -f "${PGDATA_DIR:-/nonexistent}/postmaster.pid" ] || return 0
	"$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 60 stop >/dev/null 2>&1 ||
		"$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1 || true
}

# EXIT trap of a run NAME with status RC: stop the cluster, keep what explains
# a failure in log/NAME/, remove the scratch directory (KEEP_CLUSTER=1 and
# success: leave both).
finish() {
	local rc=$1 name=$2 f
	[ "${KEEP_CLUSTER:-0}" = 1 ] && [ "$rc" -eq 0 ] && return
	cluster_stop
	if [ "$rc" -ne 0 ] && [ -d "${WORK:-}" ]; then
		rm -rf "$REPO_ROOT/log/$name" && mkdir -p "$REPO_ROOT/log/$name"
		for f in "$WORK"/*.log "$BUILD"/regression.diffs "$BUILD"/regression.out; do
			[ -f "$f" ] && cp "$f" "$REPO_ROOT/log/$name/"
		done
		[ -d "$BUILD/results" ] && cp -a "$BUILD/results" "$REPO_ROOT/log/$name/"
		[ -d "$BUILD/tmp_check/log" ] && cp -a "$BUILD/tmp_check/log" "$REPO_ROOT/log/$name/tap"
		say "logs of this run kept in log/$name/"
	fi
	[ -n "${WORK:-}" ] && rm -rf "$WORK"
	case "${SOCK:-}" in /tmp/perpca-sock.*) rm -rf "$SOCK" ;; esac
}

# pg_regress output on stdin as TAP lines, one per test, named PREFIXNAME.
# 15 prints "test NAME ... ok" (" NAME ... ok" inside a parallel group), 16
# and later "ok 1 - NAME  12 ms" or "not ok 2 + NAME".
regress_tap() {
	local p=${1:-}
	sed -nE "s/^(test +| +)([^ ]+) +\.\.\. ok.*/ok - $p\2/p; s/^ok [0-9]+ +[-+] +([^ ]+).*/ok - $p\1/p
		s/^(test +| +)([^ ]+) +\.\.\. (FAILED|failed).*/not ok - $p\2/p; s/^not ok [0-9]+ +[-+] +([^ ]+).*/not ok - $p\1/p"
}
