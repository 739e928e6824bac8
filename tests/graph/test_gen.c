/* Tests for the graph generators (gen.c) and the backward pass (backward.c):
 * every kind and its training variant finalizes; same seed -> same graph;
 * shapes of well-known layers; the Watts-Strogatz wiring keeps its edge
 * count and rewires about p of the edges; the backward pass keeps every
 * saved activation alive until its gradient op and gives every weight a
 * gradient output; bad options and failing allocations are reported. */
#include "check.h"

#include <bufplan.h>
#include <stdint.h>

static const char *const kinds[] = {"chain", "diamond", "resnet50", "unet", "transformer", "randwire"};
#define N_KINDS (int)(sizeof kinds / sizeof kinds[0])

static bp_graph *gen(const char *kind, const bp_gen_options *o)
{
    bp_error err = {0};
    bp_graph *g = NULL;
    bp_status s = bp_gen(kind, o, NULL, &g, &err);
    CHECK_MSG(s == BP_OK && g, "gen %s: %s", kind, err.msg);
    return g;
}

static uint64_t mix(uint64_t h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); return h * 0x100000001b3ull; }
static uint64_t mix_str(uint64_t h, const char *s) { while (*s) h = mix(h, (unsigned char)*s++); return mix(h, 0xff); }

/* A fingerprint of everything in the graph: names, types, shapes, bytes,
 * flags, views, op inputs/outputs and costs. */
static uint64_t fingerprint(const bp_graph *g)
{
    uint64_t h = 1;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
        h = mix_str(h, bp_graph_tensor_name(g, t));
        h = mix(h, bp_graph_tensor_bytes(g, t));
        h = mix(h, bp_graph_tensor_flags(g, t));
        h = mix(h, (uint64_t)bp_graph_tensor_dtype(g, t));
        h = mix(h, (uint64_t)(int64_t)bp_graph_tensor_view_of(g, t));
        int64_t d[16];
        int r = bp_graph_tensor_dims(g, t, d, 16);
        for (int i = 0; i < r; i++) h = mix(h, (uint64_t)d[i]);
    }
    for (int32_t o = 0; o < bp_graph_n_ops(g); o++) {
        h = mix_str(h, bp_graph_op_name(g, o));
        h = mix_str(h, bp_graph_op_type(g, o));
        double c = bp_graph_op_cost(g, o);
        uint64_t cb;
        memcpy(&cb, &c, sizeof cb);
        h = mix(h, cb);
        for (int i = 0; i < bp_graph_op_n_inputs(g, o); i++) h = mix(h, (uint64_t)bp_graph_op_input(g, o, i));
        for (int i = 0; i < bp_graph_op_n_outputs(g, o); i++) h = mix(h, (uint64_t)bp_graph_op_output(g, o, i) ^ 0xabc);
    }
    return h;
}

static int count_type(const bp_graph *g, const char *type)
{
    int n = 0;
    for (int32_t o = 0; o < bp_graph_n_ops(g); o++) n += strcmp(bp_graph_op_type(g, o), type) == 0;
    return n;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Checks a tensor's dims against want (n dims). */
static void check_dims(const bp_graph *g, const char *name, int n, const int64_t *want)
{
    int32_t t = bp_graph_find_tensor(g, name);
    CHECK_MSG(t >= 0, "no tensor %s", name);
    if (t < 0) return;
    int64_t d[8];
    int r = bp_graph_tensor_dims(g, t, d, 8);
    CHECK_MSG(r == n, "%s: rank %d, want %d", name, r, n);
    for (int i = 0; i < n && i < r; i++) CHECK_MSG(d[i] == want[i], "%s: dim %d is %lld, want %lld", name, i, (long long)d[i], (long long)want[i]);
}

/* ------------------------------------------------------------ every kind */

static void test_all_kinds(void)
{
    for (int k = 0; k < N_KINDS; k++) {
        for (int training = 0; training < 2; training++) {
            bp_gen_options o;
            bp_gen_options_init(&o);
            o.training = training;
            bp_graph *g = gen(kinds[k], &o);
            if (!g) continue;
            CHECK(bp_graph_n_ops(g) > 0);
            /* finalized: the consumer index is there */
            const int32_t *ops;
            int outputs = 0, inputs = 0;
            for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
                unsigned f = bp_graph_tensor_flags(g, t);
                outputs += (f & BP_TENSOR_OUTPUT) != 0;
                inputs += (f & BP_TENSOR_INPUT) != 0;
                CHECK_MSG(bp_graph_tensor_dtype(g, t) != BP_DT_UNKNOWN && bp_graph_tensor_rank(g, t) >= 1,
                          "%s: tensor %s has no shape/dtype", kinds[k], bp_graph_tensor_name(g, t));
                if (!(f & (BP_TENSOR_INPUT | BP_TENSOR_WEIGHT)))
                    CHECK_MSG(bp_graph_tensor_producer(g, t) >= 0, "%s: %s has no producer", kinds[k], bp_graph_tensor_name(g, t));
                if (bp_graph_tensor_producer(g, t) >= 0 && !(f & BP_TENSOR_OUTPUT))
                    CHECK_MSG(bp_graph_tensor_consumers(g, t, &ops) > 0, "%s: %s is never read", kinds[k], bp_graph_tensor_name(g, t));
            }
            CHECK(outputs >= 1 && inputs >= 1);
            for (int32_t o2 = 0; o2 < bp_graph_n_ops(g); o2++)
                CHECK_MSG(bp_graph_op_cost(g, o2) > 0, "%s: op %s has no cost", kinds[k], bp_graph_op_name(g, o2));
            bp_graph_free(g);
        }
    }
}

