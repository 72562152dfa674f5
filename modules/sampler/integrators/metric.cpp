// The implementation of the partition metric.cppm: the Cholesky factorisations, the metric's
// products and draws and the Fisher mass.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>
#include <fmt/format.h>
module sgmcmc.integrators;
import sgmcmc.error;
import sgmcmc.model;
import sgmcmc.data_parallel;
import sgmcmc.state;
import sgmcmc.settings;
import sgmcmc.fields;

namespace sgmcmc {

// Not exported; a named namespace (see integrators.cppm on clang 19's internal linkage).
namespace metric_parts {

/// The lower Cholesky factor L of a symmetric positive definite d × d matrix A = LLᵀ (row-major),
/// or nullopt with the first pivot that is not positive.
std::optional<std::vector<double>> cholesky(std::span<const double> a, std::size_t d, std::size_t& failed_row) {
  std::vector<double> l(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      double sum = a[i * d + j];
      for (std::size_t k = 0; k < j; ++k) sum -= l[i * d + k] * l[j * d + k];
      if (i == j) {
        if (!(sum > 0.0)) {
          failed_row = i;
          return std::nullopt;
        }
        l[i * d + i] = std::sqrt(sum);
      } else {
        l[i * d + j] = sum / l[j * d + j];
      }
    }
  }
  return l;
}

/// A⁻¹ from A's lower Cholesky factor L: column by column, L y = e_c, then Lᵀ x = y.
std::vector<double> inverse_from_cholesky(std::span<const double> l, std::size_t d) {
  std::vector<double> inverse(d * d), column(d);
  for (std::size_t c = 0; c < d; ++c) {
    std::fill(column.begin(), column.end(), 0.0);
    column[c] = 1.0;
    for (std::size_t i = 0; i < d; ++i) {
      for (std::size_t k = 0; k < i; ++k) column[i] -= l[i * d + k] * column[k];
      column[i] /= l[i * d + i];
    }
    for (std::size_t i = d; i-- > 0;) {
      for (std::size_t k = i + 1; k < d; ++k) column[i] -= l[k * d + i] * column[k];
      column[i] /= l[i * d + i];
    }
    for (std::size_t i = 0; i < d; ++i) inverse[i * d + c] = column[i];
  }
  return inverse;
}

/// out = Lᵀv for a lower L.
void lower_transposed_times(std::span<const double> l, std::span<const double> v, std::span<double> out) {
  const std::size_t d = v.size();
  for (std::size_t j = 0; j < d; ++j) {
    double sum = 0.0;
    for (std::size_t i = j; i < d; ++i) sum += l[i * d + j] * v[i];
    out[j] = sum;
  }
}

}  // namespace metric_parts

std::string dense_mass_problem(std::span<const double> m, std::size_t d) {
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (m[i * d + j] != m[j * d + i])
        return fmt::format("is not symmetric: entry ({}, {}) is {} and ({}, {}) is {} (a mass matrix is symmetric "
                           "positive definite)",
                           i + 1, j + 1, m[i * d + j], j + 1, i + 1, m[j * d + i]);
  std::size_t row = 0;
  const auto l = metric_parts::cholesky(m, d, row);
  if (!l)
    return fmt::format("is not positive definite (its Cholesky factorisation fails at row {}): a mass matrix is "
                       "symmetric positive definite",
                       row + 1);
  if (!metric_parts::cholesky(metric_parts::inverse_from_cholesky(*l, d), d, row))
    return fmt::format("is too badly conditioned to invert in double precision (the factorisation of its inverse "
                       "fails at row {})",
                       row + 1);
  return "";
}

Metric::Metric(const Mass& mass) : dense_(mass.dense), fisher_(mass.fisher), ridge_(mass.ridge), given_(mass.values) {
  check_fields(mass_fields(), mass, "integrator");
}

