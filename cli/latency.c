/*
 * latency.c: the end-to-end latency of the last minute, which a running
 * `cdcstore ingest` leaves beside the replica for `cdcstore status`.
 *
 * Latency is not a property of the replica's data (the store keeps each
 * change's source ts_ms, not when it was applied), and status opens the
 * replica read-only, so the ingest that measures it writes it down: once a
 * second, the file `cdcstore-ingest-latency` in the replica directory,
 * replaced atomically (written beside, then renamed), holds the p50, p99
 * and max of the streamed changes applied in the last 60 s, how many they
 * were, when it was written and by which process.  RocksDB leaves files it
 * did not name alone, and the store accepts names starting with
 * "cdcstore-" among its files (store/store.c).  Snapshot reads have no such
 * latency and are not counted (as in cdc_kafka_stats_t).
 *
 * The window is 60 one-second slots of a histogram with bins 5% wide
 * (bin b holds latencies up to 1.05^b ms), so the percentiles are upper
 * bounds at most 5% above the exact figure, at a fixed cost per change and
 * 60 x 400 counters of memory, whatever the rate.  The ingest's own summary
 * line and --latency-report are exact.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define LAT_SLOTS 60
#define LAT_BINS 400
#define LAT_FILE "cdcstore-ingest-latency"

struct cli_latwin {
    char *path, *tmp;
    struct {
        int64_t sec;
        int64_t max;
        uint32_t bins[LAT_BINS];
    } slot[LAT_SLOTS];
    int64_t written_ms;
    int warned;
};

static int bin_of(int64_t ms)
{
    if (ms <= 1) return 0;
    int b = (int)ceil(log((double)ms) / log(1.05));
    return b < LAT_BINS ? b : LAT_BINS - 1;
}

static int64_t bin_top(int b) { return (int64_t)ceil(pow(1.05, b)); }

cli_latwin *cli_latwin_new(const char *db)
{
    cli_latwin *w = cli_calloc(1, sizeof *w);
    size_t n = strlen(db) + sizeof "/" LAT_FILE ".tmp";
    w->path = cli_calloc(n, 1);
    w->tmp = cli_calloc(n, 1);
    snprintf(w->path, n, "%s/%s", db, LAT_FILE);
    snprintf(w->tmp, n, "%s/%s.tmp", db, LAT_FILE);
    for (int i = 0; i < LAT_SLOTS; i++) w->slot[i].sec = -1;
    return w;
}

/* The window's figures at now_ms. */
static void window(const cli_latwin *w, int64_t now_ms, cli_latency *out)
{
    static uint32_t sum[LAT_BINS];
    int64_t now_s = now_ms / 1000;
    memset(sum, 0, sizeof sum);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < LAT_SLOTS; i++) {
        if (w->slot[i].sec < 0 || w->slot[i].sec <= now_s - LAT_SLOTS || w->slot[i].sec > now_s) continue;
        for (int b = 0; b < LAT_BINS; b++) {
            sum[b] += w->slot[i].bins[b];
            out->samples += w->slot[i].bins[b];
        }
        if (w->slot[i].max > out->max_ms) out->max_ms = w->slot[i].max;
    }
    uint64_t seen = 0, at50 = (out->samples + 1) / 2, at99 = out->samples - out->samples / 100;
    for (int b = 0; b < LAT_BINS && out->samples; b++) {
        if (!sum[b]) continue;
        seen += sum[b];
        if (!out->p50_ms && seen >= at50) out->p50_ms = bin_top(b);
        if (seen >= at99) {
            out->p99_ms = bin_top(b);
            break;
        }
    }
    /* a bin's top may pass the largest latency it holds */
    if (out->p50_ms > out->max_ms) out->p50_ms = out->max_ms;
    if (out->p99_ms > out->max_ms) out->p99_ms = out->max_ms;
    out->as_of_ms = now_ms;
    out->window_s = LAT_SLOTS;
    out->pid = (long)getpid();
}

static void write_file(cli_latwin *w, int64_t now_ms, int running)
{
    cli_latency l;
    window(w, now_ms, &l);
    FILE *f = fopen(w->tmp, "w");
    int ok = f != NULL;
    if (f) {
        ok = fprintf(f,
                     "cdcstore ingest latency 1\nas_of_ms %lld\npid %ld\nrunning %d\nwindow_s %d\nsamples %llu\n"
                     "p50_ms %lld\np99_ms %lld\nmax_ms %lld\n",
                     (long long)l.as_of_ms, l.pid, running, l.window_s, (unsigned long long)l.samples,
                     (long long)l.p50_ms, (long long)l.p99_ms, (long long)l.max_ms) > 0;
        ok = (fclose(f) == 0) && ok;
    }
    if (ok) ok = rename(w->tmp, w->path) == 0;
    if (!ok) {
        int e = errno;
        unlink(w->tmp);
        if (!w->warned) {
            char msg[600];
            snprintf(msg, sizeof msg, "cannot write %s (%s): cdcstore status will not show the latency",
                     w->path, strerror(e));
            cli_log(NULL, CDC_LOG_WARN, "ingest", msg);
            w->warned = 1;
        }
    }
    w->written_ms = now_ms;
}

void cli_latwin_add(cli_latwin *w, const int64_t *ms, size_t n, int64_t now_ms)
{
    if (!w) return;
    int64_t sec = now_ms / 1000;
    int i = (int)(sec % LAT_SLOTS);
    if (w->slot[i].sec != sec) {
        memset(w->slot[i].bins, 0, sizeof w->slot[i].bins);
        w->slot[i].max = 0;
        w->slot[i].sec = sec;
    }
    for (size_t k = 0; k < n; k++) {
        int64_t v = ms[k] < 0 ? 0 : ms[k];
        w->slot[i].bins[bin_of(v)]++;
        if (v > w->slot[i].max) w->slot[i].max = v;
    }
    if (now_ms - w->written_ms >= 1000) write_file(w, now_ms, 1);
}

void cli_latwin_free(cli_latwin *w, int64_t now_ms)
{
    if (!w) return;
    write_file(w, now_ms, 0);
    free(w->path);
    free(w->tmp);
    free(w);
}

int cli_latwin_read(const char *db, cli_latency *out)
{
    char path[4096], key[32];
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "%s/%s", db, LAT_FILE);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[128];
    int fields = 0;
    if (!fgets(line, sizeof line, f) || strcmp(line, "cdcstore ingest latency 1\n")) {
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        long long v;
        if (sscanf(line, "%31s %lld", key, &v) != 2) continue;
        if (!strcmp(key, "as_of_ms")) out->as_of_ms = v, fields++;
        else if (!strcmp(key, "pid")) out->pid = (long)v, fields++;
        else if (!strcmp(key, "running")) out->running = (int)v, fields++;
        else if (!strcmp(key, "window_s")) out->window_s = (int)v, fields++;
        else if (!strcmp(key, "samples")) out->samples = (uint64_t)v, fields++;
        else if (!strcmp(key, "p50_ms")) out->p50_ms = v, fields++;
        else if (!strcmp(key, "p99_ms")) out->p99_ms = v, fields++;
        else if (!strcmp(key, "max_ms")) out->max_ms = v, fields++;
    }
    fclose(f);
    return fields == 8 ? 0 : -1;
}
