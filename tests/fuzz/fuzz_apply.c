/*
 * fuzz_apply.c: libFuzzer target for the whole path a file takes: the input
 * is an input file (kcat -J lines or bare envelopes) applied to a replica
 * with cdc_store_apply_file, then every table is read back through the
 * public API: the iterator (with and without bounds and tombstones), point
 * gets, CSV, NDJSON, Parquet and Delta exports (and a Delta refresh that
 * finds nothing changed), range hashes and their SQL, the counters and the
 * dead letters.
 *
 * One replica per process, in a tmpfs directory, so that an input costs
 * its apply and reads rather than a RocksDB open; it is removed and made
 * again every RESET_EVERY inputs so that it stays small and a crash needs
 * little history to come back (run the saved input alone: it usually does;
 * -runs over the last inputs of the log otherwise).  Batches of 4 records,
 * so that an input of a few lines already runs the file source's pipeline
 * over several batches.
 *
 * Checks, beyond the sanitizers: the apply returns 0 (bad input is
 * dead-lettered, never an error) and reads one record per non-blank line;
 * per table, every row the iterator gives is found by cdc_store_get with
 * its key_json, at the same version; a lower bound at the second row's key
 * gives one row less; the CSV export has a header and one record per row,
 * each with the header's number of fields (quotes honoured); the NDJSON
 * export (with __lsn and __deleted) has one JSON object per row and
 * tombstone with one member per column and the two; the range hashes count
 * the rows of the view; the live-row counter equals the rows of the view;
 * the dead letters stored and those met again add up to the counter.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "fuzz.h"

#define RESET_EVERY 64

static char *base, *dbdir, *infile, *outfile;
static cdc_store_t *store;
static unsigned long runs;
/* Bad records the replica met again (the same record, position and reason
 * as a stored dead letter): counted by the counters, stored once. */
static uint64_t dead_known;

/* The records each table had read before this input: only the tables the
 * input reached are read back (the others did not change), so that an
 * input costs what it touches, not what the replica holds. */
static char **seen_names;
static uint64_t *seen_reads;
static size_t nseen;

static void cleanup(void)
{
    cdc_store_close(store);
    store = NULL;
    if (base) fuzz_rmrf(base);
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void reopen(void)
{
    if (store) {
        cdc_store_close(store);
        fuzz_rmrf(dbdir);
    }
    store = fuzz_open(dbdir);
    dead_known = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    base = fuzz_tmpdir();
    dbdir = path_in(base, "db");
    infile = path_in(base, "input.jsonl");
    outfile = path_in(base, "export");
    reopen();
    atexit(cleanup);
    return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FUZZ_CHECK(fd >= 0, "cannot write %s", path);
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        FUZZ_CHECK(w > 0, "cannot write %s", path);
        off += (size_t)w;
    }
    close(fd);
}

/* The records the file source makes of the input: its non-blank lines. */
static uint64_t count_lines(const uint8_t *data, size_t size)
{
    uint64_t n = 0;
    for (size_t i = 0; i < size;) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t end = nl ? (size_t)(nl - data) : size;
        for (size_t k = i; k < end; k++)
            if (data[k] != ' ' && data[k] != '\t' && data[k] != '\r') {
                n++;
                break;
            }
        i = end + 1;
    }
    return n;
}

/* Exports table into outfile and returns the bytes (malloc'd, *len). */
static char *export_table(const char *table, const cdc_export_options_t *o, uint64_t *rows, size_t *len)
{
    cdc_error_t e = {0};
    int fd = open(outfile, O_RDWR | O_CREAT | O_TRUNC, 0600);
    FUZZ_CHECK(fd >= 0, "cannot open %s", outfile);
    int rc = cdc_export_fd(store, table, o, fd, rows, &e);
    FUZZ_CHECK(rc == 0, "export of %s (format %d) failed: %d %s", table, o->format, rc, e.msg);
    struct stat sb;
    FUZZ_CHECK(fstat(fd, &sb) == 0, "fstat");
    char *buf = malloc((size_t)sb.st_size + 1);
    FUZZ_CHECK(pread(fd, buf, (size_t)sb.st_size, 0) == sb.st_size, "cannot read the export back");
    buf[sb.st_size] = 0;
    close(fd);
    *len = (size_t)sb.st_size;
    return buf;
}

/* CSV records (newlines outside quotes), each checked to have as many
 * fields (commas outside quotes, plus one) as the first. */
