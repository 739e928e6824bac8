/*
 * config_limits.c — the resource limits of a config file: the "limits"
 * object (the fields of bp_limits, and max_run_bytes for `bufplan run`),
 * one table from key to field, range checks as `--limit KEY=N` makes them,
 * and the object written back.  config.c parses the JSON and calls these.
 */
#include "plan/plan_internal.h"
#include "bufplan_dyn.h"

#include <inttypes.h>
#include <string.h>

/* Each limit key: a uint64_t or a uint32_t field (max: the largest value). */
typedef struct cl_key { const char *name; size_t off; int u32; uint64_t max; } cl_key;
#define CL_U64(f) {#f, offsetof(bp_config, limits.f), 0, UINT64_MAX}
#define CL_U32(f, m) {#f, offsetof(bp_config, limits.f), 1, m}
static const cl_key cl_keys[] = {
    CL_U64(max_tensors), CL_U64(max_ops), CL_U64(max_name_len), CL_U32(max_rank, 255), CL_U32(max_json_depth, UINT32_MAX),
    CL_U32(max_proto_depth, UINT32_MAX), CL_U64(max_tensor_bytes), CL_U64(max_total_bytes), CL_U64(max_file_bytes),
    {"max_run_bytes", offsetof(bp_config, max_run_bytes), 0, UINT64_MAX},
};
#define CL_N (sizeof cl_keys / sizeof cl_keys[0])

bp_status bp__config_set_limit(bp_config *c, const char *where, const char *key, size_t key_len, uint64_t n, bp_error *err)
{
    for (size_t i = 0; i < CL_N; i++) {
        if (strlen(cl_keys[i].name) != key_len || strncmp(cl_keys[i].name, key, key_len)) continue;
        if (!n && i < CL_N - 1)   /* max_run_bytes 0: the machine's memory */
            return bp__err(err, BP_ERR_INVALID, "%s: key \"limits\": %s must be at least 1", where, cl_keys[i].name);
        if (n > cl_keys[i].max)
            return bp__err(err, BP_ERR_INVALID, "%s: key \"limits\": %s %" PRIu64 " is too large (at most %" PRIu64 ")", where,
                           cl_keys[i].name, n, cl_keys[i].max);
        char *f = (char *)c + cl_keys[i].off;
        if (cl_keys[i].u32) { uint32_t v = (uint32_t)n; memcpy(f, &v, sizeof v); }
        else memcpy(f, &n, sizeof n);
        return BP_OK;
    }
    return bp__err(err, BP_ERR_INVALID,
                   "%s: key \"limits\": unknown limit \"%.*s\" (max_tensors max_ops max_name_len max_rank max_json_depth "
                   "max_proto_depth max_tensor_bytes max_total_bytes max_file_bytes max_run_bytes)",
                   where, key_len > 64 ? 64 : (int)key_len, key);
}

void bp__config_write_limits(const bp_config *c, FILE *f)
{
    fputs("{", f);
    for (size_t i = 0; i < CL_N; i++) {
        const char *p = (const char *)c + cl_keys[i].off;
        uint64_t v = 0;
        if (cl_keys[i].u32) { uint32_t w; memcpy(&w, p, sizeof w); v = w; }
        else memcpy(&v, p, sizeof v);
        fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", cl_keys[i].name, v);
    }
    fputs("}", f);
}
