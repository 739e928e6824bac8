/* onnxdir.h — the .onnx files of a directory, sorted by name (header only,
 * shared by the scheduling benchmarks that read a model directory). */
#ifndef BP_BENCH_ONNXDIR_H
#define BP_BENCH_ONNXDIR_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int onnxdir_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Fills names (strdup'ed, the caller frees them) with up to max file names
 * in dir ending in ".onnx" and containing `only` (NULL: any), sorted;
 * returns how many (0 with a message when dir cannot be opened). */
static int onnxdir_list(const char *dir, const char *only, char **names, int max)
{
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "%s: cannot open\n", dir); return 0; }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".onnx") && (!only || strstr(e->d_name, only))) {
            names[n] = strdup(e->d_name);
            if (names[n]) n++;
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, onnxdir_cmp);
    return n;
}
#endif
