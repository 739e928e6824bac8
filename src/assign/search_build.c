/*
 * search_build.c — search's context (search_ctx.h) from the intervals: the
 * sized ones numbered as sweep.c numbers them, sections between consecutive
 * distinct time points with their totals and crossing counts, the overlap
 * lists (bitset rows up to SR_BITSET_MAX buffers), the obstacles per
 * section, the independent parts (split where no buffer crosses a time
 * point), each part's starting incumbent and bound; and the freeing of it all.
 */
#include "assign/search_ctx.h"

#include <string.h>

static uint64_t sr_gcd(uint64_t a, uint64_t b)
{
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return a;
}

void bp__assign_search_free(sr_ctx *c)
{
    const bp_allocator *a = c->a;
    size_t k = c->k ? c->k : 1, nt1 = (size_t)c->nt + 1, nf1 = (size_t)c->nf + 1, ns = c->n_sec;
    bp__free(a, c->orig, k * sizeof *c->orig);
    bp__free(a, c->size, k * sizeof *c->size);
    bp__free(a, c->align, k * sizeof *c->align);
    bp__free(a, c->slo, nt1 * sizeof *c->slo);
    bp__free(a, c->shi, nt1 * sizeof *c->shi);
    bp__free(a, c->fxo, nf1 * sizeof *c->fxo);
    bp__free(a, c->fxe, nf1 * sizeof *c->fxe);
    bp__free(a, c->fx_off, (k + 1) * sizeof *c->fx_off);
    bp__free(a, c->ov_off, (k + 1) * sizeof *c->ov_off);
    bp__free(a, c->part_buf, k * sizeof *c->part_buf);
    bp__free(a, c->off, k * sizeof *c->off);
    bp__free(a, c->minoff, k * sizeof *c->minoff);
    bp__free(a, c->sol, k * sizeof *c->sol);
    bp__free(a, c->best, k * sizeof *c->best);
    bp__free(a, c->len, k * sizeof *c->len);
    bp__free(a, c->wrank, k * sizeof *c->wrank);
    bp__free(a, c->keys, k * sizeof *c->keys);
    bp__free(a, c->keys2, k * sizeof *c->keys2);
#ifndef NDEBUG
    bp__free(a, c->dbg_w, 2 * k * sizeof *c->dbg_w);
#endif
    for (int h = 0; h < 4; h++) if (c->sk[h]) bp__free(a, c->sk[h], 2 * k * sizeof *c->sk[h]);
    if (c->pk) bp__free(a, c->pk, k * sizeof *c->pk);
    bp__free(a, c->pos, k * sizeof *c->pos);
    if (c->ovb) bp__free(a, c->ovb, (size_t)c->W * k * sizeof *c->ovb);
    if (c->unpl) bp__free(a, c->unpl, (size_t)c->W * sizeof *c->unpl);
    bp__free(a, c->rl, k * sizeof *c->rl);
    if (c->secb) bp__free(a, c->secb, (size_t)c->W * ns * sizeof *c->secb);
    bp__free(a, c->sec_total0, (ns + 1) * sizeof *c->sec_total0);
    bp__free(a, c->floor_, (ns + 1) * sizeof *c->floor_);
    bp__free(a, c->total, (ns + 1) * sizeof *c->total);
    bp__free(a, c->cross0, (ns + 2) * sizeof *c->cross0);
    bp__free(a, c->cross, (ns + 2) * sizeof *c->cross);
    bp__free(a, c->stamp, (ns + 1) * sizeof *c->stamp);
    bp__free(a, c->wit, (ns + 1) * sizeof *c->wit);
    bp__free(a, c->sec_off, (ns + 2) * sizeof *c->sec_off);
    bp__free(a, c->sec_buf, c->n_sec_buf * sizeof *c->sec_buf);
    bp__free(a, c->ov, c->n_ov * sizeof *c->ov);
    bp__free(a, c->fx, c->n_fx * sizeof *c->fx);
    bp__free(a, c->sfx_off, (ns + 2) * sizeof *c->sfx_off);
    bp__free(a, c->sfx, c->n_sfx * sizeof *c->sfx);
    bp__free(a, c->parts, (ns + 1) * sizeof *c->parts);
    bp__free(a, c->pre, (size_t)c->n_heur * k * sizeof *c->pre);
    bp__free(a, c->lists, c->lists_cap * sizeof *c->lists);
    bp__free(a, c->tr, c->tr_cap * sizeof *c->tr);
    bp__free(a, c->ts, c->ts_cap * sizeof *c->ts);
    bp__free(a, c->cand, c->cand_cap * sizeof *c->cand);
    bp__free(a, c->fr, c->fr_cap * sizeof *c->fr);
}

