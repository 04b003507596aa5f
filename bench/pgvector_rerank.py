#!/usr/bin/python3
"""pgvector_rerank.py -- reduce, index, re-rank: candidates from an HNSW index over
reduced scores, re-ranked by the full vectors in the same SQL query, against an
HNSW index over the full vectors, on the Debian LSA corpus (bench/debian_lsa.py).

Run by bench/pgvector_rerank.sh, which loads the corpus into lsa_docs (id, tenant,
package, half, v vector(d)) and its exact statistics into lsa_stats (tenant,
stats).  Connects with the libpq variables (python3-psycopg).

Width R (default 256) of d = 1536.  Steps:
  1. Personalized PCA on lsa_stats, r = g + l for each l of SPLITS (default
     64 128 192; the options of pgvector_recall.py, FIT_OPTIONS, default one
     start from 'dispca', no hops, tolerance 1e-6; docs/pgvector.md's recipe
     uses tolerance 1e-4), with its rounds, wall and backend CPU seconds, and
     pooled PCA (method => 'cpca', a global reduction; POOLED=0 leaves it out).
     Brute force in numpy: the share of each query's exact 10 neighbours among
     its c nearest by the scores (L2), for each candidate count c of CANDIDATES.
     An exact re-rank of c candidates returns exactly those, so this is the
     re-ranked recall@10 without the index.  The split with the best tuning-half
     mean over the candidate counts is kept.
  2. lsa_rr (id, tenant, v vector(d), s vector(R), h halfvec(R)), partitioned by
     tenant (LIST), s = perpca_model_scores(model, tenant, v) of the kept split;
     HNSW indexes on the parent (one per partition): v vector_cosine_ops (the
     full-vector index), s vector_l2_ops, h halfvec_l2_ops (m = 16,
     ef_construction = 64, pgvector's defaults).  Sizes: pg_relation_size of
     every partition's index.
  3. Queries: up to QUERIES (50) documents of each tenant, evenly spaced by id;
     truth: the 10 documents of the same tenant nearest by cosine in d, the query
     left out (it is in the table, so each query asks for one more row and drops
     itself).  Each query is sent with its tenant and its full vector as
     parameters; its reduced form is computed in the query
     (perpca_model_scores), and the re-rank is one statement:
        WITH cand AS MATERIALIZED (SELECT id, v FROM lsa_rr WHERE tenant = $1
                      ORDER BY s <-> perpca_model_scores(model, $1, $2) LIMIT c)
        SELECT id FROM cand ORDER BY v <=> $2 LIMIT 10
     with hnsw.ef_search = max(40, c).  Timed, after one untimed pass over the
     same queries: each search's wall time in this client (psycopg, prepared
     statements, a Unix socket) and the server process's CPU time in it
     (/proc/PID/schedstat: the client must run on the server's machine, as a
     user who may read it; less sensitive to the machine's load than the wall
     time); medians per query.  The searches take turns query by query, so
     the load falls on every kind alike.
SPLITS="" (with POOLED=1) keeps pooled PCA, a global reduction, instead of a split.
The candidate count and the column type (vector or halfvec) are chosen on the
tuning half (the smallest c whose tuning-half recall reaches GOAL, the halfvec
index if it reaches it at the same c); every figure is printed for both halves.
A tenant with at most c documents besides the query is searched whole by c
candidates, so its re-ranked recall is exact by construction: for each c the
number of such tenants per half is printed, and the recall over the others.
hnsw.ef_search is at most 1000 in pgvector, so c is too (no iterative scans).
"""
import json
import os
import sys
import time

import numpy as np
import psycopg
from psycopg import sql

# The corpus's rows, the exact neighbours, the halves' means and the train, as pgvector_recall.py has them.
from pgvector_recall import exact_neighbours, halves, load, train

R = int(os.environ.get("R", "256"))
SPLITS = [int(x) for x in os.environ.get("SPLITS", "64 128 192").split()]
CANDIDATES = [int(x) for x in os.environ.get("CANDIDATES", "20 40 80 160 320 640").split()]
QUERIES = int(os.environ.get("QUERIES", "50"))
POOLED = os.environ.get("POOLED", "1") == "1"
GOAL = 0.95
K = 10


