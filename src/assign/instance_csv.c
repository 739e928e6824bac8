/*
 * instance_csv.c — MiniMalloc CSV instances: reading (a small streaming CSV
 * parser: quotes, a header naming the columns, optional alignment and
 * offset columns) and writing them back with the offsets found.
 */
#include "assign/assign_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ CSV read */

/* The parser works in place on a copy of the text: each cell is unquoted
 * and NUL-terminated where it lies, and the instance points into it. */

typedef struct csv_state {
    char *p, *end;
    size_t line;
} csv_state;

/* Parses one record into cells (pointers into the text); returns the cell
 * count, 0 at end of input (or a blank line: *blank set), -1 on a bad quote. */
static long csv_record(csv_state *s, char ***cells, size_t *cap, const bp_allocator *a, bool *blank, bool *oom)
{
    *blank = false;
    if (s->p >= s->end) return 0;
    if (*s->p == '\n' || (*s->p == '\r' && s->p + 1 < s->end && s->p[1] == '\n')) {
        s->p += *s->p == '\r' ? 2 : 1;
        s->line++;
        *blank = true;
        return 0;
    }
    long k = 0;
    for (;;) {
        if ((size_t)k >= *cap && !bp__grow(a, (void **)cells, cap, (size_t)k + 1, sizeof **cells)) { *oom = true; return -1; }
        char *w = s->p, *start = s->p;
        if (s->p < s->end && *s->p == '"') {
            s->p++;
            for (;;) {
                if (s->p >= s->end) return -1;
                if (*s->p == '"') {
                    if (s->p + 1 < s->end && s->p[1] == '"') { *w++ = '"'; s->p += 2; continue; }
                    s->p++;
                    break;
                }
                if (*s->p == '\n') s->line++;
                *w++ = *s->p++;
            }
            if (s->p < s->end && *s->p != ',' && *s->p != '\n' && *s->p != '\r') return -1;
        } else {
            while (s->p < s->end && *s->p != ',' && *s->p != '\n' && *s->p != '\r') s->p++;
            w = s->p;
        }
        (*cells)[k++] = start;
        if (s->p >= s->end) { *w = 0; break; }
        char c = *s->p;
        *w = 0;
        if (c == ',') { s->p++; continue; }
        /* end of line */
        s->p++;
        if (c == '\r' && s->p < s->end && *s->p == '\n') s->p++;
        s->line++;
        break;
    }
    return k;
}

static void csv_trim(char **cell)
{
    char *c = *cell;
    while (*c == ' ' || *c == '\t') c++;
    size_t l = strlen(c);
    while (l && (c[l - 1] == ' ' || c[l - 1] == '\t')) c[--l] = 0;
    *cell = c;
}

/* Strict integer: optional sign, digits, nothing else. */
static bool csv_int(const char *s, int64_t *out)
{
    if (!*s) return false;
    const char *q = s;
    if (*q == '-' || *q == '+') q++;
    if (!*q) return false;
    for (const char *r = q; *r; r++) if (*r < '0' || *r > '9') return false;
    errno = 0;
    char *e;
    long long v = strtoll(s, &e, 10);
    if (errno || *e) return false;
    *out = v;
    return true;
}

static bool csv_u64(const char *s, uint64_t *out)
{
    if (!*s || *s == '-') return false;
    for (const char *r = *s == '+' ? s + 1 : s; *r; r++) if (*r < '0' || *r > '9') return false;
    errno = 0;
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || *e) return false;
    *out = v;
    return true;
}

static bool csv_name_is(const char *h, const char *name)
{
    for (; *h && *name; h++, name++) {
        char c = *h;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != *name) return false;
    }
    return !*h && !*name;
}

void bp_instance_free(bp_instance *inst)
{
    if (!inst) return;
    bp_allocator a = inst->alloc;
    bp__free(&a, inst->iv, inst->n * sizeof *inst->iv);
    bp__free(&a, inst->ids, inst->n * sizeof *inst->ids);
    bp__free(&a, inst->lines, inst->n * sizeof *inst->lines);
    bp__free(&a, inst->col_names, inst->n_cols * sizeof *inst->col_names);
    bp__free(&a, inst->cells, inst->n * inst->n_cols * sizeof *inst->cells);
    bp__free(&a, inst->text_, inst->text_size_);
    bp__free(&a, inst, sizeof *inst);
}

/* Capacity from a MiniMalloc file name: NAME.DIGITS.csv */
static uint64_t csv_capacity_from_name(const char *fn)
{
    if (!fn) return 0;
    const char *base = strrchr(fn, '/');
    base = base ? base + 1 : fn;
    size_t l = strlen(base);
    if (l < 6 || strcmp(base + l - 4, ".csv") != 0) return 0;
    const char *e = base + l - 4, *b = e;
    while (b > base && b[-1] >= '0' && b[-1] <= '9') b--;
    if (b == e || b == base || b[-1] != '.' || e - b > 19) return 0;
    uint64_t v = 0;
    for (const char *q = b; q < e; q++) v = v * 10 + (uint64_t)(*q - '0');
    return v;
}

