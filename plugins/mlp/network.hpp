// The network of the `mlp` plugin: its shape, where each layer's parameters sit in θ, and the
// passes over a batch written with the SDK's blocks (sgmcmc/layers.hpp): one forward pass, the
// output head's potential and adjoint, one backward pass; every layer a matrix product over the
// whole batch. README.md beside this file has the equations.
#pragma once
#include <sgmcmc/layers.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace mlp {

using sgmcmc::layers::Activation;
using sgmcmc::layers::Matrix;

enum class Family { categorical, bernoulli, gaussian };

/// Layer l (0-based here, l + 1 in parameter names) maps widths[l] inputs to widths[l + 1]
/// outputs; θ holds W_l (widths[l] × widths[l + 1], row-major) then b_l, layer after layer.
struct Architecture {
  std::vector<std::size_t> widths;  // features, the hidden widths, the outputs
  Activation activation = Activation::tanh;
  std::vector<std::size_t> offsets;  // where W_l starts in θ; b_l follows it
  std::size_t dimension = 0;

  Architecture() = default;
  Architecture(std::vector<std::size_t> widths_, Activation activation_)
      : widths(std::move(widths_)), activation(activation_) {
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      offsets.push_back(dimension);
      dimension += (widths[l] + 1) * widths[l + 1];
    }
  }
  std::size_t layers() const { return widths.size() - 1; }
  std::size_t inputs(std::size_t l) const { return widths[l]; }
  std::size_t outputs(std::size_t l) const { return widths[l + 1]; }
  std::size_t weights_at(std::size_t l) const { return offsets[l]; }
  std::size_t bias_at(std::size_t l) const { return offsets[l] + widths[l] * widths[l + 1]; }
};

/// Rows of a data set in the storage type: x row-major (rows × features) and the responses,
/// class indices for categorical, y ∈ {0, 1} for bernoulli, y for gaussian.
template <class Real>
struct Rows {
  std::vector<Real> x;
  std::size_t features = 0;
  std::vector<std::uint32_t> classes;  // categorical
  std::vector<double> y;               // bernoulli, gaussian
  std::size_t size() const { return features ? x.size() / features : 0; }
};

/// The likelihood of the output layer.
struct Head {
  Family family = Family::categorical;
  double noise_sd = 1.0;       // gaussian: σ, unless sampled
  bool sampled_noise = false;  // gaussian with model.noise_prior: θ ends with u = log σ
};

/// A chain's buffers for the passes, sized once for `chunk` rows: a batch of any size is
/// processed `chunk` rows at a time, so nothing is allocated per iteration.
template <class Real>
struct Scratch {
  std::size_t chunk = 0;
  std::vector<Real> input;                  // the chunk's rows, gathered
  std::vector<std::vector<Real>> z, a, d;   // per layer: pre-activations, activations, ∂U/∂Z
  std::vector<std::uint32_t> classes;       // the chunk's responses and weights
  std::vector<double> y, weights;
  std::vector<Real> theta, gradient;        // float storage: θ and the gradient's accumulator in Real
  double noise_sd = 1.0;                    // gaussian: σ at the θ of the last pass
  double log_noise_sd_adjoint = 0.0;        // sampled σ: Σ_k w_k ∂f_k/∂u of the pass so far

  Scratch(const Architecture& net, std::size_t chunk_) : chunk(chunk_), input(chunk_ * net.widths[0]) {
    for (std::size_t l = 0; l < net.layers(); ++l) {
      z.emplace_back(chunk * net.outputs(l));
      a.emplace_back(chunk * net.outputs(l));
      d.emplace_back(chunk * net.outputs(l));
    }
    classes.resize(chunk);
    y.resize(chunk);
    weights.resize(chunk);
    if constexpr (!std::is_same_v<Real, double>) {
      theta.resize(net.dimension);
      gradient.resize(net.dimension);
    }
  }
};

/// a ← tanh(z) for float storage, through double in blocks: the double loop vectorises with
/// libmvec's exp (network.cpp), which a loop widening float to double must not (network.cpp says why).
void tanh_through_double(const float* z, float* a, std::size_t n);

