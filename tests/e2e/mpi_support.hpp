// Launching the CLI under MPI, for the e2e tests of MPI sweeps (sweep_test.cpp) and data-parallel
// runs (data_parallel_test.cpp). Defined only when the build has MPI (SGMCMC_MPIEXEC).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support.hpp"

#ifdef SGMCMC_MPIEXEC
namespace test {

/// A folder of this test process's own for Open MPI's session directories, in the temporary folder
/// of the moment (a test may have set TMPDIR to its own), removed when the process ends. Open MPI
/// 4.1.4 (Debian 12's) puts every job's session directory under one top folder per user,
/// /tmp/ompi.HOST.UID, which each job creates and cleans up; jobs starting and ending at once on one
/// machine sporadically fail to create theirs, and mpirun ends the job at once with exit 1 ("A call
/// to mkdir was unable to create the desired directory"; open-mpi/ompi#8510, met by CTest-driven
/// suites of other projects, which give each job its own orte_tmpdir_base). ctest -j2 starts two
/// data-parallel tests at once, and CI once saw a 1-rank job exit with 1 in its first second,
/// most likely this (its output was cut off; not reproduced here). With a top folder per test
/// process, no other job shares it.
inline std::string own_session_base() {
  static struct Bases {
    std::set<std::filesystem::path> made;
    ~Bases() {
      for (const auto& folder : made) {
        std::error_code ignored;
        std::filesystem::remove_all(folder, ignored);
      }
    }
  } bases;
  const auto folder = std::filesystem::temp_directory_path() / fmt::format("sgmcmc-test-ompi-{}", getpid());
  std::filesystem::create_directories(folder);
  bases.made.insert(folder);
  return folder.string();
}

/// `mpiexec -n RANKS`, with --oversubscribe (3 ranks on 2 cores) and a session folder of this
/// process's own (own_session_base) for Open MPI. CI runs as root, which Open MPI refuses unless
/// two variables say so; they mean nothing to other MPIs.
inline std::vector<std::string> mpi_launcher(int ranks) {
  static const bool open_mpi = shell(fmt::format("'{}' --version", SGMCMC_MPIEXEC)).output.find("open-mpi.org") != std::string::npos;
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  std::vector<std::string> launcher = {SGMCMC_MPIEXEC, "-n", std::to_string(ranks)};
  if (open_mpi) launcher.insert(launcher.end(), {"--oversubscribe", "--mca", "orte_tmpdir_base", own_session_base()});
#ifdef SGMCMC_MPI_LSAN_OPTIONS
  // The asan build: the ranks suppress Open MPI's own leaks at exit (tests/sanitizers/lsan-openmpi.supp),
  // so that a leak of ours is what fails the test. Open MPI's mpirun passes a variable to ranks on
  // other machines only when -x names it; on this one they inherit it too.
  static const bool lsan_options_set = [] {
    std::string options = SGMCMC_MPI_LSAN_OPTIONS;
    if (const char* given = std::getenv("LSAN_OPTIONS")) options = std::string(given) + ":" + options;
    return setenv("LSAN_OPTIONS", options.c_str(), 1) == 0;
  }();
  REQUIRE(lsan_options_set);
  if (open_mpi) launcher.insert(launcher.end(), {"-x", "LSAN_OPTIONS"});
#endif
  return launcher;
}

/// `mpiexec -n RANKS sgmcmc ARGUMENTS` under `timeout`, so ranks waiting on each other forever fail
/// the test (exit 124) instead of hanging it.
inline CliResult mpi_cli(int ranks, const std::string& arguments) {
  std::string command = "timeout -k 10 300";
  for (const auto& word : mpi_launcher(ranks)) command += " '" + word + "'";
  return shell(command + " '" + SGMCMC_CLI + "' " + arguments);
}

}  // namespace test
#endif
