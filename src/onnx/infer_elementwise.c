/*
 * infer_elementwise.c — element-wise ops and reductions.  N-ary ops broadcast
 * their inputs (bp__ox_broadcast); unary ops keep the shape.  When every input
 * carries values the result is folded element by element with integer or
 * double arithmetic (int_apply / flt_apply; overflow and division by zero do
 * not fold).  Integer values may be symbols: identities keep the symbol,
 * equal symbols compare, a symbol (a size, >= 0) compared with a negative
 * constant folds, anything else becomes a fresh symbol.  Integer division
 * truncates toward zero and Mod follows the divisor's sign unless fmod=1, as
 * in the ONNX runtime.  Reductions drop or keep the reduced axes; a full 1-D
 * ReduceProd/Sum/Max/Min of an integer value folds.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <math.h>
#include <string.h>

#define MR BP__OX_MAX_RANK

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_POW, OP_MIN, OP_MAX, OP_EQ, OP_LT, OP_GT, OP_LE, OP_GE,
       OP_AND, OP_OR, OP_XOR, OP_SUM, OP_MEAN, OP_BITSHIFT, OP_OTHER };

static int binop_code(const char *op)
{
    static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Min", "Max", "Equal", "Less", "Greater",
                                        "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Sum", "Mean", "BitShift"};
    for (int i = 0; i < OP_OTHER; i++) if (!strcmp(op, names[i])) return i;
    return OP_OTHER;
}

static bool int_apply(int code, int64_t a, int64_t b, bool fmod_, int64_t *r)
{
    switch (code) {
    case OP_ADD: case OP_SUM: return !__builtin_add_overflow(a, b, r);
    case OP_SUB: return !__builtin_sub_overflow(a, b, r);
    case OP_MUL: return !__builtin_mul_overflow(a, b, r);
    case OP_DIV: if (!b || (a == INT64_MIN && b == -1)) return false; *r = a / b; return true;
    case OP_MOD:
        if (!b || (a == INT64_MIN && b == -1)) return false;
        *r = a % b;
        if (!fmod_ && *r && ((*r < 0) != (b < 0))) *r += b;
        return true;
    case OP_POW: {
        if (b < 0) return false;
        /* by squaring: O(log b), whatever exponent the model gives */
        int64_t p = 1, base = a;
        if (a == 0 || a == 1) { *r = b == 0 ? 1 : a; return true; }
        if (a == -1) { *r = (b & 1) ? -1 : 1; return true; }
        for (int64_t e = b; e > 0; e >>= 1) {
            if ((e & 1) && __builtin_mul_overflow(p, base, &p)) return false;
            if (e > 1 && __builtin_mul_overflow(base, base, &base)) return false;
        }
        *r = p;
        return true;
    }
    case OP_MIN: *r = a < b ? a : b; return true;
    case OP_MAX: *r = a > b ? a : b; return true;
    case OP_EQ: *r = a == b; return true;
    case OP_LT: *r = a < b; return true;
    case OP_GT: *r = a > b; return true;
    case OP_LE: *r = a <= b; return true;
    case OP_GE: *r = a >= b; return true;
    case OP_AND: *r = a && b; return true;
    case OP_OR: *r = a || b; return true;
    case OP_XOR: *r = !a != !b; return true;
    default: return false;
    }
}

static bool flt_apply(int code, double a, double b, bool fmod_, double *r)
{
    switch (code) {
    case OP_ADD: case OP_SUM: *r = a + b; return true;
    case OP_SUB: *r = a - b; return true;
    case OP_MUL: *r = a * b; return true;
    case OP_DIV: if (b == 0) return false; *r = a / b; return true;
    case OP_MOD: if (b == 0) return false; *r = fmod(a, b); if (!fmod_ && *r != 0 && ((*r < 0) != (b < 0))) *r += b; return true;
    case OP_POW: *r = pow(a, b); return true;
    case OP_MIN: *r = a < b ? a : b; return true;
    case OP_MAX: *r = a > b ? a : b; return true;
    case OP_EQ: *r = a == b; return true;
    case OP_LT: *r = a < b; return true;
    case OP_GT: *r = a > b; return true;
    case OP_LE: *r = a <= b; return true;
    case OP_GE: *r = a >= b; return true;
    default: return false;
    }
}