namespace {

/// mass: a number, an array, or "fisher". Read as number_or_numbers, so one number stays one in
/// the manifest; a dense matrix's entries off the diagonal may be negative (the metric checks the
/// matrix once d is known, check_metric).
Field<Mass> mass_field() {
  Field<Mass> field;
  field.shown = {"mass", default_text(Mass{}.values.front()), "> 0",
                 "M: one number, d (one per coordinate), d² with metric = dense, or \"fisher\"; the preconditioner M⁻¹ "
                 "of sgld and mala, the kinetic energy ½mᵀM⁻¹m of the others"};
  field.read = [](SectionReader section, Mass& mass) {
    mass.fisher = section.contains("mass") && std::holds_alternative<std::string>(section.entries().at("mass").value);
    if (!mass.fisher) {
      mass.values = section.number_or_numbers("mass", mass.values.front());
      return;
    }
    // The mass stays 1 where the chain starts; prepare() computes the Fisher mass there.
    if (const std::string given = section.text("mass", ""); given != "fisher")
      throw Error(fmt::format("{}: expected a number, an array of numbers or \"fisher\" (the empirical Fisher "
                              "information at the chain's start), found \"{}\"",
                              section.describe("mass"), given));
  };
  field.problem = [](const Mass& mass) -> std::string {
    if (mass.values.empty()) return "expected at least one number, found none";
    if (mass.dense || mass.fisher) return "";
    for (std::size_t j = 0; j < mass.values.size(); ++j)
      if (!(mass.values[j] > 0.0))
        return mass.values.size() == 1 ? fmt::format("expected a number > 0, found {}", mass.values[j])
                                        : fmt::format("expected numbers > 0, found {} at position {}", mass.values[j], j + 1);
    return "";
  };
  return field;
}

/// mass_ridge: read only with mass = "fisher" (read before it), refused when set without it.
Field<Mass> mass_ridge_field() {
  Field<Mass> field = number_field("mass_ridge", &Mass::ridge, "with mass = \"fisher\": r, added to its diagonal", positive());
  field.read = [read = field.read](SectionReader section, Mass& mass) {
    if (!mass.fisher && section.contains("mass_ridge"))
      throw Error(fmt::format("{}: mass_ridge is the ridge of mass = \"fisher\", and the mass here is given",
                              section.describe("mass_ridge")));
    read(section, mass);
  };
  return field;
}

}  // namespace

const FieldTable<Mass>& mass_fields() {
  static const FieldTable<Mass> table = {
      choice_field("metric", &Mass::dense, {{"diagonal", false}, {"dense", true}},
                   "diagonal: a mass per coordinate; dense: a full mass matrix, mass then d² numbers"),
      mass_field(), mass_ridge_field()};
  return table;
}

const FieldTable<AdaptationWindows>& adaptation_window_fields() {
  using W = AdaptationWindows;
  static const FieldTable<W> table = {
      integer_field("adapt_init_buffer", &W::init_buffer, "with adapt_mass: the first iterations, before any window",
                    at_least(0)),
      integer_field("adapt_window", &W::window, "with adapt_mass: the first slow window; each next is twice as long",
                    at_least(1)),
      integer_field("adapt_term_buffer", &W::term_buffer, "with adapt_mass: the last iterations, after the last window",
                    at_least(0))};
  return table;
}

void Metric::resize(std::size_t dimension) {
  dimension_ = dimension;
  const std::size_t count = given_.size();
  if (count != 1 && count != dimension && !(dense_ && count == dimension * dimension))
    throw Error(fmt::format("integrator: mass has {} numbers, the model has d = {} coordinates (give one number for "
                            "every coordinate, or d{})",
                            count, dimension, dense_ ? ", or d² with metric = \"dense\"" : ""));
  if (!dense_) {
    set_diagonal(count == 1 ? std::vector<double>(dimension, given_[0]) : given_);
    return;
  }
  std::vector<double> m(dimension * dimension, 0.0);
  for (std::size_t i = 0; i < dimension; ++i)
    for (std::size_t j = 0; j < dimension; ++j)
      m[i * dimension + j] = count == dimension * dimension ? given_[i * dimension + j]
                             : i == j                      ? given_[count == 1 ? 0 : i]
                                                           : 0.0;
  if (const std::string problem = dense_mass_problem(m, dimension); !problem.empty())
    throw Error("integrator: mass " + problem);
  std::size_t row = 0;
  const auto l = metric_parts::cholesky(m, dimension, row);
  set_inverse_factor(*metric_parts::cholesky(metric_parts::inverse_from_cholesky(*l, dimension), dimension, row));
}

