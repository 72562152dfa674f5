// Settings, TOML configuration and --set overrides: values, types, and errors that name the
// file, the line and the key.
#include <catch2/catch.hpp>
#include <string>
#include <variant>
#include <vector>

import sgmcmc;

using Catch::Matchers::Contains;

TEST_CASE("edit distance and did-you-mean") {
  CHECK(sgmcmc::edit_distance("kitten", "sitting") == 3);
  CHECK(sgmcmc::edit_distance("", "abc") == 3);
  CHECK(sgmcmc::closest_match("step_sise", {"step_size", "temperature"}) == "step_size");
  CHECK(sgmcmc::closest_match("zzzzzz", {"step_size", "temperature"}).empty());
}

TEST_CASE("a TOML configuration gives typed values with their file and line") {
  const auto config = sgmcmc::parse_config(
      "[model]\nname = \"gaussian\"\nn = 10\n\n[integrator]\nstep_size = 1e-3\n[run]\nlp = true\n", "my.toml");
  CHECK(config["model"].text("name", "") == "gaussian");
  CHECK(config["model"].integer("n", 0) == 10);
  CHECK(config["model"].number("n", 0.0) == 10.0);  // an integer is a number too
  CHECK(config["integrator"].number("step_size", 0.0) == 1e-3);
  CHECK(config["run"].flag("lp", false));
  CHECK(config["estimator"].integer("batch_size", 7) == 7);  // default when absent
  CHECK(config["model"].describe("n") == "my.toml:3: model.n");
}

TEST_CASE("malformed TOML is reported with file and line") {
  CHECK_THROWS_WITH(sgmcmc::parse_config("[model]\nname = \"gaussian\nn = 3\n", "bad.toml"),
                    Contains("bad.toml:2") && Contains("malformed TOML"));
}

TEST_CASE("an unknown section is an error with a suggestion") {
  CHECK_THROWS_WITH(sgmcmc::parse_config("[integrater]\nname = \"sgld\"\n", "x.toml"),
                    Contains("x.toml:1") && Contains("unknown section [integrater]") && Contains("did you mean [integrator]"));
}

TEST_CASE("a value of the wrong type names key, place and expected type") {
  const auto config = sgmcmc::parse_config("[integrator]\nstep_size = \"big\"\n", "t.toml");
  CHECK_THROWS_WITH(config["integrator"].number("step_size", 1.0),
                    Contains("t.toml:2: integrator.step_size") && Contains("expected a number") && Contains("a string"));
}

TEST_CASE("bounds are checked") {
  const auto config = sgmcmc::parse_config("[run]\niterations = 0\n[integrator]\nstep_size = -1\n", "b.toml");
  CHECK_THROWS_WITH(config["run"].integer_at_least("iterations", 10, 1), Contains("b.toml:2: run.iterations") && Contains(">= 1"));
  CHECK_THROWS_WITH(config["integrator"].positive_number("step_size", 1.0), Contains("b.toml:4") && Contains("> 0"));
}

TEST_CASE("keys nobody read are unknown, with a did-you-mean") {
  const auto config = sgmcmc::parse_config("[integrator]\nstep_sise = 0.1\n", "u.toml");
  config["integrator"].number("step_size", 1.0);
  config["integrator"].number("temperature", 1.0);
  CHECK_THROWS_WITH(config["integrator"].reject_unknown_keys(),
                    Contains("u.toml:2: unknown key 'integrator.step_sise'") && Contains("did you mean 'integrator.step_size'"));
}

TEST_CASE("the resolved configuration holds defaults and set values") {
  const auto config = sgmcmc::parse_config("[run]\nthin = 3\n", "r.toml");
  config["run"].integer("thin", 1);
  config["run"].integer("chains", 4);
  const auto& resolved = config["run"].resolved();
  CHECK(std::get<std::int64_t>(resolved.at("thin")) == 3);
  CHECK(std::get<std::int64_t>(resolved.at("chains")) == 4);
}

TEST_CASE("overrides (--set) read booleans, integers, numbers and strings") {
  auto config = sgmcmc::parse_config("[model]\nname = \"gaussian\"\n", "o.toml");
  for (const char* assignment : {"model.n=12", "model.noise_sd=0.5", "run.lp=true", "model.data=\"a b.csv\"", "model.name=other"})
    sgmcmc::apply_override(config, assignment);
  CHECK(config["model"].integer("n", 0) == 12);
  CHECK(config["model"].number("noise_sd", 0.0) == 0.5);
  CHECK(config["run"].flag("lp", false));
  CHECK(config["model"].text("data", "") == "a b.csv");
  CHECK(config["model"].text("name", "") == "other");
  CHECK(config["model"].describe("n") == "--set model.n=12: model.n");
  CHECK_THROWS_WITH(sgmcmc::apply_override(config, "model=3"), Contains("expected section.key=value"));
  CHECK_THROWS_WITH(sgmcmc::apply_override(config, "modle.n=3"), Contains("did you mean [model]"));
}

TEST_CASE("an unknown component name lists the known ones") {
  const auto config = sgmcmc::parse_config("[integrator]\nname = \"sgdl\"\n[estimator]\nname = \"magic\"\n", "c.toml");
  CHECK_THROWS_WITH(sgmcmc::make_integrator(config["integrator"]),
                    Contains("c.toml:2") && Contains("unknown integrator 'sgdl'") && Contains("did you mean 'sgld'") && Contains("known: sgld"));
}
