// sgmcmc.state: values come back with the same bits, a checkpoint read as another layout or a
// damaged file is refused with a message naming it, a random stream restored continues with the
// same numbers, and a run's configuration written as TOML reads back to the same values.
#include <catch2/catch.hpp>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;

TEST_CASE("state values round-trip bit for bit, each read as the type it was written") {
  const std::vector<double> awkward = {-0.0, std::numeric_limits<double>::denorm_min(), 0.1, -1e308,
                                       std::numeric_limits<double>::infinity(), std::nan("0x5")};
  const std::vector<std::size_t> permutation = {3, 0, 2, 1};
  sgmcmc::StateWriter out;
  out.section("part");
  out.count(~std::uint64_t{0});
  out.number(awkward[5]);
  out.flag(true);
  out.text("pcg");
  out.numbers(awkward);
  out.indices(permutation);

  sgmcmc::StateReader in(out.bytes(), "memory");
  in.section("part");
  CHECK(in.count() == ~std::uint64_t{0});
  CHECK(std::bit_cast<std::uint64_t>(in.number()) == std::bit_cast<std::uint64_t>(awkward[5]));  // the NaN payload
  CHECK(in.flag());
  CHECK(in.text() == "pcg");
  const auto numbers = in.numbers();
  REQUIRE(numbers.size() == awkward.size());
  for (std::size_t k = 0; k < numbers.size(); ++k)
    CHECK(std::bit_cast<std::uint64_t>(numbers[k]) == std::bit_cast<std::uint64_t>(awkward[k]));
  CHECK(in.indices() == permutation);
  CHECK_NOTHROW(in.finish());
}

TEST_CASE("reading state of another layout stops at the first difference, naming the part") {
  sgmcmc::StateWriter out;
  out.section("estimator svrg");
  out.count(3);
  out.numbers(std::vector<double>{1.0, 2.0});

  SECTION("another part") {
    sgmcmc::StateReader in(out.bytes(), "ck.bin");
    CHECK_THROWS_WITH(in.section("estimator saga"), Contains("ck.bin") && Contains("expected the part 'estimator saga', found 'estimator svrg'"));
  }
  SECTION("another type") {
    sgmcmc::StateReader in(out.bytes(), "ck.bin");
    in.section("estimator svrg");
    CHECK_THROWS_WITH(in.number(), Contains("expected a number") && Contains("found an integer") && Contains("estimator svrg"));
  }
  SECTION("another size") {
    sgmcmc::StateReader in(out.bytes(), "ck.bin");
    in.section("estimator svrg");
    in.count();
    std::vector<double> values;
    CHECK_THROWS_WITH(in.numbers(values, 3), Contains("2 numbers where this run has 3"));
  }
  SECTION("values left over") {
    sgmcmc::StateReader in(out.bytes(), "ck.bin");
    in.section("estimator svrg");
    CHECK_THROWS_WITH(in.finish(), Contains("left unread"));
  }
  SECTION("the end reached early") {
    sgmcmc::StateReader in(out.bytes().substr(0, out.bytes().size() - 3), "ck.bin");
    in.section("estimator svrg");
    in.count();
    CHECK_THROWS_WITH(in.numbers(), Contains("ends early"));
  }
}

TEST_CASE("a state file is whole and checked: damage, truncation, another format are refused naming the file") {
  test::TempDir dir;
  const auto path = dir.path() / "checkpoint-1.bin";
  sgmcmc::StateWriter out;
  out.section("chain");
  out.numbers(std::vector<double>(100, 0.25));
  sgmcmc::write_state_file(path, out);
  CHECK(!std::filesystem::exists(dir.path() / "checkpoint-1.bin.partial"));
  const std::string good = test::read_text(path);
  {
    auto in = sgmcmc::read_state_file(path);
    in.section("chain");
    CHECK(in.numbers() == std::vector<double>(100, 0.25));
    in.finish();
  }
  std::string flipped = good;
  flipped[40] = static_cast<char>(flipped[40] ^ 0x10);
  std::string other_version = good;
  other_version[8] = 7;
  const std::vector<std::pair<std::string, std::string>> damages = {
      {flipped, "corrupt: the CRC-32"},
      {good.substr(0, good.size() - 10), "truncated"},
      {good + "extra", "truncated or padded"},
      {other_version, "format version 7"},
      {"", "not an sgmcmc checkpoint"},
  };
  for (const auto& [text, complaint] : damages) {
    INFO(complaint);
    dir.write("checkpoint-1.bin", text);
    CHECK_THROWS_WITH(sgmcmc::read_state_file(path), Contains(path.string()) && Contains(complaint));
  }
  CHECK_THROWS_WITH(sgmcmc::read_state_file(dir.path() / "absent.bin"), Contains("absent.bin"));
}

