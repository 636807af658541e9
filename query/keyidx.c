/*
 * keyidx.c: the keys of one Delta data file, in its row order, kept beside
 * it so that a refresh finds the row index of a changed key without reading
 * the Parquet file (query/delta.c, "Deletion vectors").
 *
 * A deletion vector names rows of a data file by their index in it.  The
 * refresh knows the changed keys (the replica's key journal) and must know
 * where each one's old row is: a Parquet reader for the key column would
 * decode pages to find it; this file answers with a binary search.
 *
 * Format (all integers little-endian):
 *   "CDCKEYS1"
 *   per key, in row order: varint shared, varint rest, rest bytes: the key
 *     is the first `shared` bytes of the previous key followed by the rest;
 *     every 16th key (a restart) has shared 0
 *   per restart: u32 offset of its entry from the start of the file
 *   u64 number of keys, u32 number of restarts, "CDCKEYS1"
 * Dense integer keys (9 bytes encoded) take about 4 bytes each.  The file
 * is mapped whole; a lookup is a search over the restarts (whose keys are
 * whole: galloping on from the restart of the lookup before, then binary)
 * and a walk of at most 16 entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "query.h"

#define MAGIC "CDCKEYS1"
#define RESTART 16

void cdc__keyidx_add(cdc__keyidx_w *w, const char *key, size_t len)
{
    if (!w->b.len) cdc__buf_put(&w->b, MAGIC, 8);
    size_t shared = 0;
    if (w->n % RESTART == 0) {
        uint32_t off = (uint32_t)w->b.len;
        cdc__buf_put(&w->restarts, (const char *)&off, 4); /* little-endian hosts only (x86-64, arm64) */
    } else {
        size_t m = len < w->prev.len ? len : w->prev.len;
        while (shared < m && w->prev.p[shared] == key[shared]) shared++;
    }
    cdc__buf_put_varint(&w->b, shared);
    cdc__buf_put_varint(&w->b, len - shared);
    cdc__buf_put(&w->b, key + shared, len - shared);
    cdc__buf_reset(&w->prev);
    cdc__buf_put(&w->prev, key, len);
    w->n++;
}

int cdc__keyidx_write(cdc__keyidx_w *w, const char *path, cdc_error_t *err)
{
    if (!w->b.len) cdc__buf_put(&w->b, MAGIC, 8);
    if (w->b.len > UINT32_MAX)
        return cdc__err(err, CDC_EINVAL, "%s: the keys of one data file take more than 4 GiB", path);
    uint32_t nr = (uint32_t)(w->restarts.len / 4);
    uint64_t n = w->n;
    cdc__buf_put(&w->b, w->restarts.p, w->restarts.len);
    cdc__buf_put(&w->b, (const char *)&n, 8);
    cdc__buf_put(&w->b, (const char *)&nr, 4);
    cdc__buf_put(&w->b, MAGIC, 8);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return cdc__err(err, -errno, "%s: %s", path, strerror(errno));
    int rc = cdc__write_all(fd, w->b.p, w->b.len, -1);
    if (!rc && fsync(fd)) rc = -errno;
    close(fd);
    if (rc) {
        unlink(path);
        return cdc__err(err, rc, "%s: %s", path, strerror(-rc));
    }
    return 0;
}

void cdc__keyidx_w_free(cdc__keyidx_w *w)
{
    cdc__buf_free(&w->b);
    cdc__buf_free(&w->prev);
    cdc__buf_free(&w->restarts);
    memset(w, 0, sizeof *w);
}

