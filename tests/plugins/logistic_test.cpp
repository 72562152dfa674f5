// The logistic plugin, loaded from disk: its potential against a hand computation, its gradients
// against finite differences, its data readers on every format (LIBSVM and CSV, gzip or plain,
// header, CRLF, each label coding) and on each malformed input.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"
#include "model_support.hpp"

using Catch::Matchers::Contains;

namespace {

std::shared_ptr<const sgmcmc::Model> build(const std::string& model_lines, std::uint64_t seed = 1) {
  return test::build_model("logistic", model_lines, seed);
}

using test::full_potential;
using test::quoted;
using test::write_gzip;

std::vector<double> full_gradient(const sgmcmc::Model& model, std::span<const double> beta) {
  auto workspace = model.make_workspace();
  const auto every = sgmcmc::every_item(model);
  std::vector<double> gradient(model.dimension(), 0.0);
  sgmcmc::Rng unused(0, 0);
  model.add_data_gradient(beta, {every}, gradient, *workspace, unused);
  model.add_prior_gradient(beta, gradient);
  return gradient;
}

// Three rows, two features, in every format the plugin reads. Row 3 has a zero feature, which
// LIBSVM omits.
const std::string tiny_csv_01 = "1,0.5,-1.0\n0,2.0,0.25\n1,-1.5,0\n";
const std::string tiny_csv_12_header_crlf = "label,elevation,slope\r\n2,0.5,-1.0\r\n1,2.0,0.25\r\n2,-1.5,0\r\n";
const std::string tiny_libsvm_pm = "+1 1:0.5 2:-1.0\n-1 1:2.0 2:0.25\n+1 1:-1.5\n";
const std::vector<double> tiny_beta{0.3, -0.7, 1.2};  // intercept, beta.1, beta.2

}  // namespace

TEST_CASE("logistic plugin: U of a hand-computed three-row data set") {
  // z = β0 + β1 x1 + β2 x2:  row 1: 0.3 - 0.35 - 1.2 = -1.25 (y = +1), row 2: 0.3 - 1.4 + 0.3 = -0.8
  // (y = -1), row 3: 0.3 + 1.05 = 1.35 (y = +1). f_i = log(1 + exp(-y z)):
  // log(1+e^1.25) = 1.501929081345373, log(1+e^-0.8) = 0.3711006659477777,
  // log(1+e^-1.35) = 0.23050857136387537 (Python's math.log1p(math.exp(t))); sum 2.103538318657026.
  // Laplace prior of scale 2: (0.3 + 0.7 + 1.2)/2 = 1.1. U = 3.203538318657026.
  test::TempDir dir;
  const auto model = build(fmt::format("data = {}\ntest_size = 0\nprior_scale = 2.0\n", quoted(dir.write("d.csv", tiny_csv_01))));
  REQUIRE(model->num_items() == 3);
  REQUIRE(model->dimension() == 3);
  CHECK(model->parameter_names() == std::vector<std::string>{"intercept", "beta.1", "beta.2"});
  CHECK(full_potential(*model, tiny_beta) == Approx(3.203538318657026).epsilon(1e-14));
  auto workspace = model->make_workspace();
  const std::vector<std::size_t> second{1};
  CHECK(model->data_potential(tiny_beta, {second}, *workspace) == Approx(0.3711006659477777).epsilon(1e-14));
}

TEST_CASE("logistic plugin: every format and label coding reads as the same data") {
  // The same three rows as LIBSVM (+1/-1 labels, zero omitted), CSV (0/1), CSV with a header and
  // CRLF line ends (1/2), and each of them gzip-compressed, give the same U and ∇U bit for bit.
  test::TempDir dir;
  const auto reference = build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("a.csv", tiny_csv_01))));
  const double u = full_potential(*reference, tiny_beta);
  const auto g = full_gradient(*reference, tiny_beta);
  for (const auto& [name, text] : {std::pair{"b.csv", tiny_csv_12_header_crlf}, std::pair{"c.libsvm", tiny_libsvm_pm},
                                   std::pair{"d.csv", tiny_csv_01}}) {
    for (bool compressed : {false, true}) {
      const auto path = test::write_data_file(dir.path(), name, text, compressed);
      INFO(path.filename().string());
      const auto model = build(fmt::format("data = {}\ntest_size = 0\n", quoted(path)));
      CHECK(full_potential(*model, tiny_beta) == u);
      CHECK(full_gradient(*model, tiny_beta) == g);
    }
  }
}

