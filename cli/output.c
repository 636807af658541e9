/*
 * output.c: what the command writes for people and where exports go.
 *
 * Text for a terminal.  Table names, column names, dead-letter reasons and
 * records come from the change events, that is from whoever can write to
 * the source database or the Kafka topic.  Printed raw, a newline in a
 * table name forges a line of `cdcstore tables`, and an escape sequence
 * ("\x1b[2J", or OSC sequences that set the window title or the clipboard)
 * acts on the operator's terminal.  Every piece of record-derived text the
 * command prints as text (not as JSON, which cdc_json_write_string escapes,
 * and not as export data, which must stay the bytes stored) goes through
 * cli_escape(): control bytes become \n, \r, \t or \xNN, and so do the
 * bytes of C1 controls and of invalid UTF-8; printable UTF-8 is kept.  A
 * backslash is not doubled: the escaped text is for reading (JSON records
 * as dlq list prints them stay legible), and --json is the exact form.
 *
 * Export files.  `export --output FILE` never truncates FILE in place: the
 * new export is written to a file beside it (the same directory, so the
 * rename is atomic), fsync'd, renamed over FILE, and the directory is
 * fsync'd.  Until the rename FILE holds the previous export byte for byte;
 * after it, the new one in full.  On any failure the new file is removed
 * and FILE is left as it was.  The new file is unnamed (O_TMPFILE) while it
 * is written, so a process killed then leaves nothing behind; it is named
 * ".FILE.cdcexport-XXXXXX" only from the link to the rename.  Where the
 * filesystem has no O_TMPFILE (or /proc is missing, or CDC_EXPORT_TMPFILE=0
 * asks for it, for tests) the file has that name from the start, and a
 * SIGINT, SIGTERM, SIGHUP or SIGPIPE removes it before the process ends.
 * A name left by SIGKILL or a crash is removed by the next export to the
 * same FILE, unless another process still holds it: every export holds
 * an flock on its new file, and only files nobody holds are removed.
 * The new file takes FILE's permission bits (and, where allowed, its owner
 * and group); a symbolic link is followed and the file it names replaced;
 * a FILE that is not a regular file (/dev/null, a FIFO) is written in place
 * as before, since it cannot be replaced.  As with O_TRUNC, a FILE the user
 * may not write is refused; its other hard links keep the previous export.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* ---- Text for a terminal ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left) that is not a C1
 * control, or 0 (the byte is then escaped). */
static size_t utf8_printable(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F; /* up to U+10FFFF */
    } else return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (c == 0xC2 && s[1] < 0xA0) return 0; /* U+0080..U+009F, the C1 controls */
    return len;
}

int cli_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        /* a C1 control is valid UTF-8 too: two bytes, C2 80..9F */
        size_t l = (u[i] == 0xC2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9F) ? 2 : utf8_printable(u + i, n - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

void cli_put_base64(FILE *f, const void *data, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        fputc(t[v >> 18], f);
        fputc(t[v >> 12 & 63], f);
        fputc(i + 1 < n ? t[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? t[v & 63] : '=', f);
    }
}

char *cli_escape(const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    if (!s) n = 0;
    char *out = cli_calloc(4 * n + 1, 1), *o = out;
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        size_t len;
        if (c >= 0x20 && c < 0x7F) {
            *o++ = (char)c;
            i++;
        } else if (c >= 0x80 && (len = utf8_printable(u + i, n - i))) {
            memcpy(o, u + i, len);
            o += len;
            i += len;
        } else {
            *o++ = '\\';
            if (c == '\n') *o++ = 'n';
            else if (c == '\r') *o++ = 'r';
            else if (c == '\t') *o++ = 't';
            else {
                *o++ = 'x';
                *o++ = hex[c >> 4];
                *o++ = hex[c & 15];
            }
            i++;
        }
    }
    *o = 0;
    return out;
}

const char *cli_plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

void cli_dead_letters_note(FILE *f, const char *cmd, const cdc_apply_result_t *r, const char *db)
{
    uint64_t fresh = r->dead_letters - r->dead_letters_known;
    if (!r->dead_letters_known)
        cli_printf_escaped(f, "cdcstore %s: %llu %s written; see `cdcstore dlq list --db %s`", cmd,
                           (unsigned long long)fresh, cli_plural(fresh, "dead letter", "dead letters"), db);
    else
        cli_printf_escaped(f,
                           "cdcstore %s: %llu %s written, %llu met again (in the dead-letter store already, "
                           "stored once); see `cdcstore dlq list --db %s`",
                           cmd, (unsigned long long)fresh, cli_plural(fresh, "dead letter", "dead letters"),
                           (unsigned long long)r->dead_letters_known, db);
}

