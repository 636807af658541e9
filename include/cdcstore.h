/*
 * cdcstore.h: the public interface of libcdcstore, and its manual.
 *
 * cdcstore keeps a replica of PostgreSQL tables from Debezium change events.
 * A replica is a directory holding one RocksDB database: a column family for
 * the rows of every source table ("public.orders"; a table of a replica
 * written before that layout has a family of its own), one for metadata
 * (source positions, table columns and ids, counters, snapshot epochs, which
 * key ranges changed when) and one for dead letters.  Each row is stored under its table's id and an
 * order-preserving encoding of its primary key with the value
 * <header: format, flags (deleted, from-snapshot), ordering version, ts_ms> +
 * <row>.  A change is written only when its ordering version is strictly
 * greater than the stored one, so duplicates, replays and late events leave
 * the replica equal to the source; deletes are kept as tombstones carrying
 * their version, so a late older update cannot bring a row back.
 *
 * The ordering version and why it is correct are described at the top of
 * store/apply.c; the value and key formats at the top of store/codec.c.
 *
 * Conventions (all functions):
 *  - return 0 on success, a negative CDC_E* code on failure (or -errno);
 *    cdc_strerror() names the code;
 *  - take an optional cdc_error_t *err (may be NULL) that receives a message
 *    naming the input at fault (table, topic, partition, offset, key);
 *  - copy their inputs; returned borrowed pointers say how long they stay valid;
 *  - every _open/_new has a _close/_free that accepts NULL;
 *  - memory: when an allocation fails the library writes one line to stderr
 *    and aborts the process (as Redis's zmalloc does); it never returns a
 *    half-done result for want of memory, and no batch is committed in part.
 *    CDC_ENOMEM is reported only for other exhausted resources (a thread
 *    that cannot be started).
 * A cdc_store_t may be used by one thread at a time (the caller serialises);
 * different stores are independent.  The library never prints: pass a log
 * callback in cdc_open_options_t.
 */
#ifndef CDCSTORE_H
#define CDCSTORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CDC_BUILDING_LIBRARY)
#define CDC_API __attribute__((visibility("default")))
#else
#define CDC_API
#endif

#define CDC_VERSION_STRING "0.1.0"

/* ---- Errors ---- */

/* Library error codes; all negative, distinct from -errno values (which are
 * above -4096). */
enum {
    CDC_OK = 0,
    CDC_EINVAL = -5001,   /* bad argument or option */
    CDC_EIO = -5002,      /* RocksDB or file I/O failed */
    CDC_ECORRUPT = -5003, /* stored data does not decode */
    CDC_ENOTFOUND = -5004,/* no such key, table or record */
    CDC_EDECODE = -5005,  /* an input record is malformed (it was dead-lettered) */
    CDC_ENOMEM = -5006,
    CDC_ELOCKED = -5007,  /* the replica directory is in use by another process */
    CDC_ESTOPPED = -5008, /* a run stopped on the first bad record (--on-error stop) */
    CDC_EKAFKA = -5009,   /* Kafka client error */
    CDC_ESOURCE = -5010,  /* source database error (reconciliation, source status) */
    CDC_ECONNECT = -5011, /* Kafka Connect REST API unreachable or refusing */
};

/* A caller-owned error report.  code repeats the return value; msg is a
 * NUL-terminated sentence naming the input at fault. */
typedef struct cdc_error {
    int code;
    char msg[1024];
} cdc_error_t;

/* The name of an error code ("invalid argument", ...); never NULL.
 * Ownership: static string. Thread-safety: safe. */
CDC_API const char *cdc_strerror(int code);

/* Writes s (n bytes) to f as a JSON string literal, quotes included, with
 * the escapes the library uses in all of its JSON output (", \\ and
 * control characters).  Returns 0, or -errno when the write fails.
 * Thread-safety: as safe as f. */
CDC_API int cdc_json_write_string(FILE *f, const char *s, size_t n);

/* ---- Logging ---- */

enum { CDC_LOG_ERROR = 3, CDC_LOG_WARN = 4, CDC_LOG_INFO = 6, CDC_LOG_DEBUG = 7 };

/* Called by the library for every log line.  facility is a short word
 * ("store", "apply", "kafka", ...).  Ownership: msg is valid during the call. */
typedef void (*cdc_log_fn)(void *opaque, int level, const char *facility, const char *msg);

/* ---- Opening a replica ---- */

typedef struct cdc_store cdc_store_t;

typedef struct cdc_open_options {
    int create_if_missing;   /* 1: create the directory and database when absent (0: an empty
                              * directory is refused, CDC_ENOTFOUND) */
    int read_only;           /* 1: open read-only (no lock against a running writer) */
    size_t block_cache_mb;   /* 0: default (64) */
    cdc_log_fn log;          /* NULL: no logging */
    void *log_opaque;
    size_t min_free_mb;      /* 0: default (128); see below */
} cdc_open_options_t;

/* Free space.  A replica opened for writing refuses to open, and each
 * apply refuses its batch, with -ENOSPC and a message naming the directory
 * and the space free, while its filesystem has less than min_free_mb MiB
 * free: RocksDB (as Debian builds it) aborts the process on an assertion
 * when its info log meets a full disk, and a memtable flush needs up to a
 * write buffer (64 MiB) of room.  Nothing is written by a refused call, so
 * the run resumes where it stopped once space is freed. */

/* Opens (or creates) the replica in directory dir.  opts may be NULL
 * (create_if_missing = 1, defaults otherwise).
 * Ownership: *out is the caller's; release with cdc_store_close().
 * Errors: CDC_ELOCKED when another process holds the directory, CDC_EIO,
 * CDC_ECORRUPT when the metadata was written by an incompatible format. */
CDC_API int cdc_store_open(const char *dir, const cdc_open_options_t *opts, cdc_store_t **out,
                           cdc_error_t *err);

/* Flushes and closes; accepts NULL. */
CDC_API void cdc_store_close(cdc_store_t *st);

/* ---- Per-table settings ---- */

/* Declares the scale of a NUMERIC column whose values arrive as Debezium's
 * default "precise" encoding (base64 of the unscaled big-endian two's
 * complement integer) in envelopes without a schema.  Without this setting
 * (and without a schema in the envelope) such a column is kept as the text it
 * arrives as: the decoder never guesses a scale.  Persisted in the replica.
 * table is "schema.table". Errors: CDC_EINVAL for scale outside 0..1000, and for a column
 * declared before with another scale or type (a declaration cannot change:
 * the rows applied were read by the first), CDC_EIO. */
CDC_API int cdc_store_set_decimal_scale(cdc_store_t *st, const char *table, const char *column,
                                        int scale, cdc_error_t *err);

/* Declares the type of a column whose values arrive, in envelopes without a
 * schema, as bare numbers that Debezium derived from a time type: type is
 * "timestamp" (microseconds since 1970: TIMESTAMP(4-6), Debezium's
 * MicroTimestamp), "timestamp-ms" (TIMESTAMP(0-3)), "date" (days since 1970),
 * "time" (microseconds of the day), "time-ms" (milliseconds of the day:
 * TIME(0-3)), "interval" (microseconds, Debezium's MicroDuration),
 * "bytea" (base64), or "numeric:S" (as
 * cdc_store_set_decimal_scale).  The decoder then stores PostgreSQL's text
 * ('2026-01-01 00:00:02').  Persisted in the replica.
 * Errors: CDC_EINVAL for an unknown type, and for a column declared before
 * otherwise (as above), CDC_EIO. */
CDC_API int cdc_store_set_column_type(cdc_store_t *st, const char *table, const char *column,
                                      const char *type, cdc_error_t *err);

/* ---- Applying records ---- */

/* One Kafka record (or one line of an input file).  value == NULL is a
 * tombstone.  offset < 0 means "no source position" (bare envelopes read from
 * a file); then source/line name the input for errors and dead letters. */
