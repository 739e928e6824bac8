/* The bufplan-graph JSON reader and writer: every kind of bad input gives
 * BP_ERR_INVALID with a message naming the file and the tensor or op; round
 * trips (read -> write -> read) give the same graph; the 16 shared training
 * graphs load with the op and tensor counts of their README table. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "plan/plan_internal.h"

#include <dirent.h>
#include <math.h>
#include <unistd.h>

static char tmpdir[512];

static void path_in_tmp(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

/* Two graphs are the same: names, sizes, shapes (symbols by name), flags,
 * views, ops with their io, types, costs, and the inplace hints. */
static int graphs_equal(const bp_graph *a, const bp_graph *b)
{
    int ok = 1;
#define SAME(cond, ...) do { if (!(cond)) { ok = 0; fprintf(stderr, "graphs differ: " __VA_ARGS__); fputc('\n', stderr); return 0; } } while (0)
    SAME(strcmp(a->name, b->name) == 0, "name %s vs %s", a->name, b->name);
    SAME(a->n_t == b->n_t, "n_t %zu vs %zu", a->n_t, b->n_t);
    SAME(a->n_o == b->n_o, "n_o %zu vs %zu", a->n_o, b->n_o);
    for (size_t t = 0; t < a->n_t; t++) {
        const bp__tensor *x = &a->t[t], *y = &b->t[t];
        const char *n = bp__names_get(&a->tnames, (int32_t)t);
        SAME(strcmp(n, bp__names_get(&b->tnames, (int32_t)t)) == 0, "tensor %zu name", t);
        SAME(x->bytes == y->bytes && x->producer == y->producer && x->view_of == y->view_of && x->flags == y->flags &&
             x->has_shape == y->has_shape && x->dynamic == y->dynamic && x->rank == y->rank &&
             (!x->has_shape || x->dtype == y->dtype), "tensor \"%s\"", n);
        for (int i = 0; i < x->rank; i++) {
            int64_t da = a->dims[x->dims_off + i], db = b->dims[y->dims_off + i];
            SAME(bp__dim_is_sym(da) == bp__dim_is_sym(db), "tensor \"%s\" dim %d", n, i);
            if (bp__dim_is_sym(da))
                SAME(strcmp(bp__names_get(&a->syms, bp__dim_sym(da)), bp__names_get(&b->syms, bp__dim_sym(db))) == 0,
                     "tensor \"%s\" dim %d symbol", n, i);
            else
                SAME(da == db, "tensor \"%s\" dim %d", n, i);
        }
    }
    for (size_t o = 0; o < a->n_o; o++) {
        const char *n = bp_graph_op_name(a, (int32_t)o);
        SAME(strcmp(n, bp_graph_op_name(b, (int32_t)o)) == 0, "op %zu name", o);
        SAME(strcmp(bp_graph_op_type(a, (int32_t)o), bp_graph_op_type(b, (int32_t)o)) == 0, "op \"%s\" type", n);
        SAME(a->o[o].cost == b->o[o].cost || (a->o[o].cost <= 0 && b->o[o].cost <= 0), "op \"%s\" cost %.17g vs %.17g", n,
             a->o[o].cost, b->o[o].cost);
        SAME(a->o[o].n_in == b->o[o].n_in && a->o[o].n_out == b->o[o].n_out, "op \"%s\" io count", n);
        for (int i = 0; i < a->o[o].n_in + a->o[o].n_out; i++)
            SAME(a->io[a->o[o].io_off + i] == b->io[b->o[o].io_off + i], "op \"%s\" io %d", n, i);
    }
    /* inplace hints as a multiset */
    SAME(a->n_inpl == b->n_inpl, "inplace count %zu vs %zu", a->n_inpl, b->n_inpl);
    for (size_t i = 0; i < a->n_inpl; i++) {
        size_t ca = 0, cb = 0;
        for (size_t j = 0; j < a->n_inpl; j++) {
            ca += memcmp(&a->inpl[i], &a->inpl[j], sizeof a->inpl[i]) == 0;
            cb += memcmp(&a->inpl[i], &b->inpl[j], sizeof a->inpl[i]) == 0;
        }
        SAME(ca == cb, "inplace hint %zu", i);
    }
#undef SAME
    return ok;
}

/* ------------------------------------------------------------ bad input */

