#!/usr/bin/env bash
# bench/sketch_accuracy.sh -- accuracy on real data: a fit on sketched
# statistics (perpca_sketch(v, ELL)) against the fit on the exact ones (perpca_stats(v)),
# on the Debian LSA corpus at d = 1536 (bench/debian_lsa.py), R1 + R2 = 5 + 5, ELL = 64.
#
#   PGHOST=... PGPORT=... PGDATABASE=... nice -n 10 bash bench/sketch_accuracy.sh [CORPUS_DIR]
#   ELL=64 R1=5 R2=5 HALF=both SCALE=1 SPLIT=1 POLISH=1 NUMPY=1 MEASURES=1 K=10 SEED= (defaults)
#
# HALF: which tenants are fitted.  The corpus's tenants were split into a tuning
# half and a held-out half before anything was tuned (debian_lsa.py); the
# sketch's shrink (sketch.c's alpha) was chosen on 'tune' only.  HALF=tune or
# HALF=held fits that half; HALF=both fits each half separately, tuning half
# first, and prints both; HALF=all fits all tenants in one fit.
# SEED=n feeds each tenant's rows to perpca_sketch in an order shuffled by n
# (ORDER BY hashint4(id + n)); Frequent Directions depends on the order, and
# without SEED the order is the plan's.
# SCALE=0 leaves out the fits from a random start below, SPLIT=0 the split-row
# fits, POLISH=0 the polished fit (each costs about one or two exact fits per
# half), NUMPY=0 the numpy check (a few minutes a half).
#
# Both fits use the default options.  Printed per half, with the goals:
#   - objective: the sketched fit's global components evaluated on the exact
#     statistics (perpca_fit on them with init => 'given', start => the sketched
#     fit's components, rounds => 0: the engine keeps U and takes each client's
#     best response V_i) against the exact fit's objective; goal: within 1e-3
#     relative;
#   - the global components' projector distance ||U1 U1' - U2 U2'||_F (Frobenius
#     norm; the largest principal angle's sine, the spectral norm, beside it,
#     and the sines of all R1 principal angles); goal <= 0.05, the literal goal;
#   - POLISH: the exact fit polished from the sketched fit's components
#     (init => 'given', start => them): the exact optimum the sketched fit's
#     basin ascends to.  The shortfall against the better of the two exact
#     optima, split into the basins' gap (exact fit - polished) and the
#     sketch's error inside its own basin (polished - sketched components);
#     the projector distance from the sketched fit to the polished optimum (the
#     fair measure of the sketch's error in U: its distance to an exact
#     optimum, beside the literal goal), and from the exact fit to it (which
#     basin: two exact optima);
#   - NUMPY: the objectives recomputed in numpy, independently of the fit's
#     eigensolvers, S_i = perpca_covariance(exact statistics): for a fit's U,
#     with the best local components, sum_i 1/2 (tr(U'S_iU) + the R2 largest
#     eigenvalues of (I - UU')S_i(I - UU')); and at the sketched fit's own
#     components W_i = [U, V_i], sum_i 1/2 tr(W_i'S_iW_i), the goal's literal
#     measure.  Where the engine's evaluation falls below numpy's best-local
#     figure at the same U, one of its best responses fell short, and it says
#     so;
#   - the sketches' delta (perpca_last_fit_clients(): sum over tenants of
#     delta_i / n_i, and the largest delta_i / trace(M2_i));
#   - the bound: the sketched fit's reported perpca_last_fit().sketch_bound (the
#     exact objective of any components lies between the sketched one and it
#     plus the bound) against exact - sketched objective at the sketched fit's
#     components and at the exact fit's; goal: both in [0, bound];
#   - SCALE: an exact fit from a random start (init => 'random', seed => 1) and
#     a sketched fit from the same start: the exact fit's objective and distance
#     to the default exact fit (how sharply the exact statistics determine the
#     global subspace), the sketched one's shortfall and distance against it
#     (same start, same search), and the sketched fit's distance to the nearest
#     of the exact optima found;
#   - SPLIT: exact fits on two disjoint halves of each tenant's rows (even and
#     odd hashint4(id)): their projector distance to each other, to the exact
#     fit and to the sketched fit (the data's own uncertainty about U, on half
#     the rows each); and the sketched fit's distance to the exact fit over
#     the two halves' distance to each other, goal <= 0.5;
#   - MEASURES: Frequent Directions' own measures, sketch by sketch
#     (bench/sketch_measures.py, after the fits): the projection-error ratio
#     ||A - A P_k||_F^2 / ||A - A_k||_F^2 at k = K (goal <= 1.05) and the
#     covariance error ||A'A - B'B||_2 / ||A||_F^2, per half of the tenants.
# The corpus and lsa_docs/lsa_stats are made as bench/pgvector_recall.sh makes
# them (bench/lsa_load.sh); the sketches go into lsa_sketch.  Needs perpca_vector
# with perpca_sketch(vector, int), python3-numpy and python3-psycopg.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=${1:-/tmp/perpca-lsa}
export ELL=${ELL:-64} R1=${R1:-5} R2=${R2:-5} HALF=${HALF:-both} SCALE=${SCALE:-1} SPLIT=${SPLIT:-1} POLISH=${POLISH:-1} NUMPY=${NUMPY:-1} SEED=${SEED:-}
export MEASURES=${MEASURES:-1} K=${K:-10}
case $HALF in tune|held|both|all) ;; *) echo "HALF must be tune, held, both or all" >&2; exit 2;; esac
. "$here/lsa_load.sh"
lsa_load "$corpus"
OPENBLAS_NUM_THREADS=1 /usr/bin/python3 - <<'PY'
import json, os, time
import numpy as np
import psycopg

