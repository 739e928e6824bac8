/*
 * dynamic.c — dynamic shapes: the conservative branch and the warm-up
 * planner.
 *
 * Conservative branch.  bp_plan_graph already keeps every tensor with an
 * unbound symbol out of the arena (kind dynamic, ALLOC/FREE events with
 * buffer -1), and with it whatever inherits its storage (views of it); the
 * importers give derived dimensions their own symbols, so everything
 * downstream whose size depends on a symbol is dynamic too, while tensors of
 * known size are planned as usual.  bp_dyn_analyze measures what that costs
 * at run time: it replays the plan's events with the dynamic tensors at
 * their concrete sizes (rounded like the pool rounds) and reports the
 * arena, the dynamic peak and their sum.
 *
 * Warm-up planner.  A bp_planner holds the graph with symbols.  Each run
 * brings concrete symbol values; buckets round them up; the sorted
 * "SYM=V,..." text is the signature.  A signature seen before gets its plan
 * from memory.  During warm-up (the first warmup_runs runs, or until
 * bp_planner_freeze) a new signature gets a concrete graph (a clone with the
 * symbols bound, or an ONNX re-import with them bound), then a plan from
 * the disk cache or from bp_plan_graph, which is kept.  After warm-up, or
 * with re-planning off, a new signature follows the policy: conservative
 * (the symbolic graph's plan, dynamic tensors from the pool), cover (the
 * smallest kept plan at least as large in every symbol: sizes grow with
 * dimensions, so its placements hold the smaller tensors) or error.
 * Plans are never made after warm-up, so run time stays predictable.
 */
#include "plan/plan_internal.h"
#include "bufplan_dyn.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the graph */

bp_status bp_graph_clone_bind(const bp_graph *g, int n, const char *const *syms, const int64_t *vals, bp_graph **out,
                              bp_error *err)
{
    *out = NULL;
    if (!g || n < 0 || (n && (!syms || !vals))) return bp__err(err, BP_ERR_USAGE, "clone: bad arguments");
    if (g->n_bodies)   /* a copy without its bodies would plan their reservations as nothing */
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: the graph has control flow (%zu bodies); dynamic re-planning of bodies is not supported (bind the shapes at import and plan it)",
                       g->name, g->n_bodies);
    bp_graph *c = bp_graph_new(g->name, &g->alloc);
    if (!c) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory copying the graph", g->name);
    bp_status s = BP_OK;
    int64_t dims[256];
    const char *sn[256];
    for (size_t t = 0; t < g->n_t && !s; t++) {
        const bp__tensor *x = &g->t[t];
        const char *name = bp__names_get(&g->tnames, (int32_t)t);
        int32_t id = -1;
        if (x->has_shape) {
            for (int i = 0; i < x->rank; i++) {
                int64_t d = g->dims[x->dims_off + i];
                bool sym = bp__dim_is_sym(d);
                dims[i] = sym ? BP_DIM_SYMBOLIC : d;
                sn[i] = sym ? bp__names_get(&g->syms, bp__dim_sym(d)) : NULL;
            }
            s = bp_graph_add_tensor_shape(c, name, (bp_dtype)x->dtype, x->rank, dims, sn, &id, err);
        } else {
            s = bp_graph_add_tensor(c, name, x->bytes, &id, err);
        }
        if (!s && x->flags) s = bp_graph_mark(c, id, x->flags, err);
        if (!s) c->t[id].is_const = x->is_const;
    }
    for (size_t t = 0; t < g->n_t && !s; t++)
        if (g->t[t].view_of >= 0) s = bp_graph_set_view(c, (int32_t)t, g->t[t].view_of, err);
    for (size_t o = 0; o < g->n_o && !s; o++) {
        const bp__op *x = &g->o[o];
        s = bp_graph_add_op(c, bp__names_get(&g->onames, (int32_t)o), bp__names_get(&g->types, x->type), x->n_in,
                            bp__op_in(g, (int32_t)o), x->n_out, bp__op_out(g, (int32_t)o), x->cost, NULL, err);
    }
    for (size_t i = 0; i < g->n_inpl && !s; i++) s = bp_graph_set_inplace(c, g->inpl[i].op, g->inpl[i].out, g->inpl[i].in, err);
    if (!s) s = bp__attrs_copy(c, g, err);
    for (size_t k = 0; k < g->syms.n && !s; k++)
        if (k < g->cap_sym_val && g->sym_val[k] >= 0) s = bp_graph_bind_dim(c, bp__names_get(&g->syms, (int32_t)k), g->sym_val[k], err);
    for (int i = 0; i < n && !s; i++) s = bp_graph_bind_dim(c, syms[i], vals[i], err);
    if (!s) s = bp_graph_finalize(c, err);
    if (s) { bp_graph_free(c); return s; }
    *out = c;
    return BP_OK;
}

