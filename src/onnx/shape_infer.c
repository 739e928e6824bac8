/*
 * shape_infer.c — ONNX shape inference and constant folding, one function
 * per operator family, called by onnx_import.c in topological order.
 *
 * Each function reads its inputs' types and shapes (and values, for small
 * tensors) and sets its outputs'.  Dimensions are known sizes or symbols; the
 * rules keep symbols where the answer is still that symbol (Add of [N,3] and
 * [N,3] is [N,3]; Reshape to [N,-1] of [N,512,1,1] is [N,512]) and make a
 * fresh symbol where it is not known (Conv over a symbolic height).  A rank
 * that cannot be known is left at -1: the importer makes the tensor dynamic.
 *
 * Folding: integer (and small float) tensors carry values, so the shape
 * arithmetic that exporters emit (Shape, Gather, Unsqueeze, Concat, Cast,
 * Div, Mod, Slice, Range, ConstantOfShape, Where, Equal, ...) is evaluated
 * and the Reshape / Expand / Pad / Slice / Resize fed by it get static
 * shapes.  Integer values may hold symbols (Shape of [N,3] is [N,3]), so
 * Reshape(x, Concat(Gather(Shape(x), 0), -1)) keeps N.  Integer division
 * truncates toward zero and Mod follows the divisor's sign unless fmod=1,
 * as in the ONNX runtime.  Division by zero does not fold.
 *
 * Cost: FLOPs from the shapes (2*M*N*K for MatMul/Gemm, 2*out*Cin/g*k for
 * Conv, output elements for element-wise ops), 0 when unknown.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct X {
    bp__ox *c;
    int32_t k;
    bp__ox_node *nd;
    const Onnx__NodeProto *np;
    const char *op;
    int64_t opset;
    bp_error *err;
} X;

#define MR BP__OX_MAX_RANK

/* ---------------------------------------------------------------- access */

static int32_t IN(const X *x, int i) { return i < x->nd->n_in ? x->c->io[x->nd->in_off + i] : -1; }
static int32_t OUT(const X *x, int i) { return i < x->nd->n_out ? x->c->io[x->nd->out_off + i] : -1; }
static int RANK(const X *x, int32_t t) { return t >= 0 ? x->c->t[t].rank : -1; }
static const int64_t *DIMS(const X *x, int32_t t) { return bp__ox_dims(x->c, t); }
static bp_dtype DT(const X *x, int32_t t) { return t >= 0 ? (bp_dtype)x->c->t[t].dtype : BP_DT_UNKNOWN; }
static const bp__ox_val *VAL(const X *x, int32_t t) { return bp__ox_value(x->c, t); }

static bp_status bad(const X *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bp_status bad(const X *x, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bp__err(x->err, BP_ERR_INVALID, "%s: node \"%s\" (%s): %s", x->c->file, x->nd->name, x->op, msg);
}

static const Onnx__AttributeProto *attr(const X *x, const char *name)
{
    for (size_t i = 0; i < x->np->n_attribute; i++)
        if (x->np->attribute[i]->name && !strcmp(x->np->attribute[i]->name, name)) return x->np->attribute[i];
    return NULL;
}
static int64_t attr_i(const X *x, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = attr(x, name);
    return a && a->has_i ? a->i : def;
}
/* 1 when the string attribute equals s (0 when absent or different). */
static bool attr_s_is(const X *x, const char *name, const char *s)
{
    const Onnx__AttributeProto *a = attr(x, name);
    return a && a->has_s && a->s.len == strlen(s) && !memcmp(a->s.data, s, a->s.len);
}
static bool attr_ints(const X *x, const char *name, const int64_t **v, size_t *n)
{
    const Onnx__AttributeProto *a = attr(x, name);
    if (!a || (!a->n_ints && a->type != 7)) return false;
    *v = a->ints;
    *n = a->n_ints;
    return true;
}

/* ----------------------------------------------------------------- dims */

static int64_t fresh(X *x, int out, int k)
{
    int32_t t = OUT(x, out);
    const char *hint = t >= 0 ? bp__names_get(&x->c->tn, t) : x->nd->name;
    return bp__ox_fresh(x->c, hint, k);
}

#define FRESH(var, out, k) do { (var) = fresh(x, (out), (k)); if (!(var)) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file); } while (0)

static bp_status set_out(X *x, int i, bp_dtype dt, int rank, const int64_t *dims)
{
    int32_t t = OUT(x, i);
    if (t < 0) return BP_OK;
    for (int j = 0; j < rank; j++)
        if (dims[j] >= 0 && dims[j] > ((int64_t)1 << 62)) return bad(x, "output dimension %d is too large (%lld)", j, (long long)dims[j]);
    return bp__ox_set_shape(x->c, t, dt, rank, dims, x->err);
}

static bp_status set_unknown(X *x, int i, bp_dtype dt) { return set_out(x, i, dt, -1, NULL); }

/* Output i gets input t's type and shape (and values when pass_val). */
static bp_status copy_shape(X *x, int i, int32_t t, bp_dtype dt, bool pass_val)
{
    if (dt == BP_DT_UNKNOWN) dt = DT(x, t);
    bp_status s = set_out(x, i, dt, RANK(x, t), RANK(x, t) >= 0 ? DIMS(x, t) : NULL);
    if (s || !pass_val) return s;
    const bp__ox_val *v = VAL(x, t);
    int32_t o = OUT(x, i);
    if (!v || o < 0) return BP_OK;
    return v->is_float ? bp__ox_set_fval(x->c, o, v->n, v->f, x->err) : bp__ox_set_ival(x->c, o, v->n, v->i, v->sym, x->err);
}

static int64_t norm_axis(int64_t a, int r) { return a < 0 ? a + r : a; }

static bool all_static(const int64_t *d, int r)
{
    for (int i = 0; i < r; i++) if (d[i] < 0) return false;
    return true;
}

/* Elements of a static shape; -1 when symbolic or too large. */
static int64_t numel(const int64_t *d, int r)
{
    int64_t n = 1;
    for (int i = 0; i < r; i++) {
        if (d[i] < 0) return -1;
        if (d[i] && n > INT64_MAX / d[i]) return -1;
        n *= d[i];
    }
    return n;
}

static int64_t t_numel(const X *x, int32_t t)
{
    return RANK(x, t) < 0 ? -1 : numel(DIMS(x, t), RANK(x, t));
}

/* Product of dims where the result stays exact: a single symbol times 1 is
 * that symbol, anything else symbolic is fresh. */
static bp_status dim_prod(X *x, const int64_t *d, int n, int out, int k, int64_t *res)
{
    int64_t c = 1, sym = 0;
    int nsym = 0;
    for (int i = 0; i < n; i++) {
        if (d[i] < 0) { sym = d[i]; nsym++; continue; }
        if (d[i] && c > INT64_MAX / d[i]) return bad(x, "a dimension product overflows");
        c *= d[i];
    }
    if (!nsym || c == 0) { *res = c; return BP_OK; }
    if (nsym == 1 && c == 1) { *res = sym; return BP_OK; }
    FRESH(*res, out, k);
    return BP_OK;
}

/* Multidirectional broadcasting of the inputs listed in ids[]. */
static bp_status broadcast(X *x, const int32_t *ids, int n, int *rank, int64_t *out)
{
    int r = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0) continue;
        if (RANK(x, ids[i]) < 0) { *rank = -1; return BP_OK; }
        if (RANK(x, ids[i]) > r) r = RANK(x, ids[i]);
    }
    for (int j = 0; j < r; j++) {
        int64_t res = 1;
        bool clash_sym = false;
        for (int i = 0; i < n; i++) {
            if (ids[i] < 0) continue;
            int ri = RANK(x, ids[i]);
            int p = j - (r - ri);
            if (p < 0) continue;
            int64_t d = DIMS(x, ids[i])[p];
            if (d == 1) continue;
            if (res == 1) { res = d; continue; }
            if (res == d) continue;
            if (res >= 0 && d >= 0)
                return bad(x, "inputs cannot be broadcast: dimension %d is %lld in one input and %lld in another", j,
                           (long long)res, (long long)d);
            if (d >= 0) { res = d; clash_sym = false; continue; }
            if (res < 0) clash_sym = true;   /* two different symbols */
        }
        if (clash_sym) FRESH(res, 0, j);
        out[j] = res;
    }
    *rank = r;
    return BP_OK;
}

/* ---------------------------------------------------------------- values */

/* Flat index into an input of shape (in, ri) broadcast to (out, r). */
static int64_t bidx(const int64_t *out, int r, const int64_t *in, int ri, int64_t o)
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

static bool val_has_sym(const bp__ox_val *v, uint32_t k) { return v->sym && v->sym[k] >= 0; }

/* Value element k as a dimension code (a symbol or a number). */
static int64_t val_dim(const bp__ox_val *v, uint32_t k)
{
    if (val_has_sym(v, k)) return -(int64_t)v->sym[k] - 1;
    return v->is_float ? (int64_t)v->f[k] : v->i[k];
}

static bool is_float_dt(bp_dtype d)
{
    return d == BP_DT_F32 || d == BP_DT_F64 || d == BP_DT_F16 || d == BP_DT_BF16 || d == BP_DT_F8;
}

static double val_f(const bp__ox_val *v, uint32_t k) { return v->is_float ? v->f[k] : (double)v->i[k]; }

/* Reads a 1-D (or scalar) integer value as a list; false when unknown or symbolic. */
static bool ints_of(const X *x, int32_t t, int64_t *out, size_t cap, size_t *n)
{
    const bp__ox_val *v = VAL(x, t);
    if (!v || v->n > cap) return false;
    for (uint32_t i = 0; i < v->n; i++) {
        if (val_has_sym(v, i)) return false;
        out[i] = v->is_float ? (int64_t)v->f[i] : v->i[i];
    }
    *n = v->n;
    return true;
}

/* Sets output i to integer values (with symbols). */
static bp_status out_ival(X *x, int i, size_t n, const int64_t *v, const int32_t *sym)
{
    int32_t t = OUT(x, i);
    return t >= 0 ? bp__ox_set_ival(x->c, t, n, v, sym, x->err) : BP_OK;
}
static bp_status out_fval(X *x, int i, size_t n, const double *v)
{
    int32_t t = OUT(x, i);
    return t >= 0 ? bp__ox_set_fval(x->c, t, n, v, x->err) : BP_OK;
}

/* Scratch arrays for folding (at most BP__OX_VALUE_LIMIT elements). */
typedef struct scratch {
    int64_t i[BP__OX_VALUE_LIMIT];
    int32_t s[BP__OX_VALUE_LIMIT];
    double f[BP__OX_VALUE_LIMIT];
} scratch;

static bp_status fold_set(X *x, int out, bool is_float, size_t n, scratch *w)
{
    return is_float ? out_fval(x, out, n, w->f) : out_ival(x, out, n, w->i, w->s);
}

