/*
 * graph_internal.h — the graph's own layout (tensors, ops, interned names,
 * symbols, consumers in CSR form) and the order-independent storages (view
 * roots), shared by every stage from graph/ up.  Not installed.
 */
#ifndef BP_GRAPH_INTERNAL_H
#define BP_GRAPH_INTERNAL_H

#include "core/internal.h"

/* ----------------------------------------------------------------- graph */

typedef struct bp__tensor {
    uint64_t bytes;        /* 0 when dynamic with unbound symbols */
    int32_t producer;      /* op id or -1 */
    int32_t view_of;       /* tensor id or -1 */
    uint32_t dims_off;     /* index into g->dims */
    uint8_t rank;          /* 0 with has_shape = scalar */
    uint8_t dtype;         /* bp_dtype */
    uint8_t flags;         /* BP_TENSOR_* */
    uint8_t has_shape : 1, dynamic : 1, is_const : 1;
    uint8_t is_reserve : 1;   /* the reservation of a control-flow op's bodies (body.c) */
    uint8_t is_workspace : 1; /* a kernel workspace of its producer (workspace.c) */
} bp__tensor;

typedef struct bp__op {
    uint32_t io_off;       /* inputs then outputs in g->io */
    uint16_t n_in, n_out;
    int32_t type;          /* id in g->types */
    uint16_t n_ws;         /* the last n_ws outputs are its workspaces (bp_graph_set_workspace) */
    double cost;           /* <= 0: unknown */
} bp__op;

typedef struct bp__inplace {
    int32_t op, out, in;
} bp__inplace;

/* A body of a control-flow op (bp_graph_add_body; body.c). */
typedef struct bp__body {
    int32_t op;
    bp_body_kind kind;
    bp_graph *g;           /* owned */
    int32_t reserve;       /* the op's reservation output */
    int32_t n_io;
    bp_body_io *io;
} bp__body;

struct bp_graph {
    bp_allocator alloc;
    char *name;
    bp__names tnames, onames, types, syms;
    bp__tensor *t;   size_t n_t, cap_t;
    bp__op *o;       size_t n_o, cap_o;
    int32_t *io;     size_t n_io, cap_io;
    int64_t *dims;   size_t n_dims, cap_dims;  /* symbolic dim k stored as -(k+1)-2^40 */
    bp__inplace *inpl; size_t n_inpl, cap_inpl;
    int64_t *sym_val; size_t cap_sym_val;      /* bound value per symbol, -1 unbound */
    bp__body *bodies; size_t n_bodies, cap_bodies;
    bp_limits lim;                             /* enforced by the builder (limits.c) */
    /* built by finalize */
    bool finalized;
    int32_t *cons_off;  /* n_t + 1 */
    int32_t *cons;      /* consumer op ids, one per (op, input slot) */
    size_t cons_cap_bytes;
    uint8_t *type_class;  /* per op type id: BP__TYPE_VIEW | BP__TYPE_ELEMENTWISE */
    size_t type_class_n;
    struct bp__attrs *attrs;  /* op attributes (attrs.c), NULL when none */
};

/* BROADCAST: a view whose elements may repeat (strides of 0), so it may
 * claim more bytes than its source holds. */
enum { BP__TYPE_VIEW = 1, BP__TYPE_ELEMENTWISE = 2, BP__TYPE_BROADCAST = 4 };

#define BP__SYM_BASE (-(INT64_C(1) << 40))
static inline bool bp__dim_is_sym(int64_t d) { return d <= BP__SYM_BASE; }
static inline int32_t bp__dim_sym(int64_t d) { return (int32_t)(BP__SYM_BASE - d); }

static inline const int32_t *bp__op_in(const bp_graph *g, int32_t op) { return g->io + g->o[op].io_off; }
static inline const int32_t *bp__op_out(const bp_graph *g, int32_t op) { return g->io + g->o[op].io_off + g->o[op].n_in; }
/* Outputs of op that are not workspaces (they come first). */
static inline int bp__op_n_out(const bp_graph *g, int32_t op) { return g->o[op].n_out - g->o[op].n_ws; }

/* Class of an op's type, from the table finalize builds (one lookup, no
 * string compares in hot loops). */
static inline bool bp__op_is_view(const bp_graph *g, int32_t op) { return g->type_class[g->o[op].type] & BP__TYPE_VIEW; }
static inline bool bp__op_is_broadcast(const bp_graph *g, int32_t op) { return g->type_class[g->o[op].type] & BP__TYPE_BROADCAST; }
static inline bool bp__op_is_elementwise(const bp_graph *g, int32_t op) { return g->type_class[g->o[op].type] & BP__TYPE_ELEMENTWISE; }

/* True for op types that are views of their first input (the list in docs/ARCHITECTURE.md). */
bool bp__is_view_type(const char *type);
/* True for view types that may repeat elements (aten.expand, aten.as_strided). */
bool bp__is_broadcast_view_type(const char *type);
/* True for element-wise op types whose output may overwrite an input. */
bool bp__is_elementwise_type(const char *type);
/* Drops what finalize built (graph.c); a no-op on a graph not finalized. */
void bp__graph_unfinalize(bp_graph *g);
/* Whether an io kind is a body input (ITER .. SLICE) rather than an output. */
static inline bool bp__body_io_is_input(bp_body_io_kind k) { return k <= BP_BODY_SLICE; }
/* The bodies of op (first index in *first, count returned; ops' bodies are
 * contiguous only in insertion order, so this scans: O(bodies)). */
