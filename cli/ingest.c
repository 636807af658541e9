/*
 * ingest.c: `cdcstore ingest`, the long-running consumer.  Parses the
 * options, opens the replica and runs the library's Kafka source
 * (cdc_kafka_open/run/close) until SIGINT or SIGTERM, which finish the
 * current batch.  Kafka properties, secrets included, come from a file so
 * that none is visible on the command line (ps) or in the logs.
 */
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdcstore.h"
#include "cli.h"

static volatile int ingest_stop;

/* The first signal asks for a clean stop after the current batch; a second
 * one ends the process at once (the replica stays consistent either way). */
static void on_signal(int sig)
{
    if (ingest_stop) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    ingest_stop = 1;
}

typedef struct ingest_ctx {
    FILE *latency;      /* --latency-report, or NULL */
    FILE *klatency;     /* --kafka-latency-report, or NULL */
    cli_metrics *metrics; /* --metrics-addr, or NULL */
    cli_latwin *window; /* the last minute's latency, for cdcstore status */
    cdc_store_t *st;
} ingest_ctx;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_batch(void *opaque, const cdc_kafka_batch_t *b)
{
    ingest_ctx *c = opaque;
    cli_metrics_update(c->metrics, c->st, b);
    cli_latwin_add(c->window, b->latency_ms, b->nlatency, wall_ms());
    if (c->latency) {
        for (size_t i = 0; i < b->nlatency; i++) fprintf(c->latency, "%lld\n", (long long)b->latency_ms[i]);
        fflush(c->latency);
    }
    if (c->klatency) {
        for (size_t i = 0; i < b->nkafka_latency; i++)
            fprintf(c->klatency, "%lld\n", (long long)b->kafka_latency_ms[i]);
        fflush(c->klatency);
    }
}

static const char *ingest_usage =
    "usage: cdcstore ingest --db DIR --brokers HOST:PORT --topic T [--topic T2 ...] [--topic-regex RE]\n"
    "                       [--group G] [--batch-max-events N] [--batch-max-ms MS] [--kafka-config FILE]\n"
    "                       [--from-beginning] [--on-error continue|stop] [--sync]\n"
    "                       [--decimal S.T.C=SCALE]... [--column-type S.T.C=TYPE]... [--latency-report FILE]\n"
    "                       [--kafka-latency-report FILE] [--metrics-addr HOST:PORT] [--purge-after DURATION]\n"
    "Consumes Debezium topics into the replica in DIR (created when absent) until\n"
    "SIGINT or SIGTERM, which finish the current batch.  Each batch is applied\n"
    "atomically with its Kafka positions; the positions stored in the replica, not\n"
    "the group's committed offsets, say where every partition resumes.\n"
    "  --brokers LIST          bootstrap servers (or bootstrap.servers in --kafka-config)\n"
    "  --topic T               a topic to consume; repeat for more (or only --topic-regex)\n"
    "  --topic-regex RE        also every topic RE matches from the start of its name\n"
    "                          (POSIX extended; '$' ends it): 'shop\\.public\\.' takes a\n"
    "                          whole schema; new topics join at the next metadata refresh\n"
    "                          (topic.metadata.refresh.interval.ms, default 5 minutes)\n"
    "  --group G               consumer group (default cdcstore-<basename of DIR>);\n"
    "                          processes of one group split the partitions, each with\n"
    "                          its own replica directory\n"
    "  --batch-max-events N    records per batch, 1 to 100000000 (default 10000)\n"
    "  --batch-max-ms MS       apply a batch at most MS after its first record, 1 to\n"
    "                          3600000 (default 20; the end-to-end latency of a trickle\n"
    "                          of changes includes up to this wait)\n"
    "  --kafka-config FILE     librdkafka properties, key=value lines, # comments\n"
    "                          (SASL/SSL settings and secrets belong here); while\n"
    "                          behind, the consumer prefetches up to 1,000,000 records\n"
    "                          or 32 MiB: queued.min.messages and\n"
    "                          queued.max.messages.kbytes=32768 set them\n"
    "  --from-beginning        read every partition from its first offset in this run\n"
    "                          (a replay: already applied changes are skipped)\n"
    "  --on-error MODE         continue (default): dead-letter bad records; stop: exit 4\n"
    "                          at the first one\n"
    "  --metrics-addr H:P      serve Prometheus metrics at http://H:P/metrics while it\n"
    "                          runs (counters, consumer lag, records/s, batch apply time\n"
    "                          and end-to-end latency histograms, per-table counters);\n"
    "                          /metrics?name[]=F&name[]=G serves only the families F, G\n"
    "  --decimal T.C=S         the column's NUMERIC values are Debezium's base64 'precise'\n"
    "                          encoding with scale S (remembered by the replica)\n"
    "  --column-type T.C=TYPE  the column's numbers are a time type (envelopes without a\n"
    "                          schema): timestamp (microseconds), timestamp-ms, date, time\n"
    "                          (microseconds), time-ms (TIME(0-3)), interval;\n"
    "                          or bytea (base64, binary.handling.mode=bytes); or\n"
    "                          timestamptz (the text kept, typed in Parquet and Delta,\n"
    "                          years before 1 and past 9999 in PostgreSQL's form in CSV)\n"
    "  --purge-after DURATION  purge tombstones automatically (off by default): each\n"
    "                          table's purge horizon follows, DURATION behind (30m,\n"
    "                          12h, 7d), the LSN the replica had applied, and RocksDB's\n"
    "                          compactions remove the tombstones below it; a purged\n"
    "                          delete still blocks late older updates.  Give it only\n"
    "                          when every change reaches the replica within DURATION\n"
    "                          of its transaction's first write (connector delay,\n"
    "                          longest transaction, consumer lag and stops included)\n"
    "  --sync                  fsync every batch\n"
    "  --latency-report FILE   write the end-to-end latency of every streamed change, in\n"
    "                          ms (apply time minus the event's source ts_ms), one a\n"
    "                          line; snapshot reads have none (their ts_ms is when the\n"
    "                          snapshot ran, not when the row changed)\n"
    "  --kafka-latency-report FILE  write, for every record, the time from its Kafka\n"
    "                          timestamp to its apply, in ms, one a line: the last stage\n"
    "                          of the latency (the broker's append time on a topic with\n"
    "                          message.timestamp.type=LogAppendTime, else the producer's)\n"
    "Exit status: 0 stopped by a signal, 1 error, 2 usage, 3 dead letters were written,\n"
    "4 stopped at a bad record (--on-error stop).\n";

