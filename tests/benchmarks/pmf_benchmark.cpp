// Bayesian PMF at MovieLens 100k's shape, batch 5,000, rank 20: the plugin next to the bare
// arithmetic of the batch (issue #6). Printed figures and ratios, not a timed test:
//
//   build/release/tests/benchmarks/pmf_benchmark [repetitions=5]
//
// Simulated data (943 users, 1,682 items, 100,000 ratings, 10% held out: N = 90,000 training
// ratings, d = 2,622 × 20 = 52,440: 3 simulated items have no training rating). Figures, µs, each the fastest of `repetitions` runs of 200
// batches (the same 200 uniformly drawn batches for every row):
//   floor 2·n·r      a plain loop doing the gradient's 2 × batch × rank multiply-adds (the two
//                    axpys s·V_j → U_i's row, s·U_i → V_j's row) on the batch's own rows
//   floor 3·n·r      the same plus the residual's dot product U_iᵀV_j: all the arithmetic
//   data gradient    Model::add_data_gradient on the batch (the plugin, through its interface)
//   prior gradient   add_prior_gradient_given: dense, (users + items) × rank, once per iteration
//   Gibbs step       one after_step that refreshes the hyperparameters (every gibbs_every = 10)
//   SGLD iteration   a whole sgmcmc::Chain iteration: minibatch estimator (draw, data and prior
//                    gradient), SGLD's move with d normal draws, the Gibbs hook
//   SAGA iteration   the same with the saga estimator and its sparse N × s table (the first
//                    iteration's full pass that fills it is included, 1/1000 of the run)
// Then tests/benchmarks/pmf_torch.py (the PyTorch peer, Debian's python3-torch, one thread) in the
// same run, and torch/this: how many times faster than PyTorch a whole SGLD iteration is.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>

#include "sgld_timing.hpp"
#include "reading.hpp"

namespace pmf_benchmark {

constexpr std::size_t batch = 5000, rank = 20, batches = 200;

std::shared_ptr<const sgmcmc::Model> pmf_model() {
  static const auto plugin = sgmcmc::load_plugin_file(std::string(SGMCMC_PLUGIN_DIR) + "/sgmcmc-model-pmf.so");
  auto config = sgmcmc::parse_config(fmt::format("[model]\nrank = {}\n", rank), "bench.toml");
  auto model = test::checked_model(plugin, config["model"], 1);
  return model;
}

/// µs per iteration of an SGLD chain (its own sampling seconds), fastest of `repetitions`.
double sgld_iteration_us(std::shared_ptr<const sgmcmc::Model> model, std::uint64_t iterations, int repetitions,
                         const char* estimator = "minibatch") {
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r)
    best = std::min(best, bench::sgld_iteration_us(model, batch, 2e-3, iterations, estimator));
  return best;
}

/// The PyTorch peer's "SGLD iteration" figure, or nothing.
std::optional<double> torch_sgld_iteration_us() {
  const auto line = bench::torch_peer_sgld_line(SGMCMC_PMF_TORCH_SCRIPT);
  if (!line) return std::nullopt;
  return std::stod(*line);
}

}  // namespace pmf_benchmark

