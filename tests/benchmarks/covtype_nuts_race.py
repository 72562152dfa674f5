#!/usr/bin/env python3
"""A race against the gold standard (issue #17, item 6): Stan's NUTS against sgmcmc's tuned
stochastic-gradient samplers on Bayesian logistic regression with cover type's data.

    tests/benchmarks/covtype_nuts_race.py --data covtype.libsvm.binary.scale.sample20k.libsvm.gz \
        [--sgmcmc build/release/bin/sgmcmc] [--work runs/covtype-nuts-race] [--quick] [--reuse]

(or the data path in SGMCMC_COVTYPE_SAMPLE, the CLI in SGMCMC_CLI). A benchmark, not a test:
nothing is installed and nothing is registered with ctest. Without the data, the CLI, R's
`rstan` and `posterior` (Debian: `apt install r-cran-rstan r-cran-posterior`, which
third_party/setup.sh does) or a working Stan compiler it prints SKIP and why, and exits 0.

The model (plugins/logistic/README.md): p(y_i | x_i, β) = 1/(1 + exp(-y_i x_iᵀβ)) with an
intercept and a Laplace(0, b = 1) prior on every coefficient, U(β) = Σ_j |β_j|/b + Σ_i log(1 +
exp(-y_i x_iᵀβ)). Stan gets exactly these rows and this density (its lp__ = -U, checked at one
point against sgmcmc's lp__); sgmcmc trains on all of them too.

What is measured, at N = 20,000 (the real sample), at random subsets of its rows (5,000 and 10,000
by default: how the ratio changes with N on real data, NUTS racing at every size) and
at N = 581,012 (simulated, cover type's shape):

- the reference posterior: at every size, the exact sampler of logistic_reference.py (HMC with a
  dense mass from the likelihood's Hessian, plus exact moves along the design's null directions:
  the indicator groups sum to the intercept column, and the likelihood is constant along them),
  4 × 2,000 draws (2 × 800 at 581,012), checked at every real size against NUTS (Hoffman & Gelman
  2014, rstan 2.21), the gold standard: its race run, and with --nuts-reference a long run at
  20,000 (4 × 2,000 draws, CPU hours), which is then the table's reference there (the log prints
  the distance between the two and the Monte Carlo error of both);
- for each sampler, the time to accuracy: when every chain on its own is accurate, i.e. for each
  chain the first draw from which its running estimate (its draws so far after the warmup) has
  median_j |mean_j - ref_mean_j|/ref_sd_j ≤ 0.1 and median_j |sd_j/ref_sd_j - 1| ≤ 0.1 and keeps
  them to the end of its run, the slower chain's time (time_to_accuracy says why not the pooled
  chains' first crossing). Time is per chain (the chains run side by side, one core each; 2
  chains for every sampler raced), in CPU seconds of the chain (Stan's get_elapsed_time is
  clock(), the process's CPU time; sgmcmc's metrics.csv has cpu_seconds), warmup and SGLD-CV's
  centring (Baker et al. 2019) included, compilation and data loading excluded. A draw of NUTS is
  placed in time by the leapfrog steps before it (warmup seconds + sampling seconds × its share of
  the sampling phase's leapfrog steps); one of sgmcmc at its iteration's cpu_seconds;
- ESS per second: the median over coordinates of the bulk ESS (R's posterior::ess_bulk) of the
  whole run's draws, divided by the chains' CPU seconds summed (warmup included);
- at 581,012 NUTS is not run: its time is extrapolated as (the gradient evaluations, leapfrog
  steps of warmup and sampling, NUTS needed to reach the accuracy at 20,000) × (its seconds per
  gradient at 20,000 in that run) × (Stan's grad_log_prob time at 581,012 / at 20,000, measured on
  simulated data of cover type's shape). This assumes NUTS needs no more gradients at 581,012 than
  at 20,000, which flatters it: the prior-held directions (the indicator groups sum to the
  intercept column) keep their width while the others narrow like 1/sqrt(N), so trajectories get
  longer with N.

SG-MCMC without an MH test is biased (its sd criterion may never be met): such a sampler is
reported as "not reached in T s", not given a wider criterion.

Runtime on 2 cores (tests/benchmarks/README.md has the numbers): at 20,000 rows NUTS's race takes
≈ 37 minutes (its trees are deep along the prior-held directions; --nuts-reference adds CPU
hours), each sgmcmc candidate ≈ 12 minutes (10⁷ iterations, --iterations; fewer do not mix the
prior-held directions), the exact sampler ≈ 40 CPU s per chain (≈ 7 CPU minutes at 581,012).
On the subsets the sgmcmc runs take about N / 20,000 of that and NUTS
less still (≈ 5 and 17 minutes at 5,000 and 10,000 rows). --skip-full, --subsets '', --presets and
--skip-tuning shorten it; --quick runs short chains (the references are then too short for the
criterion to mean anything; it checks the wiring).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

try:
    import numpy as np
    import pandas as pd
    import scipy  # noqa: F401  (logistic_reference.py's sparse design: checked here, to SKIP without it)
except ImportError as error:  # a Python without them (Debian: python3-numpy python3-pandas python3-scipy)
    print(f"SKIP {os.path.basename(sys.argv[0]).removesuffix('.py')}: {error.name} is missing: "
          "apt install python3-numpy python3-pandas python3-scipy")
    sys.exit(0)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "runners" / "python"))
import sgmcmc  # noqa: E402  (runners/python)
import logistic_reference  # noqa: E402  (beside this script)

FEATURES = 54
FULL_ROWS = 581_012
# The shipped presets raced, with the method each runs (the table's labels).
PRESET_METHODS = {"covtype-sgldcv": "SGLD-CV", "covtype-sgld": "SGLD", "covtype-saga": "SAGA-LD",
                  "covtype-sgnht": "SGNHT", "covtype-badodab": "BADODAB"}
PARAMETER_NAMES = ["intercept"] + [f"beta.{j}" for j in range(1, FEATURES + 1)]  # as sgmcmc names them
CRITERION = 0.1  # both criteria: 0.1 posterior sd for the mean, ±10% for the sd (medians over coordinates)
BOOST_FIX = ("Debian's r-cran-bh leaves BH/include empty; link the system's Boost headers into it:\n"
             "  ln -s /usr/include/boost \"$(Rscript -e 'cat(find.package(\"BH\"))')/include/boost\"\n"
             "(create the include folder first if it is missing: mkdir -p .../BH/include)")

# The data every Stan program here reads: what R_HELPER's load_data passes (N rows, K features,
# X, y in {0, 1} and the prior's scale b).
STAN_DATA = """
data {
  int<lower=1> N;
  int<lower=1> K;
  matrix[N, K] X;
  int<lower=0, upper=1> y[N];
  real<lower=0> b;
}
"""

# The model of plugins/logistic, written for Stan. target += keeps every constant, and the
# Laplace prior's normalising constants are added back, so Stan's lp__ is exactly -U.
STAN_PROGRAM = STAN_DATA + """parameters {
  real intercept;
  vector[K] beta;
}
model {
  // Laplace(0, b) on every coefficient, the intercept included, without its constant log(2b)
  target += double_exponential_lpdf(intercept | 0, b) + double_exponential_lpdf(beta | 0, b) + (K + 1) * log(2 * b);
  // Bernoulli-logit likelihood (y = 1 for label +1)
  target += bernoulli_logit_glm_lpmf(y | X, intercept, beta);
}
"""

# The R side: rstan for NUTS, log_prob and grad_log_prob; posterior for bulk ESS. One file,
# called with a command and key=value arguments.
R_HELPER = r"""
args <- commandArgs(trailingOnly = TRUE)
cmd <- args[1]
kv <- list(); for (a in args[-1]) { p <- strsplit(a, "=", fixed = TRUE)[[1]]; kv[[p[1]]] <- paste(p[-1], collapse = "=") }
suppressPackageStartupMessages({ library(rstan); library(posterior) })
model <- function() { rstan_options(auto_write = TRUE); stan_model(file = kv$stan) }
load_data <- function() {
  N <- as.integer(kv$rows); K <- as.integer(kv$features)
  if (!is.null(kv$x)) {
    con <- file(kv$x, "rb"); X <- matrix(readBin(con, "double", N * K), nrow = N, byrow = TRUE); close(con)
    con <- file(kv$y, "rb"); y <- readBin(con, "integer", N, size = 1); close(con)
  } else {
    # cover type's shape, as plugins/logistic simulates it: 10 uniform features, one of 4
    # wilderness areas and one of 40 soil types per row, labels from beta*_j = 2 sin(1 + j)
    set.seed(1)
    X <- matrix(0, N, K); X[, 1:10] <- runif(N * 10)
    X[cbind(1:N, 10 + sample.int(4, N, TRUE))] <- 1; X[cbind(1:N, 14 + sample.int(40, N, TRUE))] <- 1
    b <- 2 * sin(1 + 0:K); y <- as.integer(runif(N) < plogis(b[1] + X %*% b[-1]))
  }
  list(N = N, K = K, X = X, y = as.integer(y), b = as.numeric(kv$prior_scale))
}
if (cmd == "check") {
  m <- model(); cat("compiled\n")
} else if (cmd == "nuts") {
  m <- model(); d <- load_data()
  fit <- sampling(m, data = d, chains = as.integer(kv$chains), cores = as.integer(kv$cores),
                  warmup = as.integer(kv$warmup), iter = as.integer(kv$warmup) + as.integer(kv$draws),
                  seed = as.integer(kv$seed), refresh = 0)
  arr <- as.array(fit)
  sp <- get_sampler_params(fit, inc_warmup = TRUE)
  el <- get_elapsed_time(fit)
  for (k in seq_len(dim(arr)[2])) {
    write.csv(arr[, k, ], sprintf("%s-draws-%d.csv", kv$out, k), row.names = FALSE)
    write.csv(sp[[k]], sprintf("%s-sampler-%d.csv", kv$out, k), row.names = FALSE)
  }
  write.csv(data.frame(chain = seq_len(nrow(el)), warmup = el[, 1], sample = el[, 2]),
            sprintf("%s-elapsed.csv", kv$out), row.names = FALSE)
} else if (cmd == "ess") {
  # CSVs with columns chain, then the parameters: bulk ESS of each (Vehtari et al. 2021)
  for (f in strsplit(kv$draws, ",", fixed = TRUE)[[1]]) {
    t <- read.csv(f, check.names = FALSE)
    chains <- split(t[, -1, drop = FALSE], t$chain)
    n <- min(sapply(chains, nrow))
    ess <- sapply(names(t)[-1], function(p) ess_bulk(sapply(chains, function(c) c[[p]][1:n])))
    write.csv(data.frame(parameter = names(ess), ess_bulk = ess), sub("\\.draws\\.csv$", ".csv", f), row.names = FALSE)
  }
} else if (cmd == "log_prob") {
  # -U at the points of a CSV (one row each), for the agreement check
  m <- model(); d <- load_data()
  fit <- sampling(m, data = d, chains = 0)
  pts <- as.matrix(read.csv(kv$points))
  lp <- apply(pts, 1, function(p) log_prob(fit, unconstrain_pars(fit, list(intercept = p[1], beta = p[-1])),
                                          adjust_transform = FALSE))
  write.csv(data.frame(lp = lp), kv$out, row.names = FALSE)
} else if (cmd == "gradient_time") {
  # CPU seconds per grad_log_prob (the least of 5 repetitions' means), as Stan's clock() counts
  m <- model(); d <- load_data()
  fit <- sampling(m, data = d, chains = 0)
  u <- rep(0.01, d$K + 1); reps <- as.integer(kv$reps); best <- Inf
  cpu <- function() { t <- proc.time(); t[["user.self"]] + t[["sys.self"]] }
  for (r in 1:5) {
    t0 <- cpu(); for (i in 1:reps) g <- grad_log_prob(fit, u)
    best <- min(best, (cpu() - t0) / reps)
  }
  cat(best, "\n", file = kv$out)
}
"""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def skip(reason: str) -> None:
    """SKIP, naming the script that was run (preset_accuracy.py and time_budget.py call it too)."""
    print(f"SKIP {Path(sys.argv[0]).stem}: {reason}")
    sys.exit(0)


# ---- data -----------------------------------------------------------------------------------------

def read_libsvm(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Dense X (rows × 54) and labels in {0, 1} (the larger label is +1, as labels = "auto")."""
    opener = gzip.open if path.suffix == ".gz" else open
    labels, rows = [], []
    with opener(path, "rt") as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            labels.append(float(fields[0]))
            row = np.zeros(FEATURES)
            for item in fields[1:]:
                index, value = item.split(":")
                row[int(index) - 1] = float(value)
            rows.append(row)
    y = np.array(labels)
    return np.array(rows), (y == y.max()).astype(np.int8)


