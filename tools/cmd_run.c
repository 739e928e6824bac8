/*
 * cmd_run.c — `bufplan run`: execute a plan with the reference kernels.
 *
 * Plans the graph (or reads --plan), builds an executor in the chosen mode,
 * fills the inputs and weights with seeded bytes, runs K times and prints
 * per-run times, fences and memory; --verify compares with a safe run,
 * --history writes the tenant log of the last run and checks it.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "cli_dyn.h" /* --config, --preset, --shapes */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char run_help[] =
    "usage: bufplan run GRAPH [plan options] [--plan PLAN.json] [--threads N] [--safe | --dynamic [--malloc | --learn]]\n"
    "                  [--verify] [--history FILE] [--repeat K] [--stats] [--kernel digest|empty]\n"
    "                  [--kernel-us N] [--fence-aware] [--config FILE] [--shapes FILE]\n"
    "\n"
    "Executes the graph with reference kernels: digest kernels (every output a\n"
    "hash-stream of the op and its inputs, so a corrupted tensor changes the\n"
    "outputs) or empty ones.  Inputs and weights get bytes derived from --seed.\n"
    "\n"
    "  --plan PLAN.json       run this plan instead of planning the graph\n"
    "  --threads N            N workers (ops run as their inputs are ready; fences\n"
    "                         order reused bytes); default 1: the plan's order\n"
    "  --safe                 every tensor its own buffer (no reuse)\n"
    "  --dynamic              no offsets: tensors from the pool at run time\n"
    "  --malloc               with --dynamic: malloc/free instead of the pool\n"
    "  --learn                with --dynamic: the pool's handles learn the runs'\n"
    "                         repeating requests and serve later runs from a plan\n"
    "  --verify               also run safe mode and compare every output byte and\n"
    "                         every tensor as read; exit 1 naming the first\n"
    "                         corrupted tensor and what shared its bytes\n"
    "  --history FILE         write every buffer's tenants with ALLOC, first write,\n"
    "                         reads, FREE and thread for the last run, then check\n"
    "                         that no two tenants' accesses interleave (exit 1)\n"
    "  --repeat K             run K times (default 1), one line per run\n"
    "  --stats                pool statistics after the runs\n"
    "  --kernel digest|empty  the reference kernel (default digest)\n"
    "  --kernel-us N          each kernel also busy-waits N microseconds\n"
    "  --fence-aware          plan with the assignment that avoids fences\n"
    "  --shapes FILE          replay shapes through the warm-up planner: one binding\n"
    "                         per line (SYM=N SYM=N ...; \"freeze\" freezes the\n"
    "                         planner); per shape: replanned, memory-hit, disk-hit,\n"
    "                         covered or conservative, and the memory used\n"
    "  --config FILE, --preset NAME, --buckets SYM=B1,B2, --cache DIR, ...\n"
    "                         the configuration (bufplan config --help); buckets\n"
    "                         round --dim values up (and the shapes of --shapes)\n";

/* cli_fail, and for a run past its byte limit how to raise it. */
static int run_fail(bp_error *e)
{
    size_t L = strlen(e->msg);
    if (e->status == BP_ERR_EXHAUSTED && L + 1 < sizeof e->msg)
        snprintf(e->msg + L, sizeof e->msg - L, "; run may reserve at most --limit max_run_bytes=N (default: the machine's memory)");
    return cli_fail(e);
}

typedef struct run_spin { double us; } run_spin;

static int run_spin_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    (void)c; (void)err;
    const run_spin *s = user;
    if (s->us <= 0) return 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((double)(t.tv_sec - t0.tv_sec) * 1e6 + (double)(t.tv_nsec - t0.tv_nsec) * 1e-3 < s->us);
    return 0;
}

