/* bufplan — ONNX import; included by bufplan.h. */
#ifndef BUFPLAN_ONNX_H
#define BUFPLAN_ONNX_H
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
} bp_onnx_options;

void bp_onnx_options_init(bp_onnx_options *o);
/* Reads an .onnx model into a finalized graph.  Weights are not copied. */
bp_status bp_onnx_read(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                       bp_graph **out, bp_error *err);
/* 1 when bufplan was built with ONNX support. */
int bp_onnx_available(void);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_ONNX_H */
