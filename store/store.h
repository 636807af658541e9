/*
 * store.h: the in-memory state of an open replica, shared by store/store.c
 * (opening, metadata, reads) and store/apply.c (the guarded apply).  The
 * RocksDB C API is included here and nowhere outside store/.
 */
#ifndef CDC_STORE_H
#define CDC_STORE_H

#include <rocksdb/c.h>

#include "internal.h"

/* Counter slots, persisted per table in slot order (CDC_STATS_MAP in
 * include/cdcstore.h: the one list of counters). */
enum {
#define CDC__STATS_SLOT(field, SLOT, slot, what) CDC__ST_##SLOT = slot,
    CDC_STATS_MAP(CDC__STATS_SLOT)
#undef CDC__STATS_SLOT
#define CDC__STATS_ONE(field, SLOT, slot, what) +1
    CDC__NSTATS = 0 CDC_STATS_MAP(CDC__STATS_ONE)
#undef CDC__STATS_ONE
};
/* Slots are dense, 0 .. CDC__NSTATS - 1 (the sum of distinct slots below N
 * is N(N-1)/2 only then). */
#define CDC__STATS_SUM(field, SLOT, slot, what) +slot
_Static_assert((0 CDC_STATS_MAP(CDC__STATS_SUM)) == CDC__NSTATS * (CDC__NSTATS - 1) / 2,
               "counter slots must be dense");
#undef CDC__STATS_SUM

/* What the replica knows of one column's life at the source (see
 * cdc__table_note_columns in store/store.c): the source's current column
 * set is the one its newest change carried. */
typedef struct cdc__colmeta {
    cdc__version seen;      /* the newest applied change that carried the column */
    cdc__version gone;      /* the newest applied change that did not: dropped when newer than seen */
    unsigned char has_seen, has_gone;
    unsigned char added_later; /* appeared after the table's first change (ALTER TABLE ADD) */
    unsigned char dflt_known; /* dflt is the source's default (from a schema) */
    unsigned char has_dflt_ver;
    unsigned char maybe_renamed; /* its default is not what older rows hold (cdc__table_live) */
    cdc__version dflt_ver;  /* the oldest change whose schema gave dflt (absent in replicas
                             * written before it was kept) */
    char *dflt;             /* the default in text form; NULL: SQL NULL (or unknown) */
    char *type;             /* its type as the schemas describe it, NULL before one did */
    cdc__version type_ver;  /* the change from which on it has that type */
} cdc__colmeta;

typedef struct cdc__table {
    char *name;                          /* "schema.table"; "" = records of no known table */
    rocksdb_column_family_handle_t *cf;  /* its rows' family: its own, or st->rows_cf; NULL for "" */
    uint32_t id;                         /* 0: rows in its own family "t:<name>"; else the
                                          * prefix of its rows in "rows" (store.c's head) */
    char **cols;                         /* column names, append-only */
    size_t ncols, capcols;
    cdc__colmeta *colmeta;               /* per column, capcols of them */
    char *stopped;                       /* why no event of the table is applied any more, or NULL */
    cdc__version allseen;                /* the newest applied change that carried every column */
    int has_allseen;
    size_t noted_ncols;                  /* columns that existed at the last cdc__table_note_columns */
    size_t *live;                        /* indexes of the columns the source has now, in order */
    char **livenames;                    /* their names (borrowed from cols) */
    size_t nlive;
    int live_dirty;                      /* live must be rebuilt (cdc__table_live) */
    char **livetypes;                    /* cdc_store_column_types' answer, nlivetypes of them */
    size_t nlivetypes;
    uint32_t *colhash;                   /* open addressing over cols: index + 1, 0 empty */
    size_t colhcap;                      /* slots, a power of two above 2 x ncols */
    char **keycols;
    size_t nkey;
    uint64_t repartition_warned;         /* repartitioned keys when last logged (store/apply.c) */
    uint64_t *epochs;                    /* snapshot epochs seen, ascending */
    size_t nepochs;
    cdc__version floor;                  /* rows below it are deleted (completed snapshot, truncate) */
    int floor_set;
    cdc__version horizon;                /* tombstones below it were purged (store/gc.c) */
    int horizon_set;
    uint64_t stats[CDC__NSTATS];
    int meta_dirty, stats_dirty;
    uint64_t session_read;               /* stats[CDC__ST_READ] at open (0 for a new table) */
    int bloom;                           /* its family's memtable bloom was switched on (store.c) */
    uint64_t *purge_pending;             /* removals the compaction filter counted, not yet in
                                          * stats (store/gc.c); owned by st->purge */
    /* Change tracking (store/changes.c): */
    uint64_t all_stamp;                  /* the newest change that touched every row's value */
    uint64_t tracked_reads;              /* stats[READ] after the last tracked batch */
    int has_track;                       /* its "E" record was found */
    int track_ok;                        /* every applied change of it was tracked */
    int all_pending;                     /* this batch changed values without key writes */
    /* The key journal (store/changes.c): */
    uint64_t jfrom;                      /* every change stamped after it is in the journal */
    uint64_t jkeys;                      /* keys the journal holds */
    uint64_t jreads;                     /* stats[READ] after the last journaled batch */
    uint64_t jpending;                   /* keys this batch journaled */
    int jhas;                            /* its "K" record was found, or it is new */
    int jok;                             /* every change since jfrom was journaled */
} cdc__table;

