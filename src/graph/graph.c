/*
 * graph.c — the graph model: tensors and ops with dense ids, the builder API,
 * and finalize(), which validates the graph and builds the consumer index.
 *
 * finalize() checks, in order: every consumed tensor has a producer or is an
 * input/weight; every output is produced or is an input; view chains end;
 * the op graph is acyclic (Kahn's algorithm; on failure an iterative DFS over
 * the ops left finds one cycle and the message lists its ops).  Consumers are
 * stored in CSR form (cons_off / cons), one entry per (op, input slot).
 */
#include "graph/engine.h"
#include "graph/graph_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ----------------------------------------------------------------- dtypes */

static const struct { const char *name; size_t size; } dtypes[BP_DT_COUNT] = {
    [BP_DT_UNKNOWN] = {"unknown", 0},
    [BP_DT_F64] = {"f64", 8}, [BP_DT_F32] = {"f32", 4}, [BP_DT_F16] = {"f16", 2}, [BP_DT_BF16] = {"bf16", 2},
    [BP_DT_I64] = {"i64", 8}, [BP_DT_I32] = {"i32", 4}, [BP_DT_I16] = {"i16", 2}, [BP_DT_I8] = {"i8", 1},
    [BP_DT_U64] = {"u64", 8}, [BP_DT_U32] = {"u32", 4}, [BP_DT_U16] = {"u16", 2}, [BP_DT_U8] = {"u8", 1},
    [BP_DT_BOOL] = {"bool", 1}, [BP_DT_C64] = {"c64", 8}, [BP_DT_C128] = {"c128", 16}, [BP_DT_F8] = {"f8", 1},
};

size_t bp_dtype_size(bp_dtype dt) { return (unsigned)dt < BP_DT_COUNT ? dtypes[dt].size : 0; }
const char *bp_dtype_name(bp_dtype dt) { return (unsigned)dt < BP_DT_COUNT ? dtypes[dt].name : "unknown"; }

bp_dtype bp_dtype_parse(const char *s)
{
    static const struct { const char *alias; bp_dtype dt; } aliases[] = {
        {"float64", BP_DT_F64}, {"double", BP_DT_F64}, {"float32", BP_DT_F32}, {"float", BP_DT_F32},
        {"float16", BP_DT_F16}, {"half", BP_DT_F16}, {"bfloat16", BP_DT_BF16},
        {"int64", BP_DT_I64}, {"int32", BP_DT_I32}, {"int16", BP_DT_I16}, {"int8", BP_DT_I8},
        {"uint64", BP_DT_U64}, {"uint32", BP_DT_U32}, {"uint16", BP_DT_U16}, {"uint8", BP_DT_U8},
        {"complex64", BP_DT_C64}, {"complex128", BP_DT_C128}, {"float8", BP_DT_F8}, {"fp8", BP_DT_F8},
    };
    if (!s) return BP_DT_UNKNOWN;
    for (int i = 1; i < BP_DT_COUNT; i++)
        if (strcmp(s, dtypes[i].name) == 0) return (bp_dtype)i;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].alias) == 0) return aliases[i].dt;
    return BP_DT_UNKNOWN;
}

/* -------------------------------------------------------------- op types */

bool bp__is_view_type(const char *type)
{
    for (const char *const *v = bp__default_view_types; *v; v++)
        if (strcmp(type, *v) == 0) return true;
    return false;
}

bool bp__is_broadcast_view_type(const char *type)
{
    return strcmp(type, "aten.expand") == 0 || strcmp(type, "aten.as_strided") == 0;
}

bool bp__is_elementwise_type(const char *type)
{
    for (const char *const *v = bp__default_inplace_types; *v; v++)
        if (strcmp(type, *v) == 0) return true;
    return false;
}

/* --------------------------------------------------------------- builder */

bp_graph *bp_graph_new(const char *name, const bp_allocator *alloc)
{
    if (!alloc) alloc = &bp__libc_allocator;
    bp_graph *g = bp__calloc(alloc, 1, sizeof *g);
    if (!g) return NULL;
    g->alloc = *alloc;
    bp_limits_init(&g->lim);
    const char *n = name ? name : "graph";
    g->name = bp__alloc(alloc, strlen(n) + 1);
    if (!g->name) { bp__free(alloc, g, sizeof *g); return NULL; }
    strcpy(g->name, n);
    return g;
}

void bp__graph_unfinalize(bp_graph *g)
{
    if (!g->finalized) return;
    bp__free(&g->alloc, g->cons_off, (g->n_t + 1) * sizeof *g->cons_off);
    bp__free(&g->alloc, g->cons, g->cons_cap_bytes);
    bp__free(&g->alloc, g->type_class, g->type_class_n);
    g->type_class = NULL;
    g->type_class_n = 0;
    g->cons_off = g->cons = NULL;
    g->cons_cap_bytes = 0;
    g->finalized = false;
}

