/*
 * kafka.c: the Kafka source.  A librdkafka consumer that reads Debezium
 * topics in micro-batches and applies each batch through the store's guarded
 * apply (cdc__store_apply_events, as cdc_store_apply() and the file source
 * do), decoding the next full batch meanwhile (flush_full).  This is the
 * only file that includes librdkafka.
 *
 * Where consumption resumes is the replica's business, not the group's: the
 * positions are written by the apply in the same RocksDB write as the data,
 * and every assignment starts each partition at the stored offset + 1 (or
 * at the beginning when the replica has none).  So a crash between the
 * write and anything else replays at most the batches that were in flight
 * (the one applied and the one decoded), and that replay changes nothing
 * because the version guard skips it.  The group's committed offsets are
 * written asynchronously after each batch so that kafka-consumer-groups.sh
 * and friends show the lag; they are never read.
 *
 * Rebalances: the pending batches are applied before an assignment changes,
 * whatever the change, so no record of a revoked partition is applied after
 * the revoke returned, and nothing consumed is thrown away.  Messages of a
 * partition that is not (or no longer) assigned are dropped on arrival as a
 * second line of defence; librdkafka already discards fetches of an outdated
 * assignment.
 *
 * Every librdkafka callback (rebalance, errors, logs through log.queue,
 * commit results) is served from rd_kafka_consumer_poll() and
 * rd_kafka_consume_batch_queue() in the thread that runs cdc_kafka_run(), so
 * the store is only ever touched by that thread (the decoder's thread,
 * flush_full, only decodes).
 * Broker outages are left to librdkafka's reconnect backoff; their errors
 * are logged with a per-kind interval that doubles from 1 s to 60 s while
 * they persist.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "ingest.h"

#define DEFAULT_BATCH_EVENTS 10000
/* A batch waits at most this long for more records after its first one.
 * Under a trickle (1,000 changes/s) this wait is the whole of the last
 * stage of the end-to-end latency; under a backlog a batch fills to
 * DEFAULT_BATCH_EVENTS long before it (README, "Latency"). */
#define DEFAULT_BATCH_MS 20
#define DECODER_MIN 256        /* a batch this large is decoded on two threads */
#define TAKE_MAX 1024          /* records taken from the consumer's queue at once */
#define POLL_MS 100            /* longest wait before the stop flag is looked at again */
#define INFO_EVERY_MS 5000     /* per-batch info lines at most this often */
#define THROTTLE_FIRST_MS 1000
#define THROTTLE_MAX_MS 60000
#define NTHROTTLE 32

/* ---- Latency histogram ---- */

/* Values below 1024 ms have their own bucket; above, each power of two is
 * split into 64 buckets (relative precision about 1.5%).  Fixed size, so a
 * consumer that runs for months keeps constant memory. */
#define H_EXACT 1024
#define H_SUB 64
#define H_BUCKETS (H_EXACT + (63 - 10) * H_SUB)

static size_t h_bucket(int64_t v)
{
    if (v < 0) v = 0;
    if (v < H_EXACT) return (size_t)v;
    int msb = 63 - __builtin_clzll((unsigned long long)v);
    size_t b = H_EXACT + (size_t)(msb - 10) * H_SUB + (size_t)(((uint64_t)v >> (msb - 6)) & (H_SUB - 1));
    return b < H_BUCKETS ? b : H_BUCKETS - 1;
}

static int64_t h_value(size_t b)
{
    if (b < H_EXACT) return (int64_t)b;
    size_t j = b - H_EXACT;
    int msb = (int)(j / H_SUB) + 10;
    uint64_t sub = j % H_SUB;
    return (int64_t)((H_SUB + sub) << (msb - 6));
}

/* ---- The consumer ---- */

/* A partition this consumer has been assigned at some point in the run. */
typedef struct kpart {
    char *topic;
    int32_t partition;
    int assigned;
    int64_t run_next;   /* next offset after what this run applied; -1: nothing yet */
    int64_t began_at;   /* the beginning resolved to this offset at the assignment (-1: not) */
    int64_t verify_at;  /* the stored position, fetched again first to check the topic (-1: not) */
    uint64_t verify_fp; /* the fingerprint the record there must have */
    int commit_due;     /* applied to since the group's offset was last committed */
    int lag_due;        /* in the batch just applied: its watermarks to be looked up (estimate_lag) */
    int64_t lo, hi;     /* its watermarks as last looked up; hi -1: not yet */
} kpart;

typedef struct throttle {
    char key[64];
    int64_t next_ms;    /* monotonic time before which the kind is not logged again */
    int64_t interval_ms;
    uint64_t suppressed;
    int64_t used_ms;
} throttle;

/* A batch of messages and the records made of them. */
typedef struct kbatch {
    rd_kafka_message_t **msgs;
    size_t n, cap;
    cdc_record_t *recs;
    size_t recs_cap;
} kbatch;

/* What an applied batch leaves: its messages and decoded events, freed on
 * the decoder's thread when it starts on the next batch (fill_chunk). */
typedef struct kgarbage {
    rd_kafka_message_t **msgs;
    size_t n, cap;
    cdc__event *evs; /* n of them, one per message */
} kgarbage;

struct cdc_kafka {
    cdc_store_t *st;
    rd_kafka_t *rk;
    char **topics;
    size_t ntopics;
    size_t batch_max;
    int batch_ms;
    int from_beginning;
    cdc_apply_options_t apply;
    void (*user_on_change)(void *opaque, const char *table, int64_t ts_ms);
    void *user_on_change_opaque;
    cdc_log_fn log;
    void *log_opaque;
    volatile int *stop;
    void (*on_batch)(void *opaque, const cdc_kafka_batch_t *batch);
    void *on_batch_opaque;
    int64_t purge_after_ms;

    /* The batch being filled (cur) and the full one being decoded on the
     * decoder's thread (fl, empty when none): messages stay owned until
     * applied.  See flush_full. */
    kbatch bt[2];
    kbatch *cur, *fl;
    kbatch *filling;        /* the batch the decoder's job fills (fill_chunk) */
    kgarbage gc;            /* the last applied batch's leavings */
    kgarbage gc_dec;        /* handed to the decoder's job, freed by its first chunk */
    cdc__decoder *dec;
    rd_kafka_queue_t *q; /* the consumer's queue */
    int64_t deadline_ms;    /* when cur is applied, full or not */
    int64_t fl_deadline_ms; /* when fl is applied without the next one full */

    kpart *parts;
    size_t nparts;
    size_t last_part;   /* lookup cache */

    /* Latency of the batch being applied, and over the run. */
    int64_t *lat;
    size_t nlat, lat_cap;
    int64_t batch_wall_ms;
    /* Per record of the batch: the same instant minus its Kafka timestamp. */
    int64_t *klat;
    size_t nklat, klat_cap;
    uint64_t *hist;
    int64_t lat_max;

    cdc_kafka_stats_t stats;

    /* Info line accumulation since the last one. */
    int64_t info_last_ms;
    uint64_t info_records, info_batches;
    cdc_apply_result_t info_res;

    throttle thr[NTHROTTLE];
    uint64_t errors_since_ok;

