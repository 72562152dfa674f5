#!/usr/bin/env python3
"""Write a posteriordb posterior as an sgmcmc `glm` run: data.csv, config.toml and names.csv.

    convert.py --posteriordb DIR --posterior NAME --out FOLDER [--sampler exact|sgldcv]

DIR is a posteriordb checkout (the folder holding `posterior_database/`). The posterior's Stan
model must be one of MODELS (stan_models.py beside this script), the table of the Stan models it
knows, each written by hand from the Stan file and checked against it by a fingerprint of its text. Exit 2,
naming what is missing, when the posterior, its data or its model cannot be expressed.
See runners/posteriordb/README.md (and how to add a model there). Needs Python 3 and NumPy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import zipfile
from pathlib import Path

import numpy as np

from stan_models import (  # noqa: E402  (the table of Stan models, beside this script)
    Columns, Data, GLM_COEFFICIENT_PRIORS, GLM_HAS_INTERCEPT_PRIOR, GLM_NOISE_PRIORS, LinearRegression, MODELS, Prior, Refused)

# ---- The sampler every converted posterior runs ----------------------------------------------
# Exact: MALA with full-data gradients and an MH test per step, the step adapted by dual averaging
# to an acceptance of 0.6 (near MALA's optimal 0.574, Roberts & Rosenthal 1998) and a dense mass
# by Stan's windows during the warmup (runners/README.md, Samplers). Not HMC with 8 leapfrog
# steps: on sblri-blr (σ fixed) two coefficients had a bulk ESS of 75 in 10,000 draws, R-hat 1.04
# (the cause not investigated; a trajectory near a period of some coordinates would do it), where
# MALA thinned by 4 gave 7,400-9,100.
# 4 chains × 2,500 kept draws give an ESS of several thousand, so the mean's MCSE is about
# 1/90 of a posterior sd, as fine as the reference's 10,000 draws.
#
# Every chain starts at the least-squares fit (start.csv) with the Laplace approximation's
# precision as its first mass (start_and_mass): from zeros, with a unit mass, earnings' intercept
# (posterior sd 9,700, correlation -0.9999 with the slope) was still far from its posterior after
# 2,000 warmup iterations (R-hat 2.6). Neither changes the law the chain samples.
SAMPLER = """\
[estimator]
name = "exact"

[integrator]
name = "mala"
step_size = 0.1
metric = "dense"
mass = {mass}
adapt_mass = false
adapt_step_size = true
target_acceptance = 0.6

[corrector]
name = "mh"
every = 1

[run]
warmup = 2000
iterations = 10000
thin = 4
chains = 4
seed = 1
eval_every = 100
init = "start.csv"
"""


# The uncorrected stochastic-gradient sampler of tests/posteriordb/README.md's bias table
# (`--sampler sgldcv`): SGLD-CV (Baker et al. 2019) with the dense Fisher mass sgmcmc computes at
# cv's centre and the step the cover type race used with that mass (runners/README.md, Samplers:
# `step_size = 0.05`, `scale_step_with_n = false`; issue 46: no preset carries a Fisher-mass step
# yet). Batches of a tenth of the rows (at least 5), no warmup (the centring replaces burn-in, as
# in the SGLD-CV presets), the centring's SGD starting from the least-squares fit (start.csv).
# No MH test: the draws carry SGLD's discretisation and gradient-noise bias, which the table
# reports in reference sds. 40,000 iterations thinned by 10 per chain.
SGLDCV_SAMPLER = """\
[estimator]
name = "cv"
batch_size = {batch_size}

[integrator]
name = "sgld"
step_size = 0.05
scale_step_with_n = false
metric = "dense"
mass = "fisher"

[corrector]
name = "none"

