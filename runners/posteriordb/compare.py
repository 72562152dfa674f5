#!/usr/bin/env python3
"""Compare an sgmcmc run with a posteriordb posterior's reference draws.

    compare.py RUN_FOLDER --posteriordb DIR --posterior NAME [--names FILE] [--tolerance 4] [--summaries FILE]

Per reference parameter: the reference's and the run's mean and sd, the difference of the means in
reference sds and in combined MCSE, the ratio of the sds and their difference in combined MCSE of
an sd. The verdict holds (exit 0) when every mean and every sd is within `--tolerance` combined
MCSE and the run is complete; otherwise exit 1. Bad input (a folder that is not a finished run,
a names file that is wrong) is exit 2, naming the file. Names are mapped by names.csv (columns
reference,sgmcmc,transform), by default RUN_FOLDER/names.csv, else the one beside RUN_FOLDER, as
convert.py writes it.

MCSE by batch means, for the run's chains and the reference's alike (the run writes no ESS):
each chain is cut into b = ⌊√n⌋ batches of ⌊n/b⌋ consecutive draws, and with B batches in all
MCSE(mean)² = Var(batch means)/B (Flegal & Jones 2010's batch means, pooled over chains about the
grand mean, so chains that disagree widen it). For the sd s, by the delta method on
s² = mean of z_t = (x_t - x̄)²: MCSE(s) = MCSE(z̄)/(2s), z̄'s MCSE by the same batch means; this
holds for any distribution with a fourth moment, the normal's sd/√(2n) is its iid special case.
Combined: sqrt(MCSE_run² + MCSE_ref²), the two runs being independent.

Reads the run with runners/python's reader (NumPy and pandas); see runners/posteriordb/README.md.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))  # runners/python: the run folder reader
sys.path.insert(0, str(HERE))
from convert import Refused, database_file, read_json  # noqa: E402
from sgmcmc.read import RunFolderError, read_run  # noqa: E402

# How a parameter sampled unconstrained maps back: exp for x > 0, inv_logit (the logistic
# function 1/(1 + e^-u), as exp(-log(1 + e^-u)) so that no u overflows) for 0 < x < 1.
TRANSFORMS = {"identity": lambda x: x, "exp": np.exp, "inv_logit": lambda u: np.exp(-np.logaddexp(0.0, -u))}
MINIMUM_BATCHES = 20  # fewer make the batch variance itself too uncertain to judge by


@dataclass(frozen=True)
class Summary:
    mean: float
    sd: float
    mcse_mean: float
    mcse_sd: float


def batch_means_mcse(chains: list[np.ndarray], what: str) -> float:
    """The MCSE of the pooled mean of these chains by batch means (module docstring)."""
    means = []
    for chain in chains:
        batches = max(1, math.isqrt(len(chain)))
        size = len(chain) // batches
        kept = chain[len(chain) - batches * size:]  # the first few draws go when n is not b·size
        means.extend(kept.reshape(batches, size).mean(axis=1))
    if len(means) < MINIMUM_BATCHES:
        raise Refused(f"{what}: {sum(len(c) for c in chains)} draws make {len(means)} batches, "
                      f"fewer than the {MINIMUM_BATCHES} the MCSE needs")
    return float(np.std(means, ddof=1) / math.sqrt(len(means)))


def summarise(chains: list[np.ndarray], what: str) -> Summary:
    pooled = np.concatenate(chains)
    mean = float(pooled.mean())
    sd = float(pooled.std(ddof=1))
    squares = [(chain - mean) ** 2 for chain in chains]
    # Constant draws (a chain that never moved) have sd 0 and no spread to err by: MCSE 0, so
    # their sd is judged against the reference's own MCSE alone.
    mcse_sd = batch_means_mcse(squares, what) / (2.0 * sd) if sd > 0 else 0.0
    return Summary(mean, sd, batch_means_mcse(chains, what), mcse_sd)


def read_names(path: Path) -> list[tuple[str, str, str]]:
    """names.csv: (reference, sgmcmc, transform) rows; Refused naming the file and line."""
    try:
        with path.open(newline="") as file:
            rows = list(csv.reader(file))
    except OSError as error:
        raise Refused(f"{path}: cannot read it ({error.strerror})") from error
    if not rows or [cell.strip() for cell in rows[0]] != ["reference", "sgmcmc", "transform"]:
        raise Refused(f"{path}:1: expected the header reference,sgmcmc,transform")
    names = []
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != 3 or row[2].strip() not in TRANSFORMS:
            raise Refused(f"{path}:{line}: expected reference,sgmcmc,transform with transform "
                          f"{' or '.join(TRANSFORMS)}, got {','.join(row)}")
        names.append(tuple(cell.strip() for cell in row))
    return names


def find_names(run_folder: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    for candidate in (run_folder / "names.csv", run_folder.parent / "names.csv"):
        if candidate.is_file():
            return candidate
    raise Refused(f"no names.csv in {run_folder} or beside it: give --names FILE (convert.py writes one)")


def reference_chains(root: Path, posterior: str) -> tuple[Path, dict[str, list[np.ndarray]]]:
    """The reference draws: posteriordb stores a list of chains, each {parameter: [draws]}."""
    info = read_json(database_file(root, "posteriors", f"{posterior}.json"))
    name = info.get("reference_posterior_name")
    if not name:
        raise Refused(f"posteriordb has no reference posterior for {posterior}")
    path = database_file(root, "reference_posteriors", "draws", "draws", f"{name}.json.zip")
    chains = read_json(path)
    if not isinstance(chains, list) or not chains or not all(isinstance(c, dict) for c in chains):
        raise Refused(f"{path}: expected a list of chains, each an object of parameter draws")
    parameters = {}
    for parameter in chains[0]:
        parameters[parameter] = [np.asarray(chain[parameter], dtype=float) for chain in chains]
    return path, parameters


def reference_summaries(root: Path, posterior: str, summaries_file: Path | None) -> tuple[str, dict[str, Summary]]:
    """Each reference parameter's Summary, from the reference draws, or from a summaries file
    (JSON {posterior: {parameter: {mean, sd, mcse_mean, mcse_sd}}}, as tests/posteriordb/vendor.py
    writes it from the draws, for a copy of posteriordb that does not keep them); and where from."""
    if summaries_file is None:
        path, chains = reference_chains(root, posterior)
        summaries = {name: summarise(draws, f"{path} {name}") for name, draws in chains.items()}
        first = next(iter(chains.values()))
        return f"{path} ({len(first)} chains × {len(first[0])} draws)", summaries
    try:
        table = read_json(summaries_file)[posterior]
        return str(summaries_file), {name: Summary(float(row["mean"]), float(row["sd"]), float(row["mcse_mean"]),
                                                   float(row["mcse_sd"])) for name, row in table.items()}
    except (KeyError, TypeError, ValueError) as error:
        raise Refused(f"{summaries_file}: expected {{\"{posterior}\": {{parameter: {{mean, sd, mcse_mean, mcse_sd}}}}}}, "
                      f"missing {error}") from error


@dataclass(frozen=True)
class Row:
    reference_name: str
    sgmcmc_name: str
    reference: Summary
    ours: Summary

    @property
    def mean_in_sds(self) -> float:
        return (self.ours.mean - self.reference.mean) / self.reference.sd

    @property
    def mean_in_mcse(self) -> float:
        return (self.ours.mean - self.reference.mean) / math.hypot(self.ours.mcse_mean, self.reference.mcse_mean)

    @property
    def run_ess(self) -> float:
        """The run's effective sample size as batch means see it: (sd / MCSE of the mean)²."""
        return (self.ours.sd / self.ours.mcse_mean) ** 2 if self.ours.mcse_mean > 0 else math.nan

    @property
    def sd_ratio(self) -> float:
        return self.ours.sd / self.reference.sd

    @property
    def sd_in_mcse(self) -> float:
        return (self.ours.sd - self.reference.sd) / math.hypot(self.ours.mcse_sd, self.reference.mcse_sd)


