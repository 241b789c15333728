/*
 * tensile/shdev.h - one CPU device shared by several job processes: a
 * control block in POSIX shared memory that holds the device's capacity
 * and copy bandwidth, one slot per job (its region, and the ledger its CPU
 * backend publishes), the device's global ledger (load, footprint = the
 * sum of the jobs' footprints, and its peak), and the two copy channels
 * that every attached backend's copies go through, one chunk at a time,
 * as on PCIe (docs/ARCHITECTURE.md, "A device shared by processes").
 *
 * Roles. The daemon creates the device, claims a slot per admitted job
 * with the job's region, changes regions, reclaims the slot of a job that
 * ended or died, and reads everything for `tensile status`. A job process
 * opens the device by name and makes its CPU backend with the device and
 * its slot (tensile/backend_cpu.h, tsl_cpu_backend_opts.shdev): its arena
 * is its region at most, its allocations and frees are published in its
 * slot and in the global ledger, and its copies share the channels.
 *
 * The invariant: the global footprint never exceeds the capacity. A job's
 * footprint never exceeds its arena's capacity (the allocator), its arena
 * never exceeds its region (tsl_cpu_backend_set_capacity refuses to grow
 * past it, tsl_shdev_set_region to lower a region below the arena), and
 * the regions sum to at most the capacity (tsl_shdev_claim,
 * tsl_shdev_set_region).
 *
 * Example usage:
 *
 *   // the daemon
 *   char name[64];
 *   tsl_shdev_name(name, sizeof name, "dev0");            // "/tensile-UID-dev0"
 *   tsl_shdev *dev;
 *   if (tsl_shdev_create(name, 8ull << 30, 12.0, 16, &dev) != TSL_OK) die(tsl_last_error());
 *   int s = tsl_shdev_free_slot(dev);
 *   tsl_shdev_claim(dev, s, job_id, job_pid, 2ull << 30); // job_pid 0: set when it attaches
 *   ...                                                   // the job runs (below)
 *   tsl_shdev_reclaim(dev, s);                            // it ended, or died
 *   tsl_shdev_close(dev);
 *   tsl_shdev_unlink(name);
 *
 *   // the job process, told the name and its slot
 *   tsl_shdev *dev;
 *   tsl_shdev_open(name, &dev);
 *   tsl_cpu_backend_opts o = tsl_cpu_backend_opts_default(0); // 0: the whole region
 *   o.shdev = dev;  o.shdev_slot = s;
 *   tsl_backend *b;
 *   tsl_cpu_backend_new_opts(&o, &b);
 *   ...                                          // train; at an iteration boundary:
 *   tsl_cpu_backend_set_capacity(b, new_region); // shrink before the daemon lowers the region
 *   tsl_backend_free(b);
 *   tsl_shdev_close(dev);
 *
 * Thread and process safety: every function may be called from any thread
 * of any process that has the device open, except as noted: the region
 * calls (claim, set_region, reclaim) are the daemon's, made by one thread
 * of one process at a time. The block holds pids: every process must be in
 * one pid namespace.
 */
#ifndef TENSILE_SHDEV_H
#define TENSILE_SHDEV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "tensile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Slots in a block (a device may use fewer: max_slots). */
#define TSL_SHDEV_MAX_SLOTS 64
/* The version of the block's layout; a block of another version is refused. */
#define TSL_SHDEV_VERSION 1

/* A process's handle on a shared device (its mapping of the block). */
typedef struct tsl_shdev tsl_shdev;

typedef struct tsl_shdev_slot_info {
    int in_use;                   /* claimed by the daemon */
    int attached;                 /* a backend publishes into it */
    uint64_t job_id;
    pid_t pid;                    /* 0: claimed for a job that has not attached yet */
    size_t region_bytes;          /* granted by the daemon */
    size_t arena_bytes;           /* the job's arena capacity now (<= region) */
    size_t load_bytes;            /* the job's ledger (tensile/alloc.h) */
    size_t footprint_bytes;
    size_t peak_footprint_bytes;  /* since the slot was claimed */
    uint64_t copied_bytes[2];     /* through the channels: [0] host-to-device, [1] device-to-host */
} tsl_shdev_slot_info;

typedef struct tsl_shdev_chan_info {
    pid_t holder;                 /* the process copying a chunk now, 0: none */
    uint32_t queued;              /* tickets handed out and not yet served (the holder's too) */
    uint64_t chunks, bytes;       /* through the channel since the block was initialised */
    uint64_t skipped;             /* tickets of dead processes skipped */
    uint64_t overlaps;            /* a holder met another live holder: always 0 */
} tsl_shdev_chan_info;

typedef struct tsl_shdev_info {
    size_t capacity_bytes;
    double pcie_gbps;             /* each channel's device-wide rate, GB/s (0: unthrottled) */
    int max_slots;
    pid_t creator_pid;            /* the daemon that created or last adopted the block */
    uint64_t adoptions;           /* times a restarted daemon adopted it */
    size_t load_bytes;            /* the global ledger: sums of the slots' figures */
    size_t footprint_bytes;
    size_t peak_footprint_bytes;  /* the highest global footprint since initialisation */
    size_t regions_bytes;         /* the sum of the claimed slots' regions */
    tsl_shdev_chan_info chan[2];  /* [0] host-to-device, [1] device-to-host */
    tsl_shdev_slot_info slot[TSL_SHDEV_MAX_SLOTS]; /* the first max_slots are the device's */
} tsl_shdev_info;

