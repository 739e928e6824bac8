/*
 * exec.c — the executor: replays a plan with the caller's kernels.
 *
 * Everything is decided in bp_exec_new, so a run only follows tables:
 *  - storages: each tensor's storage root (the plan's alias_of; in safe mode
 *    every tensor is its own) is ARENA (bound once at its planned offset in a
 *    plan-backed pool of exactly arena_bytes), POOL (allocated from the pool
 *    at run time through the worker's own pool handle: dynamic tensors, and
 *    everything in dynamic mode) or FIXED
 *    (own buffer for the executor's lifetime: inputs, weights, safe mode);
 *  - per op: its bp_exec_buf array, kernel, the POOL roots to allocate before
 *    it (its outputs' roots), the roots to free after it (sequential: the
 *    plan's FREE step, the last use) and the roots whose use count it drops
 *    (parallel: the last op to finish with a storage frees it);
 *  - for threads > 1: successors (data dependencies plus fences,
 *    plan/fences.c) and each op's count of unfinished predecessors.
 * Sequential replay walks the plan's order.  Parallel replay: a FIFO of
 * ready ops under one mutex; a worker that finishes an op decrements its
 * successors' counts (atomics), keeps the first that becomes ready for
 * itself (no queue round trip on chains) and queues the others.  Workers
 * are created once and park between runs; the calling thread is worker 0.
 * A kernel error sets a stop flag: no new op starts, running ones finish,
 * pool blocks are returned, and the run reports the op.
 */
#define _POSIX_C_SOURCE 200809L
#include "exec/exec_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

#define EX_ARR(ex, ptr, count) ((ptr) = bp__exec_alloc((ex), (size_t)(count) * sizeof *(ptr)))

int bp_exec_noop_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    (void)user; (void)c; (void)err;
    return 0;
}

static const char *const ex_mode_names[] = {"planned", "dynamic", "safe"};
const char *bp_exec_mode_name(bp_exec_mode m) { return (unsigned)m <= BP_EXEC_SAFE ? ex_mode_names[m] : "?"; }

void bp_exec_options_init(bp_exec_options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = BP_EXEC_PLANNED;
    o->threads = 1;
}

static inline uint64_t ex_tick(bp_exec *ex) { return atomic_fetch_add_explicit(&ex->tick, 1, memory_order_relaxed) + 1; }

static void ex_fail(bp_exec *ex, bp_status s, const bp_error *e)
{
    pthread_mutex_lock(&ex->mu);
    if (!ex->run_status) {
        ex->run_status = s;
        ex->run_err = *e;
        ex->run_err.status = s;
    }
    atomic_store_explicit(&ex->stop, 1, memory_order_relaxed);
    pthread_mutex_unlock(&ex->mu);
}

static void ex_note_bytes(bp_exec *ex, int64_t delta)
{
    uint64_t cur = atomic_fetch_add_explicit(&ex->cur_bytes, (uint64_t)delta, memory_order_relaxed) + (uint64_t)delta;
    uint64_t pk = atomic_load_explicit(&ex->peak_bytes, memory_order_relaxed);
    while (cur > pk && !atomic_compare_exchange_weak_explicit(&ex->peak_bytes, &pk, cur, memory_order_relaxed,
                                                              memory_order_relaxed)) {}
}

/* ------------------------------------------------------ run-time storages */

static bp_status ex_storage_alloc(bp_exec *ex, int32_t r, int thr, bp__exec_local *L, bp_error *err)
{
    if (ex->o.history) { ex->s_alloc[r] = ex_tick(ex); ex->s_alloc_thr[r] = thr; }
    if (ex->sk[r] != BP__SK_POOL) return BP_OK;
    uint64_t need = 0;
    for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++)
        if (ex->voff[ex->mem[k]] + ex->tbytes[ex->mem[k]] > need) need = ex->voff[ex->mem[k]] + ex->tbytes[ex->mem[k]];
    double t0 = ex->o.time_allocs ? bp__now() : 0;
    void *p = NULL;
    uint64_t got = need;
    if (ex->o.dynamic_malloc) {
        uint64_t cap = ex->o.pool ? ex->o.pool->max_bytes : 0, cur = atomic_load_explicit(&ex->cur_bytes, memory_order_relaxed);
        if (cap && (cur > cap || need > cap - cur))   /* the pool's byte limit holds for malloc too */
            return bp__err(err, BP_ERR_EXHAUSTED, "%s: tensor \"%s\": %llu bytes would take the run past its limit of %llu bytes (%llu in use)",
                           ex->g->name, bp_graph_tensor_name(ex->g, r), (unsigned long long)need, (unsigned long long)cap,
                           (unsigned long long)cur);
        p = malloc(need ? (size_t)need : 1);
        if (!p) return bp__err(err, BP_ERR_NOMEM, "%s: tensor \"%s\": malloc of %llu bytes failed", ex->g->name,
                               bp_graph_tensor_name(ex->g, r), (unsigned long long)need);
    } else {
        bp_status s = L->pl ? bp_pool_local_alloc(L->pl, need, &p, err) : bp_pool_alloc(ex->pool, need, &p, err);
        if (s) return s;
        got = bp_pool_block_bytes(ex->pool, p);
    }
    if (ex->o.time_allocs) L->alloc_seconds += bp__now() - t0;
    L->n_allocs++;
    ex->sptr[r] = p;
    ex->scap[r] = got;
    if (ex->o.history) ex->s_addr[r] = (uintptr_t)p;
    ex_note_bytes(ex, (int64_t)got);
    for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++) ex->tptr[ex->mem[k]] = (char *)p + ex->voff[ex->mem[k]];
    return BP_OK;
}

static void ex_storage_release(bp_exec *ex, int32_t r, bp__exec_local *L)
{
    void *p = ex->sptr[r];
    if (!p) return;
    double t0 = ex->o.time_allocs && L ? bp__now() : 0;
    if (ex->o.dynamic_malloc) free(p);
    else if (L && L->pl) bp_pool_local_dealloc(L->pl, p, NULL);
    else bp_pool_dealloc(ex->pool, p, NULL);
    if (L) {
        if (ex->o.time_allocs) L->alloc_seconds += bp__now() - t0;
        L->n_frees++;
    }
    ex_note_bytes(ex, -(int64_t)ex->scap[r]);
    ex->sptr[r] = NULL;
    for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++) ex->tptr[ex->mem[k]] = NULL;
}

static void ex_storage_free(bp_exec *ex, int32_t r, int thr, bp__exec_local *L)
{
    if (ex->keep[r]) return;
    if (ex->o.history) { ex->s_free[r] = ex_tick(ex); ex->s_free_thr[r] = thr; }
    if (ex->sk[r] == BP__SK_POOL) ex_storage_release(ex, r, L);
}

/* Returns every run-time block still held (outputs of the previous run, or
 * everything after a failed run), through the first worker's pool handle
 * when there is one: the handle that allocated them on one worker, so a
 * handle that learns the runs (options.learn) sees every block it handed
 * out come back. */
static void ex_release_all(bp_exec *ex)
{
    bp__exec_local L0;
    memset(&L0, 0, sizeof L0);
    L0.pl = ex->n_ploc ? ex->ploc[0] : NULL;
    for (int32_t r = 0; r < ex->nt; r++)
        if (ex->sk[r] == BP__SK_POOL && ex->root[r] == r && ex->sptr[r]) ex_storage_release(ex, r, L0.pl ? &L0 : NULL);
    bp__exec_copies_release(ex);
}

/* ------------------------------------------------------------ one op */

/* Each op's kernel: its type's, else the default; an op with neither (and
 * no bodies: control flow runs in control.c) is an error naming its type. */
static bp_status ex_resolve_kernels(bp_exec *ex, bp_error *err)
{
    if (!ex->kdirty) return BP_OK;
    for (int32_t op = 0; op < ex->no; op++) {
        int32_t ty = ex->g->o[op].type;
        if (ex->type_fn && ty >= 0 && (size_t)ty < ex->n_types && ex->type_fn[ty]) {
            ex->kfn[op] = ex->type_fn[ty];
            ex->kuser[op] = ex->type_user[ty];
        } else if (ex->def_fn) {
            ex->kfn[op] = ex->def_fn;
            ex->kuser[op] = ex->def_user;
        } else if (ex->is_cf && ex->is_cf[op]) {
            ex->kfn[op] = bp_exec_noop_kernel;   /* never called */
            ex->kuser[op] = NULL;
        } else {
            return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\" of type \"%s\" has no kernel (set one with bp_exec_set_type_kernel, or a default for every op with bp_exec_set_kernel; bp_exec_noop_kernel does nothing)",
                           ex->g->name, bp__names_get(&ex->g->onames, op), bp__names_get(&ex->g->types, ty));
        }
    }
    ex->kdirty = false;
    return BP_OK;
}

