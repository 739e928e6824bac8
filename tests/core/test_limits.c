/* Resource limits (include/bufplan_limits.h): each limit stops its input with
 * BP_ERR_LIMIT and a message naming the limit, and raising it lets the same
 * input through.  Nesting far beyond the limits (JSON, protobuf) must fail
 * cleanly, never overflow the stack. */
#define _GNU_SOURCE
#include <bufplan.h>
#include <bufplan_limits.h>
#include "check.h"
#include "onnx_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#define EXPECT_LIMIT(expr, err, key) do { bp_status s__ = (expr); \
    CHECK_MSG(s__ == BP_ERR_LIMIT, "%s returned %d (%s)", #expr, (int)s__, (err).msg); \
    CHECK_MSG(strstr((err).msg, key) != NULL, "message \"%s\" lacks \"%s\"", (err).msg, key); } while (0)

static void test_defaults(void)
{
    bp_limits l;
    bp_limits_init(&l);
    /* the values SECURITY.md documents */
    CHECK(l.max_tensors == (UINT64_C(1) << 26) && l.max_ops == (UINT64_C(1) << 26));
    CHECK(l.max_name_len == 4096 && l.max_rank == 64);
    CHECK(l.max_json_depth == 64 && l.max_proto_depth == 64);
    CHECK(l.max_tensor_bytes == (uint64_t)INT64_MAX && l.max_total_bytes == (UINT64_C(1) << 56));
    CHECK(l.max_file_bytes == (UINT64_C(1) << 32));
    bp_graph *g = bp_graph_new("d", NULL);
    REQUIRE(g);
    bp_limits got;
    bp_graph_get_limits(g, &got);
    CHECK(got.max_tensors == l.max_tensors && got.max_ops == l.max_ops && got.max_name_len == l.max_name_len &&
          got.max_rank == l.max_rank && got.max_json_depth == l.max_json_depth && got.max_proto_depth == l.max_proto_depth &&
          got.max_tensor_bytes == l.max_tensor_bytes && got.max_total_bytes == l.max_total_bytes &&
          got.max_file_bytes == l.max_file_bytes);
    bp_error err;
    l.max_rank = 256;
    CHECK(bp_graph_set_limits(g, &l, &err) == BP_ERR_USAGE);
    CHECK(bp_graph_set_limits(g, NULL, &err) == BP_ERR_USAGE);
    bp_graph_free(g);
}

