/*
 * Internal interface of the schedulers (schedule*.c, budget.c, cost_model.c).
 *
 * Everything a memory-aware scheduler needs is precomputed once per graph in
 * a bp__sgraph: the storages (planned alias groups, before in-place), which
 * storages each op touches (reads or writes), the op DAG, and the in-place
 * candidates of each op in the order lifetime.c tries them.  On top of it:
 *   - bp__sched_eval: the exact peak of an order (== bp__lifetimes_peak);
 *   - bp__sim: the same model stepped op by op, for greedy and search.
 */
#ifndef BP_SCHEDULE_INTERNAL_H
#define BP_SCHEDULE_INTERNAL_H

#include "graph/graph_internal.h"
#include "bufplan_sched.h"

enum { BP__SF_PINNED = 1, BP__SF_EXTLIVE = 2 };

typedef struct bp__ipc {   /* in-place candidate: output tensor over input tensor */
    int32_t out, in;
    int32_t so, si;        /* their storages */
} bp__ipc;

typedef struct bp__sgraph {
    const bp_graph *g;
    int32_t n, ns;                  /* ops, storages */
    uint64_t align;
    int32_t *tstore;                /* n_t: storage of a tensor, -1 if not planned */
    int32_t *sroot;                 /* ns: root tensor of the storage */
    uint64_t *ssize;                /* ns: aligned size */
    uint64_t *sbytes;               /* ns: the root's own bytes (in-place size test) */
    uint8_t *sflags;                /* ns: BP__SF_* */
    int32_t *to_off, *to;           /* op -> storages it touches (distinct), CSR */
    int32_t *so_off, *so;           /* storage -> ops touching it (distinct), CSR */
    int32_t *pr_off, *pr;           /* op -> predecessor ops (distinct), CSR */
    int32_t *su_off, *su;           /* op -> successor ops (distinct), CSR */
    int32_t *ip_off;                /* op -> in-place candidates, CSR into ip */
    bp__ipc *ip;
    uint64_t *alloc_full;           /* n: bytes an op allocates without in-place */
    uint64_t *alloc_ip;             /* n: ... when its in-place candidate merges */
    uint64_t base;                  /* storages live from the start */
    uint64_t lb;                    /* a lower bound of the peak over all orders */
    int exact;                      /* the step model equals the evaluator */
    int dp_exact;                   /* ... and sizes never change by in-place */
    void *blk[32]; size_t blksz[32]; int nblk;   /* what it holds */
} bp__sgraph;

bp_status bp__sgraph_build(const bp_graph *g, const bp_plan_options *o, bp__sgraph *sg, bp_error *err);
void bp__sgraph_free(bp__sgraph *sg);

/* Exact evaluator (same result as bp__lifetimes_compute + bp__lifetimes_peak)
 * with a reusable workspace.  The order must be a permutation (not checked:
 * bp__sched_check_order does that). */
typedef struct bp__eval {
    const bp__sgraph *sg;
    int32_t *pos, *sf, *sl, *par;
    int64_t *delta;
    uint8_t *pin;                   /* per union-find root: holds a graph output */
    void *blk[8]; size_t blksz[8]; int nblk;
} bp__eval;
bp_status bp__eval_init(bp__eval *ev, const bp__sgraph *sg, bp_error *err);
void bp__eval_free(bp__eval *ev);
uint64_t bp__eval_peak(bp__eval *ev, const int32_t *order, int32_t *peak_step);
/* Memory per step (n entries) and the peak. */
uint64_t bp__eval_profile(bp__eval *ev, const int32_t *order, uint64_t *mem);

/* Checks that order is a topological permutation; message names the op. */
bp_status bp__sched_check_order(const bp_graph *g, const int32_t *order, bp_error *err);

