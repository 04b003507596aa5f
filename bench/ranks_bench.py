#!/usr/bin/python3
"""
ranks_bench.py -- perpca_choose_ranks' recommendation against a later period
or held-out rows of real tables

For each table the rows are cut into an earlier part and a later part (the
last years of a panel, or 30% of the rows by a hash of their id).  The rank
choice sees the earlier part only: perpca_choose_ranks(earlier rows, its own
repeatable 20% split by id, grid {1,2,3} x {0,1,2}).  Then every pair of the
grid is trained on the whole earlier part (perpca_train) and scores the later
part (perpca_evaluate_summary: explained_ratio, the clients' explained
variance over their total, summed over clients).  Goal: the
recommended pair explains the later part at least as well as every other
pair of its size n_global + n_local, or its note says why not.

The tables were split into a tuning half and a held-out half before the rule
was changed (alternately, in alphabetical order of their names): the rule's
choices (whether min_theta excludes or annotates, and the margin by which an
aligned pair must win) were made on the tuning half; the held-out half is
reported beside it.

Besides the function's own answer the script replays, from the scan's
figures, the rule of 0.3.0 (pairs with theta_est < min_theta excluded) and
the rule without margin (min_theta annotates only), to show what the
margin changes; the replay of the current rule must agree with the
function (checked).

Sources (Debian packages; the script says which is missing):
  caschools      r-cran-aer CASchools: 420 California districts, d = 10, clients = 45 counties; rows
  diabetes       python3-sklearn: 442 patients, d = 9, clients = sex; rows
  fatalities     r-cran-aer Fatalities: 48 US states 1982-1988, d = 10, clients = states; later 1987-1988
  hedonic        r-cran-plm Hedonic: 506 Boston tracts, d = 12, clients = 9 levels of rad; rows
  breast_cancer  python3-sklearn: Wisconsin diagnostic, 569 rows, d = 30, 2 clients (diagnosis); rows
  cigar          r-cran-plm Cigar: 46 US states 1963-1992, d = 7 (logs), clients = states; later 1986-1992
  crime          r-cran-plm Crime: 90 NC counties 1981-1987, d = 19 (logs), clients = 3 regions; later 1986-1987
  digits         python3-sklearn: 1,797 images 8x8, d = 64, 10 clients (digit), scale none; rows
  guns           r-cran-aer Guns: 51 US states 1977-1999, d = 10, clients = states; later 1995-1999
  produc         r-cran-plm Produc: 48 US states 1970-1986, d = 8, clients = 9 regions; later 1983-1986
  seatbelts      r-base-core Seatbelts: UK monthly 1969-1984, d = 7 (logs), clients = 12 months; later 1981-1984
  wine           python3-sklearn: UCI wine, 178 rows, d = 13, 3 clients (cultivar); rows

Starting grids (--grids): per table, the recommendation of
perpca_choose_ranks on all its rows (its own repeatable 20% split by id) from
each starting grid of GRIDS: {1,2} x {0,1} (an answer on the edge), 0.4.0's
default {0..4} x {0..4}, {2,3,4} x {1,2,3}, and the default grid (NULL, from
d and the rows); the grid widens itself while the answer sits on its edge.
Printed: each grid's recommendation, the pairs fitted and how many the
widening added, whether the answer is still on an edge.  Floor: the same
recommendation from every grid, on every table.  Nothing is tuned here: the
widening measures more pairs, the rule is the one above.  Tables whose source
package is missing are skipped with a message (only python3-sklearn's are
needed).

Usage: /usr/bin/python3 bench/ranks_bench.py [TABLE...]
       /usr/bin/python3 bench/ranks_bench.py --grids [TABLE...]
       (PGHOST/PGPORT/PGUSER/PGDATABASE select a server that has perpca
       0.4.0 installed; needs python3-psycopg2, r-base-core, r-cran-plm,
       r-cran-aer, python3-sklearn)
"""
import math
import os
import shutil
import subprocess
import sys
import tempfile

import psycopg2

