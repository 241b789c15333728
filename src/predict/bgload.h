/*
 * bgload.h - background load for profiling: threads that stream over a
 * buffer of their own with multiply-adds, as other jobs' kernels would
 * beside the one being measured (compute and memory bandwidth both).
 */
#ifndef TSL_PREDICT_BGLOAD_H
#define TSL_PREDICT_BGLOAD_H
#include "tensile/status.h"

typedef struct tsl__bgload tsl__bgload;

/* Starts k >= 0 busy threads (k = 0: none, *out still set). TSL_ERR_OOM
 * when a thread or its buffer cannot be made (the started ones stopped). */
tsl_status tsl__bgload_start(int k, tsl__bgload **out);
/* Stops and joins them; NULL is fine. */
void tsl__bgload_stop(tsl__bgload *b);
#endif