/* ---- A table's rows in its family ----
 * Every read and write of a table's rows goes through these, so that each
 * caller works for both layouts (store.c's head): a table in its own family
 * stores a row under its encoded key, a prefixed table under the 4-byte
 * big-endian table id followed by the encoded key. */
#define CDC__TABLE_PREFIX 4

/* The bytes of t's rows that precede an encoded key (0 or 4). */
static inline size_t cdc__table_prefix_len(const cdc__table *t)
{
    return t->id ? CDC__TABLE_PREFIX : 0;
}

/* Appends to out the key under which t stores the row of encoded key
 * key[0..len) in t->cf.  out is not reset first. */
void cdc__table_key(const cdc__table *t, const char *key, size_t len, cdc__buf *out);

/* An iterator over t's rows in key order, from the encoded key lower (or the
 * first row) up to, excluding, the encoded key upper (or past the last row);
 * it never yields another table's row.  Keys it yields are encoded keys, the
 * table's prefix removed. */
typedef struct cdc__scan {
    const cdc__table *t;
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    cdc__buf lo, hi;                     /* the bounds; they must outlive it */
} cdc__scan;

/* Opens s over t's rows (optionally at a snapshot, without filling the block
 * cache when no_fill) and positions it on the first row at or after lower.
 * lower/upper NULL: unbounded within the table.  Close with cdc__scan_close. */
void cdc__scan_open(cdc_store_t *st, const cdc__table *t, const rocksdb_snapshot_t *snap, int no_fill,
                    const char *lower, size_t lower_len, const char *upper, size_t upper_len, cdc__scan *s);
/* 1 when positioned on a row; its encoded key and value, valid until the
 * next move.  0 at the end (or on an error: cdc__scan_error). */
int cdc__scan_row(const cdc__scan *s, const char **key, size_t *key_len, const char **val, size_t *val_len);
void cdc__scan_next(cdc__scan *s);
/* The iterator's error after the end, to be freed; NULL if none. */
char *cdc__scan_error(const cdc__scan *s);
void cdc__scan_close(cdc__scan *s);

typedef struct cdc__mark {               /* from offset on, partition streams in epoch */
    char *topic;
    int32_t partition;
    int64_t offset;
    uint64_t epoch;
} cdc__mark;

typedef struct cdc__pos {
    char *topic;
    int32_t partition;
    int64_t offset;
    uint64_t fp;        /* cdc_record_fingerprint of the record at offset; 0: not known */
} cdc__pos;

typedef struct cdc__scale {
    char *table, *column;
    int scale;
} cdc__scale;

/* ---- The purge's compaction filter (store/gc.c) ---- */

typedef struct cdc__purge cdc__purge;

