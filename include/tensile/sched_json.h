/*
 * tensile/sched_json.h - the files of the scheduler: device profiles, workloads
 * and plans as JSON (docs/SCHEDULING.md), with strict validation naming the
 * file, the field and the value (the io layer).
 */
#ifndef TENSILE_SCHED_JSON_H
#define TENSILE_SCHED_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device profiles ---------------------------------------------------- */
/* Loads a profile by file path, or by name from the profiles folder
 * (TSL_PROFILE_DIR, else the source tree's profiles/, else the installed
 * share/tensile/profiles). Strict: every field required, positive, named in
 * errors (TSL_ERR_IO / TSL_ERR_FORMAT). */
tsl_status tsl_profile_load(const char *name_or_path, tsl_device_profile *out);
tsl_status tsl_profile_save(const char *path, const tsl_device_profile *p);

/* tsl_profile_save with the file's "source" text (required, 1 to 4095
 * characters) and optional "notes" (NULL: none). TSL_ERR_INVALID for a
 * value a profile cannot hold (named), TSL_ERR_IO if the file cannot be
 * written. */
tsl_status tsl_profile_save_source(const char *path, const tsl_device_profile *p,
                                   const char *source, const char *notes);

/* The text tsl_profile_save_source writes (no notes), in *text (malloc'd,
 * NUL-terminated), *len bytes before the NUL: for a message. TSL_ERR_INVALID
 * for bad values or source (named), TSL_ERR_OOM; *text NULL then. */
tsl_status tsl_profile_to_text(const tsl_device_profile *p, const char *source, char **text,
                               size_t *len);
/* Parses text[0..len) as a profile file's contents, named `name` in
 * messages (as tsl_profile_load does a file: strict, every field checked).
 * TSL_ERR_FORMAT; *out untouched on failure. */
tsl_status tsl_profile_parse_json(const char *text, size_t len, const char *name,
                                  tsl_device_profile *out);

/* ---- workloads ------------------------------------------------------------ */
/* Documented JSON form (docs/SCHEDULING.md), strict validation naming the
 * file, the field and the value. */
tsl_status tsl_workload_read_json(const char *path, tsl_workload **out);
tsl_status tsl_workload_parse_json(const char *text, size_t len, const char *name,
                                   tsl_workload **out);
tsl_status tsl_workload_write_json(const tsl_workload *w, const char *path);
/* The text tsl_workload_write_json writes, in *text (malloc'd,
 * NUL-terminated), *len bytes before the NUL. TSL_ERR_OOM; *text NULL then. */
tsl_status tsl_workload_to_text(const tsl_workload *w, char **text, size_t *len);

/* ---- plans ----------------------------------------------------------------- */
/* JSON form: {"job", "predicted_peak_bytes", "predicted_period_us",
 * "events": [{"type", "tensor" (name), "trigger" (op name or "start"),
 * "delay_us", "precede" (op name)}]}; tensor and op names resolved against
 * the workload; strict validation naming the file, field and value. */
tsl_status tsl_plan_write_json(const tsl_plan *const *plans, int n, const tsl_workload *const *w,
                               const char *path);
tsl_status tsl_plan_read_json(const char *path, const tsl_workload *const *w, int n,
                              tsl_plan **plans);
tsl_status tsl_plan_parse_json(const char *text, size_t len, const char *name,
                               const tsl_workload *const *w, int n, tsl_plan **plans);
/* The text tsl_plan_write_json writes, in *text (malloc'd, NUL-terminated,
 * the caller frees it), *len bytes before the NUL: for a message rather
 * than a file. TSL_ERR_INVALID as tsl_plan_write_json, TSL_ERR_OOM; *text
 * NULL then. */
tsl_status tsl_plan_to_text(const tsl_plan *const *plans, int n, const tsl_workload *const *w,
                            char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
