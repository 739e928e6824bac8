/*
 * plan_io.c — plan files: the "bufplan-plan" JSON format and the events CSV
 * (docs/FORMATS.md).
 *
 * Writing streams with fprintf, one tensor or event per line, into a temp
 * file renamed on success.  A tensor is listed when it is used (first >= 0),
 * in the arena, or an alias; the others are implied (unused, not in the
 * arena).
 *
 * Reading rebuilds a bp_plan for a given graph and trusts nothing in the
 * file: every name is resolved against the graph, every number is range
 * checked (steps within the schedule, buffers within int32), the schedule
 * must be a permutation of the graph's ops, and a tensor may be listed once.
 * Soundness (intervals, overlaps, topological order) is not checked here:
 * that is bp_verify's job, and the struct built here is what it examines.
 */
#include "core/json_io.h"
#include "plan/plan_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- writing */

static bp_status pj_check_ids(const bp_plan *p, const bp_graph *g, bp_error *err)
{
    if (!p || !g) return bp__err(err, BP_ERR_USAGE, "plan writer: NULL argument");
    if ((size_t)p->n_t != g->n_t || (size_t)p->n_o != g->n_o)
        return bp__err(err, BP_ERR_USAGE, "%s: the plan is for a graph of %d tensors and %d ops, not %zu and %zu",
                       g->name, p->n_t, p->n_o, g->n_t, g->n_o);
    for (int32_t s = 0; s < p->n_o; s++)
        if (p->order[s] < 0 || p->order[s] >= p->n_o)
            return bp__err(err, BP_ERR_USAGE, "%s: plan step %d holds op id %d, out of range", g->name, s, p->order[s]);
    for (int32_t t = 0; t < p->n_t; t++)
        if (p->tp[t].alias_of < -1 || p->tp[t].alias_of >= p->n_t)
            return bp__err(err, BP_ERR_USAGE, "%s: tensor \"%s\": alias_of id %d is out of range", g->name,
                           bp__names_get(&g->tnames, t), p->tp[t].alias_of);
    for (size_t i = 0; i < p->n_ev; i++) {
        const bp_event *e = &p->ev[i];
        if (e->op < 0 || e->op >= p->n_o || e->tensor < -1 || e->tensor >= p->n_t || (unsigned)e->type > BP_EV_PREFETCH)
            return bp__err(err, BP_ERR_USAGE, "%s: plan event %zu is out of range", g->name, i + 1);
    }
    return BP_OK;
}

static void pj_offset(FILE *f, uint64_t off)
{
    if (off == BP_NO_OFFSET) fputs("null", f);
    else fprintf(f, "%" PRIu64, off);
}

static const char *const pj_ev_names[6] = {"ALLOC", "EXEC", "FREE", "RECOMPUTE", "OFFLOAD", "PREFETCH"};

static bool pj_listed(const bp_tensor_plan *tp)
{
    return tp->first >= 0 || tp->offset != BP_NO_OFFSET || tp->buffer >= 0 || tp->alias_of >= 0;
}

static bp_status pj_write_bodies(const bp_plan *p, const bp_graph *g, FILE *f, bp_error *err);

/* "copies" (recompute and offload): one object per copy. */
static void pj_write_copies(const bp_plan *p, const bp_graph *g, FILE *f)
{
    fputs(" \"copies\": [", f);
    for (int32_t i = 0; i < p->n_copies; i++) {
        const bp_copy *c = &p->copies[i];
        fputs(i ? ",\n  {\"tensor\": " : "\n  {\"tensor\": ", f);
        bp__json_str(f, bp__names_get(&g->tnames, c->tensor));
        fprintf(f, ", \"kind\": \"%s\", \"op\": ", bp_copy_kind_name(c->kind));
        if (c->op >= 0) bp__json_str(f, bp__names_get(&g->onames, c->op));
        else fputs("null", f);
        fprintf(f, ", \"evict\": %" PRId32 ", \"first\": %" PRId32 ", \"last\": %" PRId32 ", \"offset\": %" PRIu64 "}", c->evict, c->first,
                c->last, c->offset);
    }
    fputs("\n ],\n", f);
}

