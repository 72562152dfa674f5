// Checkpoints through the real CLI: a run stopped at a checkpoint (--stop-after) or killed with
// SIGKILL, then continued with `sgmcmc run --resume DIR`, writes the same bytes as the run that
// never stopped: chain-<k>.csv, gradients-<k>.csv and metrics.csv apart from its seconds column.
// That holds for every estimator × integrator × corrector the gaussian model takes, for pmf
// (Gibbs-updated hyperparameters in its workspace) and logistic (running predictive averages).
// So does a run stopped by Ctrl-C (SIGINT) or SIGTERM, with or without checkpoints of its own.
// Bad input: a corrupt or truncated checkpoint, another configuration, a finished run, an output
// file cut or changed before its checkpoint, a data file changed since the run began (refused
// before any file is touched). One writer per folder: a second `run` into a live run's folder is
// refused, naming the holder, and a kill -9 leaves no lock behind.
#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <csignal>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <sys/wait.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

/// metrics.csv without its seconds column (wall-clock time differs between any two runs).
std::string without_seconds(const fs::path& metrics) { return test::without_seconds(test::read_text(metrics)); }

/// The outputs that must be byte-identical, read from a run folder.
std::vector<std::string> outputs(const fs::path& folder, int chains, bool gradients) {
  std::vector<std::string> texts;
  for (int k = 1; k <= chains; ++k) {
    texts.push_back(test::draws_without_elapsed_time(folder / fmt::format("chain-{}.csv", k)));
    if (gradients) texts.push_back(test::read_text(folder / fmt::format("gradients-{}.csv", k)));
  }
  texts.push_back(without_seconds(folder / "metrics.csv"));
  return texts;
}

/// Runs `arguments` uninterrupted into `dir`/whole, and stopped after iteration `stop` into
/// `dir`/stopped, then resumed; checks that the resumed folder holds the same outputs.
void check_stop_and_resume(const fs::path& dir, const std::string& arguments, std::uint64_t stop, int chains,
                           bool gradients) {
  const auto whole = dir / "whole", stopped = dir / "stopped";
  const auto full = test::run_cli(fmt::format("run {} --out '{}' --quiet", arguments, whole.string()));
  INFO(full.output);
  REQUIRE(full.exit_code == 0);
  const auto first = test::run_cli(fmt::format("run {} --stop-after {} --out '{}' --quiet", arguments, stop, stopped.string()));
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  REQUIRE_THAT(first.output, Contains("--resume"));
  REQUIRE(!fs::exists(stopped / "manifest.json"));
  REQUIRE(fs::exists(stopped / "checkpoint-1.bin"));
  const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", stopped.string()));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(outputs(stopped, chains, gradients) == outputs(whole, chains, gradients));
  CHECK(fs::exists(stopped / "manifest.json"));
  CHECK(!fs::exists(stopped / "checkpoint-1.bin"));  // removed once the run is complete
}

/// A small gaussian run of 2 chains on 2 threads, 60 iterations after 10 of warmup, a draw and
/// a gradient (an estimator of the chain's own kind, with its own state) every 2nd iteration,
/// metrics every 10th, a checkpoint every 10th.
std::string gaussian_arguments(const std::string& estimator, const std::string& integrator, const std::string& corrector) {
  return fmt::format("--preset demo --set model.n=300 --set estimator.name={} --set estimator.batch_size=20 "
                     "--set integrator.name={} --set integrator.step_size=2e-3 --set integrator.steps=3 "
                     "--set corrector.name={} --set corrector.every=2 --set run.warmup=10 --set run.iterations=60 "
                     "--set run.thin=2 --set run.eval_every=10 --set output.gradients=estimator --chains 2 --threads 2 "
                     "--checkpoint-every 10",
                     estimator, integrator, corrector);
}

}  // namespace

TEST_CASE("every gaussian estimator x integrator x corrector stopped at a checkpoint and resumed continues bit for bit") {
  // Every combination of the catalogues, except those the mh corrector refuses (their refusal is
  // tested in the combination matrix); `corrector.every` is ignored with a warning when the
  // corrector is none.
  int checked = 0, expected = 0;
  for (const auto& estimator : sgmcmc::estimator_catalogue())
    for (const auto& integrator : sgmcmc::integrator_catalogue())
      for (const std::string corrector : {"none", "mh"}) {
        if (corrector == "mh" && !(estimator.mh_refusal.empty() && integrator.mh_refusal.empty())) continue;
        ++expected;
        INFO(estimator.name << " x " << integrator.name << " x " << corrector);
        test::TempDir dir;
        // Stopped at 40 of 70: after the warmup, mid-way through the recorded draws.
        check_stop_and_resume(dir.path(), gaussian_arguments(estimator.name, integrator.name, corrector), 40, 2, true);
        ++checked;
      }
  CHECK(checked == expected);
  CHECK(expected >= 40);  // the catalogues were read: 5 estimators × 7 integrators with none alone
}

bool declares(const sgmcmc::CatalogueEntry<sgmcmc::IntegratorReader>& integrator, const std::string& key) {
  return std::find(integrator.keys.begin(), integrator.keys.end(), key) != integrator.keys.end();
}

/// Calls check(integrator, corrector, dir) for every integrator of the catalogue (that declares
/// `key`, if given) with corrector `none`, and with `mh` where the integrator takes it, each in a
/// new folder; returns how many.
template <class Check>
int for_each_integrator_and_corrector(Check check, const std::string& key = "") {
  int checked = 0;
  for (const auto& integrator : sgmcmc::integrator_catalogue())
    for (const std::string corrector : {"none", "mh"}) {
      if (!key.empty() && !declares(integrator, key)) continue;
      if (corrector == "mh" && !integrator.mh_refusal.empty()) continue;
      INFO(integrator.name << " x " << corrector);
      test::TempDir dir;
      check(integrator, corrector, dir.path());
      ++checked;
    }
  return checked;
}