/* Frees the bodies (graphs owned by g) and their io lists. */
static void bodies_free(bp_graph *g)
{
    for (size_t i = 0; i < g->n_bodies; i++) {
        bp_graph_free(g->bodies[i].g);
        bp__free(&g->alloc, g->bodies[i].io, (size_t)(g->bodies[i].n_io ? g->bodies[i].n_io : 1) * sizeof *g->bodies[i].io);
    }
    bp__free(&g->alloc, g->bodies, g->cap_bodies * sizeof *g->bodies);
    g->bodies = NULL;
    g->n_bodies = g->cap_bodies = 0;
}

void bp_graph_free(bp_graph *g)
{
    if (!g) return;
    const bp_allocator *a = &g->alloc;
    bp__graph_unfinalize(g);
    bp__free(a, g->name, strlen(g->name) + 1);
    bp__names_free(a, &g->tnames);
    bp__names_free(a, &g->onames);
    bp__names_free(a, &g->types);
    bp__names_free(a, &g->syms);
    bp__free(a, g->t, g->cap_t * sizeof *g->t);
    bp__free(a, g->o, g->cap_o * sizeof *g->o);
    bp__free(a, g->io, g->cap_io * sizeof *g->io);
    bp__free(a, g->dims, g->cap_dims * sizeof *g->dims);
    bp__free(a, g->inpl, g->cap_inpl * sizeof *g->inpl);
    bp__free(a, g->sym_val, g->cap_sym_val * sizeof *g->sym_val);
    bodies_free(g);
    bp__attrs_free(g);
    bp_allocator copy = *a;
    bp__free(&copy, g, sizeof *g);
}

static bp_status oom(bp_graph *g, bp_error *err, const char *what, const char *name)
{
    return bp__err(err, BP_ERR_NOMEM, "%s: out of memory adding %s \"%s\"", g->name, what, name ? name : "");
}

static bp_status add_tensor_common(bp_graph *g, const char *name, int32_t *id_out, bp_error *err)
{
    if (!name || !*name) return bp__err(err, BP_ERR_INVALID, "%s: a tensor has an empty name", g->name);
    if (!bp__valid_utf8(name)) return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": the name is not valid UTF-8", g->name, name);
    if (strlen(name) > g->lim.max_name_len)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%.64s...\": the name is longer than %llu bytes (bp_limits.max_name_len)",
                       g->name, name, (unsigned long long)g->lim.max_name_len);
    if (g->n_t >= g->lim.max_tensors)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": more than %llu tensors (bp_limits.max_tensors)", g->name, name,
                       (unsigned long long)g->lim.max_tensors);
    if (!bp__grow(&g->alloc, (void **)&g->t, &g->cap_t, g->n_t + 1, sizeof *g->t)) return oom(g, err, "tensor", name);
    bp__graph_unfinalize(g);
    int32_t existing;
    int32_t id = bp__names_add(&g->alloc, &g->tnames, name, strlen(name), &existing);
    if (id == -2) return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" is defined twice", g->name, name);
    if (id < 0) return oom(g, err, "tensor", name);
    bp__tensor *t = &g->t[g->n_t++];
    memset(t, 0, sizeof *t);
    t->producer = -1;
    t->view_of = -1;
    t->dims_off = (uint32_t)g->n_dims;
    *id_out = id;
    return BP_OK;
}

bp_status bp_graph_add_tensor(bp_graph *g, const char *name, uint64_t bytes, int32_t *id_out, bp_error *err)
{
    int32_t id = -1;
    if (bytes > g->lim.max_tensor_bytes)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": %llu bytes is over the limit of %llu (bp_limits.max_tensor_bytes)",
                       g->name, name ? name : "", (unsigned long long)bytes, (unsigned long long)g->lim.max_tensor_bytes);
    bp_status s = add_tensor_common(g, name, &id, err);
    if (s) return s;
    g->t[id].bytes = bytes;
    if (id_out) *id_out = id;
    return BP_OK;
}

/* Recomputes bytes from the shape; dynamic when a symbol is unbound. */
static bp_status tensor_size_from_shape(bp_graph *g, int32_t id, bp_error *err)
{
    bp__tensor *t = &g->t[id];
    uint64_t n = bp_dtype_size(t->dtype);
    bool dyn = false;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = g->dims[t->dims_off + i];
        if (bp__dim_is_sym(d)) {
            int32_t k = bp__dim_sym(d);
            d = (size_t)k < g->cap_sym_val ? g->sym_val[k] : -1;
            if (d < 0) { dyn = true; continue; }
        }
        if (!bp__mul_u64(n, (uint64_t)d, &n))
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": size overflows 64 bits", g->name,
                           bp__names_get(&g->tnames, id));
    }
    if (!dyn && n > g->lim.max_tensor_bytes)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": %llu bytes is over the limit of %llu (bp_limits.max_tensor_bytes)",
                       g->name, bp__names_get(&g->tnames, id), (unsigned long long)n, (unsigned long long)g->lim.max_tensor_bytes);
    t->dynamic = dyn;
    t->bytes = dyn ? 0 : n;
    return BP_OK;
}

