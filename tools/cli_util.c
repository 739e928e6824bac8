/*
 * cli_util.c — what every subcommand shares: exit codes, number parsing,
 * the graph-loading options (--dim, --shape, --training, ONNX flags) and the
 * planning options (-s, -a, --alpha, ...).
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

int cli_exit_code(bp_status s)
{
    switch (s) {
    case BP_OK: return CLI_OK;
    case BP_ERR_BUDGET:
    case BP_ERR_VERIFY: return CLI_FAIL;
    default: return CLI_BAD;
    }
}

int cli_fail(const bp_error *err)
{
    fprintf(stderr, "bufplan: %s\n", err->msg[0] ? err->msg : bp_status_str(err->status));
    return cli_exit_code(err->status);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bufplan %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see bufplan %s --help)\n", cmd);
    va_end(ap);
    return CLI_BAD;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-') return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

bool cli_parse_double(const char *s, double *out)
{
    if (!s || !*s) return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

bool cli_parse_bytes(const char *s, uint64_t *out) { return bp_parse_bytes(s, out); }

const char cli_graph_opts_help[] =
    "  --dim SYM=N            bind a symbolic dimension, N >= 1 (repeatable)\n"
    "  --shape NAME=AxBxC     set an input's shape, every dimension >= 1 (repeatable)\n"
    "  --training             append a backward pass (gradients of every op)\n"
    "  --unknown-op error|dynamic  ONNX: unknown operators are an error (default)\n"
    "                         or make their outputs dynamic\n"
    "  --op-shapes FILE       ONNX: output shapes of custom ops as formulas (a JSON\n"
    "                         file, docs/FORMATS.md \"Op shapes\")\n"
    "  --plan-constants       ONNX: plan Constant outputs like activations\n"
    "  --allow-dynamic        plan tensors with unbound symbolic dimensions as dynamic\n"
    "                         (outside the arena) instead of refusing the graph\n"
    "  --limit KEY=N          a resource limit for untrusted input (repeatable):\n"
    "                         max_tensors max_ops max_name_len max_rank max_json_depth\n"
    "                         max_proto_depth max_tensor_bytes max_total_bytes\n"
    "                         max_file_bytes max_run_bytes (docs/CLI.md)\n"
    "  --max-memory BYTES     a heap cap: every allocation for the graph and what is\n"
    "                         derived from it past BYTES fails as \"out of memory\"\n"
    "  --max-seconds S        end the whole command after S seconds (exit 2)\n"
    "  --engine NAME|FILE     plan for an engine's kernels: default, strict, ort-cpu\n"
    "                         or a profile file (docs/FORMATS.md \"Engine profiles\")\n";

const char cli_plan_opts_help[] =
    "  -s, --sched S          scheduler: given kahn dfs list lpmf seed best optimal\n"
    "  -a, --assign A         assigner: naive color bestfit search (default bestfit)\n"
    "  --alpha A --beta B     seed scheduler weights (default 0.7 / 0.3)\n"
    "  --budget BYTES         memory budget (suffixes K M G); exit 1 if it cannot fit\n"
    "  --fallback F           over the budget: recompute,offload (default), recompute,\n"
    "                         offload or none (docs/FALLBACK.md)\n"
    "  --host-bandwidth B     bytes/s of an offload or prefetch (default 16e9 = 16 GB/s)\n"
    "  --alignment N          offset alignment, a power of two (default 256)\n"
    "  --time-limit S         seconds for searches (default 10)\n"
    "  --seed N               seed for randomised searches (default 1)\n"
    "  --no-alias             no views, no in-place reuse\n"
    "  --plan-inputs          place graph inputs in the arena too\n"
    "  --concat-inplace       Concat inputs written into their slice of the output\n";

const char cli_threads_opt_help[] =
    "  --threads N            workers for the makespan estimate\n";

/* Returns the option's value (argv[*i + 1]) and advances *i, or NULL after
 * printing a usage error. */
