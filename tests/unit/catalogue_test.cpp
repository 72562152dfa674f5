// The catalogues of estimators, integrators and correctors: each entry's declared keys are
// exactly the keys its reader reads (the runner relies on them to tell "not used by this
// choice" from "unknown").
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "targets.hpp"
#include "reading.hpp"

import sgmcmc;

using Catch::Matchers::Contains;

namespace {

class TinyModel final : public sgmcmc::Model {
public:
  std::size_t dimension() const override { return 1; }
  std::size_t num_items() const override { return 10; }
  std::vector<std::string> parameter_names() const override { return {"x"}; }
  sgmcmc::Capabilities capabilities() const override { return {}; }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double>, const sgmcmc::Batch&, std::span<double>, sgmcmc::Workspace&,
                         sgmcmc::Rng&) const override {}
};

std::set<std::string> read_keys(const sgmcmc::SectionReads& reads) {
  std::set<std::string> keys;
  for (const auto& [key, value] : reads.in_force)
    if (key != "name") keys.insert(key);
  return keys;
}

/// `context`: other sections the build needs (a corrector's integrator), as TOML.
template <class Catalogue, class Build>
void check_declared_keys(const Catalogue& catalogue, const char* section, Build build, const std::string& context = "") {
  for (const auto& entry : catalogue) {
    auto config = sgmcmc::parse_config(fmt::format("{}[{}]\nname = \"{}\"\n", context, section, entry.name), "k.toml");
    sgmcmc::ConfigReads reads;
    build(sgmcmc::ConfigReader(config, reads));
    INFO(section << " " << entry.name);
    CHECK(read_keys(reads[section]) == std::set<std::string>(entry.keys.begin(), entry.keys.end()));
  }
}

}  // namespace

TEST_CASE("every catalogue entry declares exactly the keys it reads") {
  const TinyModel model;
  check_declared_keys(sgmcmc::estimator_catalogue(), "estimator", [&](sgmcmc::ConfigReader c) { sgmcmc::make_estimator(c["estimator"], model); });
  check_declared_keys(sgmcmc::integrator_catalogue(), "integrator", [](sgmcmc::ConfigReader c) { sgmcmc::make_integrator(c["integrator"]); });
  const test::NormalTarget exact_model(0.0, 1.0);  // has an exact log-likelihood
  check_declared_keys(sgmcmc::corrector_catalogue(), "corrector", [&](sgmcmc::ConfigReader c) { sgmcmc::plan_chain(c, exact_model); },
                      "[integrator]\nname = \"obabo\"\n[estimator]\nname = \"exact\"\n");
}

TEST_CASE("mh is refused on a model without an exact log-likelihood, naming the capability") {
  const TinyModel model;
  auto config = sgmcmc::parse_config("[integrator]\nname = \"obabo\"\n[corrector]\nname = \"mh\"\n[estimator]\nname = \"exact\"\n",
                                     "m.toml");
  CHECK_THROWS_WITH(test::plan_chain(config, model),
                    Contains("m.toml:4: corrector.name") && Contains("'exact-log-likelihood' capability"));
  const test::NormalTarget exact_model(0.0, 1.0);  // has an exact log-likelihood
  CHECK(test::plan_chain(config, exact_model).corrector == "mh");
}

TEST_CASE("a key of another component is 'not used', any other unread key is an error") {
  const TinyModel model;
  auto config = sgmcmc::parse_config("[estimator]\nname = \"exact\"\nbatch_size = 5\n", "w.toml");
  sgmcmc::SectionReads reads;
  sgmcmc::make_estimator(sgmcmc::SectionReader(config["estimator"], reads), model);
  const auto warnings = sgmcmc::reject_unknown_keys(config["estimator"], reads, sgmcmc::all_keys(sgmcmc::estimator_catalogue()));
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("w.toml:3: estimator.batch_size is not used by estimator 'exact'"));
  CHECK_THROWS_WITH(sgmcmc::reject_unknown_keys(config["estimator"], reads), Contains("unknown key 'estimator.batch_size'"));
}

