// The table of what `model.family` and `model.link` may be: for each pair, its likelihood (whose
// arithmetic is likelihood_math.hpp), how its responses are read and checked, how one is
// simulated, and its Lipschitz bound, where it has one.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "labelled_rows.hpp"
#include "likelihoods.hpp"

import sgmcmc.sdk;

namespace glm {

using regression::Likelihood;
using regression::LikelihoodConstants;
using regression::likelihood_count;

struct Family {
  const char* family;
  const char* link;
  Likelihood likelihood;
  regression::LabelCoding coding;  // bernoulli: labels mapped to ±1; the others as read
  const char* response;            // what a response must be, for error messages
  /// Whether y is a valid response (a count, any real, ...); labels mapped to ±1 always are.
  bool (*valid_response)(double y);
  /// y ~ p(y | z), for simulated data.
  double (*draw_response)(double z, const LikelihoodConstants& c, sgmcmc::Rng& rng);
  /// c_i with ∂²f_i/∂z² ≤ c_i for every z, so L_i = c_i ‖x_i‖² bounds ∇f_i's Lipschitz constant;
  /// nullptr where the curvature is unbounded (poisson: μ = e^z).
  double (*curvature_bound)(double y, const LikelihoodConstants& c);
  /// `sgmcmc predict` at z: out[0] = p(y = +1 | z) for bernoulli (labels mapped to ±1), else
  /// out[0] = E[y | z] and out[1] = Var[y | z].
  void (*predict)(double z, const LikelihoodConstants& c, double* out);
};

/// The families and links, the first of each family's links being its default.
std::span<const Family> families();

/// The entry of (family, link); link empty means the family's default. Throws naming the
/// model.family or model.link key (`family_key`, `link_key`) and what they may be.
const Family& find_family(const std::string& family, const std::string& link, const std::string& family_key,
                          const std::string& link_key);

/// "bernoulli (logit, probit), poisson (log), ...; categorical (logit)": for error messages and the
/// plugin's description (categorical is categorical.hpp's, outside this table).
std::string family_list();

}  // namespace glm
