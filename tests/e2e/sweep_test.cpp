// `sgmcmc sweep` through the real binary: the table does not depend on --jobs, impossible
// combinations are skipped with their reason, bad sweep files are refused before anything is
// written, and --resume (after a deleted cell or a SIGKILL) gives the uninterrupted table.
#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <sys/file.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "mpi_support.hpp"
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

using test::without_seconds;

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
  CHECK(lines.front() ==
        "cell,estimator.name,integrator.step_size,run.seed,chain,iteration,seconds,cpu_seconds,item_gradients,log_predictive_density");
  std::set<std::string> cells, seed_one_rows, seed_two_rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto fields = test::csv_fields(lines[i]);
    cells.insert(fields[0]);
    // Rows of the two seeds with the same other settings must differ: the axis reached the run.
    const std::string key = fields[1] + fields[2] + fields[4] + fields[5] + "," + fields[9];
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
  const auto last = test::csv_fields(cell_rows.back());
  CHECK_THAT(results, Contains(fmt::format("{},exact,1e-05,2,{}\n", cell.filename().string(), fmt::join(last, ","))));

  const auto summary = lines_of(test::read_text(dir.path() / "one" / "summary.csv"));
  CHECK(summary.front() ==
        "cell,estimator.name,integrator.step_size,run.seed,status,chains,item_gradients,mean_accept_stat,seconds,"
        "cpu_seconds,concurrent_cells,final_log_predictive_density,reason");
  REQUIRE(summary.size() == 9);
  for (std::size_t i = 1; i < summary.size(); ++i) CHECK_THAT(summary[i], Contains(",complete,2,"));
  CHECK(!fs::exists(dir.path() / "one" / "results.csv.partial"));
}

TEST_CASE("sgmcmc sweep skips a combination that cannot work and lists its reason") {
  test::TempDir dir;
  const auto file = dir.write("mh.toml",
                              "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 100\nchains = 1\neval_every = 50\nthin = 5\n"
                              "[base.corrector]\nevery = 5\n"  // minibatch kicks inside MH blocks (every = 1 would refuse them)
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
    CHECK_THAT(line, Contains("the mh corrector cannot follow integrator 'sghmc'"));
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
  for (std::size_t i = 1; i < summary.size(); ++i) cells.push_back(test::csv_fields(summary[i])[0]);
  CHECK(cells == std::vector<std::string>{"model.n=1000+integrator.step_size=2e-05+run.seed=1+integrator.temperature=1.0",
                                          "model.n=1000+integrator.step_size=2e-05+run.seed=2+integrator.temperature=1.0",
                                          "model.n=2000+integrator.step_size=1e-05+run.seed=1+integrator.temperature=1.0"});
}

TEST_CASE("a sweep axis of arrays (a mass per coordinate) reaches each cell as an array, named in folders and tables") {
  test::TempDir dir;
  const auto file = dir.write("mass.toml",
                              "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 20\nchains = 1\neval_every = 10\nthin = 5\n"
                              "[axes]\n\"integrator.mass\" = [[0.5, 1, 2, 4, 8], [1.0, 1.0, 1.0, 1.0, 3.0]]\n");
  const auto out = dir.path() / "out";
  const auto result = sweep(file, out);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const std::vector<std::pair<std::string, nlohmann::json>> cells = {
      {"integrator.mass=_0.5__1.0__2.0__4.0__8.0_", nlohmann::json::array({0.5, 1.0, 2.0, 4.0, 8.0})},
      {"integrator.mass=_1.0__1.0__1.0__1.0__3.0_", nlohmann::json::array({1.0, 1.0, 1.0, 1.0, 3.0})}};
  for (const auto& [folder, mass] : cells) {
    INFO(folder);
    REQUIRE(fs::exists(out / folder / "manifest.json"));
    const auto manifest = nlohmann::json::parse(test::read_text(out / folder / "manifest.json"));
    CHECK(manifest["config"]["integrator"]["mass"] == mass);
  }
  CHECK_THAT(test::read_text(out / "results.csv"), Contains("\"[0.5, 1.0, 2.0, 4.0, 8.0]\""));
  // An axis mixing an array and a number is refused with the line of the odd value, as for scalars.
  const auto mixed = dir.write("mixed.toml", "preset = \"demo\"\n[axes]\n\"integrator.mass\" = [[1.0, 2.0], 3.0]\n");
  const auto refused = sweep(mixed, dir.path() / "mixed-out");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("mixed.toml:3: axis 'integrator.mass': 3.0 is a number, but its first value is an array of numbers"));
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
  CHECK_THAT(again.output, Contains("holds an earlier sweep") && Contains("add --resume"));
  const auto other = sweep(dir.write("other.toml", small_sweep(100)), out, "--resume");
  CHECK(other.exit_code == 2);
  CHECK_THAT(other.output, Contains("holds another sweep"));
  CHECK(without_seconds(test::read_text(out / "results.csv")) == before);
}

