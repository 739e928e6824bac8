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
extern const char cli_config_opts_help[];

#endif