int cmd_ingest(int argc, char **argv)
{
    const char *db = NULL, *latency_path = NULL, *klatency_path = NULL, *metrics_addr = NULL;
    cdc_kafka_options_t ko = {0};
    const char **topics = cli_calloc((size_t)argc + 1, sizeof *topics);
    char **decimals = cli_calloc((size_t)argc + 1, sizeof *decimals);
    char **types = cli_calloc((size_t)argc + 1, sizeof *types);
    size_t ntopics = 0, ndec = 0, ntypes = 0;
    char *group = NULL;
    int status = EXIT_OK, created = 0;
    uint64_t v;
    static struct option lo[] = {{"db", 1, 0, 'd'},
                                 {"brokers", 1, 0, 'b'},
                                 {"topic", 1, 0, 't'},
                                 {"topic-regex", 1, 0, 'R'},
                                 {"group", 1, 0, 'g'},
                                 {"batch-max-events", 1, 0, 'n'},
                                 {"batch-max-ms", 1, 0, 'm'},
                                 {"kafka-config", 1, 0, 'k'},
                                 {"from-beginning", 0, 0, 'B'},
                                 {"on-error", 1, 0, 'e'},
                                 {"decimal", 1, 0, 'D'},
                                 {"column-type", 1, 0, 'T'},
                                 {"sync", 0, 0, 's'},
                                 {"latency-report", 1, 0, 'L'},
                                 {"kafka-latency-report", 1, 0, 'K'},
                                 {"metrics-addr", 1, 0, 'A'},
                                 {"purge-after", 1, 0, 'P'},
                                 {"help", 0, 0, 'h'},
                                 {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:b:t:R:g:n:m:k:Be:D:T:sL:K:A:P:h", lo, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'b': ko.brokers = optarg; break;
        case 't': topics[ntopics++] = optarg; break;
        case 'R': ko.topic_regex = optarg; break;
        case 'g': ko.group = optarg; break;
        case 'n':
            if ((status = cli_parse_uint("ingest", "--batch-max-events", optarg, 1, 100000000, &v))) goto out;
            ko.batch_max_events = (size_t)v;
            break;
        case 'm':
            if ((status = cli_parse_uint("ingest", "--batch-max-ms", optarg, 1, 3600000, &v))) goto out;
            ko.batch_max_ms = (int)v;
            break;
        case 'k': ko.config_file = optarg; break;
        case 'B': ko.from_beginning = 1; break;
        case 'e':
            if (!strcmp(optarg, "stop")) ko.apply.on_error = CDC_ON_ERROR_STOP;
            else if (!strcmp(optarg, "continue")) ko.apply.on_error = CDC_ON_ERROR_CONTINUE;
            else {
                fprintf(stderr, "cdcstore ingest: --on-error takes continue or stop\n");
                status = EXIT_USAGE;
                goto out;
            }
            break;
        case 'D': decimals[ndec++] = optarg; break;
        case 'T': types[ntypes++] = optarg; break;
        case 's': ko.apply.sync = 1; break;
        case 'L': latency_path = optarg; break;
        case 'K': klatency_path = optarg; break;
        case 'A': metrics_addr = optarg; break;
        case 'P':
            if ((status = cli_parse_duration("ingest", "--purge-after", optarg, &ko.purge_after_ms))) goto out;
            break;
        case 'h': fputs(ingest_usage, stdout); goto out;
        default: fputs(ingest_usage, stderr); status = EXIT_USAGE; goto out;
        }
    }
    if (!db || (!ntopics && !ko.topic_regex) || optind != argc) {
        fputs(ingest_usage, stderr);
        status = EXIT_USAGE;
        goto out;
    }
    if (!ko.group) {
        char *copy = cli_strdup(db);
        size_t l = strlen(copy);
        while (l > 1 && copy[l - 1] == '/') copy[--l] = 0;
        if (asprintf(&group, "cdcstore-%s", basename(copy)) < 0) group = NULL;
        free(copy);
        ko.group = group;
    }

    if ((status = cli_declare_columns(NULL, "ingest", decimals, ndec, types, ntypes))) goto out;

    ingest_ctx ctx = {0};
    if (latency_path && !(ctx.latency = fopen(latency_path, "w"))) {
        perror(latency_path);
        status = EXIT_ERR;
        goto out;
    }
    if (klatency_path && !(ctx.klatency = fopen(klatency_path, "w"))) {
        perror(klatency_path);
        status = EXIT_ERR;
        goto out_latency;
    }

    cdc_store_t *st = NULL;
    if ((status = cli_open(db, 1, 0, &st, &created))) goto out_latency;
    cdc_error_t e = {0};
    if ((status = cli_declare_columns(st, "ingest", decimals, ndec, types, ntypes))) goto out_store;
    ctx.st = st;
    if (metrics_addr) {
        if ((status = cli_metrics_start(metrics_addr, &ctx.metrics))) goto out_store;
        cli_metrics_update(ctx.metrics, st, NULL);
    }

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    ko.topics = topics;
    ko.ntopics = ntopics;
    ko.log = cli_log;
    ko.stop = &ingest_stop;
    ko.on_batch = on_batch;
    ko.on_batch_opaque = &ctx;
    cdc_kafka_t *k = NULL;
    int rc = cdc_kafka_open(st, &ko, &k, &e);
    if (rc) {
        status = cli_fail(&e, rc);
        goto out_store;
    }
    ctx.window = cli_latwin_new(db);
    rc = cdc_kafka_run(k, &e);
    cdc_kafka_stats_t s;
    cdc_kafka_stats(k, &s);
    cdc_kafka_close(k);
    cli_latwin_free(ctx.window, wall_ms());
    ctx.window = NULL;
    if (rc == CDC_ESTOPPED) {
        cli_printf_escaped(stderr, "cdcstore: %s", e.msg);
        status = EXIT_STOPPED;
    } else if (rc) {
        status = cli_fail(&e, rc);
    }
    /* The latency is that of streamed changes only (cdc_kafka_stats_t):
     * a snapshot read's ts_ms says when the snapshot ran, not when a row
     * changed. */
    char latency[160] = "no streamed change yet";
    if (s.latency_samples)
        snprintf(latency, sizeof latency, "p50 %lld ms, p99 %lld ms, max %lld ms over %llu %s",
                 (long long)s.latency_p50_ms, (long long)s.latency_p99_ms, (long long)s.latency_max_ms,
                 (unsigned long long)s.latency_samples, cli_plural(s.latency_samples, "change", "changes"));
    cli_note("info",
            "cdcstore ingest: %llu %s in %llu %s: %llu applied, %llu stale, %llu duplicate, %llu %s, %llu %s; "
            "end-to-end latency of streamed changes (snapshot reads not counted): %s",
            (unsigned long long)s.total.read, cli_plural(s.total.read, "record", "records"),
            (unsigned long long)s.batches, cli_plural(s.batches, "batch", "batches"),
            (unsigned long long)s.total.applied, (unsigned long long)s.total.stale,
            (unsigned long long)s.total.duplicate, (unsigned long long)s.total.tombstones,
            cli_plural(s.total.tombstones, "tombstone", "tombstones"), (unsigned long long)s.total.dead_letters,
            cli_plural(s.total.dead_letters, "dead letter", "dead letters"), latency);
    if (status == EXIT_OK && s.total.dead_letters) {
        cli_dead_letters_note(stderr, "ingest", &s.total, db);
        status = EXIT_DEAD;
    }
out_store:
    /* A run that failed before anything arrived (brokers unreachable, a bad
     * option) leaves no empty replica behind. */
    if (created && status != EXIT_OK && status != EXIT_DEAD) cli_remove_new_replica(st, db);
    else cdc_store_close(st);
out_latency:
    cli_metrics_stop(ctx.metrics);
    if (ctx.latency) fclose(ctx.latency);
    if (ctx.klatency) fclose(ctx.klatency);
out:
    free(group);
    free(topics);
    free(decimals);
    free(types);
    return status;
}
