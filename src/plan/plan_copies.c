/*
 * plan_copies.c — the public side of recompute and offload: a plan's copies
 * (bp_plan_n_copies, bp_plan_copy), their kind names, and the --fallback
 * words (bp_fallback_parse).  The copies are made by fallback.c.
 */
#include "plan/plan_internal.h"

#include <string.h>

int32_t bp_plan_n_copies(const bp_plan *p) { return p ? p->n_copies : 0; }

const bp_copy *bp_plan_copy(const bp_plan *p, int32_t i) { return p && i >= 0 && i < p->n_copies ? &p->copies[i] : NULL; }

const char *bp_copy_kind_name(bp_copy_kind k)
{
    return k == BP_COPY_RECOMPUTE ? "recompute" : k == BP_COPY_PREFETCH ? "prefetch" : "?";
}

bool bp_fallback_parse(const char *s, unsigned *out)
{
    if (!s || !*s) return false;
    if (!strcmp(s, "none")) { *out = BP_FALLBACK_NONE; return true; }
    unsigned v = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 9 && !strncmp(s, "recompute", 9)) v |= BP_FALLBACK_RECOMPUTE;
        else if (n == 7 && !strncmp(s, "offload", 7)) v |= BP_FALLBACK_OFFLOAD;
        else return false;
        s += n;
        if (*s == ',') { s++; if (!*s) return false; }
    }
    *out = v;
    return true;
}
