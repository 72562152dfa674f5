// The pmf plugin, loaded from disk: its potential against a hand computation, its gradient against
// finite differences and against a dense matrix formula, the sparsity of a batch gradient, the
// prior's dependence on the Gibbs-updated hyperparameters, cold-start predictions, every input
// format, and each malformed input (naming file:line).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <numbers>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"
#include "model_support.hpp"

using Catch::Matchers::Contains;

namespace pmf_test {

std::shared_ptr<const sgmcmc::Model> build(const std::string& model_lines, std::uint64_t seed = 1) {
  return test::build_model("pmf", model_lines, seed);
}

using test::quoted;
using test::write_gzip;

double full_potential(const sgmcmc::Model& model, std::span<const double> theta, sgmcmc::Workspace& workspace) {
  const auto every = sgmcmc::every_item(model);
  return sgmcmc::potential(model, theta, every, workspace);
}

using test::full_gradient;

std::vector<double> random_theta(std::size_t d, std::uint64_t seed) {
  sgmcmc::Rng rng(seed, 0);
  std::vector<double> theta(d);
  for (double& x : theta) x = 0.7 * rng.normal();
  return theta;
}

/// ∇U at a random θ against central differences of U, h = 1e-5, to 1e-6 (the tests say why).
void check_finite_differences(const sgmcmc::Model& model) {
  auto workspace = model.make_workspace();
  const auto theta = random_theta(model.dimension(), 3);
  const auto gradient = full_gradient(model, theta, *workspace);
  const auto names = model.parameter_names();
  for (std::size_t j = 0; j < theta.size(); ++j) {
    const double h = 1e-5;
    auto plus = theta, minus = theta;
    plus[j] += h;
    minus[j] -= h;
    const double difference = (full_potential(model, plus, *workspace) - full_potential(model, minus, *workspace)) / (2 * h);
    INFO("coordinate " << j << " (" << names[j] << ")");
    CHECK(gradient[j] == Approx(difference).epsilon(1e-6).margin(1e-6));
  }
}

// Three users (ids 1, 2, 5) and two items (ids 10, 20), MovieLens' u.data layout (tab, timestamp).
const std::string tiny_udata = "1\t10\t4\t881250949\n2\t10\t1\t891717742\n5\t20\t5\t878887116\n1\t20\t3\t880606923\n";

}  // namespace pmf_test

using namespace pmf_test;

TEST_CASE("pmf plugin: U of a hand-computed four-rating data set") {
  // rank 1, τ = 2, offset r̄ = (4 + 1 + 5 + 3)/4 = 3.25. θ = (U_1, U_2, U_5, V_10, V_20) =
  // (0.5, -1, 2, 1.5, -0.5). Residuals e = r - r̄ - U V: (1,10): 0.75 - 0.75 = 0;
  // (2,10): -2.25 + 1.5 = -0.75; (5,20): 1.75 + 1 = 2.75; (1,20): -0.25 + 0.25 = 0.
  // f = ½τe² + ½log(2π/τ) each: Σ½τe² = 0.5625 + 7.5625 = 8.125, plus 4 × ½ log(π) = 2.289459861...
  // Prior at the starting hyperparameters μ = 0, λ = a_0/b_0 = 1: Σ ½x² + ½log 2π per coordinate
  // = ½(0.25 + 1 + 4 + 2.25 + 0.25) + 5 × 0.918938533204672 = 3.875 + 4.59469266602336.
  test::TempDir dir;
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nrank = 1\nnoise_precision = 2\n",
                                       quoted(dir.write("u.data", tiny_udata))));
  REQUIRE(model->num_items() == 4);
  REQUIRE(model->dimension() == 5);
  CHECK(model->parameter_names() == std::vector<std::string>{"U.1.1", "U.2.1", "U.5.1", "V.10.1", "V.20.1"});
  const std::vector<double> theta{0.5, -1.0, 2.0, 1.5, -0.5};
  auto workspace = model->make_workspace();
  const double data = 8.125 + 4 * 0.5 * std::log(std::numbers::pi);
  const double prior = 3.875 + 5 * 0.5 * std::log(2 * std::numbers::pi);
  CHECK(full_potential(*model, theta, *workspace) == Approx(data + prior).epsilon(1e-14));
  CHECK(model->prior_potential(theta) == Approx(prior).epsilon(1e-14));
  const std::vector<std::size_t> third{2};
  CHECK(model->data_potential(theta, {third}, *workspace) == Approx(0.5 * 2 * 2.75 * 2.75 + 0.5 * std::log(std::numbers::pi)).epsilon(1e-14));
}

