/*
 * apply.c: the guarded batch apply, and the ordering version it guards on.
 *
 * ---- The ordering version ----
 *
 * Every event gets a version v = (epoch, kind, lsn), compared
 * lexicographically; a write happens only when v is strictly greater than the
 * stored version of the key.
 *
 *   epoch  the LSN of the snapshot that the event belongs to or follows
 *          (Debezium stamps every snapshot read with the slot's consistent
 *          point C);
 *   kind   0 = deleted by a version floor (below), 1 = snapshot read,
 *          2 = streamed change;
 *   lsn    the event's source.lsn.
 *
 * Snapshot reads (op r) get (C, 1, C).  A streamed change with LSN L gets
 * (E, 2, L) where E is the larger of
 *   (a) the epoch mark of its position: the epoch of the last snapshot whose
 *       first record in the same topic partition comes before the event, and
 *   (b) the largest known snapshot epoch C <= L, or C <= P when the
 *       change knows its commit position P (source.sequence, below).
 *
 * Why this is right where the plain `lsn > stored_lsn` guard is not:
 *  - Per key, streamed change LSNs rise in commit order: a transaction that
 *    changes a row holds its row lock (or, for an insert, the unique-index
 *    entry) until it commits, so any later change of the same key is written
 *    to the WAL after that commit.  Comparing L among streamed changes of one
 *    key is therefore correct, although LSNs of different transactions are
 *    not ordered in general.  (Primary-key changes emit delete + create with
 *    one LSN, but for two different keys.)
 *  - Snapshot handover: a transaction open while the snapshot ran commits
 *    after C; its changes are streamed after the snapshot with L < C, and
 *    the snapshot did not see them.  By (a) such a change gets (C, 2, L),
 *    which beats the snapshot row (C, 1, C).  Every change streamed after a
 *    snapshot from the slot that snapshot came from committed after C, so it
 *    is newer than every row of the snapshot: kind 2 > kind 1 within an epoch
 *    says exactly that.  The LSN alone would drop the change.
 *    A partition of the topic may hold none of the snapshot's reads (a
 *    small table on a topic of several partitions): it has no mark, and an
 *    in-flight change there, L < C, got epoch 0, below the floor the
 *    completed snapshot sets: the row was lost.  Its commit position P
 *    (source.sequence[0]: the commit of the transaction the stream
 *    delivered before its own) is above C from the stream's second
 *    transaction on: the slot delivers only transactions that commit after
 *    C.  By (b) with P such a change gets (C, 2, L).  A change from an
 *    older slot has P below any later slot's C (the slot was dropped before
 *    the new one was made), so it stays below the floor.  Limits: the
 *    stream's first transaction after a snapshot has no P (sequence[0] is
 *    null), nor does bare input without sequence, so a change of it on a
 *    partition without the snapshot's reads still gets epoch 0; and so does
 *    any change consumed before the first of the snapshot's reads, when the
 *    table knows no epoch yet.  The floor then hides such a row.
 *  - A new snapshot after the slot was dropped and recreated: its epoch C2 is
 *    above every LSN of the old slot, so its rows beat everything before it.
 *    Rows deleted while no slot existed are not mentioned by any event; the
 *    completed snapshot (source.snapshot = "last") is the evidence, and it
 *    sets the table's version floor to (C2, 0, C2): every stored row with a
 *    lower version reads as deleted, and every event with a lower version is
 *    stale.  Rows the snapshot does contain carry (C2, 1, C2), above the floor,
 *    whichever partition order they were consumed in.  A truncate (op t)
 *    raises the floor to its own version the same way.
 *  - Replays: (a) is looked up by position in the stored marks, not taken
 *    from "the current epoch", so re-reading a topic from the beginning
 *    gives every event the same version it had the first time, and the guard
 *    skips all of it: a whole-topic replay changes nothing.
 *  - Duplicates compare equal and are skipped; a delete keeps its version as
 *    a tombstone, so a late older update is stale (counted as a blocked
 *    resurrection).
 *
 * Commit order, and incremental snapshots.  Debezium's source.sequence is
 * [P, L]: P is the end of the commit record of the transaction it delivered
 * before this event's (PostgreSQL delivers transactions in commit order, so
 * P rises strictly from one transaction to the next and is shared by the
 * events of one transaction).  A streamed change carries commit = P.  When
 * two versions both know their commit, they compare by (commit, read before
 * change, lsn), otherwise by lsn as above.  Per key the two agree: of two
 * transactions changing one key, the one that commits first has the lower
 * P and, by the row lock, the lower LSN.
 *
 * An incremental snapshot (Debezium's watermark algorithm, DBLog) reads a
 * chunk of keys with a SELECT between a low and a high watermark written
 * to the signal table, drops from the chunk every key that a change streamed
 * between the two watermarks touched, and emits the rest as reads (op r,
 * snapshot "incremental", no lsn) when the stream reaches the high
 * watermark, stamped with the stream's sequence there: commit = P_H, the
 * commit delivered before the high watermark's transaction.  Such a read
 * gets (E, 2, commit P_H, read, lsn P_H), E as for a change at P_H:
 *  - every change committed before the low watermark is in the SELECT, and
 *    was delivered before the high watermark, so its P < P_H: the read is
 *    newer, as it should be;
 *  - a change committed between the watermarks removed its key from the
 *    chunk: no read of that key is emitted;
 *  - a change committed after the high watermark was not seen by the SELECT
 *    and has P >= the high watermark's own commit > P_H: it is newer than
 *    the read whatever its lsn, including a transaction that began before
 *    the window (its lsn is below P_H, so by lsn alone the stale read would
 *    win: the incremental form of the handover loss);
 *  - a change of the high watermark's own transaction (with a read-only
 *    watermark, the transaction that closes the window) has commit P_H:
 *    "read before change" puts the read first;
 *  - a redelivery after a restart repeats versions (the guard skips it),
 *    and a chunk read again in a later window gets a later P_H: it holds the
 *    rows as of that later window.
 * Where one side's commit is unknown (a change from before the connector's
 * first commit, whose sequence starts with null, or a value stored before
 * the commit order was kept) the read compares by lsn = P_H: every change
 * that committed before P_H has a lower lsn, so only a transaction open
 * across the window and delivered without a commit order could lose.
 * An incremental read never raises a floor: rows it does not mention are not
 * evidence of deletes (the stream carries them).
 *
 * Limits, said plainly: input without positions (bare envelopes) has no
 * marks; there (a) is the last snapshot epoch seen in the same store session.
 * An incremental read without a commit position is dead-lettered, not
 * guessed.
 * When the connector re-snapshots on an existing slot (snapshot.mode=always),
 * changes it streams again from the slot's older position may briefly win
 * over the new snapshot's rows; the stream then replays every later change
 * of those keys, so the replica converges.
 *
 * ---- The apply ----
 *
 * The store is handed a batch of decoded events (store/internal.h: what
 * each does to which row, and the inputs of its version); it knows no
 * record format.  cdc__store_apply_events() runs five passes, each a
 * function:
 *
 *   1. take_record      in record order: dead letters (take_dead), counters,
 *                       the table's key columns (learn_keycols), versions
 *                       and epoch marks (assign_version), version floors
 *                       (raise_floor), and the grouping of events by
 *                       (table, key) (group_add);
 *   2. count_floor_deletes  rows a floor raised by this batch deletes
 *                       without an event of theirs (a scan of the table);
 *   3. read_stored      the stored values of every key of the batch,
 *                       MultiGets of 4,096 keys in key order;
 *   4. fold_group       per key: the events in version order (sort_group),
 *                       the stored state under the floor (fold_start), the
 *                       guard (count_not_applied), the fold of every newer
 *                       event (fold_events: unchanged TOASTed columns take
 *                       the value of the state they follow), the counters
 *                       (count_applied) and the new value;
 *   5. commit           positions (write_positions), the batch's change
 *                       stamp (cdc__changes_commit), table metadata and
 *                       counters, and the one RocksDB write; then notify.
 *
 * Change buckets.  Each key written in pass 4, and each row a floor
 * deletes in pass 2, records its bucket (a prefix of its encoded key) with
 * the batch's stamp (note_change; store/changes.c says why and what reads
 * them): the groups come in key order per table, so a run of keys of one
 * bucket costs one comparison each and one write in all.
 *
 * Rows, counters, table metadata (with the id of a table the batch creates),
 * epoch marks, dead letters and the highest offset per (topic, partition) go
 * into one WriteBatch, so a crash keeps either all of a batch or none of it.
 * Passes 2 to 4 reach a table's rows only through cdc__table_key() and
 * cdc__scan_*() (store/store.c: tables as key prefixes), which serve a table
 * with its own column family and a prefixed one alike.  The caller's interrupt flag is
 * looked at every 4,096 records in pass 1 and keys in passes 3 and 4: a
 * signal gives the batch up before its write, within milliseconds however
 * large the batch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define DLQ_RECORD_MAX (64 * 1024)

/* ---- Helpers ---- */

static const char *pos_name(const cdc_record_t *r, char *buf, size_t n)
{
    if (r->offset >= 0)
        snprintf(buf, n, "%s[%d]@%lld", r->topic ? r->topic : "", (int)r->partition, (long long)r->offset);
    else
        snprintf(buf, n, "%s:%lld", r->source ? r->source : "input", (long long)r->line);
    return buf;
}

static void add_epoch(cdc__table *t, uint64_t c)
{
    size_t i = t->nepochs;
    for (size_t k = 0; k < t->nepochs; k++)
        if (t->epochs[k] == c) return;
    t->epochs = cdc__realloc(t->epochs, (t->nepochs + 1) * sizeof *t->epochs);
    while (i > 0 && t->epochs[i - 1] > c) {
        t->epochs[i] = t->epochs[i - 1];
        i--;
    }
    t->epochs[i] = c;
    t->nepochs++;
    t->meta_dirty = 1;
}

static uint64_t epoch_le(const cdc__table *t, uint64_t lsn)
{
    for (size_t k = t->nepochs; k > 0; k--)
        if (t->epochs[k - 1] <= lsn) return t->epochs[k - 1];
    return 0;
}

static void stat_add(cdc__table *t, int slot, int64_t d)
{
    t->stats[slot] += (uint64_t)d;
    t->stats_dirty = 1;
}

/* The high-water mark slots (newest_ts_ms, newest_lsn) keep the largest
 * value seen. */
static void stat_max(cdc__table *t, int slot, uint64_t v)
{
    if (v <= t->stats[slot]) return;
    t->stats[slot] = v;
    t->stats_dirty = 1;
}

/* ---- Grouping events by key ---- */

typedef struct group {
    cdc__table *t;
    const char *key;
    size_t key_len;
    int first;           /* first event index */
} group;

static uint64_t hash_key(const cdc__table *t, const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)t;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
    return h;
}

/* Key order within a table (tables in a fixed order between them).  The
 * batch's keys are read and written in this order: RocksDB's memtable skip
 * list then starts each insert from the splice the previous one left, a few
 * levels down instead of from the top (perf of `cdcstore apply` at batches of
 * 10,000: the insert's search fell from 7.6% to 3.3% of the samples, the
 * sort itself costs under 1%). */
