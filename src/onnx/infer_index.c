/*
 * infer_index.c — ops that select or combine along axes: Concat, Split,
 * Slice (ONNX clamping of starts/ends/steps), Gather*, Scatter*, TopK,
 * OneHot; ops whose output size depends on the data (NonZero,
 * NonMaxSuppression, Compress, Unique: a fresh symbol for that dimension);
 * sequence and optional ops (not tensors of a known size).  Concat, Slice
 * and Gather fold the values of small integer inputs, symbols included.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

#define MR BP__OX_MAX_RANK

bp_status bp__ox_inf_concat(bp__ox_op *x)
{
    int n = x->nd->n_in;
    int r = -1;
    bp_dtype dt = BP_DT_UNKNOWN;
    for (int i = 0; i < n; i++) {
        int32_t t = bp__ox_in(x, i);
        if (t < 0) continue;
        if (dt == BP_DT_UNKNOWN) dt = bp__ox_dt(x, t);
        if (bp__ox_rank(x, t) < 0) return bp__ox_set_unknown(x, 0, dt);
        if (r < 0) r = bp__ox_rank(x, t);
        else if (bp__ox_rank(x, t) != r) return bp__ox_bad(x, "inputs have ranks %d and %d", r, bp__ox_rank(x, t));
    }
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t axis = bp__ox_attr_i(x, "axis", x->opset < 4 ? 1 : 0);   /* Concat-1: default 1; required from 4 */
    int64_t ax = bp__ox_norm_axis(axis, r);
    if (ax < 0 || ax >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)axis, r);
    int64_t d[MR] = {0};
    int64_t sum = 0, sym = 0;
    int nsym = 0;
    for (int j = 0; j < r; j++) d[j] = -1;
    bool first = true;
    for (int i = 0; i < n; i++) {
        int32_t t = bp__ox_in(x, i);
        if (t < 0) continue;
        const int64_t *di = bp__ox_shape(x, t);
        for (int j = 0; j < r; j++) {
            if (j == ax) continue;
            if (first || d[j] < 0) {
                if (!first && d[j] < 0 && di[j] < 0) continue;   /* keep the first symbol */
                d[j] = di[j];
            } else if (di[j] >= 0 && di[j] != d[j]) {
                return bp__ox_bad(x, "inputs differ in dimension %d (%lld and %lld)", j, (long long)d[j], (long long)di[j]);
            }
        }
        first = false;
        if (di[ax] < 0) { nsym++; sym = di[ax]; }
        else if (__builtin_add_overflow(sum, di[ax], &sum))
            return bp__ox_bad(x, "the concatenated dimension %lld overflows 64 bits", (long long)ax);
    }
    if (!nsym) d[ax] = sum;
    else if (nsym == 1 && sum == 0) d[ax] = sym;
    else BP__OX_FRESH(d[ax], 0, (int)ax);
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    if (s) return s;
    int64_t total = bp__ox_numel(d, r);
    x->nd->cost = total > 0 ? (double)total : 0;
    if (total < 0 || total > BP__OX_VALUE_LIMIT) return BP_OK;
    bool is_f = false;
    for (int i = 0; i < n; i++) {
        int32_t t = bp__ox_in(x, i);
        if (t < 0) continue;
        const bp__ox_val *v = bp__ox_vals(x, t);
        if (!v || (int64_t)v->n != bp__ox_t_numel(x, t)) return BP_OK;
        if (i && v->is_float != is_f) return BP_OK;
        is_f = v->is_float;
    }
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t outer = 1, inner = 1;
    for (int j = 0; j < ax; j++) outer *= d[j];
    for (int j = (int)ax + 1; j < r; j++) inner *= d[j];
    int64_t o = 0;
    for (int64_t b = 0; b < outer; b++)
        for (int i = 0; i < n; i++) {
            int32_t t = bp__ox_in(x, i);
            if (t < 0) continue;
            const bp__ox_val *v = bp__ox_vals(x, t);
            int64_t blk = bp__ox_shape(x, t)[ax] * inner;
            for (int64_t e = 0; e < blk; e++, o++) {
                int64_t src = b * blk + e;
                bp__ox_scratch_take(w, (size_t)o, v, (uint32_t)src);
            }
        }
    s = bp__ox_fold_set(x, 0, is_f, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_split(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    int no = x->nd->n_out;
    if (r < 0) {
        for (int i = 0; i < no; i++) { bp_status s = bp__ox_set_unknown(x, i, dt); if (s) return s; }
        return BP_OK;
    }
    int64_t ax = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", 0), r);
    if (ax < 0 || ax >= r) return bp__ox_bad(x, "axis out of range");
    int64_t sp[1024];
    size_t n = 0;
    bool have = false, known = true;
    /* split: an attribute in opsets 2..12, an input from 13 (and in opset 1, either) */
    if (x->opset < 13 && !(x->opset < 2 && bp__ox_in(x, 1) >= 0)) {
        const int64_t *v;
        if (bp__ox_attr_ints(x, "split", &v, &n) && n) {
            if (n > 1024) known = false;
            else memcpy(sp, v, n * sizeof *v);
            have = true;
        }
    } else if (bp__ox_in(x, 1) >= 0) {
        have = true;
        if (!bp__ox_ints_of(x, bp__ox_in(x, 1), sp, 1024, &n)) known = false;
    }
    if (x->opset >= 18 && bp__ox_attr(x, "num_outputs")) {
        int64_t nout = bp__ox_attr_i(x, "num_outputs", 0);
        if (have) return bp__ox_bad(x, "both the split input and num_outputs are given");
        if (nout != no) return bp__ox_bad(x, "num_outputs is %lld but the node has %d outputs", (long long)nout, no);
    }
    int64_t D = bp__ox_shape(x, a)[ax];
    if (have && known) {
        int64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            if (sp[i] < 0) return bp__ox_bad(x, "split entry %zu is negative (%lld)", i, (long long)sp[i]);
            if (__builtin_add_overflow(sum, sp[i], &sum)) return bp__ox_bad(x, "the split sizes overflow 64 bits");
        }
        if (D >= 0 && sum != D) return bp__ox_bad(x, "the split sizes add up to %lld, the dimension is %lld", (long long)sum, (long long)D);
    }
    for (int i = 0; i < no; i++) {
        int64_t d[MR] = {0};
        memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
        if (have && known) {
            if ((int)n != no) return bp__ox_bad(x, "split has %zu entries for %d outputs", n, no);
            d[ax] = sp[i];
        } else if (!have && D >= 0) {
            int64_t chunk = D / no + (D % no != 0);   /* not D + no - 1: D may be INT64_MAX */
            if (x->opset < 18 && D % no) return bp__ox_bad(x, "dimension %lld does not split evenly into %d outputs", (long long)D, no);
            d[ax] = i < no - 1 ? chunk : D - chunk * (no - 1);
            if (d[ax] < 0) return bp__ox_bad(x, "dimension %lld does not split into %d outputs", (long long)D, no);
        } else {
            BP__OX_FRESH(d[ax], i, (int)ax);
        }
        bp_status s = bp__ox_set_out(x, i, dt, r, d);
        if (s) return s;
    }
    return BP_OK;
}

