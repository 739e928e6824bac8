/* viz.c, report.c, progress.c: live bytes against a brute-force oracle and
 * the planner's lower bound, the live-at-peak list, SVG and HTML output with
 * hostile names, the history reader (good and bad files), the report table in
 * every format, and the progress line's quiet rules. */
#define _POSIX_C_SOURCE 200809L
#include "bufplan.h"
#include "bufplan_viz.h"
#include "check.h"
#include "core/progress.h"
#include "viz/viz_internal.h"

#include <jansson.h>
#include <stdbool.h>
#include <unistd.h>

static char *slurp(FILE *f, size_t *len)
{
    fflush(f);
    long n = ftell(f);
    REQUIRE(n >= 0);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    REQUIRE(s);
    REQUIRE(fread(s, 1, (size_t)n, f) == (size_t)n);
    s[n] = 0;
    if (len) *len = (size_t)n;
    return s;
}

static size_t count_str(const char *hay, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + k, needle)) n++;
    return n;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return a <= 1 ? x : (x + a - 1) / a * a; }

static int32_t n_drawn(const bp_plan *p)
{
    int32_t n = 0;
    for (int32_t t = 0; t < bp_plan_n_tensors(p); t++) {
        const bp_tensor_plan *tp = bp_plan_tensor(p, t);
        if (tp->offset != BP_NO_OFFSET && tp->first >= 0) n++;
    }
    return n;
}

/* Brute force: each storage root's hull of its members' intervals, then
 * for each step the sum over roots whose hull covers it. */
static void oracle_live(const bp_plan *p, uint64_t *live)
{
    int32_t nt = bp_plan_n_tensors(p), ns = bp_plan_n_steps(p);
    int32_t *lo = malloc(((size_t)nt + 1) * sizeof *lo), *hi = malloc(((size_t)nt + 1) * sizeof *hi);
    REQUIRE(lo && hi);
    for (int32_t r = 0; r < nt; r++) { lo[r] = INT32_MAX; hi[r] = -1; }
    for (int32_t t = 0; t < nt; t++) {
        const bp_tensor_plan *tp = bp_plan_tensor(p, t);
        int32_t r = tp->alias_of >= 0 ? tp->alias_of : t;
        if (tp->offset == BP_NO_OFFSET || tp->first < 0) continue;
        if (tp->first < lo[r]) lo[r] = tp->first;
        if (tp->last > hi[r]) hi[r] = tp->last;
    }
    for (int32_t s = 0; s < ns; s++) {
        live[s] = 0;
        for (int32_t r = 0; r < nt; r++)
            if (lo[r] <= s && s <= hi[r]) live[s] += align_up(bp_plan_tensor(p, r)->bytes, bp_plan_alignment(p));
    }
    free(lo);
    free(hi);
}

