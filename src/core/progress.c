/*
 * progress.c — the progress line (see progress.h).
 *
 * Quiet by default: nothing is written unless the caller enabled it, stderr
 * is a terminal and a second has passed, so that fast runs never flicker and
 * redirected output never fills with '\r' lines.  Redraws are rate-limited
 * with one clock read per update; the line is padded with spaces to cover a
 * longer previous one, and erased at the end.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/progress.h"
#include "core/internal.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

void bp__progress_start_ex(bp__progress *p, int enabled, const char *label, FILE *out, int is_tty, double delay)
{
    memset(p, 0, sizeof *p);
    if (!enabled || !out || !is_tty) return;
    p->out = out;
    p->start = bp__now();
    p->delay = delay < 0 ? 0 : delay;
    p->next = p->start + p->delay;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "working");
}

void bp__progress_start(bp__progress *p, int enabled, const char *label)
{
    bp__progress_start_ex(p, enabled, label, stderr, enabled && isatty(STDERR_FILENO), 1.0);
}

void bp__progress_update(bp__progress *p, double fraction, const char *fmt, ...)
{
    if (!p->out) return;
    double now = bp__now();
    if (now < p->next) return;
    p->next = now + 0.1;
    char line[160];
    int n = snprintf(line, sizeof line, "%s:", p->label);
    if (n < 0) return;
    if (fraction >= 0 && (size_t)n < sizeof line) {
        if (fraction > 1) fraction = 1;
        n += snprintf(line + n, sizeof line - (size_t)n, " %3d%%", (int)(fraction * 100));
        if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    }
    if (fmt && (size_t)n + 1 < sizeof line) {
        line[n++] = ' ';
        line[n] = 0;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
        if (k > 0) n += k;
        if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    }
    if ((size_t)n < sizeof line) n += snprintf(line + n, sizeof line - (size_t)n, " (%.0f s)", now - p->start);
    int len = (int)strlen(line);
    /* pad over a longer previous line */
    fprintf(p->out, "\r%s%*s", line, p->width > len ? p->width - len : 0, "");
    fflush(p->out);
    p->width = len;
}

void bp__progress_end(bp__progress *p)
{
    if (p->out && p->width > 0) {
        fprintf(p->out, "\r%*s\r", p->width, "");
        fflush(p->out);
    }
    p->out = NULL;
    p->width = 0;
}
