/*
 * fallback_model.c — the recompute / offload model of one plan
 * (plan/fallback.h): each storage's uses with their modes, the live bytes
 * per step in a segment tree (range add, max and its first step, O(log n)),
 * the transfer work queued per step in a Fenwick tree, and the operations
 * the greedy of fallback.c combines: evict the gap before a use (recompute
 * or offload), and make a storage valid at a step (ensure), recursively
 * recomputing or prefetching what a recompute reads.  Costs are in the
 * graph's cost units (an op's cost, else the cost model's microseconds).
 */
#include "plan/fallback.h"
#include "schedule/schedule_internal.h"

#include <stdlib.h>
#include <string.h>

#define FB_MAX_DEPTH 24
#define FB_MAX_WORK 256   /* storages one cost query may visit: recursion over shared inputs */

/* ------------------------------------------------------------ live bytes */

static void seg_add(fb_model *m, int32_t node, int32_t nl, int32_t nr, int32_t lo, int32_t hi, int64_t d)
{
    if (hi < nl || nr < lo) return;
    if (lo <= nl && nr <= hi) { m->mx[node] += d; m->lz[node] += d; return; }
    int32_t mid = nl + (nr - nl) / 2;
    seg_add(m, 2 * node, nl, mid, lo, hi, d);
    seg_add(m, 2 * node + 1, mid + 1, nr, lo, hi, d);
    int64_t a = m->mx[2 * node], b = m->mx[2 * node + 1];
    m->mx[node] = (a > b ? a : b) + m->lz[node];
}

void bp__fb_live_add(fb_model *m, int32_t lo, int32_t hi, int64_t d)
{
    if (lo < 0) lo = 0;
    if (hi >= m->no) hi = m->no - 1;
    if (lo > hi || !d) return;
    seg_add(m, 1, 0, m->leaves - 1, lo, hi, d);
}

int64_t bp__fb_live_at(const fb_model *m, int32_t s)
{
    int32_t node = m->leaves + s;
    int64_t v = m->mx[node];
    for (node /= 2; node >= 1; node /= 2) v += m->lz[node];
    return v;
}

int64_t bp__fb_live_max(const fb_model *m, int32_t *at)
{
    int32_t node = 1;
    int64_t want = m->mx[1];
    while (node < m->leaves) {
        want -= m->lz[node];
        node = m->mx[2 * node] == want ? 2 * node : 2 * node + 1;
    }
    if (at) *at = node - m->leaves;
    return m->mx[1];
}

/* ------------------------------------------------------- transfer work */

/* The transfer work is spread evenly over its gap: range add, range sum
 * (two Fenwick trees over steps, load[0..no] and load[no+1..2no+1]). */
static void fen_point(double *t, int32_t n, int32_t i, double v)
{
    for (i++; i <= n; i += i & -i) t[i] += v;
}

static double fen_prefix1(const double *t, int32_t i)
{
    double r = 0;
    for (; i > 0; i -= i & -i) r += t[i];
    return r;
}

/* Adds v per step over steps [lo, hi). */
static void fen_range(fb_model *m, int32_t lo, int32_t hi, double v)
{
    double *b1 = m->load, *b2 = m->load + m->no + 1;
    fen_point(b1, m->no, lo, v);
    fen_point(b2, m->no, lo, v * lo);
    if (hi < m->no) { fen_point(b1, m->no, hi, -v); fen_point(b2, m->no, hi, -v * hi); }
}

/* The work queued over steps [0, s). */
static double fen_prefix(const fb_model *m, int32_t s)
{
    const double *b1 = m->load, *b2 = m->load + m->no + 1;
    return fen_prefix1(b1, s) * s - fen_prefix1(b2, s);
}

/* Transfer work t over the gap [lo, hi) (at step lo when it is empty). */
static void fen_add(fb_model *m, int32_t lo, int32_t hi, double t)
{
    if (lo >= m->no) lo = m->no - 1;
    if (hi <= lo) hi = lo + 1;
    fen_range(m, lo, hi, t / (hi - lo));
}

double bp__fb_xfer(const fb_model *m, int32_t k) { return 2.0 * (double)m->st[k].size / m->bw; }

