#!/usr/bin/env python3
"""Write a posteriordb posterior as an sgmcmc `glm` run: data.csv, config.toml and names.csv.

    convert.py --posteriordb DIR --posterior NAME --out FOLDER [--sampler exact|sgldcv]

DIR is a posteriordb checkout (the folder holding `posterior_database/`). The posterior's Stan
model must be one of MODELS below, the table of the Stan models this script knows, each written
by hand from the Stan file and checked against it by a fingerprint of the file's text. Exit 2,
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

Data = dict  # a posteriordb data set: its JSON object, name -> number or (nested) list
Columns = list  # [(the Stan name of a coefficient, its column in the design as an ndarray)]


class Refused(Exception):
    """The posterior cannot be converted; the message says why (exit 2)."""


# ---- What the glm plugin of this source tree accepts ----------------------------------------
# Widen these when glm gains a key (plugins/glm/README.md); a model that needs more is refused
# with the reason instead of being written as a configuration the CLI would reject.
GLM_COEFFICIENT_PRIORS = {"normal", "laplace", "student_t", "flat"}
GLM_NOISE_PRIORS = {"half_normal", "half_cauchy", "half_student_t", "exponential", "flat"}
GLM_HAS_INTERCEPT_PRIOR = True  # intercept_prior, intercept_prior_location/_scale/_df


@dataclass(frozen=True)
class Prior:
    """A prior as glm names it: `flat`, `normal`, `student_t`, `half_normal`, `half_cauchy`,
    `half_student_t`, `exponential`; location 0 unless given (the half priors are on σ > 0)."""
    family: str
    scale: float | None = None
    df: float | None = None
    location: float = 0.0


FLAT = Prior("flat")


@dataclass(frozen=True)
class LinearRegression:
    """y ~ normal(intercept + Σ_j β_j x_j, σ), rows independent, as the Stan file says.

    response(data) and design(data) do the Stan file's `transformed data` (logs, centring,
    indicators); design returns the non-intercept coefficients in order with their Stan names.
    intercept is the Stan name of the coefficient of the constant column (None: no intercept).
    stan_sha256 is the start of the Stan file's SHA-256: the entry was written for that text."""
    stan_sha256: str
    response: Callable[[Data], np.ndarray]
    design: Callable[[Data], Columns]
    intercept: str | None
    coefficient_prior: Prior | Callable[[Data], Prior]
    noise_prior: Prior
    intercept_prior: Prior | Callable[[Data], Prior] | None = None  # None: the coefficients' prior
    noise_name: str = "sigma"


# ---- Transformed data, as the Stan files write it --------------------------------------------

def vector(data: Data, name: str) -> np.ndarray:
    if name not in data:
        raise Refused(f"the data has no `{name}` (it has {', '.join(sorted(data))})")
    values = np.asarray(data[name], dtype=float)
    if values.ndim != 1:
        raise Refused(f"data `{name}`: expected a vector, got an array of shape {values.shape}")
    return values


def log_of(data: Data, name: str, base: float = math.e) -> np.ndarray:
    values = vector(data, name)
    if np.any(values <= 0):
        row = int(np.argmax(values <= 0))
        raise Refused(f"data `{name}` has {values[row]!r} at element {row + 1}: its log is not finite")
    return np.log(values) / math.log(base)


def product(data: Data, *names: str) -> np.ndarray:
    return np.prod([vector(data, name) for name in names], axis=0)


def centred(values: np.ndarray) -> np.ndarray:
    return values - values.mean()


def standardised(values: np.ndarray, sds: float = 1.0) -> np.ndarray:
    """(x - mean(x)) / (sds · sd(x)), sd with N - 1 as Stan's sd()."""
    return (values - values.mean()) / (sds * values.std(ddof=1))


def indicator(data: Data, name: str, level: int) -> np.ndarray:
    return (vector(data, name) == level).astype(float)


def coefficients(*columns: np.ndarray, first: int = 2, name: str = "beta") -> Columns:
    """Stan's beta[first], beta[first + 1], ... for the given columns."""
    return [(f"{name}[{first + j}]", column) for j, column in enumerate(columns)]


def matrix_columns(data: Data, name: str, coefficient: str, skip_first: bool = False) -> Columns:
    if name not in data:
        raise Refused(f"the data has no `{name}` (it has {', '.join(sorted(data))})")
    matrix = np.asarray(data[name], dtype=float)
    if matrix.ndim != 2:
        raise Refused(f"data `{name}`: expected an N × D matrix")
    start = 1 if skip_first else 0
    return [(f"{coefficient}[{j + 1 - start}]", matrix[:, j]) for j in range(start, matrix.shape[1])]


def beta_from_2(*columns: Callable[[Data], np.ndarray]):
    """beta[2], beta[3], ... times these columns (beta[1] is the intercept)."""
    return lambda d: coefficients(*(column(d) for column in columns))