bp_status bp_graph_add_tensor_shape(bp_graph *g, const char *name, bp_dtype dt, int rank, const int64_t *dims,
                                    const char *const *syms, int32_t *id_out, bp_error *err)
{
    if (rank < 0 || rank > 255) return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": rank %d is out of range (0..255)", g->name, name ? name : "", rank);
    if ((unsigned)rank > g->lim.max_rank)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": rank %d is over the limit of %u (bp_limits.max_rank)", g->name,
                       name ? name : "", rank, g->lim.max_rank);
    if (dt <= BP_DT_UNKNOWN || dt >= BP_DT_COUNT) return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": unknown dtype", g->name, name ? name : "");
    for (int i = 0; i < rank; i++) {
        if (dims[i] == BP_DIM_SYMBOLIC) {
            if (!syms || !syms[i] || !*syms[i])
                return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": dimension %d is symbolic but has no name", g->name, name ? name : "", i);
            if (strlen(syms[i]) > g->lim.max_name_len)
                return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": the symbol of dimension %d is longer than %llu bytes (bp_limits.max_name_len)",
                               g->name, name ? name : "", i, (unsigned long long)g->lim.max_name_len);
        } else if (dims[i] < 0) {
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": dimension %d is negative (%lld)", g->name, name ? name : "", i, (long long)dims[i]);
        }
    }
    if (!bp__grow(&g->alloc, (void **)&g->dims, &g->cap_dims, g->n_dims + (size_t)rank, sizeof *g->dims))
        return oom(g, err, "tensor", name);
    for (int i = 0; i < rank; i++)
        if (dims[i] == BP_DIM_SYMBOLIC && !bp__valid_utf8(syms[i]))
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": symbol of dimension %d is not valid UTF-8", g->name, name ? name : "", i);
    int32_t id = -1;
    bp_status s = add_tensor_common(g, name, &id, err);
    if (s) return s;
    bp__tensor *t = &g->t[id];
    t->has_shape = 1;
    t->rank = (uint8_t)rank;
    t->dtype = (uint8_t)dt;
    t->dims_off = (uint32_t)g->n_dims;
    for (int i = 0; i < rank; i++) {
        int64_t d = dims[i];
        if (d == BP_DIM_SYMBOLIC) {
            int32_t ex, k = bp__names_add(&g->alloc, &g->syms, syms[i], strlen(syms[i]), &ex);
            if (k == -2) {
                k = ex;
            } else {
                if (k < 0 || !bp__grow(&g->alloc, (void **)&g->sym_val, &g->cap_sym_val, (size_t)k + 1, sizeof *g->sym_val))
                    return oom(g, err, "tensor", name);
                g->sym_val[k] = -1;
            }
            d = BP__SYM_BASE - k;
        }
        g->dims[g->n_dims++] = d;
    }
    s = tensor_size_from_shape(g, id, err);
    if (s) return s;
    if (id_out) *id_out = id;
    return BP_OK;
}

bp_status bp_graph_bind_dim(bp_graph *g, const char *sym, int64_t value, bp_error *err)
{
    if (value < 0) return bp__err(err, BP_ERR_USAGE, "%s: --dim %s=%lld: the value must be >= 0", g->name, sym, (long long)value);
    int32_t k = bp__names_find(&g->syms, sym, strlen(sym));
    if (k < 0) return bp__err(err, BP_ERR_USAGE, "%s: no symbolic dimension is called \"%s\"", g->name, sym);
    g->sym_val[k] = value;
    for (size_t i = 0; i < g->n_t; i++) {
        if (!g->t[i].has_shape) continue;
        bool uses = false;
        for (int j = 0; j < g->t[i].rank; j++)
            if (g->dims[g->t[i].dims_off + j] == BP__SYM_BASE - k) uses = true;
        if (uses) {
            bp_status s = tensor_size_from_shape(g, (int32_t)i, err);
            if (s) return s;
        }
    }
    return g->finalized ? bp__check_view_bytes(g, err) : BP_OK;   /* a bound view still fits its root */
}

static bool valid_tensor(const bp_graph *g, int32_t t) { return t >= 0 && (size_t)t < g->n_t; }
static bool valid_op(const bp_graph *g, int32_t o) { return o >= 0 && (size_t)o < g->n_o; }

bp_status bp_graph_set_view(bp_graph *g, int32_t tensor, int32_t source, bp_error *err)
{
    if (!valid_tensor(g, tensor) || !valid_tensor(g, source))
        return bp__err(err, BP_ERR_USAGE, "%s: set_view: tensor id out of range", g->name);
    if (tensor == source)
        return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" is declared a view of itself", g->name, bp__names_get(&g->tnames, tensor));
    bp__graph_unfinalize(g);
    g->t[tensor].view_of = source;
    return BP_OK;
}