bp_status bp_plan_write_json_file(const bp_plan *p, const bp_graph *g, FILE *f, bp_error *err)
{
    bp_status s = pj_check_ids(p, g, err);
    if (s) return s;
    if (!f) return bp__err(err, BP_ERR_USAGE, "%s: plan writer: NULL file", g->name);
    const bp_plan_stats *st = &p->stats;
    fputs("{\n \"format\": \"bufplan-plan\",\n \"version\": 1,\n \"graph\": ", f);
    bp__json_str(f, g->name);
    fprintf(f, ",\n \"arena_bytes\": %" PRIu64 ",\n \"alignment\": %" PRIu64 ",\n \"scheduler\": ", st->arena_bytes, p->alignment);
    bp__json_str(f, bp_sched_name(p->sched));
    fputs(",\n \"assigner\": ", f);
    bp__json_str(f, bp_assign_name(p->assign));
    if (p->engine) {   /* the default's plans stay as they were */
        fputs(",\n \"engine\": ", f);
        if ((s = bp_engine_write_json_file(p->engine, f, err))) return s;
    }
    fputs(",\n \"schedule\": [", f);
    for (int32_t i = 0; i < p->n_o; i++) {
        if (i) fputs(", ", f);
        bp__json_str(f, bp__names_get(&g->onames, p->order[i]));
    }
    fputs("],\n \"tensors\": [", f);
    bool first = true;
    for (int32_t t = 0; t < p->n_t; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        if (!pj_listed(tp)) continue;
        fputs(first ? "\n  {\"name\": " : ",\n  {\"name\": ", f);
        first = false;
        bp__json_str(f, bp__names_get(&g->tnames, t));
        fprintf(f, ", \"bytes\": %" PRIu64 ", \"offset\": ", tp->bytes);
        pj_offset(f, tp->offset);
        fprintf(f, ", \"first\": %" PRId32 ", \"last\": %" PRId32 ", \"buffer\": %" PRId32 ", \"kind\": \"%s\", \"alias_of\": ",
                tp->first, tp->last, tp->buffer, bp_tensor_kind_name(tp->kind));
        if (tp->alias_of >= 0) bp__json_str(f, bp__names_get(&g->tnames, tp->alias_of));
        else fputs("null", f);
        if (tp->view_offset) fprintf(f, ", \"view_offset\": %" PRIu64, tp->view_offset);
        fputc('}', f);
    }
    fputs(first ? "],\n \"events\": [" : "\n ],\n \"events\": [", f);
    for (size_t i = 0; i < p->n_ev; i++) {
        const bp_event *e = &p->ev[i];
        fprintf(f, "%s  {\"id\": %zu, \"type\": \"%s\", \"tensor\": ", i ? ",\n" : "\n", i + 1, pj_ev_names[e->type]);
        if (e->tensor >= 0) bp__json_str(f, bp__names_get(&g->tnames, e->tensor));
        else fputs("null", f);
        fprintf(f, ", \"buffer\": %" PRId32 ", \"offset\": ", e->buffer);
        pj_offset(f, e->offset);
        fputs(", \"op\": ", f);
        bp__json_str(f, bp__names_get(&g->onames, e->op));
        fputc('}', f);
    }
    fputs(p->n_ev ? "\n ],\n" : "],\n", f);
    if (p->n_copies) pj_write_copies(p, g, f);
    fprintf(f, " \"stats\": {\"naive_bytes\": %" PRIu64 ", \"lower_bound_bytes\": %" PRIu64 ", \"alias_saved_bytes\": %" PRIu64
               ", \"dynamic_bytes\": %" PRIu64 ", \"peak_step\": %" PRId32 ", \"n_planned\": %" PRId32 ", \"n_storages\": %" PRId32
               ", \"n_views\": %" PRId32 ", \"n_dynamic\": %" PRId32 ", \"n_inputs\": %" PRId32 ", \"n_weights\": %" PRId32
               ", \"plan_seconds\": %.17g, \"optimal\": %s",
            st->naive_bytes, st->lower_bound_bytes, st->alias_saved_bytes, st->dynamic_bytes, st->peak_step, st->n_planned,
            st->n_storages, st->n_views, st->n_dynamic, st->n_inputs, st->n_weights,
            isfinite(st->plan_seconds) && st->plan_seconds >= 0 ? st->plan_seconds : 0.0, st->optimal ? "true" : "false");
    if (g->n_bodies)
        fprintf(f, ", \"n_control_flow\": %" PRId32 ", \"n_body_planned\": %" PRId32, st->n_control_flow, st->n_body_planned);
    if (p->n_copies)
        fprintf(f, ", \"recompute_cost\": %.17g, \"transfer_cost\": %.17g, \"offload_bytes\": %" PRIu64 ", \"overhead_percent\": %.17g"
                   ", \"n_recomputes\": %" PRId32 ", \"n_offloads\": %" PRId32,
                st->recompute_cost, st->transfer_cost, st->offload_bytes, st->overhead_percent, st->n_recomputes, st->n_offloads);
    fputc('}', f);
    s = pj_write_bodies(p, g, f, err);
    if (s) return s;
    fputs("\n}\n", f);
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "%s: write error", g->name);
    return BP_OK;
}

/* "bodies": one entry per body of the graph, its plan nested. */
static bp_status pj_write_bodies(const bp_plan *p, const bp_graph *g, FILE *f, bp_error *err)
{
    if (!g->n_bodies) return BP_OK;
    if ((size_t)p->n_bodies != g->n_bodies)
        return bp__err(err, BP_ERR_USAGE, "%s: the plan has %d body plans, the graph %zu bodies", g->name, (int)p->n_bodies, g->n_bodies);
    fputs(",\n \"bodies\": [", f);
    for (size_t i = 0; i < g->n_bodies; i++) {
        const bp__body *b = &g->bodies[i];
        fputs(i ? ",\n  {\"op\": " : "\n  {\"op\": ", f);
        bp__json_str(f, bp__names_get(&g->onames, b->op));
        fprintf(f, ", \"kind\": \"%s\", \"base\": %" PRIu64 ", \"plan\":\n", bp_body_kind_name(b->kind), p->body_base[i]);
        bp_status s = bp_plan_write_json_file(p->bodies[i], b->g, f, err);
        if (s) return s;
        fputs("  }", f);
    }
    fputs("\n ]", f);
    return BP_OK;
}

/* A CSV field: quoted when it holds a comma, quote, CR or LF. */
static void pj_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The events of plan p (of graph g) from id *id on; a body's (prefix not
 * NULL) follow its op's EXEC, their op names prefixed "OP/KIND/" and their
 * offsets counted from the outer arena (base). */
