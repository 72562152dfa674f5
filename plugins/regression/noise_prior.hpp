// The gaussian family's noise scale σ, shared by `glm` and `mlp`: fixed by model.noise_sd
// (default 1), or, with model.noise_prior, sampled with the other parameters as θ's last
// coordinate `log_noise_sd`, u = log σ: unconstrained, so every integrator moves it by the same
// gradient step as the rest, and an MH corrector sees the joint exact density.
//
// Priors on σ > 0 (s = model.noise_prior_scale, ν = model.noise_prior_df), as Stan writes them
// on `real<lower=0> sigma`; the half forms are the normal and Student-t densities folded onto
// σ > 0 (a constant factor 2), exponential is Stan's exponential(λ) with its scale s = 1/λ:
//   half_normal(s)          -log p(σ) = σ²/(2s²)
//   half_student_t(ν, s)    -log p(σ) = (ν+1)/2 · log(1 + σ²/(ν s²))
//   half_cauchy(s)          half_student_t with ν = 1: log(1 + σ²/s²)
//   exponential(scale s)    -log p(σ) = σ/s
//   flat                    -log p(σ) = 0 (improper: no prior draw)
// all up to constants. With the Jacobian dσ/du = σ of u = log σ, the potential on u is
//   f_0(u) = -log p(e^u) - u.
// A gaussian row's term and its derivative in u: log_noise_sd.hpp.
#pragma once
#include <optional>
#include <string>

#include "log_noise_sd.hpp"

import sgmcmc.sdk;

namespace regression {

enum class NoisePriorForm { half_normal, half_cauchy, half_student_t, exponential, flat };

struct NoisePrior {
  NoisePriorForm form = NoisePriorForm::half_cauchy;
  double scale = 1.0;               // s
  double degrees_of_freedom = 1.0;  // ν: half_student_t (half_cauchy is ν = 1)
  std::string key;                  // "model.noise_prior (set at ...)": how errors name it

  /// f_0(u) = -log p(σ = e^u) - u, up to a constant.
  double potential(double u) const;
  /// ∂f_0/∂u.
  double derivative(double u) const;
  /// u = log σ with σ drawn from the prior; refuses `flat` naming the key.
  double draw(sgmcmc::Rng& rng) const;
};

/// The gaussian family's noise: σ fixed, or its prior when sampled.
struct GaussianNoise {
  double fixed_sd = 1.0;                // model.noise_sd, when not sampled
  std::optional<NoisePrior> sampled;    // model.noise_prior and its keys
};

/// model.noise_sd or model.noise_prior (with noise_prior_scale, and noise_prior_df, which
/// half_student_t requires): refuses both together naming both keys, an unknown form, a scale
/// or ν ≤ 0. Read only for the gaussian family, so that elsewhere they are unknown keys.
GaussianNoise read_gaussian_noise(sgmcmc::SectionReader settings);

/// Refuses model.noise_prior for a family without a noise scale, naming the key and the family.
void refuse_noise_prior(sgmcmc::SectionReader settings, const std::string& family);

}  // namespace regression
