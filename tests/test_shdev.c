/*
 * test_shdev.c - one CPU device shared by several processes
 * (tensile/shdev.h, src/backend/cpu/shdev.c, shslot.c, shchan.c, and the
 * CPU backend as a job on it).
 *
 * The block: create, open, read; bad arguments and bad blocks (magic,
 * version, struct size, object size, another user's) refused with their
 * values named; a stale block (no live pid) reinitialised, a live one
 * adopted with its slots, ledger and channels. A backend on a shared
 * device in one process: its slot and the global ledger follow its
 * allocator to the byte, its arena is within its region, capacity changes
 * (below the footprint refused, above the region refused), regions bounded
 * by the capacity, attach refusals, detach publishes zeros. Across forked
 * job processes: the global load and footprint equal the sums of the
 * slots at every barrier, the peak is exactly the crest of a rising phase
 * and never below a sum seen; growing arenas against lowered regions
 * never both succeed; copies from several processes are never on one
 * channel at once (a holder counter in shared memory, and the block's
 * overlap count), every byte arrives, two large transfers both progress
 * before either ends; a holder SIGKILLed mid-chunk and a waiter killed in
 * the queue do not stop the others, and reclaiming their slots restores
 * the global sums, exactly even after a death in the middle of a
 * publication.
 *
 * No assertion on time (the machine is shared): throughputs are printed.
 * Children report through their exit status (Criterion's assertions stay
 * in the test's own process) and shared memory of the test's own.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_backend.h"
#include "helpers.h"
#include "backend/cpu/shchan.h"
#include "backend/cpu/shdev_block.h"
#include "tensile/backend_cpu.h"
#include "tensile/shdev.h"

#define MiB ((size_t)1 << 20)
#define KiB ((size_t)1 << 10)

/* ---- names, cleaned up after each test -------------------------------------------------- */

static char names[8][96];
static int n_names;

/* A fresh device name for this test process; removed by cleanup(). */
static const char *new_name(const char *what) {
    cr_assert_lt(n_names, 8);
    char tag[64];
    snprintf(tag, sizeof tag, "test-%d-%s", (int)getpid(), what);
    char *buf = names[n_names++];
    cr_assert_eq(tsl_shdev_name(buf, sizeof names[0], tag), TSL_OK, "%s", tsl_last_error());
    tsl_shdev_unlink(buf);
    return buf;
}

/* A fresh device for this test (removed by cleanup); *name is its name. */
static tsl_shdev *new_device(const char *what, size_t capacity, double gbps, int slots,
                             const char **name) {
    *name = new_name(what);
    tsl_shdev *d = NULL;
    cr_assert_eq(tsl_shdev_create(*name, capacity, gbps, slots, &d), TSL_OK, "%s", tsl_last_error());
    return d;
}

static void cleanup(void) {
    for (int i = 0; i < n_names; i++) tsl_shdev_unlink(names[i]);
}

/* ---- memory shared with the children ------------------------------------------------------ */

typedef struct page {
    _Atomic int arrived, gen;      /* the barrier */
    _Atomic int go[8];             /* the parent lets child i go on */
    _Atomic int ready[8];          /* child i is ready */
    _Atomic int inside, max_inside; /* holders inside a critical section */
    _Atomic int lowered, grown;    /* the region/arena crossing test */
    _Atomic uint64_t value[8];     /* per child results */
    _Atomic uint64_t total;
} page;

static page *page_new(void) {
    page *p = mmap(NULL, sizeof(page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    memset(p, 0, sizeof *p);
    return p;
}

static void page_free(page *p) { munmap(p, sizeof *p); }

static void pause_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A barrier of `parties` processes; 0 after 120 s without the others (a
 * sibling died: a deadlock guard, not a timing assertion). */
static int barrier(page *p, int parties) {
    int gen = atomic_load(&p->gen);
    if (atomic_fetch_add(&p->arrived, 1) + 1 == parties) {
        atomic_store(&p->arrived, 0);
        atomic_fetch_add(&p->gen, 1);
        return 1;
    }
    double until = now_s() + 120;
    while (atomic_load(&p->gen) == gen) {
        if (now_s() > until) return 0;
        pause_us(50);
    }
    return 1;
}

/* Waits until *flag is set (deadlock guard as above). */
static int wait_flag(_Atomic int *flag) {
    double until = now_s() + 120;
    while (!atomic_load(flag)) {
        if (now_s() > until) return 0;
        pause_us(100);
    }
    return 1;
}

/* ---- children ----------------------------------------------------------------------------- */

/* Ends a child with _exit: no atexit handler of the test runner runs in a
 * child. (No leak check there either: LeakSanitizer cannot stop the
 * parent's threads it still lists after fork, and warns so; the children's
 * paths - open, attach, allocate, copy, detach, close - are leak-checked in
 * this process by backend_on_a_shared_device.) ThreadSanitizer's _exit
 * still makes a child that saw a race exit with 66. */
static void child_exit(int code) {
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

#define CHILD_CHECK(cond, ...)                                                                  \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "child %d: %s:%d: %s: ", (int)getpid(), __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
            child_exit(1);                                                                      \
        }                                                                                       \
    } while (0)

typedef struct job {
    const char *name;
    int slot;
    int idx;
    page *pg;
    int parties;    /* for barriers: the children and the parent */
    uint64_t seed;
} job;

static pid_t spawn(void (*fn)(const job *), const job *j) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        fn(j);
        child_exit(0);
    }
    return pid;
}

/* Claims slots 0 to n-1 (jobs 1 to n) with `region` bytes each and starts
 * fn in a child per slot: job i has seed seed + i; parties are for the
 * barriers. */
static void spawn_jobs(tsl_shdev *d, const char *name, page *pg, int n, size_t region, int parties,
                       uint64_t seed, void (*fn)(const job *), pid_t *kids) {
    for (int i = 0; i < n; i++) {
        cr_assert_eq(tsl_shdev_claim(d, i, 1 + (uint64_t)i, 0, region), TSL_OK, "%s",
                     tsl_last_error());
        job j = {.name = name, .slot = i, .idx = i, .pg = pg, .parties = parties,
                 .seed = seed + (uint64_t)i};
        kids[i] = spawn(fn, &j);
    }
}

/* Waits for child pid; asserts it exited with status 0. */
static void reap_ok(pid_t pid, const char *what) {
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0) {
    }
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "%s (pid %d) %s %d", what, (int)pid,
              WIFEXITED(ws) ? "exited with" : "was killed by signal",
              WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
}

