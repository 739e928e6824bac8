/* The brute-force scheduling oracle of the schedule tests: the lowest
 * evaluator peak over every topological order of a small graph (up to
 * SCHED_BF_MAX ops), and how many orders there are.  A caller may also see
 * every order (visit, with ctx). */
#ifndef BP_SCHED_BRUTEFORCE_H
#define BP_SCHED_BRUTEFORCE_H

#include "schedule/schedule_internal.h"

#define SCHED_BF_MAX 16

typedef struct sched_bf {
    const bp__sgraph *sg;
    bp__eval *ev;
    int32_t order[SCHED_BF_MAX], npred[SCHED_BF_MAX];
    uint8_t used[SCHED_BF_MAX];
    uint64_t best;
    long count;
    void (*visit)(void *ctx, const int32_t *order); /* optional, per order */
    void *ctx;
} sched_bf;

static void sched_bf_rec(sched_bf *b, int32_t k)
{
    const bp__sgraph *sg = b->sg;
    if (k == sg->n) {
        uint64_t p = bp__eval_peak(b->ev, b->order, NULL);
        if (p < b->best) b->best = p;
        b->count++;
        if (b->visit) b->visit(b->ctx, b->order);
        return;
    }
    for (int32_t v = 0; v < sg->n; v++) {
        if (b->used[v] || b->npred[v]) continue;
        b->used[v] = 1;
        b->order[k] = v;
        for (int32_t i = sg->su_off[v]; i < sg->su_off[v + 1]; i++) b->npred[sg->su[i]]--;
        sched_bf_rec(b, k + 1);
        for (int32_t i = sg->su_off[v]; i < sg->su_off[v + 1]; i++) b->npred[sg->su[i]]++;
        b->used[v] = 0;
    }
}

/* Fills *b for sg (at most SCHED_BF_MAX ops): b->best is the optimum,
 * b->count the number of topological orders. */
static inline void sched_bf_run_visit(sched_bf *b, const bp__sgraph *sg, bp__eval *ev,
                                      void (*visit)(void *, const int32_t *), void *ctx)
{
    memset(b, 0, sizeof *b);
    b->visit = visit;
    b->ctx = ctx;
    b->sg = sg;
    b->ev = ev;
    b->best = UINT64_MAX;
    for (int32_t v = 0; v < sg->n; v++) b->npred[v] = sg->pr_off[v + 1] - sg->pr_off[v];
    sched_bf_rec(b, 0);
}

static inline void sched_bf_run(sched_bf *b, const bp__sgraph *sg, bp__eval *ev)
{
    sched_bf_run_visit(b, sg, ev, NULL, NULL);
}

#endif
