/*
 * sock.c - the daemon's Unix socket: listening (a stale socket file
 * replaced, a live daemon's refused), accepting with the peer's uid checked
 * (SO_PEERCRED), connecting with a clear message when no daemon listens.
 *
 * The socket file appears whole: the socket is bound to a temporary name
 * beside PATH, made 0600, set listening, then hard-linked to PATH (which
 * fails if PATH exists, so a live daemon's socket is never replaced) and
 * the temporary name removed. No one can connect through PATH before its
 * mode is 0600 or find it bound but not listening (which would look
 * stale). Only a socket file that refuses connections is removed, and only
 * if it is still the file that was probed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/ipc_internal.h"
#include "tensile/ipc.h"

#define BACKLOG 64

static tsl_status make_addr(const char *path, struct sockaddr_un *sa) {
    size_t len = strlen(path);
    memset(sa, 0, sizeof *sa);
    if (len == 0 || len >= sizeof sa->sun_path)
        return tsl_fail(TSL_ERR_INVALID,
                        "socket path '%s' has %zu bytes (a socket address holds 1 to "
                        "%zu)",
                        path, len, sizeof sa->sun_path - 1);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, len);
    return TSL_OK;
}

/* Whether someone listens at sa: 1 yes (also when its backlog is full), 0
 * no (nothing there, or a socket file no one listens on), -1 errno. */
static int answers(const struct sockaddr_un *sa) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) return -1;
    int r = connect(s, (const struct sockaddr *)sa, sizeof *sa);
    int e = errno;
    close(s);
    if (r == 0 || e == EAGAIN) return 1;
    if (e == ECONNREFUSED || e == ENOENT) return 0;
    errno = e;
    return -1;
}

/* The uid of the process at the other end of s (SO_PEERCRED). */
static int peer_cred(int s, struct ucred *cr) {
    socklen_t len = sizeof *cr;
    return getsockopt(s, SOL_SOCKET, SO_PEERCRED, cr, &len);
}

/* Puts the listening socket bound at tmp at path: a link, unless a live
 * daemon is there; a stale socket file is removed first. */