/* A child's backend on the device, in its slot (capacity 0: the region). */
static tsl_backend *child_attach(const char *name, int slot, size_t capacity, tsl_shdev **dev) {
    CHILD_CHECK(tsl_shdev_open(name, dev) == TSL_OK, "%s", tsl_last_error());
    tsl_cpu_backend_opts o = tsl_cpu_backend_opts_default(capacity);
    o.shdev = *dev;
    o.shdev_slot = slot;
    tsl_backend *b = NULL;
    CHILD_CHECK(tsl_cpu_backend_new_opts(&o, &b) == TSL_OK, "%s", tsl_last_error());
    return b;
}

static void child_detach(tsl_backend *b, tsl_shdev *dev) {
    tsl_backend_free(b);
    tsl_shdev_close(dev);
}

static tsl_shdev_info *read_info(tsl_shdev *d) {
    static tsl_shdev_info info;
    tsl_shdev_read(d, &info);
    return &info;
}

/* ---- the block ------------------------------------------------------------------------------ */

Test(shdev, create_open_and_read, .fini = cleanup) {
    const char *name = new_name("basic");
    char expect[64];
    snprintf(expect, sizeof expect, "/tensile-%u-test-%d-basic", (unsigned)geteuid(), (int)getpid());
    cr_assert_str_eq(name, expect);
    tsl_shdev *d = NULL, *j = NULL;
    cr_assert_eq(tsl_shdev_create(name, 64 * MiB, 2.5, 8, &d), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_adopted(d), 0);
    struct stat st;
    char path[128];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    if (stat(path, &st) == 0) cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->capacity_bytes, 64 * MiB);
    cr_assert_eq(in->pcie_gbps, 2.5);
    cr_assert_eq(in->max_slots, 8);
    cr_assert_eq(in->creator_pid, getpid());
    cr_assert_eq(in->load_bytes + in->footprint_bytes + in->peak_footprint_bytes, 0u);
    cr_assert_eq(tsl_shdev_free_slot(d), 0);
    /* a second mapping sees the first's changes */
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_capacity(j), 64 * MiB);
    cr_assert_eq(tsl_shdev_pcie_gbps(j), 2.5);
    cr_assert_eq(tsl_shdev_claim(d, 0, 42, 0, 16 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_claim(d, 3, 43, getpid(), 8 * MiB), TSL_OK, "%s", tsl_last_error());
    in = read_info(j);
    cr_assert(in->slot[0].in_use && in->slot[3].in_use && !in->slot[1].in_use);
    cr_assert_eq(in->slot[0].job_id, 42u);
    cr_assert_eq(in->slot[3].pid, getpid());
    cr_assert_eq(in->slot[0].region_bytes, 16 * MiB);
    cr_assert_eq(in->regions_bytes, 24 * MiB);
    cr_assert_eq(tsl_shdev_free_slot(j), 1);
    cr_assert_eq(tsl_shdev_reclaim(j, 0), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_free_slot(d), 0);
    tsl_shdev_close(j);
    tsl_shdev_close(d);
    cr_assert_eq(tsl_shdev_unlink(name), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_unlink(name), TSL_OK, "a name already gone is fine");
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), name) && strstr(tsl_last_error(), "daemon running"), "%s",
              tsl_last_error());
}

Test(shdev, bad_arguments_are_named, .fini = cleanup) {
    tsl_shdev *d = NULL;
    char big[260] = "/";
    memset(big + 1, 'a', 201);
    const char *bad_names[] = {"x", "/", "/a/b", "/a b", big};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(tsl_shdev_create(bad_names[i], MiB, 0, 4, &d), TSL_ERR_INVALID, "%s",
                     bad_names[i]);
        cr_assert(strstr(tsl_last_error(), "name"), "%s", tsl_last_error());
        cr_assert_eq(tsl_shdev_open(bad_names[i], &d), TSL_ERR_INVALID);
    }
    cr_assert_eq(tsl_shdev_create(NULL, MiB, 0, 4, &d), TSL_ERR_INVALID);
    const char *name = new_name("args");
    cr_assert_eq(tsl_shdev_create(name, 0, 0, 4, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "capacity"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, MiB, -1, 4, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "pcie_gbps -1"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, MiB, NAN, 4, &d), TSL_ERR_INVALID);
    cr_assert_eq(tsl_shdev_create(name, MiB, 1, 0, &d), TSL_ERR_INVALID);
    cr_assert_eq(tsl_shdev_create(name, MiB, 1, TSL_SHDEV_MAX_SLOTS + 1, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "max_slots 65"), "%s", tsl_last_error());
    char buf[16];
    cr_assert_eq(tsl_shdev_name(buf, sizeof buf, "a/b"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "0x2f"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_name(buf, sizeof buf, "a-rather-long-tag"), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "buffer has 16"), "%s", tsl_last_error());

    cr_assert_eq(tsl_shdev_create(name, 4 * MiB, 1, 4, &d), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_claim(d, 4, 1, 0, MiB), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "slot 4 outside [0, 4)"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_claim(d, -1, 1, 0, MiB), TSL_ERR_INVALID);
    cr_assert_eq(tsl_shdev_claim(d, 0, 1, -5, MiB), TSL_ERR_INVALID);
    cr_assert_eq(tsl_shdev_claim(d, 0, 7, 0, MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_claim(d, 0, 8, 0, MiB), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "in use (job 7"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_set_region(d, 1, MiB), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "slot 1 is not claimed"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_reclaim(d, 2), TSL_ERR_INVALID);
    /* the regions never sum above the capacity */
    cr_assert_eq(tsl_shdev_claim(d, 1, 9, 0, 3 * MiB + 1), TSL_ERR_OOM);
    cr_assert(strstr(tsl_last_error(), "above the capacity 4194304"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_free_slot(d), 1, "a refused claim leaves the slot free");
    cr_assert_eq(tsl_shdev_claim(d, 1, 9, 0, 3 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_set_region(d, 0, MiB + 1), TSL_ERR_OOM);
    cr_assert_eq(read_info(d)->slot[0].region_bytes, MiB, "unchanged");
    cr_assert_eq(tsl_shdev_set_region(d, 1, 2 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_set_region(d, 0, 2 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(read_info(d)->regions_bytes, 4 * MiB);
    tsl_shdev_close(d);
}

/* A raw object of `size` bytes under name (not a block). */
static void raw_object(const char *name, off_t size) {
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, size), 0);
    close(fd);
}

Test(shdev, open_refuses_bad_magic_version_size_and_uid, .fini = cleanup) {
    const char *name = new_name("bad");
    tsl_shdev *d = NULL, *j = NULL;
    cr_assert_eq(tsl_shdev_create(name, 8 * MiB, 1, 4, &d), TSL_OK, "%s", tsl_last_error());
    tsl__shblock *b = tsl__shdev_block(d);
    /* magic */
    atomic_store(&b->magic, 0x1234);
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "magic 0x0000000000001234"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, 8 * MiB, 1, 4, &j), TSL_ERR_FORMAT, "never overwritten");
    atomic_store(&b->magic, 0);
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "not initialised yet"), "%s", tsl_last_error());
    atomic_store(&b->magic, TSL__SHDEV_MAGIC);
    /* version, struct size */
    b->version = 99;
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "version 99"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, 8 * MiB, 1, 4, &j), TSL_ERR_FORMAT);
    b->version = TSL_SHDEV_VERSION;
    b->struct_size = 7;
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "struct size 7"), "%s", tsl_last_error());
    b->struct_size = (uint32_t)sizeof *b;
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_OK, "%s", tsl_last_error());
    tsl_shdev_close(j);
    tsl_shdev_close(d);
    cr_assert_eq(tsl_shdev_unlink(name), TSL_OK);

    /* an object of another size: refused by both */
    raw_object(name, 4096);
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "4096 bytes"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, 8 * MiB, 1, 4, &j), TSL_ERR_FORMAT);
    cr_assert_eq(tsl_shdev_unlink(name), TSL_OK);
    /* size 0: its creator died before sizing it; open waits, create initialises */
    raw_object(name, 0);
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "not initialised yet"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, 8 * MiB, 1, 4, &d), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_adopted(d), 0);
    cr_assert_eq(tsl_shdev_open(name, &j), TSL_OK, "%s", tsl_last_error());
    tsl_shdev_close(j);

    /* another user's object (needs root to make one) */
    if (geteuid() == 0) {
        int fd = shm_open(name, O_RDWR, 0);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fchown(fd, 12345, 12345), 0);
        close(fd);
        cr_assert_eq(tsl_shdev_open(name, &j), TSL_ERR_IO);
        cr_assert(strstr(tsl_last_error(), "uid 12345") && strstr(tsl_last_error(), "uid 0"), "%s",
                  tsl_last_error());
        cr_assert_eq(tsl_shdev_create(name, 8 * MiB, 1, 4, &j), TSL_ERR_IO);
    } else {
        printf("another user's object: not tested (needs root to make one)\n");
    }
    tsl_shdev_close(d);
}

