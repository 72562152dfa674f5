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
