/* Plan files: a hand-made plan is written as exactly the JSON and CSV the
 * formats specify and read back field for field; bad plan files (truncated,
 * unknown names, schedules that are not permutations, wrong types, numbers
 * out of range) give BP_ERR_INVALID naming the file and the entry; a plan
 * made by the planner for a real training graph survives the round trip and
 * still verifies. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "plan/plan_internal.h"

#include <unistd.h>

static char tmpdir[512];

/* x (input) -> conv,1 -> a"q -> reshape -> v (view of a"q) -> relu -> b
 *   -> head (with weight w,1) -> y (output); "unused" is a weight nobody
 * reads. */
static bp_graph *tiny_graph(void)
{
    bp_error err;
    bp_graph *g = bp_graph_new("tiny", NULL);
    REQUIRE(g);
    int32_t x, w, a, v, b, y, u, op;
    REQUIRE(!bp_graph_add_tensor(g, "x", 1024, &x, &err));
    REQUIRE(!bp_graph_add_tensor(g, "w,1", 64, &w, &err));
    REQUIRE(!bp_graph_add_tensor(g, "a\"q", 256, &a, &err));
    REQUIRE(!bp_graph_add_tensor(g, "v", 256, &v, &err));
    REQUIRE(!bp_graph_add_tensor(g, "b", 512, &b, &err));
    REQUIRE(!bp_graph_add_tensor(g, "y", 128, &y, &err));
    REQUIRE(!bp_graph_add_tensor(g, "unused", 8, &u, &err));
    REQUIRE(!bp_graph_set_view(g, v, a, &err));
    int32_t hin[2] = {b, w};
    REQUIRE(!bp_graph_add_op(g, "conv,1", "Conv", 1, &x, 1, &a, 0, &op, &err));
    REQUIRE(!bp_graph_add_op(g, "reshape", "Reshape", 1, &a, 1, &v, 0, &op, &err));
    REQUIRE(!bp_graph_add_op(g, "relu", "Relu", 1, &v, 1, &b, 0, &op, &err));
    REQUIRE(!bp_graph_add_op(g, "head", "Gemm", 2, hin, 1, &y, 0, &op, &err));
    REQUIRE(!bp_graph_mark(g, x, BP_TENSOR_INPUT, &err));
    REQUIRE(!bp_graph_mark(g, w, BP_TENSOR_WEIGHT, &err));
    REQUIRE(!bp_graph_mark(g, u, BP_TENSOR_WEIGHT, &err));
    REQUIRE(!bp_graph_mark(g, y, BP_TENSOR_OUTPUT, &err));
    REQUIRE(!bp_graph_finalize(g, &err));
    return g;
}