/* ------------------------------------------------------------ determinism */

static void test_determinism(void)
{
    for (int k = 0; k < N_KINDS; k++) {
        bp_gen_options o;
        bp_gen_options_init(&o);
        o.seed = 42;
        o.training = k % 2;
        bp_graph *a = gen(kinds[k], &o), *b = gen(kinds[k], &o);
        if (a && b) {
            CHECK(bp_graph_n_tensors(a) == bp_graph_n_tensors(b));
            CHECK_MSG(fingerprint(a) == fingerprint(b), "%s: same seed, different graphs", kinds[k]);
        }
        bp_graph_free(a);
        bp_graph_free(b);
    }
    /* randwire and chain depend on the seed */
    const char *seeded[] = {"randwire", "chain"};
    for (int k = 0; k < 2; k++) {
        bp_gen_options o;
        bp_gen_options_init(&o);
        o.seed = 1;
        bp_graph *a = gen(seeded[k], &o);
        o.seed = 2;
        bp_graph *b = gen(seeded[k], &o);
        if (a && b) CHECK_MSG(fingerprint(a) != fingerprint(b), "%s: seeds 1 and 2 give the same graph", seeded[k]);
        bp_graph_free(a);
        bp_graph_free(b);
    }
}

/* ---------------------------------------------------------------- shapes */

static void test_resnet50(void)
{
    bp_gen_options o;
    bp_gen_options_init(&o);
    bp_graph *g = gen("resnet50", &o);
    if (!g) return;
    CHECK_MSG(count_type(g, "Conv") == 53, "resnet50 has %d convs", count_type(g, "Conv"));
    CHECK(count_type(g, "Add") == 16);
    CHECK(count_type(g, "Gemm") == 1);
    int32_t lg = bp_graph_find_tensor(g, "logits");
    REQUIRE(lg >= 0);
    CHECK(bp_graph_tensor_flags(g, lg) & BP_TENSOR_OUTPUT);
    CHECK(bp_graph_tensor_dtype(g, lg) == BP_DT_F32);
    CHECK(bp_graph_tensor_bytes(g, lg) == 1000 * 4);
    check_dims(g, "logits", 2, (int64_t[]){1, 1000});
    check_dims(g, "conv1", 4, (int64_t[]){1, 64, 112, 112});
    check_dims(g, "maxpool", 4, (int64_t[]){1, 64, 56, 56});
    check_dims(g, "layer1.0.conv3", 4, (int64_t[]){1, 256, 56, 56});
    check_dims(g, "layer2.0.conv2", 4, (int64_t[]){1, 128, 28, 28});
    check_dims(g, "layer2.0.downsample", 4, (int64_t[]){1, 512, 28, 28});
    check_dims(g, "layer3.5.relu", 4, (int64_t[]){1, 1024, 14, 14});
    check_dims(g, "layer4.2.conv3", 4, (int64_t[]){1, 2048, 7, 7});
    check_dims(g, "layer4.2.conv2.weight", 4, (int64_t[]){512, 512, 3, 3});
    check_dims(g, "flatten", 2, (int64_t[]){1, 2048});
    /* Flatten is a view of the pooled tensor; weights are weights. */
    CHECK(bp_graph_tensor_view_of(g, bp_graph_find_tensor(g, "flatten")) == bp_graph_find_tensor(g, "avgpool"));
    CHECK(bp_graph_tensor_flags(g, bp_graph_find_tensor(g, "fc.weight")) & BP_TENSOR_WEIGHT);
    /* ResNet-50 has 25.5M parameters: the weights add up to about 102 MB. */
    uint64_t wbytes = 0;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++)
        if (bp_graph_tensor_flags(g, t) & BP_TENSOR_WEIGHT) wbytes += bp_graph_tensor_bytes(g, t);
    CHECK_MSG(wbytes > 25400000ull * 4 && wbytes < 25700000ull * 4, "resnet50 weights: %llu bytes", (unsigned long long)wbytes);
    /* conv1 cost: 2 * 64*112*112 * 3*7*7 FLOPs = 0.236 GFLOPs */
    double c1 = bp_graph_op_cost(g, bp_graph_find_op(g, "conv1"));
    CHECK_MSG(c1 > 0.235 && c1 < 0.237, "conv1 cost %g", c1);
    bp_graph_free(g);

    o.batch = 4;
    o.layers = 2;
    g = gen("resnet50", &o);
    if (!g) return;
    check_dims(g, "logits", 2, (int64_t[]){4, 1000});
    CHECK(count_type(g, "Conv") == 1 + 3 * 32 + 4);
    bp_graph_free(g);
}

