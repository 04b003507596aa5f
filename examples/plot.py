#!/usr/bin/python3
"""Draw the pictures of the examples from the database (PNG files).

Run examples/digits.sql and examples/video.sql first (scripts/demo.sh
--examples does all of it), then:

    /usr/bin/python3 examples/plot.py [--out docs/examples]

Connects with the usual libpq environment (PGHOST, PGPORT, PGUSER,
PGDATABASE).  Needs python3-matplotlib and python3-psycopg2 (Debian); the
extension itself never does.  Every number drawn comes from SQL: the model
tables, perpca_evaluate, perpca_similarity, perpca_clusters, perpca_choose_ranks, the
model-aware projection functions and, when the extension has it,
perpca_last_fit_rounds().
"""
import argparse
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import psycopg2  # noqa: E402

DPI = 80


def rows(cur, sql, args=None):
    cur.execute(sql, args)
    return cur.fetchall()


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    print("wrote", path)


def image_grid(ax, vec, shape=(8, 8)):
    v = np.asarray(vec, float).reshape(shape)
    lim = np.abs(v).max() or 1.0
    ax.imshow(v, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_xticks([])
    ax.set_yticks([])


def digits_components(cur, out):
    g = rows(cur, "SELECT component, pc FROM digits.model_components WHERE kind = 'global' ORDER BY component")
    fig, axes = plt.subplots(1, len(g), figsize=(1.4 * len(g), 1.7))
    for ax, (k, pc) in zip(np.atleast_1d(axes), g):
        image_grid(ax, pc)
        ax.set_title("global %d" % k, fontsize=9)
    fig.suptitle("What all digits share (red +, blue -)", fontsize=10)
    save(fig, out, "digits_global.png")

    loc = rows(cur, """SELECT client::int, component, pc FROM digits.model_components
                        WHERE kind = 'local' ORDER BY client::int, component""")
    k = max(r[1] for r in loc)
    fig, axes = plt.subplots(k, 10, figsize=(10 * 0.9, k * 0.95))
    for digit, comp, pc in loc:
        ax = axes[comp - 1, digit]
        image_grid(ax, pc)
        if comp == 1:
            ax.set_title(str(digit), fontsize=10)
    fig.suptitle("What sets each digit apart: its local components (rows 1-%d)" % k, fontsize=10)
    save(fig, out, "digits_local.png")


def digits_explained(cur, out):
    r = rows(cur, """SELECT client::int, global_ratio, local_ratio
                       FROM perpca_evaluate('digits.model', 'SELECT label, pixels FROM digits.digits WHERE part = ''test''')
                      ORDER BY 1""")
    d = [x[0] for x in r]
    gl = np.array([x[1] for x in r])
    lo = np.array([x[2] for x in r])
    fig, ax = plt.subplots(figsize=(5, 2.6))
    ax.bar(d, gl, label="global", color="#4C72B0")
    ax.bar(d, lo, bottom=gl, label="local", color="#DD8452")
    ax.set_xticks(d)
    ax.set_xlabel("digit")
    ax.set_ylabel("share of held-out variance")
    ax.set_ylim(0, 1)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Explained variance per class (4 global + 4 local)", fontsize=10)
    save(fig, out, "digits_explained.png")


def digits_similarity(cur, out):
    r = rows(cur, "SELECT client_a::int, client_b::int, distance FROM perpca_similarity('digits.model', true)")
    M = np.zeros((10, 10))
    for a, b, dist in r:
        M[a, b] = dist
    fig, ax = plt.subplots(figsize=(3.6, 3.1))
    im = ax.imshow(M, cmap="viridis_r")
    ax.set_xticks(range(10))
    ax.set_yticks(range(10))
    fig.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title("Distance between local subspaces", fontsize=10)
    save(fig, out, "digits_similarity.png")


def digits_clusters(cur, out):
    """Classical MDS of the distances rho, coloured by perpca_clusters (as the paper's figure)."""
    r = rows(cur, "SELECT client_a::int, client_b::int, distance FROM perpca_similarity('digits.model', true)")
    D = np.zeros((10, 10))
    for a, b, dist in r:
        D[a, b] = dist
    J = np.eye(10) - 1.0 / 10
    B = -0.5 * J @ D @ J
    w, V = np.linalg.eigh(B)
    X = V[:, ::-1][:, :2] * np.sqrt(np.maximum(w[::-1][:2], 0))
    cl = dict(rows(cur, "SELECT client::int, cluster FROM perpca_clusters('digits.model', 3)"))
    fig, ax = plt.subplots(figsize=(3.6, 3.1))
    colors = plt.get_cmap("tab10")
    for digit in range(10):
        ax.scatter(X[digit, 0], X[digit, 1], s=160, color=colors(cl[digit] - 1), alpha=0.8)
        ax.annotate(str(digit), X[digit], ha="center", va="center", fontsize=9, color="white")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title("Digits by local subspace: MDS of rho,\ncolour = perpca_clusters (k = 3)", fontsize=9)
    save(fig, out, "digits_clusters.png")


def digits_heldout(cur, out):
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 2.8))
    names = {"perpca": "PerPCA", "indiv": "individual PCA", "cpca": "pooled PCA"}
    titles = {"all": "all training images (~144 per class)", "few": "15 training images per class"}
    for ax, regime in zip(axes, ("all", "few")):
        for method, style in (("perpca", "o-"), ("indiv", "s--"), ("cpca", "^:")):
            r = rows(cur, """SELECT n_global + n_local, heldout_error FROM digits.comparison
                              WHERE regime = %s AND method = %s ORDER BY 1""", (regime, method))
            ax.plot([x[0] for x in r], [x[1] for x in r], style, label=names[method], ms=4)
        ax.set_title(titles[regime], fontsize=9)
        ax.set_xlabel("components per class")
    axes[0].set_ylabel("held-out error")
    axes[0].legend(fontsize=8)
    fig.suptitle("Held-out reconstruction error (lower is better)", fontsize=10)
    fig.tight_layout()
    save(fig, out, "digits_heldout.png")