static void pj_csv_events(const bp_plan *p, const bp_graph *g, FILE *f, const char *prefix, uint64_t base, size_t *id)
{
    for (size_t i = 0; i < p->n_ev; i++) {
        const bp_event *e = &p->ev[i];
        fprintf(f, "%zu,%s,", ++*id, pj_ev_names[e->type]);
        if (e->tensor >= 0) pj_csv_field(f, bp__names_get(&g->tnames, e->tensor));
        fprintf(f, ",%" PRId32 ",", prefix ? -1 : e->buffer);
        if (e->offset != BP_NO_OFFSET) fprintf(f, "%" PRIu64, base + e->offset);
        fputc(',', f);
        char name[1024];
        snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", bp__names_get(&g->onames, e->op));
        pj_csv_field(f, name);
        fputc('\n', f);
        for (int32_t b = 0; e->type == BP_EV_EXEC && b < p->n_bodies && (size_t)b < g->n_bodies; b++) {
            if (g->bodies[b].op != e->op) continue;
            char pre[1100];
            snprintf(pre, sizeof pre, "%.1000s/%s/", name, bp_body_kind_name(g->bodies[b].kind));
            pj_csv_events(p->bodies[b], g->bodies[b].g, f, pre, base + p->body_base[b], id);
        }
    }
}

bp_status bp_plan_write_events_csv_file(const bp_plan *p, const bp_graph *g, FILE *f, bp_error *err)
{
    bp_status s = pj_check_ids(p, g, err);
    if (s) return s;
    if (!f) return bp__err(err, BP_ERR_USAGE, "%s: plan writer: NULL file", g->name);
    if ((size_t)p->n_bodies != g->n_bodies)
        return bp__err(err, BP_ERR_USAGE, "%s: the plan has %d body plans, the graph %zu bodies", g->name, (int)p->n_bodies, g->n_bodies);
    fputs("event_id,event_type,tensor_name,buffer_index,offset,op_name\n", f);
    size_t id = 0;
    pj_csv_events(p, g, f, NULL, 0, &id);
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "%s: write error", g->name);
    return BP_OK;
}

typedef bp_status (*pj_writer)(const bp_plan *, const bp_graph *, FILE *, bp_error *);

static bp_status pj_write_path(pj_writer w, const bp_plan *p, const bp_graph *g, const char *path, bp_error *err)
{
    if (!path) return bp__err(err, BP_ERR_USAGE, "plan writer: NULL path");
    bp_status s = pj_check_ids(p, g, err);
    if (s) return s;
    bp__outfile o;
    s = bp__out_open(&o, path, err);
    if (s) return s;
    s = w(p, g, o.f, err);
    if (s) {
        bp__out_abort(&o);
        if (s == BP_ERR_IO) bp__err(err, BP_ERR_IO, "%s: write error: %s", path, strerror(errno));
        return s;
    }
    return bp__out_commit(&o, err);
}

bp_status bp_plan_write_json(const bp_plan *p, const bp_graph *g, const char *path, bp_error *err)
{
    return pj_write_path(bp_plan_write_json_file, p, g, path, err);
}

bp_status bp_plan_write_events_csv(const bp_plan *p, const bp_graph *g, const char *path, bp_error *err)
{
    return pj_write_path(bp_plan_write_events_csv_file, p, g, path, err);
}

/* ----------------------------------------------------------------- reading */

typedef struct pj_ctx {
    const char *file;
    const bp_graph *g;
    bp_error *err;
    bp_plan *p;
    uint8_t *seen;   /* max(n_t, n_o) bytes */
    size_t seen_n;
} pj_ctx;

/* `where` describes the entry (tensor "x", events[3], ...; "" for the top
 * level); it is printed after the file name. */
