/*
 * progress.h — a progress line on stderr for long work (search, optimal
 * scheduling, large graphs, reports).  Module-private; not installed.
 *
 * The caller keeps a bp__progress on its stack (no global state):
 *
 *     bp__progress pr;
 *     bp__progress_start(&pr, opts->progress, "search");
 *     for (...) bp__progress_update(&pr, done / (double)total, "%zu nodes", n);
 *     bp__progress_end(&pr);
 *
 * The line is shown only when `enabled`, stderr is a terminal (isatty(2)) and
 * the work has been running for more than a second, so short runs, pipes, log
 * files and tests stay silent.  It is redrawn with '\r' at most ten times a
 * second, and bp__progress_end() erases it.  Updates are cheap (one clock read
 * when enabled, nothing when not), so calling it every iteration is fine.
 * Not thread-safe: one bp__progress per thread, or update from one thread.
 */
#ifndef BP_PROGRESS_H
#define BP_PROGRESS_H

#include <stdio.h>

typedef struct bp__progress {
    FILE *out;          /* NULL when silent */
    double start;       /* bp__now() at start */
    double delay;       /* seconds before the first line (1.0) */
    double next;        /* earliest time of the next redraw */
    int width;          /* characters of the last line drawn, 0 = none shown */
    char label[48];
} bp__progress;

/* Starts timing.  enabled = 0 makes every other call a no-op.  label: a short
 * word ("search", "report"), may be NULL. */
void bp__progress_start(bp__progress *p, int enabled, const char *label);
/* As bp__progress_start, with the stream, whether it counts as a terminal and
 * the delay given explicitly (for tests). */
void bp__progress_start_ex(bp__progress *p, int enabled, const char *label, FILE *out,
                           int is_tty, double delay);
/* Redraws "label: 42% text" (fraction in [0, 1]; a negative fraction omits
 * the percentage).  fmt may be NULL. */
void bp__progress_update(bp__progress *p, double fraction, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Erases the line if one was shown. */
void bp__progress_end(bp__progress *p);

#endif /* BP_PROGRESS_H */