/* Step model: run ops one at a time. */
typedef struct bp__sim {
    const bp__sgraph *sg;
    int32_t *rem;          /* ns: touches left */
    uint64_t *cur;         /* ns: current size (in-place moves a size along) */
    uint64_t *cbytes;      /* ns: unaligned bytes of the storage chain's root */
    uint8_t *live;         /* ns: 0 not yet, 1 live, 2 gone */
    uint8_t *done;         /* n: op has run */
    int32_t *npred;        /* n: unfinished predecessors */
    int32_t *last1;        /* storages whose touches dropped to 1 in the last run */
    int32_t n_last1;
    uint64_t mem, peak;
    int32_t step;
    void *blk[8]; size_t blksz[8]; int nblk;
} bp__sim;
/* Copies the state of src into dst (same sgraph, both initialised). */
void bp__sim_copy(bp__sim *dst, const bp__sim *src);
bp_status bp__sim_init(bp__sim *s, const bp__sgraph *sg, bp_error *err);
void bp__sim_reset(bp__sim *s);
void bp__sim_free(bp__sim *s);
/* Bytes op would allocate and free if it ran now (in-place included). */
void bp__sim_delta(const bp__sim *s, int32_t op, uint64_t *alloc, uint64_t *freed);
/* Runs op (must be ready); returns the memory during its step. */
uint64_t bp__sim_run(bp__sim *s, int32_t op);
/* The op that is the last one left to touch storage st (after rem[st] == 1). */
int32_t bp__sim_last_toucher(const bp__sim *s, int32_t st);

/* Binary heap of (key, tie, op): max key first, then min tie.  Grows. */
typedef struct bp__hent { double key; uint64_t tie; int32_t op; } bp__hent;
typedef struct bp__heap {
    const bp_allocator *a;
    bp__hent *e;
    size_t n, cap;
    bool oom;
} bp__heap;
bool bp__heap_init(bp__heap *h, const bp_allocator *a, size_t cap);
void bp__heap_free(bp__heap *h);
void bp__heap_push(bp__heap *h, double key, uint64_t tie, int32_t op); /* sets h->oom on failure */
int32_t bp__heap_pop(bp__heap *h, double *key);

