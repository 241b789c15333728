/*
 * milp.c - a mixed-integer linear program and its solution by CBC (milp.h).
 *
 * The program keeps its own arrays: columns (kind, bounds, objective) and
 * rows in compressed sparse rows. A solve turns them into compressed
 * sparse columns for Cbc_loadProblem in a fresh CBC model, sets CBC's
 * parameters (log level, wall-clock time limit, nodes, threads), runs
 * Cbc_solve and reads back the status, the objective, the proven bound and
 * the values. Infinite bounds are CBC's COIN_DBL_MAX (DBL_MAX).
 *
 * CBC runs in a child process (fork), which sends its answer back through
 * a pipe: CBC 2.10 does not always honour its time limit (its
 * preprocessing and the root LP run to their end: a 1 s limit took 6 s on
 * inception3's Checkmate program), and it crashes at times when the limit
 * stops it (CglPreProcess::postProcess, a segmentation fault that killed
 * `tensile bench paper`). The parent waits at most the limit plus a grace
 * (TSL__MILP_GRACE), kills the child then, and takes a kill or a crash as
 * "no solution" (hit_limit, crashed). Solves are serialized by one
 * process-wide lock: a child forked by one thread would hold the write end
 * of another solve's pipe open, and that solve would not see its answer end.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <coin/Cbc_C_Interface.h>

#include "core/assert.h"
#include "core/grow.h"
#include "sched/milp.h"

/* One solve (its child process and pipe) at a time in the process. */
static pthread_mutex_t solve_mu = PTHREAD_MUTEX_INITIALIZER;

struct tsl__milp {
    /* columns */
    uint8_t *kind;
    double *lb, *ub, *obj;
    int64_t n_cols, cap_cols, cap_lb, cap_ub, cap_obj;
    /* rows: terms of row r are [start[r], start[r + 1]) of idx/val */
    int64_t *start;        /* n_rows + 1 */
    int *idx;
    double *val;
    char *sense;
    double *rhs;
    int64_t n_rows, cap_start, cap_sense, cap_rhs;
    int64_t n_nz, cap_idx, cap_val;
    int failed;            /* a growth failed: the program is incomplete */
};


const char *tsl__milp_status_name(tsl__milp_status s) {
    switch (s) {
    case TSL__MILP_OPTIMAL: return "optimal";
    case TSL__MILP_FEASIBLE: return "feasible";
    case TSL__MILP_INFEASIBLE: return "infeasible";
    case TSL__MILP_NO_SOLUTION: return "no solution";
    }
    return "unknown";
}

tsl__milp *tsl__milp_new(void) {
    tsl__milp *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->start = malloc(sizeof *m->start);
    if (!m->start) {
        free(m);
        return NULL;
    }
    m->cap_start = 1;
    m->start[0] = 0;
    return m;
}

void tsl__milp_free(tsl__milp *m) {
    if (!m) return;
    free(m->kind);
    free(m->lb);
    free(m->ub);
    free(m->obj);
    free(m->start);
    free(m->idx);
    free(m->val);
    free(m->sense);
    free(m->rhs);
    free(m);
}

int tsl__milp_col(tsl__milp *m, tsl__milp_kind kind, double lb, double ub, double obj) {
    TSL_ASSERT(m && (unsigned)kind <= TSL__MILP_BINARY);
    if (m->failed || m->n_cols >= INT32_MAX) {
        m->failed = 1;
        return -1;
    }
    int64_t n = m->n_cols, ck = m->cap_cols;
    if (tsl__grow((void **)&m->kind, n, &ck, sizeof *m->kind) ||
        tsl__grow((void **)&m->lb, n, &m->cap_lb, sizeof *m->lb) ||
        tsl__grow((void **)&m->ub, n, &m->cap_ub, sizeof *m->ub) ||
        tsl__grow((void **)&m->obj, n, &m->cap_obj, sizeof *m->obj)) {
        m->cap_cols = ck;
        m->failed = 1;
        return -1;
    }
    m->cap_cols = ck;
    if (kind == TSL__MILP_BINARY) {
        lb = fmax(lb, 0.0);
        ub = fmin(ub, 1.0);
    }
    m->kind[n] = (uint8_t)kind;
    m->lb[n] = lb;
    m->ub[n] = ub;
    m->obj[n] = obj;
    m->n_cols = n + 1;
    return (int)n;
}

