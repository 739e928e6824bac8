/*
 * json_oom.c — the per-thread record of an allocation jansson failed to
 * get: the size asked for, set by the allocation hooks (json_load.c's, and
 * fault.c's in fault-injection builds), read and cleared by the JSON loader
 * on the same thread (docs/design/json_oom.md).  Its own file so that both
 * hooks can reach it without a file-level cycle.
 */
#include "core/json_io.h"

#include <errno.h>

static _Thread_local size_t jl_oom_bytes;

void bp__json_note_oom(size_t n)
{
    jl_oom_bytes = n ? n : 1;
    errno = ENOMEM;
}

size_t bp__json_take_oom(void)
{
    size_t n = jl_oom_bytes;
    jl_oom_bytes = 0;
    return n;
}