static void check_live(const bp_graph *g, const bp_plan *p, bool brute)
{
    int32_t ns = bp_plan_n_steps(p);
    uint64_t *live = calloc((size_t)ns + 1, sizeof *live);
    REQUIRE(live);
    bp_error err = {0};
    CHECK_OK(bp_plan_live_bytes(p, live, &err), err);
    uint64_t best = 0, *want = calloc((size_t)ns + 1, sizeof *want);
    REQUIRE(want);
    if (brute) oracle_live(p, want);
    int32_t bs = ns ? 0 : -1;
    for (int32_t s = 0; s < ns; s++) {
        if (live[s] > best) { best = live[s]; bs = s; }
        if (brute) CHECK_MSG(live[s] == want[s], "%s step %d: %llu vs oracle %llu", bp_graph_name(g), s,
                             (unsigned long long)live[s], (unsigned long long)want[s]);
    }
    free(want);
    const bp_plan_stats *st = bp_plan_get_stats(p);
    CHECK_MSG(best == st->lower_bound_bytes, "%s: max live %llu, lower bound %llu", bp_graph_name(g), (unsigned long long)best,
              (unsigned long long)st->lower_bound_bytes);
    if (ns) CHECK_MSG(bs == st->peak_step, "%s: peak step %d vs %d", bp_graph_name(g), bs, st->peak_step);
    /* live at the peak: largest first, sums to the bound */
    if (ns) {
        int32_t n = bp_plan_live_at(p, bs, NULL, 0);
        CHECK(n >= 0);
        int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
        REQUIRE(ids);
        CHECK(bp_plan_live_at(p, bs, ids, n) == n);
        uint64_t sum = 0;
        for (int32_t i = 0; i < n; i++) {
            sum += align_up(bp_plan_tensor(p, ids[i])->bytes, bp_plan_alignment(p));
            if (i) CHECK(bp_plan_tensor(p, ids[i - 1])->bytes >= bp_plan_tensor(p, ids[i])->bytes);
        }
        CHECK_MSG(sum == best, "%s: live at the peak sums to %llu, want %llu", bp_graph_name(g), (unsigned long long)sum,
                  (unsigned long long)best);
        /* a short buffer gets the first (largest) ones */
        if (n > 1) {
            int32_t two[2] = {-1, -1};
            CHECK(bp_plan_live_at(p, bs, two, 1) == n && two[0] == ids[0] && two[1] == -1);
        }
        free(ids);
    }
    CHECK(bp_plan_live_at(p, -1, NULL, 0) == -1 && bp_plan_live_at(p, ns, NULL, 0) == -1);
    free(live);
}

/* A graph whose names would break HTML, XML or JSON if not escaped. */
static const char *const evil[] = {
    "x</script><script>alert(1)</script>", "a<b>&\"c'", "emoji\xf0\x9f\x98\x80]]>", "ctl\x01\x1f", "sep\xe2\x80\xa8line", "ok",
};

static bp_graph *evil_graph(void)
{
    bp_error err = {0};
    bp_graph *g = bp_graph_new("evil</title><b>", NULL);
    REQUIRE(g);
    int32_t ids[6], x, o;
    CHECK_OK(bp_graph_add_tensor(g, "in", 4096, &x, &err), err);
    CHECK_OK(bp_graph_mark(g, x, BP_TENSOR_INPUT, &err), err);
    int32_t prev = x;
    for (int i = 0; i < 6; i++) {
        CHECK_OK(bp_graph_add_tensor(g, evil[i], 1000 * (uint64_t)(i + 1), &ids[i], &err), err);
        char name[32];
        snprintf(name, sizeof name, "op<%d>&", i);
        CHECK_OK(bp_graph_add_op(g, name, i % 2 ? "Relu</script>" : "Conv", 1, &prev, 1, &ids[i], 1.0, &o, &err), err);
        prev = ids[i];
    }
    /* a long-lived tensor read at the end */
    int32_t ins[2] = {ids[0], ids[5]}, out;
    CHECK_OK(bp_graph_add_tensor(g, "out", 100, &out, &err), err);
    CHECK_OK(bp_graph_add_op(g, "last", "Add", 2, ins, 1, &out, 1.0, &o, &err), err);
    CHECK_OK(bp_graph_mark(g, out, BP_TENSOR_OUTPUT, &err), err);
    CHECK_OK(bp_graph_finalize(g, &err), err);
    return g;
}

/* The JSON inside <script type="application/json" id="bp-data">. */
static json_t *page_data(const char *html)
{
    const char *tag = "<script type=\"application/json\" id=\"bp-data\">";
    const char *a = strstr(html, tag);
    REQUIRE(a);
    a += strlen(tag);
    const char *b = strstr(a, "</script>");
    REQUIRE(b);
    json_error_t je;
    json_t *j = json_loadb(a, (size_t)(b - a), 0, &je);
    CHECK_MSG(j, "page data is not JSON: %s at %d", je.text, je.position);
    return j;
}

/* The escapers on bytes the graph builder would refuse (ONNX names are
 * arbitrary bytes in other readers). */
