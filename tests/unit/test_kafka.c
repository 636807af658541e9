/*
 * test_kafka.c: unit tests of the Kafka source (ingest/kafka.c) and of
 * `cdcstore ingest`, against librdkafka's mock cluster (rdkafka_mock.h), which
 * runs a Kafka protocol broker inside the test process on a loopback port.
 *
 * What is checked: the pipeline document's events produced to a mock topic
 * end in the expected table; batches respect their bounds; a consumer closed
 * mid-way and reopened resumes from the replica's stored position (and the
 * group's committed offsets, bogus on purpose, are ignored); the stop flag
 * applies the pending batch; --from-beginning replays without changing a row;
 * two consumers of one group split four partitions through a rebalance and
 * every partition's final owner holds the expected rows; a topic pattern
 * (--topic-regex) consumes the matching topics and no other; a broker outage is
 * survived with throttled logging; property files are parsed and secrets are
 * never shown; end-to-end latency is measured from the events' source ts_ms;
 * and the command's exit statuses (0 on SIGTERM, 3 with dead letters) and its
 * recovery after SIGKILL.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "testutil.h"
#include "store.h"

#define TOPIC "shop.public.orders"
#define TABLE "public.orders"
#define DOC_EVENTS "tests/data/doc/events.jsonl"
#define DOC_N 11

static const char *const doc_expected = "order_id,status,amount\n1,shipped,25.00\n3,paid,60.00\n4,paid,15.00\n";
/* ---- The mock cluster ---- */

typedef struct mock {
    rd_kafka_t *host;   /* the handle the mock cluster lives in */
    rd_kafka_mock_cluster_t *mc;
    char bootstraps[256];
    rd_kafka_t *prod;
} mock;

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    if (getenv("CDC_TEST_VERBOSE")) fprintf(stderr, "rdkafka(test) %d %s: %s\n", level, fac, buf);
}

static rd_kafka_t *new_client(rd_kafka_type_t type, const char *bootstraps, const char *group)
{
    char es[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    if (bootstraps) cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps, es, sizeof es), 0);
    if (group) cr_assert_eq(rd_kafka_conf_set(conf, "group.id", group, es, sizeof es), 0);
    if (type == RD_KAFKA_PRODUCER) cr_assert_eq(rd_kafka_conf_set(conf, "linger.ms", "0", es, sizeof es), 0);
    rd_kafka_t *rk = rd_kafka_new(type, conf, es, sizeof es);
    cr_assert_not_null(rk, "rd_kafka_new: %s", es);
    return rk;
}

static void mock_start(mock *m, const char *topic, int nparts)
{
    memset(m, 0, sizeof *m);
    m->host = new_client(RD_KAFKA_PRODUCER, NULL, NULL);
    m->mc = rd_kafka_mock_cluster_new(m->host, 1);
    cr_assert_not_null(m->mc);
    snprintf(m->bootstraps, sizeof m->bootstraps, "%s", rd_kafka_mock_cluster_bootstraps(m->mc));
    if (topic) cr_assert_eq(rd_kafka_mock_topic_create(m->mc, topic, nparts, 1), 0);
    m->prod = new_client(RD_KAFKA_PRODUCER, m->bootstraps, NULL);
}

static void mock_stop(mock *m)
{
    if (m->prod) {
        rd_kafka_flush(m->prod, 10000);
        rd_kafka_destroy(m->prod);
    }
    if (m->mc) rd_kafka_mock_cluster_destroy(m->mc);
    if (m->host) rd_kafka_destroy(m->host);
    memset(m, 0, sizeof *m);
}

/* Produces one record (value NULL: a tombstone) to partition (or
 * RD_KAFKA_PARTITION_UA: by key) and waits until it is written. */
static void produce(mock *m, const char *topic, int32_t partition, const char *key, const char *value)
{
    rd_kafka_resp_err_t e = rd_kafka_producev(
        m->prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(key, key ? strlen(key) : 0), RD_KAFKA_V_VALUE((void *)value, value ? strlen(value) : 0),
        RD_KAFKA_V_END);
    cr_assert_eq(e, 0, "produce: %s", rd_kafka_err2str(e));
}

static void produce_flush(mock *m)
{
    cr_assert_eq(rd_kafka_flush(m->prod, 10000), 0, "produce flush timed out");
}

/* Produces the pipeline document's events (key and payload of each line) to
 * partition 0 of TOPIC, in file order: offsets 0..10. */
static void produce_doc(mock *m, const char *topic)
{
    FILE *f = fopen(DOC_EVENTS, "r");
    cr_assert_not_null(f, "%s: %s (run the tests from the repository root)", DOC_EVENTS, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        cr_assert_not_null(j);
        cJSON *key = cJSON_GetObjectItem(j, "key"), *payload = cJSON_GetObjectItem(j, "payload");
        produce(m, topic, 0, cJSON_IsString(key) ? key->valuestring : NULL,
                cJSON_IsString(payload) ? payload->valuestring : NULL);
        cJSON_Delete(j);
        n++;
    }
    free(line);
    fclose(f);
    cr_assert_eq(n, DOC_N);
    produce_flush(m);
}

/* ---- Running a consumer ---- */

typedef struct run_ctx {
    volatile int stop;
    cdc_store_t *st;
    const char *topic;
    int nparts;
    /* Stop conditions (checked after each batch); 0/-1 = unused. */
    uint64_t until_read;      /* records read by this consumer */
    int64_t until_pos;        /* stored position of every partition 0..nparts-1 */
    uint64_t until_batches;
    int reached;
    /* Observations. */
    size_t max_batch;
    uint64_t batches;
    uint64_t latencies;
    int64_t min_latency, max_latency;
    uint64_t klatencies;      /* per record, from its Kafka timestamp */
    int64_t max_klatency;
    pthread_mutex_t mu;
    int64_t pos[8];           /* stored positions after the last batch */
    /* Log lines. */
    char *log;
    size_t log_len;
    int warnings;
} run_ctx;

static void ctx_init(run_ctx *c, cdc_store_t *st, const char *topic, int nparts)
{
    memset(c, 0, sizeof *c);
    c->st = st;
    c->topic = topic;
    c->nparts = nparts;
    c->until_pos = -1;
    c->min_latency = INT64_MAX;
    pthread_mutex_init(&c->mu, NULL);
    for (int i = 0; i < 8; i++) c->pos[i] = -1;
}

static void ctx_free(run_ctx *c)
{
    free(c->log);
    pthread_mutex_destroy(&c->mu);
}

static void test_log(void *opaque, int level, const char *facility, const char *msg)
{
    run_ctx *c = opaque;
    if (getenv("CDC_TEST_VERBOSE")) fprintf(stderr, "[%d] %s: %s\n", level, facility, msg);
    pthread_mutex_lock(&c->mu);
    size_t n = strlen(facility) + strlen(msg) + 16;
    c->log = realloc(c->log, c->log_len + n + 1);
    c->log_len += (size_t)snprintf(c->log + c->log_len, n + 1, "%d %s: %s\n", level, facility, msg);
    if (level <= CDC_LOG_WARN) c->warnings++;
    pthread_mutex_unlock(&c->mu);
}

static void test_on_batch(void *opaque, const cdc_kafka_batch_t *b)
{
    run_ctx *c = opaque;
    pthread_mutex_lock(&c->mu);
    if (b->records > c->max_batch) c->max_batch = b->records;
    c->batches++;
    c->latencies += b->nlatency;
    for (size_t i = 0; i < b->nlatency; i++) {
        if (b->latency_ms[i] < c->min_latency) c->min_latency = b->latency_ms[i];
        if (b->latency_ms[i] > c->max_latency) c->max_latency = b->latency_ms[i];
    }
    c->klatencies += b->nkafka_latency;
    for (size_t i = 0; i < b->nkafka_latency; i++)
        if (b->kafka_latency_ms[i] > c->max_klatency) c->max_klatency = b->kafka_latency_ms[i];
    int done = 0;
    for (int p = 0; p < c->nparts && p < 8; p++) cdc_store_position(c->st, c->topic, p, &c->pos[p], NULL);
    if (c->until_read && b->run->total.read >= c->until_read) done = 1;
    if (c->until_batches && b->run->batches >= c->until_batches) done = 1;
    if (c->until_pos >= 0) {
        done = 1;
        for (int p = 0; p < c->nparts; p++)
            if (c->pos[p] < c->until_pos) done = 0;
    }
    if (done) {
        c->reached = 1;
        c->stop = 1;
    }
    pthread_mutex_unlock(&c->mu);
}

/* o's properties, then name=value, in props (room for 8 in all). */
static void kopts_add(cdc_kafka_options_t *o, cdc_kafka_property_t *props, const char *name, const char *value)
{
    if (o->properties != props) memcpy(props, o->properties, o->nproperties * sizeof *props);
    cr_assert_lt(o->nproperties, 8);
    props[o->nproperties++] = (cdc_kafka_property_t){name, value};
    o->properties = props;
}

static cdc_kafka_options_t kopts(run_ctx *c, const mock *m, const char *group, size_t batch, int ms)
{
    static const cdc_kafka_property_t props[] = {
        {"session.timeout.ms", "6000"},
        {"heartbeat.interval.ms", "300"},
        {"topic.metadata.refresh.interval.ms", "1000"},
        {"reconnect.backoff.max.ms", "1000"},
    };
    static const char *topics[1];
    topics[0] = c->topic;
    cdc_kafka_options_t o = {0};
    o.brokers = m->bootstraps;
    o.topics = topics;
    o.ntopics = 1;
    o.group = group;
    o.batch_max_events = batch;
    o.batch_max_ms = ms;
    o.properties = props;
    o.nproperties = sizeof props / sizeof props[0];
    o.log = test_log;
    o.log_opaque = c;
    o.stop = &c->stop;
    o.on_batch = test_on_batch;
    o.on_batch_opaque = c;
    return o;
}

