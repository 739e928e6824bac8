/*
 * Custom-op shapes in the ONNX importer: the shape callback (a custom op
 * shaped by it, symbols passed through, attributes read through the
 * accessors, its error failing the import with the node named, "not mine"
 * falling through to the unknown-op path or to the com.microsoft rules,
 * outputs it gets wrong rejected), --op-shapes formulas applied to a model
 * (node entries before op-type entries, an error naming the node), and the
 * built-in com.microsoft rules only where the model imports that domain.
 * Models are built in memory (tests/onnx_writer.h).
 */
#include <bufplan.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "onnx_writer.h"

static FILE *quiet;

#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A model with opsets "" 13 and, when dom2, dom2 1. */
static pb model2(pb *graph, const char *dom2)
{
    pb m = {0}, os = {0}, os2 = {0};
    pb_int(&m, 1, 7);
    pb_str(&m, 2, "bufplan-test");
    pb_int(&os, 2, 13);
    pb_msg(&m, 8, &os);
    if (dom2) { pb_str(&os2, 1, dom2); pb_int(&os2, 2, 1); pb_msg(&m, 8, &os2); }
    pb_msg(&m, 7, graph);
    return m;
}

static pb attr_float(const char *name, float f)
{
    pb a = {0};
    pb_str(&a, 1, name);
    pb_tag(&a, 2, 5);
    pb_raw(&a, &f, 4);
    pb_int(&a, 20, 1);
    return a;
}