typedef struct cdc_record {
    const char *topic;      /* may be NULL for bare envelopes */
    int32_t partition;
    int64_t offset;
    const char *key;        /* Kafka key bytes (JSON text), may be NULL */
    size_t key_len;
    const char *value;      /* Debezium envelope (JSON text), NULL = tombstone */
    size_t value_len;
    const char *source;     /* input name for messages ("orders.jsonl"), may be NULL */
    int64_t line;           /* 1-based line in source, 0 when unknown */
    /* A primary-key change, from Debezium's record headers (NULL / 0 when
     * absent): old_key is __debezium.oldkey, the key (JSON text) the row had,
     * on the create of the new key; key_moved is 1 on the delete of the old
     * key (__debezium.newkey).  They let the row's unchanged TOASTed columns
     * follow it to its new key. */
    const char *old_key;
    size_t old_key_len;
    int key_moved;
} cdc_record_t;

enum { CDC_ON_ERROR_CONTINUE = 0, CDC_ON_ERROR_STOP = 1 };

typedef struct cdc_apply_options {
    int on_error;               /* CDC_ON_ERROR_CONTINUE (default) or _STOP */
    size_t max_record_bytes;    /* 0: 16 MiB; larger records are dead-lettered */
    int sync;                   /* 1: fsync the write-ahead log on every batch */
    /* Called after the batch committed, once per change event of the batch
     * (applied or not), with the event's table and source ts_ms: end-to-end
     * latency is the current time minus ts_ms.  ts_ms is 0 for a snapshot
     * read (initial or incremental), which has no such latency: its source
     * ts_ms says when the snapshot ran, not when the row changed.  May be
     * NULL. */
    void (*on_change)(void *opaque, const char *table, int64_t ts_ms);
    void *on_change_opaque;
    /* When *interrupt becomes non-zero while a batch is decoded or applied
     * (a signal handler may set it), the batch is given up within
     * milliseconds: nothing of it is written, its positions are not stored,
     * and -EINTR is returned.  The store must then be closed (and may be
     * reopened) before the next apply.  Keep it set once set.  May be NULL. */
    volatile int *interrupt;
    /* Set to 1 while a batch's write runs, the one step an interrupt does
     * not cut short (most of a second for a batch of 1,000,000 records), and
     * to 0 after it.  A caller that ends the process on a signal may end it
     * at once then, as a crash would: the write-ahead log holds the batch
     * whole or not at all, and the next open finds which.  May be NULL. */
    volatile int *writing;
} cdc_apply_options_t;

/* What one call did.  Counters are also accumulated in the replica (see
 * cdc_stats_t). */
typedef struct cdc_apply_result {
    uint64_t read;          /* records given */
    uint64_t applied;       /* rows written (newer than stored) */
    uint64_t stale;         /* skipped: older than the stored version, or than a newer event
                             * of its key in the same batch (so batching moves counts between
                             * applied and stale, never the replica) */
    uint64_t duplicate;     /* skipped: same version as stored */
    uint64_t tombstones;    /* Kafka tombstones (null value): no change, counted */
    uint64_t dead_letters;  /* bad records, into the dead-letter store ... */
    uint64_t dead_letters_known; /* ... of which were there already (the same record, position
                                  * and reason, met before): not written again */
    uint64_t other;         /* records that change no row: heartbeats, transaction metadata,
                             * logical decoding messages (op m), schema-change events */
} cdc_apply_result_t;

/* Applies a batch of records atomically: decodes them, reduces the batch to
 * the newest event per key by ordering version (never by arrival), reads the
 * stored versions, writes only strictly newer ones, and records the source
 * positions (topic, partition, highest offset) in the same RocksDB write
 * batch, so data and positions commit together.  Undecodable records go to
 * the dead-letter store with their reason and position and the rest of the
 * batch is applied; with CDC_ON_ERROR_STOP nothing of the batch is written
 * but the dead letter, and CDC_ESTOPPED is returned.
 * opts and res may be NULL.  Errors: CDC_EIO, CDC_ESTOPPED.
 * Thread-safety: one apply at a time per store. */
CDC_API int cdc_store_apply(cdc_store_t *st, const cdc_record_t *recs, size_t n,
                            const cdc_apply_options_t *opts, cdc_apply_result_t *res,
                            cdc_error_t *err);

/* The highest applied offset of (topic, partition) in *offset, or -1 when none.
 * Consumers resume from *offset + 1.  Errors: CDC_EIO. */
CDC_API int cdc_store_position(cdc_store_t *st, const char *topic, int32_t partition,
                               int64_t *offset, cdc_error_t *err);

/* The same, with the fingerprint of the record applied at that offset
 * (cdc_record_fingerprint of its key and value) in *fp, or 0 when not known
 * (none stored, a position written before fingerprints, or read from a
 * file).  A consumer that fetches the record at *offset again and finds
 * another fingerprint is reading another topic of the same name: one
 * deleted and created again.  Errors: CDC_EINVAL for NULL arguments. */
CDC_API int cdc_store_position_fingerprint(cdc_store_t *st, const char *topic, int32_t partition,
                                           int64_t *offset, uint64_t *fp, cdc_error_t *err);

/* A record's fingerprint: FNV-1a of its key and value bytes (NULL: absent),
 * never 0. */
CDC_API uint64_t cdc_record_fingerprint(const char *key, size_t key_len, const char *value, size_t value_len);

/* Forgets the position of (topic, partition) and its epoch marks (a synced
 * write): for a topic deleted and created again, whose offsets restart and
 * name other records.  The rows stay.  Errors: CDC_EINVAL, CDC_EIO. */
CDC_API int cdc_store_position_forget(cdc_store_t *st, const char *topic, int32_t partition, cdc_error_t *err);

/* One stored source position: the highest applied offset of a topic
 * partition. */
typedef struct cdc_position {
    char *topic;
    int32_t partition;
    int64_t offset;
} cdc_position_t;

/* Every stored position, sorted by (topic, partition), in *out (*n of them).
 * Ownership: the caller frees *out with cdc_positions_free().
 * Errors: CDC_EINVAL for NULL arguments. */
CDC_API int cdc_store_positions(cdc_store_t *st, cdc_position_t **out, size_t *n, cdc_error_t *err);
/* Frees what cdc_store_positions() returned; accepts NULL. */
CDC_API void cdc_positions_free(cdc_position_t *p, size_t n);

/* ---- Applying input files ---- */

typedef struct cdc_file_options {
    size_t batch_size;              /* records per batch; 0: 10,000 */
    size_t batch_bytes;             /* and at most this much record text per batch (a batch of
                                     * one record may hold more); 0: 64 MiB */
    cdc_apply_options_t apply;
    /* Called after every batch with the running totals and the bytes read so
     * far; may be NULL. */
    void (*progress)(void *opaque, const cdc_apply_result_t *total, uint64_t bytes_read);
    void *progress_opaque;
    volatile int *stop;             /* when it becomes non-zero, stop: the batch being decoded
                                     * or applied is given up (nothing of it written,
                                     * -EINTR), as apply.interrupt, which it sets when NULL */
} cdc_file_options_t;

/* Applies a file of Kafka records, one JSON object per line, in batches:
 * either the format `kcat -C -J` prints ({"topic", "partition", "offset",
 * "key", "payload"}, payload null for a tombstone, key and payload as JSON
 * strings) or bare Debezium envelopes (without positions; the key is then
 * taken from the row, see ingest/decode.c).  path "-" reads standard input.
 * Blank lines are skipped.  A line that is not a JSON object is dead-lettered
 * with its file and line number.  total may be NULL; otherwise it is filled
 * on every return (all zeros when the file could not be opened).
 * Errors: -errno when the file cannot be read, those of cdc_store_apply();
 * -EINTR when *opts->stop was set before the end of the file (the batches
 * applied before it stay, err says up to which line). */
CDC_API int cdc_store_apply_file(cdc_store_t *st, const char *path, const cdc_file_options_t *opts,
                                 cdc_apply_result_t *total, cdc_error_t *err);

/* ---- Reading rows ---- */

/* One row as stored.  Every pointer borrows from the iterator (or from the
 * cdc_row_t filled by cdc_store_get) and stays valid until the next call on
 * it, or until it is closed/freed. */
