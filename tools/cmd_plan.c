/*
 * bufplan plan GRAPH [options] — plan a graph, verify the plan, print a short
 * report and write the plan (JSON) or its event table (CSV).
 */
#include "cli.h"
#include "cli_dyn.h" /* --config, --preset, --cache */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void plan_usage(FILE *f)
{
    fprintf(f, "usage: bufplan plan GRAPH [options]\n\n"
               "Plans GRAPH (.json bufplan-graph or .onnx): a schedule, live intervals,\n"
               "offsets in one arena and the ALLOC/EXEC/FREE event table, then verifies it.\n\n"
               "options:\n%s%s%s"
               "  --format text|json|csv output: a report (text, default without -o), the\n"
               "                         plan JSON (default with -o) or the event table CSV\n"
               "  -o FILE                write the plan there (\"-\" = stdout)\n"
               "  --no-verify            skip the verifier\n"
               "  -q, --quiet            no report\n"
               /* --config, --preset, --cache */
               "  --config FILE --preset NAME  planner settings from a config file / preset\n"
               "                         (flags win; bufplan config --help)\n"
               "  --cache DIR            reuse plans saved in DIR, save new ones there\n",
               cli_plan_opts_help, cli_threads_opt_help, cli_graph_opts_help);
}

/* The short report. */
/* load_ms >= 0: the plan came from the cache, loaded in that time. */
/* Dynamic tensors inside the bodies of p, at every depth. */
static int32_t body_dynamic(const bp_plan *p)
{
    int32_t n = 0;
    for (int32_t i = 0; i < bp_plan_n_bodies(p); i++) {
        const bp_plan *c = bp_plan_body(p, i);
        n += bp_plan_get_stats(c)->n_dynamic + body_dynamic(c);
    }
    return n;
}

static void print_report(FILE *f, const bp_graph *g, const bp_plan *p, int verified, int threads, double load_ms)
{
    const bp_plan_stats *st = bp_plan_get_stats(p);
    char b1[32], b2[32], b3[32];
    fprintf(f, "graph %s: %d ops, %d tensors: %d planned in %d storages (%d views in all), %d dynamic (not planned), "
               "external: %d inputs, %d weights\n",
            bp_graph_name(g), bp_graph_n_ops(g), bp_graph_n_tensors(g), st->n_planned, st->n_storages, st->n_views, st->n_dynamic,
            st->n_inputs, st->n_weights);
    if (!st->n_planned) fprintf(f, "  nothing planned: no tensor is in the arena%s\n", st->n_dynamic ? " (every activation is dynamic)" : "");
    fprintf(f, "schedule %s, assign %s, alignment %llu\n", bp_sched_name(bp_plan_sched(p)), bp_assign_name(bp_plan_assign(p)),
            (unsigned long long)bp_plan_alignment(p));
    double naive = (double)st->naive_bytes, lb = (double)st->lower_bound_bytes;
    fprintf(f, "  naive        %12s  every planned tensor that is no view its own aligned buffer\n", cli_fmt_bytes(st->naive_bytes, b1, sizeof b1));
    if (st->naive_bytes && st->lower_bound_bytes)
        fprintf(f, "  arena        %12s  %.3f x naive, %.3f x lower bound%s\n", cli_fmt_bytes(st->arena_bytes, b2, sizeof b2),
                (double)st->arena_bytes / naive, (double)st->arena_bytes / lb, st->optimal ? " (proven optimal)" : "");
    else
        fprintf(f, "  arena        %12s\n", cli_fmt_bytes(st->arena_bytes, b2, sizeof b2));
    int32_t ps = st->peak_step;
    fprintf(f, "  lower bound  %12s  max live, at step %d (op \"%s\")\n", cli_fmt_bytes(st->lower_bound_bytes, b3, sizeof b3),
            ps, ps >= 0 && ps < bp_plan_n_steps(p) ? bp_graph_op_name(g, bp_plan_schedule(p)[ps]) : "-");
    if (st->alias_saved_bytes) fprintf(f, "  aliasing saved %s (planned views and in-place outputs)\n", cli_fmt_bytes(st->alias_saved_bytes, b1, sizeof b1));
    if (st->n_dynamic) fprintf(f, "  dynamic      %d tensors kept out of the arena\n", st->n_dynamic);
    if (bp_plan_n_copies(p))
        fprintf(f, "  fallback     %d recomputes (cost %.4g), %d offloads (%s, %.4g cost units not hidden): overhead %.2f%% of the compute\n",
                st->n_recomputes, st->recompute_cost, st->n_offloads, cli_fmt_bytes(st->offload_bytes, b1, sizeof b1), st->transfer_cost,
                st->overhead_percent);
    if (st->n_control_flow) {
        int32_t body_dyn = body_dynamic(p);
        fprintf(f, "  control flow %d ops with bodies (If, Loop, Scan; nested included), %d tensors planned inside them", st->n_control_flow,
                st->n_body_planned);
        if (body_dyn) fprintf(f, ", %d dynamic (not planned)", body_dyn);
        fputc('\n', f);
    }
    fprintf(f, "  makespan     %.4g cost units (the ops' costs: the graph's, else estimated microseconds) on %d worker(s)%s\n", st->makespan, threads,
            st->sched_optimal ? "; schedule proven optimal" : bp_plan_sched(p) >= BP_SCHED_BEST ? "; schedule not proven optimal" : "");
    if (load_ms >= 0)
        fprintf(f, "  plan time    loaded from the cache in %.3f ms; planned originally in %.3f ms (schedule %.3f, assign %.3f)%s\n",
                load_ms, st->plan_seconds * 1e3, st->schedule_seconds * 1e3, st->assign_seconds * 1e3, verified ? "; verified" : "");
    else
        fprintf(f, "  plan time    %.3f ms (schedule %.3f, assign %.3f)%s\n", st->plan_seconds * 1e3, st->schedule_seconds * 1e3,
                st->assign_seconds * 1e3, verified ? "; verified" : "");
}