/* One sliced dimension's length, ONNX clamping rules. */
static int64_t slice_len(int64_t D, int64_t st, int64_t en, int64_t step)
{
    if (step == INT64_MIN) step = -INT64_MAX;   /* the same elements; -step must not overflow */
    if (step > 0) {
        st = st < 0 ? (st < -D ? 0 : st + D) : (st > D ? D : st);
        en = en < 0 ? (en < -D ? 0 : en + D) : (en > D ? D : en);
        return en > st ? (en - st) / step + ((en - st) % step != 0) : 0;   /* ceil, without en - st + step overflowing */
    }
    st = st < 0 ? (st < -D ? -1 : st + D) : (st > D - 1 ? D - 1 : st);
    en = en < 0 ? (en < -D ? -1 : en + D) : (en > D - 1 ? D - 1 : en);
    return st > en ? (st - en) / -step + ((st - en) % -step != 0) : 0;
}

static int64_t slice_start(int64_t D, int64_t st, int64_t step)
{
    if (step > 0) return st < 0 ? (st < -D ? 0 : st + D) : (st > D ? D : st);
    return st < 0 ? (st < -D ? -1 : st + D) : (st > D - 1 ? D - 1 : st);
}

bp_status bp__ox_inf_slice(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t st[MR], en[MR], ax[MR], sp[MR];
    size_t ns = 0, ne = 0, na = 0, nsp = 0;
    bool known = true, have_axes = false, have_steps = false;
    if (x->opset < 10) {
        const int64_t *v;
        if (bp__ox_attr_ints(x, "starts", &v, &ns) && ns <= MR) memcpy(st, v, ns * sizeof *v); else known = false;
        if (bp__ox_attr_ints(x, "ends", &v, &ne) && ne <= MR) memcpy(en, v, ne * sizeof *v); else known = false;
        if (bp__ox_attr_ints(x, "axes", &v, &na)) { have_axes = true; if (na <= MR) memcpy(ax, v, na * sizeof *v); else known = false; }
    } else {
        known = bp__ox_ints_of(x, bp__ox_in(x, 1), st, MR, &ns) && bp__ox_ints_of(x, bp__ox_in(x, 2), en, MR, &ne);
        if (bp__ox_in(x, 3) >= 0) { have_axes = true; known = known && bp__ox_ints_of(x, bp__ox_in(x, 3), ax, MR, &na); }
        if (bp__ox_in(x, 4) >= 0) { have_steps = true; known = known && bp__ox_ints_of(x, bp__ox_in(x, 4), sp, MR, &nsp); }
    }
    int64_t d[MR] = {0};
    memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
    if (!known) {
        /* which axes are sliced is unknown too when axes are: all fresh */
        int64_t axk[MR];
        size_t nk = 0;
        bool axes_known = have_axes && bp__ox_in(x, 3) >= 0 && bp__ox_ints_of(x, bp__ox_in(x, 3), axk, MR, &nk);
        for (int i = 0; i < r; i++) {
            bool sliced = true;
            if (axes_known) {
                sliced = false;
                for (size_t j = 0; j < nk; j++) if (bp__ox_norm_axis(axk[j], r) == i) sliced = true;
            }
            if (sliced) BP__OX_FRESH(d[i], 0, i);
        }
        return bp__ox_set_out(x, 0, dt, r, d);
    }
    if (ns != ne) return bp__ox_bad(x, "starts and ends differ in length");
    if (!have_axes) { na = ns; for (size_t i = 0; i < ns; i++) ax[i] = (int64_t)i; }
    if (!have_steps) { nsp = ns; for (size_t i = 0; i < ns; i++) sp[i] = 1; }
    if (na != ns || nsp != ns) return bp__ox_bad(x, "starts, axes and steps differ in length");
    int64_t off[MR], stp[MR];
    for (int i = 0; i < r; i++) { off[i] = 0; stp[i] = 1; }
    for (size_t i = 0; i < ns; i++) {
        int64_t q = bp__ox_norm_axis(ax[i], r);
        if (q < 0 || q >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)ax[i], r);
        if (sp[i] == 0) return bp__ox_bad(x, "step is 0");
        int64_t D = bp__ox_shape(x, a)[q];
        if (D < 0) {
            if (sp[i] == 1 && st[i] == 0 && en[i] >= INT32_MAX) continue;   /* the whole axis */
            BP__OX_FRESH(d[q], 0, (int)q);
            continue;
        }
        d[q] = slice_len(D, st[i], en[i], sp[i]);
        off[q] = slice_start(D, st[i], sp[i]);
        stp[q] = sp[i];
    }
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    if (s) return s;
    const bp__ox_val *v = bp__ox_vals(x, a);
    int64_t total = bp__ox_numel(d, r);
    if (!v || total < 0 || (int64_t)v->n != bp__ox_t_numel(x, a) || !bp__ox_all_static(bp__ox_shape(x, a), r)) return BP_OK;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t istr[MR], acc = 1;
    for (int i = r - 1; i >= 0; i--) { istr[i] = acc; acc *= bp__ox_shape(x, a)[i]; }
    for (int64_t o = 0; o < total; o++) {
        int64_t rem = o, src = 0;
        for (int i = r - 1; i >= 0; i--) { int64_t c = rem % d[i]; rem /= d[i]; src += (off[i] + c * stp[i]) * istr[i]; }
        bp__ox_scratch_take(w, (size_t)o, v, (uint32_t)src);
    }
    s = bp__ox_fold_set(x, 0, v->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_gather(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), ix = bp__ox_in(x, 1);
    int r = bp__ox_rank(x, a), q = bp__ox_rank(x, ix);
    bp_dtype dt = bp__ox_dt(x, a);
    if (!strcmp(x->op, "GatherElements")) return bp__ox_copy_shape(x, 0, ix, dt, false);
    if (r < 0 || q < 0) return bp__ox_set_unknown(x, 0, dt);
    if (!strcmp(x->op, "GatherND")) {
        int64_t b = bp__ox_attr_i(x, "batch_dims", 0);
        int64_t last = q > 0 ? bp__ox_shape(x, ix)[q - 1] : -1;
        if (last < 0 || b < 0 || b + last > r) return bp__ox_set_unknown(x, 0, dt);
        int64_t d[MR] = {0};
        int ro = 0;
        for (int i = 0; i < q - 1; i++) d[ro++] = bp__ox_shape(x, ix)[i];
        for (int64_t i = b + last; i < r; i++) d[ro++] = bp__ox_shape(x, a)[i];
        if (ro > MR) return bp__ox_bad(x, "output rank over the limit");
        return bp__ox_set_out(x, 0, dt, ro, d);
    }
    int64_t axis = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", 0), r);
    if (axis < 0 || axis >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)bp__ox_attr_i(x, "axis", 0), r);
    int ro = r + q - 1;
    if (ro > MR) return bp__ox_bad(x, "output rank over the limit");
    int64_t d[MR] = {0};
    int p = 0;
    for (int i = 0; i < axis; i++) d[p++] = bp__ox_shape(x, a)[i];
    for (int i = 0; i < q; i++) d[p++] = bp__ox_shape(x, ix)[i];
    for (int i = (int)axis + 1; i < r; i++) d[p++] = bp__ox_shape(x, a)[i];
    bp_status s = bp__ox_set_out(x, 0, dt, ro, d);
    if (s) return s;
    int64_t total = bp__ox_numel(d, ro);
    x->nd->cost = total > 0 ? (double)total : 0;
    const bp__ox_val *v = bp__ox_vals(x, a), *iv = bp__ox_vals(x, ix);
    if (!v || !iv || total < 0 || total > BP__OX_VALUE_LIMIT || !bp__ox_all_static(bp__ox_shape(x, a), r) || (int64_t)v->n != bp__ox_t_numel(x, a) ||
        (int64_t)iv->n != bp__ox_t_numel(x, ix) || iv->is_float)
        return BP_OK;
    int64_t D = bp__ox_shape(x, a)[axis], inner = 1, nidx = iv->n;
    for (int i = (int)axis + 1; i < r; i++) inner *= bp__ox_shape(x, a)[i];
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (int64_t o = 0; o < total && ok; o++) {
        int64_t in_e = o % inner, rest = o / inner, j = rest % (nidx ? nidx : 1), outer = rest / (nidx ? nidx : 1);
        if (bp__ox_val_has_sym(iv, (uint32_t)j)) { ok = false; break; }
        int64_t k = iv->i[j];
        if (k < 0) k += D;
        if (k < 0 || k >= D) { ok = false; break; }
        int64_t src = (outer * D + k) * inner + in_e;
        bp__ox_scratch_take(w, (size_t)o, v, (uint32_t)src);
    }
    s = ok ? bp__ox_fold_set(x, 0, v->is_float, (size_t)total, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_same_as_data(bp__ox_op *x) { return bp__ox_copy_shape(x, 0, bp__ox_in(x, 0), BP_DT_UNKNOWN, false); }

bp_status bp__ox_inf_topk(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bp_dtype dt = bp__ox_dt(x, a);
    if (r < 0) { bp_status s = bp__ox_set_unknown(x, 0, dt); return s ? s : bp__ox_set_unknown(x, 1, BP_DT_I64); }
    int64_t ax = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", -1), r);
    if (ax < 0 || ax >= r) return bp__ox_bad(x, "axis out of range");
    int64_t k;
    int64_t kv[1];
    size_t n;
    if (x->opset < 10) k = bp__ox_attr_i(x, "k", -1);
    else k = bp__ox_ints_of(x, bp__ox_in(x, 1), kv, 1, &n) && n == 1 ? kv[0] : -1;
    int64_t d[MR] = {0};
    memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
    if (k >= 0) d[ax] = k;
    else BP__OX_FRESH(d[ax], 0, (int)ax);
    bp_status s = bp__ox_set_out(x, 0, dt, r, d);
    return s ? s : bp__ox_set_out(x, 1, BP_DT_I64, r, d);
}

bp_status bp__ox_inf_onehot(bp__ox_op *x)
{
    int32_t ix = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, ix);
    bp_dtype dt = bp__ox_dt(x, bp__ox_in(x, 2));
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    int64_t dv[1];
    size_t n;
    int64_t depth;
    const bp__ox_val *v = bp__ox_vals(x, bp__ox_in(x, 1));
    if (v && v->n == 1 && !bp__ox_val_has_sym(v, 0)) depth = v->is_float ? bp__ox_f2i(v->f[0]) : v->i[0];
    else if (bp__ox_ints_of(x, bp__ox_in(x, 1), dv, 1, &n)) depth = dv[0];
    else BP__OX_FRESH(depth, 0, r);
    int64_t ax = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", -1), r + 1);
    if (ax < 0 || ax > r) return bp__ox_bad(x, "axis out of range");
    if (r + 1 > MR) return bp__ox_bad(x, "output rank %d is over the limit", r + 1);
    int64_t d[MR] = {0};
    for (int i = 0, j = 0; i <= r; i++) d[i] = i == ax ? depth : bp__ox_shape(x, ix)[j++];
    return bp__ox_set_out(x, 0, dt, r + 1, d);
}

