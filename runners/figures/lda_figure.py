#!/usr/bin/python3
"""Baker et al. (2019)'s Figure 5: held-out perplexity of LDA against seconds, SGLD and SGLD-CV, one panel per
value of a sweep axis (the corpus size by default), from the results.csv of a sweep such as
runners/presets/sweeps/kos-figure5.toml or kos-cv-centring.toml.

  sgmcmc sweep runners/presets/sweeps/kos-figure5.toml --jobs 1 --out runs/figure5
  runners/figures/lda_figure.py runs/figure5 [--png runs/figure5/lda_figure5.png]
  runners/figures/lda_figure.py runs/cv-centring --by model.vocabulary_size --iterations 2000

Prints, per panel, seed and method, the final perplexity and the seconds to come within 2% of it;
with --iterations I, also each method's perplexity and seconds at iteration I, SGLD's perplexity
at SGLD-CV's seconds at I (SGLD needs at least those seconds: give it more iterations), and the
seconds SGLD-CV takes to reach SGLD's perplexity at I. Needs Debian's python3-matplotlib (for the
PNG only), which plots perplexity against seconds (top row) and against document gradients computed
(bottom row; SGLD-CV computes two per document of its batch, at θ and at θ̂). SGLD-CV's curve starts
after its centring phase and full pass, whose seconds and gradients it includes (the chain's clock
runs from its first iteration's preparation).
"""
import argparse
import csv
from collections import defaultdict
from pathlib import Path

from figure_runs import at_seconds  # runners/figures, beside this script

LABELS = {"minibatch": "SGLD", "cv": "SGLD-CV"}


def read_curves(results, by):
    """(panel value, seed, estimator) -> [(iteration, seconds, perplexity, documents processed)] of chain 1."""
    curves = defaultdict(list)
    with open(results, newline="") as f:
        for row in csv.DictReader(f):
            if row["chain"] != "1" or not row.get("perplexity"):
                continue
            if by not in row:
                raise SystemExit(f"{results}: no column {by}; the sweep's axes are its first columns")
            key = (int(row[by]), int(row.get("run.seed") or 0), row["estimator.name"])
            curves[key].append((int(row["iteration"]), float(row["seconds"]), float(row["perplexity"]),
                                int(row["item_gradients"])))
    if not curves:
        raise SystemExit(f"{results}: no perplexity rows")
    return curves


def at_iteration(curve, iteration):
    """(seconds, perplexity) at the evaluation of `iteration`, or None if the chain has none there."""
    return next(((s, p) for i, s, p, _ in curve if i == iteration), None)


def first_reaching(curve, perplexity):
    """The seconds of the first evaluation at or below `perplexity`, or None."""
    return next((s for _, s, p, _ in curve if p <= perplexity), None)


def number(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f}"


def compare_at(curves, iteration):
    """SGLD against SGLD-CV at `iteration`, per panel and seed."""
    print(f"\nat iteration {iteration:,}:")
    print(f"{'panel':>7} {'seed':>4} {'SGLD (s)':>16} {'SGLD-CV (s)':>16} {'SGLD at CV s':>12} {'CV s to SGLD':>12}")
    for panel, seed in sorted({(p, s) for p, s, _ in curves}):
        sgld, cv = curves.get((panel, seed, "minibatch")), curves.get((panel, seed, "cv"))
        if not sgld or not cv:
            continue
        mine, theirs = at_iteration(sgld, iteration), at_iteration(cv, iteration)
        if not mine or not theirs:
            continue
        print(f"{panel:7,} {seed:4} {mine[1]:8.1f} ({mine[0]:5.1f}) {theirs[1]:8.1f} ({theirs[0]:5.1f}) "
              f"{number(at_seconds([(s, p) for _, s, p, _ in sgld], theirs[0])):>12} {number(first_reaching(cv, mine[1])):>12}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", type=Path, help="the sweep's output folder (with results.csv)")
    parser.add_argument("--by", default="model.max_docs", help="the axis whose values are the panels")
    parser.add_argument("--iterations", type=int, help="also compare both methods at this iteration")
    parser.add_argument("--png", type=Path, help="output image (default: <sweep>/lda_figure5.png)")
    args = parser.parse_args()
    curves = read_curves(args.sweep / "results.csv", args.by)
    panels = sorted({panel for panel, _, _ in curves})
    print(f"{args.by:>21} {'seed':>4} {'method':8} {'final':>8} {'s to 2%':>8}")
    for panel, seed, estimator in sorted(curves):
        points = curves[(panel, seed, estimator)]
        final = points[-1][2]
        settled = next(s for k, (_, s, _, _) in enumerate(points) if all(p <= 1.02 * final for _, _, p, _ in points[k:]))
        print(f"{panel:21,} {seed:4} {LABELS.get(estimator, estimator):8} {final:8.1f} {settled:8.2f}")
    if args.iterations:
        compare_at(curves, args.iterations)
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("no PNG drawn: python3-matplotlib is not installed")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Top row against wall seconds, bottom row against the item_gradients column: every document
    # gradient computed, SGLD-CV's centring and full passes included, and two per document of its
    # batches (at θ and at θ̂).
    figure, axes = plt.subplots(2, len(panels), figsize=(5 * len(panels), 8), squeeze=False)
    for column, panel in enumerate(panels):
        for row, (x_index, x_label) in enumerate([(1, "seconds"), (3, "document gradients computed")]):
            axis = axes[row][column]
            for (value, seed, estimator), points in sorted(curves.items()):
                if value == panel:
                    label = LABELS.get(estimator, estimator) + (f", seed {seed}" if seed else "")
                    axis.plot([point[x_index] for point in points], [point[2] for point in points], label=label)
            axis.set_title(f"{args.by} = {panel:,}")
            axis.set_xlabel(x_label)
            axis.set_ylabel("held-out perplexity")
            axis.legend()
    figure.tight_layout()
    png = args.png or args.sweep / "lda_figure5.png"
    figure.savefig(png, dpi=90)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
