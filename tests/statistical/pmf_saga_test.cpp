// SAGA on the pmf plugin through its sparse item gradients (an N × s table, s = 2·rank (+2 with
// biases), instead of the N × d one): the same estimates as the dense table to rounding, unbiased
// (Hotelling's T² of many estimates), and refilled when a Gibbs step changes the data terms (τ).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <xtensor/xtensor.hpp>
#include <xtensor-blas/xlinalg.hpp>

#include "support.hpp"
#include "model_support.hpp"
#include "statistical/estimator_support.hpp"

namespace pmf_saga_test {

/// Every (user, item) pair of 5 users × 5 items, ratings 1..5 by a fixed pattern.
std::string all_pairs() {
  std::string text;
  for (int i = 1; i <= 5; ++i)
    for (int j = 1; j <= 5; ++j) text += fmt::format("{}\t{}\t{}\n", i, j, 1 + (3 * i + 2 * j) % 5);
  return text;
}

/// Fixed hyperparameters unless `gibbs_every` says otherwise.
std::shared_ptr<const sgmcmc::Model> tiny_pmf(const test::TempDir& dir, const std::string& extra, int gibbs_every = 0) {
  return test::build_model("pmf", fmt::format("data = {}\ntest_size = 0\ngibbs_every = {}\n{}",
                                              test::quoted(dir.write("r.tsv", all_pairs())), gibbs_every, extra));
}

std::vector<double> random_point(std::size_t d, std::uint64_t seed) {
  sgmcmc::Rng rng(seed, 0);
  std::vector<double> theta(d);
  for (double& x : theta) x = 0.8 * rng.normal();
  return theta;
}


/// Σ_i ‖∇f_i(θ)‖₁ over every item: the size of the terms SAGA's sums are made of, which sets
/// their rounding.
double item_gradient_scale(const sgmcmc::Model& model, std::span<const double> theta, sgmcmc::Workspace& workspace) {
  const auto every = sgmcmc::every_item(model);
  std::vector<double> values(every.size() * model.item_gradient_support_size());
  model.sparse_item_gradients(theta, every, values, workspace);
  double sum = 0.0;
  for (double x : values) sum += std::abs(x);
  return sum;
}

const char* const variants[] = {"rank = 2\n", "rank = 1\nbiases = true\n"};

/// The two tables' batches: distinct items, and repeats within a batch.
const sgmcmc::SagaParameters saga_kinds[] = {{.batches = {.batch_size = 5}},
                                             {.batches = {.batch_size = 10, .replacement = true}}};

}  // namespace pmf_saga_test

using namespace pmf_saga_test;

TEST_CASE("pmf saga: the sparse N × s table gives the dense N × d table's estimates, to rounding") {
  // The same estimator parameters and the same stream give the same batches; the dense table (pmf with
  // its sparse capability hidden: rows from one-item batches) and the sparse one do the same
  // arithmetic on the non-zeros, in a different order of additions. Tolerance: 1e-13 of
  // Σ_i ‖∇f_i‖₁ at the point, a few hundred ulps of the largest sum either forms, far below any
  // error of the update itself (a missed or doubled table entry moves a coordinate by O(1)).
  test::TempDir dir;
  for (const char* variant : variants) {
    const auto model = tiny_pmf(dir, variant);
    const auto dense = std::make_shared<test::MaskedModel>(model, false, false, false);
    REQUIRE(model->capabilities().sparse_item_gradients);
    for (const auto& saga_parameters : saga_kinds) {
      test::EstimatorBench sparse_bench(*model, 11), dense_bench(*dense, 11);
      auto sparse_saga = sgmcmc::make_estimator(saga_parameters, *model);
      auto dense_saga = sgmcmc::make_estimator(saga_parameters, *dense);
      for (std::uint64_t step = 0; step < 40; ++step) {
        const auto theta = random_point(model->dimension(), 100 + step);
        const auto a = sparse_bench.estimate(*sparse_saga, theta), b = dense_bench.estimate(*dense_saga, theta);
        const double tolerance = 1e-13 * item_gradient_scale(*model, theta, *sparse_bench.workspace);
        for (std::size_t j = 0; j < a.size(); ++j) {
          INFO(variant << test::describe(saga_parameters.batches) << ", estimate " << step << ", coordinate " << j);
          CHECK(std::abs(a[j] - b[j]) <= tolerance);
        }
      }
      CHECK(sparse_bench.cost.item_gradients == dense_bench.cost.item_gradients);
    }
  }
}

