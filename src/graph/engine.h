/*
 * engine.h — engine profiles inside the library (engine.c, engine_json.c):
 * the profile's layout, and its binding to one graph (bp__etab: the rules of
 * each op type id of the graph), which the storages (graph/storage.c), the
 * schedulers' evaluator, the lifetimes, the verifier, the plan and the
 * executor read.  For the default profile the binding is the graph's own
 * type classes (finalize), so planning with it costs what it always did.
 * Included by graph/ and the folders above it.
 */
#ifndef BP_GRAPH_ENGINE_H
#define BP_GRAPH_ENGINE_H

#include "graph/graph_internal.h"

typedef bp_engine_pair bp__eng_pair;    /* in: BP_ENGINE_ANY_INPUT for "each input in turn" */

typedef struct bp__eng_op {
    char *type;
    uint8_t n_views, n_inplace;
    uint8_t same_dtype, strided;
    bp__eng_pair views[BP_ENGINE_MAX_PAIRS];
    bp__eng_pair inplace[BP_ENGINE_MAX_PAIRS];
    char *workspace;                     /* formula text or NULL */
} bp__eng_op;

struct bp_engine {
    bp_allocator alloc;
    char *name;
    int concat_inplace, graph_hints;
    int is_default;                      /* says exactly what the built-in "default" says */
    bp__eng_op *ops; size_t n_ops, cap_ops;   /* sorted by type */
};

/* The built-in default's op type lists (NULL-terminated), which graph.c's
 * type classes use too. */
extern const char *const bp__default_view_types[];
extern const char *const bp__default_inplace_types[];

/* Rules of op type `type` in e, or NULL. */
const bp__eng_op *bp__engine_find(const bp_engine *e, const char *type);
/* A copy of e (NULL when e is NULL or the default); *out NULL on failure. */
bp_status bp__engine_copy(const bp_engine *e, const bp_allocator *a, bp_engine **out, bp_error *err);
/* Whether e plans as the default (NULL or is_default). */
static inline bool bp__engine_is_default(const bp_engine *e) { return !e || e->is_default; }

/* ------------------------------------------------------------ binding */

/* bp__etab (graph_internal.h): the profile bound to one graph. */
/* In-place candidates of one op the planners look at (an op with more
 * inputs has only its first ones tried). */
#define BP__IP_CAP 256
/* Binds e (NULL = default) to the finalized graph g. */
bp_status bp__etab_build(const bp_graph *g, const bp_engine *e, bp__etab *t, bp_error *err);
void bp__etab_free(const bp_graph *g, bp__etab *t);
/* The tensor that tensor t is a view of under the profile (its explicit
 * view_of, or the input the profile names for its producer's output), or -1. */
int32_t bp__etab_view_source(const bp_graph *g, const bp__etab *t, int32_t tensor);
/* Whether the graph's in-place hints count. */
static inline bool bp__etab_hints(const bp__etab *t) { return !t->e || t->e->graph_hints; }
/* The in-place candidates of op (without its graph hint) in the order to try
 * them: (output, input) tensor pairs into pairs[] (cap entries); returns the
 * count.  The static conditions of the profile (same dtype, the input no
 * view unless strided, same bytes) are already applied. */
int bp__etab_inplace(const bp_graph *g, const bp__etab *t, int32_t op, int32_t *outs, int32_t *ins, int cap);
/* Whether the profile (or the graph's hint) lets output `out` of op be
 * written over input `in` (static conditions included): the verifier's test. */
bool bp__etab_inplace_allowed(const bp_graph *g, const bp__etab *t, int32_t op, int32_t out, int32_t in);

#endif /* BP_GRAPH_ENGINE_H */