typedef struct watchdog {
    run_ctx *c;
    int ms;
    int after_assigned_ms; /* > 0: stop this long after the log says "assigned", ms at most in all */
    volatile int done;
    pthread_t th;
} watchdog;

static void *watchdog_main(void *arg)
{
    watchdog *w = arg;
    int t = 0;
    if (w->after_assigned_ms > 0) {
        for (; t < w->ms && !w->done; t += 10) {
            pthread_mutex_lock(&w->c->mu);
            int assigned = w->c->log && strstr(w->c->log, "assigned");
            pthread_mutex_unlock(&w->c->mu);
            if (assigned) break;
            usleep(10000);
        }
        int until = t + w->after_assigned_ms;
        if (until < w->ms) w->ms = until;
    }
    for (; t < w->ms && !w->done; t += 10) usleep(10000);
    w->c->stop = 1;
    return NULL;
}

/* Runs k until the consumer has its partitions and after_ms more have
 * passed (at most ms in all), then sets the stop flag: for a test whose
 * only way out is the stop.  The group's first assignment takes the mock
 * cluster about 3 s, and longer on a loaded machine (a fixed 12 s run once
 * ended before it came); a fetch from the mock takes milliseconds. */
static int run_assigned(cdc_kafka_t *k, run_ctx *c, int after_ms, int ms, cdc_error_t *e)
{
    watchdog w = {.c = c, .ms = ms, .after_assigned_ms = after_ms};
    pthread_create(&w.th, NULL, watchdog_main, &w);
    int rc = cdc_kafka_run(k, e);
    w.done = 1;
    pthread_join(w.th, NULL);
    return rc;
}

/* Runs k until a stop condition of c is met or ms milliseconds passed. */
static int run_for(cdc_kafka_t *k, run_ctx *c, int ms, cdc_error_t *e)
{
    watchdog w = {.c = c, .ms = ms};
    pthread_create(&w.th, NULL, watchdog_main, &w);
    int rc = cdc_kafka_run(k, e);
    w.done = 1;
    pthread_join(w.th, NULL);
    return rc;
}

static cdc_kafka_t *kopen(cdc_store_t *st, const cdc_kafka_options_t *o)
{
    cdc_kafka_t *k = NULL;
    cdc_error_t e = {0};
    int rc = cdc_kafka_open(st, o, &k, &e);
    cr_assert_eq(rc, 0, "cdc_kafka_open: %s", e.msg);
    return k;
}

/* One life of a consumer: opens it with o, runs it until c's stop
 * condition (at most ms), asserts that the run returned 0 and reached the
 * condition, closes it and returns its figures. */
static cdc_kafka_stats_t live(cdc_store_t *st, const cdc_kafka_options_t *o, run_ctx *c, int ms)
{
    cdc_kafka_t *k = kopen(st, o);
    cdc_error_t e = {0};
    cr_assert_eq(run_for(k, c, ms, &e), 0, "run: %s\nlog:\n%s", e.msg, c->log ? c->log : "");
    cr_assert(c->reached, "the stop condition was not reached; log:\n%s", c->log ? c->log : "");
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cdc_kafka_close(k);
    return s;
}

static int64_t position(cdc_store_t *st, const char *topic, int32_t p)
{
    int64_t off = -2;
    cr_assert_eq(cdc_store_position(st, topic, p, &off, NULL), 0);
    return off;
}

/* The group's committed offset of (topic, p), -1001 when none. */
static int64_t committed(const mock *m, const char *group, const char *topic, int32_t p)
{
    rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, m->bootstraps, group);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, p);
    rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 10000);
    cr_assert_eq(e, 0, "committed: %s", rd_kafka_err2str(e));
    int64_t off = l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return off;
}

/* Commits offset for the group from an outside client, as a stale or
 * mistaken commit would be. */
static void commit_bogus(const mock *m, const char *group, const char *topic, int32_t p, int64_t offset)
{
    rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, m->bootstraps, group);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, p)->offset = offset;
    rd_kafka_resp_err_t e = rd_kafka_commit(rk, l, 0);
    cr_assert_eq(e, 0, "commit: %s", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    cr_assert_eq(committed(m, group, topic, p), offset);
}

/* The view, and order 2 kept as a tombstone with the delete's version (the
 * later stale update at LSN 155 did not bring it back). */
static void check_doc_table(cdc_store_t *st)
{
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, doc_expected);
    free(csv);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, TABLE, "[2]", &row, NULL), 0);
    cr_assert_eq(row.deleted, 1);
    cr_assert_eq(row.lsn, 160);
}

TestSuite(kafka, .timeout = 120);

/* ---- Consuming ---- */

Test(kafka, consumes_the_document_events_in_bounded_batches)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_read = DOC_N;
    cdc_kafka_options_t o = kopts(&c, &m, "g-consume", 3, 50);
    cdc_kafka_stats_t s = live(st, &o, &c, 30000);
    cr_assert_eq(s.total.read, DOC_N);
    cr_assert_eq(s.total.tombstones, 1);
    cr_assert_eq(s.total.dead_letters, 0);
    cr_assert_leq(c.max_batch, 3, "a batch had %zu records", c.max_batch);
    cr_assert_geq(s.batches, 4);
    cr_assert_eq(position(st, TOPIC, 0), DOC_N - 1);
    check_doc_table(st);
    /* Committed for monitoring: the next offset to read. */
    cr_assert_eq(committed(&m, "g-consume", TOPIC, 0), DOC_N);
    /* The info line was logged. */
    cr_assert_not_null(strstr(c.log, "records in"), "%s", c.log);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* The envelope of an order's create (exists 0) or update with status
 * "s<v>" and amount "<v % 1000>.00", at lsn. */
static char *order_upsert(int k, int v, int exists, unsigned long long lsn)
{
    char after[96];
    snprintf(after, sizeof after, "{\"order_id\":%d,\"status\":\"s%d\",\"amount\":\"%d.00\"}", k, v, v % 1000);
    return tu_env(exists ? "u" : "c", NULL, after, lsn, "false");
}

/* The export of orders 1..nkey whose state[k] >= 0 (those order_upsert
 * wrote last). */
static char *orders_csv(const int *state, int nkey)
{
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    fprintf(f, "order_id,status,amount\n");
    for (int i = 1; i <= nkey; i++)
        if (state[i] >= 0) fprintf(f, "%d,s%d,%d.00\n", i, state[i], state[i] % 1000);
    fclose(f);
    return csv;
}

/* A backlog in batches of 1,000: 4,500 records over 300 keys (updates,
 * deletes with their tombstones, a key's events strictly in order) give the
 * replica exactly the final state, every record counted once, batches never
 * above the bound, and the position at the last offset; then the same topic
 * read again from the beginning changes nothing. */
Test(kafka, a_backlog_in_large_batches_gives_the_final_state_and_replays_change_nothing)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    enum { NREC = 4500, NKEY = 300 };
    int state[NKEY + 1];
    for (int i = 0; i <= NKEY; i++) state[i] = -1;
    unsigned long long lsn = 5000;
    uint64_t x = 88172645463325252ULL;
    int produced = 0, tombstones = 0;
    while (produced < NREC) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = 1 + (int)(x % NKEY);
        char key[32], *val;
        snprintf(key, sizeof key, "{\"order_id\":%d}", k);
        lsn += 8;
        if ((x >> 20) % 10 == 0 && state[k] >= 0 && produced + 2 <= NREC) {
            val = tu_env("d", key, NULL, lsn, "false");
            produce(&m, TOPIC, 0, key, val);
            produce(&m, TOPIC, 0, key, NULL);
            state[k] = -1;
            produced += 2;
            tombstones++;
        } else {
            int v = (int)((x >> 8) % 100000);
            val = order_upsert(k, v, state[k] >= 0, lsn);
            produce(&m, TOPIC, 0, key, val);
            state[k] = v;
            produced++;
        }
        free(val);
    }
    produce_flush(&m);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_read = NREC;
    cdc_kafka_options_t o = kopts(&c, &m, "g-backlog", 1000, 50);
    cdc_kafka_stats_t s = live(st, &o, &c, 60000);
    cr_assert_eq(s.total.read, NREC);
    cr_assert_eq(s.total.tombstones, (uint64_t)tombstones);
    cr_assert_eq(s.total.dead_letters, 0);
    cr_assert_leq(c.max_batch, 1000, "a batch had %zu records", c.max_batch);
    cr_assert_geq(s.batches, 5);
    cr_assert_eq(position(st, TOPIC, 0), NREC - 1);
    char *expect = orders_csv(state, NKEY);
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, expect);
    free(csv);
    /* again from the beginning, in another group: nothing changes */
    run_ctx c2;
    ctx_init(&c2, st, TOPIC, 1);
    c2.until_read = NREC;
    cdc_kafka_options_t o2 = kopts(&c2, &m, "g-backlog-again", 1000, 50);
    o2.from_beginning = 1;
    s = live(st, &o2, &c2, 60000);
    cr_assert_eq(s.total.applied, 0, "the replay applied %llu", (unsigned long long)s.total.applied);
    csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, expect);
    free(csv);
    free(expect);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    ctx_free(&c2);
    mock_stop(&m);
}

/* librdkafka stops fetching while the consumer's queue is at its limits
 * and, by itself, looks again only a second later; the consumer wakes the
 * fetcher once the queue is down to half of them (wake_fetcher).  With a
 * limit of 10 records and record batches of 20 (a fetch of the mock brings
 * one), the 3,000 records below need 150 refills: a second each without the
 * wake (150 s), 5-11 s in all with it here.  The bound of 60 s is far from
 * either. */
