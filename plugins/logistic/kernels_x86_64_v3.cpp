#define REGRESSION_ISA x86_64_v3
#include "kernels_body.hpp"