bp_status bp_graph_add_op(bp_graph *g, const char *name, const char *type, int n_inputs, const int32_t *inputs,
                          int n_outputs, const int32_t *outputs, double cost, int32_t *id_out, bp_error *err)
{
    if (!name || !*name) return bp__err(err, BP_ERR_INVALID, "%s: an op has an empty name", g->name);
    if (!type || !*type) return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\" has no type", g->name, name);
    if (n_inputs < 0 || n_outputs < 0 || n_inputs > 65535 || n_outputs > 65535)
        return bp__err(err, BP_ERR_LIMIT, "%s: op \"%s\": too many inputs or outputs", g->name, name);
    for (int i = 0; i < n_inputs; i++)
        if (!valid_tensor(g, inputs[i])) return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": input %d is not a tensor id", g->name, name, i);
    for (int i = 0; i < n_outputs; i++) {
        int32_t t = outputs[i];
        if (!valid_tensor(g, t)) return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": output %d is not a tensor id", g->name, name, i);
        if (g->t[t].producer >= 0)
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" has two producers: op \"%s\" and op \"%s\"", g->name,
                           bp__names_get(&g->tnames, t), bp__names_get(&g->onames, g->t[t].producer), name);
        for (int j = 0; j < i; j++)
            if (outputs[j] == t)
                return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\" lists output \"%s\" twice", g->name, name, bp__names_get(&g->tnames, t));
        for (int j = 0; j < n_inputs; j++)
            if (inputs[j] == t)
                return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\" consumes its own output \"%s\"", g->name, name, bp__names_get(&g->tnames, t));
    }
    if (!bp__valid_utf8(name) || !bp__valid_utf8(type))
        return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": the name or type is not valid UTF-8", g->name, name);
    if (strlen(name) > g->lim.max_name_len || strlen(type) > g->lim.max_name_len)
        return bp__err(err, BP_ERR_LIMIT, "%s: op \"%.64s\": the name or type is longer than %llu bytes (bp_limits.max_name_len)",
                       g->name, name, (unsigned long long)g->lim.max_name_len);
    if (g->n_o >= g->lim.max_ops)
        return bp__err(err, BP_ERR_LIMIT, "%s: op \"%s\": more than %llu ops (bp_limits.max_ops)", g->name, name,
                       (unsigned long long)g->lim.max_ops);
    if (g->n_io + (size_t)n_inputs + (size_t)n_outputs > UINT32_MAX)
        return bp__err(err, BP_ERR_LIMIT, "%s: too many op inputs and outputs in total", g->name);
    bp__graph_unfinalize(g);
    /* Grow every array first, so a failure leaves names and ops in step. */
    if (!bp__grow(&g->alloc, (void **)&g->o, &g->cap_o, g->n_o + 1, sizeof *g->o) ||
        !bp__grow(&g->alloc, (void **)&g->io, &g->cap_io, g->n_io + (size_t)n_inputs + (size_t)n_outputs, sizeof *g->io))
        return oom(g, err, "op", name);
    int32_t ex, tid = bp__names_add(&g->alloc, &g->types, type, strlen(type), &ex);
    if (tid == -2) tid = ex;
    else if (tid < 0) return oom(g, err, "op", name);
    int32_t id = bp__names_add(&g->alloc, &g->onames, name, strlen(name), &ex);
    if (id == -2) return bp__err(err, BP_ERR_INVALID, "%s: op name \"%s\" is used twice", g->name, name);
    if (id < 0) return oom(g, err, "op", name);
    bp__op *o = &g->o[g->n_o++];
    o->io_off = (uint32_t)g->n_io;
    o->n_in = (uint16_t)n_inputs;
    o->n_out = (uint16_t)n_outputs;
    o->type = tid;
    o->n_ws = 0;
    o->cost = cost;
    if (n_inputs) memcpy(g->io + g->n_io, inputs, (size_t)n_inputs * sizeof *inputs);
    g->n_io += (size_t)n_inputs;
    if (n_outputs) memcpy(g->io + g->n_io, outputs, (size_t)n_outputs * sizeof *outputs);
    g->n_io += (size_t)n_outputs;
    for (int i = 0; i < n_outputs; i++) g->t[outputs[i]].producer = id;
    if (id_out) *id_out = id;
    return BP_OK;
}

bp_status bp_graph_set_inplace(bp_graph *g, int32_t op, int32_t out, int32_t in, bp_error *err)
{
    if (!valid_op(g, op) || !valid_tensor(g, out) || !valid_tensor(g, in))
        return bp__err(err, BP_ERR_USAGE, "%s: set_inplace: id out of range", g->name);
    const char *on = bp__names_get(&g->onames, op);
    bool has_in = false, has_out = false;
    for (int i = 0; i < g->o[op].n_in; i++) has_in |= bp__op_in(g, op)[i] == in;
    for (int i = 0; i < g->o[op].n_out; i++) has_out |= bp__op_out(g, op)[i] == out;
    if (!has_in) return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": inplace input \"%s\" is not an input of the op", g->name, on, bp__names_get(&g->tnames, in));
    if (!has_out) return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": inplace output \"%s\" is not an output of the op", g->name, on, bp__names_get(&g->tnames, out));
    if (!bp__grow(&g->alloc, (void **)&g->inpl, &g->cap_inpl, g->n_inpl + 1, sizeof *g->inpl)) return oom(g, err, "inplace hint of op", on);
    bp__graph_unfinalize(g);
    g->inpl[g->n_inpl++] = (bp__inplace){op, out, in};
    return BP_OK;
}

