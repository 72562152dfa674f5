// The mlp plugin on scikit-learn's digits, 64 → 50 tanh → 10 categorical (d = 3,760), 1,500
// training rows, batch 100 (issue 42): the plugin's passes and a whole SGLD iteration of a real
// sgmcmc::Chain, then the PyTorch peer (tests/benchmarks/mlp_torch.py: the same loop as a PyTorch
// user writes it, one thread) in the same run, and how many times faster than PyTorch this is, in
// wall-clock time and in CPU time (the chain thread's; the Python process's), which a machine busy
// with other work stretches less.
// And a block of OBABO + MH over K = 10 steps with exact endpoints, its end's potential and
// gradient in one fused pass against the two passes it replaced (tests/two_passes.hpp), in the
// same run. Printed figures and ratios, not a timed test:
//
//   build/release/tests/benchmarks/mlp_benchmark [repetitions=5] [mnist] [only]
//
// `only` keeps the cases whose name contains it (e.g. "MNIST shape 784-400-400-10 relu, float32").
// `mnist` adds the MNIST-shaped network of the issue: 784 → 400 → 400 → 10 ReLU on 60,000
// simulated rows, batch 128. Both in float64 and in float32 (model.storage = "float",
// torch.float32). OpenBLAS runs one thread (openblas_set_num_threads(1)), as does PyTorch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>
#include <cblas.h>
#include <fmt/format.h>

#include "sgld_timing.hpp"
#include "two_passes.hpp"
#include "reading.hpp"

namespace mlp_benchmark {

struct Case {
  const char* name;
  std::string model_keys;   // [model] lines
  std::size_t batch;
  std::string torch_arguments;
};

std::vector<Case> cases(bool mnist) {
  const std::string digits = fmt::format("data = \"{}\"\ntest_size = 297\nlayers = [50]\nactivation = \"tanh\"\n",
                                         SGMCMC_MLP_DIGITS);
  std::vector<Case> all{{"digits 64-50-10 tanh, float64", digits, 100, "digits float64"},
                        {"digits 64-50-10 tanh, float32", digits + "storage = \"float\"\n", 100, "digits float32"}};
  if (mnist) {
    const std::string shape = "features = 784\nclasses = 10\nn = 60000\ntest_size = 0\nlayers = [400, 400]\n"
                              "activation = \"relu\"\n";
    all.push_back({"MNIST shape 784-400-400-10 relu, float64", shape, 128, "mnist float64"});
    all.push_back({"MNIST shape 784-400-400-10 relu, float32", shape + "storage = \"float\"\n", 128, "mnist float32"});
  }
  return all;
}

/// The PyTorch peer's "SGLD iteration" figures (wall, CPU) with `arguments`, or nothing.
std::optional<bench::IterationTimes> torch_sgld_iteration_us(const std::string& arguments) {
  const auto line = bench::torch_peer_sgld_line(fmt::format("{} {} {}", SGMCMC_MLP_TORCH_SCRIPT, SGMCMC_MLP_DIGITS, arguments));
  bench::IterationTimes times{};
  if (!line || !(std::istringstream(*line) >> times.wall_us >> times.cpu_us)) return std::nullopt;
  return times;
}

/// µs per block of OBABO + MH (K = 10 steps, batch `batch`, exact endpoints: K - 1 batch
/// gradients and the end's full pass) over 50 blocks from the model's start: wall, chain CPU.
bench::IterationTimes obabo_mh_block_times(std::shared_ptr<const sgmcmc::Model> model, std::size_t batch) {
  constexpr std::uint64_t every = 10, blocks = 50;
  auto config = sgmcmc::parse_config(fmt::format("[estimator]\nbatch_size = {}\n[integrator]\nname = \"obabo\"\n"
                                                 "step_size = 0.001\n[corrector]\nname = \"mh\"\nevery = {}\n",
                                                 batch, every),
                                     "bench.toml");
  auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, sgmcmc::chain_stream(0)));
  bench::NoOutput output;
  const std::uint64_t iterations = every * blocks;
  const auto result = chain->run({.iterations = iterations, .thin = iterations, .eval_every = iterations}, output);
  const double per = 1e6 / static_cast<double>(blocks);
  return {result.seconds * per, result.cpu_seconds * per};
}

