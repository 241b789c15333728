/*
 * shslot.c - a shared device's slots and its ledger across processes
 * (tensile/shdev.h; the layout and who writes what in shdev_block.h).
 *
 * Ordering: every atomic operation is sequentially consistent (the
 * default); the arguments below use that one total order.
 *
 * The ledger. A slot has one writer, its backend, under the backend's arena
 * lock. A publication makes the slot's seq odd, stores the slot's load and
 * footprint (and raises its peak), adds the deltas to the global load and
 * footprint (fetch_add, modulo 2^64 for a decrease), raises the global peak
 * to the global footprint its own fetch_add produced (a CAS-max), and makes
 * seq even. The global footprint is the sum of the slots' at every moment
 * no publication is under way; and since the global footprint changes only
 * by fetch_adds, the CAS-max after each increase makes the peak the exact
 * maximum of the sums it took.
 *
 * A job killed in the middle of a publication leaves its slot's seq odd,
 * and whether its delta reached the global sums is unknown. Reclaim
 * therefore never trusts the dead slot's figures: it takes a snapshot in
 * which no live slot is publishing (every seq read twice, equal, and even
 * unless its process is dead; the global sums read twice, equal: a
 * publication between the two reads would have changed a seq), and removes
 * global - (the other slots' figures): exactly what the dead slot
 * contributed. (If two jobs died publishing, the first reclaim also takes
 * the second's uncertainty, and the second's reclaim makes the sum exact.)
 *
 * Regions and arenas. A region (the daemon's) bounds its job's arena (the
 * backend's). Growing an arena stores it, then reads the region; lowering a
 * region stores it, then reads the arena: in the total order one of the
 * two reads sees the other's store, so a grow and a lower that would cross
 * cannot both succeed (each undoes its store when it fails). Regions are
 * written by one thread of the daemon, so their sum is checked without a
 * lock.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/shdev_block.h"
#include "core/assert.h"

/* How long reclaim tries for a snapshot before it trusts the dead slot's
 * own figures (a live job stopped in the middle of a publication). */
#define SNAPSHOT_TRIES 20000

static tsl_status check_slot(const tsl__shblock *b, int slot, const char *what) {
    if (slot < 0 || (uint32_t)slot >= b->max_slots)
        return tsl_fail(TSL_ERR_INVALID, "shared device: %s: slot %d outside [0, %u)", what, slot,
                        b->max_slots);
    return TSL_OK;
}

static tsl_status check_claimed(const tsl__shblock *b, int slot, const char *what) {
    tsl_status rc = check_slot(b, slot, what);
    if (rc != TSL_OK) return rc;
    if (atomic_load(&b->slot[slot].state) != TSL__SLOT_CLAIMED)
        return tsl_fail(TSL_ERR_INVALID, "shared device: %s: slot %d is not claimed", what, slot);
    return TSL_OK;
}

/* The sum of the claimed slots' regions, slot `except` left out. */
static uint64_t regions_but(const tsl__shblock *b, int except) {
    uint64_t sum = 0;
    for (int i = 0; i < (int)b->max_slots; i++)
        if (i != except && atomic_load(&b->slot[i].state) == TSL__SLOT_CLAIMED)
            sum += atomic_load(&b->slot[i].region);
    return sum;
}

static tsl_status fail_regions(const tsl__shblock *b, int slot, uint64_t others, uint64_t bytes) {
    return tsl_fail(TSL_ERR_OOM, "shared device: a region of %llu bytes for slot %d would make "
                    "the regions sum to %llu bytes (the others hold %llu), above the capacity "
                    "%llu", (unsigned long long)bytes, slot, (unsigned long long)(others + bytes),
                    (unsigned long long)others, (unsigned long long)b->capacity);
}

/* ---- the daemon's side ---------------------------------------------------------------- */

int tsl_shdev_free_slot(const tsl_shdev *d) {
    const tsl__shblock *b = tsl__shdev_block(d);
    for (int i = 0; i < (int)b->max_slots; i++)
        if (atomic_load(&b->slot[i].state) == TSL__SLOT_FREE) return i;
    return -1;
}

/* Contract: tensile/shdev.h. The slot goes FREE -> CLAIMING (CAS), is
 * filled, then CLAIMED: a reader never counts a half-filled slot. */