# Round 1 (split before the rule was changed): tuning breast_cancer, crime, guns,
# seatbelts; held-out cigar, digits, produc, wine.  Round 2 (split before the
# rule was changed again, on what round 1 showed): the eight tables of round 1
# tune, four tables not looked at before are held out.
TUNING = ["breast_cancer", "crime", "guns", "seatbelts", "cigar", "digits", "produc", "wine"]
HELDOUT = ["caschools", "diabetes", "fatalities", "hedonic"]
GLOBAL, LOCAL = [1, 2, 3], [0, 1, 2]
WITHIN, MIN_THETA = 0.02, 0.05

# R: one CSV (grp, id, later, x) per panel table; x as a PostgreSQL array.
R_TABLES = {
    "caschools": """data(CASchools, package = "AER"); d <- CASchools
        x <- cbind(log(d[, c("students", "teachers", "expenditure", "income", "read", "math")]),
                   d[, c("calworks", "lunch", "english")], log1p(d["computer"]))
        out(d$county, d$district, NA, x)""",
    "fatalities": """data(Fatalities, package = "AER"); d <- Fatalities
        y <- as.integer(as.character(d$year))
        x <- cbind(log(d[, c("spirits", "income", "miles", "fatal", "nfatal", "sfatal", "pop")]),
                   d[, c("unemp", "emppop", "beertax")])
        out(d$state, paste(d$state, y), y >= 1987, x)""",
    "hedonic": """data(Hedonic, package = "plm"); d <- Hedonic
        v <- c("mv", "crim", "zn", "indus", "nox", "rm", "age", "dis", "tax", "ptratio", "blacks", "lstat")
        out(paste("rad", round(exp(d$rad))), seq_len(nrow(d)), NA, d[, v])""",
    "cigar": """data(Cigar, package = "plm"); d <- Cigar
        x <- log(d[, c("price", "pop", "pop16", "cpi", "ndi", "sales", "pimin")])
        out(d$state, paste(d$state, d$year), d$year >= 86, x)""",
    "crime": """data(Crime, package = "plm"); d <- Crime
        v <- c("lcrmrte", "lprbarr", "lprbconv", "lprbpris", "lavgsen", "lpolpc", "ldensity",
               "ltaxpc", "lpctmin", "lwcon", "lwtuc", "lwtrd", "lwfir", "lwser", "lwmfg", "lwfed",
               "lwsta", "lwloc", "lpctymle")
        out(d$region, paste(d$county, d$year), d$year >= 86, d[, v])""",
    "guns": """data(Guns, package = "AER"); d <- Guns
        y <- as.integer(as.character(d$year))
        x <- cbind(log(d[, c("violent", "murder", "robbery", "prisoners")]),
                   d[, c("afam", "cauc", "male")], log(d[, c("population", "income", "density")]))
        out(d$state, paste(d$state, y), y >= 1995, x)""",
    "produc": """data(Produc, package = "plm"); d <- Produc
        x <- cbind(log(d[, c("pcap", "hwy", "water", "util", "pc", "gsp", "emp")]), d["unemp"])
        out(d$region, paste(d$state, d$year), d$year >= 1983, x)""",
    "seatbelts": """d <- as.data.frame(Seatbelts); tm <- time(Seatbelts)
        x <- log(d[, c("DriversKilled", "drivers", "front", "rear", "kms", "PetrolPrice", "VanKilled") ] + 1)
        out(month.abb[cycle(Seatbelts)], format(tm), floor(tm) >= 1981, x)""",
}
R_OUT = """out <- function(grp, id, later, x) {
    x <- as.matrix(x); ok <- stats::complete.cases(x)
    arr <- apply(x, 1, function(r) paste0("{", paste(format(r, digits = 17), collapse = ","), "}"))
    write.csv(data.frame(grp = grp, id = id, later = later, x = arr)[ok, ],
              commandArgs(TRUE)[1], row.names = FALSE, na = "")
}
"""
SKLEARN = {"breast_cancer": "load_breast_cancer", "digits": "load_digits", "wine": "load_wine",
           "diabetes": "load_diabetes"}
SCALE = {"digits": "none"}