int bp_graph_free_symbols(const bp_graph *g, int all, const char **names, int max)
{
    int n = 0;
    size_t ns = g->syms.n;
    if (!ns) return 0;
    unsigned char *want = bp__calloc(&g->alloc, ns, 1);
    if (!want) return 0;
    for (size_t t = 0; t < g->n_t; t++) {
        const bp__tensor *x = &g->t[t];
        if (!x->has_shape || (!all && x->producer >= 0)) continue;
        for (int i = 0; i < x->rank; i++) {
            int64_t d = g->dims[x->dims_off + i];
            if (bp__dim_is_sym(d)) {
                int32_t k = bp__dim_sym(d);
                if (g->sym_val[k] < 0) want[k] = 1;
            }
        }
    }
    for (size_t k = 0; k < ns; k++)
        if (want[k]) {
            if (n < max && names) names[n] = bp__names_get(&g->syms, (int32_t)k);
            n++;
        }
    bp__free(&g->alloc, want, ns);
    return n;
}

/* ---------------------------------------------------- conservative branch */

bp_status bp_dyn_analyze(const bp_graph *g, const bp_plan *p, const bp_graph *concrete, uint64_t round, bp_dyn_report *r,
                         bp_error *err)
{
    memset(r, 0, sizeof *r);
    if (!g || !p || !r) return bp__err(err, BP_ERR_USAGE, "dyn_analyze: NULL argument");
    if ((size_t)p->n_t != g->n_t || (size_t)p->n_o != g->n_o)
        return bp__err(err, BP_ERR_USAGE, "%s: the plan does not belong to this graph", g->name);
    if (!round) round = 1;
    size_t nt = g->n_t;
    const bp_allocator *a = &g->alloc;
    uint64_t *size = bp__calloc(a, nt ? nt : 1, sizeof *size);  /* run-time bytes per storage root */
    if (!size) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    bp_status s = BP_OK;
    for (size_t t = 0; t < nt && !s; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        bool produced = g->t[t].producer >= 0;
        if (tp->offset != BP_NO_OFFSET) {
            if (produced) { r->n_static++; r->static_bytes += g->t[t].bytes; }
            continue;
        }
        if (tp->kind != BP_KIND_DYNAMIC) continue;
        if (produced) r->n_dynamic++;
        uint64_t b = g->t[t].bytes;
        if (concrete && concrete != g) {
            const char *name = bp__names_get(&g->tnames, (int32_t)t);
            int32_t ct = bp_graph_find_tensor(concrete, name);
            if (ct < 0) { s = bp__err(err, BP_ERR_INVALID, "%s: tensor \"%s\" is not in the concrete graph", g->name, name); break; }
            b = concrete->t[ct].bytes;
        }
        if (produced) r->dynamic_bytes += b;
        int32_t root = tp->alias_of >= 0 ? tp->alias_of : (int32_t)t;
        uint64_t rb = bp__align_up(b, round);
        if (rb > size[root]) size[root] = rb;
    }
    if (!s) {
        /* Replay ALLOC / FREE of the dynamic storages.  A FREE without an
         * ALLOC (a dynamic graph input: the caller's memory) counts nothing;
         * size[] of a storage is cleared once freed. */
        uint64_t live = 0, peak = 0;
        uint8_t *on = bp__calloc(a, nt ? nt : 1, 1);
        if (!on) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        for (size_t i = 0; i < p->n_ev && on; i++) {
            const bp_event *e = &p->ev[i];
            if (e->type == BP_EV_EXEC || e->tensor < 0 || e->offset != BP_NO_OFFSET) continue;
            if (p->tp[e->tensor].kind != BP_KIND_DYNAMIC) continue;
            if (e->type == BP_EV_ALLOC && !on[e->tensor]) {
                on[e->tensor] = 1;
                live += size[e->tensor];
                if (live > peak) peak = live;
            } else if (e->type == BP_EV_FREE && on[e->tensor]) {
                on[e->tensor] = 0;
                live -= size[e->tensor];
            }
        }
        bp__free(a, on, nt ? nt : 1);
        r->dynamic_peak_bytes = peak;
        r->arena_bytes = p->stats.arena_bytes;
        r->total_peak_bytes = r->arena_bytes + peak;
    }
    bp__free(a, size, (nt ? nt : 1) * sizeof *size);
    return s;
}