TEST_CASE("mh is refused after the history-dependent estimators svrg and saga, naming the estimator and why") {
  // Their estimates depend on earlier states (a snapshot, a table), so the reverse of a block
  // cannot reproduce its kicks and the MH test of Garriga-Alonso & Fortuin (2021) is not exact.
  const test::NormalTarget exact_model(0.0, 1.0);
  for (const char* estimator : {"svrg", "saga"}) {
    auto config = sgmcmc::parse_config(
        fmt::format("[estimator]\nname = \"{}\"\n[integrator]\nname = \"obabo\"\n[corrector]\nname = \"mh\"\n", estimator),
        "h.toml");
    INFO(estimator);
    CHECK_THROWS_WITH(test::plan_chain(config, exact_model),
                      Contains("h.toml:6: corrector.name") && Contains(fmt::format("estimator '{}'", estimator)) &&
                          Contains("depends on the chain's history"));
  }
  for (const char* estimator : {"exact", "minibatch", "cv"}) {  // these draw each batch afresh: accepted
    auto config = sgmcmc::parse_config(
        fmt::format("[estimator]\nname = \"{}\"\n[integrator]\nname = \"obabo\"\n[corrector]\nname = \"mh\"\nevery = 2\n",
                    estimator),
        "h.toml");
    CHECK(test::plan_chain(config, exact_model).corrector == "mh");
  }
}

TEST_CASE("mh over blocks of one step with exact endpoints refuses a stochastic estimator it would never call") {
  // Every step ends a block, and a block's last step takes the exact estimator: minibatch and cv
  // gradients would be replaced, each step a full pass. Blocks of 2 steps, or stochastic endpoints,
  // use them; the exact estimator is what such a chain runs anyway (MALA, HMC, exact OBABO).
  const test::NormalTarget model(0.0, 1.0);
  const auto corrector = [&](const std::string& estimator, const std::string& corrector_keys) {
    auto config = sgmcmc::parse_config(fmt::format("[estimator]\nname = \"{}\"\n[integrator]\nname = \"obabo\"\n"
                                                   "[corrector]\nname = \"mh\"\n{}",
                                                   estimator, corrector_keys),
                                       "e.toml");
    return test::plan_chain(config, model).corrector;
  };
  for (const char* estimator : {"minibatch", "cv"}) {
    INFO(estimator);
    CHECK_THROWS_WITH(corrector(estimator, ""), Contains("e.toml:6: corrector.name") &&
                                                    Contains(fmt::format("estimator '{}' would never be used", estimator)));
    CHECK_THROWS_WITH(corrector(estimator, "every = 1\nexact_endpoints = true\n"), Contains("would never be used"));
    CHECK(corrector(estimator, "every = 2\n") == "mh");
    CHECK(corrector(estimator, "exact_endpoints = false\n") == "mh");
  }
  CHECK(corrector("exact", "") == "mh");
}

TEST_CASE("a chain plan holds its parts' parameters: chains built after its configuration is gone are those of the typed parameters") {
  // plan_chain reads each section once into typed parameters; make_chain reads no text. A recipe
  // that kept a reference into the configuration, or lost a key, would give other draws than the
  // chain built here from the same parameters in code (or, freed, fail under ASan).
  const auto model = std::make_shared<test::NormalTarget>(1.0, 2.0);
  std::optional<sgmcmc::ChainPlan> plan;
  {
    const auto config = sgmcmc::parse_config(
        "[estimator]\nname = \"exact\"\n[integrator]\nname = \"obabo\"\nstep_size = 0.3\nfriction = 2.0\n"
        "temperature = 1.5\n[corrector]\nname = \"mh\"\nevery = 3\n",
        "p.toml");
    plan = test::plan_chain(config, *model);
  }
  CHECK(plan->estimator == "exact");
  CHECK(plan->integrator == "obabo");
  CHECK(plan->corrector == "mh");
  const sgmcmc::ChainSchedule schedule{.iterations = 300, .thin = 3, .eval_every = 300};
  const auto draws_of = [&](sgmcmc::Chain& chain) {
    test::Draws draws;
    chain.run(schedule, draws);
    return draws.rows;
  };
  auto integrator = sgmcmc::make_integrator(
      sgmcmc::ObaboParameters{.schedule = {.step_size = 0.3}, .temperature = 1.5, .friction = 2.0});
  auto corrector = sgmcmc::make_corrector(sgmcmc::MhParameters{.every = 3}, {*model, *integrator});
  sgmcmc::Chain typed(model, sgmcmc::make_estimator(sgmcmc::ExactParameters{}, *model), std::move(integrator),
                      std::move(corrector), sgmcmc::Rng(9, sgmcmc::chain_stream(0)));
  const auto expected = draws_of(typed);
  REQUIRE(expected.size() == 100);
  for (int copy = 0; copy < 2; ++copy)  // a plan builds as many chains as asked, each the same
    CHECK(draws_of(*sgmcmc::make_chain(*plan, model, sgmcmc::Rng(9, sgmcmc::chain_stream(0)))) == expected);
}

