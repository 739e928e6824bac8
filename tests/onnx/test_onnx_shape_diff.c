/*
 * A differential test of shape inference on hostile shapes: thousands of
 * random one- and two-node models (tests/onnx/shape_diff_gen.py: the ops
 * bufplan infers, edge-case dims and attributes) go through onnx's strict
 * shape inference and through bufplan's importer.  For each, either both
 * agree (every output's rank, and every dimension both know, equal), or
 * bufplan rejects the model with a message; bufplan accepting a model that
 * onnx's strict inference rejects is counted and printed, and fails the
 * test when bufplan then gives an output a shape with a negative or
 * overflowing dimension.  Skips (passes, with a message) without python3-onnx.
 */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define N_CASES 3000

static int n_both, n_bp_rejects, n_onnx_rejects, n_dims_compared, n_mismatch;

/* Compares one model's outputs; returns false on a disagreement. */
static bool compare_outputs(const char *file, const bp_graph *g, json_t *tensors, bool onnx_ok)
{
    const char *name;
    json_t *dims;
    bool good = true;
    json_object_foreach(tensors, name, dims) {
        int32_t t = bp_graph_find_tensor(g, name);
        if (t < 0) continue;   /* folded away or renamed: nothing to compare */
        int64_t d[64];
        int r = bp_graph_tensor_dims(g, t, d, 64);
        for (int i = 0; i < r && i < 64; i++)
            if (d[i] < 0 && d[i] != BP_DIM_SYMBOLIC) {
                fprintf(stderr, "%s: %s: bufplan gives dimension %d = %lld\n", file, name, i, (long long)d[i]);
                good = false;
            }
        if (!onnx_ok || !json_is_array(dims) || r < 0) continue;
        if ((size_t)r != json_array_size(dims)) {
            fprintf(stderr, "%s: %s: onnx rank %zu, bufplan %d\n", file, name, json_array_size(dims), r);
            good = false;
            continue;
        }
        for (int i = 0; i < r; i++) {
            json_t *v = json_array_get(dims, (size_t)i);
            if (!json_is_integer(v) || d[i] == BP_DIM_SYMBOLIC) continue;
            n_dims_compared++;
            if (json_integer_value(v) != d[i]) {
                fprintf(stderr, "%s: %s: dim %d: onnx %lld, bufplan %lld\n", file, name, i, (long long)json_integer_value(v),
                        (long long)d[i]);
                good = false;
            }
        }
    }
    return good;
}

static void run_case(const char *dir, json_t *c)
{
    const char *file = json_string_value(json_object_get(c, "file"));
    bool onnx_ok = json_is_true(json_object_get(c, "onnx_ok"));
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    FILE *devnull = fopen("/dev/null", "w");
    o.warnings = devnull;
    bp_graph *g = NULL;
    bp_error err = {0};
    bp_status s = bp_onnx_read(path, &o, NULL, &g, &err);
    if (devnull) fclose(devnull);
    if (s) {
        CHECK_MSG(err.msg[0] && !g, "%s: rejected without a message", file);
        n_bp_rejects++;
        return;
    }
    if (onnx_ok) n_both++; else n_onnx_rejects++;
    if (!compare_outputs(file, g, json_object_get(c, "tensors"), onnx_ok)) { n_mismatch++; check_failures++; }
    bp_graph_free(g);
}

int main(void)
{
    if (system("/usr/bin/python3 -c 'import onnx, numpy' >/dev/null 2>&1") != 0) {
        printf("test_onnx_shape_diff: SKIPPED: /usr/bin/python3 cannot import onnx and numpy\n");
        return 0;
    }
    char dir[] = "/tmp/bp_shape_diff_XXXXXX";
    REQUIRE(mkdtemp(dir));
    const char *src = getenv("BP_SRC") ? getenv("BP_SRC") : "..";
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/onnx/shape_diff_gen.py' '%s' %d 1", src, dir, N_CASES);
    REQUIRE(system(cmd) == 0);
    char res[4200];
    snprintf(res, sizeof res, "%s/results.json", dir);
    json_error_t je;
    json_t *root = json_load_file(res, 0, &je);
    REQUIRE(root && json_is_array(root));
    size_t i;
    json_t *c;
    json_array_foreach(root, i, c) run_case(dir, c);
    printf("test_onnx_shape_diff: %zu models: %d accepted by both (%d dims compared), %d rejected by bufplan, "
           "%d accepted by bufplan but not by onnx's strict inference; %d disagreements\n",
           json_array_size(root), n_both, n_dims_compared, n_bp_rejects, n_onnx_rejects, n_mismatch);
    CHECK(json_array_size(root) > N_CASES / 2 && n_both > 500 && n_dims_compared > 1000);
    json_decref(root);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_status();
}
