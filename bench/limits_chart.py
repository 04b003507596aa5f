#!/usr/bin/python3
"""One client's control chart with both kinds of limits (bench/limits_bench.sh).

Usage: limits_chart.py CHART.csv CLIENT OUT.png
CHART.csv: year, part, t2, t2_limit, t2_cal, q, q_limit, q_cal (one row a
year: perpca_model_monitor at alpha = 0.01 with limits 'gaussian' and
'calibrated'); part is 'train' (the model's training rows, fitted or held
out for calibration), 'test' (held out at random from the same period) or
'later' (after the training period).  Needs python3-matplotlib."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"train": ("o", "#7f7f7f", "training period, the model's 80% (fitted or calibration)"),
         "test": ("s", "#1f77b4", "training period, held out (20%)"),
         "later": ("D", "#d62728", "later period")}


def main():
    path, client, out = sys.argv[1:4]
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for ax, stat, name in ((axes[0], "t2", "Hotelling's T²"), (axes[1], "q", "Q (squared prediction error)")):
        for part, (marker, colour, label) in STYLE.items():
            pts = [(int(r["year"]), float(r[stat])) for r in rows if r["part"] == part and r[stat]]
            if pts:
                ax.plot(*zip(*pts), marker, color=colour, label=label, markersize=5)
        years = [int(r["year"]) for r in rows]
        for col, style, label in ((stat + "_limit", "--", "Gaussian limit"), (stat + "_cal", "-", "calibrated limit")):
            vals = [float(r[col]) for r in rows if r[col]]
            if vals:
                ax.hlines(vals[0], min(years) - 0.5, max(years) + 0.5, colors="black", linestyles=style, label=label)
        ax.axvline(1980.5, color="#999999", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylabel(name)
    axes[0].legend(fontsize=8, loc="upper left")
    axes[0].set_title("%s: perpca_model_monitor at alpha = 0.01, both kinds of limits" % client.title())
    axes[1].set_xlabel("year (Summers-Heston panel, r-cran-plm)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main()
