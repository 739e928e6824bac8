/*
 * plan_internal.h — lifetimes for an order (lifetime.c), the plan object and
 * its event table (plan.c), shared by plan/ and the stages above it.  Not
 * installed.
 */
#ifndef BP_PLAN_INTERNAL_H
#define BP_PLAN_INTERNAL_H

#include "graph/engine.h"
#include "graph/graph_internal.h"

/* Order-dependent lifetimes of storages: after in-place merging, root[t] may
 * change (a tensor written in place joins its input's storage).  first/last
 * are per tensor (its own lifetime) and sfirst/slast per root (union over
 * members, meaningful where root[t] == t). */
typedef struct bp__lifetimes {
    int32_t *step;       /* n_o: step of each op */
    int32_t *first, *last;    /* n_t: the tensor's own interval */
    int32_t *root;            /* n_t: storage root after in-place */
    int32_t *sfirst, *slast;  /* n_t: storage interval (valid for roots) */
    uint64_t *ssize;          /* n_t: storage bytes (valid for roots) */
    uint8_t *planned;         /* n_t: storage in the arena */
    /* concat_inplace: the storages' st->off and st->cat (borrowed from the
     * bp__storage the lifetimes were computed from; NULL otherwise) */
    const uint64_t *voff;
    const uint8_t *cat;
} bp__lifetimes;

bp_status bp__lifetimes_compute(const bp_graph *g, const bp_plan_options *o,
                                const bp__storage *st, const int32_t *order,
                                bp__lifetimes *lt, bp_error *err);
void bp__lifetimes_free(const bp_graph *g, bp__lifetimes *lt);
/* Max over steps of the aligned bytes of planned storages live at a step;
 * *peak_step gets a step where it is reached (may be NULL). */
uint64_t bp__lifetimes_peak(const bp_graph *g, const bp__lifetimes *lt, uint64_t alignment, int32_t *peak_step);

/* ---------------------------------------------------------------- plans */

struct bp_plan {
    bp_allocator alloc;
    int32_t n_t, n_o;
    int32_t *order;          /* n_o */
    bp_tensor_plan *tp;      /* n_t */
    bp_event *ev; size_t n_ev, cap_ev;
    uint64_t alignment;
    bp_sched_kind sched;
    bp_assign_kind assign;
    bp_plan_stats stats;
    /* control flow: one plan per body of the graph (g->bodies order), each
     * placed at body_base[i] in this plan's arena (plan_graph.c) */
    int32_t n_bodies;
    bp_plan **bodies;
    uint64_t *body_base;
    /* recompute and offload: the copies beyond each storage's first
     * placement (fallback.c), sorted by (tensor, first) */
    bp_copy *copies;
    int32_t n_copies;
    bp_engine *engine;       /* the engine profile it was made for (a copy), NULL = default */
};

/* Allocates an empty plan (order/tp arrays sized). */
bp_plan *bp__plan_alloc(const bp_allocator *a, int32_t n_t, int32_t n_o);
/* plan_graph.c.  Bytes of the slots at the start of body b's reservation (the
 * inputs a Loop or Scan refills each iteration), each aligned; slot_off (n_io
 * entries, may be NULL) gets each io's slot offset or BP_NO_OFFSET.
 * BP_ERR_UNSUPPORTED when a slot has a dynamic size. */
bp_status bp__body_slots(const bp_graph *g, const bp__body *b, uint64_t align, uint64_t *slot_off, uint64_t *total, bp_error *err);
/* n_control_flow and n_body_planned from g's control-flow ops and p's body
 * plans (all of them filled in; plan.c). */
void bp__plan_count_bodies(const bp_graph *g, bp_plan *p);
/* bp_plan_graph_order without the bodies (plan.c); plan_graph.c adds them. */
bp_status bp__plan_flat(const bp_graph *g, const bp_plan_options *opts, const int32_t *order, bp_plan **out, bp_error *err);
/* Builds the event table from order and tp (lazy ALLOC, FREE after last use). */
bp_status bp__plan_build_events(bp_plan *p, const bp_graph *g, bp_error *err);
/* The counts of p->stats (n_planned ... n_weights) and dynamic_bytes, from
 * p's placements and kinds. */
void bp__plan_count(const bp_graph *g, bp_plan *p);
/* fallback.c: p's arena is over o->budget; adds recomputes and offloads
 * (o->fallback) so that it fits, or fails with BP_ERR_BUDGET and a
 * certificate (docs/FALLBACK.md). */
bp_status bp__plan_fallback(const bp_graph *g, const bp_plan_options *o, bp_plan *p, bp_error *err);
/* The references the benchmarks compare with, on p (a plan without a
 * budget) whatever the budget: policy 1 is Chen et al.'s checkpointing
 * (of the storages saved across the plan's peak step, in order of their
 * first use, every ceil(sqrt(n))-th is kept, the others recomputed at their
 * next use, recursively from the kept ones), 2 offloads every one of them. */
bp_status bp__plan_fallback_reference(const bp_graph *g, const bp_plan_options *o, bp_plan *p, int policy, bp_error *err);
/* verify_copies.c: the checks of a plan with copies that replace the
 * whole-interval overlap sweep and the event check of verify.c.  rep[t] is
 * the verifier's storage of tensor t (its root), soff/ssize per root; each
 * problem goes to why(ctx, message); returns false when out of memory. */
bool bp__verify_copies(const bp_graph *g, const bp_plan *p, const int32_t *rep, const uint64_t *soff, const uint64_t *ssize,
                       void (*why)(void *ctx, const char *msg), void *ctx);

/* config_limits.c: sets the limit `key` (key_len bytes; a bp_limits field or
 * max_run_bytes) of a config to n, BP_ERR_INVALID naming `where` for an
 * unknown key or a value out of range; writes the "limits" object. */
bp_status bp__config_set_limit(bp_config *c, const char *where, const char *key, size_t key_len, uint64_t n, bp_error *err);
void bp__config_write_limits(const bp_config *c, FILE *f);

#endif /* BP_PLAN_INTERNAL_H */
