/*
 * engine.c — engine profiles: the profile object (op types sorted by name,
 * looked up by binary search), the built-in profiles, and the binding of a
 * profile to a graph (bp__etab: one rule pointer per op type id, built once
 * per plan in O(types log rules)).  The JSON reader and writer are
 * engine_json.c.
 *
 * Built-ins (docs/design/engines.md says where each list comes from):
 *   default   views: output 0 over input 0 of the view types below; in place:
 *             output 0 over each input in turn of the element-wise types,
 *             any dtype, view inputs allowed; graph hints honoured.
 *   strict    metadata views only (Reshape, Flatten, Squeeze, Unsqueeze,
 *             Identity and their aten forms); nothing in place, no hints.
 *   ort-cpu   ONNX Runtime's CPU kernels: Alias(0, 0) on Reshape, Flatten,
 *             Squeeze, Unsqueeze, Identity, Dropout; MayInplace(0, 0) on the
 *             unary activations and Clip (same dtype); no workspaces
 *             (ORT 1.30's Conv is measured to take none per run).
 */
#include "graph/engine.h"

#include <stdlib.h>
#include <string.h>

const char *const bp__default_view_types[] = {
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout",
    "aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.as_strided",
    "aten.reshape", "aten.t", "aten.transpose", "aten.permute", "aten.expand",
    "aten.squeeze", "aten.unsqueeze", "aten.slice", "aten.select", "aten.alias",
    "aten.detach", NULL,
};

const char *const bp__default_inplace_types[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid",
    "HardSwish", "Tanh", "Clip", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal",
    "BatchNormalization", "Sum", "Min", "Max", "Mean", "Elu", "Selu", "Softplus", "Gelu", "Silu",
    "Cast", "Not", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Mish",
    "aten.relu", "aten.add", "aten.mul", "aten.sub", "aten.div", "aten.sigmoid", "aten.tanh",
    "aten.gelu", "aten.silu", "aten.hardswish", "aten.hardsigmoid", "aten.clamp", "aten.neg",
    "aten.exp", "aten.threshold_backward", NULL,
};

static const char *const strict_view_types[] = {
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
    "aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.reshape",
    "aten.squeeze", "aten.unsqueeze", "aten.alias", "aten.detach", NULL,
};

static const char *const ort_view_types[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", NULL};

static const char *const ort_inplace_types[] = {
    "Elu", "HardSigmoid", "LeakyRelu", "Relu", "Selu", "Sigmoid", "Softplus", "Softsign", "Tanh",
    "ThresholdedRelu", "Clip", NULL,
};

static const char *const builtin_names[] = {"default", "strict", "ort-cpu", NULL};

const char *const *bp_engine_builtins(void) { return builtin_names; }

/* ------------------------------------------------------------- object */

static char *eng_strdup(const bp_allocator *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = bp__alloc(a, n);
    if (d) memcpy(d, s, n);
    return d;
}

static void eng_str_free(const bp_allocator *a, char *s)
{
    if (s) bp__free(a, s, strlen(s) + 1);
}

bp_status bp_engine_new(const char *name, int concat_inplace, int graph_hints, const bp_allocator *alloc,
                        bp_engine **out, bp_error *err)
{
    *out = NULL;
    if (!alloc) alloc = &bp__libc_allocator;
    bp_engine *e = bp__calloc(alloc, 1, sizeof *e);
    if (!e) return bp__err(err, BP_ERR_NOMEM, "engine profile: out of memory");
    e->alloc = *alloc;
    e->name = eng_strdup(alloc, name ? name : "engine");
    if (!e->name) { bp__free(alloc, e, sizeof *e); return bp__err(err, BP_ERR_NOMEM, "engine profile: out of memory"); }
    e->concat_inplace = concat_inplace != 0;
    e->graph_hints = graph_hints != 0;
    *out = e;
    return BP_OK;
}

void bp_engine_free(bp_engine *e)
{
    if (!e) return;
    bp_allocator a = e->alloc;
    for (size_t i = 0; i < e->n_ops; i++) {
        eng_str_free(&a, e->ops[i].type);
        eng_str_free(&a, e->ops[i].workspace);
    }
    bp__free(&a, e->ops, e->cap_ops * sizeof *e->ops);
    eng_str_free(&a, e->name);
    bp__free(&a, e, sizeof *e);
}

/* Index of type in e->ops, or -(insertion point) - 1. */
static long eng_search(const bp_engine *e, const char *type)
{
    size_t lo = 0, hi = e->n_ops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(e->ops[mid].type, type);
        if (c == 0) return (long)mid;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -(long)lo - 1;
}

const bp__eng_op *bp__engine_find(const bp_engine *e, const char *type)
{
    long i = eng_search(e, type);
    return i >= 0 ? &e->ops[i] : NULL;
}

/* An op type as graphs name them: a letter or '_' first, then letters,
 * digits and "_.:-". */
static bool eng_type_ok(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == ':' || c == '-'))
            return false;
    }
    return strlen(s) <= 200;
}

