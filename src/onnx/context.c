/*
 * context.c — the ONNX context (bp__ox, onnx_internal.h) that the importer
 * fills and the shape inference reads and writes: the tensor table (one name
 * table for initializers, inputs and node outputs; type and dims per tensor,
 * the dims of all tensors in one growing array), the symbols (fresh ones made
 * unique by a counter, named ones with their --dim bound values), the small
 * values that tensors carry for folding, the warnings stream, the
 * ONNX <-> bufplan dtype mapping and the protobuf-c allocator.  Every
 * allocation goes through the caller's bp_allocator; sizes are kept so that
 * each free names its size.
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <stdarg.h>
#include <string.h>

/* protobuf-c frees without a size; keep it in a 16-byte header.  ud is the
 * importer's context: a failure is noted, so that an unpack that returns
 * NULL is reported as out of memory rather than as invalid data. */
static void *ox_pc_alloc(void *ud, size_t n)
{
    bp__ox *c = ud;
    if (n > SIZE_MAX - 16) return NULL;
    unsigned char *p = bp__alloc(c->a, n + 16);
    if (!p) { c->pa_oom = 1; return NULL; }
    memcpy(p, &(size_t){n + 16}, sizeof(size_t));
    return p + 16;
}

static void ox_pc_free(void *ud, void *q)
{
    if (!q) return;
    unsigned char *p = (unsigned char *)q - 16;
    size_t n;
    memcpy(&n, p, sizeof n);
    bp__free(((bp__ox *)ud)->a, p, n);
}

void bp__ox_init(bp__ox *c, const bp_allocator *a, const char *file, const bp_onnx_options *opts, bp_onnx_stats *st)
{
    memset(c, 0, sizeof *c);
    c->a = a;
    c->pa.alloc = ox_pc_alloc;
    c->pa.free = ox_pc_free;
    c->pa.allocator_data = c;
    c->file = file;
    c->opts = opts;
    c->st = st;
}

void bp__ox_warn(bp__ox *c, const char *fmt, ...)
{
    if (c->st) c->st->n_warnings++;
    FILE *f = c->warn;
    if (!f) return;
    fprintf(f, "bufplan: warning: %s: ", c->file);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
}

bp_dtype bp__ox_dtype(int32_t t)
{
    switch (t) {
    case 1: return BP_DT_F32;
    case 2: return BP_DT_U8;
    case 3: return BP_DT_I8;
    case 4: return BP_DT_U16;
    case 5: return BP_DT_I16;
    case 6: return BP_DT_I32;
    case 7: return BP_DT_I64;
    case 9: return BP_DT_BOOL;
    case 10: return BP_DT_F16;
    case 11: return BP_DT_F64;
    case 12: return BP_DT_U32;
    case 13: return BP_DT_U64;
    case 14: return BP_DT_C64;
    case 15: return BP_DT_C128;
    case 16: return BP_DT_BF16;
    case 17: case 18: case 19: case 20: return BP_DT_F8;
    default: return BP_DT_UNKNOWN; /* 0 undefined, 8 string, 21/22 4-bit */
    }
}

int bp__ox_onnx_type(bp_dtype dt)
{
    static const int map[BP_DT_COUNT] = {
        [BP_DT_F32] = 1, [BP_DT_U8] = 2, [BP_DT_I8] = 3, [BP_DT_U16] = 4, [BP_DT_I16] = 5, [BP_DT_I32] = 6,
        [BP_DT_I64] = 7, [BP_DT_BOOL] = 9, [BP_DT_F16] = 10, [BP_DT_F64] = 11, [BP_DT_U32] = 12, [BP_DT_U64] = 13,
        [BP_DT_C64] = 14, [BP_DT_C128] = 15, [BP_DT_BF16] = 16, [BP_DT_F8] = 17,
    };
    return (unsigned)dt < BP_DT_COUNT ? map[dt] : 0;
}

bp_status bp__ox_oom(bp__ox *c, bp_error *err)
{
    return bp__err(err, BP_ERR_NOMEM, "%s: out of memory while importing", c->file);
}