def write_libsvm(path: Path, X: np.ndarray, y: np.ndarray) -> Path:
    """Rows as gzip LIBSVM (labels +1/-1, the nonzero features), for sgmcmc's model.data."""
    with gzip.open(path, "wt") as f:
        for label, row in zip(y, X):
            items = " ".join(f"{j + 1}:{value!r}" for j, value in enumerate(row) if value != 0.0)
            f.write(f"{'+1' if label else '-1'} {items}\n")
    return path


def simulate_covtype_shape(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows with cover type's shape, as plugins/logistic simulates them (its README): 10 features
    uniform on [0, 1], one of 4 wilderness areas and one of 40 soil types set per row, labels from
    the model with β*_j = 2 sin(1 + j), j = 0 (intercept) … 54. Another random stream than the
    plugin's, so other rows of the same law."""
    rng = np.random.default_rng(seed)
    X = np.zeros((rows, FEATURES))
    X[:, :10] = rng.random((rows, 10))
    X[np.arange(rows), 10 + rng.integers(0, 4, rows)] = 1.0
    X[np.arange(rows), 14 + rng.integers(0, 40, rows)] = 1.0
    beta_star = 2.0 * np.sin(1.0 + np.arange(FEATURES + 1))
    y = rng.random(rows) < 1.0 / (1.0 + np.exp(-(beta_star[0] + X @ beta_star[1:])))
    return X, y.astype(np.int8)


# ---- R and Stan -------------------------------------------------------------------------------------

class Stan:
    """R_HELPER's commands on a Stan program (cover type's Laplace-prior logistic model unless
    another is given: its data block may use N, K, X, y and b, what the helper's load_data passes)."""

    def __init__(self, work: Path, program: str = STAN_PROGRAM, name: str = "covtype_logistic_laplace"):
        self.work = work
        self.helper = work / "race_helper.R"
        self.helper.write_text(R_HELPER)
        self.program = work / f"{name}.stan"
        if not self.program.exists() or self.program.read_text() != program:
            self.program.write_text(program)

    def call(self, command: str, **keys) -> subprocess.CompletedProcess:
        arguments = [f"{k}={v}" for k, v in keys.items()]
        return subprocess.run(["nice", "Rscript", str(self.helper), command, f"stan={self.program}", *arguments],
                              capture_output=True, text=True, cwd=self.work)

    def check(self) -> None:
        if shutil.which("Rscript") is None:
            skip("Rscript not found; install R, rstan and posterior: apt install r-cran-rstan r-cran-posterior "
                 "(third_party/setup.sh installs them)")
        probe = subprocess.run(["Rscript", "-e", "library(rstan); library(posterior)"], capture_output=True, text=True)
        if probe.returncode != 0:
            skip("R's rstan or posterior is missing; install them: apt install r-cran-rstan r-cran-posterior "
                 f"(third_party/setup.sh installs them)\n{probe.stderr.strip()}")
        log("compiling the Stan program (about a minute the first time)")
        result = self.call("check")
        if result.returncode != 0 or "compiled" not in result.stdout:
            text = result.stdout + result.stderr
            if "Boost not found" in text:
                skip("rstan cannot compile a Stan program: Boost not found.\n" + BOOST_FIX)
            skip(f"rstan cannot compile the Stan program:\n{text.strip()[-2000:]}")


def run_r(stan: Stan, command: str, **keys) -> None:
    result = stan.call(command, **keys)
    if result.returncode != 0:
        sys.exit(f"Rscript {command} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")


class Chains:
    """Post-warmup draws of some chains, each draw with the chain's CPU seconds at it (warmup
    included), and the chains' total seconds."""

    def __init__(self, label, draws, times, total_seconds, gradients=None, names=None):
        self.label = label
        self.draws = draws  # list of (draws × d) arrays
        self.times = times  # list of arrays, seconds of each draw
        self.total_seconds = total_seconds  # list, one per chain: the whole run (warmup included)
        self.gradients = gradients  # NUTS: list of arrays, gradient evaluations up to each draw
        self.names = names


def nuts(stan: Stan, data: dict, out: Path, chains: int, warmup: int, draws: int, seed: int, reuse: bool) -> Chains:
    prefix = out / "nuts"
    if not (reuse and (out / "nuts-elapsed.csv").exists() and len(pd.read_csv(out / "nuts-draws-1.csv")) == draws):
        out.mkdir(parents=True, exist_ok=True)
        log(f"NUTS: {chains} chains × ({warmup} warmup + {draws}) draws, seed {seed} → {out}")
        run_r(stan, "nuts", chains=chains, cores=chains, warmup=warmup, draws=draws, seed=seed,
              out=prefix, **data)
    elapsed = pd.read_csv(out / "nuts-elapsed.csv")
    all_draws, times, totals, gradients, names = [], [], [], [], None
    for k in range(1, chains + 1):
        frame = pd.read_csv(out / f"nuts-draws-{k}.csv")
        frame = frame.drop(columns=[c for c in frame.columns if c == "lp__"])
        names = list(frame.columns)
        sampler = pd.read_csv(out / f"nuts-sampler-{k}.csv")
        leapfrog = sampler["n_leapfrog__"].to_numpy()
        warm, sample = float(elapsed["warmup"].iloc[k - 1]), float(elapsed["sample"].iloc[k - 1])
        sampling_leapfrog = np.cumsum(leapfrog[warmup:])
        times.append(warm + sample * sampling_leapfrog / sampling_leapfrog[-1])
        gradients.append(leapfrog[:warmup].sum() + sampling_leapfrog)
        totals.append(warm + sample)
        all_draws.append(frame.to_numpy())
    return Chains("NUTS", all_draws, times, totals, gradients, names)


def _exact_chain(arguments) -> dict:
    X, y, warmup, draws, seed = arguments
    return logistic_reference.sample(X, y, 1.0, 1, warmup, draws, seed)


def exact_reference(X: np.ndarray, y: np.ndarray, out: Path, chains: int, warmup: int, draws: int, seed: int,
                    reuse: bool) -> Chains:
    """logistic_reference.py's sampler (HMC with a dense mass, exact moves along the design's null
    directions), one chain per process, its draws kept in out/exact-reference.npz."""
    path = out / "exact-reference.npz"
    if not (reuse and path.exists()):
        out.mkdir(parents=True, exist_ok=True)
        log(f"exact reference: {chains} chains × ({warmup} warmup + {draws}) draws, seed {seed} → {path}")
        with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(_exact_chain, [(X, y, warmup, draws, 1000 * seed + k) for k in range(chains)]))
        np.savez(path, draws=np.array([r["draws"][0] for r in runs]), seconds=[r["seconds"][0] for r in runs],
                 times=np.array([r["times"][0] + r["setup_seconds"] for r in runs]),
                 setup_seconds=[r["setup_seconds"] for r in runs],
                 acceptance=[r["acceptance"][0] for r in runs], null_acceptance=[r["null_acceptance"][0] for r in runs],
                 step=[r["step"][0] for r in runs], null_directions=runs[0]["null_directions"])
    saved = np.load(path)
    log(f"  exact reference at {len(y):,} rows: {int(saved['null_directions'])} null directions; acceptance "
        f"{np.round(saved['acceptance'], 2).tolist()} (HMC), {np.round(saved['null_acceptance'], 3).tolist()} "
        f"(null moves); step {np.round(saved['step'], 3).tolist()}; CPU s per chain {np.round(saved['seconds']).tolist()} "
        f"after a set-up of {np.round(saved['setup_seconds'], 1).tolist()}")
    totals = [float(t[-1]) for t in saved["times"]]
    return Chains("HMC, dense mass + null moves", list(saved["draws"]), list(saved["times"]), totals,
                  names=PARAMETER_NAMES)


