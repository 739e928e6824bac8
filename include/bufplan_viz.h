/* bufplan — pictures and reports of plans (src/viz.c, src/report.c);
 * included by bufplan.h, not meant to be included alone.  docs/VIZ.md
 * describes the pages and the history format. */
/* bufplan.h first (outside the guard): it declares the core types and
 * includes every part of the API in order, this one included. */
#include "bufplan.h"
#ifndef BUFPLAN_VIZ_H
#define BUFPLAN_VIZ_H

#include "bufplan_api.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ timelines */

typedef enum bp_viz_color {
    BP_VIZ_COLOR_OP = 0,   /* by the type of the tensor's producer op */
    BP_VIZ_COLOR_BUFFER    /* by buffer (storage or color) index */
} bp_viz_color;

typedef struct bp_viz_options {
    const char *title;          /* NULL = the graph's name */
    const char *label;          /* the plan's label; NULL = "SCHED + ASSIGN" */
    const bp_plan *compare;     /* a second plan of the same graph, or NULL */
    const char *compare_label;  /* NULL = "SCHED + ASSIGN" of the second plan */
    const char *history_path;   /* an executor history file to show (HTML), or NULL */
    bp_viz_color color;         /* initial coloring (the page has a toggle) */
    int width;                  /* SVG width in pixels, 0 = 1000 */
    int height;                 /* SVG timeline height in pixels, 0 = 420 */
    int progress;               /* progress line on stderr when a terminal */
} bp_viz_options;

BP_API void bp_viz_options_init(bp_viz_options *o);

/* One self-contained HTML page (no network): the memory timeline on a
 * canvas (x = step, y = arena offset, one rectangle per planned tensor,
 * zoom, pan and hover), the live-bytes curve with the lower bound and the
 * arena, the peak step, the tensors live at the peak, the second plan side by
 * side and the executor history when given.  path "-" = stdout; writes are
 * atomic.  The plans must belong to g. */
BP_API bp_status bp_viz_write_html(const bp_graph *g, const bp_plan *p, const bp_viz_options *o,
                                   const char *path, bp_error *err);
BP_API bp_status bp_viz_write_html_file(const bp_graph *g, const bp_plan *p, const bp_viz_options *o,
                                        FILE *f, bp_error *err);
/* A static SVG picture of the timeline and the live-bytes curve: one <rect
 * class="tensor"> per planned tensor, one <rect class="body"> per tensor
 * planned inside a control-flow body, and no other rect.  (o->compare and
 * o->history_path are ignored.) */
BP_API bp_status bp_viz_write_svg(const bp_graph *g, const bp_plan *p, const bp_viz_options *o,
                                  const char *path, bp_error *err);
BP_API bp_status bp_viz_write_svg_file(const bp_graph *g, const bp_plan *p, const bp_viz_options *o,
                                        FILE *f, bp_error *err);

/* Aligned bytes of the planned storages live at each step, read from the
 * plan: live has bp_plan_n_steps(p) entries.  Its maximum is the plan's
 * lower bound, reached first at stats->peak_step. */
BP_API bp_status bp_plan_live_bytes(const bp_plan *p, uint64_t *live, bp_error *err);
/* The storages (their root tensors) live at `step`, largest first, ties by
 * tensor id: writes up to cap ids and returns how many there are in all
 * (-1 if step is out of range). */
BP_API int32_t bp_plan_live_at(const bp_plan *p, int32_t step, int32_t *ids, int32_t cap);

/* -------------------------------------------------------------- reports */

/* One scheduler x assigner run. */
typedef struct bp_report_row {
    bp_sched_kind sched;
    bp_assign_kind assign;
    bp_status status;            /* BP_OK, or why there is no plan */
    char error[160];             /* the message when status != BP_OK */
    uint64_t arena_bytes, lower_bound_bytes, naive_bytes;
    double plan_seconds;         /* schedule + lifetimes + assignment */
    int optimal;                 /* the assigner proved its arena optimal */
    int verified;                /* bp_verify accepted the plan */
} bp_report_row;

typedef struct bp_report {
    char graph[128];
    int32_t n_ops, n_tensors;
    int n_rows;                  /* rows[] in scheduler, then assigner order */
    bp_report_row rows[BP_SCHED_COUNT * BP_ASSIGN_COUNT];
    int n_skipped;               /* schedulers this build does not have */
    bp_sched_kind skipped[BP_SCHED_COUNT];
    /* The tensors by what the plans do with them (bp_plan_stats; the same in
     * every plan, taken from the first that succeeds; all 0 when none does):
     * in the arena (views of planned tensors included), views of any kind,
     * dynamic (an unbound symbolic size: not planned), external inputs and
     * weights.  have_counts is 1 once a plan succeeded. */
    int have_counts;
    int32_t n_planned, n_views, n_dynamic, n_inputs, n_weights;
} bp_report;

/* Plans g with every scheduler the build has (those for which bp_schedule
 * says BP_ERR_UNSUPPORTED are listed in skipped[]) and every assigner, with
 * the other options from base (NULL = defaults; time_limit applies to each
 * search).  A combination that fails is a row with its status and message;
 * the call itself fails only for bad arguments or out of memory. */
BP_API bp_status bp_report_run(const bp_graph *g, const bp_plan_options *base, bp_report *out, bp_error *err);
/* format: "text", "csv" or "json".  path "-" = stdout. */
BP_API bp_status bp_report_write(const bp_report *r, const char *format, const char *path, bp_error *err);
BP_API bp_status bp_report_write_file(const bp_report *r, const char *format, FILE *f, bp_error *err);
/* A grouped bar chart (one group per scheduler, one bar per assigner, the
 * lower bound and the naive size as lines), as SVG. */
BP_API bp_status bp_report_write_svg(const bp_report *r, const char *path, bp_error *err);
BP_API bp_status bp_report_write_svg_file(const bp_report *r, FILE *f, bp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_VIZ_H */
