/*
 * fallback.h — recompute and offload under a memory budget, private to the
 * fallback files of plan/ (fallback_model.c: each storage's uses and copies
 * and the live bytes per step; fallback.c: the greedy, the packing and the
 * certificate; fallback_out.c: the copies, events and stats written into the
 * plan).  Design: docs/design/fallback.md; user page: docs/FALLBACK.md.
 *
 * The model: a storage (an alias group in the arena) is *used* at every step
 * where one of its members is made or read, where a recompute reads it, and
 * at the final step when it holds a graph output.  Each use has a mode: KEEP
 * (the bytes stay in the arena since the previous use), RECOMP (the storage
 * left the arena after the previous use and its producer runs again before
 * this step's op) or PREF (it was copied to host memory after the previous
 * use and is copied back before this step's op).  The first use is where it
 * is made.  A run of uses joined by KEEP is one copy, resident from its first
 * use to its last, inclusive.
 */
#ifndef BP_PLAN_FALLBACK_H
#define BP_PLAN_FALLBACK_H

#include "plan/plan_internal.h"

enum { FB_KEEP = 0, FB_RECOMP = 1, FB_PREF = 2 };

typedef struct fb_store {
    int32_t root;          /* the storage's root tensor */
    int32_t op;            /* its producer (the root's) or -1 */
    uint64_t size;         /* aligned bytes */
    int32_t *use;          /* sorted distinct steps */
    uint8_t *mode;         /* per use: FB_KEEP / FB_RECOMP / FB_PREF */
    int32_t n;
    size_t cap_use, cap_mode;
    int32_t *base;         /* the uses of the graph itself (no recompute reads) */
    int32_t n_base;
    size_t cap_base;
    uint8_t can_recomp;    /* one member, its producer has one output and no bodies */
    uint8_t can_pref;      /* not a control-flow reservation */
} fb_store;

typedef struct fb_model {
    const bp_graph *g;
    const bp_plan *p;
    const bp_allocator *a;
    unsigned allow;        /* BP_FALLBACK_* */
    double bw;             /* bytes per cost unit */
    int variant;           /* the greedy's scoring variant (fallback.c) */
    int32_t no;
    size_t ns;
    fb_store *st;
    int32_t *sid;          /* n_t: the storage of a tensor in the arena, else -1 */
    int32_t *step;         /* n_o: op -> step */
    double *ccum;          /* n_o + 1: compute cost of steps [0, s) */
    /* live bytes per step: a segment tree with range add and max */
    int64_t *mx, *lz;
    int32_t leaves;
    /* transfer work queued per step (a Fenwick tree over steps) */
    double *load;
} fb_model;

bp_status bp__fb_model_init(fb_model *m, const bp_graph *g, const bp_plan *p, unsigned allow, double bw, bp_error *err);
void bp__fb_model_free(fb_model *m);
/* Back to the plan's own residency: every storage its base uses, all KEEP. */
bp_status bp__fb_model_reset(fb_model *m, bp_error *err);
/* The live bytes at step s, the max over steps and the first step reaching it. */
int64_t bp__fb_live_max(const fb_model *m, int32_t *at);
int64_t bp__fb_live_at(const fb_model *m, int32_t s);
void bp__fb_live_add(fb_model *m, int32_t lo, int32_t hi, int64_t d);
/* Index of the first use of k at or after step s (k->n when none). */
int32_t bp__fb_use_at(const fb_store *k, int32_t s);
/* The cost of making storage k valid at step s (dry run, depth-limited);
 * < 0 when it cannot be. */
double bp__fb_ensure_cost(const fb_model *m, int32_t k, int32_t s, int depth);
/* Makes it so: inserts the use, recomputing or prefetching recursively. */
bp_status bp__fb_ensure(fb_model *m, int32_t k, int32_t s, int depth, bp_error *err);
/* Whether the producer of storage k can run again at step s: its inputs
 * weights, external inputs still held, or storages ensure can make valid. */
double bp__fb_recomp_cost(const fb_model *m, int32_t k, int32_t s, int depth);
/* Evicts the gap before use i of storage k with mode FB_RECOMP or FB_PREF. */
bp_status bp__fb_evict(fb_model *m, int32_t k, int32_t i, uint8_t mode, bp_error *err);
/* The marginal transfer time not hidden behind compute if storage k is
 * offloaded over the gap before use i. */
double bp__fb_offload_cost(const fb_model *m, int32_t k, int32_t i);
/* Working-set bytes of every step (ws: n_o entries): the storages with a
 * base use there, which no recompute or offload can take out. */
void bp__fb_working_sets(const fb_model *m, uint64_t *ws);
/* 2 * bytes / bandwidth: an offload and a prefetch of storage k. */
double bp__fb_xfer(const fb_model *m, int32_t k);

/* fallback_out.c: writes the model's copies into p with the offsets in
 * seg_off (one per copy, in storage order then use order), the arena, the
 * events and the stats.  opts gives the bandwidth for the transfer time. */
bp_status bp__fb_write_plan(const fb_model *m, bp_plan *p, const uint64_t *seg_off, uint64_t arena, bp_error *err);
/* Number of copies (segments) of storage k and, with out != NULL, their
 * [first, last] steps and modes. */
int32_t bp__fb_segments(const fb_store *k, int32_t *first, int32_t *last, uint8_t *mode);

#endif /* BP_PLAN_FALLBACK_H */
