// Control variates around a centre (Baker et al. 2019, eq. 4): the centre's estimate, shared by
// `cv` (SGLD-CV, centre θ̂ found by SGD or an SGLD burn-in from the start point, or given) and `svrg` (the centre a
// snapshot refreshed every `period` estimates, Dubey et al. 2016).
module;
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>
#include <fmt/format.h>
module sgmcmc.estimators:control_variates;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;
import :minibatch;
import :weighted_batches;
import :parameters;
import :item_scalars;

namespace sgmcmc::estimator_parts {

// ---- The control variate around a centre (SGLD-CV and SVRG) -----------------------------------

/// Baker et al. (2019, eq. 4), the estimate around a centre c whose full gradient is known:
///   ĝ(θ) = ∇U(c) + ∇f_0(θ) - ∇f_0(c) + Σ_{k∈S} w_k [∇f_{i_k}(θ) - ∇f_{i_k}(c)],  w_k = 1/(n p_{i_k}),
/// kept as Σ_i ∇f_i(c) + ∇f_0(θ) + Σ_k w_k [...] since ∇U(c) - ∇f_0(c) = Σ_i ∇f_i(c). SVRG
/// (Dubey et al. 2016, SVRG-LD) is the same estimate with c = the last snapshot θ̃.
/// A GLM model (∇f_i = s_i x_i) keeps the N scalars s_i(c) of the full pass (a data-parallel rank
/// its block's: ItemScalars), so an estimate costs n item gradients; any other model evaluates both
/// ∇f_i(θ) and ∇f_i(c) of the batch (2n).
class Centre {
public:
  explicit Centre(const Model& model)
      : glm_(model.capabilities().glm_gradients), dimension_(model.dimension()), items_(model.num_items()),
        centre_scalars_(model, glm_) {}

  /// For a model whose gradient Gibbs-samples latent variables (LDA) Σ_i ∇f_i(c) is itself an
  /// estimate, fixed until the centre moves, so every later estimate carries its error: each full
  /// pass below averages `passes` independent passes, dividing that variance by `passes` (models
  /// without latent_gibbs_step keep 1, their pass being exact).
  void average_passes(std::size_t passes) { passes_ = passes; }

  /// c ← θ, with a full data pass for Σ_i ∇f_i(c).
  void move_to(std::span<const double> theta, ChainContext& context) {
    allocate();
    point_.assign(theta.begin(), theta.end());
    recompute(context);
  }

  /// Σ_i ∇f_i(c) again at the same c, one full pass: after the model's data terms changed.
  void recompute(ChainContext& context) {
    const Model& model = context.model;
    set_zero(data_gradient_);
    if (glm_) {
      centre_scalars_.fill(point_, data_gradient_, context);
    } else {
      for (std::size_t pass = 0; pass < passes_; ++pass)
        model.add_data_gradient(point_, Batch{all_items_}, data_gradient_, context.workspace, context.rng);
      if (passes_ > 1)
        for (double& g : data_gradient_) g /= static_cast<double>(passes_);
    }
    context.cost.item_gradients += passes_ * items_;
    context.cost.full_passes += passes_;
  }

  bool placed() const { return !point_.empty(); }
  std::span<const double> data_gradient() const { return data_gradient_; }

  /// c, Σ_i ∇f_i(c) and, for GLM models, s_i(c): everything the full pass at c computed.
  /// What a checkpoint holds (SavingArchive, sgmcmc.state): whether θ̂ is placed, and then θ̂,
  /// ∇U(θ̂) and the GLM scalars at θ̂.
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("control-variate centre");
    bool placed = self.placed();
    archive(placed);
    if (!placed) return;
    if constexpr (Archive::restoring) self.allocate();
    archive(Sized{self.point_, self.dimension_}, Sized{self.data_gradient_, self.dimension_});
    ItemScalars::saved_fields(self.centre_scalars_, archive);  // none for a model without glm-gradients
  }
  void save_state(StateWriter& out) const { save_fields(*this, out); }
  void restore_state(StateReader& in) { restore_fields(*this, in); }

  /// gradient ← ∇U(c) + ∇f_0(θ) - ∇f_0(c): the estimate with the batch term left out, which is
  /// exact at θ = c (used right after a full pass, where the batch term is zero).
  void exact_at_centre(std::span<const double> theta, std::span<double> gradient, ChainContext& context) const {
    std::copy(data_gradient_.begin(), data_gradient_.end(), gradient.begin());
    context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  }

