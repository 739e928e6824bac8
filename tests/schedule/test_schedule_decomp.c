/* The decomposition of `best` (decomp.c).
 *  - Dominator and post-dominator trees of thousands of random DAGs (up to
 *    30 vertices, sparse to dense, chain-like to wide) against the
 *    definition: d dominates v iff v cannot be reached from the virtual
 *    source once d is removed; the immediate dominator is the dominator
 *    that all the others dominate.
 *  - Cut points against the definition: every other vertex is an ancestor
 *    or a descendant (transitive closure).
 *  - Decomposed schedules of random graphs of up to 9 ops, with the exact
 *    pieces made tiny (1-4 ops) so that cut points, components and regions
 *    are all used: the order is topological; the step model's peak equals
 *    the evaluator's (where the model is exact); it is never below the
 *    brute-force optimum, equal to it when the decomposition says proven,
 *    and never above the input order's peak where in-place keeps sizes.
 *  - Graphs of 30-300 ops made of random blocks joined by cut points: the
 *    decomposition alone proves them optimal (segments are small); it
 *    agrees with `optimal` where that proves optimality, no random order
 *    is below it, `best` reports the proof; same seed and limit, same
 *    order from `best`. */
#include "sched_testutil.h"
#include "plan/plan_internal.h"
#include "schedule/schedule_internal.h"
#include "sched_bruteforce.h"

/* ------------------------------------------------------------- DAGs */

typedef struct dag {
    int32_t n, ne;
    int32_t poff[33], p[1024], soff[33], s[1024];
} dag;

/* Random DAG over 0..n-1 (edges go up in id): a chain-ish backbone with
 * some probability, random skips, random density. */
static void dag_random(unsigned long long *rs, dag *d)
{
    int32_t n = 1 + (int32_t)(test_rand(rs) % 30);
    static uint8_t adj[32][32];
    memset(adj, 0, sizeof adj);
    int dens = (int)(test_rand(rs) % 4), chain = (int)(test_rand(rs) % 3);
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++) {
            unsigned long long r = test_rand(rs) % 100;
            bool e = false;
            if (chain && j == i + 1) e = r < (chain == 2 ? 95u : 60u);
            else if (dens == 0) e = r < 3;
            else if (dens == 1) e = r < 8 && j - i < 6;
            else if (dens == 2) e = r < 15;
            else e = r < 40;
            adj[i][j] = e;
        }
    d->n = n;
    d->ne = 0;
    for (int32_t v = 0; v < n; v++) {
        d->poff[v] = d->ne;
        for (int32_t u = 0; u < v; u++) if (adj[u][v]) d->p[d->ne++] = u;
    }
    d->poff[n] = d->ne;
    int32_t k = 0;
    for (int32_t u = 0; u < n; u++) {
        d->soff[u] = k;
        for (int32_t v = u + 1; v < n; v++) if (adj[u][v]) d->s[k++] = v;
    }
    d->soff[n] = k;
}

/* Vertices reachable from the virtual source (index n, joined to every
 * vertex without in-edges in the direction given) with `removed` taken out.
 * fwd: along successors; else along predecessors from the virtual sink. */
static uint64_t reach_without(const dag *d, int fwd, int32_t removed)
{
    int32_t n = d->n;
    const int32_t *off = fwd ? d->soff : d->poff, *adj = fwd ? d->s : d->p;
    const int32_t *ioff = fwd ? d->poff : d->soff;
    uint64_t seen = 0;
    int32_t st[64], sp = 0;
    for (int32_t v = 0; v < n; v++)
        if (ioff[v] == ioff[v + 1] && v != removed) { seen |= 1ull << v; st[sp++] = v; }
    while (sp) {
        int32_t v = st[--sp];
        for (int32_t j = off[v]; j < off[v + 1]; j++) {
            int32_t w = adj[j];
            if (w == removed || (seen >> w & 1)) continue;
            seen |= 1ull << w;
            st[sp++] = w;
        }
    }
    return seen;
}

