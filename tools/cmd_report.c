/*
 * bufplan report GRAPH [--format text|csv|json] [-o FILE] [--plot report.svg]
 *
 * Every scheduler the build has x every assigner on one graph: arena, lower
 * bound, ratios to the bound and to naive, plan time (bp_report_run).
 */
#include "cli.h"
#include "bufplan_viz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report_usage(FILE *f)
{
    fprintf(f, "usage: bufplan report GRAPH [--format text|csv|json] [-o FILE] [--plot FILE.svg]\n\n"
               "Plans GRAPH with every scheduler this build has and every assigner, verifies\n"
               "each plan, and prints arena, lower bound, arena / lower bound, arena / naive\n"
               "and plan time for each pair.  Schedulers not in this build are listed.\n\n"
               "  --format text|csv|json output format (default text)\n"
               "  -o FILE                write the table there (default: standard output)\n"
               "  --plot FILE.svg        also draw the table as a bar chart\n"
               "  --time-limit S         seconds for each search (default 2 here)\n\n"
               "plan options (-s and -a are not: the report runs them all):\n%s%s\ngraph options:\n%s",
            cli_plan_opts_help, cli_threads_opt_help, cli_graph_opts_help);
}

int cmd_report(int argc, char **argv)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.time_limit = 2;
    cli_graph_opts go;
    cli_graph_opts_init(&go);
    const char *out = "-", *format = "text", *plot = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (cli_is_help(a)) { report_usage(stdout); return CLI_OK; }
        if (!strcmp(a, "-s") || !strcmp(a, "--sched") || !strcmp(a, "-a") || !strcmp(a, "--assign"))
            return cli_usage_error("report", "%s: the report runs every scheduler and assigner (use bufplan plan for one)", a);
        if ((r = cli_plan_opt(&po, argc, argv, &i, "report")) || (r = cli_graph_opt(&go, argc, argv, &i, "report"))) {
            if (r < 0) return CLI_BAD;
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--format") || !strcmp(a, "--plot")) {
            if (i + 1 >= argc) return cli_usage_error("report", "%s needs a value", a);
            const char *v = argv[++i];
            if (a[1] == 'o') out = v; else if (a[2] == 'f') format = v; else plot = v;
        } else if (a[0] == '-' && a[1]) return cli_usage_error("report", "unknown option %s", a);
        else if (!go.path) go.path = a;
        else return cli_usage_error("report", "one graph at a time (got %s and %s)", go.path, a);
    }
    if (!go.path) return cli_usage_error("report", "missing GRAPH");
    if (strcmp(format, "text") && strcmp(format, "csv") && strcmp(format, "json"))
        return cli_usage_error("report", "--format must be text, csv or json, not \"%s\"", format);
    po.plan_constants = go.plan_constants;
    po.progress = 1;

    bp_error err = {0};
    bp_graph *g = NULL;
    bp_status s = cli_load_graph(&go, &g, &err);
    if (!s) s = cli_engine_load(&go, g, &po, &err);
    if (s) { int rc = cli_fail(&err); cli_graph_free(&go, g); return rc; }
    bp_report *rep = calloc(1, sizeof *rep);
    if (!rep) { cli_graph_free(&go, g); fprintf(stderr, "bufplan: out of memory\n"); return CLI_BAD; }
    s = bp_report_run(g, &po, rep, &err);
    if (!s && rep->have_counts) {   /* no table of zeros */
        bp_plan_stats st = {0};
        st.n_planned = rep->n_planned; st.n_dynamic = rep->n_dynamic; st.n_inputs = rep->n_inputs; st.n_weights = rep->n_weights;
        s = cli_check_planned(g, &st, go.path, &err);
    }
    if (!s) s = bp_report_write(rep, format, out, &err);
    if (!s && plot) s = bp_report_write_svg(rep, plot, &err);
    int rc = s ? cli_fail(&err) : CLI_OK;
    /* a plan that fails verification is a bug: say so in the exit code */
    for (int i = 0; !rc && i < rep->n_rows; i++)
        if (rep->rows[i].status == BP_ERR_VERIFY) {
            fprintf(stderr, "bufplan: %s + %s: the plan failed verification: %s\n", bp_sched_name(rep->rows[i].sched),
                    bp_assign_name(rep->rows[i].assign), rep->rows[i].error);
            rc = CLI_FAIL;
        }
    free(rep);
    cli_graph_free(&go, g);
    return rc;
}
