/*
 * attrs.c — the attributes of ops (ONNX node attributes, the "attrs" object
 * of an op in graph JSON): typed name/value pairs a kernel reads at run time
 * (bp_graph_op_attr_*).  The planner never looks at them.
 *
 * Layout: one array of entries sorted by op (stable: an op's attributes keep
 * the order they were added in), so an op's attributes are one contiguous
 * run found by binary search; names and string values in one character
 * pool, integer values in one int64 array, float values in one float array,
 * each entry holding offsets into them (offsets, not pointers, so growing a
 * pool never invalidates an entry).  Adding to a later op is an append;
 * adding to an earlier op (rare: builders go op by op) moves the tail.
 */
#include "graph/graph_internal.h"

#include <string.h>

typedef struct bp__attr_entry {
    int32_t op;
    uint8_t type;          /* bp_attr_type */
    size_t name;           /* offset into ch */
    size_t val;            /* INT/INTS: into ints; FLOAT/FLOATS: into fl; STRING: into ch */
    size_t n;              /* INTS/FLOATS: values; STRING: bytes (without the NUL) */
} bp__attr_entry;

struct bp__attrs {
    bp__attr_entry *e;   size_t n_e, cap_e;
    int64_t *ints;       size_t n_ints, cap_ints;
    float *fl;           size_t n_fl, cap_fl;
    char *ch;            size_t n_ch, cap_ch;
};

void bp__attrs_free(bp_graph *g)
{
    bp__attrs *A = g->attrs;
    if (!A) return;
    const bp_allocator *a = &g->alloc;
    bp__free(a, A->e, A->cap_e * sizeof *A->e);
    bp__free(a, A->ints, A->cap_ints * sizeof *A->ints);
    bp__free(a, A->fl, A->cap_fl * sizeof *A->fl);
    bp__free(a, A->ch, A->cap_ch);
    bp__free(a, A, sizeof *A);
    g->attrs = NULL;
}

/* First entry of op (or where it would go) in [0, n_e]. */
static size_t at_lower(const bp__attrs *A, int32_t op)
{
    size_t lo = 0, hi = A->n_e;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (A->e[mid].op < op) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* The run of op's entries: *first and the count. */
static int at_run(const bp_graph *g, int32_t op, size_t *first)
{
    const bp__attrs *A = g ? g->attrs : NULL;
    *first = 0;
    if (!A || op < 0 || (size_t)op >= g->n_o) return 0;
    size_t lo = at_lower(A, op), hi = lo;
    while (hi < A->n_e && A->e[hi].op == op) hi++;
    *first = lo;
    return (int)(hi - lo);
}

/* Copies n bytes (plus a NUL) into the character pool; offset in *off. */
static bool at_chars(const bp_allocator *a, bp__attrs *A, const char *s, size_t n, size_t *off)
{
    if (n > SIZE_MAX - 1 - A->n_ch || !bp__grow(a, (void **)&A->ch, &A->cap_ch, A->n_ch + n + 1, 1)) return false;
    if (n) memcpy(A->ch + A->n_ch, s, n);
    A->ch[A->n_ch + n] = 0;
    *off = A->n_ch;
    A->n_ch += n + 1;
    return true;
}

/* Appends n values of elem bytes from src to the array *arr (length *len,
 * capacity *cap); their index in *off. */
static bool at_push(const bp_allocator *a, void **arr, size_t *len, size_t *cap, const void *src, size_t n, size_t elem,
                    size_t *off)
{
    if (!bp__grow(a, arr, cap, *len + n + 1, elem)) return false;
    if (n) memcpy((char *)*arr + *len * elem, src, n * elem);
    *off = *len;
    *len += n;
    return true;
}

/* Stores the value of x (type already checked) and fills e->val and e->n. */
static bool at_value(const bp_allocator *a, bp__attrs *A, const bp_attr *x, bp__attr_entry *e)
{
    size_t n = x->n > 0 ? (size_t)x->n : 0;
    bool ok;
    switch (x->type) {
    case BP_ATTR_INT: n = 1; ok = at_push(a, (void **)&A->ints, &A->n_ints, &A->cap_ints, &x->i, 1, sizeof x->i, &e->val); break;
    case BP_ATTR_INTS: ok = at_push(a, (void **)&A->ints, &A->n_ints, &A->cap_ints, x->ints, n, sizeof *x->ints, &e->val); break;
    case BP_ATTR_FLOAT: n = 1; ok = at_push(a, (void **)&A->fl, &A->n_fl, &A->cap_fl, &x->f, 1, sizeof x->f, &e->val); break;
    case BP_ATTR_FLOATS: ok = at_push(a, (void **)&A->fl, &A->n_fl, &A->cap_fl, x->floats, n, sizeof *x->floats, &e->val); break;
    default:
        if (!n && x->s) n = strlen(x->s);
        ok = at_chars(a, A, x->s ? x->s : "", n, &e->val);
        break;
    }
    e->n = n;
    return ok;
}

/* The problem with x as an attribute, or NULL when it is well formed. */
static const char *at_check(const bp_attr *x)
{
    if (!x->name || !*x->name) return "an attribute needs a name";
    if (x->type < BP_ATTR_INT || x->type > BP_ATTR_FLOATS) return "unknown attribute type";
    if (x->n < 0) return "a negative count";
    if (x->type == BP_ATTR_INTS && x->n && !x->ints) return "ints is NULL";
    if (x->type == BP_ATTR_FLOATS && x->n && !x->floats) return "floats is NULL";
    if (x->type == BP_ATTR_STRING && x->n && !x->s) return "s is NULL";
    return NULL;
}

bp_status bp_graph_add_op_attr(bp_graph *g, int32_t op, const bp_attr *x, bp_error *err)
{
    if (!g || !x) return bp__err(err, BP_ERR_USAGE, "bp_graph_add_op_attr: NULL argument");
    if (op < 0 || (size_t)op >= g->n_o) return bp__err(err, BP_ERR_USAGE, "%s: attribute: no op %d", g->name, (int)op);
    const char *opn = bp__names_get(&g->onames, op);
    const char *bad = at_check(x);
    if (bad) return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": attribute \"%s\": %s", g->name, opn, x->name ? x->name : "", bad);
    if (bp_graph_op_attr_find(g, op, x->name, NULL) >= 0)
        return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": attribute \"%s\" is given twice", g->name, opn, x->name);
    const bp_allocator *a = &g->alloc;
    if (!g->attrs && !(g->attrs = bp__calloc(a, 1, sizeof *g->attrs)))
        return bp__err(err, BP_ERR_NOMEM, "%s: op \"%s\": out of memory adding attribute \"%s\"", g->name, opn, x->name);
    bp__attrs *A = g->attrs;
    bp__attr_entry e = {op, (uint8_t)x->type, 0, 0, 0};
    if (!bp__grow(a, (void **)&A->e, &A->cap_e, A->n_e + 1, sizeof *A->e) || !at_chars(a, A, x->name, strlen(x->name), &e.name) ||
        !at_value(a, A, x, &e))
        return bp__err(err, BP_ERR_NOMEM, "%s: op \"%s\": out of memory adding attribute \"%s\"", g->name, opn, x->name);
    size_t at = at_lower(A, op + 1);   /* after op's last entry */
    memmove(A->e + at + 1, A->e + at, (A->n_e - at) * sizeof *A->e);
    A->e[at] = e;
    A->n_e++;
    return BP_OK;
}

