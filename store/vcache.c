/*
 * vcache.c: the newest stored values of recently applied keys, in memory, in
 * front of the guard's MultiGet (store/apply.c, pass 3).
 *
 * Why.  Every key of a batch is read before it is written: the guard compares
 * the event's version with the stored one, and the fold starts from the stored
 * row.  On a stream of updates the key is almost always in the memtable, and
 * RocksDB finds it with a skip-list search over every version the memtable
 * holds of every key (64 MiB of them), each level a cache miss; then the
 * write searches the same list again to insert.  A value the apply itself
 * wrote (or read) is known: it is kept here, and the MultiGet reads only the
 * keys not found.  A lookup is a hash, a bucket and an entry: two cache
 * misses, which the apply hides by prefetching a few keys ahead
 * (cdc__vcache_prefetch), and the entry found is written over in place when
 * the key's new value is written.
 *
 * What is kept, so that a hit is exactly what RocksDB would return:
 *  - rows that are live, and tombstones the purge cannot remove: the
 *    tombstone purge's compaction filter (store/gc.c) removes, at any time
 *    once its rules are published, a tombstone below its table's purge
 *    horizon and a row under the floor, and the apply counts a removed one
 *    differently from a stored one.  So a tombstone is kept only when it is
 *    at or above the horizon and the floor (store/apply.c,
 *    tombstone_cacheable), and a hit is used only while that still holds
 *    (cached_valid): a floor raised since (a completed snapshot, a
 *    truncate) or a horizon raised since (the purge) sends the key to
 *    RocksDB again, where the row is read as stored;
 *  - the bytes written, as the batch's write is built: a batch that then
 *    fails to write leaves the store broken (no apply until it is opened
 *    again, with an empty cache), and the apply empties the cache on any
 *    failure anyway.
 * Only the apply writes rows, and it runs on one thread at a time (the
 * replica's writer), which is the only user of the cache: no locking.
 *
 * Memory.  Bounded by a budget of bytes (entries with their keys and values,
 * VCACHE_BUDGET, 128 MiB).  Entries are evicted only by cdc__vcache_trim,
 * which the apply calls after a batch, so an entry found while a batch is
 * read stays valid until the batch has written it; past the budget, entries
 * are evicted at random (a random bucket's first entry), which keeps the hot
 * keys of a skewed stream with a high probability and costs nothing per hit.
 * The budget was 64 MiB: on the wide stream (bench/gen.py --shape wide
 * --events 1000000 --keys 100000 --row-width 100 --seed 42, 100,000 rows of
 * about 1.4 KB) that held half the keys, and the other half were read by
 * the MultiGet from the block cache or, past its 64 MiB, from the files.
 * `cdcstore apply --batch-size 10000`, three interleaved runs each: 5.44-5.59
 * s, 10.2 CPU-s, peak RSS 360 MB with 64 MiB; 4.98-5.10 s, 9.4 CPU-s, peak
 * RSS 297 MB with 128 MiB (the block cache no longer fills with the rows'
 * blocks).  Narrow rows (6 MB of cache for 100,000 keys) are unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define VCACHE_BUDGET ((size_t)128 << 20)

struct cdc__ventry {
    cdc__ventry *next;
    uint64_t hash;
    const void *cf;
    uint32_t klen, vlen, vcap;
    char data[]; /* key, then value (room for vcap bytes) */
};

struct cdc__vcache {
    cdc__ventry **b;
    size_t nb;      /* a power of two */
    size_t n;       /* entries */
    size_t bytes;   /* of the entries, with their headers */
    size_t budget;
    uint64_t rng;
};

uint64_t cdc__vcache_hash(const void *cf, const char *k, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)cf ^ (n * 0xff51afd7ed558ccdULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
        h ^= h >> 29;
        k += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, k, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 32;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 29);
}

cdc__vcache *cdc__vcache_new(size_t budget)
{
    cdc__vcache *c = cdc__calloc(1, sizeof *c);
    c->nb = 1024;
    c->b = cdc__calloc(c->nb, sizeof *c->b);
    c->budget = budget ? budget : VCACHE_BUDGET;
    c->rng = 0x2545F4914F6CDD1DULL;
    return c;
}

