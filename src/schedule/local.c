/*
 * local.c — local search on a whole order around its peak step.
 *
 * The memory profile (bytes live per step) sits in a segment tree of
 * (max, count at the max), so the peak step is found in O(log n).  A move
 * takes one op near the peak and slides it across the peak step by
 * adjacent swaps, inside its dependency window (it stops at its first
 * consumer when sinking, at its last producer when lifting).  A swap of the
 * ops at steps i and i+1 only changes the hulls of the storages the two ops
 * touch, so it only changes mem[i] and mem[i+1]: O(k log n) for k touches.
 * A move is kept at the point of the slide where the profile is best:
 * lower max, or the same max at fewer steps (that walks plateaus); else the
 * swaps are undone.
 *
 * The swap model takes the in-place merges of the last exactly evaluated
 * order as fixed (a merged input and output are one storage).  A move may
 * change which merges happen, so the model is only a guide: the order is
 * scored with the exact evaluator after each accepted move (every 256 moves
 * on big graphs) and the search falls back to the last verified order and
 * stops when the evaluator disagrees.  The result is therefore never worse
 * than the input, and it is a topological order (every swap checks the
 * dependency).  No randomness: the result depends only on the input order
 * and the work limit (and on the clock when its deadline comes first).
 */
#include "schedule/schedule_internal.h"

#include <string.h>

typedef struct ls_node { uint64_t max; int32_t cnt; } ls_node;

typedef struct ls {
    const bp__sgraph *sg;
    const bp_allocator *a;
    int32_t n, size;          /* steps; leaves of the tree (power of two) */
    int32_t *cur, *pos;       /* order and step of each op */
    int32_t *grp;             /* storage -> its group (the in-place root) */
    int32_t *f, *l;           /* group hull (first, last step); l < 0: not counted */
    uint8_t *fix;             /* group: 1 = first fixed at 0, 2 = last fixed at n-1 */
    int32_t *stamp, *gl;      /* per swap: groups of the two ops */
    int32_t tick, maxdeg;
    ls_node *t;
    uint64_t *mem;
} ls;

static ls_node ls_join(ls_node x, ls_node y)
{
    if (x.max > y.max) return x;
    if (y.max > x.max) return y;
    return (ls_node){x.max, x.cnt + y.cnt};
}

static void ls_set(ls *s, int32_t i, uint64_t v)
{
    s->mem[i] = v;
    int32_t k = s->size + i;
    s->t[k] = (ls_node){v, 1};
    for (k >>= 1; k; k >>= 1) s->t[k] = ls_join(s->t[2 * k], s->t[2 * k + 1]);
}

/* Leftmost step at the max. */
static int32_t ls_peak_step(const ls *s)
{
    int32_t k = 1;
    uint64_t m = s->t[1].max;
    while (k < s->size) k = s->t[2 * k].max == m ? 2 * k : 2 * k + 1;
    return k - s->size;
}

static int32_t ls_root(const int32_t *par, int32_t y)
{
    while (par[y] != y) y = par[y];
    return y;
}

/* Model from the exact evaluation of s->cur (groups, hulls, profile). */
static uint64_t ls_load(ls *s, bp__eval *ev)
{
    const bp__sgraph *sg = s->sg;
    int32_t n = s->n;
    uint64_t pk = bp__eval_profile(ev, s->cur, s->mem);
    for (int32_t i = 0; i < n; i++) s->pos[s->cur[i]] = i;
    for (int32_t y = 0; y < sg->ns; y++) {
        int32_t r = ls_root(ev->par, y);
        s->grp[y] = r;
        if (r == y) { s->f[y] = ev->sf[y]; s->l[y] = ev->sl[y]; s->fix[y] = 0; }
    }
    for (int32_t y = 0; y < sg->ns; y++) {
        int32_t r = s->grp[y];
        if (sg->sflags[y] & BP__SF_EXTLIVE) s->fix[r] |= 1;
        if (sg->sflags[y] & BP__SF_PINNED) s->fix[r] |= 2;
    }
    for (int32_t i = 0; i < s->size; i++) s->t[s->size + i] = (ls_node){i < n ? s->mem[i] : 0, 1};
    for (int32_t k = s->size - 1; k >= 1; k--) s->t[k] = ls_join(s->t[2 * k], s->t[2 * k + 1]);
    return pk;
}

static inline uint64_t ls_at(const ls *s, int32_t y, int32_t step)
{
    return s->l[y] >= 0 && s->f[y] <= step && step <= s->l[y] ? s->sg->ssize[y] : 0;
}

