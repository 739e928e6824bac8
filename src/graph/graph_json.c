/*
 * graph_json.c — the "bufplan-graph" JSON format (docs/FORMATS.md): reader
 * and streaming writer (bp_graph_read, which picks this reader or the ONNX
 * one by content, is onnx/graph_read.c).
 *
 * Reading: jansson parses the whole document (JSON_REJECT_DUPLICATES, so a
 * repeated key is an error with its line and column); files are fed to it in
 * chunks, so the text is never held in memory next to the tree.  Then:
 *   1. tensors, in file order (ids = positions), through the builder API;
 *   2. view_of, in a second pass, so a view may name a later tensor; then the
 *      tensor objects are released (the op pass does not need them);
 *   3. ops with their inplace hints, then the inputs/weights/outputs/
 *      constants lists;
 *   4. bp_graph_finalize(), which reports undefined inputs and cycles.
 * While building, the graph is named after the file, so every message of the
 * builder and of finalize starts with the file name; the graph gets its own
 * name from the JSON at the end.  Any error frees everything built so far.
 *
 * Writing streams with fprintf, one tensor or op per line, into a temp file
 * renamed on success (bp__out_open/commit).  Symbolic dims are written as
 * their symbol names (bound values are not persisted), costs with 17
 * significant digits, so read -> write -> read gives the same graph.
 */
#include "core/json_io.h"
#include "graph/graph_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef BP_HAVE_ONNX
#include "bufplan_onnx.h"
#endif

/* --------------------------------------------------------------- helpers */

typedef struct gj_ctx {
    const char *file;       /* for messages */
    bp_graph *g;
    bp_error *err;
    /* scratch, from the graph's allocator */
    int64_t *dims;  size_t cap_dims;
    const char **syms; size_t cap_syms;
    int32_t *io;    size_t cap_io;
} gj_ctx;

static void gj_scratch_free(gj_ctx *c)
{
    const bp_allocator *a = &c->g->alloc;
    bp__free(a, c->dims, c->cap_dims * sizeof *c->dims);
    bp__free(a, c->syms, c->cap_syms * sizeof *c->syms);
    bp__free(a, c->io, c->cap_io * sizeof *c->io);
    c->dims = NULL; c->syms = NULL; c->io = NULL;
}

/* A non-negative JSON integer.  what = "tensor"/"op", name = its name. */
static bp_status gj_uint(gj_ctx *c, const json_t *v, const char *what, const char *name,
                         const char *key, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0)
            return bp__err(c->err, BP_ERR_INVALID, "%s: %s \"%s\": \"%s\" is negative (%lld)",
                           c->file, what, name, key, (long long)x);
        *out = (uint64_t)x;
        return BP_OK;
    }
    if (json_is_real(v))
        return bp__err(c->err, BP_ERR_INVALID, "%s: %s \"%s\": \"%s\" must be an integer, not %g",
                       c->file, what, name, key, json_real_value(v));
    return bp__err(c->err, BP_ERR_INVALID, "%s: %s \"%s\": \"%s\" must be a non-negative integer, not %s",
                   c->file, what, name, key, bp__json_type(v));
}

static bp_status gj_oom(gj_ctx *c)
{
    return bp__err(c->err, BP_ERR_NOMEM, "%s: out of memory", c->file);
}

/* Resolves a tensor name at key[idx] of op `op` (NULL for the top-level
 * lists). */
static bp_status gj_tensor_ref(gj_ctx *c, const json_t *v, const char *op, const char *key, size_t idx, int32_t *out)
{
    if (!json_is_string(v)) {
        if (op)
            return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": \"%s\"[%zu] must be a tensor name (a string), not %s",
                           c->file, op, key, idx, bp__json_type(v));
        return bp__err(c->err, BP_ERR_INVALID, "%s: \"%s\"[%zu] must be a tensor name (a string), not %s",
                       c->file, key, idx, bp__json_type(v));
    }
    const char *s = json_string_value(v);
    int32_t t = bp__names_find(&c->g->tnames, s, json_string_length(v));
    if (t < 0) {
        if (op)
            return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": %s tensor \"%s\" is not in \"tensors\"",
                           c->file, op, key, s);
        return bp__err(c->err, BP_ERR_INVALID, "%s: \"%s\" lists tensor \"%s\", which is not in \"tensors\"",
                       c->file, key, s);
    }
    *out = t;
    return BP_OK;
}

