/*
 * infer_const.c — the sources of folded values and of generated tensors:
 * Shape / Size (the input's dims as values, symbols kept), Constant (every
 * form of its value attribute), ConstantOfShape (shape from its input's
 * values), Range (length and values from constant start, limit, delta),
 * Random* and EyeLike; and the decoding of a TensorProto's data (raw
 * little-endian or typed fields, f16/bf16 widened) into a tensor's values,
 * for Constant and small initializers.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <math.h>
#include <string.h>

#define MR BP__OX_MAX_RANK

bp_status bp__ox_inf_shape(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    if (!strcmp(x->op, "Size")) {
        bp_status s = bp__ox_set_out(x, 0, BP_DT_I64, 0, NULL);
        int64_t n = r >= 0 ? bp__ox_numel(bp__ox_shape(x, a), r) : -1;
        if (s || n < 0) return s;
        return bp__ox_out_ival(x, 0, 1, &n, NULL);
    }
    if (r < 0) {
        int64_t d;
        BP__OX_FRESH(d, 0, 0);
        return bp__ox_set_out(x, 0, BP_DT_I64, 1, &d);
    }
    int64_t start = 0, end = r;
    if (!strcmp(x->op, "Shape") && x->opset >= 15) {
        start = bp__ox_attr_i(x, "start", 0);
        end = bp__ox_attr_i(x, "end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < 0 ? 0 : end > r ? r : end;
        if (end < start) end = start;
    }
    int64_t len = end - start;
    bp_status s = bp__ox_set_out(x, 0, BP_DT_I64, 1, &len);
    if (s) return s;
    int64_t v[MR];
    int32_t sy[MR];
    for (int64_t i = 0; i < len; i++) {
        int64_t d = bp__ox_shape(x, a)[start + i];
        v[i] = d >= 0 ? d : 0;
        sy[i] = d >= 0 ? -1 : (int32_t)(-d - 1);
    }
    return bp__ox_out_ival(x, 0, (size_t)len, v, sy);
}

bp_status bp__ox_inf_constant(bp__ox_op *x)
{
    int32_t o = bp__ox_out(x, 0);
    if (o < 0) return BP_OK;
    x->c->t[o].is_const = 1;
    const Onnx__AttributeProto *a;
    if ((a = bp__ox_attr(x, "value")) && a->t) return bp__ox_tensor_from_proto(x->c, o, a->t, x->err);
    if ((a = bp__ox_attr(x, "sparse_value")) && a->sparse_tensor) {
        const Onnx__SparseTensorProto *sp = a->sparse_tensor;
        bp_dtype dt = sp->values && sp->values->has_data_type ? bp__ox_dtype(sp->values->data_type) : BP_DT_UNKNOWN;
        if (sp->n_dims > MR) return bp__ox_bad(x, "rank over the limit");
        return bp__ox_set_out(x, 0, dt, (int)sp->n_dims, sp->dims);
    }
    if ((a = bp__ox_attr(x, "value_float")) && a->has_f) {
        double f = a->f;
        bp_status s = bp__ox_set_out(x, 0, BP_DT_F32, 0, NULL);
        return s ? s : bp__ox_out_fval(x, 0, 1, &f);
    }
    if ((a = bp__ox_attr(x, "value_int")) && a->has_i) {
        bp_status s = bp__ox_set_out(x, 0, BP_DT_I64, 0, NULL);
        return s ? s : bp__ox_out_ival(x, 0, 1, &a->i, NULL);
    }
    if ((a = bp__ox_attr(x, "value_floats"))) {
        int64_t n = (int64_t)a->n_floats;
        bp_status s = bp__ox_set_out(x, 0, BP_DT_F32, 1, &n);
        if (s || a->n_floats > BP__OX_VALUE_LIMIT) return s;
        double f[BP__OX_VALUE_LIMIT];
        for (size_t i = 0; i < a->n_floats; i++) f[i] = a->floats[i];
        return bp__ox_out_fval(x, 0, a->n_floats, f);
    }
    if ((a = bp__ox_attr(x, "value_ints"))) {
        int64_t n = (int64_t)a->n_ints;
        bp_status s = bp__ox_set_out(x, 0, BP_DT_I64, 1, &n);
        return s ? s : bp__ox_out_ival(x, 0, a->n_ints, a->ints, NULL);
    }
    if (bp__ox_attr(x, "value_string") || bp__ox_attr(x, "value_strings")) {
        x->c->t[o].not_sized = 1;
        return bp__ox_set_unknown(x, 0, BP_DT_UNKNOWN);
    }
    return bp__ox_bad(x, "Constant has no value attribute");
}

bp_status bp__ox_inf_constant_of_shape(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), o = bp__ox_out(x, 0);
    const Onnx__AttributeProto *va = bp__ox_attr(x, "value");
    bp_dtype dt = BP_DT_F32;
    double fv = 0;
    int64_t iv = 0;
    if (va && va->t) {
        if (va->t->has_data_type) dt = bp__ox_dtype(va->t->data_type);
        /* the fill value, from a temporary tensor slot is overkill: read raw */
        const Onnx__TensorProto *tp = va->t;
        if (tp->n_float_data) fv = tp->float_data[0];
        else if (tp->n_int64_data) iv = tp->int64_data[0];
        else if (tp->n_int32_data) iv = tp->int32_data[0];
        else if (tp->n_double_data) fv = tp->double_data[0];
        else if (tp->has_raw_data && tp->raw_data.len >= bp_dtype_size(dt) && bp_dtype_size(dt)) {
            const uint8_t *p = tp->raw_data.data;
            if (dt == BP_DT_F32) { float f; memcpy(&f, p, 4); fv = f; }
            else if (dt == BP_DT_F64) memcpy(&fv, p, 8);
            else if (dt == BP_DT_I64) memcpy(&iv, p, 8);
            else if (dt == BP_DT_I32) { int32_t q; memcpy(&q, p, 4); iv = q; }
            else if (dt == BP_DT_U8 || dt == BP_DT_BOOL || dt == BP_DT_I8) iv = dt == BP_DT_I8 ? (int8_t)p[0] : p[0];
        }
    }
    if (o >= 0 && a >= 0 && x->c->t[a].is_const) x->c->t[o].is_const = 1;
    const bp__ox_val *v = bp__ox_vals(x, a);
    if (!v) {
        if (bp__ox_rank(x, a) == 1 && bp__ox_shape(x, a)[0] >= 0 && bp__ox_shape(x, a)[0] <= MR) {
            int r = (int)bp__ox_shape(x, a)[0];
            int64_t d[MR] = {0};
            for (int i = 0; i < r; i++) BP__OX_FRESH(d[i], 0, i);
            return bp__ox_set_out(x, 0, dt, r, d);
        }
        return bp__ox_set_unknown(x, 0, dt);
    }
    if (v->n > MR) return bp__ox_bad(x, "shape has %u dimensions, over the limit", v->n);
    int64_t d[MR] = {0};
    for (uint32_t i = 0; i < v->n; i++) {
        d[i] = bp__ox_val_dim(v, i);
        if (!bp__ox_val_has_sym(v, i) && d[i] < 0) return bp__ox_bad(x, "shape value %u is negative (%lld)", i, (long long)d[i]);
    }
    bp_status s = bp__ox_set_out(x, 0, dt, (int)v->n, d);
    if (s) return s;
    int64_t n = bp__ox_numel(d, (int)v->n);
    x->nd->cost = n > 0 ? (double)n : 0;
    if (n < 0 || n > BP__OX_VALUE_LIMIT) return BP_OK;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool fl = bp__ox_is_float_dt(dt);
    for (int64_t i = 0; i < n; i++) { w->f[i] = fv; w->i[i] = iv; w->s[i] = -1; }
    s = bp__ox_fold_set(x, 0, fl, (size_t)n, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_range(bp__ox_op *x)
{
    bp_dtype dt = bp__ox_dt(x, bp__ox_in(x, 0));
    const bp__ox_val *vs = bp__ox_vals(x, bp__ox_in(x, 0)), *vl = bp__ox_vals(x, bp__ox_in(x, 1)), *vd = bp__ox_vals(x, bp__ox_in(x, 2));
    int64_t n;
    if (!vs || !vl || !vd || vs->n != 1 || vl->n != 1 || vd->n != 1 || bp__ox_val_has_sym(vs, 0) || bp__ox_val_has_sym(vl, 0) || bp__ox_val_has_sym(vd, 0)) {
        BP__OX_FRESH(n, 0, 0);
        return bp__ox_set_out(x, 0, dt, 1, &n);
    }
    bool fl = vs->is_float || vl->is_float || vd->is_float;
    if (fl) {
        double s0 = bp__ox_val_f(vs, 0), l0 = bp__ox_val_f(vl, 0), d0 = bp__ox_val_f(vd, 0);
        if (d0 == 0) return bp__ox_bad(x, "delta is 0");
        double c = ceil((l0 - s0) / d0);
        if (c != c) return bp__ox_bad(x, "start, limit and delta give no length (NaN)");
        n = c > 0 ? bp__ox_f2i(c) : 0;
    } else {
        int64_t s0 = vs->i[0], l0 = vl->i[0], d0 = vd->i[0];
        if (d0 == 0) return bp__ox_bad(x, "delta is 0");
        /* exact: the distance and the step as unsigned magnitudes */
        bool up = d0 > 0;
        uint64_t dist = up ? (l0 > s0 ? (uint64_t)l0 - (uint64_t)s0 : 0) : (s0 > l0 ? (uint64_t)s0 - (uint64_t)l0 : 0);
        uint64_t step = up ? (uint64_t)d0 : (uint64_t)(-(d0 + 1)) + 1;
        uint64_t c = dist / step + (dist % step != 0);
        if (c > (uint64_t)INT64_MAX) return bp__ox_bad(x, "its length is too large (over 2^63-1)");
        n = (int64_t)c;
    }
    bp_status s = bp__ox_set_out(x, 0, dt, 1, &n);
    if (s || n > BP__OX_VALUE_LIMIT) return s;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    for (int64_t i = 0; i < n; i++) {
        if (fl) w->f[i] = bp__ox_val_f(vs, 0) + (double)i * bp__ox_val_f(vd, 0);
        else { w->i[i] = (int64_t)((uint64_t)vs->i[0] + (uint64_t)i * (uint64_t)vd->i[0]); w->s[i] = -1; }   /* in [start, limit): no overflow */
    }
    s = bp__ox_fold_set(x, 0, fl && bp__ox_is_float_dt(dt), (size_t)n, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_random(bp__ox_op *x)
{
    const int64_t *v;
    size_t n;
    bp_dtype dt = bp__ox_dtype((int32_t)bp__ox_attr_i(x, "dtype", 1));
    if (strstr(x->op, "Like")) {
        if (!bp__ox_attr(x, "dtype")) dt = bp__ox_dt(x, bp__ox_in(x, 0));
        return bp__ox_copy_shape(x, 0, bp__ox_in(x, 0), dt, false);
    }
    if (!bp__ox_attr_ints(x, "shape", &v, &n) || n > MR) return bp__ox_set_unknown(x, 0, dt);
    return bp__ox_set_out(x, 0, dt, (int)n, v);
}

bp_status bp__ox_inf_eyelike(bp__ox_op *x)
{
    const Onnx__AttributeProto *at = bp__ox_attr(x, "dtype");
    bp_dtype dt = at && at->has_i ? bp__ox_dtype((int32_t)at->i) : bp__ox_dt(x, bp__ox_in(x, 0));
    return bp__ox_copy_shape(x, 0, bp__ox_in(x, 0), dt, false);
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (!man) bits = sign;
        else {
            int e = -1;
            do { e++; man <<= 1; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

bp_status bp__ox_tensor_from_proto(bp__ox *c, int32_t t, const Onnx__TensorProto *tp, bp_error *err)
{
    bp_dtype dt = tp->has_data_type ? bp__ox_dtype(tp->data_type) : BP_DT_UNKNOWN;
    if (dt == BP_DT_UNKNOWN) c->t[t].not_sized = 1;
    if (tp->n_dims > BP__OX_MAX_RANK)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": rank %zu is over the limit", c->file, bp__names_get(&c->tn, t), tp->n_dims);
    for (size_t i = 0; i < tp->n_dims; i++)
        if (tp->dims[i] < 0)
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": dimension %zu is negative", c->file, bp__names_get(&c->tn, t), i);
    bp_status s = bp__ox_set_shape(c, t, dt, (int)tp->n_dims, tp->dims, err);
    if (s || dt == BP_DT_UNKNOWN) return s;
    int64_t n = bp__ox_numel(tp->dims, (int)tp->n_dims);
    if (n < 0 || n > BP__OX_VALUE_LIMIT) return BP_OK;
    if (dt == BP_DT_C64 || dt == BP_DT_C128 || dt == BP_DT_F8) return BP_OK;
    bool fl = bp__ox_is_float_dt(dt);
    size_t es = bp_dtype_size(dt);
    bp__ox_scratch *w = bp__alloc(c->a, sizeof *w);
    if (!w) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", c->file);
    bool ok = true;
    if (tp->has_raw_data && tp->raw_data.len) {
        if (tp->raw_data.len != (size_t)n * es) ok = false;
        for (int64_t i = 0; i < n && ok; i++) {
            const uint8_t *p = tp->raw_data.data + (size_t)i * es;
            uint64_t u = 0;
            for (size_t b = 0; b < es; b++) u |= (uint64_t)p[b] << (8 * b);
            w->s[i] = -1;
            switch (dt) {
            case BP_DT_F32: { uint32_t b32 = (uint32_t)u; float f; memcpy(&f, &b32, 4); w->f[i] = f; break; }
            case BP_DT_F64: { double f; memcpy(&f, &u, 8); w->f[i] = f; break; }
            case BP_DT_F16: w->f[i] = half_to_float((uint16_t)u); break;
            case BP_DT_BF16: { uint32_t b32 = (uint32_t)u << 16; float f; memcpy(&f, &b32, 4); w->f[i] = f; break; }
            case BP_DT_I8: w->i[i] = (int8_t)u; break;
            case BP_DT_I16: w->i[i] = (int16_t)u; break;
            case BP_DT_I32: w->i[i] = (int32_t)u; break;
            case BP_DT_I64: w->i[i] = (int64_t)u; break;
            case BP_DT_U64: if (u > INT64_MAX) ok = false; else w->i[i] = (int64_t)u; break;
            default: w->i[i] = (int64_t)u; break;   /* u8 u16 u32 bool */
            }
        }
    } else {
        size_t have = dt == BP_DT_F32 ? tp->n_float_data : dt == BP_DT_F64 ? tp->n_double_data
                    : dt == BP_DT_I64 ? tp->n_int64_data : (dt == BP_DT_U32 || dt == BP_DT_U64) ? tp->n_uint64_data
                    : tp->n_int32_data;
        if (have != (size_t)n) ok = false;
        for (int64_t i = 0; i < n && ok; i++) {
            w->s[i] = -1;
            switch (dt) {
            case BP_DT_F32: w->f[i] = tp->float_data[i]; break;
            case BP_DT_F64: w->f[i] = tp->double_data[i]; break;
            case BP_DT_F16: w->f[i] = half_to_float((uint16_t)tp->int32_data[i]); break;
            case BP_DT_BF16: { uint32_t b32 = (uint32_t)tp->int32_data[i] << 16; float f; memcpy(&f, &b32, 4); w->f[i] = f; break; }
            case BP_DT_I64: w->i[i] = tp->int64_data[i]; break;
            case BP_DT_U32: case BP_DT_U64:
                if (tp->uint64_data[i] > INT64_MAX) ok = false; else w->i[i] = (int64_t)tp->uint64_data[i];
                break;
            default: w->i[i] = tp->int32_data[i]; break;
            }
        }
    }
    s = ok ? (fl ? bp__ox_set_fval(c, t, (size_t)n, w->f, err) : bp__ox_set_ival(c, t, (size_t)n, w->i, NULL, err)) : BP_OK;
    bp__free(c->a, w, sizeof *w);
    return s;
}

#endif /* BP_HAVE_ONNX */