TEST_CASE("a checkpoint whose adapted mass has another length is refused naming the checkpoint") {
  // Found by tests/fuzz's checkpoint target: a payload whose adapted mass holds 131 numbers for a
  // model of d = 3 was refused as "integrator: mass has 131 numbers ...", naming neither the
  // checkpoint nor the part being read. Restored as that target restores it, into the chain of
  // each of its configurations, the payload must be refused naming the checkpoint.
  const std::filesystem::path fuzz = std::filesystem::path(SGMCMC_SOURCE_DIR) / "tests" / "fuzz";
  const std::string file = test::read_text(fuzz / "corpus" / "checkpoint" / "mass-of-another-size.bin");
  const auto plugin = sgmcmc::load_plugin_file(test::gaussian_plugin_path);
  for (const auto& entry : std::filesystem::directory_iterator(fuzz / "checkpoint_configs")) {
    INFO(entry.path().filename().string());
    const auto config = sgmcmc::parse_config(test::read_text(entry.path()), entry.path().string());
    auto chain = sgmcmc::make_chain(config, plugin.create({config["model"], 1}), sgmcmc::Rng(1, sgmcmc::chain_stream(0)));
    sgmcmc::StateReader in(file.substr(20, file.size() - 24), "runs/x/checkpoint-1.bin");  // the payload
    CHECK_THROWS_WITH(chain->restore_state(in), Contains("runs/x/checkpoint-1.bin"));
  }
}

TEST_CASE("a random stream restored from its state continues with the same numbers") {
  sgmcmc::Rng original(42, sgmcmc::chain_stream(3));
  for (int k = 0; k < 1001; ++k) original.normal();  // an odd position: no pairing hides in the state
  sgmcmc::StateWriter out;
  original.save_state(out);
  sgmcmc::Rng restored(1, sgmcmc::chain_stream(0));  // another seed and stream, both overwritten
  sgmcmc::StateReader in(out.bytes(), "memory");
  restored.restore_state(in);
  in.finish();
  CHECK(restored == original);
  for (int k = 0; k < 100; ++k) {
    CHECK(restored.uniform() == original.uniform());
    CHECK(restored.index(1000003) == original.index(1000003));
  }
}

TEST_CASE("format_config writes the keys set as TOML that reads back to the same values and types") {
  auto config = sgmcmc::parse_config(R"(
[model]
name = "gaussian"
n = 300
test_size = 0.2
[integrator]
step_size = 2.3e-4
[run]
lp = true
)",
                                     "given.toml");
  sgmcmc::apply_override(config, "integrator.step_size=0.1");  // not exactly representable
  sgmcmc::apply_override(config, "estimator.centre=\"1, 2\"");
  sgmcmc::apply_override(config, "model.noise_sd=1.0");  // a float, though whole
  const std::string text = sgmcmc::format_config(config);
  const auto back = sgmcmc::parse_config(text, "config.toml");
  for (const auto& [name, settings] : config.sections) {
    INFO(name << "\n" << text);
    const auto& again = back[name].entries();
    REQUIRE(again.size() == settings.entries().size());
    for (const auto& [key, entry] : settings.entries()) CHECK(again.at(key).value == entry.value);
  }
  CHECK(std::holds_alternative<double>(back["model"].entries().at("noise_sd").value));
  CHECK(std::get<double>(back["integrator"].entries().at("step_size").value) == 0.1);
}
