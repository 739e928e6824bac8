/*
 * plan_cache.c — plans saved in a directory, keyed by what produced them.
 *
 * Key: a 128-bit hash of the graph's structure (bp_graph_hash), the shape
 * signature, the canonical text of the planner options and bufplan's
 * version.  The file is DIR/<32 hex digits of the key>.bpc.
 *
 * File (docs/DYNAMIC.md): a fixed prefix (magic, format version, byte-order
 * mark), a text header that repeats the whole key (so a name collision or a
 * file from another version is caught by comparison, not trusted), the plan
 * as flat little-endian arrays (schedule, then one array per tensor field),
 * and a trailer with a 64-bit checksum of everything before it.  Binary,
 * because JSON costs ~2 KB and a parse per tensor; this costs 33 bytes and a
 * memcpy.  The event table is not stored: it is rebuilt from the schedule
 * and placements, so it cannot disagree with them.
 *
 * Reading trusts nothing: size, magic, version, byte order, checksum, header
 * = key, counts = graph, then every field is range-checked (the schedule a
 * permutation, intervals inside it, sizes equal the graph's, placements
 * inside the arena, alias roots valid) and, unless turned off, bp_verify
 * runs.  Any failure is a warning and a miss: the caller plans again.
 *
 * Writing builds the image in memory, writes it to a mkstemp file in the
 * same directory and renames it over the final name: rename is atomic, so
 * a reader (another process) sees the old file, the new one or none, never
 * half of one.  Concurrent writers of one key all write the same content;
 * the last rename wins.
 */
#define _POSIX_C_SOURCE 200809L
#include "plan/plan_internal.h"
#include "bufplan_dyn.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PC_MAGIC "BPCACHE\x1a"
#define PC_TRAILER "BPCEND\0\n"
#define PC_FORMAT 5u
#define PC_ENDIAN 0x01020304u

/* ------------------------------------------------------------- checksum */

/* Four independent multiply-rotate lanes over 8-byte words (so the CPU runs
 * them in parallel), folded with the length at the end. */
#define PC_K1 0x9e3779b97f4a7c15ull
#define PC_K2 0xc2b2ae3d27d4eb4full
#define PC_K3 0x165667b19e3779f9ull

typedef struct pc_hasher {
    uint64_t lane[4];
    unsigned char buf[32];
    size_t nbuf;
    uint64_t len;
} pc_hasher;

static inline uint64_t pc_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t pc_round(uint64_t h, uint64_t w) { return pc_rotl(h ^ (w * PC_K2), 31) * PC_K1; }
static inline uint64_t pc_load(const unsigned char *p) { uint64_t w; memcpy(&w, p, 8); return w; }

static void pc_init(pc_hasher *h, uint64_t seed)
{
    h->lane[0] = seed + PC_K1;
    h->lane[1] = seed ^ PC_K2;
    h->lane[2] = seed + PC_K3;
    h->lane[3] = seed - PC_K1;
    h->nbuf = 0;
    h->len = 0;
}

static void pc_blocks(pc_hasher *h, const unsigned char *p, size_t nblocks)
{
    uint64_t a = h->lane[0], b = h->lane[1], c = h->lane[2], d = h->lane[3];
    for (size_t i = 0; i < nblocks; i++, p += 32) {
        a = pc_round(a, pc_load(p));
        b = pc_round(b, pc_load(p + 8));
        c = pc_round(c, pc_load(p + 16));
        d = pc_round(d, pc_load(p + 24));
    }
    h->lane[0] = a; h->lane[1] = b; h->lane[2] = c; h->lane[3] = d;
}

static void pc_update(pc_hasher *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    h->len += n;
    if (h->nbuf) {
        size_t take = 32 - h->nbuf < n ? 32 - h->nbuf : n;
        memcpy(h->buf + h->nbuf, p, take);
        h->nbuf += take;
        p += take;
        n -= take;
        if (h->nbuf < 32) return;
        pc_blocks(h, h->buf, 1);
        h->nbuf = 0;
    }
    pc_blocks(h, p, n / 32);
    p += n / 32 * 32;
    n %= 32;
    memcpy(h->buf, p, n);
    h->nbuf = n;
}