void Metric::set_diagonal(std::vector<double> values) {
  values_ = std::move(values);
  const std::size_t d = values_.size();
  inverse_.resize(d);
  sqrt_.resize(d);
  inverse_sqrt_.resize(d);
  for (std::size_t j = 0; j < d; ++j) {
    inverse_[j] = 1.0 / values_[j];
    sqrt_[j] = std::sqrt(values_[j]);
    inverse_sqrt_[j] = 1.0 / sqrt_[j];
  }
}

void Metric::set_inverse_factor(std::vector<double> factor) {
  factor_ = std::move(factor);
  scratch_.assign(dimension_, 0.0);
}

void Metric::times_inverse(std::span<const double> v, std::span<double> out) const {
  metric_parts::lower_transposed_times(factor_, v, scratch_);
  const std::size_t d = dimension_;
  for (std::size_t i = 0; i < d; ++i) {
    double sum = 0.0;
    for (std::size_t k = 0; k <= i; ++k) sum += factor_[i * d + k] * scratch_[k];
    out[i] = sum;
  }
}

double Metric::half_inverse_norm(std::span<const double> v) const {
  metric_parts::lower_transposed_times(factor_, v, scratch_);
  double sum = 0.0;
  for (double value : scratch_) sum += value * value;
  return 0.5 * sum;
}

void Metric::correlate_as_mass(std::span<double> xi) const {
  const std::size_t d = dimension_;  // Kᵀy = ξ by back substitution (Kᵀ is upper)
  for (std::size_t i = d; i-- > 0;) {
    for (std::size_t k = i + 1; k < d; ++k) xi[i] -= factor_[k * d + i] * xi[k];
    xi[i] /= factor_[i * d + i];
  }
}

void Metric::correlate_as_inverse(std::span<double> xi) const {
  const std::size_t d = dimension_;  // Kξ from the last row up, so each ξ_k is read before it is replaced
  for (std::size_t i = d; i-- > 0;) {
    double sum = 0.0;
    for (std::size_t k = 0; k <= i; ++k) sum += factor_[i * d + k] * xi[k];
    xi[i] = sum;
  }
}

void Metric::adapt(std::vector<double> adapted, std::span<double> momentum) {
  if (!dense_) {
    const std::vector<double> old_sqrt = sqrt_;
    set_diagonal(std::move(adapted));
    for (std::size_t j = 0; j < momentum.size(); ++j) momentum[j] *= sqrt_[j] / old_sqrt[j];
    return;
  }
  std::size_t row = 0;
  auto factor = metric_parts::cholesky(adapted, dimension_, row);
  if (factor && momentum.empty()) set_inverse_factor(std::move(*factor));  // sgld: no momentum to carry
  // The regularised covariance has every eigenvalue >= 10⁻³ · 5/(n + 5) > 0: a failure here is a
  // numerical one, which keeps the metric in use rather than stopping the chain.
  if (!factor || momentum.empty()) return;
  std::vector<double> whitened(momentum.size());
  metric_parts::lower_transposed_times(factor_, momentum, whitened);  // K_oldᵀ m ~ N(0, T I)
  set_inverse_factor(std::move(*factor));
  correlate_as_mass(whitened);  // K_new⁻ᵀ (K_oldᵀ m) ~ N(0, T M_new)
  std::copy(whitened.begin(), whitened.end(), momentum.begin());
}

