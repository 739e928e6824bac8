/*
 * The --op-shapes formulas (src/onnx/formula.c) and file reader
 * (op_shapes.c): formulas with known values, symbols passing through or
 * becoming unknown, evaluation errors (missing input or dim, division by
 * zero, negative size, overflow), malformed formulas with their column and
 * message, a property test (random expressions printed, parsed and
 * evaluated against a direct computation with the same floor-division
 * rules), and malformed files naming the entry, the key or the column.
 */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "onnx/custom.h"

#define SYM_N (-3)   /* a symbol code as the importer gives them */

static const int64_t dims0[4] = {2, 3, 5, 7};
static const int64_t dims1[2] = {11, SYM_N};
static const bp_onnx_value inputs[3] = {
    {"x", BP_DT_F32, 4, dims0}, {"y", BP_DT_I64, 2, dims1}, {"", BP_DT_UNKNOWN, -1, NULL}};
static const char *const onames[1] = {"out"};
static const bp_onnx_node_info node = {"com.example", "MyOp", "n0", 3, inputs, 1, onames, NULL};
static const char *const dnames[2] = {"k", "pad"};
static const int64_t dvals[2] = {3, 1};
static const bp__fx_defaults dflt = {2, dnames, dvals};

/* Parses and evaluates src; returns the eval status (-1 also for a parse error, with msg). */
static int eval(const char *src, int64_t *out, char *msg, size_t cap)
{
    bp__fx f;
    int col;
    char why[200];
    if (bp__fx_parse(&bp__libc_allocator, src, strlen(src), &f, &col, why, sizeof why) != BP_OK) {
        snprintf(msg, cap, "parse error at column %d: %s", col, why);
        return -2;
    }
    int r = bp__fx_eval(&f, &node, &dflt, out, msg, cap);
    bp__fx_free(&bp__libc_allocator, &f);
    return r;
}

