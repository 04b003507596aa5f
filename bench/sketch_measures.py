#!/usr/bin/python3
"""sketch_measures.py -- the measures the literature states Frequent Directions'
accuracy in, for each tenant's sketch in lsa_sketch (tenant, stats), against the
tenant's rows in lsa_docs (the Debian LSA corpus, bench/debian_lsa.py).

Run by bench/sketch_accuracy.sh after it has made lsa_sketch (perpca_sketch(v, ELL)
per tenant); alone: PGHOST=... /usr/bin/python3 bench/sketch_measures.py CORPUS_DIR.

The sketch is read out of PostgreSQL, not recomputed: its text form
(v3 n=... delta=... trace=... mean={...} mean_lo={...} sketch={rows x d values})
gives B, delta and the stored trace.  A is the tenant's rows, centred at their
mean, from the corpus's vectors.npy (the float4 values lsa_docs holds), in
numpy.  The sketch's rows sketch the centred co-moment M2 = A'A (its rows are
the centred increments of each row against the running mean, whose Gram
matrix is M2 exactly), so B'B is compared with A'A, not with A'A / n, and
the stored trace with ||A||_F^2.  Per sketch:
  - the projection-error ratio ||A - A P_k||_F^2 / ||A - A_k||_F^2 at k = K
    (default 10), P_k the projector on B's top-k right singular vectors, A_k
    the best rank-k approximation of A; plain FD's bound 1 + k/(ell - k);
    goal <= 1.05; and the same excess as a share of what the best rank-k
    subspace holds, (||A - A P_k||_F^2 - ||A - A_k||_F^2) / ||A_k||_F^2 (on
    a flat spectrum ||A - A_k||_F^2 is most of ||A||_F^2 and the ratio is
    near 1 for any fair subspace: this share says what the sketch lost);
  - for scale, the same ratio for the exact top-k subspace of half the
    tenant's rows (hashint4(id) even, as sketch_accuracy.sh's SPLIT): what
    sampling alone costs;
  - the covariance error ||A'A - B'B||_2 / ||A||_F^2, beside delta / ||A||_F^2
    (the sketch's own bound on it: 0 <= A'A - B'B <= delta I, checked:
    the smallest and largest eigenvalues of A'A - B'B against 0 and delta);
  - the stored trace against ||A||_F^2 and the stored mean against A's.
Printed per half of the tenants (tuning, held-out): every tenant, then the
minimum, median and maximum of each measure and how many sketches meet the goal.
"""
import os
import re
import sys

import numpy as np
import psycopg

K = int(os.environ.get("K", "10"))
GOAL = 1.05


def parse_sketch(text, d):
    """n, ell, delta, trace, mean and B (rows x d) of a sketch's text form."""
    field = lambda name: re.search(rf" {name}=([^ ]+)", text).group(1)
    vals = lambda name: np.array(re.search(rf" {name}={{([^}}]*)}}", text).group(1).split(","), dtype=np.float64)
    rows = int(field("rows"))
    B = vals("sketch").reshape(rows, d) if rows > 0 else np.zeros((0, d))
    return (int(field("n")), int(field("ell")), float(field("delta")), float(field("trace")),
            vals("mean") + vals("mean_lo"), B)


def top_k(M):
    """The top-K eigenvectors of the symmetric M, as columns."""
    return np.linalg.eigh(M)[1][:, ::-1][:, :K]


def measures(A, mean, sk, even):
    """The measures of one sketch sk (parse_sketch) against the centred rows A and their mean;
    even marks the rows of one half, whose exact top-K subspace is measured the same way, for scale."""
    n, ell, delta, trace, smean, B = sk
    M2 = A.T @ A
    lam = np.linalg.eigvalsh(M2)[::-1]
    total = float(np.trace(M2))
    top = float(lam[:K].sum())
    tail = total - top
    Vk = np.linalg.svd(B, full_matrices=False)[2][:K].T if B.shape[0] else np.zeros((A.shape[1], 0))
    proj = total - float(np.trace(Vk.T @ M2 @ Vk))
    H = A[even] - A[even].mean(axis=0)
    Vh = top_k(H.T @ H)
    proj_h = total - float(np.trace(Vh.T @ M2 @ Vh))
    E = np.linalg.eigvalsh(M2 - B.T @ B)
    return {"n": n, "ell": ell, "rows": B.shape[0],
            "ratio": proj / tail if tail > 0 else 1.0,
            "lost": (proj - tail) / top if top > 0 else 0.0,
            "half_ratio": proj_h / tail if tail > 0 else 1.0,
            "cov": float(max(abs(E[0]), abs(E[-1]))) / total,
            "delta": delta / total,
            "low": float(E[0]) / total, "high": float(E[-1]) / total,
            "trace": abs(trace - total) / total,
            "mean": float(np.abs(smean - mean).max() / max(np.abs(mean).max(), 1e-300))}