static const char *opt_value(int argc, char **argv, int *i, const char *cmd)
{
    if (*i + 1 >= argc) { cli_usage_error(cmd, "%s needs a value", argv[*i]); return NULL; }
    return argv[++*i];
}


/* The CLI runs one command per process, so the heap cap and the deadline
 * are the process's: a counting allocator handed to the graph readers
 * (everything derived from the graph uses the graph's allocator) and a
 * timer whose signal ends the process with a message. */
typedef struct cli_heap { size_t used, cap; } cli_heap;
static cli_heap heap_cap;

static void *cap_alloc(void *ctx, size_t n)
{
    cli_heap *h = ctx;
    if (n > h->cap - h->used) return NULL;
    void *p = malloc(n ? n : 1);
    if (p) h->used += n;
    return p;
}

static void *cap_realloc(void *ctx, void *p, size_t old, size_t n)
{
    cli_heap *h = ctx;
    if (n > old && n - old > h->cap - h->used) return NULL;
    void *q = realloc(p, n ? n : 1);
    if (q) h->used = h->used - old + n;
    return q;
}

static void cap_free(void *ctx, void *p, size_t n)
{
    cli_heap *h = ctx;
    if (!p) return;
    free(p);
    h->used -= n <= h->used ? n : h->used;
}

static const bp_allocator cap_allocator = {cap_alloc, cap_realloc, cap_free, &heap_cap};

static void on_deadline(int sig)
{
    static const char msg[] = "bufplan: the time limit (--max-seconds) was reached\n";
    (void)sig;
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(CLI_BAD);
}

static void start_deadline(double s)
{
    struct itimerval it = {{0, 0}, {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)}};
    if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0) it.it_value.tv_usec = 1;
    signal(SIGALRM, on_deadline);
    setitimer(ITIMER_REAL, &it, NULL);
}

uint64_t cli_run_bytes(const cli_graph_opts *go)
{
    uint64_t cap = go->max_run_bytes;
    if (!cap) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        cap = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    }
    if (go->max_memory && (!cap || go->max_memory < cap)) cap = go->max_memory;
    return cap;
}

void cli_graph_opts_init(cli_graph_opts *go)
{
    memset(go, 0, sizeof *go);
    bp_limits_init(&go->lim);
}

static int limit_opt(cli_graph_opts *go, const char *v, const char *cmd)
{
    static const char *const keys[] = {"max_tensors", "max_ops", "max_name_len", "max_rank", "max_json_depth",
                                       "max_proto_depth", "max_tensor_bytes", "max_total_bytes", "max_file_bytes"};
    const char *eq = strchr(v, '=');
    uint64_t n;
    if (!eq || !cli_parse_bytes(eq + 1, &n) || !n) {
        cli_usage_error(cmd, "--limit %s: expected KEY=N with N > 0", v);
        return -1;
    }
    size_t kl = (size_t)(eq - v), k = 0;
    if (kl == 13 && !strncmp(v, "max_run_bytes", kl)) { go->max_run_bytes = n; return 1; }   /* the CLI's own */
    while (k < sizeof keys / sizeof keys[0] && (strlen(keys[k]) != kl || strncmp(v, keys[k], kl))) k++;
    bp_limits *l = &go->lim;
    uint64_t *u64[] = {&l->max_tensors, &l->max_ops, &l->max_name_len, NULL, NULL, NULL, &l->max_tensor_bytes,
                       &l->max_total_bytes, &l->max_file_bytes};
    uint32_t *u32[] = {NULL, NULL, NULL, &l->max_rank, &l->max_json_depth, &l->max_proto_depth, NULL, NULL, NULL};
    if (k == sizeof keys / sizeof keys[0]) {
        cli_usage_error(cmd, "--limit %.*s: unknown limit (max_tensors max_ops max_name_len max_rank max_json_depth "
                             "max_proto_depth max_tensor_bytes max_total_bytes max_file_bytes max_run_bytes)", (int)kl, v);
        return -1;
    }
    if (u32[k] && n > (k == 3 ? 255u : UINT32_MAX)) { cli_usage_error(cmd, "--limit %s: too large", v); return -1; }
    if (u64[k]) *u64[k] = n; else *u32[k] = (uint32_t)n;
    go->have_lim = true;
    return 1;
}

