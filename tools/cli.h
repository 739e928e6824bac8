/* The bufplan command line: one cmd_*.c file per subcommand, shared helpers
 * in cli_util.c.  Exit codes: 0 success, 1 does not fit / verification
 * failed, 2 bad input or usage. */
#ifndef BP_CLI_H
#define BP_CLI_H
#include <bufplan.h>
#include <stdbool.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_BAD = 2 };

typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Subcommands (argv[0] is the subcommand name). */
int cmd_plan(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_viz(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* Exit code for a status: BP_ERR_BUDGET/VERIFY -> 1, other errors -> 2. */
int cli_exit_code(bp_status s);
/* Prints "bufplan: MSG" to stderr and returns cli_exit_code(err->status). */
int cli_fail(const bp_error *err);
/* Prints "bufplan CMD: FMT" to stderr and returns CLI_BAD. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses "123", "4K", "1.5M", "2GiB" (powers of 1024) into bytes. */
bool cli_parse_bytes(const char *s, uint64_t *out);
bool cli_parse_double(const char *s, double *out);
bool cli_parse_u64(const char *s, uint64_t *out);

/* Options shared by every command that loads a graph and plans it. */
typedef struct cli_graph_opts {
    const char *path;
    /* --dim SYM=N and --shape NAME=AxBxC, applied after loading */
    int n_dims; const char *dims[64];
    int n_shapes; const char *shapes[64];
    const char *unknown_op;   /* "error" (default) or "dynamic" */
    const char *op_shapes;    /* --op-shapes FILE: custom-op output shapes (ONNX) */
    bool training;            /* append a backward pass */
    bool plan_constants;
    /* --limit KEY=N, --max-memory BYTES, --max-seconds S */
    bool allow_dynamic;       /* --allow-dynamic: unbound symbols are not an error */
    bp_limits lim; bool have_lim;
    uint64_t max_memory;      /* 0: no cap */
    double max_seconds;       /* 0: no limit */
    const char *engine;       /* --engine NAME|FILE: the target engine's profile */
    bp_engine *engine_obj;    /* loaded by cli_engine_load, freed by cli_graph_free */
    uint64_t max_run_bytes;   /* --limit max_run_bytes=N: what `run` may reserve; 0: the machine's memory */
} cli_graph_opts;

/* If argv[*i] is a graph-loading option, consumes it (and its value) and
 * returns 1; returns 0 if not one; -1 (after printing) on a bad value. */
int cli_graph_opt(cli_graph_opts *go, int argc, char **argv, int *i, const char *cmd);
/* Zeroes go and sets the default limits. */
void cli_graph_opts_init(cli_graph_opts *go);
/* If argv[*i] is a planning option (-s -a --alpha --beta --budget
 * --alignment --time-limit --seed --no-alias --plan-inputs --threads),
 * consumes it into po and returns 1; 0 if not; -1 on a bad value. */
int cli_plan_opt(bp_plan_options *po, int argc, char **argv, int *i, const char *cmd);
/* Loads a graph (.json or .onnx), applies --dim/--shape/--training,
 * finalizes it. */
bp_status cli_load_graph(const cli_graph_opts *go, bp_graph **out, bp_error *err);
/* --engine: loads the profile (once), applies its workspace formulas to g and
 * sets po->engine and po->concat_inplace (cli_engine.c); BP_OK without it. */
bp_status cli_engine_load(cli_graph_opts *go, bp_graph *g, bp_plan_options *po, bp_error *err);
/* Frees g and the profile cli_engine_load loaded. */
void cli_graph_free(cli_graph_opts *go, bp_graph *g);
/* Sizes the reservations of a graph with control flow for these options
 * (nothing to do without bodies). */
bp_status cli_reserve_bodies(bp_graph *g, const bp_plan_options *po, bp_error *err);
/* BP_ERR_INVALID with "PATH: nothing planned: N unbound symbols (...)" (or
 * the dynamic tensors, or the external ones) when a plan of g with these
 * stats puts no tensor in the arena (only the counts are read); BP_OK
 * otherwise.  For commands whose output would be empty. */
bp_status cli_check_planned(const bp_graph *g, const bp_plan_stats *st, const char *path, bp_error *err);
/* The bytes `run` may reserve (its pools' max_bytes): --limit max_run_bytes,
 * else the machine's physical memory, and at most --max-memory. */
uint64_t cli_run_bytes(const cli_graph_opts *go);
/* "1.5 MiB" (powers of 1024) into buf. */
const char *cli_fmt_bytes(uint64_t b, char *buf, size_t cap);
bool cli_is_help(const char *a);
/* Usage text for the shared options, for --help. */
extern const char cli_graph_opts_help[];
extern const char cli_plan_opts_help[];
/* --threads as the planning commands read it (run has its own). */
extern const char cli_threads_opt_help[];

#endif
