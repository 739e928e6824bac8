/*
 * json_load.c — loading JSON documents with jansson for every reader (graph,
 * plan, config, history, viz): duplicate keys rejected, the iterative limits
 * pre-scan (depth, size) before jansson's recursive parser, files fed in
 * chunks so the text is never held next to the tree, and parse errors as
 * "FILE:LINE:COL:" naming, for an integer too large, the object it is in.
 *
 * Out of memory inside jansson is not malformed input: jansson reports a
 * failed allocation in its lexer as "invalid token" or "line -1:-1".  So a
 * failed parse is "out of memory" when jansson's allocator failed during
 * it: jansson's malloc is hooked once per process (json_set_alloc_funcs,
 * only while jansson still has its defaults, so a host program's own
 * functions are left alone) with a wrapper that records, per thread, the
 * size of the request that failed; without the hook, errno == ENOMEM from
 * libc's malloc is the sign.  docs/design/json_oom.md says why this, the
 * one process-wide setting the library makes, is acceptable.
 */
#include "core/json_io.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *jl_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p) bp__json_note_oom(n);
    return p;
}

static pthread_once_t jl_hook_once = PTHREAD_ONCE_INIT;

static void jl_hook_install(void)
{
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    if (m == malloc && f == free) json_set_alloc_funcs(jl_malloc, free);
}

/* Before a parse: the hook in place, nothing recorded. */
static void jl_begin(void)
{
    pthread_once(&jl_hook_once, jl_hook_install);
    bp__json_take_oom();
    errno = 0;
}

/* After a failed parse: BP_ERR_NOMEM with the request that failed when
 * jansson ran out of memory; BP_OK otherwise. */
static bp_status jl_oom(const json_error_t *je, const char *file, bp_error *err)
{
    size_t n = bp__json_take_oom();
    bool oom = n || errno == ENOMEM || json_error_code(je) == json_error_out_of_memory;
    if (!oom) return BP_OK;
    char at[48] = "";
    if (je->position > 0) snprintf(at, sizeof at, " (at byte %d of the text)", je->position);
    if (n) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory parsing JSON: the parser could not allocate %zu bytes%s", file, n, at);
    return bp__err(err, BP_ERR_NOMEM, "%s: out of memory parsing JSON%s", file, at);
}

const char *bp__json_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Best effort, for errors jansson reports without context (an integer too
 * large): the "name" (else the "tensor") of the innermost object enclosing
 * byte `pos` that has one.  A small
 * string-aware scan; returns 0 when none is found. */
static int json_enclosing_name(const char *text, size_t len, size_t pos, const char **name, size_t *name_len)
{
    enum { MAXD = 64 };
    const char *nm[MAXD];
    size_t nl[MAXD];
    bool by_name[MAXD];
    int depth = 0;
    const char *str = NULL, *key = NULL;  /* last string token; pending key */
    size_t str_len = 0, key_len = 0;
    bool after_colon = false;
    if (pos > len) pos = len;
    for (size_t i = 0; i < pos; i++) {
        char ch = text[i];
        if (ch == '"') {
            size_t j = i + 1;
            while (j < len && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
            if (j >= len) break;
            if (after_colon && key && depth > 0 && depth <= MAXD) {
                bool is_name = key_len == 4 && memcmp(key, "name", 4) == 0;
                bool is_tensor = key_len == 6 && memcmp(key, "tensor", 6) == 0;  /* plan events */
                if (is_name || (is_tensor && !by_name[depth - 1])) {
                    nm[depth - 1] = text + i + 1;
                    nl[depth - 1] = j - i - 1;
                    by_name[depth - 1] = is_name;
                }
            }
            str = text + i + 1; str_len = j - i - 1;
            after_colon = false;
            i = j;
        } else if (ch == ':') {
            key = str; key_len = str_len; after_colon = true;
        } else if (ch == '{') {
            if (depth < MAXD) { nm[depth] = NULL; by_name[depth] = false; }
            depth++;
            after_colon = false;
        } else if (ch == '}') {
            if (depth > 0) depth--;
            after_colon = false;
        } else if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
            after_colon = false;
        }
    }
    for (int d = depth < MAXD ? depth : MAXD; d > 0; d--)
        if (nm[d - 1]) { *name = nm[d - 1]; *name_len = nl[d - 1]; return 1; }
    return 0;
}

static bp_status json_parse_error(const json_error_t *je, const char *file, const char *text, size_t len, bp_error *err)
{
    enum json_error_code code = json_error_code(je);
    if (code == json_error_numeric_overflow && strstr(je->text, "integer")) {
        const char *nm;
        size_t nl;
        if (text && je->position >= 0 && json_enclosing_name(text, len, (size_t)je->position, &nm, &nl))
            return bp__err(err, BP_ERR_INVALID,
                           "%s:%d:%d: in the entry for \"%.*s\": %s (bufplan reads integers up to 2^63-1 = 9223372036854775807)",
                           file, je->line, je->column, nl > 200 ? 200 : (int)nl, nm, je->text);
        return bp__err(err, BP_ERR_INVALID, "%s:%d:%d: %s (bufplan reads integers up to 2^63-1 = 9223372036854775807)",
                       file, je->line, je->column, je->text);
    }
    return bp__err(err, BP_ERR_INVALID, "%s:%d:%d: malformed JSON: %s", file, je->line, je->column, je->text);
}

