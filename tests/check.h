/* Minimal test helpers: CHECK() reports file:line and the expression and
 * counts failures; tests return check_status() from main. */
#ifndef BP_CHECK_H
#define BP_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
#define CHECK(cond) do { if (!(cond)) { check_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) { check_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK_OK(expr, err) do { bp_status s_ = (expr); if (s_ != BP_OK) { check_failures++; \
    fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #expr, (int)s_, (err).msg); } } while (0)
#define REQUIRE(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); exit(1); } } while (0)
static inline int check_status(void)
{
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures ? 1 : 0;
}
/* The shared data directory (../shared/data), from $BP_DATA. */
static inline const char *test_data_dir(void)
{
    const char *d = getenv("BP_DATA");
    return d && *d ? d : "../shared/data";
}
/* Small deterministic PRNG (splitmix64). */
static inline unsigned long long test_rand(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
#endif
