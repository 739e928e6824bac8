/*
 * views.c — the bytes a broadcast view may touch.  A broadcast view (the
 * output of aten.expand or aten.as_strided, or a view of one) claims more
 * bytes than its root holds: its elements repeat.  The executor gives it
 * only its root's bytes, so no kernel is handed, and no mode copies or
 * reads, more than the root holds (docs/EXECUTOR.md).  One O(T) pass over
 * the graph's view roots (graph/view_bytes.c).
 */
#include "exec/exec_internal.h"

bp_status bp__exec_clamp_views(const bp_graph *g, uint64_t *tbytes, bp_error *err)
{
    bp__view_info vi;
    bp_status s = bp__view_info_build(g, &vi, err);
    if (s) return s;
    for (size_t t = 0; t < g->n_t; t++) {
        int32_t r = vi.root[t];
        if (vi.bcast[t] && !g->t[r].dynamic && tbytes[t] > g->t[r].bytes) tbytes[t] = g->t[r].bytes;
    }
    bp__view_info_free(g, &vi);
    return BP_OK;
}
