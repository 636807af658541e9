/*
 * scan_only: the floor of any export of a table, its read from the replica with nothing
 * encoded or written.  Reads every row of TABLE through the public iterator (cdc_iter_next, the
 * one each export format is fed by), on two threads split at MIDKEY as `cdcstore export` splits a
 * large table, or on one without it, and touches each value's bytes (a checksum of their
 * lengths and first bytes) so that the read is not optimized away.
 *
 * Usage: scan_only DIR TABLE [MIDKEY_JSON]    e.g. scan_only R public.bench '[5000001]'
 * Prints one JSON object: rows, threads, seconds (wall, from the open to the last row),
 * cpu_seconds (user + system of the process), rows_per_s, checksum.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "cdcstore.h"

struct half {
    cdc_store_t *st;
    const char *table, *lower, *upper;
    uint64_t rows, checksum;
    int rc;
    cdc_error_t err;
};

static void *scan(void *arg)
{
    struct half *h = arg;
    cdc_iter_options_t io = {.lower_json = h->lower, .upper_json = h->upper, .no_key_json = 1};
    cdc_iter_t *it;
    if ((h->rc = cdc_iter_open(h->st, h->table, &io, &it, &h->err))) return NULL;
    cdc_row_t r;
    int rc;
    while ((rc = cdc_iter_next(it, &r, &h->err)) == 1) {
        h->rows++;
        for (size_t i = 0; i < r.ncols; i++)
            h->checksum += r.lens[i] + (r.values[i] && r.lens[i] ? (unsigned char)r.values[i][0] : 0);
    }
    if (rc < 0) h->rc = rc;
    cdc_iter_close(it);
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: scan_only DIR TABLE [MIDKEY_JSON]\n");
        return 2;
    }
    double t0 = now();
    cdc_open_options_t o = {.read_only = 1};
    cdc_store_t *st;
    cdc_error_t err = {0};
    if (cdc_store_open(argv[1], &o, &st, &err)) {
        fprintf(stderr, "scan_only: %s\n", err.msg);
        return 1;
    }
    struct half h[2] = {{.st = st, .table = argv[2]}, {.st = st, .table = argv[2]}};
    int threads = argc == 4 ? 2 : 1;
    pthread_t th;
    if (threads == 2) {
        h[0].upper = h[1].lower = argv[3];
        if (pthread_create(&th, NULL, scan, &h[1])) {
            fprintf(stderr, "scan_only: no thread\n");
            return 1;
        }
    }
    scan(&h[0]);
    if (threads == 2) pthread_join(th, NULL);
    double el = now() - t0;
    for (int i = 0; i < threads; i++)
        if (h[i].rc) {
            fprintf(stderr, "scan_only: %s\n", h[i].err.msg);
            return 1;
        }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec / 1e6;
    uint64_t rows = h[0].rows + h[1].rows;
    printf("{\"rows\":%llu,\"threads\":%d,\"seconds\":%.3f,\"cpu_seconds\":%.3f,\"rows_per_s\":%.0f,"
           "\"checksum\":%llu}\n",
           (unsigned long long)rows, threads, el, cpu, el > 0 ? (double)rows / el : 0.0,
           (unsigned long long)(h[0].checksum + h[1].checksum));
    cdc_store_close(st);
    return 0;
}
