// A command's work as a sweep it writes itself (generated_sweep.hpp).
#include <string>
#include <fmt/format.h>

#include "cluster.hpp"
#include "commands.hpp"
#include "files.hpp"
#include "generated_sweep.hpp"

namespace fs = std::filesystem;

std::string generated_sweep_text(const GeneratedSweep& sweep, const std::string& comment, const sgmcmc::RunConfig& config,
                                 const std::string& rest) {
  const std::string base = sgmcmc::format_config(config);
  if (base.find("'''") != std::string::npos)
    throw sgmcmc::Error(fmt::format("{}: the configuration holds ''' , which the generated sweep file cannot quote", sweep.command));
  return fmt::format("# {}\nconfig = '''\n{}'''\n{}", comment, base, rest);
}

int run_generated_sweep(const GeneratedSweep& sweep, bool& ran) {
  ran = false;
  const fs::path file = sweep.out / sweep.file_name, cells = sweep.out / sweep.cells;
  const bool root = launcher_rank() == 0;
  const bool created = !fs::exists(sweep.out);
  if (root) {
    require_folder_or_absent(sweep.out);
    if (!sweep.grid.resume && fs::exists(sweep.out) && !fs::is_empty(sweep.out))
      throw sgmcmc::Error(fmt::format("{}: '{}' is not empty; choose another --out, or --resume to finish it", sweep.command,
                                      sweep.out.string()));
    // --resume continues this command's own folder, never writes into another's (a run folder, say).
    if (sweep.grid.resume && fs::exists(sweep.out) && !fs::is_empty(sweep.out) && !fs::exists(file))
      throw sgmcmc::Error(fmt::format("{0}: '{1}' holds no {2}, so it is not the folder of an earlier `sgmcmc {0}` to "
                                      "resume; choose another --out",
                                      sweep.command, sweep.out.string(), sweep.file_name));
    fs::create_directories(sweep.out);
    if (sweep.grid.resume && fs::exists(file) && read_file(file, "the generated sweep") != sweep.text)
      throw sgmcmc::Error(fmt::format("{}: '{}' holds another {} (its {} differs: other settings or options); resume it "
                                      "with the same options",
                                      sweep.command, sweep.out.string(), sweep.kind, sweep.file_name));
    write_atomically(file, sweep.text);
  }
  SweepOptions of_cells;
  static_cast<GridOptions&>(of_cells) = sweep.grid;
  of_cells.out = cells;
  of_cells.resume = sweep.grid.resume && fs::exists(cells);
  of_cells.file = file;
  of_cells.max_cells = sweep.cell_count;
  of_cells.yes = true;
  const int code = sweep_command(of_cells);
  if (!root) return code;
  ran = fs::exists(cells);
  if (!ran && created) fs::remove_all(sweep.out);  // the sweep refused every cell: nothing ran
  return code;
}
