/*
 * viz.c — pictures of a plan: a self-contained HTML page and a static SVG.
 *
 * Everything is computed from the plan itself (the last stage of the
 * pipeline), never from the planner's internals: a planned tensor is one
 * rectangle, x from its first to its last step (inclusive, so last + 1 is
 * the right edge), y from its offset to offset + bytes.  A storage (alias
 * group) spans the union of its members' intervals with its root's aligned
 * size; summing storages over steps with a difference array gives the
 * live-bytes curve, whose maximum is the plan's lower bound.
 *
 * HTML: the C side writes a skeleton, the data as one JSON document inside
 * <script type="application/json"> and the script of viz_page.h.  The script
 * recomputes count, peak and arena from the raw intervals and writes them into
 * spans with fixed ids (tensor-count, peak-bytes, arena-bytes, ...), so a test
 * that reads the DOM checks both this file and the page's own arithmetic.  The
 * timeline is always drawn on a canvas (one code path from 10 to 100k
 * tensors; culling, one fillStyle per color batch, a uniform grid for hover).
 *
 * Names are arbitrary bytes: JSON strings escape < > & and U+2028/9 (so no
 * "</script>" can end the data early), XML text escapes the five entities,
 * and invalid UTF-8 or control characters become U+FFFD so both stay
 * well-formed.
 *
 * The executor history (--history) is read here as well (a CSV with a header
 * naming its columns, or JSON events; docs/VIZ.md): tenants are ALLOC..FREE
 * per tensor, placed at the offset the file gives or else the plan's.
 */
#include "plan/plan_internal.h"
#include "core/json_io.h"
#include "core/progress.h"
#include "bufplan_viz.h"
#include "viz/viz_internal.h"
#include "viz/viz_page.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void bp_viz_options_init(bp_viz_options *o)
{
    memset(o, 0, sizeof *o);
    o->color = BP_VIZ_COLOR_OP;
}

/* ------------------------------------------------------------- escaping */

/* Length (1..4) of the valid UTF-8 sequence at s, its code point in *cp; 0
 * when the bytes are not valid UTF-8 (overlong, surrogate, truncated). */
static int viz_utf8(const unsigned char *s, uint32_t *cp)
{
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    int n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (!n || (n == 3 && c >= 0xF0)) return 0;
    uint32_t v = c & (0x3Fu >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3Fu);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

/* A JSON string literal that is safe inside an HTML <script> element. */
void bp__viz_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp;
        int n = viz_utf8(p, &cp);
        if (!n) { fputs("\\ufffd", f); p++; continue; }
        if (cp == '"') fputs("\\\"", f);
        else if (cp == '\\') fputs("\\\\", f);
        else if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 || cp == 0x2029)
            fprintf(f, "\\u%04x", (unsigned)cp);
        else fwrite(p, 1, (size_t)n, f);
        p += n;
    }
    fputc('"', f);
}

/* Text for XML / HTML content and attribute values. */
void bp__viz_xml_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp;
        int n = viz_utf8(p, &cp);
        if (!n || (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE || cp == 0xFFFF || (cp >= 0x7F && cp < 0xA0)) {
            fputs("\xEF\xBF\xBD", f);
            p += n ? n : 1;
            continue;
        }
        switch (cp) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fwrite(p, 1, (size_t)n, f);
        }
        p += n;
    }
}

const char *bp__viz_fmt_bytes(uint64_t b, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 5) { v /= 1024; u++; }
    /* rounded half up, as the page's fmtB does (printf rounds ties to even) */
    double q = v < 10 ? 100 : 10;
    v = floor(v * q + 0.5) / q;
    if (u == 0) snprintf(buf, cap, "%llu B", (unsigned long long)b);
    else snprintf(buf, cap, v < 10 ? "%.2f %s" : "%.1f %s", v, units[u]);
    return buf;
}

/* ------------------------------------------------- storages of a plan */

static int32_t viz_root(const bp_plan *p, int32_t t) { return p->tp[t].alias_of >= 0 ? p->tp[t].alias_of : t; }
/* Drawn: in the arena and used. */
static bool viz_drawn(const bp_plan *p, int32_t t) { return p->tp[t].offset != BP_NO_OFFSET && p->tp[t].first >= 0; }

/* Storage intervals: sf/sl per root (-1 when not a used arena storage). */
static bp_status viz_storages(const bp_plan *p, int32_t **sf_out, int32_t **sl_out, bp_error *err)
{
    size_t nt = (size_t)p->n_t;
    int32_t *sf = bp__alloc(&p->alloc, (nt ? nt : 1) * sizeof *sf), *sl = bp__alloc(&p->alloc, (nt ? nt : 1) * sizeof *sl);
    if (!sf || !sl) {
        bp__free(&p->alloc, sf, (nt ? nt : 1) * sizeof *sf);
        bp__free(&p->alloc, sl, (nt ? nt : 1) * sizeof *sl);
        return bp__err(err, BP_ERR_NOMEM, "out of memory reading the plan's storages");
    }
    for (size_t t = 0; t < nt; t++) sf[t] = sl[t] = -1;
    for (int32_t t = 0; t < p->n_t; t++) {
        if (!viz_drawn(p, t)) continue;
        int32_t r = viz_root(p, t);
        if (r < 0 || r >= p->n_t) continue;
        if (sf[r] < 0 || p->tp[t].first < sf[r]) sf[r] = p->tp[t].first;
        if (p->tp[t].last > sl[r]) sl[r] = p->tp[t].last;
    }
    for (int32_t r = 0; r < p->n_t; r++)
        if (sf[r] >= p->n_o || sl[r] >= p->n_o) sf[r] = sl[r] = -1; /* out of range: ignore */
    *sf_out = sf;
    *sl_out = sl;
    return BP_OK;
}

static void viz_storages_free(const bp_plan *p, int32_t *sf, int32_t *sl)
{
    size_t nt = (size_t)(p->n_t ? p->n_t : 1);
    bp__free(&p->alloc, sf, nt * sizeof *sf);
    bp__free(&p->alloc, sl, nt * sizeof *sl);
}

static bp_status viz_live(const bp_plan *p, const int32_t *sf, const int32_t *sl, uint64_t *live, bp_error *err)
{
    size_t no = (size_t)p->n_o;
    int64_t *delta = bp__calloc(&p->alloc, no + 1, sizeof *delta);
    if (!delta) return bp__err(err, BP_ERR_NOMEM, "out of memory computing live bytes");
    for (int32_t r = 0; r < p->n_t; r++) {
        if (sf[r] < 0) continue;
        uint64_t sz = bp__align_up(p->tp[r].bytes, p->alignment);
        if (sz > (uint64_t)INT64_MAX / 4) sz = (uint64_t)INT64_MAX / 4;
        delta[sf[r]] += (int64_t)sz;
        delta[sl[r] + 1] -= (int64_t)sz;
    }
    int64_t cur = 0;
    for (size_t s = 0; s < no; s++) {
        cur += delta[s];
        live[s] = cur > 0 ? (uint64_t)cur : 0;
    }
    bp__free(&p->alloc, delta, (no + 1) * sizeof *delta);
    return BP_OK;
}

bp_status bp_plan_live_bytes(const bp_plan *p, uint64_t *live, bp_error *err)
{
    if (!p || (!live && p->n_o)) return bp__err(err, BP_ERR_USAGE, "bp_plan_live_bytes: NULL argument");
    if (bp_plan_n_copies(p))
        return bp__err(err, BP_ERR_UNSUPPORTED, "bp_plan_live_bytes: the plan has recompute and offload copies, which it does not count yet");
    int32_t *sf, *sl;
    bp_status s = viz_storages(p, &sf, &sl, err);
    if (s) return s;
    s = viz_live(p, sf, sl, live, err);
    viz_storages_free(p, sf, sl);
    return s;
}

