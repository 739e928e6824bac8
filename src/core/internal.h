/*
 * Internal declarations shared by the modules of the library.  Not installed.
 *
 * Data layout (docs/ARCHITECTURE.md): dense integer ids, arrays of structs, names interned
 * once in a string pool with an open-addressing hash index, consumers in CSR
 * form.  Module prefixes: bp__mem (util.c), bp__names (util.c), bp__graph
 * (graph.c), bp__storage / bp__lifetime (lifetime.c), bp__sched (schedule_*.c),
 * bp__assign (assign_*.c), bp__events (plan.c).
 */
#ifndef BP_INTERNAL_H
#define BP_INTERNAL_H

#include "bufplan.h"
#include "bufplan_limits.h"

#include <stdarg.h>
#include <stdbool.h>

/* ------------------------------------------------------------ allocation */

extern const bp_allocator bp__libc_allocator;

void *bp__alloc(const bp_allocator *a, size_t size);
void *bp__calloc(const bp_allocator *a, size_t n, size_t size); /* overflow-checked */
void *bp__realloc(const bp_allocator *a, void *p, size_t old_size, size_t new_size);
void bp__free(const bp_allocator *a, void *p, size_t size);
/* Asks for transparent huge pages on a large block (advice only). */
void bp__hint_huge(void *p, size_t n);
/* Grows *arr (elements of elem bytes) so that it holds at least `need`
 * elements; *cap is updated.  Returns false on overflow or OOM. */
bool bp__grow(const bp_allocator *a, void **arr, size_t *cap, size_t need, size_t elem);

/* Overflow-checked arithmetic; return false on overflow. */
static inline bool bp__add_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool bp__mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline uint64_t bp__align_up(uint64_t x, uint64_t a) { return a <= 1 ? x : (x + a - 1) / a * a; }

/* ---------------------------------------------------------------- errors */

/* Formats err->msg and sets err->status; returns the status.  err may be NULL. */
bp_status bp__err(bp_error *err, bp_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void bp__err_clear(bp_error *err);
/* True when s is valid UTF-8 (names must be, so JSON files round-trip). */
bool bp__valid_utf8(const char *s);

double bp__now(void); /* monotonic seconds */
/* The shortest decimal that reads back as v (%.17g at most): 0.7, not
 * 0.69999999999999996.  Returns buf. */
const char *bp__fmt_double(char buf[32], double v);

/* ----------------------------------------------------------- name index */

/* A string pool plus an open-addressing hash index from name to id. */
typedef struct bp__names {
    char *pool;          /* NUL-terminated names, back to back */
    size_t pool_len, pool_cap;
    uint32_t *off;       /* off[id] = offset of name id in pool */
    size_t n, off_cap;
    uint64_t *slots;     /* hash slots: (hash tag << 32) | (id + 1), 0 = empty */
    size_t n_slots;      /* power of two */
} bp__names;

void bp__names_free(const bp_allocator *a, bp__names *nm);
/* Adds a name, returns its id (= count before the call), or -1 on OOM,
 * -2 if it exists (then *existing is set). */
int32_t bp__names_add(const bp_allocator *a, bp__names *nm, const char *s, size_t len, int32_t *existing);
int32_t bp__names_find(const bp__names *nm, const char *s, size_t len);
static inline const char *bp__names_get(const bp__names *nm, int32_t id) { return nm->pool + nm->off[id]; }
uint64_t bp__hash_bytes(const void *p, size_t n, uint64_t seed);

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
} bp__tensor;

typedef struct bp__op {
    uint32_t io_off;       /* inputs then outputs in g->io */
    uint16_t n_in, n_out;
    int32_t type;          /* id in g->types */
    double cost;           /* <= 0: unknown */
} bp__op;

typedef struct bp__inplace {
    int32_t op, out, in;
} bp__inplace;

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
    bp_limits lim;                             /* enforced by the builder (limits.c) */
    /* built by finalize */
    bool finalized;
    int32_t *cons_off;  /* n_t + 1 */
    int32_t *cons;      /* consumer op ids, one per (op, input slot) */
    size_t cons_cap_bytes;
    uint8_t *type_class;  /* per op type id: BP__TYPE_VIEW | BP__TYPE_ELEMENTWISE */
    size_t type_class_n;
};