TEST_CASE("pmf plugin: gradient of U matches central finite differences") {
  // 12 users, 9 items, 40 simulated ratings, rank 3, at a random θ. U is a polynomial of degree 4
  // in θ with O(1) coefficients: with h = 1e-5 the central difference has truncation error
  // h²/6·|∂³U| ≲ 1e-9 and rounding error ε·|U|/h ≈ 1e-16·300/1e-5 = 3e-9; 1e-6 still catches any
  // wrong sign, factor or missing term, which are O(0.1) or more.
  check_finite_differences(*build("users = 12\nitems = 9\nratings = 40\ntest_size = 0\nrank = 3\n", 7));
}

TEST_CASE("pmf plugin: the sparse batch gradient equals the dense matrix formula") {
  // Dense path, written from the matrix form of the model: with the ratings as a users × items
  // matrix R (mask M of observed entries), E = M ∘ (R - r̄ - U Vᵀ), the data gradient is
  // ∇_U = -τ E V and ∇_V = -τ Eᵀ U, computed here over every (user, item) cell. The plugin's
  // batch path loops over the ratings and touches only their rows; both must agree to rounding.
  test::TempDir dir;
  const std::string text = "1\t10\t4\n2\t10\t1\n5\t20\t5\n1\t20\t3\n2\t30\t2\n5\t30\t4\n5\t10\t3\n";
  const std::size_t users = 3, items = 3, r = 2;
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nrank = 2\nnoise_precision = 1.5\n",
                                       quoted(dir.write("r.tsv", text))));
  REQUIRE(model->dimension() == (users + items) * r);
  const auto theta = random_theta(model->dimension(), 11);
  // ratings[user][item], 0 = missing; rows in id order: users 1, 2, 5; items 10, 20, 30.
  const double ratings[3][3] = {{4, 3, 0}, {1, 0, 2}, {3, 5, 4}};
  const double offset = (4 + 1 + 5 + 3 + 2 + 4 + 3) / 7.0, tau = 1.5;
  std::vector<double> dense(model->dimension(), 0.0);
  for (std::size_t i = 0; i < users; ++i)
    for (std::size_t j = 0; j < items; ++j) {
      if (ratings[i][j] == 0) continue;
      const double* u = &theta[i * r];
      const double* v = &theta[(users + j) * r];
      const double e = ratings[i][j] - offset - (u[0] * v[0] + u[1] * v[1]);
      for (std::size_t k = 0; k < r; ++k) {
        dense[i * r + k] += -tau * e * v[k];
        dense[(users + j) * r + k] += -tau * e * u[k];
      }
    }
  auto workspace = model->make_workspace();
  std::vector<double> sparse(model->dimension(), 0.0);
  const auto every = sgmcmc::every_item(*model);
  sgmcmc::Rng unused(0, 0);
  model->add_data_gradient(theta, {every}, sparse, *workspace, unused);
  for (std::size_t j = 0; j < dense.size(); ++j) {
    INFO("coordinate " << j);
    CHECK(sparse[j] == Approx(dense[j]).epsilon(1e-13).margin(1e-14));
  }
}

TEST_CASE("pmf plugin: with biases, the gradient of U matches central finite differences") {
  // As the test without biases: U is a polynomial of degree 4 in θ (the biases enter e_ij
  // linearly), the same error budget and tolerance. θ = (U, V, b, c): (users + items)(rank + 1).
  const auto model = build("users = 12\nitems = 9\nratings = 40\ntest_size = 0\nrank = 3\nbiases = true\n", 7);
  const auto plain = build("users = 12\nitems = 9\nratings = 40\ntest_size = 0\nrank = 3\n", 7);
  REQUIRE(model->dimension() == plain->dimension() / 3 * 4);
  const auto names = model->parameter_names();
  CHECK(names[plain->dimension()].starts_with("b."));
  CHECK(names.back().starts_with("c."));
  check_finite_differences(*model);
}

