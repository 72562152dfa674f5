// The sub-steps the integrators are built from.
//
// Langevin SDE (temperature T, friction γ, mass M):
//   dθ = M⁻¹m dt,  dm = -∇U(θ) dt - γ m dt + sqrt(2γT) M^{1/2} dW.
// The splitting integrators (OBABO, BAOAB, leapfrog) are built from three exact sub-flows, exported
// below so they can be tested one by one: A (drift), B (kick) and O (Ornstein–Uhlenbeck).
module;
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>
export module sgmcmc.integrators:substeps;
import sgmcmc.random;
import :metric;

export namespace sgmcmc {

// ---- Sub-steps (Leimkuhler & Matthews 2015, §7; Garriga-Alonso & Fortuin 2021, §4) -------------

/// A: θ ← θ + h M⁻¹ m; with `reflect`, a coordinate that crosses 0 is reflected, θ_j ← -θ_j,
/// and its momentum negated, m_j ← -m_j (the elastic bounce of a particle at a wall).
void drift(std::span<double> theta, std::span<double> momentum, std::span<const double> inverse_mass, double h,
           bool reflect = false);
/// B: m ← m - h g.
void kick(std::span<double> momentum, std::span<const double> gradient, double h);
/// O: m ← c m + sqrt((1 - c²) T) M^{1/2} ξ with c = exp(-γt): the exact flow of the
/// Ornstein–Uhlenbeck part dm = -γ m dt + sqrt(2γT) M^{1/2} dW over a time t. Callers pass c.
void ornstein_uhlenbeck(std::span<double> momentum, double retention, double temperature,
                        std::span<const double> sqrt_mass, Rng& rng);
/// O of the adaptive Langevin thermostat (Leimkuhler & Shang 2016): the exact flow over a time t
/// of dm = -ξ m dt + sqrt(2AT) M^{1/2} dW with the friction ξ held fixed,
/// m ← e^{-ξt} m + sqrt(AT (1 - e^{-2ξt})/ξ) M^{1/2} η, for ξ of either sign (variance 2ATt at ξ = 0).
/// With ξ = A it is ornstein_uhlenbeck with c = e^{-At}.
void thermostatted_ornstein_uhlenbeck(std::span<double> momentum, double friction, double diffusion, double temperature,
                                      double t, std::span<const double> sqrt_mass, Rng& rng);
/// ½ mᵀ M⁻¹ m.
double kinetic_energy(std::span<const double> momentum, std::span<const double> inverse_mass);
/// The Euler–Maruyama momentum step of SGHMC and SGNHT, a linear friction with the kick and the
/// noise of one step h: m ← (1 - decay) m - h g + noise M^{1/2} ξ. SGHMC passes decay = γh and
/// noise = sqrt(2γhT) (Chen, Fox & Guestrin 2014); SGNHT decay = ξh with its thermostat ξ and
/// noise = sqrt(2AhT) (Ding et al. 2014, Alg. 2).
void euler_momentum(std::span<double> momentum, std::span<const double> gradient, double decay, double h, double noise,
                    std::span<const double> sqrt_mass, Rng& rng);

// The same sub-steps for any Metric (the integrators use these): a diagonal one runs the loops
// above, with the same arithmetic and random numbers; a dense one applies M⁻¹ and draws
// N(0, M) through its Cholesky factor (Metric), from the same d normals per draw.
void drift(std::span<double> theta, std::span<double> momentum, const Metric& metric, double h, bool reflect = false);
void ornstein_uhlenbeck(std::span<double> momentum, double retention, double temperature, const Metric& metric, Rng& rng);
void thermostatted_ornstein_uhlenbeck(std::span<double> momentum, double friction, double diffusion, double temperature,
                                      double t, const Metric& metric, Rng& rng);
double kinetic_energy(std::span<const double> momentum, const Metric& metric);
void euler_momentum(std::span<double> momentum, std::span<const double> gradient, double decay, double h, double noise,
                    const Metric& metric, Rng& rng);

}  // namespace sgmcmc

