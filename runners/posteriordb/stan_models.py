"""The Stan models runners/posteriordb/convert.py knows, each as the `glm` regression it is.

MODELS has one entry per Stan model of posteriordb, written by hand from its Stan file and tied
to that file's text by a fingerprint; the functions above it do the Stan files' `transformed
data`. How to add a model: runners/posteriordb/README.md. Needs NumPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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
