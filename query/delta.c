/*
 * delta.c: a table's view exported as a Delta Lake table, and refreshed by
 * the key ranges whose rows changed (cdc_export_delta, include/cdcstore.h).
 *
 * Layout.  DIR/_delta_log/NNNNNNNNNNNNNNNNNNNN.json are the commits, one
 * JSON action per line (the Delta protocol's "Delta Log Entries"); the data
 * files are DIR/part-V-I-R.P.parquet (V the version that added the file, I
 * its index, R random, P the codec), written by parquet.c.  Features used:
 * protocol (reader 1, writer 2; reader 3 and writer 7 with the table feature
 * timestampNtz when a column is a timestamp without time zone), metaData
 * (schemaString, no partition columns, no configuration), add (with stats
 * and tags), remove, commitInfo.  Not used: partitions, checkpoints,
 * deletion vectors, column mapping, change data feed.  No file is ever
 * deleted, so every older version stays readable (time travel); removing
 * files that no version needs any more is VACUUM's job (Spark, deltalake).
 *
 * Types.  Delta's types, from the column's type descriptor: int16 short,
 * int32 integer, int64 long, float32 float, float64 double, boolean,
 * string, bytes binary, decimal:S:P decimal(P,S) (P <= 38; without P, 38;
 * beyond 38, string), Date date, MicroTimestamp/Timestamp timestamp_ntz,
 * ZonedTimestamp timestamp.  Delta has no time, uuid or json type: those
 * columns, unconstrained NUMERIC and columns of no known type are strings
 * holding PostgreSQL's text, and the Parquet files are written with the same
 * mapping (parquet.c is handed "string" for them).
 *
 * Key ranges.  Each data file holds one key range [lower, upper) of the
 * table, in key order; the ranges of the active files are contiguous and
 * cover every key (the first lower and the last upper are open).  Each add
 * action records in its tags (strings, as Delta wants them):
 * cdcstore.lower (cdcstore.dvlower in a table with deletion vectors) and
 * cdcstore.upper (the encoded keys in hex, "" when
 * open), cdcstore.rows and cdcstore.hash (the sum modulo 2^64 of the rows'
 * lookup3 hashes, cdc_row_hash, in hex).  The hash is summed from the very
 * rows written to the file, so it always describes the file, whatever the
 * replica did meanwhile.
 *
 * Refresh.  An export into a table this file wrote replays the log (the
 * active files and their tags, the last metaData and protocol, and the
 * replica's point the last commit recorded), finds the ranges whose rows
 * changed, and rewrites those: a changed range's file is removed and the
 * range's rows written to new files (cut every file_rows rows, so a range
 * that grew is split); the others are kept.  All of it is one commit.  When
 * the columns or their types differ from the last metaData's schema, every
 * file is rewritten and the commit carries the new metaData (what Spark's
 * overwriteSchema does).
 *
 * Which ranges changed.  Every commit records the replica's point
 * (cdc_store_change_point: a line of the replica's history and a stamp) in
 * its commitInfo's operationParameters, cdcstore.history and cdcstore.stamp,
 * read before any row, so that a change racing the export's reads has a
 * later stamp and is seen again next time.  A refresh asks the replica for
 * the key ranges changed since that point (cdc_store_changed_since; the
 * store tracks them at apply time, store/changes.c) and compares them with
 * the files' ranges, knowing nothing of how the ranges are made:
 *  - a file that reaches across a bound of a changed range is rewritten
 *    without being read: it holds every key of the range on that side, and
 *    a range is small (65,536 integers) against a file of 100,000 rows or
 *    more, so it changed as a rule;
 *  - a file inside a changed range (small files, or a coarse range of text
 *    keys) may hold none of its changed keys: its rows are hashed first, as
 *    below, and it is rewritten only when they differ;
 *  - every other file is kept, unread.
 * So a refresh after 1% of the rows changed in one key range reads and
 * writes about that range (the files it touches), not the table.  When the
 * replica cannot say (no point in the log: a table written by a build
 * before this; a point of another replica, or of a copy of this one that
 * went its own way; a roll-back of the replica past it; batches of a build
 * without change tracking; a change of a column's default, which every row
 * may show), the refresh scans the replica once, summing each range's row
 * hashes, and rewrites the ranges whose hash or row count differs from its
 * file's tags: a read of the whole table.  Either way the tags of a new file
 * are summed from the rows written to it, so they always describe the file.
 *
 * Measured on 10,000,000 rows (tests/query/bench.sh, QUERY_BENCH_ONLY=delta;
 * 2 cores shared with other work): after 1% of the rows changed in one key
 * range, the refresh took 1.42 s against 10.73 s for a full export (x0.13:
 * the one file of 1,000,000 rows that changed is a tenth of the table) and
 * 0.57 s against 12.06 s with file_rows 100,000 (x0.047); the hashing scan
 * alone took x0.56 to x0.58 of a full export.  After 1% changed at random
 * keys every range changes, and the refresh writes the table anew without
 * the scan (x0.93 to x1.0, against x1.24 to x1.61 with it).  Hence the
 * default file_rows of 250,000: at 1,000,000 a file is a tenth of such a
 * table and a refresh cannot go under x0.1 (x0.170 measured again), at
 * 250,000 it took 0.91 s against 12.54 s (x0.073, 2 of 40 files), with files
 * of about 2 MB each on that table's ~100-byte rows.
 *
 * Atomicity.  Data files are written and fsync'd first, under names no
 * commit refers to yet; the commit is written to a temporary file, fsync'd,
 * then link(2)ed to its version's name, which fails when another writer took
 * that version (Delta's put-if-absent on a local file system), and the log
 * directory fsync'd.  A crash before the link leaves only unreferenced files;
 * readers see the previous version until the link is there.
 *
 * The log is read with a reader for the lines this file writes; a commit
 * whose commitInfo is not cdcstore's and that adds, removes or changes
 * anything (another writer changed the table: OPTIMIZE, a MERGE) is refused
 * with an error, since the ranges could no longer be trusted: export to a
 * new directory instead.  Another writer's maintenance is not a change:
 * VACUUM's commits hold a commitInfo alone, and a checkpoint repeats the
 * commits before it (they are read instead, and must all be there).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "dv.h"
#include "parquet.h"
#include "query.h"

#define ENGINE "cdcstore"

/* ---- Small helpers ---- */

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void put_hex(cdc__buf *b, const char *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    cdc__buf_reserve(b, 2 * n);
    for (size_t i = 0; i < n; i++) {
        b->p[b->len++] = hx[(unsigned char)p[i] >> 4];
        b->p[b->len++] = hx[(unsigned char)p[i] & 15];
    }
}

static int get_hex(const char *s, size_t n, cdc__buf *out)
{
    if (n % 2) return -1;
    for (size_t i = 0; i < n; i += 2) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            char c = s[i + k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) return -1;
            v = v * 16 + d;
        }
        cdc__buf_putc(out, (char)v);
    }
    return 0;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int rc = fsync(fd) ? -errno : 0;
    close(fd);
    return rc;
}

/* Reads a whole file into b (reset first).  0, -errno. */
static int read_file(const char *path, cdc__buf *b)
{
    cdc__buf_reset(b);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    for (;;) {
        cdc__buf_reserve(b, 1 << 16);
        ssize_t n = read(fd, b->p + b->len, b->cap - b->len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = -errno;
            close(fd);
            return e;
        }
        if (n == 0) break;
        b->len += (size_t)n;
    }
    close(fd);
    cdc__buf_putc(b, 0);
    b->len--;
    return 0;
}

/* The string value of the member whose name (with its quotes and colon,
 * "\"path\":") first follows p on this line, unescaped into out (reset
 * first).  1 found, 0 not.  A needle cannot match inside a JSON string: its
 * quotes would be escaped there. */
static int member_string(const char *p, const char *eol, const char *needle, cdc__buf *out)
{
    size_t nl = strlen(needle);
    cdc__buf_reset(out);
    for (const char *q = p; q + nl <= eol; q++) {
        q = memchr(q, needle[0], (size_t)(eol - q));
        if (!q || q + nl > eol) return 0;
        if (memcmp(q, needle, nl)) continue;
        const char *v = q + nl;
        if (v >= eol || *v != '"') return 0;
        if (!cdc__json_read_string(v, eol, out)) return 0;
        cdc__buf_putc(out, 0);
        out->len--;
        return 1;
    }
    return 0;
}

/* The unsigned number of the member named by needle ("\"size\":"). */
static int member_u64(const char *p, const char *eol, const char *needle, uint64_t *v)
{
    const char *q = memmem(p, (size_t)(eol - p), needle, strlen(needle));
    if (!q) return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(q + strlen(needle), &end, 10);
    if (errno || end == q + strlen(needle)) return 0;
    *v = x;
    return 1;
}

/* ---- The table as the log says it is ---- */