/* ---------------------------------------------------------------- tensors */

/* BP_ERR_INVALID naming the first key of obj that is not in known[] (NULL-
 * terminated), with the nearest known key (core/json_load.c). */
static bp_status gj_keys(gj_ctx *c, const json_t *obj, const char *const *known, const char *where)
{
    return bp__json_check_keys(obj, known, c->file, where, c->err);
}

static const char *const gj_root_keys[] = {"format", "version", "name", "tensors", "ops", "inputs", "weights",
                                           "outputs", "constants", NULL};
static const char *const gj_tensor_keys[] = {"name", "dtype", "shape", "bytes", "view_of", NULL};
static const char *const gj_op_keys[] = {"name", "type", "inputs", "outputs", "cost", "inplace", "attrs", "workspace", NULL};

static bp_status gj_tensor(gj_ctx *c, const json_t *t, size_t idx)
{
    if (!json_is_object(t))
        return bp__err(c->err, BP_ERR_INVALID, "%s: tensors[%zu] is %s, not an object", c->file, idx, bp__json_type(t));
    const json_t *jn = json_object_get(t, "name");
    if (!jn) return bp__err(c->err, BP_ERR_INVALID, "%s: tensors[%zu] has no \"name\"", c->file, idx);
    if (!json_is_string(jn))
        return bp__err(c->err, BP_ERR_INVALID, "%s: tensors[%zu]: \"name\" must be a string, not %s", c->file, idx, bp__json_type(jn));
    const char *name = json_string_value(jn);
    {
        char where[300];
        snprintf(where, sizeof where, "tensors[%zu] (\"%.200s\")", idx, name);
        bp_status ks = gj_keys(c, t, gj_tensor_keys, where);
        if (ks) return ks;
    }
    if (!*name) return bp__err(c->err, BP_ERR_INVALID, "%s: tensors[%zu] has an empty name", c->file, idx);
    const json_t *jb = json_object_get(t, "bytes"), *js = json_object_get(t, "shape"), *jd = json_object_get(t, "dtype");
    bp_dtype dt = BP_DT_UNKNOWN;
    if (jd) {
        if (!json_is_string(jd))
            return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": \"dtype\" must be a string, not %s", c->file, name, bp__json_type(jd));
        dt = bp_dtype_parse(json_string_value(jd));
        if (dt == BP_DT_UNKNOWN)
            return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": unknown dtype \"%s\"", c->file, name, json_string_value(jd));
    }
    if (jb && js)
        return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\" has both \"bytes\" and \"shape\"; give one", c->file, name);
    if (jb) {
        uint64_t bytes = 0;
        bp_status s = gj_uint(c, jb, "tensor", name, "bytes", &bytes);
        if (s) return s;
        return bp_graph_add_tensor(c->g, name, bytes, NULL, c->err);
    }
    if (!js)
        return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\" has neither \"bytes\" nor \"shape\"", c->file, name);
    if (!json_is_array(js))
        return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": \"shape\" must be an array, not %s", c->file, name, bp__json_type(js));
    if (!jd)
        return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\" has a \"shape\" but no \"dtype\"", c->file, name);
    size_t rank = json_array_size(js);
    if (rank > 255)
        return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": rank %zu is over the limit of 255", c->file, name, rank);
    if (!bp__grow(&c->g->alloc, (void **)&c->dims, &c->cap_dims, rank + 1, sizeof *c->dims) ||
        !bp__grow(&c->g->alloc, (void **)&c->syms, &c->cap_syms, rank + 1, sizeof *c->syms))
        return gj_oom(c);
    for (size_t i = 0; i < rank; i++) {
        const json_t *d = json_array_get(js, i);
        c->syms[i] = NULL;
        if (json_is_string(d)) {
            if (!json_string_length(d) || strlen(json_string_value(d)) != json_string_length(d))
                return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": dimension %zu is an empty symbol name", c->file, name, i);
            c->dims[i] = BP_DIM_SYMBOLIC;
            c->syms[i] = json_string_value(d);
        } else if (json_is_integer(d)) {
            json_int_t x = json_integer_value(d);
            if (x < 0)
                return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": dimension %zu is negative (%lld)", c->file, name, i, (long long)x);
            c->dims[i] = (int64_t)x;
        } else {
            return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": dimension %zu must be a non-negative integer or a symbol name, not %s",
                           c->file, name, i, bp__json_type(d));
        }
    }
    return bp_graph_add_tensor_shape(c->g, name, dt, (int)rank, c->dims, c->syms, NULL, c->err);
}

