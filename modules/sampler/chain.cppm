// The chain loop: Model × Estimator × Integrator × Corrector composed into one Markov chain,
// with the warmup's adaptation of the integrator (Adaptation), cost accounting, thinning,
// recording and metric evaluation.
module;
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <time.h>
#include <fmt/format.h>
export module sgmcmc.chain;
export import sgmcmc.sampler;
export import sgmcmc.schedules;  // ChainSchedule::collect
export import sgmcmc.adaptation;
import sgmcmc.error;

export namespace sgmcmc {

/// Wall-clock and CPU seconds side by side. Chains, and a sweep's cells, that run at once share
/// the machine's cores and memory bandwidth, which stretches their wall seconds; their CPU
/// seconds stay comparable.
struct Seconds {
  double wall = 0.0, cpu = 0.0;
  friend Seconds operator+(Seconds a, Seconds b) { return {a.wall + b.wall, a.cpu + b.cpu}; }
  friend Seconds operator-(Seconds a, Seconds b) { return {a.wall - b.wall, a.cpu - b.cpu}; }
  Seconds& operator+=(Seconds b) { return *this = *this + b; }
};

/// The steady clock and the calling thread's CPU clock. A chain runs in one thread, so its CPU
/// seconds are that thread's (work a library hands to threads of its own would not be counted).
inline Seconds clock_now() {
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  return {std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(),
          static_cast<double>(cpu.tv_sec) + 1e-9 * static_cast<double>(cpu.tv_nsec)};
}

struct ChainSchedule {
  std::uint64_t warmup = 0;       // first iterations, run but not recorded as draws (burn-in)
  std::uint64_t iterations = 1000;  // recorded iterations after the warmup
  std::uint64_t thin = 1;         // record every thin-th iteration
  Collection collect = {};        // of those, the ones kept (cSG-MCMC's sampling stages; all by default)
  /// The draws a chain of this schedule records.
  std::uint64_t recorded_draws() const;
  std::uint64_t eval_every = 10;  // evaluate the model's metrics every eval_every-th iteration
  /// lp__ = -U(θ) with a full pass per recorded draw; else 0, as CmdStan's variational output
  /// writes it (a NaN stops R's bayesplot and posterior on the whole file), which the chain
  /// files' comment line and the readers of runners/python mark as not computed.
  bool compute_lp = false;
  /// Adds the temperatures to every metric row (run.temperatures): kinetic_temperature pᵀM⁻¹p/d
  /// for integrators with a momentum, and configurational_temperature θ·∇U(θ)/d with the
  /// full-data gradient (one full pass per row, not counted in the cost or the seconds); both are
  /// T in expectation for an exact sampler (modules/README.md, "Temperatures").
  bool temperatures = false;
  std::uint64_t checkpoint_every = 0;  // hand the observer a checkpoint every this many iterations
                                       // and at the last one (0: never)
  std::uint64_t stop_after = 0;        // stop after this iteration's checkpoint (0: run to the end)
  /// Polled after every iteration that ends a block: once it is set, the chain takes a checkpoint
  /// there (checkpoint_every or not) and stops, ChainResult::interrupted (Ctrl-C in `sgmcmc run`).
  const std::atomic<bool>* stop_requested = nullptr;
  /// A chain stops as diverged when θ is not finite at a block's end, or when some |θ_j| there
  /// exceeds divergence_threshold × max(1, max_j |θ_j| where sampling started) (run.divergence_threshold;
  /// 0 keeps only the finiteness check). A runaway chain can stay finite for a long time (|θ| ≈ 1e78
  /// with a step past the stability limit, an adaptation feeding back on itself) while nothing it
  /// draws means anything; 1e10 times the start's scale is far beyond any posterior reached from it.
  double divergence_threshold = 1e10;
  /// run.chain_precision = "float": θ, the gradient and the per-coordinate work of each step in
  /// float (FloatChainState), for models that store float (capability float-gradient); draws,
  /// metrics and checkpoints see θ in double, exactly. Only sgld (M = 1) with the minibatch or
  /// exact estimator and no MH corrector; check() refuses the rest, naming the key.
  bool float_precision = false;
};

struct Draw {
  std::uint64_t iteration;
  double lp;
  double step_size;
  const Decision& decision;  // of the last corrector block
  std::span<const double> theta;
  const Workspace& workspace;     // the model's state (hyperparameters) with which θ was drawn
  std::uint64_t target_changes;  // how often the model's after_step has changed the target so far,
  std::uint64_t data_changes;    // and how often its data terms among them (TargetChange::data)
};

struct MetricsRow {
  std::uint64_t iteration;
  double seconds;      // sampling wall-clock since the chain started (estimator preparation included,
                       // metrics, lp__ and draw output excluded)
  double cpu_seconds;  // the same span in the chain thread's CPU time
  Cost cost;
  std::span<const double> values;  // in the order of Chain::metric_names()
};

inline constexpr const char* kinetic_temperature_column = "kinetic_temperature";
inline constexpr const char* configurational_temperature_column = "configurational_temperature";
/// With an MH corrector, every metric row ends with the fraction of MH blocks accepted so far
/// (the warmup's included) and since the previous row (so the rate's course over the run shows
/// without recording every block's draw).
inline constexpr const char* accept_rate_column = "accept_rate";
inline constexpr const char* accept_rate_window_column = "accept_rate_window";

/// Where a chain's output goes (the runner writes files; tests keep vectors).
class ChainObserver {
public:
  virtual ~ChainObserver() = default;
  virtual void on_draw(const Draw& draw) = 0;
  virtual void on_metrics(const MetricsRow& row) = 0;
  /// `state` holds the chain's whole state after `iteration` (Chain::save_state), taken after
  /// that iteration's draw and metrics were handed over; the observer adds what it needs to
  /// continue its own output and stores it. Called as ChainSchedule::checkpoint_every says.
  virtual void on_checkpoint(std::uint64_t /*iteration*/, StateWriter& /*state*/) {}
};

struct ChainResult {
  bool diverged = false;
  bool stopped = false;            // at ChainSchedule::stop_after or stop_requested, with a checkpoint there
  bool interrupted = false;        // at stop_requested
  std::string message;             // why the chain stopped early
  std::uint64_t iterations = 0;    // completed
  Cost cost;
  double seconds = 0.0;            // sampling seconds, as in MetricsRow
  double cpu_seconds = 0.0;        // and their CPU seconds
  double warmup_seconds = 0.0;     // of the wall seconds, those of the warmup iterations
  std::uint64_t blocks = 0;        // corrector blocks completed after the warmup, and accepted ones
  std::uint64_t accepted_blocks = 0;
  std::uint64_t non_finite_proposals = 0;  // rejected because ΔH̃ or the potential was NaN/Inf
  double mean_accept_stat = 0.0;
  std::vector<std::pair<std::string, double>> estimator_choices;  // Estimator::choices()
  std::vector<double> adapted_mass;  // adapt_mass: the mass the warmup left; mass = "fisher": the one computed; else empty
  std::optional<double> adapted_step_size;  // integrator.adapt_step_size: the step frozen after the warmup
};

class Chain {
public:
  /// `rng` is this chain's own stream (sgmcmc::chain_stream): nothing else draws from it.
  Chain(std::shared_ptr<const Model> model, std::unique_ptr<Estimator> estimator,
        std::unique_ptr<Integrator> integrator, std::unique_ptr<Corrector> corrector, Rng rng);

