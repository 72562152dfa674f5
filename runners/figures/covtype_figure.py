#!/usr/bin/python3
"""Seed 1's Figure 1: SGLD, SGLD-CV and SAGA on Bayesian logistic regression at three data sizes.

Runs the real `sgmcmc` CLI with the presets covtype-sgld, covtype-sgldcv and covtype-saga at
model.subsample = each fraction of the training rows (step size scaled as 1/N from the presets'
full-size value, as they explain), then writes one PNG (held-out log predictive density against
seconds and against item gradients, one panel per size; SGLD-CV's curve starts after its SGD
centring, whose cost it includes) and prints the table of iterations, item gradients and seconds
each method needs to come within 0.01 (and 0.001) nats of its final value.

  runners/figures/covtype_figure.py --sgmcmc build/release/bin/sgmcmc --out runs/figure1
  [--rows 581012 | --data FILE] [--fractions 0.01,0.1,1] [--iterations 5000] [--seed 1]

Needs Debian's python3-matplotlib. Runs one after another, so that seconds are comparable.
"""
import argparse
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

METHODS = [("SGLD", "covtype-sgld"), ("SGLD-CV", "covtype-sgldcv"), ("SAGA", "covtype-saga")]
TOLERANCES = (0.01, 0.001)  # nats: the issue's, and a finer one where burn-in still shows


def run(args, preset, fraction, step_size, out):
    command = [args.sgmcmc, "run", "--preset", preset, "--out", str(out), "--replace", "--quiet",
               "--set", f"model.subsample={fraction!r}", "--set", f"integrator.step_size={step_size!r}",
               "--set", f"run.iterations={args.iterations}", "--set", f"run.seed={args.seed}",
               "--set", "run.chains=1"]
    if args.data:
        command += ["--set", f'model.data="{args.data}"']
    else:
        command += ["--set", f"model.n={args.rows}"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}\n{result.stdout}{result.stderr}")
    manifest = json.loads((out / "manifest.json").read_text())
    with open(out / "metrics.csv", newline="") as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return manifest["model"]["items"], rows


def time_to_accuracy(rows, tolerance):
    """The first evaluation after which the metric stays within `tolerance` of its final value."""
    final = rows[-1]["log_predictive_density"]
    for k, row in enumerate(rows):
        if all(abs(r["log_predictive_density"] - final) <= tolerance for r in rows[k:]):
            return row
    return rows[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sgmcmc", default="sgmcmc")
    parser.add_argument("--out", type=Path, default=Path("runs/figure1"))
    parser.add_argument("--rows", type=int, default=581012, help="rows to simulate (without --data)")
    parser.add_argument("--data", help="a LIBSVM or CSV file instead of simulated rows")
    parser.add_argument("--fractions", default="0.01,0.1,1")
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--full-size-step", type=float, default=8e-6, help="the presets' step size ...")
    parser.add_argument("--full-size-items", type=int, default=522911, help="... and the N it was tuned at")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fractions = [float(f) for f in args.fractions.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}  # (fraction, method) -> (N, rows)
    for fraction in fractions:
        # N at this fraction, from a 10-iteration run, sets the step size (scaled as 1/N).
        probe, _ = run(argparse.Namespace(**{**vars(args), "iterations": 10}), METHODS[0][1], fraction,
                       args.full_size_step, args.out / "probe")
        step = args.full_size_step * args.full_size_items / probe
        shutil.rmtree(args.out / "probe")
        for label, preset in METHODS:
            items, rows = run(args, preset, fraction, step, args.out / f"{fraction:g}-{preset}")
            results[(fraction, label)] = (items, rows)
            print(f"  ran {label:8s} at {fraction:g} of the training rows: N = {items:,}, step {step:.3g}", flush=True)

    figure, axes = plt.subplots(2, len(fractions), figsize=(5 * len(fractions), 8), squeeze=False)
    for column, fraction in enumerate(fractions):
        for label, _ in METHODS:
            items, rows = results[(fraction, label)]
            lpd = [r["log_predictive_density"] for r in rows]
            axes[0][column].plot([r["seconds"] for r in rows], lpd, label=label)
            axes[1][column].plot([r["item_gradients"] for r in rows], lpd, label=label)
        axes[0][column].set_title(f"N = {items:,} ({fraction:g} of the training rows)")
        axes[0][column].set_xlabel("seconds")
        axes[1][column].set_xlabel("item gradients")
        for row in (0, 1):
            axes[row][column].set_ylabel("held-out log predictive density")
            low = min(results[(fraction, label)][1][-1]["log_predictive_density"] for label, _ in METHODS)
            axes[row][column].set_ylim(low - 0.1, low + 0.03)
            axes[row][column].legend()
    figure.tight_layout()
    png = args.out / "covtype_figure1.png"
    figure.savefig(png, dpi=90)

    for tolerance in TOLERANCES:
        print(f"\nWithin {tolerance} nats of the final held-out log predictive density (seed 1, Figure 1):")
        print(f"{'N':>9} {'method':8} {'iterations':>10} {'item grads':>11} {'seconds':>8} {'final lpd':>10}")
        for fraction in fractions:
            needed = {}
            for label, _ in METHODS:
                items, rows = results[(fraction, label)]
                row = time_to_accuracy(rows, tolerance)
                needed[label] = row["item_gradients"]
                print(f"{items:9,} {label:8} {int(row['iteration']):10,} {int(row['item_gradients']):11,} "
                      f"{row['seconds']:8.3f} {rows[-1]['log_predictive_density']:10.4f}")
            print(f"{'':9} SGLD needs {needed['SGLD'] / needed['SGLD-CV']:.2f}x the item gradients of SGLD-CV, "
                  f"{needed['SGLD'] / needed['SAGA']:.2f}x those of SAGA")
    print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
