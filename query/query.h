/*
 * query.h: what the query files share and nothing else needs, one section
 * per file: the buffered file writer behind liburing (uring.c), the export
 * formats (format.c), md5, lookup3 and the row encoding that range hashes
 * are made of (digest.c), encoded keys taken apart (keys.c), the
 * replica-side range scan (ranges.c), and the SQL text that computes the
 * same hashes inside PostgreSQL (sql.c); reconcile.c and export.c use them.
 * query/ reads the replica only through the store's iterator and key codec
 * (include/cdcstore.h, store/internal.h), never through ingest/.
 * Not API (cdc__ prefix).
 */
#ifndef CDC_QUERY_H
#define CDC_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

/* ---- File writer (uring.c) ---- */

/* Writes a stream of bytes to a file descriptor with several buffers in
 * flight: through io_uring when the kernel gives a ring, otherwise through
 * plain write(2).  Bytes are written in order at increasing file offsets
 * starting from the descriptor's offset at open (or appended for pipes and
 * terminals, which always use write(2)). */
typedef struct cdc__writer cdc__writer;

/* 0 ok, -errno.  nbufs buffers of bufsize bytes each (0: defaults). */
int cdc__writer_open(int fd, size_t nbufs, size_t bufsize, cdc__writer **out);
/* Copies n bytes in; may submit a full buffer.  0 ok, or the first write error (-errno). */
int cdc__writer_put(cdc__writer *w, const void *p, size_t n);
/* Submits what is buffered and waits for every write.  0 ok, -errno. */
int cdc__writer_flush(cdc__writer *w);
/* Bytes handed to the kernel and completed so far. */
uint64_t cdc__writer_bytes(const cdc__writer *w);
/* 1 when io_uring is in use, 0 with the write(2) fallback. */
int cdc__writer_uses_uring(const cdc__writer *w);
/* Flushes (unless already failed), frees; returns the first error or 0.
 * Accepts NULL. Does not close fd. */
int cdc__writer_close(cdc__writer *w);
/* Writes all n bytes of p at off (at fd's position when off < 0), again
 * after EINTR and short writes.  0 ok, -errno. */
int cdc__write_all(int fd, const char *p, size_t n, off_t off);

/* ---- Export formats (format.c, driven by export.c) ---- */

/* What a format writes through: its bytes go to *out, which the export
 * drains to the file between calls. */
typedef struct cdc__export_ctx {
    const cdc_export_options_t *opts;
    cdc__buf *out;
    uint64_t offset;  /* bytes of the export before out->p[0] (a second context: its own) */
    void *state;      /* the format's own; NULL at first, freed by release */
    const char *const *types; /* the columns' type descriptors, ntypes of them
                               * (cdc_store_column_types; an entry may be NULL) */
    size_t ntypes;
    cdc_error_t err;          /* a format's message for the code it returns (optional) */
    int continuation;         /* 1: a second context of a format with adopt: its bytes go
                               * after the first context's, which writes the file's start */
} cdc__export_ctx;

/* How a table's rows become bytes.  For one export the driver calls begin
 * once (with the table's columns, also for an empty view), row once per row
 * in key order, end once, and release on every context it made (also when
 * a failure skipped end, also with state NULL).  They return 0 or a
 * negative CDC_E* code (or -errno).  begin, end and release may be NULL
 * (nothing to write or free). */
typedef struct cdc__export_format {
    const char *name;
    /* 1: the bytes row() appends depend on that row alone: not on the rows
     * before it, not on a file offset, not on state.  The export may then
     * encode a later key range in a second context that sees row() only
     * (no begin, no end, no state) and place its bytes, as they are, after
     * the first context's rows and before that context's end().  0: one
     * context sees every row. */
    int concat_rows;
    int (*begin)(cdc__export_ctx *c, const char *const *names, size_t ncols);
    int (*row)(cdc__export_ctx *c, const cdc_row_t *row);
    int (*end)(cdc__export_ctx *c);
    void (*release)(cdc__export_ctx *c);
    /* Formats of relocatable blocks (Parquet's row groups), concat_rows 0:
     * a second context (continuation 1: begin, rows, flush; no end) may
     * encode a later key range while the first encodes the earlier one;
     * the first then flushes, the second's bytes are placed after the
     * first's, and adopt makes the first's end describe the second's blocks
     * too, placed shift bytes after the second's offset 0.  NULL: no. */
    int (*flush)(cdc__export_ctx *c);
    int (*adopt)(cdc__export_ctx *c, cdc__export_ctx *from, uint64_t shift);
    /* 1: row() reads row->key_json.  0: it is NULL (the export then formats
     * no key per row, only one for an error). */
    int key_json;
} cdc__export_format;

