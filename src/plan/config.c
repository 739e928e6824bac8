/*
 * config.c — every planner and runtime knob in one struct, read from a JSON
 * object, overridable key by key from strings (command-line flags), written
 * back as JSON, plus the presets.
 *
 * One table drives everything: each key has a type and a setter that takes
 * a jansson value, so the file reader and the flag path (which turns its
 * string into a value of the key's type first) check values the same way.
 * Precedence is applied by call order: defaults, preset, file keys, flags.
 * A file's "preset" key is applied before its other keys whatever their
 * order in the file.  Unknown keys and wrong types are errors naming the key.
 */
#include "core/json_io.h"
#include "plan/plan_internal.h"
#include "bufplan_dyn.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const cfg_policy_names[BP_DYN_POLICY_COUNT] = {"conservative", "cover", "error"};

const char *bp_dyn_policy_name(bp_dyn_policy p)
{
    return (unsigned)p < BP_DYN_POLICY_COUNT ? cfg_policy_names[p] : "?";
}

int bp_dyn_policy_parse(const char *s, bp_dyn_policy *out)
{
    for (int i = 0; i < BP_DYN_POLICY_COUNT; i++)
        if (!strcmp(s, cfg_policy_names[i])) { *out = (bp_dyn_policy)i; return 0; }
    return -1;
}

void bp_config_init(bp_config *c)
{
    memset(c, 0, sizeof *c);
    bp_plan_options_init(&c->plan);
    c->replan = 1;
    c->warmup_runs = 16;
    c->dynamic_policy = BP_DYN_CONSERVATIVE;
    c->compaction_interval = 4096;   /* the pool's default */
    c->cache_verify = 0;   /* the structural checks always run; bp_verify on request */
    bp_limits_init(&c->limits);
}

/* ----------------------------------------------------------------- presets */

static const char *const cfg_preset_names[] = {"inference", "training", NULL};

const char *const *bp_config_presets(void) { return cfg_preset_names; }

bp_status bp_config_preset(bp_config *c, const char *name, bp_error *err)
{
    if (!name) return bp__err(err, BP_ERR_USAGE, "preset: no name");
    if (!strcmp(name, "inference")) {
        /* Peak memory first: `best` (its portfolio holds the `seed` orders
         * weighted towards freeing bytes early, so it is never above them or
         * the defaults), re-plan every new shape during a long warm-up. */
        c->plan.sched = BP_SCHED_BEST;
        c->plan.alpha = 0.9;
        c->plan.beta = 0.1;
        c->plan.assign = BP_ASSIGN_BESTFIT;
        c->plan.fence_aware = 0;
        c->replan = 1;
        c->warmup_runs = 32;
    } else if (!strcmp(name, "training")) {
        /* Throughput: `best`'s order and bestfit (never a higher peak than
         * the defaults; the fence-aware assignment, config key fence_aware,
         * costs up to ~45% more arena on the generated graphs), a short
         * warm-up. */
        c->plan.sched = BP_SCHED_BEST;
        c->plan.alpha = 0.4;
        c->plan.beta = 0.6;
        c->plan.assign = BP_ASSIGN_BESTFIT;
        c->plan.fence_aware = 0;
        c->replan = 1;
        c->warmup_runs = 4;
    } else {
        return bp__err(err, BP_ERR_USAGE, "unknown preset \"%s\" (inference or training)", name);
    }
    snprintf(c->preset, sizeof c->preset, "%s", name);
    return BP_OK;
}

/* ----------------------------------------------------------------- buckets */

