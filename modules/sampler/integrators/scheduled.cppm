// What every integrator shares: the base class ScheduledIntegrator (schedule, temperature, mass,
// and the adaptation of the mass and of the step during the warmup), the readers of the keys every
// integrator reads, and the factory type of the catalogue (integrators.cppm).
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
export module sgmcmc.integrators:scheduled;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :metric;
import :substeps;

export namespace sgmcmc {

using IntegratorFactory = std::function<std::unique_ptr<Integrator>(const Settings&)>;

// Plain parameters, one struct per catalogue entry, with the defaults of the Settings path. Each
// `from_settings` reads its entry's keys (schedule, temperature, mass, then its own; the first bad
// key is the one reported), with errors naming where a key was set; make_integrator(parameters)
// then builds the integrator, refusing only values no step can use (a non-positive step size,
// temperature, mass or friction, no steps), not the advice from_settings gives (sghmc's γh < 1,
// the range of a decay's c).

/// Step-size adaptation by dual averaging (Hoffman & Gelman 2014, Alg. 5, after Nesterov 2009) to
/// a target acceptance of the MH test, during the warmup; the step is then frozen at the averaged
/// iterate. Only for the integrators an MH test can follow (mala, obabo, baoab, ubu, hmc, leapfrog);
/// the assembly refuses it without an MH corrector, the chain without a warmup.
struct StepAdaptation {
  bool adapt = false;              // integrator.adapt_step_size
  double target_acceptance = 0.8;  // δ, 0 < δ < 1: integrator.target_acceptance
};

}  // namespace sgmcmc