def table_csv(name, path):
    """Write table name's rows as CSV (grp, id, later, x) to path."""
    if name in R_TABLES:
        script = R_OUT + R_TABLES[name]
        r = subprocess.run(["Rscript", "-e", script, path], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("%s: Rscript failed (apt-get install r-base-core r-cran-plm r-cran-aer):\n%s"
                     % (name, r.stderr))
        return
    try:
        import sklearn.datasets as ds
    except ImportError:
        sys.exit("%s: needs python3-sklearn" % name)
    data = getattr(ds, SKLEARN[name])()
    rows = zip(data.data, data.target)
    if name == "diabetes":      # the clients are the sex column; the target is not a feature
        rows = ((list(x[:1]) + list(x[2:]), "sex %+.3f" % x[1]) for x in data.data)
    with open(path, "w") as fh:
        fh.write("grp,id,later,x\n")
        for i, (x, y) in enumerate(rows):
            # the later part: 30% of the rows by a hash of the id (perpca_choose_ranks'
            # own split of the earlier part hashes another key, seed 0)
            fh.write('%s,%d,,"{%s}"\n' % (y, i, ",".join("%.17g" % v for v in x)))


def load(cur, name):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".csv")
        table_csv(name, path)
        cur.execute("DROP TABLE IF EXISTS rb_%s; CREATE TABLE rb_%s (grp text, id text, later boolean, x float8[])"
                    % (name, name))
        with open(path) as fh:
            cur.copy_expert("COPY rb_%s FROM STDIN (FORMAT csv, HEADER)" % name, fh)
    cur.execute("UPDATE rb_%s SET later = abs(hashtextextended(id, 1) %% 10000) < 3000 WHERE later IS NULL"
                % name)
    cur.execute("SELECT count(*), count(*) FILTER (WHERE later), count(DISTINCT grp), max(cardinality(x)) FROM rb_%s"
                % name)
    return cur.fetchone()


def scan(cur, name, later=False):
    """The scan of the earlier part (its own split), or with the later part as held-out rows."""
    query = "SELECT grp, x%s FROM rb_%s WHERE NOT later" % ("" if later else ", 'k' || id", name)
    heldout = "SELECT grp, x FROM rb_%s WHERE later" % name if later else None
    cur.execute("SET client_min_messages = warning")
    cur.execute("""SELECT n_global, n_local, heldout_error, heldout_explained_ratio, theta_est, recommended, note
                     FROM perpca_choose_ranks(%s, %s, %s, %s, within => %s, min_theta => %s, scale => %s)""",
                (query, heldout, GLOBAL, LOCAL, WITHIN, MIN_THETA, SCALE.get(name, "standard")))
    rows = cur.fetchall()
    cur.execute("RESET client_min_messages")
    return [dict(g=r[0], l=r[1], err=r[2], ratio=r[3], theta=r[4], rec=r[5], note=r[6]) for r in rows]


def later_ratio(cur, name, g, l):
    """Train (g, l) on the earlier part, return the later part's explained ratio."""
    model = "rb_m_%s_%d_%d" % (name, g, l)
    cur.execute("SET client_min_messages = warning")
    cur.execute("SELECT perpca_drop(%s, if_exists => true)", (model,))
    cur.execute("SELECT count(*) FROM perpca_train(%%s, 'SELECT grp, perpca_stats(x) FROM rb_%s WHERE NOT later GROUP BY grp', %%s, %%s, scale => %%s)"
                % name, (model, g, l, SCALE.get(name, "standard")))
    cur.execute("SELECT explained_ratio FROM perpca_evaluate_summary(%%s, 'SELECT grp, x FROM rb_%s WHERE later')"
                % name, (model,))
    ratio = cur.fetchone()[0]
    cur.execute("SELECT perpca_drop(%s)", (model,))
    cur.execute("RESET client_min_messages")
    return ratio


# ---- replays of the rules from the scan's figures -------------------------

def improves(p, q, d, variance):
    k, kq = p["g"] + p["l"], q["g"] + q["l"]
    return p["err"] - q["err"] > (kq - k) / (d - k) * p["err"] + WITHIN * variance


