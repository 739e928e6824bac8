/*
 * bufplan gen KIND [options] — writes a generated graph (bp_gen) as a
 * bufplan-graph JSON file.  Option values are checked here (integers in
 * range) and again by bp_gen (per-kind limits); either failure exits 2.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char gen_usage_text[] =
    "usage: bufplan gen KIND [options]\n"
    "\n"
    "Writes a generated graph (format bufplan-graph) with real shapes and dtypes.\n"
    "KIND is one of: chain diamond resnet50 unet transformer randwire\n"
    "\n"
    "options (0 or absent = the generator's default):\n"
    "  --seed N        random seed (default 1); the same seed gives the same graph\n"
    "  --layers N      resnet50: block-count multiplier (1); unet: levels (4);\n"
    "                  transformer: layers (12); randwire: stages (3)\n"
    "  --width N       chain: base width (1024); resnet50: base width (64);\n"
    "                  unet: base channels (64); transformer: model width, a multiple\n"
    "                  of 64 (768); randwire: channels C (78)\n"
    "  --nodes N       chain: number of ops (100); randwire: nodes per stage (32);\n"
    "                  transformer: any N > 0 makes attention heads separate ops\n"
    "  --seq N         transformer: sequence length (1024)\n"
    "  --batch N       batch size (1)\n"
    "  --training      append a backward pass (gradient ops read saved activations)\n"
    "  --symbolic-seq  transformer: the sequence length is the symbol \"S\"\n"
    "  -o FILE         output file (default: standard output)\n"
    "  -h, --help      this text\n";

static void gen_usage(FILE *f) { fputs(gen_usage_text, f); }

/* Parses a decimal integer in [lo, hi]. */
static bool gen_parse_int(const char *s, long long lo, long long hi, long long *out)
{
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static void gen_list_kinds(FILE *f)
{
    fputs("kinds:", f);
    for (const char *const *k = bp_gen_kinds(); *k; k++) fprintf(f, " %s", *k);
    fputc('\n', f);
}

int cmd_gen(int argc, char **argv)
{
    bp_gen_options o;
    bp_gen_options_init(&o);
    const char *kind = NULL, *path = "-";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { gen_usage(stdout); return CLI_OK; }
        if (!strcmp(a, "--training")) { o.training = 1; continue; }
        if (!strcmp(a, "--symbolic-seq")) { o.symbolic_seq = 1; continue; }
        static const char *const int_opts[] = {"--seed", "--layers", "--width", "--nodes", "--seq", "--batch", "-o"};
        int which = -1;
        for (int k = 0; k < (int)(sizeof int_opts / sizeof int_opts[0]); k++)
            if (!strcmp(a, int_opts[k])) which = k;
        if (which >= 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "bufplan gen: %s needs a value\n", a);
                return CLI_BAD;
            }
            const char *v = argv[++i];
            if (which == 6) { path = v; continue; }
            long long x;
            if (which == 0) {
                char *end;
                errno = 0;
                unsigned long long u = strtoull(v, &end, 10);
                if (!*v || *end || errno || v[0] == '-') {
                    fprintf(stderr, "bufplan gen: --seed \"%s\": not a non-negative integer\n", v);
                    return CLI_BAD;
                }
                o.seed = u;
                continue;
            }
            if (!gen_parse_int(v, 1, INT_MAX, &x)) {
                fprintf(stderr, "bufplan gen: %s \"%s\": not an integer in 1..%d\n", a, v, INT_MAX);
                return CLI_BAD;
            }
            int *dst[] = {NULL, &o.layers, &o.width, &o.nodes, &o.seq, &o.batch};
            *dst[which] = (int)x;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "bufplan gen: unknown option \"%s\"\n", a);
            gen_usage(stderr);
            return CLI_BAD;
        }
        if (kind) {
            fprintf(stderr, "bufplan gen: more than one KIND (\"%s\" and \"%s\")\n", kind, a);
            return CLI_BAD;
        }
        kind = a;
    }
    if (!kind) {
        fprintf(stderr, "bufplan gen: no KIND given\n");
        gen_list_kinds(stderr);
        return CLI_BAD;
    }
    bool known = false;
    for (const char *const *k = bp_gen_kinds(); *k; k++) known |= !strcmp(*k, kind);
    if (!known) {
        fprintf(stderr, "bufplan gen: unknown kind \"%s\"\n", kind);
        gen_list_kinds(stderr);
        return CLI_BAD;
    }
    bp_error err = {0};
    bp_graph *g = NULL;
    bp_status s = bp_gen(kind, &o, NULL, &g, &err);
    if (!s) s = bp_graph_write_json(g, path, &err);
    bp_graph_free(g);
    if (s) {
        fprintf(stderr, "bufplan: %s\n", err.msg);
        return s == BP_ERR_BUDGET || s == BP_ERR_VERIFY ? CLI_FAIL : CLI_BAD;
    }
    return CLI_OK;
}