static int group_cmp(const void *a, const void *b)
{
    const group *x = a, *y = b;
    /* prefixed tables in id order, so that the keys of "rows" come sorted */
    if (x->t->id != y->t->id) return x->t->id < y->t->id ? -1 : 1;
    if (x->t != y->t) return (uintptr_t)x->t < (uintptr_t)y->t ? -1 : 1;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

/* ---- State folding ---- */

typedef struct colval {
    int tag;             /* CDC__V_NULL, CDC__V_UNAVAILABLE, CDC__V_TEXT */
    const char *p;
    size_t n;
    int set;             /* present in the row */
} colval;

typedef struct fold {
    int exists;          /* a stored or folded state exists (possibly a tombstone or floor) */
    int flags;
    cdc__version ver;
    int64_t ts_ms;
    int32_t partition;   /* Kafka partition of the state's newest event, -1 unknown */
    colval *cols;
    size_t ncols, cap;
} fold;

static void fold_grow(fold *f, size_t n)
{
    if (n <= f->cap) {
        if (n > f->ncols) {
            memset(f->cols + f->ncols, 0, (n - f->ncols) * sizeof *f->cols);
            f->ncols = n;
        }
        return;
    }
    f->cols = cdc__realloc(f->cols, n * sizeof *f->cols);
    memset(f->cols + f->ncols, 0, (n - f->ncols) * sizeof *f->cols);
    f->cap = f->ncols = n;
}

/* (inlined: the apply folds every key through these two; donor_row's
 * second call made the compiler stop inlining them, +0.5% instructions on
 * the bench's medium stream, callgrind) */
/* The fold emptied and sized to n columns, none set. */
static void fold_reset(fold *f, size_t n)
{
    f->ncols = 0;
    fold_grow(f, n); /* zeroes what it adds */
}

static inline __attribute__((always_inline)) int fold_load_stored(fold *f, const cdc__table *t, const char *row,
                                                                  size_t len)
{
    const char *p = row, *end = row + len;
    uint64_t n, idx, tag;
    fold_grow(f, t->ncols);
    for (size_t i = 0; i < f->ncols; i++) f->cols[i].set = 0;
    if (!len) return 0;
    if (cdc__get_varint(&p, end, &n)) return CDC_ECORRUPT;
    for (uint64_t i = 0; i < n; i++) {
        if (cdc__get_varint(&p, end, &idx) || cdc__get_varint(&p, end, &tag)) return CDC_ECORRUPT;
        size_t vl = tag >= CDC__V_TEXT ? (size_t)(tag - CDC__V_TEXT) : 0;
        if ((size_t)(end - p) < vl || idx >= f->ncols) return CDC_ECORRUPT;
        f->cols[idx] = (colval){(int)(tag >= CDC__V_TEXT ? CDC__V_TEXT : tag), p, vl, 1};
        p += vl;
    }
    return 0;
}

/* Replaces the state's row with an event row; unavailable columns keep the
 * state's value when it has one.  live says whether the state is a live row. */
static inline __attribute__((always_inline)) int fold_take_row(fold *f, cdc__table *t, const cdc__buf *row, int live,
                                                               uint64_t *kept, uint64_t *unresolved,
                                                               const fold *donor)
{
    const char *p = row->p, *end = row->p + row->len;
    uint64_t n;
    if (!row->len) {
        for (size_t i = 0; i < f->ncols; i++) f->cols[i].set = 0;
        return 0;
    }
    if (cdc__get_varint(&p, end, &n)) return CDC_ECORRUPT;
    /* Mark the old values, then overwrite; columns absent from the event row
     * are dropped (the event carries the whole row). */
    for (size_t i = 0; i < f->ncols; i++) f->cols[i].set = f->cols[i].set ? 2 : 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *name, *v;
        size_t nl, vl;
        int tag;
        if (cdc__evrow_next(&p, end, &name, &nl, &tag, &v, &vl)) return CDC_ECORRUPT;
        size_t idx = cdc__table_col(t, name, nl);
        fold_grow(f, t->ncols);
        colval *c = &f->cols[idx];
        if (tag == CDC__V_UNAVAILABLE) {
            if (live && c->set == 2 && c->tag == CDC__V_TEXT) {
                c->set = 1;
                (*kept)++;
            } else if (live && c->set == 2 && c->tag == CDC__V_NULL) {
                c->set = 1;
                (*kept)++;
            } else if (donor && idx < donor->ncols && donor->cols[idx].set &&
                       donor->cols[idx].tag != CDC__V_UNAVAILABLE) {
                *c = donor->cols[idx]; /* the value it had under its old key (donor_row) */
                c->set = 1;
                (*kept)++;
            } else {
                *c = (colval){CDC__V_UNAVAILABLE, NULL, 0, 1};
                (*unresolved)++;
            }
        } else {
            *c = (colval){tag, v, vl, 1};
        }
    }
    for (size_t i = 0; i < f->ncols; i++)
        if (f->cols[i].set == 2) f->cols[i].set = 0;
    return 0;
}

static void fold_encode_row(const fold *f, cdc__buf *out)
{
    size_t n = 0;
    for (size_t i = 0; i < f->ncols; i++) n += f->cols[i].set ? 1 : 0;
    cdc__buf_put_varint(out, n);
    for (size_t i = 0; i < f->ncols; i++) {
        const colval *c = &f->cols[i];
        if (!c->set) continue;
        cdc__buf_put_varint(out, i);
        if (c->tag == CDC__V_TEXT) {
            cdc__buf_put_varint(out, c->n + CDC__V_TEXT);
            cdc__buf_put(out, c->p, c->n);
        } else {
            cdc__buf_put_varint(out, (uint64_t)c->tag);
        }
    }
}

/* ---- Dead letters ---- */

/*
 * A dead letter is stored once.  Applying a file again, or a rerun after a
 * stop at a bad record, meets the same bad records again: the replica's
 * rows take them as duplicates by version, and the dead-letter store must
 * not list each bad record once per run.  A dead letter's identity is its
 * reason, its Kafka position (topic, partition, offset) and its record's
 * bytes; a record without an offset (a bare envelope) has its file and line
 * for a position.  A Kafka record met in two files, or in a file and from
 * the broker, is the same record; one that differs in any of these (another
 * reason, another position, other bytes) is a new dead letter, so nothing
 * is ever dropped on a guess.  An index under "\xff" + the 8-byte hash of
 * the identity lists the ids of the dead letters with that hash; each is
 * compared in full (dlq_ident of its stored value).  Ids are
 * 8-byte big-endian numbers that stay far below 0xff00...: the index sorts
 * after all of them (cdc_dlq_next and the open stop at "\xff").
 */
static uint64_t dlq_hash(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a: dead letters are few */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
    return h;
}

/* The identity of the dead letter stored as v (dlq_put's layout) into out:
 * v without the source and line when it has an offset, else v.  -1 when v
 * does not decode. */
static int dlq_ident(const char *v, size_t vl, cdc__buf *out)
{
    const char *p = v, *end = v + vl, *src;
    uint64_t l, x, off;
    out->len = 0;
    if (cdc__get_varint(&p, end, &l) || l > (uint64_t)(end - p)) return -1; /* reason */
    p += l;
    if (cdc__get_varint(&p, end, &l) || l > (uint64_t)(end - p)) return -1; /* topic */
    p += l;
    if (cdc__get_varint(&p, end, &x) || cdc__get_varint(&p, end, &off)) return -1; /* partition, offset + 1 */
    src = p;
    if (cdc__get_varint(&p, end, &l) || l > (uint64_t)(end - p)) return -1; /* source */
    p += l;
    if (cdc__get_varint(&p, end, &x)) return -1; /* line */
    if (!off) {
        cdc__buf_put(out, v, vl);
    } else {
        cdc__buf_put(out, v, (size_t)(src - v));
        cdc__buf_put(out, p, (size_t)(end - p)); /* the record */
    }
    return 0;
}

/* The key of dead letter id: its 8 big-endian bytes. */
static void dlq_id_key(char key[8], uint64_t id)
{
    for (int i = 0; i < 8; i++) key[i] = (char)(id >> (56 - 8 * i));
}

static void dlq_index_key(cdc__buf *k, uint64_t h)
{
    k->len = 0;
    cdc__buf_putc(k, (char)0xff);
    cdc__buf_put_u64be(k, h);
}

/* Is a dead letter of identity id stored already under one of the ids
 * listed in idx (the index's value)?  Sets *seen. */
static int dlq_known(cdc_store_t *st, const char *idx, size_t il, const cdc__buf *ident, int *seen,
                     cdc_error_t *err)
{
    const char *p = idx, *end = idx + il;
    uint64_t id;
    cdc__buf other = {0};
    *seen = 0;
    while (p < end && !*seen) {
        if (cdc__get_varint(&p, end, &id)) return cdc__err(err, CDC_ECORRUPT, "the dead-letter index does not decode");
        char key[8];
        dlq_id_key(key, id);
        size_t dl;
        char *e = NULL;
        char *d = rocksdb_get_cf(st->db, st->ro, st->dlq_cf, key, 8, &dl, &e);
        if (e) {
            int rc = cdc__err(err, CDC_EIO, "reading dead letter %llu: %s", (unsigned long long)id, e);
            rocksdb_free(e);
            cdc__buf_free(&other);
            return rc;
        }
        *seen = d && !dlq_ident(d, dl, &other) && other.len == ident->len && !memcmp(other.p, ident->p, other.len);
        rocksdb_free(d);
    }
    cdc__buf_free(&other);
    return 0;
}

/* ---- The batch in flight ---- */

typedef struct pos_upd {
    const char *topic;
    int32_t partition;
    int64_t offset;
    const cdc_record_t *rec; /* the record at offset */
} pos_upd;

/* Key changes of one row in one batch followed back (donor_row): a row
 * whose key changed more often than this in one batch keeps its
 * placeholders unresolved. */
#define DONOR_DEPTH 200

/* The store's state of one record of the batch. */
typedef struct slot {
    cdc__table *t;       /* the table of a row event */
    cdc__version ver;    /* its ordering version */
    int next;            /* next event index in the key's group, -1 */
    int32_t partition;   /* its record's Kafka partition, -1 without an offset (check_partition reads
                          * it here: reading the records themselves in key order was a cache miss
                          * each, a third of the apply function's own samples) */
} slot;

/* Everything the passes share; one per cdc__store_apply_events call. */
typedef struct apply_ctx {
    cdc_store_t *st;
    const cdc_record_t *recs;
    cdc__event *evs;
    slot *sl;
    size_t n;
    size_t taken;                    /* records taken by pass 1 (all, unless stopped) */
    const cdc_apply_options_t *opts;
    cdc_apply_result_t *res;
    cdc_error_t *err;
    rocksdb_writebatch_t *wb;
    int stopped;
    pos_upd *pu;                     /* highest offset per (topic, partition) */
    size_t npu, pu_last;             /* pu_last: the entry of the last record (pos_note) */
    group *groups;                   /* one per (table, key) */
    size_t ngroups;
    int *htab;                       /* open addressing over groups, hcap slots */
    size_t hcap;
    int *last_in_group;
    cdc__table **floored;            /* tables whose floor this batch raised ... */
    cdc__version *old_floor;         /* ... and their floors before it */
    size_t nfloored;
    char **vals;                     /* stored values per group (MultiGet, or the cache) */
    size_t *vlens;
    char **errs;
    unsigned char *vhit;             /* vals[g] came from the cache (store/vcache.c): 1 a copy,
                                      * 2 the cache's own bytes (no donor_row in the batch) ... */
    int donors;                      /* an event of the batch may read another key's stored row
                                      * (donor_row): the cache's values are copied */
    cdc__ventry **vent;              /* ... from this entry */
    uint64_t *vh;                    /* the cache's hash of each group's key */
    cdc__buf rkeys;                  /* the groups' keys as stored, in group order ... */
    size_t *rkoff, *rklen;           /* ... where each starts, and its length */
    fold f;                          /* reused across groups */
    fold **donor;                    /* a moved row's old keys, as of its key changes (donor_row) */
    size_t ndonor;
    colval **created;                /* per event: the row a create by a key change made, once known */
    size_t *ncreated;
    int **gsorted;                   /* per group: its events in version order, once asked (donor_row) */
    size_t *ngsorted;
    char **donor_vals;               /* the old keys' values read for the batch (RocksDB's) */
    size_t ndonor_vals;
    int keep_row;                    /* the group ends with a moved key's delete after a live row */
    cdc__buf out, rowbuf;
    cdc__buf keytext, elem; /* a tombstone's key columns (tombstone_key) */
    unsigned char *present; /* the columns an upsert carried (note_columns) */
    size_t prescap;
    int *order;                      /* a group's events in version order */
    uint64_t stamp;                  /* the batch's change stamp (store/changes.c) */
    const cdc__table *bt;            /* the last bucket recorded (note_change) ... */
    cdc__buf bucket;                 /* ... of that table */
    cdc__buf ckey, cval;
    cdc__table *jt;                  /* the table whose keys jbuf gathers for the journal */
    cdc__buf jbuf;
    size_t jn;                       /* keys in jbuf */
    uint32_t jseq;                   /* journal records written by the batch */
    struct dl_written {              /* the dead letters this batch wrote: */
        cdc__buf ident;              /* dlq_ident */
        uint64_t h, id;              /* its hash, its id */
    } *dl;
    size_t ndl;
} apply_ctx;

static void pos_note(apply_ctx *a, const cdc_record_t *r)
{
    /* Positions are stored as offset + 1; one that cannot be is not a
     * position (sources dead-letter such records). */
    if (r->offset < 0 || r->offset == INT64_MAX || r->partition < 0) return;
    const char *topic = r->topic ? r->topic : "";
    /* records come in runs of one partition: its entry is looked at first,
     * so that a batch over many topics does not scan them per record */
    for (size_t n = 0; n < a->npu; n++) {
        size_t i = (a->pu_last + n) % a->npu;
        if (a->pu[i].partition == r->partition && (a->pu[i].topic == topic || !strcmp(a->pu[i].topic, topic))) {
            if (r->offset > a->pu[i].offset) {
                a->pu[i].offset = r->offset;
                a->pu[i].rec = r;
            }
            a->pu_last = i;
            return;
        }
    }
    a->pu_last = a->npu;
    a->pu = cdc__realloc(a->pu, (a->npu + 1) * sizeof *a->pu);
    a->pu[a->npu++] = (pos_upd){topic, r->partition, r->offset, r};
}

