/*
 * assert.h - TSL_ASSERT: the bug tier of errors. Always on (cheap checks
 * only); aborts with file, line and the failed condition. Never put side
 * effects in the condition.
 */
#ifndef TSL_CORE_ASSERT_H
#define TSL_CORE_ASSERT_H
#include <stdio.h>
#include <stdlib.h>

#define TSL_ASSERT(cond)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "tensile: internal error at %s:%d: %s\n", __FILE__, \
                    __LINE__, #cond);                                           \
            abort();                                                            \
        }                                                                       \
    } while (0)

#define TSL_UNUSED(x) ((void)(x))
#endif
