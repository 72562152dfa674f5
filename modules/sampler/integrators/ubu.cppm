// ubu: the UBU splitting of underdamped Langevin dynamics (Sanz-Serna & Zygalakis 2021): one kick
// over h between two exact flows of the force-free dynamics over h/2.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
export module sgmcmc.integrators:ubu;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;
import :scheduled;
import :momentum;

export namespace sgmcmc {

/// ubu: step_size = h; each U is the exact flow over h/2 of the force-free dynamics with friction γ.
struct UbuParameters {
  ScheduleParameters schedule = {};
  double temperature = 1.0;
  Mass mass = {};  // the kinetic energy's ½mᵀM⁻¹m
  bool adapt_mass = false;
  std::optional<double> friction = std::nullopt;  // γ > 0; unset: 0.1/h₀ for the first step h₀
  StepAdaptation step_adaptation = {};             // adapt_step_size, target_acceptance (mh only)
  static const FieldTable<UbuParameters>& fields();
  static UbuParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

std::unique_ptr<Integrator> make_integrator(const UbuParameters& parameters);

/// The exact flow over a time t of the force-free underdamped Langevin dynamics with unit mass,
///   dθ = m dt,  dm = -γ m dt + sqrt(2γT) dW,
/// written with two independent standard normals ξ₁, ξ₂:
///   m(t) = retention m + momentum_noise ξ₁,
///   θ(t) = θ + drift m + joint_noise ξ₁ + position_noise ξ₂.
/// With η = e^{-γt}: retention η, drift (1 - η)/γ, Var m-noise T(1 - η²), Cov(θ-noise, m-noise)
/// T(1 - η)²/γ, Var θ-noise T(2γt - 3 + 4η - η²)/γ² (the integrated Ornstein–Uhlenbeck process;
/// derivation in modules/README.md, "UBU").
struct FreeFlow {
  double retention, drift, momentum_noise, joint_noise, position_noise;
};
FreeFlow free_flow(double friction, double t, double temperature);

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// The catalogue's entry (integrators.cppm). The class and the bodies are in ubu.cpp, so that
// editing them recompiles that file alone.
CatalogueEntry<IntegratorReader> ubu_entry();

}  // namespace sgmcmc::integrator_parts