TEST_CASE("logistic plugin: gradient of U matches central finite differences away from β = 0") {
  // On 200 simulated rows (54 features), at β with every |β_j| ≥ 0.05 so that |β_j| stays away from
  // the kink of the Laplace prior. The data term is smooth: with h = 1e-5 the central difference
  // has truncation error h²/6·|∂³U| ≲ 1e-10·200 and rounding error ε·|U|/h ≈ 1e-16·300/1e-5 = 3e-9,
  // so 1e-6 absolute (plus 1e-6 relative) would still catch a wrong sign, scale or missing row,
  // which are O(1).
  const auto model = build("n = 200\ntest_size = 0\n", 7);
  REQUIRE(model->dimension() == 55);
  sgmcmc::Rng rng(3, 0);
  std::vector<double> beta(model->dimension());
  for (double& b : beta) b = (rng.uniform() < 0.5 ? -1.0 : 1.0) * (0.05 + rng.uniform());
  const auto gradient = full_gradient(*model, beta);
  for (std::size_t j = 0; j < beta.size(); ++j) {
    const double h = 1e-5;
    auto plus = beta, minus = beta;
    plus[j] += h;
    minus[j] -= h;
    const double difference = (full_potential(*model, plus) - full_potential(*model, minus)) / (2 * h);
    INFO("coordinate " << j);
    CHECK(gradient[j] == Approx(difference).epsilon(1e-6).margin(1e-6));
  }
}

TEST_CASE("logistic plugin: the GLM form, per-item gradients and weighted batches agree with the gradient") {
  // ∇f_i = s_i x_i: Σ_k s_k x_k from glm_scalars + add_scaled_features, the rows of
  // item_gradients summed, and add_data_gradient with weights w all give Σ_k w_k ∇f_k.
  const auto model = build("n = 300\ntest_size = 0\n", 5);
  const std::size_t d = model->dimension();
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(4, 0);
  std::vector<double> beta(d);
  rng.fill_normal(beta);
  const std::vector<std::size_t> items{3, 17, 17, 250, 0};
  const std::vector<double> weights{1.0, 2.0, 0.5, 3.0, 1.5};
  std::vector<double> weighted(d, 0.0), from_glm(d, 0.0), from_rows(d, 0.0), scalars(items.size());
  model->add_data_gradient(beta, {items, weights}, weighted, *workspace, rng);
  model->glm_scalars(beta, items, scalars, *workspace);
  for (std::size_t k = 0; k < items.size(); ++k) scalars[k] *= weights[k];
  model->add_scaled_features(items, scalars, from_glm);
  std::vector<double> rows(items.size() * d);
  model->item_gradients(beta, items, rows, *workspace);
  for (std::size_t k = 0; k < items.size(); ++k)
    for (std::size_t j = 0; j < d; ++j) from_rows[j] += weights[k] * rows[k * d + j];
  for (std::size_t j = 0; j < d; ++j) {
    CHECK(from_glm[j] == Approx(weighted[j]).epsilon(1e-12).margin(1e-12));
    CHECK(from_rows[j] == Approx(weighted[j]).epsilon(1e-12).margin(1e-12));
  }
  // The Lipschitz bound ‖x_i‖²/4 of ∇f_i is at least the bound of the intercept alone.
  std::vector<double> bounds(model->num_items());
  model->item_lipschitz_bounds(bounds);
  for (double bound : bounds) CHECK(bound >= 0.25);
}

TEST_CASE("logistic plugin: simulated data has cover type's shape and splits by test_size and subsample") {
  const auto model = build("n = 1000\ntest_size = 100\nsubsample = 0.5\n");
  CHECK(model->dimension() == 55);      // 54 features and the intercept
  CHECK(model->num_items() == 450);     // half of the 900 training rows
  CHECK(model->metric_names() == std::vector<std::string>{"log_predictive_density"});
  CHECK(build("n = 1000\ntest_size = 0.25\n")->num_items() == 750);
  CHECK(build("n = 1000\ntest_size = 0\n")->metric_names().empty());  // no test set, no metric
}

TEST_CASE("logistic plugin: the held-out log predictive density at β = 0 is log(1/2)") {
  // p(y | x, 0) = σ(0) = 1/2 for every test point, whatever the draws: the running average stays
  // log(1/2), and so does the one-draw quantity, up to the few ulps of rounding in log-sum-exp
  // (hence 1e-13 relative; a wrong normalisation by the draw count would be off by log 2 or more).
  const auto model = build("n = 500\ntest_size = 50\n");
  auto workspace = model->make_workspace();
  const std::vector<double> zero(model->dimension(), 0.0);
  std::vector<double> out(1);
  for (int draw = 0; draw < 3; ++draw) {
    model->evaluate_metrics(zero, *workspace, out);
    CHECK(out[0] == Approx(std::log(0.5)).epsilon(1e-13));
  }
  model->evaluate_quantities(zero, *workspace, out);
  CHECK(out[0] == Approx(std::log(0.5)).epsilon(1e-15));
}