cdc__purge *cdc__purge_new(void);
/* Frees the state; after rocksdb_close (filters hold on to it until then). */
void cdc__purge_free(cdc__purge *p);
/* Options for a family of table rows: a copy of base with the filter, for
 * "rows" (own_table NULL) or for own_table's own family.  p keeps them. */
const rocksdb_options_t *cdc__purge_family_options(cdc__purge *p, const rocksdb_options_t *base,
                                                    const char *own_table);
/* Hands every table's floor and horizon to the filter.  Call only when both
 * are on disk as they are in memory (gc.c's head: "Who removes"). */
void cdc__purge_publish(cdc_store_t *st);
/* Moves the removals the filter counted for t into its counters (marking
 * them dirty); returns how many. */
uint64_t cdc__purge_fold(cdc__table *t);

/* ---- The newest values of recently applied keys (store/vcache.c) ----
 * Keyed by column family and stored key (h: cdc__vcache_hash of both); a
 * hit is the value as stored.  Only the apply uses it (one thread).  An
 * entry found stays valid until its own key is put or deleted, the cache is
 * cleared, or cdc__vcache_trim evicts. */
typedef struct cdc__vcache cdc__vcache;
typedef struct cdc__ventry cdc__ventry;
cdc__vcache *cdc__vcache_new(size_t budget); /* 0: the default budget */
void cdc__vcache_free(cdc__vcache *c);
void cdc__vcache_clear(cdc__vcache *c);
uint64_t cdc__vcache_hash(const void *cf, const char *k, size_t kn);
/* Prefetches the bucket of h (entry 0), or its first entry (entry 1). */
void cdc__vcache_prefetch(const cdc__vcache *c, uint64_t h, int entry);
cdc__ventry *cdc__vcache_find(cdc__vcache *c, uint64_t h, const void *cf, const char *k, size_t kn);
const char *cdc__vcache_value(const cdc__ventry *e, size_t *vn);
/* Keeps v as the key's value; e: the key's entry, or NULL when the key is
 * not in the cache (the caller looked it up in this batch: nothing but
 * the key's own put adds it before the batch's trim).  Returns the key's
 * entry now, or NULL when v is too large to keep. */
cdc__ventry *cdc__vcache_put(cdc__vcache *c, cdc__ventry *e, uint64_t h, const void *cf, const char *k, size_t kn,
                     const char *v, size_t vn);
/* Forgets the key; e as for put (NULL: not in the cache, nothing to do). */
void cdc__vcache_del(cdc__vcache *c, const cdc__ventry *e, uint64_t h, const void *cf, const char *k, size_t kn);
/* Evicts entries until the cache is within its budget. */
void cdc__vcache_trim(cdc__vcache *c);
/* Gives st an empty cache of budget bytes (tests: eviction at every batch). */
void cdc__store_set_vcache(cdc_store_t *st, size_t budget);

struct cdc_store {
    char *dir;
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_block_based_table_options_t *topts;
    rocksdb_cache_t *cache;
    rocksdb_readoptions_t *ro;
    rocksdb_writeoptions_t *wo, *wo_sync;
    rocksdb_column_family_handle_t *default_cf, *meta_cf, *dlq_cf;
    rocksdb_column_family_handle_t *rows_cf; /* "rows": prefixed tables; NULL when a read-only
                                              * open finds a replica without it */
    uint32_t next_table_id;              /* the id the next new table gets (1 + the highest) */
    int rows_bloom;                      /* "rows" got its memtable bloom this session */
    uint64_t rows_puts, rows_put_bytes;  /* rows written to "rows" this session, and their key and
                                          * value bytes (cdc__size_rows_buffer) */
    int rows_sized;                      /* "rows" got its write buffer size this session */
    int read_only;
    int noted_writer; /* in store.c's list of this process's writers (writer_holds_lock) */
    uint64_t min_free;                   /* bytes that must stay free (cdc_open_options_t) */
    int broken;                          /* a write failed: in-memory state is not trusted */
    cdc__purge *purge;                   /* the compaction filter's rules and counts (gc.c) */
    cdc__vcache *vc;                     /* recently applied live rows (vcache.c); NULL until the
                                          * first apply */
    rocksdb_writebatch_t *apply_wb;      /* the apply's write batch, emptied, kept for the next
                                          * (apply.c, ctx_init); NULL until the first apply */
    cdc__table **tables;
    size_t ntables;
    uint32_t *tabhash;                   /* open addressing over tables by name: index + 1, 0 empty */
    size_t tabhcap;                      /* slots, a power of two above 2 x ntables */
    cdc__mark *marks;
    size_t nmarks;
    cdc__pos *pos;
    size_t npos;
    cdc__scale *scales;
    size_t nscales;
    uint64_t next_dlq;
    uint64_t run_epoch;                  /* epoch of input without positions, this session */
    uint64_t history;                    /* the line of history (store/changes.c) ... */
    uint64_t stamp;                      /* ... and its newest change stamp */
    cdc_log_fn log;
    void *log_opaque;
    cdc__buf getkey, getval, getkj;             /* cdc_store_get's borrowed result */
    const char **getnames, **getvals;
    size_t *getlens;
    size_t getcap;
};

