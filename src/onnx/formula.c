/*
 * formula.c — the integer formulas of --op-shapes files (docs/FORMATS.md,
 * "Op shapes"): a recursive-descent parser that compiles a formula to
 * postfix tokens, and a stack evaluator over a node's input dims and
 * attributes.
 *
 * Grammar (precedence low to high; binary operators associate left):
 *   expr    = term { ("+" | "-") term }
 *   term    = unary { ("*" | "/" | "%") unary }
 *   unary   = "-" unary | primary
 *   primary = INT | "(" expr ")" | ("min" | "max" | "ceil_div") "(" expr "," expr ")"
 *           | "in" INT "[" ["-"] INT "]" | "in" INT ".rank"
 *           | "attr." NAME [ "[" ["-"] INT "]" ]
 *           | "out" INT "[" ["-"] INT "]"    (bp__fx_parse_ex with outs only)
 * "/" is floor division and "%" takes the divisor's sign (Python's rules).
 * A formula that is only a dim reference passes a symbolic dim through; any
 * other formula over a symbolic dim (or an unknown rank) gives an unknown
 * size.  Every operation is overflow-checked; the depth of nesting and the
 * length are bounded, so the parser's recursion and the evaluator's stack are.
 */
#include "onnx/custom.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------------- parser */

typedef struct fx_parser {
    const char *s;
    size_t n, p;
    int depth;
    bp__fx_tok *out;
    uint32_t n_out;
    int col;                       /* error column, 1-based */
    bool outs;                     /* outK[D] allowed (workspace formulas) */
    char *why;
    size_t why_cap;
} fx_parser;

static bool fx_fail(fx_parser *q, size_t at, const char *what)
{
    if (q->col) return false;      /* the first error wins */
    q->col = (int)at + 1;
    snprintf(q->why, q->why_cap, "%s", what);
    return false;
}

static void fx_skip(fx_parser *q)
{
    while (q->p < q->n && (q->s[q->p] == ' ' || q->s[q->p] == '\t')) q->p++;
}

static bool fx_is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static bool fx_is_word(char ch) { return ch == '_' || fx_is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* Whether the text at the cursor is the word w (not a prefix of a longer word). */
static bool fx_word_is(const fx_parser *q, const char *w)
{
    size_t l = strlen(w);
    return q->p + l <= q->n && !memcmp(q->s + q->p, w, l) && (q->p + l == q->n || !fx_is_word(q->s[q->p + l]));
}

static bool fx_emit(fx_parser *q, bp__fx_tok t)
{
    q->out[q->n_out++] = t;        /* at most one token per character: the array has n + 1 */
    return true;
}

/* A decimal integer at the cursor into *v (0 .. 2^63-1). */
static bool fx_int(fx_parser *q, int64_t *v)
{
    size_t at = q->p;
    if (q->p >= q->n || !fx_is_digit(q->s[q->p])) return fx_fail(q, at, "expected a number");
    int64_t x = 0;
    while (q->p < q->n && fx_is_digit(q->s[q->p])) {
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, q->s[q->p] - '0', &x))
            return fx_fail(q, at, "the number is over 2^63-1");
        q->p++;
    }
    *v = x;
    return true;
}

/* "[" ["-"] INT "]" into *v. */
static bool fx_index(fx_parser *q, int64_t *v)
{
    fx_skip(q);
    if (q->p >= q->n || q->s[q->p] != '[') return fx_fail(q, q->p, "expected '['");
    q->p++;
    fx_skip(q);
    bool neg = q->p < q->n && q->s[q->p] == '-';
    if (neg) q->p++;
    if (!fx_int(q, v)) return false;
    if (neg) *v = -*v;
    fx_skip(q);
    if (q->p >= q->n || q->s[q->p] != ']') return fx_fail(q, q->p, "expected ']'");
    q->p++;
    return true;
}

static bool fx_expr(fx_parser *q);

/* "in" INT "[" d "]" or "in" INT ".rank" (the cursor is on "in"); with
 * kw_len 3, "out" INT ...: output K is coded as input -(K + 1). */
