/*
 * cmd_run_shapes.c — `bufplan run GRAPH --shapes FILE`: replays a sequence
 * of shapes through the warm-up planner (bp_planner_*), so the buckets, the
 * plan cache, warm-up and the dynamic policy can be tried from the command
 * line.  FILE has one binding per line, "SYM=N SYM=N ..." (the --dim syntax,
 * separated by spaces or commas; '#' starts a comment; the word "freeze"
 * alone freezes the planner).  The whole file is read and checked first.
 * For each binding the planner picks a plan (re-planned, a memory or disk
 * hit, covered or conservative); the graph then runs once with that plan
 * and the reference kernels, at the shapes as given (bp_exec_set_shapes),
 * and one line says what happened and the memory used.  A summary of the
 * planner's statistics ends the output.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli_dyn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RS_MAX_SYMS 16
#define RS_MAX_LINES 100000

typedef struct rs_line {
    int lineno;
    int freeze;                   /* the line is "freeze" */
    int n;
    char sym[RS_MAX_SYMS][BP_SYM_NAME_MAX];
    int64_t val[RS_MAX_SYMS];
} rs_line;

/* Parses one token "SYM=N" into l; a message in why on failure. */
static bool rs_token(const char *tok, rs_line *l, char *why, size_t cap)
{
    const char *eq = strchr(tok, '=');
    if (!eq || eq == tok || (size_t)(eq - tok) >= BP_SYM_NAME_MAX) { snprintf(why, cap, "\"%s\": expected SYM=N", tok); return false; }
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (errno || end == eq + 1 || *end || v < 1) {
        snprintf(why, cap, "\"%s\": a dimension must be a whole number of at least 1", tok);
        return false;
    }
    if (l->n >= RS_MAX_SYMS) { snprintf(why, cap, "more than %d bindings on one line", RS_MAX_SYMS); return false; }
    memcpy(l->sym[l->n], tok, (size_t)(eq - tok));
    l->sym[l->n][eq - tok] = 0;
    l->val[l->n++] = v;
    return true;
}

/* Reads the whole shapes file into *out (n lines in *n). */
static int rs_read(const char *path, rs_line **out, int *n)
{
    FILE *f = !strcmp(path, "-") ? stdin : fopen(path, "r");
    if (!f) { fprintf(stderr, "bufplan: %s: cannot open: %s\n", path, strerror(errno)); return CLI_BAD; }
    rs_line *v = NULL;
    int cnt = 0, cap = 0, rc = CLI_OK, lineno = 0;
    char buf[8192], why[300];
    while (rc == CLI_OK && fgets(buf, sizeof buf, f)) {
        lineno++;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        rs_line l;
        memset(&l, 0, sizeof l);
        l.lineno = lineno;
        char *save = NULL;
        for (char *tok = strtok_r(buf, " \t,\r\n", &save); tok && rc == CLI_OK; tok = strtok_r(NULL, " \t,\r\n", &save)) {
            if (!strcmp(tok, "freeze") && !l.n) { l.freeze = 1; continue; }
            if (l.freeze || !rs_token(tok, &l, why, sizeof why)) {
                if (l.freeze) snprintf(why, sizeof why, "\"freeze\" stands alone on its line");
                fprintf(stderr, "bufplan: %s:%d: %s\n", path, lineno, why);
                rc = CLI_BAD;
            }
        }
        if (rc || (!l.n && !l.freeze)) continue;
        if (cnt >= RS_MAX_LINES) { fprintf(stderr, "bufplan: %s:%d: more than %d shapes\n", path, lineno, RS_MAX_LINES); rc = CLI_BAD; break; }
        if (cnt == cap) {
            cap = cap ? 2 * cap : 16;
            rs_line *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) { fprintf(stderr, "bufplan: out of memory\n"); rc = CLI_BAD; break; }
            v = nv;
        }
        v[cnt++] = l;
    }
    if (rc == CLI_OK && ferror(f)) { fprintf(stderr, "bufplan: %s: read error\n", path); rc = CLI_BAD; }
    if (rc == CLI_OK && !cnt) { fprintf(stderr, "bufplan: %s: no shapes (one binding per line: SYM=N SYM=N ...)\n", path); rc = CLI_BAD; }
    if (f != stdin) fclose(f);
    if (rc) { free(v); return rc; }
    *out = v;
    *n = cnt;
    return CLI_OK;
}