/* --------------------------------------------------------------- planner */

typedef struct dyn_entry {
    char *sig;
    int64_t *vals;          /* bucketed value of each planner symbol */
    bp_graph *graph;        /* concrete */
    bp_plan *plan;
    bp_dyn_report rep;
} dyn_entry;

typedef struct dyn_onnx {
    char *path;
    bp_onnx_options base;
    int n_dims;             /* base dims (copied) */
    char **dim_names;
    int64_t *dim_values;
} dyn_onnx;

struct bp_planner {
    const bp_graph *g;
    bp_graph *owned;
    bp_config cfg;
    bp_graph_source_fn src;
    void *src_ctx;
    dyn_onnx *ox;
    int n_syms;
    const char **syms;      /* point into g */
    uint64_t ghash[2];
    bp_plan_cache *cache;
    bp_plan *cons_plan;
    dyn_entry *e;
    size_t n_e, cap_e;
    dyn_entry last_cons;    /* the conservative concrete graph of the last run */
    dyn_entry last_actual;  /* the graph at the last unbucketed shapes that a bucket rounded */
    int frozen;
    bp_planner_stats st;
};

static const char *const dyn_how_names[] = {"replanned", "memory-hit", "disk-hit", "conservative", "covered"};
const char *bp_dyn_how_name(bp_dyn_how h) { return (unsigned)h <= BP_DYN_COVERED ? dyn_how_names[h] : "?"; }

static bp_status dyn_source_clone(void *ctx, int n, const char *const *syms, const int64_t *vals, bp_graph **out, bp_error *err)
{
    return bp_graph_clone_bind((const bp_graph *)ctx, n, syms, vals, out, err);
}

static void dyn_str_free(const bp_allocator *a, char *s) { if (s) bp__free(a, s, strlen(s) + 1); }

