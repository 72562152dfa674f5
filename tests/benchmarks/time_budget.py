#!/usr/bin/env python3
"""The time-budget benchmarks of Coullon, South & Nemeth (2023, "Efficient and generalizable tuning
strategies for stochastic gradient MCMC", Statistics and Computing 33:66), repeated with sgmcmc
(issue 46, item 4):

    tests/benchmarks/time_budget.py [--sgmcmc build/release/bin/sgmcmc] [--work runs/time-budget] \
        [--budget 20] [--movielens ml-100k/u.data] [--reuse]

(or the CLI in SGMCMC_CLI). A benchmark, not a test: nothing is installed or registered with
ctest. Without NumPy, pandas, SciPy, the CLI or R's rstan/posterior it prints SKIP and exits 0;
without --movielens (MovieLens-100K cannot be redistributed) the PMF part prints SKIP and the
logistic part still runs.

Their set-up, read from their code (github.com/jeremiecoullon/SGMCMC_bandit_tuning, which runs
github.com/jeremiecoullon/SGMCMCJax; tests/benchmarks/README.md, "Time budget", lists the files):

- Logistic regression, simulated (SGMCMCJax `sgmcmcjax/models/logistic_regression.py`, `gen_data`):
  d = 10, N = 10⁶ rows, the first 800,000 training and the last 200,000 held out; θ* ~ N(0, 10 I);
  rows x_i = z_i L with z_i ~ N(0, I) and L the lower Cholesky factor of Σ_jk = a^|j-k|, where a =
  (2u - 1)ρ, ρ = 0.4, u ~ U(0, 1) drawn once (their genCovMat reuses one key for every entry);
  y_i ~ Bernoulli(σ(x_iᵀθ*)); no intercept; prior θ ~ N(0, 10 I).
- The budget: each sampler runs until 20 s of wall time have passed (their `timed_sampler`, after
  two iterations that compile it), keeping every iteration; the chain starts at θ*, which is also
  SGLD-CV's and SGNHT-CV's centre. Their error is ‖sd - sd_NUTS‖/‖sd_NUTS‖ over the 10
  coordinates (numpyro NUTS, one chain of 20,000 draws after 1,000 warmup), and the KSD (IMQ
  kernel, c = 1, β = -1/2) of every 10th draw with exact gradients.
- Steps, chosen by their bandit (MAMBA, KSD): SGLD-CV batch 800, dt = 1e-5; SGNHT-CV batch 8,000,
  dt = 10^-5.5, with SGMCMCJax's updates θ' = θ + dt ∇log π + sqrt(2 dt) ξ (SGLD) and v' = v - αv +
  dt ∇log π + sqrt(2a dt) η, θ' = θ + v', α' = α + |v'|²/d - dt with a = 0.01 (SGNHT; Ding et al.
  2014, Alg. 2, with v = hp, α = hξ, dt = h²).

What runs here, on data simulated by that law with NumPy (seed --data-seed, so other rows of the
same law; training rows to work/train.npy, held-out ones to work/test.npy, read by the glm plugin):

- the reference: Stan's NUTS (rstan; --nuts-chains × --nuts-draws after 1,000 warmup), cached in
  the work folder, and checked against the Laplace approximation at the posterior mode (at 800,000
  rows the posterior is Gaussian to O(N^-1/2): the script prints their distance);
- their two configurations, translated exactly: SGLD's ε = 2 dt (sgmcmc's θ' = θ - (ε/2)∇U +
  sqrt(ε) ξ), SGNHT's h = sqrt(dt) and diffusion A = a/h (thermostat start A, their α₀ = a), the
  centre and start θ* (estimator.centre);
- ours: the covtype-sgldcv preset's choices on this model (cv centred by one SGD pass, batch 500,
  dense Fisher mass), SGLD and SGNHT, each step chosen by `sgmcmc tune` (the KSD of pilots of the
  run's own length; never by the reference);
- each with 2 chains and iterations set so that a chain uses --budget CPU seconds (20), its
  start-up (centring, mass) included: a pilot measures the start-up and the CPU seconds per
  iteration. Our time is CPU seconds of the chain's thread (metrics.csv's cpu_seconds); theirs was
  wall time of a JAX process.

Reported per configuration: iterations, CPU s per chain, their sd error ‖sd - sd_ref‖/‖sd_ref‖,
the median over coordinates of |mean - ref mean|/ref sd and of |sd/ref sd - 1| (the worse chain's),
and our KSD (the same IMQ kernel, on 2,000 evenly spaced draws of chain 1; KSD grows as the draws
scored shrink, and other implementations standardise differently, so it compares our runs only).

PMF on MovieLens-100K (their `models/PMF/pmf_model.py`; SGLD batch 800, dt = 1e-5, 20 s): rank 20,
noise precision 3, λ ~ Gamma(4, 5), μ | λ ~ N(0, 1/λ), ratings centred at their training mean, 80%
training; with --movielens the script runs their SGLD (ε = 2e-5, batch 800) on sgmcmc's pmf with
those priors, and the pmf-sgld preset, for 20 CPU s each, and reports the held-out RMSE of the
posterior-mean prediction (their 1.13). sgmcmc's pmf draws the hyperparameters by Gibbs steps where
theirs moves them by Langevin, and starts from its random start where theirs started at a MAP.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import covtype_nuts_race as race  # beside this script; it SKIPs without NumPy, pandas or SciPy
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "runners" / "python"))
import sgmcmc  # noqa: E402  (runners/python)

DIMENSION = 10
ROWS = 1_000_000
TRAINING_ROWS = 800_000
PRIOR_VARIANCE = 10.0
KSD_DRAWS = 2000

# Their published figures (Coullon, South & Nemeth 2023, and their notebooks'
# experiments/LR_evaluate.ipynb and experiments/PMF_evaluate.ipynb outputs).
THEIRS = {
    "SGLD-CV": {"iterations": 55_580, "sd_error": 0.0515, "ksd": 12.49},
    "SGNHT-CV": {"iterations": 19_323, "sd_error": 0.0082, "ksd": 3.23},
    "PMF SGLD": {"iterations": 15_681, "rmse": 1.13},
}

# The model for Stan: plugins/glm with family bernoulli, link logit, no intercept, prior normal of
# sd b = sqrt(10), on the data R_HELPER's load_data passes (race.STAN_DATA).
STAN_PROGRAM = race.STAN_DATA + """parameters {
  vector[K] beta;
}
model {
  target += normal_lpdf(beta | 0, b);
  target += bernoulli_logit_glm_lpmf(y | X, 0, beta);
}
"""


# ---- their data, simulated by their law --------------------------------------------------------------

def simulate_logistic(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ*, X and y (0/1) by SGMCMCJax's gen_data law (module docstring), with NumPy's generator."""
    rng = np.random.default_rng(seed)
    theta_true = rng.standard_normal(DIMENSION) * math.sqrt(PRIOR_VARIANCE)
    # Their genCovMat draws one uniform with the same key for every entry: one a for all lags.
    rho = 0.4
    a = rng.uniform() * 2 * rho - rho
    lags = np.abs(np.subtract.outer(np.arange(DIMENSION), np.arange(DIMENSION)))
    covariance = a ** lags
    # x_i = z_i L (a row times the lower factor), as their jnp.dot(normal(N, d), cholesky(cov)).
    X = rng.standard_normal((rows, DIMENSION)) @ np.linalg.cholesky(covariance)
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-X @ theta_true))).astype(np.int8)
    return theta_true, X, y


