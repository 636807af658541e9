/*
 * test_kafka_gap.c: the Kafka source when the record after the replica's
 * stored position is gone from the topic (retention deleted it before it
 * was read: a consumer stopped longer than retention.ms, or a partition
 * that outgrew retention.bytes).
 *
 * The replica's positions say that every record up to them is reflected.
 * Here the consumer resumes at the stored offset + 1, the broker answers
 * OFFSET_OUT_OF_RANGE, and librdkafka resets to the partition's first
 * offset (the library sets auto.offset.reset=earliest): without a word
 * beyond a librdkafka warning in the log, the run applies what follows the
 * gap, stores positions past records it never read, and returns 0.  The
 * replica then differs from the source and nothing tells the operator.
 * What the test asks for: the gap is not silent.  Either the run stops with
 * an error and the position stays where the data is, or the skipped range
 * is recorded (a dead letter naming it).
 *
 * librdkafka's mock cluster keeps the last 5 MiB of each partition, so
 * producing 8 MB of incompressible rows after the first run drops the
 * records the replica has not read yet.
 *
 * The library stops the run (auto.offset.reset=error by default) with an
 * error naming the partition, and the position stays where the data is.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "testutil.h"

#define TOPIC "gap.public.items"
#define TABLE "public.items"

typedef struct gap_run {
    cdc_store_t *st;
    int64_t until;
    volatile int stop;
    int warnings;
    char last_warning[512];
} gap_run;

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    if (getenv("CDC_TEST_VERBOSE")) fprintf(stderr, "rdkafka(test) %d %s: %s\n", level, fac, buf);
}

static void gap_log(void *opaque, int level, const char *facility, const char *msg)
{
    gap_run *g = opaque;
    if (getenv("CDC_TEST_VERBOSE")) fprintf(stderr, "[%d] %s: %s\n", level, facility, msg);
    if (level <= CDC_LOG_WARN) {
        g->warnings++;
        snprintf(g->last_warning, sizeof g->last_warning, "%s", msg);
    }
}

static void gap_on_batch(void *opaque, const cdc_kafka_batch_t *b)
{
    gap_run *g = opaque;
    int64_t pos = -1;
    cdc_store_position(g->st, TOPIC, 0, &pos, NULL);
    if (pos >= g->until) g->stop = 1;
}

static void *gap_watchdog(void *arg)
{
    gap_run *g = arg;
    for (int i = 0; i < 300 && !g->stop; i++) usleep(100000);
    g->stop = 1;
    return NULL;
}

/* Consumes TOPIC in a new group until the position reaches g->until (or 30 s). */
static int gap_consume(gap_run *g, const char *boot, const char *group, cdc_error_t *e)
{
    static const char *topics[] = {TOPIC};
    static const cdc_kafka_property_t props[] = {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "300"}};
    cdc_kafka_options_t o = {.brokers = boot, .topics = topics, .ntopics = 1, .group = group,
                             .batch_max_events = 1000, .batch_max_ms = 100, .properties = props, .nproperties = 2,
                             .log = gap_log, .log_opaque = g, .stop = &g->stop, .on_batch = gap_on_batch,
                             .on_batch_opaque = g};
    cdc_kafka_t *k = NULL;
    cr_assert_eq(cdc_kafka_open(g->st, &o, &k, e), 0, "cdc_kafka_open: %s", e->msg);
    g->stop = 0;
    pthread_t th;
    pthread_create(&th, NULL, gap_watchdog, g);
    int rc = cdc_kafka_run(k, e);
    g->stop = 1;
    pthread_join(th, NULL);
    cdc_kafka_close(k);
    return rc;
}

