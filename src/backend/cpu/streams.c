/*
 * streams.c - the CPU backend's streams and events. Contracts in streams.h.
 *
 * Locking: each stream has one mutex guarding its queue and stop flag, and
 * a condition variable `work` (an item arrived, or stop). Events have one
 * mutex and condition variable for the whole object (ev_mu, ev_cv): an
 * event's completion time is written, and its `done` flag set (release
 * order), under ev_mu, and ev_cv is broadcast; event_query reads `done`
 * without the lock (acquire) and then the time. ev_mu also guards the list
 * of live events and the sticky error. A stream's items are run with no
 * lock held. Reference counts are atomic; the thread that drops the last
 * reference frees the event (unlinking it under ev_mu).
 *
 * A copy stream of a shared device holds its channel (shchan.c) for one
 * chunk at a time, with no lock of this file held: the ticket lock is the
 * only thing it waits for besides its own queue.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "backend/cpu/clock.h"
#include "backend/cpu/shdev_block.h"
#include "backend/cpu/streams.h"
#include "core/assert.h"

typedef enum { IT_KERNEL, IT_COPY, IT_RECORD, IT_WAIT, IT_HOST } item_kind;

typedef struct item {
    struct item *next;
    item_kind kind;
    tsl_dev_event *ev;     /* RECORD, WAIT */
    void *dst;             /* COPY */
    const void *src;
    size_t n;
    tsl_kernel_fn fn;      /* KERNEL: args.in / args.out point into ptrs */
    void (*host)(void *);  /* HOST: host(host_arg) */
    void *host_arg;
    tsl_kernel_args args;
    void **ptrs;
} item;

struct tsl_dev_event {
    atomic_int done;
    atomic_int refs;
    int waiters;           /* threads blocked on it (ev_mu) */
    double t_ms;           /* completion time, written before done */
    tsl_dev_event *prev, *next; /* the live events (ev_mu) */
};

typedef struct stream {
    tsl__streams *owner;
    tsl_stream id;
    pthread_mutex_t mu;
    pthread_cond_t work;
    item *head, *tail;
    double gbps;           /* copy streams */
    tsl__shchan *chan;     /* copy streams of a shared device: its channel */
    int stop;
    int running;           /* its thread was created and not joined */
    int inline_run;        /* synchronous compute: items run at enqueue */
    pthread_t thread;
} stream;

struct tsl__streams {
    stream st[TSL_N_STREAMS];
    tsl__streams_opts o;
    pthread_mutex_t ev_mu;
    pthread_cond_t ev_cv;
    tsl_dev_event *live;
    tsl_status err;        /* first failure of an asynchronous kernel */
    char err_msg[512];
    uint64_t kernels;      /* kernels run on the compute thread (delay sequence) */
    pid_t pid;             /* this process (a shared device's tickets name it) */
};

/* ---- the clock ------------------------------------------------------------------ */

double tsl_backend_now_ms(void) { return (double)tsl__mono_ns() * 1e-6; }

/* ---- events --------------------------------------------------------------------- */

static tsl_dev_event *event_new(tsl__streams *s, int refs) {
    tsl_dev_event *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    atomic_init(&e->done, 0);
    atomic_init(&e->refs, refs);
    pthread_mutex_lock(&s->ev_mu);
    e->next = s->live;
    if (s->live) s->live->prev = e;
    s->live = e;
    pthread_mutex_unlock(&s->ev_mu);
    return e;
}

static void event_unref(tsl__streams *s, tsl_dev_event *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_lock(&s->ev_mu);
    if (e->prev) e->prev->next = e->next;
    else s->live = e->next;
    if (e->next) e->next->prev = e->prev;
    pthread_mutex_unlock(&s->ev_mu);
    free(e);
}

/* Completes e; wakes the blocked threads only if one waits for e (most
 * events nobody waits for: a broadcast each would wake every waiter of the
 * object for nothing). */
static void event_complete(tsl__streams *s, tsl_dev_event *e) {
    pthread_mutex_lock(&s->ev_mu);
    e->t_ms = tsl_backend_now_ms();
    atomic_store_explicit(&e->done, 1, memory_order_release);
    if (e->waiters) pthread_cond_broadcast(&s->ev_cv);
    pthread_mutex_unlock(&s->ev_mu);
}

int tsl__event_query(tsl_dev_event *ev) {
    TSL_ASSERT(ev);
    return atomic_load_explicit(&ev->done, memory_order_acquire);
}

