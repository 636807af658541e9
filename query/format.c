/*
 * format.c: the export formats, each a cdc__export_format (query.h): how a
 * table's columns and rows become bytes, apart from reading the rows and
 * writing the file, which export.c does for every format.  A new format
 * is one more table of functions here; export.c needs no change.  Parquet's
 * bytes are parquet.c's; its table is at the end.
 *
 * CSV follows COPY's rules so that COPY FROM gives back the same values: a
 * field is quoted when it is empty (so it reads as the empty string, not
 * NULL), or contains the delimiter, a quote, CR or LF, or is exactly \.;
 * quotes inside are doubled; NULL is written as nothing at all.  The header
 * line (opts->header) names the table's columns.
 *
 * NDJSON is one JSON object per row and line, in column order, values as
 * strings (PostgreSQL's text form), NULL as null.
 *
 * With opts->meta both add the row's LSN and deleted flag (__lsn,
 * __deleted) after the columns.  Neither has a footer or state, and a row's
 * bytes depend on that row alone, so both declare concat_rows: export.c may
 * encode two key ranges at once and join them.
 */
#include <string.h>

#include "parquet.h"
#include "query.h"

/* ---- CSV ---- */

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

/* The header line, from the table's columns (so also for an empty view). */
static int csv_begin(cdc__export_ctx *c, const char *const *names, size_t n)
{
    if (!c->opts->header) return 0;
    for (size_t i = 0; i < n; i++) {
        if (i) cdc__buf_putc(c->out, ',');
        csv_field(c->out, names[i], strlen(names[i]));
    }
    if (c->opts->meta) cdc__buf_puts(c->out, n ? ",__lsn,__deleted" : "__lsn,__deleted");
    cdc__buf_putc(c->out, '\n');
    return 0;
}

/* ---- Years PostgreSQL reads ---- */

/* A timestamptz is stored as Debezium's ZonedTimestamp carries it: ISO 8601
 * in UTC with Java's years, astronomical before year 1 (1 BC is "0000",
 * 44 BC "-0043") and signed past 9999 ("+10000").  PostgreSQL reads
 * neither: COPY refuses "0000-01-01T00:00:00Z" (field value out of range),
 * "-0043-03-15T10:00:00Z" and "+10000-01-01T00:00:00Z" (time zone
 * displacement out of range).  CSV and NDJSON, which hold PostgreSQL's text,
 * write them as PostgreSQL does: the year 1 - y and " BC" after the value,
 * or the year without its sign.  The stored text, a key's, reconcile's
 * (query/sql.c renders the source in Debezium's form) and the typed
 * exports' (parquet.c reads both forms) are unchanged.  Measured on the
 * test stack (Debezium 3.6.1, PostgreSQL 15): '0045-03-15 10:00:00+00 BC'
 * arrives as "-0044-03-15T10:00:00.000000Z", in the snapshot and the
 * stream alike. */
static const char ZONED[] = "string/io.debezium.time.ZonedTimestamp";

/* v[0..n) rewritten into out when it is a ZonedTimestamp's year that
 * PostgreSQL does not read; 0 (out untouched) when it is not one. */
static int zoned_pg_year(const char *v, size_t n, cdc__buf *out)
{
    size_t i = v[0] == '-' || v[0] == '+', d = i;
    uint64_t y = 0;
    while (d < n && v[d] >= '0' && v[d] <= '9' && d - i < 18) y = y * 10 + (uint64_t)(v[d++] - '0');
    if (d - i < 4 || d >= n || v[d] != '-') return 0;
    if (v[0] == '+') { /* past 9999: the digits alone */
        cdc__buf_put(out, v + 1, n - 1);
        return 1;
    }
    if (v[0] != '-' && y != 0) return 0; /* years 1 to 9999 as they are */
    /* astronomical y (negated by the sign) is 1 - y BC: -0043 is 44 BC */
    cdc__buf_printf(out, "%04llu", (unsigned long long)(v[0] == '-' ? y + 1 : 1));
    cdc__buf_put(out, v + d, n - d);
    cdc__buf_puts(out, " BC");
    return 1;
}

/* The value of column i as PostgreSQL reads it: v itself, or its rewrite
 * in tmp (zoned_pg_year).  Only a value starting with a sign or "0000" is
 * looked at twice. */
static const char *pg_text(const cdc__export_ctx *c, size_t i, const char *v, size_t *n, cdc__buf *tmp)
{
    if (!*n || !(v[0] == '-' || v[0] == '+' || v[0] == '0') || i >= c->ntypes || !c->types[i] ||
        strcmp(c->types[i], ZONED))
        return v;
    tmp->len = 0;
    if (!zoned_pg_year(v, *n, tmp)) return v;
    *n = tmp->len;
    return tmp->p;
}

static int csv_row(cdc__export_ctx *c, const cdc_row_t *row)
{
    cdc__buf *b = c->out, tmp = {0};
    for (size_t i = 0; i < row->ncols; i++) {
        if (i) cdc__buf_putc(b, ',');
        if (!row->values[i]) continue;
        size_t n = row->lens[i];
        const char *v = pg_text(c, i, row->values[i], &n, &tmp);
        csv_field(b, v, n);
    }
    cdc__buf_free(&tmp);
    if (c->opts->meta)
        cdc__buf_printf(b, "%s%llu,%s", row->ncols ? "," : "", (unsigned long long)row->lsn,
                        row->deleted ? "t" : "f");
    cdc__buf_putc(b, '\n');
    return 0;
}

