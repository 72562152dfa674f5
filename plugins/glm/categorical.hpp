// glm's family `categorical`: multinomial logit over K classes with the last class as reference
// (README.md beside this file says why). Outside families.hpp's table: its linear predictor is a
// vector, so it has no GLM form and its own model class (categorical.cpp).
#pragma once
#include <memory>

#include "priors.hpp"

import sgmcmc.sdk;

namespace glm {

/// The categorical model of `context` (model.family = "categorical"): reads model.link (logit
/// only), classes, labels and the data keys; `prior` and `intercept` as the other families.
std::unique_ptr<sgmcmc::Model> make_categorical(const sgmcmc::ModelContext& context, const Prior& prior, bool intercept,
                                                bool float_storage);

}  // namespace glm
