#!/usr/bin/python3
"""Missing values on real data: what listwise deletion keeps, and how well
the client mean, pooled PCA, perpca and scikit-learn's imputers fill entries
hidden at random.  Prints the table of docs/missing-values.md.

Data: the UCI Automobile data (Schlimmer 1985) as python3-statsmodels ships
it (statsmodels/gam/tests/results/autos.csv): 205 cars, 15 numeric
measurements (normalized losses, size, weight, engine, power, mileage,
price), 52 entries missing in 46 cars, most of them normalized losses.
Clients: the body style (sedan, hatchback, wagon, hardtop, convertible).

Each trial (seeded) hides a share of the observed entries at random.  The
statistics are perpca_stats(x, 'skip') of each client's rows, so the
models learn from the rows left complete (listwise deletion, counted by
perpca_skipped) and every row with a hidden entry is outside the training
data.  Then, on the hidden entries:
  client mean   the mean of the client's complete rows (perpca_mean);
  pooled PCA    perpca_model_impute of a model with one client (all cars)
                and n_global components, no local ones;
  perpca        perpca_model_impute of the model with one client per body
                style, n_global global and n_local local components (a
                style left without a complete row is not in the model: its
                rows get the global components, unknown => 'global', and
                the client mean of the whole table);
  scikit-learn  SimpleImputer (pooled mean), IterativeImputer and
                KNNImputer (k = 5), fitted on the whole masked table: they
                also learn from the incomplete rows, which the SQL models
                skip.
The error is the root mean square over the hidden entries, each feature in
units of its standard deviation (over the observed values), and its ratio
to the client mean's.  Features are scaled for every model (scale =>
'standard').

Needs a server with perpca (the usual PG* variables, as bench/*.sh) and
python3-statsmodels, python3-sklearn; the extension never needs them.

    /usr/bin/python3 examples/missing_values.py [--trials 20] [--share 0.05]
"""
import argparse
import io
import os
import subprocess

import numpy as np
import pandas as pd
import statsmodels

from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer

AUTOS = os.path.join(os.path.dirname(statsmodels.__file__), "gam", "tests", "results", "autos.csv")
FEATURES = ["loss", "wb", "length", "width", "height", "weight", "eng_cc", "bore", "stroke",
            "comp.ratio", "hp", "rpm", "city_mpg", "hw_mpg", "price"]


def psql(sql, stdin=None):
    """Run SQL with psql; its unaligned, tuples-only output."""
    out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                          "-c", "SET client_min_messages = warning", "-c", sql],
                         input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return out.stdout


def pg_row(v):
    return "{" + ",".join("NULL" if np.isnan(a) else repr(float(a)) for a in v) + "}"


def parse_row(text):
    return np.array([float(a) for a in text.strip("{}").split(",")])