/* BROADCAST: a view whose elements may repeat (strides of 0), so it may
 * claim more bytes than its source holds. */
enum { BP__TYPE_VIEW = 1, BP__TYPE_ELEMENTWISE = 2, BP__TYPE_BROADCAST = 4 };

#define BP__SYM_BASE (-(INT64_C(1) << 40))
static inline bool bp__dim_is_sym(int64_t d) { return d <= BP__SYM_BASE; }
static inline int32_t bp__dim_sym(int64_t d) { return (int32_t)(BP__SYM_BASE - d); }

static inline const int32_t *bp__op_in(const bp_graph *g, int32_t op) { return g->io + g->o[op].io_off; }
static inline const int32_t *bp__op_out(const bp_graph *g, int32_t op) { return g->io + g->o[op].io_off + g->o[op].n_in; }

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
/* Reads a bufplan-graph JSON file with explicit limits (graph_json.c). */
bp_status bp__graph_read_json_lim(const char *path, const bp_limits *lim, const bp_allocator *alloc, bp_graph **out,
                                  bp_error *err);

/* ------------------------------------------------------------- storages */

/* Alias groups that do not depend on the order: each tensor's root (the end
 * of its view chain, or itself), and which roots live in the arena. */
typedef struct bp__storage {
    int32_t *root;       /* n_t: root tensor of each tensor's storage */
    uint8_t *planned;    /* n_t: 1 when the tensor's storage is in the arena */
} bp__storage;

bp_status bp__storage_build(const bp_graph *g, const bp_plan_options *o, bp__storage *st, bp_error *err);
void bp__storage_free(const bp_graph *g, bp__storage *st);
/* Union-find root of t in root[], compressing the path. */
static inline int32_t bp__storage_find(int32_t *root, int32_t t)
{
    int32_t r = t;
    while (root[r] != r) r = root[r];
    while (root[t] != r) { int32_t n = root[t]; root[t] = r; t = n; }
    return r;
}

/* Order-dependent lifetimes of storages: after in-place merging, root[t] may
 * change (a tensor written in place joins its input's storage).  first/last
 * are per tensor (its own lifetime) and sfirst/slast per root (union over
 * members, meaningful where root[t] == t). */
typedef struct bp__lifetimes {
    int32_t *step;       /* n_o: step of each op */
    int32_t *first, *last;    /* n_t: the tensor's own interval */
    int32_t *root;            /* n_t: storage root after in-place */
    int32_t *sfirst, *slast;  /* n_t: storage interval (valid for roots) */
    uint64_t *ssize;          /* n_t: storage bytes (valid for roots) */
    uint8_t *planned;         /* n_t: storage in the arena */
} bp__lifetimes;

bp_status bp__lifetimes_compute(const bp_graph *g, const bp_plan_options *o,
                                const bp__storage *st, const int32_t *order,
                                bp__lifetimes *lt, bp_error *err);
void bp__lifetimes_free(const bp_graph *g, bp__lifetimes *lt);
/* Max over steps of the aligned bytes of planned storages live at a step;
 * *peak_step gets a step where it is reached (may be NULL). */
uint64_t bp__lifetimes_peak(const bp_graph *g, const bp__lifetimes *lt, uint64_t alignment, int32_t *peak_step);

/* ------------------------------------------------------------ scheduling */

/* Each scheduler fills order[0..n_ops-1].  Dispatch lives in schedule.c. */
bp_status bp__sched_given(const bp_graph *g, int32_t *order, bp_error *err);
bp_status bp__sched_kahn(const bp_graph *g, int32_t *order, bp_error *err);

/* ------------------------------------------------------------ assigners */

/* assign.c dispatches bp_assign_intervals(); each strategy fills offsets[]
 * and res->arena_bytes.  Inputs were validated by the dispatcher. */
bp_status bp__assign_naive(const bp_interval *iv, size_t n, uint64_t *offsets, bp_assign_result *res, bp_error *err);
bp_status bp__assign_bestfit(const bp_interval *iv, size_t n, const bp_assign_options *o,
                             uint64_t *offsets, bp_assign_result *res, bp_error *err);
