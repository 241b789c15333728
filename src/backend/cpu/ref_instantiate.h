/*
 * ref_instantiate.h - compiles one family's reference kernels twice, for
 * float and double. Usage, in ref_FAMILY.c:
 *
 *   #define REF_INC "ref_FAMILY.inc"
 *   #include "ref_instantiate.h"
 *
 * Inside the .inc file, REAL is the element type and FN(name) / SUF(name)
 * give the name of the instance (name_f32, name_f64).
 */
#ifndef REF_INC
#error "define REF_INC (the .inc file of the kernels) before including ref_instantiate.h"
#endif

#define REAL float
#define FN(name) name##_f32
#define SUF(name) name##_f32
#include REF_INC
#undef REAL
#undef FN
#undef SUF

#define REAL double
#define FN(name) name##_f64
#define SUF(name) name##_f64
#include REF_INC
#undef REAL
#undef FN
#undef SUF
#undef REF_INC