static void event_block(tsl__streams *s, tsl_dev_event *e) {
    if (tsl__event_query(e)) return;
    pthread_mutex_lock(&s->ev_mu);
    e->waiters++;
    while (!atomic_load_explicit(&e->done, memory_order_acquire))
        pthread_cond_wait(&s->ev_cv, &s->ev_mu);
    e->waiters--;
    pthread_mutex_unlock(&s->ev_mu);
}

/* The sticky error, recorded again on the calling thread. */
static tsl_status sticky(tsl__streams *s) {
    pthread_mutex_lock(&s->ev_mu);
    tsl_status err = s->err;
    char msg[sizeof s->err_msg];
    snprintf(msg, sizeof msg, "%s", s->err_msg);
    pthread_mutex_unlock(&s->ev_mu);
    return err == TSL_OK ? TSL_OK : tsl_fail(err, "%s", msg);
}

tsl_status tsl__event_sync(tsl__streams *s, tsl_dev_event *ev) {
    event_block(s, ev);
    return sticky(s);
}

tsl_status tsl__event_elapsed_ms(tsl_dev_event *from, tsl_dev_event *to, double *ms) {
    if (!tsl__event_query(from) || !tsl__event_query(to))
        return tsl_fail(TSL_ERR_INVALID, "event elapsed time: an event has not completed");
    *ms = to->t_ms - from->t_ms;
    return TSL_OK;
}

void tsl__event_release(tsl__streams *s, tsl_dev_event *ev) {
    if (ev) event_unref(s, ev);
}

/* ---- items ---------------------------------------------------------------------- */

/* Copies n bytes; throttled to gbps GB/s in chunks (see streams.h). */
static void transfer(void *dst, const void *src, size_t n, double gbps) {
    if (gbps <= 0) {
        if (n) memcpy(dst, src, n);
        return;
    }
    int64_t t0 = tsl__mono_ns();
    size_t off = 0;
    while (off < n) {
        size_t c = n - off < TSL__COPY_CHUNK ? n - off : TSL__COPY_CHUNK;
        memcpy((uint8_t *)dst + off, (const uint8_t *)src + off, c);
        off += c;
        /* bytes / (GB/s) = nanoseconds. A wait beyond a century (a
         * throttle of 1e-300 GB/s) waits to the end of the clock: never a
         * wrapped, negative deadline that would not throttle at all */
        double wait = ceil((double)off / gbps);
        tsl__wait_until_ns(wait < 4e18 ? t0 + (int64_t)wait : INT64_MAX);
    }
}

/* Copies n bytes through a shared device's channel: each chunk under a
 * ticket of its own, throttled on the channel's clock at the device's rate,
 * never starting before the transfer did (shchan.h). */
static void transfer_shared(stream *st, void *dst, const void *src, size_t n) {
    tsl__streams *s = st->owner;
    int dir = st->id == TSL_STREAM_H2D ? 0 : 1;
    double gbps = tsl_shdev_pcie_gbps(s->o.shdev);
    int64_t t0 = tsl__mono_ns();
    for (size_t off = 0; off < n;) {
        size_t c = n - off < TSL__COPY_CHUNK ? n - off : TSL__COPY_CHUNK;
        uint32_t ticket = tsl__shchan_acquire(st->chan, s->pid);
        int64_t due = tsl__shchan_reserve(st->chan, t0, c, gbps);
        memcpy((uint8_t *)dst + off, (const uint8_t *)src + off, c);
        tsl__wait_until_ns(due);
        tsl__shchan_release(st->chan, ticket, s->pid);
        tsl__shdev_count_copy(s->o.shdev, s->o.shdev_slot, dir, c);
        off += c;
    }
}

/* Runs one item on the stream's thread (or inline); returns a kernel's
 * status (TSL_OK for the other kinds). Frees nothing. */
static tsl_status run_item(stream *st, item *it) {
    tsl__streams *s = st->owner;
    switch (it->kind) {
    case IT_KERNEL: {
        if (!st->inline_run && s->o.kernel_delay_us > 0) {
            /* a late start, varying from kernel to kernel (deterministic) */
            uint64_t k = s->kernels++ * 0x9E3779B97F4A7C15ull;
            double frac = (double)(k >> 40) / (double)(1ull << 24);
            tsl__sleep_until_ns(tsl__mono_ns() + (int64_t)(s->o.kernel_delay_us * 1e3 * frac));
        }
        tsl_status rc = it->fn(&it->args);
        if (rc != TSL_OK && !st->inline_run) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", tsl_last_error());
            pthread_mutex_lock(&s->ev_mu);
            if (s->err == TSL_OK) {
                s->err = rc;
                snprintf(s->err_msg, sizeof s->err_msg, "kernel of op '%s': %s",
                         it->args.op->name, msg);
            }
            pthread_cond_broadcast(&s->ev_cv);
            pthread_mutex_unlock(&s->ev_mu);
        }
        return rc;
    }
    case IT_COPY:
        if (st->chan) transfer_shared(st, it->dst, it->src, it->n);
        else transfer(it->dst, it->src, it->n, st->id == TSL_STREAM_COMPUTE ? 0.0 : st->gbps);
        return TSL_OK;
    case IT_RECORD:
        event_complete(s, it->ev);
        event_unref(s, it->ev);
        return TSL_OK;
    case IT_WAIT:
        event_block(s, it->ev);
        event_unref(s, it->ev);
        return TSL_OK;
    case IT_HOST:
        it->host(it->host_arg);
        return TSL_OK;
    }
    return TSL_OK;
}

