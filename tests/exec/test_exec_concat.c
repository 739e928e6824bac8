/*
 * test_exec_concat.c — real kernels over plans with Concat in place
 * (concat_inplace): a DenseNet-like block (every Concat a prefix of the
 * next, each layer's output read by every later Concat) and a U-Net-like
 * skip (an encoder map kept for a Concat after a pool, a conv and an
 * upsample), computed with small float kernels (1x1 conv, Relu, 2x2 max
 * pool, nearest upsample, a Concat that copies each input unless it already
 * sits in its place) in one arena, and in pool blocks allocated at run time
 * (dynamic mode), on 1 and 2 threads, and compared bit for bit with a safe
 * run (every tensor its own buffer).  The planned run must
 * also have skipped copies, so the inputs really were written in place.
 */
#include "bufplan.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HW 4                      /* feature maps are [1, C, HW, HW] at the top level */

typedef struct kstats { int copies, skips; } kstats;

static int dims4(const bp_exec_call *c, int32_t t, int64_t *d) { return bp_graph_tensor_dims(c->graph, t, d, 4); }

/* out[o, p] = b[o] + sum_i w[o, i] * in[i, p] (weights as inputs 1 and 2). */
static int k_conv(void *u, const bp_exec_call *c, bp_error *e)
{
    (void)u; (void)e;
    int64_t di[4], dw[4];
    dims4(c, c->in[0].tensor, di);
    dims4(c, c->in[1].tensor, dw);
    const float *x = c->in[0].data, *w = c->in[1].data, *b = c->in[2].data;
    float *y = c->out[0].data;
    int64_t ci = di[1], co = dw[0], px = di[2] * di[3];
    for (int64_t o = 0; o < co; o++)
        for (int64_t p = 0; p < px; p++) {
            float s = b[o];
            for (int64_t i = 0; i < ci; i++) s += w[o * ci + i] * x[i * px + p];
            y[o * px + p] = tanhf(s);
        }
    return 0;
}

static int k_relu(void *u, const bp_exec_call *c, bp_error *e)
{
    (void)u; (void)e;
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    for (uint64_t i = 0; i < c->out[0].bytes / 4; i++) y[i] = x[i] > 0 ? x[i] : 0.125f * x[i];
    return 0;
}

static int k_pool(void *u, const bp_exec_call *c, bp_error *e)
{
    (void)u; (void)e;
    int64_t d[4];
    dims4(c, c->in[0].tensor, d);
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t h = d[2], w = d[3];
    for (int64_t ch = 0; ch < d[1]; ch++)
        for (int64_t i = 0; i < h / 2; i++)
            for (int64_t j = 0; j < w / 2; j++) {
                const float *q = x + ch * h * w + 2 * i * w + 2 * j;
                float m = fmaxf(fmaxf(q[0], q[1]), fmaxf(q[w], q[w + 1]));
                y[ch * (h / 2) * (w / 2) + i * (w / 2) + j] = m;
            }
    return 0;
}

static int k_up(void *u, const bp_exec_call *c, bp_error *e)
{
    (void)u; (void)e;
    int64_t d[4];
    dims4(c, c->out[0].tensor, d);
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t h = d[2], w = d[3];
    for (int64_t ch = 0; ch < d[1]; ch++)
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) y[ch * h * w + i * w + j] = x[ch * (h / 2) * (w / 2) + (i / 2) * (w / 2) + j / 2];
    return 0;
}

/* Channel concat of [1, C_k, H, W] maps: input k goes to the bytes after
 * inputs 0..k-1; nothing is copied where it already is. */
static int k_concat(void *u, const bp_exec_call *c, bp_error *e)
{
    (void)e;
    kstats *ks = u;
    uint64_t off = 0;
    for (int i = 0; i < c->n_in; i++) {
        char *dst = (char *)c->out[0].data + off;
        if (dst == c->in[i].data) __atomic_add_fetch(&ks->skips, 1, __ATOMIC_RELAXED);
        else {
            memmove(dst, c->in[i].data, (size_t)c->in[i].bytes);
            __atomic_add_fetch(&ks->copies, 1, __ATOMIC_RELAXED);
        }
        off += c->in[i].bytes;
    }
    return off == c->out[0].bytes ? 0 : 1;
}

/* ------------------------------------------------------------ the graphs */

typedef struct net {
    bp_graph *g;
    int k;
    bp_error err;
} net;