static int viz_cmp_size(const bp_plan *p, int32_t a, int32_t b)
{
    uint64_t x = p->tp[a].bytes, y = p->tp[b].bytes;
    if (x != y) return x > y ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Insertion into a bounded sorted array would be O(n cap); a heap sort of the
 * whole live set is simpler and the set is small next to the graph. */
static void viz_sort_ids(const bp_plan *p, int32_t *ids, size_t n)
{
    /* heapsort with the comparison inverted into a max-heap of "worst first" */
    for (size_t i = n / 2; i-- > 0;) {
        size_t r = i;
        for (;;) {
            size_t c = 2 * r + 1;
            if (c >= n) break;
            if (c + 1 < n && viz_cmp_size(p, ids[c], ids[c + 1]) < 0) c++;
            if (viz_cmp_size(p, ids[r], ids[c]) >= 0) break;
            int32_t t = ids[r]; ids[r] = ids[c]; ids[c] = t;
            r = c;
        }
    }
    for (size_t end = n; end-- > 1;) {
        int32_t t = ids[0]; ids[0] = ids[end]; ids[end] = t;
        size_t r = 0;
        for (;;) {
            size_t c = 2 * r + 1;
            if (c >= end) break;
            if (c + 1 < end && viz_cmp_size(p, ids[c], ids[c + 1]) < 0) c++;
            if (viz_cmp_size(p, ids[r], ids[c]) >= 0) break;
            int32_t u = ids[r]; ids[r] = ids[c]; ids[c] = u;
            r = c;
        }
    }
}

int32_t bp_plan_live_at(const bp_plan *p, int32_t step, int32_t *ids, int32_t cap)
{
    if (!p || step < 0 || step >= p->n_o || bp_plan_n_copies(p)) return -1;   /* copies: not counted yet */
    int32_t *sf, *sl;
    if (viz_storages(p, &sf, &sl, NULL)) return -1;
    size_t n = 0;
    for (int32_t r = 0; r < p->n_t; r++) if (sf[r] >= 0 && sf[r] <= step && step <= sl[r]) n++;
    int32_t *all = bp__alloc(&p->alloc, (n ? n : 1) * sizeof *all);
    if (!all) { viz_storages_free(p, sf, sl); return -1; }
    size_t k = 0;
    for (int32_t r = 0; r < p->n_t; r++) if (sf[r] >= 0 && sf[r] <= step && step <= sl[r]) all[k++] = r;
    viz_sort_ids(p, all, n);
    for (size_t i = 0; i < n && ids && (int64_t)i < cap; i++) ids[i] = all[i];
    bp__free(&p->alloc, all, (n ? n : 1) * sizeof *all);
    viz_storages_free(p, sf, sl);
    return (int32_t)n;
}

/* --------------------------------------------------------- labels, checks */

static bp_status viz_check(const bp_graph *g, const bp_plan *p, const char *what, bp_error *err)
{
    if (!g || !p) return bp__err(err, BP_ERR_USAGE, "%s: NULL graph or plan", what);
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    if ((size_t)p->n_t != g->n_t || (size_t)p->n_o != g->n_o)
        return bp__err(err, BP_ERR_USAGE, "%s: the plan (%d tensors, %d ops) is not a plan of graph %s (%zu tensors, %zu ops)",
                       what, p->n_t, p->n_o, g->name, g->n_t, g->n_o);
    if (bp_plan_n_copies(p))
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: %s: the plan recomputes or offloads %d copies, which the timeline does not draw yet "
                       "(plan without --budget, or with --fallback none)", g->name, what, bp_plan_n_copies(p));
    for (int32_t s = 0; s < p->n_o; s++)
        if (p->order[s] < 0 || p->order[s] >= p->n_o)
            return bp__err(err, BP_ERR_INVALID, "%s: step %d of the plan names op %d, out of range", what, s, p->order[s]);
    for (int32_t t = 0; t < p->n_t; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        if (tp->alias_of >= p->n_t || tp->first >= p->n_o || tp->last >= p->n_o || (tp->first >= 0 && tp->last < tp->first))
            return bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" has an inconsistent interval or alias in the plan", what,
                           bp__names_get(&g->tnames, t));
    }
    return BP_OK;
}

static void viz_label(const bp_plan *p, const char *given, char *buf, size_t cap)
{
    if (given) snprintf(buf, cap, "%s", given);
    else snprintf(buf, cap, "%s + %s", bp_sched_name(p->sched), bp_assign_name(p->assign));
}

/* "1x3x224x224 f32", "Nx8 f16" (symbols by name), "" without a shape. */
static void viz_shape(const bp_graph *g, int32_t t, char *buf, size_t cap)
{
    int64_t dims[64];
    int rank = bp_graph_tensor_dims(g, t, dims, 64);
    size_t n = 0;
    buf[0] = 0;
    if (rank < 0) return;
    if (rank == 0) n += (size_t)snprintf(buf, cap, "scalar");
    for (int i = 0; i < rank && i < 64 && n < cap; i++) {
        const char *sym = bp_graph_tensor_dim_symbol(g, t, i);
        if (dims[i] == BP_DIM_SYMBOLIC) n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "x" : "", sym ? sym : "?");
        else n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "x" : "", (long long)dims[i]);
    }
    if (rank > 64 && n < cap) n += (size_t)snprintf(buf + n, cap - n, "x...");
    if (n < cap) snprintf(buf + n, cap - n, " %s", bp_dtype_name(bp_graph_tensor_dtype(g, t)));
}

/* Last reader of t in plan p: the consumer at the largest step, or -1. */
static int32_t viz_reader(const bp_graph *g, const int32_t *step_of, int32_t t)
{
    int32_t best = -1, bs = -1;
    for (int32_t c = g->cons_off[t]; c < g->cons_off[t + 1]; c++) {
        int32_t op = g->cons[c];
        if (step_of[op] > bs) { bs = step_of[op]; best = op; }
    }
    return best;
}

/* -------------------------------------------------------------- history */

typedef struct viz_tenant {
    uint32_t name;          /* offset in the name pool */
    int64_t thread;
    uint64_t off, bytes;
    double t0, t1;
} viz_tenant;

typedef struct viz_history {
    const bp_allocator *a;
    viz_tenant *t; size_t n, cap;
    char *pool; size_t pool_len, pool_cap;
    bp__names names;          /* tensor names seen, id -> open tenant */
    int64_t *open; size_t open_cap;
    size_t events, skipped;
    double tmax;
    char unit[32];
} viz_history;

static void viz_history_free(viz_history *h)
{
    bp__free(h->a, h->t, h->cap * sizeof *h->t);
    bp__free(h->a, h->pool, h->pool_cap);
    bp__free(h->a, h->open, h->open_cap * sizeof *h->open);
    bp__names_free(h->a, &h->names);
    memset(h, 0, sizeof *h);
}

enum { VIZ_EV_ALLOC, VIZ_EV_FREE, VIZ_EV_USE, VIZ_EV_NONE };

static int viz_event_kind(const char *s)
{
    char b[32];
    size_t n = 0;
    for (; s[n] && n < sizeof b - 1; n++) b[n] = (char)toupper((unsigned char)s[n]);
    b[n] = 0;
    if (!strcmp(b, "ALLOC") || !strcmp(b, "ALLOCATE") || !strcmp(b, "MALLOC")) return VIZ_EV_ALLOC;
    if (!strcmp(b, "FREE") || !strcmp(b, "RELEASE")) return VIZ_EV_FREE;
    if (!strcmp(b, "EXEC") || !strcmp(b, "")) return VIZ_EV_NONE;
    return VIZ_EV_USE; /* WRITE, READ, FIRST_WRITE, LAST_READ, ... */
}

