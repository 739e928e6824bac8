/*
 * gen.c — synthetic graphs to plan, built with the public builder API:
 * chain, diamond, resnet50, unet, transformer (GPT-2 small) and randwire
 * (Xie et al. 2019, "Exploring Randomly Wired Neural Networks").
 *
 * Every tensor has a real shape and dtype; activations are NCHW (or
 * [B, S, D]) f32, weights are graph weights.  Op costs are estimated GFLOPs
 * (2 per multiply-add for convolutions and matrix products, a few per element
 * for element-wise ops, a nominal 1e-6 for views), so schedulers that weigh
 * ops by cost have something to work with.  The same options and seed give
 * the same graph, byte for byte: the only randomness is a splitmix64 stream
 * seeded from bp_gen_options.seed (chain widths, randwire wiring).
 *
 * Building is linear in the size of the graph.  Errors are sticky in the
 * builder context (gen.st): after the first failure every helper returns -1
 * at once, and the generator checks the status once at the end.
 *
 * randwire: per stage a Watts-Strogatz small-world graph WS(N, k=4, p=0.75)
 * made as networkx does it (ring lattice; for each distance j = 1..k/2 and
 * each node u in order, with probability p the edge (u, u+j) is rewired to
 * (u, w) for a uniform w that is neither u nor already a neighbour).  The
 * edges of node u's lattice are kept as k/2 "far ends" per node, so the
 * neighbour test is O(k) without a hash set and the whole wiring costs
 * 8 bytes per node.  Edges are then directed from the lower to the higher
 * index (a DAG) and turned into an in-CSR.
 */
#include "graph/graph_internal.h"

#include <stdarg.h>
#include <string.h>

/* ----------------------------------------------------------------- context */

typedef struct gen {
    bp_graph *g;
    bp_error *err;
    bp_status st;          /* first error, sticky */
    int64_t B;             /* batch */
    uint64_t rng;          /* splitmix64 state */
    char name[512];
} gen;

typedef struct gen_fm {    /* an NCHW feature map */
    int32_t id;
    int64_t c, h, w;
} gen_fm;

