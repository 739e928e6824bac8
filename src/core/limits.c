/*
 * limits.c — resource limits for untrusted input (include/bufplan_limits.h):
 * the defaults, and the JSON pre-scan that enforces nesting limits before a
 * recursive parser sees the input (the protobuf one is onnx/pb_check.c; a
 * graph's own limits are graph/limits.c).
 *
 * jansson's parser and protobuf-c's unpacker both recurse once per nesting
 * level, so a small file of deeply nested brackets or sub-messages could
 * exhaust the stack (jansson stops at 2048 levels; protobuf-c has no limit).
 * Both scans are iterative and O(n):
 *   - JSON (here): a byte state machine (in string / escape / depth) fed chunk by
 *     chunk, so a streamed file is checked as it passes through to jansson;
 *     it also counts the bytes against max_file_bytes.
 *   - protobuf (onnx/pb_check.c): walks the wire format with an explicit stack of (message
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