Test(kafka, a_backlog_larger_than_the_prefetch_queue_is_read_without_pauses)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    enum { NREC = 3000, NKEY = 500 };
    int state[NKEY + 1];
    for (int i = 0; i <= NKEY; i++) state[i] = -1;
    for (int i = 0; i < NREC; i++) {
        int k = 1 + i % NKEY;
        char key[32];
        snprintf(key, sizeof key, "{\"order_id\":%d}", k);
        char *val = order_upsert(k, i, state[k] >= 0, 9000 + 8 * (unsigned long long)i);
        produce(&m, TOPIC, 0, key, val);
        free(val);
        state[k] = i;
        if (i % 20 == 19) produce_flush(&m); /* record batches of 20 */
    }
    produce_flush(&m);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_read = NREC;
    cdc_kafka_options_t o = kopts(&c, &m, "g-prefetch", 1000, 50);
    cdc_kafka_property_t props[8];
    kopts_add(&o, props, "queued.min.messages", "10");
    kopts_add(&o, props, "queued.max.messages.kbytes", "1024");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cdc_kafka_stats_t s = live(st, &o, &c, 60000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(s.total.read, NREC);
    cr_assert_eq(position(st, TOPIC, 0), NREC - 1);
    char *expect = orders_csv(state, NKEY);
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, expect);
    free(csv);
    free(expect);
    cr_log_info("drained in %.1f s", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* Full batches under a backlog are decoded on a thread of their own while
 * the batch before is applied, so when the stop flag comes a full batch may
 * be consumed and decoded but not applied.  Stopped after 3 batches of 300
 * (over 4 partitions, 6,000 records on 400 keys, each key on one
 * partition), the replica holds exactly the records up to its stored
 * positions: every record the run counted is behind a position, every row
 * is the one the records up to its partition's position give; and a second
 * life reads exactly the records after the positions and ends in the final
 * state. */
Test(kafka, a_stop_between_full_batches_keeps_positions_and_rows_in_step)
{
    mock m;
    mock_start(&m, TOPIC, 4);
    enum { NREC = 6000, NKEY = 400, NP = 4 };
    /* rec_key/rec_val of each partition's offsets, to replay the state. */
    static int rec_key[NP][NREC], rec_val[NP][NREC];
    int count[NP] = {0};
    int last_v[NKEY + 1];
    for (int i = 0; i <= NKEY; i++) last_v[i] = -1;
    unsigned long long lsn = 9000;
    uint64_t x = 2463534242ULL;
    for (int n = 0; n < NREC; n++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = 1 + (int)(x % NKEY), part = k % NP, v;
        char key[32], *val;
        snprintf(key, sizeof key, "{\"order_id\":%d}", k);
        lsn += 8;
        if ((x >> 24) % 8 == 0 && last_v[k] >= 0) {
            val = tu_env("d", key, NULL, lsn, "false");
            v = -1;
        } else {
            v = (int)((x >> 8) % 100000);
            val = order_upsert(k, v, last_v[k] >= 0, lsn);
        }
        produce(&m, TOPIC, part, key, val);
        free(val);
        last_v[k] = v;
        rec_key[part][count[part]] = k;
        rec_val[part][count[part]] = v;
        count[part]++;
    }
    produce_flush(&m);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);

    run_ctx c1;
    ctx_init(&c1, st, TOPIC, NP);
    c1.until_batches = 3;
    cdc_kafka_options_t o1 = kopts(&c1, &m, "g-pipeline", 300, 5000);
    cdc_kafka_stats_t s1 = live(st, &o1, &c1, 60000);
    cr_assert_leq(c1.max_batch, 300, "a batch had %zu records", c1.max_batch);
    uint64_t behind = 0;
    int64_t pos1[NP];
    int exp_v[NKEY + 1];
    for (int i = 0; i <= NKEY; i++) exp_v[i] = -2; /* never written */
    for (int p = 0; p < NP; p++) {
        pos1[p] = position(st, TOPIC, p);
        behind += (uint64_t)(pos1[p] + 1);
        for (int64_t o = 0; o <= pos1[p]; o++) exp_v[rec_key[p][o]] = rec_val[p][o];
    }
    cr_assert_eq(s1.total.read, behind, "the run counted %llu records, the positions are past %llu",
                 (unsigned long long)s1.total.read, (unsigned long long)behind);
    cr_assert_lt(behind, (uint64_t)NREC, "the stop came after the end");
    for (int i = 1; i <= NKEY; i++) {
        char key[32];
        snprintf(key, sizeof key, "{\"order_id\":%d}", i);
        cdc_row_t row;
        int rc = cdc_store_get(st, TABLE, key, &row, NULL);
        if (exp_v[i] == -2) {
            cr_assert_neq(rc, 0, "key %d is stored, and no record up to the positions wrote it", i);
            continue;
        }
        cr_assert_eq(rc, 0, "key %d is missing", i);
        cr_assert_eq(row.deleted, exp_v[i] == -1, "key %d", i);
        if (exp_v[i] >= 0) {
            char want[16];
            int wl = snprintf(want, sizeof want, "s%d", exp_v[i]);
            cr_assert(row.lens[1] == (size_t)wl && !memcmp(row.values[1], want, (size_t)wl), "key %d", i);
        }
    }

    /* Second life: exactly the rest. */
    run_ctx c2;
    ctx_init(&c2, st, TOPIC, NP);
    c2.until_read = NREC - behind;
    cdc_kafka_options_t o2 = kopts(&c2, &m, "g-pipeline", 300, 50);
    cdc_kafka_stats_t s2 = live(st, &o2, &c2, 60000);
    cr_assert_eq(s2.total.read, NREC - behind);
    for (int p = 0; p < NP; p++) cr_assert_eq(position(st, TOPIC, p), count[p] - 1, "partition %d", p);
    char *expect = orders_csv(last_v, NKEY);
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, expect);
    free(csv);
    free(expect);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c1);
    ctx_free(&c2);
    mock_stop(&m);
}

/* A stop while a full batch waits, decoded, for the next one to fill: both
 * are applied, in order.  Applying the one being filled without the full
 * one would store positions past records never applied.  The full batch
 * is in the topic first; once it is consumed, 50 updates trickle in (one
 * every 5 ms, far inside the 5 s bound) and the stop comes. */
typedef struct trickle {
    mock *m;
    run_ctx *c;
    int n;
} trickle;

static void *trickle_main(void *arg)
{
    trickle *t = arg;
    for (int w = 0; w < 3000; w++) {
        pthread_mutex_lock(&t->c->mu);
        int assigned = t->c->log && strstr(t->c->log, "assigned");
        pthread_mutex_unlock(&t->c->mu);
        if (assigned) break;
        usleep(10000);
    }
    usleep(2000000); /* the full batch fetched and handed to the decoder (its bound is 5 s) */
    for (int i = 1; i <= t->n; i++) {
        char key[32], after[96], *val;
        snprintf(key, sizeof key, "{\"order_id\":%d}", i);
        snprintf(after, sizeof after, "{\"order_id\":%d,\"status\":\"late\",\"amount\":\"%d.00\"}", i, i);
        val = tu_env("u", NULL, after, 200000 + (unsigned long long)i, "false");
        produce(t->m, TOPIC, 0, key, val);
        free(val);
        rd_kafka_flush(t->m->prod, 1000);
        usleep(5000);
    }
    usleep(50000);
    t->c->stop = 1;
    return NULL;
}

Test(kafka, a_stop_applies_the_full_batch_before_the_one_being_filled)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    enum { FULL = 300, LATE = 50 };
    for (int k = 1; k <= FULL; k++) {
        char key[32], after[96], *val;
        snprintf(key, sizeof key, "{\"order_id\":%d}", k);
        snprintf(after, sizeof after, "{\"order_id\":%d,\"status\":\"new\",\"amount\":\"%d.00\"}", k, k);
        val = tu_env("c", NULL, after, 1000 + (unsigned long long)k, "false");
        produce(&m, TOPIC, 0, key, val);
        free(val);
    }
    produce_flush(&m);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    cdc_kafka_options_t o = kopts(&c, &m, "g-trickle", FULL, 5000);
    cdc_kafka_t *k = kopen(st, &o);
    trickle t = {&m, &c, LATE};
    pthread_t th;
    pthread_create(&th, NULL, trickle_main, &t);
    cdc_error_t e = {0};
    cr_assert_eq(run_for(k, &c, 60000, &e), 0, "run: %s", e.msg);
    pthread_join(th, NULL);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cdc_kafka_close(k);
    int64_t pos = position(st, TOPIC, 0);
    cr_assert_geq(pos, FULL - 1, "the full batch was not applied; log:\n%s", c.log ? c.log : "");
    cr_assert_eq(s.total.read, (uint64_t)(pos + 1), "read %llu, position %lld", (unsigned long long)s.total.read,
                 (long long)pos);
    cr_assert_eq(s.total.applied, s.total.read);
    /* Rows: every record up to the position, and none after it. */
    int late = (int)(pos + 1 - FULL);
    char *expect = NULL;
    size_t elen = 0;
    FILE *f = open_memstream(&expect, &elen);
    fprintf(f, "order_id,status,amount\n");
    for (int i = 1; i <= FULL; i++) fprintf(f, "%d,%s,%d.00\n", i, i <= late ? "late" : "new", i);
    fclose(f);
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, expect);
    free(csv);
    free(expect);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

Test(kafka, a_batch_is_applied_when_its_time_is_up)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_read = 2;
    /* The count bound is far away: only the time bound can apply the batch. */
    cdc_kafka_options_t o = kopts(&c, &m, "g-time", 100000, 300);
    cdc_kafka_t *k = kopen(st, &o);
    produce(&m, TOPIC, 0, "{\"order_id\":1}",
            "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"new\",\"amount\":\"1.00\"},\"source\":{\"lsn\":10}}");
    produce(&m, TOPIC, 0, "{\"order_id\":2}",
            "{\"op\":\"c\",\"after\":{\"order_id\":2,\"status\":\"new\",\"amount\":\"2.00\"},\"source\":{\"lsn\":11}}");
    produce_flush(&m);
    cdc_error_t e = {0};
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c.reached, "log:\n%s", c.log ? c.log : "");
    cdc_kafka_close(k);
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, "order_id,status,amount\n1,new,1.00\n2,new,2.00\n");
    free(csv);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* ---- Positions ---- */