  /// gradient ← ĝ(θ) of Baker et al. (2019, eq. 4) for the batch `draw`.
  void estimate(std::span<const double> theta, const WeightedBatch& draw, std::span<double> gradient,
                ChainContext& context) {
    if (glm_)
      estimate_glm(theta, draw, gradient, context);
    else
      estimate_general(theta, draw, gradient, context);
    context.model.add_prior_gradient_given(theta, gradient, context.workspace);
  }

private:
  void allocate() {
    if (!data_gradient_.empty()) return;
    if (!glm_) all_items_ = index_range(items_);  // a GLM's full pass is ItemScalars'
    data_gradient_.resize(dimension_);
    at_centre_.resize(dimension_);
  }

  /// Σ_i∇f_i(c) + Σ_k w_k [∇f_i(θ) - ∇f_i(c)], both batch sums kept apart until the difference
  /// so that at θ = c they cancel exactly. A model whose gradient Gibbs-samples latent variables
  /// (LDA) draws both from the same stream state: common random numbers, so the two Gibbs
  /// estimates are positively correlated and their difference small when θ is near c (at θ = c
  /// it is exactly 0, as for a deterministic gradient). Models that draw nothing are unaffected.
  void estimate_general(std::span<const double> theta, const WeightedBatch& draw, std::span<double> gradient,
                        ChainContext& context) {
    set_zero(gradient);
    set_zero(at_centre_);
    Rng replay = context.rng;
    context.model.add_data_gradient(theta, draw.batch, gradient, context.workspace, context.rng);
    context.model.add_data_gradient(point_, draw.batch, at_centre_, context.workspace, replay);
    for (std::size_t j = 0; j < gradient.size(); ++j)
      gradient[j] = data_gradient_[j] + draw.scale * (gradient[j] - at_centre_[j]);
    context.cost.item_gradients += 2 * draw.batch.items.size();
  }

  /// Σ_i∇f_i(c) + Σ_k w_k [s_i(θ) - s_i(c)] x_i: one scalar per item and one pass over the features.
  void estimate_glm(std::span<const double> theta, const WeightedBatch& draw, std::span<double> gradient,
                    ChainContext& context) {
    const auto items = draw.batch.items;
    scales_.resize(items.size());
    context.model.glm_scalars(theta, items, scales_, context.workspace);
    for (std::size_t k = 0; k < items.size(); ++k)  // items of other ranks get 0: their owners add their terms
      scales_[k] = centre_scalars_.holds(items[k]) ? draw.weight(k) * (scales_[k] - centre_scalars_[items[k]]) : 0.0;
    std::copy(data_gradient_.begin(), data_gradient_.end(), gradient.begin());
    context.model.add_scaled_features(items, scales_, gradient);
    context.cost.item_gradients += items.size();
  }

  bool glm_;
  std::size_t dimension_, items_;
  std::size_t passes_ = 1;  // full passes averaged for Σ_i ∇f_i(c)
  std::vector<std::size_t> all_items_;  // every item, for the full pass of a model without glm-gradients
  std::vector<double> point_;           // c
  std::vector<double> data_gradient_;   // Σ_i ∇f_i(c)
  ItemScalars centre_scalars_;          // s_i(c) (GLM models)
  std::vector<double> at_centre_;       // scratch: Σ_k w_k ∇f_i(c) over the batch
  std::vector<double> scales_;          // scratch: w_k [s_i(θ) - s_i(c)]
};

// ---- cv: SGLD-CV, centre θ̂ found by a centring phase -------------------------------------------

double norm(std::span<const double> v) { return std::sqrt(std::inner_product(v.begin(), v.end(), v.begin(), 0.0)); }

