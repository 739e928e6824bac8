/*
 * infer_nn.c — neural-network ops: Conv / ConvTranspose and the pools
 * (spatial output sizes from kernel, strides, pads, dilations, auto_pad and
 * ceil_mode; a fresh symbol over a symbolic size), Gemm / MatMul (broadcast
 * batch dims), Einsum, the normalizations, Resize, Pad, DepthToSpace /
 * SpaceToDepth, the RNNs, quantization and GridSample.  Cost: 2*M*N*K for
 * MatMul/Gemm, 2*out*Cin/group*kernel for Conv.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <math.h>
#include <string.h>

#define MR BP__OX_MAX_RANK

static bp_status spatial(bp__ox_op *x, int32_t a, int nsp, const int64_t *k, bool transpose, int64_t *out_sp, int which_out)
{
    const int64_t *v;
    size_t n;
    int64_t strides[MR], dil[MR], pads[2 * MR], opad[MR];
    for (int i = 0; i < nsp; i++) { strides[i] = 1; dil[i] = 1; pads[i] = pads[i + nsp] = 0; opad[i] = 0; }
    if (bp__ox_attr_ints(x, "strides", &v, &n) && (int)n == nsp) memcpy(strides, v, n * sizeof *v);
    if (bp__ox_attr_ints(x, "dilations", &v, &n) && (int)n == nsp) memcpy(dil, v, n * sizeof *v);
    if (bp__ox_attr_ints(x, "pads", &v, &n) && (int)n == 2 * nsp) memcpy(pads, v, n * sizeof *v);
    if (bp__ox_attr_ints(x, "output_padding", &v, &n) && (int)n == nsp) memcpy(opad, v, n * sizeof *v);
    bool same = bp__ox_attr_s_is(x, "auto_pad", "SAME_UPPER") || bp__ox_attr_s_is(x, "auto_pad", "SAME_LOWER");
    bool valid = bp__ox_attr_s_is(x, "auto_pad", "VALID");
    bool ceil_mode = bp__ox_attr_i(x, "ceil_mode", 0) != 0;
    const int64_t *in = bp__ox_shape(x, a) + 2;
    if (transpose && bp__ox_attr_ints(x, "output_shape", &v, &n) && n >= (size_t)nsp) {
        for (int i = 0; i < nsp; i++) out_sp[i] = v[n - (size_t)nsp + (size_t)i];
        return BP_OK;
    }
    for (int i = 0; i < nsp; i++) {
        if (strides[i] <= 0 || dil[i] <= 0) return bp__ox_bad(x, "strides and dilations must be positive");
        if (pads[i] < 0 || pads[i + nsp] < 0 || opad[i] < 0) return bp__ox_bad(x, "pads and output_padding must not be negative");
        int64_t D = in[i];
        if (D < 0 || k[i] < 0) { BP__OX_FRESH(out_sp[i], which_out, i + 2); continue; }
        /* every step checked: the attributes come from the model */
        int64_t ek, t, eff;
        bool ovf = __builtin_mul_overflow(k[i] - 1, dil[i], &ek) || __builtin_add_overflow(ek, 1, &ek);
        if (transpose) {
            if (same) ovf = ovf || __builtin_mul_overflow(D, strides[i], &out_sp[i]);
            else ovf = ovf || __builtin_mul_overflow(strides[i], D - 1, &t) || __builtin_add_overflow(t, opad[i], &t) ||
                       __builtin_add_overflow(t, ek, &t) || __builtin_sub_overflow(t, pads[i], &t) ||
                       __builtin_sub_overflow(t, pads[i + nsp], &out_sp[i]);
        } else if (same) {
            ovf = ovf || __builtin_add_overflow(D, strides[i] - 1, &t);
            if (!ovf) out_sp[i] = t / strides[i];
        } else if (valid) {
            ovf = ovf || __builtin_sub_overflow(D, ek, &t);
            if (!ovf) out_sp[i] = t + 1 > 0 ? t / strides[i] + 1 : 0;
        } else {
            ovf = ovf || __builtin_add_overflow(D, pads[i], &t) || __builtin_add_overflow(t, pads[i + nsp], &t) ||
                  __builtin_sub_overflow(t, ek, &eff);
            if (!ovf && eff < 0)
                return bp__ox_bad(x, "the kernel (%lld) is larger than the padded input (%lld) on axis %d", (long long)ek,
                                  (long long)t, i + 2);
            if (!ovf && ceil_mode) ovf = __builtin_add_overflow(eff, strides[i] - 1, &eff);
            if (!ovf) out_sp[i] = eff / strides[i] + 1;
        }
        if (ovf) return bp__ox_bad(x, "the output size on axis %d overflows 64 bits (pads, strides, dilations or kernel)", i + 2);
        if (out_sp[i] < 0) return bp__ox_bad(x, "negative output size on axis %d", i + 2);
    }
    return BP_OK;
}