def sql_imputations(X, clients, n_global, n_local):
    """The client mean, pooled PCA and perpca imputations of X's NaN entries, from SQL."""
    buf = io.StringIO()
    for i, (c, row) in enumerate(zip(clients, X)):
        buf.write("%d\t%s\t%s\n" % (i, c, pg_row(row)))
    psql("DROP TABLE IF EXISTS mv_rows; CREATE TABLE mv_rows (id int, style text, x float8[])")
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", "\\copy mv_rows from stdin"],
                   input=buf.getvalue(), text=True, check=True)
    kept = psql("""
        SELECT style, perpca_count(s), perpca_skipped(s)
          FROM (SELECT style, perpca_stats(x, 'skip') AS s FROM mv_rows GROUP BY style) q ORDER BY 1""")
    psql("""
        SELECT perpca_drop('mv_perpca', if_exists => true);
        SELECT perpca_drop('mv_pooled', if_exists => true);
        SELECT model_name FROM perpca_train('mv_perpca',
            $$SELECT style, perpca_stats(x, 'skip') FROM mv_rows GROUP BY style
                HAVING perpca_count(perpca_stats(x, 'skip')) > 0$$,
            %d, %d, scale => 'standard');
        SELECT model_name FROM perpca_train('mv_pooled',
            $$SELECT 'all', perpca_stats(x, 'skip') FROM mv_rows$$,
            %d, 0, scale => 'standard')""" % (n_global, n_local, n_global + n_local))
    out = psql("""
        SELECT r.id, m.mean, perpca_model_impute('mv_pooled', 'all'::text, r.x),
               perpca_model_impute('mv_perpca', r.style, r.x)
          FROM mv_rows r
          JOIN (SELECT style, coalesce(perpca_mean(perpca_stats(x, 'skip')),
                                       (SELECT perpca_mean(perpca_stats(x, 'skip')) FROM mv_rows)) AS mean
                  FROM mv_rows GROUP BY style) m
            USING (style)
         WHERE array_position(r.x, NULL) IS NOT NULL ORDER BY r.id""")
    res = {k: X.copy() for k in ("client mean", "pooled PCA", "perpca")}
    for line in out.splitlines():
        i, mean, pooled, per = line.split("|")
        i = int(i)
        gaps = np.isnan(X[i])
        for name, text in (("client mean", mean), ("pooled PCA", pooled), ("perpca", per)):
            res[name][i, gaps] = parse_row(text)[gaps]
    counts = [line.split("|") for line in kept.splitlines()]
    return res, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--share", type=float, default=0.05)
    ap.add_argument("--n-global", type=int, default=3)
    ap.add_argument("--n-local", type=int, default=1)
    args = ap.parse_args()

    df = pd.read_csv(AUTOS)
    X0 = df[FEATURES].to_numpy(dtype=float)
    clients = df["style"].to_numpy()
    sd = np.nanstd(X0, axis=0)
    complete0 = ~np.isnan(X0).any(axis=1)
    print("UCI Automobile (python3-statsmodels): %d cars, d = %d, %d entries missing in %d cars"
          % (X0.shape[0], X0.shape[1], int(np.isnan(X0).sum()), int((~complete0).sum())))
    print("listwise deletion keeps %d of %d cars (%s)" % (
        complete0.sum(), len(X0),
        ", ".join("%s %d/%d" % (s, (complete0 & (clients == s)).sum(), (clients == s).sum())
                  for s in pd.unique(clients))))
    print("each trial hides %.0f%% of the observed entries at random; perpca n_global = %d, "
          "n_local = %d; pooled PCA %d components; %d trials"
          % (100 * args.share, args.n_global, args.n_local, args.n_global + args.n_local, args.trials))

    methods = ["client mean", "pooled PCA", "perpca", "sklearn SimpleImputer (pooled mean)",
               "sklearn IterativeImputer", "sklearn KNNImputer (k=5)"]
    errors = {m: [] for m in methods}
    per_client = {m: {c: [] for c in pd.unique(clients)} for m in methods[:3]}
    kept_rows = []
    for t in range(args.trials):
        rng = np.random.default_rng(1000 + t)
        observed = ~np.isnan(X0)
        hide = observed & (rng.random(X0.shape) < args.share)
        X = X0.copy()
        X[hide] = np.nan
        kept_rows.append(int((~np.isnan(X).any(axis=1)).sum()))
        imputed, _ = sql_imputations(X, clients, args.n_global, args.n_local)
        imputed["sklearn SimpleImputer (pooled mean)"] = SimpleImputer().fit_transform(X)
        imputed["sklearn IterativeImputer"] = IterativeImputer(max_iter=20, random_state=t).fit_transform(X)
        imputed["sklearn KNNImputer (k=5)"] = KNNImputer(n_neighbors=5).fit_transform(X)
        for m in methods:
            e = ((imputed[m] - X0) / sd)[hide]
            errors[m].append(np.sqrt(np.mean(e ** 2)))
        for m in methods[:3]:
            sq = ((imputed[m] - X0) / sd) ** 2
            for c in per_client[m]:
                per_client[m][c].extend(sq[hide & (clients == c)[:, None]])
    print("rows kept by listwise deletion after hiding: %.0f of %d on average (min %d, max %d)"
          % (np.mean(kept_rows), len(X0), min(kept_rows), max(kept_rows)))
    base = np.array(errors["client mean"])
    print()
    print("| method | RMSE on hidden entries (sd units), mean ± sd over trials | ratio to client mean | trials better than client mean |")
    print("|---|---|---|---|")
    for m in methods:
        e = np.array(errors[m])
        print("| %s | %.3f ± %.3f | %.2f | %d/%d |" % (m, e.mean(), e.std(), (e / base).mean(),
                                                    int((e < base).sum()), len(e)))
    print()
    print("| body style (cars) | hidden entries | client mean | pooled PCA | perpca |")
    print("|---|---|---|---|---|")
    for c in per_client["perpca"]:
        print("| %s (%d) | %d | %s |" % (c, (clients == c).sum(), len(per_client["perpca"][c]), " | ".join(
            "%.3f" % np.sqrt(np.mean(per_client[m][c])) for m in methods[:3])))
    psql("SELECT perpca_drop('mv_perpca'); SELECT perpca_drop('mv_pooled'); DROP TABLE mv_rows")


if __name__ == "__main__":
    main()