ell, r1, r2 = (int(os.environ[k]) for k in ("ELL", "R1", "R2"))
halves = {"both": ["tune", "held"]}.get(os.environ["HALF"], [os.environ["HALF"]])
conn = psycopg.connect(autocommit=True)
cur = conn.cursor()
cur.execute("SET max_parallel_workers_per_gather = 0; SET jit = off")
cur.execute("DROP TABLE IF EXISTS lsa_half")
cur.execute("CREATE TABLE lsa_half AS SELECT DISTINCT tenant, half FROM lsa_docs")
where = "" if halves == ["all"] else \
    " WHERE tenant IN (SELECT tenant FROM lsa_half WHERE half IN (%s))" % ", ".join(f"'{h}'" for h in halves)
t0 = time.time()
cur.execute("DROP TABLE IF EXISTS lsa_sketch")
order = f" ORDER BY hashint4(id + {int(os.environ['SEED'])})" if os.environ["SEED"] else ""
cur.execute(f"CREATE TABLE lsa_sketch AS SELECT tenant, perpca_sketch(v, {ell}{order}) AS stats FROM lsa_docs{where} GROUP BY tenant")
print(f"perpca_sketch(v, {ell}{order}) of {cur.execute(f'SELECT count(*) FROM lsa_docs{where}').fetchone()[0]} rows: "
      f"{time.time() - t0:.1f} s; forms: " + ", ".join(f"{f} {c}" for f, c in cur.execute(
          "SELECT perpca_stats_form(stats), count(*) FROM lsa_sketch GROUP BY 1 ORDER BY 1")))


def fit(table, half, name, extra=""):
    """Fit the half's tenants of table into table name; perpca_last_fit() as a dict."""
    sel = f"SELECT tenant, stats FROM {table}" + ("" if half == "all" else
                                                  f" WHERE tenant IN (SELECT tenant FROM lsa_half WHERE half = ''{half}'')")
    cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE {name} AS SELECT * FROM perpca_fit('{sel}', {r1}, {r2}{extra})")
    cur.execute("SELECT to_jsonb(l) FROM perpca_last_fit() l")
    return cur.fetchone()[0]


def evaluate(table, half, comps):
    """The objective on table's statistics at the components of fit table comps."""
    return fit(table, half, "acc_eval", f", init => 'given', start => 'SELECT client, kind, component, pc FROM {comps}', rounds => 0")["objective"]


def globals_(name):
    cur.execute(f"SELECT pc FROM {name} WHERE kind = 'global' ORDER BY component")
    return np.array([np.array(r[0], dtype=float) for r in cur.fetchall()]).T


def sines(A, B):
    """The sines of the principal angles between span A and span B, largest first."""
    c = np.clip(np.linalg.svd(A.T @ B, compute_uv=False), 0, 1)
    return " ".join(f"{x:.3f}" for x in np.sqrt(1 - c ** 2)[::-1])