/* A pid that is certainly dead: a child that exited and was reaped. */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) _exit(0);
    int ws;
    waitpid(pid, &ws, 0);
    cr_assert(!tsl__pid_alive(pid));
    return pid;
}

Test(shdev, stale_block_reinitialised_live_block_adopted, .fini = cleanup) {
    const char *name = new_name("adopt");
    pid_t dead = dead_pid();
    tsl_shdev *d = NULL;
    cr_assert_eq(tsl_shdev_create(name, 64 * MiB, 1, 8, &d), TSL_OK, "%s", tsl_last_error());
    /* a stale block: a slot of a dead job with a ledger */
    cr_assert_eq(tsl_shdev_claim(d, 0, 1, dead, 8 * MiB), TSL_OK, "%s", tsl_last_error());
    tsl__shdev_publish(d, 0, 1000, 4096);
    tsl_shdev_close(d);
    cr_assert_eq(tsl_shdev_create(name, 32 * MiB, 2, 4, &d), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_adopted(d), 0, "no live pid: initialised afresh");
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->capacity_bytes, 32 * MiB, "the new figures");
    cr_assert_eq(in->max_slots, 4);
    cr_assert(!in->slot[0].in_use);
    cr_assert_eq(in->load_bytes + in->footprint_bytes + in->peak_footprint_bytes, 0u);

    /* a live block: a slot of a live job (this process), one of a dead job,
     * a ledger, and channel tickets in use */
    cr_assert_eq(tsl_shdev_claim(d, 2, 20, getpid(), 8 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_claim(d, 3, 30, dead, 4 * MiB), TSL_OK, "%s", tsl_last_error());
    tsl__shdev_publish(d, 2, 5000, 8192);
    tsl__shdev_publish(d, 3, 700, 1024);
    tsl__shchan *ch = tsl__shdev_chan(d, 1);
    uint32_t t = tsl__shchan_acquire(ch, getpid());
    tsl__shchan_reserve(ch, 0, 4096, 0);
    tsl__shchan_release(ch, t, getpid());
    uint32_t next = atomic_load(&ch->next);
    tsl_shdev_close(d);
    /* a restarted daemon with other figures is refused, naming the field */
    cr_assert_eq(tsl_shdev_create(name, 64 * MiB, 2, 4, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "capacity (bytes) 33554432, not 67108864"), "%s",
              tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, 32 * MiB, 3, 4, &d), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "pcie_gbps 2, not 3"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_create(name, 32 * MiB, 2, 4, &d), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_adopted(d), 1);
    in = read_info(d);
    cr_assert_eq(in->adoptions, 1u);
    cr_assert_eq(in->creator_pid, getpid());
    cr_assert(in->slot[2].in_use && in->slot[3].in_use);
    cr_assert_eq(in->slot[2].job_id, 20u);
    cr_assert_eq(in->load_bytes, 5700u);
    cr_assert_eq(in->footprint_bytes, 9216u);
    cr_assert_eq(in->peak_footprint_bytes, 9216u);
    cr_assert_eq(in->chan[1].chunks, 1u);
    cr_assert_eq(atomic_load(&tsl__shdev_chan(d, 1)->next), next, "the channels are kept");
    /* the daemon reclaims the dead job's slot; the live job's stays */
    cr_assert_eq(tsl_shdev_reclaim(d, 3), TSL_OK, "%s", tsl_last_error());
    in = read_info(d);
    cr_assert_eq(in->load_bytes, 5000u);
    cr_assert_eq(in->footprint_bytes, 8192u);
    cr_assert_eq(in->regions_bytes, 8 * MiB);
    tsl_shdev_close(d);
}

/* ---- a backend on a shared device, in one process ------------------------------------------- */

/* The slot's figures equal the backend's allocator's, and the global sums
 * the slots' (one job: its own). */
static void check_published(tsl_backend *b, tsl_shdev *d, int slot) {
    tsl_alloc_stats st;
    b->iface->mem_stats(b, &st);
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->slot[slot].load_bytes, st.load);
    cr_assert_eq(in->slot[slot].footprint_bytes, st.footprint);
    cr_assert_eq(in->load_bytes, st.load);
    cr_assert_eq(in->footprint_bytes, st.footprint);
    cr_assert_geq(in->slot[slot].peak_footprint_bytes, st.footprint);
}