/* Unique: one fresh symbol u for the unique count: Y is [u] (or the input
 * with u on `axis`), indices and counts [u], inverse_indices one entry per
 * input element (or per slice along axis). */
static bp_status unique(bp__ox_op *x, int32_t a)
{
    int r = bp__ox_rank(x, a);
    const Onnx__AttributeProto *at = bp__ox_attr(x, "axis");
    int64_t u, d[MR] = {0}, inv;
    BP__OX_FRESH(u, 0, 0);
    bp_status s;
    if (at && r >= 0) {
        int64_t ax = bp__ox_norm_axis(at->i, r);
        if (ax < 0 || ax >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)at->i, r);
        memcpy(d, bp__ox_shape(x, a), (size_t)r * sizeof *d);
        inv = d[ax];
        d[ax] = u;
        s = bp__ox_set_out(x, 0, bp__ox_dt(x, a), r, d);
    } else if (at) {   /* an axis of an input of unknown rank */
        BP__OX_FRESH(inv, 2, 0);
        s = bp__ox_set_unknown(x, 0, bp__ox_dt(x, a));
    } else {
        int64_t ne = bp__ox_t_numel(x, a);
        if (ne >= 0) inv = ne;
        else if (r == 1) inv = bp__ox_shape(x, a)[0];   /* a symbol */
        else BP__OX_FRESH(inv, 2, 0);
        s = bp__ox_set_out(x, 0, bp__ox_dt(x, a), 1, &u);
    }
    if (!s) s = bp__ox_set_out(x, 1, BP_DT_I64, 1, &u);
    if (!s) s = bp__ox_set_out(x, 2, BP_DT_I64, 1, &inv);
    if (!s) s = bp__ox_set_out(x, 3, BP_DT_I64, 1, &u);
    return s;
}

