/* bufplan — assign API (instances, CSV); included by bufplan.h.
 *
 * An instance is a list of half-open intervals [lower, upper) with sizes, as
 * in MiniMalloc's CSV format (docs/FORMATS.md, "MiniMalloc CSV"), plus the
 * ids and any extra columns of the file so it can be written back. */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_ASSIGN_H
#define BUFPLAN_ASSIGN_H

#include "bufplan_api.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct bp_instance {
    size_t n;                /* rows */
    bp_interval *iv;         /* n intervals (alignment 0, fixed_offset
                                BP_NO_OFFSET unless the file had them) */
    char **ids;              /* n ids, as written in the file */
    /* The file's columns, for writing the rows back. */
    size_t n_cols;
    char **col_names;        /* n_cols header names */
    char **cells;            /* n * n_cols cells, row-major, unquoted text */
    size_t *lines;           /* n: the file line of each row (for messages) */
    int has_alignment, has_offset;  /* the file had these columns */
    int has_end;             /* the file gave inclusive `end` (upper = end + 1) */
    uint64_t capacity;       /* from a file name like NAME.1048576.csv, else 0 */
    /* private */
    bp_allocator alloc;
    char *text_; size_t text_size_;
} bp_instance;

/* Reads a MiniMalloc CSV file: a header naming at least id, lower, upper,
 * size (also accepted: begin/start for lower, buffer/buffer_id for id, end
 * for an inclusive upper), optionally alignment and offset; other columns
 * are kept as text.  Ids are strings and must be unique.  Zero sizes are
 * allowed (any lifetime).  An `offset` cell pre-places the buffer there
 * (fixed_offset); an empty one leaves it free.  Errors (BP_ERR_INVALID)
 * name FILE:LINE and the row's id.
 * alloc may be NULL (libc). */
BP_API bp_status bp_instance_read_csv(const char *path, const bp_allocator *alloc,
                                      bp_instance **out, bp_error *err);
/* Parses CSV text; `filename` is only used in messages. */
BP_API bp_status bp_instance_parse_csv(const char *text, size_t len, const char *filename,
                                       const bp_allocator *alloc, bp_instance **out, bp_error *err);
/* Writes the instance's rows (all original columns) with an `offset` column
 * set to offsets[i] (replacing an existing offset column).  offsets may be
 * NULL to write the rows back unchanged.  path "-" = stdout; atomic. */
BP_API bp_status bp_instance_write_csv(const bp_instance *inst, const uint64_t *offsets,
                                       const char *path, bp_error *err);
BP_API bp_status bp_instance_write_csv_file(const bp_instance *inst, const uint64_t *offsets,
                                            FILE *f, bp_error *err);
BP_API void bp_instance_free(bp_instance *inst);

/* Independent verifier for an assignment: an O(n log n) sweep over time that
 * checks no two time-overlapping intervals (half-open) overlap in bytes,
 * every offset is a multiple of the interval's alignment, fixed offsets are
 * kept, and offset + size <= arena (arena 0 = no limit).  Zero-size
 * intervals take no bytes.  Returns BP_OK or BP_ERR_VERIFY naming the first
 * offending intervals. */
BP_API bp_status bp_intervals_check(const bp_interval *iv, size_t n, const uint64_t *offsets,
                                    uint64_t arena, bp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_ASSIGN_H */
