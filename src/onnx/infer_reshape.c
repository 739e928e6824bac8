/*
 * infer_reshape.c — ops that rearrange one tensor: Reshape (0 copies a dim,
 * -1 is inferred; the target keeps symbols where the element count shows
 * them, so Reshape to [N,-1] of [N,512,1,1] is [N,512]), Flatten, Squeeze,
 * Unsqueeze, Transpose, Expand (broadcast with a shape value) and Tile.
 * Values pass through (or are permuted, broadcast, tiled) when the input has
 * them, so shape arithmetic keeps folding.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

#define MR BP__OX_MAX_RANK

/* Product of dims where the result stays exact: a single symbol times 1 is
 * that symbol, anything else symbolic is fresh. */
static bp_status dim_prod(bp__ox_op *x, const int64_t *d, int n, int out, int k, int64_t *res)
{
    int64_t c = 1, sym = 0;
    int nsym = 0;
    for (int i = 0; i < n; i++) {
        if (d[i] < 0) { sym = d[i]; nsym++; continue; }
        if (d[i] && c > INT64_MAX / d[i]) return bp__ox_bad(x, "a dimension product overflows");
        c *= d[i];
    }
    if (!nsym || c == 0) { *res = c; return BP_OK; }
    if (nsym == 1 && c == 1) { *res = sym; return BP_OK; }
    BP__OX_FRESH(*res, out, k);
    return BP_OK;
}

/* Reshape target -> output dims (0 copies, -1 is inferred). */
bp_status bp__ox_inf_reshape(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int64_t tv[MR];
    int32_t ts[MR];
    size_t n = 0;
    bool known = false;
    if (x->opset < 5) {
        const int64_t *sv;
        if (bp__ox_attr_ints(x, "shape", &sv, &n) && n <= MR) {
            for (size_t i = 0; i < n; i++) { tv[i] = sv[i]; ts[i] = -1; }
            known = true;
        }
    } else {
        const bp__ox_val *v = bp__ox_vals(x, bp__ox_in(x, 1));
        if (v && v->n <= MR && !v->is_float) {
            n = v->n;
            for (size_t i = 0; i < n; i++) { tv[i] = v->i[i]; ts[i] = bp__ox_val_has_sym(v, (uint32_t)i) ? v->sym[i] : -1; }
            known = true;
        }
    }
    bp_dtype dt = bp__ox_dt(x, a);
    if (!known) {
        int32_t sh = bp__ox_in(x, 1);
        if (bp__ox_rank(x, sh) == 1 && bp__ox_shape(x, sh)[0] >= 0 && bp__ox_shape(x, sh)[0] <= MR) {
            int r = (int)bp__ox_shape(x, sh)[0];
            int64_t d[MR] = {0};
            for (int i = 0; i < r; i++) BP__OX_FRESH(d[i], 0, i);
            return bp__ox_set_out(x, 0, dt, r, d);
        }
        return bp__ox_set_unknown(x, 0, dt);
    }
    bool allowzero = x->opset >= 14 && bp__ox_attr_i(x, "allowzero", 0) != 0;
    int r = (int)n, ri = bp__ox_rank(x, a);
    int64_t d[MR] = {0};
    int neg = -1;
    for (int i = 0; i < r; i++) {
        if (ts[i] >= 0) { d[i] = -(int64_t)ts[i] - 1; continue; }
        if (tv[i] == -1) {
            if (neg >= 0) return bp__ox_bad(x, "the shape has more than one -1");
            neg = i;
            d[i] = 0;
            continue;
        }
        if (tv[i] == 0 && !allowzero) {
            if (ri < 0) { BP__OX_FRESH(d[i], 0, i); continue; }
            if (i >= ri) return bp__ox_bad(x, "shape entry %d is 0 (copy) but the input has rank %d", i, ri);
            d[i] = bp__ox_shape(x, a)[i];
            continue;
        }
        if (tv[i] < 0) return bp__ox_bad(x, "shape entry %d is %lld", i, (long long)tv[i]);
        d[i] = tv[i];
    }
    if (neg >= 0) {
        if (ri < 0) BP__OX_FRESH(d[neg], 0, neg);
        else {
            /* in = c_in * S_in, known out = c_out * S_out; -1 = in / out */
            int64_t cin = 1, cout = 1, sin[MR], sout[MR];
            int nin = 0, nout = 0;
            bool ovf = false;
            for (int i = 0; i < ri; i++) {
                int64_t q = bp__ox_shape(x, a)[i];
                if (q < 0) sin[nin++] = q;
                else ovf |= __builtin_mul_overflow(cin, q, &cin);
            }
            for (int i = 0; i < r; i++) {
                if (i == neg) continue;
                if (d[i] < 0) sout[nout++] = d[i];
                else ovf |= __builtin_mul_overflow(cout, d[i], &cout);
            }
            if (ovf) return bp__ox_bad(x, "a dimension product overflows");
            /* cancel symbols */
            for (int j = 0; j < nout; j++)
                for (int i = 0; i < nin; i++)
                    if (sin[i] == sout[j]) { sin[i] = sin[--nin]; sout[j] = 0; break; }
            int left_out = 0;
            for (int j = 0; j < nout; j++) left_out += sout[j] != 0;
            if (left_out || cout == 0) BP__OX_FRESH(d[neg], 0, neg);
            else if (cin % cout != 0) {
                if (nin == 0) return bp__ox_bad(x, "cannot reshape %lld elements into a shape with %lld per -1", (long long)cin, (long long)cout);
                BP__OX_FRESH(d[neg], 0, neg);
            } else if (nin == 0) d[neg] = cin / cout;
            else if (nin == 1 && cin / cout == 1) d[neg] = sin[0];
            else BP__OX_FRESH(d[neg], 0, neg);
        }
    } else if (ri >= 0 && bp__ox_all_static(d, r) && bp__ox_all_static(bp__ox_shape(x, a), ri) && bp__ox_numel(d, r) != bp__ox_numel(bp__ox_shape(x, a), ri)) {
        return bp__ox_bad(x, "cannot reshape %lld elements into %lld", (long long)bp__ox_numel(bp__ox_shape(x, a), ri), (long long)bp__ox_numel(d, r));
    }
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    if (s) return s;
    const bp__ox_val *v = bp__ox_vals(x, a);
    if (v && bp__ox_out(x, 0) >= 0 && (int64_t)v->n == bp__ox_numel(d, r))
        return v->is_float ? bp__ox_out_fval(x, 0, v->n, v->f) : bp__ox_out_ival(x, 0, v->n, v->i, v->sym);
    return BP_OK;
}