/* bp__assign_search_build, the sections: segments between consecutive distinct time points,
 * each section's total and crossing counts, and the buffers per section.
 * *cross_out (n_cross entries) is the caller's to free, also on failure. */
static bool sr_build_sections(sr_ctx *c, const bp__tp *tp, uint32_t nt, uint32_t **cross_out, size_t *n_cross)
{
    const bp_allocator *a = c->a;
    uint32_t k = c->k;
    /* sections: segments between consecutive distinct time points */
    uint32_t sec = 0;
    for (size_t e = 0; e < 2 * (size_t)nt; e++) {
        if (e > 0 && tp[e].t != tp[e - 1].t) sec++;
        if (tp[e].end) c->shi[tp[e].b] = sec; else c->slo[tp[e].b] = sec;
    }
    c->n_sec = sec + 1;
    c->sec_total0 = bp__calloc(a, c->n_sec + 1, sizeof *c->sec_total0);
    c->floor_ = bp__calloc(a, c->n_sec + 1, sizeof *c->floor_);
    c->total = bp__calloc(a, c->n_sec + 1, sizeof *c->total);
    *n_cross = c->n_sec + 2;
    uint32_t *cross = *cross_out = bp__calloc(a, *n_cross, sizeof *cross);
    c->cross0 = bp__calloc(a, c->n_sec + 2, sizeof *c->cross0);
    c->cross = bp__calloc(a, c->n_sec + 2, sizeof *c->cross);
    if (!c->cross0 || !c->cross || !c->sec_total0 || !c->floor_ || !c->total || !cross) return false;
    for (uint32_t b = 0; b < k; b++) {
        for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) c->sec_total0[s] += c->size[b];
        /* b crosses the boundaries slo+1 .. shi-1 */
        if (c->slo[b] + 1 < c->shi[b]) { cross[c->slo[b] + 1]++; cross[c->shi[b]]--; }
    }
    {
        int32_t run = 0;
        for (uint32_t s = 0; s < c->n_sec; s++) { run += (int32_t)cross[s]; c->cross0[s] = run; }
    }
    /* buffers per section, for the lowest-floor inference (skipped when the
     * lists would be large) */
    {
        uint64_t tot = 0;
        for (uint32_t b = 0; b < k; b++) tot += c->shi[b] - c->slo[b];
        c->stamp = bp__calloc(a, c->n_sec + 1, sizeof *c->stamp);
        c->wit = bp__calloc(a, c->n_sec + 1, sizeof *c->wit);
        c->sec_off = bp__calloc(a, c->n_sec + 2, sizeof *c->sec_off);
        if (!c->stamp || !c->wit || !c->sec_off) return false;
        if (tot <= 20000000) {
            c->sec_buf = bp__alloc(a, (tot ? tot : 1) * sizeof *c->sec_buf);
            if (!c->sec_buf) return false;
            c->n_sec_buf = tot ? tot : 1;
            for (uint32_t b = 0; b < k; b++) for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) c->sec_off[s + 1]++;
            for (uint32_t s = 0; s < c->n_sec; s++) c->sec_off[s + 1] += c->sec_off[s];
            uint32_t *cur = bp__alloc(a, (c->n_sec + 1) * sizeof *cur);
            if (!cur) return false;
            memcpy(cur, c->sec_off, (c->n_sec + 1) * sizeof *cur);
            for (uint32_t b = 0; b < k; b++) for (uint32_t s = c->slo[b]; s < c->shi[b]; s++) c->sec_buf[cur[s]++] = b;
            for (uint32_t s = 0; s < c->n_sec; s++) if (c->sec_off[s] < c->sec_off[s + 1]) c->wit[s] = c->sec_buf[c->sec_off[s]];
            bp__free(a, cur, (c->n_sec + 1) * sizeof *cur);
        }
    }
    return true;
}

