/*
 * dp.c — the exact scheduling search: dynamic programming over the sets of
 * scheduled ops (what is live after a set does not depend on the order inside
 * it), layer by layer, each set kept once with its lowest peak and pruned by
 * the best peak known; a cap on the states per layer turns it into beam search
 * (then it proves nothing).  Used by best's window search, the decomposition
 * and `optimal`.
 */
#include "schedule/schedule_internal.h"

#include <stdlib.h>
#include <string.h>
/* --------------------------------------------------- exact search (DP) */

typedef struct dp_key { int32_t op, local; } dp_key;

static int dp_key_cmp(const void *x, const void *y)
{
    const dp_key *a = x, *b = y;
    return (a->op > b->op) - (a->op < b->op);
}

static int32_t dp_local(const dp_key *keys, int32_t k, int32_t op)
{
    int32_t lo = 0, hi = k;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (keys[mid].op < op) lo = mid + 1; else hi = mid;
    }
    return lo < k && keys[lo].op == op ? keys[lo].local : -1;
}

static int i32_cmp(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

typedef struct dp_state {
    uint64_t peak, mem;
    int32_t parent, op;
} dp_state;

typedef struct dp {
    const bp__sgraph *sg;
    const bp__sim *st;
    const bp_allocator *a;
    int32_t k, W, nls;
    const int32_t *ops;
    uint64_t *pmask;          /* k * W */
    int32_t *lt_off, *lt;     /* local op -> local storages */
    int32_t *ls;              /* local storage -> storage */
    uint64_t *smask;          /* nls * W */
    /* states */
    uint64_t *mask; size_t mask_cap;
    dp_state *s; size_t s_cap, n;
    int32_t *hash; size_t hcap;
    /* per transition scratch */
    int32_t *cnt;             /* nls */
    size_t ntouch;
} dp;

static inline int popc(uint64_t x) { return __builtin_popcountll(x); }

static uint64_t dp_hash(const uint64_t *m, int32_t W)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int32_t w = 0; w < W; w++) {
        h ^= m[w] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xbf58476d1ce4e5b9ull;
    }
    return h ^ (h >> 31);
}

/* Index of the state with mask m among [lo, n), inserting a slot if absent
 * (returns -(index) - 2 for a new slot to fill). */
static int64_t dp_lookup(dp *d, const uint64_t *m, size_t lo)
{
    size_t mask = d->hcap - 1, h = (size_t)dp_hash(m, d->W) & mask;
    for (;;) {
        int32_t i = d->hash[h];
        if (i < 0) return -(int64_t)h - 2;
        if ((size_t)i >= lo && memcmp(d->mask + (size_t)i * d->W, m, (size_t)d->W * 8) == 0) return i;
        h = (h + 1) & mask;
    }
}

static bool dp_reserve(dp *d, size_t need)
{
    if (need > d->s_cap) {
        size_t oc = d->s_cap, mc = d->mask_cap;
        if (!bp__grow(d->a, (void **)&d->s, &d->s_cap, need, sizeof *d->s)) return false;
        (void)oc;
        size_t want = d->s_cap * (size_t)d->W;
        if (want > mc && !bp__grow(d->a, (void **)&d->mask, &d->mask_cap, want, sizeof *d->mask)) return false;
    }
    return true;
}

typedef struct dp_rank { uint64_t peak, mem; int32_t i; } dp_rank;