int cdc__keyidx_load(const char *path, cdc__keyidx *x, cdc_error_t *err)
{
    memset(x, 0, sizeof *x);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cdc__err(err, -errno, "%s: %s", path, strerror(errno));
    int rc = 0;
    /* Mapped, not read: a refresh looks keys up in every file it touches,
     * and reading 40 files of 1 MB copied each into new memory (11% of the
     * samples of a refresh of 1% scattered changes over 10,000,000 rows).
     * A key file is written once, under the name of its data file, and
     * removed only with it, so the mapping never outlives its bytes.  Read
     * when it cannot be mapped. */
    struct stat sb;
    if (!fstat(fd, &sb) && sb.st_size > 0 && (uint64_t)sb.st_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (m != MAP_FAILED) {
            x->map = m;
            x->b.p = m;
            x->b.len = x->b.cap = (size_t)sb.st_size;
        } else {
            cdc__buf_reserve(&x->b, (size_t)sb.st_size + 1);
        }
    }
    while (!x->map) { /* read: the file could not be mapped */
        if (x->b.len == x->b.cap) cdc__buf_reserve(&x->b, 1 << 20);
        ssize_t r = read(fd, x->b.p + x->b.len, x->b.cap - x->b.len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) rc = cdc__err(err, -errno, "%s: %s", path, strerror(errno));
        if (r <= 0) break;
        x->b.len += (size_t)r;
    }
    close(fd);
    if (rc) return rc;
    const char *p = x->b.p;
    size_t len = x->b.len;
    uint32_t nr;
    if (len < 28 || memcmp(p, MAGIC, 8) || memcmp(p + len - 8, MAGIC, 8)) goto bad;
    memcpy(&nr, p + len - 12, 4);
    memcpy(&x->n, p + len - 20, 8);
    if ((uint64_t)nr * 4 > len - 28 || (x->n + RESTART - 1) / RESTART != nr) goto bad;
    x->restarts = p + len - 20 - (size_t)nr * 4;
    x->nr = nr;
    x->end = (size_t)(x->restarts - p);
    for (uint32_t i = 0; i < nr; i++) {
        uint32_t o;
        memcpy(&o, x->restarts + 4 * (size_t)i, 4);
        if (o < 8 || o >= x->end) goto bad;
    }
    return 0;
bad:
    cdc__keyidx_free(x);
    return cdc__err(err, CDC_ECORRUPT, "%s: not a key index cdcstore wrote, or damaged", path);
}

/* The entry at *p: its shared length and rest.  0 ok, -1 damaged. */
static int entry(const cdc__keyidx *x, const char **p, uint64_t *shared, const char **rest, uint64_t *rl)
{
    const char *end = x->b.p + x->end;
    if (cdc__get_varint(p, end, shared) || cdc__get_varint(p, end, rl) || *rl > (uint64_t)(end - *p)) return -1;
    *rest = *p;
    *p += *rl;
    return 0;
}

/* Restart i's key against key: <0, 0, >0 as cmp; 2 when damaged. */
static int restart_cmp(const cdc__keyidx *x, uint32_t i, const char *key, size_t len)
{
    uint32_t o;
    memcpy(&o, x->restarts + 4 * (size_t)i, 4);
    const char *p = x->b.p + o, *rest;
    uint64_t sh, rl;
    if (entry(x, &p, &sh, &rest, &rl)) return 2;
    int c = cdc__key_cmp(rest, (size_t)rl, key, len);
    return c < 0 ? -1 : c > 0;
}

int64_t cdc__keyidx_find(cdc__keyidx *x, const char *key, size_t len, cdc__buf *cur)
{
    if (!x->nr) return -1;
    /* the last restart whose key is <= key, in [lo, hi): a refresh looks
     * keys up in ascending order, so the search gallops forward from where
     * the one before ended (x->finger), a few restarts on, instead of a
     * binary search over all of them; any order stays correct. */
    uint32_t lo = 0, hi = x->nr, f = x->finger < x->nr ? x->finger : 0;
    if (f) {
        int c = restart_cmp(x, f, key, len);
        if (c == 2) return -2;
        if (c > 0) hi = f;
        else {
            lo = f;
            for (uint32_t step = 1; lo + step < hi; step *= 2) {
                c = restart_cmp(x, lo + step, key, len);
                if (c == 2) return -2;
                if (c > 0) {
                    hi = lo + step;
                    break;
                }
                lo += step;
            }
        }
    }
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = restart_cmp(x, mid, key, len);
        if (c == 2) return -2;
        if (c <= 0) lo = mid;
        else hi = mid;
    }
    x->finger = lo;
    uint32_t o;
    memcpy(&o, x->restarts + 4 * (size_t)lo, 4);
    const char *p = x->b.p + o;
    cdc__buf_reset(cur);
    for (uint64_t i = (uint64_t)lo * RESTART; i < x->n && i < (uint64_t)(lo + 1) * RESTART; i++) {
        const char *rest;
        uint64_t sh, rl;
        if (entry(x, &p, &sh, &rest, &rl) || sh > cur->len) return -2;
        cur->len = (size_t)sh;
        cdc__buf_put(cur, rest, (size_t)rl);
        int c = cdc__key_cmp(cur->p, cur->len, key, len);
        if (c == 0) return (int64_t)i;
        if (c > 0) return -1;
    }
    return -1;
}

void cdc__keyidx_free(cdc__keyidx *x)
{
    if (x->map) munmap(x->map, x->b.len);
    else cdc__buf_free(&x->b);
    memset(x, 0, sizeof *x);
}