def write_data(work: Path, rows: int, seed: int, reuse: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ* and the training rows (X, y); train.npy and test.npy as glm reads them (label first),
    x.bin and y.bin as R_HELPER reads them."""
    train_rows = rows * TRAINING_ROWS // ROWS
    theta_path = work / "theta_true.npy"
    if not (reuse and theta_path.exists() and (work / "test.npy").exists()):
        race.log(f"simulating {rows:,} rows (d = {DIMENSION}, data seed {seed}) → {work}")
        theta_true, X, y = simulate_logistic(rows, seed)
        np.save(work / "train.npy", np.column_stack([y[:train_rows], X[:train_rows]]))
        np.save(work / "test.npy", np.column_stack([y[train_rows:], X[train_rows:]]))
        (work / "x.bin").write_bytes(X[:train_rows].astype("<f8").tobytes())
        (work / "y.bin").write_bytes(y[:train_rows].astype(np.int8).tobytes())
        np.save(theta_path, theta_true)
    train = np.load(work / "train.npy", mmap_mode="r")
    return np.load(theta_path), np.asarray(train[:, 1:]), np.asarray(train[:, 0])


# ---- the posterior: gradients, Laplace approximation, KSD ---------------------------------------------

def grad_log_posterior(thetas: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """∇log π(θ) = Xᵀ(y - σ(Xθ)) - θ/10 for each row of thetas (exact: a full pass each)."""
    out = np.empty_like(thetas)
    for start in range(0, len(thetas), 50):
        block = thetas[start:start + 50]
        probabilities = 1.0 / (1.0 + np.exp(-(X @ block.T)))
        out[start:start + 50] = (X.T @ (y[:, None] - probabilities)).T - block / PRIOR_VARIANCE
    return out


def laplace_approximation(X: np.ndarray, y: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The posterior mode (Newton's method) and the sds of N(mode, H⁻¹), H = -∇²log π there."""
    theta = start.copy()
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-X @ theta))
        hessian = (X * (p * (1 - p))[:, None]).T @ X + np.eye(DIMENSION) / PRIOR_VARIANCE
        step = np.linalg.solve(hessian, grad_log_posterior(theta[None, :], X, y)[0])
        theta += step
        if np.max(np.abs(step)) < 1e-12:
            break
    return theta, np.sqrt(np.diag(np.linalg.inv(hessian)))


