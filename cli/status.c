/*
 * status.c: `cdcstore status`, what an operator looks at first.  Per table
 * the newest applied change (its source ts_ms and LSN, and how far behind
 * the source the replica is), the counters and the tombstones kept; per
 * topic partition the stored position and, with --brokers, the Kafka high
 * watermark and the lag; the dead letters in total.  Everything comes from
 * the replica opened read-only (no lock, so it answers while an ingest
 * writes) and from cdc_kafka_watermarks_config(): this file links no Kafka client.
 *
 * End-to-end latency is not in the replica's data: the ingest that applies
 * to it measures it and writes the last minute's p50/p99 beside it every
 * second (cli/latency.c); status prints that, with how old it is and
 * whether that ingest still runs.
 *
 * Exit status 1 when it cannot answer: the replica is missing or does not
 * open, or a broker query failed (everything else is printed first).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "cdcstore.h"
#include "cli.h"

/* Exit statuses (the command's: 0, 1 error, 2 usage). */
enum { ST_OK = 0, ST_CANNOT_ANSWER = 1, ST_USAGE = 2 };

static const char *status_usage =
    "usage: cdcstore status --db DIR [--brokers HOST:PORT] [--kafka-config FILE] [--timeout-ms MS] [--json]\n"
    "Prints what the replica in DIR holds and how far behind it is: per table the\n"
    "newest applied change (its source ts_ms and LSN, and now - ts_ms: how far\n"
    "behind the source), the counters and the tombstones kept; per topic partition\n"
    "the stored position (the highest applied offset) and, with --brokers, the\n"
    "Kafka high watermark and the lag (records not applied yet); the dead letters.\n"
    "The replica is opened read-only, so status answers while an ingest runs.\n"
    "End-to-end latency (apply time - the change's source ts_ms): p50 and p99 of the\n"
    "streamed changes of the last minute, as a running `cdcstore ingest` of this\n"
    "replica writes them down every second (its file cdcstore-ingest-latency in DIR).\n"
    "  --brokers LIST      bootstrap servers to ask for the high watermarks\n"
    "  --kafka-config FILE librdkafka properties, key=value lines, # comments: the\n"
    "                      ingest's file (TLS, SASL); its bootstrap.servers serves\n"
    "                      when --brokers is not given\n"
    "  --timeout-ms MS     how long to wait for the brokers (default 5000)\n"
    "  --json              one JSON object\n"
    "Exit status: 0 answered, 1 the replica is missing or unreadable, or the brokers\n"
    "did not answer (what is known is printed first), 2 usage.\n";

/* How old the ingest's latency file may be while it runs before status says
 * it is stale: it is written at most once a second, on a batch. */
#define LATENCY_STALE_MS 10000

/* The latency line: what the ingest of this replica measured over its last
 * minute (cli/latency.c), or why there is no figure. */
static void latency_text(const char *db, int64_t now, char *buf, size_t n)
{
    cli_latency l;
    if (cli_latwin_read(db, &l)) {
        snprintf(buf, n, "unknown: no cdcstore ingest has written it for this replica");
        return;
    }
    double age = (double)(now - l.as_of_ms) / 1e3;
    char when[96];
    if (!l.running)
        snprintf(when, sizeof when, "; the ingest (pid %ld) stopped %.0f s ago", l.pid, age);
    else if (now - l.as_of_ms > LATENCY_STALE_MS)
        snprintf(when, sizeof when, "; written %.0f s ago by pid %ld: no batch since (an idle source, or the "
                                    "ingest is stuck or gone)", age, l.pid);
    else snprintf(when, sizeof when, " (ingest pid %ld, %.1f s ago)", l.pid, age);
    if (!l.samples)
        snprintf(buf, n, "no streamed change applied in the last %d s%s", l.window_s, when);
    else
        snprintf(buf, n, "p50 %lld ms, p99 %lld ms, max %lld ms over %llu %s in the last %d s%s",
                 (long long)l.p50_ms, (long long)l.p99_ms, (long long)l.max_ms, (unsigned long long)l.samples,
                 cli_plural(l.samples, "change", "changes"), l.window_s, when);
}

typedef struct part_status {
    const cdc_position_t *pos;
    int asked, ok;
    int64_t low, high, lag;
    char err[sizeof ((cdc_error_t *)0)->msg];
} part_status;

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ts_ms as an ISO 8601 UTC time in buf. */
static const char *iso_time(int64_t ts_ms, char *buf, size_t n)
{
    time_t t = (time_t)(ts_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t l = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + l, n - l, ".%03dZ", (int)(ts_ms % 1000));
    return buf;
}

