/*
 * test_daemon_ms.c - the daemon's Memory Scheduler (src/daemon/ms.c), with
 * no socket: admission, plans made together and sent as memory allows,
 * regions acknowledged at boundaries, the queue, departures, drift.
 *
 * The invariant checked after every step: the regions in force (each job
 * counted at the larger of its region and a plan it was sent and has not
 * acknowledged) never sum past the device's capacity.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/ms.h"
#include "helpers.h"
#include "random_workload.h"
#include "tensile/verify.h"

/* A library-owned copy of random workload `seed` named `name`. */
static tsl_workload *wl(uint64_t seed, const char *name) {
    rw_opts o = rw_opts_default();
    o.p_dag = 0;
    o.min_fwd = 6;
    tsl_workload *r = rw_generate(seed, &o, name);
    cr_assert(r);
    tsl_workload *w = tsl_workload_copy(r, NULL);
    cr_assert(w);
    rw_free(r);
    return w;
}

static size_t vanilla_footprint(const tsl_workload *w, const tsl_device_profile *dev) {
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = tsl_policy_find("vanilla");
    tsl_plan *p;
    tsl_plan_report rep;
    tsl_workload *ws[1] = {(tsl_workload *)w};
    cr_assert_eq(tsl_plan_jobs(ws, 1, dev, &po, &p, &rep), TSL_OK, "%s", tsl_last_error());
    size_t f = p->predicted_footprint;
    tsl_plan_free(p);
    tsl_plan_report_free(&rep);
    return f;
}

static void check_invariant(const tsl__ms *ms) {
    cr_assert_leq(tsl__ms_committed(ms), ms->capacity, "committed %zu > capacity %zu",
                  tsl__ms_committed(ms), ms->capacity);
}

/* Sends every plan that may go, and has every job acknowledge it at once
 * (its next boundary), until nothing moves. Returns the plans sent. */
static int settle(tsl__ms *ms) {
    int sent = 0;
    for (int moved = 1; moved;) {
        moved = 0;
        for (int i = 0; i < ms->n; i++) {
            tsl__djob *j = ms->jobs[i];
            if (!tsl__ms_sendable(ms, j)) continue;
            tsl__ms_sent(ms, j);
            check_invariant(ms);
            cr_assert_eq(j->state, TSL__DJ_RUNNING);
            cr_assert_eq(tsl__ms_acked(ms, j, j->seq), 1);
            check_invariant(ms);
            sent++;
            moved = 1;
        }
    }
    return sent;
}

Test(daemon_ms, jobs_admitted_queued_and_freed_in_order) {
    tsl_device_profile dev = rw_profile(7);
    tsl_workload *w[3] = {wl(11, "a"), wl(12, "b"), wl(13, "c")};
    size_t vf[3];
    for (int i = 0; i < 3; i++) vf[i] = vanilla_footprint(w[i], &dev);
    /* room for any two jobs' vanilla footprints, not for three */
    size_t cap = vf[0] + vf[1] + vf[2] - (vf[0] < vf[1] ? vf[0] : vf[1]) / 2;
    size_t big = vf[0] > vf[1] ? (vf[0] > vf[2] ? vf[0] : vf[2]) : (vf[1] > vf[2] ? vf[1] : vf[2]);
    size_t small = vf[0] < vf[1] ? (vf[0] < vf[2] ? vf[0] : vf[2]) : (vf[1] < vf[2] ? vf[1] : vf[2]);
    cap = big + (vf[0] + vf[1] + vf[2] - big - small) + small / 4;
    tsl__ms ms;
    tsl__ms_init(&ms, &dev, cap, tsl_policy_find("vanilla")); /* footprints known in advance */
    tsl__djob *j[3];
    for (int i = 0; i < 3; i++) {
        char name[8] = {(char)('a' + i), 0};
        cr_assert_eq(tsl__ms_submit(&ms, name, "m", 16, 10, 1.0, w[i], (double)i, &j[i]), TSL_OK);
        cr_assert_eq(j[i]->state, TSL__DJ_QUEUED);
        cr_assert_eq(j[i]->id, i + 1);
    }
    /* two are admitted, the third waits with a reason naming the bytes */
    int admitted = 0;
    while (tsl__ms_admit(&ms, 10.0) == 1) admitted++;
    cr_assert_eq(admitted, 2, "admitted %d", admitted);
    cr_assert_eq(j[2]->state, TSL__DJ_QUEUED);
    cr_assert(strstr(j[2]->reason, "starts when a job ends"), "%s", j[2]->reason);
    cr_assert_gt(j[2]->needed, cap);
    cr_assert_eq(settle(&ms), 2);
    cr_assert_eq(j[0]->region, vf[0]);
    cr_assert_eq(j[1]->region, vf[1]);
    /* the first ends: its memory frees; the third is admitted and runs */
    tsl__ms_end(&ms, j[0], TSL__DJ_DONE, NULL);
    cr_assert_eq(j[0]->region, 0u);
    cr_assert_eq(tsl__ms_admit(&ms, 20.0), 1);
    cr_assert_eq(j[2]->state, TSL__DJ_ADMITTED);
    settle(&ms);
    cr_assert_eq(j[2]->state, TSL__DJ_RUNNING);
    cr_assert_eq(j[2]->region, vf[2]);
    cr_assert_eq(tsl__ms_active(&ms), 2);
    tsl__ms_free(&ms);
}

