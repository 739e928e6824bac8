/*
 * report.c — every scheduler x every assigner on one graph.
 *
 * Each scheduler runs once (bp_schedule; those this build lacks answer
 * BP_ERR_UNSUPPORTED and are listed as skipped), then every assigner plans
 * that order with bp_plan_graph_order and bp_verify checks the result.  A
 * failing combination becomes a row with its status, so one slow or broken
 * strategy never hides the others.  The table is written as text, CSV or
 * JSON, and as an SVG bar chart (one group per scheduler).
 */
#include "plan/plan_internal.h"
#include "core/progress.h"
#include "bufplan_viz.h"
#include "viz/viz_internal.h"

#include <math.h>
#include <string.h>

static const char *rep_status_word(bp_status s)
{
    switch (s) {
    case BP_OK: return "ok";
    case BP_ERR_BUDGET: return "over-budget";
    case BP_ERR_TIMEOUT: return "timeout";
    case BP_ERR_UNSUPPORTED: return "unsupported";
    case BP_ERR_VERIFY: return "unsound";
    case BP_ERR_NOMEM: return "out-of-memory";
    default: return "error";
    }
}

/* Copies a message, truncated, with newlines turned into "; ". */
static void rep_msg(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; *src && n + 3 < cap; src++) {
        if (*src == '\n') { dst[n++] = ';'; dst[n++] = ' '; }
        else dst[n++] = *src;
    }
    dst[n] = 0;
}

static void rep_counts(bp_report *out, const bp_plan_stats *st)
{
    out->have_counts = 1;
    out->n_planned = st->n_planned;
    out->n_views = st->n_views;
    out->n_dynamic = st->n_dynamic;
    out->n_inputs = st->n_inputs;
    out->n_weights = st->n_weights;
}

bp_status bp_report_run(const bp_graph *g, const bp_plan_options *base, bp_report *out, bp_error *err)
{
    if (g->n_bodies)
        return bp__err(err, BP_ERR_UNSUPPORTED, "%s: the report compares strategies on graphs without control flow; this one has %d control-flow ops (plan it with bufplan plan -s and -a)",
                       g->name, (int)bp_graph_n_control_flow(g));
    if (!g || !out) return bp__err(err, BP_ERR_USAGE, "report: NULL graph or report");
    if (!g->finalized) return bp__err(err, BP_ERR_USAGE, "%s: the graph is not finalized", g->name);
    bp_plan_options defaults;
    if (!base) { bp_plan_options_init(&defaults); base = &defaults; }
    memset(out, 0, sizeof *out);
    snprintf(out->graph, sizeof out->graph, "%s", g->name ? g->name : "");
    out->n_ops = (int32_t)g->n_o;
    out->n_tensors = (int32_t)g->n_t;
    int32_t *order = bp__alloc(&g->alloc, (g->n_o ? g->n_o : 1) * sizeof *order);
    if (!order) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory for the report", g->name);
    bp__progress pr;
    bp__progress_start(&pr, base->progress, "report");
    int total = BP_SCHED_COUNT * BP_ASSIGN_COUNT, done = 0;
    bp_status fatal = BP_OK;
    for (int k = 0; k < BP_SCHED_COUNT && !fatal; k++) {
        bp_plan_options o = *base;
        o.sched = (bp_sched_kind)k;
        o.progress = 0; /* one progress line: this one */
        bp_error e = {0};
        bp__progress_update(&pr, (double)done / total, "%s", bp_sched_name(o.sched));
        double t0 = bp__now();
        bp_status ss = bp_schedule(g, &o, order, &e);
        double ts = bp__now() - t0;
        if (ss == BP_ERR_UNSUPPORTED) {
            out->skipped[out->n_skipped++] = o.sched;
            done += BP_ASSIGN_COUNT;
            continue;
        }
        for (int a = 0; a < BP_ASSIGN_COUNT; a++, done++) {
            bp_report_row *r = &out->rows[out->n_rows++];
            r->sched = o.sched;
            r->assign = (bp_assign_kind)a;
            if (ss) {
                r->status = ss;
                rep_msg(r->error, sizeof r->error, e.msg);
                if (ss == BP_ERR_NOMEM) fatal = ss;
                continue;
            }
            bp__progress_update(&pr, (double)done / total, "%s + %s", bp_sched_name(o.sched), bp_assign_name(r->assign));
            o.assign = r->assign;
            bp_plan *p = NULL;
            bp_error pe = {0};
            bp_status ps = bp_plan_graph_order(g, &o, order, &p, &pe);
            r->status = ps;
            if (ps) {
                rep_msg(r->error, sizeof r->error, pe.msg);
                if (ps == BP_ERR_NOMEM) { fatal = ps; break; }
                continue;
            }
            const bp_plan_stats *st = bp_plan_get_stats(p);
            r->arena_bytes = st->arena_bytes;
            r->lower_bound_bytes = st->lower_bound_bytes;
            r->naive_bytes = st->naive_bytes;
            r->plan_seconds = ts + st->plan_seconds;
            r->optimal = st->optimal;
            if (!out->have_counts) rep_counts(out, st);
            bp_error ve = {0};
            r->verified = bp_verify(g, p, &ve) == BP_OK;
            if (!r->verified) {
                r->status = BP_ERR_VERIFY;
                rep_msg(r->error, sizeof r->error, ve.msg);
            }
            bp_plan_free(p);
        }
    }
    bp__progress_end(&pr);
    bp__free(&g->alloc, order, (g->n_o ? g->n_o : 1) * sizeof *order);
    if (fatal) return bp__err(err, fatal, "%s: out of memory while planning the report", g->name);
    return BP_OK;
}

