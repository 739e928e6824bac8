/*
 * Inferred shapes against onnx's own shape inference (tests/onnx_oracle.py,
 * onnx.shape_inference.infer_shapes(strict_mode=False, data_prop=True)):
 * for every model under $BP_DATA/onnx and every node output that onnx types,
 * the element type must agree, and where onnx knows the rank and a dimension's
 * value, bufplan must have the same rank and the same value.  Where onnx has
 * a symbol or nothing, bufplan may know more (it folds Div/Mod shape
 * arithmetic that onnx 1.12 does not).  Dynamic models run twice: bound as in
 * the data README, and unbound (symbols must then propagate without error).
 * Skips (exit 77 is not used: ctest would report "not run") with a message
 * when python3 with the onnx module is absent.
 */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "onnx_types.h"

static const char *python;   /* an interpreter that can import onnx */

static bool find_python(void)
{
    static const char *cands[] = {"python3", "/usr/bin/python3", "python"};
    const char *env = getenv("BP_PYTHON");
    if (env && *env) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s -c 'import onnx' >/dev/null 2>&1", env);
        if (system(cmd) == 0) { python = env; return true; }
    }
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s -c 'import onnx' >/dev/null 2>&1", cands[i]);
        if (system(cmd) == 0) { python = cands[i]; return true; }
    }
    return false;
}

typedef struct binding {
    const char *file;        /* basename */
    const char *dim_name;    /* --dim, or NULL */
    const char *shape_name;  /* --shape, or NULL */
    int rank;
    int64_t dims[4];
} binding;

static const binding bindings[] = {
    {"embedding_model.onnx", NULL, "input_1", 4, {1, 76, 32, 1}},
    {"ch_PP-OCRv4_det_infer.onnx", NULL, "x", 4, {1, 3, 640, 640}},
};

static int n_models, n_compared, n_static_compared, n_mismatch;

/* Compares one import against one oracle run. */
static void compare(const char *path, const binding *b, bool bound)
{
    char out[] = "/tmp/bp_onnx_oracle_XXXXXX";
    int fd = mkstemp(out);
    REQUIRE(fd >= 0);
    close(fd);
    char args[256] = "";
    bp_onnx_options o;
    bp_onnx_options_init(&o);
    const char *dn[1];
    int64_t dv[1];
    const char *sn[1];
    int sr[1];
    const int64_t *sd[1];
    if (bound && b && b->shape_name) {
        snprintf(args, sizeof args, "--shape %s=%lldx%lldx%lldx%lld", b->shape_name, (long long)b->dims[0],
                 (long long)b->dims[1], (long long)b->dims[2], (long long)b->dims[3]);
        sn[0] = b->shape_name; sr[0] = b->rank; sd[0] = b->dims;
        o.n_shapes = 1; o.shape_names = sn; o.shape_ranks = sr; o.shape_dims = sd;
    } else if (bound && b && b->dim_name) {
        snprintf(args, sizeof args, "--dim %s=1", b->dim_name);
        dn[0] = b->dim_name; dv[0] = 1;
        o.n_dims = 1; o.dim_names = dn; o.dim_values = dv;
    }
    char cmd[2048];
    const char *src = getenv("BP_SRC") ? getenv("BP_SRC") : ".";
    snprintf(cmd, sizeof cmd, "%s '%s/tests/onnx/onnx_oracle.py' '%s' %s -o '%s'", python, src, path, args, out);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "oracle failed on %s (%s)", path, cmd);
    json_error_t je;
    json_t *root = rc == 0 ? json_load_file(out, 0, &je) : NULL;
    unlink(out);
    if (!root) { check_failures++; fprintf(stderr, "%s: cannot read the oracle's JSON\n", path); return; }
    FILE *devnull = fopen("/dev/null", "w");
    o.warnings = devnull;
    bp_graph *g = NULL;
    bp_error err;
    bp_status s = bp_onnx_read(path, &o, NULL, &g, &err);
    if (devnull) fclose(devnull);
    CHECK_MSG(s == BP_OK, "%s: %s", path, err.msg);
    if (s) { json_decref(root); return; }
    n_models++;
    json_t *tens = json_object_get(root, "tensors");
    const char *name;
    json_t *ent;
    int shown = 0, cmp = 0;
    json_object_foreach(tens, name, ent) {
        int32_t t = bp_graph_find_tensor(g, name);
        char why[256] = "";
        int et = (int)json_integer_value(json_object_get(ent, "elem_type"));
        json_t *shape = json_object_get(ent, "shape");
        if (t < 0) { snprintf(why, sizeof why, "not in the graph"); goto report; }
        if (onnx_dt(et) != BP_DT_UNKNOWN && bp_graph_tensor_dtype(g, t) != onnx_dt(et)) {
            snprintf(why, sizeof why, "dtype %s, onnx %s", bp_dtype_name(bp_graph_tensor_dtype(g, t)), bp_dtype_name(onnx_dt(et)));
            goto report;
        }
        if (json_is_array(shape)) {
            int64_t d[64];
            int r = bp_graph_tensor_dims(g, t, d, 64);
            int ro = (int)json_array_size(shape);
            bool all_int = true;
            for (int i = 0; i < ro; i++) all_int &= json_is_integer(json_array_get(shape, i)) != 0;
            if (r != ro || bp_graph_tensor_rank(g, t) != ro) { snprintf(why, sizeof why, "rank %d, onnx %d", r, ro); goto report; }
            for (int i = 0; i < ro; i++) {
                json_t *od = json_array_get(shape, i);
                if (!json_is_integer(od)) continue;
                if (d[i] != json_integer_value(od)) {
                    if (d[i] == BP_DIM_SYMBOLIC) snprintf(why, sizeof why, "dim %d symbolic, onnx %lld", i, (long long)json_integer_value(od));
                    else snprintf(why, sizeof why, "dim %d is %lld, onnx %lld", i, (long long)d[i], (long long)json_integer_value(od));
                    goto report;
                }
            }
            if (all_int) {
                n_static_compared++;
                if (bp_graph_tensor_is_dynamic(g, t)) { snprintf(why, sizeof why, "dynamic, onnx static"); goto report; }
            }
        }
        cmp++;
        continue;
    report:
        n_mismatch++;
        check_failures++;
        if (shown++ < 8) {
            char *js = json_dumps(ent, JSON_COMPACT);
            fprintf(stderr, "%s%s: tensor \"%s\": %s (onnx: %s)\n", path, bound ? "" : " (unbound)", name, why, js ? js : "");
            free(js);
        }
    }
    n_compared += cmp;
    printf("%-34s %-8s %5d tensors agree with onnx%s\n", strrchr(path, '/') + 1, bound ? "bound" : "unbound", cmp,
           shown ? " (MISMATCHES)" : "");
    bp_graph_free(g);
    json_decref(root);
}

