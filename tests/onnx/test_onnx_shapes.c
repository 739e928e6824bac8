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
    const char *shape_name[2];  /* --shape, or NULL */
    int rank[2];
    int64_t dims[2][4];
    const char *skip;        /* a top-level body attribute not compared, or NULL */
} binding;

static const binding bindings[] = {
    {"embedding_model.onnx", NULL, {"input_1", NULL}, {4, 0}, {{1, 76, 32, 1}, {0}}, NULL},
    {"ch_PP-OCRv4_det_infer.onnx", NULL, {"x", NULL}, {4, 0}, {{1, 3, 640, 640}, {0}}, NULL},
    /* Silero's If holds its 16 kHz network (then) and its 8 kHz one (else),
     * each compared with the input length it is made for (512 and 256
     * samples); the other branch, fed a length it is not made for, folds its
     * own shape tests differently from the shapes the exporter declared. */
    {"silero_vad_v5.onnx", NULL, {"input", "state"}, {2, 3}, {{1, 512}, {2, 1, 128}}, "else_branch"},
    {"silero_vad_v5.onnx", NULL, {"input", "state"}, {2, 3}, {{1, 256}, {2, 1, 128}}, "then_branch"},
};

static int n_models, n_compared, n_static_compared, n_mismatch;

/* The tensors of one graph (or body) against the oracle's entries; returns
 * how many agree, counts mismatches. */
static int compare_tensors(const char *path, bool bound, const bp_graph *g, json_t *tens, int *shown)
{
    const char *name;
    json_t *ent;
    int cmp = 0;
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
        if ((*shown)++ < 8) {
            char *js = json_dumps(ent, JSON_COMPACT);
            fprintf(stderr, "%s%s: tensor \"%s\": %s (onnx: %s)\n", path, bound ? "" : " (unbound)", name, why, js ? js : "");
            free(js);
        }
    }
    return cmp;
}

/* The body at path [[node, attribute], ...] (attribute: then_branch,
 * else_branch, body), or NULL when the importer did not keep it. */
static const bp_graph *find_body(const bp_graph *g, json_t *path)
{
    size_t i;
    json_t *step;
    json_array_foreach(path, i, step) {
        const char *node = json_string_value(json_array_get(step, 0)), *attr = json_string_value(json_array_get(step, 1));
        int32_t op = node ? bp_graph_find_op(g, node) : -1;
        const bp_graph *next = NULL;
        for (int32_t k = 0; k < bp_graph_n_bodies(g) && op >= 0 && attr; k++) {
            bp_body_info b;
            if (bp_graph_body(g, k, &b, NULL) || b.op != op) continue;
            bool want = !strcmp(attr, "then_branch") ? b.kind == BP_BODY_THEN
                      : !strcmp(attr, "else_branch") ? b.kind == BP_BODY_ELSE
                                                      : b.kind == BP_BODY_LOOP || b.kind == BP_BODY_SCAN;
            if (want) next = b.graph;
        }
        if (!next) return NULL;
        g = next;
    }
    return g;
}

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
    const char *sn[2];
    int sr[2];
    const int64_t *sd[2];
    if (bound && b && b->shape_name[0]) {
        size_t L = 0;
        for (int k = 0; k < 2 && b->shape_name[k]; k++) {
            L += (size_t)snprintf(args + L, sizeof args - L, " --shape %s=", b->shape_name[k]);
            for (int j = 0; j < b->rank[k]; j++) L += (size_t)snprintf(args + L, sizeof args - L, "%s%lld", j ? "x" : "", (long long)b->dims[k][j]);
            sn[k] = b->shape_name[k]; sr[k] = b->rank[k]; sd[k] = b->dims[k];
            o.n_shapes = k + 1;
        }
        o.shape_names = sn; o.shape_ranks = sr; o.shape_dims = sd;
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
    int shown = 0, cmp = compare_tensors(path, bound, g, json_object_get(root, "tensors"), &shown);
    /* control-flow bodies: each found by its path of (node, attribute); a
     * branch the importer dropped (its condition folded) is not compared */
    size_t bi;
    json_t *be;
    int n_bodies = 0;
    json_array_foreach(json_object_get(root, "bodies"), bi, be) {
        json_t *bp = json_object_get(be, "path");
        const char *top = json_string_value(json_array_get(json_array_get(bp, 0), 1));
        if (bound && b && b->skip && top && !strcmp(top, b->skip)) continue;
        const bp_graph *bg = find_body(g, bp);
        if (!bg) continue;
        n_bodies++;
        cmp += compare_tensors(path, bound, bg, json_object_get(be, "tensors"), &shown);
    }
    n_compared += cmp;
    printf("%-34s %-8s %5d tensors agree with onnx%s%s\n", strrchr(path, '/') + 1, bound ? "bound" : "unbound", cmp,
           n_bodies ? " (bodies of control flow included)" : "", shown ? " (MISMATCHES)" : "");
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
    char cfdir[512];
    snprintf(cfdir, sizeof cfdir, "%s/controlflow", test_data_dir());
    int n_cf = list_models(cfdir, paths + n, 64 - n);
    CHECK_MSG(n_cf >= 1, "found no model under %s", cfdir);
    n += n_cf;
    qsort(paths, (size_t)n, sizeof paths[0], cmp_str);
    CHECK_MSG(n >= 29, "found %d models under %s and %s, expected 29", n, dir, cfdir);
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(paths[i], '/') + 1;
        const binding *b = NULL;
        static binding tv = {NULL, "N", {NULL, NULL}, {0, 0}, {{0}, {0}}, NULL};
        for (size_t j = 0; j < sizeof bindings / sizeof bindings[0]; j++)
            if (!strcmp(bindings[j].file, base)) {
                if (b) compare(paths[i], b, true);   /* the model has more than one binding */
                b = &bindings[j];
            }
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
