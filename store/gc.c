/*
 * gc.c: tombstone garbage collection tied to the replay horizon.
 *
 * A delete is kept as a tombstone carrying its version so that a late, older
 * update of the key is recognised as stale.  Tombstones cannot be kept
 * forever, and a wall-clock window (what peers offer) is no guarantee: what
 * matters is whether an event older than the tombstone can still arrive.
 * The caller names that point as a source LSN, the replay horizon H.  The
 * table's purge horizon becomes (epoch of H, streamed, H), the version every
 * change at H would have at least; tombstones and floor-hidden rows below it
 * are removed.  From then on a key the replica does not hold reads as
 * deleted at the horizon (cdc__absent_version), so an event older than H
 * stays stale whether its key's tombstone still exists or not.  The horizon
 * only rises.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define GC_BATCH 10000

static int gc_table(cdc_store_t *st, cdc__table *t, uint64_t horizon_lsn, uint64_t *purged,
                    cdc_error_t *err)
{
    uint64_t e = 0;
    for (size_t k = t->nepochs; k > 0; k--)
        if (t->epochs[k - 1] <= horizon_lsn) {
            e = t->epochs[k - 1];
            break;
        }
    cdc__version h = {e, CDC__KIND_STREAM, horizon_lsn, 0, 0};
    if (!t->horizon_set || cdc__version_cmp(&h, &t->horizon) > 0) {
        t->horizon = h;
        t->horizon_set = 1;
        t->meta_dirty = 1;
    }
    h = t->horizon;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    cdc__table_flush(st, t, wb); /* the horizon goes with the first removals */
    cdc__scan it;
    cdc__scan_open(st, t, NULL, 0, NULL, 0, NULL, 0, &it);
    cdc__buf sk = {0};
    size_t inbatch = 0;
    int rc = 0;
    for (;; cdc__scan_next(&it)) {
        size_t kl, vl;
        const char *k, *v;
        int valid = cdc__scan_row(&it, &k, &kl, &v, &vl);
        if (valid) {
            cdc__value val;
            if (cdc__value_decode(v, vl, &val)) {
                rc = cdc__err(err, CDC_ECORRUPT, "table %s: a stored value does not decode", t->name);
                break;
            }
            int raw_deleted = val.flags & CDC__F_DELETED;
            cdc__apply_floor(t, &val);
            if ((val.flags & CDC__F_DELETED) && cdc__version_cmp(&val.ver, &h) < 0) {
                cdc__buf_reset(&sk);
                cdc__table_key(t, k, kl, &sk);
                rocksdb_writebatch_delete_cf(wb, t->cf, sk.p, sk.len);
                inbatch++;
                (*purged)++;
                t->stats[CDC__ST_PURGED]++;
                /* floor-hidden rows were counted as deleted when the floor rose */
                t->stats[CDC__ST_DELETED]--;
                t->stats_dirty = 1;
                (void)raw_deleted;
            }
        }
        if (inbatch >= GC_BATCH || (!valid && (inbatch || t->stats_dirty || t->meta_dirty))) {
            cdc__table_flush(st, t, wb);
            char *e2 = NULL;
            rocksdb_write(st->db, st->wo, wb, &e2);
            if (e2) {
                st->broken = 1;
                rc = cdc__err(err, CDC_EIO, "table %s: write failed: %s", t->name, e2);
                free(e2);
                break;
            }
            rocksdb_writebatch_clear(wb);
            inbatch = 0;
        }
        if (!valid) break;
    }
    if (rc == 0) {
        char *e3 = cdc__scan_error(&it);
        if (e3) {
            rc = cdc__err(err, CDC_EIO, "table %s: scan failed: %s", t->name, e3);
            free(e3);
        }
    }
    cdc__scan_close(&it);
    cdc__buf_free(&sk);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int cdc_store_gc(cdc_store_t *st, const char *table, uint64_t horizon_lsn, uint64_t *purged,
                 cdc_error_t *err)
{
    uint64_t n = 0;
    int rc = 0;
    if (!st) return cdc__err(err, CDC_EINVAL, "cdc_store_gc: no store");
    if (st->read_only) return cdc__err(err, CDC_EINVAL, "%s: replica opened read-only", st->dir);
    if (table) {
        cdc__table *t;
        if ((rc = cdc__table_get(st, table, 0, &t, err)) == 0 && t->cf) rc = gc_table(st, t, horizon_lsn, &n, err);
    } else {
        for (size_t i = 0; i < st->ntables && rc == 0; i++)
            if (st->tables[i]->cf) rc = gc_table(st, st->tables[i], horizon_lsn, &n, err);
    }
    if (purged) *purged = n;
    return rc;
}
