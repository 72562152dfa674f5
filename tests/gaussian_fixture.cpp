// The gaussian fixture's data file and closed-form posterior (gaussian_fixture.hpp).
// The standard and fmt headers come first: the fixture's header imports sgmcmc.
#include <utility>
#include <fmt/format.h>

#include "gaussian_fixture.hpp"

namespace test {

GaussianFixture::GaussianFixture(std::size_t rows, std::size_t dim)
    : x(xt::xtensor<double, 2>::from_shape({rows, dim})), y(xt::xtensor<double, 1>::from_shape({rows})) {
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
  sgmcmc::SectionReads reads;
  model = plugin.create({sgmcmc::SectionReader(config["model"], reads), 1});
  sgmcmc::reject_unknown_keys(config["model"], reads);
  auto posterior = gaussian_posterior(x, y, noise_sd, prior_sd);
  precision = std::move(posterior.precision);
  mean = std::move(posterior.mean);
}

}  // namespace test
