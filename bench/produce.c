/*
 * produce: loads a benchmark events file into a new Kafka topic, so that `cdcstore ingest` can be
 * timed draining it as a backlog (bench/backlog.sh).
 *
 * The file holds one kcat -C -J line per record, as bench/gen.py writes them:
 * {"topic","partition","offset",...,"key": "<json text>"|null,"payload": "<json text>"|null}.
 * Each record is produced with its key and value bytes exactly as in the file (a null payload is a
 * tombstone: a record without a value). The file's topic, partition and offset are ignored: the
 * records go to the topic named on the command line, created here with P partitions (it must not
 * exist yet), and are partitioned by key with Java's murmur2 partitioner, the one Kafka Connect uses,
 * so every record of a key lands in one partition in file order: the per-key order a Debezium topic
 * keeps. The producer is idempotent with acks=all, so a retry neither reorders nor duplicates.
 *
 * Usage: produce --brokers HOST:PORT --topic T [--partitions P] FILE
 * Progress goes to stderr; at the end one JSON object goes to stdout: records, tombstones, records
 * per partition, seconds. Exit status 0 only when every record was acknowledged.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARTITIONS 256

static uint64_t delivered, failed;
static uint64_t per_partition[MAX_PARTITIONS];
static char first_error[512];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Delivery reports, served by rd_kafka_poll/flush in the main thread. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk, (void)opaque;
    if (m->err) {
        if (!failed++)
            snprintf(first_error, sizeof first_error, "%s", rd_kafka_err2str(m->err));
        return;
    }
    delivered++;
    if (m->partition >= 0 && m->partition < MAX_PARTITIONS) per_partition[m->partition]++;
}

/* Creates the topic with the given partitions (replication factor 1: the stack has one broker). */
static int create_topic(rd_kafka_t *rk, const char *topic, int partitions)
{
    char es[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, es, sizeof es);
    if (!nt) {
        fprintf(stderr, "produce: topic %s: %s\n", topic, es);
        return -1;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(ao, 30000, es, sizeof es);
    rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
    int rc = -1;
    if (!ev) {
        fprintf(stderr, "produce: creating topic %s: no answer in 60 s\n", topic);
    } else if (rd_kafka_event_error(ev)) {
        fprintf(stderr, "produce: creating topic %s: %s\n", topic, rd_kafka_event_error_string(ev));
    } else {
        size_t n;
        const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        if (n == 1 && rd_kafka_topic_result_error(res[0]) == RD_KAFKA_RESP_ERR_NO_ERROR) rc = 0;
        else
            fprintf(stderr, "produce: creating topic %s: %s\n", topic,
                    n ? rd_kafka_topic_result_error_string(res[0]) : "no result");
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_queue_destroy(q);
    return rc;
}

static int set(rd_kafka_conf_t *conf, const char *name, const char *value)
{
    char es[512];
    if (rd_kafka_conf_set(conf, name, value, es, sizeof es) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "produce: %s=%s: %s\n", name, value, es);
        return -1;
    }
    return 0;
}

/* A string member of a kcat record: its bytes, NULL for JSON null; -1 when absent or another type. */
static int member(const cJSON *rec, const char *name, const char **out, size_t *len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, name);
    if (cJSON_IsNull(v)) {
        *out = NULL;
        *len = 0;
        return 0;
    }
    if (!cJSON_IsString(v)) return -1;
    *out = v->valuestring;
    *len = strlen(v->valuestring);
    return 0;
}

int main(int argc, char **argv)
{
    const char *brokers = NULL, *topic = NULL;
    int partitions = 4;
    static struct option lo[] = {{"brokers", 1, 0, 'b'}, {"topic", 1, 0, 't'}, {"partitions", 1, 0, 'p'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "b:t:p:", lo, NULL)) != -1) {
        switch (c) {
        case 'b': brokers = optarg; break;
        case 't': topic = optarg; break;
        case 'p': partitions = atoi(optarg); break;
        default: goto usage;
        }
    }
    if (!brokers || !topic || optind != argc - 1 || partitions < 1 || partitions > MAX_PARTITIONS) goto usage;
    const char *path = argv[optind];
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char es[512];
    if (set(conf, "bootstrap.servers", brokers) || set(conf, "acks", "all") ||
        set(conf, "enable.idempotence", "true") || set(conf, "partitioner", "murmur2_random") ||
        set(conf, "linger.ms", "20") || set(conf, "batch.size", "1000000") ||
        set(conf, "queue.buffering.max.kbytes", "262144"))
        return 1;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, es, sizeof es);
    if (!rk) {
        fprintf(stderr, "produce: %s\n", es);
        return 1;
    }
    if (create_topic(rk, topic, partitions)) {
        rd_kafka_destroy(rk);
        return 1;
    }

    double t0 = now(), next_report = t0 + 2;
    uint64_t records = 0, tombstones = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (n == 1 && line[0] == '\n') continue;
        cJSON *rec = cJSON_ParseWithLength(line, (size_t)n);
        const char *key, *value;
        size_t klen, vlen;
        if (!rec || member(rec, "key", &key, &klen) || member(rec, "payload", &value, &vlen)) {
            fprintf(stderr, "produce: %s: line %llu is not a kcat -J record with key and payload\n", path,
                    (unsigned long long)records + 1);
            cJSON_Delete(rec);
            rc = 1;
            break;
        }
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
                RD_KAFKA_V_KEY((void *)key, klen), RD_KAFKA_V_VALUE((void *)value, vlen),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(rk, 50);
                continue;
            }
            if (e) {
                fprintf(stderr, "produce: record %llu: %s\n", (unsigned long long)records + 1, rd_kafka_err2str(e));
                rc = 1;
            }
            break;
        }
        cJSON_Delete(rec);
        if (rc) break;
        records++;
        if (!value) tombstones++;
        rd_kafka_poll(rk, 0);
        double t = now();
        if (t >= next_report) {
            fprintf(stderr, "produce: %llu records sent, %llu acknowledged, %.0f records/s\n",
                    (unsigned long long)records, (unsigned long long)delivered, (double)records / (t - t0));
            next_report = t + 2;
        }
    }
    free(line);
    fclose(f);
    /* Wait until every record is acknowledged (or has failed). */
    while (rd_kafka_outq_len(rk) > 0) rd_kafka_flush(rk, 1000);
    double secs = now() - t0;
    rd_kafka_destroy(rk);
    if (failed) {
        fprintf(stderr, "produce: %llu records not delivered, the first: %s\n", (unsigned long long)failed, first_error);
        rc = 1;
    }
    if (!rc && delivered != records) {
        fprintf(stderr, "produce: %llu records sent, %llu acknowledged\n", (unsigned long long)records,
                (unsigned long long)delivered);
        rc = 1;
    }
    fprintf(stderr, "produce: %llu records (%llu tombstones) into %s, %d partitions, in %.1f s\n",
            (unsigned long long)records, (unsigned long long)tombstones, topic, partitions, secs);
    printf("{\"records\": %llu, \"tombstones\": %llu, \"delivered\": %llu, \"topic\": \"%s\", \"per_partition\": [",
           (unsigned long long)records, (unsigned long long)tombstones, (unsigned long long)delivered, topic);
    for (int p = 0; p < partitions; p++) printf("%s%llu", p ? ", " : "", (unsigned long long)per_partition[p]);
    printf("], \"seconds\": %.3f}\n", secs);
    return rc;
usage:
    fprintf(stderr, "usage: produce --brokers HOST:PORT --topic T [--partitions P] FILE\n");
    return 2;
}