static char *dyn_strdup(const bp_allocator *a, const char *s)
{
    char *d = bp__alloc(a, strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static bp_status dyn_source_onnx(void *ctx, int n, const char *const *syms, const int64_t *vals, bp_graph **out, bp_error *err)
{
    dyn_onnx *ox = ctx;
    const bp_allocator *a = &bp__libc_allocator;
    int total = ox->n_dims + n;
    size_t nb = (size_t)(total ? total : 1);
    const char **names = bp__alloc(a, nb * sizeof *names);
    int64_t *v = bp__alloc(a, nb * sizeof *v);
    bp_status s;
    if (!names || !v) {
        s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", ox->path);
    } else {
        for (int i = 0; i < ox->n_dims; i++) { names[i] = ox->dim_names[i]; v[i] = ox->dim_values[i]; }
        for (int i = 0; i < n; i++) { names[ox->n_dims + i] = syms[i]; v[ox->n_dims + i] = vals[i]; }
        bp_onnx_options o = ox->base;
        o.n_dims = total;
        o.dim_names = names;
        o.dim_values = v;
        s = bp_onnx_read(ox->path, &o, NULL, out, err);
    }
    bp__free(a, names, nb * sizeof *names);
    bp__free(a, v, nb * sizeof *v);
    return s;
}

static void dyn_onnx_free(dyn_onnx *ox)
{
    if (!ox) return;
    const bp_allocator *a = &bp__libc_allocator;
    for (int i = 0; i < ox->n_dims; i++) dyn_str_free(a, ox->dim_names[i]);
    bp__free(a, ox->dim_names, (size_t)(ox->n_dims ? ox->n_dims : 1) * sizeof *ox->dim_names);
    bp__free(a, ox->dim_values, (size_t)(ox->n_dims ? ox->n_dims : 1) * sizeof *ox->dim_values);
    dyn_str_free(a, ox->path);
    bp__free(a, ox, sizeof *ox);
}

static void dyn_entry_clear(bp_planner *pl, dyn_entry *e)
{
    const bp_allocator *a = &pl->g->alloc;
    bp_plan_free(e->plan);
    bp_graph_free(e->graph);
    dyn_str_free(a, e->sig);
    bp__free(a, e->vals, (size_t)(pl->n_syms ? pl->n_syms : 1) * sizeof *e->vals);
    memset(e, 0, sizeof *e);
}

void bp_planner_free(bp_planner *pl)
{
    if (!pl) return;
    for (size_t i = 0; i < pl->n_e; i++) dyn_entry_clear(pl, &pl->e[i]);
    dyn_entry_clear(pl, &pl->last_cons);
    dyn_entry_clear(pl, &pl->last_actual);
    const bp_allocator *a = &pl->g->alloc;
    bp__free(a, pl->e, pl->cap_e * sizeof *pl->e);
    bp__free(a, pl->syms, (size_t)(pl->n_syms ? pl->n_syms : 1) * sizeof *pl->syms);
    bp_plan_free(pl->cons_plan);
    bp_plan_cache_close(pl->cache);
    dyn_onnx_free(pl->ox);
    bp_graph *owned = pl->owned;
    bp__free(&bp__libc_allocator, pl, sizeof *pl);
    bp_graph_free(owned);
}

static bp_status dyn_new(const bp_graph *g, const bp_config *cfg, int all_syms, bp_planner **out, bp_error *err)
{
    bp_planner *pl = bp__calloc(&bp__libc_allocator, 1, sizeof *pl);
    if (!pl) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    pl->g = g;
    if (cfg) pl->cfg = *cfg; else bp_config_init(&pl->cfg);
    pl->src = dyn_source_clone;
    pl->src_ctx = (void *)g;
    int n = bp_graph_free_symbols(g, all_syms, NULL, 0);
    pl->syms = bp__alloc(&g->alloc, (size_t)(n ? n : 1) * sizeof *pl->syms);
    if (!pl->syms) { bp__free(&bp__libc_allocator, pl, sizeof *pl); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name); }
    pl->n_syms = bp_graph_free_symbols(g, all_syms, pl->syms, n);
    bp_graph_hash(g, pl->ghash);
    if (pl->cfg.cache_dir[0]) {
        bp_status s = bp_plan_cache_open(pl->cfg.cache_dir, NULL, &pl->cache, err);
        if (s) { bp_planner_free(pl); return s; }
        bp_plan_cache_set_verify(pl->cache, pl->cfg.cache_verify);
    }
    *out = pl;
    return BP_OK;
}

bp_status bp_planner_new(const bp_graph *g, const bp_config *cfg, bp_planner **out, bp_error *err)
{
    *out = NULL;
    if (!g) return bp__err(err, BP_ERR_USAGE, "planner: NULL graph");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    return dyn_new(g, cfg, 1, out, err);
}

bp_status bp_planner_new_onnx(const char *path, const bp_onnx_options *opts, const bp_config *cfg, bp_planner **out,
                              bp_error *err)
{
    *out = NULL;
    if (!path) return bp__err(err, BP_ERR_USAGE, "planner: NULL path");
    bp_onnx_options base;
    if (opts) base = *opts; else bp_onnx_options_init(&base);
    if (base.n_shapes) return bp__err(err, BP_ERR_USAGE, "%s: the planner binds symbols; give input shapes to bp_planner_get_shapes, not to the import", path);
    bp_graph *g = NULL;
    bp_status s = bp_onnx_read(path, &base, NULL, &g, err);
    if (s) return s;
    const bp_allocator *a = &bp__libc_allocator;
    dyn_onnx *ox = bp__calloc(a, 1, sizeof *ox);
    if (ox) {
        size_t nd = (size_t)(base.n_dims ? base.n_dims : 1);
        ox->path = dyn_strdup(a, path);
        ox->dim_names = bp__calloc(a, nd, sizeof *ox->dim_names);
        ox->dim_values = bp__calloc(a, nd, sizeof *ox->dim_values);
        bool ok = ox->path && ox->dim_names && ox->dim_values;
        for (int i = 0; ok && i < base.n_dims; i++) {
            ox->dim_names[i] = dyn_strdup(a, base.dim_names[i]);
            ox->dim_values[i] = base.dim_values[i];
            ok = ox->dim_names[i] != NULL;
            ox->n_dims = i + 1;
        }
        if (!ok) { dyn_onnx_free(ox); ox = NULL; }
    }
    if (!ox) { bp_graph_free(g); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path); }
    ox->base = base;
    ox->base.n_dims = 0;
    ox->base.dim_names = NULL;
    ox->base.dim_values = NULL;
    bp_planner *pl = NULL;
    s = dyn_new(g, cfg, 0, &pl, err);
    if (s) { dyn_onnx_free(ox); bp_graph_free(g); return s; }
    pl->owned = g;
    pl->ox = ox;
    pl->src = dyn_source_onnx;
    pl->src_ctx = ox;
    *out = pl;
    return BP_OK;
}

