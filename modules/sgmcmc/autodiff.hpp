// Models by automatic differentiation: a plugin writes its log prior and one item's log
// likelihood once, as templates over the scalar type, and this header derives what the samplers
// call: the prior and batch potentials, their gradients (weighted), and per-item gradients.
//
//   #include <sgmcmc/autodiff.hpp>
//   #include <sgmcmc/plugin.hpp>
//   class Poisson : public sgmcmc::autodiff::Model<Poisson> {
//    public:
//     template <class T> T log_prior(std::span<const T> theta) const;                   // log p(θ)
//     template <class T> T log_likelihood(std::span<const T> theta, std::size_t i) const; // log p(x_i | θ)
//     std::size_t dimension() const override; std::size_t num_items() const override;
//     std::vector<std::string> parameter_names() const override;
//   };
//
// Gradients are reverse-mode automatic differentiation with Stan Math's `var` (Carpenter et al.
// 2015, "The Stan Math Library: reverse-mode automatic differentiation in C++", arXiv:1509.07164),
// chosen after measuring Stan Math, Sacado and ADOL-C (tests/benchmarks/README.md). Write the
// templates with the functions of <cmath> called unqualified (`using std::exp; exp(t)`) or with
// Stan's (`stan::math::log1p_exp`), which have overloads for both double and var. A linear
// predictor xᵀθ is `sgmcmc::autodiff::dot(theta, x)`: one node on the tape instead of 2d, which
// makes a GLM's gradient about 5× cheaper.
//
// Constrained parameters (σ > 0, 0 < p < 1, ordered): give the model a member
//   template <class T> MyParameters<T> parameters(std::span<const T> theta) const;
// that reads θ with autodiff::Parameters (below) into a struct of constrained values and their
// log Jacobian; log_prior and log_likelihood then take that struct instead of θ, and it is
// computed once per batch, not once per item.
//
// Threads: every chain's thread keeps its own tape (Stan's tape is thread-local in Debian's build),
// created on first use; the model itself holds no mutable state, as every Model.
#pragma once
#include <stan/math/rev/core.hpp>
#include <stan/math/rev/scal.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

import sgmcmc.sdk;

namespace sgmcmc::autodiff {

using Var = stan::math::var;

namespace detail {

/// θ of the gradient being taped on this thread: dot() reads its values contiguously and adds
/// its adjoints into one dense array, so the reverse sweep of xᵀθ is one vectorised axpy.
struct TapedParameters {
  const Var* vars = nullptr;
  const double* values = nullptr;
  double* adjoints = nullptr;
  std::size_t size = 0;
};
inline thread_local TapedParameters taped;

/// The node of z = xᵀθ: ∂z/∂θ = x, so its chain rule adds adj(z)·x to θ's adjoints.
class DotNode : public stan::math::vari {
public:
  DotNode(double value, const double* x, double* adjoints, std::size_t size)
      : vari(value), x_(x), adjoints_(adjoints), size_(size) {}
  void chain() override {
    for (std::size_t j = 0; j < size_; ++j) adjoints_[j] += adj_ * x_[j];
  }

private:
  const double* x_;  // the model's data row, alive for as long as the model
  double* adjoints_;
  std::size_t size_;
};

/// The node of u = -Σ_k w_k ℓ_k for a batch's item log likelihoods ℓ_k: ∂u/∂ℓ_k = -w_k. One
/// node instead of two per item (a product and a sum).
class NegatedWeightedSumNode : public stan::math::vari {
public:
  NegatedWeightedSumNode(double value, stan::math::vari** terms, const Batch& batch)
      : vari(value), terms_(terms), batch_(batch) {}
  void chain() override {
    for (std::size_t k = 0; k < batch_.items.size(); ++k) terms_[k]->adj_ -= adj_ * batch_.weight(k);
  }

private:
  stan::math::vari** terms_;  // on the tape's arena
  const Batch& batch_;        // alive for the whole gradient
};

/// Stan's tape is thread-local; a thread other than the main one must create its own first.
inline void ensure_tape() {
  thread_local stan::math::ChainableStack tape;
  (void)tape;
}

/// θ recorded as vars on this thread's tape for the gradients of one call; the tape is freed
/// when it goes (also when the model throws).
class Tape {
public:
  explicit Tape(std::span<const double> theta)
      : values_(theta), vars_(theta.begin(), theta.end()), dense_adjoints_(theta.size(), 0.0) {
    taped = {vars_.data(), values_.data(), dense_adjoints_.data(), values_.size()};
  }
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;
  ~Tape() {
    taped = {};
    stan::math::recover_memory();
  }

  std::span<const Var> theta() const { return vars_; }

