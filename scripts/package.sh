#!/usr/bin/env bash
# scripts/package.sh -- the Debian package: build it, install it, test the installed files
#
#   bash scripts/package.sh build OUTDIR   dpkg-buildpackage -us -uc -b in a copy of the
#                                          tree; the packages land in OUTDIR
#   bash scripts/package.sh test           (root) build, install with apt-get, check as
#                                          the user perpca, then remove the package
#   bash scripts/package.sh check          (not root) check the installed package: a
#                                          throwaway cluster from the system's binaries,
#                                          CREATE EXTENSION, the upgrade from 0.1.0 and
#                                          installcheck (pg_regress on test/sql)
#
# The version the package must carry is perpca.control's.  `test` leaves the
# machine as it found it: it does not replace a postgresql-NN-perpca that was
# installed before (a skip), and removes the one it installed.  Results go to
# stdout as TAP lines, the rest to stderr.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKG=postgresql-$PG_MAJOR-perpca
VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$REPO_ROOT/perpca.control")
ok() { echo "ok - package: $1"; }
not_ok() { echo "not ok - package: $1"; }

# Build the binary packages from a copy of the tree into OUTDIR; print the .deb.
cmd_build() {
	local out work deb_version
	mkdir -p "$1" && out=$(cd "$1" && pwd)
	work=$(mktemp -d "${TMPDIR:-/tmp}/perpca-deb.XXXXXX")
	copy_tree "$REPO_ROOT" "$work/perpca"
	deb_version=$(cd "$work/perpca" && dpkg-parsechangelog -S Version)
	[ "${deb_version%%-*}" = "$VERSION" ] ||
		{ warn "debian/changelog says $deb_version, perpca.control $VERSION"; rm -rf "$work"; return 1; }
	say "dpkg-buildpackage -us -uc -b (PostgreSQL $PG_MAJOR, perpca $deb_version); log: $out/build.log"
	(cd "$work/perpca" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 ||
		{ tail -n 40 "$out/build.log" >&2; rm -rf "$work"; return 1; }
	mv "$work"/*.deb "$out/"
	rm -rf "$work"
	ls "$out/${PKG}_${deb_version}_"*.deb
}

q() { "$PGBIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }
# check NAME EXPECTED GOT
check() { if [ "$3" = "$2" ]; then ok "$1 gives $3"; else not_ok "$1 (expected $2, got '$3')"; fi; }

cmd_check() {
	[ "$(id -u)" -ne 0 ] || die "package.sh check runs as a normal user (PostgreSQL refuses root)"
	make_work package
	trap 'finish $? package' EXIT
	# The cluster runs the SYSTEM's binaries and extension files: the package's.
	PGBIN=$PG_SYS_LIB/bin
	copy_tree "$REPO_ROOT" "$BUILD"
	cluster_start || { not_ok "cluster from the installed binaries"; return 1; }
	check "the installed files' default version" "$VERSION" \
		"$(q postgres "SELECT default_version FROM pg_available_extensions WHERE name = 'perpca'" || true)"
	check "CREATE EXTENSION perpca" "$VERSION" "$(q postgres "CREATE DATABASE pkg_create" >/dev/null &&
		q pkg_create "CREATE EXTENSION perpca; SELECT extversion FROM pg_extension WHERE extname = 'perpca'" || true)"
	check "ALTER EXTENSION perpca UPDATE from 0.1.0" "$VERSION" "$(q postgres "CREATE DATABASE pkg_upgrade" >/dev/null &&
		q pkg_upgrade "CREATE EXTENSION perpca VERSION '0.1.0'" >/dev/null &&
		q pkg_upgrade "ALTER EXTENSION perpca UPDATE; SELECT extversion FROM pg_extension WHERE extname = 'perpca'" || true)"
	# pg_regress on test/sql against the installed files: one result per test.
	local rc=0 log=$WORK/installcheck.log
	make -C "$BUILD" installcheck TAP_TESTS= PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER" >"$log" 2>&1 || rc=$?
	cat "$log" >&2
	regress_tap "package: installcheck " <"$log" | tee "$WORK/installcheck.tap"
	if [ "$rc" -ne 0 ]; then
		grep -q '^not ok' "$WORK/installcheck.tap" || not_ok "installcheck (pg_regress exit $rc)"
		[ -f "$BUILD/regression.diffs" ] && cat "$BUILD/regression.diffs" >&2
	fi
	return 0
}

cmd_test() {
	[ "$(id -u)" -eq 0 ] || die "package.sh test installs a package: run it as root (or use build/check)"
	ensure_packages "${PERPCA_DEB_BUILD_PACKAGES[@]}"
	local deb t=$SECONDS
	OUT=$(mktemp -d /tmp/perpca-debs.XXXXXX)
	local out=$OUT
	chmod 755 "$out"
	trap 'if [ -n "${INSTALLED:-}" ]; then dpkg --purge "$PKG" >/dev/null; fi; rm -rf "$OUT"' EXIT
	deb=$(cmd_build "$out") || { not_ok "dpkg-buildpackage"; return 1; }
	ok "dpkg-buildpackage builds $(basename "$deb") ($((SECONDS - t)) s)"
	# One package test at a time on a machine: install, check, remove.
	exec 7>"$LOCKS/perpca-package-test.lock"
	flock 7
	if missing_from "$PKG" | grep -q .; then :; else
		echo "ok - package: checks # SKIP $PKG was installed on this machine before, and this test does not replace it"
		return 0
	fi
	t=$SECONDS
	DEBIAN_FRONTEND=noninteractive flock -x "$LOCKS/perpca-pg-files.lock" flock "$LOCKS/perpca-apt.lock" \
		apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "$deb" >"$out/install.log" 2>&1 ||
		{ cat "$out/install.log" >&2; not_ok "apt-get install $(basename "$deb")"; return 1; }
	INSTALLED=1
	ok "apt-get install $(basename "$deb") ($((SECONDS - t)) s)"
	as_user package.sh 0 check || true
	if flock -x "$LOCKS/perpca-pg-files.lock" flock "$LOCKS/perpca-apt.lock" dpkg --purge "$PKG" >/dev/null; then
		INSTALLED=
		ok "dpkg --purge $PKG"
	else
		not_ok "dpkg --purge $PKG"
	fi
}

case "${1:-}" in
	build) [ $# -eq 2 ] || die "usage: package.sh build OUTDIR"; cmd_build "$2" ;;
	test) cmd_test ;;
	check) cmd_check ;;
	*) usage; exit 2 ;;
esac