/* Moves op's io block to the end of g->io with room for n more outputs
 * (the old slots stay unused). */
static bool ws_move_io(bp_graph *g, int32_t op, int n)
{
    bp__op *o = &g->o[op];
    size_t k = (size_t)o->n_in + o->n_out;
    if (!bp__grow(&g->alloc, (void **)&g->io, &g->cap_io, g->n_io + k + (size_t)n, sizeof *g->io)) return false;
    memmove(g->io + g->n_io, g->io + o->io_off, k * sizeof *g->io);
    o->io_off = (uint32_t)g->n_io;
    g->n_io += k;
    return true;
}

bp_status bp_graph_set_workspace(bp_graph *g, int32_t op, int n, const uint64_t *bytes, bp_error *err)
{
    if (!g || !valid_op(g, op) || n < 1 || n > 64 || !bytes)
        return bp__err(err, BP_ERR_USAGE, "%s: set_workspace: bad op id or count (1 to 64 workspaces)", g ? g->name : "graph");
    const char *on = bp__names_get(&g->onames, op);
    if (g->o[op].n_ws) return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\" already has workspaces", g->name, on);
    if ((size_t)g->o[op].n_out + (size_t)n > UINT16_MAX || g->n_io + (size_t)g->o[op].n_in + g->o[op].n_out + (size_t)n >= UINT32_MAX)
        return bp__err(err, BP_ERR_LIMIT, "%s: op \"%s\": too many outputs with its workspaces", g->name, on);
    int32_t ids[64];
    for (int i = 0; i < n; i++) {
        char name[300];
        snprintf(name, sizeof name, "%.280s#ws%d", bp__names_get(&g->onames, op), i);
        bp_status s = bp_graph_add_tensor(g, name, bytes[i], &ids[i], err);
        if (s) return s;   /* the tensors added so far stay, unproduced and unread: finalize ignores them */
    }
    if (!ws_move_io(g, op, n)) return oom(g, err, "workspaces of op", on);
    for (int i = 0; i < n; i++) {
        g->io[g->n_io++] = ids[i];
        g->t[ids[i]].producer = op;
        g->t[ids[i]].is_workspace = 1;
    }
    g->o[op].n_out = (uint16_t)(g->o[op].n_out + n);
    g->o[op].n_ws = (uint16_t)n;
    bp__graph_unfinalize(g);
    return BP_OK;
}

int bp_graph_op_n_workspaces(const bp_graph *g, int32_t op) { return valid_op(g, op) ? g->o[op].n_ws : 0; }
int bp_graph_tensor_is_workspace(const bp_graph *g, int32_t t) { return valid_tensor(g, t) && g->t[t].is_workspace; }

bp_status bp_graph_mark(bp_graph *g, int32_t tensor, unsigned flags, bp_error *err)
{
    if (!valid_tensor(g, tensor)) return bp__err(err, BP_ERR_USAGE, "%s: mark: tensor id out of range", g->name);
    if (flags & ~(unsigned)(BP_TENSOR_INPUT | BP_TENSOR_WEIGHT | BP_TENSOR_OUTPUT | BP_TENSOR_CONST))
        return bp__err(err, BP_ERR_USAGE, "%s: mark: unknown flags 0x%x", g->name, flags);
    bp__graph_unfinalize(g);
    g->t[tensor].flags |= (uint8_t)flags;
    return BP_OK;
}

/* --------------------------------------------------------------- finalize */

/* Finds one cycle among ops with indeg > 0 left after Kahn and writes it. */
static bp_status report_cycle(bp_graph *g, const int32_t *indeg, bp_error *err)
{
    const bp_allocator *a = &g->alloc;
    size_t n = g->n_o;
    /* Walk backwards: from an op left over, some input's producer is also
     * left over; following producers must revisit an op (a cycle). */
    int32_t *seen = bp__alloc(a, n * sizeof *seen);
    if (!seen) return bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle", g->name);
    for (size_t i = 0; i < n; i++) seen[i] = -1;
    int32_t cur = -1;
    for (size_t i = 0; i < n; i++) if (indeg[i] > 0) { cur = (int32_t)i; break; }
    int32_t k = 0;
    while (cur >= 0 && seen[cur] < 0) {
        seen[cur] = k++;
        int32_t next = -1;
        for (int i = 0; i < g->o[cur].n_in && next < 0; i++) {
            int32_t p = g->t[bp__op_in(g, cur)[i]].producer;
            if (p >= 0 && indeg[p] > 0) next = p;
        }
        cur = next;
    }
    char buf[800];
    size_t len = 0;
    buf[0] = 0;
    if (cur >= 0) {
        /* ops with seen >= seen[cur] form the cycle, in reverse order */
        int32_t start = seen[cur], cnt = k - start;
        int32_t *cyc = bp__alloc(a, (size_t)cnt * sizeof *cyc);
        if (cyc) {
            for (size_t i = 0; i < n; i++) if (seen[i] >= start) cyc[seen[i] - start] = (int32_t)i;
            for (int32_t i = cnt - 1; i >= -1 && len < sizeof buf - 64; i--) {
                int32_t op = cyc[i >= 0 ? i : cnt - 1];
                int w = snprintf(buf + len, sizeof buf - len, "%s\"%s\"", len ? " -> " : "", bp__names_get(&g->onames, op));
                if (w < 0) break;
                len += (size_t)w;
            }
            if (len >= sizeof buf - 64) snprintf(buf + len, sizeof buf - len, " ...");
            bp__free(a, cyc, (size_t)cnt * sizeof *cyc);
        }
    }
    bp__free(a, seen, n * sizeof *seen);
    return bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle: %s", g->name, buf[0] ? buf : "(not found)");
}

