/*
 * parquet.h: the Parquet file writer (parquet.c), for the export formats
 * that write Parquet (a plain Parquet file, the data files of a Delta
 * table).  The writer turns rows of values in PostgreSQL's text form into a
 * Parquet file, typed by each column's Debezium type descriptor; it never
 * writes to a file itself: it appends the file's bytes to a caller's buffer,
 * which the caller writes out and empties between calls.  Not API (cdc__
 * prefix).  A writer is used by one thread at a time.
 */
#ifndef CDC_PARQUET_H
#define CDC_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

typedef struct cdc__pq cdc__pq;

/* Page compression codecs. */
enum { CDC__PQ_ZSTD = 0, CDC__PQ_SNAPPY = 1, CDC__PQ_NONE = 2 };

typedef struct cdc__pq_options {
    uint64_t row_group_rows; /* rows per row group; 0: 1,000,000 (a row group also ends at
                                128 MiB of buffered values) */
    int compression;         /* CDC__PQ_ZSTD (0, the default), CDC__PQ_SNAPPY, CDC__PQ_NONE */
    int zstd_level;          /* 0: 1 (zstd's fastest level that still compresses well) */
    int continuation;        /* 1: these bytes continue another writer's file: no leading
                                "PAR1"; end with cdc__pq_flush, then cdc__pq_adopt into that
                                writer, whose footer then lists these row groups too */
} cdc__pq_options;

/* A writer for ncols columns named names[i] with the type descriptors
 * types[i] (ingest/decode.c's: "int64", "decimal:2", "decimal:2:10",
 * "int32/io.debezium.time.Date", ...; NULL or an unknown one: text).
 * o may be NULL (defaults).  Ownership: copies names and types; free *out
 * with cdc__pq_free.  Errors: CDC_EINVAL for a bad option (err says which). */
int cdc__pq_open(const char *const *names, const char *const *types, size_t ncols, const cdc__pq_options *o,
                 cdc__pq **out, cdc_error_t *err);

/* Adds one row: values[i] (NULL: SQL NULL) of lens[i] bytes, each in the
 * text form PostgreSQL prints for the column's type (need not end in NUL).
 * Appends the bytes of the file that are complete to out: "PAR1" on the
 * first call, a whole row group when this row completes one.  offset is the
 * number of bytes of the file written before out->p[0] (the file offsets
 * in the footer are computed from it).  Errors: CDC_EINVAL when a value does
 * not parse as its column's type or is out of its range (err names the
 * column and the value); the row is then not added, nothing is appended, and
 * the writer stays usable. */
int cdc__pq_row(cdc__pq *pq, const char *const *values, const size_t *lens, cdc__buf *out, uint64_t offset,
                cdc_error_t *err);

/* Ends the file: appends the last row group and the footer (FileMetaData,
 * its length, "PAR1"), and "PAR1" first when no row came.  offset as for
 * cdc__pq_row.  Call once; after it only cdc__pq_stats_json, cdc__pq_rows
 * and cdc__pq_free.  Errors: CDC_EINVAL when called twice. */
int cdc__pq_end(cdc__pq *pq, cdc__buf *out, uint64_t offset, cdc_error_t *err);

/* Writes the row group being built (if any) to out, as cdc__pq_row does
 * when one is full: every row added is then in out.  For a writer that hands
 * its row groups to another (cdc__pq_adopt).  Errors: CDC_EINVAL after the end. */
int cdc__pq_flush(cdc__pq *pq, cdc__buf *out, uint64_t offset, cdc_error_t *err);

/* Makes pq's footer also list the row groups from wrote (flushed, none
 * being built), which were placed shift bytes after from's offset 0 in
 * pq's file: how two writers encode the two halves of one file at once.
 * Their statistics and row counts join pq's.  Errors: CDC_EINVAL when the
 * columns differ, from has rows not flushed, or pq has ended. */
int cdc__pq_adopt(cdc__pq *pq, const cdc__pq *from, uint64_t shift, cdc_error_t *err);

/* The rows added so far. */
uint64_t cdc__pq_rows(const cdc__pq *pq);

/* Appends the file's statistics as Delta's "stats" JSON object:
 * {"numRecords":N,"minValues":{..},"maxValues":{..},"nullCount":{..}}.
 * nullCount has every column; minValues/maxValues the columns whose type
 * Delta gives a JSON form and that have a non-NULL value (parquet.c lists
 * which).  Valid for the rows added so far. */
void cdc__pq_stats_json(const cdc__pq *pq, cdc__buf *out);

/* Frees the writer; accepts NULL. */
void cdc__pq_free(cdc__pq *pq);

#endif
