/*
 * shchan.c - a copy channel shared by processes: a FIFO ticket lock with
 * dead-owner skipping, and the channel's clock. Contracts in shchan.h.
 *
 * Ordering: every atomic operation here is sequentially consistent (the
 * default of <stdatomic.h>); the reasoning below uses one total order.
 *
 * The lock. `next` hands out tickets (fetch_add); `serving` is the ticket
 * whose owner may hold the channel. A ticket's owner records itself in
 * owner[t % RING] = (t, pid) with a CAS from the slot's stale value (an
 * older ticket, already served), then waits until serving == t, and takes
 * the channel with a CAS of its record from (t, pid) to (t, pid, held).
 * Release stores holder = 0 and CASes serving from t to t + 1 (then wakes
 * the sleepers). Only the holder advances `serving`, except to skip a dead
 * ticket.
 *
 * The ring starts with every record stale: tickets start at RING, so the
 * zeros of a fresh block name tickets already served.
 *
 * Skipping. A ticket t = serving is skipped by writing the tombstone (t, 0)
 * into its record with a CAS from the value that was judged dead - a
 * record whose pid is not alive, or a stale value (t's owner took its
 * ticket and has not recorded itself for TSL__SHCHAN_UNRECORDED_NS) - and
 * then CASing serving from t to t + 1. Because the owner's own steps
 * (recording, taking the channel) are CASes on the same word, an owner and
 * a skipper never both win: an owner whose record was tombstoned sees it
 * (its CAS fails, or serving has passed its ticket) and takes a new ticket;
 * it never enters. A tombstone found at serving is completed (serving
 * advanced) by whoever sees it, so a skipper that dies half-way is
 * finished by the next waiter. Tickets are 32 bits and compared modulo
 * 2^32 ((int32_t)(a - b)); RING divides 2^32, so a ticket's record slot
 * never changes with the wrap.
 *
 * Sleeping. A waiter increments `sleepers`, then FUTEX_WAITs on `serving`
 * for the value it saw (the kernel compares atomically), with a timeout of
 * TSL__SHCHAN_STUCK_NS; release advances `serving`, then reads `sleepers`
 * and FUTEX_WAKEs all if any: in the total order either the waiter's
 * increment precedes the read (it is woken) or its FUTEX_WAIT sees the new
 * value (it does not sleep). The futex is shared (no FUTEX_PRIVATE_FLAG):
 * the kernel keys it by the shared page, so it works across processes.
 *
 * The clock. Only the holder reads and writes free_at_ns (a skipper lowers
 * it to the present with a CAS after a dead holder, whose reserved time
 * never ran); it is atomic because holders follow one another in
 * different processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/clock.h"
#include "backend/cpu/shchan.h"
#include "core/assert.h"

#define HELD ((uint64_t)1 << 31)
#define PID_MASK ((uint64_t)0x7fffffff)

static uint64_t rec(uint32_t t, pid_t pid, uint64_t held) {
    return (uint64_t)t << 32 | held | ((uint64_t)(uint32_t)pid & PID_MASK);
}
static uint32_t rec_ticket(uint64_t r) { return (uint32_t)(r >> 32); }
static pid_t rec_pid(uint64_t r) { return (pid_t)(r & PID_MASK); }

/* ---- processes ------------------------------------------------------------------- */

/* Contract: shchan.h. A zombie (killed, not yet reaped by its parent) still
 * answers kill(pid, 0): its state in /proc says it is dead. */
int tsl__pid_alive(pid_t pid) {
    if (pid <= 0) return 0;
    if (kill(pid, 0) != 0 && errno != EPERM) return 0;
    char path[48], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno != ENOENT; /* gone between the two looks; else: no /proc */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = '\0';
    /* "pid (comm) S ...": the state follows the last ')' (comm may hold one) */
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return 1;
    return p[2] != 'Z' && p[2] != 'X';
}

/* ---- sleeping on `serving` ---------------------------------------------------------- */

/* Sleeps until `serving` differs from `seen`, a wake-up, or timeout_ns. */
static void sleep_on(tsl__shchan *ch, uint32_t seen, int64_t timeout_ns) {
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000),
                          .tv_nsec = (long)(timeout_ns % 1000000000)};
    atomic_fetch_add(&ch->sleepers, 1);
    if (atomic_load(&ch->serving) == seen)
        (void)syscall(SYS_futex, (uint32_t *)&ch->serving, FUTEX_WAIT, seen, &ts, NULL, 0);
    atomic_fetch_sub(&ch->sleepers, 1);
}