/* No admission control (the comparison's vanilla daemon): the same three
 * jobs, the third does not fit beside the two running and fails at once
 * with out of memory, while the first two run on. */
Test(daemon_ms, without_admission_control_a_job_that_does_not_fit_fails) {
    tsl_device_profile dev = rw_profile(7);
    tsl_workload *w[3] = {wl(11, "a"), wl(12, "b"), wl(13, "c")};
    size_t vf[3];
    for (int i = 0; i < 3; i++) vf[i] = vanilla_footprint(w[i], &dev);
    size_t cap = vf[0] + vf[1] + vf[2] / 2;
    tsl__ms ms;
    tsl__ms_init(&ms, &dev, cap, tsl_policy_find("vanilla"));
    ms.no_queue = 1;
    tsl__djob *j[3];
    for (int i = 0; i < 3; i++) {
        char name[8] = {(char)('a' + i), 0};
        cr_assert_eq(tsl__ms_submit(&ms, name, "m", 16, 10, 1.0, w[i], (double)i, &j[i]), TSL_OK);
    }
    cr_assert_eq(tsl__ms_admit(&ms, 10.0), 1);
    cr_assert_eq(tsl__ms_admit(&ms, 10.0), 1);
    cr_assert_eq(tsl__ms_admit(&ms, 10.0), -1);
    cr_assert_eq(j[2]->state, TSL__DJ_FAILED);
    cr_assert(strstr(j[2]->reason, "out of memory") && strstr(j[2]->reason, "no admission control"),
              "%s", j[2]->reason);
    cr_assert_eq(tsl__ms_admit(&ms, 10.0), 0, "the queue is empty");
    cr_assert_eq(settle(&ms), 2);
    cr_assert_eq(j[0]->state, TSL__DJ_RUNNING);
    cr_assert_eq(j[1]->state, TSL__DJ_RUNNING);
    tsl__ms_free(&ms);
}

Test(daemon_ms, a_job_too_large_even_alone_fails_with_figures) {
    tsl_device_profile dev = rw_profile(3);
    tsl_workload *w = wl(21, "huge");
    size_t vf = vanilla_footprint(w, &dev);
    tsl__ms ms;
    tsl__ms_init(&ms, &dev, vf / 8, tsl_policy_find("vanilla"));
    tsl__djob *j;
    cr_assert_eq(tsl__ms_submit(&ms, "huge", "m", 1, 1, 1.0, w, 0, &j), TSL_OK);
    cr_assert_eq(tsl__ms_admit(&ms, 0), -1);
    cr_assert_eq(j->state, TSL__DJ_FAILED);
    cr_assert(strstr(j->reason, "cannot fit the device even alone"), "%s", j->reason);
    tsl__ms_free(&ms);
}

/* TENSILE jobs: a second arrival makes the first shrink (its new plan is
 * sent at once), the newcomer's first plan goes only when the memory is
 * there; every plan sent verifies against its share of the channels. */
Test(daemon_ms, a_newcomer_waits_for_the_others_to_shrink) {
    tsl_device_profile dev = rw_profile(5);
    tsl_workload *a = wl(31, "a"), *b = wl(32, "b");
    size_t va = vanilla_footprint(a, &dev), vb = vanilla_footprint(b, &dev);
    tsl__ms ms;
    tsl__ms_init(&ms, &dev, va + vb, NULL);
    tsl__djob *ja, *jb;
    cr_assert_eq(tsl__ms_submit(&ms, "a", "m", 1, 1, 1.0, a, 0, &ja), TSL_OK);
    cr_assert_eq(tsl__ms_admit(&ms, 0), 1);
    cr_assert(tsl__ms_sendable(&ms, ja));
    tsl__ms_sent(&ms, ja);
    cr_assert_eq(ja->share, 1.0);
    cr_assert(tsl__ms_acked(&ms, ja, ja->seq));
    cr_assert_eq(tsl__ms_acked(&ms, ja, ja->seq), 0, "a repeated acknowledgement is ignored");
    size_t ra = ja->region;
    cr_assert_gt(ra, 0u);
    cr_assert_eq(tsl__ms_submit(&ms, "b", "m", 1, 1, 1.0, b, 1, &jb), TSL_OK);
    cr_assert_eq(tsl__ms_admit(&ms, 1), 1);
    cr_assert_eq(ja->share, 0.5);
    cr_assert(ja->to_send && jb->to_send);
    for (int k = 0; k < 2; k++) {
        tsl__djob *x = k ? jb : ja;
        tsl_device_profile d = tsl_profile_channel_share(&dev, x->share);
        tsl_violation *v = NULL;
        int nv = 0;
        cr_assert_eq(tsl_plan_verify(x->plan_w, x->plan, &d, &v, &nv), TSL_OK,
                     "job %s's plan does not verify on its share", x->name);
        free(v);
    }
    /* the newcomer fits beside a's region in force, or must wait for it */
    size_t tb = jb->plan->predicted_footprint;
    int room = ms.capacity - ja->region >= tb;
    cr_assert_eq(tsl__ms_sendable(&ms, jb), room);
    settle(&ms);
    cr_assert_eq(jb->state, TSL__DJ_RUNNING);
    cr_assert_eq(ja->region + jb->region <= ms.capacity, 1);
    tsl__ms_free(&ms);
}

