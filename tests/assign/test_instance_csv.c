/* MiniMalloc CSV instances: reading the shared MiniMalloc and ONNX lifetime
 * files, writing them back, malformed rows with clear errors; and bestfit +
 * search on every shared instance: verified, never below the lower bound. */
#include "bufplan.h"
#include "check.h"

#include <dirent.h>
#include <stdint.h>

typedef unsigned long long ull;

static bp_status parse(const char *text, bp_instance **out, bp_error *e)
{
    return bp_instance_parse_csv(text, strlen(text), "t.csv", NULL, out, e);
}

static void expect_error(const char *text, const char *want1, const char *want2)
{
    bp_instance *inst = (bp_instance *)1;
    bp_error e;
    bp_status s = parse(text, &inst, &e);
    CHECK_MSG(s == BP_ERR_INVALID, "accepted: %s", text);
    CHECK(inst == NULL);
    CHECK_MSG(strstr(e.msg, want1) != NULL, "message \"%s\" lacks \"%s\"", e.msg, want1);
    if (want2) CHECK_MSG(strstr(e.msg, want2) != NULL, "message \"%s\" lacks \"%s\"", e.msg, want2);
}

static void test_parse(void)
{
    bp_instance *inst;
    bp_error e;
    CHECK_OK(parse("id,lower,upper,size\n0,0,3,4\nb,3,9,4\r\n\"c,1\",3,21,4\n", &inst, &e), e);
    REQUIRE(inst);
    CHECK(inst->n == 3 && inst->n_cols == 4);
    CHECK(!strcmp(inst->ids[1], "b") && !strcmp(inst->ids[2], "c,1"));
    CHECK(inst->iv[2].lower == 3 && inst->iv[2].upper == 21 && inst->iv[2].size == 4);
    CHECK(inst->iv[0].fixed_offset == BP_NO_OFFSET && inst->iv[0].alignment == 0);
    bp_instance_free(inst);
    /* extra columns kept, zero sizes with any lifetime, alignment and offset */
    CHECK_OK(parse("id,lower,upper,size,kind,alignment,offset\nx,0,5,0,const,,\ny,5,5,0,act,,\nz,1,4,16,act,8,32\nw,0,9,3,act,,\n",
                   &inst, &e), e);
    REQUIRE(inst);
    CHECK(inst->n == 4 && inst->has_alignment && inst->has_offset);
    CHECK(inst->iv[2].alignment == 8 && inst->iv[2].fixed_offset == 32);
    CHECK(inst->iv[3].fixed_offset == BP_NO_OFFSET);
    CHECK(!strcmp(inst->cells[1 * inst->n_cols + 4], "act"));
    /* write back with offsets: existing offset column replaced */
    FILE *f = tmpfile();
    REQUIRE(f);
    uint64_t off[4] = { 0, 0, 32, 48 };
    CHECK_OK(bp_instance_write_csv_file(inst, off, f, &e), e);
    rewind(f);
    char buf[512];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = 0;
    fclose(f);
    CHECK(strstr(buf, "id,lower,upper,size,kind,alignment,offset\n") == buf);
    CHECK(strstr(buf, "w,0,9,3,act,,48\n") != NULL);
    bp_instance *again;
    CHECK_OK(parse(buf, &again, &e), e);
    if (again) { CHECK(again->n == 4 && again->iv[3].fixed_offset == 48); bp_instance_free(again); }
    bp_instance_free(inst);
    /* the old inclusive `end` header */
    CHECK_OK(parse("buffer,start,end,size\na,0,2,1\n", &inst, &e), e);
    if (inst) { CHECK(inst->iv[0].upper == 3); bp_instance_free(inst); }
    /* empty body: zero rows is a valid (empty) instance */
    CHECK_OK(parse("id,lower,upper,size\n", &inst, &e), e);
    if (inst) { CHECK(inst->n == 0); bp_instance_free(inst); }
    /* capacity from the file name */
    CHECK_OK(bp_instance_parse_csv("id,lower,upper,size\n", 20, "dir/A.1048576.csv", NULL, &inst, &e), e);
    if (inst) { CHECK(inst->capacity == 1048576); bp_instance_free(inst); }
}