static void test_escape(void)
{
    static const struct { const char *in, *json, *xml; } cases[] = {
        {"a\xff\xfe", "\"a\\ufffd\\ufffd\"", "a\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xc0\xaf", "\"\\ufffd\\ufffd\"", "\xEF\xBF\xBD\xEF\xBF\xBD"},              /* overlong */
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* surrogate */
        {"\xe2\x82", "\"\\ufffd\\ufffd\"", "\xEF\xBF\xBD\xEF\xBF\xBD"},              /* truncated */
        {"</script>", "\"\\u003c/script\\u003e\"", "&lt;/script&gt;"},
        {"\x01\t&", "\"\\u0001\\u0009\\u0026\"", "\xEF\xBF\xBD\t&amp;"},
        {"\xe2\x80\xa8\xc3\xa9", "\"\\u2028\xc3\xa9\"", "\xe2\x80\xa8\xc3\xa9"},
        {"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"", "\xf0\x9f\x98\x80"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int mode = 0; mode < 2; mode++) {
            FILE *f = tmpfile();
            REQUIRE(f);
            if (mode) bp__viz_xml_str(f, cases[i].in); else bp__viz_json_str(f, cases[i].in);
            char *s = slurp(f, NULL);
            const char *want = mode ? cases[i].xml : cases[i].json;
            CHECK_MSG(!strcmp(s, want), "case %zu %s: got [%s] want [%s]", i, mode ? "xml" : "json", s, want);
            free(s);
            fclose(f);
        }
    }
}