int tsl__milp_row(tsl__milp *m, int n, const int *cols, const double *coef, char sense,
                  double rhs) {
    TSL_ASSERT(m && n >= 0 && (n == 0 || (cols && coef)));
    TSL_ASSERT(sense == 'L' || sense == 'G' || sense == 'E');
    if (m->failed || m->n_rows >= INT32_MAX - 1) {
        m->failed = 1;
        return -1;
    }
    int64_t r = m->n_rows;
    if (tsl__grow((void **)&m->start, r + 1, &m->cap_start, sizeof *m->start) ||
        tsl__grow((void **)&m->sense, r, &m->cap_sense, sizeof *m->sense) ||
        tsl__grow((void **)&m->rhs, r, &m->cap_rhs, sizeof *m->rhs)) {
        m->failed = 1;
        return -1;
    }
    for (int k = 0; k < n; k++) {
        TSL_ASSERT(cols[k] >= 0 && cols[k] < m->n_cols);
        if (tsl__grow((void **)&m->idx, m->n_nz, &m->cap_idx, sizeof *m->idx) ||
            tsl__grow((void **)&m->val, m->n_nz, &m->cap_val, sizeof *m->val)) {
            m->n_nz = m->start[r]; /* drop the half-made row */
            m->failed = 1;
            return -1;
        }
        m->idx[m->n_nz] = cols[k];
        m->val[m->n_nz] = coef[k];
        m->n_nz++;
    }
    m->sense[r] = sense;
    m->rhs[r] = rhs;
    m->start[r + 1] = m->n_nz;
    m->n_rows = r + 1;
    return (int)r;
}

void tsl__milp_set_bounds(tsl__milp *m, int c, double lb, double ub) {
    TSL_ASSERT(m && c >= 0 && c < m->n_cols);
    m->lb[c] = lb;
    m->ub[c] = ub;
}

void tsl__milp_set_obj(tsl__milp *m, int c, double obj) {
    TSL_ASSERT(m && c >= 0 && c < m->n_cols);
    m->obj[c] = obj;
}

double tsl__milp_lb(const tsl__milp *m, int c) {
    TSL_ASSERT(c >= 0 && c < m->n_cols);
    return m->lb[c];
}
double tsl__milp_ub(const tsl__milp *m, int c) {
    TSL_ASSERT(c >= 0 && c < m->n_cols);
    return m->ub[c];
}
tsl__milp_kind tsl__milp_kind_of(const tsl__milp *m, int c) {
    TSL_ASSERT(c >= 0 && c < m->n_cols);
    return (tsl__milp_kind)m->kind[c];
}
double tsl__milp_obj(const tsl__milp *m, int c) {
    TSL_ASSERT(c >= 0 && c < m->n_cols);
    return m->obj[c];
}
int tsl__milp_n_cols(const tsl__milp *m) { return (int)m->n_cols; }
int tsl__milp_n_rows(const tsl__milp *m) { return (int)m->n_rows; }
size_t tsl__milp_n_nonzeros(const tsl__milp *m) { return (size_t)m->n_nz; }

void tsl__milp_row_terms(const tsl__milp *m, int r, int *n, const int **cols,
                         const double **coef, char *sense, double *rhs) {
    TSL_ASSERT(r >= 0 && r < m->n_rows);
    *n = (int)(m->start[r + 1] - m->start[r]);
    *cols = m->idx + m->start[r];
    *coef = m->val + m->start[r];
    *sense = m->sense[r];
    *rhs = m->rhs[r];
}

tsl__milp_opts tsl__milp_opts_default(void) {
    tsl__milp_opts o = {INFINITY, 0, 1, 0, 0, NULL, NULL};
    return o;
}

void tsl__milp_result_free(tsl__milp_result *r) {
    if (!r) return;
    free(r->x);
    memset(r, 0, sizeof *r);
}

double tsl__milp_violation(const tsl__milp *m, const double *x, int relax) {
    double worst = 0;
    for (int64_t c = 0; c < m->n_cols; c++) {
        worst = fmax(worst, m->lb[c] - x[c]);
        worst = fmax(worst, x[c] - m->ub[c]);
        if (!relax && m->kind[c] != TSL__MILP_CONTINUOUS) worst = fmax(worst, fabs(x[c] - round(x[c])));
    }
    for (int64_t r = 0; r < m->n_rows; r++) {
        double s = 0;
        for (int64_t k = m->start[r]; k < m->start[r + 1]; k++) s += m->val[k] * x[m->idx[k]];
        double d = m->sense[r] == 'L' ? s - m->rhs[r]
                   : m->sense[r] == 'G' ? m->rhs[r] - s
                                        : fabs(s - m->rhs[r]);
        worst = fmax(worst, d);
    }
    return worst;
}

