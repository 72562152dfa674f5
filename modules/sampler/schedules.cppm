// Step-size schedules: the integrators' ε_k and the SGD steps h_k that find SGLD-CV's centre. Both
// are polynomial decays with different parametrisations: the integrators' is Welling & Teh's
// a(b + k)^(-c); the SGD centre's is written so that its first step is h_0, the step chosen from
// the curvature. Each is kept as presets use it (rewriting one through the other changes the
// rounding, and so every chain that uses it).
module;
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <utility>
#include <fmt/format.h>
export module sgmcmc.schedules;
import sgmcmc.error;
import sgmcmc.settings;

export namespace sgmcmc {

/// ε_k for iteration k = 1, 2, ...: constant; polynomial decay a(b + k)^(-c) (Welling & Teh 2011,
/// after Robbins–Monro); cyclical cosine (Zhang et al. 2020, cSG-MCMC eq. 1):
/// ε_k = (ε_0/2)(cos(π ((k-1) mod L)/L) + 1) with cycle length L.
class StepSchedule {
public:
  /// Reads step_size, schedule, decay_b, decay_c, cycle_length.
  explicit StepSchedule(const Settings& section);
  double at(std::uint64_t iteration) const;
  bool constant() const { return kind_ == Kind::constant; }

private:
  enum class Kind { constant, polynomial, cyclical };
  Kind kind_;
  double step_size_, decay_b_, decay_c_;
  std::uint64_t cycle_length_;
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
  explicit SgdSchedule(const Settings& section)
      : step_size_(section.number("sgd_step_size", 0.0)),
        decay_b_(section.positive_number("sgd_decay_b", 1.0)),
        decay_c_(section.number("sgd_decay_c", 1.0)) {
    if (!(step_size_ >= 0.0) || !std::isfinite(step_size_))
      throw Error(fmt::format("{}: expected a number > 0, or 0 for 1/λ̂ (estimated), found {}",
                              section.describe("sgd_step_size"), step_size_));
    const std::string name = section.text("sgd_schedule", "polynomial");
    if (name == "constant") return;
    if (name != "polynomial")
      throw Error(fmt::format("{}: unknown schedule '{}'; known: polynomial (h_0 (1 + (k-1)/b)^-c, Robbins–Monro), "
                              "constant",
                              section.describe("sgd_schedule"), name));
    polynomial_ = true;
    if (!(decay_c_ > 0.5 && decay_c_ <= 1.0))
      throw Error(fmt::format("{}: expected 0.5 < c <= 1 (Robbins–Monro: Σh_k = ∞, Σh_k² < ∞), found {}",
                              section.describe("sgd_decay_c"), decay_c_));
  }

  /// Whether h_0 is to be estimated (sgd_step_size = 0, the default).
  bool automatic() const { return step_size_ == 0.0; }
  void set_first_step(double h0) { step_size_ = h0; }
  double at(std::uint64_t k) const {
    return polynomial_ ? step_size_ * std::pow(1.0 + static_cast<double>(k - 1) / decay_b_, -decay_c_) : step_size_;
  }
  double first_step() const { return step_size_; }

private:
  double step_size_, decay_b_, decay_c_;
  bool polynomial_ = false;
};

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

StepSchedule::StepSchedule(const Settings& section)
    : step_size_(section.positive_number("step_size", 1e-4)),
      decay_b_(section.positive_number("decay_b", 1.0)),
      decay_c_(section.number("decay_c", 0.55)),
      cycle_length_(static_cast<std::uint64_t>(section.integer_at_least("cycle_length", 1000, 1))) {
  const std::string name = section.text("schedule", "constant");
  const std::pair<const char*, Kind> kinds[] = {
      {"constant", Kind::constant}, {"polynomial", Kind::polynomial}, {"cyclical", Kind::cyclical}};
  for (const auto& [kind_name, kind] : kinds)
    if (name == kind_name) {
      kind_ = kind;
      if (kind_ == Kind::polynomial && !(decay_c_ > 0.0 && decay_c_ <= 1.0))
        throw Error(fmt::format("{}: expected 0 < c <= 1 for a decaying step size, found {}", section.describe("decay_c"),
                                decay_c_));
      return;
    }
  throw Error(fmt::format("{}: unknown schedule '{}'; known: constant, polynomial, cyclical",
                          section.describe("schedule"), name));
}

double StepSchedule::at(std::uint64_t iteration) const {
  switch (kind_) {
    case Kind::polynomial:
      return step_size_ * std::pow(decay_b_ + static_cast<double>(iteration), -decay_c_);
    case Kind::cyclical: {
      const double phase = static_cast<double>((iteration - 1) % cycle_length_) / static_cast<double>(cycle_length_);
      return 0.5 * step_size_ * (std::cos(std::numbers::pi * phase) + 1.0);
    }
    case Kind::constant:
      break;
  }
  return step_size_;
}

}  // namespace sgmcmc
