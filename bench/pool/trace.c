/*
 * pool_trace — makes alloc/free traces for the pool benchmark, in the CSV
 * format `event_type,tensor_name,bytes` (ALLOC rows carry the bytes, FREE
 * rows may leave them empty).
 *
 *   pool_trace plan PLAN.json        events of a plan written by
 *                                    `bufplan plan GRAPH --format json`: the
 *                                    order in which a runtime without a plan
 *                                    would allocate and free every tensor
 *   pool_trace synthetic SEED N      N mixed events: tensor-like sizes
 *                                    (log-uniform 256 B .. 16 MiB), mostly
 *                                    short lifetimes, some long-lived
 */
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
    if (argc == 4 && !strcmp(argv[1], "synthetic")) return synthetic(strtoull(argv[2], NULL, 10), atol(argv[3]));
    fprintf(stderr, "usage: pool_trace plan PLAN.json | pool_trace synthetic SEED N\n");
    return 2;
}