/* One event.  has_off / has_bytes: whether the file gave them. */
static bp_status viz_history_event(viz_history *h, const bp_graph *g, const bp_plan *p, const char *file, size_t line,
                                   const char *type, const char *tensor, double time, int64_t thread,
                                   bool has_off, uint64_t off, bool has_bytes, uint64_t bytes, bp_error *err)
{
    int kind = viz_event_kind(type);
    h->events++;
    if (time > h->tmax) h->tmax = time;
    if (kind == VIZ_EV_NONE || !tensor || !*tensor) return BP_OK;
    size_t len = strlen(tensor);
    int32_t existing = -1, id = bp__names_add(h->a, &h->names, tensor, len, &existing);
    if (id == -1) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory reading the history", file);
    bool fresh = id >= 0;
    if (id == -2) id = existing;
    if (!bp__grow(h->a, (void **)&h->open, &h->open_cap, (size_t)id + 1, sizeof *h->open))
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory reading the history", file);
    if (fresh) h->open[id] = -1;
    int64_t cur = h->open[id];
    if (kind == VIZ_EV_FREE) {
        if (cur < 0) { h->skipped++; return BP_OK; }
        if (time > h->t[cur].t1) h->t[cur].t1 = time;
        h->open[id] = -1;
        return BP_OK;
    }
    if (cur >= 0 && kind == VIZ_EV_USE) {
        if (time > h->t[cur].t1) h->t[cur].t1 = time;
        return BP_OK;
    }
    if (cur >= 0) h->open[id] = -1; /* ALLOC over an open tenant: a new tenant */
    /* a new tenant: where? */
    int32_t t = bp_graph_find_tensor(g, tensor);
    if (!has_off) {
        if (t >= 0 && p->tp[t].offset != BP_NO_OFFSET) { off = p->tp[t].offset; has_off = true; }
    }
    if (!has_bytes && t >= 0) { bytes = g->t[t].bytes; has_bytes = true; }
    if (!has_off || !has_bytes) { h->skipped++; return BP_OK; }
    if (!bp__grow(h->a, (void **)&h->t, &h->cap, h->n + 1, sizeof *h->t) ||
        !bp__grow(h->a, (void **)&h->pool, &h->pool_cap, h->pool_len + len + 1, 1))
        return bp__err(err, BP_ERR_NOMEM, "%s: out of memory reading the history", file);
    if (h->pool_len > UINT32_MAX - len - 1) return bp__err(err, BP_ERR_LIMIT, "%s:%zu: the history names exceed 4 GiB", file, line);
    memcpy(h->pool + h->pool_len, tensor, len + 1);
    h->t[h->n] = (viz_tenant){(uint32_t)h->pool_len, thread, off, bytes, time, time};
    h->pool_len += len + 1;
    h->open[id] = (int64_t)h->n++;
    return BP_OK;
}

/* Splits one CSV line in place (quotes with "" escapes); returns the count. */
static int viz_csv_split(char *s, char **fields, int max)
{
    int n = 0;
    for (;;) {
        char *w = s, *start = s;
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s) break;
                if (*s == '"') {
                    if (s[1] == '"') { *w++ = '"'; s += 2; continue; }
                    s++;
                    break;
                }
                *w++ = *s++;
            }
            while (*s && *s != ',') s++;
        } else {
            while (*s && *s != ',') *w++ = *s++;
        }
        char sep = *s;
        *w = 0;
        if (n < max) fields[n++] = start;
        if (!sep) break;
        s++;
    }
    return n;
}

static int viz_col(char **hdr, int n, const char *const *names)
{
    for (int i = 0; i < n; i++) {
        char low[32];
        size_t k = 0;
        const char *h = hdr[i];
        while (*h == ' ') h++;
        for (; h[k] && k < sizeof low - 1; k++) low[k] = (char)tolower((unsigned char)h[k]);
        while (k && low[k - 1] == ' ') k--;
        low[k] = 0;
        for (int j = 0; names[j]; j++) if (!strcmp(low, names[j])) return i;
    }
    return -1;
}

static const char *const viz_h_time[] = {"tick", "time", "t", "t_ns", "time_ns", "ts", "timestamp", "seq", "event_id", "id", NULL};
static const char *const viz_h_type[] = {"event", "event_type", "type", "kind", NULL};
static const char *const viz_h_tensor[] = {"tensor", "tensor_name", "name", NULL};
static const char *const viz_h_thread[] = {"thread", "tid", "worker", NULL};
static const char *const viz_h_off[] = {"offset", "off", "arena_offset", NULL};
static const char *const viz_h_bytes[] = {"bytes", "size", NULL};

static bool viz_parse_u64(const char *s, uint64_t *out)
{
    while (*s == ' ') s++;
    if (!*s || *s == '-' || !strcmp(s, "null")) return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    while (*end == ' ') end++;
    if (errno || *end) return false;
    *out = v;
    return true;
}

static bool viz_empty(const char *s)
{
    while (*s == ' ') s++;
    return !*s || !strcmp(s, "null") || !strcmp(s, "-");
}

static bp_status viz_history_csv(viz_history *h, const bp_graph *g, const bp_plan *p, const char *file, char *text, bp_error *err)
{
    char *fields[64];
    int nf = 0, ct = -1, cy = -1, cn = -1, ch = -1, co = -1, cb = -1;
    bool have_header = false;
    size_t line = 0, row = 0;
    char *s = text;
    while (*s) {
        char *nl = strchr(s, '\n');
        char *next = nl ? nl + 1 : s + strlen(s);
        if (nl) *nl = 0;
        line++;
        size_t L = strlen(s);
        if (L && s[L - 1] == '\r') s[--L] = 0;
        if (!L || s[0] == '#') { s = next; continue; }
        nf = viz_csv_split(s, fields, 64);
        if (!have_header) {
            ct = viz_col(fields, nf, viz_h_time);
            cy = viz_col(fields, nf, viz_h_type);
            cn = viz_col(fields, nf, viz_h_tensor);
            ch = viz_col(fields, nf, viz_h_thread);
            co = viz_col(fields, nf, viz_h_off);
            cb = viz_col(fields, nf, viz_h_bytes);
            if (cy < 0 || cn < 0)
                return bp__err(err, BP_ERR_INVALID, "%s:%zu: the history header needs an \"event\" and a \"tensor\" column", file, line);
            snprintf(h->unit, sizeof h->unit, "%s", ct >= 0 ? fields[ct] : "event");
            have_header = true;
            s = next;
            continue;
        }
        int need = cy > cn ? cy : cn;
        if (ct > need) need = ct;
        if (ch > need) need = ch;
        if (co > need) need = co;
        if (cb > need) need = cb;
        if (nf <= need) return bp__err(err, BP_ERR_INVALID, "%s:%zu: %d fields, the header has more", file, line, nf);
        double time = (double)row;
        if (ct >= 0) {
            char *end;
            errno = 0;
            time = strtod(fields[ct], &end);
            while (*end == ' ') end++;
            if (errno || end == fields[ct] || *end || !isfinite(time))
                return bp__err(err, BP_ERR_INVALID, "%s:%zu: time \"%.40s\" is not a number", file, line, fields[ct]);
        }
        int64_t thread = 0;
        uint64_t off = 0, bytes = 0, u;
        bool has_off = false, has_bytes = false;
        if (ch >= 0 && !viz_empty(fields[ch])) {
            char *end;
            errno = 0;
            long long v = strtoll(fields[ch], &end, 10);
            if (errno || *end) return bp__err(err, BP_ERR_INVALID, "%s:%zu: thread \"%.40s\" is not an integer", file, line, fields[ch]);
            thread = v;
        }
        if (co >= 0 && !viz_empty(fields[co])) {
            if (!viz_parse_u64(fields[co], &u)) return bp__err(err, BP_ERR_INVALID, "%s:%zu: offset \"%.40s\" is not a byte count", file, line, fields[co]);
            off = u; has_off = true;
        }
        if (cb >= 0 && !viz_empty(fields[cb])) {
            if (!viz_parse_u64(fields[cb], &u)) return bp__err(err, BP_ERR_INVALID, "%s:%zu: bytes \"%.40s\" is not a byte count", file, line, fields[cb]);
            bytes = u; has_bytes = true;
        }
        bp_status st = viz_history_event(h, g, p, file, line, fields[cy], fields[cn], time, thread, has_off, off, has_bytes, bytes, err);
        if (st) return st;
        row++;
        s = next;
    }
    if (!have_header) return bp__err(err, BP_ERR_INVALID, "%s: the history is empty (no header line)", file);
    return BP_OK;
}