static void test_outputs(void)
{
    bp_graph *g = evil_graph();
    bp_plan_options po;
    bp_plan_options_init(&po);
    bp_plan *p = NULL, *q = NULL;
    bp_error err = {0};
    CHECK_OK(bp_plan_graph(g, &po, &p, &err), err);
    po.sched = BP_SCHED_GIVEN;
    po.assign = BP_ASSIGN_COLOR;
    CHECK_OK(bp_plan_graph(g, &po, &q, &err), err);
    REQUIRE(p && q);
    check_live(g, p, true);
    check_live(g, q, true);

    /* SVG: one rect per drawn tensor, and nothing unescaped */
    FILE *f = tmpfile();
    REQUIRE(f);
    CHECK_OK(bp_viz_write_svg_file(g, p, NULL, f, &err), err);
    char *svg = slurp(f, NULL);
    fclose(f);
    CHECK_MSG(count_str(svg, "<rect") == (size_t)n_drawn(p), "%zu rects for %d tensors", count_str(svg, "<rect"), n_drawn(p));
    CHECK(count_str(svg, "<rect class=\"tensor\"") == (size_t)n_drawn(p));
    CHECK(!strstr(svg, "</script>") && !strstr(svg, "<b>") && !strstr(svg, "\xff") && !strstr(svg, "\x01"));
    CHECK(strstr(svg, "a&lt;b&gt;&amp;&quot;c&#39;"));
    CHECK(strstr(svg, "emoji\xf0\x9f\x98\x80]]&gt;") && strstr(svg, "ctl\xEF\xBF\xBD\xEF\xBF\xBD"));
    CHECK(strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "</svg>"));
    free(svg);

    /* HTML with a second plan: the data parses and keeps the names */
    bp_viz_options vo;
    bp_viz_options_init(&vo);
    vo.compare = q;
    vo.label = "first <plan>";
    f = tmpfile();
    REQUIRE(f);
    CHECK_OK(bp_viz_write_html_file(g, p, &vo, f, &err), err);
    char *html = slurp(f, NULL);
    fclose(f);
    CHECK_MSG(count_str(html, "</script>") == 2, "%zu </script> tags", count_str(html, "</script>"));
    CHECK(!strstr(html, "evil</title>") && strstr(html, "evil&lt;/title&gt;&lt;b&gt;") && !strstr(html, "\xff"));
    CHECK(strstr(html, "id=\"tensor-count\"") && strstr(html, "id=\"peak-bytes-2\"") && strstr(html, "id=\"arena-bytes\""));
    CHECK(!strstr(html, "http://") && !strstr(html, "https://") && !strstr(html, " src="));
    json_t *d = page_data(html);
    if (d) {
        json_t *names = json_object_get(json_object_get(d, "tensors"), "name");
        int32_t t = bp_graph_find_tensor(g, evil[0]);
        CHECK(t >= 0 && json_is_string(json_array_get(names, (size_t)t)) &&
              !strcmp(json_string_value(json_array_get(names, (size_t)t)), evil[0]));
        t = bp_graph_find_tensor(g, evil[4]);
        CHECK(t >= 0 && !strcmp(json_string_value(json_array_get(names, (size_t)t)), evil[4]));
        for (int i = 0; i < 6; i++) {
            t = bp_graph_find_tensor(g, evil[i]);
            CHECK_MSG(t >= 0 && !strcmp(json_string_value(json_array_get(names, (size_t)t)), evil[i]), "name %d", i);
        }
        json_t *plans = json_object_get(d, "plans");
        CHECK(json_array_size(plans) == 2);
        json_t *p0 = json_array_get(plans, 0), *p1 = json_array_get(plans, 1);
        CHECK(json_array_size(json_object_get(p0, "ids")) == (size_t)n_drawn(p));
        CHECK(json_array_size(json_object_get(p1, "ids")) == (size_t)n_drawn(q));
        CHECK(json_integer_value(json_object_get(p0, "arena")) == (json_int_t)bp_plan_get_stats(p)->arena_bytes);
        CHECK(json_integer_value(json_object_get(p1, "lb")) == (json_int_t)bp_plan_get_stats(q)->lower_bound_bytes);
        CHECK(!strcmp(json_string_value(json_object_get(p0, "label")), "first <plan>"));
        CHECK(!strcmp(json_string_value(json_object_get(p1, "label")), "given + color"));
        CHECK(json_is_null(json_object_get(d, "history")));
        json_decref(d);
    }
    free(html);

    /* a plan of another graph is refused */
    bp_graph *h = NULL;
    bp_gen_options go;
    bp_gen_options_init(&go);
    CHECK_OK(bp_gen("chain", &go, NULL, &h, &err), err);
    f = tmpfile();
    CHECK(bp_viz_write_svg_file(h, p, NULL, f, &err) == BP_ERR_USAGE && strstr(err.msg, "not a plan of graph"));
    vo.compare = NULL;
    CHECK(bp_viz_write_html_file(h, p, &vo, f, &err) == BP_ERR_USAGE);
    fclose(f);
    CHECK(bp_viz_write_html(g, p, NULL, "/nonexistent-dir/x.html", &err) == BP_ERR_IO);
    bp_graph_free(h);
    bp_plan_free(p);
    bp_plan_free(q);
    bp_graph_free(g);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

static json_t *history_of(const bp_graph *g, const bp_plan *p, const char *path, bp_status want, const char *msg_part)
{
    bp_viz_options vo;
    bp_viz_options_init(&vo);
    vo.history_path = path;
    bp_error err = {0};
    FILE *f = tmpfile();
    REQUIRE(f);
    bp_status s = bp_viz_write_html_file(g, p, &vo, f, &err);
    CHECK_MSG(s == want, "%s: status %d, want %d (%s)", path, (int)s, (int)want, err.msg);
    if (msg_part) CHECK_MSG(strstr(err.msg, msg_part) != NULL, "message \"%s\" lacks \"%s\"", err.msg, msg_part);
    json_t *h = NULL;
    if (s == BP_OK) {
        char *html = slurp(f, NULL);
        json_t *d = page_data(html);
        if (d) { h = json_incref(json_object_get(d, "history")); json_decref(d); }
        free(html);
    }
    fclose(f);
    return h;
}