[run]
warmup = 0
iterations = 40000
thin = 10
chains = 4
seed = 1
eval_every = 1000
init = "start.csv"
"""


def sgldcv_batch_size(rows: int) -> int:
    return min(rows, max(5, math.ceil(rows / 10)))


# ---- Reading posteriordb ---------------------------------------------------------------------

def database_file(root: Path, *parts: str) -> Path:
    path = root.joinpath("posterior_database", *parts)
    if not path.is_file():
        raise Refused(f"{path}: no such file (is {root} a posteriordb checkout, the folder holding posterior_database/?)")
    return path


def read_json(path: Path):
    try:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
                if len(names) != 1:
                    raise Refused(f"{path}: expected one JSON file in the zip, found {len(names)}")
                return json.loads(archive.read(names[0]))
        return json.loads(path.read_text())
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise Refused(f"{path}: not readable JSON ({error})") from error


def posterior_info(root: Path, posterior: str) -> dict:
    return read_json(database_file(root, "posteriors", f"{posterior}.json"))


def stan_fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def known_model(root: Path, model_name: str) -> LinearRegression:
    if model_name not in MODELS:
        raise Refused(f"Stan model `{model_name}` is not in convert.py's table MODELS "
                      f"(runners/posteriordb/README.md says how to add one)")
    model = MODELS[model_name]
    stan = database_file(root, "models", "stan", f"{model_name}.stan")
    if stan_fingerprint(stan) != model.stan_sha256:
        raise Refused(f"{stan}: its text differs from the one MODELS['{model_name}'] was written for "
                      f"(SHA-256 {stan_fingerprint(stan)}..., expected {model.stan_sha256}...): check the entry "
                      f"against the file and update its stan_sha256")
    return model


# ---- Writing the run -------------------------------------------------------------------------

def resolved(prior, data: Data) -> Prior | None:
    return prior(data) if callable(prior) else prior


def prior_keys(prior: Prior, key: str) -> list[str]:
    """TOML lines for one prior: `<key> = family` and its scale and df."""
    lines = [f'{key} = "{prior.family}"']
    if prior.scale is not None:
        lines.append(f"{key}_scale = {prior.scale!r}")
    if prior.df is not None:
        lines.append(f"{key}_df = {prior.df!r}")
    return lines


def model_section(model: LinearRegression, data: Data, has_intercept: bool) -> list[str]:
    """The [model] keys, or Refused naming what glm lacks."""
    coefficient = resolved(model.coefficient_prior, data)
    intercept = resolved(model.intercept_prior, data) if has_intercept else None
    if coefficient.family not in GLM_COEFFICIENT_PRIORS:
        raise Refused(f"the coefficients' prior is {coefficient.family}, which glm's `prior` does not offer "
                      f"(it has {', '.join(sorted(GLM_COEFFICIENT_PRIORS))})")
    if coefficient.location != 0.0:
        raise Refused(f"the coefficients' prior is centred at {coefficient.location!r}; glm's are centred at 0")
    if model.noise_prior.family not in GLM_NOISE_PRIORS:
        raise Refused(f"σ's prior is {model.noise_prior.family}, which glm's `noise_prior` does not offer")
    lines = ['name = "glm"', 'family = "gaussian"', 'link = "identity"', 'data = "data.csv"', "test_size = 0",
             f"intercept = {'true' if has_intercept else 'false'}"]
    lines += prior_keys(coefficient, "prior")
    if intercept is not None and intercept != coefficient:
        if not GLM_HAS_INTERCEPT_PRIOR:
            raise Refused(f"the intercept's prior ({intercept.family}, location {intercept.location!r}, scale "
                          f"{intercept.scale!r}) differs from the coefficients'; glm has no separate intercept prior")
        lines += prior_keys(intercept, "intercept_prior")
        lines.append(f"intercept_prior_location = {intercept.location!r}")
    lines += prior_keys(model.noise_prior, "noise_prior")
    return lines


def write_data(path: Path, response: np.ndarray, columns: Columns) -> None:
    """The response first, then the features, full precision (repr round-trips a double)."""
    names = ["y"] + [f"x{j + 1}" for j in range(len(columns))]
    matrix = np.column_stack([response] + [column for _, column in columns])
    with path.open("w") as out:
        out.write(",".join(names) + "\n")
        for row in matrix:
            out.write(",".join(repr(float(x)) for x in row) + "\n")


def prior_precision(prior: Prior | None) -> float:
    """The curvature a prior adds at its centre: 1/s² for a normal, else none counted."""
    return 1.0 / prior.scale ** 2 if prior is not None and prior.family == "normal" else 0.0


def start_and_mass(model: LinearRegression, data: Data, response: np.ndarray, columns: Columns) -> tuple[np.ndarray, np.ndarray]:
    """A start θ₀ = (β̂, log σ̂) from least squares, σ̂² = RSS/N, and the Laplace approximation's
    precision there in glm's coordinates (β, u = log σ): XᵀX/σ̂² plus the normal priors' 1/s² for
    β, and for u the second derivative of Σ_i [u + r_i² e^{-2u}/2], which is 2N at σ̂; the cross
    terms Σ_i x_i r_i vanish at β̂."""
    has_intercept = model.intercept is not None
    design = np.column_stack(([np.ones_like(response)] if has_intercept else []) + [column for _, column in columns])
    fit, *_ = np.linalg.lstsq(design, response, rcond=None)
    residual_variance = float(np.mean((response - design @ fit) ** 2))
    if not residual_variance > 0:
        raise Refused("the data are fitted exactly by least squares: σ's posterior is degenerate")
    precision = np.zeros((len(fit) + 1, len(fit) + 1))
    precision[:-1, :-1] = design.T @ design / residual_variance
    coefficient = prior_precision(resolved(model.coefficient_prior, data))
    intercept = prior_precision(resolved(model.intercept_prior, data)) if model.intercept_prior else coefficient
    precision[np.diag_indices(len(fit))] += [intercept] * has_intercept + [coefficient] * (len(fit) - has_intercept)
    precision[-1, -1] = 2.0 * len(response)
    return np.append(fit, 0.5 * math.log(residual_variance)), precision


def converted_data(root: Path, posterior: str) -> tuple[dict, LinearRegression, Data, np.ndarray, Columns]:
    """The posterior's info, table entry, data, response and design (transformed data done)."""
    info = posterior_info(root, posterior)
    model = known_model(root, info["model_name"])
    data = read_json(database_file(root, "data", "data", f"{info['data_name']}.json.zip"))
    response = model.response(data)
    columns = model.design(data)
    for name, column in [("the response", response)] + columns:
        if column.shape != response.shape:
            raise Refused(f"{name}: {column.shape[0]} rows, the response has {response.shape[0]}")
        if not np.all(np.isfinite(column)):
            raise Refused(f"{name}: a value that is not finite at row {int(np.argmin(np.isfinite(column))) + 1}")
    return info, model, data, response, columns


