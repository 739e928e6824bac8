/*
 * op_shapes.c — --op-shapes files (docs/FORMATS.md, "Op shapes"): the
 * reader, which checks every key and compiles every formula at load time
 * (formula.c), so a malformed file fails before any model is read; and the
 * matching of a node to an entry (node entries by name first, then op-type
 * entries in file order, an absent domain matching any) and the evaluation
 * of that entry's outputs for the node.
 */
#include "onnx/custom.h"
#include "core/json_io.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One output of an entry. */
typedef struct os_out {
    int dtype_in;          /* >= 0: input dtype_in's dtype; -1: `dtype` */
    bp_dtype dtype;
    int shape_in;          /* >= 0: input shape_in's shape; -1: the dims below; -2: unknown rank */
    int rank;
    bp__fx *dims;          /* rank formulas (dims_cap allocated) */
    size_t dims_cap;
} os_out;

typedef struct os_entry {
    char *node, *op_type, *domain;   /* NULL when absent */
    size_t n_attrs, attr_cap;
    char **attr_names;
    int64_t *attr_values;
    size_t n_out;
    os_out *outs;
    size_t index;          /* ops[index] */
} os_entry;

struct bp_onnx_op_shapes {
    bp_allocator a;
    char *file;
    size_t n, e_cap;
    os_entry *e;
};

/* ------------------------------------------------------------------ freeing */

static void os_str_free(const bp_allocator *a, char *s)
{
    if (s) bp__free(a, s, strlen(s) + 1);
}

static char *os_strdup(const bp_allocator *a, const char *s)
{
    size_t l = strlen(s);
    char *d = bp__alloc(a, l + 1);
    if (d) memcpy(d, s, l + 1);
    return d;
}

static void os_entry_free(const bp_allocator *a, os_entry *e)
{
    os_str_free(a, e->node);
    os_str_free(a, e->op_type);
    os_str_free(a, e->domain);
    for (size_t i = 0; i < e->n_attrs; i++) os_str_free(a, e->attr_names[i]);
    if (e->attr_names) bp__free(a, e->attr_names, e->attr_cap * sizeof *e->attr_names);
    if (e->attr_values) bp__free(a, e->attr_values, e->attr_cap * sizeof *e->attr_values);
    for (size_t i = 0; i < e->n_out; i++) {
        os_out *o = &e->outs[i];
        for (int d = 0; o->dims && d < o->rank; d++) bp__fx_free(a, &o->dims[d]);
        if (o->dims) bp__free(a, o->dims, o->dims_cap * sizeof *o->dims);
    }
    if (e->outs) bp__free(a, e->outs, e->n_out * sizeof *e->outs);
}

void bp_onnx_op_shapes_free(bp_onnx_op_shapes *s)
{
    if (!s) return;
    bp_allocator a = s->a;
    for (size_t i = 0; i < s->n; i++) os_entry_free(&a, &s->e[i]);
    if (s->e) bp__free(&a, s->e, s->e_cap * sizeof *s->e);
    os_str_free(&a, s->file);
    bp__free(&a, s, sizeof *s);
}

/* ------------------------------------------------------------------ reading */

/* The reader's state: the result, the file name and where in it we are. */
typedef struct os_reader {
    bp_onnx_op_shapes *s;
    const char *file;
    char where[128];       /* "ops[2].outputs[0].shape[1]" */
    bp_error *err;
} os_reader;

static bp_status os_bad(os_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bp_status os_bad(os_reader *r, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bp__err(r->err, BP_ERR_INVALID, "%s: %s%s%s", r->file, r->where, r->where[0] ? ": " : "", msg);
}

static bp_status os_oom(os_reader *r) { return bp__err(r->err, BP_ERR_NOMEM, "%s: out of memory", r->file); }

/* Rejects keys of obj not in keys[] (NULL-terminated), naming the first. */
static bp_status os_keys(os_reader *r, const json_t *obj, const char *const *keys)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], key)) i++;
        if (!keys[i]) return os_bad(r, "unknown key \"%s\"", key);
    }
    return BP_OK;
}

/* "inK" (K 0..65535) as K, else -1. */
static int os_input_ref(const char *s)
{
    if (strncmp(s, "in", 2) || !s[2]) return -1;
    long k = 0;
    for (const char *p = s + 2; *p; p++) {
        if (*p < '0' || *p > '9' || k > 65535) return -1;
        k = k * 10 + (*p - '0');
    }
    return k <= 65535 ? (int)k : -1;
}

