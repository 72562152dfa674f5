// Cost of one gradient estimate for each estimator, next to the raw batch-gradient call it is
// built from, on the gaussian plugin (a GLM: ∇f_i = s_i x_i) with d = 50, n = 500 and
// N = 10⁵, 3·10⁵, 10⁶. Printed figures, not a timed test:
//
//   build/release/tests/benchmarks/estimators_benchmark --benchmark_repetitions=3 [--benchmark_filter=...]
//
// raw        model.add_data_gradient on a batch of 500 random items (1,024 batches drawn
//            beforehand and cycled, so rows come from memory as they do for the estimators)
// draw       the batch draw alone (without replacement: the halving, modules/README.md)
// minibatch  draw + raw call + scale by N/n                         goal ≤ 1.05 × raw
// cv         GLM form: n scalars s_i(θ) + one feature pass          goal ≤ 2.1 × raw (two batch
// cv-2sums   any model: batch gradients at θ and at θ̂ (2n)                gradients)
// svrg       as cv, plus a full pass every N/n estimates (amortised: +n per estimate)
// saga       compact table (N scalars): n scalars + one feature pass + n table updates
// saga-full  N × d table (item_gradients): n rows computed, n rows read and written
// Preparation (cv's SGD pass and full pass, saga's fill, svrg's first snapshot) happens before
// timing; svrg's later snapshots are inside it.
//
// Then a data-parallel rank's draw at the scale of tests/benchmarks/README.md's cost model
// (N = 10⁹ items, P = 64 ranks): its share of a batch of n (the batch's items in its block),
// against the whole batch that every rank drew before the halving draw, µs per draw and ns per
// item drawn, for n = 1,000, 13,000 and 160,000.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "statistical/estimator_support.hpp"

import sgmcmc;

namespace {

constexpr std::size_t dimension = 50, batch = 500;
constexpr std::int64_t sizes[] = {100'000, 300'000, 1'000'000};

/// The gaussian model with N items (simulated, all of them data), built once per N.
std::shared_ptr<const sgmcmc::Model> gaussian_model(std::size_t items) {
  static const auto plugin = sgmcmc::load_plugin_file(std::string(SGMCMC_PLUGIN_DIR) + "/sgmcmc-model-gaussian.so");
  static std::map<std::size_t, std::shared_ptr<const sgmcmc::Model>> models;
  auto& model = models[items];
  if (!model) {
    auto config = sgmcmc::parse_config(fmt::format("[model]\nn = {}\ndim = {}\ntest_size = 0\n", items, dimension), "bench.toml");
    model = plugin.create({sgmcmc::SectionReader(config["model"]), 1});
  }
  return model;
}

struct Variant {
  std::string label;
  std::string toml;    // [estimator] keys; empty for raw and draw
  bool hide_glm;       // run the general path (a model without the GLM form)
};

const Variant variants[] = {
    {"raw", "", false},
    {"draw", "", false},
    {"minibatch", "name = \"minibatch\"", false},
    {"cv", "name = \"cv\"", false},
    {"cv-2sums", "name = \"cv\"", true},
    {"svrg", "name = \"svrg\"", false},
    {"saga", "name = \"saga\"", false},
    {"saga-full", "name = \"saga\"\nmemory_limit_mb = 4096", true},
};

/// ns per estimate, by variant and N, for the summary table: the fastest repetition, the one
/// least disturbed by other work on the machine.
std::map<std::string, std::map<std::int64_t, double>> results;

void keep_fastest(const std::string& label, std::size_t items, double nanoseconds) {
  auto [slot, fresh] = results[label].try_emplace(static_cast<std::int64_t>(items), nanoseconds);
  if (!fresh) slot->second = std::min(slot->second, nanoseconds);
}

double nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

void raw_call(benchmark::State& bench, std::size_t items) {
  const auto model = gaussian_model(items);
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(4, 4);
  std::vector<std::size_t> indices(1024 * batch);
  for (auto& i : indices) i = rng.index(items);
  std::vector<double> theta(dimension, 0.1), gradient(dimension);
  std::size_t next = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : bench) {
    std::fill(gradient.begin(), gradient.end(), 0.0);
    model->add_data_gradient(theta, {std::span(indices).subspan(next * batch, batch)}, gradient, *workspace, rng);
    next = (next + 1) % 1024;
    benchmark::DoNotOptimize(gradient.data());
  }
  keep_fastest("raw", items, nanoseconds_since(start) / static_cast<double>(bench.iterations()));
}

/// The part of `minibatch` that is not the raw call: drawing a batch without replacement.
void draw_only(benchmark::State& bench, std::size_t items) {
  sgmcmc::MinibatchSampler sampler(items, batch, false);
  sgmcmc::Rng rng(6, 6);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : bench) benchmark::DoNotOptimize(sampler.draw(rng).data());
  keep_fastest("draw", items, nanoseconds_since(start) / static_cast<double>(bench.iterations()));
}