void bp_planner_set_source(bp_planner *pl, bp_graph_source_fn fn, void *ctx)
{
    if (fn) { pl->src = fn; pl->src_ctx = ctx; }
    else { pl->src = dyn_source_clone; pl->src_ctx = (void *)pl->g; }
}

const bp_graph *bp_planner_graph(const bp_planner *pl) { return pl->g; }

int bp_planner_symbols(const bp_planner *pl, const char **names, int max)
{
    for (int i = 0; i < pl->n_syms && i < max; i++) names[i] = pl->syms[i];
    return pl->n_syms;
}

void bp_planner_freeze(bp_planner *pl) { pl->frozen = 1; }
int bp_planner_frozen(const bp_planner *pl) { return pl->frozen; }
void bp_planner_get_stats(const bp_planner *pl, bp_planner_stats *out)
{
    *out = pl->st;
    out->n_plans = (int32_t)pl->n_e;
}

/* The conservative plan of the symbolic graph (made once, also cached). */
static bp_status dyn_cons_plan(bp_planner *pl, bp_error *err)
{
    if (pl->cons_plan) return BP_OK;
    bp_cache_key key;
    bp_status s = BP_OK;
    if (pl->cache) {
        s = bp_cache_key_make_hashed(pl->ghash, "", &pl->cfg.plan, &key, err);
        if (!s) s = bp_plan_cache_get(pl->cache, &key, pl->g, &pl->cons_plan, err);
        if (s || pl->cons_plan) return s;
    }
    double t0 = bp__now();
    s = bp_plan_graph(pl->g, &pl->cfg.plan, &pl->cons_plan, err);
    pl->st.plan_seconds += bp__now() - t0;
    if (!s && pl->cache) {
        bp_error werr;
        bp__err_clear(&werr);
        if (bp_plan_cache_put(pl->cache, &key, pl->g, pl->cons_plan, &werr))
            fprintf(stderr, "bufplan: warning: plan cache: %s (the plan is not cached)\n", werr.msg);
    }
    return s;
}

static dyn_entry *dyn_find(bp_planner *pl, const char *sig)
{
    for (size_t i = 0; i < pl->n_e; i++)
        if (!strcmp(pl->e[i].sig, sig)) return &pl->e[i];
    return NULL;
}