static int list_models(const char *dir, char paths[][512], int max)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.') continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".onnx")) { snprintf(paths[n++], 512, "%s", p); continue; }
        if (!strchr(e->d_name, '.')) n += list_models(p, paths + n, max - n);
    }
    closedir(d);
    return n;
}

static int cmp_str(const void *a, const void *b) { return strcmp(a, b); }

int main(void)
{
    if (!bp_onnx_available()) { printf("SKIP: bufplan was built without ONNX support\n"); return 0; }
    if (!find_python()) {
        printf("SKIP: no python3 with the onnx module (apt-get install python3-onnx); shapes not compared with onnx\n");
        return 0;
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/onnx", test_data_dir());
    static char paths[64][512];
    int n = list_models(dir, paths, 64);
    qsort(paths, (size_t)n, sizeof paths[0], cmp_str);
    CHECK_MSG(n >= 28, "found %d models under %s, expected 28", n, dir);
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(paths[i], '/') + 1;
        const binding *b = NULL;
        static binding tv = {NULL, "N", NULL, 0, {0}};
        for (size_t j = 0; j < sizeof bindings / sizeof bindings[0]; j++)
            if (!strcmp(bindings[j].file, base)) b = &bindings[j];
        if (!b && strstr(paths[i], "/torchvision/")) b = &tv;
        compare(paths[i], b, true);
        /* unbound: symbols propagate; a few models keep the run short */
        if (b && (!strcmp(base, "embedding_model.onnx") || !strcmp(base, "ch_PP-OCRv4_det_infer.onnx") ||
                  !strcmp(base, "resnet18.onnx") || !strcmp(base, "shufflenet_v2_x1_0.onnx") || !strcmp(base, "vit_b_16.onnx")))
            compare(paths[i], b, false);
    }
    printf("%d imports, %d tensors compared (%d fully static in onnx), %d mismatches\n", n_models, n_compared,
           n_static_compared, n_mismatch);
    CHECK(n_mismatch == 0);
    return check_status();
}
