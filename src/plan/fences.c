/*
 * fences.c — fences for parallel replay, and the fence-aware assigner.
 *
 * A plan proves two tensors disjoint in time only for its sequential order.
 * Run on N threads, the producer of a tensor that reuses bytes could start
 * while a reader of the bytes' previous tenant is still running.  A fence is
 * an extra dependency "previous tenant's accessor -> new tenant's producer".
 *
 * Fences (bp__fences_build): walk the ops in plan order; for each tenant the
 * op produces, a segment map over the address space names the previous
 * owners of its bytes (only the latest owner of each byte matters: an older
 * tenant was already fenced before the latest one).  Every op that accessed
 * a previous owner is a candidate; candidates are tried from the latest step
 * down, and a fence is added only when the candidate does not already reach
 * the producer (bounded backward search, pruned by step and by longest-path
 * level; fences added count as edges).  Trying later candidates first means
 * a fence that an earlier-added one implies is never added, so the set is
 * minimal for the orderings it must enforce (up to the search budget, where
 * it errs towards a fence too many).  Cost: O(candidates x budget) searches
 * plus O(log S + k) segment-map work per tenant.
 *
 * Fence-aware assignment (bp__assign_fence_aware): an online sweep over the
 * storages by start step.  Each placement looks at the free holes of the
 * arena (bytes whose last tenant has ended) and prefers, in order: a hole
 * whose previous tenants are all already ordered before the new producer by
 * data dependencies (no fence needed), best fit; growing the arena instead,
 * while it stays within 1/8 of the peak live bytes; any hole, best fit.
 */
#include "plan/fences.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ reachability */

bp_status bp__reach_init(bp__reach *R, const bp_allocator *a, int32_t n, const int32_t *step,
                         const int32_t *pred_off, const int32_t *pred, bp_error *err)
{
    memset(R, 0, sizeof *R);
    R->a = a;
    R->n = n;
    R->step = step;
    R->pred_off = pred_off;
    R->pred = pred;
    R->budget = 512;
    size_t nn = n ? (size_t)n : 1;
    R->level = bp__calloc(a, nn, sizeof *R->level);
    R->fhead = bp__alloc(a, nn * sizeof *R->fhead);
    R->mark = bp__calloc(a, nn, sizeof *R->mark);
    if (!R->level || !R->fhead || !R->mark) {
        bp__reach_free(R);
        return bp__err(err, BP_ERR_NOMEM, "fences: out of memory (%d ops)", (int)n);
    }
    for (int32_t i = 0; i < n; i++) R->fhead[i] = -1;
    return BP_OK;
}

void bp__reach_free(bp__reach *R)
{
    size_t nn = R->n ? (size_t)R->n : 1;
    bp__free(R->a, R->level, nn * sizeof *R->level);
    bp__free(R->a, R->fhead, nn * sizeof *R->fhead);
    bp__free(R->a, R->mark, nn * sizeof *R->mark);
    bp__free(R->a, R->fnext, R->capf_next * sizeof *R->fnext);
    bp__free(R->a, R->ffrom, R->capf_from * sizeof *R->ffrom);
    bp__free(R->a, R->stack, R->cap_stack * sizeof *R->stack);
    memset(R, 0, sizeof *R);
}

bool bp__reach_add_fence(bp__reach *R, int32_t from, int32_t to)
{
    if (!bp__grow(R->a, (void **)&R->fnext, &R->capf_next, R->nf + 1, sizeof *R->fnext) ||
        !bp__grow(R->a, (void **)&R->ffrom, &R->capf_from, R->nf + 1, sizeof *R->ffrom))
        return false;
    R->ffrom[R->nf] = from;
    R->fnext[R->nf] = R->fhead[to];
    R->fhead[to] = (int32_t)R->nf++;
    return true;
}

void bp__reach_finish(bp__reach *R, int32_t op)
{
    int32_t lv = 0;
    for (int32_t k = R->pred_off[op]; k < R->pred_off[op + 1]; k++)
        if (R->level[R->pred[k]] + 1 > lv) lv = R->level[R->pred[k]] + 1;
    for (int32_t f = R->fhead[op]; f >= 0; f = R->fnext[f])
        if (R->level[R->ffrom[f]] + 1 > lv) lv = R->level[R->ffrom[f]] + 1;
    R->level[op] = lv;
}