static uint64_t csv_records(const char *table, const char *s, size_t n)
{
    uint64_t records = 0, fields = 1, want = 0;
    int quoted = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') quoted = !quoted;
        else if (!quoted && s[i] == ',') fields++;
        else if (!quoted && s[i] == '\n') {
            if (records == 0) want = fields;
            FUZZ_CHECK(fields == want, "CSV of %s: record %llu has %llu fields, the header %llu", table,
                       (unsigned long long)records, (unsigned long long)fields, (unsigned long long)want);
            records++;
            fields = 1;
        }
    }
    FUZZ_CHECK(!quoted, "CSV of %s ends inside quotes", table);
    FUZZ_CHECK(n == 0 || s[n - 1] == '\n', "CSV of %s does not end with a newline", table);
    return records;
}

/* NDJSON lines, each a JSON object of ncols + 2 members. */
static uint64_t ndjson_records(const char *table, const char *s, size_t n, size_t ncols)
{
    uint64_t records = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        FUZZ_CHECK(nl, "NDJSON of %s does not end with a newline", table);
        size_t len = (size_t)(nl - (s + i));
        cJSON *j = cJSON_ParseWithLength(s + i, len);
        FUZZ_CHECK(j && cJSON_IsObject(j), "NDJSON of %s: line %llu is not a JSON object: %.300s", table,
                   (unsigned long long)records + 1, s + i);
        FUZZ_CHECK((size_t)cJSON_GetArraySize(j) == ncols + 2, "NDJSON of %s: line %llu has %d members, not %zu",
                   table, (unsigned long long)records + 1, cJSON_GetArraySize(j), ncols + 2);
        cJSON_Delete(j);
        records++;
        i += len + 1;
    }
    return records;
}

/* Rows of the view (or with tombstones), from lower_json on. */
static uint64_t iter_count(const char *table, size_t ncols, const char *lower_json, int include_deleted,
                           char **second_key)
{
    cdc_iter_options_t io = {0};
    cdc_iter_t *it = NULL;
    cdc_error_t e = {0};
    cdc_row_t row;
    uint64_t n = 0;
    io.lower_json = lower_json;
    io.include_deleted = include_deleted;
    int rc = cdc_iter_open(store, table, &io, &it, &e);
    FUZZ_CHECK(rc == 0, "iterator over %s (from %s) does not open: %d %s", table,
               lower_json ? lower_json : "the start", rc, e.msg);
    while ((rc = cdc_iter_next(it, &row, &e)) == 1) {
        FUZZ_CHECK(row.key_json && row.key_len > 0, "a row of %s without a key", table);
        FUZZ_CHECK(row.ncols == ncols, "a row of %s with %zu columns, the table has %zu", table, row.ncols, ncols);
        FUZZ_CHECK(include_deleted || !row.deleted, "a deleted row of %s in the view", table);
        if (second_key && n == 1) *second_key = strdup(row.key_json);
        if (!lower_json && !include_deleted) {
            /* The key the store prints finds the row. */
            uint64_t epoch = row.epoch, lsn = row.lsn;
            uint32_t kind = row.kind;
            char *kj = strdup(row.key_json);
            cdc_row_t g;
            rc = cdc_store_get(store, table, kj, &g, &e);
            FUZZ_CHECK(rc == 0, "get %s %s: %d %s", table, kj, rc, e.msg);
            FUZZ_CHECK(!g.deleted && g.epoch == epoch && g.kind == kind && g.lsn == lsn,
                       "get %s %s: another version than the iterator's", table, kj);
            free(kj);
        }
        n++;
    }
    FUZZ_CHECK(rc == 0, "iterator over %s failed: %d %s", table, rc, e.msg);
    cdc_iter_close(it);
    return n;
}

static uint64_t hash_rows(const char *table, const cdc_hash_options_t *ho, int *refused)
{
    cdc_range_hash_t *r = NULL;
    size_t n = 0;
    uint64_t rows = 0;
    cdc_error_t e = {0};
    int rc = cdc_hash_ranges(store, table, ho, &r, &n, &e);
    *refused = rc == CDC_EINVAL && ho->range_width > 0;
    if (*refused) return 0;
    FUZZ_CHECK(rc == 0, "range hashes of %s: %d %s", table, rc, e.msg);
    for (size_t i = 0; i < n; i++) rows += r[i].rows;
    cdc_range_hashes_free(r, n);
    return rows;
}

