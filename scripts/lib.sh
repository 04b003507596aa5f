# shellcheck shell=bash
# scripts/lib.sh -- shell functions shared by scripts/test.sh and scripts/demo.sh
#
# Sourced, not run.  The flow of both scripts:
#   1. as root: install missing Debian packages, then re-run the same script
#      as an unprivileged user (PostgreSQL refuses to run as root) in a copy
#      of the tree;  as a normal user: check the packages are there.
#   2. copy the tree into a scratch directory and build it there;
#   3. install PostgreSQL 15 + perpca into a PRIVATE directory (a copy of the
#      system installation plus `make install DESTDIR=...`), so no root and no
#      system-wide install of perpca is needed;
#   4. start a throwaway cluster from the private binaries, listening only on
#      a Unix socket in the scratch directory;
#   5. on exit, whatever happened: stop the cluster, keep the logs of a failed
#      run in log/, remove the scratch directory.

# The PostgreSQL major version: the machine's 15, or the one of the root
# filesystem a run is in (scripts/rootfs.sh sets PERPCA_PG_MAJOR there).
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
# Building Citus (scripts/citus.sh).
CITUS_BUILD_PACKAGES=(liblz4-dev libzstd-dev libkrb5-dev libselinux1-dev libxslt1-dev
	libpam0g-dev libreadline-dev libicu-dev "postgresql-server-dev-$PG_MAJOR" make gcc patch)
# Unprivileged OS user that runs the clusters when a script is started as root.
PERPCA_RUN_USER=${PERPCA_RUN_USER:-perpca}
# First port tried for a throwaway cluster.
PERPCA_PORT_BASE=${PERPCA_PORT_BASE:-55432}
# Where root keeps what is built once and reused (the ASan PostgreSQL, Citus,
# pgvector, the root filesystems of 17 and 18): PERPCA_CACHE_DIR, default
# /var/cache/perpca.  The per-item variables (PERPCA_ASAN_PREFIX,
# PERPCA_CITUS_CACHE, PERPCA_PGVECTOR_CACHE, PERPCA_ROOTFS_CACHE) still win.
PERPCA_CACHE_DIR=${PERPCA_CACHE_DIR:-/var/cache/perpca}
# As root, the folder is made readable by everyone: the tests run as an
# unprivileged user, who reads the builds in it (mktemp -d makes a 0700 one).
if [ "$(id -u)" -eq 0 ]; then mkdir -p "$PERPCA_CACHE_DIR" && chmod a+rx "$PERPCA_CACHE_DIR"; fi
# A lock file every user of the machine can open: around apt-get/dpkg runs of
# these scripts (they may run side by side) and around copies of the server's
# directories (which the package test installs into and removes from).
if [ -d /run/lock ] && [ -w /run/lock ]; then PERPCA_LOCK_DIR=/run/lock; else PERPCA_LOCK_DIR=/tmp; fi

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Third-party sources (the Citus and pgvector tarballs): PERPCA_VENDOR_DIR,
# default ../shared/vendor next to this checkout, else next to the main
# checkout of a git worktree (git worktree add), else next to the repository
# a clone was cloned from (git clone /path/to/perpca).  Exported, so that the
# copies of the tree that run as another user find the same folder.
vendor_candidates() {
	local common origin
	echo "$REPO_ROOT/../shared/vendor"
	common=$(git -C "$REPO_ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null) &&
		echo "$(dirname "$common")/../shared/vendor"
	origin=$(git -C "$REPO_ROOT" remote get-url origin 2>/dev/null) &&
		echo "${origin#file://}/../shared/vendor"
	return 0
}
if [ -z "${PERPCA_VENDOR_DIR:-}" ]; then
	PERPCA_VENDOR_DIR=$REPO_ROOT/../shared/vendor
	while read -r candidate; do
		if [ -d "$candidate" ]; then
			PERPCA_VENDOR_DIR=$(cd "$candidate" && pwd)
			break
		fi
	done < <(vendor_candidates)
	export PERPCA_VENDOR_DIR
fi

say() { printf '==> %s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# apt-get (as root) one at a time: the parts of a run go side by side, and
# apt-get fails at once on a held lock.
apt_get() {
	flock "$PERPCA_LOCK_DIR/perpca-apt.lock" apt-get -o DPkg::Lock::Timeout=600 "$@"
}

# Run CMD... with an exclusive (-x) or shared (-s) hold of the lock on the
# server's directories: the package test installs and removes its files there
# (exclusive) while a private installation copies them (shared).
with_pg_files_lock() {
	local mode=$1
	shift
	flock "$mode" "$PERPCA_LOCK_DIR/perpca-pg-files.lock" "$@"
}

# The packages among the arguments that are not installed, one per line.
missing_from() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null |
			grep -qx installed || echo "$p"
	done
}

# Packages from PERPCA_PACKAGES that are not installed, one per line.
missing_packages() { missing_from "${PERPCA_PACKAGES[@]}"; }

# Root: apt-get the missing packages.  Others: fail with the command to run.
ensure_packages() {
	command -v dpkg-query >/dev/null ||
		die "dpkg-query not found: these scripts expect Debian 12 (or a derivative)"
	local missing
	missing=$(missing_packages | tr '\n' ' ')
	missing=${missing% }
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -eq 0 ]; then
		say "installing missing packages: $missing"
		export DEBIAN_FRONTEND=noninteractive
		apt_get update -q || die "apt-get update failed"
		# shellcheck disable=SC2086
		apt_get install -y -q --no-install-recommends $missing ||
			die "apt-get install failed"
		missing=$(missing_packages | tr '\n' ' ')
		[ -z "${missing// /}" ] || die "still missing after apt-get: $missing"
	else
		die "missing Debian packages: $missing
  install them (as root) with:
    sudo apt-get install -y $missing
  or run this script as root, which installs them itself."
	fi
}