typedef struct cdc_row {
    const char *key;          /* encoded primary key (order-preserving bytes) */
    size_t key_len;
    const char *key_json;     /* the key as a JSON object text, NUL-terminated */
    int deleted;              /* 1: a tombstone (only with include_deleted) */
    int from_snapshot;        /* 1: last written by a snapshot read */
    uint64_t epoch;           /* ordering version: snapshot epoch */
    uint32_t kind;            /* ordering version: 0 gap-delete, 1 snapshot read, 2 streamed */
    uint64_t lsn;             /* ordering version: the event's source LSN */
    int64_t ts_ms;            /* source.ts_ms of the event */
    size_t ncols;             /* number of columns, in the table's column order (those the
                               * source has now, as cdc_store_columns) */
    const char *const *names; /* column names */
    const char *const *values;/* values in PostgreSQL text form; NULL = SQL NULL */
    const size_t *lens;       /* byte lengths of values */
    uint32_t unknown;         /* columns read as NULL because the row was written before the
                               * column appeared at the source and no schema gave its default */
} cdc_row_t;

typedef struct cdc_iter cdc_iter_t;

typedef struct cdc_iter_options {
    const char *lower_json;  /* NULL or a key as JSON ({"order_id": 10} or [10]); inclusive */
    const char *upper_json;  /* NULL or a key as JSON; exclusive */
    int include_deleted;     /* 1: also tombstones */
    int no_key_json;         /* 1: row->key_json is NULL (a bulk reader saves formatting
                              * every row's key; cdc_iter_key_json gives it on demand) */
} cdc_iter_options_t;

/* Opens an iterator over table in primary-key order (integers numerically,
 * text bytewise, i.e. ORDER BY pk COLLATE "C"), over the non-deleted view
 * unless include_deleted.  It reads a consistent snapshot of the replica.
 * Errors: CDC_ENOTFOUND when the table is unknown, CDC_EINVAL for a bad bound.
 * Ownership: release with cdc_iter_close(). */
CDC_API int cdc_iter_open(cdc_store_t *st, const char *table, const cdc_iter_options_t *opts,
                          cdc_iter_t **out, cdc_error_t *err);
/* 1 and fills *row when there is a row, 0 at the end, negative on error. */
CDC_API int cdc_iter_next(cdc_iter_t *it, cdc_row_t *row, cdc_error_t *err);
/* The key of the row the last cdc_iter_next returned, as a JSON object
 * text (row->key_json's), valid until the next call on it; NULL when there
 * is no such row or its stored key does not decode. */
CDC_API const char *cdc_iter_key_json(cdc_iter_t *it);
CDC_API void cdc_iter_close(cdc_iter_t *it);

/* The column names of table in source order: the columns the newest applied
 * change carried (a column dropped at the source is left out, here and in
 * rows).  Ownership: *names borrows from the store until the next apply or
 * close. */
CDC_API int cdc_store_columns(cdc_store_t *st, const char *table, const char *const **names,
                              size_t *n, cdc_error_t *err);

/* The types of the columns cdc_store_columns() gives, one descriptor per
 * column (NULL when no type is known: envelopes without schemas and no
 * cdc_store_set_column_type()).  A descriptor is the Kafka Connect type of
 * the column's newest schema, with "/" and the logical type's name when
 * there is one: "int16", "int32", "int64", "float32", "float64", "boolean",
 * "string", "bytes", "string/io.debezium.data.Uuid",
 * "string/io.debezium.data.Json", "int32/io.debezium.time.Date",
 * "int64/io.debezium.time.MicroTimestamp",
 * "string/io.debezium.time.ZonedTimestamp", ...; a NUMERIC is "decimal:S:P"
 * (scale S, precision P; "decimal:S" when the precision is not known) or
 * "decimal" when unconstrained.  The typed exports (Parquet, Delta) map them
 * to their types.  Ownership: borrowed until the next call, apply or close. */
CDC_API int cdc_store_column_types(cdc_store_t *st, const char *table, const char *const **types,
                                   size_t *n, cdc_error_t *err);

/* Why table is stopped, in *reason (borrowed until the next apply or close),
 * or NULL when it is not.  A table stops when a column's type changes at
 * the source in a way that can change the values of rows the source
 * rewrote without change events (NUMERIC to a smaller scale, text to an
 * integer, a float to another width...); its later events are then
 * dead-lettered, naming the reason.  Errors: CDC_ENOTFOUND. */
CDC_API int cdc_store_table_stopped(cdc_store_t *st, const char *table, const char **reason,
                                    cdc_error_t *err);

/* Applies a stopped table's events again from now on, taking the refused
 * type as the column's (changes older than the refusal, applied again,
 * change no type).  Its rows are as the replica held them: re-read
 * the table after this call (a snapshot or an incremental snapshot; reads
 * that arrive while the table is stopped are dead letters too).  Errors: CDC_ENOTFOUND,
 * CDC_EINVAL (opened read-only), CDC_EIO. */
CDC_API int cdc_store_resume_table(cdc_store_t *st, const char *table, cdc_error_t *err);

/* The columns of table that appeared at the source after rows the replica
 * holds were written, with no schema to give their default: rows written
 * before read them as NULL, a value the replica does not know
 * (cdc_row_t.unknown).  Ownership: as cdc_store_tables(). */
CDC_API int cdc_store_unknown_columns(cdc_store_t *st, const char *table, char ***names, size_t *n,
                                      cdc_error_t *err);

/* The tables of the replica.  Ownership: the array and strings are the
 * caller's; free with cdc_strings_free(). */
CDC_API int cdc_store_tables(cdc_store_t *st, char ***names, size_t *n, cdc_error_t *err);
CDC_API void cdc_strings_free(char **names, size_t n);

/* A point read.  key_json is the key as a JSON object ({"order_id": 2}) or a
 * JSON array of the key's values in key order ([2]).  Tombstones are
 * returned too (row->deleted = 1).  Ownership: *row borrows from a buffer
 * owned by the store, valid until the next cdc_store_get or apply.
 * Errors: CDC_ENOTFOUND, CDC_EINVAL for a key that does not parse. */
CDC_API int cdc_store_get(cdc_store_t *st, const char *table, const char *key_json,
                          cdc_row_t *row, cdc_error_t *err);

/* Called by cdc_store_get_keys() for the i-th key's row; row and what it
 * points to are valid during the call.  A nonzero return stops the reads
 * and is returned. */
typedef int (*cdc_get_fn)(void *opaque, size_t i, const cdc_row_t *row);

/* Point reads of n encoded keys (cdc_row_t.key) of table, batched: fn is
 * called, in the order of keys, for each key that has a row (tombstones
 * too: row->deleted; row->key_json is NULL); keys without one are skipped.
 * Sorted keys read fastest.  Errors: CDC_ENOTFOUND for an unknown table,
 * CDC_EIO, CDC_ECORRUPT, or what fn returned. */
CDC_API int cdc_store_get_keys(cdc_store_t *st, const char *table, const char *const *keys, const size_t *lens,
                               size_t n, cdc_get_fn fn, void *opaque, cdc_error_t *err);

/* ---- Changed key ranges ---- */

/* A point of a replica's history: the line (each writable open starts a
 * new one, with a random id; 0 is no line) and the stamp of the newest
 * batch applied on it (microseconds of the wall clock, or one more than the
 * previous stamp when the clock is behind). */
typedef struct cdc_change_point {
    uint64_t history;
    uint64_t stamp;
} cdc_change_point_t;

/* The replica's current point, to be given to cdc_store_changed_since()
 * later.  Read it before reading the rows it is to describe: a change made
 * after it has a higher stamp, so one that races the read is reported again
 * next time rather than lost.  Thread-safety: as the store. */
CDC_API int cdc_store_change_point(cdc_store_t *st, cdc_change_point_t *out, cdc_error_t *err);

/* One key range [lower, upper) of encoded keys (cdc_row_t.key); upper_len
 * 0: no upper bound.  Borrowed during the call.  A nonzero return stops the
 * listing, and cdc_store_changed_since() returns it. */
