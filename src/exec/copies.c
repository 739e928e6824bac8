/*
 * copies.c — the executor's replay of recompute and offload (planned mode;
 * a plan's copies, docs/FALLBACK.md).
 *
 * A storage with copies has several residencies: its first placement (from
 * its producer to the first copy's evict step) and one per copy (steps
 * first..end, end being the next copy's evict step or the storage's last
 * use).  At any step one residency is current: the last copy whose first
 * step is at or before it, else the first placement.  Every address is
 * fixed in the arena, so bp__exec_copies_setup resolves, once:
 *   - per op input/output slot that touches such a storage, the address of
 *     the member in the residency current at the op's step (cptr);
 *   - per copy: its address, the previous residency's (what an offload
 *     reads), and for a recompute the kernel's buffers (its inputs in their
 *     residencies current at that step, its output at the copy);
 *   - per op, the copies made before it runs (prefetches first, then
 *     recomputes in their ops' plan order, so a recompute reads what another
 *     made at the same step) and the offloads after it.
 * At run time an offload takes a host buffer from the executor's host pool
 * (the size-class pool, bp_pool_alloc) and copies the storage's bytes into
 * it; the prefetch copies them back and returns the buffer; a recompute
 * calls the op's kernel again (the same bp_exec_call contract).
 *
 * Parallel replay (bp__exec_copies_tenants, bp__exec_copies_edges): each
 * copy is one more tenant of the fence builder (its bytes, written by the
 * op of its first step, which runs the copy before its kernel); an op's
 * access to a storage counts for the residency current at its step, a
 * recompute's reads and an offload's read count for the op that runs them;
 * and edges order each residency's maker before its other accessors and an
 * offload before its prefetch, where data dependencies need not.
 */
#include "exec/exec_internal.h"

#include <assert.h>
#include <string.h>

/* The index of the copy of root r current at step s, -1: its first placement. */
int32_t bp__exec_copy_at(const bp_exec *ex, int32_t r, int32_t s)
{
    int32_t lo = ex->c_beg[r], hi = ex->c_beg[r + 1];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (ex->cp[mid].first <= s) lo = mid + 1; else hi = mid;
    }
    return lo - 1 >= ex->c_beg[r] ? lo - 1 : -1;
}

void *bp__exec_copy_addr(const bp_exec *ex, int32_t t, int32_t c)
{
    if (c < 0) return ex->tptr[t];
    int32_t r = ex->root[t];
    const bp_tensor_plan *tp = ex->plan->tp;
    uint64_t base = (tp[t].offset != BP_NO_OFFSET ? tp[t].offset : tp[r].offset) + ex->voff[t];
    return (char *)ex->arena_base + ex->cp[c].offset + (base - tp[r].offset);
}

static int cmp_pre(const bp_exec *ex, int32_t a, int32_t b)
{
    const bp_copy *x = &ex->cp[a], *y = &ex->cp[b];
    int kx = x->kind == BP_COPY_RECOMPUTE, ky = y->kind == BP_COPY_RECOMPUTE;
    if (kx != ky) return kx - ky;
    if (kx && x->op != y->op) return ex->step[x->op] < ex->step[y->op] ? -1 : 1;
    return a < b ? -1 : a > b;
}

