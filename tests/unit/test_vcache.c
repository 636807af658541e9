/*
 * test_vcache.c: the apply's cache of recently written rows (store/vcache.c)
 * changes nothing.  Random streams (snapshots that complete and raise the
 * table's floor, creates, updates, deletes with Kafka tombstones, late and
 * duplicate events, truncates, purges of tombstones) are applied batch by
 * batch to three replicas: one open all along (the cache warm), one open all
 * along with a cache of a few hundred bytes (entries evicted at every batch),
 * and one opened again before every batch (the cache always cold, every
 * stored value read from RocksDB).  After each batch the three must export
 * the same rows, tombstones included, with the same versions, and hold the
 * same counters.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "store.h"

#define TOPIC "shop.public.orders"
#define NKEYS 60

typedef struct stream {
    cdc_record_t *r;
    char **owned;
    size_t n, cap;
} stream;

static void add(stream *s, long off, char *key, char *val)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
        s->owned = realloc(s->owned, 2 * s->cap * sizeof *s->owned);
    }
    s->r[s->n] = tu_rec(TOPIC, 0, off, key, val);
    s->owned[2 * s->n] = key;
    s->owned[2 * s->n + 1] = val;
    s->n++;
}

static void stream_free(stream *s)
{
    for (size_t i = 0; i < 2 * s->n; i++) free(s->owned[i]);
    free(s->r);
    free(s->owned);
}

static uint64_t rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static char *keyj(int k) { return tu_fmt("{\"id\":%d}", k); }
static char *rowj(int k, unsigned v) { return tu_fmt("{\"id\":%d,\"v\":%u,\"note\":\"%0*u\"}", k, v, (int)(v % 40), v); }

/* An envelope of op with a row of key k and value v as its after image (or,
 * for a delete, its before image). */
static char *envj(const char *op, int k, unsigned v, unsigned long long lsn, const char *snap)
{
    char *row = rowj(k, v);
    char *e = strcmp(op, "d") ? tu_env(op, NULL, row, lsn, snap) : tu_env(op, row, NULL, lsn, snap);
    free(row);
    return e;
}

/* One random stream; *offp: the next offset.  The events of a key keep
 * rising LSNs, except the late and duplicate ones, which repeat an earlier
 * event of the stream. */
static void gen(uint64_t seed, stream *s)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 7;
    unsigned long long lsn = 1000;
    long off = 0;
    for (int round = 0; round < 3; round++) {
        /* a snapshot of some keys at the slot's point C, the last read marked */
        unsigned long long c = lsn += 100;
        int first = 1 + (int)(rng(&x) % 10), last = NKEYS - (int)(rng(&x) % 20);
        for (int k = first; k <= last; k++)
            if (rng(&x) % 4) {
                const char *snap = k == last ? "last" : round ? "true" : "first";
                add(s, off++, keyj(k), envj("r", k, (unsigned)rng(&x), c, snap));
            }
        /* streamed changes */
        int nchanges = 300 + (int)(rng(&x) % 300);
        for (int i = 0; i < nchanges; i++) {
            int k = 1 + (int)(rng(&x) % NKEYS);
            unsigned w = (unsigned)(rng(&x) % 100);
            if (w < 4 && s->n > 0) { /* a late or duplicate event: an earlier record again */
                size_t j = s->n - 1 - (size_t)(rng(&x) % (s->n < 200 ? s->n : 200));
                const cdc_record_t *o = &s->r[j];
                add(s, off++, o->key ? strdup(o->key) : NULL, o->value ? strdup(o->value) : NULL);
            } else if (w < 16) { /* delete, then its Kafka tombstone */
                lsn += 3;
                add(s, off++, keyj(k), envj("d", k, 0, lsn, "false"));
                add(s, off++, keyj(k), NULL);
            } else if (w < 17) { /* a truncate */
                lsn += 3;
                add(s, off++, NULL,
                    tu_fmt("{\"before\":null,\"after\":null,\"source\":{\"ts_ms\":1700000000000,\"snapshot\":\"false\","
                           "\"schema\":\"public\",\"table\":\"orders\",\"lsn\":%llu},\"op\":\"t\",\"ts_ms\":1700000000001}",
                           lsn));
            } else {
                lsn += 3;
                add(s, off++, keyj(k), envj(w < 30 ? "c" : "u", k, (unsigned)rng(&x), lsn, "false"));
            }
        }
    }
}

