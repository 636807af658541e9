/*
 * metrics.c: `cdcstore ingest --metrics-addr HOST:PORT`, the ingest's
 * figures in Prometheus' text format at /metrics.  The only file that
 * includes libmicrohttpd.
 *
 * The HTTP server runs on libmicrohttpd's own thread.  The ingest loop
 * hands its figures over once per batch (cli_metrics_update, from the
 * per-batch callback of the Kafka source, in the thread that runs it: the
 * only thread that may read the store); a scrape formats the last figures
 * handed over.  One mutex guards them, held for a copy of counters and a
 * few histogram additions on one side, for the formatting on the other.
 *
 * What is served, after Prometheus' naming conventions (base units,
 * counters end in _total):
 *   - this run's counters from the Kafka source: cdcstore_events_total,
 *     _applied_total, _stale_total, _duplicate_total, _tombstones_total,
 *     _dead_letters_total, cdcstore_batches_total;
 *   - cdcstore_consumer_lag_records: records between the applied positions
 *     and the high watermarks of the assigned partitions (the sum over them:
 *     the Kafka source keeps no figure per partition), absent while unknown;
 *   - cdcstore_records_per_second, over about the last second of batches
 *     (0 when no batch came for 10 s);
 *   - histograms cdcstore_batch_apply_seconds (the time spent in
 *     cdc_store_apply per batch) and cdcstore_latency_seconds (end to end:
 *     the apply's wall clock minus the change's source ts_ms);
 *   - per table, the replica's persisted counters (CDC_STATS_MAP: the same
 *     figures as `cdcstore stats` and `status`, since the replica was
 *     created): cdcstore_table_<counter>_total{table="..."}, the gauges
 *     cdcstore_table_rows_live, _rows_deleted (tombstones kept),
 *     cdcstore_table_newest_change_timestamp_seconds, _newest_lsn, and
 *     cdcstore_table_behind_source_seconds (scrape time minus the newest
 *     change's source ts_ms).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <microhttpd.h>

#include "cdcstore.h"
#include "cli.h"

static const double batch_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
static const double latency_bounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NBATCH (sizeof batch_bounds / sizeof batch_bounds[0])
#define NLATENCY (sizeof latency_bounds / sizeof latency_bounds[0])
#define RATE_WINDOW_S 1.0
#define RATE_IDLE_S 10.0

/* Cumulative bucket counts are formed when served; here each bucket counts
 * its own observations (the last one: above every bound). */
typedef struct histogram {
    uint64_t counts[16];
    uint64_t count;
    double sum;
} histogram;

typedef struct table_figures {
    char *name;
    cdc_stats_t s;
} table_figures;

struct cli_metrics {
    struct MHD_Daemon *d;
    pthread_mutex_t mu;
    /* Guarded by mu. */
    cdc_kafka_stats_t run;
    histogram batch, latency;
    table_figures *tables;
    size_t ntables;
    double rate;              /* records per second over the last window */
    double rate_t0;           /* start of the current window (monotonic s) */
    uint64_t rate_n0;         /* records read at its start */
    uint64_t records;         /* Kafka records in the batches so far */
    double last_batch;        /* monotonic s of the last batch, 0 before one */
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void observe(histogram *h, const double *bounds, size_t nb, double v)
{
    size_t i = 0;
    while (i < nb && v > bounds[i]) i++;
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

/* ---- Text format ---- */

/* The families a scrape asked for: GET /metrics?name[]=F&name[]=G serves
 * only the families F and G (the filter of Prometheus' Java client), by the
 * name on their TYPE line; without name[], every family.  A scraper that
 * needs a few figures of a replica of a thousand tables (a script waiting
 * for cdcstore_events_total, say) then takes a few hundred bytes instead
 * of 1.2 MB: a whole page is 22 families per table. */
#define MAX_NAMES 32
typedef struct wanted {
    const char *names[MAX_NAMES];
    int n, over; /* over: more than MAX_NAMES asked for (every family is served) */
} wanted;

static int want(const wanted *w, const char *family)
{
    if (!w || !w->n || w->over) return 1;
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->names[i], family)) return 1;
    return 0;
}

