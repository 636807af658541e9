/*
 * export.c: bulk export of a table's view in key order, as CSV compatible
 * with PostgreSQL's COPY ... CSV, or as NDJSON.
 *
 * CSV quoting follows COPY's rules so that COPY FROM gives back the same
 * values: a field is quoted when it is empty (so it reads as the empty string,
 * not NULL), or contains the delimiter, a quote, CR or LF, or is exactly \.;
 * quotes inside are doubled; NULL is written as nothing at all.
 *
 * Rows are formatted into a buffer that is handed, 256 KiB at a time, to the
 * file writer (uring.c), which keeps several buffers in flight to a regular
 * file through io_uring and falls back to write(2) elsewhere.
 *
 * A large export (a million rows or more, a single integer key, the whole
 * view, a regular file) is cut in two at the middle of the key span: a
 * second thread writes the upper half to a temporary file while this one
 * writes the lower half, and the upper half is appended with
 * copy_file_range(2).  Reading and formatting rows is what an export spends
 * its time on, so two cores make it about twice as fast.  This relies on
 * cdc_iter_open/next only reading the store (each iterator has its own
 * RocksDB snapshot and buffers), true of store/store.c today.
 * CDC_EXPORT_THREADS=1 turns it off; =2 forces it even for small tables.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "query.h"

typedef struct out {
    cdc__writer *w;
    cdc__buf b;
    uint64_t bytes;
    int err;
} out;

static void out_flush(out *o)
{
    if (!o->err && o->b.len) o->err = cdc__writer_put(o->w, o->b.p, o->b.len);
    o->bytes += o->b.len;
    o->b.len = 0;
}

/* Bytes that force quoting in a CSV field. */
static const unsigned char csv_special[256] = {['\n'] = 1, ['\r'] = 1, ['"'] = 1, [','] = 1};

static void csv_field(cdc__buf *b, const char *v, size_t n)
{
    const unsigned char *u = (const unsigned char *)v;
    size_t quotes = 0;
    int quote = n == 0 || (n == 2 && v[0] == '\\' && v[1] == '.');
    for (size_t i = 0; i < n; i++)
        if (csv_special[u[i]]) {
            quote = 1;
            quotes += u[i] == '"';
        }
    if (!quote) {
        cdc__buf_put(b, v, n);
        return;
    }
    cdc__buf_reserve(b, n + quotes + 2);
    char *o = b->p + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '"') *o++ = '"';
        *o++ = v[i];
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
}

/* ---- One key range to one descriptor ---- */

typedef struct part {
    cdc_store_t *st;
    const char *table;
    const cdc_export_options_t *opts;
    const char *lower_json, *upper_json;
    int fd;
    int header;                    /* 1: write the CSV header first */
    int progress;                  /* 1: call opts->progress (one part only) */
    _Atomic uint64_t *shared_rows; /* rows written by all parts, for progress */
    uint64_t rows;
    int rc;
    cdc_error_t err;
} part;

