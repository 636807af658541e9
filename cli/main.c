/*
 * main.c: the cdcstore command.  Each subcommand is a thin layer over the
 * library's API (include/cdcstore.h): parse options, open the replica, call,
 * print.  Exit status: 0 success, 1 error, 2 usage error, 3 the run finished
 * but wrote dead letters, 4 the run stopped at a bad record (--on-error stop).
 */
#include <getopt.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdcstore.h"
#include "cli.h"

/* ---- Logging ---- */

int cli_log_json = 0;
int cli_log_level = CDC_LOG_INFO;

void cli_log(void *opaque, int level, const char *facility, const char *msg)
{
    (void)opaque;
    if (level > cli_log_level) return;
    const char *lv = level <= CDC_LOG_ERROR ? "error" : level == CDC_LOG_WARN ? "warn"
                     : level == CDC_LOG_INFO ? "info" : "debug";
    if (cli_log_json) {
        cli_json_line(stderr, lv, facility, msg, strlen(msg));
    } else {
        /* Messages carry table names, keys and values from the records. */
        cli_printf_escaped(stderr, "cdcstore: %s: %s: %s", lv, facility, msg);
    }
}

int cli_open(const char *db, int create, int read_only, cdc_store_t **st, int *created)
{
    cdc_open_options_t o = {.create_if_missing = create, .read_only = read_only, .log = cli_log};
    cdc_error_t e = {0};
    struct stat sb;
    if (created) *created = 0;
    if (!db) {
        fprintf(stderr, "cdcstore: --db DIR is required\n");
        return EXIT_USAGE;
    }
    int absent = create && lstat(db, &sb) != 0 && errno == ENOENT;
    int rc = cdc_store_open(db, &o, st, &e);
    if (rc) {
        cli_printf_escaped(stderr, "cdcstore: %s", e.msg);
        return EXIT_ERR;
    }
    if (created) *created = absent;
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

int cli_remove_new_replica(cdc_store_t *st, const char *db)
{
    cdc_stats_t s;
    int empty = cdc_store_stats(st, NULL, &s, NULL) == 0 && !s.events_read && !s.dead_letters;
    cdc_store_close(st);
    /* Only what RocksDB made there since cli_open found no DIR: nftw does
     * not follow symbolic links (FTW_PHYS) nor leave the filesystem. */
    if (!empty || nftw(db, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT)) return 0;
    cli_note("info", "cdcstore: nothing was applied: %s, created by this run, is removed again", db);
    return 1;
}

void cli_print_error(const char *who, const cdc_error_t *e, int rc)
{
    const char *name = cdc_strerror(rc);
    if (!e->msg[0]) cli_printf_escaped(stderr, "%s: %s", who, name);
    else if (strcasestr(e->msg, name)) cli_printf_escaped(stderr, "%s: %s", who, e->msg);
    else cli_printf_escaped(stderr, "%s: %s (%s)", who, e->msg, name);
}

int cli_fail(const cdc_error_t *e, int rc)
{
    cli_print_error("cdcstore", e, rc);
    return EXIT_ERR;
}

/* ---- Column declarations (apply and ingest) ---- */

/* Applies --decimal T.C=S and --column-type T.C=TYPE options to the replica;
 * with st NULL only checks their form (and the scale), so that a command can
 * refuse them before it creates a replica.  Returns 0, or an exit status
 * after printing the error. */
/* A declaration's value in one spelling, to compare two: "numeric:2" for
 * --decimal C=2, --decimal C=02 and --column-type C=numeric:2; the
 * aliases of a type as the type. */
static void declared_as(const char *value, int is_decimal, char *out, size_t n)
{
    char *end;
    if (is_decimal || !strncmp(value, "numeric:", 8) || !strncmp(value, "decimal:", 8)) {
        long sc = strtol(is_decimal ? value : value + 8, &end, 10);
        if (!*end) {
            snprintf(out, n, "numeric:%ld", sc);
            return;
        }
    }
    if (!strcmp(value, "timestamp-us")) value = "timestamp";
    else if (!strcmp(value, "time-us")) value = "time";
    snprintf(out, n, "%s", value);
}

int cli_declare_columns(cdc_store_t *st, const char *cmd, char **decimals, size_t nd, char **types, size_t nt)
{
    cdc_error_t e = {0};
    for (size_t i = 0; i < nd + nt; i++) {
        int is_decimal = i < nd;
        char *spec = is_decimal ? decimals[i] : types[i - nd];
        char *eq = strrchr(spec, '='), *dot = eq ? memrchr(spec, '.', (size_t)(eq - spec)) : NULL;
        if (!eq || !dot || dot == spec || !memchr(spec, '.', (size_t)(dot - spec)) || dot + 1 == eq) {
            cli_printf_escaped(stderr, "cdcstore %s: %s %s: expected SCHEMA.TABLE.COLUMN=%s", cmd,
                               is_decimal ? "--decimal" : "--column-type", spec, is_decimal ? "SCALE" : "TYPE");
            return EXIT_USAGE;
        }
        char table[512], col[256], flag[1024];
        snprintf(table, sizeof table, "%.*s", (int)(dot - spec), spec);
        snprintf(col, sizeof col, "%.*s", (int)(eq - dot - 1), dot + 1);
        uint64_t scale = 0;
        snprintf(flag, sizeof flag, "--decimal %.*s", (int)(eq + 1 - spec), spec);
        if (is_decimal && cli_parse_uint(cmd, flag, eq + 1, 0, 1000, &scale)) return EXIT_USAGE;
        /* one declaration per column: two that differ cannot both hold */
        for (size_t j = 0; !st && j < i; j++) {
            const char *o = j < nd ? decimals[j] : types[j - nd];
            const char *oeq = strrchr(o, '=');
            char a[64], b[64];
            declared_as(oeq + 1, j < nd, a, sizeof a);
            declared_as(eq + 1, is_decimal, b, sizeof b);
            if ((size_t)(oeq - o) == (size_t)(eq - spec) && !memcmp(o, spec, (size_t)(eq - spec)) && strcmp(a, b)) {
                cli_printf_escaped(stderr, "cdcstore %s: column %.*s declared twice, differently (%s and %s)", cmd,
                                   (int)(eq - spec), spec, o, spec);
                return EXIT_USAGE;
            }
        }
        if (!st) continue;
        int rc = is_decimal ? cdc_store_set_decimal_scale(st, table, col, (int)scale, &e)
                            : cdc_store_set_column_type(st, table, col, eq + 1, &e);
        if (rc) return cli_fail(&e, rc);
    }
    return 0;
}

/* ---- apply ---- */

/* SIGINT or SIGTERM gives up the batch in progress (nothing of it is
 * written; the replica keeps every batch before it) and ends the command
 * within milliseconds with status 128 + the signal. */
static volatile int stop_flag;
static volatile sig_atomic_t stop_signal;
/* Set (>= 0) once everything is applied and said: the status a signal ends
 * the process with while the store closes. */
static volatile sig_atomic_t exit_on_signal = -1;
/* 1 while a batch's write runs (cdc_apply_options_t.writing): the one step
 * of an apply an interrupt does not cut short, most of a second for a batch
 * of 1,000,000 records (a stop took 1.05 s in a CI run,
 * tests/faults/signal_stop.sh).  A signal then ends the process at once,
 * as a crash would: RocksDB writes the batch to its write-ahead log as one
 * record before its memtables, and the next open recovers the record whole
 * or drops it whole (tests/unit/test_crash.c kills applies at any point). */
static volatile int writing_flag;
static void on_signal(int sig)
{
    if (exit_on_signal >= 0) _exit(exit_on_signal);
    if (writing_flag) {
        static const char m[] = "cdcstore apply: interrupted while a batch was being written: the replica holds "
                                "that batch whole or not at all, and every batch before it; apply the same input "
                                "again to resume\n";
        ssize_t w = write(2, m, sizeof m - 1);
        (void)w;
        _exit(128 + sig);
    }
    stop_signal = sig;
    stop_flag = 1;
}

/* ", N other (heartbeats, transaction records, messages)" when there are
 * such records, so that the summary's figures add up to the records read. */
static const char *other_words(uint64_t n)
{
    static char b[96];
    b[0] = 0;
    if (n) snprintf(b, sizeof b, ", %llu other (heartbeats, transaction records, messages)", (unsigned long long)n);
    return b;
}

typedef struct progress {
    int tty;
    double start;
    double last;
} progress;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void apply_progress(void *opaque, const cdc_apply_result_t *t, uint64_t bytes)
{
    progress *p = opaque;
    double n = now();
    if (!p->tty || n - p->last < 0.5) return;
    p->last = n;
    fprintf(stderr, "\r%llu %s (%.1f MB), %.0f records/s, %llu applied, %llu %s   ", (unsigned long long)t->read,
            cli_plural(t->read, "record", "records"), bytes / 1e6, t->read / (n - p->start + 1e-9),
            (unsigned long long)t->applied, (unsigned long long)t->dead_letters,
            cli_plural(t->dead_letters, "dead letter", "dead letters"));
}

static const char *apply_usage =
    "usage: cdcstore apply --db DIR [--batch-size N] [--batch-mib M] [--on-error continue|stop]\n"
    "                      [--decimal SCHEMA.TABLE.COLUMN=SCALE]... [--column-type S.T.C=TYPE]...\n"
    "                      [--sync] FILE...\n"
    "Applies Kafka records (kcat -C -J lines, or bare Debezium envelopes; - is stdin)\n"
    "to the replica in DIR (created when absent), batch by batch, guarded by the\n"
    "ordering version.  Bad records go to the dead-letter store (cdcstore dlq list).\n"
    "A FILE that cannot be opened stops the command before it applies anything; a\n"
    "DIR this run created is removed again when the run fails before applying any.\n"
    "  --batch-size N     records per atomic batch, 1 to 100000000 (default 10000)\n"
    "  --batch-mib M      a batch also ends at M MiB of records, 0 to 1048576 (default 64;\n"
    "                     0: no limit, batches of N records whatever their size)\n"
    "From a pipe (kcat -C -J following a topic, into -), a batch also ends 100 ms\n"
    "after its first record when no further record has come.\n"
    "  --on-error MODE    continue (default): dead-letter and go on; stop: stop at the\n"
    "                     first bad record, after applying the records before it\n"
    "  --decimal T.C=S    the column's NUMERIC values arrive as Debezium's base64\n"
    "                     'precise' encoding with scale S, 0 to 1000 (remembered by\n"
    "                     the replica)\n"
    "  --column-type T.C=TYPE  without a schema in the envelopes, the column's numbers\n"
    "                     are a time type: timestamp (microseconds), timestamp-ms, date\n"
    "                     (days), time (microseconds), time-ms (TIME(0-3)) or\n"
    "                     interval (microseconds); or\n"
    "                     bytea (base64, Debezium's\n"
    "                     binary.handling.mode=bytes); stored as PostgreSQL's text;\n"
    "                     or timestamptz (the text kept, typed in Parquet and Delta,\n"
    "                     years before 1 and past 9999 in PostgreSQL's form in CSV)\n"
    "  --sync             fsync every batch\n"
    "  --quiet            no summary line\n"
    "SIGINT or SIGTERM stops at once: the batch in progress is given up (nothing of\n"
    "it written; during its write, the replica holds it whole or not at all), every\n"
    "batch before it stays; exit status 128 + the signal.\n";

static int cmd_apply(int argc, char **argv)
{
    const char *db = NULL;
    cdc_file_options_t fo = {0};
    int quiet = 0;
    char **decimals = cli_calloc((size_t)argc + 1, sizeof *decimals);
    char **types = cli_calloc((size_t)argc + 1, sizeof *types);
    int ndec = 0, ntypes = 0, created = 0;
    uint64_t v;
    static struct option lo[] = {{"db", 1, 0, 'd'},       {"batch-size", 1, 0, 'b'}, {"on-error", 1, 0, 'e'},
                                 {"decimal", 1, 0, 'D'},  {"sync", 0, 0, 's'},       {"quiet", 0, 0, 'q'},
                                 {"column-type", 1, 0, 'T'}, {"help", 0, 0, 'h'},   {"batch-mib", 1, 0, 'M'},
                                 {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:b:e:D:sqT:hM:", lo, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'M':
            if (cli_parse_uint("apply", "--batch-mib", optarg, 0, 1048576, &v)) {
                free(decimals);
                free(types);
                return EXIT_USAGE;
            }
            fo.batch_bytes = v ? (size_t)v << 20 : SIZE_MAX;
            break;
        case 'b':
            if (cli_parse_uint("apply", "--batch-size", optarg, 1, 100000000, &v)) {
                free(decimals);
                free(types);
                return EXIT_USAGE;
            }
            fo.batch_size = (size_t)v;
            break;
        case 'e':
            if (!strcmp(optarg, "stop")) fo.apply.on_error = CDC_ON_ERROR_STOP;
            else if (!strcmp(optarg, "continue")) fo.apply.on_error = CDC_ON_ERROR_CONTINUE;
            else { fprintf(stderr, "cdcstore apply: --on-error takes continue or stop\n"); free(decimals); free(types); return EXIT_USAGE; }
            break;
        case 'D': decimals[ndec++] = optarg; break;
        case 'T': types[ntypes++] = optarg; break;
        case 's': fo.apply.sync = 1; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(apply_usage, stdout); free(decimals); free(types); return EXIT_OK;
        default: fputs(apply_usage, stderr); free(decimals); free(types); return EXIT_USAGE;
        }
    }
    if (optind >= argc || !db) {
        fprintf(stderr, "cdcstore apply: %s\n", !db ? "--db DIR is required" : "no FILE to apply (- for stdin)");
        fputs(apply_usage, stderr);
        free(decimals);
        free(types);
        return EXIT_USAGE;
    }
    /* What can be refused before the replica is opened (and perhaps
     * created) is: the column declarations' form, and input files that
     * cannot be opened. */
    int r = cli_declare_columns(NULL, "apply", decimals, (size_t)ndec, types, (size_t)ntypes);
    for (int k = optind; k < argc && !r; k++) {
        struct stat fsb;
        if (!strcmp(argv[k], "-")) continue;
        if (access(argv[k], R_OK) || stat(argv[k], &fsb)) {
            cli_printf_escaped(stderr, "cdcstore apply: %s: cannot open: %s; nothing was applied", argv[k],
                               strerror(errno));
            r = EXIT_ERR;
        } else if (S_ISDIR(fsb.st_mode)) { /* opens, and fails at its first read: after the files before it */
            cli_printf_escaped(stderr, "cdcstore apply: %s: a directory, not a file of records; nothing was applied",
                               argv[k]);
            r = EXIT_ERR;
        }
    }
    cdc_store_t *st;
    if (r || (r = cli_open(db, 1, 0, &st, &created))) {
        free(decimals);
        free(types);
        return r;
    }
    cdc_error_t e = {0};
    r = cli_declare_columns(st, "apply", decimals, (size_t)ndec, types, (size_t)ntypes);
    free(decimals);
    free(types);
    if (r) {
        if (created) cli_remove_new_replica(st, db);
        else cdc_store_close(st);
        return r;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    progress pg = {isatty(2), now(), 0};
    fo.progress = apply_progress;
    fo.progress_opaque = &pg;
    fo.stop = &stop_flag;
    fo.apply.writing = &writing_flag;
    cdc_apply_result_t all = {0};
    int status = EXIT_OK;
    int i;
    for (i = optind; i < argc && !stop_flag; i++) {
        cdc_apply_result_t t = {0};
        int rc = cdc_store_apply_file(st, argv[i], &fo, &t, &e);
        all.read += t.read;
        all.applied += t.applied;
        all.stale += t.stale;
        all.duplicate += t.duplicate;
        all.tombstones += t.tombstones;
        all.dead_letters += t.dead_letters;
        all.dead_letters_known += t.dead_letters_known;
        all.other += t.other;
        if (rc == CDC_ESTOPPED) {
            cli_printf_escaped(stderr, "cdcstore: %s", e.msg);
            status = EXIT_STOPPED;
            break;
        }
        if (rc == -EINTR && stop_flag) {
            cli_printf_escaped(stderr, "cdcstore apply: %s; apply the same input again to resume", e.msg);
            status = 128 + (stop_signal ? stop_signal : SIGTERM);
            break;
        }
        if (rc) {
            status = cli_fail(&e, rc);
            break;
        }
    }
    if (status == EXIT_OK && stop_flag) { /* stopped between two files, or after the last batch */
        if (i < argc) cli_note("warn", "cdcstore apply: interrupted: the files before the %s are applied", argv[i]);
        else cli_note("warn", "cdcstore apply: interrupted after the last batch was written: the whole input is "
                      "applied");
        status = 128 + (stop_signal ? stop_signal : SIGTERM);
    }
    if (pg.tty) fputc('\n', stderr);
    double secs = now() - pg.start;
    int nothing = !all.read && !all.dead_letters;
    /* A run that failed before it read a record has no figures to give:
     * the error said what happened. */
    if (!quiet && !(nothing && status != EXIT_OK))
        cli_note(stop_flag ? "warn" : "info",
                "cdcstore apply: %llu %s in %.2f s (%.0f records/s): %llu applied, %llu stale, "
                "%llu duplicate, %llu %s, %llu %s%s%s",
                (unsigned long long)all.read, cli_plural(all.read, "record", "records"), secs,
                all.read / (secs + 1e-9), (unsigned long long)all.applied, (unsigned long long)all.stale,
                (unsigned long long)all.duplicate, (unsigned long long)all.tombstones,
                cli_plural(all.tombstones, "tombstone", "tombstones"), (unsigned long long)all.dead_letters,
                cli_plural(all.dead_letters, "dead letter", "dead letters"), other_words(all.other),
                stop_flag ? " (interrupted)" : "");
    /* Failed or stopped before anything was applied: a replica this run
     * created goes again (cli_remove_new_replica checks the replica's own
     * counters), rather than stay as an empty directory. */
    if (status != EXIT_OK && nothing && created) {
        cli_remove_new_replica(st, db);
        fflush(NULL);
        return status;
    }
    if (status == EXIT_OK && all.dead_letters) {
        cli_dead_letters_note(stderr, "apply", &all, db);
        status = EXIT_DEAD;
    }
    fflush(NULL);
    /* Signalled (interrupted, or after the last batch): end now rather than
     * wait in cdc_store_close for a memtable flush RocksDB has running (up
     * to a second after a large batch); a signal during the close ends it
     * the same way.  Nothing is lost: every applied batch is in the
     * write-ahead log, written to the system before its apply returned, and
     * the next open replays it, as after a crash (tests/unit/test_crash.c;
     * tests/faults/signal_stop.sh reopens after each stop).  What the close
     * would have added is the purge's count since the last batch
     * (store/gc.c, "Counting": lost as after a crash). */
    if (stop_flag) _exit(status);
    exit_on_signal = status;
    cdc_store_close(st);
    return status;
}

/* ---- export ---- */

static void export_progress(void *opaque, uint64_t rows, uint64_t bytes)
{
    progress *p = opaque;
    if (!p->tty) return;
    double n = now();
    fprintf(stderr, "\r%llu %s, %.1f MB, %.0f rows/s   ", (unsigned long long)rows, cli_plural(rows, "row", "rows"),
            bytes / 1e6, rows / (n - p->start + 1e-9));
}

static const char *export_usage =
    "usage: cdcstore export --db DIR --table SCHEMA.TABLE [--format csv|ndjson|parquet|delta]\n"
    "                       [--meta] [--where-key-range LOW:HIGH] [--output PATH] [--no-header]\n"
    "                       [--compression zstd|snappy|none] [--row-group-rows N] [--file-rows N]\n"
    "                       [--deletion-vectors]\n"
    "Writes the table's non-deleted rows in primary-key order.  CSV loads back with\n"
    "COPY t FROM 'file' (FORMAT csv, HEADER).  --meta adds __lsn and __deleted and\n"
    "includes deleted rows.  LOW and HIGH are keys as JSON ([10] or {\"id\":10});\n"
    "either may be empty; LOW is inclusive, HIGH exclusive.\n"
    "--output FILE replaces FILE atomically: FILE keeps its previous content until\n"
    "the new export is complete and synced, and stays as it was when the export\n"
    "fails or is killed.  Without --output (or with --output -) the rows go to\n"
    "standard output.\n"
    "parquet: one Parquet file typed by the source's column types (from the\n"
    "  envelopes' schemas; columns of no known type are strings), row groups of\n"
    "  --row-group-rows rows (default 1000000), pages compressed with zstd\n"
    "  (default), snappy or none.\n"
    "delta: a Delta Lake table in the directory --output (required).  The first\n"
    "  export writes version 0; each later one commits the next version, rewriting\n"
    "  only the files of the key ranges whose rows changed (one file per range of\n"
    "  --file-rows rows, default 250000, or the table's own when it has one).\n"
    "  Readers keep the previous version until the commit, and older versions\n"
    "  stay readable.\n"
    "  --deletion-vectors: refreshes mark the old rows of changed keys deleted\n"
    "  (Delta deletion vectors) and write the changed rows to a new file, instead\n"
    "  of rewriting every file that holds one: after changes at random keys a\n"
    "  refresh writes what changed, not the table.  Readers need the Delta\n"
    "  feature deletionVectors (Spark, deltalake's QueryBuilder; not\n"
    "  deltalake's to_pyarrow_table); the table keeps it.\n"
    "Without --table, every table is exported into the directory --output, as\n"
    "TABLE.csv, TABLE.ndjson, TABLE.parquet or a Delta table TABLE/ ('/' in a name\n"
    "written %2F, '%' written %25).  A table that fails is named and the others are\n"
    "still written (exit status 1); a table without columns (only dead letters name\n"
    "it) is skipped with a note.\n";

/* A count of rows for a flag (cli_parse_uint); 0 after a message on stderr
 * when it is not one. */
static uint64_t export_count(const char *flag, const char *v)
{
    uint64_t n;
    return cli_parse_uint("export", flag, v, 1, 1000000000, &n) ? 0 : n;
}

/* One table to one path in the export's format. */
static int export_one(cdc_store_t *st, const char *table, cdc_export_options_t *eo, int delta, const char *output,
                      progress *pg)
{
    cdc_error_t e = {0};
    uint64_t rows = 0, unknown = 0;
    eo->unknown_rows = &unknown;
    int rc;
    if (delta) {
        cdc_delta_result_t r;
        double t0 = now();
        rc = cdc_export_delta(st, table, output, eo, &r, &e);
        if (pg->tty) fputc('\n', stderr);
        if (!rc && r.version < 0 && r.deletion_vectors)
            cli_printf_escaped(stdout,
                               "%s: Delta table %s unchanged: %llu %s changed since its last version (the "
                               "replica's key journal), none with a row to write or delete; nothing committed "
                               "(%.1f s)",
                               table, output, (unsigned long long)r.keys_changed,
                               cli_plural(r.keys_changed, "key", "keys"), now() - t0);
        else if (!rc && r.version < 0)
            cli_printf_escaped(stdout,
                               "%s: Delta table %s unchanged: %llu key %s checked (%s), none changed; nothing "
                               "committed (%.1f s)",
                               table, output, (unsigned long long)r.ranges_checked,
                               cli_plural(r.ranges_checked, "range", "ranges"),
                               r.tracked ? "by the replica's change tracking" : "by hashing every row", now() - t0);
        else if (!rc && r.rewrite_reason && !r.created && !r.schema_changed)
            cli_printf_escaped(stdout,
                               "%s: Delta table %s version %lld: written anew, deletion vectors could not be used "
                               "(%s): %llu %s in %llu %s (%.1f MB), %llu %s removed (%.1f s)",
                               table, output, (long long)r.version, r.rewrite_reason,
                               (unsigned long long)r.rows_written, cli_plural(r.rows_written, "row", "rows"),
                               (unsigned long long)r.files_added, cli_plural(r.files_added, "file", "files"),
                               r.bytes_written / 1e6, (unsigned long long)r.files_removed,
                               cli_plural(r.files_removed, "file", "files"), now() - t0);
        else if (!rc && (r.created || r.schema_changed))
            cli_printf_escaped(stdout,
                               "%s: Delta table %s version %lld%s: %llu %s written to %llu %s (%.1f MB), %llu "
                               "%s removed (%.1f s)",
                               table, output, (long long)r.version,
                               r.created ? " (new)" : " (schema changed: every file rewritten)",
                               (unsigned long long)r.rows_written, cli_plural(r.rows_written, "row", "rows"),
                               (unsigned long long)r.files_added, cli_plural(r.files_added, "file", "files"),
                               r.bytes_written / 1e6, (unsigned long long)r.files_removed,
                               cli_plural(r.files_removed, "file", "files"), now() - t0);
        else if (!rc && r.deletion_vectors)
            cli_printf_escaped(
                stdout,
                "%s: Delta table %s version %lld: %llu %s; %llu %s changed (the replica's key journal): %llu "
                "old %s marked deleted in %llu %s (deletion vectors), %llu %s written to %llu %s (%.1f MB), %llu "
                "%s unchanged (%.1f s)",
                table, output, (long long)r.version, (unsigned long long)r.rows, cli_plural(r.rows, "row", "rows"),
                (unsigned long long)r.keys_changed, cli_plural(r.keys_changed, "key", "keys"),
                (unsigned long long)r.rows_marked, cli_plural(r.rows_marked, "row", "rows"),
                (unsigned long long)r.files_marked, cli_plural(r.files_marked, "file", "files"),
                (unsigned long long)r.rows_written, cli_plural(r.rows_written, "row", "rows"),
                (unsigned long long)r.files_added, cli_plural(r.files_added, "file", "files"), r.bytes_written / 1e6,
                (unsigned long long)r.files_kept, cli_plural(r.files_kept, "file", "files"), now() - t0);
        else if (!rc)
            cli_printf_escaped(
                stdout,
                "%s: Delta table %s version %lld: %llu %s; %llu of %llu key %s changed, %llu %s written "
                "to %llu %s (%.1f MB), %llu %s removed, %llu kept; changed ranges %s, %llu %s read (%.1f s)",
                table, output, (long long)r.version, (unsigned long long)r.rows, cli_plural(r.rows, "row", "rows"),
                (unsigned long long)r.ranges_changed, (unsigned long long)r.ranges_checked,
                cli_plural(r.ranges_checked, "range", "ranges"), (unsigned long long)r.rows_written,
                cli_plural(r.rows_written, "row", "rows"), (unsigned long long)r.files_added,
                cli_plural(r.files_added, "file", "files"), r.bytes_written / 1e6, (unsigned long long)r.files_removed,
                cli_plural(r.files_removed, "file", "files"), (unsigned long long)r.files_kept,
                r.tracked ? "from the replica's change tracking" : "found by hashing every row",
                (unsigned long long)r.rows_read, cli_plural(r.rows_read, "row", "rows"), now() - t0);
    } else {
        rc = output ? cli_export_file(st, table, eo, output, &rows, &e) : cdc_export_fd(st, table, eo, 1, &rows, &e);
        if (pg->tty) fputc('\n', stderr);
    }
    if (!rc && unknown)
        cli_printf_escaped(stderr,
                           "cdcstore export: warning: %s: %llu %s written before a column appeared at the "
                           "source, whose default no schema gave (or which a rename made); that column is written "
                           "as NULL there. Re-read the table (an incremental snapshot) to fill it",
                           table, (unsigned long long)unknown, cli_plural(unknown, "row was", "rows were"));
    /* A stopped table's rows are as they were when it stopped: the source
     * may have rewritten them since (cdc_store_table_stopped). */
    const char *why = NULL;
    if (!rc && cdc_store_table_stopped(st, table, &why, NULL) == 0 && why)
        cli_printf_escaped(stderr,
                           "cdcstore export: warning: %s is stopped (%s): its rows are as they were when it "
                           "stopped, and may differ from the source; `cdcstore resume`, then re-read the table",
                           table, why);
    if (rc) return cli_fail(&e, rc);
    return EXIT_OK;
}

int cli_parse_range(const char *spec, char **lo, char **hi)
{
    /* The split is the ':' that is outside any JSON string or bracket. */
    int depth = 0, instr = 0;
    for (const char *p = spec; *p; p++) {
        if (instr) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') instr = 0;
            continue;
        }
        if (*p == '"') instr = 1;
        else if (*p == '[' || *p == '{') depth++;
        else if (*p == ']' || *p == '}') depth--;
        else if (*p == ':' && depth == 0) {
            *lo = p == spec ? NULL : strndup(spec, (size_t)(p - spec));
            *hi = p[1] ? cli_strdup(p + 1) : NULL;
            return 0;
        }
    }
    return -1;
}

/* A table's file name in export --output DIR: the name itself, with '/'
 * written %2F and '%' written %25.  PostgreSQL allows '/' in quoted names,
 * and table names come from whoever writes to the source: unescaped, "a/b"
 * named a directory that does not exist (and the export of every table
 * stopped there), and a schema "x/.." would have put the file outside DIR. */
static char *table_file_name(const char *t)
{
    size_t n = strlen(t), k = 0;
    char *o = malloc(3 * n + 1);
    if (!o) abort();
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '/' || t[i] == '%') {
            o[k++] = '%';
            o[k++] = "0123456789ABCDEF"[(unsigned char)t[i] >> 4];
            o[k++] = "0123456789ABCDEF"[(unsigned char)t[i] & 15];
        } else {
            o[k++] = t[i];
        }
    }
    o[k] = 0;
    return o;
}

