/*
 * viz_style.c — what the pictures share so that they read the same and the
 * SVG and the HTML page agree: the palette (18 colours at least 25 apart in
 * CIELAB, then grey for "other"), colours by legend rank (an op type's colour
 * is its rank by bytes drawn, so the biggest types get the distinct colours
 * and no two legend entries share one), y ticks at round values in one unit
 * (1, 2, 5 x 10^k of B, KiB, MiB, ...: the unit of the axis's maximum), and
 * the range of steps where anything is planned (the leading and trailing
 * steps with nothing in the arena are left out of the x axis).
 */
#include "plan/plan_internal.h"
#include "viz/viz_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const bp__viz_pal[BP__VIZ_NPAL] = {
    "#4363d8", "#e6194b", "#3cb44b", "#ffe119", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45", "#fabed4",
    "#469990", "#dcbeff", "#9a6324", "#800000", "#aaffc3", "#808000", "#ffd8b1", "#000075", "#a9a9a9"};

typedef struct vs_rank { int32_t type; uint64_t bytes; } vs_rank;

static int vs_cmp(const void *x, const void *y)
{
    const vs_rank *a = x, *b = y;
    if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
    return a->type - b->type;
}

int32_t bp__viz_type_colors(const bp_graph *g, const bp_plan *p, uint8_t *col, int32_t *order)
{
    size_t nty = g->types.n;
    vs_rank *r = bp__calloc(&g->alloc, nty ? nty : 1, sizeof *r);
    if (!r) return -1;
    for (size_t i = 0; i < nty; i++) r[i].type = (int32_t)i;
    for (size_t t = 0; t < g->n_t; t++)
        if (p->tp[t].offset != BP_NO_OFFSET && p->tp[t].first >= 0 && g->t[t].producer >= 0)
            r[g->o[g->t[t].producer].type].bytes += p->tp[t].bytes;
    qsort(r, nty, sizeof *r, vs_cmp);
    int32_t n_drawn = 0;
    for (size_t i = 0; i < nty; i++) {
        col[r[i].type] = (uint8_t)(i < BP__VIZ_NPAL - 1 ? i : BP__VIZ_NPAL - 1);
        if (order) order[i] = r[i].type;
        if (r[i].bytes) n_drawn++;
    }
    bp__free(&g->alloc, r, (nty ? nty : 1) * sizeof *r);
    return n_drawn;
}

void bp__viz_ticks_make(double ymax, int n, bp__viz_ticks *t) { bp__viz_ticks_range(0, ymax, n, t); }

void bp__viz_ticks_range(double lo, double hi, int n, bp__viz_ticks *t)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    t->unit = 1;
    while (hi >= 1024 * t->unit && u < 5) { t->unit *= 1024; u++; }
    t->uname = units[u];
    double raw = (hi - lo) / t->unit / (n > 0 ? n : 1), p = pow(10, floor(log10(raw > 0 ? raw : 1))), fr = raw / p;
    double k = fr < 1.5 ? 1 : fr < 3 ? 2 : fr < 7 ? 5 : 10;
    if (u == 0 && k * p < 1) { k = 1; p = 1; }   /* no fractions of a byte */
    t->step = k * p * t->unit;
    t->decimals = p < 1 ? (int)lround(-log10(p)) : 0;
}

const char *bp__viz_fmt_tick(const bp__viz_ticks *t, double b, char *buf, size_t cap)
{
    double v = b / t->unit, q = pow(10, t->decimals);
    v = floor(v * q + 0.5) / q;
    if (v == 0) snprintf(buf, cap, "0");
    else snprintf(buf, cap, "%.*f %s", t->decimals, v, t->uname);
    return buf;
}

void bp__viz_step_range(const bp_plan *p, int32_t *lo, int32_t *hi)
{
    int32_t a = p->n_o, b = 0;
    for (int32_t t = 0; t < p->n_t; t++) {
        const bp_tensor_plan *tp = &p->tp[t];
        if (tp->offset == BP_NO_OFFSET || tp->first < 0) continue;
        if (tp->first < a) a = tp->first;
        if (tp->last + 1 > b) b = tp->last + 1;
    }
    if (a >= b) { a = 0; b = p->n_o; }
    *lo = a;
    *hi = b;
}

const char *bp__viz_skipped_note(int32_t lo, int32_t hi, int32_t steps, char *buf, size_t cap)
{
    char a[48] = "", b[48] = "";
    if (lo > 0) snprintf(a, sizeof a, lo == 1 ? "step 0" : "steps 0-%d", lo - 1);
    if (hi < steps) snprintf(b, sizeof b, hi == steps - 1 ? "step %d" : "steps %d-%d", hi, steps - 1);
    if (!a[0] && !b[0]) buf[0] = 0;
    else snprintf(buf, cap, " (not shown: %s%s%s, nothing planned)", a, a[0] && b[0] ? " and " : "", b);
    return buf;
}