/* --dim SYM=N, --shape NAME=AxBxC: every size a whole number >= 1 (a
 * dimension of 0 or below plans nothing or wraps).  False after printing. */
static bool dims_positive(const char *opt, const char *v, const char *cmd)
{
    const char *p = strrchr(v, '=') + 1;
    for (int k = 0; *p; k++) {
        char *end;
        errno = 0;
        long long n = strtoll(p, &end, 10);
        if (end != p && !errno && n < 1) {
            if (opt[2] == 'd')
                cli_usage_error(cmd, "%s %s: a dimension must be a whole number of at least 1, not %lld", opt, v, n);
            else
                cli_usage_error(cmd, "%s %s: dimension %d is %lld; every dimension must be a whole number of at least 1", opt, v, k, n);
            return false;
        }
        if (end == p || !*end) break;   /* malformed values are reported when the graph is loaded */
        p = end + 1;
    }
    return true;
}

int cli_graph_opt(cli_graph_opts *go, int argc, char **argv, int *i, const char *cmd)
{
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--limit")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        return limit_opt(go, v, cmd);
    }
    if (!strcmp(a, "--allow-dynamic")) { go->allow_dynamic = true; return 1; }
    if (!strcmp(a, "--engine")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        go->engine = v;
        return 1;
    }
    if (!strcmp(a, "--max-memory")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!cli_parse_bytes(v, &go->max_memory) || !go->max_memory) { cli_usage_error(cmd, "--max-memory: \"%s\" is not a byte count", v); return -1; }
        return 1;
    }
    if (!strcmp(a, "--max-seconds")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        char *end;
        double s = strtod(v, &end);
        if (*end || !(s > 0) || s > 1e6) { cli_usage_error(cmd, "--max-seconds: \"%s\" is not a number of seconds in (0, 1e6]", v); return -1; }
        go->max_seconds = s;
        return 1;
    }
    if (!strcmp(a, "--dim") || !strcmp(a, "--shape")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!strchr(v, '=')) { cli_usage_error(cmd, "%s %s: expected NAME=VALUE", a, v); return -1; }
        if (!dims_positive(a, v, cmd)) return -1;
        int *n = a[2] == 'd' ? &go->n_dims : &go->n_shapes;
        const char **arr = a[2] == 'd' ? go->dims : go->shapes;
        if (*n >= 64) { cli_usage_error(cmd, "too many %s options (64 at most)", a); return -1; }
        arr[(*n)++] = v;
        return 1;
    }
    if (!strcmp(a, "--op-shapes")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        go->op_shapes = v;
        return 1;
    }
    if (!strcmp(a, "--training")) { go->training = true; return 1; }
    if (!strcmp(a, "--plan-constants")) { go->plan_constants = true; return 1; }
    if (!strcmp(a, "--unknown-op")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (strcmp(v, "error") && strcmp(v, "dynamic")) { cli_usage_error(cmd, "--unknown-op must be error or dynamic, not \"%s\"", v); return -1; }
        go->unknown_op = v;
        return 1;
    }
    return 0;
}