static void test_transformer(void)
{
    bp_gen_options o;
    bp_gen_options_init(&o);
    bp_graph *g = gen("transformer", &o);
    if (!g) return;
    check_dims(g, "logits", 3, (int64_t[]){1, 1024, 50257});
    CHECK(bp_graph_tensor_flags(g, bp_graph_find_tensor(g, "logits")) & BP_TENSOR_OUTPUT);
    check_dims(g, "h.11.attn.scores", 4, (int64_t[]){1, 12, 1024, 1024});
    check_dims(g, "h.0.attn.k.transpose", 4, (int64_t[]){1, 12, 64, 1024});
    check_dims(g, "h.0.mlp.gelu", 3, (int64_t[]){1, 1024, 3072});
    check_dims(g, "wte", 2, (int64_t[]){50257, 768});
    CHECK(count_type(g, "Softmax") == 12);
    CHECK(count_type(g, "LayerNormalization") == 25);
    /* Reshape and the q/k/v Transposes are views. */
    int32_t r = bp_graph_find_tensor(g, "h.3.attn.q.reshape");
    CHECK(r >= 0 && bp_graph_tensor_view_of(g, r) == bp_graph_find_tensor(g, "h.3.attn.q"));
    /* GPT-2 small: 124M parameters (wte tied) -> ~497 MB of weights. */
    uint64_t wbytes = 0;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++)
        if (bp_graph_tensor_flags(g, t) & BP_TENSOR_WEIGHT) wbytes += bp_graph_tensor_bytes(g, t);
    CHECK_MSG(wbytes > 124000000ull * 4 && wbytes < 125000000ull * 4, "gpt2 weights: %llu bytes", (unsigned long long)wbytes);
    bp_graph_free(g);

    o.seq = 128;
    o.layers = 2;
    o.nodes = 1; /* parallel heads */
    g = gen("transformer", &o);
    if (!g) return;
    check_dims(g, "logits", 3, (int64_t[]){1, 128, 50257});
    CHECK(count_type(g, "Softmax") == 2 * 12);
    check_dims(g, "h.1.attn.head11.scores", 3, (int64_t[]){1, 128, 128});
    bp_graph_free(g);

    bp_gen_options_init(&o);
    o.symbolic_seq = 1;
    o.layers = 1;
    g = gen("transformer", &o);
    if (!g) return;
    int32_t lg = bp_graph_find_tensor(g, "logits");
    CHECK(bp_graph_tensor_is_dynamic(g, lg));
    check_dims(g, "logits", 3, (int64_t[]){1, BP_DIM_SYMBOLIC, 50257});
    CHECK(!bp_graph_tensor_is_dynamic(g, bp_graph_find_tensor(g, "wte")));
    CHECK(!bp_graph_tensor_is_dynamic(g, bp_graph_find_tensor(g, "h.0.attn.c_attn.weight")));
    bp_error err = {0};
    CHECK_OK(bp_graph_bind_dim(g, "S", 64, &err), err);
    CHECK(!bp_graph_tensor_is_dynamic(g, lg));
    CHECK(bp_graph_tensor_bytes(g, lg) == 64ull * 50257 * 4);
    bp_graph_free(g);

    /* training with a symbolic sequence: gradients are dynamic too */
    bp_gen_options_init(&o);
    o.symbolic_seq = 1;
    o.layers = 1;
    o.training = 1;
    g = gen("transformer", &o);
    if (!g) return;
    int32_t sd = bp_graph_find_tensor(g, "logits.grad_seed");
    CHECK(sd >= 0 && bp_graph_tensor_is_dynamic(g, sd) && (bp_graph_tensor_flags(g, sd) & BP_TENSOR_INPUT));
    bp_graph_free(g);
}