static tsl_status take_path(const char *tmp, const char *path, const struct sockaddr_un *sa) {
    for (int attempt = 0; attempt < 5; attempt++) {
        if (link(tmp, path) == 0) return TSL_OK;
        if (errno != EEXIST)
            return tsl_fail(TSL_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
        struct stat st, again;
        if (lstat(path, &st) != 0) continue; /* gone meanwhile */
        if (!S_ISSOCK(st.st_mode))
            return tsl_fail(TSL_ERR_IO, "cannot listen on %s: it exists and is not a socket", path);
        int live = answers(sa);
        if (live > 0) return tsl_fail(TSL_ERR_IO, "%s is already served by a running daemon", path);
        if (live < 0)
            return tsl_fail(TSL_ERR_IO,
                            "cannot listen on %s: cannot tell whether a daemon serves it: %s", path,
                            strerror(errno));
        /* stale: nobody listens; remove it if it is still the file probed */
        if (lstat(path, &again) == 0 && again.st_ino == st.st_ino && again.st_dev == st.st_dev &&
            unlink(path) != 0 && errno != ENOENT)
            return tsl_fail(TSL_ERR_IO, "cannot remove the stale socket %s: %s", path,
                            strerror(errno));
    }
    return tsl_fail(TSL_ERR_IO, "cannot listen on %s: other processes keep creating it", path);
}

tsl_status tsl_ipc_listen(const char *path, int *fd) {
    *fd = -1;
    struct sockaddr_un sa, ta;
    tsl_status st = make_addr(path, &sa);
    if (st != TSL_OK) return st;
    char tmp[sizeof sa.sun_path + 32];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    if (make_addr(tmp, &ta) != TSL_OK)
        return tsl_fail(TSL_ERR_INVALID, "socket path '%s' is too long: %zu bytes, at most %zu",
                        path, strlen(path), sizeof sa.sun_path - 1 - (strlen(tmp) - strlen(path)));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return tsl_fail(TSL_ERR_IO, "cannot listen on %s: socket: %s", path, strerror(errno));
    unlink(tmp); /* left by an earlier process of this pid */
    if (bind(s, (const struct sockaddr *)&ta, sizeof ta) != 0)
        st = tsl_fail(TSL_ERR_IO, "cannot listen on %s: cannot bind %s: %s", path, tmp,
                      strerror(errno));
    else if (chmod(tmp, 0600) != 0 || listen(s, BACKLOG) != 0)
        st = tsl_fail(TSL_ERR_IO, "cannot listen on %s: %s", path, strerror(errno));
    else
        st = take_path(tmp, path, &sa);
    unlink(tmp);
    if (st != TSL_OK) {
        close(s);
        return st;
    }
    *fd = s;
    return TSL_OK;
}

void tsl_ipc_unlisten(int fd, const char *path) {
    if (fd >= 0) close(fd);
    struct sockaddr_un sa;
    struct stat st;
    if (!path || strlen(path) >= sizeof sa.sun_path || lstat(path, &st) != 0 ||
        !S_ISSOCK(st.st_mode))
        return;
    make_addr(path, &sa);
    if (answers(&sa) == 0) unlink(path);
}

tsl_status tsl_ipc_accept(int lfd, int *fd, pid_t *pid) {
    *fd = -1;
    if (pid) *pid = 0;
    int s;
    do s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    while (s < 0 && errno == EINTR);
    if (s < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED) return TSL_OK;
        return tsl_fail(TSL_ERR_IO, "cannot accept a connection: %s", strerror(errno));
    }
    struct ucred cr;
    if (peer_cred(s, &cr) != 0) {
        int e = errno;
        close(s);
        return tsl_fail(TSL_ERR_IO, "cannot read the credentials of a connection: %s", strerror(e));
    }
    if (cr.uid != geteuid()) {
        close(s);
        return tsl_fail(TSL_ERR_IO,
                        "refused a connection from pid %d of uid %u: only uid %u may use "
                        "this daemon",
                        (int)cr.pid, (unsigned)cr.uid, (unsigned)geteuid());
    }
    *fd = s;
    if (pid) *pid = cr.pid;
    return TSL_OK;
}

tsl_status tsl_ipc_connect(const char *path, int timeout_ms, int *fd) {
    *fd = -1;
    struct sockaddr_un sa;
    tsl_status st = make_addr(path, &sa);
    if (st != TSL_OK) return st;
    int64_t deadline = tsl__ipc_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int s;
    for (;;) {
        s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0)
            return tsl_fail(TSL_ERR_IO, "cannot connect to %s: socket: %s", path, strerror(errno));
        if (connect(s, (const struct sockaddr *)&sa, sizeof sa) == 0) break;
        int e = errno;
        close(s);
        if (e == EINTR) continue;
        if (e == ENOENT || e == ECONNREFUSED)
            return tsl_fail(TSL_ERR_IO, "no daemon at %s; start one with 'tensile serve'", path);
        if (e != EAGAIN) return tsl_fail(TSL_ERR_IO, "cannot connect to %s: %s", path, strerror(e));
        if (tsl__ipc_now_ms() >= deadline) /* the daemon's backlog is full */
            return tsl_fail(TSL_ERR_TIMEOUT,
                            "the daemon at %s did not take the connection within %d ms", path,
                            timeout_ms);
        poll(NULL, 0, 10);
    }
    struct ucred cr;
    int flags = fcntl(s, F_GETFL);
    if (flags < 0 || fcntl(s, F_SETFL, flags & ~O_NONBLOCK) != 0 || peer_cred(s, &cr) != 0) {
        int e = errno;
        close(s);
        return tsl_fail(TSL_ERR_IO, "cannot set up the connection to %s: %s", path, strerror(e));
    }
    if (cr.uid != geteuid()) {
        close(s);
        return tsl_fail(TSL_ERR_IO,
                        "the daemon at %s runs as uid %u, not as uid %u: refusing to talk "
                        "to it",
                        path, (unsigned)cr.uid, (unsigned)geteuid());
    }
    *fd = s;
    return TSL_OK;
}
