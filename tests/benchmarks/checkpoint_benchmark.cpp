// What checkpoints cost a run (issue 41 item 18): `sgmcmc run` through the real CLI, one chain
// of the demo preset (gaussian, SGLD, N = 10,000, d = 5, a metric row every 50 iterations), with
// and without a checkpoint every 100 iterations, at run lengths from 25,000 to 200,000
// iterations, with batches of 100 (the preset: about 2 µs an iteration) and of 1,000 (about 20
// µs, nearer a real model's step). Printed figures, not a timed test:
//
//   build/release/tests/benchmarks/checkpoint_benchmark
//
// Goal: the time with checkpoints linear in run length (each column's µs per iteration flat
// across lengths: a checkpoint writes what it wrote at the start, not every metric row so far)
// and ≤ 1.3× the time without. A checkpoint has a fixed cost (the chain's state, written over
// the older of the checkpoint file's two slots; the metric rows since the last one appended), which the ratio sets against 100 iterations' work. Each figure is the
// fastest of three runs (the machine is shared). Folders go to the system's temporary folder.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <fmt/format.h>

namespace fs = std::filesystem;

namespace {

/// Wall seconds of the fastest of `repetitions` runs of `arguments`, into a fresh folder each.
double fastest_run(const std::string& arguments, int repetitions = 3) {
  const fs::path out = fs::temp_directory_path() / "sgmcmc-checkpoint-benchmark";
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    fs::remove_all(out);
    const auto started = std::chrono::steady_clock::now();
    const std::string command = fmt::format("'{}' run {} --quiet --out '{}'", SGMCMC_CLI, arguments, out.string());
    if (std::system(command.c_str()) != 0) {
      fmt::print(stderr, "failed: {}\n", command);
      std::exit(1);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  fs::remove_all(out);
  return best;
}

}  // namespace

int main() {
  for (const int batch : {100, 1000}) {
    fmt::print("\nsgmcmc run --preset demo --chains 1 --set estimator.batch_size={} (a metric row every 50 "
               "iterations), fastest of 3\n", batch);
    fmt::print("{:>10} {:>12} {:>12} {:>8} {:>16} {:>18}\n", "iterations", "plain s", "every 100 s", "ratio",
               "plain us/iter", "every 100 us/iter");
    for (const std::uint64_t iterations : {25'000, 50'000, 100'000, 200'000}) {
      const std::string run = fmt::format("--preset demo --chains 1 --set estimator.batch_size={} --set run.iterations={}",
                                          batch, iterations);
      const double plain = fastest_run(run);
      const double checkpointed = fastest_run(run + " --checkpoint-every 100");
      const double per = 1e6 / static_cast<double>(iterations);
      fmt::print("{:>10} {:>12.3f} {:>12.3f} {:>8.2f} {:>16.2f} {:>18.2f}\n", iterations, plain, checkpointed,
                 checkpointed / plain, plain * per, checkpointed * per);
    }
  }
}
