/* What a kernel can know at run time: the concrete dims and dtype of every
 * input and output (bp_exec_call.in_shape / out_shape) and the op's
 * attributes (bp_graph_op_attr_*).  A Conv kernel over a real ONNX model
 * checks every output shape against the one its strides, pads, dilations and
 * kernel_shape give; a graph with a symbolic dimension shows the shapes as
 * bound at run time with a bucket plan and in the conservative branch; the
 * attribute API and its graph JSON round trip, with the messages for bad
 * input. */
#define _DEFAULT_SOURCE
#include "bufplan.h"
#include "check.h"

#include <unistd.h>

/* ------------------------------------------------------ the Conv kernel */

typedef struct conv_seen { int n_conv, n_checked; char bad[512]; } conv_seen;

/* Output dim d of a Conv from its input, its weight and its attributes. */
static int64_t conv_out_dim(const bp_exec_call *c, int d, const int64_t *x, const int64_t *w)
{
    const int64_t *st = NULL, *pd = NULL, *dl = NULL;
    int ns = bp_graph_op_attr_ints(c->graph, c->op, "strides", &st);
    int np = bp_graph_op_attr_ints(c->graph, c->op, "pads", &pd);
    int nd = bp_graph_op_attr_ints(c->graph, c->op, "dilations", &dl);
    int sp = c->in_shape[0].rank - 2;
    int64_t s = ns == sp ? st[d] : 1, dil = nd == sp ? dl[d] : 1, p = np == 2 * sp ? pd[d] + pd[d + sp] : 0;
    return (x[d + 2] + p - dil * (w[d + 2] - 1) - 1) / s + 1;
}

static int conv_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    conv_seen *cs = user;
    cs->n_conv++;
    const bp_exec_shape *x = &c->in_shape[0], *w = &c->in_shape[1], *y = &c->out_shape[0];
    if (x->rank != 4 || w->rank != 4 || y->rank != 4 || x->dtype != BP_DT_F32 || y->dtype != BP_DT_F32) {
        snprintf(err->msg, sizeof err->msg, "unexpected ranks or dtypes");
        return 1;
    }
    int64_t group = bp_graph_op_attr_int(c->graph, c->op, "group", 1);
    const int64_t *ks = NULL;
    int nk = bp_graph_op_attr_ints(c->graph, c->op, "kernel_shape", &ks);
    bool ok = y->dims[0] == x->dims[0] && y->dims[1] == w->dims[0] && x->dims[1] == w->dims[1] * group;
    ok = ok && (nk != 2 || (ks[0] == w->dims[2] && ks[1] == w->dims[3]));
    for (int d = 0; d < 2 && ok; d++) ok = y->dims[d + 2] == conv_out_dim(c, d, x->dims, w->dims);
    if (!ok && !cs->bad[0])
        snprintf(cs->bad, sizeof cs->bad, "%s: x [%lld,%lld,%lld,%lld] w [%lld,%lld,%lld,%lld] -> y [%lld,%lld,%lld,%lld]", c->op_name,
                 (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2], (long long)x->dims[3], (long long)w->dims[0],
                 (long long)w->dims[1], (long long)w->dims[2], (long long)w->dims[3], (long long)y->dims[0], (long long)y->dims[1],
                 (long long)y->dims[2], (long long)y->dims[3]);
    cs->n_checked += ok;
    return 0;
}

/* True when attribute i of op is the same in g and h. */
static bool same_attr(const bp_graph *g, const bp_graph *h, int32_t op, int i)
{
    bp_attr a, b;
    if (!bp_graph_op_attr_get(g, op, i, &a) || !bp_graph_op_attr_get(h, op, i, &b)) return false;
    if (strcmp(a.name, b.name) || a.type != b.type || a.n != b.n) return false;
    switch (a.type) {
    case BP_ATTR_INT: return a.i == b.i;
    case BP_ATTR_FLOAT: return a.f == b.f;
    case BP_ATTR_STRING: return !strcmp(a.s, b.s);
    case BP_ATTR_INTS: return !a.n || !memcmp(a.ints, b.ints, (size_t)a.n * sizeof *a.ints);
    default: return !a.n || !memcmp(a.floats, b.floats, (size_t)a.n * sizeof *a.floats);
    }
}