/* View chains end (no cycle), found in O(n) by a walk with three states
 * (not seen, on the current walk, known to end). */
static bp_status check_view_chains(const bp_graph *g, bp_error *err)
{
    size_t nt = g->n_t;
    uint8_t *state = bp__calloc(&g->alloc, nt ? nt : 1, 1);
    if (!state) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory checking views", g->name);
    bp_status s = BP_OK;
    for (size_t t = 0; t < nt && !s; t++) {
        int32_t v = (int32_t)t;
        while (state[v] == 0 && g->t[v].view_of >= 0) { state[v] = 1; v = g->t[v].view_of; }
        if (state[v] == 1)
            s = bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": its view_of chain is a cycle", g->name,
                        bp__names_get(&g->tnames, (int32_t)t));
        for (v = (int32_t)t; state[v] == 1; v = g->t[v].view_of) state[v] = 2;
        state[t] = 2;
    }
    bp__free(&g->alloc, state, nt ? nt : 1);
    return s;
}

/* Whether tensor t is an input (out = false) or output (true) of op. */
static bool op_has(const bp_graph *g, int32_t op, int32_t t, bool out)
{
    const int32_t *v = out ? bp__op_out(g, op) : bp__op_in(g, op);
    int n = out ? g->o[op].n_out : g->o[op].n_in;
    for (int i = 0; i < n; i++) if (v[i] == t) return true;
    return false;
}

/* The bodies of a graph being finalized: each reservation is unread and not
 * a graph output; every parent tensor a body reads is an input of the op and
 * every one it writes an output, so lifetimes in the parent cover what the
 * bodies do. */
static bp_status bodies_check(const bp_graph *g, bp_error *err)
{
    for (size_t i = 0; i < g->n_bodies; i++) {
        const bp__body *b = &g->bodies[i];
        const char *opn = bp__names_get(&g->onames, b->op);
        if (g->cons_off[b->reserve + 1] != g->cons_off[b->reserve] || (g->t[b->reserve].flags & BP_TENSOR_OUTPUT))
            return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": its reservation \"%s\" is read by an op or is a graph output", g->name, opn,
                           bp__names_get(&g->tnames, b->reserve));
        for (int32_t k = 0; k < b->n_io; k++) {
            const bp_body_io *e = &b->io[k];
            if (e->parent < 0) continue;
            bool out = !bp__body_io_is_input(e->kind);
            if (!op_has(g, b->op, e->parent, out))
                return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": its body reads or writes \"%s\", which is not an %s of the op", g->name, opn,
                               bp__names_get(&g->tnames, e->parent), out ? "output" : "input");
        }
    }
    return BP_OK;
}

