// `sgmcmc sweep` through the real binary: the table does not depend on --jobs, impossible
// combinations are skipped with their reason, bad sweep files are refused before anything is
// written, and --resume (after a deleted cell or a SIGKILL) gives the uninterrupted table.
#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// 2 estimators × 2 step sizes × 2 seeds on the demo's gaussian model, small enough for seconds.
// `iterations` is a parameter so the interruption test can make cells last long enough to kill.
std::string small_sweep(int iterations = 200, int eval_every = 50, int checkpoint_every = 0) {
  return "preset = \"demo\"\n"
         "\n"
         "[base.model]\n"
         "n = 2000\n"
         "\n"
         "[base.run]\n"
         "warmup = 0\n"
         "iterations = " + std::to_string(iterations) + "\n"
         "thin = 5\n"
         "chains = 2\n"
         "eval_every = " + std::to_string(eval_every) + "\n" +
         (checkpoint_every ? "checkpoint_every = " + std::to_string(checkpoint_every) + "\n" : std::string()) +
         "\n"
         "[axes]\n"
         "\"estimator.name\" = [\"minibatch\", \"exact\"]\n"
         "\"integrator.step_size\" = [2e-5, 1e-5]\n"
         "\"run.seed\" = [1, 2]\n";
}

using test::lines_of;

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  return fields;
}

/// A CSV table without its `seconds` column: what must be identical between runs.
std::string without_seconds(const std::string& table) {
  const auto lines = lines_of(table);
  REQUIRE(!lines.empty());
  const auto header = fields_of(lines.front());
  const auto seconds = std::find(header.begin(), header.end(), "seconds");
  REQUIRE(seconds != header.end());
  const auto column = static_cast<std::size_t>(seconds - header.begin());
  std::string out;
  for (const auto& line : lines) {
    auto fields = fields_of(line);
    REQUIRE(fields.size() == header.size());
    fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(column));
    for (std::size_t f = 0; f < fields.size(); ++f) out += (f ? "," : "") + fields[f];
    out += "\n";
  }
  return out;
}

test::CliResult sweep(const fs::path& file, const fs::path& out, const std::string& extra = "") {
  return test::run_cli("sweep '" + file.string() + "' --out '" + out.string() + "' --quiet " + extra);
}

std::size_t finished_cells(const fs::path& out) {
  std::size_t count = 0;
  if (!fs::exists(out)) return 0;
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.is_directory() && fs::exists(entry.path() / "manifest.json")) ++count;
  return count;
}

/// Starts `sgmcmc sweep FILE --out OUT --jobs 1` in a child process, output discarded.
pid_t spawn_sweep(const fs::path& file, const fs::path& out) {
  return test::spawn_cli({"sweep", file.string(), "--out", out.string(), "--jobs", "1", "--quiet"});
}

}  // namespace

namespace {

/// Resumes the sweep of `file` in `out`: every cell finished, the uninterrupted run's table.
void resume_to_whole_table(const fs::path& file, const fs::path& out, const fs::path& whole) {
  const auto resumed = sweep(file, out, "--resume --jobs 2");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(finished_cells(out) == 8);
  CHECK(without_seconds(test::read_text(out / "results.csv")) == without_seconds(test::read_text(whole / "results.csv")));
}

}  // namespace

TEST_CASE("sgmcmc sweep gives the same results.csv for --jobs 1 and --jobs 2") {
  test::TempDir dir;
  const auto file = dir.write("small.toml", small_sweep());
  const auto one = sweep(file, dir.path() / "one", "--jobs 1");
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const auto two = sweep(file, dir.path() / "two", "--jobs 2");
  INFO(two.output);
  REQUIRE(two.exit_code == 0);

  const auto results = test::read_text(dir.path() / "one" / "results.csv");
  CHECK(without_seconds(results) == without_seconds(test::read_text(dir.path() / "two" / "results.csv")));
  CHECK(finished_cells(dir.path() / "one") == 8);

  const auto lines = lines_of(results);
  CHECK(lines.front() == "cell,estimator.name,integrator.step_size,run.seed,chain,iteration,seconds,item_gradients,log_predictive_density");
  std::set<std::string> cells, seed_one_rows, seed_two_rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto fields = fields_of(lines[i]);
    cells.insert(fields[0]);
    // Rows of the two seeds with the same other settings must differ: the axis reached the run.
    const std::string key = fields[1] + fields[2] + fields[4] + fields[5] + "," + fields[8];
    (fields[3] == "1" ? seed_one_rows : seed_two_rows).insert(key);
  }
  CHECK(cells.size() == 8);
  CHECK(lines.size() == 1 + 8 * 2 * 4);  // cells × chains × evaluations (50, 100, 150, 200)
  CHECK(seed_one_rows != seed_two_rows);

  // A cell's rows are its own metrics.csv, and its folder holds the normal run outputs.
  const fs::path cell = dir.path() / "one" / "estimator.name=exact+integrator.step_size=1e-05+run.seed=2";
  REQUIRE(fs::exists(cell / "manifest.json"));
  CHECK(fs::exists(cell / "chain-1.csv"));
  CHECK(fs::exists(cell / "chain-2.csv"));
  const auto cell_rows = lines_of(test::read_text(cell / "metrics.csv"));
  const auto last = fields_of(cell_rows.back());
  CHECK_THAT(results, Contains(fmt::format("{},exact,1e-05,2,{},{},{},{},{}\n", cell.filename().string(), last[0], last[1],
                                           last[2], last[3], last[4])));

  const auto summary = lines_of(test::read_text(dir.path() / "one" / "summary.csv"));
  CHECK(summary.front() ==
        "cell,estimator.name,integrator.step_size,run.seed,status,chains,item_gradients,mean_accept_stat,seconds,"
        "final_log_predictive_density,reason");
  REQUIRE(summary.size() == 9);
  for (std::size_t i = 1; i < summary.size(); ++i) CHECK_THAT(summary[i], Contains(",complete,2,"));
  CHECK(!fs::exists(dir.path() / "one" / "results.csv.partial"));
}