/* Asks the brokers for every partition's watermarks.  After a query that
 * failed by running out of time the brokers are taken as unreachable and
 * the rest are not asked (each would wait as long).  Returns the number of
 * failed queries. */
static int ask_brokers(const char *brokers, const char *kcfg, int timeout_ms, part_status *ps, size_t n)
{
    int failed = 0, unreachable = 0;
    for (size_t i = 0; i < n; i++) {
        part_status *p = &ps[i];
        p->lag = -1;
        if (unreachable) {
            snprintf(p->err, sizeof p->err, "not asked: the brokers did not answer");
            failed++;
            continue;
        }
        cdc_error_t e = {0};
        double t0 = mono_ms();
        p->asked = 1;
        int rc = cdc_kafka_watermarks_config(brokers, kcfg, p->pos->topic, p->pos->partition, timeout_ms, &p->low,
                                             &p->high, &e);
        if (rc) {
            snprintf(p->err, sizeof p->err, "%s", e.msg[0] ? e.msg : cdc_strerror(rc));
            failed++;
            if (mono_ms() - t0 >= timeout_ms * 0.9) unreachable = 1;
            continue;
        }
        p->ok = 1;
        int64_t next = p->pos->offset + 1;
        p->lag = p->high > next ? p->high - next : 0;
    }
    return failed;
}

/* ---- Text ---- */

static void print_table_text(const char *name, const cdc_stats_t *s, const char *stopped, int64_t now)
{
    char when[64];
    cli_write_escaped(stdout, name, strlen(name));
    putchar('\n');
    if (stopped) { /* its events are dead letters until `cdcstore resume` */
        fputs("  STOPPED              ", stdout);
        cli_write_escaped(stdout, stopped, strlen(stopped));
        putchar('\n');
    }
    if (s->newest_ts_ms)
        printf("  newest change        source ts_ms %llu (%s), lsn %llu: %.3f s behind the source\n",
               (unsigned long long)s->newest_ts_ms, iso_time((int64_t)s->newest_ts_ms, when, sizeof when),
               (unsigned long long)s->newest_lsn, (double)(now - (int64_t)s->newest_ts_ms) / 1e3);
    else
        printf("  newest change        unknown (no change applied by this build yet)\n");
    printf("  rows                 %llu live, %llu %s kept (%llu purged)\n", (unsigned long long)s->rows_live,
           (unsigned long long)s->rows_deleted, cli_plural(s->rows_deleted, "tombstone", "tombstones"),
           (unsigned long long)s->tombstones_purged);
    printf("  events               %llu read: %llu applied, %llu stale, %llu duplicate, %llu Kafka tombstones, "
           "%llu dead letters\n",
           (unsigned long long)s->events_read, (unsigned long long)s->applied, (unsigned long long)s->stale,
           (unsigned long long)s->duplicate, (unsigned long long)s->tombstones,
           (unsigned long long)s->dead_letters);
}

static void print_text(const char *db, char **tables, const cdc_stats_t *ts, const char **stopped, size_t nt,
                       const cdc_stats_t *total, const part_status *ps, size_t np, const char *brokers, int64_t now)
{
    fputs("replica ", stdout);
    cli_write_escaped(stdout, db, strlen(db));
    putchar('\n');
    printf("\ntables (%zu)\n", nt);
    for (size_t i = 0; i < nt; i++) print_table_text(tables[i], &ts[i], stopped[i], now);
    printf("\npartitions (%zu)%s\n", np, brokers ? "" : ": high watermarks and lag need --brokers");
    for (size_t i = 0; i < np; i++) {
        const part_status *p = &ps[i];
        fputs("  ", stdout);
        cli_write_escaped(stdout, p->pos->topic, strlen(p->pos->topic));
        printf("[%d]  offset %lld", (int)p->pos->partition, (long long)p->pos->offset);
        if (p->ok)
            printf("  high watermark %lld  lag %lld", (long long)p->high, (long long)p->lag);
        else if (brokers) {
            fputs("  high watermark unknown: ", stdout);
            cli_write_escaped(stdout, p->err, strlen(p->err));
        }
        putchar('\n');
    }
    char when[64];
    printf("\ntotal\n");
    if (total->newest_ts_ms)
        printf("  newest change        source ts_ms %llu (%s): %.3f s behind the source\n",
               (unsigned long long)total->newest_ts_ms, iso_time((int64_t)total->newest_ts_ms, when, sizeof when),
               (double)(now - (int64_t)total->newest_ts_ms) / 1e3);
    printf("  events               %llu read, %llu applied\n", (unsigned long long)total->events_read,
           (unsigned long long)total->applied);
    printf("  tombstones kept      %llu\n", (unsigned long long)total->rows_deleted);
    printf("  dead letters         %llu%s\n", (unsigned long long)total->dead_letters,
           total->dead_letters ? " (cdcstore dlq list)" : "");
    if (brokers) {
        int64_t lag = 0;
        int known = 0;
        for (size_t i = 0; i < np; i++)
            if (ps[i].ok) lag += ps[i].lag, known = 1;
        if (known) printf("  lag                  %lld records\n", (long long)lag);
    }
    char lat[400];
    latency_text(db, now, lat, sizeof lat);
    printf("  latency              %s\n", lat);
}

