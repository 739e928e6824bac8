/* Every ONNX model in $BP_DATA/onnx (when bufplan is built with ONNX): the
 * planned run on 1 and 2 threads and the dynamic run agree byte for byte
 * with a safe run, with digest kernels. */
#define _DEFAULT_SOURCE
#include "exec_util.h"

#include <dirent.h>

/* Every ONNX model: planned vs safe (and dynamic) with digest kernels. */
static int onnx_models(char paths[][512], int cap)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/onnx", test_data_dir());
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < cap) {
        if (de->d_name[0] == '.') continue;
        char sub[1200];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        DIR *d2 = opendir(sub);
        if (!d2) continue;
        struct dirent *f;
        while ((f = readdir(d2)) && n < cap) {
            size_t L = strlen(f->d_name);
            if (L > 5 && !strcmp(f->d_name + L - 5, ".onnx")) snprintf(paths[n++], 512, "%.250s/%.250s", sub, f->d_name);
        }
        closedir(d2);
    }
    closedir(d);
    return n;
}

static void test_onnx(void)
{
    static char paths[64][512];
    int n = onnx_models(paths, 64);
    int ran = 0;
    for (int i = 0; i < n; i++) {
        bp_graph *g = NULL;
        bp_error e;
        bp_status s = bp_graph_read(paths[i], NULL, &g, &e);
        if (s == BP_ERR_UNSUPPORTED && !ran && i == 0) { fprintf(stderr, "note: ONNX not built in, models skipped\n"); return; }
        if (s) { fprintf(stderr, "note: %s not imported: %s\n", paths[i], e.msg); continue; }
        bp_plan *p = NULL;
        s = bp_plan_graph(g, NULL, &p, &e);
        CHECK_MSG(s == BP_OK, "%s: plan: %s", paths[i], e.msg);
        if (!s) {
            bp_exec *safe = eu_run(g, p, BP_EXEC_SAFE, 1, 0, 0);
            bp_exec *pl = eu_run(g, p, BP_EXEC_PLANNED, 1, 0, 0);
            if (safe && pl) CHECK_MSG(eu_diff_outputs(g, pl, safe) == 0, "%s: planned differs from safe", paths[i]);
            bp_exec_free(pl);
            bp_exec *pp = eu_run(g, p, BP_EXEC_PLANNED, 2, 0, 0);
            if (safe && pp) CHECK_MSG(eu_diff_outputs(g, pp, safe) == 0, "%s: planned x2 differs from safe", paths[i]);
            bp_exec_free(pp);
            bp_exec *dy = eu_run(g, p, BP_EXEC_DYNAMIC, 1, 0, 0);
            if (safe && dy) CHECK_MSG(eu_diff_outputs(g, dy, safe) == 0, "%s: dynamic differs from safe", paths[i]);
            bp_exec_free(dy);
            bp_exec_free(safe);
            ran++;
        }
        bp_plan_free(p);
        bp_graph_free(g);
    }
    fprintf(stderr, "onnx: %d of %d models run\n", ran, n);
}

int main(void)
{
    test_onnx();
    return check_status();
}