/* Whether path (which may not exist yet) is dir or lies inside it: an
 * export there would write among the replica's own files (export --output
 * DB/CURRENT replaced RocksDB's CURRENT and broke the replica). */
static int inside_dir(const char *dir, const char *path)
{
    char *rd = realpath(dir, NULL), *rp = realpath(path, NULL);
    if (!rp) { /* a new file: its directory */
        char *copy = strdup(path), *slash = copy ? strrchr(copy, '/') : NULL;
        if (copy) {
            if (slash == copy) slash[1] = 0;
            else if (slash) *slash = 0;
            rp = realpath(slash ? copy : ".", NULL);
        }
        free(copy);
    }
    size_t n = rd ? strlen(rd) : 0;
    int in = rd && rp && !strncmp(rp, rd, n) && (rp[n] == 0 || rp[n] == '/');
    free(rd);
    free(rp);
    return in;
}

static int cmd_export(int argc, char **argv)
{
    const char *db = NULL, *table = NULL, *output = NULL;
    cdc_export_options_t eo = {.header = 1};
    char *lo_key = NULL, *hi_key = NULL;
    int delta = 0;
    static struct option lo[] = {{"db", 1, 0, 'd'},          {"table", 1, 0, 't'},
                                 {"format", 1, 0, 'f'},      {"meta", 0, 0, 'm'},
                                 {"output", 1, 0, 'o'},      {"where-key-range", 1, 0, 'r'},
                                 {"no-header", 0, 0, 'H'},   {"compression", 1, 0, 'c'},
                                 {"row-group-rows", 1, 0, 'g'}, {"file-rows", 1, 0, 'F'},
                                 {"deletion-vectors", 0, 0, 'V'},
                                 {"help", 0, 0, 'h'},        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:t:f:mo:r:Hh", lo, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 't': table = optarg; break;
        case 'f':
            delta = 0;
            if (!strcmp(optarg, "csv")) eo.format = CDC_FORMAT_CSV;
            else if (!strcmp(optarg, "ndjson")) eo.format = CDC_FORMAT_NDJSON;
            else if (!strcmp(optarg, "parquet")) eo.format = CDC_FORMAT_PARQUET;
            else if (!strcmp(optarg, "delta")) eo.format = CDC_FORMAT_PARQUET, delta = 1;
            else {
                fprintf(stderr, "cdcstore export: --format takes csv, ndjson, parquet or delta, not %s\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'c':
            if (!strcmp(optarg, "zstd")) eo.compression = CDC_COMPRESS_ZSTD;
            else if (!strcmp(optarg, "snappy")) eo.compression = CDC_COMPRESS_SNAPPY;
            else if (!strcmp(optarg, "none")) eo.compression = CDC_COMPRESS_NONE;
            else {
                fprintf(stderr, "cdcstore export: --compression takes zstd, snappy or none, not %s\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'g':
            if (!(eo.row_group_rows = export_count("--row-group-rows", optarg))) return EXIT_USAGE;
            break;
        case 'F':
            if (!(eo.file_rows = export_count("--file-rows", optarg))) return EXIT_USAGE;
            break;
        case 'm': eo.meta = 1; break;
        case 'V': eo.deletion_vectors = 1; break;
        case 'o': output = strcmp(optarg, "-") ? optarg : NULL; break; /* -: standard output, as apply reads - */
        case 'H': eo.header = 0; break;
        case 'r':
            if (cli_parse_range(optarg, &lo_key, &hi_key)) {
                fprintf(stderr, "cdcstore export: --where-key-range %s: expected LOW:HIGH\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'h': fputs(export_usage, stdout); return EXIT_OK;
        default: fputs(export_usage, stderr); return EXIT_USAGE;
        }
    }
    if (!db || (!table && !output) || optind < argc) {
        fprintf(stderr, "cdcstore export: %s\n",
                !db ? "--db DIR is required"
                    : optind < argc ? "unexpected argument (options only)"
                                    : "give --table SCHEMA.TABLE, or --output DIR for every table");
        fputs(export_usage, stderr);
        return EXIT_USAGE;
    }
    if (delta && !output) {
        fprintf(stderr, "cdcstore export: --format delta needs --output DIR\n");
        return EXIT_USAGE;
    }
    if (delta && (eo.meta || lo_key || hi_key)) {
        fprintf(stderr, "cdcstore export: a Delta table holds the whole view: no --meta, no --where-key-range\n");
        return EXIT_USAGE;
    }
    if (!table && (lo_key || hi_key)) {
        fprintf(stderr, "cdcstore export: --where-key-range needs --table\n");
        return EXIT_USAGE;
    }
    eo.lower_json = lo_key;
    eo.upper_json = hi_key;
    if (output && db && inside_dir(db, output)) {
        fprintf(stderr, "cdcstore export: --output ");
        cli_write_escaped(stderr, output, strlen(output));
        fprintf(stderr, " is inside the replica's directory ");
        cli_write_escaped(stderr, db, strlen(db));
        fprintf(stderr, ": give a path outside it\n");
        free(lo_key);
        free(hi_key);
        return EXIT_USAGE;
    }
    cdc_store_t *st;
    int r = cli_open(db, 0, 1, &st, NULL);
    if (r) return r;
    progress pg = {isatty(2) && output, now(), 0};
    eo.progress = export_progress;
    eo.progress_opaque = &pg;
    if (table) {
        r = export_one(st, table, &eo, delta, output, &pg);
    } else {
        /* every table into the directory output */
        char **tables = NULL;
        size_t n = 0;
        cdc_error_t e = {0};
        static const char *const ext[] = {".csv", ".ndjson", ".parquet"};
        if (mkdir(output, 0755) && errno != EEXIST) {
            cli_printf_escaped(stderr, "cdcstore export: %s: %s", output, strerror(errno));
            r = EXIT_ERR;
        } else if ((r = cdc_store_tables(st, &tables, &n, &e))) {
            r = cli_fail(&e, r);
        }
        /* A table that fails (a value its format cannot hold, a name Delta
         * refuses) is said and the others go on: one bad table stopped the
         * export of every table after it.  The status says a table failed. */
        size_t failed = 0, skipped = 0;
        int first = 0;
        for (size_t i = 0; !r && i < n; i++) {
            const char *const *cols;
            size_t ncols = 0;
            if (cdc_store_columns(st, tables[i], &cols, &ncols, NULL) == 0 && ncols == 0 && !eo.meta) {
                cli_printf_escaped(stderr,
                                   "cdcstore export: %s skipped: it has no columns (no event of it was applied, "
                                   "only dead letters name it)",
                                   tables[i]);
                skipped++;
                continue;
            }
            char *path = NULL, *name = table_file_name(tables[i]);
            if (asprintf(&path, "%s/%s%s", output, name, delta ? "" : ext[eo.format]) < 0) abort();
            free(name);
            pg.start = now();
            int ri = export_one(st, tables[i], &eo, delta, path, &pg);
            if (!ri && !delta) cli_printf_escaped(stdout, "%s: %s", tables[i], path);
            if (ri) {
                failed++;
                if (!first) first = ri;
            }
            free(path);
        }
        if (failed)
            cli_printf_escaped(stderr, "cdcstore export: %zu of %zu tables failed (each said above); the others are in %s",
                               failed, n - skipped, output);
        if (!r) r = first;
        cdc_strings_free(tables, n);
    }
    cdc_store_close(st);
    free(lo_key);
    free(hi_key);
    return r;
}

/* ---- get ---- */

static int cmd_get(int argc, char **argv)
{
    const char *db = NULL, *table = NULL;
    const char *usage = "usage: cdcstore get --db DIR --table SCHEMA.TABLE KEYJSON\n"
                        "Prints the stored row of one key as JSON, with its version and deleted flag.\n"
                        "KEYJSON is {\"order_id\": 2} or [2].  Exit status 1 when the key is absent.\n";
    int r = cli_db_table_options(argc, argv, usage, 1, &db, &table);
    if (r >= 0) return r;
    cdc_store_t *st;
    if ((r = cli_open(db, 0, 1, &st, NULL))) return r;
    cdc_row_t row;
    cdc_error_t e = {0};
    int rc = cdc_store_get(st, table, argv[optind], &row, &e);
    if (rc) {
        cdc_store_close(st);
        return cli_fail(&e, rc);
    }
    printf("{\"key\":%s,\"deleted\":%s,\"snapshot\":%s,\"version\":{\"epoch\":%llu,\"kind\":%u,\"lsn\":%llu},"
           "\"ts_ms\":%lld,\"row\":{",
           row.key_json, row.deleted ? "true" : "false", row.from_snapshot ? "true" : "false",
           (unsigned long long)row.epoch, row.kind, (unsigned long long)row.lsn, (long long)row.ts_ms);
    for (size_t i = 0; i < row.ncols; i++) {
        fputs(i ? "," : "", stdout);
        cdc_json_write_string(stdout, row.names[i], strlen(row.names[i]));
        putchar(':');
        if (!row.values[i]) printf("null");
        else cdc_json_write_string(stdout, row.values[i], row.lens[i]);
    }
    printf("}}\n");
    cdc_store_close(st);
    return EXIT_OK;
}

/* ---- stats ---- */

/* One table's counters (st given: also the columns whose value older rows
 * do not know, added at the source without a schema to say the default). */
static void print_stats(cdc_store_t *st, const char *name, const cdc_stats_t *s, int json, int first)
{
#define STATS_NAME(field, SLOT, slot, what) #field,
#define STATS_VALUE(field, SLOT, slot, what) s->field,
    const char *names[] = {CDC_STATS_MAP(STATS_NAME)};
    uint64_t v[] = {CDC_STATS_MAP(STATS_VALUE)};
#undef STATS_NAME
#undef STATS_VALUE
    size_t n = sizeof v / sizeof v[0];
    char **cols = NULL;
    size_t ncols = 0;
    if (st && cdc_store_unknown_columns(st, name, &cols, &ncols, NULL)) ncols = 0, cols = NULL;
    if (json) {
        fputs(first ? "" : ",", stdout);
        cdc_json_write_string(stdout, name, strlen(name)); /* a table name: the records' text */
        fputs(":{", stdout);
        for (size_t i = 0; i < n; i++) printf("%s\"%s\":%llu", i ? "," : "", names[i], (unsigned long long)v[i]);
        if (ncols) {
            fputs(",\"unknown_columns\":[", stdout);
            for (size_t i = 0; i < ncols; i++) {
                if (i) putchar(',');
                cdc_json_write_string(stdout, cols[i], strlen(cols[i]));
            }
            putchar(']');
        }
        printf("}");
    } else {
        cli_write_escaped(stdout, name, strlen(name));
        putchar('\n');
        for (size_t i = 0; i < n; i++) printf("  %-24s %llu\n", names[i], (unsigned long long)v[i]);
        if (ncols) {
            fputs("  unknown in rows written before the column appeared (no schema gave its default): ", stdout);
            for (size_t i = 0; i < ncols; i++) {
                if (i) fputs(", ", stdout);
                cli_write_escaped(stdout, cols[i], strlen(cols[i]));
            }
            putchar('\n');
        }
    }
    if (cols) cdc_strings_free(cols, ncols);
}

static int cmd_stats(int argc, char **argv)
{
    const char *db = NULL, *only = NULL;
    int json = 0;
    static struct option lo[] = {{"db", 1, 0, 'd'}, {"json", 0, 0, 'j'}, {"table", 1, 0, 't'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *usage = "usage: cdcstore stats --db DIR [--table SCHEMA.TABLE] [--json]\n"
                        "Prints the replica's counters per table and in total.\n";
    int c;
    while ((c = getopt_long(argc, argv, "d:jt:h", lo, NULL)) != -1) {
        if (c == 'd') db = optarg;
        else if (c == 'j') json = 1;
        else if (c == 't') only = optarg;
        else if (c == 'h') { fputs(usage, stdout); return EXIT_OK; }
        else { fputs(usage, stderr); return EXIT_USAGE; }
    }
    if (optind < argc) {
        fprintf(stderr, "cdcstore stats: unexpected argument: %s\n", argv[optind]);
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    cdc_store_t *st;
    int r = cli_open(db, 0, 1, &st, NULL);
    if (r) return r;
    cdc_error_t e = {0};
    char **tables;
    size_t n;
    cdc_store_tables(st, &tables, &n, &e);
    cdc_stats_t s;
    int rc = 0;
    /* a table the replica does not hold is an error, as for get, hash and
     * export (it printed nothing, exit 0) */
    if (only && (rc = cdc_store_stats(st, only, &s, &e))) {
        cdc_strings_free(tables, n);
        cdc_store_close(st);
        return cli_fail(&e, rc);
    }
    if (json) printf("{\"tables\":{");
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (only && strcmp(only, tables[i])) continue;
        if ((rc = cdc_store_stats(st, tables[i], &s, &e))) break;
        print_stats(st, tables[i], &s, json, first);
        first = 0;
    }
    if (json) printf("}");
    if (!rc && !only) {
        rc = cdc_store_stats(st, NULL, &s, &e);
        if (json) printf(",");
        if (!rc) print_stats(NULL, "total", &s, json, 1);
    }
    if (json) printf("}\n");
    cdc_strings_free(tables, n);
    cdc_store_close(st);
    return rc ? cli_fail(&e, rc) : EXIT_OK;
}

/* ---- dlq ---- */

static int cmd_dlq(int argc, char **argv)
{
    const char *usage = "usage: cdcstore dlq list --db DIR [--json]\n"
                        "Lists the dead letters: id, reason, source position, and the record.\n";
    if (argc < 2 || strcmp(argv[1], "list")) {
        int help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
        if (argc >= 2 && !help) cli_printf_escaped(stderr, "cdcstore dlq: unknown subcommand %s", argv[1]);
        fputs(usage, help ? stdout : stderr);
        return help ? EXIT_OK : EXIT_USAGE;
    }
    argc--;
    argv++;
    const char *db = NULL;
    int json = 0;
    static struct option lo[] = {{"db", 1, 0, 'd'}, {"json", 0, 0, 'j'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:jh", lo, NULL)) != -1) {
        if (c == 'd') db = optarg;
        else if (c == 'j') json = 1;
        else if (c == 'h') { fputs(usage, stdout); return EXIT_OK; }
        else { fputs(usage, stderr); return EXIT_USAGE; }
    }
    cdc_store_t *st;
    int r = cli_open(db, 0, 1, &st, NULL);
    if (r) return r;
    cdc_dlq_iter_t *it;
    cdc_error_t e = {0};
    cdc_dead_letter_t dl;
    int rc = cdc_dlq_open(st, &it, &e), count = 0;
    while (!rc && (rc = cdc_dlq_next(it, &dl, &e)) == 1) {
        if (json) {
            printf("{\"id\":%llu,\"reason\":", (unsigned long long)dl.id);
            cdc_json_write_string(stdout, dl.reason, strlen(dl.reason));
            printf(",\"topic\":");
            cdc_json_write_string(stdout, dl.topic, strlen(dl.topic));
            printf(",\"partition\":%d,\"offset\":%lld,\"source\":", (int)dl.partition, (long long)dl.offset);
            cdc_json_write_string(stdout, dl.source, strlen(dl.source));
            printf(",\"line\":%lld,\"record\":", (long long)dl.line);
            cdc_json_write_string(stdout, dl.record, dl.record_len);
            /* JSON text is UTF-8: a record that is not keeps its bytes here */
            if (!cli_utf8_valid(dl.record, dl.record_len)) {
                printf(",\"record_base64\":\"");
                cli_put_base64(stdout, dl.record, dl.record_len);
                putchar('"');
            }
            printf("}\n");
        } else {
            /* The reason and the record are the input's text: escaped.  The
             * record is cut at 200 bytes, back to the start of a character. */
            size_t cut = dl.record_len > 200 ? 200 : dl.record_len;
            while (cut < dl.record_len && cut > 0 && ((unsigned char)dl.record[cut] & 0xC0) == 0x80) cut--;
            char *reason = cli_escape(dl.reason, strlen(dl.reason));
            char *rec = cli_escape(dl.record, cut);
            printf("#%llu %s\n    record: %s%s\n", (unsigned long long)dl.id, reason, rec,
                   dl.record_len > 200 ? "..." : "");
            free(reason);
            free(rec);
        }
        count++;
        rc = 0;
    }
    cdc_dlq_close(it);
    cdc_store_close(st);
    if (rc < 0) return cli_fail(&e, rc);
    if (!json) cli_note("info", "%d %s", count, cli_plural((uint64_t)count, "dead letter", "dead letters"));
    return EXIT_OK;
}

/* ---- gc ---- */

static int cmd_gc(int argc, char **argv)
{
    const char *db = NULL, *table = NULL, *h = NULL, *age = NULL;
    static struct option lo[] = {{"db", 1, 0, 'd'},          {"table", 1, 0, 't'}, {"horizon-lsn", 1, 0, 'l'},
                                 {"older-than", 1, 0, 'o'}, {"help", 0, 0, 'h'},  {0, 0, 0, 0}};
    const char *usage =
        "usage: cdcstore gc --db DIR [--table SCHEMA.TABLE] (--horizon-lsn LSN | --older-than DURATION)\n"
        "Removes tombstones (and rows hidden by a completed re-snapshot or a truncate)\n"
        "whose version is below the table's replay horizon, and says how much disk\n"
        "space the purge gave back.  The horizon is recorded first; events older than\n"
        "it stay stale afterwards: a purged delete still blocks a late older update.\n"
        "The removal is done by a compaction of the tables' rows, and from then on by\n"
        "every compaction RocksDB runs.\n"
        "  --horizon-lsn LSN      no event still to come is older than LSN (e.g. the\n"
        "                         source LSN of the oldest record the topic still keeps);\n"
        "                         a number or PostgreSQL's X/Y form\n"
        "  --older-than DURATION  no change committed more than DURATION ago (30m, 12h,\n"
        "                         7d) is still to come: each table's horizon lies just\n"
        "                         above its newest tombstone older than that (by the\n"
        "                         source ts_ms), and below every row it holds from after\n"
        "                         it; a snapshot still running is never covered.  Also\n"
        "                         promised: no transaction not yet applied stays open\n"
        "                         longer than DURATION (its early changes carry older LSNs)\n"
        "With both, each table takes the lower horizon.\n";
    int c;
    while ((c = getopt_long(argc, argv, "d:t:l:o:h", lo, NULL)) != -1) {
        if (c == 'd') db = optarg;
        else if (c == 't') table = optarg;
        else if (c == 'l') h = optarg;
        else if (c == 'o') age = optarg;
        else if (c == 'h') { fputs(usage, stdout); return EXIT_OK; }
        else { fputs(usage, stderr); return EXIT_USAGE; }
    }
    if (!db || (!h && !age) || optind != argc) {
        fprintf(stderr, "cdcstore gc: %s\n",
                !db ? "--db DIR is required"
                    : optind != argc ? "unexpected argument (options only)"
                                     : "give --horizon-lsn LSN or --older-than DURATION (or both)");
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    cdc_gc_options_t o = {0};
    if (h && cli_parse_lsn("gc", "--horizon-lsn", h, &o.horizon_lsn)) return EXIT_USAGE;
    if (age && cli_parse_duration("gc", "--older-than", age, &o.older_than_ms)) return EXIT_USAGE;
    if (h && !o.horizon_lsn) { /* with --older-than too: the lower horizon, 0 */
        cli_note("info", "cdcstore gc: nothing lies below LSN 0: 0 tombstones removed");
        return EXIT_OK;
    }
    cdc_store_t *st;
    int r = cli_open(db, 0, 0, &st, NULL);
    if (r) return r;
    cdc_error_t e = {0};
    cdc_gc_result_t res;
    int rc = cdc_store_purge(st, table, &o, &res, &e);
    cdc_store_close(st);
    if (rc) return cli_fail(&e, rc);
    char where[96];
    if (res.horizon_lsn) snprintf(where, sizeof where, " below LSN %llu", (unsigned long long)res.horizon_lsn);
    else if (h && !age)
        snprintf(where, sizeof where, " below LSN %llu (the horizon already stood there)",
                 (unsigned long long)o.horizon_lsn);
    else snprintf(where, sizeof where, " (no table's horizon rose: no tombstone old enough)");
    cli_note("info", "cdcstore gc: %llu %s removed%s; table files: %llu bytes before, %llu after",
             (unsigned long long)res.purged, cli_plural(res.purged, "tombstone", "tombstones"), where,
             (unsigned long long)res.sst_bytes_before, (unsigned long long)res.sst_bytes_after);
    return EXIT_OK;
}

/* ---- tables ---- */

static int cmd_tables(int argc, char **argv)
{
    const char *db = NULL;
    const char *usage = "usage: cdcstore tables --db DIR\n"
                        "Lists the replica's tables, one a line; a table stopped by a column type\n"
                        "change is followed by a tab and why (`cdcstore resume` applies it again).\n";
    int r = cli_db_table_options(argc, argv, usage, 0, &db, NULL);
    if (r >= 0) return r;
    cdc_store_t *st;
    if ((r = cli_open(db, 0, 1, &st, NULL))) return r;
    char **t;
    size_t n;
    cdc_error_t e = {0};
    cdc_store_tables(st, &t, &n, &e);
    /* One name a line, escaped: a name is the records' text; a stopped
     * table is followed by a tab and why. */
    for (size_t i = 0; i < n; i++) {
        const char *why = NULL;
        cli_write_escaped(stdout, t[i], strlen(t[i]));
        if (cdc_store_table_stopped(st, t[i], &why, NULL) == 0 && why) {
            fputs("\tstopped: ", stdout);
            cli_write_escaped(stdout, why, strlen(why));
        }
        putchar('\n');
    }
    cdc_strings_free(t, n);
    cdc_store_close(st);
    return EXIT_OK;
}

/* ---- resume ---- */

static int cmd_resume(int argc, char **argv)
{
    const char *db = NULL, *table = NULL;
    const char *usage = "usage: cdcstore resume --db DIR --table SCHEMA.TABLE\n"
                        "Applies a stopped table's events again (`cdcstore tables` shows why a table\n"
                        "stopped: a column's type changed in a way that can change values the replica\n"
                        "will not see again).  Re-read the table from the source as well (a snapshot,\n"
                        "or an incremental snapshot after resuming).\n";
    int r = cli_db_table_options(argc, argv, usage, 0, &db, &table);
    if (r >= 0) return r;
    cdc_store_t *st;
    if ((r = cli_open(db, 0, 0, &st, NULL))) return r;
    cdc_error_t e = {0};
    const char *why = NULL;
    int rc = cdc_store_table_stopped(st, table, &why, &e);
    int was = !rc && why;
    if (!rc) rc = cdc_store_resume_table(st, table, &e);
    cdc_store_close(st);
    if (rc) return cli_fail(&e, rc);
    cli_note("info", "cdcstore resume: %s %s", table, was ? "resumed" : "was not stopped");
    return EXIT_OK;
}

/* ---- main ---- */

static const char *main_usage =
    "usage: cdcstore [--log-format text|json] [--verbose] COMMAND [OPTIONS]\n"
    "       cdcstore --version | --help\n"
    "Keeps a replica of PostgreSQL tables from Debezium change events, on RocksDB.\n\n"
    "commands:\n"
    "  apply      apply Kafka records from files (kcat -C -J lines or bare envelopes)\n"
    "  ingest     consume Debezium topics from Kafka into the replica\n"
    "  export     write a table's rows in key order as CSV, NDJSON, Parquet or a Delta table\n"
    "  get        print one row by primary key\n"
    "  hash       per-key-range row counts and hashes of a table\n"
    "  reconcile  compare a table with its PostgreSQL source and list every difference\n"
    "  stats      counters: events read, applied, stale, duplicates, tombstones, ...\n"
    "  status     positions, Kafka lag, the replica's age behind the source, counters\n"
    "  doctor     OK/WARN/FAIL checks: slot, retained WAL, publication, connector, lag, age\n"
    "  dlq list   list dead letters (bad records with their reason and position)\n"
    "  gc         remove tombstones below a replay horizon (an LSN)\n"
    "  tables     list the replica's tables (and why one is stopped)\n"
    "  resume     apply a stopped table's events again\n"
    "  version    print the version (also cdcstore --version)\n\n"
    "`cdcstore COMMAND --help` describes a command.\n";

/* At exit: what was printed must have reached standard output.  A write
 * that failed (a full disk, /dev/full, a closed descriptor) made every
 * command but export exit 0 with its output lost; it is an error (status 1)
 * naming the cause. */
static void check_stdout(void)
{
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    int e = errno ? errno : EIO;
    fprintf(stderr, "cdcstore: the output could not be written: %s\n", strerror(e));
    _exit(EXIT_ERR);
}

int main(int argc, char **argv)
{
    atexit(check_stdout);
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--log-format") || !strncmp(argv[i], "--log-format=", 13)) {
            if (argv[i][12] != '=' && i + 1 >= argc) {
                fprintf(stderr, "cdcstore: --log-format needs a value: text or json\n");
                return EXIT_USAGE;
            }
            const char *f = argv[i][12] == '=' ? argv[i] + 13 : argv[++i];
            if (strcmp(f, "text") && strcmp(f, "json")) {
                cli_printf_escaped(stderr, "cdcstore: --log-format %s: expected text or json", f);
                return EXIT_USAGE;
            }
            cli_log_json = !strcmp(f, "json");
        } else if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
            puts("cdcstore " CDC_VERSION_STRING);
            return EXIT_OK;
        } else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) cli_log_level = CDC_LOG_DEBUG;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(main_usage, stdout); return EXIT_OK; }
        else {
            cli_printf_escaped(stderr, "cdcstore: unknown option %s", argv[i]);
            fputs(main_usage, stderr);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        fputs(main_usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[i];
    int sub_argc = argc - i;
    char **sub_argv = argv + i;
    optind = 1;
    if (!strcmp(cmd, "apply")) return cmd_apply(sub_argc, sub_argv);
    if (!strcmp(cmd, "export")) return cmd_export(sub_argc, sub_argv);
    if (!strcmp(cmd, "get")) return cmd_get(sub_argc, sub_argv);
    if (!strcmp(cmd, "stats")) return cmd_stats(sub_argc, sub_argv);
    if (!strcmp(cmd, "status")) return cmd_status(sub_argc, sub_argv);
    if (!strcmp(cmd, "doctor")) return cmd_doctor(sub_argc, sub_argv);
    if (!strcmp(cmd, "dlq")) return cmd_dlq(sub_argc, sub_argv);
    if (!strcmp(cmd, "tables")) return cmd_tables(sub_argc, sub_argv);
    if (!strcmp(cmd, "gc")) return cmd_gc(sub_argc, sub_argv);
    if (!strcmp(cmd, "resume")) return cmd_resume(sub_argc, sub_argv);
    if (!strcmp(cmd, "ingest")) return cmd_ingest(sub_argc, sub_argv);
    if (!strcmp(cmd, "hash")) return cmd_hash(sub_argc, sub_argv);
    if (!strcmp(cmd, "reconcile")) return cmd_reconcile(sub_argc, sub_argv);
    if (!strcmp(cmd, "version")) { puts("cdcstore " CDC_VERSION_STRING); return EXIT_OK; }
    if (!strcmp(cmd, "help")) { fputs(main_usage, stdout); return EXIT_OK; }
    fprintf(stderr, "cdcstore: unknown command '%s'\n\n%s", cmd, main_usage);
    return EXIT_USAGE;
}