static void test_unet_diamond_chain(void)
{
    bp_gen_options o;
    bp_gen_options_init(&o);
    bp_graph *g = gen("unet", &o);
    if (g) {
        check_dims(g, "head", 4, (int64_t[]){1, 2, 256, 256});
        check_dims(g, "mid.conv2", 4, (int64_t[]){1, 1024, 16, 16});
        check_dims(g, "up0.concat", 4, (int64_t[]){1, 128, 256, 256});
        check_dims(g, "down3.relu2", 4, (int64_t[]){1, 512, 32, 32});
        CHECK(count_type(g, "Concat") == 4 && count_type(g, "ConvTranspose") == 4 && count_type(g, "MaxPool") == 4);
        /* each skip is read by its pool and, much later, by its concat */
        const int32_t *ops;
        int32_t sk = bp_graph_find_tensor(g, "down0.relu2");
        CHECK(bp_graph_tensor_consumers(g, sk, &ops) == 2);
        bp_graph_free(g);
    }
    o.layers = 2;
    g = gen("unet", &o);
    if (g) { CHECK(count_type(g, "Concat") == 2); check_dims(g, "mid.conv1", 4, (int64_t[]){1, 256, 64, 64}); bp_graph_free(g); }

    bp_gen_options_init(&o);
    g = gen("diamond", &o);
    if (g) {
        const int32_t *ops;
        int32_t a = bp_graph_find_tensor(g, "A"), d = bp_graph_find_tensor(g, "D");
        REQUIRE(a >= 0 && d >= 0);
        CHECK(bp_graph_tensor_consumers(g, a, &ops) == 2);
        CHECK(bp_graph_tensor_consumers(g, d, &ops) == 2);
        int32_t dop = bp_graph_tensor_producer(g, d);
        CHECK(bp_graph_op_n_inputs(g, dop) == 2);
        CHECK(bp_graph_op_input(g, dop, 0) == bp_graph_find_tensor(g, "B") && bp_graph_op_input(g, dop, 1) == bp_graph_find_tensor(g, "C"));
        CHECK(bp_graph_tensor_flags(g, bp_graph_find_tensor(g, "E")) & BP_TENSOR_OUTPUT);
        CHECK(bp_graph_tensor_flags(g, bp_graph_find_tensor(g, "F")) & BP_TENSOR_OUTPUT);
        CHECK(bp_graph_n_ops(g) == 6);
        bp_graph_free(g);
    }

    g = gen("chain", &o);
    if (g) { CHECK(bp_graph_n_ops(g) == 100); bp_graph_free(g); }
    o.nodes = 7;
    o.width = 256;
    g = gen("chain", &o);
    if (g) {
        CHECK(bp_graph_n_ops(g) == 7);
        for (int32_t op = 1; op < 7; op++)
            CHECK(bp_graph_tensor_producer(g, bp_graph_op_input(g, op, 0)) == op - 1);
        for (int32_t op = 0; op < 7; op++) {
            int64_t d[2];
            bp_graph_tensor_dims(g, bp_graph_op_output(g, op, 0), d, 2);
            CHECK(d[0] == 1 && d[1] >= 128 && d[1] <= 512);
        }
        bp_graph_free(g);
    }
}

/* -------------------------------------------------------------- randwire */

/* Recovers the wiring of stage s from the graph: each node's aggregation
 * reads its predecessors' outputs (or, with one input, its Relu does). */
static void test_randwire_wiring(void)
{
    const int N = 600;
    bp_gen_options o;
    bp_gen_options_init(&o);
    o.nodes = N;
    o.layers = 2;
    o.seed = 7;
    bp_graph *g = gen("randwire", &o);
    if (!g) return;
    char name[64];
    for (int s = 0; s < 2; s++) {
        long edges = 0, far = 0, sources = 0, sinks = 0;
        for (int v = 0; v < N; v++) {
            snprintf(name, sizeof name, "s%d.n%d.relu", s, v);
            int32_t relu = bp_graph_find_op(g, name);
            REQUIRE(relu >= 0);
            int32_t x = bp_graph_op_input(g, relu, 0);
            const char *xn = bp_graph_tensor_name(g, x);
            int32_t src_op = bp_graph_tensor_producer(g, x);
            int32_t preds[64];
            int np = 0;
            if (ends_with(xn, ".agg")) {
                int n_in = bp_graph_op_n_inputs(g, src_op);
                for (int i = 0; i < n_in - 1 && np < 64; i++) preds[np++] = bp_graph_op_input(g, src_op, i);
                /* the last input is the weight vector, one weight per input */
                int32_t w = bp_graph_op_input(g, src_op, n_in - 1);
                CHECK(bp_graph_tensor_bytes(g, w) == (uint64_t)(n_in - 1) * 4);
            } else if (ends_with(xn, ".bn")) {
                preds[np++] = x;
            } else {
                sources++;
            }
            for (int i = 0; i < np; i++) {
                int u;
                char tail[8];
                CHECK(sscanf(bp_graph_tensor_name(g, preds[i]), "s%*d.n%d.%7s", &u, tail) == 2);
                CHECK_MSG(u < v, "edge %d -> %d goes backwards", u, v);
                int dist = v - u < N - (v - u) ? v - u : N - (v - u);
                far += dist > 2;
                edges++;
            }
            snprintf(name, sizeof name, "s%d.n%d.bn", s, v);
            const int32_t *ops;
            int32_t bn = bp_graph_find_tensor(g, name);
            int nc = bp_graph_tensor_consumers(g, bn, &ops);
            CHECK(nc >= 1);
            const char *ct = bp_graph_op_type(g, ops[0]);
            if (nc == 1 && (!strcmp(ct, "Mean") || !strcmp(ct, "Sum"))) sinks++;
        }
        /* WS keeps n*k/2 edges; p = 0.75 rewires about 3/4 of them to random
         * ends (nearly all far from the ring neighbours). */
        CHECK_MSG(edges == 2L * N, "stage %d: %ld edges, want %d", s, edges, 2 * N);
        double frac = (double)far / (double)edges;
        CHECK_MSG(frac > 0.65 && frac < 0.82, "stage %d: %.3f of the edges rewired", s, frac);
        CHECK_MSG(sources >= 1 && sinks >= 1, "stage %d: %ld sources, %ld sinks", s, sources, sinks);
        snprintf(name, sizeof name, "s%d.n0.relu", s);
        CHECK(!ends_with(bp_graph_tensor_name(g, bp_graph_op_input(g, bp_graph_find_op(g, name), 0)), ".agg"));
    }
    check_dims(g, "s0.n5.bn", 4, (int64_t[]){1, 78, 28, 28});
    check_dims(g, "s1.n5.bn", 4, (int64_t[]){1, 156, 14, 14});
    check_dims(g, "logits", 2, (int64_t[]){1, 1000});
    bp_graph_free(g);

    /* tiny stages: 1, 2, 3 nodes per stage still make a valid graph */
    for (int n = 1; n <= 5; n++) {
        o.nodes = n;
        o.layers = 5;
        g = gen("randwire", &o);
        if (g) { check_dims(g, "s4.out", 4, (int64_t[]){1, 312, 7, 7}); bp_graph_free(g); }
    }
}