/* Folds a broadcast binary/variadic op when every input has values. */
static bp_status fold_nary(bp__ox_op *x, int code, const int32_t *ids, int n, bp_dtype out_dt, int r, const int64_t *od)
{
    if (code == OP_OTHER || code == OP_BITSHIFT || r < 0 || !bp__ox_all_static(od, r)) return BP_OK;
    int64_t total = bp__ox_numel(od, r);
    if (total < 0 || total > BP__OX_VALUE_LIMIT) return BP_OK;
    bool in_float = false;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || !bp__ox_vals(x, ids[i]) || (int64_t)bp__ox_vals(x, ids[i])->n != bp__ox_t_numel(x, ids[i])) return BP_OK;
        in_float |= bp__ox_vals(x, ids[i])->is_float != 0;
    }
    bool cmp = code >= OP_EQ && code <= OP_XOR;
    bool res_float = cmp ? false : bp__ox_is_float_dt(out_dt);
    bool fm = bp__ox_attr_i(x, "fmod", 0) != 0;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (int64_t o = 0; o < total && ok; o++) {
        w->s[o] = -1;
        const bp__ox_val *v0 = bp__ox_vals(x, ids[0]);
        int64_t i0 = bp__ox_bidx(od, r, bp__ox_shape(x, ids[0]), bp__ox_rank(x, ids[0]), o);
        bool fsym = false;
        int32_t sym0 = bp__ox_val_has_sym(v0, (uint32_t)i0) ? v0->sym[i0] : -1;
        double af = bp__ox_val_f(v0, (uint32_t)i0);
        int64_t ai = v0->is_float ? bp__ox_f2i(v0->f[i0]) : v0->i[i0];
        for (int q = 1; q < n && ok; q++) {
            const bp__ox_val *v = bp__ox_vals(x, ids[q]);
            int64_t iq = bp__ox_bidx(od, r, bp__ox_shape(x, ids[q]), bp__ox_rank(x, ids[q]), o);
            int32_t symq = bp__ox_val_has_sym(v, (uint32_t)iq) ? v->sym[iq] : -1;
            if (sym0 >= 0 || symq >= 0) {
                /* symbolic operands: identities keep the symbol, equal
                 * symbols compare, anything else becomes a fresh symbol */
                int64_t bi = v->is_float ? bp__ox_f2i(v->f[iq]) : v->i[iq];
                if (symq < 0 && ((code == OP_ADD || code == OP_SUB) && bi == 0)) continue;
                if (symq < 0 && ((code == OP_MUL || code == OP_DIV) && bi == 1)) continue;
                if (sym0 < 0 && code == OP_ADD && ai == 0 && !fsym) { sym0 = symq; continue; }
                if (sym0 < 0 && code == OP_MUL && ai == 1 && !fsym) { sym0 = symq; continue; }
                if (sym0 >= 0 && sym0 == symq && (code == OP_EQ || code == OP_LE || code == OP_GE)) { sym0 = -1; ai = 1; continue; }
                if (sym0 >= 0 && sym0 == symq && (code == OP_LT || code == OP_GT)) { sym0 = -1; ai = 0; continue; }
                if (sym0 >= 0 && sym0 == symq && (code == OP_MIN || code == OP_MAX)) continue;
                if (sym0 >= 0 && sym0 == symq && code == OP_SUB) { sym0 = -1; ai = 0; continue; }
                /* symbols stand for sizes (>= 0): compare with a negative constant */
                if (cmp && !fsym && (sym0 < 0) != (symq < 0) && code <= OP_GE) {
                    int64_t c = sym0 < 0 ? ai : bi;
                    bool sym_left = sym0 >= 0;
                    if (c < 0) {
                        bool gt = true;   /* sym > c */
                        int64_t res;
                        switch (code) {
                        case OP_EQ: res = 0; break;
                        case OP_LT: case OP_LE: res = sym_left ? !gt : gt; break;
                        default: res = sym_left ? gt : !gt; break;
                        }
                        sym0 = -1; ai = res; af = (double)res;
                        continue;
                    }
                }
                if (cmp || res_float || in_float) { ok = false; break; }
                fsym = true;
                sym0 = 0;
                continue;
            }
            if (res_float || in_float) {
                double b = bp__ox_val_f(v, (uint32_t)iq);
                if (!flt_apply(code == OP_MEAN ? OP_ADD : code, af, b, fm, &af)) ok = false;
                ai = bp__ox_f2i(af);
            } else {
                int64_t b = v->i[iq];
                if (!int_apply(code == OP_MEAN ? OP_ADD : code, ai, b, fm, &ai)) ok = false;
                af = (double)ai;
            }
        }
        if (!ok) break;
        if (code == OP_MEAN) { af /= n; ai /= n; }
        if (fsym) {
            int64_t d = bp__ox_fresh_dim(x, 0, (int)o + 1000);
            if (!d) { ok = false; break; }
            w->s[o] = (int32_t)(-d - 1);
            w->i[o] = 0;
        } else if (sym0 >= 0) {
            w->s[o] = sym0;
            w->i[o] = 0;
        } else if (res_float) {
            w->f[o] = af;
        } else {
            w->i[o] = cmp ? (in_float ? (af != 0) : ai) : (in_float ? bp__ox_f2i(af) : ai);
        }
    }
    bp_status s = ok ? bp__ox_fold_set(x, 0, res_float, (size_t)total, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

/* Binary ops before opset 7 with broadcast=1: B is broadcast to A (from
 * `axis`, or aligned at the end), so the output has A's shape; not folded. */
static bp_status legacy_broadcast(bp__ox_op *x, int32_t a, bp_dtype dt)
{
    bp_status s = bp__ox_copy_shape(x, 0, a, dt, false);
    int64_t ne = bp__ox_t_numel(x, a);
    x->nd->cost = ne > 0 ? (double)ne : 0;
    return s;
}

bp_status bp__ox_inf_nary(bp__ox_op *x)
{
    int n = x->nd->n_in;
    int32_t ids[256];
    if (n < 1) return bp__ox_bad(x, "it has no inputs (it needs at least one)");
    if (n > 256) n = 256;
    for (int i = 0; i < n; i++) ids[i] = bp__ox_in(x, i);
    int code = binop_code(x->op);
    bp_dtype dt = BP_DT_UNKNOWN;
    for (int i = 0; i < n && dt == BP_DT_UNKNOWN; i++) dt = bp__ox_dt(x, ids[i]);
    if (code >= OP_EQ && code <= OP_GE) dt = BP_DT_BOOL;
    if (code >= OP_AND && code <= OP_XOR) dt = BP_DT_BOOL;
    bool where = !strcmp(x->op, "Where");
    if (where && n != 3) return bp__ox_bad(x, "Where needs 3 inputs");
    if (where) dt = bp__ox_dt(x, ids[1]) != BP_DT_UNKNOWN ? bp__ox_dt(x, ids[1]) : bp__ox_dt(x, ids[2]);
    if (x->opset < 7 && n == 2 && code <= OP_XOR && code != OP_MOD && code != OP_MIN && code != OP_MAX && bp__ox_attr_i(x, "broadcast", 0))
        return legacy_broadcast(x, ids[0], dt);
    int r = -1;
    int64_t od[MR] = {0};
    bp_status s = bp__ox_broadcast(x, ids, n, &r, od);
    if (s) return s;
    if ((s = bp__ox_set_out(x, 0, dt, r, od))) return s;
    x->nd->cost = r >= 0 && bp__ox_numel(od, r) >= 0 ? (double)bp__ox_numel(od, r) * (n > 1 ? n - 1 : 1) : 0;
    if (where) {
        /* fold Where(cond, a, b) */
        if (r < 0 || !bp__ox_all_static(od, r)) return BP_OK;
        int64_t total = bp__ox_numel(od, r);
        if (total < 0 || total > BP__OX_VALUE_LIMIT) return BP_OK;
        const bp__ox_val *vc = bp__ox_vals(x, ids[0]), *va = bp__ox_vals(x, ids[1]), *vb = bp__ox_vals(x, ids[2]);
        if (!vc || !va || !vb || va->is_float != vb->is_float) return BP_OK;
        if ((int64_t)vc->n != bp__ox_t_numel(x, ids[0]) || (int64_t)va->n != bp__ox_t_numel(x, ids[1]) || (int64_t)vb->n != bp__ox_t_numel(x, ids[2])) return BP_OK;
        bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
        if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
        bool ok = true;
        for (int64_t o = 0; o < total && ok; o++) {
            int64_t ic = bp__ox_bidx(od, r, bp__ox_shape(x, ids[0]), bp__ox_rank(x, ids[0]), o);
            if (bp__ox_val_has_sym(vc, (uint32_t)ic)) { ok = false; break; }
            bool cond = vc->is_float ? vc->f[ic] != 0 : vc->i[ic] != 0;
            int32_t src = cond ? ids[1] : ids[2];
            const bp__ox_val *v = cond ? va : vb;
            int64_t is = bp__ox_bidx(od, r, bp__ox_shape(x, src), bp__ox_rank(x, src), o);
            bp__ox_scratch_take(w, (size_t)o, v, (uint32_t)is);
        }
        if (ok) s = bp__ox_fold_set(x, 0, va->is_float, (size_t)total, w);
        bp__free(x->c->a, w, sizeof *w);
        return s;
    }
    return fold_nary(x, code, ids, n, dt, r, od);
}

/* Unary element-wise ops: same shape; some fold. */
bp_status bp__ox_inf_unary(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    bp_dtype dt = bp__ox_dt(x, a);
    const char *op = x->op;
    if (!strcmp(op, "Not") || !strcmp(op, "IsNaN") || !strcmp(op, "IsInf")) dt = BP_DT_BOOL;
    if (!strcmp(op, "Bernoulli") && bp__ox_attr(x, "dtype")) dt = bp__ox_dtype((int32_t)bp__ox_attr_i(x, "dtype", 1));
    bp_status s = bp__ox_copy_shape(x, 0, a, dt, false);
    if (s) return s;
    int64_t n = bp__ox_t_numel(x, a);
    x->nd->cost = n >= 0 ? (double)n : 0;
    const bp__ox_val *v = bp__ox_vals(x, a);
    if (!v || (int64_t)v->n != n) return BP_OK;
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (uint32_t i = 0; i < v->n && ok; i++) {
        if (bp__ox_val_has_sym(v, i)) { ok = false; break; }
        if (v->is_float) {
            double f = v->f[i], r;
            if (!strcmp(op, "Neg")) r = -f;
            else if (!strcmp(op, "Abs")) r = fabs(f);
            else if (!strcmp(op, "Floor")) r = floor(f);
            else if (!strcmp(op, "Ceil")) r = ceil(f);
            else if (!strcmp(op, "Round")) r = nearbyint(f);
            else if (!strcmp(op, "Sqrt")) r = sqrt(f);
            else if (!strcmp(op, "Reciprocal")) { if (f == 0) { ok = false; break; } r = 1 / f; }
            else if (!strcmp(op, "Relu")) r = f > 0 ? f : 0;
            else if (!strcmp(op, "Sign")) r = (f > 0) - (f < 0);
            else if (!strcmp(op, "Not")) { w->i[i] = f == 0; w->s[i] = -1; continue; }
            else { ok = false; break; }
            w->f[i] = r;
        } else {
            int64_t q = v->i[i], r;
            if (!strcmp(op, "Neg")) { if (q == INT64_MIN) { ok = false; break; } r = -q; }
            else if (!strcmp(op, "Abs")) { if (q == INT64_MIN) { ok = false; break; } r = q < 0 ? -q : q; }
            else if (!strcmp(op, "Floor") || !strcmp(op, "Ceil") || !strcmp(op, "Round")) r = q;
            else if (!strcmp(op, "Relu")) r = q > 0 ? q : 0;
            else if (!strcmp(op, "Sign")) r = (q > 0) - (q < 0);
            else if (!strcmp(op, "Not")) r = q == 0;
            else { ok = false; break; }
            w->i[i] = r;
            w->s[i] = -1;
        }
    }
    bool f = v->is_float && dt != BP_DT_BOOL;
    s = ok ? bp__ox_fold_set(x, 0, f, v->n, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_identity(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0), o = bp__ox_out(x, 0);
    bp_status s = bp__ox_copy_shape(x, 0, a, BP_DT_UNKNOWN, true);
    if (s) return s;
    if (a >= 0 && o >= 0) x->c->t[o].not_sized = x->c->t[a].not_sized;   /* a sequence or optional stays one */
    if (!strcmp(x->op, "Dropout") && bp__ox_out(x, 1) >= 0 && x->opset >= 10)
        s = bp__ox_copy_shape(x, 1, bp__ox_in(x, 0), BP_DT_BOOL, false);   /* the mask; opset < 10: not inferred, as onnx */
    return s;
}

/* Cast-1's `to` is a type name ("FLOAT", "INT64", ...): the TensorProto.DataType of that position. */
static bp_dtype cast1_type(const Onnx__AttributeProto *at)
{
    static const char *const names[] = {"FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL",
                                        "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (at->s.len == strlen(names[i]) && !memcmp(at->s.data, names[i], at->s.len)) return bp__ox_dtype(i + 1);
    return BP_DT_UNKNOWN;
}

bp_status bp__ox_inf_cast(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    bp_dtype dt;
    if (!strcmp(x->op, "CastLike")) dt = bp__ox_dt(x, bp__ox_in(x, 1));
    else if (x->opset < 6 && bp__ox_attr(x, "to") && bp__ox_attr(x, "to")->has_s) {
        dt = cast1_type(bp__ox_attr(x, "to"));   /* Cast-1: the type by name */
        if (dt == BP_DT_UNKNOWN && bp__ox_out(x, 0) >= 0) x->c->t[bp__ox_out(x, 0)].not_sized = 1;
    } else {
        dt = bp__ox_dtype((int32_t)bp__ox_attr_i(x, "to", 0));
        if (dt == BP_DT_UNKNOWN && bp__ox_out(x, 0) >= 0) x->c->t[bp__ox_out(x, 0)].not_sized = 1;
    }
    bp_status s = bp__ox_copy_shape(x, 0, a, dt, false);
    if (s) return s;
    const bp__ox_val *v = bp__ox_vals(x, a);
    if (!v || dt == BP_DT_UNKNOWN) return BP_OK;
    bool to_f = bp__ox_is_float_dt(dt);
    bp__ox_scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (uint32_t i = 0; i < v->n && ok; i++) {
        w->s[i] = -1;
        if (bp__ox_val_has_sym(v, i)) {
            if (to_f || dt == BP_DT_BOOL) ok = false;
            else { w->s[i] = v->sym[i]; w->i[i] = 0; }
            continue;
        }
        if (to_f) {
            double f = bp__ox_val_f(v, i);
            if (dt == BP_DT_F32) f = (float)f;
            w->f[i] = f;
        } else if (dt == BP_DT_BOOL) {
            w->i[i] = v->is_float ? v->f[i] != 0 : v->i[i] != 0;
        } else if (v->is_float) {
            double f = v->f[i];
            if (!(f > -9.2e18 && f < 9.2e18)) { ok = false; break; }
            w->i[i] = (int64_t)f;
        } else {
            w->i[i] = v->i[i];
        }
    }
    s = ok ? bp__ox_fold_set(x, 0, to_f, v->n, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

bp_status bp__ox_inf_reduce(bp__ox_op *x)
{
    int32_t a = bp__ox_in(x, 0);
    int r = bp__ox_rank(x, a);
    bool arg = !strncmp(x->op, "Arg", 3);
    bp_dtype dt = arg ? BP_DT_I64 : bp__ox_dt(x, a);
    if (r < 0) return bp__ox_set_unknown(x, 0, dt);
    bool keep = bp__ox_attr_i(x, "keepdims", 1) != 0;
    bool red[MR] = {false};
    if (arg) {
        int64_t q = bp__ox_norm_axis(bp__ox_attr_i(x, "axis", 0), r);
        if (q < 0 || q >= r) return bp__ox_bad(x, "axis out of range");
        red[q] = true;
    } else {
        int64_t ax[MR];
        size_t n = 0;
        bool known;
        int since = !strcmp(x->op, "ReduceSum") ? 13 : 18;
        bool have = bp__ox_get_axes(x, since, 1, ax, &n, &known);
        if (!known) {
            if (keep) {
                int64_t d[MR] = {0};
                for (int i = 0; i < r; i++) BP__OX_FRESH(d[i], 0, i);
                return bp__ox_set_out(x, 0, dt, r, d);
            }
            return bp__ox_set_unknown(x, 0, dt);
        }
        if (!have || n == 0) {
            if (x->opset >= since && bp__ox_attr_i(x, "noop_with_empty_axes", 0)) return bp__ox_copy_shape(x, 0, a, dt, true);
            for (int i = 0; i < r; i++) red[i] = true;
        }
        for (size_t i = 0; i < n; i++) {
            int64_t q = bp__ox_norm_axis(ax[i], r);
            if (q < 0 || q >= r) return bp__ox_bad(x, "axis %lld is out of range for rank %d", (long long)ax[i], r);
            red[q] = true;
        }
    }
    int64_t d[MR] = {0};
    int ro = 0;
    for (int i = 0; i < r; i++) {
        if (!red[i]) d[ro++] = bp__ox_shape(x, a)[i];
        else if (keep) d[ro++] = 1;
    }
    bp_status s = bp__ox_set_out(x, 0, dt, ro, d);
    if (s) return s;
    int64_t ne = bp__ox_t_numel(x, a);
    x->nd->cost = ne > 0 ? (double)ne : 0;
    /* fold ReduceProd / ReduceSum / ReduceMax / ReduceMin of a full 1-D value */
    const bp__ox_val *v = bp__ox_vals(x, a);
    if (!v || r != 1 || !red[0] || v->is_float || (int64_t)v->n != ne) return BP_OK;
    int code = !strcmp(x->op, "ReduceProd") ? OP_MUL : !strcmp(x->op, "ReduceSum") ? OP_ADD
             : !strcmp(x->op, "ReduceMax") ? OP_MAX : !strcmp(x->op, "ReduceMin") ? OP_MIN : OP_OTHER;
    if (code == OP_OTHER || !v->n) return BP_OK;
    int64_t acc = v->i[0];
    for (uint32_t i = 0; i < v->n; i++) {
        if (bp__ox_val_has_sym(v, i)) return BP_OK;
        if (i && !int_apply(code, acc, v->i[i], false, &acc)) return BP_OK;
    }
    return bp__ox_out_ival(x, 0, 1, &acc, NULL);
}

#endif /* BP_HAVE_ONNX */