typedef struct dfile {
    char *path;
    uint64_t size, rows, hash;
    cdc__buf lower, upper;  /* encoded keys; empty = open */
    char *stats;            /* the add action's stats, JSON text */
    int changed;            /* refresh: its range's rows differ */
    int maybe;              /* refresh: they may differ: to be hashed */
    uint64_t now_rows, now_hash;
    /* Deletion vectors ("Deletion vectors" below): */
    int patch;              /* a refresh's file of changed rows (tag cdcstore.patch) */
    int has_dv;             /* the add carries a deletion vector, dv */
    cdc__dv_desc dv;
    uint64_t *del;          /* refresh: its deleted rows (read from dv), ascending */
    size_t ndel;
    int del_loaded;
    uint64_t *mark;         /* refresh: rows this refresh deletes, ascending */
    size_t nmark, capmark;
    cdc__keyidx keys;       /* refresh: its keys (keyidx.c), once loaded */
    int keys_loaded;
    cdc__dv_desc newdv;     /* refresh: the vector of del and mark together */
} dfile;

typedef struct dlog {
    int64_t version;        /* the newest commit, -1 when there is no table */
    int has_point;          /* the newest commit recorded the replica's point ... */
    cdc_change_point_t point; /* ... as of its read (cdc_store_change_point) */
    char *table_id;
    char *table;            /* the replica's table the newest commit holds (cdcstore.table), or NULL */
    char *schema;           /* the last metaData's schemaString */
    char *protocol;         /* the last protocol action, as its line */
    int dv_config;          /* the last metaData set delta.enableDeletionVectors */
    uint64_t file_rows;     /* the newest commit's rows per file (cdcstore.fileRows), 0: not said */
    int64_t created_ms;
    dfile *f;
    size_t n, cap;
} dlog;

static void dfile_free(dfile *f)
{
    free(f->path);
    free(f->stats);
    free(f->del);
    free(f->mark);
    if (f->keys_loaded) cdc__keyidx_free(&f->keys);
    cdc__buf_free(&f->lower);
    cdc__buf_free(&f->upper);
}

static void dlog_free(dlog *l)
{
    for (size_t i = 0; i < l->n; i++) dfile_free(&l->f[i]);
    free(l->f);
    free(l->table_id);
    free(l->table);
    free(l->schema);
    free(l->protocol);
    memset(l, 0, sizeof *l);
}

static int cmp_files(const void *a, const void *b)
{
    const dfile *x = a, *y = b;
    /* open lowers first */
    if (!x->lower.len || !y->lower.len) return (int)!!x->lower.len - (int)!!y->lower.len;
    size_t n = x->lower.len < y->lower.len ? x->lower.len : y->lower.len;
    int c = memcmp(x->lower.p, y->lower.p, n);
    return c ? c : (x->lower.len > y->lower.len) - (x->lower.len < y->lower.len);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Applies one commit's lines to l. */
static int dlog_commit(dlog *l, const char *path, const char *text, size_t len, cdc_error_t *err)
{
    cdc__buf s = {0};
    int rc = 0, ours = 0, changes = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        if (eol - p > 12 && !memcmp(p, "{\"commitInfo\"", 13)) {
            ours = member_string(p, eol, "\"engineInfo\":", &s) && !strncmp(s.p, ENGINE, strlen(ENGINE));
            if (!ours) { /* another writer's: judged by its actions, below */
                p = eol + 1;
                continue;
            }
            free(l->table);
            l->table = member_string(p, eol, "\"cdcstore.table\":", &s) ? cdc__strdup(s.p) : NULL;
            /* every commit says its point, or has none (a build before change tracking) */
            l->file_rows = 0;
            if (member_string(p, eol, "\"cdcstore.fileRows\":", &s)) {
                unsigned long long fr = 0;
                if (sscanf(s.p, "%llu", &fr) == 1) l->file_rows = fr;
            }
            l->has_point = member_string(p, eol, "\"cdcstore.history\":", &s) &&
                           sscanf(s.p, "%" SCNx64, &l->point.history) == 1 &&
                           member_string(p, eol, "\"cdcstore.stamp\":", &s) &&
                           sscanf(s.p, "%" SCNu64, &l->point.stamp) == 1;
        } else if (eol - p > 10 && !memcmp(p, "{\"protocol\"", 11)) {
            changes++;
            free(l->protocol);
            l->protocol = cdc__strndup(p, (size_t)(eol - p));
        } else if (eol - p > 10 && !memcmp(p, "{\"metaData\"", 11)) {
            changes++;
            if (member_string(p, eol, "\"schemaString\":", &s)) {
                free(l->schema);
                l->schema = cdc__strdup(s.p);
            }
            if (member_string(p, eol, "\"id\":", &s)) {
                free(l->table_id);
                l->table_id = cdc__strdup(s.p);
            }
            uint64_t ct;
            if (member_u64(p, eol, "\"createdTime\":", &ct)) l->created_ms = (int64_t)ct;
            l->dv_config = memmem(p, (size_t)(eol - p), "\"delta.enableDeletionVectors\":\"true\"", 36) != NULL;
        } else if (eol - p > 5 && !memcmp(p, "{\"add\"", 6)) {
            changes++;
            dfile f = {0};
            cdc__buf hx = {0};
            int ok = member_string(p, eol, "\"path\":", &s);
            if (ok) f.path = cdc__strdup(s.p);
            ok = ok && member_u64(p, eol, "\"size\":", &f.size);
            /* a table with deletion vectors names its lower bound cdcstore.dvlower:
             * builds before vectors require cdcstore.lower, and so refuse
             * such a table rather than refresh it without its vectors */
            ok = ok &&
                 (member_string(p, eol, "\"cdcstore.lower\":", &hx) ||
                  member_string(p, eol, "\"cdcstore.dvlower\":", &hx)) &&
                 !get_hex(hx.p, hx.len, &f.lower);
            ok = ok && member_string(p, eol, "\"cdcstore.upper\":", &hx) && !get_hex(hx.p, hx.len, &f.upper);
            ok = ok && member_string(p, eol, "\"cdcstore.rows\":", &hx) && sscanf(hx.p, "%" SCNu64, &f.rows) == 1;
            ok = ok && member_string(p, eol, "\"cdcstore.hash\":", &hx) && sscanf(hx.p, "%" SCNx64, &f.hash) == 1;
            if (ok && member_string(p, eol, "\"stats\":", &s)) f.stats = cdc__strdup(s.p);
            f.patch = ok && member_string(p, eol, "\"cdcstore.patch\":", &hx) && !strcmp(hx.p, "1");
            if (ok && memmem(p, (size_t)(eol - p), "\"deletionVector\":{", 18)) {
                /* one this file writes: a vector in a file ("u"), no prefix */
                uint64_t off = 0, size = 0, card = 0;
                ok = member_string(p, eol, "\"storageType\":", &hx) && !strcmp(hx.p, "u") &&
                     member_string(p, eol, "\"pathOrInlineDv\":", &hx) && hx.len < sizeof f.dv.path &&
                     member_u64(p, eol, "\"offset\":", &off) && member_u64(p, eol, "\"sizeInBytes\":", &size) &&
                     size <= UINT32_MAX && member_u64(p, eol, "\"cardinality\":", &card);
                if (ok) {
                    snprintf(f.dv.path, sizeof f.dv.path, "%s", hx.p);
                    f.dv.offset = off;
                    f.dv.size = (uint32_t)size;
                    f.dv.cardinality = card;
                    f.has_dv = 1;
                }
            }
            cdc__buf_free(&hx);
            if (!ok) {
                dfile_free(&f);
                rc = cdc__err(err, CDC_EINVAL,
                              "%s: an add action without cdcstore's key range tags: the table was changed by "
                              "another writer; export to a new directory",
                              path);
                break;
            }
            if (l->n == l->cap) {
                l->cap = l->cap ? 2 * l->cap : 64;
                l->f = cdc__realloc(l->f, l->cap * sizeof *l->f);
            }
            l->f[l->n++] = f;
        } else if (eol - p > 8 && !memcmp(p, "{\"remove\"", 9)) {
            changes++;
            if (member_string(p, eol, "\"path\":", &s))
                for (size_t i = 0; i < l->n; i++)
                    if (!strcmp(l->f[i].path, s.p)) {
                        dfile_free(&l->f[i]);
                        l->f[i] = l->f[--l->n];
                        break;
                    }
        } else if (eol > p) {
            changes++; /* any other action (txn, domainMetadata, cdc, one of a later protocol) */
        }
        p = eol + 1;
    }
    /* Another writer's commit that holds a commitInfo alone (VACUUM's
     * "VACUUM START" and "VACUUM END") leaves the table as cdcstore wrote
     * it: refreshes go on.  Any other action of another writer is a change. */
    if (!rc && !ours && changes)
        rc = cdc__err(err, CDC_EINVAL,
                      "%s: a commit cdcstore did not write: the table was changed by another writer; export to "
                      "a new directory",
                      path);
    cdc__buf_free(&s);
    return rc;
}

