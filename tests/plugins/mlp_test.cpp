// The mlp plugin, loaded from disk: U, ∇U and the held-out quantities and metrics of a 2 → 2 → 3
// tanh network on three rows against a scalar computation written here; the start at Glorot/He
// scale; check-model for every activation and family, and each noise prior of a gaussian; with
// `layers = []` and a sampled noise sd, glm's gaussian to rounding; float storage against double;
// bad configuration refused naming the key.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support.hpp"
#include "model_support.hpp"
#include "targets.hpp"
#include "two_passes.hpp"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<const sgmcmc::Model> build(const std::string& model_lines, std::uint64_t seed = 1) {
  return test::build_model("mlp", model_lines, seed);
}

/// The 2 → 2 → 3 tanh network of θ (W1 2×2 row-major, b1, W2 2×3 row-major, b2) by scalar loops:
/// the log softmax probability of `label` at input (x1, x2).
double log_probability(std::span<const double> theta, double x1, double x2, int label) {
  double z[3];
  double h[2];
  for (int j = 0; j < 2; ++j) h[j] = std::tanh(x1 * theta[0 * 2 + j] + x2 * theta[1 * 2 + j] + theta[4 + j]);
  for (int c = 0; c < 3; ++c) z[c] = h[0] * theta[6 + 0 * 3 + c] + h[1] * theta[6 + 1 * 3 + c] + theta[12 + c];
  return z[label] - std::log(std::exp(z[0]) + std::exp(z[1]) + std::exp(z[2]));
}

}  // namespace

TEST_CASE("mlp plugin: U, its gradient and the held-out figures of a 2-2-3 tanh network are by hand") {
  // Rows (label, x1, x2); a normal prior of scale 2: U = Σ θ²/8 - Σ_i log p(y_i | x_i, θ).
  test::TempDir dir;
  const double train[3][3] = {{0, 0.5, -1}, {2, 1, 0.25}, {1, -0.5, 2}};
  const double held_out[2][3] = {{1, 0.3, 0.3}, {0, -1, 1}};
  const auto data = test::quoted(dir.write("train.csv", "0,0.5,-1\n2,1,0.25\n1,-0.5,2\n"));
  const auto test_data = test::quoted(dir.write("test.csv", "1,0.3,0.3\n0,-1,1\n"));
  const auto model = build(fmt::format("data = {}\ntest_data = {}\nlayers = [2]\nprior_scale = 2\n", data, test_data));
  REQUIRE(model->dimension() == 15);
  REQUIRE(model->num_items() == 3);
  CHECK(model->parameter_names()[1] == "w1.1.2");
  CHECK(model->parameter_names()[4] == "b1.1");
  CHECK(model->parameter_names()[14] == "b2.3");

  const auto by_hand = [&](std::span<const double> theta) {
    double u = 0.0;
    for (double t : theta) u += t * t / 8.0;
    for (const auto& row : train) u -= log_probability(theta, row[1], row[2], static_cast<int>(row[0]));
    return u;
  };
  std::vector<double> theta(15);
  for (std::size_t j = 0; j < theta.size(); ++j) theta[j] = 0.8 * std::sin(1.0 + static_cast<double>(j));
  CHECK(test::full_potential(*model, theta) == Approx(by_hand(theta)).epsilon(1e-13));

  // ∇U against central differences of the hand computation (step 1e-5: error ~1e-10).
  auto workspace = model->make_workspace();
  const auto gradient = test::full_gradient(*model, theta, *workspace);
  for (std::size_t j = 0; j < theta.size(); ++j) {
    auto up = theta, down = theta;
    up[j] += 1e-5;
    down[j] -= 1e-5;
    INFO("coordinate " << j);
    CHECK(gradient[j] == Approx((by_hand(up) - by_hand(down)) / 2e-5).epsilon(1e-8).margin(1e-9));
  }

  // Per-draw quantities: the mean held-out log density and the accuracy of the most probable class.
  REQUIRE(model->quantity_names() == std::vector<std::string>{"held_out_log_density", "held_out_accuracy"});
  const auto probabilities = [&](std::span<const double> at, const double* row) {
    std::vector<double> p(3);
    for (int c = 0; c < 3; ++c) p[c] = std::exp(log_probability(at, row[1], row[2], c));
    return p;
  };
  const auto most_probable = [](const std::vector<double>& p) { return std::max_element(p.begin(), p.end()) - p.begin(); };
  double log_density = 0.0, right = 0.0;
  for (const auto& row : held_out) {
    const auto p = probabilities(theta, row);
    log_density += std::log(p[static_cast<int>(row[0])]) / 2.0;
    right += most_probable(p) == static_cast<int>(row[0]) ? 0.5 : 0.0;
  }
  std::vector<double> quantities(2);
  model->evaluate_quantities(theta, *workspace, quantities);
  CHECK(quantities[0] == Approx(log_density).epsilon(1e-13));
  CHECK(quantities[1] == right);

  // Metrics over two draws: log of the mean of the two draws' probabilities, and the accuracy of
  // the class most probable under that mean.
  REQUIRE(model->metric_names() == std::vector<std::string>{"log_predictive_density", "accuracy", "ece"});
  std::vector<double> other(15);
  for (std::size_t j = 0; j < other.size(); ++j) other[j] = 1.5 * std::cos(2.0 + 3.0 * static_cast<double>(j));
  std::vector<double> metrics(3);
  model->evaluate_metrics(theta, *workspace, metrics);
  model->evaluate_metrics(other, *workspace, metrics);
  // The expected calibration error: test rows in 10 bins of their confidence (the top class's
  // mean probability), each bin's |accuracy - mean confidence| weighted by its share of the rows.
  double predictive = 0.0, mean_right = 0.0;
  std::vector<std::vector<std::pair<double, bool>>> bins(10);
  for (const auto& row : held_out) {
    auto p = probabilities(theta, row);
    const auto q = probabilities(other, row);
    for (int c = 0; c < 3; ++c) p[c] = (p[c] + q[c]) / 2.0;
    predictive += std::log(p[static_cast<int>(row[0])]) / 2.0;
    const bool right = most_probable(p) == static_cast<int>(row[0]);
    mean_right += right ? 0.5 : 0.0;
    const double confidence = *std::max_element(p.begin(), p.end());
    bins[std::min(9, static_cast<int>(confidence * 10))].push_back({confidence, right});
  }
  double ece = 0.0;
  for (const auto& bin : bins) {
    if (bin.empty()) continue;
    double confidence = 0.0, accuracy = 0.0;
    for (const auto& [c, right] : bin) {
      confidence += c / static_cast<double>(bin.size());
      accuracy += right ? 1.0 / static_cast<double>(bin.size()) : 0.0;
    }
    ece += static_cast<double>(bin.size()) / 2.0 * std::abs(accuracy - confidence);
  }
  CHECK(metrics[0] == Approx(predictive).epsilon(1e-12));
  CHECK(metrics[1] == mean_right);
  CHECK(metrics[2] == Approx(ece).epsilon(1e-12));
  CHECK(metrics[2] > 0.0);  // two rows, neither predicted with certainty: some miscalibration
}

