#!/usr/bin/env bash
# scripts/prepare.sh -- make a PostgreSQL version's environment ready: what
# scripts/test.sh needs before the suite runs, built once and cached.
#
#   prepare.sh packages        the Debian packages of the suite (root installs them;
#                              anyone else gets the apt-get command)
#   prepare.sh extras          Citus and pgvector for this machine's server, built
#                              once; prints VAR=VALUE lines for suite.sh:
#                              PERPCA_CITUS_BUILD (a DESTDIR tree), or
#                              PERPCA_CITUS_SKIP (why the Citus test skips), or
#                              PERPCA_CITUS_FAILED (the build failed: the test fails);
#                              the same for PERPCA_PGVECTOR_* ("system" when the
#                              server's installation has pgvector)
#   prepare.sh asan            PostgreSQL 15 built with AddressSanitizer and
#                              assertions, its palloc'd memory poisoned as ASan
#                              sees it (ASAN_PATCH), only the parts the sanitizer
#                              run uses (built once, as root); prints its directory
#   prepare.sh rootfs N        (root) the Debian root filesystem of PostgreSQL N:
#                              17 from trixie, 18 from sid (Debian 12 has only 15, and
#                              newer releases' binaries need a newer C library), made
#                              once with debootstrap, updated, Citus built inside;
#                              prints the VAR=VALUE lines of `extras` inside it
#   prepare.sh enter N -- CMD  (root) run CMD in a throwaway copy of it (/usr hard
#                              linked), in its own mount and PID namespaces, with this
#                              tree at /work/repo and the vendor sources at
#                              /work/shared/vendor
#
# The cache is PERPCA_CACHE_DIR (default /var/cache/perpca); a normal user who
# cannot write there builds into ~/.cache/perpca.  Citus and pgvector come from
# the tarballs in PERPCA_VENDOR_DIR (scripts/lib.sh).  What cannot be had here
# prints "skip: REASON" and exits 3.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CITUS_BUILD_PACKAGES=(liblz4-dev libzstd-dev libkrb5-dev libselinux1-dev libxslt1-dev
	libpam0g-dev libreadline-dev libicu-dev make gcc patch)
ASAN_BUILD_PACKAGES=(bison flex libreadline-dev zlib1g-dev pkg-config libipc-run-perl)

# ---- the cache ----------------------------------------------------------------
# The directory of the finished build NAME (marked by .NAME-built... see
# cached_build), looked for in the cache and in the user's; none: status 1.
find_cached() {
	local d
	for d in "$PERPCA_CACHE_DIR/$1" "${XDG_CACHE_HOME:-$HOME/.cache}/perpca/$1"; do
		[ -f "$d/.$2-built" ] && { echo "$d"; return 0; }
	done
	return 1
}
writable_cache() {
	if mkdir -p "$PERPCA_CACHE_DIR" 2>/dev/null && [ -w "$PERPCA_CACHE_DIR" ]; then
		echo "$PERPCA_CACHE_DIR"
	else
		mkdir -p "${XDG_CACHE_HOME:-$HOME/.cache}/perpca" && echo "${XDG_CACHE_HOME:-$HOME/.cache}/perpca"
	fi
}
pg_minor() { pg_config --version | awk '{print $2}'; }

# build_once KIND NAME CMD...: unless cached, run CMD... DEST (DEST: a fresh
# directory) under a lock, then mark it built and move it to NAME in the
# cache in one rename; print the directory.
build_once() {
	local kind=$1 name=$2 out tmp
	shift 2
	find_cached "$name" "$kind" && return 0
	out=$(writable_cache)/$name
	exec 9>"$out.lock"
	flock 9
	if [ ! -f "$out/.$kind-built" ]; then
		tmp=$(mktemp -d "$out.tmp.XXXXXX")
		"$@" "$tmp" || { rm -rf "$tmp"; return 1; }
		touch "$tmp/.$kind-built"
		chmod -R a+rX "$tmp"
		rm -rf "$out"
		mv "$tmp" "$out"
	fi
	flock -u 9
	echo "$out"
}