extern const cdc__export_format cdc__export_csv, cdc__export_ndjson, cdc__export_parquet;

/* The format of a CDC_FORMAT_* number, NULL when there is none. */
const cdc__export_format *cdc__export_format_get(int format);

/* cdc_export_fd() in format fmt (opts->format is not read); export.c.  For
 * formats that have no CDC_FORMAT_* number yet, and for tests. */
int cdc__export_run(cdc_store_t *st, const char *table, const cdc_export_options_t *opts,
                    const cdc__export_format *fmt, int fd, uint64_t *rows, cdc_error_t *err);

/* ---- md5 (digest.c, RFC 1321) ---- */

typedef struct cdc__md5 {
    uint32_t a, b, c, d;
    uint64_t len;
    unsigned char buf[64];
} cdc__md5;

void cdc__md5_init(cdc__md5 *m);
void cdc__md5_update(cdc__md5 *m, const void *p, size_t n);
void cdc__md5_final(cdc__md5 *m, unsigned char out[16]);

/* ---- Row hashes (digest.c) ---- */

/* The row encoding of values[cols[0..ncols)] (all of them when cols is
 * NULL) into out (reset first).  See digest.c. */
void cdc__row_encode(const char *const *values, const size_t *lens, const size_t *cols, size_t ncols,
                     cdc__buf *out);
/* The hash of one row's encoding with algorithm (CDC_HASH_*); scratch is a
 * buffer the caller keeps between calls. */
uint64_t cdc__row_hash(const char *const *values, const size_t *lens, const size_t *cols, size_t ncols,
                       int algorithm, cdc__buf *scratch);
/* PostgreSQL's hash_bytes_extended(k, n, 0), i.e. hashtextextended(t, 0). */
uint64_t cdc__lookup3(const void *data, size_t n);

/* The middle of the key span of table's view (a single integer key, and
 * 1,000,000 rows or more; CDC_EXPORT_THREADS=1 never, another value always),
 * where an export is cut in two for two threads.  0 and *mid set, or -1
 * (export.c). */
int cdc__export_split(cdc_store_t *st, const char *table, int include_deleted, int64_t *mid);

/* ---- Keys (keys.c) ---- */

enum { CDC__KP_INT = 1, CDC__KP_TEXT = 2 };

typedef struct cdc__keypart {
    int type;            /* CDC__KP_INT or CDC__KP_TEXT */
    int64_t i;
    char *s;             /* text value, malloc'd, NUL-terminated (may hold NULs: use n) */
    size_t n;
} cdc__keypart;

/* Splits an encoded key into its parts.  *parts is malloc'd; free with
 * cdc__keyparts_free.  0 ok, CDC_ECORRUPT. */
int cdc__key_parts(const char *key, size_t len, cdc__keypart **parts, size_t *n);
void cdc__keyparts_free(cdc__keypart *parts, size_t n);
/* 1 and *v set when key is a single integer (a bigint or int primary key),
 * else 0. */
int cdc__key_single_int(const char *key, size_t len, int64_t *v);
/* The JSON array text of an encoded key, NUL-terminated in out (reset first). */
int cdc__key_json_array(const char *key, size_t len, cdc__buf *out);

/* ---- Replica range scans (ranges.c) ---- */

/* One range found by a scan: [lower, next range's lower) or [lower, scan's
 * upper) for the last.  lower is an encoded key (empty: the scan's lower,
 * which may be open); bucket is the width bucket in width mode. */
typedef struct cdc__rh {
    cdc__buf lower;
    int64_t bucket;
    uint64_t rows, hash;
} cdc__rh;