/* Random tie-breaks: 0 = op id order; else a per-op hash of the seed. */
static inline uint64_t bp__sched_tie(uint64_t seed, int32_t op)
{
    if (!seed) return (uint64_t)op;
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + (uint64_t)op * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Greedy schedulers over an sgraph; tie_seed 0 = deterministic op-id ties. */
bp_status bp__sched_dfs(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order, bp_error *err);
bp_status bp__sched_list(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order, bp_error *err);
bp_status bp__sched_lpmf(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order, bp_error *err);
bp_status bp__sched_seed(const bp__sgraph *sg, const double *cost, double alpha, double beta,
                         uint64_t tie_seed, int32_t *order, bp_error *err);

/* Exact search over sets of scheduled ops (best.c): dynamic
 * programming over the sets of scheduled ops, layer by layer, each set kept
 * once with its lowest peak.  Schedules region[0..k-1] from the state *start
 * (every predecessor outside the region has run there).  At most max_states
 * states per layer: beyond it only the best are kept (beam search, result
 * not proven).  Only steps below `bound` are allowed.  out gets the region's
 * ops in the best order found.  *work counts transitions times touches, hash
 * lookups, insertions and the sorting of a layer past its cap; the
 * search gives up (not proven, nothing found) past work_limit (0 = none)
 * or past the clock's deadline (bp__now() seconds; 0 = none).
 * Returns 1 if an order was found, 0 if not, -1 when out of memory. */
typedef struct bp__dp_result {
    uint64_t peak;      /* peak over the region's steps */
    int proven;         /* exhaustive: no order of the region is below `peak`
                           (or, when none was found, below `bound`) */
    uint64_t states;
} bp__dp_result;
int bp__sched_dp(const bp__sgraph *sg, const bp__sim *start, const int32_t *region, int32_t k,
                 uint64_t bound, size_t max_states, uint64_t *work, uint64_t work_limit,
                 double deadline, int32_t *out, bp__dp_result *res);
/* The same search over macro-ops: region[grp_off[g] .. grp_off[g+1]-1] is
 * macro-op g (ng of them), a topological sequence that always runs as a
 * block; a state is a set of macro-ops, a transition runs one whole block
 * (its step memory checked op by op).  grp_off NULL: every op alone. */
int bp__sched_dp_groups(const bp__sgraph *sg, const bp__sim *start, const int32_t *region, int32_t k,
                        const int32_t *grp_off, int32_t ng, uint64_t bound, size_t max_states,
                        uint64_t *work, uint64_t work_limit, double deadline, int32_t *out,
                        bp__dp_result *res);

/* Runs every fast scheduler (given when topological, kahn, dfs, list, lpmf,
 * seed with opts' and a few other weights); order gets the lowest peak
 * (ties: fewest steps at the peak), *name its scheduler.  *bound gets the
 * best order-independent lower bound it knows: the static one (sg->lb),
 * raised after the first order by the forced-live bound (graphs of up to
 * 4,096 ops).  It stops as soon as an order reaches the bound at a single
 * step: no later order could replace it, so the result is the one the
 * whole portfolio gives.  bound NULL: no bound, every order runs.  Returns
 * the peak, UINT64_MAX on error (err set). */
uint64_t bp__sched_portfolio(const bp__sgraph *sg, bp__eval *ev, const bp_plan_options *o, const double *cost,
                             int32_t *order, const char **name, uint64_t *work, uint64_t *bound, bp_error *err);

/* True when the clock is past deadline (bp__now() seconds; 0 = none). */
static inline bool bp__sched_late(double deadline) { return deadline > 0 && bp__now() > deadline; }

/* Local search (local.c): slides ops near the peak step across it
 * within their dependency windows, with the profile in a segment tree; every
 * kept order is scored by the exact evaluator.  order is replaced by an order
 * that is topological and not worse (lower peak, or the same peak at fewer
 * steps).  *work grows by the work done; stops past work_limit or the
 * deadline (bp__now() seconds, 0 = none).  Returns 1 if it improved the
 * order, 0 if not, -1 when out of memory (order unchanged). */
int bp__sched_local(const bp__sgraph *sg, bp__eval *ev, int32_t *order, uint64_t *work, uint64_t work_limit,
                    double deadline);

/* Decomposition (decomp.c).  Over a DAG whose vertices 0..n-1 are
 * numbered in a topological order, adjacency as CSR:
 *   idom: immediate dominators from a virtual root n joined to every vertex
 *         without predecessors (adj = predecessors, rev = 0), or immediate
 *         post-dominators from a virtual sink n (adj = successors, rev = 1).
 *         idom/dep/jmp get n + 1 entries (the tree, with skew-binary jump
 *         pointers); idom[n] = n.  O((V + E) log V).
 *   cuts: cut[v] = 1 when every other vertex is an ancestor or a descendant
 *         of v (v has the same step in every topological order), from each
 *         vertex's first successor fs[v] (n if none) and last predecessor
 *         lp[v] (-1 if none).  Vertices with ign[v] set (ign may be NULL;
 *         only vertices without predecessors) are left out: the cut points
 *         of the graph without them (lp must then skip them).  O(V). */
void bp__decomp_idom(int32_t n, const int32_t *off, const int32_t *adj, int rev, int32_t *idom, int32_t *dep,
                     int32_t *jmp);
void bp__decomp_cuts(int32_t n, const int32_t *fs, const int32_t *lp, const uint8_t *ign, uint8_t *cut);

typedef struct bp__decomp_info {
    uint64_t peak;        /* the step model's peak of the order */
    int proven;           /* optimal: exact pieces joined at cut points only */
    int32_t cuts, regions, comps, dps;   /* what the decomposition used */
    int32_t free_ops;     /* ops touching no storage, moved next to their successor */
    uint64_t states;      /* exact-search states */
} bp__decomp_info;

/* Decomposed schedule: splits the ops at cut points, then into weakly
 * connected components, then contracts maximal single-entry/single-exit
 * regions into macro-ops, solving small pieces with the exact search (bound
 * as bp__sched_dp's, state caps), larger ones from `in` (a topological
 * order: the fallback order of every piece).  Pieces of up to exact_max ops
 * (<= 0: the default, 40) go to the exact search.  out gets a topological order.
 * sim is a step simulator of sg (reset here, left in an unspecified state);
 * ev, an evaluator of sg or NULL, gives the input's profile faster.
 * Returns 1, or -1 when out of memory.  Deterministic (work, not time)
 * unless the clock passes the deadline (bp__now() seconds, 0 = none) first:
 * then the pieces left keep the input's order. */
int bp__decomp_schedule(const bp__sgraph *sg, bp__sim *sim, bp__eval *ev, const int32_t *in, uint64_t bound,
                        int32_t exact_max, int32_t *out, uint64_t *work, uint64_t work_limit, double deadline,
                        bp__decomp_info *info);

/* What the drivers (bp_schedule_ex, best, optimal) set up before they
 * schedule: the sgraph, its evaluator, optionally a step simulator, and the
 * op costs (n_o + 1 entries).  Init frees what it made when it fails;
 * free accepts a zeroed env. */
typedef struct bp__sched_env {
    bp__sgraph sg;
    bp__eval ev;
    bp__sim sim;
    double *cost;
} bp__sched_env;
bp_status bp__sched_env_init(bp__sched_env *e, const bp_graph *g, const bp_plan_options *o, bool with_sim,
                             bp_error *err);
void bp__sched_env_free(bp__sched_env *e);

/* best / optimal (best.c, optimal.c), over the driver's
 * env (made with a simulator). */
bp_status bp__sched_best(bp__sched_env *env, const bp_plan_options *o, int32_t *order,
                         bp_schedule_info *info, bp_error *err);
bp_status bp__sched_optimal(bp__sched_env *env, const bp_plan_options *o, int32_t *order,
                            bp_schedule_info *info, bp_error *err);
/* best with an explicit work limit (work units, about 2e8 a second; 0 is
 * taken as 1) and clock deadline (bp__now() seconds, <= 0 = none), with or
 * without the anytime phase; bp__sched_best derives all three from
 * opts->time_limit.  The same env, options, limit and anytime give the same
 * order when the deadline does not stop it first. */
bp_status bp__sched_best_run(bp__sched_env *env, const bp_plan_options *o, uint64_t limit, double deadline,
                             int anytime, int32_t *order, bp_schedule_info *info, bp_error *err);
/* The states per layer `optimal`'s search keeps over n ops (dp.c): 2^20,
 * at most 2^24 / n, at least 256.  best's anytime phase climbs to it. */
size_t bp__sched_optimal_cap(int32_t n);

/* Budget (budget.c): repairs an order so that every step fits opts->budget
 * (ops whose outputs do not fit wait, ops that free memory go first), or
 * fails with BP_ERR_BUDGET naming the smallest peak found and the op at which
 * the budget breaks.  `best_peak` is the smallest peak known (any order). */
bp_status bp__sched_budget(const bp__sgraph *sg, uint64_t budget, int32_t *order,
                           uint64_t best_peak, const char *best_name, bp_error *err);

/* Cost model (cost_model.c): the graph's cost if > 0, else an estimate from
 * shapes (FLOPs and bytes by op type).  cost gets n_ops entries. */
void bp__op_costs(const bp_graph *g, double *cost);
double bp__op_cost(const bp_graph *g, int32_t op);

/* ------------------------------------------------------------ scheduling */

/* Each scheduler fills order[0..n_ops-1].  Dispatch lives in schedule.c. */
bp_status bp__sched_given(const bp_graph *g, int32_t *order, bp_error *err);
bp_status bp__sched_kahn(const bp_graph *g, int32_t *order, bp_error *err);

#endif /* BP_SCHEDULE_INTERNAL_H */