void run(const Case& c, int repetitions) {
  const auto model = bench::load_model(std::string(SGMCMC_PLUGIN_DIR) + "/sgmcmc-model-mlp.so", c.model_keys);
  const std::size_t n = model->num_items(), calls = 200;
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(7, 0);
  std::vector<double> theta(model->dimension()), gradient(model->dimension(), 0.0);
  model->initial_point(theta, rng);
  std::vector<std::vector<std::size_t>> drawn(calls);
  sgmcmc::MinibatchSampler sampler(n, c.batch, false);
  for (auto& b : drawn) {
    const auto items = sampler.draw(rng);
    b.assign(items.begin(), items.end());
  }
  sgmcmc::Rng unused(0, 0);
  const double data = bench::fastest_us(repetitions, calls, [&] {
    for (const auto& b : drawn) model->add_data_gradient(theta, {b}, gradient, *workspace, unused);
  });
  const double potential = bench::fastest_us(repetitions, calls, [&] {
    double sink = 0.0;
    for (const auto& b : drawn) sink += model->data_potential(theta, {b}, *workspace);
    if (sink == 1.2345) std::printf(" ");
  });
  // Per-item gradients (saga's table, the Fisher mass): batch × d numbers written; only where
  // that block is small.
  std::optional<double> per_item;
  if (c.batch * model->dimension() <= 20'000'000) {
    std::vector<double> rows(c.batch * model->dimension());
    per_item = bench::fastest_us(repetitions, calls, [&] {
      for (const auto& b : drawn) model->item_gradients(theta, b, rows, *workspace);
    });
  }
  const std::uint64_t iterations = c.batch > 100 ? 300 : 2000;
  bench::IterationTimes iteration{1e300, 1e300};
  for (int r = 0; r < repetitions; ++r) {
    const auto times = bench::sgld_iteration_times(model, c.batch, 1e-5, iterations);
    iteration = {std::min(iteration.wall_us, times.wall_us), std::min(iteration.cpu_us, times.cpu_us)};
  }
  // The float chain (run.chain_precision = "float"), where the model offers it (float storage).
  std::optional<bench::IterationTimes> float_iteration;
  if (model->capabilities().float_gradient) {
    float_iteration = bench::IterationTimes{1e300, 1e300};
    for (int r = 0; r < repetitions; ++r) {
      const auto times = bench::sgld_iteration_times(model, c.batch, 1e-5, iterations, "minibatch", true);
      float_iteration = {std::min(float_iteration->wall_us, times.wall_us), std::min(float_iteration->cpu_us, times.cpu_us)};
    }
  }
  // Printed, and PyTorch's peer run, before the OBABO + MH blocks, whose full passes over the
  // MNIST shape's 60,000 rows take minutes: the SGLD figures come first.
  std::printf("%s: N = %zu, d = %zu, batch %zu (µs, fastest of %d)\n", c.name, n, model->dimension(), c.batch,
              repetitions);
  std::printf("  %-40s %10.1f\n", "data gradient (add_data_gradient)", data);
  std::printf("  %-40s %10.1f\n", "data potential (forward pass only)", potential);
  if (per_item) std::printf("  %-40s %10.1f\n", "per-item gradients (item_gradients)", *per_item);
  std::printf("  %-40s %10.1f wall %10.1f CPU\n", "SGLD iteration (sgmcmc::Chain)", iteration.wall_us, iteration.cpu_us);
  if (float_iteration)
    std::printf("  %-40s %10.1f wall %10.1f CPU\n", "SGLD iteration, chain in float", float_iteration->wall_us,
                float_iteration->cpu_us);
  std::fflush(stdout);
  const auto torch = torch_sgld_iteration_us(c.torch_arguments);
  if (torch)
    std::printf("SGLD iteration, %s: torch / this = %.1f / %.1f µs = %.2f× faster than PyTorch (wall); "
                "%.1f / %.1f µs = %.2f× (CPU)\n",
                c.name, torch->wall_us, iteration.wall_us, torch->wall_us / iteration.wall_us, torch->cpu_us,
                iteration.cpu_us, torch->cpu_us / iteration.cpu_us);
  if (torch && float_iteration)
    std::printf("SGLD iteration, %s, chain in float (run.chain_precision = \"float\"): torch / this = %.1f / %.1f µs "
                "= %.2f× faster than PyTorch (wall); %.1f / %.1f µs = %.2f× (CPU)\n",
                c.name, torch->wall_us, float_iteration->wall_us, torch->wall_us / float_iteration->wall_us,
                torch->cpu_us, float_iteration->cpu_us, torch->cpu_us / float_iteration->cpu_us);
  std::fflush(stdout);
  bench::IterationTimes fused{1e300, 1e300}, two_passes{1e300, 1e300};
  const auto separate = std::make_shared<const test::TwoPasses>(model);
  for (int r = 0; r < repetitions; ++r) {
    const auto one = obabo_mh_block_times(model, c.batch), two = obabo_mh_block_times(separate, c.batch);
    fused = {std::min(fused.wall_us, one.wall_us), std::min(fused.cpu_us, one.cpu_us)};
    two_passes = {std::min(two_passes.wall_us, two.wall_us), std::min(two_passes.cpu_us, two.cpu_us)};
  }
  std::printf("  %-40s %10.1f wall %10.1f CPU\n", "OBABO + MH block, K = 10, two end passes", two_passes.wall_us,
              two_passes.cpu_us);
  std::printf("  %-40s %10.1f wall %10.1f CPU\n", "OBABO + MH block, K = 10, one fused pass", fused.wall_us, fused.cpu_us);
  std::printf("OBABO + MH block, %s: two passes / fused = %.2f× (wall), %.2f× (CPU)\n\n", c.name,
              two_passes.wall_us / fused.wall_us, two_passes.cpu_us / fused.cpu_us);
  std::fflush(stdout);
}

}  // namespace mlp_benchmark

int main(int argc, char** argv) {
  openblas_set_num_threads(1);  // one thread, as the PyTorch peer
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const bool mnist = argc > 2 && std::strcmp(argv[2], "mnist") == 0;
  const std::string only = argc > 3 ? argv[3] : "";
  for (const auto& c : mlp_benchmark::cases(mnist))
    if (std::string(c.name).find(only) != std::string::npos) mlp_benchmark::run(c, repetitions);
  return 0;
}
