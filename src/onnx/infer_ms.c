/*
 * infer_ms.c — built-in shapes of the com.microsoft operators that ONNX
 * Runtime's graph optimiser and its transformers optimizer write (fused
 * convolutions and GEMMs, the GELU family, the fused normalizations,
 * attention, 4-bit MatMul, the QLinear* quantized ops), and of the ops it
 * registers in the default domain (SimplifiedLayerNormalization), which
 * apply only when the model imports com.microsoft.  Shape rules follow the
 * operators' documented inputs and outputs (onnxruntime's
 * docs/ContribOperators.md); where a size depends on a symbol or an unknown
 * value the dimension gets a fresh symbol, and a symbol that is the answer
 * passes through.  Channels-last (NHWC) convolutions and pools compute each
 * spatial axis with the ONNX Conv rule; the rest reuse the default-domain
 * rules (infer_nn.c) where the op is one of them with extra inputs.
 */
#include "onnx/custom.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

#define MR BP__OX_MAX_RANK

/* ------------------------------------------------------- dim arithmetic */

/* a + b, a * b or a / b (exact) of two dims: a number when both are known
 * (an error on overflow or an inexact division), else a fresh symbol for
 * dimension `axis` of output `out`. */
static bp_status ms_dim(bp__ox_op *x, char op, int64_t a, int64_t b, int out, int axis, int64_t *res)
{
    if (a < 0 || b < 0) { BP__OX_FRESH(*res, out, axis); return BP_OK; }
    bool ovf = false;
    if (op == '+') ovf = __builtin_add_overflow(a, b, res);
    else if (op == '*') ovf = __builtin_mul_overflow(a, b, res);
    else {
        if (b == 0 || a % b)
            return bp__ox_bad(x, "output %d, dimension %d: %lld is not a multiple of %lld", out, axis, (long long)a, (long long)b);
        *res = a / b;
    }
    if (ovf) return bp__ox_bad(x, "output %d, dimension %d overflows 64 bits", out, axis);
    return BP_OK;
}

/* Integer attribute `name`, which must be positive. */
static bp_status ms_pos_attr(bp__ox_op *x, const char *name, int64_t *v)
{
    *v = bp__ox_attr_i(x, name, 0);
    if (*v <= 0 || *v > ((int64_t)1 << 31)) return bp__ox_bad(x, "attribute %s is missing or not in 1..2^31", name);
    return BP_OK;
}

/* Every output of type dt and unknown rank (an input's rank is unknown). */
static bp_status ms_all_unknown(bp__ox_op *x, bp_dtype dt)
{
    for (int i = 0; i < x->nd->n_out; i++) {
        bp_status s = bp__ox_set_unknown(x, i, dt);
        if (s) return s;
    }
    return BP_OK;
}

/* ------------------------------------------------ element-wise and norms */

/* Outputs 0..n_same-1 take input 0's type and shape. */
static bp_status ms_same_n(bp__ox_op *x, int n_same)
{
    for (int i = 0; i < n_same; i++) {
        bp_status s = bp__ox_copy_shape(x, i, bp__ox_in(x, 0), BP_DT_UNKNOWN, false);
        if (s) return s;
    }
    return BP_OK;
}

/* Gelu, FastGelu, QuickGelu, BiasGelu, BiasAdd, BiasSoftmax, RotaryEmbedding, GroupNorm, QLinearSigmoid, ... */
static bp_status ms_same(bp__ox_op *x) { return ms_same_n(x, 1); }

/* SkipGroupNorm: Y and the optional sum S. */
static bp_status ms_same2(bp__ox_op *x) { return ms_same_n(x, 2); }

/* BiasDropout: output like the data, mask a bool tensor of its shape. */
static bp_status ms_bias_dropout(bp__ox_op *x)
{
    bp_status s = ms_same_n(x, 1);
    return s ? s : bp__ox_copy_shape(x, 1, bp__ox_in(x, 0), BP_DT_BOOL, false);
}

/* Normalization statistics: outputs first..last get input 0's dims before
 * `axis` and 1 from there (type dt). */
static bp_status ms_norm_stats(bp__ox_op *x, int first, int last, int64_t axis, bp_dtype dt)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    int64_t d[MR];
    int64_t ax = r >= 0 ? bp__ox_norm_axis(axis, r) : 0;
    if (r >= 0 && (ax < 0 || ax > r)) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)axis, r);
    for (int i = 0; i < r; i++) d[i] = i < ax ? bp__ox_shape(x, a)[i] : 1;
    for (int o = first; o <= last; o++) {
        bp_status s = bp__ox_set_out(x, o, dt, r, r >= 0 ? d : NULL);
        if (s) return s;
    }
    return BP_OK;
}