bp_status bp__exec_copies_setup(bp_exec *ex, bp_error *err)
{
    const bp_graph *g = ex->g;
    const bp_plan *p = ex->plan;
    int32_t nt = ex->nt, no = ex->no, nc = p->n_copies;
    ex->cp = p->copies;
    ex->n_cp = nc;
#define CP_ARR(ptr, count) (((ptr) = bp__exec_alloc(ex, (size_t)(count) * sizeof *(ptr))) != NULL)
    if (!CP_ARR(ex->c_beg, nt + 1) || !CP_ARR(ex->c_size, nt) || !CP_ARR(ex->c_ptr, nc) || !CP_ARR(ex->c_prev, nc) ||
        !CP_ARR(ex->c_host, nc) || !CP_ARR(ex->c_rbuf, nc) || !CP_ARR(ex->cptr, g->n_io) || !CP_ARR(ex->pre_off, no + 1) ||
        !CP_ARR(ex->pre, nc) || !CP_ARR(ex->post_off, no + 1) || !CP_ARR(ex->post, nc))
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory preparing the copies", g->name);
    /* the table: sorted by (tensor, first), roots in the arena, steps in order */
    for (int32_t c = 0; c < nc; c++) {
        const bp_copy *x = &ex->cp[c];
        int32_t r = x->tensor;
        if (r < 0 || r >= nt || ex->root[r] != r || ex->sk[r] != BP__SK_ARENA || x->evict < 0 || x->first <= x->evict ||
            x->first >= no || (c && (ex->cp[c - 1].tensor > r || (ex->cp[c - 1].tensor == r && ex->cp[c - 1].first > x->evict))))
            return bp__err(err, BP_ERR_INVALID, "%s: copy %d of the plan (tensor %d, steps %d..%d) is not a copy of a storage in the arena "
                           "after its previous one", g->name, (int)c, (int)r, (int)x->evict, (int)x->first);
        if (x->kind == BP_COPY_RECOMPUTE) {
            int32_t op = x->op;
            if (op < 0 || op >= no || g->o[op].n_out != 1 || bp__op_out(g, op)[0] != r || ex->mem_off[r + 1] - ex->mem_off[r] != 1 ||
                (ex->is_cf && ex->is_cf[op]))
                return bp__err(err, BP_ERR_INVALID, "%s: copy %d recomputes tensor \"%s\" with an op that is not its only producer "
                               "with one output", g->name, (int)c, bp_graph_tensor_name(g, r));
        } else if (x->kind != BP_COPY_PREFETCH) {
            return bp__err(err, BP_ERR_INVALID, "%s: copy %d has an unknown kind %d", g->name, (int)c, (int)x->kind);
        }
        ex->c_beg[r + 1]++;
    }
    for (int32_t r = 0; r < nt; r++) ex->c_beg[r + 1] += ex->c_beg[r];
    for (int32_t r = 0; r < nt; r++) {
        ex->c_size[r] = 0;
        if (ex->root[r] != r) continue;
        for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++) {
            int32_t t = ex->mem[k];
            const bp_tensor_plan *tp = p->tp;
            uint64_t end = (tp[t].offset != BP_NO_OFFSET ? tp[t].offset : tp[r].offset) + ex->voff[t] - tp[r].offset + ex->tbytes[t];
            if (end > ex->c_size[r]) ex->c_size[r] = end;
        }
    }
    for (int32_t c = 0; c < nc; c++) {
        int32_t r = ex->cp[c].tensor;
        uint64_t end;
        if (!bp__add_u64(ex->cp[c].offset, ex->c_size[r], &end) || end > ex->arena_bytes)
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": its copy at offset %llu (%llu bytes) does not fit the plan's arena of %llu bytes",
                           g->name, bp_graph_tensor_name(g, r), (unsigned long long)ex->cp[c].offset,
                           (unsigned long long)ex->c_size[r], (unsigned long long)ex->arena_bytes);
        ex->c_ptr[c] = bp__exec_copy_addr(ex, r, c);
        ex->c_prev[c] = c > ex->c_beg[r] ? ex->c_ptr[c - 1] : ex->tptr[r];
        ex->c_host[c] = NULL;
        ex->c_rbuf[c] = NULL;
    }
    /* every slot touching a storage with copies: the member in its residency */
    for (int32_t op = 0; op < no; op++) {
        const int32_t *io = bp__op_in(g, op);
        for (int k = 0; k < g->o[op].n_in + g->o[op].n_out; k++) {
            int32_t r = ex->root[io[k]];
            int32_t c = ex->c_beg[r] < ex->c_beg[r + 1] ? bp__exec_copy_at(ex, r, ex->step[op]) : -1;
            ex->cptr[ex->io_off[op] + k] = c >= 0 ? bp__exec_copy_addr(ex, io[k], c) : NULL;
        }
    }
    /* recomputes: the kernel's buffers at the copy's step */
    for (int32_t c = 0; c < nc; c++) {
        if (ex->cp[c].kind != BP_COPY_RECOMPUTE) continue;
        int32_t op = ex->cp[c].op, s = ex->cp[c].first, n = g->o[op].n_in + g->o[op].n_out;
        if (!CP_ARR(ex->c_rbuf[c], n)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory preparing the copies", g->name);
        const int32_t *io = bp__op_in(g, op);
        for (int k = 0; k < n; k++) {
            bp_exec_buf *b = &ex->c_rbuf[c][k];
            *b = ex->bufs[ex->io_off[op] + k];
            int32_t r = ex->root[io[k]];
            if (k >= g->o[op].n_in) { b->data = ex->c_ptr[c]; continue; }
            if (ex->sk[r] == BP__SK_POOL)
                return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\" is recomputed at step %d, but its input \"%s\" is not in the arena",
                               g->name, bp__names_get(&g->onames, op), (int)s, bp_graph_tensor_name(g, io[k]));
            int32_t cc = ex->c_beg[r] < ex->c_beg[r + 1] ? bp__exec_copy_at(ex, r, s) : -1;
            b->data = cc >= 0 ? bp__exec_copy_addr(ex, io[k], cc) : NULL;   /* NULL: the tensor's own pointer at run time */
        }
    }
    /* per op: copies made before it, offloads after it */
    for (int32_t c = 0; c < nc; c++) {
        ex->pre_off[ex->order[ex->cp[c].first] + 1]++;
        if (ex->cp[c].kind == BP_COPY_PREFETCH) ex->post_off[ex->order[ex->cp[c].evict] + 1]++;
    }
    for (int32_t op = 0; op < no; op++) { ex->pre_off[op + 1] += ex->pre_off[op]; ex->post_off[op + 1] += ex->post_off[op]; }
    {
        int32_t *fa, *fb;
        if (!CP_ARR(fa, no + 1) || !CP_ARR(fb, no + 1)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory preparing the copies", g->name);
        memcpy(fa, ex->pre_off, (size_t)(no + 1) * sizeof *fa);
        memcpy(fb, ex->post_off, (size_t)(no + 1) * sizeof *fb);
        for (int32_t c = 0; c < nc; c++) {
            int32_t op = ex->order[ex->cp[c].first], k = fa[op]++;
            while (k > ex->pre_off[op] && cmp_pre(ex, ex->pre[k - 1], c) > 0) { ex->pre[k] = ex->pre[k - 1]; k--; }  /* insertion: few per op */
            ex->pre[k] = c;
            if (ex->cp[c].kind == BP_COPY_PREFETCH) ex->post[fb[ex->order[ex->cp[c].evict]]++] = c;
        }
    }
    bp_pool_options ho;
    bp_pool_options_init(&ho);
    ho.alloc = &ex->a;
    if (ex->o.pool) ho.alignment = ex->o.pool->alignment;   /* host memory (mmap), whatever the arena's backend */
    return bp_pool_new(&ho, &ex->hpool, err);
#undef CP_ARR
}

