// The chain's sampling seconds leave out what its observer does with each draw
// (modules/sampler/chain.cpp, SamplingClock): a draw written without lp__ is timed by the steady
// clock alone, its CPU seconds taken at the next reading of the thread's CPU clock.
#include <cstdint>
#include <memory>
#include <time.h>
#include <catch2/catch.hpp>
#include "targets.hpp"
#include "reading.hpp"

import sgmcmc;

namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Spends `spin` CPU seconds of the chain's thread on each draw, as writing a wide row would.
struct BusyObserver final : sgmcmc::ChainObserver {
  explicit BusyObserver(double spin) : spin(spin) {}
  void on_draw(const sgmcmc::Draw&) override {
    const double start = thread_cpu_seconds();
    while (thread_cpu_seconds() - start < spin) {
    }
    spent += thread_cpu_seconds() - start;
  }
  void on_metrics(const sgmcmc::MetricsRow&) override {}
  double spin, spent = 0.0;
};

}  // namespace

TEST_CASE("a chain's CPU seconds leave out the CPU its observer spends on each draw") {
  // 2,000 SGLD steps on a 1-d normal with its exact gradient take about a millisecond; the observer
  // spends 100 µs of CPU on each of the 2,000 draws, 0.2 s in all. Sampling seconds that counted
  // the draws' CPU would be at least those 0.2 s; left out, what remains is the steps' own time
  // (the observer's share of the wall seconds taken off the CPU seconds), a few ms even on a loaded
  // core. The bound, a quarter of the observer's CPU, sits between the two by a wide margin.
  const auto model = std::make_shared<test::NormalTarget>(0.0, 1.0);
  auto config = sgmcmc::parse_config("[estimator]\nname = \"exact\"\n[integrator]\nname = \"sgld\"\nstep_size = 0.01\n",
                                     "test.toml");
  auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(7, sgmcmc::chain_stream(0)));
  BusyObserver observer(100e-6);
  const std::uint64_t iterations = 2000;
  const auto result = chain->run({.iterations = iterations, .eval_every = iterations}, observer);
  INFO("observer " << observer.spent << " CPU s; chain " << result.cpu_seconds << " CPU s, " << result.seconds << " s");
  REQUIRE(observer.spent >= 0.2);
  CHECK(result.cpu_seconds >= 0.0);
  CHECK(result.cpu_seconds < 0.25 * observer.spent);
  CHECK(result.seconds < 0.25 * observer.spent);
  CHECK(result.cpu_seconds <= result.seconds + 1e-3);  // a thread's CPU time cannot exceed its wall time
}
