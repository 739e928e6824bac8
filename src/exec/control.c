/*
 * control.c — running control-flow ops: each body of the graph gets an
 * executor of its own (made through the hooks exec.c passes in, so this file
 * sits below it), over the same memory: in planned mode its arena is the
 * parent's arena at the body's base, and its inputs are bound, before every
 * run, to the parent's tensors (outer values) or to the slots at the start
 * of the op's reservation (iteration number, condition, carried values,
 * slices).  The bodies run with the caller's kernels, one op at a time.
 *   If:   the branch is the condition's first byte (non-zero: then); an If
 *         whose condition folded at import has one body, which always runs.
 *         Its outputs are copied into the op's outputs.
 *   Loop: runs while i < M (input 0, an i64; no input: no bound) and the
 *         condition's first byte is non-zero, at most max_loop_trips times;
 *         after each iteration carried values and the condition go back to
 *         their slots and stacked outputs to row i of the op's output (rows
 *         not written are zero).  More iterations than a stacked output was
 *         planned for is an error.
 *   Scan: one iteration per row (axis 0) of the scanned inputs.
 * Digest kernels make conditions and trip counts hashes of the inputs, so a
 * planned and a safe run take the same branches and iterations.
 */
#include "exec/exec_internal.h"

#include <string.h>

bp_status bp__exec_cf_setup(bp_exec *ex, const bp__exec_cf_vt *vt, bp_error *err)
{
    const bp_graph *g = ex->g;
    size_t n = g->n_bodies;
    ex->cf_vt = vt;
    ex->child = bp__calloc(&ex->a, n, sizeof *ex->child);
    ex->slot_off = bp__calloc(&ex->a, n, sizeof *ex->slot_off);
    ex->is_cf = bp__calloc(&ex->a, ex->no ? (size_t)ex->no : 1, 1);
    if (!ex->child || !ex->slot_off || !ex->is_cf) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    ex->n_child = (int32_t)n;
    if (ex->plan->n_bodies != (int32_t)n)
        return bp__err(err, BP_ERR_USAGE, "%s: the plan has no plans for the graph's %zu bodies", g->name, n);
    bp_exec_options o = ex->o;
    o.threads = 1;
    o.history = 0;
    o.pool = NULL;   /* check_hashes stays: bp_exec_verify compares the bodies' tensors too */
    if (ex->plan->alignment == 0) return bp__err(err, BP_ERR_USAGE, "%s: the plan has no alignment", g->name);
    for (size_t i = 0; i < n; i++) {
        const bp__body *b = &g->bodies[i];
        ex->is_cf[b->op] = 1;
        ex->slot_off[i] = bp__calloc(&ex->a, b->n_io ? (size_t)b->n_io : 1, sizeof **ex->slot_off);
        if (!ex->slot_off[i]) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        uint64_t slots;
        bp_status s = bp__body_slots(g, b, ex->plan->alignment, ex->slot_off[i], &slots, err);
        const bp_plan *bp = bp_plan_body(ex->plan, (int32_t)i);
        void *at = ex->arena_base && bp ? (char *)ex->arena_base + ex->plan->body_base[i] : NULL;
        /* the body's plan in every mode (safe and dynamic runs take its order) */
        if (!s) s = vt->new_in(b->g, bp, &o, ex->o.mode == BP_EXEC_PLANNED ? at : NULL, &ex->child[i], err);
        if (s) return s;
    }
    return BP_OK;
}

void bp__exec_cf_free(bp_exec *ex)
{
    for (int32_t i = 0; i < ex->n_child; i++) {
        if (ex->child[i]) ex->cf_vt->free(ex->child[i]);
        bp__free(&ex->a, ex->slot_off[i], (size_t)(ex->g->bodies[i].n_io ? ex->g->bodies[i].n_io : 1) * sizeof **ex->slot_off);
    }
    bp__free(&ex->a, ex->child, (size_t)ex->n_child * sizeof *ex->child);
    bp__free(&ex->a, ex->slot_off, (size_t)ex->n_child * sizeof *ex->slot_off);
    bp__free(&ex->a, ex->is_cf, ex->no ? (size_t)ex->no : 1);
}

