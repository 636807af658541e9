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
 *   (b) the largest known snapshot epoch C <= L.
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
 * Limits, said plainly: input without positions (bare envelopes) has no
 * marks; there (a) is the last snapshot epoch seen in the same store session.
 * Incremental snapshot reads carry no LSN and are dead-lettered, not guessed.
 * When the connector re-snapshots on an existing slot (snapshot.mode=always),
 * changes it streams again from the slot's older position may briefly win
 * over the new snapshot's rows; the stream then replays every later change
 * of those keys, so the replica converges.
 *
 * ---- The apply ----
 *
 * A batch is decoded (in parallel), versions are assigned in record order,
 * events are grouped per key, the stored versions are read with one MultiGet,
 * and each key's events are folded in version order from the stored state:
 * only strictly newer events change it (unchanged TOASTed columns take the
 * value of the state they follow).  Rows, counters, table metadata, epoch
 * marks, dead letters and the highest offset per (topic, partition) go into
 * one WriteBatch, so a crash keeps either all of a batch or none of it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define DLQ_RECORD_MAX (64 * 1024)
#define PARALLEL_MIN 256

/* ---- Per-record decode state ---- */

typedef struct rec_state {
    int status;          /* 0 event, 1 tombstone, -1 dead letter */
    cdc__event ev;
    char *reason;        /* dead-letter reason (malloc'd) */
    cdc__table *t;
    cdc__version ver;
    int next;            /* next event index in the key's group, -1 */
} rec_state;

typedef struct decode_job {
    cdc_store_t *st;
    const cdc_record_t *recs;
    rec_state *rs;
    size_t from, to;
    size_t max_bytes;
} decode_job;

static int scale_lookup(void *opaque, const char *table, const char *column)
{
    cdc_store_t *st = opaque;
    for (size_t i = 0; i < st->nscales; i++)
        if (!strcmp(st->scales[i].column, column) && !strcmp(st->scales[i].table, table))
            return st->scales[i].scale;
    return -1;
}

static void *decode_range(void *arg)
{
    decode_job *j = arg;
    cdc_error_t e;
    for (size_t i = j->from; i < j->to; i++) {
        const cdc_record_t *r = &j->recs[i];
        rec_state *s = &j->rs[i];
        s->next = -1;
        if (r->value_len + r->key_len > j->max_bytes) {
            char b[256];
            snprintf(b, sizeof b, "record of %zu bytes exceeds the limit of %zu bytes",
                     r->value_len + r->key_len, j->max_bytes);
            s->status = -1;
            s->reason = cdc__strdup(b);
            continue;
        }
        e.msg[0] = 0;
        int rc = cdc__decode_record(r, scale_lookup, j->st, &s->ev, &e);
        if (rc == 1) s->status = 1;
        else if (rc == 0) s->status = 0;
        else {
            s->status = -1;
            s->reason = cdc__strdup(e.msg[0] ? e.msg : "record does not decode");
        }
    }
    return NULL;
}

/* ---- Helpers ---- */

static const char *pos_name(const cdc_record_t *r, char *buf, size_t n)
{
    if (r->offset >= 0)
        snprintf(buf, n, "%s[%d]@%lld", r->topic ? r->topic : "", (int)r->partition, (long long)r->offset);
    else
        snprintf(buf, n, "%s:%lld", r->source ? r->source : "input", (long long)r->line);
    return buf;
}

