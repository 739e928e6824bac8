/*
 * viz_internal.h — text escaping shared by viz.c and report.c, and the
 * style both pictures share (viz_style.c).
 * Module-private; not installed.
 */
#ifndef BP_VIZ_INTERNAL_H
#define BP_VIZ_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

/* A JSON string literal (with quotes) that is also safe inside an HTML
 * <script> element: < > & and U+2028/9 are \u-escaped, invalid UTF-8
 * becomes U+FFFD.  NULL writes "". */
void bp__viz_json_str(FILE *f, const char *s);
/* Text for XML/HTML content and attribute values: the five entities escaped,
 * invalid UTF-8 and characters XML 1.0 forbids replaced by U+FFFD. */
void bp__viz_xml_str(FILE *f, const char *s);
/* "1.50 MiB", "12.0 KiB", "100 B" (powers of 1024). */
const char *bp__viz_fmt_bytes(uint64_t b, char *buf, size_t cap);


/* ------------------------------------------------ viz_style.c */
struct bp_graph;
struct bp_plan;
#define BP__VIZ_NPAL 19
/* 18 distinct colours, then grey ("other"). */
extern const char *const bp__viz_pal[BP__VIZ_NPAL];
/* col[type] = palette index of each op type: its rank by bytes drawn in p
 * (ties by type id), grey from rank 18 on; order (may be NULL) gets the
 * types by rank.  Returns the number of types with bytes drawn, -1 when out
 * of memory. */
int32_t bp__viz_type_colors(const struct bp_graph *g, const struct bp_plan *p, uint8_t *col, int32_t *order);
/* Y ticks: every `step` bytes, written in one unit with `decimals` places. */
typedef struct bp__viz_ticks { double unit; const char *uname; double step; int decimals; } bp__viz_ticks;
/* About n ticks up to ymax: a step of 1, 2 or 5 x 10^k in the unit of ymax. */
void bp__viz_ticks_make(double ymax, int n, bp__viz_ticks *t);
/* The same for an axis from lo to hi: the unit of hi, the step from hi - lo. */
void bp__viz_ticks_range(double lo, double hi, int n, bp__viz_ticks *t);
/* "0", "200 KiB", "1.5 MiB": b in the ticks' unit. */
const char *bp__viz_fmt_tick(const bp__viz_ticks *t, double b, char *buf, size_t cap);
/* The steps [*lo, *hi) from the first step where a tensor is in the arena to
 * the last (all steps when none is). */
void bp__viz_step_range(const struct bp_plan *p, int32_t *lo, int32_t *hi);
/* " (not shown: steps 0-44 and 300-310, nothing planned)", or "" when the
 * range is every step. */
const char *bp__viz_skipped_note(int32_t lo, int32_t hi, int32_t steps, char *buf, size_t cap);

/* ------------------------------------------------ viz_svg.c */
#include <stdbool.h>
/* The layout of the SVG: plot boxes, the steps drawn [lo, lo + steps), the y scale. */
typedef struct bp__viz_svg {
    FILE *f;
    double W, H, L, pw, top, TH, ltop, LH, ymax, steps;
    int32_t lo, hi, peak_step;
    uint64_t arena, peak;
    char arena_txt[32], peak_txt[32];   /* bp__viz_fmt_bytes of arena and peak */
    bp__viz_ticks tk[2];
} bp__viz_svg;

static inline double bp__viz_sx(const bp__viz_svg *v, double step) { return v->L + (step - v->lo) / v->steps * v->pw; }

/* The parts of the SVG of a plan (viz_svg.c): frames, ticks and axis titles
 * (n_steps: the plan's steps, for the note on the steps not shown); the
 * live-bytes curve (live: per step of the plan); arena, lower bound and peak
 * marks. */
void bp__viz_svg_axes(const bp__viz_svg *v, int32_t n_steps);
void bp__viz_svg_live(const bp__viz_svg *v, const uint64_t *live);
void bp__viz_svg_marks(const bp__viz_svg *v);
/* A round tick step near span/n: 1, 2, 5 x 10^k. */
double bp__viz_nice(double span, int n);

#endif /* BP_VIZ_INTERNAL_H */
