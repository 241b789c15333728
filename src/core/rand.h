/*
 * rand.h - counter-based uniform numbers (splitmix64's finaliser), for
 * everything that needs reproducible "random" values from a key: initial
 * parameter values (runtime/init.c), random phase offsets (sim).
 */
#ifndef TSL_CORE_RAND_H
#define TSL_CORE_RAND_H
#include <stdint.h>

/* splitmix64's finaliser of key + the golden ratio: a well-mixed 64-bit
 * value; a bijection, so distinct keys give distinct values. */
static inline uint64_t tsl__mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform double in [0,1) from a 64-bit key (53 bits of tsl__mix64). */
static inline double tsl__u01(uint64_t key) { return (double)(tsl__mix64(key) >> 11) * 0x1.0p-53; }
#endif