/* The bytes of body i's io q as the child sees it. */
static void *cf_body_ptr(const bp_exec *ex, int32_t i, int32_t q) { return ex->child[i]->tptr[ex->g->bodies[i].io[q].body_tensor]; }
static uint64_t cf_body_bytes(const bp_exec *ex, int32_t i, int32_t q) { return ex->child[i]->tbytes[ex->g->bodies[i].io[q].body_tensor]; }
static char *cf_slot(const bp_exec *ex, int32_t i, int32_t q) { return (char *)ex->tptr[ex->g->bodies[i].reserve] + ex->slot_off[i][q]; }

/* Copies min(n, m) bytes; zero-fills the rest of dst. */
static void cf_copy(void *dst, uint64_t n, const void *src, uint64_t m)
{
    uint64_t k = n < m ? n : m;
    if (k && dst != src) memmove(dst, src, (size_t)k);
    if (n > k) memset((char *)dst + k, 0, (size_t)(n - k));
}

/* Binds body i's inputs: outer values to the parent's tensors, the rest to their slots. */
static void cf_bind(bp_exec *ex, int32_t i)
{
    const bp__body *b = &ex->g->bodies[i];
    for (int32_t q = 0; q < b->n_io; q++) {
        const bp_body_io *e = &b->io[q];
        if (e->kind == BP_BODY_OUTER) ex->child[i]->tptr[e->body_tensor] = ex->tptr[e->parent];
        else if (ex->slot_off[i][q] != BP_NO_OFFSET) ex->child[i]->tptr[e->body_tensor] = cf_slot(ex, i, q);
    }
}

static bp_status cf_run_body(bp_exec *ex, int32_t i, bp_error *err)
{
    cf_bind(ex, i);
    bp_status s = ex->cf_vt->run(ex->child[i], NULL, err);
    if (s == BP_ERR_KERNEL && err) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        bp__err(err, s, "%s: op \"%s\", %s body: %s", ex->g->name, bp__names_get(&ex->g->onames, ex->g->bodies[i].op),
                bp_body_kind_name(ex->g->bodies[i].kind), m);
    }
    return s;
}

/* Results (parent >= 0) of body i: from the carried slot that holds the
 * latest value, else from the body's output. */
static void cf_results(bp_exec *ex, int32_t i, bool ran)
{
    const bp__body *b = &ex->g->bodies[i];
    for (int32_t q = 0; q < b->n_io; q++) {
        const bp_body_io *e = &b->io[q];
        if (e->kind != BP_BODY_RESULT || e->parent < 0) continue;
        const void *src = ran ? cf_body_ptr(ex, i, q) : NULL;
        uint64_t n = ran ? cf_body_bytes(ex, i, q) : 0;
        for (int32_t c = 0; c < b->n_io; c++)
            if (b->io[c].kind == BP_BODY_CARRIED && b->io[c].link == q) { src = cf_slot(ex, i, c); n = cf_body_bytes(ex, i, c); }
        cf_copy(ex->tptr[e->parent], ex->tbytes[e->parent], src, src ? n : 0);
    }
}

/* First byte of a tensor as a condition (false when it has no bytes). */
static bool cf_true(const void *p, uint64_t n) { return p && n && *(const uint8_t *)p != 0; }

static bp_status cf_if(bp_exec *ex, const int32_t *bi, int nb, bp_error *err)
{
    int32_t i = bi[0];
    if (nb > 1) {
        int32_t cond = bp__op_in(ex->g, ex->g->bodies[i].op)[0];
        bool t = cf_true(ex->tptr[cond], ex->tbytes[cond]);
        for (int k = 0; k < nb; k++)
            if ((ex->g->bodies[bi[k]].kind == BP_BODY_THEN) == t) i = bi[k];
    }
    bp_status s = cf_run_body(ex, i, err);
    if (!s) cf_results(ex, i, true);
    return s;
}

