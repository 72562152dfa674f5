// The variance-reduced estimators' contracts with the rest of the framework: bad input refused
// when the estimator is built (before any work), SAGA's memory check, a diverging centring phase,
// cost reported through the chain's accounting (centring included), and reproducibility by seed.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "gaussian_fixture.hpp"
#include "statistical/estimator_support.hpp"
#include "reading.hpp"

using Catch::Matchers::Contains;

namespace {

/// A model that only knows its sizes: building an estimator must not touch the data, so a
/// SAGA table far too large for memory is refused without being allocated.
class SizesOnly final : public sgmcmc::Model {
public:
  SizesOnly(std::size_t items, std::size_t dimension) : items_(items), dimension_(dimension) {}
  std::size_t dimension() const override { return dimension_; }
  std::size_t num_items() const override { return items_; }
  std::vector<std::string> parameter_names() const override { return std::vector<std::string>(dimension_, "x"); }
  sgmcmc::Capabilities capabilities() const override { return {.per_item_gradients = true}; }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double>, const sgmcmc::Batch&, std::span<double>, sgmcmc::Workspace&,
                         sgmcmc::Rng&) const override {}

private:
  std::size_t items_, dimension_;
};

void expect_refusal(const std::string& toml, const sgmcmc::Model& model, const std::string& fragment) {
  INFO(toml);
  CHECK_THROWS_AS(test::make_estimator(toml, model), sgmcmc::Error);
  CHECK_THROWS_WITH(test::make_estimator(toml, model), Contains(fragment));
}

struct Recorder final : sgmcmc::ChainObserver {
  std::vector<std::vector<double>> draws;
  std::vector<sgmcmc::Cost> costs;  // at each metrics row
  void on_draw(const sgmcmc::Draw& draw) override { draws.emplace_back(draw.theta.begin(), draw.theta.end()); }
  void on_metrics(const sgmcmc::MetricsRow& row) override { costs.push_back(row.cost); }
};

struct Run {
  sgmcmc::ChainResult result;
  Recorder recorder;
};

Run run_chain(std::shared_ptr<const sgmcmc::Model> model, const std::string& estimator_toml, std::uint64_t iterations,
              std::uint64_t seed = 11) {
  auto config = sgmcmc::parse_config("[estimator]\n" + estimator_toml + "[integrator]\nname = \"sgld\"\nstep_size = 1e-3\n",
                                     "c.toml");
  sgmcmc::ConfigReads reads;
  auto chain = sgmcmc::make_chain(sgmcmc::plan_chain({config, reads}, *model), model, sgmcmc::Rng(seed, sgmcmc::chain_stream(0)));
  sgmcmc::reject_unknown_keys(config["estimator"], reads["estimator"]);
  Run run;
  run.result = chain->run({.iterations = iterations, .thin = 1, .eval_every = 1}, run.recorder);
  return run;
}

}  // namespace

