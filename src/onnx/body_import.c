/*
 * body_import.c — the bodies of If, Loop and Scan: each subgraph attribute is
 * imported as a graph of its own by a child context that runs the same
 * phases as the main graph (initializers, inputs, outer-scope values, nodes,
 * value_info, node inputs, topological order, shape inference, graph
 * building), so bodies nest to any depth.  The child starts with the
 * parent's symbols (same codes), reads outer-scope values as inputs with the
 * parent's shapes and values, and its output shapes come back to the parent
 * as the control-flow node's outputs:
 *   If:   a condition that folded keeps only the branch taken; otherwise both
 *         branches, and a dimension on which they disagree is a fresh symbol.
 *   Loop: (iteration, condition, carried...) -> (condition, carried...,
 *         stacked...); a carried value whose shape the body changes is
 *         imported again with those dimensions symbolic; stacked outputs have
 *         the trip count as their first dimension when the loop provably runs
 *         exactly M times (M known, the condition constant true in and out).
 *   Scan: (states..., slices...) -> (states..., stacked...), along the axes
 *         the attributes give.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <stdlib.h>
#include <string.h>

#define OX_MAX_BODY_DEPTH 32   /* bodies inside bodies (SECURITY.md) */

/* A body input or output as the node sees it: its shape (set = override the
 * declared type) and how it meets the parent (kind, parent tensor, link). */
typedef struct ox_port {
    bool set;
    bp_dtype dt;
    int rank;
    int64_t dims[BP__OX_MAX_RANK];
    bp_body_io_kind kind;
    int32_t parent;      /* importer tensor id in the parent, -1 */
    int32_t link;        /* carried inputs: index of the body output feeding it */
    bool is_true;        /* a condition known true (then the body sees it as a value) */
} ox_port;

/* A body output's inferred shape, in the parent's symbol codes. */
typedef struct ox_shape {
    bool known;
    bp_dtype dt;
    int rank;
    int64_t dims[BP__OX_MAX_RANK];
    bool const_true;     /* a bool whose value folded to true */
    int32_t passthrough; /* index of the body input it is, -1 */
} ox_shape;

/* ------------------------------------------------------- the child context */

/* The child of c that imports node k's attribute `attr`. */
static bp_status ox_child_init(bp__ox *cc, bp__ox *c, int32_t k, const char *attr, bp_error *err)
{
    bp__ox_init(cc, c->a, c->file, c->opts, NULL);
    cc->warn = c->warn;
    cc->opset = c->opset;
    cc->model = c->model;
    cc->parent = c;
    cc->depth = c->depth + 1;
    cc->infer_control = c->infer_control;
    cc->ms_domain = c->ms_domain;
    cc->borrowed = 1;
    const bp__ox_node *nd = &c->nodes[k];
    if (cc->depth > OX_MAX_BODY_DEPTH)
        return bp__err(err, BP_ERR_LIMIT, "%s: node \"%s\" (%s): bodies nested more than %d deep", c->file, nd->name,
                       nd->np->op_type, OX_MAX_BODY_DEPTH);
    size_t n = strlen(c->file) + strlen(nd->name) + strlen(nd->np->op_type) + strlen(attr) + 16;
    cc->file_buf = bp__alloc(c->a, n);
    if (!cc->file_buf) return bp__ox_oom(c, err);
    snprintf(cc->file_buf, n, "%s: %s \"%s\" %s", c->file, nd->np->op_type, nd->name, attr);
    cc->file = cc->file_buf;
    return bp__ox_syms_copy(cc, c, err);
}

/* Copies parent tensor p (type, shape, values) into child tensor t. */
static bp_status ox_copy_from_parent(bp__ox *cc, int32_t t, const bp__ox *c, int32_t p, bp_error *err)
{
    const bp__ox_tensor *x = &c->t[p];
    cc->t[t].not_sized = x->not_sized;
    cc->t[t].is_const = x->is_const;
    bp_status s = bp__ox_set_shape(cc, t, (bp_dtype)x->dtype, x->rank, x->rank >= 0 ? bp__ox_dims(c, p) : NULL, err);
    const bp__ox_val *v = bp__ox_value(c, p);
    if (s || !v) return s;
    return v->is_float ? bp__ox_set_fval(cc, t, v->n, v->f, err) : bp__ox_set_ival(cc, t, v->n, v->i, v->sym, err);
}