typedef struct cdc__scan {
    /* Inputs. */
    const char *table;
    const cdc__buf *lo, *hi;  /* encoded bounds; NULL or empty: open */
    int64_t width;            /* > 0: width buckets over a single integer key */
    uint64_t stride;          /* width == 0: a new range every stride rows (0: one range) */
    int algorithm;            /* CDC_HASH_* */
    const size_t *cols;       /* columns hashed (NULL: all) */
    size_t ncols;
    const unsigned char *trim;/* per hashed column: how its text is compared, CDC__CMP_* (NULL: as stored) */
    /* Outputs. */
    cdc__rh *r;
    size_t n, cap;
    uint64_t rows;            /* total rows seen */
    uint64_t max_lsn;         /* the highest row version LSN seen */
    cdc__buf first_key;       /* key of the first row seen (empty when none) */
} cdc__scan;

/* The length of a NUMERIC's text without trailing fraction zeros ("1.250"
 * -> "1.25", "103.0" -> "103"), like PostgreSQL's trim_scale().  Unconstrained
 * NUMERIC columns are compared this way: Debezium's default (precise) mode
 * sends them as {scale, value} with trailing zeros dropped, so the text the
 * source prints cannot be recovered, while the value can. */
size_t cdc__numeric_trim(const char *v, size_t n);

/* How reconcile compares a column's replica text with the source's. */
enum {
    CDC__CMP_TEXT = 0,    /* as stored */
    CDC__CMP_NUMERIC = 1, /* a NUMERIC: cdc__numeric_trim (cdc__sql_numeric) */
    CDC__CMP_FLOAT4 = 2,  /* a real: as PostgreSQL prints the float4 (cdc__put_real) */
};
/* The replica text v (length *n) of a column compared as kind, pointing
 * into v or into scratch; *n its length.  A real's text is a double's
 * when the envelopes carried no schema (1000000 for 1e+06, 1.4e-45 for
 * 1e-45, as Debezium wrote the float4's number): printed as the float4
 * PostgreSQL prints, it compares equal to the source's. */
const char *cdc__cmp_text(int kind, const char *v, size_t *n, cdc__buf *scratch);

/* Scans [lo, hi) of table in the replica, hashing each row into its range. */
int cdc__scan_run(cdc_store_t *st, cdc__scan *s, cdc_error_t *err);
void cdc__scan_free(cdc__scan *s);

/* floor(k / w), for w > 0, without overflow. */
static inline int64_t cdc__floordiv(int64_t k, int64_t w)
{
    int64_t q = k / w;
    return (k % w != 0 && k < 0) ? q - 1 : q;
}

/* ---- SQL text (sql.c) ---- */

/* How one source column is turned into the text the replica holds. */
typedef struct cdc__srccol {
    const char *name;
    const char *type;        /* PostgreSQL type name (format_type), NULL when unknown */
} cdc__srccol;

/* Appends a quoted identifier ("a""b") / a quoted text literal ('it''s'),
 * valid with standard_conforming_strings on. */
void cdc__sql_ident(cdc__buf *b, const char *s);
void cdc__sql_literal(cdc__buf *b, const char *s, size_t n);
/* Appends schema.table quoted: "public"."orders" (no dot: just quoted). */
void cdc__sql_table(cdc__buf *b, const char *table);
/* Appends the expression giving column c in the replica's text form. */
void cdc__sql_coltext(cdc__buf *b, const cdc__srccol *c);
/* 1 for a NUMERIC column's type ("numeric", "numeric(12,2)"; not an array):
 * compared without trailing fraction zeros (CDC__CMP_NUMERIC). */
int cdc__sql_numeric(const char *type);
/* Appends the row encoding expression (text) / the per-row hash
 * expression (a bigint) over cols. */
void cdc__sql_rowenc(cdc__buf *b, const cdc__srccol *cols, size_t n);
void cdc__sql_rowhash(cdc__buf *b, const cdc__srccol *cols, size_t n, int algorithm);