static bp_status gj_views(gj_ctx *c, const json_t *tensors)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tensors, i, t) {
        const json_t *v = json_object_get(t, "view_of");
        if (!v || json_is_null(v)) continue;
        const char *name = bp__names_get(&c->g->tnames, (int32_t)i);
        if (!json_is_string(v))
            return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": \"view_of\" must be a tensor name (a string), not %s",
                           c->file, name, bp__json_type(v));
        int32_t src = bp__names_find(&c->g->tnames, json_string_value(v), json_string_length(v));
        if (src < 0)
            return bp__err(c->err, BP_ERR_INVALID, "%s: tensor \"%s\": \"view_of\" names tensor \"%s\", which is not in \"tensors\"",
                           c->file, name, json_string_value(v));
        bp_status s = bp_graph_set_view(c->g, (int32_t)i, src, c->err);
        if (s) return s;
    }
    return BP_OK;
}

/* -------------------------------------------------------------------- ops */

/* An op's "workspace": BYTES or [BYTES, ...] (1 to 64 of them). */
static bp_status gj_workspace(gj_ctx *c, const json_t *o, const char *name, int32_t id)
{
    const json_t *w = json_object_get(o, "workspace");
    if (!w || json_is_null(w)) return BP_OK;
    uint64_t b[64];
    size_t n = json_is_array(w) ? json_array_size(w) : 1;
    if (n < 1 || n > 64)
        return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": \"workspace\" lists %zu sizes (1 to 64)", c->file, name, n);
    for (size_t i = 0; i < n; i++) {
        bp_status s = gj_uint(c, json_is_array(w) ? json_array_get(w, i) : w, "op", name, "workspace", &b[i]);
        if (s) return s;
    }
    return bp_graph_set_workspace(c->g, id, (int)n, b, c->err);
}

