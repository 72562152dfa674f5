// sgmcmc.state: values come back with the same bits, a checkpoint read as another layout or a
// damaged file is refused with a message naming it, a random stream restored continues with the
// same numbers, and a run's configuration written as TOML reads back to the same values.
#include <catch2/catch.hpp>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <variant>
#include <vector>
#include <sys/stat.h>
#include <zlib.h>

#include "support.hpp"
#include "reading.hpp"

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

namespace {

/// A state of one part holding `count` copies of `value`.
sgmcmc::StateWriter numbers_state(double value, std::size_t count = 100) {
  sgmcmc::StateWriter out;
  out.section("chain");
  out.numbers(std::vector<double>(count, value));
  return out;
}

/// The value the state read from `path` holds (numbers_state's).
double read_value(const std::filesystem::path& path) {
  auto in = sgmcmc::read_state_file(path);
  in.section("chain");
  const auto values = in.numbers();
  in.finish();
  REQUIRE(!values.empty());
  return values.front();
}

/// Where slot `index` (0 or 1) of a checkpoint file starts, by the layout sgmcmc.state documents
/// (format 7): the slot size S at byte 12 of the header, the slots at 4096 and 4096 + S.
std::size_t slot_offset(const std::string& file, int index) {
  REQUIRE(file.size() >= 20);
  std::uint64_t slot_size = 0;
  std::memcpy(&slot_size, file.data() + 12, sizeof slot_size);
  return 4096 + static_cast<std::size_t>(index) * slot_size;
}

/// `file` with a byte of slot `index`'s payload flipped.
std::string flip_in_slot(std::string file, int index) {
  const std::size_t at = slot_offset(file, index) + 16 + 30;
  REQUIRE(at < file.size());
  file[at] = static_cast<char>(file[at] ^ 0x10);
  return file;
}

std::uint64_t inode(const std::filesystem::path& path) {
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  return status.st_ino;
}

}  // namespace

TEST_CASE("a checkpoint file's two slots are overwritten in turn, in place, and the newest whole one is read") {
  test::TempDir dir;
  const auto path = dir.path() / "checkpoint-1.bin";
  sgmcmc::CheckpointFile file(path);
  file.write(numbers_state(0.25));
  CHECK(!std::filesystem::exists(dir.path() / "checkpoint-1.bin.partial"));
  CHECK(read_value(path) == 0.25);
  const auto made = inode(path);
  for (const double value : {0.5, 0.75, 1.0}) {
    file.write(numbers_state(value));
    CHECK(read_value(path) == value);
  }
  CHECK(inode(path) == made);  // written in place: no file made and renamed per checkpoint
  // Generations 1..4 went to slots 0, 1, 0, 1: both slots hold a checkpoint.
  const std::string both = test::read_text(path);
  CHECK(std::filesystem::file_size(path) > slot_offset(both, 1));

  // A state larger than its slot makes the file anew (through a rename), then alternates again.
  file.write(numbers_state(2.0, 10000));
  CHECK(inode(path) != made);
  CHECK(read_value(path) == 2.0);
  file.write(numbers_state(3.0, 10000));
  CHECK(read_value(path) == 3.0);
}

TEST_CASE("a checkpoint whose newest slot was torn reads the slot before, and both torn are refused naming the file") {
  test::TempDir dir;
  const auto path = dir.path() / "checkpoint-1.bin";
  {
    sgmcmc::CheckpointFile file(path);
    for (const double value : {0.25, 0.5, 0.75}) file.write(numbers_state(value));  // slots 0, 1, 0
  }
  const std::string newest_in_0 = test::read_text(path);
  {
    sgmcmc::CheckpointFile file(path);
    for (const double value : {0.25, 0.5}) file.write(numbers_state(value));  // slots 0, 1
  }
  const std::string newest_in_1 = test::read_text(path);

  SECTION("the newest slot (0) with a byte flipped: the older (1)") {
    dir.write("checkpoint-1.bin", flip_in_slot(newest_in_0, 0));
    CHECK(read_value(path) == 0.5);
  }
  SECTION("the newest slot (1) cut, as by a write the machine died in: the older (0)") {
    dir.write("checkpoint-1.bin", newest_in_1.substr(0, slot_offset(newest_in_1, 1) + 100));
    CHECK(read_value(path) == 0.25);
  }
  SECTION("the older slot damaged: the newest, as ever") {
    dir.write("checkpoint-1.bin", flip_in_slot(newest_in_0, 1));
    CHECK(read_value(path) == 0.75);
  }
  SECTION("both slots damaged") {
    dir.write("checkpoint-1.bin", flip_in_slot(flip_in_slot(newest_in_0, 0), 1));
    CHECK_THROWS_WITH(sgmcmc::read_state_file(path), Contains(path.string()) && Contains("neither of its two slots") &&
                                                          Contains("corrupt: the CRC-32"));
  }
  SECTION("the only slot written, cut") {
    sgmcmc::CheckpointFile file(path);
    file.write(numbers_state(0.25));
    const std::string one = test::read_text(path);
    dir.write("checkpoint-1.bin", one.substr(0, one.size() - 10));
    CHECK_THROWS_WITH(sgmcmc::read_state_file(path), Contains(path.string()) && Contains("truncated") &&
                                                          Contains("never written"));
  }
}

