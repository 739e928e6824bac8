/*
 * engine_json.c — the "bufplan-engine" JSON format of engine profiles
 * (docs/FORMATS.md, "Engine profiles"): reader (jansson, unknown keys
 * rejected with the nearest known one) and writer (every field written, so
 * parse -> write -> parse gives the same profile).  Op types are checked by
 * bp_engine_add_op; a workspace formula is checked where it is evaluated
 * (onnx/engine_ws.c), the formula language being the ONNX importer's.
 */
#include "core/json_io.h"
#include "graph/engine.h"

#include <string.h>

static const char *const ej_root_keys[] = {"format", "version", "name", "concat_inplace", "graph_hints", "ops", NULL};
static const char *const ej_op_keys[] = {"views", "inplace", "same_dtype", "strided", "workspace", NULL};

/* A boolean key of obj into *out (left as it is when absent). */
static bp_status ej_bool(const json_t *obj, const char *key, const char *file, const char *where, int *out, bp_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return BP_OK;
    if (!json_is_boolean(v))
        return bp__err(err, BP_ERR_INVALID, "%s: %s: \"%s\" is %s, not true or false", file, where, key, bp__json_type(v));
    *out = json_is_true(v);
    return BP_OK;
}

/* One index of a pair: an integer >= 0, or "*" when star_ok. */
static bool ej_index(const json_t *v, bool star_ok, int *out)
{
    if (star_ok && json_is_string(v) && !strcmp(json_string_value(v), "*")) { *out = BP_ENGINE_ANY_INPUT; return true; }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65534) return false;
    *out = (int)json_integer_value(v);
    return true;
}

/* A list of [out, in] pairs under key of an op object. */
static bp_status ej_pairs(const json_t *op, const char *key, const char *file, const char *type, bool star_ok,
                          bp_engine_pair *pairs, int *n, bp_error *err)
{
    const json_t *v = json_object_get(op, key);
    *n = 0;
    if (!v) return BP_OK;
    if (!json_is_array(v) || json_array_size(v) > BP_ENGINE_MAX_PAIRS)
        return bp__err(err, BP_ERR_INVALID, "%s: op type \"%s\": \"%s\" must be a list of at most %d [output, input] pairs", file,
                       type, key, BP_ENGINE_MAX_PAIRS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *p = json_array_get(v, i);
        if (!json_is_array(p) || json_array_size(p) != 2 || !ej_index(json_array_get(p, 0), false, &pairs[i].out) ||
            !ej_index(json_array_get(p, 1), star_ok, &pairs[i].in))
            return bp__err(err, BP_ERR_INVALID, "%s: op type \"%s\": \"%s\"[%zu] is not an [output, input] pair of indices >= 0%s",
                           file, type, key, i, star_ok ? " (the input may be \"*\")" : "");
    }
    *n = (int)json_array_size(v);
    return BP_OK;
}

/* One entry of "ops". */
static bp_status ej_op(bp_engine *e, const char *type, const json_t *op, const char *file, bp_error *err)
{
    char where[256];
    snprintf(where, sizeof where, "op type \"%.200s\"", type);
    if (!json_is_object(op)) return bp__err(err, BP_ERR_INVALID, "%s: %s is %s, not an object", file, where, bp__json_type(op));
    bp_status s = bp__json_check_keys(op, ej_op_keys, file, where, err);
    if (s) return s;
    bp_engine_pair views[BP_ENGINE_MAX_PAIRS], inplace[BP_ENGINE_MAX_PAIRS];
    bp_engine_op r = {.type = type, .views = views, .inplace = inplace, .same_dtype = 1, .strided = 0};
    s = ej_pairs(op, "views", file, type, false, views, &r.n_views, err);
    if (!s) s = ej_pairs(op, "inplace", file, type, true, inplace, &r.n_inplace, err);
    if (!s) s = ej_bool(op, "same_dtype", file, where, &r.same_dtype, err);
    if (!s) s = ej_bool(op, "strided", file, where, &r.strided, err);
    if (s) return s;
    const json_t *ws = json_object_get(op, "workspace");
    if (ws && !json_is_string(ws))
        return bp__err(err, BP_ERR_INVALID, "%s: %s: \"workspace\" is %s, not a formula string", file, where, bp__json_type(ws));
    r.workspace = ws ? json_string_value(ws) : NULL;
    s = bp_engine_add_op(e, &r, err);
    if (s == BP_ERR_INVALID) {   /* name the file too */
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err ? err->msg : "");
        return bp__err(err, s, "%s: %s", file, m);
    }
    return s;
}