tsl_status tsl_shdev_claim(tsl_shdev *d, int slot, uint64_t job_id, pid_t pid, size_t region) {
    tsl__shblock *b = tsl__shdev_block(d);
    tsl_status rc = check_slot(b, slot, "claim");
    if (rc != TSL_OK) return rc;
    if (pid < 0) return tsl_fail(TSL_ERR_INVALID, "shared device: claim of slot %d: pid %d < 0",
                                 slot, (int)pid);
    tsl__shslot *s = &b->slot[slot];
    uint32_t exp = TSL__SLOT_FREE;
    if (!atomic_compare_exchange_strong(&s->state, &exp, TSL__SLOT_CLAIMING))
        return tsl_fail(TSL_ERR_INVALID, "shared device: claim of slot %d for job %llu: the slot "
                        "is in use (job %llu, pid %d)", slot, (unsigned long long)job_id,
                        (unsigned long long)atomic_load(&s->job_id), (int)atomic_load(&s->pid));
    uint64_t others = regions_but(b, slot);
    if (others > b->capacity || (uint64_t)region > b->capacity - others) {
        atomic_store(&s->state, TSL__SLOT_FREE);
        return fail_regions(b, slot, others, region);
    }
    atomic_store(&s->attached, 0);
    atomic_store(&s->pid, (int32_t)pid);
    atomic_store(&s->seq, 0);
    atomic_store(&s->job_id, job_id);
    atomic_store(&s->region, (uint64_t)region);
    atomic_store(&s->arena, 0);
    atomic_store(&s->load, 0);
    atomic_store(&s->footprint, 0);
    atomic_store(&s->peak_footprint, 0);
    atomic_store(&s->copied[0], 0);
    atomic_store(&s->copied[1], 0);
    atomic_store(&s->state, TSL__SLOT_CLAIMED);
    return TSL_OK;
}

/* Contract: tensile/shdev.h (the crossing with a growing arena: see the
 * top of this file). */
tsl_status tsl_shdev_set_region(tsl_shdev *d, int slot, size_t bytes) {
    tsl__shblock *b = tsl__shdev_block(d);
    tsl_status rc = check_claimed(b, slot, "set_region");
    if (rc != TSL_OK) return rc;
    tsl__shslot *s = &b->slot[slot];
    uint64_t old = atomic_load(&s->region);
    if (bytes >= old) {
        uint64_t others = regions_but(b, slot);
        if (others > b->capacity || (uint64_t)bytes > b->capacity - others)
            return fail_regions(b, slot, others, bytes);
        atomic_store(&s->region, (uint64_t)bytes);
        return TSL_OK;
    }
    atomic_store(&s->region, (uint64_t)bytes);
    uint64_t arena = atomic_load(&s->arena);
    if (arena > bytes) {
        atomic_store(&s->region, old);
        return tsl_fail(TSL_ERR_BUSY, "shared device: slot %d (job %llu, pid %d): its arena is "
                        "still %llu bytes; the job must shrink it (tsl_cpu_backend_set_capacity) "
                        "before its region is lowered to %zu bytes", slot,
                        (unsigned long long)atomic_load(&s->job_id), (int)atomic_load(&s->pid),
                        (unsigned long long)arena, bytes);
    }
    return TSL_OK;
}

/* A snapshot with no live slot publishing; returns global - the other
 * slots' figures in *load and *fp (see the top of this file). 0 if none
 * was found in SNAPSHOT_TRIES. */
static int contribution(tsl__shblock *b, int dead, uint64_t *load, uint64_t *fp) {
    int n = (int)b->max_slots;
    uint32_t seq[TSL_SHDEV_MAX_SLOTS];
    for (int tries = 0; tries < SNAPSHOT_TRIES; tries++) {
        if (tries > 0 && tries % 64 == 0) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        for (int i = 0; i < n; i++) seq[i] = atomic_load(&b->slot[i].seq);
        uint64_t g_load = atomic_load(&b->load), g_fp = atomic_load(&b->footprint);
        uint64_t o_load = 0, o_fp = 0;
        for (int i = 0; i < n; i++) {
            if (i == dead) continue;
            o_load += atomic_load(&b->slot[i].load);
            o_fp += atomic_load(&b->slot[i].footprint);
        }
        int ok = atomic_load(&b->load) == g_load && atomic_load(&b->footprint) == g_fp;
        for (int i = 0; ok && i < n; i++) {
            if (atomic_load(&b->slot[i].seq) != seq[i]) ok = 0;
            else if (i != dead && (seq[i] & 1) && tsl__pid_alive(atomic_load(&b->slot[i].pid)))
                ok = 0;
        }
        if (ok) {
            *load = g_load - o_load;
            *fp = g_fp - o_fp;
            return 1;
        }
    }
    return 0;
}

