/*
 * test_ipc_sock.c - the daemon's socket (src/ipc/sock.c, sock_path.c,
 * wire.c): listening makes a 0600 socket file, replaces a stale one and
 * refuses a live daemon's or anything that is not a socket; accepting and
 * connecting check the peer's uid (another uid refused at both ends, where
 * the test runs as root and can be someone else); connecting to nothing
 * says how to start a daemon; the default path and its folder's rules;
 * receive and send timeouts; a closed peer is an error, not a SIGPIPE.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "tensile/ipc.h"

#define NOBODY 65534

static char dir[64], path[100];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/tsl_test_ipc_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/d.sock", dir);
}

static void remove_dir(void) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void send_hello(int fd) {
    cr_assert_eq(tsl_msg_sendf(fd, 1000, TSL_MSG_HELLO, "{s:s, s:i, s:s}", "role", "client", "pid",
                               (int)getpid(), "client", "test"),
                 TSL_OK, "%s", tsl_last_error());
}

static void expect_hello(int fd) {
    tsl_msg m;
    cr_assert_eq(tsl_msg_recv(fd, 1000, &m, NULL), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(m.type, TSL_MSG_HELLO);
    cr_assert_eq(tsl_msg_int(&m, "pid", 0), getpid());
    tsl_msg_free(&m);
}

static void set_addr(struct sockaddr_un *sa, const char *p) {
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    cr_assert_lt(strlen(p), sizeof sa->sun_path);
    memcpy(sa->sun_path, p, strlen(p));
}

/* A socket file at p that no one listens on (a daemon that died). */
static void stale_socket(const char *p) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa;
    set_addr(&sa, p);
    cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0, "%s", strerror(errno));
    cr_assert_eq(listen(s, 1), 0);
    close(s);
    struct stat st;
    cr_assert(lstat(p, &st) == 0 && S_ISSOCK(st.st_mode));
}

Test(ipc_sock, listen_connect_accept, .init = make_dir, .fini = remove_dir, .timeout = 30) {
    int lfd, cfd, afd;
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_OK, "%s", tsl_last_error());
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISSOCK(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0600, "mode 0%o", st.st_mode & 0777);
    char names[400];
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "d.sock ", "left behind: %s", names);
    cr_assert_eq(tsl_ipc_connect(path, 1000, &cfd), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(fcntl(cfd, F_GETFL) & O_NONBLOCK, 0); /* blocking, as documented */
    cr_assert(fcntl(cfd, F_GETFD) & FD_CLOEXEC);
    pid_t pid = 0;
    cr_assert_eq(tsl_ipc_accept(lfd, &afd, &pid), TSL_OK, "%s", tsl_last_error());
    cr_assert_geq(afd, 0);
    cr_assert_eq(pid, getpid()); /* the peer is this process, of this uid */
    send_hello(cfd);
    expect_hello(afd);
    send_hello(afd);
    expect_hello(cfd);
    close(cfd);
    close(afd);
    /* a non-blocking listener with nobody waiting: no connection, no error */
    fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
    cr_assert_eq(tsl_ipc_accept(lfd, &afd, NULL), TSL_OK);
    cr_assert_eq(afd, -1);
    tsl_ipc_unlisten(lfd, path);
    cr_assert(lstat(path, &st) != 0 && errno == ENOENT, "unlisten left the socket file");
}

Test(ipc_sock, a_stale_socket_file_is_replaced, .init = make_dir, .fini = remove_dir, .timeout = 30) {
    stale_socket(path);
    int lfd, cfd, afd;
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_OK, "%s", tsl_last_error());
    struct stat st;
    cr_assert(lstat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    cr_assert_eq(tsl_ipc_connect(path, 1000, &cfd), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_ipc_accept(lfd, &afd, NULL), TSL_OK, "%s", tsl_last_error());
    send_hello(cfd);
    expect_hello(afd);
    close(cfd);
    close(afd);
    /* the daemon dies without unlisten: the next one takes over */
    close(lfd);
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_OK, "%s", tsl_last_error());
    tsl_ipc_unlisten(lfd, path);
}