bp_status bp__exec_copies_pre(bp_exec *ex, int32_t op, int thr, bp_error *err)
{
    const bp_graph *g = ex->g;
    for (int32_t k = ex->pre_off[op]; k < ex->pre_off[op + 1]; k++) {
        int32_t c = ex->pre[k];
        const bp_copy *x = &ex->cp[c];
        uint64_t n = ex->c_size[x->tensor];
        if (x->kind == BP_COPY_PREFETCH) {
            assert(ex->c_host[c]);   /* the offload ran: an edge orders it first */
            if (n) memcpy(ex->c_ptr[c], ex->c_host[c], (size_t)n);
            bp_pool_dealloc(ex->hpool, ex->c_host[c], NULL);
            ex->c_host[c] = NULL;
            continue;
        }
        int32_t rop = x->op;
        const bp__op *o = &g->o[rop];
        bp_exec_buf b[BP__EXEC_RBUF_MAX], *bb = b;
        int nb = o->n_in + o->n_out;
        if (nb > BP__EXEC_RBUF_MAX) bb = ex->c_rbuf[c];   /* wide ops: filled in place (one run at a time) */
        const int32_t *io = bp__op_in(g, rop);
        for (int i = 0; i < nb; i++) {
            bb[i] = ex->c_rbuf[c][i];
            if (!bb[i].data) bb[i].data = ex->tptr[io[i]];
            bb[i].bytes = ex->tbytes[io[i]];
        }
        bp_exec_call call = {g, rop, bp__names_get(&g->onames, rop), bp__names_get(&g->types, o->type), o->n_in, 1, bb, bb + o->n_in,
                             thr, ex->ioshape + ex->io_off[rop], ex->ioshape + ex->io_off[rop] + o->n_in, 0, bb + o->n_in + 1};
        bp_error kerr;
        kerr.status = BP_OK;
        kerr.msg[0] = 0;
        int rc = ex->kfn[rop](ex->kuser[rop], &call, &kerr);
        if (rc) {
            kerr.msg[sizeof kerr.msg - 1] = 0;
            return bp__err(err, BP_ERR_KERNEL, "%s: op \"%s\" (%s), recomputed before step %d: the kernel failed (code %d)%s%s", g->name,
                           call.op_name, call.op_type, (int)x->first, rc, kerr.msg[0] ? ": " : "", kerr.msg);
        }
        atomic_fetch_add_explicit(&ex->n_recomputed, 1, memory_order_relaxed);
    }
    return BP_OK;
}

