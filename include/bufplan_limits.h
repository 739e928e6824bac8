/* bufplan — resource limits for untrusted input; included by bufplan.h.
 *
 * Every reader (JSON graph, ONNX, MiniMalloc CSV, plan JSON) and the graph
 * builder check these before they allocate, so a hostile or malformed file
 * costs memory and time in proportion to what the limits allow, and fails
 * with BP_ERR_LIMIT and a message naming the file, the limit and how to
 * raise it.  The defaults (bp_limits_init) are far above real models; a
 * caller that needs more raises a field and passes the struct to the *_lim
 * functions below or to bp_graph_set_limits().  SECURITY.md lists them. */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_LIMITS_H
#define BUFPLAN_LIMITS_H

#include "bufplan_api.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct bp_limits {
    uint64_t max_tensors;      /* tensors in a graph, rows of a CSV;  default 2^26 (67,108,864) */
    uint64_t max_ops;          /* ops in a graph, nodes of a model;   default 2^26 */
    uint64_t max_name_len;     /* bytes of a tensor, op, type or symbol name; default 4096 */
    uint32_t max_rank;         /* dimensions per tensor;              default 64 (at most 255) */
    uint32_t max_json_depth;   /* nesting of JSON arrays/objects;     default 64 */
    uint32_t max_proto_depth;  /* nesting of protobuf messages (ONNX subgraphs, types); default 64 */
    uint64_t max_tensor_bytes; /* declared bytes of one tensor;        default 2^63-1 */
    uint64_t max_total_bytes;  /* bytes of all tensors added up, checked when a graph is planned
                                  or scheduled; default 2^56 (64 PiB), so that sums of aligned
                                  sizes never overflow */
    uint64_t max_file_bytes;   /* size of a JSON or CSV text;         default 2^32 (4 GiB) */
} bp_limits;

/* The defaults above. */
BP_API void bp_limits_init(bp_limits *l);

/* Sets the limits the builder enforces on g from now on (the graph starts
 * with the defaults).  BP_ERR_USAGE for a NULL argument or a rank over 255. */
BP_API bp_status bp_graph_set_limits(bp_graph *g, const bp_limits *l, bp_error *err);
/* The limits in force for g. */
BP_API void bp_graph_get_limits(const bp_graph *g, bp_limits *out);

/* The readers with explicit limits (NULL = defaults).  The plain functions
 * (bp_graph_read, bp_graph_parse_json, bp_instance_parse_csv, ...) use the
 * defaults; bp_onnx_options.limits does the same for ONNX, and the plan
 * reader uses the limits of the graph it reads a plan for. */
BP_API bp_status bp_graph_read_lim(const char *path, const bp_limits *lim, const bp_allocator *alloc,
                                   bp_graph **out, bp_error *err);
BP_API bp_status bp_graph_parse_json_lim(const char *text, size_t len, const char *filename, const bp_limits *lim,
                                         const bp_allocator *alloc, bp_graph **out, bp_error *err);
BP_API bp_status bp_instance_parse_csv_lim(const char *text, size_t len, const char *filename, const bp_limits *lim,
                                           const bp_allocator *alloc, bp_instance **out, bp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_LIMITS_H */
