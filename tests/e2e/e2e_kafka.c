/*
 * e2e_kafka: the few Kafka queries the end-to-end suite needs that kcat does
 * not answer, on librdkafka.
 *
 *   e2e_kafka BROKERS hw TOPIC...
 *       the sum of the high watermarks of every partition of the topics
 *       (= records written, nothing is deleted on the test stack)
 *   e2e_kafka BROKERS lag GROUP TOPIC...
 *       "hw=H committed=C lag=L": high watermarks, the group's committed
 *       offsets (a partition without one counts as 0) and their difference,
 *       summed over every partition of the topics.  cdcstore ingest commits
 *       after every applied batch, so lag=0 means it applied everything.
 *       The query joins no group.
 *   e2e_kafka BROKERS create-topics PARTITIONS [--config KEY=VALUE]... TOPIC...
 *       creates the topics (replication factor 1) with those topic configs
 *       (e.g. message.timestamp.type=LogAppendTime); existing ones are an error
 *   e2e_kafka BROKERS add-partitions TOTAL TOPIC...
 *       raises the topics' partition counts to TOTAL
 *   e2e_kafka BROKERS delete-topics PREFIX
 *       deletes every topic whose name starts with PREFIX; prints how many
 *
 * Exit status: 0 done, 1 error, 2 usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#define TIMEOUT_MS 10000

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "e2e_kafka: %s: %s\n", what, msg);
    exit(1);
}

static rd_kafka_t *client(const char *brokers, const char *group, rd_kafka_type_t type)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err) ||
        rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err) ||
        (group && rd_kafka_conf_set(conf, "group.id", group, err, sizeof err)) ||
        (group && rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err)))
        die("configuration", err);
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk) die("client", err);
    return rk;
}

/* The partitions of the topics, with offsets unset. */
static rd_kafka_topic_partition_list_t *partitions(rd_kafka_t *rk, char **topics, int ntopics)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    for (int i = 0; i < ntopics; i++) {
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topics[i], NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, TIMEOUT_MS);
        if (e) die(topics[i], rd_kafka_err2str(e));
        if (md->topic_cnt != 1 || md->topics[0].err) die(topics[i], rd_kafka_err2str(md->topics[0].err));
        for (int p = 0; p < md->topics[0].partition_cnt; p++)
            rd_kafka_topic_partition_list_add(l, topics[i], md->topics[0].partitions[p].id);
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(t);
    }
    return l;
}

static int64_t high_watermark(rd_kafka_t *rk, const char *topic, int32_t p)
{
    int64_t lo, hi;
    rd_kafka_resp_err_t e;
    /* A new topic's partitions have no leader for a moment: retry. */
    for (int tries = 0;; tries++) {
        e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, TIMEOUT_MS);
        if (!e) return hi;
        if (tries >= 50 || (e != RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION &&
                            e != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE &&
                            e != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART))
            die(topic, rd_kafka_err2str(e));
        rd_kafka_poll(rk, 200);
    }
}

static int cmd_hw(const char *brokers, char **topics, int n)
{
    rd_kafka_t *rk = client(brokers, NULL, RD_KAFKA_CONSUMER);
    rd_kafka_topic_partition_list_t *l = partitions(rk, topics, n);
    int64_t hw = 0;
    for (int i = 0; i < l->cnt; i++) hw += high_watermark(rk, l->elems[i].topic, l->elems[i].partition);
    printf("%" PRId64 "\n", hw);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return 0;
}

static int cmd_lag(const char *brokers, const char *group, char **topics, int n)
{
    rd_kafka_t *rk = client(brokers, group, RD_KAFKA_CONSUMER);
    rd_kafka_topic_partition_list_t *l = partitions(rk, topics, n);
    rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, TIMEOUT_MS);
    if (e) die("committed offsets", rd_kafka_err2str(e));
    int64_t hw = 0, committed = 0, lag = 0;
    for (int i = 0; i < l->cnt; i++) {
        int64_t h = high_watermark(rk, l->elems[i].topic, l->elems[i].partition);
        int64_t c = l->elems[i].offset >= 0 ? l->elems[i].offset : 0;
        hw += h;
        committed += c;
        if (h > c) lag += h - c;
    }
    printf("hw=%" PRId64 " committed=%" PRId64 " lag=%" PRId64 "\n", hw, committed, lag);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return 0;
}

/* The answer of an admin request on q (the program ends without one). */
static rd_kafka_event_t *admin_answer(rd_kafka_queue_t *q, const char *what)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS * 2);
    if (!ev) die(what, "no answer");
    if (rd_kafka_event_error(ev)) die(what, rd_kafka_event_error_string(ev));
    return ev;
}

/* Prints each topic's error of an admin request's results; 1 if any. */
static int topic_errors(const rd_kafka_topic_result_t **res, size_t cnt)
{
    int rc = 0;
    for (size_t i = 0; i < cnt; i++)
        if (rd_kafka_topic_result_error(res[i])) {
            fprintf(stderr, "e2e_kafka: %s: %s\n", rd_kafka_topic_result_name(res[i]),
                    rd_kafka_topic_result_error_string(res[i]));
            rc = 1;
        }
    return rc;
}

