/* Fuzzes the MiniMalloc CSV reader; an instance that loads is assigned with
 * each assigner (search with a tiny time limit) and every result must pass
 * the independent bp_intervals_check; the CSV writer runs too. */
#define _GNU_SOURCE
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_limits lim;
    fz_limits(&lim);
    bp_instance *inst = NULL;
    bp_error err = {0};
    if (bp_instance_parse_csv_lim((const char *)data, size, "fuzz.csv", &lim, NULL, &inst, &err) != BP_OK) {
        FZ_ASSERT(inst == NULL, "a failed read returned an instance");
        FZ_ASSERT(err.msg[0] != 0, "an error without a message");
        return 0;
    }
    if (inst->n <= 256) {
        uint64_t *off = calloc(inst->n ? inst->n : 1, sizeof *off);
        for (int k = 0; off && k < BP_ASSIGN_COUNT; k++) {
            bp_assign_options ao;
            bp_assign_options_init(&ao);
            ao.time_limit = 0.005;
            bp_assign_result r;
            memset(&r, 0, sizeof r);
            bp_status s = bp_assign_intervals(inst->iv, inst->n, (bp_assign_kind)k, &ao, off, &r, &err);
            if (s == BP_ERR_INVALID || s == BP_ERR_UNSUPPORTED || s == BP_ERR_LIMIT || s == BP_ERR_TIMEOUT) continue;
            FZ_ASSERT(s == BP_OK, err.msg);
            s = bp_intervals_check(inst->iv, inst->n, off, r.arena_bytes, &err);
            FZ_ASSERT(s == BP_OK, err.msg);
            FZ_ASSERT(r.arena_bytes >= bp_intervals_max_live(inst->iv, inst->n) || k == BP_ASSIGN_COLOR, "arena below max-live");
            if (k == BP_ASSIGN_BESTFIT) {
                FILE *f = fopen("/dev/null", "w");
                if (f) { s = bp_instance_write_csv_file(inst, off, f, &err); fclose(f); FZ_ASSERT(s == BP_OK, err.msg); }
            }
        }
        free(off);
    }
    bp_instance_free(inst);
    return 0;
}
