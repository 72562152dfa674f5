// The real gaussian plugin, loaded from disk, on a data file the test writes, with its
// closed-form posterior N(μ, A⁻¹): A = XᵀX/σ² + I/s², μ = A⁻¹ Xᵀy / σ².
#pragma once
#include <memory>
#include <span>
#include <string>
#include <fmt/format.h>  // before the import below, for the files that format after it
#include <xtensor/xtensor.hpp>

#include "gaussian_posterior.hpp"
#include "support.hpp"

import sgmcmc;

namespace test {

struct GaussianFixture {
  static constexpr double noise_sd = 0.5, prior_sd = 2.0;
  TempDir dir;
  xt::xtensor<double, 2> x;
  xt::xtensor<double, 1> y;
  sgmcmc::LoadedPlugin plugin = sgmcmc::load_plugin_file(gaussian_plugin_path);
  std::shared_ptr<const sgmcmc::Model> model;
  xt::xtensor<double, 2> precision;  // A
  xt::xtensor<double, 1> mean;       // μ

  /// `rows` rows of `dim` covariates x ~ N(0, 1) and y = Σ_j (j+1)·x_j/dim + N(0, σ²), written
  /// as CSV with a header and read back by the plugin with test_size = 0 (all rows are data).
  /// Defined in gaussian_fixture.cpp, compiled once for every suite: inline, its xtensor
  /// expressions and formatting cost each test file that included this header about 6.5 CPU s.
  GaussianFixture(std::size_t rows, std::size_t dim);
};

}  // namespace test