/* Checks one list of pairs of op->type; what = "views" / "inplace". */
static bp_status eng_pairs_check(const char *type, const char *what, int n, const bp_engine_pair *p, bool any_ok,
                                 bp_error *err)
{
    if (n < 0 || n > BP_ENGINE_MAX_PAIRS || (n > 0 && !p))
        return bp__err(err, BP_ERR_INVALID, "engine profile: op type \"%s\": \"%s\" has %d pairs (at most %d)", type, what,
                       n, BP_ENGINE_MAX_PAIRS);
    for (int i = 0; i < n; i++) {
        bool in_ok = p[i].in >= 0 ? p[i].in < 65535 : (any_ok && p[i].in == BP_ENGINE_ANY_INPUT);
        if (p[i].out < 0 || p[i].out >= 65535 || !in_ok)
            return bp__err(err, BP_ERR_INVALID, "engine profile: op type \"%s\": \"%s\" pair %d is [%d, %d]: %s", type, what,
                           i, p[i].out, p[i].in, any_ok ? "indices are >= 0 (or \"*\" for the input)" : "indices are >= 0");
    }
    return BP_OK;
}

bp_status bp_engine_add_op(bp_engine *e, const bp_engine_op *op, bp_error *err)
{
    if (!e || !op) return bp__err(err, BP_ERR_USAGE, "bp_engine_add_op: NULL argument");
    if (!eng_type_ok(op->type))
        return bp__err(err, BP_ERR_INVALID, "engine profile: \"%.200s\" is not an op type (a letter or '_', then letters, digits, '_', '.', ':' or '-')",
                       op->type ? op->type : "(null)");
    bp_status s = eng_pairs_check(op->type, "views", op->n_views, op->views, false, err);
    if (!s) s = eng_pairs_check(op->type, "inplace", op->n_inplace, op->inplace, true, err);
    if (s) return s;
    const bp_allocator *a = &e->alloc;
    bp__eng_op r = {0};
    r.n_views = (uint8_t)op->n_views;
    r.n_inplace = (uint8_t)op->n_inplace;
    r.same_dtype = op->same_dtype != 0;
    r.strided = op->strided != 0;
    if (op->n_views) memcpy(r.views, op->views, (size_t)op->n_views * sizeof *r.views);
    if (op->n_inplace) memcpy(r.inplace, op->inplace, (size_t)op->n_inplace * sizeof *r.inplace);
    r.type = eng_strdup(a, op->type);
    r.workspace = op->workspace ? eng_strdup(a, op->workspace) : NULL;
    long at = eng_search(e, op->type);
    if (at < 0 && e->n_ops == e->cap_ops && r.type) {
        size_t nc = e->cap_ops ? e->cap_ops * 2 : 16;
        bp__eng_op *n = bp__realloc(a, e->ops, e->cap_ops * sizeof *n, nc * sizeof *n);
        if (n) { e->ops = n; e->cap_ops = nc; } else { eng_str_free(a, r.type); r.type = NULL; }
    }
    if (!r.type || (op->workspace && !r.workspace)) {
        eng_str_free(a, r.type);
        eng_str_free(a, r.workspace);
        return bp__err(err, BP_ERR_NOMEM, "engine profile: out of memory");
    }
    if (at >= 0) {
        eng_str_free(a, e->ops[at].type);
        eng_str_free(a, e->ops[at].workspace);
        e->ops[at] = r;
    } else {
        size_t ins = (size_t)(-at - 1);
        memmove(e->ops + ins + 1, e->ops + ins, (e->n_ops - ins) * sizeof *e->ops);
        e->ops[ins] = r;
        e->n_ops++;
    }
    e->is_default = 0;
    return BP_OK;
}

const char *bp_engine_name(const bp_engine *e) { return e ? e->name : "default"; }
int bp_engine_concat_inplace(const bp_engine *e) { return e ? e->concat_inplace : 0; }
int bp_engine_graph_hints(const bp_engine *e) { return e ? e->graph_hints : 1; }
int bp_engine_n_ops(const bp_engine *e) { return e ? (int)e->n_ops : 0; }