/* The model's attributes survive graph JSON: write, read, compare every one. */
static void check_json_round_trip(const bp_graph *g)
{
    char path[] = "/tmp/bp_attrs_onnx_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    bp_error e;
    bp_graph *h = NULL;
    CHECK_OK(bp_graph_write_json(g, path, &e), e);
    CHECK_OK(bp_graph_read_json(path, NULL, &h, &e), e);
    int total = 0, same = 0;
    for (int32_t op = 0; h && op < bp_graph_n_ops(g); op++) {
        int n = bp_graph_op_attr_count(g, op);
        CHECK_MSG(n == bp_graph_op_attr_count(h, op), "op %s: %d attributes, %d after JSON", bp_graph_op_name(g, op), n,
                  bp_graph_op_attr_count(h, op));
        for (int i = 0; i < n; i++) { total++; same += same_attr(g, h, op, i); }
    }
    CHECK_MSG(total > 100 && same == total, "%d of %d attributes the same after JSON", same, total);
    bp_graph_free(h);
    unlink(path);
}

static void test_onnx_conv(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/onnx/torchvision/resnet18.onnx", test_data_dir());
    if (access(path, R_OK)) { printf("SKIP (ONNX Conv kernel): %s is not there\n", path); return; }
    bp_graph *g = NULL;
    bp_error e;
    bp_status s = bp_graph_read(path, NULL, &g, &e);
    if (s == BP_ERR_UNSUPPORTED) { printf("SKIP (ONNX Conv kernel): no ONNX support\n"); return; }
    CHECK_OK(s, e);
    if (s) return;
    /* the first Conv (torchvision's stem): 7x7, stride 2, pads 3 */
    int32_t c0 = -1;
    for (int32_t op = 0; op < bp_graph_n_ops(g) && c0 < 0; op++) if (!strcmp(bp_graph_op_type(g, op), "Conv")) c0 = op;
    REQUIRE(c0 >= 0);
    const int64_t *v = NULL;
    CHECK(bp_graph_op_attr_ints(g, c0, "strides", &v) == 2 && v[0] == 2 && v[1] == 2);
    CHECK(bp_graph_op_attr_ints(g, c0, "pads", &v) == 4 && v[0] == 3 && v[3] == 3);
    CHECK(bp_graph_op_attr_int(g, c0, "group", -7) == 1);
    CHECK(bp_graph_op_attr_int(g, c0, "no_such", -7) == -7);
    int k = bp_graph_op_attr_find(g, c0, "kernel_shape", NULL);
    CHECK(k >= 0 && bp_graph_op_attr_type(g, c0, k) == BP_ATTR_INTS && !strcmp(bp_graph_op_attr_name(g, c0, k), "kernel_shape"));
    check_json_round_trip(g);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, NULL, &p, &e), e);
    bp_exec *ex = NULL;
    if (p) CHECK_OK(bp_exec_new(g, p, NULL, &ex, &e), e);
    conv_seen cs = {0, 0, ""};
    if (ex) {
        bp_exec_set_kernel(ex, bp_exec_noop_kernel, NULL);
        CHECK_OK(bp_exec_set_type_kernel(ex, "Conv", conv_kernel, &cs, &e), e);
        CHECK_OK(bp_exec_run(ex, NULL, &e), e);
    }
    CHECK_MSG(cs.n_conv == 20 && cs.n_checked == 20, "%d Conv ops, %d with the shape their attributes give; first wrong: %s", cs.n_conv,
              cs.n_checked, cs.bad);
    bp_exec_free(ex);
    bp_plan_free(p);
    bp_graph_free(g);
}