  /// Runs the whole schedule, or stops at the first non-finite θ at a block's end with `diverged`
  /// set; what the observer received before then stays valid. Draws and metrics are taken at
  /// block ends only (the corrected states), so thin and eval_every must be multiples of the
  /// corrector's block length. `progress` (optional) counts iterations done. After
  /// restore_state it continues from the checkpoint's iteration instead of starting.
  ChainResult run(const ChainSchedule& schedule, ChainObserver& observer,
                  std::atomic<std::uint64_t>* progress = nullptr);

  /// Everything the chain needs to continue bit for bit: θ, momentum, kept gradient, iteration,
  /// random stream, cost, acceptance tallies, sampling seconds, and the state of the estimator,
  /// integrator, adaptation, corrector and model workspace.
  void save_state(StateWriter& out) const;
  /// Reads what save_state wrote into a chain built from the same configuration; run() then
  /// continues after the saved iteration (the start point, integrator draw and estimator
  /// preparation are not repeated).
  void restore_state(StateReader& in);

  /// Where run() starts instead of the model's initial point (run.init: a draw of an earlier run,
  /// or values a user wrote). The runner checks it (length, finite, in the model's support).
  void start_at(std::vector<double> theta);

  /// Throws if `schedule` cannot run on this chain (run() checks too; runners call it before
  /// they create any output).
  void check(const ChainSchedule& schedule) const;