int cmd_run(int argc, char **argv)
{
    cli_graph_opts go;
    cli_graph_opts_init(&go);
    bp_config cfg;   /* defaults < --preset < --config file < flags */
    int crc = cli_config_prescan(&cfg, argc, argv, "run");
    if (crc) return crc;
    bp_plan_options po = cfg.plan;
    const char *plan_path = NULL, *history = NULL, *kernel = "digest", *shapes = NULL;
    int threads = 1, safe = 0, dynamic = 0, use_malloc = 0, learn = 0, verify = 0, stats = 0;
    uint64_t repeat = 1;
    double kernel_us = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) { fputs(run_help, stdout); fputs(cli_graph_opts_help, stdout); fputs(cli_plan_opts_help, stdout); return CLI_OK; }
        if (!strcmp(a, "--threads")) {
            uint64_t n;
            if (i + 1 >= argc || !cli_parse_u64(argv[i + 1], &n) || n < 1 || n > 1024)
                return cli_usage_error("run", "--threads needs a number in 1..1024");
            threads = (int)n;
            po.threads = threads;
            i++;
            continue;
        }
        int r = cli_graph_opt(&go, argc, argv, &i, "run");
        if (r < 0) return CLI_BAD;
        if (r > 0) continue;
        r = cli_plan_opt(&po, argc, argv, &i, "run");
        if (!r) r = cli_config_opt(&cfg, argc, argv, &i, "run");
        if (r < 0) return CLI_BAD;
        if (r > 0) continue;
        if (!strcmp(a, "--plan") || !strcmp(a, "--history") || !strcmp(a, "--kernel") || !strcmp(a, "--repeat") ||
            !strcmp(a, "--kernel-us") || !strcmp(a, "--shapes")) {
            if (i + 1 >= argc) return cli_usage_error("run", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--plan")) plan_path = v;
            else if (!strcmp(a, "--shapes")) shapes = v;
            else if (!strcmp(a, "--history")) history = v;
            else if (!strcmp(a, "--kernel")) {
                if (strcmp(v, "digest") && strcmp(v, "empty")) return cli_usage_error("run", "--kernel must be digest or empty, not \"%s\"", v);
                kernel = v;
            } else if (!strcmp(a, "--repeat")) {
                if (!cli_parse_u64(v, &repeat) || repeat < 1 || repeat > 1000000) return cli_usage_error("run", "--repeat: \"%s\" is not in 1..1000000", v);
            } else if (!cli_parse_double(v, &kernel_us) || kernel_us < 0 || kernel_us > 1e7) {
                return cli_usage_error("run", "--kernel-us: \"%s\" is not a number of microseconds", v);
            }
            continue;
        }
        if (!strcmp(a, "--safe")) { safe = 1; continue; }
        if (!strcmp(a, "--dynamic")) { dynamic = 1; continue; }
        if (!strcmp(a, "--malloc")) { use_malloc = 1; continue; }
        if (!strcmp(a, "--learn")) { learn = 1; continue; }
        if (!strcmp(a, "--verify")) { verify = 1; continue; }
        if (!strcmp(a, "--stats")) { stats = 1; continue; }
        if (!strcmp(a, "--fence-aware")) { po.fence_aware = 1; continue; }
        if (a[0] == '-' && a[1]) return cli_usage_error("run", "unknown option %s", a);
        if (go.path) return cli_usage_error("run", "more than one graph (%s and %s)", go.path, a);
        go.path = a;
    }
    if (!go.path) return cli_usage_error("run", "no graph given");
    if (safe && dynamic) return cli_usage_error("run", "--safe and --dynamic exclude each other");
    if (use_malloc && !dynamic) return cli_usage_error("run", "--malloc needs --dynamic");
    if (learn && (!dynamic || use_malloc)) return cli_usage_error("run", "--learn needs --dynamic (and the pool, not --malloc)");
    if (verify && (safe || dynamic)) return cli_usage_error("run", "--verify checks the planned mode; drop --safe/--dynamic");
    cfg.plan = po;
    if (shapes) {
        if (plan_path || safe || dynamic || verify || history || repeat > 1 || stats)
            return cli_usage_error("run", "--shapes replays shapes through the warm-up planner, one planned run each; it takes none of --plan, --safe, --dynamic, --verify, --history, --repeat, --stats");
        cli_replay_opts ro = {shapes, threads, kernel, kernel_us, po.seed};
        return cli_run_shapes(&go, &cfg, &ro);
    }
    char dim_text[64][CLI_DIM_TEXT];
    cli_apply_buckets(&cfg, &go, dim_text, "run");

    bp_error e;
    bp_graph *g = NULL;
    bp_plan *p = NULL;
    bp_exec *ex = NULL;
    int rc = CLI_OK;
    bp_status s = cli_load_graph(&go, &g, &e);
    if (!s) s = cli_engine_load(&go, g, &po, &e);
    if (!s) s = cli_reserve_bodies(g, &po, &e);
    if (s) { rc = cli_fail(&e); cli_graph_free(&go, g); return rc; }
    if (plan_path) s = bp_plan_read_json(g, plan_path, &p, &e);
    else if (cfg.cache_dir[0]) {   /* the config's plan cache (a hit is checked by the cache) */
        bp_plan_cache *cache = NULL;
        int hit = 0;
        s = bp_plan_cache_open(cfg.cache_dir, stderr, &cache, &e);
        if (!s) {
            bp_plan_cache_set_verify(cache, 1);
            s = bp_plan_cache_plan(cache, g, "", &po, &p, &hit, &e);
        }
        bp_plan_cache_stats cst = {0};
        if (cache) bp_plan_cache_get_stats(cache, &cst);
        bp_plan_cache_close(cache);
        if (!s) printf("plan cache: %s (%s)\n", hit ? "hit" : cst.write_errors ? "miss, plan NOT saved (see the warning)" : "miss, plan saved",
                       cfg.cache_dir);
    } else s = bp_plan_graph(g, &po, &p, &e);
    if (s) { rc = cli_fail(&e); goto out; }

    bp_exec_options eo;
    bp_exec_options_init(&eo);
    eo.mode = safe ? BP_EXEC_SAFE : dynamic ? BP_EXEC_DYNAMIC : BP_EXEC_PLANNED;
    eo.threads = threads;
    eo.dynamic_malloc = use_malloc;
    bp_pool_options pool_opt;
    bp_pool_options_init(&pool_opt);
    pool_opt.learn = learn;
    pool_opt.max_bytes = cli_run_bytes(&go);   /* a tiny graph cannot make the run take all memory */
    eo.pool = &pool_opt;
    eo.history = history != NULL;
    eo.time_allocs = 1;
    if ((s = bp_exec_new(g, p, &eo, &ex, &e))) { rc = run_fail(&e); goto out; }
    bp_digest_options dopt = {kernel_us, -1};
    run_spin spin = {kernel_us};
    if (!strcmp(kernel, "digest")) bp_exec_set_kernel(ex, bp_digest_kernel, &dopt);
    else bp_exec_set_kernel(ex, run_spin_kernel, &spin);
    if ((s = bp_digest_fill_inputs(ex, po.seed, &e))) { rc = cli_fail(&e); goto out; }

    bp_exec_info info;
    bp_exec_get_info(ex, &info);
    char b1[64], b2[64];
    printf("graph %s: %d ops, %d tensors; %s mode, %d thread%s, %s kernels%s\n", bp_graph_name(g), bp_graph_n_ops(g),
           bp_graph_n_tensors(g), bp_exec_mode_name(eo.mode), threads, threads == 1 ? "" : "s", kernel,
           kernel_us > 0 ? " + busy-wait" : "");
    if (eo.mode == BP_EXEC_PLANNED)
        printf("plan: %s / %s%s, arena %s\n", bp_sched_name(bp_plan_sched(p)), bp_assign_name(bp_plan_assign(p)),
               po.fence_aware ? " (fence-aware)" : "", cli_fmt_bytes(info.arena_bytes, b1, sizeof b1));
    if (threads > 1)
        printf("dependencies: %" PRIu64 " data edges, %" PRIu64 " fences\n", info.n_data_edges, info.n_fences);
    double best = 0, total = 0;
    bp_exec_run_stats st;
    for (uint64_t k = 0; k < repeat; k++) {
        if ((s = bp_exec_run(ex, &st, &e))) { rc = run_fail(&e); goto out; }
        printf("run %" PRIu64 ": %.3f ms, %.1f ns/op, %" PRIu64 " allocs, %" PRIu64 " frees, alloc time %.3f ms (%.2f%%)\n",
               k + 1, st.seconds * 1e3, st.n_ops ? st.seconds * 1e9 / (double)st.n_ops : 0.0, st.n_allocs, st.n_frees,
               st.alloc_seconds * 1e3, st.seconds > 0 ? 100.0 * st.alloc_seconds / st.seconds : 0.0);
        if (!k || st.seconds < best) best = st.seconds;
        total += st.seconds;
    }
    if (repeat > 1) printf("runs: best %.3f ms, mean %.3f ms\n", best * 1e3, total * 1e3 / (double)repeat);
    printf("memory: activations peak %s%s; inputs and weights %s\n", cli_fmt_bytes(st.peak_bytes, b1, sizeof b1),
           eo.mode == BP_EXEC_PLANNED ? (st.peak_bytes == info.arena_bytes ? " (= the plan's arena)" : " (arena + dynamic tensors)")
           : eo.mode == BP_EXEC_SAFE ? " (every tensor its own buffer)" : " (run-time blocks)",
           cli_fmt_bytes(info.external_bytes, b2, sizeof b2));
    if (eo.mode == BP_EXEC_SAFE) printf("memory: safe buffers %s\n", cli_fmt_bytes(info.safe_bytes, b1, sizeof b1));
    if (stats) bp_pool_stats_print(bp_exec_pool(ex), stdout);
    if (history) {
        if ((s = bp_exec_write_history(ex, history, &e))) { rc = cli_fail(&e); goto out; }
        uint64_t nc = 0;
        s = bp_history_check(history, stdout, &nc, &e);
        if (s == BP_ERR_VERIFY) { printf("history: %s: %" PRIu64 " conflicts\n", history, nc); rc = CLI_FAIL; }
        else if (s) { rc = cli_fail(&e); goto out; }
        else printf("history: %s: no tenants' accesses interleave\n", history);
    }
    if (verify) {
        bp_exec_options vo;
        bp_exec_options_init(&vo);
        vo.threads = threads;
        s = bp_exec_verify(g, p, &vo, po.seed, stdout, &e);
        if (s == BP_ERR_VERIFY) rc = CLI_FAIL;
        else if (s) { rc = cli_fail(&e); goto out; }
    }
out:
    bp_exec_free(ex);
    bp_plan_free(p);
    cli_graph_free(&go, g);
    return rc;
}
