/*
 * verify_slices.h — the verifier's check of tensors placed at an offset
 * inside another's storage (Concat slices, Split outputs: concat_inplace).
 * Private to verify.c and verify_slices.c.
 */
#ifndef BP_VERIFY_SLICES_H
#define BP_VERIFY_SLICES_H

#include "plan/plan_internal.h"

typedef struct bp__vslices {
    const bp_graph *g;
    const bp_plan *p;
    const int32_t *vroot;        /* n_t: graph view root (a plan root where the plan does not alias it) */
    int32_t *par;                /* n_t: union-find over storages; a justified slice joins its root's */
    int32_t *sfirst, *slast;     /* per storage: true interval, merged like par */
    uint8_t *sout;               /* per storage: holds a graph output */
    uint64_t *ssize;             /* per storage: bytes from its start that it spans */
    void (*reason)(void *ctx, const char *msg);
    void *ctx;
} bp__vslices;

/* Checks every claim with a view_offset or a Concat / Split placement and
 * joins each justified one to the storage of the tensor that justifies it
 * (the Split's input, the Concat's output or input; before the in-place
 * claims are checked, which may join those storages to others).  BP_ERR_NOMEM, else BP_OK with the problems sent to reason. */
bp_status bp__verify_slices(const bp__vslices *v);

#endif /* BP_VERIFY_SLICES_H */
