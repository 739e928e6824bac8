/*
 * onnx_import.c — reads an .onnx model into a bp_graph without copying its
 * weights: the public entry points (bp_onnx_read maps the file read-only)
 * and the import's phases, in order:
 *
 *   walk the model (model_read.c) -> bind --dim symbols -> register
 *   initializers, inputs (with --shape overrides), node outputs (one name
 *   table, context.c) -> attach value_info and graph outputs -> resolve node
 *   inputs and the outer-scope names read by subgraphs -> order the nodes
 *   topologically -> infer shapes and fold constant shape arithmetic
 *   (graph_walk.c, infer.c), checking value_info -> check the --dim names ->
 *   build the graph through the public builder API and finalize it
 *   (graph_build.c).
 *
 * Each phase is a function that returns a status; the first error stops the
 * import and the context (bp__ox, freed by bp__ox_free) holds everything
 * allocated on the way.
 */
#define _POSIX_C_SOURCE 200809L
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void bp_onnx_options_init(bp_onnx_options *o)
{
    memset(o, 0, sizeof *o);
}

#ifndef BP_HAVE_ONNX

int bp_onnx_available(void) { return 0; }

bp_status bp_onnx_read_ex(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                          bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    (void)opts; (void)alloc; (void)stats;
    if (out) *out = NULL;
    return bp__err(err, BP_ERR_UNSUPPORTED, "%s: bufplan was built without ONNX support (protobuf-c)", path ? path : "model");
}

bp_status bp_onnx_read(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                       bp_graph **out, bp_error *err)
{
    return bp_onnx_read_ex(path, opts, alloc, out, NULL, err);
}

bp_status bp_onnx_parse(const void *data, size_t len, const char *filename, const bp_onnx_options *opts,
                        const bp_allocator *alloc, bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    (void)data; (void)len;
    return bp_onnx_read_ex(filename, opts, alloc, out, stats, err);
}

#else

int bp_onnx_available(void) { return 1; }

/* ------------------------------------------------------------- options */

/* Applies --shape NAME=... to a graph input. */
static bp_status ox_apply_shape_override(bp__ox *c, int32_t t, bool *used, bp_error *err)
{
    const bp_onnx_options *o = c->opts;
    const char *name = bp__names_get(&c->tn, t);
    for (int i = 0; i < o->n_shapes; i++) {
        if (strcmp(o->shape_names[i], name) != 0) continue;
        used[i] = true;
        int r = o->shape_ranks[i];
        if (r < 0 || r > BP__OX_MAX_RANK)
            return bp__err(err, BP_ERR_USAGE, "%s: --shape %s: rank %d is out of range", c->file, name, r);
        for (int j = 0; j < r; j++)
            if (o->shape_dims[i][j] < 0)
                return bp__err(err, BP_ERR_USAGE, "%s: --shape %s: dimension %d is negative", c->file, name, j);
        if (c->t[t].rank >= 0 && c->t[t].rank != r)
            bp__ox_warn(c, "--shape %s: the model declares rank %d, using rank %d", name, c->t[t].rank, r);
        bp_dtype dt = (bp_dtype)c->t[t].dtype;
        if (dt == BP_DT_UNKNOWN) dt = BP_DT_F32;
        return bp__ox_set_shape(c, t, dt, r, o->shape_dims[i], err);
    }
    return BP_OK;
}

/* ----------------------------------------------------------------- nodes */

/* ------------------------------------------------------------- the phases */

/* The model's header: its parts, IR version, producer, opsets. */
static bp_status ox_read_header(bp__ox *c, const uint8_t *data, size_t len, bp__ox_model *m, bp_error *err)
{
    bp_status s = bp__ox_walk_model(c, data, len, m, err);
    if (s) return s;
    if (c->st) {
        c->st->ir_version = m->ir_version;
        snprintf(c->st->producer, sizeof c->st->producer, "%.*s%s%.*s", (int)(m->producer.n < 40 ? m->producer.n : 40),
                 m->producer.p ? (const char *)m->producer.p : "", m->producer_version.n ? " " : "",
                 (int)(m->producer_version.n < 20 ? m->producer_version.n : 20),
                 m->producer_version.p ? (const char *)m->producer_version.p : "");
    }
    if (m->ir_version > 10) bp__ox_warn(c, "IR version %lld is newer than the newest bufplan knows (10)", (long long)m->ir_version);
    return bp__ox_opsets(c, m, err);
}