bp_status bp__ox_inf_conv(bp__ox_op *x)
{
    bool q = !strcmp(x->op, "QLinearConv");
    int32_t a = bp__ox_in(x, 0), wt = bp__ox_in(x, q ? 3 : 1);
    bool tr = !strcmp(x->op, "ConvTranspose");
    bp_dtype dt = bp__ox_dt(x, a);
    if (!strcmp(x->op, "ConvInteger")) dt = BP_DT_I32;
    if (q) dt = bp__ox_dt(x, bp__ox_in(x, 7)) != BP_DT_UNKNOWN ? bp__ox_dt(x, bp__ox_in(x, 7)) : bp__ox_dt(x, a);
    int r = bp__ox_rank(x, a);
    if (r < 3) return r < 0 ? bp__ox_set_unknown(x, 0, dt) : bp__ox_bad(x, "input has rank %d (needs at least 3)", r);
    int nsp = r - 2;
    int64_t k[MR];
    const int64_t *v;
    size_t n;
    int wr = bp__ox_rank(x, wt);
    if (bp__ox_attr_ints(x, "kernel_shape", &v, &n) && (int)n == nsp) memcpy(k, v, n * sizeof *v);
    else if (wr == r) memcpy(k, bp__ox_shape(x, wt) + 2, (size_t)nsp * sizeof *k);
    else for (int i = 0; i < nsp; i++) k[i] = -1;
    int64_t group = bp__ox_attr_i(x, "group", 1);
    int64_t d[MR] = {0};
    d[0] = bp__ox_shape(x, a)[0];
    if (wr >= 2) {
        int64_t m = tr ? bp__ox_shape(x, wt)[1] : bp__ox_shape(x, wt)[0];
        d[1] = m >= 0 && tr ? m * group : m;
    } else BP__OX_FRESH(d[1], 0, 1);
    bp_status s = spatial(x, a, nsp, k, tr, d + 2, 0);
    if (s) return s;
    if ((s = bp__ox_set_out(x, 0, dt, r, d))) return s;
    /* FLOPs: 2 * output elements * (Cin / group) * kernel volume */
    int64_t out_n = bp__ox_numel(d, r), kv = bp__ox_numel(k, nsp);
    int64_t cin = bp__ox_shape(x, a)[1];
    if (out_n >= 0 && kv >= 0 && cin >= 0 && group > 0) {
        if (tr) x->nd->cost = 2.0 * (double)bp__ox_t_numel(x, a) * (double)(d[1] / group) * (double)kv;
        else x->nd->cost = 2.0 * (double)out_n * (double)(cin / group) * (double)kv;
    }
    return BP_OK;
}

bp_status bp__ox_inf_pool(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    bp_dtype dt = bp__ox_dt(x, a);
    int r = bp__ox_rank(x, a);
    if (r < 3) {
        if (r >= 0) return bp__ox_bad(x, "input has rank %d (needs at least 3)", r);
        bp_status s = bp__ox_set_unknown(x, 0, dt);
        return s ? s : bp__ox_set_unknown(x, 1, BP_DT_I64);
    }
    int nsp = r - 2;
    int64_t d[MR] = {0};
    d[0] = bp__ox_shape(x, a)[0];
    d[1] = bp__ox_shape(x, a)[1];
    bool global = !strncmp(x->op, "Global", 6);
    int64_t k[MR];
    if (global) {
        for (int i = 0; i < nsp; i++) d[i + 2] = 1;
    } else {
        const int64_t *v;
        size_t n;
        if (!bp__ox_attr_ints(x, "kernel_shape", &v, &n) || (int)n != nsp) return bp__ox_bad(x, "kernel_shape is missing or has the wrong length");
        memcpy(k, v, n * sizeof *v);
        bp_status s = spatial(x, a, nsp, k, false, d + 2, 0);
        if (s) return s;
    }
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    if (!s) s = bp__ox_set_out(x, 1, BP_DT_I64, r, d);
    int64_t ne = bp__ox_t_numel(x, a);
    x->nd->cost = ne > 0 ? (double)ne : 0;
    return s;
}

