"""What the figure scripts share: run a preset through the real `sgmcmc` CLI and read its
metrics, find when a curve settles, draw metric-against-cost panels, print the settling table.

Imported by covtype_figure.py (Baker et al. 2019's Figure 1) and pmf_figure.py (Figure 3), which live in the
same folder (Python puts a script's folder on its import path).
"""
import csv
import json
import subprocess
import sys

TOLERANCES = (0.01, 0.001)  # nats: the issues', and a finer one where burn-in still shows
METRIC = "log_predictive_density"


def run_preset(sgmcmc, preset, settings, out):
    """`sgmcmc run --preset PRESET --set KEY=VALUE ...` into `out`; returns (N, metrics rows)."""
    command = [sgmcmc, "run", "--preset", preset, "--out", str(out), "--replace", "--quiet"]
    for key, value in settings.items():
        command += ["--set", f"{key}={value}"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}\n{result.stdout}{result.stderr}")
    manifest = json.loads((out / "manifest.json").read_text())
    with open(out / "metrics.csv", newline="") as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return manifest["model"]["items"], rows


def at_seconds(curve, seconds):
    """The metric of the last evaluation within `seconds` on a [(seconds, metric)] curve, or None
    if the chain ended before them (or had no evaluation by then)."""
    if curve[-1][0] < seconds:
        return None
    within = [value for t, value in curve if t <= seconds]
    return within[-1] if within else None


def time_to_accuracy(rows, tolerance):
    """The first evaluation after which the metric stays within `tolerance` of its final value."""
    final = rows[-1][METRIC]
    for k, row in enumerate(rows):
        if all(abs(r[METRIC] - final) <= tolerance for r in rows[k:]):
            return row
    return rows[-1]


def plot_panels(results, sizes, labels, title, png, below=0.1, above=0.03):
    """One column per size: the metric against seconds (top) and item gradients (bottom), one
    curve per method; results[(size, label)] = (N, rows); title(size, N) names a column."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, len(sizes), figsize=(5 * len(sizes), 8), squeeze=False)
    for column, size in enumerate(sizes):
        for label in labels:
            items, rows = results[(size, label)]
            values = [r[METRIC] for r in rows]
            axes[0][column].plot([r["seconds"] for r in rows], values, label=label)
            axes[1][column].plot([r["item_gradients"] for r in rows], values, label=label)
        axes[0][column].set_title(title(size, items))
        axes[0][column].set_xlabel("seconds")
        axes[1][column].set_xlabel("item gradients")
        low = min(results[(size, label)][1][-1][METRIC] for label in labels)
        for row in (0, 1):
            axes[row][column].set_ylabel("held-out log predictive density")
            axes[row][column].set_ylim(low - below, low + above)
            axes[row][column].legend()
    figure.tight_layout()
    figure.savefig(png, dpi=90)


def print_tables(results, sizes, labels, caption):
    """Per tolerance: the iterations, item gradients and seconds each method needs to settle
    within it of its final value, and SGLD's item gradients against the others'."""
    for tolerance in TOLERANCES:
        print(f"\nWithin {tolerance} nats of the final held-out log predictive density ({caption}):")
        print(f"{'N':>9} {'method':8} {'iterations':>10} {'item grads':>11} {'seconds':>8} {'final lpd':>10}")
        for size in sizes:
            needed = {}
            for label in labels:
                items, rows = results[(size, label)]
                row = time_to_accuracy(rows, tolerance)
                needed[label] = row["item_gradients"]
                print(f"{items:9,} {label:8} {int(row['iteration']):10,} {int(row['item_gradients']):11,} "
                      f"{row['seconds']:8.3f} {rows[-1][METRIC]:10.4f}")
            ratios = [f"{needed[labels[0]] / needed[label]:.2f}x" for label in labels[1:]]
            parts = [f"{ratios[0]} the item gradients of {labels[1]}"]
            parts += [f"{ratio} those of {label}" for ratio, label in zip(ratios[1:], labels[2:])]
            print(f"{'':9} {labels[0]} needs {', '.join(parts)}")
