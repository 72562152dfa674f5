// The GLM kernels' bodies (glm_kernels.hpp), compiled once per instruction set (glm_kernels_x86_64_v3.cpp and
// glm_kernels_baseline.cpp define REGRESSION_ISA and include this; glm_kernels.cpp picks one
// when the plugin loads), and once per likelihood: the table at the end, in the order of the
// Likelihood enum, instantiates them.
#include "glm_kernels.hpp"
#include "row_blocks.hpp"
#include "likelihood_math.hpp"

namespace regression::REGRESSION_ISA {

template <class L, class Real>
void add_weighted_gradients_body(const LikelihoodConstants& c, const DesignMatrix<Real>& x,
                                 std::span<const std::size_t> items, std::span<const double> weights,
                                 std::span<const double> beta, std::span<double> gradient) {
  for_each_block(x, items, beta, [&](const Block& block) {
    double scale[block_rows];
    for (std::size_t k = 0; k < block.size; ++k) scale[k] = L::scalar(block.y[k], block.z[k], c);
    for (std::size_t k = 0; k < block.size; ++k)
      axpy(weight(weights, block.first + k) * scale[k], x.row(items[block.first + k]), gradient);
  });
}

template <class L, class Real>
double weighted_potential_body(const LikelihoodConstants& c, const DesignMatrix<Real>& x,
                               std::span<const std::size_t> items, std::span<const double> weights,
                               std::span<const double> beta) {
  double sum = 0.0;
  for_each_block(x, items, beta, [&](const Block& block) {
    double term[block_rows];
    for (std::size_t k = 0; k < block.size; ++k) term[k] = L::loss(block.y[k], block.z[k], c);
    for (std::size_t k = 0; k < block.size; ++k) sum += weight(weights, block.first + k) * term[k];
  });
  return sum;
}

template <class L, class Real>
double add_weighted_gradients_and_potential_body(const LikelihoodConstants& c, const DesignMatrix<Real>& x,
                                                 std::span<const std::size_t> items, std::span<const double> weights,
                                                 std::span<const double> beta, std::span<double> gradient) {
  double sum = 0.0;
  for_each_block(x, items, beta, [&](const Block& block) {
    double scale[block_rows], term[block_rows];
    for (std::size_t k = 0; k < block.size; ++k) scale[k] = L::scalar(block.y[k], block.z[k], c);
    for (std::size_t k = 0; k < block.size; ++k)
      axpy(weight(weights, block.first + k) * scale[k], x.row(items[block.first + k]), gradient);
    for (std::size_t k = 0; k < block.size; ++k) term[k] = L::loss(block.y[k], block.z[k], c);
    for (std::size_t k = 0; k < block.size; ++k) sum += weight(weights, block.first + k) * term[k];
  });
  return sum;
}

template <class L, class Real>
void glm_scalars_body(const LikelihoodConstants& c, const DesignMatrix<Real>& x, std::span<const std::size_t> items,
                      std::span<const double> beta, std::span<double> out) {
  for_each_block(x, items, beta, [&](const Block& block) {
    for (std::size_t k = 0; k < block.size; ++k) out[block.first + k] = L::scalar(block.y[k], block.z[k], c);
  });
}

template <class L, class Real>
void log_likelihoods_body(const LikelihoodConstants& c, const DesignMatrix<Real>& x, std::span<const double> beta,
                          std::span<double> out) {
  for (std::size_t i = 0; i < x.rows(); ++i) out[i] = dot(x.row(i), beta);
  for (std::size_t i = 0; i < x.offset.size(); ++i) out[i] += x.offset[i];  // model.offset
  for (std::size_t i = 0; i < x.rows(); ++i) out[i] = -L::loss(x.y[i], out[i], c);
}

template <class L, class Real>
constexpr GlmKernels<Real> kernels_for{add_weighted_gradients_body<L, Real>, weighted_potential_body<L, Real>,
                                       add_weighted_gradients_and_potential_body<L, Real>, glm_scalars_body<L, Real>, add_scaled_rows_body<Real>,
                                       log_likelihoods_body<L, Real>};

/// One entry per Likelihood, in its order.
template <class Real>
constexpr GlmKernels<Real> table[likelihood_count] = {
    kernels_for<BernoulliLogit, Real>, kernels_for<BernoulliProbit, Real>, kernels_for<PoissonLog, Real>,
    kernels_for<GaussianIdentity, Real>, kernels_for<NegativeBinomialLog, Real>};
extern const GlmKernels<double>* const double_kernels = table<double>;
extern const GlmKernels<float>* const float_kernels = table<float>;

}  // namespace regression::REGRESSION_ISA
