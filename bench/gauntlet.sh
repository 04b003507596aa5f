#!/usr/bin/env bash
# bench/gauntlet.sh -- the default fit on the gauntlet's real tables
# (bench/gauntlet.txt: 14 tables from Debian packages, a tuning half and a
# held-out half): objective, rounds and CPU seconds of the last release's
# default (OLD_REF, default v0.4.0) and of this tree's default, in the same run, against the best of N seeded random
# starts (bench/gauntlet_best.txt), per half and in total.
#
#   nice -n 10 bash bench/gauntlet.sh
#       builds this tree and OLD_REF (a tag: v0.4.0) into two private
#       installations, starts a throwaway cluster for each (as root: runs as
#       PERPCA_RUN_USER in a copy of the tree, like scripts/test.sh), and
#       removes it all at the end
#   TABLES="wine macro"       only these tables (default: all of gauntlet.txt)
#   STARTS=N                  fit N random starts even where gauntlet_best.txt
#                             has the table (default 0: use the table; 30 are
#                             fitted for a table it lacks, STARTS_LARGE (30)
#                             where d >= 300; -1: none (a table without a
#                             known best prints -)
#   SCREEN_TOL=1e-8           the random starts' tolerance before the best
#                             seed is fitted again at the default
#   NEW=host:port OLD=host:port   use running servers instead of building
#                             (OLD=- skips the old version)
#   OLD_REF=v0.3.0            compare with another tag
#   CSV_DIR=dir               keep the tables' rows there and reuse them
#
# CPU seconds are the backend's (from /proc: the servers must run on this
# machine); the machine is shared, CPU time is the steadier figure.  A fitted
# best that gauntlet_best.txt lacks prints its line for it.
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$BENCH/../scripts/lib.sh"
PERPCA_PACKAGES+=(python3-sklearn python3-statsmodels python3-pil bc)

# As root: the same script again as an unprivileged user (bench/versus.sh).
VERSUS_KNOBS="TABLES STARTS CSV_DIR"
# shellcheck source=bench/versus.sh
. "$BENCH/versus.sh"
[ -n "${CSV_DIR:-}" ] && [ "$(id -u)" -eq 0 ] && mkdir -p "$CSV_DIR" && chmod 777 "$CSV_DIR"
versus_as_user gauntlet.sh "$@"
versus_knobs
TABLES=${TABLES:-$(awk '!/^#/ && NF { print $1 }' "$BENCH/gauntlet.txt")}
STARTS=${STARTS:-0}
KNOWN=$BENCH/gauntlet_best.txt
PY=/usr/bin/python3
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
export OPENBLAS_NUM_THREADS=1
export PGOPTIONS="-c client_min_messages=warning"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/perpca-gauntlet.XXXXXX")
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
versus_servers

# The rows of table $1 into $TMP/$1.csv (from CSV_DIR when it has them).
rows() {
	if [ -n "${CSV_DIR:-}" ] && [ -s "$CSV_DIR/$1.csv" ]; then
		cp "$CSV_DIR/$1.csv" "$TMP/$1.csv"
		return
	fi
	case "$1" in
	digits | text | include | perl | man) make_rows "$1" >/dev/null ;;
	*) "$PY" "$BENCH/gauntlet_tables.py" "$1" "$TMP/$1.csv" 2>/dev/null ;;
	esac
	[ -n "${CSV_DIR:-}" ] && cp "$TMP/$1.csv" "$CSV_DIR/$1.csv"
	return 0
}

# "objective rounds cpu" of the default fit of $G at $1 + $2 on the server of
# psql command $3...; a fit under 0.5 s runs 3 times and keeps the least CPU
# (a 20 ms fit's CPU time is otherwise mostly noise).
default_fit() {
	local r1=$1 r2=$2 cpu best=""
	shift 2
	echo "SELECT count(*) FROM perpca_fit('SELECT client, stats FROM $G ORDER BY client', $r1, $r2);
	      SELECT objective, rounds_run FROM perpca_last_fit();" >"$TMP/fit.sql"
	for _ in 1 2 3; do
		cpu=$(session_cpu "$TMP/fit.sql" "$@")
		best=$(echo "$cpu $best" | awk '{ print ($2 == "" || $1 < $2) ? $1 : $2 }')
		[ "$(echo "$cpu >= 0.5" | bc)" = 1 ] && break
	done
	IFS='|' read -r obj rounds < <(tail -1 "$TMP/out")
	echo "$obj $rounds $best"
}

# The best objective of seeds 1..$3 (init 'random') at $1 + $2 on this tree's
# server: each seed to a gradient norm of 1e-8 lambda_max (SCREEN_TOL), then
# the best seed again at the default tolerance; prints "objective seed".
random_best() {
	new_psql -c "CREATE FUNCTION pg_temp.random_objective(s bigint, tol float8) RETURNS float8 LANGUAGE plpgsql AS \$\$
	  BEGIN PERFORM count(*) FROM perpca_fit('SELECT client, stats FROM $G', $1, $2, init => 'random', seed => s, tolerance => tol);
	        RETURN (SELECT objective FROM perpca_last_fit()); END \$\$;
	  SET client_min_messages = error;
	  CREATE TEMP TABLE seeds AS SELECT s, pg_temp.random_objective(s, ${SCREEN_TOL:-1e-8}) AS f FROM generate_series(1, $3) s;
	  SELECT greatest(max(f), pg_temp.random_objective((SELECT s FROM seeds ORDER BY f DESC LIMIT 1), NULL)) || ' ' ||
	         (SELECT s FROM seeds ORDER BY f DESC LIMIT 1) FROM seeds"
}

