#!/usr/bin/python3
"""pgvector_recall.py -- per-tenant reduction for pgvector indexes: recall@10 of perpca's scores
against pooled PCA's at the same width, on the Debian LSA corpus (bench/debian_lsa.py).

Run by bench/pgvector_recall.sh, which loads the corpus into lsa_docs (id, tenant,
package, half, v vector(d)) and its exact statistics into lsa_stats (tenant,
stats).  Connects with the libpq variables (python3-psycopg).

For each width r of WIDTHS (default 16 32 64):
  - Personalized PCA: perpca_train on lsa_stats with n_global = r - l and
    n_local = l, for l in r/4, r/2, 3r/4 (FIT_OPTIONS, default one start from
    'dispca', no hops, tolerance 1e-6: the default search costs 3-6x the time);
  - pooled PCA: perpca_train with n_global = r, method => 'cpca';
  - for reference, each tenant's own PCA (method => 'indiv', n_local = r): what
    an index per tenant could have if each kept its own r directions.
Each document's scores (perpca_model_scores, a vector(r)) are compared with the
exact neighbours in the original space: the 10 documents of the same tenant
nearest by cosine (the vectors have unit length, so L2 orders them alike),
the query itself left out.  recall@10 = the share of those 10 found.
  - brute force in the score space (numpy, L2): what the reduction alone keeps;
  - pgvector: the scores stored as vector(r) and halfvec(r) in a table
    partitioned by tenant (LIST), an HNSW index per tenant (the parent's index:
    m = 16, ef_construction = 64, L2 ops), queried with WHERE tenant = ...
    ORDER BY s <-> q LIMIT 11 (hnsw.ef_search = 40; enable_seqscan off, or the
    planner sorts the small partitions instead), for the split l chosen on the
    tuning half and for pooled PCA.
The split l is chosen on the tuning half of the tenants (bench/debian_lsa.py
splits them before anything runs); every figure is printed for both halves.
Queries: up to QUERIES (50) documents of each tenant, evenly spaced by id.
"""
import json
import os
import sys
import time

import numpy as np
import psycopg
from psycopg import sql

WIDTHS = [int(w) for w in os.environ.get("WIDTHS", "16 32 64").split()]
QUERIES = int(os.environ.get("QUERIES", "50"))
K = 10
# One start, no hops, a loose tolerance: the neighbours do not need the last digits of the optimum,
# and the default search costs 3-6x the time at d = 1536.
FIT_OPTIONS = os.environ.get("FIT_OPTIONS", ", init => 'dispca', hops => 0, tolerance => 1e-6")


def vec(text):
    return np.array(text.strip("[]").split(","), dtype=np.float64)


def load(cur, corpus):
    cur.execute("SELECT id, tenant, half FROM lsa_docs ORDER BY id")
    rows = cur.fetchall()
    ids = np.array([r[0] for r in rows])
    X = np.load(os.path.join(corpus, "vectors.npy"))[ids].astype(np.float64)
    tenants = np.array([r[1] for r in rows])
    half = {r[1]: r[2] for r in rows}
    return ids, X, tenants, half


def exact_neighbours(X, tenants):
    """Per tenant: the query rows (positions) and their exact 10 neighbours (positions)."""
    out = {}
    for t in sorted(set(tenants)):
        pos = np.flatnonzero(tenants == t)
        qpos = pos[np.linspace(0, len(pos) - 1, min(QUERIES, len(pos))).round().astype(int)]
        sims = X[qpos] @ X[pos].T
        sims[np.arange(len(qpos)), np.searchsorted(pos, qpos)] = -np.inf
        out[t] = (pos, qpos, pos[np.argsort(-sims, axis=1, kind="stable")[:, :K]])
    return out


def brute_recall(S, truth):
    """Per tenant: mean recall@10 of L2 neighbours in the score space S (rows = positions)."""
    rec = {}
    for t, (pos, qpos, nn) in truth.items():
        d2 = ((S[qpos][:, None, :] - S[pos][None, :, :]) ** 2).sum(axis=2)
        d2[np.arange(len(qpos)), np.searchsorted(pos, qpos)] = np.inf
        found = pos[np.argsort(d2, axis=1, kind="stable")[:, :K]]
        rec[t] = np.mean([len(set(a) & set(b)) / K for a, b in zip(found, nn)])
    return rec