bool bp__reach_query(bp__reach *R, int32_t from, int32_t to)
{
    if (from == to || from < 0) return true;  /* from < 0: written before the run */
    if (R->step[from] >= R->step[to] || R->level[from] >= R->level[to]) return false;
    if (++R->cur == INT32_MAX) { memset(R->mark, 0, (size_t)R->n * sizeof *R->mark); R->cur = 1; }
    if (!bp__grow(R->a, (void **)&R->stack, &R->cap_stack, 16, sizeof *R->stack)) return false;
    size_t sp = 0;
    int32_t visited = 0;
    R->stack[sp++] = to;
    R->mark[to] = R->cur;
    const int32_t sf = R->step[from], lf = R->level[from];
    while (sp) {
        int32_t u = R->stack[--sp];
        if (++visited > R->budget) { R->gave_up++; return false; }
        int32_t k = R->pred_off[u], ke = R->pred_off[u + 1], f = R->fhead[u];
        for (;;) {
            int32_t v;
            if (k < ke) v = R->pred[k++];
            else if (f >= 0) { v = R->ffrom[f]; f = R->fnext[f]; }
            else break;
            if (v == from) return true;
            if (R->mark[v] == R->cur) continue;
            R->mark[v] = R->cur;
            if (R->step[v] <= sf || R->level[v] <= lf) continue;
            if (!bp__grow(R->a, (void **)&R->stack, &R->cap_stack, sp + 1, sizeof *R->stack)) return false;
            R->stack[sp++] = v;
        }
    }
    return false;
}

bp_status bp__op_preds(const bp_graph *g, const bp_allocator *a, int32_t **pred_off_out, int32_t **pred_out,
                         size_t *n_edges, bp_error *err)
{
    size_t no = g->n_o;
    int32_t *off = bp__alloc(a, (no + 1) * sizeof *off);
    int32_t *mark = bp__alloc(a, (no ? no : 1) * sizeof *mark);
    int32_t *pred = bp__alloc(a, (g->n_io ? g->n_io : 1) * sizeof *pred);
    if (!off || !mark || !pred) {
        bp__free(a, off, (no + 1) * sizeof *off);
        bp__free(a, mark, (no ? no : 1) * sizeof *mark);
        bp__free(a, pred, (g->n_io ? g->n_io : 1) * sizeof *pred);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory building dependencies", g->name);
    }
    for (size_t i = 0; i < no; i++) mark[i] = -1;
    size_t n = 0;
    for (size_t op = 0; op < no; op++) {
        off[op] = (int32_t)n;
        const int32_t *in = bp__op_in(g, (int32_t)op);
        for (int i = 0; i < g->o[op].n_in; i++) {
            int32_t p = g->t[in[i]].producer;
            if (p < 0 || p == (int32_t)op || mark[p] == (int32_t)op) continue;
            mark[p] = (int32_t)op;
            pred[n++] = p;
        }
    }
    off[no] = (int32_t)n;
    bp__free(a, mark, (no ? no : 1) * sizeof *mark);
    *pred_off_out = off;
    *pred_out = pred;
    *n_edges = n;
    return BP_OK;
}

/* ---------------------------------------------------------- segment map */

void bp__segmap_free(bp__segmap *m)
{
    bp__free(m->a, m->s, m->cap * sizeof *m->s);
    m->s = NULL;
    m->n = m->cap = 0;
}

bool bp__segmap_set(bp__segmap *m, uint64_t lo, uint64_t hi, int32_t owner,
                    int32_t **prev, size_t *n_prev, size_t *cap_prev)
{
    /* first segment with hi > lo */
    size_t L = 0, R = m->n;
    while (L < R) { size_t mid = (L + R) / 2; if (m->s[mid].hi <= lo) L = mid + 1; else R = mid; }
    size_t i = L, j = L;
    size_t n0 = *n_prev;
    while (j < m->n && m->s[j].lo < hi) {
        int32_t o = m->s[j].owner;
        bool seen = false;
        for (size_t k = n0; k < *n_prev; k++) if ((*prev)[k] == o) { seen = true; break; }
        if (!seen) {
            if (!bp__grow(m->a, (void **)prev, cap_prev, *n_prev + 1, sizeof **prev)) return false;
            (*prev)[(*n_prev)++] = o;
        }
        j++;
    }
    bp__seg piece[3];
    int np = 0;
    if (i < j && m->s[i].lo < lo) piece[np++] = (bp__seg){m->s[i].lo, lo, m->s[i].owner};
    piece[np++] = (bp__seg){lo, hi, owner};
    if (i < j && m->s[j - 1].hi > hi) piece[np++] = (bp__seg){hi, m->s[j - 1].hi, m->s[j - 1].owner};
    size_t n_new = m->n - (j - i) + (size_t)np;
    if (!bp__grow(m->a, (void **)&m->s, &m->cap, n_new, sizeof *m->s)) return false;
    memmove(m->s + i + np, m->s + j, (m->n - j) * sizeof *m->s);
    memcpy(m->s + i, piece, (size_t)np * sizeof *piece);
    m->n = n_new;
    return true;
}