static bp_status ex_op(bp_exec *ex, int32_t op, int thr, bp__exec_local *L, bp_error *err)
{
    for (int32_t k = ex->al_off[op]; k < ex->al_off[op + 1]; k++) {
        bp_status s = ex_storage_alloc(ex, ex->al[k], thr, L, err);
        if (s) return s;
    }
    if (ex->n_cp) {   /* prefetches and recomputes the plan puts before this op */
        bp_status s = bp__exec_copies_pre(ex, op, thr, err);
        if (s) return s;
    }
    const bp__op *x = &ex->g->o[op];
    bp_exec_buf *b = ex->bufs + ex->io_off[op];
    int n = x->n_in + x->n_out;
    void *const *cp = ex->n_cp ? ex->cptr + ex->io_off[op] : NULL;
    for (int k = 0; k < n; k++) {
        int32_t t = b[k].tensor;
        b[k].data = cp && cp[k] ? cp[k] : ex->tptr[t];
        b[k].bytes = ex->tbytes[t];
    }
    uint64_t *h = ex->io_hash ? ex->io_hash + ex->io_off[op] : NULL;
    if (h)
        for (int k = 0; k < x->n_in; k++) h[k] = bp_digest_hash(b[k].data, b[k].bytes, 0);
    int n_real = bp__op_n_out(ex->g, op);
    bp_exec_call c = {ex->g, op, bp__names_get(&ex->g->onames, op), bp__names_get(&ex->g->types, x->type),
                      x->n_in, n_real, b, b + x->n_in, thr, ex->ioshape + ex->io_off[op],
                      ex->ioshape + ex->io_off[op] + x->n_in, x->n_ws, b + x->n_in + n_real};
    if (ex->o.history) { ex->op_t0[op] = ex_tick(ex); ex->op_thr[op] = thr; }
    if (ex->is_cf && ex->is_cf[op]) {
        bp_status cs = bp__exec_cf_run(ex, op, err);
        if (ex->o.history) ex->op_t1[op] = ex_tick(ex);
        L->n_ops++;
        if (cs) return cs;
        if (h)
            for (int k = x->n_in; k < n; k++) h[k] = bp_digest_hash(b[k].data, b[k].bytes, 0);
        return BP_OK;
    }
    bp_error kerr;
    kerr.status = BP_OK;
    kerr.msg[0] = 0;
    int rc = ex->kfn[op](ex->kuser[op], &c, &kerr);
    if (ex->o.history) ex->op_t1[op] = ex_tick(ex);
    L->n_ops++;
    if (rc) {
        kerr.msg[sizeof kerr.msg - 1] = 0;
        return bp__err(err, BP_ERR_KERNEL, "%s: op \"%s\" (%s): the kernel failed (code %d)%s%s", ex->g->name,
                       c.op_name, c.op_type, rc, kerr.msg[0] ? ": " : "", kerr.msg);
    }
    if (h)
        for (int k = x->n_in; k < n; k++) h[k] = bp_digest_hash(b[k].data, b[k].bytes, 0);
    return ex->n_cp ? bp__exec_copies_post(ex, op, err) : BP_OK;   /* offloads after it */
}

/* -------------------------------------------------------------- parallel */

static void ex_chain(bp_exec *ex, int32_t op, int thr, bp__exec_local *L)
{
    while (op >= 0) {
        if (atomic_load_explicit(&ex->stop, memory_order_relaxed)) return;
        bp_error e;
        bp_status s = ex_op(ex, op, thr, L, &e);
        if (s) { ex_fail(ex, s, &e); return; }
        for (int32_t k = ex->tc_off[op]; k < ex->tc_off[op + 1]; k++) {
            int32_t r = ex->tc[k];
            if (atomic_fetch_sub_explicit(&ex->refc[r], 1, memory_order_acq_rel) == 1) ex_storage_free(ex, r, thr, L);
        }
        int32_t next = -1;
        bool locked = false;
        int pushed = 0;
        for (int32_t k = ex->succ_off[op]; k < ex->succ_off[op + 1]; k++) {
            int32_t v = ex->succ[k];
            if (atomic_fetch_sub_explicit(&ex->pend[v], 1, memory_order_acq_rel) != 1) continue;
            if (next < 0) { next = v; continue; }
            if (!locked) { pthread_mutex_lock(&ex->mu); locked = true; }
            ex->queue[ex->qt++] = v;
            pushed++;
        }
        if (locked) {
            if (ex->n_sleep) {
                if (pushed > 1) pthread_cond_broadcast(&ex->cv_work);
                else pthread_cond_signal(&ex->cv_work);
            }
            pthread_mutex_unlock(&ex->mu);
        }
        atomic_fetch_add_explicit(&ex->n_done, 1, memory_order_release);
        op = next;
    }
}

static void ex_work(bp_exec *ex, int thr)
{
    bp__exec_local L = {0};
    L.pl = thr < ex->n_ploc ? ex->ploc[thr] : NULL;
    pthread_mutex_lock(&ex->mu);
    for (;;) {
        bool stop = atomic_load_explicit(&ex->stop, memory_order_relaxed);
        if (ex->qh < ex->qt && !stop) {
            int32_t op = ex->queue[ex->qh++];
            ex->running++;
            pthread_mutex_unlock(&ex->mu);
            ex_chain(ex, op, thr, &L);
            pthread_mutex_lock(&ex->mu);
            ex->running--;
            continue;
        }
        int done = atomic_load_explicit(&ex->n_done, memory_order_acquire);
        if (done == ex->no || (stop && ex->running == 0)) break;
        if (ex->running == 0 && ex->qh == ex->qt) {
            /* nothing runs and nothing is ready: a dependency cycle (cannot
             * happen with a topological plan; reported, never a hang) */
            if (!ex->run_status) {
                ex->run_status = bp__err(&ex->run_err, BP_ERR_INVALID, "%s: parallel run stalled after %d of %d ops (dependency cycle)",
                                         ex->g->name, done, ex->no);
            }
            atomic_store_explicit(&ex->stop, 1, memory_order_relaxed);
            break;
        }
        ex->n_sleep++;
        pthread_cond_wait(&ex->cv_work, &ex->mu);
        ex->n_sleep--;
    }
    pthread_cond_broadcast(&ex->cv_work);
    ex->tot.alloc_seconds += L.alloc_seconds;
    ex->tot.n_allocs += L.n_allocs;
    ex->tot.n_frees += L.n_frees;
    ex->tot.n_ops += L.n_ops;
    pthread_mutex_unlock(&ex->mu);
}

static void *ex_worker_main(void *arg)
{
    bp_exec *ex = ((void **)arg)[0];
    int thr = (int)(intptr_t)((void **)arg)[1];
    pthread_mutex_lock(&ex->mu);
    uint64_t seen = 0;
    for (;;) {
        while (ex->gen == seen && !ex->shutdown) pthread_cond_wait(&ex->cv_work, &ex->mu);
        if (ex->shutdown) break;
        seen = ex->gen;
        pthread_mutex_unlock(&ex->mu);
        ex_work(ex, thr);
        pthread_mutex_lock(&ex->mu);
        ex->workers_out++;
        pthread_cond_signal(&ex->cv_idle);
    }
    pthread_mutex_unlock(&ex->mu);
    return NULL;
}

static void ex_run_parallel(bp_exec *ex)
{
    for (int32_t op = 0; op < ex->no; op++) atomic_store_explicit(&ex->pend[op], ex->pend0[op], memory_order_relaxed);
    ex->qh = ex->qt = 0;
    for (int32_t s = 0; s < ex->no; s++) if (!ex->pend0[ex->order[s]]) ex->queue[ex->qt++] = ex->order[s];
    atomic_store(&ex->n_done, 0);
    ex->running = 0;
    pthread_mutex_lock(&ex->mu);
    ex->workers_out = 0;
    ex->gen++;
    pthread_cond_broadcast(&ex->cv_work);
    pthread_mutex_unlock(&ex->mu);
    ex_work(ex, 0);
    pthread_mutex_lock(&ex->mu);
    while (ex->workers_out < ex->n_tid) pthread_cond_wait(&ex->cv_idle, &ex->mu);
    pthread_mutex_unlock(&ex->mu);
}