/* Reads dir/_delta_log.  l->version -1 when there is no log. */
static int dlog_read(const char *dir, dlog *l, cdc_error_t *err)
{
    memset(l, 0, sizeof *l);
    l->version = -1;
    char *logdir = NULL;
    if (asprintf(&logdir, "%s/_delta_log", dir) < 0) return CDC_ENOMEM;
    DIR *d = opendir(logdir);
    if (!d) {
        int e = errno;
        free(logdir);
        if (e == ENOENT) return 0;
        return cdc__err(err, -e, "%s/_delta_log: %s", dir, strerror(e));
    }
    int64_t *vers = NULL;
    size_t nv = 0, cap = 0, checkpoints = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        size_t len = strlen(nm);
        if (nm[0] == '.') continue;
        /* Checkpoints (Spark's, deltalake's create_checkpoint) repeat the
         * commits before them in Parquet: the commits are read instead, as
         * long as every one is still there (below). */
        if (strstr(nm, "checkpoint")) {
            checkpoints++;
            continue;
        }
        if (len != 25 || strcmp(nm + 20, ".json") || strspn(nm, "0123456789") != 20) continue;
        if (nv == cap) {
            cap = cap ? 2 * cap : 64;
            vers = cdc__realloc(vers, cap * sizeof *vers);
        }
        vers[nv++] = strtoll(nm, NULL, 10);
    }
    closedir(d);
    if (!rc && nv) qsort(vers, nv, sizeof *vers, cmp_i64);
    cdc__buf text = {0};
    for (size_t i = 0; !rc && i < nv; i++) {
        char path[4200];
        if (vers[i] != (int64_t)i) {
            rc = cdc__err(err, CDC_EINVAL, "%s: version %lld is missing%s", logdir, (long long)i,
                          checkpoints ? " (removed after a checkpoint, which cdcstore does not read: export to a "
                                        "new directory)"
                                      : "");
            break;
        }
        snprintf(path, sizeof path, "%s/%020lld.json", logdir, (long long)vers[i]);
        if ((rc = read_file(path, &text))) {
            rc = cdc__err(err, rc, "%s: %s", path, strerror(-rc));
            break;
        }
        rc = dlog_commit(l, path, text.p, text.len, err);
        l->version = vers[i];
    }
    cdc__buf_free(&text);
    free(vers);
    free(logdir);
    if (!rc && l->version >= 0 && (!l->schema || !l->table_id))
        rc = cdc__err(err, CDC_EINVAL, "%s: the log has no metaData", dir);
    if (!rc && l->n) qsort(l->f, l->n, sizeof *l->f, cmp_files);
    if (rc) dlog_free(l);
    return rc;
}

/* ---- Schema ---- */

/* The Delta type of a descriptor, and the descriptor parquet.c is handed
 * for the column (the same, or "string" where Delta has no such type). */
static const char *delta_type(const char *ty, char *dec, size_t decsz, const char **pqtype)
{
    *pqtype = "string";
    if (!ty) return "string";
    static const struct { const char *desc, *delta; } map[] = {
        {"int8", "byte"},
        {"int16", "short"},
        {"int32", "integer"},
        {"int64", "long"},
        {"float32", "float"},
        {"float64", "double"},
        {"float", "float"}, /* JsonConverter's names of float32 and float64 */
        {"double", "double"},
        {"boolean", "boolean"},
        {"string", "string"},
        {"bytes", "binary"},
        {"int32/io.debezium.time.Date", "date"},
        {"int32/org.apache.kafka.connect.data.Date", "date"},
        {"int64/io.debezium.time.MicroTimestamp", "timestamp_ntz"},
        {"int64/io.debezium.time.Timestamp", "timestamp_ntz"},
        {"int64/org.apache.kafka.connect.data.Timestamp", "timestamp_ntz"},
        {"string/io.debezium.time.ZonedTimestamp", "timestamp"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(ty, map[i].desc)) {
            *pqtype = ty;
            return map[i].delta;
        }
    int s, p = 38, n = 0;
    if (sscanf(ty, "decimal:%d%n", &s, &n) == 1 && (ty[n] == 0 || sscanf(ty + n, ":%d", &p) == 1) && s >= 0 &&
        p >= 1 && p <= 38 && s <= p) {
        snprintf(dec, decsz, "decimal(%d,%d)", p, s);
        *pqtype = ty;
        return dec;
    }
    return "string";
}

/* The table's schemaString (unescaped JSON) and the descriptors for
 * parquet.c; *ntz set when a column is timestamp_ntz. */
static void make_schema(const char *const *names, const char *const *types, size_t n, cdc__buf *schema,
                        const char **pqtypes, int *ntz)
{
    cdc__buf_puts(schema, "{\"type\":\"struct\",\"fields\":[");
    *ntz = 0;
    for (size_t i = 0; i < n; i++) {
        char dec[32];
        const char *dt = delta_type(types ? types[i] : NULL, dec, sizeof dec, &pqtypes[i]);
        if (!strcmp(dt, "timestamp_ntz")) *ntz = 1;
        if (i) cdc__buf_putc(schema, ',');
        cdc__buf_puts(schema, "{\"name\":");
        cdc__json_put_string(schema, names[i], strlen(names[i]));
        cdc__buf_printf(schema, ",\"type\":\"%s\",\"nullable\":true,\"metadata\":{}}", dt);
    }
    cdc__buf_puts(schema, "]}");
    cdc__buf_putc(schema, 0); /* a C string, compared with the log's */
    schema->len--;
}

/* ---- Writing data files ---- */

typedef struct added {
    char *path;
    uint64_t size, rows, hash;
    cdc__buf lower, upper;
    cdc__buf stats;
    int patch;              /* a file of changed rows (deletion vectors) */
    int dv;                 /* a file of a table with deletion vectors (its tags say so) */
} added;

typedef struct writer {
    cdc_store_t *st;
    const char *table, *dir;
    const cdc_export_options_t *opts;
    const char *const *names;
    const char **pqtypes;
    size_t ncols;
    int64_t version;
    uint64_t file_rows;
    _Atomic size_t *nfiles; /* files named so far, by every writer: their index */
    _Atomic uint64_t *rows_shared; /* rows written by every writer, for progress */
    _Atomic uint64_t *bytes_shared; /* and their bytes */
    int progress;           /* 1: this writer calls opts->progress (one writer only) */
    uint64_t reported;      /* rows at its last call, in 100,000s */
    _Atomic int *stop;      /* set when a writer failed: the others give up (NULL: none) */
    added *a;
    size_t na, cap;
    uint64_t rows_done;     /* by this writer */
    uint64_t bytes;
    int keys;               /* 1: each file's keys go to _cdcstore/<file>.keys (keyidx.c) */
    int patch;              /* 1: the files are of changed rows */
    /* the file being written */
    cdc__keyidx_w kw;
    cdc__pq *pq;
    int fd;
    cdc__buf out;
    uint64_t off;
    added *cur;
} writer;

static const char *codec_ext(int c)
{
    return c == CDC_COMPRESS_SNAPPY ? "snappy" : c == CDC_COMPRESS_NONE ? "uncompressed" : "zstd";
}

static int file_open(writer *w, const char *lower, size_t lower_len, cdc_error_t *err)
{
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd) rnd = (uint32_t)now_ms() ^ (uint32_t)getpid();
    if (w->na == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->a = cdc__realloc(w->a, w->cap * sizeof *w->a);
    }
    added *a = &w->a[w->na++];
    memset(a, 0, sizeof *a);
    size_t index = atomic_fetch_add(w->nfiles, 1);
    if (asprintf(&a->path, "part-%05lld-%05zu-%08x.%s.parquet", (long long)w->version, index, rnd,
                 codec_ext(w->opts->compression)) < 0)
        abort();
    cdc__buf_put(&a->lower, lower, lower_len);
    char full[4400];
    snprintf(full, sizeof full, "%s/%s", w->dir, a->path);
    w->fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) return cdc__err(err, -errno, "%s: %s", full, strerror(errno));
    cdc__pq_options o = {.row_group_rows = w->opts->row_group_rows, .compression = w->opts->compression};
    int rc = cdc__pq_open(w->names, w->pqtypes, w->ncols, &o, &w->pq, err);
    w->off = 0;
    w->cur = a;
    a->patch = w->patch;
    a->dv = w->keys;
    cdc__keyidx_w_free(&w->kw);
    return rc;
}

static int file_flush(writer *w, cdc_error_t *err)
{
    if (!w->out.len) return 0;
    int rc = cdc__write_all(w->fd, w->out.p, w->out.len, -1);
    if (rc) return cdc__err(err, rc, "%s/%s: %s", w->dir, w->cur->path, strerror(-rc));
    w->off += w->out.len;
    w->bytes += w->out.len;
    atomic_fetch_add(w->bytes_shared, w->out.len);
    w->out.len = 0;
    return 0;
}

/* Ends the file being written; upper is its range's end (empty: open). */
static int file_close(writer *w, const char *upper, size_t upper_len, cdc_error_t *err)
{
    added *a = w->cur;
    int rc = cdc__pq_end(w->pq, &w->out, w->off, err);
    if (!rc) rc = file_flush(w, err);
    if (!rc && fsync(w->fd)) rc = cdc__err(err, -errno, "%s/%s: fsync: %s", w->dir, a->path, strerror(errno));
    close(w->fd);
    w->fd = -1;
    if (!rc) {
        a->size = w->off;
        a->rows = cdc__pq_rows(w->pq);
        cdc__pq_stats_json(w->pq, &a->stats);
        cdc__buf_put(&a->upper, upper, upper_len);
    }
    if (!rc && w->keys) {
        char kp[4500];
        snprintf(kp, sizeof kp, "%s/_cdcstore/%s.keys", w->dir, a->path);
        rc = cdc__keyidx_write(&w->kw, kp, err);
    }
    cdc__keyidx_w_free(&w->kw);
    cdc__pq_free(w->pq);
    w->pq = NULL;
    w->cur = NULL;
    return rc;
}