def imq_ksd(draws: np.ndarray, scores: np.ndarray) -> float:
    """Kernel Stein discrepancy with the IMQ kernel k(x, x') = q^β, q = 1 + |x - x'|², β = -1/2
    (Gorham & Mackey 2017): sqrt(Σ_ij k₀(x_i, x_j))/n, with the Stein kernel of the scores s = ∇log π
    k₀(x_i, x_j) = s_iᵀs_j k + s_iᵀ∇_x' k + s_jᵀ∇_x k + tr ∇_x∇_x' k, r = x_i - x_j."""
    beta = -0.5
    total = 0.0
    for start in range(0, len(draws), 500):
        x, s = draws[start:start + 500], scores[start:start + 500]
        r = x[:, None, :] - draws[None, :, :]
        r2 = np.einsum("ijk,ijk->ij", r, r)
        q = 1.0 + r2
        # ∇_x k = 2β q^(β-1) r, ∇_x' k = -2β q^(β-1) r, tr ∇_x∇_x' k = -2βd q^(β-1) - 4β(β-1) q^(β-2) |r|²
        k0 = (s @ scores.T) * q**beta
        k0 += 2 * beta * q ** (beta - 1) * (np.einsum("jk,ijk->ij", scores, r) - np.einsum("ik,ijk->ij", s, r))
        k0 += -2 * beta * DIMENSION * q ** (beta - 1) - 4 * beta * (beta - 1) * q ** (beta - 2) * r2
        total += k0.sum()
    return math.sqrt(max(total, 0.0)) / len(draws)


# ---- sgmcmc -------------------------------------------------------------------------------------------

def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def write_config(path: Path, sections: dict) -> Path:
    lines = []
    for section, keys in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in keys.items()]
        lines.append("")
    path.write_text("\n".join(lines))
    return path


def logistic_model(work: Path) -> dict:
    """glm as SGMCMCJax's model: bernoulli-logit, no intercept, N(0, 10 I) prior."""
    return {"name": "glm", "family": "bernoulli", "link": "logit", "labels": "0/1", "intercept": False,
            "prior": "normal", "prior_scale": math.sqrt(PRIOR_VARIANCE),
            "data": str(work / "train.npy"), "test_data": str(work / "test.npy")}


