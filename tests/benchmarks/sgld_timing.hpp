// The framework side of the SGLD benchmarks: µs per iteration of a real sgmcmc::Chain
// (minibatch, or another estimator, + sgld + none), from the chain's own sampling seconds.
#pragma once
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <utility>
#include <fmt/format.h>

import sgmcmc;

namespace bench {

/// A model of the plugin file `plugin_file` from [model] lines, every key checked as the CLI does.
inline std::shared_ptr<const sgmcmc::Model> load_model(const std::filesystem::path& plugin_file, const std::string& keys) {
  const auto plugin = sgmcmc::load_plugin_file(plugin_file);
  auto config = sgmcmc::parse_config("[model]\n" + keys, "bench.toml");
  auto built = plugin.create({config["model"], 1});
  config["model"].reject_unknown_keys();
  return built;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct NoOutput final : sgmcmc::ChainObserver {
  void on_draw(const sgmcmc::Draw&) override {}
  void on_metrics(const sgmcmc::MetricsRow&) override {}
};

/// µs per iteration of an SGLD chain: wall-clock, and the chain thread's CPU time (which a busy
/// machine stretches less).
struct IterationTimes {
  double wall_us, cpu_us;
};

inline IterationTimes sgld_iteration_times(std::shared_ptr<const sgmcmc::Model> model, std::size_t batch,
                                           double step_size, std::uint64_t iterations,
                                           const char* estimator_name = "minibatch") {
  auto config = sgmcmc::parse_config(fmt::format("[estimator]\nname = \"{}\"\nbatch_size = {}\n"
                                                 "[integrator]\nname = \"sgld\"\nstep_size = {}\n[corrector]\nname = \"none\"\n",
                                                 estimator_name, batch, step_size),
                                     "bench.toml");
  auto chain = sgmcmc::make_chain(config, model, sgmcmc::Rng(1, sgmcmc::chain_stream(0)));
  NoOutput output;
  const auto result = chain->run({.iterations = iterations, .thin = iterations, .eval_every = iterations}, output);
  const double per = 1e6 / static_cast<double>(iterations);
  return {result.seconds * per, result.cpu_seconds * per};
}

inline double sgld_iteration_us(std::shared_ptr<const sgmcmc::Model> model, std::size_t batch, double step_size,
                                std::uint64_t iterations, const char* estimator_name = "minibatch") {
  return sgld_iteration_times(model, batch, step_size, iterations, estimator_name).wall_us;
}

}  // namespace bench