  /// gradient += ∂/∂θ of the last sweep (the vars' own adjoints and dot()'s dense ones).
  void add_adjoints(std::span<double> gradient) const {
    for (std::size_t j = 0; j < vars_.size(); ++j) gradient[j] += vars_[j].adj() + dense_adjoints_[j];
  }

  /// Before another sweep over the same θ.
  void zero_adjoints() {
    for (const Var& v : vars_) v.vi_->set_zero_adjoint();
    std::fill(dense_adjoints_.begin(), dense_adjoints_.end(), 0.0);
  }

private:
  bool tape_ready_ = (ensure_tape(), true);  // first: the vars below go on the tape
  std::span<const double> values_;
  std::vector<Var> vars_;
  std::vector<double> dense_adjoints_;
};

/// A nested part of the tape (one item's terms over a Tape's θ), swept and freed on its own.
struct Nested {
  Nested() { stan::math::start_nested(); }
  Nested(const Nested&) = delete;
  Nested& operator=(const Nested&) = delete;
  ~Nested() { stan::math::recover_memory_nested(); }
};

/// U(θ) for `potential` (a callable taking std::span<const Var>), and gradient += ∇U(θ).
template <class Potential>
double add_gradient(std::span<const double> theta, std::span<double> gradient, Potential&& potential) {
  Tape tape(theta);
  const Var u = potential(tape.theta());
  stan::math::grad(u.vi_);
  tape.add_adjoints(gradient);
  return u.val();
}

}  // namespace detail

/// xᵀθ, for θ in double.
inline double dot(std::span<const double> theta, std::span<const double> x) {
  double z = 0.0;
  for (std::size_t j = 0; j < x.size(); ++j) z += x[j] * theta[j];
  return z;
}

/// xᵀθ on the tape: one node when θ is the parameter vector being differentiated, else the
/// plain sum. `x` must outlive the gradient (the model's own data does).
inline Var dot(std::span<const Var> theta, std::span<const double> x) {
  const auto& p = detail::taped;
  if (theta.data() == p.vars && x.size() == p.size)
    return Var(new detail::DotNode(dot(std::span<const double>(p.values, p.size), x), x.data(), p.adjoints, p.size));
  Var z = 0.0;
  for (std::size_t j = 0; j < x.size(); ++j) z += x[j] * theta[j];
  return z;
}

/// The parameters of a model with constraints (σ > 0, 0 < p < 1, μ₁ < μ₂), read from the
/// unconstrained θ the samplers move, in order, each on its constrained scale, with the log
/// Jacobian of the map summed in `log_jacobian`. Samplers need θ ∈ ℝᵈ: a constrained parameter x
/// is sampled as u with x = g(u), and the density of u is p(g(u)) |g′(u)|; log_prior must add
/// `log_jacobian`, log_likelihood must not (it is in f_0 once, not in every f_i). The maps are
/// Stan's (Stan Reference Manual, "Constraint transforms"), so the unconstrained θ is Stan's:
///   positive: x = exp(u),                     log|dx/du| = u
///   bounded:  x = a + (b - a) logistic(u),    log|dx/du| = log(b - a) + log logistic(u) + log logistic(-u)
///   ordered:  x₁ = u₁, x_k = x_{k-1} + exp(u_k),  log|J| = Σ_{k≥2} u_k
///
///   template <class T> struct Scale { T mu, tau, log_jacobian; };
///   template <class T> Scale<T> parameters(std::span<const T> theta) const {  // θ = (μ, log τ)
///     sgmcmc::autodiff::Parameters<T> in(theta);
///     return {.mu = in.real(), .tau = in.positive(), .log_jacobian = in.log_jacobian};  // read left to right
///   }
///   template <class T> T log_prior(const Scale<T>& p) const { return ... + p.log_jacobian; }
///   template <class T> T log_likelihood(const Scale<T>& p, std::size_t i) const;
/// Works for T = double too (the model's quantities: the constrained values of a draw).
template <class T>
class Parameters {
public:
  explicit Parameters(std::span<const T> theta) : theta_(theta) {}

  T log_jacobian = 0.0;

