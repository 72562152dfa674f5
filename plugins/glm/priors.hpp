// The table of what `model.prior` may be: an independent prior on every coefficient (the
// intercept included unless model.intercept_prior gives it its own), each a location-scale
// family, f_0(β) = Σ_j term(β_j - m) up to a constant (m = 0 but for the intercept's prior).
// `flat` (f_0 = 0) is improper: it has no draw, so simulating from the prior refuses it.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

import sgmcmc.sdk;

namespace glm {

struct PriorConstants {
  double scale = 1.0;
  double degrees_of_freedom = 3.0;  // student_t only
  double location = 0.0;            // m: the intercept's prior only
};

struct PriorForm {
  const char* name;
  bool has_degrees_of_freedom;
  double (*term)(double b, const PriorConstants& c);        // -log p(b) up to a constant
  double (*derivative)(double b, const PriorConstants& c);  // its derivative
  double (*draw)(const PriorConstants& c, sgmcmc::Rng& rng);  // centred at 0; nullptr: improper (flat)
  bool has_scale = true;                                       // flat has none
};

/// The entry named `name`; throws naming `key` and the names it may be.
const PriorForm& find_prior(const std::string& name, const std::string& key);

class Prior {
public:
  /// `key` names the setting that chose the form (model.prior, model.intercept_prior), for errors.
  Prior(const PriorForm& form, PriorConstants constants, std::string key = {})
      : form_(&form), constants_(constants), key_(std::move(key)) {}
  double potential(std::span<const double> beta) const;
  void add_gradient(std::span<const double> beta, std::span<double> gradient) const;
  /// `count` independent draws; an improper prior (flat) refuses naming its key.
  std::vector<double> draw(std::size_t count, sgmcmc::Rng& rng) const;
  const PriorForm& form() const { return *form_; }

private:
  const PriorForm* form_;
  PriorConstants constants_;
  std::string key_;
};

/// The coefficients' prior with the intercept's own where model.intercept_prior gives one
/// (brms's default: a Student-t on the intercept of the centred design, another prior on the
/// slopes): the first `intercepts` coordinates of β under `intercept`, the rest under `slopes`.
struct CoefficientPriors {
  Prior slopes;
  std::optional<Prior> intercept;
  std::size_t intercepts = 0;  // 1 with model.intercept_prior (the GLM's first column), else 0

  double potential(std::span<const double> beta) const;
  void add_gradient(std::span<const double> beta, std::span<double> gradient) const;
  std::vector<double> draw(std::size_t count, sgmcmc::Rng& rng) const;
};

}  // namespace glm
