/* Engine profiles and kernel workspaces: the built-in profiles round-trip
 * (write, parse, write again: same text, same profile); malformed profiles
 * are rejected naming the key (an unknown key with its nearest one, a
 * malformed op type, a pair out of range, an in-place claim whose sizes do
 * not fit the graph); "default" plans exactly as no profile; "strict" and
 * "ort-cpu" make what they say; workspaces are placed at their op's step
 * only, reach the kernel, survive the graph and plan JSON, and a plan that
 * lays one over a live tensor is rejected; the workspace formulas give
 * im2col for a 3x3 Conv and nothing for a 1x1; and on thousands of random
 * graphs with random profiles and workspaces the verifier accepts every plan
 * and rejects it mutated (a workspace moved over a live tensor, the plan
 * claimed for a profile that forbids its in-place writes), and planned runs
 * with digest kernels match safe runs on 1, 2 and 4 threads. */
#define _DEFAULT_SOURCE
#include "exec_util.h"
#include "sched_testutil.h"

#include <stdio.h>

/* Text of bp_engine_write_json_file (malloc'd). */
static char *engine_text(const bp_engine *e)
{
    char *text = NULL;
    size_t len = 0;
    bp_error err;
    FILE *f = open_memstream(&text, &len);
    bool ok = f && bp_engine_write_json_file(e, f, &err) == BP_OK;
    if (f) fclose(f);
    CHECK_MSG(ok, "writing profile \"%s\"", bp_engine_name(e));
    return text;
}

static void test_roundtrip(void)
{
    for (const char *const *b = bp_engine_builtins(); *b; b++) {
        bp_engine *e = NULL, *r = NULL;
        bp_error err;
        CHECK_OK(bp_engine_builtin(*b, NULL, &e, &err), err);
        REQUIRE(e);
        char *t1 = engine_text(e);
        CHECK_OK(bp_engine_parse_json(t1, strlen(t1), "rt.json", NULL, &r, &err), err);
        REQUIRE(r);
        CHECK_MSG(bp_engine_equal(e, r), "%s: the parsed profile differs", *b);
        CHECK(bp_engine_digest(e) == bp_engine_digest(r));
        char *t2 = engine_text(r);
        CHECK_MSG(!strcmp(t1, t2), "%s: write, parse, write gives another text", *b);
        CHECK(!strcmp(bp_engine_name(r), *b));
        free(t1);
        free(t2);
        bp_engine_free(e);
        bp_engine_free(r);
    }
    bp_engine *d, *s;
    bp_error err;
    CHECK_OK(bp_engine_builtin("default", NULL, &d, &err), err);
    CHECK_OK(bp_engine_builtin("strict", NULL, &s, &err), err);
    CHECK(!bp_engine_equal(d, s) && bp_engine_digest(d) != bp_engine_digest(s));
    CHECK(bp_engine_graph_hints(d) && !bp_engine_graph_hints(s) && !bp_engine_concat_inplace(s));
    bp_engine_free(d);
    bp_engine_free(s);
    CHECK(bp_engine_builtin("tensorrt", NULL, &d, &err) == BP_ERR_USAGE && strstr(err.msg, "tensorrt"));
}

/* Parses text; expects BP_ERR_INVALID with every word of want in the message. */
static void expect_bad(const char *text, const char *w1, const char *w2)
{
    bp_engine *e = NULL;
    bp_error err;
    bp_status s = bp_engine_parse_json(text, strlen(text), "bad.json", NULL, &e, &err);
    CHECK_MSG(s == BP_ERR_INVALID && strstr(err.msg, w1) && (!w2 || strstr(err.msg, w2)) && strstr(err.msg, "bad.json"),
              "%s: status %d, message \"%s\"", text, (int)s, s ? err.msg : "");
    CHECK(!e);
    bp_engine_free(e);
}

#define HDR "{\"format\": \"bufplan-engine\", \"version\": 1, "