/* ---------------------------------------- shapes bound at run time */

static const char sym_graph[] =
    "{\"format\": \"bufplan-graph\", \"version\": 1, \"name\": \"sym\",\n"
    " \"tensors\": [{\"name\": \"x\", \"shape\": [2, \"S\", 4], \"dtype\": \"f32\"},\n"
    "             {\"name\": \"h\", \"shape\": [2, \"S\", 4], \"dtype\": \"f32\"},\n"
    "             {\"name\": \"y\", \"shape\": [2, \"S\", 8], \"dtype\": \"f16\"}],\n"
    " \"ops\": [{\"name\": \"act\", \"type\": \"LeakyRelu\", \"inputs\": [\"x\"], \"outputs\": [\"h\"],\n"
    "          \"attrs\": {\"alpha\": 0.01, \"axes\": [0, -1], \"mode\": \"fast\", \"k\": 3, \"w\": [1.5, 2, 0.1], \"none\": []}},\n"
    "         {\"name\": \"proj\", \"type\": \"Proj\", \"inputs\": [\"h\"], \"outputs\": [\"y\"]}],\n"
    " \"inputs\": [\"x\"], \"outputs\": [\"y\"]}\n";

typedef struct seen_dims { int64_t in_s, out_s, out_last; bp_dtype out_dt; int calls; } seen_dims;

static int dims_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    (void)err;
    seen_dims *sd = user;
    if (strcmp(c->op_type, "Proj")) return 0;
    sd->calls++;
    sd->in_s = c->in_shape[0].dims[1];
    sd->out_s = c->out_shape[0].dims[1];
    sd->out_last = c->out_shape[0].dims[2];
    sd->out_dt = c->out_shape[0].dtype;
    return 0;
}

/* Runs res's plan with the shapes of res->actual; returns what Proj saw. */
static seen_dims run_with(const bp_dyn_result *res, int set_shapes)
{
    seen_dims sd = {0, 0, 0, BP_DT_UNKNOWN, 0};
    bp_error e;
    bp_exec *ex = NULL;
    bp_exec_options o;
    bp_exec_options_init(&o);
    if (res->how == BP_DYN_RAN_CONSERVATIVE) o.mode = BP_EXEC_PLANNED;
    CHECK_OK(bp_exec_new(res->graph, res->plan, &o, &ex, &e), e);
    if (!ex) return sd;
    if (set_shapes) CHECK_OK(bp_exec_set_shapes(ex, res->actual, &e), e);
    bp_exec_set_kernel(ex, dims_kernel, &sd);
    CHECK_OK(bp_exec_run(ex, NULL, &e), e);
    bp_exec_free(ex);
    return sd;
}