static const char *viz_jkey(json_t *o, const char *const *names)
{
    for (int i = 0; names[i]; i++) if (json_object_get(o, names[i])) return names[i];
    return NULL;
}

static bp_status viz_history_json(viz_history *h, const bp_graph *g, const bp_plan *p, const char *file, json_t *root, bp_error *err)
{
    json_t *ev = json_is_array(root) ? root : json_object_get(root, "events");
    if (!json_is_array(ev)) return bp__err(err, BP_ERR_INVALID, "%s: a JSON history is an array of events or an object with \"events\"", file);
    snprintf(h->unit, sizeof h->unit, "event");
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        if (!json_is_object(e)) return bp__err(err, BP_ERR_INVALID, "%s: event %zu is %s, not an object", file, i, bp__json_type(e));
        const char *kt = viz_jkey(e, viz_h_type), *kn = viz_jkey(e, viz_h_tensor), *kc = viz_jkey(e, viz_h_time);
        const char *kh = viz_jkey(e, viz_h_thread), *ko = viz_jkey(e, viz_h_off), *kb = viz_jkey(e, viz_h_bytes);
        json_t *vt = kt ? json_object_get(e, kt) : NULL, *vn = kn ? json_object_get(e, kn) : NULL;
        if (!json_is_string(vt)) return bp__err(err, BP_ERR_INVALID, "%s: event %zu has no \"event\" string", file, i);
        if (vn && !json_is_string(vn) && !json_is_null(vn)) return bp__err(err, BP_ERR_INVALID, "%s: event %zu: \"tensor\" is %s, not a string", file, i, bp__json_type(vn));
        double time = (double)i;
        if (kc) {
            json_t *v = json_object_get(e, kc);
            if (!json_is_number(v)) return bp__err(err, BP_ERR_INVALID, "%s: event %zu: \"%s\" is %s, not a number", file, i, kc, bp__json_type(v));
            time = json_number_value(v);
            if (i == 0) snprintf(h->unit, sizeof h->unit, "%s", kc);
        }
        int64_t thread = 0;
        uint64_t off = 0, bytes = 0;
        bool has_off = false, has_bytes = false;
        if (kh) {
            json_t *v = json_object_get(e, kh);
            if (!json_is_integer(v)) return bp__err(err, BP_ERR_INVALID, "%s: event %zu: \"%s\" is %s, not an integer", file, i, kh, bp__json_type(v));
            thread = json_integer_value(v);
        }
        json_t *vo = ko ? json_object_get(e, ko) : NULL, *vb = kb ? json_object_get(e, kb) : NULL;
        if (vo && !json_is_null(vo)) {
            if (!json_is_integer(vo) || json_integer_value(vo) < 0) return bp__err(err, BP_ERR_INVALID, "%s: event %zu: \"%s\" is not a byte count", file, i, ko);
            off = (uint64_t)json_integer_value(vo); has_off = true;
        }
        if (vb && !json_is_null(vb)) {
            if (!json_is_integer(vb) || json_integer_value(vb) < 0) return bp__err(err, BP_ERR_INVALID, "%s: event %zu: \"%s\" is not a byte count", file, i, kb);
            bytes = (uint64_t)json_integer_value(vb); has_bytes = true;
        }
        bp_status st = viz_history_event(h, g, p, file, i, json_string_value(vt), json_is_string(vn) ? json_string_value(vn) : NULL,
                                         time, thread, has_off, off, has_bytes, bytes, err);
        if (st) return st;
    }
    return BP_OK;
}

/* The executor's own history (`bufplan run --history`, "bufplan-history 1"):
 * per tenant a "tenant ID SPACE OFFSET BYTES NAME" line, then its alloc,
 * write, read / last-read and free lines with tick times and threads ("-"
 * where the tenant has none).  Each timed line becomes one event of that
 * tenant; the other lines (graph, run, range) are context. */
static bp_status viz_history_native(viz_history *h, const bp_graph *g, const bp_plan *p, const char *file, char *text,
                                    bp_error *err)
{
    char name[1024] = "";
    unsigned long long off = 0, bytes = 0;
    size_t line = 0;
    snprintf(h->unit, sizeof h->unit, "tick");
    for (char *s = text, *next; s && *s; s = next) {
        next = strchr(s, '\n');
        if (next) *next++ = 0;
        line++;
        char kw[32], sp[32];
        unsigned long long t0, t1;
        long long thr;
        int id, at = 0;
        if (sscanf(s, "%31s", kw) != 1) continue;
        if (!strcmp(kw, "tenant")) {
            if (sscanf(s, "tenant %d %31s %llu %llu %n", &id, sp, &off, &bytes, &at) < 4 || !at)
                return bp__err(err, BP_ERR_INVALID, "%s:%zu: a tenant line is \"tenant ID SPACE OFFSET BYTES NAME\"", file, line);
            snprintf(name, sizeof name, "%s", s + at);
            continue;
        }
        bool use = !strcmp(kw, "write") || !strcmp(kw, "read") || !strcmp(kw, "last-read");
        if (!use && strcmp(kw, "alloc") && strcmp(kw, "free")) continue;
        if (!name[0]) return bp__err(err, BP_ERR_INVALID, "%s:%zu: \"%s\" before any tenant line", file, line, kw);
        int got = use ? sscanf(s, "%*s %llu %llu %lld", &t0, &t1, &thr) : sscanf(s, "%*s %llu %lld", &t0, &thr);
        if (got < (use ? 3 : 2)) continue;   /* "-": no such event for this tenant */
        bp_status st = viz_history_event(h, g, p, file, line, kw, name, (double)(use && strcmp(kw, "write") ? t1 : t0),
                                         (int64_t)thr, true, off, true, bytes, err);
        if (st) return st;
    }
    return BP_OK;
}