/* The body's initializers. */
static bp_status ox_child_inits(bp__ox *cc, const Onnx__GraphProto *gp, bp_error *err)
{
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        int32_t id, ex;
        if (!tp->name || !*tp->name) return bp__err(err, BP_ERR_INVALID, "%s: an initializer has no name", cc->file);
        bp_status s = bp__ox_add_tensor(cc, tp->name, strlen(tp->name), BP__OX_INIT, &id, &ex, err);
        if (s) return s;
        if (id == -2) return bp__err(err, BP_ERR_INVALID, "%s: initializer \"%s\" is defined twice", cc->file, tp->name);
        cc->t[id].is_const = 1;
        if ((s = bp__ox_tensor_from_proto(cc, id, tp, err))) return s;
    }
    return BP_OK;
}

/* The body's declared inputs, with the node's shapes where ports say. */
static bp_status ox_child_inputs(bp__ox *cc, const Onnx__GraphProto *gp, const ox_port *in, bp_error *err)
{
    if (!in && gp->n_input) return bp__err(err, BP_ERR_INVALID, "%s: a branch of If takes no inputs, this one has %zu", cc->file, gp->n_input);
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) return bp__err(err, BP_ERR_INVALID, "%s: body input %zu has no name", cc->file, i);
        int32_t id, ex;
        bp_status s = bp__ox_add_tensor(cc, vi->name, strlen(vi->name), BP__OX_INPUT, &id, &ex, err);
        if (s) return s;
        if (id == -2) return bp__err(err, BP_ERR_INVALID, "%s: body input \"%s\" is listed twice", cc->file, vi->name);
        if ((s = bp__ox_shape_from_type(cc, id, vi->type, err))) return s;
        if (in[i].set && (s = bp__ox_set_shape(cc, id, in[i].dt, in[i].rank, in[i].dims, err))) return s;
        int64_t one = 1;
        if (in[i].is_true && (s = bp__ox_set_ival(cc, id, 1, &one, NULL, err))) return s;
    }
    return BP_OK;
}

/* Outer-scope values: every tensor node k reads (inputs and captures) that
 * the body does not define becomes a body input with the parent's shape. */
static bp_status ox_child_outer(bp__ox *cc, const bp__ox *c, int32_t k, bp_error *err)
{
    const bp__ox_node *nd = &c->nodes[k];
    for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
        int32_t p = j < nd->n_in ? c->io[nd->in_off + j] : c->io[nd->cap_off + j - nd->n_in];
        if (p < 0) continue;
        const char *nm = bp__names_get(&c->tn, p);
        int32_t id, ex;
        bp_status s = bp__ox_add_tensor(cc, nm, strlen(nm), BP__OX_INPUT, &id, &ex, err);
        if (s) return s;
        if (id == -2) continue;   /* defined in the body (or already read) */
        if ((s = ox_copy_from_parent(cc, id, c, p, err))) return s;
    }
    return BP_OK;
}

/* The body's nodes (their protobufs stay the parent's). */
static bp_status ox_child_nodes(bp__ox *cc, const Onnx__GraphProto *gp, bp_error *err)
{
    if (!gp->n_node) return bp__err(err, BP_ERR_UNSUPPORTED, "%s: a body without nodes is not supported", cc->file);
    cc->nodes = bp__calloc(cc->a, gp->n_node, sizeof *cc->nodes);
    if (!cc->nodes) return bp__ox_oom(cc, err);
    cc->n_nodes = gp->n_node;
    bp__names used;
    memset(&used, 0, sizeof used);
    bp_status s = BP_OK;
    for (size_t i = 0; i < gp->n_node && !s; i++) s = bp__ox_register_node(cc, i, gp->node[i], &used, err);
    bp__names_free(cc->a, &used);
    return s;
}