static void test_builder(void)
{
    bp_error err;
    bp_limits l;
    bp_limits_init(&l);
    l.max_tensors = 3;
    l.max_ops = 1;
    bp_graph *g = bp_graph_new("b", NULL);
    REQUIRE(g && bp_graph_set_limits(g, &l, &err) == BP_OK);
    int32_t t[4];
    CHECK_OK(bp_graph_add_tensor(g, "a", 4, &t[0], &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "b", 4, &t[1], &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "c", 4, &t[2], &err), err);
    EXPECT_LIMIT(bp_graph_add_tensor(g, "d", 4, &t[3], &err), err, "max_tensors");
    l.max_tensors = 4;
    CHECK_OK(bp_graph_set_limits(g, &l, &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "d", 4, &t[3], &err), err);
    CHECK_OK(bp_graph_add_op(g, "op1", "Relu", 1, &t[0], 1, &t[1], 1, NULL, &err), err);
    EXPECT_LIMIT(bp_graph_add_op(g, "op2", "Relu", 1, &t[1], 1, &t[2], 1, NULL, &err), err, "max_ops");
    CHECK(bp_graph_n_ops(g) == 1 && bp_graph_n_tensors(g) == 4);

    /* names */
    char *longname = malloc(5000);
    REQUIRE(longname);
    memset(longname, 'n', 4097);
    longname[4097] = 0;
    l.max_tensors = 100;
    l.max_ops = 100;
    CHECK_OK(bp_graph_set_limits(g, &l, &err), err);
    EXPECT_LIMIT(bp_graph_add_tensor(g, longname, 1, NULL, &err), err, "max_name_len");
    EXPECT_LIMIT(bp_graph_add_op(g, longname, "Relu", 1, &t[1], 1, &t[2], 1, NULL, &err), err, "max_name_len");
    EXPECT_LIMIT(bp_graph_add_op(g, "op2", longname, 1, &t[1], 1, &t[2], 1, NULL, &err), err, "max_name_len");
    longname[4096] = 0;
    CHECK_OK(bp_graph_add_tensor(g, longname, 1, NULL, &err), err);   /* exactly the limit */

    /* rank and bytes */
    int64_t dims[100];
    for (int i = 0; i < 100; i++) dims[i] = 1;
    EXPECT_LIMIT(bp_graph_add_tensor_shape(g, "r65", BP_DT_F32, 65, dims, NULL, NULL, &err), err, "max_rank");
    CHECK_OK(bp_graph_add_tensor_shape(g, "r64", BP_DT_F32, 64, dims, NULL, NULL, &err), err);
    l.max_rank = 100;
    CHECK_OK(bp_graph_set_limits(g, &l, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "r100", BP_DT_F32, 100, dims, NULL, NULL, &err), err);
    EXPECT_LIMIT(bp_graph_add_tensor(g, "huge", UINT64_MAX, NULL, &err), err, "max_tensor_bytes");
    int64_t big[2] = {INT64_C(1) << 30, INT64_C(1) << 30};   /* 2^63 bytes of f64 */
    EXPECT_LIMIT(bp_graph_add_tensor_shape(g, "bigshape", BP_DT_F64, 2, big, NULL, NULL, &err), err, "max_tensor_bytes");
    free(longname);
    bp_graph_free(g);
}

/* Declared bytes that add up past max_total_bytes: planning stops before
 * any sum can overflow; raising the limit lets a smaller total through. */