static void test_history(void)
{
    bp_error err = {0};
    bp_graph *g = NULL;
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.seed = 7;
    CHECK_OK(bp_gen("diamond", &go, NULL, &g, &err), err);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, NULL, &p, &err), err);
    REQUIRE(g && p);
    char dir[] = "/tmp/bp_test_viz_XXXXXX";
    REQUIRE(mkdtemp(dir));
    char path[256];

    /* the plan's own event table is a valid history: one tenant per ALLOC in the arena */
    snprintf(path, sizeof path, "%s/events.csv", dir);
    CHECK_OK(bp_plan_write_events_csv(p, g, path, &err), err);
    size_t allocs = 0;
    for (size_t i = 0; i < bp_plan_n_events(p); i++)
        if (bp_plan_events(p)[i].type == BP_EV_ALLOC && bp_plan_events(p)[i].offset != BP_NO_OFFSET) allocs++;
    json_t *h = history_of(g, p, path, BP_OK, NULL);
    CHECK(h && json_array_size(json_object_get(h, "name")) == allocs);
    CHECK(h && json_array_size(json_object_get(h, "t0")) == allocs);
    json_decref(h);

    /* CSV with quoted names, threads, explicit offsets, an overlap */
    snprintf(path, sizeof path, "%s/h.csv", dir);
    write_text(path, "# comment\ntick,thread,event,tensor,offset,bytes\n"
                     "1,0,ALLOC,\"a,b\"\"c\",0,100\n2,0,WRITE,\"a,b\"\"c\",,\n3,1,ALLOC,zz,50,100\n4,0,FREE,\"a,b\"\"c\",,\n"
                     "5,1,LAST_READ,zz,,\n6,1,EXEC,,,\n");
    h = history_of(g, p, path, BP_OK, NULL);
    if (h) {
        json_t *names = json_object_get(h, "name");
        CHECK(json_array_size(names) == 2 && !strcmp(json_string_value(json_array_get(names, 0)), "a,b\"c"));
        CHECK(json_integer_value(json_array_get(json_object_get(h, "thread"), 1)) == 1);
        CHECK(json_integer_value(json_array_get(json_object_get(h, "off"), 1)) == 50);
        CHECK(json_number_value(json_array_get(json_object_get(h, "t1"), 0)) == 4);
        CHECK(json_number_value(json_array_get(json_object_get(h, "t1"), 1)) == 6); /* open: to the end */
        CHECK(!strcmp(json_string_value(json_object_get(h, "unit")), "tick"));
    }
    json_decref(h);

    /* JSON form */
    snprintf(path, sizeof path, "%s/h.json", dir);
    write_text(path, "{\"events\":[{\"event\":\"ALLOC\",\"tensor\":\"q\",\"tick\":3,\"offset\":0,\"bytes\":8},"
                     "{\"event\":\"FREE\",\"tensor\":\"q\",\"tick\":9},{\"event\":\"FREE\",\"tensor\":\"never\",\"tick\":10}]}");
    h = history_of(g, p, path, BP_OK, NULL);
    CHECK(h && json_array_size(json_object_get(h, "name")) == 1 && json_integer_value(json_object_get(h, "skipped")) == 1);
    json_decref(h);

    /* bad files: a message with the file and the line */
    snprintf(path, sizeof path, "%s/bad1.csv", dir);
    write_text(path, "time,what\n1,2\n");
    history_of(g, p, path, BP_ERR_INVALID, "bad1.csv:1");
    snprintf(path, sizeof path, "%s/bad2.csv", dir);
    write_text(path, "event,tensor,offset\nALLOC,a,12\nALLOC,b,twelve\n");
    history_of(g, p, path, BP_ERR_INVALID, "bad2.csv:3: offset");
    snprintf(path, sizeof path, "%s/bad3.csv", dir);
    write_text(path, "event,tensor,offset\nALLOC\n");
    history_of(g, p, path, BP_ERR_INVALID, "bad3.csv:2");
    snprintf(path, sizeof path, "%s/bad4.json", dir);
    write_text(path, "{\"events\":[{\"event\":\"ALLOC\",\"tensor\":\"q\",\"offset\":-4}]}");
    history_of(g, p, path, BP_ERR_INVALID, "bad4.json: event 0");
    snprintf(path, sizeof path, "%s/bad5.json", dir);
    write_text(path, "{\"events\":[{\"event\":\"ALLOC\",");
    history_of(g, p, path, BP_ERR_INVALID, "bad5.json");
    snprintf(path, sizeof path, "%s/empty.csv", dir);
    write_text(path, "");
    history_of(g, p, path, BP_ERR_INVALID, "empty");
    snprintf(path, sizeof path, "%s/missing.csv", dir);
    history_of(g, p, path, BP_ERR_IO, "missing.csv");

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    bp_plan_free(p);
    bp_graph_free(g);
}