def brute_coverage(S, truth):
    """{c: {tenant: mean share of the exact 10 among the c nearest by the scores S (L2)}}."""
    out = {c: {} for c in CANDIDATES}
    for t, (pos, qpos, nn) in truth.items():
        sq = (S[pos] ** 2).sum(axis=1)
        d2 = sq[None, :] - 2 * S[qpos] @ S[pos].T + (S[qpos] ** 2).sum(axis=1)[:, None]
        d2[np.arange(len(qpos)), np.searchsorted(pos, qpos)] = np.inf
        order = pos[np.argsort(d2, axis=1, kind="stable")]
        for c in CANDIDATES:
            out[c][t] = np.mean([len(set(a[:c]) & set(b)) / K for a, b in zip(order, nn)])
    return out


def scores(conn, model, ids):
    """Every document's scores as stored (float4), read in pgvector's binary form (int16 dim, int16 unused, values)."""
    cur = conn.cursor(binary=True)
    cur.execute("SELECT id, perpca_model_scores(%s, tenant, v) FROM lsa_docs ORDER BY id", (model,))
    rows = cur.fetchall()
    assert [r[0] for r in rows] == list(ids)
    return np.array([np.frombuffer(r[1], dtype=">f4", offset=4) for r in rows], dtype=np.float64)


def f(h):
    return f"{h['tune']:.3f} / {h['held']:.3f}"


def summary(rec, half, ndocs, c):
    """halves(rec), and for c candidates: how many tenants of each half have at most c documents besides
    the query ("whole_tune", "whole_held": the c candidates are the whole tenant, so the re-rank is exact
    by construction there) and the recall over the other tenants ("tune_large", "held_large")."""
    out = halves(rec, half)
    for h in ("tune", "held"):
        big = [v for t, v in rec.items() if half[t] == h and ndocs[t] - 1 > c]
        out[f"whole_{h}"] = sum(1 for t in rec if half[t] == h and ndocs[t] - 1 <= c)
        out[f"{h}_large"] = float(np.mean(big)) if big else float("nan")
    return out


def f_large(h):
    return f"{h['whole_tune']} / {h['whole_held']} | {h['tune_large']:.3f} / {h['held_large']:.3f}"


def choose_split(conn, cur, ids, truth, half):
    """Fits each split and pooled PCA; returns the kept model, its split and every brute-force figure."""
    table, cands = {}, {}
    ndocs = {t: len(v[0]) for t, v in truth.items()}
    for l in SPLITS:
        m = f"lsa_rr_{R}_{l}"
        cpu0 = backend_cpu_ns(conn.info.backend_pid)
        rounds, _, sec = train(cur, m, R - l, l)
        cpu = (backend_cpu_ns(conn.info.backend_pid) - cpu0) / 1e9 if cpu0 is not None else float("nan")
        cur.execute("SELECT objective, gradient_norm, stopped FROM perpca_last_fit()")
        obj, gn, stopped = cur.fetchone()
        cov = brute_coverage(scores(conn, m, ids), truth)
        cands[l] = m
        table[f"perpca {R - l} + {l}"] = {c: summary(cov[c], half, ndocs, c) for c in CANDIDATES}
        print(f"  perpca {R - l} + {l}: {rounds} rounds, {sec:.0f} s, backend CPU {cpu:.0f} s, objective {obj:.10f}, "
              f"gradient norm {gn:.3e} ({stopped}); brute force, re-ranked recall@10 tune / held at c = "
              + ", ".join(f"{c}: {f(table[f'perpca {R - l} + {l}'][c])}" for c in CANDIDATES), flush=True)
    if POOLED:
        rounds, _, sec = train(cur, "lsa_rr_cpca", R, 0, "cpca")
        cov = brute_coverage(scores(conn, "lsa_rr_cpca", ids), truth)
        table[f"pooled PCA {R}"] = {c: summary(cov[c], half, ndocs, c) for c in CANDIDATES}
        print(f"  pooled PCA {R}: {sec:.0f} s; brute force, re-ranked recall@10 tune / held at c = "
              + ", ".join(f"{c}: {f(table[f'pooled PCA {R}'][c])}" for c in CANDIDATES), flush=True)
        if not SPLITS:
            return "lsa_rr_cpca", f"pooled PCA {R}", table
        cur.execute("SELECT perpca_drop('lsa_rr_cpca')")
    best = max(SPLITS, key=lambda l: (np.mean([table[f"perpca {R - l} + {l}"][c]["tune"] for c in CANDIDATES]), -l))
    for l in SPLITS:
        if l != best:
            cur.execute("SELECT perpca_drop(%s)", (cands[l],))
    return cands[best], f"{R - best} + {best}", table


