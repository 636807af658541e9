/*
 * rocksdb_raw: the storage limit of applying a Debezium stream, with the RocksDB C API.
 *
 * Blind writes of the same keys as the events file, in file order, in WriteBatches of 1,000
 * (default options, create_if_missing; default write options, so the WAL is on and not synced):
 * a record with a payload is a Put of key = 8-byte big-endian id, value = the payload bytes as they
 * appear in the line; a tombstone is a Delete. No decoding, no reading before writing, no version
 * check: what is left is what the store itself costs. The keys and values are located in the
 * file before the clock starts (a string search, not a JSON parse).
 *
 * Usage: rocksdb_raw FILE DBDIR [BATCH]
 * Prints one JSON object: events, batch, seconds (writes + close), write_seconds, events_per_s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <rocksdb/c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rec {
    uint64_t id;
    const char *val; /* NULL for a tombstone */
    size_t len;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0, r;
    char *buf = malloc(cap + 1);
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

/* Locate key id and payload in one kcat -J line; 0 on success. */
static int locate(char *line, size_t len, struct rec *r)
{
    static const char key_tag[] = "\"key\":\"{\\\"id\\\":";
    static const char pay_tag[] = ",\"payload\":";
    char *k = memmem(line, len, key_tag, sizeof key_tag - 1);
    char *p = memmem(line, len, pay_tag, sizeof pay_tag - 1);
    if (!k || !p || line[len - 1] != '}')
        return -1;
    r->id = strtoull(k + sizeof key_tag - 1, NULL, 10);
    p += sizeof pay_tag - 1;
    size_t plen = (size_t)(line + len - 1 - p);
    if (plen == 4 && memcmp(p, "null", 4) == 0) {
        r->val = NULL;
        r->len = 0;
    } else {
        r->val = p;
        r->len = plen;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE DBDIR [BATCH]\n", argv[0]);
        return 2;
    }
    size_t batch = argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 1000;
    if (batch == 0)
        batch = 1000;
    size_t size;
    char *data = read_file(argv[1], &size);
    if (!data) {
        fprintf(stderr, "rocksdb_raw: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    size_t cap = 1024, n = 0;
    struct rec *recs = malloc(cap * sizeof *recs);
    for (char *p = data, *end = data + size; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len) {
            if (n == cap) {
                cap *= 2;
                recs = realloc(recs, cap * sizeof *recs);
            }
            if (locate(p, len, &recs[n])) {
                fprintf(stderr, "rocksdb_raw: line %zu: no key or payload\n", n + 1);
                return 1;
            }
            n++;
        }
        p += len + 1;
    }

    char *err = NULL;
    rocksdb_options_t *opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(opts, 1);
    rocksdb_t *db = rocksdb_open(opts, argv[2], &err);
    if (err) {
        fprintf(stderr, "rocksdb_raw: open %s: %s\n", argv[2], err);
        return 1;
    }
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();

    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        unsigned char key[8];
        uint64_t id = recs[i].id;
        for (int b = 7; b >= 0; b--, id >>= 8)
            key[b] = (unsigned char)(id & 0xff);
        if (recs[i].val)
            rocksdb_writebatch_put(wb, (const char *)key, 8, recs[i].val, recs[i].len);
        else
            rocksdb_writebatch_delete(wb, (const char *)key, 8);
        if ((i + 1) % batch == 0 || i + 1 == n) {
            rocksdb_write(db, wo, wb, &err);
            if (err) {
                fprintf(stderr, "rocksdb_raw: write: %s\n", err);
                return 1;
            }
            rocksdb_writebatch_clear(wb);
        }
    }
    double t1 = now();
    rocksdb_writebatch_destroy(wb);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_close(db);
    rocksdb_options_destroy(opts);
    double t2 = now();
    printf("{\"events\":%zu,\"batch\":%zu,\"seconds\":%.6f,\"write_seconds\":%.6f,"
           "\"events_per_s\":%.1f}\n",
           n, batch, t2 - t0, t1 - t0, (double)n / (t2 - t0));
    free(recs);
    free(data);
    return 0;
}
