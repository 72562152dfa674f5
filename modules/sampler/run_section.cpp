// The [run] section's field tables and readers (run_section.cppm).
module;
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>
module sgmcmc.run_section;
import sgmcmc.error;

namespace sgmcmc {
namespace {

/// `field`, read only when one of `keys` is set in the section (the keys the header describes).
template <class P>
Field<P> when_set(Field<P> field, std::vector<std::string> keys) {
  field.read = [keys = std::move(keys), read = std::move(field.read)](SectionReader section, P& p) {
    if (std::ranges::any_of(keys, [&](const std::string& key) { return section.contains(key); })) read(section, p);
  };
  return field;
}

template <class P>
Field<P> when_set(Field<P> field) {
  std::string key = field.shown.key;
  return when_set(std::move(field), {std::move(key)});
}

/// ChainSchedule's keys, in the order given (a subset, so that RunSchedule can interleave them).
FieldTable<RunSchedule> chain_keys(FieldTable<ChainSchedule> table) {
  return nested<RunSchedule>(&RunSchedule::chain, table);
}

Field<ChainSchedule> thin_field() {
  auto field = integer_field("thin", &ChainSchedule::thin, "record every thin-th iteration", at_least(1));
  field.problem = [at_least_one = field.problem](const ChainSchedule& s) -> std::string {
    if (std::string problem = at_least_one(s); !problem.empty()) return problem;
    if (s.thin <= s.iterations) return "";
    return fmt::format("run.thin = {} is more than run.iterations = {}, so the chain would record no draws", s.thin,
                       s.iterations);
  };
  return field;
}

const Constraint divergence_factor{"0 or > 1",
                                   "0 (only a θ that is not finite stops a chain) or a factor above 1 of the start's scale",
                                   [](double value) { return value == 0.0 || value > 1.0; }};

const Constraint share{"in (0, 1]", "the share of each cycle whose draws are kept, 0 < f <= 1",
                       [](double value) { return value > 0.0 && value <= 1.0; }};

/// collect_fraction: read whenever collect is (its value is in the manifest of a cycle_end run), and
/// refused when set beside collect = "all", which keeps every draw.
Field<RunSchedule> collect_fraction_field() {
  auto field = number_field("collect_fraction", &RunSchedule::collect_fraction,
                            "with collect = cycle_end, the last share of each cycle whose draws are kept", share);
  field.read = [read = field.read](SectionReader run, RunSchedule& s) {
    read(run, s);
    if (!s.collect_cycle_end && run.contains("collect_fraction"))
      throw Error(fmt::format("{}: only read with run.collect = \"cycle_end\" (run.collect is \"all\")",
                              run.describe("collect_fraction")));
  };
  return when_set(std::move(field), {"collect", "collect_fraction"});
}

/// data_seed: its default is the seed read before it.
Field<RunSchedule> data_seed_field() {
  const Constraint non_negative = at_least(0);
  return {{"data_seed", "`seed`", non_negative.summary,
           "the model's simulated data and held-out split; fix it to sample one data set with several chain seeds"},
          [non_negative](SectionReader run, RunSchedule& s) {
            const std::int64_t value = run.integer("data_seed", static_cast<std::int64_t>(s.seed));
            if (const std::string problem = violation(non_negative, static_cast<double>(value)); !problem.empty())
              throw Error(fmt::format("{}: {}", run.describe("data_seed"), problem));
            s.data_seed = static_cast<std::uint64_t>(value);
          }};
}

/// The cycle of a cycle_end collection, from the integrator's cyclical schedule.
Collection collection_of(const RunSchedule& schedule, SectionReader run, SectionReader integrator) {
  if (!schedule.collect_cycle_end) return {};
  const auto parameters = ScheduleParameters::from_settings(integrator);
  if (parameters.schedule != ScheduleKind::cyclical)
    throw Error(fmt::format("{}: \"cycle_end\" keeps the draws at the end of each cycle of a cyclical step size "
                            "(Zhang et al. 2020), so it needs integrator.schedule = \"cyclical\"",
                            run.describe("collect")));
  const auto length = parameters.cycle_length;
  const auto kept = static_cast<std::uint64_t>(std::llround(schedule.collect_fraction * static_cast<double>(length)));
  return {.cycle_length = length, .sampling_iterations = std::clamp<std::uint64_t>(kept, 1, length)};
}

}  // namespace

FieldTable<RunSchedule> run_fields() {
  return concat<RunSchedule>({
      chain_keys({integer_field("warmup", &ChainSchedule::warmup, "iterations run first and not recorded as draws", at_least(0)),
                  integer_field("iterations", &ChainSchedule::iterations, "iterations after the warmup, recorded", at_least(1)),
                  thin_field()}),
      {when_set(choice_field("collect", &RunSchedule::collect_cycle_end, {{"all", false}, {"cycle_end", true}},
                             "cycle_end: with a cyclical schedule keep only the draws of each cycle's last collect_fraction")),
       collect_fraction_field(),
       integer_field("chains", &RunSchedule::chains,
                     "chains, each its own thread; refused when that many times what building chain 1 took exceeds "
                     "the memory budget",
                     at_least(1)),
       integer_field("seed", &RunSchedule::seed, "the chains' random streams", at_least(0)), data_seed_field()},
      chain_keys(
          {integer_field("eval_every", &ChainSchedule::eval_every,
                         "metrics every this many iterations, warmup included; running averages start again when the "
                         "warmup ends",
                         at_least(1)),
           flag_field("lp", &ChainSchedule::compute_lp, "lp__ = log π(θ) with a full pass per recorded draw (else 0)"),
           when_set(number_field("divergence_threshold", &ChainSchedule::divergence_threshold,
                                 "a chain stops as diverged when some θ_j exceeds, in absolute value, this many times the "
                                 "largest at its start (at least 1); 0: only a θ that is not finite stops it",
                                 divergence_factor)),
           when_set(flag_field("temperatures", &ChainSchedule::temperatures,
                               "add kinetic_temperature and configurational_temperature to metrics.csv")),
           when_set(integer_field("checkpoint_every", &ChainSchedule::checkpoint_every,
                                  "a checkpoint every this many iterations and at the last (0: none)", at_least(0))),
           when_set(choice_field("chain_precision", &ChainSchedule::float_precision, {{"double", false}, {"float", true}},
                                 "float: θ, the gradient and each step's per-coordinate work in float, for a model "
                                 "with the float-gradient capability (sgld, mass 1, minibatch or exact, no MH)"))}),
      {when_set(flag_field("data_parallel", &RunSchedule::data_parallel,
                           "true under mpirun -n P: one chain whose data terms are split across the P ranks (refused "
                           "without an MPI launcher, and by sweep, sbc and tune)"))},
  });
}

FieldTable<StartChoice> start_fields() {
  Field<StartChoice> init{{"init", "unset", "", "the model's initial point unless set: a run folder or a CSV file of draws"},
                          [](SectionReader run, StartChoice& c) { c.init = run.text("init", c.init); }};
  // init_draw is read (and recorded) only when a start is one draw, and refused beside init_mean.
  auto draw = integer_field("init_draw", &StartChoice::draw, "the draw to start from, 1 = the first, 0 = the last",
                            at_least(0));
  draw.read = [read = draw.read](SectionReader run, StartChoice& c) {
    if (!c.mean) return read(run, c);
    if (run.contains("init_draw"))
      throw Error(fmt::format("{}: a start is one draw or the mean of all (run.init_mean = true); remove one of the two",
                              run.describe("init_draw")));
  };
  return {init, when_set(flag_field("init_mean", &StartChoice::mean, "start from the mean of every draw instead")),
          std::move(draw)};
}

std::vector<KeyDoc> run_key_docs() {
  auto docs = key_docs(run_fields());
  for (auto& doc : key_docs(start_fields())) docs.push_back(std::move(doc));
  return docs;
}

RunSchedule read_run_schedule(SectionReader run, SectionReader integrator) {
  RunSchedule schedule = read_fields(run_fields(), run);
  schedule.chain.collect = collection_of(schedule, run, integrator);
  if (schedule.chain.recorded_draws() == 0)
    throw Error(fmt::format("{}: no iteration after the warmup falls in a cycle's kept end with this thin "
                            "and cycle length, so the chain would record no draws",
                            run.describe("collect")));
  return schedule;
}

std::optional<StartChoice> read_start_choice(SectionReader run) {
  if (!run.contains("init")) return std::nullopt;
  return read_fields(start_fields(), run);
}

}  // namespace sgmcmc
