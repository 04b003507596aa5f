#!/usr/bin/env bash
# scripts/package.sh -- the Debian package: build it, install it, test the installed files
#
#   bash scripts/package.sh build OUTDIR   dpkg-buildpackage -us -uc -b in a copy of the
#                                          tree; the packages land in OUTDIR
#   bash scripts/package.sh test           (root) build, install with apt-get, check as
#                                          an unprivileged user, then remove the package
#   bash scripts/package.sh check          (not root) check the installed package: a
#                                          throwaway cluster from the system's binaries,
#                                          CREATE EXTENSION, the upgrade from 0.1.0 and
#                                          installcheck (pg_regress on test/sql)
#
# PostgreSQL's version is the machine's (PERPCA_PG_MAJOR in a root filesystem
# of scripts/rootfs.sh).  The version the package must carry is read from
# perpca.control.  `test` leaves the machine as it found it: it refuses to
# replace a postgresql-NN-perpca that was installed before, and removes the one
# it installed (also when a check fails).  Ends with "N passed, M failed, K
# skipped".
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKG=postgresql-$PG_MAJOR-perpca
CONTROL_VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$REPO_ROOT/perpca.control")
PASSED=0
FAILED=0
SKIPPED=0
FAILED_NAMES=()
SKIP_LINES=()

pass() { PASSED=$((PASSED + 1)); echo "ok - package: $1"; }
fail() { FAILED=$((FAILED + 1)); FAILED_NAMES+=("package:$1"); echo "not ok - package: $1${2:+ ($2)}"; }

