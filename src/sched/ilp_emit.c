/*
 * ilp_emit.c - a schedule of the integer-program policies (ilp_internal.h)
 * turned into plan events, candidate by candidate, stage by stage from
 * the one after its producer to its last access:
 *
 *   - a prefetch that has landed by the start of stage t makes the tensor
 *     resident there;
 *   - O[t]: SWAP_OUT triggered by op t-1 (the copy starts at stage t);
 *   - resident and not S[t]: RELEASE triggered by op t-1 (it waits for an
 *     offload still copying, which the model keeps resident until it ends);
 *   - P[t]: SWAP_IN triggered by op t-1, preceding the first op from its
 *     landing on that reads the tensor (the verifier's rule: a swap-in
 *     precedes an op reading its tensor; a recomputation reading it before
 *     that op finds it landed); a prefetch the tensor is dropped again
 *     before any use of is left out; one whose stay serves recomputations
 *     only (the schedule drops the tensor again before any op reads it)
 *     keeps it resident through the next op reading it - more memory than
 *     the schedule's, but a valid plan;
 *   - R[t] and not resident: RECOMPUTE preceding op t (several before one
 *     op run in tensor order, which the chain rows respect);
 *   - a use finding the tensor absent is an inconsistent schedule.
 * Implicit frees (activity analysis) end the last residency. An op's chosen
 * algorithm other than its default becomes the plan's choice
 * (tsl_plan_set_algo).
 */
#include <stdlib.h>

#include "sched/ilp_internal.h"

#define AT(J, t, k) ((size_t)(t) * (size_t)(J)->nc + (size_t)(k))

/* 1 if stage t uses candidate k: op t reads it, or a recomputation before
 * op t re-runs a producer that reads it. */
static int used_at(const tsl__ilp_job *J, const tsl__ilp_sched *s, int32_t t, int32_t k) {
    if (J->reads[AT(J, t, k)]) return 1;
    int32_t x = J->c[k].tensor;
    for (int32_t y = 0; y < J->nc; y++) {
        if (!s->R[AT(J, t, y)]) continue;
        const tsl_wl_op *o = &J->w->ops[J->c[y].q];
        for (int i = 0; i < o->n_in; i++)
            if (o->in[i] == x) return 1;
    }
    return 0;
}

/* The op a prefetch of k started at t precedes: the first op from its
 * landing on that reads k; -1 if the schedule drops k again before any use.
 * *hold: 1 if the schedule drops k before that op (the stay serves
 * recomputations only), 0 otherwise. */
static int32_t prefetch_use(const tsl__ilp_job *J, const tsl__ilp_sched *s, int32_t t,
                            int32_t k, int *hold) {
    int32_t land = J->sf_in[AT(J, t, k)];
    int used = 0;
    *hold = 0;
    for (int32_t u = land; u >= 0 && u <= J->c[k].last; u++) {
        if (!s->S[AT(J, u, k)]) {
            if (!used) return -1;
            *hold = 1;
        }
        if (J->reads[AT(J, u, k)]) return u;
        used |= used_at(J, s, u, k);
    }
    return -1; /* not reached where used: the last access reads k */
}

static tsl_status add(tsl_plan *p, tsl_event_type ty, int32_t x, int32_t trig, int32_t pre) {
    return tsl_plan_add(p, (tsl_event){ty, x, trig, 0.0, pre});
}

tsl_status tsl__ilp_emit(const tsl__ilp_job *J, const tsl__ilp_sched *s, tsl_plan *p) {
    tsl_status st = TSL_OK;
    for (int32_t t = 0; t < J->n && st == TSL_OK; t++) /* the algorithms chosen */
        if (s->algo[t]) st = tsl_plan_set_algo(p, t, s->algo[t]);
    for (int32_t k = 0; k < J->nc && st == TSL_OK; k++) {
        const tsl__ilp_cand *c = &J->c[k];
        int32_t x = c->tensor, land = -1, hold = -1; /* resident whatever S through hold */
        int res = 1, host = 0;
        for (int32_t t = c->q + 1; t <= c->last && st == TSL_OK; t++) {
            size_t i = AT(J, t, k);
            if (land == t) {
                res = 1;
                land = -1;
            }
            if (s->O[i] && res && land < 0) {
                st = add(p, TSL_EV_SWAP_OUT, x, t - 1, -1);
                host = J->sf_out[i];
            }
            if (st == TSL_OK && res && !s->S[i] && t > hold) {
                st = add(p, TSL_EV_RELEASE, x, t - 1, -1);
                res = 0;
            }
            if (st == TSL_OK && s->P[i] && !res && land < 0 && host > 0 && host <= t) {
                int held;
                int32_t u = prefetch_use(J, s, t, k, &held);
                if (u >= 0) {
                    st = add(p, TSL_EV_SWAP_IN, x, t - 1, u);
                    land = J->sf_in[i];
                    if (held) hold = u;
                }
            }
            if (st == TSL_OK && s->R[i] && !res && land < 0) {
                st = add(p, TSL_EV_RECOMPUTE, x, -1, t);
                res = 1;
            }
            if (st == TSL_OK && !res && used_at(J, s, t, k))
                st = tsl_fail(TSL_ERR_INTERNAL,
                              "ilp: job '%s': the schedule leaves tensor '%s' absent where op "
                              "'%s' (stage %d) uses it",
                              J->w->job, J->w->tensors[x].name, J->w->ops[t].name, (int)t);
        }
    }
    return st;
}