TEST_CASE("runs with a mass per coordinate stopped at a checkpoint and resumed continue bit for bit") {
  // The mass array is configuration, not chain state: it comes back from the run's config.toml.
  const int checked = for_each_integrator_and_corrector([](const auto& integrator, const std::string& corrector, const auto& dir) {
    check_stop_and_resume(dir, gaussian_arguments("minibatch", integrator.name, corrector) + " --set 'integrator.mass=[0.5, 1, 2, 4, 8]'",
                          40, 2, true);
  });
  CHECK(checked >= 12);  // 7 integrators without a corrector, 5 of them with mh
}

TEST_CASE("runs that adapt their mass, stopped mid-window and resumed, continue bit for bit") {
  // A warmup of 200: the fast interval to iteration 75, slow windows 76-100 and 101-150, the
  // terminal interval 151-200; the stop at 90 falls inside the first slow window, so the
  // checkpoint carries its statistics, and the mass changes twice before the draws. psgld has no
  // adapt_mass: its RMSprop second moment V adapts at every warmup step and freezes at 200, when
  // λ + sqrt(V) becomes the mass of its sampling phase; the checkpoint at 90 carries V.
  const int checked = for_each_integrator_and_corrector([](const auto& integrator, const std::string& corrector, const auto& dir) {
    const bool adapts_mass = declares(integrator, "adapt_mass");
    check_stop_and_resume(dir, gaussian_arguments("minibatch", integrator.name, corrector) + " --set run.warmup=200" +
                                   (adapts_mass ? " --set integrator.adapt_mass=true" : ""),
                          90, 2, true);
    const auto manifest = nlohmann::json::parse(test::read_text(dir / "stopped" / "manifest.json"));
    if (adapts_mass) CHECK(manifest["config"]["integrator"]["adapt_mass"] == true);
    CHECK(manifest["chains"][0]["adapted_mass"].size() == 5);
  });
  CHECK(checked >= 12);
}

namespace {

/// Every integrator with a metric, with and without mh, run with integrator.metric = "dense" and
/// `settings`, stopped at `stop` and resumed: bit for bit, and the manifest reports M as d rows of
/// d, symmetric. Returns the runs checked: 9 integrators with a metric, 5 of them with mh too.
int check_dense_mass_resumes(const std::string& settings, std::uint64_t stop) {
  return for_each_integrator_and_corrector([&](const auto& integrator, const std::string& corrector, const auto& dir) {
    check_stop_and_resume(dir, gaussian_arguments("minibatch", integrator.name, corrector) +
                                   " --set integrator.metric=dense " + settings,
                          stop, 2, true);
    const auto manifest = nlohmann::json::parse(test::read_text(dir / "stopped" / "manifest.json"));
    CHECK(manifest["config"]["integrator"]["metric"] == "dense");
    const auto& mass = manifest["chains"][0]["adapted_mass"];
    REQUIRE(mass.size() == 5);
    CHECK(mass[0].size() == 5);
    CHECK(mass[1][2] == mass[2][1]);
  }, "metric");
}

}  // namespace

TEST_CASE("runs that adapt a dense mass, stopped mid-window and resumed, continue bit for bit") {
  // As above with integrator.metric = "dense": the checkpoint at 90 carries the window's mean and
  // sum of outer products (d² numbers), and the Cholesky factor in use, which the momentum was
  // carried with when the mass changed.
  CHECK(check_dense_mass_resumes("--set run.warmup=200 --set integrator.adapt_mass=true", 90) >= 14);
}

TEST_CASE("runs with a Fisher mass, stopped and resumed, continue bit for bit") {
  // integrator.mass = "fisher": the mass is computed once, before the first iteration, and the
  // resumed run does not compute it again: the checkpoint carries its Cholesky factor.
  CHECK(check_dense_mass_resumes("--set integrator.mass=fisher", 40) >= 14);
}

TEST_CASE("runs that adapt their step size, stopped mid-warmup and resumed, continue bit for bit") {
  // integrator.adapt_step_size with mh (blocks of 2): dual averaging at every block of the
  // warmup of 200, stopped at 90, so the checkpoint carries H̄, x̄, μ, the count and the current
  // step; once with the mass adapted too (the dual averaging restarts at each window's end, at
  // 100 and 150). The resumed run must match the uninterrupted one byte for byte, its manifest
  // report each chain's frozen step, and every draw's stepsize__ be that step.
  int checked = 0;
  for (const auto& integrator : sgmcmc::integrator_catalogue()) {
    if (!declares(integrator, "adapt_step_size")) continue;
    for (const bool adapt_mass : {false, true}) {
      INFO(integrator.name << (adapt_mass ? " with adapt_mass" : ""));
      test::TempDir dir;
      check_stop_and_resume(dir.path(),
                            gaussian_arguments("minibatch", integrator.name, "mh") +
                                " --set run.warmup=200 --set integrator.adapt_step_size=true" +
                                (adapt_mass ? " --set integrator.adapt_mass=true" : ""),
                            90, 2, true);
      const auto manifest = nlohmann::json::parse(test::read_text(dir.path() / "stopped" / "manifest.json"));
      for (int k = 0; k < 2; ++k) {
        const auto& chain = manifest["chains"][k];
        REQUIRE(chain.contains("adapted_step_size"));
        CHECK(chain["step_size_frozen_after_warmup"] == true);
        const double step = chain["adapted_step_size"];
        CHECK(step > 0.0);
        CHECK(step != 2e-3);  // moved from integrator.step_size
        // stepsize__ (third column) of every draw: the frozen step, written as the shortest text
        // that reads back as the same double, as the manifest's JSON writes it.
        std::istringstream lines(test::read_text(dir.path() / "stopped" / fmt::format("chain-{}.csv", k + 1)));
        int draws = 0, at_step = 0;
        for (std::string line; std::getline(lines, line);) {
          if (line.empty() || line[0] == '#' || line.starts_with("lp__")) continue;
          ++draws;
          const auto first = line.find(','), second = line.find(',', first + 1), third = line.find(',', second + 1);
          at_step += line.substr(second + 1, third - second - 1) == fmt::format("{}", step) ? 1 : 0;
        }
        CHECK(draws == 30);  // 60 iterations, thin 2
        CHECK(at_step == draws);
      }
      ++checked;
    }
  }
  // The catalogue was read: at least mala, obabo, baoab, hmc and leapfrog (ubu and any newer one too),
  // with and without adapt_mass.
  CHECK(checked >= 10);
}