static void test_malformed(void)
{
    expect_bad(HDR "\"ops\": {\"Relu\": {\"inplce\": [[0, 0]]}}}", "\"inplce\"", "did you mean \"inplace\"");
    expect_bad(HDR "\"concat_in_place\": true}", "\"concat_in_place\"", "did you mean \"concat_inplace\"");
    expect_bad(HDR "\"ops\": {\"Re lu\": {}}}", "\"Re lu\"", "not an op type");
    expect_bad(HDR "\"ops\": {\"9Relu\": {}}}", "\"9Relu\"", "not an op type");
    expect_bad(HDR "\"ops\": {\"Relu\": {\"views\": [[0, \"*\"]]}}}", "\"views\"[0]", "Relu");
    expect_bad(HDR "\"ops\": {\"Relu\": {\"inplace\": [[-1, 0]]}}}", "\"inplace\"[0]", NULL);
    expect_bad(HDR "\"ops\": {\"Relu\": {\"inplace\": [0, 0]}}}", "\"inplace\"[0]", NULL);
    expect_bad(HDR "\"ops\": {\"Relu\": {\"strided\": 1}}}", "\"strided\"", "true or false");
    expect_bad(HDR "\"ops\": [\"Relu\"]}", "\"ops\"", NULL);
    expect_bad("{\"format\": \"bufplan-graph\"}", "\"format\"", "bufplan-engine");
    /* an in-place claim that does not fit the graph: at plan time, naming the type and the op */
    const char *txt = HDR "\"name\": \"mine\", \"ops\": {\"Conv\": {\"inplace\": [[0, 0]]}}}";
    bp_engine *e = NULL;
    bp_error err;
    CHECK_OK(bp_engine_parse_json(txt, strlen(txt), "mine.json", NULL, &e, &err), err);
    REQUIRE(e);
    bp_graph *g = bp_graph_new("fit", NULL);
    int32_t x, y, z;
    bp_graph_add_tensor(g, "x", 1024, &x, &err);
    bp_graph_add_tensor(g, "y", 2048, &y, &err);
    bp_graph_add_tensor(g, "z", 2048, &z, &err);
    bp_graph_mark(g, x, BP_TENSOR_INPUT, &err);
    bp_graph_mark(g, z, BP_TENSOR_OUTPUT, &err);
    bp_graph_add_op(g, "grow", "Conv", 1, &x, 1, &y, 1, NULL, &err);
    bp_graph_add_op(g, "last", "Relu", 1, &y, 1, &z, 1, NULL, &err);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.engine = e;
    bp_plan *p = NULL;
    bp_status s = bp_plan_graph(g, &po, &p, &err);
    CHECK_MSG(s == BP_ERR_INVALID && strstr(err.msg, "\"mine\"") && strstr(err.msg, "\"Conv\"") && strstr(err.msg, "\"inplace\"") &&
                  strstr(err.msg, "\"grow\""),
              "status %d: %s", (int)s, err.msg);
    CHECK(!p);
    bp_graph_free(g);
    bp_engine_free(e);
}

/* x -> Reshape -> Relu -> Add(., w) -> Dropout -> Sigmoid -> out, with a
 * hint on Sigmoid. */
static bp_graph *small_graph(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("small", NULL);
    const char *names[] = {"x", "w", "r", "a", "b", "d", "y", "out"};
    int32_t t[8];
    for (int i = 0; i < 8; i++) CHECK_OK(bp_graph_add_tensor_shape(g, names[i], BP_DT_F32, 1, (int64_t[]){256}, NULL, &t[i], &err), err);
    bp_graph_mark(g, t[0], BP_TENSOR_INPUT, &err);
    bp_graph_mark(g, t[1], BP_TENSOR_WEIGHT, &err);
    bp_graph_mark(g, t[7], BP_TENSOR_OUTPUT, &err);
    int32_t op;
    bp_graph_add_op(g, "conv", "Conv", 1, &t[0], 1, &t[2], 1, NULL, &err);
    bp_graph_add_op(g, "reshape", "Reshape", 1, &t[2], 1, &t[3], 1, NULL, &err);
    bp_graph_add_op(g, "relu", "Relu", 1, &t[3], 1, &t[4], 1, NULL, &err);
    int32_t add_in[2] = {t[4], t[1]};
    bp_graph_add_op(g, "add", "Add", 2, add_in, 1, &t[5], 1, NULL, &err);
    bp_graph_add_op(g, "drop", "Dropout", 1, &t[5], 1, &t[6], 1, NULL, &err);
    bp_graph_add_op(g, "sig", "Sigmoid", 1, &t[6], 1, &t[7], 1, &op, &err);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    return g;
}