/* The document root into a new profile. */
static bp_status ej_root(const json_t *root, const char *file, const bp_allocator *alloc, bp_engine **out, bp_error *err)
{
    if (!json_is_object(root)) return bp__err(err, BP_ERR_INVALID, "%s: an engine profile is a JSON object", file);
    bp_status s = bp__json_check_keys(root, ej_root_keys, file, "the profile", err);
    if (s) return s;
    const json_t *fmt = json_object_get(root, "format"), *ver = json_object_get(root, "version");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "bufplan-engine"))
        return bp__err(err, BP_ERR_INVALID, "%s: \"format\" must be \"bufplan-engine\"", file);
    if (ver && (!json_is_integer(ver) || json_integer_value(ver) != 1))
        return bp__err(err, BP_ERR_INVALID, "%s: \"version\" must be 1", file);
    const json_t *name = json_object_get(root, "name"), *ops = json_object_get(root, "ops");
    if (name && !json_is_string(name)) return bp__err(err, BP_ERR_INVALID, "%s: \"name\" is %s, not a string", file, bp__json_type(name));
    if (ops && !json_is_object(ops))
        return bp__err(err, BP_ERR_INVALID, "%s: \"ops\" is %s, not an object of op types", file, bp__json_type(ops));
    int ci = 0, hints = 1;
    s = ej_bool(root, "concat_inplace", file, "the profile", &ci, err);
    if (!s) s = ej_bool(root, "graph_hints", file, "the profile", &hints, err);
    if (s) return s;
    bp_engine *e;
    s = bp_engine_new(name ? json_string_value(name) : file, ci, hints, alloc, &e, err);
    if (s) return s;
    const char *type;
    const json_t *op;
    json_object_foreach((json_t *)ops, type, op) {
        s = ej_op(e, type, op, file, err);
        if (s) { bp_engine_free(e); return s; }
    }
    bp_engine *d;   /* says what the default says: plans as the default (fast path, no copy) */
    if (!bp_engine_builtin("default", alloc, &d, NULL)) {
        e->is_default = bp_engine_equal(e, d);
        bp_engine_free(d);
    }
    *out = e;
    return BP_OK;
}

bp_status bp_engine_parse_json(const char *text, size_t len, const char *filename, const bp_allocator *alloc,
                               bp_engine **out, bp_error *err)
{
    *out = NULL;
    if (!alloc) alloc = &bp__libc_allocator;
    const char *file = filename ? filename : "engine profile";
    json_t *root;
    bp_status s = bp__json_load_text(text, len, file, &root, err);
    if (s) return s;
    s = ej_root(root, file, alloc, out, err);
    json_decref(root);
    return s;
}

bp_status bp_engine_read_json(const char *path, const bp_allocator *alloc, bp_engine **out, bp_error *err)
{
    *out = NULL;
    if (!alloc) alloc = &bp__libc_allocator;
    json_t *root;
    bp_status s = bp__json_load_file(path, alloc, &root, err);
    if (s) return s;
    s = ej_root(root, path, alloc, out, err);
    json_decref(root);
    return s;
}

bp_status bp_engine_load(const char *name_or_path, const bp_allocator *alloc, bp_engine **out, bp_error *err)
{
    if (!name_or_path) return bp__err(err, BP_ERR_USAGE, "engine profile: NULL name");
    for (const char *const *b = bp_engine_builtins(); *b; b++)
        if (!strcmp(name_or_path, *b)) return bp_engine_builtin(name_or_path, alloc, out, err);
    bp_status s = bp_engine_read_json(name_or_path, alloc, out, err);
    if (s == BP_ERR_IO) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err ? err->msg : "");
        return bp__err(err, BP_ERR_USAGE, "engine profile \"%s\" is not built in (default, strict, ort-cpu) and not a readable file (%s)",
                       name_or_path, m);
    }
    return s;
}

/* [[out, in], ...] */
static void ej_write_pairs(FILE *f, const bp__eng_pair *p, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (p[i].in == BP_ENGINE_ANY_INPUT) fprintf(f, "%s[%d, \"*\"]", i ? ", " : "", p[i].out);
        else fprintf(f, "%s[%d, %d]", i ? ", " : "", p[i].out, p[i].in);
    }
    fputc(']', f);
}

bp_status bp_engine_write_json_file(const bp_engine *e, FILE *f, bp_error *err)
{
    if (!e || !f) return bp__err(err, BP_ERR_USAGE, "bp_engine_write_json_file: NULL argument");
    fprintf(f, "{\"format\": \"bufplan-engine\", \"version\": 1, \"name\": ");
    bp__json_str(f, e->name);
    fprintf(f, ", \"concat_inplace\": %s, \"graph_hints\": %s,\n \"ops\": {", e->concat_inplace ? "true" : "false",
            e->graph_hints ? "true" : "false");
    for (size_t i = 0; i < e->n_ops; i++) {
        const bp__eng_op *r = &e->ops[i];
        fprintf(f, "%s\n  ", i ? "," : "");
        bp__json_str(f, r->type);
        fprintf(f, ": {\"views\": ");
        ej_write_pairs(f, r->views, r->n_views);
        fprintf(f, ", \"inplace\": ");
        ej_write_pairs(f, r->inplace, r->n_inplace);
        fprintf(f, ", \"same_dtype\": %s, \"strided\": %s", r->same_dtype ? "true" : "false", r->strided ? "true" : "false");
        if (r->workspace) {
            fprintf(f, ", \"workspace\": ");
            bp__json_str(f, r->workspace);
        }
        fputc('}', f);
    }
    fprintf(f, "\n }}\n");
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "engine profile \"%s\": write error", e->name);
    return BP_OK;
}