TEST_CASE("pmf saga: the sparse table's estimates are unbiased (Hotelling's T²)") {
  // Quantity: T² = R ēᵀ S⁻¹ ē of the errors e = ĝ - ∇U(θ) of R = 20,000 estimates, each from a
  // fresh estimator whose table was filled at α and partly refreshed at β (so the table states
  // differ between repeats), d = 20 here (rank 2: (5 + 5) × 2; rank 1 with biases: 10 + 10).
  // Reference: unbiased estimates give T² ~ χ²_20 (multivariate CLT). Tolerance: T² < 75, with
  // P(χ²_20 > 75) = 2.7e-8 per check (series of the incomplete Gamma function). A bias b is caught
  // once R bᵀS⁻¹b > 75, i.e. from about 0.06 standard deviations of one estimate.
  test::TempDir dir;
  std::uint64_t seed = 40;
  for (const char* variant : variants) {
    const auto model = tiny_pmf(dir, variant);
    const std::size_t d = model->dimension();
    REQUIRE(d == 20);
    const auto alpha = random_point(d, 1), beta = random_point(d, 2);
    for (const auto& saga_parameters : saga_kinds)
      for (std::uint64_t point = 3; point <= 4; ++point) {
        const auto theta = random_point(d, point);
        test::EstimatorBench bench(*model, ++seed);
        const auto truth = test::full_gradient(*model, theta, *bench.workspace);
        const std::size_t repeats = 20'000;
        xt::xtensor<double, 2> errors = xt::zeros<double>({repeats, d});
        for (std::size_t r = 0; r < repeats; ++r) {
          auto saga = sgmcmc::make_estimator(saga_parameters, *model);
          bench.estimate(*saga, alpha);
          bench.estimate(*saga, beta);
          const auto g = bench.estimate(*saga, theta);
          for (std::size_t j = 0; j < d; ++j) errors(r, j) = g[j] - truth[j];
        }
        const xt::xtensor<double, 1> mean = xt::mean(errors, {0});
        const xt::xtensor<double, 2> centred = errors - mean;
        const xt::xtensor<double, 2> covariance = xt::linalg::dot(xt::transpose(centred), centred) / static_cast<double>(repeats - 1);
        const xt::xtensor<double, 1> solved = xt::linalg::solve(covariance, mean);
        const double hotelling = static_cast<double>(repeats) * xt::linalg::vdot(mean, solved);
        INFO(variant << test::describe(saga_parameters.batches) << ", point " << point << ": T² = " << hotelling);
        CHECK(xt::amin(xt::diagonal(covariance))() > 0.0);  // stochastic in every coordinate
        CHECK(hotelling < 75.0);
      }
  }
}

TEST_CASE("pmf saga: when a Gibbs step draws τ the table is refilled, and the next estimate is exact again") {
  // With a noise prior, after_step draws τ and reports TargetChange::data; every ∇f_i scales
  // with τ, so a table filled before belongs to another target. After data_terms_changed the
  // estimator refills the table at the next θ (one full pass): that estimate is ∇U(θ) under the
  // new τ (to rounding: 1e-12 of Σ_i ‖∇f_i‖₁), while the stale table's estimate would be off by
  // (τ_new/τ_old - 1) × the table's sum, O(1) here.
  test::TempDir dir;
  const auto model = tiny_pmf(dir, "rank = 2\nnoise_prior_shape = 2\nnoise_prior_rate = 1\n", 1);
  test::EstimatorBench bench(*model, 5);
  auto saga = sgmcmc::make_estimator(sgmcmc::SagaParameters{.batches = {.batch_size = 5}}, *model);
  const auto theta = random_point(model->dimension(), 7);
  bench.estimate(*saga, theta);  // fills the table
  const std::uint64_t before = bench.cost.full_passes;
  sgmcmc::Rng rng(9, 9);
  std::vector<double> moved = theta;
  REQUIRE(model->after_step(1, moved, *bench.workspace, rng,
                            sgmcmc::AllItems(model->num_items())) == sgmcmc::TargetChange::data);
  saga->data_terms_changed(theta, bench.context);
  const auto g = bench.estimate(*saga, theta), truth = test::full_gradient(*model, theta, *bench.workspace);
  CHECK(bench.cost.full_passes == before + 1);
  const double tolerance = 1e-12 * item_gradient_scale(*model, theta, *bench.workspace);
  for (std::size_t j = 0; j < g.size(); ++j) {
    INFO("coordinate " << j);
    CHECK(std::abs(g[j] - truth[j]) <= tolerance);
  }
}