/* bp__assign_search_build, the numbering: each free buffer's input index,
 * size, length and alignment, each obstacle's offset and end, and the grid
 * g of canonical heights (gcd of sizes, alignments, obstacle offsets). */
static void sr_build_grid(sr_ctx *c, const bp_interval *iv, const uint32_t *ids)
{
    uint32_t k = c->k, nf = c->nf;
    uint64_t g = 0;
    for (uint32_t f = 0; f < nf; f++) {
        /* an obstacle: its ends count as time points, its offset and size
         * in the grid of canonical heights */
        const bp_interval *x = &iv[ids[k + f]];
        c->fxo[f] = x->fixed_offset;
        c->fxe[f] = x->fixed_offset + x->size;
        if (c->fxe[f] > c->ftop) c->ftop = c->fxe[f];
        g = sr_gcd(g, x->size);
        g = sr_gcd(g, x->fixed_offset);
    }
    for (uint32_t q = 0; q < k; q++) {
        const bp_interval *x = &iv[ids[q]];
        c->orig[q] = ids[q];
        c->size[q] = x->size;
        c->len[q] = (uint64_t)x->upper - (uint64_t)x->lower;
        c->align[q] = x->alignment > 1 ? x->alignment : 1;
        if (x->alignment > 1) c->aligned = true;
        g = sr_gcd(g, x->size);
        if (x->alignment > 1) g = sr_gcd(g, x->alignment);
    }
    c->g = g ? g : 1;
}

/* bp__assign_search_build, the overlaps (bp__assign_overlaps) and the
 * obstacles per section; up to SR_BITSET_MAX buffers the free-free overlaps
 * go straight into the bitset rows (with their counts in ov_off): no lists,
 * and the buffers per section are bitset rows too.  False on OOM. */
static bool sr_build_overlaps(sr_ctx *c, const bp__tp *tp)
{
    const bp_allocator *a = c->a;
    uint32_t k = c->k, nf = c->nf;
    bool bits = k && k <= SR_BITSET_MAX;
    bool ok = true;
    if (bits) {
        c->W = (k + 63) / 64;
        c->ovb = bp__calloc(a, (size_t)c->W * k, sizeof *c->ovb);
        c->unpl = bp__calloc(a, c->W, sizeof *c->unpl);
        c->rl = bp__alloc(a, (size_t)k * sizeof *c->rl);
        c->rl_b = UINT32_MAX;
        ok = c->ovb && c->unpl && c->rl;
    }
    if (ok) {
        bp__overlaps ol = { .ov_off = c->ov_off, .fx_off = c->fx_off, .bits = bits ? c->ovb : NULL, .W = c->W };
        ok = bp__assign_overlaps(a, tp, k, nf, &ol) == 0;
        c->ov = ol.ov; c->n_ov = ol.n_ov;
        c->fx = ol.fx; c->n_fx = ol.n_fx;
    }
    if (ok) {
        /* obstacles per section */
        c->sfx_off = bp__calloc(a, c->n_sec + 2, sizeof *c->sfx_off);
        size_t ns = 0;
        for (uint32_t f2 = 0; f2 < nf; f2++) ns += c->shi[k + f2] - c->slo[k + f2];
        c->sfx = bp__alloc(a, (ns ? ns : 1) * sizeof *c->sfx);
        if (c->sfx) c->n_sfx = ns ? ns : 1;
        uint32_t *scur = bp__alloc(a, (c->n_sec + 1) * sizeof *scur);
        if (c->sfx_off && c->sfx && scur) {
            for (uint32_t f2 = 0; f2 < nf; f2++)
                for (uint32_t s = c->slo[k + f2]; s < c->shi[k + f2]; s++) c->sfx_off[s + 1]++;
            for (uint32_t s = 0; s < c->n_sec; s++) c->sfx_off[s + 1] += c->sfx_off[s];
            memcpy(scur, c->sfx_off, (c->n_sec + 1) * sizeof *scur);
            for (uint32_t f2 = 0; f2 < nf; f2++)
                for (uint32_t s = c->slo[k + f2]; s < c->shi[k + f2]; s++) c->sfx[scur[s]++] = f2;
        } else ok = false;
        bp__free(a, scur, (c->n_sec + 1) * sizeof *scur);
    }
    if (!ok) return false;
    if (c->ovb && c->sec_buf) {
        c->secb = bp__calloc(a, (size_t)c->W * c->n_sec, sizeof *c->secb);
        if (!c->secb) return false;
        for (uint32_t b = 0; b < k; b++)
            for (uint32_t s = c->slo[b]; s < c->shi[b]; s++)
                c->secb[(size_t)s * c->W + (b >> 6)] |= UINT64_C(1) << (b & 63);
    }
    return true;
}

