/* ops_eltwise.c - PLACEHOLDER, replaced by the op family's implementation. */
#include "ops/op_def.h"
void tsl__ops_register_eltwise(tsl_op_def defs[TSL_OP_COUNT]) { (void)defs; }
