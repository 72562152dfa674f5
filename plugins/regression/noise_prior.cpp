// The gaussian family's sampled noise scale (noise_prior.hpp).
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "noise_prior.hpp"  // after fmt: it imports sgmcmc.sdk, whose fmt would hide the header's templates

namespace regression {

namespace {

struct NamedForm {
  const char* name;
  NoisePriorForm form;
};
constexpr NamedForm forms[] = {{"half_normal", NoisePriorForm::half_normal},
                               {"half_cauchy", NoisePriorForm::half_cauchy},
                               {"half_student_t", NoisePriorForm::half_student_t},
                               {"exponential", NoisePriorForm::exponential},
                               {"flat", NoisePriorForm::flat}};

/// log(1 + e^t) without overflow.
double softplus(double t) { return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t))); }
/// 1/(1 + e^{-t}) without overflow.
double logistic(double t) { return t >= 0.0 ? 1.0 / (1.0 + std::exp(-t)) : std::exp(t) / (1.0 + std::exp(t)); }

}  // namespace

// The Student-t forms in t = 2u - log(ν s²) = log(σ²/(ν s²)): log(1 + σ²/(ν s²)) = softplus(t),
// whose derivative in u is 2 logistic(t), both finite for any u (σ² overflows for u > 354).
double NoisePrior::potential(double u) const {
  switch (form) {
    case NoisePriorForm::half_normal: {
      const double ratio = std::exp(u) / scale;
      return 0.5 * ratio * ratio - u;
    }
    case NoisePriorForm::half_cauchy:
    case NoisePriorForm::half_student_t: {
      const double nu = degrees_of_freedom;
      return 0.5 * (nu + 1.0) * softplus(2.0 * u - std::log(nu * scale * scale)) - u;
    }
    case NoisePriorForm::exponential: return std::exp(u) / scale - u;
    case NoisePriorForm::flat: return -u;
  }
  return 0.0;
}

double NoisePrior::derivative(double u) const {
  switch (form) {
    case NoisePriorForm::half_normal: {
      const double ratio = std::exp(u) / scale;
      return ratio * ratio - 1.0;
    }
    case NoisePriorForm::half_cauchy:
    case NoisePriorForm::half_student_t: {
      const double nu = degrees_of_freedom;
      return (nu + 1.0) * logistic(2.0 * u - std::log(nu * scale * scale)) - 1.0;
    }
    case NoisePriorForm::exponential: return std::exp(u) / scale - 1.0;
    case NoisePriorForm::flat: return -1.0;
  }
  return 0.0;
}

// σ = s|Z| (half-normal); s|Z|/√(G/ν) with G ~ χ²_ν = Gamma(ν/2, rate 1/2) (half Student-t, and
// half-Cauchy with ν = 1); s E with E = -log U ~ Exp(1) (exponential).
double NoisePrior::draw(sgmcmc::Rng& rng) const {
  switch (form) {
    case NoisePriorForm::half_normal: return std::log(scale * std::abs(rng.normal()));
    case NoisePriorForm::half_cauchy:
    case NoisePriorForm::half_student_t: {
      const double nu = degrees_of_freedom, z = rng.normal();
      return std::log(scale * std::abs(z) / std::sqrt(rng.gamma(0.5 * nu, 0.5) / nu));
    }
    case NoisePriorForm::exponential: return std::log(-scale * std::log(1.0 - rng.uniform()));  // 1 - U ∈ (0, 1]
    case NoisePriorForm::flat: break;
  }
  throw sgmcmc::Error(fmt::format("{}: 'flat' is an improper prior on the noise sd σ (p(σ) ∝ 1 on σ > 0 has no "
                                  "normalised density), so there is no prior draw of σ to simulate data from "
                                  "(model.simulate_from_prior, sgmcmc sbc); give a proper noise_prior (half_normal, "
                                  "half_cauchy, half_student_t, exponential)",
                                  key));
}

GaussianNoise read_gaussian_noise(sgmcmc::SectionReader settings) {
  GaussianNoise noise;
  const auto name = settings.optional_text("noise_prior");
  if (!name) {
    noise.fixed_sd = settings.positive_number("noise_sd", 1.0);
    return noise;
  }
  if (settings.contains("noise_sd"))
    throw sgmcmc::Error(fmt::format("{} and {}: the noise sd σ is either fixed (noise_sd) or sampled under a prior "
                                    "(noise_prior), not both; remove one",
                                    settings.describe("noise_sd"), settings.describe("noise_prior")));
  NoisePrior prior{.key = settings.describe("noise_prior")};
  std::string names;
  bool found = false;
  for (const auto& [form_name, form] : forms) {
    names += fmt::format("{}{}", names.empty() ? "" : ", ", form_name);
    if (*name == form_name) prior.form = form, found = true;
  }
  if (!found) throw sgmcmc::Error(fmt::format("{}: '{}' is not a noise prior; expected {}", prior.key, *name, names));
  if (prior.form != NoisePriorForm::flat) prior.scale = settings.positive_number("noise_prior_scale", 1.0);
  if (prior.form == NoisePriorForm::half_student_t) {
    if (!settings.contains("noise_prior_df"))
      throw sgmcmc::Error(fmt::format("{}: half_student_t needs its degrees of freedom ν > 0 in model.noise_prior_df "
                                      "(e.g. 3)",
                                      prior.key));
    prior.degrees_of_freedom = settings.positive_number("noise_prior_df", 3.0);
  }
  noise.sampled = prior;
  return noise;
}

void refuse_noise_prior(sgmcmc::SectionReader settings, const std::string& family) {
  if (settings.contains("noise_prior"))
    throw sgmcmc::Error(fmt::format("{}: family {} has no noise sd; a noise prior needs family = \"gaussian\"",
                                    settings.describe("noise_prior"), family));
}

}  // namespace regression
