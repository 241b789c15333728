/* sim_channels.c - the copy channels shared by all jobs: host-to-device and
 * device-to-host, or one channel for both directions when the profile is not
 * duplex; each carries one transfer at a time, first come first served. */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_state.h"

static chan *chan_of(sim *s, int to_device) {
    return s->dev->duplex ? &s->ch[to_device ? 0 : 1] : &s->ch[0];
}

/* Transfer `id` starts now, at `start` (relative to its job's iteration). */
static void xfer_start(sim *s, int64_t id, double start) {
    xfer *x = &s->xf[id];
    x->start = start;
    tsl__sim_push_job(s, x->job, start + x->dur, PH_DONE, EV_COPY_END, (int32_t)id);
}

/* A new transfer for event e of job j, issued now (the current event's
 * time): starts at once if its channel is free, else waits in the channel's
 * FIFO. Returns its id; -1 if out of host memory (tsl__sim_fail_oom). */
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
                       .issue = tsl__sim_rel_now(s, j->index), .dur = j->ev_copy[e]};
    chan *c = chan_of(s, to_device);
    if (!c->busy) {
        c->busy = 1;
        xfer_start(s, id, s->xf[id].issue);
        return id;
    }
    if (c->head + c->n == c->cap) {
        if (c->head > 0) { /* compact */
            memmove(c->fifo, c->fifo + c->head, (size_t)c->n * sizeof *c->fifo);
            c->head = 0;
        }
        if (c->n == c->cap) {
            int64_t cap = c->cap ? 2 * c->cap : 64;
            int64_t *f = realloc(c->fifo, (size_t)cap * sizeof *f);
            if (!f) {
                tsl__sim_fail_oom(s);
                return -1;
            }
            c->fifo = f;
            c->cap = cap;
        }
    }
    c->fifo[c->head + c->n++] = id;
    return id;
}

/* The channel carrying direction to_device finished its transfer now: it
 * starts the first waiting one, if any. */
void tsl__sim_chan_done(sim *s, int to_device) {
    chan *c = chan_of(s, to_device);
    TSL_ASSERT(c->busy);
    c->busy = 0;
    if (c->n == 0) return;
    int64_t next = c->fifo[c->head++];
    if (--c->n == 0) c->head = 0;
    c->busy = 1;
    xfer_start(s, next, tsl__sim_rel_now(s, s->xf[next].job));
}