static bp_plan *tiny_plan(const bp_graph *g)
{
    bp_plan *p = bp__plan_alloc(&bp__libc_allocator, bp_graph_n_tensors(g), bp_graph_n_ops(g));
    REQUIRE(p);
    for (int32_t i = 0; i < 4; i++) p->order[i] = i;
    /* name: first last offset buffer kind alias_of */
    static const struct { const char *n; int32_t f, l; uint64_t off; int32_t buf; bp_tensor_kind k; const char *alias; } T[] = {
        {"x", 0, 0, BP_NO_OFFSET, -1, BP_KIND_INPUT, NULL},
        {"w,1", 3, 3, BP_NO_OFFSET, -1, BP_KIND_WEIGHT, NULL},
        {"a\"q", 0, 1, 0, 0, BP_KIND_PLANNED, NULL},
        {"v", 1, 2, 0, 0, BP_KIND_PLANNED, "a\"q"},
        {"b", 2, 3, 256, 1, BP_KIND_PLANNED, NULL},
        {"y", 3, 3, 0, 2, BP_KIND_OUTPUT, NULL},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        int32_t t = bp_graph_find_tensor(g, T[i].n);
        REQUIRE(t >= 0);
        p->tp[t] = (bp_tensor_plan){T[i].f, T[i].l, T[i].off, bp_graph_tensor_bytes(g, t), T[i].buf, T[i].k,
                                    T[i].alias ? bp_graph_find_tensor(g, T[i].alias) : -1, 0};
    }
    int32_t u = bp_graph_find_tensor(g, "unused");
    p->tp[u].bytes = 8;
    p->tp[u].kind = BP_KIND_WEIGHT;
    static const bp_event E[] = {
        {BP_EV_ALLOC, 2, 0, 0, 0}, {BP_EV_EXEC, -1, 0, -1, BP_NO_OFFSET},
        {BP_EV_EXEC, -1, 1, -1, BP_NO_OFFSET},
        {BP_EV_ALLOC, 4, 2, 1, 256}, {BP_EV_EXEC, -1, 2, -1, BP_NO_OFFSET}, {BP_EV_FREE, 2, 2, 0, 0},
        {BP_EV_ALLOC, 5, 3, 2, 0}, {BP_EV_EXEC, -1, 3, -1, BP_NO_OFFSET}, {BP_EV_FREE, 4, 3, 1, 256},
        {BP_EV_FREE, 0, 0, -1, BP_NO_OFFSET},
    };
    p->n_ev = sizeof E / sizeof E[0];
    REQUIRE(bp__grow(&p->alloc, (void **)&p->ev, &p->cap_ev, p->n_ev, sizeof *p->ev));
    memcpy(p->ev, E, sizeof E);
    p->alignment = 256;
    p->sched = BP_SCHED_KAHN;
    p->assign = BP_ASSIGN_BESTFIT;
    p->stats.arena_bytes = 768;
    p->stats.naive_bytes = 1024;   /* a, b, y aligned to 256 (v is a view) */
    p->stats.lower_bound_bytes = 768;
    p->stats.alias_saved_bytes = 256;
    p->stats.dynamic_bytes = 0;
    p->stats.peak_step = 2;
    p->stats.plan_seconds = 0.125;
    p->stats.optimal = 1;
    p->stats.n_planned = 4;
    p->stats.n_storages = 3;
    p->stats.n_views = 1;
    p->stats.n_inputs = 1;
    p->stats.n_weights = 1;
    return p;
}

static const char tiny_json[] =
    "{\n"
    " \"format\": \"bufplan-plan\",\n"
    " \"version\": 1,\n"
    " \"graph\": \"tiny\",\n"
    " \"arena_bytes\": 768,\n"
    " \"alignment\": 256,\n"
    " \"scheduler\": \"kahn\",\n"
    " \"assigner\": \"bestfit\",\n"
    " \"schedule\": [\"conv,1\", \"reshape\", \"relu\", \"head\"],\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"bytes\": 1024, \"offset\": null, \"first\": 0, \"last\": 0, \"buffer\": -1, \"kind\": \"input\", \"alias_of\": null},\n"
    "  {\"name\": \"w,1\", \"bytes\": 64, \"offset\": null, \"first\": 3, \"last\": 3, \"buffer\": -1, \"kind\": \"weight\", \"alias_of\": null},\n"
    "  {\"name\": \"a\\\"q\", \"bytes\": 256, \"offset\": 0, \"first\": 0, \"last\": 1, \"buffer\": 0, \"kind\": \"planned\", \"alias_of\": null},\n"
    "  {\"name\": \"v\", \"bytes\": 256, \"offset\": 0, \"first\": 1, \"last\": 2, \"buffer\": 0, \"kind\": \"planned\", \"alias_of\": \"a\\\"q\"},\n"
    "  {\"name\": \"b\", \"bytes\": 512, \"offset\": 256, \"first\": 2, \"last\": 3, \"buffer\": 1, \"kind\": \"planned\", \"alias_of\": null},\n"
    "  {\"name\": \"y\", \"bytes\": 128, \"offset\": 0, \"first\": 3, \"last\": 3, \"buffer\": 2, \"kind\": \"output\", \"alias_of\": null}\n"
    " ],\n"
    " \"events\": [\n"
    "  {\"id\": 1, \"type\": \"ALLOC\", \"tensor\": \"a\\\"q\", \"buffer\": 0, \"offset\": 0, \"op\": \"conv,1\"},\n"
    "  {\"id\": 2, \"type\": \"EXEC\", \"tensor\": null, \"buffer\": -1, \"offset\": null, \"op\": \"conv,1\"},\n"
    "  {\"id\": 3, \"type\": \"EXEC\", \"tensor\": null, \"buffer\": -1, \"offset\": null, \"op\": \"reshape\"},\n"
    "  {\"id\": 4, \"type\": \"ALLOC\", \"tensor\": \"b\", \"buffer\": 1, \"offset\": 256, \"op\": \"relu\"},\n"
    "  {\"id\": 5, \"type\": \"EXEC\", \"tensor\": null, \"buffer\": -1, \"offset\": null, \"op\": \"relu\"},\n"
    "  {\"id\": 6, \"type\": \"FREE\", \"tensor\": \"a\\\"q\", \"buffer\": 0, \"offset\": 0, \"op\": \"relu\"},\n"
    "  {\"id\": 7, \"type\": \"ALLOC\", \"tensor\": \"y\", \"buffer\": 2, \"offset\": 0, \"op\": \"head\"},\n"
    "  {\"id\": 8, \"type\": \"EXEC\", \"tensor\": null, \"buffer\": -1, \"offset\": null, \"op\": \"head\"},\n"
    "  {\"id\": 9, \"type\": \"FREE\", \"tensor\": \"b\", \"buffer\": 1, \"offset\": 256, \"op\": \"head\"},\n"
    "  {\"id\": 10, \"type\": \"FREE\", \"tensor\": \"x\", \"buffer\": -1, \"offset\": null, \"op\": \"conv,1\"}\n"
    " ],\n"
    " \"stats\": {\"naive_bytes\": 1024, \"lower_bound_bytes\": 768, \"alias_saved_bytes\": 256, \"dynamic_bytes\": 0, "
    "\"peak_step\": 2, \"n_planned\": 4, \"n_storages\": 3, \"n_views\": 1, \"n_dynamic\": 0, \"n_inputs\": 1, \"n_weights\": 1, "
    "\"plan_seconds\": 0.125, \"optimal\": true}\n"
    "}\n";

