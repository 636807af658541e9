/*
 * changes.c: which key ranges of a table changed since a given point of the
 * replica's history, known without reading the rows (cdc_store_change_point,
 * cdc_store_changed_since in include/cdcstore.h).  A Delta table's refresh
 * (query/delta.c) rewrites the files of those ranges only: before this, it
 * read and hashed every row to find them, so a refresh after 1% of the rows
 * changed cost most of a full export.
 *
 * ---- Buckets ----
 *
 * When the apply writes a key's value (store/apply.c, fold_group) or a
 * raised floor deletes a row without an event of its own
 * (count_floor_deletes), it records the key's bucket with the batch's stamp.
 * A bucket is a prefix of the encoded key (store/codec.c): 7 bytes of an
 * integer-led key (the tag and the 6 high bytes: 65,536 consecutive
 * integers), 3 bytes of a text-led key (the tag and 2 bytes: every key that
 * starts with those two bytes), the whole key when it is shorter.  Every key
 * starting with bucket b lies in [b, succ(b)) (succ: drop trailing 0xff
 * bytes, add one to the last byte; nothing left: open), so a bucket is a key
 * range, and a range that holds a changed key overlaps a changed bucket.
 * Why prefixes of these lengths: a bucket must be coarse enough that a batch
 * writes few of them (the groups of a batch come in key order per table, so
 * consecutive keys of one bucket cost one comparison and one write in all:
 * 10,000 consecutive ids are one or two buckets, 10,000 random ids of a
 * table of 10 million rows at most 153) and that a table holds few of them
 * (10 million dense ids: 153; text keys: at most 65,536 per table), and fine
 * enough that a refresh rewrites little more than what changed (a Delta file
 * of 100,000 to 1,000,000 rows spans 2 to 16 integer buckets).  Text keys
 * are coarser for sparse alphabets: canonical UUIDs fall in 256 buckets.
 * A bucket's record is overwritten by each change and never removed, so a
 * table keeps one per bucket it ever had a key in.
 *
 * ---- Stamps and lines of history ----
 *
 * Each batch takes a stamp: the larger of the last stamp + 1 and the wall
 * clock in microseconds, so stamps rise across reopens (the last one is
 * stored) and stay readable as times.  A replica's history is a sequence of
 * lines: every writable open starts a new one with a random 64-bit id.  The
 * point an export records is (line, stamp) as of its read; the changes
 * since a point are known when:
 *  - the point's line is one this replica lived through, up to at least the
 *    point's stamp ("R" records: each line's newest stamp).  A Delta table
 *    refreshed from another replica, or from a copy of this one that went
 *    its own way (a copy's writable opens start lines of their own), names a
 *    line this replica does not have, or one it left earlier: the caller
 *    hashes instead.  A write-ahead log roll-back (store/store.c,
 *    note_rollback) that lost the batch of the point's stamp leaves that
 *    line's newest stamp below it: the replica no longer holds what the
 *    export saw, so no list of changes can describe the difference.  (A
 *    roll-back that lost only later batches loses nothing any export saw;
 *    the source delivers those records again and they are stamped anew.)
 *  - every change of the table since was tracked: a build without change
 *    tracking may have applied batches (it opens the replica, and ignores
 *    these records), or the replica was written before it.  Each tracked
 *    batch stores, with its buckets, the table's read counter (stats READ,
 *    which every record of the table counts, written in the same batch); a
 *    counter that differs from it at open, or no record at all, means
 *    untracked batches: a writable open then marks the table changed as a
 *    whole at its own stamp (cdc__changes_open), and a read-only open
 *    answers "all" for it.
 *  - no change of the table touched every row since: the table's all_stamp
 *    ("E" record) is at or below the point.  A column's default that changes
 *    or becomes known (a row written before the column read it as NULL or
 *    as the old default) sets it, as does a table's first tracked batch.
 *    A raised floor (completed re-snapshot, truncate) does not: the scan
 *    that counts the rows it deletes records their buckets.  Changes of the
 *    column set or of column types are not changes of rows here: the caller
 *    compares the columns (a Delta table's schema).  The tombstone purge
 *    (store/gc.c) removes tombstones and rows under the floor, which no view
 *    shows: it records nothing.  A stopped table writes no row; resuming it
 *    changes no value (the events of the re-read that follows are tracked).
 *
 * A point read at some moment (before the rows it describes are read) and
 * a question later: a change committed after the read has a stamp above the
 * point's (the one writer takes stamps in commit order), so a change that
 * races the caller's scan is reported again next time, never lost.
 *
 * ---- The key journal ----
 *
 * Buckets say where changes fell, not which rows changed: 1% of a table's
 * rows changed at random keys fall in every bucket.  A Delta table's
 * refresh that marks the changed rows of its files deleted (deletion
 * vectors, query/delta.c) instead of rewriting the files needs the keys
 * themselves.  So each batch also writes, per table it changed, one journal
 * record: the encoded keys it wrote (in the order note_change saw them:
 * key order within a pass; a key may repeat across records), under the
 * batch's stamp.  One record per table and batch, not one per key: the
 * cost is a copy of the keys into the batch's WriteBatch (measured in
 * RESULTS.md's apply rows).
 *
 * The journal of a table holds every change stamped after its jfrom.  It
 * is reset (all its records deleted, jfrom set to the current stamp) when:
 *  - a writable open finds it incomplete: no "K" record (a replica written
 *    before the journal), or a read counter that differs from the one the
 *    last journaled batch stored (a build without the journal applied
 *    batches since; the same test as tracked_reads above);
 *  - it holds more keys than max(2^20, the table's live rows): a refresh
 *    after that many changes rewrites the table anyway, and the journal
 *    would otherwise grow without bound.
 * cdc_store_changed_keys() answers "all" (the caller compares rows) for a
 * point before jfrom, and whenever cdc_store_changed_since() would.
 *
 * Meta keys (store/store.c lists the others):
 *   "C\0<table>\0<bucket>"  varint stamp of the bucket's newest change;
 *   "E\0<table>"            varint all_stamp, varint tracked read counter;
 *   "N\0"                   varint stamp, 8 bytes line (big-endian);
 *   "R\0<line, 8 bytes>"    varint newest stamp of that line;
 *   "J\0<table>\0<stamp, 8 bytes><seq, 4 bytes>" (big-endian) journal record:
 *                           varint length and key bytes, per key;
 *   "K\0<table>"            varint jfrom, varint jkeys, varint jreads.
 * Builds before this ignore them (load_meta skips unknown tags); the
 * buckets and the journal are skipped by a seek at open, so that their size
 * does not weigh on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "store.h"

#define BUCKET_INT 7
#define BUCKET_TEXT 3

/* ---- Buckets ---- */

