/* bufplan — dynamic shapes: configuration and presets, shape signatures,
 * the on-disk plan cache, the conservative branch and the warm-up planner.
 * Included by bufplan.h.  Design and file format: docs/DYNAMIC.md. */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_DYN_H
#define BUFPLAN_DYN_H

#include "bufplan_api.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- configuration */

/* What happens to a shape signature that has no plan once the planner is
 * frozen (or when re-planning is off). */
typedef enum bp_dyn_policy {
    BP_DYN_CONSERVATIVE = 0, /* the static part in the arena, the rest from the pool */
    BP_DYN_COVER,            /* the smallest known plan whose every symbol value is >=
                                the signature's (sizes only grow with a dimension);
                                conservative when there is none */
    BP_DYN_ERROR,            /* BP_ERR_UNSUPPORTED naming the signature */
    BP_DYN_POLICY_COUNT
} bp_dyn_policy;
BP_API const char *bp_dyn_policy_name(bp_dyn_policy p);
BP_API int bp_dyn_policy_parse(const char *s, bp_dyn_policy *out); /* 0 ok, -1 unknown */

#define BP_MAX_BUCKET_SYMS 16
#define BP_MAX_BUCKETS 32
#define BP_SYM_NAME_MAX 128

/* Buckets of one symbol: a value v is rounded up to the smallest bound >= v;
 * a value above every bound is kept as it is. */
typedef struct bp_bucket_spec {
    char sym[BP_SYM_NAME_MAX];
    int n;
    int64_t bound[BP_MAX_BUCKETS];  /* strictly increasing, > 0 */
} bp_bucket_spec;

/* Every planner and runtime knob (docs/DYNAMIC.md lists the JSON keys). */
typedef struct bp_config {
    bp_plan_options plan;         /* scheduler, assigner, alpha, beta, time_limit, budget,
                                     alignment, seed, aliasing, plan_inputs,
                                     plan_constants, fence_aware, threads */
    int replan;                   /* re-plan each new shape signature during warm-up */
    int warmup_runs;              /* runs that may re-plan; then the planner freezes.
                                     0 = until bp_planner_freeze() */
    bp_dyn_policy dynamic_policy;
    int n_buckets;
    bp_bucket_spec buckets[BP_MAX_BUCKET_SYMS];
    uint32_t compaction_interval; /* pool: merge free blocks every N deallocs */
    char cache_dir[1024];         /* plan cache directory, "" = none */
    int cache_verify;             /* also bp_verify plans loaded from the cache (default 0) */
    char preset[32];              /* the preset applied, "" = none */
    char engine[1024];            /* "engine": an engine profile's name or file, "" = default
                                     (the caller loads it: bp_engine_load) */
    /* Resource limits (the CLI's --limit, --max-memory, --max-seconds) */
    bp_limits limits;             /* "limits": {"max_ops": N, ...}: the readers' limits */
    uint64_t max_run_bytes;       /* "limits": {"max_run_bytes": N}: what `run` may reserve;
                                     0 = the machine's memory */
    uint64_t max_memory;          /* heap cap, bytes; 0 = none */
    double max_seconds;           /* time limit of a whole command; 0 = none */
} bp_config;

/* The defaults (docs/DYNAMIC.md). */
BP_API void bp_config_init(bp_config *c);
/* Applies a preset over c: "inference" or "training" (unknown -> BP_ERR_USAGE). */
BP_API bp_status bp_config_preset(bp_config *c, const char *name, bp_error *err);
/* NULL-terminated list of preset names. */
BP_API const char *const *bp_config_presets(void);
/* Applies a JSON config object over c: a "preset" key first, then every
 * other key.  Unknown keys and values of the wrong type are BP_ERR_INVALID
 * naming the key.  `filename` is used in messages (may be NULL). */
BP_API bp_status bp_config_parse_json(bp_config *c, const char *text, size_t len, const char *filename,
                                      bp_error *err);
BP_API bp_status bp_config_read(bp_config *c, const char *path, bp_error *err);
/* The same, with `preset` (if not NULL) in place of the file's "preset" key
 * (a --preset flag wins over the file's preset; the file's other keys still
 * win over both presets). */
BP_API bp_status bp_config_read_preset(bp_config *c, const char *path, const char *preset, bp_error *err);
/* Sets one key from a string, as a command-line flag does ("alpha", "0.9";
 * "buckets", "S=128,256"; "replan", "false").  Same key names as the file. */
BP_API bp_status bp_config_set(bp_config *c, const char *key, const char *value, bp_error *err);
/* Adds bucket specs "SYM=B1,B2,...[;SYM2=...]" (replacing a symbol's earlier spec). */
BP_API bp_status bp_config_add_buckets(bp_config *c, const char *spec, bp_error *err);
/* Writes the whole configuration as one JSON object (every key). */
BP_API bp_status bp_config_write_json(const bp_config *c, FILE *f, bp_error *err);
/* NULL-terminated list of the config keys. */
BP_API const char *const *bp_config_keys(void);
/* Rounds v up to the bucket of `sym` (v itself when there is none). */
BP_API int64_t bp_config_bucket(const bp_config *c, const char *sym, int64_t v);

