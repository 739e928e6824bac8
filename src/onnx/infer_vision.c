/*
 * infer_vision.c — image-shaped ops whose output sizes come from attributes
 * or small shape inputs: CenterCropPad (the target shape on its axes),
 * Col2Im (image_shape and block_shape inputs), AffineGrid (the size input),
 * RoiAlign and MaxRoiPool (one output per region of interest), MaxUnpool
 * (the inverse of a pool's size formula, or output_shape), ImageDecoder
 * (height and width depend on the image: fresh symbols).  A shape input
 * without values gives fresh symbols, with the rank its own shape shows.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

#define MR BP__OX_MAX_RANK

/* Output `out` of rank r with every dim fresh (r from a shape input's length). */
static bp_status all_fresh(bp__ox_op *x, int out, bp_dtype dt, int r)
{
    int64_t d[MR] = {0};
    for (int i = 0; i < r; i++) BP__OX_FRESH(d[i], out, i);
    return bp__ox_set_out(x, out, dt, r, d);
}

/* The static length of 1-D input t (-1 when not known or over the rank limit). */
static int len_1d(const bp__ox_op *x, int32_t t)
{
    if (bp__ox_rank(x, t) != 1) return -1;
    int64_t n = bp__ox_shape(x, t)[0];
    return n >= 0 && n <= MR ? (int)n : -1;
}

/* A shape input's values as dims (symbols kept) in d[0..*n); false when not
 * known.  A negative number becomes INT64_MIN, which bp__ox_set_out rejects
 * naming the tensor. */
static bool dims_of(const bp__ox_op *x, int32_t t, int64_t *d, int *n)
{
    const bp__ox_val *v = bp__ox_vals(x, t);
    if (!v || v->is_float || v->n > MR) return false;
    for (uint32_t i = 0; i < v->n; i++) {
        d[i] = bp__ox_val_dim(v, i);
        if (!bp__ox_val_has_sym(v, i) && d[i] < 0) d[i] = INT64_MIN;
    }
    *n = (int)v->n;
    return true;
}

bp_status bp__ox_inf_center_crop_pad(bp__ox_op *x)
{
    bp__ox_arg in;
    if (bp__ox_in0_rank(x, 0, "", &in)) return in.s;
    int r = in.r;
    int64_t axes[MR], d[MR] = {0}, tv[MR];
    size_t na = 0;
    const int64_t *av;
    if (bp__ox_attr_ints(x, "axes", &av, &na) && na) {
        if (na > (size_t)r) return bp__ox_bad(x, "axes has %zu entries for rank %d", na, r);
        memcpy(axes, av, na * sizeof *av);
    } else {
        na = (size_t)r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    memcpy(d, in.d, (size_t)r * sizeof *d);
    int nv = 0;
    bool known = dims_of(x, bp__ox_in(x, 1), tv, &nv);
    if (known && (size_t)nv != na) return bp__ox_bad(x, "shape has %d entries for %zu axes", nv, na);
    for (size_t i = 0; i < na; i++) {
        int64_t q = bp__ox_norm_axis(axes[i], r);
        if (q < 0 || q >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)axes[i], r);
        if (!known) { BP__OX_FRESH(d[q], 0, (int)q); continue; }
        if (tv[i] == INT64_MIN) return bp__ox_bad(x, "shape entry %zu is negative", i);
        d[q] = tv[i];
    }
    return bp__ox_set_out(x, 0, in.dt, r, d);
}

bp_status bp__ox_inf_col2im(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), img = bp__ox_in(x, 1), blk = bp__ox_in(x, 2);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r >= 0 && r != 3) return bp__ox_bad(x, "input has rank %d (needs 3: N, C*prod(block_shape), L)", r);
    int64_t im[MR], bs[MR], d[MR] = {0};
    int ni = 0, nb = 0;
    if (!dims_of(x, img, im, &ni)) {
        int k = len_1d(x, img);
        return k >= 0 && k + 2 <= MR ? all_fresh(x, 0, dt, k + 2) : bp__ox_set_unknown(x, 0, dt);
    }
    if (ni + 2 > MR) return bp__ox_bad(x, "image_shape has %d entries, over the rank limit", ni);
    for (int i = 0; i < ni; i++) d[i + 2] = im[i];
    bool have_blk = dims_of(x, blk, bs, &nb);
    if (have_blk && nb != ni) return bp__ox_bad(x, "block_shape has %d entries and image_shape %d", nb, ni);
    if (r < 0) { BP__OX_FRESH(d[0], 0, 0); BP__OX_FRESH(d[1], 0, 1); return bp__ox_set_out(x, 0, dt, ni + 2, d); }
    const int64_t *s = bp__ox_shape(x, a);
    d[0] = s[0];
    int64_t prod = 1;
    for (int i = 0; i < nb && have_blk; i++) {
        if (bs[i] == 0 || bs[i] == INT64_MIN) return bp__ox_bad(x, "block_shape entry %d is not positive", i);
        if (bs[i] < 0 || __builtin_mul_overflow(prod, bs[i], &prod)) have_blk = false;   /* a symbol */
    }
    if (have_blk && s[1] >= 0) {
        if (s[1] % prod) return bp__ox_bad(x, "input channels %lld are not a multiple of the block size %lld", (long long)s[1], (long long)prod);
        d[1] = s[1] / prod;
    } else if (have_blk && prod == 1) d[1] = s[1];
    else BP__OX_FRESH(d[1], 0, 1);
    return bp__ox_set_out(x, 0, dt, ni + 2, d);
}