/* value_info, then the outputs (last, as the graph builder expects). */
static bp_status ox_child_value_info(bp__ox *cc, const Onnx__GraphProto *gp, bp_error *err)
{
    for (size_t i = 0; i < gp->n_value_info + gp->n_output; i++) {
        bool is_out = i >= gp->n_value_info;
        Onnx__ValueInfoProto *vi = is_out ? gp->output[i - gp->n_value_info] : gp->value_info[i];
        int32_t t = vi->name && *vi->name ? bp__ox_find(cc, vi->name) : -1;
        if (t < 0 && is_out)
            return bp__err(err, BP_ERR_INVALID, "%s: body output \"%s\" is not defined", cc->file, vi->name ? vi->name : "");
        if (t < 0) continue;
        if (!bp__grow(cc->a, (void **)&cc->vinfo, &cc->cap_vinfo, cc->n_vinfo + 1, sizeof *cc->vinfo)) return bp__ox_oom(cc, err);
        cc->vinfo[cc->n_vinfo++] = vi;
        if (cc->t[t].role == BP__OX_NODE) cc->t[t].vi = (int32_t)cc->n_vinfo - 1;
    }
    return BP_OK;
}

/* Output j's shape in the parent's codes; whether it is a folded true, or
 * one of the body's inputs passed through. */
static bp_status ox_child_out_shape(bp__ox *c, bp__ox *cc, size_t n_shared, const Onnx__GraphProto *gp, size_t j, ox_shape *o,
                                    bp_error *err)
{
    memset(o, 0, sizeof *o);
    o->passthrough = -1;
    int32_t t = bp__ox_find(cc, gp->output[j]->name);
    const bp__ox_tensor *x = &cc->t[t];
    for (size_t i = 0; i < gp->n_input; i++)
        if (!strcmp(gp->input[i]->name, gp->output[j]->name)) o->passthrough = (int32_t)i;
    const bp__ox_val *v = bp__ox_value(cc, t);
    o->const_true = v && v->n == 1 && !bp__ox_val_has_sym(v, 0) && bp__ox_val_f(v, 0) != 0;
    if (x->not_sized) return BP_OK;
    o->dt = (bp_dtype)x->dtype;
    if (x->rank < 0 || x->dtype == BP_DT_UNKNOWN) return BP_OK;
    o->known = true;
    o->rank = x->rank;
    for (int i = 0; i < x->rank; i++) {
        o->dims[i] = bp__ox_sym_back(c, cc, n_shared, bp__ox_dims(cc, t)[i]);
        if (!o->dims[i]) return bp__ox_oom(c, err);
    }
    return BP_OK;
}

/* The io list of a body: inputs, outputs (gp order), then outer values. */
static bp_status ox_body_io(bp__ox *c, bp__ox *cc, int32_t k, const Onnx__GraphProto *gp, const ox_port *in, const ox_port *out,
                            bp__ox_body *b, bp_error *err)
{
    const bp__ox_node *nd = &c->nodes[k];
    size_t cap = gp->n_input + gp->n_output + (size_t)nd->n_in + (size_t)nd->n_cap;
    b->io = bp__alloc(c->a, (cap ? cap : 1) * sizeof *b->io);
    if (!b->io) return bp__ox_oom(c, err);
    b->cap_io = (int)(cap ? cap : 1);
    int n = 0;
    for (size_t i = 0; i < gp->n_input; i++)
        b->io[n++] = (bp_body_io){cc->t[bp__ox_find(cc, gp->input[i]->name)].gid, in[i].kind, in[i].parent, in[i].link};
    for (size_t j = 0; j < gp->n_output; j++)
        b->io[n++] = (bp_body_io){cc->t[bp__ox_find(cc, gp->output[j]->name)].gid, out[j].kind, out[j].parent, -1};
    for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
        int32_t p = j < nd->n_in ? c->io[nd->in_off + j] : c->io[nd->cap_off + j - nd->n_in];
        if (p < 0) continue;
        int32_t t = bp__ox_find(cc, bp__names_get(&c->tn, p));
        if (cc->t[t].role != BP__OX_INPUT) continue;
        bool formal = false;
        for (size_t i = 0; i < gp->n_input && !formal; i++) formal = !strcmp(gp->input[i]->name, bp__names_get(&c->tn, p));
        bool dup = false;
        for (int q = 0; q < n && !dup; q++) dup = b->io[q].kind == BP_BODY_OUTER && b->io[q].parent == p;
        if (!formal && !dup) b->io[n++] = (bp_body_io){cc->t[t].gid, BP_BODY_OUTER, p, -1};
    }
    b->n_io = n;
    return BP_OK;
}

