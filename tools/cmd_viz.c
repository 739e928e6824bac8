/*
 * bufplan viz GRAPH [plan options] [--compare [plan options]] [--history FILE]
 *                   -o plan.html|plan.svg
 *
 * Plans GRAPH (or reads a plan with --plan) and draws its memory timeline.
 * Options after --compare describe a second plan: it starts from the first
 * plan's options and changes only what follows (-s, -a, --alpha, ..., --plan,
 * --label), so `--compare -s given` shows what the scheduler changed.  The
 * same words may be given as one argument: --compare "-s given -a color".
 * Every other option (-o, --history, graph options) applies to the page.
 */
#include "cli.h"
#include "bufplan_viz.h"

#include <stdio.h>
#include <string.h>

static void viz_usage(FILE *f)
{
    fprintf(f, "usage: bufplan viz GRAPH [plan options] [--compare [plan options]] [--history FILE] -o FILE\n\n"
               "Draws the memory timeline of a plan of GRAPH: x = step, y = arena offset, one\n"
               "rectangle per planned tensor, the live-bytes curve with the lower bound and the\n"
               "arena, the peak step and the tensors live at the peak.\n\n"
               "  -o FILE.html           one self-contained page (zoom, pan, hover, second plan,\n"
               "                         executor history); \"-\" = stdout\n"
               "  -o FILE.svg            a static picture of the timeline\n"
               "  --format html|svg      instead of guessing from the file name\n"
               "  --plan PLAN.json       draw this plan instead of planning\n"
               "  --compare [OPTS]       a second plan side by side (HTML): it takes the first\n"
               "                         plan's options, changed by the plan options that follow\n"
               "                         (-s -a --alpha --beta --alignment --no-alias --plan\n"
               "                         --label ...), e.g. --compare -s given -a color, or\n"
               "                         as one word: --compare \"-s given -a color\"\n"
               "  --label TEXT           the plan's name on the page (after --compare: the\n"
               "                         second plan's)\n"
               "  --history FILE         an executor history (CSV or JSON, docs/VIZ.md)\n"
               "  --color op|buffer      initial coloring: by op type (default) or by buffer\n"
               "  --title TEXT           page title (default: the graph's name)\n"
               "  --width N --height N   SVG size in pixels (default 1000 x 420 timeline)\n\n"
               "plan options:\n%s%s\ngraph options:\n%s",
            cli_plan_opts_help, cli_threads_opt_help, cli_graph_opts_help);
}

typedef struct viz_side {
    bp_plan_options po;
    const char *plan_file, *label;
} viz_side;

/* Parses one option of a plan side at words[*i] (plan options, --plan,
 * --label); 1 = consumed, 0 = not one, -1 = bad value (printed). */
static int viz_side_opt(viz_side *s, int n, char **words, int *i)
{
    const char *a = words[*i];
    if (!strcmp(a, "--plan") || !strcmp(a, "--label")) {
        if (*i + 1 >= n) { cli_usage_error("viz", "%s needs a value", a); return -1; }
        if (a[2] == 'p') s->plan_file = words[++*i]; else s->label = words[++*i];
        return 1;
    }
    return cli_plan_opt(&s->po, n, words, i, "viz");
}

static bool viz_ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    if (n < m) return false;
    for (size_t i = 0; i < m; i++) {
        char c = s[n - m + i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != suf[i]) return false;
    }
    return true;
}

static bp_status viz_make_plan(bp_graph *g, const viz_side *s, bp_plan **p, bp_error *err)
{
    if (s->plan_file) return bp_plan_read_json(g, s->plan_file, p, err);
    bp_status st = cli_reserve_bodies(g, &s->po, err);
    return st ? st : bp_plan_graph(g, &s->po, p, err);
}