/* Live bytes against the oracle and the bound on generated graphs, the
 * fast schedulers the build has, with and without aliasing. */
static void test_live_property(void)
{
    const char *kinds[] = {"chain", "diamond", "randwire", "transformer", "unet"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        bp_gen_options go;
        bp_gen_options_init(&go);
        go.seed = 11 + k;
        go.layers = k == 3 ? 1 : 0;
        go.training = k == 3;
        bp_graph *g = NULL;
        bp_error err = {0};
        CHECK_OK(bp_gen(kinds[k], &go, NULL, &g, &err), err);
        if (!g) continue;
        bool brute = (int64_t)bp_graph_n_tensors(g) * bp_graph_n_ops(g) < 4000000;
        /* the fast schedulers: best and optimal search for seconds */
        for (int s = 0; s < BP_SCHED_BEST; s++) {
            for (int na = 0; na < 2; na++) {
                bp_plan_options po;
                bp_plan_options_init(&po);
                po.sched = (bp_sched_kind)s;
                po.no_alias = na;
                po.assign = na ? BP_ASSIGN_COLOR : BP_ASSIGN_BESTFIT;
                po.time_limit = 0.5;
                bp_plan *p = NULL;
                bp_status st = bp_plan_graph(g, &po, &p, &err);
                if (st == BP_ERR_UNSUPPORTED || st == BP_ERR_INVALID) continue; /* not in this build / given not topological */
                CHECK_OK(st, err);
                if (p) check_live(g, p, brute);
                bp_plan_free(p);
            }
        }
        bp_graph_free(g);
    }
}

/* A generated graph (NULL after a failed check). */
static bp_graph *gen_graph(const char *kind, uint64_t seed, int layers, int symbolic_seq)
{
    bp_error err = {0};
    bp_graph *g = NULL;
    bp_gen_options go;
    bp_gen_options_init(&go);
    go.seed = seed;
    go.layers = layers;
    go.symbolic_seq = symbolic_seq;
    CHECK_OK(bp_gen(kind, &go, NULL, &g, &err), err);
    return g;
}

/* bp_report_run on g with po (NULL: the defaults with a 0.1 s search), in a
 * calloc'ed report (NULL after a failed check). */
static bp_report *run_report(const bp_graph *g, const bp_plan_options *po)
{
    bp_error err = {0};
    bp_plan_options quick;
    if (!po) { bp_plan_options_init(&quick); quick.time_limit = 0.1; po = &quick; }
    bp_report *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    CHECK_OK(bp_report_run(g, po, r, &err), err);
    return r;
}

