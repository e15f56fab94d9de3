// FloatVec checks (float_vec_checks.h) for the avx2 tier.
#define DEW_KERNEL_NS avx2
#include "float_vec_checks.h"
