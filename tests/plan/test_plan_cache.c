/* The plan cache: hit, miss, keys, corrupt / truncated / foreign / version-
 * mismatched / tampered files (each a warning and a miss, then re-planned),
 * and concurrent writers and readers in separate processes. */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include "bufplan_dyn.h"
#include "check.h"
#include "plan/plan_internal.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];
static FILE *warn_sink;

static void rm_dir(const char *d)
{
    DIR *dp = opendir(d);
    if (!dp) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(dp))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        unlink(p);
    }
    closedir(dp);
    rmdir(d);
}

static int count_files(const char *d, const char *prefix)
{
    DIR *dp = opendir(d);
    if (!dp) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    closedir(dp);
    return n;
}

static bp_graph *gen(const char *kind, int nodes, int seq)
{
    bp_gen_options o;
    bp_gen_options_init(&o);
    o.nodes = nodes;
    o.seq = seq;
    o.layers = 2;
    bp_graph *g = NULL;
    bp_error err;
    REQUIRE(bp_gen(kind, &o, NULL, &g, &err) == BP_OK);
    return g;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    REQUIRE(fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    REQUIRE(fwrite(b, 1, n, f) == n);
    fclose(f);
}

/* Rewrites the checksum so that only the deliberate change is "wrong". */
static void fix_checksum(unsigned char *b, size_t n)
{
    uint64_t s = bp_cache_checksum(b, n - 16);
    memcpy(b + n - 16, &s, 8);
}

static int same_plan(const bp_plan *a, const bp_plan *b)
{
    if (bp_plan_n_tensors(a) != bp_plan_n_tensors(b) || bp_plan_n_steps(a) != bp_plan_n_steps(b)) return 0;
    if (memcmp(bp_plan_schedule(a), bp_plan_schedule(b), (size_t)bp_plan_n_steps(a) * sizeof(int32_t))) return 0;
    for (int32_t t = 0; t < bp_plan_n_tensors(a); t++) {
        const bp_tensor_plan *x = bp_plan_tensor(a, t), *y = bp_plan_tensor(b, t);
        if (x->first != y->first || x->last != y->last || x->offset != y->offset || x->bytes != y->bytes ||
            x->buffer != y->buffer || x->kind != y->kind || x->alias_of != y->alias_of) return 0;
    }
    if (bp_plan_n_events(a) != bp_plan_n_events(b)) return 0;
    const bp_event *ea = bp_plan_events(a), *eb = bp_plan_events(b);
    for (size_t i = 0; i < bp_plan_n_events(a); i++)
        if (ea[i].type != eb[i].type || ea[i].tensor != eb[i].tensor || ea[i].op != eb[i].op || ea[i].buffer != eb[i].buffer ||
            ea[i].offset != eb[i].offset) return 0;
    const bp_plan_stats *sa = bp_plan_get_stats(a), *sb = bp_plan_get_stats(b);
    return sa->arena_bytes == sb->arena_bytes && sa->lower_bound_bytes == sb->lower_bound_bytes &&
           sa->naive_bytes == sb->naive_bytes && sa->n_planned == sb->n_planned && bp_plan_alignment(a) == bp_plan_alignment(b) &&
           bp_plan_sched(a) == bp_plan_sched(b) && bp_plan_assign(a) == bp_plan_assign(b);
}

static void test_signature_and_hash(void)
{
    char sig[BP_SIG_MAX];
    bp_error err = {0};
    const char *s1[] = {"S", "B", "A"};
    const int64_t v1[] = {128, 4, 7};
    CHECK_OK(bp_signature(3, s1, v1, sig, &err), err);
    CHECK(!strcmp(sig, "A=7,B=4,S=128"));
    const char *s2[] = {"A", "S", "B", "S"};
    const int64_t v2[] = {7, 128, 4, 128};
    char sig2[BP_SIG_MAX];
    CHECK_OK(bp_signature(4, s2, v2, sig2, &err), err);
    CHECK(!strcmp(sig, sig2));                         /* order and repeats do not matter */
    const int64_t v3[] = {7, 128, 4, 64};
    CHECK(bp_signature(4, s2, v3, sig2, &err) == BP_ERR_USAGE && strstr(err.msg, "\"S\""));
    const int64_t vneg[] = {-1};
    CHECK(bp_signature(1, s1, vneg, sig2, &err) == BP_ERR_USAGE);
    CHECK_OK(bp_signature(0, NULL, NULL, sig2, &err), err);
    CHECK(sig2[0] == 0);
    char longname[900];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    const char *s4[] = {longname, "y"};
    const int64_t v4[] = {1, 2};
    CHECK_OK(bp_signature(1, s4, v4, sig2, &err), err);
    const char *s5[] = {longname, "zz"};
    char big[300];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = 0;
    s5[1] = big;
    CHECK(bp_signature(2, s5, v4, sig2, &err) == BP_ERR_LIMIT);

    /* Hash: equal graphs hash equal, any change changes it. */
    bp_graph *a = gen("diamond", 0, 0), *b = gen("diamond", 0, 0);
    uint64_t ha[2], hb[2];
    bp_graph_hash(a, ha);
    bp_graph_hash(b, hb);
    CHECK(ha[0] == hb[0] && ha[1] == hb[1]);
    bp_graph_free(b);
    bp_gen_options o;
    bp_gen_options_init(&o);
    o.seed = 2;
    REQUIRE(bp_gen("randwire", &o, NULL, &b, &err) == BP_OK);
    bp_graph_hash(b, hb);
    CHECK(ha[0] != hb[0] || ha[1] != hb[1]);
    bp_graph_free(b);
    /* one more tensor */
    int32_t id;
    REQUIRE(bp_graph_add_tensor(a, "extra", 16, &id, &err) == BP_OK);
    REQUIRE(bp_graph_finalize(a, &err) == BP_OK);
    bp_graph_hash(a, hb);
    CHECK(ha[0] != hb[0] || ha[1] != hb[1]);
    bp_graph_free(a);
    /* symbol bound to different values */
    bp_gen_options_init(&o);
    o.symbolic_seq = 1;
    o.layers = 1;
    REQUIRE(bp_gen("transformer", &o, NULL, &a, &err) == BP_OK);
    REQUIRE(bp_gen("transformer", &o, NULL, &b, &err) == BP_OK);
    REQUIRE(bp_graph_bind_dim(a, "S", 64, &err) == BP_OK);
    REQUIRE(bp_graph_bind_dim(b, "S", 65, &err) == BP_OK);
    bp_graph_hash(a, ha);
    bp_graph_hash(b, hb);
    CHECK(ha[0] != hb[0] || ha[1] != hb[1]);
    bp_graph_free(a);
    bp_graph_free(b);
    /* checksum: every single-bit flip of a buffer changes it */
    unsigned char buf[100];
    for (int i = 0; i < 100; i++) buf[i] = (unsigned char)(i * 7);
    uint64_t c0 = bp_cache_checksum(buf, sizeof buf);
    int same = 0;
    for (int i = 0; i < 100 * 8; i++) {
        buf[i / 8] ^= (unsigned char)(1u << (i % 8));
        same += bp_cache_checksum(buf, sizeof buf) == c0;
        buf[i / 8] ^= (unsigned char)(1u << (i % 8));
    }
    CHECK(same == 0);
    CHECK(bp_cache_checksum(buf, 99) != c0);
}

/* Expects a miss with a warning containing `needle`, then that
 * bp_plan_cache_plan re-plans, rewrites, and the next get hits. */
static void expect_bad(bp_plan_cache *c, const bp_cache_key *k, const bp_graph *g, const bp_plan *ref, const char *needle)
{
    bp_error err = {0};
    bp_plan_cache_stats before, after;
    bp_plan_cache_get_stats(c, &before);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_cache_get(c, k, g, &p, &err), err);
    CHECK_MSG(p == NULL, "a bad file (%s) was trusted", needle);
    bp_plan_free(p);
    bp_plan_cache_get_stats(c, &after);
    CHECK(after.bad_files == before.bad_files + 1 && after.misses == before.misses + 1);
    CHECK_MSG(strstr(bp_plan_cache_last_warning(c), needle) != NULL, "warning \"%s\" lacks \"%s\"", bp_plan_cache_last_warning(c), needle);
    int hit = -1;
    bp_plan_options po;
    bp_plan_options_init(&po);
    CHECK_OK(bp_plan_cache_plan(c, g, k->signature, &po, &p, &hit, &err), err);
    CHECK(hit == 0 && p && same_plan(p, ref));
    bp_plan_free(p);
    p = NULL;
    CHECK_OK(bp_plan_cache_get(c, k, g, &p, &err), err);
    CHECK(p && same_plan(p, ref));
    bp_plan_free(p);
}