static double rep_ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0; }

/* CSV field: quoted when it has a comma, quote or newline. */
static void rep_csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
    }
    fputc('"', f);
}

/* The counts line, and "nothing planned" when the arena holds nothing. */
static void rep_text_counts(const bp_report *r, FILE *f)
{
    if (!r->have_counts) return;
    fprintf(f, "tensors: %d planned, %d views, %d dynamic (not planned), external: %d inputs, %d weights\n", r->n_planned,
            r->n_views, r->n_dynamic, r->n_inputs, r->n_weights);
    if (!r->n_planned)
        fprintf(f, "nothing planned: %s\n", r->n_dynamic ? "every activation is dynamic (bind its symbolic dimensions)"
                                                         : "no op makes a tensor the arena would hold");
}

static void rep_text(const bp_report *r, FILE *f)
{
    char b1[32], b2[32];
    fprintf(f, "graph %s: %d ops, %d tensors\n", r->graph, r->n_ops, r->n_tensors);
    rep_text_counts(r, f);
    fprintf(f, "%-9s %-8s %12s %12s %9s %12s %10s\n", "scheduler", "assigner", "arena", "lower bound", "arena/lb", "arena/naive", "plan ms");
    uint64_t naive = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const bp_report_row *w = &r->rows[i];
        if (w->status) {
            fprintf(f, "%-9s %-8s %s: %.90s\n", bp_sched_name(w->sched), bp_assign_name(w->assign), rep_status_word(w->status), w->error);
            continue;
        }
        if (w->naive_bytes > naive) naive = w->naive_bytes;
        fprintf(f, "%-9s %-8s %12s %12s %9.3f %12.3f %10.2f%s\n", bp_sched_name(w->sched), bp_assign_name(w->assign),
                bp__viz_fmt_bytes(w->arena_bytes, b1, sizeof b1), bp__viz_fmt_bytes(w->lower_bound_bytes, b2, sizeof b2),
                rep_ratio(w->arena_bytes, w->lower_bound_bytes), rep_ratio(w->arena_bytes, w->naive_bytes), w->plan_seconds * 1e3,
                w->optimal ? "  optimal" : "");
    }
    fprintf(f, "naive (every planned tensor that is no view its own aligned buffer): %s\n", bp__viz_fmt_bytes(naive, b1, sizeof b1));
    if (r->n_skipped) {
        fputs("not in this build:", f);
        for (int i = 0; i < r->n_skipped; i++) fprintf(f, " %s", bp_sched_name(r->skipped[i]));
        fputc('\n', f);
    }
}

static void rep_csv(const bp_report *r, FILE *f)
{
    fputs("graph,scheduler,assigner,status,arena_bytes,lower_bound_bytes,naive_bytes,ratio_lower_bound,ratio_naive,plan_seconds,optimal,verified,error\n", f);
    for (int i = 0; i < r->n_rows; i++) {
        const bp_report_row *w = &r->rows[i];
        rep_csv_str(f, r->graph);
        fprintf(f, ",%s,%s,%s,", bp_sched_name(w->sched), bp_assign_name(w->assign), rep_status_word(w->status));
        if (!w->status)
            fprintf(f, "%llu,%llu,%llu,%.6f,%.6f,%.6f,%d,%d,", (unsigned long long)w->arena_bytes,
                    (unsigned long long)w->lower_bound_bytes, (unsigned long long)w->naive_bytes,
                    rep_ratio(w->arena_bytes, w->lower_bound_bytes), rep_ratio(w->arena_bytes, w->naive_bytes), w->plan_seconds,
                    w->optimal, w->verified);
        else
            fputs(",,,,,,,0,", f);
        rep_csv_str(f, w->error);
        fputc('\n', f);
    }
}