/* ------------------------------------------------------ shape signatures */

#define BP_SIG_MAX 1024

/* The canonical text of a binding: "SYM=V,SYM=V" sorted by symbol name
 * (byte order).  BP_ERR_LIMIT when it does not fit in BP_SIG_MAX bytes,
 * BP_ERR_USAGE for a symbol given twice with different values. */
BP_API bp_status bp_signature(int n, const char *const *syms, const int64_t *vals, char out[BP_SIG_MAX],
                              bp_error *err);

/* A 128-bit hash of the graph's structure: tensor names, sizes or shapes
 * (symbols by name), dtypes, roles, views, ops (names, types, inputs,
 * outputs, costs) and in-place hints. */
BP_API void bp_graph_hash(const bp_graph *g, uint64_t out[2]);

/* ------------------------------------------------------------ plan cache */

typedef struct bp_plan_cache bp_plan_cache;

/* What identifies a cached plan.  Built by bp_cache_key(). */
typedef struct bp_cache_key {
    uint64_t graph[2];            /* bp_graph_hash */
    char signature[BP_SIG_MAX];   /* shape signature ("" = as the graph is) */
    char options[512];            /* canonical text of the planner options */
    char file[40];                /* hex digest of all of it + bufplan's version */
} bp_cache_key;

BP_API bp_status bp_cache_key_make(const bp_graph *g, const char *signature, const bp_plan_options *o,
                                   bp_cache_key *key, bp_error *err);
/* The same with a precomputed graph hash. */
BP_API bp_status bp_cache_key_make_hashed(const uint64_t graph_hash[2], const char *signature,
                                          const bp_plan_options *o, bp_cache_key *key, bp_error *err);

/* Opens (creating it if needed) a cache directory.  warnings: where bad cache
 * files are reported (NULL = stderr). */
BP_API bp_status bp_plan_cache_open(const char *dir, FILE *warnings, bp_plan_cache **out, bp_error *err);
BP_API void bp_plan_cache_close(bp_plan_cache *c);
/* Whether bp_verify checks every plan loaded (default on: a file is taken
 * only after its checksum, its key, structural checks that keep every tensor
 * inside the schedule and the arena, and bp_verify; off trusts a cache
 * directory nobody else can write). */
BP_API void bp_plan_cache_set_verify(bp_plan_cache *c, int on);
/* Looks a plan up.  Hit: BP_OK and *out set.  Miss: BP_OK and *out NULL; a
 * corrupt, truncated, foreign or mismatched file is a miss with a warning
 * (never trusted).  Errors only for bad arguments or out of memory. */
BP_API bp_status bp_plan_cache_get(bp_plan_cache *c, const bp_cache_key *key, const bp_graph *g,
                                   bp_plan **out, bp_error *err);
/* Stores a plan atomically (temp file in the directory, then rename). */
BP_API bp_status bp_plan_cache_put(bp_plan_cache *c, const bp_cache_key *key, const bp_graph *g,
                                   const bp_plan *p, bp_error *err);
/* get, and on a miss plan the graph and put the result.  *hit (may be NULL)
 * tells which. */
BP_API bp_status bp_plan_cache_plan(bp_plan_cache *c, const bp_graph *g, const char *signature,
                                    const bp_plan_options *o, bp_plan **out, int *hit, bp_error *err);
/* The file a key maps to ("DIR/HEX.bpc"). */
BP_API const char *bp_plan_cache_file(const bp_plan_cache *c, const bp_cache_key *key, char *buf, size_t cap);

typedef struct bp_plan_cache_stats {
    uint64_t hits, misses, bad_files, writes, write_errors;
    double load_seconds, verify_seconds;   /* totals over hits */
} bp_plan_cache_stats;
BP_API void bp_plan_cache_get_stats(const bp_plan_cache *c, bp_plan_cache_stats *out);
/* The last warning ("" when none). */
BP_API const char *bp_plan_cache_last_warning(const bp_plan_cache *c);
/* The checksum of cache files (docs/DYNAMIC.md). */
BP_API uint64_t bp_cache_checksum(const void *data, size_t n);

/* ------------------------------------------------------ conservative branch */

/* Static vs dynamic memory of a plan of a graph with unbound symbols.
 * `concrete` (may be NULL) is the same graph with every symbol bound (same
 * tensor names); it gives the run-time sizes of the dynamic tensors. */
typedef struct bp_dyn_report {
    int32_t n_static, n_dynamic;     /* tensors produced by ops: in the arena / dynamic */
    uint64_t static_bytes;           /* naive bytes of the planned (static) tensors */
    uint64_t arena_bytes;            /* the plan's arena */
    uint64_t dynamic_bytes;          /* sum of the dynamic tensors' run-time sizes */
    uint64_t dynamic_peak_bytes;     /* max over the plan's events of the live dynamic
                                        bytes, each rounded up to `round` (the pool's
                                        granularity) */
    uint64_t total_peak_bytes;       /* arena + dynamic peak */
} bp_dyn_report;

