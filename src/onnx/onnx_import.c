/*
 * onnx_import.c — reads an .onnx model into a bp_graph without copying its
 * weights.
 *
 * The file is mapped read-only.  ModelProto and GraphProto are walked here
 * with a small protobuf wire reader: it records where each node, value_info
 * and initializer lies and never touches initializer data, so a model of any
 * size costs only the pages that hold its headers.  Each node, value_info and
 * small tensor is then unpacked with protobuf-c (schema: src/onnx/onnx.proto).
 *
 * Steps: walk the model -> register initializers, inputs, node outputs (one
 * name table) -> resolve node inputs and the outer-scope names read by
 * subgraphs -> order the nodes topologically -> infer shapes and fold
 * constant shape arithmetic (shape_infer.c), checking value_info -> build the
 * graph through the public builder API and finalize it.
 */
#define _POSIX_C_SOURCE 200809L
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void bp_onnx_options_init(bp_onnx_options *o)
{
    memset(o, 0, sizeof *o);
}

#ifndef BP_HAVE_ONNX

int bp_onnx_available(void) { return 0; }

bp_status bp_onnx_read_ex(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                          bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    (void)opts; (void)alloc; (void)stats;
    if (out) *out = NULL;
    return bp__err(err, BP_ERR_UNSUPPORTED, "%s: bufplan was built without ONNX support (protobuf-c)", path ? path : "model");
}

bp_status bp_onnx_read(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                       bp_graph **out, bp_error *err)
{
    return bp_onnx_read_ex(path, opts, alloc, out, NULL, err);
}

bp_status bp_onnx_parse(const void *data, size_t len, const char *filename, const bp_onnx_options *opts,
                        const bp_allocator *alloc, bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    (void)data; (void)len;
    return bp_onnx_read_ex(filename, opts, alloc, out, stats, err);
}

#else

#include <stdarg.h>

int bp_onnx_available(void) { return 1; }

/* ------------------------------------------------- protobuf-c allocator */

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

/* ------------------------------------------------------------ wire walker */

typedef struct ox_rd {
    const uint8_t *p, *end, *base;
} ox_rd;

typedef struct ox_slice {
    const uint8_t *p;
    size_t n;
} ox_slice;

typedef struct ox_slices {
    ox_slice *s;
    size_t n, cap;
} ox_slices;

/* Returns 0 on success, -1 when truncated, -2 on a varint over 10 bytes. */
static int ox_varint(ox_rd *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int sh = 0; sh < 70; sh += 7) {
        if (r->p >= r->end) return -1;
        uint8_t b = *r->p++;
        if (sh == 63 && b > 1) return -2;
        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) { *v = x; return 0; }
    }
    return -2;
}

typedef struct ox_field {
    uint32_t num;
    int wt;
    uint64_t v;        /* varint / fixed value */
    ox_slice s;        /* length-delimited payload */
} ox_field;

/* Reads one field; returns 1 on success, 0 at the end, or -1 with a message. */
static int ox_next(ox_rd *r, ox_field *f, const char *file, const char *what, bp_error *err)
{
    if (r->p >= r->end) return 0;
    size_t at = (size_t)(r->p - r->base);
    uint64_t tag;
    int e = ox_varint(r, &tag);
    if (e) goto bad;
    f->num = (uint32_t)(tag >> 3);
    f->wt = (int)(tag & 7);
    if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
        bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in %s at byte %zu: field number %llu", file, what, at,
                (unsigned long long)(tag >> 3));
        return -1;
    }
    switch (f->wt) {
    case 0:
        e = ox_varint(r, &f->v);
        if (e) goto bad;
        return 1;
    case 1:
    case 5: {
        size_t k = f->wt == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < k) { e = -1; goto bad; }
        f->v = 0;
        for (size_t i = 0; i < k; i++) f->v |= (uint64_t)r->p[i] << (8 * i);
        r->p += k;
        return 1;
    }
    case 2: {
        uint64_t len;
        e = ox_varint(r, &len);
        if (e) goto bad;
        if (len > (uint64_t)(r->end - r->p)) { e = -1; goto bad; }
        f->s.p = r->p;
        f->s.n = (size_t)len;
        r->p += len;
        return 1;
    }
    default:
        bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in %s at byte %zu: wire type %d (field %u) is not used by ONNX",
                file, what, at, f->wt, f->num);
        return -1;
    }
bad:
    if (e == -1)
        bp__err(err, BP_ERR_INVALID, "%s: truncated: %s field at byte %zu runs past the end of the data (%zu bytes)", file, what,
                at, (size_t)(r->end - r->base));
    else
        bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in %s at byte %zu: malformed varint", file, what, at);
    return -1;
}

static bool ox_slices_push(const bp_allocator *a, ox_slices *v, ox_slice s)
{
    if (!bp__grow(a, (void **)&v->s, &v->cap, v->n + 1, sizeof *v->s)) return false;
    v->s[v->n++] = s;
    return true;
}

static void ox_slices_free(const bp_allocator *a, ox_slices *v)
{
    bp__free(a, v->s, v->cap * sizeof *v->s);
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------- helpers */

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

static bp_status ox_oom(bp__ox *c, bp_error *err)
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

bp_status bp__ox_named_dim(bp__ox *c, const char *name, int64_t *out, bp_error *err)
{
    int32_t id = ox_sym_add(c, name, strlen(name), NULL);
    size_t old = c->cap_sym_seen;
    if (id < 0 || !bp__grow(c->a, (void **)&c->sym_seen, &c->cap_sym_seen, (size_t)id + 1, 1)) return ox_oom(c, err);
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
    return d < 0 ? bp__names_get(&c->syms, (int32_t)(-d - 1)) : "";
}

bp_status bp__ox_set_shape(bp__ox *c, int32_t t, bp_dtype dt, int rank, const int64_t *dims, bp_error *err)
{
    bp__ox_tensor *x = &c->t[t];
    if (rank > BP__OX_MAX_RANK)
        return bp__err(err, BP_ERR_LIMIT, "%s: tensor \"%s\": rank %d is over the limit of %d", c->file,
                       bp__names_get(&c->tn, t), rank, BP__OX_MAX_RANK);
    x->dtype = (uint8_t)dt;
    x->inferred = 1;
    if (rank < 0) { x->rank = -1; return BP_OK; }
    int64_t tmp[BP__OX_MAX_RANK];   /* dims may point into c->dims, which may move */
    if (rank) memcpy(tmp, dims, (size_t)rank * sizeof *dims);
    dims = tmp;
    if (!bp__grow(c->a, (void **)&c->dims, &c->cap_dims, c->n_dims + (size_t)rank, sizeof *c->dims)) return ox_oom(c, err);
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
    if (!bp__grow(c->a, (void **)&c->vals, &c->cap_vals, c->n_vals + 1, sizeof *c->vals)) return ox_oom(c, err);
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
        return ox_oom(c, err);
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
static bp_status ox_add_tensor(bp__ox *c, const char *name, size_t len, int role, int32_t *id_out, int32_t *existing,
                               bp_error *err)
{
    int32_t ex = -1, id = bp__names_add(c->a, &c->tn, name, len, &ex);
    if (existing) *existing = ex;
    if (id == -2) { *id_out = -2; return BP_OK; }
    if (id < 0 || !bp__grow(c->a, (void **)&c->t, &c->cap_t, c->n_t + 1, sizeof *c->t)) return ox_oom(c, err);
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

static int32_t ox_find(const bp__ox *c, const char *name)
{
    return bp__names_find(&c->tn, name, strlen(name));
}

/* Shape from a TypeProto (tensor types); other types are "not sized". */
static bp_status ox_shape_from_type(bp__ox *c, int32_t t, const Onnx__TypeProto *tp, bp_error *err)
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
            if (!d[i]) return ox_oom(c, err);
        }
    }
    return bp__ox_set_shape(c, t, dt, r, d, err);
}