TEST_CASE("a sweep cell whose folder another process is writing fails naming its pid, and runs once the writer is gone") {
  test::TempDir dir;
  const auto file = dir.write("small.toml", small_sweep());
  const auto out = dir.path() / "out";
  REQUIRE(sweep(file, out, "--jobs 2").exit_code == 0);
  const auto before = without_seconds(test::read_text(out / "results.csv"));
  const fs::path cell = out / "estimator.name=exact+integrator.step_size=2e-05+run.seed=2";
  fs::remove_all(cell);
  // Another writer in the cell's folder: a long run (killed below, never finished).
  const pid_t writer = test::spawn_cli({"run", "--preset", "demo", "--chains", "1", "--set", "run.iterations=100000000",
                                        "--quiet", "--out", cell.string()});
  REQUIRE(writer > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!fs::exists(cell / "chain-1.csv") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto refused = sweep(file, out, "--resume --jobs 2");
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Contains("cell " + cell.filename().string() + " failed") &&
                                 Contains("in use by another sgmcmc process (pid " + std::to_string(writer) + " on "));
  int status = 0;
  REQUIRE(waitpid(writer, &status, WNOHANG) == 0);  // the refusal came while it was writing
  kill(writer, SIGKILL);
  waitpid(writer, &status, 0);
  // Its lock died with it: the cell runs (from scratch: the writer left no checkpoint).
  const auto resumed = sweep(file, out, "--resume --jobs 2");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
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

TEST_CASE("sgmcmc sweep refuses a grid larger than --max-cells unless --yes, before writing anything") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  std::string seeds;
  for (int seed = 1; seed <= 201; ++seed) seeds += (seed > 1 ? ", " : "") + std::to_string(seed);
  const auto big = dir.write("big.toml", "preset = \"demo\"\n[axes]\n\"run.seed\" = [" + seeds + "]\n");
  const auto refused = sweep(big, out);  // the default cap, 200
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("big.toml: 201 cells (201 (run.seed)), more than --max-cells 200"));
  CHECK_THAT(refused.output, Contains("--yes"));
  CHECK(!fs::exists(out));

  // A configurable cap: 2 × 3 = 6 cells are refused under 5 and run with --yes.
  const auto small = dir.write("six.toml",
                               "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 20\nchains = 1\neval_every = 10\nthin = 5\n"
                               "[axes]\n\"estimator.name\" = [\"minibatch\", \"exact\"]\n\"run.seed\" = [1, 2, 3]\n");
  const auto capped = sweep(small, out, "--max-cells 5");
  INFO(capped.output);
  CHECK(capped.exit_code == 2);
  CHECK_THAT(capped.output, Contains("6 cells (2 (estimator.name) x 3 (run.seed)), more than --max-cells 5"));
  CHECK(!fs::exists(out));
  const auto allowed = sweep(small, out, "--max-cells 5 --yes");
  INFO(allowed.output);
  CHECK(allowed.exit_code == 0);
  CHECK(finished_cells(out) == 6);

  // 2000³ = 8·10⁹ cells: listing them before the check took the machine's memory. Now the grid's
  // size is checked first, and with an exclude its cells are counted only up to the cap.
  std::string values;
  for (int value = 1; value <= 2000; ++value) values += (value > 1 ? ", " : "") + std::to_string(value);
  const std::string axes = "preset = \"demo\"\n[axes]\n\"run.seed\" = [" + values + "]\n\"run.data_seed\" = [" + values +
                           "]\n\"estimator.batch_size\" = [" + values + "]\n";
  const auto huge = sweep(dir.write("huge.toml", axes), out);
  INFO(huge.output);
  CHECK(huge.exit_code == 2);
  CHECK_THAT(huge.output, Contains("huge.toml: 8000000000 cells (2000 (run.seed) x 2000 (run.data_seed) x 2000 "
                                   "(estimator.batch_size)), more than --max-cells 200"));
  const auto huge_excluding = sweep(dir.write("huge-excluding.toml", axes + "exclude = [{ \"run.seed\" = 1 }]\n"), out);
  INFO(huge_excluding.output);
  CHECK(huge_excluding.exit_code == 2);
  CHECK_THAT(huge_excluding.output, Contains("huge-excluding.toml: more than 200 cells (2000 (run.seed) x"));
  CHECK_THAT(huge_excluding.output, Contains("less excluded), more than --max-cells 200"));
}

