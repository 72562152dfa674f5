// A command that does its work as a sweep it writes itself (`sbc`: one cell per replication;
// `tune`: one per step size), so threads, MPI and --resume come from the sweep machinery. Its
// folder holds the generated sweep file and the sweep's own folder of cells.
#pragma once
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "commands.hpp"

import sgmcmc;

struct GeneratedSweep {
  std::string command;            // "sbc", "tune": starts its errors
  std::string kind;               // "SBC", "tuning": what the folder holds
  std::filesystem::path out;      // the command's folder
  std::string file_name;          // the sweep file in it ("sbc-sweep.toml")
  std::string cells;              // the sweep's folder in it ("replications")
  std::string text;               // the sweep file (generated_sweep_text)
  std::size_t cell_count = 0;
  GridOptions grid;               // the command's --jobs, --resume, --quiet, --plugin-dir (--out: `out`)
};

/// A sweep file: `comment` (one line), the configuration as config = '''…''', then `rest` (its
/// axes). Throws when the configuration holds ''' , which cannot be quoted so.
std::string generated_sweep_text(const GeneratedSweep& sweep, const std::string& comment, const sgmcmc::RunConfig& config,
                                 const std::string& rest);

/// On rank 0, checks the folder (empty, or with --resume one holding the same sweep file) and
/// writes the sweep file; then runs the sweep on every rank. Returns the sweep's exit code, with
/// `ran` set on rank 0 when the cells' folder exists (when the sweep refused every cell, a folder
/// this call created is removed and `ran` is false).
int run_generated_sweep(const GeneratedSweep& sweep, bool& ran);