/* ---- JSON ---- */

static void json_str(const char *s)
{
    cdc_json_write_string(stdout, s, strlen(s));
}

static void json_counters(const cdc_stats_t *s)
{
#define STATUS_JSON(field, SLOT, slot, what) printf("%s\"" #field "\":%llu", first ? "" : ",", \
                                                    (unsigned long long)s->field), first = 0;
    int first = 1;
    putchar('{');
    CDC_STATS_MAP(STATUS_JSON)
    putchar('}');
#undef STATUS_JSON
}

static void json_newest(const cdc_stats_t *s, int64_t now)
{
    if (s->newest_ts_ms)
        printf("\"newest_ts_ms\":%llu,\"newest_lsn\":%llu,\"behind_ms\":%lld", (unsigned long long)s->newest_ts_ms,
               (unsigned long long)s->newest_lsn, (long long)(now - (int64_t)s->newest_ts_ms));
    else
        fputs("\"newest_ts_ms\":null,\"newest_lsn\":null,\"behind_ms\":null", stdout);
}

static void print_json(const char *db, char **tables, const cdc_stats_t *ts, const char **stopped, size_t nt,
                       const cdc_stats_t *total, const part_status *ps, size_t np, const char *brokers, int64_t now)
{
    fputs("{\"db\":", stdout);
    json_str(db);
    printf(",\"now_ms\":%lld,\"tables\":{", (long long)now);
    for (size_t i = 0; i < nt; i++) {
        if (i) putchar(',');
        json_str(tables[i]);
        putchar(':');
        putchar('{');
        json_newest(&ts[i], now);
        printf(",\"tombstones_kept\":%llu,\"stopped\":", (unsigned long long)ts[i].rows_deleted);
        if (stopped[i]) json_str(stopped[i]);
        else fputs("null", stdout);
        fputs(",\"counters\":", stdout);
        json_counters(&ts[i]);
        putchar('}');
    }
    fputs("},\"partitions\":[", stdout);
    int64_t lag = 0;
    int lag_known = 0;
    for (size_t i = 0; i < np; i++) {
        const part_status *p = &ps[i];
        fputs(i ? ",{\"topic\":" : "{\"topic\":", stdout);
        json_str(p->pos->topic);
        printf(",\"partition\":%d,\"offset\":%lld", (int)p->pos->partition, (long long)p->pos->offset);
        if (p->ok) {
            printf(",\"low_watermark\":%lld,\"high_watermark\":%lld,\"lag\":%lld", (long long)p->low,
                   (long long)p->high, (long long)p->lag);
            lag += p->lag;
            lag_known = 1;
        } else {
            fputs(",\"low_watermark\":null,\"high_watermark\":null,\"lag\":null", stdout);
            if (brokers) {
                fputs(",\"error\":", stdout);
                json_str(p->err);
            }
        }
        putchar('}');
    }
    fputs("],\"total\":{", stdout);
    json_newest(total, now);
    printf(",\"tombstones_kept\":%llu,\"dead_letters\":%llu,\"lag\":", (unsigned long long)total->rows_deleted,
           (unsigned long long)total->dead_letters);
    if (lag_known) printf("%lld", (long long)lag);
    else fputs("null", stdout);
    fputs(",\"counters\":", stdout);
    json_counters(total);
    fputs("},\"latency\":", stdout);
    cli_latency l;
    char lat[400];
    latency_text(db, now, lat, sizeof lat);
    if (cli_latwin_read(db, &l)) {
        fputs("{\"p50_ms\":null,\"p99_ms\":null,\"max_ms\":null,\"samples\":0,\"note\":", stdout);
    } else {
        if (l.samples)
            printf("{\"p50_ms\":%lld,\"p99_ms\":%lld,\"max_ms\":%lld,", (long long)l.p50_ms, (long long)l.p99_ms,
                   (long long)l.max_ms);
        else fputs("{\"p50_ms\":null,\"p99_ms\":null,\"max_ms\":null,", stdout);
        printf("\"samples\":%llu,\"window_s\":%d,\"as_of_ms\":%lld,\"pid\":%ld,\"running\":%s,\"stale\":%s,"
               "\"note\":",
               (unsigned long long)l.samples, l.window_s, (long long)l.as_of_ms, l.pid, l.running ? "true" : "false",
               l.running && now - l.as_of_ms > LATENCY_STALE_MS ? "true" : "false");
    }
    json_str(lat);
    fputs("}}\n", stdout);
}