/* Imports body gp of node k: ports give the inputs' shapes and how inputs
 * and outputs meet the node; shapes[] gets the outputs' shapes (n_output). */
static bp_status ox_body_import(bp__ox *c, int32_t k, const char *attr, const Onnx__GraphProto *gp, bp_body_kind kind,
                                const ox_port *in, const ox_port *out, bp__ox_body *b, ox_shape *shapes, bp_error *err)
{
    bp__ox cc;
    int32_t *order = NULL;
    size_t n_shared = c->syms.n;
    memset(b, 0, sizeof *b);
    b->kind = kind;
    bp_status s = ox_child_init(&cc, c, k, attr, err);
    if (!s) s = ox_child_inits(&cc, gp, err);
    if (!s) s = ox_child_inputs(&cc, gp, in, err);
    if (!s) s = ox_child_outer(&cc, c, k, err);
    if (!s) s = ox_child_nodes(&cc, gp, err);
    if (!s) s = ox_child_value_info(&cc, gp, err);
    if (!s) s = bp__ox_resolve_inputs(&cc, err);
    if (!s) s = bp__ox_topo_order(&cc, &order, err);
    if (!s) s = bp__ox_infer_nodes(&cc, order, err);
    if (!s) s = bp__ox_build_graph(&cc, gp->n_output, &b->g, err);
    for (size_t j = 0; j < gp->n_output && !s; j++) s = ox_child_out_shape(c, &cc, n_shared, gp, j, &shapes[j], err);
    if (!s) s = ox_body_io(c, &cc, k, gp, in, out, b, err);
    if (s) { bp_graph_free(b->g); b->g = NULL; }
    if (order) bp__ox_order_free(&cc, order);
    bp__ox_free(&cc);
    return s;
}

/* ------------------------------------------------------------ the node kinds */

/* The graph attribute `name` of node np, or NULL. */
static const Onnx__GraphProto *ox_graph_attr(const Onnx__NodeProto *np, const char *name)
{
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, name)) return np->attribute[i]->g;
    return NULL;
}

/* Appends body b to node k (taking it). */
static bp_status ox_keep_body(bp__ox *c, bp__ox_node *nd, bp__ox_body *b, bp_error *err)
{
    bp__ox_body *nb = bp__realloc(c->a, nd->bodies, (size_t)nd->n_bodies * sizeof *nb, (size_t)(nd->n_bodies + 1) * sizeof *nb);
    if (!nb) {
        bp_graph_free(b->g);
        bp__free(c->a, b->io, (size_t)b->cap_io * sizeof *b->io);
        return bp__ox_oom(c, err);
    }
    nd->bodies = nb;
    nd->bodies[nd->n_bodies++] = *b;
    return BP_OK;
}

/* Port from parent tensor p's shape (p < 0: unset). */
static void ox_port_from(const bp__ox *c, int32_t p, ox_port *o)
{
    if (p < 0 || c->t[p].rank < 0) return;
    o->set = true;
    o->dt = (bp_dtype)c->t[p].dtype;
    o->rank = c->t[p].rank;
    memcpy(o->dims, bp__ox_dims(c, p), (size_t)o->rank * sizeof *o->dims);
}

/* Sets node output j (may be omitted) from a shape; unknown stays dynamic. */
static bp_status ox_set_node_out(bp__ox *c, const bp__ox_node *nd, int32_t j, const ox_shape *sh, bp_error *err)
{
    int32_t t = j < nd->n_out ? c->io[nd->out_off + j] : -1;
    if (t < 0) return BP_OK;
    if (!sh->known) return sh->dt != BP_DT_UNKNOWN ? bp__ox_set_shape(c, t, sh->dt, -1, NULL, err) : BP_OK;   /* the type alone */
    return bp__ox_set_shape(c, t, sh->dt, sh->rank, sh->dims, err);
}