/* Writes the rows of [lo, hi) (encoded keys; empty = open) to new files of
 * at most file_rows rows each. */
/* An iterator over the rows of [lo, hi) (encoded keys; empty = open). */
static int range_iter(cdc_store_t *st, const char *table, const cdc__buf *lo, const cdc__buf *hi, cdc_iter_t **it,
                      cdc_error_t *err)
{
    cdc__buf lj = {0}, hj = {0};
    cdc_iter_options_t io = {.no_key_json = 1}; /* formatted only for an error */
    int rc = 0;
    if (lo->len && !(rc = cdc__key_json_array(lo->p, lo->len, &lj))) io.lower_json = lj.p;
    if (!rc && hi->len && !(rc = cdc__key_json_array(hi->p, hi->len, &hj))) io.upper_json = hj.p;
    if (rc) rc = cdc__err(err, rc, "a range bound does not decode");
    else rc = cdc_iter_open(st, table, &io, it, err);
    cdc__buf_free(&lj);
    cdc__buf_free(&hj);
    return rc;
}

/* Calls opts->progress when the rows of every writer have passed another
 * 100,000 since the last call (the one writer with progress set calls it,
 * so the callback is never entered from two threads). */
static void report_progress(writer *w)
{
    if (!w->progress || !w->opts->progress) return;
    uint64_t all = atomic_load(w->rows_shared);
    if (all / 100000 == w->reported) return;
    w->reported = all / 100000;
    w->opts->progress(w->opts->progress_opaque, all, atomic_load(w->bytes_shared));
}

static int write_range(writer *w, const cdc__buf *lo, const cdc__buf *hi, cdc_error_t *err)
{
    cdc__buf scratch = {0};
    int rc = 0;
    cdc_iter_t *it;
    if ((rc = range_iter(w->st, w->table, lo, hi, &it, err))) goto done;
    if ((rc = file_open(w, lo->p, lo->len, err))) goto closeit;
    cdc_row_t row;
    uint64_t in_file = 0;
    while ((rc = cdc_iter_next(it, &row, err)) == 1) {
        if (w->stop && atomic_load_explicit(w->stop, memory_order_relaxed)) {
            rc = -ECANCELED; /* the other writer failed: its error is the export's */
            break;
        }
        if (in_file >= w->file_rows) {
            if ((rc = file_close(w, row.key, row.key_len, err)) || (rc = file_open(w, row.key, row.key_len, err)))
                break;
            in_file = 0;
        }
        if ((rc = cdc__pq_row(w->pq, row.values, row.lens, &w->out, w->off, err))) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            const char *kj = cdc_iter_key_json(it);
            rc = cdc__err(err, rc, "export of %s: key %s: %s", w->table, kj ? kj : "(does not decode)", msg);
            break;
        }
        w->cur->hash += cdc__row_hash(row.values, row.lens, NULL, row.ncols, CDC_HASH_LOOKUP3, &scratch);
        if (w->keys) cdc__keyidx_add(&w->kw, row.key, row.key_len);
        in_file++;
        if (w->out.len >= (1u << 20) && (rc = file_flush(w, err))) break;
        if (++w->rows_done % 10000 == 0) {
            atomic_fetch_add(w->rows_shared, 10000);
            report_progress(w);
        }
    }
    if (rc == 0) rc = file_close(w, hi->p, hi->len, err);
    else if (rc < 0 && w->pq) {
        close(w->fd);
        cdc__pq_free(w->pq);
        w->pq = NULL;
    }
closeit:
    cdc_iter_close(it);
done:
    cdc__buf_free(&scratch);
    return rc;
}

/* ---- Writers on both cores ----
 *
 * Writing a file (reading its rows, encoding Parquet, hashing them for the
 * tags) is what an export spends its time on, and files are independent:
 * each holds its own key range.  So the ranges to write are shared between
 * two writers, each on its own thread with its own iterator, Parquet context
 * and files: a full export of a large table is cut in two at the middle of
 * its key span (cdc__export_split: a single integer key, 1,000,000 rows or
 * more; the two halves meet at the middle key, so the ranges stay
 * contiguous), and a refresh hands its changed ranges out in turn.  The
 * files of both are then listed in key order, as one writer would have
 * written them.  CDC_EXPORT_THREADS=1 keeps one writer; =2 splits even a
 * small table (tests).  Measured on tests/query/bench.sh's 10,000,000 rows:
 * see README.md ("Analytics exports"). */

typedef struct job {
    const cdc__buf *lo, *hi;
} job;

typedef struct worker {
    writer w;
    const job *jobs;
    size_t njobs, first, step; /* jobs first, first + step, ... */
    int rc;
    cdc_error_t err;
} worker;

static void *worker_main(void *arg)
{
    worker *k = arg;
    for (size_t j = k->first; j < k->njobs && !k->rc && !atomic_load(k->w.stop); j += k->step)
        k->rc = write_range(&k->w, k->jobs[j].lo, k->jobs[j].hi, &k->err);
    if (k->rc) atomic_store(k->w.stop, 1);
    return NULL;
}

/* Files in key order (by their range's lower bound; the open one first). */
static int cmp_added(const void *a, const void *b)
{
    const added *x = a, *y = b;
    return cdc__key_cmp(x->lower.p, x->lower.len, y->lower.p, y->lower.len);
}

/* Writes the ranges of jobs with one writer, or two when threads says so,
 * and leaves every file written (also on failure, for the caller to remove)
 * in w's list, in key order.  0, or the first failure in err. */
static int write_jobs(writer *w, const job *jobs, size_t njobs, int threads, cdc_error_t *err)
{
    if (threads < 2 || njobs < 2) {
        int rc = 0;
        for (size_t j = 0; j < njobs && !rc; j++) rc = write_range(w, jobs[j].lo, jobs[j].hi, err);
        return rc;
    }
    worker k[2];
    _Atomic int stop = 0;
    for (int i = 0; i < 2; i++) {
        k[i] = (worker){.w = *w, .jobs = jobs, .njobs = njobs, .first = (size_t)i, .step = 2};
        k[i].w.a = NULL;
        k[i].w.na = k[i].w.cap = 0;
        k[i].w.out = (cdc__buf){0};
        k[i].w.kw = (cdc__keyidx_w){0};
        k[i].w.progress = w->progress && i == 0;
        k[i].w.stop = &stop;
    }
    pthread_t th;
    int started = pthread_create(&th, NULL, worker_main, &k[1]) == 0;
    if (!started) k[0].step = 1; /* no second thread: this one takes every job */
    worker_main(&k[0]);
    /* this thread keeps the progress going while the other finishes */
    while (started && pthread_tryjoin_np(th, NULL) == EBUSY) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        report_progress(&k[0].w);
    }
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        /* the failure, not the other writer's giving up after it */
        if ((!rc || rc == -ECANCELED) && k[i].rc) {
            rc = k[i].rc;
            *err = k[i].err;
        }
        for (size_t f = 0; f < k[i].w.na; f++) {
            if (w->na == w->cap) {
                w->cap = w->cap ? 2 * w->cap : 16;
                w->a = cdc__realloc(w->a, w->cap * sizeof *w->a);
            }
            w->a[w->na++] = k[i].w.a[f];
        }
        free(k[i].w.a);
        cdc__buf_free(&k[i].w.out);
        cdc__keyidx_w_free(&k[i].w.kw);
        w->bytes += k[i].w.bytes;
    }
    qsort(w->a, w->na, sizeof *w->a, cmp_added);
    return rc;
}

/* ---- The refresh scan ---- */

/* Sums the ranges of active files i0 .. i1 - 1 (contiguous) of rows as the
 * replica holds them now, in one pass in key order. */
static int scan_ranges(cdc_store_t *st, const char *table, dlog *l, size_t i0, size_t i1, uint64_t *read,
                       cdc_error_t *err)
{
    cdc_iter_t *it;
    int rc = range_iter(st, table, &l->f[i0].lower, &l->f[i1 - 1].upper, &it, err);
    if (rc) return rc;
    cdc_row_t row;
    cdc__buf scratch = {0};
    size_t i = i0;
    for (size_t k = i0; k < i1; k++) l->f[k].now_rows = l->f[k].now_hash = 0;
    while ((rc = cdc_iter_next(it, &row, err)) == 1) {
        /* the file whose range holds the key: the last one whose lower is <= key */
        while (i + 1 < i1) {
            const cdc__buf *nx = &l->f[i + 1].lower;
            size_t m = nx->len < row.key_len ? nx->len : row.key_len;
            int c = memcmp(row.key, nx->p, m);
            if (c < 0 || (c == 0 && row.key_len < nx->len)) break;
            i++;
        }
        l->f[i].now_rows++;
        (*read)++;
        l->f[i].now_hash += cdc__row_hash(row.values, row.lens, NULL, row.ncols, CDC_HASH_LOOKUP3, &scratch);
    }
    if (rc == 1) rc = 0;
    cdc__buf_free(&scratch);
    cdc_iter_close(it);
    return rc;
}

/* cdc_store_changed_since's callback: marks the files (sorted, contiguous,
 * covering every key: ranges_cover) whose range overlaps [lo, hi). */