# Copy the source tree SRC to DST, without git data and build outputs.
copy_tree() {
	local src=$1 dst=$2
	mkdir -p "$dst"
	tar -C "$src" \
		--exclude=./.git --exclude=./results --exclude=./log \
		--exclude=./tmp_check --exclude=./tmp_install --exclude=./.build \
		--exclude=./regression.diffs --exclude=./regression.out \
		--exclude=./bench/out \
		--exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		-cf - . | tar -C "$dst" --no-same-owner -xf -
}

# As root: run scripts/SCRIPT as PERPCA_RUN_USER in a copy of the tree and
# return its status.  Logs of a failed run come back to $REPO_ROOT/log/.
# With KEEP=1 and success the copy is left in place (a cluster runs there).
run_unprivileged() {
	local script=$1 keep=$2
	shift 2
	if ! id -u "$PERPCA_RUN_USER" >/dev/null 2>&1; then
		say "creating system user $PERPCA_RUN_USER (PostgreSQL refuses to run as root)"
		useradd --system --user-group --create-home \
			--home-dir "/var/lib/$PERPCA_RUN_USER" --shell /bin/bash \
			"$PERPCA_RUN_USER" || die "useradd $PERPCA_RUN_USER failed"
	fi
	local stage
	stage=$(mktemp -d /tmp/perpca-root.XXXXXX)
	copy_tree "$REPO_ROOT" "$stage/repo"
	chown -R "$PERPCA_RUN_USER:" "$stage"
	chmod 755 "$stage"
	say "running scripts/$script as user $PERPCA_RUN_USER in $stage/repo"
	local home rc=0
	home=$(getent passwd "$PERPCA_RUN_USER" | cut -d: -f6)
	[ -d "$home" ] || home=$stage
	# A clean environment: only what the run needs, plus CI and PERPCA_* knobs.
	local -a pass=()
	local v
	for v in CI TERM PROVE_FLAGS PG_TEST_EXTRA PG_TEST_NOCLEAN $(compgen -e PERPCA_); do
		[ -n "${!v+x}" ] && pass+=("$v=${!v}")
	done
	(cd "$stage" && runuser -u "$PERPCA_RUN_USER" -- env -i \
		PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" USER="$PERPCA_RUN_USER" \
		LOGNAME="$PERPCA_RUN_USER" LANG=C.UTF-8 TMPDIR="$stage" \
		"${pass[@]}" PERPCA_REEXECED=1 \
		bash "$stage/repo/scripts/$script" "$@") || rc=$?
	# (save_logs already said where they end up)
	if [ -d "$stage/repo/log" ]; then
		mkdir -p "$REPO_ROOT/log"
		cp -a "$stage/repo/log/." "$REPO_ROOT/log/" && chown -R --reference="$REPO_ROOT" "$REPO_ROOT/log"
	fi
	if [ "$keep" = 1 ] && [ "$rc" -eq 0 ]; then
		say "kept $stage (remove it with: rm -rf $stage)"
	else
		rm -rf "$stage"
	fi
	return "$rc"
}

# As root: run_unprivileged, then exit with its status.
reexec_unprivileged() {
	local rc=0
	run_unprivileged "$@" || rc=$?
	exit "$rc"
}

# Step 1 for both scripts: packages, and drop root if needed.
prepare_user() {
	local script=$1 keep=$2
	shift 2
	if [ "$(id -u)" -eq 0 ]; then
		[ -n "${PERPCA_REEXECED:-}" ] && die "re-executed as root: refusing to loop"
		ensure_packages
		reexec_unprivileged "$script" "$keep" "$@"
	fi
	ensure_packages
}

# Create the scratch directory WORK (under $TMPDIR or /tmp).
make_work() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/perpca-$1.XXXXXX")
	BUILD=$WORK/src
	INST=$WORK/inst
	PGBIN=$INST$PG_SYS_LIB/bin
	PGDATA_DIR=$WORK/data
	SERVER_LOG=$WORK/server.log
	SOCK=$WORK/sock
	# Unix socket paths are limited to 107 bytes.
	if [ ${#SOCK} -gt 80 ]; then
		SOCK=$(mktemp -d /tmp/perpca-sock.XXXXXX)
	fi
	mkdir -p "$SOCK"
	chmod 700 "$SOCK"
}

# Build the copied tree.  Extra arguments go to make (e.g. PERPCA_CFLAGS=-Werror).
build_tree() {
	copy_tree "$REPO_ROOT" "$BUILD"
	say "building in $BUILD"
	make -C "$BUILD" -j"$(nproc)" "$@" >"$WORK/build.log" 2>&1 || {
		cat "$WORK/build.log"
		return 1
	}
	# Show warnings even when the build passed (only without -Werror).
	grep -E 'warning:' "$WORK/build.log" || true
}

# Private installation: copies of the system PostgreSQL directories (real
# copies: PostgreSQL finds share/ and lib/ relative to the real path of its
# binaries), with any perpca from the system removed, plus our build.
# Extra arguments go to make install (e.g. with_llvm=no, as for build_tree).
private_install() {
	say "private installation in $INST"
	mkdir -p "$INST$(dirname "$PG_SYS_LIB")" "$INST$(dirname "$PG_SYS_SHARE")"
	# (the package test may be installing or removing its files meanwhile)
	with_pg_files_lock -s cp -a "$PG_SYS_LIB" "$INST$(dirname "$PG_SYS_LIB")/" || return 1
	with_pg_files_lock -s cp -a "$PG_SYS_SHARE" "$INST$(dirname "$PG_SYS_SHARE")/" || return 1
	rm -rf "$INST$PG_SYS_SHARE"/extension/perpca.control \
		"$INST$PG_SYS_SHARE"/extension/perpca--* \
		"$INST$PG_SYS_LIB"/lib/perpca.so "$INST$PG_SYS_LIB"/lib/bitcode/perpca*
	make -C "$BUILD" install DESTDIR="$INST" "$@" >"$WORK/install.log" 2>&1 || {
		cat "$WORK/install.log"
		return 1
	}
	local share
	share=$("$PGBIN/pg_config" --sharedir)
	[ "$share" = "$INST$PG_SYS_SHARE" ] ||
		{ echo "private pg_config reports sharedir $share, expected $INST$PG_SYS_SHARE"; return 1; }
	[ -f "$share/extension/perpca.control" ] ||
		{ echo "perpca.control missing from the private installation"; return 1; }
}

# A port for a throwaway cluster.  The cluster listens only on a Unix socket
# in its own directory, so the port only names the socket; still, skip ports
# that something listens on over TCP, so a --keep'd demo never looks like
# another server.
pick_port() {
	local p=$PERPCA_PORT_BASE
	while [ "$p" -lt $((PERPCA_PORT_BASE + 200)) ]; do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
		p=$((p + 1))
	done
	echo "$PERPCA_PORT_BASE"
}

# initdb + start a cluster from the private binaries.  Sets PGHOST/PGPORT/PGUSER.
cluster_start() {
	PORT=$(pick_port)
	say "starting a throwaway cluster (port $PORT, socket in $SOCK)"
	"$PGBIN/initdb" -D "$PGDATA_DIR" -A trust -N --no-locale -E UTF8 \
		>"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log"; return 1; }
	cat >>"$PGDATA_DIR/postgresql.conf" <<-EOF

		# added by scripts/lib.sh: a private throwaway cluster
		listen_addresses = ''
		port = $PORT
		unix_socket_directories = '$SOCK'
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		log_min_messages = warning
		log_line_prefix = '%m [%p] %q%a '
	EOF
	# Optional per-project settings for test/demo clusters.
	if [ -f "$BUILD/test/cluster.conf" ]; then
		cat "$BUILD/test/cluster.conf" >>"$PGDATA_DIR/postgresql.conf"
	fi
	OPENBLAS_NUM_THREADS=1 "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$SERVER_LOG" -w \
		-t 120 start >"$WORK/pg_ctl.log" 2>&1 ||
		{ cat "$WORK/pg_ctl.log"; tail -n 50 "$SERVER_LOG" 2>/dev/null; return 1; }
	PGHOST=$SOCK PGPORT=$PORT PGUSER=$(id -un) PGDATABASE=postgres
	export PGHOST PGPORT PGUSER PGDATABASE
	# The server must be the private one and must see our perpca.
	local check
	check=$("$PGBIN/psql" -X -A -t -v ON_ERROR_STOP=1 -c \
		"SELECT (SELECT setting FROM pg_config WHERE name = 'SHAREDIR') || ' ' ||
		        (SELECT count(*) FROM pg_available_extensions WHERE name = 'perpca')") ||
		return 1
	[ "$check" = "$INST$PG_SYS_SHARE 1" ] ||
		{ echo "the cluster does not use the private installation: $check"; return 1; }
}

cluster_stop() {
	if [ -n "${PGDATA_DIR:-}" ] && [ -f "$PGDATA_DIR/postmaster.pid" ]; then
		"$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 60 stop >/dev/null 2>&1 ||
			"$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1 || true
	fi
}

# Keep what helps to understand a failure in $REPO_ROOT/log/NAME/.
save_logs() {
	local dest=$REPO_ROOT/log/$1
	rm -rf "$dest"
	mkdir -p "$dest" || return 0
	local f
	for f in "$WORK"/*.log "$BUILD"/regression.diffs "$BUILD"/regression.out; do
		[ -f "$f" ] && cp "$f" "$dest/"
	done
	[ -d "$BUILD/results" ] && cp -a "$BUILD/results" "$dest/"
	[ -d "$BUILD/tmp_check/log" ] && cp -a "$BUILD/tmp_check/log" "$dest/tap"
	if [ -n "${PERPCA_REEXECED:-}" ]; then
		echo "logs of this run kept in log/$1/ of the checkout the script was started from"
	else
		echo "logs of this run kept in $dest"
	fi
}

# EXIT trap: stop the cluster, keep logs when RC != 0, remove the scratch dir.
# KEEP_CLUSTER=1 leaves cluster and scratch directory alone.
finish() {
	local rc=$1 name=$2
	if [ "${KEEP_CLUSTER:-0}" = 1 ] && [ "$rc" -eq 0 ]; then
		return
	fi
	cluster_stop
	if [ "$rc" -ne 0 ] && [ -n "${WORK:-}" ] && [ -d "$WORK" ]; then
		save_logs "$name"
	fi
	[ -n "${WORK:-}" ] && rm -rf "$WORK"
	case "${SOCK:-}" in /tmp/perpca-sock.*) rm -rf "$SOCK" ;; esac
}

# Citus for the Citus TAP test (scripts/citus.sh): unless done already, build it
# (cached) and export PERPCA_CITUS_BUILD (its directory), or PERPCA_CITUS_SKIP
# (why the test skips: no source, ...) or PERPCA_CITUS_FAILED (the build failed:
# the test fails).
citus_prepare() {
	[ -n "${PERPCA_CITUS_BUILD:-}${PERPCA_CITUS_SKIP:-}${PERPCA_CITUS_FAILED:-}" ] && return 0
	local out rc=0
	out=$(bash "$REPO_ROOT/scripts/citus.sh" build) || rc=$?
	if [ "$rc" -eq 0 ]; then
		export PERPCA_CITUS_BUILD=$out
		say "Citus build: $out"
	elif [ "$rc" -eq 3 ]; then
		export PERPCA_CITUS_SKIP=${out#skip: }
		say "Citus test will skip: $PERPCA_CITUS_SKIP"
	else
		export PERPCA_CITUS_FAILED="scripts/citus.sh build failed (exit $rc)"
		warn "$PERPCA_CITUS_FAILED"
	fi
}

# Copy the Citus build (if any) into the private installation INST.
citus_install() {
	[ -n "${PERPCA_CITUS_BUILD:-}" ] || return 0
	if ! bash "$REPO_ROOT/scripts/citus.sh" install "$PERPCA_CITUS_BUILD" "$1"; then
		export PERPCA_CITUS_FAILED="could not install $PERPCA_CITUS_BUILD into $1"
		warn "$PERPCA_CITUS_FAILED"
	fi
}

# The Citus source tarball (newest citus-VERSION.tar.gz in $PERPCA_CITUS_SOURCE,
# a directory or the tarball, else in PERPCA_VENDOR_DIR), or nothing.
citus_tarball() {
	local src=${PERPCA_CITUS_SOURCE:-$PERPCA_VENDOR_DIR}
	if [ -f "$src" ]; then
		echo "$src"
	elif [ -d "$src" ]; then
		find "$src" -maxdepth 1 -name 'citus-[0-9]*.tar.gz' | sort -V | tail -n 1
	fi
}

# The PostgreSQL major versions the Citus source TARBALL builds against, as its
# configure script checks them ("15 16 17").
citus_pg_versions() {
	tar -xzOf "$1" --wildcards '*/configure' 2>/dev/null |
		grep -o '"$version_num" != '"'"'[0-9]*'"'" | grep -o '[0-9]*' | sort -n | tr '\n' ' ' | sed 's/ $//'
}

# True if there is a Citus source and it supports PostgreSQL major version N.
citus_supports() {
	local tarball
	tarball=$(citus_tarball)
	[ -n "$tarball" ] || return 1
	[[ " $(citus_pg_versions "$tarball") " == *" $1 "* ]]
}

# pg_regress output on stdin: the number of tests that passed, and the names
# of those that failed (one a line).  PostgreSQL 15 prints "test name ... ok"
# (" name ... ok" inside a parallel group), 16 and later TAP-like lines
# ("ok 1  - name  12 ms", "not ok 2  + name").
regress_passed() {
	grep -cE '^(test +| +)[^ ]+ +\.\.\. ok|^ok [0-9]+ +[-+] ' || true
}
regress_failed() {
	sed -nE 's/^(test +| +)([^ ]+) +\.\.\. (FAILED|failed).*/\2/p; s/^not ok [0-9]+ +[-+] +([^ ]+).*/\1/p'
}

# "N passed, M failed[, K skipped]" from the last such line of FILE, as
# "N M K"; nothing if none.
counts_of() {
	grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$1" | tail -n 1 |
		sed -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1 \2 0/; s/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/'
}

# pgvector for the perpca_vector tests (scripts/pgvector.sh): unless done already,
# find it in the server's installation or build it (cached), and export
# PERPCA_PGVECTOR_BUILD ("system" or the build's directory), or
# PERPCA_PGVECTOR_SKIP (why the tests skip) or PERPCA_PGVECTOR_FAILED (the build
# failed: the tests fail).
pgvector_prepare() {
	[ -n "${PERPCA_PGVECTOR_BUILD:-}${PERPCA_PGVECTOR_SKIP:-}${PERPCA_PGVECTOR_FAILED:-}" ] && return 0
	local out rc=0
	out=$(bash "$REPO_ROOT/scripts/pgvector.sh" build) || rc=$?
	if [ "$rc" -eq 0 ]; then
		export PERPCA_PGVECTOR_BUILD=$out
		say "pgvector: $out"
	elif [ "$rc" -eq 3 ]; then
		export PERPCA_PGVECTOR_SKIP=${out#skip: }
		say "pgvector tests will skip: $PERPCA_PGVECTOR_SKIP"
	else
		export PERPCA_PGVECTOR_FAILED="scripts/pgvector.sh build failed (exit $rc)"
		warn "$PERPCA_PGVECTOR_FAILED"
	fi
}

# Copy the pgvector build (if any) into the private installation INST.
pgvector_install() {
	[ -n "${PERPCA_PGVECTOR_BUILD:-}" ] || return 0
	if ! bash "$REPO_ROOT/scripts/pgvector.sh" install "$PERPCA_PGVECTOR_BUILD" "$1"; then
		export PERPCA_PGVECTOR_FAILED="could not install $PERPCA_PGVECTOR_BUILD into $1"
		warn "$PERPCA_PGVECTOR_FAILED"
	fi
}