#ifdef SGMCMC_MPIEXEC
namespace {

/// The processes `parent` started (mpirun's ranks), as /proc lists each of its threads' children.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", parent))) {
    std::istringstream list(test::read_text(task.path() / "children"));
    for (pid_t pid; list >> pid;) children.push_back(pid);
  }
  return children;
}

/// Sends `signal` to the MPI sweep `child` (mpirun, writing into `out`) and to each of its ranks
/// as soon as the sweep's first cell has finished, as a batch system signals every process of a
/// job; checks that it stopped mid-sweep without tables, and returns mpirun's wait status.
/// mpirun alone is not signalled: Open MPI's (4.1) does not pass SIGTERM on but ends the job on
/// its own schedule, measured at 1 to 2.6 s later, while the ranks go on with their cells (4 of
/// the 8 were done by then); where the sweep stopped was that delay's, not this test's, and a
/// sweep quicker than the delay ended with nothing left to resume.
int stop_mid_sweep(pid_t child, const fs::path& out, int signal) {
  REQUIRE(child > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int status = 0;
  while (finished_cells(out) == 0) {
    REQUIRE(waitpid(child, &status, WNOHANG) != child);  // it must not end before the signal
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto ranks = children_of(child);
  REQUIRE(!ranks.empty());
  for (const pid_t rank : ranks) kill(rank, signal);
  kill(child, signal);
  waitpid(child, &status, 0);
  const auto finished = finished_cells(out);
  INFO(finished << " cells had finished when the sweep was stopped");
  REQUIRE(finished >= 1);
  REQUIRE(finished < 8);
  // Stopped where the test said: a cell takes 0.2 s or more, so beside the first one the ranks
  // had finished at most the cells they were about to end (mpirun's own delay let 4 finish).
  CHECK(finished <= 3);
  CHECK(!fs::exists(out / "results.csv"));
  return status;
}

using test::mpi_cli;
using test::mpi_launcher;

test::CliResult mpi_sweep(int ranks, const fs::path& file, const fs::path& out, const std::string& extra = "") {
  return mpi_cli(ranks, "sweep '" + file.string() + "' --out '" + out.string() + "' " + extra);
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("mpirun -n 2 and -n 3 sgmcmc sweep give the single-process results.csv, and resume") {
  test::TempDir dir;
  const auto file = dir.write("small.toml", small_sweep());
  REQUIRE(sweep(file, dir.path() / "single", "--jobs 1").exit_code == 0);
  const auto single_results = without_seconds(test::read_text(dir.path() / "single" / "results.csv"));
  const auto single_summary = without_seconds(test::read_text(dir.path() / "single" / "summary.csv"));
  const fs::path a_cell = "estimator.name=exact+integrator.step_size=1e-05+run.seed=2";

  for (const int ranks : {2, 3}) {
    const auto out = dir.path() / fmt::format("ranks-{}", ranks);
    const auto result = mpi_sweep(ranks, file, out, "--jobs 1");
    INFO(ranks << " ranks:\n" << result.output);
    REQUIRE(result.exit_code == 0);
    // One report, from rank 0, which knows it has company: the ranks joined one MPI job.
    CHECK(occurrences(result.output, fmt::format("8 cells on {} ranks: 8 complete", ranks)) == 1);
    CHECK(occurrences(result.output, "[8/8]") == 1);
    CHECK(finished_cells(out) == 8);
    CHECK(without_seconds(test::read_text(out / "results.csv")) == single_results);
    CHECK(without_seconds(test::read_text(out / "summary.csv")) == single_summary);
    // Cells run on other ranks arrive whole: their draws are the single process's, byte for byte.
    for (const auto& cell : fs::directory_iterator(dir.path() / "single"))
      if (cell.is_directory())
        for (const char* draws : {"chain-1.csv", "chain-2.csv"})
          CHECK(test::draws_without_elapsed_time(out / cell.path().filename() / draws) ==
                test::draws_without_elapsed_time(cell.path() / draws));
  }

  // --resume under MPI: only the deleted cell runs again, and the table is unchanged.
  const auto out = dir.path() / "ranks-2";
  fs::remove_all(out / a_cell);
  fs::remove(out / "results.csv");
  const auto resumed = mpi_sweep(2, file, out, "--jobs 1 --resume");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.output, Contains("8 cells on 2 ranks: 1 complete, 7 already done"));
  CHECK(without_seconds(test::read_text(out / "results.csv")) == single_results);
}

TEST_CASE("mpirun sgmcmc sweep stopped mid-way (SIGTERM, as a batch system does) and resumed gives the uninterrupted table") {
  test::TempDir dir;
  const auto file = dir.write("long.toml", small_sweep(20000, 1000));
  REQUIRE(sweep(file, dir.path() / "whole", "--jobs 2").exit_code == 0);

  const auto out = dir.path() / "stopped";
  // The stopped rank 1 leaves its scratch folder behind: in the test's folder, not the system's.
  std::vector<std::string> arguments = {"/usr/bin/env", "TMPDIR=" + dir.path().string()};
  for (const auto& word : mpi_launcher(2)) arguments.push_back(word);
  for (const std::string word : {SGMCMC_CLI, "sweep", file.c_str(), "--out", out.c_str(), "--jobs", "1", "--quiet"}) arguments.push_back(word);
  stop_mid_sweep(test::spawn(arguments), out, SIGTERM);

  const auto resumed = mpi_sweep(2, file, out, "--resume --jobs 1 --quiet");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(finished_cells(out) == 8);
  CHECK(without_seconds(test::read_text(out / "results.csv")) ==
        without_seconds(test::read_text(dir.path() / "whole" / "results.csv")));
}

TEST_CASE("mpirun sgmcmc sweep: a bad sweep file is one message and exit 2 on every rank, without a hang") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  const auto file = dir.write("typo.toml", "preset = \"demo\"\n[axes]\n\"integrator.step_sise\" = [1e-5, 2e-5]\n");
  const auto result = mpi_sweep(3, file, out);
  INFO(result.output);
  CHECK(result.exit_code == 2);  // mpirun's code is a rank's non-zero one; 124 would be a hang
  CHECK(occurrences(result.output, "sgmcmc: error:") == 1);
  CHECK(occurrences(result.output, "did you mean 'integrator.step_size'") == 1);
  CHECK(!fs::exists(out));

  // A bad command line too: every rank parses it, rank 0 alone says what is wrong.
  const auto usage = mpi_cli(2, "sweep --out '" + out.string() + "'");
  INFO(usage.output);
  CHECK(usage.exit_code == 2);
  CHECK(occurrences(usage.output, "file is required") == 1);

  // A grid over the cap is refused the same way.
  const auto big = mpi_sweep(2, dir.write("six.toml", "preset = \"demo\"\n[axes]\n\"run.seed\" = [1, 2, 3, 4, 5, 6]\n"), out,
                             "--max-cells 5");
  INFO(big.output);
  CHECK(big.exit_code == 2);
  CHECK(occurrences(big.output, "more than --max-cells 5") == 1);
  CHECK(!fs::exists(out));
}

TEST_CASE("mpirun sgmcmc sweep: a cell diverging on rank 1 is reported and the others finish") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  // Cells are dealt in grid order: the first to rank 0, the second (step size 10, which sends the
  // demo's gaussian chain to Inf within a few steps) to rank 1.
  const auto file = dir.write("diverge.toml", "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 100\nchains = 1\n"
                                              "eval_every = 10\nthin = 5\n[axes]\n\"integrator.step_size\" = [1e-5, 10.0]\n");
  const auto result = mpi_sweep(2, file, out, "--jobs 1");
  INFO(result.output);
  CHECK(result.exit_code == 1);
  CHECK(occurrences(result.output, "2 cells on 2 ranks: 1 complete, 1 diverged") == 1);
  const auto summary = test::read_text(out / "summary.csv");
  CHECK_THAT(summary, Contains("integrator.step_size=10.0,10.0,diverged,"));
  CHECK(fs::exists(out / "integrator.step_size=10.0" / "chain-1.csv"));
}

