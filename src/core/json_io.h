/*
 * json_io.h — loading JSON documents with jansson (json_load.c), for every
 * reader of JSON files: graphs, plans, config files, histories.
 * Module-private; not installed.
 */
#ifndef BP_JSON_IO_H
#define BP_JSON_IO_H

#include "core/internal.h"

#include <jansson.h>

/* Parses a whole file ("-" = stdin) without holding its text in memory.
 * Messages start with the path; malformed JSON gives "PATH:LINE:COL:", an
 * integer over 2^63-1 also names the object ("name") it is in. */
bp_status bp__json_load_file(const char *path, const bp_allocator *a, json_t **root, bp_error *err);
/* The same for a text in memory; `file` is used in messages. */
bp_status bp__json_load_text(const char *text, size_t len, const char *file, json_t **root, bp_error *err);
/* The same with explicit limits (NULL = defaults): nesting depth and size
 * are checked by an iterative pre-scan before jansson's recursive parser. */
bp_status bp__json_load_file_lim(const char *path, const bp_allocator *a, const bp_limits *lim, json_t **root, bp_error *err);
bp_status bp__json_load_text_lim(const char *text, size_t len, const char *file, const bp_limits *lim, json_t **root,
                                 bp_error *err);
/* BP_ERR_INVALID "FILE: WHERE: unknown key "K" (did you mean "N"?)" for the
 * first key of obj not in known[] (NULL-terminated); BP_OK when all are. */
bp_status bp__json_check_keys(const json_t *obj, const char *const *known, const char *file, const char *where,
                              bp_error *err);
/* Records that jansson failed to allocate n bytes on this thread (and sets
 * errno to ENOMEM): the loader then reports "out of memory" (json_load.c).
 * For allocation hooks of test builds (fault.c).  json_oom.c. */
void bp__json_note_oom(size_t n);
/* The size recorded on this thread since the last call (0: none), cleared. */
size_t bp__json_take_oom(void);
/* "a string", "an integer", ... for messages. */
const char *bp__json_type(const json_t *v);

#endif /* BP_JSON_IO_H */