  T real() { return next(); }
  T positive() {
    using std::exp;
    const T u = next();
    log_jacobian += u;
    return exp(u);
  }
  /// In (lower, upper); either bound may itself be a parameter (garch's β₁ < 1 - α₁).
  template <class Lower, class Upper>
  T bounded(const Lower& lower, const Upper& upper) {
    using std::log;
    const T u = next();
    log_jacobian += log(upper - lower) + stan::math::log_inv_logit(u) + stan::math::log_inv_logit(-u);
    return lower + (upper - lower) * stan::math::inv_logit(u);
  }
  std::vector<T> reals(std::size_t n) { return many(n, [this] { return real(); }); }
  std::vector<T> positives(std::size_t n) { return many(n, [this] { return positive(); }); }
  /// x₁ < x₂ < ... < x_n.
  std::vector<T> ordered(std::size_t n) {
    std::vector<T> x;
    for (std::size_t k = 0; k < n; ++k) x.push_back(k == 0 ? real() : x.back() + positive());
    return x;
  }

private:
  T next() {
    if (next_ >= theta_.size())
      throw sgmcmc::Error("autodiff::Parameters: the model reads more than the " + std::to_string(theta_.size()) +
                          " coordinates of θ it declares (dimension())");
    return theta_[next_++];
  }
  template <class Read>
  std::vector<T> many(std::size_t n, Read read) {
    std::vector<T> x;
    for (std::size_t k = 0; k < n; ++k) x.push_back(read());
    return x;
  }

  std::span<const T> theta_;
  std::size_t next_ = 0;
};

/// The Model of a plugin that writes `log_prior` and `log_likelihood` as templates (see above):
/// U(θ) = -log p(θ) - Σ_i log p(x_i | θ), so f_0 = -log_prior and f_i = -log_likelihood(·, i).
/// It has an exact log-likelihood (MH correction, lp__) and per-item gradients (SAGA); override
/// `capabilities` to add what else the model has, and any function for a faster hand-written one.
template <class Derived>
class Model : public sgmcmc::Model {
public:
  /// What the derived functions give: an exact log-likelihood and per-item gradients. Declare the
  /// same in the plugin's PluginInfo (`{name, description, parameters, autodiff_capabilities()}`).
  static Capabilities autodiff_capabilities() {
    Capabilities capabilities;
    capabilities.exact_log_likelihood = true;
    capabilities.per_item_gradients = true;
    return capabilities;
  }
  Capabilities capabilities() const override { return autodiff_capabilities(); }

  double prior_potential(std::span<const double> theta) const override { return -self().log_prior(view(theta)); }

  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    detail::add_gradient(theta, gradient, [&](std::span<const Var> t) { return -self().log_prior(view(t)); });
  }

  void add_data_gradient(std::span<const double> theta, const Batch& batch, std::span<double> gradient,
                         Workspace&, Rng&) const override {
    detail::add_gradient(theta, gradient, [&](std::span<const Var> t) { return weighted_potential(t, batch); });
  }

  double data_potential(std::span<const double> theta, const Batch& batch, Workspace&) const override {
    return weighted_potential(theta, batch);
  }

  void item_gradients(std::span<const double> theta, std::span<const std::size_t> items, std::span<double> out,
                      Workspace&) const override {
    const std::size_t d = theta.size();
    detail::Tape tape(theta);  // θ taped once; each item's terms are a nested part swept alone
    for (std::size_t k = 0; k < items.size(); ++k) {
      detail::Nested nested;  // the parameters too: a sweep of the nested part stops at its start
      const Var f = -self().log_likelihood(view(tape.theta()), items[k]);
      tape.zero_adjoints();
      stan::math::grad(f.vi_);
      const auto row = out.subspan(k * d, d);
      std::fill(row.begin(), row.end(), 0.0);
      tape.add_adjoints(row);
    }
  }

private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }

  /// What log_prior and log_likelihood take: the Derived's `parameters(θ)` when it has one
  /// (read once per batch, not once per item), else θ itself.
  template <class T>
  decltype(auto) view(std::span<const T> theta) const {
    if constexpr (requires(const Derived& model) { model.parameters(theta); })
      return self().parameters(theta);
    else
      return theta;
  }

  /// Σ_k w_k f_{items[k]}(θ) = -Σ_k w_k log_likelihood(θ, items[k]), in double or on the tape.
  double weighted_potential(std::span<const double> theta, const Batch& batch) const {
    double u = 0.0;
    const auto& parameters = view(theta);
    for (std::size_t k = 0; k < batch.items.size(); ++k) u -= batch.weight(k) * self().log_likelihood(parameters, batch.items[k]);
    return u;
  }
  Var weighted_potential(std::span<const Var> theta, const Batch& batch) const {
    auto** terms = stan::math::ChainableStack::instance_->memalloc_.alloc_array<stan::math::vari*>(batch.items.size());
    double u = 0.0;
    const auto& parameters = view(theta);
    for (std::size_t k = 0; k < batch.items.size(); ++k) {
      const Var term = self().log_likelihood(parameters, batch.items[k]);
      terms[k] = term.vi_;
      u -= batch.weight(k) * term.val();
    }
    return Var(new detail::NegatedWeightedSumNode(u, terms, batch));
  }
};

}  // namespace sgmcmc::autodiff