reached() { [ "$2" = - ] && echo - || awk -v a="$1" -v b="$2" 'BEGIN { print (a >= b - 1e-9 * (b < 0 ? -b : b)) ? "yes" : "NO" }'; }

printf '%-13s %-7s %5s %-5s | %-28s | %-28s | %-20s | %s\n' table half d r1+r2 "$OV: objective rounds CPU" "now: objective rounds CPU" "best of random starts" "reached ($OV / now), now/$OV CPU"
: >"$TMP/sums"
for t in $TABLES; do
	read -r half r1 r2 < <(awk -v t="$t" '$1 == t { print $2, $3, $4 }' "$BENCH/gauntlet.txt")
	[ -n "${half:-}" ] || die "table $t is not in gauntlet.txt"
	rows "$t"
	G=g_$t
	sum=$(sha256sum "$TMP/$t.csv" | cut -c1-16)
	load_stats "$G" "$t" new_psql
	d=$(new_psql -c "SELECT max(perpca_dim(stats)) FROM $G")
	old="- - -"
	if [ -n "$OLD_HOST" ]; then
		load_stats "$G" "$t" old_psql
		old=$(default_fit "$r1" "$r2" old_psql)
		old_psql -c "DROP TABLE $G"
	fi
	now=$(default_fit "$r1" "$r2" new_psql)
	known="" nstarts=""
	[ -f "$KNOWN" ] && read -r known nstarts < <(awk -v t="$t" -v s="$sum" -v r="$r1+$r2" '$1 == t && $2 == s && $3 == r { print $5, $4 }' "$KNOWN") || true
	if [ "$STARTS" -lt 0 ]; then
		known=${known:--} nstarts=${nstarts:-0}
	elif [ "$STARTS" -gt 0 ] || [ -z "$known" ]; then
		nstarts=$([ "$STARTS" -gt 0 ] && echo "$STARTS" || echo $((d >= 300 ? ${STARTS_LARGE:-30} : 30)))
		read -r fitted seed < <(random_best "$r1" "$r2" "$nstarts")
		[ -z "$known" ] && echo "    not in gauntlet_best.txt; its line: $t $sum $r1+$r2 $nstarts $(printf '%.9f' "$fitted") $seed ${SCREEN_TOL:-1e-8} $(date -u +%F)"
		[ -n "$known" ] && echo "    gauntlet_best.txt: $known (best of its starts); fitted now: $fitted of $nstarts"
		known=$fitted
	fi
	new_psql -c "DROP TABLE $G"
	read -r oobj orounds ocpu <<<"$old"
	read -r nobj nrounds ncpu <<<"$now"
	oreach=$([ "$oobj" = - ] && echo - || reached "$oobj" "$known")
	ratio=$([ "$ocpu" = - ] && echo - || echo "scale=2; $ncpu / $ocpu" | bc | sed 's/^\./0./')
	printf '%-13s %-7s %5s %-5s | %-28s | %-28s | %-20s | %s / %s, %sx\n' "$t" "$half" "$d" "$r1+$r2" \
		"$([ "$oobj" = - ] && echo - || printf '%.6f %s %.3fs' "$oobj" "$orounds" "$ocpu")" \
		"$(printf '%.6f %s %.3fs' "$nobj" "$nrounds" "$ncpu")" "$([ "$known" = - ] && echo "- (none known)" || printf '%.6f of %s' "$known" "$nstarts")" \
		"$oreach" "$(reached "$nobj" "$known")" "$ratio"
	echo "$half $oreach $(reached "$nobj" "$known") ${ocpu/-/0} $ncpu $orounds $nrounds" >>"$TMP/sums"
done
echo
awk -v ov="$OV" '{ h[$1]; n[$1]++; o[$1] += ($2 == "yes"); w[$1] += ($3 == "yes"); kn[$1] += ($3 != "-"); oc[$1] += $4; nc[$1] += $5; ro[$1] += $6; rn[$1] += $7;
       if ($4 > 0 && $5 / $4 > mx[$1]) mx[$1] = $5 / $4 }
     END { for (k in h) { printf "%-8s %d tables: best reached (of %d known) by %s %d, now %d; CPU %s %.2f s, now %.2f s (%.2fx, worst table %.2fx); rounds %d / %d\n",
                          k, n[k], kn[k], ov, o[k], w[k], ov, oc[k], nc[k], (oc[k] > 0 ? nc[k] / oc[k] : 0), mx[k], ro[k], rn[k];
                          N += n[k]; K += kn[k]; O += o[k]; W += w[k]; OC += oc[k]; NC += nc[k]; if (mx[k] > MX) MX = mx[k] }
           printf "all      %d tables: best reached (of %d known) by %s %d, now %d; CPU %s %.2f s, now %.2f s (%.2fx, worst table %.2fx)\n", N, K, ov, O, W, ov, OC, NC, (OC > 0 ? NC / OC : 0), MX }' "$TMP/sums" | sort
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(date -u '+%F %H:%M UTC')"