/* a and b merged: equal dims kept, others fresh symbols; unknown when the
 * types or ranks differ. */
static bp_status ox_merge(bp__ox *c, const bp__ox_node *nd, int32_t j, ox_shape *a, const ox_shape *b, bp_error *err)
{
    if (!a->known || !b->known || a->dt != b->dt || a->rank != b->rank) {
        if (a->dt != b->dt) a->dt = BP_DT_UNKNOWN;   /* the same type, unknown shape, keeps the type */
        a->known = false;
        return BP_OK;
    }
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) {
            a->dims[i] = bp__ox_fresh(c, nd->name, (int)j * 100 + i);
            if (!a->dims[i]) return bp__ox_oom(c, err);
        }
    return BP_OK;
}

static bp_status ox_infer_if(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    const char *attrs[2] = {"then_branch", "else_branch"};
    const Onnx__GraphProto *br[2] = {ox_graph_attr(nd->np, attrs[0]), ox_graph_attr(nd->np, attrs[1])};
    if (!br[0] || !br[1]) return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (If): it needs both then_branch and else_branch", c->file, nd->name);
    int32_t cond = nd->n_in > 0 ? c->io[nd->in_off] : -1;
    if (cond < 0) return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (If): it has no condition input", c->file, nd->name);
    const bp__ox_val *v = bp__ox_value(c, cond);
    int only = v && v->n >= 1 && !bp__ox_val_has_sym(v, 0) ? (bp__ox_val_f(v, 0) != 0 ? 0 : 1) : -1;
    ox_shape *sh[2] = {NULL, NULL};
    ox_port *out = NULL;
    bp_status s = BP_OK;
    size_t no = (size_t)nd->n_out;
    for (int b = 0; b < 2 && !s; b++)
        if (br[b]->n_output != no)
            s = bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (If): %s has %zu outputs, the node %zu", c->file, nd->name, attrs[b],
                        br[b]->n_output, no);
    if (!s) {
        sh[0] = bp__calloc(c->a, no ? no : 1, sizeof **sh);
        sh[1] = bp__calloc(c->a, no ? no : 1, sizeof **sh);
        out = bp__calloc(c->a, no ? no : 1, sizeof *out);
        if (!sh[0] || !sh[1] || !out) s = bp__ox_oom(c, err);
    }
    for (size_t j = 0; j < no && !s; j++) out[j] = (ox_port){.kind = BP_BODY_RESULT, .parent = c->io[nd->out_off + j], .link = -1};
    for (int b = 0; b < 2 && !s; b++) {
        if (only >= 0 && b != only) continue;
        bp__ox_body body;
        s = ox_body_import(c, k, attrs[b], br[b], b ? BP_BODY_ELSE : BP_BODY_THEN, NULL, out, &body, sh[b], err);
        if (!s) s = ox_keep_body(c, nd, &body, err);
    }
    int first = only >= 0 ? only : 0;
    for (size_t j = 0; j < no && !s; j++) {
        if (only < 0) s = ox_merge(c, nd, (int32_t)j, &sh[0][j], &sh[1][j], err);
        if (!s) s = ox_set_node_out(c, nd, (int32_t)j, &sh[first][j], err);
    }
    bp__free(c->a, sh[0], (no ? no : 1) * sizeof **sh);
    bp__free(c->a, sh[1], (no ? no : 1) * sizeof **sh);
    bp__free(c->a, out, (no ? no : 1) * sizeof *out);
    return s;
}

/* Loop and Scan share this: the body's input ports in[], output ports out[]
 * and, after the import, whether a carried value changed shape (then the
 * caller imports again with the changed dims symbolic). */
typedef struct ox_loop {
    size_t n_in, n_out;
    ox_port *in, *out;
    ox_shape *sh;
} ox_loop;

static void ox_loop_free(bp__ox *c, ox_loop *l)
{
    bp__free(c->a, l->in, (l->n_in ? l->n_in : 1) * sizeof *l->in);
    bp__free(c->a, l->out, (l->n_out ? l->n_out : 1) * sizeof *l->out);
    bp__free(c->a, l->sh, (l->n_out ? l->n_out : 1) * sizeof *l->sh);
}