static bp_status pass_values(bp__ox_op *x, int32_t a)
{
    const bp__ox_val *v = bp__ox_vals(x, a);
    int32_t o = bp__ox_out(x, 0);
    if (!v || o < 0 || x->c->t[o].rank < 0 || (int64_t)v->n != bp__ox_numel(bp__ox_dims(x->c, o), x->c->t[o].rank)) return BP_OK;
    return v->is_float ? bp__ox_out_fval(x, 0, v->n, v->f) : bp__ox_out_ival(x, 0, v->n, v->i, v->sym);
}

bp_status bp__ox_inf_flatten(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r < 0) {
        int64_t d[2];
        BP__OX_FRESH(d[0], 0, 0);
        BP__OX_FRESH(d[1], 0, 1);
        return bp__ox_set_out(x, 0, dt, 2, d);
    }
    int64_t ax = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", 1), r);
    if (ax < 0 || ax > r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)bp__ox_attr_i(x, "axis", 1), r);
    int64_t d[2];
    bp_status s = dim_prod(x, bp__ox_shape(x, a), (int)ax, 0, 0, &d[0]);
    if (!s) s = dim_prod(x, bp__ox_shape(x, a) + ax, r - (int)ax, 0, 1, &d[1]);
    if (!s) s = bp__ox_set_out(x, 0, dt, 2, d);
    return s ? s : pass_values(x, a);
}

bp_status bp__ox_inf_squeeze(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    int64_t ax[MR];
    size_t n = 0;
    bool known;
    bool have = bp__ox_get_axes(x, 13, 1, ax, &n, &known);
    if (r < 0 || !known) return bp__ox_set_unknown(x, 0, dt);
    bool drop[MR] = {false};
    if (!have) {
        for (int i = 0; i < r; i++) {
            if (bp__ox_shape(x, a)[i] < 0) return bp__ox_set_unknown(x, 0, dt);
            drop[i] = bp__ox_shape(x, a)[i] == 1;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            int64_t q = bp__ox_norm_axis(ax[i], r);
            if (q < 0 || q >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)ax[i], r);
            if (bp__ox_shape(x, a)[q] >= 0 && bp__ox_shape(x, a)[q] != 1) return bp__ox_bad(x, "cannot squeeze axis %lld of size %lld", (long long)ax[i], (long long)bp__ox_shape(x, a)[q]);
            drop[q] = true;
        }
    }
    int64_t d[MR] = {0};
    int ro = 0;
    for (int i = 0; i < r; i++) if (!drop[i]) d[ro++] = bp__ox_shape(x, a)[i];
    bp_status s = bp__ox_set_out(x, 0, dt, ro, d);
    return s ? s : pass_values(x, a);
}

