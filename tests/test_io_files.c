/*
 * test_io_files.c - the files a user names (issue 15): inputs that are not
 * regular files (a FIFO, /dev/zero, a folder) refused at once and never
 * waited on, inputs above their size bound refused unread, names with
 * control characters refused; outputs written whole or not at all
 * (io/atomic_file.h): a failed write leaves the old file and no temporary
 * file, special files (/dev/null, /dev/full) are written directly with
 * their errors reported, a FIFO without a reader is refused, a symbolic
 * link keeps pointing at the new file.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/read_file.h"
#include "helpers.h"
#include "tensile/sched_json.h"

static char dir[128];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/tsl_test_io_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path) {
    char *buf;
    size_t len;
    cr_assert_eq(tsl__read_regular(path, "test", 1 << 20, &buf, &len), TSL_OK, "%s",
                 tsl_last_error());
    return buf;
}

/* ---- inputs --------------------------------------------------------------------- */

Test(io_files, non_regular_inputs_are_refused_at_once, .init = make_dir, .fini = remove_dir,
     .timeout = 20) {
    char fifo[200];
    snprintf(fifo, sizeof fifo, "%s/in.fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    struct { const char *path, *kind; } cases[] = {
        {fifo, "a FIFO"}, {"/dev/zero", "a character device"}, {dir, "a folder"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t0 = now_s();
        char *buf = (char *)1;
        size_t len;
        cr_assert_eq(tsl__read_regular(cases[i].path, "workload", 1 << 20, &buf, &len), TSL_ERR_IO);
        cr_assert_null(buf);
        cr_assert(strstr(tsl_last_error(), cases[i].path) && strstr(tsl_last_error(), cases[i].kind) &&
                      strstr(tsl_last_error(), "not a regular file"),
                  "%s", tsl_last_error());
        cr_assert(now_s() - t0 < 1.0, "%s was waited on", cases[i].path);
    }
    /* the readers of the io layer use it: a profile and a workload */
    tsl_device_profile p;
    cr_assert_eq(tsl_profile_load(fifo, &p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "a FIFO"), "%s", tsl_last_error());
    tsl_workload *w;
    cr_assert_eq(tsl_workload_read_json("/dev/zero", &w), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "character device"), "%s", tsl_last_error());
}

Test(io_files, inputs_above_their_bound_are_refused_unread, .init = make_dir, .fini = remove_dir) {
    char path[200];
    snprintf(path, sizeof path, "%s/big.json", dir);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    cr_assert(fd >= 0);
    cr_assert_eq(ftruncate(fd, (off_t)17 << 20), 0); /* sparse: 17 MiB, nothing written */
    close(fd);
    tsl_workload *w;
    cr_assert_eq(tsl_workload_read_json(path, &w), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "17825792 bytes is larger than the limit of 16777216"), "%s",
              tsl_last_error());
    char *buf;
    size_t len;
    cr_assert_eq(tsl__read_regular(path, "x", 1000, &buf, &len), TSL_ERR_IO);
    write_file(path, "0123456789");
    cr_assert_eq(tsl__read_regular(path, "x", 10, &buf, &len), TSL_OK);
    cr_assert(len == 10 && !strcmp(buf, "0123456789"));
    free(buf);
    cr_assert_eq(tsl__read_regular(path, "x", 9, &buf, &len), TSL_ERR_IO);
}

Test(io_files, names_with_control_characters_are_refused, .init = make_dir, .fini = remove_dir) {
    static const char wl[] =
        "{\"job\": \"a\\u001b[31mred\", \"period_us\": 1, \"optimizer_begin\": 1,"
        " \"tensors\": [{\"name\": \"x\", \"bytes\": 4, \"kind\": \"input\"},"
        " {\"name\": \"y\", \"bytes\": 4, \"kind\": \"activation\"}],"
        " \"ops\": [{\"name\": \"f\", \"start_us\": 0, \"end_us\": 1, \"workspace\": 0,"
        " \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}";
    tsl_workload *w;
    cr_assert_eq(tsl_workload_parse_json(wl, strlen(wl), "w.json", &w), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "w.json: job:") &&
                  strstr(tsl_last_error(), "control character (0x1b)"),
              "%s", tsl_last_error());
    char path[200];
    snprintf(path, sizeof path, "%s/p.json", dir);
    write_file(path, "{\"name\": \"a\\nb\", \"source\": \"t\", \"flops\": 1e13, \"mem_bw\": 5e11,"
                     " \"mem_bytes\": 1073741824, \"h2d_bw\": 1e10, \"d2h_bw\": 1e10, \"duplex\": 1,"
                     " \"launch_us\": 5, \"copy_latency_us\": 10}");
    tsl_device_profile p;
    cr_assert_eq(tsl_profile_load(path, &p), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "field 'name'") &&
                  strstr(tsl_last_error(), "control character"),
              "%s", tsl_last_error());
}

/* ---- outputs -------------------------------------------------------------------- */