/* True when the file starts (after blanks) with '{': a JSON graph. */
static bool rs_is_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    int c = EOF;
    if (f) {
        do c = fgetc(f); while (c == ' ' || c == '\t' || c == '\r' || c == '\n');
        fclose(f);
    }
    return c == '{';
}

/* The warm-up planner for go's graph: ONNX models are re-imported per shape
 * (shape inference derives every dimension), JSON graphs copied and bound. */
static bp_status rs_planner(const cli_graph_opts *go, const bp_config *cfg, bp_graph **g, bp_planner **pl, bp_error *err)
{
    cli_graph_opts o = *go;
    o.allow_dynamic = true;
    bp_status s = cli_load_graph(&o, g, err);
    if (s || rs_is_json(go->path)) return s ? s : bp_planner_new(*g, cfg, pl, err);
    char names[64][BP_SYM_NAME_MAX];
    const char *dn[64];
    int64_t dv[64];
    for (int i = 0; i < go->n_dims; i++) {   /* well formed: cli_load_graph read them */
        const char *eq = strchr(go->dims[i], '=');
        snprintf(names[i], sizeof names[i], "%.*s", (int)(eq - go->dims[i]), go->dims[i]);
        dn[i] = names[i];
        dv[i] = strtoll(eq + 1, NULL, 10);
    }
    bp_onnx_options oo;
    bp_onnx_options_init(&oo);
    oo.n_dims = go->n_dims;
    oo.dim_names = dn;
    oo.dim_values = dv;
    oo.unknown_op_dynamic = go->unknown_op && !strcmp(go->unknown_op, "dynamic");
    oo.plan_constants = go->plan_constants;
    oo.limits = go->have_lim ? &go->lim : NULL;
    bp_onnx_op_shapes *ops = NULL;
    s = go->op_shapes ? bp_onnx_op_shapes_read(go->op_shapes, NULL, &ops, err) : BP_OK;
    oo.op_shapes = ops;
    if (!s) s = bp_planner_new_onnx(go->path, &oo, cfg, pl, err);
    bp_onnx_op_shapes_free(ops);
    return s;
}

/* Runs res's plan once at the shapes as given; the activations peak in *used. */
static bp_status rs_execute(const bp_dyn_result *res, const cli_replay_opts *ro, uint64_t *used, bp_error *err)
{
    bp_exec_options eo;
    bp_exec_options_init(&eo);
    eo.threads = ro->threads;
    bp_exec *ex = NULL;
    bp_status s = bp_exec_new(res->graph, res->plan, &eo, &ex, err);
    if (!s) s = bp_exec_set_shapes(ex, res->actual, err);
    bp_digest_options dopt = {ro->kernel_us, -1};
    if (!s) {
        bp_exec_set_kernel(ex, !strcmp(ro->kernel, "digest") ? bp_digest_kernel : bp_exec_noop_kernel, &dopt);
        s = bp_digest_fill_inputs(ex, ro->seed, err);
    }
    bp_exec_run_stats st;
    if (!s) s = bp_exec_run(ex, &st, err);
    if (!s) *used = st.peak_bytes;
    bp_exec_free(ex);
    return s;
}

/* One line of the replay: what the planner did and the memory used. */
static void rs_print(int k, const char *given, const bp_dyn_result *res, uint64_t used)
{
    char b1[32], b2[32], b3[32];
    printf("shape %d: %s", k, given);
    if (strcmp(given, res->signature)) printf(" (bucket %s)", res->signature);
    printf(": %s", bp_dyn_how_name(res->how));
    if (res->how == BP_DYN_RAN_CONSERVATIVE)
        printf(", arena %s + dynamic tensors from the pool (peak %s)", cli_fmt_bytes(res->report.arena_bytes, b1, sizeof b1),
               cli_fmt_bytes(res->report.dynamic_peak_bytes, b2, sizeof b2));
    else
        printf(", arena %s", cli_fmt_bytes(res->report.arena_bytes, b1, sizeof b1));
    printf("; memory used %s\n", cli_fmt_bytes(used, b3, sizeof b3));
}