/* One update of key i % 50 with a padding of padlen random letters. */
static void gap_produce(rd_kafka_t *p, int i, int padlen)
{
    char key[64], *val = malloc((size_t)padlen + 300);
    snprintf(key, sizeof key, "{\"id\":%d}", i % 50);
    int n = sprintf(val, "{\"op\":\"u\",\"after\":{\"id\":%d,\"v\":%d,\"pad\":\"", i % 50, i);
    for (int j = 0; j < padlen; j++) val[n++] = (char)('a' + rand() % 26);
    n += sprintf(val + n, "\"},\"source\":{\"schema\":\"public\",\"table\":\"items\",\"lsn\":%d}}", 1000 + i);
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(0),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, strlen(key)),
                                    RD_KAFKA_V_VALUE(val, (size_t)n), RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        rd_kafka_poll(p, 10);
    cr_assert_eq(err, 0, "produce: %s", rd_kafka_err2str(err));
    free(val);
}

Test(kafka_gap, a_stored_position_below_the_log_start_is_not_skipped_silently, .timeout = 120)
{
    char es[512];
    rd_kafka_conf_t *hc = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(hc, quiet_log);
    rd_kafka_t *host = rd_kafka_new(RD_KAFKA_PRODUCER, hc, es, sizeof es);
    cr_assert_not_null(host, "%s", es);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(host, 1);
    cr_assert_not_null(mc);
    const char *boot = rd_kafka_mock_cluster_bootstraps(mc);
    cr_assert_eq(rd_kafka_mock_topic_create(mc, TOPIC, 1, 1), 0);
    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(pc, quiet_log);
    cr_assert_eq(rd_kafka_conf_set(pc, "bootstrap.servers", boot, es, sizeof es), 0);
    cr_assert_eq(rd_kafka_conf_set(pc, "linger.ms", "5", es, sizeof es), 0);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, pc, es, sizeof es);
    cr_assert_not_null(p, "%s", es);

    /* Offsets 0..9, all read: the replica stores position 9. */
    for (int i = 0; i < 10; i++) gap_produce(p, i, 10);
    cr_assert_eq(rd_kafka_flush(p, 10000), 0);
    char *dir = tu_tmpdir();
    gap_run g = {.st = tu_open(dir), .until = 9};
    cdc_error_t e = {0};
    cr_assert_eq(gap_consume(&g, boot, "gap-1", &e), 0, "first run: %s", e.msg);
    int64_t pos = -1;
    cr_assert_eq(cdc_store_position(g.st, TOPIC, 0, &pos, NULL), 0);
    cr_assert_eq(pos, 9);

    /* 8 MB more while the consumer is away: the oldest unread records go. */
    for (int i = 10; i < 1110; i++) gap_produce(p, i, 7000);
    cr_assert_eq(rd_kafka_flush(p, 30000), 0);
    int64_t lo = -1, hi = -1;
    cr_assert_eq(rd_kafka_query_watermark_offsets(p, TOPIC, 0, &lo, &hi, 10000), 0);
    cr_assert_gt(lo, 10, "the mock kept offset 10 (log %lld..%lld): the test needs a gap", (long long)lo,
                 (long long)hi - 1);

    /* The second run resumes at offset 10, which is gone. */
    g.until = hi - 1;
    int rc = gap_consume(&g, boot, "gap-2", &e);
    cr_assert_eq(cdc_store_position(g.st, TOPIC, 0, &pos, NULL), 0);
    cdc_stats_t s;
    cr_assert_eq(cdc_store_stats(g.st, NULL, &s, NULL), 0);
    int reported = (pos <= 9 && rc != 0) || s.dead_letters > 0;

    /* released before the verdict, so that a failure leaks nothing */
    cdc_store_close(g.st);
    tu_rmrf(dir);
    free(dir);
    rd_kafka_destroy(p);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(host);
    cr_assert(reported,
              "offsets 10..%lld were deleted before the replica read them, yet the run returned %d, stored position "
              "%lld (it claims every record up to it) and wrote %llu dead letters; %d warnings, the last: %s",
              (long long)lo - 1, rc, (long long)pos, (unsigned long long)s.dead_letters, g.warnings, g.last_warning);
}