static void test_report(void)
{
    bp_error err = {0};
    bp_graph *g = gen_graph("diamond", 3, 0, 0);
    REQUIRE(g);
    bp_plan_options po;
    bp_plan_options_init(&po);
    po.time_limit = 0.5;
    bp_report *r = run_report(g, &po);
    REQUIRE(r);
    /* skipped = exactly the schedulers bp_schedule does not have */
    int32_t *order = malloc((size_t)bp_graph_n_ops(g) * sizeof *order);
    REQUIRE(order);
    int have = 0;
    for (int s = 0; s < BP_SCHED_COUNT; s++) {
        bp_plan_options o = po;
        o.sched = (bp_sched_kind)s;
        bool unsupported = bp_schedule(g, &o, order, &err) == BP_ERR_UNSUPPORTED;
        bool skipped = false;
        for (int i = 0; i < r->n_skipped; i++) skipped |= r->skipped[i] == (bp_sched_kind)s;
        CHECK_MSG(unsupported == skipped, "scheduler %s: unsupported %d, skipped %d", bp_sched_name(o.sched), unsupported, skipped);
        have += !unsupported;
    }
    free(order);
    CHECK(have >= 2 && r->n_rows == have * BP_ASSIGN_COUNT);
    for (int i = 0; i < r->n_rows; i++) {
        const bp_report_row *w = &r->rows[i];
        CHECK(w->assign == (bp_assign_kind)(i % BP_ASSIGN_COUNT));
        if (w->status) continue;
        CHECK(w->verified && w->arena_bytes >= w->lower_bound_bytes && w->plan_seconds >= 0);
        /* the same as planning that pair directly */
        bp_plan_options o = po;
        o.sched = w->sched;
        o.assign = w->assign;
        bp_plan *p = NULL;
        CHECK_OK(bp_plan_graph(g, &o, &p, &err), err);
        if (p) {
            CHECK_MSG(bp_plan_get_stats(p)->lower_bound_bytes == w->lower_bound_bytes, "%s + %s", bp_sched_name(w->sched), bp_assign_name(w->assign));
            if (w->assign != BP_ASSIGN_SEARCH) CHECK(bp_plan_get_stats(p)->arena_bytes == w->arena_bytes);
        }
        bp_plan_free(p);
    }
    /* kahn + bestfit is there and ok */
    int found = 0;
    for (int i = 0; i < r->n_rows; i++)
        if (r->rows[i].sched == BP_SCHED_KAHN && r->rows[i].assign == BP_ASSIGN_BESTFIT) found += r->rows[i].status == BP_OK;
    CHECK(found == 1);

    FILE *f = tmpfile();
    REQUIRE(f);
    CHECK_OK(bp_report_write_file(r, "json", f, &err), err);
    char *s = slurp(f, NULL);
    fclose(f);
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    CHECK_MSG(j, "report JSON: %s", je.text);
    if (j) {
        CHECK(json_array_size(json_object_get(j, "rows")) == (size_t)r->n_rows);
        CHECK(json_array_size(json_object_get(j, "skipped")) == (size_t)r->n_skipped);
        json_t *row = json_array_get(json_object_get(j, "rows"), 0);
        CHECK(json_is_string(json_object_get(row, "scheduler")) && json_is_string(json_object_get(row, "assigner")));
        json_decref(j);
    }
    free(s);
    f = tmpfile();
    CHECK_OK(bp_report_write_file(r, "csv", f, &err), err);
    s = slurp(f, NULL);
    fclose(f);
    CHECK(count_str(s, "\n") == (size_t)r->n_rows + 1 && !strncmp(s, "graph,scheduler,assigner,", 25));
    free(s);
    f = tmpfile();
    CHECK_OK(bp_report_write_file(r, "text", f, &err), err);
    s = slurp(f, NULL);
    fclose(f);
    CHECK(strstr(s, "bestfit") && strstr(s, "lower bound"));
    free(s);
    f = tmpfile();
    CHECK_OK(bp_report_write_svg_file(r, f, &err), err);
    s = slurp(f, NULL);
    fclose(f);
    CHECK(strstr(s, "</svg>") && count_str(s, "<rect") > 0);
    free(s);
    CHECK(bp_report_write_file(r, "yaml", stdout, &err) == BP_ERR_USAGE);
    CHECK(bp_report_write(r, "yaml", "/tmp/never-written", &err) == BP_ERR_USAGE);
    free(r);
    bp_graph_free(g);
}