static void test_randwire_scale(void)
{
    bp_gen_options o;
    bp_gen_options_init(&o);
    o.nodes = 8500;
    o.layers = 3;
    bp_graph *g = gen("randwire", &o);
    if (!g) return;
    CHECK_MSG(bp_graph_n_tensors(g) > 200000, "%d tensors", bp_graph_n_tensors(g));
    /* sinks are summed in chunks of at most 64 */
    for (int32_t op = 0; op < bp_graph_n_ops(g); op++) CHECK(bp_graph_op_n_inputs(g, op) <= 65);
    bp_graph_free(g);
}

/* -------------------------------------------------------------- backward */

/* Properties of a training graph: for each forward op X with gradient op
 * X.grad, every input of X is an input of X.grad (saved activations live
 * until it); gradients have the forward sizes; every weight read by an op
 * has a W.grad graph output of its size. */
static void check_backward(const bp_graph *g, int32_t n_fwd_ops, int32_t n_fwd_tensors, const char *what)
{
    char name[512];
    int grads = 0;
    for (int32_t x = 0; x < n_fwd_ops; x++) {
        snprintf(name, sizeof name, "%s.grad", bp_graph_op_name(g, x));
        int32_t gx = bp_graph_find_op(g, name);
        if (gx < 0) continue;
        grads++;
        snprintf(name, sizeof name, "%s.backward", bp_graph_op_type(g, x));
        CHECK(strcmp(bp_graph_op_type(g, gx), name) == 0);
        for (int i = 0; i < bp_graph_op_n_inputs(g, x); i++) {
            int32_t t = bp_graph_op_input(g, x, i);
            int found = 0;
            for (int j = 0; j < bp_graph_op_n_inputs(g, gx); j++) found |= bp_graph_op_input(g, gx, j) == t;
            CHECK_MSG(found, "%s: %s reads %s but %s.grad does not", what, bp_graph_op_name(g, x), bp_graph_tensor_name(g, t), bp_graph_op_name(g, x));
        }
        for (int j = 0; j < bp_graph_op_n_outputs(g, gx); j++)
            CHECK(bp_graph_op_output(g, gx, j) >= n_fwd_tensors);
    }
    CHECK_MSG(grads == n_fwd_ops, "%s: %d of %d forward ops have a gradient op", what, grads, n_fwd_ops);
    for (int32_t t = 0; t < n_fwd_tensors; t++) {
        const int32_t *ops;
        snprintf(name, sizeof name, "%s.grad", bp_graph_tensor_name(g, t));
        int32_t gt = bp_graph_find_tensor(g, name);
        unsigned f = bp_graph_tensor_flags(g, t);
        if (f & BP_TENSOR_WEIGHT) {
            if (bp_graph_tensor_consumers(g, t, &ops) == 0) continue;
            CHECK_MSG(gt >= 0 && (bp_graph_tensor_flags(g, gt) & BP_TENSOR_OUTPUT), "%s: weight %s has no gradient output", what, name);
        } else if (f & BP_TENSOR_INPUT) {
            CHECK_MSG(gt < 0, "%s: graph input %s got a gradient", what, name);
        }
        if (gt >= 0) {
            CHECK(bp_graph_tensor_bytes(g, gt) == bp_graph_tensor_bytes(g, t));
            CHECK(bp_graph_tensor_dtype(g, gt) == bp_graph_tensor_dtype(g, t));
            CHECK(bp_graph_tensor_view_of(g, gt) < 0);
            if (!(f & BP_TENSOR_WEIGHT)) CHECK(!(bp_graph_tensor_flags(g, gt) & BP_TENSOR_OUTPUT));
        }
    }
}