bp_status bp__ox_inf_gemm(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), b = bp__ox_in(x, 1);
    bp_dtype dt = bp__ox_dt(x, a);
    if (!strcmp(x->op, "MatMulInteger")) dt = BP_DT_I32;
    if (!strcmp(x->op, "QLinearMatMul")) { b = bp__ox_in(x, 3); dt = bp__ox_dt(x, bp__ox_in(x, 7)) != BP_DT_UNKNOWN ? bp__ox_dt(x, bp__ox_in(x, 7)) : bp__ox_dt(x, a); }
    int ra = bp__ox_rank(x, a), rb = bp__ox_rank(x, b);
    if (ra < 0 || rb < 0) return bp__ox_set_unknown(x, 0, dt);
    if (!strcmp(x->op, "Gemm")) {
        if (ra != 2 || rb != 2) return bp__ox_bad(x, "Gemm inputs have ranks %d and %d (need 2 and 2)", ra, rb);
        bool ta = bp__ox_attr_i(x, "transA", 0) != 0, tb = bp__ox_attr_i(x, "transB", 0) != 0;
        int64_t d[2] = {bp__ox_shape(x, a)[ta ? 1 : 0], bp__ox_shape(x, b)[tb ? 0 : 1]};
        int64_t kk = bp__ox_shape(x, a)[ta ? 0 : 1], kb = bp__ox_shape(x, b)[tb ? 1 : 0];
        if (kk >= 0 && kb >= 0 && kk != kb) return bp__ox_bad(x, "inner dimensions differ (%lld and %lld)", (long long)kk, (long long)kb);
        if (d[0] >= 0 && d[1] >= 0 && kk >= 0) x->nd->cost = 2.0 * (double)d[0] * (double)d[1] * (double)kk;
        return bp__ox_set_out(x, 0, dt, 2, d);
    }
    /* MatMul: numpy semantics, 1-D operands promoted and the added dim dropped */
    if (ra == 0 || rb == 0) return bp__ox_bad(x, "MatMul of a scalar");
    int64_t da[MR], db[MR];
    int pa = ra, pb = rb;
    if (ra == 1) { da[0] = 1; da[1] = bp__ox_shape(x, a)[0]; pa = 2; } else memcpy(da, bp__ox_shape(x, a), (size_t)ra * sizeof *da);
    if (rb == 1) { db[0] = bp__ox_shape(x, b)[0]; db[1] = 1; pb = 2; } else memcpy(db, bp__ox_shape(x, b), (size_t)rb * sizeof *db);
    int64_t kk = da[pa - 1], kb = db[pb - 2];
    if (kk >= 0 && kb >= 0 && kk != kb) return bp__ox_bad(x, "inner dimensions differ (%lld and %lld)", (long long)kk, (long long)kb);
    int bra = pa - 2, brb = pb - 2, br = bra > brb ? bra : brb;
    int64_t d[MR] = {0};
    for (int j = 0; j < br; j++) {
        int ia = j - (br - bra), ib = j - (br - brb);
        int64_t x1 = ia >= 0 ? da[ia] : 1, x2 = ib >= 0 ? db[ib] : 1;
        if (x1 == 1) d[j] = x2;
        else if (x2 == 1 || x1 == x2) d[j] = x1;
        else if (x1 >= 0 && x2 >= 0) return bp__ox_bad(x, "batch dimensions cannot be broadcast (%lld and %lld)", (long long)x1, (long long)x2);
        else if (x1 >= 0) d[j] = x1;
        else if (x2 >= 0) d[j] = x2;
        else BP__OX_FRESH(d[j], 0, j);
    }
    int ro = br;
    if (ra != 1) d[ro++] = da[pa - 2];
    if (rb != 1) d[ro++] = db[pb - 1];
    int64_t on = bp__ox_numel(d, ro);
    if (on >= 0 && kk >= 0) x->nd->cost = 2.0 * (double)on * (double)kk;
    return bp__ox_set_out(x, 0, dt, ro, d);
}

