/*
 * batch.c: a batch of records becomes a batch of decoded events, which the
 * store applies.  Decoding is the costly part of an apply (JSON parsing), so
 * a batch is split between two threads; the store's apply then runs on the
 * caller's thread.  Every record yields exactly one event, including those
 * that do not decode (dead letters) and tombstones, so the store can count
 * each record and advance the source position past it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest.h"

#define PARALLEL_MIN 256

typedef struct decode_job {
    const cdc_store_t *st;
    const cdc_record_t *recs;
    cdc__event *evs;
    size_t from, to;
    size_t max_bytes;
    volatile int *interrupt;
} decode_job;

static int column_type(void *opaque, const char *table, const char *column)
{
    return cdc__store_column_type(opaque, table, column);
}

/* The table a record without a decoded event counts against: the one its
 * topic names, or NULL. */
static char *table_of_topic(const cdc_record_t *r)
{
    if (!r->topic) return NULL;
    size_t n = strlen(r->topic) + 1;
    char *name = cdc__malloc(n);
    if (cdc__table_from_topic(r->topic, name, n) == 0 && strlen(name) <= CDC__TABLE_NAME_MAX &&
        cdc__utf8_valid(name, strlen(name)))
        return name;
    free(name);
    return NULL;
}

void cdc__event_dead(cdc__event *ev, const cdc_record_t *r, const char *why)
{
    char *table = ev->table; /* counted against the table it names, else its topic's */
    ev->table = NULL;
    cdc__event_free(ev);
    memset(ev, 0, sizeof *ev);
    ev->action = CDC__ACT_DEAD;
    ev->reason = cdc__strdup(why);
    ev->table = table ? table : table_of_topic(r);
}

static void decode_one(const decode_job *j, const cdc_record_t *r, cdc__event *ev)
{
    cdc_error_t e;
    if (r->offset >= 0 && (r->partition < 0 || r->offset == INT64_MAX)) {
        char b[160];
        snprintf(b, sizeof b, "position out of range: partition %d, offset %lld", (int)r->partition,
                 (long long)r->offset);
        cdc__event_dead(ev, r, b);
        return;
    }
    if (r->value_len + r->key_len > j->max_bytes) {
        char b[256];
        snprintf(b, sizeof b, "record of %zu bytes exceeds the limit of %zu bytes", r->value_len + r->key_len,
                 j->max_bytes);
        cdc__event_dead(ev, r, b);
        return;
    }
    e.msg[0] = 0;
    int rc = cdc__decode_record(r, column_type, (void *)j->st, ev, &e);
    if (rc == 1) {
        memset(ev, 0, sizeof *ev);
        ev->action = CDC__ACT_TOMBSTONE;
        ev->table = table_of_topic(r);
    } else if (rc) {
        cdc__event_dead(ev, r, e.msg[0] ? e.msg : "record does not decode");
    } else if (ev->action == CDC__ACT_NOOP && !ev->table) {
        ev->table = table_of_topic(r);
    }
}

static void *decode_range(void *arg)
{
    decode_job *j = arg;
    /* An interrupted batch is never applied (the store looks at the same
     * flag first), so its remaining records are left undecoded. */
    for (size_t i = j->from; i < j->to; i++) {
        if (i % 1024 == 0 && j->interrupt && *j->interrupt) break;
        decode_one(j, &j->recs[i], &j->evs[i]);
    }
    return NULL;
}

cdc__event *cdc__decode_batch(const cdc_store_t *st, const cdc_record_t *recs, size_t n,
                              const cdc_apply_options_t *opts, int threads)
{
    size_t max_bytes = opts && opts->max_record_bytes ? opts->max_record_bytes : CDC__DEFAULT_MAX_RECORD;
    cdc__event *evs = cdc__calloc(n ? n : 1, sizeof *evs);
    volatile int *intr = opts ? opts->interrupt : NULL;
    decode_job jobs[2] = {{st, recs, evs, 0, n, max_bytes, intr}, {st, recs, evs, n, n, max_bytes, intr}};
    pthread_t th;
    int threaded = 0;
    if (threads > 1 && n >= PARALLEL_MIN) {
        jobs[0].to = n / 2;
        jobs[1].from = n / 2;
        threaded = pthread_create(&th, NULL, decode_range, &jobs[1]) == 0;
        if (!threaded) jobs[0].to = n;
    }
    decode_range(&jobs[0]);
    if (threaded) pthread_join(th, NULL);
    return evs;
}

/* ---- The decoder: a batch decoded beside the apply of the one before ----
 *
 * A source that applies batch after batch (the Kafka consumer) hands batch
 * k+1 to the decoder's thread and applies batch k meanwhile; then its own
 * thread takes part in what is left of batch k+1 (cdc__decoder_finish).
 * The records are dealt out in chunks of DECODER_CHUNK from one atomic
 * counter, so whichever thread is free takes the next chunk: when the apply
 * is done first, both cores decode; when the decoding is done first, the
 * apply never waits for it.  (The file source has its own pipeline, a
 * reader thread that also reads and scans the file, filesrc.c.)
 * Every record still yields one event, in its place; events are written by
 * one thread each, and finish returns after both threads are out of the
 * batch (the mutex orders their writes before the caller's reads). */