/* A label value: backslash, double quote and newline escaped as the format
 * wants; other control bytes (from the records' table names) as '?'. */
static void put_label(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == '"') fputc('\\', f), fputc(c, f);
        else if (c == '\n') fputs("\\n", f);
        else if (c < 0x20 || c == 0x7f) fputc('?', f);
        else fputc(c, f);
    }
}

static void put_histogram(FILE *f, const wanted *w, const char *name, const char *help, const histogram *h,
                          const double *bounds, size_t nb)
{
    if (!want(w, name)) return;
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < nb; i++) {
        cum += h->counts[i];
        fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
    }
    fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)h->count,
            name, h->sum, name, (unsigned long long)h->count);
}

static void put_counter(FILE *f, const wanted *w, const char *name, const char *help, uint64_t v)
{
    if (!want(w, name)) return;
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

/* Counters of CDC_STATS_MAP that are not counts: served as gauges. */
static int is_gauge(const char *field)
{
    return !strcmp(field, "rows_live") || !strcmp(field, "rows_deleted") || !strcmp(field, "newest_lsn");
}

/* One family per CDC_STATS_MAP entry, a sample per table.  newest_ts_ms is
 * served in seconds, as a timestamp, by put_tables. */
static void put_table_family(FILE *f, const wanted *w, const table_figures *t, size_t n, const char *field,
                             const char *help, size_t offset)
{
    if (!strcmp(field, "newest_ts_ms") || !n) return;
    int gauge = is_gauge(field);
    const char *sfx = gauge ? "" : "_total";
    char family[128];
    snprintf(family, sizeof family, "cdcstore_table_%s%s", field, sfx);
    if (!want(w, family)) return;
    fprintf(f, "# HELP cdcstore_table_%s%s %s\n# TYPE cdcstore_table_%s%s %s\n", field, sfx, help, field, sfx,
            gauge ? "gauge" : "counter");
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&t[i].s + offset, sizeof v);
        fprintf(f, "cdcstore_table_%s%s{table=\"", field, sfx);
        put_label(f, t[i].name);
        fprintf(f, "\"} %llu\n", (unsigned long long)v);
    }
}

/* A per-table gauge of a table's newest change (ts_ms), in seconds: the
 * time itself, or (behind) now minus it.  Tables with none are left out. */
static void put_newest_family(FILE *f, const wanted *w, const table_figures *t, size_t n, const char *family,
                              const char *help, int behind, double now)
{
    if (!want(w, family)) return;
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", family, help, family);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].s.newest_ts_ms) continue;
        fprintf(f, "%s{table=\"", family);
        put_label(f, t[i].name);
        double ts = (double)t[i].s.newest_ts_ms / 1e3;
        fprintf(f, "\"} %.3f\n", behind ? now - ts : ts);
    }
}

static void put_tables(FILE *f, const wanted *w, const table_figures *t, size_t n)
{
#define PUT_FAMILY(field, SLOT, slot, what) put_table_family(f, w, t, n, #field, what, offsetof(cdc_stats_t, field));
    CDC_STATS_MAP(PUT_FAMILY)
#undef PUT_FAMILY
    if (!n) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    double now = (double)tv.tv_sec + tv.tv_usec / 1e6;
    put_newest_family(f, w, t, n, "cdcstore_table_newest_change_timestamp_seconds",
                      "source commit time (ts_ms) of the newest change applied to the table", 0, now);
    put_newest_family(f, w, t, n, "cdcstore_table_behind_source_seconds",
                      "now minus the source commit time of the newest change applied to the table", 1, now);
}

/* The page (the families w asks for) from a copy of the figures last
 * handed over (snapshot). */