TEST_CASE("mlp plugin: prior_scale may give each layer its own normal prior") {
  // layers = [2] on 2 features, 3 classes: W1, b1 (6 numbers) under N(0, 2²), W2, b2 (9) under
  // N(0, 0.5²): f_0 = Σ_{j<6} θ_j²/8 + Σ_{j≥6} θ_j²/0.5, ∇f_0 = θ_j/4 or θ_j/0.25.
  const auto model = build("features = 2\nclasses = 3\nn = 50\nlayers = [2]\nprior_scale = [2, 0.5]\n");
  REQUIRE(model->dimension() == 15);
  std::vector<double> theta(15), gradient(15, 0.0);
  double by_hand = 0.0;
  for (std::size_t j = 0; j < 15; ++j) {
    theta[j] = std::cos(0.7 * static_cast<double>(j));
    by_hand += theta[j] * theta[j] / (j < 6 ? 8.0 : 0.5);
  }
  CHECK(model->prior_potential(theta) == Approx(by_hand).epsilon(1e-14));
  model->add_prior_gradient(theta, gradient);
  for (std::size_t j = 0; j < 15; ++j) CHECK(gradient[j] == Approx(theta[j] / (j < 6 ? 4.0 : 0.25)).epsilon(1e-14));
  CHECK_THROWS_WITH(build("layers = [4]\nprior_scale = [1, 2, 3]\n"),
                    Contains("model.prior_scale") && Contains("3 scales for 2 layers"));
  CHECK_THROWS_WITH(build("prior_scale = [1, -2]\n"), Contains("model.prior_scale"));
}