static void rep_json(const bp_report *r, FILE *f)
{
    fputs("{\"format\":\"bufplan-report\",\"version\":1,\"graph\":", f);
    bp__viz_json_str(f, r->graph);
    fprintf(f, ",\"ops\":%d,\"tensors\":%d", r->n_ops, r->n_tensors);
    if (r->have_counts)
        fprintf(f, ",\"planned\":%d,\"views\":%d,\"dynamic\":%d,\"inputs\":%d,\"weights\":%d", r->n_planned, r->n_views,
                r->n_dynamic, r->n_inputs, r->n_weights);
    fputs(",\"skipped\":[", f);
    for (int i = 0; i < r->n_skipped; i++) fprintf(f, "%s\"%s\"", i ? "," : "", bp_sched_name(r->skipped[i]));
    fputs("],\"rows\":[", f);
    for (int i = 0; i < r->n_rows; i++) {
        const bp_report_row *w = &r->rows[i];
        fprintf(f, "%s\n{\"scheduler\":\"%s\",\"assigner\":\"%s\",\"status\":\"%s\"", i ? "," : "", bp_sched_name(w->sched),
                bp_assign_name(w->assign), rep_status_word(w->status));
        if (!w->status)
            fprintf(f, ",\"arena_bytes\":%llu,\"lower_bound_bytes\":%llu,\"naive_bytes\":%llu,\"ratio_lower_bound\":%.6f,"
                       "\"ratio_naive\":%.6f,\"plan_seconds\":%.6f,\"optimal\":%s,\"verified\":%s,\"error\":null}",
                    (unsigned long long)w->arena_bytes, (unsigned long long)w->lower_bound_bytes, (unsigned long long)w->naive_bytes,
                    rep_ratio(w->arena_bytes, w->lower_bound_bytes), rep_ratio(w->arena_bytes, w->naive_bytes), w->plan_seconds,
                    w->optimal ? "true" : "false", w->verified ? "true" : "false");
        else {
            fputs(",\"error\":", f);
            bp__viz_json_str(f, w->error);
            fputc('}', f);
        }
    }
    fputs("]}\n", f);
}

bp_status bp_report_write_file(const bp_report *r, const char *format, FILE *f, bp_error *err)
{
    if (!r || !f) return bp__err(err, BP_ERR_USAGE, "report: NULL report or stream");
    if (!format || !strcmp(format, "text")) rep_text(r, f);
    else if (!strcmp(format, "csv")) rep_csv(r, f);
    else if (!strcmp(format, "json")) rep_json(r, f);
    else return bp__err(err, BP_ERR_USAGE, "report: unknown format \"%s\" (text, csv or json)", format);
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "%s: write error writing the report", r->graph);
    return BP_OK;
}

bp_status bp_report_write(const bp_report *r, const char *format, const char *path, bp_error *err)
{
    if (!path) return bp__err(err, BP_ERR_USAGE, "report: NULL path");
    if (format && strcmp(format, "text") && strcmp(format, "csv") && strcmp(format, "json"))
        return bp__err(err, BP_ERR_USAGE, "report: unknown format \"%s\" (text, csv or json)", format);
    bp__outfile o;
    bp_status s = bp__out_open(&o, path, err);
    if (s) return s;
    if ((s = bp_report_write_file(r, format, o.f, err))) { bp__out_abort(&o); return s; }
    return bp__out_commit(&o, err);
}

/* ----------------------------------------------------------- bar chart */

static const char *const rep_pal[] = {"#a9a9a9", "#f58231", "#4363d8", "#3cb44b", "#911eb4", "#e6194b", "#42d4f4", "#ffe119"};

/* The chart's layout.  The y axis is broken: the plot shows [ylo, ytop],
 * from just under the smallest arena or lower bound (0 when that is not far
 * from the top) to just over the largest arena that is not the naive
 * assigner's, so strategies 10% apart differ by a third of the plot.  Bars
 * above ytop (naive, often) cross a break band above the plot, cut with a
 * zigzag and labelled; the naive line is drawn in that band. */
typedef struct rep_chart {
    FILE *f;
    double L, top, band, ph, pw, gw, W, H, ylo, ytop;
    bp__viz_ticks tk;
} rep_chart;

static double rep_y(const rep_chart *c, double b) { return c->top + c->band + c->ph - (b - c->ylo) / (c->ytop - c->ylo) * c->ph; }

