/* progress.c - see progress.h. */
#include "progress.h"
#include <stdio.h>
#include <time.h>
#include <unistd.h>

double progress_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_begin(tsl_progress *p, const char *label, int64_t total, int quiet) {
    p->label = label;
    p->total = total > 0 ? total : 1;
    p->last_line = -1;
    p->tty = isatty(2);
    p->quiet = quiet;
    p->t0 = progress_now_s();
}

void progress_update(tsl_progress *p, int64_t done, const char *note) {
    if (p->quiet) return;
    double el = progress_now_s() - p->t0;
    double rate = el > 0 ? (double)done / el : 0;
    double eta = rate > 0 ? (double)(p->total - done) / rate : 0;
    if (p->tty) {
        int w = 30, fill = (int)((double)done * w / (double)p->total);
        char bar[64];
        for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
        bar[w] = '\0';
        fprintf(stderr, "\r%s [%s] %3d%% %lld/%lld %.1f it/s eta %.0fs %s\033[K", p->label, bar,
                (int)(100 * done / p->total), (long long)done, (long long)p->total, rate, eta,
                note ? note : "");
        fflush(stderr);
    } else {
        int64_t decile = 10 * done / p->total;
        if (decile != p->last_line && (done == p->total || decile > 0)) {
            p->last_line = decile;
            fprintf(stderr, "%s %3d%% %lld/%lld %.1f it/s %s\n", p->label,
                    (int)(100 * done / p->total), (long long)done, (long long)p->total, rate,
                    note ? note : "");
        }
    }
}

void progress_end(tsl_progress *p) {
    if (p->quiet) return;
    if (p->tty) fprintf(stderr, "\n");
}