size_t cdc__change_bucket_len(const char *key, size_t len)
{
    size_t n = len && (unsigned char)key[0] == CDC__KEY_INT ? BUCKET_INT : BUCKET_TEXT;
    return n < len ? n : len;
}

static void bucket_prefix(cdc__buf *k, const char *table)
{
    cdc__buf_reset(k);
    cdc__buf_putc(k, 'C');
    cdc__buf_putc(k, 0);
    cdc__buf_puts(k, table);
    cdc__buf_putc(k, 0);
}

void cdc__change_bucket_key(cdc__buf *k, const cdc__table *t, const char *b, size_t n)
{
    bucket_prefix(k, t->name);
    cdc__buf_put(k, b, n);
}

/* ---- The key journal ---- */

/* The least number of keys a journal may hold before it is reset; tests
 * lower it through CDC_JOURNAL_MIN_CAP. */
static uint64_t journal_min_cap(void)
{
    static uint64_t cap;
    if (!cap) {
        const char *e = getenv("CDC_JOURNAL_MIN_CAP");
        uint64_t v = e ? strtoull(e, NULL, 10) : 0;
        cap = v ? v : (uint64_t)1 << 20;
    }
    return cap;
}

static void journal_prefix(cdc__buf *k, const char *table)
{
    cdc__buf_reset(k);
    cdc__buf_putc(k, 'J');
    cdc__buf_putc(k, 0);
    cdc__buf_puts(k, table);
    cdc__buf_putc(k, 0);
}

void cdc__journal_put(cdc_store_t *st, rocksdb_writebatch_t *wb, cdc__table *t, uint64_t stamp, uint32_t seq,
                      const char *keys, size_t len, size_t nkeys)
{
    cdc__buf k = {0};
    journal_prefix(&k, t->name);
    cdc__buf_put_u64be(&k, stamp);
    for (int i = 3; i >= 0; i--) cdc__buf_putc(&k, (char)(seq >> (8 * i)));
    rocksdb_writebatch_put_cf(wb, st->meta_cf, k.p, k.len, keys, len);
    cdc__buf_free(&k);
    t->jpending += nkeys;
}

/* Deletes t's journal records (those wb holds too: a range deletion
 * after them in the batch wins) and starts it again after stamp. */
