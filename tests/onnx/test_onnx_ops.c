/*
 * Operator coverage: tests/onnx/op_models.py writes one small model per
 * ai.onnx operator (every op type of the importer's dispatch table at opset
 * 22, older versions where their form differs, copies at opsets 17, 13, 11
 * and 7 where the form is the same) with
 * hand-computed output shapes; each is imported here and every output must
 * have exactly the expected element type and shape ("?" any symbol, a name
 * that dim_param, "dyn" a tensor without a byte size).  Where the case has
 * onnx 1.12's own inference (opset <= 17), its element type, rank and known
 * dimensions must agree too.  Bad-input cases must fail with their message.
 * Skips with a message when /usr/bin/python3 (or python3) cannot import onnx.
 */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "onnx_types.h"

static const char *find_python(void)
{
    static const char *cands[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import onnx, numpy' >/dev/null 2>&1", cands[i]);
        if (system(cmd) == 0) return cands[i];
    }
    return NULL;
}

static int n_outputs, n_onnx, n_errors;

/* Output `name` against its expectation; false (with why) when it differs. */
static bool check_expect(const bp_graph *g, int32_t t, const json_t *ex, char *why, size_t wn)
{
    int64_t d[64];
    int r = bp_graph_tensor_dims(g, t, d, 64);
    if (json_is_string(ex)) {   /* "dyn": no byte size, planned as [?] bytes */
        if (!bp_graph_tensor_is_dynamic(g, t) || bp_graph_tensor_dtype(g, t) != BP_DT_U8 || r != 1) {
            snprintf(why, wn, "expected a dynamic tensor of unknown size, got %s of rank %d", bp_dtype_name(bp_graph_tensor_dtype(g, t)), r);
            return false;
        }
        return true;
    }
    bp_dtype dt = onnx_dt((int)json_integer_value(json_object_get(ex, "dtype")));
    const json_t *sh = json_object_get(ex, "shape");
    int re = (int)json_array_size(sh);
    if (bp_graph_tensor_dtype(g, t) != dt) {
        snprintf(why, wn, "dtype %s, expected %s", bp_dtype_name(bp_graph_tensor_dtype(g, t)), bp_dtype_name(dt));
        return false;
    }
    if (r != re) { snprintf(why, wn, "rank %d, expected %d", r, re); return false; }
    bool any_sym = false;
    for (int i = 0; i < re; i++) {
        const json_t *e = json_array_get(sh, (size_t)i);
        if (json_is_integer(e)) {
            if (d[i] != json_integer_value(e)) {
                snprintf(why, wn, "dim %d is %s%lld, expected %lld", i, d[i] == BP_DIM_SYMBOLIC ? "symbolic " : "",
                         d[i] == BP_DIM_SYMBOLIC ? 0LL : (long long)d[i], (long long)json_integer_value(e));
                return false;
            }
            continue;
        }
        any_sym = true;
        const char *want = json_string_value(e), *got = bp_graph_tensor_dim_symbol(g, t, i);
        if (d[i] != BP_DIM_SYMBOLIC) { snprintf(why, wn, "dim %d is %lld, expected a symbol", i, (long long)d[i]); return false; }
        if (strcmp(want, "?") && (!got || strcmp(got, want))) {
            snprintf(why, wn, "dim %d is symbol %s, expected %s", i, got ? got : "(none)", want);
            return false;
        }
    }
    if (bp_graph_tensor_is_dynamic(g, t) != any_sym) { snprintf(why, wn, "dynamic is %d", !any_sym); return false; }
    return true;
}