namespace sgmcmc {

void drift(std::span<double> theta, std::span<double> momentum, std::span<const double> inverse_mass, double h,
           bool reflect) {
  for (std::size_t j = 0; j < theta.size(); ++j) theta[j] += h * inverse_mass[j] * momentum[j];
  if (!reflect) return;
  for (std::size_t j = 0; j < theta.size(); ++j)
    if (theta[j] < 0.0) {
      theta[j] = -theta[j];
      momentum[j] = -momentum[j];
    }
}

void kick(std::span<double> momentum, std::span<const double> gradient, double h) {
  for (std::size_t j = 0; j < momentum.size(); ++j) momentum[j] -= h * gradient[j];
}

namespace substep_parts {
/// m ← c m + noise M^{1/2} η: every O step's arithmetic.
void decay_with_noise(std::span<double> momentum, double retention, double noise, std::span<const double> sqrt_mass,
                      Rng& rng) {
  for (std::size_t j = 0; j < momentum.size(); ++j)
    momentum[j] = retention * momentum[j] + noise * sqrt_mass[j] * rng.normal();
}

/// d numbers of this thread's scratch (a chain runs on one thread at a time).
std::span<double> scratch(std::size_t d) {
  thread_local std::vector<double> values;
  values.resize(d);
  return values;
}

/// η ~ N(0, M): d normals drawn in coordinate order, coloured by a dense metric.
std::span<double> mass_normal(const Metric& metric, std::size_t d, Rng& rng) {
  const std::span<double> eta = scratch(d);
  for (double& value : eta) value = rng.normal();
  metric.correlate_as_mass(eta);
  return eta;
}

/// m ← c m + noise η with η ~ N(0, M), for any metric.
void decay_with_noise(std::span<double> momentum, double retention, double noise, const Metric& metric, Rng& rng) {
  if (!metric.dense()) return decay_with_noise(momentum, retention, noise, metric.sqrt(), rng);
  const std::span<const double> eta = mass_normal(metric, momentum.size(), rng);
  for (std::size_t j = 0; j < momentum.size(); ++j) momentum[j] = retention * momentum[j] + noise * eta[j];
}
}  // namespace substep_parts

namespace substep_parts {
/// The O step's noise sqrt((1 - c²)T), which keeps N(0, TM) invariant under m ← cm + noise M^{1/2}ξ.
double ornstein_uhlenbeck_noise(double retention, double temperature) {
  return std::sqrt((1.0 - retention * retention) * temperature);
}
}  // namespace substep_parts

void ornstein_uhlenbeck(std::span<double> momentum, double retention, double temperature,
                        std::span<const double> sqrt_mass, Rng& rng) {
  substep_parts::decay_with_noise(momentum, retention, substep_parts::ornstein_uhlenbeck_noise(retention, temperature),
                                  sqrt_mass, rng);
}

namespace substep_parts {
/// The thermostatted O's retention e^{-ξt} and noise sqrt(AT (1 - e^{-2ξt})/ξ).
std::pair<double, double> thermostatted_coefficients(double friction, double diffusion, double temperature, double t) {
  // (1 - e^{-2ξt})/ξ by expm1: accurate when ξt is small, of either sign; its limit at ξ = 0 is 2t.
  const double spread = friction == 0.0 ? 2.0 * t : -std::expm1(-2.0 * friction * t) / friction;
  return {std::exp(-friction * t), std::sqrt(diffusion * temperature * spread)};
}
}  // namespace substep_parts

void thermostatted_ornstein_uhlenbeck(std::span<double> momentum, double friction, double diffusion, double temperature,
                                      double t, std::span<const double> sqrt_mass, Rng& rng) {
  const auto [retention, noise] = substep_parts::thermostatted_coefficients(friction, diffusion, temperature, t);
  substep_parts::decay_with_noise(momentum, retention, noise, sqrt_mass, rng);
}

double kinetic_energy(std::span<const double> momentum, std::span<const double> inverse_mass) {
  double sum = 0.0;
  for (std::size_t j = 0; j < momentum.size(); ++j) sum += momentum[j] * momentum[j] * inverse_mass[j];
  return 0.5 * sum;
}

void euler_momentum(std::span<double> momentum, std::span<const double> gradient, double decay, double h, double noise,
                    std::span<const double> sqrt_mass, Rng& rng) {
  for (std::size_t j = 0; j < momentum.size(); ++j)
    momentum[j] = (1.0 - decay) * momentum[j] - h * gradient[j] + noise * sqrt_mass[j] * rng.normal();
}

}  // namespace sgmcmc

namespace sgmcmc {

void drift(std::span<double> theta, std::span<double> momentum, const Metric& metric, double h, bool reflect) {
  if (!metric.dense()) return drift(theta, momentum, metric.inverse(), h, reflect);
  // Reflecting one coordinate keeps ½mᵀM⁻¹m only for a diagonal M: the chain refuses the
  // combination at its start (check_metric), so reaching this is a bug.
  if (reflect) throw std::logic_error("a dense metric with reflection at 0");
  const std::span<double> velocity = substep_parts::scratch(theta.size());
  metric.times_inverse(momentum, velocity);
  for (std::size_t j = 0; j < theta.size(); ++j) theta[j] += h * velocity[j];
}

void ornstein_uhlenbeck(std::span<double> momentum, double retention, double temperature, const Metric& metric, Rng& rng) {
  substep_parts::decay_with_noise(momentum, retention, substep_parts::ornstein_uhlenbeck_noise(retention, temperature),
                                  metric, rng);
}

void thermostatted_ornstein_uhlenbeck(std::span<double> momentum, double friction, double diffusion, double temperature,
                                      double t, const Metric& metric, Rng& rng) {
  const auto [retention, noise] = substep_parts::thermostatted_coefficients(friction, diffusion, temperature, t);
  substep_parts::decay_with_noise(momentum, retention, noise, metric, rng);
}

double kinetic_energy(std::span<const double> momentum, const Metric& metric) {
  return metric.dense() ? metric.half_inverse_norm(momentum) : kinetic_energy(momentum, metric.inverse());
}

void euler_momentum(std::span<double> momentum, std::span<const double> gradient, double decay, double h, double noise,
                    const Metric& metric, Rng& rng) {
  if (!metric.dense()) return euler_momentum(momentum, gradient, decay, h, noise, metric.sqrt(), rng);
  const std::span<const double> eta = substep_parts::mass_normal(metric, momentum.size(), rng);
  for (std::size_t j = 0; j < momentum.size(); ++j)
    momentum[j] = (1.0 - decay) * momentum[j] - h * gradient[j] + noise * eta[j];
}

}  // namespace sgmcmc