/* Writes the dead letter of record r into the batch, unless the store or
 * this batch holds it already (*known = 1; "A dead letter is stored once").
 * 0, or an error reading the store. */
static int dlq_put(apply_ctx *a, const cdc_record_t *r, const char *reason, int *known)
{
    cdc_store_t *st = a->st;
    cdc__buf v = {0}, k = {0}, idx = {0}, ident = {0};
    size_t n = strlen(reason);
    cdc__buf_put_varint(&v, n);
    cdc__buf_put(&v, reason, n);
    const char *topic = r->topic ? r->topic : "";
    cdc__buf_put_varint(&v, strlen(topic));
    cdc__buf_puts(&v, topic);
    cdc__buf_put_varint(&v, (uint64_t)(uint32_t)r->partition);
    cdc__buf_put_varint(&v, (uint64_t)r->offset + 1); /* 0: no offset */
    const char *src = r->source ? r->source : "";
    cdc__buf_put_varint(&v, strlen(src));
    cdc__buf_puts(&v, src);
    cdc__buf_put_varint(&v, (uint64_t)(r->line > 0 ? r->line : 0));
    const char *rec = r->value ? r->value : (r->key ? r->key : "");
    size_t rl = r->value ? r->value_len : r->key_len;
    if (rl > DLQ_RECORD_MAX) rl = DLQ_RECORD_MAX;
    cdc__buf_put_varint(&v, rl);
    cdc__buf_put(&v, rec, rl);
    dlq_ident(v.p, v.len, &ident);
    uint64_t h = dlq_hash(ident.p, ident.len);
    *known = 0;
    /* This batch's own dead letters first: the store does not see them yet. */
    for (size_t i = 0; i < a->ndl && !*known; i++)
        *known = a->dl[i].h == h && a->dl[i].ident.len == ident.len && !memcmp(a->dl[i].ident.p, ident.p, ident.len);
    dlq_index_key(&k, h);
    int rc = 0;
    if (!*known) {
        char *e = NULL;
        size_t il = 0;
        char *old = rocksdb_get_cf(st->db, st->ro, st->dlq_cf, k.p, k.len, &il, &e);
        if (e) {
            rc = cdc__err(a->err, CDC_EIO, "reading the dead-letter index: %s", e);
            rocksdb_free(e);
        } else if (old) {
            rc = dlq_known(st, old, il, &ident, known, a->err);
            cdc__buf_put(&idx, old, il);
        }
        rocksdb_free(old);
    }
    if (!rc && !*known) {
        uint64_t id = st->next_dlq++;
        /* the index as this batch leaves it: the store's ids, this batch's
         * other ids of the same hash, this one */
        for (size_t i = 0; i < a->ndl; i++)
            if (a->dl[i].h == h) cdc__buf_put_varint(&idx, a->dl[i].id);
        cdc__buf_put_varint(&idx, id);
        char key[8];
        dlq_id_key(key, id);
        rocksdb_writebatch_put_cf(a->wb, st->dlq_cf, key, sizeof key, v.p, v.len);
        rocksdb_writebatch_put_cf(a->wb, st->dlq_cf, k.p, k.len, idx.p, idx.len);
        a->dl = cdc__realloc(a->dl, (a->ndl + 1) * sizeof *a->dl);
        a->dl[a->ndl++] = (struct dl_written){ident, h, id}; /* ident taken over */
        ident = (cdc__buf){0};
    }
    cdc__buf_free(&ident);
    cdc__buf_free(&v);
    cdc__buf_free(&k);
    cdc__buf_free(&idx);
    return rc;
}

/* Does table read as topic_name once Debezium's topic naming has replaced
 * each character of it other than [A-Za-z0-9._-] with '_' (one per UTF-16
 * unit: one for a character of 2 or 3 UTF-8 bytes, two for one of 4)? */
static int topic_spelling(const char *table, const char *topic_name)
{
    const unsigned char *p = (const unsigned char *)table;
    const char *q = topic_name;
    while (*p) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
            c == '-') {
            if (*q++ != (char)c) return 0;
            p++;
            continue;
        }
        int units = c >= 0xF0 ? 2 : 1, len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        for (int i = 0; i < units; i++)
            if (*q++ != '_') return 0;
        for (int i = 0; i < len && *p; i++) p++;
    }
    return *q == 0;
}

/* The table a record without a row is counted in.  A tombstone (and a
 * message without a table) is named only by its topic, where Debezium has
 * replaced the characters of the schema and table names that topics cannot
 * hold: "public.Order Items" comes as "...public.Order_Items".  The table
 * the replica holds under the name that reads so is the one; otherwise
 * every delete of such a table made an empty table of the topic's name
 * appear beside it, which doctor reported as a table the publication does
 * not cover. */
static cdc__table *counted_table(cdc_store_t *st, const char *name)
{
    cdc__table *t = NULL;
    if (name && cdc__table_get(st, name, 0, &t, NULL) == 0) return t;
    if (name && strchr(name, '_'))
        for (size_t i = 0; i < st->ntables; i++)
            if (st->tables[i]->name && topic_spelling(st->tables[i]->name, name)) return st->tables[i];
    if (name && cdc__table_get(st, name, 1, &t, NULL) == 0) return t;
    if (cdc__table_get(st, "", 1, &t, NULL) == 0) return t;
    return NULL;
}

/* The group of (t, key), or -1; *slotp is where the probe ended. */
static int group_find(const apply_ctx *a, const cdc__table *t, const char *key, size_t kl, size_t *slotp)
{
    size_t slot = hash_key(t, key, kl) & (a->hcap - 1);
    for (;; slot = (slot + 1) & (a->hcap - 1)) {
        int g = a->htab[slot];
        if (g < 0) break;
        const group *gr = &a->groups[g];
        if (gr->t == t && gr->key_len == kl && !memcmp(gr->key, key, kl)) {
            *slotp = slot;
            return g;
        }
    }
    *slotp = slot;
    return -1;
}

/* The keys gathered for the journal, as one record of their table. */
static void journal_flush(apply_ctx *a)
{
    if (a->jn) cdc__journal_put(a->st, a->wb, a->jt, a->stamp, a->jseq++, a->jbuf.p, a->jbuf.len, a->jn);
    cdc__buf_reset(&a->jbuf);
    a->jn = 0;
}

/* Records that the row of table t under encoded key key changed in this
 * batch: the key into the journal, its bucket with the batch's stamp
 * (store/changes.c).  Keys come in key order per table, so a run of keys
 * of one bucket writes it once, and a table's keys make one record per
 * pass. */
static void note_change(apply_ctx *a, cdc__table *t, const char *key, size_t kl)
{
    if (a->jt != t) {
        journal_flush(a);
        a->jt = t;
    }
    cdc__buf_put_varint(&a->jbuf, kl);
    cdc__buf_put(&a->jbuf, key, kl);
    a->jn++;
    size_t n = cdc__change_bucket_len(key, kl);
    if (a->bt == t && a->bucket.len == n && !memcmp(a->bucket.p, key, n)) return;
    a->bt = t;
    cdc__buf_reset(&a->bucket);
    cdc__buf_put(&a->bucket, key, n);
    cdc__change_bucket_key(&a->ckey, t, key, n);
    if (!a->cval.len) cdc__buf_put_varint(&a->cval, a->stamp);
    rocksdb_writebatch_put_cf(a->wb, a->st->meta_cf, a->ckey.p, a->ckey.len, a->cval.p, a->cval.len);
}

/* ---- Pass 1, in record order: dead letters, counters, versions, groups ---- */

/* A record that does not decode: into the dead-letter store with its
 * position.  With on_error = stop the batch ends before it. */
static int take_dead(apply_ctx *a, size_t i)
{
    const cdc_record_t *r = &a->recs[i];
    cdc__event *ev = &a->evs[i];
    char where[600], reason[1400];
    cdc__table *t = counted_table(a->st, ev->table);
    const char *why = ev->reason ? ev->reason : "record does not decode";
    size_t wl = strlen(pos_name(r, where, sizeof where));
    /* The reason starts with the position when the decoder put it there. */
    if (!strncmp(why, where, wl) && why[wl] == ':') snprintf(reason, sizeof reason, "%s", why);
    else snprintf(reason, sizeof reason, "%s: %s", where, why);
    int known, rc = dlq_put(a, r, reason, &known);
    if (rc) return rc;
    cdc__log(a->st, CDC_LOG_WARN, "apply", "dead letter%s: %s",
             known ? " (in the dead-letter store already: not written again)" : "", reason);
    a->res->dead_letters_known += (uint64_t)known;
    if (t) {
        stat_add(t, CDC__ST_READ, 1);
        stat_add(t, CDC__ST_DEAD, 1);
    }
    a->res->dead_letters++;
    if (a->opts->on_error == CDC_ON_ERROR_STOP) {
        /* Records before this one are applied; its position is not passed,
         * so a rerun meets it again. */
        a->stopped = 1;
        cdc__err(a->err, CDC_ESTOPPED, "stopped at a bad record: %s", reason);
        return 0;
    }
    pos_note(a, r);
    return 0;
}

/* The key columns of a table, learnt from its first event that names them. */
static void learn_keycols(cdc__table *t, const cdc__event *ev)
{
    if (t->nkey || !ev->keycols.len) return;
    const char *p = ev->keycols.p, *end = p + ev->keycols.len;
    uint64_t nk, l;
    if (cdc__get_varint(&p, end, &nk) || nk == 0 || nk >= 1000) return;
    t->keycols = cdc__calloc(nk ? nk : 1, sizeof *t->keycols);
    for (uint64_t k = 0; k < nk && !cdc__get_varint(&p, end, &l) && (uint64_t)(end - p) >= l; k++) {
        t->keycols[t->nkey++] = cdc__strndup(p, l);
        p += l;
    }
    t->meta_dirty = 1;
}

/* Does the event's key have the table's key columns, in order?  A key of
 * other columns is encoded differently, so its row could be neither read
 * by key nor told apart from the table's own rows. */
static int keycols_match(const cdc__table *t, const cdc__event *ev)
{
    const char *p = ev->keycols.p, *end = p + ev->keycols.len;
    uint64_t nk, l;
    if (!t->nkey || cdc__get_varint(&p, end, &nk) || nk != t->nkey) return !t->nkey;
    for (size_t k = 0; k < nk; k++) {
        if (cdc__get_varint(&p, end, &l) || (uint64_t)(end - p) < l) return 0;
        if (strlen(t->keycols[k]) != l || memcmp(t->keycols[k], p, l)) return 0;
        p += l;
    }
    return 1;
}

/* The event's ordering version (see the top of this file); a snapshot read
 * also records its epoch, and a mark at its position. */
static cdc__version assign_version(apply_ctx *a, cdc__table *t, const cdc_record_t *r, const cdc__event *ev)
{
    cdc_store_t *st = a->st;
    const char *topic = r->topic ? r->topic : "";
    if (ev->snapshot == CDC__SNAP_NONE || ev->snapshot == CDC__SNAP_INCREMENTAL) {
        int read = ev->snapshot == CDC__SNAP_INCREMENTAL;
        uint64_t e = r->offset >= 0 ? cdc__mark_at(st, topic, r->partition, r->offset) : st->run_epoch;
        uint64_t e2 = epoch_le(t, read || ev->commit > ev->lsn ? ev->commit : ev->lsn);
        return (cdc__version){e > e2 ? e : e2, CDC__KIND_STREAM, ev->lsn, ev->commit, (uint32_t)read};
    }
    uint64_t c = ev->lsn;
    add_epoch(t, c);
    if (r->offset >= 0) {
        if (cdc__mark_at(st, topic, r->partition, r->offset) < c) {
            cdc__mark_add(st, cdc__strdup(topic), r->partition, r->offset, c);
            cdc__buf k = {0}, v = {0};
            cdc__meta_key_mark(&k, topic, r->partition, r->offset);
            cdc__buf_put_varint(&v, c);
            rocksdb_writebatch_put_cf(a->wb, st->meta_cf, k.p, k.len, v.p, v.len);
            cdc__buf_free(&k);
            cdc__buf_free(&v);
        }
    } else if (st->run_epoch != c) {
        st->run_epoch = c;
    }
    return (cdc__version){c, CDC__KIND_SNAPSHOT, c, 0, 0};
}

/* Version floors: a completed snapshot raises the table's floor to
 * (C, 0, C), a truncate to its own version.  The first raise of a table in
 * the batch remembers the floor before it (pass 2 counts what it deletes).
 * Returns the floor's order against the new one's: > 0 raised, 0 the same
 * floor again, < 0 below the table's floor (or not a floor). */
