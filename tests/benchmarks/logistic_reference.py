"""An exact reference sampler for Bayesian logistic regression with a Laplace prior on designs
whose columns are linearly dependent, for the cover type race (covtype_nuts_race.py).

Cover type's design has exact null directions: every row sets one of 4 wilderness indicators and
one of 40 soil indicators, so each group sums to the intercept column, and an indicator that no row
sets is a zero column. Along such a direction v (X̃v = 0, X̃ = [1, X]) the likelihood is constant
and only the Laplace prior holds the posterior, whose width there stays O(1) while the other
directions narrow like N^{-1/2}. Samplers with a scalar or diagonal mass mix slowly along them
(NUTS needs deep trees; an exact-gradient HMC chain with a diagonal mass did not mix at 581,012
rows). This sampler alternates two moves, each of which leaves the posterior
π(θ) ∝ exp(-Σ_j |θ_j|/b) Π_i σ(y_i x̃_iᵀθ) invariant:

1. HMC (Neal 2011, "MCMC using Hamiltonian dynamics", §5.4) with a dense mass M = H + I/b², H the
   likelihood's Hessian X̃ᵀ diag(σ(z)(1 - σ(z))) X̃ at the ridge-regularised mode (I/b², the
   prior's scale, where H holds nothing): in the identified directions the posterior is then
   close to N(mode, M^{-1}), so leapfrog steps of order 1 cross it, whatever N. A leapfrog
   trajectory of L steps of size ε (jittered ±20% per iteration, tuned in the warmup to an
   acceptance of 0.6–0.9 and then frozen) and a Metropolis test on the energy.
2. For each null direction v (unit vector, ‖X̃v‖_∞ below 1e-9 · ‖X̃‖_∞): propose θ' = θ + t v
   with t drawn exactly from the prior restricted to that line, q(t) ∝ exp(-Σ_j |θ_j + t v_j|/b),
   a piecewise exponential density with breakpoints at -θ_j/v_j (sampled by inversion), and
   accept with probability min(1, L(θ')/L(θ)). This is Metropolis–Hastings with a proposal that
   is the same density for every point of the line, so detailed balance holds with
   π(θ)q(θ') min(1, L(θ')/L(θ)) = π0(θ)π0(θ') min(L(θ), L(θ'))/Z, symmetric in θ and θ'. As X̃v
   is zero up to rounding, the likelihood ratio is 1 up to rounding: the move is the exact
   conditional along v, whose steps are O(1) and independent of N.

Its law is checked against Stan's NUTS on the real 20,000-row sample by the race itself (it
prints the two references' distance); it is a benchmark tool, not a sampler of the framework.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import sparse


def _negative_log_likelihood(margins: np.ndarray, e: np.ndarray) -> float:
    """Σ_i log(1 + exp(-m_i)), given e = exp(-|m|) (stable for any sign of m = y x̃ᵀθ)."""
    return float((np.maximum(-margins, 0.0) + np.log1p(e)).sum())


def _likelihood_terms(margins: np.ndarray) -> tuple[float, np.ndarray]:
    """Σ_i log(1 + exp(-m_i)) and σ(-m_i), from one exp."""
    e = np.exp(-np.abs(margins))
    return _negative_log_likelihood(margins, e), np.where(margins >= 0, e, 1.0) / (1.0 + e)


class LaplaceLogistic:
    """U(θ) = Σ_j |θ_j|/b + Σ_i log(1 + exp(-y_i x̃_iᵀθ)), y_i in {-1, +1}, θ = (intercept, β).
    The design is kept sparse (CSR): cover type's rows have 13 nonzeros of 55."""

    def __init__(self, X: np.ndarray, labels01: np.ndarray, prior_scale: float):
        dense = np.hstack([np.ones((len(X), 1)), X])
        self.signs = np.where(labels01 > 0, 1.0, -1.0)
        self.design = sparse.csr_matrix(dense)
        self.design_t = self.design.T.tocsr()
        self.b = prior_scale

    def margins(self, theta: np.ndarray) -> np.ndarray:
        return self.signs * (self.design @ theta)

    def potential_and_gradient(self, theta: np.ndarray, margins=None) -> tuple[float, np.ndarray, np.ndarray]:
        m = self.margins(theta) if margins is None else margins
        negative_log_likelihood, sigma_minus = _likelihood_terms(m)
        # d/dθ log(1 + exp(-y x̃ᵀθ)) = -y σ(-y x̃ᵀθ) x̃
        gradient = self.design_t @ (-self.signs * sigma_minus) + np.sign(theta) / self.b
        return negative_log_likelihood + np.abs(theta).sum() / self.b, gradient, m

    def ridge_mode(self, iterations: int = 30) -> np.ndarray:
        """Newton's method on the likelihood plus the Gaussian ½‖θ‖²/b² (smooth, the same scale as
        the Laplace prior): a point in the bulk for the mass matrix and the chains' start."""
        theta = np.zeros(self.design.shape[1])
        for _ in range(iterations):
            _, gradient, _ = self.potential_and_gradient(theta)
            gradient += theta / self.b**2 - np.sign(theta) / self.b
            hessian = self.hessian(theta) + np.eye(len(theta)) / self.b**2
            step = np.linalg.solve(hessian, gradient)
            theta -= step
            if np.max(np.abs(step)) < 1e-10:
                break
        return theta

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        s = 1.0 / (1.0 + np.exp(-(self.design @ theta)))
        return (self.design_t @ self.design.multiply((s * (1.0 - s))[:, None]).tocsc()).toarray()

    def null_directions(self) -> np.ndarray:
        """Orthonormal rows v with X̃v = 0 (up to rounding), from the eigenvectors of X̃ᵀX̃."""
        gram = (self.design_t @ self.design).toarray()
        values, vectors = np.linalg.eigh(gram)
        null = vectors[:, values < 1e-10 * values.max()].T
        scale = np.abs(self.design.data).max()
        for v in null:
            residual = np.abs(self.design @ v).max()
            if residual > 1e-9 * scale:
                raise ValueError(f"a null direction of the design is not null: max |X̃v| = {residual:.2e}")
        return null


