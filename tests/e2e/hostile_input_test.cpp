// Hostile input and interruptions through the real CLI (issue #21): non-finite data, values and
// settings accepted without a word, misleading messages, a data file that can be read only once,
// truncated plugin files, the exit code of each outcome the README lists, and input without end
// (devices, endless pipes, a gzip bomb: issue 41 item 13).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include "support.hpp"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

/// Runs the CLI with `arguments`; checks the exit code and that the output contains every message.
test::CliResult expect_exit(int code, const std::string& arguments, std::initializer_list<std::string> messages) {
  const auto result = test::run_cli(arguments);
  INFO(arguments << "\n" << result.output);
  CHECK(result.exit_code == code);
  for (const auto& message : messages) CHECK_THAT(result.output, Contains(message));
  return result;
}

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

/// `--set model.data=PATH` for the shell: TOML needs the quotes, the shell needs them kept.
std::string data_key(const std::string& key, const fs::path& path) {
  return fmt::format("--set model.{}='\"{}\"'", key, path.string());
}

/// `run --config` of a short gaussian run on the data file `data` (the demo preset simulates its data).
std::string gaussian_run(const test::TempDir& dir, const fs::path& data) {
  const auto config = dir.write("gaussian.toml", "[model]\nname = \"gaussian\"\ntest_size = 0\ndata = \"" + data.string() +
                                                     "\"\n[estimator]\nname = \"exact\"\n[run]\niterations = 20\nchains = 1\n");
  return "run --quiet --config " + quoted(config) + " --out " + quoted(dir.path() / "out");
}

const std::string logistic_rows = "1,0.5,-1.0\n0,2.0,0.25\n1,-1.5,0\n0,1.0,1.0\n1,-0.5,0.5\n0,0.5,2.0\n";

}  // namespace

TEST_CASE("NaN or infinity in a data or test file is an input error naming file:line, not a divergence") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  const auto nan = dir.write("nan.csv", "1,2\n3,nan\n5,6\n");
  expect_exit(2, gaussian_run(dir, nan), {"nan.csv:2:3: 'nan' is not a finite number"});
  const auto train = dir.write("train.csv", logistic_rows);
  const auto test = dir.write("test.csv", "1,0.5,-1.0\n0,nan,0.25\n");
  expect_exit(2,
              fmt::format("run --preset covtype-baker2019 --quiet --set run.iterations=20 {} {} --out {}", data_key("data", train),
                          data_key("test_data", test), quoted(out)),
              {"test.csv:2:3: 'nan' is not a finite number"});
  CHECK_FALSE(fs::exists(out / "manifest.json"));
}

TEST_CASE("the rows a data file gave are reported, a first line with a byte-order mark is one of them") {
  test::TempDir dir;
  const auto bom = dir.write("bom.csv", "\xEF\xBB\xBF" "1,2\n3,4\n5,6\n");
  expect_exit(0, gaussian_run(dir, bom), {"sgmcmc: note: " + bom.string() + ": 3 rows read\n"});
  const auto header = dir.write("header.csv", "y,x\n1,2\n3,4\n5,6\n");
  expect_exit(0, gaussian_run(dir, header) + " --replace", {header.string() + ": 3 rows read after a header line"});
}

TEST_CASE("settings accepted without a word: step_size = inf, thin beyond the iterations, a missing --plugin-dir") {
  test::TempDir dir;
  const std::string run = "run --preset demo --quiet --out " + quoted(dir.path() / "out") + " ";
  expect_exit(2, run + "--set integrator.step_size=inf", {"integrator.step_size: expected a finite number, found inf"});
  expect_exit(2, run + "--set run.thin=2000 --set run.iterations=1000",
              {"run.thin = 2000", "run.iterations = 1000", "no draws"});
  expect_exit(2, run + "--plugin-dir " + quoted(dir.path() / "absent"), {"--plugin-dir", "absent", "no such folder"});
}