#define DECODER_CHUNK 64

struct cdc__decoder {
    decode_job job;     /* the batch: recs, evs, n in job.to */
    cdc_record_t *fill_recs;    /* job.recs, to be filled chunk by chunk by fill */
    cdc__decoder_fill_fn fill;
    void *fill_opaque;
    atomic_size_t next; /* first record of the next chunk to take */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int submitted;      /* a batch waits for the worker */
    int busy;           /* the worker is in a batch */
    int quit;
};

static void decode_chunks(cdc__decoder *d)
{
    const decode_job *j = &d->job;
    for (;;) {
        size_t from = atomic_fetch_add_explicit(&d->next, DECODER_CHUNK, memory_order_relaxed);
        if (from >= j->to) return;
        size_t to = from + DECODER_CHUNK < j->to ? from + DECODER_CHUNK : j->to;
        if (d->fill) d->fill(d->fill_opaque, d->fill_recs, from, to);
        /* An interrupted batch is never applied (decode_range): the rest of
         * its records are left undecoded. */
        if (j->interrupt && *j->interrupt) continue;
        for (size_t i = from; i < to; i++) decode_one(j, &j->recs[i], &j->evs[i]);
    }
}

static void *decoder_main(void *arg)
{
    cdc__decoder *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->submitted && !d->quit) pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit) break;
        d->submitted = 0;
        d->busy = 1;
        pthread_mutex_unlock(&d->mu);
        decode_chunks(d);
        pthread_mutex_lock(&d->mu);
        d->busy = 0;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

cdc__decoder *cdc__decoder_new(const cdc_store_t *st, const cdc_apply_options_t *opts)
{
    cdc__decoder *d = cdc__calloc(1, sizeof *d);
    d->job.st = st;
    d->job.max_bytes = opts && opts->max_record_bytes ? opts->max_record_bytes : CDC__DEFAULT_MAX_RECORD;
    d->job.interrupt = opts ? opts->interrupt : NULL;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->th, NULL, decoder_main, d) != 0) {
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
        free(d);
        return NULL;
    }
    return d;
}

void cdc__decoder_submit(cdc__decoder *d, cdc_record_t *recs, size_t n, cdc__decoder_fill_fn fill, void *opaque)
{
    pthread_mutex_lock(&d->mu);
    while (d->busy) pthread_cond_wait(&d->cv, &d->mu); /* out of the batch before (finish saw to it) */
    d->job.recs = recs;
    d->fill_recs = recs;
    d->fill = fill;
    d->fill_opaque = opaque;
    d->job.evs = cdc__calloc(n ? n : 1, sizeof *d->job.evs);
    d->job.from = 0;
    d->job.to = n;
    atomic_store_explicit(&d->next, 0, memory_order_relaxed);
    d->submitted = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

cdc__event *cdc__decoder_finish(cdc__decoder *d)
{
    if (!d->job.evs) return NULL; /* none pending */
    decode_chunks(d);
    pthread_mutex_lock(&d->mu);
    /* The worker may not have woken for this batch yet: it would find no
     * chunk left, so it is not waited for. */
    d->submitted = 0;
    while (d->busy) pthread_cond_wait(&d->cv, &d->mu);
    cdc__event *evs = d->job.evs;
    d->job.evs = NULL;
    d->job.recs = NULL;
    d->fill_recs = NULL;
    d->fill = NULL;
    pthread_mutex_unlock(&d->mu);
    return evs;
}

void cdc__decoder_free(cdc__decoder *d)
{
    if (!d) return;
    if (d->job.evs) cdc__events_free(cdc__decoder_finish(d), d->job.to);
    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->th, NULL);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
}

void cdc__events_free(cdc__event *evs, size_t n)
{
    if (!evs) return;
    for (size_t i = 0; i < n; i++) cdc__event_free(&evs[i]);
    free(evs);
}

void cdc__result_add(cdc_apply_result_t *to, const cdc_apply_result_t *r)
{
    to->read += r->read;
    to->applied += r->applied;
    to->stale += r->stale;
    to->duplicate += r->duplicate;
    to->tombstones += r->tombstones;
    to->dead_letters += r->dead_letters;
    to->dead_letters_known += r->dead_letters_known;
    to->other += r->other;
}

int cdc_store_apply(cdc_store_t *st, const cdc_record_t *recs, size_t n, const cdc_apply_options_t *opts,
                    cdc_apply_result_t *res, cdc_error_t *err)
{
    if (!st || (n && !recs)) {
        if (res) memset(res, 0, sizeof *res);
        return cdc__err(err, CDC_EINVAL, "cdc_store_apply: bad arguments");
    }
    cdc__event *evs = n ? cdc__decode_batch(st, recs, n, opts, 2) : NULL;
    return cdc__store_apply_events(st, recs, evs, n, opts, res, err);
}