static void dyn_fill(bp_dyn_result *res, bp_dyn_how how, const bp_graph *graph, const bp_plan *plan, const bp_graph *concrete,
                     const char *sig, const bp_dyn_report *rep)
{
    res->how = how;
    res->graph = graph;
    res->plan = plan;
    res->concrete = concrete;
    snprintf(res->signature, sizeof res->signature, "%s", sig);
    res->report = *rep;
}

static bp_status dyn_get(bp_planner *pl, int n, const char *const *syms, const int64_t *vals, bp_dyn_result *res, bp_error *err)
{
    memset(res, 0, sizeof *res);
    if (!pl || n < 0 || (n && (!syms || !vals))) return bp__err(err, BP_ERR_USAGE, "planner: bad arguments");
    const bp_graph *g = pl->g;
    const bp_allocator *a = &g->alloc;
    size_t vb = (size_t)(pl->n_syms ? pl->n_syms : 1) * sizeof(int64_t);
    int64_t *v = bp__alloc(a, vb);
    if (!v) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    bp_status s = BP_OK;
    for (int k = 0; k < pl->n_syms; k++) v[k] = -1;
    for (int i = 0; i < n && !s; i++) {
        int k = 0;
        while (k < pl->n_syms && strcmp(pl->syms[k], syms[i])) k++;
        if (k == pl->n_syms) s = bp__err(err, BP_ERR_USAGE, "%s: \"%s\" is not a free symbol of the graph", g->name, syms[i]);
        else if (vals[i] < 0) s = bp__err(err, BP_ERR_USAGE, "%s: %s=%lld is negative", g->name, syms[i], (long long)vals[i]);
        else if (v[k] >= 0 && v[k] != vals[i])
            s = bp__err(err, BP_ERR_USAGE, "%s: symbol \"%s\" given twice (%lld and %lld)", g->name, syms[i], (long long)v[k], (long long)vals[i]);
        else v[k] = vals[i];
    }
    for (int k = 0; k < pl->n_syms && !s; k++)
        if (v[k] < 0) s = bp__err(err, BP_ERR_USAGE, "%s: no value for the symbol \"%s\"", g->name, pl->syms[k]);
    char sig[BP_SIG_MAX];
    if (!s) {
        for (int k = 0; k < pl->n_syms; k++) v[k] = bp_config_bucket(&pl->cfg, pl->syms[k], v[k]);
        s = bp_signature(pl->n_syms, pl->syms, v, sig, err);
    }
    if (s) { bp__free(a, v, vb); return s; }

    pl->st.runs++;
    if (!pl->frozen && pl->cfg.warmup_runs > 0 && pl->st.runs > (uint64_t)pl->cfg.warmup_runs) pl->frozen = 1;
    dyn_entry *e = dyn_find(pl, sig);
    if (e) {
        pl->st.memory_hits++;
        dyn_fill(res, BP_DYN_MEMORY_HIT, e->graph, e->plan, e->graph, e->sig, &e->rep);
        bp__free(a, v, vb);
        return BP_OK;
    }
    if (!pl->frozen && pl->cfg.replan) {
        /* Warm-up: a static plan for this signature. */
        dyn_entry ne;
        memset(&ne, 0, sizeof ne);
        bp_dyn_how how = BP_DYN_REPLANNED;
        ne.vals = v;
        v = NULL;
        ne.sig = dyn_strdup(a, sig);
        if (!ne.sig) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        if (!s) s = pl->src(pl->src_ctx, pl->n_syms, pl->syms, ne.vals, &ne.graph, err);
        bp_cache_key key;
        if (!s && pl->cache) {
            s = bp_cache_key_make_hashed(pl->ghash, sig, &pl->cfg.plan, &key, err);
            if (!s) s = bp_plan_cache_get(pl->cache, &key, ne.graph, &ne.plan, err);
            if (!s && ne.plan) how = BP_DYN_DISK_HIT;
        }
        if (!s && !ne.plan) {
            double t0 = bp__now();
            s = bp_plan_graph(ne.graph, &pl->cfg.plan, &ne.plan, err);
            pl->st.plan_seconds += bp__now() - t0;
            if (!s && pl->cache) {
                bp_error werr;
                bp__err_clear(&werr);
                if (bp_plan_cache_put(pl->cache, &key, ne.graph, ne.plan, &werr))
                    fprintf(stderr, "bufplan: warning: plan cache: %s (the plan is not cached)\n", werr.msg);
            }
        }
        if (!s) s = bp_dyn_analyze(ne.graph, ne.plan, ne.graph, 256, &ne.rep, err);
        if (!s && !bp__grow(a, (void **)&pl->e, &pl->cap_e, pl->n_e + 1, sizeof *pl->e))
            s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        if (s) { dyn_entry_clear(pl, &ne); return s; }
        pl->e[pl->n_e++] = ne;
        e = &pl->e[pl->n_e - 1];
        if (how == BP_DYN_DISK_HIT) pl->st.disk_hits++; else pl->st.replans++;
        dyn_fill(res, how, e->graph, e->plan, e->graph, e->sig, &e->rep);
        return BP_OK;
    }
    /* Frozen, or re-planning off. */
    if (pl->cfg.dynamic_policy == BP_DYN_ERROR) {
        s = bp__err(err, BP_ERR_UNSUPPORTED, "%s: no plan for the shapes %s and the planner is %s (dynamic_policy error)", g->name, sig,
                    pl->frozen ? "frozen" : "not re-planning");
        bp__free(a, v, vb);
        return s;
    }
    if (pl->cfg.dynamic_policy == BP_DYN_COVER) {
        dyn_entry *best = NULL;
        for (size_t i = 0; i < pl->n_e; i++) {
            dyn_entry *c = &pl->e[i];
            bool covers = true;
            for (int k = 0; k < pl->n_syms && covers; k++) covers = c->vals[k] >= v[k];
            if (covers && (!best || c->rep.total_peak_bytes < best->rep.total_peak_bytes)) best = c;
        }
        if (best) {
            pl->st.covered_runs++;
            dyn_fill(res, BP_DYN_COVERED, best->graph, best->plan, best->graph, sig, &best->rep);
            bp__free(a, v, vb);
            return BP_OK;
        }
    }
    /* Conservative: the symbolic graph's plan; run-time sizes from a
     * concrete graph (kept for the next run with the same signature). */
    s = dyn_cons_plan(pl, err);
    if (!s && !(pl->last_cons.sig && !strcmp(pl->last_cons.sig, sig))) {
        dyn_entry_clear(pl, &pl->last_cons);
        pl->last_cons.sig = dyn_strdup(a, sig);
        if (!pl->last_cons.sig) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
        if (!s) s = pl->src(pl->src_ctx, pl->n_syms, pl->syms, v, &pl->last_cons.graph, err);
        if (!s) s = bp_dyn_analyze(g, pl->cons_plan, pl->last_cons.graph, 256, &pl->last_cons.rep, err);
        if (s) dyn_entry_clear(pl, &pl->last_cons);
    }
    bp__free(a, v, vb);
    if (s) return s;
    pl->st.conservative_runs++;
    dyn_fill(res, BP_DYN_RAN_CONSERVATIVE, g, pl->cons_plan, pl->last_cons.graph, sig, &pl->last_cons.rep);
    return BP_OK;
}