def enough(p, pairs, d, variance):
    return not any(improves(p, q, d, variance) for q in pairs if q["g"] + q["l"] > p["g"] + p["l"])


def separable(p):
    return p["l"] == 0 or (p["theta"] is not None and p["theta"] >= MIN_THETA)


def rule_030(pairs, d, variance):
    """0.3.0: pairs under min_theta excluded; smallest enough size, then lowest error."""
    ok = [p for p in pairs if separable(p) and enough(p, pairs, d, variance)]
    return min(ok, key=lambda p: (p["g"] + p["l"], p["err"])) if ok else None


def rule_04(pairs, d, variance, margin):
    """0.4.0: smallest size whose best pair is enough, and its best pair (margin 0); round 1
    tried margin = within: an aligned best pair gives way to a separable pair of its size
    within margin x variance of it."""
    for k in sorted({p["g"] + p["l"] for p in pairs}):
        same = [p for p in pairs if p["g"] + p["l"] == k]
        best = min(same, key=lambda p: p["err"])
        if not enough(best, pairs, d, variance):
            continue
        seps = [p for p in same if separable(p)]
        sep = min(seps, key=lambda p: p["err"]) if seps else None
        if sep is not None and not separable(best) and sep["err"] - best["err"] <= margin * variance:
            return sep
        return best
    return None


def name_of(p):
    return "%d+%d" % (p["g"], p["l"]) if p else "none"


def run_table(cur, name):
    n, nlater, groups, d = load(cur, name)
    pairs = [p for p in scan(cur, name) if p["err"] is not None]
    for p in pairs:
        p["later"] = later_ratio(cur, name, p["g"], p["l"])
    variance = max(p["err"] / (1 - p["ratio"]) for p in pairs)
    lift = max(p["ratio"] * d / (p["g"] + p["l"]) for p in pairs)
    rec = next((p for p in pairs if p["rec"]), None)
    o30 = rule_030(pairs, d, variance) if lift >= 1.5 else None
    ann = rule_04(pairs, d, variance, WITHIN) if lift >= 1.5 else None   # round 1's variant
    new = rule_04(pairs, d, variance, 0.0) if lift >= 1.5 else None
    assert name_of(new) == name_of(rec), (name, name_of(new), name_of(rec))
    print("%s: %d rows (%d later), %d clients, d = %d" % (name, n, nlater, groups, d))
    print("  %-5s %9s %9s %8s  %s" % ("pair", "scan", "later", "theta", "marks"))
    for p in sorted(pairs, key=lambda p: (p["g"] + p["l"], -p["l"])):
        same = [q for q in pairs if q["g"] + q["l"] == p["g"] + p["l"]]
        marks = [m for m, x in (("R", rec), ("0.3.0", o30), ("margin", ann)) if x is p]
        if p["later"] == max(q["later"] for q in same):
            marks.append("best-of-size")
        print("  %-5s %9.4f %9.4f %8s  %s" % (name_of(p), p["ratio"], p["later"],
                                             "-" if p["theta"] is None else "%.3f" % p["theta"], " ".join(marks)))
    ok = rec is None or rec["later"] >= max(q["later"] for q in pairs
                                            if q["g"] + q["l"] == rec["g"] + rec["l"]) - 1e-12
    print("  recommended %s (0.3.0: %s, round 1's margin: %s); best of its size on the later part: %s"
          % (name_of(rec), name_of(o30), name_of(ann), "yes" if ok else "NO"))
    if rec is not None:
        print("  note: %s" % rec["note"])
    # the scan as a user without a held-out split runs it: the later part as its held-out rows
    lpairs = [p for p in scan(cur, name, later=True) if p["err"] is not None]
    lvar = max(p["err"] / (1 - p["ratio"]) for p in lpairs)
    lrec = next((p for p in lpairs if p["rec"]), None)
    assert name_of(rule_04(lpairs, d, lvar, 0.0) if lift >= 1.5 else None) == name_of(lrec), name
    print("  with the later part as held-out rows: recommended %s (0.3.0: %s, round 1's margin: %s)"
          % (name_of(lrec), name_of(rule_030(lpairs, d, lvar)), name_of(rule_04(lpairs, d, lvar, WITHIN))))
    for p in pairs:
        if rec is not None and p is not rec and p["g"] + p["l"] == rec["g"] + rec["l"] and p["later"] > rec["later"]:
            print("  %s explains the later part better; its note: %s" % (name_of(p), p["note"]))
    cur.execute("DROP TABLE rb_%s" % name)
    return ok, rec is not None and o30 is not None and rec["later"] >= o30["later"] - 1e-12