static bool fx_input_ref(fx_parser *q, size_t kw_len)
{
    size_t at = q->p;
    q->p += kw_len;
    int64_t i;
    if (!fx_int(q, &i)) return false;
    if (i > 65535) return fx_fail(q, at, "input index over 65535");
    if (kw_len == 3) i = -(i + 1);
    if (q->p + 5 <= q->n && !memcmp(q->s + q->p, ".rank", 5) && (q->p + 5 == q->n || !fx_is_word(q->s[q->p + 5]))) {
        q->p += 5;
        return fx_emit(q, (bp__fx_tok){.kind = BP__FX_RANK, .a = (int32_t)i});
    }
    int64_t d;
    if (!fx_index(q, &d)) return false;
    if (d > BP_ONNX_MAX_RANK || d < -BP_ONNX_MAX_RANK) return fx_fail(q, at, "dimension index out of range");
    return fx_emit(q, (bp__fx_tok){.kind = BP__FX_DIM, .a = (int32_t)i, .v = d});
}

/* "attr." NAME ["[" k "]"] (the cursor is on "attr."). */
static bool fx_attr_ref(fx_parser *q)
{
    q->p += 5;
    size_t at = q->p;
    if (q->p >= q->n || !(fx_is_word(q->s[q->p]) && !fx_is_digit(q->s[q->p]))) return fx_fail(q, at, "expected an attribute name after 'attr.'");
    while (q->p < q->n && fx_is_word(q->s[q->p])) q->p++;
    bp__fx_tok t = {.kind = BP__FX_ATTR, .a = (int32_t)at, .name_len = (uint16_t)(q->p - at)};
    size_t save = q->p;
    fx_skip(q);
    if (q->p < q->n && q->s[q->p] == '[') {
        if (!fx_index(q, &t.v)) return false;
        t.has_index = 1;
    } else q->p = save;
    return fx_emit(q, t);
}

/* NAME "(" expr "," expr ")" for min, max and ceil_div (the cursor is on NAME). */
static bool fx_call(fx_parser *q, size_t name_len, uint8_t kind)
{
    q->p += name_len;
    fx_skip(q);
    if (q->p >= q->n || q->s[q->p] != '(') return fx_fail(q, q->p, "expected '(' after the function name");
    q->p++;
    if (!fx_expr(q)) return false;
    fx_skip(q);
    if (q->p >= q->n || q->s[q->p] != ',') return fx_fail(q, q->p, "expected ',' (the function takes two arguments)");
    q->p++;
    if (!fx_expr(q)) return false;
    fx_skip(q);
    if (q->p >= q->n || q->s[q->p] != ')') return fx_fail(q, q->p, "expected ')'");
    q->p++;
    return fx_emit(q, (bp__fx_tok){.kind = kind});
}

static bool fx_primary(fx_parser *q)
{
    fx_skip(q);
    size_t at = q->p;
    if (q->p >= q->n) return fx_fail(q, at, "unexpected end of the formula");
    char ch = q->s[q->p];
    if (fx_is_digit(ch)) {
        int64_t v;
        return fx_int(q, &v) && fx_emit(q, (bp__fx_tok){.kind = BP__FX_NUM, .v = v});
    }
    if (ch == '(') {
        q->p++;
        if (!fx_expr(q)) return false;
        fx_skip(q);
        if (q->p >= q->n || q->s[q->p] != ')') return fx_fail(q, q->p, "expected ')'");
        q->p++;
        return true;
    }
    if (q->p + 2 < q->n && !memcmp(q->s + q->p, "in", 2) && fx_is_digit(q->s[q->p + 2])) return fx_input_ref(q, 2);
    if (q->outs && q->p + 3 < q->n && !memcmp(q->s + q->p, "out", 3) && fx_is_digit(q->s[q->p + 3])) return fx_input_ref(q, 3);
    if (q->p + 5 <= q->n && !memcmp(q->s + q->p, "attr.", 5)) return fx_attr_ref(q);
    if (fx_word_is(q, "min")) return fx_call(q, 3, BP__FX_MIN);
    if (fx_word_is(q, "max")) return fx_call(q, 3, BP__FX_MAX);
    if (fx_word_is(q, "ceil_div")) return fx_call(q, 8, BP__FX_CEIL_DIV);
    if (fx_is_word(ch)) return fx_fail(q, at, "unknown name (expected inK[D], inK.rank, attr.NAME, min, max or ceil_div)");
    return fx_fail(q, at, "expected a number, a reference or '('");
}

