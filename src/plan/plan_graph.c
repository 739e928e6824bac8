/*
 * plan_graph.c — the planning entry points: schedule (unless the caller gives
 * the order), the pipeline of plan.c, then the plans of control-flow bodies,
 * nested in the parent's arena.
 *
 * A control-flow op's reservation (an output of the op that lives only at its
 * step) is placed by the parent's planner like any tensor.  Inside it lie,
 * from its start: the slots a Loop or Scan refills each iteration (iteration
 * number, condition, carried values, slices; each aligned), then the body's
 * own arena, planned by the same pipeline as the parent.  An If's branches
 * both start at the reservation's start: only one of them runs.  Sizing
 * (bp_graph_reserve_bodies) plans each body, innermost first, and writes the
 * reservation's bytes into the graph; planning (bp__plan_bodies) plans them
 * again with the same options, which gives the same plans, and checks that
 * they fit.
 */
#include "plan/plan_internal.h"

#include <string.h>

static bool is_slot(bp_body_io_kind k) { return k == BP_BODY_ITER || k == BP_BODY_COND || k == BP_BODY_CARRIED || k == BP_BODY_SLICE; }

bp_status bp__body_slots(const bp_graph *g, const bp__body *b, uint64_t align, uint64_t *slot_off, uint64_t *total, bp_error *err)
{
    uint64_t off = 0;
    for (int32_t q = 0; q < b->n_io; q++) {
        const bp_body_io *e = &b->io[q];
        if (slot_off) slot_off[q] = BP_NO_OFFSET;
        if (!is_slot(e->kind)) continue;
        const bp__tensor *x = &b->g->t[e->body_tensor];
        if (x->dynamic)
            return bp__err(err, BP_ERR_UNSUPPORTED, "%s: op \"%s\": body input \"%s\" has no fixed size (it changes from one iteration to the next, or is a sequence); bufplan cannot reserve its slot",
                           g->name, bp__names_get(&g->onames, b->op), bp__names_get(&b->g->tnames, e->body_tensor));
        if (slot_off) slot_off[q] = off;
        off += bp__align_up(x->bytes, align);
    }
    *total = off;
    return BP_OK;
}

/* The options a body is planned with: the parent's, without a budget (the
 * parent's arena, reservation included, is what the budget bounds). */
static bp_plan_options body_options(const bp_plan_options *o)
{
    bp_plan_options b = *o;
    b.budget = 0;
    b.progress = 0;
    return b;
}

/* Bytes body i needs: slots + its arena, planned now. */
static bp_status body_need(const bp_graph *g, size_t i, const bp_plan_options *o, uint64_t *need, bp_plan **keep, bp_error *err)
{
    const bp__body *b = &g->bodies[i];
    uint64_t slots;
    bp_status s = bp__body_slots(g, b, o->alignment ? o->alignment : 1, NULL, &slots, err);
    bp_plan *bp = NULL;
    if (!s) s = bp_plan_graph(b->g, o, &bp, err);
    if (s) return s;
    *need = slots + bp->stats.arena_bytes;
    if (keep) *keep = bp;
    else bp_plan_free(bp);
    return BP_OK;
}

bp_status bp_graph_reserve_bodies(bp_graph *g, const bp_plan_options *opts, bp_error *err)
{
    bp_plan_options defaults;
    if (!opts) { bp_plan_options_init(&defaults); opts = &defaults; }
    bp_plan_options o = body_options(opts);
    for (size_t i = 0; i < g->n_bodies; i++) g->t[g->bodies[i].reserve].bytes = 0;
    for (size_t i = 0; i < g->n_bodies; i++) {
        bp__body *b = &g->bodies[i];
        bp_status s = bp_graph_reserve_bodies(b->g, &o, err);
        if (!s) s = bp_graph_finalize(b->g, err);
        uint64_t need = 0;
        if (!s) s = body_need(g, i, &o, &need, NULL, err);
        if (s) return s;
        if (need > g->t[b->reserve].bytes) g->t[b->reserve].bytes = need;
    }
    return bp_graph_finalize(g, err);
}