bp_status bp_engine_op_get(const bp_engine *e, int i, bp_engine_op *out, bp_error *err)
{
    if (!e || i < 0 || (size_t)i >= e->n_ops)
        return bp__err(err, BP_ERR_USAGE, "bp_engine_op_get: no op type %d in the profile", i);
    const bp__eng_op *r = &e->ops[i];
    *out = (bp_engine_op){r->type, r->n_views, r->views, r->n_inplace, r->inplace, r->same_dtype, r->strided, r->workspace};
    return BP_OK;
}

/* Hash of one rule, names included (type), into h. */
static uint64_t eng_rule_hash(const bp__eng_op *r, uint64_t h)
{
    h = bp__hash_bytes(r->type, strlen(r->type), h);
    uint8_t f[4] = {r->n_views, r->n_inplace, r->same_dtype, r->strided};
    h = bp__hash_bytes(f, sizeof f, h);
    h = bp__hash_bytes(r->views, r->n_views * sizeof *r->views, h);
    h = bp__hash_bytes(r->inplace, r->n_inplace * sizeof *r->inplace, h);
    return r->workspace ? bp__hash_bytes(r->workspace, strlen(r->workspace), h ^ 0x77) : h;
}

uint64_t bp_engine_digest(const bp_engine *e)
{
    if (!e) return 0;
    int f[2] = {e->concat_inplace, e->graph_hints};
    uint64_t h = bp__hash_bytes(f, sizeof f, 0x656e67);
    for (size_t i = 0; i < e->n_ops; i++) h = eng_rule_hash(&e->ops[i], h);
    return h;
}

/* Whether two rules say the same. */
static bool eng_rule_eq(const bp__eng_op *x, const bp__eng_op *y)
{
    if (strcmp(x->type, y->type) || x->n_views != y->n_views || x->n_inplace != y->n_inplace ||
        x->same_dtype != y->same_dtype || x->strided != y->strided)
        return false;
    if (memcmp(x->views, y->views, x->n_views * sizeof *x->views) ||
        memcmp(x->inplace, y->inplace, x->n_inplace * sizeof *x->inplace))
        return false;
    if (!x->workspace || !y->workspace) return x->workspace == y->workspace;
    return strcmp(x->workspace, y->workspace) == 0;
}

int bp_engine_equal(const bp_engine *a, const bp_engine *b)
{
    if (!a || !b) return a == b;
    if (a->concat_inplace != b->concat_inplace || a->graph_hints != b->graph_hints || a->n_ops != b->n_ops) return 0;
    for (size_t i = 0; i < a->n_ops; i++)
        if (!eng_rule_eq(&a->ops[i], &b->ops[i])) return 0;
    return 1;
}

bp_status bp__engine_copy(const bp_engine *e, const bp_allocator *a, bp_engine **out, bp_error *err)
{
    *out = NULL;
    if (bp__engine_is_default(e)) return BP_OK;
    bp_engine *c;
    bp_status s = bp_engine_new(e->name, e->concat_inplace, e->graph_hints, a, &c, err);
    if (s) return s;
    c->ops = bp__calloc(a, e->n_ops ? e->n_ops : 1, sizeof *c->ops);
    if (!c->ops) { bp_engine_free(c); return bp__err(err, BP_ERR_NOMEM, "engine profile: out of memory"); }
    c->cap_ops = e->n_ops ? e->n_ops : 1;
    for (size_t i = 0; i < e->n_ops; i++) {
        bp__eng_op r = e->ops[i];
        r.type = eng_strdup(a, r.type);
        r.workspace = r.workspace ? eng_strdup(a, r.workspace) : NULL;
        c->ops[c->n_ops++] = r;
        if (!r.type || (e->ops[i].workspace && !r.workspace)) {
            bp_engine_free(c);
            return bp__err(err, BP_ERR_NOMEM, "engine profile: out of memory");
        }
    }
    *out = c;
    return BP_OK;
}

/* ------------------------------------------------------------ built-ins */

/* Adds every type of list with the same rule r (type filled in). */
static bp_status eng_add_list(bp_engine *e, const char *const *list, bp_engine_op r, bp_error *err)
{
    for (; *list; list++) {
        r.type = *list;
        bp_status s = bp_engine_add_op(e, &r, err);
        if (s) return s;
    }
    return BP_OK;
}