/* x[N, 3, 8, 8] -> com.example MyPool (stride 2, ints, float, string attributes) -> p -> Relu -> y */
static pb model_custom(const char *dom, const char *op)
{
    pb g = {0}, n, a[4];
    int64_t xd[4] = {-1, 3, 8, 8};
    const char *xp[4] = {"N", NULL, NULL, NULL};
    a[0] = ox_attr_int("stride", 2);
    a[1] = ox_attr_ints("window", 2, (int64_t[]){3, 4});
    a[2] = attr_float("alpha", 0.5f);
    a[3] = ox_attr_str("mode", "max");
    n = ox_node(op, "pool", S("x"), S("p"), a, 4);
    if (dom) pb_str(&n, 7, dom);
    pb_msg(&g, 1, &n);
    n = ox_node("Relu", "relu", S("p"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
    pb vi = ox_value_info("x", OX_FLOAT, 4, xd, xp); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    return model2(&g, dom);
}

/* What the callback saw, for the checks. */
typedef struct seen {
    int calls;
    int mode;              /* 0 shape, 1 error, 2 not mine, 3 rank 99, 4 bad symbol, 5 fresh dims */
    int64_t stride, w1;
    double alpha;
    char str[16], sym[16], domain[32], name[32];
} seen;

static bp_onnx_shape_rc cb(void *user, const bp_onnx_node_info *n, bp_onnx_out *out, char *msg, size_t cap)
{
    seen *s = user;
    s->calls++;
    snprintf(s->domain, sizeof s->domain, "%s", n->domain);
    snprintf(s->name, sizeof s->name, "%s", n->name);
    if (strcmp(n->op_type, "MyPool")) return BP_ONNX_NOT_MINE;
    if (s->mode == 1) { snprintf(msg, cap, "MyPool needs a 4-D input, got %d", n->inputs[0].rank + 1); return BP_ONNX_SHAPE_ERROR; }
    if (s->mode == 2) return BP_ONNX_NOT_MINE;
    const int64_t *w;
    size_t nw;
    const char *str;
    size_t sl;
    bp_onnx_attr_int(n->node, "stride", &s->stride);
    if (bp_onnx_attr_ints(n->node, "window", &w, &nw) && nw == 2) s->w1 = w[1];
    bp_onnx_attr_float(n->node, "alpha", &s->alpha);
    if (bp_onnx_attr_string(n->node, "mode", &str, &sl) && sl < sizeof s->str) { memcpy(s->str, str, sl); s->str[sl] = 0; }
    CHECK(!bp_onnx_attr_int(n->node, "window", &s->stride));   /* the wrong type is "absent" */
    CHECK(!bp_onnx_attr_int(n->node, "nope", &s->stride));
    const bp_onnx_value *x = &n->inputs[0];
    const char *sym = bp_onnx_sym_name(n->node, x->dims[0]);
    snprintf(s->sym, sizeof s->sym, "%s", sym ? sym : "(none)");
    CHECK(n->n_outputs == 1 && !strcmp(n->output_names[0], "p") && !strcmp(x->name, "x") && x->dtype == BP_DT_F32);
    out[0].rank = s->mode == 3 ? 99 : 4;
    out[0].dtype = BP_DT_F16;
    out[0].dims[0] = s->mode == 4 ? -1000 : x->dims[0];
    out[0].dims[1] = x->dims[1];
    for (int d = 2; d < 4; d++) out[0].dims[d] = s->mode == 5 ? BP_ONNX_DIM_FRESH : x->dims[d] / s->stride;
    return BP_ONNX_SHAPED;
}

static bp_status import(pb *m, bp_onnx_options *o, bp_graph **g, bp_error *err)
{
    o->warnings = quiet;
    return bp_onnx_parse(m->d, m->n, "custom.onnx", o, NULL, g, NULL, err);
}

static void check_dims(bp_graph *g, const char *t, int rank, const int64_t *want, const char *what)
{
    int64_t d[8];
    int32_t id = bp_graph_find_tensor(g, t);
    int r = id >= 0 ? bp_graph_tensor_dims(g, id, d, 8) : -2;
    bool ok = r == rank;
    for (int i = 0; ok && i < r; i++) ok = d[i] == want[i];
    CHECK_MSG(ok, "%s: tensor %s has rank %d [%lld %lld %lld %lld ...]", what, t, r, r > 0 ? (long long)d[0] : 0,
              r > 1 ? (long long)d[1] : 0, r > 2 ? (long long)d[2] : 0, r > 3 ? (long long)d[3] : 0);
}

static void test_callback(void)
{
    pb m = model_custom("com.example", "MyPool");
    bp_onnx_options o;
    bp_graph *g = NULL;
    bp_error err = {0};
    seen s = {0};
    /* without a callback: an unknown op */
    bp_onnx_options_init(&o);
    CHECK(o.shape_fn == NULL && o.op_shapes == NULL);
    CHECK(import(&m, &o, &g, &err) == BP_ERR_UNSUPPORTED && strstr(err.msg, "MyPool"));
    /* shaped by the callback, the symbol N passed through, attributes read */
    o.shape_fn = cb;
    o.shape_user = &s;
    CHECK_OK(import(&m, &o, &g, &err), err);
    if (g) {
        check_dims(g, "p", 4, (int64_t[]){BP_DIM_SYMBOLIC, 3, 4, 4}, "callback");
        int32_t p = bp_graph_find_tensor(g, "p");
        CHECK(bp_graph_tensor_dtype(g, p) == BP_DT_F16);
        CHECK(bp_graph_tensor_dim_symbol(g, p, 0) && !strcmp(bp_graph_tensor_dim_symbol(g, p, 0), "N"));
        CHECK(bp_graph_tensor_dtype(g, bp_graph_find_tensor(g, "y")) == BP_DT_F16);   /* Relu follows it */
        CHECK(bp_graph_bind_dim(g, "N", 2, &err) == BP_OK && bp_graph_tensor_bytes(g, p) == 2 * 3 * 4 * 4 * 2);
        bp_graph_free(g);
        g = NULL;
    }
    CHECK(s.calls == 1 && s.stride == 2 && s.w1 == 4 && s.alpha == 0.5 && !strcmp(s.str, "max") && !strcmp(s.sym, "N"));
    CHECK(!strcmp(s.domain, "com.example") && !strcmp(s.name, "pool"));
    /* the callback's error fails the import, naming the node and the file */
    s.mode = 1;
    CHECK(import(&m, &o, &g, &err) == BP_ERR_INVALID && !g);
    CHECK_MSG(strstr(err.msg, "custom.onnx") && strstr(err.msg, "node \"pool\" (MyPool)") && strstr(err.msg, "needs a 4-D input, got 5"),
              "%s", err.msg);
    /* not mine: the unknown-op path (an error, or dynamic outputs) */
    s.mode = 2;
    CHECK(import(&m, &o, &g, &err) == BP_ERR_UNSUPPORTED && strstr(err.msg, "unknown op type \"MyPool\""));
    o.unknown_op_dynamic = 1;
    CHECK_OK(import(&m, &o, &g, &err), err);
    if (g) { CHECK(bp_graph_tensor_is_dynamic(g, bp_graph_find_tensor(g, "p"))); bp_graph_free(g); g = NULL; }
    o.unknown_op_dynamic = 0;
    /* wrong outputs are rejected with the node named */
    s.mode = 3;
    CHECK(import(&m, &o, &g, &err) == BP_ERR_INVALID && strstr(err.msg, "rank 99") && strstr(err.msg, "\"pool\""));
    s.mode = 4;
    CHECK(import(&m, &o, &g, &err) == BP_ERR_INVALID && strstr(err.msg, "-1000") && strstr(err.msg, "neither a size nor a symbol"));
    /* BP_ONNX_DIM_FRESH: a fresh symbol, the tensor is dynamic */
    s.mode = 5;
    CHECK_OK(import(&m, &o, &g, &err), err);
    if (g) { CHECK(bp_graph_tensor_is_dynamic(g, bp_graph_find_tensor(g, "p"))); bp_graph_free(g); g = NULL; }
    pb_free(&m);
    /* an unknown default-domain op goes to the callback too; a known one does not */
    pb m2 = model_custom(NULL, "MyPool");
    s = (seen){0};
    CHECK_OK(import(&m2, &o, &g, &err), err);
    if (g) { check_dims(g, "p", 4, (int64_t[]){BP_DIM_SYMBOLIC, 3, 4, 4}, "default domain"); bp_graph_free(g); g = NULL; }
    CHECK(s.calls == 1 && !strcmp(s.domain, ""));
    pb_free(&m2);
}

/* A com.microsoft FastGelu: "not mine" leaves it to the built-in rule; without the domain imported it is unknown. */
static void test_not_mine_ms(void)
{
    pb g = {0}, n;
    int64_t xd[3] = {2, 5, 8};
    n = ox_node("FastGelu", "fg", S("x"), S("y"), NULL, 0);
    pb_str(&n, 7, "com.microsoft");
    pb_msg(&g, 1, &n);
    pb vi = ox_value_info("x", OX_FLOAT, 3, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    pb m = model2(&g, "com.microsoft");
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    seen s = {.mode = 2};
    o.shape_fn = cb;
    o.shape_user = &s;
    bp_graph *gr = NULL;
    bp_error err = {0};
    CHECK_OK(import(&m, &o, &gr, &err), err);
    if (gr) { check_dims(gr, "y", 3, xd, "ms after not mine"); bp_graph_free(gr); }
    CHECK(s.calls == 1);
    pb_free(&m);
}

/* Two MyOp nodes shaped by --op-shapes formulas: the node entry wins for "second". */
static void test_op_shapes(void)
{
    pb g = {0}, n, a[1];
    int64_t xd[4] = {1, 4, 9, 9};
    a[0] = ox_attr_int("k", 3);
    n = ox_node("MyOp", "first", S("x"), S("a"), a, 1); pb_str(&n, 7, "com.example"); pb_msg(&g, 1, &n);
    n = ox_node("MyOp", "second", S("a"), S("b"), NULL, 0); pb_str(&n, 7, "com.example"); pb_msg(&g, 1, &n);
    pb vi = ox_value_info("x", OX_FLOAT, 4, xd, NULL); pb_msg(&g, 11, &vi);
    vi = ox_value_info("b", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    pb m = model2(&g, "com.example");
    const char *text = "{\"ops\": [{\"op_type\": \"MyOp\", \"domain\": \"com.example\", \"attrs\": {\"k\": 1},"
                       " \"outputs\": [{\"shape\": [\"in0[0]\", \"in0[1] * 2\", \"in0[2] - attr.k + 1\", \"in0[3] - attr.k + 1\"]}]},"
                       " {\"node\": \"second\", \"outputs\": [{\"dtype\": \"i32\", \"shape\": [\"in0.rank\", 7]}]}]}";
    bp_onnx_op_shapes *ops = NULL;
    bp_error err = {0};
    CHECK_OK(bp_onnx_op_shapes_parse(text, strlen(text), "ops.json", NULL, &ops, &err), err);
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.op_shapes = ops;
    bp_graph *gr = NULL;
    CHECK_OK(import(&m, &o, &gr, &err), err);
    if (gr) {
        check_dims(gr, "a", 4, (int64_t[]){1, 8, 7, 7}, "op entry");
        check_dims(gr, "b", 2, (int64_t[]){4, 7}, "node entry");
        CHECK(bp_graph_tensor_dtype(gr, bp_graph_find_tensor(gr, "b")) == BP_DT_I32);
        bp_graph_free(gr);
        gr = NULL;
    }
    bp_onnx_op_shapes_free(ops);
    /* a formula reading an input the node lacks fails at import, naming the node */
    text = "{\"ops\": [{\"op_type\": \"MyOp\", \"outputs\": [{\"shape\": [\"in1[0]\"]}]}]}";
    CHECK_OK(bp_onnx_op_shapes_parse(text, strlen(text), "ops.json", NULL, &ops, &err), err);
    o.op_shapes = ops;
    CHECK(import(&m, &o, &gr, &err) == BP_ERR_INVALID && !gr);
    CHECK_MSG(strstr(err.msg, "node \"first\" (MyOp)") && strstr(err.msg, "ops.json, ops[0].outputs[0]") && strstr(err.msg, "no input 1"),
              "%s", err.msg);
    bp_onnx_op_shapes_free(ops);
    /* a shape copied from an input the node lacks, with the dtype from one it has */
    text = "{\"ops\": [{\"op_type\": \"MyOp\", \"outputs\": [{\"dtype\": \"in0\", \"shape\": \"in3\"}]}]}";
    CHECK_OK(bp_onnx_op_shapes_parse(text, strlen(text), "ops.json", NULL, &ops, &err), err);
    o.op_shapes = ops;
    CHECK(import(&m, &o, &gr, &err) == BP_ERR_INVALID && !gr);
    CHECK_MSG(strstr(err.msg, "node \"first\"") && strstr(err.msg, "\"shape\": the node has no input 3"), "%s", err.msg);
    bp_onnx_op_shapes_free(ops);
    /* an entry for another domain does not match: the unknown-op path */
    text = "{\"ops\": [{\"op_type\": \"MyOp\", \"domain\": \"org.other\", \"outputs\": [{\"shape\": \"in0\"}]}]}";
    CHECK_OK(bp_onnx_op_shapes_parse(text, strlen(text), "ops.json", NULL, &ops, &err), err);
    o.op_shapes = ops;
    CHECK(import(&m, &o, &gr, &err) == BP_ERR_UNSUPPORTED && strstr(err.msg, "unknown op type \"MyOp\""));
    bp_onnx_op_shapes_free(ops);
    pb_free(&m);
}

/* com.microsoft rules apply only when the model imports the domain: a
 * default-domain SimplifiedLayerNormalization is unknown otherwise. */
static void test_ms_domain_only(void)
{
    for (int imp = 0; imp < 2; imp++) {
        pb g = {0}, n;
        int64_t xd[3] = {2, 5, 8}, sd[1] = {8};
        n = ox_node("SimplifiedLayerNormalization", "sln", S("x", "s"), S("y", "inv"), NULL, 0); pb_msg(&g, 1, &n);
        pb vi = ox_value_info("x", OX_FLOAT, 3, xd, NULL); pb_msg(&g, 11, &vi);
        vi = ox_value_info("s", OX_FLOAT, 1, sd, NULL); pb_msg(&g, 11, &vi);
        vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
        vi = ox_value_info("inv", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
        pb m = model2(&g, imp ? "com.microsoft" : NULL);
        bp_onnx_options o;
        bp_onnx_options_init(&o);
        bp_graph *gr = NULL;
        bp_error err = {0};
        bp_status s = import(&m, &o, &gr, &err);
        if (!imp) CHECK_MSG(s == BP_ERR_UNSUPPORTED && strstr(err.msg, "SimplifiedLayerNormalization"), "%d %s", (int)s, err.msg);
        else {
            CHECK_OK(s, err);
            if (gr) { check_dims(gr, "y", 3, xd, "sln y"); check_dims(gr, "inv", 3, (int64_t[]){2, 5, 1}, "sln inv"); }
        }
        bp_graph_free(gr);
        pb_free(&m);
    }
}

int main(void)
{
    quiet = fopen("/dev/null", "w");
    if (!bp_onnx_available()) { printf("SKIP: built without ONNX support\n"); return 0; }
    test_callback();
    test_not_mine_ms();
    test_op_shapes();
    test_ms_domain_only();
    if (quiet) fclose(quiet);
    return check_status();
}
