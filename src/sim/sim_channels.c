/* sim_channels.c - the copy channels shared by all jobs: host-to-device and
 * device-to-host, or one channel for both directions when the profile is not
 * duplex. The transfers wait their turn in FIFOs, first come first served:
 * in the FIFO model one per channel for all the jobs, each transfer then
 * taking tsl_copy_us alone on its channel; in the fair model one per job and
 * channel (a job's own transfers one at a time), the transfers of several
 * jobs then sharing the channel's bandwidth (sim_fair.c). */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_state.h"

int tsl__sim_chan_index(const sim *s, int to_device) {
    return s->dev->duplex ? (to_device ? 0 : 1) : 0;
}

/* The FIFO of job jx's transfers of direction to_device. */
static chan *chan_of(sim *s, int jx, int to_device) {
    int k = tsl__sim_chan_index(s, to_device);
    return s->fair ? &s->ch[2 * jx + k] : &s->ch[k];
}

/* Transfer `id` gets its FIFO's turn now, at `start` (relative to its job's
 * iteration): FIFO model: it ends tsl_copy_us later; fair model: it shares
 * its channel. */
static void xfer_start(sim *s, int64_t id, double start) {
    xfer *x = &s->xf[id];
    x->start = start;
    if (s->fair) {
        tsl__sim_fair_start(s, id, start);
        return;
    }
    x->state = XF_BYTES;
    x->end_at = tsl__sim_push_job(s, x->job, start + x->dur, PH_DONE, EV_COPY_END, (int32_t)id);
}

/* Appends id to c's FIFO. Returns 0, or -1 if out of host memory. */
static int fifo_push(chan *c, int64_t id) {
    if (c->head + c->n == c->cap) {
        if (c->head > 0) { /* compact */
            memmove(c->fifo, c->fifo + c->head, (size_t)c->n * sizeof *c->fifo);
            c->head = 0;
        }
        if (c->n == c->cap) {
            int64_t cap = c->cap ? 2 * c->cap : 64;
            int64_t *f = realloc(c->fifo, (size_t)cap * sizeof *f);
            if (!f) return -1;
            c->fifo = f;
            c->cap = cap;
        }
    }
    c->fifo[c->head + c->n++] = id;
    return 0;
}

/* A new transfer for event e of job j, issued now (the current event's
 * time): starts at once if its FIFO is free, else waits there. Returns its
 * id; -1 if out of host memory (tsl__sim_fail_oom). */
int64_t tsl__sim_xfer_request(sim *s, tsl__sim_job *j, int32_t e, int to_device) {
    if (s->n_xf == s->cap_xf) {
        int64_t cap = s->cap_xf ? 2 * s->cap_xf : 256;
        xfer *a = realloc(s->xf, (size_t)cap * sizeof *a);
        if (!a) {
            tsl__sim_fail_oom(s);
            return -1;
        }
        s->xf = a;
        s->cap_xf = cap;
    }
    int64_t id = s->n_xf++;
    int32_t t = j->p->events[e].tensor;
    s->xf[id] = (xfer){.job = j->index, .iter = s->pr[j->index].iter, .event = e, .tensor = t,
                       .to_device = to_device, .gen = j->gen[t],
                       .issue = tsl__sim_rel_now(s, j->index), .dur = j->ev_copy[e],
                       .state = XF_QUEUED};
    chan *c = chan_of(s, j->index, to_device);
    if (!c->busy) {
        c->busy = 1;
        xfer_start(s, id, s->xf[id].issue);
        return id;
    }
    if (fifo_push(c, id)) {
        tsl__sim_fail_oom(s);
        return -1;
    }
    return id;
}

/* An end event is in force when it is at the transfer's current end key
 * and the transfer has not ended yet (the fair model queues a new end each
 * time a channel's share changes, leaving the older ones stale). */
int tsl__sim_xfer_due(const sim *s, const tsl__sim_ev *e) {
    const xfer *x = &s->xf[e->arg];
    return x->state != XF_DONE && tsl__sim_key_cmp(x->end_at, e->at) == 0;
}

/* Transfer `id` ended now: it leaves its channel (the fair model shares the
 * bandwidth among the others), and its FIFO starts the first waiting
 * transfer, if any. */
void tsl__sim_chan_done(sim *s, int64_t id) {
    xfer *x = &s->xf[id];
    if (s->fair) tsl__sim_fair_end(s, id);
    x->state = XF_DONE;
    chan *c = chan_of(s, x->job, x->to_device);
    TSL_ASSERT(c->busy);
    c->busy = 0;
    if (c->n == 0) return;
    int64_t next = c->fifo[c->head++];
    if (--c->n == 0) c->head = 0;
    c->busy = 1;
    xfer_start(s, next, tsl__sim_rel_now(s, s->xf[next].job));
}
