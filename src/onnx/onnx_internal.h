/*
 * onnx_internal.h — what the files of the ONNX importer share.  Module
 * prefix: bp__ox.  Only compiled with BP_HAVE_ONNX.  The files, each calling
 * only those listed before it:
 *
 *   pb_check.c        protobuf nesting pre-scan
 *   context.c         the context: tensor table, symbols, values, warnings
 *   infer_common.c    helpers of the inference rules
 *   infer_*.c         the rules, one file per op family
 *   infer.c           op type -> rule dispatch
 *   model_read.c      reading the model file (wire walk, unpacking)
 *   graph_walk.c      node inputs, captures, topological order, inference
 *   graph_build.c     the bp_graph from the context
 *   onnx_import.c     the public entry points and the import's phases
 *   graph_read.c      bp_graph_read: a JSON graph or an ONNX model by the first byte
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

#include "graph/graph_internal.h"

#ifdef BP_HAVE_ONNX
#include <protobuf-c/protobuf-c.h>
#include "onnx.pb-c.h"

#define BP__OX_MAX_RANK 64
#define BP__OX_VALUE_LIMIT 4096   /* elements; larger tensors carry no values */
#define BP__OX_MAX_OPSET 22       /* newest default-domain opset understood */

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
    int n_bodies;             /* control flow: the bodies imported (body_import.c) */
    struct bp__ox_body *bodies;
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
    const struct bp__ox_model *model;  /* the file's parts (opset imports) */
    const struct bp__ox *parent;       /* the graph a body belongs to; NULL for the main graph */
    int depth;                /* nesting of bodies: 0 for the main graph */
    uint8_t borrowed;         /* nodes and value infos belong to the parent's protobufs */
    /* control-flow nodes (body_import.c, set by the import: the node walk
     * calls it without depending on the file that calls the walk) */
    bp_status (*infer_control)(struct bp__ox *c, int32_t k, bp_error *err);
    char *file_buf;           /* owned c->file of a body ("FILE: If \"x\" then_branch") */
    int fresh;                /* counter for fresh symbol names */
    int pa_oom;               /* an allocation for protobuf-c failed (unpack NULL = out of memory) */
    bool ms_domain;           /* the model imports com.microsoft (infer_ms.c) */
} bp__ox;

/* ---- pb_check.c: the protobuf pre-scan ---- */
/* Checks that the protobuf message `desc` in data[0..len) nests messages at
 * most max_depth deep and is well-formed wire data, without recursion, so
 * that protobuf-c's recursive unpacker can be given it.  `what` names the
 * message in errors. */
bp_status bp__pb_check(const ProtobufCMessageDescriptor *desc, const void *data, size_t len, uint32_t max_depth,
                       const char *file, const char *what, bp_error *err);

