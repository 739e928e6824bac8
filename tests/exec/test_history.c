/* History log and checker: clean runs (1 and 4 threads, planned and
 * dynamic) check clean; the broken plan's history flags the victim and the
 * tenant written over it; hand-written logs: interleaving flagged, in-place
 * (the writer reads the old tenant first) not, reads after FREE flagged,
 * malformed files rejected with their line. */
#define _POSIX_C_SOURCE 200809L
#include "exec_util.h"

#include <unistd.h>

static char tmpdir[256];

static const char *tpath(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

static long count_in_file(const char *path, const char *word)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[4096];
    long n = 0;
    while (fgets(line, sizeof line, f)) n += strncmp(line, word, strlen(word)) == 0;
    fclose(f);
    return n;
}

static void test_clean_runs(void)
{
    const char *kinds[] = {"randwire", "transformer"};
    for (int i = 0; i < 2; i++) {
        eu_case cs[16];
        int n = eu_cases(cs, 16);
        bp_gen_options go;
        bp_gen_options_init(&go);
        for (int k = 0; k < n; k++) if (!strcmp(cs[k].kind, kinds[i]) && !cs[k].o.training) go = cs[k].o;
        bp_graph *g = NULL;
        bp_error e;
        if (bp_gen(kinds[i], &go, NULL, &g, &e)) { CHECK_MSG(0, "%s", e.msg); continue; }
        bp_plan *p = NULL;
        CHECK_OK(bp_plan_graph(g, NULL, &p, &e), e);
        struct { bp_exec_mode m; int th; } runs[] = {{BP_EXEC_PLANNED, 1}, {BP_EXEC_PLANNED, 4}, {BP_EXEC_DYNAMIC, 1}, {BP_EXEC_DYNAMIC, 4}};
        for (int r = 0; r < 4; r++) {
            bp_exec *ex = eu_run(g, p, runs[r].m, runs[r].th, 0, 1);
            if (!ex) continue;
            const char *hp = tpath("clean.hist");
            CHECK_OK(bp_exec_write_history(ex, hp, &e), e);
            uint64_t nc = 99;
            bp_status s = bp_history_check(hp, stderr, &nc, &e);
            CHECK_MSG(s == BP_OK && nc == 0, "%s %s x%d: %d conflicts: %s", kinds[i], bp_exec_mode_name(runs[r].m), runs[r].th,
                      (int)nc, e.msg);
            long nten = count_in_file(hp, "tenant "), nrange = count_in_file(hp, "range "), nlast = count_in_file(hp, "last-read ");
            CHECK_MSG(nten > bp_graph_n_ops(g) / 2 && nrange > 0 && nrange <= nten && nlast > 0,
                      "%s: %ld tenants, %ld ranges, %ld last reads", kinds[i], nten, nrange, nlast);
            if (runs[r].m == BP_EXEC_PLANNED)  /* reuse: some range holds several tenants */
                CHECK_MSG(nrange < nten, "%s: no arena range has more than one tenant", kinds[i]);
            bp_exec_free(ex);
        }
        bp_exec_options o;
        bp_exec_options_init(&o);
        bp_exec *ex = NULL;
        CHECK_OK(bp_exec_new(g, p, &o, &ex, &e), e);
        CHECK(bp_exec_write_history(ex, tpath("x.hist"), &e) == BP_ERR_USAGE && strstr(e.msg, "not recorded"));
        bp_exec_free(ex);
        bp_plan_free(p);
        bp_graph_free(g);
    }
}

static void test_broken_plan_history(void)
{
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.width = 4;
    bp_graph *g = NULL;
    bp_error e;
    CHECK_OK(bp_gen("resnet50", &go, NULL, &g, &e), e);
    if (!g) return;
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = BP_SCHED_KAHN;   /* FIFO order: long lifetimes to cut */
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, &po, &p, &e), e);
    int32_t culprit = -1, v = p ? eu_break_plan(g, p, &culprit) : -1;
    CHECK(v >= 0);
    if (v >= 0) {
        bp_exec *ex = eu_run(g, p, BP_EXEC_PLANNED, 1, 0, 1);
        if (ex) {
            const char *hp = tpath("broken.hist");
            CHECK_OK(bp_exec_write_history(ex, hp, &e), e);
            uint64_t nc = 0;
            FILE *rep = fopen(tpath("report.txt"), "w+");
            REQUIRE(rep);
            bp_status s = bp_history_check(hp, rep, &nc, &e);
            char vq[300];
            snprintf(vq, sizeof vq, "\"%s\"", bp_graph_tensor_name(g, v));
            CHECK_MSG(s == BP_ERR_VERIFY && nc > 0 && strstr(e.msg, vq), "broken plan: %d, %d conflicts: %s", (int)s, (int)nc, e.msg);
            /* the report names the victim and some tensor written over it */
            rewind(rep);
            char line[2048];
            int named = 0;
            while (fgets(line, sizeof line, rep)) if (strstr(line, vq) && strstr(line, "is written at tick")) named++;
            CHECK(named > 0);
            fclose(rep);
            bp_exec_free(ex);
        }
    }
    bp_plan_free(p);
    bp_graph_free(g);
}

