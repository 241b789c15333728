/*
 * bench_table.h - a table of `tensile bench paper`: named columns, rows of
 * text cells, notes; written as CSV (NAME.csv, RFC 4180 quoting) and as
 * Markdown (NAME.md: the title, the table, the notes), and appended to an
 * index.
 *
 * Cells are text so that a row can say what a number cannot ("not
 * available in this build", "budget not met"); numbers are formatted by
 * the caller (bt_set's printf format). A table owns its strings.
 *
 * Example usage:
 *
 *   static const char *const cols[] = {"model", "method", "MSR"};
 *   bt_table *t = bt_new("tensile_table3", "TENSILE's Table III", 3, cols);
 *   int r = bt_row(t);
 *   bt_set(t, r, "model", "%s", "vgg16");
 *   bt_set(t, r, "MSR", "%.4f", 0.103);
 *   bt_note(t, "MSR on the footprint");
 *   if (bt_write(t, "out", index) != 0) ...   // message on stderr
 *   bt_free(t);
 */
#ifndef TSL_TOOLS_BENCH_TABLE_H
#define TSL_TOOLS_BENCH_TABLE_H
#include <stdio.h>

typedef struct bt_table bt_table;

/* A table with ncols columns named cols (copied). name is the files' base
 * name ([a-z0-9_]), title the Markdown heading. Exits 1 when the host is
 * out of memory (the bench cannot go on without its tables). */
bt_table *bt_new(const char *name, const char *title, int ncols, const char *const *cols);
/* Appends an empty row (every cell "") and returns its index. */
int bt_row(bt_table *t);
/* Sets the cell of row r (an index bt_row returned) in the column named
 * col (a bug if no column has that name). */
void bt_set(bt_table *t, int r, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The cell's text (never NULL). */
const char *bt_get(const bt_table *t, int r, const char *col);
int bt_rows(const bt_table *t);
/* Adds a note, printed under the table in Markdown (not in the CSV). */
void bt_note(bt_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes DIR/NAME.csv and DIR/NAME.md (atomically, io/atomic_file.h), and
 * the Markdown once more to `index` when it is not NULL. Returns 0, or -1
 * with a message naming the file on stderr. */
int bt_write(const bt_table *t, const char *dir, FILE *index);
/* Writes the table alone as CSV / as Markdown to `path` (atomically).
 * Returns 0, or -1 with a message naming the file on stderr. */
int bt_write_csv(const bt_table *t, const char *path);
int bt_write_md(const bt_table *t, const char *path);
/* Prints the table as Markdown (title, table, notes) on f. */
void bt_print_md(const bt_table *t, FILE *f);
void bt_free(bt_table *t); /* NULL is fine */
#endif