int main(int argc, char** argv) {
  using namespace pmf_benchmark;
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 5;
  const auto model = pmf_model();
  const std::size_t d = model->dimension(), n = model->num_items(), users_and_items = d / rank;
  auto workspace = model->make_workspace();
  sgmcmc::Rng rng(7, 0);
  std::vector<double> theta(d), gradient(d, 0.0);
  model->initial_point(theta, rng);

  // The batches, and for the floor the (user row, item row) of each rating in them. The floor
  // reads the rows from the plugin's parameter names' layout: the first rows are users.
  std::vector<std::vector<std::size_t>> drawn(batches);
  sgmcmc::MinibatchSampler sampler(n, batch, false);
  for (auto& b : drawn) {
    const auto items = sampler.draw(rng);
    b.assign(items.begin(), items.end());
  }
  // Rows for the floor: uniformly random user and item rows (the floor does not know which rating
  // is which; it does the same arithmetic on rows of the same matrices).
  std::vector<std::uint32_t> user_row(batches * batch), item_row(batches * batch);
  const std::size_t users = 943;
  for (std::size_t k = 0; k < user_row.size(); ++k) {
    user_row[k] = static_cast<std::uint32_t>(rng.index(users));
    item_row[k] = static_cast<std::uint32_t>(users + rng.index(users_and_items - users));
  }

  const auto floor = [&](bool with_dot) {
    for (std::size_t b = 0; b < batches; ++b)
      for (std::size_t k = b * batch; k < (b + 1) * batch; ++k) {
        const double* u = &theta[user_row[k] * rank];
        const double* v = &theta[item_row[k] * rank];
        double s = 0.01;
        if (with_dot)
          for (std::size_t j = 0; j < rank; ++j) s += u[j] * v[j];
        double* gu = &gradient[user_row[k] * rank];
        double* gv = &gradient[item_row[k] * rank];
        for (std::size_t j = 0; j < rank; ++j) gu[j] += s * v[j];
        for (std::size_t j = 0; j < rank; ++j) gv[j] += s * u[j];
      }
  };
  sgmcmc::Rng unused(0, 0);
  const double floor2 = bench::fastest_us(repetitions, batches, [&] { floor(false); });
  const double floor3 = bench::fastest_us(repetitions, batches, [&] { floor(true); });
  const double data = bench::fastest_us(repetitions, batches, [&] {
    for (const auto& b : drawn) model->add_data_gradient(theta, {b}, gradient, *workspace, unused);
  });
  const double prior = bench::fastest_us(repetitions, batches, [&] {
    for (std::size_t b = 0; b < batches; ++b) model->add_prior_gradient_given(theta, gradient, *workspace);
  });
  const double gibbs = bench::fastest_us(repetitions, batches, [&] {
    const sgmcmc::AllItems every_rating(model->num_items());
    for (std::size_t b = 1; b <= batches; ++b) model->after_step(10 * b, theta, *workspace, rng, every_rating);
  });
  const double normals = bench::fastest_us(repetitions, batches, [&] {
    for (std::size_t b = 0; b < batches; ++b) rng.fill_normal(gradient);
  });
  const double iteration = sgld_iteration_us(model, 1000, std::max(1, repetitions / 2));
  const double saga = sgld_iteration_us(model, 1000, std::max(1, repetitions / 2), "saga");
  const double table_mb = static_cast<double>(n * model->item_gradient_support_size() * sizeof(double)) / 1e6;
  std::printf("pmf, MovieLens 100k shape: N = %zu ratings, d = %zu, batch %zu, rank %zu (µs, fastest of %d)\n", n, d,
              batch, rank, repetitions);
  std::printf("  %-44s %10.1f\n", "floor: 2·n·r multiply-adds (the two axpys)", floor2);
  std::printf("  %-44s %10.1f\n", "floor: 3·n·r (dot product too)", floor3);
  std::printf("  %-44s %10.1f   %.2f× floor 2·n·r, %.2f× floor 3·n·r\n", "data gradient (add_data_gradient)", data,
              data / floor2, data / floor3);
  std::printf("  %-44s %10.1f\n", "prior gradient (dense, every iteration)", prior);
  std::printf("  %-44s %10.1f\n", "d standard normals (Rng::fill_normal)", normals);
  std::printf("  %-44s %10.1f   (every gibbs_every = 10 iterations)\n", "Gibbs step of the hyperparameters", gibbs);
  std::printf("  %-44s %10.1f   %.2f× floor 2·n·r\n", "SGLD iteration (sgmcmc::Chain)", iteration, iteration / floor2);
  std::printf("  %-44s %10.1f   table N × %zu doubles = %.1f MB\n", "SAGA iteration (sparse table)", saga,
              model->item_gradient_support_size(), table_mb);
  if (const auto torch = torch_sgld_iteration_us())
    std::printf("SGLD iteration: torch %.1f µs / this %.1f µs = %.2f× faster than PyTorch\n", *torch, iteration,
                *torch / iteration);
  return 0;
}
