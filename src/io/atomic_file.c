/* atomic_file.c - see io/atomic_file.h. */
#include "io/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/assert.h"

struct tsl__out {
    FILE *f;
    char *path;  /* as given: messages */
    char *what;
    char *dest;  /* what the temporary file is renamed over (a link's target) */
    char *tmp;   /* NULL: writing the destination directly */
    int slot;    /* in the registry of pending temporary files, or -1 */
};

/* ---- the temporary files still open, for tsl__out_remove_pending ----------------- */

#define N_SLOTS 16
static char pending[N_SLOTS][PATH_MAX];
/* set (release) after its path is written, read (acquire) by the signal
 * handler: a lock-free atomic int is safe in a handler */
static atomic_int pending_used[N_SLOTS];
static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;

/* Registers tmp; returns its slot, or -1 when every slot is taken (the file
 * is then only not removed by a signal). */
static int register_tmp(const char *tmp) {
    if (strlen(tmp) >= PATH_MAX) return -1;
    int slot = -1;
    pthread_mutex_lock(&pending_mu);
    for (int i = 0; i < N_SLOTS && slot < 0; i++)
        if (!atomic_load_explicit(&pending_used[i], memory_order_relaxed)) {
            strcpy(pending[i], tmp);
            atomic_store_explicit(&pending_used[i], 1, memory_order_release);
            slot = i;
        }
    pthread_mutex_unlock(&pending_mu);
    return slot;
}

static void unregister_tmp(int slot) {
    if (slot < 0) return;
    pthread_mutex_lock(&pending_mu);
    atomic_store_explicit(&pending_used[slot], 0, memory_order_release);
    pthread_mutex_unlock(&pending_mu);
}

void tsl__out_remove_pending(void) {
    for (int i = 0; i < N_SLOTS; i++)
        if (atomic_load_explicit(&pending_used[i], memory_order_acquire)) unlink(pending[i]);
}

/* ---- opening ----------------------------------------------------------------------- */

/* 1 if `path` is written directly: a destination under /dev or /proc (such
 * as /dev/stdout, whose target may be a regular file that must not be
 * replaced), or an existing file that is not regular. *st is path's stat,
 * st->st_mode 0 if it does not exist. */
static int is_direct(const char *path, struct stat *st) {
    if (stat(path, st) != 0) memset(st, 0, sizeof *st);
    if (!strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6)) return 1;
    return st->st_mode != 0 && !S_ISREG(st->st_mode);
}

static tsl_status cannot(const char *path, const char *what, int e) {
    if (e == ENXIO)
        return tsl_fail(TSL_ERR_IO, "%s: cannot write %s: a FIFO that no process reads", path,
                        what);
    return tsl_fail(TSL_ERR_IO, "%s: cannot write %s: %s", path, what, strerror(e));
}

/* Opens a direct destination for writing without blocking; returns the fd
 * (blocking again) or -1 with errno set. */
static int open_direct(const char *path, int flags) {
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | flags, 0666);
    if (fd < 0) return -1;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Creates a new temporary file next to dest (mode 0666 less the umask, or
 * the mode of the file it will replace); returns its fd and the malloc'd
 * name in *tmp, or -1 with errno set. */
static int create_tmp(const char *dest, const struct stat *old, char **tmp) {
    static unsigned counter;
    size_t n = strlen(dest) + 48;
    char *name = malloc(n);
    if (!name) {
        errno = ENOMEM;
        return -1;
    }
    for (int tries = 0; tries < 8; tries++) {
        unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
        snprintf(name, n, "%s.tmp.%ld.%u", dest, (long)getpid(), k);
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd >= 0) {
            if (S_ISREG(old->st_mode)) (void)fchmod(fd, old->st_mode & 07777);
            *tmp = name;
            return fd;
        }
        if (errno != EEXIST) break;
    }
    int e = errno;
    free(name);
    errno = e;
    return -1;
}

/* The file a temporary is renamed over: a symbolic link's target (the link
 * stays), else path itself. malloc'd. */