static bool fx_unary(fx_parser *q)
{
    fx_skip(q);
    if (q->p < q->n && q->s[q->p] == '-') {
        q->p++;
        if (++q->depth > BP__FX_MAX_DEPTH) return fx_fail(q, q->p, "nested too deep");
        bool ok = fx_unary(q) && fx_emit(q, (bp__fx_tok){.kind = BP__FX_NEG});
        q->depth--;
        return ok;
    }
    return fx_primary(q);
}

static bool fx_term(fx_parser *q)
{
    if (!fx_unary(q)) return false;
    for (;;) {
        fx_skip(q);
        if (q->p >= q->n) return true;
        char ch = q->s[q->p];
        uint8_t k = ch == '*' ? BP__FX_MUL : ch == '/' ? BP__FX_DIV : ch == '%' ? BP__FX_MOD : 0;
        if (!k) return true;
        q->p++;
        if (!fx_unary(q)) return false;
        fx_emit(q, (bp__fx_tok){.kind = k});
    }
}

static bool fx_expr(fx_parser *q)
{
    if (++q->depth > BP__FX_MAX_DEPTH) return fx_fail(q, q->p, "nested too deep");
    bool ok = fx_term(q);
    while (ok) {
        fx_skip(q);
        if (q->p >= q->n || (q->s[q->p] != '+' && q->s[q->p] != '-')) break;
        uint8_t k = q->s[q->p] == '+' ? BP__FX_ADD : BP__FX_SUB;
        q->p++;
        ok = fx_term(q) && fx_emit(q, (bp__fx_tok){.kind = k});
    }
    q->depth--;
    return ok;
}

bp_status bp__fx_parse(const bp_allocator *a, const char *src, size_t len, bp__fx *f, int *col, char *why, size_t why_cap)
{
    return bp__fx_parse_ex(a, src, len, false, f, col, why, why_cap);
}

bp_status bp__fx_parse_ex(const bp_allocator *a, const char *src, size_t len, bool outs, bp__fx *f, int *col, char *why,
                          size_t why_cap)
{
    memset(f, 0, sizeof *f);
    *col = 0;
    if (len > BP__FX_MAX_LEN) {
        *col = BP__FX_MAX_LEN + 1;
        snprintf(why, why_cap, "the formula is longer than %d characters", BP__FX_MAX_LEN);
        return BP_ERR_INVALID;
    }
    fx_parser q = {.s = src, .n = len, .why = why, .why_cap = why_cap, .outs = outs};
    if (memchr(src, 0, len)) { *col = (int)((const char *)memchr(src, 0, len) - src) + 1; snprintf(why, why_cap, "a NUL character"); return BP_ERR_INVALID; }
    q.out = bp__calloc(a, len + 1, sizeof *q.out);
    if (!q.out) return BP_ERR_NOMEM;
    bool ok = fx_expr(&q);
    fx_skip(&q);
    if (ok && q.p < q.n) ok = fx_fail(&q, q.p, q.s[q.p] == ')' ? "unbalanced ')'" : "expected an operator");
    if (!ok) {
        bp__free(a, q.out, (len + 1) * sizeof *q.out);
        *col = q.col;
        return BP_ERR_INVALID;
    }
    f->src = bp__alloc(a, len + 1);
    if (!f->src) { bp__free(a, q.out, (len + 1) * sizeof *q.out); return BP_ERR_NOMEM; }
    if (len) memcpy(f->src, src, len);
    f->src[len] = 0;
    f->src_len = (uint32_t)len;
    f->t = q.out;
    f->n = q.n_out;
    return BP_OK;
}