static void put_page(FILE *f, const cli_metrics *m, const wanted *w)
{
    const cdc_apply_result_t *r = &m->run.total;
    put_counter(f, w, "cdcstore_events_total", "Kafka records that reached the decoder in this run", r->read);
    put_counter(f, w, "cdcstore_applied_total", "writes that changed the replica in this run", r->applied);
    put_counter(f, w, "cdcstore_stale_total", "events skipped in this run: older than the stored version or a newer event of the batch", r->stale);
    put_counter(f, w, "cdcstore_duplicate_total", "events skipped in this run: the same version as stored",
                r->duplicate);
    put_counter(f, w, "cdcstore_tombstones_total", "Kafka tombstones (null values) in this run", r->tombstones);
    put_counter(f, w, "cdcstore_dead_letters_total", "bad records (dead letters) in this run, each stored once",
                r->dead_letters);
    put_counter(f, w, "cdcstore_batches_total", "batches applied in this run", m->run.batches);
    if (m->run.lag >= 0 && want(w, "cdcstore_consumer_lag_records"))
        fprintf(f, "# HELP cdcstore_consumer_lag_records records between the applied positions and the high "
                   "watermarks of the assigned partitions, summed\n"
                   "# TYPE cdcstore_consumer_lag_records gauge\ncdcstore_consumer_lag_records %lld\n",
                (long long)m->run.lag);
    double rate = m->last_batch && mono_s() - m->last_batch < RATE_IDLE_S ? m->rate : 0;
    if (want(w, "cdcstore_records_per_second"))
        fprintf(f, "# HELP cdcstore_records_per_second Kafka records applied per second over the last second "
                   "of batches\n# TYPE cdcstore_records_per_second gauge\ncdcstore_records_per_second %.1f\n",
                rate);
    put_histogram(f, w, "cdcstore_batch_apply_seconds", "time spent applying one batch to the replica", &m->batch,
                  batch_bounds, NBATCH);
    put_histogram(f, w, "cdcstore_latency_seconds",
                  "end-to-end latency of a change: apply time minus the source commit time (ts_ms)", &m->latency,
                  latency_bounds, NLATENCY);
    put_tables(f, w, m->tables, m->ntables);
}

/* A copy of the figures, taken under mu, so that a scrape formats without
 * holding it: the ingest hands its figures over after every batch and
 * would otherwise wait for the formatting of a page of a thousand tables
 * (about 10 ms).  Freed by snapshot_free. */
static void snapshot(cli_metrics *m, cli_metrics *out)
{
    pthread_mutex_lock(&m->mu);
    *out = *m;
    out->tables = cli_calloc(m->ntables ? m->ntables : 1, sizeof *out->tables);
    for (size_t i = 0; i < m->ntables; i++) {
        out->tables[i] = m->tables[i];
        out->tables[i].name = cli_strdup(m->tables[i].name);
    }
    pthread_mutex_unlock(&m->mu);
}

static void snapshot_free(cli_metrics *s)
{
    for (size_t i = 0; i < s->ntables; i++) free(s->tables[i].name);
    free(s->tables);
}

static enum MHD_Result add_name(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    wanted *w = cls;
    if (!key || !value || (strcmp(key, "name[]") && strcmp(key, "name"))) return MHD_YES;
    if (w->n < MAX_NAMES) w->names[w->n++] = value;
    else w->over = 1;
    return MHD_YES;
}

/* ---- HTTP ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, char *body, size_t len, const char *type)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result rc = MHD_queue_response(c, code, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state)
{
    (void)version, (void)upload, (void)upload_size, (void)state;
    cli_metrics *m = cls;
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, cli_strdup("GET /metrics\n"), 13, "text/plain");
    if (strcmp(url, "/metrics"))
        return reply(c, MHD_HTTP_NOT_FOUND, cli_strdup("not found: the metrics are at /metrics\n"), 39,
                     "text/plain");
    wanted w = {.n = 0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_name, &w);
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f) return MHD_NO;
    cli_metrics snap;
    snapshot(m, &snap);
    put_page(f, &snap, &w);
    snapshot_free(&snap);
    if (fclose(f)) {
        free(body);
        return MHD_NO;
    }
    return reply(c, MHD_HTTP_OK, body, len, "text/plain; version=0.0.4; charset=utf-8");
}

/* ---- API for cli/ingest.c ---- */

