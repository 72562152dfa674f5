// The chain loop's definitions (its interface, sgmcmc.chain, is modules/sampler/chain.cppm).
module;
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <time.h>
#include <fmt/format.h>
module sgmcmc.chain;

namespace sgmcmc {

Chain::Chain(std::shared_ptr<const Model> model, std::unique_ptr<Estimator> estimator,
             std::unique_ptr<Integrator> integrator, std::unique_ptr<Corrector> corrector, Rng rng)
    : model_(std::move(model)), workspace_(model_->make_workspace()), estimator_(std::move(estimator)),
      integrator_(std::move(integrator)), corrector_(std::move(corrector)),
      adaptation_(*integrator_, corrector_->tests_acceptance()), rng_(rng),
      capabilities_(model_->capabilities()) {
  state_.reflect_at_zero = capabilities_.positive_parameters;
}

std::uint64_t ChainSchedule::recorded_draws() const {
  if (collect.cycle_length == 0) return iterations / thin;
  std::uint64_t draws = 0;
  for (std::uint64_t k = warmup + thin; k <= warmup + iterations; k += thin) draws += collect.keeps(k) ? 1 : 0;
  return draws;
}

void Chain::check(const ChainSchedule& schedule) const {
  if (schedule.compute_lp && !capabilities_.exact_log_likelihood)
    throw Error("run.lp = true needs a model with the 'exact-log-likelihood' capability");
  const std::size_t block_length = corrector_->block_length();
  for (const auto& [key, every] : {std::pair{"thin", schedule.thin}, std::pair{"eval_every", schedule.eval_every},
                                   std::pair{"warmup", schedule.warmup}})
    if (every % block_length != 0)
      throw Error(fmt::format("run.{} = {} must be a multiple of corrector.every = {}: draws and metrics are the "
                              "corrected states at the ends of blocks",
                              key, every, block_length));
  if (adaptation_.settings().step.adapt && schedule.warmup == 0)
    throw Error("integrator.adapt_step_size = true needs a warmup (run.warmup > 0): the step size is adapted during "
                "the warmup and frozen at its end, and without one the whole run would be an adaptive, not a fixed, "
                "kernel");
  if (const auto refusal = integrator_->warmup_refusal(schedule.warmup); !refusal.empty()) throw Error(refusal);
  if (schedule.temperatures && capabilities_.latent_gibbs_step)
    throw Error("run.temperatures = true needs a model whose full-data gradient is a function of θ; this one "
                "Gibbs-samples latent variables inside its gradient (latent-gibbs-step), so θ·∇U would draw from the "
                "chain's random stream and be random itself");
  if (schedule.checkpoint_every % block_length != 0)
    throw Error(fmt::format("run.checkpoint_every = {} must be a multiple of corrector.every = {}: a checkpoint is "
                            "taken at the end of a block",
                            schedule.checkpoint_every, block_length));
  if (schedule.float_precision)
    if (const auto why = float_refusal(); !why.empty())
      throw Error(fmt::format("run.chain_precision = \"float\" cannot run this chain: {}", why));
  if (schedule.stop_after != 0 &&
      (schedule.checkpoint_every == 0 || schedule.stop_after % schedule.checkpoint_every != 0 ||
       schedule.stop_after >= schedule.warmup + schedule.iterations))
    throw Error(fmt::format("stopping after iteration {} needs a checkpoint there before the last iteration {}: a "
                            "multiple of run.checkpoint_every = {} (0 is off)",
                            schedule.stop_after, schedule.warmup + schedule.iterations, schedule.checkpoint_every));
}

std::vector<std::string> Chain::metric_names(const ChainSchedule& schedule) const {
  auto names = model_->metric_names();
  if (schedule.temperatures) {
    // Whether there is a value, not the value, which before the chain starts is that of no momentum.
    if (integrator_->kinetic_temperature(state_)) names.push_back(kinetic_temperature_column);
    names.push_back(configurational_temperature_column);
  }
  if (corrector_->tests_acceptance()) {
    names.push_back(accept_rate_column);
    names.push_back(accept_rate_window_column);
  }
  return names;
}

void Chain::count_block(const Decision& decision) {
  ++tally_.decided_blocks;
  ++tally_.window_blocks;
  tally_.decided_accepted += decision.accepted ? 1 : 0;
  tally_.window_accepted += decision.accepted ? 1 : 0;
}

/// NaN for a window without a block (eval_every is a multiple of the block length, so only a
/// row at the start could have none).
void Chain::evaluate_acceptance(std::span<double> out) {
  const auto rate = [](std::uint64_t accepted, std::uint64_t blocks) {
    return blocks ? static_cast<double>(accepted) / static_cast<double>(blocks) : std::nan("");
  };
  out[0] = rate(tally_.decided_accepted, tally_.decided_blocks);
  out[1] = rate(tally_.window_accepted, tally_.window_blocks);
  tally_.window_blocks = tally_.window_accepted = 0;
}

std::string Chain::divergence(const ChainSchedule& schedule) const {
  // At every block's end, one pass over θ that the compiler vectorises (no early exit, no index):
  // !(|θ_j| <= bound) holds for a NaN, an Inf and a runaway coordinate alike. Only a chain that
  // has diverged pays for the second pass below, which finds what to say.
  const auto& theta = state_.theta;
  // At most the largest double, so that an Inf is beyond it even when the product overflows.
  const double largest_finite = std::numeric_limits<double>::max();
  const double bound = schedule.divergence_threshold == 0.0
                           ? largest_finite
                           : std::min(schedule.divergence_threshold * tally_.start_scale, largest_finite);
  bool beyond = false;
  for (const double value : theta) beyond |= !(std::abs(value) <= bound);
  if (!beyond) return {};
  std::size_t largest = 0;
  for (std::size_t j = 0; j < theta.size(); ++j) {
    if (!std::isfinite(theta[j])) return "θ is no longer finite (NaN or Inf)";
    if (std::abs(theta[j]) > std::abs(theta[largest])) largest = j;
  }
  if (schedule.divergence_threshold == 0.0 || std::abs(theta[largest]) <= bound) return {};
  return fmt::format("|θ_{}| = {:.3g} is beyond run.divergence_threshold × the start's scale = {:.3g} × {:.3g}, a "
                     "runaway chain (raise run.divergence_threshold if such values are plausible)",
                     largest + 1, std::abs(theta[largest]), schedule.divergence_threshold, tally_.start_scale);
}

std::string Chain::float_refusal() const {
  if (!capabilities_.float_gradient)
    return "the model has no float gradient (capability float-gradient: mlp with model.storage = \"float\" and no "
           "sampled noise sd)";
  if (corrector_->tests_acceptance())
    return "corrector: an MH test needs U(θ) and its energy error to double precision; use corrector.name = \"none\"";
  if (const auto why = integrator_->float_refusal(); !why.empty()) return "integrator: " + why;
  if (const auto why = estimator_->float_refusal(); !why.empty()) return "estimator: " + why;
  return {};
}

/// The bound is divergence()'s, rounded up to a float (never below the double bound, so the float
/// check flags no coordinate that divergence() would pass); beyond the largest float it is that.
void Chain::enter_float(const ChainSchedule& schedule) {
  floats_.theta.assign(state_.theta.begin(), state_.theta.end());
  floats_.gradient.assign(state_.theta.size(), 0.0f);
  copy_float_theta();
  const double bound = schedule.divergence_threshold == 0.0 ? std::numeric_limits<double>::max()
                                                            : schedule.divergence_threshold * tally_.start_scale;
  const float largest = std::numeric_limits<float>::max();
  floats_.bound = bound >= largest ? largest : static_cast<float>(bound);
  if (floats_.bound < bound) floats_.bound = std::nextafter(floats_.bound, largest);
  floats_.beyond = false;
}

void Chain::copy_float_theta() { std::copy(floats_.theta.begin(), floats_.theta.end(), state_.theta.begin()); }

/// Configurational temperature: for π ∝ exp(-U/T) with U growing at infinity (at the boundary
/// θ_j = 0 of positive parameters the boundary term θ_j π vanishes with θ_j), integration by parts
/// gives E_π[θ_j ∂_j U(θ)] = T for each j (the configurational form of equipartition; Leimkuhler &
/// Matthews 2015, "Molecular Dynamics", §6.1), so θ·∇U/d has mean T. It is evaluated with the
/// full-data gradient, exact for the row's θ. The estimator's gradient ĝ would be noisier, θ·ĝ/d
/// unbiased for θ·∇U/d only as far as ĝ is for ∇U (minibatch, cv, svrg and saga are, given the
/// chain's past; a Gibbs-estimated gradient of latent variables need not be), and drawing its
/// minibatch would move the chain's random stream, so the chain would depend on eval_every. The
/// full gradient needs no random numbers (check() refuses latent-gibbs-step models): `unused` is a
/// copy. Kinetic temperature: E[pᵀM⁻¹p]/d = T for p ~ N(0, TM), the momentum's law under the
/// joint invariant law π(θ) N(p; 0, TM) of an exact sampler.
void Chain::evaluate_temperatures(std::span<double> out) {
  std::size_t k = 0;
  if (const auto kinetic = integrator_->kinetic_temperature(state_)) out[k++] = *kinetic;
  if (all_items_.empty()) all_items_ = every_item(*model_);
  full_gradient_.assign(state_.theta.size(), 0.0);
  Rng unused = rng_;
  add_gradient(*model_, state_.theta, all_items_, full_gradient_, *workspace_, unused);
  double sum = 0.0;
  for (std::size_t j = 0; j < state_.theta.size(); ++j) sum += state_.theta[j] * full_gradient_[j];
  out[k] = sum / static_cast<double>(state_.theta.size());
}

/// The chain's checkpoint after its dimension, listed once for saving and restoring (SavingArchive):
/// its own fields, then its random stream, components and model workspace.
template <class Self, class Archive>
void Chain::saved_fields(Self& self, Archive& archive) {
  auto& state = self.state_;
  auto& tally = self.tally_;
  archive(state.iteration, state.theta, state.momentum, state.gradient, state.gradient_valid, state.energy_error);
  archive(self.cost_.item_gradients, self.cost_.full_passes);
  archive(tally.blocks, tally.accepted_blocks, tally.non_finite_proposals, tally.accept_sum, tally.seconds.wall,
          tally.seconds.cpu, tally.warmup_seconds, tally.target_changes, tally.data_changes, tally.start_scale);
  archive(tally.decided_blocks, tally.decided_accepted, tally.window_blocks, tally.window_accepted);
  archive.nested(self.rng_);
  archive.nested(*self.integrator_);
  archive.nested(self.adaptation_);
  archive.nested(*self.estimator_);
  archive.nested(*self.corrector_);
  archive.section("model workspace");
  archive.nested(*self.workspace_);
}

void Chain::save_state(StateWriter& out) const {
  out.section("chain");
  out.count(model_->dimension());
  SavingArchive archive(out);
  saved_fields(*this, archive);
}

void Chain::restore_state(StateReader& in) {
  in.section("chain");
  const std::size_t dimension = model_->dimension();
  if (const auto saved = in.count(); saved != dimension)
    throw Error(fmt::format("{}: the checkpoint is of a model with {} parameters, this run's has {}", in.origin(), saved,
                            dimension));
  // The integrator sizes its buffers (the mass) and the state, which the saved vectors must fit;
  // its momentum draw is discarded.
  Rng discarded = rng_;
  integrator_->initialise(state_, dimension, discarded);
  RestoringArchive archive(in);
  saved_fields(*this, archive);
  restored_ = true;
}

void Chain::start_at(std::vector<double> theta) {
  if (theta.size() != model_->dimension())
    throw Error(fmt::format("a start point of {} values for a model with {} parameters", theta.size(), model_->dimension()));
  given_start_ = std::move(theta);
}

/// θ sized before the model fills it (initialise keeps the values): a model's own starting
/// point (pmf's random factors; zero is a saddle there) must not be lost. A given start replaces
/// it, and the model then draws nothing from the chain's stream.
void Chain::start(ChainContext& context) {
  tally_ = {};
  state_.theta.assign(model_->dimension(), 0.0);
  if (given_start_)
    std::copy(given_start_->begin(), given_start_->end(), state_.theta.begin());
  else
    model_->initial_point(state_.theta, rng_);
  integrator_->initialise(state_, model_->dimension(), rng_);
  // The scale a runaway is measured against: the start as given or drawn, before the estimator's
  // preparation, which can run away itself (cv's centring at a far too large SGD step).
  for (const double x : state_.theta) tally_.start_scale = std::max(tally_.start_scale, std::abs(x));
  estimator_->prepare(state_.theta, context);
  integrator_->prepare(state_, context);
}

double Chain::log_density(ChainContext& context) {
  if (all_items_.empty()) all_items_ = every_item(*model_);
  return -potential(*model_, state_.theta, all_items_, context.workspace);
}

/// The model's hook (Gibbs steps of hyperparameters). It runs after the corrector's decision, so
/// that an MH test compares the potentials of one target; when it changed the target, everything
/// cached of the old one is dropped: the integrator's gradient at θ, the MH corrector's U(θ_0)
/// and, when the data terms changed, the estimators' sums of ∇f_i (centre, snapshot, table).
void Chain::model_step(std::uint64_t iteration, ChainContext& context) {
  const TargetChange change =
      model_->after_step(iteration, state_.theta, *workspace_, context.rng, AllItems(model_->num_items()));
  if (change == TargetChange::none) return;
  ++tally_.target_changes;
  state_.gradient_valid = false;
  corrector_->target_changed();
  if (change != TargetChange::data) return;
  ++tally_.data_changes;
  estimator_->data_terms_changed(state_.theta, context);
}

namespace {

/// A chain's sampling seconds on both clocks: the span since its start, less the bookkeeping. The
/// thread's CPU clock (clock_now()) is a system call, some 3.6 µs against 0.15 µs for the steady
/// clock's vDSO read (measured under load); read around each recorded draw it took 9 % of a cheap
/// chain's time (the matrix's mlp cells, tests/README.md "Suite time"). So a draw written without
/// lp__ is timed by the steady clock alone, and its CPU seconds are taken at the next reading of
/// both clocks, as its wall seconds times the share of CPU in the wall seconds since the reading
/// before (the thread is descheduled as often while it writes as while it samples). Exact on a
/// core of its own; the CPU seconds still only grow and stay below the wall seconds.
class SamplingClock {
 public:
  explicit SamplingClock(Seconds earlier) : earlier_(earlier), begin_(clock_now()), last_(begin_) {}