typedef int (*cdc_range_fn)(void *opaque, const char *lower, size_t lower_len, const char *upper,
                            size_t upper_len);

/* The key ranges of table whose rows may have changed since the point
 * since, without reading rows: fn is called for each, in key order, and
 * *all is 0; every row outside them is as it was at since.  The ranges are
 * coarse (store/changes.c: a range of 65,536 integers, or the keys sharing
 * their first two text bytes).  *all is 1 (and fn is not called) when the
 * ranges are not known: since is from another replica, or from a copy of
 * this one that went its own way, or this replica rolled back past it
 * (a damaged write-ahead log), or a build without change tracking applied
 * batches to the table since, or a change touched every row (a column's
 * default changed); the caller then compares the rows themselves.  Changes
 * of the column set or of column types are not reported: compare
 * cdc_store_columns() and cdc_store_column_types().
 * Errors: CDC_ENOTFOUND for an unknown table, CDC_EIO, CDC_ECORRUPT, or
 * what fn returned.  Thread-safety: as the store. */
CDC_API int cdc_store_changed_since(cdc_store_t *st, const char *table, const cdc_change_point_t *since,
                                    cdc_range_fn fn, void *opaque, int *all, cdc_error_t *err);

/* One encoded key (cdc_row_t.key), borrowed during the call.  A nonzero
 * return stops the listing, and cdc_store_changed_keys() returns it. */
typedef int (*cdc_key_fn)(void *opaque, const char *key, size_t len);

/* The keys of table whose rows may have changed since the point since,
 * from the replica's key journal (store/changes.c), without reading rows:
 * fn is called for each, in the order the batches wrote them (not sorted;
 * a key changed by several batches comes several times), and *all is 0;
 * every other row is as it was at since.  *all is 1 (fn not called) when
 * cdc_store_changed_since() would say so, and when the journal does not
 * reach back to since: it starts at the first writable open of a build
 * with it, again after a build without it applied batches, and again when
 * it holds more keys than the table has rows (at least 2^20).
 * Errors: as cdc_store_changed_since().  Thread-safety: as the store. */
CDC_API int cdc_store_changed_keys(cdc_store_t *st, const char *table, const cdc_change_point_t *since,
                                   cdc_key_fn fn, void *opaque, int *all, cdc_error_t *err);

/* ---- Export ---- */

enum { CDC_FORMAT_CSV = 0, CDC_FORMAT_NDJSON = 1, CDC_FORMAT_PARQUET = 2 };

/* Page compression of Parquet files (and of a Delta table's data files). */
enum { CDC_COMPRESS_ZSTD = 0, CDC_COMPRESS_SNAPPY = 1, CDC_COMPRESS_NONE = 2 };

typedef struct cdc_export_options {
    int format;              /* CDC_FORMAT_CSV (default), CDC_FORMAT_NDJSON or CDC_FORMAT_PARQUET */
    int header;              /* CSV: 1 writes the header line */
    int meta;                /* 1: add __lsn and __deleted, include deleted rows */
    const char *lower_json;  /* key bounds as in cdc_iter_options_t; NULL = open */
    const char *upper_json;
    /* Called every 100,000 rows with the count so far; may be NULL. */
    void (*progress)(void *opaque, uint64_t rows, uint64_t bytes);
    void *progress_opaque;
    /* When not NULL, receives the number of rows written with a column whose
     * value is unknown (cdc_row_t.unknown: written as NULL). */
    uint64_t *unknown_rows;
    /* Parquet and Delta: rows per row group (0: 1,000,000; a row group also
     * ends at 128 MiB of values) and the pages' compression. */
    uint64_t row_group_rows;
    int compression;         /* CDC_COMPRESS_ZSTD (default), _SNAPPY or _NONE */
    /* Delta: rows per data file (0: the table's, recorded by each commit, or
     * 250,000 for a new table).  A file is one key range,
     * the unit a refresh rewrites: after 1% of a table changed in one key
     * range a refresh rewrites a file or two (query/delta.c). */
    uint64_t file_rows;
    /* Delta: 1 refreshes the table by deletion vectors: the rows of changed
     * keys are marked deleted in their files and written to a file of
     * changed rows, rather than their files rewritten (query/delta.c,
     * "Deletion vectors"): after 1% of the rows changed at random keys, a
     * refresh writes that 1%, not the table.  The table then needs readers
     * of the "deletionVectors" feature (Spark, deltalake's QueryBuilder;
     * not deltalake's to_pyarrow_table), and keeps it: later
     * exports into it use vectors without being asked. */
    int deletion_vectors;
} cdc_export_options_t;

/* Writes the view of table in key order to file descriptor fd: CSV that
 * PostgreSQL's COPY ... FROM ... (FORMAT csv, HEADER) loads back unchanged
 * (NULL is an unquoted empty field, the empty string is ""), one JSON
 * object per line (values as strings, NULL as null), or a Parquet file
 * typed by the columns' types (cdc_store_column_types; query/parquet.c lists
 * the mapping; columns of no known type are strings).  *rows (may be NULL)
 * receives the number of rows written.
 * Errors: CDC_ENOTFOUND for an unknown table, CDC_EINVAL for an unknown format,
 * -errno on a write error. */
CDC_API int cdc_export_fd(cdc_store_t *st, const char *table, const cdc_export_options_t *opts,
                          int fd, uint64_t *rows, cdc_error_t *err);

/* What cdc_export_delta() did. */
typedef struct cdc_delta_result {
    int64_t version;         /* the table version it committed (-1: none, nothing changed) */
    int created;             /* 1: the table was new (version 0) */
    int schema_changed;      /* 1: the columns or their types changed: every file was rewritten */
    uint64_t rows;           /* rows in the table version */
    uint64_t rows_written;   /* rows written to new files */
    uint64_t bytes_written;  /* bytes of new files */
    uint64_t files_added, files_removed, files_kept;
    uint64_t ranges_changed; /* key ranges whose rows changed since the previous version */
    uint64_t ranges_checked;
    int tracked;             /* 1: the changed ranges came from the replica's change tracking
                              * (cdc_store_changed_since), unchanged ones were not read; 0: a
                              * scan read and hashed every row (or everything was written) */
    uint64_t rows_read;      /* rows read from the replica: those written, and the scan's */
    int deletion_vectors;    /* 1: this version was a refresh by deletion vectors: */
    uint64_t keys_changed;   /* ... the keys changed since the previous version (key journal), */
    uint64_t rows_marked;    /* ... the old rows it marked deleted, */
    uint64_t files_marked;   /* ... in this many files (added again with their new vectors) */
    const char *rewrite_reason; /* a table with deletion vectors written anew: why (static text) */
} cdc_delta_result_t;

/* Exports the view of table as a Delta Lake table in directory dir (made
 * when missing): Parquet data files, one per key range, and the commits in
 * dir/_delta_log.  The first export writes version 0.  An export into a
 * table it wrote before commits the next version, which rewrites only the
 * key ranges whose rows changed since, removing their files and adding new
 * ones in one commit.  Each commit records the replica's point
 * (cdc_store_change_point), and the next export asks the replica which key
 * ranges changed since (cdc_store_changed_since): files of other ranges are
 * kept unread.  When the replica cannot say (a table written by another
 * replica or an older build...), a scan hashes every row and compares each
 * range with the hash its file records (res->tracked 0).  Readers keep
 * reading the previous version until the commit is in place, and older
 * versions stay readable (time travel): no file is deleted.  A change of the columns or
 * their types rewrites every file under the new schema.  When nothing
 * changed, nothing is committed (res->version -1).  With
 * opts->deletion_vectors (or into a table that has them) a refresh marks
 * the old rows of the changed keys deleted instead and writes only those
 * keys' rows (res->deletion_vectors).  Uses opts->file_rows,
 * row_group_rows, compression, deletion_vectors, progress (opts may be
 * NULL).
 * Errors: CDC_ENOTFOUND for an unknown table, CDC_EINVAL when dir holds a
 * table another writer changed (commits cdcstore did not write) or a
 * concurrent export committed the same version, -errno on a file error. */