/* ----------------------------------------------------------- the import */

typedef struct ox_model {
    int64_t ir_version;
    ox_slice producer, producer_version;
    ox_slices graphs, opsets;
    ox_slices nodes, inits, sparse, inputs, outputs, vinfos;
} ox_model;

static void ox_model_free(const bp_allocator *a, ox_model *m)
{
    ox_slices_free(a, &m->graphs); ox_slices_free(a, &m->opsets);
    ox_slices_free(a, &m->nodes); ox_slices_free(a, &m->inits); ox_slices_free(a, &m->sparse);
    ox_slices_free(a, &m->inputs); ox_slices_free(a, &m->outputs); ox_slices_free(a, &m->vinfos);
}

static const char *ox_sniff(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n && i < 64 && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t')) i++;
    if (i < n && (p[i] == '{' || p[i] == '[')) return "it looks like JSON";
    if (n >= 4 && !memcmp(p, "\x89PNG", 4)) return "it is a PNG image";
    if (n >= 3 && !memcmp(p, "\xff\xd8\xff", 3)) return "it is a JPEG image";
    if (n >= 4 && !memcmp(p, "GIF8", 4)) return "it is a GIF image";
    if (n >= 4 && !memcmp(p, "PK\x03\x04", 4)) return "it is a zip archive (a PyTorch .pt file?)";
    if (n >= 2 && !memcmp(p, "\x1f\x8b", 2)) return "it is gzip-compressed";
    if (n >= 4 && !memcmp(p, "\x7f" "ELF", 4)) return "it is an ELF executable";
    if (n >= 4 && !memcmp(p, "%PDF", 4)) return "it is a PDF document";
    if (n >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5) return "it is a Python pickle";
    if (i < n && p[i] == '<') return "it looks like XML or HTML";
    if (n >= 6 && !memcmp(p, "\x93NUMPY", 6)) return "it is a NumPy array";
    return NULL;
}

static bp_status ox_walk_model(bp__ox *c, const uint8_t *data, size_t len, ox_model *m, bp_error *err)
{
    if (len == 0) return bp__err(err, BP_ERR_INVALID, "%s: not an ONNX model: the file is empty", c->file);
    const char *what = ox_sniff(data, len);
    if (what) return bp__err(err, BP_ERR_INVALID, "%s: not an ONNX model: %s", c->file, what);
    ox_rd r = {data, data + len, data};
    ox_field f = {0};
    int k;
    while ((k = ox_next(&r, &f, c->file, "the model", err)) == 1) {
        bool ok = true;
        switch (f.num) {
        case 1: if (f.wt != 0) goto wt; m->ir_version = (int64_t)f.v; break;
        case 2: if (f.wt != 2) goto wt; m->producer = f.s; break;
        case 3: if (f.wt != 2) goto wt; m->producer_version = f.s; break;
        case 7: if (f.wt != 2) goto wt; ok = ox_slices_push(c->a, &m->graphs, f.s); break;
        case 8: if (f.wt != 2) goto wt; ok = ox_slices_push(c->a, &m->opsets, f.s); break;
        default: break;
        }
        if (!ok) return ox_oom(c, err);
        continue;
    wt:
        return bp__err(err, BP_ERR_INVALID, "%s: not an ONNX model: field %u of the model has wire type %d", c->file, f.num, f.wt);
    }
    if (k < 0) return err ? err->status : BP_ERR_INVALID;
    if (!m->graphs.n) return bp__err(err, BP_ERR_INVALID, "%s: not an ONNX model: it has no graph", c->file);
    for (size_t g = 0; g < m->graphs.n; g++) {
        ox_rd gr = {m->graphs.s[g].p, m->graphs.s[g].p + m->graphs.s[g].n, data};
        while ((k = ox_next(&gr, &f, c->file, "the graph", err)) == 1) {
            ox_slices *dst = NULL;
            switch (f.num) {
            case 1: dst = &m->nodes; break;
            case 5: dst = &m->inits; break;
            case 11: dst = &m->inputs; break;
            case 12: dst = &m->outputs; break;
            case 13: dst = &m->vinfos; break;
            case 15: dst = &m->sparse; break;
            default: break;
            }
            if (!dst) continue;
            if (f.wt != 2) return bp__err(err, BP_ERR_INVALID, "%s: not an ONNX model: field %u of the graph has wire type %d", c->file, f.num, f.wt);
            if (!ox_slices_push(c->a, dst, f.s)) return ox_oom(c, err);
        }
        if (k < 0) return err ? err->status : BP_ERR_INVALID;
    }
    return BP_OK;
}

/* Initializer header: name, dims, data type, without touching the data. */
typedef struct ox_tinfo {
    ox_slice name;
    int64_t dims[BP__OX_MAX_RANK];
    int rank;
    int32_t data_type;
} ox_tinfo;

static bp_status ox_walk_tensor(bp__ox *c, ox_slice s, ox_tinfo *ti, const uint8_t *base, bp_error *err)
{
    memset(ti, 0, sizeof *ti);
    ox_rd r = {s.p, s.p + s.n, base};
    ox_field f = {0};
    int k;
    while ((k = ox_next(&r, &f, c->file, "an initializer", err)) == 1) {
        if (f.num == 1) {
            ox_rd pr = {0};
            if (f.wt == 0) {
                if (ti->rank >= BP__OX_MAX_RANK) goto rank;
                ti->dims[ti->rank++] = (int64_t)f.v;
                continue;
            }
            if (f.wt != 2) goto bad;
            pr = (ox_rd){f.s.p, f.s.p + f.s.n, base};
            while (pr.p < pr.end) {
                uint64_t v;
                if (ox_varint(&pr, &v)) goto bad;
                if (ti->rank >= BP__OX_MAX_RANK) goto rank;
                ti->dims[ti->rank++] = (int64_t)v;
            }
        } else if (f.num == 2) {
            if (f.wt != 0) goto bad;
            ti->data_type = (int32_t)f.v;
        } else if (f.num == 8) {
            if (f.wt != 2) goto bad;
            ti->name = f.s;
        }
    }
    if (k < 0) return err ? err->status : BP_ERR_INVALID;
    return BP_OK;
bad:
    return bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in an initializer at byte %zu", c->file, (size_t)(r.p - base));
rank:
    return bp__err(err, BP_ERR_LIMIT, "%s: an initializer has more than %d dimensions", c->file, BP__OX_MAX_RANK);
}

#define OX_SMALL_TENSOR 65536   /* initializers up to this many bytes are unpacked for their values */

/* Nesting limit (limits.c) before protobuf-c's recursive unpacker sees s. */
static bp_status ox_check_depth(bp__ox *c, const ProtobufCMessageDescriptor *d, ox_slice s, const char *what, bp_error *err)
{
    return bp__pb_check(d, s.p, s.n, bp__limits(c->opts->limits)->max_proto_depth, c->file, what, err);
}