static void test_total_bytes(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("total", NULL);
    REQUIRE(g);
    int32_t x, y, z;
    REQUIRE(bp_graph_add_tensor(g, "x", 16, &x, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor(g, "y", UINT64_C(1) << 62, &y, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor(g, "z", UINT64_C(1) << 62, &z, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, x, BP_TENSOR_INPUT, &err) == BP_OK);
    REQUIRE(bp_graph_add_op(g, "a", "Conv", 1, &x, 1, &y, 1, NULL, &err) == BP_OK);
    REQUIRE(bp_graph_add_op(g, "b", "Conv", 1, &y, 1, &z, 1, NULL, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, z, BP_TENSOR_OUTPUT, &err) == BP_OK);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    bp_plan_options o;
    bp_plan_options_init(&o);
    for (int sk = 0; sk < BP_SCHED_COUNT; sk++) {
        o.sched = (bp_sched_kind)sk;
        bp_plan *p = NULL;
        EXPECT_LIMIT(bp_plan_graph(g, &o, &p, &err), err, "max_total_bytes");
        CHECK(p == NULL);
    }
    bp_graph_free(g);
}

/* Nested JSON: {"x": [[[...]]]} nested n deep (the object counts). */
static char *nested_json(size_t n, size_t *len)
{
    char *t = malloc(2 * n + 8);
    REQUIRE(t);
    memcpy(t, "{\"x\":", 5);
    memset(t + 5, '[', n - 1);
    memset(t + 5 + n - 1, ']', n - 1);
    t[5 + 2 * (n - 1)] = '}';
    t[6 + 2 * (n - 1)] = 0;
    *len = 6 + 2 * (n - 1);
    return t;
}

static void test_json(void)
{
    bp_error err;
    bp_graph *g = NULL;
    size_t len;
    /* far deeper than jansson's own recursion limit, and the default */
    char *t = nested_json(200000, &len);
    EXPECT_LIMIT(bp_graph_parse_json(t, len, "deep.json", NULL, &g, &err), err, "max_json_depth");
    CHECK(g == NULL);
    /* the same through the file reader (chunked scan) */
    char path[] = "/tmp/bp_limits_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, t, len) == (ssize_t)len);
    close(fd);
    EXPECT_LIMIT(bp_graph_read(path, NULL, &g, &err), err, "max_json_depth");
    CHECK(strstr(err.msg, path) != NULL);
    free(t);
    /* 65 deep fails, 64 deep passes the scan (and is then not a graph) */
    t = nested_json(65, &len);
    EXPECT_LIMIT(bp_graph_parse_json(t, len, "d65.json", NULL, &g, &err), err, "max_json_depth");
    bp_limits l;
    bp_limits_init(&l);
    l.max_json_depth = 65;
    CHECK(bp_graph_parse_json_lim(t, len, "d65.json", &l, NULL, &g, &err) == BP_ERR_INVALID);
    free(t);
    /* brackets inside strings do not count */
    static const char str[] = "{\"format\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[\"}";
    bp_limits_init(&l);
    l.max_json_depth = 2;
    CHECK(bp_graph_parse_json_lim(str, strlen(str), "str.json", &l, NULL, &g, &err) == BP_ERR_INVALID);
    CHECK(strstr(err.msg, "bufplan-graph") != NULL);

    /* file size */
    static const char small[] = "{\"format\": \"bufplan-graph\", \"version\": 1, \"tensors\": [{\"name\": \"x\", \"bytes\": 4},"
                                " {\"name\": \"y\", \"bytes\": 4}, {\"name\": \"z\", \"bytes\": 4}], \"ops\": [{\"name\": \"a\","
                                " \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}], \"inputs\": [\"x\"]}";
    CHECK_OK(bp_graph_parse_json(small, strlen(small), "small.json", NULL, &g, &err), err);
    bp_graph_free(g);
    g = NULL;
    bp_limits_init(&l);
    l.max_file_bytes = 100;
    EXPECT_LIMIT(bp_graph_parse_json_lim(small, strlen(small), "small.json", &l, NULL, &g, &err), err, "max_file_bytes");
    fd = open(path, O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, small, strlen(small)) == (ssize_t)strlen(small));
    close(fd);
    EXPECT_LIMIT(bp_graph_read_lim(path, &l, NULL, &g, &err), err, "max_file_bytes");
    /* tensor and op counts of a file */
    bp_limits_init(&l);
    l.max_tensors = 2;
    EXPECT_LIMIT(bp_graph_read_lim(path, &l, NULL, &g, &err), err, "max_tensors");
    l.max_tensors = 3;
    CHECK_OK(bp_graph_read_lim(path, &l, NULL, &g, &err), err);
    bp_limits got;
    bp_graph_get_limits(g, &got);
    CHECK(got.max_tensors == 3);   /* the graph keeps the limits it was read with */
    bp_graph_free(g);
    unlink(path);
}

/* A model whose node holds a subgraph whose node holds a subgraph ... */
static pb deep_model(int depth)
{
    static const char *const in[] = {"x", NULL}, *const out[] = {"y", NULL};
    pb node = ox_node("Relu", "leaf", in, out, NULL, 0);
    for (int d = 0; d < depth; d++) {
        pb g = {0};
        pb_msg(&g, 1, &node);
        pb_str(&g, 2, "sub");
        pb attr = ox_attr_graph("then_branch", &g);
        static const char *const cin[] = {"c", NULL};
        node = ox_node("If", NULL, cin, out, &attr, 1);
    }
    pb graph = {0};
    pb_msg(&graph, 1, &node);
    pb_str(&graph, 2, "deep");
    pb vi = ox_value_info("c", OX_BOOL, 0, NULL, NULL);
    pb_msg(&graph, 11, &vi);
    return ox_model(8, NULL, 13, &graph);
}

/* A graph input whose type is a sequence of a sequence of ... */
static pb deep_type_model(int depth)
{
    pb tp = {0}, tt = {0};
    pb_int(&tt, 1, OX_FLOAT);
    pb_msg(&tp, 1, &tt);
    for (int d = 0; d < depth; d++) {
        pb seq = {0}, outer = {0};
        pb_msg(&seq, 1, &tp);
        pb_msg(&outer, 4, &seq);
        tp = outer;
    }
    pb vi = {0};
    pb_str(&vi, 1, "x");
    pb_msg(&vi, 2, &tp);
    pb graph = {0};
    pb_msg(&graph, 11, &vi);
    pb_str(&graph, 2, "deeptype");
    return ox_model(8, NULL, 13, &graph);
}

static void test_onnx(void)
{
    if (!bp_onnx_available()) { fprintf(stderr, "test_limits: no ONNX support, skipping the protobuf limits\n"); return; }
    bp_error err;
    bp_graph *g = NULL;
    FILE *devnull = fopen("/dev/null", "w");
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = devnull;
    pb m = deep_model(1000);
    EXPECT_LIMIT(bp_onnx_parse(m.d, m.n, "deep.onnx", &o, NULL, &g, NULL, &err), err, "max_proto_depth");
    CHECK(g == NULL);
    pb_free(&m);
    m = deep_type_model(5000);
    EXPECT_LIMIT(bp_onnx_parse(m.d, m.n, "deeptype.onnx", &o, NULL, &g, NULL, &err), err, "max_proto_depth");
    pb_free(&m);
    /* under the limit the nesting is no longer what stops the import */
    m = deep_type_model(20);
    bp_status s = bp_onnx_parse(m.d, m.n, "deeptype20.onnx", &o, NULL, &g, NULL, &err);
    CHECK_MSG(s != BP_ERR_LIMIT, "%s", err.msg);
    bp_graph_free(g);
    g = NULL;
    pb_free(&m);
    bp_limits l;
    bp_limits_init(&l);
    l.max_proto_depth = 10;
    o.limits = &l;
    m = deep_type_model(20);
    EXPECT_LIMIT(bp_onnx_parse(m.d, m.n, "deeptype20.onnx", &o, NULL, &g, NULL, &err), err, "max_proto_depth");
    pb_free(&m);
    /* node count */
    bp_limits_init(&l);
    l.max_ops = 0;
    m = deep_model(0);
    EXPECT_LIMIT(bp_onnx_parse(m.d, m.n, "one.onnx", &o, NULL, &g, NULL, &err), err, "max_ops");
    pb_free(&m);
    /* malformed wire data inside a node is an error, not a crash */
    m = deep_model(3);
    for (size_t i = m.n / 2; i < m.n; i += 7) m.d[i] = 0xff;
    s = bp_onnx_parse(m.d, m.n, "bad.onnx", &o, NULL, &g, NULL, &err);
    CHECK(s != BP_OK && g == NULL);
    pb_free(&m);
    fclose(devnull);
}

static void test_csv(void)
{
    static const char csv[] = "id,lower,upper,size\na,0,2,4\nb,1,3,4\nc,2,4,4\n";
    bp_error err;
    bp_instance *inst = NULL;
    bp_limits l;
    bp_limits_init(&l);
    l.max_tensors = 2;
    EXPECT_LIMIT(bp_instance_parse_csv_lim(csv, strlen(csv), "rows.csv", &l, NULL, &inst, &err), err, "max_tensors");
    CHECK(inst == NULL);
    l.max_tensors = 3;
    CHECK_OK(bp_instance_parse_csv_lim(csv, strlen(csv), "rows.csv", &l, NULL, &inst, &err), err);
    CHECK(inst && inst->n == 3);
    bp_instance_free(inst);
    inst = NULL;
    l.max_file_bytes = 10;
    EXPECT_LIMIT(bp_instance_parse_csv_lim(csv, strlen(csv), "size.csv", &l, NULL, &inst, &err), err, "max_file_bytes");
}

int main(void)
{
    test_defaults();
    test_builder();
    test_total_bytes();
    test_json();
    test_onnx();
    test_csv();
    return check_status();
}