static void same_stats(cdc_store_t *a, cdc_store_t *b, const char *what, uint64_t seed, size_t batch)
{
    cdc_stats_t sa, sb;
    cr_assert_eq(cdc_store_stats(a, "public.orders", &sa, NULL), 0);
    cr_assert_eq(cdc_store_stats(b, "public.orders", &sb, NULL), 0);
#define CMP_FIELD(field, SLOT, slot, txt)                                                                   \
    cr_assert_eq(sa.field, sb.field, "seed %llu batch %zu: %s: " #field " %llu against %llu",              \
                 (unsigned long long)seed, batch, what, (unsigned long long)sa.field,                      \
                 (unsigned long long)sb.field);
    CDC_STATS_MAP(CMP_FIELD)
#undef CMP_FIELD
}

static void run(uint64_t seed)
{
    stream s = {0};
    gen(seed, &s);
    char *dw = tu_tmpdir(), *ds = tu_tmpdir(), *dc = tu_tmpdir();
    cdc_store_t *warm = tu_open(dw), *small = tu_open(ds), *cold = NULL;
    cdc__store_set_vcache(small, 300);
    uint64_t x = seed + 99;
    size_t at = 0, batch = 0;
    unsigned long long purged_to = 0;
    while (at < s.n) {
        size_t n = 1 + (size_t)(rng(&x) % 120);
        if (n > s.n - at) n = s.n - at;
        cold = tu_open(dc);
        cdc_apply_result_t rw = tu_apply(warm, s.r + at, n), rs = tu_apply(small, s.r + at, n),
                           rc = tu_apply(cold, s.r + at, n);
        cr_assert_eq(memcmp(&rw, &rc, sizeof rw), 0, "seed %llu batch %zu: results differ (warm)",
                     (unsigned long long)seed, batch);
        cr_assert_eq(memcmp(&rs, &rc, sizeof rs), 0, "seed %llu batch %zu: results differ (small)",
                     (unsigned long long)seed, batch);
        /* now and then, purge the tombstones below a horizon that trails the
         * stream: later late events fall below it */
        if (rng(&x) % 8 == 0) {
            cdc_stats_t st;
            cr_assert_eq(cdc_store_stats(cold, "public.orders", &st, NULL), 0);
            unsigned long long h = st.newest_lsn > 60 ? st.newest_lsn - 60 : 0;
            if (h > purged_to) {
                uint64_t p1, p2, p3;
                cr_assert_eq(cdc_store_gc(warm, "public.orders", h, &p1, NULL), 0);
                cr_assert_eq(cdc_store_gc(small, "public.orders", h, &p2, NULL), 0);
                cr_assert_eq(cdc_store_gc(cold, "public.orders", h, &p3, NULL), 0);
                cr_assert_eq(p1, p3);
                cr_assert_eq(p2, p3);
                purged_to = h;
            }
        }
        char *ew = tu_export(warm, "public.orders", 1), *es = tu_export(small, "public.orders", 1),
             *ec = tu_export(cold, "public.orders", 1);
        cr_assert_str_eq(ew, ec, "seed %llu batch %zu: the warm replica differs", (unsigned long long)seed, batch);
        cr_assert_str_eq(es, ec, "seed %llu batch %zu: the small-cache replica differs", (unsigned long long)seed,
                         batch);
        same_stats(warm, cold, "warm", seed, batch);
        same_stats(small, cold, "small", seed, batch);
        free(ew);
        free(es);
        free(ec);
        cdc_store_close(cold);
        at += n;
        batch++;
    }
    cdc_store_close(warm);
    cdc_store_close(small);
    tu_rmrf(dw);
    tu_rmrf(ds);
    tu_rmrf(dc);
    free(dw);
    free(ds);
    free(dc);
    stream_free(&s);
}

Test(vcache, warm_small_and_cold_replicas_stay_equal, .timeout = 300)
{
    int seeds = getenv("CDC_TEST_QUICK") ? 3 : 12;
    for (int i = 1; i <= seeds; i++) run((uint64_t)i);
}