/* ------------------------------------------------------------------- run */

bp_status bp_exec_run(bp_exec *ex, bp_exec_run_stats *st, bp_error *err)
{
    if (st) memset(st, 0, sizeof *st);
    if (!ex) return bp__err(err, BP_ERR_USAGE, "exec: run: NULL executor");
    ex_release_all(ex);
    bp_status ks = ex_resolve_kernels(ex, err);
    if (ks) return ks;
    atomic_store(&ex->cur_bytes, 0);
    atomic_store(&ex->peak_bytes, 0);
    atomic_store(&ex->tick, 0);
    atomic_store(&ex->stop, 0);
    atomic_store(&ex->n_recomputed, 0);
    atomic_store(&ex->n_offloaded, 0);
    memset(&ex->tot, 0, sizeof ex->tot);
    ex->run_status = BP_OK;
    ex->run_err.msg[0] = 0;
    ex->ran = 0;
    if (ex->o.history) {
        for (int32_t t = 0; t < ex->nt; t++) { ex->s_alloc[t] = ex->s_free[t] = 0; ex->s_alloc_thr[t] = ex->s_free_thr[t] = -1; }
        for (int32_t op = 0; op < ex->no; op++) { ex->op_t0[op] = ex->op_t1[op] = 0; ex->op_thr[op] = -1; }
    }
    for (int32_t r = 0; r < ex->nt; r++)
        if (ex->refc0[r]) atomic_store_explicit(&ex->refc[r], ex->refc0[r], memory_order_relaxed);
    double t0 = bp__now();
    /* graph inputs planned in the arena: written before the first op */
    for (int32_t k = 0; k < ex->n_pin; k++) {
        int32_t t = ex->pin[k];
        if (ex->o.history) { ex->s_alloc[t] = ex_tick(ex); ex->s_alloc_thr[t] = 0; }
        if (ex->tbytes[t]) memcpy(ex->tptr[t], ex->sptr[t], (size_t)ex->tbytes[t]);
    }
    if (ex->threads <= 1) {
        bp__exec_local L = {0};
        L.pl = ex->n_ploc ? ex->ploc[0] : NULL;
        for (int32_t s = 0; s < ex->no; s++) {
            int32_t op = ex->order[s];
            bp_status rs = ex_op(ex, op, 0, &L, &ex->run_err);
            if (rs) { ex->run_status = rs; break; }
            for (int32_t k = ex->fr_off[op]; k < ex->fr_off[op + 1]; k++) ex_storage_free(ex, ex->fr[k], 0, &L);
        }
        ex->tot = L;
    } else {
        ex_run_parallel(ex);
    }
    double secs = bp__now() - t0;
    if (st) {
        st->seconds = secs;
        st->alloc_seconds = ex->tot.alloc_seconds;
        st->n_ops = ex->tot.n_ops;
        st->n_allocs = ex->tot.n_allocs;
        st->n_frees = ex->tot.n_frees;
        /* safe mode holds every tensor's own buffer for the whole run */
        st->peak_bytes = ex->arena_bytes + (ex->o.mode == BP_EXEC_SAFE ? ex->safe_bytes : 0) + atomic_load(&ex->peak_bytes);
        st->n_recomputes = atomic_load(&ex->n_recomputed);
        st->n_offloads = atomic_load(&ex->n_offloaded);
    }
    if (ex->run_status) {
        ex_release_all(ex);
        bp_status s = ex->run_status;
        if (err) { *err = ex->run_err; err->status = s; }
        return s;
    }
    ex->ran = 1;
    return BP_OK;
}

bp_status bp_exec_set_shapes(bp_exec *ex, const bp_graph *shapes, bp_error *err)
{
    if (!ex) return bp__err(err, BP_ERR_USAGE, "exec: set shapes: NULL executor");
    bp_status s = bp__exec_shapes_fill(ex, shapes, err);
    for (int32_t t = 0; t < ex->nt && !s && shapes; t++) {
        int32_t u = bp_graph_find_tensor(shapes, bp_graph_tensor_name(ex->g, t));
        if (ex->g->t[t].dynamic && ex->sk[ex->root[t]] != BP__SK_ARENA && !bp_graph_tensor_is_dynamic(shapes, u))
            s = bp_exec_set_dynamic_bytes(ex, t, bp_graph_tensor_bytes(shapes, u), err);
    }
    return s;
}

/* ---------------------------------------------------------------- kernels */

void bp_exec_set_kernel(bp_exec *ex, bp_kernel_fn fn, void *user)
{
    if (!ex) return;
    ex->def_fn = fn;
    ex->def_user = user;
    ex->kdirty = true;
    for (int32_t i = 0; i < ex->n_child; i++) bp_exec_set_kernel(ex->child[i], fn, user);
}

bp_status bp_exec_set_type_kernel(bp_exec *ex, const char *op_type, bp_kernel_fn fn, void *user, bp_error *err)
{
    if (!ex || !op_type) return bp__err(err, BP_ERR_USAGE, "exec: set type kernel: NULL argument");
    int32_t ty = bp__names_find(&ex->g->types, op_type, strlen(op_type));
    bool in_body = false;   /* bodies (control flow) get it too, where the type occurs */
    for (int32_t i = 0; i < ex->n_child; i++) in_body |= bp_exec_set_type_kernel(ex->child[i], op_type, fn, user, NULL) == BP_OK;
    if (ty < 0 && in_body) return BP_OK;
    if (ty < 0) return bp__err(err, BP_ERR_USAGE, "%s: no op has type \"%s\"", ex->g->name, op_type);
    if (!ex->type_fn) {
        ex->n_types = ex->g->types.n;
        if (!EX_ARR(ex, ex->type_fn, ex->n_types) || !EX_ARR(ex, ex->type_user, ex->n_types))
            return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", ex->g->name);
    }
    ex->type_fn[ty] = fn;
    ex->type_user[ty] = user;
    ex->kdirty = true;
    return BP_OK;
}

/* ------------------------------------------------------------ data access */

static bp_status ex_check_tensor(const bp_exec *ex, int32_t t, bp_error *err)
{
    if (!ex) return bp__err(err, BP_ERR_USAGE, "exec: NULL executor");
    if (t < 0 || t >= ex->nt) return bp__err(err, BP_ERR_USAGE, "%s: tensor id %d out of range (0..%d)", ex->g->name, (int)t, (int)ex->nt - 1);
    return BP_OK;
}

bp_status bp_exec_set_input(bp_exec *ex, int32_t t, const void *data, uint64_t bytes, bp_error *err)
{
    bp_status s = ex_check_tensor(ex, t, err);
    if (s) return s;
    int32_t r = ex->root[t];
    if (!ex->external[r] || r != t)
        return bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\" is not an input or weight (it is made by an op)",
                       ex->g->name, bp_graph_tensor_name(ex->g, t));
    if (!data && bytes) return bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\": NULL data", ex->g->name, bp_graph_tensor_name(ex->g, t));
    uint64_t cap = ex->tbytes[t];
    uint64_t n = bytes < cap ? bytes : cap;
    char *dst = ex->sptr[r];
    if (n) memcpy(dst, data, (size_t)n);
    if (cap > n) memset(dst + n, 0, (size_t)(cap - n));
    return BP_OK;
}

bp_status bp_exec_set_dynamic_bytes(bp_exec *ex, int32_t t, uint64_t bytes, bp_error *err)
{
    bp_status s = ex_check_tensor(ex, t, err);
    if (s) return s;
    if (!ex->g->t[t].dynamic)
        return bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\" is not dynamic", ex->g->name, bp_graph_tensor_name(ex->g, t));
    int32_t r = ex->root[t];
    if (ex->sk[r] == BP__SK_ARENA)
        return bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\" was planned in the arena at its bound size", ex->g->name,
                       bp_graph_tensor_name(ex->g, t));
    if (ex->sk[r] == BP__SK_FIXED && bytes > ex->scap[r]) {
        void *p = NULL;
        bp_pool *pl = ex->external[r] ? ex->xpool : ex->pool;
        if ((s = bp_pool_alloc(pl, bytes, &p, err))) return s;
        memset(p, 0, (size_t)bytes);
        ex->sptr[r] = p;   /* the old bytes stay in the slab until bp_exec_free */
        ex->scap[r] = bytes;
        for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++) ex->tptr[ex->mem[k]] = (char *)p + ex->voff[ex->mem[k]];
    }
    ex->tbytes[t] = bytes;
    return BP_OK;
}