/* The stash_type attribute's element type (float by default). */
static bp_dtype ms_stash(const bp__ox_op *x)
{
    bp_dtype dt = bp__ox_dtype((int32_t)bp__ox_attr_i(x, "stash_type", 1));
    return dt == BP_DT_UNKNOWN ? BP_DT_F32 : dt;
}

/* SimplifiedLayerNormalization: Y, inv_std_var. */
static bp_status ms_simplified_ln(bp__ox_op *x)
{
    bp_status s = ms_same_n(x, 1);
    return s ? s : ms_norm_stats(x, 1, 1, bp__ox_attr_i(x, "axis", -1), ms_stash(x));
}

/* Skip(Simplified)LayerNormalization: output, mean, inv_std_var (float,
 * [..., 1]), input_skip_bias_sum (the input's shape). */
static bp_status ms_skip_ln(bp__ox_op *x)
{
    bp_status s = ms_same_n(x, 1);
    if (!s) s = ms_norm_stats(x, 1, 2, -1, BP_DT_F32);
    if (!s) s = bp__ox_copy_shape(x, 3, bp__ox_in(x, 0), BP_DT_UNKNOWN, false);
    x->nd->cost = bp__ox_t_numel(x, bp__ox_in(x, 0)) > 0 ? 6.0 * (double)bp__ox_t_numel(x, bp__ox_in(x, 0)) : 0;
    return s;
}

/* EmbedLayerNormalization: input_ids (B, S) and word_embedding (V, H) give
 * output (B, S, H), mask_index (B) int32, embedding_sum (B, S, H). */
static bp_status ms_embed_ln(bp__ox_op *x)
{
    int32_t ids = bp__ox_in(x, 0), we = bp__ox_in(x, 2);
    bp_dtype dt = bp__ox_dt(x, we) != BP_DT_UNKNOWN ? bp__ox_dt(x, we) : BP_DT_F32;
    int r = bp__ox_rank(x, ids);
    if (r < 0) { bp_status s = ms_all_unknown(x, dt); return s ? s : bp__ox_set_unknown(x, 1, BP_DT_I32); }
    if (r != 2) return bp__ox_bad(x, "input_ids has rank %d (needs 2)", r);
    int64_t d[3] = {bp__ox_shape(x, ids)[0], bp__ox_shape(x, ids)[1], 0};
    if (bp__ox_rank(x, we) == 2) d[2] = bp__ox_shape(x, we)[1];
    else BP__OX_FRESH(d[2], 0, 2);
    bp_status s = bp__ox_set_out(x, 0, dt, 3, d);
    if (!s) s = bp__ox_set_out(x, 1, BP_DT_I32, 1, d);
    if (!s) s = bp__ox_set_out(x, 2, dt, 3, d);
    return s;
}

/* BiasSplitGelu: (N, HxW, D) -> (N, HxW, D / 2). */
static bp_status ms_bias_split_gelu(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, bp__ox_dt(x, a));
    if (r != 3) return bp__ox_bad(x, "input has rank %d (needs 3)", r);
    int64_t d[3] = {bp__ox_shape(x, a)[0], bp__ox_shape(x, a)[1], 0};
    bp_status s = ms_dim(x, '/', bp__ox_shape(x, a)[2], 2, 0, 2, &d[2]);
    return s ? s : bp__ox_set_out(x, 0, bp__ox_dt(x, a), 3, d);
}

/* ------------------------------------------------------------- matrices */

/* The numpy matrix product of shapes (da, ra) and (db, rb) as output 0 of type dt. */
static bp_status ms_matmul_dims(bp__ox_op *x, const int64_t *da, int ra, const int64_t *db, int rb, bp_dtype dt)
{
    if (ra < 1 || rb < 1) return bp__ox_bad(x, "an operand is a scalar");
    int64_t a2[MR + 1], b2[MR + 1];
    int pa = ra == 1 ? 2 : ra, pb = rb == 1 ? 2 : rb;
    if (ra == 1) { a2[0] = 1; a2[1] = da[0]; } else memcpy(a2, da, (size_t)ra * sizeof *a2);
    if (rb == 1) { b2[0] = db[0]; b2[1] = 1; } else memcpy(b2, db, (size_t)rb * sizeof *b2);
    int64_t ka = a2[pa - 1], kb = b2[pb - 2];
    if (ka >= 0 && kb >= 0 && ka != kb) return bp__ox_bad(x, "inner dimensions differ (%lld and %lld)", (long long)ka, (long long)kb);
    int nb = (pa > pb ? pa : pb) - 2, ro = 0;
    int64_t d[MR + 2];
    for (int j = 0; j < nb; j++) {
        int ia = j - (nb - (pa - 2)), ib = j - (nb - (pb - 2));
        int64_t u = ia >= 0 ? a2[ia] : 1, v = ib >= 0 ? b2[ib] : 1;
        if (u >= 0 && v >= 0 && u != v && u != 1 && v != 1)
            return bp__ox_bad(x, "batch dimensions %lld and %lld cannot be broadcast", (long long)u, (long long)v);
        if (u == v || v == 1) d[ro] = u;
        else if (u == 1) d[ro] = v;
        else if (u >= 0 || v >= 0) d[ro] = u >= 0 ? u : v;
        else BP__OX_FRESH(d[ro], 0, ro);
        ro++;
    }
    if (ra > 1) d[ro++] = a2[pa - 2];
    if (rb > 1) d[ro++] = b2[pb - 1];
    if (ro > MR) return bp__ox_bad(x, "the output's rank is over %d", MR);
    int64_t n = bp__ox_numel(d, ro);
    if (n >= 0 && ka >= 0) x->nd->cost = 2.0 * (double)n * (double)ka;
    return bp__ox_set_out(x, 0, dt, ro, d);
}