static void test_backward_generated(void)
{
    for (int k = 0; k < N_KINDS; k++) {
        bp_gen_options o;
        bp_gen_options_init(&o);
        if (!strcmp(kinds[k], "transformer")) { o.layers = 2; o.seq = 64; }
        bp_graph *f = gen(kinds[k], &o);
        o.training = 1;
        bp_graph *g = gen(kinds[k], &o);
        if (f && g) {
            CHECK(bp_graph_n_ops(g) >= 2 * bp_graph_n_ops(f));
            check_backward(g, bp_graph_n_ops(f), bp_graph_n_tensors(f), kinds[k]);
        }
        bp_graph_free(f);
        bp_graph_free(g);
    }
    /* resnet50: the block input is read by conv1 and downsample, so its
     * gradient is the sum of two contributions. */
    bp_gen_options o;
    bp_gen_options_init(&o);
    o.training = 1;
    bp_graph *g = gen("resnet50", &o);
    if (!g) return;
    int32_t mg = bp_graph_find_tensor(g, "maxpool.grad");
    REQUIRE(mg >= 0);
    int32_t p = bp_graph_tensor_producer(g, mg);
    CHECK(strcmp(bp_graph_op_type(g, p), "Add") == 0);
    CHECK(bp_graph_find_tensor(g, "maxpool.grad.1") >= 0 && bp_graph_find_tensor(g, "maxpool.grad.2") >= 0);
    CHECK(bp_graph_find_tensor(g, "logits.grad_seed") >= 0);
    CHECK(bp_graph_find_tensor(g, "input.grad") < 0);
    /* the maxpool gradient op reads the summed gradient and saved relu */
    int32_t mo = bp_graph_find_op(g, "maxpool.grad");
    CHECK(bp_graph_op_input(g, mo, 0) == mg);
    CHECK(bp_graph_op_input(g, mo, 1) == bp_graph_find_tensor(g, "relu"));
    bp_graph_free(g);

    /* transformer: wte is read by the token Gather and by lm_head */
    bp_gen_options_init(&o);
    o.training = 1; o.layers = 1; o.seq = 16;
    g = gen("transformer", &o);
    if (!g) return;
    int32_t wg = bp_graph_find_tensor(g, "wte.grad");
    CHECK(wg >= 0 && strcmp(bp_graph_op_type(g, bp_graph_tensor_producer(g, wg)), "Add") == 0);
    CHECK(bp_graph_find_tensor(g, "input_ids.grad") < 0);
    bp_graph_free(g);
}

/* A hand-made graph covering the corner cases: an integer input, a
 * constant, an output that is also read downstream, a weight read twice,
 * an op that reads the same tensor twice, an op with no gradient inputs. */