int cli_plan_opt(bp_plan_options *po, int argc, char **argv, int *i, const char *cmd)
{
    const char *a = argv[*i], *v;
    if (!strcmp(a, "-s") || !strcmp(a, "--sched")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (bp_sched_parse(v, &po->sched)) { cli_usage_error(cmd, "unknown scheduler \"%s\"", v); return -1; }
        return 1;
    }
    if (!strcmp(a, "-a") || !strcmp(a, "--assign")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (bp_assign_parse(v, &po->assign)) { cli_usage_error(cmd, "unknown assigner \"%s\"", v); return -1; }
        return 1;
    }
    if (!strcmp(a, "--alpha") || !strcmp(a, "--beta") || !strcmp(a, "--time-limit")) {
        double d;
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!cli_parse_double(v, &d) || d < 0) { cli_usage_error(cmd, "%s: \"%s\" is not a non-negative number", a, v); return -1; }
        if (a[2] == 'a') po->alpha = d; else if (a[2] == 'b') po->beta = d; else po->time_limit = d;
        return 1;
    }
    if (!strcmp(a, "--budget")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!cli_parse_bytes(v, &po->budget)) { cli_usage_error(cmd, "--budget: \"%s\" is not a byte count", v); return -1; }
        if (!po->budget) { cli_usage_error(cmd, "--budget: 0 bytes is no budget (give a positive byte count)"); return -1; }
        return 1;
    }
    if (!strcmp(a, "--fallback")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!bp_fallback_parse(v, &po->fallback)) {
            cli_usage_error(cmd, "--fallback: \"%s\" is not recompute,offload, recompute, offload or none", v);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--host-bandwidth")) {
        uint64_t bw;
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!cli_parse_bytes(v, &bw) || !bw) { cli_usage_error(cmd, "--host-bandwidth: \"%s\" is not a positive number of bytes per second", v); return -1; }
        po->host_bandwidth = (double)bw;
        return 1;
    }
    if (!strcmp(a, "--alignment")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!cli_parse_u64(v, &po->alignment) || !po->alignment || (po->alignment & (po->alignment - 1))) {
            cli_usage_error(cmd, "--alignment: \"%s\" is not a power of two", v);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--seed")) {
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!cli_parse_u64(v, &po->seed)) { cli_usage_error(cmd, "--seed: \"%s\" is not a number", v); return -1; }
        return 1;
    }
    if (!strcmp(a, "--threads")) {
        uint64_t n;
        if (!(v = opt_value(argc, argv, i, cmd))) return -1;
        if (!cli_parse_u64(v, &n) || n < 1 || n > 1024) { cli_usage_error(cmd, "--threads: \"%s\" is not in 1..1024", v); return -1; }
        po->threads = (int)n;
        return 1;
    }
    if (!strcmp(a, "--no-alias")) { po->no_alias = 1; return 1; }
    if (!strcmp(a, "--plan-inputs")) { po->plan_inputs = 1; return 1; }
    if (!strcmp(a, "--concat-inplace")) { po->concat_inplace = 1; return 1; }
    return 0;
}

/* Parses "NAME=AxBxC" into name and dims; returns the rank or -1. */
static int parse_shape(const char *spec, char *name, size_t name_cap, int64_t *dims, int max_rank)
{
    const char *eq = strrchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= name_cap) return -1;
    memcpy(name, spec, (size_t)(eq - spec));
    name[eq - spec] = 0;
    int rank = 0;
    const char *p = eq + 1;
    if (!*p) return 0;
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v < 0 || rank >= max_rank) return -1;
        dims[rank++] = v;
        if (*end == 0) break;
        if (*end != 'x' && *end != 'X' && *end != ',') return -1;
        p = end + 1;
    }
    return rank;
}

static bp_status bad_opt(bp_error *err, const char *opt, const char *val, const char *why)
{
    snprintf(err->msg, sizeof err->msg, "%s %s: %s", opt, val, why);
    err->status = BP_ERR_USAGE;
    return BP_ERR_USAGE;
}

static bool is_json_text(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) i++;
    return i == len || buf[i] == '{';
}

/* Peeks at a regular file to tell JSON from ONNX; other files (pipes,
 * "-" for stdin) are read whole into *data so nothing is consumed twice. */
static bool is_json_file(const char *path, char **data, size_t *len)
{
    struct stat sb;
    *data = NULL;
    *len = 0;
    if (strcmp(path, "-") != 0 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
        FILE *f = fopen(path, "rb");
        if (!f) return true; /* let the JSON reader report the error */
        char buf[64];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        return is_json_text(buf, n);
    }
    if (strcmp(path, "-") != 0 && stat(path, &sb) != 0) return true; /* missing: the reader reports it */
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return true;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n == cap) { char *nb = realloc(b, cap * 2); if (!nb) { free(b); b = NULL; break; } b = nb; cap *= 2; }
        size_t r = fread(b + n, 1, cap - n, f);
        if (!r) break;
        n += r;
    }
    if (f != stdin) fclose(f);
    *data = b;
    *len = b ? n : 0;
    return b ? is_json_text(b, n) : true;
}

