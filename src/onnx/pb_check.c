/*
 * pb_check.c — the protobuf pre-scan: protobuf-c's unpacker recurses once per
 * nesting level and has no limit, so before it sees a model this walks the
 * wire format iteratively, with an explicit stack of (message descriptor,
 * end) frames: a length-delimited field whose descriptor says "message" is
 * entered, anything else skipped; malformed wire data (truncated varints or
 * lengths, groups, bad wire types) is an error here.  O(n).
 */
#ifdef BP_HAVE_ONNX
#include "onnx/onnx_internal.h"

/* -------------------------------------------------------- protobuf depth */


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
#else
typedef int bp__pb_check_unused; /* ISO C: a translation unit is not empty */
#endif
