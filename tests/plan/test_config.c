/* The configuration: every key from a file and from a flag string, unknown
 * keys and wrong types rejected naming the key, presets, precedence,
 * buckets, and write -> parse round trips. */
#define _POSIX_C_SOURCE 200809L
#include <bufplan.h>
#include "bufplan_dyn.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static bp_status parse(bp_config *c, const char *json, bp_error *err)
{
    return bp_config_parse_json(c, json, strlen(json), "test.json", err);
}

/* The JSON text of a config (for comparisons). */
static char *dump(const bp_config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    bp_error err;
    REQUIRE(bp_config_write_json(c, f, &err) == BP_OK);
    fclose(f);
    return buf;
}

/* Each key with a good value (file form), the same as a flag string, and
 * a check that it took effect. */
typedef struct key_case {
    const char *key, *json, *flag;
    int (*check)(const bp_config *c);
} key_case;

static int ck_sched(const bp_config *c) { return c->plan.sched == BP_SCHED_DFS; }
static int ck_alpha(const bp_config *c) { return c->plan.alpha == 0.25; }
static int ck_beta(const bp_config *c) { return c->plan.beta == 0.75; }
static int ck_tl(const bp_config *c) { return c->plan.time_limit == 2.5; }
static int ck_budget(const bp_config *c) { return c->plan.budget == 3u * 1024 * 1024; }
static int ck_assign(const bp_config *c) { return c->plan.assign == BP_ASSIGN_COLOR; }
static int ck_align(const bp_config *c) { return c->plan.alignment == 64; }
static int ck_seed(const bp_config *c) { return c->plan.seed == 99; }
static int ck_alias(const bp_config *c) { return c->plan.no_alias == 1; }
static int ck_pin(const bp_config *c) { return c->plan.plan_inputs == 1; }
static int ck_pconst(const bp_config *c) { return c->plan.plan_constants == 1; }
static int ck_fence(const bp_config *c) { return c->plan.fence_aware == 1; }
static int ck_replan(const bp_config *c) { return c->replan == 0; }
static int ck_warm(const bp_config *c) { return c->warmup_runs == 3; }
static int ck_policy(const bp_config *c) { return c->dynamic_policy == BP_DYN_COVER; }
static int ck_buckets(const bp_config *c)
{
    return c->n_buckets == 1 && !strcmp(c->buckets[0].sym, "S") && c->buckets[0].n == 3 && c->buckets[0].bound[0] == 128 &&
           c->buckets[0].bound[2] == 512;
}
static int ck_compact(const bp_config *c) { return c->compaction_interval == 77; }
static int ck_threads(const bp_config *c) { return c->plan.threads == 4; }
static int ck_cache(const bp_config *c) { return !strcmp(c->cache_dir, "/tmp/x"); }
static int ck_cverify(const bp_config *c) { return c->cache_verify == 1; }
static int ck_concat(const bp_config *c) { return c->plan.concat_inplace == 1; }
static int ck_preset(const bp_config *c) { return !strcmp(c->preset, "training") && c->plan.beta > c->plan.alpha; }
static int ck_format(const bp_config *c) { (void)c; return 1; }
static int ck_engine(const bp_config *c) { return !strcmp(c->engine, "ort-cpu"); }
static int ck_fallback(const bp_config *c) { return c->plan.fallback == BP_FALLBACK_RECOMPUTE; }
static int ck_hostbw(const bp_config *c) { return c->plan.host_bandwidth == 8.0 * 1024 * 1024 * 1024; }
static int ck_limits(const bp_config *c) { return c->limits.max_ops == 1000 && c->limits.max_rank == 8 && c->max_run_bytes == 1 << 20; }
static int ck_maxmem(const bp_config *c) { return c->max_memory == 1 << 30; }
static int ck_maxsec(const bp_config *c) { return c->max_seconds == 2.5; }