def reference_moments(batch, chains: Chains, name: str, rows: int, ess_store: dict):
    """The pooled mean and sd of a reference, its ESS logged (and kept in ess_store[name])."""
    pooled = np.vstack(chains.draws)

    def report(ess):
        ess_store[name] = ess
        log(f"{chains.label} at {rows:,}: {len(pooled)} draws, bulk ESS median {np.median(ess):.0f} (least "
            f"{ess.min():.0f}): its mean's Monte Carlo error is ≈ {1 / np.sqrt(np.median(ess)):.3f} sd (median coordinate)")
    batch.add(chains, name, report)
    return pooled.mean(0), pooled.std(0, ddof=1)


def geyer_ess(chains: np.ndarray) -> float:
    """Effective sample size of one scalar over chains × draws, from the chain-averaged
    autocorrelation summed in pairs until a pair is negative (Geyer 1992's initial positive sequence)."""
    count, n = chains.shape
    centred = chains - chains.mean(axis=1, keepdims=True)
    spectrum = np.fft.rfft(centred, 2 * n, axis=1)
    autocovariance = np.fft.irfft(spectrum * np.conj(spectrum), axis=1)[:, :n].mean(axis=0)
    rho, total = autocovariance / autocovariance[0], 0.0
    for k in range(0, n - 1, 2):
        if rho[k] + rho[k + 1] < 0:
            break
        total += rho[k] + rho[k + 1]
    return count * n / (2 * total - 1)


