/*
 * concat.c — where Concat inputs and Split outputs lie in bytes, and the
 * order-independent merge of concat_inplace (docs/ARCHITECTURE.md, "Concat
 * in place").
 *
 * Geometry (bp__concat_layout, bp__split_layout): an op's pieces are
 * contiguous byte ranges of the whole tensor when every tensor has a static
 * shape of one rank and dtype, all dims agree except one axis whose sizes
 * add up, and every dim before that axis is 1 (or the axis is the outermost
 * one).  Piece i then starts at the sum of the bytes of pieces 0..i-1.
 *
 * Merge (bp__concat_merge), over storages that are already view groups:
 * Split outputs become views of their input at their offset; then the
 * Concats, in op order (a topological order for imported and generated
 * graphs; any order is sound), each all or nothing: every input becomes a
 * slice of the Concat's output at its offset, so the Concat writes no byte
 * of its own.  An input may join when it is the root of its own group (its
 * views move with it; a view itself may not join), is made by an op, is planned, holds no graph output
 * and is not already placed; or when its group's root is the output of an
 * earlier merged Concat whose inputs are the same tensors at the same
 * relative positions (DenseNet: every concat of a block is a prefix of the
 * next), which then becomes a slice itself.  Graph inputs, weights and
 * constants are never slices.  O(V + E) with a union-find.
 */
#include "graph/graph_internal.h"

#include <string.h>

bool bp__is_concat_type(const char *type)
{
    return !strcmp(type, "Concat") || !strcmp(type, "aten.cat") || !strcmp(type, "aten.concat");
}

bool bp__is_split_type(const char *type)
{
    return !strcmp(type, "Split") || !strcmp(type, "aten.split") || !strcmp(type, "aten.split_with_sizes") ||
           !strcmp(type, "aten.chunk");
}

/* Dim k of tensor t, bound symbols resolved; -1 when unknown. */
static int64_t dim_at(const bp_graph *g, int32_t t, int k)
{
    int64_t d = g->dims[g->t[t].dims_off + (uint32_t)k];
    if (!bp__dim_is_sym(d)) return d;
    int32_t s = bp__dim_sym(d);
    return (size_t)s < g->cap_sym_val ? g->sym_val[s] : -1;
}

/* Tensor t has a static shape (every dim known) and a known dtype. */
static bool static_shape(const bp_graph *g, int32_t t)
{
    const bp__tensor *x = &g->t[t];
    if (!x->has_shape || x->dynamic || x->dtype == BP_DT_UNKNOWN) return false;
    for (int i = 0; i < x->rank; i++)
        if (dim_at(g, t, i) < 0) return false;
    return true;
}

/* Whole = the pieces side by side along one axis, contiguously (see the
 * file comment); offs[i] gets piece i's byte offset. */
static bool pieces_layout(const bp_graph *g, int32_t whole, const int32_t *piece, int n, uint64_t *offs)
{
    const bp__tensor *w = &g->t[whole];
    if (n < 1 || !static_shape(g, whole)) return false;
    int rank = w->rank, axis = -1;
    for (int i = 0; i < n; i++) {
        const bp__tensor *x = &g->t[piece[i]];
        if (!static_shape(g, piece[i]) || x->rank != rank || x->dtype != w->dtype) return false;
        for (int k = 0; k < rank; k++)
            if (dim_at(g, piece[i], k) != dim_at(g, whole, k)) {
                if (axis >= 0 && axis != k) return false;
                axis = k;
            }
    }
    uint64_t off = 0;
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        offs[i] = off;
        off += g->t[piece[i]].bytes;
        if (axis >= 0) sum += dim_at(g, piece[i], axis);
    }
    if (off != w->bytes) return false;
    if (axis < 0) return n == 1;            /* one piece, the whole */
    if (sum != dim_at(g, whole, axis)) return false;
    for (int k = 0; k < axis; k++)
        if (dim_at(g, whole, k) != 1) return false;
    return true;
}

