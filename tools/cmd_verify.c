/*
 * bufplan verify GRAPH PLAN.json — exit 0 when the plan is sound for the
 * graph, 1 with the reasons when it is not, 2 when a file is bad.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int cmd_verify(int argc, char **argv)
{
    cli_graph_opts go;
    cli_graph_opts_init(&go);
    const char *plan_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (cli_is_help(a)) {
            printf("usage: bufplan verify GRAPH PLAN.json [--dim SYM=N] [--shape NAME=AxB] [--op-shapes FILE] [--training]\n\n"
                   "Checks that the plan is sound for the graph: the schedule is topological, every\n"
                   "interval covers the tensor's lifetime, sizes agree, aliasing is justified, nothing\n"
                   "lies outside the arena and no two live tensors overlap.  Exit 0 sound, 1 unsound\n"
                   "(the reasons on stderr), 2 bad input.  Graph options must match the planning run.\n");
            return CLI_OK;
        }
        if ((r = cli_graph_opt(&go, argc, argv, &i, "verify"))) { if (r < 0) return CLI_BAD; continue; }
        if (a[0] == '-' && a[1]) return cli_usage_error("verify", "unknown option %s", a);
        if (!go.path) go.path = a;
        else if (!plan_path) plan_path = a;
        else return cli_usage_error("verify", "too many arguments");
    }
    if (!go.path || !plan_path) return cli_usage_error("verify", "usage: bufplan verify GRAPH PLAN.json");
    bp_error err = {0};
    bp_graph *g = NULL;
    bp_plan *p = NULL;
    bp_plan_options po;   /* --engine, else the plan's own profile: its workspaces */
    bp_plan_options_init(&po);
    if (cli_load_graph(&go, &g, &err)) return cli_fail(&err);
    if (cli_engine_load(&go, g, &po, &err)) { int rc = cli_fail(&err); cli_graph_free(&go, g); return rc; }
    if (!go.engine) {   /* the profile the plan file carries gives the graph its workspaces */
        if (bp_plan_read_engine(g, plan_path, &go.engine_obj, &err) ||
            (go.engine_obj && bp_engine_apply_workspaces(go.engine_obj, g, &err))) {
            int rc = cli_fail(&err);
            cli_graph_free(&go, g);
            return rc;
        }
    }
    if (bp_plan_read_json(g, plan_path, &p, &err)) { int rc = cli_fail(&err); cli_graph_free(&go, g); return rc; }
    bp_status s = bp_verify(g, p, &err);
    if (s == BP_OK) {
        const bp_plan_stats *st = bp_plan_get_stats(p);
        printf("%s: the plan is sound (%d ops, arena %llu bytes, lower bound %llu)\n", plan_path, bp_plan_n_steps(p),
               (unsigned long long)st->arena_bytes, (unsigned long long)st->lower_bound_bytes);
    } else {
        fprintf(stderr, "%s: the plan is NOT sound for %s:\n%s\n", plan_path, go.path, err.msg);
    }
    bp_plan_free(p);
    cli_graph_free(&go, g);
    return cli_exit_code(s);
}