def col(name: str) -> Callable[[Data], np.ndarray]:
    return lambda d: vector(d, name)


def brms_centred_design(d: Data) -> Columns:
    """brms's `Xc`: X without its first (intercept) column, each column centred."""
    return [(name, centred(column)) for name, column in matrix_columns(d, "X", "b", skip_first=True)]


# ---- The Stan models this script knows -------------------------------------------------------
# Each entry is read off posterior_database/models/stan/<model>.stan. A sampling statement
# missing for a parameter is a flat prior; `real<lower=0> sigma` with `sigma ~ cauchy(0, s)` is a
# half-Cauchy (the truncation's constant does not matter).
HALF_CAUCHY_2_5 = Prior("half_cauchy", scale=2.5)

MODELS: dict[str, LinearRegression] = {
    # blr (sblri, sblrc): y ~ normal(X β, σ), β ~ normal(0, 10), σ ~ normal(0, 10) on σ > 0; X
    # has no constant column.
    "blr": LinearRegression(
        "e6407c4391ab11c0", col("y"), lambda d: matrix_columns(d, "X", "beta"), intercept=None,
        coefficient_prior=Prior("normal", scale=10.0), noise_prior=Prior("half_normal", scale=10.0)),
    # kidiq (Gelman & Hill 2007, ch. 3): flat β, σ ~ cauchy(0, 2.5).
    "kidscore_momiq": LinearRegression(
        "4a09d0baf54d23c5", col("kid_score"), beta_from_2(col("mom_iq")), "beta[1]", FLAT, HALF_CAUCHY_2_5),
    "kidscore_momhs": LinearRegression(
        "555e35e50b5628fb", col("kid_score"), beta_from_2(col("mom_hs")), "beta[1]", FLAT, HALF_CAUCHY_2_5),
    "kidscore_momhsiq": LinearRegression(
        "de5689ba783aca36", col("kid_score"), beta_from_2(col("mom_hs"), col("mom_iq")), "beta[1]", FLAT, HALF_CAUCHY_2_5),
    "kidscore_interaction": LinearRegression(
        "da69847f12b07ca3", col("kid_score"),
        beta_from_2(col("mom_hs"), col("mom_iq"), lambda d: product(d, "mom_hs", "mom_iq")), "beta[1]", FLAT, HALF_CAUCHY_2_5),
    # kidiq_with_mom_work: flat β, flat σ.
    "kidscore_interaction_c": LinearRegression(
        "ab4821a0785f15eb", col("kid_score"),
        beta_from_2(lambda d: centred(vector(d, "mom_hs")), lambda d: centred(vector(d, "mom_iq")),
            lambda d: centred(vector(d, "mom_hs")) * centred(vector(d, "mom_iq"))), "beta[1]", FLAT, FLAT),
    "kidscore_interaction_c2": LinearRegression(
        "f0e2de7b978b8ee2", col("kid_score"),
        beta_from_2(lambda d: vector(d, "mom_hs") - 0.5, lambda d: vector(d, "mom_iq") - 100.0,
            lambda d: (vector(d, "mom_hs") - 0.5) * (vector(d, "mom_iq") - 100.0)), "beta[1]", FLAT, FLAT),
    "kidscore_interaction_z": LinearRegression(
        "af2ebd6cd04a66de", col("kid_score"),
        beta_from_2(lambda d: standardised(vector(d, "mom_hs"), 2.0), lambda d: standardised(vector(d, "mom_iq"), 2.0),
            lambda d: standardised(vector(d, "mom_hs"), 2.0) * standardised(vector(d, "mom_iq"), 2.0)),
        "beta[1]", FLAT, FLAT),
    "kidscore_mom_work": LinearRegression(
        "fe41ba28792cddf9", col("kid_score"),
        beta_from_2(*(lambda d, level=level: indicator(d, "mom_work", level) for level in (2, 3, 4))), "beta[1]", FLAT, FLAT),
    # earnings (Gelman & Hill 2007, ch. 4): flat β, flat σ.
    "earn_height": LinearRegression(
        "cabef66313b5b156", col("earn"), beta_from_2(col("height")), "beta[1]", FLAT, FLAT),
    "log10earn_height": LinearRegression(
        "69df8e51be53f4e4", lambda d: log_of(d, "earn", 10.0), beta_from_2(col("height")), "beta[1]", FLAT, FLAT),
    "logearn_height": LinearRegression(
        "2eca5eaba6ba31d6", lambda d: log_of(d, "earn"), beta_from_2(col("height")), "beta[1]", FLAT, FLAT),
    "logearn_height_male": LinearRegression(
        "ec123759efa70e17", lambda d: log_of(d, "earn"), beta_from_2(col("height"), col("male")), "beta[1]", FLAT, FLAT),
    "logearn_interaction": LinearRegression(
        "44c458ff38280439", lambda d: log_of(d, "earn"),
        beta_from_2(col("height"), col("male"), lambda d: product(d, "height", "male")), "beta[1]", FLAT, FLAT),
    "logearn_interaction_z": LinearRegression(
        "37e04ae7ae7e92d3", lambda d: log_of(d, "earn"),
        beta_from_2(lambda d: standardised(vector(d, "height")), col("male"),
            lambda d: standardised(vector(d, "height")) * vector(d, "male")), "beta[1]", FLAT, FLAT),
    "logearn_logheight_male": LinearRegression(
        "8855b00850ebc51d", lambda d: log_of(d, "earn"), beta_from_2(lambda d: log_of(d, "height"), col("male")),
        "beta[1]", FLAT, FLAT),
    # mesquite (Gelman & Hill 2007, ch. 4): flat β, flat σ.
    "mesquite": LinearRegression(
        "5233a18e3656e423", col("weight"),
        beta_from_2(*(col(name) for name in ("diam1", "diam2", "canopy_height", "total_height", "density", "group"))),
        "beta[1]", FLAT, FLAT),
    "logmesquite": LinearRegression(
        "fdeda33c27e66799", lambda d: log_of(d, "weight"),
        beta_from_2(*(lambda d, name=name: log_of(d, name)
              for name in ("diam1", "diam2", "canopy_height", "total_height", "density")), col("group")),
        "beta[1]", FLAT, FLAT),
    "logmesquite_logva": LinearRegression(
        "f21fbceb941f0484", lambda d: log_of(d, "weight"),
        beta_from_2(lambda d: np.log(product(d, "diam1", "diam2", "canopy_height")), lambda d: np.log(product(d, "diam1", "diam2")),
            col("group")), "beta[1]", FLAT, FLAT),
    "logmesquite_logvas": LinearRegression(
        "e0fdd63267a96b07", lambda d: log_of(d, "weight"),
        beta_from_2(lambda d: np.log(product(d, "diam1", "diam2", "canopy_height")), lambda d: np.log(product(d, "diam1", "diam2")),
            lambda d: np.log(vector(d, "diam1") / vector(d, "diam2")), lambda d: log_of(d, "total_height"),
            lambda d: log_of(d, "density"), col("group")), "beta[1]", FLAT, FLAT),
    "logmesquite_logvash": LinearRegression(
        "100f4d97f30927b3", lambda d: log_of(d, "weight"),
        beta_from_2(lambda d: np.log(product(d, "diam1", "diam2", "canopy_height")), lambda d: np.log(product(d, "diam1", "diam2")),
            lambda d: np.log(vector(d, "diam1") / vector(d, "diam2")), lambda d: log_of(d, "total_height"),
            col("group")), "beta[1]", FLAT, FLAT),
    "logmesquite_logvolume": LinearRegression(
        "14615192a3579e2b", lambda d: log_of(d, "weight"),
        beta_from_2(lambda d: np.log(product(d, "diam1", "diam2", "canopy_height"))), "beta[1]", FLAT, FLAT),
    # nes1972 ... nes2000 (Gelman & Hill 2007, ch. 4): flat β, flat σ; age as a factor.
    "nes": LinearRegression(
        "260e7acec9bef905", col("partyid7"),
        beta_from_2(col("real_ideo"), col("race_adj"), *(lambda d, level=level: indicator(d, "age_discrete", level)
                                                 for level in (2, 3, 4)),
            col("educ1"), col("gender"), col("income")), "beta[1]", FLAT, FLAT),
    # kilpisjarvi_mod: alpha ~ normal(pmualpha, psalpha), beta ~ normal(pmubeta, psbeta), flat σ.
    "kilpisjarvi": LinearRegression(
        "49c1f6d1d7a12595", col("y"), lambda d: [("beta", vector(d, "x"))], "alpha",
        coefficient_prior=lambda d: Prior("normal", scale=float(d["psbeta"]), location=float(d["pmubeta"])),
        intercept_prior=lambda d: Prior("normal", scale=float(d["psalpha"]), location=float(d["pmualpha"])),
        noise_prior=FLAT),
    # diamonds (brms 2.10): b ~ normal(0, 1) on the centred design, Intercept ~ student_t(3, 8,
    # 10), σ ~ student_t(3, 0, 10) on σ > 0; the generated b_Intercept is not compared.
    "diamonds": LinearRegression(
        "b499b08e74598f65", col("Y"), brms_centred_design, "Intercept",
        coefficient_prior=Prior("normal", scale=1.0),
        intercept_prior=Prior("student_t", df=3.0, scale=10.0, location=8.0),
        noise_prior=Prior("half_student_t", df=3.0, scale=10.0)),
}

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
