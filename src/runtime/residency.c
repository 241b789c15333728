/*
 * residency.c - where each tensor's value is: its device block (s->ptr[t],
 * NULL when absent), its host staging copy and whether that copy still holds
 * the current value, and the device memory the runtime accounts for.
 *
 * A tensor's value generation is bumped at every write (an op generating it,
 * the data load); a swap-out records the generation it copied, so the host
 * copy stays valid until the tensor is written again, and a later swap-out
 * of an unchanged tensor copies nothing (the paper's rule).
 *
 * Memory: `used` is the runtime's view of the allocator's load - the bytes
 * of resident tensors plus the raw blocks (kernels' workspaces, with a
 * recomputation's scratch) not freed yet.
 * In strict mode (a plan followed and opts.strict) no allocation or
 * reservation may take `used` past the limit, min(predicted peak, arena
 * capacity); as every device allocation goes through here (or is reserved
 * here first), the ledger's load never passes the limit either. Under a
 * plan's layout each block is allocated at its planned place
 * (placement.c), else by the online allocator.
 *
 * All functions run with rt->mu held (or single-threaded: the virtual
 * clock, attach, free).
 */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/runtime_internal.h"

tsl_status tsl__res_init(tsl__runtime *rt) {
    rt->res = calloc((size_t)rt->nt + 1, sizeof *rt->res);
    if (!rt->res) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for tensor states");
    for (int32_t t = 0; t < rt->nt; t++) {
        rt->res[t].in_x = -1;
        rt->res[t].readable = rt->s->ptr[t] != NULL;
    }
    return TSL_OK;
}

void tsl__res_free(tsl__runtime *rt) {
    if (!rt->res) return;
    for (int32_t t = 0; t < rt->nt; t++)
        if (rt->res[t].host) rt->b->iface->host_free(rt->b, rt->res[t].host);
    free(rt->res);
    rt->res = NULL;
}

static size_t bytes_of(const tsl__runtime *rt, int32_t t) {
    return tsl_graph_tensor(rt->g, t)->nbytes;
}

/* 1 if n more bytes would pass the strict limit. */
static int over_limit(const tsl__runtime *rt, size_t n) {
    return rt->cur && rt->o.strict && rt->used + n > rt->limit;
}

void tsl__rt_note_mem(tsl__runtime *rt) {
    tsl__log_mem(rt, rt->iter_base_us + tsl__rt_now(rt), rt->used);
}

/* Allocation failures are expected here (the caller waits or evicts), so
 * the allocator's message is dropped. Under a layout the block goes to its
 * planned place (placement.c): TSL_ERR_BUSY while the place is held; a
 * place refused otherwise (an injected fault) is left for the online
 * allocator, counted as displaced. */
static tsl_status alloc_block(tsl__runtime *rt, int32_t t, int32_t op, size_t n, int how, void **p) {
    tsl_status st = tsl__place_at(rt, t, op, n, how, p);
    if (st == TSL_ERR_BUSY) return st;
    int displaced = (how & TSL__A_ONLINE) || (st != TSL_OK && st != TSL_ERR_UNSUPPORTED);
    if (st != TSL_OK && rt->b->iface->alloc(rt->b, n, p) != TSL_OK) {
        tsl_clear_error();
        *p = NULL;
        return TSL_ERR_OOM;
    }
    tsl__place_allocated(rt, t, op, how, displaced);
    return TSL_OK;
}

tsl_status tsl__rt_try_alloc(tsl__runtime *rt, int32_t t, int how) {
    TSL_ASSERT(rt->s->ptr[t] == NULL);
    size_t n = bytes_of(rt, t);
    if (over_limit(rt, n)) return TSL_ERR_OOM;
    void *p = NULL;
    tsl_status st = alloc_block(rt, t, -1, n, how, &p);
    if (st != TSL_OK) return st;
    rt->s->ptr[t] = p;
    tsl__res *r = &rt->res[t];
    r->readable = 0;
    r->dying = 0;
    r->in_x = -1;
    rt->used += n;
    tsl__rt_note_mem(rt);
    return TSL_OK;
}

tsl_status tsl__rt_try_alloc_raw(tsl__runtime *rt, int32_t op, size_t n, int how, void **p) {
    *p = NULL;
    if (n == 0) return TSL_OK;
    if (over_limit(rt, n)) return TSL_ERR_OOM;
    tsl_status st = alloc_block(rt, -1, op, n, how, p);
    if (st != TSL_OK) return st;
    rt->used += n;
    tsl__rt_note_mem(rt);
    return TSL_OK;
}

void tsl__rt_free_raw(tsl__runtime *rt, void *p, size_t n) {
    if (!p) return;
    rt->b->iface->free(rt->b, p);
    TSL_ASSERT(rt->used >= n);
    rt->used -= n;
    tsl__rt_note_mem(rt);
    tsl__se_retry_wmem(rt);
    if (!rt->virtual_clock) pthread_cond_signal(&rt->cv); /* the compute thread */
}

