/* Fuzzes the --op-shapes reader (bp_onnx_op_shapes_parse); a file that
 * loads is applied to a small built-in model with custom ops (symbolic and
 * static inputs, an omitted input, int and ints attributes, an unknown
 * default-domain op): the import must succeed or fail with a message, and a
 * graph it gives is planned and verified. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include "../tests/onnx_writer.h"

#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* x[N,3,8,8], w[4] = {1,2,3,4} -> com.example MyOp(x, "", w; k, ks) -> a
 * -> MyOp "n2"(a) -> b -> Weird (default domain) -> y */
static pb fz_model(void)
{
    pb g = {0}, n, a[2], t;
    int64_t xd[4] = {-1, 3, 8, 8};
    const char *xp[4] = {"N", NULL, NULL, NULL};
    a[0] = ox_attr_int("k", 3);
    a[1] = ox_attr_ints("ks", 3, (int64_t[]){1, 2, 3});
    n = ox_node("MyOp", "n1", S("x", "", "w"), S("a"), a, 2); pb_str(&n, 7, "com.example"); pb_msg(&g, 1, &n);
    n = ox_node("MyOp", "n2", S("a"), S("b", "b2"), NULL, 0); pb_str(&n, 7, "com.example"); pb_msg(&g, 1, &n);
    n = ox_node("Weird", "n3", S("b"), S("y"), NULL, 0); pb_msg(&g, 1, &n);
    t = ox_tensor_i64("w", 1, (int64_t[]){4}, 4, (int64_t[]){1, 2, 3, 4}); pb_msg(&g, 5, &t);
    pb vi = ox_value_info("x", OX_FLOAT, 4, xd, xp); pb_msg(&g, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, -1, NULL, NULL); pb_msg(&g, 12, &vi);
    pb m = {0}, os = {0}, os2 = {0};
    pb_int(&m, 1, 7);
    pb_int(&os, 2, 13); pb_msg(&m, 8, &os);
    pb_str(&os2, 1, "com.example"); pb_int(&os2, 2, 1); pb_msg(&m, 8, &os2);
    pb_msg(&m, 7, &g);
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_onnx_op_shapes *ops = NULL;
    bp_error err = {0};
    bp_status s = bp_onnx_op_shapes_parse((const char *)data, size, "fuzz.json", NULL, &ops, &err);
    if (s != BP_OK) {
        FZ_ASSERT(ops == NULL, "a failed read returned shapes");
        FZ_ASSERT(err.msg[0] != 0, "an error without a message");
        return 0;
    }
    pb m = fz_model();
    bp_limits lim;
    fz_limits(&lim);
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.limits = &lim;
    o.op_shapes = ops;
    o.unknown_op_dynamic = size & 1;
    FILE *devnull = fopen("/dev/null", "w");
    o.warnings = devnull;
    bp_graph *g = NULL;
    s = bp_onnx_parse(m.d, m.n, "fuzz.onnx", &o, NULL, &g, NULL, &err);
    if (devnull) fclose(devnull);
    pb_free(&m);
    bp_onnx_op_shapes_free(ops);
    return fz_import_done(s, g, &err);
}
