// One SGLD iteration on Bayesian logistic regression, the framework next to its references, in
// one run (issue #5). Printed figures and ratios, not a timed test:
//
//   build/release/tests/benchmarks/logistic_benchmark [iterations=5000] [repetitions=3]
//
// For N = 581,012 and N = 20,000 rows (d = 55 with the intercept, batch n = 500):
//   framework   `sgmcmc::Chain` with the real logistic plugin loaded from disk, `minibatch`
//               estimator, `sgld` integrator, no corrector (the same work as the floor: draw n
//               rows, their gradient, one SGLD move); variants of the plugin's speed settings
//   floor       ../shared/bench/logistic_sgld_floor.cpp (gather + two cblas_dgemv + move), built
//               by CMake with -O3 -march=native as its header says, run with one BLAS thread
//   torch       ../shared/bench/torch_sgld.py with Debian's /usr/bin/python3 (python3-torch)
// and a full-data gradient pass (the `exact` estimator's work: N rows) next to two bare
// cblas_dgemv over an N × 55 matrix (Xβ, then Xᵀs), the BLAS floor of that pass.
// Each figure is the median of `repetitions` runs, taken in round robin; µs per iteration.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>

#include "sgld_timing.hpp"
#include "reading.hpp"

namespace {

constexpr std::size_t batch = 500, columns = 55;

std::shared_ptr<const sgmcmc::Model> logistic_model(std::size_t rows, const std::string& speed_keys) {
  static const auto plugin = sgmcmc::load_plugin_file(std::string(SGMCMC_PLUGIN_DIR) + "/sgmcmc-model-logistic.so");
  auto config = sgmcmc::parse_config(fmt::format("[model]\nn = {}\ntest_size = 0\n{}\n", rows, speed_keys), "bench.toml");
  auto model = test::checked_model(plugin, config["model"], 1);
  return model;
}

/// µs per iteration of a minibatch SGLD chain (the chain's own sampling seconds).
double framework_us(std::shared_ptr<const sgmcmc::Model> model, std::uint64_t iterations) {
  return bench::sgld_iteration_us(std::move(model), batch, 1e-6, iterations);
}

/// µs of one exact gradient (all N rows) through the model, the `exact` estimator's work.
double full_pass_us(const sgmcmc::Model& model, int passes) {
  auto workspace = model.make_workspace();
  const auto every = sgmcmc::every_item(model);
  std::vector<double> beta(model.dimension(), 0.01), gradient(model.dimension());
  sgmcmc::Rng unused(0, 0);
  const auto start = std::chrono::steady_clock::now();
  for (int p = 0; p < passes; ++p) {
    std::fill(gradient.begin(), gradient.end(), 0.0);
    model.add_data_gradient(beta, {every}, gradient, *workspace, unused);
    model.add_prior_gradient(beta, gradient);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / passes;
}

/// Float storage's accuracy: ‖∇U_float - ∇U_double‖ / ‖∇U_double‖ and |U_float - U_double| / |U_double|
/// at the same β, over the same rows (the data are the same simulated numbers, rounded to float).
std::pair<double, double> float_storage_error(const sgmcmc::Model& as_double, const sgmcmc::Model& as_float) {
  const auto every = sgmcmc::every_item(as_double);
  std::vector<double> beta(as_double.dimension());
  sgmcmc::Rng rng(3, 0);
  rng.fill_normal(beta);
  const auto gradient = [&](const sgmcmc::Model& model) {
    auto workspace = model.make_workspace();
    std::vector<double> g(model.dimension(), 0.0);
    model.add_data_gradient(beta, {every}, g, *workspace, rng);
    model.add_prior_gradient(beta, g);
    return std::pair{g, sgmcmc::potential(model, beta, every, *workspace)};
  };
  const auto [g_double, u_double] = gradient(as_double);
  const auto [g_float, u_float] = gradient(as_float);
  double difference = 0.0, norm = 0.0;
  for (std::size_t j = 0; j < g_double.size(); ++j) {
    difference += (g_float[j] - g_double[j]) * (g_float[j] - g_double[j]);
    norm += g_double[j] * g_double[j];
  }
  return {std::sqrt(difference / norm), std::abs(u_float - u_double) / std::abs(u_double)};
}

/// µs of two cblas_dgemv over an N × 55 row-major matrix: z = Xβ, then g = Xᵀz.
double two_dgemv_us(std::size_t rows, int passes) {
  std::vector<double> x(rows * columns, 0.1), beta(columns, 0.01), z(rows), g(columns);
  const auto n = static_cast<int>(rows), d = static_cast<int>(columns);
  const auto start = std::chrono::steady_clock::now();
  for (int p = 0; p < passes; ++p) {
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, d, 1.0, x.data(), d, beta.data(), 1, 0.0, z.data(), 1);
    cblas_dgemv(CblasRowMajor, CblasTrans, n, d, 1.0, x.data(), d, z.data(), 1, 0.0, g.data(), 1);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / passes;
}

/// Runs a reference program and reads the number before " us/iteration" from its output.
std::optional<double> reference_us(const std::string& command) {
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = pclose(pipe);
  const auto at = output.find(" us/iteration");
  const auto colon = output.rfind(": ", at);
  if (status != 0 || at == std::string::npos || colon == std::string::npos) {
    std::fprintf(stderr, "reference failed: %s\n%s", command.c_str(), output.c_str());
    return std::nullopt;
  }
  return std::atof(output.c_str() + colon + 2);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <class Measure>
double median_of(int repetitions, Measure measure) {
  std::vector<double> values;
  for (int r = 0; r < repetitions; ++r) values.push_back(measure());
  return median(std::move(values));
}

std::string ratio(double value, std::optional<double> reference) {
  return reference ? fmt::format("{:6.2f}x", value / *reference) : std::string("     -");
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t iterations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 5000;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 3;
  setenv("OPENBLAS_NUM_THREADS", "1", 1);  // the floor, the dgemv reference and torch: one thread each
  openblas_set_num_threads(1);
  const std::string floor_program = SGMCMC_FLOOR_PROGRAM, torch_script = SGMCMC_TORCH_SCRIPT;
  const bool have_floor = !floor_program.empty() && std::filesystem::exists(floor_program);
  const bool have_torch = !torch_script.empty() && std::filesystem::exists(torch_script) &&
                          std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
  if (!have_floor) std::printf("floor program not built (../shared/bench absent at configure time): no floor column\n");
  if (!have_torch) std::printf("torch peer unavailable (needs ../shared/bench and python3-torch): no torch column\n");

  // The plugin's speed settings, each row changing one thing from the default.
  const std::pair<const char*, const char*> variants[] = {
      {"framework (default: double, prefetch 8, huge pages)", ""},
      {"  no prefetching", "prefetch = 0"},
      {"  prefetch 16 rows ahead", "prefetch = 16"},
      {"  no huge pages", "huge_pages = false"},
      {"  float storage", "storage = \"float\""},
  };
  for (std::size_t rows : {std::size_t{581'012}, std::size_t{20'000}}) {
    std::printf("\nN = %zu, d = %zu, n = %zu, %llu iterations, median of %d runs (µs per iteration)\n", rows, columns,
                batch, static_cast<unsigned long long>(iterations), repetitions);
    const auto args = fmt::format("{} {} {} {}", rows, columns, batch, iterations);
    const auto torch_command =
        fmt::format("/usr/bin/python3 {} {} {} {} {}", torch_script, rows, columns, batch, iterations / 2);
    std::vector<std::shared_ptr<const sgmcmc::Model>> models;
    for (const auto& variant : variants) models.push_back(logistic_model(rows, variant.second));
    // Round robin: every repetition measures each program once, so that a load that comes and
    // goes on the machine falls on all of them alike; then the median of each.
    std::vector<std::vector<double>> framework(models.size());
    std::vector<double> floors, torches;
    for (int r = 0; r < repetitions; ++r) {
      if (have_floor) floors.push_back(reference_us(floor_program + " " + args).value_or(NAN));
      if (have_torch) torches.push_back(reference_us(torch_command).value_or(NAN));
      for (std::size_t v = 0; v < models.size(); ++v) framework[v].push_back(framework_us(models[v], iterations));
    }
    std::optional<double> floor, torch;
    if (have_floor) floor = median(floors);
    if (have_torch) torch = median(torches);
    std::printf("  %-52s %9s %10s %10s\n", "", "µs/iter", "vs floor", "torch/this");
    if (floor) std::printf("  %-52s %9.2f\n", "floor (gather + 2 dgemv, -O3 -march=native)", *floor);
    if (torch) std::printf("  %-52s %9.2f %10s\n", "torch (python3-torch, 1 thread)", *torch, ratio(*torch, floor).c_str());
    for (std::size_t v = 0; v < models.size(); ++v) {
      const double us = median(framework[v]);
      std::printf("  %-52s %9.2f %10s %10s\n", variants[v].first, us, ratio(us, floor).c_str(),
                  torch ? fmt::format("{:6.2f}x", *torch / us).c_str() : "     -");
    }
    const auto model = logistic_model(rows, "");
    const int passes = rows > 100'000 ? 20 : 200;
    const double pass = median_of(repetitions, [&] { return full_pass_us(*model, passes); });
    const double blas = median_of(repetitions, [&] { return two_dgemv_us(rows, passes); });
    std::printf("  full-data gradient pass: %.0f µs; two cblas_dgemv over N × 55: %.0f µs; ratio %.2fx\n", pass, blas,
                pass / blas);
    const double unprefetched = median_of(repetitions, [&] { return full_pass_us(*models[1], passes); });
    std::printf("  full-data gradient pass without prefetching: %.0f µs; ratio %.2fx\n", unprefetched, unprefetched / blas);
    const auto [gradient_error, potential_error] = float_storage_error(*model, *logistic_model(rows, "storage = \"float\""));
    std::printf("  float storage's accuracy at a random β: relative error of ∇U %.1e, of U %.1e\n", gradient_error,
                potential_error);
  }
}