/* res->actual: res->concrete when no bucket rounded a value of the binding
 * (already checked by dyn_get), else the source's graph at the values as
 * given (kept for the next call with the same values). */
static bp_status dyn_actual(bp_planner *pl, int n, const char *const *syms, const int64_t *vals, bp_dyn_result *res,
                            bp_error *err)
{
    const bp_allocator *a = &pl->g->alloc;
    size_t vb = (size_t)(pl->n_syms ? pl->n_syms : 1) * sizeof(int64_t);
    int64_t *raw = bp__alloc(a, vb);
    if (!raw) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", pl->g->name);
    bool rounded = false;
    for (int k = 0; k < pl->n_syms; k++) {
        for (int i = 0; i < n; i++)
            if (!strcmp(pl->syms[k], syms[i])) raw[k] = vals[i];
        rounded |= bp_config_bucket(&pl->cfg, pl->syms[k], raw[k]) != raw[k];
    }
    char sig[BP_SIG_MAX];
    bp_status s = rounded ? bp_signature(pl->n_syms, pl->syms, raw, sig, err) : BP_OK;
    if (!s && rounded && !(pl->last_actual.sig && !strcmp(pl->last_actual.sig, sig))) {
        dyn_entry_clear(pl, &pl->last_actual);
        pl->last_actual.sig = dyn_strdup(a, sig);
        if (!pl->last_actual.sig) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", pl->g->name);
        if (!s) s = pl->src(pl->src_ctx, pl->n_syms, pl->syms, raw, &pl->last_actual.graph, err);
        if (s) dyn_entry_clear(pl, &pl->last_actual);
    }
    bp__free(a, raw, vb);
    if (!s) res->actual = rounded ? pl->last_actual.graph : res->concrete;
    return s;
}