/* A transformer with a symbolic sequence length and nothing bound: every
 * activation is dynamic, so the arena is empty.  The SVG and the report say
 * "nothing planned" (with the counts) instead of a chart "peak at step -1". */
static void test_nothing_planned(void)
{
    bp_error err = {0};
    bp_graph *g = gen_graph("transformer", 0, 1, 1);
    REQUIRE(g);
    bp_plan *p = NULL;
    CHECK_OK(bp_plan_graph(g, NULL, &p, &err), err);
    REQUIRE(p);
    const bp_plan_stats *st = bp_plan_get_stats(p);
    CHECK(st->n_planned == 0 && st->n_dynamic > 0 && st->naive_bytes == 0 && st->alias_saved_bytes == 0);
    FILE *f = tmpfile();
    REQUIRE(f);
    CHECK_OK(bp_viz_write_svg_file(g, p, NULL, f, &err), err);
    char *s = slurp(f, NULL);
    fclose(f);
    char want[128];
    snprintf(want, sizeof want, "nothing planned: %d dynamic tensors (not planned)", st->n_dynamic);
    CHECK_MSG(strstr(s, want) && !strstr(s, "peak at step -1"), "the SVG lacks \"%s\"", want);
    free(s);
    /* the page's data carries the count its peak panel shows instead of a list */
    f = tmpfile();
    REQUIRE(f);
    CHECK_OK(bp_viz_write_html_file(g, p, NULL, f, &err), err);
    s = slurp(f, NULL);
    fclose(f);
    snprintf(want, sizeof want, "\"dynamic\":%d,", st->n_dynamic);
    CHECK_MSG(strstr(s, want) && strstr(s, "nothing planned: "), "the page lacks %s", want);
    free(s);
    bp_report *r = run_report(g, NULL);
    REQUIRE(r);
    CHECK(r->have_counts && r->n_planned == 0 && r->n_dynamic == st->n_dynamic && r->n_weights == st->n_weights);
    f = tmpfile();
    REQUIRE(f);
    CHECK_OK(bp_report_write_file(r, "text", f, &err), err);
    s = slurp(f, NULL);
    fclose(f);
    CHECK_MSG(strstr(s, "nothing planned: every activation is dynamic"), "report text: %s", s);
    free(s);
    free(r);
    bp_plan_free(p);
    bp_graph_free(g);
}

static void test_progress(void)
{
    bp__progress pr;
    FILE *f = tmpfile();
    REQUIRE(f);
    /* a terminal, no delay: a \r line, then erased */
    bp__progress_start_ex(&pr, 1, "search", f, 1, 0.0);
    bp__progress_update(&pr, 0.5, "%d nodes", 42);
    bp__progress_update(&pr, 0.6, "rate-limited"); /* within 0.1 s: not drawn */
    bp__progress_end(&pr);
    char *s = slurp(f, NULL);
    CHECK(s[0] == '\r' && strstr(s, "search:  50% 42 nodes") && !strstr(s, "rate-limited"));
    CHECK(s[strlen(s) - 1] == '\r');
    free(s);
    fclose(f);
    /* silent: not enabled, not a terminal, or not yet a second */
    for (int c = 0; c < 3; c++) {
        f = tmpfile();
        REQUIRE(f);
        bp__progress_start_ex(&pr, c != 0, "x", f, c != 1, c == 2 ? 1000.0 : 0.0);
        bp__progress_update(&pr, 0.1, "y");
        bp__progress_end(&pr);
        fflush(f);
        CHECK_MSG(ftell(f) == 0, "case %d wrote %ld bytes", c, ftell(f));
        fclose(f);
    }
    /* the default start never writes to a non-terminal stderr within a second */
    bp__progress_start(&pr, 1, "quiet");
    bp__progress_update(&pr, -1, NULL);
    bp__progress_end(&pr);
}

int main(void)
{
    test_progress();
    test_escape();
    test_outputs();
    test_history();
    test_live_property();
    test_report();
    test_nothing_planned();
    return check_status();
}