def train(cur, model, g, l, method="perpca"):
    cur.execute("SELECT perpca_drop(%s) WHERE to_regclass(%s) IS NOT NULL", (model, model + "_info"))
    t0 = time.time()
    cur.execute("SELECT rounds_run, objective FROM perpca_train(%s, 'SELECT tenant, stats FROM public.lsa_stats',"
                " n_global => %s, n_local => %s, method => %s" + FIT_OPTIONS + ")", (model, g, l, method))
    rounds, obj = cur.fetchone()
    return rounds, obj, time.time() - t0


def scores(cur, model, ids):
    cur.execute("SELECT id, perpca_model_scores(%s, tenant, v)::text FROM lsa_docs ORDER BY id", (model,))
    rows = cur.fetchall()
    assert [r[0] for r in rows] == list(ids)
    return np.array([vec(r[1]) for r in rows])


def index_recall(cur, model, r, tenants_list, truth, ids):
    """recall@10 through pgvector's HNSW indexes, vector(r) and halfvec(r), per tenant."""
    tab = "lsa_sc_" + model
    cur.execute(f"DROP TABLE IF EXISTS {tab}")
    cur.execute(f"CREATE TABLE {tab} (id int, tenant text, s vector({r}), h halfvec({r})) PARTITION BY LIST (tenant)")
    for i, t in enumerate(tenants_list):
        cur.execute(sql.SQL("CREATE TABLE {} PARTITION OF {} FOR VALUES IN ({})").format(
            sql.Identifier(f"{tab}_{i}"), sql.Identifier(tab), sql.Literal(t)))
    cur.execute(f"INSERT INTO {tab} SELECT id, tenant, s, s::halfvec FROM "
                f"(SELECT id, tenant, perpca_model_scores(%s, tenant, v) AS s FROM lsa_docs) x", (model,))
    t0 = time.time()
    cur.execute(f"CREATE INDEX ON {tab} USING hnsw (s vector_l2_ops)")
    cur.execute(f"CREATE INDEX ON {tab} USING hnsw (h halfvec_l2_ops)")
    build = time.time() - t0
    cur.execute(f"ANALYZE {tab}")
    qids = [int(ids[q]) for t in tenants_list for q in truth[t][1]]
    out = {}
    cur.execute("SET enable_seqscan = off")     # small partitions: the planner would sort them instead
    for col in ("s", "h"):
        cur.execute(f"""SELECT q.id, ARRAY(SELECT d.id FROM {tab} d WHERE d.tenant = q.tenant
                                           ORDER BY d.{col} <-> q.{col} LIMIT {K + 1})
                          FROM {tab} q WHERE q.id = ANY(%s)""", (qids,))
        found = {a: b for a, b in cur.fetchall()}
        rec = {}
        for t in tenants_list:
            pos, qpos, nn = truth[t]
            rec[t] = np.mean([len(set(x for x in found[int(ids[q])] if x != int(ids[q]))
                                  .intersection(int(ids[p]) for p in n)) / K
                              for q, n in zip(qpos, nn)])
        out[col] = rec
    cur.execute(f"EXPLAIN SELECT id FROM {tab} WHERE tenant = %s ORDER BY s <-> (SELECT s FROM {tab} LIMIT 1) LIMIT 11",
                (tenants_list[0],))
    plan = " ".join(r[0] for r in cur.fetchall())
    assert "_s_idx" in plan, plan
    cur.execute("RESET enable_seqscan")
    cur.execute(f"DROP TABLE {tab}")
    return out, build


def halves(rec, half):
    return {h: float(np.mean([v for t, v in rec.items() if half[t] == h])) for h in ("tune", "held")}