/* Output t against onnx's inference `on` (elem_type, shape); false (with why) when they disagree. */
static bool check_onnx(const bp_graph *g, int32_t t, const json_t *on, char *why, size_t wn)
{
    int et = (int)json_integer_value(json_object_get(on, "elem_type"));
    if (onnx_dt(et) == BP_DT_UNKNOWN) return true;   /* strings, 4-bit: no byte size, planned as dynamic */
    if (bp_graph_tensor_dtype(g, t) != onnx_dt(et)) {
        snprintf(why, wn, "dtype %s, onnx %s", bp_dtype_name(bp_graph_tensor_dtype(g, t)), bp_dtype_name(onnx_dt(et)));
        return false;
    }
    const json_t *sh = json_object_get(on, "shape");
    if (!json_is_array(sh)) return true;
    int64_t d[64];
    int r = bp_graph_tensor_dims(g, t, d, 64), ro = (int)json_array_size(sh);
    if (r != ro) { snprintf(why, wn, "rank %d, onnx %d", r, ro); return false; }
    for (int i = 0; i < ro; i++) {
        const json_t *e = json_array_get(sh, (size_t)i);
        if (json_is_integer(e) && d[i] != json_integer_value(e)) {
            snprintf(why, wn, "dim %d is %lld, onnx %lld", i, (long long)d[i], (long long)json_integer_value(e));
            return false;
        }
    }
    return true;
}

static void run_case(const json_t *c, FILE *quiet)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *file = json_string_value(json_object_get(c, "file"));
    const json_t *errw = json_object_get(c, "err"), *orc = json_object_get(c, "onnx");
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    o.warnings = quiet;
    bp_graph *g = NULL;
    bp_error err;
    bp_status s = bp_onnx_read(file, &o, NULL, &g, &err);
    if (json_is_string(errw)) {
        CHECK_MSG(s != BP_OK, "%s: imported, expected an error saying '%s'", name, json_string_value(errw));
        CHECK_MSG(s == BP_OK || strstr(err.msg, json_string_value(errw)), "%s: the message does not say '%s': %s", name,
                  json_string_value(errw), err.msg);
        CHECK_MSG(s == BP_OK || strstr(err.msg, file), "%s: the message does not name the file: %s", name, err.msg);
        n_errors++;
        bp_graph_free(g);
        return;
    }
    CHECK_MSG(s == BP_OK, "%s: %s", name, err.msg);
    if (s) return;
    const json_t *outs = json_object_get(c, "outputs"), *ent;
    size_t i;
    json_array_foreach(outs, i, ent) {
        const char *on = json_string_value(json_object_get(ent, "name"));
        int32_t t = bp_graph_find_tensor(g, on);
        char why[300] = "";
        CHECK_MSG(t >= 0, "%s: output %s is not in the graph", name, on);
        if (t < 0) continue;
        n_outputs++;
        CHECK_MSG(check_expect(g, t, json_object_get(ent, "expect"), why, sizeof why), "%s: %s: %s", name, on, why);
        const json_t *oe = json_is_object(orc) ? json_object_get(orc, on) : NULL;
        if (!oe) continue;
        n_onnx++;
        CHECK_MSG(check_onnx(g, t, oe, why, sizeof why), "%s: %s: %s (against onnx 1.12)", name, on, why);
    }
    bp_graph_free(g);
}

int main(void)
{
    if (!bp_onnx_available()) { printf("SKIP: bufplan was built without ONNX support\n"); return 0; }
    const char *py = find_python();
    if (!py) { printf("SKIP: no python3 with the onnx and numpy modules (apt-get install python3-onnx)\n"); return 0; }
    char dir[] = "/tmp/bp_onnx_ops_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    const char *src = getenv("BP_SRC") ? getenv("BP_SRC") : ".";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s/tests/onnx/op_models.py' '%s' '%s/src/onnx/infer.c'", py, src, dir, src);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "the model generator failed (%s)", cmd);
    char path[600];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    json_error_t je;
    json_t *cases = rc == 0 ? json_load_file(path, 0, &je) : NULL;
    CHECK_MSG(rc != 0 || cases, "cannot read %s: %s", path, je.text);
    FILE *quiet = fopen("/dev/null", "w");
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) run_case(c, quiet);
    if (quiet) fclose(quiet);
    size_t n = json_array_size(cases);
    CHECK_MSG(n >= 500, "only %zu cases", n);
    printf("%zu models: %d outputs as expected, %d of them compared with onnx 1.12, %d bad inputs refused\n", n, n_outputs,
           n_onnx, n_errors);
    json_decref(cases);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_status();
}
