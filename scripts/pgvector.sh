#!/usr/bin/env bash
# scripts/pgvector.sh -- pgvector for the perpca_vector tests (test/t/*pgvector*)
#
#   bash scripts/pgvector.sh build       print where pgvector comes from: "system" when
#                                        the server's installation has it already (a
#                                        Debian postgresql-NN-pgvector package), else
#                                        the directory of a build from source (cached)
#   bash scripts/pgvector.sh install BUILT INST
#                                        copy the build BUILT (what `build` printed) into
#                                        the private installation INST (scripts/test.sh);
#                                        nothing to do for "system"
#   bash scripts/pgvector.sh status      say which source/cache would be used
#
# Debian 12 does not package pgvector for PostgreSQL 15.  The source is looked
# for in $PERPCA_PGVECTOR_SOURCE (a directory holding
# pgvector_VERSION.orig.tar.gz or pgvector-VERSION.tar.gz, or the tarball
# itself), else in $PERPCA_VENDOR_DIR (scripts/lib.sh: ../shared/vendor next to
# the repository, its main worktree or the one it was cloned from).  A copy
# elsewhere has neither: the tests then say so and skip.  The build is compiled
# without pgvector's default -march=native (OPTFLAGS=""), so it runs on any
# machine of the kind, and cached (make install DESTDIR=...) under
# $PERPCA_PGVECTOR_CACHE, default $PERPCA_CACHE_DIR (/var/cache/perpca) as root
# and ${XDG_CACHE_HOME:-~/.cache}/perpca otherwise, in
# pgvector-VERSION-pgMINOR/. Prints "skip: REASON" on stdout and exits 3 when
# pgvector cannot be had here.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

skip() { echo "skip: $*"; exit 3; }

# Does the server installation of pg_config have pgvector already?
system_has_pgvector() {
	local share lib
	share=$(pg_config --sharedir) lib=$(pg_config --pkglibdir)
	[ -f "$share/extension/vector.control" ] && [ -f "$lib/vector.so" ]
}

# Set TARBALL to the source to build, or skip.
find_tarball() {
	local src=${PERPCA_PGVECTOR_SOURCE:-$PERPCA_VENDOR_DIR}
	if [ -f "$src" ]; then
		TARBALL=$src
		return
	fi
	[ -d "$src" ] || skip "no pgvector source at $src and no pgvector in $(pg_config --sharedir)/extension (install postgresql-$PG_MAJOR-pgvector where it is packaged, or set PERPCA_PGVECTOR_SOURCE to a directory holding pgvector_VERSION.orig.tar.gz)"
	TARBALL=$(find "$src" -maxdepth 1 \( -name 'pgvector_[0-9]*.orig.tar.gz' -o -name 'pgvector-[0-9]*.tar.gz' \) | sort -V | tail -n 1)
	[ -n "$TARBALL" ] || skip "no pgvector_VERSION.orig.tar.gz in $src"
}

cache_root() {
	if [ -n "${PERPCA_PGVECTOR_CACHE:-}" ]; then
		echo "$PERPCA_PGVECTOR_CACHE"
	elif [ "$(id -u)" -eq 0 ]; then
		echo "$PERPCA_CACHE_DIR"
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/perpca"
	fi
}

# pgvector_0.8.0.orig.tar.gz or pgvector-0.8.0.tar.gz -> 0.8.0
pgvector_version() { basename "$1" | sed -E 's/^pgvector[_-]//; s/(\.orig)?\.tar\.gz$//'; }

# "PostgreSQL 15.20 (Debian ...)" -> 15.20
pg_minor() { pg_config --version | awk '{print $2}'; }

build_dir_for() { echo "$(cache_root)/pgvector-$(pgvector_version "$1")-pg$(pg_minor)"; }

# Compile and install into DEST (a DESTDIR tree) from TARBALL.
compile_pgvector() {
	local tarball=$1 dest=$2 work dir
	work=$(mktemp -d "${TMPDIR:-/tmp}/perpca-pgvector.XXXXXX")
	tar -xzf "$tarball" -C "$work"
	dir=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)
	[ -n "$dir" ] || die "$tarball holds no pgvector-* directory"
	say "building pgvector $(pgvector_version "$tarball") in $dir (log: $work/build.log)" >&2
	local t0=$SECONDS
	# OPTFLAGS="": no -march=native, so the cached build runs on any x86-64.
	(cd "$dir" && make -j"$(nproc)" OPTFLAGS="" && make install OPTFLAGS="" DESTDIR="$dest") \
		>"$work/build.log" 2>&1 ||
		{ tail -n 60 "$work/build.log" >&2; die "the pgvector build failed (kept $work)"; }
	say "time: pgvector $(pgvector_version "$tarball") build for PostgreSQL $(pg_minor): $((SECONDS - t0)) s" >&2
	rm -rf "$work"
}

# "system" when the server has pgvector; else build into the cache unless it is
# there, and print the build directory.
cmd_build() {
	local out tmp
	command -v pg_config >/dev/null || skip "no pg_config"
	if system_has_pgvector; then
		echo system
		return
	fi
	[ -f "$(pg_config --includedir-server)/postgres.h" ] ||
		skip "no server headers to build pgvector (install postgresql-server-dev-$PG_MAJOR)"
	find_tarball
	out=$(build_dir_for "$TARBALL")
	if [ -f "$out/.pgvector-built" ]; then
		echo "$out"
		return
	fi
	mkdir -p "$(dirname "$out")" || skip "cannot create $(dirname "$out")"
	# One builder at a time per cache; a finished build appears in one rename.
	exec 9>"$(dirname "$out")/.pgvector.lock"
	flock 9
	if [ ! -f "$out/.pgvector-built" ]; then
		tmp=$(mktemp -d "$(dirname "$out")/.pgvector-tmp.XXXXXX")
		compile_pgvector "$TARBALL" "$tmp"
		touch "$tmp/.pgvector-built"
		chmod -R a+rX "$tmp"
		rm -rf "$out"
		mv "$tmp" "$out"
	fi
	flock -u 9
	echo "$out"
}

# Copy the build BUILT (a DESTDIR tree) into the private installation INST.
cmd_install() {
	local built=$1 inst=$2 lib
	[ "$built" = system ] && return 0
	[ -f "$built/.pgvector-built" ] || die "$built is not a finished pgvector build"
	lib=$(find "$built" -name vector.so -path '*/lib/*' | head -n 1)
	[ -n "$lib" ] || die "no vector.so in $built"
	(cd "$built" && tar --exclude=./.pgvector-built -cf - .) | tar -C "$inst" -xf -
	[ -f "$inst${lib#"$built"}" ] || die "vector.so did not land in $inst"
}

case "${1:-}" in
	build) cmd_build ;;
	install)
		[ $# -eq 3 ] || die "usage: pgvector.sh install BUILT_DIR INST"
		cmd_install "$2" "$3" ;;
	status)
		if system_has_pgvector; then
			echo "system: $(pg_config --sharedir)/extension/vector.control"
		else
			find_tarball
			echo "source $TARBALL; build $(build_dir_for "$TARBALL")"
		fi ;;
	-h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
	*) die "usage: pgvector.sh build | install BUILT_DIR INST | status" ;;
esac
