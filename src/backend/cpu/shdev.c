/*
 * shdev.c - a shared device's control block: its name, creation, adoption
 * by a restarted daemon, opening, closing and removal (tensile/shdev.h;
 * the layout in shdev_block.h; slots and the ledger in shslot.c; the
 * channels in shchan.c).
 *
 * Ordering: the block is initialised with plain stores and zeros, then
 * `magic` is stored with release; open and create load it with acquire
 * before they read the header. The header never changes afterwards
 * (creator_pid and adoptions are atomics). One creator at a time: two
 * daemons creating the same name at once are not supported (the daemon's
 * socket is the guard).
 *
 * A handle is one process's mapping; it holds no lock and no state beyond
 * the mapping, so any thread may use it.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cpu/shdev_block.h"
#include "core/assert.h"

struct tsl_shdev {
    tsl__shblock *b;
    int adopted;
};

tsl__shblock *tsl__shdev_block(const tsl_shdev *d) { return d->b; }

/* ---- names ------------------------------------------------------------------------- */

static int name_char_ok(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

/* TSL_OK if s is 1 to max characters of [A-Za-z0-9._-]; else the message
 * names `what`, the value (or its length) and the rule. */
static tsl_status check_chars(const char *s, size_t max, const char *what) {
    if (!s) return tsl_fail(TSL_ERR_INVALID, "shared device: %s is NULL", what);
    size_t n = strnlen(s, max + 1);
    if (n == 0 || n > max)
        return tsl_fail(TSL_ERR_INVALID, "shared device: %s must be 1 to %zu characters, got %s",
                        what, max, n == 0 ? "none" : "more");
    for (size_t i = 0; i < n; i++)
        if (!name_char_ok(s[i]))
            return tsl_fail(TSL_ERR_INVALID,
                            "shared device: %s '%.*s' has character 0x%02x at %zu; only "
                            "[A-Za-z0-9._-] are allowed", what, (int)n, s,
                            (unsigned)(unsigned char)s[i], i);
    return TSL_OK;
}

static tsl_status check_name(const char *name) {
    if (!name) return tsl_fail(TSL_ERR_INVALID, "shared device: name is NULL");
    if (name[0] != '/')
        return tsl_fail(TSL_ERR_INVALID, "shared device: name '%.64s' must start with '/' "
                        "(a POSIX shared memory name)", name);
    return check_chars(name + 1, 200, "name (after its '/')");
}

/* Contract: tensile/shdev.h. */
tsl_status tsl_shdev_name(char *buf, size_t size, const char *tag) {
    tsl_status st = check_chars(tag, 64, "tag");
    if (st != TSL_OK) return st;
    int n = snprintf(buf, size, "/tensile-%u-%s", (unsigned)geteuid(), tag);
    if (n < 0 || (size_t)n >= size)
        return tsl_fail(TSL_ERR_INVALID, "shared device: the name for tag '%s' needs %d bytes, "
                        "the buffer has %zu", tag, n + 1, size);
    return TSL_OK;
}

/* ---- the block ------------------------------------------------------------------------ */

static uint64_t bits_of(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double double_of(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Contract: shdev_block.h. */
void tsl__shdev_init_block(tsl__shblock *b, uint64_t capacity, double pcie_gbps,
                           uint32_t max_slots) {
    atomic_store_explicit(&b->magic, 0, memory_order_relaxed);
    memset(b, 0, sizeof *b);
    b->version = TSL_SHDEV_VERSION;
    b->struct_size = (uint32_t)sizeof *b;
    b->capacity = capacity;
    b->pcie_gbps_bits = bits_of(pcie_gbps);
    b->max_slots = max_slots;
    atomic_init(&b->creator_pid, (int32_t)getpid());
    for (int i = 0; i < 2; i++) tsl__shchan_init(&b->chan[i]);
    atomic_store_explicit(&b->magic, TSL__SHDEV_MAGIC, memory_order_release);
}

/* Maps the block of open object fd. */
static tsl_status map_block(int fd, const char *name, tsl__shblock **out) {
    void *p = mmap(NULL, sizeof(tsl__shblock), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return tsl_fail(TSL_ERR_IO, "shared device '%s': mmap of %zu bytes: %s", name,
                        sizeof(tsl__shblock), strerror(errno));
    *out = p;
    return TSL_OK;
}

/* The object must be this user's. */
static tsl_status check_owner(const struct stat *st, const char *name) {
    if (st->st_uid != geteuid())
        return tsl_fail(TSL_ERR_IO, "shared device '%s' belongs to uid %u, not to this user "
                        "(uid %u): refused", name, (unsigned)st->st_uid, (unsigned)geteuid());
    return TSL_OK;
}

/* The object's size must be this build's block's. */
static tsl_status check_size(const struct stat *st, const char *name) {
    if ((uint64_t)st->st_size != sizeof(tsl__shblock))
        return tsl_fail(TSL_ERR_FORMAT, "shared device '%s': the object is %lld bytes, a block "
                        "of version %d is %zu: not a block of this build (remove it with "
                        "tsl_shdev_unlink, or rm /dev/shm%s, if no process uses it)",
                        name, (long long)st->st_size, TSL_SHDEV_VERSION, sizeof(tsl__shblock),
                        name);
    return TSL_OK;
}

/* The header of a mapped block of the right size must be this build's
 * (magic loaded with acquire: the header is then complete). */
static tsl_status check_header(const tsl__shblock *b, const char *name) {
    uint64_t magic = atomic_load_explicit(&b->magic, memory_order_acquire);
    if (magic == 0)
        return tsl_fail(TSL_ERR_FORMAT, "shared device '%s' is not initialised yet (magic 0): "
                        "its creator has not finished, or died creating it", name);
    if (magic != TSL__SHDEV_MAGIC)
        return tsl_fail(TSL_ERR_FORMAT, "shared device '%s': magic 0x%016llx, expected 0x%016llx: "
                        "not a Tensile shared device (remove it with tsl_shdev_unlink, or rm "
                        "/dev/shm%s, if no process uses it)", name, (unsigned long long)magic,
                        (unsigned long long)TSL__SHDEV_MAGIC, name);
    if (b->version != TSL_SHDEV_VERSION)
        return tsl_fail(TSL_ERR_FORMAT, "shared device '%s': version %u, this build reads "
                        "version %d (its daemon and jobs must be of one version)",
                        name, b->version, TSL_SHDEV_VERSION);
    if (b->struct_size != sizeof *b)
        return tsl_fail(TSL_ERR_FORMAT, "shared device '%s': struct size %u in its header, "
                        "this build's is %zu", name, b->struct_size, sizeof *b);
    if (b->max_slots < 1 || b->max_slots > TSL_SHDEV_MAX_SLOTS)
        return tsl_fail(TSL_ERR_FORMAT, "shared device '%s': max_slots %u outside [1, %d]", name,
                        b->max_slots, TSL_SHDEV_MAX_SLOTS);
    return TSL_OK;
}

/* 1 if a claimed slot names a live process. */
static int has_live_job(const tsl__shblock *b) {
    for (uint32_t i = 0; i < b->max_slots; i++) {
        tsl__shslot *s = (tsl__shslot *)&b->slot[i];
        if (atomic_load(&s->state) == TSL__SLOT_CLAIMED && tsl__pid_alive(atomic_load(&s->pid)))
            return 1;
    }
    return 0;
}

/* Adoption: the block's figures must be the caller's. */
static tsl_status check_adoptable(const tsl__shblock *b, const char *name, uint64_t capacity,
                                  double gbps, uint32_t max_slots) {
    const char *field = NULL;
    char have[32], want[32];
    if (b->capacity != capacity) {
        field = "capacity (bytes)";
        snprintf(have, sizeof have, "%llu", (unsigned long long)b->capacity);
        snprintf(want, sizeof want, "%llu", (unsigned long long)capacity);
    } else if (b->pcie_gbps_bits != bits_of(gbps)) {
        field = "pcie_gbps";
        snprintf(have, sizeof have, "%g", double_of(b->pcie_gbps_bits));
        snprintf(want, sizeof want, "%g", gbps);
    } else if (b->max_slots != max_slots) {
        field = "max_slots";
        snprintf(have, sizeof have, "%u", b->max_slots);
        snprintf(want, sizeof want, "%u", max_slots);
    }
    if (!field) return TSL_OK;
    return tsl_fail(TSL_ERR_INVALID, "shared device '%s' has running jobs and %s %s, not %s as "
                    "asked: a restarted daemon adopts it with the same figures", name, field,
                    have, want);
}

static tsl_status new_handle(tsl__shblock *b, int adopted, tsl_shdev **out) {
    tsl_shdev *d = calloc(1, sizeof *d);
    if (!d) {
        munmap(b, sizeof *b);
        return tsl_fail(TSL_ERR_OOM, "shared device: out of host memory");
    }
    d->b = b;
    d->adopted = adopted;
    *out = d;
    return TSL_OK;
}

/* Creates, reinitialises or adopts the block of existing object fd (see
 * tsl_shdev_create). */
static tsl_status take_existing(int fd, const char *name, uint64_t capacity, double gbps,
                                uint32_t max_slots, tsl__shblock **out, int *adopted) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return tsl_fail(TSL_ERR_IO, "shared device '%s': fstat: %s", name, strerror(errno));
    tsl_status rc = check_owner(&st, name);
    if (rc != TSL_OK) return rc;
    int never = st.st_size == 0; /* its creator died before sizing it */
    if (never && ftruncate(fd, (off_t)sizeof(tsl__shblock)) != 0)
        return tsl_fail(TSL_ERR_IO, "shared device '%s': ftruncate to %zu bytes: %s", name,
                        sizeof(tsl__shblock), strerror(errno));
    if (!never && (rc = check_size(&st, name)) != TSL_OK) return rc;
    tsl__shblock *b = NULL; /* set by map_block on TSL_OK (gcc -O3 cannot see it) */
    if ((rc = map_block(fd, name, &b)) != TSL_OK) return rc;
    never = never || atomic_load_explicit(&b->magic, memory_order_acquire) == 0;
    if (!never && (rc = check_header(b, name)) != TSL_OK) {
        munmap(b, sizeof *b);
        return rc;
    }
    *adopted = !never && has_live_job(b);
    if (*adopted) {
        if ((rc = check_adoptable(b, name, capacity, gbps, max_slots)) != TSL_OK) {
            munmap(b, sizeof *b);
            return rc;
        }
        atomic_store(&b->creator_pid, (int32_t)getpid());
        atomic_fetch_add(&b->adoptions, 1);
    } else {
        (void)fchmod(fd, 0600);
        tsl__shdev_init_block(b, capacity, gbps, max_slots);
    }
    *out = b;
    return TSL_OK;
}

/* Contract: tensile/shdev.h. */
tsl_status tsl_shdev_create(const char *name, size_t capacity, double pcie_gbps, int max_slots,
                            tsl_shdev **out) {
    TSL_ASSERT(out);
    tsl_status rc = check_name(name);
    if (rc != TSL_OK) return rc;
    if (capacity == 0)
        return tsl_fail(TSL_ERR_INVALID, "shared device '%s': capacity must be > 0 bytes", name);
    if (!(pcie_gbps >= 0) || !isfinite(pcie_gbps))
        return tsl_fail(TSL_ERR_INVALID, "shared device '%s': pcie_gbps %g must be finite and "
                        ">= 0", name, pcie_gbps);
    if (max_slots < 1 || max_slots > TSL_SHDEV_MAX_SLOTS)
        return tsl_fail(TSL_ERR_INVALID, "shared device '%s': max_slots %d outside [1, %d]", name,
                        max_slots, TSL_SHDEV_MAX_SLOTS);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    tsl__shblock *b = NULL;
    int adopted = 0;
    if (fd >= 0) {
        if (ftruncate(fd, (off_t)sizeof(tsl__shblock)) != 0) {
            rc = tsl_fail(TSL_ERR_IO, "shared device '%s': ftruncate to %zu bytes: %s", name,
                          sizeof(tsl__shblock), strerror(errno));
        } else if ((rc = map_block(fd, name, &b)) == TSL_OK) {
            tsl__shdev_init_block(b, capacity, pcie_gbps, (uint32_t)max_slots);
        }
        if (rc != TSL_OK) shm_unlink(name);
    } else if (errno == EEXIST) {
        fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0)
            return tsl_fail(TSL_ERR_IO, "shared device '%s': shm_open of the existing object: %s",
                            name, strerror(errno));
        rc = take_existing(fd, name, capacity, pcie_gbps, (uint32_t)max_slots, &b, &adopted);
    } else {
        return tsl_fail(TSL_ERR_IO, "shared device '%s': shm_open: %s", name, strerror(errno));
    }
    close(fd);
    if (rc != TSL_OK) return rc;
    return new_handle(b, adopted, out);
}

/* Contract: tensile/shdev.h. */
tsl_status tsl_shdev_open(const char *name, tsl_shdev **out) {
    TSL_ASSERT(out);
    tsl_status rc = check_name(name);
    if (rc != TSL_OK) return rc;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return tsl_fail(TSL_ERR_IO, "shared device '%s': shm_open: %s%s", name, strerror(errno),
                        errno == ENOENT ? " (is its daemon running?)" : "");
    struct stat st;
    tsl__shblock *b = NULL;
    if (fstat(fd, &st) != 0)
        rc = tsl_fail(TSL_ERR_IO, "shared device '%s': fstat: %s", name, strerror(errno));
    else if ((rc = check_owner(&st, name)) == TSL_OK && st.st_size == 0)
        rc = tsl_fail(TSL_ERR_FORMAT, "shared device '%s' is not initialised yet (0 bytes)", name);
    else if (rc == TSL_OK && (rc = check_size(&st, name)) == TSL_OK)
        rc = map_block(fd, name, &b);
    close(fd);
    if (rc == TSL_OK && (rc = check_header(b, name)) != TSL_OK) munmap(b, sizeof *b);
    if (rc != TSL_OK) return rc;
    return new_handle(b, 0, out);
}

int tsl_shdev_adopted(const tsl_shdev *d) { return d->adopted; }

void tsl_shdev_close(tsl_shdev *d) {
    if (!d) return;
    munmap(d->b, sizeof *d->b);
    free(d);
}

/* Contract: tensile/shdev.h. */
tsl_status tsl_shdev_unlink(const char *name) {
    tsl_status rc = check_name(name);
    if (rc != TSL_OK) return rc;
    if (shm_unlink(name) != 0 && errno != ENOENT)
        return tsl_fail(TSL_ERR_IO, "shared device '%s': shm_unlink: %s", name, strerror(errno));
    return TSL_OK;
}

size_t tsl_shdev_capacity(const tsl_shdev *d) { return (size_t)d->b->capacity; }

double tsl_shdev_pcie_gbps(const tsl_shdev *d) { return double_of(d->b->pcie_gbps_bits); }

tsl__shchan *tsl__shdev_chan(tsl_shdev *d, int dir) {
    TSL_ASSERT(dir == 0 || dir == 1);
    return &d->b->chan[dir];
}