Test(kafka, closed_midway_and_reopened_resumes_from_the_stored_position)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_error_t e = {0};

    /* First life: one batch of 4 (the time bound is far), then stop. */
    run_ctx c1;
    ctx_init(&c1, st, TOPIC, 1);
    c1.until_batches = 1;
    cdc_kafka_options_t o1 = kopts(&c1, &m, "g-restart", 4, 20000);
    cdc_kafka_t *k1 = kopen(st, &o1);
    cr_assert_eq(run_for(k1, &c1, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c1.reached);
    cdc_kafka_close(k1);
    int64_t p1 = position(st, TOPIC, 0);
    cr_assert_eq(p1, 3, "first life stored %lld", (long long)p1);

    /* Second life, after a reopen of the replica: reads exactly the rest. */
    cdc_store_close(st);
    st = tu_open(dir);
    run_ctx c2;
    ctx_init(&c2, st, TOPIC, 1);
    c2.until_pos = DOC_N - 1;
    cdc_kafka_options_t o2 = kopts(&c2, &m, "g-restart", 3, 50);
    cdc_kafka_stats_t s = live(st, &o2, &c2, 30000);
    cr_assert_eq(s.total.read, (uint64_t)(DOC_N - 1 - p1), "second life read %llu", (unsigned long long)s.total.read);
    cr_assert_not_null(strstr(c2.log, "from offset 4 (stored position 3, its record read again first"), "%s", c2.log);
    check_doc_table(st);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c1);
    ctx_free(&c2);
    mock_stop(&m);
}

/* A topic deleted and created again under the same name (a connector
 * reset; here a new mock cluster with the topic's name): its offsets name
 * other records.  Longer than the replica's position, the record at the
 * position is another (its fingerprint differs); shorter, the topic ends
 * before it.  Either way the consumer says so, forgets the position and
 * reads the new topic from its beginning; the rows stay. */
static void produce_orders(mock *m, int from, int n, int lsn)
{
    for (int i = 0; i < n; i++) {
        char key[64], val[256];
        snprintf(key, sizeof key, "{\"order_id\":%d}", from + i);
        snprintf(val, sizeof val,
                 "{\"op\":\"c\",\"after\":{\"order_id\":%d,\"status\":\"new\",\"amount\":\"1.00\"},"
                 "\"source\":{\"lsn\":%d}}",
                 from + i, lsn + i);
        produce(m, TOPIC, 0, key, val);
    }
    produce_flush(m);
}

Test(kafka, a_topic_created_again_is_read_from_its_beginning)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c1;
    ctx_init(&c1, st, TOPIC, 1);
    c1.until_pos = DOC_N - 1;
    cdc_kafka_options_t o1 = kopts(&c1, &m, "g-recreated", 100, 50);
    live(st, &o1, &c1, 30000);
    cr_assert_eq(position(st, TOPIC, 0), DOC_N - 1);
    check_doc_table(st);
    mock_stop(&m);

    /* longer: 15 records, the one at the position another */
    mock_start(&m, TOPIC, 1);
    produce_orders(&m, 100, 15, 5000);
    run_ctx c2;
    ctx_init(&c2, st, TOPIC, 1);
    c2.until_pos = 14;
    cdc_kafka_options_t o2 = kopts(&c2, &m, "g-recreated", 100, 50);
    cdc_kafka_stats_t s = live(st, &o2, &c2, 30000);
    cr_assert_not_null(strstr(c2.log, "the record at offset 10 is not the one the replica applied there: the topic "
                                      "was deleted and created again"), "%s", c2.log);
    cr_expect_eq(s.total.read, 15, "the new topic read whole: %llu", (unsigned long long)s.total.read);
    cr_expect_eq(position(st, TOPIC, 0), 14);
    char *csv = tu_export(st, TABLE, 0);
    cr_expect(strstr(csv, "\n1,shipped,25.00\n") && strstr(csv, "\n100,new,1.00\n") && strstr(csv, "\n114,new,1.00\n"),
              "the old rows stay, the new topic's are in: %s", csv);
    free(csv);
    mock_stop(&m);

    /* shorter: 5 records, the topic ends before the position */
    mock_start(&m, TOPIC, 1);
    produce_orders(&m, 200, 5, 6000);
    run_ctx c3;
    ctx_init(&c3, st, TOPIC, 1);
    c3.until_pos = 4;
    cdc_kafka_options_t o3 = kopts(&c3, &m, "g-recreated", 100, 50);
    s = live(st, &o3, &c3, 30000);
    cr_assert_not_null(strstr(c3.log, "the topic ends at offset 5, before the replica's position 14"), "%s", c3.log);
    cr_expect_eq(s.total.read, 5);
    cr_expect_eq(position(st, TOPIC, 0), 4);
    csv = tu_export(st, TABLE, 0);
    cr_expect(strstr(csv, "\n204,new,1.00\n") != NULL, "%s", csv);
    free(csv);

    /* the same topic again: its record at the position checked, nothing read again */
    run_ctx c4;
    ctx_init(&c4, st, TOPIC, 1);
    c4.until_pos = 5;
    produce_orders(&m, 300, 1, 7000);
    cdc_kafka_options_t o4 = kopts(&c4, &m, "g-recreated", 100, 50);
    s = live(st, &o4, &c4, 30000);
    cr_expect(!strstr(c4.log, "created again"), "%s", c4.log);
    cr_expect_eq(s.total.read, 1, "only the new record: %llu", (unsigned long long)s.total.read);
    mock_stop(&m);

    /* shorter again, with auto.offset.reset=earliest (the consumer resets
     * to the beginning instead of failing): the first record comes from
     * below the position */
    mock_start(&m, TOPIC, 1);
    produce_orders(&m, 400, 3, 8000);
    run_ctx c5;
    ctx_init(&c5, st, TOPIC, 1);
    c5.until_pos = 2;
    cdc_kafka_options_t o5 = kopts(&c5, &m, "g-recreated", 100, 50);
    cdc_kafka_property_t props5[8];
    memcpy(props5, o5.properties, o5.nproperties * sizeof *props5);
    props5[o5.nproperties] = (cdc_kafka_property_t){"auto.offset.reset", "earliest"};
    o5.properties = props5;
    o5.nproperties++;
    s = live(st, &o5, &c5, 30000);
    cr_assert_not_null(strstr(c5.log, "the topic's first record is at offset 0, below the replica's position 5"), "%s",
                       c5.log);
    cr_expect_eq(position(st, TOPIC, 0), 2);
    csv = tu_export(st, TABLE, 0);
    cr_expect(strstr(csv, "\n402,new,1.00\n") != NULL, "%s", csv);
    free(csv);
    ctx_free(&c5);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c1);
    ctx_free(&c2);
    ctx_free(&c3);
    ctx_free(&c4);
    mock_stop(&m);
}

Test(kafka, the_groups_committed_offset_is_ignored_when_the_replica_has_none)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    /* A committed offset near the end: a consumer that trusted it would
     * read two records and miss the rest. */
    commit_bogus(&m, "g-bogus", TOPIC, 0, 9);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_pos = DOC_N - 1;
    cdc_kafka_options_t o = kopts(&c, &m, "g-bogus", 5, 50);
    cdc_kafka_stats_t s = live(st, &o, &c, 30000);
    cr_assert_eq(s.total.read, DOC_N);
    check_doc_table(st);
    cr_assert_eq(committed(&m, "g-bogus", TOPIC, 0), DOC_N);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* A replica without positions starts each partition at the offset its
 * beginning has at the assignment (asked of the broker, so the first fetch
 * need not wait for librdkafka's offset query).  When the beginning moves
 * before that fetch (retention), the broker answers OFFSET_OUT_OF_RANGE: the
 * partition starts from the beginning again and nothing is lost, where a
 * partition resumed from a stored position stops the run (test_kafka_gap.c).
 * The mock cluster answers the first fetch with that error; the topic has a
 * second, empty partition, which is given again with the first under the
 * eager protocol, alone under the cooperative one.  Now and then librdkafka
 * drops that first answer unseen (1 run in about 40 here: the run then reads
 * everything without the error), so a run whose log shows no restart is
 * made again, each checked in full, up to 5 runs; without the restart every
 * run that meets the error stops with "the records ... are gone". */
static int moved_beginning_once(const char *strategy)
{
    mock m;
    mock_start(&m, TOPIC, 2);
    produce_doc(&m, TOPIC);
    rd_kafka_mock_push_request_errors(m.mc, 1 /* Fetch */, 1, RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_pos = DOC_N - 1;
    cdc_kafka_options_t o = kopts(&c, &m, strategy, 5, 50);
    cdc_kafka_property_t props[8];
    memcpy(props, o.properties, o.nproperties * sizeof *props);
    props[o.nproperties++] = (cdc_kafka_property_t){"partition.assignment.strategy", strategy};
    o.properties = props;
    cdc_kafka_stats_t s = live(st, &o, &c, 30000);
    cr_assert_eq(s.total.read, DOC_N);
    int restarted = strstr(c.log, "the beginning moved past offset 0 before the first read") != NULL;
    check_doc_table(st);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
    return restarted;
}

static void moved_beginning(const char *strategy)
{
    int runs = 0, restarted = 0;
    while (!restarted && runs < 5) {
        restarted = moved_beginning_once(strategy);
        runs++;
    }
    cr_assert(restarted, "%s: the first fetch's OFFSET_OUT_OF_RANGE reached no partition in %d runs", strategy, runs);
}

Test(kafka, a_beginning_that_moves_before_the_first_read_is_read_from_again) { moved_beginning("range"); }

Test(kafka, a_beginning_that_moves_is_read_from_again_under_cooperative_rebalancing)
{
    moved_beginning("cooperative-sticky");
}

Test(kafka, the_stored_position_wins_over_a_lower_committed_offset)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_error_t e = {0};
    /* The group to resume with says offset 0 (the mock cluster takes commits
     * from outside only for a group without members, so this comes first). */
    commit_bogus(&m, "g-low", TOPIC, 0, 0);
    run_ctx c1;
    ctx_init(&c1, st, TOPIC, 1);
    c1.until_batches = 1;
    cdc_kafka_options_t o1 = kopts(&c1, &m, "g-low-first", 6, 20000);
    cdc_kafka_t *k1 = kopen(st, &o1);
    cr_assert_eq(run_for(k1, &c1, 30000, &e), 0, "run: %s", e.msg);
    cdc_kafka_close(k1);
    cr_assert_eq(position(st, TOPIC, 0), 5);
    /* Resuming in the rewound group: ignored, the replica says 5. */
    run_ctx c2;
    ctx_init(&c2, st, TOPIC, 1);
    c2.until_pos = DOC_N - 1;
    cdc_kafka_options_t o2 = kopts(&c2, &m, "g-low", 100, 50);
    cdc_kafka_t *k2 = kopen(st, &o2);
    cr_assert_eq(run_for(k2, &c2, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c2.reached);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k2, &s);
    cdc_kafka_close(k2);
    cr_assert_eq(s.total.read, 5);
    check_doc_table(st);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c1);
    ctx_free(&c2);
    mock_stop(&m);
}

