#!/usr/bin/python3
"""Baker et al. (2019)'s Figure 2: SGLD-CV's estimate of the held-out log predictive density, with and without
zero-variance (ZV) post-processing, over several seeds, as box plots.

For each seed, on the same data (run.data_seed = 1), runs the real `sgmcmc` CLI with SGLD-CV in the paper's configuration (covtype-baker2019 with estimator cv), recording the cheap
control-variate gradient with every draw ([output] gradients = "cv", the choice of Baker et al. 2019, §4) and the
model's quantity `held_out_log_density` (one draw's mean held-out log-likelihood); then
`sgmcmc zv --order 1 --csv` gives the plain and the first-order ZV estimate of its posterior mean.
Writes zv_figure2.png and prints the estimates and their spread across seeds.

  runners/figures/zv_figure.py --sgmcmc build/release/bin/sgmcmc --out runs/figure2
  [--rows 581012 | --data FILE] [--step-size H] [--seeds 5] [--iterations 5000] [--set KEY=VALUE ...]

Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import statistics
import subprocess
import sys
from pathlib import Path

QUANTITY = "held_out_log_density"


def check(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}\n{result.stdout}{result.stderr}")


def estimates(args, seed):
    """(plain estimate, ZV-1 estimate, in-run variance ratio) of QUANTITY's posterior mean."""
    out = args.out / f"seed-{seed}"
    # The paper's SGLD-CV: its scalar step with estimator cv (the covtype-sgldcv preset runs with the
    # Fisher mass instead).
    command = [args.sgmcmc, "run", "--preset", "covtype-baker2019", "--set", 'estimator.name="cv"',
               "--set", "estimator.sgd_decay_b=1000", "--out", str(out), "--replace", "--quiet",
               "--set", f'output.gradients="{args.gradients}"', "--set", f"run.seed={seed}", "--set", "run.data_seed=1",
               "--set", f"run.iterations={args.iterations}"]
    command += ["--set", f'model.data="{args.data}"'] if args.data else ["--set", f"model.n={args.rows}"]
    if args.step_size:
        command += ["--set", f"integrator.step_size={args.step_size!r}"]
    for setting in args.set:
        command += ["--set", setting]
    check(command)
    check([args.sgmcmc, "zv", str(out), "--order", "1", "--csv", str(out / "zv.csv")])
    with open(out / "zv.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["quantity"] == QUANTITY)
    return float(row["mean"]), float(row["zv1_mean"]), float(row["var_ratio1"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sgmcmc", default="sgmcmc")
    parser.add_argument("--out", type=Path, default=Path("runs/figure2"))
    parser.add_argument("--rows", type=int, default=581012, help="rows to simulate (without --data)")
    parser.add_argument("--data", help="a LIBSVM or CSV file instead of simulated rows")
    parser.add_argument("--step-size", type=float, help="the step for one item, instead of the preset's (the chain gets H / N)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--gradients", default="cv", help="recorded gradient: cv (Baker et al. 2019's choice) or exact")
    parser.add_argument("--iterations", type=int, default=50000)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="more settings for every run, as sgmcmc's --set (repeatable)")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    args.out.mkdir(parents=True, exist_ok=True)
    results = [estimates(args, seed) for seed in range(1, args.seeds + 1)]
    plain = [r[0] for r in results]
    zv = [r[1] for r in results]

    print(f"{QUANTITY}: posterior mean estimated by SGLD-CV, without and with first-order ZV (Baker et al. 2019, Figure 2)")
    print(f"{'seed':>4} {'SGLD-CV':>12} {'SGLD-CV-ZV':>12} {'in-run var ratio':>17}")
    for seed, (p, z, ratio) in enumerate(results, start=1):
        print(f"{seed:4} {p:12.6f} {z:12.6f} {ratio:17.1f}")
    if len(results) > 1:
        spread_plain, spread_zv = statistics.stdev(plain), statistics.stdev(zv)
        print(f"sd across seeds: {spread_plain:.2e} without ZV, {spread_zv:.2e} with; variance ratio "
              f"{(spread_plain / spread_zv) ** 2:.1f}")

    figure, axis = plt.subplots(figsize=(5, 5))
    axis.boxplot([plain, zv], labels=["SGLD-CV", "SGLD-CV-ZV"])
    axis.set_ylabel(f"estimate of E[{QUANTITY}]")
    axis.set_title(f"{len(results)} seeds, {args.iterations} iterations each")
    figure.tight_layout()
    png = args.out / "zv_figure2.png"
    figure.savefig(png, dpi=90)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
