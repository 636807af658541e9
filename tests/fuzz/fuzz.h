/*
 * fuzz.h: what the libFuzzer targets of tests/fuzz/ share: a check that
 * aborts with a message (libFuzzer then saves the input as a crash), the
 * invariants every decoded event must hold, the key round trip through the
 * key codec, and a scratch replica directory on tmpfs.  Header-only, so that
 * each target is one file linked against the fuzz build of the library
 * (build-fuzz/libcdcstore.a, see tests/fuzz/fuzz.mk).
 *
 * The checks are the oracles beyond the sanitizers: a decoded event whose
 * row or key does not parse back, or a printed key that does not read back
 * to the same bytes, is a bug even when no memory is touched out of bounds.
 */
#ifndef CDC_FUZZ_H
#define CDC_FUZZ_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest.h"

/* Aborts with the failed condition and a message: an oracle failure is a
 * crash to libFuzzer, which saves the input. */
#define FUZZ_CHECK(cond, ...)                                                                         \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            fprintf(stderr, "\nFUZZ CHECK FAILED at %s:%d: %s\n  ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                                             \
            fputc('\n', stderr);                                                                      \
            abort();                                                                                  \
        }                                                                                             \
    } while (0)

/* ---- Known findings ---- */

/* Findings reported and not fixed yet in the library are listed in
 * tests/fuzz/README.md ("Known findings").  The checks they
 * fail are skipped, so that fuzzing goes on past them and `make test`
 * does not fail at random on them, unless CDC_FUZZ_STRICT=1: then every
 * check holds, which is how a fix is verified on the saved inputs. */
static inline int fuzz_strict(void)
{
    static int strict = -1;
    if (strict < 0) {
        const char *e = getenv("CDC_FUZZ_STRICT");
        strict = e && strcmp(e, "1") == 0;
    }
    return strict;
}

/* 1 when two of the n names are equal. */
static inline int fuzz_has_duplicates(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) == 0) return 1;
    return 0;
}

/* ---- Text ---- */

/* 1 when s (n bytes) is UTF-8 as PostgreSQL takes it: no overlong forms,
 * no surrogates, nothing above U+10FFFF. */
