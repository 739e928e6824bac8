/*
 * limits.c — resource limits for untrusted input (include/bufplan_limits.h)
 * and the two pre-scans that enforce nesting limits before a recursive
 * parser sees the input.
 *
 * jansson's parser and protobuf-c's unpacker both recurse once per nesting
 * level, so a small file of deeply nested brackets or sub-messages could
 * exhaust the stack (jansson stops at 2048 levels; protobuf-c has no limit).
 * Both scans are iterative and O(n):
 *   - JSON: a byte state machine (in string / escape / depth) fed chunk by
 *     chunk, so a streamed file is checked as it passes through to jansson;
 *     it also counts the bytes against max_file_bytes.
 *   - protobuf: walks the wire format with an explicit stack of (message
 *     descriptor, end) frames; a length-delimited field whose descriptor says
 *     "message" is entered, anything else is skipped.  Malformed wire data
 *     (truncated varints or lengths, groups, bad wire types) is an error here,
 *     so the recursive unpacker only ever sees what was checked.
 */
#include "core/internal.h"
#include "bufplan_limits.h"

#include <string.h>

static const bp_limits lim_defaults = {
    .max_tensors = UINT64_C(1) << 26,
    .max_ops = UINT64_C(1) << 26,
    .max_name_len = 4096,
    .max_rank = 64,
    .max_json_depth = 64,
    .max_proto_depth = 64,
    .max_tensor_bytes = INT64_MAX,
    .max_total_bytes = UINT64_C(1) << 56,
    .max_file_bytes = UINT64_C(1) << 32,
};

void bp_limits_init(bp_limits *l)
{
    if (l) *l = lim_defaults;
}

const bp_limits *bp__limits(const bp_limits *l) { return l ? l : &lim_defaults; }

bp_status bp_graph_set_limits(bp_graph *g, const bp_limits *l, bp_error *err)
{
    if (!g || !l) return bp__err(err, BP_ERR_USAGE, "bp_graph_set_limits: NULL argument");
    if (l->max_rank > 255)
        return bp__err(err, BP_ERR_USAGE, "%s: max_rank %u is over 255, the most a tensor can hold", g->name, l->max_rank);
    g->lim = *l;
    return BP_OK;
}

void bp_graph_get_limits(const bp_graph *g, bp_limits *out)
{
    if (out) *out = g ? g->lim : lim_defaults;
}

bp_status bp__limits_check_total(const bp_graph *g, bp_error *err)
{
    uint64_t total = 0;
    for (size_t t = 0; t < g->n_t; t++)
        if (!bp__add_u64(total, g->t[t].bytes, &total) || total > g->lim.max_total_bytes)
            return bp__err(err, BP_ERR_LIMIT, "%s: the tensors declare more than %llu bytes in all (bp_limits.max_total_bytes)",
                           g->name, (unsigned long long)g->lim.max_total_bytes);
    return BP_OK;
}

/* ------------------------------------------------------------ JSON depth */

void bp__json_scan_init(bp__json_scan *s, const bp_limits *l)
{
    memset(s, 0, sizeof *s);
    l = bp__limits(l);
    s->max_depth = l->max_json_depth;
    s->max_bytes = l->max_file_bytes;
    s->line = 1;
}

bool bp__json_scan_feed(bp__json_scan *s, const char *p, size_t n)
{
    if (s->failed) return false;
    if (n > s->max_bytes - s->bytes) { s->failed = BP__JSON_SCAN_SIZE; return false; }
    s->bytes += n;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (ch == '\n') s->line++;
        if (s->in_str) {
            if (s->esc) s->esc = 0;
            else if (ch == '\\') s->esc = 1;
            else if (ch == '"') s->in_str = 0;
        } else if (ch == '"') {
            s->in_str = 1;
        } else if (ch == '[' || ch == '{') {
            if (++s->depth > s->max_depth) { s->failed = BP__JSON_SCAN_DEPTH; return false; }
        } else if ((ch == ']' || ch == '}') && s->depth > 0) {
            s->depth--;
        }
    }
    return true;
}

bp_status bp__json_scan_error(const bp__json_scan *s, const char *file, bp_error *err)
{
    if (s->failed == BP__JSON_SCAN_DEPTH)
        return bp__err(err, BP_ERR_LIMIT, "%s:%llu: JSON nested more than %u deep (bp_limits.max_json_depth)", file,
                       (unsigned long long)s->line, s->max_depth);
    return bp__err(err, BP_ERR_LIMIT, "%s: the file is larger than %llu bytes (bp_limits.max_file_bytes)", file,
                   (unsigned long long)s->max_bytes);
}

/* -------------------------------------------------------- protobuf depth */

#ifdef BP_HAVE_ONNX
#include "onnx/onnx_internal.h"

static bool pb_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
    const uint8_t *p = *pp;
    uint64_t x = 0;
    for (int sh = 0; sh < 64; sh += 7) {
        if (p >= end) return false;
        uint8_t b = *p++;
        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) { *pp = p; *v = x; return true; }
    }
    return false;
}

bp_status bp__pb_check(const ProtobufCMessageDescriptor *desc, const void *data, size_t len, uint32_t max_depth,
                       const char *file, const char *what, bp_error *err)
{
    enum { MAXF = 256 };
    struct { const ProtobufCMessageDescriptor *d; const uint8_t *end; } st[MAXF];
    if (max_depth >= MAXF) max_depth = MAXF - 1;
    const uint8_t *p = data, *end = p + len;
    uint32_t top = 0;
    st[0].d = desc;
    st[0].end = end;
    for (;;) {
        while (p == st[top].end) {
            if (top == 0) return BP_OK;
            top--;
        }
        uint64_t tag, v;
        if (!pb_varint(&p, st[top].end, &tag)) goto bad;
        uint32_t wt = (uint32_t)(tag & 7);
        uint64_t num = tag >> 3;
        if (num == 0 || num > 0x1fffffff) goto bad;
        switch (wt) {
        case 0: if (!pb_varint(&p, st[top].end, &v)) goto bad; break;
        case 1: if (st[top].end - p < 8) goto bad; p += 8; break;
        case 5: if (st[top].end - p < 4) goto bad; p += 4; break;
        case 2: {
            if (!pb_varint(&p, st[top].end, &v) || v > (uint64_t)(st[top].end - p)) goto bad;
            const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(st[top].d, (unsigned)num);
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor) {
                if (top + 1 > max_depth)
                    return bp__err(err, BP_ERR_LIMIT, "%s: %s: protobuf messages nested more than %u deep (bp_limits.max_proto_depth)",
                                   file, what, max_depth);
                top++;
                st[top].d = f->descriptor;
                st[top].end = p + v;
            } else {
                p += v;
            }
            break;
        }
        default: goto bad;
        }
    }
bad:
    return bp__err(err, BP_ERR_INVALID, "%s: %s: malformed protobuf data at byte %zu", file, what,
                   (size_t)(p - (const uint8_t *)data));
}
#endif