static int raise_floor(apply_ctx *a, cdc__table *t, const cdc__event *ev, const cdc__version *ver)
{
    cdc__version fl;
    if (ev->snapshot == CDC__SNAP_LAST) fl = (cdc__version){ev->lsn, CDC__KIND_GAP, ev->lsn, 0, 0};
    else if (ev->action == CDC__ACT_FLOOR) {
        /* A truncate's floor compares by lsn alone, the same before and after
         * the table's metadata is stored (it keeps no commit order): exact,
         * since TRUNCATE waits for every writer of the table to end and
         * holds its lock until it commits. */
        fl = *ver;
        fl.commit = 0;
        fl.read = 0;
    } else return -1;
    int cmp = t->floor_set ? cdc__version_cmp(&fl, &t->floor) : 1;
    if (cmp <= 0) return cmp;
    size_t k;
    for (k = 0; k < a->nfloored && a->floored[k] != t; k++) {}
    if (k == a->nfloored) {
        a->floored = cdc__realloc(a->floored, (a->nfloored + 1) * sizeof *a->floored);
        a->old_floor = cdc__realloc(a->old_floor, (a->nfloored + 1) * sizeof *a->old_floor);
        a->floored[k] = t;
        a->old_floor[k] = t->floor_set ? t->floor : (cdc__version){0, 0, 0, 0, 0};
        a->nfloored++;
    }
    t->floor = fl;
    t->floor_set = 1;
    t->meta_dirty = 1;
    /* Rows under the new floor are read again, as stored: the cache keeps
     * its entries, and read_stored does not use one under the floor
     * (cached_valid).  Emptying the cache here instead left it cold after
     * every snapshot: on the benchmark's narrow stream 194,000 of the
     * 740,000 keys applied after the snapshot were read from RocksDB. */
    return 1;
}

/* Chains event i into the group of its (table, key). */
static void group_add(apply_ctx *a, cdc__table *t, size_t i)
{
    const cdc__event *ev = &a->evs[i];
    size_t slot;
    int g = group_find(a, t, ev->key.p, ev->key.len, &slot);
    if (g < 0) {
        a->groups[a->ngroups] = (group){t, ev->key.p, ev->key.len, (int)i};
        a->last_in_group[a->ngroups] = (int)i;
        a->htab[slot] = (int)a->ngroups++;
        return;
    }
    a->sl[a->last_in_group[g]].next = (int)i;
    a->last_in_group[g] = (int)i;
}

/* Turns event i of table t into a dead letter with reason why (malloc'd,
 * taken over). */
static int dead_in_table(apply_ctx *a, cdc__table *t, size_t i, char *why)
{
    cdc__event *ev = &a->evs[i];
    free(ev->reason);
    ev->action = CDC__ACT_DEAD;
    ev->reason = why;
    stat_add(t, CDC__ST_READ, -1); /* take_dead counts it */
    return take_dead(a, i);
}

static int take_record(apply_ctx *a, size_t i)
{
    const cdc_record_t *r = &a->recs[i];
    cdc__event *ev = &a->evs[i];
    slot *s = &a->sl[i];
    cdc__table *t;
    int rc;
    s->next = -1;
    s->partition = r->offset < 0 ? -1 : r->partition;
    if (ev->old_key.len && ev->nunavailable) a->donors = 1;
    a->res->read++;
    switch (ev->action) {
    case CDC__ACT_DEAD:
        return take_dead(a, i);
    case CDC__ACT_TOMBSTONE:
    case CDC__ACT_NOOP:
        pos_note(a, r);
        if ((t = counted_table(a->st, ev->table))) {
            stat_add(t, CDC__ST_READ, 1);
            stat_add(t, ev->action == CDC__ACT_NOOP ? CDC__ST_OTHER : CDC__ST_TOMBSTONES, 1);
        }
        if (ev->action == CDC__ACT_TOMBSTONE) a->res->tombstones++;
        else a->res->other++;
        return 0;
    }
    if ((rc = cdc__table_get(a->st, ev->table ? ev->table : "", 1, &t, a->err))) return rc;
    s->t = t;
    stat_add(t, CDC__ST_READ, 1);
    learn_keycols(t, ev);
    if (ev->action != CDC__ACT_FLOOR && !keycols_match(t, ev)) {
        cdc__buf m = {0};
        cdc__buf_puts(&m, "the key's columns (");
        const char *p = ev->keycols.p, *end = p + ev->keycols.len;
        uint64_t nk = 0, l;
        if (ev->keycols.len && cdc__get_varint(&p, end, &nk)) nk = 0;
        for (uint64_t k = 0; k < nk && !cdc__get_varint(&p, end, &l) && l <= (uint64_t)(end - p); k++, p += l)
            cdc__buf_printf(&m, "%s%.*s", k ? ", " : "", (int)l, p);
        cdc__buf_puts(&m, ", in that order) are not the table's primary key (");
        for (size_t k = 0; k < t->nkey; k++) cdc__buf_printf(&m, "%s%s", k ? ", " : "", t->keycols[k]);
        cdc__buf_puts(&m, "): was the key changed, or does the record belong to another table?");
        cdc__buf_putc(&m, 0);
        return dead_in_table(a, t, i, m.p);
    }
    if (t->stopped) {
        cdc__buf m = {0};
        cdc__buf_printf(&m, "table %s is stopped: %s", t->name, t->stopped);
        cdc__buf_putc(&m, 0);
        return dead_in_table(a, t, i, m.p);
    }
    pos_note(a, r);
    s->ver = assign_version(a, t, r, ev);
    if (ev->action == CDC__ACT_UPSERT && ev->coltypes.len) {
        char *why = cdc__table_check_types(t, &s->ver, &ev->coltypes);
        if (why) { /* this event and every later one of the table: dead letters */
            t->stopped = why;
            t->meta_dirty = 1;
            cdc__log(a->st, CDC_LOG_ERROR, "apply", "table %s stopped: %s", t->name, why);
            return dead_in_table(a, t, i, cdc__strdup(why));
        }
    }
    int raised = raise_floor(a, t, ev, &s->ver);
    if (ev->action != CDC__ACT_FLOOR) {
        group_add(a, t, i);
        return 0;
    }
    /* A truncate is counted like a row event: applied when it raised the
     * floor, a duplicate of the same truncate, or stale under a newer floor
     * (the sum of the counters is the records read, at every batching). */
    if (raised > 0) {
        stat_add(t, CDC__ST_APPLIED, 1);
        a->res->applied++;
        if (ev->ts_ms > 0) stat_max(t, CDC__ST_NEWEST_TS, (uint64_t)ev->ts_ms);
        stat_max(t, CDC__ST_NEWEST_LSN, s->ver.lsn);
    } else if (raised == 0) {
        stat_add(t, CDC__ST_DUPLICATE, 1);
        a->res->duplicate++;
    } else {
        stat_add(t, CDC__ST_STALE, 1);
        a->res->stale++;
    }
    return 0;
}

/* ---- Pass 2: rows a raised floor deletes ---- */

/* Rows that a floor raised by this batch deletes without any event of
 * theirs in the batch are counted now (the floor itself deletes them, no
 * write); keys of the batch are counted by pass 4. */
static void count_floor_deletes(apply_ctx *a)
{
    for (size_t k = 0; k < a->nfloored; k++) {
        cdc__table *t = a->floored[k];
        cdc__scan it;
        cdc__scan_open(a->st, t, NULL, 0, NULL, 0, NULL, 0, &it);
        size_t kl, vl, slot;
        const char *key, *v;
        for (; cdc__scan_row(&it, &key, &kl, &v, &vl); cdc__scan_next(&it)) {
            cdc__value val;
            if (cdc__value_decode(v, vl, &val)) {
                note_change(a, t, key, kl); /* whatever it reads as, not as before */
                continue;
            }
            if (val.flags & CDC__F_DELETED) continue;
            if (cdc__version_cmp(&val.ver, &a->old_floor[k]) < 0) continue; /* already below the old floor */
            if (cdc__version_cmp(&val.ver, &t->floor) >= 0) continue;
            /* the row reads as deleted from now on, even when an event of
             * the batch for it turns out stale (pass 4 writes nothing then) */
            note_change(a, t, key, kl);
            if (group_find(a, t, key, kl, &slot) >= 0) continue;
            stat_add(t, t->floor.kind == CDC__KIND_GAP ? CDC__ST_GAP_DELETES : CDC__ST_DELETES, 1);
            stat_add(t, CDC__ST_LIVE, -1);
            stat_add(t, CDC__ST_DELETED, 1);
        }
        cdc__scan_close(&it);
    }
}

/* ---- Pass 3: the stored versions of the batch's keys ---- */

/* One MultiGet in key order (the grouping table is not used past this). */
/* The caller's interrupt flag, looked at every INTERRUPT_EVERY records or
 * keys (a few milliseconds of work). */
#define INTERRUPT_EVERY 4096
static int interrupted(const apply_ctx *a, size_t i)
{
    return i % INTERRUPT_EVERY == 0 && a->opts->interrupt && *a->opts->interrupt;
}

/* The stored key of group g (read_stored). */
static const char *rkey(const apply_ctx *a, size_t g) { return a->rkeys.p + a->rkoff[g]; }

/* ---- The groups in key order (group_cmp's), sorted fast ----
 *
 * qsort with group_cmp was 4% of the samples of `cdcstore apply` (narrow
 * stream, batches of 10,000; perf, the sort, its comparisons and their
 * memcmp calls: 8% of the apply thread's): a call through a pointer and a
 * memcmp per comparison.  Each group gets a sort key instead: its table's
 * place (tables ranked once per batch in group_cmp's order of tables) and
 * the first 16 bytes of its key big-endian (an integer key's 9 bytes whole),
 * compared inline; only keys equal in those 16 bytes are compared whole.  A
 * merge sort, stable, of the keys with the group's index; the groups are
 * then permuted. */
typedef struct gsort {
    uint64_t rank, k0, k1;
    uint32_t g;
} gsort;

static inline uint64_t load_be(const char *p, size_t n)
{
    unsigned char b[8] = {0};
    memcpy(b, p, n < 8 ? n : 8);
    uint64_t v;
    memcpy(&v, b, 8);
    return __builtin_bswap64(v);
}

static inline int gsort_lt(const gsort *x, const gsort *y, const group *gr)
{
    if (x->rank != y->rank) return x->rank < y->rank;
    if (x->k0 != y->k0) return x->k0 < y->k0;
    if (x->k1 != y->k1) return x->k1 < y->k1;
    return group_cmp(&gr[x->g], &gr[y->g]) < 0;
}

static int table_rank_cmp(const void *a, const void *b)
{
    const cdc__table *x = *(cdc__table *const *)a, *y = *(cdc__table *const *)b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x == y ? 0 : (uintptr_t)x < (uintptr_t)y ? -1 : 1;
}

static void sort_groups(apply_ctx *a)
{
    size_t ng = a->ngroups;
    if (ng < 2) return;
    group *gr = a->groups;
    /* the batch's tables, ranked as group_cmp orders them */
    cdc__table **tabs = cdc__malloc(ng * sizeof *tabs);
    size_t nt = 0;
    for (size_t g = 0; g < ng; g++)
        if (!nt || tabs[nt - 1] != gr[g].t) tabs[nt++] = gr[g].t;
    qsort(tabs, nt, sizeof *tabs, table_rank_cmp);
    size_t u = 0;
    for (size_t i = 0; i < nt; i++)
        if (!u || tabs[u - 1] != tabs[i]) tabs[u++] = tabs[i];
    gsort *k = cdc__malloc(2 * ng * sizeof *k), *tmp = k + ng;
    size_t lo = 0;
    for (size_t g = 0; g < ng; g++) {
        size_t hi = u; /* the table's rank: a binary search in tabs (the last group's, mostly) */
        if (g && gr[g].t != gr[g - 1].t) lo = 0;
        else if (g) hi = lo + 1;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (table_rank_cmp(&tabs[mid], &gr[g].t) <= 0) lo = mid;
            else hi = mid;
        }
        const char *p = gr[g].key;
        size_t n = gr[g].key_len;
        k[g] = (gsort){lo, load_be(p, n), n > 8 ? load_be(p + 8, n - 8) : 0, (uint32_t)g};
    }
    free(tabs);
    /* bottom-up merge sort: runs of 8 by insertion, then merged */
    for (size_t lo = 0; lo < ng; lo += 8) {
        size_t hi = lo + 8 < ng ? lo + 8 : ng;
        for (size_t i = lo + 1; i < hi; i++) {
            gsort x = k[i];
            size_t j = i;
            for (; j > lo && gsort_lt(&x, &k[j - 1], gr); j--) k[j] = k[j - 1];
            k[j] = x;
        }
    }
    gsort *src = k, *dst = tmp;
    for (size_t w = 8; w < ng; w *= 2) {
        for (size_t lo = 0; lo < ng; lo += 2 * w) {
            size_t mid = lo + w < ng ? lo + w : ng, hi = lo + 2 * w < ng ? lo + 2 * w : ng;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) dst[o++] = gsort_lt(&src[j], &src[i], gr) ? src[j++] : src[i++];
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        gsort *t = src;
        src = dst;
        dst = t;
    }
    group *out = cdc__malloc(ng * sizeof *out);
    for (size_t g = 0; g < ng; g++) out[g] = gr[src[g].g];
    memcpy(gr, out, ng * sizeof *gr);
    free(out);
    free(k);
    /* the tests ask for the order to be checked against group_cmp's */
    static int check = -1;
    if (check < 0) check = getenv("CDC_CHECK_SORT") != NULL;
    if (check)
        for (size_t g = 1; g < ng; g++)
            if (group_cmp(&gr[g - 1], &gr[g]) >= 0) abort();
}

