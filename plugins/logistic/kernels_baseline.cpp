#define REGRESSION_ISA baseline
#include "kernels_body.hpp"