Test(ipc_sock, a_live_daemon_is_not_replaced, .init = make_dir, .fini = remove_dir, .timeout = 30) {
    int lfd, lfd2 = 7, cfd, afd;
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_ipc_listen(path, &lfd2), TSL_ERR_IO);
    cr_assert_eq(lfd2, -1);
    char want[300];
    snprintf(want, sizeof want, "%s is already served by a running daemon", path);
    cr_assert_str_eq(tsl_last_error(), want);
    /* the probe's connection aside, the first daemon still serves */
    cr_assert_eq(tsl_ipc_accept(lfd, &afd, NULL), TSL_OK);
    close(afd);
    cr_assert_eq(tsl_ipc_connect(path, 1000, &cfd), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_ipc_accept(lfd, &afd, NULL), TSL_OK);
    send_hello(cfd);
    expect_hello(afd);
    close(cfd);
    close(afd);
    /* unlisten without the live daemon's socket leaves its file */
    tsl_ipc_unlisten(-1, path);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    tsl_ipc_unlisten(lfd, path);
    char names[400];
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "", "left behind: %s", names);
}

Test(ipc_sock, what_is_not_a_socket_is_never_replaced, .init = make_dir, .fini = remove_dir) {
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    int lfd;
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_ERR_IO);
    char want[300];
    snprintf(want, sizeof want, "cannot listen on %s: it exists and is not a socket", path);
    cr_assert_str_eq(tsl_last_error(), want);
    char buf[20] = "";
    f = fopen(path, "r");
    cr_assert(fgets(buf, sizeof buf, f));
    fclose(f);
    cr_assert_str_eq(buf, "precious");
    char names[400];
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "d.sock ", "left behind: %s", names); /* no temporary socket */
    /* a folder */
    snprintf(path, sizeof path, "%s/sub", dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "it exists and is not a socket"), "%s", tsl_last_error());
    /* a path no socket address holds */
    char longp[200];
    memset(longp, 'a', 150);
    longp[0] = '/';
    longp[150] = '\0';
    cr_assert_eq(tsl_ipc_listen(longp, &lfd), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "has 150 bytes (a socket address holds 1 to 107)"), "%s",
              tsl_last_error());
    cr_assert_eq(tsl_ipc_connect(longp, 100, &lfd), TSL_ERR_INVALID);
}

Test(ipc_sock, connecting_to_no_daemon_says_how_to_start_one, .init = make_dir, .fini = remove_dir) {
    int fd = 5;
    char want[300];
    snprintf(want, sizeof want, "no daemon at %s; start one with 'tensile serve'", path);
    cr_assert_eq(tsl_ipc_connect(path, 100, &fd), TSL_ERR_IO);
    cr_assert_eq(fd, -1);
    cr_assert_str_eq(tsl_last_error(), want);
    stale_socket(path); /* a daemon that died */
    cr_assert_eq(tsl_ipc_connect(path, 100, &fd), TSL_ERR_IO);
    cr_assert_str_eq(tsl_last_error(), want);
}

Test(ipc_sock, a_full_backlog_times_out, .init = make_dir, .fini = remove_dir, .timeout = 30) {
    int lfd;
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_OK, "%s", tsl_last_error());
    struct sockaddr_un sa;
    set_addr(&sa, path);
    int fds[300], n = 0, full = 0;
    while (n < 300 && !full) { /* connect, never accepted, until the backlog is full */
        fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(fds[n], (struct sockaddr *)&sa, sizeof sa) == 0) n++;
        else {
            cr_assert_eq(errno, EAGAIN, "%s", strerror(errno));
            close(fds[n]);
            full = 1;
        }
    }
    cr_assert(full, "the backlog never filled");
    int fd;
    cr_assert_eq(tsl_ipc_connect(path, 100, &fd), TSL_ERR_TIMEOUT);
    char want[300];
    snprintf(want, sizeof want, "the daemon at %s did not take the connection within 100 ms", path);
    cr_assert_str_eq(tsl_last_error(), want);
    for (int i = 0; i < n; i++) close(fds[i]);
    tsl_ipc_unlisten(lfd, path);
}

/* ---- the default path -------------------------------------------------------------- */