TEST_CASE("checkpoints do not change a chain: the draws equal those of a run without checkpoints") {
  test::TempDir dir;
  const std::string arguments = "--preset demo --set model.n=300 --set estimator.name=saga --set run.iterations=50 "
                                "--set run.thin=1 --set run.eval_every=10 --chains 1 --quiet";
  const auto plain = test::run_cli(fmt::format("run {} --out '{}'", arguments, (dir.path() / "plain").string()));
  const auto saved = test::run_cli(fmt::format("run {} --checkpoint-every 5 --out '{}'", arguments, (dir.path() / "saved").string()));
  REQUIRE(plain.exit_code == 0);
  REQUIRE(saved.exit_code == 0);
  // The comment lines differ by run.checkpoint_every; every other line is the same.
  const auto draws = [](const fs::path& path) {
    std::string kept;
    for (const auto& line : test::lines_of(test::read_text(path)))
      if (!line.starts_with("#")) kept += line + "\n";
    return kept;
  };
  CHECK(draws(dir.path() / "plain" / "chain-1.csv") == draws(dir.path() / "saved" / "chain-1.csv"));
  CHECK(test::lines_of(draws(dir.path() / "plain" / "chain-1.csv")).size() == 51);
  CHECK(without_seconds(dir.path() / "plain" / "metrics.csv") == without_seconds(dir.path() / "saved" / "metrics.csv"));
  CHECK_THAT(test::read_text(dir.path() / "saved" / "chain-1.csv"), Contains("run.checkpoint_every = 5"));
}

TEST_CASE("run.temperatures: resumed runs continue bit for bit, and the temperatures change no draw and no cost") {
  // The temperatures are read from the chain's state (its momentum, and a full-data gradient that
  // draws no random numbers), so they need no state of their own in a checkpoint, and a run with
  // them draws what a run without them draws.
  for (const std::string integrator : {"sgld", "mala", "obabo", "baoab", "hmc", "sghmc", "sgnht", "badodab"}) {
    INFO(integrator);
    test::TempDir dir;
    const std::string arguments = gaussian_arguments("minibatch", integrator, "none") + " --set run.temperatures=true";
    check_stop_and_resume(dir.path(), arguments, 40, 2, true);
    const auto header = test::csv_fields(test::lines_of(test::read_text(dir.path() / "whole" / "metrics.csv")).front());
    const bool momentum = integrator != "sgld" && integrator != "mala" && integrator != "hmc";
    CHECK(std::count(header.begin(), header.end(), "kinetic_temperature") == (momentum ? 1 : 0));
    CHECK(std::count(header.begin(), header.end(), "configurational_temperature") == 1);
    const auto plain = dir.path() / "plain";
    REQUIRE(test::run_cli(fmt::format("run {} --out '{}' --quiet", gaussian_arguments("minibatch", integrator, "none"),
                                      plain.string()))
                .exit_code == 0);
    const auto data_lines = [](const fs::path& path) {
      std::string kept;
      for (const auto& line : test::lines_of(test::draws_without_elapsed_time(path)))
        if (!line.starts_with("#")) kept += line + "\n";
      return kept;
    };
    const auto item_gradients = [](const fs::path& path) {
      const auto lines = test::lines_of(test::read_text(path));
      const auto names = test::csv_fields(lines.front());
      const auto column = static_cast<std::size_t>(std::find(names.begin(), names.end(), "item_gradients") - names.begin());
      std::vector<std::string> values;
      for (std::size_t row = 1; row < lines.size(); ++row) values.push_back(test::csv_fields(lines[row]).at(column));
      return values;
    };
    for (int k = 1; k <= 2; ++k)
      CHECK(data_lines(plain / fmt::format("chain-{}.csv", k)) == data_lines(dir.path() / "whole" / fmt::format("chain-{}.csv", k)));
    CHECK(item_gradients(plain / "metrics.csv") == item_gradients(dir.path() / "whole" / "metrics.csv"));
  }
}

TEST_CASE("pmf (sgld, saga), logistic and lda runs stopped at a checkpoint and resumed continue bit for bit") {
  // pmf: Gibbs steps of the hyperparameters every 3 iterations (workspace state that the prior
  // gradient reads), the running predictive average and mean predictions behind its metrics,
  // and with saga its sparse N × s table, τ and the bias precisions drawn by Gibbs; logistic: the running predictive average, with cv and saga's compact tables; lda: the
  // running predictive average and the workspace's own evaluation stream, with cv (positive
  // parameters mirrored, topic assignments Gibbs-sampled in every gradient).
  const std::vector<std::pair<std::string, bool>> runs = {
      {"--preset lda-sgldcv --set model.topics=4 --set model.true_topics=3 --set model.docs=200 --set model.words=60 "
       "--set run.iterations=60 --set run.thin=2 --set run.eval_every=10 --chains 2 --checkpoint-every 10",
       false},
      {"--preset pmf-sgld --set model.users=40 --set model.items=30 --set model.ratings=400 --set model.rank=3 "
       "--set model.gibbs_every=3 --set estimator.batch_size=50 --set run.iterations=60 --set run.thin=2 "
       "--set run.eval_every=6 --set output.quantities=true --chains 2 --checkpoint-every 6",
       false},
      {"--preset pmf-saga --set model.users=40 --set model.items=30 --set model.ratings=400 --set model.rank=3 "
       "--set model.gibbs_every=3 --set model.noise_prior_shape=2 --set model.noise_prior_rate=1 "
       "--set model.biases=true --set estimator.batch_size=50 --set run.iterations=60 --set run.thin=2 "
       "--set run.eval_every=6 --chains 2 --checkpoint-every 6",
       false},
      {"--preset covtype-sgldcv --set model.n=2000 --set run.iterations=60 --set run.thin=2 --set run.eval_every=10 "
       "--chains 2 --checkpoint-every 10",
       false},
      {"--preset covtype-saga --set model.n=2000 --set run.iterations=60 --set run.thin=2 --set run.eval_every=10 "
       "--set output.gradients=cv --chains 1 --checkpoint-every 10",
       true},
  };
  for (const auto& [arguments, gradients] : runs) {
    INFO(arguments);
    test::TempDir dir;
    const int chains = arguments.find("--chains 2") != std::string::npos ? 2 : 1;
    check_stop_and_resume(dir.path(), arguments, 30, chains, gradients);
  }
}