bp_status bp_instance_parse_csv(const char *text, size_t len, const char *filename,
                                const bp_allocator *alloc, bp_instance **out, bp_error *err)
{
    return bp_instance_parse_csv_lim(text, len, filename, NULL, alloc, out, err);
}

bp_status bp_instance_parse_csv_lim(const char *text, size_t len, const char *filename, const bp_limits *lim,
                                    const bp_allocator *alloc, bp_instance **out, bp_error *err)
{
    bp__err_clear(err);
    lim = bp__limits(lim);
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_instance_parse_csv: out is NULL");
    *out = NULL;
    if (!text && len) return bp__err(err, BP_ERR_USAGE, "bp_instance_parse_csv: text is NULL");
    const bp_allocator *a = alloc ? alloc : &bp__libc_allocator;
    const char *fn = filename ? filename : "<csv>";
    if (len > lim->max_file_bytes)
        return bp__err(err, BP_ERR_LIMIT, "%s: the file is larger than %llu bytes (bp_limits.max_file_bytes)", fn,
                       (unsigned long long)lim->max_file_bytes);
    bp_instance *inst = bp__calloc(a, 1, sizeof *inst);
    if (!inst) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", fn);
    inst->alloc = *a;
    inst->capacity = csv_capacity_from_name(filename);
    bp_status st = BP_OK;
    char **rec = NULL; size_t rec_cap = 0;
    bp__names ids; memset(&ids, 0, sizeof ids);
    size_t iv_cap = 0, cells_cap = 0, lines_cap = 0;
    bool oom = false, blank;
    inst->text_size_ = len + 1;
    inst->text_ = bp__alloc(a, len + 1);
    if (!inst->text_) goto nomem;
    if (len) memcpy(inst->text_, text, len);
    inst->text_[len] = 0;
    csv_state s = { inst->text_, inst->text_ + len, 1 };
    /* skip a UTF-8 byte-order mark */
    if (len >= 3 && (unsigned char)s.p[0] == 0xEF && (unsigned char)s.p[1] == 0xBB && (unsigned char)s.p[2] == 0xBF) s.p += 3;

    /* header */
    long nh;
    do { nh = csv_record(&s, &rec, &rec_cap, a, &blank, &oom); } while (nh == 0 && blank);
    if (oom) goto nomem;
    if (nh <= 0) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: %s", fn, s.line, nh == 0 ? "empty file: no header" : "bad quoting in the header"); goto fail; }
    inst->n_cols = (size_t)nh;
    inst->col_names = bp__calloc(a, inst->n_cols, sizeof *inst->col_names);
    if (!inst->col_names) goto nomem;
    int c_id = -1, c_lo = -1, c_up = -1, c_end = -1, c_size = -1, c_al = -1, c_off = -1;
    for (long c = 0; c < nh; c++) {
        csv_trim(&rec[c]);
        inst->col_names[c] = rec[c];
        const char *h = rec[c];
        int *slot = NULL;
        if (csv_name_is(h, "id") || csv_name_is(h, "buffer") || csv_name_is(h, "buffer_id")) slot = &c_id;
        else if (csv_name_is(h, "lower") || csv_name_is(h, "begin") || csv_name_is(h, "start")) slot = &c_lo;
        else if (csv_name_is(h, "upper")) slot = &c_up;
        else if (csv_name_is(h, "end")) slot = &c_end;
        else if (csv_name_is(h, "size")) slot = &c_size;
        else if (csv_name_is(h, "alignment")) slot = &c_al;
        else if (csv_name_is(h, "offset")) slot = &c_off;
        if (slot) {
            if (*slot >= 0) { st = bp__err(err, BP_ERR_INVALID, "%s:1: column \"%s\" appears twice in the header", fn, h); goto fail; }
            *slot = (int)c;
        }
    }
    if (c_up >= 0 && c_end >= 0) { st = bp__err(err, BP_ERR_INVALID, "%s:1: header has both \"upper\" and \"end\"", fn); goto fail; }
    if (c_up < 0) { c_up = c_end; inst->has_end = c_end >= 0; }
    {
        const char *missing = c_id < 0 ? "id" : c_lo < 0 ? "lower" : c_up < 0 ? "upper" : c_size < 0 ? "size" : NULL;
        if (missing) { st = bp__err(err, BP_ERR_INVALID, "%s:1: header has no \"%s\" column (need id,lower,upper,size)", fn, missing); goto fail; }
    }
    inst->has_alignment = c_al >= 0;
    inst->has_offset = c_off >= 0;

    for (;;) {
        size_t line = s.line;
        long k = csv_record(&s, &rec, &rec_cap, a, &blank, &oom);
        if (oom) goto nomem;
        if (k == 0) { if (blank) continue; break; }
        if (k < 0) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: unterminated or misplaced quote", fn, line); goto fail; }
        for (long c = 0; c < k; c++) csv_trim(&rec[c]);
        const char *id = (long)c_id < k ? rec[c_id] : "?";
        if ((size_t)k != inst->n_cols) {
            st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": %ld column%s, the header has %zu", fn, line, id, k,
                         k == 1 ? "" : "s", inst->n_cols);
            goto fail;
        }
        if (!*id) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: empty id", fn, line); goto fail; }
        size_t i = inst->n;
        if (i >= lim->max_tensors) {
            st = bp__err(err, BP_ERR_LIMIT, "%s:%zu: more than %llu rows (bp_limits.max_tensors)", fn, line,
                         (unsigned long long)lim->max_tensors);
            goto fail;
        }
        if (!bp__grow(a, (void **)&inst->iv, &iv_cap, i + 1, sizeof *inst->iv) ||
            !bp__grow(a, (void **)&inst->lines, &lines_cap, i + 1, sizeof *inst->lines) ||
            !bp__grow(a, (void **)&inst->cells, &cells_cap, (i + 1) * inst->n_cols, sizeof *inst->cells)) goto nomem;
        bp_interval *x = &inst->iv[i];
        x->alignment = 0; x->fixed_offset = BP_NO_OFFSET;
        int64_t lo, up, sz;
        if (!csv_int(rec[c_lo], &lo)) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": %s \"%s\" is not an integer", fn, line, id, inst->col_names[c_lo], rec[c_lo]); goto fail; }
        if (!csv_int(rec[c_up], &up)) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": %s \"%s\" is not an integer", fn, line, id, inst->col_names[c_up], rec[c_up]); goto fail; }
        if (!csv_int(rec[c_size], &sz)) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": size \"%s\" is not an integer", fn, line, id, rec[c_size]); goto fail; }
        if (sz < 0) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": negative size %lld", fn, line, id, (long long)sz); goto fail; }
        if (inst->has_end) {
            if (up == INT64_MAX) { st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": end %lld is too large", fn, line, id, (long long)up); goto fail; }
            up++;
        }
        if (sz > 0 && lo >= up) {
            st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": lower %lld >= upper %lld (lifetimes are half-open [lower, upper))",
                         fn, line, id, (long long)lo, (long long)(inst->has_end ? up - 1 : up));
            goto fail;
        }
        x->lower = lo; x->upper = up; x->size = (uint64_t)sz;
        if (c_al >= 0 && *rec[c_al]) {
            uint64_t al;
            if (!csv_u64(rec[c_al], &al) || (al > 1 && (al & (al - 1)))) {
                st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": alignment \"%s\" is not a power of two", fn, line, id, rec[c_al]);
                goto fail;
            }
            x->alignment = al;
        }
        if (c_off >= 0 && *rec[c_off]) {
            uint64_t of, e2;
            if (!csv_u64(rec[c_off], &of) || !bp__add_u64(of, x->size, &e2) || of == BP_NO_OFFSET) {
                st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": offset \"%s\" is not a non-negative integer", fn, line, id, rec[c_off]);
                goto fail;
            }
            if (x->alignment > 1 && of % x->alignment) {
                st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": offset %llu is not a multiple of its alignment %llu", fn, line, id,
                             (unsigned long long)of, (unsigned long long)x->alignment);
                goto fail;
            }
            x->fixed_offset = of;
        }
        int32_t prev = -1;
        int32_t r = bp__names_add(a, &ids, id, strlen(id), &prev);
        if (r == -1) goto nomem;
        if (r == -2) {
            st = bp__err(err, BP_ERR_INVALID, "%s:%zu: buffer \"%s\": duplicate id (first on line %zu)", fn, line, id,
                         inst->lines[prev]);
            goto fail;
        }
        memcpy(&inst->cells[i * inst->n_cols], rec, inst->n_cols * sizeof *rec);
        inst->lines[i] = line;
        inst->n++;
    }
    /* shrink the arrays to n so that free sizes agree */
    {
        size_t n = inst->n, nc = inst->n_cols;
        inst->ids = bp__calloc(a, n ? n : 1, sizeof *inst->ids);
        if (!inst->ids) goto nomem;
        for (size_t i = 0; i < n; i++) inst->ids[i] = inst->cells[i * nc + (size_t)c_id];
        bp_interval *iv2 = bp__calloc(a, n ? n : 1, sizeof *iv2);
        size_t *l2 = bp__calloc(a, n ? n : 1, sizeof *l2);
        char **c2 = bp__calloc(a, n ? n * nc : 1, sizeof *c2);
        if (!iv2 || !l2 || !c2) {
            bp__free(a, iv2, (n ? n : 1) * sizeof *iv2); bp__free(a, l2, (n ? n : 1) * sizeof *l2);
            bp__free(a, c2, (n ? n * nc : 1) * sizeof *c2);
            bp__free(a, inst->ids, (n ? n : 1) * sizeof *inst->ids); inst->ids = NULL;
            goto nomem;
        }
        if (n) {
            memcpy(iv2, inst->iv, n * sizeof *iv2);
            memcpy(l2, inst->lines, n * sizeof *l2);
            memcpy(c2, inst->cells, n * nc * sizeof *c2);
        }
        bp__free(a, inst->iv, iv_cap * sizeof *inst->iv);
        bp__free(a, inst->lines, lines_cap * sizeof *inst->lines);
        bp__free(a, inst->cells, cells_cap * sizeof *inst->cells);
        inst->iv = iv2; inst->lines = l2; inst->cells = c2;
        if (!n) {
            /* keep free sizes consistent with n == 0 */
            bp__free(a, inst->iv, sizeof *iv2); bp__free(a, inst->lines, sizeof *l2);
            bp__free(a, inst->cells, sizeof *c2); bp__free(a, inst->ids, sizeof *inst->ids);
            inst->iv = NULL; inst->lines = NULL; inst->cells = NULL; inst->ids = NULL;
        }
    }
    bp__free(a, rec, rec_cap * sizeof *rec);
    bp__names_free(a, &ids);
    *out = inst;
    return BP_OK;
