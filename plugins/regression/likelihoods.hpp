// The likelihoods the `glm` plugin offers, one per (family, link), and the constants they take.
// The per-row arithmetic of each is in likelihood_math.hpp (compiled per instruction set); what
// the model needs besides (names, label coding, simulation, Lipschitz bounds) is in families.hpp.
#pragma once
#include <cstddef>

namespace regression {

/// Index into the kernels' table: the order of likelihood_math.hpp's `Likelihoods` list.
enum class Likelihood : std::size_t {
  bernoulli_logit,
  bernoulli_probit,
  poisson_log,
  gaussian_identity,
  negative_binomial_log,
};
inline constexpr std::size_t likelihood_count = 5;

/// Constants of the likelihood that the configuration fixes.
struct LikelihoodConstants {
  double noise_sd = 1.0;    // gaussian: σ
  double dispersion = 1.0;  // negative binomial: r (variance μ + μ²/r)
};

}  // namespace regression