CDC_API int cdc_export_delta(cdc_store_t *st, const char *table, const char *dir,
                             const cdc_export_options_t *opts, cdc_delta_result_t *res, cdc_error_t *err);

/* ---- Counters ---- */

/* The counters, in one list: XX(field, SLOT, slot, description).  It makes
 * cdc_stats_t's fields (in this order, which is also the order `cdcstore
 * stats` prints them in, under the field's name, and their --json keys) and
 * the library's internal slots.  slot is the counter's place in the record
 * each replica keeps per table: a new counter takes the next free slot,
 * and no slot is ever reused or moved, so that replicas written before it
 * read as they were (the counter reads 0 there).  Two slots are not counts
 * but high-water marks, kept with max() on apply and taken as the largest
 * of the tables' in the totals: newest_ts_ms and newest_lsn, the source
 * commit time and LSN of the newest change applied to the table (the
 * replica's age behind the source is the current time minus newest_ts_ms;
 * cdcstore status prints it). */
#define CDC_STATS_MAP(XX)                                                                              \
    XX(events_read, READ, 0, "records that reached the decoder")                                        \
    XX(applied, APPLIED, 1, "writes that changed the replica")                                          \
    XX(stale, STALE, 2, "older than the stored version or a newer event of the batch")                   \
    XX(duplicate, DUPLICATE, 3, "the same version as stored (or as a newer one in the batch)")          \
    XX(tombstones, TOMBSTONES, 4, "Kafka tombstones (null values)")                                     \
    XX(deletes, DELETES, 5, "delete events applied")                                                    \
    XX(resurrections_blocked, RESURRECTIONS, 6, "non-delete events refused: a newer delete is stored or in the batch") \
    XX(placeholders_kept, PLACEHOLDERS, 7, "unchanged TOASTed columns whose stored value was kept")     \
    XX(placeholders_unresolved, UNRESOLVED, 13, "unchanged TOASTed columns with no stored value")       \
    XX(gap_deletes, GAP_DELETES, 8, "rows deleted: a completed snapshot did not contain them")          \
    XX(other_events, OTHER, 12, "events that carry no row change (op m)")                               \
    XX(dead_letters, DEAD, 9, "bad records, to the dead-letter store (stored once, counted each time)") \
    XX(rows_live, LIVE, 10, "non-deleted rows (maintained on apply)")                                   \
    XX(rows_deleted, DELETED, 11, "tombstones kept")                                                    \
    XX(tombstones_purged, PURGED, 14, "tombstones removed below the purge horizon")                    \
    XX(wal_rollbacks, ROLLBACKS, 15, "opens that rolled back to the last consistent point (damaged log)") \
    XX(newest_ts_ms, NEWEST_TS, 16, "source ts_ms of the newest applied change (a maximum, not a count)") \
    XX(newest_lsn, NEWEST_LSN, 17, "source LSN of the newest applied change (a maximum, not a count)")  \
    XX(repartitioned_keys, REPARTITIONED, 18, "keys that arrived on another Kafka partition than before")

typedef struct cdc_stats {
#define CDC__STATS_FIELD(field, SLOT, slot, what) uint64_t field;
    CDC_STATS_MAP(CDC__STATS_FIELD)
#undef CDC__STATS_FIELD
} cdc_stats_t;

/* Counters for one table, or the totals when table is NULL (sums, but the
 * largest newest_ts_ms and newest_lsn of the tables).
 * Errors: CDC_ENOTFOUND for an unknown table. */
CDC_API int cdc_store_stats(cdc_store_t *st, const char *table, cdc_stats_t *out, cdc_error_t *err);

/* ---- Tombstone garbage collection ---- */

/* How cdc_store_purge() chooses each table's replay horizon, and whether it
 * waits for the removal.  Give horizon_lsn, older_than_ms or both (each
 * table then takes the lower of the two horizons). */
typedef struct cdc_gc_options {
    /* > 0: the replay horizon, a source LSN that no event still to be
     * delivered is older than (see cdc_store_gc). */
    uint64_t horizon_lsn;
    /* > 0: derive each table's horizon from its rows: 1 + the highest LSN of
     * a tombstone whose source ts_ms is older than now_ms - older_than_ms,
     * capped at the lowest LSN of a row the table holds from at or after
     * that time.  The promise is a window's: no change committed before it
     * is still to be delivered.  store/gc.c's head says why a time cannot
     * simply become an LSN.  Costs one read of the table (no write). */
    int64_t older_than_ms;
    int64_t now_ms;          /* the time older_than_ms counts back from; 0: the wall clock */
    /* 1: record and publish the horizons only: RocksDB's own compactions
     * remove the tombstones as they rewrite the files, and nothing waits
     * (sst_bytes_* stay 0).  0: compact the tables' rows now. */
    int no_compact;
    /* 1: never let a horizon cover a snapshot the replica has not seen
     * complete (its reads may still come, and would be refused): the horizon
     * is lowered below that snapshot's epoch.  Always on with older_than_ms. */
    int hold_snapshots;
} cdc_gc_options_t;

/* What cdc_store_purge() did. */
typedef struct cdc_gc_result {
    uint64_t purged;           /* keys removed from the tables named (tombstones and rows a
                                * floor hid) since their counters were last written: the
                                * compaction's removals and any background compaction's */
    uint64_t tables;           /* tables whose horizon rose */
    uint64_t horizon_lsn;      /* the highest horizon LSN recorded, 0 when none rose */
    uint64_t sst_bytes_before; /* the SST bytes of the families compacted, before (memtables
                                * flushed) and after the compaction: what it gave back */
    uint64_t sst_bytes_after;
} cdc_gc_result_t;

/* Purges the tombstones of table (all tables when NULL) whose version lies
 * below the table's replay horizon, and the rows a version floor (a
 * completed re-snapshot, a truncate) already hides.  The horizon only
 * rises; it is chosen by opts (cdc_gc_options_t) and written to the replica
 * (a synced write) before anything is removed: from then on an event older
 * than it, for a key the replica does not hold, is stale, so a purged delete
 * still blocks a late older update.  The removal itself is done by a
 * RocksDB compaction filter: the call compacts the tables' rows (unless
 * opts->no_compact), and the filter keeps removing what falls below the
 * horizon in every later compaction, with no scan of its own.  The
 * tombstones_purged counter counts the removals (store/gc.c: "Counting"
 * says when it may read low).  res may be NULL.
 * Errors: CDC_EINVAL (no horizon given, replica opened read-only),
 * CDC_ENOTFOUND for an unknown table, CDC_ECORRUPT, CDC_EIO.
 * Thread-safety: not while an apply runs on the same store; RocksDB's
 * compactions may run meanwhile (the filter reads only what this call
 * published). */
CDC_API int cdc_store_purge(cdc_store_t *st, const char *table, const cdc_gc_options_t *opts,
                            cdc_gc_result_t *res, cdc_error_t *err);

/* cdc_store_purge() with horizon_lsn only, compacting now.  Choose a horizon
 * that no event still to be delivered can be older than: e.g. the source
 * LSN of the oldest record the topic's retention still keeps, or of the
 * position the replica has applied when no replay from an earlier position
 * is planned.  *purged (may be NULL) receives the number of keys removed.
 * horizon_lsn 0 does nothing.
 * Errors: CDC_ENOTFOUND for an unknown table, CDC_EIO.
 * Thread-safety: not while an apply runs on the same store. */
CDC_API int cdc_store_gc(cdc_store_t *st, const char *table, uint64_t horizon_lsn, uint64_t *purged,
                         cdc_error_t *err);

/* ---- Dead letters ---- */

typedef struct cdc_dead_letter {
    uint64_t id;
    const char *reason;     /* a sentence */
    const char *topic;      /* "" when none */
    int32_t partition;
    int64_t offset;         /* -1 when none */
    const char *source;     /* input name, "" when none */
    int64_t line;
    const char *record;     /* the record as received (truncated to 64 KiB) */
    size_t record_len;
} cdc_dead_letter_t;

