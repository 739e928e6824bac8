/*
 * names.c — the names of the strategies and kinds (the words the CLI, the
 * config files and the plan JSON use), parsed by linear search over a table,
 * and the planner's option defaults.  Every stage may name a strategy, so
 * this sits at the bottom.
 */
#include "core/internal.h"

#include <string.h>

static const char *const sched_names[BP_SCHED_COUNT] = {
    "given", "kahn", "dfs", "list", "lpmf", "seed", "best", "optimal",
};

const char *bp_sched_name(bp_sched_kind k) { return (unsigned)k < BP_SCHED_COUNT ? sched_names[k] : "?"; }

int bp_sched_parse(const char *s, bp_sched_kind *out)
{
    for (int i = 0; i < BP_SCHED_COUNT; i++)
        if (strcmp(s, sched_names[i]) == 0) { *out = (bp_sched_kind)i; return 0; }
    return -1;
}

static const char *const assign_names[BP_ASSIGN_COUNT] = {"naive", "color", "bestfit", "search"};
static const char *const kind_names[] = {"planned", "input", "weight", "output", "dynamic", "workspace"};

const char *bp_assign_name(bp_assign_kind k) { return (unsigned)k < BP_ASSIGN_COUNT ? assign_names[k] : "?"; }
const char *bp_tensor_kind_name(bp_tensor_kind k) { return (unsigned)k <= BP_KIND_WORKSPACE ? kind_names[k] : "?"; }

int bp_assign_parse(const char *s, bp_assign_kind *out)
{
    for (int i = 0; i < BP_ASSIGN_COUNT; i++)
        if (strcmp(s, assign_names[i]) == 0) { *out = (bp_assign_kind)i; return 0; }
    return -1;
}

void bp_plan_options_init(bp_plan_options *o)
{
    memset(o, 0, sizeof *o);
    o->sched = BP_SCHED_BEST;
    o->assign = BP_ASSIGN_BESTFIT;
    o->alpha = 0.7;
    o->beta = 0.3;
    o->alignment = 256;
    o->time_limit = 10.0;
    o->seed = 1;
    o->threads = 1;
    o->fallback = BP_FALLBACK_RECOMPUTE | BP_FALLBACK_OFFLOAD;
    o->host_bandwidth = BP_HOST_BANDWIDTH_DEFAULT;
}