def summary(name, vals, fmt):
    return f"{name} min {fmt % np.min(vals)}, median {fmt % np.median(vals)}, max {fmt % np.max(vals)}"


def report(half, rows):
    print(f"half '{half}': {len(rows)} sketches, k = {K}")
    print("  tenant          n  rows  ratio   lost/top-k half's  cov err   delta/|A|^2  A'A-B'B eigenvalues /|A|^2  trace err  mean err")
    for t, m in rows:
        print(f"  {t:<13}{m['n']:>6} {m['rows']:>4}  {m['ratio']:.4f}  {m['lost']:.2e}   {m['half_ratio']:.4f}  {m['cov']:.3e}  {m['delta']:.3e}    "
              f"[{m['low']:+.1e}, {m['high']:.3e}]        {m['trace']:.1e}    {m['mean']:.1e}")
    r = [m["ratio"] for _, m in rows]
    ell = rows[0][1]["ell"]
    print("  " + summary("projection-error ratio:", r, "%.4f") +
          f"; {sum(x <= GOAL for x in r)} of {len(r)} <= {GOAL} (goal); plain FD's bound 1 + k/(ell - k) = {1 + K / (ell - K):.4f}")
    print("  " + summary("for scale, the ratio of the exact top-k of half the rows (hashint4(id) even):",
                         [m["half_ratio"] for _, m in rows], "%.4f"))
    print("  " + summary(f"the same excess as a share of the top-{K} variance, (||A - A P_k||_F^2 - ||A - A_k||_F^2) / ||A_k||_F^2:",
                         [m["lost"] for _, m in rows], "%.2e"))
    print("  " + summary("covariance error ||A'A - B'B||_2 / ||A||_F^2:", [m["cov"] for _, m in rows], "%.3e"))
    print("  " + summary("its bound delta / ||A||_F^2:", [m["delta"] for _, m in rows], "%.3e") +
          f"; 0 <= A'A - B'B <= delta I within 1e-12 ||A||_F^2 in {sum(m['low'] >= -1e-12 and m['high'] <= m['delta'] + 1e-12 for _, m in rows)} of {len(rows)}")


def main():
    corpus = sys.argv[1]
    with psycopg.connect(autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("SELECT id, tenant, half, hashint4(id) & 1 = 0 FROM lsa_docs ORDER BY id")
        docs = cur.fetchall()
        even = np.array([r[3] for r in docs])
        ids = np.array([r[0] for r in docs])
        tenants = np.array([r[1] for r in docs])
        half = {r[1]: r[2] for r in docs}
        X = np.load(os.path.join(corpus, "vectors.npy"))[ids].astype(np.float64)
        cur.execute("SELECT tenant FROM lsa_sketch ORDER BY tenant")
        out = {"tune": [], "held": []}
        for (t,) in cur.fetchall():
            sk = parse_sketch(cur.execute("SELECT stats::text FROM lsa_sketch WHERE tenant = %s", (t,)).fetchone()[0], X.shape[1])
            Xt = X[tenants == t]
            mean = Xt.mean(axis=0)
            assert sk[0] == len(Xt), (t, sk[0], len(Xt))
            out[half[t]].append((t, measures(Xt - mean, mean, sk, even[tenants == t])))
        for h in ("tune", "held"):
            if out[h]:
                report(h, sorted(out[h], key=lambda r: -r[1]["n"]))


if __name__ == "__main__":
    main()