def build(cur, model, d, tenants_list):
    """lsa_rr with the full vectors and the scores, its three HNSW indexes; returns build seconds and sizes."""
    cur.execute("DROP TABLE IF EXISTS lsa_rr")
    cur.execute(f"CREATE TABLE lsa_rr (id int, tenant text, v vector({d}), s vector({R}), h halfvec({R}))"
                " PARTITION BY LIST (tenant)")
    for i, t in enumerate(tenants_list):
        cur.execute(sql.SQL("CREATE TABLE {} PARTITION OF lsa_rr FOR VALUES IN ({})").format(
            sql.Identifier(f"lsa_rr_{i}"), sql.Literal(t)))
    cur.execute("INSERT INTO lsa_rr SELECT id, tenant, v, s, s::halfvec FROM "
                "(SELECT id, tenant, v, perpca_model_scores(%s, tenant, v) AS s FROM lsa_docs) x", (model,))
    cur.execute("SET maintenance_work_mem = '1GB'")
    secs, sizes = {}, {}
    for col, ops in (("v", "vector_cosine_ops"), ("s", "vector_l2_ops"), ("h", "halfvec_l2_ops")):
        t0 = time.time()
        cur.execute(f"CREATE INDEX lsa_rr_{col}_idx ON lsa_rr USING hnsw ({col} {ops})")
        secs[col] = time.time() - t0
        cur.execute(f"SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree('lsa_rr_{col}_idx')")
        sizes[col] = int(cur.fetchone()[0])
    cur.execute("RESET maintenance_work_mem")
    cur.execute("VACUUM ANALYZE lsa_rr")
    return secs, sizes


def search_sql(kind, model, col, c):
    """The statement of one search (parameters: tenant, full query vector); it returns K + 1 ids."""
    if kind == "full":
        return f"SELECT id FROM lsa_rr WHERE tenant = %(t)s ORDER BY v <=> %(q)s::vector LIMIT {K + 1}"
    reduced = f"perpca_model_scores('{model}', %(t)s::text, %(q)s::vector)" + ("::halfvec" if col == "h" else "")
    if kind == "reduced":
        return f"SELECT id FROM lsa_rr WHERE tenant = %(t)s ORDER BY {col} <-> {reduced} LIMIT {K + 1}"
    return (f"WITH cand AS MATERIALIZED (SELECT id, v FROM lsa_rr WHERE tenant = %(t)s ORDER BY {col} <-> {reduced} "
            f"LIMIT {c + 1}) SELECT id FROM cand ORDER BY v <=> %(q)s::vector LIMIT {K + 1}")