bp_status bp__ox_inf_einsum(bp__ox_op *x)
{
    const Onnx__AttributeProto *ea = bp__ox_attr(x, "equation");
    bp_dtype dt = bp__ox_dt(x, bp__ox_in(x, 0));
    if (!ea || !ea->has_s) return bp__ox_bad(x, "no equation");
    char eq[512];
    size_t el = 0;
    for (size_t i = 0; i < ea->s.len && el < sizeof eq - 1; i++) if (ea->s.data[i] != ' ') eq[el++] = (char)ea->s.data[i];
    eq[el] = 0;
    int64_t let[128];
    for (int i = 0; i < 128; i++) let[i] = -2;   /* -2: unseen */
    int count[128] = {0};
    int64_t ell[MR];
    int nell = -1;
    char *arrow = strstr(eq, "->");
    char *p = eq;
    int term = 0;
    while (p < (arrow ? arrow : eq + el)) {
        char *e = p;
        while (*e && *e != ',' && (e != arrow)) e++;
        int32_t t = bp__ox_in(x, term);
        int r = bp__ox_rank(x, t);
        if (r < 0) return bp__ox_set_unknown(x, 0, dt);
        int nlet = 0;
        bool has_ell = false;
        for (char *q = p; q < e; q++) {
            if (*q == '.') { has_ell = true; q += 2; continue; }
            nlet++;
        }
        int ne = has_ell ? r - nlet : 0;
        if (ne < 0 || (!has_ell && nlet != r)) return bp__ox_bad(x, "equation term %d does not match rank %d", term, r);
        int dpos = 0;
        for (char *q = p; q < e; q++) {
            if (*q == '.') {
                /* ellipsis dims broadcast against earlier ones */
                if (nell < ne) {
                    int64_t tmp[MR];
                    for (int i = 0; i < ne; i++) tmp[i] = 1;
                    for (int i = 0; i < nell; i++) tmp[ne - nell + i] = ell[i];
                    memcpy(ell, tmp, (size_t)ne * sizeof *ell);
                    nell = ne;
                }
                for (int i = 0; i < ne; i++) {
                    int64_t dd = bp__ox_shape(x, t)[dpos + i];
                    int64_t *slot = &ell[nell - ne + i];
                    if (*slot == 1 || *slot < 0) *slot = dd;
                }
                dpos += ne;
                q += 2;
                continue;
            }
            unsigned char ch = (unsigned char)*q;
            if (ch >= 128) return bp__ox_bad(x, "bad equation");
            int64_t dd = bp__ox_shape(x, t)[dpos++];
            if (let[ch] == -2 || let[ch] == 1 || let[ch] < 0) let[ch] = dd;
            count[ch]++;
        }
        term++;
        p = *e == ',' ? e + 1 : e;
        if (e == arrow) break;
    }
    int64_t d[MR] = {0};
    int ro = 0;
    if (nell < 0) nell = 0;
    if (arrow) {
        for (char *q = arrow + 2; *q; q++) {
            if (*q == '.') { for (int i = 0; i < nell && ro < MR; i++) d[ro++] = ell[i]; q += 2; continue; }
            unsigned char ch = (unsigned char)*q;
            if (ch >= 128 || let[ch] == -2) return bp__ox_bad(x, "output letter '%c' is not in the inputs", *q);
            if (ro < MR) d[ro++] = let[ch];
        }
    } else {
        for (int i = 0; i < nell && ro < MR; i++) d[ro++] = ell[i];
        for (int ch = 0; ch < 128; ch++) if (count[ch] == 1 && ro < MR) d[ro++] = let[ch];
    }
    for (int i = 0; i < ro; i++) if (d[i] == -2) BP__OX_FRESH(d[i], 0, i);
    double flops = 2;
    for (int ch = 0; ch < 128; ch++) if (let[ch] >= 0) flops *= (double)let[ch];
    for (int i = 0; i < nell; i++) if (ell[i] >= 0) flops *= (double)ell[i];
    x->nd->cost = flops;
    return bp__ox_set_out(x, 0, dt, ro, d);
}