enum { MAX_LISTED = 16 };

/* The named symbolic dimensions still unbound (the model's own, which --dim or
 * --shape can bind; "?..." symbols stand for values shape inference could not
 * derive, which no flag binds): the first MAX_LISTED names into names[]
 * (*n_names of them, *more when there are others) and the comma-separated list
 * into list.  Returns the number of tensors that have one. */
/* The tensors of g and of its bodies (control flow, any depth) with a named
 * unbound dimension; the names into names[] as unbound_symbols says. */
static int unbound_walk(const bp_graph *g, const char **names, int *n_names, bool *more)
{
    int n_tensors = 0;
    int64_t dims[256];
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
        int r = bp_graph_tensor_dims(g, t, dims, 256);
        bool dyn = false;
        for (int k = 0; k < r; k++) {
            if (dims[k] != BP_DIM_SYMBOLIC) continue;
            const char *sym = bp_graph_tensor_dim_symbol(g, t, k);
            if (!sym || sym[0] == '?') continue;
            dyn = true;
            int j = 0;
            while (j < *n_names && strcmp(names[j], sym)) j++;
            if (j == *n_names && *n_names < MAX_LISTED) names[(*n_names)++] = sym;
            else if (j == *n_names) *more = true;
        }
        n_tensors += dyn;
    }
    for (int32_t i = 0; i < bp_graph_n_bodies(g); i++) {
        bp_body_info b;
        if (bp_graph_body(g, i, &b, NULL) == BP_OK) n_tensors += unbound_walk(b.graph, names, n_names, more);
    }
    return n_tensors;
}

static int unbound_symbols(const bp_graph *g, const char **names, int *n_names, bool *more, char *list, size_t cap)
{
    *n_names = 0;
    *more = false;
    int n_tensors = unbound_walk(g, names, n_names, more);
    size_t L = 0;
    list[0] = 0;
    for (int j = 0; j < *n_names && L < cap; j++)
        L += (size_t)snprintf(list + L, cap - L, "%s%s", j ? ", " : "", names[j]);
    return n_tensors;
}

bp_status cli_reserve_bodies(bp_graph *g, const bp_plan_options *po, bp_error *err)
{
    return bp_graph_n_bodies(g) ? bp_graph_reserve_bodies(g, po, err) : BP_OK;
}

/* BP_ERR_INVALID listing the unbound named symbolic dimensions: planned as
 * they are, their tensors would be left out of the arena and the report would
 * show a plan of what is left (an arena of 0 B for a model whose every
 * activation depends on the batch size). */
static bp_status check_bound(const bp_graph *g, const char *path, bp_error *err)
{
    const char *names[MAX_LISTED];
    int n_names;
    bool more;
    char list[1024];
    int n_tensors = unbound_symbols(g, names, &n_names, &more, list, sizeof list);
    if (!n_tensors) return BP_OK;
    snprintf(err->msg, sizeof err->msg,
                       "%.300s: %d tensors have unbound symbolic dimensions (%.400s%s); bind them with --dim SYM=N or "
                       "--shape INPUT=AxBxC (e.g. --dim %.60s=1), or plan those tensors as dynamic, outside the arena, "
                       "with --allow-dynamic", path, n_tensors, list, more ? ", ..." : "", n_names ? names[0] : "N");
    err->status = BP_ERR_INVALID;
    return BP_ERR_INVALID;
}