const cdc__export_format cdc__export_csv = {
    .name = "csv",
    .concat_rows = 1,
    .begin = csv_begin,
    .row = csv_row,
};

/* ---- NDJSON ---- */

static int ndjson_row(cdc__export_ctx *c, const cdc_row_t *row)
{
    cdc__buf *b = c->out, tmp = {0};
    cdc__buf_putc(b, '{');
    for (size_t i = 0; i < row->ncols; i++) {
        if (i) cdc__buf_putc(b, ',');
        cdc__json_put_string(b, row->names[i], strlen(row->names[i]));
        cdc__buf_putc(b, ':');
        if (row->values[i]) {
            size_t n = row->lens[i];
            const char *v = pg_text(c, i, row->values[i], &n, &tmp);
            cdc__json_put_string(b, v, n);
        } else {
            cdc__buf_puts(b, "null");
        }
    }
    cdc__buf_free(&tmp);
    if (c->opts->meta)
        cdc__buf_printf(b, "%s\"__lsn\":%llu,\"__deleted\":%s", row->ncols ? "," : "",
                        (unsigned long long)row->lsn, row->deleted ? "true" : "false");
    cdc__buf_puts(b, "}\n");
    return 0;
}

const cdc__export_format cdc__export_ndjson = {
    .name = "ndjson",
    .concat_rows = 1,
    .row = ndjson_row,
};

/* ---- Parquet ---- */

/* Parquet is written by parquet.c; this is its place among the formats.  A
 * row's bytes depend on the rows before it (a row group is written when it
 * is full, and the footer holds every column chunk's file offset), so it
 * does not declare concat_rows: one context sees every row.  With
 * opts->meta the row's LSN (int64) and deleted flag (boolean) follow as
 * __lsn and __deleted. */

typedef struct pq_state {
    cdc__pq *pq;
    const char **vals;
    size_t *lens;
    size_t ncols;
    char lsn[24];
} pq_state;

static int pq_begin(cdc__export_ctx *c, const char *const *names, size_t n)
{
    pq_state *s = cdc__calloc(1, sizeof *s);
    c->state = s;
    int meta = c->opts->meta;
    size_t all = n + (meta ? 2 : 0);
    const char **nm = cdc__calloc(all + 1, sizeof *nm), **ty = cdc__calloc(all + 1, sizeof *ty);
    for (size_t i = 0; i < n; i++) {
        nm[i] = names[i];
        ty[i] = c->types ? c->types[i] : NULL;
    }
    if (meta) {
        nm[n] = "__lsn", ty[n] = "int64";
        nm[n + 1] = "__deleted", ty[n + 1] = "boolean";
    }
    cdc__pq_options o = {.row_group_rows = c->opts->row_group_rows, .compression = c->opts->compression,
                         .continuation = c->continuation};
    int rc = cdc__pq_open(nm, ty, all, &o, &s->pq, &c->err);
    free(nm);
    free(ty);
    if (rc) return rc;
    s->ncols = all;
    s->vals = cdc__calloc(all + 1, sizeof *s->vals);
    s->lens = cdc__calloc(all + 1, sizeof *s->lens);
    return 0;
}

static int pq_row(cdc__export_ctx *c, const cdc_row_t *row)
{
    pq_state *s = c->state;
    const char *const *vals = row->values;
    const size_t *lens = row->lens;
    if (c->opts->meta) {
        memcpy(s->vals, row->values, row->ncols * sizeof *s->vals);
        memcpy(s->lens, row->lens, row->ncols * sizeof *s->lens);
        int n = snprintf(s->lsn, sizeof s->lsn, "%llu", (unsigned long long)row->lsn);
        s->vals[row->ncols] = s->lsn, s->lens[row->ncols] = (size_t)n;
        s->vals[row->ncols + 1] = row->deleted ? "t" : "f", s->lens[row->ncols + 1] = 1;
        vals = s->vals;
        lens = s->lens;
    }
    return cdc__pq_row(s->pq, vals, lens, c->out, c->offset, &c->err);
}

static int pq_end(cdc__export_ctx *c)
{
    pq_state *s = c->state;
    return cdc__pq_end(s->pq, c->out, c->offset, &c->err);
}

static int pq_flush(cdc__export_ctx *c)
{
    pq_state *s = c->state;
    return cdc__pq_flush(s->pq, c->out, c->offset, &c->err);
}

static int pq_adopt(cdc__export_ctx *c, cdc__export_ctx *from, uint64_t shift)
{
    pq_state *s = c->state, *f = from->state;
    return cdc__pq_adopt(s->pq, f->pq, shift, &c->err);
}

static void pq_release(cdc__export_ctx *c)
{
    pq_state *s = c->state;
    if (!s) return;
    cdc__pq_free(s->pq);
    free(s->vals);
    free(s->lens);
    free(s);
    c->state = NULL;
}

const cdc__export_format cdc__export_parquet = {
    .name = "parquet",
    .concat_rows = 0,
    .begin = pq_begin,
    .row = pq_row,
    .end = pq_end,
    .release = pq_release,
    .flush = pq_flush,
    .adopt = pq_adopt,
};

/* ---- By number ---- */

const cdc__export_format *cdc__export_format_get(int format)
{
    switch (format) {
    case CDC_FORMAT_CSV: return &cdc__export_csv;
    case CDC_FORMAT_NDJSON: return &cdc__export_ndjson;
    case CDC_FORMAT_PARQUET: return &cdc__export_parquet;
    default: return NULL;
    }
}