void cdc__log(cdc_store_t *st, int level, const char *facility, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* -ENOSPC with a message when the replica's filesystem has less than
 * st->min_free bytes free (cdc_open_options_t.min_free_mb); else 0. */
int cdc__space_check(const cdc_store_t *st, const char *unwritten, cdc_error_t *err);

/* Finds a table; with create, creates its column family and metadata. */
int cdc__table_get(cdc_store_t *st, const char *name, int create, cdc__table **out,
                   cdc_error_t *err);
/* Index of column name in t (appending it when new, marking meta dirty). */
size_t cdc__table_col(cdc__table *t, const char *name, size_t len);
/* Records an applied upsert's column set at version ver: present[i] != 0
 * when the change carried column i (t->ncols entries), and the defaults its
 * schema gave (an event row, may be empty).  CDC_ECORRUPT when defaults do
 * not decode. */
int cdc__table_note_columns(cdc__table *t, const cdc__version *ver, const unsigned char *present,
                            const cdc__buf *defaults);
/* The columns the source has now (t->live, t->nlive), rebuilt when needed. */
void cdc__table_live(cdc__table *t);
/* Checks the column types an upsert's schema gave (an event row of type
 * descriptors) at version ver against the types recorded, and records them.
 * NULL when the change is applicable; else why not (a type changed in a way
 * that can change stored values), malloc'd. */
char *cdc__table_check_types(cdc__table *t, const cdc__version *ver, const cdc__buf *types);
/* Adds the table's metadata and counters to wb when dirty. */
void cdc__table_flush(cdc_store_t *st, cdc__table *t, rocksdb_writebatch_t *wb);
/* After a batch's write: once per session, sizes the write buffer of "rows"
 * to the rows the session writes (store.c, "The write buffer"). */
void cdc__size_rows_buffer(cdc_store_t *st);

/* Epoch marks, kept sorted by (topic, partition, offset): the epoch of the
 * last mark of (topic, partition) at or before offset, 0 if none; adding a
 * mark takes topic (a malloc'd string) and replaces the epoch of an equal
 * position. */
uint64_t cdc__mark_at(const cdc_store_t *st, const char *topic, int32_t partition, int64_t offset);
void cdc__mark_add(cdc_store_t *st, char *topic, int32_t partition, int64_t offset, uint64_t epoch);

/* Source positions, kept sorted by (topic, partition): the index of
 * (topic, partition) with *found 1, or where it goes with *found 0; an
 * insertion at that index takes topic (a malloc'd string). */
size_t cdc__pos_find(const cdc_store_t *st, const char *topic, int32_t partition, int *found);
void cdc__pos_insert(cdc_store_t *st, size_t i, char *topic, int32_t partition, int64_t offset, uint64_t fp);

/* Meta keys. */
void cdc__meta_key_pos(cdc__buf *k, const char *topic, int32_t partition);
void cdc__meta_key_mark(cdc__buf *k, const char *topic, int32_t partition, int64_t offset);

/* ---- Change tracking (store/changes.c) ---- */

/* The length of the bucket (a prefix) of an encoded key. */
size_t cdc__change_bucket_len(const char *key, size_t len);
/* The meta key of table t's bucket b[0..n), into k (reset first). */
void cdc__change_bucket_key(cdc__buf *k, const cdc__table *t, const char *b, size_t n);
/* The stamp of the next batch: above every stamp given, and at least the
 * wall clock in microseconds. */
uint64_t cdc__change_stamp_next(const cdc_store_t *st);
/* Adds to wb what a batch of stamp stamp records besides its buckets: the
 * store's stamp and line of history, and for each table the batch touched
 * (its counters are dirty) or changed as a whole (all_pending) its "E"
 * record.  Call before the tables are flushed; updates memory. */
void cdc__changes_commit(cdc_store_t *st, rocksdb_writebatch_t *wb, uint64_t stamp);
/* load_meta's part: the decoding of a table's "E" record and of the
 * store's "N" record.  CDC_ECORRUPT. */
int cdc__changes_load_table(cdc__table *t, const char *v, size_t vl);
int cdc__changes_load_store(cdc_store_t *st, const char *v, size_t vl);
/* After load_meta: which tables were tracked throughout; and, for a
 * writable open, a new line of history, written now.  CDC_EIO. */
int cdc__changes_open(cdc_store_t *st, cdc_error_t *err);
/* The key journal: keys[0..len) (varint length, key bytes, nkeys times),
 * the encoded keys of table t that the batch of stamp stamp wrote, as its
 * seq-th journal record. */
void cdc__journal_put(cdc_store_t *st, rocksdb_writebatch_t *wb, cdc__table *t, uint64_t stamp, uint32_t seq,
                      const char *keys, size_t len, size_t nkeys);
/* load_meta's part: a table's "K" record.  CDC_ECORRUPT. */
int cdc__journal_load_table(cdc__table *t, const char *v, size_t vl);

/* The effective state of a stored value under the table's floor. */
static inline void cdc__apply_floor(const cdc__table *t, cdc__value *v)
{
    if (t->floor_set && cdc__version_cmp(&v->ver, &t->floor) < 0) {
        v->flags |= CDC__F_DELETED;
        v->ver = t->floor;
    }
}

/* The version just below the table's purge horizon (store/gc.c): the
 * horizon is the lowest version an event still to come may have, so a key
 * the purge may have removed was deleted below it, and an event at the
 * horizon itself is newer.  Below a snapshot read's (H, 1, H): the
 * snapshot's floor (H, 0, H); below a change streamed at (e, 2, H): (e, 2,
 * H - 1), an LSN the caller promised no event of. */
static inline cdc__version cdc__below_horizon(const cdc__table *t)
{
    cdc__version v = t->horizon;
    if (v.kind == CDC__KIND_SNAPSHOT) v.kind = CDC__KIND_GAP;
    else if (v.lsn) v.lsn--;
    return v;
}

/* The version a key absent from the table reads as: deleted at the floor or
 * just below the purge horizon, whichever is higher; 0 when neither is set
 * (the key is then unknown, older than everything). */
static inline int cdc__absent_version(const cdc__table *t, cdc__version *v)
{
    int set = 0;
    if (t->floor_set) {
        *v = t->floor;
        set = 1;
    }
    if (t->horizon_set) {
        cdc__version h = cdc__below_horizon(t);
        if (!set || cdc__version_cmp(&h, v) > 0) *v = h;
        set = 1;
    }
    return set;
}

/* Turns a stored row into parallel arrays of the table's columns, by stored
 * column index: a value, or NULL with length 0 for SQL NULL, or NULL with
 * length CDC__ABSENT for a column the row does not hold. */
#define CDC__ABSENT ((size_t)-1)
int cdc__row_columns(const cdc__table *t, const char *row, size_t row_len, const char **vals,
                     size_t *lens, size_t ncap);

#endif
