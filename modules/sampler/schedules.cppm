// Step-size schedules: the integrators' ε_k and the SGD steps h_k that find SGLD-CV's centre. Both
// are polynomial decays with different parametrisations: the integrators' is Welling & Teh's
// a(b + k)^(-c); the SGD centre's is written so that its first step is h_0, the step chosen from
// the curvature. Each is kept as presets use it (rewriting one through the other changes the
// rounding, and so every chain that uses it).
module;
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <string_view>
#include <utility>
#include <fmt/format.h>
export module sgmcmc.schedules;
import sgmcmc.error;
import sgmcmc.settings;
export import sgmcmc.fields;

export namespace sgmcmc {

enum class ScheduleKind { constant, polynomial, cyclical };

/// The step-size keys every integrator reads. The member initialisers are the keys' defaults;
/// fields() their constraints and docs.
struct ScheduleParameters {
  double step_size = 1e-4;                      // ε_0: the first, and largest, step
  ScheduleKind schedule = ScheduleKind::constant;
  double decay_b = 1.0;                         // b of a(b + k)^(-c) (polynomial)
  double decay_c = 0.55;                        // c (polynomial)
  std::uint64_t cycle_length = 1000;            // L (cyclical)
  static const FieldTable<ScheduleParameters>& fields();
  /// Reads the keys in the order of fields() (the first bad key is the one reported).
  static ScheduleParameters from_settings(SectionReader section) { return read_fields(fields(), section); }
};

/// ε_k for iteration k = 1, 2, ...: constant; polynomial decay a(b + k)^(-c) (Welling & Teh 2011,
/// after Robbins–Monro); cyclical cosine (Zhang et al. 2020, cSG-MCMC eq. 1):
/// ε_k = (ε_0/2)(cos(π ((k-1) mod L)/L) + 1) with cycle length L.
class StepSchedule {
public:
  /// Refuses what ScheduleParameters::fields() refuses.
  explicit StepSchedule(const ScheduleParameters& parameters);
  double at(std::uint64_t iteration) const;
  bool constant() const { return parameters_.schedule == ScheduleKind::constant; }

private:
  ScheduleParameters parameters_;
};

/// Which recorded iterations are kept as draws. cSG-MCMC (Zhang et al. 2020, Algorithm 1) splits
/// each cycle of the cyclical schedule into an exploration stage, where the large steps move
/// between modes, and a sampling stage at the cycle's end, where the step has shrunk: only the
/// sampling stage's draws are kept (run.collect = "cycle_end"; its share of the cycle is
/// run.collect_fraction). Here both stages take the integrator's noisy step: Zhang et al.'s
/// optional noise-free (SGD) exploration is not done.
struct Collection {
  std::uint64_t cycle_length = 0;         // L; 0: every recorded iteration is kept
  std::uint64_t sampling_iterations = 0;  // the last this many iterations of each cycle (1 to L)
  /// Iteration k (1, 2, ... counted from the warmup's first, as the step schedule counts).
  bool keeps(std::uint64_t iteration) const {
    return cycle_length == 0 || (iteration - 1) % cycle_length >= cycle_length - sampling_iterations;
  }
  // Built from run.collect and run.collect_fraction (sgmcmc.run_section).
};

enum class SgdScheduleKind { polynomial, constant };

/// The keys of SGLD-CV's centring steps (estimator `cv`, SGD or SGLD), read by CvParameters' field table.
struct SgdScheduleParameters {
  double step_size = 0.0;  // h_0 >= 0; 0: 1/λ̂, estimated from the curvature at the start point
  SgdScheduleKind schedule = SgdScheduleKind::polynomial;
  double decay_b = 1.0;  // b > 0
  double decay_c = 1.0;  // 0.5 < c <= 1 (polynomial)
};

/// SGD step sizes h_k, k = 1, 2, ...: constant h_0, or the Robbins–Monro family
///   h_k = h_0 (1 + (k-1)/b)^(-c),  0.5 < c <= 1,  so that Σ h_k = ∞ and Σ h_k² < ∞
/// (Robbins & Monro 1951; Baker et al. 2019, §3.1). It is a(b' + k)^(-c), the integrators' `polynomial`
/// family, written so that sgd_step_size is the first step h_0. The default b = c = 1 gives
/// h_k = h_0/k, the 1/(λk) steps of the SGD bound Baker et al. (2019, §3.4) uses (Nemirovski et al. 2009): on
/// a quadratic with curvature λ = 1/h_0 in every direction, θ_k - θ* = (1 - 1/k)(θ_{k-1} - θ*) -
/// ζ_k/(λk) gives θ_K - θ* = -(1/(λK)) Σ_k ζ_k, the average of the K batches' noise, so one pass
/// (K = N/n) leaves θ̂ about one posterior standard deviation from the mode.
class SgdSchedule {
public:
  /// Refuses a negative or non-finite h_0 and b <= 0 (CvParameters' field table checks c).
  explicit SgdSchedule(const SgdScheduleParameters& parameters);

