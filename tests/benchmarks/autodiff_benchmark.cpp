// What the SDK's automatic differentiation (sgmcmc/autodiff.hpp, Stan Math's reverse mode) costs
// against the hand-written `logistic` plugin on the same batch, in one run (issue #22 asks for at
// most 3× the hand-written cost in reverse mode at d = 55, n = 500). Printed figures and their
// ratio, not a timed test:
//
//   build/release/tests/benchmarks/autodiff_benchmark [rows=20000] [calls=2000] [repetitions=5]
//
// The models: `logistic` and tests/fixtures/autodiff_logistic.cpp (the same likelihood and
// Laplace prior as two templates) on one CSV of `rows` rows, 54 features uniform on [0, 1] and
// ±1 labels (d = 55 with the intercept, cover type's width). The work, on batches of n = 500
// random rows with weights:
//   batch gradient   add_data_gradient: Σ_k w_k ∇f_k (every sampler's step)
//   per-item         item_gradients: the 500 × 55 matrix (SAGA's table, check-model)
//   sgld             a minibatch SGLD chain's µs per iteration (the gradient plus the framework)
// Each figure is the median of `repetitions` runs, the two models taken in turn in every round,
// so that whatever else runs on the machine falls on both alike.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "sgld_timing.hpp"

namespace {

constexpr std::size_t batch_size = 500, features = 54;

std::filesystem::path write_data(std::size_t rows) {
  const auto path = std::filesystem::temp_directory_path() / fmt::format("autodiff_benchmark_{}.csv", rows);
  std::ofstream out(path);
  sgmcmc::Rng rng(11, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    out << (rng.uniform() < 0.5 ? "1" : "-1");
    for (std::size_t j = 0; j < features; ++j) out << fmt::format(",{:.6f}", rng.uniform());
    out << '\n';
  }
  return path;
}

/// µs of one call of `work(items, weights)` on batches of random rows (the same for both models).
template <class Work>
double call_us(const sgmcmc::Model& m, int calls, Work&& work) {
  sgmcmc::Rng rng(5, 0);
  std::vector<std::size_t> items(batch_size);
  std::vector<double> weights(batch_size);
  double seconds = 0.0;
  for (int c = 0; c < calls; ++c) {
    for (std::size_t k = 0; k < batch_size; ++k) {
      items[k] = static_cast<std::size_t>(rng.uniform() * static_cast<double>(m.num_items()));
      weights[k] = 0.5 + rng.uniform();
    }
    const auto start = std::chrono::steady_clock::now();
    work(items, weights);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return seconds / calls * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t rows = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20'000;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 2000;
  const int repetitions = argc > 3 ? std::atoi(argv[3]) : 5;
  const auto path = write_data(rows);
  const std::string keys = fmt::format("data = \"{}\"\nprior_scale = 1\n", path.string());
  const std::shared_ptr<const sgmcmc::Model> models[2] = {
      bench::load_model(fmt::format("{}/sgmcmc-model-logistic.so", SGMCMC_PLUGIN_DIR), keys + "test_size = 0\n"),
      bench::load_model(fmt::format("{}/sgmcmc-model-autodiff_logistic.so", SGMCMC_FIXTURE_PLUGIN_DIR), keys)};
  std::filesystem::remove(path);

  std::vector<double> gradient_us[2], item_us[2], sgld_us[2];
  for (int r = 0; r < repetitions; ++r)
    for (int k = 0; k < 2; ++k) {
      const auto& m = *models[k];
      auto workspace = m.make_workspace();
      std::vector<double> beta(m.dimension(), 0.01), gradient(m.dimension()), per_item(batch_size * m.dimension());
      sgmcmc::Rng unused(0, 0);
      gradient_us[k].push_back(call_us(m, calls, [&](const auto& items, const auto& weights) {
        std::fill(gradient.begin(), gradient.end(), 0.0);
        m.add_data_gradient(beta, {items, weights}, gradient, *workspace, unused);
      }));
      item_us[k].push_back(call_us(m, calls / 4 + 1, [&](const auto& items, const auto&) {
        m.item_gradients(beta, items, per_item, *workspace);
      }));
      sgld_us[k].push_back(bench::sgld_iteration_us(models[k], batch_size, 1e-6, static_cast<std::uint64_t>(calls)));
    }
  std::printf("N = %zu, d = %zu, batch n = %zu, median of %d runs\n", rows, features + 1, batch_size, repetitions);
  std::printf("%-26s %14s %14s %10s\n", "µs per call", "logistic", "autodiff", "ratio");
  const auto row = [](const char* what, const std::vector<double>* figures) {
    const double hand = bench::median(figures[0]), derived = bench::median(figures[1]);
    std::printf("%-26s %14.1f %14.1f %10.2f\n", what, hand, derived, derived / hand);
  };
  row("batch gradient", gradient_us);
  row("per-item gradients", item_us);
  row("sgld iteration", sgld_us);
  return 0;
}