/* bp__assign_search_build, the parts: split at boundaries no buffer crosses
 * (cross: the crossing deltas of sr_build_sections), the buffers grouped by
 * part in part_buf, parts without buffers dropped.  False on OOM. */
static bool sr_build_parts(sr_ctx *c, const uint32_t *cross)
{
    const bp_allocator *a = c->a;
    uint32_t k = c->k;
    c->parts = bp__calloc(a, c->n_sec + 1, sizeof *c->parts);
    uint32_t *part_of_sec = bp__alloc(a, (c->n_sec + 1) * sizeof *part_of_sec);
    if (!c->parts || !part_of_sec) { bp__free(a, part_of_sec, (c->n_sec + 1) * sizeof *part_of_sec); return false; }
    int32_t run = 0;
    uint32_t np = 0;
    for (uint32_t s = 0; s < c->n_sec; s++) {
        run += (int32_t)cross[s];
        if (s == 0 || run == 0) { c->parts[np].s0 = s; np++; }
        part_of_sec[s] = np - 1;
        c->parts[np - 1].s1 = s + 1;
    }
    /* count buffers per part, then group */
    uint32_t *cnt = bp__calloc(a, (size_t)np + 1, sizeof *cnt);
    if (!cnt) { bp__free(a, part_of_sec, (c->n_sec + 1) * sizeof *part_of_sec); return false; }
    for (uint32_t b = 0; b < k; b++) cnt[part_of_sec[c->slo[b]] + 1]++;
    for (uint32_t p = 0; p < np; p++) cnt[p + 1] += cnt[p];
    for (uint32_t p = 0; p < np; p++) { c->parts[p].b0 = cnt[p]; c->parts[p].b1 = cnt[p + 1]; }
    for (uint32_t b = 0; b < k; b++) c->part_buf[cnt[part_of_sec[c->slo[b]]]++] = b;
    /* drop parts without buffers */
    uint32_t w = 0;
    for (uint32_t p = 0; p < np; p++) if (c->parts[p].b1 > c->parts[p].b0) c->parts[w++] = c->parts[p];
    c->n_parts = w;
    bp__free(a, cnt, ((size_t)np + 1) * sizeof *cnt);
    bp__free(a, part_of_sec, (c->n_sec + 1) * sizeof *part_of_sec);
    return true;
}