/* Contract: tensile/shdev.h. */
tsl_status tsl_shdev_reclaim(tsl_shdev *d, int slot) {
    tsl__shblock *b = tsl__shdev_block(d);
    tsl_status rc = check_claimed(b, slot, "reclaim");
    if (rc != TSL_OK) return rc;
    tsl__shslot *s = &b->slot[slot];
    pid_t pid = atomic_load(&s->pid);
    int alive = tsl__pid_alive(pid);
    if (alive && atomic_load(&s->attached))
        return tsl_fail(TSL_ERR_BUSY, "shared device: reclaim of slot %d: job %llu (pid %d) is "
                        "alive with its backend attached; it must free its backend, or end",
                        slot, (unsigned long long)atomic_load(&s->job_id), (int)pid);
    uint64_t load, fp;
    if (!contribution(b, slot, &load, &fp)) { /* a live job stopped mid-publication */
        load = atomic_load(&s->load);
        fp = atomic_load(&s->footprint);
    }
    atomic_fetch_sub(&b->load, load);
    atomic_fetch_sub(&b->footprint, fp);
    atomic_store(&s->load, 0);
    atomic_store(&s->footprint, 0);
    atomic_store(&s->arena, 0);
    atomic_store(&s->attached, 0);
    if (pid > 0 && !alive)
        for (int i = 0; i < 2; i++) tsl__shchan_reap(&b->chan[i], pid);
    atomic_store(&s->state, TSL__SLOT_FREE);
    return TSL_OK;
}

/* Contract: tensile/shdev.h. A slot's figures are retried until its seq
 * is even and unchanged (a few tries: a publication is short). */
void tsl_shdev_read(const tsl_shdev *d, tsl_shdev_info *out) {
    tsl__shblock *b = tsl__shdev_block(d);
    memset(out, 0, sizeof *out);
    out->capacity_bytes = (size_t)b->capacity;
    out->pcie_gbps = tsl_shdev_pcie_gbps(d);
    out->max_slots = (int)b->max_slots;
    out->creator_pid = (pid_t)atomic_load(&b->creator_pid);
    out->adoptions = atomic_load(&b->adoptions);
    out->load_bytes = (size_t)atomic_load(&b->load);
    out->footprint_bytes = (size_t)atomic_load(&b->footprint);
    out->peak_footprint_bytes = (size_t)atomic_load(&b->peak_footprint);
    for (int c = 0; c < 2; c++) {
        tsl__shchan *ch = &b->chan[c];
        tsl_shdev_chan_info *ci = &out->chan[c];
        tsl__shchan_peek(ch, &ci->holder, &ci->queued);
        ci->chunks = atomic_load(&ch->chunks);
        ci->bytes = atomic_load(&ch->bytes);
        ci->skipped = atomic_load(&ch->skipped);
        ci->overlaps = atomic_load(&ch->overlaps);
    }
    for (int i = 0; i < (int)b->max_slots; i++) {
        tsl__shslot *s = &b->slot[i];
        tsl_shdev_slot_info *si = &out->slot[i];
        si->in_use = atomic_load(&s->state) == TSL__SLOT_CLAIMED;
        if (!si->in_use) continue;
        for (int tries = 0; tries < 1000; tries++) {
            uint32_t seq = atomic_load(&s->seq);
            si->load_bytes = (size_t)atomic_load(&s->load);
            si->footprint_bytes = (size_t)atomic_load(&s->footprint);
            si->peak_footprint_bytes = (size_t)atomic_load(&s->peak_footprint);
            if (!(seq & 1) && atomic_load(&s->seq) == seq) break;
        }
        si->attached = atomic_load(&s->attached) != 0;
        si->job_id = atomic_load(&s->job_id);
        si->pid = (pid_t)atomic_load(&s->pid);
        si->region_bytes = (size_t)atomic_load(&s->region);
        si->arena_bytes = (size_t)atomic_load(&s->arena);
        si->copied_bytes[0] = atomic_load(&s->copied[0]);
        si->copied_bytes[1] = atomic_load(&s->copied[1]);
        out->regions_bytes += si->region_bytes;
    }
}