static int32_t t_new(net *n, int64_t ch, int64_t hw)
{
    char name[32];
    snprintf(name, sizeof name, "t%d", n->k++);
    int64_t d[4] = {1, ch, hw, hw};
    int32_t t = -1;
    REQUIRE(bp_graph_add_tensor_shape(n->g, name, BP_DT_F32, 4, d, NULL, &t, &n->err) == BP_OK);
    return t;
}

static int32_t w_new(net *n, int rank, int64_t a, int64_t b)
{
    char name[32];
    snprintf(name, sizeof name, "w%d", n->k++);
    int64_t d[2] = {a, b};
    int32_t t = -1;
    REQUIRE(bp_graph_add_tensor_shape(n->g, name, BP_DT_F32, rank, d, NULL, &t, &n->err) == BP_OK);
    REQUIRE(bp_graph_mark(n->g, t, BP_TENSOR_WEIGHT, &n->err) == BP_OK);
    return t;
}

static void op_new(net *n, const char *type, int nin, const int32_t *in, int32_t out)
{
    char name[32];
    snprintf(name, sizeof name, "op%d", n->k++);
    REQUIRE(bp_graph_add_op(n->g, name, type, nin, in, 1, &out, 0, NULL, &n->err) == BP_OK);
}

static int32_t conv(net *n, int32_t x, int64_t ci, int64_t co, int64_t hw)
{
    int32_t in[3] = {x, w_new(n, 2, co, ci), w_new(n, 1, co, 0)};
    int32_t y = t_new(n, co, hw);
    op_new(n, "Conv", 3, in, y);
    return y;
}

static int32_t unary(net *n, const char *type, int32_t x, int64_t ch, int64_t hw)
{
    int32_t y = t_new(n, ch, hw);
    op_new(n, type, 1, &x, y);
    return y;
}

/* DenseNet-like: x0, then per layer Concat(x0..x_{l-1}) -> Relu -> conv -> x_l. */
static bp_graph *densenet_block(int layers)
{
    net n = {bp_graph_new("dense", NULL), 0, {0}};
    int32_t in = t_new(&n, 3, HW);
    REQUIRE(bp_graph_mark(n.g, in, BP_TENSOR_INPUT, &n.err) == BP_OK);
    int32_t x[16];
    int64_t ch[16], sum = 4;
    x[0] = conv(&n, in, 3, 4, HW);
    ch[0] = 4;
    for (int l = 1; l <= layers; l++) {
        int32_t c = t_new(&n, sum, HW);
        op_new(&n, "Concat", l, x, c);
        int32_t r = unary(&n, "Relu", c, sum, HW);
        ch[l] = 2;
        x[l] = conv(&n, r, sum, ch[l], HW);
        sum += ch[l];
    }
    int32_t c = t_new(&n, sum, HW);
    op_new(&n, "Concat", layers + 1, x, c);
    int32_t y = conv(&n, unary(&n, "Relu", c, sum, HW), sum, 3, HW);
    REQUIRE(bp_graph_mark(n.g, y, BP_TENSOR_OUTPUT, &n.err) == BP_OK);
    REQUIRE(bp_graph_finalize(n.g, &n.err) == BP_OK);
    return n.g;
}

/* U-Net-like: e = Relu(conv(in)) at full size; pool, conv, upsample, conv
 * back to full size; Concat(e, up); conv. */
static bp_graph *unet_skip(void)
{
    net n = {bp_graph_new("unet", NULL), 0, {0}};
    int32_t in = t_new(&n, 2, HW);
    REQUIRE(bp_graph_mark(n.g, in, BP_TENSOR_INPUT, &n.err) == BP_OK);
    int32_t e = unary(&n, "Relu", conv(&n, in, 2, 4, HW), 4, HW);
    int32_t p = unary(&n, "MaxPool", e, 4, HW / 2);
    int32_t m = unary(&n, "Relu", conv(&n, p, 4, 8, HW / 2), 8, HW / 2);
    int32_t u = conv(&n, unary(&n, "Resize", m, 8, HW), 8, 4, HW);
    int32_t cat[2] = {e, u};
    int32_t c = t_new(&n, 8, HW);
    op_new(&n, "Concat", 2, cat, c);
    int32_t y = conv(&n, c, 8, 2, HW);
    REQUIRE(bp_graph_mark(n.g, y, BP_TENSOR_OUTPUT, &n.err) == BP_OK);
    REQUIRE(bp_graph_finalize(n.g, &n.err) == BP_OK);
    return n.g;
}

/* ------------------------------------------------------------------ runs */