static uint64_t gen_rand(gen *c)
{
    uint64_t z = (c->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double gen_unif(gen *c) { return (double)(gen_rand(c) >> 11) * (1.0 / 9007199254740992.0); }

/* GFLOPs, never 0 (0 means "unknown" to the graph). */
static double gen_gf(double flops) { return flops > 1.0 ? flops * 1e-9 : 1e-9; }
#define GEN_VIEW_COST 1e-6

static void gen_fmt(gen *c, const char *fmt, va_list ap)
{
    int n = vsnprintf(c->name, sizeof c->name, fmt, ap);
    if (n < 0 || (size_t)n >= sizeof c->name)
        c->st = bp__err(c->err, BP_ERR_LIMIT, "gen: a generated name is too long (\"%.60s...\")", c->name);
}

/* Adds a tensor; a dim equal to BP_DIM_SYMBOLIC is the symbol "S". */
static int32_t gen_tensor(gen *c, bp_dtype dt, int rank, const int64_t *dims, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int32_t gen_tensor(gen *c, bp_dtype dt, int rank, const int64_t *dims, const char *fmt, ...)
{
    if (c->st) return -1;
    va_list ap;
    va_start(ap, fmt);
    gen_fmt(c, fmt, ap);
    va_end(ap);
    if (c->st) return -1;
    const char *syms[8];
    for (int i = 0; i < rank && i < 8; i++) syms[i] = dims[i] == BP_DIM_SYMBOLIC ? "S" : NULL;
    int32_t id = -1;
    c->st = bp_graph_add_tensor_shape(c->g, c->name, dt, rank, dims, syms, &id, c->err);
    return c->st ? -1 : id;
}

static void gen_mark(gen *c, int32_t t, unsigned flags)
{
    if (!c->st) c->st = bp_graph_mark(c->g, t, flags, c->err);
}

/* A weight tensor (f32), marked as a graph weight. */
static int32_t gen_weight(gen *c, int rank, const int64_t *dims, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int32_t gen_weight(gen *c, int rank, const int64_t *dims, const char *fmt, ...)
{
    if (c->st) return -1;
    va_list ap;
    va_start(ap, fmt);
    gen_fmt(c, fmt, ap);
    va_end(ap);
    if (c->st) return -1;
    int32_t id = -1;
    c->st = bp_graph_add_tensor_shape(c->g, c->name, BP_DT_F32, rank, dims, NULL, &id, c->err);
    gen_mark(c, id, BP_TENSOR_WEIGHT);
    return c->st ? -1 : id;
}

static int32_t gen_op(gen *c, const char *type, double cost, int n_in, const int32_t *in,
                      int n_out, const int32_t *out, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
static int32_t gen_op(gen *c, const char *type, double cost, int n_in, const int32_t *in,
                      int n_out, const int32_t *out, const char *fmt, ...)
{
    if (c->st) return -1;
    va_list ap;
    va_start(ap, fmt);
    gen_fmt(c, fmt, ap);
    va_end(ap);
    if (c->st) return -1;
    int32_t id = -1;
    c->st = bp_graph_add_op(c->g, c->name, type, n_in, in, n_out, out, cost, &id, c->err);
    return c->st ? -1 : id;
}

/* One op NAME with one f32 output tensor also called NAME; returns the
 * tensor.  view: the output is a view of in[0]. */
static int32_t gen_op1(gen *c, const char *type, double cost, int n_in, const int32_t *in,
                       int rank, const int64_t *dims, bool view, const char *name)
{
    int32_t t = gen_tensor(c, BP_DT_F32, rank, dims, "%s", name);
    gen_op(c, type, cost, n_in, in, 1, &t, "%s", name);
    if (view && !c->st) c->st = bp_graph_set_view(c->g, t, in[0], c->err);
    return c->st ? -1 : t;
}

static gen_fm gen_fm_op(gen *c, const char *type, double cost, int n_in, const int32_t *in,
                        int64_t ch, int64_t h, int64_t w, const char *name)
{
    int64_t d[4] = {c->B, ch, h, w};
    gen_fm r = {gen_op1(c, type, cost, n_in, in, 4, d, false, name), ch, h, w};
    return r;
}

static double gen_elems(const gen *c, gen_fm x) { return (double)c->B * (double)x.c * (double)x.h * (double)x.w; }

/* Conv NAME (weight NAME.weight [cout, cin/groups, k, k], bias NAME.bias). */
static gen_fm gen_conv(gen *c, const char *name, gen_fm x, int64_t cout, int k, int stride, int pad,
                       int64_t groups, bool bias)
{
    gen_fm r = {-1, cout, 0, 0};
    if (c->st) return r;
    r.h = (x.h + 2 * pad - k) / stride + 1;
    r.w = (x.w + 2 * pad - k) / stride + 1;
    if (r.h < 1) r.h = 1;
    if (r.w < 1) r.w = 1;
    int64_t wd[4] = {cout, x.c / groups, k, k}, bd[1] = {cout};
    int32_t in[3] = {x.id, -1, -1};
    in[1] = gen_weight(c, 4, wd, "%s.weight", name);
    if (bias) in[2] = gen_weight(c, 1, bd, "%s.bias", name);
    double flops = 2.0 * (double)c->B * (double)cout * (double)r.h * (double)r.w * (double)(x.c / groups) * k * k;
    return gen_fm_op(c, "Conv", gen_gf(flops), bias ? 3 : 2, in, cout, r.h, r.w, name);
}

static gen_fm gen_unary(gen *c, const char *type, double flops_per_elem, gen_fm x, const char *name)
{
    return gen_fm_op(c, type, gen_gf(flops_per_elem * gen_elems(c, x)), 1, &x.id, x.c, x.h, x.w, name);
}

static gen_fm gen_pool(gen *c, const char *type, gen_fm x, int k, int stride, int pad, const char *name)
{
    int64_t h = (x.h + 2 * pad - k) / stride + 1, w = (x.w + 2 * pad - k) / stride + 1;
    if (h < 1) h = 1;
    if (w < 1) w = 1;
    double flops = (double)c->B * (double)x.c * (double)h * (double)w * k * k;
    return gen_fm_op(c, type, gen_gf(flops), 1, &x.id, x.c, h, w, name);
}

/* Explicit BatchNormalization NAME with the four per-channel vectors packed
 * into one weight NAME.param [4, C] (scale, bias, mean, var). */
static gen_fm gen_bn(gen *c, gen_fm x, const char *name)
{
    int64_t pd[2] = {4, x.c};
    int32_t in[2] = {x.id, gen_weight(c, 2, pd, "%s.param", name)};
    return gen_fm_op(c, "BatchNormalization", gen_gf(2.0 * gen_elems(c, x)), 2, in, x.c, x.h, x.w, name);
}

/* GlobalAveragePool -> Flatten (a view) -> Gemm -> "logits" [B, classes]. */
static int32_t gen_head(gen *c, gen_fm x, int64_t classes)
{
    gen_fm p = gen_fm_op(c, "GlobalAveragePool", gen_gf(gen_elems(c, x)), 1, &x.id, x.c, 1, 1, "avgpool");
    int64_t fd[2] = {c->B, x.c};
    int32_t f = gen_op1(c, "Flatten", GEN_VIEW_COST, 1, &p.id, 2, fd, true, "flatten");
    int64_t wd[2] = {classes, x.c}, bd[1] = {classes}, ld[2] = {c->B, classes};
    int32_t in[3] = {f, gen_weight(c, 2, wd, "fc.weight"), gen_weight(c, 1, bd, "fc.bias")};
    int32_t logits = gen_tensor(c, BP_DT_F32, 2, ld, "logits");
    gen_op(c, "Gemm", gen_gf(2.0 * (double)c->B * (double)x.c * (double)classes), 3, in, 1, &logits, "fc");
    gen_mark(c, logits, BP_TENSOR_OUTPUT);
    return logits;
}

static gen_fm gen_input_image(gen *c, int64_t ch, int64_t h, int64_t w)
{
    int64_t d[4] = {c->B, ch, h, w};
    gen_fm x = {gen_tensor(c, BP_DT_F32, 4, d, "input"), ch, h, w};
    gen_mark(c, x.id, BP_TENSOR_INPUT);
    return x;
}

/* ------------------------------------------------------------------- chain */

/* The reference chain: input "x" [B, W] and n ops l0..l{n-1}, each a MatMul of
 * the previous activation with its own weight; the widths are drawn from the
 * seed in [W/2, 2W] so that sizes differ and reuse is not trivial.  The last
 * activation is the graph output.  Two tensors per op, so 10M ops is 20M
 * tensors. */
static void gen_chain(gen *c, int64_t n, int64_t width)
{
    int64_t xd[2] = {c->B, width};
    int32_t x = gen_tensor(c, BP_DT_F32, 2, xd, "x");
    gen_mark(c, x, BP_TENSOR_INPUT);
    int64_t prev = width;
    for (int64_t i = 0; i < n && !c->st; i++) {
        int64_t d = width / 2 + (int64_t)(gen_rand(c) % (uint64_t)(width + width / 2 + 1));
        if (d < 1) d = 1;
        int64_t wd[2] = {prev, d}, od[2] = {c->B, d};
        int32_t in[2] = {x, gen_weight(c, 2, wd, "l%lld.weight", (long long)i)};
        int32_t y = gen_tensor(c, BP_DT_F32, 2, od, "l%lld", (long long)i);
        gen_op(c, "MatMul", gen_gf(2.0 * (double)c->B * (double)prev * (double)d), 2, in, 1, &y, "l%lld", (long long)i);
        x = y;
        prev = d;
    }
    gen_mark(c, x, BP_TENSOR_OUTPUT);
}

/* ----------------------------------------------------------------- diamond */

/* The reference example A->B,C / D->E,F: op A makes t_a, read by B and C; D
 * concatenates t_b and t_c into t_d, which E and F both read; t_e and t_f
 * are the graph outputs.  A, B, C, E, F are convolutions with their own
 * weights (different channel counts, so the sizes differ), D is a Concat.
 * The graph input "input" is [B, 64, 56, 56]. */
static void gen_diamond(gen *c)
{
    gen_fm x = gen_input_image(c, 64, 56, 56);
    gen_fm a = gen_conv(c, "A", x, 64, 3, 1, 1, 1, false);
    gen_fm b = gen_conv(c, "B", a, 128, 3, 1, 1, 1, false);
    gen_fm cc = gen_conv(c, "C", a, 32, 1, 1, 0, 1, false);
    int32_t cat[2] = {b.id, cc.id};
    gen_fm d = gen_fm_op(c, "Concat", gen_gf((double)c->B * 160 * 56 * 56), 2, cat, 160, 56, 56, "D");
    gen_fm e = gen_conv(c, "E", d, 64, 1, 1, 0, 1, false);
    gen_fm f = gen_conv(c, "F", d, 16, 3, 1, 1, 1, false);
    gen_mark(c, e.id, BP_TENSOR_OUTPUT);
    gen_mark(c, f.id, BP_TENSOR_OUTPUT);
}
/* The tensors are named after their ops (A..F), not t_a..t_f. */

/* ---------------------------------------------------------------- resnet50 */

/* ResNet-50 v1.5 inference (torchvision names), NCHW f32, 224x224.
 * BatchNorm is folded into the convolutions (each conv has a bias), as an
 * inference engine does.  Bottleneck blocks 1x1 -> 3x3 (stride here) -> 1x1
 * x4, a 1x1 downsample conv on the first block of each stage, residual Add
 * then Relu.  Default blocks [3, 4, 6, 3] (53 convs with the downsample
 * ones); `layers` multiplies the block counts, `width` is the base width
 * (64).  Flatten before fc is a view. */
static void gen_resnet50(gen *c, int64_t repeat, int64_t width)
{
    static const int blocks[4] = {3, 4, 6, 3};
    char n[48], m[96];
    gen_fm x = gen_input_image(c, 3, 224, 224);
    x = gen_conv(c, "conv1", x, width, 7, 2, 3, 1, true);
    x = gen_unary(c, "Relu", 1, x, "relu");
    x = gen_pool(c, "MaxPool", x, 3, 2, 1, "maxpool");
    for (int s = 0; s < 4; s++) {
        int64_t w = width << s;
        for (int64_t b = 0; b < blocks[s] * repeat && !c->st; b++) {
            int stride = (b == 0 && s > 0) ? 2 : 1;
            gen_fm id = x;
            snprintf(n, sizeof n, "layer%d.%lld", s + 1, (long long)b);
            snprintf(m, sizeof m, "%s.conv1", n); gen_fm y = gen_conv(c, m, x, w, 1, 1, 0, 1, true);
            snprintf(m, sizeof m, "%s.relu1", n); y = gen_unary(c, "Relu", 1, y, m);
            snprintf(m, sizeof m, "%s.conv2", n); y = gen_conv(c, m, y, w, 3, stride, 1, 1, true);
            snprintf(m, sizeof m, "%s.relu2", n); y = gen_unary(c, "Relu", 1, y, m);
            snprintf(m, sizeof m, "%s.conv3", n); y = gen_conv(c, m, y, 4 * w, 1, 1, 0, 1, true);
            if (b == 0) { snprintf(m, sizeof m, "%s.downsample", n); id = gen_conv(c, m, x, 4 * w, 1, stride, 0, 1, true); }
            int32_t add[2] = {y.id, id.id};
            snprintf(m, sizeof m, "%s.add", n); y = gen_fm_op(c, "Add", gen_gf(gen_elems(c, y)), 2, add, y.c, y.h, y.w, m);
            snprintf(m, sizeof m, "%s.relu", n); x = gen_unary(c, "Relu", 1, y, m);
        }
    }
    gen_head(c, x, 1000);
}

/* -------------------------------------------------------------------- unet */

/* U-Net (Ronneberger et al. 2015) with "same" padding so that skips need no
 * cropping: input [B, 3, 256, 256]; per level two 3x3 conv + Relu then a
 * 2x2 MaxPool; the bottleneck; per level up a 2x2 stride-2 ConvTranspose,
 * Concat with the skip, two 3x3 conv + Relu; a 1x1 conv to 2 classes.
 * `layers` = levels (4), `width` = base channels (64). */
static void gen_unet(gen *c, int levels, int64_t width)
{
    char m[96];
    gen_fm skip[16];
    gen_fm x = gen_input_image(c, 3, 256, 256);
    for (int l = 0; l <= levels && !c->st; l++) {
        int64_t ch = width << l;
        const char *p = l == levels ? "mid" : "down";
        char lv[16] = "";
        if (l < levels) snprintf(lv, sizeof lv, "%d", l);
        snprintf(m, sizeof m, "%s%s.conv1", p, lv); x = gen_conv(c, m, x, ch, 3, 1, 1, 1, true);
        snprintf(m, sizeof m, "%s%s.relu1", p, lv); x = gen_unary(c, "Relu", 1, x, m);
        snprintf(m, sizeof m, "%s%s.conv2", p, lv); x = gen_conv(c, m, x, ch, 3, 1, 1, 1, true);
        snprintf(m, sizeof m, "%s%s.relu2", p, lv); x = gen_unary(c, "Relu", 1, x, m);
        if (l < levels) {
            skip[l] = x;
            snprintf(m, sizeof m, "down%d.pool", l); x = gen_pool(c, "MaxPool", x, 2, 2, 0, m);
        }
    }
    for (int l = levels - 1; l >= 0 && !c->st; l--) {
        int64_t ch = width << l;
        /* ConvTranspose 2x2 stride 2: weight [cin, cout, 2, 2]. */
        int64_t wd[4] = {x.c, ch, 2, 2}, bd[1] = {ch};
        snprintf(m, sizeof m, "up%d.upconv", l);
        int32_t in[3] = {x.id, gen_weight(c, 4, wd, "%s.weight", m), gen_weight(c, 1, bd, "%s.bias", m)};
        double flops = 2.0 * (double)c->B * (double)x.c * (double)ch * (double)x.h * (double)x.w * 4;
        gen_fm u = gen_fm_op(c, "ConvTranspose", gen_gf(flops), 3, in, ch, x.h * 2, x.w * 2, m);
        int32_t cat[2] = {skip[l].id, u.id};
        snprintf(m, sizeof m, "up%d.concat", l);
        x = gen_fm_op(c, "Concat", gen_gf((double)c->B * 2.0 * (double)ch * (double)u.h * (double)u.w), 2, cat, 2 * ch, u.h, u.w, m);
        snprintf(m, sizeof m, "up%d.conv1", l); x = gen_conv(c, m, x, ch, 3, 1, 1, 1, true);
        snprintf(m, sizeof m, "up%d.relu1", l); x = gen_unary(c, "Relu", 1, x, m);
        snprintf(m, sizeof m, "up%d.conv2", l); x = gen_conv(c, m, x, ch, 3, 1, 1, 1, true);
        snprintf(m, sizeof m, "up%d.relu2", l); x = gen_unary(c, "Relu", 1, x, m);
    }
    x = gen_conv(c, "head", x, 2, 1, 1, 0, 1, true);
    gen_mark(c, x.id, BP_TENSOR_OUTPUT);
}

/* ------------------------------------------------------------- transformer */

typedef struct gen_tf {
    int64_t S;        /* dims value for the sequence: a number or BP_DIM_SYMBOLIC */
    double s;         /* the number used for costs */
    int64_t D, H, hd; /* model width, heads, head dim */
} gen_tf;

/* x [B, S, K] @ W [K, N] + bias -> NAME [B, S, N] (MatMul NAME.mm, Add NAME). */
static int32_t gen_linear(gen *c, const gen_tf *t, int32_t x, int64_t k, int64_t n, const char *name)
{
    char m[192];
    int64_t wd[2] = {k, n}, bd[1] = {n}, od[3] = {c->B, t->S, n};
    int32_t in[2] = {x, gen_weight(c, 2, wd, "%s.weight", name)};
    snprintf(m, sizeof m, "%s.mm", name);
    int32_t mm = gen_op1(c, "MatMul", gen_gf(2.0 * (double)c->B * t->s * (double)k * (double)n), 2, in, 3, od, false, m);
    int32_t in2[2] = {mm, gen_weight(c, 1, bd, "%s.bias", name)};
    return gen_op1(c, "Add", gen_gf((double)c->B * t->s * (double)n), 2, in2, 3, od, false, name);
}

static int32_t gen_layernorm(gen *c, const gen_tf *t, int32_t x, const char *name)
{
    int64_t pd[1] = {t->D}, od[3] = {c->B, t->S, t->D};
    int32_t in[3] = {x, gen_weight(c, 1, pd, "%s.weight", name), gen_weight(c, 1, pd, "%s.bias", name)};
    return gen_op1(c, "LayerNormalization", gen_gf(8.0 * (double)c->B * t->s * (double)t->D), 3, in, 3, od, false, name);
}

/* q, k or v [B, S, D] -> Reshape [B, S, H, hd] -> Transpose to [B, H, S, hd]
 * (k: [B, H, hd, S]); both are views (a strided batched MatMul reads them). */
static int32_t gen_heads_view(gen *c, const gen_tf *t, int32_t x, const char *name, bool kt)
{
    char m[192];
    int64_t rd[4] = {c->B, t->S, t->H, t->hd};
    int64_t td[4] = {c->B, t->H, kt ? t->hd : t->S, kt ? t->S : t->hd};
    snprintf(m, sizeof m, "%s.reshape", name);
    int32_t r = gen_op1(c, "Reshape", GEN_VIEW_COST, 1, &x, 4, rd, true, m);
    snprintf(m, sizeof m, "%s.transpose", name);
    return gen_op1(c, "Transpose", GEN_VIEW_COST, 1, &r, 4, td, true, m);
}

/* GPT-2 small: token and position embeddings (Gather), then per layer
 *   ln_1 -> c_attn (MatMul + bias Add) -> Split q,k,v -> Reshape/Transpose
 *   views -> scores = q k^T (MatMul) -> Softmax (scale and causal mask folded
 *   in) -> ctx = p v (MatMul) -> Transpose (a copy: .contiguous()) ->
 *   Reshape view -> c_proj -> residual Add -> ln_2 -> mlp.c_fc (4x) -> Gelu
 *   -> mlp.c_proj -> residual Add,
 * then ln_f and logits = x wte^T [B, S, 50257] (tied embedding).  Attention is
 * batched over heads by default; per_head makes each head's scores, Softmax
 * and context separate ops (parallel branches) that read Slice views and are
 * joined by a Concat. */
static void gen_transformer(gen *c, int layers, int64_t D, int64_t seq, bool symbolic, bool per_head)
{
    const int64_t V = 50257;
    gen_tf t = {symbolic ? BP_DIM_SYMBOLIC : seq, (double)seq, D, D / 64, 64};
    double B = (double)c->B;
    char n[64], m[128];
    int64_t idd[2] = {c->B, t.S}, pidd[2] = {1, t.S}, xd[3] = {c->B, t.S, D}, pxd[3] = {1, t.S, D};
    int64_t ted[2] = {V, D}, ped[2] = {seq > 1024 ? seq : 1024, D};
    int32_t ids = gen_tensor(c, BP_DT_I64, 2, idd, "input_ids");
    int32_t pos = gen_tensor(c, BP_DT_I64, 2, pidd, "position_ids");
    gen_mark(c, ids, BP_TENSOR_INPUT);
    gen_mark(c, pos, BP_TENSOR_INPUT);
    int32_t wte = gen_weight(c, 2, ted, "wte"), wpe = gen_weight(c, 2, ped, "wpe");
    int32_t in[3] = {wte, ids, -1};
    int32_t te = gen_op1(c, "Gather", gen_gf(B * t.s * (double)D), 2, in, 3, xd, false, "embed.tok");
    in[0] = wpe; in[1] = pos;
    int32_t pe = gen_op1(c, "Gather", gen_gf(t.s * (double)D), 2, in, 3, pxd, false, "embed.pos");
    in[0] = te; in[1] = pe;
    int32_t x = gen_op1(c, "Add", gen_gf(B * t.s * (double)D), 2, in, 3, xd, false, "embed");
    for (int l = 0; l < layers && !c->st; l++) {
        snprintf(n, sizeof n, "h.%d", l);
        snprintf(m, sizeof m, "%s.ln_1", n); int32_t h = gen_layernorm(c, &t, x, m);
        snprintf(m, sizeof m, "%s.attn.c_attn", n); int32_t qkv = gen_linear(c, &t, h, D, 3 * D, m);
        int32_t q = gen_tensor(c, BP_DT_F32, 3, xd, "%s.attn.q", n);
        int32_t k = gen_tensor(c, BP_DT_F32, 3, xd, "%s.attn.k", n);
        int32_t v = gen_tensor(c, BP_DT_F32, 3, xd, "%s.attn.v", n);
        int32_t qkvo[3] = {q, k, v};
        gen_op(c, "Split", gen_gf(B * t.s * 3.0 * (double)D), 1, &qkv, 3, qkvo, "%s.attn.split", n);
        snprintf(m, sizeof m, "%s.attn.q", n); int32_t qh = gen_heads_view(c, &t, q, m, false);
        snprintf(m, sizeof m, "%s.attn.k", n); int32_t kh = gen_heads_view(c, &t, k, m, true);
        snprintf(m, sizeof m, "%s.attn.v", n); int32_t vh = gen_heads_view(c, &t, v, m, false);
        double sc_flops = 2.0 * B * t.s * t.s * 64.0, sm_flops = 5.0 * B * t.s * t.s;
        int64_t cd[4] = {c->B, t.H, t.S, t.hd};
        int32_t ctx;
        if (!per_head) {
            int64_t sd[4] = {c->B, t.H, t.S, t.S};
            int32_t p2[2] = {qh, kh};
            snprintf(m, sizeof m, "%s.attn.scores", n);
            int32_t s = gen_op1(c, "MatMul", gen_gf(sc_flops * (double)t.H), 2, p2, 4, sd, false, m);
            snprintf(m, sizeof m, "%s.attn.softmax", n);
            int32_t p = gen_op1(c, "Softmax", gen_gf(sm_flops * (double)t.H), 1, &s, 4, sd, false, m);
            p2[0] = p; p2[1] = vh;
            snprintf(m, sizeof m, "%s.attn.ctx", n);
            ctx = gen_op1(c, "MatMul", gen_gf(sc_flops * (double)t.H), 2, p2, 4, cd, false, m);
        } else {
            int32_t heads[64];
            int64_t hq[3] = {c->B, t.S, t.hd}, hk[3] = {c->B, t.hd, t.S}, sd[3] = {c->B, t.S, t.S};
            for (int64_t hh = 0; hh < t.H; hh++) {
                char hn[96];
                snprintf(hn, sizeof hn, "%s.attn.head%lld", n, (long long)hh);
                snprintf(m, sizeof m, "%s.q", hn); int32_t qs = gen_op1(c, "Slice", GEN_VIEW_COST, 1, &qh, 3, hq, true, m);
                snprintf(m, sizeof m, "%s.k", hn); int32_t ks = gen_op1(c, "Slice", GEN_VIEW_COST, 1, &kh, 3, hk, true, m);
                snprintf(m, sizeof m, "%s.v", hn); int32_t vs = gen_op1(c, "Slice", GEN_VIEW_COST, 1, &vh, 3, hq, true, m);
                int32_t p2[2] = {qs, ks};
                snprintf(m, sizeof m, "%s.scores", hn); int32_t s = gen_op1(c, "MatMul", gen_gf(sc_flops), 2, p2, 3, sd, false, m);
                snprintf(m, sizeof m, "%s.softmax", hn); int32_t p = gen_op1(c, "Softmax", gen_gf(sm_flops), 1, &s, 3, sd, false, m);
                p2[0] = p; p2[1] = vs;
                snprintf(m, sizeof m, "%s.ctx", hn); heads[hh] = gen_op1(c, "MatMul", gen_gf(sc_flops), 2, p2, 3, hq, false, m);
            }
            snprintf(m, sizeof m, "%s.attn.ctx", n);
            ctx = gen_op1(c, "Concat", gen_gf(B * t.s * (double)D), (int)t.H, heads, 4, cd, false, m);
        }
        int64_t ctd[4] = {c->B, t.S, t.H, t.hd};
        snprintf(m, sizeof m, "%s.attn.merge", n);
        int32_t mg = gen_op1(c, "Transpose", gen_gf(B * t.s * (double)D), 1, &ctx, 4, ctd, false, m);
        snprintf(m, sizeof m, "%s.attn.merge.reshape", n);
        mg = gen_op1(c, "Reshape", GEN_VIEW_COST, 1, &mg, 3, xd, true, m);
        snprintf(m, sizeof m, "%s.attn.c_proj", n); int32_t a = gen_linear(c, &t, mg, D, D, m);
        int32_t r[2] = {x, a};
        snprintf(m, sizeof m, "%s.add1", n); x = gen_op1(c, "Add", gen_gf(B * t.s * (double)D), 2, r, 3, xd, false, m);
        snprintf(m, sizeof m, "%s.ln_2", n); h = gen_layernorm(c, &t, x, m);
        snprintf(m, sizeof m, "%s.mlp.c_fc", n); int32_t f = gen_linear(c, &t, h, D, 4 * D, m);
        int64_t fd[3] = {c->B, t.S, 4 * D};
        snprintf(m, sizeof m, "%s.mlp.gelu", n); f = gen_op1(c, "Gelu", gen_gf(8.0 * B * t.s * 4.0 * (double)D), 1, &f, 3, fd, false, m);
        snprintf(m, sizeof m, "%s.mlp.c_proj", n); f = gen_linear(c, &t, f, 4 * D, D, m);
        r[0] = x; r[1] = f;
        snprintf(m, sizeof m, "%s.add2", n); x = gen_op1(c, "Add", gen_gf(B * t.s * (double)D), 2, r, 3, xd, false, m);
    }
    x = gen_layernorm(c, &t, x, "ln_f");
    int64_t ld[3] = {c->B, t.S, V};
    int32_t li[2] = {x, wte};
    int32_t logits = gen_tensor(c, BP_DT_F32, 3, ld, "logits");
    gen_op(c, "MatMul", gen_gf(2.0 * B * t.s * (double)D * (double)V), 2, li, 1, &logits, "lm_head");
    gen_mark(c, logits, BP_TENSOR_OUTPUT);
}

/* ---------------------------------------------------------------- randwire */

/* Scratch for one stage's wiring, reused across stages. */
typedef struct gen_ws {
    const bp_allocator *a;
    int64_t n, cap;
    int32_t *far;     /* n * 2: far end of node u's lattice edges (u, u+1), (u, u+2) */
    int32_t *deg;     /* n: undirected degree */
    int32_t *off;     /* n + 1: in-CSR offsets (edges lower -> higher index) */
    int32_t *pred;    /* n * 2: predecessors */
    int32_t *outdeg;  /* n */
    int32_t *out;     /* n: each node's output tensor */
} gen_ws;

static void gen_ws_free(gen_ws *w)
{
    size_t n = (size_t)w->cap;
    bp__free(w->a, w->far, n * 2 * sizeof *w->far);
    bp__free(w->a, w->deg, n * sizeof *w->deg);
    bp__free(w->a, w->off, (n + 1) * sizeof *w->off);
    bp__free(w->a, w->pred, n * 2 * sizeof *w->pred);
    bp__free(w->a, w->outdeg, n * sizeof *w->outdeg);
    bp__free(w->a, w->out, n * sizeof *w->out);
}

static bool gen_ws_alloc(gen_ws *w, int64_t n)
{
    size_t z = (size_t)n;
    w->cap = n;
    w->far = bp__alloc(w->a, z * 2 * sizeof *w->far);
    w->deg = bp__alloc(w->a, z * sizeof *w->deg);
    w->off = bp__alloc(w->a, (z + 1) * sizeof *w->off);
    w->pred = bp__alloc(w->a, z * 2 * sizeof *w->pred);
    w->outdeg = bp__alloc(w->a, z * sizeof *w->outdeg);
    w->out = bp__alloc(w->a, z * sizeof *w->out);
    return w->far && w->deg && w->off && w->pred && w->outdeg && w->out;
}

static bool gen_ws_has_edge(const gen_ws *w, int half, int32_t u, int32_t v)
{
    for (int j = 0; j < half; j++)
        if (w->far[(size_t)u * 2 + j] == v || w->far[(size_t)v * 2 + j] == u) return true;
    return false;
}

/* WS(n, k, p) then the DAG by index, as an in-CSR (off, pred) plus outdeg. */
static void gen_ws_wire(gen *c, gen_ws *w, int64_t n, int k, double p)
{
    int half = k / 2;
    for (int64_t u = 0; u < n; u++) {
        for (int j = 0; j < 2; j++) w->far[u * 2 + j] = j < half ? (int32_t)((u + j + 1) % n) : -1;
        w->deg[u] = 2 * half;
    }
    for (int j = 0; j < half; j++) {
        for (int64_t u = 0; u < n; u++) {
            if (gen_unif(c) >= p) continue;
            if (w->deg[u] >= n - 1) continue;  /* networkx skips the rewiring */
            int32_t wv;
            do wv = (int32_t)(gen_rand(c) % (uint64_t)n);
            while (wv == u || gen_ws_has_edge(w, half, (int32_t)u, wv));
            int32_t v = w->far[u * 2 + j];
            w->deg[v]--;
            w->deg[wv]++;
            w->far[u * 2 + j] = wv;
        }
    }
    /* Direct lower -> higher; in-CSR by counting. */
    memset(w->off, 0, (size_t)(n + 1) * sizeof *w->off);
    memset(w->outdeg, 0, (size_t)n * sizeof *w->outdeg);
    for (int64_t u = 0; u < n; u++)
        for (int j = 0; j < half; j++) {
            int32_t v = w->far[u * 2 + j], lo = (int32_t)u < v ? (int32_t)u : v, hi = (int32_t)u < v ? v : (int32_t)u;
            w->off[hi + 1]++;
            w->outdeg[lo]++;
        }
    for (int64_t u = 0; u < n; u++) w->off[u + 1] += w->off[u];
    for (int64_t u = 0; u < n; u++)
        for (int j = 0; j < half; j++) {
            int32_t v = w->far[u * 2 + j], lo = (int32_t)u < v ? (int32_t)u : v, hi = (int32_t)u < v ? v : (int32_t)u;
            w->pred[w->off[hi]++] = lo;
        }
    for (int64_t u = n; u > 0; u--) w->off[u] = w->off[u - 1];
    w->off[0] = 0;
    /* Predecessors in index order (lists are short: insertion sort). */
    for (int64_t u = 0; u < n; u++) {
        int32_t *a = w->pred + w->off[u];
        int32_t m = w->off[u + 1] - w->off[u];
        for (int32_t i = 1; i < m; i++) {
            int32_t x = a[i], j = i;
            while (j > 0 && a[j - 1] > x) { a[j] = a[j - 1]; j--; }
            a[j] = x;
        }
    }
}

/* Sums n feature maps (all of shape like `x`) into one NAME, in chunks of at
 * most 64 inputs ("Sum" ops NAME.sumK), the last op being `type`. */
#define GEN_FANIN 64
static gen_fm gen_reduce(gen *c, const char *type, int32_t *ins, int64_t n, gen_fm like, const char *name)
{
    char m[128];
    int64_t k = 0;
    while (n > GEN_FANIN && !c->st) {
        /* Replace each chunk of 64 by its sum, in place at the front. */
        int64_t out = 0;
        for (int64_t i = 0; i < n; i += GEN_FANIN) {
            int64_t cnt = n - i < GEN_FANIN ? n - i : GEN_FANIN;
            snprintf(m, sizeof m, "%s.sum%lld", name, (long long)k++);
            gen_fm s = gen_fm_op(c, "Sum", gen_gf((double)cnt * gen_elems(c, like)), (int)cnt, ins + i, like.c, like.h, like.w, m);
            ins[out++] = s.id;
        }
        n = out;
    }
    return gen_fm_op(c, type, gen_gf((double)n * gen_elems(c, like)), (int)n, ins, like.c, like.h, like.w, name);
}

/* One node: [WeightedSum of the inputs] -> Relu -> depthwise 3x3 Conv ->
 * pointwise 1x1 Conv -> BatchNormalization.  A node with one input skips the
 * aggregation (its one scalar weight is absorbed by BN).  Nodes fed by the
 * stage input get its shape (in_like) and the stage's stride; the pointwise
 * conv makes the stage's channel count. */
static gen_fm gen_rw_node(gen *c, const char *pfx, int32_t *ins, int n_in, gen_fm in_like,
                          int64_t cout, int stride)
{
    char m[96];
    gen_fm x = in_like;
    if (n_in > 1) {
        /* ins has room for one more: the aggregation weights [n_in]. */
        int64_t wd[1] = {n_in};
        snprintf(m, sizeof m, "%s.agg", pfx);
        ins[n_in] = gen_weight(c, 1, wd, "%s.weight", m);
        x = gen_fm_op(c, "WeightedSum", gen_gf(2.0 * n_in * gen_elems(c, in_like)), n_in + 1, ins,
                      in_like.c, in_like.h, in_like.w, m);
    } else {
        x.id = ins[0];
    }
    snprintf(m, sizeof m, "%s.relu", pfx); x = gen_unary(c, "Relu", 1, x, m);
    snprintf(m, sizeof m, "%s.dw", pfx); x = gen_conv(c, m, x, x.c, 3, stride, 1, x.c, false);
    snprintf(m, sizeof m, "%s.pw", pfx); x = gen_conv(c, m, x, cout, 1, 1, 0, 1, false);
    snprintf(m, sizeof m, "%s.bn", pfx); return gen_bn(c, x, m);
}

/* RandWire (small regime of Xie et al.): stem conv 3x3/2 (C/2) + BN, then
 * Relu-conv 3x3/2 (C) + BN at 56x56; then `stages` random stages: WS(N, 4,
 * 0.75) each, the first three halve the resolution (28, 14, 7) and have C,
 * 2C, 4C channels, later ones keep 7x7 and 4C.  Nodes with no predecessor
 * read the stage input (with the stride and the channel change); the stage
 * output is the Mean of the nodes with no successor.  Head: Relu, 1x1 conv to
 * 1280 + BN, GlobalAveragePool, Flatten, fc 1000.  Default N 32, C 78, 3
 * stages.  About 8.5 tensors and 5 ops per node. */
static void gen_randwire(gen *c, const bp_allocator *a, int stages, int64_t N, int64_t C)
{
    gen_ws w = {.a = a};
    if (!gen_ws_alloc(&w, N)) {
        gen_ws_free(&w);
        c->st = bp__err(c->err, BP_ERR_NOMEM, "gen randwire: out of memory for %lld nodes per stage", (long long)N);
        return;
    }
    int k = N - 1 >= 4 ? 4 : (int)((N - 1) & ~1LL);
    int32_t ins[GEN_FANIN + 2];
    int32_t *sinks = w.outdeg; /* reused for the sink list after the nodes are built */
    char m[96];
    gen_fm x = gen_input_image(c, 3, 224, 224);
    x = gen_conv(c, "stem.conv1", x, C / 2 > 0 ? C / 2 : 1, 3, 2, 1, 1, false);
    x = gen_bn(c, x, "stem.bn1");
    x = gen_unary(c, "Relu", 1, x, "stem.relu2");
    x = gen_conv(c, "stem.conv2", x, C, 3, 2, 1, 1, false);
    x = gen_bn(c, x, "stem.bn2");
    for (int s = 0; s < stages && !c->st; s++) {
        int stride = s < 3 ? 2 : 1;
        int64_t cs = C << (s < 2 ? s : 2);
        gen_ws_wire(c, &w, N, k, 0.75);
        gen_fm like = {-1, cs, (x.h + 1) / stride, (x.w + 1) / stride};
        if (stride == 1) { like.h = x.h; like.w = x.w; }
        for (int64_t v = 0; v < N && !c->st; v++) {
            int32_t np = w.off[v + 1] - w.off[v];
            char pfx[48];
            snprintf(pfx, sizeof pfx, "s%d.n%lld", s, (long long)v);
            gen_fm y;
            if (np == 0) {
                ins[0] = x.id;
                y = gen_rw_node(c, pfx, ins, 1, x, cs, stride);
            } else if (np <= GEN_FANIN) {
                for (int32_t i = 0; i < np; i++) ins[i] = w.out[w.pred[w.off[v] + i]];
                y = gen_rw_node(c, pfx, ins, np, like, cs, 1);
            } else {
                c->st = bp__err(c->err, BP_ERR_LIMIT, "gen randwire: node %s has %d inputs (at most %d)", pfx, np, GEN_FANIN);
                break;
            }
            w.out[v] = y.id;
        }
        /* Sinks: nodes with no successor, in index order (outdeg is free now). */
        int64_t ns = 0;
        for (int64_t v = 0; v < N; v++) if (sinks[v] == 0) sinks[ns++] = w.out[v];
        snprintf(m, sizeof m, "s%d.out", s);
        x = gen_reduce(c, "Mean", sinks, ns, like, m);
    }
    gen_ws_free(&w);
    x = gen_unary(c, "Relu", 1, x, "head.relu");
    x = gen_conv(c, "head.conv", x, 1280, 1, 1, 0, 1, false);
    x = gen_bn(c, x, "head.bn");
    gen_head(c, x, 1000);
}

/* ------------------------------------------------------------------ driver */

static const char *const gen_kinds[] = {"chain", "diamond", "resnet50", "unet", "transformer", "randwire", NULL};

const char *const *bp_gen_kinds(void) { return gen_kinds; }

void bp_gen_options_init(bp_gen_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
}

static bp_status gen_check(bp_error *err, const char *kind, const char *what, int v, int lo, int hi)
{
    if (v == 0 || (v >= lo && v <= hi)) return BP_OK;
    return bp__err(err, v < 0 ? BP_ERR_USAGE : BP_ERR_LIMIT, "gen %s: %s %d is out of range (%d..%d, or 0 for the default)",
                   kind, what, v, lo, hi);
}

bp_status bp_gen(const char *kind, const bp_gen_options *o, const bp_allocator *alloc, bp_graph **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "gen: out is NULL");
    *out = NULL;
    if (!kind) return bp__err(err, BP_ERR_USAGE, "gen: no kind given");
    bp_gen_options defaults;
    if (!o) { bp_gen_options_init(&defaults); o = &defaults; }
    if (!alloc) alloc = &bp__libc_allocator;
    int ki = -1;
    for (int i = 0; gen_kinds[i]; i++) if (strcmp(kind, gen_kinds[i]) == 0) ki = i;
    if (ki < 0)
        return bp__err(err, BP_ERR_USAGE, "gen: unknown kind \"%s\" (kinds: chain diamond resnet50 unet transformer randwire)", kind);
    bp_status s;
    /* Ranges: each kind's knobs are bounded so that the tensor count stays
     * below 2^31 and every dimension stays meaningful. */
    if ((s = gen_check(err, kind, "batch", o->batch, 1, 1 << 20))) return s;
    if ((s = gen_check(err, kind, "seq", o->seq, 1, 1 << 20))) return s;
    if (o->layers < 0 || o->width < 0 || o->nodes < 0)
        return bp__err(err, BP_ERR_USAGE, "gen %s: layers, width and nodes must be >= 0 (0 = default)", kind);
    int64_t layers = o->layers, width = o->width, nodes = o->nodes;
    switch (ki) {
    case 0: s = gen_check(err, kind, "nodes", o->nodes, 1, 1 << 29); if (!s) s = gen_check(err, kind, "width", o->width, 1, 1 << 24); break;
    case 2: s = gen_check(err, kind, "layers", o->layers, 1, 10000); if (!s) s = gen_check(err, kind, "width", o->width, 1, 1 << 16); break;
    case 3: s = gen_check(err, kind, "layers", o->layers, 1, 8); if (!s) s = gen_check(err, kind, "width", o->width, 1, 1 << 14); break;
    case 4:
        s = gen_check(err, kind, "layers", o->layers, 1, 100000);
        if (!s && width && (width % 64 || width > 64 * 64))
            s = bp__err(err, BP_ERR_USAGE, "gen transformer: width %lld must be a multiple of 64 (the head size), at most 4096", (long long)width);
        break;
    case 5:
        s = gen_check(err, kind, "layers", o->layers, 1, 100000);
        if (!s) s = gen_check(err, kind, "width", o->width, 1, 1 << 16);
        if (!s) s = gen_check(err, kind, "nodes", o->nodes, 1, 1 << 28);
        if (!s && (double)(nodes ? nodes : 32) * (double)(layers ? layers : 3) * 10.0 > 2.0e9)
            s = bp__err(err, BP_ERR_LIMIT, "gen randwire: nodes x layers = %lld x %lld is too many tensors (about 10 per node, at most 2^31)",
                        (long long)(nodes ? nodes : 32), (long long)(layers ? layers : 3));
        break;
    default: break;
    }
    if (s) return s;

    gen c = {.err = err, .B = o->batch ? o->batch : 1, .rng = o->seed};
    bp__err_clear(err);
    char gname[64];
    snprintf(gname, sizeof gname, "%s%s", kind, o->training ? "-training" : "");
    c.g = bp_graph_new(gname, alloc);
    if (!c.g) return bp__err(err, BP_ERR_NOMEM, "gen %s: out of memory", kind);
    switch (ki) {
    case 0: gen_chain(&c, nodes ? nodes : 100, width ? width : 1024); break;
    case 1: gen_diamond(&c); break;
    case 2: gen_resnet50(&c, layers ? layers : 1, width ? width : 64); break;
    case 3: gen_unet(&c, layers ? (int)layers : 4, width ? width : 64); break;
    case 4: gen_transformer(&c, layers ? (int)layers : 12, width ? width : 768, o->seq ? o->seq : 1024,
                            o->symbolic_seq != 0, nodes > 0); break;
    case 5: gen_randwire(&c, alloc, layers ? (int)layers : 3, nodes ? nodes : 32, width ? width : 78); break;
    }
    s = c.st;
    if (!s) s = bp_graph_finalize(c.g, err);
    if (!s && o->training) s = bp_graph_append_backward(c.g, err);
    if (s) { bp_graph_free(c.g); return s; }
    *out = c.g;
    return BP_OK;
}
