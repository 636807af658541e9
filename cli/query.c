/*
 * query.c: the hash and reconcile subcommands, thin layers over
 * cdc_hash_ranges(), cdc_hash_sql() and cdc_reconcile().
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- hash ---- */

static const char *hash_usage =
    "usage: cdcstore hash --db DIR --table SCHEMA.TABLE [--ranges N | --range-width W]\n"
    "                     [--hash md5|lookup3] [--sql [--source-table SCHEMA.TABLE]]\n"
    "Prints, per key range of the table, one line: range number, lower bound\n"
    "(inclusive), upper bound (exclusive), row count and 64-bit hash (hex), tab\n"
    "separated; '-' is an open bound.  The hash is the sum modulo 2^64 of the rows'\n"
    "md5-derived hashes (see cdcstore.h, cdc_row_hash).\n"
    "  --ranges N         about N ranges of equal row counts (quantiles of the replica)\n"
    "  --range-width W    ranges [k*W, (k+1)*W) of a single integer key (non-empty ones)\n"
    "  --hash ALGO        row hash: md5 (default; PostgreSQL's md5()) or lookup3\n"
    "                     (PostgreSQL's hashtextextended(), several times cheaper there)\n"
    "  --sql              print instead the PostgreSQL query that computes the same\n"
    "                     (range, rows, hash) over the source table; run it with\n"
    "                     SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC';\n"
    "                     SET extra_float_digits = 1;  the query knows the source's\n"
    "                     types only as far as the replica does (timestamptz,\n"
    "                     interval, timetz from a schema); `cdcstore reconcile`\n"
    "                     reads them from the source (char(n), domains, money,\n"
    "                     date and timestamp keys), and is the comparison to use\n"
    "  --source-table T   the source table's name in that query (default: --table)\n";

/* --hash: 0 ok, -1 unknown. */
static int parse_algo(const char *s, int *out)
{
    if (!strcmp(s, "md5")) *out = CDC_HASH_MD5;
    else if (!strcmp(s, "lookup3")) *out = CDC_HASH_LOOKUP3;
    else return -1;
    return 0;
}

/* The largest --ranges: each range is a row of output and a sum. */
#define MAX_RANGES 100000000

