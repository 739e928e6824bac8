/*
 * model_read.c — reads the model file: a small protobuf wire reader walks
 * ModelProto and GraphProto and records where each node, value_info and
 * initializer lies, never touching initializer data, so a model of any size
 * costs only the pages that hold its headers.  Files that are not ONNX are
 * recognised by their first bytes (JSON, images, archives, pickles, ...).
 * Initializers are registered from their header fields (name, dims, data
 * type); small ones, nodes, value infos and opset imports are unpacked with
 * protobuf-c (schema: src/onnx/onnx.proto) after the nesting pre-scan
 * (pb_check.c).
 */
#include "onnx/onnx_internal.h"

#ifdef BP_HAVE_ONNX

#include <string.h>

/* ------------------------------------------------------------ wire walker */

typedef struct ox_rd {
    const uint8_t *p, *end, *base;
} ox_rd;

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
    bp__ox_slice s;        /* length-delimited payload */
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

static bool ox_slices_push(const bp_allocator *a, bp__ox_slices *v, bp__ox_slice s)
{
    if (!bp__grow(a, (void **)&v->s, &v->cap, v->n + 1, sizeof *v->s)) return false;
    v->s[v->n++] = s;
    return true;
}

static void ox_slices_free(const bp_allocator *a, bp__ox_slices *v)
{
    bp__free(a, v->s, v->cap * sizeof *v->s);
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------ the model */

void bp__ox_model_free(const bp_allocator *a, bp__ox_model *m)
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

bp_status bp__ox_walk_model(bp__ox *c, const uint8_t *data, size_t len, bp__ox_model *m, bp_error *err)
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
        if (!ok) return bp__ox_oom(c, err);
        continue;
    wt:
        return bp__err(err, BP_ERR_INVALID, "%s: not an ONNX model: field %u of the model has wire type %d", c->file, f.num, f.wt);
    }
    if (k < 0) return err ? err->status : BP_ERR_INVALID;
    if (!m->graphs.n) return bp__err(err, BP_ERR_INVALID, "%s: not an ONNX model: it has no graph", c->file);
    for (size_t g = 0; g < m->graphs.n; g++) {
        ox_rd gr = {m->graphs.s[g].p, m->graphs.s[g].p + m->graphs.s[g].n, data};
        while ((k = ox_next(&gr, &f, c->file, "the graph", err)) == 1) {
            bp__ox_slices *dst = NULL;
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
            if (!ox_slices_push(c->a, dst, f.s)) return bp__ox_oom(c, err);
        }
        if (k < 0) return err ? err->status : BP_ERR_INVALID;
    }
    return BP_OK;
}

/* Initializer header: name, dims, data type, without touching the data. */
typedef struct ox_tinfo {
    bp__ox_slice name;
    int64_t dims[BP__OX_MAX_RANK];
    int rank;
    int32_t data_type;
} ox_tinfo;