/// λ̂, the largest curvature of U near θ, for SGD's automatic first step h_0 = 1/λ̂ (gradient
/// descent is stable for h λ_max < 2): 10 power iterations v ← Hv/‖Hv‖ (Golub & Van Loan §8.2),
/// each Hessian-vector product a finite difference of minibatch estimates on one batch,
/// Hv ≈ [∇Û(θ + δv) - ∇Û(θ)]/δ: 2n item gradients each, counted in the chain's cost. The batch
/// Hessian's top eigenvalue tends to exceed the full one's, which errs on the safe side. Returns
/// 0 when there is no usable curvature (a flat or non-finite model).
double largest_curvature(std::span<const double> theta, MinibatchSampler& batches, double scale, ChainContext& context) {
  const std::size_t d = theta.size();
  std::vector<double> v(d), shifted(d), at_theta(d), at_shifted(d);
  context.rng.fill_normal(v);
  const double start_norm = norm(v), delta = 1e-4 * (1.0 + norm(theta));
  for (double& x : v) x /= start_norm;
  double lambda = 0.0;
  for (int iteration = 0; iteration < 10; ++iteration) {
    const auto items = batches.draw(context.rng);
    for (std::size_t j = 0; j < d; ++j) shifted[j] = theta[j] + delta * v[j];
    scaled_batch_plus_prior(theta, items, batches.batch_size(), scale, at_theta, context);
    scaled_batch_plus_prior(shifted, items, batches.batch_size(), scale, at_shifted, context);
    for (std::size_t j = 0; j < d; ++j) v[j] = (at_shifted[j] - at_theta[j]) / delta;
    lambda = norm(v);
    if (!(lambda > 0.0) || !std::isfinite(lambda)) return 0.0;
    for (double& x : v) x /= lambda;
  }
  return lambda;
}

/// "1.5, -2, 0.3" → {1.5, -2, 0.3}: a user-given centre θ̂ (one number per parameter, which
/// CvParameters::from_settings checks against the model).
std::vector<double> parse_centre(SectionReader section, const std::string& text) {
  std::vector<double> values;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view field = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!field.empty() && std::isspace(static_cast<unsigned char>(field.front()))) field.remove_prefix(1);
    while (!field.empty() && std::isspace(static_cast<unsigned char>(field.back()))) field.remove_suffix(1);
    double value = 0.0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc{} || end != field.data() + field.size() || !std::isfinite(value))
      throw Error(fmt::format("{}: '{}' is not a finite number; expected one number per parameter, separated by commas",
                              section.describe("centre"), field));
    values.push_back(value);
  }
  return values;
}

/// The keys of cv's centring phase and centre, after the batch's: the centring steps' defaults
/// (sgd_iterations: one pass) need the batch size, so CvParameters::from_settings reads these from
/// a struct whose batch is read.
const FieldTable<CvParameters>& centring_fields() {
  using P = CvParameters;
  using S = SgdScheduleParameters;
  static const FieldTable<P> table = [] {
    const std::vector<std::pair<std::string, SgdScheduleKind>> kinds = {{"polynomial", SgdScheduleKind::polynomial},
                                                                         {"constant", SgdScheduleKind::constant}};
    // SGLD's steps stay constant by default: a decaying step would freeze the burn-in before it mixes.
    Field<P> schedule{{"sgd_schedule", fmt::format("{}; constant for sgld", kinds.front().first), choice_names(kinds),
                       "the centring steps h_k: polynomial, h_0 (1 + (k-1)/b)^(-c) (Robbins–Monro); constant, h_0"},
                      [kinds](SectionReader section, P& p) {
                        const auto in_force = p.centring == Centring::sgld ? SgdScheduleKind::constant : p.sgd.schedule;
                        p.sgd.schedule = read_choice(section, "sgd_schedule", kinds, in_force);
                      }};
    Field<S> decay_c = number_field<S>("sgd_decay_c", &S::decay_c, "c of the polynomial centring steps");
    decay_c.shown.constraint = "in (0.5, 1]";
    decay_c.problem = [](const S& sgd) {
      return sgd.schedule == SgdScheduleKind::polynomial && !(sgd.decay_c > 0.5 && sgd.decay_c <= 1.0)
                 ? fmt::format("expected 0.5 < c <= 1 (Robbins–Monro: Σh_k = ∞, Σh_k² < ∞), found {}", sgd.decay_c)
                 : std::string();
    };
    const Constraint step_or_automatic{">= 0", "a number > 0, or 0 for 1/λ̂ (estimated)",
                                       [](double value) { return value >= 0.0 && std::isfinite(value); }};
    Field<P> centre{{"centre", "none", "d numbers",
                     "θ̂ as \"x1, x2, ...\", one number per parameter; given, there is no centring phase"},
                    [](SectionReader section, P& p) {
                      if (const std::string text = section.text("centre", ""); !text.empty())  // "": centring
                        p.centre = parse_centre(section, text);
                    }};
    return concat<P>(
        {{seeded_integer_field<P>("sgd_iterations", &P::sgd_iterations, "one pass, ceil(N/n)", "K, the centring phase's steps",
                           at_least(0)),
          choice_field<P>("centring", &P::centring, {{"sgd", Centring::sgd}, {"sgld", Centring::sgld}},
                          "how θ̂ is found from the start point: sgd, SGD's last iterate (Baker et al. 2019, §3.1), "
                          "near the mode; sgld, the mean of an SGLD burn-in's second half, near the posterior mean")},
         nested<P>(&P::sgd,
                   FieldTable<S>{number_field<S>("sgd_step_size", &S::step_size,
                                                 "h_0, the centring's first step; 0: 1/λ̂, the estimated largest "
                                                 "curvature",
                                                 step_or_automatic),
                                 number_field<S>("sgd_decay_b", &S::decay_b, "b of the polynomial centring steps",
                                                 positive())}),
         {schedule},
         nested<P>(&P::sgd, FieldTable<S>{decay_c}),
         {integer_field<P>("centre_passes", &P::centre_passes,
                           "full passes averaged for ∇U(θ̂); above 1 only for models with latent-gibbs-step",
                           at_least(1)),
          centre}});
  }();
  return table;
}