TEST_CASE("sgmcmc run killed with SIGKILL mid-run and resumed writes the uninterrupted run's files") {
  test::TempDir dir;
  // Long enough to kill mid-way (about a second per chain): svrg (snapshot counter, centre) with
  // obabo (momentum and kept gradient), `cv` recorded gradients, 2 chains on 2 threads.
  const std::vector<std::string> arguments = {"run",         "--preset",     "demo",
                                              "--set",       "model.n=2000", "--set",
                                              "estimator.name=svrg",         "--set",
                                              "integrator.name=obabo",       "--set",
                                              "integrator.step_size=1e-3",   "--set",
                                              "run.iterations=30000",        "--set",
                                              "run.thin=10",                 "--set",
                                              "output.gradients=cv",         "--chains",
                                              "2",           "--threads",    "2",
                                              "--checkpoint-every",          "500",
                                              "--quiet"};
  std::string joined;
  for (const auto& argument : arguments) joined += argument + " ";
  const auto whole = test::run_cli(joined + "--out '" + (dir.path() / "whole").string() + "'");
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);

  const auto out = dir.path() / "killed";
  auto killed_arguments = arguments;
  killed_arguments.insert(killed_arguments.end(), {"--out", out.string()});
  const pid_t child = test::spawn_cli(killed_arguments);
  REQUIRE(child > 0);
  // Killed once both chains have a checkpoint and have gone on (their files then hold rows
  // beyond the checkpoint, which the resumed run must cut off).
  const auto checkpoints = [&] { return fs::exists(out / "checkpoint-1.bin") && fs::exists(out / "checkpoint-2.bin"); };
  REQUIRE(test::kill_when(child, [&, since = std::optional<std::chrono::steady_clock::time_point>()]() mutable {
    if (!checkpoints()) return false;
    if (!since) since = std::chrono::steady_clock::now();
    return std::chrono::steady_clock::now() - *since > std::chrono::milliseconds(50);
  }));
  REQUIRE(!fs::exists(out / "manifest.json"));
  // The killed run's lock file stays, naming it, but the kernel released its lock.
  CHECK_THAT(test::read_text(out / ".lock"), Contains(fmt::format("pid {} ", child)));

  const auto resumed = test::run_cli("run --resume '" + out.string() + "' --quiet");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(outputs(out, 2, true) == outputs(dir.path() / "whole", 2, true));
  CHECK(!fs::exists(out / ".lock"));  // removed by the resumed run as it released it
}

TEST_CASE("a run folder has one writer: --resume, --replace and --out into a live run's folder are refused, naming its pid") {
  test::TempDir dir;
  // A run of a few seconds with checkpoints (so that --resume gets as far as the lock).
  const std::vector<std::string> arguments = {"run", "--preset", "demo", "--chains", "1", "--set", "run.iterations=400000",
                                              "--set", "run.thin=10", "--checkpoint-every", "10000", "--quiet"};
  std::string joined;
  for (const auto& argument : arguments) joined += argument + " ";
  const auto out = dir.path() / "live", log = dir.path() / "live.log";
  auto live_arguments = arguments;
  live_arguments.insert(live_arguments.end(), {"--out", out.string()});
  const pid_t live = test::spawn_cli(live_arguments, log.string());
  REQUIRE(live > 0);
  // Once it has written draws (its file past a stdio buffer) and a checkpoint, far from its end.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  std::error_code absent;
  while (!(fs::exists(out / "checkpoint-1.bin") && fs::file_size(out / "chain-1.csv", absent) > 4096 && !absent) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto holder = fmt::format("pid {} on ", live);
  const std::vector<std::string> intruders = {
      fmt::format("run --resume '{}' --quiet", out.string()),
      fmt::format("{} --out '{}' --replace --seed 2", joined, out.string())};
  for (const auto& intruder : intruders) {
    const auto refused = test::run_cli(intruder);
    INFO(intruder << "\n" << refused.output);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.output, Contains(out.string()) && Contains(holder));
  }
  int status = 0;
  REQUIRE(waitpid(live, &status, WNOHANG) == 0);  // the refusals came while it was running
  REQUIRE(waitpid(live, &status, 0) == live);
  INFO(test::read_text(log));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(nlohmann::json::parse(test::read_text(out / "manifest.json"))["status"] == "complete");
  CHECK(!fs::exists(out / ".lock"));
  // Intact: the bytes of the same run that nobody disturbed.
  const auto alone = test::run_cli(joined + "--out '" + (dir.path() / "alone").string() + "'");
  REQUIRE(alone.exit_code == 0);
  CHECK(outputs(out, 1, false) == outputs(dir.path() / "alone", 1, false));
}

TEST_CASE("sgmcmc run --resume refuses a corrupt or truncated checkpoint, naming the file, and changes nothing") {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto first = test::run_cli(fmt::format("run --preset demo --set model.n=300 --set run.iterations=40 --set run.thin=1 "
                                               "--chains 1 --checkpoint-every 10 --stop-after 20 --out '{}' --quiet",
                                               out.string()));
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto checkpoint = out / "checkpoint-1.bin";
  const std::string good = test::read_text(checkpoint), draws = test::read_text(out / "chain-1.csv");

  const std::vector<std::pair<std::string, std::string>> damages = {
      {good.substr(0, good.size() / 2), "truncated"},
      {good.substr(0, good.size() / 2) + std::string(good.size() - good.size() / 2, 'x'), "corrupt"},
      {"not a checkpoint at all", "not an sgmcmc checkpoint"},
  };
  for (const auto& [text, complaint] : damages) {
    INFO(complaint);
    dir.write("run/checkpoint-1.bin", text);
    const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    CHECK(resumed.exit_code == 2);
    CHECK_THAT(resumed.output, Contains(checkpoint.string()) && Contains(complaint));
    CHECK(test::read_text(out / "chain-1.csv") == draws);
  }
}

