/*
 * history.c — the tenant history of a run and its checker.
 *
 * With bp_exec_options.history the executor stamps every op's start and end,
 * and every storage's ALLOC and FREE, with a tick from one global counter
 * (so events on different threads are totally ordered) and the thread.  The
 * writer turns that into tenants: each tensor that is written into its own
 * bytes (views share their source's tenant) with its byte range, its ALLOC
 * (the storage's, for the storage's first tenant), its write (the producer),
 * every read (the last marked), its FREE (for the storage's last tenant).
 * Tenants are grouped into ranges: maximal sets of tenants whose byte ranges
 * overlap transitively, each listed in order of its write.
 *
 * The checker needs nothing but the file: it walks the tenants of each
 * address space in order of their write, keeps the owner of every byte in a
 * segment map, and flags the previous owner A of any byte a new tenant B
 * writes when an access of A (other than by B's writer itself, which reads
 * before it writes: in-place) ends after B's write starts; and any tenant
 * read after its FREE.  Only the latest owner of a byte needs checking: an
 * earlier one that is still being read would already conflict with it.
 *
 * Format, one record per line (NAME = the rest of the line):
 *   bufplan-history 1
 *   graph NAME
 *   run MODE THREADS ARENA_BYTES
 *   range SPACE LO HI                  SPACE = arena (offsets) | heap (addresses)
 *   tenant ID SPACE LO BYTES NAME
 *   alloc TICK THREAD | alloc - -      (- : inherits the storage, in place)
 *   write START END THREAD OP NAME     (OP -1: written before the first op)
 *   read START END THREAD OP NAME      (one per reader, by start)
 *   last-read START END THREAD OP NAME
 *   free TICK THREAD | free - -
 */
#define _POSIX_C_SOURCE 200809L
#include "exec/exec_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ writer */

typedef struct hw_ten { int32_t t; int space; uint64_t lo, hi, wstart; } hw_ten;

static int hw_cmp(const void *x, const void *y)
{
    const hw_ten *a = x, *b = y;
    if (a->space != b->space) return a->space < b->space ? -1 : 1;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return a->wstart < b->wstart ? -1 : a->wstart > b->wstart;
}

typedef struct hw_acc { uint64_t s, e; int32_t thr, op; } hw_acc;

static int hw_acc_cmp(const void *x, const void *y)
{
    const hw_acc *a = x, *b = y;
    return a->s < b->s ? -1 : a->s > b->s;
}