TEST_CASE("mlp plugin: prior_scaling = fan_in gives layer l's weights sd s_l/sqrt(n_{l-1}), its biases s_l") {
  // 2 features → 3 hidden → 3 classes, prior_scale = [2, 0.5]: θ is W1 (2×3), b1 (3), W2 (3×3),
  // b2 (3). Variances by the definition: W1 2²/2 = 2, b1 2² = 4, W2 0.5²/3, b2 0.5²; so
  // f_0 = Σ_j θ_j²/(2 v_j) and ∂f_0/∂θ_j = θ_j/v_j. Without the scaling every W1 variance would
  // be 4 and every W2 variance 0.25, and both checks fail.
  const std::string keys = "features = 2\nclasses = 3\nn = 50\nlayers = [3]\nprior_scale = [2, 0.5]\n";
  const auto model = build(keys + "prior_scaling = \"fan_in\"\n");
  REQUIRE(model->dimension() == 21);
  const auto variance = [](std::size_t j) { return j < 6 ? 2.0 : j < 9 ? 4.0 : j < 18 ? 0.25 / 3 : 0.25; };
  std::vector<double> theta(21), gradient(21, 0.0);
  double by_hand = 0.0;
  for (std::size_t j = 0; j < 21; ++j) {
    theta[j] = std::cos(0.7 * static_cast<double>(j));
    by_hand += theta[j] * theta[j] / (2 * variance(j));
  }
  CHECK(model->prior_potential(theta) == Approx(by_hand).epsilon(1e-14));
  model->add_prior_gradient(theta, gradient);
  for (std::size_t j = 0; j < 21; ++j) {
    INFO("coordinate " << j);
    CHECK(gradient[j] == Approx(theta[j] / variance(j)).epsilon(1e-14));
  }
  // The default is no scaling: the same keys without it give every weight its layer's s_l².
  CHECK(build(keys)->prior_potential(theta) != Approx(by_hand).epsilon(1e-6));
  CHECK_THROWS_WITH(build("prior_scaling = \"fanin\"\n"), Contains("model.prior_scaling") && Contains("none") &&
                                                                   Contains("fan_in"));
  const auto checked = test::run_cli(
      "check-model mlp --set model.n=200 --set model.layers=[6,4] --set model.features=3 --set model.prior_scale=[2,0.5,1] "
      "--set model.prior_scaling=" + test::quoted("fan_in"));
  INFO(checked.output);
  CHECK(checked.exit_code == 0);
  CHECK_THAT(checked.output, Contains("0 failed") && !Contains("FAIL"));
}

TEST_CASE("mlp plugin: OBABO + MH with exact endpoints pays one fused full pass per block, and the same draws") {
  // N = 180 training rows (200 simulated, test_size 0.1), batch n = 10, K = 10, 100 iterations:
  // B = 10 blocks. Counted by hand: the first block's start takes ∇U(θ_0) and U(θ_0) in one full
  // pass; each block then makes K - 1 = 9 minibatch gradients (n items each) and, at its end,
  // ∇U(θ_K) and U(θ_K) in one full pass (N items). So B + 1 = 11 full passes and
  // N + B (9n + N) = 180 + 10 × 270 = 2,880 item gradients; with two passes at each end (the
  // code before the fusion) 22 and 4,860. The draws are those of the two-pass path bit for bit.
  const auto model = build("n = 200\nfeatures = 3\nlayers = [4]\n");
  REQUIRE(model->num_items() == 180);
  const std::string toml = "[estimator]\nbatch_size = 10\n[integrator]\nname = \"obabo\"\nstep_size = 0.001\n"
                           "[corrector]\nname = \"mh\"\nevery = 10\n";
  const auto fused = test::run_chain(model, toml, 100, 10);  // a draw at each block's end
  const auto separate = test::run_chain(std::make_shared<test::TwoPasses>(model), toml, 100, 10);
  CHECK(fused.result.cost.full_passes == 11);
  CHECK(fused.result.cost.item_gradients == 180 + 10 * (9 * 10 + 180));
  REQUIRE(fused.draws.rows.size() == 10);
  CHECK(fused.draws.rows == separate.draws.rows);
  std::size_t accepted = 0;
  for (const auto& decision : fused.draws.decisions) accepted += decision.accepted ? 1 : 0;
  CHECK(accepted > 0);  // the chain moved: equal draws are not those of a chain stuck at its start
}

TEST_CASE("mlp plugin: a chain starts at Glorot scale for tanh and He scale for relu, never at 0") {
  // 64 → 50 → 10: W1 has 3,200 entries drawn N(0, σ²). Their mean square estimates σ² with a
  // relative sd of √(2/3200) = 2.5%; 10% is four sd. Biases start at 0.
  for (const auto& [activation, variance] : {std::pair{"tanh", 2.0 / (64 + 50)}, std::pair{"relu", 2.0 / 64}}) {
    const auto model = build(fmt::format("features = 64\nclasses = 10\nn = 200\nactivation = \"{}\"\n", activation));
    REQUIRE(model->dimension() == 65 * 50 + 51 * 10);
    std::vector<double> theta(model->dimension()), again(model->dimension());
    sgmcmc::Rng rng(11, sgmcmc::chain_stream(0)), other(11, sgmcmc::chain_stream(1));
    model->initial_point(theta, rng);
    model->initial_point(again, other);
    double square = 0.0;
    for (std::size_t j = 0; j < 64 * 50; ++j) square += theta[j] * theta[j];
    INFO(activation);
    CHECK(square / (64 * 50) == Approx(variance).epsilon(0.1));
    CHECK(std::all_of(theta.begin() + 64 * 50, theta.begin() + 65 * 50, [](double b) { return b == 0.0; }));
    CHECK(theta != again);  // each chain draws its own start from its own stream
  }
}