/* --dim NAME=VALUE: bound symbols first, so shapes see their values. */
static bp_status ox_bind_dims(bp__ox *c, bp_error *err)
{
    for (int i = 0; i < c->opts->n_dims; i++) {
        const char *nm = c->opts->dim_names[i];
        if (!nm || !*nm) return bp__err(err, BP_ERR_USAGE, "%s: --dim with an empty name", c->file);
        if (c->opts->dim_values[i] < 0)
            return bp__err(err, BP_ERR_USAGE, "%s: --dim %s=%lld: the value must be >= 0", c->file, nm, (long long)c->opts->dim_values[i]);
        bp_status s = bp__ox_bind_sym(c, nm, c->opts->dim_values[i], err);
        if (s) return s;
    }
    return BP_OK;
}

static bp_status ox_add_initializers(bp__ox *c, const bp__ox_model *m, const uint8_t *data, bp_error *err)
{
    bp_status s;
    for (size_t i = 0; i < m->inits.n; i++) if ((s = bp__ox_add_initializer(c, m->inits.s[i], data, false, err))) return s;
    for (size_t i = 0; i < m->sparse.n; i++) if ((s = bp__ox_add_initializer(c, m->sparse.s[i], data, true, err))) return s;
    if (c->st) c->st->n_initializers = (int32_t)c->n_t;
    return BP_OK;
}

/* Graph input i (IR < 4 lists initializers among them too: skipped). */
static bp_status ox_add_input(bp__ox *c, bp__ox_slice sl, bool *shape_used, bp_error *err)
{
    Onnx__ValueInfoProto *vi;
    bp_status s = bp__ox_unpack_vi(c, sl, "input", &vi, err);
    if (s) {
        if (vi) protobuf_c_message_free_unpacked(&vi->base, &c->pa);
        return s;
    }
    int32_t id, ex;
    s = bp__ox_add_tensor(c, vi->name, strlen(vi->name), BP__OX_INPUT, &id, &ex, err);
    if (s) { protobuf_c_message_free_unpacked(&vi->base, &c->pa); return s; }
    if (id == -2) {
        bool is_init = c->t[ex].role == BP__OX_INIT;
        protobuf_c_message_free_unpacked(&vi->base, &c->pa);
        if (is_init) return BP_OK;
        return bp__err(err, BP_ERR_INVALID, "%s: graph input \"%s\" is listed twice", c->file, bp__names_get(&c->tn, ex));
    }
    s = bp__ox_shape_from_type(c, id, vi->type, err);
    protobuf_c_message_free_unpacked(&vi->base, &c->pa);
    if (s) return s;
    if (c->opts->n_shapes && (s = ox_apply_shape_override(c, id, shape_used, err))) return s;
    if (c->st) c->st->n_inputs++;
    return BP_OK;
}

/* The names of the graph inputs (not the initializers an old IR lists among
 * them), comma-separated, into buf: "none" when there are none, "..." at the
 * end when they do not fit. */
static const char *ox_input_names(const bp__ox *c, char *buf, size_t cap)
{
    size_t L = 0;
    buf[0] = 0;
    for (size_t t = 0; t < c->n_t; t++) {
        if (c->t[t].role != BP__OX_INPUT) continue;
        const char *nm = bp__names_get(&c->tn, (int32_t)t);
        if (L + strlen(nm) + 8 >= cap) { snprintf(buf + L, cap - L, "%s...", L ? ", " : ""); return buf; }
        L += (size_t)snprintf(buf + L, cap - L, "%s%s", L ? ", " : "", nm);
    }
    if (!L) snprintf(buf, cap, "none");
    return buf;
}