double bp__fb_offload_cost(const fb_model *m, int32_t k, int32_t i)
{
    const fb_store *x = &m->st[k];
    int32_t lo = x->use[i - 1] + 1, hi = x->use[i];   /* the gap: steps [lo, hi) */
    double w = lo < hi ? fen_prefix(m, hi) - fen_prefix(m, lo) : 0, c = lo < hi ? m->ccum[hi] - m->ccum[lo] : 0;
    double t = bp__fb_xfer(m, k), before = w > c ? w - c : 0, after = w + t > c ? w + t - c : 0;
    return after - before;
}

/* ------------------------------------------------------------------ uses */

int32_t bp__fb_use_at(const fb_store *k, int32_t s)
{
    int32_t lo = 0, hi = k->n;
    while (lo < hi) { int32_t mid = lo + (hi - lo) / 2; if (k->use[mid] < s) lo = mid + 1; else hi = mid; }
    return lo;
}

static bool use_insert(fb_model *m, fb_store *k, int32_t j, int32_t s, uint8_t mode)
{
    size_t need = (size_t)k->n + 1;
    if (!bp__grow(m->a, (void **)&k->use, &k->cap_use, need, sizeof *k->use) ||
        !bp__grow(m->a, (void **)&k->mode, &k->cap_mode, need, sizeof *k->mode))
        return false;
    memmove(k->use + j + 1, k->use + j, (size_t)(k->n - j) * sizeof *k->use);
    memmove(k->mode + j + 1, k->mode + j, (size_t)(k->n - j) * sizeof *k->mode);
    k->use[j] = s;
    k->mode[j] = mode;
    k->n++;
    return true;
}

static double recomp_cost(const fb_model *m, int32_t k, int32_t s, int depth, int *work);

/* The mode a storage gets at a new use s after its last one: recompute when
 * it can (*cost: what it costs), else a prefetch, else it stays (KEEP). */
static uint8_t tail_mode(const fb_model *m, int32_t k, int32_t s, int depth, int *work, double *cost)
{
    const fb_store *x = &m->st[k];
    *cost = 0;
    if ((m->allow & BP_FALLBACK_RECOMPUTE) && x->can_recomp && (*cost = recomp_cost(m, k, s, depth + 1, work)) >= 0) return FB_RECOMP;
    if ((m->allow & BP_FALLBACK_OFFLOAD) && x->can_pref) { *cost = bp__fb_xfer(m, k); return FB_PREF; }
    *cost = 0;
    return FB_KEEP;
}

/* An external input of a recompute at step s: a weight always; a graph
 * input while the plan still holds it. */
static bool external_ok(const fb_model *m, int32_t t, int32_t s)
{
    const bp_tensor_plan *tp = &m->p->tp[t];
    if (tp->kind == BP_KIND_WEIGHT) return true;
    return tp->kind == BP_KIND_INPUT && tp->first <= s && tp->last >= s;
}

static double ensure_cost(const fb_model *m, int32_t k, int32_t s, int depth, int *work)
{
    const fb_store *x = &m->st[k];
    if (depth > FB_MAX_DEPTH || --*work < 0) return -1;
    int32_t j = bp__fb_use_at(x, s);
    if (j < x->n && x->use[j] == s) return 0;
    if (j == 0) return -1;
    double c;
    if (j == x->n) { tail_mode(m, k, s, depth, work, &c); return c; }
    if (x->mode[j] == FB_KEEP || x->use[j - 1] == s - 1) return 0;   /* kept, or just used: kept for free */
    if (x->mode[j] == FB_PREF) return bp__fb_xfer(m, k);
    return recomp_cost(m, k, s, depth + 1, work);
}

static double recomp_cost(const fb_model *m, int32_t k, int32_t s, int depth, int *work)
{
    const fb_store *x = &m->st[k];
    if (depth > FB_MAX_DEPTH || !x->can_recomp || x->op < 0 || --*work < 0) return -1;
    double c = bp__op_cost(m->g, x->op);
    const int32_t *in = bp__op_in(m->g, x->op);
    for (int i = 0; i < m->g->o[x->op].n_in; i++) {
        int32_t sx = m->sid[in[i]];
        if (sx < 0) { if (!external_ok(m, in[i], s)) return -1; continue; }
        double e = ensure_cost(m, sx, s, depth, work);
        if (e < 0) return -1;
        c += e;
    }
    return c;
}

double bp__fb_recomp_cost(const fb_model *m, int32_t k, int32_t s, int depth)
{
    int work = FB_MAX_WORK;
    return recomp_cost(m, k, s, depth, &work);
}