static void journal_reset(cdc_store_t *st, rocksdb_writebatch_t *wb, cdc__table *t, uint64_t stamp)
{
    cdc__buf lo = {0}, hi = {0};
    journal_prefix(&lo, t->name);
    journal_prefix(&hi, t->name);
    hi.p[hi.len - 1] = 1;
    rocksdb_writebatch_delete_range_cf(wb, st->meta_cf, lo.p, lo.len, hi.p, hi.len);
    cdc__buf_free(&lo);
    cdc__buf_free(&hi);
    t->jfrom = stamp;
    t->jkeys = 0;
}

static void journal_state(cdc_store_t *st, rocksdb_writebatch_t *wb, cdc__table *t, cdc__buf *k, cdc__buf *v)
{
    cdc__buf_reset(k);
    cdc__buf_putc(k, 'K');
    cdc__buf_putc(k, 0);
    cdc__buf_puts(k, t->name);
    cdc__buf_reset(v);
    cdc__buf_put_varint(v, t->jfrom);
    cdc__buf_put_varint(v, t->jkeys);
    cdc__buf_put_varint(v, t->jreads);
    rocksdb_writebatch_put_cf(wb, st->meta_cf, k->p, k->len, v->p, v->len);
}

int cdc__journal_load_table(cdc__table *t, const char *v, size_t vl)
{
    const char *end = v + vl;
    if (cdc__get_varint(&v, end, &t->jfrom) || cdc__get_varint(&v, end, &t->jkeys) ||
        cdc__get_varint(&v, end, &t->jreads))
        return CDC_ECORRUPT;
    t->jhas = 1;
    return 0;
}

/* ---- Stamps and lines ---- */

uint64_t cdc__change_stamp_next(const cdc_store_t *st)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
    return now > st->stamp ? now : st->stamp + 1;
}

static void line_key(cdc__buf *k, uint64_t line)
{
    cdc__buf_reset(k);
    cdc__buf_putc(k, 'R');
    cdc__buf_putc(k, 0);
    cdc__buf_put_u64be(k, line);
}

/* The store's "N" record and its line's "R" record, at stamp. */
static void put_line(cdc_store_t *st, rocksdb_writebatch_t *wb, uint64_t stamp)
{
    cdc__buf k = {0}, v = {0};
    cdc__buf_put_varint(&v, stamp);
    cdc__buf_put_u64be(&v, st->history);
    rocksdb_writebatch_put_cf(wb, st->meta_cf, "N\0", 2, v.p, v.len);
    line_key(&k, st->history);
    cdc__buf_reset(&v);
    cdc__buf_put_varint(&v, stamp);
    rocksdb_writebatch_put_cf(wb, st->meta_cf, k.p, k.len, v.p, v.len);
    cdc__buf_free(&k);
    cdc__buf_free(&v);
}

static void put_table(cdc_store_t *st, rocksdb_writebatch_t *wb, const cdc__table *t, cdc__buf *k, cdc__buf *v);

void cdc__changes_commit(cdc_store_t *st, rocksdb_writebatch_t *wb, uint64_t stamp)
{
    cdc__buf k = {0}, v = {0};
    put_line(st, wb, stamp);
    st->stamp = stamp;
    for (size_t i = 0; i < st->ntables; i++) {
        cdc__table *t = st->tables[i];
        if (!t->name[0] || !(t->stats_dirty || t->all_pending)) continue;
        if (!t->track_ok || t->all_pending) t->all_stamp = stamp;
        t->track_ok = t->has_track = 1;
        t->all_pending = 0;
        t->tracked_reads = t->stats[CDC__ST_READ];
        put_table(st, wb, t, &k, &v);
        if (!t->jhas) t->jfrom = 0; /* a table new in this session: its every change is journaled */
        t->jhas = t->jok = 1;
        t->jkeys += t->jpending;
        uint64_t live = t->stats[CDC__ST_LIVE], cap = live > journal_min_cap() ? live : journal_min_cap();
        if (t->jkeys > cap) journal_reset(st, wb, t, stamp);
        t->jreads = t->stats[CDC__ST_READ];
        journal_state(st, wb, t, &k, &v);
    }
    for (size_t i = 0; i < st->ntables; i++) st->tables[i]->jpending = 0;
    cdc__buf_free(&k);
    cdc__buf_free(&v);
}

int cdc__changes_load_table(cdc__table *t, const char *v, size_t vl)
{
    const char *end = v + vl;
    if (cdc__get_varint(&v, end, &t->all_stamp) || cdc__get_varint(&v, end, &t->tracked_reads))
        return CDC_ECORRUPT;
    t->has_track = 1;
    return 0;
}