static bp_exec *make_exec(const bp_graph *g, const bp_plan *p, bp_exec_mode mode, int threads, kstats *ks)
{
    bp_exec_options o;
    bp_exec_options_init(&o);
    o.mode = mode;
    o.threads = threads;
    bp_exec *ex = NULL;
    bp_error e;
    CHECK_OK(bp_exec_new(g, p, &o, &ex, &e), e);
    if (!ex) return NULL;
    bp_exec_set_type_kernel(ex, "Conv", k_conv, NULL, &e);
    bp_exec_set_type_kernel(ex, "Relu", k_relu, NULL, &e);
    bp_exec_set_type_kernel(ex, "MaxPool", k_pool, NULL, NULL);
    bp_exec_set_type_kernel(ex, "Resize", k_up, NULL, NULL);
    bp_exec_set_type_kernel(ex, "Concat", k_concat, ks, &e);
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) {
        unsigned f = bp_graph_tensor_flags(g, t);
        if (!(f & (BP_TENSOR_INPUT | BP_TENSOR_WEIGHT))) continue;
        uint64_t n = bp_graph_tensor_bytes(g, t) / 4;
        float buf[512];
        REQUIRE(n <= 512);
        for (uint64_t i = 0; i < n; i++) buf[i] = (float)sin((double)(t * 131 + (int32_t)i) * 0.37) * 0.5f;
        CHECK_OK(bp_exec_set_input(ex, t, buf, n * 4, &e), e);
    }
    return ex;
}

/* The output of a run; false on failure. */
static bool run_output(const bp_graph *g, const bp_plan *p, bp_exec_mode mode, int threads, kstats *ks, float *out, uint64_t *n)
{
    bp_exec *ex = make_exec(g, p, mode, threads, ks);
    if (!ex) return false;
    bp_error e;
    bp_status s = bp_exec_run(ex, NULL, &e);
    CHECK_OK(s, e);
    int32_t y = -1;
    for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) if (bp_graph_tensor_flags(g, t) & BP_TENSOR_OUTPUT) y = t;
    const void *d = s ? NULL : bp_exec_tensor_data(ex, y, n);
    if (d) memcpy(out, d, (size_t)*n);
    bp_exec_free(ex);
    return d != NULL;
}

static void check_graph(bp_graph *g, const char *what)
{
    bp_error e;
    bp_plan_options o;
    bp_plan_options_init(&o);
    o.concat_inplace = 1;
    o.sched = BP_SCHED_KAHN;
    o.alignment = 16;
    int32_t order[256];
    REQUIRE(bp_graph_n_ops(g) <= 256);
    CHECK_OK(bp_schedule(g, &o, order, &e), e);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph_order(g, &o, order, &p, &e), e);
    REQUIRE(p);
    CHECK_OK(bp_verify(g, p, &e), e);
    int slices = 0;
    for (int32_t t = 0; t < bp_plan_n_tensors(p); t++) slices += bp_plan_tensor(p, t)->view_offset != 0;
    CHECK_MSG(slices > 0, "%s: no Concat input was placed in its slice", what);
    float ref[512], got[512];
    uint64_t nr = 0, ng = 0;
    kstats safe = {0, 0};
    REQUIRE(run_output(g, p, BP_EXEC_SAFE, 1, &safe, ref, &nr));
    CHECK_MSG(safe.skips == 0 && safe.copies > 0, "%s: the safe run copied %d and skipped %d", what, safe.copies, safe.skips);
    for (int run = 0; run < 4; run++) {   /* planned and dynamic (pool blocks at run time), 1 and 2 threads */
        bp_exec_mode mode = run < 2 ? BP_EXEC_PLANNED : BP_EXEC_DYNAMIC;
        int th = 1 + run % 2;
        kstats pk = {0, 0};
        REQUIRE(run_output(g, p, mode, th, &pk, got, &ng));
        CHECK_MSG(ng == nr && !memcmp(ref, got, (size_t)nr), "%s, %s on %d thread(s): the run differs from the safe run", what,
                  bp_exec_mode_name(mode), th);
        CHECK_MSG(pk.skips > 0 && pk.copies == 0, "%s, %s on %d thread(s): the run copied %d inputs, skipped %d", what,
                  bp_exec_mode_name(mode), th, pk.copies, pk.skips);
    }
    printf("%s: %d slices, arena %llu bytes; the planned and dynamic runs skipped every copy and match the safe run\n", what, slices,
           (unsigned long long)bp_plan_get_stats(p)->arena_bytes);
    bp_plan_free(p);
    bp_graph_free(g);
}

int main(void)
{
    check_graph(densenet_block(5), "densenet block");
    check_graph(unet_skip(), "unet skip");
    return check_status();
}