TEST_CASE("a sweep cell whose model is misspelt is an error naming the cell and the model, even with --quiet") {
  test::TempDir dir;
  const auto file = dir.write("models.toml", "preset = \"demo\"\n[base.run]\niterations = 20\nchains = 1\n[axes]\n"
                                             "\"model.name\" = [\"gaussian\", \"gausian\"]\n");
  expect_exit(2, "sweep " + quoted(file) + " --quiet --out " + quoted(dir.path() / "out"),
              {"unknown model 'gausian'", "did you mean 'gaussian'?", "cell model.name=gausian"});
}

TEST_CASE("logistic reads its data file once: a FIFO works") {
  test::TempDir dir;
  const auto rows = dir.write("rows.csv", logistic_rows);
  const auto fifo = dir.path() / "rows.fifo";
  REQUIRE(test::shell("mkfifo " + quoted(fifo)).exit_code == 0);
  // The writer and the run each give up after a minute, so a regression fails instead of hanging.
  const auto result = test::shell(fmt::format(
      "timeout 60 sh -c 'cat {} > {}' >/dev/null 2>&1 & timeout 60 '{}' run --preset covtype-baker2019 --quiet "
      "--set run.iterations=20 --set run.warmup=0 --set model.test_size=2 --set estimator.batch_size=2 {} --out {}",
      quoted(rows), quoted(fifo), SGMCMC_CLI, data_key("data", fifo), quoted(dir.path() / "out")));
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(fs::exists(dir.path() / "out" / "manifest.json"));
}

TEST_CASE("misleading messages: a folder as data or configuration, a file as --out, sizes too large to allocate") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  expect_exit(2, gaussian_run(dir, dir.path()), {dir.path().string() + ": is a folder, not a data file"});
  expect_exit(2, "run --config " + quoted(dir.path()) + " --out " + quoted(out), {dir.path().string() + ": is a folder"});
  const auto file = dir.write("file.txt", "not a folder\n");
  expect_exit(2, "run --preset demo --quiet --out " + quoted(file), {"file.txt' is not a folder"});
  const auto sweep = dir.write("sweep.toml", "preset = \"demo\"\n[base.run]\niterations = 20\nchains = 1\n[axes]\n\"run.seed\" = [1]\n");
  expect_exit(2, "sweep " + quoted(sweep) + " --quiet --out " + quoted(file), {"file.txt' is not a folder"});
  // Sizes read from a file that no memory can hold: say what and how big, not std::bad_alloc.
  // (A D far beyond the file's lines allocates nothing now: tests/plugins/lda_test.cpp.)
  // W = 2·10⁹ (issue #21's case): θ of K·W = 4·10¹⁰ coordinates, 960 GB with its gradient and momentum.
  const auto words = dir.write("docword.words.txt", "1\n2000000000\n1\n1 1 1\n");
  expect_exit(2, "run --preset lda-sgld --quiet " + data_key("data", words) + " --out " + quoted(out),
              {"docword.words.txt: W = 2000000000 words and K = 20 topics", "more than this machine's"});
  // Ten counts of 4·10⁹ tokens: 4.8·10¹¹ bytes at 12 a token; refused on the line that crosses the
  // machine's memory, before the tokens are listed.
  std::string counts = "1\n10\n10\n";
  for (int w = 1; w <= 10; ++w) counts += fmt::format("1 {} 4000000000\n", w);
  const auto tokens = dir.write("docword.tokens.txt", counts);
  expect_exit(2, "run --preset lda-sgld --quiet " + data_key("data", tokens) + " --out " + quoted(out),
              {"docword.tokens.txt:", "count 4000000000 brings the corpus to", "more than this machine's"});
  const auto libsvm = dir.write("huge.libsvm", "+1 1:0.5\n-1 100000000000000:1\n");
  expect_exit(2, "run --preset covtype-baker2019 --quiet " + data_key("data", libsvm) + " --out " + quoted(out),
              {"huge.libsvm", "100000000000000 features", "cannot allocate"});
  // Within the machine's memory but beyond the budget SGMCMC_MEMORY_LIMIT_MB sets (2 rows × 1.8·10⁸
  // features × 8 bytes = 2.8 GB against 1 GB): refused before allocation, naming the limit. A malformed
  // limit is refused at start-up, whatever the command.
  const auto wide = dir.write("wide.libsvm", "+1 1:0.5\n-1 177777777:1\n");
  const auto limited = test::shell("SGMCMC_MEMORY_LIMIT_MB=1024 '" + std::string(SGMCMC_CLI) + "' run --preset covtype-baker2019 --quiet " +
                                   data_key("data", wide) + " --out " + quoted(out));
  INFO(limited.output);
  CHECK(limited.exit_code == 2);
  CHECK_THAT(limited.output, Contains("wide.libsvm: 2 rows × 177777777 features") &&
                                 Contains("more than the 1.07 GB that SGMCMC_MEMORY_LIMIT_MB = 1024 allows"));
  const auto malformed = test::shell("SGMCMC_MEMORY_LIMIT_MB=lots '" + std::string(SGMCMC_CLI) + "' run --preset demo --quiet --out " +
                                     quoted(out));
  INFO(malformed.output);
  CHECK(malformed.exit_code == 2);
  CHECK_THAT(malformed.output, Contains("environment variable SGMCMC_MEMORY_LIMIT_MB = 'lots': expected a positive whole number"));
}