int cmd_status(int argc, char **argv)
{
    const char *db = NULL, *brokers = NULL, *kcfg = NULL;
    int json = 0, timeout_ms = 5000;
    static struct option lo[] = {{"db", 1, 0, 'd'},         {"brokers", 1, 0, 'b'}, {"json", 0, 0, 'j'},
                                 {"timeout-ms", 1, 0, 't'}, {"help", 0, 0, 'h'},    {"kafka-config", 1, 0, 'k'},
                                 {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:b:jt:hk:", lo, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'b': brokers = optarg; break;
        case 'k': kcfg = optarg; break;
        case 'j': json = 1; break;
        case 't': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v <= 0 || v > 600000) {
                fprintf(stderr, "cdcstore status: --timeout-ms takes milliseconds, 1 to 600000\n");
                return ST_USAGE;
            }
            timeout_ms = (int)v;
            break;
        }
        case 'h': fputs(status_usage, stdout); return ST_OK;
        default: fputs(status_usage, stderr); return ST_USAGE;
        }
    }
    if (!db || optind != argc) {
        fputs(status_usage, stderr);
        return ST_USAGE;
    }
    /* Read-only: no lock, so status answers while an ingest writes. */
    cdc_open_options_t oo = {.create_if_missing = 0, .read_only = 1, .log = cli_log};
    cdc_store_t *st = NULL;
    cdc_error_t e = {0};
    int status = ST_OK;
    int rc = cdc_store_open(db, &oo, &st, &e);
    if (rc) {
        cli_printf_escaped(stderr, "cdcstore status: cannot answer: %s", e.msg[0] ? e.msg : cdc_strerror(rc));
        return ST_CANNOT_ANSWER;
    }
    char **tables = NULL;
    size_t nt = 0, np = 0;
    cdc_position_t *pos = NULL;
    cdc_stats_t *ts = NULL, total;
    const char **stopped = NULL; /* per table: why it is stopped (the store's), or NULL */
    part_status *ps = NULL;
    rc = cdc_store_tables(st, &tables, &nt, &e);
    if (!rc) rc = cdc_store_positions(st, &pos, &np, &e);
    if (!rc) rc = cdc_store_stats(st, NULL, &total, &e);
    if (!rc) {
        ts = cli_calloc(nt, sizeof *ts);
        stopped = cli_calloc(nt + 1, sizeof *stopped);
        for (size_t i = 0; i < nt && !rc; i++) rc = cdc_store_stats(st, tables[i], &ts[i], &e);
        for (size_t i = 0; i < nt && !rc; i++) rc = cdc_store_table_stopped(st, tables[i], &stopped[i], &e);
    }
    if (rc) {
        status = cli_fail(&e, rc);
        goto out;
    }
    ps = cli_calloc(np, sizeof *ps);
    for (size_t i = 0; i < np; i++) ps[i].pos = &pos[i], ps[i].lag = -1;
    /* With --kafka-config alone the brokers are the file's bootstrap.servers. */
    const char *asked = brokers ? brokers : kcfg;
    int failed = asked ? ask_brokers(brokers, kcfg, timeout_ms, ps, np) : 0;
    int64_t now = now_ms();
    if (json) print_json(db, tables, ts, stopped, nt, &total, ps, np, asked, now);
    else print_text(db, tables, ts, stopped, nt, &total, ps, np, asked, now);
    if (failed) {
        const char *why = "";
        for (size_t i = 0; i < np && !*why; i++)
            if (!ps[i].ok) why = ps[i].err;
        cli_printf_escaped(stderr, "cdcstore status: cannot answer in full: %d of %zu partitions without a high "
                                   "watermark (%s)", failed, np, why);
        status = ST_CANNOT_ANSWER;
    }
out:
    free(ps);
    free(ts);
    free(stopped);
    cdc_positions_free(pos, np);
    cdc_strings_free(tables, nt);
    cdc_store_close(st);
    return status;
}
