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
 * With --file-topics instead of --topic, each record goes to the topic and partition its line names
 * (a whole schema's topics, bench/gen_tables.py): every topic the file names is created first, with
 * one partition more than the highest the file gives it; one that exists already is used as it is.
 *
 * Usage: produce --brokers HOST:PORT (--topic T [--partitions P] | --file-topics) FILE
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

/* Creates n topics with the given partitions (replication factor 1: the stack has one broker), in
 * requests of at most 100 topics. */
static int create_topics(rd_kafka_t *rk, char **topics, const int *partitions, size_t n, int existing_ok)
{
    char es[512];
    for (size_t at = 0; at < n; at += 100) {
        size_t m = n - at < 100 ? n - at : 100;
        rd_kafka_NewTopic_t *nt[100];
        for (size_t i = 0; i < m; i++) {
            nt[i] = rd_kafka_NewTopic_new(topics[at + i], partitions[at + i], 1, es, sizeof es);
            if (!nt[i]) {
                fprintf(stderr, "produce: topic %s: %s\n", topics[at + i], es);
                rd_kafka_NewTopic_destroy_array(nt, i);
                return -1;
            }
        }
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        rd_kafka_AdminOptions_set_operation_timeout(ao, 30000, es, sizeof es);
        rd_kafka_CreateTopics(rk, nt, m, ao, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
        int rc = -1;
        if (!ev) {
            fprintf(stderr, "produce: creating topic %s...: no answer in 60 s\n", topics[at]);
        } else if (rd_kafka_event_error(ev)) {
            fprintf(stderr, "produce: creating topic %s...: %s\n", topics[at], rd_kafka_event_error_string(ev));
        } else {
            size_t k;
            const rd_kafka_topic_result_t **res =
                rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &k);
            rc = k == m ? 0 : -1;
            if (rc) fprintf(stderr, "produce: creating topic %s...: %zu results for %zu topics\n", topics[at], k, m);
            for (size_t i = 0; i < k && !rc; i++)
                if (rd_kafka_topic_result_error(res[i]) != RD_KAFKA_RESP_ERR_NO_ERROR &&
                    !(existing_ok && rd_kafka_topic_result_error(res[i]) == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)) {
                    fprintf(stderr, "produce: creating topic %s: %s\n", rd_kafka_topic_result_name(res[i]),
                            rd_kafka_topic_result_error_string(res[i]));
                    rc = -1;
                }
        }
        if (ev) rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(ao);
        rd_kafka_NewTopic_destroy_array(nt, m);
        rd_kafka_queue_destroy(q);
        if (rc) return rc;
    }
    return 0;
}

/* The topics a kcat file names, each with one partition more than the highest its lines give
 * (a hash table of the names, since a schema's streamed changes interleave its topics). */
static int file_topics(const char *path, char ***topics, int **partitions, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 0, lineno = 0, slots = 1 << 16;
    size_t *slot = calloc(slots, sizeof *slot); /* index + 1 into *topics; 0 free */
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int rc = 0;
    *topics = NULL, *partitions = NULL, *n = 0;
    while ((len = getline(&line, &lcap, f)) > 0) {
        lineno++;
        if (len == 1 && line[0] == '\n') continue;
        cJSON *rec = cJSON_ParseWithLength(line, (size_t)len);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(rec, "topic");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(rec, "partition");
        if (!cJSON_IsString(t) || !cJSON_IsNumber(p) || p->valueint < 0 || p->valueint >= MAX_PARTITIONS) {
            fprintf(stderr, "produce: %s: line %zu has no topic and partition (0 to %d)\n", path, lineno,
                    MAX_PARTITIONS - 1);
            cJSON_Delete(rec);
            rc = -1;
            break;
        }
        uint64_t h = 1469598103934665603ULL; /* FNV-1a */
        for (const char *c = t->valuestring; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
        size_t at = (size_t)h & (slots - 1);
        while (slot[at] && strcmp((*topics)[slot[at] - 1], t->valuestring)) at = (at + 1) & (slots - 1);
        if (!slot[at]) {
            if (*n >= slots / 2) {
                fprintf(stderr, "produce: %s: more than %zu topics\n", path, slots / 2);
                cJSON_Delete(rec);
                rc = -1;
                break;
            }
            if (*n == cap) {
                cap = cap ? 2 * cap : 64;
                *topics = realloc(*topics, cap * sizeof **topics);
                *partitions = realloc(*partitions, cap * sizeof **partitions);
            }
            (*topics)[*n] = strdup(t->valuestring);
            (*partitions)[*n] = 0;
            slot[at] = ++*n;
        }
        int *parts = &(*partitions)[slot[at] - 1];
        if (*parts < p->valueint + 1) *parts = p->valueint + 1;
        cJSON_Delete(rec);
    }
    free(slot);
    free(line);
    fclose(f);
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
    int partitions = 4, by_file = 0;
    static struct option lo[] = {{"brokers", 1, 0, 'b'}, {"topic", 1, 0, 't'}, {"partitions", 1, 0, 'p'},
                                 {"file-topics", 0, 0, 'f'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "b:t:p:", lo, NULL)) != -1) {
        switch (c) {
        case 'b': brokers = optarg; break;
        case 't': topic = optarg; break;
        case 'p': partitions = atoi(optarg); break;
        case 'f': by_file = 1; break;
        default: goto usage;
        }
    }
    if (!brokers || !topic == !by_file || optind != argc - 1 || partitions < 1 || partitions > MAX_PARTITIONS)
        goto usage;
    const char *path = argv[optind];
    char **topics = NULL;
    int *tparts = NULL;
    size_t ntopics = 0;
    if (by_file) {
        if (file_topics(path, &topics, &tparts, &ntopics)) return 1;
        partitions = 0;
        for (size_t i = 0; i < ntopics; i++)
            if (tparts[i] > partitions) partitions = tparts[i];
    }
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
    if (by_file ? create_topics(rk, topics, tparts, ntopics, 1) : create_topics(rk, (char **)&topic, &partitions, 1, 0)) {
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
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(rec, "topic");
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(rec, "partition");
        if (!rec || member(rec, "key", &key, &klen) || member(rec, "payload", &value, &vlen) ||
            (by_file && (!cJSON_IsString(rt) || !cJSON_IsNumber(rp)))) {
            fprintf(stderr, "produce: %s: line %llu is not a kcat -J record with key and payload\n", path,
                    (unsigned long long)records + 1);
            cJSON_Delete(rec);
            rc = 1;
            break;
        }
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(by_file ? rt->valuestring : topic),
                RD_KAFKA_V_PARTITION(by_file ? (int32_t)rp->valueint : RD_KAFKA_PARTITION_UA),
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
    for (size_t i = 0; i < ntopics; i++) free(topics[i]);
    free(topics);
    free(tparts);
    if (failed) {
        fprintf(stderr, "produce: %llu records not delivered, the first: %s\n", (unsigned long long)failed, first_error);
        rc = 1;
    }
    if (!rc && delivered != records) {
        fprintf(stderr, "produce: %llu records sent, %llu acknowledged\n", (unsigned long long)records,
                (unsigned long long)delivered);
        rc = 1;
    }
    if (by_file)
        fprintf(stderr, "produce: %llu records (%llu tombstones) into %zu topics of the file, in %.1f s\n",
                (unsigned long long)records, (unsigned long long)tombstones, ntopics, secs);
    else
        fprintf(stderr, "produce: %llu records (%llu tombstones) into %s, %d partitions, in %.1f s\n",
                (unsigned long long)records, (unsigned long long)tombstones, topic, partitions, secs);
    printf("{\"records\": %llu, \"tombstones\": %llu, \"delivered\": %llu, \"topic\": \"%s\", \"topics\": %zu, "
           "\"per_partition\": [",
           (unsigned long long)records, (unsigned long long)tombstones, (unsigned long long)delivered,
           by_file ? "" : topic, by_file ? ntopics : 1);
    for (int p = 0; p < partitions; p++) printf("%s%llu", p ? ", " : "", (unsigned long long)per_partition[p]);
    printf("], \"seconds\": %.3f}\n", secs);
    return rc;
usage:
    fprintf(stderr, "usage: produce --brokers HOST:PORT (--topic T [--partitions P] | --file-topics) FILE\n");
    return 2;
}