bp_status bp__ox_inf_unsqueeze(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    int64_t ax[MR];
    size_t n = 0;
    bool known;
    bool have = bp__ox_get_axes(x, 13, 1, ax, &n, &known);
    if (!have) return bp__ox_bad(x, "no axes");
    int32_t at = bp__ox_in(x, 1);
    if (r >= 0 && !known && x->opset >= 13 && bp__ox_rank(x, at) == 1 && bp__ox_shape(x, at)[0] >= 0 &&
        bp__ox_shape(x, at)[0] <= MR - r) {   /* no r + count: the count may be near INT64_MAX */
        /* axes not known, their count is: the rank is, the dims are not */
        int64_t d[MR] = {0};
        for (int i = 0; i < r + (int)bp__ox_shape(x, at)[0]; i++) BP__OX_FRESH(d[i], 0, i);
        return bp__ox_set_out(x, 0, dt, r + (int)bp__ox_shape(x, at)[0], d);
    }
    if (r < 0 || !known) return bp__ox_set_unknown(x, 0, dt);
    int ro = r + (int)n;
    if (ro > MR) return bp__ox_bad(x, "output rank %d is over the limit", ro);
    bool ins[MR] = {false};
    for (size_t i = 0; i < n; i++) {
        int64_t q = bp__ox_norm_axis(ax[i], ro);
        if (q < 0 || q >= ro || ins[q]) return bp__ox_bad(x, "axis %lld is out of range or repeated", (long long)ax[i]);
        ins[q] = true;
    }
    int64_t d[MR] = {0};
    for (int i = 0, j = 0; i < ro; i++) d[i] = ins[i] ? 1 : bp__ox_shape(x, a)[j++];
    bp_status s = bp__ox_set_out(x, 0, dt, ro, d);
    return s ? s : pass_values(x, a);
}