static bp_plan *plan_with(const bp_graph *g, const char *engine, bp_engine **keep)
{
    bp_error err;
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = BP_SCHED_GIVEN;
    *keep = NULL;
    if (engine) CHECK_OK(bp_engine_builtin(engine, NULL, keep, &err), err);
    po.engine = *keep;
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, &po, &p, &err), err);
    REQUIRE(p);
    CHECK_OK(bp_verify(g, p, &err), err);
    return p;
}

static void test_builtins_behave(void)
{
    bp_graph *g = small_graph();
    int32_t r = bp_graph_find_tensor(g, "r"), a = bp_graph_find_tensor(g, "a"), b = bp_graph_find_tensor(g, "b"),
            d = bp_graph_find_tensor(g, "d"), y = bp_graph_find_tensor(g, "y");
    bp_engine *e;
    bp_plan *p = plan_with(g, NULL, &e);
    /* default: Reshape and Dropout views, Relu and Add in place */
    CHECK(bp_plan_tensor(p, a)->alias_of == r && bp_plan_tensor(p, b)->alias_of == r && bp_plan_tensor(p, d)->alias_of == r);
    CHECK(bp_plan_tensor(p, y)->alias_of == r);
    CHECK(bp_plan_engine(p) == NULL);
    bp_plan *q = plan_with(g, "default", &e);
    CHECK(bp_plan_engine(q) == NULL);   /* the default needs no copy */
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++)
        CHECK(!memcmp(bp_plan_tensor(p, t), bp_plan_tensor(q, t), sizeof(bp_tensor_plan)));
    bp_plan_free(q);
    bp_engine_free(e);
    bp_plan_free(p);
    /* strict: the Reshape view only */
    p = plan_with(g, "strict", &e);
    CHECK(bp_plan_tensor(p, a)->alias_of == r);
    CHECK(bp_plan_tensor(p, b)->alias_of < 0 && bp_plan_tensor(p, d)->alias_of < 0 && bp_plan_tensor(p, y)->alias_of < 0);
    CHECK(bp_plan_engine(p) && !strcmp(bp_engine_name(bp_plan_engine(p)), "strict"));
    bp_plan_free(p);
    bp_engine_free(e);   /* the plan kept its own copy: freed first, verified after */
    /* ort-cpu: Relu in place over the Reshape's storage, Add not, Dropout a view */
    p = plan_with(g, "ort-cpu", &e);
    CHECK(bp_plan_tensor(p, a)->alias_of == r && bp_plan_tensor(p, b)->alias_of == r);
    CHECK(bp_plan_tensor(p, d)->alias_of < 0 && bp_plan_tensor(p, y)->alias_of == d);
    bp_engine_free(e);
    bp_error err;
    CHECK_OK(bp_verify(g, p, &err), err);
    /* the plan JSON carries the profile: read back, it verifies (and names it) */
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK_OK(bp_plan_write_json_file(p, g, f, &err), err);
    fclose(f);
    CHECK(strstr(buf, "\"engine\"") && strstr(buf, "ort-cpu"));
    bp_plan *rp = NULL;
    CHECK_OK(bp_plan_parse_json(g, buf, n, "p.json", &rp, &err), err);
    if (rp) {
        CHECK_OK(bp_verify(g, rp, &err), err);
        CHECK(bp_plan_engine(rp) && !strcmp(bp_engine_name(bp_plan_engine(rp)), "ort-cpu"));
        /* the same plan claimed for strict: its in-place write is rejected */
        bp_engine *s;
        CHECK_OK(bp_engine_builtin("strict", NULL, &s, &err), err);
        bp_engine_free(rp->engine);
        rp->engine = s;
        CHECK(bp_verify(g, rp, &err) == BP_ERR_VERIFY && strstr(err.msg, "engine profile \"strict\"") && strstr(err.msg, "\"relu\""));
        bp_plan_free(rp);
    }
    free(buf);
    bp_plan_free(p);
    bp_graph_free(g);
}