namespace {

/// Where slot `index` (0 or 1) of a checkpoint file starts, by the layout sgmcmc.state documents
/// (format 7): the slot size S at byte 12 of the header, the slots at 4096 and 4096 + S. Slot 0
/// holds a run's 1st, 3rd, ... checkpoint, slot 1 its 2nd, 4th, ...
std::size_t slot_offset(const std::string& file, int index) {
  REQUIRE(file.size() >= 20);
  std::uint64_t slot_size = 0;
  std::memcpy(&slot_size, file.data() + 12, sizeof slot_size);
  return 4096 + static_cast<std::size_t>(index) * slot_size;
}

/// `file` with 8 bytes of slot `index`'s state overwritten, as a write the machine died in leaves it.
std::string torn_slot(std::string file, int index) {
  const std::size_t at = slot_offset(file, index) + 16 + 100;
  REQUIRE(at + 8 < file.size());
  file.replace(at, 8, "torn....");
  return file;
}

}  // namespace

TEST_CASE("a checkpoint whose newest slot was torn resumes from the one before, bit for bit, and both torn are refused") {
  test::TempDir dir;
  // 2 chains, a checkpoint every 10 iterations of 60: slot 0 holds those of iterations 10, 30,
  // 50, slot 1 those of 20, 40.
  const std::string arguments = "--preset demo --set model.n=300 --set run.warmup=10 --set run.iterations=50 "
                                "--set run.thin=1 --set run.eval_every=5 --chains 2 --threads 2 --checkpoint-every 10";
  const auto whole = dir.path() / "whole";
  REQUIRE(test::run_cli(fmt::format("run {} --out '{}' --quiet", arguments, whole.string())).exit_code == 0);
  const auto stopped_at = [&](const fs::path& out, int iteration) {
    const auto first = test::run_cli(fmt::format("run {} --stop-after {} --out '{}' --quiet", arguments, iteration, out.string()));
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
  };
  const auto resume_checks = [&](const fs::path& out, std::uint64_t from) {
    const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    INFO(resumed.output);
    REQUIRE(resumed.exit_code == 0);
    CHECK(outputs(out, 2, false) == outputs(whole, 2, false));
    const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
    for (const auto& chain : manifest["chains"]) CHECK(chain["resumed_at_iteration"] == from);
  };

  SECTION("stopped at 40, the newest slot (1) cut in the middle: resumed from 30") {
    const auto out = dir.path() / "cut";
    stopped_at(out, 40);
    for (int k = 1; k <= 2; ++k) {
      const auto checkpoint = out / fmt::format("checkpoint-{}.bin", k);
      const std::string file = test::read_text(checkpoint);
      const std::size_t newest = slot_offset(file, 1);
      dir.write(fs::relative(checkpoint, dir.path()).string(), file.substr(0, newest + (file.size() - newest) / 2));
    }
    resume_checks(out, 30);
  }
  SECTION("stopped at 30, the newest slot (0) overwritten in part: resumed from 20") {
    const auto out = dir.path() / "torn";
    stopped_at(out, 30);
    for (int k = 1; k <= 2; ++k) {
      const auto checkpoint = out / fmt::format("checkpoint-{}.bin", k);
      dir.write(fs::relative(checkpoint, dir.path()).string(), torn_slot(test::read_text(checkpoint), 0));
    }
    resume_checks(out, 20);
  }
  SECTION("both slots torn: refused, naming the file, and nothing changed") {
    const auto out = dir.path() / "both";
    stopped_at(out, 40);
    const auto checkpoint = out / "checkpoint-2.bin";
    dir.write(fs::relative(checkpoint, dir.path()).string(), torn_slot(torn_slot(test::read_text(checkpoint), 0), 1));
    const std::string draws = test::read_text(out / "chain-1.csv");
    const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    INFO(resumed.output);
    CHECK(resumed.exit_code == 2);
    CHECK_THAT(resumed.output, Contains(checkpoint.string()) && Contains("neither of its two slots holds a whole checkpoint"));
    CHECK(test::read_text(out / "chain-1.csv") == draws);
    CHECK(!fs::exists(out / "manifest.json"));
  }
}

TEST_CASE("sgmcmc run --resume refuses another configuration, a finished run and a folder without checkpoints") {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const std::string arguments = "--preset demo --set model.n=300 --set run.iterations=40 --set run.thin=1 --chains 1 "
                                "--checkpoint-every 10";
  REQUIRE(test::run_cli(fmt::format("run {} --stop-after 20 --out '{}' --quiet", arguments, out.string())).exit_code == 0);
  const std::string draws = test::read_text(out / "chain-1.csv");

  SECTION("another configuration, given on the command line") {
    const auto other = test::run_cli(fmt::format("run {} --seed 2 --resume '{}' --quiet", arguments, out.string()));
    CHECK(other.exit_code == 2);
    CHECK_THAT(other.output, Contains((out / "checkpoint.json").string()) && Contains("run.seed: 2 here, 1 recorded"));
    CHECK(test::read_text(out / "chain-1.csv") == draws);
  }
  SECTION("the recorded config.toml edited") {
    std::string config = test::read_text(out / "config.toml");
    const auto line = config.find("step_size = ");
    REQUIRE(line != std::string::npos);
    config.replace(line, config.find('\n', line) - line, "step_size = 1e-6");
    dir.write("run/config.toml", config);
    const auto edited = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    CHECK(edited.exit_code == 2);
    CHECK_THAT(edited.output, Contains("integrator.step_size: 1e-06 here, 2e-05 recorded"));
    CHECK(test::read_text(out / "chain-1.csv") == draws);
  }
  SECTION("the same configuration given again resumes") {
    const auto same = test::run_cli(fmt::format("run {} --resume '{}' --quiet", arguments, out.string()));
    INFO(same.output);
    CHECK(same.exit_code == 0);
    CHECK(fs::exists(out / "manifest.json"));
  }
  SECTION("a finished run") {
    REQUIRE(test::run_cli(fmt::format("run --resume '{}' --quiet", out.string())).exit_code == 0);
    const std::string finished = test::read_text(out / "chain-1.csv"), manifest = test::read_text(out / "manifest.json");
    const auto again = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    CHECK(again.exit_code == 2);
    CHECK_THAT(again.output, Contains("holds a complete run"));
    CHECK(test::read_text(out / "chain-1.csv") == finished);
    CHECK(test::read_text(out / "manifest.json") == manifest);
  }
  SECTION("a run without checkpoints") {
    const auto plain = dir.path() / "plain";
    const auto first = test::run_cli(fmt::format("run --preset demo --set model.n=300 --set run.iterations=20 --chains 1 "
                                                 "--out '{}' --quiet",
                                                 plain.string()));
    REQUIRE(first.exit_code == 0);
    fs::remove(plain / "manifest.json");
    const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", plain.string()));
    CHECK(resumed.exit_code == 2);
    CHECK_THAT(resumed.output, Contains("holds no checkpoint.json"));
  }
  SECTION("--stop-after that is not a checkpoint") {
    const auto bad = test::run_cli(fmt::format("run {} --stop-after 15 --out '{}' --quiet", arguments,
                                               (dir.path() / "bad").string()));
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.output, Contains("multiple of run.checkpoint_every = 10"));
  }
}

