/* Writes seed inputs for the harnesses (fuzz/run.sh runs it): small
 * generated graphs as JSON, GRAPH NUL PLAN pairs for fuzz_plan, a few
 * MiniMalloc CSV instances and random bytes for fuzz_random_graph.
 * usage: fuzz_seeds OUTDIR   (writes OUTDIR/<harness>/seed-*) */
#define _GNU_SOURCE
#include <bufplan.h>
#include <bufplan_dyn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(const char *dir, const char *h, const char *name, const char *a, size_t na, const char *b, size_t nb)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/seed-%s", dir, h, name);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    fwrite(a, 1, na, f);
    if (b) { fputc(0, f); fwrite(b, 1, nb, f); }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: fuzz_seeds OUTDIR\n"); return 2; }
    const char *dir = argv[1];
    const char *const *kinds = bp_gen_kinds();
    for (int k = 0; kinds[k]; k++) {
        for (int training = 0; training < 2; training++) {
            bp_gen_options o;
            bp_gen_options_init(&o);
            o.seed = (uint64_t)k + 1;
            o.layers = 2; o.width = 4; o.nodes = 6; o.seq = 8; o.training = training;
            o.symbolic_seq = k & 1;
            bp_graph *g = NULL;
            bp_error err = {0};
            if (bp_gen(kinds[k], &o, NULL, &g, &err) != BP_OK) continue;
            if (bp_graph_n_ops(g) > 400) { bp_graph_free(g); continue; }
            char *gj = NULL, *pj = NULL;
            size_t ng = 0, np = 0;
            FILE *f = open_memstream(&gj, &ng);
            bp_graph_write_json_file(g, f, &err);
            fclose(f);
            char name[64];
            snprintf(name, sizeof name, "%s%s", kinds[k], training ? "-train" : "");
            put(dir, "fuzz_graph_json", name, gj, ng, NULL, 0);
            bp_plan_options po;
            bp_plan_options_init(&po);
            bp_plan *p = NULL;
            if (bp_plan_graph(g, &po, &p, &err) == BP_OK) {
                f = open_memstream(&pj, &np);
                bp_plan_write_json_file(p, g, f, &err);
                fclose(f);
                put(dir, "fuzz_plan", name, gj, ng, pj, np);
                bp_plan_free(p);
                free(pj);
            }
            free(gj);
            bp_graph_free(g);
        }
    }
    /* a plan for fuzz_plan's built-in graph (diamond, seed 1, 12 nodes) */
    {
        bp_gen_options o;
        bp_gen_options_init(&o);
        o.seed = 1; o.nodes = 12;
        bp_graph *g = NULL;
        bp_error err = {0};
        bp_plan *p = NULL;
        bp_plan_options po;
        bp_plan_options_init(&po);
        if (bp_gen("diamond", &o, NULL, &g, &err) == BP_OK && bp_plan_graph(g, &po, &p, &err) == BP_OK) {
            char *pj = NULL;
            size_t np = 0;
            FILE *f = open_memstream(&pj, &np);
            bp_plan_write_json_file(p, g, f, &err);
            fclose(f);
            put(dir, "fuzz_plan", "builtin-diamond", pj, np, NULL, 0);
            free(pj);
        }
        bp_plan_free(p);
        bp_graph_free(g);
    }
    /* a cache file of fuzz_plan_cache's graph (diamond, seed 1, 12 nodes), and a config */
    {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/fuzz_plan_cache", dir);
        struct stat sb;
        if (stat(sub, &sb) == 0) {
            bp_gen_options o;
            bp_gen_options_init(&o);
            o.seed = 1; o.nodes = 12;
            bp_graph *g = NULL;
            bp_error err = {0};
            bp_plan *p = NULL;
            bp_plan_options po;
            bp_plan_options_init(&po);
            char cdir[] = "/tmp/bp_fuzz_seed_XXXXXX";
            bp_plan_cache *pc = NULL;
            bp_cache_key key;
            if (mkdtemp(cdir) && bp_gen("diamond", &o, NULL, &g, &err) == BP_OK && bp_plan_graph(g, &po, &p, &err) == BP_OK &&
                bp_plan_cache_open(cdir, NULL, &pc, &err) == BP_OK && bp_cache_key_make(g, "", &po, &key, &err) == BP_OK &&
                bp_plan_cache_put(pc, &key, g, p, &err) == BP_OK) {
                char path[4096], cmd[8400];
                bp_plan_cache_file(pc, &key, path, sizeof path);
                snprintf(cmd, sizeof cmd, "cp '%s' '%s/seed-diamond.bpc'", path, sub);
                if (system(cmd) != 0) fprintf(stderr, "fuzz_seeds: cannot copy %s\n", path);
            }
            bp_plan_cache_close(pc);
            char rm[4200];
            snprintf(rm, sizeof rm, "rm -rf '%s'", cdir);
            if (system(rm) != 0) fprintf(stderr, "fuzz_seeds: cannot remove %s\n", cdir);
            bp_plan_free(p);
            bp_graph_free(g);
        }
        snprintf(sub, sizeof sub, "%s/fuzz_config", dir);
        if (stat(sub, &sb) == 0) {
            bp_config c;
            bp_config_init(&c);
            char *t = NULL;
            size_t n = 0;
            bp_error err = {0};
            FILE *f = open_memstream(&t, &n);
            bp_config_write_json(&c, f, &err);
            fclose(f);
            put(dir, "fuzz_config", "defaults", t, n, NULL, 0);
            free(t);
            static const char cfg[] = "{\"preset\": \"training\", \"alpha\": 0.5, \"buckets\": \"S=128,256\", \"replan\": false}";
            put(dir, "fuzz_config", "small", cfg, strlen(cfg), NULL, 0);
        }
    }
    static const char *const op_shapes[] = {
        "{\"ops\": [{\"domain\": \"com.example\", \"op_type\": \"MyOp\", \"attrs\": {\"pad\": 1},"
        " \"outputs\": [{\"dtype\": \"in0\", \"shape\": [\"in0[0]\", \"attr.ks[-1] * 2\", \"(in0[2] + 2*attr.pad - attr.k) / 1 + 1\","
        " \"ceil_div(in0[-1], 2)\"]}, {\"dtype\": \"i64\", \"shape\": \"in0\"}]}]}",
        "{\"ops\": [{\"node\": \"n2\", \"outputs\": [{\"shape\": [\"in0.rank\", \"max(in0[1], 3) % 4\"]}, {\"shape\": \"unknown\"}]},"
        " {\"op_type\": \"Weird\", \"domain\": \"\", \"outputs\": [{\"dtype\": \"f16\", \"shape\": [\"in0[0]\", 7]}]},"
        " {\"op_type\": \"MyOp\", \"outputs\": [{\"shape\": [\"in2[0] - 4\", \"min(in0[1], -in0[0])\"]}]}]}",
    };
    {
        char sub[4096];
        struct stat sb;
        snprintf(sub, sizeof sub, "%s/fuzz_op_shapes", dir);
        for (size_t i = 0; i < sizeof op_shapes / sizeof op_shapes[0] && stat(sub, &sb) == 0; i++) {
            char name[16];
            snprintf(name, sizeof name, "ops%zu", i);
            put(dir, "fuzz_op_shapes", name, op_shapes[i], strlen(op_shapes[i]), NULL, 0);
        }
    }
    static const char *const csv[] = {
        "id,lower,upper,size\n0,0,3,4\n1,1,2,8\n2,2,5,4\n",
        "id,lower,upper,size,alignment,offset\n\"a\",0,10,100,64,\nb,5,15,50,,128\nc,0,20,10,8,\n",
        "buffer,start,end,size\nx,0,0,1\ny,0,1,2\n",
    };
    for (size_t i = 0; i < sizeof csv / sizeof csv[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "inline%zu", i);
        put(dir, "fuzz_csv", name, csv[i], strlen(csv[i]), NULL, 0);
    }
    unsigned long long s = 42;
    for (int i = 0; i < 16; i++) {
        char buf[256], name[16];
        for (size_t j = 0; j < sizeof buf; j++) { s = s * 6364136223846793005ull + 1442695040888963407ull; buf[j] = (char)(s >> 56); }
        snprintf(name, sizeof name, "rand%d", i);
        put(dir, "fuzz_random_graph", name, buf, sizeof buf, NULL, 0);
    }
    return 0;
}