/* A kernel that checks its workspaces and writes them. */
static int ws_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    int *seen = user;
    for (int i = 0; i < c->n_ws; i++) {
        if (!c->ws[i].data || c->ws[i].bytes == 0) { snprintf(err->msg, sizeof err->msg, "workspace %d is empty", i); return 1; }
        memset(c->ws[i].data, 0xab, (size_t)c->ws[i].bytes);
        (*seen)++;
    }
    return bp_digest_kernel(NULL, c, err);
}

static void test_workspaces(void)
{
    bp_graph *g = small_graph();
    bp_error err;
    int32_t conv = bp_graph_find_op(g, "conv"), add = bp_graph_find_op(g, "add");
    uint64_t wb[2] = {4096, 100};
    CHECK_OK(bp_graph_set_workspace(g, conv, 2, wb, &err), err);
    CHECK_OK(bp_graph_set_workspace(g, add, 1, wb, &err), err);
    CHECK(bp_graph_set_workspace(g, add, 1, wb, &err) == BP_ERR_INVALID && strstr(err.msg, "already has workspaces"));
    CHECK(bp_graph_set_workspace(g, add, 0, wb, &err) == BP_ERR_USAGE);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    CHECK(bp_graph_op_n_workspaces(g, conv) == 2 && bp_graph_op_n_outputs(g, conv) == 3);
    int32_t w0 = bp_graph_find_tensor(g, "conv#ws0"), w2 = bp_graph_find_tensor(g, "add#ws0");
    REQUIRE(w0 >= 0 && w2 >= 0);
    CHECK(bp_graph_tensor_is_workspace(g, w0) && bp_graph_tensor_bytes(g, w0) == 4096);
    bp_engine *e;
    bp_plan *p = plan_with(g, NULL, &e);
    const int32_t *order = bp_plan_schedule(p);
    int32_t conv_step = -1;
    for (int32_t s = 0; s < bp_plan_n_steps(p); s++) if (order[s] == conv) conv_step = s;
    const bp_tensor_plan *tp = bp_plan_tensor(p, w0);
    CHECK(tp->kind == BP_KIND_WORKSPACE && tp->first == conv_step && tp->last == conv_step && tp->offset != BP_NO_OFFSET);
    CHECK(!strcmp(bp_tensor_kind_name(BP_KIND_WORKSPACE), "workspace"));
    /* the kernel gets them */
    bp_exec *ex = NULL;
    CHECK_OK(bp_exec_new(g, p, NULL, &ex, &err), err);
    int seen = 0;
    if (ex) {
        bp_exec_set_kernel(ex, ws_kernel, &seen);
        CHECK_OK(bp_exec_run(ex, NULL, &err), err);
        CHECK_MSG(seen == 3, "the kernels saw %d workspaces", seen);
        bp_exec_free(ex);
    }
    /* graph JSON keeps them */
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK_OK(bp_graph_write_json_file(g, f, &err), err);
    fclose(f);
    CHECK(strstr(buf, "\"workspace\": [4096, 100]") && strstr(buf, "\"workspace\": [4096]") && !strstr(buf, "conv#ws0"));
    bp_graph *h = NULL;
    CHECK_OK(bp_graph_parse_json(buf, n, "g.json", NULL, &h, &err), err);
    if (h) {
        int32_t hw = bp_graph_find_tensor(h, "conv#ws1");
        CHECK(hw >= 0 && bp_graph_tensor_is_workspace(h, hw) && bp_graph_tensor_bytes(h, hw) == 100);
        bp_graph_free(h);
    }
    free(buf);
    /* a plan JSON keeps the kind; read back it verifies */
    buf = NULL;
    f = open_memstream(&buf, &n);
    CHECK_OK(bp_plan_write_json_file(p, g, f, &err), err);
    fclose(f);
    CHECK(strstr(buf, "\"workspace\""));
    bp_plan *rp = NULL;
    CHECK_OK(bp_plan_parse_json(g, buf, n, "p.json", &rp, &err), err);
    if (rp) { CHECK_OK(bp_verify(g, rp, &err), err); bp_plan_free(rp); }
    free(buf);
    /* a workspace laid over its op's input: rejected */
    int32_t x = bp_graph_find_tensor(g, "r");
    bp_plan *bad = NULL;
    CHECK_OK(bp_plan_graph_order(g, NULL, order, &bad, &err), err);
    if (bad) {
        int32_t add_in = bp_graph_find_tensor(g, "b");
        bad->tp[w2].offset = bad->tp[add_in].alias_of >= 0 ? bad->tp[bad->tp[add_in].alias_of].offset : bad->tp[add_in].offset;
        CHECK_MSG(bp_verify(g, bad, &err) == BP_ERR_VERIFY && strstr(err.msg, "add#ws0") && strstr(err.msg, "overlap"), "%s", err.msg);
        bp_plan_free(bad);
    }
    (void)x;
    /* reading a workspace is refused */
    int32_t ws_read = w0, out2;
    bp_graph_add_tensor(g, "late", 64, &out2, &err);
    bp_graph_add_op(g, "reader", "Relu", 1, &ws_read, 1, &out2, 1, NULL, &err);
    CHECK(bp_graph_finalize(g, &err) == BP_ERR_INVALID && strstr(err.msg, "\"reader\"") && strstr(err.msg, "workspace"));
    bp_plan_free(p);
    bp_graph_free(g);
}

