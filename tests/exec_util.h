/* Helpers shared by the executor tests (test_exec*.c, test_history.c):
 * small generated graphs of every kind, running a mode and comparing its
 * outputs with a safe run, and a deliberately broken plan (one storage's
 * lifetime cut short and the arena re-packed, so another tensor is placed
 * over its bytes while it is still live). */
#ifndef BP_EXEC_UTIL_H
#define BP_EXEC_UTIL_H
#include "bufplan.h"
#include "check.h"
#include "plan/plan_internal.h"

#include <inttypes.h>

/* A small randwire graph (16 nodes per stage, width 4) and its default
 * plan, for the kernel-error tests; false (with a failed check) if either
 * cannot be made. */
static inline bool eu_small_randwire(int layers, bp_graph **g, bp_plan **p)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.layers = layers; go.nodes = 16; go.width = 4;
    bp_error e;
    *g = NULL;
    *p = NULL;
    CHECK_OK(bp_gen("randwire", &go, NULL, g, &e), e);
    if (!*g) return false;
    CHECK_OK(bp_plan_graph(*g, NULL, p, &e), e);
    if (!*p) { bp_graph_free(*g); *g = NULL; return false; }
    return true;
}

/* Small instances of every generator kind (fast under sanitizers). */
typedef struct eu_case { const char *kind; bp_gen_options o; } eu_case;

static inline int eu_cases(eu_case *c, int cap)
{
    int n = 0;
    const char *const *kinds = bp_gen_kinds();
    for (int k = 0; kinds[k] && n < cap; k++) {
        eu_case x;
        x.kind = kinds[k];
        bp_gen_options_init(&x.o);
        x.o.seed = 7;
        if (!strcmp(x.kind, "chain")) { x.o.nodes = 40; x.o.width = 64; }
        else if (!strcmp(x.kind, "resnet50")) { x.o.width = 4; }
        else if (!strcmp(x.kind, "unet")) { x.o.layers = 2; x.o.width = 4; }
        else if (!strcmp(x.kind, "transformer")) { x.o.layers = 1; x.o.width = 64; x.o.seq = 8; }
        else if (!strcmp(x.kind, "randwire")) { x.o.layers = 2; x.o.nodes = 16; x.o.width = 4; }
        c[n++] = x;
    }
    /* training graphs: activations live until their gradient op */
    if (n + 2 <= cap) {
        eu_case t1 = {"transformer", {0}}, t2 = {"randwire", {0}};
        bp_gen_options_init(&t1.o); t1.o.layers = 1; t1.o.width = 64; t1.o.seq = 8; t1.o.training = 1;
        bp_gen_options_init(&t2.o); t2.o.layers = 1; t2.o.nodes = 12; t2.o.width = 4; t2.o.training = 1; t2.o.seed = 3;
        c[n++] = t1;
        c[n++] = t2;
    }
    return n;
}

/* Case c's graph, or NULL after a failed check. */
static inline bp_graph *eu_gen(const eu_case *c)
{
    bp_graph *g = NULL;
    bp_error e;
    if (bp_gen(c->kind, &c->o, NULL, &g, &e)) { CHECK_MSG(0, "gen %s: %s", c->kind, e.msg); return NULL; }
    return g;
}

/* Runs g once with digest kernels and options o and returns the executor
 * (caller frees), or NULL after reporting. */
static inline bp_exec *eu_run_opts(const bp_graph *g, const bp_plan *p, const bp_exec_options *o)
{
    bp_exec *ex = NULL;
    bp_error e;
    bp_status s = bp_exec_new(g, p, o, &ex, &e);
    CHECK_MSG(s == BP_OK, "%s: exec_new %s x%d: %s", bp_graph_name(g), bp_exec_mode_name(o->mode), o->threads, e.msg);
    if (s) return NULL;
    bp_exec_set_kernel(ex, bp_digest_kernel, NULL);
    CHECK_OK(bp_digest_fill_inputs(ex, 11, &e), e);
    s = bp_exec_run(ex, NULL, &e);
    CHECK_MSG(s == BP_OK, "%s: run %s x%d: %s", bp_graph_name(g), bp_exec_mode_name(o->mode), o->threads, e.msg);
    if (s) { bp_exec_free(ex); return NULL; }
    return ex;
}

/* eu_run_opts in the given mode. */
static inline bp_exec *eu_run(const bp_graph *g, const bp_plan *p, bp_exec_mode mode, int threads, int malloc_mode,
                              int history)
{
    bp_exec_options o;
    bp_exec_options_init(&o);
    o.mode = mode;
    o.threads = threads;
    o.dynamic_malloc = malloc_mode;
    o.history = history;
    return eu_run_opts(g, p, &o);
}

