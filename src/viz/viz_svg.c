/*
 * viz_svg.c — the parts of the SVG timeline (bp_viz_write_svg, viz.c) that
 * need only the layout: frames with round y ticks in one unit and the step
 * axis over the steps where something is planned (with a note naming the
 * steps left out), the live-bytes curve, and the arena, lower-bound and peak
 * marks.  The peak marker is a solid black line with a triangle above the
 * plot (no legend colour is near black), kept inside the frame even at the
 * last step, its label on the side with room.
 */
#include "viz/viz_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

/* A round tick step near span/n: 1, 2, 5 x 10^k. */
double bp__viz_nice(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw))), fr = raw / p;
    return (fr < 1.5 ? 1 : fr < 3 ? 2 : fr < 7 ? 5 : 10) * p;
}

/* Frames, round y ticks in one unit, step ticks, axis titles. */
void bp__viz_svg_axes(const bp__viz_svg *v, int32_t n_steps)
{
    FILE *f = v->f;
    char b1[48], note[160];
    for (int plot = 0; plot < 2; plot++) {
        double y0 = plot ? v->ltop : v->top, ph = plot ? v->LH : v->TH;
        const bp__viz_ticks *tk = &v->tk[plot];
        fprintf(f, "<path d=\"M%.1f %.1fH%.1fV%.1fH%.1fZ\" fill=\"#fafafa\" stroke=\"#999\"/>\n", v->L, y0, v->L + v->pw, y0 + ph, v->L);
        fputs("<g stroke=\"#0000001a\">", f);
        for (double b = tk->step; b <= v->ymax; b += tk->step)
            fprintf(f, "<path d=\"M%.1f %.1fH%.1f\"/>", v->L, y0 + ph - b / v->ymax * ph, v->L + v->pw);
        fputs("</g>\n<g class=\"yticks\" text-anchor=\"end\" fill=\"#444\">", f);
        for (double b = 0; b <= v->ymax; b += tk->step)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", v->L - 4, y0 + ph - b / v->ymax * ph + 4, bp__viz_fmt_tick(tk, b, b1, sizeof b1));
        fputs("</g>\n<g text-anchor=\"middle\" fill=\"#444\">", f);
        double xs = bp__viz_nice(v->steps, 10);
        if (xs < 1) xs = 1;
        for (double x = ceil(v->lo / xs) * xs; x <= v->hi; x += xs)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.0f</text>", bp__viz_sx(v, x), y0 + ph + 14, x);
        fputs("</g>\n", f);
    }
    fprintf(f, "<text class=\"xtitle\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">step%s</text>\n", v->L + v->pw,
            v->top + v->TH + 30, bp__viz_skipped_note(v->lo, v->hi, n_steps, note, sizeof note));
    fprintf(f, "<text x=\"14\" y=\"%.1f\" fill=\"#444\" transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">offset</text>\n",
            v->top + v->TH / 2, v->top + v->TH / 2);
    fprintf(f, "<text x=\"14\" y=\"%.1f\" fill=\"#444\" transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">live</text>\n",
            v->ltop + v->LH / 2, v->ltop + v->LH / 2);
}

/* Live bytes: a step curve, one column per pixel when steps outnumber them. */
void bp__viz_svg_live(const bp__viz_svg *v, const uint64_t *live)
{
    FILE *f = v->f;
    double base = v->ltop + v->LH;
    size_t n = (size_t)v->steps;
    fprintf(f, "<path fill=\"#4e79a759\" stroke=\"#4e79a7\" d=\"M%.2f %.2f", v->L, base);
    if (n > (size_t)v->pw * 2) {
        for (int px = 0; px < (int)v->pw; px++) {
            size_t s0 = (size_t)((double)px / v->pw * v->steps), s1 = (size_t)((double)(px + 1) / v->pw * v->steps);
            uint64_t m = 0;
            for (size_t st = s0; st < s1 && st < n; st++) if (live[v->lo + st] > m) m = live[v->lo + st];
            double y = base - (double)m / v->ymax * v->LH;
            fprintf(f, "L%.2f %.2fL%.2f %.2f", v->L + px, y, v->L + px + 1, y);
        }
    } else {
        for (size_t st = 0; st < n; st++) {
            double y = base - (double)live[v->lo + st] / v->ymax * v->LH;
            fprintf(f, "L%.2f %.2fL%.2f %.2f", bp__viz_sx(v, (double)(v->lo + st)), y, bp__viz_sx(v, (double)(v->lo + st + 1)), y);
        }
    }
    fprintf(f, "L%.2f %.2fZ\"/>\n", v->L + v->pw, base);
}

/* The arena and lower-bound lines and the peak marker in both plots.  The
 * marker is a solid black line (no legend colour is near black) with a
 * triangle above the plot, kept inside the frame even at the last step, its
 * label on the side with room. */
void bp__viz_svg_marks(const bp__viz_svg *v)
{
    FILE *f = v->f;
    double xp = v->peak_step >= 0 ? bp__viz_sx(v, v->peak_step + 0.5) : 0;
    if (xp < v->L + 1.5) xp = v->L + 1.5;
    if (xp > v->L + v->pw - 1.5) xp = v->L + v->pw - 1.5;
    bool right = xp > v->L + v->pw / 2;
    for (int plot = 0; plot < 2; plot++) {
        double y0 = plot ? v->ltop : v->top, ph = plot ? v->LH : v->TH;
        double ya = y0 + ph - (double)v->arena / v->ymax * ph, yl = y0 + ph - (double)v->peak / v->ymax * ph;
        fprintf(f, "<path d=\"M%.1f %.2fH%.1f\" stroke=\"#c0392b\" stroke-width=\"1.5\"/>\n", v->L, ya, v->L + v->pw);
        fprintf(f, "<path d=\"M%.1f %.2fH%.1f\" stroke=\"#1f5fbf\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n", v->L, yl, v->L + v->pw);
        if (v->peak_step >= 0)
            fprintf(f, "<path class=\"peak\" d=\"M%.2f %.1fV%.1f\" stroke=\"#000000\" stroke-width=\"2\"/>\n", xp, y0, y0 + ph);
        if (plot) continue;
        if (v->peak_step >= 0) fprintf(f, "<path d=\"M%.2f %.1fl-5 -8h10Z\" fill=\"#000000\"/>\n", xp, y0 - 1);
        /* labels on the side away from the marker: arena then lower bound, left to right */
        fprintf(f, "<text x=\"%.1f\" y=\"%.2f\" fill=\"#c0392b\">arena %s</text>\n", right ? v->L + 4 : v->L + v->pw / 2 + 4, ya - 3,
                v->arena_txt);
        fprintf(f, "<text x=\"%.1f\" y=\"%.2f\" fill=\"#1f5fbf\" text-anchor=\"end\">lower bound %s</text>\n",
                right ? v->L + v->pw / 2 : v->L + v->pw - 4, yl - 3, v->peak_txt);
        if (v->peak_step >= 0)
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"%s\">peak, step %d</text>\n", right ? xp - 4 : xp + 4, y0 + ph - 4,
                    right ? "end" : "start", v->peak_step);
    }
}