def backend_cpu_ns(pid):
    """The server process's CPU time so far (ns, /proc/PID/schedstat), or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/schedstat") as fh:
            return int(fh.read().split()[0])
    except OSError:
        return None


def run_searches(conn, configs, queries, truth_ids):
    """For each config (statement, ef_search): recall@10 per tenant, and the median wall ms and
    backend CPU ms of one search.  One untimed pass first; then query by query, every config in
    turn, so that the machine's load falls on all of them alike."""
    cur = conn.cursor()
    pid = conn.info.backend_pid
    found = [{} for _ in configs]
    wall = [[] for _ in configs]
    cpu = [[] for _ in configs]
    for i, (stmt, ef) in enumerate(configs):
        cur.execute(f"SET hnsw.ef_search = {ef}")
        for qid, t, qtext in queries:
            cur.execute(stmt, {"t": t, "q": qtext}, prepare=True)
            found[i][qid] = [r[0] for r in cur.fetchall() if r[0] != qid][:K]
    for qid, t, qtext in queries:
        for i, (stmt, ef) in enumerate(configs):
            cur.execute(f"SET hnsw.ef_search = {ef}")
            c0, t0 = backend_cpu_ns(pid), time.perf_counter()
            cur.execute(stmt, {"t": t, "q": qtext}, prepare=True)
            cur.fetchall()
            wall[i].append((time.perf_counter() - t0) * 1e3)
            c1 = backend_cpu_ns(pid)
            cpu[i].append((c1 - c0) / 1e6 if c0 is not None and c1 is not None else float("nan"))
    out = []
    for i in range(len(configs)):
        rec = {}
        for qid, t, _ in queries:
            rec.setdefault(t, []).append(len(set(found[i][qid]) & truth_ids[qid]) / K)
        out.append(({t: float(np.mean(v)) for t, v in rec.items()}, float(np.median(wall[i])), float(np.median(cpu[i]))))
    return out


def check_plans(cur, model, tenant, qtext):
    for kind, col, idx in (("full", "v", "_v_idx"), ("reduced", "s", "_s_idx"), ("rerank", "h", "_h_idx")):
        cur.execute("EXPLAIN " + search_sql(kind, model, col, 40), {"t": tenant, "q": qtext})
        plan = " ".join(r[0] for r in cur.fetchall())
        assert idx in plan, plan


def main():
    corpus = sys.argv[1]
    with psycopg.connect(autocommit=True) as conn:
        cur = conn.cursor()
        ids, X, tenants, half = load(cur, corpus)
        tenants_list = sorted(set(tenants))
        truth = exact_neighbours(X, tenants)
        nq = sum(len(v[1]) for v in truth.values())
        print(f"{len(ids)} documents, d = {X.shape[1]}, {len(tenants_list)} tenants "
              f"({sum(h == 'tune' for h in half.values())} tuning, {sum(h == 'held' for h in half.values())} held out); "
              f"up to {QUERIES} queries per tenant, {nq} in all; r = {R}", flush=True)
        model, split, brute = choose_split(conn, cur, ids, truth, half)
        print(f"kept (tuning half, mean over c): {split}", flush=True)
        t0 = time.time()
        secs, sizes = build(cur, model, X.shape[1], tenants_list)
        print(f"lsa_rr and its indexes: {time.time() - t0:.0f} s; index builds " +
              ", ".join(f"{c} {s:.0f} s" for c, s in secs.items()), flush=True)
        cur.execute("SET enable_seqscan = off")     # small partitions: the planner would sort them instead
        cur.execute("SELECT id, tenant, v::text FROM lsa_rr WHERE id = ANY(%s) ORDER BY id",
                    ([int(ids[q]) for t in tenants_list for q in truth[t][1]],))
        queries = [(i, t, q) for i, t, q in cur.fetchall()]
        truth_ids = {int(ids[q]): {int(ids[p]) for p in n} for t in tenants_list for q, n in zip(truth[t][1], truth[t][2])}
        check_plans(cur, model, tenants_list[0], queries[0][2])
        plan = [("full", "v", None), ("reduced", "s", None), ("reduced", "h", None)] + \
            [("rerank", col, c) for col in ("s", "h") for c in CANDIDATES]
        results = run_searches(conn, [(search_sql(kind, model, col, c), max(40, c or 0)) for kind, col, c in plan],
                               queries, truth_ids)
        runs = []
        ndocs = {t: len(v[0]) for t, v in truth.items()}
        for (kind, col, c), (rec, ms, cpu) in zip(plan, results):
            rc = summary(rec, half, ndocs, c) if c else halves(rec, half)
            runs.append({"kind": kind, "col": col, "c": c, "ef": max(40, c or 0), "recall": rc,
                         "ms": ms, "cpu_ms": cpu})
            print(f"  {kind} {col} c = {c} ef_search = {runs[-1]['ef']}: recall@10 {f(runs[-1]['recall'])}, "
                  f"{ms:.2f} ms, backend CPU {cpu:.2f} ms", flush=True)
        report(split, brute, sizes, runs, nq, X.shape[1])
        with open(os.environ.get("RESULTS", "/dev/null"), "w") as out:
            json.dump({"split": split, "brute": brute, "sizes": sizes, "runs": runs}, out, indent=1)
        cur.execute("DROP TABLE lsa_rr")
        cur.execute("SELECT perpca_drop(%s)", (model,))