def compare_references(moments: dict, ess_store: dict, rows: int) -> None:
    """How far the exact reference is from NUTS's, against the two runs' Monte Carlo error: over the
    coordinates, then along each null direction of the design (where the slow mixing is, and
    which moves dozens of coordinates at once), then with those directions projected out."""
    (m1, s1), (m2, s2) = moments["nuts"], moments["exact"]
    nuts_ess, exact_ess = ess_store[moments["nuts_ess"]], ess_store[f"exact-reference-{rows}"]
    z = (m2 - m1) / (s1 * np.sqrt(1 / nuts_ess + 1 / exact_ess))
    log(f"exact reference against NUTS's at {rows:,}: median |Δmean| {np.median(np.abs(m2 - m1) / s1):.3f} sd "
        f"(Monte Carlo error alone, were the coordinates independent: ≈ {0.674 * np.median(np.sqrt(1 / nuts_ess + 1 / exact_ess)):.3f}), "
        f"median |sd ratio - 1| {np.median(np.abs(s2 / s1 - 1)):.3f}; largest |z| of the mean {np.abs(z).max():.1f} "
        f"over {len(z)} coordinates ({int((np.abs(z) > 3).sum())} beyond 3)")
    difference = m2 - m1
    for k, v in enumerate(moments["null"], start=1):
        along = [np.array([d @ v for d in chains.draws]) for chains in (moments["nuts_chains"], moments["exact_chains"])]
        means, sd = [a.mean() for a in along], float(np.concatenate(along[0]).std(ddof=1))
        ess = [geyer_ess(a) for a in along]
        log(f"  null direction {k}: NUTS {means[0]:+.3f} (ESS {ess[0]:.0f}), exact {means[1]:+.3f} (ESS {ess[1]:.0f}), "
            f"sd {sd:.3f}: z = {(means[1] - means[0]) / (sd * np.sqrt(1 / ess[0] + 1 / ess[1])):+.2f}")
        difference = difference - (difference @ v) * v
    log(f"  with the null directions projected out: median |Δmean| {np.median(np.abs(difference) / s1):.3f} sd")


# ---- sgmcmc -------------------------------------------------------------------------------------

def sgmcmc_chains(label: str, folder: Path) -> Chains:
    run = sgmcmc.read_run(folder)
    warmup = int(run.config["run"]["warmup"])
    thin = int(run.config["run"]["thin"])
    names = run.parameter_names
    draws, times, totals = [], [], []
    for index, chain in zip(run.chain_ids, run.chains):
        rows = run.metrics[run.metrics.chain == index]
        iterations = warmup + thin * np.arange(1, len(chain) + 1)
        times.append(np.interp(iterations, rows.iteration.to_numpy(), rows.cpu_seconds.to_numpy()))
        totals.append(float(rows.cpu_seconds.max()))
        draws.append(chain[names].to_numpy())
    return Chains(label, draws, times, totals, names=names)


