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
module sgmcmc.adaptation;

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
  if (!planned_) plan(warmup);
  // No upper bound here: the last window closes at the first block end at or after slow_end_,
  // which may lie a little beyond it; after that the adaptation is done.
  if (done_ || iteration <= fast_end_) return std::nullopt;
  add(theta);
  if (iteration < window_end_) return std::nullopt;
  std::optional<std::vector<double>> metric;
  if (count_ >= 2) metric = regularised();
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

// ---- Adaptation ---------------------------------------------------------------------------------

Adaptation::Adaptation(Integrator& integrator)
    : integrator_(integrator), settings_(integrator.adaptation()), mass_(settings_.dense, settings_.windows),
      step_(settings_.first_step) {
  if (settings_.step.adapt) dual_averaging_.restart(step_);
}

void Adaptation::after_block(ChainState& state, std::uint64_t warmup, const Decision& decision) {
  if (state.iteration > warmup) return;
  const bool adapting_step = settings_.step.adapt && !step_frozen_;
  if (adapting_step) step_ = dual_averaging_.learn(decision.accept_stat, settings_.step.target_acceptance);
  if (settings_.mass) {
    if (auto mass = mass_.observe(state.iteration, warmup, state.theta)) {
      integrator_.set_adapted_mass(std::move(*mass), state);
      if (adapting_step) dual_averaging_.restart(step_);
    }
  }
  if (adapting_step && state.iteration == warmup) {
    step_ = dual_averaging_.averaged(step_);
    step_frozen_ = true;
  }
  if (adapting_step) integrator_.set_step_size(step_);
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