static bp_status ox_add_initializer(bp__ox *c, ox_slice s, const uint8_t *base, bool sparse, bp_error *err)
{
    ox_tinfo ti;
    ox_slice ts = s;
    int64_t sdims[BP__OX_MAX_RANK];
    int srank = -1;
    if (sparse) {
        /* SparseTensorProto: values (1) is a TensorProto, dims (3) the dense shape */
        ox_rd r = {s.p, s.p + s.n, base};
        ox_field f = {0};
        int k;
        ts.p = NULL; ts.n = 0;
        srank = 0;
        while ((k = ox_next(&r, &f, c->file, "a sparse initializer", err)) == 1) {
            if (f.num == 1 && f.wt == 2) ts = f.s;
            else if (f.num == 3 && f.wt == 0) { if (srank < BP__OX_MAX_RANK) sdims[srank++] = (int64_t)f.v; }
            else if (f.num == 3 && f.wt == 2) {
                ox_rd pr = {f.s.p, f.s.p + f.s.n, base};
                uint64_t v;
                while (pr.p < pr.end && !ox_varint(&pr, &v)) if (srank < BP__OX_MAX_RANK) sdims[srank++] = (int64_t)v;
            }
        }
        if (k < 0) return err ? err->status : BP_ERR_INVALID;
    }
    bp_status st = ox_walk_tensor(c, ts, &ti, base, err);
    if (st) return st;
    if (!ti.name.n) return bp__err(err, BP_ERR_INVALID, "%s: an initializer has no name", c->file);
    int32_t id, ex;
    st = ox_add_tensor(c, (const char *)ti.name.p, ti.name.n, BP__OX_INIT, &id, &ex, err);
    if (st) return st;
    if (id == -2)
        return bp__err(err, BP_ERR_INVALID, "%s: initializer \"%s\" is defined twice", c->file, bp__names_get(&c->tn, ex));
    c->t[id].is_const = 1;
    if (sparse) {
        memcpy(ti.dims, sdims, (size_t)srank * sizeof *sdims);
        ti.rank = srank;
    }
    for (int i = 0; i < ti.rank; i++)
        if (ti.dims[i] < 0)
            return bp__err(err, BP_ERR_INVALID, "%s: initializer \"%s\": dimension %d is negative", c->file, bp__names_get(&c->tn, id), i);
    bp_dtype dt = bp__ox_dtype(ti.data_type);
    if (dt == BP_DT_UNKNOWN) c->t[id].not_sized = 1;
    if (!sparse && s.n <= OX_SMALL_TENSOR && dt != BP_DT_UNKNOWN) {
        if ((st = ox_check_depth(c, &onnx__tensor_proto__descriptor, s, "initializer", err))) return st;
        Onnx__TensorProto *tp = (Onnx__TensorProto *)protobuf_c_message_unpack(&onnx__tensor_proto__descriptor, &c->pa, s.n, s.p);
        if (!tp && c->pa_oom) return ox_oom(c, err);
        if (!tp)
            return bp__err(err, BP_ERR_INVALID, "%s: initializer \"%s\": invalid protobuf", c->file, bp__names_get(&c->tn, id));
        st = bp__ox_tensor_from_proto(c, id, tp, err);
        protobuf_c_message_free_unpacked(&tp->base, &c->pa);
        return st;
    }
    return bp__ox_set_shape(c, id, dt, ti.rank, ti.dims, err);
}

static bp_status ox_unpack_vi(bp__ox *c, ox_slice s, const char *what, Onnx__ValueInfoProto **out, bp_error *err)
{
    *out = NULL;
    bp_status ds = ox_check_depth(c, &onnx__value_info_proto__descriptor, s, what, err);
    if (ds) return ds;
    *out = (Onnx__ValueInfoProto *)protobuf_c_message_unpack(&onnx__value_info_proto__descriptor, &c->pa, s.n, s.p);
    if (!*out && c->pa_oom) return ox_oom(c, err);
    if (!*out) return bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in a graph %s", c->file, what);
    if (!(*out)->name || !*(*out)->name) return bp__err(err, BP_ERR_INVALID, "%s: a graph %s has no name", c->file, what);
    return BP_OK;
}

static bp_status ox_keep_vi(bp__ox *c, Onnx__ValueInfoProto *vi, bp_error *err)
{
    if (!bp__grow(c->a, (void **)&c->vinfo, &c->cap_vinfo, c->n_vinfo + 1, sizeof *c->vinfo)) {
        protobuf_c_message_free_unpacked(&vi->base, &c->pa);
        return ox_oom(c, err);
    }
    c->vinfo[c->n_vinfo++] = vi;
    return BP_OK;
}

/* Applies --shape NAME=... to a graph input. */
static bp_status ox_apply_shape_override(bp__ox *c, int32_t t, bool *used, bp_error *err)
{
    const bp_onnx_options *o = c->opts;
    const char *name = bp__names_get(&c->tn, t);
    for (int i = 0; i < o->n_shapes; i++) {
        if (strcmp(o->shape_names[i], name) != 0) continue;
        used[i] = true;
        int r = o->shape_ranks[i];
        if (r < 0 || r > BP__OX_MAX_RANK)
            return bp__err(err, BP_ERR_USAGE, "%s: --shape %s: rank %d is out of range", c->file, name, r);
        for (int j = 0; j < r; j++)
            if (o->shape_dims[i][j] < 0)
                return bp__err(err, BP_ERR_USAGE, "%s: --shape %s: dimension %d is negative", c->file, name, j);
        if (c->t[t].rank >= 0 && c->t[t].rank != r)
            bp__ox_warn(c, "--shape %s: the model declares rank %d, using rank %d", name, c->t[t].rank, r);
        bp_dtype dt = (bp_dtype)c->t[t].dtype;
        if (dt == BP_DT_UNKNOWN) dt = BP_DT_F32;
        return bp__ox_set_shape(c, t, dt, r, o->shape_dims[i], err);
    }
    return BP_OK;
}

/* Free variables of a subgraph: names its nodes read that neither it nor an
 * enclosing subgraph defines.  scope[0..depth-1] are the enclosing sets. */
typedef struct ox_scope {
    bp__names defs;
} ox_scope;

static bp_status ox_capture_add(bp__ox *c, bp__ox_node *nd, int32_t k, const char *name, bp_error *err);

static bp_status ox_free_vars(bp__ox *c, bp__ox_node *nd, int32_t k, const Onnx__GraphProto *g, ox_scope *scope,
                              int depth, bp_error *err)
{
    if (depth >= 32) return bp__err(err, BP_ERR_LIMIT, "%s: node \"%s\": subgraphs nested more than 32 deep", c->file, nd->name);
    ox_scope *me = &scope[depth];
    memset(me, 0, sizeof *me);
    bp_status s = BP_OK;
    int32_t ex;
#define OX_DEF(str) do { if ((str) && *(str) && bp__names_add(c->a, &me->defs, (str), strlen(str), &ex) == -1) { s = ox_oom(c, err); goto out; } } while (0)
    for (size_t i = 0; i < g->n_input; i++) OX_DEF(g->input[i]->name);
    for (size_t i = 0; i < g->n_initializer; i++) OX_DEF(g->initializer[i]->name);
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        if (g->sparse_initializer[i]->values) OX_DEF(g->sparse_initializer[i]->values->name);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_output; j++) OX_DEF(g->node[i]->output[j]);
#undef OX_DEF
    for (size_t i = 0; i < g->n_node && !s; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t j = 0; j < n->n_input && !s; j++) {
            const char *nm = n->input[j];
            if (!nm || !*nm) continue;
            bool defined = false;
            for (int d = depth; d >= 0 && !defined; d--) defined = bp__names_find(&scope[d].defs, nm, strlen(nm)) >= 0;
            if (!defined) s = ox_capture_add(c, nd, k, nm, err);
        }
        for (size_t j = 0; j < n->n_attribute && !s; j++) {
            const Onnx__AttributeProto *at = n->attribute[j];
            if (at->g) s = ox_free_vars(c, nd, k, at->g, scope, depth + 1, err);
            for (size_t q = 0; q < at->n_graphs && !s; q++) s = ox_free_vars(c, nd, k, at->graphs[q], scope, depth + 1, err);
        }
    }
    /* a subgraph output may name an outer value directly */
    for (size_t i = 0; i < g->n_output && !s; i++) {
        const char *nm = g->output[i]->name;
        if (!nm || !*nm) continue;
        bool defined = false;
        for (int d = depth; d >= 0 && !defined; d--) defined = bp__names_find(&scope[d].defs, nm, strlen(nm)) >= 0;
        if (!defined) s = ox_capture_add(c, nd, k, nm, err);
    }