static void test_values(void)
{
    static const struct { const char *src; int64_t want; } ok[] = {
        {"in0[0]", 2}, {"in0[-1]", 7}, {"in0[1] * in0[2] + 1", 16}, {"(in0[2] + 2*attr.pad - attr.k) / 1 + 1", 5},
        {"ceil_div(7, 2)", 4}, {"ceil_div(8, 2)", 4}, {"-7 / 2 + 10", 6}, {"-7 % 3", 2}, {"7 % -3 + 5", 3},
        {"max(in0[0], in0[3]) * min(2, 3)", 14}, {"in0.rank + attr.k", 7}, {"in1.rank", 2}, {"--4", 4},
        {"  in0[ -2 ]  ", 5}, {"10 - 2 - 3", 5}, {"100 / 10 / 5", 2}, {"2 * (3 + 4) % 5", 4}, {"0", 0},
        {"in1[0] / 4", 2}, {"ceil_div(-7, 2) + 4", 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -99;
        char msg[300] = "";
        int r = eval(ok[i].src, &v, msg, sizeof msg);
        CHECK_MSG(r == 0 && v == ok[i].want, "\"%s\": r %d, %lld, want %lld (%s)", ok[i].src, r, (long long)v,
                  (long long)ok[i].want, msg);
    }
    /* a symbol passes through a plain reference; anything computed from it is unknown */
    int64_t v = 0;
    char msg[300];
    CHECK(eval("in1[1]", &v, msg, sizeof msg) == 0 && v == SYM_N);
    CHECK(eval("in1[-1]", &v, msg, sizeof msg) == 0 && v == SYM_N);
    CHECK(eval("in1[1] + 0", &v, msg, sizeof msg) == 0 && v == BP_ONNX_DIM_FRESH);
    CHECK(eval("(in1[1])", &v, msg, sizeof msg) == 0 && v == SYM_N);
    CHECK(eval("max(in1[1], 4)", &v, msg, sizeof msg) == 0 && v == BP_ONNX_DIM_FRESH);
}

static void test_eval_errors(void)
{
    static const struct { const char *src, *want; } bad[] = {
        {"in0[1] / 0", "division by zero"}, {"in0[1] % (attr.pad - 1)", "division by zero"},
        {"ceil_div(in1[1], 0)", "division by zero"},   /* even over a symbol */
        {"in0[0] - 5", "gives -3, a negative size"}, {"in3[0]", "the node has no input 3"},
        {"in2[0]", "the node has no input 2"},        /* an omitted optional input */
        {"in0[4]", "input 0 has rank 4, so it has no dimension 4"}, {"in0[-5]", "no dimension -5"},
        {"attr.stride", "no int attribute \"stride\""}, {"attr.k[0]", "no ints attribute \"k\""},
        {"9223372036854775807 + 1", "overflows 64 bits"}, {"4611686018427387904 * 2", "overflows 64 bits"},
        {"-9223372036854775807 - 1 - 1", "overflows"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 0;
        char msg[300] = "";
        int r = eval(bad[i].src, &v, msg, sizeof msg);
        CHECK_MSG(r == -1 && strstr(msg, bad[i].want) && strstr(msg, bad[i].src), "\"%s\": r %d, message \"%s\" lacks \"%s\"",
                  bad[i].src, r, msg, bad[i].want);
    }
}

static void test_malformed(void)
{
    char deep[200] = "", long_f[BP__FX_MAX_LEN + 10];
    for (int i = 0; i < 70; i++) strcat(deep, "(");
    strcat(deep, "1");
    memset(long_f, '1', sizeof long_f - 1);
    long_f[sizeof long_f - 1] = 0;
    const struct { const char *src; int col; const char *want; } bad[] = {
        {"", 1, "unexpected end"}, {"in0[0] +", 9, "unexpected end"}, {"(in0[1]", 8, "expected ')'"},
        {"in0[1])", 7, "unbalanced ')'"}, {"min(1)", 6, "expected ','"}, {"foo + 1", 1, "unknown name"},
        {"attr.", 6, "expected an attribute name"}, {"in0[x]", 5, "expected a number"}, {"1 2", 3, "expected an operator"},
        {"99999999999999999999", 1, "over 2^63-1"}, {"in0[65]", 1, "dimension index out of range"},
        {"3 $ 4", 3, "expected an operator"}, {"in0[1", 6, "expected ']'"}, {"max 1, 2)", 5, "expected '('"},
        {"in0.ranks", 4, "expected '['"}, {"attr.9", 6, "expected an attribute name"}, {"in99999[0]", 1, "over 65535"},
        {deep, 65, "nested too deep"}, {long_f, BP__FX_MAX_LEN + 1, "longer than"}, {"1 + * 2", 5, "expected a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bp__fx f;
        int col = 0;
        char why[200] = "";
        bp_status s = bp__fx_parse(&bp__libc_allocator, bad[i].src, strlen(bad[i].src), &f, &col, why, sizeof why);
        CHECK_MSG(s == BP_ERR_INVALID && col == bad[i].col && strstr(why, bad[i].want), "\"%.40s\": status %d col %d (want %d) \"%s\" (want \"%s\")",
                  bad[i].src, (int)s, col, bad[i].col, why, bad[i].want);
        if (s == BP_OK) bp__fx_free(&bp__libc_allocator, &f);
    }
}

/* ---- property: random expressions against a direct computation ---- */

typedef struct ref { int64_t v; int err; } ref;   /* err: 0, 1 division by zero, 2 overflow */

static int64_t floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }

/* Writes a random expression of depth <= d into buf and returns its value
 * (sizes are checked by the caller: a text over the limit is skipped). */
#pragma GCC diagnostic ignored "-Wformat-truncation"
static ref gen(unsigned long long *rng, int d, char *buf, size_t cap)
{
    unsigned k = (unsigned)(test_rand(rng) % (d > 0 ? 9 : 3));
    if (k == 0) { int64_t v = (int64_t)(test_rand(rng) % 25); snprintf(buf, cap, "%lld", (long long)v); return (ref){v, 0}; }
    if (k == 1) { int i = (int)(test_rand(rng) % 4); snprintf(buf, cap, "in0[%d]", i); return (ref){dims0[i], 0}; }
    if (k == 2) { snprintf(buf, cap, "attr.%s", test_rand(rng) % 2 ? "k" : "pad"); return (ref){buf[5] == 'k' ? 3 : 1, 0}; }
    char l[2048], r[2048];
    ref a = gen(rng, d - 1, l, sizeof l), b = gen(rng, d - 1, r, sizeof r);
    static const char *const ops[] = {"+", "-", "*", "/", "%", "min", "max", "ceil_div", "neg"};
    const char *op = ops[(k - 3 + test_rand(rng) % 3) % 9];
    if (!strcmp(op, "neg")) { snprintf(buf, cap, "-(%s)", l); return a.err ? a : (a.v == INT64_MIN ? (ref){0, 2} : (ref){-a.v, 0}); }
    if (op[0] >= 'a') snprintf(buf, cap, "%s(%s, %s)", op, l, r);
    else snprintf(buf, cap, "(%s) %s (%s)", l, op, r);
    if (a.err) return a;
    if (b.err) return b;
    ref o = {0, 0};
    switch (op[0]) {
    case '+': o.err = __builtin_add_overflow(a.v, b.v, &o.v) ? 2 : 0; break;
    case '-': o.err = __builtin_sub_overflow(a.v, b.v, &o.v) ? 2 : 0; break;
    case '*': o.err = __builtin_mul_overflow(a.v, b.v, &o.v) ? 2 : 0; break;
    case 'm': o.v = op[1] == 'i' ? (a.v < b.v ? a.v : b.v) : (a.v > b.v ? a.v : b.v); break;
    default:
        if (b.v == 0) return (ref){0, 1};
        if (a.v == INT64_MIN && b.v == -1) return (ref){0, 2};
        if (op[0] == '/') o.v = floordiv(a.v, b.v);
        else if (op[0] == '%') o.v = a.v - floordiv(a.v, b.v) * b.v;
        else o.v = -floordiv(-a.v, b.v);
    }
    return o;
}

static void test_property(void)
{
    unsigned long long rng = 12345;
    int n_ok = 0, n_err = 0;
    for (int it = 0; it < 3000; it++) {
        char src[4096];
        ref want = gen(&rng, 4, src, sizeof src);
        if (strlen(src) > BP__FX_MAX_LEN) continue;
        int64_t v = 0;
        char msg[600] = "";
        int r = eval(src, &v, msg, sizeof msg);
        if (want.err == 1) { CHECK_MSG(r == -1 && strstr(msg, "division by zero"), "\"%s\": %s", src, msg); n_err++; }
        else if (want.err == 2) { CHECK_MSG(r == -1 && strstr(msg, "overflows"), "\"%s\": %s", src, msg); n_err++; }
        else if (want.v < 0) { CHECK_MSG(r == -1 && strstr(msg, "negative size"), "\"%s\": %s", src, msg); n_err++; }
        else { CHECK_MSG(r == 0 && v == want.v, "\"%s\": got %lld (r %d, %s), want %lld", src, (long long)v, r, msg, (long long)want.v); n_ok++; }
    }
    CHECK(n_ok > 500 && n_err > 100);
    printf("formula property: %d evaluated, %d errors expected and found\n", n_ok, n_err);
}

/* ---- the file reader ---- */

static void expect_file_error(const char *text, const char *want1, const char *want2)
{
    bp_onnx_op_shapes *s = NULL;
    bp_error err = {0};
    bp_status st = bp_onnx_op_shapes_parse(text, strlen(text), "shapes.json", NULL, &s, &err);
    CHECK_MSG(st == BP_ERR_INVALID && !s && strstr(err.msg, "shapes.json") && strstr(err.msg, want1) && (!want2 || strstr(err.msg, want2)),
              "%s: status %d, message \"%s\" lacks \"%s\" / \"%s\"", text, (int)st, err.msg, want1, want2 ? want2 : "");
    bp_onnx_op_shapes_free(s);
}

static void test_file(void)
{
    const char *good = "{\"ops\": [{\"domain\": \"com.example\", \"op_type\": \"MyConv\", \"attrs\": {\"pad\": 0},"
                       " \"outputs\": [{\"dtype\": \"in0\", \"shape\": [\"in0[0]\", 16, \"(in0[2] + 2*attr.pad - 3) / 2 + 1\"]},"
                       " {\"dtype\": \"int64\", \"shape\": \"in1\"}, {\"shape\": \"unknown\"}]},"
                       " {\"node\": \"n7\", \"outputs\": [{\"shape\": []}]}]}";
    bp_onnx_op_shapes *s = NULL;
    bp_error err = {0};
    CHECK_OK(bp_onnx_op_shapes_parse(good, strlen(good), "good.json", NULL, &s, &err), err);
    bp_onnx_op_shapes_free(s);
    expect_file_error("{\"ops\": [], \"extra\": 1}", "unknown key \"extra\"", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"shapes\": [], \"outputs\": [{\"shape\": []}]}]}", "ops[0]: unknown key \"shapes\"", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"outputs\": [{\"shape\": [], \"type\": \"f32\"}]}]}",
                      "ops[0].outputs[0]: unknown key \"type\"", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"outputs\": [{\"shape\": [1]}, {\"shape\": [\"in0[0]\", 2, \"in0[1] +* 2\"]}]}]}",
                      "ops[0].outputs[1].shape[2]: column 9", "expected a number");
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"node\": \"b\", \"outputs\": [{\"shape\": []}]}]}", "exactly one of", NULL);
    expect_file_error("{\"ops\": [{\"domain\": \"x\", \"outputs\": [{\"shape\": []}]}]}", "exactly one of", NULL);
    expect_file_error("{\"ops\": [{\"node\": \"b\", \"domain\": \"x\", \"outputs\": [{\"shape\": []}]}]}", "goes with \"op_type\"", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\"}]}", "ops[0]: \"outputs\" must be a non-empty array", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"outputs\": [{\"dtype\": \"float7\", \"shape\": []}]}]}", "unknown type \"float7\"", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"outputs\": [{\"shape\": [-1]}]}]}", "shape[0]: a dimension must be >= 0", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"outputs\": [{\"shape\": \"x\"}]}]}", "\"inK\" or \"unknown\"", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"outputs\": [{}]}]}", "\"shape\" is missing", NULL);
    expect_file_error("{\"ops\": [{\"op_type\": \"A\", \"attrs\": {\"k\": 1.5}, \"outputs\": [{\"shape\": []}]}]}", "\"k\" must be an integer", NULL);
    expect_file_error("{\"ops\": {}}", "\"ops\" must be an array", NULL);
    expect_file_error("[1]", "must hold an object", NULL);
    expect_file_error("{\"ops\": [", "shapes.json", NULL);   /* malformed JSON */
    /* from a file, with the default allocator: malformed JSON, a missing file, a good file */
    char path[] = "/tmp/bp_op_shapes_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    REQUIRE(f);
    fputs("{\"ops\": [\n  {]}", f);
    fclose(f);
    bp_onnx_op_shapes *s2 = NULL;
    CHECK(bp_onnx_op_shapes_read(path, NULL, &s2, &err) == BP_ERR_INVALID && !s2 && strstr(err.msg, path) && strstr(err.msg, ":2:"));
    f = fopen(path, "w");
    REQUIRE(f);
    fputs("{\"ops\": [{\"op_type\": \"A\", \"outputs\": [{\"shape\": [\"in0[0]\"]}]}]}", f);
    fclose(f);
    CHECK_OK(bp_onnx_op_shapes_read(path, NULL, &s2, &err), err);
    bp_onnx_op_shapes_free(s2);
    remove(path);
    CHECK(bp_onnx_op_shapes_read(path, NULL, &s2, &err) == BP_ERR_IO && strstr(err.msg, "cannot open"));
}

int main(void)
{
    test_values();
    test_eval_errors();
    test_malformed();
    test_property();
    test_file();
    return check_status();
}