/* Parses text as "bad.json"; the status must be BP_ERR_INVALID, no graph,
 * and the message must start with the file name and contain each of the
 * wanted strings (NULL-terminated list). */
static void expect_bad_(int line, const char *text, const char *const *want)
{
    bp_graph *g = (bp_graph *)1;
    bp_error err = {0};
    bp_status s = bp_graph_parse_json(text, strlen(text), "bad.json", NULL, &g, &err);
    CHECK_MSG(s == BP_ERR_INVALID, "line %d: status %d (%s)", line, (int)s, err.msg);
    CHECK_MSG(g == NULL, "line %d: a graph came back", line);
    if (g && g != (bp_graph *)1) bp_graph_free(g);
    CHECK_MSG(strncmp(err.msg, "bad.json", 8) == 0, "line %d: message does not start with the file: %s", line, err.msg);
    for (int i = 0; want[i]; i++)
        CHECK_MSG(strstr(err.msg, want[i]) != NULL, "line %d: message lacks '%s': %s", line, want[i], err.msg);
}
#define EXPECT_BAD(text, ...) expect_bad_(__LINE__, text, (const char *const[]){__VA_ARGS__, NULL})

#define HEAD "{\"format\": \"bufplan-graph\", \"version\": 1, "
/* A valid skeleton: x -> op a -> y, with tensor declarations spliced in. */
#define T_XY "{\"name\": \"x\", \"bytes\": 16}, {\"name\": \"y\", \"bytes\": 16}"
#define OP_A "{\"name\": \"a\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}"
#define IO_XY ", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}"