/* Input t's shape with FusedMatMul's transBatch (dims 0 moved before the
 * last) and trans (the last two swapped) applied, into d. */
static void ms_fused_perm(const bp__ox_op *x, int32_t t, bool batch, bool trans, int64_t *d)
{
    int r = bp__ox_rank(x, t);
    const int64_t *s = bp__ox_shape(x, t);
    if (batch && r >= 3) {
        for (int i = 0; i < r - 2; i++) d[i] = s[i + 1];
        d[r - 2] = s[0];
        d[r - 1] = s[r - 1];
    } else if (r > 0) memcpy(d, s, (size_t)r * sizeof *d);
    if (trans && r >= 2) { int64_t t2 = d[r - 1]; d[r - 1] = d[r - 2]; d[r - 2] = t2; }
}

/* FusedMatMul / TransposeMatMul: MatMul after transA / transB / transBatchA / transBatchB. */
static bp_status ms_fused_matmul(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), b = bp__ox_in(x, 1);
    bp_dtype dt = bp__ox_dt(x, a);
    int ra = bp__ox_rank(x, a), rb = bp__ox_rank(x, b);
    if (ra < 0 || rb < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t da[MR], db[MR];
    ms_fused_perm(x, a, bp__ox_attr_i(x, "transBatchA", 0) != 0, bp__ox_attr_i(x, "transA", 0) != 0, da);
    ms_fused_perm(x, b, bp__ox_attr_i(x, "transBatchB", 0) != 0, bp__ox_attr_i(x, "transB", 0) != 0, db);
    return ms_matmul_dims(x, da, ra, db, rb, dt);
}

/* MatMul semantics of inputs 0 and 1 with output type dt (BP_DT_UNKNOWN: input 0's). */
static bp_status ms_matmul_as(bp__ox_op *x, bp_dtype dt)
{
    int32_t a = bp__ox_in(x, 0), b = bp__ox_in(x, 1);
    if (dt == BP_DT_UNKNOWN) dt = bp__ox_dt(x, a);
    if (bp__ox_rank(x, a) < 0 || bp__ox_rank(x, b) < 0) return bp__ox_set_unknown(x, 0, dt);
    return ms_matmul_dims(x, bp__ox_shape(x, a), bp__ox_rank(x, a), bp__ox_shape(x, b), bp__ox_rank(x, b), dt);
}

/* GemmFastGelu, DynamicQuantizeMatMul: MatMul, input 0's type. */
static bp_status ms_matmul(bp__ox_op *x) { return ms_matmul_as(x, BP_DT_UNKNOWN); }
/* MatMulInteger16: int32 result. */
static bp_status ms_matmul_i32(bp__ox_op *x) { return ms_matmul_as(x, BP_DT_I32); }
/* MatMulIntegerToFloat: the type of a_scale (input 2). */
static bp_status ms_matmul_to_float(bp__ox_op *x)
{
    bp_dtype dt = bp__ox_dt(x, bp__ox_in(x, 2));
    return ms_matmul_as(x, dt == BP_DT_UNKNOWN ? BP_DT_F32 : dt);
}

/* Gemm of 2-D inputs ia and ib with transA / transB as output 0 of type dt. */
static bp_status ms_gemm2d(bp__ox_op *x, int ia, int ib, bp_dtype dt)
{
    int32_t a = bp__ox_in(x, ia), b = bp__ox_in(x, ib);
    if (bp__ox_rank(x, a) < 0 || bp__ox_rank(x, b) < 0) return bp__ox_set_unknown(x, 0, dt);
    if (bp__ox_rank(x, a) != 2 || bp__ox_rank(x, b) != 2)
        return bp__ox_bad(x, "A and B have ranks %d and %d (need 2 and 2)", bp__ox_rank(x, a), bp__ox_rank(x, b));
    int ta = bp__ox_attr_i(x, "transA", 0) != 0, tb = bp__ox_attr_i(x, "transB", 0) != 0;
    const int64_t *sa = bp__ox_shape(x, a), *sb = bp__ox_shape(x, b);
    int64_t d[2] = {sa[ta], sb[1 - tb]}, ka = sa[1 - ta], kb = sb[tb];
    if (ka >= 0 && kb >= 0 && ka != kb) return bp__ox_bad(x, "inner dimensions differ (%lld and %lld)", (long long)ka, (long long)kb);
    if (d[0] >= 0 && d[1] >= 0 && ka >= 0) x->nd->cost = 2.0 * (double)d[0] * (double)d[1] * (double)ka;
    return bp__ox_set_out(x, 0, dt, 2, d);
}