out:
    bp__names_free(c->a, &me->defs);
    return s;
}

static bp_status ox_capture_add(bp__ox *c, bp__ox_node *nd, int32_t k, const char *name, bp_error *err)
{
    (void)k;
    int32_t t = ox_find(c, name);
    if (t < 0)
        return bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s): its subgraph reads \"%s\", which is not defined", c->file,
                       nd->name, nd->np->op_type, name);
    for (int32_t i = 0; i < nd->n_in; i++) if (c->io[nd->in_off + i] == t) return BP_OK;
    for (int32_t i = 0; i < nd->n_cap; i++) if (c->io[nd->cap_off + i] == t) return BP_OK;
    if (!bp__grow(c->a, (void **)&c->io, &c->cap_io, c->n_io + 1, sizeof *c->io)) return ox_oom(c, err);
    /* captures are appended right after the node's own run in io */
    if ((size_t)(nd->cap_off + nd->n_cap) != c->n_io)
        return bp__err(err, BP_ERR_INVALID, "%s: internal error collecting captures", c->file);
    c->io[c->n_io++] = t;
    nd->n_cap++;
    return BP_OK;
}

static bool ox_is_control_flow(const char *op)
{
    return !strcmp(op, "If") || !strcmp(op, "Loop") || !strcmp(op, "Scan");
}

/* Output shapes of a control-flow node: If when both branches declare the
 * same static output; everything else stays unknown (dynamic). */
static bp_status ox_infer_control(bp__ox *c, int32_t k, bp_error *err)
{
    bp__ox_node *nd = &c->nodes[k];
    const Onnx__NodeProto *np = nd->np;
    if (strcmp(np->op_type, "If") != 0) return BP_OK;
    const Onnx__GraphProto *br[2] = {NULL, NULL};
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *at = np->attribute[i];
        if (at->name && !strcmp(at->name, "then_branch")) br[0] = at->g;
        if (at->name && !strcmp(at->name, "else_branch")) br[1] = at->g;
    }
    if (!br[0] || !br[1]) return BP_OK;
    for (int32_t j = 0; j < nd->n_out; j++) {
        int32_t t = c->io[nd->out_off + j];
        if (t < 0 || (size_t)j >= br[0]->n_output || (size_t)j >= br[1]->n_output) continue;
        const Onnx__TypeProto *a = br[0]->output[j]->type, *b = br[1]->output[j]->type;
        if (!a || !b || a->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || b->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
            continue;
        const Onnx__TypeProto__Tensor *ta = a->tensor_type, *tb = b->tensor_type;
        if (!ta || !tb || !ta->shape || !tb->shape || ta->elem_type != tb->elem_type || ta->shape->n_dim != tb->shape->n_dim)
            continue;
        if (ta->shape->n_dim > BP__OX_MAX_RANK) continue;
        int64_t d[BP__OX_MAX_RANK];
        bool ok = true;
        for (size_t q = 0; q < ta->shape->n_dim && ok; q++) {
            const Onnx__TensorShapeProto__Dimension *x = ta->shape->dim[q], *y = tb->shape->dim[q];
            ok = x->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                 y->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && x->dim_value == y->dim_value &&
                 x->dim_value >= 0;
            d[q] = ok ? x->dim_value : 0;
        }
        bp_dtype dt = bp__ox_dtype(ta->elem_type);
        if (ok && dt != BP_DT_UNKNOWN) {
            bp_status s = bp__ox_set_shape(c, t, dt, (int)ta->shape->n_dim, d, err);
            if (s) return s;
        }
    }
    return BP_OK;
}

/* Merges value_info (or a graph output's declared type) into what was
 * inferred: fills what is unknown, refines symbols with declared sizes, and
 * warns where declared and inferred sizes disagree. */
static bp_status ox_check_vi(bp__ox *c, int32_t t, bp_error *err)
{
    bp__ox_tensor *x = &c->t[t];
    if (x->vi < 0) return BP_OK;
    const Onnx__ValueInfoProto *vi = c->vinfo[x->vi];
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return BP_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    const char *name = bp__names_get(&c->tn, t);
    bp_dtype vdt = tt->has_elem_type ? bp__ox_dtype(tt->elem_type) : BP_DT_UNKNOWN;
    if (x->dtype == BP_DT_UNKNOWN && vdt != BP_DT_UNKNOWN) x->dtype = (uint8_t)vdt;
    else if (vdt != BP_DT_UNKNOWN && vdt != x->dtype) {
        if (c->st) c->st->n_value_info_mismatch++;
        bp__ox_warn(c, "tensor \"%s\": value_info says %s, inferred %s", name, bp_dtype_name(vdt), bp_dtype_name((bp_dtype)x->dtype));
    }
    if (!tt->shape) return BP_OK;
    if (x->rank < 0) {
        bp_dtype dt = (bp_dtype)x->dtype;
        bp_status s = ox_shape_from_type(c, t, tp, err);
        if (s) return s;
        if (dt != BP_DT_UNKNOWN) c->t[t].dtype = (uint8_t)dt;
        return BP_OK;
    }
    if ((size_t)x->rank != tt->shape->n_dim) {
        if (c->st) c->st->n_value_info_mismatch++;
        bp__ox_warn(c, "tensor \"%s\": value_info says rank %zu, inferred rank %d", name, tt->shape->n_dim, x->rank);
        return BP_OK;
    }
    int64_t d[BP__OX_MAX_RANK];
    memcpy(d, bp__ox_dims(c, t), (size_t)x->rank * sizeof *d);
    bool changed = false, warned = false;
    for (int i = 0; i < x->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        int64_t v = -1;
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value >= 0) v = dm->dim_value;
        else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param && *dm->dim_param) {
            bp_status s = bp__ox_named_dim(c, dm->dim_param, &v, err);
            if (s) return s;
            if (v < 0) {
                /* a declared symbol where inference has a fresh one: take the name */
                if (d[i] < 0 && bp__ox_sym_name(c, d[i])[0] == '?') { d[i] = v; changed = true; }
                continue;
            }
        } else continue;
        if (d[i] < 0) { d[i] = v; changed = true; }
        else if (d[i] != v && !warned) {
            warned = true;
            if (c->st) c->st->n_value_info_mismatch++;
            bp__ox_warn(c, "tensor \"%s\": value_info says dimension %d is %lld, inferred %lld", name, i, (long long)v, (long long)d[i]);
        }
    }
    if (changed) return bp__ox_set_shape(c, t, (bp_dtype)c->t[t].dtype, x->rank, d, err);
    return BP_OK;
}

static bool ox_is_default_domain(const char *d)
{
    return !d || !*d || !strcmp(d, "ai.onnx");
}