/* Brute-force immediate (post-)dominators: idom[v] in 0..n (n = virtual). */
static void idom_brute(const dag *d, int fwd, int32_t *idom)
{
    int32_t n = d->n;
    uint64_t dom[32]; /* dom[v]: real vertices that dominate v (v included) */
    for (int32_t v = 0; v < n; v++) dom[v] = 1ull << v;
    for (int32_t x = 0; x < n; x++) {
        uint64_t r = reach_without(d, fwd, x);
        for (int32_t v = 0; v < n; v++)
            if (v != x && !(r >> v & 1)) dom[v] |= 1ull << x;
    }
    for (int32_t v = 0; v < n; v++) {
        idom[v] = n;
        uint64_t strict = dom[v] & ~(1ull << v);
        for (int32_t x = 0; x < n; x++) /* the strict dominator dominated by all the others */
            if ((strict >> x & 1) && (dom[x] & strict) == strict) idom[v] = x;
    }
}

static void test_trees_and_cuts(void)
{
    unsigned long long rs = 777;
    int dags = 0, nontrivial_dom = 0, nontrivial_pdom = 0, cuts_total = 0, noncut_total = 0, ign_cuts = 0;
    for (int it = 0; it < 4000; it++) {
        dag d;
        dag_random(&rs, &d);
        int32_t n = d.n;
        int32_t idom[33], dep[33], jmp[33], want[33];
        bp__decomp_idom(n, d.poff, d.p, 0, idom, dep, jmp);
        idom_brute(&d, 1, want);
        CHECK(idom[n] == n);
        for (int32_t v = 0; v < n; v++) {
            CHECK_MSG(idom[v] == want[v], "dag %d (%d vertices): idom(%d) = %d, brute force %d", it, n, v, idom[v], want[v]);
            nontrivial_dom += want[v] != n;
            CHECK(dep[v] == dep[idom[v]] + 1);
        }
        bp__decomp_idom(n, d.soff, d.s, 1, idom, dep, jmp);
        idom_brute(&d, 0, want);
        for (int32_t v = 0; v < n; v++) {
            CHECK_MSG(idom[v] == want[v], "dag %d (%d vertices): ipdom(%d) = %d, brute force %d", it, n, v, idom[v], want[v]);
            nontrivial_pdom += want[v] != n;
        }
        /* cut points: |ancestors| + |descendants| = n - 1 */
        uint64_t anc[32], des[32];
        for (int32_t v = 0; v < n; v++) {
            anc[v] = 0;
            for (int32_t j = d.poff[v]; j < d.poff[v + 1]; j++) anc[v] |= anc[d.p[j]] | 1ull << d.p[j];
        }
        for (int32_t v = n - 1; v >= 0; v--) {
            des[v] = 0;
            for (int32_t j = d.soff[v]; j < d.soff[v + 1]; j++) des[v] |= des[d.s[j]] | 1ull << d.s[j];
        }
        uint8_t cut[32], ign[32];
        int32_t fs[32], lp[32];
        for (int32_t v = 0; v < n; v++) {
            fs[v] = n;
            lp[v] = -1;
            for (int32_t j = d.soff[v]; j < d.soff[v + 1]; j++) if (d.s[j] < fs[v]) fs[v] = d.s[j];
            for (int32_t j = d.poff[v]; j < d.poff[v + 1]; j++) if (d.p[j] > lp[v]) lp[v] = d.p[j];
        }
        bp__decomp_cuts(n, fs, lp, NULL, cut);
        for (int32_t v = 0; v < n; v++) {
            int c = __builtin_popcountll(anc[v]) + __builtin_popcountll(des[v]) == n - 1;
            CHECK_MSG(cut[v] == c, "dag %d (%d vertices): cut(%d) = %d, brute force %d", it, n, v, cut[v], c);
            cuts_total += c;
            noncut_total += !c;
        }
        /* leaving out some sources: the cut points of the others (a source
         * left out changes no reachability between the others) */
        uint64_t keep = 0;
        for (int32_t v = 0; v < n; v++) {
            ign[v] = d.poff[v] == d.poff[v + 1] && test_rand(&rs) % 2;
            if (!ign[v]) keep |= 1ull << v;
        }
        for (int32_t v = 0; v < n; v++) {
            lp[v] = -1;
            for (int32_t j = d.poff[v]; j < d.poff[v + 1]; j++) if (d.p[j] > lp[v] && !ign[d.p[j]]) lp[v] = d.p[j];
        }
        bp__decomp_cuts(n, fs, lp, ign, cut);
        for (int32_t v = 0; v < n; v++) {
            int c = !ign[v] && __builtin_popcountll((anc[v] | des[v]) & keep) == __builtin_popcountll(keep) - 1;
            CHECK_MSG(cut[v] == c, "dag %d (%d vertices): cut(%d) without some sources = %d, brute force %d", it, n, v,
                      cut[v], c);
            ign_cuts += c && !(__builtin_popcountll(anc[v]) + __builtin_popcountll(des[v]) == n - 1);
        }
        dags++;
    }
    fprintf(stderr, "trees: %d dags, non-root idoms %d, ipdoms %d, cut points %d (and %d not), %d more without some sources\n",
            dags, nontrivial_dom, nontrivial_pdom, cuts_total, noncut_total, ign_cuts);
    CHECK(nontrivial_dom > 10000 && nontrivial_pdom > 10000 && cuts_total > 5000 && noncut_total > 5000 && ign_cuts > 500);
}