bp_status bp__ox_inf_norm(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    bp_status s = bp__ox_copy_shape(x, 0, a, BP_DT_UNKNOWN, false);
    if (s) return s;
    int r = bp__ox_rank(x, a);
    int64_t ne = bp__ox_t_numel(x, a);
    x->nd->cost = ne > 0 ? 5.0 * (double)ne : 0;
    if (!strcmp(x->op, "BatchNormalization")) {
        bp_dtype pdt = bp__ox_dt(x, bp__ox_in(x, 1)) != BP_DT_UNKNOWN ? bp__ox_dt(x, bp__ox_in(x, 1)) : bp__ox_dt(x, a);
        for (int i = 1; i < x->nd->n_out; i++) {
            if (r < 2) { if ((s = bp__ox_set_unknown(x, i, pdt))) return s; continue; }
            int64_t cdim = bp__ox_shape(x, a)[1];
            if ((s = bp__ox_set_out(x, i, pdt, 1, &cdim))) return s;
        }
        return BP_OK;
    }
    if (!strcmp(x->op, "LayerNormalization")) {
        bp_dtype sdt = bp__ox_dtype((int32_t)bp__ox_attr_i(x, "stash_type", 1));
        if (r < 0) { s = bp__ox_set_unknown(x, 1, sdt); return s ? s : bp__ox_set_unknown(x, 2, sdt); }
        int64_t ax = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", -1), r);
        if (ax < 0 || ax >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)bp__ox_attr_i(x, "axis", -1), r);
        int64_t d[MR] = {0};
        for (int i = 0; i < r; i++) d[i] = i < ax ? bp__ox_shape(x, a)[i] : 1;
        s = bp__ox_set_out(x, 1, sdt, r, d);
        return s ? s : bp__ox_set_out(x, 2, sdt, r, d);
    }
    return BP_OK;
}

/* Resize-18 keep_aspect_ratio_policy with sizes: not_larger / not_smaller
 * scale every axis by the smallest / largest sizes[i] / in[i] (single
 * precision, rounded, as onnx); d holds the sizes on entry. */
static bp_status keep_aspect(bp__ox_op *x, const int64_t *axes, size_t na, const int64_t *in, int r, int64_t *d)
{
    bool smaller = bp__ox_attr_s_is(x, "keep_aspect_ratio_policy", "not_larger");
    bool larger = bp__ox_attr_s_is(x, "keep_aspect_ratio_policy", "not_smaller");
    if (!smaller && !larger) return BP_OK;   /* stretch */
    float scale = 0;
    bool known = true;
    for (size_t i = 0; i < na; i++) {
        int64_t q = bp__ox_norm_axis(axes[i], r);
        if (in[q] <= 0 || d[q] < 0) { known = false; continue; }
        float s = (float)d[q] / (float)in[q];
        if (i == 0 || (smaller ? s < scale : s > scale)) scale = s;
    }
    for (size_t i = 0; i < na; i++) {
        int64_t q = bp__ox_norm_axis(axes[i], r);
        if (known) d[q] = bp__ox_f2i(roundf(scale * (float)in[q]));
        else BP__OX_FRESH(d[q], 0, (int)q);
    }
    return BP_OK;
}