static char *destination(const char *path) {
    struct stat l;
    if (lstat(path, &l) == 0 && S_ISLNK(l.st_mode)) {
        char *real = realpath(path, NULL);
        if (real) return real;
    }
    return strdup(path);
}

tsl_status tsl__out_open(const char *path, const char *what, tsl__out **out) {
    TSL_ASSERT(path && what && out);
    if (!path[0]) return tsl_fail(TSL_ERR_IO, "cannot write %s: empty file name", what);
    struct stat st;
    int direct = is_direct(path, &st);
    if (S_ISDIR(st.st_mode))
        return tsl_fail(TSL_ERR_IO, "%s: cannot write %s: a folder", path, what);
    tsl__out *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path)) || !(o->what = strdup(what)) ||
        (!direct && !(o->dest = destination(path)))) {
        if (o) {
            free(o->path);
            free(o->what);
        }
        free(o);
        return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", path);
    }
    o->slot = -1;
    int fd = direct ? open_direct(path, O_CREAT | O_TRUNC) : create_tmp(o->dest, &st, &o->tmp);
    int e = errno;
    if (fd >= 0 && !(o->f = fdopen(fd, "w"))) {
        e = errno;
        close(fd);
        if (o->tmp) unlink(o->tmp);
        fd = -1;
    }
    if (fd < 0) {
        tsl_status rc = cannot(path, what, e);
        free(o->tmp);
        free(o->dest);
        free(o->path);
        free(o->what);
        free(o);
        return rc;
    }
    if (o->tmp) o->slot = register_tmp(o->tmp);
    *out = o;
    return TSL_OK;
}

FILE *tsl__out_stream(tsl__out *o) {
    TSL_ASSERT(o && o->f);
    return o->f;
}

static void out_free(tsl__out *o) {
    unregister_tmp(o->slot);
    free(o->tmp);
    free(o->dest);
    free(o->path);
    free(o->what);
    free(o);
}

tsl_status tsl__out_commit(tsl__out *o) {
    TSL_ASSERT(o);
    int e = 0;
    int had_error = ferror(o->f);
    if (fflush(o->f) != 0) e = errno;
    else if (had_error) e = EIO; /* a write failed earlier; its errno is gone */
    if (!e && o->tmp && fsync(fileno(o->f)) != 0) e = errno;
    if (fclose(o->f) != 0 && !e) e = errno;
    o->f = NULL;
    if (!e && o->tmp && rename(o->tmp, o->dest) != 0) e = errno;
    if (e && o->tmp) unlink(o->tmp);
    tsl_status st = TSL_OK;
    if (e)
        st = tsl_fail(TSL_ERR_IO, "%s: cannot write %s: %s%s", o->path, o->what, strerror(e),
                      o->tmp ? " (the file is left as it was)" : "");
    out_free(o);
    return st;
}

void tsl__out_abort(tsl__out *o) {
    if (!o) return;
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    out_free(o);
}

tsl_status tsl__out_probe(const char *path, const char *what) {
    TSL_ASSERT(path && what);
    if (!path[0]) return tsl_fail(TSL_ERR_IO, "cannot write %s: empty file name", what);
    struct stat st;
    if (is_direct(path, &st)) {
        if (S_ISDIR(st.st_mode))
            return tsl_fail(TSL_ERR_IO, "%s: cannot write %s: a folder", path, what);
        if (S_ISFIFO(st.st_mode)) return TSL_OK; /* opening it would signal its reader */
        int fd = open_direct(path, 0);
        if (fd < 0) return cannot(path, what, errno);
        close(fd);
        return TSL_OK;
    }
    if (S_ISDIR(st.st_mode)) return tsl_fail(TSL_ERR_IO, "%s: cannot write %s: a folder", path, what);
    char *dest = destination(path), *tmp = NULL;
    if (!dest) return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", path);
    int fd = create_tmp(dest, &st, &tmp);
    int e = errno;
    free(dest);
    if (fd < 0) return cannot(path, what, e);
    close(fd);
    unlink(tmp);
    free(tmp);
    return TSL_OK;
}