static void test_backward_handmade(void)
{
    bp_error err = {0};
    bp_graph *g = bp_graph_new("hand", NULL);
    REQUIRE(g);
    int32_t x, ids, w, cst, a, b, c, d, e, k;
    int64_t d4[2] = {4, 8}, di[1] = {4};
    CHECK_OK(bp_graph_add_tensor_shape(g, "x", BP_DT_F32, 2, d4, NULL, &x, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "ids", BP_DT_I64, 1, di, NULL, &ids, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "w", BP_DT_F32, 2, (int64_t[]){8, 8}, NULL, &w, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "cst", BP_DT_F32, 2, d4, NULL, &cst, &err), err);
    CHECK_OK(bp_graph_add_tensor(g, "a", 128, &a, &err), err);  /* bytes only */
    CHECK_OK(bp_graph_add_tensor_shape(g, "b", BP_DT_F32, 2, d4, NULL, &b, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "c", BP_DT_F32, 2, d4, NULL, &c, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "d", BP_DT_F32, 2, d4, NULL, &d, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "e", BP_DT_F32, 2, d4, NULL, &e, &err), err);
    CHECK_OK(bp_graph_add_tensor_shape(g, "k", BP_DT_I64, 1, di, NULL, &k, &err), err);
    bp_graph_mark(g, x, BP_TENSOR_INPUT, &err);
    bp_graph_mark(g, ids, BP_TENSOR_INPUT, &err);
    bp_graph_mark(g, w, BP_TENSOR_WEIGHT, &err);
    bp_graph_mark(g, cst, BP_TENSOR_WEIGHT | BP_TENSOR_CONST, &err);
    CHECK_OK(bp_graph_add_op(g, "mm1", "MatMul", 2, (int32_t[]){x, w}, 1, &a, 1.0, NULL, &err), err);
    CHECK_OK(bp_graph_add_op(g, "cast", "Cast", 1, &ids, 1, &k, 0, NULL, &err), err);     /* no gradient */
    CHECK_OK(bp_graph_add_op(g, "sq", "Mul", 3, (int32_t[]){a, a, k}, 1, &b, 1.0, NULL, &err), err);
    CHECK_OK(bp_graph_add_op(g, "mm2", "MatMul", 3, (int32_t[]){b, w, cst}, 1, &c, 1.0, NULL, &err), err);
    CHECK_OK(bp_graph_add_op(g, "relu", "Relu", 1, &c, 1, &d, 1.0, NULL, &err), err);
    CHECK_OK(bp_graph_add_op(g, "add", "Add", 2, (int32_t[]){c, d}, 1, &e, 1.0, NULL, &err), err);
    bp_graph_mark(g, c, BP_TENSOR_OUTPUT, &err);  /* an output also read downstream */
    bp_graph_mark(g, e, BP_TENSOR_OUTPUT, &err);
    /* a tensor already called like a gradient: the new one gets "#2" */
    int32_t clash;
    CHECK_OK(bp_graph_add_tensor_shape(g, "d.grad", BP_DT_F32, 2, d4, NULL, &clash, &err), err);
    CHECK_OK(bp_graph_add_op(g, "mk", "Relu", 1, &d, 1, &clash, 1.0, NULL, &err), err);
    bp_graph_mark(g, clash, BP_TENSOR_OUTPUT, &err);
    int32_t nf = bp_graph_n_ops(g), nt = bp_graph_n_tensors(g);
    CHECK_OK(bp_graph_append_backward(g, &err), err);
    {
        /* cast has no gradient op: its input is an integer graph input */
        CHECK(bp_graph_find_op(g, "cast.grad") < 0);
        CHECK(bp_graph_find_tensor(g, "k.grad") < 0 && bp_graph_find_tensor(g, "ids.grad") < 0);
        CHECK(bp_graph_find_tensor(g, "cst.grad") < 0);
        /* c: seed + relu + add contributions, summed in arrival order */
        int32_t seed = bp_graph_find_tensor(g, "c.grad_seed");
        CHECK(seed >= 0 && (bp_graph_tensor_flags(g, seed) & BP_TENSOR_INPUT));
        int32_t cg = bp_graph_find_tensor(g, "c.grad");
        REQUIRE(cg >= 0);
        int32_t s2 = bp_graph_find_tensor(g, "c.grad.sum2");
        CHECK(s2 >= 0 && bp_graph_op_input(g, bp_graph_tensor_producer(g, s2), 0) == seed);
        CHECK(bp_graph_op_input(g, bp_graph_tensor_producer(g, cg), 0) == s2);
        /* w is read by mm1 and mm2: w.grad sums two and is an output */
        int32_t wg = bp_graph_find_tensor(g, "w.grad");
        CHECK(wg >= 0 && (bp_graph_tensor_flags(g, wg) & BP_TENSOR_OUTPUT));
        CHECK(strcmp(bp_graph_op_type(g, bp_graph_tensor_producer(g, wg)), "Add") == 0);
        /* sq reads a twice: one contribution; a is bytes-only, so is a.grad */
        int32_t sq = bp_graph_find_op(g, "sq.grad");
        REQUIRE(sq >= 0);
        CHECK(bp_graph_op_n_outputs(g, sq) == 1);
        int32_t ag = bp_graph_find_tensor(g, "a.grad");
        CHECK(ag >= 0 && bp_graph_tensor_bytes(g, ag) == 128 && bp_graph_tensor_producer(g, ag) == sq);
        CHECK(bp_graph_find_tensor(g, "d.grad#2") >= 0);
        /* mm1.grad reads the input x (saved) but writes only w's gradient */
        int32_t m1 = bp_graph_find_op(g, "mm1.grad");
        REQUIRE(m1 >= 0);
        CHECK(bp_graph_op_n_outputs(g, m1) == 1);
        CHECK(bp_graph_find_tensor(g, "x.grad") < 0);
        CHECK(bp_graph_op_cost(g, m1) == 2.0);
    }
    /* cast has no gradient: check the others with a tolerant count */
    int grads = 0;
    for (int32_t o = nf; o < bp_graph_n_ops(g); o++) grads += ends_with(bp_graph_op_type(g, o), ".backward");
    CHECK(grads == nf - 1);
    (void)nt;
    /* appending again works on the result (a graph that is already training) */
    CHECK_OK(bp_graph_append_backward(g, &err), err);
    bp_graph_free(g);

    CHECK(bp_graph_append_backward(NULL, &err) == BP_ERR_USAGE);
    /* a graph that does not finalize is reported, not extended */
    g = bp_graph_new("bad", NULL);
    int32_t u, y;
    bp_graph_add_tensor(g, "u", 4, &u, &err);
    bp_graph_add_tensor(g, "y", 4, &y, &err);
    bp_graph_add_op(g, "op", "Relu", 1, &u, 1, &y, 1, NULL, &err);
    CHECK(bp_graph_append_backward(g, &err) == BP_ERR_INVALID);
    CHECK(strstr(err.msg, "\"u\"") != NULL);
    bp_graph_free(g);
}

/* ---------------------------------------------------------- bad options */

