/* The fast greedy schedulers against plain reference versions.
 *
 * lpmf keeps its ready ops in a sorted-leaf structure (radix-sorted keys,
 * blocks of 64 leaves, a segment tree over the blocks).  The reference here
 * applies the documented rule with a linear scan over the ready ops: each
 * ready op keeps the allocation key and net it had when it was last
 * re-keyed (when it became ready, or when a storage it touches dropped to one
 * remaining toucher); if some op with key <= high-water mark - memory exists,
 * run the one with the lowest (net, key, tie, op), else the one with the
 * lowest (key, tie, op).  The orders must be identical, with op-id ties and
 * with random tie-breaks, on random graphs and on generated models.
 * The step model's last-toucher lookup is checked against a scan too. */
#include "sched_testutil.h"
#include "plan/plan_internal.h"
#include "schedule/schedule_internal.h"

/* (key, tie, op) of a before b */
static bool ref_before(uint64_t ka, uint64_t ta, int32_t a, uint64_t kb, uint64_t tb, int32_t b)
{
    if (ka != kb) return ka < kb;
    if (ta != tb) return ta < tb;
    return a < b;
}

/* The last toucher by a scan of the storage's touchers. */
static int32_t ref_last_toucher(const bp__sim *s, int32_t y)
{
    const bp__sgraph *sg = s->sg;
    int32_t found = -1, left = 0;
    for (int32_t i = sg->so_off[y]; i < sg->so_off[y + 1]; i++)
        if (!s->done[sg->so[i]]) { found = sg->so[i]; left++; }
    return left == 1 ? found : -1;
}

static int ref_lpmf(const bp__sgraph *sg, uint64_t tie_seed, int32_t *order)
{
    int32_t n = sg->n;
    bp__sim s;
    bp_error err;
    CHECK_OK(bp__sim_init(&s, sg, &err), err);
    uint64_t *key = calloc((size_t)n + 1, sizeof *key);
    double *net = calloc((size_t)n + 1, sizeof *net);
    uint8_t *act = calloc((size_t)n + 1, 1);
    REQUIRE(key && net && act);
#define REF_UPDATE(v) do { \
        uint64_t al_, fr_; \
        bp__sim_delta(&s, (v), &al_, &fr_); \
        key[v] = al_ <= sg->alloc_ip[v] ? sg->alloc_ip[v] : sg->alloc_full[v]; \
        net[v] = (double)al_ - (double)fr_; \
        act[v] = 1; \
    } while (0)
    for (int32_t v = 0; v < n; v++)
        if (!s.npred[v]) REF_UPDATE(v);
    uint64_t hw = 0;
    int ok = 1;
    for (int32_t k = 0; k < n && ok; k++) {
        int32_t pick = -1;
        if (hw >= s.mem) {
            uint64_t room = hw - s.mem;
            for (int32_t v = 0; v < n; v++) {
                if (!act[v] || key[v] > room) continue;
                if (pick < 0 || net[v] < net[pick] ||
                    (net[v] == net[pick] && ref_before(key[v], bp__sched_tie(tie_seed, v), v, key[pick],
                                                       bp__sched_tie(tie_seed, pick), pick)))
                    pick = v;
            }
        }
        if (pick < 0)
            for (int32_t v = 0; v < n; v++)
                if (act[v] && (pick < 0 || ref_before(key[v], bp__sched_tie(tie_seed, v), v, key[pick],
                                                      bp__sched_tie(tie_seed, pick), pick)))
                    pick = v;
        if (pick < 0) { ok = 0; break; }
        act[pick] = 0;
        order[k] = pick;
        uint64_t at = bp__sim_run(&s, pick);
        if (at > hw) hw = at;
        for (int32_t i = sg->su_off[pick]; i < sg->su_off[pick + 1]; i++)
            if (!s.npred[sg->su[i]]) REF_UPDATE(sg->su[i]);
        for (int32_t i = 0; i < s.n_last1; i++) {
            int32_t y = s.last1[i], u = bp__sim_last_toucher(&s, y);
            CHECK_MSG(u == ref_last_toucher(&s, y), "storage %d: last toucher %d, scan %d", y, u, ref_last_toucher(&s, y));
            if (u >= 0 && !s.npred[u]) REF_UPDATE(u);
        }
    }