nomem:
    st = bp__err(err, BP_ERR_NOMEM, "%s: out of memory", fn);
fail:
    bp__free(a, rec, rec_cap * sizeof *rec);
    bp__names_free(a, &ids);
    bp__free(a, inst->iv, iv_cap * sizeof *inst->iv);
    bp__free(a, inst->lines, lines_cap * sizeof *inst->lines);
    bp__free(a, inst->cells, cells_cap * sizeof *inst->cells);
    inst->iv = NULL; inst->lines = NULL; inst->cells = NULL; inst->n = 0;
    bp_instance_free(inst);
    return st;
}

bp_status bp_instance_read_csv(const char *path, const bp_allocator *alloc, bp_instance **out, bp_error *err)
{
    bp__err_clear(err);
    if (!path || !out) return bp__err(err, BP_ERR_USAGE, "bp_instance_read_csv: NULL argument");
    const bp_allocator *a = alloc ? alloc : &bp__libc_allocator;
    char *buf; size_t len;
    bp_status st = bp__read_file(path, a, &buf, &len, err);
    if (st) return st;
    st = bp_instance_parse_csv(buf, len, path, a, out, err);
    bp__free(a, buf, len + 1);
    return st;
}

/* ----------------------------------------------------------- CSV write */

static void csv_cell(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) { if (*s == '"') fputc('"', f); fputc(*s, f); }
    fputc('"', f);
}