static void test_bad_options(void)
{
    bp_error err = {0};
    bp_graph *g = (bp_graph *)&err;
    CHECK(bp_gen("nope", NULL, NULL, &g, &err) == BP_ERR_USAGE && g == NULL);
    CHECK(strstr(err.msg, "nope") && strstr(err.msg, "randwire") && strstr(err.msg, "chain"));
    CHECK(bp_gen(NULL, NULL, NULL, &g, &err) == BP_ERR_USAGE);
    CHECK(bp_gen("chain", NULL, NULL, NULL, &err) == BP_ERR_USAGE);
    /* field: 0 layers, 1 width, 2 nodes, 3 seq, 4 batch */
    struct { const char *kind; int field, value; bp_status want; } cases[] = {
        {"chain", 0, -1, BP_ERR_USAGE}, {"resnet50", 1, -3, BP_ERR_USAGE}, {"unet", 0, 9, BP_ERR_LIMIT},
        {"transformer", 1, 100, BP_ERR_USAGE}, {"transformer", 3, -5, BP_ERR_USAGE}, {"randwire", 4, -1, BP_ERR_USAGE},
        {"randwire", 2, 1 << 29, BP_ERR_LIMIT}, {"resnet50", 0, 20000, BP_ERR_LIMIT}, {"diamond", 4, 1 << 21, BP_ERR_LIMIT},
        {"unet", 1, 1 << 15, BP_ERR_LIMIT}, {"chain", 2, -7, BP_ERR_USAGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bp_gen_options o;
        bp_gen_options_init(&o);
        int *f[] = {&o.layers, &o.width, &o.nodes, &o.seq, &o.batch};
        *f[cases[i].field] = cases[i].value;
        g = NULL;
        err.msg[0] = 0;
        bp_status s = bp_gen(cases[i].kind, &o, NULL, &g, &err);
        CHECK_MSG(s == cases[i].want && g == NULL, "case %zu (%s): status %d, want %d: %s", i, cases[i].kind, (int)s, (int)cases[i].want, err.msg);
        CHECK_MSG(strstr(err.msg, cases[i].kind) != NULL, "case %zu: message does not name the kind: %s", i, err.msg);
        bp_graph_free(g);
    }
}

/* ------------------------------------------------------------ allocators */

typedef struct counting {
    long live, total, fail_at;   /* fail_at: the allocation number that fails, -1 never */
    size_t bytes;
} counting;

static void *c_alloc(void *ctx, size_t n)
{
    counting *c = ctx;
    if (c->fail_at >= 0 && c->total >= c->fail_at) return NULL;
    c->total++;
    void *p = malloc(n ? n : 1);
    if (p) { c->live++; c->bytes += n; }
    return p;
}
static void *c_realloc(void *ctx, void *p, size_t o, size_t n)
{
    counting *c = ctx;
    if (c->fail_at >= 0 && c->total >= c->fail_at) return NULL;
    c->total++;
    void *q = realloc(p, n ? n : 1);
    if (q) c->bytes += n - o;
    return q;
}
static void c_free(void *ctx, void *p, size_t n)
{
    counting *c = ctx;
    if (!p) return;
    c->live--;
    c->bytes -= n;
    free(p);
}

/* bp_gen uses the caller's allocator for everything, sizes agree on free,
 * and every allocation failure is reported as BP_ERR_NOMEM without a leak
 * (ASan checks the leaks; the counters check the sizes). */
static void test_allocator(void)
{
    counting c = {0, 0, -1, 0};
    bp_allocator a = {c_alloc, c_realloc, c_free, &c};
    bp_gen_options o;
    bp_gen_options_init(&o);
    o.training = 1;
    o.nodes = 6;
    bp_error err = {0};
    bp_graph *g = NULL;
    CHECK_OK(bp_gen("randwire", &o, &a, &g, &err), err);
    CHECK(c.total > 0 && c.live > 0);
    bp_graph_free(g);
    CHECK_MSG(c.live == 0 && c.bytes == 0, "live %ld bytes %zu", c.live, c.bytes);
    long need = c.total;
    int failures = 0;
    for (long k = 0; k < need; k += 1 + k / 16) {
        counting f = {0, 0, k, 0};
        bp_allocator fa = {c_alloc, c_realloc, c_free, &f};
        g = NULL;
        bp_status s = bp_gen("randwire", &o, &fa, &g, &err);
        if (s == BP_OK) { bp_graph_free(g); continue; }
        failures++;
        CHECK_MSG(s == BP_ERR_NOMEM, "fail at %ld: status %d: %s", k, (int)s, err.msg);
        CHECK(g == NULL);
        CHECK_MSG(f.live == 0 && f.bytes == 0, "fail at %ld: %ld blocks (%zu bytes) left", k, f.live, f.bytes);
    }
    CHECK(failures > 0);
}

int main(void)
{
    test_all_kinds();
    test_determinism();
    test_resnet50();
    test_transformer();
    test_unet_diamond_chain();
    test_randwire_wiring();
    test_randwire_scale();
    test_backward_generated();
    test_backward_handmade();
    test_bad_options();
    test_allocator();
    return check_status();
}
