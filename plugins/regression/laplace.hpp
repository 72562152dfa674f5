// A Laplace(0, s) draw, for the prior simulation of the regression plugins (logistic, glm).
#pragma once
#include <cmath>

namespace regression {

/// s(E₁ - E₂) with E₁, E₂ ~ Exp(1) independent has the Laplace(0, s) law; Exp(1) = -log(1 - U).
template <class Rng>
double laplace_variate(double scale, Rng& rng) {
  return scale * (-std::log1p(-rng.uniform()) + std::log1p(-rng.uniform()));
}

}  // namespace regression
