/*
 * attrs_json.c — an op's attributes in graph JSON: the optional "attrs"
 * object of an op (docs/FORMATS.md).  The JSON type gives the attribute's
 * type: an integer is INT, a real FLOAT, a string STRING, an array of
 * integers INTS (the empty array too), an array of numbers with a real in it
 * FLOATS.  Floats are written in their shortest round-trip form, always with
 * a '.' or an exponent (so they read back as reals); an infinity is written
 * as +-1e39 (beyond float range, so it reads back as one) and a NaN as null.
 */
#include "core/json_io.h"
#include "graph/graph_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- reading */

static bool aj_is_float(const json_t *v) { return json_is_real(v) || json_is_null(v); }

static float aj_float(const json_t *v) { return json_is_null(v) ? NAN : (float)json_number_value(v); }

/* The type of the attribute v, or BP_ATTR_NONE when no type fits. */
static bp_attr_type aj_type(const json_t *v)
{
    if (json_is_integer(v)) return BP_ATTR_INT;
    if (aj_is_float(v)) return BP_ATTR_FLOAT;
    if (json_is_string(v)) return BP_ATTR_STRING;
    if (!json_is_array(v)) return BP_ATTR_NONE;
    bool real = false;
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_integer(e) && !aj_is_float(e)) return BP_ATTR_NONE;
        real |= aj_is_float(e);
    }
    return real ? BP_ATTR_FLOATS : BP_ATTR_INTS;
}

bp_status bp__attrs_read_json(bp_graph *g, int32_t op, const json_t *obj, const char *file, bp_error *err)
{
    const char *opn = bp__names_get(&g->onames, op);
    if (!json_is_object(obj))
        return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": \"attrs\" must be an object {\"name\": value}, not %s", file, opn,
                       bp__json_type(obj));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bp_attr x;
        memset(&x, 0, sizeof x);
        x.name = key;
        x.type = aj_type(v);
        size_t n = json_is_array(v) ? json_array_size(v) : 0;
        if (x.type == BP_ATTR_NONE || n > INT32_MAX)
            return bp__err(err, BP_ERR_INVALID, "%s: op \"%s\": attribute \"%.200s\" must be an integer, a number, a string or an array of numbers, not %s",
                           file, opn, key, bp__json_type(v));
        void *vals = n ? bp__alloc(&g->alloc, n * 8) : NULL;
        if (n && !vals) return bp__err(err, BP_ERR_NOMEM, "%s: op \"%s\": out of memory reading attribute \"%.200s\"", file, opn, key);
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(v, i);
            if (x.type == BP_ATTR_INTS) ((int64_t *)vals)[i] = json_integer_value(e);
            else ((float *)vals)[i] = aj_float(e);
        }
        x.n = (int)n;
        x.ints = vals;
        x.floats = vals;
        x.i = json_is_integer(v) ? json_integer_value(v) : 0;
        x.f = x.type == BP_ATTR_FLOAT ? aj_float(v) : 0;
        x.s = json_is_string(v) ? json_string_value(v) : NULL;
        if (x.s) x.n = (int)strlen(x.s);
        bp_status s = bp_graph_add_op_attr(g, op, &x, err);
        bp__free(&g->alloc, vals, n * 8);
        if (s) return s;
    }
    return BP_OK;
}

/* ---------------------------------------------------------------- writing */

/* The shortest decimal that reads back as f, with a '.' or an exponent. */
static void aj_write_float(FILE *out, float f)
{
    if (isnan(f)) { fputs("null", out); return; }
    if (isinf(f)) { fputs(f > 0 ? "1e39" : "-1e39", out); return; }
    char buf[40];
    for (int p = 6; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f) break;
    }
    fputs(buf, out);
    if (!strpbrk(buf, ".eEn")) fputs(".0", out);
}

void bp__attrs_write_json(const bp_graph *g, int32_t op, FILE *f)
{
    int n = bp_graph_op_attr_count(g, op);
    if (!n) return;
    fputs(", \"attrs\": {", f);
    for (int i = 0; i < n; i++) {
        bp_attr x;
        bp_graph_op_attr_get(g, op, i, &x);
        if (i) fputs(", ", f);
        bp__json_str(f, x.name);
        fputs(": ", f);
        switch (x.type) {
        case BP_ATTR_INT: fprintf(f, "%lld", (long long)x.i); break;
        case BP_ATTR_FLOAT: aj_write_float(f, x.f); break;
        case BP_ATTR_STRING: bp__json_str(f, x.s); break;
        default:
            fputc('[', f);
            for (int k = 0; k < x.n; k++) {
                if (k) fputs(", ", f);
                if (x.type == BP_ATTR_INTS) fprintf(f, "%lld", (long long)x.ints[k]);
                else aj_write_float(f, x.floats[k]);
            }
            fputc(']', f);
        }
    }
    fputc('}', f);
}
