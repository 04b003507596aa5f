#!/usr/bin/python3
"""debian_lsa.py -- a real embedding corpus at d >= 1536: LSA of Debian's package descriptions

Reads the package index of this machine's apt lists (no network; the lists come
from `apt-get update`, and the long descriptions need the English translations:
`apt-get update -o Acquire::Languages=en`): for every binary package of
bookworm/main, its Section, its one-line summary and its long description
(Translation-en, by Description-md5).  Packages with the same description
(the same Description-md5) count once, the first in name order.

One document per description, one tenant per Debian section (libs, python,
perl, devel, games, ...) with at least --min-docs documents.  The vectors are
latent semantic analysis: TF-IDF of each document's words (sublinear term
frequency, terms in at least 3 documents and at most a tenth of them, the
--vocabulary most frequent), then the top --dim right singular directions of the
TF-IDF matrix by a randomized SVD (seeded Gaussian range, --power power
iterations, scipy.sparse for the products), each document's coordinates in
them scaled to unit length (so that L2 and cosine order neighbours alike), as
a sentence-embedding model gives them.

Tenants are split before anything is tuned: sorted by size (then name), the
1st, 3rd, 5th, ... are the tuning half, the 2nd, 4th, ... the held-out half.

Writes into OUTDIR:
  docs.pgcopy   COPY ... (FORMAT binary) rows: id int4, tenant text, package text,
                half text ('tune' | 'held'), v vector(dim) (float4, bit-exact)
  vectors.npy   the same vectors, float32, row i = id i
  docs.tsv      id, tenant, package, half
  meta.json     sizes, the sources' md5, the SVD's share of the TF-IDF mass

  /usr/bin/python3 bench/debian_lsa.py OUTDIR [--dim 1536] [--min-docs 100]

Deterministic for given apt lists (OPENBLAS_NUM_THREADS=1 is set here); needs
python3-numpy and python3-scipy.  About 3-5 minutes on two cores.
"""
import os
os.environ["OPENBLAS_NUM_THREADS"] = "1"      # the same sums in the same order every run
import argparse
import collections
import glob
import hashlib
import json
import math
import re
import struct
import subprocess
import sys

import numpy as np
import scipy.sparse as sp

LISTS = "/var/lib/apt/lists"
WORD = re.compile(r"[a-z][a-z0-9+_]{1,30}")


def apt_file(pattern):
    """The text of the one apt list matching pattern (decompressed by apt itself)."""
    paths = sorted(glob.glob(os.path.join(LISTS, pattern)))
    if not paths:
        return None, None
    raw = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", paths[0]],
                         check=True, capture_output=True).stdout
    return raw.decode("utf-8", "replace"), hashlib.md5(raw).hexdigest()


def stanzas(text):
    """Deb822 stanzas as dicts (continuation lines kept with their newlines)."""
    for block in text.split("\n\n"):
        fields, key = {}, None
        for line in block.split("\n"):
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line[1:]
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields


def collect(min_docs):
    packages, pk_md5 = apt_file("*_debian_dists_bookworm_main_binary-amd64_Packages*")
    trans, tr_md5 = apt_file("*_debian_dists_bookworm_main_i18n_Translation-en*")
    if packages is None or trans is None:
        sys.exit("bookworm/main's Packages and Translation-en lists are needed: "
                 "run apt-get update -o Acquire::Languages=en")
    long_desc = {s["Description-md5"]: s.get("Description-en", "")
                 for s in stanzas(trans) if "Description-md5" in s}
    seen, docs = set(), []
    for s in sorted(stanzas(packages), key=lambda s: s.get("Package", "")):
        md5 = s.get("Description-md5")
        if not md5 or md5 in seen or "Section" not in s:
            continue
        seen.add(md5)
        text = s.get("Description", "") + "\n" + long_desc.get(md5, "")
        docs.append((s["Section"].split("/")[-1], s["Package"], collections.Counter(WORD.findall(text.lower()))))
    sizes = collections.Counter(t for t, _, _ in docs)
    docs = [d for d in docs if sizes[d[0]] >= min_docs]
    return docs, {"packages_md5": pk_md5, "translation_md5": tr_md5}