Test(kafka, the_stop_flag_applies_the_pending_batch)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    /* Neither bound is reached within the run: only the stop applies, 3 s
     * after the assignment (the fetch takes milliseconds). */
    cdc_kafka_options_t o = kopts(&c, &m, "g-stop", 100000, 600000);
    cdc_kafka_t *k = kopen(st, &o);
    cdc_error_t e = {0};
    cr_assert_eq(run_assigned(k, &c, 3000, 120000, &e), 0, "run: %s", e.msg);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cr_assert_eq(s.batches, 1, "log:\n%s", c.log ? c.log : "");
    cr_assert_eq(s.total.read, DOC_N);
    cr_assert_eq(position(st, TOPIC, 0), DOC_N - 1);
    check_doc_table(st);
    /* A stopped consumer may run again. */
    c.stop = 0;
    produce(&m, TOPIC, 0, "{\"order_id\":5}",
            "{\"op\":\"c\",\"after\":{\"order_id\":5,\"status\":\"new\",\"amount\":\"5.00\"},\"source\":{\"lsn\":180}}");
    produce_flush(&m);
    cr_assert_eq(run_assigned(k, &c, 5000, 120000, &e), 0, "run: %s", e.msg);
    cdc_kafka_close(k);
    cr_assert_eq(position(st, TOPIC, 0), DOC_N);
    cr_assert_eq(committed(&m, "g-stop", TOPIC, 0), DOC_N + 1);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* What a second thread reads of the group's offset while the consumer
 * runs: once the batch is applied and 2 s more have passed. */
typedef struct commit_probe {
    run_ctx *c;
    const mock *m;
    const char *group;
    int64_t seen;
    pthread_t th;
} commit_probe;

static void *commit_probe_main(void *arg)
{
    commit_probe *pr = arg;
    for (int t = 0; t < 60000; t += 10) {
        pthread_mutex_lock(&pr->c->mu);
        int applied = pr->c->log && strstr(pr->c->log, "records in");
        pthread_mutex_unlock(&pr->c->mu);
        if (applied) break;
        usleep(10000);
    }
    usleep(2000000);
    pr->seen = committed(pr->m, pr->group, pr->c->topic, 0);
    return NULL;
}

/* With debug=topic, librdkafka logs a topic's first partition count (from
 * 0) under the facility of a partition count change: that is no change,
 * and the consumer must not leave and join its group again for it (it did
 * 3 s later, throwing away what it had fetched).  The group's offset is
 * committed while the run goes on, not only at its end. */
Test(kafka, a_debug_log_of_the_first_partition_count_does_not_rejoin_the_group)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    cdc_kafka_options_t o = kopts(&c, &m, "g-debug", 100000, 50);
    cdc_kafka_property_t props[8];
    kopts_add(&o, props, "debug", "topic");
    cdc_kafka_t *k = kopen(st, &o);
    commit_probe pr = {.c = &c, .m = &m, .group = "g-debug", .seen = -2};
    pthread_create(&pr.th, NULL, commit_probe_main, &pr);
    cdc_error_t e = {0};
    cr_assert_eq(run_assigned(k, &c, 4500, 120000, &e), 0, "run: %s", e.msg);
    pthread_join(pr.th, NULL);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cr_assert_eq(s.total.read, DOC_N, "log:\n%s", c.log ? c.log : "");
    cr_assert_not_null(strstr(c.log, "PARTCNT"), "the debug log was not seen; log:\n%s", c.log);
    cr_assert_null(strstr(c.log, "joining the group again"), "log:\n%s", c.log);
    cr_assert_null(strstr(c.log, "revoked"), "log:\n%s", c.log); /* before the close's own */
    cdc_kafka_close(k);
    cr_assert_eq(pr.seen, DOC_N, "the group's offset during the run: %lld", (long long)pr.seen);
    cr_assert_eq(position(st, TOPIC, 0), DOC_N - 1);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

Test(kafka, from_beginning_replays_without_changing_a_row)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_error_t e = {0};
    run_ctx c1;
    ctx_init(&c1, st, TOPIC, 1);
    c1.until_pos = DOC_N - 1;
    cdc_kafka_options_t o1 = kopts(&c1, &m, "g-replay", 4, 50);
    cdc_kafka_t *k1 = kopen(st, &o1);
    cr_assert_eq(run_for(k1, &c1, 30000, &e), 0, "run: %s", e.msg);
    cdc_kafka_close(k1);
    run_ctx c2;
    ctx_init(&c2, st, TOPIC, 1);
    c2.until_read = DOC_N;
    cdc_kafka_options_t o2 = kopts(&c2, &m, "g-replay", 4, 50);
    o2.from_beginning = 1;
    /* The second member of the group joins once the first has left; under
     * the sanitizers with the suite's other tests beside it, that took more
     * than 30 s once (CI of abea1b7: no assignment in the log).  80 s (the
     * suite gives a test 120) is the patience, not a timing: the run ends
     * when the records are read. */
    cdc_kafka_stats_t s = live(st, &o2, &c2, 80000);
    cr_assert_eq(s.total.read, DOC_N);
    cr_assert_eq(s.total.applied, 0);
    check_doc_table(st);
    cr_assert_eq(position(st, TOPIC, 0), DOC_N - 1);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c1);
    ctx_free(&c2);
    mock_stop(&m);
}

/* ---- Latency ---- */

/* A snapshot read's source ts_ms is when the snapshot ran: counted, an hour
 * long snapshot would read as an hour of latency.  Only streamed changes
 * are measured. */
Test(kafka, latency_leaves_out_snapshot_reads)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    char key[64], val[512];
    for (int i = 1; i <= 5; i++) {
        snprintf(key, sizeof key, "{\"order_id\":%d}", i);
        snprintf(val, sizeof val,
                 "{\"op\":\"r\",\"after\":{\"order_id\":%d,\"status\":\"new\",\"amount\":\"1.00\"},"
                 "\"source\":{\"lsn\":100,\"snapshot\":\"%s\",\"ts_ms\":%lld},\"ts_ms\":%lld}",
                 i, i == 5 ? "last" : "true", now - 3600000, now - 3600000);
        produce(&m, TOPIC, 0, key, val);
    }
    for (int i = 1; i <= 10; i++) {
        snprintf(key, sizeof key, "{\"order_id\":%d}", 10 + i);
        snprintf(val, sizeof val,
                 "{\"op\":\"c\",\"after\":{\"order_id\":%d,\"status\":\"new\",\"amount\":\"1.00\"},"
                 "\"source\":{\"lsn\":%d,\"ts_ms\":%lld},\"ts_ms\":%lld}",
                 10 + i, 200 + i, now - 2000, now - 1990);
        produce(&m, TOPIC, 0, key, val);
    }
    produce_flush(&m);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_read = 15;
    cdc_kafka_options_t o = kopts(&c, &m, "g-lat-snap", 7, 50);
    cdc_kafka_t *k = kopen(st, &o);
    cdc_error_t e = {0};
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cdc_kafka_close(k);
    cr_assert_eq(s.total.applied, 15);
    cr_assert_eq(c.latencies, 10, "latencies reported: %zu (the 5 snapshot reads must not be)", (size_t)c.latencies);
    cr_assert_eq(s.latency_samples, 10);
    cr_assert_geq(c.min_latency, 2000);
    cr_assert_lt(s.latency_max_ms, 600000, "max latency %lld ms: a snapshot read was counted",
                 (long long)s.latency_max_ms);
    cr_assert_lt(s.latency_p99_ms, 600000);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

Test(kafka, latency_is_measured_from_the_source_ts_ms)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    for (int i = 1; i <= 20; i++) {
        char key[64], val[512];
        snprintf(key, sizeof key, "{\"order_id\":%d}", i);
        snprintf(val, sizeof val,
                 "{\"op\":\"c\",\"after\":{\"order_id\":%d,\"status\":\"new\",\"amount\":\"1.00\"},"
                 "\"source\":{\"lsn\":%d,\"ts_ms\":%lld},\"ts_ms\":%lld}",
                 i, 100 + i, now - 2000, now - 1990);
        produce(&m, TOPIC, 0, key, val);
    }
    produce(&m, TOPIC, 0, "{\"order_id\":1}", NULL); /* a tombstone has no latency */
    produce_flush(&m);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_read = 21;
    cdc_kafka_options_t o = kopts(&c, &m, "g-lat", 7, 50);
    cdc_kafka_t *k = kopen(st, &o);
    cdc_error_t e = {0};
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cdc_kafka_close(k);
    cr_assert_eq(c.latencies, 20);
    cr_assert_eq(s.latency_samples, 20);
    cr_assert_geq(c.min_latency, 2000);
    cr_assert_lt(c.max_latency, 60000);
    cr_assert_geq(s.latency_p50_ms, 2000);
    cr_assert_geq(s.latency_p99_ms, s.latency_p50_ms);
    cr_assert_leq(s.latency_p99_ms, s.latency_max_ms);
    cr_assert_eq(s.latency_max_ms, c.max_latency);
    /* The last stage, per record (the tombstone too), from the producer's
     * timestamp: taken now, 2 s after the changes' source ts_ms. */
    cr_assert_eq(c.klatencies, 21);
    cr_assert_lt(c.max_klatency, c.min_latency);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* ---- A consumer group of two replicas ---- */