static const char tiny_csv[] =
    "event_id,event_type,tensor_name,buffer_index,offset,op_name\n"
    "1,ALLOC,\"a\"\"q\",0,0,\"conv,1\"\n"
    "2,EXEC,,-1,,\"conv,1\"\n"
    "3,EXEC,,-1,,reshape\n"
    "4,ALLOC,b,1,256,relu\n"
    "5,EXEC,,-1,,relu\n"
    "6,FREE,\"a\"\"q\",0,0,relu\n"
    "7,ALLOC,y,2,0,head\n"
    "8,EXEC,,-1,,head\n"
    "9,FREE,b,1,256,head\n"
    "10,FREE,x,-1,,\"conv,1\"\n";

static char *slurp(const char *path, size_t *len)
{
    char *t = NULL;
    bp_error err;
    if (bp__read_file(path, &bp__libc_allocator, &t, len, &err) != BP_OK) { fprintf(stderr, "%s\n", err.msg); return NULL; }
    return t;
}

/* Every field of two plans for the same graph. */
static int plans_equal(const bp_plan *a, const bp_plan *b)
{
    if (a->n_t != b->n_t || a->n_o != b->n_o || a->n_ev != b->n_ev) return 0;
    if (memcmp(a->order, b->order, (size_t)a->n_o * sizeof *a->order) != 0) return 0;
    for (int32_t t = 0; t < a->n_t; t++) {
        const bp_tensor_plan *x = &a->tp[t], *y = &b->tp[t];
        if (x->first != y->first || x->last != y->last || x->offset != y->offset || x->bytes != y->bytes ||
            x->buffer != y->buffer || x->kind != y->kind || x->alias_of != y->alias_of) {
            fprintf(stderr, "tensor %d differs\n", t);
            return 0;
        }
    }
    for (size_t i = 0; i < a->n_ev; i++) {
        const bp_event *x = &a->ev[i], *y = &b->ev[i];
        if (x->type != y->type || x->tensor != y->tensor || x->op != y->op || x->buffer != y->buffer || x->offset != y->offset) {
            fprintf(stderr, "event %zu differs\n", i + 1);
            return 0;
        }
    }
    const bp_plan_stats *s = &a->stats, *r = &b->stats;
    return a->alignment == b->alignment && a->sched == b->sched && a->assign == b->assign &&
           s->arena_bytes == r->arena_bytes && s->naive_bytes == r->naive_bytes && s->lower_bound_bytes == r->lower_bound_bytes &&
           s->alias_saved_bytes == r->alias_saved_bytes && s->dynamic_bytes == r->dynamic_bytes && s->peak_step == r->peak_step &&
           s->plan_seconds == r->plan_seconds && s->optimal == r->optimal && s->n_planned == r->n_planned &&
           s->n_storages == r->n_storages && s->n_dynamic == r->n_dynamic && s->n_views == r->n_views &&
           s->n_inputs == r->n_inputs && s->n_weights == r->n_weights;
}

