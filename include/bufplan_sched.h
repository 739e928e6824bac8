/*
 * bufplan — scheduling reports: peak of an order, makespan on N workers, the
 * alpha/beta trade-off sweep, op costs, and a scheduler call that also says
 * whether the order was proven optimal.  Included by bufplan.h.
 */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_SCHED_H
#define BUFPLAN_SCHED_H

#include "bufplan_api.h"


#ifdef __cplusplus
extern "C" {
#endif

/* What a scheduler found. */
typedef struct bp_schedule_info {
    uint64_t peak_bytes;     /* the order's lower bound (max live planned bytes) */
    uint64_t lower_bound;    /* a lower bound over all orders (0 if unknown) */
    int optimal;             /* 1 if the order is proven to have the lowest peak */
    uint64_t states;         /* exact-search states explored (best/optimal) */
    double seconds;
    const char *picked;      /* best: which method found the order ("list", "dp", ...) */
} bp_schedule_info;

/* Like bp_schedule(), and fills info (may be NULL). */
BP_API bp_status bp_schedule_ex(const bp_graph *g, const bp_plan_options *opts, int32_t *order,
                                bp_schedule_info *info, bp_error *err);

/* Peak of an order: max over steps of the aligned bytes of planned storages
 * live at that step, with views and in-place as bp_plan_graph_order does
 * them (opts: alignment, no_alias, plan_inputs, plan_constants; NULL =
 * defaults).  Equal to the plan's lower_bound_bytes.  O(V + E).
 * The order must be a topological permutation of the ops. */
BP_API bp_status bp_schedule_peak(const bp_graph *g, const bp_plan_options *opts, const int32_t *order,
                                  uint64_t *peak, int32_t *peak_step, bp_error *err);

/* Estimated cost of an op: the graph's cost when > 0, else a roofline
 * estimate from shapes (FLOPs at 1e12/s, bytes at 1e11/s, in microseconds). */
BP_API double bp_op_cost(const bp_graph *g, int32_t op);

/* Makespan of an order on `workers` parallel workers (list scheduling): ops
 * are dispatched in the order; each goes to the worker that is free first
 * and starts when that worker is free and all its producers have finished.
 * Uses bp_op_cost. */
BP_API bp_status bp_schedule_makespan(const bp_graph *g, const int32_t *order, int workers,
                                      double *makespan, bp_error *err);

/* One point of the `seed` scheduler's memory/latency trade-off. */
typedef struct bp_sweep_point {
    double alpha, beta;      /* beta = 1 - alpha */
    uint64_t peak_bytes;
    double makespan;         /* on opts->threads workers */
} bp_sweep_point;

/* Runs the `seed` scheduler for n_points values of alpha evenly spaced in
 * [0, 1] (beta = 1 - alpha); fills points[0..n_points-1]. */
BP_API bp_status bp_schedule_sweep_alpha(const bp_graph *g, const bp_plan_options *opts, int n_points,
                                         bp_sweep_point *points, bp_error *err);

#ifdef __cplusplus
}
#endif

#endif /* BUFPLAN_SCHED_H */