/* FusedGemm: Gemm with an activation. */
static bp_status ms_fused_gemm(bp__ox_op *x) { return ms_gemm2d(x, 0, 1, bp__ox_dt(x, bp__ox_in(x, 0))); }

/* QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp; quantized when y_scale is given. */
static bp_status ms_qgemm(bp__ox_op *x)
{
    bp_dtype dt = bp__ox_in(x, 7) >= 0 ? bp__ox_dt(x, bp__ox_in(x, 8)) : BP_DT_F32;
    return ms_gemm2d(x, 0, 3, dt == BP_DT_UNKNOWN ? BP_DT_U8 : dt);
}

/* MatMulNBits, MatMulBnb4: A (..., K) times the packed (K, N) weight: (..., N) from attribute N. */
static bp_status ms_matmul_nbits(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    int64_t n;
    bp_status s = ms_pos_attr(x, "N", &n);
    if (s) return s;
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    if (r < 1) return bp__ox_bad(x, "A is a scalar");
    int64_t d[MR];
    memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
    int64_t k = d[r - 1], ka = bp__ox_attr_i(x, "K", -1);
    if (k >= 0 && ka >= 0 && k != ka) return bp__ox_bad(x, "A's last dimension is %lld, attribute K is %lld", (long long)k, (long long)ka);
    d[r - 1] = n;
    int64_t ne = bp__ox_numel(d, r);
    if (ne >= 0 && k >= 0) x->nd->cost = 2.0 * (double)ne * (double)k;
    return bp__ox_set_out(x, 0, dt, r, d);
}

/* ------------------------------------------------ channels-last conv/pool */

/* One spatial output size: input D, kernel k, attributes at axis i of nsp. */
static bp_status ms_axis(bp__ox_op *x, int64_t D, int64_t k, int i, int nsp, int out_axis, int64_t *res)
{
    const int64_t *v;
    size_t n;
    int64_t st = 1, dl = 1, pb = 0, pe = 0;
    if (bp__ox_attr_ints(x, "strides", &v, &n) && (int)n == nsp) st = v[i];
    if (bp__ox_attr_ints(x, "dilations", &v, &n) && (int)n == nsp) dl = v[i];
    if (bp__ox_attr_ints(x, "pads", &v, &n) && (int)n == 2 * nsp) { pb = v[i]; pe = v[i + nsp]; }
    if (st <= 0 || dl <= 0 || pb < 0 || pe < 0) return bp__ox_bad(x, "strides and dilations must be positive, pads not negative");
    if (D < 0 || k < 0) { BP__OX_FRESH(*res, 0, out_axis); return BP_OK; }
    bool same = bp__ox_attr_s_is(x, "auto_pad", "SAME_UPPER") || bp__ox_attr_s_is(x, "auto_pad", "SAME_LOWER");
    int64_t ek, t;
    if (__builtin_mul_overflow(k - 1, dl, &ek) || __builtin_add_overflow(ek, 1, &ek) || __builtin_add_overflow(D, pb, &t) ||
        __builtin_add_overflow(t, pe, &t) || __builtin_add_overflow(D, st - 1, res))
        return bp__ox_bad(x, "the output size on axis %d overflows 64 bits", out_axis);
    if (same) { *res /= st; return BP_OK; }
    if (bp__ox_attr_s_is(x, "auto_pad", "VALID")) t = D;
    if (t < ek) return bp__ox_bad(x, "the kernel (%lld) is larger than the padded input (%lld) on axis %d", (long long)ek, (long long)t, out_axis);
    t -= ek;
    if (bp__ox_attr_i(x, "ceil_mode", 0) && __builtin_add_overflow(t, st - 1, &t))
        return bp__ox_bad(x, "the output size on axis %d overflows 64 bits", out_axis);
    *res = t / st + 1;
    return BP_OK;
}

/* A channels-last (N, spatial..., C) conv (weight input w, (M, C/group, k...))
 * or pool (w < 0: kernel_shape, channels kept) as output 0 of type dt. */