static const key_case cases[] = {
    {"format", "\"bufplan-config\"", "bufplan-config", ck_format},
    {"version", "1", "1", ck_format},
    {"preset", "\"training\"", "training", ck_preset},
    {"scheduler", "\"dfs\"", "dfs", ck_sched},
    {"alpha", "0.25", "0.25", ck_alpha},
    {"beta", "0.75", "0.75", ck_beta},
    {"time_limit", "2.5", "2.5", ck_tl},
    {"budget", "\"3M\"", "3MiB", ck_budget},
    {"assigner", "\"color\"", "color", ck_assign},
    {"alignment", "64", "64", ck_align},
    {"seed", "99", "99", ck_seed},
    {"alias", "false", "false", ck_alias},
    {"plan_inputs", "true", "true", ck_pin},
    {"plan_constants", "true", "on", ck_pconst},
    {"fence_aware", "true", "1", ck_fence},
    {"replan", "false", "off", ck_replan},
    {"warmup_runs", "3", "3", ck_warm},
    {"dynamic_policy", "\"cover\"", "cover", ck_policy},
    {"buckets", "{\"S\": [128, 256, 512]}", "S=128,256,512", ck_buckets},
    {"compaction_interval", "77", "77", ck_compact},
    {"threads", "4", "4", ck_threads},
    {"cache_dir", "\"/tmp/x\"", "/tmp/x", ck_cache},
    {"cache_verify", "true", "yes", ck_cverify},
    {"concat_inplace", "true", "on", ck_concat},
    {"engine", "\"ort-cpu\"", "ort-cpu", ck_engine},
    {"fallback", "\"recompute\"", "recompute", ck_fallback},
    {"host_bandwidth", "\"8G\"", "8G", ck_hostbw},
    {"limits", "{\"max_ops\": 1000, \"max_rank\": 8, \"max_run_bytes\": \"1M\"}", "max_ops=1000,max_rank=8,max_run_bytes=1M", ck_limits},
    {"max_memory", "\"1G\"", "1GiB", ck_maxmem},
    {"max_seconds", "2.5", "2.5", ck_maxsec},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* A value of the wrong type for each key. */
static const char *wrong_type(const char *key)
{
    static const char *const num_keys[] = {"alpha", "beta", "time_limit", "max_seconds", NULL};
    static const char *const int_keys[] = {"version", "alignment", "seed", "warmup_runs", "compaction_interval", "threads", NULL};
    static const char *const bool_keys[] = {"alias", "plan_inputs", "plan_constants", "fence_aware", "replan", "cache_verify", "concat_inplace", NULL};
    for (int i = 0; num_keys[i]; i++) if (!strcmp(key, num_keys[i])) return "\"fast\"";
    for (int i = 0; int_keys[i]; i++) if (!strcmp(key, int_keys[i])) return "1.5";
    for (int i = 0; bool_keys[i]; i++) if (!strcmp(key, bool_keys[i])) return "1";
    if (!strcmp(key, "buckets")) return "[128]";
    if (!strcmp(key, "limits")) return "[1000]";
    if (!strcmp(key, "budget") || !strcmp(key, "max_memory") || !strcmp(key, "host_bandwidth")) return "true";
    return "42"; /* string keys */
}

static void test_every_key(void)
{
    const char *const *keys = bp_config_keys();
    int n_keys = 0;
    for (; keys[n_keys]; n_keys++) {
        int found = 0;
        for (size_t i = 0; i < N_CASES; i++) found |= !strcmp(cases[i].key, keys[n_keys]);
        CHECK_MSG(found, "key %s has no test case", keys[n_keys]);
    }
    CHECK(n_keys == (int)N_CASES);
    for (size_t i = 0; i < N_CASES; i++) {
        const key_case *k = &cases[i];
        bp_config c, d;
        bp_error err = {0};
        char json[256];
        bp_config_init(&c);
        bp_config_init(&d);
        /* Not yet: the default differs from the test value. */
        if (k->check != ck_format) CHECK_MSG(!k->check(&c), "key %s: the default already passes", k->key);
        snprintf(json, sizeof json, "{\"%s\": %s}", k->key, k->json);
        CHECK_OK(parse(&c, json, &err), err);
        CHECK_MSG(k->check(&c), "key %s from the file", k->key);
        CHECK_OK(bp_config_set(&d, k->key, k->flag, &err), err);
        CHECK_MSG(k->check(&d), "key %s from a flag", k->key);

        /* Wrong type, in the file and as a flag: rejected, naming the key,
         * and the config is unchanged. */
        bp_config e;
        bp_config_init(&e);
        char *before = dump(&e);
        snprintf(json, sizeof json, "{\"%s\": 5, \"%s\": %s}", strcmp(k->key, "seed") ? "seed" : "threads", k->key,
                 wrong_type(k->key));
        bp_status s = parse(&e, json, &err);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", k->key);
        CHECK_MSG(s == BP_ERR_INVALID, "key %s: wrong type accepted", k->key);
        CHECK_MSG(strstr(err.msg, quoted) != NULL, "key %s: message does not name it: %s", k->key, err.msg);
        CHECK_MSG(strstr(err.msg, "test.json") != NULL, "key %s: message does not name the file: %s", k->key, err.msg);
        char *after = dump(&e);
        CHECK_MSG(!strcmp(before, after), "key %s: a rejected file changed the config", k->key);
        free(before);
        free(after);
    }
}

static void test_bad_values(void)
{
    static const struct { const char *json, *needle; } bad[] = {
        {"{\"scheduler\": \"fastest\"}", "\"scheduler\""},
        {"{\"assigner\": \"magic\"}", "\"assigner\""},
        {"{\"alpha\": -1}", "\"alpha\""},
        {"{\"alignment\": 3}", "\"alignment\""},
        {"{\"alignment\": 0}", "\"alignment\""},
        {"{\"threads\": 0}", "\"threads\""},
        {"{\"warmup_runs\": -2}", "\"warmup_runs\""},
        {"{\"budget\": \"lots\"}", "\"budget\""},
        {"{\"budget\": -5}", "\"budget\""},
        {"{\"dynamic_policy\": \"yolo\"}", "\"dynamic_policy\""},
        {"{\"buckets\": {\"S\": [256, 128]}}", "\"buckets\""},
        {"{\"buckets\": {\"S\": [0]}}", "\"buckets\""},
        {"{\"buckets\": {\"S\": []}}", "\"buckets\""},
        {"{\"buckets\": {\"S\": [1.5]}}", "\"buckets\""},
        {"{\"buckets\": {\"S\": 128}}", "\"buckets\""},
        {"{\"preset\": \"gaming\"}", "\"preset\""},
        {"{\"format\": \"bufplan-graph\"}", "\"format\""},
        {"{\"version\": 2}", "\"version\""},
        {"{\"limits\": {\"max_opps\": 5}}", "unknown limit \"max_opps\""},
        {"{\"limits\": {\"max_rank\": 300}}", "max_rank 300 is too large"},
        {"{\"limits\": {\"max_ops\": 0}}", "max_ops must be at least 1"},
        {"{\"limits\": {\"max_ops\": \"many\"}}", "\"max_ops\""},
        {"{\"max_seconds\": -1}", "\"max_seconds\""},
        {"{\"max_memory\": \"lots\"}", "\"max_memory\""},
        {"{\"alpha\": 0.5, \"sheduler\": \"dfs\"}", "\"sheduler\""},
        {"{\"Alpha\": 0.5}", "\"Alpha\""},
        {"[1, 2]", "object"},
        {"{\"alpha\": 0.5", "test.json"},
        {"{\"alpha\": 0.5, \"alpha\": 0.6}", "test.json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bp_config c;
        bp_error err = {0};
        bp_config_init(&c);
        bp_status s = parse(&c, bad[i].json, &err);
        CHECK_MSG(s != BP_OK, "accepted: %s", bad[i].json);
        CHECK_MSG(strstr(err.msg, bad[i].needle) != NULL, "%s: message \"%s\" lacks %s", bad[i].json, err.msg, bad[i].needle);
    }
    /* Unknown keys as flags, and flags of the wrong form. */
    bp_config c;
    bp_error err = {0};
    bp_config_init(&c);
    CHECK(bp_config_set(&c, "colour", "red", &err) == BP_ERR_INVALID && strstr(err.msg, "\"colour\""));
    CHECK(bp_config_set(&c, "alpha", "lots", &err) == BP_ERR_INVALID && strstr(err.msg, "\"alpha\""));
    CHECK(bp_config_set(&c, "threads", "2x", &err) == BP_ERR_INVALID && strstr(err.msg, "\"threads\""));
    CHECK(bp_config_set(&c, "replan", "maybe", &err) == BP_ERR_INVALID && strstr(err.msg, "\"replan\""));
    CHECK(bp_config_set(&c, "limits", "max_ops", &err) == BP_ERR_INVALID && strstr(err.msg, "KEY=N"));
    CHECK(bp_config_set(&c, "limits", "max_ops=x", &err) == BP_ERR_INVALID && strstr(err.msg, "not a number"));
    CHECK(bp_config_add_buckets(&c, "S128", &err) != BP_OK);
    CHECK(bp_config_add_buckets(&c, "S=1,x", &err) != BP_OK);
    CHECK(c.n_buckets == 0);
}

static void test_presets(void)
{
    bp_config inf, tr, c;
    bp_error err = {0};
    bp_config_init(&inf);
    bp_config_init(&tr);
    CHECK_OK(bp_config_preset(&inf, "inference", &err), err);
    CHECK_OK(bp_config_preset(&tr, "training", &err), err);
    CHECK(inf.plan.alpha > inf.plan.beta);             /* peak first */
    CHECK(tr.plan.beta > tr.plan.alpha);               /* throughput */
    CHECK(tr.plan.beta > inf.plan.beta);
    CHECK(inf.plan.sched == BP_SCHED_BEST && tr.plan.sched == BP_SCHED_BEST); /* never above the defaults */
    CHECK(bp_config_preset(&c, "nope", &err) == BP_ERR_USAGE && strstr(err.msg, "nope"));
    int n = 0;
    for (const char *const *p = bp_config_presets(); *p; p++) n++;
    CHECK(n == 2);

    /* A file's preset comes before its other keys, whatever the order. */
    bp_config_init(&c);
    CHECK_OK(parse(&c, "{\"alpha\": 0.123, \"preset\": \"inference\"}", &err), err);
    CHECK(c.plan.alpha == 0.123 && c.plan.beta == inf.plan.beta && !strcmp(c.preset, "inference"));
    /* Flags after the file override it. */
    CHECK_OK(bp_config_set(&c, "alpha", "0.5", &err), err);
    CHECK(c.plan.alpha == 0.5);
    /* A preset applied after a file (CLI --preset, then the file's keys win
     * when the file is applied afterwards, as cli_config does). */
    bp_config_init(&c);
    CHECK_OK(bp_config_preset(&c, "training", &err), err);
    CHECK_OK(parse(&c, "{\"beta\": 0.2}", &err), err);
    CHECK(c.plan.beta == 0.2 && c.plan.alpha == tr.plan.alpha);
}

static void test_buckets(void)
{
    bp_config c;
    bp_error err = {0};
    bp_config_init(&c);
    CHECK_OK(bp_config_add_buckets(&c, "S=128,256,512;N=1,2,4,8", &err), err);
    CHECK(c.n_buckets == 2);
    CHECK(bp_config_bucket(&c, "S", 1) == 128);
    CHECK(bp_config_bucket(&c, "S", 128) == 128);
    CHECK(bp_config_bucket(&c, "S", 129) == 256);
    CHECK(bp_config_bucket(&c, "S", 512) == 512);
    CHECK(bp_config_bucket(&c, "S", 513) == 513);   /* above every bucket: kept */
    CHECK(bp_config_bucket(&c, "N", 3) == 4);
    CHECK(bp_config_bucket(&c, "T", 3) == 3);       /* no buckets for T */
    /* Replacing one symbol's spec keeps the other. */
    CHECK_OK(bp_config_add_buckets(&c, "S=100", &err), err);
    CHECK(c.n_buckets == 2 && bp_config_bucket(&c, "S", 50) == 100 && bp_config_bucket(&c, "N", 5) == 8);
    /* Property: the bucket is the smallest bound >= v. */
    unsigned long long seed = 7;
    bp_config_init(&c);
    CHECK_OK(bp_config_add_buckets(&c, "S=16,64,100,1000", &err), err);
    static const int64_t b[] = {16, 64, 100, 1000};
    for (int i = 0; i < 2000; i++) {
        int64_t v = (int64_t)(test_rand(&seed) % 1200);
        int64_t want = v;
        for (int k = 0; k < 4; k++) if (b[k] >= v) { want = b[k]; break; }
        CHECK(bp_config_bucket(&c, "S", v) == want);
    }
}

static void test_round_trip(void)
{
    bp_config c, d;
    bp_error err = {0};
    bp_config_init(&c);
    CHECK_OK(bp_config_preset(&c, "training", &err), err);
    CHECK_OK(parse(&c, "{\"budget\": 123456, \"buckets\": {\"S\": [8, 16]}, \"cache_dir\": \"dir \\\"q\\\"\", \"threads\": 3,"
                       " \"time_limit\": 0.1, \"dynamic_policy\": \"error\", \"alias\": false}", &err), err);
    char *a = dump(&c);
    bp_config_init(&d);
    CHECK_OK(parse(&d, a, &err), err);
    char *b = dump(&d);
    CHECK_MSG(!strcmp(a, b), "round trip differs:\n%s\n%s", a, b);
    CHECK(d.plan.budget == 123456 && d.plan.threads == 3 && d.plan.no_alias == 1 && d.dynamic_policy == BP_DYN_ERROR);
    CHECK(!strcmp(d.cache_dir, "dir \"q\""));
    free(a);
    free(b);
    /* Defaults round-trip too (null preset, null cache_dir). */
    bp_config_init(&c);
    a = dump(&c);
    bp_config_init(&d);
    d.plan.alpha = 0.01;
    CHECK_OK(parse(&d, a, &err), err);
    b = dump(&d);
    CHECK(!strcmp(a, b));
    free(a);
    free(b);
}

static void test_file(void)
{
    bp_config c;
    bp_error err = {0};
    char path[] = "/tmp/bp_test_config_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"format\": \"bufplan-config\", \"version\": 1, \"assigner\": \"search\", \"threads\": 8}\n", f);
    fclose(f);
    bp_config_init(&c);
    CHECK_OK(bp_config_read(&c, path, &err), err);
    CHECK(c.plan.assign == BP_ASSIGN_SEARCH && c.plan.threads == 8);
    remove(path);
    CHECK(bp_config_read(&c, path, &err) == BP_ERR_IO && strstr(err.msg, path));
}

int main(void)
{
    test_every_key();
    test_bad_values();
    test_presets();
    test_buckets();
    test_round_trip();
    test_file();
    return check_status();
}