TEST_CASE("mlp plugin: check-model passes for every activation and family") {
  // Gradients against finite differences, per-item gradients against the batch, simulation,
  // quantities, threads and checkpoints (the running predictive sums).
  for (const char* activation : {"tanh", "relu", "gelu"})
    for (const char* family : {"categorical", "bernoulli", "gaussian --set model.noise_sd=0.5"}) {
      const auto checked = test::run_cli(fmt::format(
          "check-model mlp --set model.n=200 --set model.layers=[6,4] --set model.features=3 --set model.activation={} "
          "--set model.family={}",
          test::quoted(activation), family));
      INFO(checked.output);
      CHECK(checked.exit_code == 0);
      CHECK_THAT(checked.output, Contains("0 failed") && !Contains("FAIL"));
      CHECK_THAT(checked.output, Contains("PASS  per-item gradients"));
    }
}

TEST_CASE("mlp plugin: check-model passes for a gaussian with its noise sd sampled under each noise prior") {
  for (const char* prior : {"half_normal --set model.noise_prior_scale=2", "half_cauchy",
                            "half_student_t --set model.noise_prior_df=4", "exponential --set model.noise_prior_scale=0.5",
                            "flat"}) {
    const auto checked = test::run_cli(fmt::format(
        "check-model mlp --set model.n=200 --set model.layers=[6,4] --set model.features=3 --set model.family=gaussian "
        "--set model.noise_prior={}",
        prior));
    INFO(checked.output);
    CHECK(checked.exit_code == 0);
    CHECK_THAT(checked.output, Contains("0 failed") && !Contains("FAIL"));
    CHECK_THAT(checked.output, Contains("PASS  per-item gradients"));
  }
}