static int mark_range(void *opaque, const char *lo, size_t lol, const char *hi, size_t hil)
{
    dlog *l = opaque;
    /* the file holding lo: the last one whose lower is <= lo (the first
     * lower is open) */
    size_t a = 0, b = l->n;
    while (b - a > 1) {
        size_t m = a + (b - a) / 2;
        if (cdc__key_cmp(l->f[m].lower.p, l->f[m].lower.len, lo, lol) <= 0) a = m;
        else b = m;
    }
    for (size_t i = a; i < l->n; i++) {
        dfile *f = &l->f[i];
        if (i > a && hil && cdc__key_cmp(f->lower.p, f->lower.len, hi, hil) >= 0) break;
        /* A file inside the range (an open bound of the first or last file
         * counts as inside: its rows may start or end anywhere) may hold
         * none of its changed keys: it is hashed first.  A file across a
         * bound of the range is wider than it and holds all the range's keys
         * on that side, changed ones as a rule: it is rewritten unread. */
        int inside = (!f->lower.len || cdc__key_cmp(f->lower.p, f->lower.len, lo, lol) >= 0) &&
                     (!f->upper.len || !hil || cdc__key_cmp(f->upper.p, f->upper.len, hi, hil) <= 0);
        if (inside) f->maybe = 1;
        else f->changed = 1;
    }
    return 0;
}

/* 1 when the active files' ranges are contiguous and cover every key
 * (the files of changed rows of a table with deletion vectors aside). */
static int ranges_cover(const dlog *l)
{
    const dfile *prev = NULL;
    for (size_t i = 0; i < l->n; i++) {
        const dfile *f = &l->f[i];
        if (f->patch) continue;
        if (!prev && f->lower.len) return 0;
        if (prev && (!prev->upper.len || prev->upper.len != f->lower.len ||
                     memcmp(prev->upper.p, f->lower.p, f->lower.len)))
            return 0;
        prev = f;
    }
    return prev && !prev->upper.len;
}

/* ---- Deletion vectors ----
 *
 * After 1% of a table's rows changed at random keys, every file holds some
 * of them: a refresh that rewrites changed files rewrites the table (x1.05
 * of a full export, measured).  A table exported with deletion vectors
 * (cdc_export_options_t.deletion_vectors; the protocol's "deletionVectors"
 * feature, reader 3 and writer 7, which then stays) is refreshed instead by:
 *  - the keys changed since the last commit's point, from the replica's
 *    key journal (cdc_store_changed_keys; store/changes.c);
 *  - for each, the file and row index of its old row: every data file has
 *    its keys in row order beside it, _cdcstore/<file>.keys (keyidx.c;
 *    Delta readers skip directories whose name starts with '_'), looked up
 *    in the one base file whose key range holds the key, then in the files
 *    of changed rows earlier refreshes wrote; a row a vector already
 *    deletes is not the old row;
 *  - one file of changed rows (more past file_rows), written in key order
 *    with the rows the replica holds now for those keys (a deleted key has
 *    none), tagged cdcstore.patch;
 *  - one deletion vector file for the commit (dv.c) holding, for each file
 *    with rows to delete, the vector of its old and new deleted rows; the
 *    commit removes each such file with its old vector and adds it again
 *    with the new one, and adds the files of changed rows.
 * So every key has at most one row that no vector deletes, in one file:
 * the row of the view.  A refresh writes the whole table again, without
 * vectors, when the replica cannot list the keys (cdc_store_changed_keys
 * says "all"), when a file's keys are missing (a table written before
 * vectors were asked for) or damaged, and when vectors stop paying: more changed keys
 * than a fifth of the rows, 16 files of changed rows, or a quarter of all
 * rows deleted by vectors.  Readers: Spark (delta-spark) reads such tables,
 * deltalake reads them through its QueryBuilder (DataFusion), while its
 * to_pyarrow_table() refuses the feature (deltalake 1.6.6; both checked by
 * tests/export/dv_refresh.sh).  Hence vectors are asked for, not the
 * default.
 *
 * Measured on tests/query/bench.sh's 10,000,000 rows (BENCH_STEPS=query
 * make bench, load 2-3): after 1% changed at random keys the refresh took
 * 0.28 s against 3.37 s for a full export (x0.083; by key ranges, x1.07);
 * in one key range x0.068.  The key files add about 4 bytes a key (37 MB
 * beside 77 MB of data). */

#define DV_MAX_PATCHES 16

typedef struct keyset {
    cdc__buf arena;
    size_t *off, *len;
    size_t n, cap;
    size_t next_sort;       /* sorted and deduplicated again at this many */
    size_t limit;           /* more distinct keys than this: stop listing */
} keyset;

static void keyset_sort(keyset *ks);

/* cdc_store_changed_keys' callback: a key changed by many batches is
 * listed as often, so the set is deduplicated as it grows, and the listing
 * stops (KEYS_MANY) past limit distinct keys: memory stays about the
 * distinct keys, whatever the journal holds. */
#define KEYS_MANY 3

static int take_changed_key(void *opaque, const char *k, size_t kl)
{
    keyset *ks = opaque;
    if (ks->n >= ks->next_sort) {
        keyset_sort(ks);
        if (ks->n > ks->limit) return KEYS_MANY;
        ks->next_sort = 2 * ks->n + (1 << 20);
    }
    if (ks->n == ks->cap) {
        ks->cap = ks->cap ? 2 * ks->cap : 1024;
        ks->off = cdc__realloc(ks->off, ks->cap * sizeof *ks->off);
        ks->len = cdc__realloc(ks->len, ks->cap * sizeof *ks->len);
    }
    ks->off[ks->n] = ks->arena.len;
    ks->len[ks->n++] = kl;
    cdc__buf_put(&ks->arena, k, kl);
    return 0;
}

typedef struct keyref {
    size_t off, len;
} keyref;

static int cmp_keyref(const void *a, const void *b, void *arena)
{
    const keyref *x = a, *y = b;
    const char *base = arena;
    return cdc__key_cmp(base + x->off, x->len, base + y->off, y->len);
}

/* Sorts the keys and drops repeats (the arena keeps the distinct keys
 * only, in order). */
static void keyset_sort(keyset *ks)
{
    keyref *r = cdc__malloc((ks->n + 1) * sizeof *r);
    for (size_t i = 0; i < ks->n; i++) r[i] = (keyref){ks->off[i], ks->len[i]};
    qsort_r(r, ks->n, sizeof *r, cmp_keyref, ks->arena.p);
    size_t m = 0;
    for (size_t i = 0; i < ks->n; i++) {
        if (m && !cmp_keyref(&r[m - 1], &r[i], ks->arena.p)) continue;
        r[m++] = r[i];
    }
    cdc__buf a = {0};
    for (size_t i = 0; i < m; i++) {
        ks->off[i] = a.len;
        ks->len[i] = r[i].len;
        cdc__buf_put(&a, ks->arena.p + r[i].off, r[i].len);
    }
    cdc__buf_free(&ks->arena);
    ks->arena = a;
    ks->n = m;
    free(r);
}

static void keyset_free(keyset *ks)
{
    cdc__buf_free(&ks->arena);
    free(ks->off);
    free(ks->len);
    memset(ks, 0, sizeof *ks);
}

static void keys_path(char *out, size_t n, const char *dir, const char *file)
{
    snprintf(out, n, "%s/_cdcstore/%s.keys", dir, file);
}

static int in_sorted(const uint64_t *a, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (a[m] < v) lo = m + 1;
        else hi = m;
    }
    return lo < n && a[lo] == v;
}

/* A data file's key file that does not describe it (damaged, cut, of
 * another file): the table is written anew, which writes new ones. */
#define KEYS_BAD 2
#define DV_BAD 4

/* The row index of key k in file f when a row there is k's and no vector
 * deletes it: 0 and *row; 1 when not; KEYS_BAD, DV_BAD; <0 error. */
static int live_row(const char *dir, dfile *f, const char *k, size_t kl, uint64_t *row, cdc__buf *scratch,
                    cdc_error_t *err)
{
    int rc;
    if (f->lower.len && cdc__key_cmp(k, kl, f->lower.p, f->lower.len) < 0) return 1;
    if (f->upper.len && cdc__key_cmp(k, kl, f->upper.p, f->upper.len) >= 0) return 1;
    if (!f->keys_loaded) {
        char kp[4500];
        keys_path(kp, sizeof kp, dir, f->path);
        if ((rc = cdc__keyidx_load(kp, &f->keys, err))) return rc == CDC_ECORRUPT ? KEYS_BAD : rc;
        f->keys_loaded = 1;
        if (f->keys.n != f->rows) return KEYS_BAD;
    }
    int64_t i = cdc__keyidx_find(&f->keys, k, kl, scratch);
    if (i == -2) return KEYS_BAD;
    if (i < 0) return 1;
    if (!f->del_loaded) {
        /* a vector file that is gone or damaged leaves the version unreadable:
         * the table written anew needs none */
        if (f->has_dv && cdc__dv_read(dir, &f->dv, f->rows, &f->del, &f->ndel, err)) return DV_BAD;
        f->del_loaded = 1;
    }
    if (in_sorted(f->del, f->ndel, (uint64_t)i) || in_sorted(f->mark, f->nmark, (uint64_t)i)) return 1;
    *row = (uint64_t)i;
    return 0;
}

