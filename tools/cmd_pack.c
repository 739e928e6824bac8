/*
 * cmd_pack.c — `bufplan pack INSTANCE.csv`: offsets for a MiniMalloc CSV
 * instance (time x bytes packing), written back as the same rows plus an
 * offset column.  With --capacity it answers the decision question like
 * MiniMalloc's solver: exit 0 when it fits, 1 when it does not (or no
 * packing under the capacity was found in time).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char pack_help[] =
    "usage: bufplan pack INSTANCE.csv [-a naive|color|bestfit|search] [--time-limit S]\n"
    "                    [--capacity N] [-o OUT.csv] [--quiet]\n"
    "\n"
    "Packs the buffers of a MiniMalloc CSV instance (id,lower,upper,size, optional\n"
    "alignment and offset columns; lifetimes are half-open [lower, upper)) into one\n"
    "arena and writes the rows with an offset column to OUT.csv (stdout without -o).\n"
    "Rows with an offset are pre-placed there.  A summary (arena, lower bound,\n"
    "optimal?, time) goes to stderr.\n"
    "\n"
    "  -a STRATEGY      assigner (default search: exact, anytime)\n"
    "  --time-limit S   seconds for search (default 10)\n"
    "  --capacity N     decision mode: does it fit in N bytes?  Prints fits / does\n"
    "                   not fit; exit 1 when it does not fit or none was found\n"
    "  -o FILE          output CSV (default stdout)\n"
    "  --quiet          no summary or progress line\n"
    "\n"
    "Exit codes: 0 ok (fits), 1 does not fit the capacity, 2 bad input or usage.\n";

int cmd_pack(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    bp_assign_kind kind = BP_ASSIGN_SEARCH;
    bp_assign_options o;
    bp_assign_options_init(&o);
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(pack_help, stdout); return CLI_OK; }
        if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) { quiet = 1; continue; }
        if (!strcmp(a, "-a") || !strcmp(a, "-o") || !strcmp(a, "--time-limit") || !strcmp(a, "--capacity")) {
            if (i + 1 >= argc) return cli_usage_error("pack", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "-a")) {
                if (bp_assign_parse(v, &kind) != 0) return cli_usage_error("pack", "unknown assigner \"%s\"", v);
            } else if (!strcmp(a, "-o")) {
                out = v;
            } else if (!strcmp(a, "--time-limit")) {
                if (!cli_parse_double(v, &o.time_limit) || o.time_limit < 0)
                    return cli_usage_error("pack", "bad --time-limit \"%s\"", v);
            } else {
                if (!cli_parse_bytes(v, &o.capacity) || o.capacity == 0)
                    return cli_usage_error("pack", "bad --capacity \"%s\"", v);
            }
            continue;
        }
        if (a[0] == '-' && a[1]) return cli_usage_error("pack", "unknown option \"%s\"", a);
        if (in) return cli_usage_error("pack", "more than one instance file");
        in = a;
    }
    if (!in) return cli_usage_error("pack", "no instance file given");
    o.progress = !quiet;

    bp_error err;
    bp_instance *inst;
    if (bp_instance_read_csv(in, NULL, &inst, &err) != BP_OK) return cli_fail(&err);
    uint64_t *off = calloc(inst->n ? inst->n : 1, sizeof *off);
    if (!off) { bp_instance_free(inst); fprintf(stderr, "bufplan: out of memory\n"); return CLI_BAD; }
    bp_assign_result r;
    bp_status s = bp_assign_intervals(inst->iv, inst->n, kind, &o, off, &r, &err);
    if (s == BP_OK) s = bp_intervals_check(inst->iv, inst->n, off, r.arena_bytes, &err);
    if (s != BP_OK) {
        int rc = cli_fail(&err);
        free(off); bp_instance_free(inst);
        return rc;
    }
    int rc = CLI_OK;
    const char *verdict = NULL;
    if (o.capacity) {
        if (r.arena_bytes <= o.capacity) verdict = "fits";
        else if (r.fits == 0) { verdict = "does not fit"; rc = CLI_FAIL; }
        else { verdict = "unknown: no packing under the capacity found within the time limit"; rc = CLI_FAIL; }
    }
    if (!quiet) {
        fprintf(stderr, "%s: %zu buffers, %s: arena %llu bytes, lower bound %llu (%+.2f%%), %s, %.3f s",
                in, inst->n, bp_assign_name(kind), (unsigned long long)r.arena_bytes,
                (unsigned long long)r.lower_bound,
                r.lower_bound ? 100.0 * ((double)r.arena_bytes - (double)r.lower_bound) / (double)r.lower_bound : 0.0,
                r.optimal ? "optimal" : "not proven optimal", r.seconds);
        if (kind == BP_ASSIGN_SEARCH) fprintf(stderr, ", %llu nodes", (unsigned long long)r.nodes);
        fputc('\n', stderr);
    }
    if (verdict) fprintf(stderr, "capacity %llu: %s\n", (unsigned long long)o.capacity, verdict);
    /* the packing is written only when there is one (under the capacity) */
    if (rc == CLI_OK && bp_instance_write_csv(inst, off, out ? out : "-", &err) != BP_OK) rc = cli_fail(&err);
    free(off);
    bp_instance_free(inst);
    return rc;
}