/* A workspace formula over the inputs' and outputs' dims: MLAS's Conv working
 * buffer (docs/design/engines.md), as a profile file would give it: one
 * 128x128 segment for a 3x3 or strided 1x1 conv with fewer filters than
 * output pixels, nothing for 1x1 stride 1, the full im2col when the filters
 * outnumber the output pixels, max(K, F) x S for a grouped conv.  The
 * built-in ort-cpu gives Conv none. */
static const char mlas_conv_ws[] =
    "max(min(in1[2] * in1[3] - 1, 1), min(max(in0[2] * in0[3] - out0[2] * out0[3], 0), 1))"
    " * (min(max(out0[1] / (in0[1] / in1[1]) - out0[2] * out0[3], 0), 1) * in1[1] * in1[2] * in1[3] * out0[2] * out0[3]"
    " + (1 - min(max(out0[1] / (in0[1] / in1[1]) - out0[2] * out0[3], 0), 1))"
    " * (min(max(in0[1] / in1[1] - 1, 0), 1)"
    " * max(max(in1[1] * in1[2] * in1[3], out0[1] / (in0[1] / in1[1])) * out0[2] * out0[3], 16384)"
    " + (1 - min(max(in0[1] / in1[1] - 1, 0), 1)) * 16384))";

static void test_formulas(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("convs", NULL);
    int32_t x, w3, w1, y3, y1, y2, wb, yb, wd, yd;
    bp_graph_add_tensor_shape(g, "x", BP_DT_F32, 4, (int64_t[]){1, 8, 16, 16}, NULL, &x, &err);
    bp_graph_add_tensor_shape(g, "w3", BP_DT_F32, 4, (int64_t[]){4, 8, 3, 3}, NULL, &w3, &err);
    bp_graph_add_tensor_shape(g, "w1", BP_DT_F32, 4, (int64_t[]){4, 4, 1, 1}, NULL, &w1, &err);
    bp_graph_add_tensor_shape(g, "y3", BP_DT_F32, 4, (int64_t[]){1, 4, 14, 14}, NULL, &y3, &err);
    bp_graph_add_tensor_shape(g, "y1", BP_DT_F32, 4, (int64_t[]){1, 4, 14, 14}, NULL, &y1, &err);
    bp_graph_add_tensor_shape(g, "y2", BP_DT_F32, 4, (int64_t[]){1, 4, 7, 7}, NULL, &y2, &err);
    bp_graph_add_tensor_shape(g, "wb", BP_DT_F32, 4, (int64_t[]){64, 4, 3, 3}, NULL, &wb, &err);
    bp_graph_add_tensor_shape(g, "yb", BP_DT_F32, 4, (int64_t[]){1, 64, 5, 5}, NULL, &yb, &err);
    bp_graph_add_tensor_shape(g, "wd", BP_DT_F32, 4, (int64_t[]){64, 1, 3, 3}, NULL, &wd, &err);
    bp_graph_add_tensor_shape(g, "yd", BP_DT_F32, 4, (int64_t[]){1, 64, 3, 3}, NULL, &yd, &err);
    bp_graph_mark(g, x, BP_TENSOR_INPUT, &err);
    bp_graph_mark(g, w3, BP_TENSOR_WEIGHT, &err);
    bp_graph_mark(g, w1, BP_TENSOR_WEIGHT, &err);
    bp_graph_mark(g, wb, BP_TENSOR_WEIGHT, &err);
    bp_graph_mark(g, wd, BP_TENSOR_WEIGHT, &err);
    bp_graph_mark(g, yd, BP_TENSOR_OUTPUT, &err);
    int32_t i3[2] = {x, w3}, i1[2] = {y3, w1}, i2[2] = {y1, w1}, ib[2] = {y2, wb}, id[2] = {yb, wd};
    bp_graph_add_op(g, "c3", "Conv", 2, i3, 1, &y3, 1, NULL, &err);
    bp_graph_add_op(g, "c1", "Conv", 2, i1, 1, &y1, 1, NULL, &err);
    bp_graph_add_op(g, "c1s2", "Conv", 2, i2, 1, &y2, 1, NULL, &err);
    bp_graph_add_op(g, "cbig", "Conv", 2, ib, 1, &yb, 1, NULL, &err);
    bp_graph_add_op(g, "cdw", "Conv", 2, id, 1, &yd, 1, NULL, &err);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    bp_engine *e;
    CHECK_OK(bp_engine_builtin("ort-cpu", NULL, &e, &err), err);
    CHECK_OK(bp_engine_apply_workspaces(e, g, &err), err);
    CHECK(bp_graph_op_n_workspaces(g, bp_graph_find_op(g, "c3")) == 0);
    bp_engine_free(e);
    CHECK_OK(bp_engine_new("mlas", 0, 1, NULL, &e, &err), err);
    bp_engine_op conv = {.type = "Conv", .workspace = mlas_conv_ws};
    CHECK_OK(bp_engine_add_op(e, &conv, &err), err);
    CHECK_OK(bp_engine_apply_workspaces(e, g, &err), err);
    CHECK(bp_graph_op_n_workspaces(g, bp_graph_find_op(g, "c3")) == 1);
    int32_t ws = bp_graph_find_tensor(g, "c3#ws0");
    CHECK_MSG(ws >= 0 && bp_graph_tensor_bytes(g, ws) == 128ull * 128 * 4, "segment %llu",
              ws >= 0 ? (unsigned long long)bp_graph_tensor_bytes(g, ws) : 0ull);
    CHECK(bp_graph_op_n_workspaces(g, bp_graph_find_op(g, "c1")) == 0);
    ws = bp_graph_find_tensor(g, "c1s2#ws0");   /* 1x1 with stride 2 gathers its pixels */
    CHECK(ws >= 0 && bp_graph_tensor_bytes(g, ws) == 128ull * 128 * 4);
    ws = bp_graph_find_tensor(g, "cbig#ws0");   /* 64 filters > 25 pixels: the full im2col */
    CHECK(ws >= 0 && bp_graph_tensor_bytes(g, ws) == 4ull * 3 * 3 * 5 * 5 * 4);
    ws = bp_graph_find_tensor(g, "cdw#ws0");    /* depthwise: 64 groups, max(K, F) x S < one segment */
    CHECK(ws >= 0 && bp_graph_tensor_bytes(g, ws) == 128ull * 128 * 4);
    /* twice changes nothing */
    int32_t nt = bp_graph_n_tensors(g);
    CHECK_OK(bp_engine_apply_workspaces(e, g, &err), err);
    CHECK(bp_graph_n_tensors(g) == nt);
    bp_engine_free(e);
    /* a malformed formula names the type */
    const char *txt = HDR "\"ops\": {\"Conv\": {\"workspace\": \"in1[1] * \"}}}";
    CHECK_OK(bp_engine_parse_json(txt, strlen(txt), "f.json", NULL, &e, &err), err);
    CHECK(bp_engine_apply_workspaces(e, g, &err) == BP_ERR_INVALID && strstr(err.msg, "\"Conv\"") && strstr(err.msg, "workspace"));
    bp_engine_free(e);
    bp_graph_free(g);
}