void bp__fx_free(const bp_allocator *a, bp__fx *f)
{
    if (f->t) bp__free(a, f->t, ((size_t)f->src_len + 1) * sizeof *f->t);
    if (f->src) bp__free(a, f->src, (size_t)f->src_len + 1);
    memset(f, 0, sizeof *f);
}

/* -------------------------------------------------------------- evaluator */

/* A value on the stack: a known integer, or unknown (a symbol or an unknown rank was read). */
typedef struct fx_val {
    int64_t v;
    bool unknown;
} fx_val;

/* Formats msg and returns -1. */
static int fx_err(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fx_err(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* Input i of the node for a reference; NULL (msg set) when the node lacks it. */
static const bp_onnx_value *fx_input(const bp__fx *f, const bp_onnx_node_info *n, int32_t i, char *msg, size_t cap)
{
    if (i < 0) {   /* output -(i + 1): its value follows the inputs (bp__fx_parse_ex) */
        int32_t k = -(i + 1);
        if (k >= n->n_outputs) {
            fx_err(msg, cap, "formula \"%s\": the op has no output %d", f->src, (int)k);
            return NULL;
        }
        return &n->inputs[n->n_inputs + k];
    }
    if (i >= n->n_inputs || !n->inputs[i].name[0]) {
        fx_err(msg, cap, "formula \"%s\": the node has no input %d", f->src, (int)i);
        return NULL;
    }
    return &n->inputs[i];
}

/* inK[D]: the dim, or unknown for a symbol / unknown rank; *code gets a symbol's code. */
static int fx_dim(const bp__fx *f, const bp__fx_tok *t, const bp_onnx_node_info *n, fx_val *out, int64_t *code,
                  char *msg, size_t cap)
{
    const bp_onnx_value *x = fx_input(f, n, t->a, msg, cap);
    if (!x) return -1;
    if (x->rank < 0) { *out = (fx_val){0, true}; return 0; }
    int64_t d = t->v < 0 ? t->v + x->rank : t->v;
    if (d < 0 || d >= x->rank)
        return fx_err(msg, cap, "formula \"%s\": input %d has rank %d, so it has no dimension %lld", f->src, (int)t->a,
                      x->rank, (long long)t->v);
    int64_t v = x->dims[d];
    if (v < 0) { *code = v; *out = (fx_val){0, true}; return 0; }
    *out = (fx_val){v, false};
    return 0;
}

/* attr.NAME[k]: the node's attribute, else the entry's default. */
static int fx_attr(const bp__fx *f, const bp__fx_tok *t, const bp_onnx_node_info *n, const bp__fx_defaults *dflt,
                   fx_val *out, char *msg, size_t cap)
{
    char name[256];
    size_t l = t->name_len < sizeof name - 1 ? t->name_len : sizeof name - 1;
    memcpy(name, f->src + t->a, l);
    name[l] = 0;
    if (t->has_index) {
        const int64_t *v;
        size_t cnt;
        if (!bp_onnx_attr_ints(n->node, name, &v, &cnt))
            return fx_err(msg, cap, "formula \"%s\": the node has no ints attribute \"%s\"", f->src, name);
        int64_t k = t->v < 0 ? t->v + (int64_t)cnt : t->v;
        if (k < 0 || k >= (int64_t)cnt)
            return fx_err(msg, cap, "formula \"%s\": attribute \"%s\" has %zu values, so no index %lld", f->src, name,
                          cnt, (long long)t->v);
        *out = (fx_val){v[k], false};
        return 0;
    }
    int64_t v;
    if (bp_onnx_attr_int(n->node, name, &v)) { *out = (fx_val){v, false}; return 0; }
    for (size_t i = 0; dflt && i < dflt->n; i++)
        if (!strcmp(dflt->names[i], name)) { *out = (fx_val){dflt->values[i], false}; return 0; }
    return fx_err(msg, cap, "formula \"%s\": the node has no int attribute \"%s\" (and the entry's \"attrs\" gives no default)",
                  f->src, name);
}

/* Floor or ceiling division of known a, b (b != 0, no overflow). */
static int64_t fx_div(int64_t a, int64_t b, bool ceil)
{
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)) && !ceil) q--;
    if (r != 0 && ((r < 0) == (b < 0)) && ceil) q++;
    return q;
}