bp_status cli_check_planned(const bp_graph *g, const bp_plan_stats *st, const char *path, bp_error *err)
{
    if (st->n_planned > 0) return BP_OK;
    const char *names[MAX_LISTED];
    int n_names;
    bool more;
    char list[1024];
    unbound_symbols(g, names, &n_names, &more, list, sizeof list);
    if (n_names)
        snprintf(err->msg, sizeof err->msg,
                 "%.300s: nothing planned: %d%s unbound symbol%s (%.400s%s) make%s %d tensors dynamic, outside the arena; "
                 "bind them with --dim SYM=N or --shape INPUT=AxBxC", path, n_names, more ? " or more" : "",
                 n_names > 1 || more ? "s" : "", list, more ? ", ..." : "", n_names > 1 || more ? "" : "s", st->n_dynamic);
    else if (st->n_dynamic)
        snprintf(err->msg, sizeof err->msg, "%.300s: nothing planned: %d dynamic tensors (sizes shape inference could not derive), "
                 "outside the arena", path, st->n_dynamic);
    else
        snprintf(err->msg, sizeof err->msg, "%.300s: nothing planned: no op makes a tensor the arena would hold (%d inputs, %d weights)",
                 path, st->n_inputs, st->n_weights);
    err->status = BP_ERR_INVALID;
    return BP_ERR_INVALID;
}

/* The graph's inputs (tensors flagged BP_TENSOR_INPUT), comma-separated,
 * into buf ("none" when it has none; "..." when they do not fit). */
static const char *input_names(const bp_graph *g, char *buf, size_t cap)
{
    size_t L = 0;
    buf[0] = 0;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
        if (!(bp_graph_tensor_flags(g, t) & BP_TENSOR_INPUT)) continue;
        const char *nm = bp_graph_tensor_name(g, t);
        if (L + strlen(nm) + 8 >= cap) { snprintf(buf + L, cap - L, "%s...", L ? ", " : ""); return buf; }
        L += (size_t)snprintf(buf + L, cap - L, "%s%s", L ? ", " : "", nm);
    }
    if (!L) snprintf(buf, cap, "none");
    return buf;
}

