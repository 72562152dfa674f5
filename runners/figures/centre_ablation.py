#!/usr/bin/python3
"""Does SGLD-CV's control variate pay on a latent-variable model, and with which centre? (issue #18)

For each size, through the real `sgmcmc` CLI:
  1. a burn-in: the SGLD preset for --burn-in iterations from the model's own start;
  2. from the burn-in's mean (run.init, run.init_mean): SGLD, and SGLD-CV centred there
     (estimator.sgd_iterations = 0: no SGD phase; the burn-in is the centring, and its cost is
     reported beside the chains'), for --iterations each;
  3. `sgmcmc gradient-variance` at --points draws of that SGLD chain: tr Cov of the estimate of
     SGLD-CV centred at the burn-in mean and of the preset's own centre (SGD from the model's start),
     against minibatch SGLD's (Baker et al. 2019, Lemma 1: the ratio is what decides the contest).
Prints one table: per size, the final metric and CPU seconds of each chain, SGLD's metric at
SGLD-CV's final CPU seconds (give SGLD more --sgld-iterations to reach them), and the median
variance ratio (SGLD's / SGLD-CV's) of each centre. CPU seconds, since runs may share cores.

  runners/figures/centre_ablation.py --model lda --sizes 3000,20000,80000 [--sgmcmc build/release/bin/sgmcmc]
  runners/figures/centre_ablation.py --model pmf --sizes 100,300,943
  [--out runs/centre-ablation] [--burn-in 1000] [--iterations 2000] [--sgld-iterations N] [--points 5] [--repeats 30]
  [--set KEY=VALUE ...]  (e.g. --set 'model.data="docword.kos.txt.gz"' --set model.vocabulary_size=1000
                         with --model lda --size-key model.max_docs)

lda sizes are simulated corpora's documents (model.docs, 1,000 words, 20 planted topics; with
model.data, the file's first documents by --size-key model.max_docs), pmf's the first users of the
simulated MovieLens shape (model.max_users).
"""
import argparse
import csv
import statistics
import subprocess
import sys
from pathlib import Path

from figure_runs import at_seconds, run_preset  # runners/figures, beside this script

MODELS = {  # presets, the key the sizes set, the fixed keys, the metric (and whether lower is better)
    "lda": ("lda-sgld", "lda-sgldcv", "model.docs", {"model.words": 1000, "model.true_topics": 20}, "perplexity"),
    "pmf": ("pmf-sgld", "pmf-sgldcv", "model.max_users", {}, "log_predictive_density"),
}


def sgmcmc(args, *words):
    command = [args.sgmcmc, *words]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}\n{result.stdout}{result.stderr}")


def settings(pairs):
    return [word for key, value in pairs.items() for word in ("--set", f"{key}={value}")]


def run(args, preset, pairs, out, metric):
    """The run (figure_runs.run_preset); returns (items, [(CPU seconds, metric)] of chain 1)."""
    items, rows = run_preset(args.sgmcmc, preset, pairs, out)
    return items, [(row["cpu_seconds"], row[metric]) for row in rows if row["chain"] == 1]


def median_ratio(path):
    with open(path, newline="") as f:
        return statistics.median(float(row["ratio"]) for row in csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--sizes", required=True, help="comma-separated values of the size key")
    parser.add_argument("--size-key", help="the key the sizes set (default: model.docs for lda, model.max_users for pmf)")
    parser.add_argument("--sgmcmc", default="sgmcmc")
    parser.add_argument("--out", type=Path, default=Path("runs/centre-ablation"))
    parser.add_argument("--burn-in", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--sgld-iterations", type=int,
                        help="SGLD's iterations (default --iterations); more, to read SGLD at SGLD-CV's CPU seconds")
    parser.add_argument("--points", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every run (repeatable)")
    args = parser.parse_args()
    sgld, sgldcv, size_key, fixed, metric = MODELS[args.model]
    size_key = args.size_key or size_key
    sgld_iterations = args.sgld_iterations or args.iterations
    extra = dict(pair.split("=", 1) for pair in args.set)
    if "model.data" in extra:  # the simulation's keys do not apply to a file
        fixed = {}

    print(f"{args.model}: SGLD and SGLD-CV for {args.iterations} iterations from the mean of a {args.burn_in}-iteration "
          f"SGLD burn-in; {metric} of chain 1 and its CPU seconds; variance ratio = median over {args.points} draws of "
          f"tr Cov[SGLD's estimate] / tr Cov[SGLD-CV's]")
    print(f"{'size':>8} {'items':>8} {'burn-in s':>9} {'SGLD':>10} {'s':>6} {'SGLD-CV':>10} {'s':>6} "
          f"{'SGLD at SGLD-CV s':>17} {'ratio, centre at mean':>21} {'ratio, preset centre':>20}")
    for size in args.sizes.split(","):
        folder = args.out / f"{args.model}-{size}"
        common = {**fixed, size_key: size, **extra}
        burn_in, chain_sgld, chain_cv = folder / "burn-in", folder / "sgld", folder / "sgld-cv"
        _, burn_in_curve = run(args, sgld, {**common, "run.iterations": args.burn_in,
                                            "run.thin": max(1, args.burn_in // 20)}, burn_in, metric)
        start = {"run.init": f'"{burn_in}"', "run.init_mean": "true"}
        at_mean = {**common, **start, "estimator.sgd_iterations": 0}
        items, sgld_curve = run(args, sgld, {**common, **start, "run.iterations": sgld_iterations,
                                             "run.thin": max(1, sgld_iterations // 20)}, chain_sgld, metric)
        _, cv_curve = run(args, sgldcv, {**at_mean, "run.iterations": args.iterations, "run.thin": args.iterations},
                          chain_cv, metric)
        ratios = []
        for name, keys in (("mean", at_mean), ("preset", common)):
            table = folder / f"variance-{name}.csv"
            sgmcmc(args, "gradient-variance", "--preset", sgldcv, "--at", str(chain_sgld), "--points", str(args.points),
                   "--repeats", str(args.repeats), "--csv", str(table), *settings(keys))
            ratios.append(median_ratio(table))
        (seconds_sgld, value_sgld), (seconds_cv, value_cv) = sgld_curve[-1], cv_curve[-1]
        same_seconds = at_seconds(sgld_curve, seconds_cv)
        same_seconds = "ended before" if same_seconds is None else f"{same_seconds:.4g}"
        print(f"{size:>8} {items:8,} {burn_in_curve[-1][0]:9.2f} {value_sgld:10.4g} {seconds_sgld:6.2f} "
              f"{value_cv:10.4g} {seconds_cv:6.2f} {same_seconds:>17} {ratios[0]:21.2f} {ratios[1]:20.2f}")


if __name__ == "__main__":
    main()