static bp_status os_dtype(os_reader *r, const json_t *v, os_out *o)
{
    o->dtype_in = 0;               /* default: input 0's dtype */
    if (!v) return BP_OK;
    if (!json_is_string(v)) return os_bad(r, "\"dtype\" must be a string (\"inK\" or a type such as \"f32\"), not %s", bp__json_type(v));
    const char *s = json_string_value(v);
    o->dtype_in = os_input_ref(s);
    if (o->dtype_in >= 0) return BP_OK;
    o->dtype = bp_dtype_parse(s);
    if (o->dtype == BP_DT_UNKNOWN) return os_bad(r, "\"dtype\": unknown type \"%s\" (\"inK\", f32, f16, i64, ...)", s);
    return BP_OK;
}

/* One element of "shape": an integer >= 0 or a formula. */
static bp_status os_dim(os_reader *r, const json_t *v, bp__fx *f)
{
    char text[32];
    const char *src;
    size_t len;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0) return os_bad(r, "a dimension must be >= 0, not %lld", (long long)json_integer_value(v));
        len = (size_t)snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
        src = text;
    } else if (json_is_string(v)) {
        src = json_string_value(v);
        len = json_string_length(v);
    } else return os_bad(r, "a dimension must be an integer or a formula string, not %s", bp__json_type(v));
    int col;
    char why[160];
    bp_status s = bp__fx_parse(&r->s->a, src, len, f, &col, why, sizeof why);
    if (s == BP_ERR_NOMEM) return os_oom(r);
    if (s) return os_bad(r, "column %d: %s in \"%.200s\"", col, why, src);
    return BP_OK;
}

static bp_status os_shape(os_reader *r, const json_t *v, os_out *o)
{
    if (!v) return os_bad(r, "\"shape\" is missing");
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "unknown")) { o->shape_in = -2; return BP_OK; }
        o->shape_in = os_input_ref(s);
        if (o->shape_in < 0) return os_bad(r, "\"shape\" must be an array of dims, \"inK\" or \"unknown\", not \"%s\"", s);
        return BP_OK;
    }
    if (!json_is_array(v)) return os_bad(r, "\"shape\" must be an array of dims, \"inK\" or \"unknown\", not %s", bp__json_type(v));
    size_t n = json_array_size(v);
    if (n > BP_ONNX_MAX_RANK) return os_bad(r, "\"shape\" has %zu dims (at most %d)", n, BP_ONNX_MAX_RANK);
    o->shape_in = -1;
    o->dims = bp__calloc(&r->s->a, n ? n : 1, sizeof *o->dims);
    if (!o->dims) return os_oom(r);
    o->dims_cap = n ? n : 1;
    o->rank = (int)n;
    size_t base = strlen(r->where);
    for (size_t d = 0; d < n; d++) {
        snprintf(r->where + base, sizeof r->where - base, ".shape[%zu]", d);
        bp_status s = os_dim(r, json_array_get(v, d), &o->dims[d]);
        if (s) return s;
    }
    r->where[base] = 0;
    return BP_OK;
}

static bp_status os_output(os_reader *r, const json_t *v, os_out *o)
{
    static const char *const keys[] = {"dtype", "shape", NULL};
    if (!json_is_object(v)) return os_bad(r, "an output must be an object, not %s", bp__json_type(v));
    bp_status s = os_keys(r, v, keys);
    if (!s) s = os_dtype(r, json_object_get(v, "dtype"), o);
    if (!s) s = os_shape(r, json_object_get(v, "shape"), o);
    return s;
}

/* "attrs": {"name": int, ...}, the defaults of attributes the node lacks. */
static bp_status os_attrs(os_reader *r, const json_t *v, os_entry *e)
{
    if (!v) return BP_OK;
    if (!json_is_object(v)) return os_bad(r, "\"attrs\" must be an object of integers, not %s", bp__json_type(v));
    size_t n = json_object_size(v);
    e->attr_cap = n ? n : 1;
    e->attr_names = bp__calloc(&r->s->a, e->attr_cap, sizeof *e->attr_names);
    e->attr_values = bp__calloc(&r->s->a, e->attr_cap, sizeof *e->attr_values);
    if (!e->attr_names || !e->attr_values) return os_oom(r);   /* freed with the entry */
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        if (!json_is_integer(x)) return os_bad(r, "\"attrs\": \"%s\" must be an integer, not %s", key, bp__json_type(x));
        e->attr_names[e->n_attrs] = os_strdup(&r->s->a, key);
        if (!e->attr_names[e->n_attrs]) return os_oom(r);
        e->attr_values[e->n_attrs++] = json_integer_value(x);
    }
    return BP_OK;
}