static void test_bad_inputs(void)
{
    /* the skeleton itself is fine */
    {
        const char *ok = HEAD "\"tensors\": [" T_XY "], \"ops\": [" OP_A "]" IO_XY;
        bp_graph *g = NULL;
        bp_error err;
        CHECK_OK(bp_graph_parse_json(ok, strlen(ok), "ok.json", NULL, &g, &err), err);
        REQUIRE(g);
        CHECK(strcmp(bp_graph_name(g), "ok") == 0); /* no "name": the file's base name */
        CHECK(bp_graph_n_tensors(g) == 2 && bp_graph_n_ops(g) == 1);
        CHECK(bp_graph_tensor_flags(g, 0) == BP_TENSOR_INPUT && bp_graph_tensor_flags(g, 1) == BP_TENSOR_OUTPUT);
        CHECK(bp_graph_op_cost(g, 0) == 0); /* absent cost: unknown */
        bp_graph_free(g);
    }
    /* malformed JSON: file, line and column */
    EXPECT_BAD("{\"format\": \"bufplan-graph\",\n \"version\": 1,\n \"tensors\": [}", "bad.json:3:", "malformed JSON");
    EXPECT_BAD("{\"format\": \"bufplan-graph\",\n \"version\": 1,\n \"tensors\": [],\n \"ops\": []", "bad.json:4:", "malformed JSON");
    EXPECT_BAD("", "bad.json:", "malformed JSON");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [" OP_A "]" IO_XY " trailing", "bad.json:1:", "malformed JSON");
    /* duplicate key: jansson rejects it with its position */
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"x\",\n \"bytes\": 1, \"bytes\": 2}], \"ops\": []}", "bad.json:2:", "duplicate");
    /* top level, format, version */
    EXPECT_BAD("[1, 2]", "top level", "an array");
    EXPECT_BAD("{\"version\": 1, \"tensors\": [], \"ops\": []}", "\"format\"");
    EXPECT_BAD("{\"format\": \"bufplan-plan\", \"version\": 1, \"tensors\": [], \"ops\": []}", "bufplan-plan");
    EXPECT_BAD("{\"format\": \"bufplan-graph\", \"version\": 2, \"tensors\": [], \"ops\": []}", "version", "2");
    EXPECT_BAD("{\"format\": \"bufplan-graph\", \"version\": \"1\", \"tensors\": [], \"ops\": []}", "version", "a string");
    EXPECT_BAD("{\"format\": \"bufplan-graph\", \"tensors\": [], \"ops\": []}", "version", "missing");
    EXPECT_BAD(HEAD "\"ops\": []}", "\"tensors\"", "missing");
    EXPECT_BAD(HEAD "\"tensors\": []}", "\"ops\"", "missing");
    EXPECT_BAD(HEAD "\"tensors\": {}, \"ops\": []}", "\"tensors\"", "an object");
    EXPECT_BAD(HEAD "\"name\": 7, \"tensors\": [], \"ops\": []}", "\"name\"", "an integer");
    /* empty graph */
    EXPECT_BAD(HEAD "\"tensors\": [], \"ops\": []}", "no ops");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": []}", "no ops");
    /* tensors: missing and wrong-typed keys */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"bytes\": 4}], \"ops\": [" OP_A "]}", "tensors[2]", "no \"name\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", 5], \"ops\": [" OP_A "]}", "tensors[2]", "not an object");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": [\"x\"], \"bytes\": 1}], \"ops\": []}", "tensors[0]", "\"name\"", "an array");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"\", \"bytes\": 1}], \"ops\": []}", "tensors[0]", "empty name");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\"}], \"ops\": []}", "\"zz\"", "neither \"bytes\" nor \"shape\"");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"bytes\": \"12\"}], \"ops\": []}", "\"zz\"", "\"bytes\"", "a string");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"bytes\": 1, \"shape\": [1], \"dtype\": \"f32\"}], \"ops\": []}", "\"zz\"", "both");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"shape\": 4, \"dtype\": \"f32\"}], \"ops\": []}", "\"zz\"", "\"shape\"", "an integer");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"shape\": [4]}], \"ops\": []}", "\"zz\"", "no \"dtype\"");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"shape\": [4], \"dtype\": 4}], \"ops\": []}", "\"zz\"", "\"dtype\"", "an integer");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"shape\": [4], \"dtype\": \"f33\"}], \"ops\": []}", "\"zz\"", "unknown dtype \"f33\"");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"shape\": [4, null], \"dtype\": \"f32\"}], \"ops\": []}", "\"zz\"", "dimension 1", "null");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"zz\", \"shape\": [4, \"\"], \"dtype\": \"f32\"}], \"ops\": []}", "\"zz\"", "dimension 1", "empty symbol");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"name\": \"v\", \"bytes\": 1, \"view_of\": 3}], \"ops\": [" OP_A "]}", "\"v\"", "view_of", "an integer");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"name\": \"v\", \"bytes\": 1, \"view_of\": \"nope\"}], \"ops\": [" OP_A "]}", "\"v\"", "\"nope\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"name\": \"v\", \"bytes\": 1, \"view_of\": \"v\"}], \"ops\": [" OP_A "]}", "\"v\"", "view of itself");
    /* sizes: negative, non-integer, too large, overflowing products */
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"neg\", \"bytes\": -4}], \"ops\": []}", "\"neg\"", "negative");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"frac\", \"bytes\": 1.5}], \"ops\": []}", "\"frac\"", "must be an integer");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"dneg\", \"shape\": [2, -3], \"dtype\": \"f32\"}], \"ops\": []}", "\"dneg\"", "dimension 1", "negative");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"dfrac\", \"shape\": [2, 3.5], \"dtype\": \"f32\"}], \"ops\": []}", "\"dfrac\"", "dimension 1", "a real number");
    EXPECT_BAD(HEAD "\"tensors\": [\n{\"name\": \"huge\", \"bytes\": 18446744073709551615}], \"ops\": []}", "bad.json:2:", "\"huge\"", "2^63-1");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"dhuge\", \"shape\": [99999999999999999999], \"dtype\": \"f32\"}], \"ops\": []}", "\"dhuge\"", "2^63-1");
    EXPECT_BAD(HEAD "\"tensors\": [{\"name\": \"prod\", \"shape\": [1099511627776, 1099511627776], \"dtype\": \"f32\"}], \"ops\": []}", "\"prod\"", "overflows");
    {   /* the largest size jansson can represent is accepted */
        const char *t = HEAD "\"tensors\": [{\"name\": \"x\", \"bytes\": 9223372036854775807}, {\"name\": \"y\", \"bytes\": 1}], "
                        "\"ops\": [" OP_A "]" IO_XY;
        bp_graph *g = NULL;
        bp_error err;
        CHECK_OK(bp_graph_parse_json(t, strlen(t), "max.json", NULL, &g, &err), err);
        CHECK(g && bp_graph_tensor_bytes(g, 0) == UINT64_C(9223372036854775807));
        bp_graph_free(g);
    }
    /* duplicates */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"name\": \"x\", \"bytes\": 3}], \"ops\": [" OP_A "]}", "\"x\"", "defined twice");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"name\": \"z\", \"bytes\": 3}], \"ops\": [" OP_A ", "
               "{\"name\": \"a\", \"type\": \"Relu\", \"inputs\": [\"y\"], \"outputs\": [\"z\"]}]}", "\"a\"", "used twice");
    /* ops: missing and wrong-typed keys */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [7]}", "ops[0]", "not an object");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"type\": \"Relu\", \"inputs\": [], \"outputs\": []}]}", "ops[0]", "no \"name\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}", "\"b\"", "no \"type\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"outputs\": [\"y\"]}]}", "\"b\"", "no \"inputs\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"]}]}", "\"b\"", "no \"outputs\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": 3, \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}", "\"b\"", "\"type\"", "an integer");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": \"x\", \"outputs\": [\"y\"]}]}", "\"b\"", "\"inputs\"", "a string");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [1], \"outputs\": [\"y\"]}]}", "\"b\"", "input", "an integer");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"cost\": \"fast\"}]}", "\"b\"", "\"cost\"", "a string");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"cost\": -1}]}", "\"b\"", "\"cost\"", ">= 0");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"inplace\": [\"y\"]}]}", "\"b\"", "\"inplace\"", "an array");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"inplace\": {\"y\": 1}}]}", "\"b\"", "inplace", "an integer");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"inplace\": {\"q\": \"x\"}}]}", "\"b\"", "\"q\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"inplace\": {\"x\": \"y\"}}]}", "\"b\"", "inplace", "not an");
    /* references to undeclared tensors */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"ghost\"], \"outputs\": [\"y\"]}]}", "\"b\"", "\"ghost\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"ghost\"]}]}", "\"b\"", "\"ghost\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [" OP_A "], \"inputs\": [\"ghost\"]}", "\"inputs\"", "\"ghost\"");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [" OP_A "], \"weights\": [3]}", "\"weights\"", "an integer");
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [" OP_A "], \"outputs\": \"y\"}", "\"outputs\"", "a string");
    /* a tensor used but never defined (declared, not produced, not an input) */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [" OP_A "]}", "op \"a\"", "\"x\"", "not defined");
    /* two producers */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [" OP_A ", {\"name\": \"b\", \"type\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]" IO_XY,
               "\"y\"", "two producers", "\"a\"", "\"b\"");
    /* an op consuming its own output */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY "], \"ops\": [{\"name\": \"self\", \"type\": \"Add\", \"inputs\": [\"x\", \"y\"], \"outputs\": [\"y\"]}]" IO_XY,
               "\"self\"", "own output", "\"y\"");
    /* a graph output nobody makes */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"name\": \"w\", \"bytes\": 1}], \"ops\": [" OP_A "], \"inputs\": [\"x\"], \"outputs\": [\"w\"]}", "\"w\"", "not produced");
    /* a cycle: the message lists the ops on it */
    EXPECT_BAD(HEAD "\"tensors\": [" T_XY ", {\"name\": \"p\", \"bytes\": 1}, {\"name\": \"q\", \"bytes\": 1}], \"ops\": [" OP_A ", "
               "{\"name\": \"c1\", \"type\": \"Add\", \"inputs\": [\"y\", \"q\"], \"outputs\": [\"p\"]}, "
               "{\"name\": \"c2\", \"type\": \"Relu\", \"inputs\": [\"p\"], \"outputs\": [\"q\"]}]" IO_XY,
               "cycle", "\"c1\"", "\"c2\"");
}