double tsl__rt_event_us(tsl__runtime *rt, tsl_dev_event *ev) {
    double ms = 0.0;
    if (rt->b->iface->event_elapsed_ms(rt->b, rt->anchor, ev, &ms) != TSL_OK) {
        tsl_clear_error(); /* not completed: a bug of the caller */
        TSL_ASSERT(0);
    }
    return rt->anchor_us + ms * 1e3;
}

void tsl__rt_free_block(tsl__runtime *rt, int32_t t) {
    tsl__res *r = &rt->res[t];
    TSL_ASSERT(rt->s->ptr[t] != NULL);
    TSL_ASSERT(rt->virtual_clock || (r->in_x < 0 && r->out_n == 0));
    rt->b->iface->free(rt->b, rt->s->ptr[t]);
    rt->s->ptr[t] = NULL;
    r->readable = 0;
    r->dying = 0;
    r->in_x = -1; /* virtual clock: a copy still coming in lands nowhere */
    size_t n = bytes_of(rt, t);
    TSL_ASSERT(rt->used >= n);
    rt->used -= n;
    tsl__rt_note_mem(rt);
    tsl__se_retry_wmem(rt);
    if (!rt->virtual_clock) pthread_cond_signal(&rt->cv); /* the compute thread */
}

void tsl__rt_release_block(tsl__runtime *rt, int32_t t) {
    tsl__res *r = &rt->res[t];
    if (!rt->s->ptr[t]) return;
    if (!rt->virtual_clock && (r->in_x >= 0 || r->out_n > 0)) {
        r->dying = 1; /* the watcher frees it when the last copy ends */
        return;
    }
    tsl__rt_free_block(rt, t);
}

int tsl__rt_host_valid(const tsl__runtime *rt, int32_t t) {
    const tsl__res *r = &rt->res[t];
    return r->host && r->host_ok && r->host_gen == r->gen;
}

void *tsl__rt_host_buf(tsl__runtime *rt, int32_t t) {
    tsl__res *r = &rt->res[t];
    if (!r->host) r->host = rt->b->iface->host_alloc(rt->b, bytes_of(rt, t));
    return r->host;
}

void tsl__rt_clear_cold(tsl__runtime *rt) {
    for (int32_t t = 0; t < rt->nt; t++) rt->res[t].cold = 0;
    rt->any_cold = 0;
}

tsl_status tsl__rt_mark_cold(tsl__runtime *rt) {
    const tsl__rt_plan *pl = rt->cur;
    tsl__rt_clear_cold(rt);
    if (!pl) return TSL_OK;
    for (int32_t e = 0; e < pl->p->n_events; e++) {
        const tsl_event *ev = &pl->p->events[e];
        int32_t t = ev->tensor;
        if (ev->type != TSL_EV_RELEASE || !rt->s->ptr[t] ||
            !tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind))
            continue;
        int32_t k = rt->acc_start[t + 1];
        int32_t last = k > rt->acc_start[t] ? rt->acc_ops[k - 1] : -1; /* its last access */
        if (ev->trigger < last) continue; /* released within the iteration only */
        if (!tsl__rt_host_valid(rt, t)) {
            void *h = tsl__rt_host_buf(rt, t);
            if (!h) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for a copy of '%s'",
                                    tsl_graph_tensor(rt->g, t)->name);
            tsl_status st = tsl_backend_download(rt->b, h, rt->s->ptr[t],
                                                 tsl_graph_tensor(rt->g, t)->nbytes);
            if (st != TSL_OK) return st;
            rt->res[t].host_ok = 1;
            rt->res[t].host_gen = rt->res[t].gen;
        }
        rt->res[t].cold = 1;
        rt->any_cold = 1;
    }
    return TSL_OK;
}

int tsl__rt_drop_cold(tsl__runtime *rt) {
    if (!rt->any_cold) return 0; /* nothing cold: the common case, no scan */
    int32_t best = -1, best_nu = -1, n_cold = 0;
    for (int32_t t = 0; t < rt->nt; t++) {
        tsl__res *r = &rt->res[t];
        if (!r->cold) continue;
        if (!rt->s->ptr[t] || !tsl__rt_host_valid(rt, t)) {
            r->cold = 0;
            continue;
        }
        n_cold++;
        if (r->busy || r->in_x >= 0 || r->out_n > 0) continue;
        int32_t nu = tsl__rt_next_use(rt, t, rt->pos);
        if (nu > best_nu) {
            best = t;
            best_nu = nu;
        }
    }
    if (n_cold <= (best >= 0)) rt->any_cold = 0; /* none left after this one */
    if (best < 0) return 0;
    rt->res[best].cold = 0;
    tsl__rt_free_block(rt, best);
    return 1;
}

void *tsl__rt_persistent_host(tsl_session *s, tsl_tid t, int write) {
    tsl__runtime *rt = s->rt;
    if (!rt || t < 0 || t >= rt->nt) return NULL;
    void *h = NULL;
    pthread_mutex_lock(&rt->mu);
    tsl__res *r = &rt->res[t];
    if (s->ptr[t]) {
        if (write) r->gen++; /* the device's bytes change: the host copy is stale */
    } else if (tsl__rt_host_valid(rt, t)) {
        h = r->host;
    }
    pthread_mutex_unlock(&rt->mu);
    return h;
}
