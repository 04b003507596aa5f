#!/usr/bin/env bash
# scripts/rootfs.sh -- PostgreSQL 17 and 18 in cached Debian root filesystems
#
#   bash scripts/rootfs.sh ensure N      build (once) or update the root filesystem for
#                                        PostgreSQL N and print its directory
#   bash scripts/rootfs.sh run N -- CMD  run CMD (as root) in a throwaway copy of it, with
#                                        this checkout at /work/repo (and $PERPCA_VENDOR_DIR,
#                                        if there, at /work/shared/vendor)
#   bash scripts/rootfs.sh status        say which versions are there
#
# Debian 12's archive has only PostgreSQL 15, and the binaries of newer Debian
# releases need a newer C library, so each version lives in a minimal root
# filesystem of the Debian release that ships it (17: trixie, 18: sid), made
# with debootstrap (--variant=minbase) in $PERPCA_ROOTFS_CACHE (default
# $PERPCA_CACHE_DIR, /var/cache/perpca, next to the ASan and Citus builds):
# rootfs-N/.  It holds
# the server and its headers, pg_cron, pgvector, the BLAS/LAPACK headers, the
# Perl modules of the TAP tests, Debian's packaging tools and (where Citus
# supports the version) Citus built from $PERPCA_VENDOR_DIR by scripts/citus.sh.
# Only `ensure` changes it, under a lock; a run works in a copy (/usr hard
# linked, /etc and /var copied: dpkg and the suite write only there or by
# replacing files), inside its own mount and PID namespaces, so that every
# process of the run ends with it and no mount outlives it.
# Needs root (debootstrap, chroot, mount): otherwise prints "skip: REASON" and
# exits 3.  The mirror is the host's Debian mirror (from its apt sources) unless
# PERPCA_DEBIAN_MIRROR says otherwise.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROOTFS_CACHE=${PERPCA_ROOTFS_CACHE:-$PERPCA_CACHE_DIR}

skip() { echo "skip: $*"; exit 3; }

# The Debian release that ships PostgreSQL N.
suite_for() {
	case "$1" in
		17) echo trixie ;;
		18) echo sid ;;
		*) return 1 ;;
	esac
}

# Packages of a root filesystem for PostgreSQL N: what scripts/test.sh needs
# (lib.sh's list for that version), pgvector, packaging, and Citus' build
# packages where Citus builds.
rootfs_packages() {
	local n=$1
	(
		PERPCA_PG_MAJOR=$n
		# shellcheck source=scripts/lib.sh
		. "$REPO_ROOT/scripts/lib.sh"
		printf '%s\n' "${PERPCA_PACKAGES[@]}" "${PERPCA_DEB_BUILD_PACKAGES[@]}" \
			"postgresql-$n-pgvector" procps
		if citus_supports "$n"; then printf '%s\n' "${CITUS_BUILD_PACKAGES[@]}"; fi
	) | sort -u
}

# The host's Debian mirror: the first deb822 or one-line source for bookworm.
host_mirror() {
	[ -n "${PERPCA_DEBIAN_MIRROR:-}" ] && { echo "$PERPCA_DEBIAN_MIRROR"; return; }
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			/^deb[ \t]/ && $0 ~ /[ \t]bookworm[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }
			/^URIs:/ && $2 ~ /\/debian\/?$/ { print $2; exit }
		' "$f"
	done | head -n 1
}

# Run CMD with root directory DIR in new mount and PID namespaces: /proc, /dev
# (bound from the host) and nothing else; all vanish with the namespaces.
in_root() {
	local dir=$1
	shift
	unshare --mount --propagation private --pid --fork --kill-child \
		/bin/bash -c '
			set -e
			dir=$1; shift
			mount -t proc proc "$dir/proc"
			mount --rbind /dev "$dir/dev"
			mount -t tmpfs tmpfs "$dir/dev/shm"
			exec chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
				HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
		' in_root "$dir" "$@"
}

rootfs_dir() { echo "$ROOTFS_CACHE/rootfs-$1"; }

need_root() {
	[ "$(id -u)" -eq 0 ] ||
		skip "the versions after 15 run in Debian root filesystems under $ROOTFS_CACHE, which only root can build and enter (debootstrap, chroot); run scripts/test.sh as root for them"
	command -v unshare >/dev/null || skip "unshare (util-linux) not found"
	if ! command -v debootstrap >/dev/null; then
		say "installing debootstrap" >&2
		apt_get install -y -q --no-install-recommends debootstrap >&2 ||
			{ apt_get update -q >&2 && apt_get install -y -q --no-install-recommends debootstrap >&2; } ||
			skip "debootstrap is not installed and apt-get could not install it"
	fi
}