typedef struct cdc_dlq_iter cdc_dlq_iter_t;
CDC_API int cdc_dlq_open(cdc_store_t *st, cdc_dlq_iter_t **out, cdc_error_t *err);
/* 1 with *dl filled (borrowed until the next call), 0 at the end. */
CDC_API int cdc_dlq_next(cdc_dlq_iter_t *it, cdc_dead_letter_t *dl, cdc_error_t *err);
CDC_API void cdc_dlq_close(cdc_dlq_iter_t *it);

/* ---- Kafka ingest ---- */

/* A Kafka consumer that feeds a replica: it reads Debezium topics in
 * micro-batches bounded by count and time and applies each batch with
 * cdc_store_apply(), so data and positions commit together.
 *
 * Positions live in the replica, not in the consumer group: on every
 * partition assignment the consumer starts each partition at the replica's
 * stored offset + 1 (cdc_store_position), or at the beginning when the
 * replica has none.  The group's committed offsets are written (async) after
 * each batch only so that lag can be monitored with Kafka's tools; they are
 * never read back.  Before a partition is revoked the pending batch is
 * applied, so no record of a revoked partition is applied after the revoke;
 * a batch applied twice (after a crash) changes nothing, by the version guard.
 * Several consumers in one group, each with its own replica, split the
 * partitions; a partition that moves to a replica without a position for it
 * is read there from the beginning. */
typedef struct cdc_kafka cdc_kafka_t;

/* One librdkafka property (https://github.com/confluentinc/librdkafka/blob/
 * master/CONFIGURATION.md). */
typedef struct cdc_kafka_property {
    const char *name;
    const char *value;
} cdc_kafka_property_t;

/* Running figures of a consumer.  Latencies are end to end: the wall clock
 * just after the batch committed minus the change event's source ts_ms, per
 * streamed change event (snapshot reads, tombstones and dead letters have
 * none: a snapshot read's ts_ms is when the snapshot ran, and counting it
 * would put the snapshot's duration into the percentiles). */
typedef struct cdc_kafka_stats {
    uint64_t batches;          /* batches applied */
    cdc_apply_result_t total;  /* the sum of the batches' results */
    int64_t lag;               /* records between the applied positions and the high
                                * watermarks of the assigned partitions, as last
                                * fetched; -1 when unknown */
    uint64_t latency_samples;
    int64_t latency_p50_ms;    /* over the run so far (about 1.5% precision); -1 without samples */
    int64_t latency_p99_ms;
    int64_t latency_max_ms;
} cdc_kafka_stats_t;

/* What the per-batch callback receives.  Pointers are valid during the call. */
typedef struct cdc_kafka_batch {
    size_t records;                   /* Kafka records in the batch */
    const cdc_apply_result_t *result; /* what cdc_store_apply did with them */
    double apply_ms;                  /* time spent in cdc_store_apply */
    const int64_t *latency_ms;        /* one end-to-end latency per streamed change event */
    size_t nlatency;
    const cdc_kafka_stats_t *run;     /* running figures, this batch included */
    /* The last stage of that latency, one per record that has a Kafka
     * timestamp: the same instant minus the record's timestamp, which is
     * the broker's append time on a topic with
     * message.timestamp.type=LogAppendTime, else the producer's create time. */
    const int64_t *kafka_latency_ms;
    size_t nkafka_latency;
} cdc_kafka_batch_t;

typedef struct cdc_kafka_options {
    const char *brokers;              /* bootstrap.servers; NULL: from the properties */
    const char *const *topics;        /* topics to subscribe to (at least one, or topic_regex) */
    size_t ntopics;
    /* NULL, or a POSIX extended regular expression: every topic it matches
     * from the start of the name is consumed too (a leading "^" is implied;
     * end it with "$" to match whole names): shop\.public\. takes a whole
     * schema.  It is librdkafka's "^" pattern subscription.  Topics created
     * later are picked up at the next metadata refresh
     * (topic.metadata.refresh.interval.ms, librdkafka's default 5 minutes).
     * Errors: CDC_EINVAL when it does not compile. */
    const char *topic_regex;
    const char *group;                /* group.id; NULL: from the properties (required) */
    size_t batch_max_events;          /* records per batch; 0: 10,000 */
    int batch_max_ms;                 /* a batch is applied at most this long after its first
                                       * record arrived; 0: 20 */
    int from_beginning;               /* 1: start each partition at its first offset in this
                                       * run, whatever the replica stored (a replay) */
    const char *config_file;          /* NULL, or librdkafka properties as key=value lines
                                       * ('#' starts a comment line) */
    const cdc_kafka_property_t *properties; /* more properties, set after the file's */
    size_t nproperties;
    cdc_apply_options_t apply;        /* passed to cdc_store_apply (on_change is chained) */
    cdc_log_fn log;                   /* NULL: no logging */
    void *log_opaque;
    volatile int *stop;               /* when it becomes non-zero, cdc_kafka_run applies the
                                       * pending batch and returns 0 */
    void (*on_batch)(void *opaque, const cdc_kafka_batch_t *batch); /* may be NULL */
    void *on_batch_opaque;
    /* > 0: the automatic purge.  Every purge_after_ms / 16 (at least every
     * second) after a batch, each table's newest applied LSN is noted; once
     * a note is purge_after_ms old, the table's purge horizon rises to it
     * (never over a snapshot the replica has not seen complete) and RocksDB's
     * own compactions remove the tombstones below it (cdc_store_purge with
     * no_compact).  The promise it rests on: every change reaches the
     * replica within purge_after_ms of its transaction's first write
     * (Debezium's delay, the longest transaction, the consumer's lag and
     * stops included); then no change still to come is older than what the
     * replica had applied purge_after_ms ago.  0 (the default): off. */
    int64_t purge_after_ms;
} cdc_kafka_options_t;

/* Creates the consumer for store st and subscribes to the topics.  The
 * properties enable.auto.commit, enable.auto.offset.store and
 * enable.partition.eof are forced off.  A partition the replica holds no
 * position for starts at its first record; when the record after a stored
 * position is gone (retention deleted it unread), the run stops with
 * CDC_EKAFKA naming the partition, since going on would skip changes
 * (auto.offset.reset defaults to error; set it to earliest to accept that).  Property values whose names contain "password", "secret",
 * "sasl.jaas" or "ssl.key" never appear in messages or logs.
 * Ownership: st stays the caller's and must outlive *out; the options are
 * copied.  Release with cdc_kafka_close().
 * Errors: CDC_EINVAL for a bad option or property (err names the property, or
 * the file and line), -errno when config_file cannot be read, CDC_EKAFKA. */
CDC_API int cdc_kafka_open(cdc_store_t *st, const cdc_kafka_options_t *opts, cdc_kafka_t **out,
                           cdc_error_t *err);

/* Consumes and applies batches until *opts->stop becomes non-zero (then the
 * pending batch is applied, the offsets committed, and 0 returned) or a fatal
 * error (the records consumed so far are applied first when the store is
 * sound).  Broker outages are not errors: librdkafka reconnects with backoff
 * and the errors are logged at a decreasing rate.  Log callback and per-batch
 * callback run in the calling thread.  May be called again after it returned 0.
 * Errors: CDC_EKAFKA for fatal client errors (librdkafka's fatal errors,
 * authentication and authorisation failures), those of cdc_store_apply()
 * (CDC_ESTOPPED with CDC_ON_ERROR_STOP, CDC_EIO).
 * Thread-safety: one thread at a time per consumer, and none other on st. */
CDC_API int cdc_kafka_run(cdc_kafka_t *k, cdc_error_t *err);

/* The running figures.  Thread-safety: from the thread that runs k. */
CDC_API void cdc_kafka_stats(const cdc_kafka_t *k, cdc_kafka_stats_t *out);

