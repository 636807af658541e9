/*
 * internal.h: what the store offers the layers above it (ingest/, query/)
 * and not the API (cdc__ prefix): the allocation policy, errors, buffers and
 * varints, the key codec and its JSON text form, the decoded event a source
 * hands the store and the call that applies a batch of them, and the stored
 * value format.  The store knows no record format: ingest/ (its own header,
 * ingest/ingest.h) turns records into cdc__events; query/ (query/query.h)
 * reads through the iterator and the key codec.  Nothing here names a
 * function of ingest/ or query/.
 */
#ifndef CDC_INTERNAL_H
#define CDC_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdcstore.h"

#define CDC__UNUSED(x) ((void)(x))

/* ---- Memory ---- */

/* The library's one allocation policy (include/cdcstore.h, "Memory"): every
 * allocation goes through these wrappers, which abort with a message on
 * stderr when memory is exhausted, as Redis's zmalloc does.  A replica
 * cannot make progress without memory, a half-applied batch is never
 * committed (the batch is one atomic write), and a checked-and-returned
 * ENOMEM on each of hundreds of small allocations would be a path no test
 * runs.  So no caller checks the result, and none may call malloc itself. */
void cdc__oom(size_t n) __attribute__((noreturn, cold));
/* Inline: the decoder allocates for every record (its JSON nodes too). */
static inline void *cdc__malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (__builtin_expect(!p, 0)) cdc__oom(n);
    return p;
}
static inline void *cdc__realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (__builtin_expect(!q, 0)) cdc__oom(n);
    return q;
}
void *cdc__calloc(size_t n, size_t size) __attribute__((malloc, returns_nonnull));
char *cdc__strdup(const char *s) __attribute__((malloc, returns_nonnull));
char *cdc__strndup(const char *s, size_t n) __attribute__((malloc, returns_nonnull));

/* ---- Errors ---- */

/* Fills err (when not NULL) and returns code. */
int cdc__err(cdc_error_t *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Encoded keys (and any bytes) in RocksDB's bytewise order: the shorter of
 * two keys that agree on its length comes first.  Compared 8 bytes at a
 * time, without a call to memcmp: keys are short (9 bytes for a bigint) and
 * a lookup in a Delta table's key file compares some thirty.  A key of
 * length 0 may have a NULL pointer. */
static inline int cdc__key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t m = al < bl ? al : bl, i = 0;
    for (; i + 8 <= m; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    }
    for (; i < m; i++)
        if (a[i] != b[i]) return (unsigned char)a[i] < (unsigned char)b[i] ? -1 : 1;
    return (al > bl) - (al < bl);
}

/* ---- Growable buffer ---- */

typedef struct cdc__buf {
    char *p;
    size_t len, cap;
} cdc__buf;

/* Room for extra more bytes.  The check is inline (every put on the apply
 * and decode paths makes it; a call each was 2.5% of the samples applying
 * wide rows), the growth is not. */
