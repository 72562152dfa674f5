// The gaussian plugin, loaded from disk: its potential, gradients and capabilities against
// finite differences and the closed-form posterior; its data-file errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "gaussian_fixture.hpp"

using Catch::Matchers::Contains;

namespace {

std::vector<std::size_t> all_items(const sgmcmc::Model& model) {
  std::vector<std::size_t> items(model.num_items());
  std::iota(items.begin(), items.end(), std::size_t{0});
  return items;
}

double potential(const sgmcmc::Model& model, std::span<const double> theta, sgmcmc::Workspace& workspace) {
  const auto items = all_items(model);
  return model.prior_potential(theta) + model.data_potential(theta, {items}, workspace);
}

std::vector<double> exact_gradient(const sgmcmc::Model& model, std::span<const double> theta, sgmcmc::Workspace& workspace) {
  const auto items = all_items(model);
  std::vector<double> gradient(model.dimension(), 0.0);
  sgmcmc::Rng unused(0, 0);
  model.add_data_gradient(theta, {items}, gradient, workspace, unused);
  model.add_prior_gradient(theta, gradient);
  return gradient;
}

}  // namespace

TEST_CASE("gaussian plugin: gradient of U matches central finite differences at random θ") {
  // U is quadratic, so central differences are exact but for rounding: with |U| ≲ 1e4 and
  // h = 1e-4 the rounding error is about 1e-16·1e4/1e-4 = 1e-8; the tolerance is 1e-5 absolute
  // plus 1e-7 relative, far below any real error (a wrong sign or a missing 1/σ² is O(1)).
  test::GaussianFixture fixture(40, 3);
  const auto& model = *fixture.model;
  auto workspace = model.make_workspace();
  sgmcmc::Rng rng(11, 0);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<double> theta(3);
    for (double& t : theta) t = 2.0 * rng.normal();
    const auto gradient = exact_gradient(model, theta, *workspace);
    for (std::size_t j = 0; j < theta.size(); ++j) {
      const double h = 1e-4;
      auto plus = theta, minus = theta;
      plus[j] += h;
      minus[j] -= h;
      const double difference = (potential(model, plus, *workspace) - potential(model, minus, *workspace)) / (2 * h);
      CHECK(gradient[j] == Approx(difference).epsilon(1e-7).margin(1e-5));
    }
  }
}

TEST_CASE("gaussian plugin: the posterior is the closed form N(μ, A⁻¹)") {
  // ∇U(μ) = 0 and the Hessian of U is A: central differences of the (linear) gradient are exact
  // up to rounding (|∇U| ≲ 1e3 at h = 1: error ≈ 1e-13); tolerance 1e-8 relative to A's scale.
  test::GaussianFixture fixture(40, 3);
  const auto& model = *fixture.model;
  auto workspace = model.make_workspace();
  const std::vector<double> mu(fixture.mean.begin(), fixture.mean.end());
  for (double g : exact_gradient(model, mu, *workspace)) CHECK(std::abs(g) < 1e-9 * fixture.precision(0, 0));
  for (std::size_t j = 0; j < 3; ++j) {
    auto plus = mu, minus = mu;
    plus[j] += 1.0;
    minus[j] -= 1.0;
    const auto g_plus = exact_gradient(model, plus, *workspace), g_minus = exact_gradient(model, minus, *workspace);
    for (std::size_t k = 0; k < 3; ++k)
      CHECK((g_plus[k] - g_minus[k]) / 2.0 == Approx(fixture.precision(k, j)).epsilon(1e-8));
  }
}

TEST_CASE("gaussian plugin: batch gradient = Σ per-item gradients = GLM form, and weights scale items") {
  test::GaussianFixture fixture(30, 2);
  const auto& model = *fixture.model;
  auto workspace = model.make_workspace();
  sgmcmc::Rng rng(3, 0);
  const std::vector<double> theta{0.3, -1.2};
  const std::vector<std::size_t> items{4, 9, 9, 17};
  const std::vector<double> weights{1.0, 0.5, 2.0, -1.0};

  std::vector<double> weighted(2, 0.0), per_item(items.size() * 2), scalars(items.size()), glm(2, 0.0), sum(2, 0.0);
  model.add_data_gradient(theta, {items, weights}, weighted, *workspace, rng);
  model.item_gradients(theta, items, per_item, *workspace);
  model.glm_scalars(theta, items, scalars, *workspace);
  std::vector<double> scaled(items.size());
  for (std::size_t k = 0; k < items.size(); ++k) scaled[k] = weights[k] * scalars[k];
  model.add_scaled_features(items, scaled, glm);
  for (std::size_t k = 0; k < items.size(); ++k)
    for (std::size_t j = 0; j < 2; ++j) sum[j] += weights[k] * per_item[k * 2 + j];
  for (std::size_t j = 0; j < 2; ++j) {
    CHECK(weighted[j] == Approx(sum[j]).epsilon(1e-12));
    CHECK(weighted[j] == Approx(glm[j]).epsilon(1e-12));
  }
  // Σ_k w_k f_k equals the weighted sum of single-item potentials.
  double single_sum = 0.0;
  for (std::size_t k = 0; k < items.size(); ++k)
    single_sum += weights[k] * model.data_potential(theta, {std::span(items).subspan(k, 1)}, *workspace);
  CHECK(model.data_potential(theta, {items, weights}, *workspace) == Approx(single_sum).epsilon(1e-12));
}