static void mark_row(dfile *f, uint64_t row)
{
    if (f->nmark == f->capmark) {
        f->capmark = f->capmark ? 2 * f->capmark : 64;
        f->mark = cdc__realloc(f->mark, f->capmark * sizeof *f->mark);
    }
    /* keys come in key order and a file's rows are in key order: ascending */
    f->mark[f->nmark++] = row;
}

/* Writes the rows the replica holds now for the keys ks (sorted) to new
 * files of changed rows: point reads (cdc_store_get_keys: a key's bloom
 * filters spare the levels that do not hold it, where a seek reads a block
 * of each), in key order. */
typedef struct patch_ctx {
    writer *w;
    cdc__buf last, scratch;
    uint64_t in_file;
    cdc_error_t *err;
} patch_ctx;

static int patch_row(void *opaque, size_t i, const cdc_row_t *row)
{
    patch_ctx *p = opaque;
    writer *w = p->w;
    int rc;
    if (row->deleted) return 0;
    if (w->pq && p->in_file >= w->file_rows) {
        cdc__buf_putc(&p->last, 0); /* the least key past the last one */
        if ((rc = file_close(w, p->last.p, p->last.len, p->err))) return rc;
        p->in_file = 0;
    }
    if (!w->pq && (rc = file_open(w, row->key, row->key_len, p->err))) return rc;
    if ((rc = cdc__pq_row(w->pq, row->values, row->lens, &w->out, w->off, p->err))) {
        char msg[sizeof p->err->msg];
        snprintf(msg, sizeof msg, "%s", p->err->msg);
        cdc__buf kj = {0};
        int bad = cdc__key_json_array(row->key, row->key_len, &kj);
        rc = cdc__err(p->err, rc, "export of %s: key %s: %s", w->table, bad ? "(does not decode)" : kj.p, msg);
        cdc__buf_free(&kj);
        return rc;
    }
    w->cur->hash += cdc__row_hash(row->values, row->lens, NULL, row->ncols, CDC_HASH_LOOKUP3, &p->scratch);
    cdc__keyidx_add(&w->kw, row->key, row->key_len);
    cdc__buf_reset(&p->last);
    cdc__buf_put(&p->last, row->key, row->key_len);
    p->in_file++;
    w->rows_done++;
    if (w->out.len >= (1u << 20)) return file_flush(w, p->err);
    (void)i;
    return 0;
}

static int write_keys(writer *w, const keyset *ks, cdc_error_t *err)
{
    const char **keys = cdc__malloc((ks->n + 1) * sizeof *keys);
    for (size_t i = 0; i < ks->n; i++) keys[i] = ks->arena.p + ks->off[i];
    patch_ctx p = {.w = w, .err = err};
    int rc = cdc_store_get_keys(w->st, w->table, keys, ks->len, ks->n, patch_row, &p, err);
    if (!rc && w->pq) {
        cdc__buf_putc(&p.last, 0);
        rc = file_close(w, p.last.p, p.last.len, err);
    } else if (rc && w->pq) {
        close(w->fd);
        cdc__pq_free(w->pq);
        w->pq = NULL;
    }
    free(keys);
    cdc__buf_free(&p.last);
    cdc__buf_free(&p.scratch);
    return rc;
}

/* Merges f's old and new deleted rows (both ascending, disjoint). */
static uint64_t *merged_del(const dfile *f, size_t *n)
{
    uint64_t *m = cdc__malloc((f->ndel + f->nmark + 1) * sizeof *m);
    size_t i = 0, j = 0, k = 0;
    while (i < f->ndel || j < f->nmark)
        m[k++] = j >= f->nmark || (i < f->ndel && f->del[i] < f->mark[j]) ? f->del[i++] : f->mark[j++];
    *n = k;
    return m;
}

/* The refresh by deletion vectors: 0 with the files of changed rows in w
 * and the vectors in *dvf (NULL when no row was deleted), the files to add
 * again having nmark > 0; 1 when the table is to be written anew instead
 * (nothing written); <0 an error. */
static int dv_refresh(cdc_store_t *st, const char *table, const char *dir, dlog *l, writer *w,
                      cdc__dv_file **dvf, cdc_delta_result_t *r, cdc_error_t *err)
{
    *dvf = NULL;
    r->rewrite_reason = "the table's last version records no point of the replica";
    if (!l->has_point) return 1;
    uint64_t rows = 0, deleted = 0;
    size_t npatch = 0, nbase = 0;
    for (size_t i = 0; i < l->n; i++) {
        char kp[4500];
        struct stat sb;
        keys_path(kp, sizeof kp, dir, l->f[i].path);
        r->rewrite_reason = "a data file has no key file";
        if (stat(kp, &sb)) return 1;
        rows += l->f[i].rows;
        deleted += l->f[i].has_dv ? l->f[i].dv.cardinality : 0;
        npatch += l->f[i].patch;
    }
    r->rewrite_reason = "16 files of changed rows";
    if (npatch >= DV_MAX_PATCHES) return 1;
    keyset ks = {.next_sort = 1 << 20, .limit = (rows - deleted) / 5};
    int all = 1, rc = cdc_store_changed_keys(st, table, &l->point, take_changed_key, &ks, &all, err);
    r->rewrite_reason = "the replica's key journal does not reach back to the last version";
    if (rc == KEYS_MANY) all = 0; /* past the limit: the test below says so */
    else if (rc || all) {
        keyset_free(&ks);
        return rc ? rc : 1;
    }
    rc = 0;
    keyset_sort(&ks);
    r->keys_changed = ks.n;
    r->rewrite_reason = "more than a fifth of the rows changed";
    if (ks.n > ks.limit) {
        keyset_free(&ks);
        return 1;
    }
    /* the base files (contiguous key ranges, in key order) and the others */
    dfile **base = cdc__malloc((l->n + 1) * sizeof *base), **patch = cdc__malloc((l->n + 1) * sizeof *patch);
    size_t np = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->f[i].patch) patch[np++] = &l->f[i];
        else base[nbase++] = &l->f[i];
    }
    cdc__buf scratch = {0};
    uint64_t marked = 0;
    for (size_t i = 0; i < ks.n && !rc; i++) {
        const char *k = ks.arena.p + ks.off[i];
        size_t kl = ks.len[i];
        /* the base file whose range holds k: the last one whose lower is <= k */
        size_t a = 0, b = nbase;
        while (b - a > 1) {
            size_t m = a + (b - a) / 2;
            if (cdc__key_cmp(base[m]->lower.p, base[m]->lower.len, k, kl) <= 0) a = m;
            else b = m;
        }
        uint64_t row;
        dfile *at = NULL;
        if (nbase && (rc = live_row(dir, base[a], k, kl, &row, &scratch, err)) == 0) at = base[a];
        for (size_t p = 0; p < np && !at && rc >= 0 && rc != KEYS_BAD && rc != DV_BAD; p++)
            if ((rc = live_row(dir, patch[p], k, kl, &row, &scratch, err)) == 0) at = patch[p];
        if (rc == KEYS_BAD || rc == DV_BAD) {
            r->rewrite_reason = rc == KEYS_BAD ? "a data file's key file is damaged"
                                               : "a deletion vector file is missing or damaged";
            rc = 1;
            break;
        }
        if (rc < 0) break;
        rc = 0;
        if (at) {
            mark_row(at, row);
            marked++;
        }
    }
    cdc__buf_free(&scratch);
    free(base);
    free(patch);
    if (!rc && (deleted + marked) * 4 > rows) {
        r->rewrite_reason = "vectors would delete a quarter of the rows";
        rc = 1;
    }
    if (!rc) {
        r->rewrite_reason = NULL;
        w->patch = 1;
        rc = write_keys(w, &ks, err);
        w->patch = 0;
    }
    keyset_free(&ks);
    if (rc) return rc;
    r->rows_marked = marked;
    if (!marked) return 0;
    if ((rc = cdc__dv_file_create(dir, dvf, err))) return rc;
    for (size_t i = 0; i < l->n && !rc; i++) {
        dfile *f = &l->f[i];
        if (!f->nmark) continue;
        size_t n;
        uint64_t *m = merged_del(f, &n);
        rc = cdc__dv_file_add(*dvf, m, n, &f->newdv, err);
        free(m);
        r->files_marked++;
    }
    if (!rc) rc = cdc__dv_file_close(*dvf, err);
    return rc;
}

/* ---- The commit ---- */

/* An add action: a data file with its statistics (JSON text), its tags
 * (the lower bound named cdcstore.dvlower in a table with deletion
 * vectors) and its deletion vector when dv is not NULL. */