/* Writes the view of [lower, upper) to p->fd through a file writer. */
static int export_part(part *p)
{
    const cdc_export_options_t *opts = p->opts;
    cdc_error_t *err = &p->err;
    const char *table = p->table;
    cdc_iter_options_t io = {p->lower_json, p->upper_json, opts->meta};
    cdc_iter_t *it;
    int rc = cdc_iter_open(p->st, table, &io, &it, err);
    if (rc) return rc;
    out o = {0};
    if ((rc = cdc__writer_open(p->fd, 0, 0, &o.w))) {
        cdc_iter_close(it);
        return cdc__err(err, rc, "export of %s: %s", table, strerror(-rc));
    }
    uint64_t count = 0;
    cdc_row_t row;
    if (p->header && opts->format == CDC_FORMAT_CSV && opts->header) {
        /* The header comes from the table's columns, even for an empty view. */
        const char *const *names;
        size_t n;
        if ((rc = cdc_store_columns(p->st, table, &names, &n, err))) goto done;
        for (size_t i = 0; i < n; i++) {
            if (i) cdc__buf_putc(&o.b, ',');
            csv_field(&o.b, names[i], strlen(names[i]));
        }
        if (opts->meta) cdc__buf_puts(&o.b, n ? ",__lsn,__deleted" : "__lsn,__deleted");
        cdc__buf_putc(&o.b, '\n');
    }
    while ((rc = cdc_iter_next(it, &row, err)) == 1) {
        if (opts->format == CDC_FORMAT_CSV) {
            for (size_t i = 0; i < row.ncols; i++) {
                if (i) cdc__buf_putc(&o.b, ',');
                if (row.values[i]) csv_field(&o.b, row.values[i], row.lens[i]);
            }
            if (opts->meta)
                cdc__buf_printf(&o.b, "%s%llu,%s", row.ncols ? "," : "", (unsigned long long)row.lsn,
                                row.deleted ? "t" : "f");
        } else {
            cdc__buf_putc(&o.b, '{');
            for (size_t i = 0; i < row.ncols; i++) {
                if (i) cdc__buf_putc(&o.b, ',');
                cdc__json_put_string(&o.b, row.names[i], strlen(row.names[i]));
                cdc__buf_putc(&o.b, ':');
                if (row.values[i]) cdc__json_put_string(&o.b, row.values[i], row.lens[i]);
                else cdc__buf_puts(&o.b, "null");
            }
            if (opts->meta)
                cdc__buf_printf(&o.b, "%s\"__lsn\":%llu,\"__deleted\":%s", row.ncols ? "," : "",
                                (unsigned long long)row.lsn, row.deleted ? "true" : "false");
            cdc__buf_putc(&o.b, '}');
        }
        cdc__buf_putc(&o.b, '\n');
        count++;
        if (o.b.len >= (256u << 10)) out_flush(&o);
        if (o.err) break;
        if (count % 10000 == 0) {
            uint64_t all = atomic_fetch_add(p->shared_rows, 10000) + 10000;
            if (p->progress && opts->progress && count % 100000 == 0)
                opts->progress(opts->progress_opaque, all, o.bytes);
        }
    }
    if (rc < 0) goto done;
    rc = 0;
    out_flush(&o);
    if (!o.err) o.err = cdc__writer_flush(o.w);
    if (o.err) rc = cdc__err(err, o.err, "export of %s: write failed: %s", table, strerror(-o.err));
done:
    cdc__writer_close(o.w);
    cdc__buf_free(&o.b);
    cdc_iter_close(it);
    p->rows = count;
    return rc;
}

static void *part_thread(void *arg)
{
    part *p = arg;
    p->rc = export_part(p);
    return NULL;
}

/* ---- Two halves at once ---- */

/* 1 when the view has a row with key >= [k]. */
static int has_row_from(cdc_store_t *st, const char *table, int64_t k, int include_deleted)
{
    char lo[32];
    snprintf(lo, sizeof lo, "[%lld]", (long long)k);
    cdc_iter_options_t io = {lo, NULL, include_deleted};
    cdc_iter_t *it;
    cdc_row_t row;
    if (cdc_iter_open(st, table, &io, &it, NULL)) return 0;
    int r = cdc_iter_next(it, &row, NULL) == 1;
    cdc_iter_close(it);
    return r;
}

/* Where to cut a large export in two: the middle of the key span, for a
 * single integer key (found by seeking: the first key, then a binary search
 * for the last).  0 and *mid set, or -1: export in one piece. */