bp_status bp_graph_finalize(bp_graph *g, bp_error *err)
{
    if (g->finalized) return BP_OK;
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o;
    if (no == 0) return bp__err(err, BP_ERR_INVALID, "%s: the graph has no ops", g->name);
    if (nt >= INT32_MAX || no >= INT32_MAX) return bp__err(err, BP_ERR_LIMIT, "%s: too many tensors or ops", g->name);

    /* Undefined tensors and outputs. */
    for (size_t o = 0; o < no; o++) {
        for (int i = 0; i < g->o[o].n_in; i++) {
            int32_t t = bp__op_in(g, (int32_t)o)[i];
            if (g->t[t].producer < 0 && !(g->t[t].flags & (BP_TENSOR_INPUT | BP_TENSOR_WEIGHT)))
                return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": input \"%s\" is not defined (no op produces it and it is not a graph input or weight)",
                               g->name, bp__names_get(&g->onames, (int32_t)o), bp__names_get(&g->tnames, t));
        }
    }
    for (size_t t = 0; t < nt; t++) {
        const bp__tensor *x = &g->t[t];
        if ((x->flags & BP_TENSOR_OUTPUT) && x->producer < 0 && !(x->flags & (BP_TENSOR_INPUT | BP_TENSOR_WEIGHT)))
            return bp__err(err, BP_ERR_INVALID, "%s: graph output \"%s\" is not produced by any op", g->name, bp__names_get(&g->tnames, (int32_t)t));
        if (x->producer >= 0 && (x->flags & (BP_TENSOR_INPUT | BP_TENSOR_WEIGHT)))
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" is a graph %s but op \"%s\" produces it", g->name,
                           bp__names_get(&g->tnames, (int32_t)t), (x->flags & BP_TENSOR_INPUT) ? "input" : "weight",
                           bp__names_get(&g->onames, x->producer));
    }
    for (size_t o = 0; o < no; o++)   /* workspaces belong to their op alone */
        for (int i = 0; i < g->o[o].n_in; i++) {
            int32_t t = bp__op_in(g, (int32_t)o)[i];
            if (g->t[t].is_workspace)
                return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\" reads \"%s\", a workspace of op \"%s\"", g->name,
                               bp__names_get(&g->onames, (int32_t)o), bp__names_get(&g->tnames, t),
                               bp__names_get(&g->onames, g->t[t].producer));
        }
    for (size_t i = 0; i < g->n_inpl; i++)
        if (g->t[g->inpl[i].out].is_workspace)
            return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": workspace \"%s\" cannot be written in place", g->name,
                           bp__names_get(&g->onames, g->inpl[i].op), bp__names_get(&g->tnames, g->inpl[i].out));
    for (size_t t = 0; t < nt; t++)
        if (g->t[t].is_workspace && (g->t[t].flags || g->t[t].view_of >= 0))
            return bp__err(err, BP_ERR_INVALID, "%s: workspace \"%s\" is marked a graph input, output or weight, or a view",
                           g->name, bp__names_get(&g->tnames, (int32_t)t));
    bp_status vs = check_view_chains(g, err);
    if (vs) return vs;

    /* Op type classes. */
    g->type_class_n = g->types.n ? g->types.n : 1;
    g->type_class = bp__calloc(a, g->type_class_n, 1);
    if (!g->type_class) { g->type_class_n = 0; return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); }
    for (size_t k = 0; k < g->types.n; k++) {
        const char *ty = bp__names_get(&g->types, (int32_t)k);
        g->type_class[k] = (uint8_t)((bp__is_view_type(ty) ? BP__TYPE_VIEW : 0) | (bp__is_elementwise_type(ty) ? BP__TYPE_ELEMENTWISE : 0) |
                                     (bp__is_broadcast_view_type(ty) ? BP__TYPE_BROADCAST : 0));
    }

    /* Consumers (CSR). */
    size_t ncons = 0;
    for (size_t o = 0; o < no; o++) ncons += g->o[o].n_in;
    g->cons_off = bp__calloc(a, nt + 1, sizeof *g->cons_off);
    g->cons = bp__alloc(a, (ncons ? ncons : 1) * sizeof *g->cons);
    g->cons_cap_bytes = (ncons ? ncons : 1) * sizeof *g->cons;
    int32_t *indeg = bp__calloc(a, no, sizeof *indeg);
    int32_t *queue = bp__alloc(a, no * sizeof *queue);
    if (!g->cons_off || !g->cons || !indeg || !queue) {
        bp__free(a, indeg, no * sizeof *indeg);
        bp__free(a, queue, no * sizeof *queue);
        g->finalized = true; bp__graph_unfinalize(g);
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory indexing consumers", g->name);
    }
    for (size_t o = 0; o < no; o++)
        for (int i = 0; i < g->o[o].n_in; i++) g->cons_off[bp__op_in(g, (int32_t)o)[i] + 1]++;
    for (size_t t = 0; t < nt; t++) g->cons_off[t + 1] += g->cons_off[t];
    for (size_t o = 0; o < no; o++)
        for (int i = 0; i < g->o[o].n_in; i++) {
            int32_t t = bp__op_in(g, (int32_t)o)[i];
            g->cons[g->cons_off[t]++] = (int32_t)o;
        }
    for (size_t t = nt; t > 0; t--) g->cons_off[t] = g->cons_off[t - 1];
    g->cons_off[0] = 0;

    /* Kahn: indeg = number of input slots with a producer. */
    for (size_t o = 0; o < no; o++)
        for (int i = 0; i < g->o[o].n_in; i++)
            if (g->t[bp__op_in(g, (int32_t)o)[i]].producer >= 0) indeg[o]++;
    size_t qh = 0, qt = 0;
    for (size_t o = 0; o < no; o++) if (!indeg[o]) queue[qt++] = (int32_t)o;
    while (qh < qt) {
        int32_t o = queue[qh++];
        for (int i = 0; i < g->o[o].n_out; i++) {
            int32_t t = bp__op_out(g, o)[i];
            for (int32_t c = g->cons_off[t]; c < g->cons_off[t + 1]; c++)
                if (--indeg[g->cons[c]] == 0) queue[qt++] = g->cons[c];
        }
    }
    bp_status s = BP_OK;
    g->finalized = true;
    if (qt < no) s = report_cycle(g, indeg, err);
    if (!s) s = bodies_check(g, err);
    if (!s) s = bp__check_view_bytes(g, err);
    if (s) bp__graph_unfinalize(g);
    bp__free(a, indeg, no * sizeof *indeg);
    bp__free(a, queue, no * sizeof *queue);
    return s;
}

