/*
 * body.c — the bodies of control-flow ops: graphs of their own attached to an
 * op of the parent, with the list of how each body input and output meets
 * the parent (bp_body_io).  The parent owns its bodies.  Checks run when a
 * body is added (ids, flags, kinds) and when the parent is finalized (the
 * reservation is the op's output and unread, outer values are inputs of the
 * op, so lifetimes in the parent cover every read a body makes).
 */
#include "graph/graph_internal.h"

#include <string.h>

static const char *const body_kinds[BP_BODY_KIND_COUNT] = {"then", "else", "loop", "scan"};

const char *bp_body_kind_name(bp_body_kind k) { return (unsigned)k < BP_BODY_KIND_COUNT ? body_kinds[k] : "unknown"; }

int32_t bp_graph_n_bodies(const bp_graph *g) { return (int32_t)g->n_bodies; }

int32_t bp_graph_n_control_flow(const bp_graph *g)
{
    int32_t n = 0;
    for (size_t i = 0; i < g->n_bodies; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) seen = g->bodies[j].op == g->bodies[i].op;
        n += !seen;
    }
    return n;
}

bp_status bp_graph_body(const bp_graph *g, int32_t i, bp_body_info *out, bp_error *err)
{
    if (i < 0 || (size_t)i >= g->n_bodies) return bp__err(err, BP_ERR_USAGE, "%s: no body %d (the graph has %zu)", g->name, (int)i, g->n_bodies);
    const bp__body *b = &g->bodies[i];
    *out = (bp_body_info){b->op, b->kind, b->g, b->reserve, b->n_io, b->io};
    return BP_OK;
}

int32_t bp__op_bodies(const bp_graph *g, int32_t op, int32_t *idx, int32_t cap)
{
    int32_t n = 0;
    for (size_t i = 0; i < g->n_bodies; i++)
        if (g->bodies[i].op == op) { if (n < cap) idx[n] = (int32_t)i; n++; }
    return n;
}



/* One io entry against the body and the parent: ids in range, the body
 * tensor flagged as the kind needs, a parent tensor where the kind needs one,
 * the kind allowed for the body kind. */
static bp_status check_io(const bp_graph *g, const bp_graph *body, bp_body_kind kind, const bp_body_io *e, int n_io, int k,
                          const char *opn, bp_error *err)
{
    if ((unsigned)e->kind >= BP_BODY_IO_COUNT) return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body io %d has an unknown kind %d", g->name, opn, k, (int)e->kind);
    if (e->body_tensor < 0 || e->body_tensor >= (int32_t)body->n_t)
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body io %d names tensor %d, not in the body", g->name, opn, k, (int)e->body_tensor);
    if (e->parent < -1 || e->parent >= (int32_t)g->n_t)
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body io %d names parent tensor %d, not in the graph", g->name, opn, k, (int)e->parent);
    const char *bn = bp__names_get(&body->tnames, e->body_tensor);
    unsigned need = bp__body_io_is_input(e->kind) ? BP_TENSOR_INPUT : BP_TENSOR_OUTPUT;
    if (!(body->t[e->body_tensor].flags & need))
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body tensor \"%s\" is not a body %s", g->name, opn, bn,
                       need == BP_TENSOR_INPUT ? "input" : "output");
    bool loop = kind == BP_BODY_LOOP || kind == BP_BODY_SCAN;
    if ((e->kind == BP_BODY_ITER || e->kind == BP_BODY_COND) && kind != BP_BODY_LOOP)
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body tensor \"%s\": an iteration number or condition only in a loop body", g->name, opn, bn);
    if ((e->kind == BP_BODY_CARRIED || e->kind == BP_BODY_STACK) && !loop)
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body tensor \"%s\": carried and stacked values only in loop and scan bodies", g->name, opn, bn);
    if (e->kind == BP_BODY_SLICE && kind != BP_BODY_SCAN)
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body tensor \"%s\": slices only in a scan body", g->name, opn, bn);
    bool parent_needed = e->kind == BP_BODY_OUTER || e->kind == BP_BODY_CARRIED || e->kind == BP_BODY_SLICE || e->kind == BP_BODY_STACK;
    if (parent_needed && e->parent < 0)
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body tensor \"%s\" needs a parent tensor", g->name, opn, bn);
    bool linked = (e->kind == BP_BODY_CARRIED || e->kind == BP_BODY_COND) && loop;
    if (linked && (e->link < 0 || e->link >= n_io))
        return bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": body tensor \"%s\" is carried but links to no body output", g->name, opn, bn);
    return BP_OK;
}

bp_status bp_graph_add_body(bp_graph *g, int32_t op, bp_body_kind kind, bp_graph *body, int32_t reserve, int n_io,
                            const bp_body_io *io, bp_error *err)
{
    bp_status s = BP_OK;
    if (!body) return bp__err(err, BP_ERR_USAGE, "%s: bp_graph_add_body: body is NULL", g->name);
    if (op < 0 || (size_t)op >= g->n_o) s = bp__err(err, BP_ERR_USAGE, "%s: bp_graph_add_body: no op %d", g->name, (int)op);
    else if ((unsigned)kind >= BP_BODY_KIND_COUNT) s = bp__err(err, BP_ERR_USAGE, "%s: bp_graph_add_body: unknown body kind %d", g->name, (int)kind);
    else if (!body->finalized) s = bp__err(err, BP_ERR_USAGE, "%s: bp_graph_add_body: the body \"%s\" is not finalized", g->name, body->name);
    else if (n_io < 0 || (n_io && !io)) s = bp__err(err, BP_ERR_USAGE, "%s: bp_graph_add_body: bad io list", g->name);
    else if (reserve < 0 || (size_t)reserve >= g->n_t || g->t[reserve].producer != op)
        s = bp__err(err, BP_ERR_USAGE, "%s: op \"%s\": the reservation must be an output of the op", g->name, bp__names_get(&g->onames, op));
    for (int k = 0; k < n_io && !s; k++) s = check_io(g, body, kind, &io[k], n_io, k, bp__names_get(&g->onames, op), err);
    bp__body *b = NULL;
    if (!s && !bp__grow(&g->alloc, (void **)&g->bodies, &g->cap_bodies, g->n_bodies + 1, sizeof *g->bodies))
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory adding a body", g->name);
    if (!s) {
        b = &g->bodies[g->n_bodies];
        b->io = bp__alloc(&g->alloc, (size_t)(n_io ? n_io : 1) * sizeof *b->io);
        if (!b->io) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory adding a body", g->name);
    }
    if (s) { bp_graph_free(body); return s; }
    if (n_io) memcpy(b->io, io, (size_t)n_io * sizeof *io);
    b->op = op;
    b->kind = kind;
    b->g = body;
    b->reserve = reserve;
    g->t[reserve].is_reserve = 1;
    b->n_io = n_io;
    g->n_bodies++;
    bp__graph_unfinalize(g);   /* the checks of finalize must run again */
    return BP_OK;
}