static void put_add_action(cdc__buf *c, const char *path, uint64_t size, int64_t ms, const char *stats,
                           size_t stats_len, const cdc__buf *lower, const cdc__buf *upper, uint64_t rows,
                           uint64_t hash, int patch, int dvlower, const cdc__dv_desc *dv)
{
    cdc__buf_puts(c, "{\"add\":{\"path\":");
    cdc__json_put_string(c, path, strlen(path));
    cdc__buf_printf(c, ",\"partitionValues\":{},\"size\":%llu,\"modificationTime\":%lld,\"dataChange\":true,"
                       "\"stats\":",
                    (unsigned long long)size, (long long)ms);
    cdc__json_put_string(c, stats, stats_len);
    cdc__buf_puts(c, dvlower ? ",\"tags\":{\"cdcstore.dvlower\":\"" : ",\"tags\":{\"cdcstore.lower\":\"");
    put_hex(c, lower->p, lower->len);
    cdc__buf_puts(c, "\",\"cdcstore.upper\":\"");
    put_hex(c, upper->p, upper->len);
    cdc__buf_printf(c, "\",\"cdcstore.rows\":\"%llu\",\"cdcstore.hash\":\"%016llx\"%s}",
                    (unsigned long long)rows, (unsigned long long)hash, patch ? ",\"cdcstore.patch\":\"1\"" : "");
    if (dv) {
        cdc__buf_puts(c, ",\"deletionVector\":");
        cdc__dv_desc_json(dv, c);
    }
    cdc__buf_puts(c, "}}\n");
}

static void put_add(cdc__buf *c, const added *a, int64_t ms)
{
    put_add_action(c, a->path, a->size, ms, a->stats.p ? a->stats.p : "{}", a->stats.len ? a->stats.len : 2,
                   &a->lower, &a->upper, a->rows, a->hash, a->patch, a->dv, NULL);
}

/* An active file again, with its new deletion vector (f->newdv): the same
 * file, size and tags; its statistics are no longer tight (the rows the
 * vector deletes still count in them), which they say. */
static void put_readd(cdc__buf *c, const dfile *f, int64_t ms)
{
    cdc__buf st = {0};
    const char *s = f->stats ? f->stats : "{}";
    size_t sl = strlen(s);
    if (!strstr(s, "\"tightBounds\"") && sl >= 2 && s[sl - 1] == '}') {
        cdc__buf_put(&st, s, sl - 1);
        cdc__buf_puts(&st, sl > 2 ? ",\"tightBounds\":false}" : "\"tightBounds\":false}");
    } else {
        cdc__buf_put(&st, s, sl);
    }
    put_add_action(c, f->path, f->size, ms, st.p, st.len, &f->lower, &f->upper, f->rows, f->hash, f->patch, 1,
                   &f->newdv);
    cdc__buf_free(&st);
}

static void put_remove(cdc__buf *c, const dfile *f, int64_t ms)
{
    cdc__buf_puts(c, "{\"remove\":{\"path\":");
    cdc__json_put_string(c, f->path, strlen(f->path));
    cdc__buf_printf(c, ",\"deletionTimestamp\":%lld,\"dataChange\":true,\"extendedFileMetadata\":true,"
                       "\"partitionValues\":{},\"size\":%llu",
                    (long long)ms, (unsigned long long)f->size);
    if (f->has_dv) { /* a file is the pair of its path and its vector */
        cdc__buf_puts(c, ",\"deletionVector\":");
        cdc__dv_desc_json(&f->dv, c);
    }
    cdc__buf_puts(c, "}}\n");
}