namespace {

/// Every file of a folder with its bytes, by name: what a refused resume must leave as it was.
std::vector<std::pair<std::string, std::string>> folder_bytes(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : fs::directory_iterator(folder))
    files.emplace_back(entry.path().filename().string(), test::read_text(entry.path()));
  std::sort(files.begin(), files.end());
  return files;
}

/// Where a digit of the first row after the header is, in a CSV file with `#` comment lines.
std::size_t digit_in_first_row(const std::string& text) {
  std::size_t line = 0;
  while (text.compare(line, 1, "#") == 0) line = text.find('\n', line) + 1;  // comments
  return text.find_first_of("0123456789", text.find('\n', line) + 1);  // past the header
}

}  // namespace

TEST_CASE("sgmcmc run --resume refuses a data file changed since the run began, naming it, unless --allow-changed-data") {
  test::TempDir dir;
  std::string rows = "x1,x2,y\n";
  for (int i = 0; i < 200; ++i) rows += fmt::format("{},{},{}\n", (i % 7) * 0.25 - 0.7, (i % 5) * 0.3, (i % 11) * 0.2 - 1.0);
  const auto data = dir.write("data.csv", rows);
  const auto config = dir.write("run.toml", "[model]\nname = \"gaussian\"\ndata = \"data.csv\"\n[estimator]\nname = "
                                            "\"minibatch\"\nbatch_size = 20\n[integrator]\nname = \"sgld\"\nstep_size = 1e-3\n"
                                            "[run]\niterations = 40\nthin = 1\nchains = 1\ncheckpoint_every = 10\n");
  const auto out = dir.path() / "run", whole = dir.path() / "whole";
  const std::string arguments = fmt::format("--config '{}' --quiet", config.string());
  REQUIRE(test::run_cli(fmt::format("run {} --out '{}'", arguments, whole.string())).exit_code == 0);
  REQUIRE(test::run_cli(fmt::format("run {} --stop-after 20 --out '{}'", arguments, out.string())).exit_code == 0);
  const auto checkpoint = nlohmann::json::parse(test::read_text(out / "checkpoint.json"));
  CHECK(checkpoint["data_files"]["model.data"]["size"] == rows.size());
  const auto before = folder_bytes(out);

  SECTION("a value changed, the size the same") {
    std::string changed = rows;
    changed[changed.find("-0.7")] = '+';
    dir.write("data.csv", changed);
    const auto refused = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    INFO(refused.output);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.output, Contains("model.data '" + data.string() + "'") && Contains("other bytes") &&
                                   Contains("--allow-changed-data"));
    CHECK(folder_bytes(out) == before);
    const auto allowed = test::run_cli(fmt::format("run --resume '{}' --allow-changed-data --quiet", out.string()));
    INFO(allowed.output);
    CHECK(allowed.exit_code == 0);
    CHECK_THAT(allowed.output, Contains("warning: --allow-changed-data") && Contains(data.string()));
  }
  SECTION("rows appended") {
    dir.write("data.csv", rows + "0.1,0.2,0.3\n");
    const auto refused = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    INFO(refused.output);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.output, Contains(data.string()) && Contains(fmt::format("{} bytes now, {} recorded", rows.size() + 12, rows.size())));
    CHECK(folder_bytes(out) == before);
  }
  SECTION("the file touched, its bytes the same, resumes bit for bit") {
    fs::last_write_time(data, fs::last_write_time(data) + std::chrono::hours(1));
    const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    INFO(resumed.output);
    CHECK(resumed.exit_code == 0);
    CHECK(outputs(out, 1, false) == outputs(whole, 1, false));
  }
}

TEST_CASE("sgmcmc run --resume checks every chain's files before changing any, and refuses bytes changed before the checkpoint") {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto first = test::run_cli(fmt::format("run --preset demo --set model.n=300 --set run.warmup=0 --set run.iterations=40 "
                                               "--set run.thin=1 --set output.gradients=estimator --chains 2 --threads 2 --checkpoint-every 10 "
                                               "--stop-after 20 --out '{}' --quiet",
                                               out.string()));
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  // As a killed run leaves it: chain 1 with a row beyond its checkpoint, which a resume cuts off.
  const std::string beyond = test::read_text(out / "chain-1.csv") + "0,1,2,3,4,5,6,7\n";
  dir.write("run/chain-1.csv", beyond);
  const auto refused = [&](const std::string& file, const std::string& complaint) {
    const auto before = folder_bytes(out);
    const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    INFO(resumed.output);
    CHECK(resumed.exit_code == 2);
    CHECK_THAT(resumed.output, Contains((out / file).string()) && Contains(complaint));
    CHECK(folder_bytes(out) == before);
  };

  SECTION("chain 2's draws cut before its checkpoint: chain 1's are not cut back either") {
    const std::string draws = test::read_text(out / "chain-2.csv");
    dir.write("run/chain-2.csv", draws.substr(0, draws.size() - 10));
    refused("chain-2.csv", "fewer than the");
  }
  for (const std::string file : {"chain-1.csv", "gradients-2.csv"}) {
    SECTION("a byte before the checkpoint changed in " + file) {
      std::string text = test::read_text(out / file);
      const auto digit = digit_in_first_row(text);
      REQUIRE(digit < text.size() / 2);
      text[digit] = text[digit] == '7' ? '8' : '7';
      dir.write("run/" + file, text);
      refused(file, "were changed since");
    }
  }
  SECTION("unchanged files resume") {
    const auto resumed = test::run_cli(fmt::format("run --resume '{}' --quiet", out.string()));
    INFO(resumed.output);
    CHECK(resumed.exit_code == 0);
    CHECK(test::read_text(out / "chain-1.csv") != beyond);
  }
}