/* The epoch mark in force at a position, 0 when none. */
static uint64_t mark_at(const cdc_store_t *st, const char *topic, int32_t partition, int64_t offset)
{
    uint64_t e = 0;
    int64_t best = -1;
    for (size_t i = 0; i < st->nmarks; i++) {
        const cdc__mark *m = &st->marks[i];
        if (m->partition == partition && m->offset <= offset && m->offset > best &&
            !strcmp(m->topic, topic)) {
            best = m->offset;
            e = m->epoch;
        }
    }
    return e;
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

static int fold_load_stored(fold *f, const cdc__table *t, const char *row, size_t len)
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
static int fold_take_row(fold *f, cdc__table *t, const cdc__buf *row, int live, uint64_t *kept,
                         uint64_t *unresolved)
{
    const char *p = row->p, *end = row->p + row->len;
    uint64_t n, nl, tag;
    if (!row->len) {
        for (size_t i = 0; i < f->ncols; i++) f->cols[i].set = 0;
        return 0;
    }
    if (cdc__get_varint(&p, end, &n)) return CDC_ECORRUPT;
    /* Mark the old values, then overwrite; columns absent from the event row
     * are dropped (the event carries the whole row). */
    for (size_t i = 0; i < f->ncols; i++) f->cols[i].set = f->cols[i].set ? 2 : 0;
    for (uint64_t i = 0; i < n; i++) {
        if (cdc__get_varint(&p, end, &nl) || (uint64_t)(end - p) < nl) return CDC_ECORRUPT;
        size_t idx = cdc__table_col(t, p, nl);
        p += nl;
        if (cdc__get_varint(&p, end, &tag)) return CDC_ECORRUPT;
        size_t vl = tag >= CDC__V_TEXT ? (size_t)(tag - CDC__V_TEXT) : 0;
        if ((size_t)(end - p) < vl) return CDC_ECORRUPT;
        fold_grow(f, t->ncols);
        colval *c = &f->cols[idx];
        if (tag == CDC__V_UNAVAILABLE) {
            if (live && c->set == 2 && c->tag == CDC__V_TEXT) {
                c->set = 1;
                (*kept)++;
            } else if (live && c->set == 2 && c->tag == CDC__V_NULL) {
                c->set = 1;
                (*kept)++;
            } else {
                *c = (colval){CDC__V_UNAVAILABLE, NULL, 0, 1};
                (*unresolved)++;
            }
        } else {
            *c = (colval){(int)(tag >= CDC__V_TEXT ? CDC__V_TEXT : tag), p, vl, 1};
        }
        p += vl;
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

static void dlq_put(cdc_store_t *st, rocksdb_writebatch_t *wb, const cdc_record_t *r,
                    const char *reason)
{
    cdc__buf k = {0}, v = {0};
    cdc__buf_put_u64be(&k, st->next_dlq++);
    size_t n = strlen(reason);
    cdc__buf_put_varint(&v, n);
    cdc__buf_put(&v, reason, n);
    const char *topic = r->topic ? r->topic : "";
    cdc__buf_put_varint(&v, strlen(topic));
    cdc__buf_puts(&v, topic);
    cdc__buf_put_varint(&v, (uint64_t)(uint32_t)r->partition);
    cdc__buf_put_varint(&v, (uint64_t)(r->offset + 1));
    const char *src = r->source ? r->source : "";
    cdc__buf_put_varint(&v, strlen(src));
    cdc__buf_puts(&v, src);
    cdc__buf_put_varint(&v, (uint64_t)(r->line > 0 ? r->line : 0));
    const char *rec = r->value ? r->value : (r->key ? r->key : "");
    size_t rl = r->value ? r->value_len : r->key_len;
    if (rl > DLQ_RECORD_MAX) rl = DLQ_RECORD_MAX;
    cdc__buf_put_varint(&v, rl);
    cdc__buf_put(&v, rec, rl);
    rocksdb_writebatch_put_cf(wb, st->dlq_cf, k.p, k.len, v.p, v.len);
    cdc__buf_free(&k);
    cdc__buf_free(&v);
}

/* ---- The apply ---- */

typedef struct pos_upd {
    const char *topic;
    int32_t partition;
    int64_t offset;
} pos_upd;

static void pos_note(pos_upd **pu, size_t *npu, const cdc_record_t *r)
{
    if (r->offset < 0) return;
    const char *topic = r->topic ? r->topic : "";
    for (size_t i = 0; i < *npu; i++)
        if ((*pu)[i].partition == r->partition && !strcmp((*pu)[i].topic, topic)) {
            if (r->offset > (*pu)[i].offset) (*pu)[i].offset = r->offset;
            return;
        }
    *pu = cdc__realloc(*pu, (*npu + 1) * sizeof **pu);
    (*pu)[(*npu)++] = (pos_upd){topic, r->partition, r->offset};
}

/* The table a record counts against when it has no decoded event. */
static cdc__table *table_for_record(cdc_store_t *st, const cdc_record_t *r)
{
    char name[512];
    cdc__table *t = NULL;
    if (r->topic && cdc__table_from_topic(r->topic, name, sizeof name) == 0 &&
        cdc__table_get(st, name, 1, &t, NULL) == 0)
        return t;
    if (cdc__table_get(st, "", 1, &t, NULL) == 0) return t;
    return NULL;
}

/* Decodes a batch; with threads > 1 the records are split between two
 * threads.  Decoding only reads the store's settings, so it may run beside
 * an apply of another batch (the file source's pipeline does). */
cdc__decoded *cdc__decode_batch(cdc_store_t *st, const cdc_record_t *recs, size_t n,
                                const cdc_apply_options_t *opts, int threads)
{
    size_t max_bytes = opts && opts->max_record_bytes ? opts->max_record_bytes : (16u << 20);
    rec_state *rs = cdc__calloc(n ? n : 1, sizeof *rs);
    decode_job jobs[2] = {{st, recs, rs, 0, n, max_bytes}, {st, recs, rs, n, n, max_bytes}};
    pthread_t th;
    int threaded = 0;
    if (threads > 1 && n >= PARALLEL_MIN) {
        jobs[0].to = n / 2;
        jobs[1].from = n / 2;
        threaded = pthread_create(&th, NULL, decode_range, &jobs[1]) == 0;
        if (!threaded) jobs[0].to = n;
    }
    decode_range(&jobs[0]);
    if (threaded) pthread_join(th, NULL);
    return (cdc__decoded *)rs;
}

void cdc__result_add(cdc_apply_result_t *to, const cdc_apply_result_t *r)
{
    to->read += r->read;
    to->applied += r->applied;
    to->stale += r->stale;
    to->duplicate += r->duplicate;
    to->tombstones += r->tombstones;
    to->dead_letters += r->dead_letters;
}

void cdc__decoded_free(cdc__decoded *dec, size_t n)
{
    rec_state *rs = (rec_state *)dec;
    if (!rs) return;
    for (size_t i = 0; i < n; i++) {
        cdc__event_free(&rs[i].ev);
        free(rs[i].reason);
    }
    free(rs);
}

int cdc_store_apply(cdc_store_t *st, const cdc_record_t *recs, size_t n,
                    const cdc_apply_options_t *opts, cdc_apply_result_t *res, cdc_error_t *err)
{
    if (!st || (n && !recs)) {
        if (res) memset(res, 0, sizeof *res);
        return cdc__err(err, CDC_EINVAL, "cdc_store_apply: bad arguments");
    }
    return cdc__apply_decoded(st, recs, n, n ? cdc__decode_batch(st, recs, n, opts, 2) : NULL, opts, res, err);
}

int cdc__apply_decoded(cdc_store_t *st, const cdc_record_t *recs, size_t n, cdc__decoded *dec,
                       const cdc_apply_options_t *opts, cdc_apply_result_t *res, cdc_error_t *err)
{
    cdc_apply_options_t defo = {0};
    cdc_apply_result_t dummy;
    rec_state *rs = (rec_state *)dec;
    if (!opts) opts = &defo;
    if (!res) res = &dummy;
    memset(res, 0, sizeof *res);
    int early = 0;
    if (st->read_only) early = cdc__err(err, CDC_EINVAL, "%s: replica opened read-only", st->dir);
    else if (st->broken) early = cdc__err(err, CDC_EIO, "%s: an earlier write failed; reopen the replica", st->dir);
    if (early || n == 0) {
        cdc__decoded_free(dec, n);
        return early;
    }

    /* RocksDB counts key comparisons and the like per thread by default
     * (perf level "count"), through thread-local storage on every memtable
     * comparison; nothing here reads those counters. */
    rocksdb_set_perf_level(rocksdb_disable);
    int rc = 0, stopped = 0;
    char where[600];
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    pos_upd *pu = NULL;
    size_t npu = 0;
    size_t ngroups = 0, hcap = 16;
    while (hcap < 2 * n) hcap <<= 1;
    group *groups = cdc__calloc(n, sizeof *groups);
    int *htab = cdc__malloc(hcap * sizeof *htab);
    memset(htab, 0xff, hcap * sizeof *htab);
    int *last_in_group = cdc__calloc(n, sizeof *last_in_group);
    cdc__table **floored = NULL;
    size_t nfloored = 0;
    cdc__version *old_floor = NULL;

    /* Pass 1, in record order: dead letters, counters, versions, groups. */
    for (size_t i = 0; i < n; i++) {
        const cdc_record_t *r = &recs[i];
        rec_state *s = &rs[i];
        res->read++;
        if (s->status == 0 && s->ev.op != 'm') {
            if ((rc = cdc__table_get(st, s->ev.table, 1, &s->t, err))) goto out;
            if (s->ev.snapshot == CDC__SNAP_INCREMENTAL) {
                s->status = -1;
                s->reason = cdc__strdup("incremental snapshot reads carry no LSN; cdcstore does not order them yet");
            }
        }
        if (s->status == -1) {
            cdc__table *t = s->t ? s->t : table_for_record(st, r);
            char reason[1400];
            snprintf(reason, sizeof reason, "%s: %s", pos_name(r, where, sizeof where), s->reason);
            dlq_put(st, wb, r, reason);
            cdc__log(st, CDC_LOG_WARN, "apply", "dead letter: %s", reason);
            if (t) {
                stat_add(t, CDC__ST_READ, 1);
                stat_add(t, CDC__ST_DEAD, 1);
            }
            res->dead_letters++;
            if (opts->on_error == CDC_ON_ERROR_STOP) {
                /* Records before this one are applied; its position is not
                 * passed, so a rerun meets it again. */
                stopped = 1;
                cdc__err(err, CDC_ESTOPPED, "stopped at a bad record: %s", reason);
                break;
            }
            pos_note(&pu, &npu, r);
            continue;
        }
        pos_note(&pu, &npu, r);
        if (s->status == 1) {
            cdc__table *t = table_for_record(st, r);
            if (t) {
                stat_add(t, CDC__ST_READ, 1);
                stat_add(t, CDC__ST_TOMBSTONES, 1);
            }
            res->tombstones++;
            continue;
        }
        cdc__event *ev = &s->ev;
        if (ev->op == 'm') {
            cdc__table *t = table_for_record(st, r);
            if (t) {
                stat_add(t, CDC__ST_READ, 1);
                stat_add(t, CDC__ST_OTHER, 1);
            }
            continue;
        }
        cdc__table *t = s->t;
        stat_add(t, CDC__ST_READ, 1);
        if (t->nkey == 0 && ev->keycols.len) {
            const char *p = ev->keycols.p, *end = p + ev->keycols.len;
            uint64_t nk, l;
            if (!cdc__get_varint(&p, end, &nk) && nk < 1000) {
                t->keycols = cdc__calloc(nk ? nk : 1, sizeof *t->keycols);
                for (uint64_t k = 0; k < nk && !cdc__get_varint(&p, end, &l) && (uint64_t)(end - p) >= l; k++) {
                    t->keycols[t->nkey++] = cdc__strndup(p, l);
                    p += l;
                }
                t->meta_dirty = 1;
            }
        }
        /* Versions (see the top of this file). */
        const char *topic = r->topic ? r->topic : "";
        if (ev->snapshot != CDC__SNAP_NONE) {
            uint64_t c = ev->lsn;
            add_epoch(t, c);
            if (r->offset >= 0) {
                if (mark_at(st, topic, r->partition, r->offset) < c) {
                    st->marks = cdc__realloc(st->marks, (st->nmarks + 1) * sizeof *st->marks);
                    st->marks[st->nmarks++] = (cdc__mark){cdc__strdup(topic), r->partition, r->offset, c};
                    cdc__buf k = {0}, v = {0};
                    cdc__meta_key_mark(&k, topic, r->partition, r->offset);
                    cdc__buf_put_varint(&v, c);
                    rocksdb_writebatch_put_cf(wb, st->meta_cf, k.p, k.len, v.p, v.len);
                    cdc__buf_free(&k);
                    cdc__buf_free(&v);
                }
            } else if (st->run_epoch != c) {
                st->run_epoch = c;
            }
            s->ver = (cdc__version){c, CDC__KIND_SNAPSHOT, c};
        } else {
            uint64_t e = r->offset >= 0 ? mark_at(st, topic, r->partition, r->offset) : st->run_epoch;
            uint64_t e2 = epoch_le(t, ev->lsn);
            s->ver = (cdc__version){e > e2 ? e : e2, CDC__KIND_STREAM, ev->lsn};
        }
        /* Version floors: a completed snapshot, or a truncate. */
        cdc__version fl = {0, 0, 0};
        int raise = 0;
        if (ev->snapshot == CDC__SNAP_LAST) {
            fl = (cdc__version){ev->lsn, CDC__KIND_GAP, ev->lsn};
            raise = 1;
        } else if (ev->op == 't') {
            fl = s->ver;
            raise = 1;
        }
        if (raise && (!t->floor_set || cdc__version_cmp(&fl, &t->floor) > 0)) {
            size_t k;
            for (k = 0; k < nfloored && floored[k] != t; k++) {}
            if (k == nfloored) {
                floored = cdc__realloc(floored, (nfloored + 1) * sizeof *floored);
                old_floor = cdc__realloc(old_floor, (nfloored + 1) * sizeof *old_floor);
                floored[nfloored] = t;
                old_floor[nfloored] = t->floor_set ? t->floor : (cdc__version){0, 0, 0};
                nfloored++;
            }
            t->floor = fl;
            t->floor_set = 1;
            t->meta_dirty = 1;
        }
        if (ev->op == 't') {
            s->status = 2; /* no row of its own */
            continue;
        }
        /* Group by (table, key). */
        uint64_t h = hash_key(t, ev->key.p, ev->key.len);
        size_t slot = h & (hcap - 1);
        for (;;) {
            int g = htab[slot];
            if (g < 0) {
                groups[ngroups] = (group){t, ev->key.p, ev->key.len, (int)i};
                last_in_group[ngroups] = (int)i;
                htab[slot] = (int)ngroups++;
                break;
            }
            group *gr = &groups[g];
            if (gr->t == t && gr->key_len == ev->key.len && !memcmp(gr->key, ev->key.p, ev->key.len)) {
                rs[last_in_group[g]].next = (int)i;
                last_in_group[g] = (int)i;
                break;
            }
            slot = (slot + 1) & (hcap - 1);
        }
    }

    /* Rows that a raised floor deletes without any event of theirs in the
     * batch are counted now (the floor itself deletes them, no write). */
    for (size_t k = 0; k < nfloored; k++) {
        cdc__table *t = floored[k];
        rocksdb_iterator_t *it = rocksdb_create_iterator_cf(st->db, st->ro, t->cf);
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *key = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
            cdc__value val;
            if (cdc__value_decode(v, vl, &val)) continue;
            if (val.flags & CDC__F_DELETED) continue;
            if (cdc__version_cmp(&val.ver, &old_floor[k]) < 0) continue; /* already below the old floor */
            if (cdc__version_cmp(&val.ver, &t->floor) >= 0) continue;
            uint64_t h = hash_key(t, key, kl);
            size_t slot = h & (hcap - 1);
            int in_batch = 0;
            while (htab[slot] >= 0) {
                group *gr = &groups[htab[slot]];
                if (gr->t == t && gr->key_len == kl && !memcmp(gr->key, key, kl)) {
                    in_batch = 1;
                    break;
                }
                slot = (slot + 1) & (hcap - 1);
            }
            if (in_batch) continue;
            stat_add(t, t->floor.kind == CDC__KIND_GAP ? CDC__ST_GAP_DELETES : CDC__ST_DELETES, 1);
            stat_add(t, CDC__ST_LIVE, -1);
            stat_add(t, CDC__ST_DELETED, 1);
        }
        rocksdb_iter_destroy(it);
    }

    /* Read the stored versions of every key of the batch, in key order (the
     * grouping table is not used past this point). */
    qsort(groups, ngroups, sizeof *groups, group_cmp);
    const char **keys = cdc__malloc((ngroups + 1) * sizeof *keys);
    size_t *klens = cdc__malloc((ngroups + 1) * sizeof *klens);
    const rocksdb_column_family_handle_t **cfs = cdc__malloc((ngroups + 1) * sizeof *cfs);
    char **vals = cdc__calloc(ngroups + 1, sizeof *vals);
    size_t *vlens = cdc__calloc(ngroups + 1, sizeof *vlens);
    char **errs = cdc__calloc(ngroups + 1, sizeof *errs);
    for (size_t g = 0; g < ngroups; g++) {
        keys[g] = groups[g].key;
        klens[g] = groups[g].key_len;
        cfs[g] = groups[g].t->cf;
    }
    if (ngroups)
        rocksdb_multi_get_cf(st->db, st->ro, cfs, ngroups, keys, klens, vals, vlens, errs);

    /* Fold each key's events in version order from the stored state. */
    fold f = {0};
    cdc__buf out = {0}, rowbuf = {0};
    int *order = cdc__malloc((n + 1) * sizeof *order);
    for (size_t g = 0; g < ngroups && rc == 0; g++) {
        group *gr = &groups[g];
        cdc__table *t = gr->t;
        if (errs[g]) {
            rc = cdc__err(err, CDC_EIO, "table %s: read failed: %s", t->name, errs[g]);
            break;
        }
        size_t m = 0;
        for (int e = gr->first; e >= 0; e = rs[e].next) {
            if (rs[e].status != 0) continue;
            /* insertion sort by version, stable for equal versions */
            size_t j = m++;
            while (j > 0 && cdc__version_cmp(&rs[order[j - 1]].ver, &rs[e].ver) > 0) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = e;
        }
        if (!m) continue;
        memset(&f.ver, 0, sizeof f.ver);
        f.exists = 0;
        f.flags = 0;
        f.ts_ms = 0;
        f.ncols = 0; /* the fold is reused across tables: size it to this one */
        fold_grow(&f, t->ncols);
        int stored_state = 0; /* 0 none, 1 live, 2 deleted */
        int floor_slot = -1;  /* the counter a floor of this batch moved for this key */
        cdc__version stored_ver = {0, 0, 0};
        if (vals[g]) {
            cdc__value sv;
            if (cdc__value_decode(vals[g], vlens[g], &sv) ||
                fold_load_stored(&f, t, sv.row, sv.row_len)) {
                rc = cdc__err(err, CDC_ECORRUPT, "table %s: stored value of a key does not decode", t->name);
                break;
            }
            int raw_live = !(sv.flags & CDC__F_DELETED);
            cdc__version raw_ver = sv.ver;
            cdc__apply_floor(t, &sv);
            if (raw_live && (sv.flags & CDC__F_DELETED)) {
                /* A floor raised by this batch deletes the stored row: count
                 * it here, as the scan above skipped keys of the batch; undone
                 * below when an event of the batch brings the row back above
                 * the floor (a row the new snapshot contains). */
                for (size_t k = 0; k < nfloored; k++)
                    if (floored[k] == t && cdc__version_cmp(&raw_ver, &old_floor[k]) >= 0) {
                        floor_slot = t->floor.kind == CDC__KIND_GAP ? CDC__ST_GAP_DELETES : CDC__ST_DELETES;
                        stat_add(t, floor_slot, 1);
                        stat_add(t, CDC__ST_LIVE, -1);
                        stat_add(t, CDC__ST_DELETED, 1);
                    }
            }
            f.exists = 1;
            f.flags = sv.flags;
            f.ver = sv.ver;
            f.ts_ms = sv.ts_ms;
            stored_state = (sv.flags & CDC__F_DELETED) ? 2 : 1;
        } else if (cdc__absent_version(t, &f.ver)) {
            /* No row: under a floor or a purge horizon the key is known
             * absent up to it. */
            f.exists = 1;
            f.flags = CDC__F_DELETED;
        }
        stored_ver = f.ver;
        int stored_exists = f.exists;
        /* Counters: the newest event against the stored state; the others
         * are superseded within the batch. */
        rec_state *top = &rs[order[m - 1]];
        for (size_t j = 0; j + 1 < m; j++) {
            rec_state *o = &rs[order[j]];
            if (cdc__version_cmp(&o->ver, &top->ver) == 0) {
                stat_add(t, CDC__ST_DUPLICATE, 1);
                res->duplicate++;
            } else {
                stat_add(t, CDC__ST_STALE, 1);
                res->stale++;
                if (top->ev.op == 'd' && o->ev.op != 'd') stat_add(t, CDC__ST_RESURRECTIONS, 1);
            }
        }
        int cmp = stored_exists ? cdc__version_cmp(&top->ver, &stored_ver) : 1;
        if (cmp <= 0) {
            if (cmp == 0) {
                stat_add(t, CDC__ST_DUPLICATE, 1);
                res->duplicate++;
            } else {
                stat_add(t, CDC__ST_STALE, 1);
                res->stale++;
                if ((f.flags & CDC__F_DELETED) && top->ev.op != 'd') stat_add(t, CDC__ST_RESURRECTIONS, 1);
            }
            continue;
        }
        /* Fold every event newer than the state, in version order.  A
         * change followed by a delete in the same batch is skipped: the
         * tombstone keeps the columns of the row as the replica held it,
         * whatever the batch boundaries were. */
        uint64_t kept = 0, unresolved = 0;
        size_t last_delete = m;
        for (size_t j = m; j > 0; j--)
            if (rs[order[j - 1]].ev.op == 'd') {
                last_delete = j - 1;
                break;
            }
        for (size_t j = 0; j < m && rc == 0; j++) {
            rec_state *e = &rs[order[j]];
            if (f.exists && cdc__version_cmp(&e->ver, &f.ver) <= 0) continue;
            if (last_delete < m && j < last_delete && e->ev.op != 'd') continue;
            int live = f.exists && !(f.flags & CDC__F_DELETED);
            if (e->ev.op == 'd') {
                /* A tombstone keeps the columns of the row it deletes; for a
                 * row the replica never held, only the key columns of the
                 * before-image (under REPLICA IDENTITY DEFAULT the other
                 * columns there are nulls and type defaults, not data). */
                if (!live) {
                    if (fold_take_row(&f, t, &e->ev.row, 0, &kept, &unresolved)) rc = CDC_ECORRUPT;
                    for (size_t c = 0; c < f.ncols; c++) {
                        int iskey = 0;
                        for (size_t k = 0; k < t->nkey && !iskey; k++) iskey = !strcmp(t->keycols[k], t->cols[c]);
                        if (!iskey) f.cols[c].set = 0;
                    }
                }
                f.flags = CDC__F_DELETED;
            } else {
                uint64_t k2 = 0, u2 = 0;
                if (fold_take_row(&f, t, &e->ev.row, live, &k2, &u2)) rc = CDC_ECORRUPT;
                kept += k2;
                unresolved += u2;
                f.flags = e->ev.snapshot != CDC__SNAP_NONE ? CDC__F_SNAPSHOT : 0;
            }
            f.exists = 1;
            f.ver = e->ver;
            f.ts_ms = e->ev.ts_ms;
        }
        if (rc) {
            rc = cdc__err(err, CDC_ECORRUPT, "table %s: an event row does not decode", t->name);
            break;
        }
        stat_add(t, CDC__ST_APPLIED, 1);
        res->applied++;
        if (top->ev.op == 'd') stat_add(t, CDC__ST_DELETES, 1);
        if (kept) stat_add(t, CDC__ST_PLACEHOLDERS, (int64_t)kept);
        if (unresolved) stat_add(t, CDC__ST_UNRESOLVED, (int64_t)unresolved);
        int new_state = (f.flags & CDC__F_DELETED) ? 2 : 1;
        if (floor_slot >= 0 && new_state == 1) stat_add(t, floor_slot, -1);
        if (stored_state == 0 && stored_exists) stored_state = 2; /* absent under a floor */
        if (stored_state != new_state) {
            if (stored_state == 1) stat_add(t, CDC__ST_LIVE, -1);
            if (stored_state == 2 && vals[g]) stat_add(t, CDC__ST_DELETED, -1);
            if (new_state == 1) stat_add(t, CDC__ST_LIVE, 1);
            else stat_add(t, CDC__ST_DELETED, 1);
        } else if (stored_state == 2 && !vals[g]) {
            stat_add(t, CDC__ST_DELETED, 1); /* a tombstone is now stored for it */
        }
        cdc__buf_reset(&rowbuf);
        fold_encode_row(&f, &rowbuf);
        cdc__buf_reset(&out);
        cdc__value_encode(&out, f.flags, &f.ver, f.ts_ms, rowbuf.p, rowbuf.len);
        rocksdb_writebatch_put_cf(wb, t->cf, gr->key, gr->key_len, out.p, out.len);
    }
    free(order);
    free(f.cols);
    cdc__buf_free(&out);
    cdc__buf_free(&rowbuf);
    for (size_t g = 0; g < ngroups; g++) {
        if (vals[g]) rocksdb_free(vals[g]);
        if (errs[g]) rocksdb_free(errs[g]);
    }
    free(keys);
    free(klens);
    free(cfs);
    free(vals);
    free(vlens);
    free(errs);
    if (rc) goto out;

    /* Positions, metadata and counters, in the same write. */
    for (size_t i = 0; i < npu; i++) {
        int64_t cur = -1;
        size_t k;
        for (k = 0; k < st->npos; k++)
            if (st->pos[k].partition == pu[i].partition && !strcmp(st->pos[k].topic, pu[i].topic)) {
                cur = st->pos[k].offset;
                break;
            }
        if (pu[i].offset <= cur) continue;
        if (k == st->npos) {
            st->pos = cdc__realloc(st->pos, (st->npos + 1) * sizeof *st->pos);
            st->pos[st->npos++] = (cdc__pos){cdc__strdup(pu[i].topic), pu[i].partition, pu[i].offset};
        } else {
            st->pos[k].offset = pu[i].offset;
        }
        cdc__buf key = {0}, v = {0};
        cdc__meta_key_pos(&key, pu[i].topic, pu[i].partition);
        cdc__buf_put_varint(&v, (uint64_t)(pu[i].offset + 1));
        rocksdb_writebatch_put_cf(wb, st->meta_cf, key.p, key.len, v.p, v.len);
        cdc__buf_free(&key);
        cdc__buf_free(&v);
    }
    for (size_t i = 0; i < st->ntables; i++) cdc__table_flush(st, st->tables[i], wb);
    {
        char *e = NULL;
        rocksdb_write(st->db, opts->sync ? st->wo_sync : st->wo, wb, &e);
        if (e) {
            st->broken = 1;
            rc = cdc__err(err, CDC_EIO, "%s: write failed: %s", st->dir, e);
            free(e);
        }
    }
    if (rc == 0 && opts->on_change)
        for (size_t i = 0; i < n; i++)
            if (rs[i].status == 0 && rs[i].ev.table)
                opts->on_change(opts->on_change_opaque, rs[i].ev.table, rs[i].ev.ts_ms);
    if (rc == 0 && stopped) rc = CDC_ESTOPPED;
out:
    if (rc && rc != CDC_ESTOPPED) st->broken = 1;
    rocksdb_writebatch_destroy(wb);
    for (size_t i = 0; i < n; i++) {
        cdc__event_free(&rs[i].ev);
        free(rs[i].reason);
    }
    free(rs);
    free(pu);
    free(groups);
    free(htab);
    free(last_in_group);
    free(floored);
    free(old_floor);
    return rc;
}
