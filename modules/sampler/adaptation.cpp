// The implementation of sgmcmc.adaptation (adaptation.cppm): the dual averaging of the step, Stan's
// windowed adaptation of the mass, and the Adaptation that drives both on the chain's integrator.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>
#include <fmt/format.h>
module sgmcmc.adaptation;
import sgmcmc.error;

namespace sgmcmc {

// ---- DualAveraging (Hoffman & Gelman 2014, Alg. 5) ----------------------------------------------

void DualAveraging::restart(double step) {
  mu_ = std::log(10.0 * step);
  count_ = 0;
  h_bar_ = 0.0;
  log_averaged_ = 0.0;
}

double DualAveraging::learn(double accept_stat, double target) {
  const double alpha = std::isfinite(accept_stat) ? std::clamp(accept_stat, 0.0, 1.0) : 0.0;
  ++count_;
  const double m = static_cast<double>(count_);
  const double eta = 1.0 / (m + t0);
  h_bar_ = (1.0 - eta) * h_bar_ + eta * (target - alpha);
  const double log_step = mu_ - std::sqrt(m) / gamma * h_bar_;
  const double weight = std::pow(m, -kappa);
  log_averaged_ = weight * log_step + (1.0 - weight) * log_averaged_;
  return std::exp(log_step);
}

double DualAveraging::averaged(double current) const { return count_ ? std::exp(log_averaged_) : current; }

void DualAveraging::save(StateWriter& out) const {
  out.section("step size adaptation");
  out.count(count_);
  for (double value : {mu_, h_bar_, log_averaged_}) out.number(value);
}

void DualAveraging::restore(StateReader& in) {
  in.section("step size adaptation");
  count_ = in.count();
  for (double* value : {&mu_, &h_bar_, &log_averaged_}) *value = in.number();
}

// ---- MassAdaptation (Stan's windows) ------------------------------------------------------------

std::optional<std::vector<double>> MassAdaptation::observe(std::uint64_t iteration, std::uint64_t warmup,
                                                           std::span<const double> theta) {
  if (!add_sample(iteration, warmup, theta)) return std::nullopt;
  return close_window({});
}

bool MassAdaptation::add_sample(std::uint64_t iteration, std::uint64_t warmup, std::span<const double> sample) {
  if (!planned_) plan(warmup);
  // No upper bound here: the last window closes at the first block end at or after slow_end_,
  // which may lie a little beyond it; after that the adaptation is done.
  if (done_ || iteration <= fast_end_) return false;
  add(sample);
  return iteration >= window_end_;
}

std::optional<std::vector<double>> MassAdaptation::close_window(std::span<const double> in_use) {
  std::optional<std::vector<double>> metric;
  if (count_ >= 2) metric = scores_ ? shrunk_scores(in_use) : regularised();
  restart();
  next_window();
  return metric;
}

void MassAdaptation::save(StateWriter& out) const {
  out.section("mass adaptation");
  out.flag(planned_);
  out.flag(done_);
  for (std::uint64_t value : {fast_end_, slow_end_, window_size_, window_end_, count_}) out.count(value);
  out.numbers(mean_);
  out.numbers(squares_);
}

void MassAdaptation::restore(StateReader& in) {
  in.section("mass adaptation");
  planned_ = in.flag();
  done_ = in.flag();
  for (std::uint64_t* value : {&fast_end_, &slow_end_, &window_size_, &window_end_, &count_}) *value = in.count();
  mean_ = in.numbers();
  const std::size_t d = mean_.size();
  in.numbers(squares_, dense_ ? d * d : d);  // add() indexes both by θ's coordinates
}

void MassAdaptation::plan(std::uint64_t warmup) {
  planned_ = true;
  std::uint64_t fast = windows_.init_buffer, base = windows_.window, terminal = windows_.term_buffer;
  if (warmup < 20) {
    done_ = true;
    return;
  }
  if (fast + base + terminal > warmup) {
    fast = warmup * 15 / 100;
    terminal = warmup / 10;
    base = warmup - fast - terminal;
  }
  fast_end_ = fast;
  slow_end_ = warmup - terminal;
  window_size_ = base;
  window_end_ = fast + base;
}

/// Welford's update of the window's running mean and sum of squared deviations (of their outer
/// products, dense).
void MassAdaptation::add(std::span<const double> theta) {
  const std::size_t d = theta.size();
  if (mean_.size() != d) {
    mean_.assign(d, 0.0);
    squares_.assign(dense_ ? d * d : d, 0.0);
  }
  ++count_;
  before_.resize(d);
  for (std::size_t j = 0; j < d; ++j) {
    before_[j] = theta[j] - mean_[j];
    mean_[j] += before_[j] / static_cast<double>(count_);
  }
  for (std::size_t i = 0; i < d; ++i) {
    if (!dense_) {
      squares_[i] += before_[i] * (theta[i] - mean_[i]);
      continue;
    }
    for (std::size_t j = 0; j < d; ++j) squares_[i * d + j] += before_[i] * (theta[j] - mean_[j]);
  }
}

void MassAdaptation::restart() {
  count_ = 0;
  std::fill(mean_.begin(), mean_.end(), 0.0);
  std::fill(squares_.begin(), squares_.end(), 0.0);
}

/// The next slow window: twice as long, stretched to the terminal interval if the one after it
/// would not fit; none after the window that reaches it.
void MassAdaptation::next_window() {
  if (window_end_ >= slow_end_) {
    done_ = true;
    return;
  }
  window_size_ *= 2;
  window_end_ += window_size_;
  if (window_end_ + 2 * window_size_ > slow_end_) window_end_ = slow_end_;
}

std::vector<double> MassAdaptation::regularised() const {
  const double n = static_cast<double>(count_), weight = n / (n + 5.0), shrinkage = 1e-3 * (5.0 / (n + 5.0));
  const std::size_t d = mean_.size();
  if (!dense_) {
    std::vector<double> mass(d);
    for (std::size_t j = 0; j < d; ++j) mass[j] = 1.0 / (weight * (squares_[j] / (n - 1.0)) + shrinkage);
    return mass;
  }
  std::vector<double> covariance(d * d);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j)
      covariance[i * d + j] = weight * (squares_[i * d + j] / (n - 1.0)) + (i == j ? shrinkage : 0.0);
  return covariance;
}

