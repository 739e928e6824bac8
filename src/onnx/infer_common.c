/*
 * infer_common.c — what the inference rules (infer_*.c) share: attribute
 * lookup, error messages naming the node, setting outputs (shape, values),
 * element counts, multidirectional broadcasting of shapes (symbols kept where
 * they are the answer, fresh where two different symbols meet) and the flat
 * index of a broadcast element, reading small integer values as lists.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <stdarg.h>
#include <string.h>

#define MR BP__OX_MAX_RANK

bp_status bp__ox_bad(const bp__ox_op *x, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bp__err(x->err, BP_ERR_INVALID, "%s: node \"%s\" (%s): %s", x->c->file, x->nd->name, x->op, msg);
}

const Onnx__AttributeProto *bp__ox_attr(const bp__ox_op *x, const char *name)
{
    for (size_t i = 0; i < x->np->n_attribute; i++)
        if (x->np->attribute[i]->name && !strcmp(x->np->attribute[i]->name, name)) return x->np->attribute[i];
    return NULL;
}
int64_t bp__ox_attr_i(const bp__ox_op *x, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = bp__ox_attr(x, name);
    return a && a->has_i ? a->i : def;
}
/* 1 when the string attribute equals s (0 when absent or different). */
bool bp__ox_attr_s_is(const bp__ox_op *x, const char *name, const char *s)
{
    const Onnx__AttributeProto *a = bp__ox_attr(x, name);
    return a && a->has_s && a->s.len == strlen(s) && !memcmp(a->s.data, s, a->s.len);
}
bool bp__ox_attr_ints(const bp__ox_op *x, const char *name, const int64_t **v, size_t *n)
{
    const Onnx__AttributeProto *a = bp__ox_attr(x, name);
    if (!a || (!a->n_ints && a->type != 7)) return false;
    *v = a->ints;
    *n = a->n_ints;
    return true;
}

int64_t bp__ox_fresh_dim(bp__ox_op *x, int out, int k)
{
    int32_t t = bp__ox_out(x, out);
    const char *hint = t >= 0 ? bp__names_get(&x->c->tn, t) : x->nd->name;
    return bp__ox_fresh(x->c, hint, k);
}

bp_status bp__ox_set_out(bp__ox_op *x, int i, bp_dtype dt, int rank, const int64_t *dims)
{
    int32_t t = bp__ox_out(x, i);
    if (t < 0) return BP_OK;
    for (int j = 0; j < rank; j++)
        if (dims[j] >= 0 && dims[j] > ((int64_t)1 << 62)) return bp__ox_bad(x, "output dimension %d is too large (%lld)", j, (long long)dims[j]);
    return bp__ox_set_shape(x->c, t, dt, rank, dims, x->err);
}

bp_status bp__ox_set_unknown(bp__ox_op *x, int i, bp_dtype dt) { return bp__ox_set_out(x, i, dt, -1, NULL); }

bool bp__ox_in0_rank(bp__ox_op *x, int min_rank, const char *what, bp__ox_arg *a)
{
    int32_t t = bp__ox_in(x, 0);
    a->r = bp__ox_rank(x, t);
    a->dt = bp__ox_dt(x, t);
    a->d = NULL;
    a->s = BP_OK;
    if (a->r < 0) a->s = bp__ox_set_unknown(x, 0, a->dt);
    else if (a->r < min_rank) a->s = bp__ox_bad(x, "input has rank %d (needs at least %d: %s)", a->r, min_rank, what);
    else { a->d = bp__ox_shape(x, t); return false; }
    return true;
}

/* Output i gets input t's type and shape (and values when pass_val). */
bp_status bp__ox_copy_shape(bp__ox_op *x, int i, int32_t t, bp_dtype dt, bool pass_val)
{
    if (dt == BP_DT_UNKNOWN) dt = bp__ox_dt(x, t);
    bp_status s = bp__ox_set_out(x, i, dt, bp__ox_rank(x, t), bp__ox_rank(x, t) >= 0 ? bp__ox_shape(x, t) : NULL);
    if (s || !pass_val) return s;
    const bp__ox_val *v = bp__ox_vals(x, t);
    int32_t o = bp__ox_out(x, i);
    if (!v || o < 0) return BP_OK;
    return v->is_float ? bp__ox_set_fval(x->c, o, v->n, v->f, x->err) : bp__ox_set_ival(x->c, o, v->n, v->i, v->sym, x->err);
}

bool bp__ox_all_static(const int64_t *d, int r)
{
    for (int i = 0; i < r; i++) if (d[i] < 0) return false;
    return true;
}

