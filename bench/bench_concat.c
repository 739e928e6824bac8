/*
 * bench_concat.c — Concat in place, side by side: every model under
 * shared/data (ONNX and bufplan-graph JSON, symbolic dimensions bound to 1;
 * the PP-OCRv4 detector's image 640 x 640, Silero VAD's input 1 x 512)
 * and every generated graph (the generators' defaults), planned with the
 * default options without and with concat_inplace.  Prints a Markdown table
 * of the graphs that have a Concat: today's arena, the arena with
 * concat_inplace (bp_plan_graph keeps the smaller of the two plans), the
 * merged plan alone for the same scheduler (what slices cost or save before
 * that choice), the slices placed, and the change.  Exits 1 when the arena
 * with concat_inplace is higher than without on any graph (the check that
 * it never is), or when a plan fails to verify.
 *
 * usage: bench_concat DATA_DIR [--quick]   (--quick: the kahn scheduler)
 */
#define _POSIX_C_SOURCE 200809L
#include "bufplan.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct row {
    char name[96];
    int n_concat;
    uint64_t off, on, merged;
    int slices;
    double t_off, t_on;
    bp_concat_bound_info floor;    /* for the order of today's plan */
    char cert[320];                /* the floor's boundary, in words */
} row;

static int bind_all(bp_graph *g)
{
    bp_error e;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++)
        for (int i = 0; i < bp_graph_tensor_rank(g, t); i++) {
            const char *s = bp_graph_tensor_dim_symbol(g, t, i);
            int64_t d[16];
            if (s && bp_graph_tensor_dims(g, t, d, 16) > i && d[i] == BP_DIM_SYMBOLIC && bp_graph_bind_dim(g, s, 1, &e)) {
                fprintf(stderr, "%s: %s\n", bp_graph_name(g), e.msg);
                return -1;
            }
        }
    if (bp_graph_finalize(g, &e)) { fprintf(stderr, "%s: %s\n", bp_graph_name(g), e.msg); return -1; }
    return 0;
}

/* An ONNX model with symbols in its graph inputs is read again with those
 * symbols bound to 1 at import (as `plan --dim N=1` does), so that shape
 * inference computes the inner dimensions from them; binding every symbol
 * after import instead gives a Reshape's inferred symbol its own value. */
static bp_status reimport_bound(const char *path, bp_graph **g, bp_error *e)
{
    const char *names[16];
    int64_t ones[16];
    int n = 0;
    for (int32_t t = 0; t < bp_graph_n_tensors(*g); t++) {
        if (!(bp_graph_tensor_flags(*g, t) & BP_TENSOR_INPUT)) continue;
        for (int i = 0; i < bp_graph_tensor_rank(*g, t); i++) {
            const char *s = bp_graph_tensor_dim_symbol(*g, t, i);
            int seen = 0;
            for (int k = 0; k < n; k++) seen |= s && !strcmp(names[k], s);
            if (s && !seen && n < 16) { names[n] = s; ones[n++] = 1; }
        }
    }
    if (!n) return BP_OK;
    bp_onnx_options oo;
    bp_onnx_options_init(&oo);
    oo.n_dims = n;
    oo.dim_names = names;
    oo.dim_values = ones;
    bp_graph *h = NULL;
    bp_status s = bp_onnx_read(path, &oo, NULL, &h, e);
    bp_graph_free(*g);   /* the names point into *g: freed after the read */
    *g = h;
    return s;
}

static int count_concat(const bp_graph *g)
{
    int n = 0;
    for (int32_t op = 0; op < bp_graph_n_ops(g); op++)
        n += !strcmp(bp_graph_op_type(g, op), "Concat") || !strcmp(bp_graph_op_type(g, op), "aten.cat");
    return n;
}

