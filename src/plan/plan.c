/*
 * plan.c — the planning pipeline and the event table.
 *
 * bp_plan_graph: storages -> schedule -> lifetimes (+ in-place) -> one
 * half-open interval per planned storage [first, last + 1), size rounded up
 * to the alignment -> bp_assign_intervals -> per-tensor placement -> events.
 *
 * (bp__plan_flat; the public entry points, which also plan control-flow
 * bodies, are in plan_graph.c.)
 *
 * Events (lazy allocation): at each step, ALLOC for every storage that
 * starts there (named by its root tensor, at its first member's producer;
 * planned inputs at step 0), then the
 * op's EXEC, then FREE for every storage whose last use is this step, except
 * graph outputs (pinned to the end, owned by the caller) and weights.
 * External inputs get a FREE too (buffer -1), so an engine may release them.
 */
#include "plan/plan_internal.h"
#include "plan/fences.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

bp_plan *bp__plan_alloc(const bp_allocator *a, int32_t n_t, int32_t n_o)
{
    bp_plan *p = bp__calloc(a, 1, sizeof *p);
    if (!p) return NULL;
    p->alloc = *a;
    p->n_t = n_t;
    p->n_o = n_o;
    p->order = bp__alloc(a, (size_t)(n_o ? n_o : 1) * sizeof *p->order);
    p->tp = bp__calloc(a, (size_t)(n_t ? n_t : 1), sizeof *p->tp);
    if (!p->order || !p->tp) { bp_plan_free(p); return NULL; }
    for (int32_t t = 0; t < n_t; t++) {
        p->tp[t].first = p->tp[t].last = -1;
        p->tp[t].offset = BP_NO_OFFSET;
        p->tp[t].buffer = -1;
        p->tp[t].alias_of = -1;
    }
    p->alignment = 1;
    p->stats.peak_step = -1;
    return p;
}

void bp_plan_free(bp_plan *p)
{
    if (!p) return;
    bp_allocator a = p->alloc;
    bp__free(&a, p->order, (size_t)(p->n_o ? p->n_o : 1) * sizeof *p->order);
    bp__free(&a, p->tp, (size_t)(p->n_t ? p->n_t : 1) * sizeof *p->tp);
    bp__free(&a, p->ev, p->cap_ev * sizeof *p->ev);
    for (int32_t i = 0; i < p->n_bodies; i++) bp_plan_free(p->bodies[i]);
    bp__free(&a, p->bodies, (size_t)p->n_bodies * sizeof *p->bodies);
    bp__free(&a, p->body_base, (size_t)p->n_bodies * sizeof *p->body_base);
    bp__free(&a, p->copies, (size_t)(p->n_copies ? p->n_copies : 1) * sizeof *p->copies);
    bp_engine_free(p->engine);
    bp__free(&a, p, sizeof *p);
}

const bp_plan_stats *bp_plan_get_stats(const bp_plan *p) { return &p->stats; }
int32_t bp_plan_n_steps(const bp_plan *p) { return p->n_o; }
const int32_t *bp_plan_schedule(const bp_plan *p) { return p->order; }
const bp_tensor_plan *bp_plan_tensor(const bp_plan *p, int32_t t) { return t >= 0 && t < p->n_t ? &p->tp[t] : NULL; }
int32_t bp_plan_n_tensors(const bp_plan *p) { return p->n_t; }
uint64_t bp_plan_alignment(const bp_plan *p) { return p->alignment; }
size_t bp_plan_n_events(const bp_plan *p) { return p->n_ev; }
const bp_event *bp_plan_events(const bp_plan *p) { return p->ev; }
bp_sched_kind bp_plan_sched(const bp_plan *p) { return p->sched; }
bp_assign_kind bp_plan_assign(const bp_plan *p) { return p->assign; }

/* ------------------------------------------------------------------ events */

/* The storage root of t as recorded in the plan. */
static int32_t plan_root(const bp_plan *p, int32_t t) { return p->tp[t].alias_of >= 0 ? p->tp[t].alias_of : t; }

/* Events in one pass over the tensors and one over the steps: each storage
 * root is bucketed by the step of its ALLOC (its producer's) and of its FREE
 * (its members' last use), with a counting sort, then the buckets are
 * emitted around each EXEC.  Walking the ops' input lists instead costs a
 * cache miss per input on large graphs in a scrambled order. */
