/*
 * testutil.h: shared test helpers: a temporary replica directory per test,
 * Kafka records built from strings, applying them, and reading the view back
 * as CSV text.  Header-only so that each test file stays one process.
 */
#ifndef CDC_TESTUTIL_H
#define CDC_TESTUTIL_H

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdcstore.h"

static int tu_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* Removes a directory tree. */
static inline void tu_rmrf(const char *dir) { nftw(dir, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

/* A fresh temporary directory (caller frees the string). */
static inline char *tu_tmpdir(void)
{
    /* tmpfs when there is one: RocksDB syncs its manifest on every new
     * column family, and the randomized test creates thousands. */
    char *d = strdup(access("/dev/shm", W_OK) == 0 ? "/dev/shm/cdctest.XXXXXX" : "/tmp/cdctest.XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

static inline cdc_store_t *tu_open(const char *dir)
{
    cdc_store_t *st = NULL;
    cdc_error_t e = {0};
    int rc = cdc_store_open(dir, NULL, &st, &e);
    cr_assert_eq(rc, 0, "open %s: %s", dir, e.msg);
    return st;
}

/* One record: topic/partition/offset, key JSON (or NULL), value JSON (or NULL
 * for a tombstone).  Strings are borrowed. */
static inline cdc_record_t tu_rec(const char *topic, int partition, long offset, const char *key,
                                  const char *value)
{
    cdc_record_t r = {0};
    r.topic = topic;
    r.partition = partition;
    r.offset = offset;
    r.key = key;
    r.key_len = key ? strlen(key) : 0;
    r.value = value;
    r.value_len = value ? strlen(value) : 0;
    r.line = offset;
    return r;
}

static inline cdc_apply_result_t tu_apply(cdc_store_t *st, const cdc_record_t *r, size_t n)
{
    cdc_apply_result_t res;
    cdc_error_t e = {0};
    int rc = cdc_store_apply(st, r, n, NULL, &res, &e);
    cr_assert_eq(rc, 0, "apply: %s", e.msg);
    return res;
}

/* The export of table as a malloc'd string (CSV with header; meta adds
 * __lsn/__deleted and deleted rows). */
static inline char *tu_export(cdc_store_t *st, const char *table, int meta)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char path[] = "/tmp/cdcexport.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cdc_export_options_t o = {.header = 1, .meta = meta};
    cdc_error_t e = {0};
    uint64_t rows;
    int rc = cdc_export_fd(st, table, &o, fd, &rows, &e);
    cr_assert_eq(rc, 0, "export: %s", e.msg);
    lseek(fd, 0, SEEK_SET);
    char tmp[65536];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) > 0) fwrite(tmp, 1, (size_t)n, f);
    close(fd);
    unlink(path);
    fclose(f);
    return buf;
}

/* A Debezium envelope (schemas.enable=false) as a malloc'd string.  after and
 * before are JSON objects or "null"; snapshot is "true"/"last"/"false"... */
static inline char *tu_env(const char *op, const char *before, const char *after, unsigned long long lsn,
                           const char *snapshot)
{
    char *s = NULL;
    int rc = asprintf(&s,
                      "{\"before\":%s,\"after\":%s,\"source\":{\"version\":\"3.6.1.Final\",\"connector\":"
                      "\"postgresql\",\"name\":\"shop\",\"ts_ms\":1700000000000,\"snapshot\":\"%s\",\"db\":\"shop\","
                      "\"schema\":\"public\",\"table\":\"orders\",\"txId\":1,\"lsn\":%llu},\"op\":\"%s\","
                      "\"ts_ms\":1700000000001}",
                      before ? before : "null", after ? after : "null", snapshot ? snapshot : "false", lsn, op);
    cr_assert(rc > 0);
    return s;
}

/* The whole file as a malloc'd string. */
static inline char *tu_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s: cannot open", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) fwrite(tmp, 1, n, m);
    fclose(f);
    fclose(m);
    return buf;
}

/* A malloc'd printf string (the test fails when it cannot be made). */
static inline char *tu_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static inline char *tu_fmt(const char *f, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, f);
    cr_assert(vasprintf(&s, f, ap) >= 0);
    va_end(ap);
    return s;
}

#endif
