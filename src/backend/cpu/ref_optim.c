/* ref_optim.c - PLACEHOLDER, replaced by the op family's reference kernels. */
#include "backend/kernel.h"
void tsl__ref_register_optim(tsl_ref_kernel table[TSL_OP_COUNT]) { (void)table; }