def candidates(work: Path, theta_true: np.ndarray) -> list[tuple[str, str, dict, list | None]]:
    """(label, folder name, configuration sections, tune's grid or None) for every configuration."""
    model = logistic_model(work)
    centre = ", ".join(repr(float(v)) for v in theta_true)
    run = {"warmup": 0, "chains": 2, "seed": 1}
    theirs_sgnht_h = math.sqrt(10 ** -5.5)
    # our preset's choices (runners/presets/covtype-sgldcv.toml): cv centred by one SGD pass whose
    # steps stay near 1/λ̂ for b = 1000 iterations, batch 500, the dense Fisher mass
    ours_cv = {"name": "cv", "batch_size": 500, "sgd_decay_b": 1000}
    # The same with centring = "sgld" (the mean of an SGLD burn-in's second half): at 800,000 rows
    # one SGD pass ends up to 10 posterior sds from the mode (its last iterate), the SGLD burn-in's
    # mean within 2, and cv's gradient noise grows with the squared distance to its centre.
    sgld_centred_cv = {**ours_cv, "centring": "sgld"}
    fisher = {"metric": "dense", "mass": "fisher"}
    return [
        ("SGLD-CV, their settings (batch 800, ε = 2e-5, centre θ*)", "theirs-sgldcv",
         {"model": model, "estimator": {"name": "cv", "batch_size": 800, "centre": centre},
          "integrator": {"name": "sgld", "step_size": 2e-5}, "corrector": {"name": "none"}, "run": run}, None),
        (f"SGNHT-CV, their settings (batch 8,000, h = {theirs_sgnht_h:.3g}, centre θ*)", "theirs-sgnhtcv",
         {"model": model, "estimator": {"name": "cv", "batch_size": 8000, "centre": centre},
          "integrator": {"name": "sgnht", "step_size": theirs_sgnht_h, "diffusion": 0.01 / theirs_sgnht_h},
          "corrector": {"name": "none"}, "run": run}, None),
        ("SGLD-CV, dense Fisher mass, tune's step", "ours-sgldcv-fisher",
         {"model": model, "estimator": ours_cv,
          "integrator": {"name": "sgld", "step_size": 0.014, **fisher},
          "corrector": {"name": "none"}, "run": run}, [0.005, 0.01, 0.02, 0.05, 0.1, 0.2]),
        ("SGNHT-CV, dense Fisher mass, tune's step", "ours-sgnhtcv-fisher",
         {"model": model, "estimator": ours_cv,
          "integrator": {"name": "sgnht", "step_size": 0.02, **fisher},
          "corrector": {"name": "none"}, "run": run}, [0.005, 0.01, 0.02, 0.05, 0.1, 0.2]),
        ("SGNHT-CV, SGLD centring, dense Fisher mass, tune's step", "ours-sgnhtcv-sgld-centre",
         {"model": model, "estimator": sgld_centred_cv, "integrator": {"name": "sgnht", "step_size": 0.02, **fisher},
          "corrector": {"name": "none"}, "run": run}, [0.005, 0.01, 0.02, 0.05, 0.1, 0.2]),
        # BAOAB (Leimkuhler & Matthews 2013): its position marginal is exact for a Gaussian target at
        # any stable h, so with the Fisher mass (unit frequencies) the step is limited by the
        # minibatch noise alone; friction γ = 1: those unit frequencies damped at half the critical γ = 2.
        ("BAOAB-CV, SGLD centring, dense Fisher mass, tune's step", "ours-baoabcv-sgld-centre",
         {"model": model, "estimator": sgld_centred_cv,
          "integrator": {"name": "baoab", "step_size": 0.2, "friction": 1.0, **fisher},
          "corrector": {"name": "none"}, "run": run}, [0.05, 0.1, 0.2, 0.3, 0.5, 0.8]),
    ]


