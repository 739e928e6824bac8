/*
 * digest.c — reference kernels that make corruption visible, and
 * bp_exec_verify (planned run vs safe run).
 *
 * A digest kernel first hashes every input completely (an output may share
 * an input's bytes: in-place writes, views), then fills each output from a
 * splitmix64 stream seeded by the op id, the output index and the input
 * hashes.  So an output is a function of exactly its inputs' contents: a
 * byte of a live tensor overwritten by another tenant changes the hash of
 * every reader, and from there every output downstream.  A view output is a
 * copy of its input's first bytes (nothing is written when they share them),
 * so views agree between modes that share bytes and modes that do not.
 * Likewise a Concat copies its inputs and a Split its pieces (contiguous
 * ones), so slices in place (concat_inplace) and copies agree.
 *
 * bp_exec_verify runs the plan and a safe run (every tensor its own buffer)
 * with hashes of every input as read and every output as written; the first
 * input (in plan order) whose hash differs names the corrupted tensor, and
 * the plan says which tensors were placed over its bytes while it was live.
 */
#include "exec/exec_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void dg_fill(unsigned char *p, uint64_t bytes, uint64_t seed)
{
    uint64_t x = seed;
    while (bytes >= 8) {
        x += 0x9e3779b97f4a7c15ull;
        uint64_t w = bp__dg_mix(x);
        memcpy(p, &w, 8);
        p += 8;
        bytes -= 8;
    }
    if (bytes) {
        x += 0x9e3779b97f4a7c15ull;
        uint64_t w = bp__dg_mix(x);
        memcpy(p, &w, (size_t)bytes);
    }
}

static void dg_spin(double us)
{
    if (us <= 0) return;
    double end = bp__now() + us * 1e-6;
    while (bp__now() < end) {}
}

/* A Concat or a Split whose pieces are contiguous ranges (graph/concat.c)
 * moves bytes instead of hashing them, so that a plan that puts the pieces
 * in place (concat_inplace) and a safe run give the same bytes: the pieces
 * are copied where their pointers differ, left alone where they sit in
 * place already.  Returns false (nothing done) for any other op. */
static bool dg_pieces(const bp_exec_call *c)
{
    const bp_graph *g = c->graph;
    uint64_t stack[16], *offs = stack;
    int n = c->n_in > c->n_out ? c->n_in : c->n_out;
    if (!g || c->op < 0 || n < 1) return false;
    if (n > 16 && !(offs = malloc((size_t)n * sizeof *offs))) return false;
    bool cat = bp__concat_layout(g, c->op, offs), split = !cat && bp__split_layout(g, c->op, offs);
    if (cat && c->out[0].data)
        for (int i = 0; i < c->n_in; i++) {
            char *dst = (char *)c->out[0].data + offs[i];
            if (c->in[i].bytes && dst != c->in[i].data) memmove(dst, c->in[i].data, (size_t)c->in[i].bytes);
        }
    if (split && c->in[0].data)
        for (int k = 0; k < c->n_out; k++) {
            const char *src = (const char *)c->in[0].data + offs[k];
            if (c->out[k].bytes && c->out[k].data != src) memmove(c->out[k].data, src, (size_t)c->out[k].bytes);
        }
    if (offs != stack) free(offs);
    return cat || split;
}

int bp_digest_kernel(void *user, const bp_exec_call *c, bp_error *err)
{
    const bp_digest_options *o = user;
    if (o) {
        dg_spin(o->spin_us);
        if (o->fail_op == c->op) {
            snprintf(err->msg, sizeof err->msg, "digest kernel told to fail at op %d", (int)c->op);
            return 3;
        }
    }
    if (dg_pieces(c)) return 0;
    uint64_t h = bp__dg_mix((uint64_t)c->op * 0x9e3779b97f4a7c15ull + (uint64_t)c->n_in);
    for (int i = 0; i < c->n_in; i++) h = bp__dg_mix(h ^ bp_digest_hash(c->in[i].data, c->in[i].bytes, (uint64_t)i));
    for (int k = 0; k < c->n_out; k++) {
        const bp_exec_buf *b = &c->out[k];
        if (!b->data || !b->bytes) continue;
        int v = b->view_of_input;
        if (v >= 0 && v < c->n_in) {
            const bp_exec_buf *src = &c->in[v];
            uint64_t n = src->bytes < b->bytes ? src->bytes : b->bytes;
            if (b->data != src->data && n) memmove(b->data, src->data, (size_t)n);
            if (b->bytes > n) dg_fill((unsigned char *)b->data + n, b->bytes - n, bp__dg_mix(h + (uint64_t)k));
            continue;
        }
        dg_fill(b->data, b->bytes, bp__dg_mix(h ^ ((uint64_t)k + 1) * 0xd6e8feb86659fd93ull));
    }
    return 0;
}