# compile TARBALL LOG CMD: unpack TARBALL, run CMD (a shell string, with $dest)
# in its top directory, output to LOG; show its end if it fails.
compile() {
	local tarball=$1 cmd=$2 dest=$3 src t0=$SECONDS
	src=$(mktemp -d "${TMPDIR:-/tmp}/perpca-src.XXXXXX")
	tar -xf "$tarball" -C "$src"
	say "building $(basename "$tarball") (log: $src/build.log)" >&2
	if ! (cd "$src"/*/ && dest=$dest bash -ec "$cmd") >"$src/build.log" 2>&1; then
		tail -n 60 "$src/build.log" >&2
		warn "the build of $(basename "$tarball") failed (kept $src)"
		return 1
	fi
	say "time: $(basename "$tarball") built for PostgreSQL $(pg_minor): $((SECONDS - t0)) s" >&2
	rm -rf "$src"
}

# ---- Citus and pgvector ----------------------------------------------------------
newest() { find "$PERPCA_VENDOR_DIR" -maxdepth 1 -name "$1" 2>/dev/null | sort -V | tail -n 1; }

# The PostgreSQL major versions the Citus source TARBALL supports ("15 16 17 "),
# as its configure script checks them.
citus_majors() {
	[ -f "$1" ] && tar -xzOf "$1" --wildcards '*/configure' | grep -o "\"\$version_num\" != '[0-9]*'" |
		tr -dc '0-9\n' | sort -n | tr '\n' ' '
}

# "skip: ..." or the Citus build's directory.
citus() {
	local tarball ver major supported missing
	tarball=$(newest 'citus-[0-9]*.tar.gz')
	[ -n "$tarball" ] || { echo "skip: no citus-VERSION.tar.gz in $PERPCA_VENDOR_DIR"; return 3; }
	ver=$(basename "$tarball" .tar.gz)
	ver=${ver#citus-}
	major=$(pg_minor)
	major=${major%%.*}
	supported=$(citus_majors "$tarball")
	[[ " $supported" == *" $major "* ]] ||
		{ echo "skip: Citus $ver supports PostgreSQL ${supported% }, not $major"; return 3; }
	missing=$(missing_from "${CITUS_BUILD_PACKAGES[@]}")
	if [ -n "$missing" ] && ! find_cached "citus-$ver-pg$(pg_minor)" citus >/dev/null; then
		[ "$(id -u)" -eq 0 ] || { echo "skip: Citus build packages missing:" $missing; return 3; }
		# shellcheck disable=SC2086
		apt_get install -y -q --no-install-recommends $missing >&2
	fi
	# The patch next to the tarball is for headers that declare have_createdb_privilege.
	local patch=
	grep -rq have_createdb_privilege "$(pg_config --includedir-server)" && patch=$(newest "citus-$ver-pg*.patch")
	build_once citus "citus-$ver-pg$(pg_minor)" compile "$tarball" \
		"${patch:+patch -p1 -s <$patch && }./configure --without-libcurl && make -j$(nproc) with_llvm=no && make install with_llvm=no DESTDIR=\$dest"
}

# "system" (the server has pgvector), "skip: ..." or the build's directory.
pgvector() {
	local tarball ver
	if [ -f "$(pg_config --sharedir)/extension/vector.control" ]; then echo system; return; fi
	tarball=$(newest 'pgvector[_-][0-9]*.tar.gz')
	[ -n "$tarball" ] || { echo "skip: no pgvector in $(pg_config --sharedir)/extension and no pgvector_VERSION.orig.tar.gz in $PERPCA_VENDOR_DIR"; return 3; }
	ver=$(basename "$tarball" | sed -E 's/^pgvector[_-]//; s/(\.orig)?\.tar\.gz$//')
	# OPTFLAGS="": no -march=native, so the cached build runs on any x86-64.
	build_once pgvector "pgvector-$ver-pg$(pg_minor)" compile "$tarball" \
		"make -j$(nproc) OPTFLAGS= && make install OPTFLAGS= DESTDIR=\$dest"
}

# One VAR=VALUE line for suite.sh from a builder (citus or pgvector).
extra_line() {
	local var=$1 out rc=0
	out=$("$2") || rc=$?
	case "$rc" in
		0) echo "PERPCA_${var}_BUILD=$out" ;;
		3) echo "PERPCA_${var}_SKIP=${out#skip: }" ;;
		*) echo "PERPCA_${var}_FAILED=the $2 build failed (exit $rc)" ;;
	esac
}

cmd_extras() {
	extra_line CITUS citus
	extra_line PGVECTOR pgvector
}