static int dp_rank_cmp(const void *x, const void *y)
{
    const dp_rank *a = x, *b = y;
    if (a->peak != b->peak) return a->peak < b->peak ? -1 : 1;
    if (a->mem != b->mem) return a->mem < b->mem ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Keeps the `keep` best states of the layer [lo, n) and rebuilds the hash. */
static bool dp_truncate(dp *d, size_t lo, size_t keep)
{
    size_t cnt = d->n - lo;
    dp_rank *r = bp__alloc(d->a, cnt * sizeof *r);
    uint64_t *m = bp__alloc(d->a, keep * (size_t)d->W * sizeof *m);
    dp_state *s = bp__alloc(d->a, keep * sizeof *s);
    bool ok = r && m && s;
    if (ok) {
        for (size_t i = 0; i < cnt; i++) r[i] = (dp_rank){d->s[lo + i].peak, d->s[lo + i].mem, (int32_t)(lo + i)};
        qsort(r, cnt, sizeof *r, dp_rank_cmp);
        for (size_t i = 0; i < keep; i++) {
            s[i] = d->s[r[i].i];
            memcpy(m + i * (size_t)d->W, d->mask + (size_t)r[i].i * d->W, (size_t)d->W * 8);
        }
        memcpy(d->s + lo, s, keep * sizeof *s);
        memcpy(d->mask + lo * (size_t)d->W, m, keep * (size_t)d->W * 8);
        d->n = lo + keep;
        for (size_t i = 0; i < d->hcap; i++) d->hash[i] = -1;
        for (size_t i = lo; i < d->n; i++) {
            int64_t h = dp_lookup(d, d->mask + i * (size_t)d->W, lo);
            d->hash[-h - 2] = (int32_t)i;
        }
    }
    bp__free(d->a, r, cnt * sizeof *r);
    bp__free(d->a, m, keep * (size_t)d->W * sizeof *m);
    bp__free(d->a, s, keep * sizeof *s);
    return ok;
}

/* Doubles the hash table and re-inserts the layer [lo, n). */
static bool dp_rehash(dp *d, size_t lo)
{
    size_t nc = d->hcap * 2;
    int32_t *h = bp__alloc(d->a, nc * sizeof *h);
    if (!h) return false;
    bp__free(d->a, d->hash, d->hcap * sizeof *d->hash);
    d->hash = h;
    d->hcap = nc;
    for (size_t i = 0; i < nc; i++) h[i] = -1;
    for (size_t i = lo; i < d->n; i++) {
        int64_t x = dp_lookup(d, d->mask + i * (size_t)d->W, lo);
        d->hash[-x - 2] = (int32_t)i;
    }
    return true;
}

/* Memory during local op i's step from state mask S (memory mem), and after. */
static void dp_step(dp *d, const uint64_t *S, uint64_t mem, int32_t i, uint64_t *during, uint64_t *after)
{
    const bp__sgraph *sg = d->sg;
    const bp__sim *st = d->st;
    int32_t v = d->ops[i], W = d->W;
    for (int32_t j = d->lt_off[i]; j < d->lt_off[i + 1]; j++) {
        int32_t y = d->lt[j], c = 0;
        for (int32_t w = 0; w < W; w++) c += popc(d->smask[(size_t)y * W + w] & S[w]);
        d->cnt[y] = c;
    }
#define REMN(y) (st->rem[d->ls[y]] - d->cnt[y])
#define LIVEN(y) (st->live[d->ls[y]] == 1 || (st->live[d->ls[y]] == 0 && d->cnt[y] > 0))
    /* in-place */
    int32_t msi = -1, mso = -1;
    for (int32_t c = sg->ip_off[v]; c < sg->ip_off[v + 1] && msi < 0; c++) {
        const bp__ipc *ip = &sg->ip[c];
        int32_t li = -1, lo = -1;
        for (int32_t j = d->lt_off[i]; j < d->lt_off[i + 1]; j++) {
            if (d->ls[d->lt[j]] == ip->si) li = d->lt[j];
            if (d->ls[d->lt[j]] == ip->so) lo = d->lt[j];
        }
        if (li < 0 || lo < 0 || li == lo) continue;
        if (REMN(li) != 1 || (sg->sflags[ip->si] & BP__SF_PINNED) || !LIVEN(li) || LIVEN(lo)) continue;
        if (sg->g->t[ip->out].bytes > st->cbytes[ip->si]) continue;
        msi = li;
        mso = lo;
    }
    uint64_t al = 0, fr = 0;
    for (int32_t j = d->lt_off[i]; j < d->lt_off[i + 1]; j++) {
        int32_t y = d->lt[j], gy = d->ls[y];
        if (y == msi) continue;
        uint64_t sz = y == mso ? st->cur[d->ls[msi]] : st->cur[gy];
        if (y != mso && !LIVEN(y)) al += sz;
        if (REMN(y) == 1 && !(sg->sflags[gy] & BP__SF_PINNED)) fr += sz;
    }
#undef REMN
#undef LIVEN
    *during = mem + al;
    *after = mem + al - fr;
}

static void dp_free(dp *d)
{
    const bp_allocator *a = d->a;
    bp__free(a, d->pmask, (size_t)d->k * d->W * sizeof *d->pmask);
    bp__free(a, d->lt_off, ((size_t)d->k + 1) * sizeof *d->lt_off);
    size_t nls = d->nls ? (size_t)d->nls : 1;
    bp__free(a, d->lt, (d->ntouch + 1) * sizeof *d->lt);
    bp__free(a, d->ls, (d->ntouch + 1) * sizeof *d->ls);
    bp__free(a, d->smask, nls * (size_t)d->W * sizeof *d->smask);
    bp__free(a, d->cnt, nls * sizeof *d->cnt);
    bp__free(a, d->mask, d->mask_cap * sizeof *d->mask);
    bp__free(a, d->s, d->s_cap * sizeof *d->s);
    bp__free(a, d->hash, d->hcap * sizeof *d->hash);
}

/* optimal's state cap per layer over n ops (the contract: schedule_internal.h). */
size_t bp__sched_optimal_cap(int32_t n)
{
    size_t cap = (size_t)1 << 20;
    if (n > 0 && cap * (size_t)n > ((size_t)1 << 24)) cap = ((size_t)1 << 24) / (size_t)n;
    return cap < 256 ? 256 : cap;
}

int bp__sched_dp(const bp__sgraph *sg, const bp__sim *start, const int32_t *region, int32_t k, uint64_t bound,
                 size_t max_states, uint64_t *work, uint64_t work_limit, double deadline, int32_t *out,
                 bp__dp_result *res)
{
    return bp__sched_dp_groups(sg, start, region, k, NULL, k, bound, max_states, work, work_limit, deadline, out, res);
}

int bp__sched_dp_groups(const bp__sgraph *sg, const bp__sim *start, const int32_t *region, int32_t k,
                        const int32_t *grp_off, int32_t ng, uint64_t bound, size_t max_states, uint64_t *work,
                        uint64_t work_limit, double deadline, int32_t *out, bp__dp_result *res)
{
    res->peak = 0;
    res->proven = 0;
    res->states = 0;
    if (k <= 0) { res->proven = 1; return 1; }
    if (!grp_off) ng = k;
    if (max_states < 1) max_states = 1;
    dp d;
    memset(&d, 0, sizeof d);
    d.sg = sg;
    d.st = start;
    d.a = &sg->g->alloc;
    d.k = k;
    d.W = (k + 63) / 64;
    d.ops = region;
    int ret = -1;
    int32_t W = d.W;
    size_t ntouch = 0;
    dp_key *keys = bp__alloc(d.a, (size_t)k * sizeof *keys);
    int32_t *tmp = NULL;
    uint64_t *S2 = bp__alloc(d.a, (size_t)W * sizeof *S2);
    uint64_t *T = bp__alloc(d.a, (size_t)W * sizeof *T);
    uint64_t *gmask = bp__calloc(d.a, (size_t)ng * W, sizeof *gmask); /* group: its ops */
    uint64_t *gpred = bp__calloc(d.a, (size_t)ng * W, sizeof *gpred); /* group: predecessors outside it */
    d.pmask = bp__calloc(d.a, (size_t)k * W, sizeof *d.pmask);
    d.lt_off = bp__calloc(d.a, (size_t)k + 1, sizeof *d.lt_off);
    if (!keys || !S2 || !T || !gmask || !gpred || !d.pmask || !d.lt_off) goto out;
    for (int32_t i = 0; i < k; i++) {
        keys[i] = (dp_key){region[i], i};
        ntouch += (size_t)(sg->to_off[region[i] + 1] - sg->to_off[region[i]]);
    }
    d.ntouch = ntouch;
    qsort(keys, (size_t)k, sizeof *keys, dp_key_cmp);
    for (int32_t i = 0; i < k; i++) {
        int32_t v = region[i];
        for (int32_t j = sg->pr_off[v]; j < sg->pr_off[v + 1]; j++) {
            int32_t l = dp_local(keys, k, sg->pr[j]);
            if (l >= 0) d.pmask[(size_t)i * W + l / 64] |= 1ull << (l % 64);
        }
    }
#define GLO(g) (grp_off ? grp_off[g] : (g))
#define GHI(g) (grp_off ? grp_off[(g) + 1] : (g) + 1)
    for (int32_t g = 0; g < ng; g++) {
        uint64_t *gm = gmask + (size_t)g * W, *gp = gpred + (size_t)g * W;
        for (int32_t i = GLO(g); i < GHI(g); i++) {
            gm[i / 64] |= 1ull << (i % 64);
            for (int32_t w = 0; w < W; w++) gp[w] |= d.pmask[(size_t)i * W + w];
        }
        for (int32_t w = 0; w < W; w++) gp[w] &= ~gm[w];
    }
    /* local storages */
    tmp = bp__alloc(d.a, (ntouch + 1) * sizeof *tmp);
    d.lt = bp__alloc(d.a, (ntouch + 1) * sizeof *d.lt);
    if (!tmp || !d.lt) goto out;
    size_t nt = 0;
    for (int32_t i = 0; i < k; i++)
        for (int32_t j = sg->to_off[region[i]]; j < sg->to_off[region[i] + 1]; j++) tmp[nt++] = sg->to[j];
    qsort(tmp, nt, sizeof *tmp, i32_cmp);
    size_t nls = 0;
    for (size_t i = 0; i < nt; i++)
        if (!nls || tmp[nls - 1] != tmp[i]) tmp[nls++] = tmp[i];
    d.nls = (int32_t)nls;
    d.ls = tmp;
    tmp = NULL;
    d.smask = bp__calloc(d.a, (nls ? nls : 1) * (size_t)W, sizeof *d.smask);
    d.cnt = bp__calloc(d.a, nls ? nls : 1, sizeof *d.cnt);
    if (!d.smask || !d.cnt) goto out;
    {
        size_t p = 0;
        for (int32_t i = 0; i < k; i++) {
            for (int32_t j = sg->to_off[region[i]]; j < sg->to_off[region[i] + 1]; j++) {
                int32_t y = sg->to[j], lo = 0, hi = d.nls;
                while (lo < hi) { int32_t mid = lo + (hi - lo) / 2; if (d.ls[mid] < y) lo = mid + 1; else hi = mid; }
                d.lt[p++] = lo;
                d.smask[(size_t)lo * W + i / 64] |= 1ull << (i % 64);
            }
            d.lt_off[i + 1] = (int32_t)p;
        }
    }
    /* states: layer sizes are bounded by 2 * max_states while building */
    d.hcap = 64; /* grows with the layer (load <= 1/2) */
    d.hash = bp__alloc(d.a, d.hcap * sizeof *d.hash);
    if (!d.hash || !dp_reserve(&d, 1)) goto out;
    for (size_t i = 0; i < d.hcap; i++) d.hash[i] = -1;
    memset(d.mask, 0, (size_t)W * 8);
    d.s[0] = (dp_state){0, start->mem, -1, -1};
    d.n = 1;
    bool truncated = false;
    size_t lo = 0, hi = 1;
    uint32_t tick = 0; /* states expanded, for the clock */
    for (int32_t L = 0; L < ng; L++) {
        for (size_t i = 0; i < d.hcap; i++) d.hash[i] = -1;
        for (size_t si = lo; si < hi; si++) {
            const uint64_t *S = d.mask + si * (size_t)W;
            for (int32_t g = 0; g < ng; g++) {
                int32_t g0 = GLO(g);
                if (S[g0 / 64] >> (g0 % 64) & 1) continue;
                bool ready = true;
                for (int32_t w = 0; w < W && ready; w++) ready = (gpred[(size_t)g * W + w] & ~S[w]) == 0;
                if (!ready) continue;
                /* run the group's ops in their order */
                uint64_t pk = d.s[si].peak, mem = d.s[si].mem, during = 0, after = mem;
                const uint64_t *X = S;
                if (GHI(g) - g0 > 1) { memcpy(T, S, (size_t)W * 8); X = T; }
                for (int32_t i = g0; i < GHI(g); i++) {
                    dp_step(&d, X, mem, i, &during, &after);
                    *work += (uint64_t)(d.lt_off[i + 1] - d.lt_off[i] + 1) * (uint64_t)W;
                    if (during >= bound) break;
                    if (during > pk) pk = during;
                    mem = after;
                    if (X == T) T[i / 64] |= 1ull << (i % 64);
                }
                if (during >= bound) continue;
                if (X == T) memcpy(S2, T, (size_t)W * 8);
                else {
                    memcpy(S2, S, (size_t)W * 8);
                    S2[g0 / 64] |= 1ull << (g0 % 64);
                }
                if ((d.n - hi + 1) * 2 > d.hcap) {
                    if (!dp_rehash(&d, hi)) goto out;
                    *work += (uint64_t)(d.n - hi) * (uint64_t)(W + 4);
                }
                int64_t h = dp_lookup(&d, S2, hi);
                *work += (uint64_t)W * 2 + 4; /* hash, compare */
                if (h >= 0) {
                    dp_state *x = &d.s[h];
                    if (pk < x->peak || (pk == x->peak && after < x->mem)) *x = (dp_state){pk, after, (int32_t)si, g};
                    continue;
                }
                if (!dp_reserve(&d, d.n + 1)) goto out;
                S = d.mask + si * (size_t)W; /* the arena may have moved */
                memcpy(d.mask + d.n * (size_t)W, S2, (size_t)W * 8);
                d.s[d.n] = (dp_state){pk, after, (int32_t)si, g};
                d.hash[-h - 2] = (int32_t)d.n;
                d.n++;
                res->states++;
                *work += (uint64_t)W + 4;
                if (d.n - hi >= 2 * max_states) {
                    if (!dp_truncate(&d, hi, max_states)) goto out;
                    *work += 2 * max_states * (uint64_t)(W + 40); /* sort and copy */
                    truncated = true;
                }
            }
            /* out of work, or of time (the clock read every 64 states) */
            bool late = deadline > 0 && (++tick & 63) == 0 && bp__sched_late(deadline);
            if ((work_limit && *work > work_limit) || late) { ret = 0; truncated = true; goto done; }
        }
        if (d.n == hi) { ret = 0; goto done; } /* nothing below the bound */
        if (d.n - hi > max_states) {
            *work += (uint64_t)(d.n - hi) * (uint64_t)(W + 40);
            if (!dp_truncate(&d, hi, max_states)) goto out;
            truncated = true;
        }
        lo = hi;
        hi = d.n;
    }
    /* One state left: everything scheduled.  Walk back. */
    {
        size_t best = lo;
        res->peak = d.s[best].peak;
        int32_t idx = (int32_t)best, at = k;
        for (int32_t L = ng - 1; L >= 0; L--) {
            int32_t g = d.s[idx].op;
            for (int32_t i = GHI(g) - 1; i >= GLO(g); i--) out[--at] = region[i];
            idx = d.s[idx].parent;
        }
        ret = 1;
    }
done:
    res->proven = !truncated;
out:
    bp__free(d.a, keys, (size_t)k * sizeof *keys);
    bp__free(d.a, S2, (size_t)W * sizeof *S2);
    bp__free(d.a, T, (size_t)W * sizeof *T);
    bp__free(d.a, gmask, (size_t)ng * W * sizeof *gmask);
    bp__free(d.a, gpred, (size_t)ng * W * sizeof *gpred);
    bp__free(d.a, tmp, (ntouch + 1) * sizeof *tmp);
    dp_free(&d);
    return ret;
#undef GLO
#undef GHI
}