    int closing;
    int reassigned;          /* restart_from_beginning gave the whole assignment again */
    const char *reassigned_topic; /* ... or this partition's alone (cooperative; the kpart's topic, */
    int32_t reassigned_partition; /* which stays where it is when k->parts grows) */
    int64_t resubscribe_at;  /* when to join the group again (a partition count changed); 0: not */
    int64_t commit_last_ms;  /* when the group's offsets were last committed (commit_due) */
    int64_t lag_all_ms;      /* when estimate_lag last looked every partition up */
    /* The prefetch's limits and the fetcher's wake (wake_fetcher). */
    uint64_t queue_max_bytes, queue_min_msgs;
    uint64_t taken_msgs, taken_bytes; /* records taken from the consumer's queue */
    uint64_t wake_seen;      /* taken_msgs + queue length at the last wake */
    int64_t wake_at_ms;      /* no wake before this */
    int wake_armed;          /* the queue came near its limits: the fetcher may stop */
    int wake_wanted;         /* a wake is due: records wait on the broker */
    int wake_backoff_ms;
    size_t wake_next;        /* round robin over the lagging partitions */
    uint64_t wakes;
    int64_t wake_waited_ms;  /* waited for records while the broker had more */
    int commit_due;          /* some kpart's commit_due is set */
    int fatal;
    char fatal_msg[1100];
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Logging ---- */

static void klog(cdc_kafka_t *k, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void klog(cdc_kafka_t *k, int level, const char *fmt, ...)
{
    if (!k || !k->log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    k->log(k->log_opaque, level, "kafka", msg);
}

/* Logs a message of a recurring kind (key) unless the same kind was logged
 * less than its interval ago; the interval doubles while the kind recurs
 * and the count of suppressed lines is given with the next line. */
static void klog_throttled(cdc_kafka_t *k, int level, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void klog_throttled(cdc_kafka_t *k, int level, const char *key, const char *fmt, ...)
{
    int64_t now = mono_ms();
    throttle *t = NULL, *oldest = &k->thr[0];
    for (size_t i = 0; i < NTHROTTLE; i++) {
        if (k->thr[i].key[0] && !strcmp(k->thr[i].key, key)) {
            t = &k->thr[i];
            break;
        }
        if (k->thr[i].used_ms < oldest->used_ms) oldest = &k->thr[i];
    }
    if (!t) {
        t = oldest;
        memset(t, 0, sizeof *t);
        snprintf(t->key, sizeof t->key, "%s", key);
    }
    t->used_ms = now;
    k->errors_since_ok++;
    if (now < t->next_ms) {
        t->suppressed++;
        return;
    }
    t->interval_ms = t->interval_ms ? t->interval_ms * 2 : THROTTLE_FIRST_MS;
    if (t->interval_ms > THROTTLE_MAX_MS) t->interval_ms = THROTTLE_MAX_MS;
    t->next_ms = now + t->interval_ms;
    if (!k->log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (t->suppressed && len >= 0 && (size_t)len < sizeof msg)
        snprintf(msg + len, sizeof msg - (size_t)len, " (%llu more like this since the last)",
                 (unsigned long long)t->suppressed);
    t->suppressed = 0;
    k->log(k->log_opaque, level, "kafka", msg);
}

/* A message arrived: recurring errors are over, log them at once next time. */
static void throttle_reset(cdc_kafka_t *k)
{
    if (!k->errors_since_ok) return;
    klog(k, CDC_LOG_INFO, "consuming again after %llu errors", (unsigned long long)k->errors_since_ok);
    k->errors_since_ok = 0;
    memset(k->thr, 0, sizeof k->thr);
}

static int kfatal(cdc_kafka_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int kfatal(cdc_kafka_t *k, const char *fmt, ...)
{
    if (k->fatal) return k->fatal;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->fatal_msg, sizeof k->fatal_msg, fmt, ap);
    va_end(ap);
    k->fatal = CDC_EKAFKA;
    klog(k, CDC_LOG_ERROR, "%s", k->fatal_msg);
    return k->fatal;
}

/* Errors that retrying does not cure. */
static int err_is_fatal(rd_kafka_resp_err_t e)
{
    switch (e) {
    case RD_KAFKA_RESP_ERR__FATAL:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        return 1;
    default:
        return 0;
    }
}

/* ---- librdkafka callbacks ---- */

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    cdc_kafka_t *k = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char es[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, es, sizeof es);
        kfatal(k, "fatal Kafka client error: %s: %s", rd_kafka_err2name(orig), es);
        return;
    }
    if (err_is_fatal((rd_kafka_resp_err_t)err)) {
        kfatal(k, "Kafka: %s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
        return;
    }
    char key[32];
    snprintf(key, sizeof key, "err:%d", err);
    klog_throttled(k, err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ? CDC_LOG_ERROR : CDC_LOG_WARN, key,
                   "Kafka: %s: %s (retrying)", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

#define RESUBSCRIBE_AFTER_MS 3000

static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    cdc_kafka_t *k = rd_kafka_opaque(rk);
    if (!k) return;
    /* A subscribed topic gained partitions.  The group rebalances by
     * itself, but librdkafka 2.0's range assignment was seen to hand out
     * the old partitions only (the stack's broker, a topic taken from 1 to
     * 4 partitions under load: partitions 1-3 unread until a restart); so
     * the consumer joins the group again a little later, when every
     * member's metadata has the new count (cdc_kafka_run, resubscribe).
     * (Logs come through the consumer's queue: this runs on the thread of
     * cdc_kafka_run.)  librdkafka says so at LOG_NOTICE; the same facility
     * at LOG_DEBUG (with debug=topic) is a topic's first count, from 0,
     * which is no change. */
    if (!strcmp(fac, "PARTCNT") && level <= 5) k->resubscribe_at = mono_ms() + RESUBSCRIBE_AFTER_MS;
    if (!k->log) return;
    int lv = level <= 3 ? CDC_LOG_ERROR : level == 4 ? CDC_LOG_WARN : level <= 6 ? CDC_LOG_INFO : CDC_LOG_DEBUG;
    /* Connection failures reach error_cb as well, which logs them once. */
    if (!strcmp(fac, "FAIL")) lv = CDC_LOG_DEBUG;
    if (lv <= CDC_LOG_WARN) {
        char key[64];
        snprintf(key, sizeof key, "log:%s", fac);
        klog_throttled(k, lv, key, "librdkafka %s: %s", fac, buf);
    } else {
        klog(k, lv, "librdkafka %s: %s", fac, buf);
    }
}

static kpart *part_find(cdc_kafka_t *k, const char *topic, int32_t partition, int create);

static void commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets,
                      void *opaque)
{
    (void)rk;
    cdc_kafka_t *k = opaque;
    /* A commit sent while the group rebalances is refused; the partitions
     * still ours are committed again with the next (commit_positions). */
    if (err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS || err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
        err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID) {
        klog(k, CDC_LOG_DEBUG, "committing the group offsets: %s (a rebalance)", rd_kafka_err2str(err));
        for (int i = 0; offsets && i < offsets->cnt; i++) {
            kpart *p = part_find(k, offsets->elems[i].topic, offsets->elems[i].partition, 0);
            if (p && p->assigned) p->commit_due = k->commit_due = 1;
        }
        return;
    }
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
        klog_throttled(k, CDC_LOG_WARN, "commit",
                       "committing the group offsets (for lag monitoring only) failed: %s", rd_kafka_err2str(err));
}

/* ---- Partitions ---- */

static kpart *part_find(cdc_kafka_t *k, const char *topic, int32_t partition, int create)
{
    if (k->last_part < k->nparts) {
        kpart *p = &k->parts[k->last_part];
        if (p->partition == partition && !strcmp(p->topic, topic)) return p;
    }
    for (size_t i = 0; i < k->nparts; i++)
        if (k->parts[i].partition == partition && !strcmp(k->parts[i].topic, topic)) {
            k->last_part = i;
            return &k->parts[i];
        }
    if (!create) return NULL;
    k->parts = cdc__realloc(k->parts, (k->nparts + 1) * sizeof *k->parts);
    kpart *p = &k->parts[k->nparts];
    p->topic = cdc__strdup(topic);
    p->partition = partition;
    p->assigned = 0;
    p->run_next = -1;
    p->began_at = -1;
    p->verify_at = -1;
    p->verify_fp = 0;
    p->commit_due = 0;
    p->lag_due = 0;
    p->lo = p->hi = -1;
    k->last_part = k->nparts++;
    return p;
}

/* Records between what was applied and the high watermarks last fetched.
 * librdkafka 2.0 finds a partition's watermarks by its topic's name in a
 * list of topics, so a lookup of every partition after every batch cost a
 * replica of a thousand single-partition topics some 500,000 name
 * comparisons a batch.  A partition's watermarks are therefore looked up
 * again when the batch just applied held its records (lag_due) and, for
 * all of them, at most every LAG_ALL_MS; between, the last ones found
 * count. */
#define LAG_ALL_MS 1000

static int64_t estimate_lag(cdc_kafka_t *k)
{
    int64_t lag = 0;
    int known = 0;
    int64_t now = mono_ms();
    int all = now - k->lag_all_ms >= LAG_ALL_MS;
    if (all) k->lag_all_ms = now;
    for (size_t i = 0; i < k->nparts; i++) {
        kpart *p = &k->parts[i];
        if (!p->assigned) continue;
        if (all || p->lag_due || p->hi < 0) {
            int64_t lo = -1, hi = -1;
            if (!rd_kafka_get_watermark_offsets(k->rk, p->topic, p->partition, &lo, &hi) && hi >= 0) {
                p->lo = lo;
                p->hi = hi;
            }
            p->lag_due = 0;
        }
        if (p->hi < 0) continue;
        int64_t lo = p->lo, hi = p->hi;
        int64_t next = p->run_next;
        if (next < 0) {
            int64_t stored = -1;
            cdc_store_position(k->st, p->topic, p->partition, &stored, NULL);
            next = stored >= 0 ? stored + 1 : (lo >= 0 ? lo : 0);
        }
        if (hi > next) lag += hi - next;
        known = 1;
    }
    return known ? lag : -1;
}

/* ---- Batches ---- */

static void on_change(void *opaque, const char *table, int64_t ts_ms)
{
    cdc_kafka_t *k = opaque;
    if (!k->batch_wall_ms) k->batch_wall_ms = wall_ms();
    if (ts_ms > 0) {
        int64_t l = k->batch_wall_ms - ts_ms;
        if (l < 0) l = 0; /* clocks of different hosts */
        if (k->nlat == k->lat_cap) {
            size_t nc = k->lat_cap ? k->lat_cap * 2 : 1024;
            int64_t *nl = cdc__realloc(k->lat, nc * sizeof *nl);
            if (nl) {
                k->lat = nl;
                k->lat_cap = nc;
            }
        }
        if (k->nlat < k->lat_cap) k->lat[k->nlat++] = l;
        k->hist[h_bucket(l)]++;
        k->stats.latency_samples++;
        if (l > k->lat_max) k->lat_max = l;
    }
    if (k->user_on_change) k->user_on_change(k->user_on_change_opaque, table, ts_ms);
}

static int64_t percentile(const cdc_kafka_t *k, double q)
{
    uint64_t total = k->stats.latency_samples;
    if (!total) return -1;
    uint64_t rank = (uint64_t)(q * (double)total + 0.999999);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < H_BUCKETS; b++) {
        seen += k->hist[b];
        if (seen >= rank) {
            int64_t v = h_value(b);
            return v < k->lat_max ? v : k->lat_max;
        }
    }
    return k->lat_max;
}

/* The group's offsets are committed at most this often.  They are for
 * monitoring only (the replica's positions say where to resume), and a
 * commit per batch cost the group coordinator and this thread work on every
 * batch of a backlog (building the list looked each record's partition up
 * in it). */
#define COMMIT_EVERY_MS 1000

/* Commits, for monitoring, the replica's positions of the partitions
 * applied to since the last commit: when force is set, or when the last
 * commit is COMMIT_EVERY_MS old (cdc_kafka_run also calls this between
 * polls, so an idle consumer's offsets catch up within about a second). */
static void commit_positions(cdc_kafka_t *k, int force)
{
    if (!k->commit_due) return;
    int64_t now = mono_ms();
    if (!force && now - k->commit_last_ms < COMMIT_EVERY_MS) return;
    k->commit_due = 0;
    k->commit_last_ms = now;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (size_t i = 0; i < k->nparts; i++) {
        kpart *p = &k->parts[i];
        if (!p->commit_due) continue;
        p->commit_due = 0;
        int64_t stored = -1;
        if (cdc_store_position(k->st, p->topic, p->partition, &stored, NULL) || stored < 0) continue;
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = stored + 1;
    }
    if (l->cnt) {
        rd_kafka_resp_err_t e = rd_kafka_commit(k->rk, l, 1);
        if (e) klog_throttled(k, CDC_LOG_WARN, "commit", "committing the group offsets failed: %s", rd_kafka_err2str(e));
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static void drop_batch(kbatch *b)
{
    for (size_t i = 0; i < b->n; i++) rd_kafka_message_destroy(b->msgs[i]);
    b->n = 0;
}

static void garbage_free(kgarbage *g)
{
    for (size_t i = 0; i < g->n; i++) rd_kafka_message_destroy(g->msgs[i]);
    cdc__events_free(g->evs, g->n);
    g->evs = NULL;
    g->n = 0;
}

/* Keeps batch b's messages and its events evs (applied) in k->gc until the
 * decoder's next job frees them: on the thread that applies, freeing a
 * batch of 10,000 records took about 1.2 ms (bench/backlog.sh: 0.12 of its
 * 2.7 CPU-seconds), and that thread is the one the drain waits on.  b
 * takes the garbage's empty array in exchange. */
static void garbage_keep(cdc_kafka_t *k, kbatch *b, cdc__event *evs)
{
    garbage_free(&k->gc); /* two applies with no job between: free the first here */
    rd_kafka_message_t **m = k->gc.msgs;
    size_t cap = k->gc.cap;
    k->gc.msgs = b->msgs;
    k->gc.cap = b->cap;
    k->gc.n = b->n;
    k->gc.evs = evs;
    b->msgs = m;
    b->cap = cap;
    b->n = 0;
}


/* Drops what was consumed and not applied, the batch being decoded too: the
 * replica's positions say where to start again. */
static void drop_pending(cdc_kafka_t *k)
{
    if (k->fl->n) cdc__events_free(cdc__decoder_finish(k->dec), k->fl->n);
    drop_batch(k->fl);
    drop_batch(k->cur);
    garbage_free(&k->gc);
    garbage_free(&k->gc_dec);
}

static void info_line(cdc_kafka_t *k, int force)
{
    int64_t now = mono_ms();
    if (!k->info_batches || (!force && now - k->info_last_ms < INFO_EVERY_MS)) return;
    double secs = k->info_last_ms ? (double)(now - k->info_last_ms) / 1000.0 : 0;
    char rate[48] = "";
    if (secs > 0) snprintf(rate, sizeof rate, " (%.0f/s)", (double)k->info_records / secs);
    char lag[32] = "unknown", p50[32] = "-", p99[32] = "-";
    if (k->stats.lag >= 0) snprintf(lag, sizeof lag, "%lld", (long long)k->stats.lag);
    if (k->stats.latency_p50_ms >= 0) {
        snprintf(p50, sizeof p50, "%lld ms", (long long)k->stats.latency_p50_ms);
        snprintf(p99, sizeof p99, "%lld ms", (long long)k->stats.latency_p99_ms);
    }
    klog(k, CDC_LOG_INFO,
         "%llu records in %llu batches%s: %llu applied, %llu stale, %llu duplicate, %llu tombstones, "
         "%llu dead letters, %llu other; lag %s; end-to-end latency of streamed changes p50 %s, p99 %s over %llu",
         (unsigned long long)k->info_records, (unsigned long long)k->info_batches, rate,
         (unsigned long long)k->info_res.applied, (unsigned long long)k->info_res.stale,
         (unsigned long long)k->info_res.duplicate, (unsigned long long)k->info_res.tombstones,
         (unsigned long long)k->info_res.dead_letters, (unsigned long long)k->info_res.other, lag, p50, p99,
         (unsigned long long)k->stats.latency_samples);
    k->info_last_ms = now;
    k->info_records = k->info_batches = 0;
    memset(&k->info_res, 0, sizeof k->info_res);
}

/* The last stage of the end-to-end latency, per record of the batch: the
 * instant the batch's apply began (the one on_change measures from) minus
 * the record's Kafka timestamp, the broker's append time on a topic with
 * message.timestamp.type=LogAppendTime, else the producer's create time.
 * Records without a timestamp have none. */
static void kafka_latency(cdc_kafka_t *k, const kbatch *b, int64_t wall)
{
    if (k->klat_cap < b->n) {
        k->klat = cdc__realloc(k->klat, b->n * sizeof *k->klat);
        k->klat_cap = b->n;
    }
    k->nklat = 0;
    for (size_t i = 0; i < b->n; i++) {
        rd_kafka_timestamp_type_t tt;
        int64_t ts = rd_kafka_message_timestamp(b->msgs[i], &tt);
        if (tt == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ts <= 0) continue;
        k->klat[k->nklat++] = wall - ts > 0 ? wall - ts : 0; /* clocks of different hosts */
    }
}

/* The records of b's messages, which they point into. */
static void records_room(kbatch *b)
{
    if (b->recs_cap < b->n) {
        b->recs = cdc__realloc(b->recs, b->n * sizeof *b->recs);
        b->recs_cap = b->n;
    }
}

/* Fills b->recs[from..to) from b's messages.  Each message's struct is a
 * cache miss here (librdkafka's thread wrote it), and asking for its headers
 * another: on the backlog of bench/backlog.sh this took 2.8% of the samples
 * of the thread that applies.  A full batch's records are therefore filled
 * by the decoder, chunk by chunk, before it decodes them (fill_chunk; the
 * thread that applies takes part only in what is left at
 * cdc__decoder_finish). */
static void fill_range(kbatch *b, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const rd_kafka_message_t *m = b->msgs[i];
        cdc_record_t *r = &b->recs[i];
        memset(r, 0, sizeof *r);
        r->topic = rd_kafka_topic_name(m->rkt);
        r->partition = m->partition;
        r->offset = m->offset;
        r->key = m->key;
        r->key_len = m->key ? m->key_len : 0;
        r->value = m->payload;
        r->value_len = m->payload ? m->len : 0;
        /* a primary-key change's headers (cdc_record_t); the message owns them */
        rd_kafka_headers_t *h = NULL;
        const void *hv;
        size_t hn;
        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h) {
            if (rd_kafka_header_get_last(h, "__debezium.oldkey", &hv, &hn) == RD_KAFKA_RESP_ERR_NO_ERROR && hv) {
                r->old_key = hv;
                r->old_key_len = hn;
            }
            r->key_moved = rd_kafka_header_get_last(h, "__debezium.newkey", &hv, &hn) == RD_KAFKA_RESP_ERR_NO_ERROR;
        }
    }
}

static void fill_records(kbatch *b)
{
    records_room(b);
    fill_range(b, 0, b->n);
}

static void fill_chunk(void *opaque, cdc_record_t *recs, size_t from, size_t to)
{
    (void)recs; /* k->filling->recs */
    cdc_kafka_t *k = opaque;
    if (from == 0) garbage_free(&k->gc_dec);
    fill_range(k->filling, from, to);
}

/* Submits batch b to the decoder with the garbage kept so far, which the
 * job's first chunk frees. */
static void decoder_submit(cdc_kafka_t *k, kbatch *b)
{
    garbage_free(&k->gc_dec); /* freed by the job before (finish saw to it): empty */
    kgarbage spare = {.msgs = k->gc_dec.msgs, .cap = k->gc_dec.cap}; /* its array, to use again */
    k->gc_dec = k->gc;
    k->gc = spare;
    k->filling = b;
    records_room(b);
    cdc__decoder_submit(k->dec, b->recs, b->n, fill_chunk, k);
}

/* Applies batch b, its records filled and decoded into evs (consumed), then
 * commits the group offsets and reports.  The messages are released
 * whatever the outcome (garbage_keep): on failure the replica's positions
 * still say where to start again. */
static int apply_batch(cdc_kafka_t *k, kbatch *b, cdc__event *evs, cdc_error_t *err)
{
    cdc_apply_options_t ao = k->apply;
    ao.on_change = on_change;
    ao.on_change_opaque = k;
    k->nlat = 0;
    k->batch_wall_ms = 0;
    cdc_apply_result_t res = {0};
    struct timespec t0, t1;
    int64_t wall0 = wall_ms();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = cdc__store_apply_events_kept(k->st, b->recs, evs, b->n, &ao, &res, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    kafka_latency(k, b, k->batch_wall_ms ? k->batch_wall_ms : wall0);
    double apply_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (rc == 0 || rc == CDC_ESTOPPED) {
        for (size_t i = 0; i < b->n; i++) {
            const rd_kafka_message_t *m = b->msgs[i];
            kpart *p = part_find(k, rd_kafka_topic_name(m->rkt), m->partition, 1);
            if (p) p->commit_due = k->commit_due = p->lag_due = 1;
            if (p && (rc == 0 || p->run_next < 0)) {
                if (rc == 0) {
                    if (m->offset + 1 > p->run_next) p->run_next = m->offset + 1;
                } else {
                    int64_t stored = -1;
                    cdc_store_position(k->st, p->topic, p->partition, &stored, NULL);
                    if (stored >= 0) p->run_next = stored + 1;
                }
            }
        }
        commit_positions(k, 0);
        cdc__result_add(&k->stats.total, &res);
        cdc__result_add(&k->info_res, &res);
        k->stats.batches++;
        k->info_batches++;
        k->info_records += b->n;
        k->stats.lag = estimate_lag(k);
        k->stats.latency_p50_ms = percentile(k, 0.50);
        k->stats.latency_p99_ms = percentile(k, 0.99);
        k->stats.latency_max_ms = k->stats.latency_samples ? k->lat_max : -1;
        /* The automatic purge raises horizons between batches, in this
         * thread, the one that owns the store. */
        if (rc == 0 && k->purge_after_ms > 0) {
            rc = cdc__store_purge_tick(k->st, k->purge_after_ms, wall_ms(), NULL, err);
            if (rc)
                klog(k, CDC_LOG_ERROR, "the automatic purge failed: %s",
                     err && err->msg[0] ? err->msg : cdc_strerror(rc));
        }
        if (k->on_batch) {
            cdc_kafka_batch_t bt = {.records = b->n, .result = &res, .apply_ms = apply_ms,
                                    .latency_ms = k->lat, .nlatency = k->nlat, .run = &k->stats,
                                    .kafka_latency_ms = k->klat, .nkafka_latency = k->nklat};
            k->on_batch(k->on_batch_opaque, &bt);
        }
        info_line(k, 0);
    } else {
        klog(k, CDC_LOG_ERROR, "applying a batch of %zu records failed: %s", b->n,
             err && err->msg[0] ? err->msg : cdc_strerror(rc));
    }
    garbage_keep(k, b, evs);
    return rc;
}

/* Applies the batch being decoded, if any. */
static int finish_decoding(cdc_kafka_t *k, cdc_error_t *err)
{
    if (!k->fl->n) return 0;
    return apply_batch(k, k->fl, cdc__decoder_finish(k->dec), err);
}

/* Applies everything consumed, in order: the batch being decoded, then the
 * one being filled (decoded on both threads).  On failure what was not
 * applied is dropped. */
static int flush(cdc_kafka_t *k, cdc_error_t *err)
{
    int rc = finish_decoding(k, err);
    if (rc) {
        drop_pending(k);
        return rc;
    }
    kbatch *b = k->cur;
    if (!b->n) return 0;
    cdc__event *evs;
    if (k->dec && b->n >= DECODER_MIN) {
        decoder_submit(k, b);
        evs = cdc__decoder_finish(k->dec);
    } else {
        fill_records(b);
        evs = cdc__decode_batch(k->st, b->recs, b->n, &k->apply, 2);
    }
    return apply_batch(k, b, evs, err);
}

/* A full batch under a backlog.  It goes to the decoder's thread, and the
 * batch before it (decoded meanwhile) is applied on this thread while it
 * decodes; the consumer then fills the next batch, and when that one is
 * full this thread decodes what is left of the first beside the decoder
 * (cdc__decoder_finish) before applying it.  Before, each batch was decoded
 * on two threads and then applied: on the Kafka backlog of bench/backlog.sh
 * (1,000,000 records, batches of 10,000) decoding took 4.1 s and the apply
 * 6.1 s of the run, one after the other, with a core idle during every
 * apply.  Under a trickle a batch closes on its deadline, not full, and
 * flush applies it at once; a full batch waits for the next one at most
 * batch_ms, and only while records keep coming (cdc_kafka_run applies it
 * when a poll finds none after that), so latency is unchanged.  The applies
 * follow the order of consumption, and a rebalance, a stop or an error
 * applies (or drops) both batches first, the full one first. */
static int flush_full(cdc_kafka_t *k, cdc_error_t *err)
{
    if (!k->dec) return flush(k, err);
    kbatch *prev = k->fl;
    cdc__event *evs = prev->n ? cdc__decoder_finish(k->dec) : NULL;
    decoder_submit(k, k->cur);
    k->fl = k->cur;
    k->fl_deadline_ms = mono_ms() + k->batch_ms;
    k->cur = prev; /* filled again once applied (apply_batch empties it) */
    if (!prev->n) return 0;
    int rc = apply_batch(k, prev, evs, err);
    if (rc) drop_pending(k);
    return rc;
}

/* ---- The fetcher's wake ----
 *
 * librdkafka 2.0 stops fetching every partition of a broker while the
 * consumer's queue holds queued.min.messages records or
 * queued.max.messages.kbytes of them (the limits apply to the queue the
 * partitions forward to, so all of them stop at once), and looks again only
 * when its broker thread wakes up: on a response, a request to send, or
 * after a second (newer versions have fetch.queue.backoff.ms for this).
 * Under a backlog nothing else comes, so the queue drained while the fetcher
 * slept: on the backlog of bench/backlog.sh (1,000,000 records, 4
 * partitions, a 128 MiB queue) the fetcher slept 700 ms with 290,000
 * records queued, and the queue was down to 10,800 records when it woke;
 * with a 32 MiB queue the drain took 9 s instead of 3, with 16 MiB 17 s.
 * So once the queue has come near its limits and is down to half of them
 * again, while the partitions' high watermarks say more records wait on the
 * broker, the consumer asks the leader of a lagging partition for its
 * watermarks: that request wakes the broker thread, which then fetches
 * again.  Until records arrive the ask is repeated, the wait between asks
 * doubling from WAKE_MIN_MS up to librdkafka's own second (a fetch in
 * flight, or offsets with no record, such as a compacted topic's). */
#define WAKE_MIN_MS 10
#define WAKE_MAX_MS 1000
#define WAKE_TIMEOUT_MS 200 /* a broker that does not answer (an outage) holds the loop this long */

static void wake_fetcher(cdc_kafka_t *k)
{
    uint64_t qlen = (uint64_t)rd_kafka_queue_length(k->q);
    uint64_t bytes = k->taken_msgs ? qlen * (k->taken_bytes / k->taken_msgs) : 0;
    /* Armed once the queue comes near its limits: only then can the
     * fetcher have stopped (a trickle never arms it, and costs nothing). */
    if (qlen * 4 >= k->queue_min_msgs * 3 || (k->queue_max_bytes && bytes * 4 >= k->queue_max_bytes * 3)) {
        k->wake_armed = 1;
        return;
    }
    if (!k->wake_armed || qlen * 2 >= k->queue_min_msgs || (k->queue_max_bytes && bytes * 2 >= k->queue_max_bytes))
        return;
    int64_t now = mono_ms();
    if (now < k->wake_at_ms) return;
    /* Records the broker holds beyond what is queued or in a batch: the lag
     * as of the last batch applied (estimate_lag costs a lookup per
     * partition, and librdkafka finds a topic by its name in a list). */
    int64_t lag = k->stats.lag;
    if (lag <= 0 || (uint64_t)lag <= qlen + k->cur->n + k->fl->n) {
        k->wake_armed = k->wake_wanted = 0; /* the backlog is read */
        return;
    }
    /* Records arrived since the last wake: the fetcher ran. */
    uint64_t seen = k->taken_msgs + qlen;
    if (seen > k->wake_seen) k->wake_backoff_ms = WAKE_MIN_MS;
    else if (k->wake_backoff_ms < WAKE_MAX_MS) k->wake_backoff_ms *= 2;
    if (k->wake_backoff_ms > WAKE_MAX_MS) k->wake_backoff_ms = WAKE_MAX_MS;
    k->wake_seen = seen;
    k->wake_at_ms = now + k->wake_backoff_ms;
    k->wake_wanted = 1; /* cdc_kafka_run waits for records no longer than till the next wake */
    /* The next assigned partition, round robin, whose watermark (as the
     * lag last found it) is beyond what this run applied: partitions led by
     * other brokers get their turn. */
    for (size_t n = 0; n < k->nparts; n++) {
        kpart *p = &k->parts[(k->wake_next + n) % k->nparts];
        if (!p->assigned || p->hi < 0 || (p->run_next >= 0 && p->hi <= p->run_next)) continue;
        k->wake_next = (k->wake_next + n + 1) % k->nparts;
        k->wakes++;
        int64_t lo, hi;
        rd_kafka_query_watermark_offsets(k->rk, p->topic, p->partition, &lo, &hi, WAKE_TIMEOUT_MS);
        return;
    }
}

/* ---- Rebalances ---- */

/* The offset a newly assigned partition starts at: the replica's stored
 * position + 1, or the beginning; with from_beginning, the beginning unless
 * this run already applied some of it.
 *
 * A topic deleted and created again under the same name (a connector reset,
 * a topic removed by hand) starts its offsets at 0 again, and they name
 * other records: resuming after the stored position would skip the new
 * topic's records below it, its snapshot among them, in silence.  So when
 * the replica knows the fingerprint of the record at its position, the
 * partition starts at the position itself: take() checks that record
 * against the fingerprint and drops it (verify_position), and a topic that
 * no longer reaches the position is caught by its offset-reset error
 * (offset_reset). */
static int64_t start_offset(cdc_kafka_t *k, kpart *p, int64_t *stored_out)
{
    int64_t stored = -1;
    uint64_t fp = 0;
    cdc_error_t e = {0};
    if (cdc_store_position_fingerprint(k->st, p->topic, p->partition, &stored, &fp, &e))
        kfatal(k, "%s[%d]: reading the stored position failed: %s", p->topic, (int)p->partition, e.msg);
    *stored_out = stored;
    p->verify_at = -1;
    if (k->from_beginning) return p->run_next >= 0 ? p->run_next : RD_KAFKA_OFFSET_BEGINNING;
    if (stored < 0) return RD_KAFKA_OFFSET_BEGINNING;
    if (fp) {
        p->verify_at = stored;
        p->verify_fp = fp;
        return stored;
    }
    return stored + 1;
}

/* The partitions of parts to start from the beginning get the offset the
 * beginning is now, asked of their leaders in one round (ListOffsets with
 * the timestamp -2, "earliest", which offsets_for_times passes through).
 * Why: librdkafka 2.0 starts a partition assigned at the logical offset
 * BEGINNING only once it knows the partition's leader, and a partition it
 * has not fetched from yet often has none at the assignment; it then waits
 * for its offset-query retry, 500 ms, before the partition's first fetch.
 * Measured on the stack's broker, a new replica of a 4-partition backlog
 * (bench/backlog.sh's topic of 1,000,000 records, cdcstore ingest
 * --from-beginning --batch-max-events 10000, the time until --metrics-addr
 * counts the first records): three of the four partitions logged "no
 * current leader for partition: (re)starting offset query timer", and the
 * first batch was applied 0.74-1.0 s after the start in 5 runs of 9
 * (0.25-0.30 s in the others); with the offsets resolved here, 0.19-0.25 s
 * in 6 runs of 6, and the whole backlog in 7.6-8.5 s instead of 8.5-9.8 s.
 * A partition whose query fails keeps BEGINNING (librdkafka's own way), and
 * the call waits at most 2 s.  The beginning may move before the first
 * fetch (retention): take() then starts the partition at BEGINNING again,
 * not at an error, as nothing of it was read. */
static void resolve_beginnings(cdc_kafka_t *k, rd_kafka_t *rk, rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++)
        if (parts->elems[i].offset == RD_KAFKA_OFFSET_BEGINNING)
            rd_kafka_topic_partition_list_add(q, parts->elems[i].topic, parts->elems[i].partition)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
    if (q->cnt && !rd_kafka_offsets_for_times(rk, q, 2000)) {
        for (int i = 0; i < q->cnt; i++) {
            rd_kafka_topic_partition_t *r = &q->elems[i];
            if (r->err || r->offset < 0) continue;
            rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_find(parts, r->topic, r->partition);
            kpart *p = part_find(k, r->topic, r->partition, 0);
            if (!tp || !p) continue;
            tp->offset = r->offset;
            p->began_at = r->offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(q);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                         void *opaque)
{
    cdc_kafka_t *k = opaque;
    int coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
    rd_kafka_error_t *kerr = NULL;
    rd_kafka_resp_err_t rerr = 0;

    /* Whatever changes, the records consumed so far are applied first: they
     * were read while the partitions were ours, and the replica is ours. */
    if (!k->closing && (k->cur->n || k->fl->n)) {
        cdc_error_t e = {0};
        int rc = flush(k, &e);
        if (rc && !k->fatal) {
            k->fatal = rc;
            snprintf(k->fatal_msg, sizeof k->fatal_msg, "%s", e.msg[0] ? e.msg : cdc_strerror(rc));
        }
    }
    /* ... and their offsets committed while the partitions are still ours. */
    if (!k->closing && !rd_kafka_assignment_lost(rk)) commit_positions(k, 1);

    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        for (int i = 0; i < parts->cnt; i++) {
            rd_kafka_topic_partition_t *tp = &parts->elems[i];
            kpart *p = part_find(k, tp->topic, tp->partition, 1);
            if (!p) {
                kfatal(k, "out of memory");
                continue;
            }
            int64_t stored;
            tp->offset = start_offset(k, p, &stored);
            p->assigned = 1;
            p->began_at = -1;
            p->hi = -1; /* watermarks looked up again (estimate_lag) */
            if (tp->offset == RD_KAFKA_OFFSET_BEGINNING)
                klog(k, CDC_LOG_INFO, "assigned %s[%d]: from the beginning (%s)", tp->topic, (int)tp->partition,
                     k->from_beginning ? "--from-beginning" : "no stored position");
            else if (p->verify_at >= 0)
                klog(k, CDC_LOG_INFO, "assigned %s[%d]: from offset %lld (stored position %lld, its record read "
                     "again first to check the topic is the same)", tp->topic, (int)tp->partition,
                     (long long)tp->offset + 1, (long long)stored);
            else
                klog(k, CDC_LOG_INFO, "assigned %s[%d]: from offset %lld (stored position %lld)", tp->topic,
                     (int)tp->partition, (long long)tp->offset, (long long)stored);
        }
        resolve_beginnings(k, rk, parts);
        if (coop) kerr = rd_kafka_incremental_assign(rk, parts);
        else rerr = rd_kafka_assign(rk, parts);
    } else {
        int lost = rd_kafka_assignment_lost(rk);
        for (int i = 0; i < parts->cnt; i++) {
            kpart *p = part_find(k, parts->elems[i].topic, parts->elems[i].partition, 0);
            if (p) p->assigned = 0;
            klog(k, CDC_LOG_INFO, "%s %s[%d]", lost ? "lost" : "revoked", parts->elems[i].topic,
                 (int)parts->elems[i].partition);
        }
        if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
            klog(k, CDC_LOG_WARN, "rebalance error: %s", rd_kafka_err2str(err));
        if (coop) kerr = rd_kafka_incremental_unassign(rk, parts);
        else rerr = rd_kafka_assign(rk, NULL);
    }
    if (kerr) {
        klog(k, CDC_LOG_ERROR, "changing the assignment failed: %s", rd_kafka_error_string(kerr));
        rd_kafka_error_destroy(kerr);
    } else if (rerr) {
        klog(k, CDC_LOG_ERROR, "changing the assignment failed: %s", rd_kafka_err2str(rerr));
    }
}

/* ---- Configuration ---- */

static int is_secret(const char *name)
{
    return strstr(name, "password") || strstr(name, "secret") || strstr(name, "sasl.jaas") ||
           strstr(name, "ssl.key");
}

/* Defaults of the consumer's prefetch, which --kafka-config and the
 * properties override.  librdkafka (2.0, Debian 12's) stops fetching while
 * the consumer's queue holds queued.min.messages records or
 * queued.max.messages.kbytes of them, and by itself looks again only a
 * second later; wake_fetcher wakes it once the queue is down to half, so
 * the queue need not hold a second's worth.  Draining the backlog of
 * bench/backlog.sh (1,000,000 records of about 650 bytes, 4 partitions,
 * batches of 10,000, 1,000,000 messages at most; on 2 shared cores,
 * interleaved): without the wake, 128 MiB took 3.1-3.9 s and once 6.1 s
 * (peak RSS 459-484 MB), 32 MiB 9.1 s and 16 MiB 16-17 s; with it, 128 MiB
 * 3.1-3.6 s (465-502 MB), 64 MiB 3.0-3.3 s (366-403 MB), 32 MiB 3.0-3.8 s
 * (288-326 MB), 16 MiB 3.2-3.4 s (279-288 MB).  Newer librdkafka wait fetch.queue.backoff.ms
 * instead of the second, and would ignore the wake: it is set short where
 * known (prefetch_newer). */
static const char *const prefetch[][2] = {
    {"queued.min.messages", "1000000"},
    {"queued.max.messages.kbytes", "32768"},
};
static const char *const prefetch_newer[][2] = {
    {"fetch.queue.backoff.ms", "10"},
};

static const char *const forced[][2] = {
    {"enable.auto.commit", "false"},
    {"enable.auto.offset.store", "false"},
    {"enable.partition.eof", "false"},
    {"log.queue", "true"},
};

/* Sets the properties of a table of name/value pairs (prefetch, forced). */
static int conf_pairs(rd_kafka_conf_t *conf, const char *const (*pairs)[2], size_t n, cdc_error_t *err)
{
    char es[512];
    for (size_t i = 0; i < n; i++)
        if (rd_kafka_conf_set(conf, pairs[i][0], pairs[i][1], es, sizeof es) != RD_KAFKA_CONF_OK)
            return cdc__err(err, CDC_EKAFKA, "property %s: %s", pairs[i][0], es);
    return 0;
}

/* Sets one property; where names its origin ("FILE:LINE" or "option"). */
static int conf_set(cdc_kafka_t *k, rd_kafka_conf_t *conf, const char *name, const char *value,
                    const char *where, cdc_error_t *err)
{
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++)
        if (!strcmp(name, forced[i][0])) {
            if (strcmp(value, forced[i][1]))
                klog(k, CDC_LOG_WARN, "%s: property %s is always %s here; ignored", where, name, forced[i][1]);
            return 0;
        }
    char es[512];
    if (rd_kafka_conf_set(conf, name, value, es, sizeof es) != RD_KAFKA_CONF_OK) {
        /* librdkafka's message may quote the value. */
        if (is_secret(name)) return cdc__err(err, CDC_EINVAL, "%s: property %s: invalid value (not shown)", where, name);
        return cdc__err(err, CDC_EINVAL, "%s: property %s: %s", where, name, es);
    }
    klog(k, CDC_LOG_DEBUG, "%s: %s = %s", where, name, is_secret(name) ? "(not shown)" : value);
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = 0;
    return s;
}

static int conf_file(cdc_kafka_t *k, rd_kafka_conf_t *conf, const char *path, int *set_reset, cdc_error_t *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return cdc__err(err, -errno, "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        char *eq = strchr(s, '=');
        char where[600];
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (!eq) {
            rc = cdc__err(err, CDC_EINVAL, "%s: expected key=value", where);
            break;
        }
        *eq = 0;
        char *name = trim(s), *value = trim(eq + 1);
        if (!*name) {
            rc = cdc__err(err, CDC_EINVAL, "%s: expected key=value", where);
            break;
        }
        if (!strcmp(name, "auto.offset.reset")) *set_reset = 1;
        if ((rc = conf_set(k, conf, name, value, where, err))) break;
    }
    if (!rc && ferror(f)) rc = cdc__err(err, CDC_EIO, "%s: read error", path);
    /* The line may hold a secret: clear it before it goes back to the heap. */
    if (line) memset(line, 0, cap);
    free(line);
    fclose(f);
    return rc;
}

/* ---- API ---- */

static void kafka_free(cdc_kafka_t *k)
{
    if (!k) return;
    drop_pending(k);
    cdc__decoder_free(k->dec);
    for (size_t i = 0; i < k->ntopics; i++) free(k->topics[i]);
    free(k->topics);
    for (size_t i = 0; i < k->nparts; i++) free(k->parts[i].topic);
    free(k->parts);
    for (int i = 0; i < 2; i++) {
        free(k->bt[i].msgs);
        free(k->bt[i].recs);
    }
    free(k->gc.msgs);
    free(k->gc_dec.msgs);
    free(k->lat);
    free(k->klat);
    free(k->hist);
    free(k);
}

int cdc_kafka_open(cdc_store_t *st, const cdc_kafka_options_t *o, cdc_kafka_t **out, cdc_error_t *err)
{
    if (out) *out = NULL;
    if (!st || !o || !out) return cdc__err(err, CDC_EINVAL, "cdc_kafka_open: bad arguments");
    int has_regex = o->topic_regex != NULL;
    if ((!o->ntopics || !o->topics) && !has_regex)
        return cdc__err(err, CDC_EINVAL, "cdc_kafka_open: no topic to consume");
    for (size_t i = 0; o->topics && i < o->ntopics; i++)
        if (!o->topics[i] || !o->topics[i][0]) return cdc__err(err, CDC_EINVAL, "cdc_kafka_open: empty topic name");
    if (o->purge_after_ms < 0) return cdc__err(err, CDC_EINVAL, "cdc_kafka_open: negative purge_after_ms");
    /* librdkafka takes a subscription that starts with "^" as a pattern,
     * matched against the cluster's topics at every metadata refresh; it
     * compiles it as a POSIX extended expression (regcomp).  Compiling it
     * here first turns a mistake into an error naming the expression,
     * instead of a subscription that silently matches nothing. */
    char *pattern = NULL;
    if (has_regex) {
        const char *r = o->topic_regex;
        if (!r[0] || !strcmp(r, "^")) return cdc__err(err, CDC_EINVAL, "cdc_kafka_open: empty topic regex");
        pattern = cdc__malloc(strlen(r) + 2);
        sprintf(pattern, "%s%s", r[0] == '^' ? "" : "^", r);
        regex_t re;
        int rerr = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
        if (rerr) {
            char why[256];
            regerror(rerr, &re, why, sizeof why);
            int rc = cdc__err(err, CDC_EINVAL, "topic regex %.300s: %s", r, why);
            free(pattern);
            return rc;
        }
        regfree(&re);
    }
    if (o->batch_max_ms < 0) return cdc__err(err, CDC_EINVAL, "cdc_kafka_open: negative batch_max_ms");

    cdc_kafka_t *k = cdc__calloc(1, sizeof *k);
    k->st = st;
    k->batch_max = o->batch_max_events ? o->batch_max_events : DEFAULT_BATCH_EVENTS;
    k->batch_ms = o->batch_max_ms ? o->batch_max_ms : DEFAULT_BATCH_MS;
    k->from_beginning = o->from_beginning;
    k->apply = o->apply;
    k->cur = &k->bt[0];
    k->fl = &k->bt[1];
    /* Batches too small to split are decoded on the polling thread alone
     * (flush_full needs full batches to gain anything). */
    if (k->batch_max >= DECODER_MIN) k->dec = cdc__decoder_new(st, &k->apply);
    k->user_on_change = o->apply.on_change;
    k->user_on_change_opaque = o->apply.on_change_opaque;
    k->log = o->log;
    k->log_opaque = o->log_opaque;
    k->stop = o->stop;
    k->on_batch = o->on_batch;
    k->on_batch_opaque = o->on_batch_opaque;
    k->purge_after_ms = o->purge_after_ms;
    k->stats.lag = -1;
    k->stats.latency_p50_ms = k->stats.latency_p99_ms = k->stats.latency_max_ms = -1;
    k->hist = cdc__calloc(H_BUCKETS, sizeof *k->hist);
    k->topics = cdc__calloc(o->ntopics + 1, sizeof *k->topics);
    for (k->ntopics = 0; o->topics && k->ntopics < o->ntopics; k->ntopics++)
        k->topics[k->ntopics] = cdc__strdup(o->topics[k->ntopics]);
    if (pattern) k->topics[k->ntopics++] = pattern; /* the pattern is one more subscription */

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    int rc = 0, set_reset = 0;
    char buf[512], group[1024];
    size_t bl;
    if ((rc = conf_pairs(conf, prefetch, sizeof prefetch / sizeof prefetch[0], err))) goto fail;
    for (size_t i = 0; i < sizeof prefetch_newer / sizeof prefetch_newer[0]; i++) /* unknown to 2.0: fine */
        rd_kafka_conf_set(conf, prefetch_newer[i][0], prefetch_newer[i][1], buf, sizeof buf);
    if (o->config_file && (rc = conf_file(k, conf, o->config_file, &set_reset, err))) goto fail;
    for (size_t i = 0; i < o->nproperties; i++) {
        const cdc_kafka_property_t *p = &o->properties[i];
        if (!p->name || !p->value) {
            rc = cdc__err(err, CDC_EINVAL, "cdc_kafka_open: property %zu has no name or value", i);
            goto fail;
        }
        if (!strcmp(p->name, "auto.offset.reset")) set_reset = 1;
        if ((rc = conf_set(k, conf, p->name, p->value, "option", err))) goto fail;
    }
    if (o->brokers && (rc = conf_set(k, conf, "bootstrap.servers", o->brokers, "brokers", err))) goto fail;
    if (o->group && (rc = conf_set(k, conf, "group.id", o->group, "group", err))) goto fail;
    /* A partition without a stored position starts at its beginning by an
     * explicit offset (start_offset); the reset policy only acts when the
     * record after a stored position is gone (retention deleted it before
     * it was read).  Jumping to the earliest record then would store
     * positions past changes the replica never saw: "error" stops instead
     * (RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET, below). */
    if (!set_reset && (rc = conf_set(k, conf, "auto.offset.reset", "error", "default", err))) goto fail;
    if ((rc = conf_pairs(conf, forced, sizeof forced / sizeof forced[0], err))) goto fail;
    bl = sizeof group;
    if (rd_kafka_conf_get(conf, "group.id", group, &bl) != RD_KAFKA_CONF_OK || !group[0]) {
        rc = cdc__err(err, CDC_EINVAL, "cdc_kafka_open: a consumer group (group.id) is required");
        goto fail;
    }
    bl = sizeof buf;
    if (rd_kafka_conf_get(conf, "bootstrap.servers", buf, &bl) != RD_KAFKA_CONF_OK || !buf[0]) {
        rc = cdc__err(err, CDC_EINVAL, "cdc_kafka_open: no brokers (bootstrap.servers) given");
        goto fail;
    }
    rd_kafka_conf_set_opaque(conf, k);
    rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_log_cb(conf, log_cb);
    rd_kafka_conf_set_offset_commit_cb(conf, commit_cb);

    char es[512];
    k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, es, sizeof es);
    if (!k->rk) {
        rc = cdc__err(err, CDC_EKAFKA, "creating the Kafka consumer failed: %s", es);
        goto fail;
    }
    conf = NULL; /* owned by k->rk now */
    k->wake_backoff_ms = WAKE_MIN_MS;
    bl = sizeof buf;
    if (rd_kafka_conf_get(rd_kafka_conf(k->rk), "queued.max.messages.kbytes", buf, &bl) == RD_KAFKA_CONF_OK)
        k->queue_max_bytes = strtoull(buf, NULL, 10) * 1024;
    bl = sizeof buf;
    if (rd_kafka_conf_get(rd_kafka_conf(k->rk), "queued.min.messages", buf, &bl) == RD_KAFKA_CONF_OK)
        k->queue_min_msgs = strtoull(buf, NULL, 10);
    rd_kafka_set_log_queue(k->rk, NULL);
    rd_kafka_poll_set_consumer(k->rk);
    k->q = rd_kafka_queue_get_consumer(k->rk);

    rd_kafka_topic_partition_list_t *subs = rd_kafka_topic_partition_list_new((int)k->ntopics);
    for (size_t i = 0; i < k->ntopics; i++)
        rd_kafka_topic_partition_list_add(subs, k->topics[i], RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t se = rd_kafka_subscribe(k->rk, subs);
    rd_kafka_topic_partition_list_destroy(subs);
    const char *first = k->topics[0], *what = first[0] == '^' ? "the topics matching " : "";
    if (se) {
        rc = cdc__err(err, CDC_EKAFKA, "subscribing to %s%s%s failed: %s", what, first,
                      k->ntopics > 1 ? " and others" : "", rd_kafka_err2str(se));
        goto fail;
    }
    klog(k, CDC_LOG_INFO, "consuming %s%s%s as a member of group %s; positions come from the replica", what, first,
         k->ntopics > 1 ? " and others" : "", group);
    *out = k;
    return 0;
fail:
    if (conf) rd_kafka_conf_destroy(conf);
    if (k->q) rd_kafka_queue_destroy(k->q);
    if (k->rk) {
        k->closing = 1;
        rd_kafka_destroy(k->rk);
    }
    kafka_free(k);
    return rc;
}

/* Starts partition p at the logical beginning again.  librdkafka stops
 * fetching a partition at its offset-reset error and refuses to seek it
 * ("erroneous state"), so the assignment is given again: what was consumed
 * is applied first, and every other partition resumes where this run's
 * applied records end (start_offset), as after a rebalance. */
static int restart_from_beginning(cdc_kafka_t *k, kpart *p, cdc_error_t *err)
{
    int rc = flush(k, err);
    if (rc) return rc;
    rd_kafka_error_t *kerr = NULL;
    rd_kafka_resp_err_t rerr = 0;
    if (!strcmp(rd_kafka_rebalance_protocol(k->rk), "COOPERATIVE")) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = RD_KAFKA_OFFSET_BEGINNING;
        if (!(kerr = rd_kafka_incremental_unassign(k->rk, l))) kerr = rd_kafka_incremental_assign(k->rk, l);
        rd_kafka_topic_partition_list_destroy(l);
    } else {
        rd_kafka_topic_partition_list_t *l = NULL;
        if (!(rerr = rd_kafka_assignment(k->rk, &l))) {
            for (int i = 0; i < l->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &l->elems[i];
                kpart *q = part_find(k, tp->topic, tp->partition, 1);
                int64_t stored;
                if (!q) kfatal(k, "out of memory");
                else tp->offset = q == p ? RD_KAFKA_OFFSET_BEGINNING : start_offset(k, q, &stored);
            }
            rerr = rd_kafka_assign(k->rk, l);
        }
        if (l) rd_kafka_topic_partition_list_destroy(l);
    }
    /* The messages taken with this one are dropped: fetched again.  With
     * the eager protocol every partition was assigned again (at its
     * position); with the cooperative one p alone was, and the others'
     * messages are not fetched again: only p's are dropped. */
    if (!strcmp(rd_kafka_rebalance_protocol(k->rk), "COOPERATIVE")) {
        k->reassigned_topic = p->topic;
        k->reassigned_partition = p->partition;
    } else {
        k->reassigned = 1;
    }
    if (kerr || rerr) {
        kfatal(k, "%s[%d]: starting from the beginning again failed: %s", p->topic, (int)p->partition,
               kerr ? rd_kafka_error_string(kerr) : rd_kafka_err2str(rerr));
        if (kerr) rd_kafka_error_destroy(kerr);
    }
    return 0;
}

/* The topic of p is not the one the replica's position was read from: it
 * was deleted and created again.  Its offsets name new records, all of them
 * unread: the position and its epoch marks are forgotten and the partition
 * is read from its beginning.  The rows stay; what the new topic repeats of
 * them is compared by version, as any replay. */
static int topic_recreated(cdc_kafka_t *k, kpart *p, const char *why)
{
    cdc_error_t e = {0};
    klog(k, CDC_LOG_WARN, "%s[%d]: %s: the topic was deleted and created again, and its offsets name other "
         "records now; the replica forgets its position there and reads the partition from its beginning",
         p->topic, (int)p->partition, why);
    p->verify_at = -1;
    /* what was consumed is applied first, the old topic's records with the
     * marks they were read with */
    int rc = flush(k, &e);
    if (rc) return kfatal(k, "%s", e.msg), 0;
    p->run_next = -1;
    if (cdc_store_position_forget(k->st, p->topic, p->partition, &e)) return kfatal(k, "%s", e.msg), 0;
    return restart_from_beginning(k, p, &e) ? (kfatal(k, "%s", e.msg), 0) : 0;
}

/* The first record of p after its assignment at the stored position
 * (start_offset): the record the replica applied there, then dropped (1
 * returned: m is not taken), read on after it; or another record, from
 * another topic of the same name (topic_recreated; m released).  A first
 * record past the position means the one there is gone (compaction,
 * retention): nothing to check, m is taken as any other. */
static int verify_position(cdc_kafka_t *k, kpart *p, rd_kafka_message_t *m, cdc_error_t *err)
{
    int64_t at = p->verify_at;
    p->verify_at = -1;
    if (m->offset < at) {
        /* the position is past the topic's end and the consumer was reset
         * to its beginning (auto.offset.reset=earliest): a shorter topic */
        char why[160];
        snprintf(why, sizeof why, "the topic's first record is at offset %lld, below the replica's position %lld",
                 (long long)m->offset, (long long)at);
        rd_kafka_message_destroy(m);
        return topic_recreated(k, p, why);
    }
    if (m->offset != at) return 1;
    uint64_t fp = cdc_record_fingerprint(m->key, m->key ? m->key_len : 0, m->payload, m->payload ? m->len : 0);
    rd_kafka_message_destroy(m);
    if (fp == p->verify_fp) return 0;
    char why[128];
    snprintf(why, sizeof why, "the record at offset %lld is not the one the replica applied there", (long long)at);
    return topic_recreated(k, p, why);
}

/* The offset p started at is out of the topic's range.  The topic ends
 * before the stored position: it was deleted and created again (a shorter
 * one), topic_recreated.  Retention removed the record at the position and
 * nothing after it: p starts at the beginning, which is the next record.
 * Otherwise -1: records after the position are gone (the caller's error). */
static int offset_reset(cdc_kafka_t *k, kpart *p, const rd_kafka_message_t *m, cdc_error_t *err)
{
    int64_t stored = -1, lo = -1, hi = -1;
    cdc_store_position(k->st, p->topic, p->partition, &stored, NULL);
    if (stored < 0 ||
        rd_kafka_query_watermark_offsets(k->rk, p->topic, p->partition, &lo, &hi, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return -1;
    if (hi <= stored) {
        char why[160];
        snprintf(why, sizeof why, "the topic ends at offset %lld, before the replica's position %lld", (long long)hi,
                 (long long)stored);
        return topic_recreated(k, p, why);
    }
    if (p->verify_at == stored && lo == stored + 1) {
        p->verify_at = -1;
        return restart_from_beginning(k, p, err);
    }
    return -1;
}

/* Takes one message of the consumer: into the batch being filled (applied
 * when full), or logged (an error), or dropped (a partition not ours).
 * 0, or what applying the full batch returned. */
static int take(cdc_kafka_t *k, rd_kafka_message_t *m, cdc_error_t *err)
{
    if (m->err) {
        rd_kafka_resp_err_t e = m->err;
        const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
        kpart *p = e == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ? part_find(k, topic, m->partition, 0) : NULL;
        if (p && p->assigned && p->began_at >= 0 && p->run_next < 0) {
            /* The beginning resolved at the assignment moved before the
             * first fetch (resolve_beginnings): start at the new one. */
            klog(k, CDC_LOG_INFO, "%s[%d]: the beginning moved past offset %lld before the first read: from the "
                 "beginning again", topic, (int)m->partition, (long long)p->began_at);
            p->began_at = -1;
            int rc = restart_from_beginning(k, p, err);
            rd_kafka_message_destroy(m);
            return rc;
        } else if (e == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
            int rc = p && p->assigned ? offset_reset(k, p, m, err) : -1;
            if (rc >= 0) {
                rd_kafka_message_destroy(m);
                return rc;
            }
            kfatal(k,
                   "%s[%d]: the records after the replica's position are gone from the topic (%s): "
                   "retention deleted them before they were read, and their changes would be missing; "
                   "re-snapshot the table, or accept the loss with auto.offset.reset=earliest",
                   topic, (int)m->partition, rd_kafka_message_errstr(m));
        } else if (err_is_fatal(e)) {
            kfatal(k, "Kafka: %s%s%s: %s", topic, topic[0] ? ": " : "", rd_kafka_err2name(e),
                   rd_kafka_message_errstr(m));
        } else {
            char key[32];
            snprintf(key, sizeof key, "msg:%d", (int)e);
            klog_throttled(k, CDC_LOG_WARN, key, "Kafka: %s%s%s: %s", topic, topic[0] ? ": " : "",
                           rd_kafka_err2name(e), rd_kafka_message_errstr(m));
        }
        rd_kafka_message_destroy(m);
        return 0;
    }
    kpart *p = part_find(k, rd_kafka_topic_name(m->rkt), m->partition, 0);
    if (!p || !p->assigned) {
        rd_kafka_message_destroy(m);
        return 0;
    }
    if (p->verify_at >= 0) {
        int rc = verify_position(k, p, m, err);
        if (rc != 1) return rc; /* m taken */
    }
    throttle_reset(k);
    k->taken_msgs++;
    k->taken_bytes += m->len + m->key_len;
    kbatch *b = k->cur;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        b->msgs = cdc__realloc(b->msgs, nc * sizeof *b->msgs);
        b->cap = nc;
    }
    b->msgs[b->n++] = m;
    if (b->n == 1) k->deadline_ms = mono_ms() + k->batch_ms;
    return b->n >= k->batch_max ? flush_full(k, err) : 0;
}

/* Leaves the group and joins it again with the same subscription: the
 * assignment is made anew (log_cb says when and why).  What was consumed is
 * applied first, by the revocation (rebalance_cb). */
static void resubscribe(cdc_kafka_t *k)
{
    rd_kafka_topic_partition_list_t *subs = NULL;
    if (rd_kafka_subscription(k->rk, &subs) || !subs) return;
    klog(k, CDC_LOG_INFO, "a subscribed topic's partition count changed: joining the group again, so that its new "
         "partitions are assigned");
    rd_kafka_resp_err_t e = rd_kafka_unsubscribe(k->rk);
    if (!e) e = rd_kafka_subscribe(k->rk, subs);
    if (e) kfatal(k, "subscribing again after a partition count change failed: %s", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(subs);
}

int cdc_kafka_run(cdc_kafka_t *k, cdc_error_t *err)
{
    if (!k) return cdc__err(err, CDC_EINVAL, "cdc_kafka_run: bad arguments");
    int rc = 0;
    for (;;) {
        if (k->resubscribe_at && mono_ms() >= k->resubscribe_at) {
            k->resubscribe_at = 0;
            if ((rc = flush(k, err))) break;
            resubscribe(k);
        }
        if (k->fatal) {
            /* A client failure leaves the replica sound: what was consumed
             * is applied before the run gives up. */
            if (k->fatal == CDC_EKAFKA && (k->cur->n || k->fl->n)) {
                cdc_error_t fe = {0};
                flush(k, &fe);
            }
            drop_pending(k);
            rc = cdc__err(err, k->fatal, "%s", k->fatal_msg);
            break;
        }
        if (k->stop && *k->stop) {
            rc = flush(k, err);
            break;
        }
        commit_positions(k, 0);
        wake_fetcher(k);
        int timeout = POLL_MS;
        if (k->cur->n) {
            int64_t left = k->deadline_ms - mono_ms();
            if (left <= 0) {
                if ((rc = flush(k, err))) break;
                continue;
            }
            if (left < timeout) timeout = (int)left;
        }
        /* A batch being decoded waits at most batch_ms for the next one to
         * fill, then it is applied by itself. */
        if (k->fl->n) {
            int64_t left = k->fl_deadline_ms - mono_ms();
            if (left < timeout) timeout = left > 0 ? (int)left : 0;
        }
        if (k->wake_wanted) {
            int64_t left = k->wake_at_ms - mono_ms();
            if (left < timeout) timeout = left > 1 ? (int)left : 1;
        }
        /* Records already fetched are taken many at a time, with one lock
         * of the consumer's queue (a lock per record took a fifth of this
         * thread's time on a backlog); waiting for a record, one. */
        rd_kafka_message_t *ms[TAKE_MAX];
        size_t room = k->batch_max - k->cur->n < TAKE_MAX ? k->batch_max - k->cur->n : TAKE_MAX;
        ssize_t got = rd_kafka_consume_batch_queue(k->q, 0, ms, room);
        if (got <= 0) {
            int64_t w0 = k->wake_wanted ? mono_ms() : 0;
            rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, timeout);
            if (w0) k->wake_waited_ms += mono_ms() - w0;
            if (!m) {
                if (k->fl->n && mono_ms() >= k->fl_deadline_ms && (rc = finish_decoding(k, err))) {
                    drop_pending(k);
                    break;
                }
                continue;
            }
            ms[0] = m;
            got = 1;
        }
        for (ssize_t i = 0; i < got; i++) {
            const char *rt = k->reassigned_topic;
            if (!rc && !k->fatal && !k->reassigned &&
                !(rt && ms[i]->partition == k->reassigned_partition && ms[i]->rkt &&
                  !strcmp(rd_kafka_topic_name(ms[i]->rkt), rt)))
                rc = take(k, ms[i], err);
            else rd_kafka_message_destroy(ms[i]); /* after a reassignment: fetched again */
        }
        k->reassigned = 0;
        k->reassigned_topic = NULL;
        if (rc) break;
    }
    commit_positions(k, 1);
    info_line(k, 1);
    if (k->wakes)
        klog(k, CDC_LOG_DEBUG, "the fetcher was woken %llu times; %lld ms waited for records the broker had",
             (unsigned long long)k->wakes, (long long)k->wake_waited_ms);
    return rc;
}

void cdc_kafka_stats(const cdc_kafka_t *k, cdc_kafka_stats_t *out)
{
    if (!k || !out) return;
    *out = k->stats;
}

void cdc_kafka_close(cdc_kafka_t *k)
{
    if (!k) return;
    /* Records not applied by cdc_kafka_run are dropped: the replica's
     * positions say where to start again. */
    drop_pending(k);
    k->closing = 1;
    if (k->rk) {
        rd_kafka_consumer_close(k->rk);
        if (k->q) rd_kafka_queue_destroy(k->q);
        rd_kafka_destroy(k->rk);
    }
    kafka_free(k);
}

/* ---- Watermarks for status ---- */

static void quiet_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)level, (void)fac, (void)buf;
}

int cdc_kafka_watermarks(const char *brokers, const char *topic, int32_t partition, int timeout_ms,
                         int64_t *low, int64_t *high, cdc_error_t *err)
{
    if (!brokers) return cdc__err(err, CDC_EINVAL, "cdc_kafka_watermarks: bad arguments");
    return cdc_kafka_watermarks_config(brokers, NULL, topic, partition, timeout_ms, low, high, err);
}

/* A short-lived client of the brokers (or of config_file's, see
 * cdc_kafka_watermarks_config): a producer that sends nothing and joins no
 * group.  *boot receives the bootstrap servers, for messages. */
static int short_client(const char *brokers, const char *config_file, rd_kafka_t **out, char *boot, size_t bootsz,
                        cdc_error_t *err)
{
    char es[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, quiet_log_cb);
    int set_reset = 0, rc;
    /* The ingest's file as it is (security.protocol, sasl.*, ssl.*): the
     * client is a producer that sends nothing, so the file's consumer
     * properties (group.id, ...) are set and ignored, and no group is
     * looked up or joined. */
    if (config_file && (rc = conf_file(NULL, conf, config_file, &set_reset, err))) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    if (brokers && rd_kafka_conf_set(conf, "bootstrap.servers", brokers, es, sizeof es) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return cdc__err(err, CDC_EINVAL, "brokers %s: %s", brokers, es);
    }
    size_t bl = bootsz;
    if (rd_kafka_conf_get(conf, "bootstrap.servers", boot, &bl) != RD_KAFKA_CONF_OK || !boot[0]) {
        rd_kafka_conf_destroy(conf);
        return cdc__err(err, CDC_EINVAL, "%s: no bootstrap.servers, and no brokers given", config_file);
    }
    /* One connection attempt per broker within the timeout is enough. */
    rd_kafka_conf_set(conf, "socket.connection.setup.timeout.ms", "3000", es, sizeof es);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, es, sizeof es);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return cdc__err(err, CDC_EKAFKA, "brokers %s: %s", boot, es);
    }
    *out = rk;
    return 0;
}