static void item_free(item *it) {
    free(it->ptrs);
    free(it);
}

/* The thread of a stream: serves its queue in order until stopped with an
 * empty queue (stopping never drops an item). */
static void *stream_main(void *arg) {
    stream *st = arg;
    static const char *const thread_names[] = {"tsl-compute", "tsl-h2d", "tsl-d2h"};
    (void)prctl(PR_SET_NAME, thread_names[st->id], 0UL, 0UL, 0UL); /* for top and perf */
    if (st->id == TSL_STREAM_COMPUTE) tsl_cpu_set_threads(st->owner->o.nthreads);
    else /* a copy channel's throttle sleeps to absolute deadlines: no 50 µs
          * default timer slack on top of each (Linux; best effort) */
        (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (!st->head && !st->stop) pthread_cond_wait(&st->work, &st->mu);
        if (!st->head) break;
        item *it = st->head;
        st->head = it->next;
        if (!st->head) st->tail = NULL;
        pthread_mutex_unlock(&st->mu);
        run_item(st, it);
        item_free(it);
        pthread_mutex_lock(&st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Runs `it` now (synchronous compute) or appends it to its stream. */
static tsl_status enqueue(tsl__streams *s, tsl_stream id, item *it) {
    stream *st = &s->st[id];
    if (st->inline_run) {
        tsl_status rc = run_item(st, it);
        item_free(it);
        return rc;
    }
    pthread_mutex_lock(&st->mu);
    TSL_ASSERT(!st->stop);
    if (st->tail) st->tail->next = it;
    else st->head = it;
    st->tail = it;
    pthread_cond_signal(&st->work);
    pthread_mutex_unlock(&st->mu);
    return TSL_OK;
}

static item *item_new(item_kind kind) {
    item *it = calloc(1, sizeof *it);
    if (it) it->kind = kind;
    return it;
}

/* ---- the API -------------------------------------------------------------------- */

tsl_status tsl__streams_kernel(tsl__streams *s, tsl_kernel_fn fn, const tsl_kernel_args *a) {
    item *it = item_new(IT_KERNEL);
    int n_in = a->op->n_in, n_out = a->op->n_out;
    void **ptrs = it ? malloc(sizeof *ptrs * (size_t)(n_in + n_out + 1)) : NULL;
    if (!ptrs) {
        free(it);
        return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory enqueueing op '%s'",
                        a->op->name);
    }
    for (int i = 0; i < n_in; i++) ptrs[i] = a->in[i];
    for (int i = 0; i < n_out; i++) ptrs[n_in + i] = a->out[i];
    it->fn = fn;
    it->args = *a;
    it->args.in = ptrs;
    it->args.out = ptrs + n_in;
    it->ptrs = ptrs;
    return enqueue(s, TSL_STREAM_COMPUTE, it);
}

tsl_status tsl__streams_copy(tsl__streams *s, tsl_stream id, void *dst, const void *src,
                             size_t n) {
    TSL_ASSERT((unsigned)id < TSL_N_STREAMS);
    if (n && (!dst || !src))
        return tsl_fail(TSL_ERR_INVALID, "cpu backend: copy of %zu bytes with a NULL pointer", n);
    item *it = item_new(IT_COPY);
    if (!it) return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory for a %zu-byte copy", n);
    it->dst = dst;
    it->src = src;
    it->n = n;
    return enqueue(s, id, it);
}

tsl_status tsl__streams_record(tsl__streams *s, tsl_stream id, tsl_dev_event **ev) {
    TSL_ASSERT((unsigned)id < TSL_N_STREAMS && ev);
    item *it = item_new(IT_RECORD);
    tsl_dev_event *e = it ? event_new(s, 2) : NULL; /* the caller's and the item's */
    if (!e) {
        free(it);
        return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory for an event");
    }
    it->ev = e;
    *ev = e;
    return enqueue(s, id, it);
}

tsl_status tsl__streams_host_func(tsl__streams *s, tsl_stream id, void (*fn)(void *arg),
                                  void *arg) {
    TSL_ASSERT((unsigned)id < TSL_N_STREAMS && fn);
    item *it = item_new(IT_HOST);
    if (!it) return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory for a host function");
    it->host = fn;
    it->host_arg = arg;
    return enqueue(s, id, it);
}

tsl_status tsl__streams_wait(tsl__streams *s, tsl_stream id, tsl_dev_event *ev) {
    TSL_ASSERT((unsigned)id < TSL_N_STREAMS && ev);
    item *it = item_new(IT_WAIT);
    if (!it) return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory for a stream wait");
    atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed);
    it->ev = ev;
    return enqueue(s, id, it);
}

tsl_status tsl__streams_sync(tsl__streams *s) {
    for (int i = 0; i < TSL_N_STREAMS; i++) {
        tsl_dev_event *e;
        if (tsl__streams_record(s, (tsl_stream)i, &e) != TSL_OK) {
            /* out of host memory for a marker: wait for the queue to empty */
            tsl_clear_error();
            stream *st = &s->st[i];
            for (;;) {
                pthread_mutex_lock(&st->mu);
                int empty = st->head == NULL;
                pthread_mutex_unlock(&st->mu);
                if (empty) break;
                tsl__sleep_until_ns(tsl__mono_ns() + 100000);
            }
            continue;
        }
        event_block(s, e);
        event_unref(s, e);
    }
    return sticky(s);
}

void tsl__streams_set_gbps(tsl__streams *s, double gbps) {
    TSL_ASSERT(isfinite(gbps) && gbps >= 0);
    for (int i = TSL_STREAM_H2D; i <= TSL_STREAM_D2H; i++) {
        pthread_mutex_lock(&s->st[i].mu);
        s->st[i].gbps = gbps;
        pthread_mutex_unlock(&s->st[i].mu);
    }
}

/* Stops and joins a stream's thread (its queue drained first). */
static void stream_close(stream *st) {
    if (st->running) {
        pthread_mutex_lock(&st->mu);
        st->stop = 1;
        pthread_cond_broadcast(&st->work);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->thread, NULL);
        st->running = 0;
    }
    TSL_ASSERT(st->head == NULL);
    pthread_cond_destroy(&st->work);
    pthread_mutex_destroy(&st->mu);
}