void *bp_exec_tensor_data(const bp_exec *ex, int32_t t, uint64_t *bytes)
{
    if (!ex || t < 0 || t >= ex->nt) { if (bytes) *bytes = 0; return NULL; }
    if (bytes) *bytes = ex->tbytes[t];
    int32_t r = ex->root[t];
    /* a planned input itself: what was given (its arena bytes may have been
     * reused); a tensor made by an op over it (in place, or a view of such
     * an output) lives in the arena */
    if (ex->external[r] && ex->sk[r] == BP__SK_ARENA && ex->g->t[t].producer < 0) return ex->sptr[r];
    if (ex->n_cp && ex->c_beg[r] < ex->c_beg[r + 1]) return bp__exec_copy_addr(ex, t, ex->c_beg[r + 1] - 1);  /* its last copy */
    return ex->tptr[t];
}

void bp_exec_get_info(const bp_exec *ex, bp_exec_info *out)
{
    memset(out, 0, sizeof *out);
    if (!ex) return;
    out->mode = ex->o.mode;
    out->threads = ex->threads;
    out->n_ops = ex->no;
    out->n_fences = ex->n_fences;
    out->n_data_edges = ex->n_data_edges;
    out->arena_bytes = ex->arena_bytes;
    out->external_bytes = ex->external_bytes;
    out->safe_bytes = ex->safe_bytes;
}

const int32_t *bp_exec_fences(const bp_exec *ex, size_t *n)
{
    if (n) *n = ex ? ex->n_fences : 0;
    return ex ? ex->fences : NULL;
}

bp_pool *bp_exec_pool(const bp_exec *ex) { return ex ? ex->pool : NULL; }

/* -------------------------------------------------------------- teardown */

void bp_exec_free(bp_exec *ex)
{
    if (!ex) return;
    if (ex->sync_ok) {
        pthread_mutex_lock(&ex->mu);
        ex->shutdown = 1;
        pthread_cond_broadcast(&ex->cv_work);
        pthread_mutex_unlock(&ex->mu);
        for (int i = 0; i < ex->n_tid; i++) pthread_join(ex->tid[i], NULL);
    }
    if (ex->child) bp__exec_cf_free(ex);
    if (ex->sk && ex->sptr && ex->root && ex->mem) ex_release_all(ex);
    for (int i = 0; i < ex->n_ploc; i++) bp_pool_local_free(ex->ploc[i]);
    bp_pool_free(ex->pool);
    bp_pool_free(ex->xpool);
    bp_pool_free(ex->hpool);
    if (ex->sync_ok) {
        pthread_mutex_destroy(&ex->mu);
        pthread_cond_destroy(&ex->cv_work);
        pthread_cond_destroy(&ex->cv_idle);
    }
    bp_plan_free(ex->own_plan);
    bp__free(&ex->a, ex->fences, ex->cap_fences * sizeof *ex->fences);
    bp_allocator a = ex->a;
    for (size_t i = 0; i < ex->n_blocks; i++) bp__free(&a, ex->blocks[i].p, ex->blocks[i].n);
    bp__free(&a, ex->blocks, ex->cap_blocks * sizeof *ex->blocks);
    bp__free(&a, ex, sizeof *ex);
}

/* ----------------------------------------------------------------- setup */

static bp_status ex_check_plan(bp_exec *ex, bp_error *err)
{
    const bp_graph *g = ex->g;
    const bp_plan *p = ex->plan;
    if (p->n_t != (int32_t)g->n_t || p->n_o != (int32_t)g->n_o)
        return bp__err(err, BP_ERR_USAGE, "%s: the plan has %d tensors and %d ops, the graph %d and %d: not this graph's plan",
                       g->name, (int)p->n_t, (int)p->n_o, (int)g->n_t, (int)g->n_o);
    for (int32_t s = 0; s < ex->no; s++) ex->step[s] = -1;
    for (int32_t s = 0; s < ex->no; s++) {
        int32_t op = p->order[s];
        if (op < 0 || op >= ex->no || ex->step[op] >= 0)
            return bp__err(err, BP_ERR_INVALID, "%s: the plan's schedule is not a permutation of the ops (step %d)", g->name, (int)s);
        ex->step[op] = s;
    }
    for (int32_t op = 0; op < ex->no; op++) {
        const int32_t *in = bp__op_in(g, op);
        for (int i = 0; i < g->o[op].n_in; i++) {
            int32_t pr = g->t[in[i]].producer;
            if (pr >= 0 && ex->step[pr] >= ex->step[op])
                return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\" runs before the producer of its input \"%s\" in the plan",
                               g->name, bp__names_get(&g->onames, op), bp_graph_tensor_name(g, in[i]));
        }
    }
    for (int32_t t = 0; t < ex->nt; t++) {
        int32_t r = p->tp[t].alias_of;
        if (r >= ex->nt || (r >= 0 && p->tp[r].alias_of >= 0))
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": bad alias_of in the plan", g->name, bp_graph_tensor_name(g, t));
    }
    return BP_OK;
}

