/*
 * progress.h - progress of a long loop: a redrawn bar on a terminal, plain
 * lines (about every 10 %) otherwise. Writes to stderr so that stdout stays
 * clean for --json.
 */
#ifndef TSL_TOOLS_PROGRESS_H
#define TSL_TOOLS_PROGRESS_H
#include <stdint.h>

typedef struct tsl_progress {
    const char *label;
    int64_t total, last_line;
    int tty, quiet;
    double t0;
} tsl_progress;

void progress_begin(tsl_progress *p, const char *label, int64_t total, int quiet);
/* `done` of total finished; `note` is appended (e.g. "loss 0.412"). */
void progress_update(tsl_progress *p, int64_t done, const char *note);
void progress_end(tsl_progress *p);
double progress_now_s(void);
#endif