bp_status bp__ox_inf_resize(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t d[MR] = {0};
    memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
    int32_t tsc = -1, tsz = -1;
    double sc[MR];
    bool have_sc = false;
    if (!strcmp(x->op, "Upsample") && x->opset < 9) {
        const Onnx__AttributeProto *at = bp__ox_attr(x, "scales"), *hs = bp__ox_attr(x, "height_scale"), *ws = bp__ox_attr(x, "width_scale");
        if (at && (int)at->n_floats == r) { for (int i = 0; i < r; i++) sc[i] = at->floats[i]; have_sc = true; }
        else if (hs && ws && hs->has_f && ws->has_f && r == 4) {
            /* Upsample-1: height_scale and width_scale of an NCHW input */
            sc[0] = sc[1] = 1;
            sc[2] = hs->f;
            sc[3] = ws->f;
            have_sc = true;
        }
    } else if (!strcmp(x->op, "Upsample") || x->opset < 11) {
        tsc = bp__ox_in(x, 1);
    } else {
        tsc = bp__ox_in(x, 2);
        tsz = bp__ox_in(x, 3);
    }
    const bp__ox_val *vz = bp__ox_vals(x, tsz), *vs = bp__ox_vals(x, tsc);
    int64_t axes[MR];
    size_t na = 0;
    const int64_t *av;
    bool have_axes = bp__ox_attr_ints(x, "axes", &av, &na) && na && na <= MR;
    if (have_axes) memcpy(axes, av, na * sizeof *av);
    else { na = (size_t)r; for (int i = 0; i < r; i++) axes[i] = i; }
    if (vz && vz->n > 0) {
        if (vz->n != na) return bp__ox_bad(x, "sizes has %u entries for %zu axes", vz->n, na);
        for (size_t i = 0; i < na; i++) {
            int64_t q = bp__ox_norm_axis(axes[i], r);
            if (q < 0 || q >= r) return bp__ox_bad(x, "axis out of range");
            d[q] = bp__ox_val_dim(vz, (uint32_t)i);
        }
        if (x->opset >= 18) {
            bp_status s = keep_aspect(x, axes, na, bp__ox_shape(x, a), r, d);
            if (s) return s;
        }
    } else if (vs && vs->n > 0) {
        if (vs->n != na) return bp__ox_bad(x, "scales has %u entries for %zu axes", vs->n, na);
        for (size_t i = 0; i < na; i++) sc[i] = bp__ox_val_f(vs, (uint32_t)i);
        have_sc = true;
    } else if (!have_sc) {
        bool sizes_given = tsz >= 0 && !(bp__ox_rank(x, tsz) == 1 && bp__ox_shape(x, tsz)[0] == 0);
        bool scales_given = tsc >= 0 && !(bp__ox_rank(x, tsc) == 1 && bp__ox_shape(x, tsc)[0] == 0);
        if (sizes_given || scales_given) for (int i = 0; i < r; i++) BP__OX_FRESH(d[i], 0, i);
        return bp__ox_set_out(x, 0, dt, r, d);
    }
    if (have_sc) {
        for (size_t i = 0; i < na; i++) {
            int64_t q = bp__ox_norm_axis(axes[i], r);
            if (q < 0 || q >= r) return bp__ox_bad(x, "axis out of range");
            if (d[q] < 0) { if (sc[i] != 1) BP__OX_FRESH(d[q], 0, (int)q); continue; }
            if (!(sc[i] > 0 && sc[i] <= 1e30)) return bp__ox_bad(x, "a scale is not a positive number below 1e30");
            float prod = (float)d[q] * (float)sc[i];   /* single precision, as onnx */
            d[q] = bp__ox_f2i(floorf(prod));
        }
    }
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    int64_t ne = bp__ox_numel(d, r);
    x->nd->cost = ne > 0 ? 4.0 * (double)ne : 0;
    return s;
}