void cdc__buf_grow(cdc__buf *b, size_t extra);
static inline void cdc__buf_reserve(cdc__buf *b, size_t extra)
{
    if (b->cap - b->len < extra) cdc__buf_grow(b, extra);
}
static inline void cdc__buf_put(cdc__buf *b, const void *data, size_t n)
{
    cdc__buf_reserve(b, n);
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
}
static inline void cdc__buf_putc(cdc__buf *b, char c)
{
    if (b->len == b->cap) cdc__buf_reserve(b, 1);
    b->p[b->len++] = c;
}
/* Appends the decimal text of v (no printf: this is on the apply path). */
void cdc__buf_put_i64(cdc__buf *b, int64_t v);
void cdc__buf_puts(cdc__buf *b, const char *s);
void cdc__buf_printf(cdc__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cdc__buf_vprintf(cdc__buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void cdc__buf_put_varint(cdc__buf *b, uint64_t v);
void cdc__buf_put_u64be(cdc__buf *b, uint64_t v);
/* PostgreSQL's float8 output of d (float4's when float4 is set: d rounded
 * to a float first): the shortest text that reads back to the same value,
 * in exponent form (1e+15, 1.5e-05) past float8's 15 or float4's 6 digits
 * or below 1e-4; NaN, Infinity, -Infinity, -0. */
void cdc__put_real(cdc__buf *b, double d, int float4);
void cdc__buf_free(cdc__buf *b);
static inline void cdc__buf_reset(cdc__buf *b) { b->len = 0; }

/* Reads a varint at *p (not past end); advances *p.  0 ok, -1 truncated.
 * Inline for the one-byte case (a row's column indexes and most lengths,
 * read for every column of every row an export or the guard decodes). */
int cdc__get_varint_long(const char **p, const char *end, uint64_t *v);
static inline int cdc__get_varint(const char **p, const char *end, uint64_t *v)
{
    if (*p < end && !(**p & 0x80)) {
        *v = (unsigned char)*(*p)++;
        return 0;
    }
    return cdc__get_varint_long(p, end, v);
}

/* ---- Key codec (store/codec.c) ---- */

/* Element tags of the order-preserving key encoding. */
enum { CDC__KEY_INT = 0x20, CDC__KEY_TEXT = 0x30 };

void cdc__key_add_int(cdc__buf *b, int64_t v);
void cdc__key_add_text(cdc__buf *b, const char *s, size_t n);
/* Reads the key element at *p (not past end) and advances *p: returns
 * CDC__KEY_INT with the value in *v, or CDC__KEY_TEXT with the bytes in
 * text (reset first), or -1 when the encoding is broken.  The one reader
 * of the encoding. */
int cdc__key_read(const unsigned char **p, const unsigned char *end, int64_t *v, cdc__buf *text);
/* Appends the key as a JSON object using names (n of them) to out; when
 * names is NULL, a JSON array.  0 ok, CDC_ECORRUPT on a bad encoding. */
int cdc__key_to_json(const char *key, size_t len, const char *const *names, size_t nnames,
                     cdc__buf *out);

/* ---- JSON text (store/json.c) ---- */

/* Appends s (n bytes) as a JSON string literal, quotes included: ", \ and
 * control characters escaped (\n, \r, \t, else \u00XX), other bytes as
 * they are.  The library's one JSON string writer. */
void cdc__json_put_string(cdc__buf *b, const char *s, size_t n);
/* The length of the valid UTF-8 sequence of two to four bytes at s (n
 * bytes left), 0 when there is none (the library's one UTF-8 rule). */
size_t cdc__utf8_len(const unsigned char *s, size_t n);
/* 1 when the n bytes at s are valid UTF-8. */
int cdc__utf8_valid(const char *s, size_t n);
/* Appends the UTF-8 encoding of code point cp. */
void cdc__utf8_put(cdc__buf *b, unsigned cp);
/* Reads the JSON string literal at p (at its opening quote, not past end),
 * appending the unescaped bytes to b.  Returns the position after the
 * closing quote, or NULL when malformed. */
const char *cdc__json_read_string(const char *p, const char *end, cdc__buf *b);
extern int cdc__json_pairs; /* store/json.c: -1 by the processor, 0 off (tests) */
/* Parses a key given as JSON (an object naming the key columns, or an array
 * of the values in key order) into the key encoding, appended to out.
 * keycols may be NULL when the table's key columns are unknown (then only
 * arrays are accepted).  Errors: CDC_EINVAL, with the key in the message. */
int cdc__key_from_json(const char *json, const char *const *keycols, size_t nkey, cdc__buf *out,
                       cdc_error_t *err);
/* The member names of a flat JSON object (a key as the store prints it),
 * n of them, each malloc'd into names.  0 ok, -1 malformed (nothing set). */
int cdc__json_object_keys(const char *json, char **names, size_t n);

/* ---- Decoded events: what a source hands the store ---- */

/* A source (ingest/) turns each input record into one cdc__event and hands
 * a batch of them, beside the records they came from, to
 * cdc__store_apply_events().  The event says what happens to which row and
 * carries the inputs of the ordering version; the store decides the version
 * (store/apply.c) and knows nothing of the record's format. */

/* Value tags in an event row: 0 = NULL, 1 = unavailable (unchanged TOAST),
 * n + 2 = n bytes of text follow. */
enum { CDC__V_NULL = 0, CDC__V_UNAVAILABLE = 1, CDC__V_TEXT = 2 };

/* Event row: varint ncols, then per column: varint name length, name bytes,
 * varint tag, value bytes. */
void cdc__evrow_add(cdc__buf *b, const char *name, size_t name_len, int tag, const char *v,
                    size_t vlen);
/* Reads the column of an event row at *p (after its leading count) and
 * advances *p: its name (not NUL-terminated), its tag (CDC__V_NULL,
 * CDC__V_UNAVAILABLE or CDC__V_TEXT) and, for text, its value.  The one
 * reader of the format; 0, or CDC_ECORRUPT past end. */
int cdc__evrow_next(const char **p, const char *end, const char **name, size_t *name_len, int *tag,
                    const char **v, size_t *vlen);

/* Ordering version (the rule and its argument: store/apply.c).  Compared
 * as (epoch, kind, then the position): when both versions know their commit
 * order, by (commit, read before change, lsn); otherwise by lsn.  commit 0
 * means unknown (an event without source.sequence, or a value written
 * before the commit order was kept). */
typedef struct cdc__version {
    uint64_t epoch;
    uint32_t kind;
    uint64_t lsn;
    uint64_t commit; /* end of the commit record delivered before the event; 0 unknown */
    uint32_t read;   /* 1: an incremental snapshot read, placed before the changes of its commit */
} cdc__version;

enum { CDC__KIND_GAP = 0, CDC__KIND_SNAPSHOT = 1, CDC__KIND_STREAM = 2 };

static inline int cdc__version_cmp(const cdc__version *a, const cdc__version *b)
{
    if (a->epoch != b->epoch) return a->epoch < b->epoch ? -1 : 1;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    if (a->commit && b->commit) {
        if (a->commit != b->commit) return a->commit < b->commit ? -1 : 1;
        if (a->read != b->read) return a->read ? -1 : 1;
    }
    if (a->lsn != b->lsn) return a->lsn < b->lsn ? -1 : 1;
    return 0;
}

/* The longest table name ("schema.table") a replica takes, in bytes.
 * PostgreSQL's are at most 127 (two identifiers of 63 and the dot); sources
 * dead-letter a record naming a longer one before anything is written, so
 * that no input can make a column family the replica cannot open again. */
#define CDC__TABLE_NAME_MAX 1024

/* What an event does. */
enum {
    CDC__ACT_UPSERT = 0, /* the row image becomes the key's row */
    CDC__ACT_DELETE,     /* the key's row is deleted; row is the before image (may be empty) */
    CDC__ACT_FLOOR,      /* no key: every row of the table below the event's version is deleted
                          * (a truncate) */
    CDC__ACT_NOOP,       /* changes no row; counted as "other" against table (may be NULL) */
    CDC__ACT_TOMBSTONE,  /* a null record of the source: counted against table, nothing else */
    CDC__ACT_DEAD        /* the record does not decode: dead-lettered with reason */
};

/* Where the event stands in a snapshot (Debezium's source.snapshot). */
enum {
    CDC__SNAP_NONE = 0,   /* streamed change ("false" or absent) */
    CDC__SNAP_TRUE,       /* a snapshot read ("true", "first", "first_in_data_collection") */
    CDC__SNAP_LAST,       /* the snapshot read that completes the table's snapshot ("last",
                           * "last_in_data_collection") */
    CDC__SNAP_INCREMENTAL /* "incremental": a read of an incremental snapshot, ordered by the
                           * commit it follows (lsn = commit) */
};

/* One decoded event.  Owned buffers are freed by cdc__event_free. */
typedef struct cdc__event {
    int action;            /* CDC__ACT_* */
    int snapshot;          /* CDC__SNAP_* */
    uint64_t lsn;          /* the source's log position of the change (the snapshot's for reads) */
    uint64_t commit;       /* commit order: the end of the commit record delivered before it; 0 unknown */
    int64_t ts_ms;         /* the source's commit or read time */
    char *table;           /* "schema.table", malloc'd; NULL: counted as no known table */
    cdc__buf key;          /* encoded primary key */
    cdc__buf keycols;      /* varint n, then n x (varint len, name) */
    cdc__buf row;          /* event row of the new image (upsert) or the before image (delete) */
    int nunavailable;      /* columns carrying the unchanged-TOAST placeholder */
    cdc__buf defaults;     /* upserts: the defaults the event's schema gives, as an event row
                            * (the column's default in text form, or NULL); empty without one */
    cdc__buf coltypes;     /* upserts with a schema: each column's type as an event row of
                            * descriptors ("int32", "decimal:2", "int64/io.debezium.time.Date"...) */
    char *reason;          /* CDC__ACT_DEAD: why, malloc'd */
    /* A primary-key change (cdc_record_t's old_key, key_moved): an upsert with
     * placeholders (nunavailable > 0) carries the encoded key the row had,
     * empty otherwise; a delete whose row lives on under another key has
     * key_moved 1 (its tombstone keeps the row for the new key to read). */
    cdc__buf old_key;
    int key_moved;
} cdc__event;

void cdc__event_free(cdc__event *ev);

/* Declared column types, for sources whose records do not say them
 * (envelopes without a schema): a NUMERIC scale (>= 0), CDC__COL_NONE when
 * nothing is declared, or one of the time codes below. */
enum {
    CDC__COL_NONE = -1,
    CDC__COL_MICROTIMESTAMP = -2, /* timestamp as microseconds since 1970 (TIMESTAMP(4-6)) */
    CDC__COL_TIMESTAMP_MS = -3,   /* timestamp as milliseconds (TIMESTAMP(0-3)) */
    CDC__COL_DATE = -4,           /* date as days since 1970 */
    CDC__COL_MICROTIME = -5,      /* time of day as microseconds */
    CDC__COL_BYTEA = -6,          /* bytea as base64 (binary.handling.mode=bytes) */
    CDC__COL_TIME_MS = -7,        /* time of day as milliseconds (TIME(0-3)) */
    CDC__COL_INTERVAL = -8,       /* interval as microseconds (MicroDuration) */
    CDC__COL_TIMESTAMPTZ = -9,    /* timestamptz as ZonedTimestamp text (kept as it comes) */
};
/* The type declared for table.column (cdc_store_set_column_type).  Reads
 * settings only, so sources may call it from several threads while no
 * declaration is being made. */
int cdc__store_column_type(const cdc_store_t *st, const char *table, const char *column);

/* Applies a decoded batch under the version guard: evs[i] was decoded from
 * recs[i] (whose positions, and bytes for dead letters, the store keeps).
 * Consumes evs (frees every event and the array), also on error.  As
 * cdc_store_apply() otherwise. */
int cdc__store_apply_events(cdc_store_t *st, const cdc_record_t *recs, cdc__event *evs, size_t n,
                            const cdc_apply_options_t *opts, cdc_apply_result_t *res,
                            cdc_error_t *err);
/* The same, leaving evs to the caller (to be freed on any thread once this
 * returns): a source whose events were allocated on another thread frees
 * them there, where the allocator's own cache takes them back. */
int cdc__store_apply_events_kept(cdc_store_t *st, const cdc_record_t *recs, cdc__event *evs, size_t n,
                                 const cdc_apply_options_t *opts, cdc_apply_result_t *res,
                                 cdc_error_t *err);

/* ---- The automatic purge (store/gc.c) ---- */

/* Called by a source after each batch it applied, with the current time:
 * when after_ms > 0, keeps a sample of each table's newest applied LSN
 * every after_ms / 16 (at least every second) and, once a sample is
 * after_ms old, raises each table's purge horizon to the LSN the sample
 * holds (never over a snapshot still running), written and published
 * without a compaction: RocksDB's own compactions remove the tombstones.
 * gc.c's head says why that horizon is sound.  res (may be NULL) as
 * cdc_store_purge's.  Cheap when nothing is due.  Errors: CDC_EIO. */
int cdc__store_purge_tick(cdc_store_t *st, int64_t after_ms, int64_t now_ms, cdc_gc_result_t *res,
                          cdc_error_t *err);

/* ---- Stored values (store/codec.c) ---- */

#define CDC__VALUE_FORMAT 1   /* values whose version has no commit order */
#define CDC__VALUE_FORMAT_2 2 /* the version's commit order and read mark follow its lsn */
#define CDC__VALUE_FORMAT_3 3 /* as 2, then the Kafka partition the value came from */
enum { CDC__F_DELETED = 1, CDC__F_SNAPSHOT = 2 };

typedef struct cdc__value {
    int flags;
    cdc__version ver;
    int64_t ts_ms;
    int32_t partition;     /* Kafka partition of the newest applied event, -1 unknown */
    const char *row;       /* stored row: varint n, n x (varint col index, varint tag, bytes) */
    size_t row_len;
} cdc__value;

/* partition: the Kafka partition of the event that wrote the value, -1 when
 * it had none (a bare envelope from a file). */
void cdc__value_encode(cdc__buf *out, int flags, const cdc__version *ver, int64_t ts_ms, int32_t partition,
                       const char *row, size_t row_len);
/* 0 ok, CDC_ECORRUPT. row points into v. */
int cdc__value_decode(const char *v, size_t len, cdc__value *out);

#endif