TEST_CASE("each exit code the README lists, through the real CLI") {
  test::TempDir dir;
  const auto out = [&](const char* name) { return " --out " + quoted(dir.path() / name); };
  // 0: done.
  expect_exit(0, "run --preset demo --set run.iterations=100" + std::string(out("done")), {});
  // 1: a chain diverged, also when it diverged before its first draw and without --quiet (the
  // summary of no draws used to turn this into exit 2).
  expect_exit(1, "run --preset demo --chains 1 --set integrator.step_size=1e3 --set run.warmup=100" + std::string(out("early")),
              {"chain 1 diverged at iteration"});
  // 2: bad input, naming what is wrong; an output path that cannot be a folder is bad input too.
  expect_exit(2, "run --preset demo --set run.chains=0" + std::string(out("bad")), {"run.chains: expected an integer >= 1"});
  expect_exit(2, "run --preset demo --quiet --out /dev/null", {"'/dev/null' is not a folder"});
  // 3: an internal error (a bug, here a plugin's gradient throwing what is not an sgmcmc::Error).
  const auto faulty = test::fixture_plugin_dir / "sgmcmc-model-internal_error.so";
  const auto config = dir.write("bug.toml", "[model]\nname = \"" + faulty.string() + "\"\n[estimator]\nname = \"exact\"\n[run]\niterations = 10\n");
  expect_exit(3, "run --quiet --config " + quoted(config) + std::string(out("bug")),
              {"internal error", "fixture: a bug in the gradient"});
  // 130: stopped by Ctrl-C (SIGINT), resumable (checkpoint_test.cpp checks the resume).
  const auto interrupted = dir.path() / "interrupted";
  const pid_t child = test::spawn_cli({"run", "--preset", "demo", "--set", "run.iterations=10000000", "--quiet", "--out",
                                       interrupted.string()});
  const auto status = test::signal_when(child, SIGINT, [&] { return fs::exists(interrupted / "chain-1.csv"); });
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
  CHECK(nlohmann::json::parse(test::read_text(interrupted / "manifest.json"))["status"] == "interrupted");
}

namespace {

/// A copy of the gaussian plugin cut to half its length, as a copy interrupted mid-way leaves it.
fs::path truncated_plugin(const fs::path& folder, const std::string& name) {
  const auto path = folder / ("sgmcmc-model-" + name + ".so");
  fs::copy_file(test::gaussian_plugin_path, path);
  fs::resize_file(path, fs::file_size(path) / 2);
  return path;
}

}  // namespace