def dist(what, A, B, note, goal=True):
    """Print the projector distance between global components A and B (Frobenius; with goal, against the goal) and the angles."""
    f = float(np.linalg.norm(A @ A.T - B @ B.T))
    print(f"  projector distance, {what}: {f:.4f} (" + (f"goal <= 0.05: {'met' if f <= 0.05 else 'NOT met'}; " if goal else "") + f"{note})")
    print(f"    principal angles' sines: {sines(A, B)}")


def numpy_objective(half, Us, own=None):
    """sum_i 1/2 (tr(U'S_iU) + top-r2 eigenvalues of P S_i P), P = I - UU', for each U in Us; then, if own
    names a fit's table, sum_i 1/2 tr(W_i'S_iW_i) at that fit's own components W_i = [U, V_i]."""
    Uo = globals_(own) if own is not None else None
    cur.execute("SELECT tenant FROM lsa_stats" +
                ("" if half == "all" else f" WHERE tenant IN (SELECT tenant FROM lsa_half WHERE half = '{half}')"))
    tot = [0.0] * (len(Us) + (own is not None))
    for (t,) in cur.fetchall():
        S = np.array(cur.execute("SELECT perpca_covariance(stats) FROM lsa_stats WHERE tenant = %s", (t,), binary=True).fetchone()[0], dtype=float)
        for j, U in enumerate(Us):
            SU = S @ U
            PSP = S - U @ SU.T - SU @ U.T + U @ (U.T @ SU) @ U.T
            tot[j] += 0.5 * (np.trace(U.T @ SU) + np.linalg.eigvalsh(PSP)[-r2:].sum())
        if own is not None:
            cur.execute(f"SELECT pc FROM {own} WHERE kind = 'local' AND client = %s ORDER BY component", (t,))
            W = np.hstack([Uo] + [np.array(r[0], dtype=float)[:, None] for r in cur.fetchall()])
            tot[-1] += 0.5 * np.trace(W.T @ S @ W)
    return tot


