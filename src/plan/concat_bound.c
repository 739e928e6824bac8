/*
 * concat_bound.c — a floor on the arena of any Concat-in-place choice for
 * one order (bp_concat_bound; docs/design/concat_bound.md).
 *
 * Between step b and step b+1 of the order, every storage produced at or
 * before b and read after b (or holding a graph output) is live, and two
 * live storages may share bytes only where they hold the same values: a
 * Concat slice and the Concat's output.  So each planned storage (the view
 * groups of bp__storage_build, no merge) is cut into atoms: the output of a
 * contiguous Concat (bp__concat_layout) is the union of its inputs' atoms
 * (an input that fills its own planned storage, recursively; any other input
 * is an atom private to this output, as it must be copied in, and so is a
 * second copy of the same atom); an output of a contiguous Split may be a
 * view into its input and has no atoms (a looser floor, never a wrong one);
 * any other storage is one atom.  The bytes of the distinct atoms covered by the
 * storages live across b are needed there under every merge choice, partial
 * or whole, and every in-place rule (an in-place write joins a dying input,
 * never one live across the boundary).  The floor is the largest such sum; it
 * is a floor for this order only (another order may need less).  A sweep
 * over the boundaries with a count per atom: O(V + E + A), A the atoms
 * summed over storages (DenseNet's nested prefixes: quadratic in a block's
 * length), capped at BP__CB_MAX_ATOMS.
 */
#include "plan/plan_internal.h"

#include <assert.h>
#include <string.h>

#define BP__CB_MAX_ATOMS ((size_t)1 << 26)

typedef struct cb {
    const bp_graph *g;
    const bp_allocator *a;
    bp__storage st;
    int32_t *def, *last;     /* per root: first producer step, last reader step (n: a graph output) */
    uint32_t *aoff, *aend;   /* per root: its atoms are atom[aoff .. aend) */
    int32_t *atom;           /* atom ids: a root tensor id, or n_t + k for private atom k */
    uint64_t *abytes;        /* per atom id */
    int32_t *seen;           /* per tensor: the root whose atoms last listed it */
    size_t n_atom, cap_atom, n_priv, cap_priv;
} cb;

static bool cb_push(cb *c, int32_t id)
{
    if (c->n_atom == c->cap_atom) {
        size_t nc = c->cap_atom ? 2 * c->cap_atom : 1024;
        if (nc > BP__CB_MAX_ATOMS) return false;
        int32_t *x = bp__realloc(c->a, c->atom, c->cap_atom * sizeof *x, nc * sizeof *x);
        if (!x) return false;
        c->atom = x;
        c->cap_atom = nc;
    }
    c->atom[c->n_atom++] = id;
    return true;
}

static bool cb_priv(cb *c, uint64_t bytes, int32_t *id)
{
    size_t nt = c->g->n_t;
    if (c->n_priv == c->cap_priv) {
        size_t nc = c->cap_priv ? 2 * c->cap_priv : 256;
        if (nt + nc > INT32_MAX) return false;
        uint64_t *x = bp__realloc(c->a, c->abytes, (nt + c->cap_priv) * sizeof *x, (nt + nc) * sizeof *x);
        if (!x) return false;
        c->abytes = x;
        int32_t *y = bp__realloc(c->a, c->seen, (nt + c->cap_priv) * sizeof *y, (nt + nc) * sizeof *y);
        if (!y) return false;
        c->seen = y;
        c->cap_priv = nc;
    }
    c->abytes[nt + c->n_priv] = bytes;
    c->seen[nt + c->n_priv] = -1;
    *id = (int32_t)(nt + c->n_priv++);
    return true;
}

/* The atoms of root r, appended at aoff[r] (every root made earlier in the
 * order already has its own).  False when out of memory or past the cap. */
static bool cb_atoms(cb *c, int32_t r, uint64_t *offs, const int32_t *spos)
{
    const bp_graph *g = c->g;
    int32_t pr = g->t[r].producer;
    c->aoff[r] = (uint32_t)c->n_atom;
    if (pr >= 0 && bp__split_layout(g, pr, offs) && c->st.planned[c->st.root[bp__op_in(g, pr)[0]]]) {
        c->aend[r] = c->aoff[r];   /* may be a view into its input's bytes: counted as nothing */
        return true;
    }
    if (pr < 0 || g->o[pr].n_out != 1 || !bp__concat_layout(g, pr, offs)) {
        bool ok = cb_push(c, r);
        c->aend[r] = (uint32_t)c->n_atom;
        return ok;
    }
    for (int i = 0; i < g->o[pr].n_in; i++) {
        int32_t x = bp__op_in(g, pr)[i], ri = c->st.root[x];
        bool shared = ri != r && c->st.planned[ri] && g->t[x].bytes == g->t[ri].bytes && spos[ri] >= 0 && spos[ri] < spos[r];
        if (!shared) {
            int32_t id;
            if (!cb_priv(c, g->t[x].bytes, &id) || !cb_push(c, id)) return false;
            continue;
        }
        for (uint32_t k = c->aoff[ri]; k < c->aend[ri]; k++)
            if (!cb_push(c, c->atom[k])) return false;
    }
    c->aend[r] = (uint32_t)c->n_atom;
    /* an atom twice in r (one map concatenated twice) is two copies there */
    for (uint32_t k = c->aoff[r]; k < c->aend[r]; k++) {
        int32_t id = c->atom[k];
        if (c->seen[id] != r) { c->seen[id] = r; continue; }
        if (!cb_priv(c, c->abytes[id], &c->atom[k])) return false;
    }
    return true;
}

