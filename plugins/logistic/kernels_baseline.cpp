#define LOGISTIC_ISA baseline
#include "kernels_body.hpp"