/* Bytes of a tensor from the importer's table (0 when not sized). */
static bool ox_static_bytes(const bp__ox *c, int32_t t, uint64_t *bytes)
{
    const bp__ox_tensor *x = &c->t[t];
    if (x->rank < 0 || x->dtype == BP_DT_UNKNOWN || x->not_sized) return false;
    uint64_t n = bp_dtype_size((bp_dtype)x->dtype);
    const int64_t *d = bp__ox_dims(c, t);
    for (int i = 0; i < x->rank; i++) {
        if (d[i] < 0) return false;
        if (!bp__mul_u64(n, (uint64_t)d[i], &n)) return false;
    }
    *bytes = n;
    return true;
}

/* Adds tensor t to the graph: with its shape when it has a type and rank,
 * otherwise as a dynamic tensor of unknown size ("?NAME" bytes of u8). */
static bp_status ox_graph_tensor(bp__ox *c, bp_graph *g, int32_t t, bp_error *err)
{
    bp__ox_tensor *x = &c->t[t];
    const char *name = bp__names_get(&c->tn, t);
    int64_t dims[BP__OX_MAX_RANK];
    const char *syms[BP__OX_MAX_RANK];
    if (x->rank >= 0 && x->dtype != BP_DT_UNKNOWN && !x->not_sized) {
        const int64_t *d = bp__ox_dims(c, t);
        for (int i = 0; i < x->rank; i++) {
            dims[i] = d[i] >= 0 ? d[i] : BP_DIM_SYMBOLIC;
            syms[i] = d[i] >= 0 ? NULL : bp__ox_sym_name(c, d[i]);
        }
        return bp_graph_add_tensor_shape(g, name, (bp_dtype)x->dtype, x->rank, dims, syms, &x->gid, err);
    }
    int64_t f = bp__ox_fresh(c, name, 0);
    if (!f) return ox_oom(c, err);
    dims[0] = BP_DIM_SYMBOLIC;
    syms[0] = bp__ox_sym_name(c, f);
    return bp_graph_add_tensor_shape(g, name, BP_DT_U8, 1, dims, syms, &c->t[t].gid, err);
}

static bp_status ox_node_name(bp__ox *c, bp__names *used, int32_t k, const char *nm, char **out, bp_error *err)
{
    char buf[64];
    size_t base_len = nm ? strlen(nm) : 0;
    size_t cap = base_len + 32;
    char *s = bp__alloc(c->a, cap);
    if (!s) return ox_oom(c, err);
    if (base_len) memcpy(s, nm, base_len);
    s[base_len] = 0;
    size_t len = base_len;
    snprintf(buf, sizeof buf, "#%d", (int)k);
    if (!len) { strcpy(s, buf); len = strlen(s); }
    for (;;) {
        int32_t ex, id = bp__names_add(c->a, used, s, len, &ex);
        if (id >= 0) break;
        if (id == -1) { bp__free(c->a, s, cap); return ox_oom(c, err); }
        size_t bl = strlen(buf);
        if (len + bl + 1 > cap) {
            char *ns = bp__realloc(c->a, s, cap, len + bl + 32);
            if (!ns) { bp__free(c->a, s, cap); return ox_oom(c, err); }
            s = ns;
            cap = len + bl + 32;
        }
        memcpy(s + len, buf, bl + 1);
        len += bl;
    }
    /* shrink the allocation bookkeeping: we free with strlen + 1 later */
    char *fin = bp__alloc(c->a, len + 1);
    if (!fin) { bp__free(c->a, s, cap); return ox_oom(c, err); }
    memcpy(fin, s, len + 1);
    bp__free(c->a, s, cap);
    *out = fin;
    return BP_OK;
}

static void ox_cleanup(bp__ox *c)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].np) protobuf_c_message_free_unpacked(&c->nodes[i].np->base, &c->pa);
        if (c->nodes[i].name) bp__free(c->a, c->nodes[i].name, strlen(c->nodes[i].name) + 1);
    }
    bp__free(c->a, c->nodes, c->n_nodes * sizeof *c->nodes);
    for (size_t i = 0; i < c->n_vinfo; i++) protobuf_c_message_free_unpacked(&c->vinfo[i]->base, &c->pa);
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

static bp_status ox_opsets(bp__ox *c, ox_model *m, bp_error *err)
{
    c->opset = -1;
    for (size_t i = 0; i < m->opsets.n; i++) {
        bp_status ds = ox_check_depth(c, &onnx__operator_set_id_proto__descriptor, m->opsets.s[i], "opset_import", err);
        if (ds) return ds;
        Onnx__OperatorSetIdProto *op = (Onnx__OperatorSetIdProto *)protobuf_c_message_unpack(
            &onnx__operator_set_id_proto__descriptor, &c->pa, m->opsets.s[i].n, m->opsets.s[i].p);
        if (!op && c->pa_oom) return ox_oom(c, err);
        if (!op) return bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in opset_import", c->file);
        bool def = ox_is_default_domain(op->domain);
        int64_t v = op->has_version ? op->version : -1;
        char dom[128];
        snprintf(dom, sizeof dom, "%s", op->domain && *op->domain ? op->domain : "ai.onnx");
        protobuf_c_message_free_unpacked(&op->base, &c->pa);
        if (!def) continue;
        if (v < 1 || v > BP__OX_MAX_OPSET)
            return bp__err(err, BP_ERR_UNSUPPORTED, "%s: opset %lld of domain \"%s\" is not supported (bufplan knows opsets 1..%d)",
                           c->file, (long long)v, dom, BP__OX_MAX_OPSET);
        c->opset = v;
    }
    if (c->opset < 0) {
        if (m->opsets.n) {
            /* only other domains imported: default-domain ops cannot be used */
            c->opset = 0;
        } else {
            bp__ox_warn(c, "the model imports no opset; assuming ai.onnx opset 1");
            c->opset = 1;
        }
    }
    if (c->st) c->st->opset = c->opset;
    return BP_OK;
}

/* Whether `domain` is imported by the model. */
static bool ox_domain_imported(bp__ox *c, ox_model *m, const char *domain)
{
    for (size_t i = 0; i < m->opsets.n; i++) {
        ox_rd r = {m->opsets.s[i].p, m->opsets.s[i].p + m->opsets.s[i].n, m->opsets.s[i].p};
        ox_field f = {0};
        bp_error e;
        ox_slice d = {(const uint8_t *)"", 0};
        while (ox_next(&r, &f, c->file, "opset", &e) == 1)
            if (f.num == 1 && f.wt == 2) d = f.s;
        if (d.n == strlen(domain) && !memcmp(d.p, domain, d.n)) return true;
    }
    return false;
}