def tfidf(docs, vocabulary):
    n = len(docs)
    df = collections.Counter()
    for _, _, c in docs:
        df.update(c.keys())
    vocab = sorted((t for t, k in df.items() if 3 <= k <= n // 10), key=lambda t: (-df[t], t))[:vocabulary]
    index = {t: i for i, t in enumerate(vocab)}
    rows, cols, vals = [], [], []
    for r, (_, _, c) in enumerate(docs):
        for t, k in sorted(c.items()):
            j = index.get(t)
            if j is not None:
                rows.append(r); cols.append(j); vals.append((1.0 + math.log(k)) * (math.log(n / df[t]) + 1.0))
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, len(vocab)), dtype=np.float64)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    return sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X, vocab


def randomized_svd(X, k, power, seed=20261127):
    """Top-k right singular directions (vocabulary x k) of sparse X and the singular values."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(X @ rng.standard_normal((X.shape[1], k + 64)))[0]
    for _ in range(power):
        Q = np.linalg.qr(X @ np.asarray(X.T @ Q))[0]
    B = np.asarray((X.T @ Q).T)                     # (k + 64) x vocabulary
    _, s, Vt = np.linalg.svd(B, full_matrices=False)
    V = Vt[:k].T
    V *= np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(k)])   # fixed signs
    return V, s[:k]


def write_copy(path, docs, half, vecs):
    with open(path, "wb") as f:
        f.write(b"PGCOPY\n\xff\r\n\0" + struct.pack(">ii", 0, 0))
        dim = vecs.shape[1]
        head = struct.pack(">hh", dim, 0)
        for i, ((tenant, package, _), v) in enumerate(zip(docs, vecs)):
            t, p, h = tenant.encode(), package.encode(), half[tenant].encode()
            body = head + v.astype(">f4").tobytes()
            f.write(struct.pack(">hii", 5, 4, i) + struct.pack(">i", len(t)) + t + struct.pack(">i", len(p)) + p
                    + struct.pack(">i", len(h)) + h + struct.pack(">i", len(body)) + body)
        f.write(struct.pack(">h", -1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--dim", type=int, default=1536)
    ap.add_argument("--min-docs", type=int, default=100)
    ap.add_argument("--vocabulary", type=int, default=40000)
    ap.add_argument("--power", type=int, default=2)
    a = ap.parse_args()

    docs, meta = collect(a.min_docs)
    X, vocab = tfidf(docs, a.vocabulary)
    keep = np.asarray((X != 0).sum(axis=1)).ravel() >= 5        # documents of at least 5 vocabulary words
    docs = [d for d, k in zip(docs, keep) if k]
    X = X[keep]
    if X.shape[0] <= 4 * a.dim:
        sys.exit(f"only {X.shape[0]} documents: need well over --dim {a.dim}")
    V, s = randomized_svd(X, a.dim, a.power)
    vecs = np.asarray(X @ V)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = vecs.astype(np.float32)

    sizes = collections.Counter(t for t, _, _ in docs)
    order = sorted(sizes, key=lambda t: (-sizes[t], t))
    half = {t: ("tune" if i % 2 == 0 else "held") for i, t in enumerate(order)}
    os.makedirs(a.outdir, exist_ok=True)
    write_copy(os.path.join(a.outdir, "docs.pgcopy"), docs, half, vecs)
    np.save(os.path.join(a.outdir, "vectors.npy"), vecs)
    with open(os.path.join(a.outdir, "docs.tsv"), "w") as f:
        for i, (t, p, _) in enumerate(docs):
            f.write(f"{i}\t{t}\t{p}\t{half[t]}\n")
    frob2 = float(X.multiply(X).sum())
    meta.update(documents=len(docs), dim=a.dim, vocabulary=len(vocab), tenants=len(sizes),
                sizes={t: sizes[t] for t in order}, half=half, power=a.power,
                svd_share=float((s ** 2).sum() / frob2))
    with open(os.path.join(a.outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{len(docs)} documents, {len(sizes)} tenants (sections with >= {a.min_docs}), "
          f"{len(vocab)} terms, d = {a.dim}; the {a.dim} directions keep "
          f"{meta['svd_share']:.3f} of the TF-IDF mass")


if __name__ == "__main__":
    main()