/* Writes "/tensile-UID-TAG" (UID: the effective uid) into buf. TAG: 1 to
 * 64 characters of [A-Za-z0-9._-]. TSL_ERR_INVALID (naming the tag or the
 * buffer size) if the tag is bad or the name does not fit. */
tsl_status tsl_shdev_name(char *buf, size_t size, const char *tag);

/* The daemon's: creates the device `name` ("/" then 1 to 200 characters of
 * [A-Za-z0-9._-]) in POSIX shared memory, mode 0600, with `capacity` bytes
 * (> 0), copy channels of pcie_gbps GB/s each (finite, >= 0; 0:
 * unthrottled) and max_slots slots (1 to TSL_SHDEV_MAX_SLOTS). If a block
 * of that name exists, of this user, with this version and size, and a
 * slot holds a live pid, it is adopted: its jobs' slots, ledger and
 * channels are kept (a restarted daemon), its creator pid becomes this
 * process's; its capacity, bandwidth and slot count must equal the
 * arguments (TSL_ERR_INVALID naming the field and both values). A block
 * with no live pid, or never initialised (size 0, or no magic yet), is
 * initialised afresh. *out is the caller's (tsl_shdev_close). Errors:
 * TSL_ERR_INVALID (a bad argument, named), TSL_ERR_FORMAT (a block of that
 * name with another magic, version or size: named with its values and how
 * to remove it), TSL_ERR_IO (shm_open, ftruncate, mmap: the call, the name
 * and strerror; another user's object), TSL_ERR_OOM. */
tsl_status tsl_shdev_create(const char *name, size_t capacity, double pcie_gbps, int max_slots,
                            tsl_shdev **out);

/* 1 if tsl_shdev_create adopted an existing block (0 if it initialised it,
 * or for a handle from tsl_shdev_open). */
int tsl_shdev_adopted(const tsl_shdev *d);

/* A job's (or `tensile status`'s): maps the existing device `name`.
 * Errors: TSL_ERR_IO if it does not exist or cannot be mapped (named, with
 * strerror), or belongs to another user (both uids named); TSL_ERR_FORMAT
 * if its magic, version or size is not this build's (named with the values
 * found and expected) or it is not initialised yet; TSL_ERR_INVALID for a
 * bad name; TSL_ERR_OOM. *out is the caller's (tsl_shdev_close). */
tsl_status tsl_shdev_open(const char *name, tsl_shdev **out);

/* Unmaps the block and frees the handle (the object stays: tsl_shdev_unlink).
 * Every backend made on it must have been freed. NULL is fine. */
void tsl_shdev_close(tsl_shdev *d);

/* Removes the name (processes that have the block mapped keep it). A name
 * that does not exist is fine. TSL_ERR_INVALID for a bad name, TSL_ERR_IO
 * (named, with strerror). */
tsl_status tsl_shdev_unlink(const char *name);

/* The device's capacity in bytes and its channels' rate in GB/s. */
size_t tsl_shdev_capacity(const tsl_shdev *d);
double tsl_shdev_pcie_gbps(const tsl_shdev *d);

/* The lowest free slot, or -1 if every slot is in use. */
int tsl_shdev_free_slot(const tsl_shdev *d);

/* The daemon's: claims free slot `slot` for job `job_id` run by process
 * `pid` (0: the first backend to attach sets it), with a region of
 * `region` bytes (its arena may grow to it). Its ledger starts at zero.
 * TSL_ERR_INVALID for a slot out of range or in use, a negative pid (all
 * named); TSL_ERR_OOM if the regions would sum to more than the capacity
 * (the sum, the other regions and the capacity named). */
tsl_status tsl_shdev_claim(tsl_shdev *d, int slot, uint64_t job_id, pid_t pid, size_t region);

/* The daemon's: sets the region of claimed slot `slot` to `bytes`. Raising
 * it: TSL_ERR_OOM if the regions would sum to more than the capacity.
 * Lowering it: TSL_ERR_BUSY if the job's arena is still above `bytes` (the
 * job shrinks first, tsl_cpu_backend_set_capacity, at an iteration
 * boundary); a job that grows its arena at the same moment makes one of the
 * two calls fail, never both succeed. TSL_ERR_INVALID for a slot out of
 * range or free. On failure the region is unchanged. */
tsl_status tsl_shdev_set_region(tsl_shdev *d, int slot, size_t bytes);

/* The daemon's: frees slot `slot` of a job that ended or died: its load
 * and footprint leave the global sums (exactly, even if the job died in
 * the middle of publishing), the channel tickets of a dead process are
 * skipped, and its region returns. TSL_ERR_BUSY if the slot's process is
 * alive with a backend still attached (named: slot, job, pid);
 * TSL_ERR_INVALID for a slot out of range or free. */
tsl_status tsl_shdev_reclaim(tsl_shdev *d, int slot);

/* Everything, for `tensile status`: each slot's figures are read
 * consistently (one publication); the global figures and the slots are
 * read one after the other, so they agree exactly only when no job is
 * allocating. */
void tsl_shdev_read(const tsl_shdev *d, tsl_shdev_info *out);

#ifdef __cplusplus
}
#endif
#endif