/* Storage kinds, members, fixed buffers, arena bindings. */
static bp_status ex_setup_memory(bp_exec *ex, bp_error *err)
{
    const bp_graph *g = ex->g;
    const bp_plan *p = ex->plan;
    int32_t nt = ex->nt;
    bp_exec_mode mode = ex->o.mode;
    bp__etab et;   /* views as the plan's engine profile makes them */
    bp_status es = bp__etab_build(g, p->engine, &et, err);
    if (es) return es;
    for (int32_t t = 0; t < nt; t++) {
        ex->root[t] = mode == BP_EXEC_SAFE || p->tp[t].alias_of < 0 ? t : p->tp[t].alias_of;
        ex->tbytes[t] = g->t[t].bytes;
        ex->view_src[t] = bp__etab_view_source(g, &et, t);
    }
    bp__etab_free(g, &et);
    bp_status cs = bp__exec_clamp_views(g, ex->tbytes, err);   /* broadcast views: the root's bytes */
    if (cs) return cs;
    if (!EX_ARR(ex, ex->voff, nt) || !EX_ARR(ex, ex->inside, nt)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    bp__exec_slices_fill(ex);
    /* kinds, per root */
    for (int32_t t = 0; t < nt; t++) {
        if (ex->root[t] != t) continue;
        const bp_tensor_plan *tp = &p->tp[t];
        bool made = g->t[t].producer >= 0;
        uint8_t k;
        if (!made) {
            ex->external[t] = 1;
            k = mode == BP_EXEC_PLANNED && tp->offset != BP_NO_OFFSET ? BP__SK_ARENA : BP__SK_FIXED;
        } else if (mode == BP_EXEC_SAFE) {
            k = BP__SK_FIXED;
        } else if (tp->kind == BP_KIND_WEIGHT || tp->kind == BP_KIND_INPUT) {
            k = BP__SK_FIXED;
            ex->external[t] = 1;
        } else if (mode == BP_EXEC_PLANNED && tp->offset != BP_NO_OFFSET) {
            k = BP__SK_ARENA;
        } else {
            k = BP__SK_POOL;
        }
        ex->sk[t] = k;
    }
    /* members CSR, keep flags */
    for (int32_t t = 0; t < nt; t++) {
        ex->mem_off[ex->root[t] + 1]++;
        if (g->t[t].flags & BP_TENSOR_OUTPUT) ex->keep[ex->root[t]] = 1;
    }
    for (int32_t t = 0; t < nt; t++) ex->mem_off[t + 1] += ex->mem_off[t];
    {
        int32_t *fill;
        if (!EX_ARR(ex, fill, nt)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        memcpy(fill, ex->mem_off, (size_t)nt * sizeof *fill);
        for (int32_t t = 0; t < nt; t++) ex->mem[fill[ex->root[t]]++] = t;
    }
    /* pools */
    bp_pool_options po;
    if (ex->o.pool) po = *ex->o.pool; else bp_pool_options_init(&po);
    po.alloc = &ex->a;
    bp_status s;
    ex->arena_bytes = mode == BP_EXEC_PLANNED ? p->stats.arena_bytes : 0;
    if (mode == BP_EXEC_PLANNED && !ex->arena_base) s = bp_pool_new_arena(ex->arena_bytes, &po, &ex->pool, err);
    else s = bp_pool_new(&po, &ex->pool, err);   /* a body's arena lies in its parent's */
    if (s) return s;
    if (mode == BP_EXEC_PLANNED && !ex->arena_base) ex->arena_base = bp_pool_arena_base(ex->pool);
    bp_pool_options xo;
    bp_pool_options_init(&xo);
    xo.alloc = &ex->a;
    if (ex->o.pool) { xo.backend = ex->o.pool->backend; xo.alignment = ex->o.pool->alignment; xo.max_bytes = ex->o.pool->max_bytes; }
    if ((s = bp_pool_new(&xo, &ex->xpool, err))) return s;
    /* storage sizes; fixed buffers (and planned inputs' staging copies) are
     * carved from one slab per pool: two allocations, whatever the count */
    uint64_t q = po.alignment > 256 ? po.alignment : 256, slab[2] = {0, 0};
    char *base[2] = {NULL, NULL};
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            bp_pool *pools[2] = {ex->xpool, ex->pool};
            for (int k = 0; k < 2; k++) {
                if (!slab[k]) continue;
                void *m = NULL;
                if ((s = bp_pool_alloc(pools[k], slab[k], &m, err))) return s;
                base[k] = m;
                slab[k] = 0;
            }
        }
        for (int32_t r = 0; r < nt; r++) {
            if (ex->root[r] != r) continue;
            bool fixed = ex->sk[r] == BP__SK_FIXED, staged = ex->sk[r] == BP__SK_ARENA && ex->external[r];
            if (!fixed && !staged) continue;
            uint64_t need = 0;
            for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++)
                if (ex->voff[ex->mem[k]] + ex->tbytes[ex->mem[k]] > need) need = ex->voff[ex->mem[k]] + ex->tbytes[ex->mem[k]];
            int k = ex->external[r] ? 0 : 1;
            uint64_t at = slab[k], sz = bp__align_up(need ? need : 1, q);
            if (!bp__add_u64(slab[k], sz, &slab[k]))
                return bp__err(err, BP_ERR_LIMIT, "%s: tensor sizes overflow", g->name);
            if (!pass) continue;
            ex->sptr[r] = base[k] + at;
            ex->scap[r] = need;
            if (ex->external[r]) { memset(ex->sptr[r], 0, (size_t)sz); ex->external_bytes += need; }  /* the rest is written by its op */
            else ex->safe_bytes += need;
            if (staged) ex->pin[ex->n_pin++] = r;
            else for (int32_t k2 = ex->mem_off[r]; k2 < ex->mem_off[r + 1]; k2++) ex->tptr[ex->mem[k2]] = (char *)ex->sptr[r] + ex->voff[ex->mem[k2]];
        }
    }
    /* arena bindings */
    for (int32_t r = 0; r < nt; r++) {
        if (ex->root[r] != r || ex->sk[r] != BP__SK_ARENA) continue;
        for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++) {
            int32_t t = ex->mem[k];
            uint64_t off = (p->tp[t].offset != BP_NO_OFFSET ? p->tp[t].offset : p->tp[r].offset) + ex->voff[t], end;
            if (ex->pool_is_parents) {   /* a body: its arena is the parent's at arena_base */
                if (!bp__add_u64(off, ex->tbytes[t], &end) || end > ex->arena_bytes)
                    return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" at offset %llu (%llu bytes) does not fit the body's arena of %llu bytes",
                                   g->name, bp_graph_tensor_name(g, t), (unsigned long long)off, (unsigned long long)ex->tbytes[t],
                                   (unsigned long long)ex->arena_bytes);
                ex->tptr[t] = (char *)ex->arena_base + off;
                continue;
            }
            if ((s = bp_pool_arena_bind(ex->pool, off, ex->tbytes[t], &ex->tptr[t], err)))
                return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" at offset %llu (%llu bytes) does not fit the plan's arena of %llu bytes",
                               g->name, bp_graph_tensor_name(g, t), (unsigned long long)off,
                               (unsigned long long)ex->tbytes[t], (unsigned long long)ex->arena_bytes);
        }
    }
    return BP_OK;
}

