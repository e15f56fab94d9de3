// FloatVec checks (float_vec_checks.h) for the avx512 tier.
#define DEW_KERNEL_NS avx512
#include "float_vec_checks.h"
