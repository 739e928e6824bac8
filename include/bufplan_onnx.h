/* bufplan — ONNX import; included by bufplan.h. */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_ONNX_H
#define BUFPLAN_ONNX_H

#include "bufplan_api.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- custom operators: output shapes from the caller (docs/ONNX.md, "Custom operators") ----
 *
 * The importer knows the default domain's operators and the com.microsoft
 * ones ONNX Runtime writes.  For any other node (another domain, or a
 * default-domain op type it does not know), and for com.microsoft nodes
 * before its own rules, it asks, in this order: the shape callback
 * (bp_onnx_options.shape_fn), the formulas of an --op-shapes file
 * (bp_onnx_options.op_shapes), its built-in com.microsoft rules; if none
 * answers, the node is an unknown op (an error, or dynamic outputs with
 * unknown_op_dynamic).
 *
 * Example: a callback for com.example's MyPool, which halves dims 2 and 3.
 *
 *     static bp_onnx_shape_rc my_shapes(void *user, const bp_onnx_node_info *n, bp_onnx_out *out,
 *                                       char *msg, size_t msg_size)
 *     {
 *         (void)user;
 *         if (strcmp(n->domain, "com.example") || strcmp(n->op_type, "MyPool")) return BP_ONNX_NOT_MINE;
 *         const bp_onnx_value *x = &n->inputs[0];
 *         if (n->n_inputs < 1 || x->rank != 4) {
 *             snprintf(msg, msg_size, "input 0 must have rank 4");
 *             return BP_ONNX_SHAPE_ERROR;          // the import fails, naming the node
 *         }
 *         int64_t stride = 2;
 *         bp_onnx_attr_int(n->node, "stride", &stride);  // unchanged when absent
 *         out[0].dtype = x->dtype;
 *         out[0].rank = 4;
 *         for (int d = 0; d < 4; d++) out[0].dims[d] = x->dims[d];   // symbols pass through
 *         for (int d = 2; d < 4; d++)
 *             out[0].dims[d] = x->dims[d] >= 0 ? x->dims[d] / stride : BP_ONNX_DIM_FRESH;
 *         return BP_ONNX_SHAPED;
 *     }
 *     ...
 *     bp_onnx_options o;
 *     bp_onnx_options_init(&o);
 *     o.shape_fn = my_shapes;
 *     bp_onnx_read("model.onnx", &o, NULL, &g, &err);
 */
#define BP_ONNX_MAX_RANK 64
/* An output dimension of unknown size: the importer makes a fresh symbol
 * for it (the tensor is then dynamic unless value_info gives the size). */
#define BP_ONNX_DIM_FRESH INT64_MIN

/* The node being shaped (opaque; valid only during the callback). */
typedef struct bp_onnx_node bp_onnx_node;

/* One input of the node. */
typedef struct bp_onnx_value {
    const char *name;      /* tensor name; "" for an omitted optional input */
    bp_dtype dtype;        /* BP_DT_UNKNOWN when not known (or omitted) */
    int rank;              /* -1 when not known (or omitted) */
    const int64_t *dims;   /* rank entries: >= 0 a size, < 0 a symbolic dimension's code (copy it
                            * into an output as it is; bp_onnx_sym_name gives its name) */
} bp_onnx_value;

typedef struct bp_onnx_node_info {
    const char *domain;    /* "" for the default domain (ai.onnx) */
    const char *op_type;
    const char *name;      /* the node's name in the graph ("#K" for an unnamed node K) */
    int n_inputs;
    const bp_onnx_value *inputs;
    int n_outputs;         /* entries of the callback's out[] (omitted optional outputs included) */
    const char *const *output_names;  /* n_outputs names; "" for an omitted optional output */
    const bp_onnx_node *node;  /* for bp_onnx_attr_* and bp_onnx_input_ints */
} bp_onnx_node_info;

/* One output, filled by the callback.  It arrives as input 0's dtype (f32
 * without inputs) and rank -1. */
typedef struct bp_onnx_out {
    bp_dtype dtype;
    int rank;              /* -1: unknown (the tensor is dynamic); 0..BP_ONNX_MAX_RANK */
    int64_t dims[BP_ONNX_MAX_RANK];  /* >= 0 sizes, an input's symbol code, or BP_ONNX_DIM_FRESH */
} bp_onnx_out;

typedef enum bp_onnx_shape_rc {
    BP_ONNX_SHAPED = 0,      /* out[] holds the outputs */
    BP_ONNX_NOT_MINE = 1,    /* ask the next source (formulas, built-in rules, the unknown-op path) */
    BP_ONNX_SHAPE_ERROR = 2  /* msg says why; the import fails with BP_ERR_INVALID naming the node */
} bp_onnx_shape_rc;

/* The shape callback: called once per node that the built-in default-domain
 * rules do not cover (see above), in topological order, from the importing
 * thread.  msg (msg_size bytes, at least 256) takes the reason of an error. */
typedef bp_onnx_shape_rc (*bp_onnx_shape_fn)(void *user, const bp_onnx_node_info *node, bp_onnx_out *out,
                                             char *msg, size_t msg_size);

/* Attribute accessors: 1 with the value when the node has the attribute
 * with that type, else 0 (out untouched).  Strings are not NUL-terminated
 * (*len bytes); arrays stay valid during the callback. */