/* Plans every body of g into p (after p's own placement): the bodies'
 * reservations must hold them (bp_graph_reserve_bodies). */
static bp_status plan_bodies(bp_plan *p, const bp_graph *g, const bp_plan_options *opts, bp_error *err)
{
    size_t n = g->n_bodies;
    p->bodies = bp__calloc(&p->alloc, n, sizeof *p->bodies);
    p->body_base = bp__alloc(&p->alloc, n * sizeof *p->body_base);
    if (!p->bodies || !p->body_base) {
        bp__free(&p->alloc, p->bodies, n * sizeof *p->bodies);
        bp__free(&p->alloc, p->body_base, n * sizeof *p->body_base);
        p->bodies = NULL;
        p->body_base = NULL;
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory planning bodies", g->name);
    }
    p->n_bodies = (int32_t)n;
    bp_plan_options o = body_options(opts);
    for (size_t i = 0; i < n; i++) {
        const bp__body *b = &g->bodies[i];
        uint64_t need = 0, slots = 0, have = g->t[b->reserve].bytes;
        bp_status s = body_need(g, i, &o, &need, &p->bodies[i], err);
        if (!s) s = bp__body_slots(g, b, p->alignment, NULL, &slots, err);
        if (s) return s;
        if (need > have)
            return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": its %s body needs %llu bytes, its reservation \"%s\" holds %llu (size it with bp_graph_reserve_bodies and the same options)",
                           g->name, bp__names_get(&g->onames, b->op), bp_body_kind_name(b->kind), (unsigned long long)need,
                           bp__names_get(&g->tnames, b->reserve), (unsigned long long)have);
        p->body_base[i] = p->tp[b->reserve].offset + slots;
    }
    bp__plan_count_bodies(g, p);
    return BP_OK;
}

int32_t bp_plan_n_bodies(const bp_plan *p) { return p->n_bodies; }
const bp_plan *bp_plan_body(const bp_plan *p, int32_t i) { return i >= 0 && i < p->n_bodies ? p->bodies[i] : NULL; }
uint64_t bp_plan_body_base(const bp_plan *p, int32_t i) { return i >= 0 && i < p->n_bodies ? p->body_base[i] : BP_NO_OFFSET; }

/* Whether a plan over the budget may recompute and offload (not with
 * control flow: bodies are planned inside reservations that stay put). */
static bool use_fallback(const bp_graph *g, const bp_plan_options *o)
{
    return o->budget && (o->fallback & (BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD)) && !g->n_bodies;
}

/* The flat plan of order without the budget, then recompute and offload
 * when its arena is over it. */
static bp_status plan_fallback(const bp_graph *g, const bp_plan_options *opts, const int32_t *order, bp_plan **out, bp_error *err)
{
    bp_plan_options o = *opts;
    o.budget = 0;
    bp_status s = bp__plan_flat(g, &o, order, out, err);
    if (s || (*out)->stats.arena_bytes <= opts->budget) return s;
    double t0 = bp__now();
    s = bp__plan_fallback(g, opts, *out, err);
    if (s) { bp_plan_free(*out); *out = NULL; return s; }
    (*out)->stats.plan_seconds += bp__now() - t0;
    return BP_OK;
}

/* The fallback options are sound. */
static bp_status check_fallback(const bp_graph *g, const bp_plan_options *o, bp_error *err)
{
    if (o->host_bandwidth < 0 || o->host_bandwidth != o->host_bandwidth)
        return bp__err(err, BP_ERR_USAGE, "%s: host_bandwidth %g is not a non-negative number of bytes per second", g->name, o->host_bandwidth);
    if (o->fallback & ~(BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD))
        return bp__err(err, BP_ERR_USAGE, "%s: unknown fallback bits 0x%x (BP_FALLBACK_RECOMPUTE, BP_FALLBACK_OFFLOAD)", g->name, o->fallback);
    return BP_OK;
}