TEST_CASE("mlp plugin: with no hidden layer a gaussian with a sampled noise sd is glm's gaussian to rounding") {
  // layers = [] is linear regression: z = xᵀw + b. mlp's θ = (w_1 .. w_F, b, u), glm's
  // (intercept, β_1 .. β_F, u); the same normal prior on every coefficient and the same noise
  // prior on u = log σ, so U and ∇U agree coordinate for coordinate after the permutation.
  // Both sum the same terms in a different order: 1e-12 relative is rounding, a wrong term O(1).
  test::TempDir dir;
  const auto data = test::quoted(dir.write("rows.csv", "1.1,0.5,-1\n-0.4,-1.5,0.25\n2.9,2,0.5\n0.3,0.1,-0.7\n"));
  for (const char* prior : {"noise_prior = \"half_cauchy\"\nnoise_prior_scale = 0.7\n",
                            "noise_prior = \"half_student_t\"\nnoise_prior_df = 4\n", "noise_prior = \"exponential\"\n"}) {
    INFO(prior);
    const std::string keys =
        fmt::format("data = {}\ntest_size = 0\nfamily = \"gaussian\"\nprior_scale = 1.5\n{}", data, prior);
    const auto mlp = build(keys + "layers = []\n");
    const auto glm = test::build_model("glm", keys);
    REQUIRE(mlp->parameter_names() == std::vector<std::string>{"w1.1.1", "w1.2.1", "b1.1", "log_noise_sd"});
    REQUIRE(glm->parameter_names() == std::vector<std::string>{"intercept", "beta.1", "beta.2", "log_noise_sd"});
    constexpr std::size_t from_glm[4] = {1, 2, 0, 3};  // mlp coordinate j is glm coordinate from_glm[j]
    auto mlp_workspace = mlp->make_workspace(), glm_workspace = glm->make_workspace();
    for (const double u : {-0.8, 0.0, 1.3}) {
      INFO(u);
      const std::vector<double> at_glm{0.4, -0.9, 0.6, u};
      std::vector<double> at_mlp(4);
      for (std::size_t j = 0; j < 4; ++j) at_mlp[j] = at_glm[from_glm[j]];
      CHECK(test::full_potential(*mlp, at_mlp) == Approx(test::full_potential(*glm, at_glm)).epsilon(1e-12));
      const auto mlp_gradient = test::full_gradient(*mlp, at_mlp, *mlp_workspace);
      const auto glm_gradient = test::full_gradient(*glm, at_glm, *glm_workspace);
      for (std::size_t j = 0; j < 4; ++j) CHECK(mlp_gradient[j] == Approx(glm_gradient[from_glm[j]]).epsilon(1e-12));
      // Per-item gradients (SAGA's table, the Fisher mass) likewise.
      const std::vector<std::size_t> items{0, 1, 2, 3};
      std::vector<double> mlp_items(16), glm_items(16);
      mlp->item_gradients(at_mlp, items, mlp_items, *mlp_workspace);
      glm->item_gradients(at_glm, items, glm_items, *glm_workspace);
      for (std::size_t k = 0; k < 4; ++k)
        for (std::size_t j = 0; j < 4; ++j)
          CHECK(mlp_items[k * 4 + j] == Approx(glm_items[k * 4 + from_glm[j]]).epsilon(1e-12).margin(1e-15));
      // `sgmcmc predict` and the held-out densities: each draw's own σ.
      const auto path = dir.write("new.csv", "0.5,1,-1\n");
      const auto mlp_rows = mlp->read_prediction_rows(path), glm_rows = glm->read_prediction_rows(path);
      std::vector<double> mlp_out(2), glm_out(2), mlp_log_density(1), glm_log_density(1);
      mlp->predict_rows(at_mlp, *mlp_rows, mlp_out, mlp_log_density);
      glm->predict_rows(at_glm, *glm_rows, glm_out, glm_log_density);
      CHECK(mlp_out[0] == Approx(glm_out[0]).epsilon(1e-12));
      CHECK(mlp_out[1] == Approx(std::exp(2 * u)).epsilon(1e-12));
      CHECK(glm_out[1] == Approx(std::exp(2 * u)).epsilon(1e-12));
      CHECK(mlp_log_density[0] == Approx(glm_log_density[0]).epsilon(1e-12));
    }
  }
  // Float storage keeps u in double and the network in float: the same U to float precision.
  const std::string keys = "n = 200\nlayers = [6, 4]\nfeatures = 3\nfamily = \"gaussian\"\nnoise_prior = \"half_normal\"\n";
  const auto in_double = build(keys), in_float = build(keys + "storage = \"float\"\n");
  std::vector<double> theta(in_double->dimension());
  sgmcmc::Rng rng(5, 0);
  in_double->initial_point(theta, rng);
  theta.back() = -0.3;
  CHECK(test::full_potential(*in_float, theta) == Approx(test::full_potential(*in_double, theta)).epsilon(1e-5));
  auto workspace_double = in_double->make_workspace(), workspace_float = in_float->make_workspace();
  // ∂U/∂u = Σ_i (1 - r_i²/σ²) + the prior's: 180 rows' float residuals (relative error ~1e-6).
  CHECK(test::full_gradient(*in_float, theta, *workspace_float).back() ==
        Approx(test::full_gradient(*in_double, theta, *workspace_double).back()).epsilon(1e-4).margin(1e-2));
}

TEST_CASE("mlp plugin: float storage gives double storage's potential and gradient to float precision") {
  // Not check-model: its finite differences (step ~1e-5) of a potential whose every activation is
  // rounded to float (relative 6e-8) are noise of order 1e-2, and its batch-against-items sums
  // differ by float rounding, beyond its double tolerances. Instead: the same data, network and
  // θ in both storages. Each of the 180 rows' terms carries a few float roundings of O(1) values
  // through two layers (relative error ~1e-6); 1e-4 relative leaves a margin of 100 and still
  // catches a wrong term (O(1)).
  for (const char* activation : {"tanh", "relu", "gelu"}) {
    const std::string keys = fmt::format("n = 200\nlayers = [6, 4]\nfeatures = 3\nactivation = \"{}\"\n", activation);
    const auto in_double = build(keys), in_float = build(keys + "storage = \"float\"\n");
    REQUIRE(in_float->dimension() == in_double->dimension());
    std::vector<double> theta(in_double->dimension());
    sgmcmc::Rng rng(5, 0);
    in_double->initial_point(theta, rng);
    for (std::size_t j = 0; j < theta.size(); ++j) theta[j] += 0.1 * std::sin(static_cast<double>(j));  // biases too
    INFO(activation);
    CHECK(test::full_potential(*in_float, theta) == Approx(test::full_potential(*in_double, theta)).epsilon(1e-5));
    auto workspace_double = in_double->make_workspace(), workspace_float = in_float->make_workspace();
    const auto exact = test::full_gradient(*in_double, theta, *workspace_double);
    const auto rounded = test::full_gradient(*in_float, theta, *workspace_float);
    double scale = 0.0;
    for (const double g : exact) scale = std::max(scale, std::abs(g));
    for (std::size_t j = 0; j < exact.size(); ++j) CHECK(std::abs(rounded[j] - exact[j]) <= 1e-4 * scale);
  }
}