static const bp_engine_pair pair00 = {0, 0}, pair0any = {0, BP_ENGINE_ANY_INPUT};

static bp_status eng_fill(bp_engine *e, const char *name, bp_error *err)
{
    bp_engine_op view = {.n_views = 1, .views = &pair00};
    if (!strcmp(name, "default")) {
        bp_engine_op ip = {.n_inplace = 1, .inplace = &pair0any, .strided = 1};
        bp_status s = eng_add_list(e, bp__default_view_types, view, err);
        return s ? s : eng_add_list(e, bp__default_inplace_types, ip, err);
    }
    if (!strcmp(name, "strict")) return eng_add_list(e, strict_view_types, view, err);
    bp_engine_op ip = {.n_inplace = 1, .inplace = &pair00, .same_dtype = 1, .strided = 1};
    bp_status s = eng_add_list(e, ort_view_types, view, err);
    return s ? s : eng_add_list(e, ort_inplace_types, ip, err);
}

bp_status bp_engine_builtin(const char *name, const bp_allocator *alloc, bp_engine **out, bp_error *err)
{
    *out = NULL;
    int k = -1;
    for (int i = 0; name && builtin_names[i]; i++)
        if (!strcmp(name, builtin_names[i])) k = i;
    if (k < 0)
        return bp__err(err, BP_ERR_USAGE, "engine profile \"%s\" is not built in (default, strict, ort-cpu) and not a file",
                       name ? name : "(null)");
    bool strict = k == 1;
    bp_engine *e;
    bp_status s = bp_engine_new(name, 0, !strict, alloc, &e, err);
    if (s) return s;
    s = eng_fill(e, name, err);
    if (s) { bp_engine_free(e); return s; }
    e->is_default = k == 0;
    *out = e;
    return BP_OK;
}

/* -------------------------------------------------------------- binding */

int32_t bp__tensor_view_source(const bp_graph *g, int32_t t)
{
    const bp__tensor *x = &g->t[t];
    if (x->view_of >= 0) return x->view_of;
    if (x->is_workspace) return -1;   /* scratch of its own */
    if (x->producer >= 0 && g->o[x->producer].n_in > 0 && bp__op_out(g, x->producer)[0] == t && bp__op_is_view(g, x->producer))
        return bp__op_in(g, x->producer)[0];
    return -1;
}


/* An in-place pair the profile names explicitly ([out, in], not "*") on
 * tensors of different sizes is a profile that does not fit the graph:
 * BP_ERR_INVALID naming the op type, the pair and the op. */
static bp_status eng_check_sizes(const bp_graph *g, const bp__etab *t, bp_error *err)
{
    for (size_t op = 0; op < g->n_o; op++) {
        const bp__eng_op *r = t->rule[g->o[op].type];
        if (!r) continue;
        for (int p = 0; p < r->n_inplace; p++) {
            int o = r->inplace[p].out, j = r->inplace[p].in;
            if (j < 0 || o >= bp__op_n_out(g, (int32_t)op) || j >= g->o[op].n_in) continue;
            int32_t out = bp__op_out(g, (int32_t)op)[o], in = bp__op_in(g, (int32_t)op)[j];
            if (g->t[out].dynamic || g->t[in].dynamic || g->t[out].bytes == g->t[in].bytes) continue;
            return bp__err(err, BP_ERR_INVALID,
                           "%s: engine profile \"%s\": op type \"%s\": \"inplace\" [%d, %d] does not fit op \"%s\": output \"%s\" has %llu bytes, input \"%s\" %llu",
                           g->name, t->e->name, r->type, o, j, bp__names_get(&g->onames, (int32_t)op),
                           bp__names_get(&g->tnames, out), (unsigned long long)g->t[out].bytes,
                           bp__names_get(&g->tnames, in), (unsigned long long)g->t[in].bytes);
        }
    }
    return BP_OK;
}

bp_status bp__etab_build(const bp_graph *g, const bp_engine *e, bp__etab *t, bp_error *err)
{
    memset(t, 0, sizeof *t);
    if (bp__engine_is_default(e)) return BP_OK;
    t->e = e;
    t->n = g->types.n ? g->types.n : 1;
    t->rule = bp__calloc(&g->alloc, t->n, sizeof *t->rule);
    if (!t->rule) { t->n = 0; return bp__err(err, BP_ERR_NOMEM, "%s: out of memory binding the engine profile", g->name); }
    for (size_t k = 0; k < g->types.n; k++) t->rule[k] = bp__engine_find(e, bp__names_get(&g->types, (int32_t)k));
    bp_status s = eng_check_sizes(g, t, err);
    if (s) bp__etab_free(g, t);
    return s;
}