Test(shdev, backend_on_a_shared_device, .fini = cleanup) {
    const char *name;
    tsl_shdev *d = new_device("backend", 64 * MiB, 0, 4, &name);
    cr_assert_eq(tsl_shdev_claim(d, 1, 11, 0, 16 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_claim(d, 2, 12, 1, 4 * MiB), TSL_OK, "%s", tsl_last_error());
    tsl_cpu_backend_opts o = tsl_cpu_backend_opts_default(0);
    o.shdev = d;
    tsl_backend *b = NULL, *b2 = NULL;
    /* refusals: a free slot, another process's, above the region, a rate */
    o.shdev_slot = 0;
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b2), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "slot 0 is not claimed"), "%s", tsl_last_error());
    o.shdev_slot = 2;
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b2), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "belongs to pid 1"), "%s", tsl_last_error());
    o.shdev_slot = 1;
    o.capacity = 16 * MiB + 1;
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b2), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "above the region of 16777216 bytes"), "%s",
              tsl_last_error());
    o.capacity = 0;
    o.pcie_gbps = 3;
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b2), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "pcie_gbps 3"), "%s", tsl_last_error());
    o.pcie_gbps = 0;
    tsl_shdev_info *in = read_info(d);
    cr_assert(!in->slot[1].attached, "a refused backend leaves nothing attached");
    cr_assert_eq(in->slot[1].pid, getpid(), "the pid was taken at the first attach");

    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b2), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "attached already"), "%s", tsl_last_error());
    cr_assert_eq(tsl_cpu_backend_set_pcie_gbps(b, 1), TSL_ERR_INVALID);
    tsl_backend_caps caps;
    b->iface->caps(b, &caps);
    cr_assert_eq(caps.capacity, 16 * MiB, "capacity 0: the whole region");
    in = read_info(d);
    cr_assert(in->slot[1].attached);
    cr_assert_eq(in->slot[1].arena_bytes, 16 * MiB);

    /* the ledger follows every allocation and free */
    void *p[4];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(b->iface->alloc(b, 3 * MiB + 100, &p[i]), TSL_OK, "%s", tsl_last_error());
        check_published(b, d, 1);
    }
    cr_assert_eq(b->iface->alloc(b, 8 * MiB, &p[3]), TSL_ERR_OOM, "past the region");
    check_published(b, d, 1);
    b->iface->free(b, p[1]);
    check_published(b, d, 1);
    void *q;
    cr_assert_eq(b->iface->alloc_at(b, 13 * MiB, MiB, &q), TSL_OK, "%s", tsl_last_error());
    check_published(b, d, 1);
    cr_assert_eq(read_info(d)->footprint_bytes, 14 * MiB);
    cr_assert_eq(read_info(d)->peak_footprint_bytes, 14 * MiB);

    /* capacity: below the footprint refused, above the region refused */
    cr_assert_eq(tsl_cpu_backend_set_capacity(b, 13 * MiB), TSL_ERR_BUSY);
    cr_assert(strstr(tsl_last_error(), "ends at 14680064"), "%s", tsl_last_error());
    cr_assert_eq(tsl_cpu_backend_set_capacity(b, 20 * MiB), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "region of 16777216"), "%s", tsl_last_error());
    cr_assert_eq(tsl_cpu_backend_set_capacity(b, 65 * MiB), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "shared device's capacity"), "%s", tsl_last_error());
    cr_assert_eq(read_info(d)->slot[1].arena_bytes, 16 * MiB, "unchanged");
    b->iface->free(b, q);
    b->iface->free(b, p[2]);
    check_published(b, d, 1);
    cr_assert_eq(tsl_cpu_backend_set_capacity(b, 7 * MiB), TSL_OK, "%s", tsl_last_error());
    b->iface->caps(b, &caps);
    cr_assert_eq(caps.capacity, 7 * MiB);
    cr_assert_eq(read_info(d)->slot[1].arena_bytes, 7 * MiB);
    cr_assert_eq(b->iface->alloc(b, 4 * MiB, &p[1]), TSL_ERR_OOM, "past the new capacity");
    /* the daemon moves memory only once the job has shrunk */
    cr_assert_eq(tsl_shdev_set_region(d, 1, 6 * MiB), TSL_ERR_BUSY);
    cr_assert(strstr(tsl_last_error(), "arena is still 7340032"), "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_set_region(d, 1, 7 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_set_region(d, 2, 50 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_set_region(d, 2, 58 * MiB), TSL_ERR_OOM, "7 + 58 > 64 MiB");
    cr_assert_eq(tsl_cpu_backend_set_capacity(b, 8 * MiB), TSL_ERR_INVALID, "above the region");
    cr_assert_eq(tsl_shdev_set_region(d, 1, 14 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_cpu_backend_set_capacity(b, 14 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(b->iface->alloc(b, 7 * MiB, &p[1]), TSL_OK, "%s", tsl_last_error());
    check_published(b, d, 1);
    cr_assert(tsl__cpu_backend_check(b), "%s", tsl_last_error());

    /* copies go through the device's channels and are counted in the slot */
    size_t n = 3 * MiB + 5;
    uint8_t *h = malloc(n), *back = malloc(n);
    th_fill_bytes(h, n, 7);
    cr_assert_eq(tsl_backend_upload(b, p[1], h, n), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_backend_download(b, back, p[1], n), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(memcmp(h, back, n), 0);
    in = read_info(d);
    cr_assert_eq(in->slot[1].copied_bytes[0], n);
    cr_assert_eq(in->slot[1].copied_bytes[1], n);
    cr_assert_eq(in->chan[0].chunks, 4u);
    cr_assert_eq(in->chan[1].bytes, n);
    cr_assert_eq(in->chan[0].overlaps + in->chan[1].overlaps, 0u);
    cr_assert_eq(in->chan[0].queued + in->chan[1].queued, 0u);
    free(h);
    free(back);

    /* a live job's attached slot cannot be reclaimed; freeing the backend
     * publishes zeros and detaches */
    cr_assert_eq(tsl_shdev_reclaim(d, 1), TSL_ERR_BUSY);
    cr_assert(strstr(tsl_last_error(), "job 11"), "%s", tsl_last_error());
    size_t peak = read_info(d)->peak_footprint_bytes;
    tsl_backend_free(b);
    in = read_info(d);
    cr_assert(!in->slot[1].attached);
    cr_assert_eq(in->slot[1].load_bytes + in->slot[1].footprint_bytes + in->slot[1].arena_bytes, 0u);
    cr_assert_eq(in->load_bytes + in->footprint_bytes, 0u);
    cr_assert_eq(in->peak_footprint_bytes, peak, "the peak is history");
    cr_assert_eq(tsl_shdev_reclaim(d, 1), TSL_OK, "%s", tsl_last_error());
    tsl_shdev_close(d);
}

/* ---- the ledger across processes --------------------------------------------------------- */

#define LEDGER_JOBS 3

/* The global sums equal the slots' sums; the peak is at least the sum and
 * at most the sum of the slots' peaks (and the capacity). Returns the sum. */
static size_t check_sums(tsl_shdev *d, const char *when) {
    tsl_shdev_info *in = read_info(d);
    size_t load = 0, fp = 0, peaks = 0;
    for (int i = 0; i < in->max_slots; i++) {
        load += in->slot[i].load_bytes;
        fp += in->slot[i].footprint_bytes;
        peaks += in->slot[i].peak_footprint_bytes;
    }
    cr_assert_eq(in->load_bytes, load, "%s: global load %zu, slots %zu", when, in->load_bytes, load);
    cr_assert_eq(in->footprint_bytes, fp, "%s: global footprint %zu, slots %zu", when,
                 in->footprint_bytes, fp);
    cr_assert_geq(in->peak_footprint_bytes, fp, "%s", when);
    cr_assert_leq(in->peak_footprint_bytes, peaks, "%s", when);
    cr_assert_leq(in->peak_footprint_bytes, in->capacity_bytes, "%s", when);
    return fp;
}

/* The child's slot equals its allocator's ledger. */
static void child_check_slot(tsl_backend *b, tsl_shdev *d, int slot, const char *when) {
    tsl_alloc_stats st;
    b->iface->mem_stats(b, &st);
    tsl_shdev_info in;
    tsl_shdev_read(d, &in);
    CHILD_CHECK(in.slot[slot].load_bytes == st.load && in.slot[slot].footprint_bytes ==
                st.footprint, "%s: slot %d says load %zu footprint %zu, the allocator %zu %zu",
                when, slot, in.slot[slot].load_bytes, in.slot[slot].footprint_bytes, st.load,
                st.footprint);
}

static void ledger_child(const job *j) {
    tsl_shdev *d;
    tsl_backend *b = child_attach(j->name, j->slot, 0, &d);
    uint64_t s = j->seed;
    void *live[256];
    int n = 0;
    /* phase 1: allocations only, up to the crest */
    for (int k = 0; k < 40; k++) {
        size_t bytes = 1 + (size_t)(th_splitmix64(&s) % (256 * KiB));
        CHILD_CHECK(b->iface->alloc(b, bytes, &live[n]) == TSL_OK, "%s", tsl_last_error());
        n++;
    }
    child_check_slot(b, d, j->slot, "crest");
    CHILD_CHECK(barrier(j->pg, j->parties), "barrier");  /* A: the parent checks the crest */
    CHILD_CHECK(barrier(j->pg, j->parties), "barrier");  /* B */
    /* phase 2: frees only, in a random order */
    while (n > 0) {
        int i = (int)(th_splitmix64(&s) % (uint64_t)n);
        b->iface->free(b, live[i]);
        live[i] = live[--n];
    }
    child_check_slot(b, d, j->slot, "empty");
    CHILD_CHECK(barrier(j->pg, j->parties), "barrier");  /* C */
    CHILD_CHECK(barrier(j->pg, j->parties), "barrier");  /* D */
    /* phase 3: churn, a check at each round's barrier */
    for (int round = 0; round < 6; round++) {
        for (int k = 0; k < 300; k++) {
            uint64_t r = th_splitmix64(&s);
            if (r % 3 != 0 && n < 256) {
                size_t bytes = 1 + (size_t)((r >> 8) % (512 * KiB));
                if (b->iface->alloc(b, bytes, &live[n]) == TSL_OK) n++;
            } else if (n > 0) {
                int i = (int)((r >> 8) % (uint64_t)n);
                b->iface->free(b, live[i]);
                live[i] = live[--n];
            }
        }
        child_check_slot(b, d, j->slot, "churn");
        CHILD_CHECK(barrier(j->pg, j->parties), "barrier");
        CHILD_CHECK(barrier(j->pg, j->parties), "barrier");
    }
    while (n > 0) b->iface->free(b, live[--n]);
    child_detach(b, d);
}

Test(shdev, ledger_exact_across_processes, .fini = cleanup) {
    const char *name;
    tsl_shdev *d = new_device("ledger", 96 * MiB, 0, 8, &name);
    page *pg = page_new();
    pid_t kids[LEDGER_JOBS];
    int parties = LEDGER_JOBS + 1;
    spawn_jobs(d, name, pg, LEDGER_JOBS, 32 * MiB, parties, 1000, ledger_child, kids);
    cr_assert(barrier(pg, parties), "A");
    size_t crest = check_sums(d, "crest");
    cr_assert_gt(crest, 0u);
    cr_assert_eq(read_info(d)->peak_footprint_bytes, crest,
                 "a rising phase from zero: the peak is its crest, exactly");
    cr_assert(barrier(pg, parties), "B");
    cr_assert(barrier(pg, parties), "C");
    check_sums(d, "emptied");
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->load_bytes + in->footprint_bytes, 0u);
    cr_assert_eq(in->peak_footprint_bytes, crest);
    cr_assert(barrier(pg, parties), "D");
    size_t max_seen = crest;
    for (int round = 0; round < 6; round++) {
        cr_assert(barrier(pg, parties), "round %d", round);
        size_t fp = check_sums(d, "churn");
        if (fp > max_seen) max_seen = fp;
        cr_assert(barrier(pg, parties), "round %d", round);
    }
    for (int i = 0; i < LEDGER_JOBS; i++) reap_ok(kids[i], "ledger job");
    in = read_info(d);
    check_sums(d, "end");
    cr_assert_eq(in->load_bytes + in->footprint_bytes, 0u, "exact to the byte at the end");
    cr_assert_geq(in->peak_footprint_bytes, max_seen);
    printf("ledger: crest %zu bytes; peak %zu bytes, highest sum seen at a barrier %zu\n", crest,
           in->peak_footprint_bytes, max_seen);
    for (int i = 0; i < LEDGER_JOBS; i++)
        cr_assert_eq(tsl_shdev_reclaim(d, i), TSL_OK, "%s", tsl_last_error());
    page_free(pg);
    tsl_shdev_close(d);
}

/* ---- regions against arenas, across processes ---------------------------------------- */

#define CROSSINGS 3000

/* Grows its arena to 8 MiB and back to 4, again and again: after each
 * successful growth the parent must not hold a lowered region. */
static void arena_child(const job *j) {
    tsl_shdev *d;
    tsl_backend *b = child_attach(j->name, j->slot, 4 * MiB, &d);
    void *p;
    CHILD_CHECK(b->iface->alloc(b, 4 * MiB, &p) == TSL_OK, "%s", tsl_last_error());
    CHILD_CHECK(b->iface->alloc(b, 1, &p) == TSL_ERR_OOM, "the arena is full");
    CHILD_CHECK(barrier(j->pg, 2), "barrier");
    uint64_t grown = 0;
    for (int k = 0; k < CROSSINGS; k++) {
        tsl_status st = tsl_cpu_backend_set_capacity(b, 8 * MiB);
        CHILD_CHECK(st == TSL_OK || st == TSL_ERR_INVALID, "%s", tsl_last_error());
        if (st != TSL_OK) continue;
        atomic_store(&j->pg->grown, 1);
        CHILD_CHECK(!atomic_load(&j->pg->lowered), "grew to 8 MiB while the region was lowered");
        grown++;
        atomic_store(&j->pg->grown, 0);
        CHILD_CHECK(tsl_cpu_backend_set_capacity(b, 4 * MiB) == TSL_OK, "%s", tsl_last_error());
    }
    atomic_store(&j->pg->value[0], grown);
    child_detach(b, d);
}

Test(shdev, growing_arena_and_lowered_region_never_cross, .fini = cleanup) {
    const char *name;
    tsl_shdev *d = new_device("cross", 16 * MiB, 0, 2, &name);
    cr_assert_eq(tsl_shdev_claim(d, 0, 1, 0, 8 * MiB), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_claim(d, 1, 2, 0, 8 * MiB), TSL_OK, "%s", tsl_last_error());
    page *pg = page_new();
    job j = {.name = name, .slot = 0, .pg = pg};
    pid_t kid = spawn(arena_child, &j);
    cr_assert(barrier(pg, 2));
    uint64_t lowered = 0;
    for (int k = 0; k < CROSSINGS; k++) {
        tsl_status st = tsl_shdev_set_region(d, 0, 6 * MiB);
        cr_assert(st == TSL_OK || st == TSL_ERR_BUSY, "%s", tsl_last_error());
        if (st == TSL_OK) {
            atomic_store(&pg->lowered, 1);
            cr_assert(!atomic_load(&pg->grown), "lowered to 6 MiB while the arena was at 8 MiB");
            /* the freed room goes to the other job, and back */
            cr_assert_eq(tsl_shdev_set_region(d, 1, 10 * MiB), TSL_OK, "%s", tsl_last_error());
            cr_assert_eq(tsl_shdev_set_region(d, 1, 8 * MiB), TSL_OK, "%s", tsl_last_error());
            lowered++;
            atomic_store(&pg->lowered, 0);
        }
        cr_assert_eq(tsl_shdev_set_region(d, 0, 8 * MiB), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(tsl_shdev_set_region(d, 1, 10 * MiB), TSL_ERR_OOM, "8 + 10 > 16 MiB");
    }
    reap_ok(kid, "arena job");
    printf("crossings: %llu growths of the arena, %llu lowerings of the region, in %d tries each\n",
           (unsigned long long)atomic_load(&pg->value[0]), (unsigned long long)lowered, CROSSINGS);
    cr_assert_leq(read_info(d)->peak_footprint_bytes, 16 * MiB);
    page_free(pg);
    tsl_shdev_close(d);
}

/* ---- the channels ---------------------------------------------------------------------------- */

#define ARBITER_ROUNDS 2000

/* Takes the host-to-device channel directly, again and again, counting the
 * holders inside (never more than one). */
static void arbiter_child(const job *j) {
    tsl_shdev *d;
    CHILD_CHECK(tsl_shdev_open(j->name, &d) == TSL_OK, "%s", tsl_last_error());
    tsl__shchan *ch = tsl__shdev_chan(d, 0);
    pid_t me = getpid();
    CHILD_CHECK(barrier(j->pg, j->parties), "barrier");
    for (int k = 0; k < ARBITER_ROUNDS; k++) {
        uint32_t t = tsl__shchan_acquire(ch, me);
        int in = atomic_fetch_add(&j->pg->inside, 1) + 1;
        int m = atomic_load(&j->pg->max_inside);
        while (in > m && !atomic_compare_exchange_weak(&j->pg->max_inside, &m, in)) {
        }
        tsl__shchan_reserve(ch, 0, 1, 0);
        for (volatile int spin = 0; spin < 200; spin++) {
        }
        atomic_fetch_sub(&j->pg->inside, 1);
        tsl__shchan_release(ch, t, me);
    }
    tsl_shdev_close(d);
}

Test(shdev, arbiter_admits_one_holder_at_a_time, .fini = cleanup) {
    const char *name;
    tsl_shdev *d = new_device("arbiter", MiB, 1, 4, &name);
    page *pg = page_new();
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        job j = {.name = name, .idx = i, .pg = pg, .parties = 3};
        kids[i] = spawn(arbiter_child, &j);
    }
    for (int i = 0; i < 3; i++) reap_ok(kids[i], "arbiter child");
    cr_assert_eq(atomic_load(&pg->max_inside), 1, "holders at once: %d", atomic_load(&pg->max_inside));
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->chan[0].chunks, 3u * ARBITER_ROUNDS);
    cr_assert_eq(in->chan[0].overlaps, 0u);
    cr_assert_eq(in->chan[0].skipped, 0u);
    cr_assert_eq(in->chan[0].queued, 0u);
    cr_assert_eq(in->chan[0].holder, 0);
    page_free(pg);
    tsl_shdev_close(d);
}

/* Uploads and downloads random buffers through its backend, checking
 * every byte. */
static void copy_child(const job *j) {
    tsl_shdev *d;
    tsl_backend *b = child_attach(j->name, j->slot, 0, &d);
    uint64_t s = j->seed, total = 0;
    size_t cap = 3 * MiB + 4096;
    uint8_t *h = malloc(cap), *back = malloc(cap);
    void *dev;
    CHILD_CHECK(h && back, "host memory");
    CHILD_CHECK(b->iface->alloc(b, cap, &dev) == TSL_OK, "%s", tsl_last_error());
    CHILD_CHECK(barrier(j->pg, j->parties), "barrier");
    for (int k = 0; k < 8; k++) {
        size_t n = 1 + (size_t)(th_splitmix64(&s) % cap);
        th_fill_bytes(h, n, th_splitmix64(&s));
        CHILD_CHECK(tsl_backend_upload(b, dev, h, n) == TSL_OK, "%s", tsl_last_error());
        CHILD_CHECK(memcmp(dev, h, n) == 0, "upload %d of %zu bytes differs", k, n);
        memset(back, 0, n);
        CHILD_CHECK(tsl_backend_download(b, back, dev, n) == TSL_OK, "%s", tsl_last_error());
        CHILD_CHECK(memcmp(back, h, n) == 0, "download %d of %zu bytes differs", k, n);
        total += n;
    }
    atomic_fetch_add(&j->pg->total, total);
    free(h);
    free(back);
    child_detach(b, d);
}

Test(shdev, copies_from_processes_exclusive_and_intact, .fini = cleanup) {
    const char *name;
    tsl_shdev *d = new_device("copies", 64 * MiB, 4, 4, &name);
    page *pg = page_new();
    pid_t kids[3];
    spawn_jobs(d, name, pg, 3, 8 * MiB, 3, 77, copy_child, kids);
    for (int i = 0; i < 3; i++) reap_ok(kids[i], "copy job");
    tsl_shdev_info *in = read_info(d);
    uint64_t total = atomic_load(&pg->total);
    for (int c = 0; c < 2; c++) {
        cr_assert_eq(in->chan[c].bytes, total, "channel %d", c);
        cr_assert_eq(in->chan[c].overlaps, 0u, "channel %d: holders overlapped", c);
        cr_assert_eq(in->chan[c].queued, 0u);
    }
    uint64_t by_slots = 0;
    for (int i = 0; i < 3; i++) by_slots += in->slot[i].copied_bytes[0];
    cr_assert_eq(by_slots, total);
    page_free(pg);
    tsl_shdev_close(d);
}

#define BIG (64 * MiB)

/* Uploads BIG bytes once both jobs are ready; at its end, records how far
 * the other job's upload had got. */
static void big_child(const job *j) {
    tsl_shdev *d;
    tsl_backend *b = child_attach(j->name, j->slot, 0, &d);
    uint8_t *h = malloc(BIG);
    void *dev;
    CHILD_CHECK(h, "host memory");
    th_fill_bytes(h, BIG, j->seed);
    CHILD_CHECK(b->iface->alloc(b, BIG, &dev) == TSL_OK, "%s", tsl_last_error());
    memset(dev, 0, BIG); /* touched before the race, not during it */
    CHILD_CHECK(barrier(j->pg, j->parties), "barrier");
    CHILD_CHECK(tsl_backend_upload(b, dev, h, BIG) == TSL_OK, "%s", tsl_last_error());
    tsl_shdev_info in;
    tsl_shdev_read(d, &in);
    atomic_store(&j->pg->value[j->idx], in.slot[1 - j->slot].copied_bytes[0]);
    CHILD_CHECK(memcmp(dev, h, BIG) == 0, "the upload differs");
    free(h);
    child_detach(b, d);
}

Test(shdev, concurrent_transfers_interleave_by_chunk, .fini = cleanup) {
    const char *name;
    const double gbps = 0.5;
    tsl_shdev *d = new_device("interleave", 2 * BIG, gbps, 2, &name);
    page *pg = page_new();
    pid_t kids[2];
    spawn_jobs(d, name, pg, 2, BIG, 3, 5, big_child, kids);
    cr_assert(barrier(pg, 3));
    double t0 = now_s();
    for (int i = 0; i < 2; i++) reap_ok(kids[i], "big upload");
    double secs = now_s() - t0;
    uint64_t a = atomic_load(&pg->value[0]), b = atomic_load(&pg->value[1]);
    printf("interleave: two %zu MiB uploads at a device-wide %.2f GB/s: %.3f s for both "
           "(%.3f GB/s measured, detach included); at its end, each saw the other's at %.1f and "
           "%.1f MiB\n", BIG / MiB, gbps, secs, 2.0 * BIG / secs / 1e9, (double)a / MiB,
           (double)b / MiB);
    /* the first to finish saw the other's progress: both were on the
     * channel before either ended */
    cr_assert(a > 0 && b > 0, "one upload ran alone: the other had %llu and %llu bytes",
              (unsigned long long)a, (unsigned long long)b);
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->chan[0].overlaps, 0u);
    cr_assert_eq(in->chan[0].bytes, 2u * BIG);
    page_free(pg);
    tsl_shdev_close(d);
}

/* Holds 3 MiB of its region and, when told, uploads `value[idx]` bytes
 * (one chunk: at the test's rate it lasts seconds), then checks them. */
static void victim_child(const job *j) {
    tsl_shdev *d;
    tsl_backend *b = child_attach(j->name, j->slot, 0, &d);
    size_t n = (size_t)atomic_load(&j->pg->value[j->idx]);
    uint8_t *h = malloc(n);
    void *dev, *held;
    CHILD_CHECK(h, "host memory");
    th_fill_bytes(h, n, j->seed);
    CHILD_CHECK(b->iface->alloc(b, (size_t)(j->idx + 1) * MiB, &held) == TSL_OK, "%s",
                tsl_last_error());
    CHILD_CHECK(b->iface->alloc(b, n, &dev) == TSL_OK, "%s", tsl_last_error());
    atomic_store(&j->pg->ready[j->idx], 1);
    CHILD_CHECK(wait_flag(&j->pg->go[j->idx]), "go");
    CHILD_CHECK(tsl_backend_upload(b, dev, h, n) == TSL_OK, "%s", tsl_last_error());
    CHILD_CHECK(memcmp(dev, h, n) == 0, "the upload differs");
    free(h);
    child_detach(b, d);
}

/* Waits until pred(d) holds (deadlock guard of 120 s). */
static int wait_info(tsl_shdev *d, int (*pred)(const tsl_shdev_info *, pid_t), pid_t arg) {
    double until = now_s() + 120;
    while (!pred(read_info(d), arg)) {
        if (now_s() > until) return 0;
        pause_us(200);
    }
    return 1;
}

static int holds_h2d(const tsl_shdev_info *in, pid_t pid) { return in->chan[0].holder == pid; }
static int h2d_queued(const tsl_shdev_info *in, pid_t n) { return (pid_t)in->chan[0].queued == n; }

Test(shdev, killed_holder_and_waiter_do_not_stop_the_others, .fini = cleanup) {
    /* 1 MiB at 0.0005 GB/s: a chunk holds the channel for 2.1 s */
    const char *name;
    tsl_shdev *d = new_device("kill", 64 * MiB, 0.0005, 4, &name);
    page *pg = page_new();
    /* K: the holder, killed mid-chunk; D: a waiter, killed in the queue;
     * W: a waiter behind both, which must finish */
    enum { K, D, W };
    const size_t bytes[3] = {MiB, 4 * KiB, 4 * KiB};
    pid_t kids[3];
    for (int i = 0; i < 3; i++) atomic_store(&pg->value[i], bytes[i]);
    spawn_jobs(d, name, pg, 3, 8 * MiB, 0, 50, victim_child, kids);
    for (int i = 0; i < 3; i++) cr_assert(wait_flag(&pg->ready[i]), "child %d ready", i);
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->load_bytes, (1 + 2 + 3) * MiB + bytes[K] + bytes[D] + bytes[W]);
    atomic_store(&pg->go[K], 1);
    cr_assert(wait_info(d, holds_h2d, kids[K]), "K never held the channel");
    atomic_store(&pg->go[D], 1);
    cr_assert(wait_info(d, h2d_queued, 2), "D never queued");
    atomic_store(&pg->go[W], 1);
    cr_assert(wait_info(d, h2d_queued, 3), "W never queued");
    cr_assert_eq(read_info(d)->chan[0].holder, kids[K], "K still holds: killed mid-chunk");
    kill(kids[D], SIGKILL);
    kill(kids[K], SIGKILL);
    int ws;
    waitpid(kids[D], &ws, 0); /* D reaped; K stays a zombie until W is done */
    cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    double t0 = now_s();
    reap_ok(kids[W], "the waiter behind the dead");
    printf("kill: the waiter finished %.3f s after the holder and a waiter were killed\n",
           now_s() - t0);
    waitpid(kids[K], &ws, 0);
    cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    in = read_info(d);
    cr_assert_eq(in->chan[0].skipped, 2u, "K's held ticket and D's waiting one");
    cr_assert_eq(in->chan[0].overlaps, 0u);
    cr_assert_eq(in->chan[0].queued, 0u);
    cr_assert_eq(in->chan[0].holder, 0);
    /* the dead jobs' slots still count; reclaiming them restores the sums */
    cr_assert_eq(in->load_bytes, (1 + 2) * MiB + bytes[K] + bytes[D]);
    cr_assert_eq(tsl_shdev_reclaim(d, K), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_reclaim(d, D), TSL_OK, "%s", tsl_last_error());
    in = read_info(d);
    cr_assert_eq(in->load_bytes + in->footprint_bytes, 0u);
    cr_assert_eq(in->regions_bytes, 8 * MiB, "W's region alone");
    /* the channel serves newcomers as before */
    tsl__shchan *ch = tsl__shdev_chan(d, 0);
    uint32_t t = tsl__shchan_acquire(ch, getpid());
    tsl__shchan_release(ch, t, getpid());
    page_free(pg);
    tsl_shdev_close(d);
}