/* Elements of a static shape; -1 when symbolic or too large. */
int64_t bp__ox_numel(const int64_t *d, int r)
{
    int64_t n = 1;
    for (int i = 0; i < r; i++) {
        if (d[i] < 0) return -1;
        if (d[i] && n > INT64_MAX / d[i]) return -1;
        n *= d[i];
    }
    return n;
}

int64_t bp__ox_t_numel(const bp__ox_op *x, int32_t t)
{
    return bp__ox_rank(x, t) < 0 ? -1 : bp__ox_numel(bp__ox_shape(x, t), bp__ox_rank(x, t));
}

/* Multidirectional broadcasting of the inputs listed in ids[]. */
bp_status bp__ox_broadcast(bp__ox_op *x, const int32_t *ids, int n, int *rank, int64_t *out)
{
    int r = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0) continue;
        if (bp__ox_rank(x, ids[i]) < 0) { *rank = -1; return BP_OK; }
        if (bp__ox_rank(x, ids[i]) > r) r = bp__ox_rank(x, ids[i]);
    }
    for (int j = 0; j < r; j++) {
        int64_t res = 1;
        bool clash_sym = false;
        for (int i = 0; i < n; i++) {
            if (ids[i] < 0) continue;
            int ri = bp__ox_rank(x, ids[i]);
            int p = j - (r - ri);
            if (p < 0) continue;
            int64_t d = bp__ox_shape(x, ids[i])[p];
            if (d == 1) continue;
            if (res == 1) { res = d; continue; }
            if (res == d) continue;
            if (res >= 0 && d >= 0)
                return bp__ox_bad(x, "inputs cannot be broadcast: dimension %d is %lld in one input and %lld in another", j,
                                  (long long)res, (long long)d);
            if (d >= 0) { res = d; clash_sym = false; continue; }
            if (res < 0) clash_sym = true;   /* two different symbols */
        }
        if (clash_sym) BP__OX_FRESH(res, 0, j);
        out[j] = res;
    }
    *rank = r;
    return BP_OK;
}

/* Flat index into an input of shape (in, ri) broadcast to (out, r). */
int64_t bp__ox_bidx(const int64_t *out, int r, const int64_t *in, int ri, int64_t o)
{
    int64_t idx = 0, stride = 1;
    for (int j = r - 1; j >= 0; j--) {
        int64_t c = o % out[j];
        o /= out[j];
        int p = j - (r - ri);
        if (p < 0) continue;
        if (in[p] != 1) idx += c * stride;
        stride *= in[p];
    }
    return idx;
}

/* Reads a 1-D (or scalar) integer value as a list; false when unknown or symbolic. */
bool bp__ox_ints_of(const bp__ox_op *x, int32_t t, int64_t *out, size_t cap, size_t *n)
{
    const bp__ox_val *v = bp__ox_vals(x, t);
    if (!v || v->n > cap) return false;
    for (uint32_t i = 0; i < v->n; i++) {
        if (bp__ox_val_has_sym(v, i)) return false;
        out[i] = v->is_float ? bp__ox_f2i(v->f[i]) : v->i[i];
    }
    *n = v->n;
    return true;
}

/* Sets output i to integer values (with symbols). */
bp_status bp__ox_out_ival(bp__ox_op *x, int i, size_t n, const int64_t *v, const int32_t *sym)
{
    int32_t t = bp__ox_out(x, i);
    return t >= 0 ? bp__ox_set_ival(x->c, t, n, v, sym, x->err) : BP_OK;
}
bp_status bp__ox_out_fval(bp__ox_op *x, int i, size_t n, const double *v)
{
    int32_t t = bp__ox_out(x, i);
    return t >= 0 ? bp__ox_set_fval(x->c, t, n, v, x->err) : BP_OK;
}

bp_status bp__ox_fold_set(bp__ox_op *x, int out, bool is_float, size_t n, bp__ox_scratch *w)
{
    return is_float ? bp__ox_out_fval(x, out, n, w->f) : bp__ox_out_ival(x, out, n, w->i, w->s);
}

/* Axes from the attribute (old opsets) or input in_idx (new); false when absent. */
bool bp__ox_get_axes(bp__ox_op *x, int since_input, int in_idx, int64_t *ax, size_t *n, bool *known)
{
    *known = true;
    if (x->opset < since_input) {
        const int64_t *v;
        if (!bp__ox_attr_ints(x, "axes", &v, n)) return false;
        if (*n > MR) { *known = false; return true; }
        memcpy(ax, v, *n * sizeof *v);
        return true;
    }
    int32_t t = bp__ox_in(x, in_idx);
    if (t < 0) return false;
    if (!bp__ox_ints_of(x, t, ax, MR, n)) *known = false;
    return true;
}

#endif /* BP_HAVE_ONNX */