TEST_CASE("pmf plugin: sparse item gradients, scattered onto their supports, equal one-rating batches") {
  // SAGA's N × s table rests on this: for every rating, the s = 2·rank (+2) values placed at the
  // support's coordinates give the one-rating batch gradient exactly (the same arithmetic), and
  // the support is U_i's and V_j's rows (and b_i, c_j): nothing else is non-zero.
  for (const char* biases : {"false", "true"}) {
    const auto model = build(fmt::format("users = 30\nitems = 40\nratings = 300\ntest_size = 0\nrank = 4\nbiases = {}\n", biases), 2);
    const std::size_t s = model->item_gradient_support_size(), d = model->dimension();
    CHECK(s == (std::string(biases) == "true" ? 10u : 8u));
    const auto theta = random_theta(d, 5);
    auto workspace = model->make_workspace();
    const auto every = sgmcmc::every_item(*model);
    std::vector<std::size_t> support(every.size() * s);
    std::vector<double> values(every.size() * s);
    model->item_gradient_support(every, support);
    model->sparse_item_gradients(theta, every, values, *workspace);
    sgmcmc::Rng unused(0, 0);
    for (std::size_t item = 0; item < every.size(); ++item) {
      std::vector<double> batch(d, 0.0), scattered(d, 0.0);
      const std::vector<std::size_t> one{item};
      model->add_data_gradient(theta, {one}, batch, *workspace, unused);
      for (std::size_t j = 0; j < s; ++j) scattered.at(support[item * s + j]) += values[item * s + j];
      INFO("biases = " << biases << ", rating " << item);
      CHECK(scattered == batch);
    }
  }
}

TEST_CASE("pmf plugin: check-model passes with and without biases") {
  for (const char* biases : {"false", "true"}) {
    const auto result = test::run_cli(fmt::format("check-model pmf --set model.users=30 --set model.items=40 "
                                                  "--set model.ratings=300 --set model.rank=3 --set model.biases={}",
                                                  biases));
    INFO(result.output);
    CHECK(result.exit_code == 0);
    CHECK_THAT(result.output, Contains("sparse item gradients"));
  }
}

TEST_CASE("pmf plugin: a one-rating batch touches exactly its user's and its item's rows") {
  // The gradient work per batch is O(batch × rank): ∇f_ij is non-zero only on U_i and V_j.
  const auto model = build("users = 30\nitems = 40\nratings = 300\ntest_size = 0\nrank = 4\n", 2);
  const auto theta = random_theta(model->dimension(), 5);
  auto workspace = model->make_workspace();
  sgmcmc::Rng unused(0, 0);
  for (std::size_t item : {0, 17, 299}) {
    std::vector<double> gradient(model->dimension(), 0.0);
    const std::vector<std::size_t> one{item};
    model->add_data_gradient(theta, {one}, gradient, *workspace, unused);
    std::size_t nonzero = 0;
    for (double g : gradient) nonzero += g != 0.0;
    INFO("rating " << item);
    CHECK(nonzero == 2 * 4);
  }
}

TEST_CASE("pmf plugin: the prior follows the hyperparameters a Gibbs step draws, the data term does not") {
  // gibbs_every = 1: after_step draws new (μ, λ), so the prior potential of the same θ changes
  // (with probability one) while the data potential and θ itself stay as they were; with
  // gibbs_every = 0 nothing changes. The workspace-free prior stays at the starting values.
  const auto model = build("users = 10\nitems = 8\nratings = 30\ntest_size = 0\nrank = 2\ngibbs_every = 1\n", 3);
  const auto fixed = build("users = 10\nitems = 8\nratings = 30\ntest_size = 0\nrank = 2\ngibbs_every = 0\n", 3);
  auto theta = random_theta(model->dimension(), 9);
  const auto before = theta;
  const auto every = sgmcmc::every_item(*model);
  for (const auto& [m, changes] : {std::pair{model, true}, std::pair{fixed, false}}) {
    auto workspace = m->make_workspace();
    const double prior = m->prior_potential_given(theta, *workspace);
    CHECK(prior == m->prior_potential(theta));
    const double data = m->data_potential(theta, {every}, *workspace);
    sgmcmc::Rng rng(1, 1);
    // It tells the chain that the prior changed (not the data terms: τ is fixed here).
    CHECK(m->after_step(1, theta, *workspace, rng, sgmcmc::AllItems(m->num_items())) ==
          (changes ? sgmcmc::TargetChange::prior : sgmcmc::TargetChange::none));
    CHECK(theta == before);
    CHECK(m->data_potential(theta, {every}, *workspace) == data);
    CHECK((m->prior_potential_given(theta, *workspace) != prior) == changes);
    CHECK(m->prior_potential(theta) == prior);
  }
}

