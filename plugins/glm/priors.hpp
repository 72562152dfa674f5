// The table of what `model.prior` may be: an independent prior on every coefficient (the
// intercept included), each a scale family, f_0(β) = Σ_j term(β_j) up to a constant.
#pragma once
#include <span>
#include <string>
#include <vector>

import sgmcmc.sdk;

namespace glm {

struct PriorConstants {
  double scale = 1.0;
  double degrees_of_freedom = 3.0;  // student_t only
};

struct PriorForm {
  const char* name;
  bool has_degrees_of_freedom;
  double (*term)(double b, const PriorConstants& c);        // -log p(b) up to a constant
  double (*derivative)(double b, const PriorConstants& c);  // its derivative
  double (*draw)(const PriorConstants& c, sgmcmc::Rng& rng);
};

/// The entry named `name`; throws naming `key` and the names it may be.
const PriorForm& find_prior(const std::string& name, const std::string& key);

class Prior {
public:
  Prior(const PriorForm& form, PriorConstants constants) : form_(&form), constants_(constants) {}
  double potential(std::span<const double> beta) const;
  void add_gradient(std::span<const double> beta, std::span<double> gradient) const;
  std::vector<double> draw(std::size_t count, sgmcmc::Rng& rng) const;
  const PriorForm& form() const { return *form_; }

private:
  const PriorForm* form_;
  PriorConstants constants_;
};

}  // namespace glm