Test(daemon_ms, drift_lasting_patience_reports_calls_for_a_replan) {
    tsl_device_profile dev = rw_profile(9);
    tsl_workload *w = wl(41, "d");
    tsl__ms ms;
    tsl__ms_init(&ms, &dev, vanilla_footprint(w, &dev) * 2, NULL);
    tsl__djob *j;
    cr_assert_eq(tsl__ms_submit(&ms, "d", "m", 1, 1, 1.0, w, 0, &j), TSL_OK);
    cr_assert_eq(tsl__ms_admit(&ms, 0), 1);
    settle(&ms);
    int32_t n = j->w->n_ops;
    double *us = malloc(sizeof *us * (size_t)n);
    for (int32_t i = 0; i < n; i++) us[i] = 2 * (j->w->ops[i].end_us - j->w->ops[i].start_us);
    cr_assert_eq(tsl__ms_report(&ms, j, us, n), 0);
    cr_assert_eq(tsl__ms_report(&ms, j, us, n), 0);
    cr_assert_eq(tsl__ms_report(&ms, j, us, n), 1, "third report above the threshold");
    cr_assert_eq(tsl__ms_replan(&ms, "drift"), TSL_OK, "%s", tsl_last_error());
    cr_assert(j->to_send);
    cr_assert_eq(j->replans, 1);
    cr_assert_eq(tsl__ms_report(&ms, j, us, n), 0, "the new plan is the new base");
    cr_assert_eq(tsl__ms_report(&ms, j, us, n - 1), -1);
    cr_assert(strstr(tsl_last_error(), "reported"), "%s", tsl_last_error());
    us[0] = -1;
    cr_assert_eq(tsl__ms_report(&ms, j, us, n), -1);
    free(us);
    tsl__ms_free(&ms);
}

/* Random arrivals, boundaries and departures of TENSILE jobs on a small
 * device: the invariant holds at every step, and every region is the
 * footprint of a plan the job acknowledged. */
Test(daemon_ms, random_lives_never_overcommit) {
    for (uint64_t seed = 1; seed <= 6; seed++) {
        tsl_device_profile dev = rw_profile(seed);
        uint64_t r = seed * 7919;
        size_t cap = 0;
        tsl_workload *pool[6];
        for (int i = 0; i < 6; i++) {
            char name[8] = {'j', (char)('0' + i), 0};
            pool[i] = wl(seed * 100 + (uint64_t)i, name);
            cap += vanilla_footprint(pool[i], &dev) / 3;
        }
        tsl__ms ms;
        tsl__ms_init(&ms, &dev, cap, NULL);
        int submitted = 0;
        for (int step = 0; step < 40; step++) {
            double u = th_uniform(&r, 0, 1);
            if (u < 0.25 && submitted < 6) {
                tsl__djob *j;
                char name[8] = {'j', (char)('0' + submitted), 0};
                cr_assert_eq(tsl__ms_submit(&ms, name, "m", 1, 1, 1.0, pool[submitted], step, &j),
                             TSL_OK);
                submitted++;
                while (tsl__ms_admit(&ms, step) == 1) {
                }
            } else if (u < 0.4 && ms.n > 0) {
                tsl__djob *j = ms.jobs[(int)th_uniform(&r, 0, ms.n - 0.001)];
                if (j->state == TSL__DJ_RUNNING) {
                    tsl__ms_end(&ms, j, TSL__DJ_DONE, NULL);
                    cr_assert_neq(tsl__ms_replan(&ms, "drift"), TSL_ERR_OOM);
                    while (tsl__ms_admit(&ms, step) == 1) {
                    }
                }
            } else {
                /* one job reaches a boundary: sends what may go, acknowledges */
                for (int i = 0; i < ms.n; i++) {
                    tsl__djob *j = ms.jobs[i];
                    if (tsl__ms_sendable(&ms, j)) tsl__ms_sent(&ms, j);
                    check_invariant(&ms);
                    if (j->sent_seq > j->acked_seq && th_uniform(&r, 0, 1) < 0.5) {
                        cr_assert(tsl__ms_acked(&ms, j, j->sent_seq));
                        cr_assert_eq(j->region, j->sent_target);
                    }
                    check_invariant(&ms);
                }
            }
            check_invariant(&ms);
        }
        int ran = 0;
        for (int i = 0; i < ms.n; i++) ran += ms.jobs[i]->acked_seq > 0;
        cr_assert_gt(ran, 1, "seed %llu: only %d jobs ran", (unsigned long long)seed, ran);
        for (int i = submitted; i < 6; i++) tsl_workload_free(pool[i]);
        tsl__ms_free(&ms);
    }
}
