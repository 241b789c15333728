/*
 * sim_fair.c - the fair channel model (TSL_SIM_CHANNELS_FAIR): a copy
 * channel's bandwidth shared, by processor sharing, among the transfers
 * moving bytes on it - a channel arbitrated chunk by chunk among the jobs
 * copying at a moment (the CPU backend's shared device: 1 MiB chunks, FIFO
 * across processes; PCIe DMA interleaves alike).
 *
 * A transfer given its turn by its job's FIFO (sim_channels.c: a job's own
 * transfers on a channel stay one at a time) first pays the profile's copy
 * latency without taking bandwidth (until its EV_COPY_BYTES event), then
 * moves its bytes: `rem`, the µs they take at the direction's full
 * bandwidth (tsl_copy_bytes_us). While k transfers move bytes on a channel
 * each progresses at 1/k of full speed (both directions of a channel that
 * is not duplex alike). Whenever a transfer starts or stops moving bytes on
 * a channel, the others' rem are counted down to now at the old share and
 * their ends queued again at the new one; the ends queued before are stale
 * (tsl__sim_xfer_due). With its channel to itself a transfer takes its
 * latency plus its bytes' time: tsl_copy_us, up to rounding. With equal
 * shares 1/n among at most n jobs, a transfer never gets less than 1/n of
 * the bandwidth, so it ends no later than on a channel of its own with 1/n
 * of the bandwidth (tsl_profile_channel_share): the rule docs/SCHEDULING.md
 * gives for plans made on channel shares.
 */
#include <string.h>

#include "core/assert.h"
#include "sim/sim_state.h"

static fair_chan *fair_of(sim *s, const xfer *x) {
    return &s->fc[tsl__sim_chan_index(s, x->to_device)];
}

/* Counts the rem of c's transfers down to now, at the share each had since
 * the last change. */
static void settle(sim *s, fair_chan *c) {
    double now = tsl__sim_abs_now(s);
    if (c->n > 0) {
        double moved = (now - c->upd) / c->n;
        for (int k = 0; k < c->n; k++) {
            xfer *x = &s->xf[c->act[k]];
            x->rem = x->rem > moved ? x->rem - moved : 0.0;
        }
    }
    c->upd = now;
}

/* Queues the end of each of c's transfers at the share each has now. */
static void reschedule(sim *s, fair_chan *c) {
    for (int k = 0; k < c->n; k++) {
        int64_t id = c->act[k];
        xfer *x = &s->xf[id];
        double end = tsl__sim_rel_now(s, x->job) + x->rem * c->n;
        x->end_at = tsl__sim_push_job(s, x->job, end, PH_DONE, EV_COPY_END, (int32_t)id);
    }
}

void tsl__sim_fair_start(sim *s, int64_t id, double start) {
    xfer *x = &s->xf[id];
    x->state = XF_LATENCY;
    double lat = s->dev->copy_latency_us;
    if (lat > 0)
        tsl__sim_push_job(s, x->job, start + lat, PH_DONE, EV_COPY_BYTES, (int32_t)id);
    else
        tsl__sim_fair_bytes(s, id);
}

void tsl__sim_fair_bytes(sim *s, int64_t id) {
    xfer *x = &s->xf[id];
    TSL_ASSERT(x->state == XF_LATENCY);
    x->state = XF_BYTES;
    x->rem = tsl_copy_bytes_us(s->dev, s->job[x->job].w->tensors[x->tensor].bytes, x->to_device);
    fair_chan *c = fair_of(s, x);
    TSL_ASSERT(c->n < s->n_jobs);
    settle(s, c);
    c->act[c->n++] = id;
    reschedule(s, c);
}

void tsl__sim_fair_end(sim *s, int64_t id) {
    fair_chan *c = fair_of(s, &s->xf[id]);
    settle(s, c);
    int k = 0;
    while (k < c->n && c->act[k] != id) k++;
    TSL_ASSERT(k < c->n);
    memmove(c->act + k, c->act + k + 1, (size_t)(c->n - k - 1) * sizeof *c->act);
    c->n--;
    reschedule(s, c);
}