def prior_along_line(theta: np.ndarray, v: np.ndarray, b: float, rng: np.random.Generator) -> float:
    """A draw of t from q(t) ∝ exp(-Σ_j |θ_j + t v_j|/b): piecewise exponential, with breakpoints
    τ_j = -θ_j/v_j, slope +W left of all of them, -W right of all, W = Σ_j |v_j|/b."""
    used = np.abs(v) > 1e-14 * np.abs(v).max()
    tau = -theta[used] / v[used]
    weight = np.abs(v[used]) / b
    order = np.argsort(tau)
    tau, weight = tau[order], weight[order]
    total = weight.sum()
    # log q at each breakpoint (up to a constant), and the slope on each inner segment
    log_q = -(weight[None, :] * np.abs(tau[:, None] - tau[None, :])).sum(axis=1)
    slopes = total - 2.0 * np.cumsum(weight)[:-1]
    lengths = np.diff(tau)
    # log mass of each inner segment: ∫ exp(log_q_k + s (t - τ_k)) dt over [τ_k, τ_k+1]
    #   = exp(max(log_q_k, log_q_k+1)) (1 - exp(-|s| d))/|s|, which is d when s d is tiny
    magnitude = np.abs(slopes) * lengths
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.where(magnitude > 1e-12, -np.expm1(-magnitude) / np.where(slopes == 0, 1, np.abs(slopes)), lengths)
    log_mass = np.concatenate([[log_q[0] - np.log(total)],
                               np.maximum(log_q[:-1], log_q[1:]) + np.log(np.maximum(inner, 1e-300)),
                               [log_q[-1] - np.log(total)]])
    probabilities = np.exp(log_mass - log_mass.max())
    segment = rng.choice(len(log_mass), p=probabilities / probabilities.sum())
    u = rng.random()
    if segment == 0:
        return float(tau[0] - rng.exponential() / total)
    if segment == len(log_mass) - 1:
        return float(tau[-1] + rng.exponential() / total)
    k = segment - 1
    s, d = slopes[k], lengths[k]
    if abs(s) * d <= 1e-12:
        return float(tau[k] + u * d)
    # the distance D from the segment's higher end, density ∝ exp(-|s| D) on [0, d]
    distance = -np.log1p(u * np.expm1(-abs(s) * d)) / abs(s)
    return float(tau[k + 1] - distance if s > 0 else tau[k] + distance)