Test(shdev, reap_skips_a_dead_process_tickets_at_once, .fini = cleanup) {
    const char *name;
    tsl_shdev *d = new_device("reap", MiB, 1, 2, &name);
    tsl__shchan *ch = tsl__shdev_chan(d, 1);
    pid_t dead = dead_pid();
    /* a dead process's tickets: one held (as if killed mid-chunk) and one
     * waiting behind it, written as its own steps would have */
    uint32_t t = atomic_fetch_add(&ch->next, 2);
    atomic_store(&ch->owner[t % TSL__SHCHAN_RING], (uint64_t)t << 32 | 1u << 31 | (uint32_t)dead);
    atomic_store(&ch->owner[(t + 1) % TSL__SHCHAN_RING], (uint64_t)(t + 1) << 32 | (uint32_t)dead);
    atomic_store(&ch->holder, dead);
    atomic_store(&ch->free_at_ns, INT64_MAX / 2);
    tsl__shchan_reap(ch, dead);
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->chan[1].queued, 0u, "both skipped");
    cr_assert_eq(in->chan[1].skipped, 2u);
    cr_assert_eq(in->chan[1].holder, 0);
    cr_assert_lt(atomic_load(&ch->free_at_ns), INT64_MAX / 2, "its reserved time given back");
    uint32_t mine = tsl__shchan_acquire(ch, getpid());
    cr_assert_eq(mine, t + 2);
    tsl__shchan_release(ch, mine, getpid());
    tsl_shdev_close(d);
}

