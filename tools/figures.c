/* figures.c - see figures.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "figures.h"

int fig_make_folder(const char *cmd, const char *opt, const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return 0;
        fprintf(stderr, "tensile %s: %s: '%s' exists and is not a folder\n", cmd, opt, dir);
        return -1;
    }
    if (mkdir(dir, 0777) != 0) {
        fprintf(stderr, "tensile %s: %s: cannot make folder '%s': %s\n", cmd, opt, dir,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* bench/NAME under $TSL_SOURCE_DIR, else under the source tree
 * (TSL_BENCH_DIR); NULL if neither is readable. */
static const char *script_path(const char *name, char *buf, size_t n) {
    const char *src = getenv("TSL_SOURCE_DIR");
    if (src && *src) {
        snprintf(buf, n, "%s/bench/%s", src, name);
        if (access(buf, R_OK) == 0) return buf;
    }
    snprintf(buf, n, "%s/%s", TSL_BENCH_DIR, name);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

/* Runs argv[0] with argv, stdout and stderr to ours (stderr to /dev/null
 * with quiet); its exit status, or -1 if it could not run. */
static int run(char *const *argv, int quiet) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (quiet && !freopen("/dev/null", "w", stderr)) _exit(127);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int fig_run(const char *cmd, const char *name, const char *dir) {
    char script[4096];
    if (!script_path(name, script, sizeof script)) {
        fprintf(stderr, "tensile %s: figures not made: bench/%s not found (set TSL_SOURCE_DIR to "
                "the source tree)\n", cmd, name);
        return 1;
    }
    char *probe[] = {"python3", "-c", "import matplotlib", NULL};
    if (run(probe, 1) != 0) {
        fprintf(stderr, "tensile %s: figures not made: they need python3 with matplotlib "
                "(pip install matplotlib, or scripts/pydeps.sh matplotlib); then run: python3 %s "
                "%s\n", cmd, script, dir);
        return 1;
    }
    fprintf(stderr, "tensile %s: figures: python3 %s %s\n", cmd, script, dir);
    fflush(stderr);
    char *argv[] = {"python3", script, (char *)dir, NULL};
    if (run(argv, 0) != 0) {
        fprintf(stderr, "tensile %s: %s failed\n", cmd, script);
        return -1;
    }
    return 0;
}
