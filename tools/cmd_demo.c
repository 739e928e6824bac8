/*
 * bufplan demo [KIND] — the main job on a built-in graph (resnet50 by
 * default): every scheduler x assigner, naive vs reused vs lower bound.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int cmd_demo(int argc, char **argv)
{
    const char *kind = "resnet50";
    double limit = 2.0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("usage: bufplan demo [KIND] [--time-limit S]\n\n"
                   "Generates a built-in graph (default resnet50; see bufplan gen --help for kinds),\n"
                   "plans it with every scheduler and assigner, verifies every plan, and prints\n"
                   "naive vs planned vs lower-bound bytes.\n");
            return CLI_OK;
        }
        if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) {
            if (!cli_parse_double(argv[++i], &limit)) return cli_usage_error("demo", "--time-limit: not a number");
        } else if (argv[i][0] == '-') {
            return cli_usage_error("demo", "unknown option %s", argv[i]);
        } else {
            kind = argv[i];
        }
    }
    bp_error err = {0};
    bp_gen_options go;
    bp_gen_options_init(&go);
    bp_graph *g = NULL;
    if (bp_gen(kind, &go, NULL, &g, &err)) return cli_fail(&err);
    printf("bufplan %s demo: graph \"%s\", %d ops, %d tensors\n\n", bp_version(), bp_graph_name(g), bp_graph_n_ops(g),
           bp_graph_n_tensors(g));
    printf("| scheduler | assigner | arena | x naive | x lower bound | lower bound | plan ms | verified |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---|\n");
    int rc = CLI_OK;
    uint64_t naive = 0, best_arena = UINT64_MAX, best_lb = 0;
    for (int sk = 0; sk < BP_SCHED_OPTIMAL; sk++) {
        for (int ak = 0; ak < BP_ASSIGN_COUNT; ak++) {
            bp_plan_options po;
            bp_plan_options_init(&po);
            po.sched = (bp_sched_kind)sk;
            po.assign = (bp_assign_kind)ak;
            po.time_limit = limit;
            bp_plan *p = NULL;
            bp_status s = bp_plan_graph(g, &po, &p, &err);
            if (s == BP_ERR_UNSUPPORTED) break; /* scheduler not in this build */
            if (s) { rc = cli_fail(&err); continue; }
            const bp_plan_stats *st = bp_plan_get_stats(p);
            bp_error verr = {0};
            bp_status v = bp_verify(g, p, &verr);
            if (v) { fprintf(stderr, "bufplan: plan %s/%s failed verification: %s\n", bp_sched_name(po.sched), bp_assign_name(po.assign), verr.msg); rc = CLI_FAIL; }
            char b1[32], b2[32];
            naive = st->naive_bytes;
            printf("| %s | %s | %s | %.3f | %.3f | %s | %.1f | %s |\n", bp_sched_name(po.sched), bp_assign_name(po.assign),
                   cli_fmt_bytes(st->arena_bytes, b1, sizeof b1), (double)st->arena_bytes / (double)(st->naive_bytes ? st->naive_bytes : 1),
                   (double)st->arena_bytes / (double)(st->lower_bound_bytes ? st->lower_bound_bytes : 1),
                   cli_fmt_bytes(st->lower_bound_bytes, b2, sizeof b2), st->plan_seconds * 1e3, v ? "NO" : "yes");
            if (st->arena_bytes < best_arena) { best_arena = st->arena_bytes; best_lb = st->lower_bound_bytes; }
            bp_plan_free(p);
        }
    }
    if (best_arena != UINT64_MAX) {
        char b1[32], b2[32], b3[32];
        printf("\nnaive %s -> planned %s (%.1fx less); lower bound of that order %s\n", cli_fmt_bytes(naive, b1, sizeof b1),
               cli_fmt_bytes(best_arena, b2, sizeof b2), (double)naive / (double)(best_arena ? best_arena : 1),
               cli_fmt_bytes(best_lb, b3, sizeof b3));
    }
    bp_graph_free(g);
    return rc;
}
