// The minibatch estimator: unbiased for ∇U at any θ, and equal to the exact gradient when the
// batch is the whole data set.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <vector>

#include "gaussian_fixture.hpp"

namespace {

std::vector<double> estimate(sgmcmc::Estimator& estimator, const sgmcmc::Model& model, std::span<const double> theta,
                             sgmcmc::Rng& rng, sgmcmc::Cost& cost) {
  auto workspace = model.make_workspace();
  sgmcmc::ChainContext context{model, *workspace, rng, cost};
  std::vector<double> gradient(model.dimension());
  estimator.estimate(theta, gradient, context);
  return gradient;
}

/// An estimator from TOML, for the errors that name where a key was set.
std::unique_ptr<sgmcmc::Estimator> make(const std::string& toml, const sgmcmc::Model& model) {
  auto config = sgmcmc::parse_config(toml, "e.toml");
  sgmcmc::SectionReads reads;
  auto estimator = sgmcmc::make_estimator(sgmcmc::SectionReader(config["estimator"], reads), model);
  sgmcmc::reject_unknown_keys(config["estimator"], reads);
  return estimator;
}

}  // namespace

TEST_CASE("minibatch estimator is unbiased at several θ, with and without replacement") {
  // Quantity: the mean of R = 20,000 estimates (batch 5 of N = 50) per coordinate.
  // Reference: the exact gradient. Tolerance: 5 Monte Carlo sd, the sd being the estimates' own
  // sample sd / sqrt(R) (estimates are independent draws given θ).
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  sgmcmc::Rng rng(8, 1);
  sgmcmc::Cost cost;
  const auto exact = sgmcmc::make_estimator(sgmcmc::ExactParameters{}, model);
  for (const bool replacement : {false, true}) {
    const auto minibatch = sgmcmc::make_estimator(sgmcmc::MinibatchParameters{.batch_size = 5, .replacement = replacement}, model);
    for (const std::vector<double>& theta : {std::vector<double>{0, 0, 0}, {1.5, -2, 0.3}, {-4, 4, 1}}) {
      const auto truth = estimate(*exact, model, theta, rng, cost);
      const int repeats = 20'000;
      std::vector<double> sum(3, 0.0), sum_squares(3, 0.0);
      for (int r = 0; r < repeats; ++r) {
        const auto g = estimate(*minibatch, model, theta, rng, cost);
        for (std::size_t j = 0; j < 3; ++j) {
          sum[j] += g[j];
          sum_squares[j] += g[j] * g[j];
        }
      }
      for (std::size_t j = 0; j < 3; ++j) {
        const double mean = sum[j] / repeats, sd = std::sqrt(sum_squares[j] / repeats - mean * mean);
        INFO("replacement " << replacement << ", coordinate " << j);
        CHECK(sd > 0.0);  // it is a stochastic estimate
        CHECK(std::abs(mean - truth[j]) < 5 * sd / std::sqrt(repeats));
      }
    }
  }
}

TEST_CASE("a minibatch as large as the data set is the exact gradient, and both count their cost") {
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  sgmcmc::Rng rng(8, 1);
  const std::vector<double> theta{0.7, -0.1, 2.0};
  sgmcmc::Cost exact_cost, full_cost;
  const auto exact = estimate(*sgmcmc::make_estimator(sgmcmc::ExactParameters{}, model), model, theta, rng, exact_cost);
  const auto full =
      estimate(*sgmcmc::make_estimator(sgmcmc::MinibatchParameters{.batch_size = 50}, model), model, theta, rng, full_cost);
  CHECK(full == exact);  // the same items in the same order and the same arithmetic: bit for bit
  CHECK_THROWS_WITH(make("[estimator]\nbatch_size = 500\n", model),
                    Catch::Matchers::Contains("e.toml:2: estimator.batch_size: a batch of 500 items is larger than the data set"));
  CHECK(exact_cost.item_gradients == 50);
  CHECK(exact_cost.full_passes == 1);
  CHECK(full_cost.item_gradients == 50);
  sgmcmc::Cost small_cost;
  estimate(*sgmcmc::make_estimator(sgmcmc::MinibatchParameters{.batch_size = 7}, model), model, theta, rng, small_cost);
  CHECK(small_cost.item_gradients == 7);
}