def compare(run_folder: Path, root: Path, posterior: str, names_path: Path | None,
            summaries_file: Path | None = None) -> tuple[list[Row], str, str, float]:
    """The rows, the run's status, a line describing both sets of draws, the run's CPU seconds."""
    if not run_folder.is_dir():
        raise Refused(f"{run_folder}: no such folder (expected a folder `sgmcmc run` wrote)")
    names_file = find_names(run_folder, names_path)
    names = read_names(names_file)
    source, reference = reference_summaries(root, posterior, summaries_file)
    mapped = {reference_name for reference_name, _, _ in names}
    unknown = sorted(mapped - set(reference))
    if unknown:
        raise Refused(f"{names_file} maps {', '.join(unknown)}, which {source} does not have")
    missing = [parameter for parameter in reference if parameter not in mapped]
    if missing:
        raise Refused(f"{names_file} does not map {', '.join(missing)} of {source}")
    try:
        run = read_run(run_folder)
    except RunFolderError as error:
        raise Refused(str(error)) from error
    rows = []
    for reference_name, sgmcmc_name, transform in names:
        if sgmcmc_name not in run.columns:
            raise Refused(f"the run {run_folder} has no parameter `{sgmcmc_name}` ({names_file} maps {reference_name} to it)")
        ours = [TRANSFORMS[transform](table[sgmcmc_name].to_numpy(dtype=float)) for table in run.chains]
        rows.append(Row(reference_name, sgmcmc_name, reference[reference_name], summarise(ours, f"{run_folder} {sgmcmc_name}")))
    draws = (f"run: {run.num_chains} chains × {'/'.join(str(n) for n in sorted(set(run.num_draws)))} draws, "
             f"{run_cpu_seconds(run):.3g} CPU s; reference: {source}")
    return rows, run.status, draws, run_cpu_seconds(run)