/* Plans g with o; the arena, the slices and the seconds; -1 on failure. */
static int plan_one(bp_graph *g, const bp_plan_options *o, bool merged_only, uint64_t *arena, int *slices, double *secs,
                    row *fl)
{
    bp_error e;
    if (bp_graph_n_bodies(g) && bp_graph_reserve_bodies(g, o, &e)) { fprintf(stderr, "%s: %s\n", bp_graph_name(g), e.msg); return -1; }
    bp_plan *p = NULL;
    bp_status s;
    if (merged_only) {
        int32_t *order = malloc(sizeof *order * (size_t)(bp_graph_n_ops(g) + 1));
        if (!order) return -1;
        s = bp_schedule(g, o, order, &e);
        if (!s) s = bp_plan_graph_order(g, o, order, &p, &e);
        free(order);
    } else {
        s = bp_plan_graph(g, o, &p, &e);
    }
    if (s) { fprintf(stderr, "%s: %s\n", bp_graph_name(g), e.msg); return -1; }
    if (bp_verify(g, p, &e)) { fprintf(stderr, "%s: the plan does not verify: %s\n", bp_graph_name(g), e.msg); bp_plan_free(p); return -1; }
    *arena = bp_plan_get_stats(p)->arena_bytes;
    *secs = bp_plan_get_stats(p)->plan_seconds;
    *slices = 0;
    for (int32_t t = 0; t < bp_plan_n_tensors(p); t++) *slices += bp_plan_tensor(p, t)->view_offset != 0;
    if (fl && !bp_graph_n_bodies(g)) {
        bp_concat_bound_info *b = &fl->floor;
        if (bp_concat_bound(g, o, bp_plan_schedule(p), b, &e)) { fprintf(stderr, "%s: %s\n", bp_graph_name(g), e.msg); bp_plan_free(p); return -1; }
        if (b->bytes > *arena) { fprintf(stderr, "%s: the floor %llu is above the arena %llu\n", bp_graph_name(g), (unsigned long long)b->bytes, (unsigned long long)*arena); bp_plan_free(p); return -1; }
        if (b->op >= 0)
            snprintf(fl->cert, sizeof fl->cert, "%s step %d (%s \"%s\"): %d storages live, the largest \"%s\" (%.2f MiB)", b->during ? "during" : "after", b->step,
                     bp_graph_op_type(g, b->op), bp_graph_op_name(g, b->op), b->n_live, b->largest >= 0 ? bp_graph_tensor_name(g, b->largest) : "-",
                     b->largest >= 0 ? (double)bp_graph_tensor_bytes(g, b->largest) / 1048576.0 : 0.0);
    }
    bp_plan_free(p);
    return 0;
}

static int measure(bp_graph *g, const char *name, bool quick, row *r)
{
    bp_plan_options off, on;
    bp_plan_options_init(&off);
    if (quick) off.sched = BP_SCHED_KAHN;
    on = off;
    on.concat_inplace = 1;
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->n_concat = count_concat(g);
    int sl = 0;
    double t;
    if (plan_one(g, &off, false, &r->off, &sl, &r->t_off, r) || plan_one(g, &on, false, &r->on, &sl, &r->t_on, NULL) ||
        plan_one(g, &on, true, &r->merged, &r->slices, &t, NULL))
        return -1;
    return 0;
}

/* Models whose input shapes are symbolic beyond the batch: the shapes the
 * other suites use (the PP-OCRv4 detector as the issue measured it). */
typedef struct bench_shapes {
    const char *file;
    int n;
    const char *const *names;
    const int *ranks;
    const int64_t *const *dims;
} bench_shapes;

static const int64_t ocr_x[4] = {1, 3, 640, 640}, vad_in[2] = {1, 512}, vad_state[3] = {2, 1, 128};
static const int64_t *const ocr_dims[1] = {ocr_x}, *const vad_dims[2] = {vad_in, vad_state};
static const char *const ocr_names[1] = {"x"}, *const vad_names[2] = {"input", "state"};
static const int ocr_ranks[1] = {4}, vad_ranks[2] = {2, 3};
static const bench_shapes bench_shape_table[] = {
    {"ch_PP-OCRv4_det_infer.onnx", 1, ocr_names, ocr_ranks, ocr_dims},
    {"silero_vad_v5.onnx", 2, vad_names, vad_ranks, vad_dims},
};

static const bench_shapes *shapes_of(const char *file)
{
    for (size_t i = 0; i < sizeof bench_shape_table / sizeof bench_shape_table[0]; i++)
        if (!strcmp(bench_shape_table[i].file, file)) return &bench_shape_table[i];
    return NULL;
}

static int ends_with(const char *s, const char *x)
{
    size_t a = strlen(s), b = strlen(x);
    return a >= b && !strcmp(s + a - b, x);
}