static bp_status ms_nhwc(bp__ox_op *x, int w, bp_dtype dt)
{
    int32_t a = bp__ox_in(x, 0), wt = w >= 0 ? bp__ox_in(x, w) : -1;
    int r = bp__ox_rank(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    if (r < 3) return bp__ox_bad(x, "input has rank %d (needs at least 3)", r);
    int nsp = r - 2, wr = bp__ox_rank(x, wt);
    const int64_t *sa = bp__ox_shape(x, a), *v;
    size_t n;
    int64_t k[MR], d[MR];
    bool ks = bp__ox_attr_ints(x, "kernel_shape", &v, &n) && (int)n == nsp;
    for (int i = 0; i < nsp; i++) k[i] = ks ? v[i] : wr == r ? bp__ox_shape(x, wt)[i + 2] : -1;
    if (w < 0 && !ks) return bp__ox_bad(x, "kernel_shape is missing or has the wrong length");
    d[0] = sa[0];
    if (w < 0) d[r - 1] = sa[r - 1];
    else if (wr >= 1) d[r - 1] = bp__ox_shape(x, wt)[0];
    else BP__OX_FRESH(d[r - 1], 0, r - 1);
    for (int i = 0; i < nsp; i++) {
        bp_status s = ms_axis(x, sa[i + 1], k[i], i, nsp, i + 1, &d[i + 1]);
        if (s) return s;
    }
    int64_t on = bp__ox_numel(d, r), kv = bp__ox_numel(k, nsp), cin = sa[r - 1], g = bp__ox_attr_i(x, "group", 1);
    if (w >= 0 && on >= 0 && kv >= 0 && cin >= 0 && g > 0) x->nd->cost = 2.0 * (double)on * (double)(cin / g) * (double)kv;
    return bp__ox_set_out(x, 0, dt, r, d);
}

/* NhwcConv, NhwcFusedConv. */
static bp_status ms_nhwc_conv(bp__ox_op *x) { return ms_nhwc(x, 1, bp__ox_dt(x, bp__ox_in(x, 0))); }

/* FusedConv: Conv (its extra input Z and activation change no shape). */
static bp_status ms_fused_conv(bp__ox_op *x) { return bp__ox_inf_conv(x); }

/* QLinearConv with channels_last. */
static bp_status ms_qlinear_conv(bp__ox_op *x)
{
    if (!bp__ox_attr_i(x, "channels_last", 0)) return bp__ox_inf_conv(x);
    bp_dtype dt = bp__ox_dt(x, bp__ox_in(x, 7)) != BP_DT_UNKNOWN ? bp__ox_dt(x, bp__ox_in(x, 7)) : bp__ox_dt(x, bp__ox_in(x, 0));
    return ms_nhwc(x, 3, dt);
}

/* QLinearAveragePool: AveragePool, channels-first or last. */
static bp_status ms_qlinear_avgpool(bp__ox_op *x)
{
    if (!bp__ox_attr_i(x, "channels_last", 0)) return bp__ox_inf_pool(x);
    return ms_nhwc(x, -1, bp__ox_dt(x, bp__ox_in(x, 0)));
}

/* QLinearGlobalAveragePool: (N, C, 1...) or, channels last, (N, 1..., C). */
static bp_status ms_qlinear_global_pool(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    if (r < 3) return bp__ox_bad(x, "input has rank %d (needs at least 3)", r);
    bool last = bp__ox_attr_i(x, "channels_last", 0) != 0;
    int64_t d[MR];
    for (int i = 0; i < r; i++) d[i] = 1;
    d[0] = bp__ox_shape(x, a)[0];
    d[last ? r - 1 : 1] = bp__ox_shape(x, a)[last ? r - 1 : 1];
    return bp__ox_set_out(x, 0, dt, r, d);
}

/* --------------------------------------------------------- quantized ops */

/* QLinearAdd, QLinearMul: A (input 0) and B (input 3) broadcast; A's type. */
static bp_status ms_qlinear_binary(bp__ox_op *x)
{
    int32_t ids[2] = {bp__ox_in(x, 0), bp__ox_in(x, 3)};
    int64_t d[MR];
    int r;
    bp_status s = bp__ox_broadcast(x, ids, 2, &r, d);
    return s ? s : bp__ox_set_out(x, 0, bp__ox_dt(x, ids[0]), r, r >= 0 ? d : NULL);
}

/* QLinearConcat: Y_scale, Y_zero_point, then (X, scale, zero point) per input; attribute axis. */
static bp_status ms_qlinear_concat(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 2);
    bp_dtype dt = bp__ox_dt(x, a);
    int r = bp__ox_rank(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t ax = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", 0), r);
    if (ax < 0 || ax >= r) return bp__ox_bad(x, "axis is out of range for rank %d", r);
    int64_t d[MR];
    memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
    for (int i = 5; i < x->nd->n_in; i += 3) {
        int32_t t = bp__ox_in(x, i);
        if (bp__ox_rank(x, t) < 0) return bp__ox_set_unknown(x, 0, dt);
        if (bp__ox_rank(x, t) != r) return bp__ox_bad(x, "input %d has rank %d, input 2 has %d", i, bp__ox_rank(x, t), r);
        bp_status s = ms_dim(x, '+', d[ax], bp__ox_shape(x, t)[ax], 0, (int)ax, &d[ax]);
        if (s) return s;
    }
    return bp__ox_set_out(x, 0, dt, r, d);
}

/* QuantizeLinear, DequantizeLinear: as the default-domain ops. */
static bp_status ms_quant(bp__ox_op *x) { return bp__ox_inf_quant(x); }

/* LayerNormalization: as the default-domain op. */
static bp_status ms_layer_norm(bp__ox_op *x) { return bp__ox_inf_norm(x); }

/* ------------------------------------------------------------- attention */

/* Attention: input (B, S, Hin), weights (Hin, Hq + Hk + Hv), bias, mask, past
 * (2, B, N, P, h): output (B, S, Hv), present (2, B, N, P + S, h). */
static bp_status ms_attention(bp__ox_op *x)
{
    int32_t in = bp__ox_in(x, 0), w = bp__ox_in(x, 1), bias = bp__ox_in(x, 2), past = bp__ox_in(x, 4);
    bp_dtype dt = bp__ox_dt(x, in);
    int64_t nh, hq = -1, hv = -1, total = -1;
    bp_status s = ms_pos_attr(x, "num_heads", &nh);
    if (s) return s;
    if (bp__ox_rank(x, in) < 0) return ms_all_unknown(x, dt);
    if (bp__ox_rank(x, in) != 3) return bp__ox_bad(x, "input has rank %d (needs 3)", bp__ox_rank(x, in));
    int64_t si[3];                     /* copied: setting an output may move the dims */
    memcpy(si, bp__ox_shape(x, in), sizeof si);
    const int64_t *q;
    size_t nq;
    if (bp__ox_attr_ints(x, "qkv_hidden_sizes", &q, &nq) && nq) {
        if (nq != 3 || q[0] < 0 || q[2] < 0) return bp__ox_bad(x, "qkv_hidden_sizes must have 3 sizes");
        hq = q[0];
        hv = q[2];
    } else {
        if (bp__ox_rank(x, bias) == 1) total = bp__ox_shape(x, bias)[0];
        else if (bp__ox_rank(x, w) == 2) total = bp__ox_shape(x, w)[1];
        if (total >= 0 && total % 3) return bp__ox_bad(x, "the merged Q/K/V width %lld is not a multiple of 3", (long long)total);
        hq = hv = total >= 0 ? total / 3 : -1;
    }
    int64_t d[5] = {si[0], si[1], hv};
    if (hv < 0) BP__OX_FRESH(d[2], 0, 2);
    if ((s = bp__ox_set_out(x, 0, dt, 3, d)) || bp__ox_out(x, 1) < 0) return s;
    if (bp__ox_rank(x, past) == 5) {
        if (bp__ox_attr_i(x, "past_present_share_buffer", 0)) return bp__ox_copy_shape(x, 1, past, dt, false);
        memcpy(d, bp__ox_shape(x, past), sizeof d);
        if ((s = ms_dim(x, '+', d[3], si[1], 1, 3, &d[3]))) return s;
        return bp__ox_set_out(x, 1, dt, 5, d);
    }
    int64_t p[5] = {2, si[0], nh, si[1], -1};
    if ((s = ms_dim(x, '/', hq, nh, 1, 4, &p[4]))) return s;
    return bp__ox_set_out(x, 1, dt, 5, p);
}

/* MultiHeadAttention's shapes, as read from its inputs. */
typedef struct ms_mha {
    int64_t b, s, l, dv, hk, hv;   /* batch, query length, kv length, output width, head sizes */
} ms_mha_shapes;

/* Reads the shapes of MultiHeadAttention's query, key and value (separate,
 * BNSH key/value, packed KV or packed QKV); false when a rank is unknown. */
static bool ms_mha_read(bp__ox_op *x, int64_t nh, ms_mha_shapes *m, bp_status *st)
{
    int32_t q = bp__ox_in(x, 0), k = bp__ox_in(x, 1), v = bp__ox_in(x, 2);
    int rq = bp__ox_rank(x, q), rk = bp__ox_rank(x, k), rv = bp__ox_rank(x, v);
    const int64_t *sq = rq >= 0 ? bp__ox_shape(x, q) : NULL, *sk = rk >= 0 ? bp__ox_shape(x, k) : NULL;
    const int64_t *sv = rv >= 0 ? bp__ox_shape(x, v) : NULL;
    *st = BP_OK;
    if (rq != 3 && rq != 5) { if (rq >= 0) *st = bp__ox_bad(x, "query has rank %d (needs 3 or 5)", rq); return false; }
    m->b = sq[0];
    m->s = sq[1];
    if (rq == 5) {                          /* packed QKV (B, S, N, 3, H) */
        m->l = sq[1];
        m->hk = m->hv = sq[4];
        return !(*st = ms_dim(x, '*', sq[2], sq[4], 0, 2, &m->dv));
    }
    if (v >= 0 && rv == 3) {                /* (B, L, Dv) */
        m->l = sv[1];
        m->dv = sv[2];
        if (!(*st = ms_dim(x, '/', sq[2], nh, 1, 3, &m->hk))) *st = ms_dim(x, '/', sv[2], nh, 2, 3, &m->hv);
        return !*st;
    }
    if (v >= 0 && rv == 4) {                /* BNSH key and value (B, N, L, H) */
        m->l = sv[2];
        m->hv = sv[3];
        m->hk = rk == 4 ? sk[3] : sv[3];
        return !(*st = ms_dim(x, '*', sv[1], sv[3], 0, 2, &m->dv));
    }
    if (v < 0 && rk == 5) {                 /* packed KV (B, L, N, 2, H) */
        m->l = sk[1];
        m->hk = m->hv = sk[4];
        return !(*st = ms_dim(x, '*', sk[2], sk[4], 0, 2, &m->dv));
    }
    if (rv >= 0 || rk >= 0) *st = bp__ox_bad(x, "key and value have ranks %d and %d (3 and 3, 4 and 4, or a packed 5-D key)", rk, rv);
    return false;
}

/* MultiHeadAttention: output (B, S, Dv), present_key / present_value
 * (B, N, P + L, H) (the past's shapes when past_sequence_length is given:
 * shared buffers), qk (B, N, S, P + L). */
static bp_status ms_mha(bp__ox_op *x)
{
    int32_t pk = bp__ox_in(x, 6), pv = bp__ox_in(x, 7);
    bp_dtype dt = bp__ox_dt(x, bp__ox_in(x, 0));
    int64_t nh;
    ms_mha_shapes m;
    bp_status s = ms_pos_attr(x, "num_heads", &nh);
    if (s) return s;
    if (!ms_mha_read(x, nh, &m, &s)) return s ? s : ms_all_unknown(x, dt);
    int64_t d[4] = {m.b, m.s, m.dv, 0}, t = m.l;
    if ((s = bp__ox_set_out(x, 0, dt, 3, d))) return s;
    if (bp__ox_rank(x, pk) == 4 && bp__ox_in(x, 8) >= 0) {
        s = bp__ox_copy_shape(x, 1, pk, dt, false);
        if (!s) s = bp__ox_copy_shape(x, 2, pv, dt, false);
        t = bp__ox_shape(x, pk)[2];
    } else {
        if (bp__ox_rank(x, pk) == 4 && (s = ms_dim(x, '+', bp__ox_shape(x, pk)[2], m.l, 1, 2, &t))) return s;
        int64_t k4[4] = {m.b, nh, t, m.hk}, v4[4] = {m.b, nh, t, m.hv};
        s = bp__ox_set_out(x, 1, dt, 4, k4);
        if (!s) s = bp__ox_set_out(x, 2, dt, 4, v4);
    }
    int64_t qk[4] = {m.b, nh, m.s, t};
    return s ? s : bp__ox_set_out(x, 3, dt, 4, qk);
}

/* GroupQueryAttention: query (B, S, N*H) with key and value (B, L, Nkv*H),
 * or packed (B, S, (N + 2 Nkv) H); past_key (B, Nkv, P, H); the value of
 * total_sequence_length T (input 6).  Output (B, S, N*H); present
 * (B, Nkv, max(P, T), H) (P when T is not known; a fresh symbol when P is 0),
 * without a past (B, Nkv, T or S, H); output_qk (B, N, S, T). */
static bp_status ms_gqa(bp__ox_op *x)
{
    int32_t q = bp__ox_in(x, 0), v = bp__ox_in(x, 2), pk = bp__ox_in(x, 3);
    bp_dtype dt = bp__ox_dt(x, q), pdt = pk >= 0 && bp__ox_dt(x, pk) != BP_DT_UNKNOWN ? bp__ox_dt(x, pk) : dt;
    int64_t nh, kvh, tsl = -1, tv[1];
    size_t nt;
    bp_status s = ms_pos_attr(x, "num_heads", &nh);
    if (!s) s = ms_pos_attr(x, "kv_num_heads", &kvh);
    if (s) return s;
    if (bp__ox_in(x, 6) >= 0 && bp__ox_ints_of(x, bp__ox_in(x, 6), tv, 1, &nt) && nt == 1 && tv[0] >= 0) tsl = tv[0];
    if (bp__ox_rank(x, q) < 0) return ms_all_unknown(x, dt);
    if (bp__ox_rank(x, q) != 3) return bp__ox_bad(x, "query has rank %d (needs 3)", bp__ox_rank(x, q));
    int64_t sq[3];                     /* copied: setting an output may move the dims */
    memcpy(sq, bp__ox_shape(x, q), sizeof sq);
    int64_t head, d[4] = {sq[0], sq[1], 0, 0};
    bool packed = v < 0;
    if ((s = ms_dim(x, '/', sq[2], packed ? nh + 2 * kvh : nh, 0, 2, &head))) return s;
    if ((s = ms_dim(x, '*', head, nh, 0, 2, &d[2])) || (s = bp__ox_set_out(x, 0, dt, 3, d))) return s;
    int64_t p[4] = {sq[0], kvh, tsl >= 0 ? tsl : sq[1], head};
    if (bp__ox_rank(x, pk) == 4) {
        int64_t sp[4];
        memcpy(sp, bp__ox_shape(x, pk), sizeof sp);
        memcpy(p, sp, sizeof p);
        if (bp__ox_attr_i(x, "sliding_window_cache", 0) == 1) p[2] = sp[2];
        else if (tsl >= 0 && sp[2] >= 0) p[2] = tsl > sp[2] ? tsl : sp[2];
        else if (sp[2] == 0) BP__OX_FRESH(p[2], 1, 2);
    }
    s = bp__ox_set_out(x, 1, pdt, 4, p);
    if (!s) s = bp__ox_set_out(x, 2, pdt, 4, p);
    int64_t qk[4] = {sq[0], nh, sq[1], tsl};
    if (!s && bp__ox_out(x, 3) >= 0) {
        if (tsl < 0) BP__OX_FRESH(qk[3], 3, 3);
        s = bp__ox_set_out(x, 3, dt, 4, qk);
    }
    return s;
}

/* ----------------------------------------------------------------- dispatch */

typedef bp_status (*ms_fn)(bp__ox_op *x);

/* com.microsoft op type -> rule. */
static const struct { const char *op; ms_fn fn; } ms_table[] = {
    {"Gelu", ms_same}, {"FastGelu", ms_same}, {"QuickGelu", ms_same}, {"BiasGelu", ms_same}, {"BiasAdd", ms_same},
    {"BiasSoftmax", ms_same}, {"RotaryEmbedding", ms_same}, {"GroupNorm", ms_same}, {"QLinearSigmoid", ms_same},
    {"QLinearLeakyRelu", ms_same}, {"QLinearSoftmax", ms_same}, {"Trilu", ms_same}, {"Inverse", ms_same},
    {"SkipGroupNorm", ms_same2}, {"BiasDropout", ms_bias_dropout}, {"BiasSplitGelu", ms_bias_split_gelu},
    {"SkipLayerNormalization", ms_skip_ln}, {"SkipSimplifiedLayerNormalization", ms_skip_ln},
    {"SimplifiedLayerNormalization", ms_simplified_ln}, {"LayerNormalization", ms_layer_norm},
    {"EmbedLayerNormalization", ms_embed_ln},
    {"FusedConv", ms_fused_conv}, {"NhwcConv", ms_nhwc_conv}, {"NhwcFusedConv", ms_nhwc_conv},
    {"FusedGemm", ms_fused_gemm}, {"QGemm", ms_qgemm}, {"FusedMatMul", ms_fused_matmul},
    {"TransposeMatMul", ms_fused_matmul}, {"GemmFastGelu", ms_matmul}, {"DynamicQuantizeMatMul", ms_matmul},
    {"MatMulInteger16", ms_matmul_i32}, {"MatMulIntegerToFloat", ms_matmul_to_float},
    {"MatMulNBits", ms_matmul_nbits}, {"MatMulBnb4", ms_matmul_nbits},
    {"QLinearAdd", ms_qlinear_binary}, {"QLinearMul", ms_qlinear_binary}, {"QLinearConcat", ms_qlinear_concat},
    {"QLinearConv", ms_qlinear_conv}, {"QLinearAveragePool", ms_qlinear_avgpool},
    {"QLinearGlobalAveragePool", ms_qlinear_global_pool},
    {"QuantizeLinear", ms_quant}, {"DequantizeLinear", ms_quant},
    {"Attention", ms_attention}, {"MultiHeadAttention", ms_mha}, {"GroupQueryAttention", ms_gqa},
};

static ms_fn ms_find(const char *op)
{
    for (size_t i = 0; i < sizeof ms_table / sizeof ms_table[0]; i++)
        if (!strcmp(ms_table[i].op, op)) return ms_table[i].fn;
    return NULL;
}

bool bp__ox_ms_knows(const bp__ox_op *x)
{
    if (!x->c->ms_domain) return false;
    if (x->nd->domain_default) return !strcmp(x->op, "SimplifiedLayerNormalization");
    return x->np->domain && !strcmp(x->np->domain, "com.microsoft") && ms_find(x->op);
}

bp_status bp__ox_ms_infer(bp__ox_op *x)
{
    ms_fn fn = ms_find(x->op);
    return fn ? fn(x) : BP_ERR_UNSUPPORTED;
}

#endif /* BP_HAVE_ONNX */