def sgmcmc_run(cli: str, out: Path, reuse: bool, preset=None, config=None, settings=None) -> Path:
    manifest = out / "manifest.json"
    wanted = (settings or {}).get("run.iterations")
    if reuse and manifest.exists() and wanted in (None, json.loads(manifest.read_text())["config"]["run"]["iterations"]):
        return out
    log(f"sgmcmc run {preset or config} → {out}")
    command = ["nice", cli, "run"] + (["--preset", preset] if preset else ["--config", str(config)])
    for key, value in (settings or {}).items():
        command += ["--set", f"{key}={value}"]
    command += ["--threads", "2", "--out", str(out), "--replace", "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    if result.returncode == 1:
        log(f"  a chain diverged: {result.stderr.strip()[-300:]}")
    return out


def sgmcmc_tune(cli: str, out: Path, reuse: bool, preset: str, settings: dict, iterations: int) -> Path:
    if not (reuse and (out / "tuned.toml").exists()):
        log(f"sgmcmc tune {preset} → {out}")
        command = ["nice", cli, "tune", "--preset", preset, "--iterations", str(iterations), "--jobs", "2",
                   "--out", str(out)]
        for key, value in settings.items():
            command += ["--set", f"{key}={value}"]
        if out.exists():
            shutil.rmtree(out)
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return out / "tuned.toml"


# ---- the criteria ---------------------------------------------------------------------------------

def running_errors(draws: np.ndarray, ref_mean: np.ndarray, ref_sd: np.ndarray):
    """The criteria's two medians for one chain's running estimate, after each of its draws."""
    n = np.arange(1, len(draws) + 1)[:, None]
    mean = np.cumsum(draws, axis=0) / n
    second = np.cumsum(draws * draws, axis=0) / n
    sd = np.sqrt(np.maximum(second - mean * mean, 0.0) * n / np.maximum(n - 1, 1))
    return np.median(np.abs(mean - ref_mean) / ref_sd, axis=1), np.median(np.abs(sd / ref_sd - 1.0), axis=1)


def time_to_accuracy(chains: Chains, ref_mean: np.ndarray, ref_sd: np.ndarray, min_draws: int = 10):
    """When every chain on its own is accurate: for each chain, the first draw from which its running
    estimate meets both criteria and keeps meeting them to the end of its run; the slowest chain's
    time (per-chain seconds), with its draws and gradients. None if a chain never settles.

    Each chain on its own, not all chains' draws pooled: two chains stuck on opposite sides of a
    slow direction pool to a good mean by luck (it happened here: SGLD-CV at 581,012 rows, each
    chain 0.72-0.78 sd off, their pool 0.03). And to the end, not the first crossing: a running
    mean that drifts through the answer crosses it once."""
    result = None
    for k, (draws, times) in enumerate(zip(chains.draws, chains.times)):
        mean_error, sd_error = running_errors(draws, ref_mean, ref_sd)
        failing = np.flatnonzero((mean_error > CRITERION) | (sd_error > CRITERION) | (np.arange(len(draws)) < min_draws - 1))
        settled = 0 if len(failing) == 0 else failing[-1] + 1
        if settled == len(draws):
            return None
        if result is None or times[settled] > result["seconds"]:
            result = {"seconds": float(times[settled]), "draws": settled + 1, "mean_error": float(mean_error[settled]),
                      "sd_error": float(sd_error[settled]),
                      "gradients": None if chains.gradients is None else int(chains.gradients[k][settled])}
    return result


def final_errors(chains: Chains, ref_mean, ref_sd):
    """The criteria's medians for each chain's whole run, the worse chain's."""
    errors = [[e[-1] for e in running_errors(d, ref_mean, ref_sd)] for d in chains.draws]
    return tuple(float(max(e[i] for e in errors)) for i in (0, 1))


class EssBatch:
    """Bulk ESS of several runs' draws in one R call (R starts slowly on a busy machine)."""

    def __init__(self, stan: Stan, work: Path):
        self.stan, self.work, self.pending = stan, work, []

    def add(self, chains: Chains, name: str, then) -> None:
        n = min(len(d) for d in chains.draws)
        frame = pd.concat([pd.DataFrame(d[:n], columns=chains.names).assign(chain=k)
                           for k, d in enumerate(chains.draws, start=1)])
        path = self.work / f"ess-{name}.draws.csv"
        frame[["chain", *chains.names]].to_csv(path, index=False)
        self.pending.append((path, then))

    def run(self) -> None:
        if self.pending:
            run_r(self.stan, "ess", draws=",".join(str(p) for p, _ in self.pending))
        for path, then in self.pending:
            then(pd.read_csv(path.with_name(path.name.replace(".draws.csv", ".csv"))).ess_bulk.to_numpy())
        self.pending = []


class Row:
    def __init__(self, label, rows, result, total, cpu, errors, note=""):
        self.label, self.rows, self.result, self.total, self.cpu = label, rows, result, total, cpu
        self.errors, self.note = errors, note
        self.ess = self.ess_per_second = float("nan")

    def set_ess(self, ess: np.ndarray) -> None:
        self.ess = float(np.median(ess))
        self.ess_per_second = self.ess / self.cpu
        reached = (f"reached at {self.result['seconds']:.2f} s ({self.result['draws']} draws; mean "
                   f"{self.result['mean_error']:.3f} sd, sd {self.result['sd_error']:.3f})" if self.result
                   else f"not reached in {self.total:.1f} s")
        log(f"  {self.label} at N = {self.rows:,}: {reached}; whole run: mean {self.errors[0]:.3f} sd, sd "
            f"{self.errors[1]:.3f}; median bulk ESS {self.ess:.0f}, {self.ess_per_second:.2f}/s")


def measure(batch: EssBatch, chains: Chains, rows: int, ref_mean, ref_sd, name: str) -> Row:
    row = Row(chains.label, rows, time_to_accuracy(chains, ref_mean, ref_sd), max(chains.total_seconds),
              float(sum(chains.total_seconds)), final_errors(chains, ref_mean, ref_sd))
    batch.add(chains, name, row.set_ess)
    return row


def race_real(stan: Stan, cli: str, work: Path, data_path: Path, X: np.ndarray, y: np.ndarray, batch,
              options, references: dict, ess_store: dict, every_candidate: bool):
    """The references, NUTS's race and sgmcmc's candidates on real rows (a file that both read): the
    table rows, NUTS's, its seconds per gradient, the best sgmcmc row, and the reference's mean and sd.
    Every candidate (the tuned and adapted ones too, not only the shipped presets) runs only if
    every_candidate, NUTS's long reference only with it and --nuts-reference."""
    nuts_reference = every_candidate and options.nuts_reference
    quick, rows = options.quick, len(y)
    (work / "x.bin").write_bytes(X.astype("<f8").tobytes())
    (work / "y.bin").write_bytes(y.astype(np.int8).tobytes())
    stan_data = dict(rows=rows, features=FEATURES, x=work / "x.bin", y=work / "y.bin", prior_scale=1)
    # All rows train (as Stan's); the same file as model.test_data only gives metrics.csv its rows
    # (seconds and cpu_seconds; the held-out evaluation's time is not counted in them).
    real = {"model.data": json.dumps(str(data_path)), "model.test_data": json.dumps(str(data_path))}

    # The same density: sgmcmc's lp__ (= -U) at a few draws against Stan's log_prob there.
    check = sgmcmc_run(cli, work / "lp-check", options.reuse, preset="covtype-sgldcv",
                       settings={**real, "run.iterations": 30, "run.thin": 10, "run.lp": "true", "run.chains": 1})
    check_run = sgmcmc.read_run(check)
    points = check_run.chains[0][check_run.parameter_names]
    points.to_csv(work / "lp-points.csv", index=False)
    run_r(stan, "log_prob", points=work / "lp-points.csv", out=work / "lp-stan.csv", **stan_data)
    ours, theirs = check_run.chains[0]["lp__"].to_numpy(), pd.read_csv(work / "lp-stan.csv").lp.to_numpy()
    gap = float(np.max(np.abs(ours - theirs) / np.abs(theirs)))
    log(f"log density at {rows:,} rows: sgmcmc lp__ {ours[-1]:.6f}, Stan log_prob {theirs[-1]:.6f} "
        f"(largest relative gap {gap:.1e})")
    if gap > 1e-8:
        sys.exit("the Stan program and the logistic plugin disagree on the log density")

    # The reference posterior: logistic_reference.py's exact sampler, 4 × 2,000 draws (its ESS
    # per draw is ≈ 0.5 at the median coordinate, so its error is ≈ 0.015 sd), checked against
    # NUTS (Hoffman & Gelman 2014; Stan's defaults, 1,000 warmup iterations): its race run, and
    # with --nuts-reference a long run of 4 × 2,000 draws, which is then the table's reference.
    exact_chains, exact_warmup, exact_draws = (2, 100, 300) if quick else (4, 300, 2000)
    exact = exact_reference(X, y, work / "exact-reference", exact_chains, exact_warmup, exact_draws, 1, options.reuse)
    references[rows] = {"exact": reference_moments(batch, exact, f"exact-reference-{rows}", rows, ess_store),
                        "exact_chains": exact, "null": logistic_reference.LaplaceLogistic(X, y, 1.0).null_directions()}
    ref_mean, ref_sd = references[rows]["exact"]
    if nuts_reference:
        ref_chains, ref_warmup, ref_draws = (2, 300, 300) if quick else (4, 1000, 2000)
        reference = nuts(stan, stan_data, work / "nuts-reference", ref_chains, ref_warmup, ref_draws, 1, options.reuse)
        references[rows]["nuts"] = reference_moments(batch, reference, f"reference-{rows}", rows, ess_store)
        references[rows]["nuts_ess"], references[rows]["nuts_chains"] = f"reference-{rows}", reference
        ref_mean, ref_sd = references[rows]["nuts"]

    table: list[Row] = []
    # NUTS's own race: an independent run (another seed), 2 chains, Stan's default warmup.
    race_warmup, race_draws = (300, 300) if quick else (1000, options.nuts_draws)
    race = nuts(stan, stan_data, work / "nuts-race", 2, race_warmup, race_draws, 2, options.reuse)
    nuts_row = measure(batch, race, rows, ref_mean, ref_sd, f"nuts-race-{rows}")
    table.append(nuts_row)
    if not nuts_reference:
        references[rows]["nuts"] = reference_moments(batch, race, f"nuts-race-draws-{rows}", rows, ess_store)
        references[rows]["nuts_ess"], references[rows]["nuts_chains"] = f"nuts-race-draws-{rows}", race
    leapfrog_seconds = sum(race.total_seconds) / sum(g[-1] for g in race.gradients)
    if nuts_row.result:  # how NUTS's cost grows with N, for the extrapolation to full size
        nuts_row.note = f"{nuts_row.result['gradients']:,} gradients × {leapfrog_seconds * 1e3:.2f} ms"

    # sgmcmc: the candidates a user would try, 2 chains each (2 threads). Their step scales like 1/N
    # while the prior-held directions keep their width, so the iterations these need to mix grow
    # like N: --iterations is for 20,000 rows, and scaled by N / 20,000 on the subsets.
    iterations = 100_000 if quick else options.iterations * rows // 20_000
    base = {**real, "run.chains": 2, "run.iterations": iterations, "run.thin": iterations // 2000,
            "run.eval_every": iterations // 2000}
    candidates = [  # label, folder, preset or tuned configuration, settings
        (f"{PRESET_METHODS.get(preset, preset)} ({preset})", preset.removeprefix("covtype-"), dict(preset=preset), base)
        for preset in options.presets if every_candidate or preset in ("covtype-sgldcv", "covtype-sgld", "covtype-saga")
    ]
    if every_candidate and not options.skip_tuning:
        # Baker et al. (2019)'s SGLD-CV, a scalar step (the covtype-sgldcv preset has the Fisher mass).
        paper_sgldcv = {"estimator.name": '"cv"', "estimator.sgd_decay_b": 1000}
        tuned = sgmcmc_tune(cli, work / f"tune-sgldcv-{rows}", options.reuse, "covtype-baker2019",
                            {**real, **paper_sgldcv, "run.thin": 10}, 20_000 if quick else 50_000)
        # adapt_mass (without MH: the window's gradients' second moment, modules/README.md) with a start
        # mass near the curvature and a step for unit scale.
        adapt = {"run.warmup": 20_000, "integrator.adapt_mass": "true", "integrator.mass": 10_000,
                 "integrator.scale_step_with_n": "false", "integrator.step_size": 0.003}
        # covtype-psgld's step is for 522,911 rows and no power of N carries it (modules/README.md,
        # pSGLD): tune it here, on a grid centred near that step × 522,911 / 20,000 (all 20,000 rows
        # train here; its effective step shrinks about like N while minibatch noise dominates V).
        tuned_psgld = sgmcmc_tune(cli, work / f"tune-psgld-{rows}", options.reuse, "covtype-psgld",
                                  {**real, "run.thin": 10, "integrator.step_size": 1.5e-6}, 20_000 if quick else 50_000)
        candidates += [
            ("SGLD-CV, sgmcmc tune's step", "sgldcv-tuned", dict(config=tuned), base),
            ("SGLD-CV, adapt_mass", "sgldcv-adapt-mass", dict(preset="covtype-baker2019"), {**base, **paper_sgldcv, **adapt}),
            ("pSGLD, sgmcmc tune's step", "psgld-tuned", dict(config=tuned_psgld), base),
        ]
    sg_rows = []
    for label, name, source, settings in candidates:
        folder = sgmcmc_run(cli, work / f"sg-{rows}-{name}", options.reuse, settings=settings, **source)
        sg_rows.append(measure(batch, sgmcmc_chains(label, folder), rows, ref_mean, ref_sd, f"sg-{rows}-{name}"))
    if options.dense_step:
        sg_rows.append(dense_mass_candidate(cli, work, options, real, batch, rows, ref_mean, ref_sd))
    table += sg_rows
    if every_candidate and len(exact.draws) >= 4:
        # The exact reference's sampler raced as the others are: its first 2 chains, against
        # NUTS's long reference or else against its own last 2 chains (independent of the first
        # two): what a dense mass and the null moves buy. Python, exact gradients.
        against = (ref_mean, ref_sd) if nuts_reference else (np.vstack(exact.draws[2:]).mean(0),
                                                             np.vstack(exact.draws[2:]).std(0, ddof=1))
        table.append(measure(batch, Chains(f"{exact.label} (Python)", exact.draws[:2], exact.times[:2],
                                           exact.total_seconds[:2], names=exact.names),
                             rows, *against, f"exact-race-{rows}"))
    best = min((r for r in sg_rows if r.result), key=lambda r: r.result["seconds"], default=None)
    return table, nuts_row, leapfrog_seconds, best, ref_mean, ref_sd


def dense_mass_candidate(cli, work, options, real, batch, rows, ref_mean, ref_sd) -> Row:
    """SGLD-CV with integrator.metric = "dense" and integrator.mass = "fisher": sgmcmc computes
    M = Σ_i ∇f_i ∇f_iᵀ + I at cv's SGD centre (the empirical Fisher information; the ridge 1 stands
    in for the Laplace prior's curvature, 1/b² with b = 1), in the chain's own timed start-up. With
    M⁻¹ close to the posterior covariance the step is in units of posterior sd, so --dense-step does
    not change with N, nor do the iterations (200,000)."""
    iterations = 20_000 if options.quick else 200_000
    settings = {**real, "run.chains": 2, "run.iterations": iterations, "run.thin": iterations // 2000,
                "run.eval_every": iterations // 2000, "integrator.scale_step_with_n": "false",
                "integrator.step_size": options.dense_step, "integrator.metric": "dense",
                "integrator.mass": "fisher"}
    folder = sgmcmc_run(cli, work / f"sg-{rows}-sgldcv-fisher", options.reuse, preset="covtype-sgldcv", settings=settings)
    chains = sgmcmc_chains(f"SGLD-CV, dense Fisher mass (ε = {options.dense_step})", folder)
    return measure(batch, chains, rows, ref_mean, ref_sd, f"sg-{rows}-sgldcv-fisher")


# ---- the race -------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("SGMCMC_COVTYPE_SAMPLE"),
                        help="covtype.libsvm.binary.scale.sample20k.libsvm.gz (or SGMCMC_COVTYPE_SAMPLE)")
    parser.add_argument("--sgmcmc", default=os.environ.get("SGMCMC_CLI"), help="the CLI (or SGMCMC_CLI; else on PATH)")
    parser.add_argument("--work", default="runs/covtype-nuts-race", help="folder for every run (kept)")
    parser.add_argument("--quick", action="store_true", help="short runs, to check the wiring (≈ 10 min)")
    parser.add_argument("--reuse", action="store_true", help="keep the runs already in --work")
    parser.add_argument("--skip-full", action="store_true", help="N = 20,000 only")
    parser.add_argument("--full-presets", default="covtype-sgldcv,covtype-sgld", type=lambda text: text.split(","),
                        help="the presets raced at 581,012 rows (comma-separated; ≈ 10 CPU minutes each)")
    parser.add_argument("--presets", default=",".join(PRESET_METHODS), type=lambda text: text.split(","),
                        help="the presets raced on the real rows (comma-separated; all the covtype ones by default)")
    parser.add_argument("--iterations", default=10_000_000, type=int,
                        help="iterations of every sgmcmc run at 20,000 rows, scaled by N / 20,000 on the subsets")
    parser.add_argument("--full-iterations", default=2_000_000, type=int,
                        help="iterations of every sgmcmc run at 581,012 rows (≈ 155 CPU s per chain per million)")
    parser.add_argument("--nuts-draws", default=2000, type=int,
                        help="draws per chain of NUTS's race run, after 1,000 warmup iterations")
    parser.add_argument("--dense-step", default=0.05, type=float,
                        help="SGLD-CV with a dense Fisher mass at this step (in posterior sd units; 0: not run). "
                             "0.05 was the largest of 0.05, 0.1, 0.2 whose chains met the sd criterion at 20,000 rows")
    parser.add_argument("--skip-tuning", action="store_true",
                        help="race the shipped presets only, not sgmcmc tune's steps and adapt_mass (saves ≈ an hour on 2 cores: three more 10⁷-iteration runs and two tunings)")
    parser.add_argument("--nuts-reference", action="store_true",
                        help="also a long NUTS reference at 20,000 rows (4 × 2,000 draws; CPU hours): the table's "
                             "reference there, against which the exact reference is checked")
    parser.add_argument("--subsets", default="5000,10000", type=lambda text: [int(n) for n in text.split(",") if n],
                        help="race also on random subsets of the real rows of these sizes (comma-separated; "
                             "'' for none): how the ratio to NUTS changes with N on real data")
    options = parser.parse_args()

    if not options.data:
        skip("no data: give --data PATH to covtype.libsvm.binary.scale.sample20k.libsvm.gz (or SGMCMC_COVTYPE_SAMPLE)")
    data_path = Path(options.data).resolve()
    if not data_path.exists():
        skip(f"no data at {options.data}")
    cli = options.sgmcmc or shutil.which("sgmcmc")
    if not cli or not Path(cli).exists():
        skip("the sgmcmc CLI was not found: give --sgmcmc build/release/bin/sgmcmc (or SGMCMC_CLI)")
    cli = str(Path(cli).resolve())
    work = Path(options.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    stan = Stan(work)
    stan.check()
    quick = options.quick

    # ---- N = 20,000, the real sample, and random subsets of it ----
    X, y = read_libsvm(data_path)
    rows = len(y)
    log(f"data: {rows:,} rows × {FEATURES} features, {y.mean():.3f} labelled +1")
    batch = EssBatch(stan, work)
    references, ess_store = {}, {}
    table, nuts_row, leapfrog_seconds, best, ref_mean, ref_sd = race_real(
        stan, cli, work, data_path, X, y, batch, options, references, ess_store, every_candidate=True)
    for size in options.subsets:
        if not 0 < size < rows:
            sys.exit(f"--subsets: {size} is not between 0 and the sample's {rows:,} rows")
        # A random subset (the same one for Stan and sgmcmc), its file in its own folder.
        pick = np.sort(np.random.default_rng(size).choice(rows, size, replace=False))
        folder = work / f"subset-{size}"
        folder.mkdir(exist_ok=True)
        subset_path = write_libsvm(folder / f"covtype-{size}.libsvm.gz", X[pick], y[pick])
        table += race_real(stan, cli, folder, subset_path, X[pick], y[pick], batch, options, references, ess_store,
                           every_candidate=False)[0]

    # ---- N = 581,012 (simulated) ----
    if not options.skip_full:
        # 581,012 training rows simulated with cover type's shape, written once so that the
        # reference and sgmcmc read the same rows, and 1,000 test rows (metrics.csv's time rows).
        full = work / "full"
        full.mkdir(exist_ok=True)
        X_full, y_full = simulate_covtype_shape(FULL_ROWS, seed=1)
        train, test = full / "covtype-shape-581012.libsvm.gz", full / "covtype-shape-test.libsvm.gz"
        if not (options.reuse and test.exists()):
            log(f"writing {FULL_ROWS:,} simulated rows → {train}")
            write_libsvm(train, X_full, y_full)
            write_libsvm(test, *simulate_covtype_shape(1000, seed=2))
        simulated = {"model.data": json.dumps(str(train)), "model.test_data": json.dumps(str(test))}
        # The reference: the exact sampler (a dense mass makes its step independent of N).
        full_reference = exact_reference(X_full, y_full, full / "exact-reference", 2, 50 if quick else 200,
                                         100 if quick else 800, 3, options.reuse)
        full_mean, full_sd = reference_moments(batch, full_reference, "exact-reference-581012", FULL_ROWS, ess_store)
        dense_row = (dense_mass_candidate(cli, full, options, simulated, batch, FULL_ROWS, full_mean, full_sd)
                     if options.dense_step else None)
        del X_full, y_full
        # NUTS at full size, extrapolated from its gradients at 20,000.
        if not (options.reuse and (work / "gradient-581012.txt").exists()):
            log("timing Stan's grad_log_prob at 20,000 and at 581,012 rows")
            run_r(stan, "gradient_time", rows=rows, features=FEATURES, x=work / "x.bin", y=work / "y.bin",
                  prior_scale=1, reps=50, out=work / "gradient-20000.txt")
            run_r(stan, "gradient_time", rows=FULL_ROWS, features=FEATURES, prior_scale=1, reps=5,
                  out=work / "gradient-581012.txt")
        small = float((work / "gradient-20000.txt").read_text())
        large = float((work / "gradient-581012.txt").read_text())
        per_gradient = leapfrog_seconds * large / small
        log(f"Stan's grad_log_prob: {small * 1e3:.2f} ms at {rows:,}, {large * 1e3:.1f} ms at {FULL_ROWS:,}; "
            f"NUTS's seconds per gradient in the 20,000 race {leapfrog_seconds * 1e3:.2f} ms → {per_gradient * 1e3:.1f} ms")
        if nuts_row.result:
            extrapolated = nuts_row.result["gradients"] * per_gradient
            result = {"seconds": extrapolated, "draws": nuts_row.result["draws"], "gradients": nuts_row.result["gradients"],
                      "mean_error": nuts_row.result["mean_error"], "sd_error": nuts_row.result["sd_error"]}
        else:
            result = None
        extrapolated_row = Row("NUTS (extrapolated)", FULL_ROWS, result, float("nan"), float("nan"),
                               (float("nan"), float("nan")),
                               note=f"{nuts_row.result['gradients'] if nuts_row.result else '?'} gradients × "
                                    f"{per_gradient * 1e3:.1f} ms")
        table.append(extrapolated_row)
        full_iterations = 100_000 if quick else options.full_iterations
        full_base = {**simulated, "run.chains": 2, "run.iterations": full_iterations,
                     "run.thin": full_iterations // 2000, "run.eval_every": full_iterations // 2000}
        for preset in options.full_presets:
            label = f"{PRESET_METHODS.get(preset, preset)} ({preset})"
            folder = sgmcmc_run(cli, work / f"sg-581012-{preset}", options.reuse, preset=preset, settings=full_base)
            table.append(measure(batch, sgmcmc_chains(label, folder), FULL_ROWS, full_mean, full_sd, f"sg-581012-{preset}"))
        if dense_row:
            table.append(dense_row)

    # ---- ESS, then the table ----
    log("bulk ESS of every run (R's posterior)")
    batch.run()
    for size, moments in references.items():
        if "nuts" in moments:
            compare_references(moments, ess_store, size)
    if not options.skip_full:
        extrapolated_row.ess_per_second = nuts_row.ess_per_second * small / large  # the same ESS per gradient
    nuts_seconds = {r.rows: r.result["seconds"] for r in table if r.label.startswith("NUTS") and r.result}
    print()
    print("Time to a posterior within 0.1 sd in mean and ±10% in sd (medians over the 55 coordinates);")
    print("seconds per chain (CPU; 2 chains side by side), warmup and centring included; ESS/s = median bulk ESS per CPU second")
    print(f"{'sampler':34} {'N':>9} {'s to accuracy':>16} {'ESS/s':>9} {'NUTS/ours':>10}  final errors (mean, sd)")
    for r in table:
        seconds = f"{r.result['seconds']:.2f}" if r.result else f"not in {r.total:.0f}"
        ratio = ""
        if r.result and not r.label.startswith("NUTS") and r.rows in nuts_seconds:
            ratio = f"{nuts_seconds[r.rows] / r.result['seconds']:.1f}×"
        errors = "" if np.isnan(r.errors[0]) else f"{r.errors[0]:.3f}, {r.errors[1]:.3f}"
        print(f"{r.label:34} {r.rows:>9,} {seconds:>16} {r.ess_per_second:>9.2f} {ratio:>10}  {errors} {r.note}")
    if best:
        print(f"\nbest sgmcmc at N = {rows:,}: {best.label}")


if __name__ == "__main__":
    main()
