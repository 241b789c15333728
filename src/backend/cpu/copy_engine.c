/*
 * copy_engine.c - the CPU backend's host-to-device and device-to-host copy
 * channels: one thread each, a FIFO queue each, completion events, optional
 * throttling to a PCIe-like bandwidth. Contracts in copy_engine.h.
 *
 * Locking: each channel has one mutex guarding its queue, counters, gbps and
 * stop flag, with two condition variables: `work` (the queue got a transfer
 * or the channel is stopping) and `finished` (a transfer completed; waiters
 * for one event and drain share it). An event's `done` flag is written under
 * its channel's mutex with release order, so event_done can read it without
 * the lock (acquire) and then read the times the channel wrote before. The
 * engine's list of unreleased events has its own mutex.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/copy_engine.h"
#include "core/assert.h"

typedef struct channel channel;

struct tsl_copy_event {
    tsl__copy_engine *engine;
    channel *ch;
    void *dst;
    const void *src;
    size_t n;
    tsl_copy_event *next;               /* channel queue */
    tsl_copy_event *all_prev, *all_next; /* engine's unreleased events */
    double start_ms, end_ms;            /* written by the channel before done */
    atomic_int done;
};

struct channel {
    pthread_mutex_t mu;
    pthread_cond_t work;
    pthread_cond_t finished;
    tsl_copy_event *head, *tail;
    uint64_t submitted, completed;
    double gbps;
    int stop;
    int running; /* the thread was created (and not joined yet) */
    pthread_t thread;
};

struct tsl__copy_engine {
    channel ch[2]; /* indexed by tsl_copy_dir */
    pthread_mutex_t list_mu;
    tsl_copy_event *all;
};

/* ---- the clock ----------------------------------------------------------- */

static int64_t ts_ns(const struct timespec *ts) {
    return (int64_t)ts->tv_sec * 1000000000 + (int64_t)ts->tv_nsec;
}

static double ns_to_ms(int64_t ns) { return (double)ns * 1e-6; }

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts_ns(&ts);
}

/* Monotonic milliseconds (CLOCK_MONOTONIC); the clock of event times. */
double tsl_backend_now_ms(void) { return ns_to_ms(mono_ns()); }