void one_estimate(benchmark::State& bench, const Variant& variant, std::size_t items) {
  std::shared_ptr<const sgmcmc::Model> model = gaussian_model(items);
  if (variant.hide_glm) model = std::make_shared<test::MaskedModel>(model, false, true);
  auto estimator = test::make_estimator(fmt::format("{}\nbatch_size = {}\n", variant.toml, batch), *model);
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(5, 5);
  sgmcmc::Cost cost;
  sgmcmc::ChainContext context{*model, *workspace, rng, cost};
  std::vector<double> theta(dimension, 0.0), gradient(dimension);
  estimator->prepare(theta, context);               // cv: SGD pass and full pass
  estimator->estimate(theta, gradient, context);    // saga: fill; svrg: first snapshot
  const sgmcmc::Cost before = cost;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : bench) {
    estimator->estimate(theta, gradient, context);
    benchmark::DoNotOptimize(gradient.data());
  }
  const double per_estimate = nanoseconds_since(start) / static_cast<double>(bench.iterations());
  keep_fastest(variant.label, items, per_estimate);
  bench.counters["item_gradients_per_estimate"] =
      static_cast<double>(cost.item_gradients - before.item_gradients) / static_cast<double>(bench.iterations());
}

/// One rank's draw of its share (kept = rank `rank`'s block of `ranks`) of batches of n of N
/// items, or the whole batch (ranks = 1): ns per draw, fastest of 3 timings of `draws` draws,
/// and the mean number of items returned.
std::pair<double, double> share_draw(std::size_t items, std::size_t n, std::size_t rank, std::size_t ranks) {
  sgmcmc::MinibatchSampler sampler(items, n, false, sgmcmc::ItemBlock{items / ranks * rank, items / ranks * (rank + 1)});
  sgmcmc::Rng rng(7, 7);
  const int draws = 200;
  double fastest = 1e300, returned = 0;
  for (int timing = 0; timing < 3; ++timing) {
    returned = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < draws; ++k) returned += static_cast<double>(sampler.draw(rng).size());
    fastest = std::min(fastest, nanoseconds_since(start) / draws);
  }
  return {fastest, returned / draws};
}

void print_share_draws() {
  const std::size_t items = 1'000'000'000, ranks = 64;
  fmt::print("\nA rank's share of a batch, N = 10⁹, P = {} (rank 31's block), against the whole batch:\n", ranks);
  fmt::print("{:>8} {:>22} {:>22} {:>8}\n", "n", "share: µs (ns/item)", "whole: µs (ns/item)", "ratio");
  for (const std::size_t n : {std::size_t{1'000}, std::size_t{13'000}, std::size_t{160'000}}) {
    const auto [share, share_items] = share_draw(items, n, 31, ranks);
    const auto [whole, whole_items] = share_draw(items, n, 0, 1);
    fmt::print("{:>8} {:>22} {:>22} {:>7.1f}×\n", n, fmt::format("{:.1f} ({:.0f})", share / 1e3, share / std::max(share_items, 1.0)),
               fmt::format("{:.1f} ({:.0f})", whole / 1e3, whole / whole_items), whole / share);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::int64_t items : sizes) {
    const auto n_items = static_cast<std::size_t>(items);
    // Enough estimates to span several svrg periods (N/n estimates each).
    const auto iterations = static_cast<benchmark::IterationCount>(std::max<std::int64_t>(4 * items / batch, 2000));
    for (const auto& variant : variants) {
      const std::string name = fmt::format("{}/N={}", variant.label, items);
      auto* registered = variant.label == "raw"    ? benchmark::RegisterBenchmark(name.c_str(), raw_call, n_items)
                         : variant.label == "draw" ? benchmark::RegisterBenchmark(name.c_str(), draw_only, n_items)
                                                   : benchmark::RegisterBenchmark(name.c_str(), one_estimate, variant, n_items);
      registered->Iterations(iterations)->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  fmt::print("\nµs per estimate, fastest repetition (ratio to the raw batch-gradient call), d = {}, n = {}\n", dimension,
             batch);
  fmt::print("{:>9}", "N");
  for (const auto& variant : variants) fmt::print(" {:>17}", variant.label);
  fmt::print("\n");
  for (const std::int64_t items : sizes) {
    if (!results["raw"].contains(items)) continue;
    const double raw = results["raw"][items];
    fmt::print("{:>9}", items);
    for (const auto& variant : variants) {
      const auto found = results[variant.label].find(items);
      if (found == results[variant.label].end())
        fmt::print(" {:>17}", "-");
      else
        fmt::print(" {:>17}", fmt::format("{:.1f} ({:.2f}×)", found->second / 1e3, found->second / raw));
    }
    fmt::print("\n");
  }
  print_share_draws();
  return 0;
}
