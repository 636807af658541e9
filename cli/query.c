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
    "                     [--sql [--source-table SCHEMA.TABLE]]\n"
    "Prints, per key range of the table, one line: range number, lower bound\n"
    "(inclusive), upper bound (exclusive), row count and 64-bit hash (hex), tab\n"
    "separated; '-' is an open bound.  The hash is the sum modulo 2^64 of the rows'\n"
    "md5-derived hashes (see cdcstore.h, cdc_row_hash).\n"
    "  --ranges N         about N ranges of equal row counts (quantiles of the replica)\n"
    "  --range-width W    ranges [k*W, (k+1)*W) of a single integer key (non-empty ones)\n"
    "  --sql              print instead the PostgreSQL query that computes the same\n"
    "                     (range, rows, hash) over the source table; run it with\n"
    "                     SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC';\n"
    "                     SET extra_float_digits = 1;\n"
    "  --source-table T   the source table's name in that query (default: --table)\n";

static int parse_u64(const char *s, long long *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v <= 0) return -1;
    *out = v;
    return 0;
}

int cmd_hash(int argc, char **argv)
{
    const char *db = NULL, *table = NULL, *source_table = NULL;
    cdc_hash_options_t ho = {0};
    int sql = 0;
    long long v;
    static struct option lo[] = {{"db", 1, 0, 'd'},          {"table", 1, 0, 't'}, {"ranges", 1, 0, 'n'},
                                 {"range-width", 1, 0, 'w'}, {"sql", 0, 0, 'S'},   {"source-table", 1, 0, 's'},
                                 {"help", 0, 0, 'h'},        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:t:n:w:Ss:h", lo, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 't': table = optarg; break;
        case 'n':
        case 'w':
            if (parse_u64(optarg, &v)) {
                fprintf(stderr, "cdcstore hash: --%s takes a positive integer\n", c == 'n' ? "ranges" : "range-width");
                return 2;
            }
            if (c == 'n') ho.ranges = (size_t)v;
            else ho.range_width = v;
            break;
        case 'S': sql = 1; break;
        case 's': source_table = optarg; break;
        case 'h': fputs(hash_usage, stdout); return 0;
        default: fputs(hash_usage, stderr); return 2;
        }
    }
    if (!db || !table || optind != argc || (ho.ranges && ho.range_width)) {
        fputs(hash_usage, stderr);
        return 2;
    }
    cdc_store_t *st;
    int r = cli_open(db, 0, 1, &st);
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
    return rc ? cli_fail(&e, rc) : 0;
}