bp_status bp__ox_inf_affine_grid(bp__ox_op *x)
{
    int32_t th = bp__ox_in(x, 0), sz = bp__ox_in(x, 1);
    bp_dtype dt = bp__ox_dt(x, th);
    int64_t v[MR], d[MR] = {0};
    int n = 0;
    if (!dims_of(x, sz, v, &n)) {
        int k = len_1d(x, sz);
        if (k != 4 && k != 5) return k < 0 ? bp__ox_set_unknown(x, 0, dt) : bp__ox_bad(x, "size has %d entries (4 or 5)", k);
        return all_fresh(x, 0, dt, k);
    }
    if (n != 4 && n != 5) return bp__ox_bad(x, "size has %d entries (N, C, H, W or N, C, D, H, W)", n);
    for (int i = 0; i < n; i++)
        if (v[i] == INT64_MIN) return bp__ox_bad(x, "size entry %d is negative", i);
    int rt = bp__ox_rank(x, th);
    if (rt >= 0 && rt != 3) return bp__ox_bad(x, "theta has rank %d (needs 3)", rt);
    d[0] = v[0];
    for (int i = 2; i < n; i++) d[i - 1] = v[i];
    d[n - 1] = n - 2;
    return bp__ox_set_out(x, 0, dt, n, d);
}

/* RoiAlign, MaxRoiPool: [regions, C, height, width]. */
bp_status bp__ox_inf_roi(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), rois = bp__ox_in(x, 1);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r >= 0 && r != 4) return bp__ox_bad(x, "input has rank %d (needs 4)", r);
    int64_t d[4], ph, pw;
    if (!strcmp(x->op, "MaxRoiPool")) {
        const int64_t *v;
        size_t n;
        if (!bp__ox_attr_ints(x, "pooled_shape", &v, &n) || n != 2) return bp__ox_bad(x, "pooled_shape is missing or not 2 entries");
        ph = v[0];
        pw = v[1];
    } else {
        ph = bp__ox_attr_i(x, "output_height", 1);
        pw = bp__ox_attr_i(x, "output_width", 1);
    }
    if (ph <= 0 || pw <= 0) return bp__ox_bad(x, "the output height and width must be positive (%lld, %lld)", (long long)ph, (long long)pw);
    int rr = bp__ox_rank(x, rois);
    if (rr >= 0 && rr != 2) return bp__ox_bad(x, "rois has rank %d (needs 2)", rr);
    if (rr == 2) d[0] = bp__ox_shape(x, rois)[0];
    else if (bp__ox_rank(x, bp__ox_in(x, 2)) == 1) d[0] = bp__ox_shape(x, bp__ox_in(x, 2))[0];
    else BP__OX_FRESH(d[0], 0, 0);
    if (r == 4) d[1] = bp__ox_shape(x, a)[1];
    else BP__OX_FRESH(d[1], 0, 1);
    d[2] = ph;
    d[3] = pw;
    return bp__ox_set_out(x, 0, dt, 4, d);
}

bp_status bp__ox_inf_max_unpool(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), os = bp__ox_in(x, 2);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    int64_t d[MR] = {0}, v[MR];
    int n = 0;
    if (os >= 0) {
        if (dims_of(x, os, v, &n)) {
            if (r >= 0 && n != r) return bp__ox_bad(x, "output_shape has %d entries for rank %d", n, r);
            for (int i = 0; i < n; i++)
                if (v[i] == INT64_MIN) return bp__ox_bad(x, "output_shape entry %d is negative", i);
            return bp__ox_set_out(x, 0, dt, n, v);
        }
        return r >= 0 ? all_fresh(x, 0, dt, r) : bp__ox_set_unknown(x, 0, dt);
    }
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    if (r < 3) return bp__ox_bad(x, "input has rank %d (needs at least 3)", r);
    int nsp = r - 2;
    const int64_t *k, *st, *pd;
    size_t nk, ns = 0, np = 0;
    if (!bp__ox_attr_ints(x, "kernel_shape", &k, &nk) || (int)nk != nsp) return bp__ox_bad(x, "kernel_shape is missing or has the wrong length");
    bool have_st = bp__ox_attr_ints(x, "strides", &st, &ns) && (int)ns == nsp;
    bool have_pd = bp__ox_attr_ints(x, "pads", &pd, &np) && (int)np == 2 * nsp;
    const int64_t *s = bp__ox_shape(x, a);
    d[0] = s[0];
    d[1] = s[1];
    for (int i = 0; i < nsp; i++) {
        int64_t stride = have_st ? st[i] : 1, pb = have_pd ? pd[i] : 0, pe = have_pd ? pd[i + nsp] : 0, t;
        if (stride <= 0 || k[i] <= 0 || pb < 0 || pe < 0) return bp__ox_bad(x, "kernel_shape and strides must be positive, pads not negative");
        if (s[i + 2] < 0) { BP__OX_FRESH(d[i + 2], 0, i + 2); continue; }
        /* (in - 1) * stride + kernel - pads */
        if (__builtin_mul_overflow(s[i + 2] - 1, stride, &t) || __builtin_add_overflow(t, k[i], &t) ||
            __builtin_sub_overflow(t, pb, &t) || __builtin_sub_overflow(t, pe, &t))
            return bp__ox_bad(x, "the output size on axis %d overflows 64 bits", i + 2);
        if (t < 0) return bp__ox_bad(x, "negative output size on axis %d", i + 2);
        d[i + 2] = t;
    }
    return bp__ox_set_out(x, 0, dt, r, d);
}

bp_status bp__ox_inf_image_decoder(bp__ox_op *x)
{
    int64_t d[3];
    BP__OX_FRESH(d[0], 0, 0);
    BP__OX_FRESH(d[1], 0, 1);
    d[2] = bp__ox_attr_s_is(x, "pixel_format", "Grayscale") ? 1 : 3;
    return bp__ox_set_out(x, 0, BP_DT_U8, 3, d);
}

#endif /* BP_HAVE_ONNX */