bp_status bp__ox_inf_pad(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t pads[2 * MR];
    size_t n = 0;
    bool known;
    if (x->opset < 11) {
        const int64_t *v;
        known = (bp__ox_attr_ints(x, "pads", &v, &n) || bp__ox_attr_ints(x, "paddings", &v, &n)) && n <= 2 * MR;
        if (known) memcpy(pads, v, n * sizeof *v);
    } else {
        known = bp__ox_ints_of(x, bp__ox_in(x, 1), pads, 2 * MR, &n);
    }
    int64_t axes[MR];
    size_t na = (size_t)r;
    for (int i = 0; i < r; i++) axes[i] = i;
    bool axes_known = true;
    if (x->opset >= 18 && bp__ox_in(x, 3) >= 0) axes_known = bp__ox_ints_of(x, bp__ox_in(x, 3), axes, MR, &na);
    int64_t d[MR] = {0};
    memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
    if (!known || !axes_known) {
        /* the padded axes (all when not known) get fresh sizes */
        for (size_t i = 0; i < (axes_known ? na : (size_t)r); i++) {
            int64_t q = axes_known ? bp__ox_norm_axis(axes[i], r) : (int64_t)i;
            if (q < 0 || q >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)axes[i], r);
            BP__OX_FRESH(d[q], 0, (int)q);
        }
        return bp__ox_set_out(x, 0, dt, r, d);
    }
    if (n != 2 * na) return bp__ox_bad(x, "pads has %zu entries for %zu axes", n, na);
    for (size_t i = 0; i < na; i++) {
        int64_t q = bp__ox_norm_axis(axes[i], r);
        if (q < 0 || q >= r) return bp__ox_bad(x, "axis out of range");
        int64_t add;
        if (__builtin_add_overflow(pads[i], pads[i + na], &add)) return bp__ox_bad(x, "pads on axis %lld overflow 64 bits", (long long)q);
        if (d[q] < 0) { if (add) BP__OX_FRESH(d[q], 0, (int)q); continue; }
        if (__builtin_add_overflow(d[q], add, &d[q])) return bp__ox_bad(x, "padding overflows dimension %lld", (long long)q);
        if (d[q] < 0) return bp__ox_bad(x, "padding makes dimension %lld negative", (long long)q);
    }
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    int64_t ne = bp__ox_numel(d, r);
    x->nd->cost = ne > 0 ? (double)ne : 0;
    return s;
}

bp_status bp__ox_inf_d2s(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    bp_dtype dt = bp__ox_dt(x, a);
    if (bp__ox_rank(x, a) != 4) return bp__ox_rank(x, a) < 0 ? bp__ox_set_unknown(x, 0, dt) : bp__ox_bad(x, "input must have rank 4");
    int64_t b = bp__ox_attr_i(x, "blocksize", 0);
    if (b <= 0 || b > ((int64_t)1 << 31)) return bp__ox_bad(x, "blocksize must be in 1..2^31");
    const int64_t *s = bp__ox_shape(x, a);
    int64_t d[4] = {s[0], s[1], s[2], s[3]};
    bool d2s = !strcmp(x->op, "DepthToSpace");
    for (int i = 1; i < 4; i++) {
        if (s[i] < 0) { BP__OX_FRESH(d[i], 0, i); continue; }
        if (i == 1 && !d2s && (__builtin_mul_overflow(s[1], b * b, &d[1])))
            return bp__ox_bad(x, "the output's channels overflow 64 bits");
        if (i == 1 && d2s && s[1] % (b * b))
            return bp__ox_bad(x, "%lld channels are not a multiple of blocksize^2 (%lld)", (long long)s[1], (long long)(b * b));
        if (i == 1) d[1] = d2s ? s[1] / (b * b) : d[1];
        else if (d2s && __builtin_mul_overflow(s[i], b, &d[i])) return bp__ox_bad(x, "dimension %d overflows 64 bits", i);
        else if (!d2s) d[i] = s[i] / b;
    }
    return bp__ox_set_out(x, 0, dt, 4, d);
}

