// What sgnht and badodab share: their keys and the adaptive Langevin thermostat ξ
// (Ding et al. 2014; Leimkuhler & Shang 2016).
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.integrators:thermostat;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;

export namespace sgmcmc {

/// sgnht (Ding et al. 2014, Alg. 2): step_size = h; friction is the thermostat ξ.
struct SgnhtParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  double diffusion = 1.0;                                 // A, the injected noise sqrt(2AhT)
  std::optional<double> thermostat_start = std::nullopt;  // ξ₀; unset: A
  static const FieldTable<SgnhtParameters>& fields();
  static SgnhtParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

/// What sgnht and badodab share: the adaptive Langevin (stochastic gradient Nosé–Hoover)
/// thermostat of Ding et al. (2014) and Leimkuhler & Shang (2016), with a mass M and temperature T,
///   dθ = M⁻¹p dt,  dp = -∇U dt - ξ p dt + sqrt(2AT) M^{1/2} dW,  dξ = (pᵀM⁻¹p/d - T) dt,
/// a scalar ξ in place of a fixed friction, rising while the kinetic temperature pᵀM⁻¹p/d is
/// above T, so the unknown minibatch noise is dissipated without being estimated (the thermostat's
/// mass μ = d, as in Ding et al.'s Alg. 2). Its continuous dynamics leave
/// exp(-U/T) × N(p; 0, TM) × a Gaussian in ξ invariant (Ding et al. 2014, §3). ξ starts at
/// `thermostat_start` (default A) and is chain state, carried by checkpoints.
class ThermostatIntegrator : public MomentumIntegrator {
public:
  template <class Parameters>
  explicit ThermostatIntegrator(const Parameters& parameters)
      : MomentumIntegrator(parameters), diffusion_(parameters.diffusion),
        thermostat_(parameters.thermostat_start.value_or(parameters.diffusion)) {}
  void save_state(StateWriter& out) const override;
  void restore_state(StateReader& in) override;

protected:
  /// D over t: ξ ← ξ + t (pᵀM⁻¹p/d - T), pᵀM⁻¹p being twice the kinetic energy (a reflection at 0
  /// negates p_j and leaves it alone).
  void adjust_thermostat(const ChainState& state, double t);
  double diffusion_;   // A
  double thermostat_;  // ξ
};

/// sgnht's and badodab's keys: the schedule, temperature and mass, then `diffusion` and `thermostat_start`.
template <class P>
FieldTable<P> thermostat_fields() {
  // A = 0 leaves only the minibatch noise: with exact gradients, deterministic Nosé–Hoover dynamics,
  // which are not ergodic.
  return concat<P>({mass_integrator_fields<P>(),
                    {number_field<P>("diffusion", &P::diffusion, "A, the injected noise sqrt(2AhT)", positive()),
                     number_field<P>(
                         "thermostat_start", &P::thermostat_start, [](const P& p) { return p.diffusion; }, "diffusion",
                         "ξ₀, where the thermostat starts")}});
}

}  // namespace sgmcmc::integrator_parts
