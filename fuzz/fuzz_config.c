/* Fuzzes the config reader (bp_config_parse_json); a config that loads is
 * written back and must read again to the same JSON text. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include <bufplan_dyn.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_config c;
    bp_config_init(&c);
    bp_error err = {0};
    if (bp_config_parse_json(&c, (const char *)data, size, "fuzz.config.json", &err) != BP_OK) {
        FZ_ASSERT(err.msg[0] != 0, "an error without a message");
        return 0;
    }
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    FILE *f = open_memstream(&a, &na);
    if (!f) return 0;
    bp_status s = bp_config_write_json(&c, f, &err);
    fclose(f);
    FZ_ASSERT(s == BP_OK, err.msg);
    bp_config d;
    bp_config_init(&d);
    s = bp_config_parse_json(&d, a, na, "roundtrip.json", &err);
    FZ_ASSERT(s == BP_OK, err.msg);
    f = open_memstream(&b, &nb);
    if (f) {
        bp_config_write_json(&d, f, &err);
        fclose(f);
        FZ_ASSERT(na == nb && memcmp(a, b, na) == 0, "config round trip changed the text");
    }
    free(a);
    free(b);
    return 0;
}