#define GROUP_KEYS 60

typedef struct member {
    run_ctx c;
    cdc_kafka_t *k;
    pthread_t th;
    int rc;
    char msg[1024];
} member;

static void *member_main(void *arg)
{
    member *mb = arg;
    cdc_error_t e = {0};
    mb->rc = cdc_kafka_run(mb->k, &e);
    snprintf(mb->msg, sizeof mb->msg, "%s", e.msg);
    return NULL;
}

static void produce_round(mock *m, const char *topic, int round, long long lsn_base)
{
    for (int i = 1; i <= GROUP_KEYS; i++) {
        char key[64], val[512];
        snprintf(key, sizeof key, "{\"order_id\":%d}", i);
        if (round == 2 && i % 5 == 0)
            snprintf(val, sizeof val, "{\"op\":\"d\",\"before\":{\"order_id\":%d},\"after\":null,\"source\":{\"lsn\":%lld}}",
                     i, lsn_base + i);
        else
            snprintf(val, sizeof val,
                     "{\"op\":\"%s\",\"after\":{\"order_id\":%d,\"status\":\"round%d\",\"amount\":\"%d.00\"},"
                     "\"source\":{\"lsn\":%lld}}",
                     round == 0 ? "c" : "u", i, round, i, lsn_base + i);
        produce(m, topic, RD_KAFKA_PARTITION_UA, key, val);
    }
    produce_flush(m);
}

Test(kafka, two_replicas_in_one_group_split_the_partitions_through_a_rebalance)
{
    const char *topic = "grp.public.orders";
    mock m;
    mock_start(&m, topic, 4);
    char *dirs[2] = {tu_tmpdir(), tu_tmpdir()};
    cdc_store_t *sts[2] = {tu_open(dirs[0]), tu_open(dirs[1])};
    member mb[2];
    memset(mb, 0, sizeof mb);
    cdc_kafka_options_t o[2];
    for (int i = 0; i < 2; i++) {
        ctx_init(&mb[i].c, sts[i], topic, 4);
        /* A long time bound: a batch is pending when the rebalance comes,
         * and the revoke has to apply it. */
        o[i] = kopts(&mb[i].c, &m, "g-two", 25, 1500);
    }
    produce_round(&m, topic, 0, 1000);
    mb[0].k = kopen(sts[0], &o[0]);
    pthread_create(&mb[0].th, NULL, member_main, &mb[0]);
    /* Let the first member take everything and consume some of it. */
    uint64_t first_batches = 0;
    for (int t = 0; t < 600 && !first_batches; t++) {
        usleep(50000);
        pthread_mutex_lock(&mb[0].c.mu);
        first_batches = mb[0].c.batches;
        pthread_mutex_unlock(&mb[0].c.mu);
    }
    cr_assert_gt(first_batches, 0, "the first member applied nothing alone");
    produce_round(&m, topic, 1, 2000);
    mb[1].k = kopen(sts[1], &o[1]);
    pthread_create(&mb[1].th, NULL, member_main, &mb[1]);
    /* The rebalance gives the second member its share. */
    int joined = 0;
    for (int t = 0; t < 600 && !joined; t++) {
        usleep(50000);
        pthread_mutex_lock(&mb[1].c.mu);
        joined = mb[1].c.log && strstr(mb[1].c.log, "assigned");
        pthread_mutex_unlock(&mb[1].c.mu);
    }
    cr_assert(joined, "the second member got no partition");
    produce_round(&m, topic, 2, 3000);

    /* The end offsets of the partitions. */
    int64_t hi[4];
    for (int p = 0; p < 4; p++) {
        int64_t lo;
        cr_assert_eq(rd_kafka_query_watermark_offsets(m.prod, topic, p, &lo, &hi[p], 10000), 0);
    }
    /* Wait until every partition is fully applied by one of the replicas. */
    int done = 0;
    for (int t = 0; t < 600 && !done; t++) {
        usleep(100000);
        done = 1;
        for (int p = 0; p < 4; p++) {
            int64_t best = -1;
            for (int i = 0; i < 2; i++) {
                pthread_mutex_lock(&mb[i].c.mu);
                if (mb[i].c.pos[p] > best) best = mb[i].c.pos[p];
                pthread_mutex_unlock(&mb[i].c.mu);
            }
            if (hi[p] > 0 && best < hi[p] - 1) done = 0;
        }
    }
    for (int i = 0; i < 2; i++) mb[i].c.stop = 1;
    for (int i = 0; i < 2; i++) {
        pthread_join(mb[i].th, NULL);
        cr_assert_eq(mb[i].rc, 0, "member %d: %s", i, mb[i].msg);
    }
    cr_assert(done, "not every partition was consumed to its end; logs:\n%s\n---\n%s", mb[0].c.log ? mb[0].c.log : "",
              mb[1].c.log ? mb[1].c.log : "");
    cr_assert(strstr(mb[0].c.log, "revoked") || strstr(mb[0].c.log, "lost"), "no rebalance happened:\n%s\n---\n%s",
              mb[0].c.log, mb[1].c.log);
    cdc_kafka_stats_t s[2];
    for (int i = 0; i < 2; i++) {
        cdc_kafka_stats(mb[i].k, &s[i]);
        cdc_kafka_close(mb[i].k);
        cr_assert_gt(s[i].batches, 0, "member %d consumed nothing", i);
    }

    /* For every key, the replica that holds its partition to the end has the
     * expected row: round 2, or deleted for every fifth key. */
    for (int i = 1; i <= GROUP_KEYS; i++) {
        char key[64];
        snprintf(key, sizeof key, "{\"order_id\":%d}", i);
        int found = 0;
        for (int r = 0; r < 2 && !found; r++) {
            cdc_row_t row;
            if (cdc_store_get(sts[r], TABLE, key, &row, NULL)) continue;
            if (row.lsn != (uint64_t)(3000 + i)) continue; /* an older owner's copy */
            found = 1;
            cr_assert_eq(row.deleted, i % 5 == 0, "key %d", i);
            if (i % 5) {
                cr_assert_eq(row.ncols, 3);
                cr_assert(row.lens[1] == 6 && !memcmp(row.values[1], "round2", 6), "key %d", i);
            }
        }
        cr_assert(found, "key %d: no replica has its last change", i);
    }
    for (int i = 0; i < 2; i++) {
        cdc_store_close(sts[i]);
        tu_rmrf(dirs[i]);
        free(dirs[i]);
        ctx_free(&mb[i].c);
    }
    mock_stop(&m);
}

/* ---- Outages and errors ---- */

Test(kafka, a_broker_outage_is_survived_and_logged_at_a_decreasing_rate)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_batches = 1;
    cdc_kafka_options_t o = kopts(&c, &m, "g-outage", 10, 50);
    cdc_kafka_t *k = kopen(st, &o);
    cdc_error_t e = {0};
    produce(&m, TOPIC, 0, "{\"order_id\":1}",
            "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"new\",\"amount\":\"1.00\"},\"source\":{\"lsn\":10}}");
    produce_flush(&m);
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c.reached);

    /* The broker goes away for 4 s: the run goes on. */
    cr_assert_eq(rd_kafka_mock_broker_set_down(m.mc, 1), 0);
    c.stop = 0;
    c.reached = 0;
    c.until_batches = 0;
    int w0 = c.warnings;
    cr_assert_eq(run_for(k, &c, 4000, &e), 0, "run: %s", e.msg);
    int outage_warnings = c.warnings - w0;
    cr_assert_lt(outage_warnings, 20, "%d warnings in 4 s:\n%s", outage_warnings, c.log);

    /* Back: consumption resumes. */
    cr_assert_eq(rd_kafka_mock_broker_set_up(m.mc, 1), 0);
    produce(&m, TOPIC, 0, "{\"order_id\":2}",
            "{\"op\":\"c\",\"after\":{\"order_id\":2,\"status\":\"new\",\"amount\":\"2.00\"},\"source\":{\"lsn\":11}}");
    produce_flush(&m);
    c.stop = 0;
    c.until_pos = 1;
    cr_assert_eq(run_for(k, &c, 60000, &e), 0, "run: %s", e.msg);
    cr_assert(c.reached, "did not resume after the outage:\n%s", c.log);
    cdc_kafka_close(k);
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, "order_id,status,amount\n1,new,1.00\n2,new,2.00\n");
    free(csv);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* The automatic purge (purge_after_ms 1 s): a batch applied 1.2 s after
 * another raises the horizon to what that one left applied (LSN 40), so a
 * late update between the delete (20) and that horizon is refused once the
 * tombstone is compacted away, and a newer change still applies. */