# Install into DIR those of PACKAGES that are missing (apt-get update first).
install_into() {
	local dir=$1
	shift
	local missing
	missing=$(in_root "$dir" /bin/bash -c 'for p; do dpkg-query -W -f="\${db:Status-Status}\n" "$p" 2>/dev/null | grep -qx installed || echo "$p"; done' x "$@" | tr '\n' ' ')
	missing=${missing% }
	[ -z "$missing" ] && return 0
	say "installing into $(basename "$dir"): $missing" >&2
	# shellcheck disable=SC2086
	in_root "$dir" /bin/bash -c "apt-get update -q && apt-get install -y -q --no-install-recommends $missing && apt-get clean && rm -rf /var/lib/apt/lists/*" >&2
}

# debootstrap a new root filesystem for PostgreSQL N into its cache directory.
create_rootfs() {
	local n=$1 suite dir tmp mirror
	suite=$(suite_for "$n")
	dir=$(rootfs_dir "$n")
	tmp=$(mktemp -d "$ROOTFS_CACHE/.rootfs-$n.tmp.XXXXXX")
	chmod 755 "$tmp"
	mirror=$(host_mirror)
	say "debootstrap $suite (PostgreSQL $n) into $tmp; log: $ROOTFS_CACHE/rootfs-$n.log" >&2
	local t0=$SECONDS
	# shellcheck disable=SC2086 # no mirror: debootstrap's default
	if ! debootstrap --variant=minbase "$suite" "$tmp" $mirror >"$ROOTFS_CACHE/rootfs-$n.log" 2>&1; then
		tail -n 30 "$ROOTFS_CACHE/rootfs-$n.log" >&2
		rm -rf "$tmp"
		die "debootstrap $suite failed (log: $ROOTFS_CACHE/rootfs-$n.log)"
	fi
	# No service starts inside (postgresql-common would start its cluster).
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"
	# A mirror that lags (or a snapshot) serves sid's Release past its
	# Valid-Until date, which apt then refuses.
	echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99perpca"
	mkdir -p "$tmp/etc/postgresql-common"
	echo 'create_main_cluster = false' >"$tmp/etc/postgresql-common/createcluster.conf"
	# shellcheck disable=SC2046
	install_into "$tmp" $(rootfs_packages "$n") >>"$ROOTFS_CACHE/rootfs-$n.log" 2>&1 ||
		{ tail -n 30 "$ROOTFS_CACHE/rootfs-$n.log" >&2; rm -rf "$tmp"; die "package installation into the $suite root filesystem failed"; }
	in_root "$tmp" useradd --system --user-group --create-home --home-dir "/var/lib/$PERPCA_RUN_USER" \
		--shell /bin/bash "$PERPCA_RUN_USER"
	echo "$suite" >"$tmp/.perpca-rootfs"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	say "root filesystem for PostgreSQL $n ready in $((SECONDS - t0)) s" >&2
}

# Citus (scripts/citus.sh build) inside the root filesystem, cached there.
citus_into() {
	local n=$1 dir
	dir=$(rootfs_dir "$n")
	citus_supports "$n" || return 0
	local vendor=$PERPCA_VENDOR_DIR
	[ -d "${PERPCA_CITUS_SOURCE:-$vendor}" ] || return 0
	rm -rf "$dir/opt/perpca"
	mkdir -p "$dir/opt/perpca/repo" "$dir/opt/perpca/shared"
	cp -a "$REPO_ROOT/scripts" "$dir/opt/perpca/repo/"
	mkdir -p "$dir/opt/perpca/shared/vendor"
	cp -a "${PERPCA_CITUS_SOURCE:-$vendor}/." "$dir/opt/perpca/shared/vendor/"
	local out rc=0 t0=$SECONDS
	out=$(in_root "$dir" PERPCA_PG_MAJOR="$n" bash /opt/perpca/repo/scripts/citus.sh build 2>>"$ROOTFS_CACHE/rootfs-$n.log") || rc=$?
	say "time: Citus in rootfs-$n (built or found in its cache): $((SECONDS - t0)) s" >&2
	rm -rf "$dir/opt/perpca"
	case "$rc" in
		0) say "Citus for PostgreSQL $n: $out" >&2 ;;
		3) say "Citus for PostgreSQL $n: $out" >&2 ;;
		*) warn "the Citus build in rootfs-$n failed (log: $ROOTFS_CACHE/rootfs-$n.log)" ;;
	esac
}

