/*
 * onnx_internal.h — what onnx_import.c (file walking, graph building) and
 * shape_infer.c (per-operator shape inference and constant folding) share.
 * Module prefix: bp__ox.  Only compiled with BP_HAVE_ONNX.
 *
 * The importer keeps its own table of ONNX values ("tensors" here) while it
 * infers shapes; the bp_graph is built from it at the end.  A dimension is an
 * int64: >= 0 is a known size, < 0 is the symbol -(d + 1) of c->syms.  Small
 * tensors (at most BP__OX_VALUE_LIMIT elements) may carry their values, so the
 * shape computations that exporters emit (Shape -> Gather -> Concat ->
 * Reshape) fold to static shapes; integer values may hold symbols too.
 */
#ifndef BP_ONNX_INTERNAL_H
#define BP_ONNX_INTERNAL_H

#include "core/internal.h"

#ifdef BP_HAVE_ONNX
#include <protobuf-c/protobuf-c.h>
#include "onnx.pb-c.h"

#define BP__OX_MAX_RANK 64
#define BP__OX_VALUE_LIMIT 4096   /* elements; larger tensors carry no values */
#define BP__OX_MAX_OPSET 21       /* newest default-domain opset understood */

enum { BP__OX_INPUT = 1, BP__OX_INIT, BP__OX_NODE };

/* Known values of a small tensor.  Integer and bool tensors use i[] (sym[k]
 * >= 0 marks element k as the symbol sym[k]; sym may be NULL), float tensors
 * use f[]. */
typedef struct bp__ox_val {
    uint32_t n;
    uint8_t is_float;
    int64_t *i;
    int32_t *sym;
    double *f;
} bp__ox_val;

typedef struct bp__ox_tensor {
    int32_t rank;          /* -1: unknown */
    uint32_t dims_off;     /* into c->dims */
    uint8_t dtype;         /* bp_dtype; BP_DT_UNKNOWN when not known */
    uint8_t role;          /* BP__OX_INPUT / INIT / NODE */
    uint8_t is_const;      /* initializer or output of a constant node */
    uint8_t inferred;      /* shape was set (by a node, input or initializer) */
    uint8_t not_sized;     /* type without a byte size (string, sequence) */
    int32_t producer;      /* node index or -1 */
    int32_t val;           /* index in c->vals or -1 */
    int32_t vi;            /* index in c->vinfo (value_info / graph output) or -1 */
    int32_t gid;           /* id in the bp_graph, -1 before it is built */
} bp__ox_tensor;

/* One node of the main graph: its inputs and outputs as tensor ids (-1 for an
 * empty name = an omitted optional), plus outer-scope names read by its
 * subgraphs (control flow). */
typedef struct bp__ox_node {
    Onnx__NodeProto *np;
    int32_t in_off, n_in;     /* into c->io */
    int32_t out_off, n_out;
    int32_t cap_off, n_cap;   /* captured outer-scope tensors */
    double cost;
    char *name;               /* the op name in the graph (#k rules) */
    uint8_t domain_default;   /* ai.onnx */
    uint8_t unknown;          /* op type the importer does not know */
    uint8_t control_flow;
} bp__ox_node;

typedef struct bp__ox {
    const bp_allocator *a;
    ProtobufCAllocator pa;
    const char *file;
    const bp_onnx_options *opts;
    bp_onnx_stats *st;
    FILE *warn;
    int64_t opset;            /* default domain version */

    bp__names tn;             /* tensor names -> ids */
    bp__ox_tensor *t; size_t n_t, cap_t;
    int64_t *dims; size_t n_dims, cap_dims;
    bp__names syms;           /* symbol names */
    int64_t *sym_bound;       /* per symbol: bound value or -1 */
    size_t cap_sym_bound;
    uint8_t *sym_seen;        /* per symbol: named by the model (dim_param) */
    size_t cap_sym_seen;
    bp__ox_val *vals; size_t n_vals, cap_vals;
    Onnx__ValueInfoProto **vinfo; size_t n_vinfo, cap_vinfo;

    bp__ox_node *nodes; size_t n_nodes;
    int32_t *io; size_t n_io, cap_io;
    int fresh;                /* counter for fresh symbol names */
    int pa_oom;               /* an allocation for protobuf-c failed (unpack NULL = out of memory) */
} bp__ox;

/* ---- implemented in limits.c ---- */
/* Checks that the protobuf message `desc` in data[0..len) nests messages at
 * most max_depth deep and is well-formed wire data, without recursion, so
 * that protobuf-c's recursive unpacker can be given it.  `what` names the
 * message in errors. */
bp_status bp__pb_check(const ProtobufCMessageDescriptor *desc, const void *data, size_t len, uint32_t max_depth,
                       const char *file, const char *what, bp_error *err);

/* ---- implemented in onnx_import.c ---- */
/* Warning line "FILE: MSG" on the warnings stream; counted in stats. */
void bp__ox_warn(bp__ox *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A fresh symbol named after `hint` (made unique); returns its dim code, or 0
 * with err set on OOM (0 is never a symbol code, which are negative). */
int64_t bp__ox_fresh(bp__ox *c, const char *hint, int k);
/* The dim code of the named symbol (the bound value when opts bind it). */
bp_status bp__ox_named_dim(bp__ox *c, const char *name, int64_t *out, bp_error *err);
const char *bp__ox_sym_name(const bp__ox *c, int64_t d);
/* Sets a tensor's type and shape (rank -1: unknown). */
bp_status bp__ox_set_shape(bp__ox *c, int32_t t, bp_dtype dt, int rank, const int64_t *dims, bp_error *err);
/* Attaches values (copied); sym may be NULL.  Values beyond the limit are
 * ignored. */
bp_status bp__ox_set_ival(bp__ox *c, int32_t t, size_t n, const int64_t *v, const int32_t *sym, bp_error *err);
bp_status bp__ox_set_fval(bp__ox *c, int32_t t, size_t n, const double *v, bp_error *err);
/* Values of a TensorProto (dims/dtype known) if small enough: returns 1 and
 * fills a temporary value, 0 when they are not available. */
bp_dtype bp__ox_dtype(int32_t onnx_type);
int bp__ox_onnx_type(bp_dtype dt);

static inline const int64_t *bp__ox_dims(const bp__ox *c, int32_t t) { return c->dims + c->t[t].dims_off; }
static inline const bp__ox_val *bp__ox_value(const bp__ox *c, int32_t t)
{
    return t >= 0 && c->t[t].val >= 0 ? &c->vals[c->t[t].val] : NULL;
}

/* ---- implemented in shape_infer.c ---- */
/* Infers the output shapes (and values when they fold) of node k and its
 * cost.  BP_ERR_UNSUPPORTED for an op type it does not know (the caller
 * decides between error and dynamic outputs); BP_ERR_INVALID with a message
 * naming the node for inconsistent inputs. */
bp_status bp__ox_infer(bp__ox *c, int32_t k, bp_error *err);
/* Fills a tensor from a TensorProto (Constant value, initializer). */
bp_status bp__ox_tensor_from_proto(bp__ox *c, int32_t t, const Onnx__TensorProto *tp, bp_error *err);
/* True when the op type (default domain) is known to the inference. */
bool bp__ox_known_op(const char *op_type);

#endif /* BP_HAVE_ONNX */
#endif /* BP_ONNX_INTERNAL_H */