# ---- the ASan PostgreSQL ---------------------------------------------------------
# Only the parts the sanitizer run uses: the server and what initdb loads,
# libpq, the programs the tests call (initdb, pg_ctl, psql, pg_dump and
# pg_restore, pgbench, pg_basebackup, pg_config), plpgsql, streaming
# replication, the headers and makefiles PGXS builds perpca with, pg_regress,
# the isolation tester, the TAP modules and contrib's postgres_fdw.  Not
# built: ecpg, the other programs and contrib modules, the other languages.
ASAN_PARTS="config src/common src/port src/timezone src/backend src/backend/utils/mb/conversion_procs
	src/backend/snowball src/include src/interfaces/libpq src/backend/replication/libpqwalreceiver
	src/fe_utils src/bin/initdb src/bin/pg_ctl src/bin/psql src/bin/pg_dump src/bin/pgbench
	src/bin/pg_basebackup src/bin/pg_config src/pl/plpgsql src/makefiles src/test/regress
	src/test/isolation src/test/perl contrib/postgres_fdw"
# Palloc'd memory as AddressSanitizer sees it (as in TimescaleDB's sanitizer
# builds): memdebug.h's Valgrind client requests, which the memory contexts
# make around every chunk, poison and unpoison under ASan; and each AllocSet
# request gets a poisoned redzone of at least 16 bytes past its end, so that a
# write one element past a palloc'd array is reported whatever its size
# (cassert's sentinel byte only catches a write into a chunk's unused tail,
# which a power-of-2 request does not have).
ASAN_PATCH=$REPO_ROOT/scripts/pg15-asan-memory-contexts.patch
# shellcheck disable=SC2016 # (expanded by eval)
ASAN_MAKE='for p in $ASAN_PARTS; do make -j"$(nproc)" -C "$p" install || exit 1; done && make -C src install-local'
asan_compile() {
	local dest=$1 t0=$SECONDS work v got=
	work=$(mktemp -d "${TMPDIR:-/tmp}/perpca-asan.XXXXXX")
	# The installed server's version first, then any other the archive has.
	for v in $( (dpkg-query -W -f '${Version}\n' "postgresql-$PG_MAJOR"; apt-cache showsrc "postgresql-$PG_MAJOR" |
		sed -n 's/^Version: //p') | awk 'NF && !seen[$0]++'); do
		(cd "$work" && apt_get source -qq --download-only "postgresql-$PG_MAJOR=$v") >/dev/null 2>&1 && { got=$v; break; }
	done
	[ -n "$got" ] || { warn "no postgresql-$PG_MAJOR source package could be downloaded"; return 1; }
	tar -xjf "$work"/postgresql-*.orig.tar.bz2 -C "$work"
	say "building PostgreSQL $got with ASan into $dest (log: $work/build.log)" >&2
	if ! (cd "$work"/postgresql-*/ && export ASAN_OPTIONS=detect_leaks=0 &&
		patch -p1 <"$ASAN_PATCH" &&
		./configure --prefix="$dest" --disable-rpath --enable-cassert --enable-debug --enable-tap-tests --without-icu \
			CFLAGS="-O1 -g -fsanitize=address -fno-omit-frame-pointer" LDFLAGS="-fsanitize=address" &&
		eval "$ASAN_MAKE") >"$work/build.log" 2>&1; then
		tail -n 60 "$work/build.log" >&2
		return 1
	fi
	# pg_cron is not part of PostgreSQL: Debian's build of the same major version.
	if [ -f "$PG_SYS_LIB/lib/pg_cron.so" ]; then
		cp "$PG_SYS_LIB/lib/pg_cron.so" "$(ASAN_OPTIONS=detect_leaks=0 "$dest/bin/pg_config" --pkglibdir)/"
		cp "$PG_SYS_SHARE"/extension/pg_cron* "$(ASAN_OPTIONS=detect_leaks=0 "$dest/bin/pg_config" --sharedir)/extension/"
	fi
	rm -rf "$work"
	say "time: ASan PostgreSQL $got build: $((SECONDS - t0)) s" >&2
}
cmd_asan() {
	# (named after the build's recipe: asan3 builds only ASAN_PARTS, with
	# ASAN_PATCH; a change to either needs a new name, so that caches rebuild)
	local name=pg15-asan3
	find_cached "$name" asan && return 0
	[ "$(id -u)" -eq 0 ] || skip "no ASan PostgreSQL in $PERPCA_CACHE_DIR/$name: build it once as root with: sudo bash scripts/prepare.sh asan"
	# apt-get source needs the deb-src lines.
	local src=/etc/apt/sources.list.d/debian.sources
	[ -f $src ] && ! grep -q deb-src $src && sed -i 's/^Types: deb$/Types: deb deb-src/' $src && apt_get update -qq
	# shellcheck disable=SC2046
	apt_get install -y -qq $(missing_from "${ASAN_BUILD_PACKAGES[@]}") >&2
	build_once asan "$name" asan_compile
}