/* An optional non-empty string member into *out (copied). */
static bp_status os_string(os_reader *r, const json_t *obj, const char *key, char **out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return BP_OK;
    if (!json_is_string(v) || (!json_string_length(v) && strcmp(key, "domain")))
        return os_bad(r, "\"%s\" must be a non-empty string", key);
    if (strlen(json_string_value(v)) != json_string_length(v)) return os_bad(r, "\"%s\" holds a NUL character", key);
    *out = os_strdup(&r->s->a, json_string_value(v));
    return *out ? BP_OK : os_oom(r);
}

static bp_status os_entry_read(os_reader *r, const json_t *v, os_entry *e)
{
    static const char *const keys[] = {"node", "op_type", "domain", "attrs", "outputs", NULL};
    if (!json_is_object(v)) return os_bad(r, "an entry must be an object, not %s", bp__json_type(v));
    bp_status s = os_keys(r, v, keys);
    if (!s) s = os_string(r, v, "node", &e->node);
    if (!s) s = os_string(r, v, "op_type", &e->op_type);
    if (!s) s = os_string(r, v, "domain", &e->domain);
    if (s) return s;
    if (!e->node == !e->op_type) return os_bad(r, "an entry needs exactly one of \"node\" and \"op_type\"");
    if (e->node && e->domain) return os_bad(r, "\"domain\" goes with \"op_type\", not with \"node\"");
    if ((s = os_attrs(r, json_object_get(v, "attrs"), e))) return s;
    const json_t *outs = json_object_get(v, "outputs");
    if (!json_is_array(outs) || !json_array_size(outs)) return os_bad(r, "\"outputs\" must be a non-empty array");
    if (json_array_size(outs) > 65535) return os_bad(r, "\"outputs\" has more than 65535 entries");
    e->outs = bp__calloc(&r->s->a, json_array_size(outs), sizeof *e->outs);
    if (!e->outs) return os_oom(r);
    e->n_out = json_array_size(outs);
    size_t base = strlen(r->where);
    for (size_t i = 0; i < e->n_out; i++) {
        snprintf(r->where + base, sizeof r->where - base, ".outputs[%zu]", i);
        if ((s = os_output(r, json_array_get(outs, i), &e->outs[i]))) return s;
    }
    r->where[base] = 0;
    return BP_OK;
}

static bp_status os_read_root(os_reader *r, const json_t *root)
{
    static const char *const keys[] = {"ops", NULL};
    if (!json_is_object(root)) return os_bad(r, "the file must hold an object {\"ops\": [...]}, not %s", bp__json_type(root));
    bp_status s = os_keys(r, root, keys);
    if (s) return s;
    const json_t *ops = json_object_get(root, "ops");
    if (!json_is_array(ops)) return os_bad(r, "\"ops\" must be an array of entries");
    size_t n = json_array_size(ops);
    r->s->e = bp__calloc(&r->s->a, n ? n : 1, sizeof *r->s->e);
    if (!r->s->e) return os_oom(r);
    r->s->e_cap = n ? n : 1;
    r->s->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(r->where, sizeof r->where, "ops[%zu]", i);
        r->s->e[i].index = i;
        if ((s = os_entry_read(r, json_array_get(ops, i), &r->s->e[i]))) return s;
    }
    r->where[0] = 0;
    return BP_OK;
}

