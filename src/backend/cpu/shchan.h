/*
 * shchan.h - one direction's copy channel shared by the processes of a
 * shared device (internal; the block is tensile/shdev.h's, its layout
 * shdev_block.h): a FIFO ticket lock in shared memory that lets one chunk
 * at a time onto the channel, across processes, and the channel's clock
 * ("free at") that throttles the chunks so that the device-wide rate is
 * the device's pcie_gbps.
 *
 * A copy stream moves a transfer in chunks (TSL__COPY_CHUNK); for each
 * chunk it takes a ticket (acquire), reserves the chunk's time on the
 * channel (reserve: it starts when the channel is free, and ends bytes / G
 * later), copies, waits until the chunk's end, and hands the channel on
 * (release). A process that wants the next chunk takes a new ticket, behind
 * every process already waiting: concurrent transfers interleave chunk by
 * chunk, each active process getting an equal share of the chunks.
 *
 * A process that dies (SIGKILL) holding or waiting for a ticket never
 * blocks the others: a waiter that sees the served ticket not move for
 * TSL__SHCHAN_STUCK_NS checks its owner's pid and, if it is dead (or a
 * zombie), skips its ticket; tsl__shchan_reap does the same at once for a
 * process known dead. A skipped ticket's reserved time is given back.
 *
 * Every field is a lock-free C11 atomic (process-shared, no pointers); the
 * operations are sequentially consistent. Thread and process safety: every
 * function may be called from any thread of any process mapping the block.
 */
#ifndef TSL_BACKEND_CPU_SHCHAN_H
#define TSL_BACKEND_CPU_SHCHAN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Tickets whose owners are recorded at once: a process taking a ticket
 * more than this far behind the one served waits for its record's place. */
#define TSL__SHCHAN_RING 256
/* A served ticket that does not move for this long has its owner's pid
 * checked (a slow chunk of a live owner is waited for, however long). */
#define TSL__SHCHAN_STUCK_NS 100000000
/* A served ticket whose owner has not recorded itself for this long is
 * skipped (its owner, if alive, takes a new ticket). */
#define TSL__SHCHAN_UNRECORDED_NS 1000000000
/* A chunk may start this much before the present when the channel was busy
 * until then: the hand-over's wake-up is not counted as idle time. */
#define TSL__SHCHAN_CHAIN_NS 1000000

/* One direction's arbiter, inside the shared block (tsl__shchan_init). */
typedef struct tsl__shchan {
    _Alignas(64) _Atomic uint32_t next; /* the next ticket handed out */
    _Atomic uint32_t serving;           /* the ticket whose owner may hold the channel (futex word) */
    _Atomic uint32_t sleepers;          /* waiters in (or entering) FUTEX_WAIT on `serving` */
    _Atomic int32_t holder;             /* pid inside the critical section, 0: none */
    _Atomic int64_t free_at_ns;         /* CLOCK_MONOTONIC end of the last chunk reserved */
    _Atomic uint64_t chunks, bytes;     /* chunks and bytes that went through */
    _Atomic uint64_t skipped;           /* tickets of dead (or never recorded) owners skipped */
    _Atomic uint64_t overlaps;          /* a holder met another live holder: never (checked) */
    /* owner[t % RING]: ticket t's owner, (t << 32) | held << 31 | pid; pid 0:
     * ticket t was skipped */
    _Atomic uint64_t owner[TSL__SHCHAN_RING];
} tsl__shchan;

/* 1 if process pid exists and is not a zombie (kill(pid, 0) succeeds or
 * fails with EPERM, and /proc/PID/stat does not say Z or X); 0 for pid <= 0. */
int tsl__pid_alive(pid_t pid);

/* A free channel: no ticket handed out, free since the clock's start. */
void tsl__shchan_init(tsl__shchan *ch);

/* Blocks until the calling process (pid, its getpid()) holds the channel;
 * returns its ticket, for release. Waits sleep on a futex (with a timeout,
 * to check for a dead owner). Never fails. */
uint32_t tsl__shchan_acquire(tsl__shchan *ch, pid_t pid);

/* Holder only: reserves the channel for `bytes` at `gbps` GB/s (0: no
 * throttle) from max(free at, now - TSL__SHCHAN_CHAIN_NS, not_before_ns),
 * and returns the chunk's due time (CLOCK_MONOTONIC ns), which becomes the
 * channel's "free at". */
int64_t tsl__shchan_reserve(tsl__shchan *ch, int64_t not_before_ns, size_t bytes, double gbps);

/* Holder only: gives the channel to the next ticket and wakes the waiters. */
void tsl__shchan_release(tsl__shchan *ch, uint32_t ticket, pid_t pid);

/* Skips every ticket of process pid, which must be dead (TSL_ASSERT that it
 * is not alive): its waiting tickets at once, its held one with its
 * reserved time given back. For the reclaim of a dead job's slot. */
void tsl__shchan_reap(tsl__shchan *ch, pid_t pid);

/* The owner of the ticket served now (0 if none is recorded or the channel
 * is free) and the number of tickets handed out and not yet served. */
void tsl__shchan_peek(tsl__shchan *ch, pid_t *holder, uint32_t *queued);

#endif