static bp_status ox_loop_alloc(bp__ox *c, ox_loop *l, size_t n_in, size_t n_out, bp_error *err)
{
    l->n_in = n_in;
    l->n_out = n_out;
    l->in = bp__calloc(c->a, n_in ? n_in : 1, sizeof *l->in);
    l->out = bp__calloc(c->a, n_out ? n_out : 1, sizeof *l->out);
    l->sh = bp__calloc(c->a, n_out ? n_out : 1, sizeof *l->sh);
    if (!l->in || !l->out || !l->sh) return bp__ox_oom(c, err);
    for (size_t i = 0; i < n_in; i++) l->in[i].parent = l->in[i].link = -1;
    for (size_t j = 0; j < n_out; j++) l->out[j].parent = l->out[j].link = -1;
    return BP_OK;
}

/* Carried input i0+q fed by body output o0+q: where the body changed a
 * dimension, that dimension of the input becomes a fresh symbol; true when
 * something changed. */
static bool ox_generalize(bp__ox *c, const bp__ox_node *nd, ox_loop *l, size_t i0, size_t o0, size_t n)
{
    bool changed = false;
    for (size_t q = 0; q < n; q++) {
        ox_port *p = &l->in[i0 + q];
        const ox_shape *o = &l->sh[o0 + q];
        if (!p->set) continue;
        if (!o->known || o->rank != p->rank || o->dt != p->dt) { p->set = false; changed = true; continue; }
        for (int d = 0; d < p->rank; d++)
            if (p->dims[d] != o->dims[d] && p->dims[d] >= 0) {
                p->dims[d] = bp__ox_fresh(c, nd->name, (int)(i0 + q) * 100 + d);
                changed = true;
            }
    }
    return changed;
}

/* Imports the body, once more when a carried value changes shape. */
static bp_status ox_loop_body(bp__ox *c, int32_t k, const char *attr, const Onnx__GraphProto *gp, bp_body_kind kind, ox_loop *l,
                              size_t i0, size_t o0, size_t n_carried, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    for (int pass = 0;; pass++) {
        bp__ox_body body;
        bp_status s = ox_body_import(c, k, attr, gp, kind, l->in, l->out, &body, l->sh, err);
        if (s) return s;
        if (pass == 1 || !ox_generalize(c, nd, l, i0, o0, n_carried)) return ox_keep_body(c, nd, &body, err);
        bp_graph_free(body.g);
        bp__free(c->a, body.io, (size_t)body.cap_io * sizeof *body.io);
    }
}

/* Stacked node output j: the per-iteration shape with `len` inserted at axis. */
static bp_status ox_stacked(bp__ox *c, const bp__ox_node *nd, int32_t j, const ox_shape *per, int64_t len, int64_t axis,
                            bp_error *err)
{
    if (!per->known || per->rank + 1 > BP__OX_MAX_RANK) return BP_OK;
    int r = per->rank + 1;
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r)
        return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s): output axis %lld is out of range", c->file, nd->name, nd->np->op_type,
                       (long long)axis);
    ox_shape o = *per;
    o.rank = r;
    for (int d = 0, q = 0; d < r; d++) o.dims[d] = d == axis ? len : per->dims[q++];
    return ox_set_node_out(c, nd, j, &o, err);
}

