/*
 * tests/tsan/runner.c - the test runner behind tests/tsan/criterion/
 * criterion.h (ThreadSanitizer build only; see that header for why).
 *
 * Runs every registered Test in registration order, each in a forked child,
 * and prints [PASS]/[FAIL]/[SKIP] lines and a synthesis like Criterion's.
 * Exit status 0 only if every test passed or was skipped. Command-line
 * arguments are accepted and ignored (ctest passes "--jobs 1"), except
 * --filter SUITE/NAME (exact) or --filter SUITE/ANY with ANY the literal
 * star character (every test of a suite).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#define MAX_TESTS 1024
#define SKIP_STATUS 77
#define EXPECT_FAILED_STATUS 78

static const th_cr_test *tests[MAX_TESTS];
static int n_tests;
static int expect_failures; /* in the child */

void th_cr_register(const th_cr_test *t) {
    if (n_tests == MAX_TESTS) {
        fprintf(stderr, "tsan runner: more than %d tests\n", MAX_TESTS);
        abort();
    }
    tests[n_tests++] = t;
}

void th_cr_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...) {
    fprintf(stderr, "[----] %s:%d: %s failed: %s\n", file, line, fatal ? "Assertion" : "Expectation",
            expr);
    va_list ap;
    va_start(ap, fmt);
    fputs("[----]  ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    if (fatal) {
        fflush(stdout);
        _exit(1);
    }
    expect_failures++;
}

void th_cr_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("[SKIP] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    _exit(SKIP_STATUS);
}

/* The child: init, the test, fini; exits with the test's status. A
 * timeout arms SIGALRM, which kills the child (reported as a timeout). */
static void run_child(const th_cr_test *t) {
    if (t->timeout > 0) {
        struct itimerval it = {0};
        it.it_value.tv_sec = (time_t)t->timeout;
        it.it_value.tv_usec = (suseconds_t)((t->timeout - (double)(time_t)t->timeout) * 1e6);
        setitimer(ITIMER_REAL, &it, NULL);
    }
    if (t->init) t->init();
    t->fn();
    if (t->fini) t->fini();
    fflush(stdout);
    fflush(stderr);
    exit(expect_failures ? EXPECT_FAILED_STATUS : 0); /* exit: TSan's and atexit handlers run */
}

static int selected(const th_cr_test *t, const char *filter) {
    if (!filter) return 1;
    size_t ls = strlen(t->suite);
    if (strncmp(filter, t->suite, ls) != 0 || filter[ls] != '/') return 0;
    return strcmp(filter + ls + 1, "*") == 0 || strcmp(filter + ls + 1, t->name) == 0;
}

int main(int argc, char **argv) {
    const char *filter = NULL;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) filter = argv[++i];
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < n_tests; i++) {
        const th_cr_test *t = tests[i];
        if (!selected(t, filter)) continue;
        if (t->disabled) {
            printf("[SKIP] %s::%s: disabled\n", t->suite, t->name);
            skipped++;
            continue;
        }
        printf("[RUN ] %s::%s\n", t->suite, t->name);
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            perror("tsan runner: fork");
            return 2;
        }
        if (pid == 0) run_child(t);
        int ws = 0;
        while (waitpid(pid, &ws, 0) < 0) {
        }
        const char *why = NULL;
        char buf[96];
        int ok;
        if (WIFSIGNALED(ws)) {
            ok = t->signal != 0 && WTERMSIG(ws) == t->signal;
            if (!ok) {
                snprintf(buf, sizeof buf, "killed by signal %d (%s)%s", WTERMSIG(ws),
                         strsignal(WTERMSIG(ws)), WTERMSIG(ws) == SIGALRM ? ": timed out" : "");
                why = buf;
            }
        } else {
            int code = WEXITSTATUS(ws);
            if (code == SKIP_STATUS && !t->signal) {
                printf("[SKIP] %s::%s\n", t->suite, t->name);
                skipped++;
                continue;
            }
            ok = !t->signal && code == t->exit_code;
            if (!ok) {
                if (t->signal)
                    snprintf(buf, sizeof buf, "exited with %d, expected signal %d", code, t->signal);
                else
                    snprintf(buf, sizeof buf, "exited with %d, expected %d%s", code, t->exit_code,
                             code == 66 ? " (66: ThreadSanitizer reported)" : "");
                why = buf;
            }
        }
        if (ok) {
            printf("[PASS] %s::%s\n", t->suite, t->name);
            passed++;
        } else {
            printf("[FAIL] %s::%s: %s\n", t->suite, t->name, why);
            failed++;
        }
        fflush(stdout);
    }
    printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Skipped: %d\n",
           passed + failed, passed, failed, skipped);
    return failed ? 1 : 0;
}
