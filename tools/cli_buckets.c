/*
 * cli_buckets.c — a config's "buckets" on the commands that plan one shape
 * (plan, run): every --dim SYM=V whose symbol has buckets is rounded up to
 * its bucket before the graph is loaded, with a note saying so; a bucketed
 * symbol that no --dim binds gets a note saying why its buckets are not used
 * (never ignored silently).  `run --shapes` replays many shapes through the
 * warm-up planner, which applies the buckets itself.
 */
#include "cli_dyn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The --dim of go that binds sym, or -1. */
static int bk_dim_of(const cli_graph_opts *go, const char *sym)
{
    size_t n = strlen(sym);
    for (int i = 0; i < go->n_dims; i++)
        if (!strncmp(go->dims[i], sym, n) && go->dims[i][n] == '=') return i;
    return -1;
}

int cli_apply_buckets(const bp_config *cfg, cli_graph_opts *go, char (*buf)[CLI_DIM_TEXT], const char *cmd)
{
    int rounded = 0;
    for (int b = 0; b < cfg->n_buckets; b++) {
        const char *sym = cfg->buckets[b].sym;
        int i = bk_dim_of(go, sym);
        if (i < 0) {
            fprintf(stderr, "bufplan %s: note: the buckets of %s are not used: no --dim binds %s (give --dim %s=N to plan its bucket, "
                            "or replay shapes through the buckets with bufplan run GRAPH --shapes FILE)\n", cmd, sym, sym, sym);
            continue;
        }
        char *end;
        errno = 0;
        long long v = strtoll(go->dims[i] + strlen(sym) + 1, &end, 10);
        if (errno || *end || v < 1) continue;   /* reported when the graph is loaded */
        long long r = (long long)bp_config_bucket(cfg, sym, v);
        if (r == v) continue;
        snprintf(buf[i], CLI_DIM_TEXT, "%s=%lld", sym, r);
        fprintf(stderr, "bufplan %s: note: --dim %s is planned as %s (its bucket)\n", cmd, go->dims[i], buf[i]);
        go->dims[i] = buf[i];
        rounded++;
    }
    return rounded;
}