TEST_CASE("mlp plugin: bad configuration and labels are refused naming the key or the row") {
  test::TempDir dir;
  CHECK_THROWS_WITH(build("activation = \"sigmoid\"\n"), Contains("model.activation") && Contains("tanh, relu or gelu"));
  CHECK_THROWS_WITH(build("family = \"poisson\"\n"), Contains("model.family") && Contains("categorical, bernoulli or gaussian"));
  CHECK_THROWS_WITH(build("layers = [50, 0]\n"), Contains("model.layers") && Contains("whole numbers ≥ 1"));
  CHECK_THROWS_WITH(build("layers = [2.5]\n"), Contains("model.layers"));
  // 10⁶ × 10⁶ weights (8 TB) are refused before any allocation, naming the key.
  CHECK_THROWS_WITH(build("layers = [1000000, 1000000]\n"), Contains("model.layers") && Contains("parameters"));
  CHECK_THROWS_WITH(build("storage = \"half\"\n"), Contains("model.storage"));
  CHECK_THROWS_WITH(build("simulate_from_prior = true\n"), Contains("model.simulate_from_prior"));
  CHECK_THROWS_WITH(build("classes = 1\n"), Contains("model.classes"));
  const auto fractional = test::quoted(dir.write("fractional.csv", "0,1,2\n1.5,0,1\n2,1,1\n"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", fractional)),
                    Contains("fractional.csv:2: the label 1.5 is not a class") && Contains("class index"));
  const auto three = test::quoted(dir.write("three.csv", "0,1,2\n1,0,1\n2,1,1\n"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\nclasses = 2\n", three)),
                    Contains("three.csv:3: the label 2 is not a class") && Contains("model.classes"));
  const auto one_class = test::quoted(dir.write("one.csv", "0,1,2\n0,0,1\n"));
  CHECK_THROWS_WITH(build(fmt::format("data = {}\ntest_size = 0\n", one_class)), Contains("K ≥ 2"));
  // A key of another family is unknown here, as in glm; a noise prior is refused saying why.
  CHECK_THROWS_WITH(build("noise_sd = 2\n"), Contains("noise_sd"));
  CHECK_THROWS_WITH(build("noise_prior = \"half_normal\"\n"),
                    Contains("model.noise_prior") && Contains("family categorical has no noise sd"));
  CHECK_THROWS_WITH(build("family = \"gaussian\"\nnoise_prior = \"half_normal\"\nnoise_sd = 1\n"),
                    Contains("model.noise_sd") && Contains("model.noise_prior"));
  CHECK_THROWS_WITH(build("family = \"gaussian\"\nnoise_prior = \"half_student_t\"\nnoise_prior_df = -1\n"),
                    Contains("model.noise_prior_df") && Contains("expected a number > 0"));
}

TEST_CASE("mlp plugin: the bundled digits are 1,797 rows of a label 0-9 and 64 pixels in sixteenths of [0, 1]") {
  // plugins/mlp/digits.csv.gz as tests/tools/make_digits.py writes it from scikit-learn's copy:
  // 174 to 183 images of each digit, as scikit-learn 1.2.1's load_digits has them.
  const auto path = std::filesystem::path(SGMCMC_SOURCE_DIR) / "plugins" / "mlp" / "digits.csv.gz";
  const auto table = sgmcmc::read_numeric_csv(path);
  REQUIRE(table.rows == 1797);
  REQUIRE(table.columns == 65);
  std::vector<std::size_t> per_class(10, 0);
  for (std::size_t i = 0; i < table.rows; ++i) {
    const double label = table.at(i, 0);
    REQUIRE((label >= 0 && label <= 9 && label == std::floor(label)));
    per_class[static_cast<std::size_t>(label)] += 1;
    for (std::size_t j = 1; j < table.columns; ++j) {
      const double pixel = table.at(i, j);
      REQUIRE((pixel >= 0 && pixel <= 1 && pixel * 16 == std::floor(pixel * 16)));
    }
  }
  for (const std::size_t count : per_class) CHECK((count >= 174 && count <= 183));
  // The split: 1,500 training rows, 297 held out, a 64 → 50 → 10 network of d = 3,760.
  const auto model = build(fmt::format("data = {}\ntest_size = 297\n", test::quoted(path)));
  CHECK(model->num_items() == 1500);
  CHECK(model->dimension() == 3760);
}

TEST_CASE("mlp plugin: SGLD on digits through the CLI learns, and 2 chains give the same draws on 1 and 2 threads") {
  // 64 → 50 tanh → 10 on the bundled digits, 1,500 rows, 297 held out, batch 100, h = 1e-4,
  // 1,500 iterations. The running posterior predictive's accuracy reached 0.956 in this setting
  // (0.96 after 3,000): chance is 0.1, and a gradient of the wrong sign stays near it; 0.8 is
  // the bar here, a smoke test of the whole path, not a statistical claim. The chains' CSV files must agree byte for byte (but the
  // elapsed time) whatever the threads: each chain's BLAS calls and buffers are its own.
  test::TempDir dir;
  const auto data = std::filesystem::path(SGMCMC_SOURCE_DIR) / "plugins" / "mlp" / "digits.csv.gz";
  const auto config = dir.write("digits.toml", fmt::format(
      "[model]\nname = \"mlp\"\ndata = {}\ntest_size = 297\nlayers = [50]\n[estimator]\nname = \"minibatch\"\n"
      "batch_size = 100\n[integrator]\nname = \"sgld\"\nstep_size = 1e-4\n[corrector]\nname = \"none\"\n"
      "[run]\niterations = 1500\nthin = 50\neval_every = 500\nchains = 2\n",
      test::quoted(data)));
  std::vector<std::filesystem::path> outs;
  for (const int threads : {1, 2}) {
    outs.push_back(dir.path() / fmt::format("threads-{}", threads));
    const auto ran = test::run_cli(fmt::format("run --config '{}' --threads {} --out '{}' --quiet", config.string(), threads,
                                               outs.back().string()));
    INFO(ran.output);
    REQUIRE(ran.exit_code == 0);
  }
  for (const char* chain : {"chain-1.csv", "chain-2.csv"})
    CHECK(test::draws_without_elapsed_time(outs[0] / chain) == test::draws_without_elapsed_time(outs[1] / chain));
  const auto lines = test::lines_of(test::read_text(outs[0] / "metrics.csv"));
  REQUIRE(lines.size() >= 2);
  const auto header = test::csv_fields(lines.front()), last = test::csv_fields(lines.back());
  const auto column = [&](const std::string& name) {
    const auto at = std::find(header.begin(), header.end(), name);
    REQUIRE(at != header.end());
    return std::stod(last[static_cast<std::size_t>(at - header.begin())]);
  };
  CHECK(column("accuracy") > 0.8);
  CHECK(column("log_predictive_density") > -0.7);  // log(0.5): most held-out digits get half their mass or more
  CHECK(column("ece") < 0.2);
}

TEST_CASE("mlp plugin: the mlp-digits preset reads the digits shipped with the plugin and reaches held-out accuracy 0.97") {
  // The criterion for the preset (issue 42): on its held-out sixth of digits (297 rows,
  // the split of data_seed = seed = 1), the running posterior predictive's accuracy is at least
  // 0.97 in every chain. It is a property of this split: over the splits of seeds 2-4 the same
  // sampler gave 0.960-0.983, the binomial standard error of an accuracy near 0.975 on 297 rows
  // being 0.009. A wrong gradient sign gives about 0.1; SGLD at the same step diverges.
  test::TempDir dir;
  const auto out = dir.path() / "digits";
  const auto ran = test::run_cli(fmt::format("run --preset mlp-digits --quiet --out '{}'", out.string()));
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  // The preset's relative data name was read from data/mlp/ beside the plugin file.
  const fs::path data = manifest["config"]["model"]["data"].get<std::string>();
  CHECK(data.filename() == "digits.csv.gz");
  CHECK(data.parent_path().filename() == "mlp");
  CHECK(data.parent_path().parent_path().filename() == "data");
  const auto metrics = sgmcmc::read_numeric_csv(out / "metrics.csv");
  const auto accuracy = std::find(metrics.header.begin(), metrics.header.end(), "accuracy") - metrics.header.begin();
  REQUIRE(static_cast<std::size_t>(accuracy) < metrics.columns);
  std::map<double, double> last_of_chain;
  for (std::size_t row = 0; row < metrics.rows; ++row) last_of_chain[metrics.at(row, 0)] = metrics.at(row, accuracy);
  REQUIRE(last_of_chain.size() == 2);
  for (const auto& [chain, value] : last_of_chain) CHECK(value >= 0.97);

  // With 3,760 weights, `summary` leads with the recorded quantities, not the weights (issue 42
  // item 6), which stay one option away.
  const auto summary = test::run_cli(fmt::format("summary '{}'", out.string()));
  CHECK(summary.exit_code == 0);
  CHECK_THAT(summary.output, Contains("held_out_accuracy") && Contains("quantities lead") && !Contains("w1.1.1 "));
  const auto weights = test::run_cli(fmt::format("summary '{}' --parameters w1.1.1", out.string()));
  CHECK_THAT(weights.output, Contains("w1.1.1 ") && !Contains("held_out_accuracy"));
}

TEST_CASE("mlp plugin: after the warmup the metrics average the sampling phase's draws only") {
  // With one draw since the warmup, the running posterior predictive is that draw's own: at
  // iteration warmup + 1, metrics.csv's log_predictive_density and accuracy equal the first
  // draw's held_out_log_density and held_out_accuracy (chain-1.csv). Averaged from the start,
  // they would mix in the 100 warmup draws from the random start.
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto ran = test::run_cli(fmt::format("run --preset mlp-digits --quiet --chains 1 --set run.warmup=100 "
                                             "--set run.iterations=5 --set run.thin=1 --set run.eval_every=1 --out '{}'",
                                             out.string()));
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  const auto metrics = sgmcmc::read_numeric_csv(out / "metrics.csv");
  const auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(metrics.header.begin(), metrics.header.end(), name) - metrics.header.begin());
  };
  std::size_t first_sampling_row = metrics.rows;
  for (std::size_t row = 0; row < metrics.rows; ++row)
    if (metrics.at(row, column("iteration")) == 101) first_sampling_row = row;
  REQUIRE(first_sampling_row < metrics.rows);
  const auto draws = sgmcmc::read_stan_csv(out / "chain-1.csv");
  const auto draw_column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(draws.columns.begin(), draws.columns.end(), name) - draws.columns.begin());
  };
  REQUIRE(!draws.rows.empty());
  CHECK(metrics.at(first_sampling_row, column("log_predictive_density")) ==
        Approx(draws.rows[0][draw_column("held_out_log_density")]).epsilon(1e-12));
  CHECK(metrics.at(first_sampling_row, column("accuracy")) == draws.rows[0][draw_column("held_out_accuracy")]);
  // The warmup's last row still averages the warmup's draws: not the single draw at iteration 100.
  CHECK(metrics.at(first_sampling_row - 1, column("iteration")) == 100);
}