TEST_CASE("sgmcmc sweep skips a combination that cannot work and lists its reason") {
  test::TempDir dir;
  const auto file = dir.write("mh.toml",
                              "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 100\nchains = 1\neval_every = 50\nthin = 5\n"
                              "[axes]\n\"integrator.name\" = [\"sghmc\", \"obabo\"]\n\"corrector.name\" = [\"none\", \"mh\"]\n");
  const auto result = test::run_cli("sweep '" + file.string() + "' --out '" + (dir.path() / "out").string() + "' --jobs 2");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const std::string skipped = "integrator.name=sghmc+corrector.name=mh";
  CHECK_THAT(result.output, Contains("skipped " + skipped));
  CHECK(!fs::exists(dir.path() / "out" / skipped));
  CHECK(finished_cells(dir.path() / "out") == 3);

  const auto summary = test::read_text(dir.path() / "out" / "summary.csv");
  bool found = false;
  for (const auto& line : lines_of(summary)) {
    if (!line.starts_with(skipped + ",")) continue;
    found = true;
    CHECK_THAT(line, Contains(",skipped,"));
    CHECK_THAT(line, Contains("the mh corrector cannot follow this integrator"));
  }
  CHECK(found);
  CHECK_THAT(test::read_text(dir.path() / "out" / "results.csv"), !Contains(skipped));
}

TEST_CASE("sgmcmc sweep refuses bad sweep files with the file, line and key, and writes nothing") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  const auto refused = [&](const std::string& name, const std::string& text) {
    const auto result = sweep(dir.write(name, text), out);
    INFO(result.output);
    CHECK(result.exit_code == 2);
    CHECK(!fs::exists(out));
    return result.output;
  };
  const std::string header = "preset = \"demo\"\n[base.run]\niterations = 20\nchains = 1\n[axes]\n";

  const auto unknown = refused("unknown.toml", header + "\"integrator.step_sise\" = [1e-5, 2e-5]\n");
  CHECK_THAT(unknown, Contains("unknown.toml:6"));
  CHECK_THAT(unknown, Contains("unknown key 'integrator.step_sise'"));
  CHECK_THAT(unknown, Contains("did you mean 'integrator.step_size'"));

  const auto section = refused("section.toml", header + "\"integrater.step_size\" = [1e-5]\n");
  CHECK_THAT(section, Contains("section.toml:6"));
  CHECK_THAT(section, Contains("did you mean [integrator]"));

  const auto type = refused("type.toml", header + "\"integrator.step_size\" = [\n  1e-5,\n  \"big\",\n]\n");
  CHECK_THAT(type, Contains("type.toml:8"));
  CHECK_THAT(type, Contains("axis 'integrator.step_size'"));
  CHECK_THAT(type, Contains("a string"));

  const auto seed = refused("seed.toml", header + "\"run.seed\" = [1.5]\n");
  CHECK_THAT(seed, Contains("seed.toml:6"));
  CHECK_THAT(seed, Contains("an integer"));

  const auto missing = refused("missing.toml", "[axes]\n\"run.seed\" = [1, 2]\n");
  CHECK_THAT(missing, Contains("missing.toml"));
  CHECK_THAT(missing, Contains("missing preset"));

  const auto preset = refused("preset.toml", "preset = \"dmeo\"\n[axes]\n\"run.seed\" = [1]\n");
  CHECK_THAT(preset, Contains("preset.toml:1"));
  CHECK_THAT(preset, Contains("did you mean 'demo'"));

  const auto empty = refused("empty.toml", header + "\"run.seed\" = []\n");
  CHECK_THAT(empty, Contains("empty.toml:6"));
  CHECK_THAT(empty, Contains("non-empty list"));

  const auto zip = refused("zip.toml", header + "\"run.seed\" = [1, 2]\n\"integrator.step_size\" = [1e-5]\n"
                                                "zip = [[\"run.seed\", \"integrator.step_size\"]]\n");
  CHECK_THAT(zip, Contains("zip.toml:8"));
  CHECK_THAT(zip, Contains("have 2 and 1 values"));
}