static bp_status ox_infer_loop(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    const Onnx__GraphProto *gp = ox_graph_attr(nd->np, "body");
    if (!gp) return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (Loop): it has no body", c->file, nd->name);
    int32_t m = nd->n_in > 0 ? c->io[nd->in_off] : -1, cond = nd->n_in > 1 ? c->io[nd->in_off + 1] : -1;
    if (m < 0 && cond < 0)
        return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (Loop): it has neither a trip count nor a condition (it would never end)", c->file, nd->name);
    size_t n_car = nd->n_in > 2 ? (size_t)nd->n_in - 2 : 0;
    if (gp->n_input != n_car + 2 || gp->n_output < n_car + 1 || (size_t)nd->n_out != gp->n_output - 1)
        return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (Loop): the body has %zu inputs and %zu outputs; with %zu carried values it needs %zu inputs, and one output more than the node's %d",
                       c->file, nd->name, gp->n_input, gp->n_output, n_car, n_car + 2, (int)nd->n_out);
    ox_loop l;
    memset(&l, 0, sizeof l);
    size_t n_scan = gp->n_output - 1 - n_car;
    bp_status s = ox_loop_alloc(c, &l, gp->n_input, gp->n_output, err);
    const bp__ox_val *cv = bp__ox_value(c, cond);
    bool cond_in_true = cond < 0 || (cv && cv->n == 1 && !bp__ox_val_has_sym(cv, 0) && bp__ox_val_f(cv, 0) != 0);
    if (!s) {
        l.in[0] = (ox_port){true, BP_DT_I64, 0, {0}, BP_BODY_ITER, -1, -1, false};
        /* a condition true going in, which the body keeps true, is true on every
         * iteration (by induction): the body sees it as the value true */
        l.in[1] = (ox_port){true, BP_DT_BOOL, 0, {0}, BP_BODY_COND, cond, (int32_t)gp->n_input, cond_in_true};
        l.out[0] = (ox_port){.kind = BP_BODY_RESULT, .parent = -1, .link = -1};
        for (size_t q = 0; q < n_car; q++) {
            int32_t p = c->io[nd->in_off + 2 + (int32_t)q];
            l.in[2 + q] = (ox_port){.kind = BP_BODY_CARRIED, .parent = p, .link = (int32_t)(gp->n_input + 1 + q)};
            ox_port_from(c, p, &l.in[2 + q]);
            l.out[1 + q] = (ox_port){.kind = BP_BODY_RESULT, .parent = c->io[nd->out_off + (int32_t)q], .link = -1};
        }
        for (size_t q = 0; q < n_scan; q++)
            l.out[1 + n_car + q] = (ox_port){.kind = BP_BODY_STACK, .parent = c->io[nd->out_off + (int32_t)(n_car + q)], .link = -1};
        s = ox_loop_body(c, k, "body", gp, BP_BODY_LOOP, &l, 2, 1, n_car, err);
    }
    for (size_t q = 0; q < n_car && !s; q++) {
        ox_shape o = {.known = l.in[2 + q].set, .dt = l.in[2 + q].dt, .rank = l.in[2 + q].rank};
        memcpy(o.dims, l.in[2 + q].dims, sizeof o.dims);
        s = ox_set_node_out(c, nd, (int32_t)q, &o, err);
    }
    /* exactly M iterations: M known, the condition true going in and coming out */
    const bp__ox_val *mv = bp__ox_value(c, m);
    bool cond_out_true = !s && (l.sh[0].const_true || (l.sh[0].passthrough == 1 && cond_in_true));
    int64_t trips = 0;
    if (!s && mv && mv->n == 1 && !bp__ox_val_has_sym(mv, 0) && cond_in_true && cond_out_true && mv->i && mv->i[0] >= 0) trips = mv->i[0];
    else if (!s) { trips = bp__ox_fresh(c, nd->name, 9999); if (!trips) s = bp__ox_oom(c, err); }
    for (size_t q = 0; q < n_scan && !s; q++) s = ox_stacked(c, nd, (int32_t)(n_car + q), &l.sh[1 + n_car + q], trips, 0, err);
    ox_loop_free(c, &l);
    return s;
}

/* Scan attribute `name`[q] or 0. */
static int64_t ox_scan_axis(const bp__ox_node *nd, const char *name, size_t q)
{
    for (size_t i = 0; i < nd->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = nd->np->attribute[i];
        if (a->name && !strcmp(a->name, name)) return q < a->n_ints ? a->ints[q] : 0;
    }
    return 0;
}

