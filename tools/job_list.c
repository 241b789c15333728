/* job_list.c - see job_list.h. */
#include "job_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

job_spec *job_list_add(job_list *l) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        job_spec *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        l->v = v;
        l->cap = cap;
    }
    job_spec *j = &l->v[l->n++];
    memset(j, 0, sizeof *j);
    return j;
}

void job_list_free(job_list *l) {
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Parses one entry tok[0..len) into *j; returns 0, or -1 with err set. */
static int parse_entry(const char *tok, size_t len, int pos, job_spec *j, char *err, size_t n) {
    char e[160];
    snprintf(e, sizeof e, "%.*s", (int)(len < 120 ? len : 120), tok);
    const char *c1 = memchr(tok, ':', len);
    if (!c1) {
        snprintf(err, n, "'%s' (job %d) is not model:batch[:image]", e, pos);
        return -1;
    }
    size_t ml = (size_t)(c1 - tok);
    if (ml == 0) {
        snprintf(err, n, "'%s' (job %d) has no model name before ':'", e, pos);
        return -1;
    }
    if (ml >= sizeof j->model) {
        snprintf(err, n, "'%s' (job %d): the model name has %zu characters (at most %zu)", e, pos,
                 ml, sizeof j->model - 1);
        return -1;
    }
    for (size_t i = 0; i < ml; i++) {
        char ch = tok[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_')) {
            snprintf(err, n, "'%s' (job %d): the model name holds '%c' (letters, digits, '-' and "
                     "'_' only)", e, pos, ch >= 0x20 && ch < 0x7f ? ch : '?');
            return -1;
        }
    }
    memcpy(j->model, tok, ml);
    j->model[ml] = '\0';
    const char *rest = c1 + 1, *stop = tok + len;
    const char *c2 = memchr(rest, ':', (size_t)(stop - rest));
    char num[32];
    int64_t v;
    size_t bl = (size_t)((c2 ? c2 : stop) - rest);
    snprintf(num, sizeof num, "%.*s", (int)(bl < 24 ? bl : 24), rest);
    if (bl >= 24 || args_parse_int(num, 1, JOB_MAX_BATCH, &v) != 0) {
        snprintf(err, n, "'%s' (job %d): batch '%s%s' is not an integer in 1..%d", e, pos, num,
                 bl >= 24 ? "..." : "", JOB_MAX_BATCH);
        return -1;
    }
    j->batch = (int)v;
    if (c2) {
        size_t il = (size_t)(stop - c2 - 1);
        snprintf(num, sizeof num, "%.*s", (int)(il < 24 ? il : 24), c2 + 1);
        if (il >= 24 || args_parse_int(num, 1, JOB_MAX_IMAGE, &v) != 0) {
            snprintf(err, n, "'%s' (job %d): image size '%s%s' is not an integer in 1..%d", e,
                     pos, num, il >= 24 ? "..." : "", JOB_MAX_IMAGE);
            return -1;
        }
        j->image = (int)v;
    }
    return 0;
}

int job_list_parse(const char *list, job_list *l, char *err, size_t n) {
    int before = l->n, pos = 1;
    if (!list[0]) {
        snprintf(err, n, "'' names no job");
        return -1;
    }
    for (const char *tok = list;; pos++) {
        const char *comma = strchr(tok, ',');
        size_t len = comma ? (size_t)(comma - tok) : strlen(tok);
        job_spec *j = NULL;
        if (len == 0) {
            snprintf(err, n, "job %d of '%.120s' is empty (jobs are separated by single commas)",
                     pos, list);
        } else if (!(j = job_list_add(l))) {
            snprintf(err, n, "out of host memory for %d jobs", l->n + 1);
        } else if (parse_entry(tok, len, pos, j, err, n) == 0) {
            if (!comma) return 0;
            tok = comma + 1;
            continue;
        }
        l->n = before;
        return -1;
    }
}