void Metric::set_mass(std::span<const double> m, std::span<double> momentum) {
  const std::string source = fisher_ ? "integrator: the Fisher mass (mass = \"fisher\") " : "integrator: mass ";
  if (!dense_) {
    for (double value : m)
      if (!(value > 0.0 && std::isfinite(value))) throw Error(fmt::format("{}has an entry {}, not a positive number", source, value));
    adapt(std::vector<double>(m.begin(), m.end()), momentum);
    return;
  }
  // Checked here, since adapt() keeps the metric in use when M⁻¹ does not factor.
  if (const std::string problem = dense_mass_problem(m, dimension_); !problem.empty()) throw Error(source + problem);
  std::size_t row = 0;
  adapt(metric_parts::inverse_from_cholesky(*metric_parts::cholesky(m, dimension_, row), dimension_), momentum);  // M⁻¹
}

std::vector<double> Metric::mass() const {
  if (!dense_) return values_;
  // M = (KKᵀ)⁻¹; KKᵀ's Cholesky factor is K itself. The lower triangle is mirrored, so that the
  // matrix is exactly symmetric and reads back as integrator.mass.
  std::vector<double> m = metric_parts::inverse_from_cholesky(factor_, dimension_);
  for (std::size_t i = 0; i < dimension_; ++i)
    for (std::size_t j = i + 1; j < dimension_; ++j) m[i * dimension_ + j] = m[j * dimension_ + i];
  return m;
}

void Metric::save(StateWriter& out) const {
  if (dense_) out.numbers(factor_);
  else out.numbers(mass());
}

void Metric::restore(StateReader& in) {
  std::vector<double> numbers;  // resize() fixed d; a checkpoint's must match
  in.numbers(numbers, dense_ ? dimension_ * dimension_ : dimension_);
  if (dense_) set_inverse_factor(std::move(numbers));
  else set_diagonal(std::move(numbers));
}

std::vector<double> fisher_mass(const Model& chain_model, std::span<const double> theta, Workspace& workspace, bool dense,
                                double ridge) {
  // Under run.data_parallel each rank sums over the rows it holds, with the undecorated model
  // (whose per-item gradients the decorator hides from the chain), and the ranks' sums are added.
  const auto [local, held] = local_rows(chain_model);
  const Model& model = *local;
  const std::size_t d = model.dimension(), first_item = held.first, items = held.end;
  const bool sparse = !model.capabilities().per_item_gradients;
  const std::size_t support = sparse ? model.item_gradient_support_size() : d;
  constexpr std::size_t chunk = 256;  // items per call: the models' per-item loops amortise their set-up
  std::vector<double> m(dense ? d * d : d, 0.0), values(chunk * support);
  std::vector<std::size_t> batch, coordinates(sparse ? chunk * support : 0);
  for (std::size_t first = first_item; first < items; first += chunk) {
    batch.resize(std::min(chunk, items - first));
    for (std::size_t k = 0; k < batch.size(); ++k) batch[k] = first + k;
    const std::span<double> rows(values.data(), batch.size() * support);
    if (sparse) {
      model.item_gradient_support(batch, std::span(coordinates.data(), batch.size() * support));
      model.sparse_item_gradients(theta, batch, rows, workspace);
    } else {
      model.item_gradients(theta, batch, rows, workspace);
    }
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const double* g = &rows[k * support];
      const auto coordinate = [&](std::size_t a) { return sparse ? coordinates[k * support + a] : a; };
      for (std::size_t a = 0; a < support; ++a) {
        if (!dense) {
          m[coordinate(a)] += g[a] * g[a];
          continue;
        }
        for (std::size_t b = 0; b < support; ++b) m[coordinate(a) * d + coordinate(b)] += g[a] * g[b];
      }
    }
  }
  sum_over_ranks(chain_model, m);
  for (std::size_t j = 0; j < d; ++j) m[dense ? j * d + j : j] += ridge;
  return m;
}

}  // namespace sgmcmc