def sample(X: np.ndarray, labels01: np.ndarray, prior_scale: float, chains: int, warmup: int, draws: int,
           seed: int, steps: int = 4) -> dict:
    """`chains` chains of warmup + draws iterations, one HMC trajectory and the null moves each.
    Returns the post-warmup draws (a list of draws × d arrays), each draw's CPU seconds since the
    chain started (the set-up of the mass and null directions, done once, in setup_seconds),
    acceptance rates, step sizes and each chain's CPU seconds."""
    setup_start = time.process_time()
    target = LaplaceLogistic(X, labels01, prior_scale)
    mode = target.ridge_mode()
    mass = target.hessian(mode) + np.eye(len(mode)) / prior_scale**2
    inverse_mass = np.linalg.inv(mass)
    mass_factor = np.linalg.cholesky(mass)
    null = target.null_directions()
    null_margins = [target.margins(v) for v in null]  # zero up to rounding
    out = {"draws": [], "times": [], "acceptance": [], "null_acceptance": [], "step": [], "seconds": [],
           "null_directions": len(null), "setup_seconds": time.process_time() - setup_start}
    for chain in range(chains):
        rng = np.random.default_rng([seed, chain])
        start = time.process_time()
        theta = mode + np.linalg.solve(mass_factor.T, rng.standard_normal(len(mode)))  # a draw of N(mode, M^-1)
        u, gradient, m = target.potential_and_gradient(theta)
        likelihood_part = u - np.abs(theta).sum() / prior_scale  # -log L(θ), kept for the null moves
        step, accepted, null_accepted, window, kept, times = 1.0 / steps, 0, 0, 0, [], []
        for iteration in range(warmup + draws):
            # 1. HMC with mass M: leapfrog, then a Metropolis test on the energy
            epsilon = step * rng.uniform(0.8, 1.2)
            momentum = mass_factor @ rng.standard_normal(len(theta))
            energy = u + 0.5 * momentum @ inverse_mass @ momentum
            q, p = theta.copy(), momentum - 0.5 * epsilon * gradient
            for leap in range(steps):
                q = q + epsilon * (inverse_mass @ p)
                u_new, g_new, m_new = target.potential_and_gradient(q)
                p = p - (epsilon if leap < steps - 1 else 0.5 * epsilon) * g_new
            new_energy = u_new + 0.5 * p @ inverse_mass @ p
            if np.isfinite(new_energy) and np.log(rng.random()) < energy - new_energy:
                theta, u, gradient, m = q, u_new, g_new, m_new
                likelihood_part = u - np.abs(theta).sum() / prior_scale
                accepted += iteration >= warmup
                window += 1
            # 2. exact moves along the null directions (the margins move by t·X̃v, zero up to rounding)
            moved = False
            for v, v_margins in zip(null, null_margins):
                t = prior_along_line(theta, v, prior_scale, rng)
                proposal_margins = m + t * v_margins
                proposal_part = _negative_log_likelihood(proposal_margins, np.exp(-np.abs(proposal_margins)))
                if np.log(rng.random()) < likelihood_part - proposal_part:
                    theta, m, likelihood_part, moved = theta + t * v, proposal_margins, proposal_part, True
                    null_accepted += iteration >= warmup
            if moved:
                u, gradient, m = target.potential_and_gradient(theta, m)
            # warmup: every 50 iterations, move the step towards an acceptance of 0.6–0.9
            if iteration < warmup and (iteration + 1) % 50 == 0:
                rate = window / 50
                step *= 0.7 if rate < 0.6 else (1.2 if rate > 0.9 else 1.0)
                window = 0
            if iteration >= warmup:
                kept.append(theta.copy())
                times.append(time.process_time() - start)
        out["draws"].append(np.array(kept))
        out["times"].append(np.array(times))
        out["acceptance"].append(accepted / draws)
        out["null_acceptance"].append(null_accepted / max(1, draws * len(null)))
        out["step"].append(step)
        out["seconds"].append(time.process_time() - start)
    return out
