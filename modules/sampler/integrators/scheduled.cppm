// What every integrator shares: the base class ScheduledIntegrator (schedule, temperature, mass;
// the warmup's adaptation of the mass and the step is the chain's, sgmcmc.adaptation, which sets
// them through the base's set_step_size and set_adapted_mass), the readers of the keys every
// integrator reads, and the reader type of the catalogue (integrators.cppm).
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

/// An integrator whose keys are read and checked, ready to build (once per chain).
using IntegratorRecipe = std::function<std::unique_ptr<Integrator>()>;
using IntegratorReader = std::function<IntegratorRecipe(SectionReader)>;

// Plain parameters, one struct per catalogue entry. Its member initialisers are the keys' defaults,
// and its `fields()` table (sgmcmc.fields) names each key, its constraint and its doc, composed
// from the shared tables below (schedule, temperature, mass, step adaptation) and its own keys.
// `from_settings` reads the keys in the table's order (the first bad key is the one reported),
// with errors naming where a key was set; make_integrator(parameters) checks a struct built in
// code against the same table (check_fields), so each value has one check.

/// scale_step_with_n, which make_integrator(section, items) reads before the integrator's own keys:
/// true reads step_size as the step for one data item (modules/README.md, "Step sizes across data sizes").
struct StepScaling {
  bool scale_step_with_n = false;
  static const FieldTable<StepScaling>& fields();
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

/// What every integrator reads: the schedule, the temperature and the mass M (diagonal or dense),
/// which the chain's Adaptation may set during the warmup (adapt_mass) and which is then kept.
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
  /// adapt_mass (with its windows and the metric's form) and adapt_step_size, as configured.
  AdaptationSettings adaptation() const override;
  /// From now on every step is `step`, whatever the (constant) schedule says.
  void set_step_size(double step) override;
  /// M becomes the window's estimate; the momentum m ~ N(0, T M_old) becomes m ~ N(0, T M_new)
  /// (diagonal: m_j × sqrt(M_new,j / M_old,j)).
  void set_adapted_mass(std::vector<double> adapted, ChainState& state) override;
  void set_adapted_precision(std::vector<double> mass, ChainState& state) override;
  std::vector<double> adapted_mass() const override;
  double step_size() const override;
  double temperature() const override;
  bool constant_step_size() const override;
  /// A given mass or step is configuration, not state: only a mass that adapts or was computed is
  /// saved (so a checkpoint without either reads as before there was any). A step set by the
  /// adaptation is the adaptation's to save and to set again.
  void save_state(StateWriter& out) const override;
  void restore_state(StateReader& in) override;

protected:
  /// The step of this iteration: the schedule's, or the one set by set_step_size.
  double advance(const ChainState& state);
  StepSchedule schedule_;
  double temperature_;
  double current_ = 0.0;
  Metric mass_;  // M: sgld's and mala's preconditioner M⁻¹, the others' kinetic energy ½mᵀM⁻¹m
  AdaptationSettings adaptation_;  // what the chain's Adaptation is to adapt (configuration only)
  std::optional<double> set_step_;  // set_step_size's step, which replaces the schedule's
};

/// What every integrator reads first, in this order: the schedule and the temperature.
template <class P>
FieldTable<P> schedule_fields() {
  return concat<P>({nested<P>(&P::schedule, ScheduleParameters::fields()),
                    {number_field<P>("temperature", &P::temperature,
                                     "T, the scale of the noise: 1 samples the posterior, T < 1 a cold posterior π^(1/T)",
                                     positive())}});
}

/// adapt_mass's windows: refused when set without adapt_mass, where they would change nothing.
template <class P>
FieldTable<P> adaptation_windows_fields() {
  FieldTable<P> windows = nested<P>(&P::mass, nested<Mass>(&Mass::windows, adaptation_window_fields()));
  for (auto& field : windows)
    field.read = [read = field.read, key = field.shown.key](SectionReader section, P& p) {
      if (!p.adapt_mass && section.contains(key))
        throw Error(fmt::format("{}: {} sets a window of adapt_mass's adaptation, and adapt_mass is false",
                                section.describe(key), key));
      read(section, p);
    };
  return windows;
}

/// The keys of an integrator with a mass M: the schedule's and the temperature, then the mass's
/// (metric, mass, mass_ridge), adapt_mass and its windows.
template <class P>
FieldTable<P> mass_integrator_fields() {
  return concat<P>({schedule_fields<P>(), nested<P>(&P::mass, mass_fields()),
                    {flag_field<P>("adapt_mass", &P::adapt_mass,
                                   "learn M during the warmup, in Stan's windows, then keep it (with an MH test from the draws' "
                                   "covariance, without one from the gradients' second moment)")},
                    adaptation_windows_fields<P>()});
}

/// adapt_step_size and target_acceptance of the integrators an MH test can follow. The refusals
/// that need more than this section (no MH corrector, no warmup) are the assembly's and the chain's.
template <class P>
FieldTable<P> step_adaptation_fields() {
  Field<P> adapt = nested<P>(&P::step_adaptation, FieldTable<StepAdaptation>{flag_field(
                                                       "adapt_step_size", &StepAdaptation::adapt,
                                                       "with corrector mh: dual averaging of step_size to "
                                                       "target_acceptance during the warmup, then frozen (Hoffman & "
                                                       "Gelman 2014, Alg. 5)")})
                       .front();
  adapt.shown.constraint = "schedule = constant";
  adapt.problem = [](const P& p) -> std::string {
    if (!p.step_adaptation.adapt || p.schedule.schedule == ScheduleKind::constant) return "";
    return "expected a constant schedule with adapt_step_size = true (integrator.schedule = \"constant\"): the "
           "adaptation chooses the one step the run then keeps, and a schedule would change it again";
  };
  const Constraint open_unit_interval{"in (0, 1)",
                                      "0 < target_acceptance < 1 (the mean MH acceptance probability the step size is "
                                      "adapted to)",
                                      [](double value) { return value > 0.0 && value < 1.0; }};
  return concat<P>({{adapt},
                    nested<P>(&P::step_adaptation,
                              FieldTable<StepAdaptation>{number_field(
                                  "target_acceptance", &StepAdaptation::target_acceptance,
                                  "δ, the mean MH acceptance probability adapt_step_size aims at", open_unit_interval)})});
}

/// A catalogue entry whose keys are those of `Parameters::fields()` and scale_step_with_n, which
/// make_integrator reads first: its recipe is `make_integrator(Parameters::from_settings(section))`.
template <class Parameters>
CatalogueEntry<IntegratorReader> integrator_entry(std::string name, std::string description,
                                                   std::string mh_refusal = {}) {
  std::vector<KeyDoc> documented = key_docs(Parameters::fields());
  for (const auto& key : key_docs(StepScaling::fields())) documented.insert(documented.begin() + 1, key);
  return {std::move(name), std::move(description), keys_of(documented),
          [](SectionReader section) -> IntegratorRecipe {
            return [parameters = Parameters::from_settings(section)] { return make_integrator(parameters); };
          },
          std::move(mh_refusal), std::move(documented)};
}

}  // namespace sgmcmc::integrator_parts