bp_status bp__ox_inf_rnn(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    bp_dtype dt = bp__ox_dt(x, a);
    int64_t hs = bp__ox_attr_i(x, "hidden_size", -1);
    int64_t nd = bp__ox_attr_s_is(x, "direction", "bidirectional") ? 2 : 1;
    bool layout = bp__ox_attr_i(x, "layout", 0) != 0;
    int ra = bp__ox_rank(x, a);
    if (ra != 3 && ra != -1) {
        for (int i = 0; i < x->nd->n_out; i++) { bp_status s = bp__ox_set_unknown(x, i, dt); if (s) return s; }
        return BP_OK;
    }
    int64_t seq, batch, in;   /* the input's dims, read before the first output is set (which may move them) */
    if (ra == 3) {
        const int64_t *s = bp__ox_shape(x, a);
        seq = layout ? s[1] : s[0], batch = layout ? s[0] : s[1], in = s[2];
    } else {   /* X of unknown shape is still [seq, batch, input]: the outputs' ranks are known */
        BP__OX_FRESH(seq, 0, 0);
        BP__OX_FRESH(batch, 0, 2);
        in = -1;
    }
    int64_t h;
    if (hs >= 0) h = hs;
    else BP__OX_FRESH(h, 0, 3);
    int64_t y[4], yh[3];
    if (layout) { y[0] = batch; y[1] = seq; y[2] = nd; y[3] = h; yh[0] = batch; yh[1] = nd; yh[2] = h; }
    else { y[0] = seq; y[1] = nd; y[2] = batch; y[3] = h; yh[0] = nd; yh[1] = batch; yh[2] = h; }
    bp_status st = bp__ox_set_out(x, 0, dt, 4, y);
    for (int i = 1; i < x->nd->n_out && !st; i++) st = bp__ox_set_out(x, i, dt, 3, yh);
    int64_t ny = bp__ox_numel(y, 4);
    if (ny >= 0 && in >= 0 && hs >= 0) {
        double gates = !strcmp(x->op, "LSTM") ? 4 : !strcmp(x->op, "GRU") ? 3 : 1;
        x->nd->cost = 2.0 * gates * (double)ny * (double)(in + hs);
    }
    return st;
}

bp_status bp__ox_inf_quant(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    if (!strcmp(x->op, "QuantizeLinear")) {
        /* the zero point's type; without one, output_dtype (opset 21) or uint8 */
        int32_t zp = bp__ox_in(x, 2), o = bp__ox_out(x, 0);
        int64_t odt = x->opset >= 21 ? bp__ox_attr_i(x, "output_dtype", 0) : 0;
        bp_dtype dt = zp >= 0 ? bp__ox_dt(x, zp) : odt ? bp__ox_dtype((int32_t)odt) : BP_DT_U8;
        if (odt && zp >= 0 && dt != BP_DT_UNKNOWN && dt != bp__ox_dtype((int32_t)odt))
            return bp__ox_bad(x, "output_dtype %lld differs from the zero point's type", (long long)odt);
        bool four_bit = zp >= 0 ? x->c->t[zp].not_sized : odt && dt == BP_DT_UNKNOWN;
        if (four_bit && o >= 0) x->c->t[o].not_sized = 1;   /* int4 / uint4: no byte size */
        return bp__ox_copy_shape(x, 0, a, dt == BP_DT_UNKNOWN && !four_bit ? BP_DT_U8 : dt, false);
    }
    if (!strcmp(x->op, "DequantizeLinear")) {
        /* the scale's type from opset 19 (float16, bfloat16); float before */
        bp_dtype dt = x->opset >= 19 ? bp__ox_dt(x, bp__ox_in(x, 1)) : BP_DT_F32;
        return bp__ox_copy_shape(x, 0, a, dt == BP_DT_UNKNOWN ? BP_DT_F32 : dt, false);
    }
    /* DynamicQuantizeLinear */
    bp_status s = bp__ox_copy_shape(x, 0, a, BP_DT_U8, false);
    if (!s) s = bp__ox_set_out(x, 1, BP_DT_F32, 0, NULL);
    if (!s) s = bp__ox_set_out(x, 2, BP_DT_U8, 0, NULL);
    return s;
}

bp_status bp__ox_inf_grid_sample(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), gr = bp__ox_in(x, 1);
    bp_dtype dt = bp__ox_dt(x, a);
    int r = bp__ox_rank(x, a);
    if (r < 3 || bp__ox_rank(x, gr) != r) return r < 0 || bp__ox_rank(x, gr) < 0 ? bp__ox_set_unknown(x, 0, dt) : bp__ox_bad(x, "grid rank does not match");
    int64_t d[MR] = {0};
    d[0] = bp__ox_shape(x, a)[0];
    d[1] = bp__ox_shape(x, a)[1];
    for (int i = 2; i < r; i++) d[i] = bp__ox_shape(x, gr)[i - 1];
    return bp__ox_set_out(x, 0, dt, r, d);
}

#endif /* BP_HAVE_ONNX */