TEST_CASE("mlp plugin: the mlp-digits-obabo-mh preset burns in with SGHMC, then OBABO + MH accepts near its target and predicts") {
  // Issue 42 item 7: after the preset's SGHMC [burn_in], OBABO with one MH test every 10 steps has
  // its step adapted to an acceptance of 0.7 during the warmup and frozen. Acceptance of the 500
  // recorded blocks of each chain: a binomial sd of sqrt(0.7 * 0.3 / 500) = 0.02 around what the
  // frozen step accepts, which itself is not the target exactly: dual averaging freezes the average
  // of its last iterates, and the chain keeps settling after the warmup, which raises the
  // acceptance (0.67-0.79 over 10 chains of seeds 1-4, mean 0.74, sd 0.04). Hence [0.55, 0.90]:
  // the target - 0.15 and + 0.2, over 3 sd of that spread either side. Without the adaptation the
  // preset's first step (mlp-digits' 1e-2) accepts 0.2% of blocks.
  // Held-out accuracy of the running posterior predictive on the split of seed 1 (297 rows): at
  // least 0.90, three binomial sd (0.013 at 0.95) under the 0.949 and 0.963 measured; without the
  // burn-in (burn_in step 1e-9) a chain reached 0.79.
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto ran = test::run_cli(fmt::format("run --preset mlp-digits-obabo-mh --quiet --out '{}'", out.string()));
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["burn_in"]["integrator"]["name"] == "sghmc");
  CHECK(manifest["config"]["integrator"]["name"] == "obabo");
  const auto metrics = sgmcmc::read_numeric_csv(out / "metrics.csv");
  const auto accuracy = std::find(metrics.header.begin(), metrics.header.end(), "accuracy") - metrics.header.begin();
  REQUIRE(static_cast<std::size_t>(accuracy) < metrics.columns);
  std::map<double, double> last_of_chain;
  for (std::size_t row = 0; row < metrics.rows; ++row) last_of_chain[metrics.at(row, 0)] = metrics.at(row, accuracy);
  REQUIRE(last_of_chain.size() == 2);
  for (const auto& [chain, value] : last_of_chain) CHECK(value >= 0.90);
  for (const auto& chain : manifest["chains"]) {
    REQUIRE(chain["blocks"] == 500);
    const double acceptance = chain["accepted_blocks"].get<double>() / 500.0;
    CHECK(acceptance >= 0.55);
    CHECK(acceptance <= 0.90);
    CHECK(chain.contains("adapted_step_size"));
    CHECK(chain["burn_in"]["iterations"] == 3000);
  }
}