bool bp__concat_layout(const bp_graph *g, int32_t op, uint64_t *offs)
{
    const bp__op *x = &g->o[op];
    if (x->n_out != 1 || x->n_in < 1 || !bp__is_concat_type(bp__names_get(&g->types, x->type))) return false;
    return pieces_layout(g, bp__op_out(g, op)[0], bp__op_in(g, op), x->n_in, offs);
}

bool bp__split_layout(const bp_graph *g, int32_t op, uint64_t *offs)
{
    const bp__op *x = &g->o[op];
    if (x->n_in < 1 || x->n_out < 1 || !bp__is_split_type(bp__names_get(&g->types, x->type))) return false;
    return pieces_layout(g, bp__op_in(g, op)[0], bp__op_out(g, op), x->n_out, offs);
}

/* ------------------------------------------------------------------ merge */

typedef struct cm {
    const bp_graph *g;
    bp__storage *st;
    uint64_t *offs;          /* scratch: n_io */
    uint8_t *pinned;         /* per root: the group holds a graph output */
    int32_t *cat_op;         /* per root: the merged Concat whose output it is, or -1 */
} cm;

/* Moves every member of group r (a chain from head[r] through next[])
 * under root y, r's bytes starting at offset `at` of y's.  Groups stay flat:
 * every member names its root.  O(members of r). */
static void cm_move(cm *c, int32_t *next, int32_t *head, int32_t r, int32_t y, uint64_t at)
{
    int32_t last = -1;
    for (int32_t t = head[r]; t >= 0; t = next[t]) {
        c->st->root[t] = y;
        c->st->off[t] += at;
        last = t;
    }
    if (last >= 0) { next[last] = head[y]; head[y] = head[r]; head[r] = -1; }
    c->pinned[y] |= c->pinned[r];
}

/* Can the group rooted at r take a slice of Concat output y? */
static bool cm_fresh(const cm *c, int32_t r, int32_t y)
{
    const bp__tensor *t = &c->g->t[r];
    if (c->st->root[r] != r || r == y) return false;   /* a merged Concat's output may be a slice: a Concat of Concats */
    if (t->producer < 0 || !c->st->planned[r] || c->pinned[r]) return false;
    return !(t->flags & (BP_TENSOR_INPUT | BP_TENSOR_WEIGHT | BP_TENSOR_CONST | BP_TENSOR_OUTPUT));
}

/* Does merged Concat q (its output a root) appear among op's inputs from
 * index j on, the same tensors in the same order? */
static bool cm_nested_at(const cm *c, int32_t q, int32_t op, int j)
{
    const bp__op *a = &c->g->o[q], *b = &c->g->o[op];
    if (j < 0 || j + a->n_in > b->n_in) return false;
    for (int i = 0; i < a->n_in; i++)
        if (bp__op_in(c->g, q)[i] != bp__op_in(c->g, op)[j + i]) return false;
    return true;
}

/* One Concat, all or nothing: every input (or the group holding it) gets
 * its slice of the output, else nothing changes.  grp[i] gets the group
 * root that moves for input i (-1 when an earlier input's group covers it). */
static bool cm_concat(cm *c, int32_t op, int32_t *next, int32_t *head, int32_t *mark, int32_t *grp)
{
    const bp_graph *g = c->g;
    const bp__op *x = &g->o[op];
    int32_t y = bp__op_out(g, op)[0];
    const int32_t *in = bp__op_in(g, op);
    if (!bp__concat_layout(g, op, c->offs)) return false;
    if (c->st->root[y] != y || !c->st->planned[y] || head[y] < 0) return false;
    for (int i = 0; i < x->n_in;) {
        int32_t t = in[i], r = c->st->root[t];
        if (mark[r] == op) return false;          /* one group twice */
        mark[r] = op;
        grp[i] = r;
        if (r != t && c->cat_op[r] >= 0 && r != y) {   /* a merged Concat, nested here */
            int32_t q = c->cat_op[r];
            if (bp__op_in(g, q)[0] != t || !cm_nested_at(c, q, op, i)) return false;
            for (int m = 1; m < g->o[q].n_in; m++) grp[i + m] = -1;
            i += g->o[q].n_in;
            continue;
        }
        if (r != t || !cm_fresh(c, r, y)) return false;   /* a view's source is no slice of this Concat */
        i++;
    }
    for (int i = 0; i < x->n_in; i++) {
        int32_t r = grp[i];
        if (r < 0) continue;
        if (c->cat_op[r] >= 0) c->cat_op[r] = -1;
        else c->st->cat[r] = 1;
        cm_move(c, next, head, r, y, c->offs[i]);
    }
    c->st->cat[y] = 1;
    c->cat_op[y] = op;
    return true;
}