double bp__fb_ensure_cost(const fb_model *m, int32_t k, int32_t s, int depth)
{
    int work = FB_MAX_WORK;
    return ensure_cost(m, k, s, depth, &work);
}

static bp_status recomp_inputs(fb_model *m, int32_t k, int32_t s, int depth, bp_error *err)
{
    int32_t op = m->st[k].op;
    const int32_t *in = bp__op_in(m->g, op);
    for (int i = 0; i < m->g->o[op].n_in; i++) {
        int32_t sx = m->sid[in[i]];
        if (sx < 0) continue;
        bp_status st = bp__fb_ensure(m, sx, s, depth + 1, err);
        if (st) return st;
    }
    return BP_OK;
}

bp_status bp__fb_ensure(fb_model *m, int32_t k, int32_t s, int depth, bp_error *err)
{
    fb_store *x = &m->st[k];
    int32_t j = bp__fb_use_at(x, s);
    if (j < x->n && x->use[j] == s) return BP_OK;
    if (j == 0 || depth > FB_MAX_DEPTH + 2)
        return bp__err(err, BP_ERR_INVALID, "%s: fallback: storage \"%s\" cannot be made valid at step %d", m->g->name,
                       bp__names_get(&m->g->tnames, x->root), s);
    bool tail = j == x->n;
    int work = FB_MAX_WORK;
    double cost;
    int32_t prev = x->use[j - 1];
    bool evicted = !tail && x->mode[j] != FB_KEEP;
    /* a use right after the previous one keeps the bytes (no step between
     * frees anything); likewise the evicted gap after s when the next use is
     * at s + 1, whose recompute or prefetch would buy nothing */
    uint8_t mode = (!tail && !evicted) || prev == s - 1 ? FB_KEEP : tail ? tail_mode(m, k, s, depth, &work, &cost) : x->mode[j];
    if (evicted && x->use[j] == s + 1) {
        if (x->mode[j] == FB_PREF) fen_add(m, prev + 1, x->use[j], -bp__fb_xfer(m, k));
        x->mode[j] = FB_KEEP;
    }
    if (!use_insert(m, x, j, s, mode)) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory planning recomputes", m->g->name);
    if (mode == FB_KEEP) {
        if (tail) bp__fb_live_add(m, prev + 1, s, (int64_t)x->size);
        else if (evicted) bp__fb_live_add(m, s, s, (int64_t)x->size);
        return BP_OK;
    }
    bp__fb_live_add(m, s, s, (int64_t)x->size);
    if (mode == FB_PREF) { fen_add(m, prev + 1, s, bp__fb_xfer(m, k)); return BP_OK; }
    return recomp_inputs(m, k, s, depth, err);
}

bp_status bp__fb_evict(fb_model *m, int32_t k, int32_t i, uint8_t mode, bp_error *err)
{
    fb_store *x = &m->st[k];
    x->mode[i] = mode;
    bp__fb_live_add(m, x->use[i - 1] + 1, x->use[i] - 1, -(int64_t)x->size);
    if (mode == FB_PREF) { fen_add(m, x->use[i - 1] + 1, x->use[i], bp__fb_xfer(m, k)); return BP_OK; }
    return recomp_inputs(m, k, x->use[i], 0, err);
}

void bp__fb_working_sets(const fb_model *m, uint64_t *ws)
{
    memset(ws, 0, (size_t)m->no * sizeof *ws);
    for (size_t k = 0; k < m->ns; k++)
        for (int32_t i = 0; i < m->st[k].n_base; i++) ws[m->st[k].base[i]] += m->st[k].size;
}

int32_t bp__fb_segments(const fb_store *k, int32_t *first, int32_t *last, uint8_t *mode)
{
    int32_t n = 0;
    for (int32_t i = 0; i < k->n; i++) {
        if (i == 0 || k->mode[i] != FB_KEEP) {
            if (first) { first[n] = k->use[i]; mode[n] = i ? k->mode[i] : FB_KEEP; }
            n++;
        }
        if (last) last[n - 1] = k->use[i];
    }
    return n;
}

/* -------------------------------------------------------------- building */

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return a < b ? -1 : a > b;
}

/* The base uses of every storage: each member's first and last step, its
 * producer's and consumers' steps, the final step for a graph output. */
