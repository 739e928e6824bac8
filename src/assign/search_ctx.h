/*
 * search_ctx.h — the layout of search's context (struct bp__search, sr_ctx
 * in the search files), its parts, candidates and frames: private to
 * search_build.c (which makes and frees it), search.c (the decision search
 * on it) and search_probe.c (the capacities it decides).
 */
#ifndef BP_ASSIGN_SEARCH_CTX_H
#define BP_ASSIGN_SEARCH_CTX_H

#include "assign/assign_internal.h"

/* The results of a decision (bp__assign_search_decide). */
enum { SR_FOUND, SR_INFEASIBLE, SR_ABORTED, SR_TIMEOUT };

/* Up to this many buffers, overlaps and the unplaced set are also kept as
 * bitsets (k^2 / 8 bytes: 2 MiB here): a placement visits only the unplaced
 * buffers it overlaps, a word at a time. */
#define SR_BITSET_MAX 4096u

typedef struct sr_part {
    uint32_t s0, s1;        /* sections [s0, s1) */
    uint32_t b0, b1;        /* buffers part_buf[b0..b1) */
    uint64_t best;          /* height of the part's best packing */
    uint64_t lo;            /* every capacity < lo is infeasible */
} sr_part;

/* Candidate order within a node: (minoff, rank). */
typedef struct sr_cand { uint64_t off; uint32_t rank, b; } sr_cand;

/* The depth-first search runs on an explicit stack of frames (c->fr, grown
 * with the allocator): its depth is the number of buffers placed, which the
 * input controls, so it never recurses on the C stack.  Two kinds of frame:
 *
 *  - a node (SR_FR_NODE until entered, then SR_FR_TRY): the `left` unplaced
 *    buffers of sections [s0, s1), listed in bufs[0..nb) or, when bufs is
 *    NULL, in c->lists[list_pos .. list_pos + nb) (a sub-part: the list
 *    stack may be reallocated while it is searched, so the pointer is
 *    re-derived); last_off and last_rank are the previous placement
 *    (canonical order).  Its candidates are c->cand[base .. base + nc);
 *    candidate i is placed while its child frame runs, trm/tsm being the
 *    undo marks.
 *  - a split (SR_FR_SPLIT0 until entered, then SR_FR_SPLIT): after a
 *    placement no unplaced buffer crosses some boundary inside [s0, s1), so
 *    the rest falls into independent sub-parts solved one after the other
 *    (each from offset 0: they share no time), each as a child node frame
 *    over its own list pushed on c->lists; [a, e) is the sub-part running.
 *
 * A frame that finishes hands its result to its parent (sr_node_back,
 * sr_split_back), which
 * undoes what it did for that child and goes on or finishes in turn.  The
 * order of nodes, and so the node counts, are those of the plain recursion. */
enum { SR_MK = 4 };   /* lowest ceilings kept per node */
enum { SR_FR_NODE, SR_FR_TRY, SR_FR_SPLIT0, SR_FR_SPLIT };

typedef struct sr_frame {
    uint32_t kind;
    uint32_t s0, s1, nb, left;
    uint32_t *bufs;         /* NULL: c->lists + list_pos */
    size_t list_pos;
    union {
        struct {
            uint64_t last_off; uint32_t last_rank; size_t base, nc, i, trm, tsm;
            /* largest unplaced section total and a section holding it; on
             * entry, the parent's, with pb the buffer it placed (UINT32_MAX:
             * none) */
            uint64_t mt; uint32_t ms, pb;
            /* the SR_MK buffers with the lowest ceilings (UINT32_MAX: none)
             * when they were last found, every other unplaced one's ceiling
             * being >= mb then (so still: ceilings only rise); on entry,
             * the parent's.  dead: pb raised a buffer's ceiling above cap */
            uint64_t mb; uint32_t mk[SR_MK]; bool dead;
            /* candidates are the unplaced buffers with floor below lim */
            uint64_t lim;
        } n;
        struct { size_t mark, start; uint32_t a, e, cnt; } s;
    } u;
} sr_frame;

