/*
 * shdev_block.h - the shared device's control block, as it lies in POSIX
 * shared memory (tensile/shdev.h), and the calls the CPU backend makes on
 * it (internal).
 *
 * Layout rules: fixed-width fields only, no pointers (each process maps the
 * block at its own address), every field that changes after
 * initialisation a lock-free C11 atomic (checked below: a lock-based
 * atomic's lock would be private to a process). The header is written once
 * before `magic` is stored (release); a reader loads `magic` (acquire)
 * before trusting the rest. Any change to this layout changes
 * TSL_SHDEV_VERSION.
 *
 * Who writes what:
 *   header            the creator, once (creator_pid, adoptions: on adoption)
 *   slot state, job_id, pid, region
 *                     the daemon (claim, set_region, reclaim); pid also the
 *                     attaching backend, 0 -> its pid
 *   slot attached, arena, load, footprint, peak_footprint, seq
 *                     the job's backend, under its arena lock: one writer
 *                     per slot; reclaim, once the job is dead or detached
 *   slot copied[]     the job's copy streams (fetch_add)
 *   global load, footprint
 *                     every backend, by fetch_add of its deltas; reclaim
 *   global peak_footprint
 *                     every backend, by a CAS-max after its fetch_add
 *   chan[]            shchan.c
 */
#ifndef TSL_BACKEND_CPU_SHDEV_BLOCK_H
#define TSL_BACKEND_CPU_SHDEV_BLOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "backend/cpu/shchan.h"
#include "tensile/shdev.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "the shared block needs lock-free 32- and 64-bit atomics");

#define TSL__SHDEV_MAGIC 0x56454448534c5354ull /* "TSLSHDEV" in memory (little-endian) */

enum { TSL__SLOT_FREE = 0, TSL__SLOT_CLAIMING = 1, TSL__SLOT_CLAIMED = 2 };

typedef struct tsl__shslot {
    _Alignas(64) _Atomic uint32_t state; /* TSL__SLOT_* */
    _Atomic uint32_t attached;           /* 1 while a backend publishes into it */
    _Atomic int32_t pid;
    _Atomic uint32_t seq;                /* odd while a publication is under way */
    _Atomic uint64_t job_id;
    _Atomic uint64_t region, arena;
    _Atomic uint64_t load, footprint, peak_footprint;
    _Atomic uint64_t copied[2];
} tsl__shslot;

typedef struct tsl__shblock {
    /* header */
    _Atomic uint64_t magic;         /* TSL__SHDEV_MAGIC once initialised */
    uint32_t version;               /* TSL_SHDEV_VERSION */
    uint32_t struct_size;           /* sizeof(tsl__shblock) */
    uint64_t capacity;
    uint64_t pcie_gbps_bits;        /* a double's bits */
    uint32_t max_slots;
    _Atomic int32_t creator_pid;
    _Atomic uint64_t adoptions;
    /* the global ledger */
    _Alignas(64) _Atomic uint64_t load;
    _Atomic uint64_t footprint, peak_footprint;
    tsl__shchan chan[2];            /* [0] host-to-device, [1] device-to-host */
    tsl__shslot slot[TSL_SHDEV_MAX_SLOTS];
} tsl__shblock;

/* The block of an open device. */
tsl__shblock *tsl__shdev_block(const tsl_shdev *d);

/* Initialises b afresh (zeros, the header, free channels), magic last. */
void tsl__shdev_init_block(tsl__shblock *b, uint64_t capacity, double pcie_gbps,
                           uint32_t max_slots);

/* ---- the backend's side (shslot.c) ------------------------------------------------- */

/* Attaches a backend of this process to claimed slot `slot`: the slot's pid
 * must be this process's (or 0: it becomes this process's) and no backend
 * may be attached. *region is the slot's region. TSL_ERR_INVALID (slot out
 * of range, free, another process's, attached already: named). */
tsl_status tsl__shdev_attach(tsl_shdev *d, int slot, size_t *region);

/* Publishes zeros (load, footprint, arena) and detaches. */
void tsl__shdev_detach(tsl_shdev *d, int slot);

/* Publishes the slot's load and footprint (the backend's allocator's,
 * under its lock: one writer per slot): the slot's figures and its peak,
 * the global sums by the deltas, the global peak by a CAS-max. */
void tsl__shdev_publish(tsl_shdev *d, int slot, size_t load, size_t footprint);

/* The backend's arena capacity becomes `bytes`. Growing: TSL_ERR_INVALID
 * if above the slot's region (named), checked against a concurrent
 * tsl_shdev_set_region (the arena is stored, then the region read back).
 * Shrinking never fails (the caller shrank its allocator first). */
tsl_status tsl__shdev_set_arena(tsl_shdev *d, int slot, size_t bytes);

/* The copy streams count the bytes a chunk moved (dir 0: host-to-device,
 * 1: device-to-host). */
void tsl__shdev_count_copy(tsl_shdev *d, int slot, int dir, size_t bytes);

/* The device's channel of direction dir (0: host-to-device, 1:
 * device-to-host). */
tsl__shchan *tsl__shdev_chan(tsl_shdev *d, int dir);

#endif