static bp_status cfg_set_bucket(bp_config *c, const char *where, const char *sym, const int64_t *b, int n, bp_error *err)
{
    if (!*sym) return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": empty symbol name", where);
    if (strlen(sym) >= BP_SYM_NAME_MAX)
        return bp__err(err, BP_ERR_LIMIT, "%s: key \"buckets\": symbol name \"%.40s...\" is too long", where, sym);
    if (n < 1 || n > BP_MAX_BUCKETS)
        return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": symbol \"%s\" needs 1 to %d bounds, not %d", where, sym, BP_MAX_BUCKETS, n);
    for (int i = 0; i < n; i++) {
        if (b[i] <= 0) return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": symbol \"%s\": bound %lld is not positive", where, sym, (long long)b[i]);
        if (i && b[i] <= b[i - 1])
            return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": symbol \"%s\": bounds must increase (%lld after %lld)", where, sym,
                           (long long)b[i], (long long)b[i - 1]);
    }
    int k = 0;
    while (k < c->n_buckets && strcmp(c->buckets[k].sym, sym)) k++;
    if (k == c->n_buckets) {
        if (k >= BP_MAX_BUCKET_SYMS) return bp__err(err, BP_ERR_LIMIT, "%s: key \"buckets\": more than %d symbols", where, BP_MAX_BUCKET_SYMS);
        c->n_buckets++;
    }
    bp_bucket_spec *s = &c->buckets[k];
    snprintf(s->sym, sizeof s->sym, "%s", sym);
    s->n = n;
    memcpy(s->bound, b, (size_t)n * sizeof *b);
    return BP_OK;
}

static bp_status cfg_buckets_str(bp_config *c, const char *where, const char *spec, bp_error *err)
{
    /* SYM=B1,B2;SYM2=B1 */
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq) return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": \"%.*s\" is not SYM=B1,B2,...", where, (int)len, p);
        char sym[BP_SYM_NAME_MAX];
        size_t sl = (size_t)(eq - p);
        if (sl >= sizeof sym) return bp__err(err, BP_ERR_LIMIT, "%s: key \"buckets\": symbol name too long", where);
        memcpy(sym, p, sl);
        sym[sl] = 0;
        int64_t b[BP_MAX_BUCKETS];
        int n = 0;
        const char *q = eq + 1, *stop = p + len;
        while (q < stop) {
            char *e;
            errno = 0;
            long long v = strtoll(q, &e, 10);
            if (errno || e == q || e > stop || (e < stop && *e != ','))
                return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": \"%.*s\": bounds must be integers separated by commas", where, (int)len, p);
            if (n >= BP_MAX_BUCKETS) return bp__err(err, BP_ERR_LIMIT, "%s: key \"buckets\": more than %d bounds for \"%s\"", where, BP_MAX_BUCKETS, sym);
            b[n++] = v;
            q = e < stop ? e + 1 : e;
        }
        bp_status s = cfg_set_bucket(c, where, sym, b, n, err);
        if (s) return s;
        p = end ? end + 1 : p + len;
    }
    return BP_OK;
}

bp_status bp_config_add_buckets(bp_config *c, const char *spec, bp_error *err)
{
    if (!spec || !*spec) return bp__err(err, BP_ERR_USAGE, "--buckets: empty spec (SYM=B1,B2,...)");
    return cfg_buckets_str(c, "--buckets", spec, err);
}

int64_t bp_config_bucket(const bp_config *c, const char *sym, int64_t v)
{
    for (int k = 0; k < c->n_buckets; k++) {
        if (strcmp(c->buckets[k].sym, sym)) continue;
        for (int i = 0; i < c->buckets[k].n; i++)
            if (c->buckets[k].bound[i] >= v) return c->buckets[k].bound[i];
        return v;
    }
    return v;
}

/* ------------------------------------------------------------- key table */

typedef enum { CT_STR, CT_NUM, CT_INT, CT_BOOL, CT_BYTES, CT_OBJ } cfg_type;

typedef bp_status (*cfg_setter)(bp_config *c, const char *where, const char *key, json_t *v, bp_error *err);

typedef struct cfg_key {
    const char *name;
    cfg_type type;
    cfg_setter set;
} cfg_key;

static bp_status cfg_bad(bp_error *err, const char *where, const char *key, const char *want, const json_t *v)
{
    return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": expected %s, got %s", where, key, want, bp__json_type(v));
}

static bp_status cfg_range(bp_error *err, const char *where, const char *key, const char *what)
{
    return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": %s", where, key, what);
}

static bp_status set_scheduler(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    if (!json_is_string(v)) return cfg_bad(err, w, k, "a string", v);
    if (bp_sched_parse(json_string_value(v), &c->plan.sched))
        return cfg_range(err, w, k, "unknown scheduler (given kahn dfs list lpmf seed best optimal)");
    return BP_OK;
}

static bp_status set_assigner(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    if (!json_is_string(v)) return cfg_bad(err, w, k, "a string", v);
    if (bp_assign_parse(json_string_value(v), &c->plan.assign))
        return cfg_range(err, w, k, "unknown assigner (naive color bestfit search)");
    return BP_OK;
}