/* ------------------------------------------------- decomposed schedules */

static void test_small_graphs(void)
{
    unsigned long long rs = 31337;
    int graphs = 0, proven = 0, cuts = 0, comps = 0, regions = 0, lower = 0, free_ops = 0;
    for (int it = 0; it < 1500; it++) {
        rg_opts ro = {2 + (int)(test_rand(&rs) % 8), it % 5 == 0, it % 2 == 0};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        int32_t n = bp_graph_n_ops(g);
        if (n > 9) { bp_graph_free(g); continue; }
        graphs++;
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        bp_error err;
        bp__sgraph sg;
        bp__eval ev;
        bp__sim sim;
        CHECK_OK(bp__sgraph_build(g, &po, &sg, &err), err);
        CHECK_OK(bp__eval_init(&ev, &sg, &err), err);
        CHECK_OK(bp__sim_init(&sim, &sg, &err), err);
        int32_t in[16], out[16];
        sched_bf b;
        sched_bf_run(&b, &sg, &ev);
        for (int r = 0; r < 3; r++) {
            rg_random_order(g, &rs, in);
            uint64_t pin = bp__eval_peak(&ev, in, NULL), work = 0;
            bp__decomp_info di;
            int32_t exact_max = 1 + (int32_t)(test_rand(&rs) % 4);
            int ret = bp__decomp_schedule(&sg, &sim, r % 2 ? &ev : NULL, in, UINT64_MAX, exact_max, out, &work, (uint64_t)1 << 40, 0, &di);
            CHECK(ret == 1);
            CHECK_MSG(rg_is_topological(g, out), "graph %d: not a topological permutation", it);
            uint64_t pk = bp__eval_peak(&ev, out, NULL);
            if (sg.exact) CHECK_MSG(di.peak == pk, "graph %d: step model %llu, evaluator %llu", it,
                                    (unsigned long long)di.peak, (unsigned long long)pk);
            CHECK(pk >= b.best);
            if (di.proven) {
                CHECK_MSG(pk == b.best, "graph %d (%d ops, exact pieces of %d): proven %llu, brute force %llu", it, n,
                          exact_max, (unsigned long long)pk, (unsigned long long)b.best);
                proven++;
            }
            if (sg.dp_exact) CHECK_MSG(pk <= pin, "graph %d: decomposed %llu above the input order's %llu", it,
                                       (unsigned long long)pk, (unsigned long long)pin);
            lower += pk < pin;
            cuts += di.cuts > 0;
            comps += di.comps > 0;
            regions += di.regions > 0;
            free_ops += di.free_ops > 0;
            /* deterministic */
            int32_t again[16];
            uint64_t w2 = 0;
            bp__decomp_info d2;
            CHECK(bp__decomp_schedule(&sg, &sim, r % 2 ? &ev : NULL, in, UINT64_MAX, exact_max, again, &w2, (uint64_t)1 << 40, 0, &d2) == 1);
            CHECK(memcmp(again, out, (size_t)n * sizeof *out) == 0 && w2 == work);
            /* the input's profile from the evaluator or from the step model: the same */
            w2 = 0;
            CHECK(bp__decomp_schedule(&sg, &sim, r % 2 ? NULL : &ev, in, UINT64_MAX, exact_max, again, &w2, (uint64_t)1 << 40, 0, &d2) == 1);
            if (sg.exact) CHECK(memcmp(again, out, (size_t)n * sizeof *out) == 0 && d2.peak == di.peak);
        }
        bp__sim_free(&sim);
        bp__eval_free(&ev);
        bp__sgraph_free(&sg);
        bp_graph_free(g);
    }
    fprintf(stderr, "decomposed: %d graphs x 3 orders, proven %d, below the input %d; used cut points %d, free ops %d, components %d, regions %d\n",
            graphs, proven, lower, cuts, free_ops, comps, regions);
    CHECK(graphs > 1000 && proven > 300 && lower > 100 && cuts > 300 && free_ops > 50 && comps > 100 && regions > 100);
}