TEST_CASE("pmf plugin: cold-start test ratings are predicted from the factor prior") {
  // Training: users 1, 2; items 10, 20. Test: (1, 20) known, (3, 10) a new user, (1, 30) a new item,
  // (3, 30) both new. At the starting hyperparameters μ = 0, λ = 1, rank 2, τ = 4, offset r̄ = 3:
  //   known:     mean r̄ + U_1ᵀV_20,  variance 1/τ
  //   new user:  mean r̄ + 0ᵀV_10 = r̄, variance 1/τ + |V_10|²  (U integrated out exactly)
  //   new item:  mean r̄, variance 1/τ + |U_1|²
  //   both new:  mean r̄, variance 1/τ + Σ_k (0 + 0 + 1) = 1/τ + 2
  // The first evaluation's log predictive density is the mean of the four Gaussian log densities.
  test::TempDir dir;
  const auto train = dir.write("base.tsv", "1\t10\t4\n2\t10\t2\n2\t20\t3\n");
  const auto test = dir.write("test.tsv", "1\t20\t5\n3\t10\t1\n1\t30\t2\n3\t30\t4\n");
  const auto model = build(fmt::format("data = {}\ntest_data = {}\nrank = 2\nnoise_precision = 4\n", quoted(train),
                                       quoted(test)));
  REQUIRE(model->metric_names() == std::vector<std::string>{"log_predictive_density", "rmse"});
  // θ = (U_1, U_2, V_10, V_20), rank 2.
  const std::vector<double> theta{0.5, -0.2, 0.3, 0.1, 1.0, 0.4, -0.6, 0.8};
  const auto log_normal = [](double x, double mean, double variance) {
    return -0.5 * (std::log(2 * std::numbers::pi * variance) + (x - mean) * (x - mean) / variance);
  };
  const double known_mean = 3.0 + 0.5 * -0.6 + -0.2 * 0.8;
  const double expected = (log_normal(5, known_mean, 0.25) + log_normal(1, 3, 0.25 + 1.0 + 0.16) +
                           log_normal(2, 3, 0.25 + 0.25 + 0.04) + log_normal(4, 3, 0.25 + 2)) / 4;
  auto workspace = model->make_workspace();
  std::vector<double> metrics(2);
  model->evaluate_metrics(theta, *workspace, metrics);
  CHECK(metrics[0] == Approx(expected).epsilon(1e-13));
  // RMSE of the clipped means: (5 - known_mean)², then (1-3)², (2-3)², (4-3)².
  const double rmse = std::sqrt(((5 - known_mean) * (5 - known_mean) + 4 + 1 + 1) / 4);
  CHECK(metrics[1] == Approx(rmse).epsilon(1e-13));
  // The quantity for post-processing is the same draw's mean held-out log density, with no running
  // average: equal to the first evaluation's metric.
  REQUIRE(model->quantity_names() == std::vector<std::string>{"held_out_log_density"});
  std::vector<double> quantity(1);
  model->evaluate_quantities(theta, *workspace, quantity);
  CHECK(quantity[0] == Approx(expected).epsilon(1e-13));
}