/// The forward and backward passes of one network over rows of a data set. Defined in
/// network_passes.hpp, instantiated apart in network.cpp (double: its loops vectorise with flags
/// a unit importing sgmcmc cannot take) and network_float.cpp (float).
template <class Real>
class Network {
public:
  static constexpr std::size_t chunk = 256;  // rows per pass: a full data pass of 60,000 rows needs no 60,000-row buffers

  Network(Architecture architecture, Head head) : net_(std::move(architecture)), head_(head) {}
  const Architecture& architecture() const { return net_; }
  /// θ's length: the layers' weights and biases, then u = log σ when the head samples σ.
  std::size_t dimension() const { return net_.dimension + (head_.sampled_noise ? 1 : 0); }
  const Head& head() const { return head_; }
  Scratch<Real> scratch() const { return Scratch<Real>(net_, chunk); }

  /// Σ_k w_k f_{items[k]}(θ) over rows `items` of `rows`; with a non-empty `gradient`, also
  /// gradient += Σ_k w_k ∇f_{items[k]}(θ). Empty `weights`: every w_k = 1. θ and the gradient
  /// have dimension() entries.
  double batch(std::span<const double> theta, const Rows<Real>& rows, std::span<const std::size_t> items,
               std::span<const double> weights, std::span<double> gradient, Scratch<Real>& s) const;

  /// gradient ← Σ_k ∇f_{items[k]}(θ) with θ and the gradient in the storage type, nothing
  /// converted (the float chain's entry, Model::scaled_gradient_float); a head without a sampled σ.
  void gradient_in_storage(std::span<const Real> theta, const Rows<Real>& rows, std::span<const std::size_t> items,
                           std::span<Real> gradient, Scratch<Real>& s) const;

  /// Row k of `out` (items.size() × dimension()) ← ∇f_{items[k]}(θ): the batch's forward and
  /// backward passes, then each item's outer products a_{l-1,k} d_{l,k}ᵀ written out (and
  /// ∂f_k/∂u when σ is sampled).
  void item_gradients(std::span<const double> theta, const Rows<Real>& rows, std::span<const std::size_t> items,
                      std::span<double> out, Scratch<Real>& s) const;

  /// The outputs (logits, or the gaussian mean) of rows `items` of `rows` (at most `chunk`), an
  /// items.size() × outputs block of the scratch; the rows' responses are gathered beside them.
  Matrix<const Real> outputs(std::span<const double> theta, const Rows<Real>& rows, std::span<const std::size_t> items,
                             Scratch<Real>& s) const;

  /// One row's f = -log p(y | output), its response taken from the scratch's row k (and σ from
  /// the scratch, set by the pass that made `out`).
  double row_potential(Matrix<const Real> out, std::size_t k, const Scratch<Real>& s) const;

private:
  double passes(const Real* parameters, const Rows<Real>& rows, std::span<const std::size_t> items,
                std::span<const double> weights, Real* accumulator, Scratch<Real>& s) const;
  const Real* as_real(std::span<const double> theta, Scratch<Real>& s) const;
  void set_noise_sd(std::span<const double> theta, Scratch<Real>& s) const;
  Real* gradient_accumulator(std::span<double> gradient, Scratch<Real>& s) const;
  void gather(const Rows<Real>& rows, std::span<const std::size_t> items, std::span<const double> weights,
              Scratch<Real>& s) const;
  Matrix<const Real> layer_input(std::size_t l, std::size_t n, const Scratch<Real>& s) const;
  Matrix<Real> adjoint(std::size_t l, std::size_t n, Scratch<Real>& s) const;
  Matrix<const Real> output(std::size_t n, const Scratch<Real>& s) const;
  void forward(const Real* parameters, std::size_t n, Scratch<Real>& s) const;
  double potential(std::size_t n, bool adjoint_wanted, Scratch<Real>& s) const;
  void add_log_noise_sd_adjoint(std::size_t n, Scratch<Real>& s) const;
  void backpropagate(const Real* parameters, std::size_t n, Scratch<Real>& s) const;

  Architecture net_;
  Head head_;
};

}  // namespace mlp