bp_status bp__plan_build_events(bp_plan *p, const bp_graph *g, bp_error *err)
{
    const bp_allocator *a = &p->alloc;
    size_t nt = g->n_t, no = (size_t)p->n_o, nt1 = nt ? nt : 1;
    int32_t *slast = bp__alloc(a, nt1 * sizeof *slast);
    int32_t *sfirst = bp__alloc(a, nt1 * sizeof *sfirst);   /* per root: the first member producer's step */
    int32_t *stepof = bp__alloc(a, (no ? no : 1) * sizeof *stepof);
    int32_t *aoff = bp__calloc(a, no + 2, sizeof *aoff);   /* ALLOC bucket offsets per step */
    int32_t *foff = bp__calloc(a, no + 2, sizeof *foff);   /* FREE bucket offsets per step */
    int32_t *aitem = bp__alloc(a, nt1 * sizeof *aitem);
    int32_t *fitem = bp__alloc(a, nt1 * sizeof *fitem);
    bool ok = slast && sfirst && stepof && aoff && foff && aitem && fitem;
    if (ok) {
        for (size_t s = 0; s < no; s++) stepof[p->order[s]] = (int32_t)s;
        for (size_t t = 0; t < nt; t++) { slast[t] = -1; sfirst[t] = INT32_MAX; }
        /* a storage is allocated before its first member is made (a Concat's
         * slices are made before the Concat) */
        for (size_t t = 0; t < nt; t++) {
            int32_t r = plan_root(p, (int32_t)t), pr = g->t[t].producer;
            if (pr >= 0 && stepof[pr] < sfirst[r]) sfirst[r] = stepof[pr];
        }
        /* a storage holding a graph output (any member) is never freed: INT32_MAX */
        for (size_t t = 0; t < nt; t++) {
            int32_t r = plan_root(p, (int32_t)t);
            int32_t l = g->t[t].flags & BP_TENSOR_OUTPUT ? INT32_MAX : p->tp[t].last;
            if (l > slast[r]) slast[r] = l;
        }
        /* which storages get an ALLOC / a FREE, and at which step */
        for (int pass = 0; pass < 2; pass++) {
            for (size_t t = 0; t < nt; t++) {
                const bp_tensor_plan *tp = &p->tp[t];
                if (tp->alias_of >= 0) continue;
                int32_t pr = g->t[t].producer;
                if (pr >= 0 && (tp->offset != BP_NO_OFFSET || tp->kind == BP_KIND_DYNAMIC)) {
                    int32_t s = sfirst[t];
                    if (pass) aitem[aoff[s + 1]++] = (int32_t)t; else aoff[s + 2]++;
                }
                if (slast[t] >= 0 && slast[t] < (int32_t)no &&
                    (tp->kind == BP_KIND_PLANNED || tp->kind == BP_KIND_DYNAMIC || tp->kind == BP_KIND_INPUT ||
                     tp->kind == BP_KIND_WORKSPACE)) {
                    int32_t s = slast[t];
                    if (pass) fitem[foff[s + 1]++] = (int32_t)t; else foff[s + 2]++;
                }
            }
            if (!pass)   /* off[s + 1] = start of bucket s, the cursor while filling; after it, bucket s is [off[s], off[s + 1]) */
                for (size_t s = 0; s < no; s++) { aoff[s + 2] += aoff[s + 1]; foff[s + 2] += foff[s + 1]; }
        }
        p->n_ev = 0;
        /* at most one ALLOC and one FREE per tensor plus one EXEC per op */
        size_t need = no + 2 * nt;
        ok = bp__grow(a, (void **)&p->ev, &p->cap_ev, need, sizeof *p->ev);
    }
    if (ok) {
        bp_event *ev = p->ev;
        size_t k = 0;
        /* Planned graph inputs: allocated before the first op. */
        for (size_t t = 0; t < nt && no > 0; t++) {
            const bp_tensor_plan *tp = &p->tp[t];
            if (g->t[t].producer < 0 && tp->offset != BP_NO_OFFSET && tp->alias_of < 0)
                ev[k++] = (bp_event){BP_EV_ALLOC, (int32_t)t, p->order[0], tp->buffer, tp->offset};
        }
        for (size_t s = 0; s < no; s++) {
            int32_t op = p->order[s];
            for (int32_t i = aoff[s]; i < aoff[s + 1]; i++) {
                const bp_tensor_plan *tp = &p->tp[aitem[i]];
                ev[k++] = (bp_event){BP_EV_ALLOC, aitem[i], op, tp->buffer, tp->offset};
            }
            ev[k++] = (bp_event){BP_EV_EXEC, -1, op, -1, BP_NO_OFFSET};
            for (int32_t i = foff[s]; i < foff[s + 1]; i++) {
                const bp_tensor_plan *tp = &p->tp[fitem[i]];
                ev[k++] = (bp_event){BP_EV_FREE, fitem[i], op, tp->buffer, tp->offset};
            }
        }
        p->n_ev = k;
    }
    bp__free(a, slast, nt1 * sizeof *slast);
    bp__free(a, sfirst, nt1 * sizeof *sfirst);
    bp__free(a, stepof, (no ? no : 1) * sizeof *stepof);
    bp__free(a, aoff, (no + 2) * sizeof *aoff);
    bp__free(a, foff, (no + 2) * sizeof *foff);
    bp__free(a, aitem, nt1 * sizeof *aitem);
    bp__free(a, fitem, nt1 * sizeof *fitem);
    if (!ok) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory building events", g->name);
    return BP_OK;
}