/* A graph of `blocks` small random blocks in sequence (each reads the
 * previous block's last tensor): many cut points. */
static bp_graph *blocks_graph(unsigned long long *rs, int blocks)
{
    static const uint64_t sizes[] = {256, 1024, 4096, 5000, 300};
    bp_error err;
    bp_graph *g = bp_graph_new("blocks", NULL);
    REQUIRE(g);
    char name[32];
    int32_t x, t[64];
    uint8_t rd[64]; /* read by an op of the block */
    CHECK_OK(bp_graph_add_tensor(g, "x", 1024, &x, &err), err);
    CHECK_OK(bp_graph_mark(g, x, BP_TENSOR_INPUT, &err), err);
    int32_t last = x, nt = 0, k = 0;
    for (int bl = 0; bl < blocks; bl++) {
        int w = 2 + (int)(test_rand(rs) % 7);
        int32_t base = nt;
        rd[nt] = 0;
        t[nt++] = last;
        for (int i = 0; i < w; i++) {
            int nin = 1 + (int)(test_rand(rs) % 2);
            int32_t ins[2], out;
            for (int j = 0; j < nin; j++) {
                int32_t at = base + (int32_t)(test_rand(rs) % (uint64_t)(nt - base));
                ins[j] = t[at];
                rd[at] = 1;
            }
            snprintf(name, sizeof name, "t%d", k);
            CHECK_OK(bp_graph_add_tensor(g, name, sizes[test_rand(rs) % 5], &out, &err), err);
            snprintf(name, sizeof name, "op%d", k++);
            CHECK_OK(bp_graph_add_op(g, name, "Conv", nin, ins, 1, &out, 0, NULL, &err), err);
            rd[nt] = 0;
            t[nt++] = out;
        }
        /* the join reads every tensor of the block not read yet, and the last */
        int32_t ins[8], nj = 0;
        for (int32_t i = nt - 1; i > base && nj < 8; i--)
            if (!rd[i]) ins[nj++] = t[i];
        int32_t out;
        snprintf(name, sizeof name, "t%d", k);
        CHECK_OK(bp_graph_add_tensor(g, name, sizes[test_rand(rs) % 5], &out, &err), err);
        snprintf(name, sizeof name, "op%d", k++);
        CHECK_OK(bp_graph_add_op(g, name, "Add", nj, ins, 1, &out, 0, NULL, &err), err);
        last = out;
        nt = 0;
    }
    CHECK_OK(bp_graph_mark(g, last, BP_TENSOR_OUTPUT, &err), err);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    return g;
}

/* Graphs of blocks joined by cut points: every segment is small, so the
 * decomposition alone is exact (proven) where in-place keeps sizes. */