static void test_tiny_round_trip(void)
{
    bp_graph *g = tiny_graph();
    bp_plan *p = tiny_plan(g);
    bp_error err;
    char path[700], csv[700];
    snprintf(path, sizeof path, "%s/tiny.plan.json", tmpdir);
    snprintf(csv, sizeof csv, "%s/tiny.events.csv", tmpdir);
    CHECK_OK(bp_plan_write_json(p, g, path, &err), err);
    CHECK_OK(bp_plan_write_events_csv(p, g, csv, &err), err);
    size_t len = 0;
    char *text = slurp(path, &len);
    CHECK(text && strcmp(text, tiny_json) == 0);
    if (text && strcmp(text, tiny_json) != 0) fprintf(stderr, "written:\n%s", text);
    free(text);
    text = slurp(csv, &len);
    CHECK(text && strcmp(text, tiny_csv) == 0);
    if (text && strcmp(text, tiny_csv) != 0) fprintf(stderr, "written:\n%s", text);
    free(text);

    bp_plan *q = NULL;
    CHECK_OK(bp_plan_read_json(g, path, &q, &err), err);
    CHECK(q && plans_equal(p, q));
    if (q) {
        /* the unlisted tensor */
        const bp_tensor_plan *u = bp_plan_tensor(q, bp_graph_find_tensor(g, "unused"));
        CHECK(u->first == -1 && u->last == -1 && u->offset == BP_NO_OFFSET && u->buffer == -1 && u->kind == BP_KIND_WEIGHT && u->bytes == 8);
        CHECK(bp_plan_n_events(q) == 10 && bp_plan_alignment(q) == 256);
        bp_plan_free(q);
    }
    /* the same from memory; EXEC events may leave tensor/buffer/offset out */
    char *alt = strdup(tiny_json);
    static const char drop[] = "\"tensor\": null, \"buffer\": -1, \"offset\": null, ";
    char *e = strstr(alt, drop);
    REQUIRE(e);
    memmove(e, e + strlen(drop), strlen(e + strlen(drop)) + 1);
    q = NULL;
    CHECK_OK(bp_plan_parse_json(g, alt, strlen(alt), "alt.json", &q, &err), err);
    CHECK(q && plans_equal(p, q));
    bp_plan_free(q);
    free(alt);
    remove(path);
    remove(csv);
    bp_plan_free(p);
    bp_graph_free(g);
}

/* Replaces the first `from` in tiny_json by `to`; parses; expects
 * BP_ERR_INVALID and a message that starts with the file name and holds
 * each wanted string. */
static void expect_bad_(int line, const bp_graph *g, const char *from, const char *to, const char *const *want)
{
    const char *at = strstr(tiny_json, from);
    REQUIRE(at);
    size_t n = strlen(tiny_json) - strlen(from) + strlen(to) + 1;
    char *t = malloc(n);
    REQUIRE(t);
    snprintf(t, n, "%.*s%s%s", (int)(at - tiny_json), tiny_json, to, at + strlen(from));
    bp_plan *p = (bp_plan *)1;
    bp_error err = {0};
    bp_status s = bp_plan_parse_json(g, t, strlen(t), "bad-plan.json", &p, &err);
    CHECK_MSG(s == BP_ERR_INVALID, "line %d: status %d: %s", line, (int)s, err.msg);
    CHECK_MSG(p == NULL, "line %d: a plan came back", line);
    if (p && p != (bp_plan *)1) bp_plan_free(p);
    CHECK_MSG(strncmp(err.msg, "bad-plan.json", 13) == 0, "line %d: %s", line, err.msg);
    for (int i = 0; want[i]; i++)
        CHECK_MSG(strstr(err.msg, want[i]) != NULL, "line %d: message lacks '%s': %s", line, want[i], err.msg);
    free(t);
}
#define EXPECT_BAD(from, to, ...) expect_bad_(__LINE__, g, from, to, (const char *const[]){__VA_ARGS__, NULL})

