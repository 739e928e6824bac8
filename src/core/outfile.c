/*
 * outfile.c — writing an output file so that it is never partial, never
 * replaces what it should not, and reports every error.
 *
 * open: "-" is stdout.  Otherwise the target is resolved (a symlink is
 * followed, so the link stays a link), refused when it exists and is not a
 * regular file (a FIFO, a device, a directory: replacing /dev/null with a
 * plan is never wanted), and a temporary ".NAME.bptmp.XXXXXX" is made in the
 * target's directory with mkstemp (O_EXCL, mode 0600: nothing planted at a
 * predictable name can be followed).  The result gets the mode of the file
 * it replaces, or 0666 less the umask for a new file.
 * commit: fflush, fsync, then rename over the target (atomic) and fsync the
 * directory; a target with more than one hard link is instead rewritten in
 * place from the temporary, so every link sees the new content.
 * Temporaries of earlier runs that died (kill -9, SIGXFSZ) are removed by the
 * next write to the same directory once they are a minute old.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1
#include "core/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TMP_TAG ".bptmp."
#define STALE_SECONDS 60

static const bp_allocator *oa(void) { return &bp__libc_allocator; }

/* The process's umask, read without changing it (umask() would race with
 * other threads); 022 where /proc does not say. */
static unsigned current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    unsigned m = 022;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Umask:", 6) == 0) { m = (unsigned)strtoul(line + 6, NULL, 8); break; }
    if (f) fclose(f);
    return m;
}

void bp__remove_stale_temps(const char *dir, const char *tag)
{
    DIR *d = opendir(dir);
    if (!d) return;
    time_t now = time(NULL);
    struct dirent *e;
    char p[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.' || !strstr(e->d_name, tag)) continue;
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= sizeof p) continue;
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > STALE_SECONDS) unlink(p);
    }
    closedir(d);
}

/* The directory part of path into dir ("." without one, "/" for "/x"). */
static void dir_of(const char *path, char dir[PATH_MAX])
{
    const char *slash = strrchr(path, '/');
    snprintf(dir, PATH_MAX, "%.*s", slash ? (int)(slash > path ? slash - path : 1) : 1, slash ? path : ".");
}

static char *dup_str(const char *s, size_t *size)
{
    *size = strlen(s) + 1;
    char *d = bp__alloc(oa(), *size);
    if (d) memcpy(d, s, *size);
    return d;
}

static void out_release(bp__outfile *o)
{
    bp__free(oa(), o->path, o->path_size);
    bp__free(oa(), o->tmp, o->tmp_size);
    o->path = o->tmp = NULL;
}

/* Resolves path (following a symlink) into o->path and checks what is
 * there: nothing, or a regular file whose mode and link count are kept. */
static bp_status out_target(bp__outfile *o, const char *path, bp_error *err)
{
    struct stat st;
    char real[PATH_MAX];
    const char *target = path;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(path, real)) target = real;
    o->path = dup_str(target, &o->path_size);
    if (!o->path) return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path);
    o->mode = 0666u & ~current_umask();
    if (stat(o->path, &st) != 0) {
        if (errno == ENOENT) return BP_OK;
        return bp__err(err, BP_ERR_IO, "%s: cannot write there: %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return bp__err(err, BP_ERR_IO, "%s: is not a regular file (%s); refusing to replace it", path,
                       S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" :
                       S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a special file");
    o->mode = (unsigned)st.st_mode & 07777u;
    o->in_place = st.st_nlink > 1;
    return BP_OK;
}

bp_status bp__out_open(bp__outfile *o, const char *path, bp_error *err)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) { o->f = stdout; o->is_stdout = true; return BP_OK; }
    bp_status s = out_target(o, path, err);
    if (s) { out_release(o); return s; }
    const char *slash = strrchr(o->path, '/');
    size_t dlen = slash ? (size_t)(slash - o->path) : 0;
    const char *base = slash ? slash + 1 : o->path;
    o->tmp_size = dlen + strlen(base) + sizeof TMP_TAG + 16;
    o->tmp = bp__alloc(oa(), o->tmp_size);
    if (!o->tmp) { out_release(o); return bp__err(err, BP_ERR_NOMEM, "%s: out of memory", path); }
    if (slash) snprintf(o->tmp, o->tmp_size, "%.*s/.%s" TMP_TAG "XXXXXX", (int)dlen, o->path, base);
    else snprintf(o->tmp, o->tmp_size, ".%s" TMP_TAG "XXXXXX", base);
    char dir[PATH_MAX];
    dir_of(o->path, dir);
    bp__remove_stale_temps(dir, TMP_TAG);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        s = bp__err(err, BP_ERR_IO, "%s: cannot create a file in its directory: %s", path, strerror(errno));
        out_release(o);
        return s;
    }
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        s = bp__err(err, BP_ERR_IO, "%s: %s", path, strerror(errno));
        close(fd); unlink(o->tmp); out_release(o);
        return s;
    }
    return BP_OK;
}

/* Copies the finished temporary over the target in place (hard links). */
static bool out_copy_in_place(bp__outfile *o)
{
    FILE *in = fopen(o->tmp, "rb");
    int fd = open(o->path, O_WRONLY | O_TRUNC | O_NOFOLLOW);
    bool ok = in && fd >= 0;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        for (size_t w = 0; ok && w < n;) {
            ssize_t k = write(fd, buf + w, n - w);
            if (k < 0 && errno == EINTR) continue;
            ok = k > 0;
            w += k > 0 ? (size_t)k : 0;
        }
    if (in && ferror(in)) ok = false;
    if (fd >= 0 && fsync(fd) != 0) ok = false;
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (in) fclose(in);
    return ok;
}

static void fsync_dir(const char *path)
{
    char dir[PATH_MAX];
    dir_of(path, dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) { fsync(fd); close(fd); }
}

bp_status bp__out_commit(bp__outfile *o, bp_error *err)
{
    if (o->is_stdout) {
        if (fflush(stdout) != 0 || ferror(stdout)) return bp__err(err, BP_ERR_IO, "stdout: write error: %s", strerror(errno));
        return BP_OK;
    }
    bp_status s = BP_OK;
    int fd = fileno(o->f);
    bool bad = fflush(o->f) != 0 || ferror(o->f) != 0 || fchmod(fd, (mode_t)o->mode) != 0 || fsync(fd) != 0;
    int saved = errno;
    if (fclose(o->f) != 0 && !bad) { bad = true; saved = errno; }
    o->f = NULL;
    if (bad) {
        s = bp__err(err, BP_ERR_IO, "%s: write error: %s", o->path, strerror(saved));
    } else if (o->in_place) {
        if (!out_copy_in_place(o)) s = bp__err(err, BP_ERR_IO, "%s: write error: %s", o->path, strerror(errno));
    } else if (rename(o->tmp, o->path) != 0) {
        s = bp__err(err, BP_ERR_IO, "%s: cannot replace it: %s", o->path, strerror(errno));
    } else {
        fsync_dir(o->path);
    }
    if (s || o->in_place) unlink(o->tmp);
    out_release(o);
    return s;
}

void bp__out_abort(bp__outfile *o)
{
    if (o->is_stdout) { fflush(stdout); return; }
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    out_release(o);
    memset(o, 0, sizeof *o);
}