bp_status bp__ox_inf_transpose(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    const int64_t *pv;
    size_t n;
    int64_t perm[MR];
    if (bp__ox_attr_ints(x, "perm", &pv, &n) && n) {
        if ((int)n != r) return bp__ox_bad(x, "perm has %zu entries for rank %d", n, r);
        bool seen[MR] = {false};
        for (int i = 0; i < r; i++) {
            perm[i] = bp__ox_norm_axis(pv[i], r);
            if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) return bp__ox_bad(x, "perm is not a permutation");
            seen[perm[i]] = true;
        }
    } else {
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    }
    int64_t d[MR] = {0};
    for (int i = 0; i < r; i++) d[i] = bp__ox_shape(x, a)[perm[i]];
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    if (s) return s;
    x->nd->cost = bp__ox_t_numel(x, a) > 0 ? (double)bp__ox_t_numel(x, a) : 0;
    const bp__ox_val *v = bp__ox_vals(x, a);
    int64_t total = bp__ox_numel(d, r);
    if (!v || total < 0 || (int64_t)v->n != total) return BP_OK;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t istr[MR];
    int64_t st = 1;
    for (int i = r - 1; i >= 0; i--) { istr[i] = st; st *= bp__ox_shape(x, a)[i]; }
    for (int64_t o = 0; o < total; o++) {
        int64_t rem = o, src = 0;
        for (int i = r - 1; i >= 0; i--) { int64_t c = rem % d[i]; rem /= d[i]; src += c * istr[perm[i]]; }
        bp__ox_scratch_take(w, (size_t)o, v, (uint32_t)src);
    }
    s = bp__ox_fold_set(x, 0, v->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

/* Expand: broadcast the input with the shape value. */
bp_status bp__ox_inf_expand(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), sh = bp__ox_in(x, 1);
    bp_dtype dt = bp__ox_dt(x, a);
    const bp__ox_val *v = bp__ox_vals(x, sh);
    int r = bp__ox_rank(x, a);
    if (!v || v->is_float || v->n > MR || r < 0) {
        if (r >= 0 && bp__ox_rank(x, sh) == 1 && bp__ox_shape(x, sh)[0] >= 0 && bp__ox_shape(x, sh)[0] <= MR) {
            int ro = (int)bp__ox_shape(x, sh)[0] > r ? (int)bp__ox_shape(x, sh)[0] : r;
            int64_t d[MR] = {0};
            for (int i = 0; i < ro; i++) BP__OX_FRESH(d[i], 0, i);
            return bp__ox_set_out(x, 0, dt, ro, d);
        }
        return bp__ox_set_unknown(x, 0, dt);
    }
    int n = (int)v->n;
    int ro = n > r ? n : r;
    int64_t d[MR] = {0};
    for (int j = 0; j < ro; j++) {
        int pa = j - (ro - r), ps = j - (ro - n);
        int64_t da = pa >= 0 ? bp__ox_shape(x, a)[pa] : 1;
        int64_t ds = ps >= 0 ? bp__ox_val_dim(v, (uint32_t)ps) : 1;
        if (ps >= 0 && !bp__ox_val_has_sym(v, (uint32_t)ps) && ds < 0) return bp__ox_bad(x, "shape value %d is negative", ps);
        if (ds == 1) d[j] = da;
        else if (da == 1 || da == ds) d[j] = ds;
        else if (da >= 0 && ds >= 0) return bp__ox_bad(x, "cannot expand dimension %lld to %lld", (long long)da, (long long)ds);
        else if (ds >= 0) d[j] = ds;
        else if (da >= 0) d[j] = da;
        else BP__OX_FRESH(d[j], 0, j);
    }
    bp_status s = bp__ox_set_out(x, 0, dt, ro, d);
    if (s) return s;
    int64_t total = bp__ox_numel(d, ro);
    x->nd->cost = total > 0 ? (double)total : 0;
    const bp__ox_val *va = bp__ox_vals(x, a);
    if (!va || total < 0 || total > BP__OX_VALUE_LIMIT || (int64_t)va->n != bp__ox_t_numel(x, a)) return BP_OK;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    for (int64_t o = 0; o < total; o++) {
        int64_t src = bp__ox_bidx(d, ro, bp__ox_shape(x, a), r, o);
        bp__ox_scratch_take(w, (size_t)o, va, (uint32_t)src);
    }
    s = bp__ox_fold_set(x, 0, va->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_tile(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    int64_t rep[MR];
    size_t n;
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t d[MR] = {0};
    if (x->opset < 6 && bp__ox_in(x, 2) >= 0) {
        /* Tile-1: `tiles` copies along `axis` (both scalar inputs) */
        int64_t t1[1], a1[1];
        size_t n1, n2;
        memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
        bool ok = bp__ox_ints_of(x, bp__ox_in(x, 1), t1, 1, &n1) && n1 == 1 && bp__ox_ints_of(x, bp__ox_in(x, 2), a1, 1, &n2) && n2 == 1;
        if (!ok) { for (int i = 0; i < r; i++) BP__OX_FRESH(d[i], 0, i); return bp__ox_set_out(x, 0, dt, r, d); }
        int64_t q = bp__ox_norm_axis(a1[0], r);
        if (q < 0 || q >= r || t1[0] < 0) return bp__ox_bad(x, "axis %lld or tiles %lld is out of range", (long long)a1[0], (long long)t1[0]);
        if (d[q] >= 0) { if (__builtin_mul_overflow(d[q], t1[0], &d[q])) return bp__ox_bad(x, "size overflows"); }
        else if (t1[0] != 1) BP__OX_FRESH(d[q], 0, (int)q);
        return bp__ox_set_out(x, 0, dt, r, d);
    }
    if (!bp__ox_ints_of(x, bp__ox_in(x, 1), rep, MR, &n) || (int)n != r) {
        for (int i = 0; i < r; i++) BP__OX_FRESH(d[i], 0, i);
        return bp__ox_set_out(x, 0, dt, r, d);
    }
    for (int i = 0; i < r; i++) {
        int64_t q = bp__ox_shape(x, a)[i];
        if (rep[i] < 0) return bp__ox_bad(x, "repeat %d is negative", i);
        if (rep[i] == 1) d[i] = q;
        else if (q >= 0) { if (__builtin_mul_overflow(q, rep[i], &d[i])) return bp__ox_bad(x, "size overflows"); }
        else if (rep[i] == 0) d[i] = 0;
        else BP__OX_FRESH(d[i], 0, i);
    }
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    if (s) return s;
    const bp__ox_val *v = bp__ox_vals(x, a);
    int64_t total = bp__ox_numel(d, r);
    if (!v || total < 0 || total > BP__OX_VALUE_LIMIT || (int64_t)v->n != bp__ox_t_numel(x, a)) return BP_OK;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t istr[MR], acc = 1;
    for (int i = r - 1; i >= 0; i--) { istr[i] = acc; acc *= bp__ox_shape(x, a)[i]; }
    for (int64_t o = 0; o < total; o++) {
        int64_t rem = o, src = 0;
        for (int i = r - 1; i >= 0; i--) { int64_t c = rem % d[i]; rem /= d[i]; src += (c % bp__ox_shape(x, a)[i]) * istr[i]; }
        bp__ox_scratch_take(w, (size_t)o, v, (uint32_t)src);
    }
    s = bp__ox_fold_set(x, 0, v->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

#endif /* BP_HAVE_ONNX */