/* ---- the backend's side ------------------------------------------------------------------ */

/* Contract: shdev_block.h. */
tsl_status tsl__shdev_attach(tsl_shdev *d, int slot, size_t *region) {
    tsl__shblock *b = tsl__shdev_block(d);
    tsl_status rc = check_claimed(b, slot, "cpu backend attach");
    if (rc != TSL_OK) return rc;
    tsl__shslot *s = &b->slot[slot];
    int32_t me = (int32_t)getpid(), pid = 0;
    if (!atomic_compare_exchange_strong(&s->pid, &pid, me) && pid != me)
        return tsl_fail(TSL_ERR_INVALID, "shared device: cpu backend attach: slot %d (job %llu) "
                        "belongs to pid %d, not to this process (pid %d)", slot,
                        (unsigned long long)atomic_load(&s->job_id), (int)pid, (int)me);
    uint32_t exp = 0;
    if (!atomic_compare_exchange_strong(&s->attached, &exp, 1))
        return tsl_fail(TSL_ERR_INVALID, "shared device: cpu backend attach: slot %d (job %llu) "
                        "has a backend attached already", slot,
                        (unsigned long long)atomic_load(&s->job_id));
    *region = (size_t)atomic_load(&s->region);
    return TSL_OK;
}

/* Contract: shdev_block.h. */
void tsl__shdev_detach(tsl_shdev *d, int slot) {
    tsl__shslot *s = &tsl__shdev_block(d)->slot[slot];
    tsl__shdev_publish(d, slot, 0, 0);
    atomic_store(&s->arena, 0);
    atomic_store(&s->attached, 0);
}

/* Raises *x to at least v. */
static void cas_max(_Atomic uint64_t *x, uint64_t v) {
    uint64_t cur = atomic_load(x);
    while (cur < v && !atomic_compare_exchange_weak(x, &cur, v)) {
    }
}

/* Contract: shdev_block.h (the protocol: the top of this file). */
void tsl__shdev_publish(tsl_shdev *d, int slot, size_t load, size_t footprint) {
    tsl__shblock *b = tsl__shdev_block(d);
    tsl__shslot *s = &b->slot[slot];
    atomic_fetch_add(&s->seq, 1);
    uint64_t old_load = atomic_load(&s->load), old_fp = atomic_load(&s->footprint);
    atomic_store(&s->load, (uint64_t)load);
    atomic_store(&s->footprint, (uint64_t)footprint);
    cas_max(&s->peak_footprint, (uint64_t)footprint);
    if (load != old_load) atomic_fetch_add(&b->load, (uint64_t)load - old_load);
    if (footprint != old_fp) {
        uint64_t delta = (uint64_t)footprint - old_fp;
        uint64_t now = atomic_fetch_add(&b->footprint, delta) + delta;
        if (footprint > old_fp) cas_max(&b->peak_footprint, now);
    }
    atomic_fetch_add(&s->seq, 1);
}

/* Contract: shdev_block.h (the crossing with a lowered region: the top of
 * this file). */
tsl_status tsl__shdev_set_arena(tsl_shdev *d, int slot, size_t bytes) {
    tsl__shslot *s = &tsl__shdev_block(d)->slot[slot];
    uint64_t old = atomic_load(&s->arena);
    atomic_store(&s->arena, (uint64_t)bytes);
    if (bytes <= old) return TSL_OK;
    uint64_t region = atomic_load(&s->region);
    if (bytes > region) {
        atomic_store(&s->arena, old);
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: an arena of %zu bytes is above the region "
                        "of %llu bytes granted to slot %d (job %llu)", bytes,
                        (unsigned long long)region, slot,
                        (unsigned long long)atomic_load(&s->job_id));
    }
    return TSL_OK;
}

void tsl__shdev_count_copy(tsl_shdev *d, int slot, int dir, size_t bytes) {
    atomic_fetch_add(&tsl__shdev_block(d)->slot[slot].copied[dir], (uint64_t)bytes);
}