int bp_graph_op_attr_count(const bp_graph *g, int32_t op)
{
    size_t first;
    return at_run(g, op, &first);
}

int bp_graph_op_attr_get(const bp_graph *g, int32_t op, int i, bp_attr *out)
{
    size_t first;
    int n = at_run(g, op, &first);
    if (i < 0 || i >= n) return 0;
    if (!out) return 1;
    const bp__attrs *A = g->attrs;
    const bp__attr_entry *e = &A->e[first + (size_t)i];
    memset(out, 0, sizeof *out);
    out->name = A->ch + e->name;
    out->type = (bp_attr_type)e->type;
    out->n = (int)e->n;
    switch (out->type) {
    case BP_ATTR_INT: out->i = A->ints[e->val]; out->ints = A->ints + e->val; break;
    case BP_ATTR_INTS: out->ints = A->ints + e->val; break;
    case BP_ATTR_FLOAT: out->f = A->fl[e->val]; out->floats = A->fl + e->val; break;
    case BP_ATTR_FLOATS: out->floats = A->fl + e->val; break;
    default: out->s = A->ch + e->val; break;
    }
    return 1;
}

int bp_graph_op_attr_find(const bp_graph *g, int32_t op, const char *name, bp_attr *out)
{
    size_t first;
    int n = at_run(g, op, &first);
    for (int i = 0; name && i < n; i++)
        if (!strcmp(g->attrs->ch + g->attrs->e[first + (size_t)i].name, name)) {
            if (out) bp_graph_op_attr_get(g, op, i, out);
            return i;
        }
    return -1;
}

const char *bp_graph_op_attr_name(const bp_graph *g, int32_t op, int i)
{
    bp_attr x;
    return bp_graph_op_attr_get(g, op, i, &x) ? x.name : NULL;
}

bp_attr_type bp_graph_op_attr_type(const bp_graph *g, int32_t op, int i)
{
    bp_attr x;
    return bp_graph_op_attr_get(g, op, i, &x) ? x.type : BP_ATTR_NONE;
}

int64_t bp_graph_op_attr_int(const bp_graph *g, int32_t op, const char *name, int64_t dflt)
{
    bp_attr x;
    return bp_graph_op_attr_find(g, op, name, &x) >= 0 && x.type == BP_ATTR_INT ? x.i : dflt;
}

float bp_graph_op_attr_float(const bp_graph *g, int32_t op, const char *name, float dflt)
{
    bp_attr x;
    return bp_graph_op_attr_find(g, op, name, &x) >= 0 && x.type == BP_ATTR_FLOAT ? x.f : dflt;
}

const char *bp_graph_op_attr_string(const bp_graph *g, int32_t op, const char *name)
{
    bp_attr x;
    return bp_graph_op_attr_find(g, op, name, &x) >= 0 && x.type == BP_ATTR_STRING ? x.s : NULL;
}

int bp_graph_op_attr_ints(const bp_graph *g, int32_t op, const char *name, const int64_t **vals)
{
    bp_attr x;
    if (bp_graph_op_attr_find(g, op, name, &x) < 0 || x.type != BP_ATTR_INTS) return -1;
    if (vals) *vals = x.ints;
    return x.n;
}

int bp_graph_op_attr_floats(const bp_graph *g, int32_t op, const char *name, const float **vals)
{
    bp_attr x;
    if (bp_graph_op_attr_find(g, op, name, &x) < 0 || x.type != BP_ATTR_FLOATS) return -1;
    if (vals) *vals = x.floats;
    return x.n;
}

bp_status bp__attrs_copy(bp_graph *dst, const bp_graph *src, bp_error *err)
{
    const bp__attrs *A = src->attrs;
    for (size_t k = 0; A && k < A->n_e; k++) {
        int32_t op = A->e[k].op;
        size_t first;
        at_run(src, op, &first);
        bp_attr x;
        bp_graph_op_attr_get(src, op, (int)(k - first), &x);
        bp_status s = bp_graph_add_op_attr(dst, op, &x, err);
        if (s) return s;
    }
    return BP_OK;
}