Test(ipc_sock, default_path_under_xdg_runtime_dir, .init = make_dir, .fini = remove_dir) {
    setenv("XDG_RUNTIME_DIR", dir, 1);
    char p[108], want[400];
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_OK, "%s", tsl_last_error());
    snprintf(want, sizeof want, "%s/tensile/tensiled.sock", dir);
    cr_assert_str_eq(p, want);
    char folder[100];
    snprintf(folder, sizeof folder, "%s/tensile", dir);
    struct stat st;
    cr_assert(lstat(folder, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
              "mode 0%o", st.st_mode & 0777);
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_OK, "%s", tsl_last_error()); /* again */
    /* it serves */
    int lfd, cfd, afd;
    cr_assert_eq(tsl_ipc_listen(p, &lfd), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_ipc_connect(p, 1000, &cfd), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_ipc_accept(lfd, &afd, NULL), TSL_OK, "%s", tsl_last_error());
    close(cfd);
    close(afd);
    tsl_ipc_unlisten(lfd, p);
    /* a folder others may write to is refused */
    cr_assert_eq(chmod(folder, 0770), 0);
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_ERR_IO);
    snprintf(want, sizeof want,
             "the socket folder %s is writable by its group or others (mode 0770): refusing to use it",
             folder);
    cr_assert_str_eq(tsl_last_error(), want);
    cr_assert_eq(chmod(folder, 0702), 0);
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "(mode 0702)"), "%s", tsl_last_error());
    /* so is a symbolic link, and a file */
    cr_assert_eq(rmdir(folder), 0);
    cr_assert_eq(symlink("/tmp", folder), 0);
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_ERR_IO);
    snprintf(want, sizeof want, "the socket folder %s is a symbolic link: refusing to use it", folder);
    cr_assert_str_eq(tsl_last_error(), want);
    cr_assert_eq(unlink(folder), 0);
    fclose(fopen(folder, "w"));
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "exists and is not a folder"), "%s", tsl_last_error());
    cr_assert_eq(unlink(folder), 0);
    /* a buffer too small */
    cr_assert_eq(tsl_ipc_default_path(p, 10), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "does not fit a buffer of 10 bytes"), "%s", tsl_last_error());
    /* an XDG_RUNTIME_DIR too long for a socket address */
    char deep[240];
    snprintf(deep, sizeof deep, "%s/%0100d", dir, 0);
    cr_assert_eq(mkdir(deep, 0700), 0);
    setenv("XDG_RUNTIME_DIR", deep, 1);
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "is too long"), "%s", tsl_last_error());
}

Test(ipc_sock, default_path_without_xdg_runtime_dir, .init = make_dir, .fini = remove_dir) {
    char p[108], want[200], folder[100];
    snprintf(folder, sizeof folder, "/tmp/tensile-%u", (unsigned)geteuid());
    snprintf(want, sizeof want, "%s/tensiled.sock", folder);
    struct stat st;
    int existed = lstat(folder, &st) == 0;
    /* unset, empty, or naming something that is not a folder: /tmp */
    char file[200];
    snprintf(file, sizeof file, "%s/not-a-folder", dir);
    fclose(fopen(file, "w"));
    const char *values[] = {NULL, "", file, "/nonexistent/run"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        if (values[i]) setenv("XDG_RUNTIME_DIR", values[i], 1);
        else unsetenv("XDG_RUNTIME_DIR");
        tsl_status s = tsl_ipc_default_path(p, sizeof p);
        cr_assert_eq(s, TSL_OK, "XDG_RUNTIME_DIR=%s: %s", values[i] ? values[i] : "(unset)",
                     tsl_last_error());
        cr_assert_str_eq(p, want);
    }
    cr_assert(lstat(folder, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0077) == 0 &&
              st.st_uid == geteuid());
    if (!existed) rmdir(folder); /* only if the test made it (and it is empty) */
}

/* ---- another uid (the test must run as root to be someone else) ------------------------ */

Test(ipc_sock, another_uid_is_refused_at_both_ends, .init = make_dir, .fini = remove_dir,
     .timeout = 30) {
    if (geteuid() != 0) cr_skip_test("needs root to connect as another uid");
    /* nobody must reach the socket: every folder above it open to others
     * (a chroot made in a mktemp -d folder has a "/" of mode 0700) */
    for (const char *up = "/"; up; up = strcmp(up, "/") == 0 ? "/tmp" : NULL) {
        struct stat st;
        cr_assert_eq(stat(up, &st), 0, "%s: %s", up, strerror(errno));
        if (!(st.st_mode & S_IXOTH))
            cr_skip_test("%s has mode %o: no other uid can reach a socket under it", up,
                         (unsigned)(st.st_mode & 07777));
    }
    int lfd;
    cr_assert_eq(tsl_ipc_listen(path, &lfd), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(chmod(dir, 0755), 0); /* let nobody reach the socket, to see the uid check */
    cr_assert_eq(chmod(path, 0666), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) { /* nobody connects: the client end refuses the root daemon */
        if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0) _exit(2);
        int fd;
        char want[300];
        snprintf(want, sizeof want,
                 "the daemon at %s runs as uid 0, not as uid %d: refusing to talk to it", path, NOBODY);
        tsl_status s = tsl_ipc_connect(path, 1000, &fd);
        _exit(s == TSL_ERR_IO && fd == -1 && strcmp(tsl_last_error(), want) == 0 ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's check failed (%d)", status);
    /* the daemon end refuses nobody's connection, naming both uids */
    int afd = 7;
    cr_assert_eq(tsl_ipc_accept(lfd, &afd, NULL), TSL_ERR_IO);
    cr_assert_eq(afd, -1);
    char want[300];
    snprintf(want, sizeof want,
             "refused a connection from pid %d of uid %d: only uid 0 may use this daemon", (int)child,
             NOBODY);
    cr_assert_str_eq(tsl_last_error(), want);
    tsl_ipc_unlisten(lfd, path);
}

Test(ipc_sock, a_folder_of_another_uid_is_refused, .init = make_dir, .fini = remove_dir) {
    if (geteuid() != 0) cr_skip_test("needs root to give a folder away");
    setenv("XDG_RUNTIME_DIR", dir, 1);
    char folder[200], p[108], want[300];
    snprintf(folder, sizeof folder, "%s/tensile", dir);
    cr_assert_eq(mkdir(folder, 0700), 0);
    cr_assert_eq(chown(folder, NOBODY, NOBODY), 0);
    cr_assert_eq(tsl_ipc_default_path(p, sizeof p), TSL_ERR_IO);
    snprintf(want, sizeof want,
             "the socket folder %s is owned by uid %d, not by uid 0: refusing to use it", folder,
             NOBODY);
    cr_assert_str_eq(tsl_last_error(), want);
}

/* ---- timeouts and closed peers ---------------------------------------------------------------- */

Test(ipc_sock, receive_times_out, .timeout = 30) {
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    tsl_msg m = {TSL_MSG_HELLO, (json_t *)1};
    tsl_msg_err code = TSL_MSG_ERR_INTERNAL;
    cr_assert_eq(tsl_msg_recv(sv[1], 200, &m, &code), TSL_ERR_TIMEOUT);
    cr_assert_str_eq(tsl_last_error(), "no message within 200 ms");
    cr_assert(m.type == TSL_MSG_NONE && m.body == NULL && code == TSL_MSG_ERR_NONE);
    /* half a message, then silence */
    uint8_t h[16];
    tsl_msg_header_encode(TSL_MSG_CANCEL, 12, h);
    cr_assert_eq(write(sv[0], h, 16), 16);
    cr_assert_eq(write(sv[0], "{\"job", 5), 5);
    cr_assert_eq(tsl_msg_recv(sv[1], 200, &m, &code), TSL_ERR_TIMEOUT);
    cr_assert_str_eq(tsl_last_error(), "no message within 200 ms");
    close(sv[0]);
    close(sv[1]);
}

Test(ipc_sock, sending_to_a_closed_peer_is_an_error_not_a_signal, .timeout = 30) {
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    tsl_status st = tsl_msg_sendf(sv[0], 1000, TSL_MSG_CANCEL, "{s:i}", "job_id", 3);
    cr_assert_eq(st, TSL_ERR_IO); /* and this process is still alive: no SIGPIPE */
    cr_assert_str_eq(tsl_last_error(), "could not send CANCEL: the peer closed the connection");
    close(sv[0]);
}

Test(ipc_sock, sending_to_a_peer_that_never_reads_times_out, .timeout = 30) {
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    tsl_msg m;
    json_t *lat = json_array();
    for (int i = 0; i < 100000; i++) json_array_append_new(lat, json_real(1.5 + i));
    cr_assert_eq(tsl_msg_pack(&m, TSL_MSG_REPORT,
                              "{s:i, s:f, s:f, s:o, s:i, s:i, s:i, s:i, s:i, s:i, s:f}", "iteration", 1,
                              "iter_ms", 1.0, "kernel_ms", 1.0, "latencies_us", lat, "load_bytes", 0,
                              "footprint_bytes", 0, "peak_footprint_bytes", 0, "swaps", 0,
                              "evictions", 0, "passive_swaps", 0, "stall_ms", 0.0),
                 TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_msg_send(sv[0], &m, 200), TSL_ERR_TIMEOUT);
    cr_assert(strstr(tsl_last_error(), "could not send REPORT within 200 ms ("), "%s",
              tsl_last_error());
    tsl_msg_free(&m);
    close(sv[0]);
    close(sv[1]);
}