void cli_write_escaped(FILE *f, const char *s, size_t n)
{
    char *e = cli_escape(s, n);
    fputs(e, f);
    free(e);
}

/* One line of text to f; to stderr with --log-format json, a JSON object
 * {"ts", "level", "facility": "cli", "msg"} (level NULL: "warn" when the
 * text says "warning" or is about dead letters, else "error"). */
int cli_json_line(FILE *f, const char *level, const char *facility, const char *msg, size_t n)
{
    char *j = NULL;
    size_t jn = 0;
    FILE *m = open_memstream(&j, &jn);
    if (!m) return -1;
    fprintf(m, "{\"ts\":%lld,\"level\":\"%s\",\"facility\":\"%s\",\"msg\":", (long long)time(NULL), level,
            facility);
    cdc_json_write_string(m, msg, n);
    fputs("}\n", m);
    fclose(m);
    fwrite(j, 1, jn, f); /* one write, so that lines of different threads do not mix */
    free(j);
    return 0;
}

static void put_line(FILE *f, const char *level, char *raw, int n)
{
    if (cli_log_json && f == stderr) {
        if (!level) level = strstr(raw, "warning") || strstr(raw, "dead letter") ? "warn" : "error";
        if (cli_json_line(f, level, "cli", raw, (size_t)n) == 0) {
            free(raw);
            return;
        }
    }
    char *e = cli_escape(raw, (size_t)n);
    size_t len = strlen(e);
    e[len] = '\n'; /* one write, so that lines of different threads do not mix */
    fwrite(e, 1, len + 1, f);
    free(e);
    free(raw);
}

static void vput_line(FILE *f, const char *level, const char *fmt, va_list ap)
{
    char *raw = NULL;
    int n = vasprintf(&raw, fmt, ap);
    if (n < 0) {
        fprintf(stderr, "cdcstore: out of memory\n");
        abort();
    }
    put_line(f, level, raw, n);
}

void cli_printf_escaped(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vput_line(f, NULL, fmt, ap);
    va_end(ap);
}

void cli_note(const char *level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vput_line(stderr, level, fmt, ap);
    va_end(ap);
}

/* ---- Export files ---- */

#define TEMP_TAG ".cdcexport-"
/* How much of FILE's name goes into the temporary name, so that it stays
 * within NAME_MAX (255): "." + 200 + ".cdcexport-" + 6. */
#define TEMP_BASE_MAX 200

/* The named temporary file while it exists, for the signal handler. */
static char sig_temp_path[PATH_MAX + 64];
static volatile sig_atomic_t sig_temp_set;

