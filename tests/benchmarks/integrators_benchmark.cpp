// Per-step cost of each integrator's own arithmetic (its sub-steps and random numbers, the
// gradient excluded), next to one batch gradient (n = 500, d = 55) of the gaussian plugin, and
// the share of an MH block's cost spent at its endpoints (full passes) for K = 10, 100, 1000.
//
//   build/release/tests/benchmarks/integrators_benchmark
//
// Goal (issue 4): the bookkeeping of a step is at most 10% of one batch gradient.
#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include "reading.hpp"

import sgmcmc;

namespace {

constexpr std::size_t items = 100'000, dimension = 55, batch = 500;

std::shared_ptr<const sgmcmc::Model> gaussian_model() {
  static const auto plugin = sgmcmc::load_plugin_file(std::string(SGMCMC_PLUGIN_DIR) + "/sgmcmc-model-gaussian.so");
  static const auto model = [] {
    auto config = sgmcmc::parse_config(fmt::format("[model]\nn = {}\ndim = {}\ntest_size = 0\n", items, dimension), "bench.toml");
    return plugin.create({sgmcmc::SectionReader(config["model"]), 1});
  }();
  return model;
}

/// Returns a stored gradient: the integrator's own work is then all that is timed.
class FreeGradient final : public sgmcmc::Estimator {
public:
  void estimate(std::span<const double>, std::span<double> gradient, sgmcmc::ChainContext&) override {
    std::fill(gradient.begin(), gradient.end(), 1e-3);
  }
};

double nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

/// ns per minibatch gradient (n = 500), median of 7 runs of 2,000 calls.
double batch_gradient_ns() {
  const auto model = gaussian_model();
  auto config = sgmcmc::parse_config(fmt::format("[estimator]\nbatch_size = {}\n", batch), "b.toml");
  auto estimator = sgmcmc::make_estimator(sgmcmc::SectionReader(config["estimator"]), *model);
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(1, 1);
  sgmcmc::Cost cost;
  sgmcmc::ChainContext context{*model, *workspace, rng, cost};
  std::vector<double> theta(dimension, 0.1), gradient(dimension);
  std::vector<double> runs;
  for (int run = 0; run < 7; ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < 2000; ++k) estimator->estimate(theta, gradient, context);
    runs.push_back(nanoseconds_since(start) / 2000);
  }
  std::sort(runs.begin(), runs.end());
  return runs[3];
}

double reference_ns = 0.0;

void integrator_step(benchmark::State& bench, const std::string& name) {
  const auto model = gaussian_model();
  // hmc makes one leapfrog step per trajectory here, so every row is one gradient's worth of steps.
  const std::string steps = name == "hmc" || name == "leapfrog" ? "steps = 1\n" : "";
  auto config = sgmcmc::parse_config(fmt::format("[integrator]\nname = \"{}\"\nstep_size = 1e-5\n{}", name, steps), "i.toml");
  auto integrator = sgmcmc::make_integrator(sgmcmc::SectionReader(config["integrator"]));
  FreeGradient estimator;
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(2, 2);
  sgmcmc::Cost cost;
  sgmcmc::ChainContext context{*model, *workspace, rng, cost};
  sgmcmc::ChainState state;
  integrator->initialise(state, dimension, rng);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : bench) {
    ++state.iteration;
    integrator->step(state, estimator, context);
    benchmark::DoNotOptimize(state.theta.data());
  }
  const double per_step = nanoseconds_since(start) / static_cast<double>(bench.iterations());
  bench.counters["vs_batch_gradient"] = per_step / reference_ns;
}

/// Runs an obabo + mh chain with minibatches and reports where its item evaluations went.
void mh_endpoint_share(std::size_t every) {
  const auto model = gaussian_model();
  const std::uint64_t iterations = std::max<std::uint64_t>(every * 20, 2000);
  auto config = sgmcmc::parse_config(
      fmt::format("[estimator]\nbatch_size = {}\n[integrator]\nname = \"obabo\"\nstep_size = 1e-5\n[corrector]\nname = \"mh\"\nevery = {}\n",
                  batch, every),
      "mh.toml");
  auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(3, 3));
  struct Discard final : sgmcmc::ChainObserver {
    void on_draw(const sgmcmc::Draw&) override {}
    void on_metrics(const sgmcmc::MetricsRow&) override {}
  } discard;
  const auto start = std::chrono::steady_clock::now();
  const auto result = chain->run({.iterations = iterations, .thin = every, .eval_every = iterations}, discard);
  const double seconds = nanoseconds_since(start) * 1e-9;
  // Item evaluations: gradients counted by the estimators; each potential pass is N more.
  const double potential_items = static_cast<double>(result.blocks + 1) * static_cast<double>(items);
  const double endpoint_gradients = static_cast<double>(result.blocks + 1) * static_cast<double>(items);
  const double total = static_cast<double>(result.cost.item_gradients) + potential_items;
  fmt::print("{:>6} {:>12} {:>14.3f} {:>16.1f} {:>12.3f}\n", every, result.blocks, (potential_items + endpoint_gradients) / total,
             seconds / static_cast<double>(iterations) * 1e6, static_cast<double>(result.accepted_blocks) / static_cast<double>(result.blocks));
}

}  // namespace

int main(int argc, char** argv) {
  reference_ns = batch_gradient_ns();
  fmt::print("reference: one minibatch gradient of the gaussian plugin, n = {}, d = {}, N = {}: {:.0f} ns\n\n", batch,
             dimension, items, reference_ns);
  for (const auto& entry : sgmcmc::integrator_catalogue())
    benchmark::RegisterBenchmark(("step/" + entry.name).c_str(), integrator_step, entry.name);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  fmt::print("\nobabo + mh with minibatches of {}: share of item evaluations at the block endpoints\n", batch);
  fmt::print("(one exact gradient and one potential pass of N = {} per block)\n", items);
  fmt::print("{:>6} {:>12} {:>14} {:>16} {:>12}\n", "K", "blocks", "endpoint share", "us per iteration", "acceptance");
  for (std::size_t every : {10u, 100u, 1000u}) mh_endpoint_share(every);
  return 0;
}