static void test_dynamic_shapes(void)
{
    bp_graph *g = NULL;
    bp_error e;
    CHECK_OK(bp_graph_parse_json(sym_graph, sizeof sym_graph - 1, "sym.json", NULL, &g, &e), e);
    if (!g) return;
    bp_config cfg;
    bp_config_init(&cfg);
    CHECK_OK(bp_config_add_buckets(&cfg, "S=128,256", &e), e);
    bp_planner *pl = NULL;
    CHECK_OK(bp_planner_new(g, &cfg, &pl, &e), e);
    if (!pl) { bp_graph_free(g); return; }
    const char *sym[] = {"S"};
    int64_t v100[] = {100}, v300[] = {300};
    bp_dyn_result res;
    /* a bucket plan: planned for S=128, the kernel computes on S=100 */
    CHECK_OK(bp_planner_get(pl, 1, sym, v100, &res, &e), e);
    CHECK(res.how == BP_DYN_REPLANNED && res.actual && res.actual != res.concrete);
    seen_dims sd = run_with(&res, 1);
    CHECK_MSG(sd.calls == 1 && sd.in_s == 100 && sd.out_s == 100 && sd.out_last == 8 && sd.out_dt == BP_DT_F16,
              "bucket plan: the kernel saw S=%lld/%lld, last %lld, dtype %d", (long long)sd.in_s, (long long)sd.out_s,
              (long long)sd.out_last, (int)sd.out_dt);
    sd = run_with(&res, 0);   /* without bp_exec_set_shapes: the plan's graph, the bucket's bound */
    CHECK_MSG(sd.in_s == 128, "bucket plan without set_shapes: S=%lld, not the bucket's 128", (long long)sd.in_s);
    /* the same bucket again, no rounding needed: actual is the concrete graph */
    int64_t v128[] = {128};
    CHECK_OK(bp_planner_get(pl, 1, sym, v128, &res, &e), e);
    CHECK(res.how == BP_DYN_MEMORY_HIT && res.actual == res.concrete);
    /* the conservative branch: a plan of the symbolic graph; S=300 is above every bucket */
    bp_planner_freeze(pl);
    CHECK_OK(bp_planner_get(pl, 1, sym, v300, &res, &e), e);
    CHECK(res.how == BP_DYN_RAN_CONSERVATIVE);
    sd = run_with(&res, 0);
    CHECK_MSG(sd.in_s == BP_DIM_SYMBOLIC, "conservative without set_shapes: S=%lld, not unbound", (long long)sd.in_s);
    sd = run_with(&res, 1);
    CHECK_MSG(sd.calls == 1 && sd.in_s == 300 && sd.out_s == 300, "conservative: the kernel saw S=%lld/%lld", (long long)sd.in_s,
              (long long)sd.out_s);
    /* a graph of other tensors is refused, naming the tensor */
    bp_graph *other = NULL;
    int64_t d2[] = {2, 3};
    int32_t id;
    REQUIRE((other = bp_graph_new("other", NULL)) != NULL);
    CHECK_OK(bp_graph_add_tensor_shape(other, "x", BP_DT_F32, 2, d2, NULL, &id, &e), e);
    bp_exec *ex = NULL;
    CHECK_OK(bp_exec_new(res.graph, res.plan, NULL, &ex, &e), e);
    if (ex) {
        CHECK(bp_exec_set_shapes(ex, other, &e) == BP_ERR_INVALID);
        CHECK_MSG(strstr(e.msg, "tensor \"x\" has rank 2 there and 3 here"), "%s", e.msg);
    }
    bp_exec_free(ex);
    bp_graph_free(other);
    bp_planner_free(pl);
    bp_graph_free(g);
}

/* ------------------------------------------------ the attribute API */

static void check_attrs(const bp_graph *g, const char *when)
{
    int32_t op = bp_graph_find_op(g, "act");
    CHECK_MSG(bp_graph_op_attr_count(g, op) == 6, "%s: %d attributes", when, bp_graph_op_attr_count(g, op));
    CHECK_MSG(bp_graph_op_attr_float(g, op, "alpha", 0) == 0.01f, "%s: alpha %.9g", when, (double)bp_graph_op_attr_float(g, op, "alpha", 0));
    CHECK(bp_graph_op_attr_int(g, op, "k", 0) == 3);
    CHECK(bp_graph_op_attr_string(g, op, "mode") && !strcmp(bp_graph_op_attr_string(g, op, "mode"), "fast"));
    const int64_t *iv = NULL;
    const float *fv = NULL;
    CHECK(bp_graph_op_attr_ints(g, op, "axes", &iv) == 2 && iv[0] == 0 && iv[1] == -1);
    CHECK(bp_graph_op_attr_floats(g, op, "w", &fv) == 3 && fv[0] == 1.5f && fv[1] == 2.0f && fv[2] == 0.1f);
    CHECK(bp_graph_op_attr_ints(g, op, "none", &iv) == 0);
    /* a typed getter of the wrong type gives the default */
    CHECK(bp_graph_op_attr_int(g, op, "alpha", -1) == -1 && bp_graph_op_attr_string(g, op, "k") == NULL);
    /* by index, in the order they were given */
    bp_attr a;
    CHECK(bp_graph_op_attr_get(g, op, 4, &a) == 1 && !strcmp(a.name, "w") && a.type == BP_ATTR_FLOATS && a.n == 3);
    CHECK(bp_graph_op_attr_get(g, op, 6, &a) == 0 && bp_graph_op_attr_name(g, op, 6) == NULL);
    CHECK(bp_graph_op_attr_type(g, op, 0) == BP_ATTR_FLOAT && bp_graph_op_attr_type(g, op, -1) == BP_ATTR_NONE);
    CHECK(bp_graph_op_attr_count(g, bp_graph_find_op(g, "proj")) == 0 && bp_graph_op_attr_count(g, 99) == 0);
}