/* ------------------------------------------------- element-wise families */

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
        int64_t p = 1;
        for (int64_t i = 0; i < b; i++) if (__builtin_mul_overflow(p, a, &p)) return false;
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
static bp_status fold_nary(X *x, int code, const int32_t *ids, int n, bp_dtype out_dt, int r, const int64_t *od)
{
    if (code == OP_OTHER || code == OP_BITSHIFT || r < 0 || !all_static(od, r)) return BP_OK;
    int64_t total = numel(od, r);
    if (total < 0 || total > BP__OX_VALUE_LIMIT) return BP_OK;
    bool in_float = false;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || !VAL(x, ids[i]) || (int64_t)VAL(x, ids[i])->n != t_numel(x, ids[i])) return BP_OK;
        in_float |= VAL(x, ids[i])->is_float != 0;
    }
    bool cmp = code >= OP_EQ && code <= OP_XOR;
    bool res_float = cmp ? false : is_float_dt(out_dt);
    bool fm = attr_i(x, "fmod", 0) != 0;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (int64_t o = 0; o < total && ok; o++) {
        w->s[o] = -1;
        const bp__ox_val *v0 = VAL(x, ids[0]);
        int64_t i0 = bidx(od, r, DIMS(x, ids[0]), RANK(x, ids[0]), o);
        bool fsym = false;
        int32_t sym0 = val_has_sym(v0, (uint32_t)i0) ? v0->sym[i0] : -1;
        double af = val_f(v0, (uint32_t)i0);
        int64_t ai = v0->is_float ? (int64_t)v0->f[i0] : v0->i[i0];
        for (int q = 1; q < n && ok; q++) {
            const bp__ox_val *v = VAL(x, ids[q]);
            int64_t iq = bidx(od, r, DIMS(x, ids[q]), RANK(x, ids[q]), o);
            int32_t symq = val_has_sym(v, (uint32_t)iq) ? v->sym[iq] : -1;
            if (sym0 >= 0 || symq >= 0) {
                /* symbolic operands: identities keep the symbol, equal
                 * symbols compare, anything else becomes a fresh symbol */
                int64_t bi = v->is_float ? (int64_t)v->f[iq] : v->i[iq];
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
                double b = val_f(v, (uint32_t)iq);
                if (!flt_apply(code == OP_MEAN ? OP_ADD : code, af, b, fm, &af)) ok = false;
                ai = (int64_t)af;
            } else {
                int64_t b = v->i[iq];
                if (!int_apply(code == OP_MEAN ? OP_ADD : code, ai, b, fm, &ai)) ok = false;
                af = (double)ai;
            }
        }
        if (!ok) break;
        if (code == OP_MEAN) { af /= n; ai /= n; }
        if (fsym) {
            int64_t d = fresh(x, 0, (int)o + 1000);
            if (!d) { ok = false; break; }
            w->s[o] = (int32_t)(-d - 1);
            w->i[o] = 0;
        } else if (sym0 >= 0) {
            w->s[o] = sym0;
            w->i[o] = 0;
        } else if (res_float) {
            w->f[o] = af;
        } else {
            w->i[o] = cmp ? (in_float ? (af != 0) : ai) : (in_float ? (int64_t)af : ai);
        }
    }
    bp_status s = ok ? fold_set(x, 0, res_float, (size_t)total, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_nary(X *x)
{
    int n = x->nd->n_in;
    int32_t ids[256];
    if (n > 256) n = 256;
    for (int i = 0; i < n; i++) ids[i] = IN(x, i);
    int code = binop_code(x->op);
    bp_dtype dt = BP_DT_UNKNOWN;
    for (int i = 0; i < n && dt == BP_DT_UNKNOWN; i++) dt = DT(x, ids[i]);
    if (code >= OP_EQ && code <= OP_GE) dt = BP_DT_BOOL;
    if (code >= OP_AND && code <= OP_XOR) dt = BP_DT_BOOL;
    bool where = !strcmp(x->op, "Where");
    if (where && n != 3) return bad(x, "Where needs 3 inputs");
    if (where) dt = DT(x, ids[1]) != BP_DT_UNKNOWN ? DT(x, ids[1]) : DT(x, ids[2]);
    int r = -1;
    int64_t od[MR] = {0};
    bp_status s = broadcast(x, ids, n, &r, od);
    if (s) return s;
    if ((s = set_out(x, 0, dt, r, od))) return s;
    x->nd->cost = r >= 0 && numel(od, r) >= 0 ? (double)numel(od, r) * (n > 1 ? n - 1 : 1) : 0;
    if (where) {
        /* fold Where(cond, a, b) */
        if (r < 0 || !all_static(od, r)) return BP_OK;
        int64_t total = numel(od, r);
        if (total < 0 || total > BP__OX_VALUE_LIMIT) return BP_OK;
        const bp__ox_val *vc = VAL(x, ids[0]), *va = VAL(x, ids[1]), *vb = VAL(x, ids[2]);
        if (!vc || !va || !vb || va->is_float != vb->is_float) return BP_OK;
        if ((int64_t)vc->n != t_numel(x, ids[0]) || (int64_t)va->n != t_numel(x, ids[1]) || (int64_t)vb->n != t_numel(x, ids[2])) return BP_OK;
        scratch *w = bp__alloc(x->c->a, sizeof *w);
        if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
        bool ok = true;
        for (int64_t o = 0; o < total && ok; o++) {
            int64_t ic = bidx(od, r, DIMS(x, ids[0]), RANK(x, ids[0]), o);
            if (val_has_sym(vc, (uint32_t)ic)) { ok = false; break; }
            bool cond = vc->is_float ? vc->f[ic] != 0 : vc->i[ic] != 0;
            int32_t src = cond ? ids[1] : ids[2];
            const bp__ox_val *v = cond ? va : vb;
            int64_t is = bidx(od, r, DIMS(x, src), RANK(x, src), o);
            if (v->is_float) w->f[o] = v->f[is];
            else { w->i[o] = v->i[is]; w->s[o] = val_has_sym(v, (uint32_t)is) ? v->sym[is] : -1; }
        }
        if (ok) s = fold_set(x, 0, va->is_float, (size_t)total, w);
        bp__free(x->c->a, w, sizeof *w);
        return s;
    }
    return fold_nary(x, code, ids, n, dt, r, od);
}

/* Unary element-wise ops: same shape; some fold. */
static bp_status inf_unary(X *x)
{
    int32_t a = IN(x, 0);
    bp_dtype dt = DT(x, a);
    const char *op = x->op;
    if (!strcmp(op, "Not") || !strcmp(op, "IsNaN") || !strcmp(op, "IsInf")) dt = BP_DT_BOOL;
    bp_status s = copy_shape(x, 0, a, dt, false);
    if (s) return s;
    int64_t n = t_numel(x, a);
    x->nd->cost = n >= 0 ? (double)n : 0;
    const bp__ox_val *v = VAL(x, a);
    if (!v || (int64_t)v->n != n) return BP_OK;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (uint32_t i = 0; i < v->n && ok; i++) {
        if (val_has_sym(v, i)) { ok = false; break; }
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
    s = ok ? fold_set(x, 0, f, v->n, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_identity(X *x)
{
    bp_status s = copy_shape(x, 0, IN(x, 0), BP_DT_UNKNOWN, true);
    if (s) return s;
    if (!strcmp(x->op, "Dropout") && OUT(x, 1) >= 0 && x->opset >= 10)
        s = copy_shape(x, 1, IN(x, 0), BP_DT_BOOL, false);   /* the mask; opset < 10: not inferred, as onnx */
    return s;
}

static bp_status inf_cast(X *x)
{
    int32_t a = IN(x, 0);
    bp_dtype dt;
    if (!strcmp(x->op, "CastLike")) dt = DT(x, IN(x, 1));
    else {
        dt = bp__ox_dtype((int32_t)attr_i(x, "to", 0));
        if (dt == BP_DT_UNKNOWN && OUT(x, 0) >= 0) x->c->t[OUT(x, 0)].not_sized = 1;
    }
    bp_status s = copy_shape(x, 0, a, dt, false);
    if (s) return s;
    const bp__ox_val *v = VAL(x, a);
    if (!v || dt == BP_DT_UNKNOWN) return BP_OK;
    bool to_f = is_float_dt(dt);
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (uint32_t i = 0; i < v->n && ok; i++) {
        w->s[i] = -1;
        if (val_has_sym(v, i)) {
            if (to_f || dt == BP_DT_BOOL) ok = false;
            else { w->s[i] = v->sym[i]; w->i[i] = 0; }
            continue;
        }
        if (to_f) {
            double f = val_f(v, i);
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
    s = ok ? fold_set(x, 0, to_f, v->n, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

/* --------------------------------------------------------------- shapes */

static bp_status inf_shape(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    if (!strcmp(x->op, "Size")) {
        bp_status s = set_out(x, 0, BP_DT_I64, 0, NULL);
        int64_t n = r >= 0 ? numel(DIMS(x, a), r) : -1;
        if (s || n < 0) return s;
        return out_ival(x, 0, 1, &n, NULL);
    }
    if (r < 0) {
        int64_t d;
        FRESH(d, 0, 0);
        return set_out(x, 0, BP_DT_I64, 1, &d);
    }
    int64_t start = 0, end = r;
    if (!strcmp(x->op, "Shape") && x->opset >= 15) {
        start = attr_i(x, "start", 0);
        end = attr_i(x, "end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < 0 ? 0 : end > r ? r : end;
        if (end < start) end = start;
    }
    int64_t len = end - start;
    bp_status s = set_out(x, 0, BP_DT_I64, 1, &len);
    if (s) return s;
    int64_t v[MR];
    int32_t sy[MR];
    for (int64_t i = 0; i < len; i++) {
        int64_t d = DIMS(x, a)[start + i];
        v[i] = d >= 0 ? d : 0;
        sy[i] = d >= 0 ? -1 : (int32_t)(-d - 1);
    }
    return out_ival(x, 0, (size_t)len, v, sy);
}

static bp_status inf_constant(X *x)
{
    int32_t o = OUT(x, 0);
    if (o < 0) return BP_OK;
    x->c->t[o].is_const = 1;
    const Onnx__AttributeProto *a;
    if ((a = attr(x, "value")) && a->t) return bp__ox_tensor_from_proto(x->c, o, a->t, x->err);
    if ((a = attr(x, "sparse_value")) && a->sparse_tensor) {
        const Onnx__SparseTensorProto *sp = a->sparse_tensor;
        bp_dtype dt = sp->values && sp->values->has_data_type ? bp__ox_dtype(sp->values->data_type) : BP_DT_UNKNOWN;
        if (sp->n_dims > MR) return bad(x, "rank over the limit");
        return set_out(x, 0, dt, (int)sp->n_dims, sp->dims);
    }
    if ((a = attr(x, "value_float")) && a->has_f) {
        double f = a->f;
        bp_status s = set_out(x, 0, BP_DT_F32, 0, NULL);
        return s ? s : out_fval(x, 0, 1, &f);
    }
    if ((a = attr(x, "value_int")) && a->has_i) {
        bp_status s = set_out(x, 0, BP_DT_I64, 0, NULL);
        return s ? s : out_ival(x, 0, 1, &a->i, NULL);
    }
    if ((a = attr(x, "value_floats"))) {
        int64_t n = (int64_t)a->n_floats;
        bp_status s = set_out(x, 0, BP_DT_F32, 1, &n);
        if (s || a->n_floats > BP__OX_VALUE_LIMIT) return s;
        double f[BP__OX_VALUE_LIMIT];
        for (size_t i = 0; i < a->n_floats; i++) f[i] = a->floats[i];
        return out_fval(x, 0, a->n_floats, f);
    }
    if ((a = attr(x, "value_ints"))) {
        int64_t n = (int64_t)a->n_ints;
        bp_status s = set_out(x, 0, BP_DT_I64, 1, &n);
        return s ? s : out_ival(x, 0, a->n_ints, a->ints, NULL);
    }
    if (attr(x, "value_string") || attr(x, "value_strings")) {
        x->c->t[o].not_sized = 1;
        return set_unknown(x, 0, BP_DT_UNKNOWN);
    }
    return bad(x, "Constant has no value attribute");
}

static bp_status inf_constant_of_shape(X *x)
{
    int32_t a = IN(x, 0), o = OUT(x, 0);
    const Onnx__AttributeProto *va = attr(x, "value");
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
    const bp__ox_val *v = VAL(x, a);
    if (!v) {
        if (RANK(x, a) == 1 && DIMS(x, a)[0] >= 0 && DIMS(x, a)[0] <= MR) {
            int r = (int)DIMS(x, a)[0];
            int64_t d[MR] = {0};
            for (int i = 0; i < r; i++) FRESH(d[i], 0, i);
            return set_out(x, 0, dt, r, d);
        }
        return set_unknown(x, 0, dt);
    }
    if (v->n > MR) return bad(x, "shape has %u dimensions, over the limit", v->n);
    int64_t d[MR] = {0};
    for (uint32_t i = 0; i < v->n; i++) {
        d[i] = val_dim(v, i);
        if (!val_has_sym(v, i) && d[i] < 0) return bad(x, "shape value %u is negative (%lld)", i, (long long)d[i]);
    }
    bp_status s = set_out(x, 0, dt, (int)v->n, d);
    if (s) return s;
    int64_t n = numel(d, (int)v->n);
    x->nd->cost = n > 0 ? (double)n : 0;
    if (n < 0 || n > BP__OX_VALUE_LIMIT) return BP_OK;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool fl = is_float_dt(dt);
    for (int64_t i = 0; i < n; i++) { w->f[i] = fv; w->i[i] = iv; w->s[i] = -1; }
    s = fold_set(x, 0, fl, (size_t)n, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

/* Reshape target -> output dims (0 copies, -1 is inferred). */
static bp_status inf_reshape(X *x)
{
    int32_t a = IN(x, 0);
    int64_t tv[MR];
    int32_t ts[MR];
    size_t n = 0;
    bool known = false;
    if (x->opset < 5) {
        const int64_t *sv;
        if (attr_ints(x, "shape", &sv, &n) && n <= MR) {
            for (size_t i = 0; i < n; i++) { tv[i] = sv[i]; ts[i] = -1; }
            known = true;
        }
    } else {
        const bp__ox_val *v = VAL(x, IN(x, 1));
        if (v && v->n <= MR && !v->is_float) {
            n = v->n;
            for (size_t i = 0; i < n; i++) { tv[i] = v->i[i]; ts[i] = val_has_sym(v, (uint32_t)i) ? v->sym[i] : -1; }
            known = true;
        }
    }
    bp_dtype dt = DT(x, a);
    if (!known) {
        int32_t sh = IN(x, 1);
        if (RANK(x, sh) == 1 && DIMS(x, sh)[0] >= 0 && DIMS(x, sh)[0] <= MR) {
            int r = (int)DIMS(x, sh)[0];
            int64_t d[MR] = {0};
            for (int i = 0; i < r; i++) FRESH(d[i], 0, i);
            return set_out(x, 0, dt, r, d);
        }
        return set_unknown(x, 0, dt);
    }
    bool allowzero = attr_i(x, "allowzero", 0) != 0;
    int r = (int)n, ri = RANK(x, a);
    int64_t d[MR] = {0};
    int neg = -1;
    for (int i = 0; i < r; i++) {
        if (ts[i] >= 0) { d[i] = -(int64_t)ts[i] - 1; continue; }
        if (tv[i] == -1) {
            if (neg >= 0) return bad(x, "the shape has more than one -1");
            neg = i;
            d[i] = 0;
            continue;
        }
        if (tv[i] == 0 && !allowzero) {
            if (ri < 0) { FRESH(d[i], 0, i); continue; }
            if (i >= ri) return bad(x, "shape entry %d is 0 (copy) but the input has rank %d", i, ri);
            d[i] = DIMS(x, a)[i];
            continue;
        }
        if (tv[i] < 0) return bad(x, "shape entry %d is %lld", i, (long long)tv[i]);
        d[i] = tv[i];
    }
    if (neg >= 0) {
        if (ri < 0) FRESH(d[neg], 0, neg);
        else {
            /* in = c_in * S_in, known out = c_out * S_out; -1 = in / out */
            int64_t cin = 1, cout = 1, sin[MR], sout[MR];
            int nin = 0, nout = 0;
            bool ovf = false;
            for (int i = 0; i < ri; i++) {
                int64_t q = DIMS(x, a)[i];
                if (q < 0) sin[nin++] = q;
                else ovf |= __builtin_mul_overflow(cin, q, &cin);
            }
            for (int i = 0; i < r; i++) {
                if (i == neg) continue;
                if (d[i] < 0) sout[nout++] = d[i];
                else ovf |= __builtin_mul_overflow(cout, d[i], &cout);
            }
            if (ovf) return bad(x, "a dimension product overflows");
            /* cancel symbols */
            for (int j = 0; j < nout; j++)
                for (int i = 0; i < nin; i++)
                    if (sin[i] == sout[j]) { sin[i] = sin[--nin]; sout[j] = 0; break; }
            int left_out = 0;
            for (int j = 0; j < nout; j++) left_out += sout[j] != 0;
            if (left_out || cout == 0) FRESH(d[neg], 0, neg);
            else if (cin % cout != 0) {
                if (nin == 0) return bad(x, "cannot reshape %lld elements into a shape with %lld per -1", (long long)cin, (long long)cout);
                FRESH(d[neg], 0, neg);
            } else if (nin == 0) d[neg] = cin / cout;
            else if (nin == 1 && cin / cout == 1) d[neg] = sin[0];
            else FRESH(d[neg], 0, neg);
        }
    } else if (ri >= 0 && all_static(d, r) && all_static(DIMS(x, a), ri) && numel(d, r) != numel(DIMS(x, a), ri)) {
        return bad(x, "cannot reshape %lld elements into %lld", (long long)numel(DIMS(x, a), ri), (long long)numel(d, r));
    }
    bp_status s = set_out(x, 0, dt, r, d);
    if (s) return s;
    const bp__ox_val *v = VAL(x, a);
    if (v && OUT(x, 0) >= 0 && (int64_t)v->n == numel(d, r))
        return v->is_float ? out_fval(x, 0, v->n, v->f) : out_ival(x, 0, v->n, v->i, v->sym);
    return BP_OK;
}

static bp_status pass_values(X *x, int32_t a)
{
    const bp__ox_val *v = VAL(x, a);
    int32_t o = OUT(x, 0);
    if (!v || o < 0 || x->c->t[o].rank < 0 || (int64_t)v->n != numel(bp__ox_dims(x->c, o), x->c->t[o].rank)) return BP_OK;
    return v->is_float ? out_fval(x, 0, v->n, v->f) : out_ival(x, 0, v->n, v->i, v->sym);
}

static bp_status inf_flatten(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    if (r < 0) {
        int64_t d[2];
        FRESH(d[0], 0, 0);
        FRESH(d[1], 0, 1);
        return set_out(x, 0, dt, 2, d);
    }
    int64_t ax = norm_axis(attr_i(x, "axis", 1), r);
    if (ax < 0 || ax > r) return bad(x, "axis %lld is out of range for rank %d", (long long)attr_i(x, "axis", 1), r);
    int64_t d[2];
    bp_status s = dim_prod(x, DIMS(x, a), (int)ax, 0, 0, &d[0]);
    if (!s) s = dim_prod(x, DIMS(x, a) + ax, r - (int)ax, 0, 1, &d[1]);
    if (!s) s = set_out(x, 0, dt, 2, d);
    return s ? s : pass_values(x, a);
}

/* axes from the attribute (old opsets) or input 1 (new); *have = false when absent. */
static bool get_axes(X *x, int since_input, int in_idx, int64_t *ax, size_t *n, bool *known)
{
    *known = true;
    if (x->opset < since_input) {
        const int64_t *v;
        if (!attr_ints(x, "axes", &v, n)) return false;
        if (*n > MR) { *known = false; return true; }
        memcpy(ax, v, *n * sizeof *v);
        return true;
    }
    int32_t t = IN(x, in_idx);
    if (t < 0) return false;
    if (!ints_of(x, t, ax, MR, n)) *known = false;
    return true;
}

static bp_status inf_squeeze(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    int64_t ax[MR];
    size_t n = 0;
    bool known;
    bool have = get_axes(x, 13, 1, ax, &n, &known);
    if (r < 0 || !known) return set_unknown(x, 0, dt);
    bool drop[MR] = {false};
    if (!have) {
        for (int i = 0; i < r; i++) {
            if (DIMS(x, a)[i] < 0) return set_unknown(x, 0, dt);
            drop[i] = DIMS(x, a)[i] == 1;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            int64_t q = norm_axis(ax[i], r);
            if (q < 0 || q >= r) return bad(x, "axis %lld is out of range for rank %d", (long long)ax[i], r);
            if (DIMS(x, a)[q] >= 0 && DIMS(x, a)[q] != 1) return bad(x, "cannot squeeze axis %lld of size %lld", (long long)ax[i], (long long)DIMS(x, a)[q]);
            drop[q] = true;
        }
    }
    int64_t d[MR] = {0};
    int ro = 0;
    for (int i = 0; i < r; i++) if (!drop[i]) d[ro++] = DIMS(x, a)[i];
    bp_status s = set_out(x, 0, dt, ro, d);
    return s ? s : pass_values(x, a);
}

static bp_status inf_unsqueeze(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    int64_t ax[MR];
    size_t n = 0;
    bool known;
    bool have = get_axes(x, 13, 1, ax, &n, &known);
    if (!have) return bad(x, "no axes");
    if (r < 0 || !known) return set_unknown(x, 0, dt);
    int ro = r + (int)n;
    if (ro > MR) return bad(x, "output rank %d is over the limit", ro);
    bool ins[MR] = {false};
    for (size_t i = 0; i < n; i++) {
        int64_t q = norm_axis(ax[i], ro);
        if (q < 0 || q >= ro || ins[q]) return bad(x, "axis %lld is out of range or repeated", (long long)ax[i]);
        ins[q] = true;
    }
    int64_t d[MR] = {0};
    for (int i = 0, j = 0; i < ro; i++) d[i] = ins[i] ? 1 : DIMS(x, a)[j++];
    bp_status s = set_out(x, 0, dt, ro, d);
    return s ? s : pass_values(x, a);
}

static bp_status inf_transpose(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    if (r < 0) return set_unknown(x, 0, dt);
    const int64_t *pv;
    size_t n;
    int64_t perm[MR];
    if (attr_ints(x, "perm", &pv, &n) && n) {
        if ((int)n != r) return bad(x, "perm has %zu entries for rank %d", n, r);
        bool seen[MR] = {false};
        for (int i = 0; i < r; i++) {
            perm[i] = norm_axis(pv[i], r);
            if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) return bad(x, "perm is not a permutation");
            seen[perm[i]] = true;
        }
    } else {
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    }
    int64_t d[MR] = {0};
    for (int i = 0; i < r; i++) d[i] = DIMS(x, a)[perm[i]];
    bp_status s = set_out(x, 0, dt, r, d);
    if (s) return s;
    x->nd->cost = t_numel(x, a) > 0 ? (double)t_numel(x, a) : 0;
    const bp__ox_val *v = VAL(x, a);
    int64_t total = numel(d, r);
    if (!v || total < 0 || (int64_t)v->n != total) return BP_OK;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t istr[MR];
    int64_t st = 1;
    for (int i = r - 1; i >= 0; i--) { istr[i] = st; st *= DIMS(x, a)[i]; }
    for (int64_t o = 0; o < total; o++) {
        int64_t rem = o, src = 0;
        for (int i = r - 1; i >= 0; i--) { int64_t c = rem % d[i]; rem /= d[i]; src += c * istr[perm[i]]; }
        if (v->is_float) w->f[o] = v->f[src];
        else { w->i[o] = v->i[src]; w->s[o] = val_has_sym(v, (uint32_t)src) ? v->sym[src] : -1; }
    }
    s = fold_set(x, 0, v->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_concat(X *x)
{
    int n = x->nd->n_in;
    int r = -1;
    bp_dtype dt = BP_DT_UNKNOWN;
    for (int i = 0; i < n; i++) {
        int32_t t = IN(x, i);
        if (t < 0) continue;
        if (dt == BP_DT_UNKNOWN) dt = DT(x, t);
        if (RANK(x, t) < 0) return set_unknown(x, 0, dt);
        if (r < 0) r = RANK(x, t);
        else if (RANK(x, t) != r) return bad(x, "inputs have ranks %d and %d", r, RANK(x, t));
    }
    if (r < 0) return set_unknown(x, 0, dt);
    int64_t ax = norm_axis(attr_i(x, "axis", 0), r);
    if (ax < 0 || ax >= r) return bad(x, "axis %lld is out of range for rank %d", (long long)attr_i(x, "axis", 0), r);
    int64_t d[MR] = {0};
    int64_t sum = 0, sym = 0;
    int nsym = 0;
    for (int j = 0; j < r; j++) d[j] = -1;
    bool first = true;
    for (int i = 0; i < n; i++) {
        int32_t t = IN(x, i);
        if (t < 0) continue;
        const int64_t *di = DIMS(x, t);
        for (int j = 0; j < r; j++) {
            if (j == ax) continue;
            if (first || d[j] < 0) {
                if (!first && d[j] < 0 && di[j] < 0) continue;   /* keep the first symbol */
                d[j] = di[j];
            } else if (di[j] >= 0 && di[j] != d[j]) {
                return bad(x, "inputs differ in dimension %d (%lld and %lld)", j, (long long)d[j], (long long)di[j]);
            }
        }
        first = false;
        if (di[ax] < 0) { nsym++; sym = di[ax]; }
        else sum += di[ax];
    }
    if (!nsym) d[ax] = sum;
    else if (nsym == 1 && sum == 0) d[ax] = sym;
    else FRESH(d[ax], 0, (int)ax);
    bp_status s = set_out(x, 0, dt, r, d);
    if (s) return s;
    int64_t total = numel(d, r);
    x->nd->cost = total > 0 ? (double)total : 0;
    if (total < 0 || total > BP__OX_VALUE_LIMIT) return BP_OK;
    bool is_f = false;
    for (int i = 0; i < n; i++) {
        int32_t t = IN(x, i);
        if (t < 0) continue;
        const bp__ox_val *v = VAL(x, t);
        if (!v || (int64_t)v->n != t_numel(x, t)) return BP_OK;
        if (i && v->is_float != is_f) return BP_OK;
        is_f = v->is_float;
    }
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t outer = 1, inner = 1;
    for (int j = 0; j < ax; j++) outer *= d[j];
    for (int j = (int)ax + 1; j < r; j++) inner *= d[j];
    int64_t o = 0;
    for (int64_t b = 0; b < outer; b++)
        for (int i = 0; i < n; i++) {
            int32_t t = IN(x, i);
            if (t < 0) continue;
            const bp__ox_val *v = VAL(x, t);
            int64_t blk = DIMS(x, t)[ax] * inner;
            for (int64_t e = 0; e < blk; e++, o++) {
                int64_t src = b * blk + e;
                if (is_f) w->f[o] = v->f[src];
                else { w->i[o] = v->i[src]; w->s[o] = val_has_sym(v, (uint32_t)src) ? v->sym[src] : -1; }
            }
        }
    s = fold_set(x, 0, is_f, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_split(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    int no = x->nd->n_out;
    if (r < 0) {
        for (int i = 0; i < no; i++) { bp_status s = set_unknown(x, i, dt); if (s) return s; }
        return BP_OK;
    }
    int64_t ax = norm_axis(attr_i(x, "axis", 0), r);
    if (ax < 0 || ax >= r) return bad(x, "axis out of range");
    int64_t sp[1024];
    size_t n = 0;
    bool have = false, known = true;
    if (x->opset < 13) {
        const int64_t *v;
        if (attr_ints(x, "split", &v, &n) && n) {
            if (n > 1024) known = false;
            else memcpy(sp, v, n * sizeof *v);
            have = true;
        }
    } else if (IN(x, 1) >= 0) {
        have = true;
        if (!ints_of(x, IN(x, 1), sp, 1024, &n)) known = false;
    }
    int64_t D = DIMS(x, a)[ax];
    for (int i = 0; i < no; i++) {
        int64_t d[MR] = {0};
        memcpy(d, DIMS(x, a), (size_t)r * sizeof *d);
        if (have && known) {
            if ((int)n != no) return bad(x, "split has %zu entries for %d outputs", n, no);
            d[ax] = sp[i];
        } else if (!have && D >= 0) {
            int64_t chunk = (D + no - 1) / no;
            if (x->opset < 18 && D % no) return bad(x, "dimension %lld does not split evenly into %d outputs", (long long)D, no);
            d[ax] = i < no - 1 ? chunk : D - chunk * (no - 1);
        } else {
            FRESH(d[ax], i, (int)ax);
        }
        bp_status s = set_out(x, i, dt, r, d);
        if (s) return s;
    }
    return BP_OK;
}

/* One sliced dimension's length, ONNX clamping rules. */
static int64_t slice_len(int64_t D, int64_t st, int64_t en, int64_t step)
{
    if (step > 0) {
        st = st < 0 ? (st < -D ? 0 : st + D) : (st > D ? D : st);
        en = en < 0 ? (en < -D ? 0 : en + D) : (en > D ? D : en);
        return en > st ? (en - st + step - 1) / step : 0;
    }
    st = st < 0 ? (st < -D ? -1 : st + D) : (st > D - 1 ? D - 1 : st);
    en = en < 0 ? (en < -D ? -1 : en + D) : (en > D - 1 ? D - 1 : en);
    return st > en ? (st - en + (-step) - 1) / (-step) : 0;
}

static int64_t slice_start(int64_t D, int64_t st, int64_t step)
{
    if (step > 0) return st < 0 ? (st < -D ? 0 : st + D) : (st > D ? D : st);
    return st < 0 ? (st < -D ? -1 : st + D) : (st > D - 1 ? D - 1 : st);
}

static bp_status inf_slice(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    if (r < 0) return set_unknown(x, 0, dt);
    int64_t st[MR], en[MR], ax[MR], sp[MR];
    size_t ns = 0, ne = 0, na = 0, nsp = 0;
    bool known = true, have_axes = false, have_steps = false;
    if (x->opset < 10) {
        const int64_t *v;
        if (attr_ints(x, "starts", &v, &ns) && ns <= MR) memcpy(st, v, ns * sizeof *v); else known = false;
        if (attr_ints(x, "ends", &v, &ne) && ne <= MR) memcpy(en, v, ne * sizeof *v); else known = false;
        if (attr_ints(x, "axes", &v, &na)) { have_axes = true; if (na <= MR) memcpy(ax, v, na * sizeof *v); else known = false; }
    } else {
        known = ints_of(x, IN(x, 1), st, MR, &ns) && ints_of(x, IN(x, 2), en, MR, &ne);
        if (IN(x, 3) >= 0) { have_axes = true; known = known && ints_of(x, IN(x, 3), ax, MR, &na); }
        if (IN(x, 4) >= 0) { have_steps = true; known = known && ints_of(x, IN(x, 4), sp, MR, &nsp); }
    }
    int64_t d[MR] = {0};
    memcpy(d, DIMS(x, a), (size_t)r * sizeof *d);
    if (!known) {
        /* which axes are sliced is unknown too when axes are: all fresh */
        int64_t axk[MR];
        size_t nk = 0;
        bool axes_known = have_axes && IN(x, 3) >= 0 && ints_of(x, IN(x, 3), axk, MR, &nk);
        for (int i = 0; i < r; i++) {
            bool sliced = true;
            if (axes_known) {
                sliced = false;
                for (size_t j = 0; j < nk; j++) if (norm_axis(axk[j], r) == i) sliced = true;
            }
            if (sliced) FRESH(d[i], 0, i);
        }
        return set_out(x, 0, dt, r, d);
    }
    if (ns != ne) return bad(x, "starts and ends differ in length");
    if (!have_axes) { na = ns; for (size_t i = 0; i < ns; i++) ax[i] = (int64_t)i; }
    if (!have_steps) { nsp = ns; for (size_t i = 0; i < ns; i++) sp[i] = 1; }
    if (na != ns || nsp != ns) return bad(x, "starts, axes and steps differ in length");
    int64_t off[MR], stp[MR];
    for (int i = 0; i < r; i++) { off[i] = 0; stp[i] = 1; }
    for (size_t i = 0; i < ns; i++) {
        int64_t q = norm_axis(ax[i], r);
        if (q < 0 || q >= r) return bad(x, "axis %lld is out of range for rank %d", (long long)ax[i], r);
        if (sp[i] == 0) return bad(x, "step is 0");
        int64_t D = DIMS(x, a)[q];
        if (D < 0) {
            if (sp[i] == 1 && st[i] == 0 && en[i] >= INT32_MAX) continue;   /* the whole axis */
            FRESH(d[q], 0, (int)q);
            continue;
        }
        d[q] = slice_len(D, st[i], en[i], sp[i]);
        off[q] = slice_start(D, st[i], sp[i]);
        stp[q] = sp[i];
    }
    bp_status s = set_out(x, 0, dt, r, d);
    if (s) return s;
    const bp__ox_val *v = VAL(x, a);
    int64_t total = numel(d, r);
    if (!v || total < 0 || (int64_t)v->n != t_numel(x, a) || !all_static(DIMS(x, a), r)) return BP_OK;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t istr[MR], acc = 1;
    for (int i = r - 1; i >= 0; i--) { istr[i] = acc; acc *= DIMS(x, a)[i]; }
    for (int64_t o = 0; o < total; o++) {
        int64_t rem = o, src = 0;
        for (int i = r - 1; i >= 0; i--) { int64_t c = rem % d[i]; rem /= d[i]; src += (off[i] + c * stp[i]) * istr[i]; }
        if (v->is_float) w->f[o] = v->f[src];
        else { w->i[o] = v->i[src]; w->s[o] = val_has_sym(v, (uint32_t)src) ? v->sym[src] : -1; }
    }
    s = fold_set(x, 0, v->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_gather(X *x)
{
    int32_t a = IN(x, 0), ix = IN(x, 1);
    int r = RANK(x, a), q = RANK(x, ix);
    bp_dtype dt = DT(x, a);
    if (!strcmp(x->op, "GatherElements")) return copy_shape(x, 0, ix, dt, false);
    if (r < 0 || q < 0) return set_unknown(x, 0, dt);
    if (!strcmp(x->op, "GatherND")) {
        int64_t b = attr_i(x, "batch_dims", 0);
        int64_t last = q > 0 ? DIMS(x, ix)[q - 1] : -1;
        if (last < 0 || b < 0 || b + last > r) return set_unknown(x, 0, dt);
        int64_t d[MR] = {0};
        int ro = 0;
        for (int i = 0; i < q - 1; i++) d[ro++] = DIMS(x, ix)[i];
        for (int64_t i = b + last; i < r; i++) d[ro++] = DIMS(x, a)[i];
        if (ro > MR) return bad(x, "output rank over the limit");
        return set_out(x, 0, dt, ro, d);
    }
    int64_t axis = norm_axis(attr_i(x, "axis", 0), r);
    if (axis < 0 || axis >= r) return bad(x, "axis %lld is out of range for rank %d", (long long)attr_i(x, "axis", 0), r);
    int ro = r + q - 1;
    if (ro > MR) return bad(x, "output rank over the limit");
    int64_t d[MR] = {0};
    int p = 0;
    for (int i = 0; i < axis; i++) d[p++] = DIMS(x, a)[i];
    for (int i = 0; i < q; i++) d[p++] = DIMS(x, ix)[i];
    for (int i = (int)axis + 1; i < r; i++) d[p++] = DIMS(x, a)[i];
    bp_status s = set_out(x, 0, dt, ro, d);
    if (s) return s;
    int64_t total = numel(d, ro);
    x->nd->cost = total > 0 ? (double)total : 0;
    const bp__ox_val *v = VAL(x, a), *iv = VAL(x, ix);
    if (!v || !iv || total < 0 || total > BP__OX_VALUE_LIMIT || !all_static(DIMS(x, a), r) || (int64_t)v->n != t_numel(x, a) ||
        (int64_t)iv->n != t_numel(x, ix) || iv->is_float)
        return BP_OK;
    int64_t D = DIMS(x, a)[axis], inner = 1, nidx = iv->n;
    for (int i = (int)axis + 1; i < r; i++) inner *= DIMS(x, a)[i];
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    bool ok = true;
    for (int64_t o = 0; o < total && ok; o++) {
        int64_t in_e = o % inner, rest = o / inner, j = rest % (nidx ? nidx : 1), outer = rest / (nidx ? nidx : 1);
        if (val_has_sym(iv, (uint32_t)j)) { ok = false; break; }
        int64_t k = iv->i[j];
        if (k < 0) k += D;
        if (k < 0 || k >= D) { ok = false; break; }
        int64_t src = (outer * D + k) * inner + in_e;
        if (v->is_float) w->f[o] = v->f[src];
        else { w->i[o] = v->i[src]; w->s[o] = val_has_sym(v, (uint32_t)src) ? v->sym[src] : -1; }
    }
    s = ok ? fold_set(x, 0, v->is_float, (size_t)total, w) : BP_OK;
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_same_as_data(X *x) { return copy_shape(x, 0, IN(x, 0), BP_DT_UNKNOWN, false); }

/* Expand: broadcast the input with the shape value. */
static bp_status inf_expand(X *x)
{
    int32_t a = IN(x, 0), sh = IN(x, 1);
    bp_dtype dt = DT(x, a);
    const bp__ox_val *v = VAL(x, sh);
    int r = RANK(x, a);
    if (!v || v->is_float || v->n > MR || r < 0) {
        if (r >= 0 && RANK(x, sh) == 1 && DIMS(x, sh)[0] >= 0 && DIMS(x, sh)[0] <= MR) {
            int ro = (int)DIMS(x, sh)[0] > r ? (int)DIMS(x, sh)[0] : r;
            int64_t d[MR] = {0};
            for (int i = 0; i < ro; i++) FRESH(d[i], 0, i);
            return set_out(x, 0, dt, ro, d);
        }
        return set_unknown(x, 0, dt);
    }
    int n = (int)v->n;
    int ro = n > r ? n : r;
    int64_t d[MR] = {0};
    for (int j = 0; j < ro; j++) {
        int pa = j - (ro - r), ps = j - (ro - n);
        int64_t da = pa >= 0 ? DIMS(x, a)[pa] : 1;
        int64_t ds = ps >= 0 ? val_dim(v, (uint32_t)ps) : 1;
        if (ps >= 0 && !val_has_sym(v, (uint32_t)ps) && ds < 0) return bad(x, "shape value %d is negative", ps);
        if (ds == 1) d[j] = da;
        else if (da == 1 || da == ds) d[j] = ds;
        else if (da >= 0 && ds >= 0) return bad(x, "cannot expand dimension %lld to %lld", (long long)da, (long long)ds);
        else if (ds >= 0) d[j] = ds;
        else if (da >= 0) d[j] = da;
        else FRESH(d[j], 0, j);
    }
    bp_status s = set_out(x, 0, dt, ro, d);
    if (s) return s;
    int64_t total = numel(d, ro);
    x->nd->cost = total > 0 ? (double)total : 0;
    const bp__ox_val *va = VAL(x, a);
    if (!va || total < 0 || total > BP__OX_VALUE_LIMIT || (int64_t)va->n != t_numel(x, a)) return BP_OK;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    for (int64_t o = 0; o < total; o++) {
        int64_t src = bidx(d, ro, DIMS(x, a), r, o);
        if (va->is_float) w->f[o] = va->f[src];
        else { w->i[o] = va->i[src]; w->s[o] = val_has_sym(va, (uint32_t)src) ? va->sym[src] : -1; }
    }
    s = fold_set(x, 0, va->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_tile(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    int64_t rep[MR];
    size_t n;
    if (r < 0) return set_unknown(x, 0, dt);
    int64_t d[MR] = {0};
    if (!ints_of(x, IN(x, 1), rep, MR, &n) || (int)n != r) {
        for (int i = 0; i < r; i++) FRESH(d[i], 0, i);
        return set_out(x, 0, dt, r, d);
    }
    for (int i = 0; i < r; i++) {
        int64_t q = DIMS(x, a)[i];
        if (rep[i] < 0) return bad(x, "repeat %d is negative", i);
        if (rep[i] == 1) d[i] = q;
        else if (q >= 0) { if (__builtin_mul_overflow(q, rep[i], &d[i])) return bad(x, "size overflows"); }
        else if (rep[i] == 0) d[i] = 0;
        else FRESH(d[i], 0, i);
    }
    bp_status s = set_out(x, 0, dt, r, d);
    if (s) return s;
    const bp__ox_val *v = VAL(x, a);
    int64_t total = numel(d, r);
    if (!v || total < 0 || total > BP__OX_VALUE_LIMIT || (int64_t)v->n != t_numel(x, a)) return BP_OK;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    int64_t istr[MR], acc = 1;
    for (int i = r - 1; i >= 0; i--) { istr[i] = acc; acc *= DIMS(x, a)[i]; }
    for (int64_t o = 0; o < total; o++) {
        int64_t rem = o, src = 0;
        for (int i = r - 1; i >= 0; i--) { int64_t c = rem % d[i]; rem /= d[i]; src += (c % DIMS(x, a)[i]) * istr[i]; }
        if (v->is_float) w->f[o] = v->f[src];
        else { w->i[o] = v->i[src]; w->s[o] = val_has_sym(v, (uint32_t)src) ? v->sym[src] : -1; }
    }
    s = fold_set(x, 0, v->is_float, (size_t)total, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

static bp_status inf_range(X *x)
{
    bp_dtype dt = DT(x, IN(x, 0));
    const bp__ox_val *vs = VAL(x, IN(x, 0)), *vl = VAL(x, IN(x, 1)), *vd = VAL(x, IN(x, 2));
    int64_t n;
    if (!vs || !vl || !vd || vs->n != 1 || vl->n != 1 || vd->n != 1 || val_has_sym(vs, 0) || val_has_sym(vl, 0) || val_has_sym(vd, 0)) {
        FRESH(n, 0, 0);
        return set_out(x, 0, dt, 1, &n);
    }
    bool fl = vs->is_float || vl->is_float || vd->is_float;
    if (fl) {
        double s0 = val_f(vs, 0), l0 = val_f(vl, 0), d0 = val_f(vd, 0);
        if (d0 == 0) return bad(x, "delta is 0");
        double c = ceil((l0 - s0) / d0);
        n = c > 0 ? (int64_t)c : 0;
    } else {
        int64_t s0 = vs->i[0], l0 = vl->i[0], d0 = vd->i[0];
        if (d0 == 0) return bad(x, "delta is 0");
        double c = ceil(((double)l0 - (double)s0) / (double)d0);
        n = c > 0 ? (int64_t)c : 0;
    }
    bp_status s = set_out(x, 0, dt, 1, &n);
    if (s || n > BP__OX_VALUE_LIMIT) return s;
    scratch *w = bp__alloc(x->c->a, sizeof *w);
    if (!w) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file);
    for (int64_t i = 0; i < n; i++) {
        if (fl) w->f[i] = val_f(vs, 0) + (double)i * val_f(vd, 0);
        else { w->i[i] = vs->i[0] + i * vd->i[0]; w->s[i] = -1; }
    }
    s = fold_set(x, 0, fl && is_float_dt(dt), (size_t)n, w);
    bp__free(x->c->a, w, sizeof *w);
    return s;
}

/* ------------------------------------------------------ reductions etc. */

static bp_status inf_reduce(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bool arg = !strncmp(x->op, "Arg", 3);
    bp_dtype dt = arg ? BP_DT_I64 : DT(x, a);
    if (r < 0) return set_unknown(x, 0, dt);
    bool keep = attr_i(x, "keepdims", 1) != 0;
    bool red[MR] = {false};
    if (arg) {
        int64_t q = norm_axis(attr_i(x, "axis", 0), r);
        if (q < 0 || q >= r) return bad(x, "axis out of range");
        red[q] = true;
    } else {
        int64_t ax[MR];
        size_t n = 0;
        bool known;
        int since = !strcmp(x->op, "ReduceSum") ? 13 : 18;
        bool have = get_axes(x, since, 1, ax, &n, &known);
        if (!known) {
            if (keep) {
                int64_t d[MR] = {0};
                for (int i = 0; i < r; i++) FRESH(d[i], 0, i);
                return set_out(x, 0, dt, r, d);
            }
            return set_unknown(x, 0, dt);
        }
        if (!have || n == 0) {
            if (x->opset >= since && attr_i(x, "noop_with_empty_axes", 0)) return copy_shape(x, 0, a, dt, true);
            for (int i = 0; i < r; i++) red[i] = true;
        }
        for (size_t i = 0; i < n; i++) {
            int64_t q = norm_axis(ax[i], r);
            if (q < 0 || q >= r) return bad(x, "axis %lld is out of range for rank %d", (long long)ax[i], r);
            red[q] = true;
        }
    }
    int64_t d[MR] = {0};
    int ro = 0;
    for (int i = 0; i < r; i++) {
        if (!red[i]) d[ro++] = DIMS(x, a)[i];
        else if (keep) d[ro++] = 1;
    }
    bp_status s = set_out(x, 0, dt, ro, d);
    if (s) return s;
    int64_t ne = t_numel(x, a);
    x->nd->cost = ne > 0 ? (double)ne : 0;
    /* fold ReduceProd / ReduceSum / ReduceMax / ReduceMin of a full 1-D value */
    const bp__ox_val *v = VAL(x, a);
    if (!v || r != 1 || !red[0] || v->is_float || (int64_t)v->n != ne) return BP_OK;
    int code = !strcmp(x->op, "ReduceProd") ? OP_MUL : !strcmp(x->op, "ReduceSum") ? OP_ADD
             : !strcmp(x->op, "ReduceMax") ? OP_MAX : !strcmp(x->op, "ReduceMin") ? OP_MIN : OP_OTHER;
    if (code == OP_OTHER || !v->n) return BP_OK;
    int64_t acc = v->i[0];
    for (uint32_t i = 0; i < v->n; i++) {
        if (val_has_sym(v, i)) return BP_OK;
        if (i && !int_apply(code, acc, v->i[i], false, &acc)) return BP_OK;
    }
    return out_ival(x, 0, 1, &acc, NULL);
}

static bp_status inf_topk(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    if (r < 0) { bp_status s = set_unknown(x, 0, dt); return s ? s : set_unknown(x, 1, BP_DT_I64); }
    int64_t ax = norm_axis(attr_i(x, "axis", -1), r);
    if (ax < 0 || ax >= r) return bad(x, "axis out of range");
    int64_t k;
    int64_t kv[1];
    size_t n;
    if (x->opset < 10) k = attr_i(x, "k", -1);
    else k = ints_of(x, IN(x, 1), kv, 1, &n) && n == 1 ? kv[0] : -1;
    int64_t d[MR] = {0};
    memcpy(d, DIMS(x, a), (size_t)r * sizeof *d);
    if (k >= 0) d[ax] = k;
    else FRESH(d[ax], 0, (int)ax);
    bp_status s = set_out(x, 0, dt, r, d);
    return s ? s : set_out(x, 1, BP_DT_I64, r, d);
}

/* --------------------------------------------------- conv / pool / gemm */

static bp_status spatial(X *x, int32_t a, int nsp, const int64_t *k, bool transpose, int64_t *out_sp, int which_out)
{
    const int64_t *v;
    size_t n;
    int64_t strides[MR], dil[MR], pads[2 * MR], opad[MR];
    for (int i = 0; i < nsp; i++) { strides[i] = 1; dil[i] = 1; pads[i] = pads[i + nsp] = 0; opad[i] = 0; }
    if (attr_ints(x, "strides", &v, &n) && (int)n == nsp) memcpy(strides, v, n * sizeof *v);
    if (attr_ints(x, "dilations", &v, &n) && (int)n == nsp) memcpy(dil, v, n * sizeof *v);
    if (attr_ints(x, "pads", &v, &n) && (int)n == 2 * nsp) memcpy(pads, v, n * sizeof *v);
    if (attr_ints(x, "output_padding", &v, &n) && (int)n == nsp) memcpy(opad, v, n * sizeof *v);
    bool same = attr_s_is(x, "auto_pad", "SAME_UPPER") || attr_s_is(x, "auto_pad", "SAME_LOWER");
    bool valid = attr_s_is(x, "auto_pad", "VALID");
    bool ceil_mode = attr_i(x, "ceil_mode", 0) != 0;
    const int64_t *in = DIMS(x, a) + 2;
    if (transpose && attr_ints(x, "output_shape", &v, &n) && n >= (size_t)nsp) {
        for (int i = 0; i < nsp; i++) out_sp[i] = v[n - (size_t)nsp + (size_t)i];
        return BP_OK;
    }
    for (int i = 0; i < nsp; i++) {
        if (strides[i] <= 0 || dil[i] <= 0) return bad(x, "strides and dilations must be positive");
        int64_t D = in[i];
        if (D < 0 || k[i] < 0) { FRESH(out_sp[i], which_out, i + 2); continue; }
        int64_t ek = (k[i] - 1) * dil[i] + 1;
        if (transpose) {
            if (same) out_sp[i] = D * strides[i];
            else out_sp[i] = strides[i] * (D - 1) + opad[i] + ek - pads[i] - pads[i + nsp];
        } else if (same) {
            out_sp[i] = (D + strides[i] - 1) / strides[i];
        } else if (valid) {
            out_sp[i] = D - ek + 1 > 0 ? (D - ek + strides[i]) / strides[i] : 0;
        } else {
            int64_t eff = D + pads[i] + pads[i + nsp] - ek;
            if (eff < 0) return bad(x, "the kernel (%lld) is larger than the padded input (%lld) on axis %d", (long long)ek,
                                    (long long)(D + pads[i] + pads[i + nsp]), i + 2);
            out_sp[i] = (ceil_mode ? (eff + strides[i] - 1) / strides[i] : eff / strides[i]) + 1;
        }
        if (out_sp[i] < 0) return bad(x, "negative output size on axis %d", i + 2);
    }
    return BP_OK;
}

static bp_status inf_conv(X *x)
{
    bool q = !strcmp(x->op, "QLinearConv");
    int32_t a = IN(x, 0), wt = IN(x, q ? 3 : 1);
    bool tr = !strcmp(x->op, "ConvTranspose");
    bp_dtype dt = DT(x, a);
    if (!strcmp(x->op, "ConvInteger")) dt = BP_DT_I32;
    if (q) dt = DT(x, IN(x, 7)) != BP_DT_UNKNOWN ? DT(x, IN(x, 7)) : DT(x, a);
    int r = RANK(x, a);
    if (r < 3) return r < 0 ? set_unknown(x, 0, dt) : bad(x, "input has rank %d (needs at least 3)", r);
    int nsp = r - 2;
    int64_t k[MR];
    const int64_t *v;
    size_t n;
    int wr = RANK(x, wt);
    if (attr_ints(x, "kernel_shape", &v, &n) && (int)n == nsp) memcpy(k, v, n * sizeof *v);
    else if (wr == r) memcpy(k, DIMS(x, wt) + 2, (size_t)nsp * sizeof *k);
    else for (int i = 0; i < nsp; i++) k[i] = -1;
    int64_t group = attr_i(x, "group", 1);
    int64_t d[MR] = {0};
    d[0] = DIMS(x, a)[0];
    if (wr >= 2) {
        int64_t m = tr ? DIMS(x, wt)[1] : DIMS(x, wt)[0];
        d[1] = m >= 0 && tr ? m * group : m;
    } else FRESH(d[1], 0, 1);
    bp_status s = spatial(x, a, nsp, k, tr, d + 2, 0);
    if (s) return s;
    if ((s = set_out(x, 0, dt, r, d))) return s;
    /* FLOPs: 2 * output elements * (Cin / group) * kernel volume */
    int64_t out_n = numel(d, r), kv = numel(k, nsp);
    int64_t cin = DIMS(x, a)[1];
    if (out_n >= 0 && kv >= 0 && cin >= 0 && group > 0) {
        if (tr) x->nd->cost = 2.0 * (double)t_numel(x, a) * (double)(d[1] / group) * (double)kv;
        else x->nd->cost = 2.0 * (double)out_n * (double)(cin / group) * (double)kv;
    }
    return BP_OK;
}

static bp_status inf_pool(X *x)
{
    int32_t a = IN(x, 0);
    bp_dtype dt = DT(x, a);
    int r = RANK(x, a);
    if (r < 3) {
        if (r >= 0) return bad(x, "input has rank %d (needs at least 3)", r);
        bp_status s = set_unknown(x, 0, dt);
        return s ? s : set_unknown(x, 1, BP_DT_I64);
    }
    int nsp = r - 2;
    int64_t d[MR] = {0};
    d[0] = DIMS(x, a)[0];
    d[1] = DIMS(x, a)[1];
    bool global = !strncmp(x->op, "Global", 6);
    int64_t k[MR];
    if (global) {
        for (int i = 0; i < nsp; i++) d[i + 2] = 1;
    } else {
        const int64_t *v;
        size_t n;
        if (!attr_ints(x, "kernel_shape", &v, &n) || (int)n != nsp) return bad(x, "kernel_shape is missing or has the wrong length");
        memcpy(k, v, n * sizeof *v);
        bp_status s = spatial(x, a, nsp, k, false, d + 2, 0);
        if (s) return s;
    }
    bp_status s = set_out(x, 0, dt, r, d);
    if (!s) s = set_out(x, 1, BP_DT_I64, r, d);
    int64_t ne = t_numel(x, a);
    x->nd->cost = ne > 0 ? (double)ne : 0;
    return s;
}

static bp_status inf_gemm(X *x)
{
    int32_t a = IN(x, 0), b = IN(x, 1);
    bp_dtype dt = DT(x, a);
    if (!strcmp(x->op, "MatMulInteger")) dt = BP_DT_I32;
    if (!strcmp(x->op, "QLinearMatMul")) { b = IN(x, 3); dt = DT(x, IN(x, 7)) != BP_DT_UNKNOWN ? DT(x, IN(x, 7)) : DT(x, a); }
    int ra = RANK(x, a), rb = RANK(x, b);
    if (ra < 0 || rb < 0) return set_unknown(x, 0, dt);
    if (!strcmp(x->op, "Gemm")) {
        if (ra != 2 || rb != 2) return bad(x, "Gemm inputs have ranks %d and %d (need 2 and 2)", ra, rb);
        bool ta = attr_i(x, "transA", 0) != 0, tb = attr_i(x, "transB", 0) != 0;
        int64_t d[2] = {DIMS(x, a)[ta ? 1 : 0], DIMS(x, b)[tb ? 0 : 1]};
        int64_t kk = DIMS(x, a)[ta ? 0 : 1], kb = DIMS(x, b)[tb ? 1 : 0];
        if (kk >= 0 && kb >= 0 && kk != kb) return bad(x, "inner dimensions differ (%lld and %lld)", (long long)kk, (long long)kb);
        if (d[0] >= 0 && d[1] >= 0 && kk >= 0) x->nd->cost = 2.0 * (double)d[0] * (double)d[1] * (double)kk;
        return set_out(x, 0, dt, 2, d);
    }
    /* MatMul: numpy semantics, 1-D operands promoted and the added dim dropped */
    if (ra == 0 || rb == 0) return bad(x, "MatMul of a scalar");
    int64_t da[MR], db[MR];
    int pa = ra, pb = rb;
    if (ra == 1) { da[0] = 1; da[1] = DIMS(x, a)[0]; pa = 2; } else memcpy(da, DIMS(x, a), (size_t)ra * sizeof *da);
    if (rb == 1) { db[0] = DIMS(x, b)[0]; db[1] = 1; pb = 2; } else memcpy(db, DIMS(x, b), (size_t)rb * sizeof *db);
    int64_t kk = da[pa - 1], kb = db[pb - 2];
    if (kk >= 0 && kb >= 0 && kk != kb) return bad(x, "inner dimensions differ (%lld and %lld)", (long long)kk, (long long)kb);
    int bra = pa - 2, brb = pb - 2, br = bra > brb ? bra : brb;
    int64_t d[MR] = {0};
    for (int j = 0; j < br; j++) {
        int ia = j - (br - bra), ib = j - (br - brb);
        int64_t x1 = ia >= 0 ? da[ia] : 1, x2 = ib >= 0 ? db[ib] : 1;
        if (x1 == 1) d[j] = x2;
        else if (x2 == 1 || x1 == x2) d[j] = x1;
        else if (x1 >= 0 && x2 >= 0) return bad(x, "batch dimensions cannot be broadcast (%lld and %lld)", (long long)x1, (long long)x2);
        else if (x1 >= 0) d[j] = x1;
        else if (x2 >= 0) d[j] = x2;
        else FRESH(d[j], 0, j);
    }
    int ro = br;
    if (ra != 1) d[ro++] = da[pa - 2];
    if (rb != 1) d[ro++] = db[pb - 1];
    int64_t on = numel(d, ro);
    if (on >= 0 && kk >= 0) x->nd->cost = 2.0 * (double)on * (double)kk;
    return set_out(x, 0, dt, ro, d);
}

static bp_status inf_einsum(X *x)
{
    const Onnx__AttributeProto *ea = attr(x, "equation");
    bp_dtype dt = DT(x, IN(x, 0));
    if (!ea || !ea->has_s) return bad(x, "no equation");
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
        int32_t t = IN(x, term);
        int r = RANK(x, t);
        if (r < 0) return set_unknown(x, 0, dt);
        int nlet = 0;
        bool has_ell = false;
        for (char *q = p; q < e; q++) {
            if (*q == '.') { has_ell = true; q += 2; continue; }
            nlet++;
        }
        int ne = has_ell ? r - nlet : 0;
        if (ne < 0 || (!has_ell && nlet != r)) return bad(x, "equation term %d does not match rank %d", term, r);
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
                    int64_t dd = DIMS(x, t)[dpos + i];
                    int64_t *slot = &ell[nell - ne + i];
                    if (*slot == 1 || *slot < 0) *slot = dd;
                }
                dpos += ne;
                q += 2;
                continue;
            }
            unsigned char ch = (unsigned char)*q;
            if (ch >= 128) return bad(x, "bad equation");
            int64_t dd = DIMS(x, t)[dpos++];
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
            if (ch >= 128 || let[ch] == -2) return bad(x, "output letter '%c' is not in the inputs", *q);
            if (ro < MR) d[ro++] = let[ch];
        }
    } else {
        for (int i = 0; i < nell && ro < MR; i++) d[ro++] = ell[i];
        for (int ch = 0; ch < 128; ch++) if (count[ch] == 1 && ro < MR) d[ro++] = let[ch];
    }
    for (int i = 0; i < ro; i++) if (d[i] == -2) FRESH(d[i], 0, i);
    double flops = 2;
    for (int ch = 0; ch < 128; ch++) if (let[ch] >= 0) flops *= (double)let[ch];
    for (int i = 0; i < nell; i++) if (ell[i] >= 0) flops *= (double)ell[i];
    x->nd->cost = flops;
    return set_out(x, 0, dt, ro, d);
}

static bp_status inf_norm(X *x)
{
    int32_t a = IN(x, 0);
    bp_status s = copy_shape(x, 0, a, BP_DT_UNKNOWN, false);
    if (s) return s;
    int r = RANK(x, a);
    int64_t ne = t_numel(x, a);
    x->nd->cost = ne > 0 ? 5.0 * (double)ne : 0;
    if (!strcmp(x->op, "BatchNormalization")) {
        bp_dtype pdt = DT(x, IN(x, 1)) != BP_DT_UNKNOWN ? DT(x, IN(x, 1)) : DT(x, a);
        for (int i = 1; i < x->nd->n_out; i++) {
            if (r < 2) { if ((s = set_unknown(x, i, pdt))) return s; continue; }
            int64_t cdim = DIMS(x, a)[1];
            if ((s = set_out(x, i, pdt, 1, &cdim))) return s;
        }
        return BP_OK;
    }
    if (!strcmp(x->op, "LayerNormalization") && x->nd->n_out > 1) {
        bp_dtype sdt = bp__ox_dtype((int32_t)attr_i(x, "stash_type", 1));
        if (r < 0) { s = set_unknown(x, 1, sdt); return s ? s : set_unknown(x, 2, sdt); }
        int64_t ax = norm_axis(attr_i(x, "axis", -1), r);
        int64_t d[MR] = {0};
        for (int i = 0; i < r; i++) d[i] = i < ax ? DIMS(x, a)[i] : 1;
        s = set_out(x, 1, sdt, r, d);
        return s ? s : set_out(x, 2, sdt, r, d);
    }
    return BP_OK;
}

static bp_status inf_resize(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    if (r < 0) return set_unknown(x, 0, dt);
    int64_t d[MR] = {0};
    memcpy(d, DIMS(x, a), (size_t)r * sizeof *d);
    int32_t tsc = -1, tsz = -1;
    double sc[MR];
    bool have_sc = false;
    if (!strcmp(x->op, "Upsample") && x->opset < 9) {
        const Onnx__AttributeProto *at = attr(x, "scales");
        if (at && (int)at->n_floats == r) { for (int i = 0; i < r; i++) sc[i] = at->floats[i]; have_sc = true; }
    } else if (!strcmp(x->op, "Upsample") || x->opset < 11) {
        tsc = IN(x, 1);
    } else {
        tsc = IN(x, 2);
        tsz = IN(x, 3);
    }
    const bp__ox_val *vz = VAL(x, tsz), *vs = VAL(x, tsc);
    int64_t axes[MR];
    size_t na = 0;
    const int64_t *av;
    bool have_axes = attr_ints(x, "axes", &av, &na) && na && na <= MR;
    if (have_axes) memcpy(axes, av, na * sizeof *av);
    else { na = (size_t)r; for (int i = 0; i < r; i++) axes[i] = i; }
    if (vz && vz->n > 0) {
        if (vz->n != na) return bad(x, "sizes has %u entries for %zu axes", vz->n, na);
        for (size_t i = 0; i < na; i++) {
            int64_t q = norm_axis(axes[i], r);
            if (q < 0 || q >= r) return bad(x, "axis out of range");
            d[q] = val_dim(vz, (uint32_t)i);
        }
    } else if (vs && vs->n > 0) {
        if (vs->n != na) return bad(x, "scales has %u entries for %zu axes", vs->n, na);
        for (size_t i = 0; i < na; i++) sc[i] = val_f(vs, (uint32_t)i);
        have_sc = true;
    } else if (!have_sc) {
        bool sizes_given = tsz >= 0 && !(RANK(x, tsz) == 1 && DIMS(x, tsz)[0] == 0);
        bool scales_given = tsc >= 0 && !(RANK(x, tsc) == 1 && DIMS(x, tsc)[0] == 0);
        if (sizes_given || scales_given) for (int i = 0; i < r; i++) FRESH(d[i], 0, i);
        return set_out(x, 0, dt, r, d);
    }
    if (have_sc) {
        for (size_t i = 0; i < na; i++) {
            int64_t q = norm_axis(axes[i], r);
            if (q < 0 || q >= r) return bad(x, "axis out of range");
            if (d[q] < 0) { if (sc[i] != 1) FRESH(d[q], 0, (int)q); continue; }
            float prod = (float)d[q] * (float)sc[i];   /* single precision, as onnx */
            d[q] = (int64_t)floorf(prod);
        }
    }
    bp_status s = set_out(x, 0, dt, r, d);
    int64_t ne = numel(d, r);
    x->nd->cost = ne > 0 ? 4.0 * (double)ne : 0;
    return s;
}

static bp_status inf_pad(X *x)
{
    int32_t a = IN(x, 0);
    int r = RANK(x, a);
    bp_dtype dt = DT(x, a);
    if (r < 0) return set_unknown(x, 0, dt);
    int64_t pads[2 * MR];
    size_t n = 0;
    bool known;
    if (x->opset < 11) {
        const int64_t *v;
        known = (attr_ints(x, "pads", &v, &n) || attr_ints(x, "paddings", &v, &n)) && n <= 2 * MR;
        if (known) memcpy(pads, v, n * sizeof *v);
    } else {
        known = ints_of(x, IN(x, 1), pads, 2 * MR, &n);
    }
    int64_t axes[MR];
    size_t na = (size_t)r;
    for (int i = 0; i < r; i++) axes[i] = i;
    if (x->opset >= 18 && IN(x, 3) >= 0) known = known && ints_of(x, IN(x, 3), axes, MR, &na);
    int64_t d[MR] = {0};
    memcpy(d, DIMS(x, a), (size_t)r * sizeof *d);
    if (!known || n != 2 * na) {
        if (known) return bad(x, "pads has %zu entries for %zu axes", n, na);
        for (int i = 0; i < r; i++) FRESH(d[i], 0, i);
        return set_out(x, 0, dt, r, d);
    }
    for (size_t i = 0; i < na; i++) {
        int64_t q = norm_axis(axes[i], r);
        if (q < 0 || q >= r) return bad(x, "axis out of range");
        int64_t add = pads[i] + pads[i + na];
        if (d[q] < 0) { if (add) FRESH(d[q], 0, (int)q); continue; }
        d[q] += add;
        if (d[q] < 0) return bad(x, "padding makes dimension %lld negative", (long long)q);
    }
    bp_status s = set_out(x, 0, dt, r, d);
    int64_t ne = numel(d, r);
    x->nd->cost = ne > 0 ? (double)ne : 0;
    return s;
}

static bp_status inf_d2s(X *x)
{
    int32_t a = IN(x, 0);
    bp_dtype dt = DT(x, a);
    if (RANK(x, a) != 4) return RANK(x, a) < 0 ? set_unknown(x, 0, dt) : bad(x, "input must have rank 4");
    int64_t b = attr_i(x, "blocksize", 0);
    if (b <= 0) return bad(x, "blocksize must be positive");
    const int64_t *s = DIMS(x, a);
    int64_t d[4] = {s[0], s[1], s[2], s[3]};
    bool d2s = !strcmp(x->op, "DepthToSpace");
    for (int i = 1; i < 4; i++) {
        if (s[i] < 0) { FRESH(d[i], 0, i); continue; }
        if (i == 1) d[1] = d2s ? s[1] / (b * b) : s[1] * b * b;
        else d[i] = d2s ? s[i] * b : s[i] / b;
    }
    return set_out(x, 0, dt, 4, d);
}

static bp_status inf_rnn(X *x)
{
    int32_t a = IN(x, 0);
    bp_dtype dt = DT(x, a);
    int64_t hs = attr_i(x, "hidden_size", -1);
    int64_t nd = attr_s_is(x, "direction", "bidirectional") ? 2 : 1;
    bool layout = attr_i(x, "layout", 0) != 0;
    if (RANK(x, a) != 3) {
        for (int i = 0; i < x->nd->n_out; i++) { bp_status s = set_unknown(x, i, dt); if (s) return s; }
        return BP_OK;
    }
    const int64_t *s = DIMS(x, a);
    int64_t seq = layout ? s[1] : s[0], batch = layout ? s[0] : s[1];
    int64_t h;
    if (hs >= 0) h = hs;
    else FRESH(h, 0, 3);
    int64_t y[4], yh[3];
    if (layout) { y[0] = batch; y[1] = seq; y[2] = nd; y[3] = h; yh[0] = batch; yh[1] = nd; yh[2] = h; }
    else { y[0] = seq; y[1] = nd; y[2] = batch; y[3] = h; yh[0] = nd; yh[1] = batch; yh[2] = h; }
    bp_status st = set_out(x, 0, dt, 4, y);
    for (int i = 1; i < x->nd->n_out && !st; i++) st = set_out(x, i, dt, 3, yh);
    int64_t ny = numel(y, 4), in = s[2];
    if (ny >= 0 && in >= 0 && hs >= 0) {
        double gates = !strcmp(x->op, "LSTM") ? 4 : !strcmp(x->op, "GRU") ? 3 : 1;
        x->nd->cost = 2.0 * gates * (double)ny * (double)(in + hs);
    }
    return st;
}

static bp_status inf_onehot(X *x)
{
    int32_t ix = IN(x, 0);
    int r = RANK(x, ix);
    bp_dtype dt = DT(x, IN(x, 2));
    if (r < 0) return set_unknown(x, 0, dt);
    int64_t dv[1];
    size_t n;
    int64_t depth;
    const bp__ox_val *v = VAL(x, IN(x, 1));
    if (v && v->n == 1 && !val_has_sym(v, 0)) depth = v->is_float ? (int64_t)v->f[0] : v->i[0];
    else if (ints_of(x, IN(x, 1), dv, 1, &n)) depth = dv[0];
    else FRESH(depth, 0, r);
    int64_t ax = norm_axis(attr_i(x, "axis", -1), r + 1);
    if (ax < 0 || ax > r) return bad(x, "axis out of range");
    int64_t d[MR] = {0};
    for (int i = 0, j = 0; i <= r; i++) d[i] = i == ax ? depth : DIMS(x, ix)[j++];
    return set_out(x, 0, dt, r + 1, d);
}

static bp_status inf_dynamic_1d(X *x)
{
    /* NonZero [rank, ?], NonMaxSuppression [?, 3], Compress, Unique */
    int32_t a = IN(x, 0);
    int64_t d[2];
    if (!strcmp(x->op, "NonZero")) {
        if (RANK(x, a) < 0) return set_unknown(x, 0, BP_DT_I64);
        d[0] = RANK(x, a);
        FRESH(d[1], 0, 1);
        return set_out(x, 0, BP_DT_I64, 2, d);
    }
    if (!strcmp(x->op, "NonMaxSuppression")) {
        FRESH(d[0], 0, 0);
        d[1] = 3;
        return set_out(x, 0, BP_DT_I64, 2, d);
    }
    if (!strcmp(x->op, "Compress")) {
        int r = RANK(x, a);
        const Onnx__AttributeProto *at = attr(x, "axis");
        if (!at || r < 0) { FRESH(d[0], 0, 0); return set_out(x, 0, DT(x, a), 1, d); }
        int64_t ax = norm_axis(at->i, r), dd[MR];
        if (ax < 0 || ax >= r) return bad(x, "axis out of range");
        memcpy(dd, DIMS(x, a), (size_t)r * sizeof *dd);
        FRESH(dd[ax], 0, (int)ax);
        return set_out(x, 0, DT(x, a), r, dd);
    }
    /* Unique */
    for (int i = 0; i < x->nd->n_out; i++) {
        FRESH(d[0], i, 0);
        bp_status s = set_out(x, i, i == 0 ? DT(x, a) : BP_DT_I64, 1, d);
        if (s) return s;
    }
    return BP_OK;
}

static bp_status inf_random(X *x)
{
    const int64_t *v;
    size_t n;
    bp_dtype dt = bp__ox_dtype((int32_t)attr_i(x, "dtype", 1));
    if (strstr(x->op, "Like")) {
        if (!attr(x, "dtype")) dt = DT(x, IN(x, 0));
        return copy_shape(x, 0, IN(x, 0), dt, false);
    }
    if (!attr_ints(x, "shape", &v, &n) || n > MR) return set_unknown(x, 0, dt);
    return set_out(x, 0, dt, (int)n, v);
}

static bp_status inf_quant(X *x)
{
    int32_t a = IN(x, 0);
    if (!strcmp(x->op, "QuantizeLinear")) {
        bp_dtype dt = IN(x, 2) >= 0 ? DT(x, IN(x, 2)) : BP_DT_U8;
        return copy_shape(x, 0, a, dt == BP_DT_UNKNOWN ? BP_DT_U8 : dt, false);
    }
    if (!strcmp(x->op, "DequantizeLinear")) {
        bp_dtype dt = DT(x, IN(x, 1));
        return copy_shape(x, 0, a, dt == BP_DT_UNKNOWN ? BP_DT_F32 : dt, false);
    }
    /* DynamicQuantizeLinear */
    bp_status s = copy_shape(x, 0, a, BP_DT_U8, false);
    if (!s) s = set_out(x, 1, BP_DT_F32, 0, NULL);
    if (!s) s = set_out(x, 2, BP_DT_U8, 0, NULL);
    return s;
}

static bp_status inf_grid_sample(X *x)
{
    int32_t a = IN(x, 0), gr = IN(x, 1);
    bp_dtype dt = DT(x, a);
    int r = RANK(x, a);
    if (r < 3 || RANK(x, gr) != r) return r < 0 || RANK(x, gr) < 0 ? set_unknown(x, 0, dt) : bad(x, "grid rank does not match");
    int64_t d[MR] = {0};
    d[0] = DIMS(x, a)[0];
    d[1] = DIMS(x, a)[1];
    for (int i = 2; i < r; i++) d[i] = DIMS(x, gr)[i - 1];
    return set_out(x, 0, dt, r, d);
}

static bp_status inf_eyelike(X *x)
{
    const Onnx__AttributeProto *at = attr(x, "dtype");
    bp_dtype dt = at && at->has_i ? bp__ox_dtype((int32_t)at->i) : DT(x, IN(x, 0));
    return copy_shape(x, 0, IN(x, 0), dt, false);
}

/* Ops whose outputs are sequences or optionals: not tensors of a known size. */
static bp_status inf_sequence(X *x)
{
    for (int i = 0; i < x->nd->n_out; i++) {
        int32_t t = OUT(x, i);
        if (t < 0) continue;
        if (!strcmp(x->op, "SequenceLength")) { bp_status s = set_out(x, i, BP_DT_I64, 0, NULL); if (s) return s; continue; }
        if (!strcmp(x->op, "OptionalHasElement")) { bp_status s = set_out(x, i, BP_DT_BOOL, 0, NULL); if (s) return s; continue; }
        x->c->t[t].not_sized = !strcmp(x->op, "SequenceAt") || !strcmp(x->op, "ConcatFromSequence") ||
                                       !strcmp(x->op, "OptionalGetElement") ? 0 : 1;
        bp_status s = set_unknown(x, i, BP_DT_UNKNOWN);
        if (s) return s;
    }
    return BP_OK;
}

/* ------------------------------------------------------------- dispatch */

typedef bp_status (*infer_fn)(X *x);
static const struct { const char *op; infer_fn fn; } table[] = {
    {"Add", inf_nary}, {"Sub", inf_nary}, {"Mul", inf_nary}, {"Div", inf_nary}, {"Pow", inf_nary}, {"Mod", inf_nary},
    {"Min", inf_nary}, {"Max", inf_nary}, {"Sum", inf_nary}, {"Mean", inf_nary}, {"Equal", inf_nary}, {"Less", inf_nary},
    {"Greater", inf_nary}, {"LessOrEqual", inf_nary}, {"GreaterOrEqual", inf_nary}, {"And", inf_nary}, {"Or", inf_nary},
    {"Xor", inf_nary}, {"Where", inf_nary}, {"BitShift", inf_nary}, {"BitwiseAnd", inf_nary}, {"BitwiseOr", inf_nary},
    {"BitwiseXor", inf_nary},
    {"Relu", inf_unary}, {"LeakyRelu", inf_unary}, {"PRelu", inf_unary}, {"Sigmoid", inf_unary}, {"HardSigmoid", inf_unary},
    {"HardSwish", inf_unary}, {"Tanh", inf_unary}, {"Clip", inf_unary}, {"Erf", inf_unary}, {"Sqrt", inf_unary},
    {"Exp", inf_unary}, {"Log", inf_unary}, {"Neg", inf_unary}, {"Abs", inf_unary}, {"Reciprocal", inf_unary},
    {"Floor", inf_unary}, {"Ceil", inf_unary}, {"Round", inf_unary}, {"Sign", inf_unary}, {"Not", inf_unary},
    {"Elu", inf_unary}, {"Selu", inf_unary}, {"Celu", inf_unary}, {"Softplus", inf_unary}, {"Softsign", inf_unary},
    {"Gelu", inf_unary}, {"Mish", inf_unary}, {"ThresholdedRelu", inf_unary}, {"Shrink", inf_unary},
    {"Sin", inf_unary}, {"Cos", inf_unary}, {"Tan", inf_unary}, {"Asin", inf_unary}, {"Acos", inf_unary},
    {"Atan", inf_unary}, {"Sinh", inf_unary}, {"Cosh", inf_unary}, {"Asinh", inf_unary}, {"Acosh", inf_unary},
    {"Atanh", inf_unary}, {"IsNaN", inf_unary}, {"IsInf", inf_unary}, {"BitwiseNot", inf_unary},
    {"Softmax", inf_unary}, {"LogSoftmax", inf_unary}, {"Hardmax", inf_unary}, {"LRN", inf_unary},
    {"CumSum", inf_unary}, {"Trilu", inf_unary}, {"ReverseSequence", inf_unary}, {"MeanVarianceNormalization", inf_unary},
    {"Bernoulli", inf_unary},
    {"Identity", inf_identity}, {"Dropout", inf_identity},
    {"Cast", inf_cast}, {"CastLike", inf_cast},
    {"Shape", inf_shape}, {"Size", inf_shape},
    {"Constant", inf_constant}, {"ConstantOfShape", inf_constant_of_shape},
    {"Reshape", inf_reshape}, {"Flatten", inf_flatten}, {"Squeeze", inf_squeeze}, {"Unsqueeze", inf_unsqueeze},
    {"Transpose", inf_transpose}, {"Concat", inf_concat}, {"Split", inf_split}, {"Slice", inf_slice},
    {"Gather", inf_gather}, {"GatherElements", inf_gather}, {"GatherND", inf_gather},
    {"ScatterND", inf_same_as_data}, {"ScatterElements", inf_same_as_data}, {"Scatter", inf_same_as_data},
    {"Expand", inf_expand}, {"Tile", inf_tile}, {"Range", inf_range},
    {"ReduceMean", inf_reduce}, {"ReduceSum", inf_reduce}, {"ReduceMax", inf_reduce}, {"ReduceMin", inf_reduce},
    {"ReduceProd", inf_reduce}, {"ReduceL1", inf_reduce}, {"ReduceL2", inf_reduce}, {"ReduceLogSum", inf_reduce},
    {"ReduceLogSumExp", inf_reduce}, {"ReduceSumSquare", inf_reduce}, {"ArgMax", inf_reduce}, {"ArgMin", inf_reduce},
    {"TopK", inf_topk},
    {"Conv", inf_conv}, {"ConvTranspose", inf_conv}, {"ConvInteger", inf_conv}, {"QLinearConv", inf_conv},
    {"MaxPool", inf_pool}, {"AveragePool", inf_pool}, {"LpPool", inf_pool}, {"GlobalAveragePool", inf_pool},
    {"GlobalMaxPool", inf_pool}, {"GlobalLpPool", inf_pool},
    {"Gemm", inf_gemm}, {"MatMul", inf_gemm}, {"MatMulInteger", inf_gemm}, {"QLinearMatMul", inf_gemm},
    {"Einsum", inf_einsum},
    {"BatchNormalization", inf_norm}, {"InstanceNormalization", inf_norm}, {"LayerNormalization", inf_norm},
    {"GroupNormalization", inf_norm},
    {"Resize", inf_resize}, {"Upsample", inf_resize}, {"Pad", inf_pad},
    {"DepthToSpace", inf_d2s}, {"SpaceToDepth", inf_d2s},
    {"GRU", inf_rnn}, {"LSTM", inf_rnn}, {"RNN", inf_rnn},
    {"OneHot", inf_onehot},
    {"NonZero", inf_dynamic_1d}, {"NonMaxSuppression", inf_dynamic_1d}, {"Compress", inf_dynamic_1d}, {"Unique", inf_dynamic_1d},
    {"RandomNormal", inf_random}, {"RandomUniform", inf_random}, {"RandomNormalLike", inf_random}, {"RandomUniformLike", inf_random},
    {"QuantizeLinear", inf_quant}, {"DequantizeLinear", inf_quant}, {"DynamicQuantizeLinear", inf_quant},
    {"GridSample", inf_grid_sample}, {"EyeLike", inf_eyelike},
    {"SequenceConstruct", inf_sequence}, {"SequenceEmpty", inf_sequence}, {"SequenceAt", inf_sequence},
    {"SequenceInsert", inf_sequence}, {"SequenceErase", inf_sequence}, {"SequenceLength", inf_sequence},
    {"SplitToSequence", inf_sequence}, {"ConcatFromSequence", inf_sequence}, {"Optional", inf_sequence},
    {"OptionalGetElement", inf_sequence}, {"OptionalHasElement", inf_sequence},
};

static infer_fn find_fn(const char *op)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].op, op)) return table[i].fn;
    return NULL;
}

bool bp__ox_known_op(const char *op_type) { return find_fn(op_type) != NULL; }

bp_status bp__ox_infer(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    X x = {c, k, nd, nd->np, nd->np->op_type, c->opset, err};
    infer_fn fn = find_fn(x.op);
    if (!fn) return BP_ERR_UNSUPPORTED;
    nd->cost = 0;
    bp_status s = fn(&x);
    if (s) return s;
    if (nd->cost <= 0) {
        /* default cost: output elements */
        double e = 0;
        for (int i = 0; i < nd->n_out; i++) {
            int32_t t = OUT(&x, i);
            int64_t n = t >= 0 ? t_numel(&x, t) : -1;
            if (n > 0) e += (double)n;
        }
        nd->cost = e;
    }
    return BP_OK;
}

/* ----------------------------------------------------- tensor constants */

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
    int64_t n = numel(tp->dims, (int)tp->n_dims);
    if (n < 0 || n > BP__OX_VALUE_LIMIT) return BP_OK;
    if (dt == BP_DT_C64 || dt == BP_DT_C128 || dt == BP_DT_F8) return BP_OK;
    bool fl = is_float_dt(dt);
    size_t es = bp_dtype_size(dt);
    scratch *w = bp__alloc(c->a, sizeof *w);
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