/* The header: the graph, its symbols, the buckets and the cache. */
static void rs_header(const bp_planner *pl, const bp_config *cfg, const rs_line *lines, int n_lines)
{
    const char *syms[64];
    int n = bp_planner_symbols(pl, syms, 64), n_shapes = 0;
    for (int k = 0; k < n_lines; k++) n_shapes += !lines[k].freeze;
    printf("replay %s: %d shape%s; symbols", bp_graph_name(bp_planner_graph(pl)), n_shapes, n_shapes == 1 ? "" : "s");
    for (int i = 0; i < n && i < 64; i++) printf(" %s", syms[i]);
    printf("; buckets");
    if (!cfg->n_buckets) printf(" none");
    for (int b = 0; b < cfg->n_buckets; b++) {
        printf(" %s=", cfg->buckets[b].sym);
        for (int j = 0; j < cfg->buckets[b].n; j++) printf("%s%lld", j ? "," : "", (long long)cfg->buckets[b].bound[j]);
    }
    printf("; cache %s; policy %s\n", cfg->cache_dir[0] ? cfg->cache_dir : "none", bp_dyn_policy_name(cfg->dynamic_policy));
}

static void rs_summary(const bp_planner *pl)
{
    bp_planner_stats st;
    bp_planner_get_stats(pl, &st);
    printf("planner: %" PRIu64 " runs: %" PRIu64 " replanned, %" PRIu64 " memory hits, %" PRIu64 " disk hits, %" PRIu64
           " conservative, %" PRIu64 " covered; %d plans kept; planning %.3f ms%s\n",
           st.runs, st.replans, st.memory_hits, st.disk_hits, st.conservative_runs, st.covered_runs, (int)st.n_plans,
           st.plan_seconds * 1e3, bp_planner_frozen(pl) ? "; frozen" : "");
}

int cli_run_shapes(const cli_graph_opts *go, const bp_config *cfg, const cli_replay_opts *ro)
{
    rs_line *lines = NULL;
    int n_lines = 0;
    int rc = rs_read(ro->file, &lines, &n_lines);
    if (rc) return rc;
    bp_error e = {0};
    bp_graph *g = NULL;
    bp_planner *pl = NULL;
    bp_status s = rs_planner(go, cfg, &g, &pl, &e);
    if (!s) rs_header(pl, cfg, lines, n_lines);
    int shown = 0;
    for (int k = 0; k < n_lines && !s; k++) {
        const rs_line *l = &lines[k];
        if (l->freeze) {
            bp_planner_freeze(pl);
            printf("freeze: from here no new shape is planned (dynamic_policy %s)\n", bp_dyn_policy_name(cfg->dynamic_policy));
            continue;
        }
        const char *syms[RS_MAX_SYMS];
        for (int i = 0; i < l->n; i++) syms[i] = l->sym[i];
        char given[BP_SIG_MAX];
        bp_dyn_result res;
        uint64_t used = 0;
        s = bp_signature(l->n, syms, l->val, given, &e);
        if (!s) s = bp_planner_get(pl, l->n, syms, l->val, &res, &e);
        if (!s) s = rs_execute(&res, ro, &used, &e);
        if (s) {
            fprintf(stderr, "bufplan: %s:%d: %s\n", ro->file, l->lineno, e.msg);
            rc = cli_exit_code(s);
            break;
        }
        rs_print(++shown, given, &res, used);
    }
    if (!s) rs_summary(pl);
    else if (!rc) rc = cli_fail(&e);
    bp_planner_free(pl);
    bp_graph_free(g);
    free(lines);
    return rc;
}
