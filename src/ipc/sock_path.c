/*
 * sock_path.c - where the daemon's socket lives by default, and the folder
 * that holds it: $XDG_RUNTIME_DIR/tensile (when XDG_RUNTIME_DIR names a
 * folder), else /tmp/tensile-UID; created 0700, and refused when someone
 * else could have put a socket in it (another owner, a symbolic link, a
 * folder writable by its group or others).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tensile/ipc.h"

#define SOCK_NAME "tensiled.sock"

/* Creates folder dir (0700) if missing, then checks it is ours alone. */
static tsl_status own_folder(const char *dir) {
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return tsl_fail(TSL_ERR_IO, "cannot create the socket folder %s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) != 0)
        return tsl_fail(TSL_ERR_IO, "cannot inspect the socket folder %s: %s", dir,
                        strerror(errno));
    if (S_ISLNK(st.st_mode))
        return tsl_fail(TSL_ERR_IO, "the socket folder %s is a symbolic link: refusing to use it",
                        dir);
    if (!S_ISDIR(st.st_mode))
        return tsl_fail(TSL_ERR_IO, "the socket folder %s exists and is not a folder", dir);
    if (st.st_uid != geteuid())
        return tsl_fail(TSL_ERR_IO,
                        "the socket folder %s is owned by uid %u, not by uid %u: "
                        "refusing to use it",
                        dir, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return tsl_fail(TSL_ERR_IO,
                        "the socket folder %s is writable by its group or others (mode "
                        "0%03o): refusing to use it",
                        dir, (unsigned)(st.st_mode & 0777));
    return TSL_OK;
}

tsl_status tsl_ipc_default_path(char *buf, size_t n) {
    char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    int len;
    if (xdg && xdg[0] && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode))
        len = snprintf(dir, sizeof dir, "%s/tensile", xdg);
    else
        len = snprintf(dir, sizeof dir, "/tmp/tensile-%u", (unsigned)geteuid());
    size_t need = (size_t)len + sizeof "/" SOCK_NAME; /* with the NUL */
    if (need > sizeof dir)
        return tsl_fail(TSL_ERR_INVALID,
                        "the default socket path under %s is too long (%zu bytes; "
                        "a socket address holds %zu)",
                        xdg ? xdg : "/tmp", need - 1, sizeof dir - 1);
    if (need > n)
        return tsl_fail(TSL_ERR_INVALID,
                        "the default socket path (%zu bytes) does not fit a buffer "
                        "of %zu bytes",
                        need - 1, n);
    tsl_status s = own_folder(dir);
    if (s != TSL_OK) return s;
    snprintf(buf, n, "%s/" SOCK_NAME, dir);
    return TSL_OK;
}