tsl_status tsl__streams_new(const tsl__streams_opts *o, tsl__streams **out) {
    tsl__streams *s = calloc(1, sizeof *s);
    if (!s) return tsl_fail(TSL_ERR_OOM, "cpu backend: out of host memory");
    s->o = *o;
    if (s->o.nthreads < 1) s->o.nthreads = 1;
    s->pid = getpid();
    pthread_mutex_init(&s->ev_mu, NULL);
    pthread_cond_init(&s->ev_cv, NULL);
    static const char *const names[] = {"compute", "host-to-device", "device-to-host"};
    for (int i = 0; i < TSL_N_STREAMS; i++) {
        stream *st = &s->st[i];
        st->owner = s;
        st->id = (tsl_stream)i;
        pthread_mutex_init(&st->mu, NULL);
        pthread_cond_init(&st->work, NULL);
        if (i != TSL_STREAM_COMPUTE && o->shdev)
            st->chan = tsl__shdev_chan(o->shdev, i == TSL_STREAM_H2D ? 0 : 1);
        if (i == TSL_STREAM_COMPUTE && !o->async_compute) {
            st->inline_run = 1;
            continue;
        }
        int rc = pthread_create(&st->thread, NULL, stream_main, st);
        if (rc != 0) {
            for (int k = 0; k <= i; k++) stream_close(&s->st[k]); /* the later ones: not made */
            pthread_cond_destroy(&s->ev_cv);
            pthread_mutex_destroy(&s->ev_mu);
            free(s);
            return tsl_fail(TSL_ERR_INTERNAL, "cpu backend: cannot start the %s stream's thread: %s",
                            names[i], strerror(rc));
        }
        st->running = 1;
    }
    *out = s;
    return TSL_OK;
}

void tsl__streams_free(tsl__streams *s) {
    if (!s) return;
    for (int i = 0; i < TSL_N_STREAMS; i++) stream_close(&s->st[i]);
    tsl_dev_event *e = s->live; /* events the caller never released */
    while (e) {
        tsl_dev_event *next = e->next;
        free(e);
        e = next;
    }
    pthread_cond_destroy(&s->ev_cv);
    pthread_mutex_destroy(&s->ev_mu);
    free(s);
}