namespace sgmcmc::integrator_parts {

// Not exported: the other partitions of sgmcmc.integrators use them. They live in a named
// namespace, not an anonymous one: clang 19 makes internal-linkage names of a module unit clash
// with same-named helpers of units that import it (https://github.com/llvm/llvm-project/issues/90259).

/// A new estimate at θ, kept as the gradient there.
void new_gradient(ChainState& state, Estimator& estimator, ChainContext& context);

/// The gradient kept at θ, or a new one.
void ensure_gradient(ChainState& state, Estimator& estimator, ChainContext& context);

/// Nesterov's dual averaging (Nesterov 2009) of the log step size, as Hoffman & Gelman (2014, §3.2.1,
/// Algorithm 5) adapt NUTS's step and the Stan Reference Manual's step-size adaptation states it
/// (the recursion read from both, no code taken). With α_m the acceptance probability of the m-th
/// MH test of the warmup, m = 1, 2, ...:
///   H̄_m = (1 - 1/(m + t₀)) H̄_{m-1} + (δ - α_m)/(m + t₀),    log h_m = μ - (sqrt(m)/γ) H̄_m,
///   log h̄_m = m^{-κ} log h_m + (1 - m^{-κ}) log h̄_{m-1},
/// with H̄_0 = 0, μ = log(10 h₀) (h₀ the step it starts from), γ = 0.05, t₀ = 10, κ = 0.75 (their
/// and Stan's defaults). h_m is the step of the next block; at the end of the warmup the step is
/// frozen at h̄. `restart` starts again from the current step (Stan does so after each update of the
/// metric). h is whatever integrator.step_size means (mala's ε = h², the others' h).
class DualAveraging {
public:
  static constexpr double gamma = 0.05, t0 = 10.0, kappa = 0.75;
  void restart(double step);
  /// One MH test's acceptance probability α (clipped to [0, 1]); returns the next step h_m.
  double learn(double accept_stat, double target);
  /// h̄ after at least one test; `current` before any (just restarted).
  double averaged(double current) const;
  void save(StateWriter& out) const;
  void restore(StateReader& in);

private:
  double mu_ = 0.0, h_bar_ = 0.0, log_averaged_ = 0.0;  // μ, H̄_m, log h̄_m
  std::uint64_t count_ = 0;                            // m
};

/// What every integrator reads: the schedule, the temperature and the diagonal mass M, which
/// `adapt_mass` adapts during the warmup (MassAdaptation) and then keeps.
class ScheduledIntegrator : public Integrator {
public:
  template <class Parameters>
  explicit ScheduledIntegrator(const Parameters& parameters)
      : ScheduledIntegrator(parameters.schedule, parameters.temperature, parameters.mass, parameters.adapt_mass,
                            step_adaptation_of(parameters)) {}
  /// Without `mass` and `adapt_mass` (psgld, whose preconditioner is its own): M = 1, not adapted.
  ScheduledIntegrator(const ScheduleParameters& schedule, double temperature, const Mass& mass = {},
                      bool adapt_mass = false, StepAdaptation step_adaptation = {});
  template <class Parameters>
  static StepAdaptation step_adaptation_of(const Parameters& parameters) {
    if constexpr (requires { parameters.step_adaptation; }) return parameters.step_adaptation;
    else return {};
  }
  void initialise(ChainState& state, std::size_t dimension, Rng& rng) override;
  /// mass = "fisher": the empirical Fisher mass at the chain's point once the estimator has prepared
  /// (cv's centre), the momentum drawn for M = 1 carried to N(0, T M) as a window's new mass is.
  void prepare(ChainState& state, ChainContext& context) override;
  /// During the warmup, with adapt_mass: a new mass at the end of each slow window, the momentum
  /// rescaled with it (m ~ N(0, T M_old) becomes m ~ N(0, T M_new): m_j × sqrt(M_new,j / M_old,j)).
  /// With adapt_step_size, during the warmup: first one dual-averaging update from the block's
  /// acceptance probability (the block's MH test), then the mass's (when a window closes, the dual
  /// averaging restarts from the current step, as Stan's does after a metric update); the block
  /// that ends the warmup freezes the step at the averaged h̄, so the sampling phase is a fixed kernel.
  void after_block(ChainState& state, std::uint64_t warmup, const Decision& decision) override;
  std::vector<double> adapted_mass() const override;
  bool adapts_step_size() const override;
  std::optional<double> adapted_step_size() const override;
  double step_size() const override;
  double temperature() const override;
  bool constant_step_size() const override;
  /// A given mass or step is configuration, not state: only what adapts or was computed is saved
  /// (so a checkpoint without either reads as before there was any).
  void save_state(StateWriter& out) const override;
  void restore_state(StateReader& in) override;

protected:
  /// The step of this iteration: the schedule's, or the adapted one (whose schedule is constant).
  double advance(const ChainState& state);
  StepSchedule schedule_;
  double temperature_;
  double current_ = 0.0;
  Metric mass_;  // M: sgld's and mala's preconditioner M⁻¹, the others' kinetic energy ½mᵀM⁻¹m
  bool adapt_mass_;
  MassAdaptation adaptation_;
  StepAdaptation step_adaptation_;
  double adapted_step_;  // with adapt_step_size: the step in use (h_m during the warmup, h̄ after it)
  bool step_frozen_ = false;
  DualAveraging dual_averaging_;
};

/// The schedule's keys (step_size, schedule, ..., temperature) and `keys`: those of an integrator
/// without a mass (psgld).
std::vector<std::string> with_schedule_keys(std::vector<std::string> keys);

/// The schedule's keys, the mass's (mass, metric, mass_ridge, adapt_mass and its windows) and `keys`:
/// those of an integrator with a mass.
std::vector<std::string> with_mass_keys(std::vector<std::string> keys);

/// adapt_mass's windows (CmdStan's adapt init_buffer, window and term_buffer): read only with adapt_mass,
/// and refused without it, where they would change nothing.
AdaptationWindows read_adaptation_windows(const Settings& section, bool adapt_mass);

/// What every integrator reads first, in this order: the schedule, the temperature and the mass
/// (one number, an array of d: one per coordinate, or of d² with metric = "dense"; or "fisher",
/// computed at the start, with its `mass_ridge`).
template <class Parameters>
Parameters read_scheduled(const Settings& section) {
  Parameters parameters;
  parameters.schedule = ScheduleParameters::from_settings(section);
  parameters.temperature = section.positive_number("temperature", 1.0);
  const std::string metric = section.text("metric", "diagonal");
  if (metric != "diagonal" && metric != "dense")
    throw Error(fmt::format("{}: expected \"diagonal\" (a mass per coordinate) or \"dense\" (a full mass matrix), "
                            "found \"{}\"",
                            section.describe("metric"), metric));
  const bool fisher = section.contains("mass") && std::holds_alternative<std::string>(section.entries().at("mass").value);
  if (fisher && section.text("mass", "") != "fisher")
    throw Error(fmt::format("{}: expected a number, an array of numbers or \"fisher\" (the empirical Fisher information "
                            "at the chain's start), found \"{}\"",
                            section.describe("mass"), section.text("mass", "")));
  if (!fisher && section.contains("mass_ridge"))
    throw Error(fmt::format("{}: mass_ridge is the ridge of mass = \"fisher\", and the mass here is given",
                            section.describe("mass_ridge")));
  // A dense mass matrix has negative entries off its diagonal: the metric checks it when d is known.
  parameters.mass = fisher ? Mass(1.0)  // where the chain starts; prepare() computes the mass
                    : Mass(metric == "dense" ? section.number_or_numbers("mass", 1.0)
                                             : section.positive_number_or_numbers("mass", 1.0));
  parameters.mass.dense = metric == "dense";
  parameters.mass.fisher = fisher;
  parameters.mass.ridge = section.positive_number("mass_ridge", 1.0);
  parameters.adapt_mass = section.flag("adapt_mass", false);
  parameters.mass.windows = read_adaptation_windows(section, parameters.adapt_mass);
  return parameters;
}


/// `adapt_step_size` and `target_acceptance` of the integrators an MH test can follow. The
/// refusals that need more than this section (no MH corrector, no warmup) are the assembly's and
/// the chain's.
StepAdaptation read_step_adaptation(const Settings& section, const ScheduleParameters& schedule);

template <class Parameters>
IntegratorFactory factory() {
  return [](const Settings& section) { return make_integrator(Parameters::from_settings(section)); };
}


/// The catalogue's words for adapt_step_size, shared by the integrators an MH test can follow.
inline std::string adapt_step_doc() {
  return "with corrector mh: adapt_step_size (false: dual averaging of step_size to target_acceptance (0.8) during the "
         "warmup, then frozen; Hoffman & Gelman 2014, Alg. 5)";
}

}  // namespace sgmcmc::integrator_parts