/* Whether op b reads what op a makes. */
static bool ls_depends(const bp__sgraph *sg, int32_t a, int32_t b)
{
    for (int32_t j = sg->pr_off[b]; j < sg->pr_off[b + 1]; j++)
        if (sg->pr[j] == a) return true;
    return false;
}

/* Swaps the ops at steps i and i+1 (no dependency between them). */
static void ls_swap(ls *s, int32_t i, uint64_t *work)
{
    const bp__sgraph *sg = s->sg;
    int32_t a = s->cur[i], b = s->cur[i + 1], ng = 0, tk = ++s->tick;
    /* groups: stamp = 2*tick for a's, 2*tick+1 marks b's as well */
    for (int32_t j = sg->to_off[a]; j < sg->to_off[a + 1]; j++) {
        int32_t y = s->grp[sg->to[j]];
        if (s->stamp[y] >= 4 * tk) continue;
        s->stamp[y] = 4 * tk + 1;
        s->gl[ng++] = y;
    }
    for (int32_t j = sg->to_off[b]; j < sg->to_off[b + 1]; j++) {
        int32_t y = s->grp[sg->to[j]];
        if (s->stamp[y] >= 4 * tk) { s->stamp[y] |= 2; continue; }
        s->stamp[y] = 4 * tk + 2;
        s->gl[ng++] = y;
    }
    int64_t d0 = 0, d1 = 0;
    for (int32_t k = 0; k < ng; k++) {
        int32_t y = s->gl[k], m = s->stamp[y] - 4 * tk;
        if (m == 3) continue; /* both touch it: its hull does not move */
        d0 -= (int64_t)ls_at(s, y, i);
        d1 -= (int64_t)ls_at(s, y, i + 1);
        if (m == 1) { /* only a, which moves from i to i+1 */
            if (!(s->fix[y] & 1) && s->f[y] == i) s->f[y] = i + 1;
            if (!(s->fix[y] & 2) && s->l[y] == i) s->l[y] = i + 1;
        } else {      /* only b, which moves from i+1 to i */
            if (!(s->fix[y] & 1) && s->f[y] == i + 1) s->f[y] = i;
            if (!(s->fix[y] & 2) && s->l[y] == i + 1) s->l[y] = i;
        }
        d0 += (int64_t)ls_at(s, y, i);
        d1 += (int64_t)ls_at(s, y, i + 1);
    }
    s->cur[i] = b;
    s->cur[i + 1] = a;
    s->pos[a] = i + 1;
    s->pos[b] = i;
    if (d0) ls_set(s, i, (uint64_t)((int64_t)s->mem[i] + d0));
    if (d1) ls_set(s, i + 1, (uint64_t)((int64_t)s->mem[i + 1] + d1));
    *work += (uint64_t)(ng + 4) * 8 + 16;
}

/* Slides the op at step q across step p (q < p: later, q > p: earlier) as
 * far as its dependencies and `reach` swaps allow; keeps the best point of
 * the slide if it beats (M, C).  Returns whether it did. */
static bool ls_slide(ls *s, int32_t q, int32_t p, int32_t reach, uint64_t M, int32_t C, uint64_t *work)
{
    const bp__sgraph *sg = s->sg;
    int32_t x = s->cur[q], at = q, best_at = q;
    uint64_t bm = M;
    int32_t bc = C;
    int dir = q < p ? 1 : -1;
    int32_t end = q < p ? p + reach : p - reach;
    if (end < 0) end = 0;
    if (end > s->n - 1) end = s->n - 1;
    while (at != end) {
        int32_t nb = s->cur[at + dir];
        if (dir > 0 ? ls_depends(sg, x, nb) : ls_depends(sg, nb, x)) break;
        ls_swap(s, dir > 0 ? at : at - 1, work);
        at += dir;
        ls_node r = s->t[1];
        if (r.max < bm || (r.max == bm && r.cnt < bc)) { bm = r.max; bc = r.cnt; best_at = at; }
    }
    while (at != best_at) { /* undo back to the best point */
        ls_swap(s, dir > 0 ? at - 1 : at, work);
        at -= dir;
    }
    return best_at != q;
}