GRIDS = [("{1,2}x{0,1}", [1, 2], [0, 1]), ("{0..4}x{0..4}", list(range(5)), list(range(5))),
         ("{2,3,4}x{1,2,3}", [2, 3, 4], [1, 2, 3]), ("default", None, None)]


def available(name):
    """Whether table name's source is installed (else say what is missing)."""
    if name in R_TABLES and not shutil.which("Rscript"):
        print("%s: skipped (needs r-base-core, r-cran-plm, r-cran-aer)" % name)
        return False
    if name in SKLEARN:
        try:
            import sklearn.datasets   # noqa: F401
        except ImportError:
            print("%s: skipped (needs python3-sklearn)" % name)
            return False
    return True


def grid_scan(cur, name, gs, ls):
    """The recommended pair, the pairs fitted, how many the widening added, and its note."""
    cur.execute("SET client_min_messages = warning")
    cur.execute("""SELECT n_global, n_local, recommended, note, heldout_error IS NOT NULL
                     FROM perpca_choose_ranks(%s, NULL, %s::int[], %s::int[], scale => %s)""",
                ("SELECT grp, x, 'k' || id FROM rb_%s" % name, gs, ls, SCALE.get(name, "standard")))
    rows = cur.fetchall()
    cur.execute("RESET client_min_messages")
    rec = next((r for r in rows if r[2]), None)
    fitted = sum(1 for r in rows if r[4])
    added = sum(1 for r in rows if r[3] and "added when the grid was widened" in r[3])
    return (None if rec is None else "%d+%d" % (rec[0], rec[1])), fitted, added, rec[3] if rec else None


def run_grids(cur, names):
    same = 0
    tried = 0
    for name in names:
        if not available(name):
            continue
        n, _, groups, d = load(cur, name)
        print("%s: %d rows, %d clients, d = %d" % (name, n, groups, d))
        recs = set()
        for label, gs, ls in GRIDS:
            rec, fitted, added, note = grid_scan(cur, name, gs, ls)
            recs.add(rec)
            edge = note is not None and "on the edge of the grid" in note
            print("  from %-16s recommended %-6s %3d pairs fitted (%d added by widening)%s"
                  % (label, rec or "none", fitted, added, "; still on an edge, note says so" if edge else ""))
        tried += 1
        same += len(recs) == 1
        print("  same recommendation from every grid: %s" % ("yes" if len(recs) == 1 else "NO"))
        cur.execute("DROP TABLE rb_%s" % name)
    print("floor (the same recommendation from every starting grid): met on %d of %d tables" % (same, tried))


def main():
    if sys.argv[1:2] == ["--grids"]:
        conn = psycopg2.connect("")
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("CREATE EXTENSION IF NOT EXISTS perpca")
        run_grids(cur, sys.argv[2:] or sorted(TUNING + HELDOUT))
        return
    names = sys.argv[1:] or TUNING + HELDOUT
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS perpca")
    results = {}
    for half, tables in (("tuning", TUNING), ("held-out", HELDOUT)):
        chosen = [t for t in tables if t in names]
        if not chosen:
            continue
        print("==== %s half ====" % half)
        for t in chosen:
            results[t] = run_table(cur, t)
        good = sum(results[t][0] for t in chosen)
        print("%s half: the recommended pair is the best of its size on the later part in %d of %d tables"
              % (half, good, len(chosen)))
        print()
    print("goal met (the recommended pair is the best of its size on the later part) in %d of %d tables"
          % (sum(r[0] for r in results.values()), len(results)))


if __name__ == "__main__":
    main()