static int32_t ox_sym_add(bp__ox *c, const char *name, size_t len, bool *fresh_name)
{
    int32_t ex, id = bp__names_add(c->a, &c->syms, name, len, &ex);
    if (id == -2) { if (fresh_name) *fresh_name = false; return ex; }
    if (id < 0) return -1;
    if (!bp__grow(c->a, (void **)&c->sym_bound, &c->cap_sym_bound, (size_t)id + 1, sizeof *c->sym_bound)) return -1;
    c->sym_bound[id] = -1;
    if (fresh_name) *fresh_name = true;
    return id;
}

bp_status bp__ox_bind_sym(bp__ox *c, const char *name, int64_t value, bp_error *err)
{
    int32_t id = ox_sym_add(c, name, strlen(name), NULL);
    if (id < 0) return bp__ox_oom(c, err);
    c->sym_bound[id] = value;
    return BP_OK;
}

bp_status bp__ox_named_dim(bp__ox *c, const char *name, int64_t *out, bp_error *err)
{
    int32_t id = ox_sym_add(c, name, strlen(name), NULL);
    size_t old = c->cap_sym_seen;
    if (id < 0 || !bp__grow(c->a, (void **)&c->sym_seen, &c->cap_sym_seen, (size_t)id + 1, 1)) return bp__ox_oom(c, err);
    if (c->cap_sym_seen > old) memset(c->sym_seen + old, 0, c->cap_sym_seen - old);
    c->sym_seen[id] = 1;
    *out = c->sym_bound[id] >= 0 ? c->sym_bound[id] : -(int64_t)id - 1;
    return BP_OK;
}

int64_t bp__ox_fresh(bp__ox *c, const char *hint, int k)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf - 8, "?%s:%d", hint ? hint : "", k);
    if (n < 0) return 0;
    size_t len = (size_t)n < sizeof buf - 8 ? (size_t)n : sizeof buf - 9;
    for (int tries = 0; tries < 1000; tries++) {
        bool is_new = false;
        int32_t id = ox_sym_add(c, buf, len, &is_new);
        if (id < 0) return 0;
        if (is_new) { c->fresh++; return -(int64_t)id - 1; }
        len += (size_t)snprintf(buf + len, 8, "'");
        if (len >= sizeof buf - 8) len = 1 + (size_t)snprintf(buf + 1, 32, "%d", c->fresh);
    }
    return 0;
}

const char *bp__ox_sym_name(const bp__ox *c, int64_t d)
{
    if (d >= 0) return "";
    if (d < -(int64_t)c->syms.n) return "?";   /* not a symbol of this import */
    return bp__names_get(&c->syms, (int32_t)(-d - 1));
}

bp_status bp__ox_set_shape(bp__ox *c, int32_t t, bp_dtype dt, int rank, const int64_t *dims, bp_error *err)
{
    bp__ox_tensor *x = &c->t[t];
    if (rank > BP__OX_MAX_RANK)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": rank %d is over the limit of %d", c->file,
                       bp__names_get(&c->tn, t), rank, BP__OX_MAX_RANK);
    /* A dimension is a size (>= 0) or the code of a symbol this import made
     * (-1 .. -n_syms).  Anything else is a negative or wrapped value that an
     * input's values produced (OneHot depth -1, a negative split): an error
     * naming the tensor, never a symbol id read out of bounds. */
    for (int i = 0; i < rank; i++)
        if (dims[i] < -(int64_t)c->syms.n)
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\": dimension %d would be %lld, which is negative (check the values "
                           "that define its shape)", c->file, bp__names_get(&c->tn, t), i, (long long)dims[i]);
    x->dtype = (uint8_t)dt;
    x->inferred = 1;
    if (rank < 0) { x->rank = -1; return BP_OK; }
    int64_t tmp[BP__OX_MAX_RANK];   /* dims may point into c->dims, which may move */
    if (rank) memcpy(tmp, dims, (size_t)rank * sizeof *dims);
    dims = tmp;
    if (!bp__grow(c->a, (void **)&c->dims, &c->cap_dims, c->n_dims + (size_t)rank, sizeof *c->dims)) return bp__ox_oom(c, err);
    x = &c->t[t];
    x->rank = rank;
    x->dims_off = (uint32_t)c->n_dims;
    if (rank) memcpy(c->dims + c->n_dims, dims, (size_t)rank * sizeof *dims);
    c->n_dims += (size_t)rank;
    return BP_OK;
}

