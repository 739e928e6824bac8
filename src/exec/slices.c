/*
 * slices.c — Concat slices and Split outputs at an offset in the executor
 * (plans made with concat_inplace, docs/EXECUTOR.md).
 *
 * A tensor of the plan may start inside its storage: its address is the
 * storage's plus its view_offset (ex->voff).  Two kinds of tensors then
 * write no bytes of their own and are no tenants (ex->inside): a Split
 * output that sits where its piece of the input is (a view of that input),
 * and a Concat output whose every input sits where its piece of the output
 * is (the inputs' producers wrote it; the Concat kernel has nothing to copy).
 * Both are decided from the plan's placements alone, so a plan that puts
 * them elsewhere gets ordinary tenants.  Safe mode has neither.
 */
#include "exec/exec_internal.h"

#include <string.h>

/* Is t (made by a Split) at its piece of the Split's input 0?  Is t (made by
 * a Concat) made of its inputs in place? */
static int32_t sl_inside(const bp_exec *ex, int32_t t, uint64_t *offs)
{
    const bp_graph *g = ex->g;
    int32_t pr = g->t[t].producer;
    if (pr < 0) return -1;
    const bp__op *x = &g->o[pr];
    const int32_t *in = bp__op_in(g, pr), *out = bp__op_out(g, pr);
    if (bp__split_layout(g, pr, offs)) {
        for (int k = 0; k < x->n_out; k++)
            if (out[k] == t && ex->root[in[0]] == ex->root[t] && ex->voff[in[0]] + offs[k] == ex->voff[t]) return in[0];
        return -1;
    }
    if (!bp__concat_layout(g, pr, offs)) return -1;
    for (int i = 0; i < x->n_in; i++)
        if (ex->root[in[i]] != ex->root[t] || ex->voff[in[i]] != ex->voff[t] + offs[i] || in[i] == t) return -1;
    return -2;
}

void bp__exec_slices_fill(bp_exec *ex)
{
    const bp_plan *p = ex->plan;
    bool any = false;
    for (int32_t t = 0; t < ex->nt; t++) {
        ex->voff[t] = ex->o.mode == BP_EXEC_SAFE || p->tp[t].alias_of < 0 ? 0 : p->tp[t].view_offset;
        ex->inside[t] = -1;
        any |= ex->voff[t] != 0 || (p->tp[t].alias_of >= 0 && ex->o.mode != BP_EXEC_SAFE);
    }
    if (!any) return;
    size_t n = ex->g->n_io ? ex->g->n_io : 1;
    uint64_t *offs = bp__alloc(&ex->a, n * sizeof *offs);
    if (!offs) return;   /* every tensor a tenant: more fences, never fewer */
    for (int32_t t = 0; t < ex->nt; t++) ex->inside[t] = sl_inside(ex, t, offs);
    bp__free(&ex->a, offs, n * sizeof *offs);
}