static bp_status viz_history_read(viz_history *h, const bp_graph *g, const bp_plan *p, const char *path, bp_error *err)
{
    memset(h, 0, sizeof *h);
    h->a = &g->alloc;
    char *text = NULL;
    size_t len = 0;
    bp_status s = bp__read_file(path, h->a, &text, &len, err);
    if (s) return s;
    const char *q = text;
    while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
    if (*q == '{' || *q == '[') {
        json_t *root = NULL;
        s = bp__json_load_text(text, len, path, &root, err);
        if (!s) s = viz_history_json(h, g, p, path, root, err);
        json_decref(root);
    } else if (memchr(text, 0, len)) {
        s = bp__err(err, BP_ERR_INVALID, "%s: a history is CSV or JSON text, this file has NUL bytes", path);
    } else if (!strncmp(q, "bufplan-history ", 16)) {
        s = viz_history_native(h, g, p, path, (char *)q, err);
    } else {
        s = viz_history_csv(h, g, p, path, text, err);
    }
    bp__free(h->a, text, len + 1);
    if (s) { viz_history_free(h); return s; }
    /* tenants still open at the end last to the end of the log */
    for (size_t i = 0; i < h->names.n && i < h->open_cap; i++)
        if (h->open[i] >= 0 && h->t[h->open[i]].t1 < h->tmax) h->t[h->open[i]].t1 = h->tmax;
    return BP_OK;
}

/* -------------------------------------------------------------- HTML */

static void viz_num(FILE *f, double v)
{
    if (!isfinite(v)) v = 0;
    if (v == floor(v) && fabs(v) < 9e15) fprintf(f, "%.0f", v);
    else fprintf(f, "%.17g", v);
}

/* Whether t is the reservation of a control-flow op's bodies (drawn as a
 * dashed outline, so what the bodies hold shows through). */
static bool viz_reserve(const bp_graph *g, int32_t t) { return g->t[t].is_reserve; }

/* The tensors planned inside the bodies of control-flow ops, in the outer
 * plan's geometry: x0, ws are where step 0 of plan p starts and one step's
 * width, base is p's arena offset in the outer arena; an op's k-th of n
 * bodies gets the k-th n-th of its column (an If's branches side by side),
 * and bodies inside bodies nest the same way.  visit gets each drawn tensor
 * t of body b (plan c) with its x range and its offset in the outer arena. */
typedef void (*viz_body_visit)(void *ctx, const bp_graph *g, const bp__body *b, const bp_plan *c, int32_t t, double x0, double x1,
                               uint64_t off);

static void viz_walk_bodies(const bp_graph *g, const bp_plan *p, uint64_t base, double x0, double ws, viz_body_visit visit, void *ctx)
{
    for (int32_t i = 0; i < p->n_bodies && (size_t)i < g->n_bodies; i++) {
        const bp__body *b = &g->bodies[i];
        const bp_plan *c = p->bodies[i];
        int32_t s = 0, k = 0, n = 0;
        while (s < p->n_o && p->order[s] != b->op) s++;
        for (size_t j = 0; j < g->n_bodies; j++)
            if (g->bodies[j].op == b->op) { if ((int32_t)j < i) k++; n++; }
        double cw = ws / (n ? n : 1), cx = x0 + s * ws + k * cw, nb = c->n_o ? c->n_o : 1;
        uint64_t cb = base + p->body_base[i];
        for (int32_t t = 0; t < c->n_t; t++)
            if (viz_drawn(c, t)) visit(ctx, g, b, c, t, cx + c->tp[t].first / nb * cw, cx + (c->tp[t].last + 1) / nb * cw, cb + c->tp[t].offset);
        viz_walk_bodies(b->g, c, cb, cx, cw / nb, visit, ctx);
    }
}

/* For the page: [x0, x1, offset, bytes, name] per body tensor (reservations
 * of nested bodies left out: what they hold is drawn). */
typedef struct viz_jb { FILE *f; bool first; } viz_jb;

static void viz_json_body(void *ctx, const bp_graph *g, const bp__body *b, const bp_plan *c, int32_t t, double x0, double x1, uint64_t off)
{
    (void)g;
    viz_jb *j = ctx;
    if (viz_reserve(b->g, t)) return;
    fputs(j->first ? "[" : ",[", j->f);
    j->first = false;
    viz_num(j->f, x0);
    fputc(',', j->f);
    viz_num(j->f, x1);
    fprintf(j->f, ",%llu,%llu,", (unsigned long long)off, (unsigned long long)c->tp[t].bytes);
    bp__viz_json_str(j->f, bp__names_get(&b->g->tnames, t));
    fputc(']', j->f);
}

static bp_status viz_json_plan(FILE *f, const bp_graph *g, const bp_plan *p, const char *label, bp__progress *pr, bp_error *err)
{
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o;
    int32_t *step_of = bp__alloc(a, (no ? no : 1) * sizeof *step_of);
    if (!step_of) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory writing the page", g->name);
    for (size_t s = 0; s < no; s++) step_of[p->order[s]] = (int32_t)s;
    const bp_plan_stats *st = &p->stats;
    fputs("{\"label\":", f);
    bp__viz_json_str(f, label);
    fprintf(f, ",\"sched\":\"%s\",\"assign\":\"%s\",\"steps\":%d,\"align\":%llu,\"arena\":%llu,\"lb\":%llu,\"naive\":%llu,\"peak\":%d,\"optimal\":%d,"
               "\"dynamic\":%d,\"seconds\":",
            bp_sched_name(p->sched), bp_assign_name(p->assign), p->n_o, (unsigned long long)p->alignment,
            (unsigned long long)st->arena_bytes, (unsigned long long)st->lower_bound_bytes, (unsigned long long)st->naive_bytes,
            st->peak_step, st->optimal, st->n_dynamic);
    viz_num(f, st->plan_seconds);
    fputs(",\n\"order\":[", f);
    for (size_t s = 0; s < no; s++) fprintf(f, "%s%d", s ? "," : "", p->order[s]);
    /* one array per field, over the drawn tensors */
    static const char *const keys[] = {"ids", "first", "last", "off", "buf", "root", "reader"};
    for (int k = 0; k < 7; k++) {
        fprintf(f, "],\n\"%s\":[", keys[k]);
        bool first = true;
        for (size_t t = 0; t < nt; t++) {
            if (!viz_drawn(p, (int32_t)t)) continue;
            const bp_tensor_plan *tp = &p->tp[t];
            if (!first) fputc(',', f);
            first = false;
            switch (k) {
            case 0: fprintf(f, "%zu", t); break;
            case 1: fprintf(f, "%d", tp->first); break;
            case 2: fprintf(f, "%d", tp->last); break;
            case 3: fprintf(f, "%llu", (unsigned long long)tp->offset); break;
            case 4: fprintf(f, "%d", tp->buffer); break;
            case 5: fprintf(f, "%d", viz_root(p, (int32_t)t)); break;
            default: fprintf(f, "%d", viz_reader(g, step_of, (int32_t)t)); break;
            }
            if ((t & 4095) == 0) bp__progress_update(pr, -1, "writing %s", label);
        }
    }
    fputs("],\n\"resv\":[", f);   /* positions (in the arrays above) of reservations: outlined */
    {
        bool rf = true;
        size_t pos = 0;
        for (size_t t = 0; t < nt; t++) {
            if (!viz_drawn(p, (int32_t)t)) continue;
            if (viz_reserve(g, (int32_t)t)) { fprintf(f, "%s%zu", rf ? "" : ",", pos); rf = false; }
            pos++;
        }
    }
    fputs("],\n\"bodies\":[", f);
    viz_jb jb = {f, true};
    viz_walk_bodies(g, p, 0, 0, 1, viz_json_body, &jb);
    fputs("]}", f);
    bp__free(a, step_of, (no ? no : 1) * sizeof *step_of);
    return BP_OK;
}

/* "palette", each type's colour ("type_color", its rank in p) and the types
 * with bytes drawn by rank ("type_order"), so the page colours as the SVG. */
