/*
 * graph_build.c — the bp_graph from the importer's tables, through the public
 * builder API: every tensor with its shape (symbols by name) when it has a
 * type and rank, otherwise dynamic ("?NAME" elements of its type, or bytes of
 * u8 when the type is unknown too); inputs, weights
 * (initializers), constants (outputs of constant nodes, unless
 * plan_constants) and graph outputs flagged; one op per node with its cost
 * and its attributes (attr_import.c);
 * then bp_graph_finalize.  The byte totals of the stats (weights, constants,
 * activations) are summed on the way.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

/* Bytes of a tensor from the importer's table (0 when not sized). */
static bool ox_static_bytes(const bp__ox *c, int32_t t, uint64_t *bytes)
{
    const bp__ox_tensor *x = &c->t[t];
    if (x->rank < 0 || x->dtype == BP_DT_UNKNOWN || x->not_sized) return false;
    uint64_t n = bp_dtype_size((bp_dtype)x->dtype);
    const int64_t *d = bp__ox_dims(c, t);
    for (int i = 0; i < x->rank; i++) {
        if (d[i] < 0) return false;
        if (!bp__mul_u64(n, (uint64_t)d[i], &n)) return false;
    }
    *bytes = n;
    return true;
}

/* Adds tensor t to the graph: with its shape when it has a type and rank,
 * otherwise as a dynamic tensor of unknown size ("?NAME" elements of its
 * type, u8 when that is unknown too). */
static bp_status ox_graph_tensor(bp__ox *c, bp_graph *g, int32_t t, bp_error *err)
{
    bp__ox_tensor *x = &c->t[t];
    const char *name = bp__names_get(&c->tn, t);
    int64_t dims[BP__OX_MAX_RANK];
    const char *syms[BP__OX_MAX_RANK];
    if (x->rank >= 0 && x->dtype != BP_DT_UNKNOWN && !x->not_sized) {
        const int64_t *d = bp__ox_dims(c, t);
        for (int i = 0; i < x->rank; i++) {
            dims[i] = d[i] >= 0 ? d[i] : BP_DIM_SYMBOLIC;
            syms[i] = d[i] >= 0 ? NULL : bp__ox_sym_name(c, d[i]);
        }
        return bp_graph_add_tensor_shape(g, name, (bp_dtype)x->dtype, x->rank, dims, syms, &x->gid, err);
    }
    int64_t f = bp__ox_fresh(c, name, 0);
    if (!f) return bp__ox_oom(c, err);
    dims[0] = BP_DIM_SYMBOLIC;
    syms[0] = bp__ox_sym_name(c, f);
    /* the element type when it is known (a tensor of unknown rank), else bytes */
    bp_dtype dt = x->dtype != BP_DT_UNKNOWN && !x->not_sized ? (bp_dtype)x->dtype : BP_DT_U8;
    return bp_graph_add_tensor_shape(g, name, dt, 1, dims, syms, &c->t[t].gid, err);
}

/* Inputs, then initializers, then node outputs (so ids follow that order),
 * with their flags; the byte stats by role. */
static bp_status ox_graph_tensors(bp__ox *c, bp_graph *g, bp_error *err)
{
    bp_status s;
    for (int pass = 0; pass < 3; pass++) {
        int role = pass == 0 ? BP__OX_INPUT : pass == 1 ? BP__OX_INIT : BP__OX_NODE;
        for (size_t t = 0; t < c->n_t; t++) {
            if (c->t[t].role != role) continue;
            if ((s = ox_graph_tensor(c, g, (int32_t)t, err))) return s;
            bp__ox_tensor *x = &c->t[t];
            unsigned fl = role == BP__OX_INPUT ? BP_TENSOR_INPUT : role == BP__OX_INIT ? BP_TENSOR_WEIGHT : 0;
            if (role == BP__OX_NODE && x->is_const && !c->opts->plan_constants) fl |= BP_TENSOR_CONST;
            if (fl && (s = bp_graph_mark(g, x->gid, fl, err))) return s;
            uint64_t b = 0;
            bool sized = ox_static_bytes(c, (int32_t)t, &b);
            if (c->st) {
                if (role == BP__OX_INIT) c->st->weight_bytes += b;
                else if (role == BP__OX_NODE) {
                    c->st->n_node_outputs++;
                    if (x->is_const) { c->st->const_bytes += b; c->st->n_constants++; }
                    else if (sized) c->st->activation_bytes += b;
                }
            }
        }
    }
    return BP_OK;
}

/* The reservation of a control-flow node's bodies: a tensor "NODE#bodies"
 * (made unique), sized when the bodies are planned. */
