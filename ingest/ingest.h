/*
 * ingest.h: what the files of ingest/ share.  Sources (the file reader,
 * filesrc.c; the Kafka consumer, kafka.c) read records; the decoder
 * (decode.c) turns one Debezium record into a cdc__event; batch.c decodes a
 * batch of records in parallel and hands it to the store
 * (cdc__store_apply_events, store/internal.h).  connect.c asks Kafka
 * Connect's REST API about a connector (libcurl), whose JSON answers the
 * decoder reads (cJSON stays in decode.c).  Nothing below ingest/ sees
 * these declarations.
 */
#ifndef CDC_INGEST_H
#define CDC_INGEST_H

#include "internal.h"

/* ---- Decoder (decode.c) ---- */

/* The type declared for a column whose JSON value does not say it: a
 * CDC__COL_* code or a NUMERIC scale (store/internal.h). */
typedef int (*cdc__scale_fn)(void *opaque, const char *table, const char *column);

/* The record limit when cdc_apply_options_t.max_record_bytes is 0. */
#define CDC__DEFAULT_MAX_RECORD ((size_t)16 << 20)

/* Decodes one record.  Returns 0 and fills *ev (action UPSERT, DELETE,
 * FLOOR or NOOP); or 1 for a Kafka tombstone (nothing to apply, ev
 * untouched); or CDC_EDECODE with err naming the problem (the caller
 * dead-letters the record with its position).  An incremental snapshot read
 * decodes with snapshot CDC__SNAP_INCREMENTAL and lsn = commit, the commit
 * position from source.sequence (an error when it has none). */
int cdc__decode_record(const cdc_record_t *rec, cdc__scale_fn scale, void *scale_opaque,
                       cdc__event *ev, cdc_error_t *err);

/* Maps a Debezium topic "prefix.schema.table" to "schema.table" in out
 * (size outsz).  0 ok, -1 when the topic does not have three parts. */
int cdc__table_from_topic(const char *topic, char *out, size_t outsz);

/* ---- Kafka Connect's answers (decode.c, for connect.c) ---- */

/* Reads the body of GET /connectors/NAME (its "config" object) / of GET
 * /connectors/NAME/status (the connector's and its tasks' states) into
 * out, which may already hold the other half.  0, or CDC_ECONNECT when the
 * body is not the JSON object expected (err says what is missing). */
int cdc__connect_read_config(const char *body, size_t n, cdc_connect_status_t *out, cdc_error_t *err);
int cdc__connect_read_status(const char *body, size_t n, cdc_connect_status_t *out, cdc_error_t *err);
/* The "message" of Connect's error body ({"error_code":404,"message":...}),
 * else the body's first 200 bytes, into msg. */
void cdc__connect_read_error(const char *body, size_t n, char *msg, size_t size);

/* ---- Batches (batch.c) ---- */

/* Decodes n records into n events, every record accounted for: a record
 * that does not decode becomes a CDC__ACT_DEAD event with its reason, a
 * tombstone a CDC__ACT_TOMBSTONE event.  With threads > 1 the records are
 * split between two threads.  Decoding only reads the store's settings, so
 * it may run beside an apply of another batch (the file source's pipeline
 * does).  Ownership: the array is freed by cdc__events_free or consumed by
 * cdc__store_apply_events. */
cdc__event *cdc__decode_batch(const cdc_store_t *st, const cdc_record_t *recs, size_t n,
                              const cdc_apply_options_t *opts, int threads);
void cdc__events_free(cdc__event *evs, size_t n);
/* Turns ev (decoded from r, or not) into a dead letter with reason why,
 * counted against the table ev names, else the one r's topic names. */
void cdc__event_dead(cdc__event *ev, const cdc_record_t *r, const char *why);

/* A decoding thread for sources that apply batch after batch (batch.c):
 * cdc__decoder_submit starts decoding recs[0..n) on it and returns; the
 * caller applies the batch before meanwhile, then cdc__decoder_finish
 * decodes what is left on the caller's thread too and returns the n events
 * (as cdc__decode_batch would).  recs must stay valid until then.  fill, when
 * not NULL, fills recs[from..to) first, on whichever thread decodes them
 * (every record is filled, an interrupted batch's too, before finish
 * returns); until then the records are not read.  One batch at a time:
 * submit only when none is pending.  cdc__decoder_new returns NULL when the
 * thread cannot start (decode with cdc__decode_batch then);
 * cdc__decoder_free frees a pending batch's events.  opts (max_record_bytes,
 * interrupt) is read at new. */
typedef struct cdc__decoder cdc__decoder;
typedef void (*cdc__decoder_fill_fn)(void *opaque, cdc_record_t *recs, size_t from, size_t to);
cdc__decoder *cdc__decoder_new(const cdc_store_t *st, const cdc_apply_options_t *opts);
void cdc__decoder_submit(cdc__decoder *d, cdc_record_t *recs, size_t n, cdc__decoder_fill_fn fill, void *opaque);
cdc__event *cdc__decoder_finish(cdc__decoder *d);
void cdc__decoder_free(cdc__decoder *d);

/* Adds the counts of r to *to (sources that apply batch after batch). */
void cdc__result_add(cdc_apply_result_t *to, const cdc_apply_result_t *r);

#endif