def parameter_names(model: LinearRegression, columns: Columns) -> list[tuple[str, str, str]]:
    """names.csv's rows: the Stan name, sgmcmc's glm name, the transform from glm's to Stan's."""
    coefficients = [stan_name for stan_name, _ in columns]
    names = [(model.intercept, "intercept", "identity")] if model.intercept is not None else []
    names += [(stan_name, f"beta.{j + 1}", "identity") for j, stan_name in enumerate(coefficients)]
    return names + [(model.noise_name, "log_noise_sd", "exp")]


def sampler_section(sampler: str, mass: np.ndarray, rows: int) -> str:
    """The [estimator], [integrator], [corrector] and [run] tables of `--sampler`."""
    if sampler == "sgldcv":
        return SGLDCV_SAMPLER.replace("{batch_size}", str(sgldcv_batch_size(rows)))
    return SAMPLER.replace("{mass}", "[" + ", ".join(repr(float(x)) for x in mass.ravel()) + "]")


def convert(root: Path, posterior: str, out: Path, sampler: str = "exact") -> list[tuple[str, str, str]]:
    info, model, data, response, columns = converted_data(root, posterior)
    model_lines = model_section(model, data, has_intercept=model.intercept is not None)
    out.mkdir(parents=True, exist_ok=True)
    write_data(out / "data.csv", response, columns)
    title = f"# posteriordb {posterior} (Stan model {info['model_name']}), written by runners/posteriordb/convert.py\n"
    start, mass = start_and_mass(model, data, response, columns)
    sampler = sampler_section(sampler, mass, len(response))
    (out / "config.toml").write_text(title + "[model]\n" + "\n".join(model_lines) + "\n\n" + sampler)
    names = parameter_names(model, columns)
    (out / "start.csv").write_text(",".join(ours for _, ours, _ in names) + "\n" +
                                   ",".join(repr(float(x)) for x in start) + "\n")
    (out / "names.csv").write_text("reference,sgmcmc,transform\n" + "".join(",".join(row) + "\n" for row in names))
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posteriordb", required=True, type=Path, help="a posteriordb checkout (holds posterior_database/)")
    parser.add_argument("--posterior", required=True, help="a posterior's name, e.g. kidiq-kidscore_momiq")
    parser.add_argument("--out", required=True, type=Path, help="the folder to write data.csv, config.toml, names.csv in")
    parser.add_argument("--sampler", choices=("exact", "sgldcv"), default="exact",
                        help="exact: MALA + MH (SAMPLER); sgldcv: SGLD-CV with the Fisher mass, uncorrected (SGLDCV_SAMPLER)")
    args = parser.parse_args(argv)
    try:
        rows = convert(args.posteriordb, args.posterior, args.out, args.sampler)
    except Refused as refusal:
        print(f"convert.py: {args.posterior}: {refusal}", file=sys.stderr)
        return 2
    print(f"{args.out}: data.csv, config.toml, names.csv ({len(rows)} parameters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