/* A cache in dir (warnings to warn_sink). */
static bp_plan_cache *open_cache(void)
{
    bp_error err = {0};
    bp_plan_cache *c = NULL;
    CHECK_OK(bp_plan_cache_open(dir, warn_sink, &c, &err), err);
    REQUIRE(c);
    return c;
}

static void test_hit_miss_corrupt(void)
{
    bp_error err = {0};
    bp_plan_cache *c = open_cache();
    bp_graph *g = gen("transformer", 0, 64);
    bp_plan_options po;
    bp_plan_options_init(&po);
    bp_cache_key k;
    CHECK_OK(bp_cache_key_make(g, "S=64", &po, &k, &err), err);
    CHECK(strlen(k.file) == 32);
    bp_plan *p = NULL, *ref = NULL;
    CHECK_OK(bp_plan_cache_get(c, &k, g, &p, &err), err);
    CHECK(p == NULL);                                       /* miss */
    CHECK_OK(bp_plan_graph(g, &po, &ref, &err), err);
    CHECK_OK(bp_plan_cache_put(c, &k, g, ref, &err), err);
    CHECK_OK(bp_plan_cache_get(c, &k, g, &p, &err), err);   /* hit */
    CHECK(p && same_plan(p, ref));
    CHECK(p && bp_verify(g, p, &err) == BP_OK);
    bp_plan_free(p);
    p = NULL;
    bp_plan_cache_stats st;
    bp_plan_cache_get_stats(c, &st);
    CHECK(st.hits == 1 && st.misses == 1 && st.writes == 1 && st.bad_files == 0);

    /* Other keys miss: signature, options, graph. */
    bp_cache_key k2;
    CHECK_OK(bp_cache_key_make(g, "S=65", &po, &k2, &err), err);
    CHECK(strcmp(k.file, k2.file));
    CHECK_OK(bp_plan_cache_get(c, &k2, g, &p, &err), err);
    CHECK(!p);
    bp_plan_options po2 = po;
    po2.alpha = 0.71;
    CHECK_OK(bp_cache_key_make(g, "S=64", &po2, &k2, &err), err);
    CHECK(strcmp(k.file, k2.file));
    po2 = po;
    po2.progress = 1;                                       /* not part of the key */
    CHECK_OK(bp_cache_key_make(g, "S=64", &po2, &k2, &err), err);
    CHECK(!strcmp(k.file, k2.file));

    char path[1024];
    bp_plan_cache_file(c, &k, path, sizeof path);
    size_t n;
    unsigned char *orig = slurp(path, &n);
    unsigned char *b = malloc(n);
    size_t nt = (size_t)bp_graph_n_tensors(g);

    /* A flipped byte anywhere: checksum.  Try several positions. */
    for (size_t pos = 40; pos < n - 16; pos += n / 7) {
        memcpy(b, orig, n);
        b[pos] ^= 0x40;
        spit(path, b, n);
        expect_bad(c, &k, g, ref, "checksum");
    }
    /* Truncated: half, a few bytes, empty. */
    spit(path, orig, n / 2);
    expect_bad(c, &k, g, ref, "truncated");
    spit(path, orig, 10);
    expect_bad(c, &k, g, ref, "truncated");
    spit(path, orig, 0);
    expect_bad(c, &k, g, ref, "truncated");
    /* Not a cache file. */
    memset(b, 'x', n);
    spit(path, b, n);
    expect_bad(c, &k, g, ref, "magic");
    /* Format version mismatch. */
    memcpy(b, orig, n);
    b[8] = 9;   /* a version this bufplan does not read */
    spit(path, b, n);
    expect_bad(c, &k, g, ref, "format version 9");
    /* Written by another bufplan version (checksum made valid). */
    memcpy(b, orig, n);
    unsigned char *v = (unsigned char *)strstr((char *)b + 20, "bufplan ");
    REQUIRE(v);
    v[8] = '9';
    fix_checksum(b, n);
    spit(path, b, n);
    expect_bad(c, &k, g, ref, "written by bufplan 9");
    /* Another key's file under this name (signature differs). */
    memcpy(b, orig, n);
    char *sg = strstr((char *)b + 20, "signature S=64");
    REQUIRE(sg);
    sg[13] = '5';
    fix_checksum(b, n);
    spit(path, b, n);
    expect_bad(c, &k, g, ref, "differs");
    /* A placement past the arena (checksum valid): structural check. */
    size_t off_arr = n - 16 - 4 - nt - 16 * nt;   /* before: the kinds, then the count of body plans (0) */
    memcpy(b, orig, n);
    int32_t victim = -1;
    for (int32_t t = 0; t < (int32_t)nt && victim < 0; t++)
        if (bp_plan_tensor(ref, t)->offset != BP_NO_OFFSET) victim = t;
    REQUIRE(victim >= 0);
    uint64_t far = bp_plan_get_stats(ref)->arena_bytes;
    memcpy(b + off_arr + (size_t)victim * 8, &far, 8);
    fix_checksum(b, n);
    spit(path, b, n);
    expect_bad(c, &k, g, ref, "outside the arena");
    /* Every placement at 0 (in range, but overlapping): only bp_verify sees
     * it, so with verification on (off by default) the file is refused... */
    bp_plan_cache_set_verify(c, 1);
    memcpy(b, orig, n);
    uint64_t zero = 0;
    for (size_t t = 0; t < nt; t++)
        if (bp_plan_tensor(ref, (int32_t)t)->offset != BP_NO_OFFSET) memcpy(b + off_arr + t * 8, &zero, 8);
    fix_checksum(b, n);
    spit(path, b, n);
    expect_bad(c, &k, g, ref, "verification");
    /* ... and with verification off (the default) that file is taken. */
    spit(path, b, n);
    bp_plan_cache_set_verify(c, 0);
    CHECK_OK(bp_plan_cache_get(c, &k, g, &p, &err), err);
    CHECK(p != NULL);
    CHECK(p && bp_verify(g, p, &err) == BP_ERR_VERIFY);
    bp_plan_free(p);
    p = NULL;
    /* A plan for a different graph under the same name: counts differ. */
    bp_graph *g2 = gen("diamond", 0, 0);
    CHECK(bp_plan_cache_put(c, &k, g2, NULL, &err) == BP_ERR_USAGE);
    bp_plan *p2 = NULL;
    CHECK_OK(bp_plan_graph(g2, &po, &p2, &err), err);
    CHECK_OK(bp_plan_cache_put(c, &k, g2, p2, &err), err);
    expect_bad(c, &k, g, ref, "tensors");
    bp_plan_free(p2);
    bp_graph_free(g2);
    /* No temporary files left behind. */
    CHECK(count_files(dir, ".") == 2); /* "." and ".." */
    spit(path, orig, n);
    free(b);
    free(orig);
    bp_plan_free(ref);
    bp_graph_free(g);
    bp_plan_cache_close(c);

    /* Opening: a file where the directory should be. */
    char fpath[512];
    snprintf(fpath, sizeof fpath, "%s/file", dir);
    spit(fpath, (const unsigned char *)"x", 1);
    CHECK(bp_plan_cache_open(fpath, warn_sink, &c, &err) == BP_ERR_IO && strstr(err.msg, "not a directory"));
    unlink(fpath);
}

