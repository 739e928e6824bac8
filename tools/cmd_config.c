/*
 * bufplan config --show [--config FILE] [--preset NAME] [flags] — prints the
 * effective configuration (defaults < preset < file < flags) as JSON, the
 * form a config file takes.  --keys lists the keys, --presets the presets.
 */
#include "cli_dyn.h"

#include <stdio.h>
#include <string.h>

static void config_usage(FILE *f)
{
    fprintf(f, "usage: bufplan config --show [--config FILE] [--preset NAME] [options]\n"
               "       bufplan config --keys | --presets\n\n"
               "Prints the effective configuration as JSON: the defaults, then the preset,\n"
               "then the config file, then the flags.\n\noptions:\n%s%s%s"
               "  --show                 print the configuration (the default action)\n"
               "  --keys                 list the config keys\n"
               "  --presets              list the presets\n",
               cli_config_opts_help, cli_plan_opts_help, cli_threads_opt_help);
}

int cmd_config(int argc, char **argv)
{
    bp_config cfg;
    int rc = cli_config_prescan(&cfg, argc, argv, "config");
    if (rc) return rc;
    int keys = 0, presets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (cli_is_help(a)) { config_usage(stdout); return CLI_OK; }
        if ((r = cli_config_opt(&cfg, argc, argv, &i, "config")) || (r = cli_plan_opt(&cfg.plan, argc, argv, &i, "config"))) {
            if (r < 0) return CLI_BAD;
            continue;
        }
        if (!strcmp(a, "--show")) continue;
        if (!strcmp(a, "--keys")) keys = 1;
        else if (!strcmp(a, "--presets")) presets = 1;
        else return cli_usage_error("config", "unknown option %s", a);
    }
    if (keys) for (const char *const *k = bp_config_keys(); *k; k++) puts(*k);
    if (presets) for (const char *const *k = bp_config_presets(); *k; k++) puts(*k);
    if (keys || presets) return CLI_OK;
    bp_error err = {0};
    if (bp_config_write_json(&cfg, stdout, &err)) return cli_fail(&err);
    return CLI_OK;
}
