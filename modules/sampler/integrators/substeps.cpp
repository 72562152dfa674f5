// The implementation of the partition substeps.cppm: the sub-flows A, B, O, the thermostat's O and
// the Euler momentum step. Nothing is lost to inlining by keeping them out of the interface: clang 19
// compiles an importer without the bodies of a module's non-inline functions (a call to kick() or to
// Metric::dense() from another unit was a call before this file existed too).
module;
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>
module sgmcmc.integrators;
import sgmcmc.random;

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
