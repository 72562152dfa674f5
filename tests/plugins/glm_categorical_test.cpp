// glm's family `categorical` (multinomial logit, the last class the reference): check-model; with
// K = 2 it is bernoulli-logit with the labels flipped (class 0 ↔ +1), to rounding, at random θ;
// labels outside 0..K-1 or not whole are refused naming file and line.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"
#include "model_support.hpp"

using Catch::Matchers::Contains;

namespace {

using test::full_potential;
using test::quoted;

bool close(double a, double b, double tolerance) {
  return std::abs(a - b) <= tolerance * std::max({std::abs(a), std::abs(b), 1e-300});
}

/// `rows` rows of `features` features uniform on [-1, 1] with labels 0/1; `flip` writes 1 - label.
std::string binary_csv(std::size_t rows, std::size_t features, bool flip) {
  sgmcmc::Rng rng(11, 0);
  std::string text;
  for (std::size_t i = 0; i < rows; ++i) {
    const int label = rng.uniform() < 0.4 ? 1 : 0;
    text += std::to_string(flip ? 1 - label : label);
    for (std::size_t j = 0; j < features; ++j) text += fmt::format(",{:.17g}", 2.0 * rng.uniform() - 1.0);
    text += "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("glm plugin: check-model passes for family categorical") {
  // Finite differences, per-item against batch gradients, Lipschitz bounds (Böhning 1992), the
  // simulation, threads and checkpoints; with K = 3 simulated, K = 4 given, float storage, no intercept.
  for (const char* keys : {"", " --set model.classes=4 --set model.storage=float",
                           " --set model.intercept=false --set model.prior=student_t"}) {
    const auto checked = test::run_cli(std::string("check-model glm --set model.family=categorical --set model.n=300") + keys);
    INFO(checked.output);
    CHECK(checked.exit_code == 0);
    CHECK_THAT(checked.output, Contains("0 failed") && !Contains("FAIL"));
    CHECK_THAT(checked.output, Contains("PASS  Lipschitz bounds") && Contains("PASS  per-item gradients"));
  }
}

TEST_CASE("glm plugin: categorical with two classes is bernoulli-logit with the labels flipped") {
  // With K = 2 and class 1 the reference, p(y = 0 | x) = e^z/(1 + e^z) = σ(z), z = xᵀβ_0:
  // bernoulli-logit's p(y = +1 | x) = σ(xᵀβ). So the categorical model on labels y and the
  // bernoulli one on labels 1 - y (0/1 coding: 1 ↦ +1) have the same U, ∇U, per-item gradients,
  // Lipschitz bounds (¼‖x‖² both: Böhning's ½(1 - 1/K) at K = 2) and held-out metric.
  test::TempDir dir;
  const auto categorical_file = quoted(dir.write("classes.csv", binary_csv(200, 4, false)));
  const auto bernoulli_file = quoted(dir.write("flipped.csv", binary_csv(200, 4, true)));
  const std::string common = "test_size = 20\nprior = \"normal\"\nprior_scale = 1.5\n";
  const auto categorical =
      test::build_model("glm", fmt::format("family = \"categorical\"\ndata = {}\n{}", categorical_file, common));
  const auto bernoulli = test::build_model(
      "glm", fmt::format("family = \"bernoulli\"\nlabels = \"0/1\"\ndata = {}\n{}", bernoulli_file, common));
  REQUIRE(categorical->dimension() == bernoulli->dimension());
  REQUIRE(categorical->num_items() == bernoulli->num_items());
  CHECK(categorical->parameter_names() ==
        std::vector<std::string>{"intercept.0", "beta.0.1", "beta.0.2", "beta.0.3", "beta.0.4"});
  const std::size_t d = categorical->dimension(), n = categorical->num_items();

  sgmcmc::Rng rng(5, 0);
  for (int point = 0; point < 3; ++point) {
    std::vector<double> theta(d);
    for (double& b : theta) b = 1.5 * rng.normal();
    CHECK(close(full_potential(*categorical, theta), full_potential(*bernoulli, theta), 1e-12));
    auto cw = categorical->make_workspace(), bw = bernoulli->make_workspace();
    const auto g = test::full_gradient(*categorical, theta, *cw), b = test::full_gradient(*bernoulli, theta, *bw);
    for (std::size_t j = 0; j < d; ++j) CHECK(close(g[j], b[j], 1e-12));
    const auto every = sgmcmc::every_item(*categorical);
    std::vector<double> categorical_items(n * d), bernoulli_items(n * d);
    categorical->item_gradients(theta, every, categorical_items, *cw);
    bernoulli->item_gradients(theta, every, bernoulli_items, *bw);
    for (std::size_t k = 0; k < n * d; ++k) CHECK(std::abs(categorical_items[k] - bernoulli_items[k]) < 1e-13);
    std::vector<double> cm(1), bm(1);
    categorical->evaluate_metrics(theta, *cw, cm);
    bernoulli->evaluate_metrics(theta, *bw, bm);
    CHECK(close(cm[0], bm[0], 1e-12));
  }
  std::vector<double> categorical_bounds(n), bernoulli_bounds(n);
  categorical->item_lipschitz_bounds(categorical_bounds);
  bernoulli->item_lipschitz_bounds(bernoulli_bounds);
  for (std::size_t i = 0; i < n; ++i) CHECK(close(categorical_bounds[i], bernoulli_bounds[i], 1e-12));
}

TEST_CASE("glm plugin: categorical labels outside 0..K-1 or not whole are refused naming file and line") {
  test::TempDir dir;
  const auto build = [&](const std::string& csv, const std::string& more = "") {
    return test::build_model("glm", fmt::format("family = \"categorical\"\ndata = {}\ntest_size = 0\n{}",
                                                quoted(dir.write("labels.csv", csv)), more));
  };
  const std::string file = (dir.path() / "labels.csv").string();
  CHECK_THROWS_WITH(build("0,0.5\n1,1\n1.5,0\n2,1\n"),
                    Contains(file + ":3") && Contains("label 1.5 is not a class") && Contains("0, 1, ..., K-1"));
  CHECK_THROWS_WITH(build("0,0.5\n-1,1\n2,1\n"), Contains(file + ":2") && Contains("label -1 is not a class"));
  CHECK_THROWS_WITH(build("0,0.5\n1,1\n3,1\n", "classes = 3\n"),
                    Contains(file + ":3") && Contains("label 3 is not a class") && Contains("0, 1, ..., 2 (3 classes, model.classes)"));
  CHECK_THROWS_WITH(build("1,0.5\n1,1\n", "labels = \"1..K\"\n"), Contains("at least two classes"));
  CHECK_THROWS_WITH(build("0,0.5\n1,1\n", "labels = \"1..K\"\n"), Contains(file + ":1") && Contains("label 0 is not a class") &&
                                                                  Contains("1, 2, ..., K"));
  CHECK_THROWS_WITH(build("0,0.5\n1,1\n", "link = \"probit\"\n"), Contains("model.link") && Contains("expected logit"));
  // The classes named by their labels; the last one (here 3 of 1..3) is the reference.
  const auto one_based = build("1,0.5\n3,1\n2,0\n", "labels = \"1..K\"\nintercept = false\n");
  CHECK(one_based->parameter_names() == std::vector<std::string>{"beta.1.1", "beta.2.1"});
}
