/*
 * gc.c: tombstone purge tied to the replay horizon, done by RocksDB's
 * compactions.
 *
 * ---- The rule ----
 *
 * A delete is kept as a tombstone carrying its version so that a late, older
 * update of the key is recognised as stale.  Tombstones cannot be kept
 * forever, and a wall-clock window (what peers offer) is no guarantee: what
 * matters is whether an event older than the tombstone can still arrive.
 * The caller names that point as a source LSN, the replay horizon H.  The
 * table's purge horizon becomes (epoch of H, streamed, H), the version every
 * change at H would have at least (a snapshot's reads at H: (H, snapshot,
 * H), horizon_at); tombstones and floor-hidden rows below it may be
 * removed.  From then on a key the replica does not hold reads as deleted
 * just below the horizon (cdc__absent_version), so an event older than H
 * stays stale whether its key's tombstone still exists or not, and one at
 * H applies.  The horizon
 * only rises.
 *
 * ---- Who removes, and when it is safe ----
 *
 * The removal is a compaction filter on the families that hold rows
 * ("rows", and the "t:" family of a table from an older replica): RocksDB
 * calls it for the newest version of every key a compaction rewrites, so
 * purging reads no key a compaction would not read anyway.  The filter
 * drops a value that decodes as deleted (or lies below the table's floor)
 * with a version below its table's horizon; RocksDB turns it into a
 * deletion marker, which the bottommost level then drops, so an older
 * version of the key in a lower level stays hidden.
 *
 * The filter runs on RocksDB's background threads while the store's thread
 * applies.  It reads no cdc__table: it reads a rule set, an immutable array
 * of (table, floor, horizon) published by the store's thread, which a
 * compaction takes a reference on when it starts (the factory's
 * create_compaction_filter, under a mutex held only for the pointer) and
 * drops when it ends; publishing swaps the pointer.  A compaction that began
 * before a publish uses the older, lower horizons: it removes less, never
 * more.  A rule is published only once its floor and horizon are on disk:
 *   - at open, from the metadata just loaded;
 *   - by cdc_store_purge, after the table's metadata was written with a
 *     synced write (the write-ahead log fsynced): a compaction's output is
 *     itself synced, so a power loss can never keep the removal and lose the
 *     horizon that makes it safe.  (The scan this replaces wrote the horizon
 *     in the same batch as its first deletes, atomic by construction.)
 * A floor raised by an apply reaches the filter at the next purge or open,
 * so a row is never removed on the strength of a floor a crash could undo.
 *
 * ---- Counting ----
 *
 * tombstones_purged (and rows_deleted, which a removal lowers) are counted
 * by the filter into a per-table atomic counter that outlives the table's
 * struct (it belongs to the purge state, freed after RocksDB is closed);
 * the store's thread folds it into the table's counters whenever it writes
 * them: every apply's commit, every purge (after the compaction returned)
 * and the close.  Limits, said plainly: a crash after a compaction and
 * before the next fold loses that compaction's count, and so does a
 * background compaction still running when the close folds (the counter
 * is low, the data is right); a compaction that fails after its filter
 * ran (an I/O error) counted keys it did not remove, which a later one
 * counts again (high); and an automatic compaction that rewrites a
 * tombstone below the horizon while a newer version of the same key sits in
 * a level it does not read (or an apply is replacing it) removes a version
 * that no longer counted as a tombstone, so rows_deleted, floored at 0, may
 * read one low for such a key.  cdc_store_purge's own compaction merges
 * every level of the table's range while no apply runs, so what it removes
 * counts exactly.
 *
 * ---- Choosing the horizon from time (older_than_ms) ----
 *
 * A source ts_ms is a commit time, not an order: a transaction that
 * commits after a cutoff may have begun before it and carry LSNs below
 * those of tombstones committed before the cutoff, so no LSN follows from a
 * time alone.  The horizon is derived from the table's own rows, in one
 * read-only pass (no write, no delete): H = 1 + the highest LSN of a
 * tombstone whose ts_ms is older than the cutoff, capped at the lowest LSN
 * of any row the table holds that committed at or after the cutoff, so
 * that nothing the replica saw commit after the cutoff lies below the
 * horizon.  The caller's promise is the peers' window: no change committed
 * before the cutoff is still to be delivered.  A derived horizon also
 * holds back from a snapshot still running (below).
 *
 * ---- The automatic purge (cdc__store_purge_tick: ingest --purge-after) ----
 *
 * A running consumer holds the replica's lock, so `cdcstore gc` cannot run
 * beside it; the consumer raises the horizons itself, between batches.  The
 * horizon must be the oldest position any consumer may still replay into
 * this replica: everything after its stored positions, whose LSNs it cannot
 * know before it reads them, and, because a transaction is delivered at its
 * commit, which may carry LSNs from long before.  So the rule is stated on
 * time the replica can observe, with a bound D the operator gives (the
 * peers' window, made sound): every change reaches the replica within D of
 * its transaction's first write.  Every D/16 the tick notes each table's
 * newest applied LSN (newest_lsn); a note taken at t0 <= now - D becomes the
 * table's horizon.  Sound: the note L is the LSN of a change written before
 * t0, so L <= the source's WAL end at t0; a change not yet applied now
 * belongs to a transaction whose first write came after now - D >= t0 (else
 * it would be here by the promise), so its LSN is above the WAL end at t0,
 * hence above L.  Replays of what the replica already applied (a restart
 * from its positions, --from-beginning) are older than its rows anyway.
 * Notes live in memory, so a run shorter than D purges nothing, and a
 * restart starts over: that errs on the side of keeping.  The purge is
 * opt-in (off by default): D is a promise about the source and the
 * pipeline that only the operator can make, and a wrong one refuses real
 * changes; keeping tombstones costs only disk.  No compaction is forced:
 * the horizon is written and published, and the filter acts in the
 * compactions RocksDB runs anyway, so the consumer never stalls on a purge.
 *
 * ---- Snapshots still running (hold_snapshots) ----
 *
 * A horizon (e, streamed, H) is above every snapshot read of epoch e: a
 * read still to come for a key the replica does not hold would be refused.
 * With hold_snapshots (on for derived horizons) a horizon is capped below
 * an epoch whose snapshot the replica has not seen complete (its last read
 * raises the floor to that epoch; a truncate raises it too, so a truncate
 * during a snapshot passes for its end).  A snapshot that never sends its
 * last read keeps derived horizons below its epoch for good: that errs on
 * the side of keeping.  The automatic purge holds back too.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store.h"

/* ---- Rule sets: what the filter reads ---- */