static inline int fuzz_utf8_valid(const char *s, size_t n)
{
    if (n == 0) return 1; /* s may be NULL: an empty cdc__buf */
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p++, cp, min;
        int more;
        if (c < 0x80) continue;
        if ((c & 0xE0) == 0xC0) more = 1, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0) more = 2, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0) more = 3, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (end - p < more) return 0;
        for (int k = 0; k < more; k++) {
            if ((p[k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (p[k] & 0x3Fu);
        }
        p += more;
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    }
    return 1;
}

/* Text PostgreSQL can hold: valid UTF-8 without a NUL character. */
static inline int fuzz_pg_text(const char *s, size_t n) { return n == 0 || (fuzz_utf8_valid(s, n) && !memchr(s, 0, n)); }

/* Walks an encoded key (store/codec.c: 0x20 + 8 bytes, or 0x30, bytes with
 * 0x00 as 0x00 0xFF, 0x00 0x00): the number of elements, or -1 when it does
 * not parse; *utf8 (may be NULL) is 1 when every text element is valid
 * UTF-8, *nul when one holds a NUL. */
static inline long fuzz_key_walk(const char *key, size_t len, int *utf8, int *nul)
{
    const unsigned char *p = (const unsigned char *)key, *end = p + len;
    long n = 0;
    int ok = 1, z = 0;
    cdc__buf text = {0};
    while (p < end) {
        if (*p == CDC__KEY_INT) {
            if (end - p < 9) goto bad;
            p += 9;
        } else if (*p == CDC__KEY_TEXT) {
            cdc__buf_reset(&text);
            for (p++;; p += p[0] ? 1 : 2) {
                if (p + 1 >= end) goto bad;
                if (p[0] == 0 && p[1] == 0) break;
                if (p[0] == 0 && p[1] != 0xFF) goto bad;
                cdc__buf_putc(&text, (char)p[0]);
                z |= p[0] == 0;
            }
            p += 2;
            ok &= fuzz_utf8_valid(text.p, text.len);
        } else {
            goto bad;
        }
        n++;
    }
    cdc__buf_free(&text);
    if (utf8) *utf8 = ok;
    if (nul) *nul = z;
    return n;
bad:
    cdc__buf_free(&text);
    return -1;
}


/* ---- Event invariants ---- */

/* Reads the key column names of an event (varint n, n x (varint len,
 * name)) into a malloc'd array of malloc'd strings; checks the framing. */
static inline char **fuzz_keycols(const cdc__buf *kc, size_t *n)
{
    const char *p = kc->p, *end = kc->p + kc->len;
    uint64_t cnt, len;
    FUZZ_CHECK(kc->len > 0 && cdc__get_varint(&p, end, &cnt) == 0, "keycols without a count");
    FUZZ_CHECK(cnt <= kc->len, "keycols count %llu larger than its %zu bytes", (unsigned long long)cnt,
               kc->len);
    char **names = calloc(cnt ? cnt : 1, sizeof *names);
    for (uint64_t i = 0; i < cnt; i++) {
        FUZZ_CHECK(cdc__get_varint(&p, end, &len) == 0 && len <= (uint64_t)(end - p),
                   "keycols: name %llu truncated", (unsigned long long)i);
        names[i] = strndup(p, (size_t)len);
        FUZZ_CHECK(strlen(names[i]) == len, "keycols: name %llu holds a NUL byte", (unsigned long long)i);
        p += len;
    }
    FUZZ_CHECK(p == end, "keycols: %zu bytes after the names", (size_t)(end - p));
    *n = (size_t)cnt;
    return names;
}

static inline void fuzz_strings_free(char **s, size_t n)
{
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}

/* Checks the framing of an event row: varint ncols (at most PostgreSQL's
 * 1,600), then per column varint name length, name, varint tag, and tag - 2
 * value bytes for text; nothing after. */
static inline void fuzz_check_evrow(const cdc__buf *row)
{
    const char *p = row->p, *end = row->p + row->len;
    uint64_t n, len, tag;
    FUZZ_CHECK(row->len > 0 && cdc__get_varint(&p, end, &n) == 0, "event row without a column count");
    FUZZ_CHECK(n <= 1600, "event row of %llu columns", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        FUZZ_CHECK(cdc__get_varint(&p, end, &len) == 0 && len <= (uint64_t)(end - p),
                   "event row: column %llu name truncated", (unsigned long long)i);
        FUZZ_CHECK(fuzz_pg_text(p, (size_t)len), "event row: column %llu's name is no PostgreSQL text: %.*s",
                   (unsigned long long)i, (int)len, p);
        p += len;
        FUZZ_CHECK(cdc__get_varint(&p, end, &tag) == 0, "event row: column %llu has no tag",
                   (unsigned long long)i);
        if (tag >= CDC__V_TEXT) {
            size_t vl = (size_t)(tag - CDC__V_TEXT);
            FUZZ_CHECK(tag - CDC__V_TEXT <= (uint64_t)(end - p), "event row: column %llu value truncated",
                       (unsigned long long)i);
            FUZZ_CHECK(fuzz_pg_text(p, vl), "event row: column %llu's value is no PostgreSQL text: %.*s",
                       (unsigned long long)i, (int)vl, p);
            p += vl;
        }
    }
    FUZZ_CHECK(p == end, "event row: %zu bytes after the last column", (size_t)(end - p));
}

/* The key codec's round trip: an encoded key printed as JSON (an object
 * with names, an array without) is valid UTF-8 and, when the key's text is
 * (a byte that is not UTF-8 prints as U+FFFD, store/json.c), reads back to
 * the same bytes.  This is what `cdcstore get` and the iterator's bounds
 * rely on when they are given a key_json the store printed. */
static inline void fuzz_check_key_roundtrip(const char *key, size_t len, const char *const *names,
                                            size_t nnames)
{
    cdc__buf json = {0}, back = {0};
    cdc_error_t e = {0};
    int utf8 = 0;
    int rc = cdc__key_to_json(key, len, names, nnames, &json);
    FUZZ_CHECK(rc == 0, "cdc__key_to_json refused a key the library made (%zu bytes)", len);
    FUZZ_CHECK(fuzz_utf8_valid(json.p, json.len), "a printed key is not valid UTF-8: %.*s", (int)json.len, json.p);
    cdc__buf_putc(&json, 0);
    FUZZ_CHECK(fuzz_key_walk(key, len, &utf8, NULL) >= 0, "a key that does not parse prints as %s", json.p);
    if (!utf8) {
        cdc__buf_free(&json);
        return;
    }
    rc = cdc__key_from_json(json.p, names, nnames, &back, &e);
    FUZZ_CHECK(rc == 0, "the printed key %s does not read back: %s", json.p, e.msg);
    FUZZ_CHECK(back.len == len && memcmp(back.p, key, len) == 0,
               "the printed key %s reads back to other bytes (%zu, not %zu)", json.p, back.len, len);
    cdc__buf_free(&json);
    cdc__buf_free(&back);
}

/* What a decoded event must hold, whatever the input: a known action, a
 * table name within the limit where one is needed, a key that prints and
 * reads back with its column names, a well-framed row. */
static inline void fuzz_check_event(const cdc__event *ev)
{
    size_t nk = 0;
    char **kc;
    FUZZ_CHECK(ev->action >= CDC__ACT_UPSERT && ev->action <= CDC__ACT_DEAD, "action %d", ev->action);
    if (ev->table)
        FUZZ_CHECK(strlen(ev->table) <= CDC__TABLE_NAME_MAX, "table name of %zu bytes", strlen(ev->table));
    /* Text PostgreSQL cannot hold (not UTF-8, or a NUL) is refused by the
     * decoder (ingest/decode.c, "Text PostgreSQL cannot hold"), a table name
     * taken from the topic included (K4). */
    if (ev->table && ev->action != CDC__ACT_DEAD && ev->action != CDC__ACT_TOMBSTONE)
        FUZZ_CHECK(fuzz_utf8_valid(ev->table, strlen(ev->table)), "table name %s is not UTF-8", ev->table);
    switch (ev->action) {
    case CDC__ACT_UPSERT:
    case CDC__ACT_DELETE:
        FUZZ_CHECK(ev->table && *ev->table, "a row change without a table");
        FUZZ_CHECK(ev->key.len > 0, "a row change without a key");
        FUZZ_CHECK(ev->snapshot >= CDC__SNAP_NONE && ev->snapshot <= CDC__SNAP_INCREMENTAL, "snapshot %d",
                   ev->snapshot);
        kc = fuzz_keycols(&ev->keycols, &nk);
        FUZZ_CHECK(nk > 0, "a row change with no key columns");
        {
            int utf8 = 0, nul = 0;
            FUZZ_CHECK(fuzz_key_walk(ev->key.p, ev->key.len, &utf8, &nul) == (long)nk,
                       "a key of another number of elements than its %zu columns", nk);
            FUZZ_CHECK(utf8 && !nul, "a key whose text PostgreSQL cannot hold");
            for (size_t i = 0; i < nk; i++)
                FUZZ_CHECK(fuzz_utf8_valid(kc[i], strlen(kc[i])), "key column name %s is not UTF-8", kc[i]);
        }
        FUZZ_CHECK(!fuzz_has_duplicates((const char *const *)kc, nk), "a key naming a column twice");
        fuzz_check_key_roundtrip(ev->key.p, ev->key.len, (const char *const *)kc, nk);
        fuzz_check_key_roundtrip(ev->key.p, ev->key.len, NULL, 0);
        fuzz_strings_free(kc, nk);
        fuzz_check_evrow(&ev->row);
        break;
    case CDC__ACT_FLOOR:
        FUZZ_CHECK(ev->table && *ev->table, "a truncate without a table");
        FUZZ_CHECK(ev->key.len == 0, "a truncate with a key");
        break;
    case CDC__ACT_DEAD:
        FUZZ_CHECK(ev->reason && *ev->reason, "a dead letter without a reason");
        break;
    default:
        break;
    }
}

/* ---- Scratch directories ---- */

static int fuzz_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline void fuzz_rmrf(const char *dir) { nftw(dir, fuzz_rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

/* A fresh directory under $CDC_FUZZ_TMPDIR, else /dev/shm (tmpfs: RocksDB
 * syncs its manifest on every new column family), else /tmp.  The caller
 * removes it (fuzz_rmrf) and frees the string. */
static inline char *fuzz_tmpdir(void)
{
    const char *base = getenv("CDC_FUZZ_TMPDIR");
    if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    size_t n = strlen(base) + 32;
    char *d = malloc(n);
    snprintf(d, n, "%s/cdcfuzz.XXXXXX", base);
    FUZZ_CHECK(mkdtemp(d) != NULL, "cannot create a directory under %s", base);
    return d;
}

/* Declares column types as `cdcstore apply --decimal/--column-type` would,
 * so that the decoder's declared-scale and declared-time paths run: on
 * public.orders (the captured output's table, whose created_at arrives as
 * microseconds) and on public.precise_orders, which the seeds made from
 * tests/data/debezium/precise_decimal.jsonl name (its amount is Debezium's
 * base64 NUMERIC; see make-seeds.py). */
static inline void fuzz_store_settings(cdc_store_t *st)
{
    static const char *const types[][3] = {
        {"public.orders", "created_at", "timestamp"},  {"public.orders", "ts", "timestamp-ms"},
        {"public.orders", "d", "date"},                {"public.orders", "t", "time"},
        {"public.orders", "n", "numeric:3"},           {"public.precise_orders", "created_at", "timestamp"},
        {"public.precise_orders", "amount", "numeric:2"},
    };
    cdc_error_t e = {0};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        FUZZ_CHECK(cdc_store_set_column_type(st, types[i][0], types[i][1], types[i][2], &e) == 0, "%s",
                   e.msg);
}

/* Opens (creating) a replica in dir with a small block cache. */
static inline cdc_store_t *fuzz_open(const char *dir)
{
    cdc_open_options_t o = {0};
    cdc_store_t *st = NULL;
    cdc_error_t e = {0};
    o.create_if_missing = 1;
    o.block_cache_mb = 8;
    int rc = cdc_store_open(dir, &o, &st, &e);
    FUZZ_CHECK(rc == 0, "cannot open a replica in %s: %s", dir, e.msg);
    fuzz_store_settings(st);
    return st;
}

#endif