/* Builds sections, overlaps, parts and preorders.  Returns false on OOM. */
bool bp__assign_search_build(sr_ctx *c, const bp_interval *iv, size_t n)
{
    const bp_allocator *a = c->a;
    /* scratch, freed at the end with these sizes */
    bp__tp *tp = NULL;
    uint32_t *cross = NULL, *ids = NULL;
    size_t n_tp = 0, n_cross = 0;
    bool ok = false;
    uint32_t k, nf;
    bp__assign_count(iv, n, &k, &nf);
    c->k = k;
    c->nf = nf;
    c->nt = k + nf;
    uint32_t nt = k + nf;
    size_t kk = k ? k : 1;
    c->orig = bp__alloc(a, kk * sizeof *c->orig);
    c->size = bp__alloc(a, kk * sizeof *c->size);
    c->align = bp__alloc(a, kk * sizeof *c->align);
    c->slo = bp__alloc(a, ((size_t)nt + 1) * sizeof *c->slo);
    c->shi = bp__alloc(a, ((size_t)nt + 1) * sizeof *c->shi);
    c->fxo = bp__alloc(a, ((size_t)nf + 1) * sizeof *c->fxo);
    c->fxe = bp__alloc(a, ((size_t)nf + 1) * sizeof *c->fxe);
    c->fx_off = bp__calloc(a, kk + 1, sizeof *c->fx_off);
    c->ov_off = bp__calloc(a, kk + 1, sizeof *c->ov_off);
    c->part_buf = bp__alloc(a, kk * sizeof *c->part_buf);
    c->off = bp__alloc(a, kk * sizeof *c->off);
    c->minoff = bp__alloc(a, kk * sizeof *c->minoff);
    c->sol = bp__alloc(a, kk * sizeof *c->sol);
    c->best = bp__alloc(a, kk * sizeof *c->best);
    c->len = bp__alloc(a, kk * sizeof *c->len);
    c->wrank = bp__alloc(a, kk * sizeof *c->wrank);
    c->keys = bp__alloc(a, kk * sizeof *c->keys);
    c->keys2 = bp__alloc(a, kk * sizeof *c->keys2);
#ifndef NDEBUG
    c->dbg_w = bp__alloc(a, 2 * kk * sizeof *c->dbg_w);
    if (!c->dbg_w) goto out;
#endif
    c->pos = bp__alloc(a, kk * sizeof *c->pos);
    n_tp = 2 * ((size_t)nt + 1);
    tp = bp__alloc(a, n_tp * sizeof *tp);
    ids = bp__alloc(a, ((size_t)nt + 1) * sizeof *ids);
    if (!ids || !c->orig || !c->size || !c->align || !c->slo || !c->shi || !c->ov_off || !c->part_buf ||
        !c->off || !c->minoff || !c->sol || !c->best || !c->len || !c->wrank || !c->keys || !c->keys2 || !c->pos || !tp || !c->fxo || !c->fxe || !c->fx_off) goto out;
    bp__assign_endpoints(iv, n, k, nf, tp, ids);
    sr_build_grid(c, iv, ids);
    if (!sr_build_sections(c, tp, nt, &cross, &n_cross)) goto out;
    if (!sr_build_overlaps(c, tp)) goto out;
    if (!sr_build_parts(c, cross)) goto out;
    /* preorders (MiniMalloc's letters): T = largest section total it lives
     * in, C = sections spanned, A = area, W = length */
    c->n_heur = 4;
    c->pre = bp__alloc(a, (size_t)c->n_heur * kk * sizeof *c->pre);
    if (!c->pre) goto out;
    /* each is ranked at its first use (search.c's sr_solve_part): bestfit's probes
     * use two of the four */
    ok = true;
out:
    bp__free(a, tp, n_tp * sizeof *tp);
    bp__free(a, ids, ((size_t)nt + 1) * sizeof *ids);
    bp__free(a, cross, n_cross * sizeof *cross);
    return ok;
}

/* Each part's incumbent from the caller's offsets, and its bound: its
 * max-live rounded up to the grid g (never above the incumbent). */
void bp__assign_search_start_parts(sr_ctx *c, const uint64_t *offsets)
{
    for (uint32_t pi = 0; pi < c->n_parts; pi++) {
        sr_part *p = &c->parts[pi];
        uint64_t hgt = 0, ml = 0;
        for (uint32_t q = p->b0; q < p->b1; q++) {
            uint32_t b = c->part_buf[q];
            c->best[b] = offsets[c->orig[b]];
            if (c->best[b] + c->size[b] > hgt) hgt = c->best[b] + c->size[b];
        }
        for (uint32_t s = p->s0; s < p->s1; s++) if (c->sec_total0[s] > ml) ml = c->sec_total0[s];
        p->best = hgt;
        p->lo = (ml + c->g - 1) / c->g * c->g;
        if (p->lo > p->best) p->lo = p->best;
    }
}

/* A short probe's candidate stack grows to about one dive's worth at once:
 * size it (and the frames) for a full dive up front rather than by doubling
 * reallocs, whose copies and fresh pages cost F-H ~0.5 ms.  (Presizing the
 * trails and sub-part lists too made D and E slower: more fresh pages than
 * they use.)  Only a hint: every stack still grows on demand. */
bool bp__assign_search_presize(sr_ctx *c)
{
    size_t k = c->k;
    if (k > SR_BITSET_MAX) return true;
    size_t dive = k * (k + 1) / 2 + k;
    return bp__grow(c->a, (void **)&c->cand, &c->cand_cap, dive, sizeof *c->cand) &&
           bp__grow(c->a, (void **)&c->fr, &c->fr_cap, 2 * k + 2, sizeof *c->fr);
}