static bp_status gj_op(gj_ctx *c, const json_t *o, size_t idx)
{
    if (!json_is_object(o))
        return bp__err(c->err, BP_ERR_INVALID, "%s: ops[%zu] is %s, not an object", c->file, idx, bp__json_type(o));
    const json_t *jn = json_object_get(o, "name");
    if (!jn) return bp__err(c->err, BP_ERR_INVALID, "%s: ops[%zu] has no \"name\"", c->file, idx);
    if (!json_is_string(jn))
        return bp__err(c->err, BP_ERR_INVALID, "%s: ops[%zu]: \"name\" must be a string, not %s", c->file, idx, bp__json_type(jn));
    const char *name = json_string_value(jn);
    {
        char where[300];
        snprintf(where, sizeof where, "ops[%zu] (\"%.200s\")", idx, name);
        bp_status ks = gj_keys(c, o, gj_op_keys, where);
        if (ks) return ks;
    }
    if (!*name) return bp__err(c->err, BP_ERR_INVALID, "%s: ops[%zu] has an empty name", c->file, idx);
    static const char *const keys[3] = {"type", "inputs", "outputs"};
    const json_t *jv[3];
    for (int k = 0; k < 3; k++) {
        jv[k] = json_object_get(o, keys[k]);
        if (!jv[k]) return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\" has no \"%s\"", c->file, name, keys[k]);
        if (k == 0 ? !json_is_string(jv[k]) : !json_is_array(jv[k]))
            return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": \"%s\" must be %s, not %s", c->file, name, keys[k],
                           k == 0 ? "a string" : "an array of tensor names", bp__json_type(jv[k]));
    }
    const char *type = json_string_value(jv[0]);
    if (!*type) return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\" has an empty \"type\"", c->file, name);
    size_t n_in = json_array_size(jv[1]), n_out = json_array_size(jv[2]);
    if (n_in > 65535 || n_out > 65535)
        return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\" has over 65535 inputs or outputs", c->file, name);
    if (!bp__grow(&c->g->alloc, (void **)&c->io, &c->cap_io, n_in + n_out + 1, sizeof *c->io)) return gj_oom(c);
    for (size_t i = 0; i < n_in + n_out; i++) {
        bool in = i < n_in;
        bp_status s = gj_tensor_ref(c, json_array_get(jv[in ? 1 : 2], in ? i : i - n_in), name,
                                    in ? "input" : "output", in ? i : i - n_in, &c->io[i]);
        if (s) return s;
    }
    double cost = 0;
    const json_t *jc = json_object_get(o, "cost");
    if (jc) {
        if (!json_is_number(jc))
            return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": \"cost\" must be a number, not %s", c->file, name, bp__json_type(jc));
        cost = json_number_value(jc);
        if (!(cost >= 0) || !isfinite(cost))
            return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": \"cost\" must be >= 0 (it is %g)", c->file, name, cost);
    }
    int32_t id;
    bp_status s = bp_graph_add_op(c->g, name, type, (int)n_in, c->io, (int)n_out, c->io + n_in, cost, &id, c->err);
    if (!s) s = gj_workspace(c, o, name, id);
    if (s) return s;
    const json_t *ja = json_object_get(o, "attrs");
    if (ja && (s = bp__attrs_read_json(c->g, id, ja, c->file, c->err))) return s;
    const json_t *ji = json_object_get(o, "inplace");
    if (ji && !json_is_null(ji)) {
        if (!json_is_object(ji))
            return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": \"inplace\" must be an object {\"output\": \"input\"}, not %s",
                           c->file, name, bp__json_type(ji));
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)ji, key, v) {
            int32_t out = bp__names_find(&c->g->tnames, key, strlen(key)), in = -1;
            if (out < 0)
                return bp__err(c->err, BP_ERR_INVALID, "%s: op \"%s\": \"inplace\" names output \"%s\", which is not in \"tensors\"",
                               c->file, name, key);
            s = gj_tensor_ref(c, v, name, "inplace input", 0, &in);
            if (s) return s;
            s = bp_graph_set_inplace(c->g, id, out, in, c->err);
            if (s) return s;
        }
    }
    return BP_OK;
}

/* inputs / weights / outputs / constants */
static bp_status gj_mark_list(gj_ctx *c, const json_t *root, const char *key, unsigned flag)
{
    const json_t *l = json_object_get(root, key);
    if (!l) return BP_OK;
    if (!json_is_array(l))
        return bp__err(c->err, BP_ERR_INVALID, "%s: \"%s\" must be an array of tensor names, not %s", c->file, key, bp__json_type(l));
    size_t i;
    const json_t *v;
    json_array_foreach(l, i, v) {
        int32_t t = -1;
        bp_status s = gj_tensor_ref(c, v, NULL, key, i, &t);
        if (s) return s;
        s = bp_graph_mark(c->g, t, flag, c->err);
        if (s) return s;
    }
    return BP_OK;
}

/* --------------------------------------------------------------- reading */

static bool gj_set_name(bp_graph *g, const char *name)
{
    size_t n = strlen(name) + 1;
    char *p = bp__alloc(&g->alloc, n);
    if (!p) return false;
    memcpy(p, name, n);
    bp__free(&g->alloc, g->name, strlen(g->name) + 1);
    g->name = p;
    return true;
}

/* The graph's name when the file has none: the file's base name without its
 * extension. */
static void gj_default_name(const char *file, char *buf, size_t cap)
{
    const char *b = strrchr(file, '/');
    b = b ? b + 1 : file;
    snprintf(buf, cap, "%s", *b ? b : "graph");
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = 0;
}