static bp_status viz_json_colors(FILE *f, const bp_graph *g, const bp_plan *p, bp_error *err)
{
    size_t nty = g->types.n ? g->types.n : 1;
    uint8_t *col = bp__alloc(&g->alloc, nty);
    int32_t *order = bp__alloc(&g->alloc, nty * sizeof *order);
    int32_t n = col && order ? bp__viz_type_colors(g, p, col, order) : -1;
    if (n >= 0) {
        fputs("],\n\"palette\":[", f);
        for (int i = 0; i < BP__VIZ_NPAL; i++) fprintf(f, "%s\"%s\"", i ? "," : "", bp__viz_pal[i]);
        fputs("],\"type_color\":[", f);
        for (size_t i = 0; i < g->types.n; i++) fprintf(f, "%s%d", i ? "," : "", col[i]);
        fputs("],\"type_order\":[", f);
        for (int32_t i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", order[i]);
    }
    bp__free(&g->alloc, col, nty);
    bp__free(&g->alloc, order, nty * sizeof *order);
    return n < 0 ? bp__err(err, BP_ERR_NOMEM, "%s: out of memory drawing the plan", g->name) : BP_OK;
}

static bp_status viz_json_data(FILE *f, const bp_graph *g, const bp_plan *p, const bp_viz_options *o, const char *title,
                               const viz_history *h, bp__progress *pr, bp_error *err)
{
    size_t nt = g->n_t, no = g->n_o;
    char shape[512];
    fputs("{\"format\":\"bufplan-viz\",\"version\":1,\"title\":", f);
    bp__viz_json_str(f, title);
    fputs(",\"graph\":", f);
    bp__viz_json_str(f, g->name);
    fprintf(f, ",\"color\":\"%s\",\n\"types\":[", o->color == BP_VIZ_COLOR_BUFFER ? "buffer" : "op");
    for (size_t i = 0; i < g->types.n; i++) {
        if (i) fputc(',', f);
        bp__viz_json_str(f, bp__names_get(&g->types, (int32_t)i));
    }
    bp_status cs = viz_json_colors(f, g, p, err);
    if (cs) return cs;
    fputs("],\n\"ops\":{\"name\":[", f);
    for (size_t i = 0; i < no; i++) {
        if (i) fputc(',', f);
        bp__viz_json_str(f, bp__names_get(&g->onames, (int32_t)i));
    }
    fputs("],\"type\":[", f);
    for (size_t i = 0; i < no; i++) fprintf(f, "%s%d", i ? "," : "", g->o[i].type);
    fputs("]},\n\"tensors\":{\"name\":[", f);
    for (size_t t = 0; t < nt; t++) {
        if (t) fputc(',', f);
        bp__viz_json_str(f, bp__names_get(&g->tnames, (int32_t)t));
    }
    fputs("],\n\"shape\":[", f);
    for (size_t t = 0; t < nt; t++) {
        if (t) fputc(',', f);
        viz_shape(g, (int32_t)t, shape, sizeof shape);
        bp__viz_json_str(f, shape);
    }
    fputs("],\n\"bytes\":[", f);
    for (size_t t = 0; t < nt; t++) fprintf(f, "%s%llu", t ? "," : "", (unsigned long long)g->t[t].bytes);
    fputs("],\n\"prod\":[", f);
    for (size_t t = 0; t < nt; t++) fprintf(f, "%s%d", t ? "," : "", g->t[t].producer);
    fputs("]},\n\"plans\":[", f);
    char label[256];
    viz_label(p, o->label, label, sizeof label);
    bp_status s = viz_json_plan(f, g, p, label, pr, err);
    if (!s && o->compare) {
        fputs(",\n", f);
        viz_label(o->compare, o->compare_label, label, sizeof label);
        s = viz_json_plan(f, g, o->compare, label, pr, err);
    }
    if (s) return s;
    fputs("],\n\"history\":", f);
    if (!h) {
        fputs("null}", f);
        return BP_OK;
    }
    fputs("{\"source\":", f);
    bp__viz_json_str(f, o->history_path);
    fputs(",\"unit\":", f);
    bp__viz_json_str(f, h->unit);
    fprintf(f, ",\"events\":%zu,\"skipped\":%zu,\n\"name\":[", h->events, h->skipped);
    for (size_t i = 0; i < h->n; i++) {
        if (i) fputc(',', f);
        bp__viz_json_str(f, h->pool + h->t[i].name);
    }
    fputs("],\n\"thread\":[", f);
    for (size_t i = 0; i < h->n; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)h->t[i].thread);
    fputs("],\n\"off\":[", f);
    for (size_t i = 0; i < h->n; i++) fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)h->t[i].off);
    fputs("],\n\"bytes\":[", f);
    for (size_t i = 0; i < h->n; i++) fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)h->t[i].bytes);
    fputs("],\n\"t0\":[", f);
    for (size_t i = 0; i < h->n; i++) { if (i) fputc(',', f); viz_num(f, h->t[i].t0); }
    fputs("],\n\"t1\":[", f);
    for (size_t i = 0; i < h->n; i++) { if (i) fputc(',', f); viz_num(f, h->t[i].t1); }
    fputs("]}}", f);
    return BP_OK;
}

static void viz_summary_row(FILE *f, int k)
{
    const char *sx = k ? "-2" : "";
    fprintf(f, "<tr><td class=\"l\" id=\"label%s\"></td><td id=\"tensor-count%s\">?</td>"
               "<td><span id=\"arena-h%s\"></span> (<span id=\"arena-bytes%s\">?</span> B)</td>"
               "<td><span id=\"peak-h%s\"></span> (<span id=\"peak-bytes%s\">?</span> B)</td>"
               "<td id=\"ratio-lb%s\"></td><td><span id=\"naive-h%s\"></span> (<span id=\"naive-bytes%s\">?</span> B)</td>"
               "<td id=\"ratio-naive%s\"></td><td id=\"peak-step%s\"></td><td class=\"l\" id=\"peak-op%s\"></td>"
               "<td id=\"plan-ms%s\"></td></tr>\n",
            sx, sx, sx, sx, sx, sx, sx, sx, sx, sx, sx, sx, sx);
}

