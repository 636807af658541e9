/*
 * export.c: bulk export of a table's view in key order, in one of the export
 * formats (format.c: CSV that PostgreSQL's COPY ... CSV loads back, NDJSON).
 * This file reads the rows and writes the file; the format turns the
 * table's columns and rows into bytes through its begin, row and end
 * (cdc__export_format, query.h).  The bytes collect in a buffer that is
 * handed, 256 KiB at a time, to the file writer (uring.c), which keeps
 * several buffers in flight to a regular file through io_uring and falls
 * back to write(2) elsewhere.
 *
 * Two threads.  A large export (a million rows or more, a single integer
 * key, the whole view, a regular file, a format whose rows concatenate) is
 * cut in two at the middle of the key span: this thread writes the format's
 * begin and the lower half to the output while a second thread encodes the
 * upper half, rows only, into a temporary file; then the upper half is
 * appended with copy_file_range(2), and the format's end (if any) follows.
 * Reading and encoding rows is what an export spends its time on, so two
 * cores make it about twice as fast.  This relies on cdc_iter_open/next only
 * reading the store (each iterator has its own RocksDB snapshot and
 * buffers), true of store/store.c today.  CDC_EXPORT_THREADS=1 turns it
 * off; =2 forces it even for small tables.
 *
 * Why the format declares whether its rows concatenate (concat_rows), and
 * the join is used only then.  Appending the upper half byte for byte is
 * right only when a row's bytes mean the same wherever they land: true of
 * CSV and NDJSON (no state across rows, no file offsets), and their header
 * is written once, by the lower half, before any row.  A format whose bytes
 * depend on what precedes them (Parquet: its footer holds every column
 * chunk's file offset) says concat_rows = 0 and is exported by one thread
 * through one context (begin once, every row in key order, end once),
 * unless its blocks are relocatable (below).  The
 * other design, both threads handing encoded rows to one writer that calls
 * begin, the rows in key order and end, was not taken: that writer cannot
 * write a row of the upper half before the last of the lower half, so the
 * upper half must wait somewhere: in memory (half the export, some 200 MB of
 * CSV for 10 million rows), in a bounded queue (the upper thread then stalls
 * and the export runs at one core's speed), or in a temporary file, which is
 * what the join does already, without a second copy through user space.  A
 * format with relocatable blocks (Parquet's row groups: flush and adopt)
 * takes the same path: the second context begins as a continuation (no
 * file header), both flush their last block, the upper half is appended,
 * and the first context's adopt records where the second's blocks landed
 * before its end writes the footer that lists them all.
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

/* The bytes of one format context on their way to one descriptor. */
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

/* ---- One key range to one descriptor ---- */

typedef struct part {
    cdc_store_t *st;
    const char *table;
    const cdc_export_options_t *opts;
    const cdc__export_format *fmt;
    const char *lower_json, *upper_json;
    int fd;
    int begin, end;                /* 1: call the format's begin first / end last */
    int progress;                  /* 1: call opts->progress (one part only) */
    _Atomic uint64_t *shared_rows; /* rows written by all parts, for progress */
    const char *const *names;      /* the table's columns and their types (part_columns) */
    const char *const *types;
    size_t ncols;
    cdc__export_ctx ctx;           /* the format's context for this part */
    uint64_t rows, bytes;
    uint64_t unknown;              /* rows with a column of unknown value */
    int rc;
    cdc_error_t err;
} part;

/* Reads the table's columns and their types, once for both halves, before
 * the second thread starts.  The store lends them until its next call
 * (cdc_store_column_types frees the previous array and its strings): the
 * two halves each asking for them at the start of a Parquet export freed
 * each other's strings, and one half's writer then took a string column
 * for the boolean whose descriptor the freed memory had come to hold
 * ("parquet: column status: 'paid' is not a valid boolean value", on the
 * first export of tests/query/bench.sh's new 10,000,000-row replica, in 2
 * runs of 3). */