/* --------------------------------------------------------------- planning */

static bp_tensor_kind tensor_kind(const bp_graph *g, const bp__lifetimes *lt, int32_t t)
{
    int32_t r = lt->root[t];
    const bp__tensor *x = &g->t[r];
    if (lt->planned[r] && g->t[t].is_workspace) return BP_KIND_WORKSPACE;
    if (lt->planned[r]) return (g->t[t].flags & BP_TENSOR_OUTPUT) ? BP_KIND_OUTPUT : BP_KIND_PLANNED;
    if (x->dynamic || g->t[t].dynamic) return BP_KIND_DYNAMIC;
    if (x->flags & (BP_TENSOR_WEIGHT | BP_TENSOR_CONST)) return BP_KIND_WEIGHT;
    if (x->producer >= 0) return BP_KIND_WEIGHT; /* an unplanned constant */
    return BP_KIND_INPUT;
}

/* Fills the counts of p->stats from the placements and kinds (n_storages
 * is the number of roots in the arena): see bp_plan_stats. */
void bp__plan_count(const bp_graph *g, bp_plan *p)
{
    bp_plan_stats *st = &p->stats;
    bp__etab et;
    if (bp__etab_build(g, p->engine, &et, NULL)) memset(&et, 0, sizeof et);   /* out of memory: count as the default */
    st->n_planned = st->n_storages = st->n_dynamic = st->n_views = st->n_inputs = st->n_weights = 0;
    st->dynamic_bytes = 0;
    for (int32_t t = 0; t < p->n_t; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        if (tp->offset != BP_NO_OFFSET) {
            st->n_planned++;
            if (tp->alias_of < 0) st->n_storages++;
        } else if (tp->kind == BP_KIND_DYNAMIC) {
            st->n_dynamic++;
            st->dynamic_bytes += g->t[t].bytes;
        }
        if (tp->alias_of >= 0 && bp__etab_view_source(g, &et, t) >= 0) st->n_views++;
        if (tp->kind == BP_KIND_INPUT) st->n_inputs++;
        if (tp->kind == BP_KIND_WEIGHT) st->n_weights++;
    }
    bp__etab_free(g, &et);
}

void bp__plan_count_bodies(const bp_graph *g, bp_plan *p)
{
    bp_plan_stats *st = &p->stats;
    st->n_control_flow = p->n_bodies ? bp_graph_n_control_flow(g) : 0;
    st->n_body_planned = 0;
    for (int32_t i = 0; i < p->n_bodies; i++) {
        const bp_plan_stats *cs = &p->bodies[i]->stats;
        st->n_control_flow += cs->n_control_flow;
        st->n_body_planned += cs->n_planned + cs->n_body_planned;
    }
}

/* naive_bytes and alias_saved_bytes (docs/FORMATS.md): over the tensors
 * whose storage is in the arena, the aligned bytes of the view roots (each
 * its own buffer, never freed: what the arena would hold with no reuse and
 * no in-place writes) and of the members that share another's bytes (views
 * and in-place outputs; a symbolic view counts nothing).  False when a sum
 * overflows. */