def report(split, brute, sizes, runs, nq, d):
    mb = lambda b: f"{b / 2 ** 20:.1f} MB"
    print()
    print(f"goal: re-ranked recall@10 >= {GOAL} on the held-out half, index <= 1/4 of the full-vector index's size, "
          "query time beside the full index's")
    print(f"brute force over the scores (no index), re-ranked recall@10 (= share of the exact 10 among the c candidates), "
          "tuning / held-out:")
    print("| reduction | " + " | ".join(f"c = {c}" for c in CANDIDATES) + " |")
    print("|---|" + "---|" * len(CANDIDATES))
    for name, row in brute.items():
        print(f"| {name} | " + " | ".join(f(row[c]) for c in CANDIDATES) + " |")
    print("tenants with at most c documents besides the query (searched whole: exact by construction), "
          "tuning / held-out, and the recall over the other tenants, tuning / held-out:")
    print("| reduction | c | tenants searched whole | recall@10 on the others |")
    print("|---|---:|---|---|")
    for name, row in brute.items():
        for c in CANDIDATES:
            print(f"| {name} | {c} | {f_large(row[c])} |")
    print()
    print(f"through pgvector, {nq} queries, split {split}; index sizes: full {mb(sizes['v'])}, "
          f"vector({R}) {mb(sizes['s'])} ({sizes['s'] / sizes['v']:.3f}), halfvec({R}) {mb(sizes['h'])} "
          f"({sizes['h'] / sizes['v']:.3f})")
    print("| search | index | size / full | candidates | hnsw.ef_search | recall@10 tuning / held-out "
          "| tenants searched whole | recall@10 on the others | median ms | median backend CPU ms |")
    print("|---|---|---:|---:|---:|---|---|---|---:|---:|")
    names = {"v": f"vector({d}), cosine", "s": f"vector({R})", "h": f"halfvec({R})"}
    for r in runs:
        what = {"full": "full vectors", "reduced": "reduced alone", "rerank": "reduced + re-rank"}[r["kind"]]
        print(f"| {what} | {names[r['col']]} | {sizes[r['col']] / sizes['v']:.3f} | {r['c'] or K} | {r['ef']} "
              f"| {f(r['recall'])} | {f_large(r['recall']) if r['c'] else '- | -'} | {r['ms']:.2f} | {r['cpu_ms']:.2f} |")
    full = runs[0]
    for col in ("s", "h"):
        ok = [r for r in runs if r["kind"] == "rerank" and r["col"] == col and r["recall"]["tune"] >= GOAL]
        if not ok:
            print(f"{names[col]}: no candidate count reaches {GOAL} on the tuning half")
            continue
        r = ok[0]
        print(f"{names[col]}: c = {r['c']} chosen on the tuning half ({r['recall']['tune']:.3f}); held-out "
              f"{r['recall']['held']:.3f} (goal {GOAL}: {'met' if r['recall']['held'] >= GOAL else 'not met'}; "
              f"{r['recall']['whole_held']} held-out tenants searched whole, {r['recall']['held_large']:.3f} on the others), "
              f"index {sizes[col] / sizes['v']:.3f} of the full one's (goal 0.25: "
              f"{'met' if sizes[col] <= sizes['v'] / 4 else 'not met'}), {r['ms']:.2f} ms against {full['ms']:.2f} ms "
              f"({r['ms'] / full['ms']:.2f}x; backend CPU {r['cpu_ms']:.2f} against {full['cpu_ms']:.2f} ms, "
              f"{r['cpu_ms'] / full['cpu_ms']:.2f}x)")


if __name__ == "__main__":
    main()