static int split_point(cdc_store_t *st, const char *table, const cdc_export_options_t *opts, int fd,
                       int64_t *mid)
{
    const char *env = getenv("CDC_EXPORT_THREADS");
    if ((env && !strcmp(env, "1")) || opts->lower_json || opts->upper_json) return -1;
    struct stat sb;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || fl < 0 || (fl & O_APPEND)) return -1;
    cdc_stats_t stats = {0};
    uint64_t min_rows = env ? 1 : 1000000; /* CDC_EXPORT_THREADS=2 forces it, for tests */
    if (cdc_store_stats(st, table, &stats, NULL) || stats.rows_live < min_rows) return -1;
    cdc_iter_options_t io = {NULL, NULL, opts->meta};
    cdc_iter_t *it;
    cdc_row_t row;
    if (cdc_iter_open(st, table, &io, &it, NULL)) return -1;
    int ok = cdc_iter_next(it, &row, NULL) == 1 && row.key_len == 9 &&
             (unsigned char)row.key[0] == CDC__KEY_INT;
    int64_t first = 0;
    if (ok) {
        uint64_t u = 0;
        for (int i = 1; i <= 8; i++) u = u << 8 | (unsigned char)row.key[i];
        first = (int64_t)(u ^ 0x8000000000000000ULL);
    }
    cdc_iter_close(it);
    if (!ok) return -1;
    int64_t lo = first, hi = INT64_MAX; /* the last key is in [lo, hi] */
    while (lo < hi) {
        uint64_t d = (uint64_t)hi - (uint64_t)lo; /* >= 1; m in (lo, hi] without overflow */
        int64_t m = (int64_t)((uint64_t)lo + d / 2 + (d & 1));
        if (has_row_from(st, table, m, opts->meta)) lo = m;
        else hi = m - 1;
    }
    if (lo - first < 2) return -1;
    *mid = first + (int64_t)(((uint64_t)lo - (uint64_t)first) / 2);
    return 0;
}

/* A temporary file for the second half, unlinked already. */
static int temp_file(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    char path[4096];
    snprintf(path, sizeof path, "%s/cdcexport.XXXXXX", dir);
    fd = mkstemp(path);
    if (fd >= 0) unlink(path);
    return fd;
}

/* Appends all of src (from offset 0) at dst's position. */
static int append_file(int src, int dst)
{
    off_t in = 0;
    struct stat sb;
    if (fstat(src, &sb)) return -errno;
    while (in < sb.st_size) {
        ssize_t n = copy_file_range(src, &in, dst, NULL, (size_t)(sb.st_size - in), 0);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) break;
        return -errno;
    }
    /* Where copy_file_range cannot: read and write. */
    char buf[1 << 16];
    while (in < sb.st_size) {
        ssize_t n = pread(src, buf, sizeof buf, in);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? -errno : -EIO;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(dst, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return w < 0 ? -errno : -EIO;
            done += w;
        }
        in += n;
    }
    return 0;
}

int cdc_export_fd(cdc_store_t *st, const char *table, const cdc_export_options_t *opts, int fd,
                  uint64_t *rows, cdc_error_t *err)
{
    cdc_export_options_t defo = {.header = 1};
    if (!opts) opts = &defo;
    _Atomic uint64_t shared = 0;
    part a = {st, table, opts, opts->lower_json, opts->upper_json, fd, 1, 1, &shared, 0, 0, {0}};
    int64_t mid;
    int tmp = -1;
    if (split_point(st, table, opts, fd, &mid) == 0 && (tmp = temp_file()) >= 0) {
        /* The lower half goes straight to fd, the upper half to a temporary
         * file at the same time, appended when both are done. */
        char midj[32];
        snprintf(midj, sizeof midj, "[%lld]", (long long)mid);
        part b = {st, table, opts, midj, NULL, tmp, 0, 0, &shared, 0, 0, {0}};
        a.upper_json = midj;
        pthread_t th;
        if (pthread_create(&th, NULL, part_thread, &b) == 0) {
            a.rc = export_part(&a);
            pthread_join(th, NULL);
            if (!a.rc && b.rc) {
                a.rc = b.rc;
                a.err = b.err;
            }
            if (!a.rc && (a.rc = append_file(tmp, fd)))
                cdc__err(&a.err, a.rc, "export of %s: write failed: %s", table, strerror(-a.rc));
            close(tmp);
            if (rows) *rows = a.rows + b.rows;
            if (a.rc && err) *err = a.err;
            return a.rc;
        }
        a.upper_json = opts->upper_json;
        close(tmp);
    }
    a.rc = export_part(&a);
    if (rows) *rows = a.rows;
    if (a.rc && err) *err = a.err;
    return a.rc;
}