void cdc__vcache_clear(cdc__vcache *c)
{
    if (!c || !c->n) return;
    for (size_t i = 0; i < c->nb; i++)
        for (cdc__ventry *e = c->b[i], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    memset(c->b, 0, c->nb * sizeof *c->b);
    c->n = 0;
    c->bytes = 0;
}

void cdc__vcache_free(cdc__vcache *c)
{
    if (!c) return;
    cdc__vcache_clear(c);
    free(c->b);
    free(c);
}

void cdc__vcache_prefetch(const cdc__vcache *c, uint64_t h, int entry)
{
    if (!c || !c->n) return;
    if (!entry) {
        __builtin_prefetch(&c->b[h & (c->nb - 1)]);
        return;
    }
    const cdc__ventry *e = c->b[h & (c->nb - 1)];
    if (e) __builtin_prefetch(e);
}

static cdc__ventry **find(cdc__vcache *c, uint64_t h, const void *cf, const char *k, size_t kn)
{
    cdc__ventry **pp = &c->b[h & (c->nb - 1)];
    for (; *pp; pp = &(*pp)->next) {
        const cdc__ventry *e = *pp;
        if (e->hash == h && e->cf == cf && e->klen == kn && !memcmp(e->data, k, kn)) break;
    }
    return pp;
}

cdc__ventry *cdc__vcache_find(cdc__vcache *c, uint64_t h, const void *cf, const char *k, size_t kn)
{
    if (!c || !c->n) return NULL;
    return *find(c, h, cf, k, kn);
}

const char *cdc__vcache_value(const cdc__ventry *e, size_t *vn)
{
    *vn = e->vlen;
    return e->data + e->klen;
}

static size_t entry_size(const cdc__ventry *e) { return sizeof *e + e->klen + e->vcap; }

static void unlink_entry(cdc__vcache *c, cdc__ventry **pp)
{
    cdc__ventry *e = *pp;
    *pp = e->next;
    c->bytes -= entry_size(e);
    c->n--;
    free(e);
}

void cdc__vcache_del(cdc__vcache *c, const cdc__ventry *e, uint64_t h, const void *cf, const char *k, size_t kn)
{
    if (!c || !c->n || !e) return;
    cdc__ventry **pp = find(c, h, cf, k, kn);
    if (*pp) unlink_entry(c, pp);
}

static void grow(cdc__vcache *c)
{
    size_t nb = c->nb * 2;
    cdc__ventry **b = cdc__calloc(nb, sizeof *b);
    for (size_t i = 0; i < c->nb; i++)
        for (cdc__ventry *e = c->b[i], *nx; e; e = nx) {
            nx = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    free(c->b);
    c->b = b;
    c->nb = nb;
}

cdc__ventry *cdc__vcache_put(cdc__vcache *c, cdc__ventry *e, uint64_t h, const void *cf, const char *k, size_t kn,
                     const char *v, size_t vn)
{
    if (!c) return NULL;
    /* The entry this batch found for the key is written over, unless the
     * value would leave most of its room unused (a wide row's tombstone): a
     * smaller entry then takes its place, so that the budget holds rows, not
     * empty room (on the wide stream, keeping the room cost 8% more time:
     * more live rows evicted and read again). */
    if (e && vn <= e->vcap && e->vcap <= 2 * vn + 64) {
        memcpy(e->data + e->klen, v, vn);
        e->vlen = (uint32_t)vn;
        return e;
    }
    size_t cap = (vn + 15) & ~(size_t)15;
    if (kn > UINT32_MAX || cap > UINT32_MAX || sizeof *e + kn + cap > c->budget / 16) {
        cdc__vcache_del(c, e, h, cf, k, kn); /* too large to be worth its room: not kept */
        return NULL;
    }
    if (e) { /* outgrown: replaced (a key not in the cache needs no search) */
        cdc__ventry **pp = find(c, h, cf, k, kn);
        if (*pp) unlink_entry(c, pp);
    }
    e = cdc__malloc(sizeof *e + kn + cap);
    e->hash = h;
    e->cf = cf;
    e->klen = (uint32_t)kn;
    e->vlen = (uint32_t)vn;
    e->vcap = (uint32_t)cap;
    memcpy(e->data, k, kn);
    memcpy(e->data + kn, v, vn);
    c->bytes += entry_size(e);
    c->n++;
    if (c->n > c->nb) grow(c);
    size_t i = h & (c->nb - 1);
    e->next = c->b[i];
    c->b[i] = e;
    return e;
}

void cdc__vcache_trim(cdc__vcache *c)
{
    while (c && c->bytes > c->budget && c->n) {
        c->rng ^= c->rng << 13;
        c->rng ^= c->rng >> 7;
        c->rng ^= c->rng << 17;
        cdc__ventry **pp = &c->b[c->rng & (c->nb - 1)];
        if (*pp) unlink_entry(c, pp);
    }
}

void cdc__store_set_vcache(cdc_store_t *st, size_t budget)
{
    cdc__vcache_free(st->vc);
    st->vc = cdc__vcache_new(budget);
}
