/* Regression inputs (tests/regress/HARNESS/ files): every input a fuzz harness
 * once failed on is fed again to the same harness code (the fuzz/ sources, compiled
 * in here with renamed entry points), so the reader, planner and verifier
 * checks are exactly those the fuzzer ran.  A failure aborts (the test then
 * fails with the harness's message).  tests/regress/known/ holds inputs of
 * open issues; they run only with BP_REGRESS_KNOWN=1. */
#define _GNU_SOURCE
#include <bufplan.h>
#include <bufplan_limits.h>
#include "check.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rg_graph_json(const uint8_t *data, size_t size);
int rg_onnx(const uint8_t *data, size_t size);
int rg_csv(const uint8_t *data, size_t size);
int rg_plan(const uint8_t *data, size_t size);
int rg_random_graph(const uint8_t *data, size_t size);
int rg_config(const uint8_t *data, size_t size);
int rg_plan_cache(const uint8_t *data, size_t size);
int rg_op_shapes(const uint8_t *data, size_t size);

#define LLVMFuzzerTestOneInput rg_graph_json
#include "../../fuzz/fuzz_graph_json.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput rg_onnx
#include "../../fuzz/fuzz_onnx.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput rg_csv
#include "../../fuzz/fuzz_csv.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput rg_plan
#include "../../fuzz/fuzz_plan.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput rg_random_graph
#include "../../fuzz/fuzz_random_graph.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput rg_config
#include "../../fuzz/fuzz_config.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput rg_plan_cache
#include "../../fuzz/fuzz_plan_cache.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput rg_op_shapes
#include "../../fuzz/fuzz_op_shapes.c"
#undef LLVMFuzzerTestOneInput

static int run_dir(const char *dir, int (*fn)(const uint8_t *, size_t))
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t cap = 1 << 16, len = 0;
        uint8_t *buf = malloc(cap);
        REQUIRE(buf);
        size_t r;
        while ((r = fread(buf + len, 1, cap - len, f)) > 0) {
            len += r;
            if (len == cap) { cap *= 2; buf = realloc(buf, cap); REQUIRE(buf); }
        }
        fclose(f);
        fprintf(stderr, "regress: %s (%zu bytes)\n", path, len);
        fn(buf, len);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

int main(void)
{
    const char *src = getenv("BP_SRC");
    char base[4096];
    snprintf(base, sizeof base, "%s/tests/regress", src && *src ? src : "..");
    static const struct { const char *dir; int (*fn)(const uint8_t *, size_t); } h[] = {
        {"fuzz_graph_json", rg_graph_json}, {"fuzz_onnx", rg_onnx}, {"fuzz_csv", rg_csv},
        {"fuzz_plan", rg_plan}, {"fuzz_random_graph", rg_random_graph},
        {"fuzz_config", rg_config}, {"fuzz_plan_cache", rg_plan_cache}, {"fuzz_op_shapes", rg_op_shapes},
        {"fuzz_onnx_struct", rg_onnx},   /* the structure-aware mutator's finds: fuzz_onnx's harness */
        {"../../fuzz/corpus/fuzz_onnx_struct", rg_onnx},   /* the corpus kept in the repository */
    };
    int total = 0;
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", base, h[i].dir);
        total += run_dir(dir, h[i].fn);
        if (getenv("BP_REGRESS_KNOWN")) {
            snprintf(dir, sizeof dir, "%s/known/%s", base, h[i].dir);
            total += run_dir(dir, h[i].fn);
        }
    }
    printf("test_regress: %d inputs replayed\n", total);
    CHECK(total > 0);
    return check_status();
}
