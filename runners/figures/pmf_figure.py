#!/usr/bin/python3
"""Baker et al. (2019)'s Figure 3: SGLD, SGLD-CV and SAGA on Bayesian PMF with the first 100, 300 and 943 users.

Runs the real `sgmcmc` CLI with the presets pmf-sgld, pmf-sgldcv and pmf-saga at
model.max_users = each size (the step size stays: max_users keeps whole users, so the ratings per
user do not change), on MovieLens 100k's shape simulated, or on `--data` (MovieLens' u.data),
then writes one PNG (held-out log predictive density against seconds and against item gradients,
one column per size; SGLD-CV's curve starts after its SGD centring, whose cost it includes) and
prints the table of iterations, item gradients and seconds each method needs to come within 0.01
(and 0.001) nats of its final value.

  runners/figures/pmf_figure.py --sgmcmc build/release/bin/sgmcmc --out runs/figure3
  [--data u.data] [--users 100,300,943] [--iterations 2000] [--seed 1]

Needs Debian's python3-matplotlib. Runs one after another, so that seconds are comparable.
"""
import argparse
from pathlib import Path

from figure_runs import plot_panels, print_tables, run_preset

METHODS = [("SGLD", "pmf-sgld"), ("SGLD-CV", "pmf-sgldcv"), ("SAGA", "pmf-saga")]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sgmcmc", default="sgmcmc")
    parser.add_argument("--out", type=Path, default=Path("runs/figure3"))
    parser.add_argument("--data", help="MovieLens' u.data (or a CSV/TSV of ratings) instead of simulated ratings")
    parser.add_argument("--users", default="100,300,943", help="model.max_users of each column")
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="more settings for every run (e.g. model.ratings=20000 for a smaller simulation)")
    args = parser.parse_args()
    sizes = [int(u) for u in args.users.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}  # (users, method) -> (N, rows)
    for users in sizes:
        for label, preset in METHODS:
            settings = {"model.max_users": users, "run.iterations": args.iterations, "run.seed": args.seed,
                        "run.chains": 1}
            if args.data:
                settings["model.data"] = f'"{args.data}"'
            settings.update(assignment.split("=", 1) for assignment in args.set)
            items, rows = run_preset(args.sgmcmc, preset, settings, args.out / f"{users}-{preset}")
            results[(users, label)] = (items, rows)
            print(f"  ran {label:8s} with the first {users} users: N = {items:,} training ratings", flush=True)

    labels = [label for label, _ in METHODS]
    png = args.out / "pmf_figure3.png"
    plot_panels(results, sizes, labels, lambda users, items: f"{users} users, N = {items:,} ratings", png,
                below=0.15, above=0.03)
    print_tables(results, sizes, labels, "Baker et al. 2019, Figure 3")
    print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