static bp_status pj_bad(pj_ctx *c, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bp_status pj_bad(pj_ctx *c, const char *where, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bp__err(c->err, BP_ERR_INVALID, "%s: %s%s%s", c->file, where, *where ? ": " : "", what);
}

/* An integer in [lo, hi]. */
static bp_status pj_int(pj_ctx *c, const char *where, const json_t *obj, const char *key, int64_t lo, int64_t hi,
                        int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return pj_bad(c, where, "\"%s\" is missing", key);
    if (!json_is_integer(v))
        return pj_bad(c, where, "\"%s\" must be an integer, not %s", key, bp__json_type(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        return pj_bad(c, where, "\"%s\": %lld is out of range (%lld..%lld)", key, (long long)x, (long long)lo, (long long)hi);
    }
    *out = (int64_t)x;
    return BP_OK;
}

/* A byte count or offset; null gives BP_NO_OFFSET when allow_null. */
static bp_status pj_u64(pj_ctx *c, const char *where, const json_t *obj, const char *key, bool allow_null, uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return pj_bad(c, where, "\"%s\" is missing", key);
    if (allow_null && json_is_null(v)) { *out = BP_NO_OFFSET; return BP_OK; }
    if (!json_is_integer(v))
        return pj_bad(c, where, "\"%s\" must be a non-negative integer%s, not %s", key, allow_null ? " or null" : "",
                      bp__json_type(v));
    if (json_integer_value(v) < 0) return pj_bad(c, where, "\"%s\" is negative", key);
    *out = (uint64_t)json_integer_value(v);
    return BP_OK;
}

/* A name resolved against the graph's tensors (ops when is_op); null gives
 * -1 when allow_null. */
static bp_status pj_name(pj_ctx *c, const char *where, const json_t *obj, const char *key, bool is_op, bool allow_null,
                         int32_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return pj_bad(c, where, "\"%s\" is missing", key);
    if (json_is_null(v) && !allow_null) return pj_bad(c, where, "\"%s\" must not be null", key);
    if (json_is_null(v)) { *out = -1; return BP_OK; }
    if (!json_is_string(v))
        return pj_bad(c, where, "\"%s\" must be %s name (a string), not %s", key, is_op ? "an op" : "a tensor", bp__json_type(v));
    const bp__names *nm = is_op ? &c->g->onames : &c->g->tnames;
    int32_t id = bp__names_find(nm, json_string_value(v), json_string_length(v));
    if (id < 0)
        return pj_bad(c, where, "\"%s\": the graph has no %s \"%s\"", key, is_op ? "op" : "tensor", json_string_value(v));
    *out = id;
    return BP_OK;
}

static bp_status pj_schedule(pj_ctx *c, const json_t *sch)
{
    if (!sch) return pj_bad(c, "", "\"schedule\" is missing");
    if (!json_is_array(sch)) return pj_bad(c, "", "\"schedule\" must be an array of op names, not %s", bp__json_type(sch));
    size_t n = json_array_size(sch);
    memset(c->seen, 0, c->seen_n);
    size_t i;
    const json_t *v;
    json_array_foreach(sch, i, v) {
        char where[48];
        snprintf(where, sizeof where, "schedule[%zu]", i);
        if (!json_is_string(v)) return pj_bad(c, where, "must be an op name (a string), not %s", bp__json_type(v));
        int32_t op = bp__names_find(&c->g->onames, json_string_value(v), json_string_length(v));
        if (op < 0) return pj_bad(c, where, "the graph has no op \"%s\"", json_string_value(v));
        if (c->seen[op]) return pj_bad(c, where, "op \"%s\" is scheduled twice", json_string_value(v));
        if (i >= c->g->n_o) break; /* unreachable: more entries than ops means a repeat */
        c->seen[op] = 1;
        c->p->order[i] = op;
    }
    if (n != c->g->n_o) {
        for (size_t o = 0; o < c->g->n_o; o++)
            if (!c->seen[o]) {
                return pj_bad(c, "", "the schedule is not a permutation of the graph's ops: it lists %zu ops of the graph's %zu; op \"%s\" is missing",
                              n, c->g->n_o, bp__names_get(&c->g->onames, (int32_t)o));
            }
    }
    return BP_OK;
}

/* Entry i of array `list`: where = "list[i]"; it must be an object. */
static bp_status pj_entry(pj_ctx *c, char *where, size_t cap, const char *list, size_t i, const json_t *v)
{
    snprintf(where, cap, "%s[%zu]", list, i);
    return json_is_object(v) ? BP_OK : pj_bad(c, where, "is %s, not an object", bp__json_type(v));
}

static bp_status pj_tensors(pj_ctx *c, const json_t *arr)
{
    if (!arr) return pj_bad(c, "", "\"tensors\" is missing");
    if (!json_is_array(arr)) return pj_bad(c, "", "\"tensors\" must be an array, not %s", bp__json_type(arr));
    memset(c->seen, 0, c->seen_n);
    int64_t max_step = (int64_t)c->g->n_o - 1;
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) {
        char where[700];
        int32_t t = -1;
        bp_status s = pj_entry(c, where, sizeof where, "tensors", i, v);
        if (!s) s = pj_name(c, where, v, "name", false, false, &t);
        if (s) return s;
        const char *name = bp__names_get(&c->g->tnames, t);
        snprintf(where, sizeof where, "tensor \"%.600s\"", name);
        if (c->seen[t]) return pj_bad(c, "", "tensor \"%s\" is listed twice in \"tensors\"", name);
        c->seen[t] = 1;
        bp_tensor_plan *tp = &c->p->tp[t];
        int64_t first, last, buffer;
        if ((s = pj_u64(c, where, v, "bytes", false, &tp->bytes)) ||
            (s = pj_u64(c, where, v, "offset", true, &tp->offset)) ||
            (s = pj_int(c, where, v, "first", -1, max_step, &first)) ||
            (s = pj_int(c, where, v, "last", -1, max_step, &last)) ||
            (s = pj_int(c, where, v, "buffer", -1, INT32_MAX, &buffer)) ||
            (s = pj_name(c, where, v, "alias_of", false, true, &tp->alias_of)) ||
            (json_object_get(v, "view_offset") && (s = pj_u64(c, where, v, "view_offset", false, &tp->view_offset))))
            return s;
        if (tp->view_offset && tp->alias_of < 0) return pj_bad(c, where, "\"view_offset\" %" PRIu64 " without \"alias_of\"", tp->view_offset);
        tp->first = (int32_t)first;
        tp->last = (int32_t)last;
        tp->buffer = (int32_t)buffer;
        const json_t *k = json_object_get(v, "kind");
        if (!k) return pj_bad(c, where, "\"kind\" is missing");
        if (!json_is_string(k)) return pj_bad(c, where, "\"kind\" must be a string, not %s", bp__json_type(k));
        int kind = -1;
        for (int j = 0; j <= BP_KIND_WORKSPACE && kind < 0; j++)
            if (strcmp(json_string_value(k), bp_tensor_kind_name((bp_tensor_kind)j)) == 0) kind = j;
        if (kind < 0)
            return pj_bad(c, where, "unknown \"kind\" \"%s\" (planned, input, weight, output or dynamic)", json_string_value(k));
        tp->kind = (bp_tensor_kind)kind;
    }
    return BP_OK;
}

static bp_status pj_events(pj_ctx *c, const json_t *arr)
{
    if (!arr) return pj_bad(c, "", "\"events\" is missing");
    if (!json_is_array(arr)) return pj_bad(c, "", "\"events\" must be an array, not %s", bp__json_type(arr));
    bp_plan *p = c->p;
    size_t n = json_array_size(arr);
    if (n && !bp__grow(&p->alloc, (void **)&p->ev, &p->cap_ev, n, sizeof *p->ev))
        return bp__err(c->err, BP_ERR_NOMEM, "%s: out of memory reading %zu events", c->file, n);
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) {
        char where[48];
        snprintf(where, sizeof where, "events[%zu]", i);
        if (!json_is_object(v)) return pj_bad(c, where, "is %s, not an object", bp__json_type(v));
        int64_t id, buffer = -1;
        bp_status s = pj_int(c, where, v, "id", INT64_MIN, INT64_MAX, &id);
        if (s) return s;
        if (id != (int64_t)i + 1)
            return pj_bad(c, where, "\"id\" is %lld; event ids count up from 1, so it must be %zu", (long long)id, i + 1);
        const json_t *ty = json_object_get(v, "type");
        if (!ty) return pj_bad(c, where, "\"type\" is missing");
        if (!json_is_string(ty)) return pj_bad(c, where, "\"type\" must be a string, not %s", bp__json_type(ty));
        int type = -1;
        for (int j = 0; j < 6; j++)
            if (strcmp(json_string_value(ty), pj_ev_names[j]) == 0) type = j;
        if (type < 0)
            return pj_bad(c, where, "unknown \"type\" \"%s\" (ALLOC, EXEC, FREE, RECOMPUTE, OFFLOAD or PREFETCH)", json_string_value(ty));
        bp_event e = {(bp_event_type)type, -1, -1, -1, BP_NO_OFFSET};
        if ((s = pj_name(c, where, v, "op", true, false, &e.op))) return s;
        if (type == BP_EV_EXEC) {
            /* tensor, buffer and offset are optional for EXEC */
            const json_t *t = json_object_get(v, "tensor");
            if (t && !json_is_null(t)) return pj_bad(c, where, "an EXEC event has no tensor (\"tensor\" must be null)");
            if (json_object_get(v, "buffer") && (s = pj_int(c, where, v, "buffer", -1, INT32_MAX, &buffer))) return s;
            if (json_object_get(v, "offset") && (s = pj_u64(c, where, v, "offset", true, &e.offset))) return s;
        } else if ((s = pj_name(c, where, v, "tensor", false, false, &e.tensor)) ||
                   (s = pj_int(c, where, v, "buffer", -1, INT32_MAX, &buffer)) ||
                   (s = pj_u64(c, where, v, "offset", true, &e.offset))) {
            return s;
        }
        e.buffer = (int32_t)buffer;
        p->ev[p->n_ev++] = e;
    }
    return BP_OK;
}