bp_status bp_digest_fill_inputs(bp_exec *ex, uint64_t seed, bp_error *err)
{
    if (!ex) return bp__err(err, BP_ERR_USAGE, "exec: digest fill: NULL executor");
    for (int32_t t = 0; t < ex->nt; t++) {
        if (ex->root[t] != t || !ex->external[t] || ex->g->t[t].producer >= 0) continue;
        const char *name = bp_graph_tensor_name(ex->g, t);
        uint64_t s = bp_digest_hash(name, strlen(name), seed);
        if (ex->sptr[t] && ex->tbytes[t]) dg_fill(ex->sptr[t], ex->tbytes[t], s);
    }
    return BP_OK;
}

/* ------------------------------------------------------------------ verify */

/* Appends to err->msg. */
static void vf_add(bp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vf_add(bp_error *err, const char *fmt, ...)
{
    if (!err) return;
    size_t len = strlen(err->msg);
    if (len + 1 >= sizeof err->msg) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + len, sizeof err->msg - len, fmt, ap);
    va_end(ap);
}

/* Bodies of control flow, recursively: the first tensor (its body graph in
 * *bg) that a body's op read with other contents in the two runs; -1 when all
 * agree.  *n counts the body tensors compared. */
static int32_t vf_bodies(const bp_exec *pe, const bp_exec *se, const bp_graph **bg, uint64_t *n)
{
    for (int32_t i = 0; i < pe->n_child && i < se->n_child; i++) {
        const bp_exec *a = pe->child[i], *b = se->child[i];
        const bp_graph *g = a->g;
        if (!a->io_hash || !b->io_hash) continue;
        for (int32_t op = 0; op < a->no; op++)
            for (int k = 0; k < g->o[op].n_in; k++) {
                uint32_t q = a->io_off[op] + (uint32_t)k;
                (*n)++;
                if (a->io_hash[q] != b->io_hash[q]) { *bg = g; return bp__op_in(g, op)[k]; }
            }
        int32_t t = vf_bodies(a, b, bg, n);
        if (t >= 0) return t;
    }
    return -1;
}

