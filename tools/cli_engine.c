/*
 * cli_engine.c — --engine NAME|FILE for the planning commands: loads the
 * engine profile (a built-in name or a "bufplan-engine" file), gives the
 * graph the workspaces of the profile's formulas, and points the planning
 * options at it; the profile lives as long as the command's graph.
 */
#include "cli.h"

bp_status cli_engine_load(cli_graph_opts *go, bp_graph *g, bp_plan_options *po, bp_error *err)
{
    if (!go->engine) return BP_OK;
    if (!go->engine_obj) {
        bp_status s = bp_engine_load(go->engine, NULL, &go->engine_obj, err);
        if (s) return s;
    }
    bp_status s = bp_engine_apply_workspaces(go->engine_obj, g, err);
    if (s) return s;
    po->engine = go->engine_obj;
    if (bp_engine_concat_inplace(go->engine_obj)) po->concat_inplace = 1;   /* --concat-inplace still counts */
    return BP_OK;
}

void cli_graph_free(cli_graph_opts *go, bp_graph *g)
{
    bp_graph_free(g);
    bp_engine_free(go->engine_obj);
    go->engine_obj = NULL;
}
