/* Shared by the libFuzzer harnesses: a plan-and-verify check that every
 * reader's output goes through, and a tiny byte reader for the harnesses
 * that build their input from the fuzz bytes.  Any disagreement between a
 * planner and the independent verifier is a bug: the harness aborts, which
 * libFuzzer reports as a crash with the input saved. */
#ifndef BP_FUZZ_COMMON_H
#define BP_FUZZ_COMMON_H
#include <bufplan.h>
#include <bufplan_limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_ASSERT(cond, msg) do { if (!(cond)) { \
    fprintf(stderr, "fuzz: %s:%d: %s: %s\n", __FILE__, __LINE__, #cond, (msg)); abort(); } } while (0)

/* Limits small enough that one input cannot take seconds or gigabytes. */
static inline void fz_limits(bp_limits *l)
{
    bp_limits_init(l);
    l->max_tensors = 1u << 16;
    l->max_ops = 1u << 16;
    l->max_file_bytes = 1u << 22;
}

/* Plans g (finalized) with a cheap scheduler/assigner pair and checks the
 * plan with bp_verify; also the plan JSON round trip. */
static inline void fz_plan_verify(const bp_graph *g, bp_sched_kind sk, bp_assign_kind ak)
{
    if (bp_graph_n_ops(g) > 1000) return;
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.sched = sk;
    o.assign = ak;
    o.time_limit = 0.01;
    bp_plan *p = NULL;
    bp_error err = {0};
    bp_status s = bp_plan_graph(g, &o, &p, &err);
    if (s == BP_ERR_NOMEM || s == BP_ERR_LIMIT || s == BP_ERR_TIMEOUT || s == BP_ERR_UNSUPPORTED) return;
    FZ_ASSERT(s == BP_OK, err.msg);
    s = bp_verify(g, p, &err);
    FZ_ASSERT(s == BP_OK, err.msg);
    /* write -> read -> verify again */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f) {
        s = bp_plan_write_json_file(p, g, f, &err);
        fclose(f);
        FZ_ASSERT(s == BP_OK, err.msg);
        bp_plan *q = NULL;
        s = bp_plan_parse_json(g, buf, len, "roundtrip", &q, &err);
        FZ_ASSERT(s == BP_OK, err.msg);
        s = bp_verify(g, q, &err);
        FZ_ASSERT(s == BP_OK, err.msg);
        FZ_ASSERT(bp_plan_get_stats(q)->arena_bytes == bp_plan_get_stats(p)->arena_bytes, "arena bytes differ after round trip");
        bp_plan_free(q);
        free(buf);
    }
    bp_plan_free(p);
}

/* The end of an import harness: a failed import returns no graph and says
 * why; a graph is planned, verified and freed. */
static inline int fz_import_done(bp_status s, bp_graph *g, const bp_error *err)
{
    if (s != BP_OK) {
        FZ_ASSERT(g == NULL, "a failed import returned a graph");
        FZ_ASSERT(err->msg[0] != 0, "an error without a message");
        return 0;
    }
    if (bp_graph_n_bodies(g)) {   /* control flow: the reservations sized as fz_plan_verify plans */
        bp_plan_options o;
        bp_plan_options_init(&o);
        o.sched = BP_SCHED_KAHN;
        o.assign = BP_ASSIGN_BESTFIT;
        o.time_limit = 0.01;
        bp_error e = {0};
        bp_status rs = bp_graph_reserve_bodies(g, &o, &e);
        if (rs) {
            FZ_ASSERT(rs == BP_ERR_NOMEM || rs == BP_ERR_LIMIT || rs == BP_ERR_TIMEOUT || rs == BP_ERR_UNSUPPORTED, e.msg);
            bp_graph_free(g);
            return 0;
        }
    }
    fz_plan_verify(g, BP_SCHED_KAHN, BP_ASSIGN_BESTFIT);
    bp_graph_free(g);
    return 0;
}

typedef struct fz_bytes { const uint8_t *p; size_t n; } fz_bytes;
static inline unsigned fz_u8(fz_bytes *b) { if (!b->n) return 0; b->n--; return *b->p++; }
static inline unsigned fz_u16(fz_bytes *b) { unsigned x = fz_u8(b); return x | fz_u8(b) << 8; }
#endif