static bp_status get_num(const char *w, const char *k, json_t *v, double lo, double hi, double *out, bp_error *err)
{
    if (!json_is_number(v)) return cfg_bad(err, w, k, "a number", v);
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi)
        return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": %g is out of range (%g..%g)", w, k, d, lo, hi);
    *out = d + 0.0; /* -0.0 becomes 0.0, so the config writes back as it reads */
    return BP_OK;
}

static bp_status get_int(const char *w, const char *k, json_t *v, long long lo, long long hi, long long *out, bp_error *err)
{
    if (!json_is_integer(v)) return cfg_bad(err, w, k, "an integer", v);
    long long d = json_integer_value(v);
    if (d < lo || d > hi) return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": %lld is out of range (%lld..%lld)", w, k, d, lo, hi);
    *out = d;
    return BP_OK;
}

static bp_status get_bool(const char *w, const char *k, json_t *v, int *out, bp_error *err)
{
    if (!json_is_boolean(v)) return cfg_bad(err, w, k, "true or false", v);
    *out = json_is_true(v);
    return BP_OK;
}

static bp_status set_alpha(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return get_num(w, k, v, 0, 1e6, &c->plan.alpha, err);
}

static bp_status set_beta(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return get_num(w, k, v, 0, 1e6, &c->plan.beta, err);
}

static bp_status set_time_limit(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return get_num(w, k, v, 0, 1e9, &c->plan.time_limit, err);
}

/* Bytes: an integer, or a string "512", "64K", "1.5M", "2GiB" (powers of 1024). */
bool bp_parse_bytes(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-') return false;
    errno = 0;
    char *end;
    /* Plain integers exactly (a double would lose digits above 2^53). */
    unsigned long long iv = strtoull(s, &end, 10);
    if (end != s && !*end) {
        if (errno || iv > (unsigned long long)INT64_MAX) return false;
        *out = iv;
        return true;
    }
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0) return false;
    double mul = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': mul = 1024.0; break;
        case 'm': case 'M': mul = 1048576.0; break;
        case 'g': case 'G': mul = 1073741824.0; break;
        case 't': case 'T': mul = 1099511627776.0; break;
        default: return false;
        }
        end++;
        if (*end == 'i') end++;
        if (*end == 'B' || *end == 'b') end++;
        if (*end) return false;
    }
    double b = v * mul;
    if (b >= 9223372036854775807.0) return false; /* budgets are written back as JSON integers */
    *out = (uint64_t)b;
    return true;
}

static bp_status get_bytes(const char *w, const char *k, json_t *v, uint64_t *out, bp_error *err)
{
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0) return cfg_range(err, w, k, "a byte count must not be negative");
        *out = (uint64_t)json_integer_value(v);
        return BP_OK;
    }
    if (!json_is_string(v)) return cfg_bad(err, w, k, "a byte count (an integer or a string such as \"2G\")", v);
    if (!bp_parse_bytes(json_string_value(v), out))
        return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": \"%s\" is not a byte count", w, k, json_string_value(v));
    return BP_OK;
}

static bp_status set_budget(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return get_bytes(w, k, v, &c->plan.budget, err);
}

static bp_status set_max_memory(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return get_bytes(w, k, v, &c->max_memory, err);
}

static bp_status set_max_seconds(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return get_num(w, k, v, 0, 1e6, &c->max_seconds, err);
}

/* "limits": an object {"KEY": N, ...} (N an integer or a byte string), or,
 * from a flag, "KEY=N,KEY=N".  Keys not named keep their values. */
static bp_status set_limits(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    if (json_is_string(v)) {
        const char *p = json_string_value(v);
        while (*p) {
            const char *eq = strchr(p, '='), *end = strchr(p, ',');
            if (!end) end = p + strlen(p);
            char num[32];
            uint64_t n;
            if (!eq || eq > end || (size_t)(end - eq - 1) >= sizeof num)
                return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": expected KEY=N[,KEY=N...], got \"%s\"", w, k, json_string_value(v));
            memcpy(num, eq + 1, (size_t)(end - eq - 1));
            num[end - eq - 1] = 0;
            if (!bp_parse_bytes(num, &n)) return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": \"%s\" is not a number", w, k, num);
            bp_status s = bp__config_set_limit(c, w, p, (size_t)(eq - p), n, err);
            if (s) return s;
            p = *end ? end + 1 : end;
        }
        return BP_OK;
    }
    if (!json_is_object(v)) return cfg_bad(err, w, k, "an object {\"max_ops\": N, ...}", v);
    const char *name;
    json_t *x;
    json_object_foreach(v, name, x) {
        uint64_t n = 0;
        bp_status s = get_bytes(w, name, x, &n, err);
        if (!s) s = bp__config_set_limit(c, w, name, strlen(name), n, err);
        if (s) return s;
    }
    return BP_OK;
}

