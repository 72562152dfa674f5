// The mlp plugin's posterior sampled by the exact samplers of Garriga-Alonso & Fortuin (2021):
// MALA + MH and OBABO + MH over K minibatch steps, on a tiny network (2 → 3 tanh → 1, gaussian
// noise, 24 rows), against a long random-walk Metropolis chain (Metropolis et al. 1953) that
// this file writes with its own scalar forward pass: no gradient, no BLAS, no plugin code.
//
// The weights themselves are not identifiable: permuting the hidden units, or flipping the signs
// of one unit's weights in and out (tanh is odd), leaves the likelihood unchanged. The checks are
// on functionals those symmetries keep: the network's output at three fixed inputs, the data's
// potential Σ_i f_i(θ), and |θ_l|² of each layer (weights and biases).
//
// Monte Carlo error: as in mh_test.cpp, standard errors from 100 non-overlapping batch means,
// trusted only when the autocorrelation at the batch length is below 0.05. A sampler's mean must
// be within 5 combined standard errors, sqrt(se² + se_ref²), of the reference's (two-sided
// p ≈ 6e-7 per check for normal batch means; 8 checks per sampler).
#include <catch2/catch.hpp>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <numbers>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "model_support.hpp"
#include "statistics.hpp"
#include "support.hpp"
#include "targets.hpp"

import sgmcmc;

namespace {

constexpr std::size_t inputs = 2, hidden = 3, rows = 24;
constexpr std::size_t dimension = inputs * hidden + hidden + hidden + 1;  // W1 (2×3), b1, W2 (3×1), b2: 13
constexpr double noise_sd = 0.5;
const std::array<std::array<double, inputs>, 3> probes = {{{-1.0, 0.5}, {0.3, -0.8}, {1.2, 1.0}}};

/// The network's output at x for θ laid out as the plugin's README states: W1 row-major (w1.i.j,
/// input i to unit j), b1, W2 (unit j to the output), b2.
double network(const std::vector<double>& theta, const std::array<double, inputs>& x) {
  double out = theta[dimension - 1];
  for (std::size_t j = 0; j < hidden; ++j) {
    double z = theta[inputs * hidden + j];
    for (std::size_t i = 0; i < inputs; ++i) z += x[i] * theta[i * hidden + j];
    out += theta[inputs * hidden + hidden + j] * std::tanh(z);
  }
  return out;
}

struct Data {
  std::vector<std::array<double, inputs>> x;
  std::vector<double> y;
};

/// 24 rows from a fixed teacher network, x uniform on [-2, 2]², y = teacher(x) + N(0, 0.5²).
Data simulate() {
  const std::vector<double> teacher = {1.0, -0.5, 0.8, 0.3, 1.2, -1.0, 0.1, -0.2, 0.0, 1.5, -1.0, 0.7, 0.2};
  sgmcmc::Rng rng(7, 0);
  Data data;
  for (std::size_t i = 0; i < rows; ++i) {
    data.x.push_back({4 * rng.uniform() - 2, 4 * rng.uniform() - 2});
    data.y.push_back(network(teacher, data.x.back()) + noise_sd * rng.normal());
  }
  return data;
}

/// Σ_i f_i(θ) = Σ_i (y_i - net(x_i))²/(2σ²), the constant log σ + ½ log 2π left out.
double data_potential(const Data& data, const std::vector<double>& theta) {
  double sum = 0.0;
  for (std::size_t i = 0; i < rows; ++i) {
    const double r = data.y[i] - network(theta, data.x[i]);
    sum += r * r / (2 * noise_sd * noise_sd);
  }
  return sum;
}

/// The functionals checked, of one draw: 3 outputs, the data potential, |θ_1|², |θ_2|².
std::vector<double> functionals(const Data& data, const std::vector<double>& theta) {
  std::vector<double> values;
  for (const auto& x : probes) values.push_back(network(theta, x));
  values.push_back(data_potential(data, theta));
  double first = 0.0, second = 0.0;
  for (std::size_t j = 0; j < dimension; ++j) (j < inputs * hidden + hidden ? first : second) += theta[j] * theta[j];
  values.push_back(first);
  values.push_back(second);
  return values;
}
const char* const functional_names[] = {"net(x*_1)", "net(x*_2)", "net(x*_3)", "sum f_i", "|theta_1|^2", "|theta_2|^2"};

/// Random-walk Metropolis on U(θ) = |θ|²/2 + Σ_i f_i(θ) (prior N(0, 1) on every weight), from
/// θ = 0.1·1, proposal N(θ, s²I); every `thin`-th state's functionals after `burn_in` steps.
std::vector<std::vector<double>> reference_draws(const Data& data, std::size_t draws, std::size_t thin, double s) {
  sgmcmc::Rng rng(11, 0);
  std::vector<double> theta(dimension, 0.1), proposal(dimension);
  const auto potential = [&](const std::vector<double>& t) {
    double prior = 0.0;
    for (double v : t) prior += v * v / 2;
    return prior + data_potential(data, t);
  };
  double u = potential(theta);
  std::vector<std::vector<double>> kept(std::size(functional_names));
  const std::size_t burn_in = 100'000;
  for (std::size_t step = 1; step <= burn_in + draws * thin; ++step) {
    for (std::size_t j = 0; j < dimension; ++j) proposal[j] = theta[j] + s * rng.normal();
    const double u_proposal = potential(proposal);
    if (std::log(rng.uniform()) < u - u_proposal) {
      theta.swap(proposal);
      u = u_proposal;
    }
    if (step > burn_in && step % thin == 0) {
      const auto values = functionals(data, theta);
      for (std::size_t f = 0; f < values.size(); ++f) kept[f].push_back(values[f]);
    }
  }
  return kept;
}

std::vector<std::vector<double>> sampler_draws(const Data& data, const test::Draws& run) {
  std::vector<std::vector<double>> kept(std::size(functional_names));
  for (const auto& theta : run.rows) {
    const auto values = functionals(data, theta);
    for (std::size_t f = 0; f < values.size(); ++f) kept[f].push_back(values[f]);
  }
  return kept;
}

void check_against(const std::vector<std::vector<double>>& draws, const std::vector<std::vector<double>>& reference) {
  for (std::size_t f = 0; f < reference.size(); ++f) {
    const double se = test::batch_means_se(draws[f]), se_reference = test::batch_means_se(reference[f]);
    const double difference = test::mean(draws[f]) - test::mean(reference[f]);
    INFO(functional_names[f] << ": " << test::mean(draws[f]) << " (se " << se << ") against " << test::mean(reference[f])
                             << " (se " << se_reference << ")");
    INFO("autocorrelation at the batch length " << test::autocorrelation(draws[f], draws[f].size() / 100) << ", reference's "
                                                << test::autocorrelation(reference[f], reference[f].size() / 100));
    REQUIRE(std::abs(test::autocorrelation(draws[f], draws[f].size() / 100)) < 0.05);
    REQUIRE(std::abs(test::autocorrelation(reference[f], reference[f].size() / 100)) < 0.05);
    CHECK(std::abs(difference) < 5 * std::hypot(se, se_reference));
  }
}

std::string as_csv(const Data& data) {
  std::string text;
  for (std::size_t i = 0; i < rows; ++i) text += fmt::format("{:.17g},{:.17g},{:.17g}\n", data.y[i], data.x[i][0], data.x[i][1]);
  return text;
}

}  // namespace

