/* bench_table.c - see bench_table.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_table.h"
#include "core/assert.h"
#include "io/atomic_file.h"

struct bt_table {
    char *name, *title;
    int ncols, nrows, cap;
    char **cols;
    char **cells;  /* nrows * ncols, row-major, each malloc'd */
    char **notes;
    int nnotes;
};

static _Noreturn void oom(void) {
    fprintf(stderr, "tensile bench: out of host memory\n");
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom();
    return p;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

bt_table *bt_new(const char *name, const char *title, int ncols, const char *const *cols) {
    TSL_ASSERT(name && title && ncols > 0 && cols);
    bt_table *t = xmalloc(sizeof *t);
    memset(t, 0, sizeof *t);
    t->name = xstrdup(name);
    t->title = xstrdup(title);
    t->ncols = ncols;
    t->cols = xmalloc(sizeof *t->cols * (size_t)ncols);
    for (int c = 0; c < ncols; c++) t->cols[c] = xstrdup(cols[c]);
    return t;
}

int bt_row(bt_table *t) {
    if (t->nrows == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        char **c = realloc(t->cells, sizeof *c * (size_t)t->cap * (size_t)t->ncols);
        if (!c) oom();
        t->cells = c;
    }
    for (int c = 0; c < t->ncols; c++) t->cells[t->nrows * t->ncols + c] = xstrdup("");
    return t->nrows++;
}

static int col_of(const bt_table *t, const char *col) {
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->cols[c], col)) return c;
    TSL_ASSERT(!"bench table: no such column");
    return -1;
}

void bt_set(bt_table *t, int r, const char *col, const char *fmt, ...) {
    TSL_ASSERT(r >= 0 && r < t->nrows);
    int c = col_of(t, col);
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(t->cells[r * t->ncols + c]);
    t->cells[r * t->ncols + c] = xstrdup(buf);
}

const char *bt_get(const bt_table *t, int r, const char *col) {
    TSL_ASSERT(r >= 0 && r < t->nrows);
    return t->cells[r * t->ncols + col_of(t, col)];
}

int bt_rows(const bt_table *t) { return t->nrows; }

void bt_note(bt_table *t, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **n = realloc(t->notes, sizeof *n * (size_t)(t->nnotes + 1));
    if (!n) oom();
    t->notes = n;
    t->notes[t->nnotes++] = xstrdup(buf);
}

/* One CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void write_csv(const bt_table *t, FILE *f) {
    for (int c = 0; c < t->ncols; c++) {
        if (c) fputc(',', f);
        csv_field(f, t->cols[c]);
    }
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            if (c) fputc(',', f);
            csv_field(f, t->cells[r * t->ncols + c]);
        }
        fputc('\n', f);
    }
}

/* A Markdown cell: '|' escaped. */
static void md_cell(FILE *f, const char *s) {
    fputc(' ', f);
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputs(" |", f);
}

static void write_md(const bt_table *t, FILE *f) {
    fprintf(f, "## %s\n\n|", t->title);
    for (int c = 0; c < t->ncols; c++) md_cell(f, t->cols[c]);
    fputs("\n|", f);
    for (int c = 0; c < t->ncols; c++) fputs("---|", f);
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        fputc('|', f);
        for (int c = 0; c < t->ncols; c++) md_cell(f, t->cells[r * t->ncols + c]);
        fputc('\n', f);
    }
    if (t->nnotes) fputc('\n', f);
    for (int i = 0; i < t->nnotes; i++) fprintf(f, "- %s\n", t->notes[i]);
    fputc('\n', f);
}

/* Writes `path` whole with `fn`; 0 or -1 with a message naming it. */
static int write_path(const bt_table *t, const char *path,
                      void (*fn)(const bt_table *, FILE *)) {
    tsl__out *o;
    if (tsl__out_open(path, "table", &o) != TSL_OK) {
        fprintf(stderr, "tensile bench: %s\n", tsl_last_error());
        return -1;
    }
    fn(t, tsl__out_stream(o));
    if (tsl__out_commit(o) != TSL_OK) {
        fprintf(stderr, "tensile bench: %s\n", tsl_last_error());
        return -1;
    }
    return 0;
}

/* Writes DIR/NAME.EXT with `fn`; 0 or -1 with a message. */
static int write_file(const bt_table *t, const char *dir, const char *ext,
                      void (*fn)(const bt_table *, FILE *)) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, t->name, ext);
    return write_path(t, path, fn);
}

int bt_write(const bt_table *t, const char *dir, FILE *index) {
    if (write_file(t, dir, "csv", write_csv) || write_file(t, dir, "md", write_md)) return -1;
    if (index) write_md(t, index);
    return 0;
}

int bt_write_csv(const bt_table *t, const char *path) { return write_path(t, path, write_csv); }

int bt_write_md(const bt_table *t, const char *path) { return write_path(t, path, write_md); }

void bt_print_md(const bt_table *t, FILE *f) { write_md(t, f); }

void bt_free(bt_table *t) {
    if (!t) return;
    for (int i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
    for (int c = 0; c < t->ncols; c++) free(t->cols[c]);
    for (int i = 0; i < t->nnotes; i++) free(t->notes[i]);
    free(t->cells);
    free(t->cols);
    free(t->notes);
    free(t->name);
    free(t->title);
    free(t);
}