/* "copies": optional; names resolved, steps in range (bp_verify checks the rest). */
static bp_status pj_copies(pj_ctx *c, const json_t *arr)
{
    if (!arr) return BP_OK;
    if (!json_is_array(arr)) return pj_bad(c, "", "\"copies\" must be an array, not %s", bp__json_type(arr));
    bp_plan *p = c->p;
    size_t n = json_array_size(arr);
    if (n > (size_t)INT32_MAX) return pj_bad(c, "", "\"copies\" has too many entries");
    p->copies = bp__alloc(&p->alloc, (n ? n : 1) * sizeof *p->copies);
    if (!p->copies) return bp__err(c->err, BP_ERR_NOMEM, "%s: out of memory reading %zu copies", c->file, n);
    p->n_copies = (int32_t)n;
    int64_t max_step = (int64_t)c->g->n_o - 1;
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) {
        char where[48];
        bp_copy *e = &p->copies[i];
        int64_t ev, fi, la;
        *e = (bp_copy){-1, BP_COPY_PREFETCH, -1, -1, -1, -1, 0};
        bp_status s = pj_entry(c, where, sizeof where, "copies", i, v);
        if (!s) s = pj_name(c, where, v, "tensor", false, false, &e->tensor);
        if (!s) s = pj_name(c, where, v, "op", true, true, &e->op);
        if (!s) s = pj_int(c, where, v, "evict", 0, max_step, &ev);
        if (!s) s = pj_int(c, where, v, "first", 0, max_step, &fi);
        if (!s) s = pj_int(c, where, v, "last", 0, max_step, &la);
        if (!s) s = pj_u64(c, where, v, "offset", false, &e->offset);
        if (s) return s;
        e->evict = (int32_t)ev;
        e->first = (int32_t)fi;
        e->last = (int32_t)la;
        const json_t *k = json_object_get(v, "kind");
        if (!json_is_string(k) || (strcmp(json_string_value(k), "recompute") && strcmp(json_string_value(k), "prefetch")))
            return pj_bad(c, where, "\"kind\" must be \"recompute\" or \"prefetch\"");
        e->kind = strcmp(json_string_value(k), "recompute") ? BP_COPY_PREFETCH : BP_COPY_RECOMPUTE;
    }
    return BP_OK;
}