int cli_metrics_start(const char *addr, cli_metrics **out)
{
    *out = NULL;
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1]) {
        fprintf(stderr, "cdcstore ingest: --metrics-addr %s: expected HOST:PORT (127.0.0.1:9187, [::1]:9187)\n",
                addr);
        return 2;
    }
    char host[256];
    const char *h = addr;
    size_t hl = (size_t)(colon - addr);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') h++, hl -= 2;
    snprintf(host, sizeof host, "%.*s", (int)hl, h);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) {
        fprintf(stderr, "cdcstore ingest: --metrics-addr %s: the port must be 0 to 65535\n", addr);
        return 2;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL;
    int gai = getaddrinfo(host, colon + 1, &hints, &ai);
    if (gai) {
        fprintf(stderr, "cdcstore ingest: --metrics-addr %s: %s\n", addr, gai_strerror(gai));
        return 2;
    }
    cli_metrics *m = cli_calloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->run.lag = -1;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    errno = 0;
    m->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                            MHD_OPTION_END);
    int e = errno;
    freeaddrinfo(ai);
    if (!m->d) {
        fprintf(stderr, "cdcstore ingest: --metrics-addr %s: cannot listen%s%s\n", addr, e ? ": " : "",
                e ? strerror(e) : "");
        pthread_mutex_destroy(&m->mu);
        free(m);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
    char msg[512];
    snprintf(msg, sizeof msg, "serving Prometheus metrics at http://%s%s%s:%u/metrics", hl && h != addr ? "[" : "",
             host, hl && h != addr ? "]" : "", di ? (unsigned)di->port : (unsigned)port);
    cli_log(NULL, CDC_LOG_INFO, "metrics", msg);
    *out = m;
    return 0;
}

/* Replaces the per-table figures with the replica's.  Reads the store:
 * only from the thread that runs the ingest. */
static void refresh_tables(cli_metrics *m, cdc_store_t *st)
{
    char **names = NULL;
    size_t n = 0;
    if (cdc_store_tables(st, &names, &n, NULL)) return;
    table_figures *t = cli_calloc(n, sizeof *t);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (cdc_store_stats(st, names[i], &t[k].s, NULL)) continue;
        t[k++].name = names[i];
        names[i] = NULL;
    }
    cdc_strings_free(names, n);
    pthread_mutex_lock(&m->mu);
    table_figures *old = m->tables;
    size_t nold = m->ntables;
    m->tables = t;
    m->ntables = k;
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < nold; i++) free(old[i].name);
    free(old);
}

void cli_metrics_update(cli_metrics *m, cdc_store_t *st, const cdc_kafka_batch_t *b)
{
    if (!m) return;
    if (b) {
        double now = mono_s();
        pthread_mutex_lock(&m->mu);
        m->run = *b->run;
        m->records += b->records;
        if (!m->rate_t0) {
            m->rate_t0 = now - b->apply_ms / 1e3;
            m->rate_n0 = m->records - b->records;
        }
        if (now - m->rate_t0 >= RATE_WINDOW_S) {
            m->rate = (double)(m->records - m->rate_n0) / (now - m->rate_t0);
            m->rate_t0 = now;
            m->rate_n0 = m->records;
        }
        m->last_batch = now;
        observe(&m->batch, batch_bounds, NBATCH, b->apply_ms / 1e3);
        for (size_t i = 0; i < b->nlatency; i++)
            observe(&m->latency, latency_bounds, NLATENCY, (double)b->latency_ms[i] / 1e3);
        pthread_mutex_unlock(&m->mu);
    }
    if (st) refresh_tables(m, st);
}

void cli_metrics_stop(cli_metrics *m)
{
    if (!m) return;
    MHD_stop_daemon(m->d);
    pthread_mutex_destroy(&m->mu);
    for (size_t i = 0; i < m->ntables; i++) free(m->tables[i].name);
    free(m->tables);
    free(m);
}