/// The score-based M (the class comment), M = (n Ĝ/T + ν M₀)/(n + ν), with n Ĝ = Σ ĝ ĝᵀ taken from
/// Welford's centred sums as S + n ḡ ḡᵀ. Not centred: under the target E[∇U] = 0, and a chain still
/// drifting, whose gradients share a direction, gets a larger M there (a smaller step), not a
/// larger step.
std::vector<double> MassAdaptation::shrunk_scores(std::span<const double> in_use) const {
  const std::size_t d = mean_.size();
  if (in_use.size() != (dense_ ? d * d : d))
    throw Error(fmt::format("integrator: adapt_mass without an MH corrector shrinks each window's mass towards the one "
                            "in use, but the integrator reports {} numbers of it (Integrator::adapted_mass), not {}",
                            in_use.size(), dense_ ? d * d : d));
  const double n = static_cast<double>(count_), nu = dense_ ? static_cast<double>(d) + 5.0 : 5.0;
  const auto entry = [&](std::size_t i, std::size_t j) {
    const std::size_t at = dense_ ? i * d + j : i;
    const double moment = squares_[at] + n * mean_[i] * mean_[j];  // n Ĝ_ij
    return (moment / temperature_ + nu * in_use[at]) / (n + nu);
  };
  std::vector<double> mass(dense_ ? d * d : d);
  for (std::size_t i = 0; i < d; ++i) {
    if (!dense_) mass[i] = entry(i, i);
    else  // the lower triangle mirrored: Welford's (i, j) and (j, i) sums may differ in the last bit
      for (std::size_t j = 0; j <= i; ++j) mass[i * d + j] = mass[j * d + i] = entry(i, j);
  }
  return mass;
}

// ---- Adaptation ---------------------------------------------------------------------------------

Adaptation::Adaptation(Integrator& integrator, bool mh_corrected)
    : integrator_(integrator), settings_(integrator.adaptation()),
      mass_(settings_.dense, settings_.windows, !mh_corrected, integrator.temperature()), step_(settings_.first_step) {
  if (settings_.step.adapt) dual_averaging_.restart(step_);
}

void Adaptation::after_block(ChainState& state, std::uint64_t warmup, const Decision& decision) {
  if (state.iteration > warmup) return;
  const bool adapting_step = settings_.step.adapt && !step_frozen_;
  if (adapting_step) step_ = dual_averaging_.learn(decision.accept_stat, settings_.step.target_acceptance);
  if (settings_.mass) {
    if (auto mass = next_mass(state, warmup)) {
      if (mass_.scores()) integrator_.set_adapted_precision(std::move(*mass), state);
      else integrator_.set_adapted_mass(std::move(*mass), state);
      if (adapting_step) dual_averaging_.restart(step_);
    }
  }
  if (adapting_step && state.iteration == warmup) {
    step_ = dual_averaging_.averaged(step_);
    step_frozen_ = true;
  }
  if (adapting_step) integrator_.set_step_size(step_);
}

/// Without an MH test the window holds ĝ: the block's last estimate, at a state of this block (sgld's
/// at the θ its last step started from), whether or not the integrator keeps it for its next step.
/// M₀ is read from the integrator only when a window closes (a dense M costs an inversion).
std::optional<std::vector<double>> Adaptation::next_mass(const ChainState& state, std::uint64_t warmup) {
  if (!mass_.add_sample(state.iteration, warmup, mass_.scores() ? state.gradient : state.theta)) return std::nullopt;
  return mass_.close_window(mass_.scores() ? integrator_.adapted_mass() : std::vector<double>{});
}

std::optional<double> Adaptation::adapted_step_size() const {
  return step_frozen_ ? std::optional<double>(step_) : std::nullopt;
}

void Adaptation::save_state(StateWriter& out) const {
  if (!settings_.any()) return;
  out.section("adaptation");
  if (settings_.mass) mass_.save(out);
  if (settings_.step.adapt) {
    dual_averaging_.save(out);
    out.number(step_);
    out.flag(step_frozen_);
  }
}

void Adaptation::restore_state(StateReader& in) {
  if (!settings_.any()) return;
  in.section("adaptation");
  if (settings_.mass) mass_.restore(in);
  if (settings_.step.adapt) {
    dual_averaging_.restore(in);
    step_ = in.number();
    step_frozen_ = in.flag();
    integrator_.set_step_size(step_);
  }
}

}  // namespace sgmcmc