static int part_columns(part *p)
{
    size_t nt;
    int rc = cdc_store_columns(p->st, p->table, &p->names, &p->ncols, &p->err);
    if (!rc) rc = cdc_store_column_types(p->st, p->table, &p->types, &nt, &p->err);
    /* every context reads them: a second one of concatenated rows too,
     * which has no begin (CSV's and NDJSON's years, format.c) */
    p->ctx.types = p->types;
    p->ctx.ntypes = rc ? 0 : nt;
    /* A table no event of which was applied (only dead letters name it)
     * has no column: a Parquet file of none is refused by DuckDB ("Need at
     * least one non-root column") and deltalake; CSV and NDJSON write an
     * empty view as they would any. */
    if (!rc && !p->ncols && !p->opts->meta && p->opts->format == CDC_FORMAT_PARQUET)
        rc = cdc__err(&p->err, CDC_EINVAL,
                      "export of %s: the table has no columns (no event of it was applied, only dead letters name "
                      "it): a Parquet file needs at least one",
                      p->table);
    /* --meta's columns must not repeat one of the table's: readers refuse a
     * Parquet file with two columns of one name (pyarrow: "Multiple matches
     * for FieldRef.Name(__lsn)"), and a CSV header with it is ambiguous. */
    for (size_t i = 0; !rc && p->opts->meta && i < p->ncols; i++)
        if (!strcmp(p->names[i], "__lsn") || !strcmp(p->names[i], "__deleted"))
            rc = cdc__err(&p->err, CDC_EINVAL,
                          "export of %s: the table has a column named %s, which --meta adds; export it without "
                          "--meta",
                          p->table, p->names[i]);
    return rc;
}

/* Passes the table's columns to the format's begin. */
static int part_begin(part *p)
{
    int rc;
    if ((rc = p->fmt->begin(&p->ctx, p->names, p->ncols)))
        return cdc__err(&p->err, rc, "export of %s: %s header: %s", p->table, p->fmt->name,
                        p->ctx.err.msg[0] ? p->ctx.err.msg : cdc_strerror(rc));
    return 0;
}

/* Writes the view of [lower, upper) to p->fd through a file writer, as the
 * rows of p->fmt, with its begin and end when the part says so. */
static int export_part(part *p)
{
    const cdc_export_options_t *opts = p->opts;
    const cdc__export_format *fmt = p->fmt;
    cdc_error_t *err = &p->err;
    const char *table = p->table;
    /* The key's JSON is formatted per row only for a format that reads it. */
    cdc_iter_options_t io = {.lower_json = p->lower_json, .upper_json = p->upper_json, .include_deleted = opts->meta,
                             .no_key_json = !fmt->key_json};
    cdc_iter_t *it;
    int rc = cdc_iter_open(p->st, table, &io, &it, err);
    if (rc) return rc;
    out o = {0};
    if ((rc = cdc__writer_open(p->fd, 0, 0, &o.w))) {
        cdc_iter_close(it);
        return cdc__err(err, rc, "export of %s: %s", table, strerror(-rc));
    }
    p->ctx.opts = opts;
    p->ctx.out = &o.b;
    uint64_t count = 0;
    cdc_row_t row;
    if (p->begin && fmt->begin && (rc = part_begin(p))) goto done;
    while ((rc = cdc_iter_next(it, &row, err)) == 1) {
        if ((rc = fmt->row(&p->ctx, &row))) {
            const char *kj = cdc_iter_key_json(it);
            rc = cdc__err(err, rc, "export of %s: key %s: %s", table, kj ? kj : "(does not decode)",
                          p->ctx.err.msg[0] ? p->ctx.err.msg : cdc_strerror(rc));
            goto done;
        }
        count++;
        p->unknown += row.unknown != 0;
        if (o.b.len >= (256u << 10)) {
            out_flush(&o);
            p->ctx.offset = o.bytes;
        }
        if (o.err) break;
        if (count % 10000 == 0) {
            uint64_t all = atomic_fetch_add(p->shared_rows, 10000) + 10000;
            if (p->progress && opts->progress && count % 100000 == 0)
                opts->progress(opts->progress_opaque, all, o.bytes);
        }
    }
    if (rc < 0) goto done;
    rc = 0;
    /* A part whose blocks another part's end will describe writes them all. */
    if (!o.err && !p->end && fmt->flush && (rc = fmt->flush(&p->ctx))) {
        rc = cdc__err(err, rc, "export of %s: %s: %s", table, fmt->name,
                      p->ctx.err.msg[0] ? p->ctx.err.msg : cdc_strerror(rc));
        goto done;
    }
    if (!o.err && p->end && fmt->end && (rc = fmt->end(&p->ctx))) {
        rc = cdc__err(err, rc, "export of %s: %s footer: %s", table, fmt->name,
                      p->ctx.err.msg[0] ? p->ctx.err.msg : cdc_strerror(rc));
        goto done;
    }
    out_flush(&o);
    if (!o.err) o.err = cdc__writer_flush(o.w);
    if (o.err) rc = cdc__err(err, o.err, "export of %s: write failed: %s", table, strerror(-o.err));
done:
    cdc__writer_close(o.w);
    cdc__buf_free(&o.b);
    cdc_iter_close(it);
    p->ctx.out = NULL;
    p->rows = count;
    p->bytes = o.bytes;
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
    cdc_iter_options_t io = {.lower_json = lo, .include_deleted = include_deleted, .no_key_json = 1};
    cdc_iter_t *it;
    cdc_row_t row;
    if (cdc_iter_open(st, table, &io, &it, NULL)) return 0;
    int r = cdc_iter_next(it, &row, NULL) == 1;
    cdc_iter_close(it);
    return r;
}