static bp_status collect_uses(fb_model *m, bp_error *err)
{
    const bp_graph *g = m->g;
    const bp_plan *p = m->p;
    size_t *cnt = bp__calloc(m->a, m->ns ? m->ns : 1, sizeof *cnt);
    if (!cnt) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    for (size_t t = 0; t < g->n_t; t++)
        if (m->sid[t] >= 0) cnt[m->sid[t]] += 4 + (size_t)(g->cons_off[t + 1] - g->cons_off[t]);
    bp_status s = BP_OK;
    for (size_t k = 0; k < m->ns && !s; k++) {
        fb_store *x = &m->st[k];
        x->base = bp__alloc(m->a, (cnt[k] ? cnt[k] : 1) * sizeof *x->base);
        x->cap_base = cnt[k] ? cnt[k] : 1;
        if (!x->base) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        cnt[k] = 0;
    }
    for (size_t t = 0; t < g->n_t && !s; t++) {
        int32_t k = m->sid[t];
        if (k < 0) continue;
        fb_store *x = &m->st[k];
        const bp_tensor_plan *tp = &p->tp[t];
        int32_t *b = x->base;
        size_t *c = &cnt[k];
        if (tp->first >= 0) b[(*c)++] = tp->first;
        if (tp->last >= 0) b[(*c)++] = tp->last;
        if (g->t[t].producer >= 0) b[(*c)++] = m->step[g->t[t].producer];
        if (g->t[t].flags & BP_TENSOR_OUTPUT) b[(*c)++] = m->no - 1;
        for (int32_t i = g->cons_off[t]; i < g->cons_off[t + 1]; i++) b[(*c)++] = m->step[g->cons[i]];
    }
    for (size_t k = 0; k < m->ns && !s; k++) {
        fb_store *x = &m->st[k];
        qsort(x->base, cnt[k], sizeof *x->base, cmp_i32);
        int32_t n = 0;
        for (size_t i = 0; i < cnt[k]; i++) if (!n || x->base[n - 1] != x->base[i]) x->base[n++] = x->base[i];
        x->n_base = n;
    }
    bp__free(m->a, cnt, (m->ns ? m->ns : 1) * sizeof *cnt);
    return s;
}

bp_status bp__fb_model_reset(fb_model *m, bp_error *err)
{
    memset(m->mx, 0, 2 * (size_t)m->leaves * sizeof *m->mx);
    memset(m->lz, 0, 2 * (size_t)m->leaves * sizeof *m->lz);
    for (int32_t i = m->leaves + m->no; i < 2 * m->leaves; i++) m->mx[i] = m->lz[i] = INT64_MIN / 4;
    for (int32_t i = m->leaves - 1; i >= 1; i--) m->mx[i] = m->mx[2 * i] > m->mx[2 * i + 1] ? m->mx[2 * i] : m->mx[2 * i + 1];
    memset(m->load, 0, 2 * ((size_t)m->no + 1) * sizeof *m->load);
    for (size_t k = 0; k < m->ns; k++) {
        fb_store *x = &m->st[k];
        size_t need = (size_t)x->n_base + 1;
        if (!bp__grow(m->a, (void **)&x->use, &x->cap_use, need, sizeof *x->use) ||
            !bp__grow(m->a, (void **)&x->mode, &x->cap_mode, need, sizeof *x->mode))
            return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", m->g->name);
        memcpy(x->use, x->base, (size_t)x->n_base * sizeof *x->use);
        memset(x->mode, FB_KEEP, (size_t)x->n_base);
        x->n = x->n_base;
        if (x->n) bp__fb_live_add(m, x->use[0], x->use[x->n - 1], (int64_t)x->size);
    }
    return BP_OK;
}