TEST_CASE("mlp: MALA + MH and OBABO + MH over minibatch steps match a random-walk Metropolis reference on a 2-3-1 network") {
  const Data data = simulate();
  test::TempDir dir;
  const auto file = dir.write("rows.csv", as_csv(data));
  const auto model = test::build_model(
      "mlp", fmt::format("data = \"{}\"\nlayers = [3]\nactivation = \"tanh\"\nfamily = \"gaussian\"\nnoise_sd = {}\n"
                         "prior_scale = 1.0\ntest_size = 0\n",
                         file.string(), noise_sd));
  REQUIRE(model->dimension() == dimension);
  // The plugin's U against this file's, at a few points: the layout above is the plugin's. The
  // two sum the same terms in another order (BLAS against scalar loops): they agree to rounding,
  // about 1e-15 relative on a U of order 10-100, so 1e-12 leaves room and no more.
  for (double scale : {0.3, 1.0}) {
    std::vector<double> theta(dimension);
    for (std::size_t j = 0; j < dimension; ++j) theta[j] = scale * std::sin(1.0 + static_cast<double>(j));
    auto workspace = model->make_workspace();
    double prior = 0.0;
    for (double v : theta) prior += v * v / 2;
    const double constant = rows * (std::log(noise_sd) + 0.5 * std::log(2 * std::numbers::pi));
    CHECK(sgmcmc::potential(*model, theta, sgmcmc::every_item(*model), *workspace) ==
          Approx(prior + data_potential(data, theta) + constant).epsilon(1e-12));
  }

  static const auto reference = reference_draws(data, 400'000, 25, 0.12);  // once, for both sections
  SECTION("MALA + MH, exact gradients") {
    const auto run = test::run_chain(model, "[estimator]\nname = \"exact\"\n[integrator]\nname = \"mala\"\nstep_size = 0.004\n"
                                     "[corrector]\nname = \"mh\"\n",
                                     400'000, 4, 2024, 20'000);
    const double acceptance = static_cast<double>(run.result.accepted_blocks) / static_cast<double>(run.result.blocks);
    INFO("acceptance " << acceptance);
    check_against(sampler_draws(data, run.draws), reference);
  }
  SECTION("OBABO + MH every 4 steps of minibatches of 12 rows (Garriga-Alonso & Fortuin 2021)") {
    const auto run = test::run_chain(model,
                                     "[estimator]\nname = \"minibatch\"\nbatch_size = 12\n[integrator]\nname = \"obabo\"\n"
                                     "step_size = 0.05\nfriction = 5\n[corrector]\nname = \"mh\"\nevery = 4\n",
                                     800'000, 8, 2024, 20'000);
    const double acceptance = static_cast<double>(run.result.accepted_blocks) / static_cast<double>(run.result.blocks);
    INFO("acceptance " << acceptance);
    CHECK(acceptance > 0.3);
    check_against(sampler_draws(data, run.draws), reference);
  }
}