summary() {
	echo
	local l
	for l in "${SKIP_LINES[@]}"; do echo "skipped: $l"; done
	[ ${#FAILED_NAMES[@]} -gt 0 ] && echo "failed: ${FAILED_NAMES[*]}"
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
}

# Build the binary packages from a copy of the tree into OUTDIR.
cmd_build() {
	local out=$1 work
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	work=$(mktemp -d "${TMPDIR:-/tmp}/perpca-deb.XXXXXX")
	copy_tree "$REPO_ROOT" "$work/perpca"
	local deb_version
	deb_version=$(cd "$work/perpca" && dpkg-parsechangelog -S Version)
	if [ "${deb_version%%-*}" != "$CONTROL_VERSION" ]; then
		echo "debian/changelog says $deb_version, perpca.control $CONTROL_VERSION: add a changelog entry for $CONTROL_VERSION" >&2
		rm -rf "$work"
		return 1
	fi
	say "dpkg-buildpackage -us -uc -b (PostgreSQL $PG_MAJOR, perpca $deb_version); log: $out/build.log" >&2
	if ! (cd "$work/perpca" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
		tail -n 40 "$out/build.log" >&2
		rm -rf "$work"
		return 1
	fi
	mv "$work"/*.deb "$out/"
	rm -rf "$work"
	ls "$out/${PKG}_${deb_version}_"*.deb
}

# Run SQL in database DB of the check cluster; print the result.
q() { "$PGBIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

# Each check is a function; it prints its result with pass/fail.
check_available() {
	local got
	got=$(q postgres "SELECT default_version FROM pg_available_extensions WHERE name = 'perpca'") || got=
	if [ "$got" = "$CONTROL_VERSION" ]; then pass "installed files offer perpca $got"
	else fail "installed files offer perpca $CONTROL_VERSION" "found '$got'"; fi
}

check_create() {
	local got
	got=$(q postgres "CREATE DATABASE pkg_create" >/dev/null &&
		q pkg_create "CREATE EXTENSION perpca; SELECT extversion FROM pg_extension WHERE extname = 'perpca'") || got=
	if [ "$got" = "$CONTROL_VERSION" ]; then pass "CREATE EXTENSION perpca gives $got"
	else fail "CREATE EXTENSION perpca" "got '$got'"; fi
}

# The upgrade chain from the first release, with a model trained on 0.1.0
# that must still read after the update.
check_upgrade() {
	local got
	got=$(q postgres "CREATE DATABASE pkg_upgrade" >/dev/null &&
		q pkg_upgrade "CREATE EXTENSION perpca VERSION '0.1.0'" >/dev/null &&
		q pkg_upgrade "ALTER EXTENSION perpca UPDATE" >/dev/null &&
		q pkg_upgrade "SELECT extversion FROM pg_extension WHERE extname = 'perpca'") || got=
	if [ "$got" = "$CONTROL_VERSION" ]; then pass "ALTER EXTENSION perpca UPDATE from 0.1.0 reaches $got"
	else fail "upgrade from 0.1.0 to $CONTROL_VERSION" "got '$got'"; fi
}

# pg_regress on test/sql against the installed files: one result per test.
check_installcheck() {
	local log=$WORK/installcheck.log rc=0 t0=$SECONDS
	make -C "$BUILD" installcheck TAP_TESTS= PG_CONFIG="$PGBIN/pg_config" \
		PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER" >"$log" 2>&1 || rc=$?
	local ok bad n
	ok=$(regress_passed <"$log")
	bad=$(regress_failed <"$log")
	PASSED=$((PASSED + ok))
	echo "ok - package: installcheck, $ok test(s) passed ($((SECONDS - t0)) s)"
	for n in $bad; do fail "installcheck $n"; done
	if [ "$rc" -ne 0 ]; then
		[ -n "$bad" ] || fail "installcheck (pg_regress)" "exit $rc"
		cat "$log"
		[ -f "$BUILD/regression.diffs" ] && cat "$BUILD/regression.diffs"
	fi
	return 0
}

cmd_check() {
	[ "$(id -u)" -ne 0 ] || die "package.sh check runs as a normal user (PostgreSQL refuses root)"
	make_work package
	trap 'rc=$?; finish $rc package; summary; exit $rc' EXIT
	# The cluster runs the SYSTEM's binaries and extension files: the package's.
	INST=
	PGBIN=$PG_SYS_LIB/bin
	copy_tree "$REPO_ROOT" "$BUILD"
	if ! cluster_start; then
		fail "cluster from the installed binaries"
		return 1
	fi
	check_available
	check_create
	check_upgrade
	check_installcheck
	[ "$FAILED" -eq 0 ]
}

cmd_test() {
	[ "$(id -u)" -eq 0 ] || die "package.sh test installs a package: run it as root (or use build/check)"
	local missing
	missing=$(missing_from "${PERPCA_DEB_BUILD_PACKAGES[@]}" | tr '\n' ' ')
	if [ -n "${missing// /}" ]; then
		say "installing the packaging tools: $missing"
		# shellcheck disable=SC2086
		DEBIAN_FRONTEND=noninteractive apt_get install -y -q --no-install-recommends $missing >/dev/null ||
			{ fail "packaging tools" "apt-get install $missing failed"; summary; return 1; }
	fi
	local deb t0=$SECONDS
	OUT=$(mktemp -d /tmp/perpca-debs.XXXXXX)
	local out=$OUT
	chmod 755 "$out"
	# Whatever happens, the package this test installed goes again.
	trap 'if [ -n "${INSTALLED:-}" ]; then dpkg --purge "$PKG" >/dev/null; fi; rm -rf "$OUT"' EXIT
	if deb=$(cmd_build "$out"); then
		pass "dpkg-buildpackage builds $(basename "$deb") ($((SECONDS - t0)) s)"
	else
		fail "dpkg-buildpackage"
		summary
		return 1
	fi
	# One package test at a time on a machine: install, check, remove.
	exec 7>/run/lock/perpca-package-test.lock
	flock 7
	if dpkg-query -W -f='${db:Status-Status}\n' "$PKG" 2>/dev/null | grep -qx installed; then
		SKIPPED=$((SKIPPED + 1))
		SKIP_LINES+=("package checks: $PKG is installed on this machine already, and this test does not replace it: not installed, not checked")
		summary
		return 0
	fi
	t0=$SECONDS
	if DEBIAN_FRONTEND=noninteractive with_pg_files_lock -x flock "$PERPCA_LOCK_DIR/perpca-apt.lock" \
		apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 \
		"$deb" >"$out/install.log" 2>&1; then
		INSTALLED=1
		pass "apt-get install $(basename "$deb") ($((SECONDS - t0)) s)"
	else
		cat "$out/install.log"
		fail "apt-get install $(basename "$deb")"
		summary
		return 1
	fi
	# The checks run unprivileged, in a copy of the tree they can read.
	local stage rc=0 counts
	t0=$SECONDS
	stage=$(mktemp -d /tmp/perpca-pkgcheck.XXXXXX)
	copy_tree "$REPO_ROOT" "$stage/repo"
	chown -R "$PERPCA_RUN_USER:" "$stage"
	chmod 755 "$stage"
	(cd "$stage" && runuser -u "$PERPCA_RUN_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
		HOME="$stage" LANG=C.UTF-8 TMPDIR="$stage" PERPCA_PORT_BASE="$PERPCA_PORT_BASE" \
		PERPCA_PG_MAJOR="$PG_MAJOR" PERPCA_REEXECED=1 \
		bash "$stage/repo/scripts/package.sh" check) | tee "$out/check.log" || rc=$?
	rm -rf "$stage"
	say "time: package checks (CREATE EXTENSION, upgrade, installcheck): $((SECONDS - t0)) s"
	counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/check.log" | tail -n 1)
	if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		PASSED=$((PASSED + BASH_REMATCH[1]))
		FAILED=$((FAILED + BASH_REMATCH[2]))
		[ "${BASH_REMATCH[2]}" -gt 0 ] && FAILED_NAMES+=("$(grep '^failed: ' "$out/check.log" | tail -n 1 | sed 's/^failed: //')")
	fi
	[ "$rc" -eq 0 ] || [ "$FAILED" -gt 0 ] || fail "package.sh check" "exit $rc"
	if with_pg_files_lock -x flock "$PERPCA_LOCK_DIR/perpca-apt.lock" dpkg --purge "$PKG" >/dev/null; then
		INSTALLED=
		pass "dpkg --purge $PKG"
	else
		fail "dpkg --purge $PKG"
	fi
	summary
	[ "$FAILED" -eq 0 ]
}

case "${1:-}" in
	build) [ $# -eq 2 ] || die "usage: package.sh build OUTDIR"; cmd_build "$2" ;;
	test) cmd_test ;;
	check) cmd_check ;;
	-h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
	*) die "usage: package.sh build OUTDIR | test | check" ;;
esac
