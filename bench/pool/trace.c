/*
 * pool_trace — makes alloc/free traces for the pool benchmark, in the CSV
 * format `event_type,tensor_name,bytes` (ALLOC rows carry the bytes, FREE
 * rows may leave them empty).
 *
 *   pool_trace plan PLAN.json        events of a plan written by
 *                                    `bufplan plan GRAPH --format json`: the
 *                                    order in which a runtime without a plan
 *                                    would allocate and free every tensor
 *   pool_trace graph G [--dim S=N]   a graph run without a plan: G is a
 *                                    generator name (resnet50, transformer,
 *                                    randwire, ...), a bufplan-graph .json or
 *                                    an .onnx model (--dim binds symbolic
 *                                    dims).  The ops run in FIFO topological
 *                                    (Kahn) order; every storage (a tensor and
 *                                    its views / in-place aliases) is
 *                                    allocated when its producer runs, at the
 *                                    size of its largest member, and freed
 *                                    after its last reader, as the executor's
 *                                    dynamic mode does.  Graph inputs (the
 *                                    caller's memory), weights and outputs
 *                                    (freed at the end of the replay) are not
 *                                    freed inside the trace.
 *   pool_trace synthetic SEED N      N mixed events: tensor-like sizes
 *                                    (log-uniform 256 B .. 16 MiB), mostly
 *                                    short lifetimes, some long-lived
 */
#include "bufplan.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int from_plan(const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) { fprintf(stderr, "pool_trace: %s:%d: %s\n", path, je.line, je.text); return 2; }
    json_t *tensors = json_object_get(root, "tensors"), *events = json_object_get(root, "events");
    if (!json_is_array(tensors) || !json_is_array(events)) {
        fprintf(stderr, "pool_trace: %s: no \"tensors\" or \"events\" array\n", path);
        json_decref(root);
        return 2;
    }
    json_t *bytes = json_object(), *live = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(tensors, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        json_t *b = json_object_get(t, "bytes");
        if (name && json_is_integer(b)) json_object_set(bytes, name, b);
    }
    printf("event_type,tensor_name,bytes\n");
    long n = 0;
    json_array_foreach(events, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        const char *name = json_string_value(json_object_get(t, "tensor"));
        if (!type || !name) continue;
        json_t *b = json_object_get(bytes, name);
        if (!strcmp(type, "ALLOC") && b && json_integer_value(b) > 0 && !json_object_get(live, name)) {
            printf("ALLOC,%s,%lld\n", name, (long long)json_integer_value(b));
            json_object_set_new(live, name, json_true());
            n++;
        } else if (!strcmp(type, "FREE") && json_object_get(live, name)) {
            printf("FREE,%s,\n", name);
            json_object_del(live, name);
            n++;
        }
    }
    json_decref(bytes);
    json_decref(live);
    json_decref(root);
    if (n == 0) { fprintf(stderr, "pool_trace: %s: no ALLOC events with bytes\n", path); return 1; }
    return 0;
}

