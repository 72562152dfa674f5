// The real gaussian plugin, loaded from disk, on a data file the test writes, with its
// closed-form posterior N(μ, A⁻¹): A = XᵀX/σ² + I/s², μ = A⁻¹ Xᵀy / σ².
#pragma once
#include <memory>
#include <span>
#include <string>
#include <fmt/format.h>
#include <xtensor/xtensor.hpp>
#include <xtensor-blas/xlinalg.hpp>

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
  GaussianFixture(std::size_t rows, std::size_t dim) : x(xt::xtensor<double, 2>::from_shape({rows, dim})), y(xt::xtensor<double, 1>::from_shape({rows})) {
    sgmcmc::Rng rng(99, 5);
    std::string csv = "y";
    for (std::size_t j = 0; j < dim; ++j) csv += fmt::format(",x{}", j + 1);
    csv += "\n";
    for (std::size_t i = 0; i < rows; ++i) {
      double mean_i = 0.0;
      for (std::size_t j = 0; j < dim; ++j) {
        x(i, j) = rng.normal();
        mean_i += static_cast<double>(j + 1) / static_cast<double>(dim) * x(i, j);
      }
      y(i) = mean_i + noise_sd * rng.normal();
      csv += fmt::format("{}", y(i));
      for (std::size_t j = 0; j < dim; ++j) csv += fmt::format(",{}", x(i, j));
      csv += "\n";
    }
    // Read back what was written, so the closed form uses exactly the plugin's numbers.
    const auto path = dir.write("data.csv", csv);
    const auto table = sgmcmc::read_numeric_csv(path);
    for (std::size_t i = 0; i < rows; ++i) {
      y(i) = table.at(i, 0);
      for (std::size_t j = 0; j < dim; ++j) x(i, j) = table.at(i, j + 1);
    }
    auto config = sgmcmc::parse_config(fmt::format("[model]\ndata = \"{}\"\ntest_size = 0\nnoise_sd = {}\nprior_sd = {}\n",
                                                   path.string(), noise_sd, prior_sd),
                                       "fixture.toml");
    model = plugin.create({config["model"], 1});
    config["model"].reject_unknown_keys();
    auto posterior = gaussian_posterior(x, y, noise_sd, prior_sd);
    precision = std::move(posterior.precision);
    mean = std::move(posterior.mean);
  }
};

}  // namespace test