int bp__sched_local(const bp__sgraph *sg, bp__eval *ev, int32_t *order, uint64_t *work, uint64_t work_limit,
                    double deadline)
{
    int32_t n = sg->n;
    if (n < 3) return 0;
    ls s;
    memset(&s, 0, sizeof s);
    s.sg = sg;
    s.a = &sg->g->alloc;
    s.n = n;
    s.size = 1;
    while (s.size < n) s.size *= 2;
    size_t nn = (size_t)n, ns = (size_t)(sg->ns ? sg->ns : 1);
    int32_t *ver = bp__alloc(s.a, nn * sizeof *ver);
    s.cur = bp__alloc(s.a, nn * sizeof *s.cur);
    s.pos = bp__alloc(s.a, nn * sizeof *s.pos);
    s.mem = bp__alloc(s.a, nn * sizeof *s.mem);
    s.grp = bp__alloc(s.a, ns * sizeof *s.grp);
    s.f = bp__alloc(s.a, ns * sizeof *s.f);
    s.l = bp__alloc(s.a, ns * sizeof *s.l);
    s.fix = bp__alloc(s.a, ns);
    s.stamp = bp__calloc(s.a, ns, sizeof *s.stamp);
    s.gl = bp__alloc(s.a, ((size_t)sg->to_off[n] + 2) * sizeof *s.gl);
    s.t = bp__alloc(s.a, 2 * (size_t)s.size * sizeof *s.t);
    int ret = -1;
    if (!ver || !s.cur || !s.pos || !s.mem || !s.grp || !s.f || !s.l || !s.fix || !s.stamp || !s.gl || !s.t) goto out;
    ret = 0;
    memcpy(s.cur, order, nn * sizeof *order);
    memcpy(ver, order, nn * sizeof *order);
    uint64_t vpeak = ls_load(&s, ev);
    int32_t vcnt = 0;
    for (int32_t i = 0; i < n; i++) vcnt += s.mem[i] == vpeak;
    *work += (uint64_t)(n + sg->to_off[n]) * 8;
    const int32_t R = 24, reach = 64;
    int32_t pending = 0, every = n <= 20000 ? 1 : 256;
    for (uint32_t it = 0; *work < work_limit && !((it & 15) == 15 && bp__sched_late(deadline)); it++) {
        if (s.tick > (1 << 28)) { memset(s.stamp, 0, ns * sizeof *s.stamp); s.tick = 0; }
        uint64_t M = s.t[1].max;
        if (!M) break;
        int32_t C = s.t[1].cnt, p = ls_peak_step(&s);
        bool moved = false;
        /* candidates by distance from the peak: both sides */
        for (int32_t d = 0; d <= R && !moved && *work < work_limit; d++) {
            for (int side = 0; side < 2 && !moved; side++) {
                int32_t q = side ? p + d : p - d;
                if ((side && d == 0) || q < 0 || q >= n) continue;
                if (d == 0) {
                    /* the peak op itself: either way */
                    moved = ls_slide(&s, q, q + 1, reach, M, C, work) || ls_slide(&s, q, q - 1, reach, M, C, work);
                } else {
                    moved = ls_slide(&s, q, p, reach, M, C, work);
                }
            }
        }
        if (!moved) break;
        if (++pending >= every) {
            pending = 0;
            int32_t npk = 0;
            uint64_t pk = bp__eval_profile(ev, s.cur, s.mem);
            for (int32_t i = 0; i < n; i++) npk += s.mem[i] == pk;
            *work += (uint64_t)(n + sg->to_off[n]) * 8;
            /* Not better by the evaluator: the model drifted (a merge
             * changed).  Keep what is verified and stop. */
            if (!(pk < vpeak || (pk == vpeak && npk < vcnt))) break;
            memcpy(ver, s.cur, nn * sizeof *ver);
            ret = 1;
            vpeak = pk;
            vcnt = npk;
            ls_load(&s, ev); /* the merges of the new order */
            *work += (uint64_t)(n + sg->to_off[n]) * 8;
        }
    }
    if (pending) {
        int32_t npk = 0;
        uint64_t pk = bp__eval_profile(ev, s.cur, s.mem);
        for (int32_t i = 0; i < n; i++) npk += s.mem[i] == pk;
        if (pk < vpeak || (pk == vpeak && npk < vcnt)) { memcpy(ver, s.cur, nn * sizeof *ver); ret = 1; }
    }
    memcpy(order, ver, nn * sizeof *order);
out:
    bp__free(s.a, ver, nn * sizeof *ver);
    bp__free(s.a, s.cur, nn * sizeof *s.cur);
    bp__free(s.a, s.pos, nn * sizeof *s.pos);
    bp__free(s.a, s.mem, nn * sizeof *s.mem);
    bp__free(s.a, s.grp, ns * sizeof *s.grp);
    bp__free(s.a, s.f, ns * sizeof *s.f);
    bp__free(s.a, s.l, ns * sizeof *s.l);
    bp__free(s.a, s.fix, ns);
    bp__free(s.a, s.stamp, ns * sizeof *s.stamp);
    bp__free(s.a, s.gl, ((size_t)sg->to_off[n] + 2) * sizeof *s.gl);
    bp__free(s.a, s.t, 2 * (size_t)s.size * sizeof *s.t);
    return ret;
}