/* Builds the graph from a parsed document; takes ownership of root. */
static bp_status gj_build(json_t *root, const char *file, const bp_limits *lim, const bp_allocator *alloc, bp_graph **out,
                          bp_error *err)
{
    bp_status s = BP_OK;
    gj_ctx c = {.file = file, .err = err};
    if (!json_is_object(root)) {
        s = bp__err(err, BP_ERR_INVALID, "%s: the top level must be a JSON object, not %s", file, bp__json_type(root));
        json_decref(root);
        return s;
    }
    const json_t *jf = json_object_get(root, "format"), *jv = json_object_get(root, "version");
    const json_t *jn = json_object_get(root, "name");
    json_t *jt = json_object_get(root, "tensors"), *jo = json_object_get(root, "ops");
    if (!jf || !json_is_string(jf) || strcmp(json_string_value(jf), "bufplan-graph") != 0)
        s = bp__err(err, BP_ERR_INVALID, "%s: not a bufplan graph: \"format\" must be \"bufplan-graph\"%s%s%s", file,
                    jf && json_is_string(jf) ? " (it is \"" : "", jf && json_is_string(jf) ? json_string_value(jf) : "",
                    jf && json_is_string(jf) ? "\")" : "");
    else if (!jv || !json_is_integer(jv) || json_integer_value(jv) != 1)
        s = jv && json_is_integer(jv)
                ? bp__err(err, BP_ERR_INVALID, "%s: unsupported \"version\" %lld (bufplan reads version 1)", file, (long long)json_integer_value(jv))
                : bp__err(err, BP_ERR_INVALID, "%s: \"version\" must be the integer 1%s%s", file, jv ? ", not " : " (it is missing)", jv ? bp__json_type(jv) : "");
    else if (jn && !json_is_string(jn))
        s = bp__err(err, BP_ERR_INVALID, "%s: \"name\" must be a string, not %s", file, bp__json_type(jn));
    else if ((s = gj_keys(&c, root, gj_root_keys, "the top level")) != BP_OK) {}
    else if (!jt || !json_is_array(jt))
        s = bp__err(err, BP_ERR_INVALID, "%s: \"tensors\" must be an array%s%s", file, jt ? ", not " : " (it is missing)", jt ? bp__json_type(jt) : "");
    else if (!jo || !json_is_array(jo))
        s = bp__err(err, BP_ERR_INVALID, "%s: \"ops\" must be an array%s%s", file, jo ? ", not " : " (it is missing)", jo ? bp__json_type(jo) : "");
    if (s) { json_decref(root); return s; }

    c.g = bp_graph_new(file, alloc);
    if (!c.g) { json_decref(root); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", file); }
    if ((s = bp_graph_set_limits(c.g, bp__limits(lim), err))) goto fail;
    if (json_array_size(jt) > c.g->lim.max_tensors || json_array_size(jo) > c.g->lim.max_ops) {
        s = bp__err(err, BP_ERR_LIMIT, "%s: %zu tensors and %zu ops are over the limits of %llu and %llu (bp_limits.max_tensors, max_ops)",
                    file, json_array_size(jt), json_array_size(jo), (unsigned long long)c.g->lim.max_tensors,
                    (unsigned long long)c.g->lim.max_ops);
        goto fail;
    }
    size_t i;
    json_t *v;
    json_array_foreach(jt, i, v) {
        if ((s = gj_tensor(&c, v, i))) goto fail;
    }
    if ((s = gj_views(&c, jt))) goto fail;
    json_array_clear(jt);   /* the tensor objects are no longer needed */
    json_array_foreach(jo, i, v) {
        if ((s = gj_op(&c, v, i))) goto fail;
    }
    json_array_clear(jo);
    if ((s = gj_mark_list(&c, root, "inputs", BP_TENSOR_INPUT)) ||
        (s = gj_mark_list(&c, root, "weights", BP_TENSOR_WEIGHT)) ||
        (s = gj_mark_list(&c, root, "outputs", BP_TENSOR_OUTPUT)) ||
        (s = gj_mark_list(&c, root, "constants", BP_TENSOR_CONST)))
        goto fail;
    gj_scratch_free(&c);
    if ((s = bp_graph_finalize(c.g, err))) goto fail;
    char def[256];
    if (!jn) gj_default_name(file, def, sizeof def);
    if (!gj_set_name(c.g, jn ? json_string_value(jn) : def)) { s = gj_oom(&c); goto fail; }
    json_decref(root);
    *out = c.g;
    return BP_OK;
fail:
    gj_scratch_free(&c);
    bp_graph_free(c.g);
    json_decref(root);
    return s;
}

bp_status bp_graph_parse_json(const char *text, size_t len, const char *filename, const bp_allocator *alloc,
                              bp_graph **out, bp_error *err)
{
    return bp_graph_parse_json_lim(text, len, filename, NULL, alloc, out, err);
}

bp_status bp_graph_parse_json_lim(const char *text, size_t len, const char *filename, const bp_limits *lim,
                                  const bp_allocator *alloc, bp_graph **out, bp_error *err)
{
    const char *file = filename && *filename ? filename : "<json>";
    if (!out) return bp__err(err, BP_ERR_USAGE, "%s: bp_graph_parse_json: out is NULL", file);
    *out = NULL;
    if (!text) return bp__err(err, BP_ERR_USAGE, "%s: bp_graph_parse_json: text is NULL", file);
    json_t *root;
    bp_status s = bp__json_load_text_lim(text, len, file, lim, &root, err);
    return s ? s : gj_build(root, file, lim, alloc, out, err);
}

bp_status bp__graph_read_json_lim(const char *path, const bp_limits *lim, const bp_allocator *alloc, bp_graph **out,
                                  bp_error *err)
{
    if (!out || !path) return bp__err(err, BP_ERR_USAGE, "bp_graph_read_json: NULL argument");
    *out = NULL;
    json_t *root;
    bp_status s = bp__json_load_file_lim(path, alloc ? alloc : &bp__libc_allocator, lim, &root, err);
    return s ? s : gj_build(root, path, lim, alloc, out, err);
}

bp_status bp_graph_read_json(const char *path, const bp_allocator *alloc, bp_graph **out, bp_error *err)
{
    return bp__graph_read_json_lim(path, NULL, alloc, out, err);
}

/* --------------------------------------------------------------- writing */

/* Writes one JSON array of tensor names, those with `flag` set. */
static void gj_write_flag_list(const bp_graph *g, FILE *f, const char *key, unsigned flag, bool last)
{
    fprintf(f, " \"%s\": [", key);
    bool first = true;
    for (size_t t = 0; t < g->n_t; t++) {
        if (!(g->t[t].flags & flag)) continue;
        if (!first) fputs(", ", f);
        first = false;
        bp__json_str(f, bp__names_get(&g->tnames, (int32_t)t));
    }
    fputs(last ? "]\n" : "],\n", f);
}

typedef struct gj_inpl_key { int32_t op; uint32_t idx; } gj_inpl_key;

static int gj_inpl_cmp(const void *a, const void *b)
{
    const gj_inpl_key *x = a, *y = b;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

bp_status bp_graph_write_json_file(const bp_graph *g, FILE *f, bp_error *err)
{
    if (!g || !f) return bp__err(err, BP_ERR_USAGE, "bp_graph_write_json_file: NULL argument");
    if (g->n_bodies)
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: the graph has control flow (%zu bodies); the JSON graph format cannot hold bodies (keep the ONNX model)",
                       g->name, g->n_bodies);
    /* Inplace hints grouped by op, in their order within an op: sorted keys
     * (op, position), only when they are not in op order already. */
    gj_inpl_key *inpl = NULL;
    if (g->n_inpl) {
        if (g->n_inpl > UINT32_MAX) return bp__err(err, BP_ERR_LIMIT, "%s: too many inplace hints", g->name);
        inpl = bp__alloc(&g->alloc, g->n_inpl * sizeof *inpl);
        if (!inpl) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory writing JSON", g->name);
        bool sorted = true;
        for (size_t i = 0; i < g->n_inpl; i++) {
            inpl[i] = (gj_inpl_key){g->inpl[i].op, (uint32_t)i};
            if (i && inpl[i].op < inpl[i - 1].op) sorted = false;
        }
        if (!sorted) qsort(inpl, g->n_inpl, sizeof *inpl, gj_inpl_cmp);
    }
    fputs("{\n \"format\": \"bufplan-graph\",\n \"version\": 1,\n \"name\": ", f);
    bp__json_str(f, g->name);
    fputs(",\n \"tensors\": [", f);
    for (size_t t = 0, w = 0; t < g->n_t; t++) {
        const bp__tensor *x = &g->t[t];
        if (x->is_workspace) continue;   /* its op's "workspace" key makes it */
        fputs(w++ ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
        bp__json_str(f, bp__names_get(&g->tnames, (int32_t)t));
        if (x->has_shape) {
            fputs(", \"shape\": [", f);
            for (int i = 0; i < x->rank; i++) {
                int64_t d = g->dims[x->dims_off + i];
                if (i) fputs(", ", f);
                if (bp__dim_is_sym(d)) bp__json_str(f, bp__names_get(&g->syms, bp__dim_sym(d)));
                else fprintf(f, "%" PRId64, d);
            }
            fprintf(f, "], \"dtype\": \"%s\"", bp_dtype_name((bp_dtype)x->dtype));
        } else {
            fprintf(f, ", \"bytes\": %" PRIu64, x->bytes);
        }
        if (x->view_of >= 0) {
            fputs(", \"view_of\": ", f);
            bp__json_str(f, bp__names_get(&g->tnames, x->view_of));
        }
        fputc('}', f);
    }
    fputs(g->n_t ? "\n ],\n \"ops\": [" : "],\n \"ops\": [", f);
    size_t k = 0;
    for (size_t o = 0; o < g->n_o; o++) {
        const bp__op *op = &g->o[o];
        fputs(o ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
        bp__json_str(f, bp__names_get(&g->onames, (int32_t)o));
        fputs(", \"type\": ", f);
        bp__json_str(f, bp__names_get(&g->types, op->type));
        for (int side = 0; side < 2; side++) {
            const int32_t *io = side ? bp__op_out(g, (int32_t)o) : bp__op_in(g, (int32_t)o);
            int n = side ? op->n_out - op->n_ws : op->n_in;
            fputs(side ? ", \"outputs\": [" : ", \"inputs\": [", f);
            for (int i = 0; i < n; i++) {
                if (i) fputs(", ", f);
                bp__json_str(f, bp__names_get(&g->tnames, io[i]));
            }
            fputc(']', f);
        }
        if (op->cost > 0 && isfinite(op->cost)) fprintf(f, ", \"cost\": %.17g", op->cost);
        for (int i = 0; i < op->n_ws; i++)
            fprintf(f, "%s%" PRIu64 "%s", i ? ", " : ", \"workspace\": [", g->t[bp__op_out(g, (int32_t)o)[op->n_out - op->n_ws + i]].bytes,
                    i + 1 == op->n_ws ? "]" : "");
        bp__attrs_write_json(g, (int32_t)o, f);
        if (k < g->n_inpl && inpl[k].op == (int32_t)o) {
            fputs(", \"inplace\": {", f);
            for (bool first = true; k < g->n_inpl && inpl[k].op == (int32_t)o; k++, first = false) {
                if (!first) fputs(", ", f);
                const bp__inplace *h = &g->inpl[inpl[k].idx];
                bp__json_str(f, bp__names_get(&g->tnames, h->out));
                fputs(": ", f);
                bp__json_str(f, bp__names_get(&g->tnames, h->in));
            }
            fputc('}', f);
        }
        fputc('}', f);
    }
    fputs(g->n_o ? "\n ],\n" : "],\n", f);
    bool any_const = false;
    for (size_t t = 0; t < g->n_t && !any_const; t++) any_const = (g->t[t].flags & BP_TENSOR_CONST) != 0;
    gj_write_flag_list(g, f, "inputs", BP_TENSOR_INPUT, false);
    gj_write_flag_list(g, f, "weights", BP_TENSOR_WEIGHT, false);
    gj_write_flag_list(g, f, "outputs", BP_TENSOR_OUTPUT, !any_const);
    if (any_const) gj_write_flag_list(g, f, "constants", BP_TENSOR_CONST, true);
    fputs("}\n", f);
    bp__free(&g->alloc, inpl, g->n_inpl * sizeof *inpl);
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "%s: write error", g->name);
    return BP_OK;
}

bp_status bp_graph_write_json(const bp_graph *g, const char *path, bp_error *err)
{
    if (!g || !path) return bp__err(err, BP_ERR_USAGE, "bp_graph_write_json: NULL argument");
    bp__outfile o;
    bp_status s = bp__out_open(&o, path, err);
    if (s) return s;
    s = bp_graph_write_json_file(g, o.f, err);
    if (s) {
        bp__out_abort(&o);
        if (s == BP_ERR_IO) bp__err(err, BP_ERR_IO, "%s: write error: %s", path, strerror(errno));
        return s;
    }
    return bp__out_commit(&o, err);
}