/* The middle of the key span of table's view, for a single integer key
 * (found by seeking: the first key, then a binary search for the last),
 * when the view holds 1,000,000 rows or more.  CDC_EXPORT_THREADS=1: never;
 * set to anything else: whatever the rows (for tests).  0 and *mid set, or
 * -1. */
int cdc__export_split(cdc_store_t *st, const char *table, int include_deleted, int64_t *mid)
{
    const char *env = getenv("CDC_EXPORT_THREADS");
    if (env && !strcmp(env, "1")) return -1;
    uint64_t min_rows = env ? 1 : 1000000;
    cdc_stats_t stats = {0};
    if (cdc_store_stats(st, table, &stats, NULL) || stats.rows_live < min_rows) return -1;
    cdc_iter_options_t io = {.include_deleted = include_deleted, .no_key_json = 1};
    cdc_iter_t *it;
    cdc_row_t row;
    if (cdc_iter_open(st, table, &io, &it, NULL)) return -1;
    int64_t first = 0;
    int ok = cdc_iter_next(it, &row, NULL) == 1 && cdc__key_single_int(row.key, row.key_len, &first);
    cdc_iter_close(it);
    if (!ok) return -1;
    int64_t lo = first, hi = INT64_MAX; /* the last key is in [lo, hi] */
    while (lo < hi) {
        uint64_t d = (uint64_t)hi - (uint64_t)lo; /* >= 1; m in (lo, hi] without overflow */
        int64_t m = (int64_t)((uint64_t)lo + d / 2 + (d & 1));
        if (has_row_from(st, table, m, include_deleted)) lo = m;
        else hi = m - 1;
    }
    if (lo - first < 2) return -1;
    *mid = first + (int64_t)(((uint64_t)lo - (uint64_t)first) / 2);
    return 0;
}

/* Where to cut a large export in two (cdc__export_split), when the format
 * and the descriptor allow it.  0 and *mid set, or -1: export in one piece. */
static int split_point(cdc_store_t *st, const char *table, const cdc_export_options_t *opts,
                       const cdc__export_format *fmt, int fd, int64_t *mid)
{
    if (opts->lower_json || opts->upper_json || !(fmt->concat_rows || fmt->adopt)) return -1;
    struct stat sb;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || fl < 0 || (fl & O_APPEND)) return -1;
    return cdc__export_split(st, table, opts->meta, mid);
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
        int rc = cdc__write_all(dst, buf, (size_t)n, -1);
        if (rc) return rc;
        in += n;
    }
    return 0;
}