static int from_graph(const char *what, int n_dims, char **dims)
{
    bp_error err = {0};
    bp_graph *g = NULL;
    bp_status st;
    size_t len = strlen(what);
    const char *names[16];
    int64_t vals[16];
    char buf[16][64];
    if (n_dims > 16) n_dims = 16;
    for (int i = 0; i < n_dims; i++) {
        snprintf(buf[i], sizeof buf[i], "%s", dims[i]);
        char *eq = strchr(buf[i], '=');
        if (!eq) { fprintf(stderr, "pool_trace: --dim %s: expected SYM=N\n", dims[i]); return 2; }
        *eq = 0;
        names[i] = buf[i];
        vals[i] = atoll(eq + 1);
    }
    if (len > 5 && !strcmp(what + len - 5, ".onnx")) {
        bp_onnx_options oo;
        bp_onnx_options_init(&oo);
        oo.n_dims = n_dims;
        oo.dim_names = names;
        oo.dim_values = vals;
        st = bp_onnx_read(what, &oo, NULL, &g, &err);
    } else if (len > 5 && !strcmp(what + len - 5, ".json")) {
        st = bp_graph_read(what, NULL, &g, &err);
    } else {
        bp_gen_options go;
        bp_gen_options_init(&go);
        st = bp_gen(what, &go, NULL, &g, &err);
    }
    if (st) { fprintf(stderr, "pool_trace: %s: %s\n", what, err.msg); return 2; }
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.sched = BP_SCHED_KAHN;
    po.assign = BP_ASSIGN_NAIVE; /* offsets are not used: the trace has only sizes */
    bp_plan *p = NULL;
    if ((st = bp_plan_graph(g, &po, &p, &err))) {
        fprintf(stderr, "pool_trace: %s: %s\n", what, err.msg);
        bp_graph_free(g);
        return 2;
    }
    int32_t nt = bp_plan_n_tensors(p);
    uint64_t *size = calloc((size_t)nt + 1, sizeof *size);
    char *live = calloc((size_t)nt + 1, 1);
    for (int32_t t = 0; t < nt; t++) {
        const bp_tensor_plan *tp = bp_plan_tensor(p, t);
        int32_t r = tp->alias_of >= 0 ? tp->alias_of : t;
        if (tp->bytes > size[r]) size[r] = tp->bytes;
    }
    const bp_event *ev = bp_plan_events(p);
    size_t ne = bp_plan_n_events(p);
    long n = 0, skipped = 0;
    printf("event_type,tensor_name,bytes\n");
    for (size_t i = 0; i < ne; i++) {
        int32_t t = ev[i].tensor;
        if (ev[i].type == BP_EV_EXEC || t < 0) continue;
        const char *name = bp_graph_tensor_name(g, t);
        if (ev[i].type == BP_EV_ALLOC) {
            if (live[t]) continue;
            if (!size[t]) { skipped++; continue; } /* a still-symbolic size */
            printf("ALLOC,%s,%llu\n", name, (unsigned long long)size[t]);
            live[t] = 1;
            n++;
        } else if (live[t]) {
            printf("FREE,%s,\n", name);
            live[t] = 0;
            n++;
        }
    }
    if (skipped) fprintf(stderr, "pool_trace: %s: %ld storages of unknown size left out\n", what, skipped);
    free(size);
    free(live);
    bp_plan_free(p);
    bp_graph_free(g);
    if (n == 0) { fprintf(stderr, "pool_trace: %s: no allocations\n", what); return 1; }
    return 0;
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int synthetic(uint64_t seed, long n)
{
    enum { SLOTS = 256 };
    long live[SLOTS];
    int nlive = 0;
    long next = 0;
    printf("event_type,tensor_name,bytes\n");
    for (long e = 0; e < n; e++) {
        int do_alloc = nlive == 0 || (nlive < SLOTS && rnd(&seed) % 100 < (nlive < 16 ? 70 : 40));
        if (do_alloc) {
            double u = (double)(rnd(&seed) % 1000000) / 1e6;
            uint64_t b = (uint64_t)exp(log(256.0) + u * (log(16.0 * 1048576) - log(256.0)));
            printf("ALLOC,t%ld,%llu\n", next, (unsigned long long)b);
            live[nlive++] = next++;
        } else {
            /* mostly the young die first (activations), sometimes an old one */
            int j = rnd(&seed) % 4 ? nlive - 1 - (int)(rnd(&seed) % (nlive < 4 ? (unsigned)nlive : 4u))
                                   : (int)(rnd(&seed) % (unsigned)nlive);
            printf("FREE,t%ld,\n", live[j]);
            live[j] = live[--nlive];
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "plan")) return from_plan(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "graph")) {
        char *dims[16];
        int nd = 0;
        for (int i = 3; i + 1 < argc && nd < 16; i += 2)
            if (!strcmp(argv[i], "--dim")) dims[nd++] = argv[i + 1];
        return from_graph(argv[2], nd, dims);
    }
    if (argc == 4 && !strcmp(argv[1], "synthetic")) return synthetic(strtoull(argv[2], NULL, 10), atol(argv[3]));
    fprintf(stderr, "usage: pool_trace plan PLAN.json | graph G [--dim S=N] | synthetic SEED N\n");
    return 2;
}