static bp_status ox_import(bp__ox *c, const uint8_t *data, size_t len, bp_graph **out, bp_error *err)
{
    ox_model m;
    memset(&m, 0, sizeof m);
    bp_graph *g = NULL;
    bool *shape_used = NULL;
    int32_t *order = NULL, *indeg = NULL, *succ_off = NULL, *succ = NULL;
    size_t n_succ = 0;
    bp__names used_names;
    memset(&used_names, 0, sizeof used_names);
    bp_status s = ox_walk_model(c, data, len, &m, err);
    if (s) goto done;
    if (c->st) {
        c->st->ir_version = m.ir_version;
        snprintf(c->st->producer, sizeof c->st->producer, "%.*s%s%.*s", (int)(m.producer.n < 40 ? m.producer.n : 40),
                 m.producer.p ? (const char *)m.producer.p : "", m.producer_version.n ? " " : "",
                 (int)(m.producer_version.n < 20 ? m.producer_version.n : 20),
                 m.producer_version.p ? (const char *)m.producer_version.p : "");
    }
    if (m.ir_version > 10) bp__ox_warn(c, "IR version %lld is newer than the newest bufplan knows (10)", (long long)m.ir_version);
    s = ox_opsets(c, &m, err);
    if (s) goto done;

    /* bound symbols first, so shapes see their values */
    for (int i = 0; i < c->opts->n_dims; i++) {
        const char *nm = c->opts->dim_names[i];
        if (!nm || !*nm) { s = bp__err(err, BP_ERR_USAGE, "%s: --dim with an empty name", c->file); goto done; }
        if (c->opts->dim_values[i] < 0) {
            s = bp__err(err, BP_ERR_USAGE, "%s: --dim %s=%lld: the value must be >= 0", c->file, nm, (long long)c->opts->dim_values[i]);
            goto done;
        }
        int32_t id = ox_sym_add(c, nm, strlen(nm), NULL);
        if (id < 0) { s = ox_oom(c, err); goto done; }
        c->sym_bound[id] = c->opts->dim_values[i];
    }

    /* initializers */
    for (size_t i = 0; i < m.inits.n; i++) if ((s = ox_add_initializer(c, m.inits.s[i], data, false, err))) goto done;
    for (size_t i = 0; i < m.sparse.n; i++) if ((s = ox_add_initializer(c, m.sparse.s[i], data, true, err))) goto done;
    if (c->st) c->st->n_initializers = (int32_t)c->n_t;

    /* inputs (IR < 4 lists initializers among them too) */
    if (c->opts->n_shapes) {
        shape_used = bp__calloc(c->a, (size_t)c->opts->n_shapes, sizeof *shape_used);
        if (!shape_used) { s = ox_oom(c, err); goto done; }
    }
    for (size_t i = 0; i < m.inputs.n; i++) {
        Onnx__ValueInfoProto *vi;
        if ((s = ox_unpack_vi(c, m.inputs.s[i], "input", &vi, err))) {
            if (vi) protobuf_c_message_free_unpacked(&vi->base, &c->pa);
            goto done;
        }
        int32_t id, ex;
        s = ox_add_tensor(c, vi->name, strlen(vi->name), BP__OX_INPUT, &id, &ex, err);
        if (s) { protobuf_c_message_free_unpacked(&vi->base, &c->pa); goto done; }
        if (id == -2) {
            bool is_init = c->t[ex].role == BP__OX_INIT;
            protobuf_c_message_free_unpacked(&vi->base, &c->pa);
            if (is_init) continue;
            s = bp__err(err, BP_ERR_INVALID, "%s: graph input \"%s\" is listed twice", c->file, bp__names_get(&c->tn, ex));
            goto done;
        }
        s = ox_shape_from_type(c, id, vi->type, err);
        protobuf_c_message_free_unpacked(&vi->base, &c->pa);
        if (s) goto done;
        if (c->opts->n_shapes && (s = ox_apply_shape_override(c, id, shape_used, err))) goto done;
        if (c->st) c->st->n_inputs++;
    }
    for (int i = 0; i < c->opts->n_shapes; i++)
        if (!shape_used[i]) {
            s = bp__err(err, BP_ERR_USAGE, "%s: --shape %s: the model has no graph input of that name", c->file, c->opts->shape_names[i]);
            goto done;
        }

    /* nodes: unpack, name, register outputs */
    if (m.nodes.n > INT32_MAX / 2) { s = bp__err(err, BP_ERR_LIMIT, "%s: too many nodes", c->file); goto done; }
    if (m.nodes.n > bp__limits(c->opts->limits)->max_ops) {
        s = bp__err(err, BP_ERR_LIMIT, "%s: %zu nodes are over the limit of %llu (bp_limits.max_ops)", c->file, m.nodes.n,
                    (unsigned long long)bp__limits(c->opts->limits)->max_ops);
        goto done;
    }
    c->nodes = bp__calloc(c->a, m.nodes.n ? m.nodes.n : 1, sizeof *c->nodes);
    if (!c->nodes) { s = ox_oom(c, err); goto done; }
    c->n_nodes = m.nodes.n;
    if (c->st) c->st->n_nodes = (int32_t)m.nodes.n;
    for (size_t k = 0; k < m.nodes.n; k++) {
        bp__ox_node *nd = &c->nodes[k];
        if ((s = ox_check_depth(c, &onnx__node_proto__descriptor, m.nodes.s[k], "a node", err))) goto done;
        nd->np = (Onnx__NodeProto *)protobuf_c_message_unpack(&onnx__node_proto__descriptor, &c->pa, m.nodes.s[k].n, m.nodes.s[k].p);
        if (!nd->np && c->pa_oom) { s = ox_oom(c, err); goto done; }
        if (!nd->np) {
            s = bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in node %zu (at byte %zu)", c->file, k, (size_t)(m.nodes.s[k].p - data));
            goto done;
        }
        Onnx__NodeProto *np = nd->np;
        if (!np->op_type || !*np->op_type) {
            s = bp__err(err, BP_ERR_INVALID, "%s: node %zu (\"%s\") has no op_type", c->file, k, np->name ? np->name : "");
            goto done;
        }
        if ((s = ox_node_name(c, &used_names, (int32_t)k, np->name, &nd->name, err))) goto done;
        nd->domain_default = ox_is_default_domain(np->domain);
        if (!nd->domain_default && !ox_domain_imported(c, &m, np->domain)) {
            s = bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\" (%s): its domain \"%s\" is not in the model's opset_import", c->file,
                        nd->name, np->op_type, np->domain);
            goto done;
        }
        if (nd->domain_default && c->opset == 0) {
            s = bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\" (%s): the model imports no opset for domain \"ai.onnx\"", c->file,
                        nd->name, np->op_type);
            goto done;
        }
        nd->control_flow = nd->domain_default && ox_is_control_flow(np->op_type);
        if (np->n_input > 65535 || np->n_output > 65535) {
            s = bp__err(err, BP_ERR_LIMIT, "%s: node \"%s\": too many inputs or outputs", c->file, nd->name);
            goto done;
        }
        nd->n_out = (int32_t)np->n_output;
        if (!bp__grow(c->a, (void **)&c->io, &c->cap_io, c->n_io + np->n_output, sizeof *c->io)) { s = ox_oom(c, err); goto done; }
        nd->out_off = (int32_t)c->n_io;
        for (size_t j = 0; j < np->n_output; j++) {
            const char *on = np->output[j];
            int32_t id = -1, ex;
            if (on && *on) {
                if ((s = ox_add_tensor(c, on, strlen(on), BP__OX_NODE, &id, &ex, err))) goto done;
                if (id == -2) {
                    const bp__ox_tensor *o = &c->t[ex];
                    s = bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s): output \"%s\" is already %s", c->file, nd->name,
                                np->op_type, on,
                                o->role == BP__OX_INPUT ? "a graph input" : o->role == BP__OX_INIT ? "an initializer"
                                                                                              : "produced by another node");
                    goto done;
                }
                c->t[id].producer = (int32_t)k;
            }
            c->io[c->n_io++] = id;
        }
    }
    /* value_info and outputs */
    for (size_t i = 0; i < m.vinfos.n + m.outputs.n; i++) {
        bool is_out = i >= m.vinfos.n;
        Onnx__ValueInfoProto *vi;
        s = ox_unpack_vi(c, is_out ? m.outputs.s[i - m.vinfos.n] : m.vinfos.s[i], is_out ? "output" : "value_info", &vi, err);
        if (s) { if (vi) protobuf_c_message_free_unpacked(&vi->base, &c->pa); goto done; }
        int32_t t = ox_find(c, vi->name);
        if (t < 0) {
            if (is_out) {
                s = bp__err(err, BP_ERR_INVALID, "%s: graph output \"%s\" is not produced by any node (nor an input or initializer)",
                            c->file, vi->name);
                protobuf_c_message_free_unpacked(&vi->base, &c->pa);
                goto done;
            }
            protobuf_c_message_free_unpacked(&vi->base, &c->pa);   /* value_info of nothing: ignore */
            continue;
        }
        if ((s = ox_keep_vi(c, vi, err))) goto done;
        if (c->t[t].role == BP__OX_NODE) c->t[t].vi = (int32_t)c->n_vinfo - 1;
        if (is_out && c->st) c->st->n_outputs++;
    }

    /* resolve node inputs; collect subgraph captures */
    for (size_t k = 0; k < c->n_nodes; k++) {
        bp__ox_node *nd = &c->nodes[k];
        Onnx__NodeProto *np = nd->np;
        if (!bp__grow(c->a, (void **)&c->io, &c->cap_io, c->n_io + np->n_input, sizeof *c->io)) { s = ox_oom(c, err); goto done; }
        nd->in_off = (int32_t)c->n_io;
        nd->n_in = (int32_t)np->n_input;
        for (size_t j = 0; j < np->n_input; j++) {
            const char *in = np->input[j];
            int32_t t = -1;
            if (in && *in) {
                t = ox_find(c, in);
                if (t < 0) {
                    s = bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s): input \"%s\" is not defined (no node produces it and it is not a graph input or initializer)",
                                c->file, nd->name, np->op_type, in);
                    goto done;
                }
                if (c->t[t].producer == (int32_t)k) {
                    s = bp__err(err, BP_ERR_INVALID, "%s: node \"%s\" (%s) reads its own output \"%s\"", c->file, nd->name, np->op_type, in);
                    goto done;
                }
            }
            c->io[c->n_io++] = t;
        }
        nd->cap_off = (int32_t)c->n_io;
        bool has_graph = false;
        for (size_t j = 0; j < np->n_attribute; j++) has_graph |= np->attribute[j]->g || np->attribute[j]->n_graphs;
        if (has_graph) {
            ox_scope scope[33];
            for (size_t j = 0; j < np->n_attribute && !s; j++) {
                const Onnx__AttributeProto *at = np->attribute[j];
                if (at->g) s = ox_free_vars(c, nd, (int32_t)k, at->g, scope, 0, err);
                for (size_t q = 0; q < at->n_graphs && !s; q++) s = ox_free_vars(c, nd, (int32_t)k, at->graphs[q], scope, 0, err);
            }
            if (s) goto done;
            if (nd->control_flow && c->st) c->st->n_control_flow++;
        }
    }

    /* topological order of the nodes (the stored order when it is one) */
    {
        size_t nn = c->n_nodes;
        order = bp__alloc(c->a, (nn ? nn : 1) * sizeof *order);
        indeg = bp__calloc(c->a, nn ? nn : 1, sizeof *indeg);
        succ_off = bp__calloc(c->a, nn + 1, sizeof *succ_off);
        if (!order || !indeg || !succ_off) { s = ox_oom(c, err); goto done; }
        for (size_t k = 0; k < nn; k++) {
            const bp__ox_node *nd = &c->nodes[k];
            for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
                int32_t t = j < nd->n_in ? c->io[nd->in_off + j] : c->io[nd->cap_off + j - nd->n_in];
                if (t >= 0 && c->t[t].producer >= 0) { succ_off[c->t[t].producer + 1]++; indeg[k]++; n_succ++; }
            }
        }
        for (size_t k = 0; k < nn; k++) succ_off[k + 1] += succ_off[k];
        succ = bp__alloc(c->a, (n_succ ? n_succ : 1) * sizeof *succ);
        if (!succ) { s = ox_oom(c, err); goto done; }
        for (size_t k = 0; k < nn; k++) {
            const bp__ox_node *nd = &c->nodes[k];
            for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
                int32_t t = j < nd->n_in ? c->io[nd->in_off + j] : c->io[nd->cap_off + j - nd->n_in];
                if (t >= 0 && c->t[t].producer >= 0) succ[succ_off[c->t[t].producer]++] = (int32_t)k;
            }
        }
        for (size_t k = nn; k > 0; k--) succ_off[k] = succ_off[k - 1];
        succ_off[0] = 0;
        /* Kahn with a min-heap would keep the stored order; a simple scan
         * pointer does the same when the stored order is topological. */
        size_t head = 0, tail = 0;
        for (size_t k = 0; k < nn; k++) if (!indeg[k]) order[tail++] = (int32_t)k;
        while (head < tail) {
            int32_t k = order[head++];
            for (int32_t q = succ_off[k]; q < succ_off[k + 1]; q++)
                if (--indeg[succ[q]] == 0) order[tail++] = succ[q];
        }
        if (tail < nn) {
            for (size_t k = 0; k < nn; k++)
                if (indeg[k] > 0) {
                    s = bp__err(err, BP_ERR_INVALID, "%s: the graph has a cycle through node \"%s\" (%s)", c->file, c->nodes[k].name,
                                c->nodes[k].np->op_type);
                    break;
                }
            goto done;
        }
    }

    /* shape inference in topological order */
    for (size_t q = 0; q < c->n_nodes; q++) {
        int32_t k = order[q];
        bp__ox_node *nd = &c->nodes[k];
        const Onnx__NodeProto *np = nd->np;
        if (nd->control_flow) {
            s = ox_infer_control(c, k, err);
        } else if (!nd->domain_default) {
            s = BP_ERR_UNSUPPORTED;
        } else {
            s = bp__ox_infer(c, k, err);
        }
        if (s == BP_ERR_UNSUPPORTED) {
            if (!c->opts->unknown_op_dynamic) {
                if (nd->domain_default)
                    s = bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\": unknown op type \"%s\" (use --unknown-op dynamic to treat its outputs as dynamic)",
                                c->file, nd->name, np->op_type);
                else
                    s = bp__err(err, BP_ERR_UNSUPPORTED, "%s: node \"%s\": unknown op type \"%s\" of domain \"%s\" (use --unknown-op dynamic to treat its outputs as dynamic)",
                                c->file, nd->name, np->op_type, np->domain);
                goto done;
            }
            nd->unknown = 1;
            if (c->st) c->st->n_unknown_ops++;
            bp__ox_warn(c, "node \"%s\": unknown op type \"%s\"%s%s: its outputs are dynamic", nd->name, np->op_type,
                        nd->domain_default ? "" : " of domain ", nd->domain_default ? "" : np->domain);
            for (int32_t j = 0; j < nd->n_out; j++) {
                int32_t t = c->io[nd->out_off + j];
                if (t >= 0) { c->t[t].rank = -1; c->t[t].val = -1; }
            }
            s = BP_OK;
        }
        if (s) goto done;
        for (int32_t j = 0; j < nd->n_out; j++) {
            int32_t t = c->io[nd->out_off + j];
            if (t < 0) continue;
            if (!nd->unknown && (s = ox_check_vi(c, t, err))) goto done;
            if (c->t[t].val >= 0 && c->st && strcmp(np->op_type, "Constant") != 0) c->st->n_folded++;
        }
    }

    /* --dim names must name a symbol of the model */
    for (int i = 0; i < c->opts->n_dims; i++) {
        const char *nm = c->opts->dim_names[i];
        int32_t id = bp__names_find(&c->syms, nm, strlen(nm));
        if (id < 0 || (size_t)id >= c->cap_sym_seen || !c->sym_seen[id]) {
            s = bp__err(err, BP_ERR_USAGE, "%s: --dim %s: the model has no symbolic dimension of that name", c->file, nm);
            goto done;
        }
    }

    /* build the graph: inputs, initializers, node outputs; then the ops */
    {
        const char *slash = strrchr(c->file, '/');
        g = bp_graph_new(slash ? slash + 1 : c->file, c->a);
        if (!g) { s = ox_oom(c, err); goto done; }
        if ((s = bp_graph_set_limits(g, bp__limits(c->opts->limits), err))) goto done;
        for (int pass = 0; pass < 3; pass++) {
            int role = pass == 0 ? BP__OX_INPUT : pass == 1 ? BP__OX_INIT : BP__OX_NODE;
            for (size_t t = 0; t < c->n_t; t++) {
                if (c->t[t].role != role) continue;
                if ((s = ox_graph_tensor(c, g, (int32_t)t, err))) goto done;
                bp__ox_tensor *x = &c->t[t];
                unsigned fl = role == BP__OX_INPUT ? BP_TENSOR_INPUT : role == BP__OX_INIT ? BP_TENSOR_WEIGHT : 0;
                if (role == BP__OX_NODE && x->is_const && !c->opts->plan_constants) fl |= BP_TENSOR_CONST;
                if (fl && (s = bp_graph_mark(g, x->gid, fl, err))) goto done;
                uint64_t b = 0;
                bool sized = ox_static_bytes(c, (int32_t)t, &b);
                if (c->st) {
                    if (role == BP__OX_INIT) c->st->weight_bytes += b;
                    else if (role == BP__OX_NODE) {
                        c->st->n_node_outputs++;
                        if (x->is_const) { c->st->const_bytes += b; c->st->n_constants++; }
                        else if (sized) c->st->activation_bytes += b;
                    }
                }
            }
        }
        for (size_t v = 0; v < m.outputs.n; v++) {
            /* graph outputs are the last n_outputs kept value infos */
            const Onnx__ValueInfoProto *vi = c->vinfo[c->n_vinfo - m.outputs.n + v];
            int32_t t = ox_find(c, vi->name);
            if ((s = bp_graph_mark(g, c->t[t].gid, BP_TENSOR_OUTPUT, err))) goto done;
        }
        int32_t ins[65536 / 8];
        int32_t *ip = ins, *op_ = NULL;
        size_t ip_cap = sizeof ins / sizeof ins[0];
        for (size_t k = 0; k < c->n_nodes; k++) {
            bp__ox_node *nd = &c->nodes[k];
            size_t need = (size_t)nd->n_in + (size_t)nd->n_cap + (size_t)nd->n_out;
            if (need > ip_cap) {
                if (ip != ins) bp__free(c->a, ip, ip_cap * sizeof *ip);
                ip = bp__alloc(c->a, need * sizeof *ip);
                if (!ip) { s = ox_oom(c, err); goto done; }
                ip_cap = need;
            }
            int ni = 0, no = 0;
            for (int32_t j = 0; j < nd->n_in + nd->n_cap; j++) {
                int32_t t = j < nd->n_in ? c->io[nd->in_off + j] : c->io[nd->cap_off + j - nd->n_in];
                if (t >= 0) ip[ni++] = c->t[t].gid;
            }
            op_ = ip + ni;
            for (int32_t j = 0; j < nd->n_out; j++) {
                int32_t t = c->io[nd->out_off + j];
                if (t >= 0) op_[no++] = c->t[t].gid;
            }
            char type[256];
            if (nd->domain_default) snprintf(type, sizeof type, "%s", nd->np->op_type);
            else snprintf(type, sizeof type, "%s::%s", nd->np->domain, nd->np->op_type);
            s = bp_graph_add_op(g, nd->name, type, ni, ip, no, op_, nd->cost, NULL, err);
            if (s) break;
        }
        if (ip != ins) bp__free(c->a, ip, ip_cap * sizeof *ip);
        if (s) goto done;
        if (!c->n_nodes) { s = bp__err(err, BP_ERR_INVALID, "%s: the graph has no nodes", c->file); goto done; }
        if ((s = bp_graph_finalize(g, err))) goto done;
        if (c->st)
            for (int32_t t = 0; t < bp_graph_n_tensors(g); t++) c->st->n_dynamic += bp_graph_tensor_is_dynamic(g, t) ? 1 : 0;
    }

