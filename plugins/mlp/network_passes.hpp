// The definitions of network.hpp's passes, included by the two units that instantiate them:
// network.cpp (double) and network_float.cpp (float). See network.cpp for why they are apart.
#pragma once
#include "network.hpp"

#include <algorithm>
#include <cmath>

#include "log_noise_sd.hpp"
#include <type_traits>

// The passes' element-wise loops (tanh, softmax, the adjoints) compiled twice, for x86-64-v3
// (AVX2 and FMA: 4 doubles at a time, libmvec's AVX2 exp) and for the baseline, the copy picked
// once by the loader from the CPU (an ifunc), so that a machine's runs stay bit-for-bit
// reproducible: 64 → 56 µs per digits gradient. The BLAS calls pick their own kernels.
#if defined(__x86_64__)
#define MLP_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MLP_CPU_CLONES
#endif

namespace mlp {

namespace layers = sgmcmc::layers;

template <class Real>
MLP_CPU_CLONES
double Network<Real>::batch(std::span<const double> theta, const Rows<Real>& rows, std::span<const std::size_t> items,
                            std::span<const double> weights, std::span<double> gradient, Scratch<Real>& s) const {
  const Real* parameters = as_real(theta, s);
  Real* accumulator = gradient_accumulator(gradient, s);
  set_noise_sd(theta, s);
  const double total = passes(parameters, rows, items, weights, gradient.empty() ? nullptr : accumulator, s);
  if constexpr (!std::is_same_v<Real, double>)
    if (!gradient.empty())
      for (std::size_t j = 0; j < net_.dimension; ++j) gradient[j] += s.gradient[j];
  if (head_.sampled_noise && !gradient.empty()) gradient[net_.dimension] += s.log_noise_sd_adjoint;
  return total;
}

/// The passes over rows `items`, `chunk` rows at a time: Σ_k w_k f_{items[k]}, and, unless
/// `accumulator` is null, Σ_k w_k ∇f_{items[k]} of the layers' parameters added to it (in Real).
template <class Real>
MLP_CPU_CLONES
double Network<Real>::passes(const Real* parameters, const Rows<Real>& rows, std::span<const std::size_t> items,
                             std::span<const double> weights, Real* accumulator, Scratch<Real>& s) const {
  double total = 0.0;
  for (std::size_t begin = 0; begin < items.size(); begin += chunk) {
    const std::size_t n = std::min(chunk, items.size() - begin);
    gather(rows, items.subspan(begin, n), weights.empty() ? weights : weights.subspan(begin, n), s);
    forward(parameters, n, s);
    total += potential(n, accumulator != nullptr, s);
    if (!accumulator) continue;
    backpropagate(parameters, n, s);
    for (std::size_t l = 0; l < net_.layers(); ++l)
      layers::dense_parameter_adjoint<Real>(layer_input(l, n, s), adjoint(l, n, s), accumulator + net_.weights_at(l),
                                            accumulator + net_.bias_at(l));
  }
  return total;
}

template <class Real>
void Network<Real>::gradient_in_storage(std::span<const Real> theta, const Rows<Real>& rows,
                                        std::span<const std::size_t> items, std::span<Real> gradient,
                                        Scratch<Real>& s) const {
  s.noise_sd = head_.noise_sd;
  s.log_noise_sd_adjoint = 0.0;
  std::fill(gradient.begin(), gradient.end(), Real(0));
  passes(theta.data(), rows, items, {}, gradient.data(), s);
}

template <class Real>
MLP_CPU_CLONES
void Network<Real>::item_gradients(std::span<const double> theta, const Rows<Real>& rows,
                                   std::span<const std::size_t> items, std::span<double> out, Scratch<Real>& s) const {
  const Real* parameters = as_real(theta, s);
  set_noise_sd(theta, s);
  const std::size_t dimension = this->dimension();
  for (std::size_t begin = 0; begin < items.size(); begin += chunk) {
    const std::size_t n = std::min(chunk, items.size() - begin);
    gather(rows, items.subspan(begin, n), {}, s);
    forward(parameters, n, s);
    potential(n, true, s);
    backpropagate(parameters, n, s);
    for (std::size_t k = 0; k < n; ++k) {
      double* row = &out[(begin + k) * dimension];
      for (std::size_t l = 0; l < net_.layers(); ++l) {
        const Real* input = layer_input(l, n, s).row(k);
        const Real* d = adjoint(l, n, s).row(k);
        const std::size_t width = net_.outputs(l);
        double* w = row + net_.weights_at(l);
        for (std::size_t i = 0; i < net_.inputs(l); ++i)
          for (std::size_t j = 0; j < width; ++j) w[i * width + j] = static_cast<double>(input[i]) * d[j];
        std::copy_n(d, width, row + net_.bias_at(l));
      }
      if (head_.sampled_noise)
        row[net_.dimension] = regression::gaussian_log_noise_sd_derivative(
            s.y[k] - static_cast<double>(output(n, s)(k, 0)), s.noise_sd);
    }
  }
}

template <class Real>
Matrix<const Real> Network<Real>::outputs(std::span<const double> theta, const Rows<Real>& rows,
                                          std::span<const std::size_t> items, Scratch<Real>& s) const {
  gather(rows, items, {}, s);
  set_noise_sd(theta, s);
  forward(as_real(theta, s), items.size(), s);
  return output(items.size(), s);
}

template <class Real>
double Network<Real>::row_potential(Matrix<const Real> out, std::size_t k, const Scratch<Real>& s) const {
  const Matrix<const Real> row(out.row(k), 1, out.cols);
  switch (head_.family) {
    case Family::categorical: return layers::categorical_potential<Real>(row, std::span(&s.classes[k], 1), {}, {});
    case Family::bernoulli: return layers::bernoulli_logit_potential<Real>(row, std::span(&s.y[k], 1), {}, {});
    case Family::gaussian: return layers::gaussian_potential<Real>(row, std::span(&s.y[k], 1), s.noise_sd, {}, {});
  }
  return 0.0;
}

/// The layers' weights and biases in the storage type: θ itself for double, a converted copy for
/// float (without a sampled u, which stays double).
template <class Real>
const Real* Network<Real>::as_real(std::span<const double> theta, Scratch<Real>& s) const {
  if constexpr (std::is_same_v<Real, double>) {
    return theta.data();
  } else {
    std::copy_n(theta.begin(), net_.dimension, s.theta.begin());
    return s.theta.data();
  }
}

/// σ at θ for the gaussian head: e^u when sampled, else the configured one; the u adjoint zeroed.
template <class Real>
void Network<Real>::set_noise_sd(std::span<const double> theta, Scratch<Real>& s) const {
  s.noise_sd = head_.sampled_noise ? std::exp(theta[net_.dimension]) : head_.noise_sd;
  s.log_noise_sd_adjoint = 0.0;
}

/// Where dense_parameter_adjoint adds: the gradient itself for double, a zeroed float buffer
/// (added to the gradient at the end of the batch) for float.
template <class Real>
Real* Network<Real>::gradient_accumulator(std::span<double> gradient, Scratch<Real>& s) const {
  if constexpr (std::is_same_v<Real, double>) {
    return gradient.data();
  } else {
    std::fill(s.gradient.begin(), s.gradient.end(), Real(0));
    return s.gradient.data();
  }
}

/// The rows `items` into the scratch's input block, with their responses and weights.
template <class Real>
void Network<Real>::gather(const Rows<Real>& rows, std::span<const std::size_t> items, std::span<const double> weights,
                           Scratch<Real>& s) const {
  const std::size_t features = rows.features;
  for (std::size_t k = 0; k < items.size(); ++k) {
    std::copy_n(&rows.x[items[k] * features], features, &s.input[k * features]);
    if (head_.family == Family::categorical)
      s.classes[k] = rows.classes[items[k]];
    else
      s.y[k] = rows.y[items[k]];
    s.weights[k] = weights.empty() ? 1.0 : weights[k];
  }
}

/// A_{l-1}: the gathered rows for the first layer, the activations below it for the others.
template <class Real>
Matrix<const Real> Network<Real>::layer_input(std::size_t l, std::size_t n, const Scratch<Real>& s) const {
  return l == 0 ? Matrix<const Real>(s.input.data(), n, net_.inputs(0))
                : Matrix<const Real>(s.a[l - 1].data(), n, net_.inputs(l));
}

/// D_l = ∂U/∂Z_l of the chunk.
template <class Real>
Matrix<Real> Network<Real>::adjoint(std::size_t l, std::size_t n, Scratch<Real>& s) const {
  return {s.d[l].data(), n, net_.outputs(l)};
}

template <class Real>
Matrix<const Real> Network<Real>::output(std::size_t n, const Scratch<Real>& s) const {
  return {s.z.back().data(), n, net_.outputs(net_.layers() - 1)};
}

/// Z_l = A_{l-1} W_l + 1 b_lᵀ, A_l = φ(Z_l) for the hidden layers; the last layer's Z is the output.
template <class Real>
MLP_CPU_CLONES
void Network<Real>::forward(const Real* parameters, std::size_t n, Scratch<Real>& s) const {
  for (std::size_t l = 0; l < net_.layers(); ++l) {
    Matrix<Real> z(s.z[l].data(), n, net_.outputs(l));
    layers::dense_forward<Real>(layer_input(l, n, s), parameters + net_.weights_at(l), parameters + net_.bias_at(l), z);
    if (l + 1 == net_.layers()) continue;  // the output layer has no activation
    if constexpr (std::is_same_v<Real, float>)
      if (net_.activation == Activation::tanh) {
        tanh_through_double(z.data, s.a[l].data(), n * z.cols);
        continue;
      }
    layers::activate(net_.activation, z.data, s.a[l].data(), n * z.cols);
  }
}

/// Σ_k w_k f_k over the chunk, and D_L = ∂/∂Z_L of it when `adjoint_wanted`.
template <class Real>
MLP_CPU_CLONES
double Network<Real>::potential(std::size_t n, bool adjoint_wanted, Scratch<Real>& s) const {
  const std::size_t last = net_.layers() - 1;
  const Matrix<Real> d = adjoint_wanted ? adjoint(last, n, s) : Matrix<Real>();
  const std::span<const double> weights(s.weights.data(), n);
  switch (head_.family) {
    case Family::categorical:
      return layers::categorical_potential<Real>(output(n, s), std::span(s.classes.data(), n), weights, d);
    case Family::bernoulli:
      return layers::bernoulli_logit_potential<Real>(output(n, s), std::span(s.y.data(), n), weights, d);
    case Family::gaussian: {
      const double total = layers::gaussian_potential<Real>(output(n, s), std::span(s.y.data(), n), s.noise_sd, weights, d);
      if (head_.sampled_noise && adjoint_wanted) add_log_noise_sd_adjoint(n, s);
      return total;
    }
  }
  return 0.0;
}

/// Σ_k w_k ∂f_k/∂u over the chunk into the scratch's u adjoint, u = log σ (log_noise_sd.hpp).
template <class Real>
void Network<Real>::add_log_noise_sd_adjoint(std::size_t n, Scratch<Real>& s) const {
  const Matrix<const Real> out = output(n, s);
  for (std::size_t k = 0; k < n; ++k)
    s.log_noise_sd_adjoint +=
        s.weights[k] * regression::gaussian_log_noise_sd_derivative(s.y[k] - static_cast<double>(out(k, 0)), s.noise_sd);
}

/// D_{l-1} = (D_l W_lᵀ) ⊙ φ'(Z_{l-1}), from the head's D_L down to the first hidden layer.
template <class Real>
MLP_CPU_CLONES
void Network<Real>::backpropagate(const Real* parameters, std::size_t n, Scratch<Real>& s) const {
  for (std::size_t l = net_.layers() - 1; l > 0; --l) {
    Matrix<Real> below = adjoint(l - 1, n, s);
    layers::dense_input_adjoint<Real>(parameters + net_.weights_at(l), adjoint(l, n, s), below);
    layers::activation_backward(net_.activation, s.z[l - 1].data(), s.a[l - 1].data(), below.data, n * below.cols);
  }
}

}  // namespace mlp