/* May root r, made at step st by op, be written over an input whose
 * storage dies at st (same bytes)?  Generous on purpose: any op type. */
static bool cb_may_overwrite(const cb *c, int32_t op, int32_t r, int32_t st)
{
    const bp_graph *g = c->g;
    for (int i = 0; i < g->o[op].n_in; i++) {
        int32_t x = bp__op_in(g, op)[i], rx = c->st.root[x];
        if (rx != r && c->st.planned[rx] && c->last[rx] == st && g->t[rx].bytes == g->t[r].bytes) return true;
    }
    return false;
}

bp_status bp_concat_bound(const bp_graph *g, const bp_plan_options *opts, const int32_t *order, bp_concat_bound_info *out,
                          bp_error *err)
{
    if (!g || !order || !out) return bp__err(err, BP_ERR_USAGE, "bp_concat_bound: a NULL argument");
    memset(out, 0, sizeof *out);
    out->step = out->op = -1;
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: bp_concat_bound needs a finalized graph", g->name);
    if (g->n_bodies) return bp__err(err, BP_ERR_UNSUPPORTED, "%s: bp_concat_bound: a graph with control flow is not supported", g->name);
    bp_plan_options o;
    if (opts) o = *opts;
    else bp_plan_options_init(&o);
    o.concat_inplace = 0;
    size_t nt = g->n_t, no = g->n_o, nt1 = nt ? nt : 1, no1 = no ? no : 1, nio = g->n_io ? g->n_io : 1;
    cb c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.a = &g->alloc;
    bp_status s = bp__storage_build(g, &o, &c.st, err);
    if (s) return s;
    int32_t *pos = bp__alloc(c.a, no1 * sizeof *pos), *spos = bp__alloc(c.a, nt1 * sizeof *spos);
    int32_t *cnt = NULL, *byroot = bp__alloc(c.a, nt1 * sizeof *byroot);
    uint64_t *offs = bp__alloc(c.a, nio * sizeof *offs);
    c.def = bp__alloc(c.a, nt1 * sizeof *c.def);
    c.last = bp__alloc(c.a, nt1 * sizeof *c.last);
    c.aoff = bp__alloc(c.a, nt1 * sizeof *c.aoff);
    c.aend = bp__alloc(c.a, nt1 * sizeof *c.aend);
    c.seen = bp__alloc(c.a, nt1 * sizeof *c.seen);   /* grows with abytes (cb_priv) */
    c.abytes = bp__alloc(c.a, nt1 * sizeof *c.abytes);
    c.cap_priv = nt1 - nt;   /* abytes and seen hold nt + cap_priv entries */
    int32_t *hd = bp__alloc(c.a, (no + 1) * sizeof *hd), *hl = bp__alloc(c.a, (no + 1) * sizeof *hl);
    int32_t *nd = bp__alloc(c.a, nt1 * sizeof *nd), *nl = bp__alloc(c.a, nt1 * sizeof *nl);
    if (!pos || !spos || !byroot || !offs || !c.def || !c.last || !c.aoff || !c.aend || !c.seen || !c.abytes || !hd || !hl || !nd || !nl) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory computing the Concat floor", g->name);
        goto done;
    }
    for (size_t i = 0; i < no; i++) pos[i] = -1;
    for (size_t i = 0; i < no; i++) {
        int32_t op = order[i];
        if (op < 0 || (size_t)op >= no || pos[op] >= 0) {
            s = bp__err(err, BP_ERR_USAGE, "%s: bp_concat_bound: the order is no permutation of the ops (entry %zu)", g->name, i);
            goto done;
        }
        pos[op] = (int32_t)i;
    }
    /* storage intervals over the members of each root */
    for (size_t t = 0; t < nt; t++) { c.def[t] = INT32_MAX; c.last[t] = -1; spos[t] = -1; c.abytes[t] = g->t[t].bytes; c.seen[t] = -1; }
    for (size_t t = 0; t < nt; t++) {
        int32_t r = c.st.root[t], pr = g->t[t].producer;
        if (pr >= 0 && pos[pr] < c.def[r]) c.def[r] = pos[pr];
        for (int32_t k = g->cons_off[t]; k < g->cons_off[t + 1]; k++)
            if (pos[g->cons[k]] > c.last[r]) c.last[r] = pos[g->cons[k]];
        if (g->t[t].flags & BP_TENSOR_OUTPUT) c.last[r] = (int32_t)no;
    }
    /* roots in order of their first step (a root made by an op: its producer) */
    size_t nr = 0;
    for (size_t i = 0; i < no; i++) {
        int32_t op = order[i];
        for (int k = 0; k < g->o[op].n_out; k++) {
            int32_t t = bp__op_out(g, op)[k];
            if (c.st.root[t] == t && spos[t] < 0) { spos[t] = (int32_t)nr; byroot[nr++] = t; }
        }
    }
    for (size_t i = 0; i < nr; i++)
        if (!cb_atoms(&c, byroot[i], offs, spos)) {
            s = c.n_atom + 1 >= BP__CB_MAX_ATOMS
                    ? bp__err(err, BP_ERR_LIMIT, "%s: bp_concat_bound: more than %zu Concat atoms", g->name, BP__CB_MAX_ATOMS)
                    : bp__err(err, BP_ERR_NOMEM, "%s: out of memory computing the Concat floor", g->name);
            goto done;
        }
    /* planned roots by the step they are made at (def) and the step of their
     * last read (last; a root never read dies where it is made) */
    cnt = bp__calloc(c.a, nt + c.n_priv + 1, sizeof *cnt);
    if (!cnt) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory computing the Concat floor", g->name); goto done; }
    for (size_t i = 0; i <= no; i++) hd[i] = hl[i] = -1;
    for (size_t i = 0; i < nr; i++) {
        int32_t r = byroot[i];
        if (!c.st.planned[r] || c.def[r] == INT32_MAX) continue;
        if (c.last[r] < c.def[r]) c.last[r] = c.def[r];
        nd[r] = hd[c.def[r]];
        hd[c.def[r]] = r;
        nl[r] = hl[c.last[r]];
        hl[c.last[r]] = r;
    }
    uint64_t cur = 0;
    int32_t live = 0;
    for (size_t st = 0; st < no; st++) {
        /* during step st: what lives across the boundary before it, and the
         * storages made at st but those that may be written over an input
         * of the same size whose storage dies at st (in place, counted after
         * the step), whatever the profile says */
        for (int pass = 0; pass < 2; pass++) {
            for (int32_t r = hd[st]; r >= 0; r = nd[r]) {
                if (cb_may_overwrite(&c, order[st], r, (int32_t)st) != (pass == 1)) continue;
                live++;
                for (uint32_t k = c.aoff[r]; k < c.aend[r]; k++)
                    if (cnt[c.atom[k]]++ == 0) cur += c.abytes[c.atom[k]];
            }
            if (pass == 0 && (cur > out->bytes || out->step < 0)) {
                out->bytes = cur;
                out->step = (int32_t)st;
                out->op = order[st];
                out->n_live = live;
                out->during = 1;
            }
        }
        /* after step st */
        for (int32_t r = hl[st]; r >= 0; r = nl[r], live--)
            for (uint32_t k = c.aoff[r]; k < c.aend[r]; k++)
                if (--cnt[c.atom[k]] == 0) cur -= c.abytes[c.atom[k]];
        assert(live >= 0);
        if (cur > out->bytes) {
            out->bytes = cur;
            out->step = (int32_t)st;
            out->op = order[st];
            out->n_live = live;
            out->during = 0;
        }
    }
    /* the largest storage live across the certificate's boundary */
    out->largest = -1;
    for (size_t i = 0; i < nr && out->step >= 0; i++) {
        int32_t r = byroot[i];
        if (!c.st.planned[r] || c.def[r] > out->step || c.last[r] < out->step + !out->during) continue;
        if (out->largest < 0 || g->t[r].bytes > g->t[out->largest].bytes) out->largest = r;
    }
