#!/usr/bin/python3
"""Baker et al. (2019)'s Figure 5: held-out perplexity of LDA against seconds, SGLD and SGLD-CV, one panel per
corpus size, from the results.csv of the sweep runners/presets/sweeps/kos-figure5.toml.

  sgmcmc sweep runners/presets/sweeps/kos-figure5.toml --jobs 1 --out runs/figure5
  runners/figures/lda_figure.py runs/figure5 [--png runs/figure5/lda_figure5.png]

Prints, per size and method, the final perplexity and the seconds to come within 2% of it.
Needs Debian's python3-matplotlib. SGLD-CV's curve starts after its SGD centring and full pass,
whose seconds it includes (the chain's clock runs from its first iteration's preparation).
"""
import argparse
import csv
from collections import defaultdict
from pathlib import Path

LABELS = {"minibatch": "SGLD", "cv": "SGLD-CV"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", type=Path, help="the sweep's output folder (with results.csv)")
    parser.add_argument("--png", type=Path, help="output image (default: <sweep>/lda_figure5.png)")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = defaultdict(list)  # (max_docs, estimator) -> [(seconds, perplexity)]
    with open(args.sweep / "results.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["chain"] != "1" or not row.get("perplexity"):
                continue
            key = (int(row["model.max_docs"]), row["estimator.name"])
            curves[key].append((float(row["seconds"]), float(row["perplexity"])))
    sizes = sorted({size for size, _ in curves})
    if not sizes:
        raise SystemExit(f"{args.sweep / 'results.csv'}: no perplexity rows")
    figure, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    print(f"{'documents':>9} {'method':8} {'final':>8} {'s to 2%':>8}")
    for column, size in enumerate(sizes):
        axis = axes[0][column]
        for estimator, label in LABELS.items():
            points = curves.get((size, estimator))
            if not points:
                continue
            seconds, perplexity = zip(*points)
            axis.plot(seconds, perplexity, label=label)
            final = perplexity[-1]
            settled = next(s for k, s in enumerate(seconds) if all(p <= 1.02 * final for p in perplexity[k:]))
            print(f"{size:9,} {label:8} {final:8.1f} {settled:8.2f}")
        axis.set_title(f"{size:,} training documents")
        axis.set_xlabel("seconds")
        axis.set_ylabel("held-out perplexity")
        axis.legend()
    figure.tight_layout()
    png = args.png or args.sweep / "lda_figure5.png"
    figure.savefig(png, dpi=90)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