int cdc__changes_load_store(cdc_store_t *st, const char *v, size_t vl)
{
    const char *end = v + vl;
    if (cdc__get_varint(&v, end, &st->stamp) || end - v < 8) return CDC_ECORRUPT;
    st->history = 0;
    for (int i = 0; i < 8; i++) st->history = st->history << 8 | (unsigned char)v[i];
    return 0;
}

static void put_table(cdc_store_t *st, rocksdb_writebatch_t *wb, const cdc__table *t, cdc__buf *k, cdc__buf *v)
{
    cdc__buf_reset(k);
    cdc__buf_putc(k, 'E');
    cdc__buf_putc(k, 0);
    cdc__buf_puts(k, t->name);
    cdc__buf_reset(v);
    cdc__buf_put_varint(v, t->all_stamp);
    cdc__buf_put_varint(v, t->tracked_reads);
    rocksdb_writebatch_put_cf(wb, st->meta_cf, k->p, k->len, v->p, v->len);
}

/* A writable open takes a stamp, which starts its line, and marks every
 * table whose changes are not all known (tracked_reads differs from its
 * read counter, or it has no "E" record: a replica written before change
 * tracking) as changed as a whole at that stamp: from there on its changes
 * are tracked, and a read-only open finds them so. */
int cdc__changes_open(cdc_store_t *st, cdc_error_t *err)
{
    for (size_t i = 0; i < st->ntables; i++) {
        cdc__table *t = st->tables[i];
        t->track_ok = t->has_track && t->tracked_reads == t->stats[CDC__ST_READ];
        t->jok = t->jhas && t->jreads == t->stats[CDC__ST_READ];
    }
    if (st->read_only) return 0;
    uint64_t line = 0;
    while (!line)
        if (getrandom(&line, sizeof line, 0) != sizeof line) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            line = ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)st) | 1;
        }
    st->history = line;
    uint64_t stamp = cdc__change_stamp_next(st);
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    put_line(st, wb, stamp);
    st->stamp = stamp;
    cdc__buf k = {0}, v = {0};
    for (size_t i = 0; i < st->ntables; i++) {
        cdc__table *t = st->tables[i];
        if (!t->name[0]) continue;
        if (!t->jok) {
            journal_reset(st, wb, t, stamp);
            t->jreads = t->stats[CDC__ST_READ];
            t->jhas = t->jok = 1;
            journal_state(st, wb, t, &k, &v);
        }
        if (t->track_ok) continue;
        t->all_stamp = stamp;
        t->tracked_reads = t->stats[CDC__ST_READ];
        t->has_track = t->track_ok = 1;
        put_table(st, wb, t, &k, &v);
    }
    cdc__buf_free(&k);
    cdc__buf_free(&v);
    char *e = NULL;
    rocksdb_write(st->db, st->wo, wb, &e);
    rocksdb_writebatch_destroy(wb);
    if (!e) return 0;
    int rc = cdc__err(err, CDC_EIO, "%s: cannot write: %s", st->dir, e);
    free(e);
    return rc;
}

/* ---- The API ---- */

int cdc_store_change_point(cdc_store_t *st, cdc_change_point_t *out, cdc_error_t *err)
{
    if (!st || !out) return cdc__err(err, CDC_EINVAL, "cdc_store_change_point: bad arguments");
    out->history = st->history;
    out->stamp = st->stamp;
    return 0;
}

/* Whether since lies on this replica's history: its line is one the
 * replica lived through, up to at least its stamp. */
static int on_history(cdc_store_t *st, const cdc_change_point_t *since, cdc_error_t *err, int *ok)
{
    *ok = 0;
    if (!since->history) return 0;
    if (since->history == st->history) {
        *ok = since->stamp <= st->stamp;
        return 0;
    }
    cdc__buf k = {0};
    line_key(&k, since->history);
    char *e = NULL;
    size_t vl;
    char *v = rocksdb_get_cf(st->db, st->ro, st->meta_cf, k.p, k.len, &vl, &e);
    cdc__buf_free(&k);
    if (e) {
        int rc = cdc__err(err, CDC_EIO, "%s: read failed: %s", st->dir, e);
        free(e);
        return rc;
    }
    if (!v) return 0;
    const char *p = v;
    uint64_t last;
    if (!cdc__get_varint(&p, v + vl, &last)) *ok = since->stamp <= last;
    rocksdb_free(v);
    return 0;
}

/* Whether table's changes since since are known (*known), by the rules of
 * the head comment: on this replica's history, tracked throughout, no
 * change of every row since. */