  /// Whether h_0 is to be estimated (sgd_step_size = 0, the default).
  bool automatic() const { return step_size_ == 0.0; }
  void set_first_step(double h0) { step_size_ = h0; }
  double at(std::uint64_t k) const {
    return polynomial_ ? step_size_ * std::pow(1.0 + static_cast<double>(k - 1) / decay_b_, -decay_c_) : step_size_;
  }
  double first_step() const { return step_size_; }

private:
  double step_size_, decay_b_, decay_c_;
  bool polynomial_;
};

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

const FieldTable<ScheduleParameters>& ScheduleParameters::fields() {
  using P = ScheduleParameters;
  static const FieldTable<P> table = [] {
    // c is checked only where it is used: a polynomial schedule, read before it.
    Field<P> decay_c = number_field("decay_c", &P::decay_c, "c of the polynomial schedule");
    decay_c.shown.constraint = "in (0, 1]";
    decay_c.problem = [](const P& p) {
      return p.schedule == ScheduleKind::polynomial && !(p.decay_c > 0.0 && p.decay_c <= 1.0)
                 ? fmt::format("expected 0 < c <= 1 for a decaying step size, found {}", p.decay_c)
                 : std::string();
    };
    return FieldTable<P>{
        number_field("step_size", &P::step_size, "the first, and largest, step: ε for sgld, mala and psgld, h for the others",
               positive()),
        choice_field("schedule", &P::schedule,
               {{"constant", ScheduleKind::constant}, {"polynomial", ScheduleKind::polynomial},
                {"cyclical", ScheduleKind::cyclical}},
               "polynomial: step_size·(decay_b + k)^(-decay_c) (Welling & Teh 2011); cyclical: a cosine of period "
               "cycle_length (Zhang et al. 2020)"),
        number_field("decay_b", &P::decay_b, "b of the polynomial schedule", positive()), decay_c,
        integer_field("cycle_length", &P::cycle_length, "the cyclical schedule's period, in iterations", at_least(1))};
  }();
  return table;
}

StepSchedule::StepSchedule(const ScheduleParameters& parameters) : parameters_(parameters) {
  check_fields(ScheduleParameters::fields(), parameters, "step schedule");
}

double StepSchedule::at(std::uint64_t iteration) const {
  const auto& [step_size, kind, decay_b, decay_c, cycle_length] = parameters_;
  switch (kind) {
    case ScheduleKind::polynomial:
      return step_size * std::pow(decay_b + static_cast<double>(iteration), -decay_c);
    case ScheduleKind::cyclical: {
      const double phase = static_cast<double>((iteration - 1) % cycle_length) / static_cast<double>(cycle_length);
      return 0.5 * step_size * (std::cos(std::numbers::pi * phase) + 1.0);
    }
    case ScheduleKind::constant:
      break;
  }
  return step_size;
}

SgdSchedule::SgdSchedule(const SgdScheduleParameters& parameters)
    : step_size_(parameters.step_size), decay_b_(parameters.decay_b), decay_c_(parameters.decay_c),
      polynomial_(parameters.schedule == SgdScheduleKind::polynomial) {
  require_parameter(step_size_ >= 0.0 && std::isfinite(step_size_), "SGD schedule", "a finite step_size >= 0", step_size_);
  require_parameter(decay_b_ > 0.0, "SGD schedule", "decay_b > 0", decay_b_);
}

}  // namespace sgmcmc