static void remove_temp_on_signal(int sig)
{
    if (sig_temp_set) unlink(sig_temp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static const int temp_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static void temp_guard(const char *dir, const char *name)
{
    snprintf(sig_temp_path, sizeof sig_temp_path, "%s/%s", dir, name);
    sig_temp_set = 1;
    for (size_t i = 0; i < sizeof temp_signals / sizeof temp_signals[0]; i++)
        signal(temp_signals[i], remove_temp_on_signal);
}

static void temp_unguard(void)
{
    for (size_t i = 0; i < sizeof temp_signals / sizeof temp_signals[0]; i++) signal(temp_signals[i], SIG_DFL);
    sig_temp_set = 0;
}

/* One export to a file: the target and the new file on its way there. */
typedef struct outfile {
    const char *given;       /* the path as the user gave it, for messages */
    char *real;              /* the file replaced: symlinks resolved */
    char *dir, *base;        /* its directory and name */
    char prefix[TEMP_BASE_MAX + 16]; /* ".BASE" + TEMP_TAG */
    char temp[TEMP_BASE_MAX + 32];   /* the new file's name in dir, "" while unnamed */
    int dirfd, fd;
    int direct;              /* 1: not a regular file: written in place */
    int exists;              /* 1: the target exists (sb is its status) */
    struct stat sb;
} outfile;

static int fail_errno(cdc_error_t *e, const outfile *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fills e with "FILE: <what>: <strerror>; FILE is unchanged" (or "nothing
 * was written" when there is no FILE yet) and returns code. */
static int fail_errno(cdc_error_t *e, const outfile *o, int code, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    e->code = code;
    snprintf(e->msg, sizeof e->msg, "%s: %s: %s; %s%s", o->given, what, strerror(-code),
             o->exists ? o->given : "nothing was written", o->exists ? " is unchanged" : "");
    return code;
}

/* A random suffix of 6 characters for a temporary name. */
static void random_suffix(char out[7])
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t x = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&r;
        for (int i = 0; i < 6; i++, x >>= 8) r[i] = (unsigned char)x;
    }
    for (int i = 0; i < 6; i++) out[i] = chars[r[i] % (sizeof chars - 1)];
    out[6] = 0;
}

/* Works out the target: follows a symbolic link, decides between replacing
 * and writing in place, checks that the user may write it.  0 or -errno. */
static int outfile_resolve(outfile *o, cdc_error_t *e)
{
    size_t gl = strlen(o->given);
    if (!gl || o->given[gl - 1] == '/') return fail_errno(e, o, -EISDIR, "cannot open for writing");
    struct stat lsb;
    if (lstat(o->given, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
        o->real = realpath(o->given, NULL);
        if (!o->real)
            return fail_errno(e, o, -errno, "cannot follow the symbolic link");
    } else {
        o->real = cli_strdup(o->given);
    }
    if (stat(o->real, &o->sb) == 0) {
        o->exists = 1;
        if (S_ISDIR(o->sb.st_mode)) return fail_errno(e, o, -EISDIR, "cannot open for writing");
        if (!S_ISREG(o->sb.st_mode)) o->direct = 1;
        else if (access(o->real, W_OK)) return fail_errno(e, o, -errno, "cannot open for writing");
    } else if (errno != ENOENT) {
        return fail_errno(e, o, -errno, "cannot open for writing");
    }
    char *d = cli_strdup(o->real), *b = cli_strdup(o->real);
    o->dir = cli_strdup(dirname(d));
    o->base = cli_strdup(basename(b));
    free(d);
    free(b);
    snprintf(o->prefix, sizeof o->prefix, ".%.*s" TEMP_TAG, TEMP_BASE_MAX, o->base);
    return 0;
}

/* Removes the temporary files that exports to this target left behind when
 * they were killed: those with our prefix that no process holds (flock). */
static void remove_stale(outfile *o)
{
    int dfd = dup(o->dirfd);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dir) {
        if (dfd >= 0) close(dfd);
        return;
    }
    size_t pl = strlen(o->prefix);
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strncmp(de->d_name, o->prefix, pl) || strlen(de->d_name) != pl + 6) continue;
        int fd = openat(o->dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat a, b;
        /* Still the same file once locked: another export may have just
         * renamed it over the target, or removed it itself. */
        if (!fstat(fd, &a) && S_ISREG(a.st_mode) && !flock(fd, LOCK_EX | LOCK_NB) &&
            !fstatat(o->dirfd, de->d_name, &b, AT_SYMLINK_NOFOLLOW) && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino && !unlinkat(o->dirfd, de->d_name, 0)) {
            char *msg = NULL;
            if (asprintf(&msg, "removed %s/%s, left by an export that was interrupted", o->dir, de->d_name) >= 0)
                cli_log(NULL, CDC_LOG_INFO, "export", msg);
            free(msg);
        }
        close(fd);
    }
    closedir(dir);
}

/* Creates the new file in the target's directory, unnamed where the
 * filesystem allows, locked, with the target's mode.  0 or -errno. */
static int outfile_create(outfile *o, cdc_error_t *e)
{
    mode_t mask = umask(022);
    umask(mask);
    mode_t mode = o->exists ? o->sb.st_mode & 07777 : 0644 & ~mask;
    const char *env = getenv("CDC_EXPORT_TMPFILE");
    o->fd = -1;
    if (!(env && !strcmp(env, "0")) && access("/proc/self/fd", X_OK) == 0)
        o->fd = openat(o->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (o->fd >= 0) {
        o->temp[0] = 0;
        if (flock(o->fd, LOCK_EX)) return fail_errno(e, o, -errno, "cannot lock the new file in %s", o->dir);
    } else {
        /* A name from the start.  Locked after creation: a remove_stale()
         * of another export may take it in between, hence the check. */
        for (int tries = 0; o->fd < 0; tries++) {
            char sfx[7];
            random_suffix(sfx);
            snprintf(o->temp, sizeof o->temp, "%s%s", o->prefix, sfx);
            o->fd = openat(o->dirfd, o->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (o->fd < 0) {
                if (errno == EEXIST && tries < 100) continue;
                int rc = -errno;
                o->temp[0] = 0;
                return fail_errno(e, o, rc, "cannot create a file in %s", o->dir);
            }
            temp_guard(o->dir, o->temp);
            /* Once locked and still ours by name, it stays ours: another
             * export removes only files it can lock. */
            struct stat a, b;
            int locked = !flock(o->fd, LOCK_EX);
            int ours = !fstat(o->fd, &a) && !fstatat(o->dirfd, o->temp, &b, AT_SYMLINK_NOFOLLOW) &&
                       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
            if (!locked || !ours) {
                if (ours) unlinkat(o->dirfd, o->temp, 0);
                if (tries >= 100) {
                    o->temp[0] = 0;
                    return fail_errno(e, o, -EAGAIN, "cannot create a file in %s", o->dir);
                }
                close(o->fd);
                o->fd = -1;
            }
        }
    }
    /* The owner and group first, where allowed (root; a group the user is
     * in): a change of owner clears the set-id bits that fchmod then sets.
     * Where not allowed the new file is the user's, as a new file is. */
    if (o->exists && (o->sb.st_uid != geteuid() || o->sb.st_gid != getegid()) &&
        fchown(o->fd, o->sb.st_uid, o->sb.st_gid) && fchown(o->fd, (uid_t)-1, o->sb.st_gid)) {
        /* keep ours */
    }
    if (fchmod(o->fd, mode)) return fail_errno(e, o, -errno, "cannot set the new file's mode");
    return 0;
}

/* Makes the new file the target: fsync, name (when unnamed), rename,
 * fsync the directory.  0 or -errno with e filled. */
static int outfile_commit(outfile *o, cdc_error_t *e)
{
    if (fsync(o->fd)) return fail_errno(e, o, -errno, "cannot write the new file: fsync");
    if (!o->temp[0]) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
        for (int tries = 0;; tries++) {
            char sfx[7];
            random_suffix(sfx);
            snprintf(o->temp, sizeof o->temp, "%s%s", o->prefix, sfx);
            if (!linkat(AT_FDCWD, proc, o->dirfd, o->temp, AT_SYMLINK_FOLLOW)) {
                temp_guard(o->dir, o->temp);
                break;
            }
            int rc = -errno;
            if (rc == -EEXIST && tries < 100) continue;
            o->temp[0] = 0;
            return fail_errno(e, o, rc, "cannot name the new file in %s", o->dir);
        }
    }
    if (renameat(o->dirfd, o->temp, o->dirfd, o->base))
        return fail_errno(e, o, -errno, "cannot rename the new file %s over it", o->temp);
    o->temp[0] = 0;
    temp_unguard();
    if (fsync(o->dirfd)) {
        int rc = -errno;
        e->code = rc;
        snprintf(e->msg, sizeof e->msg,
                 "%s: the export is in place, but its directory %s could not be synced (%s): a crash may "
                 "still bring back the previous export", o->given, o->dir, strerror(-rc));
        return rc;
    }
    return 0;
}

/* Removes what a failed export made, and frees. */
static void outfile_close(outfile *o)
{
    if (o->temp[0]) unlinkat(o->dirfd, o->temp, 0);
    temp_unguard();
    if (o->fd >= 0) close(o->fd);
    if (o->dirfd >= 0) close(o->dirfd);
    free(o->real);
    free(o->dir);
    free(o->base);
}

/* Writes in place a target that cannot be replaced (/dev/null, a FIFO). */
static int export_direct(cdc_store_t *st, const char *table, const cdc_export_options_t *eo, outfile *o,
                         uint64_t *rows, cdc_error_t *e)
{
    int fd = open(o->real, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        int rc = -errno;
        e->code = rc;
        snprintf(e->msg, sizeof e->msg, "%s: cannot open for writing: %s", o->given, strerror(-rc));
        return rc;
    }
    int rc = cdc_export_fd(st, table, eo, fd, rows, e);
    if (close(fd) && !rc) {
        rc = -errno;
        e->code = rc;
        snprintf(e->msg, sizeof e->msg, "%s: write failed: %s", o->given, strerror(-rc));
    }
    return rc;
}

int cli_export_file(cdc_store_t *st, const char *table, const cdc_export_options_t *eo, const char *path,
                    uint64_t *rows, cdc_error_t *e)
{
    outfile o = {.given = path, .dirfd = -1, .fd = -1};
    int rc = outfile_resolve(&o, e);
    if (rc) goto done;
    if (o.direct) {
        rc = export_direct(st, table, eo, &o, rows, e);
        goto done;
    }
    o.dirfd = open(o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o.dirfd < 0) {
        rc = fail_errno(e, &o, -errno, "cannot open its directory %s", o.dir);
        goto done;
    }
    remove_stale(&o);
    if ((rc = outfile_create(&o, e))) goto done;
    if ((rc = cdc_export_fd(st, table, eo, o.fd, rows, e))) {
        size_t l = strlen(e->msg);
        snprintf(e->msg + l, sizeof e->msg - l, "; %s%s", o.exists ? path : "nothing was written",
                 o.exists ? " is unchanged" : "");
        goto done;
    }
    rc = outfile_commit(&o, e);
done:
    outfile_close(&o);
    return rc;
}
