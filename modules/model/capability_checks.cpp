// The checks of a model's optional capabilities (per-item, sparse and GLM gradients, Lipschitz
// bounds, the Gibbs step's stream, positive parameters, the float gradient), one function each; a
// capability the model does not declare is skipped (capability_checks pairs each with its flag).
module;
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
module sgmcmc.model_checks;

namespace sgmcmc::model_check_parts {

/// The float chain's gradient (Model::scaled_gradient_float, capability float-gradient) at each
/// probe point rounded to float, against the double interface at the same point: scale ·
/// Σ_k ∇f_{items[k]} + ∇f_0 with scale 3 (a minibatch's N/n). Relative tolerance 1e-4: a batch
/// summed in float rounds at ~1e-7 per term, while a wrong scale, a missing prior term or a sign
/// is off by O(1). Every coordinate must be overwritten (the output starts as NaN).
CheckOutcome float_gradient_check(const Probe& probe) {
  const std::string name = "float gradient (scaled_gradient_float) equals scale × the batch gradient + the prior's, to 1e-4";
  if (!probe.capabilities.float_gradient) return skipped(name, "not declared");
  constexpr double scale = 3.0;
  double ratio = 0.0;
  std::string detail = item_list(probe);
  for (std::size_t p = 0; p < probe.points.size(); ++p) {
    const std::vector<float> theta_float(probe.points[p].begin(), probe.points[p].end());
    const Vector theta(theta_float.begin(), theta_float.end());
    Vector expected = probe.gradient(theta, probe.items);
    for (double& g : expected) g *= scale;
    probe.model->add_prior_gradient_given(theta, expected, *probe.workspace);
    std::vector<float> got(theta.size(), std::numeric_limits<float>::quiet_NaN());
    probe.model->scaled_gradient_float(theta_float, probe.items, scale, got, *probe.workspace);
    if (!std::all_of(got.begin(), got.end(), [](float g) { return std::isfinite(g); }))
      return compare(name, INFINITY, fmt::format("point {}: a coordinate left unset or not finite", p + 1));
    const double here = worst(expected, Vector(got.begin(), got.end()), 1e-4);
    if (here > ratio) ratio = here, detail = fmt::format("point {}, {}", p + 1, item_list(probe));
  }
  return compare(name, ratio, detail);
}

Vector single_item_gradient(const Probe& probe, std::size_t k) {
  return probe.gradient(probe.points.front(), std::span(probe.items).subspan(k, 1));
}

CheckOutcome per_item_check(const Probe& probe, const std::string& name) {
  const Vector& theta = probe.points.front();
  const std::size_t d = theta.size(), n = probe.items.size();
  Vector rows(n * d);
  probe.model->item_gradients(theta, probe.items, rows, *probe.workspace);
  double ratio = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto row = rows.begin() + static_cast<std::ptrdiff_t>(k * d);
    ratio = std::max(ratio, worst(Vector(row, row + static_cast<std::ptrdiff_t>(d)), single_item_gradient(probe, k)));
  }
  return compare(name, ratio, item_list(probe));
}

CheckOutcome sparse_check(const Probe& probe, const std::string& name) {
  const Vector& theta = probe.points.front();
  const std::size_t d = theta.size(), n = probe.items.size(), s = probe.model->item_gradient_support_size();
  std::vector<std::size_t> support(n * s);
  Vector values(n * s);
  probe.model->item_gradient_support(probe.items, support);
  probe.model->sparse_item_gradients(theta, probe.items, values, *probe.workspace);
  double ratio = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    Vector scattered(d, 0.0);
    for (std::size_t j = 0; j < s; ++j) {
      if (support[k * s + j] >= d) {
        ratio = INFINITY;  // a support outside θ
        continue;
      }
      scattered[support[k * s + j]] += values[k * s + j];
    }
    ratio = std::max(ratio, worst(scattered, single_item_gradient(probe, k)));
  }
  return compare(name, ratio, item_list(probe));
}

CheckOutcome glm_check(const Probe& probe, const std::string& name) {
  const Vector& theta = probe.points.front();
  Vector scalars(probe.items.size()), from_glm(theta.size(), 0.0);
  probe.model->glm_scalars(theta, probe.items, scalars, *probe.workspace);
  probe.model->add_scaled_features(probe.items, scalars, from_glm);
  return compare(name, worst(from_glm, probe.gradient(theta, probe.items)), item_list(probe));
}