static void expect_bad_json(const char *attrs, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"format\": \"bufplan-graph\", \"version\": 1, \"tensors\": [{\"name\": \"x\", \"bytes\": 4}, {\"name\": \"y\", \"bytes\": 4}],"
             " \"ops\": [{\"name\": \"r\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"attrs\": %s}], \"inputs\": [\"x\"]}",
             attrs);
    bp_graph *g = NULL;
    bp_error e;
    bp_status s = bp_graph_parse_json(text, strlen(text), "bad.json", NULL, &g, &e);
    CHECK_MSG(s == BP_ERR_INVALID && strstr(e.msg, want), "attrs %s: status %d, message \"%s\" (want \"%s\")", attrs, (int)s, e.msg, want);
    bp_graph_free(g);
}

static void test_attr_api(void)
{
    bp_graph *g = NULL;
    bp_error e;
    CHECK_OK(bp_graph_parse_json(sym_graph, sizeof sym_graph - 1, "sym.json", NULL, &g, &e), e);
    if (!g) return;
    check_attrs(g, "read");
    /* write -> read gives the same attributes, and the same text again */
    char p1[] = "/tmp/bp_attrs_XXXXXX";
    int fd = mkstemp(p1);
    REQUIRE(fd >= 0);
    close(fd);
    CHECK_OK(bp_graph_write_json(g, p1, &e), e);
    bp_graph *g2 = NULL;
    CHECK_OK(bp_graph_read_json(p1, NULL, &g2, &e), e);
    if (g2) check_attrs(g2, "round trip");
    /* a copy (the warm-up planner's binding) keeps them */
    bp_graph *g3 = NULL;
    const char *sym[] = {"S"};
    int64_t v[] = {5};
    CHECK_OK(bp_graph_clone_bind(g, 1, sym, v, &g3, &e), e);
    if (g3) check_attrs(g3, "clone");
    /* the builder refuses a name given twice, naming the op */
    bp_attr a;
    memset(&a, 0, sizeof a);
    a.name = "k";
    a.type = BP_ATTR_INT;
    CHECK(bp_graph_add_op_attr(g, bp_graph_find_op(g, "act"), &a, &e) == BP_ERR_INVALID);
    CHECK_MSG(strstr(e.msg, "op \"act\": attribute \"k\" is given twice"), "%s", e.msg);
    a.type = (bp_attr_type)99;
    CHECK(bp_graph_add_op_attr(g, 0, &a, &e) == BP_ERR_USAGE && strstr(e.msg, "unknown attribute type"));
    unlink(p1);
    bp_graph_free(g3);
    bp_graph_free(g2);
    bp_graph_free(g);
    expect_bad_json("[1]", "op \"r\": \"attrs\" must be an object {\"name\": value}, not an array");
    expect_bad_json("{\"a\": {\"b\": 1}}", "op \"r\": attribute \"a\" must be an integer, a number, a string or an array of numbers, not an object");
    expect_bad_json("{\"a\": [1, \"x\"]}", "op \"r\": attribute \"a\" must be an integer");
    expect_bad_json("{\"a\": true}", "attribute \"a\" must be");
}

int main(void)
{
    test_attr_api();
    test_dynamic_shapes();
    test_onnx_conv();
    return check_status();
}