double tsl__milp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A bound for CBC: +-infinity as +-COIN_DBL_MAX. */
static double cbc_bound(double b) {
    if (b == INFINITY) return DBL_MAX;
    if (b == -INFINITY) return -DBL_MAX;
    return b;
}

/* The program without columns: optimal (objective 0) when every row holds
 * at 0, else infeasible. */
static void solve_empty(const tsl__milp *m, tsl__milp_result *r) {
    r->status = tsl__milp_violation(m, NULL, 1) > 1e-9 ? TSL__MILP_INFEASIBLE : TSL__MILP_OPTIMAL;
    r->objective = r->status == TSL__MILP_OPTIMAL ? 0.0 : NAN;
    r->bound = r->objective;
    r->gap = r->status == TSL__MILP_OPTIMAL ? 0.0 : NAN;
}

/* Loads m into the fresh CBC model `cbc` (columns relaxed if relax).
 * Returns 0, or -1 if out of host memory. */
static int load(const tsl__milp *m, Cbc_Model *cbc, int relax) {
    int nc = (int)m->n_cols, nr = (int)m->n_rows;
    CoinBigIndex *cs = calloc((size_t)nc + 1, sizeof *cs);
    int *ri = malloc(((size_t)m->n_nz + 1) * sizeof *ri);
    double *rv = malloc(((size_t)m->n_nz + 1) * sizeof *rv);
    double *cl = malloc((size_t)nc * sizeof *cl), *cu = malloc((size_t)nc * sizeof *cu);
    double *rl = malloc(((size_t)nr + 1) * sizeof *rl), *ru = malloc(((size_t)nr + 1) * sizeof *ru);
    CoinBigIndex *fill = malloc(((size_t)nc + 1) * sizeof *fill);
    int ok = cs && ri && rv && cl && cu && rl && ru && fill;
    if (ok) {
        for (int64_t k = 0; k < m->n_nz; k++) cs[m->idx[k] + 1]++;
        for (int c = 0; c < nc; c++) cs[c + 1] += cs[c];
        memcpy(fill, cs, ((size_t)nc + 1) * sizeof *fill);
        for (int r = 0; r < nr; r++)
            for (int64_t k = m->start[r]; k < m->start[r + 1]; k++) {
                CoinBigIndex at = fill[m->idx[k]]++;
                ri[at] = r;
                rv[at] = m->val[k];
            }
        for (int c = 0; c < nc; c++) {
            cl[c] = cbc_bound(m->lb[c]);
            cu[c] = cbc_bound(m->ub[c]);
        }
        for (int r = 0; r < nr; r++) {
            rl[r] = m->sense[r] == 'L' ? -DBL_MAX : m->rhs[r];
            ru[r] = m->sense[r] == 'G' ? DBL_MAX : m->rhs[r];
        }
        Cbc_loadProblem(cbc, nc, nr, cs, ri, rv, cl, cu, m->obj, rl, ru);
        Cbc_setObjSense(cbc, 1.0);
        if (!relax)
            for (int c = 0; c < nc; c++)
                if (m->kind[c] != TSL__MILP_CONTINUOUS) Cbc_setInteger(cbc, c);
    }
    free(cs);
    free(ri);
    free(rv);
    free(cl);
    free(cu);
    free(rl);
    free(ru);
    free(fill);
    return ok ? 0 : -1;
}

