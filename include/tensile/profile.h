/*
 * tensile/profile.h - a device as the planner and the simulator see it: compute
 * rate, memory, the two copy channels; and the time of a copy. Pure data and
 * arithmetic (the sched layer); the JSON files of profiles/ are read and
 * written with tensile/sched_json.h.
 */
#ifndef TENSILE_PROFILE_H
#define TENSILE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device profiles (profiles/NAME.json) -------------------------------- */
typedef struct tsl_device_profile {
    char name[64];
    double flops;          /* FP32 FLOP/s */
    double mem_bw;         /* device memory bandwidth, bytes/s */
    size_t mem_bytes;      /* device memory size */
    double h2d_bw, d2h_bw; /* host<->device copy bandwidth, bytes/s (pinned) */
    int duplex;            /* 1: the two directions run at once; 0: one shared channel */
    double launch_us;      /* per-op fixed overhead */
    double copy_latency_us;/* per-transfer fixed overhead */
} tsl_device_profile;


/* Rough figures of a CPU playing a device, for when nothing better is
 * known (no profile given, `tensile calibrate` never run): flops 5e10,
 * mem_bw 1e10, copies 5e9 bytes/s each way (a memcpy between two host
 * buffers), duplex, launch 5 µs, copy latency 5 µs; mem_bytes 0. */
tsl_device_profile tsl_profile_cpu_rough(void);

/* Transfer time of `bytes` on a direction (1 = host to device), µs:
 * copy_latency_us + tsl_copy_bytes_us(p, bytes, to_device). */
double tsl_copy_us(const tsl_device_profile *p, size_t bytes, int to_device);
/* The part of a transfer that moves its bytes at the direction's full
 * bandwidth, µs: bytes / bw * 1e6 (p's bandwidth of that direction > 0). */
double tsl_copy_bytes_us(const tsl_device_profile *p, size_t bytes, int to_device);

/* The profile a job planned on a share of the device's copy channels sees:
 * p with h2d_bw and d2h_bw times `share` (in (0, 1]; the copy latency
 * unchanged), its name marked with the share. */
tsl_device_profile tsl_profile_channel_share(const tsl_device_profile *p, double share);

#ifdef __cplusplus
}
#endif
#endif