Test(kafka, the_automatic_purge_raises_the_horizon_between_batches)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    c.until_read = 4;
    cdc_kafka_options_t o = kopts(&c, &m, "g-purge", 100, 50);
    o.purge_after_ms = 1000;
    cdc_kafka_t *k = kopen(st, &o);
    produce(&m, TOPIC, 0, "{\"order_id\":1}",
            "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"new\",\"amount\":\"1.00\"},\"source\":{\"lsn\":10}}");
    produce(&m, TOPIC, 0, "{\"order_id\":3}",
            "{\"op\":\"c\",\"after\":{\"order_id\":3,\"status\":\"new\",\"amount\":\"3.00\"},\"source\":{\"lsn\":11}}");
    produce(&m, TOPIC, 0, "{\"order_id\":1}",
            "{\"op\":\"d\",\"before\":{\"order_id\":1},\"after\":null,\"source\":{\"lsn\":20}}");
    produce(&m, TOPIC, 0, "{\"order_id\":3}",
            "{\"op\":\"u\",\"after\":{\"order_id\":3,\"status\":\"paid\",\"amount\":\"3.00\"},\"source\":{\"lsn\":30}}");
    produce_flush(&m);
    cdc_error_t e = {0};
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c.reached, "log:\n%s", c.log ? c.log : "");
    usleep(1200 * 1000);
    produce(&m, TOPIC, 0, "{\"order_id\":4}",
            "{\"op\":\"c\",\"after\":{\"order_id\":4,\"status\":\"new\",\"amount\":\"4.00\"},\"source\":{\"lsn\":40}}");
    produce_flush(&m);
    c.until_read = 5;
    c.reached = c.stop = 0;
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c.reached, "log:\n%s", c.log ? c.log : "");
    /* that batch's note (LSN 40) is the one a batch 1.2 s later uses */
    usleep(1200 * 1000);
    produce(&m, TOPIC, 0, "{\"order_id\":6}",
            "{\"op\":\"c\",\"after\":{\"order_id\":6,\"status\":\"new\",\"amount\":\"6.00\"},\"source\":{\"lsn\":45}}");
    produce_flush(&m);
    c.until_read = 6;
    c.reached = c.stop = 0;
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c.reached, "log:\n%s", c.log ? c.log : "");
    cdc_kafka_close(k);
    /* RocksDB's compaction of the family, as it would run by itself */
    rocksdb_compact_range_cf(st->db, st->rows_cf, NULL, 0, NULL, 0);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, TABLE, "[1]", &row, NULL), CDC_ENOTFOUND, "the tombstone at 20 is gone");
    cdc_record_t late[2] = {
        tu_rec(TOPIC, 0, 100, "{\"order_id\":1}",
               "{\"op\":\"u\",\"after\":{\"order_id\":1,\"status\":\"late\",\"amount\":\"1.00\"},\"source\":{\"lsn\":35}}"),
        tu_rec(TOPIC, 0, 101, "{\"order_id\":5}",
               "{\"op\":\"c\",\"after\":{\"order_id\":5,\"status\":\"new\",\"amount\":\"5.00\"},\"source\":{\"lsn\":50}}")};
    cdc_apply_result_t r = tu_apply(st, late, 2);
    cr_assert_eq(r.stale, 1, "older than the horizon 40: stale");
    cr_assert_eq(r.applied, 1);
    char *csv = tu_export(st, TABLE, 0);
    cr_assert_str_eq(csv, "order_id,status,amount\n3,paid,3.00\n4,new,4.00\n5,new,5.00\n6,new,6.00\n");
    free(csv);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

Test(kafka, a_dead_letter_does_not_stop_the_run_unless_asked)
{
    mock m;
    mock_start(&m, TOPIC, 1);
    produce(&m, TOPIC, 0, "{\"order_id\":1}", "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"new\",\"amount\":\"1.00\"},\"source\":{\"lsn\":10}}");
    produce(&m, TOPIC, 0, "{\"order_id\":2}", "this is not JSON");
    produce(&m, TOPIC, 0, "{\"order_id\":3}", "{\"op\":\"c\",\"after\":{\"order_id\":3,\"status\":\"new\",\"amount\":\"3.00\"},\"source\":{\"lsn\":12}}");
    produce_flush(&m);
    cdc_error_t e = {0};
    for (int stop_mode = 0; stop_mode < 2; stop_mode++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        run_ctx c;
        ctx_init(&c, st, TOPIC, 1);
        c.until_pos = 2;
        cdc_kafka_options_t o = kopts(&c, &m, stop_mode ? "g-dl-stop" : "g-dl", 100, 200);
        o.apply.on_error = stop_mode ? CDC_ON_ERROR_STOP : CDC_ON_ERROR_CONTINUE;
        cdc_kafka_t *k = kopen(st, &o);
        int rc = run_for(k, &c, 30000, &e);
        cdc_kafka_stats_t s;
        cdc_kafka_stats(k, &s);
        cdc_kafka_close(k);
        cr_assert_eq(s.total.dead_letters, 1);
        if (stop_mode) {
            cr_assert_eq(rc, CDC_ESTOPPED, "rc %d", rc);
            cr_assert_eq(position(st, TOPIC, 0), 0, "the bad record's position is not passed");
        } else {
            cr_assert_eq(rc, 0, "run: %s", e.msg);
            cr_assert_eq(position(st, TOPIC, 0), 2);
        }
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
        ctx_free(&c);
    }
    mock_stop(&m);
}

/* ---- Topics by pattern ---- */

/* A whole schema in one consumer: --topic-regex subscribes to every topic
 * the pattern matches from the start of its name, and only to those.  Each
 * topic's records land in its own table with its own position. */
Test(kafka, a_topic_regex_consumes_every_matching_topic_and_no_other)
{
    static const char *const matched[] = {"shop.public.t0001", "shop.public.t0002", "shop.public.t0003"};
    static const char *const unmatched[] = {"shop.audit.t0001", "xshop.public.t0001"};
    mock m;
    mock_start(&m, NULL, 0);
    for (size_t i = 0; i < 3; i++) cr_assert_eq(rd_kafka_mock_topic_create(m.mc, matched[i], 1, 1), 0);
    for (size_t i = 0; i < 2; i++) cr_assert_eq(rd_kafka_mock_topic_create(m.mc, unmatched[i], 1, 1), 0);
    const char *row = "{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"x\"},\"source\":{\"lsn\":10}}";
    for (size_t i = 0; i < 3; i++) produce(&m, matched[i], 0, "{\"id\":1}", row);
    for (size_t i = 0; i < 2; i++) produce(&m, unmatched[i], 0, "{\"id\":1}", row);
    produce(&m, matched[1], 0, "{\"id\":2}", "{\"op\":\"c\",\"after\":{\"id\":2,\"v\":\"y\"},\"source\":{\"lsn\":11}}");
    produce_flush(&m);

    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, NULL, 0);
    c.until_read = 4;
    cdc_kafka_options_t o = kopts(&c, &m, "g-regex", 100, 50);
    o.topics = NULL;
    o.ntopics = 0;
    o.topic_regex = "shop\\.public\\.";
    cdc_kafka_t *k = kopen(st, &o);
    cdc_error_t e = {0};
    cr_assert_eq(run_for(k, &c, 30000, &e), 0, "run: %s", e.msg);
    cr_assert(c.reached, "not all matched records consumed; log:\n%s", c.log ? c.log : "");
    /* Records of the other topics, had they been subscribed, would arrive
     * within the same fetches: give them a moment more. */
    c.stop = 0;
    c.until_read = 0;
    run_for(k, &c, 1500, &e);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cdc_kafka_close(k);
    cr_assert_eq(s.total.read, 4, "read %llu records", (unsigned long long)s.total.read);
    cr_assert_eq(position(st, matched[0], 0), 0);
    cr_assert_eq(position(st, matched[1], 0), 1);
    cr_assert_eq(position(st, matched[2], 0), 0);
    for (size_t i = 0; i < 2; i++) cr_assert_eq(position(st, unmatched[i], 0), -1, "%s was consumed", unmatched[i]);
    char **names = NULL;
    size_t n = 0;
    cr_assert_eq(cdc_store_tables(st, &names, &n, NULL), 0);
    cr_assert_eq(n, 3, "%zu tables", n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(strncmp(names[i], "public.t000", 11), 0, "table %s", names[i]);
    cdc_strings_free(names, n);
    cdc_store_close(st);

    /* A pattern that does not compile is refused, naming it. */
    st = tu_open(dir);
    o.topic_regex = "shop[.public";
    k = NULL;
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), CDC_EINVAL);
    cr_assert_null(k);
    cr_assert_not_null(strstr(e.msg, "shop[.public"), "%s", e.msg);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
    mock_stop(&m);
}

/* ---- Configuration ---- */

static char *write_file(const char *text)
{
    char *p = strdup("/tmp/cdckconf.XXXXXX");
    int fd = mkstemp(p);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return p;
}

Test(kafka, property_files_are_parsed_and_secrets_never_shown)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    run_ctx c;
    ctx_init(&c, st, TOPIC, 1);
    static const char *topics[] = {TOPIC};
    cdc_kafka_options_t o = {.topics = topics, .ntopics = 1, .log = test_log, .log_opaque = &c};
    cdc_kafka_t *k = NULL;
    cdc_error_t e = {0};

    /* Good: comments, blanks, spaces around '=', a secret; brokers and
     * group from the file. */
    char *good = write_file("# SASL settings\n\n bootstrap.servers = 127.0.0.1:1 \ngroup.id=g-file\n"
                            "sasl.password=hunter2-secret-value\nenable.auto.commit=true\n");
    o.config_file = good;
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), 0, "%s", e.msg);
    cdc_kafka_close(k);
    cr_assert_null(strstr(c.log ? c.log : "", "hunter2"), "%s", c.log);
    cr_assert_not_null(strstr(c.log, "enable.auto.commit is always false"), "%s", c.log);

    /* A line without '=' names the file and line. */
    char *bad = write_file("group.id=g\nbootstrap.servers\n");
    o.config_file = bad;
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), CDC_EINVAL);
    cr_assert_null(k);
    char where[256];
    snprintf(where, sizeof where, "%s:2", bad);
    cr_assert_not_null(strstr(e.msg, where), "%s", e.msg);

    /* An invalid secret property: the value is not in the message. */
    char *secret = write_file("group.id=g\nmy.password=hunter2-secret-value\n");
    o.config_file = secret;
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), CDC_EINVAL);
    cr_assert_not_null(strstr(e.msg, "my.password"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "hunter2"), "%s", e.msg);

    /* Missing group or brokers, missing file. */
    char *nogroup = write_file("bootstrap.servers=127.0.0.1:1\n");
    o.config_file = nogroup;
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), CDC_EINVAL);
    cr_assert_not_null(strstr(e.msg, "group"), "%s", e.msg);
    o.config_file = "/nonexistent/kafka.properties";
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), -ENOENT);
    o.config_file = NULL;
    o.group = "g";
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), CDC_EINVAL);
    cr_assert_not_null(strstr(e.msg, "brokers"), "%s", e.msg);
    o.ntopics = 0;
    cr_assert_eq(cdc_kafka_open(st, &o, &k, &e), CDC_EINVAL);
    cr_assert_null(c.log ? strstr(c.log, "hunter2") : NULL);

    for (char **p = (char *[]){good, bad, secret, nogroup, NULL}; *p; p++) {
        unlink(*p);
        free(*p);
    }
    cdc_kafka_close(NULL);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    ctx_free(&c);
}

