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
    char *dflt;             /* the default in text form; NULL: SQL NULL (or unknown) */
    char *type;             /* its type as the schemas describe it, NULL before one did */
    cdc__version type_ver;  /* the change from which on it has that type */
} cdc__colmeta;

typedef struct cdc__table {
    char *name;                          /* "schema.table"; "" = records of no known table */
    rocksdb_column_family_handle_t *cf;  /* NULL for "" */
    char **cols;                         /* column names, append-only */
    size_t ncols, capcols;
    cdc__colmeta *colmeta;               /* per column, capcols of them */
    char *stopped;                       /* why no event of the table is applied any more, or NULL */
    cdc__version allseen;                /* the newest applied change that carried every column */
    int has_allseen;
    size_t *live;                        /* indexes of the columns the source has now, in order */
    char **livenames;                    /* their names (borrowed from cols) */
    size_t nlive;
    int live_dirty;                      /* live must be rebuilt (cdc__table_live) */
    uint32_t *colhash;                   /* open addressing over cols: index + 1, 0 empty */
    size_t colhcap;                      /* slots, a power of two above 2 x ncols */
    char **keycols;
    size_t nkey;
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
} cdc__table;

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
} cdc__pos;

typedef struct cdc__scale {
    char *table, *column;
    int scale;
} cdc__scale;

struct cdc_store {
    char *dir;
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_block_based_table_options_t *topts;
    rocksdb_cache_t *cache;
    rocksdb_readoptions_t *ro;
    rocksdb_writeoptions_t *wo, *wo_sync;
    rocksdb_column_family_handle_t *default_cf, *meta_cf, *dlq_cf;
    int read_only;
    uint64_t min_free;                   /* bytes that must stay free (cdc_open_options_t) */
    int broken;                          /* a write failed: in-memory state is not trusted */
    cdc__table **tables;
    size_t ntables;
    cdc__mark *marks;
    size_t nmarks;
    cdc__pos *pos;
    size_t npos;
    cdc__scale *scales;
    size_t nscales;
    uint64_t next_dlq;
    uint64_t run_epoch;                  /* epoch of input without positions, this session */
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
int cdc__space_check(const cdc_store_t *st, cdc_error_t *err);

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

/* Meta keys. */
void cdc__meta_key_pos(cdc__buf *k, const char *topic, int32_t partition);
void cdc__meta_key_mark(cdc__buf *k, const char *topic, int32_t partition, int64_t offset);

/* The effective state of a stored value under the table's floor. */
static inline void cdc__apply_floor(const cdc__table *t, cdc__value *v)
{
    if (t->floor_set && cdc__version_cmp(&v->ver, &t->floor) < 0) {
        v->flags |= CDC__F_DELETED;
        v->ver = t->floor;
    }
}

/* The version a key absent from the table reads as: deleted at the floor or
 * at the purge horizon, whichever is higher; 0 when neither is set (the key
 * is then unknown, older than everything). */
static inline int cdc__absent_version(const cdc__table *t, cdc__version *v)
{
    int set = 0;
    if (t->floor_set) {
        *v = t->floor;
        set = 1;
    }
    if (t->horizon_set && (!set || cdc__version_cmp(&t->horizon, v) > 0)) {
        *v = t->horizon;
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