bp_status bp__assign_search(const bp_interval *iv, size_t n, const bp_assign_options *o,
                            uint64_t *offsets, bp_assign_result *res, bp_error *err);

/* Fence-aware assignment (plan/fences.c): like bestfit, but prefers placing a
 * storage over bytes whose previous tenants' readers all precede the new
 * producer in the dependency order.  iv[i] belongs to storage root roots[i]. */
bp_status bp__assign_fence_aware(const bp_graph *g, const bp__lifetimes *lt, const bp_interval *iv,
                                 const int32_t *roots, size_t n, uint64_t *offsets, bp_assign_result *res,
                                 bp_error *err);

/* ---------------------------------------------------------------- plans */

struct bp_plan {
    bp_allocator alloc;
    int32_t n_t, n_o;
    int32_t *order;          /* n_o */
    bp_tensor_plan *tp;      /* n_t */
    bp_event *ev; size_t n_ev, cap_ev;
    uint64_t alignment;
    bp_sched_kind sched;
    bp_assign_kind assign;
    bp_plan_stats stats;
};

/* Allocates an empty plan (order/tp arrays sized). */
bp_plan *bp__plan_alloc(const bp_allocator *a, int32_t n_t, int32_t n_o);
/* Builds the event table from order and tp (lazy ALLOC, FREE after last use). */
bp_status bp__plan_build_events(bp_plan *p, const bp_graph *g, bp_error *err);

/* ---------------------------------------------------------------- files */

/* Reads a whole file (NUL-terminated). */
bp_status bp__read_file(const char *path, const bp_allocator *a, char **buf, size_t *len, bp_error *err);
/* Safe writes (outfile.c): a temporary made with mkstemp next to the target
 * (or stdout for "-"), given the mode of the file it replaces, fsynced and
 * renamed over it on commit.  Special files (FIFOs, devices, directories)
 * are refused; a symlink is followed; a file with more than one hard link
 * is rewritten in place so that the links stay.  Stale temporaries of
 * earlier runs (older than a minute) in that directory are removed. */
typedef struct bp__outfile {
    FILE *f;
    char *path, *tmp;          /* target (symlinks resolved) and temporary */
    size_t path_size, tmp_size;
    unsigned mode;             /* permission bits to give the result */
    bool is_stdout, in_place;
} bp__outfile;
bp_status bp__out_open(bp__outfile *o, const char *path, bp_error *err);
bp_status bp__out_commit(bp__outfile *o, bp_error *err);   /* closes; renames on success */
void bp__out_abort(bp__outfile *o);                          /* closes; removes temp */
/* Writes s as a JSON string literal (with quotes). */
void bp__json_str(FILE *f, const char *s);

/* --------------------------------------------------------------- limits */

/* l, or the defaults when l is NULL (limits.c). */
const bp_limits *bp__limits(const bp_limits *l);
/* BP_ERR_LIMIT when the tensors' bytes add up to more than
 * g->lim.max_total_bytes (so the planners' sums cannot overflow). */
bp_status bp__limits_check_total(const bp_graph *g, bp_error *err);

/* Streaming JSON pre-scan: nesting depth and size, before jansson parses. */
enum { BP__JSON_SCAN_DEPTH = 1, BP__JSON_SCAN_SIZE = 2 };
typedef struct bp__json_scan {
    uint64_t bytes, max_bytes, line;
    uint32_t depth, max_depth;
    uint8_t in_str, esc;
    int failed;               /* BP__JSON_SCAN_* */
} bp__json_scan;
void bp__json_scan_init(bp__json_scan *s, const bp_limits *l);
/* False when a limit is passed (s->failed says which). */
bool bp__json_scan_feed(bp__json_scan *s, const char *p, size_t n);
bp_status bp__json_scan_error(const bp__json_scan *s, const char *file, bp_error *err);

/* Fault injection (fault.c, test builds with -DBP_FAULT_INJECTION only):
 * true when this allocation is the one $BP_FAULT_ALLOC names. */
#ifdef BP_FAULT_INJECTION
bool bp__fault_fail(void);
#else
static inline bool bp__fault_fail(void) { return false; }
#endif

#endif /* BP_INTERNAL_H */