TEST_CASE("a checkpoint file not of this format is refused naming the file, and a version-6 file is read") {
  test::TempDir dir;
  const auto path = dir.path() / "checkpoint-1.bin";
  const auto payload = numbers_state(0.5).bytes();
  // Version 6, the format before the slots: magic, version, length, payload, CRC-32 of the payload.
  const auto single_record = [&](std::uint32_t version) {
    std::string file = "sgmcmcCK";
    const std::uint64_t length = payload.size();
    const auto crc = static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(payload.data()), payload.size()));
    file.append(reinterpret_cast<const char*>(&version), sizeof version);
    file.append(reinterpret_cast<const char*>(&length), sizeof length);
    file += payload;
    file.append(reinterpret_cast<const char*>(&crc), sizeof crc);
    return file;
  };
  dir.write("checkpoint-1.bin", single_record(6));
  CHECK(read_value(path) == 0.5);

  {
    sgmcmc::CheckpointFile file(path);
    file.write(numbers_state(0.5));
  }
  const std::string good = test::read_text(path);
  std::string header_flipped = good;
  header_flipped[14] = static_cast<char>(header_flipped[14] ^ 0x01);
  const std::vector<std::pair<std::string, std::string>> damages = {
      {single_record(5), "checkpoint format version 5; this sgmcmc reads versions 6 and 7"},
      {single_record(6).substr(0, 40), "truncated or padded"},
      {header_flipped, "corrupt: the CRC-32 of its header"},
      {good.substr(0, 22), "truncated: the file ends in its header"},
      {"", "not an sgmcmc checkpoint"},
  };
  for (const auto& [text, complaint] : damages) {
    INFO(complaint);
    dir.write("checkpoint-1.bin", text);
    CHECK_THROWS_WITH(sgmcmc::read_state_file(path), Contains(path.string()) && Contains(complaint));
  }
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  CHECK_THROWS_WITH(sgmcmc::read_state_file(path), Contains(path.string()) && Contains("not a regular file"));
  const auto fifo = dir.path() / "checkpoint-2.bin";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_THROWS_WITH(sgmcmc::read_state_file(fifo), Contains(fifo.string()) && Contains("not a regular file"));  // no hang
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
    const std::shared_ptr<const sgmcmc::Model> model = plugin.create({sgmcmc::SectionReader(config["model"]), 1});
    auto chain = sgmcmc::make_chain(test::plan_chain(config, *model), model, sgmcmc::Rng(1, sgmcmc::chain_stream(0)));
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

TEST_CASE("a minibatch sampler's checkpoint holds nothing, and one holding an earlier version's permutation is refused") {
  // Earlier versions drew batches by a partial Fisher–Yates shuffle of a permutation of the N items
  // kept between draws, and checkpointed it; this one draws each batch afresh (modules/README.md, "Minibatch"),
  // so a resumed chain could not continue such a run's draws: the checkpoint is refused, named.
  sgmcmc::MinibatchSampler sampler(10, 3, false);
  sgmcmc::StateWriter mine;
  sampler.save_state(mine);
  sgmcmc::StateReader back(mine.bytes(), "new.bin");
  CHECK_NOTHROW(sampler.restore_state(back));
  CHECK_NOTHROW(back.finish());

  sgmcmc::StateWriter earlier;
  earlier.section("minibatch sampler");
  earlier.indices(std::vector<std::size_t>{3, 0, 2, 1, 4, 5, 6, 7, 8, 9});
  sgmcmc::StateReader old(earlier.bytes(), "checkpoint-1.bin");
  CHECK_THROWS_WITH(sampler.restore_state(old),
                    Contains("checkpoint-1.bin") && Contains("holds a minibatch permutation: it was written by an earlier sgmcmc"));
}