Test(io_files, an_output_is_written_whole_or_not_at_all, .init = make_dir, .fini = remove_dir) {
    char path[200], names[512];
    snprintf(path, sizeof path, "%s/out.json", dir);
    write_file(path, "old");
    chmod(path, 0640);
    /* abandoned: the old file stays, no temporary file */
    tsl__out *o;
    cr_assert_eq(tsl__out_open(path, "plan", &o), TSL_OK, "%s", tsl_last_error());
    fputs("half", tsl__out_stream(o));
    fflush(tsl__out_stream(o));
    th_dir_names(dir, names, sizeof names);
    cr_assert(strstr(names, "out.json.tmp."), "the temporary file is in the folder: %s", names);
    char *s = slurp(path);
    cr_assert_str_eq(s, "old", "the destination is untouched while written");
    free(s);
    tsl__out_abort(o);
    s = slurp(path);
    cr_assert_str_eq(s, "old");
    free(s);
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "out.json ");
    /* a write error (the stream's error flag): reported, nothing replaced */
    cr_assert_eq(tsl__out_open(path, "plan", &o), TSL_OK);
    fputs("new", tsl__out_stream(o));
    fflush(tsl__out_stream(o));
    int fd = fileno(tsl__out_stream(o));
    int ro = open("/dev/null", O_RDONLY);
    dup2(ro, fd); /* every later write fails (EBADF) */
    close(ro);
    fputs("more", tsl__out_stream(o));
    cr_assert_eq(tsl__out_commit(o), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), path) && strstr(tsl_last_error(), "cannot write plan") &&
                  strstr(tsl_last_error(), "left as it was"),
              "%s", tsl_last_error());
    s = slurp(path);
    cr_assert_str_eq(s, "old");
    free(s);
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "out.json ");
    /* committed: the new bytes, the old file's mode */
    cr_assert_eq(tsl__out_open(path, "plan", &o), TSL_OK);
    fputs("new", tsl__out_stream(o));
    cr_assert_eq(tsl__out_commit(o), TSL_OK, "%s", tsl_last_error());
    s = slurp(path);
    cr_assert_str_eq(s, "new");
    free(s);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0640);
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "out.json ");
}

Test(io_files, special_outputs, .init = make_dir, .fini = remove_dir, .timeout = 20) {
    tsl__out *o;
    /* /dev/null: written directly */
    cr_assert_eq(tsl__out_open("/dev/null", "trace", &o), TSL_OK, "%s", tsl_last_error());
    fputs("x", tsl__out_stream(o));
    cr_assert_eq(tsl__out_commit(o), TSL_OK, "%s", tsl_last_error());
    /* /dev/full: the full disk, reported */
    cr_assert_eq(tsl__out_open("/dev/full", "trace", &o), TSL_OK, "%s", tsl_last_error());
    fputs("x", tsl__out_stream(o));
    cr_assert_eq(tsl__out_commit(o), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "No space left"), "%s", tsl_last_error());
    /* a FIFO no process reads: refused at once, not waited on */
    char fifo[200];
    snprintf(fifo, sizeof fifo, "%s/out.fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(tsl__out_open(fifo, "plan", &o), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "a FIFO that no process reads"), "%s", tsl_last_error());
    /* a folder, a missing folder */
    cr_assert_eq(tsl__out_open(dir, "plan", &o), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "a folder"), "%s", tsl_last_error());
    char path[220];
    snprintf(path, sizeof path, "%s/no/such/x.json", dir);
    cr_assert_eq(tsl__out_probe(path, "plan"), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "No such file"), "%s", tsl_last_error());
    /* a symbolic link: the file it points to is replaced, the link kept */
    char target[200], link[200];
    snprintf(target, sizeof target, "%s/target.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    write_file(target, "old");
    cr_assert_eq(symlink(target, link), 0);
    cr_assert_eq(tsl__out_open(link, "plan", &o), TSL_OK);
    fputs("new", tsl__out_stream(o));
    cr_assert_eq(tsl__out_commit(o), TSL_OK, "%s", tsl_last_error());
    struct stat sb;
    cr_assert_eq(lstat(link, &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode));
    char *s = slurp(target);
    cr_assert_str_eq(s, "new");
    free(s);
}

Test(io_files, probe_and_pending_removal_leave_nothing, .init = make_dir, .fini = remove_dir) {
    char path[200], names[512];
    snprintf(path, sizeof path, "%s/x.json", dir);
    cr_assert_eq(tsl__out_probe(path, "plan"), TSL_OK, "%s", tsl_last_error());
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "", "the probe left: %s", names);
    /* what a signal handler does: every open temporary file removed */
    tsl__out *o;
    cr_assert_eq(tsl__out_open(path, "plan", &o), TSL_OK);
    fputs("partial", tsl__out_stream(o));
    fflush(tsl__out_stream(o));
    tsl__out_remove_pending();
    th_dir_names(dir, names, sizeof names);
    cr_assert_str_eq(names, "", "left behind: %s", names);
    tsl__out_abort(o);
}
