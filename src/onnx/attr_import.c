/*
 * attr_import.c — an ONNX node's attributes onto its op (bp_graph_add_op_attr),
 * so kernels can read them at run time: INT, FLOAT, STRING, INTS and FLOATS,
 * typed by the attribute's "type" field or, in files that leave it out, by
 * the field that is set.  Tensors, graphs (the bodies of control flow, which
 * are imported as bodies), lists of strings, type protos and references to a
 * function's attributes are not kept; nor are strings that are not UTF-8
 * text (so a graph written as JSON reads back the same).
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

enum { OX_A_FLOAT = 1, OX_A_INT = 2, OX_A_STRING = 3, OX_A_FLOATS = 6, OX_A_INTS = 7 };

/* The ONNX attribute type of a, or 0 when it is not one that is kept. */
static int ox_attr_kind(const Onnx__AttributeProto *a)
{
    if (a->ref_attr_name && *a->ref_attr_name) return 0;
    int t = a->has_type ? a->type : a->has_f ? OX_A_FLOAT : a->has_i ? OX_A_INT : a->has_s ? OX_A_STRING
                                    : a->n_floats ? OX_A_FLOATS : a->n_ints ? OX_A_INTS : 0;
    return t == OX_A_FLOAT || t == OX_A_INT || t == OX_A_STRING || t == OX_A_FLOATS || t == OX_A_INTS ? t : 0;
}

/* a as a bp_attr in *x (the string copied into buf, NUL-terminated);
 * false when it is not kept. */
static bool ox_attr_value(const Onnx__AttributeProto *a, bp_attr *x, char *buf)
{
    memset(x, 0, sizeof *x);
    x->name = a->name;
    switch (ox_attr_kind(a)) {
    case OX_A_FLOAT: x->type = BP_ATTR_FLOAT; x->f = a->f; return true;
    case OX_A_INT: x->type = BP_ATTR_INT; x->i = a->i; return true;
    case OX_A_FLOATS: x->type = BP_ATTR_FLOATS; x->n = (int)a->n_floats; x->floats = a->floats; return a->n_floats <= INT32_MAX;
    case OX_A_INTS: x->type = BP_ATTR_INTS; x->n = (int)a->n_ints; x->ints = a->ints; return a->n_ints <= INT32_MAX;
    case OX_A_STRING:
        if (a->s.len && memchr(a->s.data, 0, a->s.len)) return false;
        if (a->s.len) memcpy(buf, a->s.data, a->s.len);
        buf[a->s.len] = 0;
        x->type = BP_ATTR_STRING;
        x->s = buf;
        return bp__valid_utf8(buf);
    default: return false;
    }
}

bp_status bp__ox_op_attrs(bp__ox *c, bp_graph *g, int32_t op, const Onnx__NodeProto *np, bp_error *err)
{
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (!a->name || !*a->name || !ox_attr_kind(a)) continue;
        size_t len = ox_attr_kind(a) == OX_A_STRING ? a->s.len : 0;
        if (len > INT32_MAX - 1) continue;
        char *buf = bp__alloc(c->a, len + 1);
        if (!buf) return bp__ox_oom(c, err);
        bp_attr x;
        bp_status s = ox_attr_value(a, &x, buf) ? bp_graph_add_op_attr(g, op, &x, err) : BP_OK;
        bp__free(c->a, buf, len + 1);
        if (s) return s;
    }
    return BP_OK;
}

#endif /* BP_HAVE_ONNX */