/* ---- context.c: the ONNX context (tensor table, symbols, values, warnings) ---- */
/* Sets up an empty context reading `file`; its protobuf-c allocator (c->pa) draws from `a`. */
void bp__ox_init(bp__ox *c, const bp_allocator *a, const char *file, const bp_onnx_options *opts, bp_onnx_stats *st);
/* Frees everything the context holds (nodes, value infos, tables, values); c itself is the caller's. */
void bp__ox_free(bp__ox *c);
/* Warning line "FILE: MSG" on the warnings stream; counted in stats. */
void bp__ox_warn(bp__ox *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets err to "FILE: out of memory while importing" and returns BP_ERR_NOMEM. */
bp_status bp__ox_oom(bp__ox *c, bp_error *err);
/* bp_dtype of an ONNX TensorProto.DataType (BP_DT_UNKNOWN for string, 4-bit, undefined). */
bp_dtype bp__ox_dtype(int32_t onnx_type);
/* ONNX TensorProto.DataType of a bp_dtype (0 when it has none). */
int bp__ox_onnx_type(bp_dtype dt);
/* Binds the symbol `name` (created when new) to `value` (--dim NAME=VALUE). */
bp_status bp__ox_bind_sym(bp__ox *c, const char *name, int64_t value, bp_error *err);
/* A fresh symbol named after `hint` (made unique); returns its dim code, or 0
 * with err set on OOM (0 is never a symbol code, which are negative). */
int64_t bp__ox_fresh(bp__ox *c, const char *hint, int k);
/* The dim code of the named symbol (the bound value when opts bind it); marks it as named by the model. */
bp_status bp__ox_named_dim(bp__ox *c, const char *name, int64_t *out, bp_error *err);
/* The name of symbol dim code d ("" for a known size). */
const char *bp__ox_sym_name(const bp__ox *c, int64_t d);
/* Registers tensor `name` with `role` (BP__OX_*) in *id_out; *id_out = -2 when
 * it exists already (then *existing, when not NULL, is its id). */
bp_status bp__ox_add_tensor(bp__ox *c, const char *name, size_t len, int role, int32_t *id_out, int32_t *existing,
                            bp_error *err);
/* The id of tensor `name`, or -1. */
int32_t bp__ox_find(const bp__ox *c, const char *name);
/* Sets a tensor's type and shape (rank -1: unknown). */
bp_status bp__ox_set_shape(bp__ox *c, int32_t t, bp_dtype dt, int rank, const int64_t *dims, bp_error *err);
/* Attaches values (copied); sym may be NULL.  Values beyond the limit are
 * ignored. */
bp_status bp__ox_set_ival(bp__ox *c, int32_t t, size_t n, const int64_t *v, const int32_t *sym, bp_error *err);
bp_status bp__ox_set_fval(bp__ox *c, int32_t t, size_t n, const double *v, bp_error *err);
/* Type and shape of tensor t from a TypeProto (tensor types); other types mark it "not sized". */
bp_status bp__ox_shape_from_type(bp__ox *c, int32_t t, const Onnx__TypeProto *tp, bp_error *err);

static inline const int64_t *bp__ox_dims(const bp__ox *c, int32_t t)
{
    static const int64_t none[BP__OX_MAX_RANK];   /* no dims array yet: every shape so far is a scalar */
    return c->dims ? c->dims + c->t[t].dims_off : none;
}
static inline const bp__ox_val *bp__ox_value(const bp__ox *c, int32_t t)
{
    return t >= 0 && c->t[t].val >= 0 ? &c->vals[c->t[t].val] : NULL;
}

/* ---- infer_common.c: what the inference rules (infer_*.c) share ---- */
/* The node being inferred. */
typedef struct bp__ox_op {
    bp__ox *c;
    int32_t k;                /* node index */
    bp__ox_node *nd;
    const Onnx__NodeProto *np;
    const char *op;           /* op type */
    int64_t opset;
    bp_error *err;
} bp__ox_op;

/* Scratch arrays for folding (at most BP__OX_VALUE_LIMIT elements). */
typedef struct bp__ox_scratch {
    int64_t i[BP__OX_VALUE_LIMIT];
    int32_t s[BP__OX_VALUE_LIMIT];
    double f[BP__OX_VALUE_LIMIT];
} bp__ox_scratch;

/* Input / output i of the node as a tensor id; -1 when absent or omitted. */
static inline int32_t bp__ox_in(const bp__ox_op *x, int i) { return i < x->nd->n_in ? x->c->io[x->nd->in_off + i] : -1; }
static inline int32_t bp__ox_out(const bp__ox_op *x, int i) { return i < x->nd->n_out ? x->c->io[x->nd->out_off + i] : -1; }
/* Rank of tensor t (-1: unknown or t < 0), its dims (rank >= 0), dtype, values (NULL when none). */
static inline int bp__ox_rank(const bp__ox_op *x, int32_t t) { return t >= 0 ? x->c->t[t].rank : -1; }
static inline const int64_t *bp__ox_shape(const bp__ox_op *x, int32_t t) { return bp__ox_dims(x->c, t); }
static inline bp_dtype bp__ox_dt(const bp__ox_op *x, int32_t t) { return t >= 0 ? (bp_dtype)x->c->t[t].dtype : BP_DT_UNKNOWN; }
static inline const bp__ox_val *bp__ox_vals(const bp__ox_op *x, int32_t t) { return bp__ox_value(x->c, t); }
/* Axis a of rank r with negative axes counted from the end (not range-checked). */
static inline int64_t bp__ox_norm_axis(int64_t a, int r) { return a < 0 ? a + r : a; }
/* Whether value element k is a symbol. */
static inline bool bp__ox_val_has_sym(const bp__ox_val *v, uint32_t k) { return v->sym && v->sym[k] >= 0; }

/* Element o of w takes element src of v (its float, or its integer and symbol). */
static inline void bp__ox_scratch_take(bp__ox_scratch *w, size_t o, const bp__ox_val *v, uint32_t src)
{
    if (v->is_float) { w->f[o] = v->f[src]; return; }
    w->i[o] = v->i[src];
    w->s[o] = bp__ox_val_has_sym(v, src) ? v->sym[src] : -1;
}
static inline int64_t bp__ox_f2i(double f);
/* Value element k as a dimension code (a symbol or a number; a float out of
 * int64's range saturates, and is then refused as a dimension). */
static inline int64_t bp__ox_val_dim(const bp__ox_val *v, uint32_t k)
{
    if (bp__ox_val_has_sym(v, k)) return -(int64_t)v->sym[k] - 1;
    return v->is_float ? bp__ox_f2i(v->f[k]) : v->i[k];
}
/* Value element k as a double. */
static inline double bp__ox_val_f(const bp__ox_val *v, uint32_t k) { return v->is_float ? v->f[k] : (double)v->i[k]; }
/* Whether d is a floating-point type (values kept in f[]). */
static inline bool bp__ox_is_float_dt(bp_dtype d)
{
    return d == BP_DT_F32 || d == BP_DT_F64 || d == BP_DT_F16 || d == BP_DT_BF16 || d == BP_DT_F8;
}

/* BP_ERR_INVALID "FILE: node "NAME" (OP): MSG". */
bp_status bp__ox_bad(const bp__ox_op *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The node's attribute `name`, or NULL. */
const Onnx__AttributeProto *bp__ox_attr(const bp__ox_op *x, const char *name);
/* Integer attribute `name`, or def when absent. */
int64_t bp__ox_attr_i(const bp__ox_op *x, const char *name, int64_t def);
/* True when the string attribute equals s (false when absent or different). */
bool bp__ox_attr_s_is(const bp__ox_op *x, const char *name, const char *s);
/* The ints of attribute `name` in *v, *n; false when absent. */
bool bp__ox_attr_ints(const bp__ox_op *x, const char *name, const int64_t **v, size_t *n);
/* A fresh symbol for dimension k of output `out` (named after it); 0 on OOM. */
int64_t bp__ox_fresh_dim(bp__ox_op *x, int out, int k);
/* var = a fresh symbol for dimension k of output `out`; returns BP_ERR_NOMEM from the caller on OOM. */
#define BP__OX_FRESH(var, out, k) do { (var) = bp__ox_fresh_dim(x, (out), (k)); if (!(var)) return bp__err(x->err, BP_ERR_NOMEM, "%s: out of memory", x->c->file); } while (0)
/* Sets output i's type and shape (rank -1: unknown); rejects dimensions over 2^62. */
bp_status bp__ox_set_out(bp__ox_op *x, int i, bp_dtype dt, int rank, const int64_t *dims);
/* Output i of type dt and unknown rank. */
bp_status bp__ox_set_unknown(bp__ox_op *x, int i, bp_dtype dt);
/* Input 0 of a rule: rank, type, dims (rank >= 0), and the status when the rule is done early. */
typedef struct bp__ox_arg {
    int r;
    bp_dtype dt;
    const int64_t *d;
    bp_status s;
} bp__ox_arg;
/* Reads input 0 into *a.  True when the rule is done, with a->s set: output
 * 0 of input 0's type and unknown rank when the rank is unknown, an error
 * naming `what` it needs when the rank is below min_rank; false otherwise. */
bool bp__ox_in0_rank(bp__ox_op *x, int min_rank, const char *what, bp__ox_arg *a);
/* Output i gets input t's type (dt unless BP_DT_UNKNOWN) and shape, and its values when pass_val. */
bp_status bp__ox_copy_shape(bp__ox_op *x, int i, int32_t t, bp_dtype dt, bool pass_val);
/* Whether all r dims are known sizes. */
bool bp__ox_all_static(const int64_t *d, int r);
/* Elements of a static shape; -1 when symbolic or too large. */
int64_t bp__ox_numel(const int64_t *d, int r);
/* Elements of tensor t; -1 when its rank or a dim is unknown. */
int64_t bp__ox_t_numel(const bp__ox_op *x, int32_t t);
/* Multidirectional broadcasting of the inputs listed in ids[] (-1 entries skipped) into *rank, out. */
bp_status bp__ox_broadcast(bp__ox_op *x, const int32_t *ids, int n, int *rank, int64_t *out);
/* Flat index into an input of shape (in, ri) broadcast to (out, r) of output element o. */
int64_t bp__ox_bidx(const int64_t *out, int r, const int64_t *in, int ri, int64_t o);
/* Reads a 1-D (or scalar) integer value as a list; false when unknown, symbolic or over cap. */
bool bp__ox_ints_of(const bp__ox_op *x, int32_t t, int64_t *out, size_t cap, size_t *n);
/* Sets output i's values: integers (with symbols; sym may be NULL) or floats. */
bp_status bp__ox_out_ival(bp__ox_op *x, int i, size_t n, const int64_t *v, const int32_t *sym);
bp_status bp__ox_out_fval(bp__ox_op *x, int i, size_t n, const double *v);
/* Sets output `out`'s values from w (f[] when is_float, else i[] and s[]). */
bp_status bp__ox_fold_set(bp__ox_op *x, int out, bool is_float, size_t n, bp__ox_scratch *w);
/* Axes from the attribute (opsets before since_input) or input in_idx (from
 * since_input on) in ax[0..*n); false when absent; *known false when they are not constant. */
bool bp__ox_get_axes(bp__ox_op *x, int since_input, int in_idx, int64_t *ax, size_t *n, bool *known);

/* ---- the inference rules, one per op family; each sets the node's outputs (and cost) ---- */
/* infer_elementwise.c: broadcasting n-ary ops (Add ... Where), folded when every input has values. */
bp_status bp__ox_inf_nary(bp__ox_op *x);
/* infer_elementwise.c: shape-preserving unary ops (activations, math, Softmax, ...). */
bp_status bp__ox_inf_unary(bp__ox_op *x);
/* infer_elementwise.c: Identity, Dropout (values pass through). */
bp_status bp__ox_inf_identity(bp__ox_op *x);
/* infer_elementwise.c: Cast, CastLike (values converted). */
bp_status bp__ox_inf_cast(bp__ox_op *x);
/* infer_elementwise.c: Reduce*, ArgMax, ArgMin (a full 1-D Reduce{Prod,Sum,Max,Min} folds). */
bp_status bp__ox_inf_reduce(bp__ox_op *x);
/* infer_const.c: Shape, Size (the input's dims as values, symbols kept). */
bp_status bp__ox_inf_shape(bp__ox_op *x);
/* infer_const.c: Constant (the value attribute in any of its forms). */
bp_status bp__ox_inf_constant(bp__ox_op *x);
/* infer_const.c: ConstantOfShape (shape from the input's values). */
bp_status bp__ox_inf_constant_of_shape(bp__ox_op *x);
/* infer_const.c: Range (length and values from constant start, limit, delta). */
bp_status bp__ox_inf_range(bp__ox_op *x);
/* infer_const.c: RandomNormal, RandomUniform and their *Like forms. */
bp_status bp__ox_inf_random(bp__ox_op *x);
/* infer_const.c: EyeLike. */
bp_status bp__ox_inf_eyelike(bp__ox_op *x);
/* infer_reshape.c: Reshape (0 copies, -1 is inferred; symbols kept where exact). */
bp_status bp__ox_inf_reshape(bp__ox_op *x);
/* infer_reshape.c: Flatten. */
bp_status bp__ox_inf_flatten(bp__ox_op *x);
/* infer_reshape.c: Squeeze. */
bp_status bp__ox_inf_squeeze(bp__ox_op *x);
/* infer_reshape.c: Unsqueeze. */
bp_status bp__ox_inf_unsqueeze(bp__ox_op *x);
/* infer_reshape.c: Transpose (values permuted). */
bp_status bp__ox_inf_transpose(bp__ox_op *x);
/* infer_reshape.c: Expand (broadcast with the shape value). */
bp_status bp__ox_inf_expand(bp__ox_op *x);
/* infer_reshape.c: Tile. */
bp_status bp__ox_inf_tile(bp__ox_op *x);
/* infer_index.c: Concat (values concatenated). */
bp_status bp__ox_inf_concat(bp__ox_op *x);
/* infer_index.c: Split (by the split input/attribute or evenly). */
bp_status bp__ox_inf_split(bp__ox_op *x);
/* infer_index.c: Slice (ONNX clamping; values sliced). */
bp_status bp__ox_inf_slice(bp__ox_op *x);
/* infer_index.c: Gather, GatherElements, GatherND. */
bp_status bp__ox_inf_gather(bp__ox_op *x);
/* infer_index.c: Scatter* (the data input's shape). */
bp_status bp__ox_inf_same_as_data(bp__ox_op *x);
/* infer_index.c: TopK. */
bp_status bp__ox_inf_topk(bp__ox_op *x);
/* infer_index.c: OneHot. */
bp_status bp__ox_inf_onehot(bp__ox_op *x);
/* infer_index.c: NonZero, NonMaxSuppression, Compress, Unique (data-dependent sizes: fresh symbols). */
bp_status bp__ox_inf_dynamic_1d(bp__ox_op *x);
/* infer_index.c: sequence and optional ops (not tensors of a known size). */
bp_status bp__ox_inf_sequence(bp__ox_op *x);
/* infer_nn.c: Conv, ConvTranspose, ConvInteger, QLinearConv. */
bp_status bp__ox_inf_conv(bp__ox_op *x);
/* infer_nn.c: MaxPool, AveragePool, LpPool and the global pools. */
bp_status bp__ox_inf_pool(bp__ox_op *x);
/* infer_nn.c: Gemm, MatMul, MatMulInteger, QLinearMatMul. */
bp_status bp__ox_inf_gemm(bp__ox_op *x);
/* infer_nn.c: Einsum. */
bp_status bp__ox_inf_einsum(bp__ox_op *x);
/* infer_nn.c: Batch/Instance/Layer/GroupNormalization. */
bp_status bp__ox_inf_norm(bp__ox_op *x);
/* infer_nn.c: Resize, Upsample. */
bp_status bp__ox_inf_resize(bp__ox_op *x);
/* infer_nn.c: Pad. */
bp_status bp__ox_inf_pad(bp__ox_op *x);
/* infer_nn.c: DepthToSpace, SpaceToDepth. */
bp_status bp__ox_inf_d2s(bp__ox_op *x);
/* infer_nn.c: GRU, LSTM, RNN. */
bp_status bp__ox_inf_rnn(bp__ox_op *x);
/* infer_nn.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear. */
bp_status bp__ox_inf_quant(bp__ox_op *x);
/* infer_nn.c: GridSample. */
bp_status bp__ox_inf_grid_sample(bp__ox_op *x);
/* infer_signal.c: DFT (axis attribute before opset 20, input from 20; dft_length, onesided). */
bp_status bp__ox_inf_dft(bp__ox_op *x);
/* infer_signal.c: STFT ([batch, frames, bins, 2]). */
bp_status bp__ox_inf_stft(bp__ox_op *x);
/* infer_signal.c: HannWindow, HammingWindow, BlackmanWindow ([size], output_datatype). */
bp_status bp__ox_inf_window(bp__ox_op *x);
/* infer_signal.c: MelWeightMatrix ([dft_length/2 + 1, num_mel_bins]). */
bp_status bp__ox_inf_mel(bp__ox_op *x);
/* infer_vision.c: CenterCropPad. */
bp_status bp__ox_inf_center_crop_pad(bp__ox_op *x);
/* infer_vision.c: Col2Im. */
bp_status bp__ox_inf_col2im(bp__ox_op *x);
/* infer_vision.c: AffineGrid. */
bp_status bp__ox_inf_affine_grid(bp__ox_op *x);
/* infer_vision.c: RoiAlign, MaxRoiPool. */
bp_status bp__ox_inf_roi(bp__ox_op *x);
/* infer_vision.c: MaxUnpool. */
bp_status bp__ox_inf_max_unpool(bp__ox_op *x);
/* infer_vision.c: ImageDecoder (height and width fresh). */
bp_status bp__ox_inf_image_decoder(bp__ox_op *x);
/* infer_misc.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
bp_status bp__ox_inf_loss(bp__ox_op *x);
/* infer_misc.c: Det. */
bp_status bp__ox_inf_det(bp__ox_op *x);
/* infer_misc.c: Multinomial. */
bp_status bp__ox_inf_multinomial(bp__ox_op *x);
/* infer_misc.c: TfIdfVectorizer. */
bp_status bp__ox_inf_tfidf(bp__ox_op *x);
/* infer_misc.c: StringNormalizer, StringConcat, StringSplit, RegexFullMatch (string outputs not sized). */
bp_status bp__ox_inf_string(bp__ox_op *x);

/* ---- infer_const.c: tensor constants ---- */
/* Fills a tensor from a TensorProto (Constant value, initializer): type,
 * shape and, for small tensors, values. */
bp_status bp__ox_tensor_from_proto(bp__ox *c, int32_t t, const Onnx__TensorProto *tp, bp_error *err);

/* ---- infer.c: shape inference of one node (the dispatch) ---- */
/* Infers the output shapes (and values when they fold) of node k and its
 * cost.  BP_ERR_UNSUPPORTED for an op type it does not know (the caller
 * decides between error and dynamic outputs); BP_ERR_INVALID with a message
 * naming the node for inconsistent inputs. */
bp_status bp__ox_infer(bp__ox *c, int32_t k, bp_error *err);
/* True when the op type (default domain) is known to the inference. */
bool bp__ox_known_op(const char *op_type);

/* ---- body_import.c: the bodies of If / Loop / Scan ---- */
/* One imported body of a control-flow node: its graph (finalized) and how its
 * inputs and outputs meet the node; `parent` ids are the importer's tensor
 * ids until the graph is built (graph_build.c maps them). */
typedef struct bp__ox_body {
    bp_graph *g;             /* NULL once handed to the parent graph */
    bp_body_kind kind;
    bp_body_io *io;
    int n_io, cap_io;
} bp__ox_body;
/* Imports the bodies of control-flow node k (recursively: a body's own
 * control flow is imported the same way) and infers the node's outputs from
 * them.  An If whose condition folded keeps only the branch taken. */
bp_status bp__ox_infer_control(bp__ox *c, int32_t k, bp_error *err);
/* Frees the bodies of a node (context.c). */
void bp__ox_bodies_free(bp__ox *c, bp__ox_node *nd);
/* Registers node k from an unpacked NodeProto (graph_walk.c). */
bp_status bp__ox_register_node(bp__ox *c, size_t k, Onnx__NodeProto *np, bp__names *used_names, bp_error *err);
/* Symbols: copies every symbol of src into the empty table of dst (same
 * codes); the code in dst of src's symbol code d, a fresh one when src made
 * it after the copy (n_shared: how many were copied); 0 on OOM. */
bp_status bp__ox_syms_copy(bp__ox *dst, const bp__ox *src, bp_error *err);
int64_t bp__ox_sym_back(bp__ox *dst, const bp__ox *src, size_t n_shared, int64_t d);

/* ---- model_read.c: reading the model file (wire walk, protobuf-c unpacking) ---- */
typedef struct bp__ox_slice {
    const uint8_t *p;
    size_t n;
} bp__ox_slice;

typedef struct bp__ox_slices {
    bp__ox_slice *s;
    size_t n, cap;
} bp__ox_slices;

/* Where the parts of the model lie in the file (slices of the mapped data). */
typedef struct bp__ox_model {
    int64_t ir_version;
    bp__ox_slice producer, producer_version;
    bp__ox_slices graphs, opsets;
    bp__ox_slices nodes, inits, sparse, inputs, outputs, vinfos;
} bp__ox_model;

/* Walks ModelProto and its GraphProto(s) in data[0..len), filling m; rejects non-ONNX files by their magic. */
bp_status bp__ox_walk_model(bp__ox *c, const uint8_t *data, size_t len, bp__ox_model *m, bp_error *err);
/* Frees the slice lists of m. */
void bp__ox_model_free(const bp_allocator *a, bp__ox_model *m);
/* Sets c->opset from opset_import (stats too); BP_ERR_UNSUPPORTED for an opset it does not know. */
bp_status bp__ox_opsets(bp__ox *c, const bp__ox_model *m, bp_error *err);
/* Whether the model's opset_import names `domain`. */
bool bp__ox_domain_imported(const bp__ox *c, const bp__ox_model *m, const char *domain);
/* Whether an op domain is the default one ("", NULL or "ai.onnx"). */
bool bp__ox_is_default_domain(const char *domain);
/* Registers the (sparse) initializer at s as a constant tensor; small ones are unpacked for their values. */
bp_status bp__ox_add_initializer(bp__ox *c, bp__ox_slice s, const uint8_t *base, bool sparse, bp_error *err);
/* Unpacks a ValueInfoProto (`what`: "input", "output", "value_info"); it must have a name.
 * *out may be set even on error (the caller frees it). */
bp_status bp__ox_unpack_vi(bp__ox *c, bp__ox_slice s, const char *what, Onnx__ValueInfoProto **out, bp_error *err);
/* Keeps vi in c->vinfo (freed with the context; freed at once on OOM). */
bp_status bp__ox_keep_vi(bp__ox *c, Onnx__ValueInfoProto *vi, bp_error *err);
/* Unpacks node k at s (base: the file, for the byte offset in errors). */
bp_status bp__ox_unpack_node(bp__ox *c, bp__ox_slice s, const uint8_t *base, size_t k, Onnx__NodeProto **out,
                             bp_error *err);

/* ---- graph_walk.c: the node walk (inputs, captures, order, inference) ---- */
/* Resolves every node's input names to tensor ids and collects the
 * outer-scope names its subgraphs read (captures). */
bp_status bp__ox_resolve_inputs(bp__ox *c, bp_error *err);
/* A topological order of the nodes in *order (c->n_nodes entries, the stored
 * order when it is one; free with bp__ox_order_free); BP_ERR_INVALID naming a node on a cycle. */
bp_status bp__ox_topo_order(bp__ox *c, int32_t **order, bp_error *err);
void bp__ox_order_free(bp__ox *c, int32_t *order);
/* Infers every node's outputs in `order`, merging value_info; unknown ops are
 * an error or (unknown_op_dynamic) dynamic outputs. */
bp_status bp__ox_infer_nodes(bp__ox *c, const int32_t *order, bp_error *err);

/* ---- graph_build.c: the bp_graph from the context ---- */
/* Builds and finalizes the graph: tensors (inputs, initializers, node outputs),
 * the last n_outputs kept value infos as graph outputs, then the ops; fills the byte stats. */
bp_status bp__ox_build_graph(bp__ox *c, size_t n_outputs, bp_graph **out, bp_error *err);
/* The node's attributes onto op op of g (attr_import.c). */
bp_status bp__ox_op_attrs(bp__ox *c, bp_graph *g, int32_t op, const Onnx__NodeProto *np, bp_error *err);

/* A double as int64 without undefined behaviour: truncated toward zero,
 * saturated at the int64 range; NaN gives INT64_MIN (never a valid size, so a
 * shape made from it is rejected). */
static inline int64_t bp__ox_f2i(double f)
{
    if (f != f) return INT64_MIN;
    if (f >= 9223372036854775807.0) return INT64_MAX;
    if (f <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)f;
}

#endif /* BP_HAVE_ONNX */
#endif /* BP_ONNX_INTERNAL_H */
