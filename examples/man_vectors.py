#!/usr/bin/python3
"""man_vectors.py -- dense document vectors of this machine's manual pages (LSA)

Reads the manual pages installed under /usr/share/man (no network), groups them
by section -- man1 commands, man2 system calls, man3 C library functions, man3pm
Perl modules, man5 file formats, man7 overviews, man8 administration -- and
computes latent semantic analysis vectors: TF-IDF of the words of each page
(sublinear term frequency, terms in at least 3 pages and at most half of them),
then the top DIM singular directions of the TF-IDF matrix.  Each page's vector
is its coordinates in those directions, scaled to unit length (so that the L2
distance orders neighbours as the cosine does), as sentence-embedding models
give them.

Writes into OUTDIR:
  docs.csv   section, page, vector ('[x1,...,xDIM]', pgvector's text form)
  terms.csv  term, vector: each of the most frequent terms' coordinates in the
             same DIM directions (what a direction of the vectors means in words)

  /usr/bin/python3 examples/man_vectors.py OUTDIR [--per-group 400] [--dim 768]

Pages are taken in name order, every k-th to get at most --per-group pages per
section; .so redirections and pages under 40 words are left out.  The pages a
machine has depend on its installed packages, so the figures differ from
machine to machine.  Needs python3-numpy only.
"""
import argparse
import collections
import gzip
import math
import os
import re
import sys

import numpy as np

MAN = "/usr/share/man"
GROUPS = [
    ("man1", "man1", lambda f: True),
    ("man2", "man2", lambda f: True),
    ("man3", "man3", lambda f: ".3pm" not in f),
    ("man3pm", "man3", lambda f: ".3pm" in f),
    ("man5", "man5", lambda f: True),
    ("man7", "man7", lambda f: True),
    ("man8", "man8", lambda f: True),
]

# troff: font and character escapes, then request lines' names
ESCAPES = re.compile(r'\\f(\[[^\]]*\]|\(..|.)|\\\(..|\\\*(\(..|\[[^\]]*\]|.)|\\s[-+]?\d+|\\.')
WORD = re.compile(r"[a-z][a-z0-9_]{2,30}")


def page_text(path):
    """The words of a manual page, or None for a redirection."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except OSError:
        return None
    lines = []
    for line in raw.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith(".so "):
            return None
        if line.startswith((".", "'")):
            parts = line.split(None, 1)
            line = parts[1] if len(parts) > 1 else ""
        lines.append(line)
    return ESCAPES.sub(" ", "\n".join(lines)).lower()


def collect(per_group):
    docs = []
    for group, subdir, keep in GROUPS:
        d = os.path.join(MAN, subdir)
        if not os.path.isdir(d):
            continue
        names = sorted(f for f in os.listdir(d)
                       if keep(f) and not os.path.islink(os.path.join(d, f)))
        step = max(1, len(names) // (2 * per_group))
        taken = 0
        for f in names[::step]:
            text = page_text(os.path.join(d, f))
            if text is None:
                continue
            words = WORD.findall(text)
            if len(words) < 40:
                continue
            docs.append((group, re.sub(r"\.gz$", "", f), collections.Counter(words)))
            taken += 1
            if taken == per_group:
                break
    return docs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--per-group", type=int, default=400)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--vocabulary", type=int, default=12000)
    ap.add_argument("--terms", type=int, default=4000)
    a = ap.parse_args()

    docs = collect(a.per_group)
    n = len(docs)
    if n <= a.dim:
        sys.exit(f"only {n} pages found: need more than --dim {a.dim}")
    df = collections.Counter()
    for _, _, c in docs:
        df.update(c.keys())
    vocab = [t for t, k in df.most_common() if 3 <= k <= n // 2][:a.vocabulary]
    index = {t: i for i, t in enumerate(vocab)}
    idf = np.array([math.log(n / df[t]) + 1.0 for t in vocab], dtype=np.float32)

    X = np.zeros((n, len(vocab)), dtype=np.float32)
    for r, (_, _, c) in enumerate(docs):
        for t, k in c.items():
            j = index.get(t)
            if j is not None:
                X[r, j] = 1.0 + math.log(k)
    X *= idf
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)

    # Top singular directions through the n x n Gram matrix (n << vocabulary).
    G = (X.astype(np.float64) @ X.T.astype(np.float64))
    w, U = np.linalg.eigh(G)
    top = np.argsort(w)[::-1][:a.dim]
    s = np.sqrt(np.maximum(w[top], 1e-300))
    U = U[:, top]
    U *= np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(a.dim)])   # fixed signs
    docvec = U * s                               # = X V (coordinates in the directions)
    docvec /= np.linalg.norm(docvec, axis=1, keepdims=True)
    V = (X.T.astype(np.float64) @ U) / s          # terms' coordinates (vocabulary x dim)

    os.makedirs(a.outdir, exist_ok=True)
    fmt = lambda v: "[" + ",".join(f"{x:.6g}" for x in v) + "]"
    with open(os.path.join(a.outdir, "docs.csv"), "w") as f:
        for (group, name, _), v in zip(docs, docvec):
            f.write(f"{group},\"{name}\",\"{fmt(v)}\"\n")
    with open(os.path.join(a.outdir, "terms.csv"), "w") as f:
        for t in vocab[:a.terms]:
            f.write(f"{t},\"{fmt(V[index[t]])}\"\n")
    counts = collections.Counter(g for g, _, _ in docs)
    print(f"{n} pages ({', '.join(f'{g} {k}' for g, k in sorted(counts.items()))}), "
          f"{len(vocab)} terms, {a.dim} dimensions; "
          f"the {a.dim} directions keep {float((w[top]).sum() / w.sum()):.3f} of the TF-IDF variance")


if __name__ == "__main__":
    main()
