// The [run] section: a run's schedule, its chains and seeds, which draws it keeps and where its
// chains start, each key described once in a field table (sgmcmc.fields), from which the reader,
// `sgmcmc list` and the docs' table of [run] keys (runners/README.md, held to this table by
// tests/unit/key_docs_test.cpp) all come.
//
// Some keys are read only when set: a run without checkpoints, temperatures, a chain precision, a
// collection or a start point records no such key in its manifest, so its files (and the
// configuration a resumed run is checked against) are what they were before the key existed.
module;
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
export module sgmcmc.run_section;
export import sgmcmc.fields;
import sgmcmc.settings;
import sgmcmc.schedules;
import sgmcmc.chain;

export namespace sgmcmc {

/// [run]'s keys as read; the member initialisers (ChainSchedule's for `chain`) are their defaults.
struct RunSchedule {
  ChainSchedule chain;
  std::uint64_t chains = 1;
  std::uint64_t seed = 1;
  std::uint64_t data_seed = seed;  // the model's simulated data and splits; run.seed unless set
  bool collect_cycle_end = false;  // run.collect = "cycle_end" (Zhang et al. 2020's sampling stages)
  double collect_fraction = 0.2;   // of each cycle, the last share whose draws are kept
  bool data_parallel = false;      // one chain's data terms split across MPI ranks (sgmcmc.data_parallel)
};

/// run.init and its two companions: where each chain starts (runners/sgmcmc/start_points.hpp).
struct StartChoice {
  std::string init;             // a run folder or a CSV file
  std::uint64_t draw = 0;       // the row, 1 = the first, 0 = the last
  bool mean = false;            // the mean of every draw instead of one
};

/// The keys of RunSchedule, in the order they are read (the first bad key is the one reported).
FieldTable<RunSchedule> run_fields();
/// The keys of StartChoice.
FieldTable<StartChoice> start_fields();
/// Every [run] key as the docs show it: run_fields, then start_fields.
std::vector<KeyDoc> run_key_docs();

/// [run] read and checked; the collection's cycle comes from `integrator` (schedule = "cyclical").
RunSchedule read_run_schedule(SectionReader run, SectionReader integrator);
/// run.init's start, or none when `init` is not set.
std::optional<StartChoice> read_start_choice(SectionReader run);

}  // namespace sgmcmc