/* Asks the brokers for the low and high watermark of (topic, partition):
 * the offset of its oldest retained record and the offset the next record
 * will get, so the records a replica at stored offset P has yet to apply
 * are high - (P + 1).  Uses a short-lived client of its own (no group), and
 * waits at most timeout_ms (0: 5000) for the answer.  librdkafka's own
 * logs are discarded.
 * Errors: CDC_EINVAL for NULL arguments, CDC_EKAFKA when the brokers do not
 * answer in time or refuse (err names the topic partition and the reason:
 * an unknown topic or partition too). */
CDC_API int cdc_kafka_watermarks(const char *brokers, const char *topic, int32_t partition, int timeout_ms,
                                 int64_t *low, int64_t *high, cdc_error_t *err);

/* As cdc_kafka_watermarks, for brokers that take more than an address (TLS,
 * SASL): the client's librdkafka properties are read from config_file
 * (NULL: none) as cdc_kafka_open reads it, then brokers (NULL: the file's
 * bootstrap.servers) is set over them.  The client joins no group, so the
 * file an ingest uses serves as it is (its consumer properties are unused).
 * Errors: as cdc_kafka_watermarks; CDC_EINVAL naming FILE:LINE for a line
 * that is not key=value or a property librdkafka refuses (a secret's value
 * never shown), or when neither gives bootstrap servers; -errno when the
 * file cannot be opened. */
CDC_API int cdc_kafka_watermarks_config(const char *brokers, const char *config_file, const char *topic,
                                        int32_t partition, int timeout_ms, int64_t *low, int64_t *high,
                                        cdc_error_t *err);

/* One configuration value of each of n topics as the brokers hold it
 * (Kafka's DescribeConfigs, one request for all: the topic's own setting
 * or the broker default it takes), e.g. "cleanup.policy".  values[i] is
 * malloc'd (free()), NULL when the brokers name no such setting; on an
 * error every values[i] is NULL.  Brokers and config_file as for
 * cdc_kafka_watermarks_config; waits at most timeout_ms (0: 5000) plus a
 * second.  Errors: CDC_EINVAL, CDC_EKAFKA (err names the topic and the
 * reason: an unknown topic, an authorization failure, no answer in time). */
CDC_API int cdc_kafka_topic_config(const char *brokers, const char *config_file, const char *const *topics,
                                   size_t n, const char *name, int timeout_ms, char **values, cdc_error_t *err);

/* Applies nothing more (records consumed but not applied are read again by
 * the next consumer, from the replica's positions), waits for the group
 * offset commits in flight, leaves the group (rd_kafka_consumer_close) and
 * frees k; accepts NULL.  The store may be closed afterwards. */
CDC_API void cdc_kafka_close(cdc_kafka_t *k);

/* ---- Range hashes and reconciliation ---- */

/* Row hash algorithms (see cdc_row_hash). */
enum {
    CDC_HASH_MD5 = 0,     /* first 64 bits of md5: PostgreSQL's md5() */
    CDC_HASH_LOOKUP3 = 1  /* PostgreSQL's hashtextextended(t, 0), Jenkins lookup3: several
                           * times cheaper for the server; little-endian servers */
};

/* How cdc_hash_ranges() and cdc_hash_sql() cut a table into key ranges.
 * Zero everywhere: one range, the whole table, hashed with md5. */
typedef struct cdc_hash_options {
    size_t ranges;          /* > 1: about this many ranges of equal row counts, cut at
                             * quantiles of the replica's keys */
    int64_t range_width;    /* > 0: ranges [k*W, (k+1)*W) of a single integer key
                             * (only the non-empty ones); wins over ranges */
    int algorithm;          /* CDC_HASH_MD5 (default) or CDC_HASH_LOOKUP3 */
} cdc_hash_options_t;

/* One key range: its bounds, its number of rows and their hash. */
typedef struct cdc_range_hash {
    int64_t index;          /* k for width ranges, 0, 1, ... for quantile ranges */
    char *lower_json;       /* inclusive lower bound as a JSON array ([10]); NULL = open */
    char *upper_json;       /* exclusive upper bound; NULL = open */
    uint64_t rows;
    uint64_t hash;          /* sum modulo 2^64 of the rows' cdc_row_hash() */
} cdc_range_hash_t;

/* The hash of one row.  The row is encoded over its columns in the table's
 * column order as the byte lengths of the values, "-1" for NULL, joined by
 * ",", then ";", then the values one after the other, each in PostgreSQL
 * text form: (1, 'a,b', NULL, '') -> "1,3,-1,0;1a,b".  The lengths make it
 * unambiguous: NULL differs from '', and no value can borrow bytes from its
 * neighbour.  It holds the key columns, so a value moved to another row
 * changes both rows' hashes.  The hash is the first 64 bits (big-endian) of
 * md5 of the encoding, or lookup3 (CDC_HASH_LOOKUP3).  In SQL:
 *   enc = concat_ws(',', coalesce(octet_length(c1::text), -1), ...) || ';' || concat(c1::text, ...)
 *   ('x' || substr(md5(enc), 1, 16))::bit(64)::bigint  or  hashtextextended(enc, 0)
 * (booleans as t/f; see cdc_hash_sql).  Thread-safety: safe. */
CDC_API uint64_t cdc_row_hash(const cdc_row_t *row, int algorithm);

/* Cuts the non-deleted view of table into key ranges (see
 * cdc_hash_options_t; opts may be NULL) and gives each range's row count and
 * hash, the sum modulo 2^64 of its row hashes: independent of row order, and
 * computable by PostgreSQL over the source table with cdc_hash_sql().
 * Ownership: *out is the caller's; free with cdc_range_hashes_free().
 * Errors: CDC_ENOTFOUND for an unknown table, CDC_EINVAL for width ranges
 * over a key that is not a single integer. */
CDC_API int cdc_hash_ranges(cdc_store_t *st, const char *table, const cdc_hash_options_t *opts,
                            cdc_range_hash_t **out, size_t *n, cdc_error_t *err);
CDC_API void cdc_range_hashes_free(cdc_range_hash_t *r, size_t n);

/* One SQL query that computes over the source table (source_table, or table
 * when NULL; "schema.table") the same (range, rows, hash) as
 * cdc_hash_ranges() with the same options, the hash as 16 hex digits.  It
 * uses built-in functions only.  Run it with DateStyle=ISO, TimeZone=UTC and
 * extra_float_digits=1; column types are not known here, so values are
 * rendered by their output functions (format('%s', c)); a timestamptz is then
 * not in the ISO form Debezium sends ("...T08:30:00.000000Z") and differs
 * (cdc_reconcile reads the types and matches it).  The key columns and
 * their kinds are taken from the replica's first row.
 * Ownership: *sql is malloc'd, the caller frees it with free().
 * Errors: CDC_ENOTFOUND for an unknown or empty table. */
CDC_API int cdc_hash_sql(cdc_store_t *st, const char *table, const char *source_table,
                         const cdc_hash_options_t *opts, char **sql, cdc_error_t *err);

/* The kinds of difference reconciliation reports, seen from the replica. */
enum {
    CDC_DIFF_MISSING = 1,   /* the row is in the source, not in the replica */
    CDC_DIFF_EXTRA = 2,     /* the row is in the replica, not in the source */
    CDC_DIFF_DIFFERENT = 3  /* the row is in both, with different values */
};

/* One difference.  Every pointer borrows from the reconciler for the
 * duration of the on_diff call. */
typedef struct cdc_diff {
    int kind;                     /* CDC_DIFF_* */
    const char *key_json;         /* the key as a JSON object; NULL for a column difference */
    const char *column;           /* a column found on one side only (key_json NULL), else NULL */
    size_t ncols;                 /* the columns compared, in the replica's order */
    const char *const *names;
    const char *const *replica;   /* replica values, NULL = SQL NULL; the array is NULL when missing */
    const size_t *replica_lens;
    const char *const *source;    /* source values; the array is NULL when extra */
    const size_t *source_lens;
    uint64_t replica_lsn;         /* version LSN of the replica row (0 when missing) */
    int unsettled;                /* 1: the row still changed between every recheck */
} cdc_diff_t;