/* The two-thread export (see the top of the file): a writes begin and
 * [lower, mid) to its descriptor, b the rows of [mid, upper) to tmp; then
 * tmp is appended and a's end written after it.  a->rc, a->err and
 * a->rows receive the outcome.  0, or -1 when the thread could not start
 * (nothing was written). */
static int export_halves(part *a, part *b, int tmp)
{
    pthread_t th;
    if (pthread_create(&th, NULL, part_thread, b) != 0) return -1;
    a->rc = export_part(a);
    pthread_join(th, NULL);
    if (!a->rc && b->rc) {
        a->rc = b->rc;
        a->err = b->err;
    }
    if (!a->rc && (a->rc = append_file(tmp, a->fd)))
        cdc__err(&a->err, a->rc, "export of %s: write failed: %s", a->table, strerror(-a->rc));
    if (!a->rc && a->fmt->adopt && (a->rc = a->fmt->adopt(&a->ctx, &b->ctx, a->bytes)))
        cdc__err(&a->err, a->rc, "export of %s: %s: %s", a->table, a->fmt->name,
                 a->ctx.err.msg[0] ? a->ctx.err.msg : cdc_strerror(a->rc));
    if (!a->rc && a->fmt->end) {
        cdc__buf tail = {0};
        a->ctx.out = &tail;
        a->ctx.offset = a->bytes + b->bytes;
        if ((a->rc = a->fmt->end(&a->ctx)))
            cdc__err(&a->err, a->rc, "export of %s: %s footer: %s", a->table, a->fmt->name, cdc_strerror(a->rc));
        else if ((a->rc = cdc__write_all(a->fd, tail.p, tail.len, -1)))
            cdc__err(&a->err, a->rc, "export of %s: write failed: %s", a->table, strerror(-a->rc));
        a->ctx.out = NULL;
        cdc__buf_free(&tail);
    }
    a->rows += b->rows;
    a->unknown += b->unknown;
    return 0;
}

int cdc__export_run(cdc_store_t *st, const char *table, const cdc_export_options_t *opts,
                    const cdc__export_format *fmt, int fd, uint64_t *rows, cdc_error_t *err)
{
    _Atomic uint64_t shared = 0;
    part a = {.st = st, .table = table, .opts = opts, .fmt = fmt, .lower_json = opts->lower_json,
              .upper_json = opts->upper_json, .fd = fd, .begin = 1, .end = 1, .progress = 1,
              .shared_rows = &shared};
    /* done: exported, or failed before any row (the columns not read) */
    int tmp = -1, done = (a.rc = part_columns(&a)) != 0;
    part b = a;
    int64_t mid;
    char midj[32];
    if (!done && split_point(st, table, opts, fmt, fd, &mid) == 0 && (tmp = temp_file()) >= 0) {
        snprintf(midj, sizeof midj, "[%lld]", (long long)mid);
        a.upper_json = midj;
        a.end = 0; /* after the join */
        b.lower_json = midj;
        b.fd = tmp;
        b.end = b.progress = 0;
        /* concatenated rows need no begin; relocatable blocks begin as a continuation */
        b.begin = !fmt->concat_rows;
        b.ctx.continuation = 1;
        done = export_halves(&a, &b, tmp) == 0;
        close(tmp);
        if (!done) {
            a.upper_json = opts->upper_json;
            a.end = 1;
        }
    }
    if (!done) a.rc = export_part(&a);
    if (fmt->release) {
        fmt->release(&a.ctx);
        fmt->release(&b.ctx);
    }
    if (rows) *rows = a.rows;
    if (opts->unknown_rows) *opts->unknown_rows = a.unknown;
    if (a.rc && err) *err = a.err;
    return a.rc;
}

int cdc_export_fd(cdc_store_t *st, const char *table, const cdc_export_options_t *opts, int fd,
                  uint64_t *rows, cdc_error_t *err)
{
    cdc_export_options_t defo = {.header = 1};
    if (!opts) opts = &defo;
    const cdc__export_format *fmt = cdc__export_format_get(opts->format);
    if (!fmt) return cdc__err(err, CDC_EINVAL, "export of %s: unknown format %d", table, opts->format);
    return cdc__export_run(st, table, opts, fmt, fd, rows, err);
}