  /// The columns of the metric rows under `schedule`: the model's metrics (Model::metric_names()),
  /// then, with schedule.temperatures, kinetic_temperature (only for an integrator with a
  /// momentum) and configurational_temperature, then, with a corrector that tests acceptance,
  /// accept_rate and accept_rate_window.
  std::vector<std::string> metric_names(const ChainSchedule& schedule) const;

  const ChainState& state() const { return state_; }
  /// The block length and whether draws carry an MH decision are the corrector's.
  const Corrector& corrector() const { return *corrector_; }
  const Integrator& integrator() const { return *integrator_; }
  /// What the warmup adapts (the integrator's adapt_mass, adapt_step_size) and its state.
  const Adaptation& adaptation() const { return adaptation_; }

private:
  double log_density(ChainContext& context);
  void model_step(std::uint64_t iteration, ChainContext& context);
  void start(ChainContext& context);
  /// The temperatures of metric_names() at the current state into `out`.
  void evaluate_temperatures(std::span<double> out);
  /// The acceptance columns of metric_names() into `out`; starts the next window.
  void evaluate_acceptance(std::span<double> out);
  /// Counts a corrector block's decision (the warmup's included) for the acceptance columns.
  void count_block(const Decision& decision);
  /// Why the chain must stop at the end of a block (θ not finite, or a runaway beyond
  /// schedule.divergence_threshold), or an empty string.
  std::string divergence(const ChainSchedule& schedule) const;
  /// The float chain: why it cannot run this chain (empty: it can); its state from θ in double
  /// (rounded to float, and θ set to the rounded values); θ in double from it.
  std::string float_refusal() const;
  void enter_float(const ChainSchedule& schedule);
  void copy_float_theta();
  /// The chain's own fields of a checkpoint, in order, for save_state and restore_state alike
  /// (SavingArchive, sgmcmc.state).
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive);

  /// What run() accumulates and a checkpoint must carry across a restart.
  struct Tally {
    std::uint64_t blocks = 0, accepted_blocks = 0, non_finite_proposals = 0;
    double accept_sum = 0.0;
    Seconds seconds;  // sampling seconds up to the last checkpoint
    double warmup_seconds = 0.0;  // sampling (wall) seconds at the end of the warmup
    std::uint64_t target_changes = 0;  // after_step's changes of the target (prior or data)
    std::uint64_t data_changes = 0;    // of the data terms among them
    double start_scale = 1.0;          // max(1, max_j |θ_j|) where sampling started (divergence)
    std::uint64_t decided_blocks = 0, decided_accepted = 0;  // every MH block so far, warmup included
    std::uint64_t window_blocks = 0, window_accepted = 0;    // since the previous metric row
  };

  // The model is declared first so that everything it made (the workspace) is destroyed
  // before it, and it before its plugin library (the model's deleter holds the library).
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Workspace> workspace_;
  std::unique_ptr<Estimator> estimator_;
  std::unique_ptr<Integrator> integrator_;
  std::unique_ptr<Corrector> corrector_;
  Adaptation adaptation_;  // of *integrator_, declared after it
  Rng rng_;
  Cost cost_;
  ChainState state_;
  FloatChainState floats_;  // run.chain_precision = "float" only
  Capabilities capabilities_;
  std::vector<std::size_t> all_items_;  // for lp__ and the configurational temperature, when asked for
  std::vector<double> full_gradient_;   // scratch: ∇U(θ) for the configurational temperature
  Tally tally_;
  bool restored_ = false;  // restore_state ran: run() continues instead of starting
  std::optional<std::vector<double>> given_start_;  // start_at(): replaces the model's initial point
};

}  // namespace sgmcmc