bp_status bp_plan_graph_order(const bp_graph *g, const bp_plan_options *opts, const int32_t *order, bp_plan **out, bp_error *err)
{
    bp_plan_options defaults;
    if (!opts) { bp_plan_options_init(&defaults); opts = &defaults; }
    bp_status fs = check_fallback(g, opts, err);
    if (fs) { *out = NULL; return fs; }
    if (use_fallback(g, opts)) return plan_fallback(g, opts, order, out, err);
    bp_status s = bp__plan_flat(g, opts, order, out, err);
    if (s || !g->n_bodies) return s;
    double t0 = bp__now();
    s = plan_bodies(*out, g, opts, err);
    if (s) { bp_plan_free(*out); *out = NULL; return s; }
    (*out)->stats.plan_seconds += bp__now() - t0;
    return BP_OK;
}

/* One plan with these options: the schedule, then bp_plan_graph_order. */
static bp_status plan_one(const bp_graph *g, const bp_plan_options *opts, bp_plan **out, bp_error *err)
{
    *out = NULL;
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized (call bp_graph_finalize)", g->name);
    bp_plan_options defaults;
    if (!opts) { bp_plan_options_init(&defaults); opts = &defaults; }
    bp_status fs = check_fallback(g, opts, err);
    if (fs) return fs;
    int32_t *order = bp__alloc(&g->alloc, (g->n_o ? g->n_o : 1) * sizeof *order);
    if (!order) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    double t0 = bp__now();
    bp_schedule_info info;
    memset(&info, 0, sizeof info);
    /* given and kahn without a budget need no evaluator (their peak is the
     * plan's lower bound anyway): the fast path of bp_schedule */
    /* With recompute and offload the order is the scheduler's best without
     * the budget (its peak is what a budgeted search would repair from);
     * the fallback makes it fit when its arena is over the budget. */
    bp_plan_options nob = *opts;
    if (use_fallback(g, opts)) nob.budget = 0;
    bp_status s = (opts->sched == BP_SCHED_GIVEN || opts->sched == BP_SCHED_KAHN) && !nob.budget
                      ? bp_schedule(g, &nob, order, err)
                      : bp_schedule_ex(g, &nob, order, &info, err);
    double ts = bp__now() - t0;
    if (!s) s = bp_plan_graph_order(g, opts, order, out, err);
    if (*out) {
        double ms = 0;
        if (bp_schedule_makespan(g, order, opts->threads > 0 ? opts->threads : 1, &ms, NULL) == BP_OK)
            (*out)->stats.makespan = ms;
        (*out)->stats.sched_optimal = info.optimal;
        (*out)->stats.schedule_seconds = ts;
        (*out)->stats.plan_seconds = bp__now() - t0;
    }
    bp__free(&g->alloc, order, g->n_o * sizeof *order);
    return s;
}

/* With concat_inplace, the plan without it too, keeping the smaller arena
 * (the merged one when they tie): slices lengthen their storage's life, and
 * on some graphs that costs more than the copies it saves.  Not for a graph
 * with control flow, whose reservations are sized for one set of options
 * (its bodies, planned by this function, still choose). */
bp_status bp_plan_graph(const bp_graph *g, const bp_plan_options *opts, bp_plan **out, bp_error *err)
{
    *out = NULL;
    /* a graph with bodies: its reservations were sized for opts alone */
    if (!opts || !opts->concat_inplace || opts->no_alias || g->n_bodies) return plan_one(g, opts, out, err);
    bp_plan_options off = *opts;
    off.concat_inplace = 0;
    bp_plan *a = NULL, *b = NULL;
    double t0 = bp__now();
    bp_error eb;
    bp_status s = plan_one(g, opts, &a, err);
    if (s && s != BP_ERR_BUDGET) return s;
    bp_status sb = plan_one(g, &off, &b, &eb);
    if (s && sb) return s;                 /* neither fits the budget: the merged plan's message */
    if (sb && sb != BP_ERR_BUDGET) { bp_plan_free(a); if (err) *err = eb; return sb; }
    bool keep_a = a && (!b || a->stats.arena_bytes <= b->stats.arena_bytes);
    *out = keep_a ? a : b;
    bp_plan_free(keep_a ? b : a);
    (*out)->stats.plan_seconds = bp__now() - t0;
    return BP_OK;
}