/* A random profile over the random graphs' op types. */
static bp_engine *random_engine(unsigned long long *rs)
{
    static const char *const types[] = {"Conv", "Add", "Relu", "Reshape", "Concat", "Mul", "aten.slice", "MatMul", "Sigmoid"};
    bp_engine *e;
    bp_error err;
    CHECK_OK(bp_engine_new("random", 0, (int)(test_rand(rs) % 2), NULL, &e, &err), err);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (test_rand(rs) % 3 == 0) continue;
        bp_engine_pair v[2], ip[2];
        bp_engine_op r = {.type = types[i], .views = v, .inplace = ip};
        if (test_rand(rs) % 3 == 0) v[r.n_views++] = (bp_engine_pair){(int)(test_rand(rs) % 2), (int)(test_rand(rs) % 2)};
        if (test_rand(rs) % 2) ip[r.n_inplace++] = (bp_engine_pair){0, BP_ENGINE_ANY_INPUT};
        r.same_dtype = (int)(test_rand(rs) % 2);
        r.strided = (int)(test_rand(rs) % 2);
        CHECK_OK(bp_engine_add_op(e, &r, &err), err);
    }
    return e;
}

/* Moves a workspace of the plan over a tensor live at its step; true when one could be. */
static bool move_workspace(const bp_graph *g, bp_plan *p)
{
    for (int32_t w = 0; w < p->n_t; w++) {
        if (p->tp[w].kind != BP_KIND_WORKSPACE || !p->tp[w].bytes) continue;
        int32_t op = bp_graph_tensor_producer(g, w);
        for (int i = 0; i < bp_graph_op_n_inputs(g, op); i++) {
            int32_t t = bp_graph_op_input(g, op, i);
            int32_t r = p->tp[t].alias_of >= 0 ? p->tp[t].alias_of : t;
            if (p->tp[r].offset == BP_NO_OFFSET || !bp_graph_tensor_bytes(g, r)) continue;
            p->tp[w].offset = p->tp[r].offset;
            return true;
        }
    }
    return false;
}