done:
    if (s) { bp_graph_free(g); g = NULL; }
    *out = g;
    if (shape_used) bp__free(c->a, shape_used, (size_t)c->opts->n_shapes * sizeof *shape_used);
    bp__free(c->a, order, (c->n_nodes ? c->n_nodes : 1) * sizeof *order);
    bp__free(c->a, indeg, (c->n_nodes ? c->n_nodes : 1) * sizeof *indeg);
    bp__free(c->a, succ_off, (c->n_nodes + 1) * sizeof *succ_off);
    bp__free(c->a, succ, (n_succ ? n_succ : 1) * sizeof *succ);
    bp__names_free(c->a, &used_names);
    ox_model_free(c->a, &m);
    return s;
}

bp_status bp_onnx_parse(const void *data, size_t len, const char *filename, const bp_onnx_options *opts,
                        const bp_allocator *alloc, bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    double t0 = bp__now();
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_onnx_parse: out is NULL");
    *out = NULL;
    if (!data && len) return bp__err(err, BP_ERR_USAGE, "bp_onnx_parse: data is NULL");
    bp_onnx_options defaults;
    if (!opts) { bp_onnx_options_init(&defaults); opts = &defaults; }
    if ((opts->n_dims && (!opts->dim_names || !opts->dim_values)) ||
        (opts->n_shapes && (!opts->shape_names || !opts->shape_ranks || !opts->shape_dims)) || opts->n_dims < 0 || opts->n_shapes < 0)
        return bp__err(err, BP_ERR_USAGE, "bp_onnx_parse: inconsistent options (counts without arrays)");
    bp_onnx_stats local;
    bp__ox c;
    memset(&c, 0, sizeof c);
    c.a = alloc ? alloc : &bp__libc_allocator;
    c.pa.alloc = ox_pc_alloc;
    c.pa.free = ox_pc_free;
    c.pa.allocator_data = &c;
    c.file = filename ? filename : "model.onnx";
    c.opts = opts;
    c.st = stats ? stats : &local;
    memset(c.st, 0, sizeof *c.st);
    c.st->file_bytes = len;
    c.warn = opts->warnings ? opts->warnings : stderr;
    bp_status s = ox_import(&c, data, len, out, err);
    ox_cleanup(&c);
    c.st->seconds = bp__now() - t0;
    return s;
}

bp_status bp_onnx_read_ex(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                          bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_onnx_read: out is NULL");
    *out = NULL;
    if (!path) return bp__err(err, BP_ERR_USAGE, "bp_onnx_read: path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return bp__err(err, BP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return bp__err(err, BP_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) { close(fd); return bp__err(err, BP_ERR_IO, "%s: not a regular file", path); }
    size_t len = (size_t)sb.st_size;
    void *map = NULL;
    if (len) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return bp__err(err, BP_ERR_IO, "%s: cannot map: %s", path, strerror(e));
        }
        /* only headers are read, scattered between weights: no read-around */
        (void)posix_madvise(map, len, POSIX_MADV_RANDOM);
    }
    close(fd);
    bp_status s = bp_onnx_parse(len ? map : "", len, path, opts, alloc, out, stats, err);
    if (len) munmap(map, len);
    return s;
}

bp_status bp_onnx_read(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                       bp_graph **out, bp_error *err)
{
    return bp_onnx_read_ex(path, opts, alloc, out, NULL, err);
}

#endif /* BP_HAVE_ONNX */