static int cmd_add_partitions(const char *brokers, int total, char **topics, int n)
{
    char err[512];
    rd_kafka_t *rk = client(brokers, NULL, RD_KAFKA_PRODUCER);
    rd_kafka_NewPartitions_t **np = calloc((size_t)n, sizeof *np);
    for (int i = 0; i < n; i++)
        if (!(np[i] = rd_kafka_NewPartitions_new(topics[i], (size_t)total, err, sizeof err))) die(topics[i], err);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
    rd_kafka_AdminOptions_set_operation_timeout(o, TIMEOUT_MS, err, sizeof err);
    rd_kafka_CreatePartitions(rk, np, (size_t)n, o, q);
    rd_kafka_event_t *ev = admin_answer(q, "add partitions");
    size_t cnt;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(ev), &cnt);
    int rc = topic_errors(res, cnt);
    rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_NewPartitions_destroy_array(np, (size_t)n);
    free(np);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return rc;
}

static int cmd_create(const char *brokers, int parts, char **args, int nargs)
{
    char err[512];
    char **configs = args;
    int nconfigs = 0;
    while (nconfigs * 2 + 1 < nargs && !strcmp(args[nconfigs * 2], "--config")) nconfigs++;
    char **topics = args + nconfigs * 2;
    int n = nargs - nconfigs * 2;
    rd_kafka_t *rk = client(brokers, NULL, RD_KAFKA_PRODUCER);
    rd_kafka_NewTopic_t **nt = calloc((size_t)n, sizeof *nt);
    for (int i = 0; i < n; i++) {
        if (!(nt[i] = rd_kafka_NewTopic_new(topics[i], parts, 1, err, sizeof err))) die(topics[i], err);
        for (int c = 0; c < nconfigs; c++) {
            char kv[512];
            snprintf(kv, sizeof kv, "%s", configs[c * 2 + 1]);
            char *eq = strchr(kv, '=');
            if (!eq) die(configs[c * 2 + 1], "--config takes KEY=VALUE");
            *eq = 0;
            if (rd_kafka_NewTopic_set_config(nt[i], kv, eq + 1)) die(kv, "cannot be set");
        }
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(o, TIMEOUT_MS, err, sizeof err);
    rd_kafka_CreateTopics(rk, nt, (size_t)n, o, q);
    rd_kafka_event_t *ev = admin_answer(q, "create topics");
    size_t cnt;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
    int rc = topic_errors(res, cnt);
    rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_NewTopic_destroy_array(nt, (size_t)n);
    free(nt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return rc;
}

static int cmd_delete(const char *brokers, const char *prefix)
{
    char err[512];
    rd_kafka_t *rk = client(brokers, NULL, RD_KAFKA_PRODUCER);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, TIMEOUT_MS);
    if (e) die("metadata", rd_kafka_err2str(e));
    rd_kafka_DeleteTopic_t **dt = calloc((size_t)md->topic_cnt + 1, sizeof *dt);
    size_t n = 0;
    for (int i = 0; i < md->topic_cnt; i++)
        if (!strncmp(md->topics[i].topic, prefix, strlen(prefix)))
            dt[n++] = rd_kafka_DeleteTopic_new(md->topics[i].topic);
    rd_kafka_metadata_destroy(md);
    int rc = 0;
    if (n) {
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
        rd_kafka_AdminOptions_set_operation_timeout(o, TIMEOUT_MS, err, sizeof err);
        rd_kafka_DeleteTopics(rk, dt, n, o, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS * 2);
        if (!ev) die("delete topics", "no answer");
        if (rd_kafka_event_error(ev)) die("delete topics", rd_kafka_event_error_string(ev));
        size_t cnt;
        const rd_kafka_topic_result_t **res =
            rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &cnt);
        for (size_t i = 0; i < cnt; i++)
            if (rd_kafka_topic_result_error(res[i])) {
                fprintf(stderr, "e2e_kafka: %s: %s\n", rd_kafka_topic_result_name(res[i]),
                        rd_kafka_topic_result_error_string(res[i]));
                rc = 1;
            }
        rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_queue_destroy(q);
    }
    rd_kafka_DeleteTopic_destroy_array(dt, n);
    free(dt);
    printf("%zu\n", n);
    rd_kafka_destroy(rk);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[2], "hw")) return cmd_hw(argv[1], argv + 3, argc - 3);
    if (argc >= 5 && !strcmp(argv[2], "lag")) return cmd_lag(argv[1], argv[3], argv + 4, argc - 4);
    if (argc >= 5 && !strcmp(argv[2], "create-topics")) {
        int parts = atoi(argv[3]);
        if (parts < 1) return 2;
        return cmd_create(argv[1], parts, argv + 4, argc - 4);
    }
    if (argc >= 5 && !strcmp(argv[2], "add-partitions") && atoi(argv[3]) > 0)
        return cmd_add_partitions(argv[1], atoi(argv[3]), argv + 4, argc - 4);
    if (argc == 4 && !strcmp(argv[2], "delete-topics") && argv[3][0]) return cmd_delete(argv[1], argv[3]);
    fprintf(stderr, "usage: e2e_kafka BROKERS hw TOPIC... | lag GROUP TOPIC... |"
                    " create-topics N [--config K=V]... TOPIC... | add-partitions TOTAL TOPIC... |"
                    " delete-topics PREFIX\n");
    return 2;
}