bp_status bp__ox_inf_dynamic_1d(bp__ox_op *x)
{
    /* NonZero [rank, ?], NonMaxSuppression [?, 3], Compress, Unique */
    int32_t a = bp__ox_in(x, 0);
    int64_t d[2];
    if (!strcmp(x->op, "NonZero")) {
        if (bp__ox_rank(x, a) < 0) return bp__ox_set_unknown(x, 0, BP_DT_I64);
        d[0] = bp__ox_rank(x, a);
        BP__OX_FRESH(d[1], 0, 1);
        return bp__ox_set_out(x, 0, BP_DT_I64, 2, d);
    }
    if (!strcmp(x->op, "NonMaxSuppression")) {
        BP__OX_FRESH(d[0], 0, 0);
        d[1] = 3;
        return bp__ox_set_out(x, 0, BP_DT_I64, 2, d);
    }
    if (!strcmp(x->op, "Compress")) {
        int r = bp__ox_rank(x, a);
        const Onnx__AttributeProto *at = bp__ox_attr(x, "axis");
        if (!at || r < 0) { BP__OX_FRESH(d[0], 0, 0); return bp__ox_set_out(x, 0, bp__ox_dt(x, a), 1, d); }
        int64_t ax = bp__ox_norm_axis(at->i, r), dd[MR];
        if (ax < 0 || ax >= r) return bp__ox_bad(x, "axis out of range");
        memcpy(dd, bp__ox_shape(x, a), (size_t)r * sizeof *dd);
        BP__OX_FRESH(dd[ax], 0, (int)ax);
        return bp__ox_set_out(x, 0, bp__ox_dt(x, a), r, dd);
    }
    return unique(x, a);
}

