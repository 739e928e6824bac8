/*
 * bench_onnx_import — ONNX import time and peak memory.
 *
 * usage: bench_onnx_import [--quick] [--json] [--synthetic-mib N] [MODEL.onnx...]
 *
 * Without models, takes the largest model of $BP_DATA/onnx by file size and by
 * node count.  Then writes a synthetic model of N MiB of weights (default
 * 1024) to /tmp: a chain of MatMul layers whose 4 MiB float initializers are
 * file holes, so writing it is instant and its data pages are never read
 * unless the importer touches them.  Each import runs in a forked child that
 * reports its wall time (best of several runs) and its peak RSS before and
 * after the import (getrusage ru_maxrss), printed as a Markdown table.
 */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tests/onnx_writer.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

typedef struct result {
    double best_s;
    long rss_before_kib, rss_after_kib;
    int32_t nodes, tensors, dynamic;
    uint64_t weight_bytes, activation_bytes, file_bytes;
    int ok;
    char msg[1024];
} result;

static result measure(const char *path, int runs, const char *dim)
{
    int fds[2];
    result r;
    memset(&r, 0, sizeof r);
    if (pipe(fds) != 0) { snprintf(r.msg, sizeof r.msg, "pipe failed"); return r; }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        result c;
        memset(&c, 0, sizeof c);
        c.rss_before_kib = maxrss_kib();
        c.best_s = 1e30;
        bp_onnx_options o;
        bp_onnx_options_init(&o);
        FILE *devnull = fopen("/dev/null", "w");
        o.warnings = devnull;
        const char *dn[1] = {dim};
        int64_t dv[1] = {1};
        if (dim) { o.n_dims = 1; o.dim_names = dn; o.dim_values = dv; }
        for (int i = 0; i < runs; i++) {
            bp_graph *g = NULL;
            bp_error err;
            bp_onnx_stats st;
            double t0 = now();
            bp_status s = bp_onnx_read_ex(path, &o, NULL, &g, &st, &err);
            double t = now() - t0;
            if (s) { memcpy(c.msg, err.msg, sizeof c.msg); c.msg[sizeof c.msg - 1] = 0; break; }
            if (t < c.best_s) c.best_s = t;
            c.ok = 1;
            c.nodes = st.n_nodes;
            c.tensors = bp_graph_n_tensors(g);
            c.dynamic = st.n_dynamic;
            c.weight_bytes = st.weight_bytes;
            c.activation_bytes = st.activation_bytes;
            c.file_bytes = st.file_bytes;
            if (i == 0) c.rss_after_kib = maxrss_kib();
            bp_graph_free(g);
        }
        if (devnull) fclose(devnull);
        ssize_t w = write(fds[1], &c, sizeof c);
        _exit(w == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)sizeof r) { memset(&r, 0, sizeof r); snprintf(r.msg, sizeof r.msg, "child failed"); }
    return r;
}

/* Synthetic model: x[1,1024] -> MatMul(w_i[1024,1024]) x layers -> y, weights as holes. */
static int write_synthetic(const char *path, int layers)
{
    const int64_t dim = 1024;
    const uint64_t payload = (uint64_t)dim * (uint64_t)dim * 4;
    pb nodes = {0}, io = {0};
    char in[32], out[32], w[32];
    for (int i = 0; i < layers; i++) {
        snprintf(in, sizeof in, i ? "h%d" : "x", i);
        snprintf(out, sizeof out, i == layers - 1 ? "y" : "h%d", i + 1);
        snprintf(w, sizeof w, "w%d", i);
        const char *ins[] = {in, w, NULL}, *outs[] = {out, NULL};
        pb n = ox_node("MatMul", NULL, ins, outs, NULL, 0);
        pb_msg(&nodes, 1, &n);
    }
    int64_t xd[2] = {1, dim};
    pb vi = ox_value_info("x", OX_FLOAT, 2, xd, NULL);
    pb_msg(&io, 11, &vi);
    vi = ox_value_info("y", OX_FLOAT, 2, xd, NULL);
    pb_msg(&io, 12, &vi);
    /* initializer headers; the payload follows each as a hole */
    pb *hdr = calloc((size_t)layers, sizeof *hdr);
    uint64_t graph_len = nodes.n + io.n;
    for (int i = 0; i < layers; i++) {
        snprintf(w, sizeof w, "w%d", i);
        pb_int(&hdr[i], 1, dim);
        pb_int(&hdr[i], 1, dim);
        pb_int(&hdr[i], 2, OX_FLOAT);
        pb_str(&hdr[i], 8, w);
        pb_tag(&hdr[i], 9, 2);
        pb_varint(&hdr[i], payload);
        uint64_t init_len = hdr[i].n + payload;
        graph_len += 1 + pb_varint_len(init_len) + init_len;
    }
    pb head = {0}, os = {0};
    pb_int(&head, 1, 8);
    pb_str(&head, 2, "bufplan-bench");
    pb_int(&os, 2, 17);
    pb_msg(&head, 8, &os);
    pb_tag(&head, 7, 2);
    pb_varint(&head, graph_len);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0;
    ok = ok && write(fd, head.d, head.n) == (ssize_t)head.n;
    ok = ok && write(fd, nodes.d, nodes.n) == (ssize_t)nodes.n;
    for (int i = 0; i < layers && ok; i++) {
        pb e = {0};
        pb_tag(&e, 5, 2);
        pb_varint(&e, hdr[i].n + payload);
        pb_raw(&e, hdr[i].d, hdr[i].n);
        ok = write(fd, e.d, e.n) == (ssize_t)e.n && lseek(fd, (off_t)payload, SEEK_CUR) >= 0;
        pb_free(&e);
    }
    ok = ok && write(fd, io.d, io.n) == (ssize_t)io.n;
    if (fd >= 0) close(fd);
    for (int i = 0; i < layers; i++) pb_free(&hdr[i]);
    free(hdr);
    pb_free(&head);
    pb_free(&nodes);
    pb_free(&io);
    return ok ? 0 : -1;
}