static bp_status ox_new_val(bp__ox *c, int32_t t, size_t n, bool is_float, bool with_sym, bp__ox_val **out, bp_error *err)
{
    *out = NULL;
    if (n > BP__OX_VALUE_LIMIT) return BP_OK;
    if (!bp__grow(c->a, (void **)&c->vals, &c->cap_vals, c->n_vals + 1, sizeof *c->vals)) return bp__ox_oom(c, err);
    bp__ox_val *v = &c->vals[c->n_vals];
    memset(v, 0, sizeof *v);
    v->n = (uint32_t)n;
    v->is_float = is_float;
    size_t m = n ? n : 1;
    if (is_float) v->f = bp__alloc(c->a, m * sizeof *v->f);
    else v->i = bp__alloc(c->a, m * sizeof *v->i);
    if (with_sym) v->sym = bp__alloc(c->a, m * sizeof *v->sym);
    if ((is_float && !v->f) || (!is_float && !v->i) || (with_sym && !v->sym)) {
        bp__free(c->a, v->f, m * sizeof *v->f);
        bp__free(c->a, v->i, m * sizeof *v->i);
        bp__free(c->a, v->sym, m * sizeof *v->sym);
        return bp__ox_oom(c, err);
    }
    c->t[t].val = (int32_t)c->n_vals++;
    *out = v;
    return BP_OK;
}

bp_status bp__ox_set_ival(bp__ox *c, int32_t t, size_t n, const int64_t *v, const int32_t *sym, bp_error *err)
{
    bool any_sym = false;
    if (sym) for (size_t i = 0; i < n; i++) any_sym |= sym[i] >= 0;
    bp__ox_val *x;
    bp_status s = ox_new_val(c, t, n, false, any_sym, &x, err);
    if (s || !x) return s;
    if (n) memcpy(x->i, v, n * sizeof *v);
    if (any_sym) memcpy(x->sym, sym, n * sizeof *sym);
    return BP_OK;
}

bp_status bp__ox_set_fval(bp__ox *c, int32_t t, size_t n, const double *v, bp_error *err)
{
    bp__ox_val *x;
    bp_status s = ox_new_val(c, t, n, true, false, &x, err);
    if (s || !x) return s;
    if (n) memcpy(x->f, v, n * sizeof *v);
    return BP_OK;
}

static void ox_free_vals(bp__ox *c)
{
    for (size_t i = 0; i < c->n_vals; i++) {
        bp__ox_val *v = &c->vals[i];
        size_t m = v->n ? v->n : 1;
        bp__free(c->a, v->f, m * sizeof *v->f);
        bp__free(c->a, v->i, m * sizeof *v->i);
        bp__free(c->a, v->sym, m * sizeof *v->sym);
    }
    bp__free(c->a, c->vals, c->cap_vals * sizeof *c->vals);
}

/* Registers a tensor name; -2 if it exists (then *existing). */
bp_status bp__ox_add_tensor(bp__ox *c, const char *name, size_t len, int role, int32_t *id_out, int32_t *existing,
                            bp_error *err)
{
    int32_t ex = -1, id = bp__names_add(c->a, &c->tn, name, len, &ex);
    if (existing) *existing = ex;
    if (id == -2) { *id_out = -2; return BP_OK; }
    if (id < 0 || !bp__grow(c->a, (void **)&c->t, &c->cap_t, c->n_t + 1, sizeof *c->t)) return bp__ox_oom(c, err);
    bp__ox_tensor *x = &c->t[c->n_t++];
    memset(x, 0, sizeof *x);
    x->rank = -1;
    x->role = (uint8_t)role;
    x->producer = -1;
    x->val = -1;
    x->vi = -1;
    x->gid = -1;
    *id_out = id;
    return BP_OK;
}

int32_t bp__ox_find(const bp__ox *c, const char *name)
{
    return bp__names_find(&c->tn, name, strlen(name));
}