static bp_status vf_one(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o, uint64_t seed,
                        FILE *report, bp_error *err)
{
    if (!g || !plan) return bp__err(err, BP_ERR_USAGE, "exec: verify: NULL graph or plan");
    bp_exec_options po, so;
    if (o) po = *o; else bp_exec_options_init(&po);
    po.mode = BP_EXEC_PLANNED;
    po.check_hashes = 1;
    so = po;
    so.mode = BP_EXEC_SAFE;
    so.threads = 1;
    so.history = 0;
    bp_exec *pe = NULL, *se = NULL;
    bp_status s = bp_exec_new(g, plan, &po, &pe, err);
    if (!s) s = bp_exec_new(g, plan, &so, &se, err);
    if (s) goto done;
    bp_exec_set_kernel(pe, bp_digest_kernel, NULL);
    bp_exec_set_kernel(se, bp_digest_kernel, NULL);
    if ((s = bp_digest_fill_inputs(pe, seed, err)) || (s = bp_digest_fill_inputs(se, seed, err))) goto done;
    if ((s = bp_exec_run(se, NULL, err))) goto done;
    if ((s = bp_exec_run(pe, NULL, err))) goto done;

    /* first input, in plan order, read with other contents than in the safe run */
    int32_t bad_t = -1, bad_op = -1, bad_step = -1;
    for (int32_t st = 0; st < pe->no && bad_t < 0; st++) {
        int32_t op = pe->order[st];
        for (int i = 0; i < g->o[op].n_in; i++) {
            uint32_t k = pe->io_off[op] + (uint32_t)i;
            if (pe->io_hash[k] != se->io_hash[k]) { bad_t = bp__op_in(g, op)[i]; bad_op = op; bad_step = st; break; }
        }
    }
    /* outputs byte for byte */
    int32_t bad_out = -1;
    uint64_t bad_byte = 0, n_out = 0, out_bytes = 0;
    for (int32_t t = 0; t < pe->nt; t++) {
        if (!(g->t[t].flags & BP_TENSOR_OUTPUT)) continue;
        uint64_t nb1, nb2;
        const unsigned char *a = bp_exec_tensor_data(pe, t, &nb1), *b = bp_exec_tensor_data(se, t, &nb2);
        n_out++;
        out_bytes += nb1;
        if (nb1 != nb2 || (nb1 && (!a || !b))) { if (bad_out < 0) { bad_out = t; bad_byte = 0; } continue; }
        if (nb1 && memcmp(a, b, (size_t)nb1)) {
            if (bad_out < 0) {
                bad_out = t;
                uint64_t i = 0;
                while (i < nb1 && a[i] == b[i]) i++;
                bad_byte = i;
            }
        }
    }
    const bp_graph *bad_bg = NULL;
    uint64_t n_body = 0;
    int32_t bad_body_t = vf_bodies(pe, se, &bad_bg, &n_body);
    if (bad_body_t >= 0) {
        s = bp__err(err, BP_ERR_VERIFY, "%s: the planned run (%d thread%s) differs from the safe run inside body \"%s\": tensor \"%s\" was read with other contents",
                    g->name, po.threads, po.threads == 1 ? "" : "s", bad_bg->name, bp_graph_tensor_name(bad_bg, bad_body_t));
        if (report) fprintf(report, "verify: FAILED: %s\n", err ? err->msg : "");
        goto done;
    }
    if (bad_t < 0 && bad_out < 0) {
        if (report)
            fprintf(report, "verify: ok: %s run on %d thread%s matches the safe run (%" PRIu64 " outputs, %" PRIu64
                    " bytes, every tensor as read%s)\n", bp_exec_mode_name(po.mode), po.threads, po.threads == 1 ? "" : "s",
                    n_out, out_bytes, n_body ? ", bodies of control flow included" : "");
        s = BP_OK;
        goto done;
    }
    s = bp__err(err, BP_ERR_VERIFY, "%s: the planned run (%d thread%s) differs from the safe run", g->name, po.threads,
                po.threads == 1 ? "" : "s");
    if (bad_t >= 0) {
        int32_t pr = g->t[bad_t].producer;
        vf_add(err, ": first tensor whose contents differ: \"%s\"", bp_graph_tensor_name(g, bad_t));
        if (pr >= 0) {
            uint32_t wk = pe->io_off[pr];
            int wi = -1;
            for (int k = 0; k < g->o[pr].n_out; k++) if (bp__op_out(g, pr)[k] == bad_t) wi = k;
            bool written_ok = wi >= 0 && pe->io_hash[wk + (uint32_t)g->o[pr].n_in + (uint32_t)wi] ==
                                         se->io_hash[wk + (uint32_t)g->o[pr].n_in + (uint32_t)wi];
            vf_add(err, " (written %s by op \"%s\" at step %d, read %s by op \"%s\" at step %d)",
                   written_ok ? "correctly" : "already wrong", bp__names_get(&g->onames, pr), (int)pe->step[pr],
                   "changed", bp__names_get(&g->onames, bad_op), (int)bad_step);
        } else {
            vf_add(err, " (an input, read changed by op \"%s\" at step %d)", bp__names_get(&g->onames, bad_op), (int)bad_step);
        }
        /* the tensors placed over its bytes while it was live */
        const bp_tensor_plan *vt = &plan->tp[bad_t];
        int32_t vr = vt->alias_of >= 0 ? vt->alias_of : bad_t;
        uint64_t voff = vt->offset != BP_NO_OFFSET ? vt->offset : plan->tp[vr].offset;
        if (voff != BP_NO_OFFSET) {
            uint64_t vend = voff + g->t[bad_t].bytes;
            int32_t vfirst = pr >= 0 ? pe->step[pr] : 0;
            int n_named = 0;
            vf_add(err, "; it is at arena bytes [%" PRIu64 ", %" PRIu64 "), shared while it was live with", voff, vend);
            for (int pass = 0; pass < 2 && !n_named; pass++)
                for (int32_t u = 0; u < pe->nt; u++) {
                    const bp_tensor_plan *ut = &plan->tp[u];
                    int32_t ur = ut->alias_of >= 0 ? ut->alias_of : u;
                    if (ur == vr || ut->offset == BP_NO_OFFSET) continue;
                    uint64_t uend = ut->offset + g->t[u].bytes;
                    if (ut->offset >= vend || uend <= voff) continue;
                    int32_t up = g->t[u].producer;
                    int32_t us = up >= 0 ? pe->step[up] : 0;
                    if (!pass && (us < vfirst || us > bad_step)) continue;  /* pass 1: any tenant of the bytes */
                    if (n_named < 8)
                        vf_add(err, "%s \"%s\" (op \"%s\", step %d, bytes [%" PRIu64 ", %" PRIu64 "))", n_named ? "," : "",
                               bp_graph_tensor_name(g, u), up >= 0 ? bp__names_get(&g->onames, up) : "-", (int)us,
                               ut->offset, uend);
                    n_named++;
                }
            if (!n_named) vf_add(err, " no other tensor");
            else if (n_named > 8) vf_add(err, " and %d more", n_named - 8);
        }
    }
    if (bad_out >= 0)
        vf_add(err, "; output \"%s\" differs (first at byte %" PRIu64 ")", bp_graph_tensor_name(g, bad_out), bad_byte);
    else
        vf_add(err, "; the outputs agree (the corrupted value did not reach them)");
    if (report) fprintf(report, "verify: FAILED: %s\n", err ? err->msg : "");
done:
    bp_exec_free(pe);
    bp_exec_free(se);
    return s;
}

bp_status bp_exec_verify(const bp_graph *g, const bp_plan *plan, const bp_exec_options *o, uint64_t seed,
                         FILE *report, bp_error *err)
{
    /* a plan bug shows deterministically on one thread; on N threads a
     * missing fence shows (when the race is lost): check both */
    bp_exec_options one;
    if (o) one = *o; else bp_exec_options_init(&one);
    int threads = one.threads;
    one.threads = 1;
    bp_status s = vf_one(g, plan, &one, seed, report, err);
    if (s || threads <= 1) return s;
    one.threads = threads;
    return vf_one(g, plan, &one, seed, report, err);
}