/* A tombstone the cache may keep (store/vcache.c): one the purge's
 * compaction filter cannot remove while it is cached.  The filter removes a
 * tombstone below its table's purge horizon, and a row under the floor
 * (store/gc.c, purge_filter_fn); a cached value that a floor or horizon
 * raised since then has passed is read again (read_stored, cached_valid).
 * Before, tombstones were not cached and a raised floor emptied the cache:
 * a re-created key, and every key for a while after a snapshot completed,
 * went to RocksDB's MultiGet.  `cdcstore apply --batch-size 10000` of the
 * benchmark's streams (bench/gen.py --shape S --events 1000000 --keys
 * 100000 --row-width 100 --seed 42), interleaved with the build before,
 * means: narrow 2.00 -> 1.90 s (4 runs), medium 2.77 -> 2.52 s (3 runs),
 * wide 5.68 -> 5.75 s (3 runs, within the noise). */
static int tombstone_cacheable(const cdc__table *t, const cdc__version *v)
{
    if (t->floor_set && cdc__version_cmp(v, &t->floor) < 0) return 0;
    if (t->horizon_set && cdc__version_cmp(v, &t->horizon) < 0) return 0;
    return 1;
}

/* A cached value to be used as it is: one not under its table's floor (a
 * floor raised since it was cached hides it: RocksDB's copy is read, as
 * stored, for the apply to count what the floor did), and, for a tombstone,
 * not below the purge horizon either (the horizon rises between batches, by
 * the purge tick or cdc_store_gc, and the purge may then remove it). */
static int cached_valid(const cdc__table *t, const char *v, size_t vn)
{
    if (!t->horizon_set && !t->floor_set) return 1;
    cdc__value sv;
    if (cdc__value_decode(v, vn, &sv)) return 0;
    if (t->floor_set && cdc__version_cmp(&sv.ver, &t->floor) < 0) return 0;
    return !(sv.flags & CDC__F_DELETED) || tombstone_cacheable(t, &sv.ver);
}

static int read_stored(apply_ctx *a)
{
    size_t ng = a->ngroups;
    sort_groups(a);
    a->vals = cdc__calloc(ng + 1, sizeof *a->vals);
    a->vlens = cdc__calloc(ng + 1, sizeof *a->vlens);
    a->errs = cdc__calloc(ng + 1, sizeof *a->errs);
    a->vhit = cdc__calloc(ng + 1, 1);
    a->rkoff = cdc__malloc((ng + 1) * sizeof *a->rkoff);
    a->rklen = cdc__malloc((ng + 1) * sizeof *a->rklen);
    /* Keys as stored (a prefixed table's carry its id): all in one buffer,
     * pointed into once it has stopped growing.  Keys the cache holds are
     * not read (store/vcache.c). */
    cdc__buf_reset(&a->rkeys);
    for (size_t g = 0; g < ng; g++) {
        a->rkoff[g] = a->rkeys.len;
        cdc__table_key(a->groups[g].t, a->groups[g].key, a->groups[g].key_len, &a->rkeys);
        a->rklen[g] = a->rkeys.len - a->rkoff[g];
    }
    cdc__vcache *vc = a->st->vc;
    a->vh = cdc__malloc((ng + 1) * sizeof *a->vh);
    a->vent = cdc__calloc(ng + 1, sizeof *a->vent);
    for (size_t g = 0; g < ng; g++) a->vh[g] = cdc__vcache_hash(a->groups[g].t->cf, rkey(a, g), a->rklen[g]);
    /* Each lookup is two dependent cache misses (bucket, entry): the
     * bucket is fetched 16 keys ahead, the entry 8 ahead. */
    for (size_t g = 0; g < 16 && g < ng; g++) cdc__vcache_prefetch(vc, a->vh[g], 0);
    for (size_t g = 0; g < 8 && g < ng; g++) cdc__vcache_prefetch(vc, a->vh[g], 1);
    size_t *miss = cdc__malloc((ng + 1) * sizeof *miss), nm = 0;
    for (size_t g = 0; g < ng; g++) {
        if (g + 16 < ng) cdc__vcache_prefetch(vc, a->vh[g + 16], 0);
        if (g + 8 < ng) cdc__vcache_prefetch(vc, a->vh[g + 8], 1);
        cdc__ventry *e = cdc__vcache_find(vc, a->vh[g], a->groups[g].t->cf, rkey(a, g), a->rklen[g]);
        size_t vn = 0;
        const char *v = e ? cdc__vcache_value(e, &vn) : NULL;
        if (e && !cached_valid(a->groups[g].t, v, vn)) {
            /* out of the cache: the value read now takes its place */
            cdc__vcache_del(vc, e, a->vh[g], a->groups[g].t->cf, rkey(a, g), a->rklen[g]);
            e = NULL;
        }
        if (!e) {
            miss[nm++] = g;
            continue;
        }
        a->vent[g] = e;
        a->vlens[g] = vn;
        if (a->donors) {
            /* donor_row may read it after fold_group wrote the key's new
             * value over the entry */
            a->vals[g] = cdc__malloc(vn ? vn : 1);
            memcpy(a->vals[g], v, vn);
            a->vhit[g] = 1;
        } else {
            /* Read by fold_start only, before fold_group writes the entry
             * over (afterwards vals[g] is only tested for NULL).  The copy
             * it saves was a malloc, a memcpy and a free per key: without
             * it, interleaved runs of the benchmark's streams (as at
             * tombstone_cacheable) took 1.93 -> 1.90 s narrow (4 runs),
             * 2.58 -> 2.47 s medium (3), 5.64 -> 5.38 s wide (3). */
            a->vals[g] = (char *)v;
            a->vhit[g] = 2;
        }
    }
    const char **keys = cdc__malloc((nm + 1) * sizeof *keys);
    size_t *klens = cdc__malloc((nm + 1) * sizeof *klens);
    const rocksdb_column_family_handle_t **cfs = cdc__malloc((nm + 1) * sizeof *cfs);
    char **vals = cdc__calloc(nm + 1, sizeof *vals), **errs = cdc__calloc(nm + 1, sizeof *errs);
    size_t *vlens = cdc__calloc(nm + 1, sizeof *vlens);
    for (size_t i = 0; i < nm; i++) {
        keys[i] = rkey(a, miss[i]);
        klens[i] = a->rklen[miss[i]];
        cfs[i] = a->groups[miss[i]].t->cf;
    }
    int rc = 0;
    for (size_t i = 0; i < nm && !rc; i += INTERRUPT_EVERY) {
        size_t m = nm - i < INTERRUPT_EVERY ? nm - i : INTERRUPT_EVERY;
        if (interrupted(a, i)) rc = -EINTR;
        else rocksdb_multi_get_cf(a->st->db, a->st->ro, cfs + i, m, keys + i, klens + i, vals + i, vlens + i,
                                  errs + i);
    }
    for (size_t i = 0; i < nm; i++) {
        a->vals[miss[i]] = vals[i];
        a->vlens[miss[i]] = vlens[i];
        a->errs[miss[i]] = errs[i];
    }
    free(miss);
    free(keys);
    free(klens);
    free(cfs);
    free(vals);
    free(vlens);
    free(errs);
    return rc;
}

/* ---- Pass 4: fold each key's events from its stored state ---- */

/* Puts the group's events in version order into a->order (insertion sort,
 * stable for equal versions); returns how many. */
static size_t sort_group(apply_ctx *a, const group *gr)
{
    size_t m = 0;
    for (int e = gr->first; e >= 0; e = a->sl[e].next) {
        size_t j = m++;
        while (j > 0 && cdc__version_cmp(&a->sl[a->order[j - 1]].ver, &a->sl[e].ver) > 0) {
            a->order[j] = a->order[j - 1];
            j--;
        }
        a->order[j] = e;
    }
    return m;
}

/* What the fold starts from: the stored value under the table's floor. */
typedef struct start_state {
    int state;           /* 0 none, 1 live, 2 deleted */
    int exists;          /* a stored or implied state (tombstone, floor, horizon) */
    int floor_slot;      /* the counter a floor of this batch moved for this key, -1 */
    cdc__version ver;
    int raw;             /* a stored value was read (raw_ver: its version, before any floor) */
    cdc__version raw_ver;
} start_state;

static int fold_start(apply_ctx *a, size_t g, start_state *ss)
{
    const group *gr = &a->groups[g];
    cdc__table *t = gr->t;
    fold *f = &a->f;
    a->keep_row = 0;
    memset(&f->ver, 0, sizeof f->ver);
    f->exists = 0;
    f->flags = 0;
    f->ts_ms = 0;
    f->partition = -1;
    fold_reset(f, t->ncols); /* the fold is reused across tables: size it to this one */
    ss->state = 0;
    ss->floor_slot = -1;
    ss->raw = 0;
    if (a->vals[g]) {
        cdc__value sv;
        if (cdc__value_decode(a->vals[g], a->vlens[g], &sv) || fold_load_stored(f, t, sv.row, sv.row_len))
            return cdc__err(a->err, CDC_ECORRUPT, "table %s: stored value of a key does not decode", t->name);
        int raw_live = !(sv.flags & CDC__F_DELETED);
        ss->raw = 1;
        ss->raw_ver = sv.ver; /* before the floor */
        cdc__apply_floor(t, &sv);
        /* A live row read from RocksDB is kept for the next batches, and a
         * tombstone the purge cannot remove; a row under the floor is not
         * (store/vcache.c). */
        if (!a->vhit[g] && (raw_live ? !(sv.flags & CDC__F_DELETED) : tombstone_cacheable(t, &ss->raw_ver)))
            a->vent[g] = cdc__vcache_put(a->st->vc, NULL, a->vh[g], t->cf, rkey(a, g), a->rklen[g], a->vals[g],
                                         a->vlens[g]);
        if (raw_live && (sv.flags & CDC__F_DELETED)) {
            /* A floor raised by this batch deletes the stored row: count it
             * here, as pass 2 skipped keys of the batch; undone when an
             * event of the batch brings the row back above the floor (a row
             * the new snapshot contains). */
            for (size_t k = 0; k < a->nfloored; k++)
                if (a->floored[k] == t && cdc__version_cmp(&ss->raw_ver, &a->old_floor[k]) >= 0) {
                    ss->floor_slot = t->floor.kind == CDC__KIND_GAP ? CDC__ST_GAP_DELETES : CDC__ST_DELETES;
                    stat_add(t, ss->floor_slot, 1);
                    stat_add(t, CDC__ST_LIVE, -1);
                    stat_add(t, CDC__ST_DELETED, 1);
                }
        }
        f->exists = 1;
        f->flags = sv.flags;
        f->ver = sv.ver;
        f->ts_ms = sv.ts_ms;
        f->partition = sv.partition;
        ss->state = (sv.flags & CDC__F_DELETED) ? 2 : 1;
    } else if (cdc__absent_version(t, &f->ver)) {
        /* No row: under a floor or a purge horizon the key is known absent
         * up to it. */
        f->exists = 1;
        f->flags = CDC__F_DELETED;
    }
    ss->ver = f->ver;
    ss->exists = f->exists;
    return 0;
}

/* Counters of the events that do not change the row: the newest event
 * against the stored state, the others superseded within the batch.
 * Returns 1 when the newest event is not newer than the stored state. */
static int count_not_applied(apply_ctx *a, cdc__table *t, size_t m, const start_state *ss)
{
    const slot *top = &a->sl[a->order[m - 1]];
    int top_del = a->evs[a->order[m - 1]].action == CDC__ACT_DELETE;
    for (size_t j = 0; j + 1 < m; j++) {
        const slot *o = &a->sl[a->order[j]];
        if (cdc__version_cmp(&o->ver, &top->ver) == 0) {
            stat_add(t, CDC__ST_DUPLICATE, 1);
            a->res->duplicate++;
        } else {
            stat_add(t, CDC__ST_STALE, 1);
            a->res->stale++;
            if (top_del && a->evs[a->order[j]].action != CDC__ACT_DELETE) stat_add(t, CDC__ST_RESURRECTIONS, 1);
        }
    }
    int cmp = ss->exists ? cdc__version_cmp(&top->ver, &ss->ver) : 1;
    if (cmp > 0) return 0;
    if (cmp == 0) {
        stat_add(t, CDC__ST_DUPLICATE, 1);
        a->res->duplicate++;
    } else {
        stat_add(t, CDC__ST_STALE, 1);
        a->res->stale++;
        if ((a->f.flags & CDC__F_DELETED) && !top_del) stat_add(t, CDC__ST_RESURRECTIONS, 1);
    }
    return 1;
}

