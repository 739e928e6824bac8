/*
 * Internal declarations shared by the modules of the library.  Not installed.
 *
 * Data layout (docs/ARCHITECTURE.md): dense integer ids, arrays of structs, names interned
 * once in a string pool with an open-addressing hash index, consumers in CSR
 * form (the graph's layout is graph/graph_internal.h, the plan's
 * plan/plan_internal.h).  Prefixes: bp__mem and bp__names (util.c), bp__err,
 * bp__out (outfile.c), bp__json (json_load.c), bp__limits (limits.c).
 */
#ifndef BP_INTERNAL_H
#define BP_INTERNAL_H

#include "bufplan.h"
#include "bufplan_limits.h"

#include <stdarg.h>
#include <stdbool.h>

/* ------------------------------------------------------------ allocation */

extern const bp_allocator bp__libc_allocator;

void *bp__alloc(const bp_allocator *a, size_t size);
void *bp__calloc(const bp_allocator *a, size_t n, size_t size); /* overflow-checked */
void *bp__realloc(const bp_allocator *a, void *p, size_t old_size, size_t new_size);
void bp__free(const bp_allocator *a, void *p, size_t size);
/* Asks for transparent huge pages on a large block (advice only). */
void bp__hint_huge(void *p, size_t n);
/* Grows *arr (elements of elem bytes) so that it holds at least `need`
 * elements; *cap is updated.  Returns false on overflow or OOM. */
bool bp__grow(const bp_allocator *a, void **arr, size_t *cap, size_t need, size_t elem);

/* Overflow-checked arithmetic; return false on overflow. */
static inline bool bp__add_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool bp__mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline uint64_t bp__align_up(uint64_t x, uint64_t a) { return a <= 1 ? x : (x + a - 1) / a * a; }

/* ---------------------------------------------------------------- errors */

/* Formats err->msg and sets err->status; returns the status.  err may be NULL. */
bp_status bp__err(bp_error *err, bp_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void bp__err_clear(bp_error *err);
/* True when s is valid UTF-8 (names must be, so JSON files round-trip). */
bool bp__valid_utf8(const char *s);

double bp__now(void); /* monotonic seconds */
/* The shortest decimal that reads back as v (%.17g at most): 0.7, not
 * 0.69999999999999996.  Returns buf. */
const char *bp__fmt_double(char buf[32], double v);

/* ----------------------------------------------------------- name index */

/* A string pool plus an open-addressing hash index from name to id. */
typedef struct bp__names {
    char *pool;          /* NUL-terminated names, back to back */
    size_t pool_len, pool_cap;
    uint32_t *off;       /* off[id] = offset of name id in pool */
    size_t n, off_cap;
    uint64_t *slots;     /* hash slots: (hash tag << 32) | (id + 1), 0 = empty */
    size_t n_slots;      /* power of two */
} bp__names;

void bp__names_free(const bp_allocator *a, bp__names *nm);
/* Adds a name, returns its id (= count before the call), or -1 on OOM,
 * -2 if it exists (then *existing is set). */
int32_t bp__names_add(const bp_allocator *a, bp__names *nm, const char *s, size_t len, int32_t *existing);
int32_t bp__names_find(const bp__names *nm, const char *s, size_t len);
static inline const char *bp__names_get(const bp__names *nm, int32_t id) { return nm->pool + nm->off[id]; }
uint64_t bp__hash_bytes(const void *p, size_t n, uint64_t seed);

/* ---------------------------------------------------------------- files */

/* Reads a whole file (NUL-terminated). */
bp_status bp__read_file(const char *path, const bp_allocator *a, char **buf, size_t *len, bp_error *err);
/* Safe writes (outfile.c): a temporary made with mkstemp next to the target
 * (or stdout for "-"), given the mode of the file it replaces, fsynced and
 * renamed over it on commit.  Special files (FIFOs, devices, directories)
 * are refused; a symlink is followed; a file with more than one hard link
 * is rewritten in place so that the links stay.  Stale temporaries of
 * earlier runs (older than a minute) in that directory are removed. */
typedef struct bp__outfile {
    FILE *f;
    char *path, *tmp;          /* target (symlinks resolved) and temporary */
    size_t path_size, tmp_size;
    unsigned mode;             /* permission bits to give the result */
    bool is_stdout, in_place;
} bp__outfile;
bp_status bp__out_open(bp__outfile *o, const char *path, bp_error *err);
bp_status bp__out_commit(bp__outfile *o, bp_error *err);   /* closes; renames on success */
void bp__out_abort(bp__outfile *o);                          /* closes; removes temp */
/* Removes the regular files dir/.*TAG* older than a minute: temporaries that a
 * writer killed mid-write left behind (a live writer renames its own within
 * milliseconds).  Best effort, no error. */
void bp__remove_stale_temps(const char *dir, const char *tag);
/* Writes s as a JSON string literal (with quotes). */
void bp__json_str(FILE *f, const char *s);

/* --------------------------------------------------------------- limits */

/* l, or the defaults when l is NULL (limits.c). */
const bp_limits *bp__limits(const bp_limits *l);

/* Streaming JSON pre-scan: nesting depth and size, before jansson parses. */
enum { BP__JSON_SCAN_DEPTH = 1, BP__JSON_SCAN_SIZE = 2 };
typedef struct bp__json_scan {
    uint64_t bytes, max_bytes, line;
    uint32_t depth, max_depth;
    uint8_t in_str, esc;
    int failed;               /* BP__JSON_SCAN_* */
} bp__json_scan;
void bp__json_scan_init(bp__json_scan *s, const bp_limits *l);
/* False when a limit is passed (s->failed says which). */
bool bp__json_scan_feed(bp__json_scan *s, const char *p, size_t n);
bp_status bp__json_scan_error(const bp__json_scan *s, const char *file, bp_error *err);

/* Fault injection (fault.c, test builds with -DBP_FAULT_INJECTION only):
 * true when this allocation is the one $BP_FAULT_ALLOC names. */
#ifdef BP_FAULT_INJECTION
bool bp__fault_fail(void);
#else
static inline bool bp__fault_fail(void) { return false; }
#endif

#endif /* BP_INTERNAL_H */