/* ylo and ytop from the rows (see rep_chart). */
static void rep_scale(const bp_report *r, rep_chart *c)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const bp_report_row *w = &r->rows[i];
        if (w->status) continue;
        double a = (double)w->arena_bytes, lb = (double)w->lower_bound_bytes;
        if (lb > 0 && (!lo || lb < lo)) lo = lb;
        if (!lo || a < lo) lo = a;
        if (w->assign != BP_ASSIGN_NAIVE && a > hi) hi = a;
        if (lb > hi) hi = lb;
    }
    if (hi <= 0) {   /* only naive rows: the plain scale */
        for (int i = 0; i < r->n_rows; i++) if (!r->rows[i].status && (double)r->rows[i].arena_bytes > hi) hi = (double)r->rows[i].arena_bytes;
        lo = 0;
    }
    if (hi <= 0) hi = 1;
    c->ytop = hi * 1.05;
    bp__viz_ticks_range(0, c->ytop, 6, &c->tk);
    /* start near the smallest value when it is far from 0; the ticks are redone
     * for the range shown (twice: the floor moves with the finer step) */
    c->ylo = lo > 0.4 * hi ? floor(lo * 0.92 / c->tk.step) * c->tk.step : 0;
    for (int k = 0; k < 2 && c->ylo > 0; k++) {
        bp__viz_ticks_range(c->ylo, c->ytop, 6, &c->tk);
        c->ylo = floor(lo * 0.92 / c->tk.step) * c->tk.step;
    }
}

/* The y axis: round ticks in one unit, and the breaks. */
static void rep_axis(const rep_chart *c, uint64_t naive)
{
    FILE *f = c->f;
    char b1[48];
    double base = c->top + c->band + c->ph;
    fprintf(f, "<path d=\"M%.1f %.1fV%.1fH%.1f\" stroke=\"#999\" fill=\"none\"/>\n", c->L, c->top + c->band, base, c->L + c->pw);
    fputs("<g class=\"yticks\" fill=\"#444\" text-anchor=\"end\">", f);
    for (double b = ceil(c->ylo / c->tk.step) * c->tk.step; b <= c->ytop; b += c->tk.step) {
        double y = rep_y(c, b);
        fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#0000001a\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>", c->L, y, c->L + c->pw, c->L - 4,
                y + 4, bp__viz_fmt_tick(&c->tk, b, b1, sizeof b1));
    }
    fputs("</g>\n", f);
    if (c->ylo > 0)   /* the axis does not start at 0 */
        fprintf(f, "<path class=\"break\" d=\"M%.1f %.1fl8 -4M%.1f %.1fl8 -4\" stroke=\"#444\" stroke-width=\"1.5\"/>\n", c->L - 4,
                base - 6, c->L - 4, base - 2);
    if ((double)naive > c->ytop) {
        double y = c->top + c->band / 2;
        fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#666\" stroke-dasharray=\"6 4\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#444\" "
                   "text-anchor=\"end\"><title>naive %s, above the break</title>naive</text>\n", c->L, y, c->L + c->pw, c->L - 4, y + 4,
                bp__viz_fmt_bytes(naive, b1, sizeof b1));
        fprintf(f, "<path class=\"break\" d=\"M%.1f %.1fH%.1f\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>\n", c->L, c->top + c->band, c->L + c->pw);
    } else if (naive) {
        fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#666\" stroke-dasharray=\"6 4\"/>\n", c->L, rep_y(c, (double)naive), c->L + c->pw);
    }
}

/* One bar; a bar above the plot crosses the band, cut by a zigzag, with its value. */
static void rep_bar(const rep_chart *c, const bp_report_row *w, double x, double bw)
{
    FILE *f = c->f;
    char b1[32];
    double base = c->top + c->band + c->ph, a = (double)w->arena_bytes;
    bool over = a > c->ytop;
    double yt = over ? c->top + 14 : rep_y(c, a);
    fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s + %s: %s</title></rect>\n",
            x + 1, yt, bw - 2, base - yt, rep_pal[w->assign % 8], bp_sched_name(w->sched), bp_assign_name(w->assign),
            bp__viz_fmt_bytes(w->arena_bytes, b1, sizeof b1));
    if (!over) return;
    double yz = c->top + c->band - 6;
    fprintf(f, "<path d=\"M%.1f %.1fl%.1f -4l%.1f 4l%.1f -4\" stroke=\"#fff\" stroke-width=\"3\" fill=\"none\"/>\n", x + 1, yz, (bw - 2) / 3,
            (bw - 2) / 3, (bw - 2) / 3);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\" fill=\"#444\">%s</text>\n", x + bw / 2, c->top + 10,
            bp__viz_fmt_bytes(w->arena_bytes, b1, sizeof b1));
}

