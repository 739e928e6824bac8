/*
 * graph_walk.c — the walk over a graph's nodes (the main graph's or a
 * body's): each node registered (named, its outputs added), node inputs
 * resolved to tensor ids, and the outer-scope
 * names that subgraphs (If / Loop / Scan bodies, at any depth) read collected
 * as extra inputs ("captures", free variables found with a stack of scopes);
 * a topological order (Kahn's algorithm, keeping the stored order when it is
 * one, naming a node on a cycle otherwise); shape inference in that order
 * (infer.c; control flow in body_import.c, which imports the bodies), with
 * declared value_info merged into what was inferred: unknowns
 * filled, fresh symbols renamed, disagreements warned about.
 */
#include "onnx/onnx_internal.h"
#include "onnx/custom.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

/* ---------------------------------------------------------------- nodes */

static bool ox_is_control_flow(const char *op)
{
    return !strcmp(op, "If") || !strcmp(op, "Loop") || !strcmp(op, "Scan");
}

static bp_status ox_node_name(bp__ox *c, bp__names *used, int32_t k, const char *nm, char **out, bp_error *err)
{
    char buf[64];
    size_t base_len = nm ? strlen(nm) : 0;
    size_t cap = base_len + 32;
    char *s = bp__alloc(c->a, cap);
    if (!s) return bp__ox_oom(c, err);
    if (base_len) memcpy(s, nm, base_len);
    s[base_len] = 0;
    size_t len = base_len;
    snprintf(buf, sizeof buf, "#%d", (int)k);
    if (!len) { strcpy(s, buf); len = strlen(s); }
    for (;;) {
        int32_t ex, id = bp__names_add(c->a, used, s, len, &ex);
        if (id >= 0) break;
        if (id == -1) { bp__free(c->a, s, cap); return bp__ox_oom(c, err); }
        size_t bl = strlen(buf);
        if (len + bl + 1 > cap) {
            char *ns = bp__realloc(c->a, s, cap, len + bl + 32);
            if (!ns) { bp__free(c->a, s, cap); return bp__ox_oom(c, err); }
            s = ns;
            cap = len + bl + 32;
        }
        memcpy(s + len, buf, bl + 1);
        len += bl;
    }
    /* shrink the allocation bookkeeping: we free with strlen + 1 later */
    char *fin = bp__alloc(c->a, len + 1);
    if (!fin) { bp__free(c->a, s, cap); return bp__ox_oom(c, err); }
    memcpy(fin, s, len + 1);
    bp__free(c->a, s, cap);
    *out = fin;
    return BP_OK;
}

/* Node k (np, unpacked): check its op type and domain, name it, register its
 * outputs.  Shared with the bodies of control flow (body_import.c). */
bp_status bp__ox_register_node(bp__ox *c, size_t k, Onnx__NodeProto *np, bp__names *used_names, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    nd->np = np;
    bp_status s;
    if (!np->op_type || !*np->op_type)
        return bp__err(err, BP_ERR_INVALID, "%s: node %zu (\"%s\") has no op_type", c->file, k, np->name ? np->name : "");
    if ((s = ox_node_name(c, used_names, (int32_t)k, np->name, &nd->name, err))) return s;
    nd->domain_default = bp__ox_is_default_domain(np->domain);
    if (!nd->domain_default && !bp__ox_domain_imported(c, c->model, np->domain))
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\" (%s): its domain \"%s\" is not in the model's opset_import", c->file,
                       nd->name, np->op_type, np->domain);
    if (nd->domain_default && c->opset == 0)
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\" (%s): the model imports no opset for domain \"ai.onnx\"", c->file,
                       nd->name, np->op_type);
    nd->control_flow = nd->domain_default && ox_is_control_flow(np->op_type);
    if (np->n_input > 65535 || np->n_output > 65535)
        return bp__err(err, BP_ERR_LIMIT, "%s: node \"%s\": too many inputs or outputs", c->file, nd->name);
    nd->n_out = (int32_t)np->n_output;
    if (!bp__grow(c->a, (void **)&c->io, &c->cap_io, c->n_io + np->n_output, sizeof *c->io)) return bp__ox_oom(c, err);
    nd->out_off = (int32_t)c->n_io;
    for (size_t j = 0; j < np->n_output; j++) {
        const char *on = np->output[j];
        int32_t id = -1, ex;
        if (on && *on) {
            if ((s = bp__ox_add_tensor(c, on, strlen(on), BP__OX_NODE, &id, &ex, err))) return s;
            if (id == -2) {
                const bp__ox_tensor *o = &c->t[ex];
                return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s): output \"%s\" is already %s", c->file, nd->name,
                               np->op_type, on,
                               o->role == BP__OX_INPUT ? "a graph input" : o->role == BP__OX_INIT ? "an initializer"
                                                                                             : "produced by another node");
            }
            c->t[id].producer = (int32_t)k;
        }
        c->io[c->n_io++] = id;
    }
    return BP_OK;
}