/* The recompute and offload figures of "stats" (plans with copies). */
static bp_status pj_copy_stats(pj_ctx *c, const json_t *st)
{
    static const char *const dk[3] = {"recompute_cost", "transfer_cost", "overhead_percent"};
    bp_plan_stats *s = &c->p->stats;
    double *dv[3] = {&s->recompute_cost, &s->transfer_cost, &s->overhead_percent};
    for (int i = 0; i < 3; i++) {
        const json_t *v = json_object_get(st, dk[i]);
        if (!v) continue;
        if (!json_is_number(v) || json_number_value(v) < 0) return pj_bad(c, "stats", "\"%s\" must be a non-negative number", dk[i]);
        *dv[i] = json_number_value(v);
    }
    int64_t n = 0;
    bp_status r;
    if (json_object_get(st, "offload_bytes") && (r = pj_u64(c, "stats", st, "offload_bytes", false, &s->offload_bytes))) return r;
    if (json_object_get(st, "n_recomputes")) { if ((r = pj_int(c, "stats", st, "n_recomputes", 0, INT32_MAX, &n))) return r; s->n_recomputes = (int32_t)n; }
    if (json_object_get(st, "n_offloads")) { if ((r = pj_int(c, "stats", st, "n_offloads", 0, INT32_MAX, &n))) return r; s->n_offloads = (int32_t)n; }
    return BP_OK;
}

static bp_status pj_stats(pj_ctx *c, const json_t *st)
{
    if (!st) return pj_bad(c, "", "\"stats\" is missing");
    if (!json_is_object(st)) return pj_bad(c, "", "\"stats\" must be an object, not %s", bp__json_type(st));
    bp_plan_stats *s = &c->p->stats;
    static const char *const u64_keys[4] = {"naive_bytes", "lower_bound_bytes", "alias_saved_bytes", "dynamic_bytes"};
    uint64_t *u64_vals[4] = {&s->naive_bytes, &s->lower_bound_bytes, &s->alias_saved_bytes, &s->dynamic_bytes};
    bp_status r;
    for (int i = 0; i < 4; i++)
        if (json_object_get(st, u64_keys[i]) && (r = pj_u64(c, "stats", st, u64_keys[i], false, u64_vals[i]))) return r;
    static const char *const count_keys[6] = {"n_planned", "n_storages", "n_views", "n_dynamic", "n_inputs", "n_weights"};
    int32_t *count_vals[6] = {&s->n_planned, &s->n_storages, &s->n_views, &s->n_dynamic, &s->n_inputs, &s->n_weights};
    for (int i = 0; i < 6; i++) {
        int64_t n;
        if (!json_object_get(st, count_keys[i])) continue;
        if ((r = pj_int(c, "stats", st, count_keys[i], 0, (int64_t)c->g->n_t, &n))) return r;
        *count_vals[i] = (int32_t)n;
    }
    if (json_object_get(st, "peak_step")) {
        int64_t ps;
        if ((r = pj_int(c, "stats", st, "peak_step", -1, (int64_t)c->g->n_o - 1, &ps))) return r;
        s->peak_step = (int32_t)ps;
    }
    const json_t *v = json_object_get(st, "plan_seconds");
    if (v) {
        if (!json_is_number(v)) return pj_bad(c, "stats", "\"plan_seconds\" must be a number, not %s", bp__json_type(v));
        s->plan_seconds = json_number_value(v);
    }
    v = json_object_get(st, "optimal");
    if (v) {
        if (json_is_boolean(v)) s->optimal = json_is_true(v);
        else if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) s->optimal = (int)json_integer_value(v);
        else return pj_bad(c, "stats", "\"optimal\" must be true or false, not %s", bp__json_type(v));
    }
    return BP_OK;
}

/* "engine": the profile the plan was made for (bufplan-engine JSON), absent
 * for the default. */
static bp_status pj_engine(pj_ctx *c, const json_t *v)
{
    if (!v) return BP_OK;
    if (!json_is_object(v)) return pj_bad(c, "", "\"engine\" must be an engine profile object, not %s", bp__json_type(v));
    char *text = json_dumps(v, JSON_COMPACT);
    if (!text) return bp__err(c->err, BP_ERR_NOMEM, "%s: out of memory", c->file);
    char where[300];
    snprintf(where, sizeof where, "%s: \"engine\"", c->file);
    bp_status s = bp_engine_parse_json(text, strlen(text), where, &c->g->alloc, &c->p->engine, c->err);
    free(text);
    if (!s && c->p->engine->is_default) { bp_engine_free(c->p->engine); c->p->engine = NULL; }
    return s;
}

/* The kind of a tensor the file does not list (unused, not in the arena). */
static bp_tensor_kind pj_default_kind(const bp_graph *g, int32_t t)
{
    const bp__tensor *x = &g->t[t];
    if (x->dynamic) return BP_KIND_DYNAMIC;
    if (x->flags & (BP_TENSOR_WEIGHT | BP_TENSOR_CONST)) return BP_KIND_WEIGHT;
    if (x->producer < 0) return BP_KIND_INPUT;
    if (x->is_workspace) return BP_KIND_WORKSPACE;
    return (x->flags & BP_TENSOR_OUTPUT) ? BP_KIND_OUTPUT : BP_KIND_PLANNED;
}

