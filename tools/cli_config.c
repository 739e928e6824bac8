/*
 * cli_config.c — the configuration flags shared by `bufplan config` and
 * `bufplan plan`: --config FILE, --preset NAME and one flag per runtime
 * knob.  Precedence: defaults < preset < config file < flags, whatever the
 * order on the command line (a prescan applies the first three).
 */
#include "cli_dyn.h"

#include <stdio.h>
#include <string.h>

const char cli_config_opts_help[] =
    "  --config FILE          a JSON config file (docs/DYNAMIC.md lists the keys)\n"
    "  --preset NAME          inference (peak first) or training (throughput)\n"
    "  --replan, --no-replan  re-plan each new shape signature during warm-up\n"
    "  --warmup-runs K        runs that may re-plan (0 = until frozen)\n"
    "  --dynamic-policy P     after warm-up: conservative, cover or error\n"
    "  --buckets SYM=B1,B2    round a symbol up to its bucket (repeatable)\n"
    "  --compaction-interval N  pool: merge free blocks every N frees\n"
    "  --cache DIR            plan cache directory\n"
    "  --no-cache-verify      trust cached plans after the structural checks\n"
    "  --set KEY=VALUE        any config key\n";

int cli_config_prescan(bp_config *cfg, int argc, char **argv, const char *cmd)
{
    const char *file = NULL, *preset = NULL;
    bp_error err = {0};
    bp_config_init(cfg);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") || !strcmp(argv[i], "--preset")) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", argv[i]);
            if (argv[i][2] == 'c') file = argv[i + 1]; else preset = argv[i + 1];
            i++;
        }
    }
    if (preset && bp_config_preset(cfg, preset, &err)) return cli_usage_error(cmd, "%s", err.msg);
    if (file && bp_config_read_preset(cfg, file, preset, &err)) return cli_fail(&err);
    return CLI_OK;
}

static const char *cfg_value(int argc, char **argv, int *i, const char *cmd)
{
    if (*i + 1 >= argc) { cli_usage_error(cmd, "%s needs a value", argv[*i]); return NULL; }
    return argv[++*i];
}

static int cfg_apply(bp_config *cfg, const char *key, const char *val, const char *cmd)
{
    bp_error err = {0};
    if (bp_config_set(cfg, key, val, &err)) { cli_usage_error(cmd, "%s", err.msg); return -1; }
    return 1;
}

int cli_config_opt(bp_config *cfg, int argc, char **argv, int *i, const char *cmd)
{
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--config") || !strcmp(a, "--preset")) {
        if (!cfg_value(argc, argv, i, cmd)) return -1;
        return 1; /* applied by the prescan */
    }
    if (!strcmp(a, "--replan")) return cfg_apply(cfg, "replan", "true", cmd);
    if (!strcmp(a, "--no-replan")) return cfg_apply(cfg, "replan", "false", cmd);
    if (!strcmp(a, "--no-cache-verify")) return cfg_apply(cfg, "cache_verify", "false", cmd);
    if (!strcmp(a, "--cache-verify")) return cfg_apply(cfg, "cache_verify", "true", cmd);
    static const struct { const char *flag, *key; } valued[] = {
        {"--warmup-runs", "warmup_runs"}, {"--dynamic-policy", "dynamic_policy"}, {"--buckets", "buckets"},
        {"--compaction-interval", "compaction_interval"}, {"--cache", "cache_dir"},
    };
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
        if (strcmp(a, valued[k].flag)) continue;
        if (!(v = cfg_value(argc, argv, i, cmd))) return -1;
        return cfg_apply(cfg, valued[k].key, v, cmd);
    }
    if (!strcmp(a, "--set")) {
        if (!(v = cfg_value(argc, argv, i, cmd))) return -1;
        const char *eq = strchr(v, '=');
        if (!eq || eq == v) { cli_usage_error(cmd, "--set %s: expected KEY=VALUE", v); return -1; }
        char key[64];
        size_t kl = (size_t)(eq - v);
        if (kl >= sizeof key) { cli_usage_error(cmd, "--set %s: unknown key", v); return -1; }
        memcpy(key, v, kl);
        key[kl] = 0;
        return cfg_apply(cfg, key, eq + 1, cmd);
    }
    return 0;
}

void cli_config_limits(cli_graph_opts *go, const bp_config *before, const bp_config *after)
{
    if (!memcmp(&go->lim, &before->limits, sizeof go->lim)) go->lim = after->limits;
    if (go->max_run_bytes == before->max_run_bytes) go->max_run_bytes = after->max_run_bytes;
    if (go->max_memory == before->max_memory) go->max_memory = after->max_memory;
    if (go->max_seconds == before->max_seconds) go->max_seconds = after->max_seconds;
    go->have_lim = true;
}