typedef struct model { char path[1024]; off_t size; int nodes; } model;

static void scan(const char *dir, model *by_size, model *by_nodes)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(p, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) { scan(p, by_size, by_nodes); continue; }
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".onnx")) continue;
        if (sb.st_size > by_size->size) { snprintf(by_size->path, sizeof by_size->path, "%s", p); by_size->size = sb.st_size; }
        bp_onnx_options o;
        bp_onnx_options_init(&o);
        FILE *devnull = fopen("/dev/null", "w");
        o.warnings = devnull;
        o.unknown_op_dynamic = 1;
        bp_graph *g = NULL;
        bp_error err;
        if (!bp_onnx_read(p, &o, NULL, &g, &err) && bp_graph_n_ops(g) > by_nodes->nodes) {
            snprintf(by_nodes->path, sizeof by_nodes->path, "%s", p);
            by_nodes->nodes = bp_graph_n_ops(g);
        }
        bp_graph_free(g);
        if (devnull) fclose(devnull);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    int quick = 0, json = 0, mib = 1024;
    const char *models[64];
    int nm = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--synthetic-mib") && i + 1 < argc) mib = atoi(argv[++i]);
        else if (argv[i][0] == '-') { fprintf(stderr, "usage: bench_onnx_import [--quick] [--json] [--synthetic-mib N] [MODEL.onnx...]\n"); return 2; }
        else if (nm < 64) models[nm++] = argv[i];
    }
    if (!bp_onnx_available()) { fprintf(stderr, "bench_onnx_import: built without ONNX support\n"); return 2; }
    static model by_size, by_nodes;
    if (!nm) {
        const char *data = getenv("BP_DATA") ? getenv("BP_DATA") : "../shared/data";
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/onnx", data);
        scan(dir, &by_size, &by_nodes);
        if (by_size.path[0]) models[nm++] = by_size.path;
        if (by_nodes.path[0] && strcmp(by_nodes.path, by_size.path)) models[nm++] = by_nodes.path;
    }
    char synth[64];
    snprintf(synth, sizeof synth, "/tmp/bufplan_synthetic_%d.onnx", (int)getpid());
    int layers = mib / 4 > 0 ? mib / 4 : 1;
    if (write_synthetic(synth, layers) != 0) { fprintf(stderr, "cannot write %s\n", synth); unlink(synth); return 1; }
    int runs = quick ? 3 : 10;
    if (json) printf("{\"bench\": \"onnx_import\", \"runs\": %d, \"results\": [\n", runs);
    else {
        printf("| model | file MiB | nodes | tensors | weights MiB | activations MiB | import ms (best of %d) | peak RSS MiB (before -> after) |\n", runs);
        printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    }
    for (int i = 0; i <= nm; i++) {
        const char *p = i < nm ? models[i] : synth;
        const char *dim = strstr(p, "/torchvision/") ? "N" : NULL;
        result r = measure(p, runs, dim);
        const char *base = i < nm ? (strrchr(p, '/') ? strrchr(p, '/') + 1 : p) : "synthetic (weights as holes)";
        if (!r.ok) { fprintf(stderr, "%s: %s\n", p, r.msg); continue; }
        if (json)
            printf("%s{\"model\": \"%s\", \"file_bytes\": %llu, \"nodes\": %d, \"tensors\": %d, \"weight_bytes\": %llu, "
                   "\"activation_bytes\": %llu, \"import_seconds\": %.6f, \"rss_before_kib\": %ld, \"rss_after_kib\": %ld}\n",
                   i ? "," : "", base, (unsigned long long)r.file_bytes, r.nodes, r.tensors, (unsigned long long)r.weight_bytes,
                   (unsigned long long)r.activation_bytes, r.best_s, r.rss_before_kib, r.rss_after_kib);
        else
            printf("| %s | %.1f | %d | %d | %.1f | %.1f | %.2f | %.1f -> %.1f |\n", base, (double)r.file_bytes / 1048576.0, r.nodes,
                   r.tensors, (double)r.weight_bytes / 1048576.0, (double)r.activation_bytes / 1048576.0, r.best_s * 1e3,
                   (double)r.rss_before_kib / 1024.0, (double)r.rss_after_kib / 1024.0);
    }
    if (json) printf("]}\n");
    unlink(synth);
    return 0;
}
