#include <cmath>
#include <numbers>
#include <string>
#include <fmt/format.h>

#include "families.hpp"

namespace glm {

namespace {

using regression::LabelCoding;
using sgmcmc::Rng;

bool any_real(double) { return true; }
bool count(double y) { return y >= 0.0 && y == std::floor(y); }

/// Poisson(λ) by inversion of its distribution function, in pieces of mean at most 30 so that
/// exp(-λ) never underflows (a sum of independent Poissons is Poisson with the summed mean).
double poisson_draw(double mean, Rng& rng) {
  double total = 0.0;
  while (mean > 0.0) {
    const double piece = std::min(mean, 30.0);
    mean -= piece;
    double k = 0.0, probability = std::exp(-piece), cumulative = probability;
    const double u = rng.uniform();
    while (u > cumulative && probability > 0.0) {
      k += 1.0;
      probability *= piece / k;
      cumulative += probability;
    }
    total += k;
  }
  return total;
}

double draw_logit(double z, const LikelihoodConstants&, Rng& rng) { return rng.uniform() < 1.0 / (1.0 + std::exp(-z)) ? 1.0 : -1.0; }
double draw_probit(double z, const LikelihoodConstants&, Rng& rng) {
  return rng.uniform() < 0.5 * std::erfc(-z / std::numbers::sqrt2) ? 1.0 : -1.0;
}
double draw_poisson(double z, const LikelihoodConstants&, Rng& rng) { return poisson_draw(std::exp(z), rng); }
double draw_gaussian(double z, const LikelihoodConstants& c, Rng& rng) { return z + c.noise_sd * rng.normal(); }
/// NB(μ, r) is Poisson(λ) with λ ~ Gamma(shape r, rate r/μ).
double draw_negative_binomial(double z, const LikelihoodConstants& c, Rng& rng) {
  return poisson_draw(rng.gamma(c.dispersion, c.dispersion / std::exp(z)), rng);
}

// Curvatures ∂²f/∂z²: logit σ(1-σ) ≤ 1/4; probit's lies in (0, 1) (Sampford 1953, the variance of
// a truncated normal); gaussian 1/σ² exactly; negative binomial (y + r) r μ/(r + μ)² ≤ (y + r)/4.
double quarter(double, const LikelihoodConstants&) { return 0.25; }
double one(double, const LikelihoodConstants&) { return 1.0; }
double inverse_variance(double, const LikelihoodConstants& c) { return 1.0 / (c.noise_sd * c.noise_sd); }
double negative_binomial_curvature(double y, const LikelihoodConstants& c) { return 0.25 * (y + c.dispersion); }

// Predictions: p = σ(z) or Φ(z); poisson mean = variance = e^z; gaussian z and σ²; negative
// binomial μ = e^z and μ + μ²/r.
void predict_logit(double z, const LikelihoodConstants&, double* out) { out[0] = 1.0 / (1.0 + std::exp(-z)); }
void predict_probit(double z, const LikelihoodConstants&, double* out) { out[0] = 0.5 * std::erfc(-z / std::numbers::sqrt2); }
void predict_poisson(double z, const LikelihoodConstants&, double* out) { out[0] = out[1] = std::exp(z); }
void predict_gaussian(double z, const LikelihoodConstants& c, double* out) {
  out[0] = z;
  out[1] = c.noise_sd * c.noise_sd;
}
void predict_negative_binomial(double z, const LikelihoodConstants& c, double* out) {
  const double mean = std::exp(z);
  out[0] = mean;
  out[1] = mean + mean * mean / c.dispersion;
}

const Family table[] = {
    {"bernoulli", "logit", Likelihood::bernoulli_logit, LabelCoding::automatic, "a binary label", any_real, draw_logit,
     quarter, predict_logit},
    {"bernoulli", "probit", Likelihood::bernoulli_probit, LabelCoding::automatic, "a binary label", any_real, draw_probit,
     one, predict_probit},
    {"poisson", "log", Likelihood::poisson_log, LabelCoding::as_read, "a count (a non-negative integer)", count,
     draw_poisson, nullptr, predict_poisson},
    {"gaussian", "identity", Likelihood::gaussian_identity, LabelCoding::as_read, "a real number", any_real, draw_gaussian,
     inverse_variance, predict_gaussian},
    {"negative_binomial", "log", Likelihood::negative_binomial_log, LabelCoding::as_read,
     "a count (a non-negative integer)", count, draw_negative_binomial, negative_binomial_curvature,
     predict_negative_binomial},
};

}  // namespace

std::span<const Family> families() { return table; }

std::string family_list() {
  std::string list;
  for (std::size_t k = 0; k < std::size(table); ++k) {
    const bool first_of_family = k == 0 || std::string(table[k - 1].family) != table[k].family;
    const bool last_of_family = k + 1 == std::size(table) || std::string(table[k + 1].family) != table[k].family;
    list += fmt::format("{}{}{}{}", first_of_family ? (k ? "; " : "") + std::string(table[k].family) + " (" : ", ",
                        table[k].link, last_of_family ? ")" : "", "");
  }
  return list + "; categorical (logit)";
}

const Family& find_family(const std::string& family, const std::string& link, const std::string& family_key,
                          const std::string& link_key) {
  const Family* first_of_family = nullptr;
  std::string links;
  for (const Family& entry : table) {
    if (family != entry.family) continue;
    if (!first_of_family) first_of_family = &entry;
    links += fmt::format("{}{}", links.empty() ? "" : ", ", entry.link);
    if (link == entry.link) return entry;
  }
  if (!first_of_family)
    throw sgmcmc::Error(fmt::format("{}: '{}' is not a family; expected one of: {}", family_key, family, family_list()));
  if (link.empty()) return *first_of_family;
  throw sgmcmc::Error(
      fmt::format("{}: '{}' is not a link of the {} family; expected {}", link_key, link, family, links));
}

}  // namespace glm