namespace {
/// plan_run on `toml` for `model`, [run] read first as the runner reads it.
sgmcmc::RunPlan plan_of(const std::string& toml, const std::shared_ptr<const sgmcmc::Model>& model) {
  const auto config = sgmcmc::parse_config(toml, "r.toml");
  sgmcmc::ConfigReads reads;
  const sgmcmc::ConfigReader read(config, reads);
  return sgmcmc::plan_run(read, sgmcmc::read_run_schedule(read["run"], read["integrator"]), model);
}
}  // namespace

TEST_CASE("plan_run refuses run.lp on a model without an exact log-likelihood, naming the key") {
  CHECK_THROWS_WITH(plan_of("[run]\nlp = true\n", std::make_shared<TinyModel>()),
                    Contains("r.toml:2: run.lp") && Contains("'exact-log-likelihood' capability"));
  CHECK(plan_of("[run]\nlp = true\n", std::make_shared<test::NormalTarget>(0.0, 1.0)).schedule.chain.compute_lp);
}

TEST_CASE("plan_run plans a burn-in once, from the run's sections with the burn-in's own in their place") {
  const auto model = std::make_shared<test::NormalTarget>(0.0, 1.0);
  const std::string run = "[integrator]\nname = \"obabo\"\nstep_size = 0.2\n[estimator]\nname = \"exact\"\n"
                          "[corrector]\nname = \"mh\"\nevery = 4\n";
  const auto plan = plan_of(run + "[burn_in]\niterations = 12\n[burn_in.integrator]\nname = \"sghmc\"\nstep_size = 0.01\n"
                                  "[burn_in.corrector]\nname = \"none\"\n",
                            model);
  CHECK(plan.chain.integrator == "obabo");
  REQUIRE(plan.burn_in);
  CHECK(plan.burn_in->chain.integrator == "sghmc");
  CHECK(plan.burn_in->chain.estimator == "exact");  // not given: the run's own
  CHECK(plan.burn_in->own_integrator);
  CHECK(plan.burn_in->seed == sgmcmc::burn_in_seed(plan.schedule.seed));
  CHECK(plan.burn_in->schedule.warmup == 12);
  CHECK(plan.burn_in->schedule.iterations == 0);
  // With the run's own MH blocks of 4, 12 iterations end a block and 10 do not; a misspelt key of
  // [burn_in] is named before the missing length.
  CHECK_FALSE(plan_of(run + "[burn_in]\niterations = 12\n", model).burn_in->own_integrator);
  CHECK_THROWS_WITH(plan_of(run + "[burn_in]\niterations = 10\n", model),
                    Contains("burn_in.iterations = 10 must be a multiple") && Contains("corrector.every = 4"));
  CHECK_THROWS_WITH(plan_of(run + "[burn_in]\niteration = 12\n", model), Contains("burn_in.iteration") && Contains("iterations"));
  CHECK_FALSE(plan_of("[run]\nseed = 3\n", model).burn_in);
}