/// svrg's own key, after the batch's (its default, one pass, needs the batch size).
const FieldTable<SvrgParameters>& snapshot_fields() {
  using P = SvrgParameters;
  static const FieldTable<P> table = {seeded_integer_field<P>("period", &P::period, "one pass, ceil(N/n)",
                                                       "m, the iterations between snapshots", at_least(1))};
  return table;
}

/// SGLD-CV (Baker et al. 2019, Algorithm 1): find θ̂ by a centring phase with the simple minibatch
/// estimate (eq. 2): SGD as in the paper, or an SGLD burn-in (see descend), or take a user-given θ̂;
/// one full pass for ∇U(θ̂); start the chain at θ̂; then estimate with eq. 4.
/// The centring phase's item gradients and time are the chain's (it runs inside Chain::run).
class ControlVariateEstimator final : public Estimator {
public:
  ControlVariateEstimator(const CvParameters& parameters, const Model& model)
      : sampler_(parameters.batches, model), centre_(model),
        sgd_iterations_(parameters.sgd_iterations.value_or(one_pass(model, sampler_.batch_size()))),
        schedule_(parameters.sgd), centring_(parameters.centring), with_replacement_(!sampler_.distinct_items()),
        given_centre_(parameters.centre) {
    if (given_centre_)
      require_parameter(given_centre_->size() == model.dimension(), "estimator cv",
                        fmt::format("a centre of {} numbers, one per parameter", model.dimension()),
                        given_centre_->size());
    centre_.average_passes(parameters.centre_passes);
  }

  void prepare(std::span<double> theta, ChainContext& context) override {
    if (given_centre_)
      std::copy(given_centre_->begin(), given_centre_->end(), theta.begin());
    else
      descend(theta, context);
    centre_.move_to(theta, context);
    if (!all_finite(centre_.data_gradient()))
      throw Error(fmt::format("estimator 'cv', full-gradient pass at the centre θ̂: ∇U(θ̂) is not finite (NaN or "
                              "Inf); {}",
                              given_centre_ ? std::string("choose another estimator.centre")
                                            : fmt::format("try a smaller estimator.sgd_step_size (now {})",
                                                          schedule_.first_step())));
  }

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    if (!centre_.placed()) throw Error("estimator 'cv': estimate() called before prepare() found the centre");
    centre_.estimate(theta, sampler_.draw(context.rng), gradient, context);
  }

  /// h_0 of the centring phase and, when it was set automatically, the curvature λ̂ it came from.
  std::vector<std::pair<std::string, double>> choices() const override {
    if (given_centre_) return {};
    std::vector<std::pair<std::string, double>> chosen{{"sgd_first_step", schedule_.first_step()}};
    if (curvature_) chosen.emplace_back("largest_curvature", *curvature_);
    return chosen;
  }

  /// The centre θ̂ and its full gradient (the centring phase is not repeated), the batch sampler's section,
  /// and h_0 and λ̂ (estimated by prepare when sgd_step_size = 0; messages and the manifest quote them).
  /// What a checkpoint holds (SavingArchive, sgmcmc.state).
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("estimator cv");
    double first_step = self.schedule_.first_step();
    archive(first_step);
    if constexpr (Archive::restoring) self.schedule_.set_first_step(first_step);
    archive(self.curvature_);
    archive.nested(self.centre_);
    archive.nested(self.sampler_);
  }
  void save_state(StateWriter& out) const override { save_fields(*this, out); }
  void restore_state(StateReader& in) override { restore_fields(*this, in); }

  /// θ̂ stays; its full gradient is recomputed under the new data terms (one full pass).
  void data_terms_changed(std::span<const double>, ChainContext& context) override {
    if (centre_.placed()) centre_.recompute(context);
  }