/* A tombstone's columns (see fold_events): the key, read from the stored
 * key itself (a delete's before image may be null, under REPLICA IDENTITY
 * NOTHING), every other column absent, unless the row moved to another key
 * (a->keep_row: its columns stay for the new key, donor_row). */
static int tombstone_key(apply_ctx *a, cdc__table *t, const group *gr)
{
    fold *f = &a->f;
    if (!a->keep_row)
        for (size_t c = 0; c < f->ncols; c++) f->cols[c].set = 0;
    const unsigned char *p = (const unsigned char *)gr->key, *end = p + gr->key_len;
    size_t *off = cdc__malloc((2 * t->nkey + 1) * sizeof *off);
    cdc__buf_reset(&a->keytext);
    int rc = 0;
    for (size_t k = 0; k < t->nkey && !rc; k++) {
        int64_t v;
        int tag = cdc__key_read(&p, end, &v, &a->elem);
        off[2 * k] = a->keytext.len;
        if (tag == CDC__KEY_INT) cdc__buf_put_i64(&a->keytext, v);
        else if (tag == CDC__KEY_TEXT) cdc__buf_put(&a->keytext, a->elem.p, a->elem.len);
        else rc = CDC_ECORRUPT;
        off[2 * k + 1] = a->keytext.len - off[2 * k];
    }
    for (size_t k = 0; k < t->nkey && !rc; k++) {
        size_t idx = cdc__table_col(t, t->keycols[k], strlen(t->keycols[k]));
        fold_grow(f, t->ncols);
        f->cols[idx] = (colval){CDC__V_TEXT, a->keytext.p + off[2 * k], off[2 * k + 1], 1};
    }
    free(off);
    return rc;
}

/* Room for n flags in a->present (note_columns, note_skipped_columns). */
static void present_room(apply_ctx *a, size_t n)
{
    if (a->prescap >= n) return;
    a->prescap = n * 2;
    a->present = cdc__realloc(a->present, a->prescap);
}

/* Columns a change brought to a table that had columns (n0 of them before
 * it) were added later: rows written before read them as unknown. */
static void mark_added_later(cdc__table *t, size_t n0)
{
    for (size_t c = n0; n0 && c < t->ncols; c++) t->colmeta[c].added_later = 1;
}

/* The column set an applied upsert carried, for the table's column history
 * (store/store.c, "Column history"): after fold_take_row, exactly the
 * columns of the event row are set in the fold. */
static int note_columns(apply_ctx *a, cdc__table *t, const cdc__event *ev, const cdc__version *ver)
{
    const fold *f = &a->f;
    present_room(a, t->ncols);
    for (size_t i = 0; i < t->ncols; i++) a->present[i] = i < f->ncols && f->cols[i].set;
    return cdc__table_note_columns(t, ver, a->present, &ev->defaults);
}

/* The column history of a change the fold skips (one followed by a delete
 * in the same batch): its columns are noted as if it had been folded, since
 * in a batch of its own it would have been, and the columns a table has
 * must not depend on where the stream was cut (a table whose every row was
 * deleted in the batch that created it lost its other columns from the
 * export's header). */
static int note_skipped_columns(apply_ctx *a, cdc__table *t, const cdc__event *ev, const cdc__version *ver)
{
    const char *p = ev->row.p, *end = ev->row.p + ev->row.len;
    uint64_t n = 0;
    size_t n0 = t->ncols;
    if (ev->row.len && cdc__get_varint(&p, end, &n)) return CDC_ECORRUPT;
    present_room(a, t->ncols + n);
    if (t->ncols + n) memset(a->present, 0, t->ncols + n);
    for (uint64_t i = 0; i < n; i++) {
        const char *name, *v;
        size_t nl, vl;
        int tag;
        if (cdc__evrow_next(&p, end, &name, &nl, &tag, &v, &vl)) return CDC_ECORRUPT;
        a->present[cdc__table_col(t, name, nl)] = 1;
    }
    mark_added_later(t, n0);
    return cdc__table_note_columns(t, ver, a->present, &ev->defaults);
}

/* The column history of upserts that a floor raised by this same batch
 * (a truncate, a completed snapshot) made stale: in a batch cut before the
 * floor they were applied, and their columns noted.  Noted here too, so
 * that the columns a table has do not depend on where the stream was cut (a
 * table created and truncated in one batch had no column at all: an empty
 * CSV header, and a Parquet export refused). */
static int note_floored_columns(apply_ctx *a, cdc__table *t, size_t m, const start_state *ss)
{
    size_t k;
    for (k = 0; k < a->nfloored && a->floored[k] != t; k++) {}
    if (k == a->nfloored) return 0;
    cdc__version below = t->horizon_set ? cdc__below_horizon(t) : (cdc__version){0};
    for (size_t j = 0; j < m; j++) {
        const cdc__event *ev = &a->evs[a->order[j]];
        const cdc__version *v = &a->sl[a->order[j]].ver;
        if (ev->action != CDC__ACT_UPSERT || cdc__version_cmp(v, &a->old_floor[k]) <= 0 ||
            (ss->raw && cdc__version_cmp(v, &ss->raw_ver) <= 0) ||
            (!ss->raw && t->horizon_set && cdc__version_cmp(v, &below) <= 0)) /* stale by the purge too */
            continue;
        if (note_skipped_columns(a, t, ev, v))
            return cdc__err(a->err, CDC_ECORRUPT, "table %s: an event row does not decode", t->name);
    }
    return 0;
}

/* ---- A row whose primary key changed ----
 *
 * Debezium sends a primary-key change as a delete of the old key (header
 * __debezium.newkey), a tombstone and a create of the new key (header
 * __debezium.oldkey), delete and create at one version (one UPDATE), and
 * the create carries the unchanged-TOAST placeholder for each TOASTed
 * column the UPDATE left alone: the new key has no stored value to keep
 * (measured on the test stack: UPDATE ... SET id = 10 WHERE id = 1 of a row
 * with a 10,000-byte text gives {"id":10,...,"big":
 * "__debezium_unavailable_value"}).  The value is the old key's row as of
 * the change, known for certain only once the change's delete is known: a
 * key's events come in order in its partition, so its events before the
 * delete are in the batch of the delete or before it.  So:
 *  - the delete of a moved key keeps the row in its tombstone (keep_row;
 *    a tombstone otherwise holds the key alone), for a create in a later
 *    batch; views show no column of a tombstone;
 *  - the create's placeholders take the old key's values (donor_row) when
 *    the old key's stored value is that tombstone (the change's version),
 *    or when the change's delete is in the create's batch: then the old
 *    key's state before it, its stored value with its events of the batch
 *    older than the change folded on top (a create of the old key by an
 *    earlier change in the batch, K1 -> K2 -> K3, followed back the same
 *    way, up to DONOR_DEPTH changes, each followed once).
 * A create applied before its delete (the two keys in different
 * partitions, the create's consumed first) would see a stored row that may
 * miss the old key's last updates, still unread in its partition: it takes
 * nothing, as a create without the header, a tombstone purged since, or
 * none: the placeholder stays unresolved, counted (placeholders_unresolved),
 * and reads NULL until a change writes the column. */

/* Group g's events in version order (record order among equal versions),
 * sorted once per batch for donor_row. */
static int ver_cmp_r(const void *x, const void *y, void *arg)
{
    const slot *sl = arg;
    int i = *(const int *)x, j = *(const int *)y;
    int c = cdc__version_cmp(&sl[i].ver, &sl[j].ver);
    return c ? c : (i > j) - (i < j);
}

static const int *group_sorted(apply_ctx *a, size_t g, size_t *n)
{
    if (!a->gsorted) {
        a->gsorted = cdc__calloc(a->ngroups + 1, sizeof *a->gsorted);
        a->ngsorted = cdc__calloc(a->ngroups + 1, sizeof *a->ngsorted);
    }
    if (!a->gsorted[g]) {
        size_t m = 0, cap = 8;
        int *l = cdc__malloc(cap * sizeof *l);
        for (int e = a->groups[g].first; e >= 0; e = a->sl[e].next) {
            if (m == cap) l = cdc__realloc(l, (cap *= 2) * sizeof *l);
            l[m++] = e;
        }
        qsort_r(l, m, sizeof *l, ver_cmp_r, a->sl);
        a->gsorted[g] = l;
        a->ngsorted[g] = m;
    }
    *n = a->ngsorted[g];
    return a->gsorted[g];
}

/* The old key's row, as of the change at version ver, for event ev (an
 * upsert with placeholders and ev->old_key) of table t, in a->donor[depth];
 * NULL when it is not known for certain (above).  The old key's state is
 * started as fold_start starts a key's (its stored value under the table's
 * floor, or the key known absent up to the floor or the purge horizon) and
 * its events of the batch older than the change are folded on it as
 * fold_events folds them, from the last delete on. */
static const fold *donor_row(apply_ctx *a, cdc__table *t, const cdc__event *ev, const cdc__version *ver,
                             int depth)
{
    if (a->opts->interrupt && *a->opts->interrupt) return NULL; /* the batch is given up */
    if ((size_t)depth >= a->ndonor) {
        a->donor = cdc__realloc(a->donor, (size_t)(depth + 1) * sizeof *a->donor);
        while (a->ndonor <= (size_t)depth) a->donor[a->ndonor++] = cdc__calloc(1, sizeof(fold));
    }
    fold *d = a->donor[depth];
    fold_reset(d, t->ncols);
    group probe = {.t = t, .key = ev->old_key.p, .key_len = ev->old_key.len};
    const group *og = bsearch(&probe, a->groups, a->ngroups, sizeof *a->groups, group_cmp);
    const char *v = NULL;
    size_t vn = 0;
    if (og) {
        size_t g = (size_t)(og - a->groups);
        v = a->vals[g], vn = a->vlens[g]; /* as stored before this batch */
    } else {
        cdc__buf k = {0};
        cdc__table_key(t, ev->old_key.p, ev->old_key.len, &k);
        char *e = NULL;
        v = rocksdb_get_cf(a->st->db, a->st->ro, t->cf, k.p, k.len, &vn, &e);
        cdc__buf_free(&k);
        free(e); /* a failed read gives no donor, like an absent row */
        if (v) { /* kept to the batch's end: folds and a->created point into it */
            a->donor_vals = cdc__realloc(a->donor_vals, (a->ndonor_vals + 1) * sizeof *a->donor_vals);
            a->donor_vals[a->ndonor_vals++] = (char *)v;
        }
    }
    /* the start state, as fold_start's */
    int exists = 0, live = 0;
    cdc__version sver = {0};
    cdc__value sv;
    if (v) {
        if (cdc__value_decode(v, vn, &sv)) return NULL;
        int flags = sv.flags;
        cdc__apply_floor(t, &sv);
        exists = 1, sver = sv.ver, live = !(sv.flags & CDC__F_DELETED);
        /* the change's own tombstone (stored by an earlier batch): the row */
        if ((flags & CDC__F_DELETED) && sv.flags == flags && !cdc__version_cmp(&sv.ver, ver))
            return fold_load_stored(d, t, sv.row, sv.row_len) ? NULL : d;
        if (live && fold_load_stored(d, t, sv.row, sv.row_len)) return NULL;
    } else {
        exists = cdc__absent_version(t, &sver);
    }
    if (!og) return NULL;
    /* the change's delete in this batch, and the old key's events before it */
    size_t n, p = 0;
    const int *l = group_sorted(a, (size_t)(og - a->groups), &n);
    for (size_t lo = 0, hi = n; lo < hi;) { /* p: the first at or after the change */
        size_t mid = (lo + hi) / 2;
        if (cdc__version_cmp(&a->sl[l[mid]].ver, ver) < 0) lo = p = mid + 1;
        else hi = mid;
    }
    int delete_here = 0;
    for (size_t j = p; j < n && !cdc__version_cmp(&a->sl[l[j]].ver, ver); j++)
        if (a->evs[l[j]].action == CDC__ACT_DELETE && a->evs[l[j]].key_moved) delete_here = 1;
    if (!delete_here) return NULL;
    /* from the last delete before it that the state does not hold already */
    size_t from = 0;
    for (size_t j = p; j > 0; j--) {
        if (exists && cdc__version_cmp(&a->sl[l[j - 1]].ver, &sver) <= 0) {
            from = j;
            break;
        }
        if (a->evs[l[j - 1]].action == CDC__ACT_DELETE) {
            from = j;
            live = 0;
            fold_reset(d, t->ncols);
            break;
        }
    }
    int bad = 0;
    for (size_t j = from; j < p && !bad; j++) {
        int e = l[j];
        const cdc__event *oe = &a->evs[e];
        uint64_t k0 = 0, u0 = 0;
        if (live || !oe->old_key.len || !oe->nunavailable) {
            bad = fold_take_row(d, t, &oe->row, live, &k0, &u0, NULL);
        } else {
            /* a create by an earlier key change, after a gone row: followed
             * back once, and what it made kept for every later use */
            if (!a->created) {
                a->created = cdc__calloc(a->n + 1, sizeof *a->created);
                a->ncreated = cdc__calloc(a->n + 1, sizeof *a->ncreated);
            }
            if (!a->created[e]) {
                const fold *back = depth + 1 < DONOR_DEPTH ? donor_row(a, t, oe, &a->sl[e].ver, depth + 1) : NULL;
                if ((bad = fold_take_row(d, t, &oe->row, 0, &k0, &u0, back))) break;
                a->created[e] = cdc__malloc((d->ncols + 1) * sizeof *d->cols);
                memcpy(a->created[e], d->cols, d->ncols * sizeof *d->cols);
                a->ncreated[e] = d->ncols;
            } else {
                fold_reset(d, a->ncreated[e]);
                memcpy(d->cols, a->created[e], a->ncreated[e] * sizeof *d->cols);
            }
        }
        live = 1;
    }
    return live && !bad ? d : NULL;
}

