// The passes of network.hpp for float storage (model.storage = "float"), compiled without
// -fveclib: see network.cpp for the miscompilation that flag brings to loops widening float to
// double.
#include "network_passes.hpp"

namespace mlp {
template class Network<float>;
}  // namespace mlp