cmd_ensure() {
	local n=$1
	suite_for "$n" >/dev/null || die "no root filesystem for PostgreSQL $n (17 or 18)"
	need_root "$n"
	local t0=$SECONDS
	mkdir -p "$ROOTFS_CACHE"
	exec 8>"$ROOTFS_CACHE/rootfs-$n.lock"
	flock 8
	local dir
	dir=$(rootfs_dir "$n")
	[ -f "$dir/.perpca-rootfs" ] || create_rootfs "$n"
	echo 'Acquire::Check-Valid-Until "false";' >"$dir/etc/apt/apt.conf.d/99perpca"
	# shellcheck disable=SC2046
	install_into "$dir" $(rootfs_packages "$n") >>"$ROOTFS_CACHE/rootfs-$n.log" 2>&1 ||
		die "package installation into rootfs-$n failed (log: $ROOTFS_CACHE/rootfs-$n.log)"
	citus_into "$n"
	flock -u 8
	say "time: rootfs-$n ready (made, or checked and updated): $((SECONDS - t0)) s" >&2
	echo "$dir"
}

# Copy the root filesystem BASE to RUN: hard links, except /etc and /var.
copy_rootfs() {
	local base=$1 run=$2 d
	for d in "$base"/* "$base"/.perpca-rootfs; do
		case "$(basename "$d")" in
			etc | var) cp -a "$d" "$run/" ;;
			*) cp -al "$d" "$run/" ;;
		esac
	done
}

cmd_run() {
	local n=$1
	shift
	[ "${1:-}" = -- ] && shift
	need_root "$n"
	local base
	base=$(rootfs_dir "$n")
	[ -f "$base/.perpca-rootfs" ] || die "no root filesystem for PostgreSQL $n: bash scripts/rootfs.sh ensure $n"
	local run
	run=$(mktemp -d "$ROOTFS_CACHE/run-$n.XXXXXX")
	chmod 755 "$run"
	exec 8>"$ROOTFS_CACHE/rootfs-$n.lock"
	flock -s 8
	copy_rootfs "$base" "$run"
	flock -u 8
	mkdir -p "$run/work"
	copy_tree "$REPO_ROOT" "$run/work/repo"
	local vendor=${PERPCA_CITUS_SOURCE:-$PERPCA_VENDOR_DIR}
	if [ -d "$vendor" ]; then
		mkdir -p "$run/work/shared"
		cp -a "$vendor/." "$run/work/shared/vendor/"
	fi
	local rc=0 v
	local -a pass=()
	for v in CI TERM PROVE_FLAGS PG_TEST_EXTRA $(compgen -e PERPCA_); do
		# (paths on the host mean nothing inside)
		case "$v" in PERPCA_ROOTFS_CACHE | PERPCA_CACHE_DIR | PERPCA_LOCK_DIR | PERPCA_CITUS_* | PERPCA_PGVECTOR_* | PERPCA_VENDOR_DIR | PERPCA_ASAN_PREFIX | PERPCA_DEBIAN_MIRROR) continue ;; esac
		[ -n "${!v+x}" ] && pass+=("$v=${!v}")
	done
	in_root "$run" "${pass[@]}" PERPCA_PG_MAJOR="$n" PERPCA_IN_ROOTFS="$n" "$@" || rc=$?
	if [ -d "$run/work/repo/log" ]; then
		mkdir -p "$REPO_ROOT/log/pg$n"
		cp -a "$run/work/repo/log/." "$REPO_ROOT/log/pg$n/"
		chown -R --reference="$REPO_ROOT" "$REPO_ROOT/log"
	fi
	# The namespaces are gone, and their mounts with them: never remove a
	# directory that still has something mounted in it.
	if grep -q " $run/" /proc/self/mounts; then
		warn "$run still has mounts: left in place"
	else
		rm -rf "$run"
	fi
	return "$rc"
}

cmd_status() {
	local n dir
	for n in 17 18; do
		dir=$(rootfs_dir "$n")
		if [ -f "$dir/.perpca-rootfs" ]; then
			echo "PostgreSQL $n: $dir ($(cat "$dir/.perpca-rootfs"))"
		else
			echo "PostgreSQL $n: no root filesystem in $dir"
		fi
	done
}

case "${1:-}" in
	ensure) [ $# -eq 2 ] || die "usage: rootfs.sh ensure N"; cmd_ensure "$2" ;;
	run) [ $# -ge 3 ] || die "usage: rootfs.sh run N -- CMD..."; shift; cmd_run "$@" ;;
	status) cmd_status ;;
	-h | --help) sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
	*) die "usage: rootfs.sh ensure N | run N -- CMD... | status" ;;
esac