/* ------------------------------------------------------------- captures */

/* Free variables of a subgraph: names its nodes read that neither it nor an
 * enclosing subgraph defines.  scope[0..depth-1] are the enclosing sets. */
typedef struct ox_scope {
    bp__names defs;
} ox_scope;

static bp_status ox_capture_add(bp__ox *c, bp__ox_node *nd, int32_t k, const char *name, bp_error *err);

static bp_status ox_free_vars(bp__ox *c, bp__ox_node *nd, int32_t k, const Onnx__GraphProto *g, ox_scope *scope,
                              int depth, bp_error *err)
{
    if (depth >= 32) return bp__err(err, BP_ERR_LIMIT, "%s: node \"%s\": subgraphs nested more than 32 deep", c->file, nd->name);
    ox_scope *me = &scope[depth];
    memset(me, 0, sizeof *me);
    bp_status s = BP_OK;
    int32_t ex;
#define OX_DEF(str) do { if ((str) && *(str) && bp__names_add(c->a, &me->defs, (str), strlen(str), &ex) == -1) { s = bp__ox_oom(c, err); goto out; } } while (0)
    for (size_t i = 0; i < g->n_input; i++) OX_DEF(g->input[i]->name);
    for (size_t i = 0; i < g->n_initializer; i++) OX_DEF(g->initializer[i]->name);
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        if (g->sparse_initializer[i]->values) OX_DEF(g->sparse_initializer[i]->values->name);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_output; j++) OX_DEF(g->node[i]->output[j]);
#undef OX_DEF
    for (size_t i = 0; i < g->n_node && !s; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t j = 0; j < n->n_input && !s; j++) {
            const char *nm = n->input[j];
            if (!nm || !*nm) continue;
            bool defined = false;
            for (int d = depth; d >= 0 && !defined; d--) defined = bp__names_find(&scope[d].defs, nm, strlen(nm)) >= 0;
            if (!defined) s = ox_capture_add(c, nd, k, nm, err);
        }
        for (size_t j = 0; j < n->n_attribute && !s; j++) {
            const Onnx__AttributeProto *at = n->attribute[j];
            if (at->g) s = ox_free_vars(c, nd, k, at->g, scope, depth + 1, err);
            for (size_t q = 0; q < at->n_graphs && !s; q++) s = ox_free_vars(c, nd, k, at->graphs[q], scope, depth + 1, err);
        }
    }
    /* a subgraph output may name an outer value directly */
    for (size_t i = 0; i < g->n_output && !s; i++) {
        const char *nm = g->output[i]->name;
        if (!nm || !*nm) continue;
        bool defined = false;
        for (int d = depth; d >= 0 && !defined; d--) defined = bp__names_find(&scope[d].defs, nm, strlen(nm)) >= 0;
        if (!defined) s = ox_capture_add(c, nd, k, nm, err);
    }
out:
    bp__names_free(c->a, &me->defs);
    return s;
}

