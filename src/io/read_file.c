/* read_file.c - see io/read_file.h. */
#include "io/read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/assert.h"

/* "a FIFO", "a folder", ... for a file type that is not regular. */
static const char *type_name(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

tsl_status tsl__open_regular(const char *path, const char *what, uint64_t max_bytes, FILE **f,
                             uint64_t *size) {
    TSL_ASSERT(path && what && f && size);
    *f = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO without a writer returns at once */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return tsl_fail(TSL_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return tsl_fail(TSL_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return tsl_fail(TSL_ERR_IO, "%s: cannot read %s: %s, not a regular file", path, what,
                        type_name(sb.st_mode));
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        close(fd);
        return tsl_fail(TSL_ERR_IO, "%s: %s of %lld bytes is larger than the limit of %llu bytes",
                        path, what, (long long)sb.st_size, (unsigned long long)max_bytes);
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *s = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!s) {
        int e = errno;
        close(fd);
        return tsl_fail(TSL_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(e));
    }
    *f = s;
    *size = (uint64_t)sb.st_size;
    return TSL_OK;
}

tsl_status tsl__read_regular(const char *path, const char *what, size_t max_bytes, char **buf,
                             size_t *len) {
    TSL_ASSERT(buf && len && max_bytes < SIZE_MAX);
    *buf = NULL;
    *len = 0;
    FILE *f;
    uint64_t size;
    tsl_status st = tsl__open_regular(path, what, max_bytes, &f, &size);
    if (st != TSL_OK) return st;
    /* one byte more than the size: a file that grew is seen */
    size_t cap = (size_t)size + 1;
    char *b = malloc(cap + 1);
    if (!b) {
        fclose(f);
        return tsl_fail(TSL_ERR_OOM, "%s: out of host memory for a %s of %llu bytes", path, what,
                        (unsigned long long)size);
    }
    size_t got = 0;
    for (;;) {
        got += fread(b + got, 1, cap - got, f);
        if (got < cap || ferror(f)) break;
        if (cap > max_bytes) break; /* grew past the limit */
        size_t ncap = cap * 2 < max_bytes + 1 ? cap * 2 : max_bytes + 1;
        char *nb = realloc(b, ncap + 1);
        if (!nb) {
            free(b);
            fclose(f);
            return tsl_fail(TSL_ERR_OOM, "%s: out of host memory for a %s of %zu bytes", path,
                            what, ncap);
        }
        b = nb;
        cap = ncap;
    }
    int rerr = ferror(f) ? errno : 0;
    fclose(f);
    if (rerr) {
        free(b);
        return tsl_fail(TSL_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(rerr));
    }
    if (got > max_bytes) {
        free(b);
        return tsl_fail(TSL_ERR_IO, "%s: %s grew beyond the limit of %zu bytes while read", path,
                        what, max_bytes);
    }
    b[got] = '\0';
    *buf = b;
    *len = got;
    return TSL_OK;
}