/* Loop and Scan: slots filled, iterations, stacked rows. */
static bp_status cf_iterate(bp_exec *ex, int32_t i, bp_error *err)
{
    const bp__body *b = &ex->g->bodies[i];
    const bp_graph *g = ex->g;
    int64_t trips = ex->o.max_loop_trips > 0 ? ex->o.max_loop_trips : 65536;
    bool loop = b->kind == BP_BODY_LOOP, cond = true;
    int32_t m = loop && g->o[b->op].n_in > 0 ? bp__op_in(g, b->op)[0] : -1;
    for (int32_t q = 0; q < b->n_io && m >= 0; q++)
        if (b->io[q].kind == BP_BODY_COND && b->io[q].parent == m) m = -1;   /* no trip count: input 0 is the condition */
    if (m >= 0) {
        if (ex->tbytes[m] >= 8) {
            int64_t v;
            memcpy(&v, ex->tptr[m], sizeof v);
            if (v < trips) trips = v < 0 ? 0 : v;
        }
    }
    for (int32_t q = 0; q < b->n_io; q++) {
        const bp_body_io *e = &b->io[q];
        uint64_t n = cf_body_bytes(ex, i, q);
        if (e->kind == BP_BODY_COND) {
            cond = e->parent < 0 || cf_true(ex->tptr[e->parent], ex->tbytes[e->parent]);
            memset(cf_slot(ex, i, q), cond, (size_t)n);
        } else if (e->kind == BP_BODY_CARRIED) {
            cf_copy(cf_slot(ex, i, q), n, ex->tptr[e->parent], ex->tbytes[e->parent]);
        } else if (e->kind == BP_BODY_SLICE && n && ex->tbytes[e->parent] / n < (uint64_t)trips) {
            trips = (int64_t)(ex->tbytes[e->parent] / n);
        } else if (e->kind == BP_BODY_STACK) {
            memset(ex->tptr[e->parent], 0, (size_t)ex->tbytes[e->parent]);
        }
    }
    int64_t it = 0;
    for (; it < trips && cond; it++) {
        for (int32_t q = 0; q < b->n_io; q++) {
            const bp_body_io *e = &b->io[q];
            uint64_t n = cf_body_bytes(ex, i, q);
            if (e->kind == BP_BODY_ITER) cf_copy(cf_slot(ex, i, q), n, &it, sizeof it);
            if (e->kind == BP_BODY_SLICE) cf_copy(cf_slot(ex, i, q), n, (char *)ex->tptr[e->parent] + (uint64_t)it * n, n);
        }
        bp_status s = cf_run_body(ex, i, err);
        if (s) return s;
        for (int32_t q = 0; q < b->n_io; q++) {
            const bp_body_io *e = &b->io[q];
            uint64_t n = cf_body_bytes(ex, i, q);
            if (e->kind == BP_BODY_STACK) {
                if ((uint64_t)(it + 1) * n > ex->tbytes[e->parent])
                    return bp__err(err, BP_ERR_KERNEL, "%s: op \"%s\": iteration %lld writes past the end of \"%s\" (%llu bytes, planned for %llu iterations)",
                                   g->name, bp__names_get(&g->onames, b->op), (long long)it, bp__names_get(&g->tnames, e->parent),
                                   (unsigned long long)ex->tbytes[e->parent], (unsigned long long)(n ? ex->tbytes[e->parent] / n : 0));
                cf_copy((char *)ex->tptr[e->parent] + (uint64_t)it * n, n, cf_body_ptr(ex, i, q), n);
            }
            if ((e->kind == BP_BODY_CARRIED || e->kind == BP_BODY_COND) && e->link >= 0)
                cf_copy(cf_slot(ex, i, q), n, cf_body_ptr(ex, i, e->link), cf_body_bytes(ex, i, e->link));
            if (e->kind == BP_BODY_COND) cond = cf_true(cf_slot(ex, i, q), n);
        }
    }
    cf_results(ex, i, it > 0);
    return BP_OK;
}

bp_status bp__exec_cf_run(bp_exec *ex, int32_t op, bp_error *err)
{
    int32_t bi[BP__EXEC_MAX_BODIES];
    int32_t nb = bp__op_bodies(ex->g, op, bi, BP__EXEC_MAX_BODIES);
    if (nb < 1 || nb > BP__EXEC_MAX_BODIES)
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: op \"%s\" has %d bodies; the executor runs 1..%d", ex->g->name,
                       bp__names_get(&ex->g->onames, op), (int)nb, BP__EXEC_MAX_BODIES);
    bp_body_kind k = ex->g->bodies[bi[0]].kind;
    if (k == BP_BODY_THEN || k == BP_BODY_ELSE) return cf_if(ex, bi, nb, err);
    return cf_iterate(ex, bi[0], err);
}