static void test_handmade(void)
{
    const char *hp = tpath("hand.hist");
    bp_error e;
    uint64_t nc;
    /* b is written (tick 5) over a's bytes while a is read until tick 8 */
    write_file(hp, "bufplan-history 1\ngraph g\nrun planned 2 1024\nrange arena 0 1024\n"
                   "tenant 0 arena 0 512 a\nalloc 1 0\nwrite 1 2 0 0 opA\nlast-read 6 8 1 2 opC\nfree - -\n"
                   "tenant 1 arena 256 512 b\nalloc - -\nwrite 5 7 0 1 opB\nfree - -\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_VERIFY && nc == 1 && strstr(e.msg, "\"a\"") && strstr(e.msg, "\"b\""));
    /* same, but the last read of a is by b's own writer (in place): fine */
    write_file(hp, "bufplan-history 1\ngraph g\nrun planned 2 1024\nrange arena 0 1024\n"
                   "tenant 0 arena 0 512 a\nalloc 1 0\nwrite 1 2 0 0 opA\nread 3 4 1 2 opC\nlast-read 5 7 0 1 opB\nfree - -\n"
                   "tenant 1 arena 0 512 b\nalloc - -\nwrite 5 7 0 1 opB\nfree 9 0\n");
    CHECK_OK(bp_history_check(hp, NULL, &nc, &e), e);
    CHECK(nc == 0);
    /* disjoint bytes never conflict; the heap is its own space */
    write_file(hp, "bufplan-history 1\ngraph g\nrun planned 2 1024\n"
                   "tenant 0 arena 0 256 a\nalloc 1 0\nwrite 1 2 0 0 opA\nlast-read 6 8 1 2 opC\nfree - -\n"
                   "tenant 1 arena 256 256 b\nalloc - -\nwrite 5 7 0 1 opB\nfree - -\n"
                   "tenant 2 heap 0 256 c\nalloc - -\nwrite 5 7 0 1 opB\nfree - -\n");
    CHECK_OK(bp_history_check(hp, NULL, &nc, &e), e);
    /* a read after the tenant's FREE */
    write_file(hp, "bufplan-history 1\ngraph g\nrun planned 1 0\n"
                   "tenant 0 heap 4096 256 a\nalloc 1 0\nwrite 1 2 0 0 opA\nlast-read 6 8 0 2 opC\nfree 4 0\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_VERIFY && nc == 1 && strstr(e.msg, "after its FREE"));
    /* malformed */
    write_file(hp, "not a history\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_INVALID && strstr(e.msg, ":1:"));
    write_file(hp, "bufplan-history 1\ntenant 0 arena x 256 a\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_INVALID && strstr(e.msg, ":2: bad tenant"));
    write_file(hp, "bufplan-history 1\nwrite 1 2 0 0 op\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_INVALID && strstr(e.msg, "before any tenant"));
    write_file(hp, "bufplan-history 1\ntenant 0 arena 0 256 a\nwrite 5 2 0 0 op\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_INVALID && strstr(e.msg, ":3: bad write"));
    write_file(hp, "bufplan-history 1\ntenant 0 arena 0 256 a\nfrobnicate\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_INVALID && strstr(e.msg, "unknown record"));
    write_file(hp, "bufplan-history 1\ntenant 0 arena 0 256 a\nalloc 1 0\n");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_INVALID && strstr(e.msg, "without a write"));
    write_file(hp, "");
    CHECK(bp_history_check(hp, NULL, &nc, &e) == BP_ERR_INVALID);
    CHECK(bp_history_check(tpath("missing.hist"), NULL, &nc, &e) == BP_ERR_IO);
    CHECK(bp_history_check(NULL, NULL, &nc, &e) == BP_ERR_USAGE);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bp_history_XXXXXX");
    REQUIRE(mkdtemp(tmpdir));
    test_handmade();
    test_clean_runs();
    test_broken_plan_history();
    const char *names[] = {"clean.hist", "x.hist", "broken.hist", "report.txt", "hand.hist"};
    for (int i = 0; i < 5; i++) unlink(tpath(names[i]));
    rmdir(tmpdir);
    return check_status();
}
