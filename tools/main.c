/*
 * bufplan — the command line.  main() dispatches to one cmd_*() per
 * subcommand (tools/cmd_*.c); each parses its own options.
 */
#include "cli.h"
#include "cli_dyn.h" /* cmd_config */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int cmd_version(int argc, char **argv)
{
    (void)argc; (void)argv;
    printf("bufplan %s\n", bp_version());
    return 0;
}

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
} commands[] = {
    /* one line per subcommand */
    {"plan", cmd_plan, "plan a graph: schedule, lifetimes, offsets, events"},
    {"verify", cmd_verify, "check a plan against its graph"},
    {"gen", cmd_gen, "write a generated graph (chain diamond resnet50 unet transformer randwire)"},
    {"demo", cmd_demo, "plan a built-in graph with every strategy"},
    {"version", cmd_version, "print the version"},
    {"pack", cmd_pack, "pack a MiniMalloc CSV instance (offsets for time x bytes)"},
    {"run", cmd_run, "execute a plan with reference kernels"},
    {"viz", cmd_viz, "draw a plan's memory timeline (HTML or SVG)"},
    {"report", cmd_report, "every scheduler x assigner on a graph"},
    {"config", cmd_config, "print the effective configuration (presets, config file, flags)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: bufplan COMMAND [options]   (bufplan COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nbufplan --version prints the version.  Exit codes: 0 ok, 1 does not fit or\n"
               "verification failed, 2 bad input or usage.\n");
}

/* True (with a message) when the -o target is one of the files the command
 * reads: any other argument naming an existing file with the same inode. */
static bool output_is_input(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++) {
        struct stat so, si;
        if (strcmp(argv[i], "-o") != 0 || strcmp(argv[i + 1], "-") == 0 || stat(argv[i + 1], &so) != 0) continue;
        for (int j = 1; j < argc; j++)
            if (j != i + 1 && stat(argv[j], &si) == 0 && S_ISREG(si.st_mode) && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
                fprintf(stderr, "bufplan: -o %s is the input file %s; refusing to overwrite it\n", argv[i + 1], argv[j]);
                return true;
            }
    }
    return false;
}

/* Runs the command, then makes sure everything it printed reached stdout:
 * a report written to a full disk or a closed pipe is an error. */
static int run_command(int (*fn)(int, char **), int argc, char **argv)
{
    if (output_is_input(argc, argv)) return CLI_BAD;
    int rc = fn(argc, argv);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "bufplan: stdout: write error: %s\n", strerror(errno));
        return rc ? rc : CLI_BAD;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return CLI_BAD; }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) { printf("bufplan %s\n", bp_version()); return fflush(stdout) ? CLI_BAD : 0; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) { usage(stdout); return 0; }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return run_command(commands[i].fn, argc - 1, argv + 1);
    fprintf(stderr, "bufplan: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return CLI_BAD;
}
