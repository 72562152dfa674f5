// Picks the copy of the kernels (kernels_x86_64_v3.cpp or kernels_baseline.cpp) this CPU runs.
#include "isa.hpp"
#include "kernels.hpp"

namespace logistic {

namespace x86_64_v3 {
extern const Kernels<double> double_kernels;
extern const Kernels<float> float_kernels;
}  // namespace x86_64_v3
namespace baseline {
extern const Kernels<double> double_kernels;
extern const Kernels<float> float_kernels;
}  // namespace baseline

template <>
const Kernels<double>& kernels<double>() {
  static const Kernels<double>& chosen = regression::has_x86_64_v3() ? x86_64_v3::double_kernels : baseline::double_kernels;
  return chosen;
}
template <>
const Kernels<float>& kernels<float>() {
  static const Kernels<float>& chosen = regression::has_x86_64_v3() ? x86_64_v3::float_kernels : baseline::float_kernels;
  return chosen;
}

}  // namespace logistic