static void check_table(const char *table)
{
    cdc_error_t e = {0};
    char *second = NULL;
    const char *const *names;
    size_t nnames;
    FUZZ_CHECK(cdc_store_columns(store, table, &names, &nnames, &e) == 0, "columns of %s: %s", table, e.msg);
    uint64_t live = iter_count(table, nnames, NULL, 0, &second);
    uint64_t all = iter_count(table, nnames, NULL, 1, NULL);
    FUZZ_CHECK(all >= live, "%s: %llu rows with tombstones, %llu without", table, (unsigned long long)all,
               (unsigned long long)live);
    if (second) {
        uint64_t from = iter_count(table, nnames, second, 0, NULL);
        FUZZ_CHECK(from == live - 1, "%s: %llu rows from the second key %s, of %llu", table,
                   (unsigned long long)from, second, (unsigned long long)live);
        free(second);
    }

    cdc_export_options_t xo = {0};
    uint64_t rows = 0;
    size_t len;
    xo.format = CDC_FORMAT_CSV;
    xo.header = 1;
    char *csv = export_table(table, &xo, &rows, &len);
    FUZZ_CHECK(rows == live, "CSV export of %s: %llu rows, the view has %llu", table, (unsigned long long)rows,
               (unsigned long long)live);
    FUZZ_CHECK(csv_records(table, csv, len) == live + 1, "CSV export of %s: not a header and %llu records",
               table, (unsigned long long)live);
    free(csv);

    xo.format = CDC_FORMAT_NDJSON;
    xo.header = 0;
    xo.meta = 1;
    char *nd = export_table(table, &xo, &rows, &len);
    FUZZ_CHECK(rows == all, "NDJSON export of %s with tombstones: %llu rows of %llu", table,
               (unsigned long long)rows, (unsigned long long)all);
    FUZZ_CHECK(ndjson_records(table, nd, len, nnames) == all, "NDJSON export of %s: not %llu lines",
               table, (unsigned long long)all);
    free(nd);

    /* Parquet and Delta: typed by the column types the input's schemas
     * gave, so a stored value may not parse as its column's type (a row kept
     * from before a declared type): then a clear error, never a crash. */
    xo = (cdc_export_options_t){.format = CDC_FORMAT_PARQUET, .row_group_rows = 2};
    int fd = open(outfile, O_RDWR | O_CREAT | O_TRUNC, 0600);
    FUZZ_CHECK(fd >= 0, "cannot open %s", outfile);
    rows = 0;
    int prc = cdc_export_fd(store, table, &xo, fd, &rows, &e);
    close(fd);
    FUZZ_CHECK(prc == 0 || prc == CDC_EINVAL, "Parquet export of %s: %d %s", table, prc, e.msg);
    FUZZ_CHECK(prc || rows == live, "Parquet export of %s: %llu rows, the view has %llu", table,
               (unsigned long long)rows, (unsigned long long)live);
    char *dl = path_in(base, "delta");
    fuzz_rmrf(dl);
    cdc_delta_result_t dr;
    xo = (cdc_export_options_t){.file_rows = 2};
    prc = cdc_export_delta(store, table, dl, &xo, &dr, &e);
    FUZZ_CHECK(prc == 0 || prc == CDC_EINVAL, "Delta export of %s: %d %s", table, prc, e.msg);
    FUZZ_CHECK(prc || dr.rows == live, "Delta export of %s: %llu rows, the view has %llu", table,
               (unsigned long long)dr.rows, (unsigned long long)live);
    if (!prc) { /* a refresh of what did not change commits nothing */
        prc = cdc_export_delta(store, table, dl, &xo, &dr, &e);
        FUZZ_CHECK(prc == 0 && dr.version == -1, "Delta refresh of unchanged %s: %d v%lld %s", table, prc,
                   (long long)dr.version, e.msg);
    }
    fuzz_rmrf(dl);
    free(dl);

    cdc_hash_options_t ho = {0};
    int refused;
    ho.ranges = 3;
    FUZZ_CHECK(hash_rows(table, &ho, &refused) == live, "quantile range hashes of %s miss rows", table);
    ho.ranges = 0;
    ho.range_width = 7;
    ho.algorithm = CDC_HASH_LOOKUP3;
    uint64_t w = hash_rows(table, &ho, &refused);
    FUZZ_CHECK(refused || w == live, "width range hashes of %s: %llu rows of %llu", table,
               (unsigned long long)w, (unsigned long long)live);

    char *sql = NULL;
    int rc = cdc_hash_sql(store, table, NULL, &ho, &sql, &e);
    FUZZ_CHECK(rc == 0 || rc == CDC_ENOTFOUND || rc == CDC_EINVAL, "hash SQL of %s: %d %s", table, rc, e.msg);
    free(sql);

    cdc_stats_t s;
    FUZZ_CHECK(cdc_store_stats(store, table, &s, &e) == 0, "stats of %s: %s", table, e.msg);
    FUZZ_CHECK(s.rows_live == live, "%s: the live-row counter says %llu, the view has %llu rows", table,
               (unsigned long long)s.rows_live, (unsigned long long)live);
}