#undef REF_UPDATE
    free(key);
    free(net);
    free(act);
    bp__sim_free(&s);
    return ok;
}

/* Compares lpmf with the reference on g for op-id ties and two seeds. */
static int check_graph(bp_graph *g, const bp_plan_options *po, const char *what, unsigned long long *rs)
{
    bp_error err;
    bp__sgraph sg;
    CHECK_OK(bp__sgraph_build(g, po, &sg, &err), err);
    int32_t n = sg.n;
    int32_t *o1 = malloc(((size_t)n + 1) * sizeof *o1), *o2 = malloc(((size_t)n + 1) * sizeof *o2);
    REQUIRE(o1 && o2);
    int same = 1;
    for (int r = 0; r < 3; r++) {
        uint64_t ts = r == 0 ? 0 : test_rand(rs) | 1;
        bp_status st = bp__sched_lpmf(&sg, ts, o1, &err);
        int ok = ref_lpmf(&sg, ts, o2);
        CHECK_MSG((st == BP_OK) == (ok == 1), "%s: lpmf %d, reference %d", what, (int)st, ok);
        if (st || !ok) continue;
        CHECK_MSG(rg_is_topological(g, o1), "%s: lpmf order not topological", what);
        bool eq = memcmp(o1, o2, (size_t)n * sizeof *o1) == 0;
        if (!eq) {
            int32_t i = 0;
            while (o1[i] == o2[i]) i++;
            CHECK_MSG(eq, "%s (tie seed %llu): lpmf and the reference differ at step %d: op %d vs %d", what,
                      (unsigned long long)ts, i, o1[i], o2[i]);
            same = 0;
        }
    }
    free(o1);
    free(o2);
    bp__sgraph_free(&sg);
    return same;
}

static void test_lpmf_random(void)
{
    unsigned long long rs = 2024;
    int graphs = 0;
    for (int it = 0; it < 1500; it++) {
        rg_opts ro = {1 + (int)(test_rand(&rs) % 120), it % 3 == 0, it % 2};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        char what[64];
        snprintf(what, sizeof what, "random graph %d", it);
        check_graph(g, &po, what, &rs);
        graphs++;
        bp_graph_free(g);
    }
    fprintf(stderr, "lpmf vs reference: %d random graphs\n", graphs);
    CHECK(graphs > 1200);
}

/* Generated models: more ops than a block of leaves, many equal keys. */
static void test_lpmf_models(void)
{
    static const char *const gens[] = {"resnet50", "unet", "transformer", "randwire"};
    unsigned long long rs = 5;
    for (int tr = 0; tr < 2; tr++)
        for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
            bp_gen_options go;
            bp_gen_options_init(&go);
            go.training = tr;
            bp_graph *g = NULL;
            bp_error err;
            CHECK_OK(bp_gen(gens[i], &go, NULL, &g, &err), err);
            if (!g) continue;
            bp_plan_options po;
            bp_plan_options_init(&po);
            if (tr) po.alignment = 64;
            char what[64];
            snprintf(what, sizeof what, "%s%s", gens[i], tr ? " --training" : "");
            CHECK_MSG(check_graph(g, &po, what, &rs), "%s", what);
            bp_graph_free(g);
        }
}

int main(void)
{
    void (*const tests[])(void) = {test_lpmf_random, test_lpmf_models};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        double t0 = bp__now();
        tests[i]();
        fprintf(stderr, "  (part %zu: %.1f s)\n", i, bp__now() - t0);
    }
    return check_status();
}
