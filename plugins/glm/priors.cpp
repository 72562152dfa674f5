#include <cmath>
#include <string>
#include <fmt/format.h>

#include "laplace.hpp"
#include "priors.hpp"

namespace glm {

namespace {

using sgmcmc::Rng;

/// N(0, s²): b²/(2s²), derivative b/s².
double normal_term(double b, const PriorConstants& c) { return 0.5 * b * b / (c.scale * c.scale); }
double normal_derivative(double b, const PriorConstants& c) { return b / (c.scale * c.scale); }
double normal_draw(const PriorConstants& c, Rng& rng) { return c.scale * rng.normal(); }

/// Laplace(0, s): |b|/s, derivative sign(b)/s (0 at b = 0: a subgradient; the point has
/// probability zero). A draw is s(E₁ - E₂) with E₁, E₂ ~ Exp(1).
double laplace_term(double b, const PriorConstants& c) { return std::abs(b) / c.scale; }
double laplace_derivative(double b, const PriorConstants& c) { return static_cast<double>((b > 0) - (b < 0)) / c.scale; }
double laplace_draw(const PriorConstants& c, Rng& rng) { return regression::laplace_variate(c.scale, rng); }

/// Student-t with ν degrees of freedom and scale s (Gelman et al. 2008's weakly informative
/// prior): (ν + 1)/2 · log(1 + b²/(ν s²)), derivative (ν + 1) b/(ν s² + b²). A draw is
/// s Z/√(G/ν) with Z ~ N(0, 1), G ~ χ²_ν = Gamma(ν/2, rate 1/2).
double student_term(double b, const PriorConstants& c) {
  const double nu = c.degrees_of_freedom;
  return 0.5 * (nu + 1.0) * std::log1p(b * b / (nu * c.scale * c.scale));
}
double student_derivative(double b, const PriorConstants& c) {
  const double nu = c.degrees_of_freedom;
  return (nu + 1.0) * b / (nu * c.scale * c.scale + b * b);
}
double student_draw(const PriorConstants& c, Rng& rng) {
  const double nu = c.degrees_of_freedom;
  const double z = rng.normal();
  return c.scale * z / std::sqrt(rng.gamma(0.5 * nu, 0.5) / nu);
}

/// Flat, p(b) ∝ 1 on the real line: f_0 = 0, improper (no draw).
double flat_term(double, const PriorConstants&) { return 0.0; }
double flat_derivative(double, const PriorConstants&) { return 0.0; }

const PriorForm table[] = {
    {"normal", false, normal_term, normal_derivative, normal_draw},
    {"laplace", false, laplace_term, laplace_derivative, laplace_draw},
    {"student_t", true, student_term, student_derivative, student_draw},
    {"flat", false, flat_term, flat_derivative, nullptr, false},
};

}  // namespace

const PriorForm& find_prior(const std::string& name, const std::string& key) {
  std::string names;
  for (const PriorForm& form : table) {
    if (name == form.name) return form;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", form.name);
  }
  throw sgmcmc::Error(fmt::format("{}: '{}' is not a prior; expected {}", key, name, names));
}

// b - m with m = 0 is b exactly, so the coefficients' draws are those before the location existed.
double Prior::potential(std::span<const double> beta) const {
  double sum = 0.0;
  for (double b : beta) sum += form_->term(b - constants_.location, constants_);
  return sum;
}

void Prior::add_gradient(std::span<const double> beta, std::span<double> gradient) const {
  for (std::size_t j = 0; j < beta.size(); ++j) gradient[j] += form_->derivative(beta[j] - constants_.location, constants_);
}

std::vector<double> Prior::draw(std::size_t count, Rng& rng) const {
  if (!form_->draw)
    throw sgmcmc::Error(fmt::format("{}: '{}' is an improper prior (p(b) ∝ 1 on the real line has no normalised "
                                    "density), so there is no prior draw to simulate data from "
                                    "(model.simulate_from_prior, sgmcmc sbc); give a proper prior",
                                    key_.empty() ? "model.prior" : key_, form_->name));
  std::vector<double> beta(count);
  for (double& b : beta) b = constants_.location + form_->draw(constants_, rng);
  return beta;
}

double CoefficientPriors::potential(std::span<const double> beta) const {
  if (!intercept) return slopes.potential(beta);
  return intercept->potential(beta.first(intercepts)) + slopes.potential(beta.subspan(intercepts));
}

void CoefficientPriors::add_gradient(std::span<const double> beta, std::span<double> gradient) const {
  if (!intercept) return slopes.add_gradient(beta, gradient);
  intercept->add_gradient(beta.first(intercepts), gradient.first(intercepts));
  slopes.add_gradient(beta.subspan(intercepts), gradient.subspan(intercepts));
}

std::vector<double> CoefficientPriors::draw(std::size_t count, Rng& rng) const {
  if (!intercept) return slopes.draw(count, rng);
  auto beta = intercept->draw(intercepts, rng);
  const auto rest = slopes.draw(count - intercepts, rng);
  beta.insert(beta.end(), rest.begin(), rest.end());
  return beta;
}

}  // namespace glm
