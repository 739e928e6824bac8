/* Fuzzes the ONNX importer (bp_onnx_parse, shape inference included); a
 * model that imports is planned and verified. */
#define _GNU_SOURCE
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_limits lim;
    fz_limits(&lim);
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.limits = &lim;
    o.unknown_op_dynamic = size & 1;
    FILE *devnull = fopen("/dev/null", "w");
    o.warnings = devnull;
    bp_graph *g = NULL;
    bp_error err = {0};
    bp_status s = bp_onnx_parse(data, size, "fuzz.onnx", &o, NULL, &g, NULL, &err);
    if (devnull) fclose(devnull);
    return fz_import_done(s, g, &err);
}
