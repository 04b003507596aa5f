#!/usr/bin/python3
"""
fit_bench.py -- perpca_fit rounds against the numpy oracle and the BLAS floor

  1. d=40, N=30, r1=2, r2=3: the same S_i in perpca_fit and in the oracle's
     perpca() (choice 1, fixed step, random start, fixed number of rounds);
     floor: perpca_fit at least 5x faster per round than numpy.
  2. d=784, N=100, r1=2, r2=3: per-round cost of perpca_fit against the BLAS
     bound N * 2 d^2 (r1 + r2) flops, and against the time of the N products
     S_i W alone (numpy, one thread) -- the floor of any implementation.
  3. rounds to tolerance on the B2-like fixture (test/data/fit_b_stats.csv):
     adaptive default vs the paper's fixed step, and the oracle's fixed step.

Per-round times subtract a rounds => 0 run (query, S_i, start, output).
Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/fit_bench.py [--oracle DIR]
       (PGHOST/PGPORT/PGUSER/PGDATABASE select the server; needs perpca installed)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def psql(sql):
    out = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def psql_script(sql):
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"], input=sql, check=True,
                   capture_output=True, text=True)


def stats_text(S, n):
    """A dense perpca_stats value with mean 0 and M2 = n S."""
    d = S.shape[0]
    packed = ",".join("%.17g" % (n * S[i, j]) for i in range(d) for j in range(i, d))
    zeros = ",".join("0" for _ in range(d))
    return "v1 n=%d d=%d mean={%s} mean_lo={%s} m2={%s}" % (n, d, zeros, zeros, packed)


def fit_seconds(table, r1, r2, rounds, extra=""):
    # one session: perpca_last_fit() reports this backend's last fit
    return float(psql("SELECT count(*) FROM perpca_fit('SELECT client, stats FROM %s', %d, %d, "
                      "rounds => %d, tolerance => 0, init => 'random'%s); "
                      "SELECT seconds FROM perpca_last_fit()" % (table, r1, r2, rounds, extra)))


def best_of(f, repeat=3):
    return min(f() for _ in range(repeat))


def part_small(po, rounds=200):
    d, N, r1, r2 = 40, 30, 2, 3
    rng = np.random.default_rng(1)
    S = []
    for _ in range(N):
        A = rng.standard_normal((2 * d, d))
        S.append(A.T @ A / (2 * d))
    S = np.stack(S)
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
        for i in range(N):
            fh.write('%d,"%s"\n' % (i + 1, stats_text(S[i], 1000)))
        path = fh.name
    psql_script("DROP TABLE IF EXISTS bench_fit_small; CREATE TABLE bench_fit_small (client int, stats perpca_stats);\n"
                "\\copy bench_fit_small FROM '%s' CSV\n" % path)
    os.unlink(path)
    eta = 0.5 / float(np.max(np.linalg.eigvalsh(S)[:, -1]))
    step = ", step => %.17g" % eta
    t0 = best_of(lambda: fit_seconds("bench_fit_small", r1, r2, 0, step))
    t1 = best_of(lambda: fit_seconds("bench_fit_small", r1, r2, rounds, step))
    sql_round = (t1 - t0) / rounds

    def oracle():
        t = time.perf_counter()
        po.perpca(S, r1, r2, eta=eta, rounds=rounds, choice=1, init="random",
                  rng=np.random.default_rng(0))
        return time.perf_counter() - t
    np_round = best_of(oracle) / rounds
    ratio = np_round / sql_round
    print("d=%d N=%d r1=%d r2=%d, %d rounds, fixed step:" % (d, N, r1, r2, rounds))
    print("  perpca_fit  %8.1f us/round   (whole call %.1f ms, setup %.1f ms)"
          % (1e6 * sql_round, 1e3 * t1, 1e3 * t0))
    print("  numpy       %8.1f us/round" % (1e6 * np_round))
    print("  speed-up    %8.1fx   floor 5x: %s" % (ratio, "PASS" if ratio >= 5 else "FAIL"))
    psql("DROP TABLE bench_fit_small")
    return ratio >= 5


def part_large(rounds=10):
    d, N, r1, r2, n = 784, 100, 2, 3, 400
    print("d=%d N=%d r1=%d r2=%d, %d rounds (building %d x %d random rows in SQL) ..."
          % (d, N, r1, r2, rounds, N, n), flush=True)
    psql("DROP TABLE IF EXISTS bench_fit_large; CREATE TABLE bench_fit_large AS "
         "SELECT g %% %d AS client, perpca_stats(ARRAY(SELECT random() - 0.5 + 0 * g "
         "FROM generate_series(1, %d))) AS stats FROM generate_series(1, %d) g GROUP BY 1"
         % (N, d, N * n))
    t0 = best_of(lambda: fit_seconds("bench_fit_large", r1, r2, 0), 2)
    t1 = best_of(lambda: fit_seconds("bench_fit_large", r1, r2, rounds), 2)
    per_round = (t1 - t0) / rounds
    k = r1 + r2
    flops = N * 2.0 * d * d * k
    # floor: the N products S_i W alone, numpy, one thread
    rng = np.random.default_rng(0)
    S = [np.asfortranarray(rng.standard_normal((d, d))) for _ in range(8)]
    W = rng.standard_normal((d, k))

    def gemm():
        t = time.perf_counter()
        for i in range(N):
            S[i % 8] @ W
        return time.perf_counter() - t
    floor = best_of(gemm, 5)
    print("  perpca_fit  %8.1f ms/round  = %.2f GFLOP/s on the bound N*2d^2(r1+r2) = %.0f Mflop"
          % (1e3 * per_round, flops / per_round / 1e9, flops / 1e6))
    print("  S_i W only  %8.1f ms/round  (numpy dgemm, one thread) -> perpca_fit at %.0f%% of it"
          % (1e3 * floor, 100 * floor / per_round))
    print("  setup (rounds => 0: query, %d S_i of %d x %d, random start, output) %.2f s" % (N, d, d, t0))
    psql("DROP TABLE bench_fit_large")


def part_rounds(po):
    path = os.path.join(ROOT, "test/data/fit_b_stats.csv")
    psql_script("DROP TABLE IF EXISTS bench_fit_b; CREATE TABLE bench_fit_b (client int, n int, stats perpca_stats);\n"
                "\\copy bench_fit_b FROM '%s' CSV HEADER\n" % path)
    print("rounds to tolerance 1e-9 (projector change), B2-like fixture d=15 N=30 r1=2 r2=10:")
    for label, extra in (("adaptive (default)", ""), ("fixed 0.5/lambda_max", ", adaptive => false"),
                         ("fixed 0.5/lambda_max, init dispca", ", adaptive => false, init => 'dispca'")):
        res = psql("SELECT count(*) FROM perpca_fit('SELECT client, stats FROM bench_fit_b', 2, 10, "
                   "rounds => 100000%s); SELECT format('%%s rounds, converged %%s, %%s s', rounds, "
                   "converged, round(seconds::numeric, 2)) FROM perpca_last_fit()" % extra)
        print("  perpca_fit %-34s %s" % (label, res))
    psql("DROP TABLE bench_fit_b")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", default=os.path.join(ROOT, "..", "shared", "oracle"))
    ap.add_argument("--skip-large", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.oracle))
    import perpca_oracle as po
    psql("CREATE EXTENSION IF NOT EXISTS perpca")
    ok = part_small(po)
    part_rounds(po)
    if not args.skip_large:
        part_large()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
