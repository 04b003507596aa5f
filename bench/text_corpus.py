#!/usr/bin/env python3
"""A real text corpus from Debian packages: the Python sources installed under
/usr/lib/python3.11 (python3.11) and /usr/lib/python3/dist-packages (numpy and
the other python3-* packages of the machine), one row per source file, one
group per package or subpackage (its first two directory levels) with at least
MIN files (third argument, default 8), features = log(1 + count) of the d most common identifiers.
Writes CSV (client, x) for COPY.  Usage: text_corpus.py D OUT.csv [MIN]"""
import collections, os, re, sys

D = int(sys.argv[1]) if len(sys.argv) > 1 else 800
OUT = sys.argv[2] if len(sys.argv) > 2 else "corpus.csv"
ROOTS = ["/usr/lib/python3.11", "/usr/lib/python3/dist-packages"]
tok = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
docs = []
for ROOT in ROOTS:
  for dirpath, dirs, files in sorted(os.walk(ROOT)):
    rel = os.path.relpath(dirpath, ROOT)
    if rel == "." or "site-packages" in rel or "dist-packages" in rel:
        continue
    for f in sorted(files):
        if not f.endswith(".py"):
            continue
        group = "/".join(rel.split(os.sep)[:2])
        try:
            text = open(os.path.join(dirpath, f), encoding="utf-8", errors="ignore").read()
        except OSError:
            continue
        docs.append((group, collections.Counter(tok.findall(text))))
sizes = collections.Counter(g for g, _ in docs)
MIN = int(sys.argv[3]) if len(sys.argv) > 3 else 8
keep = {g for g, n in sizes.items() if n >= MIN}
docs = [(g, c) for g, c in docs if g in keep]
total = collections.Counter()
for _, c in docs:
    total.update(c)
vocab = [w for w, _ in total.most_common(D)]
import math
with open(OUT, "w") as out:
    out.write("client,x\n")
    for g, c in docs:
        out.write('%s,"{%s}"\n' % (g, ",".join("%.6g" % math.log1p(c.get(w, 0)) for w in vocab)))
print("groups %d, rows %d, d %d" % (len(keep), len(docs), len(vocab)), file=sys.stderr)