namespace {

/// Runs `arguments` into `dir`/whole; runs them again into `dir`/interrupted and sends `signal`
/// once every chain has written draws (its file has passed a stdio buffer's 4 kB, far from its
/// end; the handler is installed before the files are created); checks what the interrupted run leaves (exit code 130, complete lines, metrics, a
/// manifest saying "interrupted", the command that resumes it), resumes it, and checks that the
/// outputs equal the whole run's byte for byte.
void check_interrupt_and_resume(const fs::path& dir, std::vector<std::string> arguments, int chains, bool gradients,
                                int signal) {
  std::string joined;
  for (const auto& argument : arguments) joined += argument + " ";
  const auto whole = test::run_cli(joined + "--out '" + (dir / "whole").string() + "'");
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);

  const auto out = dir / "interrupted", log = dir / "interrupted.log";
  arguments.insert(arguments.end(), {"--out", out.string()});
  const pid_t child = test::spawn_cli(arguments, log.string());
  REQUIRE(child > 0);
  const auto status = test::signal_when(child, signal, [&] {
    for (int k = 1; k <= chains; ++k) {
      std::error_code absent;
      if (fs::file_size(out / fmt::format("chain-{}.csv", k), absent) <= 4096 || absent) return false;
    }
    return true;
  });
  const auto said = test::read_text(log);
  INFO(said);
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
  CHECK_THAT(said, Contains("continue with: sgmcmc run --resume " + out.string()));
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["status"] == "interrupted");
  for (int k = 1; k <= chains; ++k) {
    CHECK(manifest["chains"][k - 1]["status"] == "interrupted");
    CHECK(fs::exists(out / fmt::format("checkpoint-{}.bin", k)));
    const auto draws = test::read_text(out / fmt::format("chain-{}.csv", k));
    CHECK(draws.ends_with("\n"));  // no half-written last line
  }
  CHECK(test::lines_of(test::read_text(out / "metrics.csv")).size() > 1);

  const auto resumed = test::run_cli("run --resume '" + out.string() + "' --quiet");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(outputs(out, chains, gradients) == outputs(dir / "whole", chains, gradients));
  CHECK(nlohmann::json::parse(test::read_text(out / "manifest.json"))["status"] == "complete");
  CHECK(!fs::exists(out / "checkpoint-1.bin"));
}

}  // namespace

TEST_CASE("Ctrl-C (SIGINT) on sgmcmc run without checkpoints: a checkpoint, metrics and manifest, exit 130, a bit-identical resume") {
  test::TempDir dir;
  // As the SIGKILL test: svrg with obabo and `cv` recorded gradients, 2 chains on 2 threads, no run.checkpoint_every.
  check_interrupt_and_resume(dir.path(),
                             {"run", "--preset", "demo", "--set", "model.n=2000", "--set", "estimator.name=svrg", "--set",
                              "integrator.name=obabo", "--set", "integrator.step_size=1e-3", "--set", "run.iterations=30000",
                              "--set", "run.thin=10", "--set", "output.gradients=cv", "--chains", "2", "--threads", "2",
                              "--quiet"},
                             2, true, SIGINT);
}

TEST_CASE("SIGTERM on sgmcmc run with checkpoints and MH blocks of 3: the chains stop at a block's end, resume bit for bit") {
  test::TempDir dir;
  check_interrupt_and_resume(dir.path(),
                             {"run", "--preset", "demo", "--set", "model.n=2000", "--set", "integrator.name=obabo", "--set",
                              "integrator.step_size=1e-3", "--set", "corrector.name=mh", "--set", "corrector.every=3", "--set",
                              "run.warmup=600", "--set", "run.iterations=30000", "--set", "run.thin=3", "--set", "run.eval_every=300", "--chains", "2",
                              "--threads", "2", "--checkpoint-every", "600", "--quiet"},
                             2, false, SIGTERM);
}

namespace {

/// The SGD steps of the cv centring the Ctrl-C tests interrupt, on the demo's batches of 100:
/// 5·10⁷ item gradients, seconds long.
constexpr std::uint64_t centring_steps = 500'000, centring_batch = 100;

/// Sends SIGINT to a short 1-chain demo run with a cv centring of centring_steps (`cv_setting`:
/// the chain's estimator.name=cv, or the recorder's output.gradients=cv) 100 ms after its chain
/// file exists (the files are opened, with the handler installed, just before the centring
/// begins: the signal lands in it), and checks it stopped there: exit 130, chain 1 interrupted at
/// iteration 0 with a message naming the centring phase, no checkpoint. Then resumes it and
/// checks that it writes what the run never interrupted writes. Returns the interrupted run's manifest.
nlohmann::json interrupt_centring_and_resume(const fs::path& dir, const std::string& cv_setting) {
  std::vector<std::string> arguments = {"run", "--preset", "demo", "--chains", "1", "--set", cv_setting, "--set",
                                        fmt::format("estimator.sgd_iterations={}", centring_steps), "--set",
                                        "run.warmup=0", "--set", "run.iterations=200", "--quiet"};
  const bool gradients = cv_setting.starts_with("output.gradients");
  std::string joined;
  for (const auto& argument : arguments) joined += argument + " ";
  const auto out = dir / "interrupted", log = dir / "interrupted.log";
  arguments.insert(arguments.end(), {"--out", out.string()});
  const pid_t child = test::spawn_cli(arguments, log.string());
  REQUIRE(child > 0);
  const auto status = test::signal_when(child, SIGINT, [&, since = std::optional<std::chrono::steady_clock::time_point>()]() mutable {
    if (!fs::exists(out / "chain-1.csv")) return false;
    if (!since) since = std::chrono::steady_clock::now();
    return std::chrono::steady_clock::now() - *since > std::chrono::milliseconds(100);
  });
  const auto said = test::read_text(log);
  INFO(said);
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["status"] == "interrupted");
  const auto& chain = manifest["chains"][0];
  CHECK(chain["status"] == "interrupted");
  CHECK(chain["iterations"] == 0);
  CHECK_THAT(chain["message"].get<std::string>(), Contains("centring phase"));
  CHECK(!fs::exists(out / "checkpoint-1.bin"));  // nothing to continue: the chain starts afresh
  CHECK(fs::exists(out / "checkpoint.json"));