/* Key columns as seen by SQL: name, and how the replica orders it. */
typedef struct cdc__srckey {
    const char *name;
    int kind;                /* CDC__KP_INT or CDC__KP_TEXT */
    int uuid;                /* text kind on a uuid column: compare as uuid */
    int string;              /* text kind on a string column: COLLATE "C" */
    char *expr;              /* the column's key as the replica holds it, when not the column itself
                              * (temporal keys, reconcile.c key_expr); owned by the caller */
} cdc__srckey;

/* Appends the key column's ordering expression (with COLLATE "C" for text). */
void cdc__sql_keyexpr(cdc__buf *b, const cdc__srckey *k);
/* Appends a literal for key part p of column k. */
void cdc__sql_keylit(cdc__buf *b, const cdc__srckey *k, const cdc__keypart *p);
/* Appends "TRUE" or the condition lo <= key < hi for encoded bounds (empty = open). */
int cdc__sql_range(cdc__buf *b, const cdc__srckey *keys, size_t nkey, const cdc__buf *lo,
                   const cdc__buf *hi);
/* Appends the bucket expression: width buckets (width > 0, one integer key),
 * or the 0-based index of the range among bounds (encoded keys, ascending:
 * range i is [bounds[i-1], bounds[i])). */
int cdc__sql_bucket(cdc__buf *b, const cdc__srckey *keys, size_t nkey, int64_t width,
                    const cdc__buf *bounds, size_t nbounds);

/* ---- Plain queries to the source (reconcile.c, the libpq door) ---- */

/* A connection to the source for a few queries whose rows are read as text.
 * Messages name the source by its connection string without the password
 * and mask any password text libpq echoes (as reconcile's do). */
typedef struct cdc__pg cdc__pg;

/* The rows of one query: v[row * ncols + col], NULL for SQL NULL. */
typedef struct cdc__pgrows {
    size_t nrows, ncols;
    char **v;
} cdc__pgrows;

/* Connects (application_name app; gives up after timeout_ms, 0: 5000,
 * unless conninfo sets connect_timeout).  0 with *out set, or CDC_ESOURCE
 * with err saying why. */
int cdc__pg_connect(const char *conninfo, const char *app, int timeout_ms, cdc__pg **out, cdc_error_t *err);
/* The source as messages name it: the connection string without password. */
const char *cdc__pg_who(const cdc__pg *c);
/* Runs sql with nparams text parameters ($1...; a NULL entry is SQL NULL).
 * 0 with *out filled (free with cdc__pgrows_free), or CDC_ESOURCE with err
 * naming what ("reading the slots") and the server's message. */
int cdc__pg_rows(cdc__pg *c, const char *sql, int nparams, const char *const *params, const char *what,
                 cdc__pgrows *out, cdc_error_t *err);
void cdc__pgrows_free(cdc__pgrows *r);
/* Closes the connection and frees c; accepts NULL. */
void cdc__pg_close(cdc__pg *c);

/* ---- Keys of a Delta data file (keyidx.c) ---- */

/* Written in row order, then to a file. */
typedef struct cdc__keyidx_w {
    cdc__buf b, prev, restarts;
    uint64_t n;
} cdc__keyidx_w;
void cdc__keyidx_add(cdc__keyidx_w *w, const char *key, size_t len);
/* Writes and fsyncs path.  0, or an error in err. */
int cdc__keyidx_write(cdc__keyidx_w *w, const char *path, cdc_error_t *err);
void cdc__keyidx_w_free(cdc__keyidx_w *w);

/* A file read back whole. */
typedef struct cdc__keyidx {
    cdc__buf b;   /* the file's bytes: mapped (map) or read */
    void *map;
    uint32_t finger; /* the restart the last lookup ended at (cdc__keyidx_find) */
    const char *restarts;
    uint32_t nr;
    uint64_t n;   /* keys */
    size_t end;   /* where the entries end */
} cdc__keyidx;
/* 0, or an error in err (CDC_ECORRUPT for a file it did not write). */
int cdc__keyidx_load(const char *path, cdc__keyidx *x, cdc_error_t *err);
/* The row index of key, -1 when it is not there, -2 when the file is
 * damaged.  cur: the caller's scratch buffer. */
int64_t cdc__keyidx_find(cdc__keyidx *x, const char *key, size_t len, cdc__buf *cur);
void cdc__keyidx_free(cdc__keyidx *x);

#endif