/* Graph inputs; every --shape must name one. */
static bp_status ox_add_inputs(bp__ox *c, const bp__ox_model *m, bp_error *err)
{
    bool *shape_used = NULL;
    bp_status s = BP_OK;
    if (c->opts->n_shapes) {
        shape_used = bp__calloc(c->a, (size_t)c->opts->n_shapes, sizeof *shape_used);
        if (!shape_used) return bp__ox_oom(c, err);
    }
    for (size_t i = 0; i < m->inputs.n && !s; i++) s = ox_add_input(c, m->inputs.s[i], shape_used, err);
    for (int i = 0; i < c->opts->n_shapes && !s; i++)
        if (!shape_used[i]) {
            char names[600];
            s = bp__err(err, BP_ERR_USAGE, "%s: --shape %s: the model has no graph input of that name; its graph inputs are: %s",
                        c->file, c->opts->shape_names[i], ox_input_names(c, names, sizeof names));
        }
    if (shape_used) bp__free(c->a, shape_used, (size_t)c->opts->n_shapes * sizeof *shape_used);
    return s;
}

/* Node k: unpack, then register. */
static bp_status ox_add_node(bp__ox *c, const bp__ox_model *m, const uint8_t *data, size_t k, bp__names *used_names,
                             bp_error *err)
{
    Onnx__NodeProto *np = NULL;
    bp_status s = bp__ox_unpack_node(c, m->nodes.s[k], data, k, &np, err);
    c->nodes[k].np = np;
    if (s) return s;
    return bp__ox_register_node(c, k, np, used_names, err);
}

/* The nodes, within the limits; node names unique in used_names. */
static bp_status ox_add_nodes(bp__ox *c, const bp__ox_model *m, const uint8_t *data, bp__names *used_names, bp_error *err)
{
    if (m->nodes.n > INT32_MAX / 2) return bp__err(err, BP_ERR_LIMIT, "%s: too many nodes", c->file);
    if (m->nodes.n > bp__limits(c->opts->limits)->max_ops)
        return bp__err(err, BP_ERR_LIMIT, "%s: %zu nodes are over the limit of %llu (bp_limits.max_ops)", c->file, m->nodes.n,
                       (unsigned long long)bp__limits(c->opts->limits)->max_ops);
    c->nodes = bp__calloc(c->a, m->nodes.n ? m->nodes.n : 1, sizeof *c->nodes);
    if (!c->nodes) return bp__ox_oom(c, err);
    c->n_nodes = m->nodes.n;
    if (c->st) c->st->n_nodes = (int32_t)m->nodes.n;
    for (size_t k = 0; k < m->nodes.n; k++) {
        bp_status s = ox_add_node(c, m, data, k, used_names, err);
        if (s) return s;
    }
    return BP_OK;
}

/* value_info and graph outputs: kept for the node outputs they describe (an
 * output must name a tensor; value_info of nothing is ignored). */
static bp_status ox_attach_value_info(bp__ox *c, const bp__ox_model *m, bp_error *err)
{
    for (size_t i = 0; i < m->vinfos.n + m->outputs.n; i++) {
        bool is_out = i >= m->vinfos.n;
        Onnx__ValueInfoProto *vi;
        bp_status s = bp__ox_unpack_vi(c, is_out ? m->outputs.s[i - m->vinfos.n] : m->vinfos.s[i], is_out ? "output" : "value_info", &vi, err);
        if (s) { if (vi) protobuf_c_message_free_unpacked(&vi->base, &c->pa); return s; }
        int32_t t = bp__ox_find(c, vi->name);
        if (t < 0) {
            if (is_out) {
                s = bp__err(err, BP_ERR_INVALID, "%s: graph output \"%s\" is not produced by any node (nor an input or initializer)",
                            c->file, vi->name);
                protobuf_c_message_free_unpacked(&vi->base, &c->pa);
                return s;
            }
            protobuf_c_message_free_unpacked(&vi->base, &c->pa);   /* value_info of nothing: ignore */
            continue;
        }
        if ((s = bp__ox_keep_vi(c, vi, err))) return s;
        if (c->t[t].role == BP__OX_NODE) c->t[t].vi = (int32_t)c->n_vinfo - 1;
        if (is_out && c->st) c->st->n_outputs++;
    }
    return BP_OK;
}

/* --dim names must name a symbol of the model. */
static bp_status ox_check_dim_names(bp__ox *c, bp_error *err)
{
    for (int i = 0; i < c->opts->n_dims; i++) {
        const char *nm = c->opts->dim_names[i];
        int32_t id = bp__names_find(&c->syms, nm, strlen(nm));
        if (id < 0 || (size_t)id >= c->cap_sym_seen || !c->sym_seen[id])
            return bp__err(err, BP_ERR_USAGE, "%s: --dim %s: the model has no symbolic dimension of that name", c->file, nm);
    }
    return BP_OK;
}

