# bench/versus.sh -- sourced by the benchmarks that compare this tree with a
# released version in the same run (gauntlet.sh, write_bench.sh): two private
# installations, a throwaway cluster on each, and the backend CPU time of SQL.
#
#   OLD_REF=v0.4.0       the tag to compare with (default: the last release)
#   NEW=host:port        use a running server for this tree instead of building
#   OLD=host:port        the same for the old version; OLD=- skips it
#
# The caller sources scripts/lib.sh first and sets BENCH, TMP and PSQL.  As
# root, versus_as_user re-runs the caller as PERPCA_RUN_USER (PostgreSQL
# refuses root), with the old version's source exported from its tag; knobs
# named in VERSUS_KNOBS pass through as PERPCA_VERSUS_<knob>.

OLD_REF=${OLD_REF:-${PERPCA_VERSUS_OLD_REF:-v0.4.0}}
OV=${OLD_REF#v}

# As root: run the script $1 again as the unprivileged user (with the rest of
# the arguments) and exit with its status.  Does nothing for a normal user.
versus_as_user() {
	local script=$1 rc=0 k
	shift
	[ "$(id -u)" -eq 0 ] && [ -z "${NEW:-}" ] || return 0
	[ -n "${PERPCA_STAGE:-}" ] && die "re-executed as root: refusing to loop"
	ensure_packages
	PERPCA_VERSUS_OLD_SRC=$(mktemp -d /tmp/perpca-old.XXXXXX)
	git -C "$REPO_ROOT" archive "$OLD_REF" | tar -C "$PERPCA_VERSUS_OLD_SRC" -xf -
	chmod -R a+rX "$PERPCA_VERSUS_OLD_SRC"
	export PERPCA_VERSUS_OLD_SRC PERPCA_VERSUS_OLD_REF=$OLD_REF PERPCA_VERSUS_OLD=${OLD:-}
	for k in ${VERSUS_KNOBS:-}; do [ -n "${!k+x}" ] && export "PERPCA_VERSUS_$k=${!k}"; done
	as_user "../bench/$script" 0 "$@" || rc=$?
	rm -rf "$PERPCA_VERSUS_OLD_SRC"
	exit "$rc"
}

# The knobs passed through by versus_as_user, back under their own names.
versus_knobs() {
	local k v
	for k in ${VERSUS_KNOBS:-}; do
		v=PERPCA_VERSUS_$k
		[ -z "${!k+x}" ] && [ -n "${!v+x}" ] && export "$k=${!v}"
	done
	OLD=${OLD:-${PERPCA_VERSUS_OLD:-}}
}

SERVERS=() SOCKS=()
versus_cleanup() {
	local w
	for w in "${SERVERS[@]}"; do
		"$w/inst$PG_SYS_LIB/bin/pg_ctl" -D "$w/data" -m fast -w stop >/dev/null 2>&1 || true
		rm -rf "$w"
	done
	for w in "${SOCKS[@]}"; do rm -rf "$w"; done
	rm -rf "$TMP"
}

# Build the tree $2 into a private installation and start a cluster on it;
# prints "scratch-dir socket port".
versus_server() {
	local REPO_ROOT=$2
	make_work "versus-$1"
	say "building $1 from $2" >&2
	build_tree >&2 || die "build of $1 failed"
	private_install >&2 || die "private installation of $1 failed"
	cluster_start >&2 || die "cluster of $1 failed"
	"$PGBIN/psql" -X -q -c "CREATE EXTENSION perpca" >&2
	echo "$WORK $SOCK $PGPORT"
}

# Start (or find) both servers: NEW_HOST/NEW_PORT and OLD_HOST/OLD_PORT
# (OLD_HOST empty when OLD=-); new_psql and old_psql run psql on them.
versus_servers() {
	local w
	trap versus_cleanup EXIT
	if [ -n "${NEW:-}" ]; then
		NEW_HOST=${NEW%:*} NEW_PORT=${NEW##*:}
	else
		read -r w NEW_HOST NEW_PORT < <(versus_server now "$REPO_ROOT") || die "no server for this tree"
		SERVERS+=("$w") SOCKS+=("$NEW_HOST")
	fi
	if [ "${OLD:-}" = - ]; then
		OLD_HOST=""
	elif [ -n "${OLD:-}" ]; then
		OLD_HOST=${OLD%:*} OLD_PORT=${OLD##*:}
	else
		[ -n "${PERPCA_VERSUS_OLD_SRC:-}" ] || {
			PERPCA_VERSUS_OLD_SRC=$TMP/old
			mkdir -p "$PERPCA_VERSUS_OLD_SRC"
			git -C "$REPO_ROOT" archive "$OLD_REF" | tar -C "$PERPCA_VERSUS_OLD_SRC" -xf -
		}
		read -r w OLD_HOST OLD_PORT < <(versus_server "$OLD_REF" "$PERPCA_VERSUS_OLD_SRC") || die "no server for $OLD_REF"
		SERVERS+=("$w") SOCKS+=("$OLD_HOST")
	fi
}
new_psql() { PGHOST=$NEW_HOST PGPORT=$NEW_PORT PGDATABASE=${DB:-postgres} "${PSQL[@]}" "$@"; }
old_psql() { PGHOST=$OLD_HOST PGPORT=$OLD_PORT PGDATABASE=${DB:-postgres} "${PSQL[@]}" "$@"; }

# "cpu_s" of the backend running the SQL in file $1 with psql command $2...:
# its time on a CPU (/proc/PID/schedstat, nanoseconds) read by psql before
# and after the SQL, in the same session (the library already loaded); the
# output in $TMP/out.
session_cpu() {
	local file=$1
	shift
	{
		echo "LOAD 'perpca';"
		echo "SELECT pg_backend_pid() AS pid \\gset"
		echo "\\setenv VERSUS_PID :pid"
		echo "\\! cut -d' ' -f1 /proc/\$VERSUS_PID/schedstat > $TMP/cpu0"
		cat "$file"
		echo "\\! cut -d' ' -f1 /proc/\$VERSUS_PID/schedstat > $TMP/cpu1"
	} >"$TMP/run.sql"
	"$@" -f "$TMP/run.sql" >"$TMP/out"
	echo "scale=3; ($(cat "$TMP/cpu1") - $(cat "$TMP/cpu0")) / 1000000000" | bc
}