static void test_malformed(void)
{
    expect_error("", "t.csv:1", "header");
    expect_error("id,lower,size\n", "t.csv:1", "upper");
    expect_error("id,lower,upper,size\n0,0,3,4\n1,0,3\n", "t.csv:3", "\"1\"");            /* missing column */
    expect_error("id,lower,upper,size\n0,0,3,4\n1,0,3,4,5\n", "t.csv:3", "columns");
    expect_error("id,lower,upper,size\n0,0,3,4\nq,0,3,-4\n", "t.csv:3", "negative size");
    expect_error("id,lower,upper,size\nq,0,3,4.5\n", "t.csv:2", "not an integer");
    expect_error("id,lower,upper,size\nq,zero,3,4\n", "t.csv:2", "not an integer");
    expect_error("id,lower,upper,size\n\nq,5,3,4\n", "t.csv:3", "lower 5 >= upper 3");
    expect_error("id,lower,upper,size\nq,5,5,4\n", "t.csv:2", "\"q\"");
    expect_error("id,lower,upper,size\na,0,3,4\nb,0,3,4\na,1,2,3\n", "t.csv:4", "duplicate id (first on line 2)");
    expect_error("id,lower,upper,size,alignment\na,0,3,4,3\n", "t.csv:2", "power of two");
    expect_error("id,lower,upper,size,alignment,offset\na,0,3,4,4,2\n", "t.csv:2", "multiple");
    expect_error("id,lower,upper,size\n\"a,0,3,4\n", "t.csv:2", "quote");
    expect_error("id,lower,upper,size\n,0,3,4\n", "t.csv:2", "empty id");
    expect_error("id,lower,upper,size,size\n", "t.csv:1", "twice");
    bp_instance *inst;
    bp_error e;
    CHECK(bp_instance_read_csv("/nonexistent/x.csv", NULL, &inst, &e) == BP_ERR_IO);
}

static const char *const kname[] = { "naive", "color", "bestfit", "search" };

/* Every assigner on one file: verified, >= max-live; bestfit <= naive. */
static void run_file(const char *path, double search_limit)
{
    bp_instance *inst;
    bp_error e;
    bp_status s = bp_instance_read_csv(path, NULL, &inst, &e);
    CHECK_MSG(s == BP_OK, "%s: %s", path, e.msg);
    if (s) return;
    CHECK(inst->n > 0);
    uint64_t *off = calloc(inst->n, sizeof *off);
    uint64_t ml = bp_intervals_max_live(inst->iv, inst->n), arena[BP_ASSIGN_COUNT] = {0};
    for (int k = 0; k < BP_ASSIGN_COUNT; k++) {
        bp_assign_options o;
        bp_assign_options_init(&o);
        o.time_limit = search_limit;
        bp_assign_result r;
        s = bp_assign_intervals(inst->iv, inst->n, (bp_assign_kind)k, &o, off, &r, &e);
        CHECK_MSG(s == BP_OK, "%s %s: %s", path, kname[k], e.msg);
        if (s) continue;
        arena[k] = r.arena_bytes;
        s = bp_intervals_check(inst->iv, inst->n, off, r.arena_bytes, &e);
        CHECK_MSG(s == BP_OK, "%s %s: %s", path, kname[k], e.msg);
        CHECK_MSG(r.arena_bytes >= ml && r.lower_bound >= ml && r.lower_bound <= r.arena_bytes,
                  "%s %s: arena %llu lb %llu max-live %llu", path, kname[k], (ull)r.arena_bytes, (ull)r.lower_bound, (ull)ml);
    }
    CHECK(arena[BP_ASSIGN_BESTFIT] <= arena[BP_ASSIGN_NAIVE]);
    CHECK(arena[BP_ASSIGN_SEARCH] <= arena[BP_ASSIGN_BESTFIT]);
    free(off);
    bp_instance_free(inst);
}

static int run_dir(const char *dir, double search_limit)
{
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "note: %s not found, skipped\n", dir); return 0; }
    int count = 0;
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".csv")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        run_file(path, search_limit);
        count++;
    }
    closedir(d);
    return count;
}

static void test_shared_data(void)
{
    char dir[4096];
    const char *data = test_data_dir();
    snprintf(dir, sizeof dir, "%s/minimalloc/challenging", data);
    int n1 = run_dir(dir, 1.0);
    snprintf(dir, sizeof dir, "%s/onnx/lifetimes", data);
    int n2 = run_dir(dir, 0.5);
    snprintf(dir, sizeof dir, "%s/minimalloc/examples/input.12.csv", data);
    run_file(dir, 1.0);
    fprintf(stderr, "%d MiniMalloc and %d ONNX lifetime instances checked\n", n1, n2);
    /* The stored solutions read as fully pre-placed instances and verify. */
    snprintf(dir, sizeof dir, "%s/minimalloc/solutions/D.1048576.solution.csv", data);
    bp_instance *inst;
    bp_error e;
    if (bp_instance_read_csv(dir, NULL, &inst, &e) == BP_OK) {
        uint64_t *off = calloc(inst->n, sizeof *off);
        for (size_t i = 0; i < inst->n; i++) off[i] = inst->iv[i].fixed_offset;
        CHECK_OK(bp_intervals_check(inst->iv, inst->n, off, 1048576, &e), e);
        bp_assign_result r;
        CHECK_OK(bp_assign_intervals(inst->iv, inst->n, BP_ASSIGN_BESTFIT, NULL, off, &r, &e), e);
        CHECK(r.arena_bytes == 1038336);
        free(off);
        bp_instance_free(inst);
    }
}

int main(void)
{
    test_parse();
    test_malformed();
    test_shared_data();
    return check_status();
}
