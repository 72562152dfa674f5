// A sweep across the ranks of a cluster (see sweep_cluster.hpp).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>
#include <unistd.h>
#include <fmt/format.h>

#include "files.hpp"
#include "message_fields.hpp"
#include "run_folder.hpp"
#include "sweep_cells.hpp"
#include "sweep_cluster.hpp"
#include "sweep_tables.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

/// This rank's share: the cells to run, dealt round-robin in grid order, so which rank runs a
/// cell depends on the grid and the number of ranks alone.
std::vector<std::size_t> dealt_cells(const std::vector<Cell>& cells, const Cluster& cluster) {
  std::vector<std::size_t> mine;
  std::size_t dealt = 0;
  for (std::size_t c = 0; c < cells.size(); ++c)
    if (cells[c].status == "pending" && dealt++ % static_cast<std::size_t>(cluster.size()) == static_cast<std::size_t>(cluster.rank()))
      mine.push_back(c);
  return mine;
}

/// A cell's outcome and every file of its folder, for rank 0 to write into the sweep's folder.
std::string cell_message(const Cell& cell, const Finished& finished, const fs::path& folder) {
  std::string message;
  for (const std::string& field : {std::string("cell"), std::to_string(finished.cell), cell.status, cell.reason, number_text(finished.seconds)})
    pack(message, field);
  if (!fs::exists(folder)) return message;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    pack(message, fs::relative(entry.path(), folder).generic_string());
    const std::uint64_t budget = sgmcmc::memory_budget_bytes();  // a cell's chains can be large
    pack(message, read_file(entry.path(), "a finished cell's file", budget ? budget : UINT64_MAX));
  }
  return message;
}

/// The files of a cell's message (name, content, ...) into `folder`, manifest.json last.
void write_cell_files(Unpacker& fields, const fs::path& folder) {
  std::optional<std::string> manifest;
  while (!fields.empty()) {
    const fs::path name = fields.next();
    std::string content = fields.next();
    if (name == run_folder::lock) continue;  // the sending rank's lock, released: this folder has its own
    if (name == run_folder::manifest) {
      manifest = std::move(content);
      continue;
    }
    fs::create_directories((folder / name).parent_path());
    write_atomically(folder / name, content);
  }
  if (manifest) write_atomically(folder / run_folder::manifest, *manifest);
}

/// Writes a cell another rank ran into its folder, manifest.json last and through a temporary
/// name, as a run writes it: a folder without it is a cell to rerun on --resume. Under the
/// folder's lock, as every writer of a run folder: another process writing it (a run or another
/// sweep in that folder) keeps its files, and the cell fails naming that process.
Finished store_cell(std::vector<Cell>& cells, Unpacker& fields, const fs::path& out) {
  const std::size_t index = std::stoul(fields.next());
  Cell& cell = cells.at(index);
  cell.status = fields.next();
  cell.reason = fields.next();
  const Finished finished{index, std::stod(fields.next())};
  const fs::path folder = out / cell.name;
  try {
    fs::create_directories(folder);
    const RunFolderLock lock(folder);
    clear_folder_but_lock(folder);
    write_cell_files(fields, folder);
  } catch (const sgmcmc::Error& error) {
    cell.status = "failed";
    cell.reason = error.what();
  }
  return finished;
}

void report(const Cell& cell, std::size_t done, std::size_t total, double seconds) {
  fmt::print("[{}/{}] {}: {} ({:.1f} s){}\n", done, total, cell.name, cell.status, seconds,
             cell.reason.empty() ? "" : ": " + cell.reason);
  std::fflush(stdout);
}

}  // namespace

Shared share_plan(const Cluster& cluster, const SweepOptions& options, unsigned jobs) {
  if (cluster.root()) {
    std::string refusal;
    pack(refusal, "refused");
    try {
      Plan plan = make_plan(options, jobs);
      std::string message;
      for (const std::string& field : {std::string("plan"), plan.sweep.source, plan.sweep.text}) pack(message, field);
      for (const auto& cell : plan.cells) {
        pack(message, cell.status);
        pack(message, cell.reason);
      }
      cluster.broadcast(message);
      return {std::move(plan), 0};
    } catch (const std::exception& error) {
      // Said before the other ranks hear of it: once one of them exits non-zero, mpirun may end
      // this rank before a message printed later reaches the terminal.
      const int code = report_error(error);
      pack(refusal, std::to_string(code));
      cluster.broadcast(refusal);
      return {std::nullopt, code};
    }
  }
  const std::string message = cluster.broadcast("");
  Unpacker fields(message);
  if (fields.next() == "refused") return {std::nullopt, std::stoi(fields.next())};
  Plan plan;
  const std::string source = fields.next();
  plan.sweep = parse_sweep(fields.next(), source);
  plan.cells = enumerate_cells(plan.sweep);
  for (auto& cell : plan.cells) {
    cell.status = fields.next();
    cell.reason = fields.next();
  }
  return {std::move(plan), 0};
}

void run_on_root(const Cluster& cluster, Plan& plan, const SweepOptions& options, unsigned jobs) {
  const auto total = static_cast<std::size_t>(std::count_if(plan.cells.begin(), plan.cells.end(), [](const Cell& cell) { return cell.status == "pending"; }));
  LocalCells local(plan.sweep, plan.cells, dealt_cells(plan.cells, cluster), plan.out, options, jobs, *plan.models);
  int ranks_running = cluster.size() - 1;
  std::size_t done = 0;
  while (!local.finished() || ranks_running > 0) {
    std::optional<Finished> finished = local.next(std::chrono::milliseconds(ranks_running > 0 ? 5 : 100));
    if (!finished) {
      if (auto message = cluster.poll()) {
        Unpacker fields(message->second);
        if (fields.next() == "done") --ranks_running;
        else finished = store_cell(plan.cells, fields, plan.out);
      }
    }
    if (finished && !options.quiet) report(plan.cells[finished->cell], ++done, total, finished->seconds);
  }
}

void run_on_worker(const Cluster& cluster, Plan& plan, const SweepOptions& options, unsigned jobs) {
  const fs::path scratch = fs::temp_directory_path() / fmt::format("sgmcmc-sweep-{}-rank-{}", getpid(), cluster.rank());
  {
    LocalCells local(plan.sweep, plan.cells, dealt_cells(plan.cells, cluster), scratch, options, jobs, *plan.models);
    while (!local.finished()) {
      if (const auto finished = local.next(std::chrono::milliseconds(100))) {
        const fs::path folder = scratch / plan.cells[finished->cell].name;
        cluster.send_to_root(cell_message(plan.cells[finished->cell], *finished, folder));
        fs::remove_all(folder);
      }
    }
  }
  fs::remove_all(scratch);
  std::string done;
  pack(done, "done");
  cluster.send_to_root(done);
}