def main():
    corpus = sys.argv[1]
    with psycopg.connect(autocommit=True) as conn:
        cur = conn.cursor()
        ids, X, tenants, half = load(cur, corpus)
        tenants_list = sorted(set(tenants))
        truth = exact_neighbours(X, tenants)
        sizes = {t: int((tenants == t).sum()) for t in tenants_list}
        print(f"{len(ids)} documents, d = {X.shape[1]}, {len(tenants_list)} tenants "
              f"({sum(h == 'tune' for h in half.values())} tuning, {sum(h == 'held' for h in half.values())} held out); "
              f"up to {QUERIES} queries per tenant, {sum(len(v[1]) for v in truth.values())} in all")
        per_tenant, summary = {}, []
        for r in WIDTHS:
            cands = {}
            for l in (r // 4, r // 2, 3 * r // 4):
                m = f"lsa_pp_{r}_{l}"
                rounds, obj, sec = train(cur, m, r - l, l)
                cands[l] = (m, brute_recall(scores(cur, m, ids), truth), rounds, sec)
                hv = halves(cands[l][1], half)
                print(f"  r = {r:3d}: perpca {r - l} + {l}: {rounds} rounds, {sec:.0f} s; brute-force recall@10 "
                      f"tune {hv['tune']:.3f}, held {hv['held']:.3f}", flush=True)
            pm = f"lsa_cpca_{r}"
            rounds, obj, sec = train(cur, pm, r, 0, "cpca")
            pooled = brute_recall(scores(cur, pm, ids), truth)
            hv = halves(pooled, half)
            print(f"  r = {r:3d}: pooled PCA {r}: {sec:.0f} s; brute-force recall@10 tune {hv['tune']:.3f}, held {hv['held']:.3f}",
                  flush=True)
            im = f"lsa_indiv_{r}"
            train(cur, im, 0, r, "indiv")
            indiv = brute_recall(scores(cur, im, ids), truth)
            hv = halves(indiv, half)
            print(f"  r = {r:3d}: each tenant's own PCA {r} (method 'indiv'): brute-force recall@10 tune {hv['tune']:.3f}, "
                  f"held {hv['held']:.3f}", flush=True)
            best = max(cands, key=lambda l: (halves(cands[l][1], half)["tune"], -l))
            m = cands[best][0]
            pp_idx, pp_build = index_recall(cur, m, r, tenants_list, truth, ids)
            pc_idx, pc_build = index_recall(cur, pm, r, tenants_list, truth, ids)
            row = {"r": r, "split": f"{r - best} + {best}", "build_s": [round(pp_build, 1), round(pc_build, 1)]}
            for name, rec in (("pp_brute", cands[best][1]), ("pooled_brute", pooled), ("indiv_brute", indiv), ("pp_vector", pp_idx["s"]),
                              ("pp_halfvec", pp_idx["h"]), ("pooled_vector", pc_idx["s"]), ("pooled_halfvec", pc_idx["h"])):
                row[name] = halves(rec, half)
                for t in tenants_list:
                    per_tenant.setdefault(t, {})[f"{name}_{r}"] = rec[t]
            row["all_splits"] = {f"{r - l} + {l}": halves(c[1], half) for l, c in cands.items()}
            row["tenants_pp_ge_pooled"] = {h: sum(pp_idx["s"][t] >= pc_idx["s"][t] for t in tenants_list if half[t] == h)
                                           for h in ("tune", "held")}
            summary.append(row)
            for mm in [c[0] for c in cands.values()] + [pm, im]:
                cur.execute("SELECT perpca_drop(%s)", (mm,))
        print()
        print("recall@10 (mean over tenants), tuning half / held-out half; exact neighbours by cosine in the original space")
        print("| r | perpca split (chosen on tuning) | perpca brute | pooled brute | perpca HNSW vector | pooled HNSW vector "
              "| perpca HNSW halfvec | pooled HNSW halfvec | tenants perpca >= pooled (vector) | own PCA per tenant, brute |")
        print("|---:|---|---|---|---|---|---|---|---|---|")
        f = lambda h: f"{h['tune']:.3f} / {h['held']:.3f}"
        for row in summary:
            n = row["tenants_pp_ge_pooled"]
            print(f"| {row['r']} | {row['split']} | {f(row['pp_brute'])} | {f(row['pooled_brute'])} | {f(row['pp_vector'])} "
                  f"| {f(row['pooled_vector'])} | {f(row['pp_halfvec'])} | {f(row['pooled_halfvec'])} "
                  f"| {n['tune']} of {sum(h == 'tune' for h in half.values())} / {n['held']} of {sum(h == 'held' for h in half.values())} "
                  f"| {f(row['indiv_brute'])} |")
        print()
        print("every split, brute force in the score space, tuning / held-out:")
        for row in summary:
            print(f"  r = {row['r']}: " + ", ".join(f"{k}: {f(v)}" for k, v in row["all_splits"].items()))
        print()
        print("per tenant, HNSW vector(r): perpca / pooled")
        cols = [r for r in WIDTHS]
        print("| tenant | half | docs | " + " | ".join(f"r = {r}" for r in cols) + " |")
        print("|---|---|---:|" + "---|" * len(cols))
        for t in sorted(tenants_list, key=lambda t: (half[t], -sizes[t], t)):
            pt = per_tenant[t]
            print(f"| {t} | {half[t]} | {sizes[t]} | " + " | ".join(
                f"{pt[f'pp_vector_{r}']:.3f} / {pt[f'pooled_vector_{r}']:.3f}" for r in cols) + " |")
        with open(os.environ.get("RESULTS", "/dev/null"), "w") as out:
            json.dump({"summary": summary, "per_tenant": per_tenant}, out, indent=1)


if __name__ == "__main__":
    main()