/* ------------------------------------------------------------------ fences */

static int fence_cmp_step_desc(const void *x, const void *y, const int32_t *step)
{
    int32_t a = step[*(const int32_t *)x], b = step[*(const int32_t *)y];
    return a > b ? -1 : a < b;
}

/* insertion sort for the (usually short) candidate lists, heap-free */
static void fence_sort(int32_t *c, size_t n, const int32_t *step)
{
    if (n > 32) {
        /* shell sort: no qsort_r in C11 */
        size_t gap = 1;
        while (gap < n / 3) gap = gap * 3 + 1;
        for (; gap; gap /= 3)
            for (size_t i = gap; i < n; i++) {
                int32_t v = c[i];
                size_t j = i;
                while (j >= gap && fence_cmp_step_desc(&c[j - gap], &v, step) > 0) { c[j] = c[j - gap]; j -= gap; }
                c[j] = v;
            }
        return;
    }
    for (size_t i = 1; i < n; i++) {
        int32_t v = c[i];
        size_t j = i;
        while (j && fence_cmp_step_desc(&c[j - 1], &v, step) > 0) { c[j] = c[j - 1]; j--; }
        c[j] = v;
    }
}

bp_status bp__fences_build(const bp_allocator *a, int32_t n_ops, const int32_t *order,
                           const int32_t *pred_off, const int32_t *pred,
                           int32_t n_ten, const bp__tenant *ten, const int32_t *acc_off, const int32_t *acc,
                           int32_t **fences, size_t *n_fences, size_t *cap, uint64_t *gave_up, bp_error *err)
{
    *fences = NULL;
    *n_fences = *cap = 0;
    size_t nn = n_ops ? (size_t)n_ops : 1;
    bp_status s = BP_OK;
    int32_t *step = bp__alloc(a, nn * sizeof *step);
    int32_t *toff = bp__calloc(a, nn + 2, sizeof *toff);   /* tenants by producer step + 1 */
    int32_t *tlist = bp__alloc(a, (n_ten ? (size_t)n_ten : 1) * sizeof *tlist);
    int32_t *cmark = bp__alloc(a, nn * sizeof *cmark);
    int32_t *prev = NULL, *cand = NULL;
    size_t n_prev = 0, cap_prev = 0, n_cand = 0, cap_cand = 0;
    bp__segmap sm = {.a = a};
    bp__reach R;
    memset(&R, 0, sizeof R);
    if (!step || !toff || !tlist || !cmark) { s = bp__err(err, BP_ERR_NOMEM, "fences: out of memory"); goto done; }
    for (int32_t k = 0; k < n_ops; k++) { step[order[k]] = k; cmark[k] = -1; }
    /* bucket tenants by producer step; -1 (written before the run) first */
    for (int32_t t = 0; t < n_ten; t++) toff[(ten[t].producer >= 0 ? step[ten[t].producer] + 1 : 0) + 1]++;
    for (size_t k = 1; k < nn + 2; k++) toff[k] += toff[k - 1];
    {
        int32_t *fill = bp__alloc(a, (nn + 1) * sizeof *fill);
        if (!fill) { s = bp__err(err, BP_ERR_NOMEM, "fences: out of memory"); goto done; }
        memcpy(fill, toff, (nn + 1) * sizeof *fill);
        for (int32_t t = 0; t < n_ten; t++) tlist[fill[ten[t].producer >= 0 ? step[ten[t].producer] + 1 : 0]++] = t;
        bp__free(a, fill, (nn + 1) * sizeof *fill);
    }
    if ((s = bp__reach_init(&R, a, n_ops, step, pred_off, pred, err))) goto done;

    for (int32_t sidx = -1; sidx < n_ops; sidx++) {
        int32_t p = sidx >= 0 ? order[sidx] : -1;
        n_cand = 0;
        for (int32_t k = toff[sidx + 1]; k < toff[sidx + 2]; k++) {
            const bp__tenant *T = &ten[tlist[k]];
            if (T->hi <= T->lo) continue;
            n_prev = 0;
            if (!bp__segmap_set(&sm, T->lo, T->hi, tlist[k], &prev, &n_prev, &cap_prev)) {
                s = bp__err(err, BP_ERR_NOMEM, "fences: out of memory");
                goto done;
            }
            if (p < 0) continue;
            for (size_t q = 0; q < n_prev; q++)
                for (int32_t x = acc_off[prev[q]]; x < acc_off[prev[q] + 1]; x++) {
                    int32_t r = acc[x];
                    if (r == p || r < 0 || cmark[r] == p) continue;
                    cmark[r] = p;
                    if (!bp__grow(a, (void **)&cand, &cap_cand, n_cand + 1, sizeof *cand)) {
                        s = bp__err(err, BP_ERR_NOMEM, "fences: out of memory");
                        goto done;
                    }
                    cand[n_cand++] = r;
                }
        }
        if (p < 0) continue;
        fence_sort(cand, n_cand, step);
        bp__reach_finish(&R, p);  /* level from the data dependencies; grows with each fence */
        for (size_t q = 0; q < n_cand; q++) {
            int32_t r = cand[q];
            if (step[r] > step[p]) continue;  /* not an earlier tenant's access: a plan bug; ordering it would cycle */
            if (bp__reach_query(&R, r, p)) continue;
            if (!bp__reach_add_fence(&R, r, p) ||
                !bp__grow(a, (void **)fences, cap, 2 * (*n_fences + 1), sizeof **fences)) {
                s = bp__err(err, BP_ERR_NOMEM, "fences: out of memory");
                goto done;
            }
            (*fences)[2 * *n_fences] = r;
            (*fences)[2 * *n_fences + 1] = p;
            (*n_fences)++;
            if (R.level[r] + 1 > R.level[p]) R.level[p] = R.level[r] + 1;
        }
        if (!n_cand) bp__reach_finish(&R, p);
    }
    if (gave_up) *gave_up = R.gave_up;

done:
    bp__reach_free(&R);
    bp__segmap_free(&sm);
    bp__free(a, step, nn * sizeof *step);
    bp__free(a, toff, (nn + 2) * sizeof *toff);
    bp__free(a, tlist, (n_ten ? (size_t)n_ten : 1) * sizeof *tlist);
    bp__free(a, cmark, nn * sizeof *cmark);
    bp__free(a, prev, cap_prev * sizeof *prev);
    bp__free(a, cand, cap_cand * sizeof *cand);
    if (s) { bp__free(a, *fences, *cap * sizeof **fences); *fences = NULL; *n_fences = *cap = 0; }
    return s;
}