/* One binary operation on known values; -1 with msg on division by zero or overflow. */
static int fx_binop(const bp__fx *f, uint8_t k, int64_t a, int64_t b, int64_t *r, char *msg, size_t cap)
{
    bool ovf = false;
    switch (k) {
    case BP__FX_ADD: ovf = __builtin_add_overflow(a, b, r); break;
    case BP__FX_SUB: ovf = __builtin_sub_overflow(a, b, r); break;
    case BP__FX_MUL: ovf = __builtin_mul_overflow(a, b, r); break;
    case BP__FX_MIN: *r = a < b ? a : b; break;
    case BP__FX_MAX: *r = a > b ? a : b; break;
    default:
        if (b == 0) return fx_err(msg, cap, "formula \"%s\": division by zero", f->src);
        if (a == INT64_MIN && b == -1) { ovf = true; break; }
        if (k == BP__FX_MOD) { int64_t m = a % b; *r = m != 0 && ((m < 0) != (b < 0)) ? m + b : m; }
        else *r = fx_div(a, b, k == BP__FX_CEIL_DIV);
    }
    if (ovf) return fx_err(msg, cap, "formula \"%s\": the result overflows 64 bits", f->src);
    return 0;
}

/* One token onto the stack st[*sp]. */
static int fx_step(const bp__fx *f, const bp__fx_tok *t, const bp_onnx_node_info *n, const bp__fx_defaults *dflt,
                   fx_val *st, uint32_t *sp, int64_t *code, char *msg, size_t cap)
{
    switch (t->kind) {
    case BP__FX_NUM: st[(*sp)++] = (fx_val){t->v, false}; return 0;
    case BP__FX_DIM: return fx_dim(f, t, n, &st[(*sp)++], code, msg, cap);
    case BP__FX_RANK: {
        const bp_onnx_value *x = fx_input(f, n, t->a, msg, cap);
        if (!x) return -1;
        st[(*sp)++] = (fx_val){x->rank, x->rank < 0};
        return 0;
    }
    case BP__FX_ATTR: return fx_attr(f, t, n, dflt, &st[(*sp)++], msg, cap);
    case BP__FX_NEG:
        if (st[*sp - 1].unknown) return 0;
        return fx_binop(f, BP__FX_SUB, 0, st[*sp - 1].v, &st[*sp - 1].v, msg, cap);
    default: {
        fx_val b = st[--*sp], *a = &st[*sp - 1];
        bool divides = t->kind == BP__FX_DIV || t->kind == BP__FX_MOD || t->kind == BP__FX_CEIL_DIV;
        if (divides && !b.unknown && b.v == 0) return fx_binop(f, t->kind, 0, 0, &a->v, msg, cap);
        if (a->unknown || b.unknown) { a->unknown = true; return 0; }
        return fx_binop(f, t->kind, a->v, b.v, &a->v, msg, cap);
    }
    }
}

int bp__fx_eval(const bp__fx *f, const bp_onnx_node_info *n, const bp__fx_defaults *dflt, int64_t *dim, char *msg,
                size_t cap)
{
    fx_val st[BP__FX_MAX_LEN + 1];
    uint32_t sp = 0;
    int64_t code = 0;
    st[0] = (fx_val){0, false};
    if (!f->n) return fx_err(msg, cap, "an empty formula");
    for (uint32_t i = 0; i < f->n; i++)
        if (fx_step(f, &f->t[i], n, dflt, st, &sp, &code, msg, cap)) return -1;
    if (st[0].unknown) {
        /* only a formula that is just a symbolic dim reference keeps the symbol */
        *dim = f->n == 1 && f->t[0].kind == BP__FX_DIM && code < 0 ? code : BP_ONNX_DIM_FRESH;
        return 0;
    }
    if (st[0].v < 0) return fx_err(msg, cap, "formula \"%s\" gives %lld, a negative size", f->src, (long long)st[0].v);
    *dim = st[0].v;
    return 0;
}