/* Writers and readers in separate processes on one key: a reader sees a
 * miss or the whole plan, never a bad file. */
static void test_concurrent(void)
{
    enum { WRITERS = 3, READERS = 2, ROUNDS = 15 };
    char cdir[300];
    snprintf(cdir, sizeof cdir, "%s/conc", dir);
    bp_graph *g = gen("chain", 8000, 0);
    bp_plan_options po;
    bp_plan_options_init(&po);
    bp_plan *ref = NULL;
    bp_error err = {0};
    REQUIRE(bp_plan_graph(g, &po, &ref, &err) == BP_OK);
    bp_cache_key k;
    REQUIRE(bp_cache_key_make(g, "", &po, &k, &err) == BP_OK);
    fflush(NULL);
    pid_t pids[WRITERS + READERS];
    for (int i = 0; i < WRITERS + READERS; i++) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            bp_plan_cache *c = NULL;
            bp_error e2 = {0};
            int bad = 0;
            if (bp_plan_cache_open(cdir, warn_sink, &c, &e2)) _exit(10);
            for (int r = 0; r < ROUNDS * (i < WRITERS ? 1 : 4); r++) {
                if (i < WRITERS) {
                    if (bp_plan_cache_put(c, &k, g, ref, &e2)) bad++;
                } else {
                    bp_plan *p = NULL;
                    if (bp_plan_cache_get(c, &k, g, &p, &e2)) bad++;
                    if (p && !same_plan(p, ref)) bad++;
                    bp_plan_free(p);
                }
            }
            bp_plan_cache_stats st;
            bp_plan_cache_get_stats(c, &st);
            if (st.bad_files) bad += 100;
            bp_plan_cache_close(c);
            _exit(bad ? 1 : 0);
        }
        pids[i] = pid;
    }
    for (int i = 0; i < WRITERS + READERS; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d (%s) failed: status %d", i, i < WRITERS ? "writer" : "reader",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    CHECK(count_files(cdir, ".") == 2);   /* no temp files left */
    CHECK(count_files(cdir, k.file) == 1);
    bp_plan_cache *c = NULL;
    REQUIRE(bp_plan_cache_open(cdir, warn_sink, &c, &err) == BP_OK);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_cache_get(c, &k, g, &p, &err), err);
    CHECK(p && same_plan(p, ref));
    bp_plan_free(p);
    bp_plan_cache_close(c);
    rm_dir(cdir);
    bp_plan_free(ref);
    bp_graph_free(g);
}