static bp_status set_alignment(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    long long a = 0;
    bp_status s = get_int(w, k, v, 1, (long long)1 << 40, &a, err);
    if (s) return s;
    if (a & (a - 1)) return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": %lld is not a power of two", w, k, a);
    c->plan.alignment = (uint64_t)a;
    return BP_OK;
}

static bp_status set_seed(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    long long a = 0;
    bp_status s = get_int(w, k, v, 0, INT64_MAX, &a, err);
    if (!s) c->plan.seed = (uint64_t)a;
    return s;
}

static bp_status set_alias(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    int b = 0;
    bp_status s = get_bool(w, k, v, &b, err);
    if (!s) c->plan.no_alias = !b;
    return s;
}

#define CFG_BOOL_SETTER(fn, field) \
    static bp_status fn(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err) \
    { return get_bool(w, k, v, &c->field, err); }
CFG_BOOL_SETTER(set_plan_inputs, plan.plan_inputs)
CFG_BOOL_SETTER(set_plan_constants, plan.plan_constants)
CFG_BOOL_SETTER(set_fence_aware, plan.fence_aware)
CFG_BOOL_SETTER(set_replan, replan)
CFG_BOOL_SETTER(set_cache_verify, cache_verify)
CFG_BOOL_SETTER(set_concat_inplace, plan.concat_inplace)

static bp_status set_threads(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    long long a = 0;
    bp_status s = get_int(w, k, v, 1, 1024, &a, err);
    if (!s) c->plan.threads = (int)a;
    return s;
}

static bp_status set_warmup(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    long long a = 0;
    bp_status s = get_int(w, k, v, 0, INT32_MAX, &a, err);
    if (!s) c->warmup_runs = (int)a;
    return s;
}

static bp_status set_compaction(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    long long a = 0;
    bp_status s = get_int(w, k, v, 0, UINT32_MAX, &a, err);
    if (!s) c->compaction_interval = (uint32_t)a;
    return s;
}

static bp_status set_policy(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    if (!json_is_string(v)) return cfg_bad(err, w, k, "a string", v);
    if (bp_dyn_policy_parse(json_string_value(v), &c->dynamic_policy))
        return cfg_range(err, w, k, "unknown policy (conservative cover error)");
    return BP_OK;
}

/* A string or null key into dst[cap] (null: ""). */
static bp_status set_text(char *dst, size_t cap, const char *w, const char *k, json_t *v, const char *what, bp_error *err)
{
    if (json_is_null(v)) { dst[0] = 0; return BP_OK; }
    if (!json_is_string(v)) return cfg_bad(err, w, k, what, v);
    if (strlen(json_string_value(v)) >= cap) return cfg_range(err, w, k, "the value is too long");
    snprintf(dst, cap, "%s", json_string_value(v));
    return BP_OK;
}

static bp_status set_cache_dir(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return set_text(c->cache_dir, sizeof c->cache_dir, w, k, v, "a string or null", err);
}

static bp_status set_engine(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    return set_text(c->engine, sizeof c->engine, w, k, v, "a string (a profile name or file) or null", err);
}

/* "fallback": "recompute,offload", "recompute", "offload" or "none" (what
 * the planner may add when a budget is over the best order's arena). */
static bp_status set_fallback(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    if (!json_is_string(v)) return cfg_bad(err, w, k, "a string (\"recompute,offload\", \"recompute\", \"offload\" or \"none\")", v);
    if (!bp_fallback_parse(json_string_value(v), &c->plan.fallback))
        return cfg_range(err, w, k, "expected \"recompute,offload\", \"recompute\", \"offload\" or \"none\"");
    return BP_OK;
}