Test(shdev, reclaim_exact_after_a_death_mid_publication, .fini = cleanup) {
    const char *name;
    tsl_shdev *d = new_device("midpub", 64 * MiB, 0, 4, &name);
    tsl__shblock *b = tsl__shdev_block(d);
    pid_t dead = dead_pid();
    cr_assert_eq(tsl_shdev_claim(d, 0, 1, getpid(), MiB), TSL_OK);
    cr_assert_eq(tsl_shdev_claim(d, 1, 2, dead, MiB), TSL_OK);
    cr_assert_eq(tsl_shdev_claim(d, 2, 3, dead, MiB), TSL_OK);
    tsl__shdev_publish(d, 0, 1000, 4096);
    tsl__shdev_publish(d, 1, 500, 2048);
    tsl__shdev_publish(d, 2, 300, 1024);
    /* slot 1 died after storing its new figures, before the global add */
    tsl__shslot *s1 = &b->slot[1];
    atomic_fetch_add(&s1->seq, 1);
    atomic_store(&s1->load, 800);
    atomic_store(&s1->footprint, 3072);
    /* slot 2 died after the global add, before its seq became even */
    tsl__shslot *s2 = &b->slot[2];
    atomic_fetch_add(&s2->seq, 1);
    atomic_store(&s2->load, 100);
    atomic_store(&s2->footprint, 512);
    atomic_fetch_sub(&b->load, 200);
    atomic_fetch_sub(&b->footprint, 512);
    cr_assert_eq(tsl_shdev_reclaim(d, 1), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_shdev_reclaim(d, 2), TSL_OK, "%s", tsl_last_error());
    tsl_shdev_info *in = read_info(d);
    cr_assert_eq(in->load_bytes, 1000u, "the live job's alone, got %zu", in->load_bytes);
    cr_assert_eq(in->footprint_bytes, 4096u, "got %zu", in->footprint_bytes);
    tsl_shdev_close(d);
}
