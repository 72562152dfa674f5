// The framework side of the SGLD benchmarks: µs per iteration of a real sgmcmc::Chain
// (minibatch, or another estimator, + sgld + none), from the chain's own sampling seconds.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <utility>
#include <fmt/format.h>
#include "reading.hpp"

import sgmcmc;

namespace bench {

/// A model of the plugin file `plugin_file` from [model] lines, every key checked as the CLI does.
inline std::shared_ptr<const sgmcmc::Model> load_model(const std::filesystem::path& plugin_file, const std::string& keys) {
  const auto plugin = sgmcmc::load_plugin_file(plugin_file);
  auto config = sgmcmc::parse_config("[model]\n" + keys, "bench.toml");
  auto built = test::checked_model(plugin, config["model"], 1);
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
                                           const char* estimator_name = "minibatch", bool float_chain = false) {
  auto config = sgmcmc::parse_config(fmt::format("[estimator]\nname = \"{}\"\nbatch_size = {}\n"
                                                 "[integrator]\nname = \"sgld\"\nstep_size = {}\n[corrector]\nname = \"none\"\n",
                                                 estimator_name, batch, step_size),
                                     "bench.toml");
  auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, sgmcmc::chain_stream(0)));
  NoOutput output;
  const auto result = chain->run(
      {.iterations = iterations, .thin = iterations, .eval_every = iterations, .float_precision = float_chain}, output);
  const double per = 1e6 / static_cast<double>(iterations);
  return {result.seconds * per, result.cpu_seconds * per};
}

inline double sgld_iteration_us(std::shared_ptr<const sgmcmc::Model> model, std::size_t batch, double step_size,
                                std::uint64_t iterations, const char* estimator_name = "minibatch") {
  return sgld_iteration_times(model, batch, step_size, iterations, estimator_name).wall_us;
}

/// µs per unit of `work()`, which does `per` units: the fastest of `repetitions` runs.
template <class Work>
double fastest_us(int repetitions, std::size_t per, Work work) {
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  return best / static_cast<double>(per);
}

/// Runs a PyTorch peer (`/usr/bin/python3 ARGUMENTS`), prints its output and returns the text
/// after "SGLD iteration" on its line of that name; nothing when Debian's python3-torch is
/// missing or the peer printed no such line.
inline std::optional<std::string> torch_peer_sgld_line(const std::string& arguments) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    std::printf("torch peer unavailable (needs Debian's python3-torch): no torch figures\n");
    return std::nullopt;
  }
  std::FILE* pipe = popen(("/usr/bin/python3 " + arguments + " 2>&1").c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  pclose(pipe);
  std::fputs(output.c_str(), stdout);
  std::istringstream lines(output);
  const std::string label = "SGLD iteration";
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.find(label); at != std::string::npos) return line.substr(at + label.size());
  std::printf("the torch peer printed no SGLD iteration figures\n");
  return std::nullopt;
}

}  // namespace bench