static bp_status ox_capture_add(bp__ox *c, bp__ox_node *nd, int32_t k, const char *name, bp_error *err)
{
    (void)k;
    int32_t t = bp__ox_find(c, name);
    if (t < 0)
        return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s): its subgraph reads \"%s\", which is not defined", c->file,
                       nd->name, nd->np->op_type, name);
    for (int32_t i = 0; i < nd->n_in; i++) if (c->io[nd->in_off + i] == t) return BP_OK;
    for (int32_t i = 0; i < nd->n_cap; i++) if (c->io[nd->cap_off + i] == t) return BP_OK;
    if (!bp__grow(c->a, (void **)&c->io, &c->cap_io, c->n_io + 1, sizeof *c->io)) return bp__ox_oom(c, err);
    /* captures are appended right after the node's own run in io */
    if ((size_t)(nd->cap_off + nd->n_cap) != c->n_io)
        return bp__err(err, BP_ERR_INVALID, "%s: internal error collecting captures", c->file);
    c->io[c->n_io++] = t;
    nd->n_cap++;
    return BP_OK;
}

/* ---------------------------------------------------------- node inputs */

/* Node k's input names as tensor ids (-1 for an omitted optional), then its
 * captures: the outer-scope names its subgraphs read, appended in io right
 * after the inputs. */
static bp_status ox_resolve_node(bp__ox *c, size_t k, bp_error *err)
{
    bp_status s = BP_OK;
    bp__ox_node *nd = &c->nodes[k];
    Onnx__NodeProto *np = nd->np;
    if (!bp__grow(c->a, (void **)&c->io, &c->cap_io, c->n_io + np->n_input, sizeof *c->io)) return bp__ox_oom(c, err);
    nd->in_off = (int32_t)c->n_io;
    nd->n_in = (int32_t)np->n_input;
    for (size_t j = 0; j < np->n_input; j++) {
        const char *in = np->input[j];
        int32_t t = -1;
        if (in && *in) {
            t = bp__ox_find(c, in);
            if (t < 0)
                return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s): input \"%s\" is not defined (no node produces it and it is not a graph input or initializer)",
                               c->file, nd->name, np->op_type, in);
            if (c->t[t].producer == (int32_t)k)
                return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s) reads its own output \"%s\"", c->file, nd->name, np->op_type, in);
        }
        c->io[c->n_io++] = t;
    }
    nd->cap_off = (int32_t)c->n_io;
    bool has_graph = false;
    for (size_t j = 0; j < np->n_attribute; j++) has_graph |= np->attribute[j]->g || np->attribute[j]->n_graphs;
    if (has_graph) {
        ox_scope scope[33];
        for (size_t j = 0; j < np->n_attribute && !s; j++) {
            const Onnx__AttributeProto *at = np->attribute[j];
            if (at->g) s = ox_free_vars(c, nd, (int32_t)k, at->g, scope, 0, err);
            for (size_t q = 0; q < at->n_graphs && !s; q++) s = ox_free_vars(c, nd, (int32_t)k, at->graphs[q], scope, 0, err);
        }
        if (s) return s;
        if (nd->control_flow && c->st) c->st->n_control_flow++;
    }
    return BP_OK;
}

bp_status bp__ox_resolve_inputs(bp__ox *c, bp_error *err)
{
    for (size_t k = 0; k < c->n_nodes; k++) {
        bp_status s = ox_resolve_node(c, k, err);
        if (s) return s;
    }
    return BP_OK;
}

/* ------------------------------------------------------ topological order */

/* Tensor j of node nd's reads: its inputs, then its captures. */
static int32_t ox_read(const bp__ox *c, const bp__ox_node *nd, int32_t j)
{
    return j < nd->n_in ? c->io[nd->in_off + j] : c->io[nd->cap_off + j - nd->n_in];
}

/* Kahn's algorithm over the producer -> consumer edges (successor lists in
 * CSR form).  Kahn with a min-heap would keep the stored order; a simple scan
 * pointer does the same when the stored order is topological. */
