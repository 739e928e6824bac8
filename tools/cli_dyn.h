/* Command-line helpers for the configuration, the plan cache and dynamic
 * shapes (tools/cli_config.c, tools/cmd_config.c).  To be merged into
 * tools/cli.h by its owner. */
#ifndef BP_CLI_DYN_H
#define BP_CLI_DYN_H
#include "cli.h"
#include "bufplan_dyn.h"

int cmd_config(int argc, char **argv);

/* First pass over argv: the defaults, then --preset NAME, then --config
 * FILE (whose own "preset" key yields to a --preset flag), wherever they
 * appear.  Returns CLI_OK, or an exit code after printing the error. */
int cli_config_prescan(bp_config *cfg, int argc, char **argv, const char *cmd);
/* Second pass: if argv[*i] is a configuration flag (--config / --preset are
 * skipped here, they were applied by the prescan; --replan, --no-replan,
 * --warmup-runs K, --dynamic-policy P, --buckets SYM=B1,B2, --compaction-interval
 * N, --cache DIR, --no-cache-verify, --set KEY=VALUE), applies it over the
 * config and returns 1; 0 if not one; -1 after printing a bad value.
 * Planner flags (-s, -a, --alpha ...) go through cli_plan_opt(&cfg->plan). */
int cli_config_opt(bp_config *cfg, int argc, char **argv, int *i, const char *cmd);
/* The config's limits ("limits", "max_memory", "max_seconds") into go where
 * go still holds what `before` says (no --limit / --max-memory /
 * --max-seconds flag changed it): call with before = the defaults before
 * the flags, and again after them with the config as the prescan left it,
 * so flags win and --set KEY=... counts as a flag. */
void cli_config_limits(cli_graph_opts *go, const bp_config *before, const bp_config *after);
extern const char cli_config_opts_help[];

/* cli_buckets.c: rounds every --dim SYM=V whose symbol has buckets in cfg up
 * to its bucket (the new text in buf[i], go->dims[i] pointed at it), with a
 * note on stderr for each; a bucketed symbol that no --dim binds gets a note
 * saying why its buckets are not used.  Returns the number rounded. */
#define CLI_DIM_TEXT 160
int cli_apply_buckets(const bp_config *cfg, cli_graph_opts *go, char (*buf)[CLI_DIM_TEXT], const char *cmd);

/* cmd_run_shapes.c: `bufplan run GRAPH --shapes FILE`. */
typedef struct cli_replay_opts {
    const char *file;         /* one binding per line: SYM=N SYM=N ... ("freeze" freezes the planner) */
    int threads;
    const char *kernel;       /* "digest" or "empty" */
    double kernel_us;
    uint64_t seed;
} cli_replay_opts;
int cli_run_shapes(const cli_graph_opts *go, const bp_config *cfg, const cli_replay_opts *ro);

#endif