/* Reads CBC's answer into r (the model was solved; relax as solved). */
static tsl_status read_back(const tsl__milp *m, Cbc_Model *cbc, int relax, int any_int,
                            tsl__milp_result *r) {
    const double *sol = NULL;
    int optimal = Cbc_isProvenOptimal(cbc), infeasible = Cbc_isProvenInfeasible(cbc);
    int secondary = Cbc_secondaryStatus(cbc);
    /* stopped on nodes or time; or on limits (status 1) with another reason given: CBC
     * 2.10 reports some stops at its time limit so */
    r->hit_limit = secondary == 3 || secondary == 4 || Cbc_status(cbc) == 1;
    r->nodes = Cbc_getNodeCount(cbc);
    if (relax || !any_int) {
        if (optimal) sol = Cbc_getColSolution(cbc);
    } else {
        sol = Cbc_bestSolution(cbc);
        if (!sol && optimal) sol = Cbc_getColSolution(cbc);
    }
    if (infeasible && !sol) r->status = TSL__MILP_INFEASIBLE;
    else if (!sol) r->status = TSL__MILP_NO_SOLUTION;
    else r->status = optimal ? TSL__MILP_OPTIMAL : TSL__MILP_FEASIBLE;
    if (!sol) {
        r->objective = r->bound = r->gap = NAN;
        return TSL_OK;
    }
    r->x = malloc(((size_t)m->n_cols + 1) * sizeof *r->x);
    if (!r->x) return tsl_fail(TSL_ERR_OOM, "milp: out of host memory for %d values", (int)m->n_cols);
    double obj = 0;
    for (int64_t c = 0; c < m->n_cols; c++) {
        double v = sol[c];
        if (!relax && m->kind[c] != TSL__MILP_CONTINUOUS) v = round(v);
        r->x[c] = v;
        obj += m->obj[c] * v;
    }
    r->objective = obj;
    if (r->status == TSL__MILP_OPTIMAL) {
        r->bound = obj;
        r->gap = 0;
    } else {
        double b = Cbc_getBestPossibleObjValue(cbc);
        r->bound = isfinite(b) && fabs(b) < 1e300 ? fmin(b, obj) : NAN;
        r->gap = isnan(r->bound) ? NAN : (obj - r->bound) / fmax(fabs(obj), 1e-9);
    }
    return TSL_OK;
}

/* What the child sends ahead of the values. */
typedef struct wire {
    int status, nodes, hit_limit, has_x;
    double objective, bound, gap;
} wire;