TEST_CASE("a truncated plugin file is an error naming it, in run, check-model and list, not a crash") {
  test::TempDir dir;
  const auto plugins = dir.path() / "plugins";
  fs::create_directories(plugins);
  const auto broken = truncated_plugin(plugins, "broken");
  fs::copy_file(test::gaussian_plugin_path, plugins / "sgmcmc-model-gaussian.so");
  const std::string plugin_dir = " --plugin-dir " + quoted(plugins);
  const std::string truncated = "truncated";
  const std::string run = "run --preset demo --quiet --set run.iterations=20 --out " + quoted(dir.path() / "out") + plugin_dir;
  expect_exit(2, run + " --set model.name=broken", {broken.string(), truncated});
  expect_exit(2, "check-model " + quoted(broken), {broken.string(), truncated});
  // The did-you-mean lookup loads every plugin of the folders; the broken one must not stop it.
  expect_exit(2, run + " --set model.name=gausian", {"did you mean 'gaussian'?"});
  // One bad file in a folder: `list` names it and goes on listing the others.
  const auto listed = expect_exit(0, "list" + plugin_dir, {"broken", "NOT LOADABLE", broken.string(), truncated});
  CHECK_THAT(listed.output, Contains((plugins / "sgmcmc-model-gaussian.so").string()));
  // Not an ELF file at all, and an ELF file of another machine (e_machine, bytes 18-19, set to 0xffff).
  const auto text = dir.write("plugins/sgmcmc-model-text.so", "not a shared library\n");
  expect_exit(2, "check-model " + quoted(text), {text.string(), "not an ELF file"});
  const auto foreign = plugins / "sgmcmc-model-foreign.so";
  fs::copy_file(test::gaussian_plugin_path, foreign);
  std::fstream(foreign, std::ios::in | std::ios::out | std::ios::binary).seekp(18).write("\xff\xff", 2);
  expect_exit(2, "check-model " + quoted(foreign), {foreign.string(), "machine 65535"});
}

TEST_CASE("the file system's refusals are input errors naming the path") {
  test::TempDir dir;
  // A name longer than the file system's limit (255 bytes a component): exit 2 naming it, not an
  // internal error, as --out, as model.name and as run.init.
  const std::string long_name(300, 'x');
  const std::string demo = "run --preset demo --quiet --set run.iterations=10";
  expect_exit(2, demo + " --out " + quoted(dir.path() / long_name), {"error:", long_name});
  expect_exit(2, demo + " --set model.name=" + long_name + " --out " + quoted(dir.path() / "a"), {"error:", long_name});
  expect_exit(2, demo + " --set run.init='\"" + (dir.path() / long_name).string() + "\"' --out " + quoted(dir.path() / "b"),
              {"error:", long_name});
}

TEST_CASE("messages: a LIBSVM file read as CSV says how to read it as LIBSVM, an earlier sweep folder asks for --resume, counts name whole-number bounds") {
  test::TempDir dir;
  // The first row has no features, so its line has no ':' and the file is sniffed as CSV.
  const auto data = dir.write("first-empty.libsvm", "+1\n-1 1:2.0 2:0.25\n+1 1:-1.5 2:1.0\n-1 1:0.5 2:0.5\n+1 1:1.0\n");
  const std::string run = "run --preset covtype-baker2019 --quiet --set run.iterations=20 --set model.test_size=0 "
                          "--set estimator.batch_size=2 " + data_key("data", data);
  expect_exit(2, run + " --out " + quoted(dir.path() / "csv"), {data.string(), "read as CSV", "model.format = \"libsvm\""});
  expect_exit(0, run + " --set model.format='\"libsvm\"' --out " + quoted(dir.path() / "libsvm"), {});

  // A sweep's folder run again without --resume: it does hold a sweep.toml.
  const auto sweep = dir.write("s.toml", "preset = \"demo\"\n[base.run]\niterations = 20\nchains = 1\nwarmup = 0\n"
                                         "eval_every = 10\nthin = 5\n[axes]\n\"integrator.step_size\" = [1e-5, 2e-5]\n");
  const std::string again = "sweep " + quoted(sweep) + " --quiet --out " + quoted(dir.path() / "sweep");
  expect_exit(0, again, {});
  const auto second = expect_exit(2, again, {"holds an earlier sweep", "--resume"});
  CHECK_THAT(second.output, !Contains("holds no sweep.toml"));

  // A count of 0 where at least 1 is needed: the bound as a whole number, not a 309-digit double.
  for (const std::string& option : {"sweep " + quoted(sweep) + " --jobs 0", "sbc --config " + quoted(sweep) + " --simulations 0"}) {
    const auto refused = expect_exit(2, option, {"sgmcmc: error:", "expected a whole number >= 1, found 0"});
    CHECK(refused.output.size() < 300);
  }
}