private:
  /// The centring phase, from the chain's starting point, with the simple estimate
  /// ∇Û(θ) = ∇f_0(θ) + (N/n) Σ_{i∈S} ∇f_i(θ) on uniform batches (the estimate's own p_i may be 0
  /// for items whose gradient is constant), K = sgd_iterations steps h_k:
  ///   sgd:  θ_k = θ_{k-1} - h_k ∇Û(θ_{k-1}) (Baker et al. 2019, §3.1); θ̂ = θ_K, near the mode;
  ///   sgld: θ_k = θ_{k-1} - h_k ∇Û(θ_{k-1}) + √(2h_k) ξ_k, ξ_k ~ N(0, I) (Welling & Teh 2011, eq. 4
  ///         with ε = 2h); θ̂ = the mean of θ_k over k > K/2, an estimate of the posterior mean (the
  ///         first half is burn-in). Where the posterior's mass sits far from its mode, as for LDA's
  ///         small θ_kw whose gradient grows like 1/θ, this is the centre the chain will stay near.
  void descend(std::span<double> theta, ChainContext& context) {
    const Model& model = context.model;
    // Its batches only feed the data gradient: a data-parallel rank draws just its share of each.
    MinibatchSampler batches(model.num_items(), sampler_.batch_size(), with_replacement_, model.evaluated_items());
    const double scale = static_cast<double>(model.num_items()) / static_cast<double>(sampler_.batch_size());
    if (schedule_.automatic() && sgd_iterations_ > 0)
      schedule_.set_first_step(automatic_first_step(theta, batches, scale, context));
    const bool langevin = centring_ == Centring::sgld;
    std::vector<double> gradient(theta.size()), noise(langevin ? theta.size() : 0), mean(langevin ? theta.size() : 0, 0.0);
    const bool mirror = model.capabilities().positive_parameters;  // as the integrators reflect at 0
    const std::uint64_t burn_in = sgd_iterations_ / 2;
    for (std::uint64_t k = 1; k <= sgd_iterations_; ++k) {
      throw_if_stop_requested(context);  // Ctrl-C stops a long centring at once, as it stops sampling
      scaled_batch_plus_prior(theta, batches.draw(context.rng), batches.batch_size(), scale, gradient, context);
      const double h = schedule_.at(k);
      for (std::size_t j = 0; j < theta.size(); ++j) theta[j] -= h * gradient[j];
      if (langevin) {
        context.rng.fill_normal(noise);
        const double scale_of_noise = std::sqrt(2.0 * h);
        for (std::size_t j = 0; j < theta.size(); ++j) theta[j] += scale_of_noise * noise[j];
      }
      if (mirror) mirror_positive(theta);
      if (!all_finite(theta))
        throw Error(fmt::format("estimator 'cv', {} centring phase: θ is no longer finite (NaN or Inf) after step "
                                "{} of {}; try a smaller estimator.sgd_step_size (now {})",
                                langevin ? "SGLD" : "SGD", k, sgd_iterations_, schedule_.first_step()));
      if (langevin && k > burn_in) {  // running mean: m += (θ - m)/count
        const double count = static_cast<double>(k - burn_in);
        for (std::size_t j = 0; j < theta.size(); ++j) mean[j] += (theta[j] - mean[j]) / count;
      }
    }
    if (langevin && sgd_iterations_ > 0) std::copy(mean.begin(), mean.end(), theta.begin());
  }

  /// 1/λ̂ (λ̂ kept for choices()); a model whose gradient Gibbs-samples latent variables has no
  /// reproducible batch gradient to difference, and a flat one no curvature: those get 1e-4, the
  /// integrators' default.
  double automatic_first_step(std::span<const double> theta, MinibatchSampler& batches, double scale,
                              ChainContext& context) {
    if (context.model.capabilities().latent_gibbs_step) return 1e-4;
    const double lambda = largest_curvature(theta, batches, scale, context);
    if (!(lambda > 0.0)) return 1e-4;
    curvature_ = lambda;
    return 1.0 / lambda;
  }

  ItemSampler sampler_;
  Centre centre_;
  std::uint64_t sgd_iterations_;
  SgdSchedule schedule_;
  Centring centring_;
  bool with_replacement_;
  std::optional<std::vector<double>> given_centre_;
  std::optional<double> curvature_;  // λ̂, when the automatic first step estimated it
};

// ---- svrg: the centre is a snapshot refreshed every m iterations ------------------------------