bp_status bp_exec_write_history(const bp_exec *ex, const char *path, bp_error *err)
{
    if (!ex || !path) return bp__err(err, BP_ERR_USAGE, "history: NULL executor or path");
    if (!ex->o.history) return bp__err(err, BP_ERR_USAGE, "%s: history was not recorded (bp_exec_options.history)", ex->g->name);
    const bp_graph *g = ex->g;
    int32_t nt = ex->nt;
    const bp_allocator *al = &ex->a;
    size_t nt1 = (size_t)nt + 1, nio1 = g->n_io + 1;
    hw_ten *ts = bp__alloc(al, nt1 * sizeof *ts);
    hw_acc *acc = bp__alloc(al, nio1 * sizeof *acc);
    int32_t *tid = bp__alloc(al, nt1 * sizeof *tid);
    int32_t *first_ten = bp__alloc(al, nt1 * sizeof *first_ten), *last_ten = bp__alloc(al, nt1 * sizeof *last_ten);
    uint64_t *tws = bp__calloc(al, nt1, sizeof *tws);
#define HW_FREE() do { bp__free(al, ts, nt1 * sizeof *ts); bp__free(al, acc, nio1 * sizeof *acc); \
        bp__free(al, tid, nt1 * sizeof *tid); bp__free(al, first_ten, nt1 * sizeof *first_ten); \
        bp__free(al, last_ten, nt1 * sizeof *last_ten); bp__free(al, tws, nt1 * sizeof *tws); } while (0)
    if (!ts || !acc || !tid || !first_ten || !last_ten || !tws) {
        HW_FREE();
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory writing the history", g->name);
    }
    uintptr_t base = (uintptr_t)bp_pool_arena_base(ex->pool);
    size_t n = 0;
    for (int32_t t = 0; t < nt; t++) { first_ten[t] = last_ten[t] = -1; tid[t] = -1; }
    for (int32_t t = 0; t < nt; t++) {
        if (!bp__exec_is_tenant(ex, t) || !ex->tbytes[t]) continue;
        int32_t r = ex->root[t], pr = g->t[t].producer;
        uint64_t ws;
        if (pr >= 0) { if (!ex->op_t0[pr]) continue; ws = ex->op_t0[pr]; }
        else if (ex->sk[r] == BP__SK_ARENA) ws = ex->s_alloc[r];
        else continue;  /* inputs and weights outside the arena: never rewritten */
        hw_ten x = {t, 0, 0, 0, ws};
        if (ex->sk[r] == BP__SK_ARENA) {
            x.space = 0;
            x.lo = (uint64_t)((uintptr_t)ex->tptr[t] - base);
        } else {
            x.space = 1;
            x.lo = ex->sk[r] == BP__SK_POOL ? (uint64_t)ex->s_addr[r] : (uint64_t)(uintptr_t)ex->sptr[r];
        }
        x.hi = x.lo + ex->tbytes[t];
        ts[n++] = x;
        tws[t] = ws;
        if (first_ten[r] < 0 || ws < tws[first_ten[r]]) first_ten[r] = t;
        if (last_ten[r] < 0 || ws > tws[last_ten[r]]) last_ten[r] = t;
    }
    /* the tenant of every tensor (views count for their source's tenant) */
    for (int32_t t = 0; t < nt; t++) if (bp__exec_is_tenant(ex, t)) tid[t] = t;
    for (int32_t t = 0; t < nt; t++) {
        if (tid[t] >= 0) continue;
        int32_t u = t, hops = 0;
        while (tid[u] < 0 && ex->view_src[u] >= 0 && hops++ < nt) u = ex->view_src[u];
        tid[t] = tid[u];
    }
    qsort(ts, n, sizeof *ts, hw_cmp);

    bp__outfile of;
    bp_status s = bp__out_open(&of, path, err);
    if (s) { HW_FREE(); return s; }
    FILE *f = of.f;
    fprintf(f, "bufplan-history 1\ngraph %s\nrun %s %d %" PRIu64 "\n", g->name, bp_exec_mode_name(ex->o.mode), ex->threads,
            ex->arena_bytes);
    static const char *const space_name[2] = {"arena", "heap"};
    for (size_t i = 0; i < n;) {
        /* a range: tenants whose bytes overlap transitively */
        size_t j = i + 1;
        uint64_t hi = ts[i].hi;
        while (j < n && ts[j].space == ts[i].space && ts[j].lo < hi) { if (ts[j].hi > hi) hi = ts[j].hi; j++; }
        fprintf(f, "range %s %" PRIu64 " %" PRIu64 "\n", space_name[ts[i].space], ts[i].lo, hi);
        /* within the range, in order of write */
        for (size_t a = i + 1; a < j; a++) {
            hw_ten v = ts[a];
            size_t b = a;
            while (b > i && ts[b - 1].wstart > v.wstart) { ts[b] = ts[b - 1]; b--; }
            ts[b] = v;
        }
        for (size_t k = i; k < j; k++) {
            int32_t t = ts[k].t, r = ex->root[t], pr = g->t[t].producer;
            fprintf(f, "tenant %d %s %" PRIu64 " %" PRIu64 " %s\n", (int)t, space_name[ts[k].space], ts[k].lo,
                    ts[k].hi - ts[k].lo, bp_graph_tensor_name(g, t));
            if (first_ten[r] == t && ex->s_alloc[r]) fprintf(f, "alloc %" PRIu64 " %d\n", ex->s_alloc[r], (int)ex->s_alloc_thr[r]);
            else fprintf(f, "alloc - -\n");
            if (pr >= 0)
                fprintf(f, "write %" PRIu64 " %" PRIu64 " %d %d %s\n", ex->op_t0[pr], ex->op_t1[pr], (int)ex->op_thr[pr], (int)pr,
                        bp__names_get(&g->onames, pr));
            else
                fprintf(f, "write %" PRIu64 " %" PRIu64 " 0 -1 -\n", ex->s_alloc[r], ex->s_alloc[r]);
            /* readers: consumers of every tensor whose tenant is t */
            size_t na = 0;
            for (int32_t m = ex->mem_off[r]; m < ex->mem_off[r + 1]; m++) {
                int32_t u = ex->mem[m];
                if (tid[u] != t) continue;
                int32_t nc = 0;
                const int32_t *cons = g->cons + g->cons_off[u];
                nc = g->cons_off[u + 1] - g->cons_off[u];
                for (int32_t c = 0; c < nc; c++) {
                    int32_t op = cons[c];
                    if (!ex->op_t0[op]) continue;
                    bool dup = false;
                    for (size_t q = 0; q < na; q++) if (acc[q].op == op) { dup = true; break; }
                    if (!dup) acc[na++] = (hw_acc){ex->op_t0[op], ex->op_t1[op], ex->op_thr[op], op};
                }
            }
            qsort(acc, na, sizeof *acc, hw_acc_cmp);
            size_t last = 0;
            for (size_t q = 1; q < na; q++) if (acc[q].e > acc[last].e) last = q;
            for (size_t q = 0; q < na; q++)
                fprintf(f, "%s %" PRIu64 " %" PRIu64 " %d %d %s\n", q == last ? "last-read" : "read", acc[q].s, acc[q].e,
                        (int)acc[q].thr, (int)acc[q].op, bp__names_get(&g->onames, acc[q].op));
            if (last_ten[r] == t && ex->s_free[r]) fprintf(f, "free %" PRIu64 " %d\n", ex->s_free[r], (int)ex->s_free_thr[r]);
            else fprintf(f, "free - -\n");
        }
        i = j;
    }
    HW_FREE();
    if (ferror(f)) { bp__out_abort(&of); return bp__err(err, BP_ERR_IO, "%s: write error", path); }
    return bp__out_commit(&of, err);
}