/* Folds every event newer than the state, in version order.  A change
 * followed by a delete in the same batch is skipped (its columns noted).
 *
 * What a tombstone holds: the key columns and the delete's version, every
 * other column NULL (but for a row that moved to another key, above: its
 * columns stay for the new key, and read NULL too; a key's events come in
 * order in its partition, so they are the row as of the change, batches
 * aside).  The stored state must be a function of the events, never of
 * where a stream was cut into batches; the columns of the row a
 * delete replaced are not (whether the last update before the delete was
 * stored before the delete arrived depends on the batch boundaries and on
 * late delivery, as in the reference MERGE, where a deleted row keeps what
 * its batch found stored), and the delete's before image carries data only
 * under REPLICA IDENTITY FULL (under DEFAULT its other columns are nulls or
 * type defaults), which the event does not say. */
static int fold_events(apply_ctx *a, cdc__table *t, size_t m, uint64_t *kept, uint64_t *unresolved)
{
    fold *f = &a->f;
    size_t last_delete = m;
    for (size_t j = m; j > 0; j--)
        if (a->evs[a->order[j - 1]].action == CDC__ACT_DELETE) {
            last_delete = j - 1;
            break;
        }
    /* a moved key's delete keeps the row as it was: its changes before the
     * delete are folded, not skipped */
    int moved = last_delete < m && a->evs[a->order[last_delete]].key_moved;
    for (size_t j = 0; j < m; j++) {
        const slot *s = &a->sl[a->order[j]];
        const cdc__event *ev = &a->evs[a->order[j]];
        int del = ev->action == CDC__ACT_DELETE;
        if (f->exists && cdc__version_cmp(&s->ver, &f->ver) <= 0) continue;
        if (last_delete < m && j < last_delete && !del && !moved) {
            if (note_skipped_columns(a, t, ev, &s->ver)) return CDC_ECORRUPT;
            continue;
        }
        int live = f->exists && !(f->flags & CDC__F_DELETED);
        if (del) {
            f->flags = CDC__F_DELETED; /* columns: tombstone_key, after the fold */
            a->keep_row = ev->key_moved && live;
        } else {
            size_t n0 = t->ncols;
            const fold *donor = ev->old_key.len && ev->nunavailable ? donor_row(a, t, ev, &s->ver, 0) : NULL;
            a->keep_row = 0;
            if (fold_take_row(f, t, &ev->row, live, kept, unresolved, donor)) return CDC_ECORRUPT;
            mark_added_later(t, n0);
            if (note_columns(a, t, ev, &s->ver)) return CDC_ECORRUPT;
            f->flags = ev->snapshot != CDC__SNAP_NONE ? CDC__F_SNAPSHOT : 0;
        }
        f->exists = 1;
        f->ver = s->ver;
        f->ts_ms = ev->ts_ms;
        if (s->partition >= 0) f->partition = s->partition; /* the record's, when it has an offset */
    }
    return 0;
}

/* Counters of an applied key: the change, and its move between live and
 * deleted. */
static void count_applied(apply_ctx *a, size_t g, size_t m, const start_state *ss, uint64_t kept,
                          uint64_t unresolved)
{
    cdc__table *t = a->groups[g].t;
    int stored = ss->state;
    stat_add(t, CDC__ST_APPLIED, 1);
    a->res->applied++;
    if (a->f.ts_ms > 0) stat_max(t, CDC__ST_NEWEST_TS, (uint64_t)a->f.ts_ms);
    stat_max(t, CDC__ST_NEWEST_LSN, a->f.ver.lsn);
    if (a->evs[a->order[m - 1]].action == CDC__ACT_DELETE) stat_add(t, CDC__ST_DELETES, 1);
    if (kept) stat_add(t, CDC__ST_PLACEHOLDERS, (int64_t)kept);
    if (unresolved) stat_add(t, CDC__ST_UNRESOLVED, (int64_t)unresolved);
    int now = (a->f.flags & CDC__F_DELETED) ? 2 : 1;
    if (ss->floor_slot >= 0 && now == 1) stat_add(t, ss->floor_slot, -1);
    if (stored == 0 && ss->exists) stored = 2; /* absent under a floor */
    if (stored != now) {
        if (stored == 1) stat_add(t, CDC__ST_LIVE, -1);
        if (stored == 2 && a->vals[g]) stat_add(t, CDC__ST_DELETED, -1);
        if (now == 1) stat_add(t, CDC__ST_LIVE, 1);
        else stat_add(t, CDC__ST_DELETED, 1);
    } else if (stored == 2 && !a->vals[g]) {
        stat_add(t, CDC__ST_DELETED, 1); /* a tombstone is now stored for it */
    }
}

/* A key seen on two Kafka partitions: its stored value's and an event's, or
 * two events' of the batch.  Debezium keys each record and the producer
 * hashes the key to a partition, so a key stays on one partition, and only
 * there is its order kept: a key that moved means the topic was
 * repartitioned (or the producer's partitioner changed), and its events on
 * the two partitions can arrive in any order.  The version guard still
 * applies the newest by version, which orders streamed changes of a key
 * (see the top), so nothing is misapplied by the move itself; but a
 * consumer that reads the partitions at different speeds may apply a
 * delete's late, older update only when its tombstone is gone, and the
 * operator must know the per-key order the pipeline promises no longer
 * holds.  Counted once per key and batch (repartitioned_keys), and logged
 * as a warning naming the key. */
static void check_partition(apply_ctx *a, size_t g, size_t m)
{
    int32_t first = a->f.partition, other = -1;
    for (size_t j = 0; j < m && other < 0; j++) {
        int32_t p = a->sl[a->order[j]].partition;
        if (p < 0) continue;
        if (first < 0) first = p;
        else if (p != first) other = p;
    }
    if (other < 0) return;
    const group *gr = &a->groups[g];
    cdc__table *t = gr->t;
    /* logged for the first key of a session, then at every 1,000th: a
     * repartitioned topic moves many keys, and each would repeat it */
    if (!t->repartition_warned || t->stats[CDC__ST_REPARTITIONED] >= t->repartition_warned + 1000) {
        cdc__buf k = {0};
        if (cdc__key_to_json(gr->key, gr->key_len, (const char *const *)t->keycols, t->nkey, &k))
            cdc__buf_puts(&k, "(a key that does not decode)");
        cdc__buf_putc(&k, 0);
        cdc__log(a->st, CDC_LOG_WARN, "apply",
                 "table %s: key %.200s arrived on partition %d after partition %d: the topic was repartitioned "
                 "or its producer's partitioner changed, so the per-key order of its events no longer holds "
                 "(counted in repartitioned_keys); re-read the table (a new snapshot) into a fresh replica, "
                 "or give the topic back its partition count",
                 t->name, k.p, (int)other, (int)first);
        cdc__buf_free(&k);
        t->repartition_warned = t->stats[CDC__ST_REPARTITIONED] + 1;
    }
    stat_add(t, CDC__ST_REPARTITIONED, 1);
}

static int fold_group(apply_ctx *a, size_t g)
{
    const group *gr = &a->groups[g];
    cdc__table *t = gr->t;
    start_state ss = {0};
    uint64_t kept = 0, unresolved = 0;
    if (a->errs[g]) return cdc__err(a->err, CDC_EIO, "table %s: read failed: %s", t->name, a->errs[g]);
    size_t m = sort_group(a, gr);
    if (!m) return 0;
    int rc = fold_start(a, g, &ss);
    if (rc) return rc;
    check_partition(a, g, m);
    if (count_not_applied(a, t, m, &ss)) return note_floored_columns(a, t, m, &ss);
    if (fold_events(a, t, m, &kept, &unresolved))
        return cdc__err(a->err, CDC_ECORRUPT, "table %s: an event row does not decode", t->name);
    if ((a->f.flags & CDC__F_DELETED) && tombstone_key(a, t, gr))
        return cdc__err(a->err, CDC_ECORRUPT, "table %s: a stored key does not decode", t->name);
    count_applied(a, g, m, &ss, kept, unresolved);
    cdc__buf_reset(&a->rowbuf);
    fold_encode_row(&a->f, &a->rowbuf);
    cdc__buf_reset(&a->out);
    cdc__value_encode(&a->out, a->f.flags, &a->f.ver, a->f.ts_ms, a->f.partition, a->rowbuf.p, a->rowbuf.len);
    rocksdb_writebatch_put_cf(a->wb, t->cf, rkey(a, g), a->rklen[g], a->out.p, a->out.len);
    a->st->rows_puts++;
    a->st->rows_put_bytes += a->rklen[g] + a->out.len;
    if ((a->f.flags & CDC__F_DELETED) && !tombstone_cacheable(t, &a->f.ver))
        cdc__vcache_del(a->st->vc, a->vent[g], a->vh[g], t->cf, rkey(a, g), a->rklen[g]);
    else cdc__vcache_put(a->st->vc, a->vent[g], a->vh[g], t->cf, rkey(a, g), a->rklen[g], a->out.p, a->out.len);
    note_change(a, t, gr->key, gr->key_len);
    return 0;
}

/* The groups are folded in key order, and their events lie in record
 * order: each group's first event, its slot and its row bytes were a cache
 * miss each (perf annotate of cdc__store_apply_events on the narrow stream:
 * the first reads of the event, of its row's bytes and of its record were
 * 72% of the function's own samples).  The event and slot of the group 8
 * ahead are fetched, and the row bytes, the stored value and the cache
 * entry of the group 4 ahead (their addresses are in lines fetched 4 groups
 * before).  A group's later events (a key changed more than once in the
 * batch) are not.  The function's own samples fell from 7.4% to 2.5% of
 * the run's and cdc__vcache_put's from 2.2% to 0.4%; `cdcstore apply
 * --batch-size 10000` of the benchmark's streams (bench/gen.py --shape S
 * --events 1000000 --keys 100000 --row-width 100 --seed 42), interleaved
 * with the build before, means: narrow 2.17 -> 2.02 s (4 runs), medium
 * 2.90 -> 2.74 s (3 runs), wide 5.83 -> 5.49 s (2 runs).  Distances of 16
 * and 8 groups measured the same. */
static inline void fold_prefetch(const apply_ctx *a, size_t g)
{
    if (g + 8 < a->ngroups) {
        int e = a->groups[g + 8].first;
        const char *p = (const char *)&a->evs[e];
        for (size_t o = 0; o < sizeof(cdc__event); o += 64) __builtin_prefetch(p + o);
        __builtin_prefetch(&a->sl[e]);
    }
    if (g + 4 < a->ngroups) {
        const cdc__event *ev = &a->evs[a->groups[g + 4].first];
        if (ev->row.p) __builtin_prefetch(ev->row.p);
        if (a->vals[g + 4]) __builtin_prefetch(a->vals[g + 4]);
        /* the cache's entry the new value is written over, and its bucket,
         * where a new entry goes and from which a deleted one is unlinked
         * (cdc__vcache_put, cdc__vcache_del) */
        if (a->vent[g + 4]) __builtin_prefetch(a->vent[g + 4], 1);
        cdc__vcache_prefetch(a->st->vc, a->vh[g + 4], 0);
    }
}

/* ---- Pass 5: positions, metadata and counters, and the one write ---- */