void bp__etab_free(const bp_graph *g, bp__etab *t)
{
    if (t->rule) bp__free(&g->alloc, (void *)t->rule, t->n * sizeof *t->rule);
    memset(t, 0, sizeof *t);
}

/* Output index of tensor t in its producer op, or -1. */
static int eng_out_index(const bp_graph *g, int32_t op, int32_t t)
{
    const int32_t *o = bp__op_out(g, op);
    for (int i = 0; i < g->o[op].n_out; i++)
        if (o[i] == t) return i;
    return -1;
}

int32_t bp__etab_view_source(const bp_graph *g, const bp__etab *t, int32_t tensor)
{
    if (!t->e) return bp__tensor_view_source(g, tensor);
    const bp__tensor *x = &g->t[tensor];
    if (x->view_of >= 0) return x->view_of;
    if (x->producer < 0 || x->is_workspace) return -1;
    const bp__eng_op *r = t->rule[g->o[x->producer].type];
    if (!r || !r->n_views) return -1;
    int k = eng_out_index(g, x->producer, tensor);
    for (int i = 0; i < r->n_views; i++) {
        if (r->views[i].out != k || r->views[i].in >= g->o[x->producer].n_in) continue;
        int32_t src = bp__op_in(g, x->producer)[r->views[i].in];
        /* a view never claims more than its source holds (unless it repeats
         * elements, which only the broadcast types do) */
        if (g->t[src].bytes >= x->bytes || bp__op_is_broadcast(g, x->producer)) return src;
    }
    return -1;
}

/* The static conditions of rule r for writing out over in. */
static bool eng_static_ok(const bp_graph *g, const bp__etab *t, const bp__eng_op *r, int32_t out, int32_t in)
{
    if (g->t[out].bytes != g->t[in].bytes || out == in) return false;
    if (r && r->same_dtype && g->t[out].dtype != g->t[in].dtype) return false;
    if (r && !r->strided && bp__etab_view_source(g, t, in) >= 0) return false;
    return true;
}

int bp__etab_inplace(const bp_graph *g, const bp__etab *t, int32_t op, int32_t *outs, int32_t *ins, int cap)
{
    const bp__op *x = &g->o[op];
    const int32_t *in = bp__op_in(g, op), *ou = bp__op_out(g, op);
    int n = 0, n_out = bp__op_n_out(g, op);
    if (!t->e) {
        if (n_out != 1 || x->n_in == 0 || !bp__op_is_elementwise(g, op)) return 0;
        for (int i = 0; i < x->n_in && n < cap; i++)
            if (g->t[ou[0]].bytes == g->t[in[i]].bytes) { outs[n] = ou[0]; ins[n] = in[i]; n++; }
        return n;
    }
    const bp__eng_op *r = t->rule[x->type];
    if (!r) return 0;
    for (int p = 0; p < r->n_inplace; p++) {
        int o = r->inplace[p].out, j = r->inplace[p].in;
        if (o >= n_out) continue;
        if (j == BP_ENGINE_ANY_INPUT) {
            if (n_out != 1) continue;
            for (int i = 0; i < x->n_in && n < cap; i++)
                if (eng_static_ok(g, t, r, ou[o], in[i])) { outs[n] = ou[o]; ins[n] = in[i]; n++; }
        } else if (j < x->n_in && n < cap && eng_static_ok(g, t, r, ou[o], in[j])) {
            outs[n] = ou[o]; ins[n] = in[j]; n++;
        }
    }
    /* one write per op (the evaluator's model): the first output listed */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (outs[i] == outs[0]) { outs[k] = outs[i]; ins[k] = ins[i]; k++; }
    return k;
}

bool bp__etab_inplace_allowed(const bp_graph *g, const bp__etab *t, int32_t op, int32_t out, int32_t in)
{
    if (bp__etab_hints(t))
        for (size_t i = 0; i < g->n_inpl; i++)
            if (g->inpl[i].op == op && g->inpl[i].out == out && g->inpl[i].in == in) return true;
    int32_t outs[64], ins[64];
    int n = bp__etab_inplace(g, t, op, outs, ins, 64);
    for (int i = 0; i < n; i++)
        if (outs[i] == out && ins[i] == in) return true;
    return false;
}