/* ----------------------------------------------------------------- checker */

typedef struct hc_acc { uint64_t s, e; int32_t op; } hc_acc;
typedef struct hc_ten {
    int space;
    uint64_t lo, hi;
    uint64_t ws, we, free_tick;   /* free_tick 0: none */
    int32_t wop;
    size_t acc0, nacc;            /* reads in the acc array */
    size_t name_off;              /* into the names buffer */
    long line;
} hc_ten;

typedef struct hc {
    hc_ten *t; size_t n, cap;
    hc_acc *a; size_t na, capa;
    char *names; size_t nn, capn;
} hc;

static const bp_allocator *const hc_al = &bp__libc_allocator;

static bool hc_name(hc *h, const char *s, size_t *off)
{
    size_t L = strlen(s);
    while (L && (s[L - 1] == '\n' || s[L - 1] == '\r')) L--;
    if (!bp__grow(hc_al, (void **)&h->names, &h->capn, h->nn + L + 1, 1)) return false;
    memcpy(h->names + h->nn, s, L);
    h->names[h->nn + L] = 0;
    *off = h->nn;
    h->nn += L + 1;
    return true;
}

static int hc_order(const void *x, const void *y, const hc_ten *T)
{
    const hc_ten *a = &T[*(const uint32_t *)x], *b = &T[*(const uint32_t *)y];
    if (a->space != b->space) return a->space < b->space ? -1 : 1;
    return a->ws < b->ws ? -1 : a->ws > b->ws;
}

