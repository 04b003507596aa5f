#!/usr/bin/env bash
# scripts/citus.sh -- build Citus from source for the Citus TAP test (test/t/045_citus.pl)
#
#   bash scripts/citus.sh build          build (cached) and print the build's directory
#   bash scripts/citus.sh install BUILT INST
#                                        copy the build BUILT (what `build` printed) into
#                                        the private installation INST (scripts/test.sh)
#   bash scripts/citus.sh status         say which source/cache would be used
#
# Debian does not package Citus.  The source is looked for in
# $PERPCA_CITUS_SOURCE (a directory holding citus-VERSION.tar.gz, or the tarball
# itself), else in $PERPCA_VENDOR_DIR (scripts/lib.sh: ../shared/vendor next to
# the repository, its main worktree or the one it was cloned from).  A copy
# elsewhere has neither: the TAP test then says so and skips.  The build (make
# install DESTDIR=...) is cached under $PERPCA_CITUS_CACHE, default
# $PERPCA_CACHE_DIR (/var/cache/perpca) as root and
# ${XDG_CACHE_HOME:-~/.cache}/perpca otherwise, in citus-VERSION-pgMINOR/ (keyed
# by the Citus version and the server headers' version, so a new PostgreSQL
# minor release rebuilds).  As root, missing build packages are installed with
# apt-get; a normal user without them gets the apt-get command and no Citus. A
# patch next to the tarball (citus-VERSION-pg*.patch) that removes Citus' own
# have_createdb_privilege() is applied only when the server headers declare it.
# Prints "skip: REASON" on stdout and exits 3 when Citus cannot be had here.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

skip() { echo "skip: $*"; exit 3; }

# Set TARBALL to the source to build, or skip.
find_tarball() {
	local src=${PERPCA_CITUS_SOURCE:-$PERPCA_VENDOR_DIR}
	[ -e "$src" ] || skip "no Citus source at $src (set PERPCA_CITUS_SOURCE to a directory holding citus-VERSION.tar.gz)"
	TARBALL=$(citus_tarball)
	[ -n "$TARBALL" ] || skip "no citus-VERSION.tar.gz in $src"
}

# Skip unless the Citus source supports the server's major version.
check_pg_version() {
	local major supported
	major=$(pg_config --version | awk '{print $2}' | cut -d. -f1)
	supported=$(citus_pg_versions "$TARBALL")
	[[ " $supported " == *" $major "* ]] ||
		skip "Citus $(citus_version "$TARBALL") supports PostgreSQL ${supported// /, }, not $major"
}

cache_root() {
	if [ -n "${PERPCA_CITUS_CACHE:-}" ]; then
		echo "$PERPCA_CITUS_CACHE"
	elif [ "$(id -u)" -eq 0 ]; then
		echo "$PERPCA_CACHE_DIR"
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/perpca"
	fi
}

# citus-13.2.2.tar.gz -> 13.2.2
citus_version() { basename "$1" .tar.gz | sed 's/^citus-//'; }

# "PostgreSQL 15.20 (Debian ...)" -> 15.20
pg_minor() { pg_config --version | awk '{print $2}'; }

build_dir_for() { echo "$(cache_root)/citus-$(citus_version "$1")-pg$(pg_minor)"; }

ensure_build_packages() {
	local missing
	missing=$(missing_from "${CITUS_BUILD_PACKAGES[@]}" | tr '\n' ' ')
	missing=${missing% }
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		skip "Citus build packages missing: $missing (sudo apt-get install -y $missing, or run scripts/test.sh as root)"
	fi
	say "installing Citus build packages: $missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt_get install -y -q --no-install-recommends $missing >&2 ||
		{ apt_get update -q >&2 && apt_get install -y -q --no-install-recommends $missing >&2; } ||
		die "apt-get install of the Citus build packages failed"
}

# Configure, compile and install into DEST (a DESTDIR tree) from TARBALL.
compile_citus() {
	local tarball=$1 dest=$2 work
	work=$(mktemp -d "${TMPDIR:-/tmp}/perpca-citus.XXXXXX")
	tar -xzf "$tarball" -C "$work"
	local dir
	dir=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'citus-*' | head -n 1)
	[ -n "$dir" ] || die "$tarball holds no citus-* directory"
	local patch
	for patch in "$(dirname "$tarball")/citus-$(citus_version "$tarball")"-pg*.patch; do
		[ -f "$patch" ] || continue
		if grep -rq 'have_createdb_privilege' "$(pg_config --includedir-server)"; then
			say "applying $(basename "$patch") (the server headers declare have_createdb_privilege)" >&2
			patch -d "$dir" -p1 -s <"$patch" >&2 || die "patch $patch failed"
		fi
	done
	say "building Citus $(citus_version "$tarball") in $dir (log: $work/build.log)" >&2
	local t0=$SECONDS
	(cd "$dir" && ./configure --without-libcurl &&
		make -j"$(nproc)" with_llvm=no &&
		make install with_llvm=no DESTDIR="$dest") >"$work/build.log" 2>&1 ||
		{ tail -n 60 "$work/build.log" >&2; die "the Citus build failed (kept $work)"; }
	say "time: Citus $(citus_version "$tarball") build for PostgreSQL $(pg_minor): $((SECONDS - t0)) s" >&2
	rm -rf "$work"
}

# Build into the cache unless it is there; print the build directory.
cmd_build() {
	local out
	find_tarball
	command -v pg_config >/dev/null || ensure_build_packages
	check_pg_version
	out=$(build_dir_for "$TARBALL")
	if [ -f "$out/.citus-built" ]; then
		echo "$out"
		return
	fi
	ensure_build_packages
	mkdir -p "$(dirname "$out")" || skip "cannot create $(dirname "$out")"
	# One builder at a time per cache; a finished build appears in one rename.
	exec 9>"$(dirname "$out")/.citus.lock"
	flock 9
	if [ ! -f "$out/.citus-built" ]; then
		local tmp
		tmp=$(mktemp -d "$(dirname "$out")/.citus-tmp.XXXXXX")
		compile_citus "$TARBALL" "$tmp"
		touch "$tmp/.citus-built"
		chmod -R a+rX "$tmp"
		rm -rf "$out"
		mv "$tmp" "$out"
	fi
	flock -u 9
	echo "$out"
}

# Copy the build BUILT (a DESTDIR tree) into the private installation INST.
cmd_install() {
	local built=$1 inst=$2
	[ -f "$built/.citus-built" ] || die "$built is not a finished Citus build"
	local pkglib
	pkglib=$(find "$built" -name citus.so -path '*/lib/*' | head -n 1)
	[ -n "$pkglib" ] || die "no citus.so in $built"
	(cd "$built" && tar --exclude=./.citus-built -cf - .) | tar -C "$inst" -xf -
	[ -f "$inst${pkglib#"$built"}" ] || die "citus.so did not land in $inst"
}

case "${1:-}" in
	build) cmd_build ;;
	install)
		[ $# -eq 3 ] || die "usage: citus.sh install BUILT_DIR INST"
		cmd_install "$2" "$3" ;;
	status)
		find_tarball
		echo "source $TARBALL; build $(build_dir_for "$TARBALL")" ;;
	-h | --help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
	*) die "usage: citus.sh build | install BUILT_DIR INST | status" ;;
esac