int cmd_viz(int argc, char **argv)
{
    viz_side one, two;
    memset(&one, 0, sizeof one);
    bp_plan_options_init(&one.po);
    cli_graph_opts go;
    cli_graph_opts_init(&go);
    bp_viz_options vo;
    bp_viz_options_init(&vo);
    const char *out = NULL, *format = NULL;
    bool compare = false;
    /* words that describe the second plan, replayed over a copy of the first */
    char *cw[256];
    int ncw = 0;
    char split[2048];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (cli_is_help(a)) { viz_usage(stdout); return CLI_OK; }
        if (!strcmp(a, "--compare")) {
            if (compare) return cli_usage_error("viz", "--compare given twice");
            compare = true;
            /* the one-word form: --compare "-s given -a color" */
            if (i + 1 < argc && argv[i + 1][0] == '-' && strchr(argv[i + 1], ' ')) {
                const char *w = argv[++i];
                size_t len = strlen(w);
                if (len >= sizeof split) return cli_usage_error("viz", "--compare: the option list is too long");
                memcpy(split, w, len + 1);
                for (char *t = strtok(split, " \t"); t; t = strtok(NULL, " \t")) {
                    if (ncw >= 256) return cli_usage_error("viz", "--compare: too many options");
                    cw[ncw++] = t;
                }
                for (int j = 0; j < ncw; j++) {
                    viz_side scratch = one;
                    int q = viz_side_opt(&scratch, ncw, cw, &j);
                    if (q < 0) return CLI_BAD;
                    if (!q) return cli_usage_error("viz", "--compare \"%s\": %s is not a plan option", w, cw[j]);
                }
            }
            continue;
        }
        if (compare) {
            viz_side scratch = one;
            int start = i;
            if ((r = viz_side_opt(&scratch, argc, argv, &i))) {
                if (r < 0) return CLI_BAD;
                for (int j = start; j <= i; j++) {
                    if (ncw >= 256) return cli_usage_error("viz", "--compare: too many options");
                    cw[ncw++] = argv[j];
                }
                continue;
            }
        } else if ((r = viz_side_opt(&one, argc, argv, &i))) {
            if (r < 0) return CLI_BAD;
            continue;
        }
        if ((r = cli_graph_opt(&go, argc, argv, &i, "viz"))) {
            if (r < 0) return CLI_BAD;
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--format") || !strcmp(a, "--history") || !strcmp(a, "--color") ||
            !strcmp(a, "--title") || !strcmp(a, "--width") || !strcmp(a, "--height")) {
            if (i + 1 >= argc) return cli_usage_error("viz", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "-o")) out = v;
            else if (!strcmp(a, "--format")) format = v;
            else if (!strcmp(a, "--history")) vo.history_path = v;
            else if (!strcmp(a, "--title")) vo.title = v;
            else if (!strcmp(a, "--color")) {
                if (!strcmp(v, "op")) vo.color = BP_VIZ_COLOR_OP;
                else if (!strcmp(v, "buffer")) vo.color = BP_VIZ_COLOR_BUFFER;
                else return cli_usage_error("viz", "--color must be op or buffer, not \"%s\"", v);
            } else {
                uint64_t n;
                if (!cli_parse_u64(v, &n) || n < 100 || n > 100000) return cli_usage_error("viz", "%s: \"%s\" is not in 100..100000", a, v);
                if (a[2] == 'w') vo.width = (int)n; else vo.height = (int)n;
            }
        } else if (a[0] == '-' && a[1]) return cli_usage_error("viz", "unknown option %s", a);
        else if (!go.path) go.path = a;
        else return cli_usage_error("viz", "one graph at a time (got %s and %s)", go.path, a);
    }
    if (!go.path) return cli_usage_error("viz", "missing GRAPH");
    if (!out) return cli_usage_error("viz", "missing -o FILE.html or -o FILE.svg");
    if (!format) format = viz_ends_with(out, ".svg") ? "svg" : "html";
    if (strcmp(format, "html") && strcmp(format, "svg")) return cli_usage_error("viz", "--format must be html or svg, not \"%s\"", format);
    if (compare && !strcmp(format, "svg")) return cli_usage_error("viz", "--compare needs an HTML page (an SVG shows one plan)");
    if (vo.history_path && !strcmp(format, "svg")) return cli_usage_error("viz", "--history needs an HTML page");

    /* the second side: the first's options, then the words after --compare */
    two = one;
    two.label = NULL;
    two.plan_file = NULL;
    for (int j = 0; j < ncw; j++)
        if (viz_side_opt(&two, ncw, cw, &j) <= 0) return CLI_BAD; /* checked while parsing */

    one.po.plan_constants = two.po.plan_constants = go.plan_constants;
    one.po.progress = two.po.progress = 1;
    vo.progress = 1;
    vo.label = one.label;
    vo.compare_label = two.label;

    bp_error err = {0};
    bp_graph *g = NULL;
    bp_plan *p = NULL, *q = NULL;
    bp_status s = cli_load_graph(&go, &g, &err);
    if (!s) s = cli_engine_load(&go, g, &one.po, &err);
    if (!s) s = cli_engine_load(&go, g, &two.po, &err);
    if (s) { int rc = cli_fail(&err); cli_graph_free(&go, g); return rc; }
    s = viz_make_plan(g, &one, &p, &err);
    if (!s) s = cli_check_planned(g, bp_plan_get_stats(p), go.path, &err);   /* no empty chart */
    if (!s && compare) s = viz_make_plan(g, &two, &q, &err);
    if (!s) {
        vo.compare = q;
        s = !strcmp(format, "svg") ? bp_viz_write_svg(g, p, &vo, out, &err) : bp_viz_write_html(g, p, &vo, out, &err);
    }
    int rc = s ? cli_fail(&err) : CLI_OK;
    if (!s && strcmp(out, "-")) {
        const bp_plan_stats *st = bp_plan_get_stats(p);
        char b1[32], b2[32];
        fprintf(stderr, "wrote %s: %s + %s, arena %s, lower bound %s\n", out, bp_sched_name(bp_plan_sched(p)),
                bp_assign_name(bp_plan_assign(p)), cli_fmt_bytes(st->arena_bytes, b1, sizeof b1),
                cli_fmt_bytes(st->lower_bound_bytes, b2, sizeof b2));
    }
    bp_plan_free(q);
    bp_plan_free(p);
    cli_graph_free(&go, g);
    return rc;
}