TEST_CASE("bad estimator input is refused when the estimator is built, with the key named") {
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  for (const char* name : {"cv", "svrg", "saga"}) {
    const std::string head = fmt::format("name = \"{}\"\n", name);
    expect_refusal(head + "batch_size = 51\n", model,
                   "estimator.toml:3: estimator.batch_size: a batch of 51 items is larger than the data set (N = 50 items)");
    expect_refusal(head + "batch_size = 0\n", model, "estimator.batch_size: expected an integer >= 1, found 0");
    expect_refusal(head + "batch_size = -3\n", model, "estimator.batch_size: expected an integer >= 1, found -3");
    expect_refusal(head + "sampling = \"importance\"\n", model, "estimator.sampling: unknown sampling 'importance'");
    expect_refusal(head + "sampling = \"lipschitz\"\nreplacement = false\n", model,
                   "estimator.replacement: expected true with sampling = 'lipschitz', which draws items independently");
    const SizesOnly no_bounds(50, 3);
    expect_refusal(head + "sampling = \"lipschitz\"\n", no_bounds, "needs a model with the 'lipschitz-bounds' capability");
  }
  expect_refusal("name = \"svrg\"\nperiod = 0\n", model, "estimator.period: expected an integer >= 1, found 0");
  expect_refusal("name = \"cv\"\nsgd_schedule = \"cosine\"\n", model,
                 "estimator.sgd_schedule: unknown sgd_schedule 'cosine'; known: polynomial");
  expect_refusal("name = \"cv\"\nsgd_decay_c = 0.4\n", model, "estimator.sgd_decay_c: expected 0.5 < c <= 1");
  expect_refusal("name = \"cv\"\nsgd_step_size = -1\n", model, "estimator.sgd_step_size: expected a number > 0, or 0 for");
  expect_refusal("name = \"cv\"\nsgd_iterations = -1\n", model, "estimator.sgd_iterations: expected an integer >= 0");
  expect_refusal("name = \"cv\"\ncentre_passes = 0\n", model, "estimator.centre_passes: expected an integer >= 1");
  // Averaging full passes only means something when the full gradient is random (Gibbs-sampled).
  expect_refusal("name = \"cv\"\ncentre_passes = 2\n", model,
                 "estimator.centre_passes = 2: only a model whose gradient Gibbs-samples latent variables");
  expect_refusal("name = \"cv\"\ncentre = \"1, 2\"\n", model, "estimator.centre: 2 number(s) given; the model has 3 parameters");
  expect_refusal("name = \"cv\"\ncentre = \"1, two, 3\"\n", model, "estimator.centre: 'two' is not a finite number");
  expect_refusal("name = \"cv\"\ncentre = \"1, 2, 3\"\nsgd_step_size = 0.1\n", model,
                 "estimator.sgd_step_size: not used when estimator.centre is given");
  expect_refusal("name = \"cv\"\ncentring = \"adam\"\n", model, "estimator.centring: unknown centring 'adam'; known: sgd");
  expect_refusal("name = \"cv\"\ncentre = \"1, 2, 3\"\ncentring = \"sgld\"\n", model,
                 "estimator.centring: not used when estimator.centre is given");
  expect_refusal("name = \"saga\"\nmemory_limit_mb = 0\n", model, "estimator.memory_limit_mb: expected a number > 0");
  // The defaults adapt to a data set smaller than the default batch: no error.
  const SizesOnly tiny(10, 1);
  for (const char* name : {"cv", "svrg", "saga"}) CHECK_NOTHROW(test::make_estimator(fmt::format("name = \"{}\"\n", name), tiny));
}

TEST_CASE("an estimator built in code is checked against its struct's field table, naming the key") {
  // The same constraints as the configuration's (one description of each): a struct that skips
  // from_settings is refused by make_estimator with "estimator <name>: <key>: expected ...".
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  CHECK_THROWS_WITH(sgmcmc::make_estimator(sgmcmc::CvParameters{.sgd = {.decay_c = 0.3}}, model),
                    Contains("estimator cv: sgd_decay_c: expected 0.5 < c <= 1") && Contains("found 0.3"));
  CHECK_THROWS_WITH(sgmcmc::make_estimator(sgmcmc::CvParameters{.sgd = {.step_size = -1.0}}, model),
                    Contains("estimator cv: sgd_step_size: expected a number > 0, or 0 for 1/λ̂"));
  CHECK_THROWS_WITH(sgmcmc::make_estimator(sgmcmc::CvParameters{.centre_passes = 0}, model),
                    Contains("estimator cv: centre_passes: expected an integer >= 1, found 0"));
  CHECK_THROWS_WITH(sgmcmc::make_estimator(sgmcmc::SagaParameters{.memory_limit_mb = 0.0}, model),
                    Contains("estimator saga: memory_limit_mb: expected a number > 0, found 0"));
  CHECK_THROWS_WITH(sgmcmc::make_estimator(sgmcmc::SvrgParameters{.period = 0}, model),
                    Contains("estimator svrg: period: expected an integer >= 1, found 0"));
  CHECK_THROWS_WITH(
      sgmcmc::make_estimator(
          sgmcmc::SvrgParameters{.batches = {.sampling = sgmcmc::Sampling::lipschitz, .replacement = false}}, model),
      Contains("estimator svrg: replacement: expected true with sampling = 'lipschitz'"));
  // What the tables accept is built: a constant centring schedule reads no c.
  CHECK_NOTHROW(sgmcmc::make_estimator(
      sgmcmc::CvParameters{.sgd = {.schedule = sgmcmc::SgdScheduleKind::constant, .decay_c = 0.3}}, model));
}