bp_status bp_report_write_svg_file(const bp_report *r, FILE *f, bp_error *err)
{
    if (!r || !f) return bp__err(err, BP_ERR_USAGE, "report: NULL report or stream");
    /* groups: schedulers with rows, in row order */
    bp_sched_kind groups[BP_SCHED_COUNT];
    int ng = 0;
    uint64_t naive = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const bp_report_row *w = &r->rows[i];
        if (!ng || groups[ng - 1] != w->sched) groups[ng++] = w->sched;
        if (!w->status && w->naive_bytes > naive) naive = w->naive_bytes;
    }
    rep_chart c;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.L = 84;
    c.top = 52;
    c.band = 36;
    c.ph = 300;
    /* at most 1,400 px wide: groups narrow before the chart grows past it */
    c.gw = 44.0 * BP_ASSIGN_COUNT + 24;
    if (ng && c.L + 16 + ng * c.gw > 1400) c.gw = (1400 - c.L - 16) / ng;
    c.W = c.L + 16 + (ng ? ng : 1) * c.gw;
    if (c.W < 520) c.W = 520;
    c.pw = c.W - c.L - 16;
    c.H = c.top + c.band + c.ph + 60;
    rep_scale(r, &c);
    char b1[32], b2[48];
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n<path d=\"M0 0H%.0fV%.0fH0Z\" fill=\"#ffffff\"/>\n",
            c.W, c.H, c.W, c.H, c.W, c.H);
    fputs("<text x=\"12\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", f);
    bp__viz_xml_str(f, r->graph);
    if (r->have_counts && !r->n_planned)
        fprintf(f, ": arena by scheduler and assigner</text>\n<text x=\"12\" y=\"37\" fill=\"#b00\">%d ops, %d tensors; "
                   "nothing planned: %d dynamic tensors (not planned), %d inputs and %d weights (external)</text>\n",
                r->n_ops, r->n_tensors, r->n_dynamic, r->n_inputs, r->n_weights);
    else
        fprintf(f, ": arena by scheduler and assigner</text>\n<text x=\"12\" y=\"37\" fill=\"#444\">%d ops, %d tensors; "
                   "black tick: lower bound of the order; dashed: naive %s%s%s</text>\n",
                r->n_ops, r->n_tensors, bp__viz_fmt_bytes(naive, b1, sizeof b1), c.ylo > 0 ? "; the y axis is broken: it starts at " : "",
                c.ylo > 0 ? bp__viz_fmt_tick(&c.tk, c.ylo, b2, sizeof b2) : "");
    rep_axis(&c, naive);
    double base = c.top + c.band + c.ph, gstep = c.pw / (ng ? ng : 1);
    for (int gi = 0; gi < ng; gi++) {
        double gx = c.L + gi * gstep, bw = (gstep - 24) / BP_ASSIGN_COUNT;
        uint64_t lb = 0;
        for (int i = 0; i < r->n_rows; i++) {
            const bp_report_row *w = &r->rows[i];
            if (w->sched != groups[gi]) continue;
            double x = gx + 12 + w->assign * bw;
            if (w->status) {
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#b00\" text-anchor=\"middle\">%s</text>\n", x + bw / 2, base - 4,
                        w->status == BP_ERR_TIMEOUT ? "t/o" : "x");
                continue;
            }
            if (w->lower_bound_bytes > lb) lb = w->lower_bound_bytes;
            rep_bar(&c, w, x, bw);
        }
        if (lb)
            fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#000\" stroke-width=\"2\"/>\n", gx + 8, rep_y(&c, (double)lb), gx + gstep - 8);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", gx + gstep / 2, base + 16, bp_sched_name(groups[gi]));
    }
    for (int a = 0; a < BP_ASSIGN_COUNT; a++) {
        double x = c.L + a * 110;
        fprintf(f, "<path d=\"M%.1f %.1fh10v10h-10Z\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x, base + 32,
                rep_pal[a % 8], x + 14, base + 41, bp_assign_name((bp_assign_kind)a));
    }
    fputs("</svg>\n", f);
    if (ferror(f)) return bp__err(err, BP_ERR_IO, "%s: write error writing the chart", r->graph);
    return BP_OK;
}

bp_status bp_report_write_svg(const bp_report *r, const char *path, bp_error *err)
{
    if (!path) return bp__err(err, BP_ERR_USAGE, "report: NULL path");
    bp__outfile o;
    bp_status s = bp__out_open(&o, path, err);
    if (s) return s;
    if ((s = bp_report_write_svg_file(r, o.f, err))) { bp__out_abort(&o); return s; }
    return bp__out_commit(&o, err);
}