static void test_random(void)
{
    unsigned long long rs = 0x5eed;
    int graphs = 0, rejected_ws = 0, rejected_ip = 0, runs = 0, ws_total = 0;
    bp_engine *strict;
    bp_error err;
    CHECK_OK(bp_engine_builtin("strict", NULL, &strict, &err), err);
    for (int it = 0; it < 2000; it++) {
        rg_opts ro = {4 + (int)(test_rand(&rs) % 24), 0, 1};
        bp_graph *g = rg_make(&rs, &ro);
        if (!g) continue;
        for (int32_t op = 0; op < bp_graph_n_ops(g); op++)
            if (test_rand(&rs) % 4 == 0) {
                uint64_t b[2] = {64 + test_rand(&rs) % 4096, test_rand(&rs) % 512};
                CHECK_OK(bp_graph_set_workspace(g, op, 1 + (int)(test_rand(&rs) % 2), b, &err), err);
                ws_total++;
            }
        CHECK_OK(bp_graph_finalize(g, &err), err);
        bp_engine *e = random_engine(&rs);
        bp_plan_options po;
        sched_random_opts(&rs, &po);
        po.engine = e;
        po.sched = (test_rand(&rs) % 2) ? BP_SCHED_GIVEN : BP_SCHED_LIST;
        bp_plan *p = NULL;
        bp_status s = bp_plan_graph(g, &po, &p, &err);
        CHECK_MSG(s == BP_OK, "graph %d: %s", it, err.msg);
        if (s) { bp_engine_free(e); bp_graph_free(g); continue; }
        graphs++;
        CHECK_MSG(bp_verify(g, p, &err) == BP_OK, "graph %d: %s", it, err.msg);
        /* safe (the reference) and planned on 1, 2 and 4 threads */
        bp_exec *safe = eu_run(g, p, BP_EXEC_SAFE, 1, 0, 0);
        for (int th = 1; th <= 4 && safe && it % 2 == 0; th *= 2) {
            bp_exec *pl = eu_run(g, p, BP_EXEC_PLANNED, th, 0, 0);
            if (pl) CHECK_MSG(eu_diff_outputs(g, pl, safe) == 0, "graph %d, %d threads: planned differs from safe", it, th);
            bp_exec_free(pl);
            runs++;
        }
        bp_exec_free(safe);
        /* mutated: a workspace over a live tensor */
        bp_plan *m = NULL;
        CHECK_OK(bp_plan_graph_order(g, &po, bp_plan_schedule(p), &m, &err), err);
        if (m && move_workspace(g, m)) {
            CHECK_MSG(bp_verify(g, m, &err) == BP_ERR_VERIFY, "graph %d: a workspace over a live tensor passed", it);
            rejected_ws++;
        }
        bp_plan_free(m);
        /* mutated: claimed for strict, an in-place write it made is refused */
        bool has_ip = false;
        for (int32_t t = 0; t < p->n_t; t++)
            if (p->tp[t].alias_of >= 0 && bp_graph_tensor_view_of(g, t) < 0 && bp_graph_tensor_producer(g, t) >= 0) {
                int32_t op = bp_graph_tensor_producer(g, t);
                bool view = false;
                for (int i = 0; i < bp_graph_op_n_inputs(g, op); i++) {
                    int32_t in = bp_graph_op_input(g, op, i);
                    if ((p->tp[in].alias_of >= 0 ? p->tp[in].alias_of : in) == p->tp[t].alias_of &&
                        !strcmp(bp_graph_op_type(g, op), "Reshape"))
                        view = true;
                }
                if (!view) has_ip = true;
            }
        if (has_ip) {
            bp_engine *own = p->engine;
            CHECK_OK(bp__engine_copy(strict, &p->alloc, &p->engine, &err), err);
            bp_status vs = bp_verify(g, p, &err);
            CHECK_MSG(vs == BP_ERR_VERIFY, "graph %d: its in-place writes passed for strict", it);
            rejected_ip += vs == BP_ERR_VERIFY;
            bp_engine_free(p->engine);
            p->engine = own;
        }
        bp_plan_free(p);
        bp_engine_free(e);
        bp_graph_free(g);
    }
    bp_engine_free(strict);
    fprintf(stderr, "random profiles: %d graphs (%d workspaced ops), %d planned runs, %d workspace and %d in-place mutations rejected\n",
            graphs, ws_total, runs, rejected_ws, rejected_ip);
    CHECK(graphs > 1500 && rejected_ws > 300 && rejected_ip > 100 && runs > 2000);
}