/* Number of graph outputs whose bytes differ between two executors. */
static inline int eu_diff_outputs(const bp_graph *g, const bp_exec *a, const bp_exec *b)
{
    int bad = 0, n_out = 0;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
        if (!(bp_graph_tensor_flags(g, t) & BP_TENSOR_OUTPUT)) continue;
        n_out++;
        uint64_t na, nb;
        const void *pa = bp_exec_tensor_data(a, t, &na), *pb = bp_exec_tensor_data(b, t, &nb);
        if (na != nb || (na && (!pa || !pb || memcmp(pa, pb, (size_t)na)))) bad++;
    }
    CHECK_MSG(n_out > 0, "%s has no outputs", bp_graph_name(g));
    return bad;
}

/* ------------------------------------------------------------ broken plan */

/* Cuts the lifetime of one planned storage (a root with no aliases) to its
 * first step and re-packs the arena with best fit, until some other storage
 * created strictly inside the victim's true lifetime overlaps its bytes.
 * Returns the victim (and in *culprit one such storage), or -1. */
static inline int32_t eu_break_plan(const bp_graph *g, bp_plan *p, int32_t *culprit)
{
    int32_t nt = p->n_t;
    int32_t *n_mem = calloc((size_t)nt, sizeof *n_mem);
    int32_t *sf = malloc((size_t)nt * sizeof *sf), *sl = malloc((size_t)nt * sizeof *sl);
    int32_t *slot = malloc((size_t)nt * sizeof *slot);
    bp_interval *iv = malloc((size_t)nt * sizeof *iv);
    uint64_t *off = malloc((size_t)nt * sizeof *off);
    int32_t *who = malloc((size_t)nt * sizeof *who);
    uint64_t *ssz = calloc((size_t)nt, sizeof *ssz);
    int32_t found = -1;
    for (int32_t t = 0; t < nt; t++) { sf[t] = INT32_MAX; sl[t] = -1; }
    for (int32_t t = 0; t < nt; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        int32_t r = tp->alias_of >= 0 ? tp->alias_of : t;
        n_mem[r]++;
        if (tp->bytes > ssz[r]) ssz[r] = tp->bytes;
        if (tp->first >= 0 && tp->first < sf[r]) sf[r] = tp->first;
        if (tp->last > sl[r]) sl[r] = tp->last;
    }
    for (int32_t v = 0; v < nt && found < 0; v++) {
        const bp_tensor_plan *vp = &p->tp[v];
        if (vp->alias_of >= 0 || n_mem[v] != 1 || vp->kind != BP_KIND_PLANNED || vp->offset == BP_NO_OFFSET) continue;
        if (sl[v] - sf[v] < 3 || bp_graph_tensor_producer(g, v) < 0) continue;
        size_t n = 0;
        for (int32_t r = 0; r < nt; r++) {
            slot[r] = -1;
            const bp_tensor_plan *rp = &p->tp[r];
            if (rp->alias_of >= 0 || rp->offset == BP_NO_OFFSET || sf[r] == INT32_MAX) continue;
            uint64_t sz = (ssz[r] + p->alignment - 1) / p->alignment * p->alignment;
            int32_t last = r == v ? sf[r] : sl[r];
            iv[n] = (bp_interval){sf[r], (int64_t)last + 1, sz, p->alignment, BP_NO_OFFSET};
            who[n] = r;
            slot[r] = (int32_t)n++;
        }
        bp_assign_options ao;
        bp_assign_options_init(&ao);
        bp_assign_result res;
        bp_error e;
        if (bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, &ao, off, &res, &e)) continue;
        /* a culprit: placed over v's own bytes, created strictly inside (first, last) */
        uint64_t vo = off[slot[v]], ve = vo + vp->bytes;
        int32_t c = -1;
        for (size_t i = 0; i < n && c < 0; i++) {
            int32_t u = who[i];
            if (u == v || p->tp[u].bytes == 0) continue;
            if (off[i] < ve && off[i] + p->tp[u].bytes > vo && sf[u] > sf[v] && sf[u] < sl[v]) c = u;
        }
        if (c < 0) continue;
        uint64_t arena = 0;
        for (int32_t t = 0; t < nt; t++) {
            int32_t r = p->tp[t].alias_of >= 0 ? p->tp[t].alias_of : t;
            if (slot[r] < 0 || p->tp[t].offset == BP_NO_OFFSET) continue;
            p->tp[t].offset = off[slot[r]];
            if (off[slot[r]] + iv[slot[r]].size > arena) arena = off[slot[r]] + iv[slot[r]].size;
        }
        p->tp[v].last = sf[v];
        p->stats.arena_bytes = arena;
        bp__plan_build_events(p, g, &e);
        found = v;
        *culprit = c;
    }
    free(n_mem); free(sf); free(sl); free(slot); free(iv); free(off); free(who); free(ssz);
    return found;
}

#endif