/* Writes n bytes of p to fd; 0 on success. */
static int write_all(int fd, const void *p, size_t n) {
    const char *b = p;
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The child: CBC on m with o, its answer (wire, then n_cols values) to fd.
 * Never returns. */
static void child_solve(const tsl__milp *m, const tsl__milp_opts *o, int any_int, int fd) {
    if (o->test_hook) o->test_hook();
    Cbc_Model *cbc = Cbc_newModel();
    if (!cbc || load(m, cbc, o->relax) != 0) _exit(2);
    char buf[32];
    Cbc_setLogLevel(cbc, o->log);
    Cbc_setParameter(cbc, "timeMode", "elapsed");
    if (isfinite(o->time_limit_s)) Cbc_setMaximumSeconds(cbc, o->time_limit_s);
    if (o->max_nodes > 0) Cbc_setMaximumNodes(cbc, o->max_nodes);
    snprintf(buf, sizeof buf, "%d", o->threads);
    if (o->threads > 1) Cbc_setParameter(cbc, "threads", buf);
    int *idx = o->start && !o->relax ? malloc((size_t)m->n_cols * sizeof *idx) : NULL;
    if (idx) {
        for (int c = 0; c < (int)m->n_cols; c++) idx[c] = c;
        Cbc_setMIPStartI(cbc, (int)m->n_cols, idx, o->start);
        free(idx);
    }
    Cbc_solve(cbc);
    tsl__milp_result r = {0};
    if (read_back(m, cbc, o->relax, any_int, &r) != TSL_OK) _exit(2);
    wire h = {(int)r.status, r.nodes, r.hit_limit, r.x != NULL, r.objective, r.bound, r.gap};
    fflush(stdout); /* CBC's log */
    if (write_all(fd, &h, sizeof h) != 0 ||
        (r.x && write_all(fd, r.x, (size_t)m->n_cols * sizeof *r.x) != 0))
        _exit(3);
    _exit(0); /* no exit handlers: the parent's state is the parent's */
}

/* Reads the child's answer from fd into buf (cap bytes) until its end or
 * the monotonic time deadline (INFINITY: none). Returns the bytes read, or
 * -1 if the deadline passed first. */
static ssize_t read_until(int fd, char *buf, size_t cap, double deadline) {
    size_t got = 0;
    for (;;) {
        int ms = -1;
        if (isfinite(deadline)) {
            double left = deadline - tsl__milp_now();
            if (left <= 0) return -1;
            ms = (int)fmin(ceil(left * 1000.0), 1e9);
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int k = poll(&pf, 1, ms);
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) continue; /* re-checks the deadline */
        if (k < 0) return (ssize_t)got;
        char sink[4096];
        char *to = got < cap ? buf + got : sink;
        size_t room = got < cap ? cap - got : sizeof sink;
        ssize_t n = read(fd, to, room);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return (ssize_t)got;
        if (got < cap) got += (size_t)n;
    }
}

tsl_status tsl__milp_solve(const tsl__milp *m, const tsl__milp_opts *o, tsl__milp_result *r) {
    TSL_ASSERT(m && r);
    memset(r, 0, sizeof *r);
    tsl__milp_opts def = tsl__milp_opts_default();
    if (!o) o = &def;
    if (!(o->time_limit_s > 0) || o->max_nodes < 0 || o->threads < 1 || o->threads > 1024)
        return tsl_fail(TSL_ERR_INVALID,
                        "milp: options: time_limit_s = %g must be > 0, max_nodes = %d >= 0, "
                        "threads = %d in [1, 1024]",
                        o->time_limit_s, o->max_nodes, o->threads);
    if (m->failed) return tsl_fail(TSL_ERR_OOM, "milp: out of host memory while building the program");
    for (int64_t c = 0; c < m->n_cols; c++)
        if (!(m->lb[c] <= m->ub[c]))
            return tsl_fail(TSL_ERR_INVALID, "milp: column %lld: bounds [%g, %g] are empty",
                            (long long)c, m->lb[c], m->ub[c]);
    r->n_cols = (int)m->n_cols;
    double t0 = tsl__milp_now();
    if (m->n_cols == 0) {
        solve_empty(m, r);
        r->seconds = tsl__milp_now() - t0;
        return TSL_OK;
    }
    int any_int = 0;
    for (int64_t c = 0; c < m->n_cols && !any_int; c++) any_int = m->kind[c] != TSL__MILP_CONTINUOUS;
    size_t cap = sizeof(wire) + (size_t)m->n_cols * sizeof(double);
    char *buf = malloc(cap);
    int fd[2] = {-1, -1};
    if (!buf) return tsl_fail(TSL_ERR_OOM, "milp: out of host memory for the solver's answer");
    pthread_mutex_lock(&solve_mu);
    if (pipe(fd) != 0) {
        pthread_mutex_unlock(&solve_mu);
        free(buf);
        return tsl_fail(TSL_ERR_IO, "milp: no pipe for the solver (%s)", strerror(errno));
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        child_solve(m, o, any_int, fd[1]);
    }
    close(fd[1]);
    if (pid < 0) {
        pthread_mutex_unlock(&solve_mu);
        close(fd[0]);
        free(buf);
        return tsl_fail(TSL_ERR_IO, "milp: cannot start the solver's process (%s)",
                        strerror(errno));
    }
    double lim = o->time_limit_s;
    double deadline = isfinite(lim) ? t0 + lim + TSL__MILP_GRACE(lim) : INFINITY;
    ssize_t got = read_until(fd[0], buf, cap, deadline);
    close(fd[0]);
    int killed = got < 0, ws = 0;
    if (killed) kill(pid, SIGKILL);
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    pthread_mutex_unlock(&solve_mu);
    tsl_status st = TSL_OK;
    wire h;
    int whole = !killed && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && (size_t)got >= sizeof h;
    if (whole) memcpy(&h, buf, sizeof h);
    if (whole && h.has_x && (size_t)got < cap) whole = 0;
    if (!killed && WIFEXITED(ws) && WEXITSTATUS(ws) == 2) {
        st = tsl_fail(TSL_ERR_OOM, "milp: out of host memory for a program of %d columns, %d rows",
                      (int)m->n_cols, (int)m->n_rows);
    } else if (!whole) { /* killed at the deadline, or crashed */
        r->status = TSL__MILP_NO_SOLUTION;
        r->objective = r->bound = r->gap = NAN;
        r->hit_limit = killed;
        r->crashed = !killed;
    } else {
        r->status = (tsl__milp_status)h.status;
        r->nodes = h.nodes;
        r->hit_limit = h.hit_limit;
        r->objective = h.objective;
        r->bound = h.bound;
        r->gap = h.gap;
        if (h.has_x) {
            r->x = malloc(((size_t)m->n_cols + 1) * sizeof *r->x);
            if (r->x) memcpy(r->x, buf + sizeof h, (size_t)m->n_cols * sizeof *r->x);
            else
                st = tsl_fail(TSL_ERR_OOM, "milp: out of host memory for %d values",
                              (int)m->n_cols);
        }
    }
    free(buf);
    r->seconds = tsl__milp_now() - t0;
    /* a solution not proven optimal at the limit: CBC 2.10 does not always say why it
     * stopped (status 0, no secondary status); a crash past the limit: CBC stopped by
     * it died in its postprocessing */
    if (st == TSL_OK && (r->status == TSL__MILP_FEASIBLE || r->crashed) &&
        r->seconds >= o->time_limit_s)
        r->hit_limit = 1;
    if (st != TSL_OK) tsl__milp_result_free(r);
    return st;
}
