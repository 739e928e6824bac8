/*
 * fault.c — allocation-failure injection for test builds (compiled to
 * nothing unless -DBP_FAULT_INJECTION).  Used by tests/cli/faults.sh to run
 * the CLI's main paths with the n-th allocation failing, for every n.
 *
 *   BP_FAULT_ALLOC=N     the N-th allocation (1-based) fails; later ones
 *                        succeed.  0 = count only.
 *   BP_FAULT_COUNT=FILE  at exit, write the number of allocations there.
 *
 * Counted: the library's libc allocator (bp__libc_allocator, which also
 * backs protobuf-c and the atomic-output buffers) and jansson (hooked with
 * json_set_alloc_funcs at load time).  This is the one place with process
 * state, and it only exists in fault-injection builds; the counter is atomic
 * so the executor's threads may allocate concurrently.
 */
#include "core/internal.h"

#ifdef BP_FAULT_INJECTION
#include "core/json_io.h"
#include <stdio.h>
#include <stdlib.h>

static unsigned long fault_target;        /* 0 = never fail */
static unsigned long fault_count;         /* allocations so far (atomic) */
static const char *fault_count_path;

bool bp__fault_fail(void)
{
    unsigned long k = __atomic_add_fetch(&fault_count, 1, __ATOMIC_RELAXED);
    return fault_target && k == fault_target;
}

static void *fault_json_malloc(size_t n)
{
    void *p = bp__fault_fail() ? NULL : malloc(n);
    if (!p) bp__json_note_oom(n);
    return p;
}

static void fault_report(void)
{
    FILE *f = fopen(fault_count_path, "w");
    if (!f) return;
    fprintf(f, "%lu\n", __atomic_load_n(&fault_count, __ATOMIC_RELAXED));
    fclose(f);
}

__attribute__((constructor)) static void fault_init(void)
{
    const char *n = getenv("BP_FAULT_ALLOC");
    if (!n) return;
    fault_target = strtoul(n, NULL, 10);
    json_set_alloc_funcs(fault_json_malloc, free);
    fault_count_path = getenv("BP_FAULT_COUNT");
    if (fault_count_path) atexit(fault_report);
}
#else
typedef int bp__fault_unused; /* ISO C: a translation unit is not empty */
#endif