bp_status bp__ox_topo_order(bp__ox *c, int32_t **order_out, bp_error *err)
{
    size_t nn = c->n_nodes, n_succ = 0;
    bp_status s = BP_OK;
    int32_t *succ = NULL;
    int32_t *order = bp__alloc(c->a, (nn ? nn : 1) * sizeof *order);
    int32_t *indeg = bp__calloc(c->a, nn ? nn : 1, sizeof *indeg);
    int32_t *succ_off = bp__calloc(c->a, nn + 1, sizeof *succ_off);
    if (!order || !indeg || !succ_off) { s = bp__ox_oom(c, err); goto done; }
    for (size_t k = 0; k < nn; k++) {
        const bp__ox_node *nd = &c->nodes[k];
        for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
            int32_t t = ox_read(c, nd, j);
            if (t >= 0 && c->t[t].producer >= 0) { succ_off[c->t[t].producer + 1]++; indeg[k]++; n_succ++; }
        }
    }
    for (size_t k = 0; k < nn; k++) succ_off[k + 1] += succ_off[k];
    succ = bp__alloc(c->a, (n_succ ? n_succ : 1) * sizeof *succ);
    if (!succ) { s = bp__ox_oom(c, err); goto done; }
    for (size_t k = 0; k < nn; k++) {
        const bp__ox_node *nd = &c->nodes[k];
        for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
            int32_t t = ox_read(c, nd, j);
            if (t >= 0 && c->t[t].producer >= 0) succ[succ_off[c->t[t].producer]++] = (int32_t)k;
        }
    }
    for (size_t k = nn; k > 0; k--) succ_off[k] = succ_off[k - 1];
    succ_off[0] = 0;
    size_t head = 0, tail = 0;
    for (size_t k = 0; k < nn; k++) if (!indeg[k]) order[tail++] = (int32_t)k;
    while (head < tail) {
        int32_t k = order[head++];
        for (int32_t q = succ_off[k]; q < succ_off[k + 1]; q++)
            if (--indeg[succ[q]] == 0) order[tail++] = succ[q];
    }
    if (tail < nn) {
        for (size_t k = 0; k < nn; k++)
            if (indeg[k] > 0) {
                s = bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle through node \"%s\" (%s)", c->file, c->nodes[k].name,
                            c->nodes[k].np->op_type);
                break;
            }
    }
done:
    bp__free(c->a, indeg, (nn ? nn : 1) * sizeof *indeg);
    bp__free(c->a, succ_off, (nn + 1) * sizeof *succ_off);
    bp__free(c->a, succ, (n_succ ? n_succ : 1) * sizeof *succ);
    if (s) { bp__ox_order_free(c, order); order = NULL; }
    *order_out = order;
    return s;
}

void bp__ox_order_free(bp__ox *c, int32_t *order)
{
    bp__free(c->a, order, (c->n_nodes ? c->n_nodes : 1) * sizeof *order);
}

/* ------------------------------------------------------------ inference */

/* Merges value_info (or a graph output's declared type) into what was
 * inferred: fills what is unknown, refines symbols with declared sizes, and
 * warns where declared and inferred sizes disagree. */
