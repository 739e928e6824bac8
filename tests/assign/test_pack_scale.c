/* bestfit at scale: a CNN-like instance of 50,000 buffers (bench/cnnlike.h,
 * the generator bench_pack_scale measures) is packed and the layout checked
 * by the independent checker (bp_intervals_check); its arena is within
 * 0.1% of max-live (without the window phase bestfit ends 0.22% above it
 * on this instance).  The window phase is deterministic: two calls give the same
 * offsets.  Pass / fail only, no timing. */
#include "check.h"
#include "bufplan.h"
#include "../../bench/cnnlike.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    size_t n = 50000;
    bp_interval *iv = malloc(n * sizeof *iv);
    uint64_t *off = malloc(n * sizeof *off), *off2 = malloc(n * sizeof *off2);
    REQUIRE(iv && off && off2);
    cnnlike_gen(iv, n, 1);
    bp_assign_result r, r2;
    bp_error e;
    CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, NULL, off, &r, &e), e);
    CHECK_OK(bp_intervals_check(iv, n, off, r.arena_bytes, &e), e);
    uint64_t lb = bp_intervals_max_live(iv, n);
    CHECK(r.arena_bytes >= lb);
    CHECK_MSG((double)r.arena_bytes <= 1.001 * (double)lb, "bestfit %llu is %.4f x max-live %llu",
              (unsigned long long)r.arena_bytes, (double)r.arena_bytes / (double)lb, (unsigned long long)lb);
    CHECK_OK(bp_assign_intervals(iv, n, BP_ASSIGN_BESTFIT, NULL, off2, &r2, &e), e);
    CHECK(r2.arena_bytes == r.arena_bytes && memcmp(off, off2, n * sizeof *off) == 0);
    free(iv);
    free(off);
    free(off2);
    return check_status();
}