static void write_positions(apply_ctx *a)
{
    cdc_store_t *st = a->st;
    for (size_t i = 0; i < a->npu; i++) {
        const pos_upd *u = &a->pu[i];
        int found;
        size_t k = cdc__pos_find(st, u->topic, u->partition, &found);
        if (found && u->offset <= st->pos[k].offset) continue;
        /* The fingerprint of the record at the position lets a consumer
         * tell, when it starts again, that the topic holds the same record
         * there, and not a new topic's of the same name (ingest/kafka.c,
         * verify_position).  A record read from a file has none: kcat's
         * lines need not hold the broker's bytes exactly. */
        const cdc_record_t *r = u->rec;
        uint64_t fp = r->source ? 0 : cdc_record_fingerprint(r->key, r->key_len, r->value, r->value_len);
        if (found) st->pos[k].offset = u->offset, st->pos[k].fp = fp;
        else cdc__pos_insert(st, k, cdc__strdup(u->topic), u->partition, u->offset, fp);
        cdc__buf key = {0}, v = {0};
        cdc__meta_key_pos(&key, u->topic, u->partition);
        cdc__buf_put_varint(&v, (uint64_t)(u->offset + 1));
        if (fp) cdc__buf_put_u64be(&v, fp);
        rocksdb_writebatch_put_cf(a->wb, st->meta_cf, key.p, key.len, v.p, v.len);
        cdc__buf_free(&key);
        cdc__buf_free(&v);
    }
}

static int commit(apply_ctx *a)
{
    cdc_store_t *st = a->st;
    char *e = NULL;
    write_positions(a);
    journal_flush(a);
    cdc__changes_commit(st, a->wb, a->stamp);
    for (size_t i = 0; i < st->ntables; i++) cdc__table_flush(st, st->tables[i], a->wb);
    if (a->opts->writing) *a->opts->writing = 1;
    rocksdb_write(st->db, a->opts->sync ? st->wo_sync : st->wo, a->wb, &e);
    if (a->opts->writing) *a->opts->writing = 0;
    if (!e) {
        cdc__size_rows_buffer(st);
        return 0;
    }
    st->broken = 1;
    int rc = cdc__err(a->err, CDC_EIO, "%s: write failed: %s", st->dir, e);
    free(e);
    return rc;
}

/* Tells the caller which tables changed (the applied records' row events).
 * A snapshot read is given ts_ms 0: its source ts_ms is when the snapshot
 * ran, not when the row changed, so it has no end-to-end latency (counted,
 * it put the snapshot's duration into the percentiles). */
static void notify(const apply_ctx *a)
{
    if (!a->opts->on_change) return;
    for (size_t i = 0; i < a->taken; i++) {
        const cdc__event *ev = &a->evs[i];
        if ((ev->action == CDC__ACT_UPSERT || ev->action == CDC__ACT_DELETE) && ev->table)
            a->opts->on_change(a->opts->on_change_opaque, ev->table,
                               ev->snapshot == CDC__SNAP_NONE ? ev->ts_ms : 0);
    }
}

/* ---- The apply ---- */

/* The write batch is kept from one apply to the next, emptied: a new one
 * grows its buffer by doubling, copying what it holds at each step, and
 * jemalloc hands a buffer of a megabyte or more back to the kernel when it
 * is freed, so every batch faulted its pages in again.  On the Kafka
 * backlog of bench/backlog.sh (the medium stream) the appends and their
 * page faults were about 3% of the applying thread's samples (perf record
 * --call-graph dwarf: std::string appends under WriteBatch::Put, faults
 * under them).  Interleaved `cdcstore apply --batch-size 10000` of that
 * stream, 3 runs each: 2.88 s before, 2.78 s after (the noise of this
 * machine is about as large); narrow rows' batches are too small to show
 * it.  A batch that wrote more than WB_KEEP_MAX bytes is not kept, so one
 * large batch does not hold its memory for the rest of the run. */
#define WB_KEEP_MAX ((size_t)32 << 20)

static void ctx_init(apply_ctx *a, size_t n)
{
    a->hcap = 16;
    while (a->hcap < 2 * n) a->hcap <<= 1;
    a->sl = cdc__calloc(n, sizeof *a->sl);
    a->groups = cdc__calloc(n, sizeof *a->groups);
    a->htab = cdc__malloc(a->hcap * sizeof *a->htab);
    memset(a->htab, 0xff, a->hcap * sizeof *a->htab);
    a->last_in_group = cdc__calloc(n, sizeof *a->last_in_group);
    a->order = cdc__malloc((n + 1) * sizeof *a->order);
    a->wb = a->st->apply_wb ? a->st->apply_wb : rocksdb_writebatch_create();
    a->st->apply_wb = NULL;
}

static void ctx_free(apply_ctx *a)
{
    for (size_t g = 0; a->vals && g < a->ngroups; g++) {
        if (a->vals[g] && a->vhit[g] == 1) free(a->vals[g]);
        else if (a->vals[g] && !a->vhit[g]) rocksdb_free(a->vals[g]); /* vhit 2: the cache's */
        if (a->errs[g]) rocksdb_free(a->errs[g]);
    }
    free(a->vals);
    free(a->vhit);
    free(a->vent);
    free(a->vh);
    free(a->rkoff);
    free(a->rklen);
    cdc__buf_free(&a->rkeys);
    free(a->vlens);
    free(a->errs);
    free(a->f.cols);
    for (size_t i = 0; a->gsorted && i < a->ngroups; i++) free(a->gsorted[i]);
    free(a->gsorted);
    free(a->ngsorted);
    for (size_t i = 0; a->created && i < a->n; i++) free(a->created[i]);
    free(a->created);
    free(a->ncreated);
    for (size_t i = 0; i < a->ndonor; i++) {
        free(a->donor[i]->cols);
        free(a->donor[i]);
    }
    free(a->donor);
    for (size_t i = 0; i < a->ndonor_vals; i++) rocksdb_free(a->donor_vals[i]);
    free(a->donor_vals);
    cdc__buf_free(&a->out);
    cdc__buf_free(&a->rowbuf);
    cdc__buf_free(&a->keytext);
    free(a->present);
    cdc__buf_free(&a->elem);
    cdc__buf_free(&a->bucket);
    cdc__buf_free(&a->ckey);
    cdc__buf_free(&a->cval);
    cdc__buf_free(&a->jbuf);
    free(a->order);
    size_t wbytes = 0;
    rocksdb_writebatch_data(a->wb, &wbytes);
    if (wbytes <= WB_KEEP_MAX && !a->st->apply_wb) {
        rocksdb_writebatch_clear(a->wb);
        a->st->apply_wb = a->wb;
    } else {
        rocksdb_writebatch_destroy(a->wb);
    }
    for (size_t i = 0; i < a->ndl; i++) cdc__buf_free(&a->dl[i].ident);
    free(a->dl);
    free(a->sl);
    free(a->pu);
    free(a->groups);
    free(a->htab);
    free(a->last_in_group);
    free(a->floored);
    free(a->old_floor);
}

void cdc__event_free(cdc__event *ev)
{
    if (!ev) return;
    free(ev->table);
    ev->table = NULL;
    free(ev->reason);
    ev->reason = NULL;
    cdc__buf_free(&ev->key);
    cdc__buf_free(&ev->keycols);
    cdc__buf_free(&ev->row);
    cdc__buf_free(&ev->defaults);
    cdc__buf_free(&ev->coltypes);
    if (ev->old_key.p) cdc__buf_free(&ev->old_key); /* rare: no free(NULL) per event */
}

static void events_free(cdc__event *evs, size_t n)
{
    for (size_t i = 0; evs && i < n; i++) cdc__event_free(&evs[i]);
    free(evs);
}

/* Stopping (the caller's interrupt flag is set when the batch ends, given
 * up or written): the caller is about to end, and a stop is promised within
 * a second however large the batch (tests/faults/signal_stop.sh).  The work
 * an ordinary batch does after its write is then put off or moved aside:
 * the cache is trimmed at the start of the next batch instead (an apply that
 * follows still finds it within its budget), and the batch's events are
 * freed on a thread of their own.  Measured on a batch of 1,000,000 records
 * (tests/query/gen.py bulk 1000000, apply --batch-size 1000000): the trim
 * 0.07-0.09 s and the free 0.10-0.15 s, on top of a write of 0.6-0.9 s that
 * cannot be cut short. */
typedef struct freeing {
    cdc__event *evs;
    size_t n;
} freeing;

static void *events_free_thread(void *arg)
{
    freeing *f = arg;
    events_free(f->evs, f->n);
    free(f);
    return NULL;
}

static void events_free_aside(cdc__event *evs, size_t n)
{
    pthread_t th;
    pthread_attr_t at;
    freeing *f = malloc(sizeof *f);
    int started = 0;
    if (f && !pthread_attr_init(&at)) {
        *f = (freeing){evs, n};
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&th, &at, events_free_thread, f) == 0;
        pthread_attr_destroy(&at);
    }
    if (!started) {
        free(f);
        events_free(evs, n);
    }
}

static int apply_events(cdc_store_t *st, const cdc_record_t *recs, cdc__event *evs, size_t n,
                        const cdc_apply_options_t *opts, cdc_apply_result_t *res, cdc_error_t *err, int keep)
{
    cdc_apply_options_t defo = {0};
    cdc_apply_result_t dummy;
    apply_ctx a = {.st = st, .recs = recs, .evs = evs, .n = n, .opts = opts ? opts : &defo,
                   .res = res ? res : &dummy, .err = err};
    memset(a.res, 0, sizeof *a.res);
    int rc = 0;
    if (st->read_only) rc = cdc__err(err, CDC_EINVAL, "%s: replica opened read-only", st->dir);
    else if (st->broken) rc = cdc__err(err, CDC_EIO, "%s: an earlier write failed; reopen the replica", st->dir);
    else if (n) rc = cdc__space_check(st, "this batch was not written (the batches before it were)", err);
    if (rc || n == 0) {
        if (!keep) events_free(evs, n);
        return rc;
    }
    /* RocksDB counts key comparisons and the like per thread by default
     * (perf level "count"), through thread-local storage on every memtable
     * comparison; nothing here reads those counters. */
    rocksdb_set_perf_level(rocksdb_disable);
    if (!st->vc) st->vc = cdc__vcache_new(0);
    cdc__vcache_trim(st->vc); /* put off by a stop (events_free_aside) */
    ctx_init(&a, n);
    a.stamp = cdc__change_stamp_next(st);
    for (a.taken = 0; a.taken < n && !rc && !a.stopped; a.taken++)
        rc = interrupted(&a, a.taken) ? -EINTR : take_record(&a, a.taken);
    if (a.stopped) a.taken--; /* the bad record is not applied */
    if (!rc) {
        count_floor_deletes(&a);
        rc = read_stored(&a);
        for (size_t g = 0; g < a.ngroups && !rc; g++) {
            fold_prefetch(&a, g);
            rc = interrupted(&a, g) ? -EINTR : fold_group(&a, g);
        }
    }
    if (!rc && interrupted(&a, 0)) rc = -EINTR; /* the last look before the write, which runs to its end */
    if (!rc) rc = commit(&a);
    if (!rc) notify(&a);
    /* Readers may run on several threads: the column lists they read are
     * rebuilt here, never lazily while they read. */
    for (size_t i = 0; i < st->ntables; i++)
        if (st->tables[i]->live_dirty) cdc__table_live(st->tables[i]);
    if (!rc && a.stopped) rc = CDC_ESTOPPED;
    if (rc == -EINTR)
        cdc__err(err, rc, "interrupted: the batch of %zu records was given up, nothing of it written", n);
    /* An interrupted or failed batch may have moved the in-memory epoch
     * marks, floors and table metadata that its write would have stored:
     * no further apply until the store is reopened from what it holds. */
    int stopping = interrupted(&a, 0);
    if (rc && rc != CDC_ESTOPPED) {
        st->broken = 1;
        cdc__vcache_clear(st->vc); /* it may hold rows of the batch not written */
    }
    if (!stopping) cdc__vcache_trim(st->vc);
    ctx_free(&a);
    if (keep) return rc;
    if (stopping) events_free_aside(evs, n);
    else events_free(evs, n);
    return rc;
}

int cdc__store_apply_events(cdc_store_t *st, const cdc_record_t *recs, cdc__event *evs, size_t n,
                            const cdc_apply_options_t *opts, cdc_apply_result_t *res, cdc_error_t *err)
{
    return apply_events(st, recs, evs, n, opts, res, err, 0);
}

int cdc__store_apply_events_kept(cdc_store_t *st, const cdc_record_t *recs, cdc__event *evs, size_t n,
                                 const cdc_apply_options_t *opts, cdc_apply_result_t *res, cdc_error_t *err)
{
    return apply_events(st, recs, evs, n, opts, res, err, 1);
}