BP_API bp_status bp_dyn_analyze(const bp_graph *g, const bp_plan *p, const bp_graph *concrete, uint64_t round,
                                bp_dyn_report *r, bp_error *err);

/* Copies a graph (with its bound symbols) and binds n more; finalized. */
BP_API bp_status bp_graph_clone_bind(const bp_graph *g, int n, const char *const *syms, const int64_t *vals,
                                     bp_graph **out, bp_error *err);
/* The symbols a binding must give: those in the dims of graph inputs and
 * weights that are not bound yet (all unbound symbols when `all`).  Returns
 * the count; names[i] point into the graph. */
BP_API int bp_graph_free_symbols(const bp_graph *g, int all, const char **names, int max);

/* --------------------------------------------------------- warm-up planner */

/* Builds the graph for a binding of the symbols (every required symbol is
 * given).  The default clones the planner's graph and binds; for ONNX,
 * bp_planner_new_onnx re-imports the model with the dims bound. */
typedef bp_status (*bp_graph_source_fn)(void *ctx, int n, const char *const *syms, const int64_t *vals,
                                        bp_graph **out, bp_error *err);

typedef struct bp_planner bp_planner;

/* g: the graph with symbolic dims (finalized; must outlive the planner).
 * cfg may be NULL (defaults); it is copied.  With cfg->cache_dir set, plans
 * are also looked up in and saved to that directory. */
BP_API bp_status bp_planner_new(const bp_graph *g, const bp_config *cfg, bp_planner **out, bp_error *err);
/* Reads the ONNX model (opts may be NULL) and plans its bindings by
 * re-importing it with the symbols bound (ONNX shapes are inferred, so
 * derived dimensions follow). */
BP_API bp_status bp_planner_new_onnx(const char *path, const bp_onnx_options *opts, const bp_config *cfg,
                                     bp_planner **out, bp_error *err);
BP_API void bp_planner_free(bp_planner *pl);
/* Replaces the source of concrete graphs. */
BP_API void bp_planner_set_source(bp_planner *pl, bp_graph_source_fn fn, void *ctx);
/* The graph with symbolic dims. */
BP_API const bp_graph *bp_planner_graph(const bp_planner *pl);
/* The symbols a run must bind; returns the count. */
BP_API int bp_planner_symbols(const bp_planner *pl, const char **names, int max);

typedef enum bp_dyn_how {
    BP_DYN_REPLANNED = 0,   /* planned now for this signature (warm-up) */
    BP_DYN_MEMORY_HIT,      /* planned earlier in this process */
    BP_DYN_DISK_HIT,        /* loaded from the plan cache (warm-up) */
    BP_DYN_RAN_CONSERVATIVE,/* static part planned, dynamic tensors from the pool */
    BP_DYN_COVERED          /* a plan of a larger signature (policy cover) */
} bp_dyn_how;
BP_API const char *bp_dyn_how_name(bp_dyn_how h);

/* What to run for one set of concrete shapes.  Pointers stay valid until
 * the planner is freed (conservative: until the next call). */
typedef struct bp_dyn_result {
    bp_dyn_how how;
    const bp_graph *graph;     /* the graph `plan` belongs to */
    const bp_plan *plan;
    const bp_graph *concrete;  /* the graph at the actual (bucketed) shapes */
    char signature[BP_SIG_MAX];/* after bucketing */
    bp_dyn_report report;      /* arena, dynamic peak (0 for a static plan) */
    const bp_graph *actual;    /* the graph at the shapes as given (before bucketing; the
                                  same as concrete when no bucket rounded a value): the
                                  shapes kernels compute on (bp_exec_set_shapes) */
} bp_dyn_result;

/* One run's shapes, as symbol values (every symbol of bp_planner_symbols). */
BP_API bp_status bp_planner_get(bp_planner *pl, int n, const char *const *syms, const int64_t *vals,
                                bp_dyn_result *res, bp_error *err);
/* The same from input shapes: each named tensor's symbolic dims give the
 * symbol values (they must agree; static dims must match). */
BP_API bp_status bp_planner_get_shapes(bp_planner *pl, int n, const char *const *tensors, const int *ranks,
                                       const int64_t *const *dims, bp_dyn_result *res, bp_error *err);
/* Ends warm-up: from now on no signature is planned again. */
BP_API void bp_planner_freeze(bp_planner *pl);
BP_API int bp_planner_frozen(const bp_planner *pl);

typedef struct bp_planner_stats {
    uint64_t runs, replans, memory_hits, disk_hits, conservative_runs, covered_runs;
    int32_t n_plans;            /* signatures with a static plan in memory */
    double plan_seconds;        /* total time spent planning (warm-up) */
} bp_planner_stats;
BP_API void bp_planner_get_stats(const bp_planner *pl, bp_planner_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_DYN_H */