/* ---------------------------------------------------------------- queries */

const char *bp_graph_name(const bp_graph *g) { return g->name; }
int32_t bp_graph_n_tensors(const bp_graph *g) { return (int32_t)g->n_t; }
int32_t bp_graph_n_ops(const bp_graph *g) { return (int32_t)g->n_o; }
int32_t bp_graph_find_tensor(const bp_graph *g, const char *name) { return bp__names_find(&g->tnames, name, strlen(name)); }
int32_t bp_graph_find_op(const bp_graph *g, const char *name) { return bp__names_find(&g->onames, name, strlen(name)); }
const char *bp_graph_tensor_name(const bp_graph *g, int32_t t) { return valid_tensor(g, t) ? bp__names_get(&g->tnames, t) : NULL; }
uint64_t bp_graph_tensor_bytes(const bp_graph *g, int32_t t) { return valid_tensor(g, t) ? g->t[t].bytes : 0; }
unsigned bp_graph_tensor_flags(const bp_graph *g, int32_t t) { return valid_tensor(g, t) ? g->t[t].flags : 0; }
int bp_graph_tensor_is_dynamic(const bp_graph *g, int32_t t) { return valid_tensor(g, t) ? g->t[t].dynamic : 0; }
bp_dtype bp_graph_tensor_dtype(const bp_graph *g, int32_t t) { return valid_tensor(g, t) ? (bp_dtype)g->t[t].dtype : BP_DT_UNKNOWN; }
int bp_graph_tensor_rank(const bp_graph *g, int32_t t) { return valid_tensor(g, t) && g->t[t].has_shape ? g->t[t].rank : -1; }
int32_t bp_graph_tensor_view_of(const bp_graph *g, int32_t t) { return valid_tensor(g, t) ? g->t[t].view_of : -1; }
int32_t bp_graph_tensor_producer(const bp_graph *g, int32_t t) { return valid_tensor(g, t) ? g->t[t].producer : -1; }
const char *bp_graph_op_name(const bp_graph *g, int32_t op) { return valid_op(g, op) ? bp__names_get(&g->onames, op) : NULL; }
const char *bp_graph_op_type(const bp_graph *g, int32_t op) { return valid_op(g, op) ? bp__names_get(&g->types, g->o[op].type) : NULL; }
double bp_graph_op_cost(const bp_graph *g, int32_t op) { return valid_op(g, op) ? g->o[op].cost : 0; }
int bp_graph_op_n_inputs(const bp_graph *g, int32_t op) { return valid_op(g, op) ? g->o[op].n_in : 0; }
int bp_graph_op_n_outputs(const bp_graph *g, int32_t op) { return valid_op(g, op) ? g->o[op].n_out : 0; }
int32_t bp_graph_op_input(const bp_graph *g, int32_t op, int i) { return valid_op(g, op) && i >= 0 && i < g->o[op].n_in ? bp__op_in(g, op)[i] : -1; }
int32_t bp_graph_op_output(const bp_graph *g, int32_t op, int i) { return valid_op(g, op) && i >= 0 && i < g->o[op].n_out ? bp__op_out(g, op)[i] : -1; }

int bp_graph_tensor_dims(const bp_graph *g, int32_t t, int64_t *dims, int max_rank)
{
    if (!valid_tensor(g, t) || !g->t[t].has_shape) return -1;
    const bp__tensor *x = &g->t[t];
    for (int i = 0; i < x->rank && i < max_rank; i++) {
        int64_t d = g->dims[x->dims_off + i];
        if (bp__dim_is_sym(d)) {
            int32_t k = bp__dim_sym(d);
            d = g->sym_val[k] >= 0 ? g->sym_val[k] : BP_DIM_SYMBOLIC;
        }
        dims[i] = d;
    }
    return x->rank;
}

const char *bp_graph_tensor_dim_symbol(const bp_graph *g, int32_t t, int i)
{
    if (!valid_tensor(g, t) || !g->t[t].has_shape || i < 0 || i >= g->t[t].rank) return NULL;
    int64_t d = g->dims[g->t[t].dims_off + i];
    return bp__dim_is_sym(d) ? bp__names_get(&g->syms, bp__dim_sym(d)) : NULL;
}

int32_t bp_graph_tensor_consumers(const bp_graph *g, int32_t t, const int32_t **ops)
{
    if (!g->finalized || !valid_tensor(g, t)) { if (ops) *ops = NULL; return 0; }
    if (ops) *ops = g->cons + g->cons_off[t];
    return g->cons_off[t + 1] - g->cons_off[t];
}