/* The context (bp__search in assign_internal.h). */
struct bp__search {
    /* problem (k buffers with size > 0) */
    uint32_t k;
    uint32_t *orig;         /* k: index in the caller's array */
    uint64_t *size, *align; /* k */
    uint32_t *slo, *shi;    /* k: sections [slo, shi) */
    uint32_t *ov_off, *ov;  /* CSR: buffers overlapping in time */
    uint32_t n_sec;
    uint64_t *sec_total0;   /* n_sec: sum of sizes live in the section */
    uint32_t n_parts;
    sr_part *parts;
    uint32_t *part_buf;     /* k: buffers grouped by part */
    uint64_t g;
    /* pre-placed buffers (obstacles): nf of them, ids k..k+nf-1 in slo/shi */
    uint32_t nf, nt;              /* nt = k + nf */
    uint64_t *fxo, *fxe;          /* nf: offset, end */
    uint64_t ftop;                /* highest obstacle end */
    uint32_t *fx_off, *fx;        /* CSR: obstacles overlapping each free buffer */
    uint32_t *sfx_off, *sfx;      /* CSR: obstacles live in each section */
    /* static preorders */
    int n_heur;
    uint32_t *pre;          /* n_heur * k: rank of buffer b in heuristic h */
    bool pre_done[4];       /* pre of heuristic h is ranked */
    uint64_t *len;          /* k: lifetime length (upper - lower) */
    uint32_t *wrank;        /* k: working ranks (sub-parts re-rank theirs) */
    bp__prio_key *keys, *keys2;  /* k each: scratch for re-ranking */
#ifndef NDEBUG
    uint32_t *dbg_w;        /* 2k: scratch for the debug builds' cross-checks */
#endif
    /* sub-part re-ranking with compact keys (allocated at the first split
     * of each heuristic, see sr_rank_sub): ranks by the static keys */
    uint32_t *sk[4];        /* k each: h >= 1: rank by (2nd, 3rd key, b); h = 0: (W, A) group */
    uint64_t *pk;           /* k: packed keys (scratch) */
    uint64_t tmax;          /* largest section total */
    unsigned bb, bt;        /* bits of k - 1 and of tmax */
    bool packs[4];          /* the keys of heuristic h fit in 64 bits */
    int h;                  /* current heuristic */
    /* search state */
    uint64_t *off;          /* k: offset or UINT64_MAX */
    uint64_t *minoff;       /* k */
    uint64_t *floor_;       /* n_sec */
    uint64_t *total;        /* n_sec: unplaced sizes */
    uint64_t *sol;          /* k: packing being recorded by the search */
    uint64_t *best;         /* k: best packing found (per part) */
    int32_t *cross;         /* n_sec + 1: unplaced buffers crossing boundary s-1|s */
    int32_t *cross0;
    uint32_t *sec_off, *sec_buf;  /* CSR: buffers live in each section (NULL if too big) */
    size_t n_sec_buf, n_ov, n_fx, n_sfx;  /* entries allocated in sec_buf, ov, fx, sfx */
    uint32_t *stamp, stamp_now;
    uint32_t *wit;          /* n_sec: a buffer that last passed sr_sec_scan */
    uint32_t *pos;          /* k: index of b in the buffer list its node walks */
    /* bitsets (k <= SR_BITSET_MAX): overlaps of each buffer, unplaced ones */
    uint32_t W;             /* 64-bit words per row */
    uint64_t *ovb;          /* k * W */
    uint64_t *unpl;         /* W */
    uint64_t *secb;         /* n_sec * W: buffers live in each section */
    /* what the last sr_place raised: sections [rlo, rhi) cover b's and the
     * raised buffers'; rmax = highest floor it set */
    uint32_t rlo, rhi;
    uint64_t rmax;
    bool rdead;             /* ... and raised a ceiling above cap */
    uint32_t lastfail;      /* the section that failed sr_predict last */
    uint32_t *rl, rl_n;     /* k: the buffers sr_predict's scan found b raises */
    uint32_t rl_b;          /* ... for buffer rl_b (UINT32_MAX: none) at height rl_h */
    uint64_t rl_h;
    bool aligned;           /* some buffer has an alignment > 1 */
    uint32_t *lists; size_t lists_n, lists_cap;  /* stack of sub-part buffer lists */
    /* trail for undo */
    struct { uint32_t b; uint64_t v; } *tr; size_t tr_n, tr_cap;
    struct { uint32_t s; uint64_t v; } *ts; size_t ts_n, ts_cap;
    /* candidates, a stack of per-depth slices */
    struct sr_cand *cand; size_t cand_n, cand_cap;
    /* the search's frames (an explicit stack, see sr_search) */
    struct sr_frame *fr; size_t fr_n, fr_cap;
    const bp_allocator *a;  /* everything above is allocated with it */
    /* limits */
    uint64_t cap;           /* capacity of the current decision */
    uint32_t *rank;         /* current preorder (= wrank) */
    int64_t nodes_left;
    uint64_t nodes, max_nodes;  /* nodes entered; the budget over all probes */
    double t0, deadline;
    bool timed_out, oom;
    /* progress */
    bool progress;
    double last_print;
    int printed;
    uint64_t show_lb, show_ub;
};
typedef struct bp__search sr_ctx;

#endif