static void new_uuid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != sizeof b)
        for (int i = 0; i < 16; i++) b[i] = (unsigned char)(now_ms() >> (i % 8) * 8) ^ (unsigned char)(i * 37);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Writes commit text as dir/_delta_log/<version>.json, failing when that
 * version exists.  *linked is set once the version is in place: a failure
 * after it (the directory's fsync) leaves a version readers see, whose
 * files must stay. */
static int commit(const char *dir, int64_t version, const cdc__buf *text, int *linked, cdc_error_t *err)
{
    char logdir[4200], tmp[4300], fin[4300];
    snprintf(logdir, sizeof logdir, "%s/_delta_log", dir);
    if (mkdir(logdir, 0755) && errno != EEXIST) return cdc__err(err, -errno, "%s: %s", logdir, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s/.%020lld.json.%d.tmp", logdir, (long long)version, (int)getpid());
    snprintf(fin, sizeof fin, "%s/%020lld.json", logdir, (long long)version);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return cdc__err(err, -errno, "%s: %s", tmp, strerror(errno));
    int rc = cdc__write_all(fd, text->p, text->len, -1);
    if (!rc && fsync(fd)) rc = -errno;
    close(fd);
    if (rc) {
        unlink(tmp);
        return cdc__err(err, rc, "%s: %s", tmp, strerror(-rc));
    }
    if (link(tmp, fin)) {
        int e = errno;
        unlink(tmp);
        if (e == EEXIST)
            return cdc__err(err, CDC_EINVAL, "%s: version %lld was committed by another writer meanwhile", dir,
                            (long long)version);
        return cdc__err(err, -e, "%s: %s", fin, strerror(e));
    }
    unlink(tmp);
    *linked = 1;
    if ((rc = sync_dir(logdir))) return cdc__err(err, rc, "%s: fsync: %s", logdir, strerror(-rc));
    return 0;
}

/* ---- Export ---- */

static int casecmp_p(const void *a, const void *b)
{
    return strcasecmp(*(const char *const *)a, *(const char *const *)b);
}

/* Delta's column names are case-insensitive (deltalake refuses a schema
 * with "Upper" and "upper": "Duplicate field name"), PostgreSQL's quoted
 * names are not: such a table is refused before anything is written. */
static int case_clash(const char *table, const char *const *names, size_t n, cdc_error_t *err)
{
    const char **s = cdc__malloc((n + 1) * sizeof *s);
    memcpy(s, names, n * sizeof *s);
    qsort(s, n, sizeof *s, casecmp_p);
    int rc = 0;
    for (size_t i = 1; i < n && !rc; i++)
        if (!strcasecmp(s[i - 1], s[i]))
            rc = cdc__err(err, CDC_EINVAL,
                          "export of %s: columns \"%s\" and \"%s\" differ only in case, which a Delta table "
                          "cannot hold (its column names are case-insensitive); nothing was written",
                          table, s[i - 1], s[i]);
    free(s);
    return rc;
}

int cdc_export_delta(cdc_store_t *st, const char *table, const char *dir, const cdc_export_options_t *opts,
                     cdc_delta_result_t *res, cdc_error_t *err)
{
    cdc_export_options_t defo = {0};
    cdc_delta_result_t r = {.version = -1};
    cdc_error_t ignored;
    if (!err) err = &ignored; /* the writers format messages from it */
    if (!opts) opts = &defo;
    if (!st || !table || !dir || !*dir) return cdc__err(err, CDC_EINVAL, "cdc_export_delta: bad arguments");
    if (opts->meta || opts->lower_json || opts->upper_json)
        return cdc__err(err, CDC_EINVAL, "export of %s: a Delta table holds the whole view (no meta, no key range)",
                        table);
    const char *const *names, *const *types;
    size_t n, nt;
    int rc = cdc_store_columns(st, table, &names, &n, err);
    if (!rc) rc = cdc_store_column_types(st, table, &types, &nt, err);
    if (rc) return rc;
    if (!n)
        return cdc__err(err, CDC_EINVAL,
                        "export of %s: the table has no columns (no event of it was applied, only dead letters "
                        "name it): a Delta table needs at least one",
                        table);
    if ((rc = case_clash(table, names, n, err))) return rc;
    int made_dir = mkdir(dir, 0755) == 0; /* removed again when this export fails (if still empty) */
    if (!made_dir && errno != EEXIST) return cdc__err(err, -errno, "%s: %s", dir, strerror(errno));
    /* The replica's point, read before any row: a change after it is
     * reported by the next refresh even when this one's reads saw it. */
    cdc_change_point_t point;
    dlog l;
    if ((rc = cdc_store_change_point(st, &point, err)) || (rc = dlog_read(dir, &l, err))) {
        if (made_dir) rmdir(dir);
        return rc;
    }
    /* A Delta table holds one table of the replica: an export of another
     * into it replaced its rows with the other's, silently, as a new
     * version.  (Tables written before the name was recorded are taken.) */
    if (l.table && strcmp(l.table, table)) {
        rc = cdc__err(err, CDC_EINVAL,
                      "%s: the Delta table there holds %s, not %s: give another directory for %s", dir, l.table,
                      table, table);
        dlog_free(&l);
        return rc;
    }
    cdc__buf schema = {0}, c = {0};
    const char **pqtypes = cdc__calloc(n + 1, sizeof *pqtypes);
    int ntz;
    make_schema(names, types, n, &schema, pqtypes, &ntz);
    _Atomic size_t nfiles = 0;
    _Atomic uint64_t rows_shared = 0, bytes_shared = 0;
    writer w = {.st = st, .table = table, .dir = dir, .opts = opts, .names = names, .pqtypes = pqtypes, .ncols = n,
                .version = l.version + 1,
                .file_rows = opts->file_rows ? opts->file_rows : l.file_rows ? l.file_rows : 250000, .fd = -1,
                .nfiles = &nfiles, .rows_shared = &rows_shared, .bytes_shared = &bytes_shared, .progress = 1};
    const char *env = getenv("CDC_EXPORT_THREADS");
    int threads = env && !strcmp(env, "1") ? 1 : 2; /* for a refresh's ranges (a full export: cdc__export_split) */
    job *jobs = NULL;
    size_t njobs = 0;
    cdc__buf mid = {0};
    int full = l.version < 0 || strcmp(l.schema, schema.p) || !ranges_cover(&l);
    r.created = l.version < 0;
    r.schema_changed = l.version >= 0 && strcmp(l.schema, schema.p) != 0;
    int64_t ms = now_ms();
    cdc__buf empty = {0};
    /* deletion vectors: asked for, or the table has them ("Deletion vectors") */
    int had_dv = l.protocol && strstr(l.protocol, "\"deletionVectors\"");
    int dvmode = opts->deletion_vectors || had_dv;
    cdc__dv_file *dvf = NULL;
    if (dvmode) {
        char kd[4200];
        snprintf(kd, sizeof kd, "%s/_cdcstore", dir);
        if (mkdir(kd, 0755) && errno != EEXIST) {
            rc = cdc__err(err, -errno, "%s: %s", kd, strerror(errno));
            goto fail;
        }
        w.keys = 1;
    }
    if (!full && dvmode) {
        rc = dv_refresh(st, table, dir, &l, &w, &dvf, &r, err);
        if (rc == 1) {
            full = 1; /* nothing was written */
            rc = 0;
            r.keys_changed = 0;
        } else if (rc) {
            goto fail;
        } else {
            r.deletion_vectors = r.tracked = 1;
            for (size_t i = 0; i < l.n; i++) {
                r.ranges_checked += !l.f[i].patch;
                const dfile *f = &l.f[i];
                r.rows += f->rows - (f->nmark ? f->newdv.cardinality : f->has_dv ? f->dv.cardinality : 0);
            }
            r.ranges_changed = r.files_marked;
            r.files_kept = l.n - r.files_marked;
            if (!w.na && !r.rows_marked) goto out; /* nothing to commit */
        }
    }
    if (full) {
        int64_t m;
        jobs = cdc__calloc(2, sizeof *jobs);
        if (cdc__export_split(st, table, 0, &m) == 0) {
            cdc__key_add_int(&mid, m);
            jobs[0] = (job){&empty, &mid};
            jobs[1] = (job){&mid, &empty};
            njobs = 2;
        } else {
            jobs[0] = (job){&empty, &empty};
            njobs = 1;
        }
        if ((rc = write_jobs(&w, jobs, njobs, threads, err))) goto fail;
        r.ranges_changed = r.ranges_checked = 1;
    } else if (r.deletion_vectors) {
        /* dv_refresh wrote the files */
    } else {
        int all = 1;
        for (size_t i = 0; i < l.n; i++) l.f[i].changed = l.f[i].maybe = 0;
        if (l.has_point && (rc = cdc_store_changed_since(st, table, &l.point, mark_range, &l, &all, err))) goto fail;
        r.tracked = !all;
        for (size_t i = 0; i < l.n; i++) l.f[i].maybe = all || (l.f[i].maybe && !l.f[i].changed);
        /* the files to hash, in runs of neighbours (one iterator a run) */
        for (size_t i = 0, j; i < l.n; i = j) {
            for (j = i + 1; l.f[i].maybe && j < l.n && l.f[j].maybe; j++) {}
            if (!l.f[i].maybe) continue;
            if ((rc = scan_ranges(st, table, &l, i, j, &r.rows_read, err))) goto fail;
            for (size_t k = i; k < j; k++)
                l.f[k].changed = l.f[k].now_rows != l.f[k].rows || l.f[k].now_hash != l.f[k].hash;
        }
        jobs = cdc__calloc(l.n + 1, sizeof *jobs);
        for (size_t i = 0; i < l.n; i++) {
            dfile *f = &l.f[i];
            r.ranges_checked++;
            if (!f->changed) continue;
            r.ranges_changed++;
            jobs[njobs++] = (job){&f->lower, &f->upper};
        }
        if ((rc = write_jobs(&w, jobs, njobs, threads, err))) goto fail;
        if (!r.ranges_changed) { /* nothing to commit */
            for (size_t i = 0; i < l.n; i++) r.rows += l.f[i].rows;
            r.files_kept = l.n;
            goto out;
        }
    }
    /* The commit. */
    cdc__buf_printf(&c, "{\"commitInfo\":{\"timestamp\":%lld,\"operation\":\"%s\",\"operationParameters\":"
                        "{\"mode\":\"%s\",\"cdcstore.history\":\"%016" PRIx64 "\",\"cdcstore.stamp\":\"%" PRIu64
                        "\",\"cdcstore.fileRows\":\"%llu\",\"cdcstore.table\":",
                    (long long)ms, r.created ? "CREATE TABLE AS SELECT" : "WRITE",
                    r.created ? "ErrorIfExists" : full ? "Overwrite" : "Refresh", point.history, point.stamp,
                    (unsigned long long)w.file_rows);
    cdc__json_put_string(&c, table, strlen(table));
    cdc__buf_puts(&c, "},\"isBlindAppend\":false,\"engineInfo\":\"" ENGINE "\"}}\n");
    /* A table never goes back to a lower protocol: features it has stay. */
    int had_ntz = l.protocol && strstr(l.protocol, "\"timestampNtz\"");
    int want_ntz = ntz || had_ntz;
    const char *feats = dvmode && want_ntz ? "[\"deletionVectors\",\"timestampNtz\"]"
                        : dvmode           ? "[\"deletionVectors\"]"
                        : want_ntz         ? "[\"timestampNtz\"]"
                                           : NULL;
    if (!l.protocol || !had_ntz != !want_ntz || !had_dv != !dvmode) {
        if (feats)
            cdc__buf_printf(&c,
                            "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":%s,"
                            "\"writerFeatures\":%s}}\n",
                            feats, feats);
        else cdc__buf_puts(&c, "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n");
    }
    if ((full && (r.created || r.schema_changed)) || (dvmode && !l.dv_config)) {
        char id[37];
        if (l.table_id) snprintf(id, sizeof id, "%s", l.table_id);
        else new_uuid(id);
        cdc__buf_puts(&c, "{\"metaData\":{\"id\":\"");
        cdc__buf_puts(&c, id);
        cdc__buf_puts(&c, "\",\"format\":{\"provider\":\"parquet\",\"options\":{}},\"schemaString\":");
        cdc__json_put_string(&c, schema.p, schema.len);
        cdc__buf_printf(&c, ",\"partitionColumns\":[],\"configuration\":{%s},\"createdTime\":%lld}}\n",
                        dvmode ? "\"delta.enableDeletionVectors\":\"true\"" : "",
                        (long long)(l.created_ms ? l.created_ms : ms));
    }
    for (size_t i = 0; i < l.n; i++) {
        if (r.deletion_vectors) {
            if (!l.f[i].nmark) continue;
            put_remove(&c, &l.f[i], ms);
            put_readd(&c, &l.f[i], ms);
        } else if (full || l.f[i].changed) {
            put_remove(&c, &l.f[i], ms);
            r.files_removed++;
        } else {
            r.files_kept++;
            r.rows += l.f[i].rows;
        }
    }
    for (size_t i = 0; i < w.na; i++) {
        put_add(&c, &w.a[i], ms);
        r.rows += w.a[i].rows;
        r.rows_written += w.a[i].rows;
    }
    r.rows_read += r.rows_written;
    r.files_added = w.na;
    r.bytes_written = w.bytes;
    if ((rc = sync_dir(dir))) {
        rc = cdc__err(err, rc, "%s: fsync: %s", dir, strerror(-rc));
        goto fail;
    }
    int linked = 0;
    if ((rc = commit(dir, w.version, &c, &linked, err))) {
        if (!linked) goto fail;
        r.version = w.version; /* in place, though not known durable: its files stay */
        goto out;
    }
    r.version = w.version;
    /* The keys of the files this version removed serve no later refresh
     * (time travel reads the data files only): gone, so that _cdcstore
     * holds the current files' keys alone. */
    for (size_t i = 0; dvmode && !r.deletion_vectors && i < l.n; i++) {
        if (!full && !l.f[i].changed) continue;
        char kp[4500];
        keys_path(kp, sizeof kp, dir, l.f[i].path);
        unlink(kp);
    }
    goto out;
fail:
    /* files no commit refers to */
    for (size_t i = 0; i < w.na; i++) {
        char full_path[4500];
        snprintf(full_path, sizeof full_path, "%s/%s", dir, w.a[i].path);
        unlink(full_path);
        keys_path(full_path, sizeof full_path, dir, w.a[i].path);
        unlink(full_path);
    }
    if (dvf) {
        char full_path[4500];
        snprintf(full_path, sizeof full_path, "%s/%s", dir, cdc__dv_file_name(dvf));
        unlink(full_path);
    }
    if (made_dir) { /* a failed first export leaves no directory behind: only empty ones go */
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/_cdcstore", dir);
        rmdir(sub);
        snprintf(sub, sizeof sub, "%s/_delta_log", dir);
        rmdir(sub);
        rmdir(dir);
    }
out:
    cdc__dv_file_free(dvf);
    cdc__keyidx_w_free(&w.kw);
    for (size_t i = 0; i < w.na; i++) {
        free(w.a[i].path);
        cdc__buf_free(&w.a[i].lower);
        cdc__buf_free(&w.a[i].upper);
        cdc__buf_free(&w.a[i].stats);
    }
    free(w.a);
    free(jobs);
    cdc__buf_free(&mid);
    cdc__buf_free(&w.out);
    cdc__buf_free(&schema);
    cdc__buf_free(&c);
    free(pqtypes);
    dlog_free(&l);
    if (res) *res = r;
    return rc;
}