TEST_CASE("gaussian plugin: data-file errors name the file, line, column or key") {
  test::TempDir dir;
  const auto plugin = sgmcmc::load_plugin_file(test::gaussian_plugin_path);
  const auto build = [&](const std::string& toml) {
    auto config = sgmcmc::parse_config(toml, "t.toml");
    return plugin.create({sgmcmc::SectionReader(config["model"]), 1});
  };
  const auto bad = dir.write("bad.csv", "1,2\n3,4e\n");
  CHECK_THROWS_WITH(build("[model]\ndata = \"" + bad.string() + "\"\n"), Contains("bad.csv:2:3: '4e' is not a number"));
  const auto ragged = dir.write("ragged.csv", "1,2,3\n3,4\n");
  CHECK_THROWS_WITH(build("[model]\ndata = \"" + ragged.string() + "\"\n"), Contains("ragged.csv:2: 2 fields, expected 3"));
  const auto narrow = dir.write("narrow.csv", "1\n2\n");
  CHECK_THROWS_WITH(build("[model]\ndata = \"" + narrow.string() + "\"\n"), Contains("narrow.csv: 1 column(s)"));
  const auto good = dir.write("good.csv", "1,2,3\n4,5,6\n7,8,9\n");
  CHECK_THROWS_WITH(build("[model]\ndim = 3\ntest_size = 0\ndata = \"" + good.string() + "\"\n"),
                    Contains("good.csv: 2 covariate columns, but t.toml:2: model.dim = 3"));
  CHECK_THROWS_WITH(build("[model]\ndata = \"" + (dir.path() / "nope.csv").string() + "\"\n"), Contains("nope.csv: cannot open"));
  CHECK_THROWS_WITH(build("[model]\nnoise_sd = 0\n"), Contains("model.noise_sd: expected a number > 0"));
}

TEST_CASE("gaussian plugin: simulated data and the split are reproducible by seed") {
  const auto plugin = sgmcmc::load_plugin_file(test::gaussian_plugin_path);
  auto config = sgmcmc::parse_config("[model]\nn = 50\ndim = 2\ntest_size = 10\n", "s.toml");
  const auto a = plugin.create({sgmcmc::SectionReader(config["model"]), 4}), b = plugin.create({sgmcmc::SectionReader(config["model"]), 4}), c = plugin.create({sgmcmc::SectionReader(config["model"]), 5});
  CHECK(a->num_items() == 40);
  auto wa = a->make_workspace(), wb = b->make_workspace(), wc = c->make_workspace();
  const std::vector<double> theta{0.1, 0.2};
  std::vector<double> ma(1), mb(1), mc(1);
  a->evaluate_metrics(theta, *wa, ma);
  b->evaluate_metrics(theta, *wb, mb);
  c->evaluate_metrics(theta, *wc, mc);
  CHECK(ma[0] == mb[0]);
  CHECK(ma[0] != mc[0]);
}

TEST_CASE("gaussian plugin: held_out_log_density is one draw's mean held-out log N(y*, x*ᵀβ, σ²)") {
  // Every row (y, x) = (1, 2, -1), so whichever 3 of 10 rows the split holds out, the quantity at
  // β = (0.5, 0.25) is log N(1; 0.75, 0.5²) = -log 0.5 - ½log 2π - ½(0.25/0.5)², by hand.
  test::TempDir dir;
  std::string csv;
  for (int row = 0; row < 10; ++row) csv += "1,2,-1\n";
  const auto path = dir.write("rows.csv", csv);
  const auto plugin = sgmcmc::load_plugin_file(test::gaussian_plugin_path);
  const auto make = [&](const std::string& test_size) {
    auto config = sgmcmc::parse_config(fmt::format("[model]\ndata = \"{}\"\ntest_size = {}\nnoise_sd = 0.5\n", path.string(), test_size),
                                       "q.toml");
    return plugin.create({sgmcmc::SectionReader(config["model"]), 1});
  };
  const auto model = make("3");
  REQUIRE(model->quantity_names() == std::vector<std::string>{"held_out_log_density"});
  auto workspace = model->make_workspace();
  const std::vector<double> beta{0.5, 0.25};
  std::vector<double> out(1);
  model->evaluate_quantities(beta, *workspace, out);
  CHECK(out[0] == Approx(-std::log(0.5) - 0.5 * std::log(2 * M_PI) - 0.5 * 0.25).epsilon(1e-14));
  CHECK(make("0")->quantity_names().empty());  // nothing held out, no quantity
}

TEST_CASE("gaussian plugin: NaN, infinities and a mistaken first line are input errors, a BOM is not data") {
  test::TempDir dir;
  const auto plugin = sgmcmc::load_plugin_file(test::gaussian_plugin_path);
  const auto build = [&](const std::filesystem::path& data) {
    auto config = sgmcmc::parse_config("[model]\ntest_size = 0\ndata = \"" + data.string() + "\"\n", "t.toml");
    return plugin.create({sgmcmc::SectionReader(config["model"]), 1});
  };
  CHECK_THROWS_WITH(build(dir.write("nan.csv", "1,2\n3,nan\n")), Contains("nan.csv:2:3: 'nan' is not a finite number"));
  CHECK_THROWS_WITH(build(dir.write("inf.csv", "1,2\ninf,4\n")), Contains("inf.csv:2:1: 'inf' is not a finite number"));
  CHECK_THROWS_WITH(build(dir.write("typo.csv", "1,0.2x\n3,4\n5,6\n")), Contains("typo.csv:1:3: '0.2x' is not a number"));
  CHECK(build(dir.write("bom.csv", "\xEF\xBB\xBF" "1,2\n3,4\n5,6\n"))->num_items() == 3);
}