/* Cache files forged with claims the verifier refuses (written through
 * bp_plan_cache_put, so the checksum is right): peak_step 2^31-1 and -5, an
 * arena of 2^63, a planned tensor marked output, garbage counts.  Each is
 * refused on load (a miss, counted as a bad file, with a warning). */
static void test_forgeries(void)
{
    bp_error err = {0};
    bp_plan_cache *c = open_cache();
    bp_graph *g = gen("transformer", 0, 64);
    bp_plan_options po;
    bp_plan_options_init(&po);
    for (int f = 0; f < 5; f++) {
        bp_cache_key k;
        char sig[32];
        snprintf(sig, sizeof sig, "forged=%d", f);
        CHECK_OK(bp_cache_key_make(g, sig, &po, &k, &err), err);
        bp_plan *p = NULL, *q = NULL;
        CHECK_OK(bp_plan_graph(g, &po, &p, &err), err);
        if (f == 0) p->stats.peak_step = INT32_MAX;
        if (f == 1) p->stats.peak_step = -5;
        if (f == 2) p->stats.arena_bytes = (uint64_t)1 << 63;
        if (f == 3) for (int32_t t = 0; t < p->n_t; t++) if (p->tp[t].kind == BP_KIND_PLANNED) { p->tp[t].kind = BP_KIND_OUTPUT; break; }
        if (f == 4) p->stats.n_planned = 123456789;
        bp_plan_cache_stats before, after;
        bp_plan_cache_get_stats(c, &before);
        bp_status s = bp_plan_cache_put(c, &k, g, p, &err);
        if (s == BP_OK) {
            s = bp_plan_cache_get(c, &k, g, &q, &err);
            bp_plan_cache_get_stats(c, &after);
            CHECK_MSG(s == BP_OK && q == NULL, "forgery %d was loaded", f);
            CHECK_MSG(after.bad_files == before.bad_files + 1, "forgery %d: not counted as a bad file", f);
            const char *w = bp_plan_cache_last_warning(c);
            CHECK_MSG(w && *w, "forgery %d: no warning", f);
            fprintf(stderr, "forgery %d refused on load: %.200s\n", f, w ? w : "");
        } else {
            CHECK_MSG(err.msg[0], "forgery %d: refused by put without a message", f);   /* refused on the way in */
            fprintf(stderr, "forgery %d refused by put: %.200s\n", f, err.msg);
        }
        bp_plan_free(q);
        bp_plan_free(p);
    }
    bp_graph_free(g);
    bp_plan_cache_close(c);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/bp_test_cache_%d", (int)getpid());
    rm_dir(dir);
    warn_sink = fopen("/dev/null", "w");
    REQUIRE(warn_sink);
    test_signature_and_hash();
    test_hit_miss_corrupt();
    test_concurrent();
    test_forgeries();
    rm_dir(dir);
    fclose(warn_sink);
    return check_status();
}