/* The storages of the plan's arena: roots with an offset and a use. */
static bp_status find_storages(fb_model *m, bp_error *err)
{
    const bp_graph *g = m->g;
    const bp_plan *p = m->p;
    int32_t *members = bp__calloc(m->a, g->n_t ? g->n_t : 1, sizeof *members);
    if (!members) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    for (size_t t = 0; t < g->n_t; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        int32_t r = tp->alias_of >= 0 ? tp->alias_of : (int32_t)t;
        m->sid[t] = -1;
        if (tp->offset != BP_NO_OFFSET && tp->first >= 0) members[r]++;
    }
    for (size_t t = 0; t < g->n_t; t++) if (p->tp[t].alias_of < 0 && members[t]) m->sid[t] = (int32_t)m->ns++;
    m->st = bp__calloc(m->a, m->ns ? m->ns : 1, sizeof *m->st);
    if (!m->st) { bp__free(m->a, members, (g->n_t ? g->n_t : 1) * sizeof *members); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); }
    for (size_t t = 0; t < g->n_t; t++) {
        int32_t r = p->tp[t].alias_of >= 0 ? p->tp[t].alias_of : (int32_t)t;
        if (p->tp[t].offset != BP_NO_OFFSET && p->tp[t].first >= 0 && m->sid[r] >= 0) m->sid[t] = m->sid[r];
    }
    for (size_t t = 0; t < g->n_t; t++) {
        int32_t k = p->tp[t].alias_of < 0 ? m->sid[t] : -1;
        if (k < 0) continue;
        fb_store *x = &m->st[k];
        int32_t op = g->t[t].producer;
        x->root = (int32_t)t;
        x->op = op;
        x->size = bp__align_up(p->tp[t].bytes, p->alignment);
        x->can_pref = !g->t[t].is_reserve;
        x->can_recomp = members[t] == 1 && op >= 0 && g->o[op].n_out == 1 && !g->t[t].is_reserve && !bp_graph_n_bodies(g);
    }
    bp__free(m->a, members, (g->n_t ? g->n_t : 1) * sizeof *members);
    return BP_OK;
}

bp_status bp__fb_model_init(fb_model *m, const bp_graph *g, const bp_plan *p, unsigned allow, double bw, bp_error *err)
{
    memset(m, 0, sizeof *m);
    m->g = g;
    m->p = p;
    m->a = &g->alloc;
    m->allow = allow;
    m->bw = bw > 0 ? bw : BP_HOST_BANDWIDTH_DEFAULT / 1e6;
    m->no = (int32_t)g->n_o;
    m->leaves = 1;
    while (m->leaves < m->no) m->leaves *= 2;
    size_t no1 = (size_t)m->no + 1;
    m->sid = bp__alloc(m->a, (g->n_t ? g->n_t : 1) * sizeof *m->sid);
    m->step = bp__alloc(m->a, no1 * sizeof *m->step);
    m->ccum = bp__alloc(m->a, no1 * sizeof *m->ccum);
    m->mx = bp__alloc(m->a, 2 * (size_t)m->leaves * sizeof *m->mx);
    m->lz = bp__alloc(m->a, 2 * (size_t)m->leaves * sizeof *m->lz);
    m->load = bp__alloc(m->a, 2 * no1 * sizeof *m->load);
    if (!m->sid || !m->step || !m->ccum || !m->mx || !m->lz || !m->load) {
        bp__fb_model_free(m);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory planning recomputes", g->name);
    }
    m->ccum[0] = 0;
    for (int32_t s = 0; s < m->no; s++) {
        m->step[p->order[s]] = s;
        m->ccum[s + 1] = m->ccum[s] + bp__op_cost(g, p->order[s]);
    }
    bp_status s = find_storages(m, err);
    if (!s) s = collect_uses(m, err);
    if (!s) s = bp__fb_model_reset(m, err);
    if (s) bp__fb_model_free(m);
    return s;
}

void bp__fb_model_free(fb_model *m)
{
    const bp_allocator *a = m->a;
    if (!a) return;
    size_t no1 = (size_t)m->no + 1;
    for (size_t k = 0; m->st && k < m->ns; k++) {
        fb_store *x = &m->st[k];
        bp__free(a, x->use, x->cap_use * sizeof *x->use);
        bp__free(a, x->mode, x->cap_mode * sizeof *x->mode);
        bp__free(a, x->base, x->cap_base * sizeof *x->base);
    }
    bp__free(a, m->st, (m->ns ? m->ns : 1) * sizeof *m->st);
    bp__free(a, m->sid, (m->g->n_t ? m->g->n_t : 1) * sizeof *m->sid);
    bp__free(a, m->step, no1 * sizeof *m->step);
    bp__free(a, m->ccum, no1 * sizeof *m->ccum);
    bp__free(a, m->mx, 2 * (size_t)m->leaves * sizeof *m->mx);
    bp__free(a, m->lz, 2 * (size_t)m->leaves * sizeof *m->lz);
    bp__free(a, m->load, 2 * no1 * sizeof *m->load);
    memset(m, 0, sizeof *m);
}