static bp_status ox_reserve_tensor(bp__ox *c, bp_graph *g, const bp__ox_node *nd, int32_t *out, bp_error *err)
{
    size_t n = strlen(nd->name) + 32;
    char *nm = bp__alloc(c->a, n);
    if (!nm) return bp__ox_oom(c, err);
    snprintf(nm, n, "%s#bodies", nd->name);
    for (int q = 1; bp_graph_find_tensor(g, nm) >= 0; q++) snprintf(nm, n, "%s#bodies%d", nd->name, q);
    bp_status s = bp_graph_add_tensor(g, nm, 0, out, err);
    bp__free(c->a, nm, n);
    return s;
}

/* Hands node nd's bodies to op op_id of g, with parent tensors as graph ids. */
static bp_status ox_attach_bodies(bp__ox *c, bp_graph *g, bp__ox_node *nd, int32_t op_id, int32_t reserve, bp_error *err)
{
    for (int i = 0; i < nd->n_bodies; i++) {
        bp__ox_body *b = &nd->bodies[i];
        for (int q = 0; q < b->n_io; q++)
            if (b->io[q].parent >= 0) b->io[q].parent = c->t[b->io[q].parent].gid;
        bp_graph *bg = b->g;
        b->g = NULL;   /* g owns it from here, also on failure */
        bp_status s = bp_graph_add_body(g, op_id, b->kind, bg, reserve, b->n_io, b->io, err);
        if (s) return s;
    }
    return BP_OK;
}

/* One op per node, in the file's order: inputs then captures, outputs
 * (omitted optionals left out); op type "domain::OpType" outside ai.onnx. */
static bp_status ox_graph_ops(bp__ox *c, bp_graph *g, bp_error *err)
{
    bp_status s = BP_OK;
    int32_t ins[65536 / 8];
    int32_t *ip = ins, *op_ = NULL;
    size_t ip_cap = sizeof ins / sizeof ins[0];
    for (size_t k = 0; k < c->n_nodes; k++) {
        bp__ox_node *nd = &c->nodes[k];
        size_t need = (size_t)nd->n_in + (size_t)nd->n_cap + (size_t)nd->n_out + 1;   /* + the reservation */
        if (need > ip_cap) {
            if (ip != ins) bp__free(c->a, ip, ip_cap * sizeof *ip);
            ip = bp__alloc(c->a, need * sizeof *ip);
            if (!ip) return bp__ox_oom(c, err);
            ip_cap = need;
        }
        int ni = 0, no = 0;
        for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
            int32_t t = j < nd->n_in ? c->io[nd->in_off + j] : c->io[nd->cap_off + j - nd->n_in];
            if (t >= 0) ip[ni++] = c->t[t].gid;
        }
        op_ = ip + ni;
        for (int32_t j = 0; j < nd->n_out; j++) {
            int32_t t = c->io[nd->out_off + j];
            if (t >= 0) op_[no++] = c->t[t].gid;
        }
        char type[256];
        if (nd->domain_default) snprintf(type, sizeof type, "%s", nd->np->op_type);
        else snprintf(type, sizeof type, "%s::%s", nd->np->domain, nd->np->op_type);
        int32_t reserve = -1, op_id = -1;
        if (nd->n_bodies && (s = ox_reserve_tensor(c, g, nd, &reserve, err))) break;
        if (reserve >= 0) op_[no++] = reserve;
        s = bp_graph_add_op(g, nd->name, type, ni, ip, no, op_, nd->cost, &op_id, err);
        if (!s) s = bp__ox_op_attrs(c, g, op_id, nd->np, err);
        if (!s && nd->n_bodies) s = ox_attach_bodies(c, g, nd, op_id, reserve, err);
        if (s) break;
    }
    if (ip != ins) bp__free(c->a, ip, ip_cap * sizeof *ip);
    return s;
}

bp_status bp__ox_build_graph(bp__ox *c, size_t n_outputs, bp_graph **out, bp_error *err)
{
    const char *slash = c->parent ? NULL : strrchr(c->file, '/');   /* a body keeps its whole path */
    bp_graph *g = bp_graph_new(slash ? slash + 1 : c->file, c->a);
    *out = g;
    if (!g) return bp__ox_oom(c, err);
    bp_status s = bp_graph_set_limits(g, bp__limits(c->opts->limits), err);
    if (!s) s = ox_graph_tensors(c, g, err);
    for (size_t v = 0; v < n_outputs && !s; v++) {
        /* graph outputs are the last n_outputs kept value infos */
        const Onnx__ValueInfoProto *vi = c->vinfo[c->n_vinfo - n_outputs + v];
        int32_t t = bp__ox_find(c, vi->name);
        s = bp_graph_mark(g, c->t[t].gid, BP_TENSOR_OUTPUT, err);
    }
    if (!s) s = ox_graph_ops(c, g, err);
    if (s) return s;
    if (!c->n_nodes) return bp__err(err, BP_ERR_INVALID, "%s: the graph has no nodes", c->file);
    if ((s = bp_graph_finalize(g, err))) return s;
    if (c->st)
        for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) c->st->n_dynamic += bp_graph_tensor_is_dynamic(g, t) ? 1 : 0;
    return BP_OK;
}

#endif /* BP_HAVE_ONNX */