/* Files: the path is in every message, with line and column for malformed
 * JSON; bp_graph_read picks the reader by content. */
static void test_files(void)
{
    char p[700];
    bp_graph *g = NULL;
    bp_error err;
    path_in_tmp(p, sizeof p, "broken.json");
    write_text(p, "{\"format\": \"bufplan-graph\",\n\n  \"version\": 1 \"tensors\": []}");
    CHECK(bp_graph_read_json(p, NULL, &g, &err) == BP_ERR_INVALID && !g);
    char want[760];
    snprintf(want, sizeof want, "%s:3:", p);
    CHECK_MSG(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    CHECK(bp_graph_read(p, NULL, &g, &err) == BP_ERR_INVALID && !g);
    CHECK_MSG(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);

    path_in_tmp(p, sizeof p, "huge.json");
    write_text(p, HEAD "\"tensors\": [\n {\"name\": \"x\", \"bytes\": 1},\n {\"name\": \"big one\", \"bytes\": 18446744073709551616}], \"ops\": []}");
    CHECK(bp_graph_read_json(p, NULL, &g, &err) == BP_ERR_INVALID && !g);
    snprintf(want, sizeof want, "%s:3:", p);
    CHECK_MSG(strncmp(err.msg, want, strlen(want)) == 0 && strstr(err.msg, "\"big one\"") && strstr(err.msg, "2^63-1"), "%s", err.msg);

    path_in_tmp(p, sizeof p, "missing.json");
    CHECK(bp_graph_read(p, NULL, &g, &err) == BP_ERR_IO && !g && strstr(err.msg, p));
    CHECK(bp_graph_read_json(p, NULL, &g, &err) == BP_ERR_IO && !g && strstr(err.msg, p));

    path_in_tmp(p, sizeof p, "empty.json");
    write_text(p, "  \n");
    CHECK(bp_graph_read(p, NULL, &g, &err) == BP_ERR_INVALID && !g && strstr(err.msg, p) && strstr(err.msg, "empty"));

    /* not JSON: the ONNX reader's business; without it, unsupported */
    path_in_tmp(p, sizeof p, "model.bin");
    write_text(p, "\x08\x07\x12\x04test");
    bp_status s = bp_graph_read(p, NULL, &g, &err);
    CHECK(s != BP_OK && !g && strstr(err.msg, p));

    /* leading white space, then a good graph */
    path_in_tmp(p, sizeof p, "spaced.json");
    write_text(p, "\n\t  " HEAD "\"name\": \"sp\", \"tensors\": [" T_XY "], \"ops\": [" OP_A "]" IO_XY);
    CHECK_OK(bp_graph_read(p, NULL, &g, &err), err);
    CHECK(g && strcmp(bp_graph_name(g), "sp") == 0 && bp_graph_n_ops(g) == 1);
    bp_graph_free(g);
}

/* ---------------------------------------------------------- round trips */

static bp_graph *build_odd_graph(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("odd \"graph\" {1}", NULL);
    REQUIRE(g);
    int32_t in, w, a, v, b, c, d, k, e;
    int64_t din[] = {BP_DIM_SYMBOLIC, 3, 224, 224};
    const char *sin[] = {"N", NULL, NULL, NULL};
    REQUIRE(bp_graph_add_tensor_shape(g, "in/put:0", BP_DT_F16, 4, din, sin, &in, &err) == BP_OK);
    int64_t dw[] = {8, 3, 3, 3};
    REQUIRE(bp_graph_add_tensor_shape(g, "w.eight,\"1\"", BP_DT_BF16, 4, dw, NULL, &w, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor(g, "a{b}", 1605632, &a, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor(g, "view\\of:a", 1605632, &v, &err) == BP_OK);
    int64_t db[] = {BP_DIM_SYMBOLIC, BP_DIM_SYMBOLIC, 7};
    const char *sb[] = {"N", "seq len", NULL};
    REQUIRE(bp_graph_add_tensor_shape(g, "b\ttab", BP_DT_I64, 3, db, sb, &b, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor_shape(g, "scalar", BP_DT_BOOL, 0, NULL, NULL, &c, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor(g, "d", 0, &d, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor(g, "konst", 64, &k, &err) == BP_OK);
    REQUIRE(bp_graph_add_tensor(g, "e\xc3\xa9", 12345678901234ull, &e, &err) == BP_OK);
    REQUIRE(bp_graph_set_view(g, v, a, &err) == BP_OK);
    int32_t op;
    REQUIRE(bp_graph_add_op(g, "mk/const", "Constant", 0, &k, 1, &k, 0, &op, &err) == BP_OK);
    int32_t i1[] = {in, w, k};
    REQUIRE(bp_graph_add_op(g, "conv:1,2", "Conv", 3, i1, 1, &a, 0.1, &op, &err) == BP_OK);
    REQUIRE(bp_graph_add_op(g, "re\"shape\"", "Reshape", 1, &a, 1, &v, 1.0, &op, &err) == BP_OK);
    int32_t o2[] = {b, c};
    REQUIRE(bp_graph_add_op(g, "{split}", "Split", 1, &v, 2, o2, 3e-7, &op, &err) == BP_OK);
    int32_t i3[] = {b, c};
    int32_t o3[] = {d, e};
    REQUIRE(bp_graph_add_op(g, "add.inplace", "Add", 2, i3, 2, o3, 12345.678, &op, &err) == BP_OK);
    REQUIRE(bp_graph_set_inplace(g, op, e, c, &err) == BP_OK);
    REQUIRE(bp_graph_set_inplace(g, op, d, b, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, in, BP_TENSOR_INPUT, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, w, BP_TENSOR_WEIGHT, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, k, BP_TENSOR_CONST, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, d, BP_TENSOR_OUTPUT, &err) == BP_OK);
    REQUIRE(bp_graph_mark(g, e, BP_TENSOR_OUTPUT, &err) == BP_OK);
    REQUIRE(bp_graph_finalize(g, &err) == BP_OK);
    return g;
}

/* Writes g to a file and reads it back; the two must be equal, and writing
 * the copy again must give the same bytes. */
static void round_trip(const bp_graph *g, const char *file)
{
    char p1[700], p2[720];
    bp_error err;
    path_in_tmp(p1, sizeof p1, file);
    snprintf(p2, sizeof p2, "%s.again", p1);
    CHECK_OK(bp_graph_write_json(g, p1, &err), err);
    bp_graph *h = NULL;
    CHECK_OK(bp_graph_read_json(p1, NULL, &h, &err), err);
    if (!h) return;
    CHECK_MSG(graphs_equal(g, h), "%s", file);
    CHECK_OK(bp_graph_write_json(h, p2, &err), err);
    char *t1 = NULL, *t2 = NULL;
    size_t l1 = 0, l2 = 0;
    CHECK_OK(bp__read_file(p1, &bp__libc_allocator, &t1, &l1, &err), err);
    CHECK_OK(bp__read_file(p2, &bp__libc_allocator, &t2, &l2, &err), err);
    CHECK_MSG(t1 && t2 && l1 == l2 && memcmp(t1, t2, l1) == 0, "%s: second write differs", file);
    /* one tensor or op per line */
    if (t1) {
        size_t lines = 0;
        for (size_t i = 0; i < l1; i++) lines += t1[i] == '\n';
        size_t items = (size_t)(bp_graph_n_tensors(g) + bp_graph_n_ops(g));
        CHECK_MSG(lines == items + 12 || lines == items + 13, "%s: %zu lines", file, lines);
    }
    free(t1);
    free(t2);
    bp_graph_free(h);
    remove(p1);
    remove(p2);
}

static void test_round_trip(void)
{
    bp_graph *g = build_odd_graph();
    round_trip(g, "odd.json");
    /* parse_json on the text written through the FILE* entry point */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    bp_error err;
    CHECK_OK(bp_graph_write_json_file(g, f, &err), err);
    fclose(f);
    bp_graph *h = NULL;
    CHECK_OK(bp_graph_parse_json(buf, len, "mem", NULL, &h, &err), err);
    CHECK(h && graphs_equal(g, h));
    if (h) {
        /* spot checks of what was read */
        int32_t b = bp_graph_find_tensor(h, "b\ttab"), in = bp_graph_find_tensor(h, "in/put:0");
        CHECK(b >= 0 && bp_graph_tensor_is_dynamic(h, b) && bp_graph_tensor_dtype(h, b) == BP_DT_I64);
        CHECK(in >= 0 && bp_graph_tensor_flags(h, in) == BP_TENSOR_INPUT);
        CHECK(bp_graph_tensor_flags(h, bp_graph_find_tensor(h, "konst")) == BP_TENSOR_CONST);
        CHECK(bp_graph_tensor_view_of(h, bp_graph_find_tensor(h, "view\\of:a")) == bp_graph_find_tensor(h, "a{b}"));
        CHECK(bp_graph_op_cost(h, bp_graph_find_op(h, "{split}")) == 3e-7);
        CHECK(bp_graph_op_cost(h, bp_graph_find_op(h, "mk/const")) == 0);
        CHECK(strcmp(bp_graph_name(h), "odd \"graph\" {1}") == 0);
        /* binding a symbol: still written as the symbol's name */
        CHECK_OK(bp_graph_bind_dim(h, "N", 2, &err), err);
        int32_t t = bp_graph_find_tensor(h, "in/put:0");
        CHECK(!bp_graph_tensor_is_dynamic(h, t) && bp_graph_tensor_bytes(h, t) == 2ull * 3 * 224 * 224 * 2);
        char *b2 = NULL;
        size_t l2 = 0;
        FILE *f2 = open_memstream(&b2, &l2);
        REQUIRE(f2);
        CHECK_OK(bp_graph_write_json_file(h, f2, &err), err);
        fclose(f2);
        CHECK(l2 == len && memcmp(buf, b2, len) == 0);
        free(b2);
        bp_graph_free(h);
    }
    free(buf);
    bp_graph_free(g);

    /* random graphs: random sizes/shapes/names, views, inplace, flags */
    unsigned long long seed = 42;
    for (int it = 0; it < 40; it++) {
        g = bp_graph_new("rand", NULL);
        REQUIRE(g);
        int nt = 2 + (int)(test_rand(&seed) % 40);
        char name[64];
        for (int t = 0; t < nt; t++) {
            snprintf(name, sizeof name, "t%d%s", t, (test_rand(&seed) & 1) ? ",\"{}:" : "");
            int32_t id;
            if (test_rand(&seed) % 3 == 0) {
                REQUIRE(bp_graph_add_tensor(g, name, test_rand(&seed) >> 2, &id, &err) == BP_OK);
            } else {
                int rank = (int)(test_rand(&seed) % 5);
                int64_t dims[4];
                const char *syms[4] = {"S", "B", "S", "H"};
                for (int i = 0; i < rank; i++)
                    dims[i] = test_rand(&seed) % 4 == 0 ? BP_DIM_SYMBOLIC : (int64_t)(test_rand(&seed) % 100);
                REQUIRE(bp_graph_add_tensor_shape(g, name, (bp_dtype)(1 + test_rand(&seed) % (BP_DT_COUNT - 1)), rank,
                                                  dims, syms, &id, &err) == BP_OK);
            }
        }
        /* tensor 0 is an input; each op t produces tensor t from earlier ones */
        REQUIRE(bp_graph_mark(g, 0, BP_TENSOR_INPUT, &err) == BP_OK);
        for (int t = 1; t < nt; t++) {
            int32_t ins[3];
            int n_in = 1 + (int)(test_rand(&seed) % 3);
            for (int i = 0; i < n_in; i++) ins[i] = (int32_t)(test_rand(&seed) % (uint64_t)t);
            snprintf(name, sizeof name, "op%d", t);
            int32_t op, out = t;
            double cost = (test_rand(&seed) % 2) ? (double)(test_rand(&seed) % 1000) / 7.0 : 0;
            bool fits = bp_graph_tensor_bytes(g, out) <= bp_graph_tensor_bytes(g, ins[0]); /* a view fits its root */
            const char *type = test_rand(&seed) % 2 || !fits ? "Relu" : "aten.view";
            REQUIRE(bp_graph_add_op(g, name, type, n_in, ins, 1, &out, cost, &op, &err) == BP_OK);
            if (test_rand(&seed) % 4 == 0) REQUIRE(bp_graph_set_inplace(g, op, out, ins[0], &err) == BP_OK);
            if (test_rand(&seed) % 5 == 0 && fits) REQUIRE(bp_graph_set_view(g, out, ins[0], &err) == BP_OK);
            if (test_rand(&seed) % 6 == 0) REQUIRE(bp_graph_mark(g, out, BP_TENSOR_OUTPUT, &err) == BP_OK);
        }
        REQUIRE(bp_graph_finalize(g, &err) == BP_OK);
        round_trip(g, "rand.json");
        bp_graph_free(g);
    }
}

/* Random corruption of a valid file (bytes flipped, dropped, inserted): the
 * reader returns a graph or BP_ERR_INVALID, never crashes or leaks. */
static void test_fuzz(void)
{
    bp_graph *g = build_odd_graph();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    bp_error err;
    CHECK_OK(bp_graph_write_json_file(g, f, &err), err);
    fclose(f);
    bp_graph_free(g);
    char *t = malloc(len + 16);
    REQUIRE(t);
    static const char junk[] = "{}[],:\"0123456789-e.null truefalse\\";
    unsigned long long seed = 99;
    int bad = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(t, buf, len + 1);
        size_t n = len;
        int edits = 1 + (int)(test_rand(&seed) % 3);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)(test_rand(&seed) % n);
            switch (test_rand(&seed) % 3) {
            case 0: t[at] = junk[test_rand(&seed) % (sizeof junk - 1)]; break;
            case 1: memmove(t + at, t + at + 1, n - at); n--; break;
            default: memmove(t + at + 1, t + at, n - at + 1); t[at] = junk[test_rand(&seed) % (sizeof junk - 1)]; n++; break;
            }
        }
        bp_graph *h = NULL;
        bp_status s = bp_graph_parse_json(t, n, "fuzz.json", NULL, &h, &err);
        CHECK_MSG(s == BP_OK || s == BP_ERR_INVALID, "status %d: %s", (int)s, err.msg);
        if (s == BP_OK) CHECK(h != NULL);
        else { bad++; CHECK(h == NULL && strncmp(err.msg, "fuzz.json", 9) == 0); }
        bp_graph_free(h);
    }
    CHECK(bad > 0);
    free(t);
    free(buf);
}

/* --------------------------------------------------- shared training set */

static int parse_count(const char *s)
{
    int v = 0;
    for (; *s == ' '; s++) {}
    for (; (*s >= '0' && *s <= '9') || *s == ','; s++)
        if (*s != ',') v = v * 10 + (*s - '0');
    return v;
}

static void test_training_graphs(void)
{
    char readme[700], path[1200], line[1024];
    snprintf(readme, sizeof readme, "%s/graphs/README.md", test_data_dir());
    FILE *f = fopen(readme, "r");
    if (!f) { fprintf(stderr, "skip: %s not found\n", readme); return; }
    int n_models = 0;
    while (fgets(line, sizeof line, f)) {
        /* | model | input | file bytes | ops (fw+bw) | planned | views | naive MiB | ... */
        if (line[0] != '|' || strstr(line, "model") || strstr(line, "---")) continue;
        char *col[10];
        int nc = 0;
        for (char *p = line; *p && nc < 10; p++)
            if (*p == '|') col[nc++] = p + 1;
        if (nc < 8) continue;
        char model[128];
        if (sscanf(col[0], " %127[^ |]", model) != 1) continue;
        int ops = parse_count(col[3]), planned = parse_count(col[4]), views = parse_count(col[5]);
        double naive_mib = strtod(col[6] + strspn(col[6], " "), NULL);
        /* strtod stops at the comma: read the figure without commas */
        char num[64];
        size_t k = 0;
        for (char *p = col[6]; *p && *p != '|' && k < sizeof num - 1; p++)
            if (*p != ',' && *p != ' ') num[k++] = *p;
        num[k] = 0;
        naive_mib = strtod(num, NULL);
        snprintf(path, sizeof path, "%s/graphs/training/%s.json", test_data_dir(), model);
        bp_graph *g = NULL;
        bp_error err;
        CHECK_OK(bp_graph_read(path, NULL, &g, &err), err);
        if (!g) continue;
        n_models++;
        CHECK_MSG(strcmp(bp_graph_name(g), model) == 0, "%s: name %s", model, bp_graph_name(g));
        CHECK_MSG(bp_graph_n_ops(g) == ops, "%s: %d ops, table says %d", model, bp_graph_n_ops(g), ops);
        int produced = 0, nviews = 0;
        uint64_t naive = 0;
        for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
            if (bp_graph_tensor_producer(g, t) >= 0) { produced++; naive += bp_graph_tensor_bytes(g, t); }
            nviews += bp_graph_tensor_view_of(g, t) >= 0;
        }
        CHECK_MSG(produced == planned, "%s: %d produced tensors, table says %d", model, produced, planned);
        CHECK_MSG(nviews == views, "%s: %d views, table says %d", model, nviews, views);
        CHECK_MSG(fabs((double)naive / 1048576.0 - naive_mib) < 0.051, "%s: naive %.1f MiB, table says %.1f", model,
                  (double)naive / 1048576.0, naive_mib);
        if (n_models <= 3) round_trip(g, "training.json");
        bp_graph_free(g);
    }
    fclose(f);
    CHECK_MSG(n_models == 16, "%d training graphs loaded", n_models);
}

int main(void)
{
    const char *base = getenv("BP_BUILD");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_graph_json.XXXXXX", base && *base ? base : "/tmp");
    REQUIRE(mkdtemp(tmpdir));
    test_bad_inputs();
    test_files();
    test_round_trip();
    test_fuzz();
    test_training_graphs();
    /* leave nothing behind */
    DIR *d = opendir(tmpdir);
    if (d) {
        struct dirent *e;
        char p[1024];
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') { snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name); remove(p); }
        closedir(d);
    }
    rmdir(tmpdir);
    return check_status();
}