bp_status bp_viz_write_html_file(const bp_graph *g, const bp_plan *p, const bp_viz_options *o, FILE *f, bp_error *err)
{
    bp_viz_options defaults;
    if (!o) { bp_viz_options_init(&defaults); o = &defaults; }
    bp_status s = viz_check(g, p, "viz", err);
    if (!s && o->compare) s = viz_check(g, o->compare, "viz --compare", err);
    if (s) return s;
    if (!f) return bp__err(err, BP_ERR_USAGE, "viz: NULL output stream");
    viz_history hist, *h = NULL;
    if (o->history_path) {
        if ((s = viz_history_read(&hist, g, p, o->history_path, err))) return s;
        h = &hist;
    }
    bp__progress pr;
    bp__progress_start(&pr, o->progress, "viz");
    const char *title = o->title ? o->title : g->name;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>bufplan: ", f);
    bp__viz_xml_str(f, title);
    fputs("</title>\n<style>\n", f);
    for (int i = 0; viz_css[i]; i++) fputs(viz_css[i], f);
    fputs("</style></head>\n<body data-ready=\"0\">\n<h1>Memory timeline: ", f);
    bp__viz_xml_str(f, title);
    fprintf(f, "</h1>\n<div class=\"hint\">graph <b>");
    bp__viz_xml_str(f, g->name);
    fprintf(f, "</b>: %zu ops, %zu tensors. Page <span id=\"status\">not ready (it needs JavaScript)</span>; "
               "last drawn in <span id=\"draw-ms\">?</span> ms.</div>\n"
               "<div id=\"warn\" class=\"bad\"></div>\n", g->n_o, g->n_t);
    fputs("<table id=\"summary\"><tr><th class=\"l\">plan</th><th>tensors drawn</th><th>arena</th>"
          "<th>lower bound (peak live)</th><th>arena / lower bound</th><th>naive</th><th>arena / naive</th>"
          "<th>peak step</th><th class=\"l\">op at the peak</th><th>plan ms</th></tr>\n", f);
    viz_summary_row(f, 0);
    if (o->compare) viz_summary_row(f, 1);
    fputs("</table>\n<div class=\"controls\"><label>color by <select id=\"color-by\"><option value=\"op\">op type</option>"
          "<option value=\"buffer\">buffer</option></select></label><button id=\"reset\">reset zoom</button>"
          "<span class=\"hint\">wheel: zoom steps &middot; shift+wheel: zoom offsets &middot; drag: pan &middot; "
          "double-click: reset &middot; hover: details</span></div>\n"
          "<div id=\"legend\" class=\"legend\"></div>\n<div id=\"panels\" class=\"panels\"></div>\n"
          "<h2>Live at the peak</h2>\n<div id=\"peaks\" class=\"panels\"></div>\n"
          "<div id=\"history\" style=\"display:none\"><h2>Executor history: <span id=\"history-source\"></span></h2>\n"
          "<div class=\"hint\"><span id=\"history-tenant-count\"></span> tenants, <span id=\"history-conflict-count\"></span> "
          "overlapping pairs (red), <span id=\"history-skipped\"></span> events without a place; color = thread</div>\n"
          "<canvas id=\"history-canvas\" class=\"hist\"></canvas>\n<table id=\"history-conflicts\"><tr><th class=\"l\">tenant</th>"
          "<th>time</th><th class=\"l\">overlaps</th><th>time</th><th class=\"l\">bytes</th></tr></table></div>\n"
          "<div id=\"tip\"></div>\n<script type=\"application/json\" id=\"bp-data\">", f);
    s = viz_json_data(f, g, p, o, title, h, &pr, err);
    if (!s) {
        fputs("</script>\n<script>\n", f);
        for (int i = 0; viz_js[i]; i++) fputs(viz_js[i], f);
        fputs("</script>\n</body></html>\n", f);
        if (ferror(f)) s = bp__err(err, BP_ERR_IO, "%s: write error writing the page", g->name);
    }
    bp__progress_end(&pr);
    if (h) viz_history_free(h);
    return s;
}

typedef bp_status (*viz_writer)(const bp_graph *, const bp_plan *, const bp_viz_options *, FILE *, bp_error *);

static bp_status viz_to_path(viz_writer w, const bp_graph *g, const bp_plan *p, const bp_viz_options *o, const char *path, bp_error *err)
{
    if (!path) return bp__err(err, BP_ERR_USAGE, "viz: NULL output path");
    bp__outfile out;
    bp_status s = bp__out_open(&out, path, err);
    if (s) return s;
    s = w(g, p, o, out.f, err);
    if (s) { bp__out_abort(&out); return s; }
    return bp__out_commit(&out, err);
}

bp_status bp_viz_write_html(const bp_graph *g, const bp_plan *p, const bp_viz_options *o, const char *path, bp_error *err)
{
    return viz_to_path(bp_viz_write_html_file, g, p, o, path, err);
}

/* --------------------------------------------------------------- SVG */

/* Palette index of tensor t: its producer's type colour (col, from
 * bp__viz_type_colors; NULL: by type id, for bodies), or its buffer's. */
static int viz_color(const bp_graph *g, const bp_plan *p, int32_t t, bp_viz_color mode, const uint8_t *col)
{
    if (mode == BP_VIZ_COLOR_BUFFER) return p->tp[t].buffer >= 0 ? p->tp[t].buffer % (BP__VIZ_NPAL - 1) : BP__VIZ_NPAL - 1;
    int32_t op = g->t[t].producer;
    if (op < 0) return BP__VIZ_NPAL - 1;
    return col ? col[g->o[op].type] : g->o[op].type % (BP__VIZ_NPAL - 1);
}

/* For the SVG: one <rect class="body"> per body tensor, reservations of
 * nested bodies as dashed outlines. */
typedef struct viz_frame {
    FILE *f; double L, pw, lo, steps, top, TH, ymax; bp_viz_color color; char *b1; size_t cap;
    const uint8_t *col;   /* palette index per op type (the body's own types: a body graph interns its own) */
} viz_frame;

static void viz_svg_body(void *ctx, const bp_graph *g, const bp__body *b, const bp_plan *c, int32_t t, double x0, double x1, uint64_t off)
{
    const viz_frame *fr = ctx;
    const bp_tensor_plan *tp = &c->tp[t];
    double x = fr->L + (x0 - fr->lo) / fr->steps * fr->pw, w = (x1 - x0) / fr->steps * fr->pw;
    double h = (double)tp->bytes / fr->ymax * fr->TH, y = fr->top + fr->TH - ((double)off + (double)tp->bytes) / fr->ymax * fr->TH;
    if (h < 0.4) { y -= 0.4 - h; h = 0.4; }
    fprintf(fr->f, "<rect class=\"body\" x=\"%.3f\" y=\"%.2f\" width=\"%.3f\" height=\"%.2f\" %s%s\"><title>", x, y, w, h,
            viz_reserve(b->g, t) ? "fill=\"none\" stroke-dasharray=\"3 2\" stroke=\"" : "fill=\"",
            bp__viz_pal[viz_color(b->g, c, t, fr->color, NULL)]);
    bp__viz_xml_str(fr->f, bp__names_get(&b->g->tnames, t));
    fprintf(fr->f, " (%s body of ", bp_body_kind_name(b->kind));
    bp__viz_xml_str(fr->f, bp__names_get(&g->onames, b->op));
    fprintf(fr->f, "): %s, body steps %d..%d, offset %llu</title></rect>\n", bp__viz_fmt_bytes(tp->bytes, fr->b1, fr->cap), tp->first,
            tp->last, (unsigned long long)off);
}

/* One rect per tensor, roots first so views draw on top. */
static void viz_svg_tensors(const bp__viz_svg *v, const bp_graph *g, const bp_plan *p, const bp_viz_options *o, const uint8_t *col,
                            int32_t n_drawn, bp__progress *pr)
{
    FILE *f = v->f;
    char b1[32];
    size_t nt = g->n_t;
    fprintf(f, "<g%s>\n", n_drawn <= 4000 ? " stroke=\"#00000059\" stroke-width=\"0.5\"" : "");
    for (int pass = 0; pass < 2; pass++) {
        for (size_t t = 0; t < nt; t++) {
            if (!viz_drawn(p, (int32_t)t) || (viz_root(p, (int32_t)t) == (int32_t)t) != (pass == 0)) continue;
            const bp_tensor_plan *tp = &p->tp[t];
            double x = bp__viz_sx(v, tp->first), w = (tp->last + 1 - tp->first) / v->steps * v->pw;
            double h = (double)tp->bytes / v->ymax * v->TH, y = v->top + v->TH - ((double)tp->offset + (double)tp->bytes) / v->ymax * v->TH;
            if (h < 0.4) { y -= 0.4 - h; h = 0.4; }
            fprintf(f, "<rect class=\"tensor\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" %s%s\"><title>", x, y, w, h,
                    viz_reserve(g, (int32_t)t) ? "fill=\"none\" stroke-dasharray=\"3 2\" stroke=\"" : "fill=\"",
                    bp__viz_pal[viz_color(g, p, (int32_t)t, o->color, col)]);
            bp__viz_xml_str(f, bp__names_get(&g->tnames, (int32_t)t));
            fprintf(f, ": %s, steps %d..%d, offset %llu</title></rect>\n", bp__viz_fmt_bytes(tp->bytes, b1, sizeof b1), tp->first,
                    tp->last, (unsigned long long)tp->offset);
            if ((t & 4095) == 0) bp__progress_update(pr, (pass + (double)t / (double)(nt ? nt : 1)) / 2, "drawing");
        }
    }
    viz_frame fr = {f, v->L, v->pw, v->lo, v->steps, v->top, v->TH, v->ymax, o->color, b1, sizeof b1, col};
    viz_walk_bodies(g, p, 0, 0, 1, viz_svg_body, &fr);
    fputs("</g>\n", f);
}