BP_API int bp_onnx_attr_int(const bp_onnx_node *n, const char *name, int64_t *out);
BP_API int bp_onnx_attr_ints(const bp_onnx_node *n, const char *name, const int64_t **v, size_t *count);
BP_API int bp_onnx_attr_float(const bp_onnx_node *n, const char *name, double *out);
BP_API int bp_onnx_attr_string(const bp_onnx_node *n, const char *name, const char **s, size_t *len);
/* Input i's values when it is a small integer tensor whose values are known
 * at import (an initializer, a Constant, folded shape arithmetic) and hold
 * no symbol: 1 and out[0..*count), at most cap; else 0. */
BP_API int bp_onnx_input_ints(const bp_onnx_node *n, int i, int64_t *out, size_t cap, size_t *count);
/* The name of symbolic dimension code d (NULL for a size). */
BP_API const char *bp_onnx_sym_name(const bp_onnx_node *n, int64_t d);

/* Output shapes as formulas, read from a JSON file (docs/FORMATS.md,
 * "Op shapes"; the CLI's --op-shapes).  Immutable once read; one may serve
 * many imports, also from several threads. */
typedef struct bp_onnx_op_shapes bp_onnx_op_shapes;
/* Reads and checks FILE; a malformed formula is an error naming the file,
 * the entry and the column (BP_ERR_INVALID). */
BP_API bp_status bp_onnx_op_shapes_read(const char *path, const bp_allocator *alloc, bp_onnx_op_shapes **out,
                                        bp_error *err);
/* The same from text in memory; `filename` is used in messages (may be NULL). */
BP_API bp_status bp_onnx_op_shapes_parse(const char *text, size_t len, const char *filename, const bp_allocator *alloc,
                                         bp_onnx_op_shapes **out, bp_error *err);
BP_API void bp_onnx_op_shapes_free(bp_onnx_op_shapes *s);

typedef struct bp_onnx_options {
    /* --dim SYM=N: bind symbolic dimensions by name */
    int n_dims;
    const char *const *dim_names;
    const int64_t *dim_values;
    /* --shape NAME=AxBxC: set graph input shapes */
    int n_shapes;
    const char *const *shape_names;
    const int *shape_ranks;
    const int64_t *const *shape_dims;
    int unknown_op_dynamic;  /* unknown op types: outputs dynamic + warning, not an error */
    int plan_constants;      /* Constant outputs planned like activations */
    FILE *warnings;          /* where warnings go (NULL = stderr) */
    const struct bp_limits *limits; /* resource limits (bufplan_limits.h); NULL = defaults */
    bp_onnx_shape_fn shape_fn;      /* custom-op shapes (above); NULL = none */
    void *shape_user;               /* passed to shape_fn */
    const bp_onnx_op_shapes *op_shapes; /* --op-shapes formulas; NULL = none */
} bp_onnx_options;

BP_API void bp_onnx_options_init(bp_onnx_options *o);

/* What an import found (docs/ONNX.md). */
typedef struct bp_onnx_stats {
    int64_t ir_version;
    int64_t opset;              /* default-domain (ai.onnx) opset */
    int32_t n_nodes;            /* nodes of the main graph (= ops) */
    int32_t n_node_outputs;     /* tensors produced by nodes */
    int32_t n_inputs;           /* graph inputs that are not initializers */
    int32_t n_outputs;          /* graph outputs */
    int32_t n_initializers;     /* weights */
    int32_t n_constants;        /* outputs of Constant / constant ConstantOfShape nodes */
    int32_t n_folded;           /* node outputs whose values were computed at import */
    int32_t n_dynamic;          /* tensors whose size stays symbolic or unknown */
    int32_t n_control_flow;     /* If / Loop / Scan nodes */
    int32_t n_unknown_ops;      /* nodes of unknown type (with unknown_op_dynamic) */
    int32_t n_value_info_mismatch; /* value_info entries that disagree with inference */
    int32_t n_warnings;
    uint64_t file_bytes;
    uint64_t weight_bytes;      /* initializers (their data is never read) */
    uint64_t const_bytes;       /* outputs of constant nodes */
    uint64_t activation_bytes;  /* every other sized node output (naive total) */
    double seconds;             /* wall time of the import */
    char producer[64];          /* producer_name producer_version */
} bp_onnx_stats;

/* Reads an .onnx model into a finalized graph.  Weights are not copied: the
 * file is mapped and initializer bytes are skipped. */
BP_API bp_status bp_onnx_read(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                              bp_graph **out, bp_error *err);
/* The same, and fills *stats (may be NULL). */
BP_API bp_status bp_onnx_read_ex(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                                 bp_graph **out, bp_onnx_stats *stats, bp_error *err);
/* Imports a model held in memory (not copied; it must outlive the call).
 * `filename` is only used in messages (may be NULL). */
BP_API bp_status bp_onnx_parse(const void *data, size_t len, const char *filename,
                               const bp_onnx_options *opts, const bp_allocator *alloc,
                               bp_graph **out, bp_onnx_stats *stats, bp_error *err);
/* 1 when bufplan was built with ONNX support. */
BP_API int bp_onnx_available(void);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_ONNX_H */
