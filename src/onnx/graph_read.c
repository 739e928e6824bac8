/*
 * graph_read.c — bp_graph_read: one entry point for every graph file.  It
 * skips leading white space and picks the reader by the first byte: '{' is a
 * bufplan-graph JSON document (graph/graph_json.c), anything else is read as
 * an ONNX model (when built with ONNX support).
 */
#include "graph/graph_internal.h"
#include "bufplan_onnx.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bp_status bp_graph_read(const char *path, const bp_allocator *alloc, bp_graph **out, bp_error *err)
{
    return bp_graph_read_lim(path, NULL, alloc, out, err);
}

bp_status bp_graph_read_lim(const char *path, const bp_limits *lim, const bp_allocator *alloc, bp_graph **out,
                            bp_error *err)
{
    if (!out || !path) return bp__err(err, BP_ERR_USAGE, "bp_graph_read: NULL argument");
    *out = NULL;
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) return bp__err(err, BP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    int ch;
    while ((ch = getc(f)) == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {}
    bool bad = ferror(f) != 0;
    if (is_stdin) { if (ch != EOF) ungetc(ch, f); }
    else fclose(f);
    if (bad) return bp__err(err, BP_ERR_IO, "%s: read error", path);
    if (ch == EOF) return bp__err(err, BP_ERR_INVALID, "%s: the file is empty", path);
    if (ch == '{') return bp__graph_read_json_lim(path, lim, alloc, out, err);
#ifdef BP_HAVE_ONNX
    bp_onnx_options oo;
    bp_onnx_options_init(&oo);
    oo.limits = lim;
    return bp_onnx_read(path, &oo, alloc, out, err);
#else
    return bp__err(err, BP_ERR_UNSUPPORTED,
                   "%s: not a JSON graph (it does not start with '{'), and this bufplan was built without ONNX support",
                   path);
#endif
}
