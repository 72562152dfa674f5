// The SDK's automatic differentiation (sgmcmc/autodiff.hpp), through a plugin loaded from disk:
// the logistic model written as two templates (tests/fixtures/autodiff_logistic.cpp) against the
// hand-written `logistic` plugin on the same file, and check-model's checks on it (finite
// differences, per-item against batch gradients, and the same gradients from 4 threads at once,
// each with its own tape).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"
#include "model_support.hpp"

namespace {

using test::quoted;

const sgmcmc::LoadedPlugin& autodiff_logistic() {
  static const sgmcmc::LoadedPlugin plugin =
      sgmcmc::load_plugin_file(std::filesystem::path(SGMCMC_FIXTURE_PLUGIN_DIR) / "sgmcmc-model-autodiff_logistic.so");
  return plugin;
}

/// Largest |a_k - b_k| over the largest |b_k|: agreement to rounding is ~1e-15 for these sums.
double relative_difference(std::span<const double> a, std::span<const double> b) {
  double difference = 0.0, scale = 1e-300;
  for (std::size_t k = 0; k < a.size(); ++k) {
    difference = std::max(difference, std::abs(a[k] - b[k]));
    scale = std::max(scale, std::abs(b[k]));
  }
  return difference / scale;
}

/// `rows` rows of `features` features uniform on [-1, 1] after a label in {-1, +1}.
std::string random_labelled_csv(std::size_t rows, std::size_t features, std::uint64_t seed) {
  sgmcmc::Rng rng(seed, 0);
  std::string text;
  for (std::size_t i = 0; i < rows; ++i) {
    text += rng.uniform() < 0.4 ? "1" : "-1";
    for (std::size_t j = 0; j < features; ++j) text += fmt::format(",{:.17g}", 2.0 * rng.uniform() - 1.0);
    text += "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("autodiff: logistic regression as two templates gives the hand-written logistic plugin's potentials and "
          "gradients to rounding") {
  // 300 rows, 6 features and the intercept, Laplace prior of scale 0.7, three points β ~ N(0, 4 I):
  // prior and data potentials, the full gradient, a weighted batch gradient and every per-item
  // gradient, each within 1e-13 of the hand-written plugin's, relative to its largest value.
  test::TempDir dir;
  const auto keys = fmt::format("data = {}\nprior_scale = 0.7\n", quoted(dir.write("rows.csv", random_labelled_csv(300, 6, 7))));
  auto config = sgmcmc::parse_config("[model]\n" + keys, "test.toml");
  sgmcmc::SectionReads reads;
  const auto derived = autodiff_logistic().create({sgmcmc::SectionReader(config["model"], reads), 1});
  sgmcmc::reject_unknown_keys(config["model"], reads);
  const auto logistic = test::build_model("logistic", keys + "test_size = 0\n");
  REQUIRE(derived->dimension() == logistic->dimension());
  REQUIRE(derived->num_items() == logistic->num_items());
  CHECK(derived->parameter_names() == logistic->parameter_names());
  const std::size_t d = derived->dimension(), n = derived->num_items();
  auto workspace = derived->make_workspace(), logistic_workspace = logistic->make_workspace();

  const std::vector<std::size_t> batch_items{4, 17, 17, 250, 0, 299};
  const std::vector<double> weights{1.5, 0.25, 2.0, 3.0, 0.5, 1.0};
  const sgmcmc::Batch batch{batch_items, weights};
  sgmcmc::Rng rng(3, 0), unused(0, 0);
  for (int point = 0; point < 3; ++point) {
    std::vector<double> beta(d);
    for (double& b : beta) b = 2.0 * rng.normal();
    const std::vector<double> prior{derived->prior_potential(beta)}, logistic_prior{logistic->prior_potential(beta)};
    CHECK(relative_difference(prior, logistic_prior) < 1e-13);
    const std::vector<double> u{test::full_potential(*derived, beta)}, logistic_u{test::full_potential(*logistic, beta)};
    CHECK(relative_difference(u, logistic_u) < 1e-13);
    const auto g = test::full_gradient(*derived, beta, *workspace);
    const auto logistic_g = test::full_gradient(*logistic, beta, *logistic_workspace);
    CHECK(relative_difference(g, logistic_g) < 1e-13);

    std::vector<double> weighted(d, 0.0), logistic_weighted(d, 0.0);
    derived->add_data_gradient(beta, batch, weighted, *workspace, unused);
    logistic->add_data_gradient(beta, batch, logistic_weighted, *logistic_workspace, unused);
    CHECK(relative_difference(weighted, logistic_weighted) < 1e-13);

    const auto every = sgmcmc::every_item(*derived);
    std::vector<double> items(n * d), logistic_items(n * d);
    derived->item_gradients(beta, every, items, *workspace);
    logistic->item_gradients(beta, every, logistic_items, *logistic_workspace);
    for (std::size_t i = 0; i < n; ++i)
      CHECK(relative_difference(std::span(items).subspan(i * d, d), std::span(logistic_items).subspan(i * d, d)) < 1e-13);
  }
}

TEST_CASE("autodiff: check-model passes the derived model, per-item gradients and 4 threads included") {
  test::TempDir dir;
  auto config = sgmcmc::parse_config(
      fmt::format("[model]\ndata = {}\n", quoted(dir.write("rows.csv", random_labelled_csv(200, 4, 11)))), "test.toml");
  const auto outcomes = sgmcmc::check_model(
      [](sgmcmc::SectionReader settings, std::uint64_t seed) { return autodiff_logistic().create({settings, seed}); },
      config["model"]);
  std::vector<std::string> passed;
  for (const auto& outcome : outcomes) {
    INFO(outcome.name << ": " << outcome.detail);
    CHECK(outcome.status != sgmcmc::CheckOutcome::Status::failed);
    if (outcome.status == sgmcmc::CheckOutcome::Status::passed) passed.push_back(outcome.name);
  }
  for (const std::string check : {"prior gradient matches finite differences (point 1)",
                                  "batch gradient matches finite differences of the batch potential (point 1)",
                                  "thread safety: 4 workspaces in 4 threads agree with one"}) {
    INFO(check);
    CHECK(std::ranges::find(passed, check) != passed.end());
  }
  CHECK(std::ranges::any_of(passed, [](const std::string& name) { return name.starts_with("per-item gradients"); }));
}
