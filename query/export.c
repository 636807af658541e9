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
 */
#include <errno.h>
#include <string.h>
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

static void json_str(cdc__buf *b, const char *s, size_t n)
{
    cdc__buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            cdc__buf_putc(b, '\\');
            cdc__buf_putc(b, (char)c);
        } else if (c < 0x20) {
            cdc__buf_printf(b, "\\u%04x", c);
        } else {
            cdc__buf_putc(b, (char)c);
        }
    }
    cdc__buf_putc(b, '"');
}

int cdc_export_fd(cdc_store_t *st, const char *table, const cdc_export_options_t *opts, int fd,
                  uint64_t *rows, cdc_error_t *err)
{
    cdc_export_options_t defo = {.header = 1};
    if (!opts) opts = &defo;
    cdc_iter_options_t io = {opts->lower_json, opts->upper_json, opts->meta};
    cdc_iter_t *it;
    int rc = cdc_iter_open(st, table, &io, &it, err);
    if (rc) return rc;
    out o = {0};
    if ((rc = cdc__writer_open(fd, 0, 0, &o.w))) {
        cdc_iter_close(it);
        return cdc__err(err, rc, "export of %s: %s", table, strerror(-rc));
    }
    uint64_t count = 0;
    cdc_row_t row;
    int header_done = !(opts->format == CDC_FORMAT_CSV && opts->header);
    if (!header_done) {
        /* The header comes from the table's columns, even for an empty view. */
        const char *const *names;
        size_t n;
        if ((rc = cdc_store_columns(st, table, &names, &n, err))) goto done;
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
                json_str(&o.b, row.names[i], strlen(row.names[i]));
                cdc__buf_putc(&o.b, ':');
                if (row.values[i]) json_str(&o.b, row.values[i], row.lens[i]);
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
        if (opts->progress && count % 100000 == 0) opts->progress(opts->progress_opaque, count, o.bytes);
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
    if (rows) *rows = count;
    return rc;
}
