/*
 * viz_internal.h — text escaping shared by viz.c and report.c.
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

#endif /* BP_VIZ_INTERNAL_H */
