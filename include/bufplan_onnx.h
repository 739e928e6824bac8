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