/* Split outputs as views of input 0 at their offsets (before any Concat). */
static void cm_splits(cm *c, int32_t *next, int32_t *head)
{
    const bp_graph *g = c->g;
    for (size_t op = 0; op < g->n_o; op++) {
        const bp__op *x = &g->o[op];
        if (!bp__split_layout(g, (int32_t)op, c->offs)) continue;
        int32_t src = bp__op_in(g, (int32_t)op)[0];
        int32_t r = c->st->root[src];
        uint64_t soff = c->st->off[src];
        for (int k = 0; k < x->n_out; k++) {
            int32_t t = bp__op_out(g, (int32_t)op)[k];
            if (c->st->root[t] != t || t == r) continue;
            if (!c->st->planned[t] || c->st->planned[r] != c->st->planned[t]) continue;
            cm_move(c, next, head, t, r, soff + c->offs[k]);
        }
    }
}

bp_status bp__concat_merge(const bp_graph *g, bp__storage *st, bp_error *err)
{
    size_t nt = g->n_t, nt1 = nt ? nt : 1, nio = g->n_io ? g->n_io : 1;
    const bp_allocator *a = &g->alloc;
    cm c = {g, st, NULL, NULL, NULL};
    st->off = bp__calloc(a, nt1, sizeof *st->off);
    st->cat = bp__calloc(a, nt1, 1);
    c.offs = bp__alloc(a, nio * sizeof *c.offs);
    c.pinned = bp__calloc(a, nt1, 1);
    c.cat_op = bp__alloc(a, nt1 * sizeof *c.cat_op);
    int32_t *next = bp__alloc(a, nt1 * sizeof *next), *head = bp__alloc(a, nt1 * sizeof *head);
    int32_t *mark = bp__alloc(a, nt1 * sizeof *mark), *grp = bp__alloc(a, nio * sizeof *grp);
    bp_status s = BP_OK;
    if (!st->off || !st->cat || !c.offs || !c.pinned || !c.cat_op || !next || !head || !mark || !grp) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory placing Concat inputs", g->name);
        goto done;
    }
    /* member chains per root; a group holds an output when any member is one */
    for (size_t t = 0; t < nt; t++) { head[t] = -1; next[t] = -1; c.cat_op[t] = -1; mark[t] = -1; }
    for (size_t t = nt; t-- > 0;) {
        int32_t r = st->root[t];
        next[t] = head[r];
        head[r] = (int32_t)t;
        if (g->t[t].flags & BP_TENSOR_OUTPUT) c.pinned[r] = 1;
    }
    cm_splits(&c, next, head);
    for (size_t op = 0; op < g->n_o; op++)
        if (bp__is_concat_type(bp__names_get(&g->types, g->o[op].type))) cm_concat(&c, (int32_t)op, next, head, mark, grp);
done:
    bp__free(a, c.offs, nio * sizeof *c.offs);
    bp__free(a, c.pinned, nt1);
    bp__free(a, c.cat_op, nt1 * sizeof *c.cat_op);
    bp__free(a, next, nt1 * sizeof *next);
    bp__free(a, head, nt1 * sizeof *head);
    bp__free(a, mark, nt1 * sizeof *mark);
    bp__free(a, grp, nio * sizeof *grp);
    return s;
}