def rate(cli: str, folder: Path, source: dict, reuse: bool, settings: dict | None = None) -> tuple[float, float]:
    """(start-up CPU s, CPU s per iteration) of one chain of a configuration (source: config= or
    preset=, then settings), from pilots whose length grows tenfold until a chain takes a second:
    a line through metrics.csv's (iteration, cpu_seconds) rows."""
    iterations = 2_000
    while True:
        out = race.sgmcmc_run(cli, folder / f"pilot-{iterations}", reuse, **source,
                              settings={**(settings or {}), "run.chains": 1, "run.iterations": iterations,
                                        "run.thin": iterations // 100, "run.eval_every": iterations // 20})
        metrics = sgmcmc.read_run(out).metrics
        if metrics.cpu_seconds.max() > 1.0 or iterations >= 20_000_000:
            slope, intercept = np.polyfit(metrics.iteration.to_numpy(), metrics.cpu_seconds.to_numpy(), 1)
            return max(float(intercept), 0.0), float(slope)
        iterations *= 10


def tune(cli: str, out: Path, config: Path, steps: list, iterations: int, reuse: bool) -> tuple[Path, str]:
    """sgmcmc tune's choice on the grid, pilots of the run's own length: the tuned configuration and
    tune.csv's rows as text (step: KSD)."""
    if not (reuse and (out / "tuned.toml").exists()):
        race.log(f"sgmcmc tune {config.name} on {steps} ({iterations:,} iterations) → {out}")
        if out.exists():
            shutil.rmtree(out)
        command = ["nice", cli, "tune", "--config", str(config), "--steps", ",".join(map(str, steps)),
                   "--iterations", str(iterations), "--jobs", "2", "--out", str(out),
                   "--set", f"run.thin={max(1, iterations // 2000)}", "--set", f"run.eval_every={max(1, iterations // 20)}"]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    table = pd.read_csv(out / "tune.csv")
    scores = ", ".join(f"{row.step_size:g}: {row.ksd:.3g}" for row in table.itertuples())
    return out / "tuned.toml", scores


def errors(draws: np.ndarray, ref_mean: np.ndarray, ref_sd: np.ndarray) -> dict:
    mean, sd = draws.mean(0), draws.std(0, ddof=1)
    return {"their_sd_error": float(np.linalg.norm(sd - ref_sd) / np.linalg.norm(ref_sd)),
            "mean_error": float(np.median(np.abs(mean - ref_mean) / ref_sd)),
            "sd_error": float(np.median(np.abs(sd / ref_sd - 1)))}


def measure(label: str, folder: Path, ref_mean, ref_sd, X, y) -> dict:
    run = sgmcmc.read_run(folder)
    names = run.parameter_names
    chains = [chain[names].to_numpy() for chain in run.chains]
    per_chain = [errors(d, ref_mean, ref_sd) for d in chains]
    worse = {key: max(e[key] for e in per_chain) for key in per_chain[0]}
    pick = np.linspace(0, len(chains[0]) - 1, min(KSD_DRAWS, len(chains[0]))).astype(int)
    draws = chains[0][pick]
    cpu = [float(run.metrics[run.metrics.chain == k].cpu_seconds.max()) for k in run.chain_ids]
    return {"label": label, "iterations": int(run.config["run"]["iterations"]), "cpu": max(cpu),
            "ksd": imq_ksd(draws, grad_log_posterior(draws, X, y)), "step": run.config["integrator"]["step_size"],
            **worse}


# ---- the two parts -----------------------------------------------------------------------------------

def reference(work: Path, X, y, theta_true, options) -> tuple[np.ndarray, np.ndarray]:
    """NUTS's mean and sd, checked against the Laplace approximation (or, with --reference laplace,
    that approximation's mode and sds: at 800,000 rows its error is far below the sd errors compared)."""
    if options.reference == "laplace":
        mode, laplace_sd = laplace_approximation(X, y, theta_true)
        race.log("reference: the Laplace approximation at the posterior mode (--reference laplace)")
        return mode, laplace_sd
    stan = race.Stan(work, STAN_PROGRAM, "logistic_normal_prior")
    stan.check()
    data = dict(rows=len(y), features=DIMENSION, x=work / "x.bin", y=work / "y.bin", prior_scale=math.sqrt(PRIOR_VARIANCE))
    nuts = race.nuts(stan, data, work / "nuts", options.nuts_chains, 1000, options.nuts_draws, 1, reuse=True)
    pooled = np.vstack(nuts.draws)
    ref_mean, ref_sd = pooled.mean(0), pooled.std(0, ddof=1)
    mode, laplace_sd = laplace_approximation(X, y, theta_true)
    race.log(f"NUTS: {options.nuts_chains} × {options.nuts_draws} draws in {np.round(nuts.total_seconds, 1).tolist()} "
             f"CPU s per chain; against the Laplace approximation: mean - mode ≤ "
             f"{np.max(np.abs(ref_mean - mode) / ref_sd):.3f} sd, sd ratio {np.min(ref_sd / laplace_sd):.3f}–"
             f"{np.max(ref_sd / laplace_sd):.3f} (Monte Carlo error of one sd ≈ {1 / math.sqrt(2 * len(pooled)):.3f} "
             f"at ESS = draws); the reference's own sd error, their norm, ≈ {1 / math.sqrt(2 * len(pooled)):.3f}")
    race.log(f"θ* - posterior mean in posterior sds: {np.round((theta_true - ref_mean) / ref_sd, 2).tolist()}")
    return ref_mean, ref_sd


def run_candidates(cli: str, work: Path, theta_true: np.ndarray, options) -> list[tuple[str, Path, str]]:
    """Every configuration for the budget: its pilot, tune's step where it has a grid, its run.
    (label, run folder, tune's scores)."""
    runs = []
    for label, name, sections, grid in candidates(work, theta_true):
        folder = work / name
        folder.mkdir(exist_ok=True)
        config = write_config(folder / "config.toml", sections)
        startup, per_iteration = rate(cli, folder, dict(config=config), options.reuse)
        iterations = int((options.budget - startup) / per_iteration)
        race.log(f"{label}: start-up {startup:.2f} CPU s, {per_iteration * 1e6:.2f} µs per iteration → "
                 f"{iterations:,} iterations in {options.budget:g} s")
        note = ""
        if grid:
            config, scores = tune(cli, folder / "tune", config, grid, iterations, options.reuse)
            note = f"tune's KSD by step: {scores}"
            race.log(f"  {note}")
        out = race.sgmcmc_run(cli, folder / "run", options.reuse, config=config,
                              settings={"run.iterations": iterations, "run.thin": max(1, iterations // 20_000),
                                        "run.eval_every": max(1, iterations // 20)})
        runs.append((label, out, note))
    return runs


def logistic_part(cli: str, work: Path, options) -> list[dict]:
    theta_true, X, y = write_data(work, options.rows, options.data_seed, options.reuse)
    runs = run_candidates(cli, work, theta_true, options)
    ref_mean, ref_sd = reference(work, X, y, theta_true, options)
    rows = []
    for label, out, note in runs:
        row = measure(label, out, ref_mean, ref_sd, X, y)
        row["note"] = note
        race.log(f"{label}: {row['iterations']:,} iterations, {row['cpu']:.1f} CPU s per chain, step {row['step']}: "
                 f"their sd error {row['their_sd_error']:.4f}, median mean error {row['mean_error']:.3f} sd, "
                 f"median sd error {row['sd_error']:.3f}, KSD {row['ksd']:.2f}")
        rows.append(row)
    return rows


def pmf_part(cli: str, work: Path, options) -> list[dict]:
    """Their PMF (module docstring) and the pmf-sgld preset on MovieLens-100K, --budget CPU s each."""
    ratings = Path(options.movielens).resolve()
    if not ratings.exists():
        sys.exit(f"--movielens: no file at {options.movielens}")
    theirs_model = {"name": "pmf", "data": str(ratings), "rank": 20, "noise_precision": 3.0, "prior_shape": 4.0,
                    "prior_rate": 5.0, "prior_mean_weight": 1.0, "test_size": 0.2}
    theirs = {"model": theirs_model, "estimator": {"name": "minibatch", "batch_size": 800},
              "integrator": {"name": "sgld", "step_size": 2e-5}, "corrector": {"name": "none"},
              "run": {"warmup": 0, "chains": 1, "seed": 1}}
    configurations = [  # label, folder, source, settings
        ("PMF SGLD, their settings (batch 800, ε = 2e-5)", "pmf-theirs-sgld", theirs, {}),
        ("PMF SGLD, the pmf-sgld preset", "pmf-preset-sgld", dict(preset="pmf-sgld"),
         {"model.data": json.dumps(str(ratings)), "model.test_size": 0.2}),
    ]
    rows = []
    for label, name, source, extra in configurations:
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        if "preset" not in source:
            source = dict(config=write_config(folder / "config.toml", source))
        startup, per_iteration = rate(cli, folder, source, options.reuse, extra)
        iterations = int((options.budget - startup) / per_iteration)
        out = race.sgmcmc_run(cli, folder / "run", options.reuse, **source,
                              settings={**extra, "run.iterations": iterations, "run.thin": max(1, iterations // 200),
                                        "run.eval_every": max(1, iterations // 50)})
        run = sgmcmc.read_run(out)
        rows.append({"label": label, "iterations": iterations, "cpu": float(run.metrics.cpu_seconds.max()),
                     "rmse": float(run.metrics.rmse.iloc[-1])})
        race.log(f"{label}: {iterations:,} iterations, {rows[-1]['cpu']:.1f} CPU s, held-out RMSE {rows[-1]['rmse']:.3f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sgmcmc", default=os.environ.get("SGMCMC_CLI"), help="the CLI (or SGMCMC_CLI; else on PATH)")
    parser.add_argument("--work", default="runs/time-budget", type=Path, help="folder for the data and every run (kept)")
    parser.add_argument("--budget", default=20.0, type=float, help="CPU seconds per chain (theirs: 20 s of wall time)")
    parser.add_argument("--rows", default=ROWS, type=int, help="rows simulated, 80%% training (theirs: 10⁶)")
    parser.add_argument("--data-seed", default=2023, type=int, help="NumPy seed of the simulated data")
    parser.add_argument("--nuts-chains", default=2, type=int)
    parser.add_argument("--nuts-draws", default=5000, type=int, help="NUTS draws per chain after 1,000 warmup")
    parser.add_argument("--reference", default="nuts", choices=["nuts", "laplace"],
                        help="the posterior's mean and sd: Stan's NUTS (default; needs rstan) or the Laplace approximation")
    parser.add_argument("--movielens", default=os.environ.get("SGMCMC_MOVIELENS"),
                        help="MovieLens-100K's u.data (or SGMCMC_MOVIELENS); without it the PMF part is skipped")
    parser.add_argument("--skip-logistic", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep the data and runs already in --work")
    options = parser.parse_args()

    cli = options.sgmcmc or shutil.which("sgmcmc")
    if not cli or not Path(cli).exists():
        race.skip("the sgmcmc CLI was not found: give --sgmcmc build/release/bin/sgmcmc (or SGMCMC_CLI)")
    cli = str(Path(cli).resolve())
    work = options.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    logistic = [] if options.skip_logistic else logistic_part(cli, work / "logistic", options)
    if options.movielens:
        pmf = pmf_part(cli, work / "pmf", options)
    else:
        pmf = []
        print("SKIP time_budget (PMF part): MovieLens-100K is not redistributed; give --movielens PATH/ml-100k/u.data")

    print()
    against = "the Laplace approximation" if options.reference == "laplace" else "NUTS"
    print(f"Time budget: {options.budget:g} CPU s per chain (theirs: 20 s wall), 2 chains each; errors against {against}")
    print(f"{'configuration':62} {'iterations':>11} {'CPU s':>6} {'sd error':>9} {'mean err':>9} {'sd err':>7} {'KSD':>7}")
    print(f"{'':62} {'':>11} {'':>6} {'‖·‖ rel.':>9} {'median sd':>9} {'median':>7}")
    for name in ("SGLD-CV", "SGNHT-CV"):
        t = THEIRS[name]
        print(f"{name + ' (Coullon et al. 2023, their figures)':62} {t['iterations']:>11,} {'20 wall':>6} "
              f"{t['sd_error']:>9.4f} {'':>9} {'':>7} {'(' + str(t['ksd']) + ')':>7}")
    for r in logistic:
        print(f"{r['label']:62} {r['iterations']:>11,} {r['cpu']:>6.1f} {r['their_sd_error']:>9.4f} "
              f"{r['mean_error']:>9.3f} {r['sd_error']:>7.3f} {r['ksd']:>7.2f}")
    if pmf:
        t = THEIRS["PMF SGLD"]
        print(f"\n{'PMF SGLD (Coullon et al. 2023)':62} {t['iterations']:>11,} {'20 wall':>6}  RMSE {t['rmse']:.2f}")
        for r in pmf:
            print(f"{r['label']:62} {r['iterations']:>11,} {r['cpu']:>6.1f}  RMSE {r['rmse']:.3f}")


if __name__ == "__main__":
    main()
