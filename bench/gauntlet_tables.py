#!/usr/bin/env python3
"""The gauntlet's tables (bench/gauntlet.sh) that bench/lib.sh's make_rows
does not make: real data from Debian packages, one CSV (client, x) each.

  changelog    Debian changelog entries (/usr/share/doc/*/changelog.Debian.gz,
               identical files once), grouped by package, packages with
               >= 40 entries; log(1 + count) of the 300 most common words
  patches      6 x 6 colour patches (d = 108) of python3-sklearn's two sample
               photographs (china.jpg, flower.jpg; PIL from python3-pil),
               grouped by image and 3 x 3 tile of it (18 groups)
  wine         the UCI wine data (python3-sklearn) by cultivar, d = 13,
               each feature z-scored over all rows
  breast       the Wisconsin breast cancer data (python3-sklearn) by
               diagnosis, d = 30, z-scored
  fair         statsmodels' affairs survey (python3-statsmodels) by the
               wife's occupation (6 groups), d = 8, z-scored
  macro        statsmodels' US macro data, one group per series (12):
               12-quarter windows of its growth (log-difference of levels,
               difference of rates), each series z-scored
  co2          statsmodels' Mauna Loa CO2 (weekly, filled, monthly means):
               12-month windows minus their mean, grouped by decade
  sunspots     statsmodels' yearly sunspots: 22-year windows by century
               (a spare: not in the split)
  lsa_man      LSA (tf-idf, TruncatedSVD to d = 768) of the manual pages,
               grouped by section
  lsa_changelog  LSA to d = 768 of the changelog entries, by package

Usage: gauntlet_tables.py NAME OUT.csv
"""
import collections, gzip, hashlib, math, os, re, sys

import numpy as np


def write(out, groups, rows, fmt="%.9g"):
    with open(out, "w") as f:
        f.write("client,x\n")
        for g, x in zip(groups, rows):
            f.write('%s,"{%s}"\n' % (g, ",".join(fmt % v for v in x)))


def zscore(X):
    X = np.asarray(X, dtype=float)
    return (X - X.mean(axis=0)) / X.std(axis=0)


def changelog_entries(min_entries=40):
    """(package, entry text) of every changelog with >= min_entries entries."""
    seen, out = set(), []
    for pkg in sorted(os.listdir("/usr/share/doc")):
        path = os.path.join("/usr/share/doc", pkg, "changelog.Debian.gz")
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            with gzip.open(path, "rb") as f:
                raw = f.read()
        except (OSError, EOFError):
            continue
        h = hashlib.sha256(raw).hexdigest()
        if h in seen:
            continue
        seen.add(h)
        text = raw.decode("utf-8", "ignore")
        entries = [e for e in re.split(r"\n -- [^\n]*\n", text) if e.strip()]
        if len(entries) >= min_entries:
            out += [(pkg, e) for e in entries]
    return out


def man_pages():
    """(section, text) of every English manual page."""
    out = []
    for sec in sorted(os.listdir("/usr/share/man")):
        if not re.fullmatch(r"man[0-9]\w*", sec):
            continue
        base = os.path.join("/usr/share/man", sec)
        for f in sorted(os.listdir(base)):
            p = os.path.join(base, f)
            if not f.endswith(".gz") or os.path.islink(p):
                continue
            try:
                with gzip.open(p, "rt", encoding="utf-8", errors="ignore") as fh:
                    out.append((sec, fh.read()))
            except (OSError, EOFError):
                continue
    return out


def counts(docs, d):
    tok = re.compile(r"[a-z]{3,}")
    cs = [collections.Counter(tok.findall(t.lower())) for _, t in docs]
    total = collections.Counter()
    for c in cs:
        total.update(c)
    vocab = [w for w, _ in total.most_common(d)]
    return [[math.log1p(c.get(w, 0)) for w in vocab] for c in cs]


def lsa(docs, d=768):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.decomposition import TruncatedSVD
    tf = TfidfVectorizer(max_features=6000, token_pattern=r"(?u)\b[a-z]{3,}\b",
                         sublinear_tf=True).fit_transform([t.lower() for _, t in docs])
    return TruncatedSVD(d, algorithm="randomized", n_iter=5, random_state=0).fit_transform(tf)


def windows(series, w):
    return [series[i:i + w] for i in range(len(series) - w + 1)]


def table(name):
    if name == "changelog":
        docs = changelog_entries()
        return [g for g, _ in docs], counts(docs, 300), "%.6g"
    if name == "lsa_changelog":
        docs = changelog_entries()
        return [g for g, _ in docs], lsa(docs), "%.9g"
    if name == "lsa_man":
        docs = man_pages()
        return [g for g, _ in docs], lsa(docs), "%.9g"
    if name == "patches":
        from PIL import Image
        import sklearn.datasets.images as im
        groups, rows = [], []
        for img in ("china", "flower"):
            a = np.asarray(Image.open(os.path.join(os.path.dirname(im.__file__), img + ".jpg")),
                           dtype=float) / 255.0
            H, W = a.shape[0] // 6, a.shape[1] // 6
            for i in range(H):
                for j in range(W):
                    groups.append("%s_%d%d" % (img, 3 * i // H, 3 * j // W))
                    rows.append(a[6 * i:6 * i + 6, 6 * j:6 * j + 6].ravel())
        return groups, rows, "%.6g"
    if name in ("wine", "breast"):
        from sklearn import datasets
        ds = datasets.load_wine() if name == "wine" else datasets.load_breast_cancer()
        return [str(t) for t in ds.target], zscore(ds.data), "%.9g"
    import statsmodels.api as sm
    if name == "fair":
        df = sm.datasets.fair.load_pandas().data
        x = df.drop(columns=["occupation"]).to_numpy()
        return ["occ%d" % v for v in df["occupation"]], zscore(x), "%.9g"
    if name == "macro":
        df = sm.datasets.macrodata.load_pandas().data
        groups, rows = [], []
        for col in df.columns[2:]:
            s = df[col].to_numpy(dtype=float)
            s = np.diff(s) if col in ("tbilrate", "unemp", "infl", "realint") else np.diff(np.log(s))
            s = (s - s.mean()) / s.std()
            for w in windows(s, 12):
                groups.append(col)
                rows.append(w)
        return groups, rows, "%.9g"
    if name == "co2":
        s = sm.datasets.co2.load_pandas().data["co2"].bfill()
        m = s.resample("MS").mean()
        groups, rows = [], []
        for i, w in enumerate(windows(m.to_numpy(), 12)):
            groups.append("%ds" % (m.index[i].year // 10 * 10))
            rows.append(w - w.mean())
        return groups, rows, "%.9g"
    if name == "sunspots":
        df = sm.datasets.sunspots.load_pandas().data
        s = df["SUNACTIVITY"].to_numpy()
        years = df["YEAR"].to_numpy().astype(int)
        groups = ["%ds" % (years[i] // 100 * 100) for i in range(len(s) - 21)]
        return groups, windows(s, 22), "%.9g"
    raise SystemExit("unknown table: " + name)


if __name__ == "__main__":
    g, x, fmt = table(sys.argv[1])
    write(sys.argv[2], g, x, fmt)
    print("%s: groups %d, rows %d, d %d" % (sys.argv[1], len(set(g)), len(g), len(x[0])),
          file=sys.stderr)