/* Ops whose outputs are sequences or optionals: not tensors of a known size. */
bp_status bp__ox_inf_sequence(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    if (!strcmp(x->op, "OptionalGetElement") && a >= 0 && !x->c->t[a].not_sized && x->c->t[a].dtype != BP_DT_UNKNOWN)
        return bp__ox_copy_shape(x, 0, a, BP_DT_UNKNOWN, true);   /* opset 18: a plain tensor passes through */
    for (int i = 0; i < x->nd->n_out; i++) {
        int32_t t = bp__ox_out(x, i);
        if (t < 0) continue;
        if (!strcmp(x->op, "SequenceLength")) { bp_status s = bp__ox_set_out(x, i, BP_DT_I64, 0, NULL); if (s) return s; continue; }
        if (!strcmp(x->op, "OptionalHasElement")) { bp_status s = bp__ox_set_out(x, i, BP_DT_BOOL, 0, NULL); if (s) return s; continue; }
        x->c->t[t].not_sized = !strcmp(x->op, "SequenceAt") || !strcmp(x->op, "ConcatFromSequence") ||
                                       !strcmp(x->op, "OptionalGetElement") ? 0 : 1;
        bp_status s = bp__ox_set_unknown(x, i, BP_DT_UNKNOWN);
        if (s) return s;
    }
    return BP_OK;
}

#endif /* BP_HAVE_ONNX */