int cmd_hash(int argc, char **argv)
{
    const char *db = NULL, *table = NULL, *source_table = NULL;
    cdc_hash_options_t ho = {0};
    int sql = 0;
    uint64_t v;
    static struct option lo[] = {{"db", 1, 0, 'd'},          {"table", 1, 0, 't'}, {"ranges", 1, 0, 'n'},
                                 {"range-width", 1, 0, 'w'}, {"sql", 0, 0, 'S'},   {"source-table", 1, 0, 's'},
                                 {"hash", 1, 0, 'H'},        {"help", 0, 0, 'h'},  {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:t:n:w:Ss:H:h", lo, NULL)) != -1) {
        switch (c) {
        case 'H':
            if (parse_algo(optarg, &ho.algorithm)) {
                cli_printf_escaped(stderr, "cdcstore hash: --hash %s: expected md5 or lookup3", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'd': db = optarg; break;
        case 't': table = optarg; break;
        case 'n':
            if (cli_parse_uint("hash", "--ranges", optarg, 1, MAX_RANGES, &v)) return EXIT_USAGE;
            ho.ranges = (size_t)v;
            break;
        case 'w':
            if (cli_parse_uint("hash", "--range-width", optarg, 1, INT64_MAX, &v)) return EXIT_USAGE;
            ho.range_width = (int64_t)v;
            break;
        case 'S': sql = 1; break;
        case 's': source_table = optarg; break;
        case 'h': fputs(hash_usage, stdout); return EXIT_OK;
        default: fputs(hash_usage, stderr); return EXIT_USAGE;
        }
    }
    if (!db || !table || optind != argc || (ho.ranges && ho.range_width)) {
        fputs(hash_usage, stderr);
        return EXIT_USAGE;
    }
    cdc_store_t *st;
    int r = cli_open(db, 0, 1, &st, NULL);
    if (r) return r;
    cdc_error_t e = {0};
    int rc;
    if (sql) {
        char *q = NULL;
        if (!(rc = cdc_hash_sql(st, table, source_table, &ho, &q, &e))) fputs(q, stdout);
        free(q);
    } else {
        cdc_range_hash_t *rh = NULL;
        size_t n = 0;
        if (!(rc = cdc_hash_ranges(st, table, &ho, &rh, &n, &e)))
            for (size_t i = 0; i < n; i++)
                printf("%lld\t%s\t%s\t%llu\t%016llx\n", (long long)rh[i].index,
                       rh[i].lower_json ? rh[i].lower_json : "-", rh[i].upper_json ? rh[i].upper_json : "-",
                       (unsigned long long)rh[i].rows, (unsigned long long)rh[i].hash);
        cdc_range_hashes_free(rh, n);
    }
    cdc_store_close(st);
    return rc ? cli_fail(&e, rc) : EXIT_OK;
}

/* ---- reconcile ---- */

static const char *reconcile_usage =
    "usage: cdcstore reconcile --db DIR --table SCHEMA.TABLE --source CONNINFO\n"
    "                          [--source-table SCHEMA.TABLE] [--ranges N | --range-width W]\n"
    "                          [--threshold ROWS] [--rechecks N] [--recheck-wait MS]\n"
    "                          [--hash md5|lookup3]\n"
    "Compares the table with its PostgreSQL source by per-range counts and hashes,\n"
    "narrows differing ranges down to keys, and prints one line per difference,\n"
    "tab separated: kind, key, replica row, source row (JSON, '-' when absent):\n"
    "  missing    the row is in the source, not in the replica\n"
    "  extra      the row is in the replica, not in the source\n"
    "  different  both have the row, with different values\n"
    "A fifth field 'unsettled' marks a row that kept changing on every recheck.\n"
    "Columns on one side only print as missing-column / extra-column NAME.\n"
    "Suspected differences are read again on both sides before they are reported,\n"
    "so changes still in flight under a live load are not reported.  The summary\n"
    "on stderr counts the rows missing, extra and different (whatever column\n"
    "differs), the columns on one side only, and the suspected differences that\n"
    "were gone when read again.\n"
    "CONNINFO is a libpq connection string or URI; passwords come from it,\n"
    "PGPASSFILE or PGPASSWORD and are never printed.\n"
    "Exit status: 0 equal, 1 different, 2 error.\n"
    "  --ranges N         first-level ranges (default: one per 8192 rows)\n"
    "  --range-width W    first-level ranges [k*W, (k+1)*W) (single integer key)\n"
    "  --threshold ROWS   compare row by row below this many rows (default 16384)\n"
    "  --rechecks N       rounds of rechecks, 1 to 30 (default 5)\n"
    "  --recheck-wait MS  wait before the first recheck, doubled each round, 1 to\n"
    "                     3600000 (default 500)\n"
    "  --hash ALGO        row hash: md5 (default) or lookup3 (hashtextextended: the\n"
    "                     source spends several times less CPU on it)\n";

static void print_json_row(const cdc_diff_t *d, const char *const *v, const size_t *l)
{
    if (!v) {
        fputs("-", stdout);
        return;
    }
    putchar('{');
    for (size_t i = 0; i < d->ncols; i++) {
        fputs(i ? "," : "", stdout);
        cdc_json_write_string(stdout, d->names[i], strlen(d->names[i]));
        putchar(':');
        if (!v[i]) fputs("null", stdout);
        else cdc_json_write_string(stdout, v[i], l[i]);
    }
    putchar('}');
}

static void on_diff(void *opaque, const cdc_diff_t *d)
{
    (void)opaque;
    static const char *kinds[] = {"?", "missing", "extra", "different"};
    const char *kind = d->kind >= 1 && d->kind <= 3 ? kinds[d->kind] : "?";
    if (d->column) {
        /* A column name from the source or the records: escaped. */
        printf("%s-column\t", kind);
        cli_write_escaped(stdout, d->column, strlen(d->column));
        putchar('\n');
        return;
    }
    printf("%s\t%s\t", kind, d->key_json);
    print_json_row(d, d->replica, d->replica_lens);
    putchar('\t');
    print_json_row(d, d->source, d->source_lens);
    if (d->unsettled) fputs("\tunsettled", stdout);
    putchar('\n');
}

int cmd_reconcile(int argc, char **argv)
{
    const char *db = NULL, *table = NULL, *source = NULL;
    cdc_reconcile_options_t ro = {0};
    uint64_t v;
    static struct option lo[] = {{"db", 1, 0, 'd'},          {"table", 1, 0, 't'},        {"source", 1, 0, 'S'},
                                 {"source-table", 1, 0, 's'}, {"ranges", 1, 0, 'n'},       {"range-width", 1, 0, 'w'},
                                 {"threshold", 1, 0, 'T'},    {"rechecks", 1, 0, 'R'},     {"recheck-wait", 1, 0, 'W'},
                                 {"hash", 1, 0, 'H'},         {"help", 0, 0, 'h'},         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:t:S:s:n:w:T:R:W:H:h", lo, NULL)) != -1) {
        switch (c) {
        case 'H':
            if (parse_algo(optarg, &ro.algorithm)) {
                cli_printf_escaped(stderr, "cdcstore reconcile: --hash %s: expected md5 or lookup3", optarg);
                return 2;
            }
            break;
        case 'd': db = optarg; break;
        case 't': table = optarg; break;
        case 'S': source = optarg; break;
        case 's': ro.source_table = optarg; break;
        /* Exit status 2 is an error for reconcile too: a usage error is one. */
        case 'n':
            if (cli_parse_uint("reconcile", "--ranges", optarg, 1, MAX_RANGES, &v)) return 2;
            ro.ranges = (size_t)v;
            break;
        case 'w':
            if (cli_parse_uint("reconcile", "--range-width", optarg, 1, INT64_MAX, &v)) return 2;
            ro.range_width = (int64_t)v;
            break;
        case 'T':
            if (cli_parse_uint("reconcile", "--threshold", optarg, 1, INT64_MAX, &v)) return 2;
            ro.threshold = v;
            break;
        case 'R': /* the wait doubles each round: 30 rounds are years */
            if (cli_parse_uint("reconcile", "--rechecks", optarg, 1, 30, &v)) return 2;
            ro.rechecks = (int)v;
            break;
        case 'W':
            if (cli_parse_uint("reconcile", "--recheck-wait", optarg, 1, 3600000, &v)) return 2;
            ro.recheck_ms = (int)v;
            break;
        case 'h': fputs(reconcile_usage, stdout); return 0;
        default: fputs(reconcile_usage, stderr); return 2;
        }
    }
    if (!db || !table || !source || optind != argc || (ro.ranges && ro.range_width)) {
        fputs(reconcile_usage, stderr);
        return 2;
    }
    ro.on_diff = on_diff;
    ro.log = cli_log;
    cdc_reconcile_result_t res;
    cdc_error_t e = {0};
    int rc = cdc_reconcile(db, table, source, &ro, &res, &e);
    fflush(stdout);
    if (rc) {
        cli_print_error("cdcstore reconcile", &e, rc);
        return 2;
    }
    uint64_t diffs = res.missing + res.extra + res.different + res.columns;
    /* "different" counts rows whose values differ (in any column); columns
     * present on one side only are counted apart, as they are printed
     * (missing-column / extra-column).  A suspected difference that was gone
     * when both sides were read again was a change still in flight. */
    cli_note("info",
                       "cdcstore reconcile: %s: %llu %s in the replica, %llu in the source as of LSN %X/%X; "
                       "%llu %s compared, %llu differed, %llu %s read back; rows: %llu missing, %llu extra, "
                       "%llu different; %llu %s on one side only; %llu suspected %s gone when read again "
                       "(changes in flight, not reported); %.2f s",
                       table, (unsigned long long)res.replica_rows, cli_plural(res.replica_rows, "row", "rows"),
                       (unsigned long long)res.source_rows, (unsigned)(res.start_lsn >> 32), (unsigned)res.start_lsn,
                       (unsigned long long)res.ranges_compared, cli_plural(res.ranges_compared, "range", "ranges"),
                       (unsigned long long)res.ranges_differing, (unsigned long long)res.rows_fetched,
                       cli_plural(res.rows_fetched, "row", "rows"), (unsigned long long)res.missing,
                       (unsigned long long)res.extra, (unsigned long long)res.different,
                       (unsigned long long)res.columns, cli_plural(res.columns, "column", "columns"),
                       (unsigned long long)res.transient, cli_plural(res.transient, "difference", "differences"),
                       res.seconds);
    if (diffs) { /* differences the replica cannot help: values it does not know */
        cdc_store_t *st;
        char **cols;
        size_t n;
        cdc_open_options_t oo = {.read_only = 1};
        if (cdc_store_open(db, &oo, &st, NULL) == 0) {
            if (cdc_store_unknown_columns(st, table, &cols, &n, NULL) == 0) {
                for (size_t i = 0; i < n; i++)
                    cli_note("info",
                                       "cdcstore reconcile: note: column %s appeared at the source after rows of "
                                       "the replica were written, and no schema gave its default (or a rename made "
                                       "it): those rows hold "
                                       "NULL for a value the replica does not know (re-read the table, e.g. an "
                                       "incremental snapshot, to fill it)",
                                       cols[i]);
                cdc_strings_free(cols, n);
            }
            cdc_store_close(st);
        }
    }
    return diffs ? 1 : 0;
}