static bp_status pj_build(json_t *root, const char *file, const bp_graph *g, bp_plan **out, bp_error *err);

/* "bodies": a plan per body of the graph, in its order, naming its op and kind. */
static bp_status pj_bodies(pj_ctx *c, const json_t *arr)
{
    const bp_graph *g = c->g;
    bp_plan *p = c->p;
    if (!g->n_bodies) return arr ? pj_bad(c, "", "\"bodies\" given, but the graph has no control flow") : BP_OK;
    if (!arr || !json_is_array(arr) || json_array_size(arr) != g->n_bodies)
        return pj_bad(c, "", "\"bodies\" must be an array of %zu entries, one per body of the graph", g->n_bodies);
    p->bodies = bp__calloc(&p->alloc, g->n_bodies, sizeof *p->bodies);
    p->body_base = bp__calloc(&p->alloc, g->n_bodies, sizeof *p->body_base);
    if (!p->bodies || !p->body_base) {
        bp__free(&p->alloc, p->bodies, g->n_bodies * sizeof *p->bodies);
        bp__free(&p->alloc, p->body_base, g->n_bodies * sizeof *p->body_base);
        p->bodies = NULL; p->body_base = NULL;
        return bp__err(c->err, BP_ERR_NOMEM, "%s: out of memory", c->file);
    }
    p->n_bodies = (int32_t)g->n_bodies;
    for (size_t i = 0; i < g->n_bodies; i++) {
        const bp__body *b = &g->bodies[i];
        const json_t *e = json_array_get(arr, i);
        char where[64];
        int32_t op = -1;
        bp_status s = pj_entry(c, where, sizeof where, "bodies", i, e);
        if (!s) s = pj_name(c, where, e, "op", true, false, &op);
        if (s) return s;
        const json_t *k = json_object_get(e, "kind");
        if (op != b->op || !json_is_string(k) || strcmp(json_string_value(k), bp_body_kind_name(b->kind)))
            return pj_bad(c, where, "must be the %s body of op \"%s\"", bp_body_kind_name(b->kind), bp__names_get(&g->onames, b->op));
        if ((s = pj_u64(c, where, e, "base", false, &p->body_base[i]))) return s;
        json_t *jp = json_object_get(e, "plan");
        if (!jp) return pj_bad(c, where, "\"plan\" is missing");
        json_incref(jp);
        if ((s = pj_build(jp, c->file, b->g, &p->bodies[i], c->err))) return s;
    }
    bp__plan_count_bodies(g, p);
    return BP_OK;
}

/* The control-flow counts a file states must be what its bodies give. */
static bp_status pj_body_counts(pj_ctx *c, const json_t *st)
{
    static const char *const keys[2] = {"n_control_flow", "n_body_planned"};
    const int32_t have[2] = {c->p->stats.n_control_flow, c->p->stats.n_body_planned};
    for (int i = 0; i < 2; i++) {
        int64_t n = 0;
        if (!json_object_get(st, keys[i])) continue;
        bp_status r = pj_int(c, "stats", st, keys[i], 0, INT32_MAX, &n);
        if (r) return r;
        if (n != have[i]) return pj_bad(c, "stats", "\"%s\" is %lld, the bodies give %d", keys[i], (long long)n, (int)have[i]);
    }
    return BP_OK;
}