/* ---------------------------------------------------- fence-aware assigner */

typedef struct fa_ctx {
    const bp_interval *iv;
    size_t n;
    int32_t *writer;            /* n: op that writes storage i first (-1: before the run) */
    int32_t *acc_off, *acc;     /* n: ops that access storage i, CSR */
    int32_t *okc; int32_t *okv; /* per storage: stamp and cached "no fence needed" */
    bp__reach R;
} fa_ctx;

/* Can storage `prev`'s bytes be written by op p without a fence? */
static bool fa_ok(fa_ctx *c, int32_t prev, int32_t stamp, int32_t p)
{
    if (prev < 0) return true;
    if (c->okc[prev] == stamp) return c->okv[prev] != 0;
    bool ok = true;
    for (int32_t k = c->acc_off[prev]; k < c->acc_off[prev + 1] && ok; k++) {
        int32_t r = c->acc[k];
        if (r != p && p >= 0 && !bp__reach_query(&c->R, r, p)) ok = false;
    }
    c->okc[prev] = stamp;
    c->okv[prev] = ok;
    return ok;
}

static int fa_cmp_lower(const void *x, const void *y, const bp_interval *iv)
{
    const bp_interval *a = &iv[*(const uint32_t *)x], *b = &iv[*(const uint32_t *)y];
    if (a->lower != b->lower) return a->lower < b->lower ? -1 : 1;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static void fa_sort(uint32_t *v, uint32_t *tmp, size_t n, const bp_interval *iv)
{
    if (n < 2) return;
    size_t h = n / 2;
    fa_sort(v, tmp, h, iv);
    fa_sort(v + h, tmp, n - h, iv);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = fa_cmp_lower(&v[j], &v[i], iv) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

bp_status bp__assign_fence_aware(const bp_graph *g, const bp__lifetimes *lt, const bp_interval *iv,
                                 const int32_t *roots, size_t n, uint64_t *offsets, bp_assign_result *res,
                                 bp_error *err)
{
    double t0 = bp__now();
    bp_assign_options ao;
    bp_assign_options_init(&ao);
    ao.alloc = &g->alloc;
    for (size_t i = 0; i < n; i++)
        if (iv[i].fixed_offset != BP_NO_OFFSET || iv[i].lower < 0 || iv[i].upper <= iv[i].lower)
            return bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, &ao, offsets, res, err);
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o, nn = n ? n : 1;
    fa_ctx c;
    memset(&c, 0, sizeof c);
    c.iv = iv;
    c.n = n;
    bp_status s = BP_OK;
    int32_t *pred_off = NULL, *pred = NULL, *slot = NULL, *op_at = NULL, *amark = NULL;
    uint32_t *ord = NULL, *tmp = NULL;
    int32_t *prev = NULL;
    size_t n_prev = 0, cap_prev = 0, n_edges = 0;
    bp__segmap sm = {.a = a};
    c.writer = bp__alloc(a, nn * sizeof *c.writer);
    c.acc_off = bp__calloc(a, nn + 2, sizeof *c.acc_off);
    c.acc = bp__alloc(a, (g->n_io ? g->n_io : 1) * sizeof *c.acc);
    c.okc = bp__alloc(a, nn * sizeof *c.okc);
    c.okv = bp__alloc(a, nn * sizeof *c.okv);
    slot = bp__alloc(a, (nt ? nt : 1) * sizeof *slot);
    op_at = bp__alloc(a, (no ? no : 1) * sizeof *op_at);
    amark = bp__alloc(a, nn * sizeof *amark);
    ord = bp__alloc(a, nn * sizeof *ord);
    tmp = bp__alloc(a, nn * sizeof *tmp);
    if (!c.writer || !c.acc_off || !c.acc || !c.okc || !c.okv || !slot || !op_at || !amark || !ord || !tmp) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory (fence-aware assignment)", g->name);
        goto done;
    }
    for (size_t op = 0; op < no; op++) op_at[lt->step[op]] = (int32_t)op;
    for (size_t t = 0; t < nt; t++) slot[t] = -1;
    for (size_t i = 0; i < n; i++) {
        slot[roots[i]] = (int32_t)i;
        c.writer[i] = g->t[roots[i]].producer >= 0 ? op_at[iv[i].lower] : -1;
        c.okc[i] = -1;
        amark[i] = -1;
    }
    /* accessors per storage: every op reading or writing one of its tensors */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t op = 0; op < no; op++) {
            const int32_t *io = g->io + g->o[op].io_off;
            for (int k = 0; k < g->o[op].n_in + g->o[op].n_out; k++) {
                int32_t q = slot[lt->root[io[k]]];
                if (q < 0 || amark[q] == (int32_t)op) continue;
                amark[q] = (int32_t)op;
                if (pass) c.acc[c.acc_off[q + 1]++] = (int32_t)op;
                else c.acc_off[q + 2]++;
            }
        }
        for (size_t q = 0; q < n; q++) amark[q] = -1;
        if (!pass) for (size_t q = 1; q <= n + 1; q++) c.acc_off[q] += c.acc_off[q - 1];
    }
    if ((s = bp__op_preds(g, a, &pred_off, &pred, &n_edges, err))) goto done;
    if ((s = bp__reach_init(&c.R, a, (int32_t)no, lt->step, pred_off, pred, err))) goto done;
    for (size_t st = 0; st < no; st++) bp__reach_finish(&c.R, op_at[st]);

    uint64_t max_live = bp_intervals_max_live(iv, n);
    uint64_t limit = max_live + max_live / 8;
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++) ord[i] = (uint32_t)i;
    fa_sort(ord, tmp, n, iv);
    for (size_t k = 0; k < n; k++) {
        uint32_t S = ord[k];
        uint64_t sz = iv[S].size;
        int64_t now = iv[S].lower;
        int32_t p = c.writer[S];
        if (!sz) { offsets[S] = 0; continue; }
        uint64_t al = iv[S].alignment > 1 ? iv[S].alignment : 1;
        /* candidates: best fit in a hole, fence-free or not; the start of
         * the free run at the top (grows the arena less); fresh bytes at top */
        uint64_t ff_pos = UINT64_MAX, ff_waste = UINT64_MAX, any_pos = UINT64_MAX, any_waste = UINT64_MAX;
        uint64_t topff_pos = top, top_any_pos = top;
        bool topff_set = false;
        size_t ns = sm.n;
        for (size_t i = 0; i < ns;) {
            bp__seg *x = &sm.s[i];
            bool fr = x->owner < 0 || iv[x->owner].upper <= now;
            if (!fr) { i++; continue; }
            size_t j = i + 1;
            while (j < ns && sm.s[j].lo == sm.s[j - 1].hi && (sm.s[j].owner < 0 || iv[sm.s[j].owner].upper <= now)) j++;
            uint64_t rlo = sm.s[i].lo, rhi = sm.s[j - 1].hi;
            bool at_top = rhi == top;
            for (size_t a0 = i; a0 < j; a0++) {
                uint64_t pos = bp__align_up(sm.s[a0].lo, al);
                if (pos >= rhi) break;
                if (pos + sz > rhi && !at_top) break;
                bool ff = true;
                for (size_t b = a0; b < j && sm.s[b].lo < pos + sz && ff; b++)
                    ff = fa_ok(&c, sm.s[b].owner, (int32_t)k, p);
                if (pos + sz <= rhi) {
                    uint64_t waste = (rhi - rlo) - sz;
                    if (ff && waste < ff_waste) { ff_waste = waste; ff_pos = pos; }
                    if (waste < any_waste) { any_waste = waste; any_pos = pos; }
                } else {
                    if (pos < top_any_pos) top_any_pos = pos;
                    if (ff && (!topff_set || pos < topff_pos)) { topff_pos = pos; topff_set = true; }
                }
                if (pos + sz >= rhi) break;  /* later starts only waste more */
            }
            i = j;
        }
        uint64_t pos;
        if (ff_pos != UINT64_MAX) pos = ff_pos;
        else if ((topff_set ? topff_pos : top) + sz <= (limit > top ? limit : top)) pos = topff_set ? topff_pos : top;
        else if (any_pos != UINT64_MAX) pos = any_pos;
        else pos = top_any_pos;
        offsets[S] = pos;
        n_prev = 0;
        if (!bp__segmap_set(&sm, pos, pos + sz, (int32_t)S, &prev, &n_prev, &cap_prev)) {
            s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory (fence-aware assignment)", g->name);
            goto done;
        }
        if (pos + sz > top) top = pos + sz;
    }
    /* self-check; the independent verifier runs on the plan as well */
    if ((s = bp_intervals_check(iv, n, offsets, 0, err))) {
        s = bp__err(err, BP_ERR_INVALID, "%s: fence-aware assignment produced an overlap (bug): %s", g->name, err ? err->msg : "");
        goto done;
    }
    memset(res, 0, sizeof *res);
    res->arena_bytes = top;
    res->lower_bound = max_live;
    res->optimal = top == max_live;
    res->fits = -1;
    res->seconds = bp__now() - t0;
done:
    bp__reach_free(&c.R);
    bp__segmap_free(&sm);
    bp__free(a, c.writer, nn * sizeof *c.writer);
    bp__free(a, c.acc_off, (nn + 2) * sizeof *c.acc_off);
    bp__free(a, c.acc, (g->n_io ? g->n_io : 1) * sizeof *c.acc);
    bp__free(a, c.okc, nn * sizeof *c.okc);
    bp__free(a, c.okv, nn * sizeof *c.okv);
    bp__free(a, slot, (nt ? nt : 1) * sizeof *slot);
    bp__free(a, op_at, (no ? no : 1) * sizeof *op_at);
    bp__free(a, amark, nn * sizeof *amark);
    bp__free(a, ord, nn * sizeof *ord);
    bp__free(a, tmp, nn * sizeof *tmp);
    bp__free(a, pred_off, (no + 1) * sizeof *pred_off);
    bp__free(a, pred, (g->n_io ? g->n_io : 1) * sizeof *pred);
    bp__free(a, prev, cap_prev * sizeof *prev);
    return s;
}