TEST_CASE("sgmcmc sweep zips axes and excludes combinations") {
  test::TempDir dir;
  const auto file = dir.write("zip.toml",
                              "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 20\nchains = 1\neval_every = 10\nthin = 5\n"
                              "[axes]\n\"model.n\" = [1000, 2000]\n\"integrator.step_size\" = [2e-5, 1e-5]\n\"run.seed\" = [1, 2]\n"
                              "\"integrator.temperature\" = [1.0]\n"  // a float keeps its point in names and tables
                              "zip = [[\"model.n\", \"integrator.step_size\"]]\n"
                              "exclude = [{ \"model.n\" = 2000, \"run.seed\" = 2 }]\n");
  const auto result = sweep(file, dir.path() / "out");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto summary = lines_of(test::read_text(dir.path() / "out" / "summary.csv"));
  std::vector<std::string> cells;
  for (std::size_t i = 1; i < summary.size(); ++i) cells.push_back(fields_of(summary[i])[0]);
  CHECK(cells == std::vector<std::string>{"model.n=1000+integrator.step_size=2e-05+run.seed=1+integrator.temperature=1.0",
                                          "model.n=1000+integrator.step_size=2e-05+run.seed=2+integrator.temperature=1.0",
                                          "model.n=2000+integrator.step_size=1e-05+run.seed=1+integrator.temperature=1.0"});
}

TEST_CASE("sgmcmc sweep --resume reruns only a deleted cell and gives the same table") {
  test::TempDir dir;
  const auto file = dir.write("small.toml", small_sweep());
  const auto out = dir.path() / "out";
  REQUIRE(sweep(file, out, "--jobs 2").exit_code == 0);
  const auto before = without_seconds(test::read_text(out / "results.csv"));
  const fs::path kept = out / "estimator.name=minibatch+integrator.step_size=2e-05+run.seed=1";
  const auto kept_manifest = test::read_text(kept / "manifest.json");

  fs::remove_all(out / "estimator.name=exact+integrator.step_size=2e-05+run.seed=2");
  fs::remove(out / "results.csv");
  const auto resumed = test::run_cli("sweep '" + file.string() + "' --out '" + out.string() + "' --resume --jobs 2");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.output, Contains("8 cells: 1 complete, 7 already done"));
  CHECK(test::read_text(kept / "manifest.json") == kept_manifest);  // not run again: its timings are unchanged
  CHECK(without_seconds(test::read_text(out / "results.csv")) == before);

  // Without --resume the folder is refused; with --resume a different sweep file is refused.
  const auto again = sweep(file, out);
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.output, Contains("not empty"));
  const auto other = sweep(dir.write("other.toml", small_sweep(100)), out, "--resume");
  CHECK(other.exit_code == 2);
  CHECK_THAT(other.output, Contains("holds another sweep"));
  CHECK(without_seconds(test::read_text(out / "results.csv")) == before);
}

TEST_CASE("sgmcmc sweep killed mid-way and resumed gives the uninterrupted table") {
  test::TempDir dir;
  // Longer cells, so that the kill lands while cells are still to run.
  const auto file = dir.write("long.toml", small_sweep(20000, 1000));
  REQUIRE(sweep(file, dir.path() / "whole", "--jobs 2").exit_code == 0);

  const auto out = dir.path() / "killed";
  const pid_t child = spawn_sweep(file, out);
  REQUIRE(child > 0);
  REQUIRE(test::kill_when(child, [&] { return finished_cells(out) > 0; }));
  const auto finished = finished_cells(out);
  INFO(finished << " cells had finished when the sweep was killed");
  REQUIRE(finished >= 1);
  REQUIRE(finished < 8);
  CHECK(!fs::exists(out / "results.csv"));

  resume_to_whole_table(file, out, dir.path() / "whole");
}

namespace {

/// A cell folder with a checkpoint and no manifest: a cell in flight that has saved its state.
bool cell_with_checkpoint(const fs::path& out) {
  if (!fs::exists(out)) return false;
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.is_directory() && fs::exists(entry.path() / "checkpoint-1.bin") && !fs::exists(entry.path() / "manifest.json"))
      return true;
  return false;
}

}  // namespace

TEST_CASE("a sweep with checkpoints killed mid-cell continues its cells in flight from their checkpoints") {
  test::TempDir dir;
  const auto file = dir.write("checkpointed.toml", small_sweep(20000, 1000, 500));
  REQUIRE(sweep(file, dir.path() / "whole", "--jobs 2").exit_code == 0);

  const auto out = dir.path() / "killed";
  const pid_t child = spawn_sweep(file, out);
  REQUIRE(child > 0);
  // Killed while a cell in flight has a checkpoint.
  REQUIRE(test::kill_when(child, [&] { return cell_with_checkpoint(out); }));

  resume_to_whole_table(file, out, dir.path() / "whole");
  std::size_t continued = 0;  // chains that went on from a checkpoint rather than from iteration 0
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!entry.is_directory()) continue;
    const auto manifest = nlohmann::json::parse(test::read_text(entry.path() / "manifest.json"));
    for (const auto& chain : manifest["chains"]) continued += chain["resumed_at_iteration"].get<std::uint64_t>() > 0 ? 1 : 0;
  }
  CHECK(continued >= 1);
}