/// SVRG-LD (Dubey et al. 2016, NeurIPS, Algorithm "SVRG-LD"): every m iterations the snapshot
/// θ̃ ← θ and ∇U(θ̃) is recomputed with a full pass (that estimate is exact); in between, the
/// estimate of Baker et al. (2019, eq. 4) around θ̃. Keys: period m (default one pass, ceil(N/n)).
/// m counts the chain's iterations (ChainContext::iteration), as Dubey et al.'s epochs do, so an
/// hmc iteration of L leapfrog steps, L estimates, does not refresh L times as often as sgld's.
/// The first estimate of an iteration at least m after the snapshot's takes the next one.
class SvrgEstimator final : public Estimator {
public:
  SvrgEstimator(const SvrgParameters& parameters, const Model& model)
      : sampler_(parameters.batches, model), centre_(model),
        period_(parameters.period.value_or(one_pass(model, sampler_.batch_size()))) {}

  void estimate(std::span<const double> theta, std::span<double> gradient, ChainContext& context) override {
    if (!snapshot_iteration_ || context.iteration >= *snapshot_iteration_ + period_) {
      centre_.move_to(theta, context);
      centre_.exact_at_centre(theta, gradient, context);
      snapshot_iteration_ = context.iteration;
      return;
    }
    centre_.estimate(theta, sampler_.draw(context.rng), gradient, context);
  }

  /// What a checkpoint holds (SavingArchive, sgmcmc.state).
  template <class Self, class Archive>
  static void saved_fields(Self& self, Archive& archive) {
    archive.section("estimator svrg");
    archive(self.snapshot_iteration_);
    archive.nested(self.centre_);
    archive.nested(self.sampler_);
  }
  void save_state(StateWriter& out) const override { save_fields(*this, out); }
  void restore_state(StateReader& in) override { restore_fields(*this, in); }
  /// The next estimate takes a new snapshot (a full pass under the new data terms).
  void data_terms_changed(std::span<const double>, ChainContext&) override { snapshot_iteration_.reset(); }

private:
  ItemSampler sampler_;
  Centre centre_;
  std::uint64_t period_;
  std::optional<std::uint64_t> snapshot_iteration_;  // the iteration of the last snapshot; none forces one
};

}  // namespace sgmcmc::estimator_parts

namespace sgmcmc {

const FieldTable<CvParameters>& CvParameters::fields() {
  static const FieldTable<CvParameters> table = concat<CvParameters>(
      {nested<CvParameters>(&CvParameters::batches, ItemSamplingParameters::fields()), estimator_parts::centring_fields()});
  return table;
}

CvParameters CvParameters::from_settings(SectionReader section, const Model& model) {
  CvParameters start{.batches = ItemSamplingParameters::from_settings(section, model)};
  start.sgd_iterations = estimator_parts::one_pass(model, *start.batches.batch_size);
  const auto parameters = read_fields_from(estimator_parts::centring_fields(), section, start);
  if (parameters.centre_passes > 1 && !model.capabilities().latent_gibbs_step)
    throw Error(fmt::format("{} = {}: only a model whose gradient Gibbs-samples latent variables (capability "
                            "latent-gibbs-step) has a random full gradient to average; this one's is exact",
                            section.describe("centre_passes"), parameters.centre_passes));
  if (parameters.centre) {
    if (parameters.centre->size() != model.dimension())
      throw Error(fmt::format("{}: {} number(s) given; the model has {} parameters", section.describe("centre"),
                              parameters.centre->size(), model.dimension()));
    for (const char* key : {"centring", "sgd_iterations", "sgd_schedule", "sgd_step_size", "sgd_decay_b", "sgd_decay_c"})
      if (section.contains(key))
        throw Error(fmt::format("{}: not used when {}.centre is given (there is no centring phase)", section.describe(key),
                                section.section()));
  }
  return parameters;
}

const FieldTable<SvrgParameters>& SvrgParameters::fields() {
  static const FieldTable<SvrgParameters> table = concat<SvrgParameters>(
      {nested<SvrgParameters>(&SvrgParameters::batches, ItemSamplingParameters::fields()),
       estimator_parts::snapshot_fields()});
  return table;
}

SvrgParameters SvrgParameters::from_settings(SectionReader section, const Model& model) {
  SvrgParameters start{.batches = ItemSamplingParameters::from_settings(section, model)};
  start.period = estimator_parts::one_pass(model, *start.batches.batch_size);
  return read_fields_from(estimator_parts::snapshot_fields(), section, start);
}

}  // namespace sgmcmc