TEST_CASE("pmf plugin: u.data, CSV with a header, CRLF and gzip read as the same data") {
  test::TempDir dir;
  const auto reference = build(fmt::format("data = {}\ntest_size = 0\nrank = 2\n", quoted(dir.write("u.data", tiny_udata))));
  const auto theta = random_theta(reference->dimension(), 1);
  auto workspace = reference->make_workspace();
  const double u = full_potential(*reference, theta, *workspace);
  const auto g = full_gradient(*reference, theta, *workspace);
  const std::string csv = "userId,movieId,rating,timestamp\r\n1,10,4,881250949\r\n2,10,1,891717742\r\n5,20,5,0\r\n1,20,3.0,0\r\n";
  const std::string spaces = "1 10 4\n2  10 1\n5 20 5\n1 20 3\n";
  for (const auto& [name, text] : {std::pair{"a.csv", csv}, std::pair{"b.txt", spaces}, std::pair{"c.data", tiny_udata}}) {
    for (bool compressed : {false, true}) {
      const auto path = test::write_data_file(dir.path(), name, text, compressed);
      INFO(path.filename().string());
      const auto model = build(fmt::format("data = {}\ntest_size = 0\nrank = 2\n", quoted(path)));
      auto other = model->make_workspace();
      CHECK(full_potential(*model, theta, *other) == u);
      CHECK(full_gradient(*model, theta, *other) == g);
    }
  }
}

TEST_CASE("pmf plugin: max_users keeps the users with the smallest ids, and test_size splits the rest") {
  test::TempDir dir;
  const auto path = quoted(dir.write("u.data", tiny_udata));
  const auto two = build(fmt::format("data = {}\ntest_size = 0\nrank = 1\nmax_users = 2\n", path));
  CHECK(two->parameter_names() == std::vector<std::string>{"U.1.1", "U.2.1", "V.10.1", "V.20.1"});
  CHECK(two->num_items() == 3);
  const auto split = build(fmt::format("data = {}\ntest_size = 1\nrank = 1\n", path));
  CHECK(split->num_items() == 3);
  // Simulated data: 100,000 ratings with 10% held out by default.
  CHECK(build("rank = 1\n")->num_items() == 90'000);
}

TEST_CASE("pmf plugin: malformed input is an error naming file:line") {
  test::TempDir dir;
  const auto expect_error = [&](const std::string& text, const std::string& message) {
    const auto path = dir.write("bad.data", text);
    INFO(text);
    CHECK_THROWS_WITH(build(fmt::format("data = {}\n", quoted(path))), Contains(path.string() + ":" + message));
  };
  expect_error("1\t10\t4\n2\t10\t6\n", "2: rating 6 is outside the declared range [1, 5]");
  expect_error("1\t10\t4\n2\t10\t0.5\n", "2: rating 0.5 is outside");
  expect_error("1\t10\t4\n2\t10\tfour\n", "2: rating 'four' is not a number");
  expect_error("1\t10\t4\n2.5\t10\t3\n", "2: user id '2.5' is not a non-negative integer");
  expect_error("1\t10\t4\n2\tx7\t3\n", "2: item id 'x7' is not a non-negative integer");
  expect_error("1\t10\t4\n-2\t10\t3\n", "2: user id '-2' is not a non-negative integer");
  expect_error("1\t10\t4\n\n2\t10\t3\n", "2: empty line");
  expect_error("1\t10\t4\n2\t10\t3\n3\t10\n", "3: a short row of 2 fields");
  // The declared range is the user's: with rating_max = 10 the 6 is fine.
  const auto path = dir.write("wide.data", "1\t10\t4\n2\t10\t6\n");
  CHECK(build(fmt::format("data = {}\ntest_size = 0\nrating_max = 10\n", quoted(path)))->num_items() == 2);
  CHECK_THROWS_WITH(build(fmt::format("data = {}\nusers = 5\n", quoted(path))), Contains("model.users"));
  CHECK_THROWS_WITH(build("users = 3\nitems = 3\nratings = 6\n"), Contains("model.ratings"));
}

TEST_CASE("pmf plugin: NaN ratings, a mistaken first line and a BOM: errors naming file:line, or the data whole") {
  test::TempDir dir;
  const auto train = dir.write("train.data", tiny_udata);
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("nan.data", "1\t10\t4\n2\t10\tnan\n")))),
                    Contains("nan.data:2: rating 'nan'"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_data = {}\n", quoted(train), quoted(dir.write("test.data", "1\t10\tinf\n")))),
                    Contains("test.data:1: rating 'inf'"));
  // Only a line non-numeric in every field is a header; a typo in the first user id is an error.
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("typo.data", "x1\t10\t4\n2\t10\t3\n")))),
                    Contains("typo.data:1: user id 'x1' is not a non-negative integer"));
  CHECK(build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("bom.data", "\xEF\xBB\xBF" "1\t10\t4\n2\t10\t3\n"))))
            ->num_items() == 2);
}