static bp_status ox_walk_tensor(bp__ox *c, bp__ox_slice s, ox_tinfo *ti, const uint8_t *base, bp_error *err)
{
    memset(ti, 0, sizeof *ti);
    ox_rd r = {s.p, s.n ? s.p + s.n : s.p, base};   /* an empty slice may have no pointer */
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

/* Nesting limit (pb_check.c) before protobuf-c's recursive unpacker sees s. */
static bp_status ox_check_depth(bp__ox *c, const ProtobufCMessageDescriptor *d, bp__ox_slice s, const char *what, bp_error *err)
{
    return bp__pb_check(d, s.p, s.n, bp__limits(c->opts->limits)->max_proto_depth, c->file, what, err);
}

bp_status bp__ox_add_initializer(bp__ox *c, bp__ox_slice s, const uint8_t *base, bool sparse, bp_error *err)
{
    ox_tinfo ti;
    bp__ox_slice ts = s;
    int64_t sdims[BP__OX_MAX_RANK];
    int srank = -1;
    if (sparse) {
        /* SparseTensorProto: values (1) is a TensorProto, dims (3) the dense shape */
        ox_rd r = {s.p, s.n ? s.p + s.n : s.p, base};   /* an empty slice may have no pointer */
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
    st = bp__ox_add_tensor(c, (const char *)ti.name.p, ti.name.n, BP__OX_INIT, &id, &ex, err);
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
        if (!tp && c->pa_oom) return bp__ox_oom(c, err);
        if (!tp)
            return bp__err(err, BP_ERR_INVALID, "%s: initializer \"%s\": invalid protobuf", c->file, bp__names_get(&c->tn, id));
        st = bp__ox_tensor_from_proto(c, id, tp, err);
        protobuf_c_message_free_unpacked(&tp->base, &c->pa);
        return st;
    }
    return bp__ox_set_shape(c, id, dt, ti.rank, ti.dims, err);
}

bp_status bp__ox_unpack_vi(bp__ox *c, bp__ox_slice s, const char *what, Onnx__ValueInfoProto **out, bp_error *err)
{
    *out = NULL;
    bp_status ds = ox_check_depth(c, &onnx__value_info_proto__descriptor, s, what, err);
    if (ds) return ds;
    *out = (Onnx__ValueInfoProto *)protobuf_c_message_unpack(&onnx__value_info_proto__descriptor, &c->pa, s.n, s.p);
    if (!*out && c->pa_oom) return bp__ox_oom(c, err);
    if (!*out) return bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in a graph %s", c->file, what);
    if (!(*out)->name || !*(*out)->name) return bp__err(err, BP_ERR_INVALID, "%s: a graph %s has no name", c->file, what);
    return BP_OK;
}

bp_status bp__ox_keep_vi(bp__ox *c, Onnx__ValueInfoProto *vi, bp_error *err)
{
    if (!bp__grow(c->a, (void **)&c->vinfo, &c->cap_vinfo, c->n_vinfo + 1, sizeof *c->vinfo)) {
        protobuf_c_message_free_unpacked(&vi->base, &c->pa);
        return bp__ox_oom(c, err);
    }
    c->vinfo[c->n_vinfo++] = vi;
    return BP_OK;
}

bool bp__ox_is_default_domain(const char *d)
{
    return !d || !*d || !strcmp(d, "ai.onnx");
}

bp_status bp__ox_opsets(bp__ox *c, const bp__ox_model *m, bp_error *err)
{
    c->opset = -1;
    for (size_t i = 0; i < m->opsets.n; i++) {
        bp_status ds = ox_check_depth(c, &onnx__operator_set_id_proto__descriptor, m->opsets.s[i], "opset_import", err);
        if (ds) return ds;
        Onnx__OperatorSetIdProto *op = (Onnx__OperatorSetIdProto *)protobuf_c_message_unpack(
            &onnx__operator_set_id_proto__descriptor, &c->pa, m->opsets.s[i].n, m->opsets.s[i].p);
        if (!op && c->pa_oom) return bp__ox_oom(c, err);
        if (!op) return bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in opset_import", c->file);
        bool def = bp__ox_is_default_domain(op->domain);
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
bool bp__ox_domain_imported(const bp__ox *c, const bp__ox_model *m, const char *domain)
{
    for (size_t i = 0; i < m->opsets.n; i++) {
        ox_rd r = {m->opsets.s[i].p, m->opsets.s[i].p + m->opsets.s[i].n, m->opsets.s[i].p};
        ox_field f = {0};
        bp_error e;
        bp__ox_slice d = {(const uint8_t *)"", 0};
        while (ox_next(&r, &f, c->file, "opset", &e) == 1)
            if (f.num == 1 && f.wt == 2) d = f.s;
        if (d.n == strlen(domain) && !memcmp(d.p, domain, d.n)) return true;
    }
    return false;
}

bp_status bp__ox_unpack_node(bp__ox *c, bp__ox_slice s, const uint8_t *base, size_t k, Onnx__NodeProto **out,
                             bp_error *err)
{
    bp_status st = ox_check_depth(c, &onnx__node_proto__descriptor, s, "a node", err);
    if (st) return st;
    *out = (Onnx__NodeProto *)protobuf_c_message_unpack(&onnx__node_proto__descriptor, &c->pa, s.n, s.p);
    if (!*out && c->pa_oom) return bp__ox_oom(c, err);
    if (!*out) return bp__err(err, BP_ERR_INVALID, "%s: invalid protobuf in node %zu (at byte %zu)", c->file, k, (size_t)(s.p - base));
    return BP_OK;
}

#endif /* BP_HAVE_ONNX */