static void test_bad_plans(void)
{
    bp_graph *g = tiny_graph();
    /* truncated anywhere: malformed JSON with a position */
    size_t full = strlen(tiny_json);
    for (size_t cut = 0; cut < full - 2; cut += 37) {
        bp_plan *p = (bp_plan *)1;
        bp_error err;
        bp_status s = bp_plan_parse_json(g, tiny_json, cut, "cut.json", &p, &err);
        CHECK_MSG(s == BP_ERR_INVALID && p == NULL && strncmp(err.msg, "cut.json:", 9) == 0 && strstr(err.msg, "malformed JSON"),
                  "cut at %zu: %s", cut, err.msg);
    }
    {
        bp_plan *p = NULL;
        bp_error err;
        CHECK(bp_plan_parse_json(g, "[1, 2]", 6, "arr.json", &p, &err) == BP_ERR_INVALID && !p);
        CHECK_MSG(strstr(err.msg, "arr.json") && strstr(err.msg, "top level"), "%s", err.msg);
    }
    EXPECT_BAD("\"bufplan-plan\"", "\"bufplan-graph\"", "\"format\"", "bufplan-graph");
    EXPECT_BAD("\"version\": 1", "\"version\": 3", "version", "3");
    EXPECT_BAD("\"graph\": \"tiny\"", "\"graph\": 5", "\"graph\"", "an integer");
    EXPECT_BAD("\"arena_bytes\": 768", "\"arena_bytes\": -768", "\"arena_bytes\"", "negative");
    EXPECT_BAD("\"arena_bytes\": 768", "\"arena_bytes\": 7.5", "\"arena_bytes\"", "a real number");
    EXPECT_BAD(" \"alignment\": 256,\n", "", "\"alignment\"", "missing");
    EXPECT_BAD("\"kahn\"", "\"sideways\"", "\"scheduler\"", "\"sideways\"");
    EXPECT_BAD("\"bestfit\"", "[]", "\"assigner\"", "an array");
    /* schedule: unknown op, repeated op, missing op, wrong type */
    EXPECT_BAD("\"reshape\", \"relu\"", "\"reshape\", \"relu\", \"ghost\"", "schedule[3]", "no op \"ghost\"");
    EXPECT_BAD("\"reshape\", \"relu\", \"head\"]", "\"reshape\", \"relu\", \"reshape\"]", "schedule[3]", "\"reshape\"", "twice");
    EXPECT_BAD("\"reshape\", \"relu\", \"head\"]", "\"reshape\", \"relu\"]", "not a permutation", "\"head\"");
    EXPECT_BAD("\"schedule\": [\"conv,1\"", "\"schedule\": [7", "schedule[0]", "an integer");
    EXPECT_BAD("\"schedule\": [", "\"scheduled\": [", "\"schedule\"", "missing");
    /* tensors */
    EXPECT_BAD("{\"name\": \"b\", \"bytes\": 512", "{\"name\": \"bee\", \"bytes\": 512", "\"bee\"", "no tensor");
    EXPECT_BAD("{\"name\": \"b\", \"bytes\": 512", "{\"name\": \"v\", \"bytes\": 512", "tensor \"v\"", "twice");
    EXPECT_BAD("{\"name\": \"b\", \"bytes\": 512", "{\"nom\": \"b\", \"bytes\": 512", "tensors[4]", "\"name\"", "missing");
    EXPECT_BAD("{\"name\": \"b\", \"bytes\": 512", "{\"name\": 1, \"bytes\": 512", "tensors[4]", "\"name\"", "an integer");
    EXPECT_BAD("\"offset\": 256, \"first\": 2", "\"offset\": \"256\", \"first\": 2", "tensor \"b\"", "\"offset\"", "a string");
    EXPECT_BAD("\"offset\": 256, \"first\": 2", "\"offset\": 256", "tensor \"b\"", "\"first\"", "missing");
    EXPECT_BAD("\"first\": 2, \"last\": 3", "\"first\": 2, \"last\": 4", "tensor \"b\"", "\"last\"", "out of range");
    EXPECT_BAD("\"first\": 2, \"last\": 3", "\"first\": -2, \"last\": 3", "tensor \"b\"", "\"first\"", "out of range");
    EXPECT_BAD("\"last\": 3, \"buffer\": 1", "\"last\": 3, \"buffer\": 4294967296", "tensor \"b\"", "\"buffer\"", "out of range");
    EXPECT_BAD("\"kind\": \"output\"", "\"kind\": \"outbound\"", "tensor \"y\"", "\"outbound\"");
    EXPECT_BAD("\"alias_of\": \"a\\\"q\"", "\"alias_of\": \"zz\"", "tensor \"v\"", "\"zz\"");
    EXPECT_BAD("\"bytes\": 512, \"offset\": 256", "\"bytes\": 512, \"offset\": 9223372036854775808", "\"b\"", "2^63-1", "bad-plan.json:15:");
    EXPECT_BAD(" \"tensors\": [", " \"tensors\": 3, \"x\": [", "\"tensors\"", "an integer");
    /* events */
    EXPECT_BAD("{\"id\": 4, \"type\": \"ALLOC\"", "{\"id\": 5, \"type\": \"ALLOC\"", "events[3]", "\"id\"", "must be 4");
    EXPECT_BAD("{\"id\": 4, \"type\": \"ALLOC\"", "{\"id\": 4, \"type\": \"MALLOC\"", "events[3]", "\"MALLOC\"");
    EXPECT_BAD("\"tensor\": \"b\", \"buffer\": 1, \"offset\": 256, \"op\": \"relu\"",
               "\"tensor\": \"b\", \"buffer\": 1, \"offset\": 256, \"op\": \"relux\"", "events[3]", "no op \"relux\"");
    EXPECT_BAD("\"tensor\": \"b\", \"buffer\": 1, \"offset\": 256, \"op\": \"relu\"",
               "\"tensor\": null, \"buffer\": 1, \"offset\": 256, \"op\": \"relu\"", "events[3]", "\"tensor\"", "null");
    EXPECT_BAD("\"tensor\": \"b\", \"buffer\": 1, \"offset\": 256, \"op\": \"relu\"",
               "\"tensor\": \"c\", \"buffer\": 1, \"offset\": 256, \"op\": \"relu\"", "events[3]", "no tensor \"c\"");
    EXPECT_BAD("\"tensor\": \"b\", \"buffer\": 1, \"offset\": 256, \"op\": \"relu\"",
               "\"tensor\": \"b\", \"buffer\": 1, \"offset\": 18446744073709551615, \"op\": \"relu\"", "\"b\"", "2^63-1");
    EXPECT_BAD("\"type\": \"EXEC\", \"tensor\": null", "\"type\": \"EXEC\", \"tensor\": \"b\"", "events[1]", "EXEC");
    EXPECT_BAD("{\"id\": 1, \"type\"", "{\"id\": 1.0, \"type\"", "events[0]", "\"id\"", "a real number");
    EXPECT_BAD(" \"events\": [", " \"events\": {}, \"e\": [", "\"events\"", "an object");
    /* stats */
    EXPECT_BAD("\"optimal\": true", "\"optimal\": \"yes\"", "stats", "\"optimal\"");
    EXPECT_BAD("\"peak_step\": 2", "\"peak_step\": 9", "stats", "\"peak_step\"", "out of range");
    EXPECT_BAD("\"plan_seconds\": 0.125", "\"plan_seconds\": null", "stats", "\"plan_seconds\"");
    EXPECT_BAD(" \"stats\": {", " \"statistics\": {", "\"stats\"", "missing");
    /* a plan for another graph: names do not resolve */
    {
        bp_error err;
        bp_graph *h = bp_graph_new("other", NULL);
        int32_t a, b, op;
        REQUIRE(!bp_graph_add_tensor(h, "x", 4, &a, &err) && !bp_graph_add_tensor(h, "y", 4, &b, &err));
        REQUIRE(!bp_graph_add_op(h, "only", "Relu", 1, &a, 1, &b, 0, &op, &err));
        REQUIRE(!bp_graph_mark(h, a, BP_TENSOR_INPUT, &err) && !bp_graph_finalize(h, &err));
        bp_plan *p = NULL;
        CHECK(bp_plan_parse_json(h, tiny_json, strlen(tiny_json), "other.json", &p, &err) == BP_ERR_INVALID && !p);
        CHECK_MSG(strstr(err.msg, "other.json") && strstr(err.msg, "\"conv,1\""), "%s", err.msg);
        bp_graph_free(h);
    }
    /* files: missing, and the path in the message */
    {
        bp_error err;
        bp_plan *p = NULL;
        char path[700];
        snprintf(path, sizeof path, "%s/nope.json", tmpdir);
        CHECK(bp_plan_read_json(g, path, &p, &err) == BP_ERR_IO && !p && strstr(err.msg, path));
    }
    bp_graph_free(g);
}