/// Observed slope ‖∇f_i(θ_a) - ∇f_i(θ_b)‖ / ‖θ_a - θ_b‖ over L_i, between each pair of probe
/// points: at most 1 (up to rounding) when the bounds hold.
CheckOutcome lipschitz_check(const Probe& probe, const std::string& name) {
  Vector bounds(probe.model->num_items());
  probe.model->item_lipschitz_bounds(bounds);
  const auto& points = probe.points;
  double ratio = 0.0;
  std::string detail;
  for (std::size_t k = 0; k < probe.items.size(); ++k) {
    const auto item = std::span(probe.items).subspan(k, 1);
    for (std::size_t a = 0; a < points.size(); ++a)
      for (std::size_t b = a + 1; b < points.size(); ++b) {
        const Vector ga = probe.gradient(points[a], item), gb = probe.gradient(points[b], item);
        double gradient_change = 0.0, step = 0.0;
        for (std::size_t j = 0; j < ga.size(); ++j) {
          gradient_change += (ga[j] - gb[j]) * (ga[j] - gb[j]);
          step += (points[a][j] - points[b][j]) * (points[a][j] - points[b][j]);
        }
        const double slope = std::sqrt(gradient_change / step), bound = bounds[item[0]];
        const double r = bound >= 0.0 && std::isfinite(bound) ? slope / (bound * (1 + 1e-9) + 1e-300) : INFINITY;
        if (r > ratio) ratio = r, detail = fmt::format("item {}: slope {:.6g}, L_i {:.6g}", item[0], slope, bound);
      }
  }
  return compare(name, ratio, detail);
}

/// A model without a Gibbs step must not draw from the stream; one with it must draw only
/// from it (same stream, same gradient).
CheckOutcome stream_check(const Probe& probe) {
  const Vector& theta = probe.points.front();
  const Vector batch = probe.gradient(theta, probe.items);
  Vector other(theta.size(), 0.0);
  Rng different(999, 1);
  probe.model->add_data_gradient(theta, Batch{probe.items}, other, *probe.workspace, different);
  if (probe.capabilities.latent_gibbs_step)
    return compare("Gibbs step: the same stream gives the same gradient", worst(probe.gradient(theta, probe.items), batch),
                   "two calls from one stream state");
  return compare("the gradient does not depend on the random stream (no latent-gibbs-step declared)", worst(other, batch),
                 "two calls from different streams");
}

std::vector<CheckOutcome> capability_checks(const Probe& probe) {
  struct DeclaredCheck {
    bool Capabilities::*declared;
    std::string name;
    CheckOutcome (*run)(const Probe&, const std::string&);
  };
  const DeclaredCheck declared_checks[] = {
      {&Capabilities::per_item_gradients, "per-item gradients (item_gradients) equal single-item batches", per_item_check},
      {&Capabilities::sparse_item_gradients,
       "sparse item gradients, scattered onto their supports, equal single-item batches", sparse_check},
      {&Capabilities::glm_gradients, "GLM form s_i·x_i reproduces the batch gradient", glm_check},
      {&Capabilities::lipschitz_bounds,
       "Lipschitz bounds: ‖∇f_i(θ) - ∇f_i(θ')‖ ≤ L_i‖θ - θ'‖ between the random points", lipschitz_check},
  };
  std::vector<CheckOutcome> outcomes;
  for (const auto& check : declared_checks)
    outcomes.push_back(probe.capabilities.*check.declared ? check.run(probe, check.name) : skipped(check.name, "not declared"));
  outcomes.push_back(stream_check(probe));
  if (probe.capabilities.positive_parameters) {
    Vector start(probe.model->dimension());
    Rng rng(1, 1);
    probe.model->initial_point(start, rng);
    const bool positive = std::all_of(start.begin(), start.end(), [](double x) { return x > 0.0; });
    outcomes.push_back({"positive parameters: the initial point is positive",
                        positive ? CheckOutcome::Status::passed : CheckOutcome::Status::failed, ""});
  }
  outcomes.push_back(float_gradient_check(probe));
  return outcomes;
}

}  // namespace sgmcmc::model_check_parts