bp_status bp_planner_get(bp_planner *pl, int n, const char *const *syms, const int64_t *vals, bp_dyn_result *res, bp_error *err)
{
    bp_status s = dyn_get(pl, n, syms, vals, res, err);
    if (!s) s = dyn_actual(pl, n, syms, vals, res, err);
    return s;
}

bp_status bp_planner_get_shapes(bp_planner *pl, int n, const char *const *tensors, const int *ranks, const int64_t *const *dims,
                                bp_dyn_result *res, bp_error *err)
{
    memset(res, 0, sizeof *res);
    if (!pl || n < 0 || (n && (!tensors || !ranks || !dims))) return bp__err(err, BP_ERR_USAGE, "planner: bad arguments");
    const bp_graph *g = pl->g;
    const bp_allocator *a = &g->alloc;
    size_t cap = (size_t)(pl->n_syms ? pl->n_syms : 1);
    const char **sn = bp__alloc(a, cap * sizeof *sn);
    int64_t *sv = bp__alloc(a, cap * sizeof *sv);
    int m = 0;
    bp_status s = BP_OK;
    if (!sn || !sv) s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", g->name);
    int64_t cur[256];
    for (int i = 0; i < n && !s; i++) {
        int32_t t = bp_graph_find_tensor(g, tensors[i]);
        int r = t >= 0 ? bp_graph_tensor_dims(g, t, cur, 256) : -1;
        if (t < 0) { s = bp__err(err, BP_ERR_USAGE, "%s: no tensor is called \"%s\"", g->name, tensors[i]); break; }
        if (r != ranks[i]) { s = bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\" has rank %d, not %d", g->name, tensors[i], r, ranks[i]); break; }
        for (int d = 0; d < r && !s; d++) {
            if (cur[d] != BP_DIM_SYMBOLIC) {
                if (cur[d] != dims[i][d])
                    s = bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\": dimension %d is %lld, not %lld", g->name, tensors[i], d,
                                (long long)cur[d], (long long)dims[i][d]);
                continue;
            }
            const char *sym = bp_graph_tensor_dim_symbol(g, t, d);
            int k = 0;
            while (k < m && strcmp(sn[k], sym)) k++;
            if (k < m) {
                if (sv[k] != dims[i][d])
                    s = bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\": dimension %d (%s) is %lld, but %s = %lld elsewhere", g->name,
                                tensors[i], d, sym, (long long)dims[i][d], sym, (long long)sv[k]);
                continue;
            }
            if ((size_t)m >= cap) { s = bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\": symbol \"%s\" is not a free symbol of the graph", g->name, tensors[i], sym); break; }
            sn[m] = sym;
            sv[m++] = dims[i][d];
        }
    }
    if (!s) s = bp_planner_get(pl, m, sn, sv, res, err);
    bp__free(a, sn, cap * sizeof *sn);
    bp__free(a, sv, cap * sizeof *sv);
    return s;
}
