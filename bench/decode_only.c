/*
 * decode_only: the JSON-decoding limit of applying a Debezium stream, with cJSON.
 *
 * For each line of a kcat -J events file it does what any consumer must do before it can apply
 * anything: parse the kcat record, take the payload string, parse that envelope, and extract op,
 * the after image (or the before key for a delete) and source.lsn (checked to be an integral double
 * in range, never read through valueint). Nothing is stored. The file is read into memory first
 * (not timed); the timed part splits the lines over T threads, each parsing a contiguous share.
 *
 * Usage: decode_only FILE [THREADS]
 * Prints one JSON object: events, threads, seconds, events_per_s, checksum (so the work is kept).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct job {
    char **lines;
    size_t *lens;
    size_t from, to;
    uint64_t checksum;
    size_t errors;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An LSN as a uint64: cJSON keeps numbers as doubles, exact up to 2^53. */
static int get_lsn(const cJSON *n, uint64_t *out)
{
    if (!cJSON_IsNumber(n))
        return -1;
    double d = n->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || floor(d) != d)
        return -1;
    *out = (uint64_t)d;
    return 0;
}

static void decode_one(struct job *j, const char *line, size_t len)
{
    cJSON *rec = cJSON_ParseWithLength(line, len);
    if (!rec) {
        j->errors++;
        return;
    }
    const cJSON *payload = cJSON_GetObjectItemCaseSensitive(rec, "payload");
    if (cJSON_IsString(payload)) {
        cJSON *env = cJSON_Parse(payload->valuestring);
        if (!env) {
            j->errors++;
        } else {
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(env, "op");
            const cJSON *after = cJSON_GetObjectItemCaseSensitive(env, "after");
            const cJSON *source = cJSON_GetObjectItemCaseSensitive(env, "source");
            const cJSON *img = cJSON_IsObject(after) ? after
                               : cJSON_GetObjectItemCaseSensitive(env, "before");
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(img, "id");
            uint64_t lsn = 0, key = 0;
            if (!cJSON_IsString(op) || get_lsn(cJSON_GetObjectItemCaseSensitive(source, "lsn"), &lsn) ||
                get_lsn(id, &key))
                j->errors++;
            else
                j->checksum += lsn ^ (key * 0x9E3779B97F4A7C15ull) ^ (uint64_t)(unsigned char)op->valuestring[0];
            if (cJSON_IsObject(after))
                j->checksum += (uint64_t)cJSON_GetArraySize(after);
            cJSON_Delete(env);
        }
    } else if (!cJSON_IsNull(payload)) {
        j->errors++;
    }
    cJSON_Delete(rec);
}

static void *run(void *arg)
{
    struct job *j = arg;
    for (size_t i = j->from; i < j->to; i++)
        decode_one(j, j->lines[i], j->lens[i]);
    return NULL;
}

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *size = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [THREADS]\n", argv[0]);
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 64)
        threads = 1;
    size_t size;
    char *data = read_file(argv[1], &size);
    if (!data) {
        fprintf(stderr, "decode_only: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    size_t cap = 1024, n = 0;
    char **lines = malloc(cap * sizeof *lines);
    size_t *lens = malloc(cap * sizeof *lens);
    for (char *p = data, *end = data + size; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n == cap) {
            cap *= 2;
            lines = realloc(lines, cap * sizeof *lines);
            lens = realloc(lens, cap * sizeof *lens);
        }
        if (len) {
            if (nl)
                *nl = '\0';
            lines[n] = p;
            lens[n++] = len;
        }
        p += len + 1;
    }
    struct job jobs[64];
    pthread_t tids[64];
    double t0 = now();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (struct job){lines, lens, n * (size_t)t / (size_t)threads,
                               n * (size_t)(t + 1) / (size_t)threads, 0, 0};
        pthread_create(&tids[t], NULL, run, &jobs[t]);
    }
    uint64_t sum = 0;
    size_t errors = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        sum += jobs[t].checksum;
        errors += jobs[t].errors;
    }
    double secs = now() - t0;
    printf("{\"events\":%zu,\"threads\":%d,\"seconds\":%.6f,\"events_per_s\":%.1f,"
           "\"errors\":%zu,\"checksum\":%llu}\n",
           n, threads, secs, (double)n / secs, errors, (unsigned long long)sum);
    free(lines);
    free(lens);
    free(data);
    return errors ? 1 : 0;
}
