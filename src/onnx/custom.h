/*
 * custom.h — what the custom-op files of the ONNX importer share (private
 * to src/onnx/; graph_walk.c includes it for the hook).  Module prefixes:
 * bp__fx (formulas), bp__ox (the rest).  The files, each calling only those
 * listed before it:
 *
 *   formula.c     integer shape formulas: parser (to postfix) and evaluator
 *   node_view.c   the public node handle: attribute accessors, the input view
 *   op_shapes.c   --op-shapes files: reader, entry matching, outputs
 *   infer_ms.c    built-in rules of the com.microsoft ops ONNX Runtime writes
 *   custom.c      the hook: callback, then formulas, then com.microsoft rules
 */
#ifndef BP_ONNX_CUSTOM_H
#define BP_ONNX_CUSTOM_H

#include "onnx/onnx_internal.h"

/* ---- formula.c: one formula (no ONNX types; usable without protobuf-c) ---- */
#define BP__FX_MAX_LEN 1024        /* characters of one formula */
#define BP__FX_MAX_DEPTH 64        /* parentheses and calls nested */

/* A postfix token. */
typedef struct bp__fx_tok {
    uint8_t kind;                  /* BP__FX_* below */
    uint8_t has_index;             /* ATTR: attr.name[index] */
    uint16_t name_len;             /* ATTR: the name in src */
    int32_t a;                     /* DIM / RANK: input; ATTR: name offset in src */
    int64_t v;                     /* NUM: value; DIM: dim (negative from the end); ATTR: index */
} bp__fx_tok;

enum {
    BP__FX_NUM = 1, BP__FX_DIM, BP__FX_RANK, BP__FX_ATTR,
    BP__FX_ADD, BP__FX_SUB, BP__FX_MUL, BP__FX_DIV, BP__FX_MOD, BP__FX_NEG,
    BP__FX_MIN, BP__FX_MAX, BP__FX_CEIL_DIV
};

/* A compiled formula: its postfix tokens and a copy of its text. */
typedef struct bp__fx {
    bp__fx_tok *t;
    uint32_t n;
    char *src;
    uint32_t src_len;
} bp__fx;

/* Attribute defaults of an --op-shapes entry ("attrs"). */
typedef struct bp__fx_defaults {
    size_t n;
    const char *const *names;
    const int64_t *values;
} bp__fx_defaults;

/* Compiles src[0..len).  BP_ERR_INVALID with *col (1-based) and `why` for a
 * malformed formula; BP_ERR_NOMEM.  On error *f holds nothing. */
bp_status bp__fx_parse(const bp_allocator *a, const char *src, size_t len, bp__fx *f, int *col, char *why,
                       size_t why_cap);
/* The same; with outs, outK[D] and outK.rank read output K, whose value the
 * caller puts after the inputs in the node's inputs[] (n_inputs stays the
 * count of inputs, n_outputs the count of outputs). */
bp_status bp__fx_parse_ex(const bp_allocator *a, const char *src, size_t len, bool outs, bp__fx *f, int *col, char *why,
                          size_t why_cap);
void bp__fx_free(const bp_allocator *a, bp__fx *f);
/* Evaluates f for node n: *dim is a size >= 0, the symbol code of a
 * formula that is just a symbolic dim reference, or BP_ONNX_DIM_FRESH when
 * the result depends on a symbol or an unknown rank.  Returns 0, or -1 with
 * `msg` for an error (no such input or attribute, division by zero,
 * overflow, a negative size). */
int bp__fx_eval(const bp__fx *f, const bp_onnx_node_info *n, const bp__fx_defaults *dflt, int64_t *dim, char *msg,
                size_t cap);

/* ---- op_shapes.c ---- */
/* Shapes node n from the first entry that matches it (node entries first):
 * BP_ONNX_SHAPED, BP_ONNX_NOT_MINE (no entry) or BP_ONNX_SHAPE_ERROR with msg. */
bp_onnx_shape_rc bp__ox_op_shapes_apply(const bp_onnx_op_shapes *s, const bp_onnx_node_info *n, bp_onnx_out *out,
                                        char *msg, size_t cap);

#ifdef BP_HAVE_ONNX
/* ---- node_view.c: the handle the callback gets ---- */
struct bp_onnx_node {
    bp__ox_op x;                   /* the node being inferred */
};
/* The public view of node h: info, its inputs (vals, h's n_in entries) and
 * output names (onames, n_out entries). */
void bp__ox_node_view(const struct bp_onnx_node *h, bp_onnx_value *vals, const char **onames, bp_onnx_node_info *info);

/* ---- infer_ms.c ---- */
/* Whether the built-in com.microsoft rules know node x (its domain is
 * com.microsoft, or the default domain for the ops ONNX Runtime registers
 * there, when the model imports com.microsoft). */
bool bp__ox_ms_knows(const bp__ox_op *x);
/* Infers node x's outputs (a node bp__ox_ms_knows accepts). */
bp_status bp__ox_ms_infer(bp__ox_op *x);

/* ---- custom.c: the hook of the node walk (graph_walk.c) ---- */
/* Node k's outputs from the callback, the --op-shapes formulas or the
 * com.microsoft rules, in that order; BP_ERR_UNSUPPORTED when none of them
 * knows it (then it is an unknown op); an error naming the node otherwise. */
bp_status bp__ox_custom_infer(bp__ox *c, int32_t k, bp_error *err);
#endif

#endif /* BP_ONNX_CUSTOM_H */