typedef struct cdc_reconcile_options {
    const char *source_table;     /* "schema.table" at the source; NULL: the replica's name */
    size_t ranges;                /* first-level ranges; 0: about one per 8,192 rows */
    int64_t range_width;          /* > 0: first-level width ranges (single integer key) */
    uint64_t threshold;           /* ranges with at most this many rows are compared row by
                                   * row, larger ones are split again; 0: 16,384 */
    size_t factor;                /* sub-ranges per split; 0: 32 */
    int algorithm;                /* row hash: CDC_HASH_MD5 (default) or CDC_HASH_LOOKUP3 */
    int rechecks;                 /* rechecks of a suspected difference; 0: 5 */
    int recheck_ms;               /* wait before the first recheck, doubled each time; 0: 500 */
    void (*on_diff)(void *opaque, const cdc_diff_t *d); /* may be NULL */
    void *opaque;
    cdc_log_fn log;               /* progress and decisions; may be NULL */
    void *log_opaque;
} cdc_reconcile_options_t;

typedef struct cdc_reconcile_result {
    uint64_t start_lsn;           /* the source's WAL position when the comparison started */
    uint64_t replica_rows, source_rows; /* rows in the compared view at that point */
    uint64_t ranges_compared, ranges_differing;
    uint64_t rows_fetched;        /* rows read back from both sides to find the keys */
    uint64_t transient;           /* suspected differences gone on a recheck (live load) */
    uint64_t missing, extra, different, columns; /* differences: reported through on_diff, except
                                   * past the first 1,000,000 rows, which are only counted */
    double seconds;
} cdc_reconcile_result_t;

/* Compares table in the replica directory dir with its PostgreSQL source
 * (conninfo: a libpq connection string or URI).  The row counts and hashes
 * (see cdc_row_hash) of the whole table, then (when they differ, or at once
 * with ranges or range_width) of key ranges, are computed on both sides, the source
 * by one SQL query inside a REPEATABLE READ transaction that starts at the
 * recorded WAL position start_lsn; ranges that differ are split again
 * (factor sub-ranges cut at the replica's quantiles) until they hold at most
 * threshold rows, whose rows are then read from both sides and compared by
 * key.  Each suspected difference is rechecked before it is reported: both
 * sides are read again after recheck_ms (then twice as long, ... up to
 * rechecks times), the replica reopened so that rows applied since by a
 * running writer are seen.  A difference gone on a recheck was in flight and
 * is not reported; one seen unchanged on two successive reads (neither the
 * replica row's version nor the source row moved in between) is reported;
 * one that kept changing on every read is reported with unsettled = 1.  So a
 * live load whose changes reach the replica within the recheck window raises
 * no alarm, and a real difference, which does not move, is always reported.
 * Values are compared in PostgreSQL text form; the session sets
 * DateStyle=ISO, MDY, TimeZone=UTC, extra_float_digits=1, bytea_output=hex.
 * The replica is opened read-only (no lock: a writer may run).
 * Returns 0 when the comparison ran (res->missing + extra + different +
 * columns tells whether the tables differ); res may be NULL.
 * Credentials come from conninfo, PGPASSFILE or the PG* environment; no
 * message ever shows a password.
 * Errors: CDC_ESOURCE (connection, query, or a table without a primary key),
 * CDC_ENOTFOUND for a table unknown to the replica, those of cdc_store_open(). */
CDC_API int cdc_reconcile(const char *dir, const char *table, const char *conninfo,
                          const cdc_reconcile_options_t *opts, cdc_reconcile_result_t *res,
                          cdc_error_t *err);

/* ---- The pipeline's health: source and Kafka Connect ---- */

/* What `cdcstore doctor` asks the source database and Kafka Connect.  Both
 * calls only read: the source's catalog views (pg_replication_slots,
 * pg_publication_tables, the settings) and Connect's GET endpoints. */

/* One logical replication slot, as pg_replication_slots shows it. */
typedef struct cdc_source_slot {
    char *name, *plugin, *database;
    char *wal_status;          /* reserved, extended, unreserved or lost; "" when NULL */
    int active;                /* 1: a walsender (the connector) is attached */
    int64_t active_pid;        /* its process id, 0 when inactive */
    int64_t retained_bytes;    /* pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn): the WAL
                                * the slot keeps on disk; -1 when restart_lsn is NULL */
    int64_t unconfirmed_bytes; /* the same from confirmed_flush_lsn: WAL the consumer has not
                                * confirmed yet; -1 when NULL */
    int64_t safe_wal_size;     /* bytes that may still be written before the slot is lost;
                                * -1 when NULL (max_slot_wal_keep_size unlimited) */
} cdc_source_slot_t;

/* One publication and the tables it covers ("schema.table"; a FOR ALL
 * TABLES publication lists every table it covers now). */
typedef struct cdc_source_publication {
    char *name;
    int all_tables;
    char **tables;
    size_t ntables;
} cdc_source_publication_t;

typedef struct cdc_source_status {
    char *who;                 /* the connection string without its password, for messages */
    char *database;            /* current_database() */
    char *server_version;      /* current_setting('server_version'): "15.10 (Debian ...)" */
    int64_t max_slot_wal_keep_size; /* bytes; -1 unlimited */
    cdc_source_slot_t *slots;  /* ordered by name */
    size_t nslots;
    cdc_source_publication_t *publications; /* the database's, ordered by name */
    size_t npublications;
} cdc_source_status_t;

/* Connects to the source (conninfo: a libpq connection string or URI; the
 * connection gives up after timeout_ms, 0: 5000, unless conninfo sets
 * connect_timeout) and reads its replication state: the slot named slot, or
 * with slot NULL every logical slot of the connected database, and every
 * publication of the database.  A slot that does not exist is simply absent
 * from the list.  Any role may call it: the views it reads are public.
 * Ownership: *out is the caller's; free with cdc_source_status_free().
 * Errors: CDC_EINVAL for NULL arguments, CDC_ESOURCE (cannot connect, a query
 * failed; err names the source without its password and says why). */
CDC_API int cdc_source_status(const char *conninfo, const char *slot, int timeout_ms, cdc_source_status_t **out,
                              cdc_error_t *err);
CDC_API void cdc_source_status_free(cdc_source_status_t *s);

/* One task of a Kafka Connect connector. */
typedef struct cdc_connect_task {
    int id;
    char *state;               /* RUNNING, PAUSED, FAILED, UNASSIGNED, RESTARTING */
    char *worker_id;
    char *trace;               /* the failure's stack trace, NULL when none */
} cdc_connect_task_t;

/* A connector as Kafka Connect's REST API shows it: GET /connectors/NAME
 * (its configuration) and GET /connectors/NAME/status (its state and its
 * tasks'). */
typedef struct cdc_connect_status {
    char *name;
    char *state;               /* RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, RESTARTING */
    char *worker_id;
    char *trace;               /* NULL when none */
    cdc_connect_task_t *tasks;
    size_t ntasks;
    char **config_keys, **config_values; /* the stored configuration (secrets stay as
                                          * Connect stores them, e.g. ${file:...}) */
    size_t nconfig;
} cdc_connect_status_t;

/* Asks Kafka Connect at url ("http://host:8083") for connector's
 * configuration and status, waiting at most timeout_ms (0: 5000) for each
 * request.  Ownership: *out is the caller's; free with
 * cdc_connect_status_free().  Errors: CDC_EINVAL for NULL arguments,
 * CDC_ENOTFOUND when Connect has no such connector, CDC_ECONNECT when
 * Connect does not answer, answers with another HTTP error or with a body
 * that is not the JSON expected (err names the URL and the reason). */
CDC_API int cdc_connect_status(const char *url, const char *connector, int timeout_ms, cdc_connect_status_t **out,
                               cdc_error_t *err);
/* The value of a configuration key of s, NULL when it is not set.
 * Ownership: borrowed from s, valid until cdc_connect_status_free(s). */
CDC_API const char *cdc_connect_config(const cdc_connect_status_t *s, const char *key);
CDC_API void cdc_connect_status_free(cdc_connect_status_t *s);

#ifdef __cplusplus
}
#endif
#endif /* CDCSTORE_H */
