/*
 * init.h - deterministic initial values of parameters, buffers and
 * optimizer states.
 */
#ifndef TSL_RUNTIME_INIT_H
#define TSL_RUNTIME_INIT_H
#include <stdint.h>
#include "core/rand.h"
#include "tensile/session.h"

/* tsl_init_value (tensile/session.h) is defined in init.c. */
/* tsl__u01 (core/rand.h) gives the uniform values. */
#endif