/* ---- The command ---- */

/* build/tests/test_kafka -> build/cdcstore */
static char *cdcstore_path(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert(n > 0);
    self[n] = 0;
    char *slash = strrchr(self, '/');
    *slash = 0;
    slash = strrchr(self, '/');
    *slash = 0;
    char *p = NULL;
    cr_assert(asprintf(&p, "%s/cdcstore", self) > 0);
    if (access(p, X_OK)) cr_skip_test("%s not built", p);
    return p;
}

/* Starts `cdcstore ingest` on the mock cluster with small batches; its
 * stderr goes to errlog.  The child dies with the test process. */
static pid_t spawn_ingest(const char *bin, const char *db, const mock *m, const char *latency, const char *errlog)
{
    /* The mock cluster's coordinator waits a session timeout for members it
     * still knows; a short one keeps restarts quick. */
    char conf[600];
    snprintf(conf, sizeof conf, "%s.properties", errlog);
    FILE *f = fopen(conf, "w");
    cr_assert_not_null(f);
    fprintf(f, "# test settings\nsession.timeout.ms=6000\nheartbeat.interval.ms=300\n");
    fclose(f);
    const char *argv[24];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "ingest";
    argv[n++] = "--db";
    argv[n++] = db;
    argv[n++] = "--brokers";
    argv[n++] = m->bootstraps;
    argv[n++] = "--topic";
    argv[n++] = TOPIC;
    argv[n++] = "--batch-max-events";
    argv[n++] = "3";
    argv[n++] = "--batch-max-ms";
    argv[n++] = "50";
    argv[n++] = "--kafka-config";
    argv[n++] = conf;
    if (latency) {
        argv[n++] = "--latency-report";
        argv[n++] = latency;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(errlog, O_WRONLY | O_CREAT | O_APPEND, 0644), nul = open("/dev/null", O_RDWR);
        if (fd < 0 || nul < 0) _exit(127);
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(fd, 2);
        /* Under the sanitizers, a leak report must not turn the exit status
         * the test checks into 1: wait_status() finds it in errlog and
         * fails the test with the report. */
        setenv("LSAN_OPTIONS", "exitcode=0", 0);
        execv(bin, (char **)argv);
        _exit(127);
    }
    return pid;
}

/* How many times needle occurs in the file at path. */
static int count_in_file(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0)
        if (strstr(line, needle)) n++;
    free(line);
    fclose(f);
    return n;
}

/* The content of a small file as a malloc'd string ("" when absent). */
static char *file_text(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (f) {
        char tmp[4096];
        size_t n;
        while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) fwrite(tmp, 1, n, o);
        fclose(f);
    }
    fclose(o);
    return buf;
}

/* Waits for the command; a sanitizer report in its stderr fails the test. */
static int wait_status(pid_t pid, const char *errlog)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    if (count_in_file(errlog, "ERROR: AddressSanitizer") || count_in_file(errlog, "ERROR: LeakSanitizer") ||
        count_in_file(errlog, "runtime error:"))
        cr_assert_fail("sanitizer report from cdcstore ingest:\n%s", file_text(errlog));
    return st;
}

/* Reads the replica's position read-only while the command may hold it. */
static int64_t position_ro(const char *dir)
{
    cdc_open_options_t oo = {.read_only = 1};
    cdc_store_t *st = NULL;
    if (cdc_store_open(dir, &oo, &st, NULL)) return -2;
    int64_t off = -1;
    cdc_store_position(st, TOPIC, 0, &off, NULL);
    cdc_store_close(st);
    return off;
}

Test(kafka, the_command_exits_0_on_sigterm_and_3_with_dead_letters)
{
    char *bin = cdcstore_path();
    mock m;
    mock_start(&m, TOPIC, 1);
    produce_doc(&m, TOPIC);
    char *dir = tu_tmpdir();
    char db[512], errlog[512], lat[512];
    snprintf(db, sizeof db, "%s/replica", dir);
    snprintf(errlog, sizeof errlog, "%s/stderr", dir);
    snprintf(lat, sizeof lat, "%s/latency", dir);
    pid_t pid = spawn_ingest(bin, db, &m, lat, errlog);
    int64_t pos = -1;
    for (int t = 0; t < 300 && pos < DOC_N - 1; t++) {
        usleep(100000);
        pos = position_ro(db);
    }
    cr_assert_eq(pos, DOC_N - 1);
    kill(pid, SIGTERM);
    int st = wait_status(pid, errlog);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d; stderr:\n%s", st, file_text(errlog));
    cdc_store_t *s = tu_open(db);
    check_doc_table(s);
    cdc_store_close(s);
    /* The default group is cdcstore-<basename of DIR>. */
    cr_assert_eq(committed(&m, "cdcstore-replica", TOPIC, 0), DOC_N);

    /* A bad record: the run goes on, and the exit status says 3. */
    produce(&m, TOPIC, 0, "{\"order_id\":9}", "not an envelope");
    produce_flush(&m);
    pid = spawn_ingest(bin, db, &m, NULL, errlog);
    pos = -1;
    for (int t = 0; t < 300 && pos < DOC_N; t++) {
        usleep(100000);
        pos = position_ro(db);
    }
    cr_assert_eq(pos, DOC_N);
    kill(pid, SIGINT);
    st = wait_status(pid, errlog);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %d; stderr:\n%s", st, file_text(errlog));
    free(bin);
    tu_rmrf(dir);
    free(dir);
    mock_stop(&m);
}

#define KILL_N 12000

Test(kafka, the_command_killed_mid_run_resumes_to_the_same_state)
{
    char *bin = cdcstore_path();
    mock m;
    mock_start(&m, TOPIC, 1);
    char *dir = tu_tmpdir();
    char db[512], errlog[512];
    snprintf(db, sizeof db, "%s/replica", dir);
    snprintf(errlog, sizeof errlog, "%s/stderr", dir);
    /* KILL_N changes of 100 keys; SIGKILL once a batch has been applied. */
    for (int i = 0; i < KILL_N; i++) {
        char key[64], val[512];
        snprintf(key, sizeof key, "{\"order_id\":%d}", i % 100);
        snprintf(val, sizeof val,
                 "{\"op\":\"%s\",\"after\":{\"order_id\":%d,\"status\":\"v%d\",\"amount\":\"%d.00\"},\"source\":{\"lsn\":%d}}",
                 i < 100 ? "c" : "u", i % 100, i, i, 1000 + i);
        produce(&m, TOPIC, 0, key, val);
    }
    produce_flush(&m);
    pid_t pid = spawn_ingest(bin, db, &m, NULL, errlog);
    int64_t pos = -1;
    for (int t = 0; t < 6000 && pos < 0; t++) {
        usleep(5000);
        pos = position_ro(db);
    }
    kill(pid, SIGKILL);
    int st = wait_status(pid, errlog);
    cr_assert(WIFSIGNALED(st));
    int64_t at_kill = position_ro(db);
    cr_assert_geq(at_kill, 0);
    /* KILL_N is large enough that the first run is still going when the
     * position first shows (it was seen at up to 3,000); a warning here
     * fails the run (Criterion counts warnings), on purpose. */
    cr_log_info("first run killed at position %lld of %d", (long long)at_kill, KILL_N - 1);
    if (at_kill >= KILL_N - 1) cr_log_warn("the first run finished before it was killed");

    pid = spawn_ingest(bin, db, &m, NULL, errlog);
    /* The handlers are installed before the consumer says it runs. */
    for (int t = 0; t < 300 && count_in_file(errlog, "as a member of group") < 2; t++) usleep(50000);
    pos = -1;
    for (int t = 0; t < 600 && pos < KILL_N - 1; t++) {
        usleep(100000);
        pos = position_ro(db);
    }
    cr_assert_eq(pos, KILL_N - 1);
    kill(pid, SIGTERM);
    st = wait_status(pid, errlog);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d; stderr:\n%s", st, file_text(errlog));
    cdc_store_t *s = tu_open(db);
    for (int k = 0; k < 100; k++) {
        char key[64], want[16];
        snprintf(key, sizeof key, "[%d]", k);
        snprintf(want, sizeof want, "v%d", KILL_N - 100 + k);
        cdc_row_t row;
        cr_assert_eq(cdc_store_get(s, TABLE, key, &row, NULL), 0);
        cr_assert(row.lens[1] == strlen(want) && !memcmp(row.values[1], want, strlen(want)), "key %d", k);
    }
    cdc_stats_t stats;
    cr_assert_eq(cdc_store_stats(s, TABLE, &stats, NULL), 0);
    cr_assert_eq(stats.rows_live, 100);
    cdc_store_close(s);
    free(bin);
    tu_rmrf(dir);
    free(dir);
    mock_stop(&m);
}