TEST_CASE("saga refuses a table above memory_limit_mb, stating the bytes, GLM models need N scalars, not N × d") {
  // N = 50, d = 3: the compact table is 50 × 8 = 400 bytes, the full one 50 × 3 × 8 = 1,200 bytes.
  // A limit of 0.001 MB = 1,048.576 bytes lets the first through and refuses the second.
  test::GaussianFixture fixture(50, 3);
  const test::MaskedModel without_glm(fixture.model, false, true);
  const std::string toml = "name = \"saga\"\nmemory_limit_mb = 0.001\n";
  CHECK_NOTHROW(test::make_estimator(toml, *fixture.model));
  expect_refusal(toml, without_glm, "estimator.memory_limit_mb: estimator 'saga' needs a gradient table of 1200 bytes");
  // 10⁶ items × 10⁴ parameters would be 80 GB: refused with the default limit (1024 MB), before
  // anything is allocated (SizesOnly holds no data, and the test would fail on allocation).
  expect_refusal("name = \"saga\"\n", SizesOnly(1'000'000, 10'000),
                 "needs a gradient table of 80000000000 bytes (76293.95 MB = N 1000000 items × d 10000 × 8 bytes) per "
                 "chain, more than the limit of 1024 MB");
}

TEST_CASE("saga's memory_limit_mb counts the tables of all of a run's chains together") {
  // 10⁶ items × d 10 without the GLM form: a full table of 80,000,000 bytes (76.29 MB) per chain.
  // A limit of 200 MB holds two chains' tables (152.6 MB) and not three (228.9 MB).
  auto config = sgmcmc::parse_config("[estimator]\nname = \"saga\"\nmemory_limit_mb = 200\n", "saga.toml");
  const SizesOnly model(1'000'000, 10);
  CHECK(sgmcmc::estimator_memory_refusal(sgmcmc::SectionReader(config["estimator"]), model, 2).empty());
  CHECK_THAT(sgmcmc::estimator_memory_refusal(sgmcmc::SectionReader(config["estimator"]), model, 3),
             Contains("saga.toml:3: estimator.memory_limit_mb: estimator 'saga' needs a gradient table of 80000000 bytes "
                      "(76.29 MB = N 1000000 items × d 10 × 8 bytes) per chain, 228.88 MB for 3 chains, more than the limit "
                      "of 200 MB for all chains together"));
  // Estimators without a table are never refused for it.
  auto minibatch = sgmcmc::parse_config("[estimator]\nname = \"minibatch\"\n", "minibatch.toml");
  CHECK(sgmcmc::estimator_memory_refusal(sgmcmc::SectionReader(minibatch["estimator"]), model, 1000).empty());
}

TEST_CASE("a diverging cv centring stops with a message naming the phase and suggesting a smaller step") {
  test::GaussianFixture fixture(50, 3);
  const auto& model = *fixture.model;
  test::EstimatorBench bench(model);
  // λ_max(A) ≈ 200 here: a step of 10 multiplies the error by about -2,000 per step, past 1e308
  // within 100 steps.
  auto cv = test::make_estimator("name = \"cv\"\nbatch_size = 5\nsgd_step_size = 10\nsgd_iterations = 500\n", model);
  std::vector<double> theta(3, 0.0);
  CHECK_THROWS_WITH(cv->prepare(theta, bench.context),
                    Contains("estimator 'cv', SGD centring phase: θ is no longer finite") &&
                        Contains("try a smaller estimator.sgd_step_size (now 10)"));
  // A given centre whose gradient overflows: the full pass names itself.
  auto far = test::make_estimator("name = \"cv\"\ncentre = \"1e307, -1e307, 1e307\"\n", model);
  CHECK_THROWS_WITH(far->prepare(theta, bench.context),
                    Contains("full-gradient pass at the centre θ̂: ∇U(θ̂) is not finite") && Contains("estimator.centre"));
  // Through a chain, the error leaves Chain::run before the first draw.
  CHECK_THROWS_WITH(run_chain(fixture.model, "name = \"cv\"\nsgd_step_size = 10\nsgd_iterations = 500\n", 10),
                    Contains("SGD centring phase"));
}

TEST_CASE("every estimator's cost reaches the chain's accounting, cv's centring phase is in the first metrics row") {
  // N = 50, n = 5, 10 iterations of SGLD (one estimate each). Item gradients:
  //   cv (GLM form):    centring: 10 curvature probes × 2 batches × 5 = 100 for the automatic
  //                     first step, 7 SGD steps × 5 = 35, full pass 50; then 10 × 5 (one batch
  //                     at θ; s_i(θ̂) kept)                                                        = 235
  //   cv (two sums):    185 + 10 × 2 × 5 (∇f_i at θ and at θ̂)                                    = 285
  //   cv, given step:   35 + 50 + 10 × 5 (no curvature probes)                                   = 135
  //   svrg, period 4:   snapshots at estimates 1, 5, 9: 3 × 50, plus 7 × 5                      = 185
  //   saga:             the table's full pass at estimate 1, then 9 × 5                          = 95
  //   minibatch:        10 × 5 = 50;  exact: 10 × 50 = 500 with 10 full passes
  test::GaussianFixture fixture(50, 3);
  const auto generic = std::make_shared<test::MaskedModel>(fixture.model, false, true);
  struct Expected {
    std::shared_ptr<const sgmcmc::Model> model;
    std::string toml;
    std::uint64_t first_row, total, full_passes;
  };
  const std::string cv = "name = \"cv\"\nbatch_size = 5\nsgd_iterations = 7\n";
  const Expected cases[] = {
      {fixture.model, cv, 185 + 5, 235, 1},
      {generic, cv, 185 + 10, 285, 1},
      {fixture.model, cv + "sgd_step_size = 1e-3\n", 35 + 50 + 5, 135, 1},
      {fixture.model, "name = \"svrg\"\nbatch_size = 5\nperiod = 4\n", 50, 185, 3},
      {fixture.model, "name = \"saga\"\nbatch_size = 5\n", 50, 95, 1},
      {fixture.model, "name = \"minibatch\"\nbatch_size = 5\n", 5, 50, 0},
      {fixture.model, "name = \"exact\"\n", 50, 500, 10},
  };
  for (const auto& c : cases) {
    INFO(c.toml);
    const auto run = run_chain(c.model, c.toml, 10);
    REQUIRE(run.recorder.costs.size() == 10);
    CHECK(run.recorder.costs.front().item_gradients == c.first_row);
    CHECK(run.result.cost.item_gradients == c.total);
    CHECK(run.result.cost.full_passes == c.full_passes);
  }
}

TEST_CASE("same seed, same draws: every estimator draws only from the chain's own stream") {
  test::GaussianFixture fixture(50, 3);
  for (const char* toml : {"name = \"cv\"\nbatch_size = 5\n", "name = \"cv\"\nbatch_size = 5\nsampling = \"lipschitz\"\n",
                           "name = \"svrg\"\nbatch_size = 5\nreplacement = true\n", "name = \"saga\"\nbatch_size = 5\n"}) {
    INFO(toml);
    const auto a = run_chain(fixture.model, toml, 200, 5), b = run_chain(fixture.model, toml, 200, 5);
    const auto c = run_chain(fixture.model, toml, 200, 6);
    CHECK(a.recorder.draws == b.recorder.draws);  // bit for bit
    CHECK(a.recorder.draws != c.recorder.draws);
  }
}
