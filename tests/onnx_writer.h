/*
 * A tiny protobuf writer for building ONNX models in tests and benchmarks
 * (field numbers from the ONNX IR spec, as in src/onnx/onnx.proto).  Each
 * message is built in its own buffer and appended to its parent, which
 * prefixes the length.  Aborts on out-of-memory (test code only).
 */
#ifndef BP_ONNX_WRITER_H
#define BP_ONNX_WRITER_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb {
    unsigned char *d;
    size_t n, cap;
} pb;

static inline void pb_raw(pb *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->n + n) nc *= 2;
        b->d = realloc(b->d, nc);
        if (!b->d) abort();
        b->cap = nc;
    }
    if (n) memcpy(b->d + b->n, p, n);
    b->n += n;
}
static inline size_t pb_varint_len(uint64_t v) { size_t n = 1; while (v >= 0x80) { v >>= 7; n++; } return n; }
static inline void pb_varint(pb *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;
    while (v >= 0x80) { t[n++] = (unsigned char)(v | 0x80); v >>= 7; }
    t[n++] = (unsigned char)v;
    pb_raw(b, t, n);
}
static inline void pb_tag(pb *b, unsigned f, unsigned wt) { pb_varint(b, ((uint64_t)f << 3) | wt); }
static inline void pb_int(pb *b, unsigned f, int64_t v) { pb_tag(b, f, 0); pb_varint(b, (uint64_t)v); }
static inline void pb_bytes(pb *b, unsigned f, const void *p, size_t n) { pb_tag(b, f, 2); pb_varint(b, n); pb_raw(b, p, n); }
static inline void pb_str(pb *b, unsigned f, const char *s) { pb_bytes(b, f, s, strlen(s)); }
/* Appends child as field f and frees it. */
static inline void pb_msg(pb *b, unsigned f, pb *c) { pb_bytes(b, f, c->d, c->n); free(c->d); memset(c, 0, sizeof *c); }
static inline void pb_free(pb *b) { free(b->d); memset(b, 0, sizeof *b); }

/* ---- ONNX messages ---- */
enum { OX_FLOAT = 1, OX_UINT8 = 2, OX_INT32 = 6, OX_INT64 = 7, OX_BOOL = 9, OX_FLOAT16 = 10 };

/* ValueInfoProto: dims[i] < 0 uses params[i] as dim_param (NULL: unknown dim). rank < 0: no shape. */
static inline pb ox_value_info(const char *name, int elem, int rank, const int64_t *dims, const char *const *params)
{
    pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
    pb_str(&vi, 1, name);
    pb_int(&tt, 1, elem);
    if (rank >= 0) {
        for (int i = 0; i < rank; i++) {
            pb dm = {0};
            if (dims[i] >= 0) pb_int(&dm, 1, dims[i]);
            else if (params && params[i]) pb_str(&dm, 2, params[i]);
            pb_msg(&sh, 1, &dm);
        }
        if (!rank) pb_raw(&sh, "", 0);
        pb_msg(&tt, 2, &sh);
    }
    pb_msg(&tp, 1, &tt);
    pb_msg(&vi, 2, &tp);
    return vi;
}

/* TensorProto with int64 values (packed) or a raw_data payload. */
static inline pb ox_tensor_i64(const char *name, int rank, const int64_t *dims, size_t n, const int64_t *vals)
{
    pb t = {0}, pk = {0};
    for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
    pb_int(&t, 2, OX_INT64);
    for (size_t i = 0; i < n; i++) pb_varint(&pk, (uint64_t)vals[i]);
    if (n) pb_msg(&t, 7, &pk);
    if (name) pb_str(&t, 8, name);
    return t;
}
static inline pb ox_tensor_raw(const char *name, int elem, int rank, const int64_t *dims, const void *raw, size_t n)
{
    pb t = {0};
    for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
    pb_int(&t, 2, elem);
    if (name) pb_str(&t, 8, name);
    pb_bytes(&t, 9, raw, n);
    return t;
}

/* Attributes (AttributeProto types: 1 float, 2 int, 3 string, 4 tensor, 5 graph, 7 ints). */
static inline pb ox_attr_int(const char *name, int64_t v) { pb a = {0}; pb_str(&a, 1, name); pb_int(&a, 3, v); pb_int(&a, 20, 2); return a; }
static inline pb ox_attr_ints(const char *name, size_t n, const int64_t *v)
{
    pb a = {0};
    pb_str(&a, 1, name);
    for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
    pb_int(&a, 20, 7);
    return a;
}
static inline pb ox_attr_str(const char *name, const char *s) { pb a = {0}; pb_str(&a, 1, name); pb_str(&a, 4, s); pb_int(&a, 20, 3); return a; }
static inline pb ox_attr_tensor(const char *name, pb *t) { pb a = {0}; pb_str(&a, 1, name); pb_msg(&a, 5, t); pb_int(&a, 20, 4); return a; }
static inline pb ox_attr_graph(const char *name, pb *g) { pb a = {0}; pb_str(&a, 1, name); pb_msg(&a, 6, g); pb_int(&a, 20, 5); return a; }

/* NodeProto; inputs/outputs NULL-terminated; attrs (n_attrs) are consumed. */
static inline pb ox_node(const char *op, const char *name, const char *const *in, const char *const *out, pb *attrs, int n_attrs)
{
    pb n = {0};
    for (int i = 0; in && in[i]; i++) pb_str(&n, 1, in[i]);
    for (int i = 0; out && out[i]; i++) pb_str(&n, 2, out[i]);
    if (name) pb_str(&n, 3, name);
    pb_str(&n, 4, op);
    for (int i = 0; i < n_attrs; i++) pb_msg(&n, 5, &attrs[i]);
    return n;
}

/* ModelProto around a graph (consumed). domain NULL = default. */
static inline pb ox_model(int64_t ir, const char *domain, int64_t opset, pb *graph)
{
    pb m = {0}, os = {0};
    pb_int(&m, 1, ir);
    pb_str(&m, 2, "bufplan-test");
    if (domain) pb_str(&os, 1, domain);
    pb_int(&os, 2, opset);
    pb_msg(&m, 8, &os);
    pb_msg(&m, 7, graph);
    return m;
}
#endif