  const auto resumed = test::run_cli("run --resume '" + out.string() + "' --quiet");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const auto whole = test::run_cli(joined + "--out '" + (dir / "whole").string() + "'");
  REQUIRE(whole.exit_code == 0);
  CHECK(outputs(out, 1, gradients) == outputs(dir / "whole", 1, gradients));
  return manifest;
}

}  // namespace

TEST_CASE("Ctrl-C during cv's centring phase stops the chain in it: exit 130, no checkpoint, and a resume starts it afresh") {
  test::TempDir dir;
  const auto manifest = interrupt_centring_and_resume(dir.path(), "estimator.name=cv");
  // Stopped inside the centring: fewer item gradients than its steps take (without the stop
  // flag polled there, the whole centring ran before the chain stopped).
  CHECK(manifest["chains"][0]["item_gradients"].get<std::uint64_t>() < centring_steps * centring_batch);
}

TEST_CASE("Ctrl-C during the draw recorder's cv centring (output.gradients = cv) stops the chain before it starts") {
  test::TempDir dir;
  // The chain's estimator is the demo's minibatch; the recorder's own cv estimator centres first
  // (estimator.sgd_iterations, read by the recorder).
  const auto manifest = interrupt_centring_and_resume(dir.path(), "output.gradients=cv");
  const auto& chain = manifest["chains"][0];
  CHECK_THAT(chain["message"].get<std::string>(), Contains("draw recorder"));
  CHECK(chain["item_gradients"] == 0);  // the chain itself never started
  // Stopped inside the recorder's centring, not after it.
  CHECK(chain["recording_item_gradients"].get<std::uint64_t>() < centring_steps * centring_batch);
}

namespace {

/// The SIGTERM test's OBABO + MH demo run after a burn-in of `burn_in` SGLD iterations
/// ([burn_in], runners/sgmcmc/burn_in.hpp), 2 chains on 2 threads.
std::vector<std::string> burn_in_arguments(std::uint64_t burn_in, std::uint64_t iterations) {
  return {"run", "--preset", "demo", "--set", "model.n=2000", "--set", "integrator.name=obabo", "--set",
          "integrator.step_size=1e-3", "--set", "corrector.name=mh", "--set", "corrector.every=3", "--set",
          "run.warmup=600", "--set", fmt::format("run.iterations={}", iterations), "--set", "run.thin=3", "--set",
          "run.eval_every=300", "--set", fmt::format("burn_in.iterations={}", burn_in), "--set",
          "burn_in.integrator.name=sgld", "--set", "burn_in.integrator.step_size=1e-4", "--set",
          "burn_in.corrector.name=none", "--chains", "2", "--threads", "2", "--checkpoint-every", "600", "--quiet"};
}

}  // namespace

TEST_CASE("SIGTERM after a burn-in, in the run's own sampler: the resumed chains continue from their checkpoints bit for bit") {
  test::TempDir dir;
  check_interrupt_and_resume(dir.path(), burn_in_arguments(3000, 30000), 2, false, SIGTERM);
  // The checkpoints carried the burn-in's record: the resumed run did not repeat it, yet says what it did.
  const auto manifest = nlohmann::json::parse(test::read_text(dir.path() / "interrupted" / "manifest.json"));
  for (const auto& chain : manifest["chains"]) {
    CHECK(chain["resumed_at_iteration"].get<std::uint64_t>() > 0);
    CHECK(chain["burn_in"]["iterations"] == 3000);
    CHECK(chain["burn_in"]["item_gradients"] == 3000 * 100);
  }
}

TEST_CASE("SIGTERM during a burn-in: exit 130, no checkpoint, and a resume replays the burn-in from the seed bit for bit") {
  // 2·10⁶ SGLD iterations of the demo's batches of 100 take seconds; the signal comes 200 ms
  // after the chain files exist (they are made, with the handler installed, just before the
  // chains start), so it lands in the burn-in.
  test::TempDir dir;
  auto arguments = burn_in_arguments(2'000'000, 600);
  std::string joined;
  for (const auto& argument : arguments) joined += argument + " ";
  const auto out = dir.path() / "interrupted", log = dir.path() / "interrupted.log";
  arguments.insert(arguments.end(), {"--out", out.string()});
  const pid_t child = test::spawn_cli(arguments, log.string());
  REQUIRE(child > 0);
  const auto status = test::signal_when(child, SIGTERM, [&, since = std::optional<std::chrono::steady_clock::time_point>()]() mutable {
    if (!fs::exists(out / "chain-2.csv")) return false;
    if (!since) since = std::chrono::steady_clock::now();
    return std::chrono::steady_clock::now() - *since > std::chrono::milliseconds(200);
  });
  INFO(test::read_text(log));
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  CHECK(manifest["status"] == "interrupted");
  for (const auto& chain : manifest["chains"]) {
    CHECK(chain["status"] == "interrupted");
    CHECK(chain["iterations"] == 0);
    CHECK_THAT(chain["message"].get<std::string>(), Contains("in its burn-in"));
  }
  CHECK(!fs::exists(out / "checkpoint-1.bin"));
  const auto resumed = test::run_cli("run --resume '" + out.string() + "' --quiet");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const auto whole = test::run_cli(joined + "--out '" + (dir.path() / "whole").string() + "'");
  REQUIRE(whole.exit_code == 0);
  CHECK(outputs(out, 2, false) == outputs(dir.path() / "whole", 2, false));
}