/* Sets the graph's name (replacing the file name used while building). */
#define JL_FLAGS JSON_REJECT_DUPLICATES

bp_status bp__json_load_text(const char *text, size_t len, const char *file, json_t **root, bp_error *err)
{
    return bp__json_load_text_lim(text, len, file, NULL, root, err);
}

bp_status bp__json_load_text_lim(const char *text, size_t len, const char *file, const bp_limits *lim, json_t **root,
                                 bp_error *err)
{
    bp__json_scan sc;
    bp__json_scan_init(&sc, lim);
    *root = NULL;
    if (!bp__json_scan_feed(&sc, text, len)) return bp__json_scan_error(&sc, file, err);
    json_error_t je;
    jl_begin();
    *root = json_loadb(text, len, JL_FLAGS, &je);
    if (*root) return BP_OK;
    bp_status s = jl_oom(&je, file, err);
    return s ? s : json_parse_error(&je, file, text, len, err);
}

/* Each chunk passes the limits scan on its way to jansson. */
typedef struct jl_reader { FILE *f; int failed; bp__json_scan sc; } jl_reader;

static size_t jl_read_chunk(void *buf, size_t n, void *data)
{
    jl_reader *r = data;
    size_t got = fread(buf, 1, n, r->f);
    if (got == 0 && ferror(r->f)) { r->failed = 1; return (size_t)-1; }
    if (!bp__json_scan_feed(&r->sc, buf, got)) { r->failed = 2; return (size_t)-1; }
    return got;
}

bp_status bp__json_load_file(const char *path, const bp_allocator *a, json_t **root, bp_error *err)
{
    return bp__json_load_file_lim(path, a, NULL, root, err);
}

bp_status bp__json_load_file_lim(const char *path, const bp_allocator *a, const bp_limits *lim, json_t **root, bp_error *err)
{
    *root = NULL;
    bool is_stdin = strcmp(path, "-") == 0;
    jl_reader r = {is_stdin ? stdin : fopen(path, "rb"), 0, {0}};
    if (!r.f) return bp__err(err, BP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    bp__json_scan_init(&r.sc, lim);
    json_error_t je;
    jl_begin();
    *root = json_load_callback(jl_read_chunk, &r, JL_FLAGS, &je);
    int saved_errno = errno;
    if (!is_stdin) fclose(r.f);
    if (r.failed == 2) { json_decref(*root); *root = NULL; return bp__json_scan_error(&r.sc, path, err); }
    if (r.failed) { json_decref(*root); *root = NULL; return bp__err(err, BP_ERR_IO, "%s: read error", path); }
    if (*root) return BP_OK;
    errno = saved_errno;
    bp_status so = jl_oom(&je, path, err);
    if (so) return so;
    /* Only for an integer too large: read the text again to name the
     * tensor or op it belongs to. */
    if (json_error_code(&je) == json_error_numeric_overflow && !is_stdin) {
        char *text;
        size_t len;
        bp_error e2;
        if (bp__read_file(path, a, &text, &len, &e2) == BP_OK) {
            bp_status s = json_parse_error(&je, path, text, len, err);
            bp__free(a, text, len + 1);
            return s;
        }
    }
    return json_parse_error(&je, path, NULL, 0, err);
}

/* ------------------------------------------------------------ keys */

/* Edit distance of a and b (Levenshtein, both short: keys), capped at 9. */
static int jl_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 30 || lb > 30) return 9;
    int row[32];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb] > 9 ? 9 : row[lb];
}

/* BP_ERR_INVALID naming the first key of obj that is not in known[] (NULL-
 * terminated), where it is, and the nearest known key when one is close:
 * a misspelt key ("output") must not be ignored silently. */
bp_status bp__json_check_keys(const json_t *obj, const char *const *known, const char *file, const char *where,
                              bp_error *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int ok = 0, best = 9;
        const char *near = NULL;
        for (const char *const *k = known; *k && !ok; k++) {
            ok = strcmp(key, *k) == 0;
            int d = jl_distance(key, *k);
            if (d < best) { best = d; near = *k; }
        }
        if (ok) continue;
        if (near && best <= 2)
            return bp__err(err, BP_ERR_INVALID, "%s: %s: unknown key \"%.200s\" (did you mean \"%s\"?)", file, where, key, near);
        return bp__err(err, BP_ERR_INVALID, "%s: %s: unknown key \"%.200s\"", file, where, key);
    }
    return BP_OK;
}