static bp_status ox_import(bp__ox *c, const uint8_t *data, size_t len, bp_graph **out, bp_error *err)
{
    bp__ox_model m;
    memset(&m, 0, sizeof m);
    bp__names used_names;   /* node names given so far */
    memset(&used_names, 0, sizeof used_names);
    bp_graph *g = NULL;
    int32_t *order = NULL;
    c->model = &m;
    c->infer_control = bp__ox_infer_control;
    bp_status s = ox_read_header(c, data, len, &m, err);
    if (!s) c->ms_domain = bp__ox_domain_imported(c, &m, "com.microsoft");
    if (!s) s = ox_bind_dims(c, err);
    if (!s) s = ox_add_initializers(c, &m, data, err);
    if (!s) s = ox_add_inputs(c, &m, err);
    if (!s) s = ox_add_nodes(c, &m, data, &used_names, err);
    if (!s) s = ox_attach_value_info(c, &m, err);
    if (!s) s = bp__ox_resolve_inputs(c, err);
    if (!s) s = bp__ox_topo_order(c, &order, err);
    if (!s) s = bp__ox_infer_nodes(c, order, err);
    if (!s) s = ox_check_dim_names(c, err);
    if (!s) s = bp__ox_build_graph(c, m.outputs.n, &g, err);
    if (s) { bp_graph_free(g); g = NULL; }
    *out = g;
    if (order) bp__ox_order_free(c, order);
    bp__names_free(c->a, &used_names);
    bp__ox_model_free(c->a, &m);
    return s;
}

bp_status bp_onnx_parse(const void *data, size_t len, const char *filename, const bp_onnx_options *opts,
                        const bp_allocator *alloc, bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    double t0 = bp__now();
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_onnx_parse: out is NULL");
    *out = NULL;
    if (!data && len) return bp__err(err, BP_ERR_USAGE, "bp_onnx_parse: data is NULL");
    bp_onnx_options defaults;
    if (!opts) { bp_onnx_options_init(&defaults); opts = &defaults; }
    if ((opts->n_dims && (!opts->dim_names || !opts->dim_values)) ||
        (opts->n_shapes && (!opts->shape_names || !opts->shape_ranks || !opts->shape_dims)) || opts->n_dims < 0 || opts->n_shapes < 0)
        return bp__err(err, BP_ERR_USAGE, "bp_onnx_parse: inconsistent options (counts without arrays)");
    bp_onnx_stats local;
    bp__ox c;
    bp__ox_init(&c, alloc ? alloc : &bp__libc_allocator, filename ? filename : "model.onnx", opts, stats ? stats : &local);
    memset(c.st, 0, sizeof *c.st);
    c.st->file_bytes = len;
    c.warn = opts->warnings ? opts->warnings : stderr;
    bp_status s = ox_import(&c, data, len, out, err);
    bp__ox_free(&c);
    c.st->seconds = bp__now() - t0;
    return s;
}

bp_status bp_onnx_read_ex(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                          bp_graph **out, bp_onnx_stats *stats, bp_error *err)
{
    if (!out) return bp__err(err, BP_ERR_USAGE, "bp_onnx_read: out is NULL");
    *out = NULL;
    if (!path) return bp__err(err, BP_ERR_USAGE, "bp_onnx_read: path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return bp__err(err, BP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return bp__err(err, BP_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) { close(fd); return bp__err(err, BP_ERR_IO, "%s: not a regular file", path); }
    size_t len = (size_t)sb.st_size;
    void *map = NULL;
    if (len) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return bp__err(err, BP_ERR_IO, "%s: cannot map: %s", path, strerror(e));
        }
        /* only headers are read, scattered between weights: no read-around */
        (void)posix_madvise(map, len, POSIX_MADV_RANDOM);
    }
    close(fd);
    bp_status s = bp_onnx_parse(len ? map : "", len, path, opts, alloc, out, stats, err);
    if (len) munmap(map, len);
    return s;
}

bp_status bp_onnx_read(const char *path, const bp_onnx_options *opts, const bp_allocator *alloc,
                       bp_graph **out, bp_error *err)
{
    return bp_onnx_read_ex(path, opts, alloc, out, NULL, err);
}

#endif /* BP_HAVE_ONNX */
