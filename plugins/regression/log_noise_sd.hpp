// The data term of a gaussian row in u = log σ, for the plugins that sample the noise sd
// (noise_prior.hpp says how): f_i = (y - z)²/(2σ²) + u + ½ log 2π, so ∂f_i/∂u = 1 - (y - z)²/σ².
// Apart from noise_prior.hpp because mlp's passes (../mlp/network.cpp) import nothing.
#pragma once

namespace regression {

/// The sampled noise sd's parameter name.
inline constexpr const char* log_noise_sd_name = "log_noise_sd";

/// ∂f_i/∂u of a gaussian row with residual r = y - z at σ = e^u: 1 - (r/σ)².
inline double gaussian_log_noise_sd_derivative(double residual, double sigma) {
  const double standardised = residual / sigma;
  return 1.0 - standardised * standardised;
}

}  // namespace regression