def run_cpu_seconds(run) -> float:
    """The CPU seconds of the run's chains together, as their manifest entries record them."""
    return sum(float(chain.get("cpu_seconds", math.nan)) for chain in run.manifest.get("chains", []))


def overall_line(rows: list[Row], cpu_seconds: float) -> str:
    """One line over every parameter, the columns of the tables in runners/posteriordb/README.md
    and tests/posteriordb/README.md: the largest |Δmean| in reference sds, the sd ratios' range, and
    the run's smallest ESS, per CPU second of its chains."""
    worst = max(rows, key=lambda r: abs(r.mean_in_sds))
    ratios = [r.sd_ratio for r in rows]
    weakest = min(rows, key=lambda r: r.run_ess)
    return (f"overall: max |Δmean| {abs(worst.mean_in_sds):.3f} reference sds ({worst.reference_name}), "
            f"sd ratios {min(ratios):.3f}–{max(ratios):.3f}, min run ESS {weakest.run_ess:.0f} "
            f"({weakest.reference_name}), {weakest.run_ess / cpu_seconds:.4g} per CPU s ({cpu_seconds:.3g} CPU s)")


def print_table(rows: list[Row]) -> None:
    width = max(len("parameter"), *(len(r.reference_name) for r in rows))
    sgmcmc_width = max(len("sgmcmc"), *(len(r.sgmcmc_name) for r in rows))
    print(f"{'parameter':<{width}} {'sgmcmc':<{sgmcmc_width}} {'ref mean':>11} {'run mean':>11} {'Δ/sd_ref':>9} "
          f"{'Δ/MCSE':>7} {'ref sd':>10} {'run sd':>10} {'sd ratio':>8} {'Δsd/MCSE':>8} {'run ESS':>8}")
    for r in rows:
        print(f"{r.reference_name:<{width}} {r.sgmcmc_name:<{sgmcmc_width}} {r.reference.mean:>11.5g} {r.ours.mean:>11.5g} "
              f"{r.mean_in_sds:>9.4f} {r.mean_in_mcse:>7.2f} {r.reference.sd:>10.4g} {r.ours.sd:>10.4g} "
              f"{r.sd_ratio:>8.4f} {r.sd_in_mcse:>8.2f} {r.run_ess:>8.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_folder", type=Path, help="a folder `sgmcmc run` wrote")
    parser.add_argument("--posteriordb", required=True, type=Path, help="a posteriordb checkout (holds posterior_database/)")
    parser.add_argument("--posterior", required=True, help="the posterior's name, e.g. sblri-blr")
    parser.add_argument("--names", type=Path, help="names.csv (default: in RUN_FOLDER, else beside it)")
    parser.add_argument("--tolerance", type=float, default=4.0, help="in combined MCSE (4)")
    parser.add_argument("--summaries", type=Path, help="the reference's summaries instead of its draws (tests/posteriordb/vendor.py)")
    args = parser.parse_args(argv)
    try:
        rows, status, draws, cpu_seconds = compare(args.run_folder, args.posteriordb, args.posterior, args.names,
                                                   args.summaries)
    except Refused as refusal:
        print(f"compare.py: {refusal}", file=sys.stderr)
        return 2
    print(f"{args.posterior} against {args.run_folder} ({draws})")
    print_table(rows)
    print(overall_line(rows, cpu_seconds))
    failures = [f"{r.reference_name} mean off by {r.mean_in_mcse:.2f} MCSE" for r in rows
                if not abs(r.mean_in_mcse) <= args.tolerance]
    failures += [f"{r.reference_name} sd off by {r.sd_in_mcse:.2f} MCSE" for r in rows
                 if not abs(r.sd_in_mcse) <= args.tolerance]
    if status != "complete":
        failures.append(f"the run's status is {status}, not complete")
    if failures:
        print(f"verdict: does not hold ({'; '.join(failures)})")
        return 1
    print(f"verdict: holds (every mean and sd within {args.tolerance:g} combined MCSE)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