bp_status cli_load_graph(const cli_graph_opts *go, bp_graph **out, bp_error *err)
{
    if (go->max_seconds > 0) start_deadline(go->max_seconds);
    const bp_allocator *al = NULL;
    if (go->max_memory) { heap_cap.cap = (size_t)go->max_memory; al = &cap_allocator; }
    const bp_limits *lim = go->have_lim ? &go->lim : NULL;
    bp_graph *g = NULL;
    bp_status s;
    char name[256];
    int64_t dims[64];
    *out = NULL;
    char *data = NULL;
    size_t data_len = 0;
    bool json = is_json_file(go->path, &data, &data_len);
    if (!json) {
#ifdef BP_HAVE_ONNX
        const char *dn[64], *sn[64];
        int64_t dv[64], sdims[64][64];
        const int64_t *sdp[64];
        int sr[64];
        char names[128][256];
        for (int i = 0; i < go->n_dims; i++) {
            int r = parse_shape(go->dims[i], names[i], sizeof names[i], dims, 1);
            if (r != 1) { free(data); return bad_opt(err, "--dim", go->dims[i], "expected SYM=N"); }
            dn[i] = names[i];
            dv[i] = dims[0];
        }
        for (int i = 0; i < go->n_shapes; i++) {
            int r = parse_shape(go->shapes[i], names[64 + i], sizeof names[64 + i], sdims[i], 64);
            if (r < 0) { free(data); return bad_opt(err, "--shape", go->shapes[i], "expected NAME=AxBxC"); }
            sn[i] = names[64 + i];
            sr[i] = r;
            sdp[i] = sdims[i];
        }
        bp_onnx_options oo;
        bp_onnx_options_init(&oo);
        oo.n_dims = go->n_dims;
        oo.dim_names = dn;
        oo.dim_values = dv;
        oo.n_shapes = go->n_shapes;
        oo.shape_names = sn;
        oo.shape_ranks = sr;
        oo.shape_dims = sdp;
        oo.unknown_op_dynamic = go->unknown_op && !strcmp(go->unknown_op, "dynamic");
        oo.plan_constants = go->plan_constants;
        oo.limits = lim;
        bp_onnx_op_shapes *ops = NULL;
        s = go->op_shapes ? bp_onnx_op_shapes_read(go->op_shapes, al, &ops, err) : BP_OK;
        oo.op_shapes = ops;
        if (!s) s = data ? bp_onnx_parse(data, data_len, go->path, &oo, al, &g, NULL, err)
                         : bp_onnx_read(go->path, &oo, al, &g, err);
        bp_onnx_op_shapes_free(ops);
        free(data);
        if (s) return s;
#else
        free(data);
        snprintf(err->msg, sizeof err->msg, "%s: not a JSON graph, and this bufplan was built without ONNX support", go->path);
        err->status = BP_ERR_UNSUPPORTED;
        return BP_ERR_UNSUPPORTED;
#endif
    } else {
        if (go->op_shapes) {
            free(data);
            snprintf(err->msg, sizeof err->msg, "--op-shapes %s: %s is a JSON graph; op shapes apply to ONNX models", go->op_shapes, go->path);
            err->status = BP_ERR_USAGE;
            return BP_ERR_USAGE;
        }
        s = data ? bp_graph_parse_json_lim(data, data_len, go->path, lim, al, &g, err) : bp_graph_read_lim(go->path, lim, al, &g, err);
        free(data);
        if (s) return s;
        for (int i = 0; i < go->n_dims; i++) {
            int r = parse_shape(go->dims[i], name, sizeof name, dims, 1);
            if (r != 1) { bp_graph_free(g); return bad_opt(err, "--dim", go->dims[i], "expected SYM=N"); }
            if ((s = bp_graph_bind_dim(g, name, dims[0], err))) { bp_graph_free(g); return s; }
        }
        /* --shape on a JSON graph binds the symbols of that tensor's shape */
        for (int i = 0; i < go->n_shapes; i++) {
            int r = parse_shape(go->shapes[i], name, sizeof name, dims, 64);
            int32_t t = r >= 0 ? bp_graph_find_tensor(g, name) : -1;
            int64_t cur[64];
            int cr = t >= 0 ? bp_graph_tensor_dims(g, t, cur, 64) : -1;
            if (r < 0 || t < 0 || cr != r) {
                char inputs[600];
                snprintf(err->msg, sizeof err->msg, "--shape %s: %s%s", go->shapes[i],
                         r < 0 ? "expected NAME=AxBxC" : t < 0 ? "no tensor has that name; the graph inputs are: " : "the rank differs from the tensor's",
                         r >= 0 && t < 0 ? input_names(g, inputs, sizeof inputs) : "");
                err->status = BP_ERR_USAGE;
                bp_graph_free(g);
                return BP_ERR_USAGE;
            }
            for (int k = 0; k < r; k++) {
                if (cur[k] != BP_DIM_SYMBOLIC && cur[k] != dims[k]) {
                    snprintf(err->msg, sizeof err->msg, "--shape %s: dimension %d of \"%s\" is %lld", go->shapes[i], k, name, (long long)cur[k]);
                    err->status = BP_ERR_USAGE;
                    bp_graph_free(g);
                    return BP_ERR_USAGE;
                }
            }
            for (int k = 0; k < r; k++) {
                const char *sym = bp_graph_tensor_dim_symbol(g, t, k);
                if (sym && (s = bp_graph_bind_dim(g, sym, dims[k], err))) { bp_graph_free(g); return s; }
            }
        }
    }
    if (go->training && (s = bp_graph_append_backward(g, err))) { bp_graph_free(g); return s; }
    if ((s = bp_graph_finalize(g, err))) { bp_graph_free(g); return s; }
    if (!go->allow_dynamic && (s = check_bound(g, go->path, err))) { bp_graph_free(g); return s; }
    *out = g;
    return BP_OK;
}

const char *cli_fmt_bytes(uint64_t b, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 5) { v /= 1024; u++; }
    if (u == 0) snprintf(buf, cap, "%llu B", (unsigned long long)b);
    else snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

bool cli_is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }
