/*
 * wait.c - deadlines on the monotonic clock, and waiting for a socket to
 * become ready until one (every timeout of the ipc layer).
 */
#include <errno.h>
#include <poll.h>
#include <time.h>

#include "ipc/ipc_internal.h"

int64_t tsl__ipc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tsl__ipc_wait(int fd, short events, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms - tsl__ipc_now_ms();
        if (left < 0) left = 0;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n > 0) return 1;
        if (n < 0 && errno != EINTR) return -1;
        if (n == 0 && left == 0) return 0;
    }
}