TEST_CASE("mpirun sgmcmc sweep: rank 0 does not write a cell from rank 1 into a folder another process holds") {
  test::TempDir dir;
  const auto out = dir.path() / "out";
  // Two cells, dealt in grid order: the first to rank 0, the second to rank 1, whose finished
  // cell rank 0 writes into the sweep's folder.
  const auto file = dir.write("two.toml", "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 100\nchains = 1\n"
                                          "eval_every = 10\nthin = 5\n[axes]\n\"integrator.step_size\" = [1e-5, 2e-5]\n");
  REQUIRE(mpi_sweep(2, file, out, "--jobs 1 --quiet").exit_code == 0);
  const auto before = without_seconds(test::read_text(out / "results.csv"));
  const auto second = out / "integrator.step_size=2e-05";
  REQUIRE(fs::exists(second / "manifest.json"));
  fs::remove_all(out / "integrator.step_size=1e-05");
  fs::remove_all(second);
  fs::create_directories(second);
  {
    // This process holds the second cell's folder, as a run writing it would (RunFolderLock: an
    // flock on its .lock file, which names the holder).
    const int held = ::open((second / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(held >= 0);
    REQUIRE(flock(held, LOCK_EX | LOCK_NB) == 0);
    const std::string holder = fmt::format("pid {} on the test\n", getpid());
    REQUIRE(::write(held, holder.data(), holder.size()) == static_cast<ssize_t>(holder.size()));
    const auto refused = mpi_sweep(2, file, out, "--jobs 1 --resume");
    ::close(held);
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.output, Contains("cell integrator.step_size=2e-05 failed") &&
                                   Contains(fmt::format("in use by another sgmcmc process (pid {} on the test)", getpid())));
    // The holder's folder is as it left it: its lock file, none of rank 1's files.
    CHECK(fs::exists(second / ".lock"));
    CHECK(!fs::exists(second / "chain-1.csv"));
    CHECK(!fs::exists(second / "manifest.json"));
    CHECK(fs::exists(out / "integrator.step_size=1e-05" / "manifest.json"));  // rank 0's own cell ran
  }
  // The holder gone, the cell runs and the table is the first one.
  const auto resumed = mpi_sweep(2, file, out, "--jobs 1 --resume --quiet");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(without_seconds(test::read_text(out / "results.csv")) == before);
}

TEST_CASE("mpirun -n 2 sgmcmc sbc gives the single-process ranks and verdicts") {
  // sbc runs its replications as sweep cells; under MPI rank 0 writes the sweep file and analyses
  // the ranks, the others only run cells. The tables must not depend on where a cell ran.
  test::TempDir dir;
  const std::string config = std::string(SGMCMC_SOURCE_DIR) + "/runners/presets/sbc/gaussian-mala-mh.toml";
  const auto arguments = [&](const fs::path& out) {
    return fmt::format("sbc --config '{}' --set run.iterations=300 --set run.warmup=100 --replications 6 --draws 19 "
                       "--bins 5 --jobs 1 --no-plot --quiet --out '{}'",
                       config, out.string());
  };
  const auto single = test::run_cli(arguments(dir.path() / "single"));
  INFO(single.output);
  REQUIRE(single.exit_code == 0);
  const auto result = mpi_cli(2, arguments(dir.path() / "ranks-2"));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  for (const char* table : {"ranks.csv", "tests.csv", "ecdf.csv"})
    CHECK(test::read_text(dir.path() / "ranks-2" / table) == test::read_text(dir.path() / "single" / table));
}

#else
TEST_CASE("mpirun sgmcmc sweep (skipped: built without MPI)") {
  WARN("skipped: sgmcmc was built without MPI (SGMCMC_WITH_MPI=OFF or no MPI found); third_party/setup.sh installs OpenMPI");
}
#endif

TEST_CASE("a sweep builds each model once and says when cells ran at once, so that CPU seconds are compared") {
  // Four cells of one model (the seed, and so the data seed, is fixed): each run takes the model
  // its validation built (model_shared), where it used to build it again. With --jobs 1 no two
  // cells overlap in time; with --jobs 2 the first two start together and run for a second, so
  // they overlap, and the sweep says so and `sgmcmc plot` draws against CPU seconds.
  test::TempDir dir;
  const auto file = dir.write("one-model.toml", "preset = \"demo\"\n[base.run]\nwarmup = 0\niterations = 2000\nchains = 1\n"
                                                "eval_every = 500\nthin = 5\n[axes]\n"
                                                "\"estimator.name\" = [\"minibatch\", \"cv\"]\n"
                                                "\"integrator.step_size\" = [2e-5, 1e-5]\n");
  for (const int jobs : {1, 2}) {
    const auto out = dir.path() / fmt::format("jobs-{}", jobs);
    const auto result = test::run_cli(fmt::format("sweep '{}' --out '{}' --jobs {}", file.string(), out.string(), jobs));
    INFO("--jobs " << jobs << "\n" << result.output);
    REQUIRE(result.exit_code == 0);
    const auto summary = test::lines_of(test::read_text(out / "summary.csv"));
    const auto header = test::csv_fields(summary.front());
    const auto concurrent_column = static_cast<std::size_t>(std::find(header.begin(), header.end(), "concurrent_cells") - header.begin());
    REQUIRE(concurrent_column < header.size());
    std::size_t most = 0;
    for (std::size_t i = 1; i < summary.size(); ++i) {
      const auto cell = test::csv_fields(summary[i])[0];
      const auto manifest = nlohmann::json::parse(test::read_text(out / cell / "manifest.json"));
      CHECK(manifest["timings"]["model_shared"] == true);
      most = std::max<std::size_t>(most, std::stoul(test::csv_fields(summary[i])[concurrent_column]));
    }
    CHECK(most == static_cast<std::size_t>(jobs));
    CHECK((result.output.find("cells ran at once on one machine") != std::string::npos) == (jobs > 1));
    const auto plotted = test::run_cli("plot '" + out.string() + "'");
    INFO(plotted.output);
    REQUIRE(plotted.exit_code == 0);
    const auto sidecar = nlohmann::json::parse(test::read_text(out / (out.filename().string() + "-plot.json")));
    CHECK(sidecar["time"] == (jobs > 1 ? "cpu" : "wall"));
    CHECK_THAT(plotted.output, Contains(jobs > 1 ? "uses CPU seconds" : "uses wall seconds"));
  }
}