bp_status bp_instance_write_csv_file(const bp_instance *inst, const uint64_t *offsets, FILE *f, bp_error *err)
{
    bp__err_clear(err);
    if (!inst || !f) return bp__err(err, BP_ERR_USAGE, "bp_instance_write_csv: NULL argument");
    long c_off = -1;
    for (size_t c = 0; c < inst->n_cols; c++)
        if (csv_name_is(inst->col_names[c], "offset")) c_off = (long)c;
    bool add = offsets && c_off < 0;
    for (size_t c = 0; c < inst->n_cols; c++) { if (c) fputc(',', f); csv_cell(f, inst->col_names[c]); }
    if (add) fputs(inst->n_cols ? ",offset" : "offset", f);
    fputc('\n', f);
    for (size_t i = 0; i < inst->n; i++) {
        for (size_t c = 0; c < inst->n_cols; c++) {
            if (c) fputc(',', f);
            if (offsets && (long)c == c_off) fprintf(f, "%llu", (unsigned long long)offsets[i]);
            else csv_cell(f, inst->cells[i * inst->n_cols + c]);
        }
        if (add) fprintf(f, ",%llu", (unsigned long long)offsets[i]);
        fputc('\n', f);
    }
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "write error");
    return BP_OK;
}

bp_status bp_instance_write_csv(const bp_instance *inst, const uint64_t *offsets, const char *path, bp_error *err)
{
    bp__err_clear(err);
    if (!inst || !path) return bp__err(err, BP_ERR_USAGE, "bp_instance_write_csv: NULL argument");
    bp__outfile o;
    bp_status st = bp__out_open(&o, path, err);
    if (st) return st;
    st = bp_instance_write_csv_file(inst, offsets, o.f, err);
    if (st) { bp__out_abort(&o); return bp__err(err, st, "%s: %s", path, err ? err->msg : "write error"); }
    return bp__out_commit(&o, err);
}