TEST_CASE("summary holds a run folder's chain files to its manifest, and sweep --resume checks a cell's metrics before its tables") {
  test::TempDir dir;
  const auto run = dir.path() / "run";
  REQUIRE(test::run_cli("run --preset demo --quiet --chains 2 --set run.iterations=100 --out " + quoted(run)).exit_code == 0);
  expect_exit(0, "summary " + quoted(run), {"2 chains"});
  // A chain file left from another run: summarised with the others before, now named.
  fs::copy_file(run / "chain-1.csv", run / "chain-3.csv");
  expect_exit(2, "summary " + quoted(run), {(run / "chain-3.csv").string(), "not one of the 2 chain(s)"});
  fs::remove(run / "chain-3.csv");
  fs::remove(run / "chain-2.csv");
  expect_exit(2, "summary " + quoted(run), {(run / "chain-2.csv").string(), "is missing"});

  // A finished cell whose metrics.csv lost its last rows, or holds a field that is not a number.
  const auto sweep = dir.write("s.toml", "preset = \"demo\"\n[base.run]\niterations = 50\nchains = 1\nwarmup = 0\n"
                                         "eval_every = 10\nthin = 5\n[axes]\n\"integrator.step_size\" = [1e-5, 2e-5]\n");
  const auto out = dir.path() / "sweep";
  const std::string resume = "sweep " + quoted(sweep) + " --quiet --resume --out " + quoted(out);
  REQUIRE(test::run_cli("sweep " + quoted(sweep) + " --quiet --out " + quoted(out)).exit_code == 0);
  const auto metrics = out / "integrator.step_size=1e-05" / "metrics.csv";
  REQUIRE(fs::exists(metrics));
  const auto whole = test::read_text(metrics);
  expect_exit(0, resume, {});
  std::ofstream(metrics, std::ios::trunc) << whole.substr(0, whole.rfind('\n', whole.size() - 2) + 1);  // the last row lost
  expect_exit(2, resume, {metrics.string(), "4 row(s) of chain 1", "make 5", "damaged"});
  std::string garbled = whole;
  garbled.replace(garbled.rfind(',') + 1, 1, "x");
  std::ofstream(metrics, std::ios::trunc) << garbled;
  expect_exit(2, resume, {metrics.string(), "is not a number", "damaged"});
}

TEST_CASE("sizes from settings are checked against memory before they are allocated: run.chains, sbc --replications") {
  // Chain 1 is measured while it is built (at least its state and its output buffer, where the
  // allocator keeps no count), and 10⁹ of anything holds far more than any machine's memory.
  test::TempDir dir;
  expect_exit(2, "run --preset demo --quiet --chains 1000000000 --set run.iterations=10 --out " + quoted(dir.path() / "a"),
              {"run.chains", "1000000000 chains of about", "run fewer chains at once"});
  CHECK(!fs::exists(dir.path() / "a" / "chain-1.csv"));
  const auto limited = test::shell("SGMCMC_MEMORY_LIMIT_MB=10 '" + std::string(SGMCMC_CLI) + "' run --preset demo --quiet "
                                   "--chains 3000 --set run.iterations=10 --out " + quoted(dir.path() / "b"));
  INFO(limited.output);
  CHECK(limited.exit_code == 2);
  CHECK_THAT(limited.output, Contains("run.chains") && Contains("SGMCMC_MEMORY_LIMIT_MB = 10"));
  const std::string config = std::string(SGMCMC_SOURCE_DIR) + "/runners/presets/sbc/gaussian-mala-mh.toml";
  expect_exit(2, "sbc --config '" + config + "' --replications 1000000000 --out " + quoted(dir.path() / "s"),
              {"--replications 1000000000", "bookkeeping"});
}

