#!/usr/bin/python3
"""Baker et al. (2019)'s Figure 1: SGLD, SGLD-CV and SAGA on Bayesian logistic regression at three data sizes.

Runs the real `sgmcmc` CLI with the preset covtype-baker2019 (the paper's configuration, a scalar
step; the covtype-sgld, -sgldcv and -saga presets run with the Fisher mass) under estimator
minibatch, cv (with sgd_decay_b = 1000) and saga at model.subsample = each fraction of the training rows (the
step is written for one item and scaled as 1/N, integrator.scale_step_with_n), then writes one PNG (held-out log predictive density against
seconds and against item gradients, one panel per size; SGLD-CV's curve starts after its SGD
centring, whose cost it includes) and prints the table of iterations, item gradients and seconds
each method needs to come within 0.01 (and 0.001) nats of its final value.

  runners/figures/covtype_figure.py --sgmcmc build/release/bin/sgmcmc --out runs/figure1
  [--rows 581012 | --data FILE] [--fractions 0.01,0.1,1] [--iterations 5000] [--seed 1]

Needs Debian's python3-matplotlib. Runs one after another, so that seconds are comparable.
"""
import argparse
from pathlib import Path

from figure_runs import plot_panels, print_tables, run_preset

# The paper's three methods: its configuration (covtype-baker2019) with each estimator.
METHODS = [("SGLD", {"estimator.name": '"minibatch"'}),
           ("SGLD-CV", {"estimator.name": '"cv"', "estimator.sgd_decay_b": 1000}),
           ("SAGA", {"estimator.name": '"saga"'})]


def run(args, method_settings, fraction, out):
    settings = {**method_settings, "model.subsample": repr(fraction), "run.iterations": args.iterations, "run.seed": args.seed, "run.chains": 1}
    if args.data:
        settings["model.data"] = f'"{args.data}"'
    else:
        settings["model.n"] = args.rows
    return run_preset(args.sgmcmc, "covtype-baker2019", settings, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sgmcmc", default="sgmcmc")
    parser.add_argument("--out", type=Path, default=Path("runs/figure1"))
    parser.add_argument("--rows", type=int, default=581012, help="rows to simulate (without --data)")
    parser.add_argument("--data", help="a LIBSVM or CSV file instead of simulated rows")
    parser.add_argument("--fractions", default="0.01,0.1,1")
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}  # (fraction, method) -> (N, rows)
    for fraction in fractions:
        for label, method_settings in METHODS:
            items, rows = run(args, method_settings, fraction, args.out / f"{fraction:g}-{label.lower()}")
            results[(fraction, label)] = (items, rows)
            print(f"  ran {label:8s} on {fraction * 100:g}% of the training rows: N = {items:,}", flush=True)

    labels = [label for label, _ in METHODS]
    png = args.out / "covtype_figure1.png"
    plot_panels(results, fractions, labels, lambda fraction, items: f"N = {items:,} ({fraction * 100:g}% of the training rows)", png)
    print_tables(results, fractions, labels, "Baker et al. 2019, Figure 1")
    print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