int cdc_kafka_watermarks_config(const char *brokers, const char *config_file, const char *topic,
                                int32_t partition, int timeout_ms, int64_t *low, int64_t *high, cdc_error_t *err)
{
    if (!topic || !low || !high || (!brokers && !config_file))
        return cdc__err(err, CDC_EINVAL, "cdc_kafka_watermarks: bad arguments");
    *low = *high = -1;
    if (timeout_ms <= 0) timeout_ms = 5000;
    char boot[512];
    rd_kafka_t *rk;
    int rc = short_client(brokers, config_file, &rk, boot, sizeof boot, err);
    if (rc) return rc;
    brokers = boot;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic, partition, low, high, timeout_ms);
    rd_kafka_destroy(rk);
    if (e) {
        *low = *high = -1;
        return cdc__err(err, CDC_EKAFKA, "%s[%d] at %s: watermarks: %s", topic, (int)partition, brokers,
                        rd_kafka_err2str(e));
    }
    return 0;
}

int cdc_kafka_topic_config(const char *brokers, const char *config_file, const char *const *topics, size_t n,
                           const char *name, int timeout_ms, char **values, cdc_error_t *err)
{
    if (!topics || !name || !values || (!brokers && !config_file))
        return cdc__err(err, CDC_EINVAL, "cdc_kafka_topic_config: bad arguments");
    for (size_t i = 0; i < n; i++) values[i] = NULL;
    if (!n) return 0;
    if (timeout_ms <= 0) timeout_ms = 5000;
    char boot[512], es[512];
    rd_kafka_t *rk;
    int rc = short_client(brokers, config_file, &rk, boot, sizeof boot, err);
    if (rc) return rc;
    /* One request for every topic (a replica of a thousand tables asks once). */
    rd_kafka_ConfigResource_t **res = cdc__calloc(n, sizeof *res);
    for (size_t i = 0; i < n; i++) res[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topics[i]);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    rd_kafka_AdminOptions_set_request_timeout(ao, timeout_ms, es, sizeof es);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, res, n, ao, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
    if (!ev) {
        rc = cdc__err(err, CDC_EKAFKA, "%s: no answer to describe configs in %d ms", boot, timeout_ms);
    } else if (rd_kafka_event_error(ev)) {
        rc = cdc__err(err, CDC_EKAFKA, "%s: describe configs: %s", boot, rd_kafka_event_error_string(ev));
    } else {
        const rd_kafka_DescribeConfigs_result_t *r = rd_kafka_event_DescribeConfigs_result(ev);
        size_t nr = 0;
        const rd_kafka_ConfigResource_t **rs = r ? rd_kafka_DescribeConfigs_result_resources(r, &nr) : NULL;
        for (size_t i = 0; i < n && !rc; i++) {
            /* the answer of topic i, found by its name */
            const rd_kafka_ConfigResource_t *one = NULL;
            for (size_t j = 0; j < nr && !one; j++)
                if (!strcmp(rd_kafka_ConfigResource_name(rs[j]), topics[i])) one = rs[j];
            if (!one || rd_kafka_ConfigResource_error(one)) {
                rc = cdc__err(err, CDC_EKAFKA, "%s at %s: describe configs: %s", topics[i], boot,
                              one ? rd_kafka_ConfigResource_error_string(one) : "no answer for the topic");
                break;
            }
            size_t ne = 0;
            const rd_kafka_ConfigEntry_t **ents = rd_kafka_ConfigResource_configs(one, &ne);
            for (size_t e = 0; e < ne; e++)
                if (!strcmp(rd_kafka_ConfigEntry_name(ents[e]), name)) {
                    const char *v = rd_kafka_ConfigEntry_value(ents[e]);
                    values[i] = cdc__strdup(v ? v : "");
                    break;
                }
        }
        if (rc)
            for (size_t i = 0; i < n; i++) free(values[i]), values[i] = NULL;
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(ao);
    for (size_t i = 0; i < n; i++) rd_kafka_ConfigResource_destroy(res[i]);
    free(res);
    rd_kafka_destroy(rk);
    return rc;
}