  /// Reads both clocks (a system call).
  Seconds read() {
    const Seconds now = clock_now(), span = now - last_;
    if (draws_wall_ > 0.0 && span.wall > 0.0) bookkeeping_.cpu += span.cpu * std::min(1.0, draws_wall_ / span.wall);
    draws_wall_ = 0.0;
    return last_ = now;
  }
  /// The sampling seconds at the last read().
  Seconds sampling() const { return earlier_ + (last_ - begin_) - bookkeeping_; }
  /// Leaves out the span since `start`, a read() before this one: both clocks.
  void exclude_since(Seconds start) { bookkeeping_ += read() - start; }

  /// The steady clock alone, for a draw's bookkeeping.
  static double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
  /// Leaves out a draw's bookkeeping timed by wall(): its CPU seconds at the next read().
  void exclude_draw(double wall_seconds) {
    bookkeeping_.wall += wall_seconds;
    draws_wall_ += wall_seconds;
  }

 private:
  Seconds earlier_;  // a resumed chain's sampling seconds of the runs before
  Seconds begin_, last_;
  Seconds bookkeeping_;
  double draws_wall_ = 0.0;  // the draws' bookkeeping since the last read(), in wall seconds
};

}  // namespace

ChainResult Chain::run(const ChainSchedule& schedule, ChainObserver& observer,
                       std::atomic<std::uint64_t>* progress) {
  // Seconds of sampling work only: held-out metrics, lp__ and writing draws are bookkeeping whose
  // cost depends on how often the user asks for them, so they are timed and left out; curves
  // against seconds then compare samplers, not evaluation schedules.
  // A resumed chain adds the sampling seconds of the runs before (what its checkpoint saved).
  SamplingClock clock(restored_ ? tally_.seconds : Seconds{});

  check(schedule);
  const std::size_t block_length = corrector_->block_length();
  ChainContext context{*model_, *workspace_, rng_, cost_};
  context.stop_requested = schedule.stop_requested;
  ChainResult result;
  std::vector<double> metric_values(metric_names(schedule).size());
  const std::size_t model_metrics = model_->metric_names().size();
  Decision decision;

  if (!restored_) {
    try {
      start(context);
    } catch (const StopRequested&) {  // in cv's centring phase: no state worth a checkpoint yet
      result.stopped = result.interrupted = true;
      result.message = "interrupted before its first iteration (in the estimator's centring phase); a resumed run "
                       "starts this chain afresh";
      result.cost = cost_;
      return result;
    }
  }
  result.iterations = state_.iteration;
  if (progress) progress->fetch_add(state_.iteration, std::memory_order_relaxed);
  if (const auto why = divergence(schedule); !why.empty() && state_.iteration == 0) {
    result.diverged = true;
    result.message = fmt::format("diverged before its first iteration, in the estimator's preparation (cv's "
                                 "centring): {}; try a smaller estimator.sgd_step_size",
                                 why);
  }
  const std::uint64_t last = result.diverged ? 0 : schedule.warmup + schedule.iterations;
  const bool in_float = schedule.float_precision;
  if (in_float) enter_float(schedule);
  for (std::uint64_t iteration = state_.iteration + 1; iteration <= last; ++iteration) {
    const std::size_t position_in_block = (iteration - 1) % block_length;
    const bool ends_block = position_in_block + 1 == block_length;
    if (position_in_block == 0) corrector_->begin_block(state_, context);
    state_.iteration = iteration;
    context.iteration = iteration;
    Estimator* endpoint = ends_block ? corrector_->endpoint_estimator() : nullptr;
    if (in_float)
      integrator_->step_float(state_, floats_, *estimator_, context);
    else
      integrator_->step(state_, endpoint ? *endpoint : *estimator_, context);
    if (ends_block) {
      decision = corrector_->end_block(state_, context);
      state_.iteration = iteration;  // a rejection restored the block's first state, iteration included
      if (!in_float) model_step(iteration, context);  // a float-gradient model's after_step does nothing
      tally_.non_finite_proposals += decision.non_finite ? 1 : 0;
      if (corrector_->tests_acceptance()) count_block(decision);
      if (iteration > schedule.warmup) {  // acceptance statistics of the recorded part
        ++tally_.blocks;
        tally_.accepted_blocks += decision.accepted ? 1 : 0;
        tally_.accept_sum += decision.accept_stat;
      }
      if (in_float && floats_.beyond) copy_float_theta();  // else divergence() has nothing to find
      if (const auto why = in_float && !floats_.beyond ? std::string() : divergence(schedule); !why.empty()) {
        result.diverged = true;
        result.message = fmt::format("diverged at iteration {}: {}; try a smaller integrator.step_size", iteration, why);
        break;
      }
      adaptation_.after_block(state_, schedule.warmup, decision);
      if (iteration == schedule.warmup) integrator_->end_warmup();
    }
    result.iterations = iteration;
    if (iteration == schedule.warmup) {
      clock.read();
      tally_.warmup_seconds = clock.sampling().wall;
    }
    const bool records_draw = iteration > schedule.warmup && (iteration - schedule.warmup) % schedule.thin == 0 &&
                              schedule.collect.keeps(iteration);
    const bool evaluates = !metric_values.empty() && iteration % schedule.eval_every == 0;
    if (in_float && (records_draw || evaluates)) copy_float_theta();
    const auto record_draw = [&](double lp) {
      observer.on_draw({iteration, lp, integrator_->step_size(), decision, state_.theta, *workspace_,
                        tally_.target_changes, tally_.data_changes});
    };
    if (records_draw && !evaluates && !schedule.compute_lp) {  // a draw alone: the steady clock alone
      const double start = SamplingClock::wall();
      record_draw(0.0);
      clock.exclude_draw(SamplingClock::wall() - start);
    } else if (records_draw || evaluates) {  // the clock is read only around bookkeeping, not every iteration
      const Seconds bookkeeping_start = clock.read();
      const Seconds sampling = clock.sampling();
      if (records_draw) record_draw(schedule.compute_lp ? log_density(context) : 0.0);
      if (evaluates) {
        if (model_metrics) model_->evaluate_metrics(state_.theta, *workspace_, std::span(metric_values).first(model_metrics));
        if (schedule.temperatures) evaluate_temperatures(std::span(metric_values).subspan(model_metrics));
        if (corrector_->tests_acceptance()) evaluate_acceptance(std::span(metric_values).last(2));
        observer.on_metrics({iteration, sampling.wall, sampling.cpu, cost_, metric_values});
      }
      clock.exclude_since(bookkeeping_start);
    }
    if (iteration == schedule.warmup) workspace_->restart_averages();  // metrics average the sampling phase
    if (progress) progress->fetch_add(1, std::memory_order_relaxed);
    // A checkpoint can only be taken where a block ends (an MH block is decided as a whole).
    const bool interrupted = ends_block && iteration != last && schedule.stop_requested &&
                             schedule.stop_requested->load(std::memory_order_relaxed);
    if (interrupted || (schedule.checkpoint_every && (iteration % schedule.checkpoint_every == 0 || iteration == last))) {
      const Seconds checkpoint_start = clock.read();
      if (in_float) copy_float_theta();
      tally_.seconds = clock.sampling();
      StateWriter state;
      save_state(state);
      observer.on_checkpoint(iteration, state);
      clock.exclude_since(checkpoint_start);
      if (interrupted || iteration == schedule.stop_after) {
        result.stopped = true;
        result.interrupted = interrupted;
        break;
      }
    }
  }
  if (in_float) copy_float_theta();
  result.cost = cost_;
  clock.read();
  const Seconds spent = clock.sampling();
  result.seconds = spent.wall;
  result.cpu_seconds = spent.cpu;
  result.warmup_seconds = state_.iteration >= schedule.warmup ? tally_.warmup_seconds : result.seconds;
  result.blocks = tally_.blocks;
  result.accepted_blocks = tally_.accepted_blocks;
  result.non_finite_proposals = tally_.non_finite_proposals;
  result.mean_accept_stat = tally_.blocks ? tally_.accept_sum / static_cast<double>(tally_.blocks) : 0.0;
  result.estimator_choices = estimator_->choices();
  result.adapted_mass = integrator_->adapted_mass();
  result.adapted_step_size = adaptation_.adapted_step_size();
  return result;
}

}  // namespace sgmcmc