/* "host_bandwidth": bytes per second of an offload or a prefetch, > 0. */
static bp_status set_host_bandwidth(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    uint64_t b = 0;
    bp_status s = get_bytes(w, k, v, &b, err);
    if (s) return s;
    if (!b) return cfg_range(err, w, k, "a bandwidth must be above 0 bytes per second");
    c->plan.host_bandwidth = (double)b;
    return BP_OK;
}

static bp_status set_buckets(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    if (json_is_string(v)) return cfg_buckets_str(c, w, json_string_value(v), err);
    if (!json_is_object(v)) return cfg_bad(err, w, k, "an object {\"SYM\": [bounds...]}", v);
    c->n_buckets = 0; /* the file's object replaces earlier buckets */
    const char *sym;
    json_t *arr;
    json_object_foreach(v, sym, arr) {
        if (!json_is_array(arr))
            return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": symbol \"%s\": expected an array of integers, got %s", w, sym, bp__json_type(arr));
        int64_t b[BP_MAX_BUCKETS];
        size_t n = json_array_size(arr);
        if (n > BP_MAX_BUCKETS) return bp__err(err, BP_ERR_LIMIT, "%s: key \"buckets\": more than %d bounds for \"%s\"", w, BP_MAX_BUCKETS, sym);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(arr, i);
            if (!json_is_integer(e))
                return bp__err(err, BP_ERR_INVALID, "%s: key \"buckets\": symbol \"%s\": bound %zu: expected an integer, got %s", w, sym, i, bp__json_type(e));
            b[i] = json_integer_value(e);
        }
        bp_status s = cfg_set_bucket(c, w, sym, b, (int)n, err);
        if (s) return s;
    }
    return BP_OK;
}

static bp_status set_preset(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    if (json_is_null(v)) return BP_OK; /* as written by --show: no preset */
    if (!json_is_string(v)) return cfg_bad(err, w, k, "a string or null", v);
    bp_status s = bp_config_preset(c, json_string_value(v), err);
    if (s) return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": unknown preset \"%s\" (inference or training)", w, k, json_string_value(v));
    return BP_OK;
}

static bp_status set_format(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    (void)c;
    if (!json_is_string(v)) return cfg_bad(err, w, k, "a string", v);
    if (strcmp(json_string_value(v), "bufplan-config")) return cfg_range(err, w, k, "must be \"bufplan-config\"");
    return BP_OK;
}

static bp_status set_version(bp_config *c, const char *w, const char *k, json_t *v, bp_error *err)
{
    (void)c;
    long long a = 0;
    bp_status s = get_int(w, k, v, 1, 1, &a, err);
    if (s && json_is_integer(v)) return cfg_range(err, w, k, "this bufplan reads version 1");
    return s;
}

static const cfg_key cfg_keys[] = {
    {"format", CT_STR, set_format},
    {"version", CT_INT, set_version},
    {"preset", CT_STR, set_preset},
    {"scheduler", CT_STR, set_scheduler},
    {"alpha", CT_NUM, set_alpha},
    {"beta", CT_NUM, set_beta},
    {"time_limit", CT_NUM, set_time_limit},
    {"budget", CT_BYTES, set_budget},
    {"assigner", CT_STR, set_assigner},
    {"alignment", CT_INT, set_alignment},
    {"seed", CT_INT, set_seed},
    {"alias", CT_BOOL, set_alias},
    {"plan_inputs", CT_BOOL, set_plan_inputs},
    {"plan_constants", CT_BOOL, set_plan_constants},
    {"fence_aware", CT_BOOL, set_fence_aware},
    {"replan", CT_BOOL, set_replan},
    {"warmup_runs", CT_INT, set_warmup},
    {"dynamic_policy", CT_STR, set_policy},
    {"buckets", CT_OBJ, set_buckets},
    {"compaction_interval", CT_INT, set_compaction},
    {"threads", CT_INT, set_threads},
    {"cache_dir", CT_STR, set_cache_dir},
    {"cache_verify", CT_BOOL, set_cache_verify},
    {"concat_inplace", CT_BOOL, set_concat_inplace},
    {"engine", CT_STR, set_engine},
    {"fallback", CT_STR, set_fallback},
    {"host_bandwidth", CT_BYTES, set_host_bandwidth},
    {"limits", CT_OBJ, set_limits},
    {"max_memory", CT_BYTES, set_max_memory},
    {"max_seconds", CT_NUM, set_max_seconds},
};
#define CFG_N_KEYS (sizeof cfg_keys / sizeof cfg_keys[0])