/* Per-op buffers, allocation / free / use-count lists. */
static bp_status ex_setup_ops(bp_exec *ex, bp_error *err)
{
    const bp_graph *g = ex->g;
    const bp_plan *p = ex->plan;
    int32_t nt = ex->nt, no = ex->no;
    bool hist = ex->o.history != 0;
    for (int32_t op = 0; op < no; op++) ex->io_off[op + 1] = ex->io_off[op] + g->o[op].n_in + g->o[op].n_out;
    for (int32_t op = 0; op < no; op++) {
        const bp__op *x = &g->o[op];
        bp_exec_buf *b = ex->bufs + ex->io_off[op];
        const int32_t *io = g->io + x->io_off;
        for (int k = 0; k < x->n_in + x->n_out; k++) {
            b[k].tensor = io[k];
            b[k].view_of_input = -1;
            if (k >= x->n_in && ex->view_src[io[k]] >= 0)
                for (int i = 0; i < x->n_in; i++) if (io[i] == ex->view_src[io[k]]) { b[k].view_of_input = i; break; }
        }
    }
    /* which roots need run-time handling: POOL ones, or all with history */
    uint8_t *tracked;
    int32_t *last, *mark;
    if (!EX_ARR(ex, tracked, nt) || !EX_ARR(ex, last, nt) || !EX_ARR(ex, mark, nt))
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    for (int32_t r = 0; r < nt; r++) {
        last[r] = -1;
        mark[r] = -1;
        tracked[r] = ex->root[r] == r && g->t[r].producer >= 0 && (ex->sk[r] == BP__SK_POOL || (hist && ex->sk[r] != BP__SK_NONE));
    }
    /* free step: the plan's last use over the members (sequential replay) */
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = ex->root[t], l = ex->o.mode == BP_EXEC_SAFE ? -1 : p->tp[t].last;
        if (g->t[t].producer >= 0 && ex->step[g->t[t].producer] > l) l = ex->step[g->t[t].producer];
        if (l > last[r]) last[r] = l;
    }
    /* allocation: before the first member's producer (a Concat output's
     * slices are made before it), mark[] holding that op meanwhile */
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = ex->root[t], pr = g->t[t].producer;
        if (tracked[r] && pr >= 0 && (mark[r] < 0 || ex->step[pr] < ex->step[mark[r]])) mark[r] = pr;
    }
    for (int32_t r = 0; r < nt; r++) {
        if (!tracked[r]) continue;
        ex->al_off[mark[r] + 1]++;
        if (!ex->keep[r] && last[r] >= 0) ex->fr_off[ex->order[last[r]] + 1]++;
    }
    for (int32_t op = 0; op < no; op++) { ex->al_off[op + 1] += ex->al_off[op]; ex->fr_off[op + 1] += ex->fr_off[op]; }
    if (!EX_ARR(ex, ex->al, ex->al_off[no]) || !EX_ARR(ex, ex->fr, ex->fr_off[no]))
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    {
        int32_t *fa, *ff;
        if (!EX_ARR(ex, fa, no + 1) || !EX_ARR(ex, ff, no + 1)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        memcpy(fa, ex->al_off, (size_t)no * sizeof *fa);
        memcpy(ff, ex->fr_off, (size_t)no * sizeof *ff);
        for (int32_t r = 0; r < nt; r++) {
            if (!tracked[r]) continue;
            ex->al[fa[mark[r]]++] = r;
            if (!ex->keep[r] && last[r] >= 0) ex->fr[ff[ex->order[last[r]]]++] = r;
        }
    }
    for (int32_t r = 0; r < nt; r++) mark[r] = -1;
    /* use counts (parallel): distinct ops touching a tracked storage */
    for (int pass = 0; pass < 2; pass++) {
        size_t n = 0;
        for (int32_t op = 0; op < no; op++) {
            const bp__op *x = &g->o[op];
            const int32_t *io = g->io + x->io_off;
            if (!pass) ex->tc_off[op] = (int32_t)n;
            for (int k = 0; k < x->n_in + x->n_out; k++) {
                int32_t r = ex->root[io[k]];
                if (!tracked[r] || ex->keep[r] || mark[r] == op + pass * no) continue;
                mark[r] = op + pass * no;
                if (pass) { ex->tc[n] = r; ex->refc0[r]++; }
                n++;
            }
        }
        if (!pass) {
            ex->tc_off[no] = (int32_t)n;
            if (!EX_ARR(ex, ex->tc, n)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        }
    }
    return BP_OK;
}

/* One pool handle per worker for the storages allocated at run time: a
 * handle's hit path has no lock, no atomic read-modify-write and no
 * thread-specific lookup (the plain API has all three), and a storage freed
 * by another worker goes back to its own arena's lists.  Worker i is the
 * only thread that uses handle i during a run (worker 0 is the caller's
 * thread, and runs do not overlap). */
static bp_status ex_setup_handles(bp_exec *ex, bp_error *err)
{
    if (ex->o.dynamic_malloc) return BP_OK;
    bool any = false;
    for (int32_t r = 0; r < ex->nt && !any; r++) any = ex->root[r] == r && ex->sk[r] == BP__SK_POOL;
    if (!any) return BP_OK;
    int n = ex->threads > 1 ? ex->threads : 1;
    if (!EX_ARR(ex, ex->ploc, n)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", ex->g->name);
    for (; ex->n_ploc < n; ex->n_ploc++) {
        bp_status s = bp_pool_local_new(ex->pool, 0, &ex->ploc[ex->n_ploc], err);
        if (s) return s;
    }
    return BP_OK;
}

/* Counts (acc NULL: in acc_off[q + 2]) or records (acc: at acc_off[q + 1]) op
 * as an accessor of the tenant of t, once per op (amark).  A Concat output
 * whose inputs sit in it has no tenant of its own: its accessors are its
 * inputs' (recursively). */
static void ex_acc_add(const bp_exec *ex, const int32_t *tid, int32_t t, int32_t op, int32_t *amark, int32_t *acc,
                       int32_t *acc_off, int depth)
{
    int32_t u = t, hops = 0;
    while (tid[u] < 0 && ex->inside[u] != -2 && (ex->view_src[u] >= 0 || ex->inside[u] >= 0) && hops++ < ex->nt)
        u = ex->inside[u] >= 0 ? ex->inside[u] : ex->view_src[u];
    int32_t q = tid[u];
    if (q < 0 && ex->inside[u] == -2 && depth < 64) {
        int32_t pr = ex->g->t[u].producer;
        for (int i = 0; i < ex->g->o[pr].n_in; i++) ex_acc_add(ex, tid, bp__op_in(ex->g, pr)[i], op, amark, acc, acc_off, depth + 1);
        return;
    }
    if (q < 0 || amark[q] == op) return;
    amark[q] = op;
    if (acc) acc[acc_off[q + 1]++] = op;
    else acc_off[q + 2]++;
}

/* Accessors with copies (parallel replay of a plan's copies, copies.c): an
 * access to residency c >= 0 of a storage counts for the copy's tenant
 * (base + c), one to the first placement goes through ex_acc_add.  In the
 * fill pass, the edges the fence builder does not make: the copy's maker
 * before each other accessor, and, for the copies' own reads of a first
 * placement (extra), the tensor's producer before the op that reads. */
typedef struct ex_acc_cx {
    const bp_exec *ex;
    const int32_t *tid;
    int32_t *amark, *acc, *acc_off, base;
    bool fill, extra, oom;
    int32_t *edges; size_t n_edges, cap_edges;
} ex_acc_cx;

static void ex_acc_edge(ex_acc_cx *x, int32_t from, int32_t to)
{
    if (from < 0 || from == to) return;
    bp_exec *ex = (bp_exec *)x->ex;
    if (!bp__grow(&ex->a, (void **)&x->edges, &x->cap_edges, 2 * (x->n_edges + 1), sizeof *x->edges)) { x->oom = true; return; }
    x->edges[2 * x->n_edges] = from;
    x->edges[2 * x->n_edges + 1] = to;
    x->n_edges++;
}

static void ex_acc_res(void *ctx, int32_t t, int32_t c, int32_t op)
{
    ex_acc_cx *x = ctx;
    const bp_exec *ex = x->ex;
    if (c < 0) {
        ex_acc_add(ex, x->tid, t, op, x->amark, x->fill ? x->acc : NULL, x->acc_off, 0);
        if (x->fill && x->extra) ex_acc_edge(x, ex->g->t[t].producer, op);
        return;
    }
    int32_t q = x->base + c;
    if (x->fill) ex_acc_edge(x, ex->order[ex->cp[c].first], op);
    if (x->amark[q] == op) return;
    x->amark[q] = op;
    if (x->fill) x->acc[x->acc_off[q + 1]++] = op;
    else x->acc_off[q + 2]++;
}

/* A storage allocated at run time (POOL) whose members are made by several
 * ops (Concat slices) is allocated by the first of them in plan order: every
 * other producer waits for that one (a fence), so no slice is written before
 * its block exists.  first: scratch, nt entries. */
static bp_status ex_pool_slice_fences(bp_exec *ex, int32_t *first, bp_error *err)
{
    const bp_graph *g = ex->g;
    for (int32_t r = 0; r < ex->nt; r++) first[r] = -1;
    for (int32_t t = 0; t < ex->nt; t++) {
        int32_t r = ex->root[t], pr = g->t[t].producer;
        if (ex->sk[r] == BP__SK_POOL && pr >= 0 && (first[r] < 0 || ex->step[pr] < ex->step[first[r]])) first[r] = pr;
    }
    for (int32_t t = 0; t < ex->nt; t++) {
        int32_t r = ex->root[t], pr = g->t[t].producer;
        if (ex->sk[r] != BP__SK_POOL || pr < 0 || pr == first[r]) continue;
        bool reads = false;   /* views and in-place outputs read the storage: ordered already */
        for (int i = 0; i < g->o[pr].n_in && !reads; i++) reads = ex->root[bp__op_in(g, pr)[i]] == r;
        if (reads) continue;
        if (!bp__grow(&ex->a, (void **)&ex->fences, &ex->cap_fences, 2 * (ex->n_fences + 1), sizeof *ex->fences))
            return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        ex->fences[2 * ex->n_fences] = first[r];
        ex->fences[2 * ex->n_fences + 1] = pr;
        ex->n_fences++;
    }
    return BP_OK;
}

/* Successors and predecessor counts, with fences where bytes are reused. */
static bp_status ex_setup_deps(bp_exec *ex, bp_error *err)
{
    const bp_graph *g = ex->g;
    const bp_plan *p = ex->plan;
    int32_t nt = ex->nt, no = ex->no;
    int32_t *pred_off = NULL, *pred = NULL;
    bp__tenant *ten = NULL;
    int32_t *tid = NULL, *acc_off = NULL, *acc = NULL, *amark = NULL;
    size_t n_ten = 0, acc_cap = 0;
    int32_t ntt = nt + ex->n_cp;   /* tenants: tensors, then copies */
    ex_acc_cx ax = {.ex = ex};
    bp_status s = bp__op_preds(g, &ex->a, &pred_off, &pred, &ex->n_data_edges, err);
    if (s) return s;
    if (ex->o.mode != BP_EXEC_SAFE) {
        /* tenants: tensors written into their own bytes (not shared views);
         * arena ones at their offsets, the others in a private range each */
        tid = bp__alloc(&ex->a, (size_t)(nt ? nt : 1) * sizeof *tid);
        ten = bp__alloc(&ex->a, (size_t)(ntt ? ntt : 1) * sizeof *ten);
        amark = bp__alloc(&ex->a, (size_t)(ntt ? ntt : 1) * sizeof *amark);
        acc_off = bp__calloc(&ex->a, (size_t)ntt + 2, sizeof *acc_off);
        acc = bp__alloc(&ex->a, (g->n_io ? g->n_io : 1) * sizeof *acc);
        uint64_t *vbase = bp__alloc(&ex->a, (size_t)(nt ? nt : 1) * sizeof *vbase);
        if (!tid || !ten || !amark || !acc_off || !acc || !vbase) {
            bp__free(&ex->a, vbase, (size_t)(nt ? nt : 1) * sizeof *vbase);
            s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
            goto done;
        }
        uint64_t vnext = ex->arena_bytes;
        for (int32_t r = 0; r < nt; r++) {
            if (ex->root[r] != r || ex->sk[r] == BP__SK_ARENA) continue;
            vbase[r] = vnext;
            uint64_t need = 1;
            for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++)
                if (ex->tbytes[ex->mem[k]] > need) need = ex->tbytes[ex->mem[k]];
            vnext += need;
        }
        /* tenants per storage: outside the arena only in-place chains (more
         * than one tenant) can need fences */
        for (int32_t t = 0; t < nt; t++) amark[t] = 0;
        for (int32_t t = 0; t < nt; t++) if (bp__exec_is_tenant(ex, t)) amark[ex->root[t]]++;
        for (int32_t t = 0; t < nt; t++) {
            tid[t] = -1;
            if (!bp__exec_is_tenant(ex, t)) continue;
            int32_t r = ex->root[t];
            if (ex->sk[r] != BP__SK_ARENA && amark[r] < 2) continue;
            /* written while its storage sits in a copy: that copy's tenant covers it */
            if (ex->n_cp && ex->c_beg[r] < ex->c_beg[r + 1] && g->t[t].producer >= 0 &&
                bp__exec_copy_at(ex, r, ex->step[g->t[t].producer]) >= 0)
                continue;
            uint64_t lo, hi;
            if (ex->sk[r] == BP__SK_ARENA) {
                lo = (p->tp[t].offset != BP_NO_OFFSET ? p->tp[t].offset : p->tp[r].offset) + ex->voff[t];
                hi = lo + ex->tbytes[t];
            } else {
                lo = vbase[r];
                hi = lo + (ex->tbytes[t] ? ex->tbytes[t] : 1);
            }
            tid[t] = (int32_t)n_ten;
            ten[n_ten++] = (bp__tenant){g->t[t].producer, lo, hi};
        }
        bp__free(&ex->a, vbase, (size_t)(nt ? nt : 1) * sizeof *vbase);
        ax.base = (int32_t)n_ten;
        if (ex->n_cp) n_ten += (size_t)bp__exec_copies_tenants(ex, ax.base, ten);
        for (int32_t t = 0; t < ntt; t++) amark[t] = -1;
        /* a view's accesses count for the tenant it shares bytes with */
        for (int32_t t = 0; t < nt; t++) {
            if (tid[t] >= 0) continue;
            int32_t u = t, hops = 0;
            while (tid[u] < 0 && (ex->view_src[u] >= 0 || ex->inside[u] >= 0) && hops++ < nt)
                u = ex->inside[u] >= 0 ? ex->inside[u] : ex->view_src[u];
            tid[t] = tid[u] >= 0 ? tid[u] : -1;
        }
        /* accessors per tenant (CSR): every op that reads or writes it */
        for (int pass = 0; pass < 2; pass++) {
            ax.tid = tid; ax.amark = amark; ax.acc = acc; ax.acc_off = acc_off; ax.fill = pass; ax.extra = false;
            for (int32_t op = 0; op < no; op++) {
                const int32_t *io = g->io + g->o[op].io_off;
                for (int k = 0; k < g->o[op].n_in + g->o[op].n_out; k++) {
                    int32_t r = ex->root[io[k]];
                    ex_acc_res(&ax, io[k], ex->n_cp && ex->c_beg[r] < ex->c_beg[r + 1] ? bp__exec_copy_at(ex, r, ex->step[op]) : -1, op);
                }
            }
            ax.extra = true;
            if (ex->n_cp) bp__exec_copies_accesses(ex, ex_acc_res, &ax);
            if (ax.oom) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
            for (size_t q = 0; q < n_ten; q++) amark[q] = -1;
            if (!pass) for (size_t q = 1; q <= n_ten + 1; q++) acc_off[q] += acc_off[q - 1];
            if (!pass && (size_t)acc_off[n_ten + 1] > (g->n_io ? g->n_io : 1)) {   /* Concat outputs made of slices count more */
                int32_t *grown = bp__realloc(&ex->a, acc, (g->n_io ? g->n_io : 1) * sizeof *acc, (size_t)acc_off[n_ten + 1] * sizeof *acc);
                if (!grown) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
                acc = grown;
                acc_cap = (size_t)acc_off[n_ten + 1];
            }
        }
        /* counted at q + 2, filled through q + 1: acc_off[q] is now q's start */
        s = bp__fences_build(&ex->a, no, ex->order, pred_off, pred, (int32_t)n_ten, ten, acc_off, acc,
                             &ex->fences, &ex->n_fences, &ex->cap_fences, &ex->fence_gave_up, err);
        if (s) goto done;
        if ((s = ex_pool_slice_fences(ex, amark, err))) goto done;
        for (int32_t c = 0; c < ex->n_cp; c++)   /* a prefetch reads what its offload wrote */
            if (ex->cp[c].kind == BP_COPY_PREFETCH) ex_acc_edge(&ax, ex->order[ex->cp[c].evict], ex->order[ex->cp[c].first]);
        if (ax.oom || (ax.n_edges && !bp__grow(&ex->a, (void **)&ex->fences, &ex->cap_fences, 2 * (ex->n_fences + ax.n_edges),
                                               sizeof *ex->fences))) {
            s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
            goto done;
        }
        /* With copies, the ops also run in plan order: the copy tenants above
         * leave a race on about 1 % of random plans (docs/design/fallback.md) */
        for (int32_t st = 0; ex->n_cp && st + 1 < no; st++) ex_acc_edge(&ax, ex->order[st], ex->order[st + 1]);
        if (ax.oom || (ax.n_edges && !bp__grow(&ex->a, (void **)&ex->fences, &ex->cap_fences, 2 * (ex->n_fences + ax.n_edges),
                                               sizeof *ex->fences))) {
            s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
            goto done;
        }
        for (size_t k = 0; k < ax.n_edges; k++) {
            int32_t from = ax.edges[2 * k], to = ax.edges[2 * k + 1];
            assert(ex->step[from] < ex->step[to]);
            ex->fences[2 * ex->n_fences] = from;
            ex->fences[2 * ex->n_fences + 1] = to;
            ex->n_fences++;
        }
    }
    /* successors = data preds reversed + fences */
    for (int32_t op = 0; op < no; op++)
        for (int32_t k = pred_off[op]; k < pred_off[op + 1]; k++) { ex->succ_off[pred[k] + 1]++; ex->pend0[op]++; }
    for (size_t f = 0; f < ex->n_fences; f++) { ex->succ_off[ex->fences[2 * f] + 1]++; ex->pend0[ex->fences[2 * f + 1]]++; }
    for (int32_t op = 0; op < no; op++) ex->succ_off[op + 1] += ex->succ_off[op];
    if (!EX_ARR(ex, ex->succ, ex->succ_off[no])) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
    {
        int32_t *fill;
        if (!EX_ARR(ex, fill, no + 1)) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
        memcpy(fill, ex->succ_off, (size_t)no * sizeof *fill);
        for (int32_t op = 0; op < no; op++)
            for (int32_t k = pred_off[op]; k < pred_off[op + 1]; k++) ex->succ[fill[pred[k]]++] = op;
        for (size_t f = 0; f < ex->n_fences; f++) ex->succ[fill[ex->fences[2 * f]]++] = ex->fences[2 * f + 1];
    }
done:
    bp__free(&ex->a, pred_off, ((size_t)no + 1) * sizeof *pred_off);
    bp__free(&ex->a, pred, (g->n_io ? g->n_io : 1) * sizeof *pred);
    bp__free(&ex->a, tid, (size_t)(nt ? nt : 1) * sizeof *tid);
    bp__free(&ex->a, ten, (size_t)(ntt ? ntt : 1) * sizeof *ten);
    bp__free(&ex->a, amark, (size_t)(ntt ? ntt : 1) * sizeof *amark);
    bp__free(&ex->a, acc_off, ((size_t)ntt + 2) * sizeof *acc_off);
    bp__free(&ex->a, ax.edges, ax.cap_edges * sizeof *ax.edges);
    bp__free(&ex->a, acc, (acc_cap > g->n_io ? acc_cap : (g->n_io ? g->n_io : 1)) * sizeof *acc);
    return s;
}

static bp_status ex_new_in(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o, void *arena_at, bp_exec **out,
                           bp_error *err);
static const bp__exec_cf_vt ex_cf_vt = {ex_new_in, bp_exec_run, bp_exec_free};

bp_status bp_exec_new(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o, bp_exec **out, bp_error *err)
{
    return ex_new_in(g, plan, o, NULL, out, err);
}

/* bp_exec_new; arena_at, when not NULL, is where a body's arena lies inside
 * its parent's (planned mode). */
static bp_status ex_new_in(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o, void *arena_at, bp_exec **out,
                           bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "exec: NULL output");
    *out = NULL;
    if (!g) return bp__err(err, BP_ERR_USAGE, "exec: NULL graph");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized (call bp_graph_finalize)", g->name);
    bp_exec_options defaults;
    if (!o) { bp_exec_options_init(&defaults); o = &defaults; }
    if ((unsigned)o->mode > BP_EXEC_SAFE) return bp__err(err, BP_ERR_USAGE, "%s: unknown executor mode %d", g->name, (int)o->mode);
    if (o->threads < 1 || o->threads > 1024) return bp__err(err, BP_ERR_USAGE, "%s: threads %d is not in 1..1024", g->name, o->threads);
    if (o->mode == BP_EXEC_PLANNED && !plan) return bp__err(err, BP_ERR_USAGE, "%s: planned mode needs a plan", g->name);
    if (g->n_t > INT32_MAX / 2 || g->n_io > INT32_MAX / 2)
        return bp__err(err, BP_ERR_LIMIT, "%s: too many tensors for the executor", g->name);

    bp_exec *ex = bp__calloc(&g->alloc, 1, sizeof *ex);
    if (!ex) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    ex->a = g->alloc;
    ex->g = g;
    ex->o = *o;
    ex->o.pool = NULL;   /* copied below when used; the caller's may go away */
    ex->o.plan = NULL;
    ex->nt = (int32_t)g->n_t;
    ex->no = (int32_t)g->n_o;
    ex->threads = o->threads;
    ex->kdirty = true;
    ex->arena_base = arena_at;
    ex->pool_is_parents = arena_at != NULL;
    bp_status s = BP_OK;
    bp_pool_options popt;
    if (o->pool) { popt = *o->pool; ex->o.pool = &popt; }
    if (!plan) {
        bp_plan_options po;
        if (o->plan) po = *o->plan; else bp_plan_options_init(&po);
        if (!g->n_bodies) po.assign = BP_ASSIGN_NAIVE;   /* bodies must fit the reservations sized for po */
        po.budget = 0;
        po.fence_aware = 0;
        if ((s = bp_plan_graph(g, &po, &ex->own_plan, err))) goto fail;
        plan = ex->own_plan;
    }
    ex->plan = plan;
    ex->order = plan->order;
    int32_t nt = ex->nt, no = ex->no;
    if (!EX_ARR(ex, ex->step, no) || !EX_ARR(ex, ex->root, nt) || !EX_ARR(ex, ex->tbytes, nt) ||
        !EX_ARR(ex, ex->tptr, nt) || !EX_ARR(ex, ex->view_src, nt) || !EX_ARR(ex, ex->sk, nt) ||
        !EX_ARR(ex, ex->keep, nt) || !EX_ARR(ex, ex->external, nt) || !EX_ARR(ex, ex->mem_off, nt + 1) ||
        !EX_ARR(ex, ex->mem, nt) || !EX_ARR(ex, ex->sptr, nt) || !EX_ARR(ex, ex->scap, nt) ||
        !EX_ARR(ex, ex->refc0, nt) || !EX_ARR(ex, ex->refc, nt) || !EX_ARR(ex, ex->pin, nt) ||
        !EX_ARR(ex, ex->io_off, no + 1) || !EX_ARR(ex, ex->bufs, g->n_io) || !EX_ARR(ex, ex->kfn, no) ||
        !EX_ARR(ex, ex->kuser, no) || !EX_ARR(ex, ex->al_off, no + 1) || !EX_ARR(ex, ex->fr_off, no + 1) ||
        !EX_ARR(ex, ex->tc_off, no + 1) || !EX_ARR(ex, ex->succ_off, no + 1) || !EX_ARR(ex, ex->pend0, no) ||
        !EX_ARR(ex, ex->pend, no) || !EX_ARR(ex, ex->queue, no) || !EX_ARR(ex, ex->tdims, g->n_dims) ||
        !EX_ARR(ex, ex->ioshape, g->n_io)) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory preparing the executor", g->name);
        goto fail;
    }
    if (o->history && (!EX_ARR(ex, ex->op_t0, no) || !EX_ARR(ex, ex->op_t1, no) || !EX_ARR(ex, ex->op_thr, no) ||
                       !EX_ARR(ex, ex->s_alloc, nt) || !EX_ARR(ex, ex->s_free, nt) || !EX_ARR(ex, ex->s_alloc_thr, nt) ||
                       !EX_ARR(ex, ex->s_free_thr, nt) || !EX_ARR(ex, ex->s_addr, nt))) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory preparing the executor", g->name);
        goto fail;
    }
    if (o->check_hashes && !EX_ARR(ex, ex->io_hash, g->n_io)) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory preparing the executor", g->name);
        goto fail;
    }
    for (int32_t r = 0; r < nt; r++) atomic_init(&ex->refc[r], 0);
    for (int32_t op = 0; op < no; op++) atomic_init(&ex->pend[op], 0);
    atomic_init(&ex->n_done, 0);
    atomic_init(&ex->stop, 0);
    atomic_init(&ex->cur_bytes, 0);
    atomic_init(&ex->peak_bytes, 0);
    atomic_init(&ex->tick, 0);
    if ((s = ex_check_plan(ex, err))) goto fail;
    if ((s = ex_setup_memory(ex, err))) goto fail;
    if ((s = ex_setup_handles(ex, err))) goto fail;
    if ((s = ex_setup_ops(ex, err))) goto fail;
    if ((s = bp__exec_shapes_fill(ex, NULL, err))) goto fail;
    /* copies are replayed in planned mode; safe and dynamic mode keep every storage until its last use */
    if (plan->n_copies && o->mode == BP_EXEC_PLANNED && (s = bp__exec_copies_setup(ex, err))) goto fail;
    if (ex->threads > 1 && (s = ex_setup_deps(ex, err))) goto fail;
    if (g->n_bodies && (s = bp__exec_cf_setup(ex, &ex_cf_vt, err))) goto fail;
    if (pthread_mutex_init(&ex->mu, NULL)) { s = bp__err(err, BP_ERR_NOMEM, "%s: cannot create a mutex", g->name); goto fail; }
    if (pthread_cond_init(&ex->cv_work, NULL)) {
        pthread_mutex_destroy(&ex->mu);
        s = bp__err(err, BP_ERR_NOMEM, "%s: cannot create a condition variable", g->name);
        goto fail;
    }
    if (pthread_cond_init(&ex->cv_idle, NULL)) {
        pthread_cond_destroy(&ex->cv_work);
        pthread_mutex_destroy(&ex->mu);
        s = bp__err(err, BP_ERR_NOMEM, "%s: cannot create a condition variable", g->name);
        goto fail;
    }
    ex->sync_ok = true;
    if (ex->threads > 1) {
        void **args;
        if (!EX_ARR(ex, ex->tid, ex->threads) || !EX_ARR(ex, args, 2 * ex->threads)) {
            s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
            goto fail;
        }
        for (int i = 1; i < ex->threads; i++) {
            args[2 * i] = ex;
            args[2 * i + 1] = (void *)(intptr_t)i;
            if (pthread_create(&ex->tid[ex->n_tid], NULL, ex_worker_main, &args[2 * i])) {
                s = bp__err(err, BP_ERR_NOMEM, "%s: cannot start worker thread %d of %d", g->name, i, ex->threads);
                goto fail;
            }
            ex->n_tid++;
        }
    }
    ex->o.pool = NULL;
    *out = ex;
    return BP_OK;
fail:
    bp_exec_free(ex);
    return s;
}
