/* Fuzzes the plan cache loader: the fuzz bytes become the cache file of a
 * fixed graph's key, then bp_plan_cache_get must give a miss (with a
 * warning) or a hit whose plan bp_verify accepts — never an error, a crash
 * or a wrong plan. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include <bufplan_dyn.h>
#include <unistd.h>

static bp_graph *pc_graph;
static bp_plan_cache *pc_cache;
static bp_cache_key pc_key;
static char pc_path[4096];
static char pc_dir[] = "/tmp/bp_fuzz_cache_XXXXXX";

static void pc_cleanup(void)
{
    unlink(pc_path);
    rmdir(pc_dir);
}

static void pc_init(void)
{
    bp_error err = {0};
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.seed = 1;
    go.nodes = 12;
    if (bp_gen("diamond", &go, NULL, &pc_graph, &err)) abort();
    if (!mkdtemp(pc_dir)) abort();
    atexit(pc_cleanup);
    FILE *devnull = fopen("/dev/null", "w");
    if (bp_plan_cache_open(pc_dir, devnull, &pc_cache, &err)) abort();
    bp_plan_cache_set_verify(pc_cache, 1);   /* a hit must then verify */
    bp_plan_options o;
    bp_plan_options_init(&o);
    if (bp_cache_key_make(pc_graph, "", &o, &pc_key, &err)) abort();
    bp_plan_cache_file(pc_cache, &pc_key, pc_path, sizeof pc_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!pc_graph) pc_init();
    FILE *f = fopen(pc_path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    bp_error err = {0};
    bp_plan *p = NULL;
    bp_status s = bp_plan_cache_get(pc_cache, &pc_key, pc_graph, &p, &err);
    if (s == BP_ERR_NOMEM) return 0;
    FZ_ASSERT(s == BP_OK, err.msg);
    if (p) {
        s = bp_verify(pc_graph, p, &err);
        FZ_ASSERT(s == BP_OK, err.msg);
        bp_plan_free(p);
    }
    return 0;
}
