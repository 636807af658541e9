/*
 * batch.c: a batch of records becomes a batch of decoded events, which the
 * store applies.  Decoding is the costly part of an apply (JSON parsing), so
 * a batch is split between two threads; the store's apply then runs on the
 * caller's thread.  Every record yields exactly one event, including those
 * that do not decode (dead letters) and tombstones, so the store can count
 * each record and advance the source position past it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest.h"

#define PARALLEL_MIN 256
#define DEFAULT_MAX_RECORD (16u << 20)

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
    size_t max_bytes = opts && opts->max_record_bytes ? opts->max_record_bytes : DEFAULT_MAX_RECORD;
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