TEST_CASE("silent substitutions refused: a docword word id beyond 32 bits is not cut into another word") {
  // W = 2³² + 1: word id 2³² + 1 held in 32 bits became word 1 and merged with it, without a word.
  test::TempDir dir;
  const auto docword = dir.write("docword.wide.txt", "2\n4294967297\n3\n1 1 2\n1 4294967297 3\n2 1 1\n");
  expect_exit(2, "run --preset lda-sgld --quiet --set model.test_docs=0 " + data_key("data", docword) + " --out " +
                     quoted(dir.path() / "out"),
              {docword.string() + ":2", "W = 4294967297", "word ids"});
}

TEST_CASE("silent substitutions refused: a NUL character in a configuration string is an error naming the key") {
  // model.data = "rows.csv\u0000.other": opened as rows.csv, recorded as the whole string.
  test::TempDir dir;
  dir.write("rows.csv", logistic_rows);
  const auto config = dir.write("nul.toml", "[model]\nname = \"logistic\"\ndata = \"" + (dir.path() / "rows.csv").string() +
                                                "\\u0000.other\"\n[run]\niterations = 10\n");
  expect_exit(2, "run --quiet --config " + quoted(config) + " --out " + quoted(dir.path() / "out"),
              {"nul.toml:3: model.data", "NUL character"});
  CHECK(!fs::exists(dir.path() / "out" / "manifest.json"));
}

namespace {

/// `path` gzip-compressed from `blocks` copies of `block`: a few hundred kB that inflate to
/// blocks × block.size() bytes (a gzip bomb, when that is more than memory).
void write_gzip(const fs::path& path, const std::string& block, std::size_t blocks) {
  gzFile file = gzopen(path.c_str(), "wb9");
  REQUIRE(file != nullptr);
  bool written = true;
  for (std::size_t b = 0; b < blocks; ++b) written = written && gzwrite(file, block.data(), static_cast<unsigned>(block.size())) > 0;
  REQUIRE(gzclose(file) == Z_OK);
  REQUIRE(written);
}

}  // namespace

TEST_CASE("unbounded input is refused naming the file: /dev/zero as data, configuration, chain file or run.init, a gzip bomb, an endless line") {
  test::TempDir dir;
  const fs::path zero = "/dev/zero";
  REQUIRE(fs::is_character_file(zero));
  const auto out = dir.path() / "out";
  // Devices where a file is read to its end: refused before a byte is read.
  expect_exit(2, gaussian_run(dir, zero), {"/dev/zero: is a character device, not a data file"});
  expect_exit(2, "run --config /dev/zero --out " + quoted(out), {"/dev/zero: is a character device, not the configuration file"});
  expect_exit(2, "run --preset demo --quiet --set run.init='\"/dev/zero\"' --out " + quoted(out),
              {"/dev/zero: is a character device"});
  const auto run = dir.path() / "run";
  fs::create_directories(run);
  fs::create_symlink(zero, run / "chain-1.csv");
  expect_exit(2, "summary " + quoted(run), {(run / "chain-1.csv").string(), "is a character device"});

  // A pipe is read (a FIFO works as data), but bounded. The writers give up after a minute, so a
  // regression fails instead of hanging.
  const auto fifo = dir.path() / "endless.fifo";
  REQUIRE(test::shell("mkfifo " + quoted(fifo)).exit_code == 0);
  const auto writer = [&](const std::string& source) {
    return fmt::format("timeout 60 sh -c '{} > {}' >/dev/null 2>&1 & timeout 120 '{}' ", source, quoted(fifo), SGMCMC_CLI);
  };
  // NUL bytes: the first block of /dev/zero is refused, naming the file and line.
  auto result = test::shell(writer("cat /dev/zero") + gaussian_run(dir, fifo));
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(fifo.string() + ":1:1: a NUL byte"));
  // A line without end: refused at 256 MiB.
  result = test::shell(writer("tr \"\\\\0\" 1 < /dev/zero") + gaussian_run(dir, fifo));
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(fifo.string() + ":1: a line longer than 256 MiB"));
  // A configuration without end: refused at 64 MiB.
  result = test::shell(writer("cat /dev/zero") + "run --config " + quoted(fifo) + " --out " + quoted(out));
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(fifo.string() + ": more than 67108864 bytes, too many for the configuration file"));

  // A gzip bomb: 240 kB that inflate to 200 MB of rows, against a budget of 64 MB.
  const auto bomb = dir.path() / "bomb.csv.gz";
  std::string rows;
  for (int i = 0; i < 1 << 14; ++i) rows += "0.5,1.5,2.5\n";
  write_gzip(bomb, rows, (200u << 20) / rows.size());
  CHECK(fs::file_size(bomb) < (1u << 20));
  result = test::shell("SGMCMC_MEMORY_LIMIT_MB=64 '" + std::string(SGMCMC_CLI) + "' " + gaussian_run(dir, bomb));
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(bomb.string() + ": more text (after decompression) than the 0.0671 GB that "
                                                     "SGMCMC_MEMORY_LIMIT_MB = 64 allows"));
}