/* --sweep alpha: the `seed` scheduler's peak and makespan for alpha in [0, 1]. */
static int run_sweep(const bp_graph *g, const bp_plan_options *po, int n)
{
    bp_sweep_point *pts = calloc((size_t)n, sizeof *pts);
    bp_error err = {0};
    if (!pts) { fprintf(stderr, "bufplan: out of memory\n"); return CLI_BAD; }
    if (bp_schedule_sweep_alpha(g, po, n, pts, &err)) { free(pts); return cli_fail(&err); }
    printf("alpha\tbeta\tpeak_bytes\tmakespan (%d worker(s))\n", po->threads);
    for (int i = 0; i < n; i++)
        printf("%.3f\t%.3f\t%llu\t%.6g\n", pts[i].alpha, pts[i].beta, (unsigned long long)pts[i].peak_bytes, pts[i].makespan);
    free(pts);
    return CLI_OK;
}

int cmd_plan(int argc, char **argv)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    /* defaults < --preset < --config file < flags */
    bp_config cfg;
    int crc = cli_config_prescan(&cfg, argc, argv, "plan");
    if (crc) return crc;
    po = cfg.plan;
    cli_graph_opts go;
    cli_graph_opts_init(&go);
    bp_config cfg0, dflt;   /* the config's limits, then flags over them */
    bp_config_init(&dflt);
    cli_config_limits(&go, &dflt, &cfg);
    cfg0 = cfg;
    const char *out = NULL, *format = NULL;
    int no_verify = 0, quiet = 0, sweep = 0;
    uint64_t points = 11;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (cli_is_help(a)) { plan_usage(stdout); return CLI_OK; }
        if ((r = cli_plan_opt(&po, argc, argv, &i, "plan")) || (r = cli_graph_opt(&go, argc, argv, &i, "plan")) ||
            (r = cli_config_opt(&cfg, argc, argv, &i, "plan"))) {
            if (r < 0) return CLI_BAD;
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--format")) {
            if (i + 1 >= argc) return cli_usage_error("plan", "%s needs a value", a);
            if (a[1] == 'o') out = argv[++i]; else format = argv[++i];
        } else if (!strcmp(a, "--sweep")) {
            if (i + 1 >= argc || strcmp(argv[i + 1], "alpha")) return cli_usage_error("plan", "--sweep takes \"alpha\"");
            i++;
            sweep = 1;
        } else if (!strcmp(a, "--points")) {
            if (i + 1 >= argc || !cli_parse_u64(argv[i + 1], &points) || points < 2 || points > 1001)
                return cli_usage_error("plan", "--points needs a number in 2..1001");
            i++;
        } else if (!strcmp(a, "--no-verify")) no_verify = 1;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = 1;
        else if (a[0] == '-' && a[1]) return cli_usage_error("plan", "unknown option %s", a);
        else if (!go.path) go.path = a;
        else return cli_usage_error("plan", "one graph at a time (got %s and %s)", go.path, a);
    }
    if (!go.path) return cli_usage_error("plan", "missing GRAPH");
    cli_config_limits(&go, &cfg0, &cfg);   /* --set limits=..., max_memory=..., max_seconds=... */
    if (!format) format = out ? "json" : "text";
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "csv"))
        return cli_usage_error("plan", "--format must be text, json or csv, not \"%s\"", format);
    if (strcmp(format, "text") && !out) out = "-";
    po.plan_constants = go.plan_constants;
    po.progress = 1;
    char dim_text[64][CLI_DIM_TEXT];
    cli_apply_buckets(&cfg, &go, dim_text, "plan");

    bp_error err = {0};
    bp_graph *g = NULL;
    bp_plan *p = NULL;
    if (!go.engine && cfg.engine[0]) go.engine = cfg.engine;
    bp_status s = cli_load_graph(&go, &g, &err);
    if (!s) s = cli_engine_load(&go, g, &po, &err);
    if (!s) s = cli_reserve_bodies(g, &po, &err);
    if (s) { int rc = cli_fail(&err); cli_graph_free(&go, g); return rc; }
    if (sweep) {
        int rc = run_sweep(g, &po, (int)points);
        cli_graph_free(&go, g);
        return rc;
    }
    /* the plan cache */
    bp_plan_cache *cache = NULL;
    int hit = 0;
    if (cfg.cache_dir[0]) {
        s = bp_plan_cache_open(cfg.cache_dir, stderr, &cache, &err);
        if (s) { int rc = cli_fail(&err); cli_graph_free(&go, g); return rc; }
        /* the CLI verifies every plan it prints: a cached one inside the cache,
         * so a file that fails is a warning and a re-plan, not an error */
        bp_plan_cache_set_verify(cache, cfg.cache_verify || !no_verify);
    }
    s = cache ? bp_plan_cache_plan(cache, g, "", &po, &p, &hit, &err) : bp_plan_graph(g, &po, &p, &err);
    bp_plan_cache_stats cst = {0};
    if (cache) bp_plan_cache_get_stats(cache, &cst);
    bp_plan_cache_close(cache);
    if (s) { int rc = cli_fail(&err); cli_graph_free(&go, g); return rc; }
    int verified = hit && !no_verify;   /* verified by the cache */
    if (!no_verify && !verified) {
        bp_error verr = {0};
        if (bp_verify(g, p, &verr)) {
            fprintf(stderr, "bufplan: internal error: the plan failed verification:\n%s\n", verr.msg);
            bp_plan_free(p);
            cli_graph_free(&go, g);
            return CLI_FAIL;
        }
        verified = 1;
    }
    int rc = CLI_OK;
    if (out) {
        s = !strcmp(format, "csv") ? bp_plan_write_events_csv(p, g, out, &err) : bp_plan_write_json(p, g, out, &err);
        if (s) rc = cli_fail(&err);
    }
    if (!quiet && rc == CLI_OK) print_report(out && !strcmp(out, "-") ? stderr : stdout, g, p, verified, po.threads,
                                            hit ? (cst.load_seconds + cst.verify_seconds) * 1e3 : -1.0);
    if (!quiet && rc == CLI_OK && cfg.cache_dir[0])
        fprintf(out && !strcmp(out, "-") ? stderr : stdout, "  plan cache   %s (%s)\n",
                hit ? "hit" : cst.write_errors ? "miss, plan NOT saved (see the warning)" : "miss, plan saved", cfg.cache_dir);
    bp_plan_free(p);
    cli_graph_free(&go, g);
    return rc;
}