/* merge sort of tenant indices (no qsort_r in C11) */
static void hc_sort(uint32_t *v, uint32_t *tmp, size_t n, const hc_ten *T)
{
    if (n < 2) return;
    size_t h = n / 2;
    hc_sort(v, tmp, h, T);
    hc_sort(v + h, tmp, n - h, T);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = hc_order(&v[j], &v[i], T) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

bp_status bp_history_check(const char *path, FILE *report, uint64_t *n_conflicts, bp_error *err)
{
    if (n_conflicts) *n_conflicts = 0;
    if (!path) return bp__err(err, BP_ERR_USAGE, "history: NULL path");
    FILE *f = fopen(path, "r");
    if (!f) return bp__err(err, BP_ERR_IO, "%s: cannot open the history file", path);
    hc h;
    memset(&h, 0, sizeof h);
    char line[4096];
    long ln = 0;
    bp_status s = BP_OK;
    hc_ten *cur = NULL;
    while (fgets(line, sizeof line, f)) {
        ln++;
        char kw[16], sp[16];
        int pos = 0;
        if (sscanf(line, "%15s%n", kw, &pos) != 1) continue;
        if (ln == 1) {
            if (strcmp(kw, "bufplan-history")) { s = bp__err(err, BP_ERR_INVALID, "%s:1: not a bufplan history file", path); break; }
            continue;
        }
        if (!strcmp(kw, "graph") || !strcmp(kw, "run") || !strcmp(kw, "range")) continue;
        if (!strcmp(kw, "tenant")) {
            int id, p2 = 0;
            uint64_t lo, bytes;
            if (sscanf(line + pos, "%d %15s %" SCNu64 " %" SCNu64 " %n", &id, sp, &lo, &bytes, &p2) < 4 ||
                (strcmp(sp, "arena") && strcmp(sp, "heap")) || lo + bytes < lo) {
                s = bp__err(err, BP_ERR_INVALID, "%s:%ld: bad tenant line", path, ln);
                break;
            }
            if (!bp__grow(hc_al, (void **)&h.t, &h.cap, h.n + 1, sizeof *h.t)) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path); break; }
            cur = &h.t[h.n++];
            memset(cur, 0, sizeof *cur);
            cur->space = sp[0] == 'h';
            cur->lo = lo;
            cur->hi = lo + bytes;
            cur->acc0 = h.na;
            cur->line = ln;
            cur->wop = -2;
            if (!hc_name(&h, line + pos + p2, &cur->name_off)) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path); break; }
            continue;
        }
        if (!cur) { s = bp__err(err, BP_ERR_INVALID, "%s:%ld: \"%s\" before any tenant", path, ln, kw); break; }
        if (!strcmp(kw, "alloc")) continue;
        if (!strcmp(kw, "free")) {
            uint64_t tk;
            if (sscanf(line + pos, "%" SCNu64, &tk) == 1) cur->free_tick = tk;
            continue;
        }
        if (!strcmp(kw, "write") || !strcmp(kw, "read") || !strcmp(kw, "last-read")) {
            uint64_t a, b;
            int thr, op;
            if (sscanf(line + pos, "%" SCNu64 " %" SCNu64 " %d %d", &a, &b, &thr, &op) != 4 || b < a) {
                s = bp__err(err, BP_ERR_INVALID, "%s:%ld: bad %s line", path, ln, kw);
                break;
            }
            if (kw[0] == 'w') { cur->ws = a; cur->we = b; cur->wop = op; continue; }
            if (!bp__grow(hc_al, (void **)&h.a, &h.capa, h.na + 1, sizeof *h.a)) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path); break; }
            h.a[h.na++] = (hc_acc){a, b, op};
            cur->nacc++;
            continue;
        }
        s = bp__err(err, BP_ERR_INVALID, "%s:%ld: unknown record \"%s\"", path, ln, kw);
        break;
    }
    if (!s && ln == 0) s = bp__err(err, BP_ERR_INVALID, "%s: empty file", path);
    fclose(f);
    for (size_t i = 0; i < h.n && !s; i++)
        if (h.t[i].wop == -2) s = bp__err(err, BP_ERR_INVALID, "%s:%ld: tenant without a write", path, h.t[i].line);

    uint64_t conflicts = 0;
    uint32_t *ord = NULL, *tmp = NULL;
    int32_t *prev = NULL;
    size_t n_prev = 0, cap_prev = 0;
    bp__segmap sm = {.a = hc_al};
    if (!s && h.n) {
        ord = bp__alloc(hc_al, h.n * sizeof *ord);
        tmp = bp__alloc(hc_al, h.n * sizeof *tmp);
        if (!ord || !tmp) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path);
    }
    if (!s && h.n) {
        for (size_t i = 0; i < h.n; i++) ord[i] = (uint32_t)i;
        hc_sort(ord, tmp, h.n, h.t);
        bool first_err = true;
        for (size_t k = 0; k < h.n; k++) {
            hc_ten *B = &h.t[ord[k]];
            const char *bn = h.names + B->name_off;
            /* a read after the tenant's own FREE */
            for (size_t q = 0; q < B->nacc; q++) {
                const hc_acc *x = &h.a[B->acc0 + q];
                if (B->free_tick && x->e > B->free_tick) {
                    conflicts++;
                    if (report) fprintf(report, "conflict: \"%s\" is read (ticks %" PRIu64 "-%" PRIu64 ") after its FREE (tick %" PRIu64 ")\n",
                                        bn, x->s, x->e, B->free_tick);
                    if (first_err) {
                        bp__err(err, BP_ERR_VERIFY, "%s: tenant \"%s\" is read after its FREE", path, bn);
                        first_err = false;
                    }
                    break;
                }
            }
            if (B->hi <= B->lo) continue;
            n_prev = 0;
            uint64_t off = B->space ? (UINT64_C(1) << 62) : 0;
            if (B->lo + off < B->lo) continue;
            if (!bp__segmap_set(&sm, B->lo + off, B->hi + off, (int32_t)ord[k], &prev, &n_prev, &cap_prev)) {
                s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            for (size_t q = 0; q < n_prev; q++) {
                hc_ten *A = &h.t[prev[q]];
                uint64_t last = A->wop == B->wop ? 0 : A->we;
                int32_t last_op = A->wop;
                for (size_t r = 0; r < A->nacc; r++) {
                    const hc_acc *x = &h.a[A->acc0 + r];
                    if (x->op == B->wop) continue;   /* B's writer reads A before writing B */
                    if (x->e > last) { last = x->e; last_op = x->op; }
                }
                if (last <= B->ws) continue;
                conflicts++;
                const char *an = h.names + A->name_off;
                uint64_t olo = A->lo > B->lo ? A->lo : B->lo, ohi = A->hi < B->hi ? A->hi : B->hi;
                if (report)
                    fprintf(report, "conflict: \"%s\" (line %ld) is written at tick %" PRIu64 " over %s bytes [%" PRIu64 ", %" PRIu64
                            ") while \"%s\" (line %ld) is still accessed until tick %" PRIu64 " (op %d)\n", bn, B->line, B->ws,
                            B->space ? "heap" : "arena", olo, ohi, an, A->line, last, (int)last_op);
                if (first_err) {
                    bp__err(err, BP_ERR_VERIFY, "%s: tenants \"%s\" and \"%s\" interleave: \"%s\" is written at tick %" PRIu64
                            " while \"%s\" is accessed until tick %" PRIu64, path, an, bn, bn, B->ws, an, last);
                    first_err = false;
                }
            }
        }
        if (!s && conflicts) s = BP_ERR_VERIFY;
    }
    if (n_conflicts) *n_conflicts = conflicts;
    bp__segmap_free(&sm);
    bp__free(hc_al, ord, h.n * sizeof *ord);
    bp__free(hc_al, tmp, h.n * sizeof *tmp);
    bp__free(hc_al, prev, cap_prev * sizeof *prev);
    bp__free(hc_al, h.t, h.cap * sizeof *h.t);
    bp__free(hc_al, h.a, h.capa * sizeof *h.a);
    bp__free(hc_al, h.names, h.capn);
    return s;
}