static bp_status ox_check_vi(bp__ox *c, int32_t t, bp_error *err)
{
    bp__ox_tensor *x = &c->t[t];
    if (x->vi < 0) return BP_OK;
    const Onnx__ValueInfoProto *vi = c->vinfo[x->vi];
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return BP_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    const char *name = bp__names_get(&c->tn, t);
    bp_dtype vdt = tt->has_elem_type ? bp__ox_dtype(tt->elem_type) : BP_DT_UNKNOWN;
    if (x->dtype == BP_DT_UNKNOWN && vdt != BP_DT_UNKNOWN) x->dtype = (uint8_t)vdt;
    else if (vdt != BP_DT_UNKNOWN && vdt != x->dtype) {
        if (c->st) c->st->n_value_info_mismatch++;
        bp__ox_warn(c, "tensor \"%s\": value_info says %s, inferred %s", name, bp_dtype_name(vdt), bp_dtype_name((bp_dtype)x->dtype));
    }
    if (!tt->shape) return BP_OK;
    if (x->rank < 0) {
        bp_dtype dt = (bp_dtype)x->dtype;
        bp_status s = bp__ox_shape_from_type(c, t, tp, err);
        if (s) return s;
        if (dt != BP_DT_UNKNOWN) c->t[t].dtype = (uint8_t)dt;
        return BP_OK;
    }
    if ((size_t)x->rank != tt->shape->n_dim) {
        if (c->st) c->st->n_value_info_mismatch++;
        bp__ox_warn(c, "tensor \"%s\": value_info says rank %zu, inferred rank %d", name, tt->shape->n_dim, x->rank);
        return BP_OK;
    }
    int64_t d[BP__OX_MAX_RANK];
    memcpy(d, bp__ox_dims(c, t), (size_t)x->rank * sizeof *d);
    bool changed = false, warned = false;
    for (int i = 0; i < x->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        int64_t v = -1;
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value >= 0) v = dm->dim_value;
        else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param && *dm->dim_param) {
            bp_status s = bp__ox_named_dim(c, dm->dim_param, &v, err);
            if (s) return s;
            if (v < 0) {
                /* a declared symbol where inference has a fresh one: take the name */
                if (d[i] < 0 && bp__ox_sym_name(c, d[i])[0] == '?') { d[i] = v; changed = true; }
                continue;
            }
        } else continue;
        if (d[i] < 0) { d[i] = v; changed = true; }
        else if (d[i] != v && !warned) {
            warned = true;
            if (c->st) c->st->n_value_info_mismatch++;
            bp__ox_warn(c, "tensor \"%s\": value_info says dimension %d is %lld, inferred %lld", name, i, (long long)v, (long long)d[i]);
        }
    }
    if (changed) return bp__ox_set_shape(c, t, (bp_dtype)c->t[t].dtype, x->rank, d, err);
    return BP_OK;
}

/* Node k of an op type the importer does not know: an error, or with
 * unknown_op_dynamic a warning and dynamic outputs. */
static bp_status ox_unknown_op(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    const Onnx__NodeProto *np = nd->np;
    if (!c->opts->unknown_op_dynamic) {
        if (nd->domain_default)
            return bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\": unknown op type \"%s\" (use --unknown-op dynamic to treat its outputs as dynamic)",
                           c->file, nd->name, np->op_type);
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\": unknown op type \"%s\" of domain \"%s\" (use --unknown-op dynamic to treat its outputs as dynamic)",
                       c->file, nd->name, np->op_type, np->domain);
    }
    nd->unknown = 1;
    if (c->st) c->st->n_unknown_ops++;
    bp__ox_warn(c, "node \"%s\": unknown op type \"%s\"%s%s: its outputs are dynamic", nd->name, np->op_type,
                nd->domain_default ? "" : " of domain ", nd->domain_default ? "" : np->domain);
    for (int32_t j = 0; j < nd->n_out; j++) {
        int32_t t = c->io[nd->out_off + j];
        if (t >= 0) { c->t[t].rank = -1; c->t[t].val = -1; }
    }
    return BP_OK;
}

bp_status bp__ox_infer_nodes(bp__ox *c, const int32_t *order, bp_error *err)
{
    for (size_t q = 0; q < c->n_nodes; q++) {
        int32_t k = order[q];
        bp__ox_node *nd = &c->nodes[k];
        const Onnx__NodeProto *np = nd->np;
        bp_status s;
        if (nd->control_flow) {
            s = c->infer_control(c, k, err);
        } else if (!nd->domain_default) {
            s = bp__ox_custom_infer(c, k, err);
        } else {
            s = bp__ox_infer(c, k, err);
            if (s == BP_ERR_UNSUPPORTED) s = bp__ox_custom_infer(c, k, err);
        }
        if (s == BP_ERR_UNSUPPORTED) s = ox_unknown_op(c, k, err);
        if (s) return s;
        for (int32_t j = 0; j < nd->n_out; j++) {
            int32_t t = c->io[nd->out_off + j];
            if (t < 0) continue;
            if (!nd->unknown && (s = ox_check_vi(c, t, err))) return s;
            if (c->t[t].val >= 0 && c->st && strcmp(np->op_type, "Constant") != 0) c->st->n_folded++;
        }
    }
    return BP_OK;
}

#endif /* BP_HAVE_ONNX */