static const char *const cfg_key_names[] = {
    "format", "version", "preset", "scheduler", "alpha", "beta", "time_limit", "budget", "assigner",
    "alignment", "seed", "alias", "plan_inputs", "plan_constants", "fence_aware", "replan",
    "warmup_runs", "dynamic_policy", "buckets", "compaction_interval", "threads", "cache_dir",
    "cache_verify", "concat_inplace", "engine", "fallback", "host_bandwidth", "limits", "max_memory", "max_seconds", NULL,
};

const char *const *bp_config_keys(void) { return cfg_key_names; }

static const cfg_key *cfg_find(const char *name)
{
    for (size_t i = 0; i < CFG_N_KEYS; i++)
        if (!strcmp(cfg_keys[i].name, name)) return &cfg_keys[i];
    return NULL;
}

static bp_status cfg_unknown(bp_error *err, const char *where, const char *key)
{
    return bp__err(err, BP_ERR_INVALID, "%s: unknown key \"%s\" (bufplan config --keys lists them)", where, key);
}

static bp_status cfg_parse(bp_config *c, const char *text, size_t len, const char *filename, const char *preset, bp_error *err);

bp_status bp_config_parse_json(bp_config *c, const char *text, size_t len, const char *filename, bp_error *err)
{
    return cfg_parse(c, text, len, filename, NULL, err);
}

/* preset != NULL replaces the file's "preset" key (a --preset flag wins). */
static bp_status cfg_parse(bp_config *c, const char *text, size_t len, const char *filename, const char *preset, bp_error *err)
{
    const char *where = filename ? filename : "config";
    json_t *root = NULL;
    bp_status s = bp__json_load_text(text, len, where, &root, err);
    if (s) return s;
    if (!json_is_object(root)) {
        s = bp__err(err, BP_ERR_INVALID, "%s: a config file is a JSON object, not %s", where, bp__json_type(root));
        json_decref(root);
        return s;
    }
    /* Work on a copy: a bad file leaves the caller's config unchanged. */
    bp_config tmp = *c;
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
        if (!cfg_find(k)) { s = cfg_unknown(err, where, k); goto out; }
    json_t *pre = json_object_get(root, "preset");
    if (pre && (s = set_preset(&tmp, where, "preset", pre, err))) goto out;
    if (preset && (s = bp_config_preset(&tmp, preset, err))) goto out;
    json_object_foreach(root, k, v) {
        if (!strcmp(k, "preset")) continue;
        if ((s = cfg_find(k)->set(&tmp, where, k, v, err))) goto out;
    }
    *c = tmp;
out:
    json_decref(root);
    return s;
}

bp_status bp_config_read(bp_config *c, const char *path, bp_error *err)
{
    return bp_config_read_preset(c, path, NULL, err);
}

bp_status bp_config_read_preset(bp_config *c, const char *path, const char *preset, bp_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    bp_status s = bp__read_file(path, &bp__libc_allocator, &buf, &len, err);
    if (s) return s;
    s = cfg_parse(c, buf, len, path, preset, err);
    bp__free(&bp__libc_allocator, buf, len + 1);
    return s;
}

static bool cfg_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "1", "on", "yes"}, *const no[] = {"false", "0", "off", "no"};
    for (int i = 0; i < 4; i++) {
        if (!strcmp(s, yes[i])) { *out = 1; return true; }
        if (!strcmp(s, no[i])) { *out = 0; return true; }
    }
    return false;
}