/* Random corruption: flip, drop or insert bytes of a valid plan; the reader
 * must return BP_OK or BP_ERR_INVALID without crashing or leaking (ASan). */
static void test_fuzz(void)
{
    bp_graph *g = tiny_graph();
    unsigned long long seed = 7;
    size_t full = strlen(tiny_json);
    char *t = malloc(full + 64);
    REQUIRE(t);
    static const char junk[] = "{}[],:\"0123456789-e.null truefalse\\";
    int ok = 0, bad = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(t, tiny_json, full + 1);
        size_t n = full;
        int edits = 1 + (int)(test_rand(&seed) % 3);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)(test_rand(&seed) % n);
            switch (test_rand(&seed) % 3) {
            case 0: t[at] = junk[test_rand(&seed) % (sizeof junk - 1)]; break;
            case 1: memmove(t + at, t + at + 1, n - at); n--; break;
            default: memmove(t + at + 1, t + at, n - at + 1); t[at] = junk[test_rand(&seed) % (sizeof junk - 1)]; n++; break;
            }
        }
        bp_plan *p = NULL;
        bp_error err;
        bp_status s = bp_plan_parse_json(g, t, n, "fuzz.json", &p, &err);
        CHECK_MSG(s == BP_OK || s == BP_ERR_INVALID, "status %d: %s", (int)s, err.msg);
        if (s == BP_OK) { ok++; CHECK(p != NULL); bp_plan_free(p); }
        else { bad++; CHECK(p == NULL && strncmp(err.msg, "fuzz.json", 9) == 0); }
    }
    CHECK(bad > 0);
    (void)ok;
    free(t);
    bp_graph_free(g);
}