int32_t bp__op_bodies(const bp_graph *g, int32_t op, int32_t *idx, int32_t cap);
/* Reads a bufplan-graph JSON file with explicit limits (graph_json.c). */
bp_status bp__graph_read_json_lim(const char *path, const bp_limits *lim, const bp_allocator *alloc, bp_graph **out,
                                  bp_error *err);

/* Op attributes (attrs.c). */
typedef struct bp__attrs bp__attrs;
void bp__attrs_free(bp_graph *g);
/* Copies every attribute of src to the op with the same id in dst. */
bp_status bp__attrs_copy(bp_graph *dst, const bp_graph *src, bp_error *err);
/* graph JSON (attrs_json.c): the "attrs" object of op (a jansson json_t),
 * and writing it as ', "attrs": {...}' (nothing when the op has none). */
struct json_t;
bp_status bp__attrs_read_json(bp_graph *g, int32_t op, const struct json_t *obj, const char *file, bp_error *err);
void bp__attrs_write_json(const bp_graph *g, int32_t op, FILE *f);

/* ------------------------------------------------------------- storages */

/* Alias groups that do not depend on the order: each tensor's root (the end
 * of its view chain, or itself), and which roots live in the arena. */
typedef struct bp__etab_s {
    const struct bp_engine *e;           /* NULL: the default profile, through g->type_class */
    const struct bp__eng_op **rule;      /* per op type id: its rules or NULL (graph/engine.h) */
    size_t n;
} bp__etab;

typedef struct bp__storage {
    int32_t *root;       /* n_t: root tensor of each tensor's storage */
    uint8_t *planned;    /* n_t: 1 when the tensor's storage is in the arena */
    /* concat_inplace only (NULL otherwise; concat.c): */
    uint64_t *off;       /* n_t: byte offset of the tensor in its root's bytes */
    uint8_t *cat;        /* n_t: 1 for a Concat slice or a merged Concat's output */
    bp__etab et;         /* the engine profile bound to the graph (graph/engine.h) */
} bp__storage;

bp_status bp__storage_build(const bp_graph *g, const bp_plan_options *o, bp__storage *st, bp_error *err);
void bp__storage_free(const bp_graph *g, bp__storage *st);
/* The tensor t is a view of (its explicit view_of, or input 0 of the view op
 * whose output 0 it is), or -1 when t is no view. */
int32_t bp__tensor_view_source(const bp_graph *g, int32_t t);
/* Union-find root of t in root[], compressing the path. */
static inline int32_t bp__storage_find(int32_t *root, int32_t t)
{
    int32_t r = t;
    while (root[r] != r) r = root[r];
    while (root[t] != r) { int32_t n = root[t]; root[t] = r; t = n; }
    return r;
}

/* concat.c.  Op types that concatenate / split their first input. */
bool bp__is_concat_type(const char *type);
bool bp__is_split_type(const char *type);
/* True when op is a Concat whose inputs lie side by side, contiguously, in
 * its output (static shapes, one axis, every dim before it 1); offs[i] (n_in
 * entries) gets input i's byte offset in the output. */
bool bp__concat_layout(const bp_graph *g, int32_t op, uint64_t *offs);
/* The same for a Split: offs[k] (n_out entries) is output k's offset in
 * input 0. */
bool bp__split_layout(const bp_graph *g, int32_t op, uint64_t *offs);
/* concat_inplace: Split outputs become views at their offsets, Concat inputs
 * slices of the output (st->off and st->cat allocated and filled, st->root
 * updated; every root path stays flat). */
bp_status bp__concat_merge(const bp_graph *g, bp__storage *st, bp_error *err);
/* Each tensor's view root (the end of its view chain, or itself) into
 * root[n_t], and into bcast[n_t] whether its chain passes through a
 * broadcast view (aten.expand, aten.as_strided), which may claim more bytes
 * than its root; O(T) (view_bytes.c).  Needs the type classes finalize
 * builds and acyclic op views. */
bp_status bp__view_roots(const bp_graph *g, int32_t *root, uint8_t *bcast, bp_error *err);
/* bp__view_roots into arrays allocated with the graph's allocator (freed
 * by bp__view_info_free; nothing is left allocated on an error). */
typedef struct bp__view_info { int32_t *root; uint8_t *bcast; } bp__view_info;
bp_status bp__view_info_build(const bp_graph *g, bp__view_info *vi, bp_error *err);
void bp__view_info_free(const bp_graph *g, bp__view_info *vi);
/* BP_ERR_INVALID naming both tensors when a view that is no broadcast view
 * claims more bytes than its root (sizes known on both sides). */
bp_status bp__check_view_bytes(const bp_graph *g, bp_error *err);

/* BP_ERR_LIMIT when the tensors' bytes add up to more than
 * g->lim.max_total_bytes (so the planners' sums cannot overflow). */
bp_status bp__limits_check_total(const bp_graph *g, bp_error *err);

#endif /* BP_GRAPH_INTERNAL_H */