/* Reads the document into a plan; takes ownership of root. */
static bp_status pj_build(json_t *root, const char *file, const bp_graph *g, bp_plan **out, bp_error *err)
{
    bp_status s = BP_OK;
    pj_ctx c = {.file = file, .g = g, .err = err};
    if (!json_is_object(root)) {
        s = bp__err(err, BP_ERR_INVALID, "%s: the top level must be a JSON object, not %s", file, bp__json_type(root));
        json_decref(root);
        return s;
    }
    const json_t *jf = json_object_get(root, "format"), *jv = json_object_get(root, "version");
    if (!jf || !json_is_string(jf) || strcmp(json_string_value(jf), "bufplan-plan") != 0) {
        s = bp__err(err, BP_ERR_INVALID, "%s: not a bufplan plan: \"format\" must be \"bufplan-plan\"%s%s%s", file,
                    jf && json_is_string(jf) ? " (it is \"" : "", jf && json_is_string(jf) ? json_string_value(jf) : "",
                    jf && json_is_string(jf) ? "\")" : "");
    } else if (!jv || !json_is_integer(jv) || json_integer_value(jv) != 1) {
        s = jv && json_is_integer(jv)
                ? bp__err(err, BP_ERR_INVALID, "%s: unsupported \"version\" %lld (bufplan reads version 1)", file, (long long)json_integer_value(jv))
                : bp__err(err, BP_ERR_INVALID, "%s: \"version\" must be the integer 1%s%s", file, jv ? ", not " : " (it is missing)",
                          jv ? bp__json_type(jv) : "");
    }
    if (s) { json_decref(root); return s; }
    if (g->n_t > INT32_MAX || g->n_o > INT32_MAX) {
        json_decref(root);
        return bp__err(err, BP_ERR_LIMIT, "%s: the graph is too large", file);
    }
    c.p = bp__plan_alloc(&g->alloc, (int32_t)g->n_t, (int32_t)g->n_o);
    c.seen_n = (g->n_t > g->n_o ? g->n_t : g->n_o) + 1;
    c.seen = bp__alloc(&g->alloc, c.seen_n);
    if (!c.p || !c.seen) { s = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", file); goto done; }
    bp_plan *p = c.p;
    const json_t *v = json_object_get(root, "graph");
    if (v && !json_is_string(v)) { s = pj_bad(&c, "", "\"graph\" must be a string, not %s", bp__json_type(v)); goto done; }
    if ((s = pj_u64(&c, "", root, "arena_bytes", false, &p->stats.arena_bytes))) goto done;
    if ((s = pj_u64(&c, "", root, "alignment", false, &p->alignment))) goto done;
    p->sched = BP_SCHED_GIVEN;
    p->assign = BP_ASSIGN_NAIVE;
    v = json_object_get(root, "scheduler");
    if (v) {
        if (!json_is_string(v)) { s = pj_bad(&c, "", "\"scheduler\" must be a string, not %s", bp__json_type(v)); goto done; }
        if (bp_sched_parse(json_string_value(v), &p->sched) != 0) { s = pj_bad(&c, "", "unknown \"scheduler\" \"%s\"", json_string_value(v)); goto done; }
    }
    v = json_object_get(root, "assigner");
    if (v) {
        if (!json_is_string(v)) { s = pj_bad(&c, "", "\"assigner\" must be a string, not %s", bp__json_type(v)); goto done; }
        if (bp_assign_parse(json_string_value(v), &p->assign) != 0) { s = pj_bad(&c, "", "unknown \"assigner\" \"%s\"", json_string_value(v)); goto done; }
    }
    if ((s = pj_engine(&c, json_object_get(root, "engine")))) goto done;
    if ((s = pj_schedule(&c, json_object_get(root, "schedule")))) goto done;
    if ((s = pj_tensors(&c, json_object_get(root, "tensors")))) goto done;
    for (size_t t = 0; t < g->n_t; t++) {
        if (c.seen[t]) continue;
        bp_tensor_plan *tp = &p->tp[t];
        tp->first = tp->last = -1;
        tp->offset = BP_NO_OFFSET;
        tp->buffer = -1;
        tp->alias_of = -1;
        tp->bytes = g->t[t].bytes;
        tp->kind = pj_default_kind(g, (int32_t)t);
    }
    if ((s = pj_events(&c, json_object_get(root, "events")))) goto done;
    /* The counts from the tensors, unless the file states them (then the
     * verifier checks what it states); dynamic_bytes likewise. */
    bp__plan_count(g, p);
    if ((s = pj_stats(&c, json_object_get(root, "stats")))) goto done;
    if ((s = pj_copies(&c, json_object_get(root, "copies")))) goto done;
    if ((s = pj_copy_stats(&c, json_object_get(root, "stats")))) goto done;
    if ((s = pj_bodies(&c, json_object_get(root, "bodies")))) goto done;
    if ((s = pj_body_counts(&c, json_object_get(root, "stats")))) goto done;
done:
    bp__free(&g->alloc, c.seen, c.seen_n);
    json_decref(root);
    if (s) { bp_plan_free(c.p); return s; }
    *out = c.p;
    return BP_OK;
}

bp_status bp_plan_parse_json(const bp_graph *g, const char *text, size_t len, const char *filename, bp_plan **out,
                             bp_error *err)
{
    const char *file = filename && *filename ? filename : "<json>";
    if (!out) return bp__err(err, BP_ERR_USAGE, "%s: bp_plan_parse_json: out is NULL", file);
    *out = NULL;
    if (!g || !text) return bp__err(err, BP_ERR_USAGE, "%s: bp_plan_parse_json: NULL argument", file);
    json_t *root;
    bp_status s = bp__json_load_text_lim(text, len, file, &g->lim, &root, err);
    return s ? s : pj_build(root, file, g, out, err);
}

bp_status bp_plan_read_json(const bp_graph *g, const char *path, bp_plan **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_plan_read_json: out is NULL");
    *out = NULL;
    if (!g || !path) return bp__err(err, BP_ERR_USAGE, "bp_plan_read_json: NULL argument");
    json_t *root;
    bp_status s = bp__json_load_file_lim(path, &g->alloc, &g->lim, &root, err);
    return s ? s : pj_build(root, path, g, out, err);
}

bp_status bp_plan_read_engine(const bp_graph *g, const char *path, bp_engine **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_plan_read_engine: out is NULL");
    *out = NULL;
    if (!g || !path) return bp__err(err, BP_ERR_USAGE, "bp_plan_read_engine: NULL argument");
    json_t *root;
    bp_status s = bp__json_load_file_lim(path, &g->alloc, &g->lim, &root, err);
    if (s) return s;
    const json_t *v = json_is_object(root) ? json_object_get(root, "engine") : NULL;
    if (v && !json_is_object(v)) {
        s = bp__err(err, BP_ERR_INVALID, "%s: \"engine\" must be an engine profile object, not %s", path, bp__json_type(v));
    } else if (v) {
        char *text = json_dumps(v, JSON_COMPACT);
        char where[300];
        snprintf(where, sizeof where, "%s: \"engine\"", path);
        s = text ? bp_engine_parse_json(text, strlen(text), where, &g->alloc, out, err)
                 : bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path);
        free(text);
    }
    json_decref(root);
    return s;
}