static uint64_t pc_mix(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Folds the lanes; `which` picks one of two independent 64-bit outputs. */
static uint64_t pc_final(const pc_hasher *h0, int which)
{
    pc_hasher h = *h0;
    unsigned char tail[32] = {0};
    memcpy(tail, h.buf, h.nbuf);
    tail[31] = (unsigned char)h.nbuf;
    pc_blocks(&h, tail, 1);
    uint64_t r = h.len * PC_K3;
    if (!which) r ^= pc_rotl(h.lane[0], 1) + pc_rotl(h.lane[1], 7) + pc_rotl(h.lane[2], 12) + pc_rotl(h.lane[3], 18);
    else r ^= pc_rotl(h.lane[3], 3) ^ (pc_rotl(h.lane[2], 11) + h.lane[0] * PC_K2) ^ pc_rotl(h.lane[1], 29) * PC_K1;
    return pc_mix(r + (uint64_t)which);
}

uint64_t bp_cache_checksum(const void *data, size_t n)
{
    pc_hasher h;
    pc_init(&h, 0);
    pc_update(&h, data, n);
    return pc_final(&h, 0);
}

/* ---------------------------------------------------------- graph hash */

static void pc_u64(pc_hasher *h, uint64_t v) { pc_update(h, &v, 8); }
static void pc_str(pc_hasher *h, const char *s) { size_t n = strlen(s); pc_u64(h, n); pc_update(h, s, n); }

/* Records are staged in a buffer so the hasher sees long runs; names are
 * hashed as whole pools (they are stored back to back in id order). */
typedef struct pc_stage { pc_hasher *h; uint64_t buf[512]; size_t n; } pc_stage;
static void pc_stage_flush(pc_stage *s) { pc_update(s->h, s->buf, s->n * 8); s->n = 0; }
static inline void pc_stage_put(pc_stage *s, uint64_t v) { if (s->n == 512) pc_stage_flush(s); s->buf[s->n++] = v; }

static void pc_names(pc_hasher *h, const bp__names *nm)
{
    pc_u64(h, nm->n);
    pc_u64(h, nm->pool_len);
    if (nm->pool_len) pc_update(h, nm->pool, nm->pool_len);
}

void bp_graph_hash(const bp_graph *g, uint64_t out[2])
{
    pc_hasher h;
    pc_init(&h, 0x62756670ull);
    pc_u64(&h, g->n_t);
    pc_u64(&h, g->n_o);
    pc_names(&h, &g->tnames);
    pc_names(&h, &g->onames);
    pc_names(&h, &g->types);
    pc_names(&h, &g->syms);
    pc_stage st = {&h, {0}, 0};
    for (size_t k = 0; k < g->syms.n; k++) pc_stage_put(&st, (uint64_t)(k < g->cap_sym_val ? g->sym_val[k] : -1));
    for (size_t t = 0; t < g->n_t; t++) {
        const bp__tensor *x = &g->t[t];
        pc_stage_put(&st, x->bytes);
        pc_stage_put(&st, (uint64_t)(uint32_t)x->view_of | (uint64_t)x->flags << 32 | (uint64_t)x->dtype << 40 | (uint64_t)x->rank << 48 |
                              (uint64_t)(x->has_shape | x->dynamic << 1 | x->is_const << 2) << 56);
        if (x->has_shape)   /* symbols by id: the syms pool above gives their names */
            for (int i = 0; i < x->rank; i++) pc_stage_put(&st, (uint64_t)g->dims[x->dims_off + i]);
    }
    for (size_t o = 0; o < g->n_o; o++) {
        const bp__op *x = &g->o[o];
        uint64_t cost;
        memcpy(&cost, &x->cost, 8);
        pc_stage_put(&st, (uint64_t)x->n_in | (uint64_t)x->n_out << 16 | (uint64_t)(uint32_t)x->type << 32);
        pc_stage_put(&st, cost);
        const int32_t *io = g->io + x->io_off;
        for (int i = 0; i < x->n_in + x->n_out; i++) pc_stage_put(&st, (uint64_t)(uint32_t)io[i]);
    }
    pc_stage_put(&st, g->n_inpl);
    for (size_t i = 0; i < g->n_inpl; i++)
        pc_stage_put(&st, (uint64_t)(uint32_t)g->inpl[i].op | (uint64_t)(uint32_t)g->inpl[i].out << 32), pc_stage_put(&st, (uint64_t)(uint32_t)g->inpl[i].in);
    pc_stage_put(&st, g->n_bodies);
    for (size_t i = 0; i < g->n_bodies; i++) {   /* control flow: each body's own hash and io list */
        const bp__body *b = &g->bodies[i];
        uint64_t bh[2];
        bp_graph_hash(b->g, bh);
        pc_stage_put(&st, (uint64_t)(uint32_t)b->op | (uint64_t)b->kind << 32);
        pc_stage_put(&st, (uint64_t)(uint32_t)b->reserve);
        pc_stage_put(&st, bh[0]);
        pc_stage_put(&st, bh[1]);
        for (int32_t q = 0; q < b->n_io; q++) {
            const bp_body_io *e = &b->io[q];
            pc_stage_put(&st, (uint64_t)(uint32_t)e->body_tensor | (uint64_t)e->kind << 32);
            pc_stage_put(&st, (uint64_t)(uint32_t)e->parent | (uint64_t)(uint32_t)e->link << 32);
        }
    }
    pc_stage_flush(&st);
    out[0] = pc_final(&h, 0);
    out[1] = pc_final(&h, 1);
}

/* ------------------------------------------------------------ signature */

typedef struct pc_pair { const char *sym; int64_t val; } pc_pair;

static int pc_pair_cmp(const void *a, const void *b)
{
    return strcmp(((const pc_pair *)a)->sym, ((const pc_pair *)b)->sym);
}

bp_status bp_signature(int n, const char *const *syms, const int64_t *vals, char out[BP_SIG_MAX], bp_error *err)
{
    out[0] = 0;
    if (n < 0 || (n > 0 && (!syms || !vals))) return bp__err(err, BP_ERR_USAGE, "signature: bad arguments");
    if (n > 4096) return bp__err(err, BP_ERR_LIMIT, "signature: %d symbols is too many", n);
    const bp_allocator *al = &bp__libc_allocator;
    size_t psz = (size_t)(n ? n : 1) * sizeof(pc_pair);
    pc_pair *p = bp__alloc(al, psz);
    if (!p) return bp__err(err, BP_ERR_NOMEM, "signature: out of memory");
    for (int i = 0; i < n; i++) {
        if (!syms[i] || !*syms[i]) { bp__free(al, p, psz); return bp__err(err, BP_ERR_USAGE, "signature: symbol %d has no name", i); }
        if (vals[i] < 0) { bp__free(al, p, psz); return bp__err(err, BP_ERR_USAGE, "signature: %s=%lld is negative", syms[i], (long long)vals[i]); }
        p[i] = (pc_pair){syms[i], vals[i]};
    }
    qsort(p, (size_t)n, sizeof *p, pc_pair_cmp);
    size_t len = 0;
    bp_status s = BP_OK;
    for (int i = 0; i < n && !s; i++) {
        if (i && !strcmp(p[i].sym, p[i - 1].sym)) {
            if (p[i].val != p[i - 1].val)
                s = bp__err(err, BP_ERR_USAGE, "signature: symbol \"%s\" given twice (%lld and %lld)", p[i].sym,
                            (long long)p[i - 1].val, (long long)p[i].val);
            continue;
        }
        int w = snprintf(out + len, BP_SIG_MAX - len, "%s%s=%lld", len ? "," : "", p[i].sym, (long long)p[i].val);
        if (w < 0 || (size_t)w >= BP_SIG_MAX - len) s = bp__err(err, BP_ERR_LIMIT, "signature: longer than %d bytes", BP_SIG_MAX - 1);
        else len += (size_t)w;
    }
    bp__free(al, p, psz);
    if (s) out[0] = 0;
    return s;
}

/* ------------------------------------------------------------------ keys */

static void pc_options_text(const bp_plan_options *o, char *buf, size_t cap)
{
    snprintf(buf, cap, "sched=%s;assign=%s;alpha=%.17g;beta=%.17g;budget=%" PRIu64 ";alignment=%" PRIu64
                       ";time_limit=%.17g;seed=%" PRIu64 ";no_alias=%d;plan_inputs=%d;plan_constants=%d;fence_aware=%d;threads=%d",
             bp_sched_name(o->sched), bp_assign_name(o->assign), o->alpha, o->beta, o->budget, o->alignment,
             o->time_limit, o->seed, o->no_alias, o->plan_inputs, o->plan_constants, o->fence_aware, o->threads);
    size_t n = strlen(buf);
    if (o->budget && n < cap)   /* the fallback decides plans over a budget only; keys without one stay as they were */
        snprintf(buf + n, cap - n, ";fallback=%u;host_bandwidth=%.17g", o->fallback, o->host_bandwidth);
    n = strlen(buf);
    if (o->concat_inplace && n < cap) snprintf(buf + n, cap - n, ";concat_inplace=1");   /* keys without it unchanged */
    n = strlen(buf);
    if (!bp__engine_is_default(o->engine) && n < cap)   /* the default keeps the keys it always had */
        snprintf(buf + n, cap - n, ";engine=%016" PRIx64, bp_engine_digest(o->engine));
}

bp_status bp_cache_key_make_hashed(const uint64_t graph_hash[2], const char *signature, const bp_plan_options *o,
                                   bp_cache_key *key, bp_error *err)
{
    if (!graph_hash || !key) return bp__err(err, BP_ERR_USAGE, "cache key: NULL argument");
    bp_plan_options defaults;
    if (!o) { bp_plan_options_init(&defaults); o = &defaults; }
    if (!signature) signature = "";
    if (strlen(signature) >= sizeof key->signature) return bp__err(err, BP_ERR_LIMIT, "cache key: the signature is too long");
    if (strchr(signature, '\n')) return bp__err(err, BP_ERR_USAGE, "cache key: the signature contains a newline");
    memset(key, 0, sizeof *key);
    key->graph[0] = graph_hash[0];
    key->graph[1] = graph_hash[1];
    snprintf(key->signature, sizeof key->signature, "%s", signature);
    pc_options_text(o, key->options, sizeof key->options);
    pc_hasher h;
    pc_init(&h, PC_FORMAT);
    pc_update(&h, key->graph, sizeof key->graph);
    pc_str(&h, key->signature);
    pc_str(&h, key->options);
    pc_str(&h, BP_VERSION_STRING);
    snprintf(key->file, sizeof key->file, "%016" PRIx64 "%016" PRIx64, pc_final(&h, 0), pc_final(&h, 1));
    return BP_OK;
}

bp_status bp_cache_key_make(const bp_graph *g, const char *signature, const bp_plan_options *o, bp_cache_key *key,
                            bp_error *err)
{
    if (!g) return bp__err(err, BP_ERR_USAGE, "cache key: NULL graph");
    uint64_t h[2];
    bp_graph_hash(g, h);
    return bp_cache_key_make_hashed(h, signature, o, key, err);
}

/* The header text: everything that must match. */
static int pc_header(const bp_cache_key *key, char *buf, size_t cap)
{
    return snprintf(buf, cap, "bufplan %s\ngraph %016" PRIx64 "%016" PRIx64 "\nsignature %s\noptions %s\n", BP_VERSION_STRING,
                    key->graph[0], key->graph[1], key->signature, key->options);
}

/* ----------------------------------------------------------------- cache */

struct bp_plan_cache {
    char *dir;
    FILE *warn;
    int verify;
    bp_plan_cache_stats st;
    char last_warning[1024];
};

bp_status bp_plan_cache_open(const char *dir, FILE *warnings, bp_plan_cache **out, bp_error *err)
{
    *out = NULL;
    if (!dir || !*dir) return bp__err(err, BP_ERR_USAGE, "plan cache: no directory");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return bp__err(err, BP_ERR_IO, "%s: cannot create the cache directory: %s", dir, strerror(errno));
    struct stat sb;
    if (stat(dir, &sb) != 0) return bp__err(err, BP_ERR_IO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return bp__err(err, BP_ERR_IO, "%s: not a directory", dir);
    bp_plan_cache *c = bp__calloc(&bp__libc_allocator, 1, sizeof *c);
    if (!c) return bp__err(err, BP_ERR_NOMEM, "plan cache: out of memory");
    c->dir = bp__alloc(&bp__libc_allocator, strlen(dir) + 1);
    if (c->dir) strcpy(c->dir, dir);
    if (!c->dir) { bp__free(&bp__libc_allocator, c, sizeof *c); return bp__err(err, BP_ERR_NOMEM, "plan cache: out of memory"); }
    c->warn = warnings;
    c->verify = 1;   /* bp_verify on every hit unless bp_plan_cache_set_verify(c, 0) */
    *out = c;
    return BP_OK;
}

void bp_plan_cache_close(bp_plan_cache *c)
{
    if (!c) return;
    bp__free(&bp__libc_allocator, c->dir, strlen(c->dir) + 1);
    bp__free(&bp__libc_allocator, c, sizeof *c);
}

void bp_plan_cache_set_verify(bp_plan_cache *c, int on) { if (c) c->verify = on; }
void bp_plan_cache_get_stats(const bp_plan_cache *c, bp_plan_cache_stats *out) { *out = c->st; }
const char *bp_plan_cache_last_warning(const bp_plan_cache *c) { return c->last_warning; }

const char *bp_plan_cache_file(const bp_plan_cache *c, const bp_cache_key *key, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s.bpc", c->dir, key->file);
    return buf;
}

static void pc_warn(bp_plan_cache *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pc_warn(bp_plan_cache *c, const char *path, const char *fmt, ...)
{
    char why[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(c->last_warning, sizeof c->last_warning, "%s: %s; planning again", path, why);
    fprintf(c->warn ? c->warn : stderr, "bufplan: warning: plan cache: %s\n", c->last_warning);
    c->st.bad_files++;
}

/* -------------------------------------------------------------- layout */

typedef struct pc_fixed {
    uint32_t n_t, n_o, sched, assign;
    uint64_t alignment;
    uint64_t arena, lower_bound, naive, alias_saved, dynamic;
    int32_t peak_step, n_planned, n_storages, n_dynamic;
    double plan_s, schedule_s, assign_s;
    int32_t optimal, sched_optimal;
    double makespan;
    int32_t n_views, n_inputs, n_weights, reserved;   /* reserved: 0 */
} pc_fixed;

/* Bytes per tensor: first, last, buffer, alias_of (i32), view_offset, offset, bytes (u64), kind (u8). */
#define PC_PER_TENSOR (4 * 4 + 3 * 8 + 1)

typedef struct pc_wbuf { unsigned char *p; size_t n; } pc_wbuf;
static void pc_put(pc_wbuf *w, const void *src, size_t n) { memcpy(w->p + w->n, src, n); w->n += n; }

/* Bytes of a plan's record: fixed part, order, tensor arrays, then its
 * bodies' count and, per body, its base and its own record. */
static size_t pc_plan_bytes(const bp_plan *p)
{
    size_t n = sizeof(pc_fixed) + (size_t)p->n_o * 4 + (size_t)p->n_t * PC_PER_TENSOR + 4;
    for (int32_t i = 0; i < p->n_bodies; i++) n += 8 + pc_plan_bytes(p->bodies[i]);
    return n;
}

static void pc_encode(pc_wbuf *w, const bp_plan *p)
{
    size_t nt = (size_t)p->n_t, no = (size_t)p->n_o;
    pc_fixed fx;
    memset(&fx, 0, sizeof fx);
    const bp_plan_stats *st = &p->stats;
    fx.n_t = (uint32_t)nt; fx.n_o = (uint32_t)no; fx.sched = (uint32_t)p->sched; fx.assign = (uint32_t)p->assign;
    fx.alignment = p->alignment;
    fx.arena = st->arena_bytes; fx.lower_bound = st->lower_bound_bytes; fx.naive = st->naive_bytes;
    fx.alias_saved = st->alias_saved_bytes; fx.dynamic = st->dynamic_bytes;
    fx.peak_step = st->peak_step; fx.n_planned = st->n_planned; fx.n_storages = st->n_storages; fx.n_dynamic = st->n_dynamic;
    fx.plan_s = st->plan_seconds; fx.schedule_s = st->schedule_seconds; fx.assign_s = st->assign_seconds;
    fx.optimal = st->optimal;
    fx.sched_optimal = st->sched_optimal;
    fx.makespan = st->makespan;
    fx.n_views = st->n_views; fx.n_inputs = st->n_inputs; fx.n_weights = st->n_weights;
    pc_put(w, &fx, sizeof fx);
    pc_put(w, p->order, no * 4);
    /* One array per field (the reader copies each with a tight loop). */
    for (int f = 0; f < 4; f++)
        for (size_t t = 0; t < nt; t++) {
            const bp_tensor_plan *tp = &p->tp[t];
            int32_t v = f == 0 ? tp->first : f == 1 ? tp->last : f == 2 ? tp->buffer : tp->alias_of;
            memcpy(w->p + w->n + ((size_t)f * nt + t) * 4, &v, 4);
        }
    w->n += nt * 16;
    for (size_t t = 0; t < nt; t++) memcpy(w->p + w->n + t * 8, &p->tp[t].view_offset, 8);
    w->n += nt * 8;
    for (size_t t = 0; t < nt; t++) memcpy(w->p + w->n + t * 8, &p->tp[t].offset, 8);
    w->n += nt * 8;
    for (size_t t = 0; t < nt; t++) memcpy(w->p + w->n + t * 8, &p->tp[t].bytes, 8);
    w->n += nt * 8;
    for (size_t t = 0; t < nt; t++) w->p[w->n + t] = (unsigned char)p->tp[t].kind;
    w->n += nt;
    uint32_t nb = (uint32_t)p->n_bodies;
    pc_put(w, &nb, 4);
    for (int32_t i = 0; i < p->n_bodies; i++) {
        pc_put(w, &p->body_base[i], 8);
        pc_encode(w, p->bodies[i]);
    }
}

bp_status bp_plan_cache_put(bp_plan_cache *c, const bp_cache_key *key, const bp_graph *g, const bp_plan *p, bp_error *err)
{
    if (!c || !key || !g || !p) return bp__err(err, BP_ERR_USAGE, "plan cache: NULL argument");
    if ((size_t)p->n_t != g->n_t || (size_t)p->n_o != g->n_o)
        return bp__err(err, BP_ERR_USAGE, "%s: plan cache: the plan does not belong to this graph", g->name);
    if (p->n_copies)
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: plan cache: the plan recomputes or offloads (%d copies), which cache files do not hold yet",
                       g->name, (int)p->n_copies);
    char header[BP_SIG_MAX + 1024];
    int hl = pc_header(key, header, sizeof header);
    if (hl < 0 || (size_t)hl >= sizeof header) return bp__err(err, BP_ERR_LIMIT, "plan cache: header too long");
    size_t total = 8 + 4 + 4 + 4 + (size_t)hl + pc_plan_bytes(p) + 16;
    pc_wbuf w = {bp__alloc(&g->alloc, total), 0};
    if (!w.p) return bp__err(err, BP_ERR_NOMEM, "%s: plan cache: out of memory (%zu bytes)", g->name, total);
    uint32_t u = PC_FORMAT, e = PC_ENDIAN, h32 = (uint32_t)hl;
    pc_put(&w, PC_MAGIC, 8);
    pc_put(&w, &u, 4);
    pc_put(&w, &e, 4);
    pc_put(&w, &h32, 4);
    pc_put(&w, header, (size_t)hl);
    pc_encode(&w, p);
    uint64_t sum = bp_cache_checksum(w.p, w.n);
    pc_put(&w, &sum, 8);
    pc_put(&w, PC_TRAILER, 8);

    char path[2048], tmp[2048];
    snprintf(path, sizeof path, "%s/%s.bpc", c->dir, key->file);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.XXXXXX", c->dir, key->file);
    bp_status s = BP_OK;
    bp__remove_stale_temps(c->dir, ".tmp.");   /* ".KEY.tmp.XXXXXX" of killed writers */
    int fd = mkstemp(tmp);
    if (fd < 0) {
        s = bp__err(err, BP_ERR_IO, "%s: cannot create a temporary file: %s", c->dir, strerror(errno));
    } else {
        size_t off = 0;
        while (off < w.n) {
            ssize_t r = write(fd, w.p + off, w.n - off);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { s = bp__err(err, BP_ERR_IO, "%s: write error: %s", tmp, r < 0 ? strerror(errno) : "short write"); break; }
            off += (size_t)r;
        }
        /* mkstemp makes 0600; cache files are shared like any other file */
        if (!s && fchmod(fd, 0644) != 0) { /* not fatal */ }
        if (!s && fsync(fd) != 0) s = bp__err(err, BP_ERR_IO, "%s: fsync: %s", tmp, strerror(errno));
        if (close(fd) != 0 && !s) s = bp__err(err, BP_ERR_IO, "%s: close: %s", tmp, strerror(errno));
        if (!s && rename(tmp, path) != 0) s = bp__err(err, BP_ERR_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        if (s) unlink(tmp);
    }
    bp__free(&g->alloc, w.p, total);
    if (s) c->st.write_errors++;
    else c->st.writes++;
    return s;
}

/* Reads the whole file into a buffer from the graph's allocator; returns
 * false (with errno) when it cannot.  Opened non-blocking and without
 * following a symlink, and checked to be a regular file before any read, so
 * a FIFO or a device planted at a key cannot hang or feed the reader.  pread
 * into memory (not a mapping): a file truncated while it is read is a short
 * read (EIO here), not a SIGBUS. */
static bool pc_read(const bp_allocator *a, const char *path, unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { close(fd); errno = EINVAL; return false; }
    size_t n = (size_t)sb.st_size, got = 0;
    unsigned char *b = bp__alloc(a, n ? n : 1);
    if (!b) { close(fd); errno = ENOMEM; return false; }
    while (got < n) {
        ssize_t r = pread(fd, b + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { int e = r < 0 ? errno : EIO; bp__free(a, b, n ? n : 1); close(fd); errno = e; return false; }
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *len = n;
    return true;
}

/* Faults in the pages of a large fresh allocation with one system call
 * (where the kernel has MADV_POPULATE_WRITE): page by page, first-touch
 * faults cost more than the copying itself on large plans (and much more
 * in virtual machines).  Contents are unchanged; failure is harmless. */
static void pc_prefault(void *ptr, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t pg = 4096;
    if (!ptr || bytes < (1u << 20)) return;
    uintptr_t lo = ((uintptr_t)ptr + pg - 1) & ~(pg - 1), hi = ((uintptr_t)ptr + bytes) & ~(pg - 1);
    if (hi <= lo) return;
    (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)ptr; (void)bytes;
#endif
}

/* bp__plan_alloc without its initialisation pass (every field is about to be
 * written) and with the event table sized for its bound (an ALLOC and a FREE
 * per tensor, an EXEC per op), so loading touches each page once. */
static bp_plan *pc_plan_alloc(const bp_allocator *a, size_t nt, size_t no)
{
    bp_plan *p = bp__calloc(a, 1, sizeof *p);
    if (!p) return NULL;
    p->alloc = *a;
    p->n_t = (int32_t)nt;
    p->n_o = (int32_t)no;
    p->order = bp__alloc(a, (no ? no : 1) * sizeof *p->order);
    p->tp = bp__alloc(a, (nt ? nt : 1) * sizeof *p->tp);
    p->cap_ev = 2 * nt + no;
    p->ev = p->cap_ev ? bp__alloc(a, p->cap_ev * sizeof *p->ev) : NULL;
    if (!p->order || !p->tp || (p->cap_ev && !p->ev)) {
        if (!p->ev) p->cap_ev = 0;
        bp_plan_free(p);
        return NULL;
    }
    if (!nt) memset(p->tp, 0, sizeof *p->tp);
    pc_prefault(p->order, no * sizeof *p->order);
    pc_prefault(p->tp, nt * sizeof *p->tp);
    p->stats.peak_step = -1;
    return p;
}

/* Range checks on a decoded plan; returns a reason or NULL. */
static const char *pc_check(const bp_graph *g, const bp_plan *p, char *why, size_t cap)
{
    int32_t no = p->n_o, nt = p->n_t;
    unsigned char *seen = bp__calloc(&g->alloc, (size_t)(no ? no : 1), 1);
    if (!seen) return "out of memory";
    const char *bad = NULL;
    for (int32_t s = 0; s < no && !bad; s++) {
        int32_t op = p->order[s];
        if (op < 0 || op >= no || seen[op]) { snprintf(why, cap, "the schedule is not a permutation (step %d)", s); bad = why; }
        else seen[op] = 1;
    }
    bp__free(&g->alloc, seen, (size_t)(no ? no : 1));
    uint64_t arena = p->stats.arena_bytes;
    for (int32_t t = 0; t < nt && !bad; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        const char *name = bp__names_get(&g->tnames, t);
        if ((unsigned)tp->kind > BP_KIND_WORKSPACE) { snprintf(why, cap, "tensor \"%s\": bad kind %d", name, (int)tp->kind); bad = why; }
        else if (tp->first < -1 || tp->first >= no || tp->last < tp->first || tp->last >= no || (tp->first < 0 && tp->last >= 0)) {
            snprintf(why, cap, "tensor \"%s\": interval [%d, %d] is outside the schedule", name, tp->first, tp->last);
            bad = why;
        } else if (tp->bytes != g->t[t].bytes) {
            snprintf(why, cap, "tensor \"%s\": %" PRIu64 " bytes, the graph says %" PRIu64, name, tp->bytes, g->t[t].bytes);
            bad = why;
        } else if (tp->alias_of < -1 || tp->alias_of >= nt || tp->alias_of == t ||
                   (tp->alias_of >= 0 && p->tp[tp->alias_of].alias_of >= 0)) {
            snprintf(why, cap, "tensor \"%s\": bad alias_of %d", name, tp->alias_of);
            bad = why;
        } else if (tp->view_offset && tp->alias_of < 0) {
            snprintf(why, cap, "tensor \"%s\": view_offset %" PRIu64 " without alias_of", name, tp->view_offset);
            bad = why;
        } else if (tp->offset != BP_NO_OFFSET) {
            uint64_t end;
            if (!bp__add_u64(tp->offset, tp->bytes, &end) || end > arena || tp->buffer < 0) {
                snprintf(why, cap, "tensor \"%s\": [%" PRIu64 ", +%" PRIu64 ") is outside the arena of %" PRIu64 " bytes", name,
                         tp->offset, tp->bytes, arena);
                bad = why;
            }
        } else if (tp->buffer != -1) {
            snprintf(why, cap, "tensor \"%s\": a buffer without an offset", name);
            bad = why;
        }
    }
    return bad;
}

/* Decodes the plan record at b[*pos .. end) for graph g (depth: bodies
 * inside bodies); *out NULL with a reason in why when the record is bad. */
static bp_status pc_decode(const unsigned char *b, size_t end, size_t *pos, const bp_graph *g, int depth, bp_plan **out, char *why,
                           size_t cap, bp_error *err)
{
    *out = NULL;
    pc_fixed fx;
    if (end - *pos < sizeof fx) { snprintf(why, cap, "truncated"); return BP_OK; }
    memcpy(&fx, b + *pos, sizeof fx);
    *pos += sizeof fx;
    if (fx.n_t != g->n_t || fx.n_o != g->n_o) {
        snprintf(why, cap, "the plan of %s has %u tensors and %u ops, the graph %zu and %zu", g->name, fx.n_t, fx.n_o, g->n_t, g->n_o);
        return BP_OK;
    }
    size_t nt = fx.n_t, no = fx.n_o;
    if (end - *pos < no * 4 + nt * PC_PER_TENSOR + 4) { snprintf(why, cap, "the payload has the wrong size"); return BP_OK; }
    if (fx.sched >= BP_SCHED_COUNT || fx.assign >= BP_ASSIGN_COUNT || !fx.alignment || (fx.alignment & (fx.alignment - 1))) {
        snprintf(why, cap, "bad scheduler, assigner or alignment");
        return BP_OK;
    }
    bp_plan *p = pc_plan_alloc(&g->alloc, nt, no);
    if (!p) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory loading a cached plan", g->name);
    p->alignment = fx.alignment;
    p->sched = (bp_sched_kind)fx.sched;
    p->assign = (bp_assign_kind)fx.assign;
    bp_plan_stats *st = &p->stats;
    st->arena_bytes = fx.arena; st->lower_bound_bytes = fx.lower_bound; st->naive_bytes = fx.naive;
    st->alias_saved_bytes = fx.alias_saved; st->dynamic_bytes = fx.dynamic;
    st->peak_step = fx.peak_step; st->n_planned = fx.n_planned; st->n_storages = fx.n_storages; st->n_dynamic = fx.n_dynamic;
    st->plan_seconds = fx.plan_s; st->schedule_seconds = fx.schedule_s; st->assign_seconds = fx.assign_s;
    st->optimal = fx.optimal ? 1 : 0;
    st->sched_optimal = fx.sched_optimal ? 1 : 0;
    st->makespan = fx.makespan >= 0 && fx.makespan < 1e300 ? fx.makespan : 0;
    st->n_views = fx.n_views; st->n_inputs = fx.n_inputs; st->n_weights = fx.n_weights;
    memcpy(p->order, b + *pos, no * 4);
    *pos += no * 4;
    const unsigned char *a32 = b + *pos, *av = b + *pos + nt * 16, *a64 = b + *pos + nt * 24, *a8 = b + *pos + nt * 40;
    for (size_t t = 0; t < nt; t++) {
        bp_tensor_plan *tp = &p->tp[t];
        memcpy(&tp->first, a32 + t * 4, 4);
        memcpy(&tp->last, a32 + nt * 4 + t * 4, 4);
        memcpy(&tp->buffer, a32 + nt * 8 + t * 4, 4);
        memcpy(&tp->alias_of, a32 + nt * 12 + t * 4, 4);
        memcpy(&tp->offset, a64 + t * 8, 8);
        memcpy(&tp->bytes, a64 + nt * 8 + t * 8, 8);
        memcpy(&tp->view_offset, av + t * 8, 8);
        tp->kind = (bp_tensor_kind)a8[t];
    }
    *pos += nt * PC_PER_TENSOR;
    uint32_t nb;
    memcpy(&nb, b + *pos, 4);
    *pos += 4;
    const char *bad = pc_check(g, p, why, cap);
    bp_status s = BP_OK;
    if (!bad && nb != g->n_bodies) { snprintf(why, cap, "the plan of %s has %u body plans, the graph %zu bodies", g->name, nb, g->n_bodies); bad = why; }
    if (!bad && depth > 64) { snprintf(why, cap, "bodies nested too deep"); bad = why; }
    if (!bad && nb) {
        p->bodies = bp__calloc(&g->alloc, nb, sizeof *p->bodies);
        p->body_base = bp__calloc(&g->alloc, nb, sizeof *p->body_base);
        if (!p->bodies || !p->body_base) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory loading a cached plan", g->name);
        else p->n_bodies = (int32_t)nb;
    }
    for (uint32_t i = 0; i < nb && !bad && !s; i++) {
        if (end - *pos < 8) { snprintf(why, cap, "truncated"); bad = why; break; }
        memcpy(&p->body_base[i], b + *pos, 8);
        *pos += 8;
        s = pc_decode(b, end, pos, g->bodies[i].g, depth + 1, &p->bodies[i], why, cap, err);
        if (!s && !p->bodies[i]) bad = why;
    }
    if (!s && !bad) bp__plan_count_bodies(g, p);
    if (!s && !bad) s = bp__plan_build_events(p, g, err);
    if (s || bad) { bp_plan_free(p); return s; }
    *out = p;
    return BP_OK;
}

bp_status bp_plan_cache_get(bp_plan_cache *c, const bp_cache_key *key, const bp_graph *g, bp_plan **out, bp_error *err)
{
    *out = NULL;
    if (!c || !key || !g) return bp__err(err, BP_ERR_USAGE, "plan cache: NULL argument");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    double t0 = bp__now();
    char path[2048];
    snprintf(path, sizeof path, "%s/%s.bpc", c->dir, key->file);
    unsigned char *b = NULL;
    size_t n = 0;
    if (!pc_read(&g->alloc, path, &b, &n)) {
        if (errno == EINVAL) pc_warn(c, path, "not a regular file");
        else if (errno == EIO) pc_warn(c, path, "truncated while it was read");
        else if (errno != ENOENT) pc_warn(c, path, "cannot read: %s", strerror(errno));
        c->st.misses++;
        return BP_OK;
    }
    char header[BP_SIG_MAX + 1024];
    int hl = pc_header(key, header, sizeof header);
    bp_plan *p = NULL;
    bp_status s = BP_OK;
    size_t pos = 0;
    uint32_t fmt, endian, h32;
    const size_t prefix = 8 + 12;
    if (n < prefix + 16) { pc_warn(c, path, "truncated (%zu bytes)", n); goto miss; }
    if (memcmp(b, PC_MAGIC, 8)) { pc_warn(c, path, "not a bufplan plan-cache file (bad magic)"); goto miss; }
    memcpy(&fmt, b + 8, 4);
    memcpy(&endian, b + 12, 4);
    memcpy(&h32, b + 16, 4);
    if (fmt != PC_FORMAT) { pc_warn(c, path, "cache format version %u, this bufplan reads version %u", fmt, PC_FORMAT); goto miss; }
    if (endian != PC_ENDIAN) { pc_warn(c, path, "written on a machine of another byte order"); goto miss; }
    if (memcmp(b + n - 8, PC_TRAILER, 8)) { pc_warn(c, path, "truncated (no end marker)"); goto miss; }
    uint64_t sum;
    memcpy(&sum, b + n - 16, 8);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* (fuzz builds skip it, so that the fuzzer reaches the parser below) */
    if (bp_cache_checksum(b, n - 16) != sum) { pc_warn(c, path, "checksum mismatch (corrupt file)"); goto miss; }
#else
    (void)sum;
#endif
    pos = prefix;
    if (h32 > n - pos - 16) { pc_warn(c, path, "header length %u is past the end", h32); goto miss; }
    if ((int)h32 != hl || memcmp(b + pos, header, h32)) {
        /* Say which line differs: a version or a key mismatch. */
        const char *fv = (const char *)b + pos;
        size_t vl = 0;
        while (vl < h32 && fv[vl] != '\n') vl++;
        if (vl < 8 || strncmp(fv, "bufplan ", 8) || vl - 8 != strlen(BP_VERSION_STRING) || strncmp(fv + 8, BP_VERSION_STRING, vl - 8))
            pc_warn(c, path, "written by %.*s, this is bufplan %s", (int)(vl < 64 ? vl : 64), fv, BP_VERSION_STRING);
        else
            pc_warn(c, path, "the key in the file (graph, signature or options) differs from the one asked for");
        goto miss;
    }
    pos += h32;
    char why[600];
    why[0] = 0;
    if ((s = pc_decode(b, n - 16, &pos, g, 0, &p, why, sizeof why, err))) goto out;
    if (!p) { pc_warn(c, path, "%s", why); goto miss; }
    if (pos != n - 16) { pc_warn(c, path, "the payload has the wrong size"); goto miss; }
    double tv = bp__now();
    c->st.load_seconds += tv - t0;
    if (c->verify) {
        bp_error verr;
        bp__err_clear(&verr);
        bp_status vs = bp_verify(g, p, &verr);
        c->st.verify_seconds += bp__now() - tv;
        if (vs) {
            char *nl = strchr(verr.msg, '\n');
            if (nl) *nl = 0;
            pc_warn(c, path, "the plan fails verification: %s", verr.msg);
            goto miss;
        }
    }
    c->st.hits++;
    *out = p;
    p = NULL;
    goto out;
miss:
    c->st.misses++;
out:
    bp_plan_free(p);
    if (b) bp__free(&g->alloc, b, n ? n : 1);
    return s;
}

bp_status bp_plan_cache_plan(bp_plan_cache *c, const bp_graph *g, const char *signature, const bp_plan_options *o,
                             bp_plan **out, int *hit, bp_error *err)
{
    *out = NULL;
    if (hit) *hit = 0;
    bp_cache_key key;
    bp_status s = bp_cache_key_make(g, signature, o, &key, err);
    if (!s && c) s = bp_plan_cache_get(c, &key, g, out, err);
    if (s) return s;
    if (*out && o && (*out)->engine == NULL) {   /* the key matched, so it was made for o->engine */
        s = bp__engine_copy(o->engine, &g->alloc, &(*out)->engine, err);
        if (s) { bp_plan_free(*out); *out = NULL; return s; }
    }
    if (*out) { if (hit) *hit = 1; return BP_OK; }
    s = bp_plan_graph(g, o, out, err);
    if (s) return s;
    if (c) {
        bp_error werr;
        bp__err_clear(&werr);
        if (bp_plan_cache_put(c, &key, g, *out, &werr)) {
            snprintf(c->last_warning, sizeof c->last_warning, "%s", werr.msg);
            fprintf(c->warn ? c->warn : stderr, "bufplan: warning: plan cache: %s (the plan is not cached)\n", werr.msg);
        }
    }
    return BP_OK;
}
