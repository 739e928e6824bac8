/*
 * bufplan — engine profiles: what the target engine's kernels can do, per op
 * type (which outputs are views of which inputs, which outputs may be written
 * in place over which inputs and under what conditions, the workspace each op
 * needs), and whether Concat may be done in place.  The planner, the verifier
 * and the executor all read the same profile (bp_plan_options.engine; a plan
 * keeps a copy).  Format of profile files: docs/FORMATS.md, "Engine
 * profiles".  Included by bufplan.h.
 */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_ENGINE_H
#define BUFPLAN_ENGINE_H

#include "bufplan_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An in-place pair's input that means "each input in turn" (only for ops
 * with one output, as the default profile's element-wise rule). */
#define BP_ENGINE_ANY_INPUT (-1)
/* Pairs per list of one op type. */
#define BP_ENGINE_MAX_PAIRS 16

typedef struct bp_engine_pair {
    int out;   /* output index of the op */
    int in;    /* input index of the op, or BP_ENGINE_ANY_INPUT (in-place lists only) */
} bp_engine_pair;

/* What the engine's kernel of one op type can do. */
typedef struct bp_engine_op {
    const char *type;              /* op type as the graph names it ("Relu", "aten.view") */
    int n_views;                   /* output out is a view of input in (shares its bytes) */
    const bp_engine_pair *views;
    int n_inplace;                 /* output out may be written over input in when that
                                      input dies at this op and the sizes match */
    const bp_engine_pair *inplace;
    int same_dtype;                /* in place only when input and output have one dtype */
    int strided;                   /* the in-place kernel handles an input that is a view
                                      (else the input must be its storage's root) */
    const char *workspace;         /* workspace formula in elements of output 0's dtype,
                                      or NULL (docs/FORMATS.md, "Engine profiles") */
} bp_engine_op;

/* An empty profile named `name` (no views, no in-place writes): add op
 * types with bp_engine_add_op.  graph_hints: whether the graph's own
 * in-place hints (bp_graph_set_inplace) are honoured. */
BP_API bp_status bp_engine_new(const char *name, int concat_inplace, int graph_hints, const bp_allocator *alloc,
                               bp_engine **out, bp_error *err);
/* Adds (or replaces) the rules of one op type; everything is copied.
 * BP_ERR_INVALID naming the type for a malformed type name, a pair out of
 * range, more than BP_ENGINE_MAX_PAIRS pairs, or a malformed formula. */
BP_API bp_status bp_engine_add_op(bp_engine *e, const bp_engine_op *op, bp_error *err);
/* A built-in profile: "default" (bufplan's own rules, docs/ARCHITECTURE.md
 * "Views" and "In-place writes"), "strict" (metadata views only: Reshape,
 * Flatten, Squeeze, Unsqueeze, Identity and their aten forms; no in-place
 * write, no graph hints, no concat in place), "ort-cpu" (ONNX Runtime's CPU
 * kernels: docs/design/engines.md).  BP_ERR_USAGE for another name. */
BP_API bp_status bp_engine_builtin(const char *name, const bp_allocator *alloc, bp_engine **out, bp_error *err);
/* NULL-terminated list of the built-in names. */
BP_API const char *const *bp_engine_builtins(void);
/* A built-in name, else a profile file ("bufplan-engine" JSON). */
BP_API bp_status bp_engine_load(const char *name_or_path, const bp_allocator *alloc, bp_engine **out,
                                bp_error *err);
BP_API bp_status bp_engine_read_json(const char *path, const bp_allocator *alloc, bp_engine **out, bp_error *err);
/* Parses a profile text; `filename` is only used in messages (may be NULL). */
BP_API bp_status bp_engine_parse_json(const char *text, size_t len, const char *filename, const bp_allocator *alloc,
                                      bp_engine **out, bp_error *err);
/* Writes the profile as JSON; read back it gives the same profile. */
BP_API bp_status bp_engine_write_json_file(const bp_engine *e, FILE *f, bp_error *err);
BP_API void bp_engine_free(bp_engine *e);

BP_API const char *bp_engine_name(const bp_engine *e);
BP_API int bp_engine_concat_inplace(const bp_engine *e);
BP_API int bp_engine_graph_hints(const bp_engine *e);
BP_API int bp_engine_n_ops(const bp_engine *e);
/* Op type i (0 .. n_ops-1, sorted by type); the pointers stay valid until
 * the profile is changed or freed.  BP_ERR_USAGE for i out of range. */
BP_API bp_status bp_engine_op_get(const bp_engine *e, int i, bp_engine_op *out, bp_error *err);
/* 1 when the two profiles say the same (names aside). */
BP_API int bp_engine_equal(const bp_engine *a, const bp_engine *b);
/* A 64-bit digest of what the profile says (names aside): plan cache keys. */
BP_API uint64_t bp_engine_digest(const bp_engine *e);

/* The engine a plan was made for (a copy it owns); NULL for the default. */
BP_API const bp_engine *bp_plan_engine(const bp_plan *p);
/* The engine profile a plan file was made for (its "engine" key), read
 * before the plan itself so that its workspace formulas can be given to the
 * graph first (bp_engine_apply_workspaces); *out is NULL when the file
 * names none (the default).  Uses g's allocator and limits; the caller
 * frees *out with bp_engine_free. */
BP_API bp_status bp_plan_read_engine(const bp_graph *g, const char *path, bp_engine **out, bp_error *err);

/* Gives every op of g whose type has a workspace formula in e, and that has
 * no workspace yet, the workspace the formula says (in bytes: the formula's
 * elements times the element size of output 0).  Formulas read inK[D],
 * outK[D], inK.rank; an op for which the formula cannot be evaluated (a
 * symbolic dim, a missing input or dim, an attribute: graphs keep none) or
 * gives 0 gets none.  BP_ERR_INVALID naming the op type for a malformed
 * formula.  g is finalized afterwards. */
BP_API bp_status bp_engine_apply_workspaces(const bp_engine *e, bp_graph *g, bp_error *err);

#ifdef __cplusplus
}
#endif

#endif /* BUFPLAN_ENGINE_H */