TEST_CASE("no plugin folder entry hangs or stops a run: a FIFO named like a plugin, a loop of symbolic links") {
  test::TempDir dir;
  const std::string demo = "run --preset demo --quiet --set run.iterations=10";
  // A FIFO named like a plugin: opening it would wait for a writer for ever. `timeout` turns such a
  // hang into exit 124, which fails the checks below instead of the whole suite's time limit.
  const auto plugins = dir.path() / "plugins";
  fs::create_directories(plugins);
  const auto fifo = plugins / "sgmcmc-model-pipe.so";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string plugin_dir = " --plugin-dir " + quoted(plugins);
  const auto within = [&](int code, const std::string& arguments, std::initializer_list<std::string> messages) {
    const auto result = test::shell("timeout 120 '" + std::string(SGMCMC_CLI) + "' " + arguments);
    INFO(arguments << "\n" << result.output);
    CHECK(result.exit_code == code);
    for (const auto& message : messages) CHECK_THAT(result.output, Contains(message));
  };
  within(0, "list" + plugin_dir, {"pipe", "NOT LOADABLE", "not a regular file"});
  within(2, "check-model " + quoted(fifo), {fifo.string(), "not a regular file"});
  within(2, demo + plugin_dir + " --set model.name=gausian --out " + quoted(dir.path() / "c"), {"did you mean 'gaussian'?"});

  // A loop of symbolic links first on SGMCMC_PLUGIN_PATH is passed over: the run finds gaussian later.
  const auto loop = dir.path() / "loop";
  fs::create_directory_symlink(loop, loop);
  const auto run = test::shell("SGMCMC_PLUGIN_PATH=" + quoted(loop) + " '" + std::string(SGMCMC_CLI) + "' " + demo +
                               " --out " + quoted(dir.path() / "d"));
  INFO(run.output);
  CHECK(run.exit_code == 0);
}

TEST_CASE("test_size = 1 is one held-out row, recorded as the integer 1, not the fraction 1.0 (every row) a resume would read") {
  test::TempDir dir;
  const auto rows = dir.write("rows.csv", logistic_rows);
  const auto out = dir.path() / "one";
  expect_exit(0, "run --preset covtype-baker2019 --quiet --set run.iterations=20 --set estimator.batch_size=2 "
                 "--set model.test_size=1 --checkpoint-every 10 " + data_key("data", rows) + " --out " + quoted(out), {});
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["config"]["model"]["test_size"].is_number_integer());
  CHECK(manifest["config"]["model"]["test_size"] == 1);
  CHECK(manifest["model"]["items"] == 5);  // 6 rows, 1 held out
}
