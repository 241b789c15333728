/*
 * job_list.h - the jobs of a `tensile plan` command line: models given as
 * --model/--batch or a --jobs list "model:batch[:image],...", and workload
 * files. Parsing is pure (no exit, no printing) so that the fuzzer
 * (fuzz/fuzz_args.c) drives exactly the code the command runs.
 */
#ifndef TSL_TOOLS_JOB_LIST_H
#define TSL_TOOLS_JOB_LIST_H
#include <stddef.h>

/* The bounds of a --jobs entry, as for --batch and --image-size. */
#define JOB_MAX_BATCH (1 << 20)
#define JOB_MAX_IMAGE (1 << 16)

typedef struct job_spec {
    char model[64];            /* a model's name: 1 to 63 of [A-Za-z0-9_-] */
    int batch, image;          /* image 0: the model's default */
    const char *workload_path; /* a --workload job instead of a model */
} job_spec;

/* The jobs of the command line, in order. Zero-initialise; job_list_free. */
typedef struct job_list {
    job_spec *v;
    int n, cap;
} job_list;

/* Appends a zeroed job and returns it; NULL if the host is out of memory
 * (l unchanged). */
job_spec *job_list_add(job_list *l);

/* Parses a --jobs value: one or more "model:batch[:image]" entries
 * separated by commas, no entry empty, the model 1 to 63 characters of
 * letters, digits, '-' and '_', batch 1..JOB_MAX_BATCH and image
 * 1..JOB_MAX_IMAGE in decimal digits. Returns 0 with the jobs appended to
 * l, or -1 with l unchanged and a message naming the entry and the field
 * at fault (without the "--jobs: " prefix) in err[0..n). */
int job_list_parse(const char *list, job_list *l, char *err, size_t n);

/* Frees the jobs (not the workload paths, which point into argv). */
void job_list_free(job_list *l);
#endif
