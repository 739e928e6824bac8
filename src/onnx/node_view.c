/*
 * node_view.c — the node as the custom-op shape sources see it (the public
 * bp_onnx_node handle of bufplan_onnx.h): its attributes by name and type,
 * the known integer values of an input, symbol names, and the plain view of
 * its domain, op type, name, inputs and outputs that the callback and the
 * formulas read.  Without ONNX support the accessors answer "absent".
 */
#include "onnx/custom.h"

#include <string.h>

#ifdef BP_HAVE_ONNX

/* The attribute `name` of node n with AttributeProto type `type` (2 INT, 1
 * FLOAT, 3 STRING, 7 INTS), or NULL. */
static const Onnx__AttributeProto *nv_attr(const bp_onnx_node *n, const char *name, int type)
{
    if (!n || !name) return NULL;
    const Onnx__AttributeProto *a = bp__ox_attr(&n->x, name);
    if (!a) return NULL;
    if (a->has_type && a->type != type) return NULL;
    switch (type) {
    case 2: return a->has_i ? a : NULL;
    case 1: return a->has_f ? a : NULL;
    case 3: return a->has_s ? a : NULL;
    default: return a->n_ints || a->type == 7 ? a : NULL;
    }
}

int bp_onnx_attr_int(const bp_onnx_node *n, const char *name, int64_t *out)
{
    const Onnx__AttributeProto *a = nv_attr(n, name, 2);
    if (a && out) *out = a->i;
    return a != NULL;
}

int bp_onnx_attr_ints(const bp_onnx_node *n, const char *name, const int64_t **v, size_t *count)
{
    const Onnx__AttributeProto *a = nv_attr(n, name, 7);
    if (a && v) *v = a->ints;
    if (a && count) *count = a->n_ints;
    return a != NULL;
}

int bp_onnx_attr_float(const bp_onnx_node *n, const char *name, double *out)
{
    const Onnx__AttributeProto *a = nv_attr(n, name, 1);
    if (a && out) *out = a->f;
    return a != NULL;
}

int bp_onnx_attr_string(const bp_onnx_node *n, const char *name, const char **s, size_t *len)
{
    const Onnx__AttributeProto *a = nv_attr(n, name, 3);
    if (a && s) *s = (const char *)a->s.data;
    if (a && len) *len = a->s.len;
    return a != NULL;
}

int bp_onnx_input_ints(const bp_onnx_node *n, int i, int64_t *out, size_t cap, size_t *count)
{
    if (!n || i < 0 || !out || !count) return 0;
    int32_t t = bp__ox_in(&n->x, i);
    return t >= 0 && bp__ox_ints_of(&n->x, t, out, cap, count);
}

const char *bp_onnx_sym_name(const bp_onnx_node *n, int64_t d)
{
    if (!n || d >= 0 || d < -(int64_t)n->x.c->syms.n) return NULL;
    return bp__ox_sym_name(n->x.c, d);
}

void bp__ox_node_view(const struct bp_onnx_node *h, bp_onnx_value *vals, const char **onames, bp_onnx_node_info *info)
{
    const bp__ox_op *x = &h->x;
    const bp__ox *c = x->c;
    for (int i = 0; i < x->nd->n_in; i++) {
        int32_t t = bp__ox_in(x, i);
        vals[i].name = t >= 0 ? bp__names_get(&c->tn, t) : "";
        vals[i].dtype = bp__ox_dt(x, t);
        vals[i].rank = bp__ox_rank(x, t);
        vals[i].dims = vals[i].rank >= 0 ? bp__ox_shape(x, t) : NULL;
    }
    for (int i = 0; i < x->nd->n_out; i++) {
        int32_t t = bp__ox_out(x, i);
        onames[i] = t >= 0 ? bp__names_get(&c->tn, t) : "";
    }
    const char *dom = x->np->domain && !bp__ox_is_default_domain(x->np->domain) ? x->np->domain : "";
    *info = (bp_onnx_node_info){dom, x->op, x->nd->name, x->nd->n_in, vals, x->nd->n_out, onames, h};
}

#else

int bp_onnx_attr_int(const bp_onnx_node *n, const char *name, int64_t *out) { (void)n; (void)name; (void)out; return 0; }
int bp_onnx_attr_ints(const bp_onnx_node *n, const char *name, const int64_t **v, size_t *count)
{
    (void)n; (void)name; (void)v; (void)count;
    return 0;
}
int bp_onnx_attr_float(const bp_onnx_node *n, const char *name, double *out) { (void)n; (void)name; (void)out; return 0; }
int bp_onnx_attr_string(const bp_onnx_node *n, const char *name, const char **s, size_t *len)
{
    (void)n; (void)name; (void)s; (void)len;
    return 0;
}
int bp_onnx_input_ints(const bp_onnx_node *n, int i, int64_t *out, size_t cap, size_t *count)
{
    (void)n; (void)i; (void)out; (void)cap; (void)count;
    return 0;
}
const char *bp_onnx_sym_name(const bp_onnx_node *n, int64_t d) { (void)n; (void)d; return NULL; }

#endif /* BP_HAVE_ONNX */