/* Legend: the op types by bytes drawn, each its own colour; the rest grey. */
static void viz_svg_legend(const bp__viz_svg *v, const bp_graph *g, const bp_viz_options *o, const int32_t *order, int32_t n_types,
                           int per_row)
{
    FILE *f = v->f;
    double ly = v->ltop + v->LH + 34;
    if (o->color == BP_VIZ_COLOR_BUFFER) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#444\">colors cycle through buffer indices</text>\n", v->L, ly + 9);
        return;
    }
    int32_t shown = n_types < BP__VIZ_NPAL ? n_types : BP__VIZ_NPAL;
    for (int32_t i = 0; i < shown; i++) {
        double lx = v->L + (double)(i % per_row) * 150, yy = ly + (double)(i / per_row) * 16;
        bool other = i == BP__VIZ_NPAL - 1 && n_types > BP__VIZ_NPAL - 1;
        fprintf(f, "<path class=\"swatch\" d=\"M%.1f %.1fh10v10h-10Z\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">", lx, yy,
                bp__viz_pal[i], lx + 14, yy + 9);
        if (other) fprintf(f, "%d other types", (int)(n_types - (BP__VIZ_NPAL - 1)));
        else bp__viz_xml_str(f, bp__names_get(&g->types, order[i]));
        fputs("</text>\n", f);
    }
}


bp_status bp_viz_write_svg_file(const bp_graph *g, const bp_plan *p, const bp_viz_options *o, FILE *f, bp_error *err)
{
    bp_viz_options defaults;
    if (!o) { bp_viz_options_init(&defaults); o = &defaults; }
    bp_status s = viz_check(g, p, "viz", err);
    if (s) return s;
    if (!f) return bp__err(err, BP_ERR_USAGE, "viz: NULL output stream");
    const bp_allocator *a = &g->alloc;
    size_t nt = g->n_t, no = g->n_o, nty = g->types.n ? g->types.n : 1;
    int32_t *sf, *sl;
    if ((s = viz_storages(p, &sf, &sl, err))) return s;
    uint64_t *live = bp__alloc(a, (no ? no : 1) * sizeof *live);
    uint8_t *col = bp__alloc(a, nty);
    int32_t *order = bp__alloc(a, nty * sizeof *order);
    int32_t n_types = live && col && order ? bp__viz_type_colors(g, p, col, order) : -1;
    if (n_types < 0) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory drawing the plan", g->name);
    if (!s) s = viz_live(p, sf, sl, live, err);
    if (s) goto done;
    bp__progress pr;
    bp__progress_start(&pr, o->progress, "viz");

    bp__viz_svg v;
    memset(&v, 0, sizeof v);
    v.f = f;
    v.peak_step = -1;
    int32_t n_drawn = 0;
    for (size_t t = 0; t < nt; t++) {
        if (!viz_drawn(p, (int32_t)t)) continue;
        n_drawn++;
        int32_t r = viz_root(p, (int32_t)t);
        uint64_t end = p->tp[t].offset + bp__align_up(p->tp[r].bytes, p->alignment);
        if (end > v.arena) v.arena = end;
    }
    for (size_t st = 0; st < no; st++) if (live[st] > v.peak) { v.peak = live[st]; v.peak_step = (int32_t)st; }
    bp__viz_step_range(p, &v.lo, &v.hi);
    v.steps = v.hi > v.lo ? (double)(v.hi - v.lo) : 1;

    v.W = o->width > 0 ? o->width : 1000;
    v.TH = o->height > 0 ? o->height : 420;
    v.LH = 140;
    if (v.W < 300) v.W = 300;
    if (v.TH < 100) v.TH = 100;
    v.L = 84;
    v.top = 48;
    v.pw = v.W - v.L - 16;
    v.ltop = v.top + v.TH + 44;   /* room for the step ticks and the axis title */
    int per_row = (int)(v.pw / 150) > 0 ? (int)(v.pw / 150) : 1;
    int32_t shown = n_types < BP__VIZ_NPAL ? n_types : BP__VIZ_NPAL;
    int legend_rows = o->color == BP_VIZ_COLOR_BUFFER ? 1 : (shown + per_row - 1) / per_row;
    v.H = v.ltop + v.LH + 30 + legend_rows * 16 + 8;
    v.ymax = (double)(v.arena > v.peak ? v.arena : v.peak) * 1.03;
    if (v.ymax <= 0) v.ymax = 1;
    bp__viz_fmt_bytes(v.arena, v.arena_txt, sizeof v.arena_txt);
    bp__viz_fmt_bytes(v.peak, v.peak_txt, sizeof v.peak_txt);
    bp__viz_ticks_make(v.ymax, 6, &v.tk[0]);
    bp__viz_ticks_make(v.ymax, 3, &v.tk[1]);
    char b1[32], b2[32], b3[32];

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", v.W, v.H, v.W, v.H);
    fprintf(f, "<path d=\"M0 0H%.0fV%.0fH0Z\" fill=\"#ffffff\"/>\n", v.W, v.H);
    char label[256];
    viz_label(p, o->label, label, sizeof label);
    fputs("<text x=\"12\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", f);
    bp__viz_xml_str(f, o->title ? o->title : g->name);
    fputs(" \xE2\x80\x94 ", f);
    bp__viz_xml_str(f, label);
    if (!n_drawn)   /* no empty chart with "peak at step -1": say why */
        fprintf(f, "</text>\n<text x=\"12\" y=\"37\" fill=\"#b00\">nothing planned: %d dynamic tensors (not planned), "
                   "%d inputs and %d weights (external), %zu steps</text>\n", p->stats.n_dynamic, p->stats.n_inputs,
                p->stats.n_weights, no);
    else
        fprintf(f, "</text>\n<text x=\"12\" y=\"37\" fill=\"#444\">%d tensors in the arena, %zu steps: arena %s, lower bound %s (peak at step %d), naive %s</text>\n",
                n_drawn, no, bp__viz_fmt_bytes(v.arena, b1, sizeof b1), bp__viz_fmt_bytes(v.peak, b2, sizeof b2), v.peak_step,
                bp__viz_fmt_bytes(p->stats.naive_bytes, b3, sizeof b3));
    bp__viz_svg_axes(&v, (int32_t)no);
    viz_svg_tensors(&v, g, p, o, col, n_drawn, &pr);
    bp__viz_svg_live(&v, live);
    bp__viz_svg_marks(&v);
    viz_svg_legend(&v, g, o, order, n_types, per_row);
    fputs("</svg>\n", f);
    bp__progress_end(&pr);
    if (ferror(f)) s = bp__err(err, BP_ERR_IO, "%s: write error writing the picture", g->name);
done:
    bp__free(a, live, (no ? no : 1) * sizeof *live);
    bp__free(a, col, nty);
    bp__free(a, order, nty * sizeof *order);
    viz_storages_free(p, sf, sl);
    return s;
}

bp_status bp_viz_write_svg(const bp_graph *g, const bp_plan *p, const bp_viz_options *o, const char *path, bp_error *err)
{
    return viz_to_path(bp_viz_write_svg_file, g, p, o, path, err);
}