def digits_ranks(cur, out):
    r = rows(cur, "SELECT n_global, n_local, heldout_error, theta_est, recommended FROM digits.ranks")
    gs = sorted({x[0] for x in r})
    ls = sorted({x[1] for x in r})
    M = np.full((len(gs), len(ls)), np.nan)
    fig, ax = plt.subplots(figsize=(4.2, 3.4))
    for g, l, e, th, rec in r:
        M[gs.index(g), ls.index(l)] = e
    im = ax.imshow(M, cmap="magma_r", origin="lower")
    for g, l, e, th, rec in r:
        ax.text(ls.index(l), gs.index(g), "%.0f%s" % (e, "\n*" if rec else ""), ha="center", va="center",
                fontsize=7, color="white" if e > np.nanmean(M) else "black")
    ax.set_xticks(range(len(ls)), ls)
    ax.set_yticks(range(len(gs)), gs)
    ax.set_xlabel("n_local")
    ax.set_ylabel("n_global")
    fig.colorbar(im, ax=ax, shrink=0.8, label="held-out error")
    ax.set_title("perpca_choose_ranks (* = recommended)", fontsize=10)
    save(fig, out, "digits_ranks.png")


def video(cur, out, frames=(1, 8, 16, 24)):
    fig, axes = plt.subplots(len(frames), 3, figsize=(6.3, 1.45 * len(frames)))
    for i, f in enumerate(frames):
        r = rows(cur, "SELECT pixels, background, foreground FROM video.parts WHERE frame = %s ORDER BY row", (f,))
        X, B, F = (np.array([x[j] for x in r]) for j in range(3))
        for j, (img, cmap, vmin, vmax) in enumerate(((X, "gray", 0, 255), (B, "gray", 0, 255),
                                                     (np.abs(F), "magma", 0, None))):
            axes[i, j].imshow(img, cmap=cmap, vmin=vmin, vmax=vmax)
            axes[i, j].set_xticks([])
            axes[i, j].set_yticks([])
        axes[i, 0].set_ylabel("frame %d" % f, fontsize=8)
    for j, t in enumerate(("frame", "global part (background)", "|local part| (foreground)")):
        axes[0, j].set_title(t, fontsize=9)
    save(fig, out, "video.png")


def convergence(cur, out):
    """Objective and gradient per round: the paper's algorithm and the default solver."""
    if rows(cur, "SELECT to_regproc('perpca_last_fit_rounds') IS NULL")[0][0]:
        print("perpca_last_fit_rounds() is not in this build: no convergence picture")
        return
    src = "SELECT label, perpca_stats(pixels) FROM digits.digits WHERE part = ''train'' GROUP BY label"
    series = {}
    for solver in ("paper", "lbfgs"):
        cur.execute("SET client_min_messages = error")
        cur.execute("SELECT count(*) FROM perpca_fit('%s', 4, 4, solver => '%s')" % (src, solver))
        # the rounds of the start the fit kept; gradient norm (lbfgs) or KKT residual (paper)
        series[solver] = rows(cur, """
            SELECT r.round, r.objective, coalesce(r.gradient_norm, r.kkt_residual)
              FROM perpca_last_fit_rounds() r
             WHERE r.start IS NOT DISTINCT FROM (SELECT start FROM perpca_last_fit())
             ORDER BY r.round""")
    best = max(x[1] for r in series.values() for x in r)
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 2.8))
    labels = {"paper": "paper's Algorithm 2", "lbfgs": "L-BFGS (default)"}
    for solver, r in series.items():
        axes[0].loglog([x[0] for x in r], [max(best - x[1], 1e-9 * abs(best)) for x in r], label=labels[solver])
        axes[1].loglog([x[0] for x in r], [x[2] for x in r], label=labels[solver])
    axes[0].set_ylabel("objective below the best")
    axes[1].set_ylabel("KKT residual (paper) /\ngradient norm (L-BFGS)")
    for ax in axes:
        ax.set_xlabel("round")
        ax.legend(fontsize=8)
    fig.suptitle("Convergence on the digits (4 global + 4 local), from perpca_last_fit_rounds()", fontsize=10)
    fig.tight_layout()
    save(fig, out, "convergence.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join("docs", "examples"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    digits_components(cur, a.out)
    digits_explained(cur, a.out)
    digits_similarity(cur, a.out)
    digits_clusters(cur, a.out)
    digits_heldout(cur, a.out)
    digits_ranks(cur, a.out)
    video(cur, a.out)
    convergence(cur, a.out)


if __name__ == "__main__":
    main()