static bool plan_naive(const bp_graph *g, const bp__storage *st, const bp__lifetimes *lt, const int32_t *slot,
                       uint64_t align, bp_plan_stats *ps)
{
    uint64_t naive = 0, saved = 0;
    for (size_t t = 0; t < g->n_t; t++) {
        if (slot[lt->root[t]] < 0) continue;
        uint64_t b = bp__align_up(g->t[t].bytes, align);
        bool own = st->root[t] == (int32_t)t || bp__etab_view_source(g, &st->et, (int32_t)t) < 0;   /* Concat slices count */
        if (own && !bp__add_u64(naive, b, &naive)) return false;
        if (lt->root[t] != (int32_t)t && !g->t[t].dynamic && !bp__add_u64(saved, b, &saved)) return false;
    }
    ps->naive_bytes = naive;
    ps->alias_saved_bytes = saved;
    return true;
}

bp_status bp__plan_flat(const bp_graph *g, const bp_plan_options *opts, const int32_t *order, bp_plan **out, bp_error *err)
{
    *out = NULL;
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized (call bp_graph_finalize)", g->name);
    bp_plan_options defaults;
    if (!opts) { bp_plan_options_init(&defaults); opts = &defaults; }
    uint64_t align = opts->alignment ? opts->alignment : 1;
    if (align & (align - 1)) return bp__err(err, BP_ERR_USAGE, "%s: alignment %llu is not a power of two", g->name, (unsigned long long)align);
    if ((unsigned)opts->assign >= BP_ASSIGN_COUNT) return bp__err(err, BP_ERR_USAGE, "%s: unknown assigner %d", g->name, (int)opts->assign);
    double t0 = bp__now();
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t;

    bp_plan *p = bp__plan_alloc(a, (int32_t)nt, (int32_t)g->n_o);
    if (!p) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory allocating the plan", g->name);
    p->alignment = align;
    p->sched = opts->sched;
    p->assign = opts->assign;
    memcpy(p->order, order, g->n_o * sizeof *order);
    if (bp__engine_copy(opts->engine, a, &p->engine, err)) { bp_plan_free(p); return BP_ERR_NOMEM; }

    bp__storage st = {0};
    bp__lifetimes lt = {0};
    bp_interval *iv = NULL;
    uint64_t *offs = NULL;
    int32_t *slot = NULL, *buf = NULL;
    size_t n_iv = 0;
    bp_status s = bp__storage_build(g, opts, &st, err);
    if (!s) s = bp__lifetimes_compute(g, opts, &st, order, &lt, err);
    if (s) goto done;

    /* One interval per planned storage that is used. */
    slot = bp__alloc(a, (nt ? nt : 1) * sizeof *slot);
    if (!slot) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
    for (size_t t = 0; t < nt; t++) {
        slot[t] = -1;
        if (lt.root[t] == (int32_t)t && lt.planned[t] && lt.sfirst[t] >= 0) slot[t] = (int32_t)n_iv++;
    }
    iv = bp__alloc(a, (n_iv ? n_iv : 1) * sizeof *iv);
    offs = bp__alloc(a, (n_iv ? n_iv : 1) * sizeof *offs);
    if (!iv || !offs) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
    for (size_t t = 0; t < nt; t++) {
        if (slot[t] < 0) continue;
        iv[slot[t]] = (bp_interval){lt.sfirst[t], (int64_t)lt.slast[t] + 1, bp__align_up(lt.ssize[t], align), align, BP_NO_OFFSET};
    }
    p->stats.schedule_seconds = 0;
    double ta = bp__now();
    bp_assign_options ao;
    bp_assign_options_init(&ao);
    ao.time_limit = opts->time_limit;
    ao.seed = opts->seed;
    ao.progress = opts->progress;
    ao.alloc = &g->alloc;   /* the assigners' scratch comes from the graph's allocator too */
    bp_assign_result ar;
    memset(&ar, 0, sizeof ar);
    if (opts->fence_aware) {
        int32_t *roots = bp__alloc(a, (n_iv ? n_iv : 1) * sizeof *roots);
        if (!roots) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
        for (size_t t = 0; t < nt; t++) if (slot[t] >= 0) roots[slot[t]] = (int32_t)t;
        s = bp__assign_fence_aware(g, &lt, iv, roots, n_iv, offs, &ar, err);
        bp__free(a, roots, (n_iv ? n_iv : 1) * sizeof *roots);
    } else {
        s = bp_assign_intervals(iv, n_iv, opts->assign, &ao, offs, &ar, err);
    }
    p->stats.assign_seconds = bp__now() - ta;
    if (s) goto done;
    p->stats.optimal = ar.optimal;

    /* Buffer ids: for color, the rank of the storage's color base among the
     * distinct bases; otherwise the storage's own index. */
    buf = bp__alloc(a, (n_iv ? n_iv : 1) * sizeof *buf);
    if (!buf) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
    for (size_t i = 0; i < n_iv; i++) buf[i] = (int32_t)i;
    if (opts->assign == BP_ASSIGN_COLOR && n_iv) {
        uint64_t *bases = bp__alloc(a, n_iv * sizeof *bases);
        if (!bases) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); goto done; }
        memcpy(bases, offs, n_iv * sizeof *bases);
        qsort(bases, n_iv, sizeof *bases, cmp_u64);
        size_t nb = 0;
        for (size_t i = 0; i < n_iv; i++) if (!nb || bases[nb - 1] != bases[i]) bases[nb++] = bases[i];
        for (size_t i = 0; i < n_iv; i++) {
            size_t lo = 0, hi = nb; /* bases[lo] <= offs[i] < bases[hi] */
            while (lo + 1 < hi) { size_t mid = (lo + hi) / 2; if (bases[mid] <= offs[i]) lo = mid; else hi = mid; }
            buf[i] = (int32_t)lo;
        }
        bp__free(a, bases, n_iv * sizeof *bases);
    }

    {
        uint64_t arena = 0;
        for (size_t t = 0; t < nt; t++) {
            bp_tensor_plan *tp = &p->tp[t];
            int32_t r = lt.root[t];
            tp->first = lt.first[t];
            tp->last = lt.last[t];
            tp->bytes = g->t[t].bytes;
            tp->kind = tensor_kind(g, &lt, (int32_t)t);
            tp->alias_of = r != (int32_t)t ? r : -1;
            tp->view_offset = st.off ? st.off[t] : 0;   /* an in-place output sits at its storage's start */
            int32_t si = slot[r];
            if (si >= 0) {
                tp->offset = offs[si];
                tp->buffer = buf[si];
                uint64_t end = offs[si] + iv[si].size;
                if (end > arena) arena = end;
            }
        }
        p->stats.arena_bytes = arena;
        bp__plan_count(g, p);
        if (!plan_naive(g, &st, &lt, slot, align, &p->stats)) {
            s = bp__err(err, BP_ERR_LIMIT, "%s: the naive bytes (every planned tensor its own aligned buffer) overflow 64 bits", g->name);
            goto done;
        }
    }
    p->stats.lower_bound_bytes = bp__lifetimes_peak(g, &lt, align, &p->stats.peak_step);
    if (p->stats.peak_step < 0 && g->n_o > 0) {   /* bp__lifetimes_peak could not allocate */
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory computing the lower bound", g->name);
        goto done;
    }
    s = bp__plan_build_events(p, g, err);
    if (s) goto done;
    p->stats.plan_seconds = bp__now() - t0;
    if (opts->budget && p->stats.arena_bytes > opts->budget)
        s = bp__err(err, BP_ERR_BUDGET, "%s: the plan needs %llu bytes, over the budget of %llu bytes (lower bound for this order: %llu)",
                    g->name, (unsigned long long)p->stats.arena_bytes, (unsigned long long)opts->budget,
                    (unsigned long long)p->stats.lower_bound_bytes);

done:
    bp__free(a, slot, nt * sizeof *slot);
    bp__free(a, buf, n_iv * sizeof *buf);
    bp__free(a, iv, n_iv * sizeof *iv);
    bp__free(a, offs, n_iv * sizeof *offs);
    bp__lifetimes_free(g, &lt);
    bp__storage_free(g, &st);
    if (s) { bp_plan_free(p); return s; }
    *out = p;
    return BP_OK;
}

const bp_engine *bp_plan_engine(const bp_plan *p) { return p->engine; }