/* Shape from a TypeProto (tensor types); other types are "not sized". */
bp_status bp__ox_shape_from_type(bp__ox *c, int32_t t, const Onnx__TypeProto *tp, bp_error *err)
{
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        if (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET) c->t[t].not_sized = 1;
        return BP_OK;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    bp_dtype dt = tt->has_elem_type ? bp__ox_dtype(tt->elem_type) : BP_DT_UNKNOWN;
    if (tt->has_elem_type && dt == BP_DT_UNKNOWN && tt->elem_type != 0) c->t[t].not_sized = 1;
    if (!tt->shape) return bp__ox_set_shape(c, t, dt, -1, NULL, err);
    if (tt->shape->n_dim > BP__OX_MAX_RANK)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": rank %zu is over the limit of %d", c->file,
                       bp__names_get(&c->tn, t), tt->shape->n_dim, BP__OX_MAX_RANK);
    int64_t d[BP__OX_MAX_RANK];
    int r = (int)tt->shape->n_dim;
    for (int i = 0; i < r; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value >= 0) {
            d[i] = dm->dim_value;
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param && *dm->dim_param) {
            bp_status s = bp__ox_named_dim(c, dm->dim_param, &d[i], err);
            if (s) return s;
        } else {
            d[i] = bp__ox_fresh(c, bp__names_get(&c->tn, t), i);
            if (!d[i]) return bp__ox_oom(c, err);
        }
    }
    return bp__ox_set_shape(c, t, dt, r, d, err);
}

bp_status bp__ox_syms_copy(bp__ox *dst, const bp__ox *src, bp_error *err)
{
    for (size_t i = 0; i < src->syms.n; i++) {
        const char *nm = bp__names_get(&src->syms, (int32_t)i);
        int32_t id = ox_sym_add(dst, nm, strlen(nm), NULL);
        if (id < 0) return bp__ox_oom(dst, err);
        dst->sym_bound[id] = src->sym_bound[i];
        if (i < src->cap_sym_seen && src->sym_seen[i]) {
            int64_t code;
            bp_status s = bp__ox_named_dim(dst, nm, &code, err);
            if (s) return s;
        }
    }
    return BP_OK;
}

int64_t bp__ox_sym_back(bp__ox *dst, const bp__ox *src, size_t n_shared, int64_t d)
{
    if (d >= 0 || (size_t)(-d - 1) < n_shared) return d;
    const char *nm = bp__ox_sym_name(src, d);
    if (nm[0] == '?') return bp__ox_fresh(dst, nm + 1, 0);   /* an unknown of the body: a new one here */
    int32_t id = ox_sym_add(dst, nm, strlen(nm), NULL);     /* a named symbol: the same name */
    if (id < 0) return 0;
    return dst->sym_bound[id] >= 0 ? dst->sym_bound[id] : -(int64_t)id - 1;
}

void bp__ox_bodies_free(bp__ox *c, bp__ox_node *nd)
{
    for (int i = 0; i < nd->n_bodies; i++) {
        bp_graph_free(nd->bodies[i].g);
        bp__free(c->a, nd->bodies[i].io, (size_t)nd->bodies[i].cap_io * sizeof *nd->bodies[i].io);
    }
    bp__free(c->a, nd->bodies, (size_t)nd->n_bodies * sizeof *nd->bodies);
    nd->bodies = NULL;
    nd->n_bodies = 0;
}

/* The nodes' protobufs (unless borrowed from a parent's), value infos, name
 * tables, shapes, symbols, io lists, values, bodies. */
void bp__ox_free(bp__ox *c)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].np && !c->borrowed) protobuf_c_message_free_unpacked(&c->nodes[i].np->base, &c->pa);
        if (c->nodes[i].name) bp__free(c->a, c->nodes[i].name, strlen(c->nodes[i].name) + 1);
        bp__ox_bodies_free(c, &c->nodes[i]);
    }
    bp__free(c->a, c->nodes, c->n_nodes * sizeof *c->nodes);
    for (size_t i = 0; i < c->n_vinfo && !c->borrowed; i++) protobuf_c_message_free_unpacked(&c->vinfo[i]->base, &c->pa);
    if (c->file_buf) bp__free(c->a, c->file_buf, strlen(c->file_buf) + 1);
    bp__free(c->a, c->vinfo, c->cap_vinfo * sizeof *c->vinfo);
    bp__names_free(c->a, &c->tn);
    bp__names_free(c->a, &c->syms);
    bp__free(c->a, c->t, c->cap_t * sizeof *c->t);
    bp__free(c->a, c->dims, c->cap_dims * sizeof *c->dims);
    bp__free(c->a, c->sym_bound, c->cap_sym_bound * sizeof *c->sym_bound);
    bp__free(c->a, c->sym_seen, c->cap_sym_seen);
    bp__free(c->a, c->io, c->cap_io * sizeof *c->io);
    ox_free_vals(c);
}

#endif /* BP_HAVE_ONNX */