static int known_since(cdc_store_t *st, const char *table, const cdc_change_point_t *since, cdc__table **t,
                       int *known, cdc_error_t *err)
{
    int rc = cdc__table_get(st, table, 0, t, err), ok;
    if (!rc) rc = on_history(st, since, err, &ok);
    *known = !rc && ok && (*t)->track_ok && (*t)->all_stamp <= since->stamp;
    return rc;
}

/* An iteration's end: rc, or the iterator's error when rc is 0. */
static int iter_end(cdc_store_t *st, rocksdb_iterator_t *it, int rc, cdc_error_t *err)
{
    char *e = NULL;
    if (!rc) rocksdb_iter_get_error(it, &e);
    if (e) {
        rc = cdc__err(err, CDC_EIO, "%s: read failed: %s", st->dir, e);
        free(e);
    }
    return rc;
}

int cdc_store_changed_since(cdc_store_t *st, const char *table, const cdc_change_point_t *since,
                            cdc_range_fn fn, void *opaque, int *all, cdc_error_t *err)
{
    if (!st || !table || !since || !all) return cdc__err(err, CDC_EINVAL, "cdc_store_changed_since: bad arguments");
    *all = 1;
    cdc__table *t = NULL;
    int known, rc = known_since(st, table, since, &t, &known, err);
    if (rc || !known) return rc;
    *all = 0;
    cdc__buf lo = {0}, hi = {0}, up = {0};
    bucket_prefix(&lo, t->name);
    bucket_prefix(&hi, t->name);
    hi.p[hi.len - 1] = 1; /* "C\0<table>\1": past every bucket of the table */
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(ro, hi.p, hi.len);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(st->db, ro, st->meta_cf);
    for (rocksdb_iter_seek(it, lo.p, lo.len); !rc && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
        uint64_t stamp;
        if (kl <= lo.len || memcmp(k, lo.p, lo.len) || cdc__get_varint(&v, v + vl, &stamp)) {
            rc = cdc__err(err, CDC_ECORRUPT, "%s: a change record of table %s does not decode", st->dir, table);
            break;
        }
        if (stamp <= since->stamp) continue;
        const char *b = k + lo.len;
        size_t n = kl - lo.len;
        /* succ(b): the least key above every key that starts with b */
        cdc__buf_reset(&up);
        cdc__buf_put(&up, b, n);
        while (up.len && (unsigned char)up.p[up.len - 1] == 0xff) up.len--;
        if (up.len) up.p[up.len - 1]++;
        if (fn) rc = fn(opaque, b, n, up.p, up.len);
    }
    rc = iter_end(st, it, rc, err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    cdc__buf_free(&lo);
    cdc__buf_free(&hi);
    cdc__buf_free(&up);
    return rc;
}

int cdc_store_changed_keys(cdc_store_t *st, const char *table, const cdc_change_point_t *since, cdc_key_fn fn,
                           void *opaque, int *all, cdc_error_t *err)
{
    if (!st || !table || !since || !all || !fn)
        return cdc__err(err, CDC_EINVAL, "cdc_store_changed_keys: bad arguments");
    *all = 1;
    cdc__table *t = NULL;
    int known, rc = known_since(st, table, since, &t, &known, err);
    if (rc || !known || !t->jok || t->jfrom > since->stamp) return rc;
    *all = 0;
    cdc__buf lo = {0}, hi = {0};
    journal_prefix(&lo, t->name);
    size_t plen = lo.len;
    journal_prefix(&hi, t->name);
    hi.p[hi.len - 1] = 1; /* "J\0<table>\1": past every record of the table */
    cdc__buf_put_u64be(&lo, since->stamp + 1);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(ro, hi.p, hi.len);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(st->db, ro, st->meta_cf);
    for (rocksdb_iter_seek(it, lo.p, lo.len); !rc && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl), *end = v + vl;
        if (kl != plen + 12 || memcmp(k, lo.p, plen)) {
            rc = cdc__err(err, CDC_ECORRUPT, "%s: a journal record of table %s is misnamed", st->dir, table);
            break;
        }
        while (!rc && v < end) {
            uint64_t n;
            if (cdc__get_varint(&v, end, &n) || n > (uint64_t)(end - v)) {
                rc = cdc__err(err, CDC_ECORRUPT, "%s: a journal record of table %s does not decode", st->dir,
                              table);
                break;
            }
            rc = fn(opaque, v, (size_t)n);
            v += n;
        }
    }
    rc = iter_end(st, it, rc, err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    cdc__buf_free(&lo);
    cdc__buf_free(&hi);
    return rc;
}
