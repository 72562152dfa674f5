// A sweep's plan (see sweep_plan.hpp).
#include <filesystem>
#include <string>
#include <system_error>
#include <fmt/format.h>

#include "files.hpp"
#include "run_folder.hpp"
#include "sweep_cells.hpp"
#include "sweep_plan.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

/// The output folder: new or empty, or with --resume one holding this same sweep file.
void prepare_sweep_folder(const Sweep& sweep, const fs::path& out, bool resume) {
  const fs::path recorded = out / "sweep.toml";
  if (resume && fs::exists(recorded)) {
    if (read_file(recorded, "the sweep file") != sweep.text)
      throw sgmcmc::Error(fmt::format("--resume: '{}' holds another sweep ({} differs from {}); nothing was changed",
                                      out.string(), recorded.string(), sweep.source));
    return;
  }
  require_folder_or_absent(out);
  if (fs::exists(out) && !fs::is_empty(out))
    throw sgmcmc::Error(fs::exists(recorded)
                            ? fmt::format("output folder '{}' holds an earlier sweep (its sweep.toml); add --resume to "
                                          "continue it, or choose another --out",
                                          out.string())
                            : fmt::format("output folder '{}' is not empty and holds no sweep.toml to resume; choose "
                                          "another --out",
                                          out.string()));
  std::error_code error;
  fs::create_directories(out, error);
  if (error) throw sgmcmc::Error(fmt::format("output folder '{}': {}", out.string(), error.message()));
  write_atomically(recorded, sweep.text);
}

}  // namespace

Plan make_plan(const SweepOptions& options, unsigned jobs) {
  Plan plan{parse_sweep(read_file(options.file, "the sweep file"), options.file.string()), {}, {}};
  check_cell_count(plan.sweep, options);
  plan.cells = enumerate_cells(plan.sweep);
  plan.out = options.out ? *options.out : fs::path("runs") / fmt::format("sweep-{}", options.file.stem().string());
  if (options.resume)
    for (auto& cell : plan.cells)
      if (fs::exists(plan.out / cell.name / run_folder::manifest) && !interrupted_run(manifest_if_any(plan.out / cell.name)))
        cell.status = "done";
  validate_cells(plan.sweep, plan.cells, options, jobs, *plan.models);
  prepare_sweep_folder(plan.sweep, plan.out, options.resume);
  if (!options.quiet)
    for (const auto& cell : plan.cells)
      if (cell.status == "skipped") fmt::print("skipped {}: {}\n", cell.name, cell.reason);
  return plan;
}