bp_status bp_config_set(bp_config *c, const char *key, const char *value, bp_error *err)
{
    if (!key || !value) return bp__err(err, BP_ERR_USAGE, "config: NULL key or value");
    const cfg_key *ck = cfg_find(key);
    char where[160];
    snprintf(where, sizeof where, "--%s", key);
    for (char *p = where; *p; p++) if (*p == '_') *p = '-';
    if (!ck) return cfg_unknown(err, "config", key);
    json_t *v = NULL;
    switch (ck->type) {
    case CT_STR: case CT_BYTES: case CT_OBJ:
        v = json_string(value);
        break;
    case CT_NUM: {
        char *end;
        errno = 0;
        double d = strtod(value, &end);
        if (errno || end == value || *end)
            return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": \"%s\" is not a number", where, key, value);
        v = json_real(d);
        break;
    }
    case CT_INT: {
        char *end;
        errno = 0;
        long long d = strtoll(value, &end, 10);
        if (errno || end == value || *end)
            return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": \"%s\" is not an integer", where, key, value);
        v = json_integer(d);
        break;
    }
    case CT_BOOL: {
        int b;
        if (!cfg_parse_bool(value, &b))
            return bp__err(err, BP_ERR_INVALID, "%s: key \"%s\": \"%s\" is not true or false", where, key, value);
        v = json_boolean(b);
        break;
    }
    }
    if (!v) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", where);
    bp_config tmp = *c;
    bp_status s = ck->set(&tmp, where, key, v, err);
    json_decref(v);
    if (!s) *c = tmp;
    return s;
}

bp_status bp_config_write_json(const bp_config *c, FILE *f, bp_error *err)
{
    if (!c || !f) return bp__err(err, BP_ERR_USAGE, "config: NULL argument");
    const bp_plan_options *p = &c->plan;
    char d1[32], d2[32], d3[32];
    fputs("{\n  \"format\": \"bufplan-config\",\n  \"version\": 1,\n  \"preset\": ", f);
    if (c->preset[0]) bp__json_str(f, c->preset); else fputs("null", f);
    fprintf(f, ",\n  \"scheduler\": \"%s\",\n  \"alpha\": %s,\n  \"beta\": %s,\n  \"time_limit\": %s,\n"
               "  \"budget\": %" PRIu64 ",\n  \"assigner\": \"%s\",\n  \"alignment\": %" PRIu64 ",\n  \"seed\": %" PRIu64 ",\n"
               "  \"alias\": %s,\n  \"plan_inputs\": %s,\n  \"plan_constants\": %s,\n  \"fence_aware\": %s,\n"
               "  \"replan\": %s,\n  \"warmup_runs\": %d,\n  \"dynamic_policy\": \"%s\",\n  \"buckets\": {",
            bp_sched_name(p->sched), bp__fmt_double(d1, p->alpha), bp__fmt_double(d2, p->beta), bp__fmt_double(d3, p->time_limit), p->budget, bp_assign_name(p->assign),
            p->alignment, p->seed, p->no_alias ? "false" : "true", p->plan_inputs ? "true" : "false",
            p->plan_constants ? "true" : "false", p->fence_aware ? "true" : "false", c->replan ? "true" : "false",
            c->warmup_runs, bp_dyn_policy_name(c->dynamic_policy));
    for (int k = 0; k < c->n_buckets; k++) {
        fputs(k ? ", " : "", f);
        bp__json_str(f, c->buckets[k].sym);
        fputs(": [", f);
        for (int i = 0; i < c->buckets[k].n; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)c->buckets[k].bound[i]);
        fputc(']', f);
    }
    fprintf(f, "},\n  \"compaction_interval\": %u,\n  \"threads\": %d,\n  \"cache_dir\": ", c->compaction_interval, p->threads);
    if (c->cache_dir[0]) bp__json_str(f, c->cache_dir); else fputs("null", f);
    fprintf(f, ",\n  \"cache_verify\": %s", c->cache_verify ? "true" : "false");
    fprintf(f, ",\n  \"concat_inplace\": %s", p->concat_inplace ? "true" : "false");
    fputs(",\n  \"engine\": ", f);
    if (c->engine[0]) bp__json_str(f, c->engine); else fputs("null", f);
    unsigned fb = p->fallback & (BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD);
    fprintf(f, ",\n  \"fallback\": \"%s\"", fb == (BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD) ? "recompute,offload"
                                              : fb == BP_FALLBACK_RECOMPUTE ? "recompute" : fb ? "offload" : "none");
    fprintf(f, ",\n  \"host_bandwidth\": %s", bp__fmt_double(d1, p->host_bandwidth));
    fputs(",\n  \"limits\": ", f);
    bp__config_write_limits(c, f);
    fprintf(f, ",\n  \"max_memory\": %" PRIu64 ",\n  \"max_seconds\": %s\n}\n", c->max_memory, bp__fmt_double(d1, c->max_seconds));
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "config: write error");
    return BP_OK;
}