static void forget_tables(void)
{
    cdc_strings_free(seen_names, nseen);
    free(seen_reads);
    seen_names = NULL;
    seen_reads = NULL;
    nseen = 0;
}

static void note_tables(void)
{
    cdc_error_t e = {0};
    FUZZ_CHECK(cdc_store_tables(store, &seen_names, &nseen, &e) == 0, "tables: %s", e.msg);
    seen_reads = calloc(nseen ? nseen : 1, sizeof *seen_reads);
    for (size_t i = 0; i < nseen; i++) {
        cdc_stats_t s;
        FUZZ_CHECK(cdc_store_stats(store, seen_names[i], &s, &e) == 0, "stats of %s: %s", seen_names[i], e.msg);
        seen_reads[i] = s.events_read;
    }
}

static int touched(const char *table)
{
    cdc_error_t e = {0};
    cdc_stats_t s;
    FUZZ_CHECK(cdc_store_stats(store, table, &s, &e) == 0, "stats of %s: %s", table, e.msg);
    for (size_t i = 0; i < nseen; i++)
        if (strcmp(seen_names[i], table) == 0) return s.events_read != seen_reads[i];
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (runs++ % RESET_EVERY == RESET_EVERY - 1) reopen();
    note_tables();
    write_file(infile, data, size);

    cdc_file_options_t fo = {0};
    cdc_apply_result_t tot = {0};
    cdc_error_t e = {0};
    fo.batch_size = 4;
    fo.apply.max_record_bytes = 32768;
    int rc = cdc_store_apply_file(store, infile, &fo, &tot, &e);
    FUZZ_CHECK(rc == 0, "cdc_store_apply_file returned %d: %s", rc, e.msg);
    FUZZ_CHECK(tot.dead_letters_known <= tot.dead_letters, "%llu dead letters met again of %llu",
               (unsigned long long)tot.dead_letters_known, (unsigned long long)tot.dead_letters);
    dead_known += tot.dead_letters_known;
    uint64_t lines = count_lines(data, size);
    FUZZ_CHECK(tot.read == lines, "%llu records read from %llu lines", (unsigned long long)tot.read,
               (unsigned long long)lines);

    char **tables = NULL;
    size_t nt = 0;
    FUZZ_CHECK(cdc_store_tables(store, &tables, &nt, &e) == 0, "tables: %s", e.msg);
    for (size_t i = 0; i < nt; i++)
        if (touched(tables[i])) check_table(tables[i]);
    cdc_strings_free(tables, nt);

    cdc_stats_t total;
    FUZZ_CHECK(cdc_store_stats(store, NULL, &total, &e) == 0, "stats: %s", e.msg);
    cdc_dlq_iter_t *dq = NULL;
    cdc_dead_letter_t dl;
    uint64_t ndead = 0;
    FUZZ_CHECK(cdc_dlq_open(store, &dq, &e) == 0, "dead letters: %s", e.msg);
    while ((rc = cdc_dlq_next(dq, &dl, &e)) == 1) {
        FUZZ_CHECK(dl.reason && *dl.reason, "dead letter %llu without a reason",
                   (unsigned long long)dl.id);
        ndead++;
    }
    FUZZ_CHECK(rc == 0, "dead letters: %d %s", rc, e.msg);
    cdc_dlq_close(dq);
    FUZZ_CHECK(ndead + dead_known == total.dead_letters,
               "%llu dead letters stored and %llu met again, the counter says %llu", (unsigned long long)ndead,
               (unsigned long long)dead_known, (unsigned long long)total.dead_letters);
    forget_tables();
    return 0;
}