/* Sleeps until CLOCK_MONOTONIC reaches due_ns (returns at once if past). */
static void sleep_until_ns(int64_t due_ns) {
    struct timespec ts = {.tv_sec = (time_t)(due_ns / 1000000000),
                          .tv_nsec = (long)(due_ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* ---- one transfer -------------------------------------------------------- */

/* Copies ev's bytes and records its start and end times. Unthrottled
 * (gbps == 0): one memcpy. Throttled: 1 MiB chunks, chunk k released no
 * earlier than start + (bytes up to and including k) / gbps nanoseconds, so
 * the whole transfer lasts at least n / (gbps * 1e9) seconds. */
static void transfer(tsl_copy_event *ev, double gbps) {
    int64_t t0 = mono_ns();
    if (gbps <= 0) {
        if (ev->n) memcpy(ev->dst, ev->src, ev->n);
    } else {
        size_t off = 0;
        while (off < ev->n) {
            size_t c = ev->n - off < TSL__COPY_CHUNK ? ev->n - off : TSL__COPY_CHUNK;
            memcpy((uint8_t *)ev->dst + off, (const uint8_t *)ev->src + off, c);
            off += c;
            /* bytes / (GB/s) = nanoseconds */
            sleep_until_ns(t0 + (int64_t)ceil((double)off / gbps));
        }
    }
    int64_t t1 = mono_ns();
    ev->start_ms = ns_to_ms(t0);
    ev->end_ms = ns_to_ms(t1);
}

/* The channel thread: serves the queue in order, one transfer at a time,
 * until stopped with an empty queue (stopping never drops a transfer). */
static void *channel_main(void *arg) {
    channel *ch = arg;
    pthread_mutex_lock(&ch->mu);
    for (;;) {
        while (!ch->head && !ch->stop) pthread_cond_wait(&ch->work, &ch->mu);
        if (!ch->head) break; /* stopping, drained */
        tsl_copy_event *ev = ch->head;
        ch->head = ev->next;
        if (!ch->head) ch->tail = NULL;
        double gbps = ch->gbps;
        pthread_mutex_unlock(&ch->mu);

        transfer(ev, gbps);

        pthread_mutex_lock(&ch->mu);
        atomic_store_explicit(&ev->done, 1, memory_order_release);
        ch->completed++;
        pthread_cond_broadcast(&ch->finished);
    }
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}

/* ---- the engine ---------------------------------------------------------- */

/* Stops and joins a channel's thread (after its queue drained) and destroys
 * its synchronisation objects. */
static void channel_close(channel *ch) {
    if (ch->running) {
        pthread_mutex_lock(&ch->mu);
        ch->stop = 1;
        pthread_cond_broadcast(&ch->work);
        pthread_mutex_unlock(&ch->mu);
        pthread_join(ch->thread, NULL);
        ch->running = 0;
    }
    TSL_ASSERT(ch->head == NULL);
    pthread_cond_destroy(&ch->finished);
    pthread_cond_destroy(&ch->work);
    pthread_mutex_destroy(&ch->mu);
}

/* Creates both channels and their threads. On failure every channel created
 * so far is closed, the engine freed, and the status returned. */
tsl_status tsl__copy_engine_new(tsl__copy_engine **out) {
    tsl__copy_engine *e = calloc(1, sizeof *e);
    if (!e) return tsl_fail(TSL_ERR_OOM, "copy engine: out of host memory");
    pthread_mutex_init(&e->list_mu, NULL);
    int made = 0;
    for (; made < 2; made++) {
        channel *ch = &e->ch[made];
        pthread_mutex_init(&ch->mu, NULL);
        pthread_cond_init(&ch->work, NULL);
        pthread_cond_init(&ch->finished, NULL);
        int rc = pthread_create(&ch->thread, NULL, channel_main, ch);
        if (rc != 0) {
            for (int i = 0; i <= made; i++) channel_close(&e->ch[i]);
            pthread_mutex_destroy(&e->list_mu);
            free(e);
            return tsl_fail(TSL_ERR_INTERNAL, "copy engine: cannot start the %s channel thread: %s",
                            made == TSL_TO_DEVICE ? "host-to-device" : "device-to-host",
                            strerror(rc));
        }
        ch->running = 1;
    }
    *out = e;
    return TSL_OK;
}

/* Drains, joins, then frees the events nobody released. */
void tsl__copy_engine_free(tsl__copy_engine *e) {
    if (!e) return;
    for (int i = 0; i < 2; i++) channel_close(&e->ch[i]);
    tsl_copy_event *ev = e->all;
    while (ev) {
        tsl_copy_event *next = ev->all_next;
        free(ev);
        ev = next;
    }
    pthread_mutex_destroy(&e->list_mu);
    free(e);
}

/* Enqueues one transfer at the tail of its channel (see the header). */
tsl_status tsl__copy_engine_submit(tsl__copy_engine *e, tsl_copy_dir dir, void *dst,
                                   const void *src, size_t n, tsl_copy_event **ev) {
    TSL_ASSERT(e && ev);
    TSL_ASSERT(dir == TSL_TO_DEVICE || dir == TSL_TO_HOST);
    TSL_ASSERT(n == 0 || (dst && src));
    tsl_copy_event *x = calloc(1, sizeof *x);
    if (!x)
        return tsl_fail(TSL_ERR_OOM,
                        "copy engine: out of host memory for the event of a %zu-byte copy", n);
    channel *ch = &e->ch[dir];
    x->engine = e;
    x->ch = ch;
    x->dst = dst;
    x->src = src;
    x->n = n;
    atomic_init(&x->done, 0);

    pthread_mutex_lock(&e->list_mu);
    x->all_next = e->all;
    if (e->all) e->all->all_prev = x;
    e->all = x;
    pthread_mutex_unlock(&e->list_mu);

    pthread_mutex_lock(&ch->mu);
    TSL_ASSERT(!ch->stop);
    if (ch->tail)
        ch->tail->next = x;
    else
        ch->head = x;
    ch->tail = x;
    ch->submitted++;
    pthread_cond_signal(&ch->work);
    pthread_mutex_unlock(&ch->mu);
    *ev = x;
    return TSL_OK;
}

/* Waits on each channel until the transfers submitted before the call have
 * completed (counters, so later submissions do not prolong the wait). */
void tsl__copy_engine_drain(tsl__copy_engine *e) {
    TSL_ASSERT(e);
    for (int i = 0; i < 2; i++) {
        channel *ch = &e->ch[i];
        pthread_mutex_lock(&ch->mu);
        uint64_t target = ch->submitted;
        while (ch->completed < target) pthread_cond_wait(&ch->finished, &ch->mu);
        pthread_mutex_unlock(&ch->mu);
    }
}

void tsl__copy_engine_set_gbps(tsl__copy_engine *e, double gbps) {
    TSL_ASSERT(e);
    TSL_ASSERT(isfinite(gbps) && gbps >= 0);
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&e->ch[i].mu);
        e->ch[i].gbps = gbps;
        pthread_mutex_unlock(&e->ch[i].mu);
    }
}

/* ---- events -------------------------------------------------------------- */

int tsl__copy_event_done(tsl_copy_event *ev) {
    TSL_ASSERT(ev);
    return atomic_load_explicit(&ev->done, memory_order_acquire);
}

void tsl__copy_event_wait(tsl_copy_event *ev) {
    TSL_ASSERT(ev);
    if (atomic_load_explicit(&ev->done, memory_order_acquire)) return;
    channel *ch = ev->ch;
    pthread_mutex_lock(&ch->mu);
    while (!atomic_load_explicit(&ev->done, memory_order_acquire))
        pthread_cond_wait(&ch->finished, &ch->mu);
    pthread_mutex_unlock(&ch->mu);
}

void tsl__copy_event_times(tsl_copy_event *ev, double *start_ms, double *end_ms) {
    TSL_ASSERT(tsl__copy_event_done(ev));
    if (start_ms) *start_ms = ev->start_ms;
    if (end_ms) *end_ms = ev->end_ms;
}

/* Unlinks the event from the engine's list of unreleased events and frees
 * it. */
void tsl__copy_event_release(tsl_copy_event *ev) {
    if (!ev) return;
    /* Releasing a transfer in flight is a bug: the channel still writes it. */
    TSL_ASSERT(tsl__copy_event_done(ev));
    tsl__copy_engine *e = ev->engine;
    pthread_mutex_lock(&e->list_mu);
    if (ev->all_prev)
        ev->all_prev->all_next = ev->all_next;
    else
        e->all = ev->all_next;
    if (ev->all_next) ev->all_next->all_prev = ev->all_prev;
    pthread_mutex_unlock(&e->list_mu);
    free(ev);
}