bp_status bp__exec_copies_post(bp_exec *ex, int32_t op, bp_error *err)
{
    for (int32_t k = ex->post_off[op]; k < ex->post_off[op + 1]; k++) {
        int32_t c = ex->post[k];
        int32_t r = ex->cp[c].tensor;
        uint64_t n = ex->c_size[r];
        void *h = NULL;
        bp_status s = bp_pool_alloc(ex->hpool, n ? n : 1, &h, err);
        if (s)
            return bp__err(err, s, "%s: tensor \"%s\": no host buffer of %llu bytes to offload it to after step %d (%s)", ex->g->name,
                           bp_graph_tensor_name(ex->g, r), (unsigned long long)n, (int)ex->cp[c].evict, err ? err->msg : "");
        if (n) memcpy(h, ex->c_prev[c], (size_t)n);
        ex->c_host[c] = h;
        atomic_fetch_add_explicit(&ex->n_offloaded, 1, memory_order_relaxed);
    }
    return BP_OK;
}

void bp__exec_copies_release(bp_exec *ex)
{
    for (int32_t c = 0; c < ex->n_cp; c++)
        if (ex->c_host && ex->c_host[c]) { bp_pool_dealloc(ex->hpool, ex->c_host[c], NULL); ex->c_host[c] = NULL; }
}

/* ----------------------------------------------------- parallel replay */

int32_t bp__exec_copies_tenants(const bp_exec *ex, int32_t first, bp__tenant *ten)
{
    for (int32_t c = 0; c < ex->n_cp; c++) {
        uint64_t lo = ex->cp[c].offset, n = ex->c_size[ex->cp[c].tensor];
        ten[first + c] = (bp__tenant){ex->order[ex->cp[c].first], lo, lo + (n ? n : 1)};
    }
    return ex->n_cp;
}

/* Calls add(ctx, t, c, op) for every access of op to tensor t in residency c
 * (-1: the first placement) that the copies make: a recompute's reads and
 * write, an offload's read of every member.  Data accesses of ops are the
 * caller's (bp__exec_copy_at tells their residency). */
void bp__exec_copies_accesses(const bp_exec *ex, void (*add)(void *ctx, int32_t t, int32_t c, int32_t op), void *ctx)
{
    const bp_graph *g = ex->g;
    for (int32_t c = 0; c < ex->n_cp; c++) {
        const bp_copy *x = &ex->cp[c];
        int32_t r = x->tensor, at = ex->order[x->first];
        add(ctx, r, c, at);
        if (x->kind == BP_COPY_RECOMPUTE) {
            const int32_t *in = bp__op_in(g, x->op);
            for (int i = 0; i < g->o[x->op].n_in; i++) {
                int32_t u = ex->root[in[i]];
                add(ctx, in[i], ex->c_beg[u] < ex->c_beg[u + 1] ? bp__exec_copy_at(ex, u, x->first) : -1, at);
            }
        } else {
            int32_t prev = c > ex->c_beg[r] ? c - 1 : -1, ev = ex->order[x->evict];
            for (int32_t k = ex->mem_off[r]; k < ex->mem_off[r + 1]; k++) {   /* the members written by then */
                int32_t pr = g->t[ex->mem[k]].producer;
                if (pr < 0 || ex->step[pr] <= x->evict) add(ctx, ex->mem[k], prev, ev);
            }
        }
    }
}

