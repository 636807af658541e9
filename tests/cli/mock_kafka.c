/*
 * mock_kafka: a Kafka broker for tests/cli/status_metrics.sh, without a
 * stack: librdkafka's mock cluster (rdkafka_mock.h), which listens on a
 * loopback port that other processes (cdcstore ingest, cdcstore status)
 * connect to like to a broker.
 *
 *   mock_kafka TOPIC RATE SECONDS
 *
 * Creates TOPIC (one partition), prints its bootstrap address on the first
 * line of stdout, then produces RATE change events a second for SECONDS:
 * Debezium envelopes (schemas.enable=false) of table public.items, creates
 * of keys 1, 2, ... with increasing LSNs and the current time as source
 * ts_ms, so that an ingest applies every one and measures a latency.  Prints
 * "produced N" when done, then keeps the cluster up until stdin closes.
 * Exit status: 0, 1 error, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)level, (void)fac, (void)buf;
}

static rd_kafka_t *new_producer(const char *bootstraps)
{
    char es[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    if (bootstraps && rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps, es, sizeof es)) goto bad;
    if (rd_kafka_conf_set(conf, "linger.ms", "0", es, sizeof es)) goto bad;
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, es, sizeof es);
    if (rk) return rk;
bad:
    fprintf(stderr, "mock_kafka: %s\n", es);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: mock_kafka TOPIC RATE SECONDS\n");
        return 2;
    }
    const char *topic = argv[1];
    int rate = atoi(argv[2]), secs = atoi(argv[3]);
    rd_kafka_t *host = new_producer(NULL);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(host, 1);
    if (!mc || rd_kafka_mock_topic_create(mc, topic, 1, 1)) {
        fprintf(stderr, "mock_kafka: cannot start the mock cluster\n");
        return 1;
    }
    printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    rd_kafka_t *prod = new_producer(rd_kafka_mock_cluster_bootstraps(mc));
    long n = (long)rate * secs;
    for (long i = 1; i <= n; i++) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        long long ts = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
        char key[64], val[512];
        snprintf(key, sizeof key, "{\"id\":%ld}", i);
        snprintf(val, sizeof val,
                 "{\"before\":null,\"after\":{\"id\":%ld,\"name\":\"item %ld\"},\"source\":{\"ts_ms\":%lld,"
                 "\"snapshot\":\"false\",\"schema\":\"public\",\"table\":\"items\",\"lsn\":%ld},\"op\":\"c\","
                 "\"ts_ms\":%lld}",
                 i, i, ts, 1000 + i * 10, ts);
        rd_kafka_resp_err_t e = rd_kafka_producev(
            prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(val, strlen(val)), RD_KAFKA_V_END);
        if (e) {
            fprintf(stderr, "mock_kafka: produce: %s\n", rd_kafka_err2str(e));
            return 1;
        }
        rd_kafka_poll(prod, 0);
        usleep((useconds_t)(1000000 / (rate > 0 ? rate : 1)));
    }
    if (rd_kafka_flush(prod, 10000)) {
        fprintf(stderr, "mock_kafka: flush timed out\n");
        return 1;
    }
    printf("produced %ld\n", n);
    fflush(stdout);
    char buf[256];
    while (fread(buf, 1, sizeof buf, stdin) > 0) {
    }
    rd_kafka_destroy(prod);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(host);
    return 0;
}