static bp_status ox_infer_scan(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    bp__ox_op x = {c, k, nd, nd->np, "Scan", c->opset, err};
    const Onnx__GraphProto *gp = ox_graph_attr(nd->np, "body");
    int64_t m = bp__ox_attr_i(&x, "num_scan_inputs", -1);
    if (!gp || m < 1 || m > nd->n_in)
        return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (Scan): it needs a body and 1..%d num_scan_inputs", c->file, nd->name, (int)nd->n_in);
    if (c->opset < 9) return bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\" (Scan): Scan before opset 9 (with sequence_lens) is not supported", c->file, nd->name);
    size_t n_st = (size_t)(nd->n_in - m);
    if (gp->n_input != (size_t)nd->n_in || gp->n_output != (size_t)nd->n_out || gp->n_output < n_st)
        return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (Scan): the body has %zu inputs and %zu outputs, the node %d and %d", c->file,
                       nd->name, gp->n_input, gp->n_output, (int)nd->n_in, (int)nd->n_out);
    ox_loop l;
    memset(&l, 0, sizeof l);
    size_t n_scan_out = gp->n_output - n_st;
    int64_t len = 0;
    bool have_len = false;
    bp_status s = ox_loop_alloc(c, &l, gp->n_input, gp->n_output, err);
    for (size_t q = 0; q < n_st && !s; q++) {
        int32_t p = c->io[nd->in_off + (int32_t)q];
        l.in[q] = (ox_port){.kind = BP_BODY_CARRIED, .parent = p, .link = (int32_t)(gp->n_input + q)};
        ox_port_from(c, p, &l.in[q]);
        l.out[q] = (ox_port){.kind = BP_BODY_RESULT, .parent = c->io[nd->out_off + (int32_t)q], .link = -1};
    }
    for (size_t q = 0; q < (size_t)m && !s; q++) {
        int32_t p = c->io[nd->in_off + (int32_t)(n_st + q)];
        ox_port *o = &l.in[n_st + q];
        *o = (ox_port){.kind = BP_BODY_SLICE, .parent = p, .link = -1};
        if (p < 0 || c->t[p].rank < 1) continue;
        int64_t ax = ox_scan_axis(nd, "scan_input_axes", q);
        int r = c->t[p].rank;
        if (ax < 0) ax += r;
        if (ax < 0 || ax >= r) { s = bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (Scan): scan input axis out of range", c->file, nd->name); break; }
        const int64_t *d = bp__ox_dims(c, p);
        if (!have_len || (len < 0 && d[ax] >= 0)) len = d[ax];   /* a known length wins over a symbol */
        have_len = true;
        o->set = true;
        o->dt = (bp_dtype)c->t[p].dtype;
        o->rank = r - 1;
        for (int i = 0, j = 0; i < r; i++) if (i != ax) o->dims[j++] = d[i];
    }
    for (size_t q = 0; q < n_scan_out && !s; q++)
        l.out[n_st + q] = (ox_port){.kind = BP_BODY_STACK, .parent = c->io[nd->out_off + (int32_t)(n_st + q)], .link = -1};
    if (!s) s = ox_loop_body(c, k, "body", gp, BP_BODY_SCAN, &l, 0, 0, n_st, err);
    for (size_t q = 0; q < n_st && !s; q++) {
        ox_shape o = {.known = l.in[q].set, .dt = l.in[q].dt, .rank = l.in[q].rank};
        memcpy(o.dims, l.in[q].dims, sizeof o.dims);
        s = ox_set_node_out(c, nd, (int32_t)q, &o, err);
    }
    if (!s && !have_len) { len = bp__ox_fresh(c, nd->name, 9999); if (!len) s = bp__ox_oom(c, err); }
    for (size_t q = 0; q < n_scan_out && !s; q++)
        s = ox_stacked(c, nd, (int32_t)(n_st + q), &l.sh[n_st + q], len, ox_scan_axis(nd, "scan_output_axes", q), err);
    ox_loop_free(c, &l);
    return s;
}

bp_status bp__ox_infer_control(bp__ox *c, int32_t k, bp_error *err)
{
    const char *op = c->nodes[k].np->op_type;
    if (!strcmp(op, "If")) return ox_infer_if(c, k, err);
    if (!strcmp(op, "Loop")) return ox_infer_loop(c, k, err);
    return ox_infer_scan(c, k, err);
}

#endif /* BP_HAVE_ONNX */