# ---- the root filesystems of 17 and 18 --------------------------------------------
suite_for() { case "$1" in 17) echo trixie ;; 18) echo sid ;; *) die "no root filesystem for PostgreSQL $1 (17 or 18)" ;; esac; }
rootfs_dir() { echo "$PERPCA_CACHE_DIR/rootfs-$1"; }
need_root() {
	[ "$(id -u)" -eq 0 ] || skip "PostgreSQL $1 runs in a Debian root filesystem, which only root can make and enter: run scripts/test.sh as root for it"
	command -v debootstrap >/dev/null || apt_get install -y -q --no-install-recommends debootstrap >&2 ||
		skip "debootstrap is not installed and apt-get could not install it"
}

# Run CMD with root directory DIR in new mount and PID namespaces: /proc and
# /dev (bound from the host) mounted there vanish with them.
in_root() {
	local dir=$1
	shift
	unshare --mount --propagation private --pid --fork --kill-child /bin/bash -c '
		set -e
		dir=$1; shift
		mount -t proc proc "$dir/proc"
		mount --rbind /dev "$dir/dev"
		mount -t tmpfs tmpfs "$dir/dev/shm"
		exec chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"' in_root "$dir" "$@"
}

# The packages of the root filesystem of N: the suite's, packaging, pgvector,
# and Citus' build packages where the Citus source supports N.
rootfs_packages() {
	(PERPCA_PG_MAJOR=$1 && . "$REPO_ROOT/scripts/lib.sh" &&
		printf '%s\n' "${PERPCA_PACKAGES[@]}" "${PERPCA_DEB_BUILD_PACKAGES[@]}" "postgresql-$1-pgvector" procps &&
		if [[ " $(citus_majors "$(newest 'citus-[0-9]*.tar.gz')")" == *" $1 "* ]]; then
			printf '%s\n' "${CITUS_BUILD_PACKAGES[@]}"
		fi) | sort -u
}
install_into() {
	local dir=$1 missing
	shift
	missing=$(in_root "$dir" /bin/bash -c 'for p; do dpkg-query -W -f="\${db:Status-Status}\n" "$p" 2>/dev/null |
		grep -qx installed || echo "$p"; done' x "$@" | tr '\n' ' ')
	[ -n "${missing// /}" ] || return 0
	say "installing into $(basename "$dir"): $missing" >&2
	in_root "$dir" /bin/bash -c "apt-get update -q && apt-get install -y -q --no-install-recommends $missing && apt-get clean && rm -rf /var/lib/apt/lists/*"
}

# debootstrap the root filesystem of N (the mirror: the host's, or PERPCA_DEBIAN_MIRROR).
create_rootfs() {
	local n=$1 dir tmp mirror log=$PERPCA_CACHE_DIR/rootfs-$1.log t0=$SECONDS
	dir=$(rootfs_dir "$n")
	tmp=$(mktemp -d "$PERPCA_CACHE_DIR/.rootfs-$n.tmp.XXXXXX")
	chmod 755 "$tmp"
	mirror=${PERPCA_DEBIAN_MIRROR:-$(grep -h -m1 -oE '^URIs: \S+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1 | cut -d' ' -f2)}
	say "debootstrap $(suite_for "$n") (PostgreSQL $n) into $tmp; log: $log" >&2
	# shellcheck disable=SC2086 # no mirror: debootstrap's default
	debootstrap --variant=minbase "$(suite_for "$n")" "$tmp" $mirror >"$log" 2>&1 ||
		{ tail -n 30 "$log" >&2; rm -rf "$tmp"; die "debootstrap failed (log: $log)"; }
	# No service starts inside; a lagging mirror's Valid-Until is no error; no main cluster.
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d" && chmod 755 "$tmp/usr/sbin/policy-rc.d"
	echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99perpca"
	mkdir -p "$tmp/etc/postgresql-common" && echo 'create_main_cluster = false' >"$tmp/etc/postgresql-common/createcluster.conf"
	# shellcheck disable=SC2046
	install_into "$tmp" $(rootfs_packages "$n") >>"$log" 2>&1 || { tail -n 30 "$log" >&2; rm -rf "$tmp"; die "package installation failed (log: $log)"; }
	in_root "$tmp" useradd --system --user-group --create-home --home-dir "/var/lib/$PERPCA_RUN_USER" --shell /bin/bash "$PERPCA_RUN_USER"
	suite_for "$n" >"$tmp/.perpca-rootfs"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	say "time: root filesystem of PostgreSQL $n made: $((SECONDS - t0)) s" >&2
}

cmd_rootfs() {
	local n=$1 dir t0=$SECONDS
	suite_for "$n" >/dev/null
	need_root "$n"
	dir=$(rootfs_dir "$n")
	mkdir -p "$PERPCA_CACHE_DIR"
	exec 8>"$dir.lock"
	flock 8
	[ -f "$dir/.perpca-rootfs" ] || create_rootfs "$n"
	# shellcheck disable=SC2046
	install_into "$dir" $(rootfs_packages "$n") >>"$PERPCA_CACHE_DIR/rootfs-$n.log" 2>&1 ||
		die "package installation into rootfs-$n failed (log: $PERPCA_CACHE_DIR/rootfs-$n.log)"
	# Citus and pgvector inside, cached in its own /var/cache/perpca.
	rm -rf "$dir/opt/perpca" && mkdir -p "$dir/opt/perpca/shared"
	cp -a "$REPO_ROOT/scripts" "$dir/opt/perpca/"
	[ -d "$PERPCA_VENDOR_DIR" ] && cp -a "$PERPCA_VENDOR_DIR" "$dir/opt/perpca/shared/vendor"
	in_root "$dir" PERPCA_PG_MAJOR="$n" PERPCA_VENDOR_DIR=/opt/perpca/shared/vendor \
		bash /opt/perpca/scripts/prepare.sh extras 2>>"$PERPCA_CACHE_DIR/rootfs-$n.log"
	rm -rf "$dir/opt/perpca"
	say "time: rootfs-$n ready (made, or checked and updated): $((SECONDS - t0)) s" >&2
}

cmd_enter() {
	local n=$1 base run rc=0 v d
	shift
	[ "${1:-}" = -- ] && shift
	need_root "$n"
	base=$(rootfs_dir "$n")
	[ -f "$base/.perpca-rootfs" ] || die "no root filesystem for PostgreSQL $n: bash scripts/prepare.sh rootfs $n"
	run=$(mktemp -d "$PERPCA_CACHE_DIR/run-$n.XXXXXX")
	chmod 755 "$run"
	exec 8>"$base.lock"
	flock -s 8
	for d in "$base"/* "$base"/.perpca-rootfs; do
		case "$(basename "$d")" in etc | var) cp -a "$d" "$run/" ;; *) cp -al "$d" "$run/" ;; esac
	done
	flock -u 8
	copy_tree "$REPO_ROOT" "$run/work/repo"
	[ -d "$PERPCA_VENDOR_DIR" ] && mkdir -p "$run/work/shared" && cp -a "$PERPCA_VENDOR_DIR" "$run/work/shared/vendor"
	local -a pass=()
	for v in CI PERPCA_PORT_BASE PERPCA_RUN_USER PERPCA_TAP_JOBS; do
		[ -n "${!v+x}" ] && pass+=("$v=${!v}")
	done
	in_root "$run" "${pass[@]}" PERPCA_PG_MAJOR="$n" PERPCA_VENDOR_DIR=/work/shared/vendor "$@" || rc=$?
	if [ -d "$run/work/repo/log" ]; then
		mkdir -p "$REPO_ROOT/log/pg$n" && cp -a "$run/work/repo/log/." "$REPO_ROOT/log/pg$n/"
	fi
	# Never remove a directory that still has something mounted in it.
	if grep -q " $run/" /proc/self/mounts; then warn "$run still has mounts: left in place"; else rm -rf "$run"; fi
	return "$rc"
}

case "${1:-}" in
	packages) ensure_packages ;;
	extras) cmd_extras ;;
	asan) cmd_asan ;;
	rootfs) [ $# -eq 2 ] || die "usage: prepare.sh rootfs N"; cmd_rootfs "$2" ;;
	enter) [ $# -ge 3 ] || die "usage: prepare.sh enter N -- CMD..."; shift; cmd_enter "$@" ;;
	*) usage; exit 2 ;;
esac