def accuracy(half):
    cur.execute("SELECT count(DISTINCT tenant), count(*) FROM lsa_docs" +
                ("" if half == "all" else f" WHERE tenant IN (SELECT tenant FROM lsa_half WHERE half = '{half}')"))
    tenants, docs = cur.fetchone()
    print(f"half '{half}': {tenants} tenants, {docs} documents")
    ex = fit("lsa_stats", half, "acc_exact")
    sk = fit("lsa_sketch", half, "acc_sketch")
    cur.execute("SELECT sum(c.sketch_delta / c.n), max(c.sketch_delta / substring(s.stats::text FROM ' trace=([^ ]+) ')::float8) "
                "FROM perpca_last_fit_clients() c JOIN lsa_sketch s ON s.tenant = c.client")
    dsum, dmax = cur.fetchone()
    ex_at_sk = evaluate("lsa_stats", half, "acc_sketch")      # exact statistics, sketched fit's components
    sk_at_ex = evaluate("lsa_sketch", half, "acc_exact")      # sketched statistics, exact fit's components
    U1, U2 = globals_("acc_exact"), globals_("acc_sketch")
    proj_f = float(np.linalg.norm(U1 @ U1.T - U2 @ U2.T))
    proj_2 = float(np.linalg.norm(U1 @ U1.T - U2 @ U2.T, 2))
    bound = sk["sketch_bound"]
    rel = (ex["objective"] - ex_at_sk) / abs(ex["objective"])
    print(f"  fits {r1} + {r2}, default options; exact: {ex['rounds_run']} rounds, {ex['seconds']:.1f} s; "
          f"sketched: {sk['rounds_run']} rounds, {sk['seconds']:.1f} s")
    print(f"  the exact fit stopped: {ex['stopped']}")
    print(f"  exact fit's objective on exact statistics               {ex['objective']:.10g}")
    print(f"  sketched fit's components on exact statistics           {ex_at_sk:.10g}")
    print(f"  relative shortfall (exact - sketched at exact) / exact  {rel:.3e}   goal <= 1e-3: {'met' if rel <= 1e-3 else 'NOT met'}")
    print(f"  global projector distance, Frobenius                    {proj_f:.4f}      goal <= 0.05: {'met' if proj_f <= 0.05 else 'NOT met'}"
          f"  (spectral {proj_2:.4f})")
    print(f"    principal angles' sines, exact fit against sketched fit: {sines(U1, U2)}")
    Up = None
    if os.environ["POLISH"] != "0":
        pol = fit("lsa_stats", half, "acc_polish", ", init => 'given', start => 'SELECT client, kind, component, pc FROM acc_sketch'")
        Up = globals_("acc_polish")
        best = max(ex["objective"], pol["objective"])
        rel_b = (best - ex_at_sk) / abs(best)
        print(f"  exact fit polished from the sketched fit's components   {pol['objective']:.10g} ({pol['rounds_run']} rounds, stopped: {pol['stopped']})")
        print(f"  shortfall against the better exact optimum            {rel_b:.3e}   goal <= 1e-3: {'met' if rel_b <= 1e-3 else 'NOT met'}")
        # Which basin against sketch error: the polished fit is the exact optimum the sketched fit's
        # components ascend to.  The shortfall splits into the two basins' gap (exact fit - polished)
        # and the sketch's error inside its own basin (polished - sketched components), both / exact fit.
        basin, inside = (ex["objective"] - pol["objective"]) / abs(ex["objective"]), (pol["objective"] - ex_at_sk) / abs(ex["objective"])
        print(f"  the shortfall split: basins' gap (exact fit - polished) {basin:.3e} + sketch error in its basin (polished - sketched) {inside:.3e}")
        dist("sketched fit to the exact optimum polished from it", U2, Up,
             "the fair measure: distance to an exact optimum, " + ("the best known" if pol["objective"] >= ex["objective"] * (1 - 1e-6)
                                                                 else f"{(ex['objective'] - pol['objective']) / abs(ex['objective']):.1e} below the exact fit"))
        dist("exact fit to the exact optimum polished from the sketched fit", U1, Up, "two exact optima: which basin", False)
    if os.environ["NUMPY"] != "0":
        f_ex, f_sk, *f_p, f_own = numpy_objective(half, [U1, U2] + ([Up] if Up is not None else []), "acc_sketch")
        rel_n, rel_o = (f_ex - f_sk) / abs(f_ex), (f_ex - f_own) / abs(f_ex)
        print(f"  numpy, best local components: exact fit's U {f_ex:.10g}, sketched fit's U {f_sk:.10g}"
              + (f", polished fit's U {f_p[0]:.10g}" if f_p else ""))
        print(f"  numpy, the sketched fit's own components (U, V_i)     {f_own:.10g}")
        print(f"  relative shortfall by numpy, own components           {rel_o:.3e}   goal <= 1e-3: {'met' if rel_o <= 1e-3 else 'NOT met'}"
              f"  (the engine's evaluation above: {rel:.3e}{'' if abs(f_sk - ex_at_sk) <= 1e-9 * abs(f_sk) else '; it re-solves each V_i, and differs from numpy best locals by %.1e: a best response that fell short' % ((f_sk - ex_at_sk) / abs(f_sk))})")
        print(f"  relative shortfall by numpy, best local components    {rel_n:.3e}   goal <= 1e-3: {'met' if rel_n <= 1e-3 else 'NOT met'}")
        if f_p:
            b = max(f_ex, f_p[0])
            print(f"  by numpy, best locals, against the better exact optimum {(b - f_sk) / abs(b):.3e}   goal <= 1e-3: "
                  f"{'met' if (b - f_sk) / abs(b) <= 1e-3 else 'NOT met'}; split: basins' gap {(f_ex - f_p[0]) / abs(f_ex):.3e}, "
                  f"sketch error in its basin {(f_p[0] - f_sk) / abs(f_ex):.3e}")
    print(f"  sketches' delta: sum of delta_i / n_i {dsum:.6g}; largest delta_i / trace_i {dmax:.4g}")
    gap_s = ex_at_sk - sk["objective"]          # exact minus sketched objective, at the sketched fit's components
    gap_e = ex["objective"] - sk_at_ex          # and at the exact fit's
    ok = lambda g: "yes" if 0 <= g <= bound else "NO"
    print(f"  reported bound (perpca_last_fit().sketch_bound)         {bound:.6g}")
    print(f"  exact - sketched objective, sketched fit's components {gap_s:.6g}   in [0, bound]: {ok(gap_s)}")
    print(f"  exact - sketched objective, exact fit's components    {gap_e:.6g}   in [0, bound]: {ok(gap_e)}")
    if os.environ["SCALE"] != "0":
        # How well the exact statistics pin the global subspace down: a second exact fit from a random start;
        # and a sketched fit from the same random start, against it (the same start, so the same search).
        ex2 = fit("lsa_stats", half, "acc_exact2", ", init => 'random', seed => 1")
        U3 = globals_("acc_exact2")
        print(f"  for scale: an exact fit from a random start (init => 'random', seed => 1): objective {ex2['objective']:.10g} "
              f"({(ex['objective'] - ex2['objective']) / abs(ex['objective']):.3e} relative below the exact fit)")
        dist("exact fit to the exact fit from a random start", U1, U3, "two exact fits from different starts", False)
        sk2 = fit("lsa_sketch", half, "acc_sketch2", ", init => 'random', seed => 1")
        U4 = globals_("acc_sketch2")
        ex_at_sk2 = evaluate("lsa_stats", half, "acc_sketch2")
        print(f"  a sketched fit from the same random start: its components on exact statistics {ex_at_sk2:.10g} "
              f"({(ex2['objective'] - ex_at_sk2) / abs(ex2['objective']):.3e} relative below that exact fit)")
        dist("sketched fit to the exact fit, both from that random start", U4, U3, "same start, same search")
        dist("sketched fit from that random start to the default sketched fit", U4, U2, "two sketched optima: 0 if the sketch's objective has one", False)
        near = [("the exact fit", U1), ("the exact fit from a random start", U3)] + ([("the polished fit", Up)] if Up is not None else [])
        name, Un = min(near, key=lambda t: np.linalg.norm(U2 @ U2.T - t[1] @ t[1].T))
        dist(f"sketched fit to the nearest of the exact optima found ({name})", U2, Un, "beside the literal goal")
    if os.environ["SPLIT"] != "0":
        # The data's own uncertainty about U: exact fits on two disjoint halves of each tenant's rows.
        fa, fb = fit("lsa_split_a", half, "acc_split_a"), fit("lsa_split_b", half, "acc_split_b")
        Ua, Ub = globals_("acc_split_a"), globals_("acc_split_b")
        print(f"  for scale: exact fits on two disjoint halves of each tenant's rows (hashint4(id) even / odd): objectives "
              f"{fa['objective']:.10g}, {fb['objective']:.10g}")
        dist("between the two halves' exact fits", Ua, Ub, "sampling noise, each on half the rows", False)
        ab = float(np.linalg.norm(Ua @ Ua.T - Ub @ Ub.T))
        print(f"  sketched fit to the exact fit over the two halves' fits to each other: {proj_f:.4f} / {ab:.4f} = "
              f"{proj_f / ab:.3f}   goal <= 0.5: {'met' if proj_f <= 0.5 * ab else 'NOT met'}")
        print(f"    from the exact fit on all rows: {np.linalg.norm(U1 @ U1.T - Ua @ Ua.T):.4f} and {np.linalg.norm(U1 @ U1.T - Ub @ Ub.T):.4f}; "
              f"from the sketched fit: {np.linalg.norm(U2 @ U2.T - Ua @ Ua.T):.4f} and {np.linalg.norm(U2 @ U2.T - Ub @ Ub.T):.4f}")


if os.environ["SPLIT"] != "0":
    t0 = time.time()
    for side, parity in (("a", 0), ("b", 1)):
        cur.execute(f"DROP TABLE IF EXISTS lsa_split_{side}")
        cur.execute(f"CREATE TABLE lsa_split_{side} AS SELECT tenant, perpca_stats(v) AS stats FROM lsa_docs"
                    + (where + " AND" if where else " WHERE") + f" hashint4(id) & 1 = {parity} GROUP BY tenant")
    print(f"perpca_stats(v) of each tenant's even and odd rows (by hashint4(id)): {time.time() - t0:.1f} s")
for h in halves:
    accuracy(h)
cur.execute("DROP TABLE IF EXISTS acc_eval, acc_exact, acc_sketch, acc_exact2, acc_sketch2, acc_polish, acc_split_a, acc_split_b, lsa_split_a, lsa_split_b, lsa_half")
PY
if [ "$MEASURES" != 0 ]; then
	echo "Frequent Directions' measures of each sketch perpca_sketch(v, $ELL) in lsa_sketch (bench/sketch_measures.py), load $(cut -d' ' -f1-3 /proc/loadavg):"
	OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/sketch_measures.py" "$corpus"
fi