/* Every .onnx and .json model in dir (one level of subfolders). */
static int walk(const char *dir, int depth, bool quick, row *rows, int *n, int cap, int *bad)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *de;
    char path[1024];
    char *names[256];
    int k = 0;
    while ((de = readdir(d)) && k < 256)
        if (de->d_name[0] != '.') names[k++] = strdup(de->d_name);
    closedir(d);
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            if (strcmp(names[i], names[j]) > 0) { char *x = names[i]; names[i] = names[j]; names[j] = x; }
    for (int i = 0; i < k; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (depth < 2 && !strchr(names[i], '.')) walk(path, depth + 1, quick, rows, n, cap, bad);
        else if ((ends_with(names[i], ".onnx") || (ends_with(names[i], ".json") && strcmp(names[i], "analysis.json"))) && *n < cap) {
            bp_graph *g = NULL;
            bp_error e;
            bp_status rs;
            const bench_shapes *sh = shapes_of(names[i]);
            if (sh) {
                bp_onnx_options oo;
                bp_onnx_options_init(&oo);
                oo.n_shapes = sh->n;
                oo.shape_names = sh->names;
                oo.shape_ranks = sh->ranks;
                oo.shape_dims = sh->dims;
                rs = bp_onnx_read(path, &oo, NULL, &g, &e);
            } else {
                rs = bp_graph_read(path, NULL, &g, &e);
                if (!rs && ends_with(names[i], ".onnx")) rs = reimport_bound(path, &g, &e);
            }
            if (rs || bind_all(g)) { fprintf(stderr, "skip %s: %s\n", path, g ? "cannot bind" : e.msg); bp_graph_free(g); free(names[i]); continue; }
            char label[96];
            snprintf(label, sizeof label, "%s%s", ends_with(dir, "training") ? "training/" : "", names[i]);
            if (measure(g, label, quick, &rows[*n])) (*bad)++;
            else (*n)++;
            bp_graph_free(g);
        }
        free(names[i]);
    }
    return 0;
}

static void mib(char *b, size_t cap, uint64_t x) { snprintf(b, cap, "%.2f", (double)x / 1048576.0); }

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: bench_concat DATA_DIR [--quick]\n"); return 2; }
    bool quick = argc > 2 && !strcmp(argv[2], "--quick");
    static row rows[512];
    int n = 0, bad = 0;
    walk(argv[1], 0, quick, rows, &n, 512, &bad);
    const char *const *kinds = bp_gen_kinds();
    for (int k = 0; kinds[k] && n < 512; k++) {
        bp_gen_options o;
        bp_gen_options_init(&o);
        bp_graph *g = NULL;
        bp_error e;
        if (bp_gen(kinds[k], &o, NULL, &g, &e)) { fprintf(stderr, "gen %s: %s\n", kinds[k], e.msg); bad++; continue; }
        char label[96];
        snprintf(label, sizeof label, "gen %s", kinds[k]);
        if (measure(g, label, quick, &rows[n])) bad++;
        else n++;
        bp_graph_free(g);
    }
    printf("| graph | Concats | today (MiB) | concat in place (MiB) | change | merged plan alone (MiB) | slices | floor (MiB) | floor / today | plan ms today / in place |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int higher = 0, total = 0, lower = 0;
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        total++;
        if (r->on > r->off) { higher++; fprintf(stderr, "HIGHER: %s: %llu > %llu\n", r->name, (unsigned long long)r->on, (unsigned long long)r->off); }
        lower += r->on < r->off;
        if (!r->n_concat && r->on == r->off) continue;   /* a graph without a Concat is listed when its Splits changed it */
        char a[32], b[32], c[32], f[32];
        mib(a, sizeof a, r->off);
        mib(b, sizeof b, r->on);
        mib(c, sizeof c, r->merged);
        mib(f, sizeof f, r->floor.bytes);
        printf("| %s | %d | %s | %s | %+.1f%% | %s | %d | %s | %.3f | %.1f / %.1f |\n", r->name, r->n_concat, a, b,
               r->off ? 100.0 * ((double)r->on - (double)r->off) / (double)r->off : 0.0, c, r->slices, f,
               r->off ? (double)r->floor.bytes / (double)r->off : 0.0, r->t_off * 1e3, r->t_on * 1e3);
    }
    printf("\nWhere the floor is above 0.8 of today's arena, no Concat-in-place choice (whole, partial or none) saves 20%% in that order; "
           "the boundary that forces it:\n\n");
    for (int i = 0; i < n; i++)
        if (rows[i].n_concat && rows[i].floor.bytes * 5 > rows[i].off * 4) printf("- %s: floor %.2f MiB, %s\n", rows[i].name, (double)rows[i].floor.bytes / 1048576.0, rows[i].cert);
    printf("\n%d graphs planned without and with concat_inplace (%s scheduler): %d lower, %d higher, %d failed\n", total,
           quick ? "kahn" : "best", lower, higher, bad);
    return higher || bad ? 1 : 0;
}