static void test_best_vs_optimal(void)
{
    unsigned long long rs = 99;
    int graphs = 0, opt_proven = 0, dec_proven = 0, by_decomp = 0;
    for (int it = 0; it < 30; it++) {
        bp_graph *g = blocks_graph(&rs, 10 + (int)(test_rand(&rs) % 30));
        int32_t n = bp_graph_n_ops(g);
        graphs++;
        int32_t *o1 = malloc((size_t)n * sizeof *o1), *o2 = malloc((size_t)n * sizeof *o2);
        int32_t *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
        REQUIRE(o1 && o2 && in && out);
        bp_plan_options po;
        bp_plan_options_init(&po);
        po.alignment = (test_rand(&rs) % 2) ? 256 : 1;
        po.time_limit = 0.5;
        bp_schedule_info ib, io, i2;
        bp_error err;
        po.sched = BP_SCHED_OPTIMAL;
        CHECK_OK(bp_schedule_ex(g, &po, o2, &io, &err), err);
        po.sched = BP_SCHED_BEST;
        CHECK_OK(bp_schedule_ex(g, &po, o1, &ib, &err), err);
        CHECK(rg_is_topological(g, o1));
        if (io.optimal) {
            CHECK_MSG(ib.peak_bytes == io.peak_bytes, "graph %d (%d ops): best %llu, optimal %llu", it, n,
                      (unsigned long long)ib.peak_bytes, (unsigned long long)io.peak_bytes);
            opt_proven++;
        }
        by_decomp += ib.picked && !strcmp(ib.picked, "decomp");
        /* the decomposition alone, from the list order */
        bp__sgraph sg;
        bp__eval ev;
        bp__sim sim;
        CHECK_OK(bp__sgraph_build(g, &po, &sg, &err), err);
        CHECK_OK(bp__eval_init(&ev, &sg, &err), err);
        CHECK_OK(bp__sim_init(&sim, &sg, &err), err);
        CHECK_OK(bp__sched_list(&sg, 0, in, &err), err);
        uint64_t work = 0;
        bp__decomp_info di;
        CHECK(bp__decomp_schedule(&sg, &sim, it % 2 ? &ev : NULL, in, UINT64_MAX, 0, out, &work, (uint64_t)1 << 40, 0, &di) == 1);
        CHECK(rg_is_topological(g, out));
        uint64_t pk = bp__eval_peak(&ev, out, NULL);
        CHECK(di.cuts > 0 && pk == di.peak);
        if (sg.dp_exact) {
            CHECK_MSG(di.proven, "graph %d (%d ops): segments of at most 9 ops, not proven", it, n);
            dec_proven += di.proven;
        }
        if (di.proven) {
            if (io.optimal) CHECK(pk == io.peak_bytes);
            CHECK_MSG(ib.optimal && ib.peak_bytes == pk, "graph %d: decomposition proves %llu, best %llu (optimal %d)", it,
                      (unsigned long long)pk, (unsigned long long)ib.peak_bytes, ib.optimal);
            for (int r = 0; r < 20; r++) {
                rg_random_order(g, &rs, o2);
                CHECK(pk <= bp__eval_peak(&ev, o2, NULL));
            }
        }
        /* best: deterministic for a seed and limit */
        CHECK_OK(bp_schedule_ex(g, &po, o2, &i2, &err), err);
        CHECK(memcmp(o1, o2, (size_t)n * sizeof *o1) == 0 && i2.peak_bytes == ib.peak_bytes);
        bp__sim_free(&sim);
        bp__eval_free(&ev);
        bp__sgraph_free(&sg);
        free(o1);
        free(o2);
        free(in);
        free(out);
        bp_graph_free(g);
    }
    fprintf(stderr, "blocks: %d graphs, optimal proven %d, decomposition proven %d, best picked it %d\n", graphs,
            opt_proven, dec_proven, by_decomp);
    CHECK(dec_proven > 20);
}

int main(void)
{
    test_trees_and_cuts();
    test_small_graphs();
    test_best_vs_optimal();
    return check_status();
}