typedef struct purge_rule {
    uint32_t id;             /* a prefixed table's id; 0 for a table in its own family */
    char *own;               /* that table's name (own family), else NULL */
    cdc__version floor, horizon;
    int floor_set;
    uint64_t *count;         /* removals not yet folded into the table's counters */
} purge_rule;

typedef struct purge_set {
    int refs;                /* the store's current pointer and each compaction using it */
    size_t n, nprefixed;     /* prefixed rules first, sorted by id, then own-family ones */
    purge_rule *rules;
} purge_set;

typedef struct purge_count {
    uint64_t n;
    struct purge_count *next;
} purge_count;

typedef struct purge_sample purge_sample;

struct cdc__purge {
    pthread_mutex_t mu;      /* guards cur only */
    purge_set *cur;          /* NULL: no rule, no filter */
    purge_count *counts;     /* every table's counter, freed with the state */
    rocksdb_options_t **opts;/* the families' options made here */
    size_t nopts;
    purge_sample *samples;   /* the automatic purge's, oldest first (cdc__store_purge_tick) */
    size_t nsamples;
};

/* What a factory makes filters for: "rows" (own NULL) or a table's family. */
typedef struct purge_family {
    cdc__purge *p;
    char *own;
} purge_family;

/* One compaction's filter. */
typedef struct purge_filter {
    purge_set *set;
    const purge_rule *own;   /* the rule of an own-family table; NULL for "rows" */
} purge_filter;

static void set_free(purge_set *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->rules[i].own);
    free(s->rules);
    free(s);
}

static void set_release(purge_set *s)
{
    if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) set_free(s);
}

static purge_set *set_acquire(cdc__purge *p)
{
    pthread_mutex_lock(&p->mu);
    purge_set *s = p->cur;
    if (s) __atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&p->mu);
    return s;
}