static void wake_all(tsl__shchan *ch) {
    if (atomic_load(&ch->sleepers))
        (void)syscall(SYS_futex, (uint32_t *)&ch->serving, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* ---- skipping dead tickets ------------------------------------------------------------ */

/* Lowers free_at to now: a dead holder's reserved time never ran. */
static void give_back_time(tsl__shchan *ch) {
    int64_t now = tsl__mono_ns();
    int64_t fa = atomic_load(&ch->free_at_ns);
    while (fa > now && !atomic_compare_exchange_weak(&ch->free_at_ns, &fa, now)) {
    }
}

/* Skips ticket s (serving == s, its record tombstoned): serving moves on. */
static void advance_past(tsl__shchan *ch, uint32_t s) {
    uint32_t exp = s;
    if (atomic_compare_exchange_strong(&ch->serving, &exp, s + 1)) {
        atomic_fetch_add(&ch->skipped, 1);
        wake_all(ch);
    }
}

/* Tombstones ticket s's record if it still reads `seen` (a dead owner's
 * record, or a stale one); then skips s. After a dead holder, clears the
 * holder and gives its reserved time back. Returns 1 if s was skipped. */
static int skip(tsl__shchan *ch, uint32_t s, uint64_t seen) {
    _Atomic uint64_t *e = &ch->owner[s % TSL__SHCHAN_RING];
    if (!atomic_compare_exchange_strong(e, &seen, rec(s, 0, 0))) return 0;
    if (rec_ticket(seen) == s && (seen & HELD)) {
        int32_t p = (int32_t)rec_pid(seen);
        atomic_compare_exchange_strong(&ch->holder, &p, 0);
        give_back_time(ch);
    }
    advance_past(ch, s);
    return 1;
}

/* A waiter saw serving == s not move for `stuck_ns`: skips s if its owner
 * is dead, or has not recorded itself for TSL__SHCHAN_UNRECORDED_NS. */
static void unstick(tsl__shchan *ch, uint32_t s, int64_t stuck_ns) {
    uint64_t v = atomic_load(&ch->owner[s % TSL__SHCHAN_RING]);
    if (rec_ticket(v) == s) {
        if (!tsl__pid_alive(rec_pid(v))) skip(ch, s, v);
    } else if (stuck_ns >= TSL__SHCHAN_UNRECORDED_NS) {
        skip(ch, s, v);
    }
}

/* ---- the lock ----------------------------------------------------------------------------- */

/* A waiter's view of the served ticket: since when it has not moved, and
 * when its owner is checked next. */
typedef struct watch {
    uint32_t seen;
    int64_t since, check_at;
} watch;

/* One step of waiting while ticket s is served: completes a skip left at s
 * (a tombstone) at once; else checks s's owner if s has not moved for
 * TSL__SHCHAN_STUCK_NS since the last check, or sleeps until s moves, a
 * wake-up, or the next check. The caller reloads `serving` after it. */
static void wait_step(tsl__shchan *ch, uint32_t s, watch *w) {
    uint64_t v = atomic_load(&ch->owner[s % TSL__SHCHAN_RING]);
    if (rec_ticket(v) == s && rec_pid(v) == 0) {
        advance_past(ch, s);
        return;
    }
    int64_t now = tsl__mono_ns();
    if (s != w->seen) {
        w->seen = s;
        w->since = now;
        w->check_at = now + TSL__SHCHAN_STUCK_NS;
    } else if (now >= w->check_at) {
        unstick(ch, s, now - w->since);
        w->check_at = now + TSL__SHCHAN_STUCK_NS;
        return;
    }
    sleep_on(ch, s, w->check_at - now);
}

/* Records ticket t's owner in its slot of the ring. Returns 0 if t was
 * already skipped as unrecorded (the caller takes a new ticket). The slot
 * may hold a ticket RING older than t that is still waiting: then this
 * waits (helping as any waiter does) until it is served. */
static int record(tsl__shchan *ch, uint32_t t, pid_t pid, watch *w) {
    _Atomic uint64_t *e = &ch->owner[t % TSL__SHCHAN_RING];
    uint64_t old = atomic_load(e);
    for (;;) {
        if (rec_ticket(old) == t) return 0; /* tombstoned: skipped */
        uint32_t s = atomic_load(&ch->serving);
        if ((int32_t)(rec_ticket(old) - s) >= 0) { /* an older ticket, not yet served */
            wait_step(ch, s, w);
            old = atomic_load(e);
            continue;
        }
        if (atomic_compare_exchange_strong(e, &old, rec(t, pid, 0))) return 1;
    }
}

/* Waits until serving == t. Returns 1 with the channel taken, 0 if ticket
 * t was skipped (the caller takes a new one). `mine` is t's record. */
static int wait_turn(tsl__shchan *ch, uint32_t t, uint64_t mine, watch *w) {
    _Atomic uint64_t *e = &ch->owner[t % TSL__SHCHAN_RING];
    for (;;) {
        uint32_t s = atomic_load(&ch->serving);
        if (s == t) return atomic_compare_exchange_strong(e, &mine, mine | HELD);
        if ((int32_t)(s - t) > 0) return 0;
        wait_step(ch, s, w);
    }
}

void tsl__shchan_init(tsl__shchan *ch) {
    memset(ch, 0, sizeof *ch);
    atomic_init(&ch->next, TSL__SHCHAN_RING);
    atomic_init(&ch->serving, TSL__SHCHAN_RING);
}

/* Contract: shchan.h. The holder's pid is exchanged into `holder`: a live
 * previous one means two holders at once (counted in overlaps; the tests
 * assert none). */
uint32_t tsl__shchan_acquire(tsl__shchan *ch, pid_t pid) {
    TSL_ASSERT(pid > 0);
    for (;;) {
        uint32_t t = atomic_fetch_add(&ch->next, 1);
        watch w = {.seen = t}; /* not a served value while t waits: the first step sets it */
        if (!record(ch, t, pid, &w) || !wait_turn(ch, t, rec(t, pid, 0), &w)) continue;
        int32_t prev = atomic_exchange(&ch->holder, (int32_t)pid);
        if (prev != 0 && tsl__pid_alive(prev)) atomic_fetch_add(&ch->overlaps, 1);
        return t;
    }
}

/* Contract: shchan.h. A chunk of a transfer that waited behind others
 * starts where the channel became free, up to TSL__SHCHAN_CHAIN_NS in the
 * past (the wake-up of the hand-over), but never before the transfer
 * itself started (not_before_ns): a transfer still takes at least n / G. */
int64_t tsl__shchan_reserve(tsl__shchan *ch, int64_t not_before_ns, size_t bytes, double gbps) {
    int64_t now = tsl__mono_ns();
    int64_t start = atomic_load(&ch->free_at_ns);
    if (start < now - TSL__SHCHAN_CHAIN_NS) start = now - TSL__SHCHAN_CHAIN_NS;
    if (start < not_before_ns) start = not_before_ns;
    int64_t due = now;
    if (gbps > 0) {
        /* bytes / (GB/s) = ns; a wait beyond a century waits to the end of
         * the clock (never a wrapped deadline) */
        double wait = ceil((double)bytes / gbps);
        due = wait < 4e18 && start < INT64_MAX - (int64_t)wait ? start + (int64_t)wait : INT64_MAX;
    }
    atomic_store(&ch->free_at_ns, due);
    atomic_fetch_add(&ch->chunks, 1);
    atomic_fetch_add(&ch->bytes, (uint64_t)bytes);
    return due;
}

/* Contract: shchan.h. A CAS that fails on `holder` or `serving` means
 * someone else held the channel or skipped this ticket meanwhile: an
 * overlap (never; the tests assert none). */
void tsl__shchan_release(tsl__shchan *ch, uint32_t ticket, pid_t pid) {
    int32_t me = (int32_t)pid;
    if (!atomic_compare_exchange_strong(&ch->holder, &me, 0)) atomic_fetch_add(&ch->overlaps, 1);
    uint32_t exp = ticket;
    if (!atomic_compare_exchange_strong(&ch->serving, &exp, ticket + 1))
        atomic_fetch_add(&ch->overlaps, 1);
    wake_all(ch);
}

/* Contract: shchan.h. Tombstones pid's records among the tickets not yet
 * served, then completes the skip of the served one if it was pid's. */
void tsl__shchan_reap(tsl__shchan *ch, pid_t pid) {
    TSL_ASSERT(pid > 0 && !tsl__pid_alive(pid));
    uint32_t s = atomic_load(&ch->serving), n = atomic_load(&ch->next);
    for (uint32_t t = s; t != n && (uint32_t)(t - s) < TSL__SHCHAN_RING; t++) {
        uint64_t v = atomic_load(&ch->owner[t % TSL__SHCHAN_RING]);
        if (rec_ticket(v) == t && rec_pid(v) == pid) {
            if (t == s) skip(ch, t, v);
            else atomic_compare_exchange_strong(&ch->owner[t % TSL__SHCHAN_RING], &v, rec(t, 0, 0));
        }
    }
    /* a tombstone at the served ticket (this reap's, or one skipped while
     * the loop ran) is completed; later tombstones are completed by the
     * waiters as serving reaches them */
    for (;;) {
        s = atomic_load(&ch->serving);
        uint64_t v = atomic_load(&ch->owner[s % TSL__SHCHAN_RING]);
        if (s == atomic_load(&ch->next) || rec_ticket(v) != s || rec_pid(v) != 0) break;
        advance_past(ch, s);
    }
}

void tsl__shchan_peek(tsl__shchan *ch, pid_t *holder, uint32_t *queued) {
    *holder = (pid_t)atomic_load(&ch->holder);
    *queued = atomic_load(&ch->next) - atomic_load(&ch->serving);
}