/* A planner-made plan of a real graph: written, read back equal, and the
 * copy verifies. */
static void test_planned_training_graph(void)
{
    char path[700];
    snprintf(path, sizeof path, "%s/graphs/training/resnet18.json", test_data_dir());
    bp_graph *g = NULL;
    bp_error err;
    if (bp_graph_read_json(path, NULL, &g, &err) != BP_OK) { fprintf(stderr, "skip: %s\n", err.msg); return; }
    bp_plan_options o;
    bp_plan_options_init(&o);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, &o, &p, &err), err);
    if (p) {
        char out[700];
        snprintf(out, sizeof out, "%s/resnet18.plan.json", tmpdir);
        CHECK_OK(bp_plan_write_json(p, g, out, &err), err);
        bp_plan *q = NULL;
        CHECK_OK(bp_plan_read_json(g, out, &q, &err), err);
        CHECK(q && plans_equal(p, q));
        if (q) CHECK_OK(bp_verify(g, q, &err), err);
        bp_plan_free(q);
        remove(out);
        bp_plan_free(p);
    }
    bp_graph_free(g);
}

int main(void)
{
    const char *base = getenv("BP_BUILD");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_plan_io.XXXXXX", base && *base ? base : "/tmp");
    REQUIRE(mkdtemp(tmpdir));
    test_tiny_round_trip();
    test_bad_plans();
    test_fuzz();
    test_planned_training_graph();
    rmdir(tmpdir);
    return check_status();
}