TEST_CASE("logistic plugin: malformed data files are refused with file, line and reason") {
  test::TempDir dir;
  struct Case {
    const char* name;
    std::string text;
    std::string extra_keys;
    std::string message;
  };
  const std::vector<Case> cases{
      {"three.csv", "1,0.5\n3,0.1\n0,1\n", "", "three.csv:2: label 3 is not binary"},
      {"ones.csv", "1,0.5\n1,0.1\n", "", "every label is 1"},
      {"coding.csv", "1,0.5\n0,0.1\n", "labels = \"1/2\"\n", "coding.csv:2: label 0 does not belong to the coding 1/2"},
      {"short.csv", "1,0.5,2\n0,0.1\n", "", "short.csv:2: 2 fields, expected 3"},
      {"word.csv", "1,0.5\n0,abc\n", "", "word.csv:2:3: 'abc' is not a number"},
      {"zero.libsvm", "1 1:0.5\n-1 0:0.2\n", "", "zero.libsvm:2: feature index 0"},
      {"beyond.libsvm", "1 1:0.5\n-1 3:0.2\n", "features = 2\n", "beyond.libsvm:2: feature index 3 is beyond the declared model.features = 2"},
      {"order.libsvm", "1 2:0.5 1:0.3\n-1 1:0.2\n", "", "order.libsvm:1: feature index 1 after 2"},
      {"pair.libsvm", "1 1:0.5\n-1 x:0.2\n", "", "pair.libsvm:2: 'x:0.2' is not index:value"},
      {"empty.csv", "\n\n", "", "empty.csv: no data rows"},
      {"format.csv", "1,0.5\n0,0.1\n", "format = \"arff\"\n", "'arff' is not a data format"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const auto path = dir.write(c.name, c.text);
    CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n{}", quoted(path), c.extra_keys)), Contains(c.message));
  }
}

TEST_CASE("logistic plugin: a truncated gzip file, a mismatched test set and an empty subsample are refused") {
  test::TempDir dir;
  const auto whole = dir.path() / "whole.csv.gz";
  std::string many;
  for (int i = 0; i < 2000; ++i) many += fmt::format("{},{},{}\n", i % 2, 0.001 * i, -0.002 * i);
  write_gzip(whole, many);
  const std::string bytes = test::read_text(whole);
  const auto cut = dir.write("cut.csv.gz", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", quoted(cut))), Contains("is the gzip file truncated?"));

  const auto train = dir.write("train.csv", tiny_csv_01);
  const auto wide = dir.write("wide.csv", "1,0.5,-1.0,3\n0,2.0,0.25,4\n");
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_data = {}\n", quoted(train), quoted(wide))),
                    Contains("wide.csv has 3 features") && Contains("train.csv has 2"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\nsubsample = 0\n", quoted(train))),
                    Contains("model.subsample") && Contains("asks for 0 of the 3 rows; expected between 1 and 3"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 3\n", quoted(train))), Contains("model.test_size"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 1.5\n", quoted(train))), Contains("a fraction must lie in [0, 1]"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\nn = 10\n", quoted(train))), Contains("model.n"));
  // A LIBSVM test file whose last features happen to be zero everywhere is narrower; that is fine.
  const auto narrow = dir.write("narrow.libsvm", "+1 1:0.5\n-1 1:2.0\n");
  CHECK(build(fmt::format("data = {}\ntest_data = {}\n", quoted(train), quoted(narrow)))->metric_names().size() == 1);
}

TEST_CASE("logistic plugin: NaN and infinities in data or test data are input errors naming file:line") {
  test::TempDir dir;
  const auto train = dir.write("train.csv", tiny_csv_01);
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("nan.csv", "1,0.5\n0,nan\n")))),
                    Contains("nan.csv:2:3: 'nan' is not a finite number"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("nan.libsvm", "+1 1:0.5\n-1 1:nan\n")))),
                    Contains("nan.libsvm:2: '1:nan'") && Contains("not a finite number"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("inf.libsvm", "+1 1:0.5\ninf 1:2\n")))),
                    Contains("inf.libsvm:2: label 'inf' is not a finite number"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_data = {}\n", quoted(train), quoted(dir.write("test.csv", "1,0.5,1\n0,1,inf\n")))),
                    Contains("test.csv:2:5: 'inf' is not a finite number"));
  // A first line with a UTF-8 byte-order mark is data, not a header to drop.
  CHECK(build(fmt::format("data = {}\ntest_size = 0\n", quoted(dir.write("bom.csv", "\xEF\xBB\xBF" + tiny_csv_01))))->num_items() == 3);
}