/* The plan cache keys a plan by its profile: the default keeps its key, the
 * others get their own; a hit comes back with the profile. */
static void test_cache_key(void)
{
    bp_graph *g = small_graph();
    bp_error err;
    bp_engine *d, *s;
    CHECK_OK(bp_engine_builtin("default", NULL, &d, &err), err);
    CHECK_OK(bp_engine_builtin("strict", NULL, &s, &err), err);
    bp_plan_options po;
    bp_plan_options_init(&po);
    bp_cache_key k0, k1, k2;
    CHECK_OK(bp_cache_key_make(g, NULL, &po, &k0, &err), err);
    po.engine = d;
    CHECK_OK(bp_cache_key_make(g, NULL, &po, &k1, &err), err);
    po.engine = s;
    CHECK_OK(bp_cache_key_make(g, NULL, &po, &k2, &err), err);
    CHECK(!strcmp(k0.file, k1.file) && strcmp(k0.file, k2.file) && strstr(k2.options, "engine="));
    char dir[] = "/tmp/bp_engine_cacheXXXXXX";
    REQUIRE(mkdtemp(dir));
    bp_plan_cache *c = NULL;
    CHECK_OK(bp_plan_cache_open(dir, stderr, &c, &err), err);
    bp_plan *p = NULL;
    int hit = 0;
    for (int i = 0; i < 2 && c; i++) {
        CHECK_OK(bp_plan_cache_plan(c, g, NULL, &po, &p, &hit, &err), err);
        CHECK(hit == i && p && bp_plan_engine(p) && !strcmp(bp_engine_name(bp_plan_engine(p)), "strict"));
        if (p) CHECK_OK(bp_verify(g, p, &err), err);
        bp_plan_free(p);
        p = NULL;
    }
    bp_plan_cache_close(c);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    bp_engine_free(d);
    bp_engine_free(s);
    bp_graph_free(g);
}

int main(void)
{
    test_cache_key();
    test_roundtrip();
    test_malformed();
    test_builtins_behave();
    test_workspaces();
    test_formulas();
    test_random();
    return check_status();
}