/* The shared end of read and parse: a checked object from a parsed root. */
static bp_status os_build(json_t *root, const char *file, const bp_allocator *alloc, bp_onnx_op_shapes **out,
                          bp_error *err)
{
    const bp_allocator *a = alloc ? alloc : &bp__libc_allocator;
    bp_onnx_op_shapes *s = bp__calloc(a, 1, sizeof *s);
    if (!s) { json_decref(root); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", file); }
    s->a = *a;
    os_reader r = {.s = s, .file = file, .err = err};
    bp_status st = (s->file = os_strdup(a, file)) ? os_read_root(&r, root) : os_oom(&r);
    json_decref(root);
    if (st) { bp_onnx_op_shapes_free(s); s = NULL; }
    *out = s;
    return st;
}

bp_status bp_onnx_op_shapes_read(const char *path, const bp_allocator *alloc, bp_onnx_op_shapes **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_onnx_op_shapes_read: out is NULL");
    *out = NULL;
    if (!path) return bp__err(err, BP_ERR_USAGE, "bp_onnx_op_shapes_read: path is NULL");
    json_t *root;
    bp_status s = bp__json_load_file(path, alloc ? alloc : &bp__libc_allocator, &root, err);
    return s ? s : os_build(root, path, alloc, out, err);
}

bp_status bp_onnx_op_shapes_parse(const char *text, size_t len, const char *filename, const bp_allocator *alloc,
                                  bp_onnx_op_shapes **out, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_onnx_op_shapes_parse: out is NULL");
    *out = NULL;
    if (!text && len) return bp__err(err, BP_ERR_USAGE, "bp_onnx_op_shapes_parse: text is NULL");
    const char *file = filename ? filename : "op-shapes.json";
    json_t *root;
    bp_status s = bp__json_load_text(text ? text : "", len, file, &root, err);
    return s ? s : os_build(root, file, alloc, out, err);
}

/* ----------------------------------------------------------------- applying */

static bool os_domain_is(const char *want, const char *dom)
{
    bool want_default = !*want || !strcmp(want, "ai.onnx");
    return want_default ? !*dom : !strcmp(want, dom);
}

static const os_entry *os_match(const bp_onnx_op_shapes *s, const bp_onnx_node_info *n)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].node && !strcmp(s->e[i].node, n->name)) return &s->e[i];
    for (size_t i = 0; i < s->n; i++) {
        const os_entry *e = &s->e[i];
        if (e->op_type && !strcmp(e->op_type, n->op_type) && (!e->domain || os_domain_is(e->domain, n->domain))) return e;
    }
    return NULL;
}

static bp_onnx_shape_rc os_fail(char *msg, size_t cap, const bp_onnx_op_shapes *s, const os_entry *e, size_t j,
                                const char *what)
{
    snprintf(msg, cap, "%s, ops[%zu].outputs[%zu]: %s", s->file, e->index, j, what);
    return BP_ONNX_SHAPE_ERROR;
}

/* Output j of entry e for node n into *o. */
static bp_onnx_shape_rc os_output_eval(const bp_onnx_op_shapes *s, const os_entry *e, size_t j,
                                       const bp_onnx_node_info *n, bp_onnx_out *o, char *msg, size_t cap)
{
    const os_out *eo = &e->outs[j];
    char why[400];
    for (int k = 0; k < 2; k++) {     /* the inputs "dtype" and "shape" copy must exist */
        int in = k ? eo->shape_in : eo->dtype_in;
        if (in >= 0 && (in >= n->n_inputs || !n->inputs[in].name[0])) {
            snprintf(why, sizeof why, "%s: the node has no input %d", k ? "\"shape\"" : "\"dtype\"", in);
            return os_fail(msg, cap, s, e, j, why);
        }
    }
    o->dtype = eo->dtype_in >= 0 ? n->inputs[eo->dtype_in].dtype : eo->dtype;
    if (eo->shape_in >= 0 || eo->shape_in == -2) {
        const bp_onnx_value *x = eo->shape_in >= 0 ? &n->inputs[eo->shape_in] : NULL;
        o->rank = x ? x->rank : -1;
        if (x && x->rank > 0) memcpy(o->dims, x->dims, (size_t)x->rank * sizeof *o->dims);
        return BP_ONNX_SHAPED;
    }
    bp__fx_defaults dflt = {e->n_attrs, (const char *const *)e->attr_names, e->attr_values};
    o->rank = eo->rank;
    for (int d = 0; d < eo->rank; d++) {
        if (bp__fx_eval(&eo->dims[d], n, &dflt, &o->dims[d], why, sizeof why)) {
            char w2[480];
            snprintf(w2, sizeof w2, "shape[%d]: %s", d, why);
            return os_fail(msg, cap, s, e, j, w2);
        }
    }
    return BP_ONNX_SHAPED;
}

bp_onnx_shape_rc bp__ox_op_shapes_apply(const bp_onnx_op_shapes *s, const bp_onnx_node_info *n, bp_onnx_out *out,
                                        char *msg, size_t cap)
{
    const os_entry *e = os_match(s, n);
    if (!e) return BP_ONNX_NOT_MINE;
    for (int j = 0; j < n->n_outputs; j++) {
        if ((size_t)j >= e->n_out) {
            if (!n->output_names[j][0]) continue;
            snprintf(msg, cap, "%s, ops[%zu]: the entry gives %zu outputs, the node has output %d (\"%s\")", s->file,
                     e->index, e->n_out, j, n->output_names[j]);
            return BP_ONNX_SHAPE_ERROR;
        }
        bp_onnx_shape_rc rc = os_output_eval(s, e, (size_t)j, n, &out[j], msg, cap);
        if (rc != BP_ONNX_SHAPED) return rc;
    }
    return BP_ONNX_SHAPED;
}