done:
    if (cnt) bp__free(c.a, cnt, (nt + c.n_priv + 1) * sizeof *cnt);
    bp__free(c.a, pos, no1 * sizeof *pos);
    bp__free(c.a, spos, nt1 * sizeof *spos);
    bp__free(c.a, byroot, nt1 * sizeof *byroot);
    bp__free(c.a, offs, nio * sizeof *offs);
    bp__free(c.a, c.def, nt1 * sizeof *c.def);
    bp__free(c.a, c.last, nt1 * sizeof *c.last);
    bp__free(c.a, c.aoff, nt1 * sizeof *c.aoff);
    bp__free(c.a, c.aend, nt1 * sizeof *c.aend);
    bp__free(c.a, c.seen, (nt + c.cap_priv) * sizeof *c.seen);
    bp__free(c.a, c.abytes, (nt + c.cap_priv) * sizeof *c.abytes);
    bp__free(c.a, c.atom, c.cap_atom * sizeof *c.atom);
    bp__free(c.a, hd, (no + 1) * sizeof *hd);
    bp__free(c.a, hl, (no + 1) * sizeof *hl);
    bp__free(c.a, nd, nt1 * sizeof *nd);
    bp__free(c.a, nl, nt1 * sizeof *nl);
    bp__storage_free(g, &c.st);
    return s;
}
