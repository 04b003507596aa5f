#!/usr/bin/env python3
"""Real text corpora from Debian packages, one row per file, one group per
package or subdirectory (its first two directory levels) with at least MIN
files, features = log(1 + count) of the d most common tokens:

  python   Python sources under /usr/lib/python3.11 (python3.11) and
           /usr/lib/python3/dist-packages (numpy, sklearn and the other
           python3-* packages of the machine); identifiers
  include  C headers under /usr/include (libc6-dev, the -dev packages);
           identifiers
  perl     Perl modules under /usr/share/perl and /usr/share/perl5
           (perl-modules, libipc-run-perl, ...); identifiers
  man      manual pages under /usr/share/man/man*/ (gzip), grouped by
           section and first letter; words

Writes CSV (client, x) for COPY.
Usage: text_corpus.py D OUT.csv [MIN [KIND]]   (MIN default 8, KIND python)"""
import collections, gzip, math, os, re, sys

D = int(sys.argv[1]) if len(sys.argv) > 1 else 800
OUT = sys.argv[2] if len(sys.argv) > 2 else "corpus.csv"
MIN = int(sys.argv[3]) if len(sys.argv) > 3 else 8
KIND = sys.argv[4] if len(sys.argv) > 4 else "python"
SOURCES = {
    "python": (["/usr/lib/python3.11", "/usr/lib/python3/dist-packages"], (".py",),
               re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")),
    "include": (["/usr/include"], (".h",), re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")),
    "perl": (["/usr/share/perl", "/usr/share/perl5"], (".pm", ".pl"),
             re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")),
    "man": (["/usr/share/man"], (".gz",), re.compile(r"[a-z]{3,}")),
}
ROOTS, SUFFIXES, tok = SOURCES[KIND]


def read(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", errors="ignore") as f:
            return f.read()
    with open(path, encoding="utf-8", errors="ignore") as f:
        return f.read()


docs = []
for ROOT in ROOTS:
    for dirpath, dirs, files in sorted(os.walk(ROOT)):
        dirs.sort()
        rel = os.path.relpath(dirpath, ROOT)
        if rel == "." and KIND != "include" or "site-packages" in rel or "dist-packages" in rel:
            continue
        if KIND == "man" and not re.fullmatch(r"man[0-9]\w*", rel):
            continue        # only the English pages
        for f in sorted(files):
            if not f.endswith(SUFFIXES) or os.path.islink(os.path.join(dirpath, f)):
                continue
            if KIND == "man":
                group = rel + "/" + f[0].lower()
            else:
                group = "/".join(rel.split(os.sep)[:2])
            try:
                text = read(os.path.join(dirpath, f))
            except (OSError, EOFError):
                continue
            docs.append((group, collections.Counter(tok.findall(text.lower() if KIND == "man" else text))))
sizes = collections.Counter(g for g, _ in docs)
keep = {g for g, n in sizes.items() if n >= MIN}
docs = [(g, c) for g, c in docs if g in keep]
total = collections.Counter()
for _, c in docs:
    total.update(c)
vocab = [w for w, _ in total.most_common(D)]
with open(OUT, "w") as out:
    out.write("client,x\n")
    for g, c in docs:
        out.write('%s,"{%s}"\n' % (g, ",".join("%.6g" % math.log1p(c.get(w, 0)) for w in vocab)))
print("groups %d, rows %d, d %d" % (len(keep), len(docs), len(vocab)), file=sys.stderr)