static const purge_rule *rule_by_id(const purge_set *s, uint32_t id)
{
    size_t lo = 0, hi = s->nprefixed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->rules[mid].id == id) return &s->rules[mid];
        if (s->rules[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static int rule_cmp(const void *a, const void *b)
{
    const purge_rule *x = a, *y = b;
    if (!x->own != !y->own) return x->own ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* ---- The compaction filter (RocksDB's background threads) ---- */

static const char *purge_name(void *state)
{
    CDC__UNUSED(state);
    return "cdcstore.purge";
}

/* 1 (remove) for a value deleted, or hidden by the floor, below the horizon
 * of its table's rule; 0 for everything else, a value that does not decode
 * included. */
static unsigned char purge_filter_fn(void *state, int level, const char *key, size_t key_len, const char *val,
                                     size_t val_len, char **new_val, size_t *new_len, unsigned char *changed)
{
    CDC__UNUSED(level);
    CDC__UNUSED(new_val);
    CDC__UNUSED(new_len);
    CDC__UNUSED(changed);
    const purge_filter *f = state;
    const purge_rule *r = f->own;
    if (!r) {
        if (key_len < CDC__TABLE_PREFIX) return 0;
        const unsigned char *k = (const unsigned char *)key;
        r = rule_by_id(f->set, (uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 | (uint32_t)k[2] << 8 | k[3]);
        if (!r) return 0;
    }
    cdc__value v;
    if (cdc__value_decode(val, val_len, &v)) return 0;
    if (r->floor_set && cdc__version_cmp(&v.ver, &r->floor) < 0) {
        v.flags |= CDC__F_DELETED;
        v.ver = r->floor;
    }
    if (!(v.flags & CDC__F_DELETED) || cdc__version_cmp(&v.ver, &r->horizon) >= 0) return 0;
    __atomic_add_fetch(r->count, 1, __ATOMIC_RELAXED);
    return 1;
}

static void purge_filter_destroy(void *state)
{
    purge_filter *f = state;
    set_release(f->set);
    free(f);
}

static rocksdb_compactionfilter_t *purge_create(void *state, rocksdb_compactionfiltercontext_t *ctx)
{
    CDC__UNUSED(ctx);
    purge_family *fam = state;
    purge_set *s = set_acquire(fam->p);
    if (!s) return NULL; /* no rule: RocksDB compacts without a filter */
    const purge_rule *own = NULL;
    if (fam->own) {
        for (size_t i = s->nprefixed; i < s->n && !own; i++)
            if (!strcmp(s->rules[i].own, fam->own)) own = &s->rules[i];
        if (!own) {
            set_release(s);
            return NULL;
        }
    } else if (!s->nprefixed) {
        set_release(s);
        return NULL;
    }
    purge_filter *f = cdc__malloc(sizeof *f);
    f->set = s;
    f->own = own;
    return rocksdb_compactionfilter_create(f, purge_filter_destroy, purge_filter_fn, purge_name);
}

static void purge_family_destroy(void *state)
{
    purge_family *fam = state;
    free(fam->own);
    free(fam);
}

/* ---- The purge state (store.h) ---- */

cdc__purge *cdc__purge_new(void)
{
    cdc__purge *p = cdc__calloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

static void samples_free(cdc__purge *p);

void cdc__purge_free(cdc__purge *p)
{
    if (!p) return;
    samples_free(p);
    set_release(p->cur);
    for (size_t i = 0; i < p->nopts; i++) rocksdb_options_destroy(p->opts[i]);
    free(p->opts);
    while (p->counts) {
        purge_count *c = p->counts;
        p->counts = c->next;
        free(c);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

const rocksdb_options_t *cdc__purge_family_options(cdc__purge *p, const rocksdb_options_t *base,
                                                    const char *own_table)
{
    rocksdb_options_t *o = rocksdb_options_create_copy((rocksdb_options_t *)base);
    purge_family *fam = cdc__calloc(1, sizeof *fam);
    fam->p = p;
    fam->own = own_table ? cdc__strdup(own_table) : NULL;
    rocksdb_options_set_compaction_filter_factory(
        o, rocksdb_compactionfilterfactory_create(fam, purge_family_destroy, purge_create, purge_name));
    p->opts = cdc__realloc(p->opts, (p->nopts + 1) * sizeof *p->opts);
    p->opts[p->nopts++] = o;
    return o;
}

void cdc__purge_publish(cdc_store_t *st)
{
    cdc__purge *p = st->purge;
    if (!p) return;
    purge_set *s = cdc__calloc(1, sizeof *s);
    s->refs = 1;
    s->rules = cdc__calloc(st->ntables ? st->ntables : 1, sizeof *s->rules);
    for (size_t i = 0; i < st->ntables; i++) {
        cdc__table *t = st->tables[i];
        if (!t->cf || !t->horizon_set) continue;
        if (!t->purge_pending) {
            purge_count *c = cdc__calloc(1, sizeof *c);
            c->next = p->counts;
            p->counts = c;
            t->purge_pending = &c->n;
        }
        purge_rule *r = &s->rules[s->n++];
        r->id = t->id;
        r->own = t->id ? NULL : cdc__strdup(t->name);
        r->floor = t->floor;
        r->floor_set = t->floor_set;
        r->horizon = t->horizon;
        r->count = t->purge_pending;
        if (t->id) s->nprefixed++;
    }
    qsort(s->rules, s->n, sizeof *s->rules, rule_cmp);
    if (!s->n) {
        set_free(s);
        s = NULL;
    }
    pthread_mutex_lock(&p->mu);
    purge_set *old = p->cur;
    p->cur = s;
    pthread_mutex_unlock(&p->mu);
    set_release(old);
}

uint64_t cdc__purge_fold(cdc__table *t)
{
    if (!t->purge_pending || !__atomic_load_n(t->purge_pending, __ATOMIC_RELAXED)) return 0;
    uint64_t n = __atomic_exchange_n(t->purge_pending, 0, __ATOMIC_ACQ_REL);
    t->stats[CDC__ST_PURGED] += n;
    /* floor-hidden rows were counted as deleted when the floor rose */
    t->stats[CDC__ST_DELETED] -= n < t->stats[CDC__ST_DELETED] ? n : t->stats[CDC__ST_DELETED];
    t->stats_dirty = 1;
    return n;
}

/* ---- Choosing a table's horizon ---- */

/* The horizon version of LSN h in t: the lowest version an event at LSN h
 * can have.  That is (the latest epoch at or below h, streamed, h), but for
 * h the epoch of a snapshot, whose reads (h, snapshot, h) come below its
 * streamed changes: then (h, snapshot, h).  Events at h itself are still
 * to come (the caller promised none older than h), and apply: a key the
 * replica does not hold reads as deleted just below this version
 * (cdc__below_horizon).  The horizon was (e, streamed, h) for every h, and
 * a key absent read as deleted at it: a change at exactly h, or the rest of
 * a snapshot still being read at h, was refused and lost. */
static cdc__version horizon_at(const cdc__table *t, uint64_t h)
{
    uint64_t e = 0;
    for (size_t k = t->nepochs; k > 0; k--)
        if (t->epochs[k - 1] <= h) {
            e = t->epochs[k - 1];
            break;
        }
    if (e && e == h) return (cdc__version){h, CDC__KIND_SNAPSHOT, h, 0, 0};
    return (cdc__version){e, CDC__KIND_STREAM, h, 0, 0};
}

/* h lowered below every epoch of t whose snapshot the replica has not seen
 * complete (the head: "Snapshots still running"). */
static uint64_t hold_snapshots(const cdc__table *t, uint64_t h)
{
    for (;;) {
        cdc__version v = horizon_at(t, h);
        if (!v.epoch || (t->floor_set && t->floor.epoch >= v.epoch)) return h;
        h = v.epoch - 1;
    }
}

/* The horizon LSN that a cutoff time gives t (the head: "Choosing the
 * horizon from time"), in *h; 0 when no tombstone is older than cutoff. */
static int older_than_horizon(cdc_store_t *st, cdc__table *t, int64_t cutoff_ms, uint64_t *h, cdc_error_t *err)
{
    uint64_t top = 0, cap = UINT64_MAX;
    cdc__scan it;
    cdc__scan_open(st, t, NULL, 1, NULL, 0, NULL, 0, &it);
    int rc = 0;
    for (; rc == 0; cdc__scan_next(&it)) {
        size_t kl, vl;
        const char *k, *v;
        if (!cdc__scan_row(&it, &k, &kl, &v, &vl)) break;
        cdc__value val;
        if (cdc__value_decode(v, vl, &val)) {
            rc = cdc__err(err, CDC_ECORRUPT, "table %s: a stored value does not decode", t->name);
            break;
        }
        if (val.ts_ms < cutoff_ms) {
            if ((val.flags & CDC__F_DELETED) && val.ver.lsn + 1 > top) top = val.ver.lsn + 1;
        } else if (val.ver.lsn < cap) {
            cap = val.ver.lsn;
        }
    }
    char *e = rc ? NULL : cdc__scan_error(&it);
    if (e) {
        rc = cdc__err(err, CDC_EIO, "table %s: scan failed: %s", t->name, e);
        free(e);
    }
    cdc__scan_close(&it);
    *h = top < cap ? top : cap;
    return rc;
}

/* ---- The purge ---- */

static uint64_t sst_bytes(cdc_store_t *st, rocksdb_column_family_handle_t *cf)
{
    uint64_t v = 0;
    if (rocksdb_property_int_cf(st->db, cf, "rocksdb.total-sst-files-size", &v) != 0) return 0;
    return v;
}

/* The families a purge of tables sel (n of them) compacts: "rows" once,
 * each own family; sums their SST bytes. */
static uint64_t families_bytes(cdc_store_t *st, cdc__table **sel, size_t n)
{
    uint64_t b = 0;
    int rows = 0;
    for (size_t i = 0; i < n; i++) {
        if (sel[i]->id) {
            if (!rows) b += sst_bytes(st, sel[i]->cf);
            rows = 1;
        } else {
            b += sst_bytes(st, sel[i]->cf);
        }
    }
    return b;
}

/* Compacts t's rows through every level, the bottommost included, so the
 * filter sees the newest version of each of its keys. */
static void compact_table(cdc_store_t *st, cdc__table *t, int whole_rows)
{
    rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
    rocksdb_compactoptions_set_bottommost_level_compaction(co, 2 /* kForce */);
    if (!t->id || whole_rows) {
        rocksdb_compact_range_cf_opt(st->db, t->cf, co, NULL, 0, NULL, 0);
    } else {
        char lo[CDC__TABLE_PREFIX], hi[CDC__TABLE_PREFIX];
        for (int i = 0; i < 4; i++) {
            lo[i] = (char)(t->id >> (24 - 8 * i));
            hi[i] = (char)((t->id + 1) >> (24 - 8 * i));
        }
        rocksdb_compact_range_cf_opt(st->db, t->cf, co, lo, sizeof lo, hi, sizeof hi);
    }
    rocksdb_compactoptions_destroy(co);
}

/* The purge of tables sel[0..n) to horizons hs (LSNs; 0: none), in the
 * order the head's "Who removes" requires: raised in memory, written
 * (synced), published, then compacted unless no_compact (whole: the
 * whole "rows" family rather than each table's range); the filter's counts
 * are folded and written last. */
static int purge_run(cdc_store_t *st, cdc__table **sel, const uint64_t *hs, size_t n, int no_compact, int whole,
                     cdc_gc_result_t *r, cdc_error_t *err)
{
    int rc = 0;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    /* 1. each table's horizon, raised in memory */
    for (size_t i = 0; i < n; i++) {
        cdc__table *t = sel[i];
        r->purged += cdc__purge_fold(t);
        if (!hs[i]) continue;
        cdc__version v = horizon_at(t, hs[i]);
        if (!t->horizon_set || cdc__version_cmp(&v, &t->horizon) > 0) {
            t->horizon = v;
            t->horizon_set = 1;
            t->meta_dirty = 1;
            r->tables++;
            if (hs[i] > r->horizon_lsn) r->horizon_lsn = hs[i];
        }
    }
    /* 2. on disk, synced, before the filter may act on them */
    if (r->tables) {
        for (size_t i = 0; i < n; i++) cdc__table_flush(st, sel[i], wb);
        char *e = NULL;
        rocksdb_write(st->db, st->wo_sync, wb, &e);
        if (e) {
            st->broken = 1;
            rc = cdc__err(err, CDC_EIO, "%s: writing the purge horizon failed: %s", st->dir, e);
            free(e);
        }
    }
    /* 3. published to the filter (the floors too: an apply that raised one
     * wrote it, or the store is broken and nothing gets here) */
    if (rc == 0) cdc__purge_publish(st);
    /* 4. the compaction of the tables' rows, which removes what lies below */
    if (rc == 0 && !no_compact && n) {
        /* the memtables first, so that "before" holds every row on disk */
        rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
        rocksdb_flushoptions_set_wait(fo, 1);
        for (size_t i = 0; i < n && rc == 0; i++) {
            char *e = NULL;
            rocksdb_flush_cf(st->db, fo, sel[i]->cf, &e);
            if (e) {
                rc = cdc__err(err, CDC_EIO, "table %s: flush failed: %s", sel[i]->name, e);
                free(e);
            }
        }
        rocksdb_flushoptions_destroy(fo);
        if (rc == 0) {
            r->sst_bytes_before = families_bytes(st, sel, n);
            int rows_done = 0;
            for (size_t i = 0; i < n; i++) {
                if (sel[i]->id && whole) {
                    if (rows_done) continue;
                    rows_done = 1;
                }
                compact_table(st, sel[i], whole);
            }
            r->sst_bytes_after = families_bytes(st, sel, n);
        }
    }
    /* 5. the filter's counts, into the counters */
    if (rc == 0) {
        rocksdb_writebatch_clear(wb);
        for (size_t i = 0; i < n; i++) {
            r->purged += cdc__purge_fold(sel[i]);
            cdc__table_flush(st, sel[i], wb);
        }
        char *e = NULL;
        rocksdb_write(st->db, st->wo, wb, &e);
        if (e) {
            st->broken = 1;
            rc = cdc__err(err, CDC_EIO, "%s: writing the counters failed: %s", st->dir, e);
            free(e);
        }
    }
    rocksdb_writebatch_destroy(wb);
    return rc;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int purge_check(cdc_store_t *st, const char *who, cdc_error_t *err)
{
    if (!st) return cdc__err(err, CDC_EINVAL, "%s: no store", who);
    if (st->read_only) return cdc__err(err, CDC_EINVAL, "%s: replica opened read-only", st->dir);
    if (st->broken) return cdc__err(err, CDC_EIO, "%s: an earlier write failed: reopen the replica", st->dir);
    return 0;
}

int cdc_store_purge(cdc_store_t *st, const char *table, const cdc_gc_options_t *o, cdc_gc_result_t *res,
                    cdc_error_t *err)
{
    cdc_gc_result_t r = {0};
    if (res) *res = r;
    int rc = purge_check(st, "cdc_store_purge", err);
    if (rc) return rc;
    if (!o || (!o->horizon_lsn && o->older_than_ms <= 0))
        return cdc__err(err, CDC_EINVAL, "cdc_store_purge: give a horizon LSN or an age (older_than_ms)");
    int64_t now = o->now_ms ? o->now_ms : wall_ms();
    cdc__table **sel = cdc__calloc(st->ntables ? st->ntables : 1, sizeof *sel);
    uint64_t *hs = cdc__calloc(st->ntables ? st->ntables : 1, sizeof *hs);
    size_t n = 0;
    if (table) {
        cdc__table *t;
        if ((rc = cdc__table_get(st, table, 0, &t, err)) == 0 && t->cf) sel[n++] = t;
    } else {
        for (size_t i = 0; i < st->ntables; i++)
            if (st->tables[i]->cf) sel[n++] = st->tables[i];
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        /* UINT64_MAX stands for "no horizon" below: a horizon given as the
         * largest LSN (FFFFFFFF/FFFFFFFF) is the one under it, which every
         * LSN a tombstone can carry lies below as well; it purged nothing. */
        uint64_t h = !o->horizon_lsn ? UINT64_MAX : o->horizon_lsn == UINT64_MAX ? UINT64_MAX - 1 : o->horizon_lsn;
        int hold = o->hold_snapshots;
        if (o->older_than_ms > 0) {
            uint64_t ht;
            if ((rc = older_than_horizon(st, sel[i], now - o->older_than_ms, &ht, err))) break;
            if (ht < h) h = ht;
            hold = 1;
        }
        if (hold) h = hold_snapshots(sel[i], h);
        hs[i] = h == UINT64_MAX ? 0 : h;
    }
    if (rc == 0) rc = purge_run(st, sel, hs, n, o->no_compact, !table, &r, err);
    free(sel);
    free(hs);
    if (res) *res = r;
    return rc;
}

/* ---- The automatic purge (cdc__store_purge_tick) ---- */

/* What the table of index i had applied at time at_ms: its newest LSN. */
typedef struct purge_sample {
    int64_t at_ms;
    uint64_t *lsn;           /* per table index, n of them */
    size_t n;
} purge_sample;

#define PURGE_SAMPLES 17     /* one every after/16: the horizon lags by at most 1/16 more */

static void sample_free(purge_sample *s)
{
    free(s->lsn);
    memset(s, 0, sizeof *s);
}

static void samples_free(cdc__purge *p)
{
    for (size_t i = 0; i < p->nsamples; i++) sample_free(&p->samples[i]);
    free(p->samples);
}

int cdc__store_purge_tick(cdc_store_t *st, int64_t after_ms, int64_t now_ms, cdc_gc_result_t *res,
                          cdc_error_t *err)
{
    cdc_gc_result_t r = {0};
    if (res) *res = r;
    int rc = purge_check(st, "cdc__store_purge_tick", err);
    if (rc || after_ms <= 0) return rc;
    cdc__purge *p = st->purge;
    int64_t every = after_ms / (PURGE_SAMPLES - 1);
    if (every < 1000) every = 1000;
    if (!p->samples) p->samples = cdc__calloc(PURGE_SAMPLES, sizeof *p->samples);
    /* 1. a sample, when the last one is old enough */
    if (!p->nsamples || now_ms - p->samples[p->nsamples - 1].at_ms >= every) {
        if (p->nsamples == PURGE_SAMPLES) { /* cannot happen while samples are used below; bounded anyway */
            sample_free(&p->samples[0]);
            memmove(p->samples, p->samples + 1, (PURGE_SAMPLES - 1) * sizeof *p->samples);
            p->nsamples--;
        }
        purge_sample *s = &p->samples[p->nsamples++];
        s->at_ms = now_ms;
        s->n = st->ntables;
        s->lsn = cdc__calloc(s->n ? s->n : 1, sizeof *s->lsn);
        for (size_t i = 0; i < s->n; i++) s->lsn[i] = st->tables[i]->stats[CDC__ST_NEWEST_LSN];
    }
    /* 2. the newest sample at least after_ms old gives the horizons; the
     * ones before it are no longer needed */
    size_t use = p->nsamples;
    for (size_t i = 0; i < p->nsamples; i++)
        if (now_ms - p->samples[i].at_ms >= after_ms) use = i;
    if (use == p->nsamples) return 0;
    purge_sample s = p->samples[use];
    for (size_t i = 0; i < use; i++) sample_free(&p->samples[i]);
    p->nsamples -= use + 1;
    memmove(p->samples, p->samples + use + 1, p->nsamples * sizeof *p->samples);
    cdc__table **sel = cdc__calloc(s.n ? s.n : 1, sizeof *sel);
    uint64_t *hs = cdc__calloc(s.n ? s.n : 1, sizeof *hs);
    size_t n = 0;
    for (size_t i = 0; i < s.n; i++) {
        cdc__table *t = st->tables[i];
        if (!t->cf || !s.lsn[i]) continue;
        sel[n] = t;
        hs[n++] = hold_snapshots(t, s.lsn[i]);
    }
    rc = purge_run(st, sel, hs, n, 1, 0, &r, err);
    if (rc == 0 && r.tables)
        cdc__log(st, CDC_LOG_INFO, "gc",
                 "purge horizon of %llu %s raised (up to LSN %llu): what was applied %lld s ago",
                 (unsigned long long)r.tables, r.tables == 1 ? "table" : "tables", (unsigned long long)r.horizon_lsn,
                 (long long)((now_ms - s.at_ms) / 1000));
    free(sel);
    free(hs);
    sample_free(&s);
    if (res) *res = r;
    return rc;
}

int cdc_store_gc(cdc_store_t *st, const char *table, uint64_t horizon_lsn, uint64_t *purged,
                 cdc_error_t *err)
{
    if (purged) *purged = 0;
    if (!st) return cdc__err(err, CDC_EINVAL, "cdc_store_gc: no store");
    if (!horizon_lsn) return 0; /* nothing lies below LSN 0 */
    cdc_gc_options_t o = {.horizon_lsn = horizon_lsn};
    cdc_gc_result_t r;
    int rc = cdc_store_purge(st, table, &o, &r, err);
    if (purged) *purged = r.purged;
    return rc;
}
