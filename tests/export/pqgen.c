/*
 * pqgen.c: writes a Parquet file with the library's writer (query/parquet.c)
 * from a tab-separated text, for the reader test (parquet_read.py): line 1
 * the column names, line 2 their type descriptors ("-" for none), then one
 * row per line.  A field that is exactly \N is NULL; \\, \t, \n and \r
 * stand for a backslash, a tab, a newline and a carriage return.
 *
 *   pqgen [-r rows_per_group] [-c zstd|snappy|none] [-s stats.json] [-k] in.tsv out.parquet
 *
 * -s writes the Delta statistics JSON; -k reports a bad row on stderr and
 * goes on (exit 3 at the end) instead of stopping at it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../query/parquet.h"

static size_t split(char *line, char ***fields, size_t *cap)
{
    size_t n = 0;
    for (char *p = line;;) {
        if (n == *cap) {
            *cap = *cap ? 2 * *cap : 16;
            *fields = realloc(*fields, *cap * sizeof **fields);
        }
        (*fields)[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = 0;
        p = tab + 1;
    }
    return n;
}

/* Unescapes s in place; returns its length, or -1 for \N (NULL). */
static long unescape(char *s)
{
    if (!strcmp(s, "\\N")) return -1;
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            *o++ = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p;
        } else {
            *o++ = *p;
        }
    }
    return o - s;
}

static void drain(FILE *f, cdc__buf *out, uint64_t *off)
{
    if (out->len && fwrite(out->p, 1, out->len, f) != out->len) {
        perror("write");
        exit(1);
    }
    *off += out->len;
    out->len = 0;
}

int main(int argc, char **argv)
{
    cdc__pq_options o = {0};
    const char *stats = NULL;
    int keep = 0, c;
    while ((c = getopt(argc, argv, "r:c:s:k")) != -1) {
        if (c == 'r') o.row_group_rows = strtoull(optarg, NULL, 10);
        else if (c == 'c') o.compression = !strcmp(optarg, "snappy") ? CDC__PQ_SNAPPY : !strcmp(optarg, "none") ? CDC__PQ_NONE : CDC__PQ_ZSTD;
        else if (c == 's') stats = optarg;
        else if (c == 'k') keep = 1;
        else return 2;
    }
    if (argc - optind != 2) {
        fprintf(stderr, "usage: pqgen [-r rows] [-c zstd|snappy|none] [-s stats.json] [-k] in.tsv out.parquet\n");
        return 2;
    }
    FILE *in = fopen(argv[optind], "r"), *out = fopen(argv[optind + 1], "w");
    if (!in || !out) {
        perror("open");
        return 1;
    }
    char *line = NULL, *tline = NULL;
    size_t lcap = 0, tcap = 0, ncap = 0, tfcap = 0, fcap = 0;
    char **names = NULL, **types = NULL, **fields = NULL;
    ssize_t len;
    if (getline(&line, &lcap, in) < 0 || getline(&tline, &tcap, in) < 0) {
        fprintf(stderr, "pqgen: no header\n");
        return 1;
    }
    line[strcspn(line, "\n")] = 0;
    tline[strcspn(tline, "\n")] = 0;
    size_t ncols = split(line, &names, &ncap);
    if (split(tline, &types, &tfcap) != ncols) {
        fprintf(stderr, "pqgen: %zu names, another number of types\n", ncols);
        return 1;
    }
    for (size_t k = 0; k < ncols; k++)
        if (!strcmp(types[k], "-")) types[k] = NULL;
    cdc__pq *pq;
    cdc_error_t err = {0};
    if (cdc__pq_open((const char *const *)names, (const char *const *)types, ncols, &o, &pq, &err)) {
        fprintf(stderr, "pqgen: %s\n", err.msg);
        return 1;
    }
    line = NULL;
    lcap = 0;
    const char **vals = calloc(ncols + 1, sizeof *vals);
    size_t *lens = calloc(ncols + 1, sizeof *lens);
    cdc__buf buf = {0};
    uint64_t off = 0, lineno = 2;
    int bad = 0;
    while ((len = getline(&line, &lcap, in)) >= 0) {
        lineno++;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (split(line, &fields, &fcap) != ncols) {
            fprintf(stderr, "pqgen: line %llu: wrong number of fields\n", (unsigned long long)lineno);
            return 1;
        }
        for (size_t k = 0; k < ncols; k++) {
            long l = unescape(fields[k]);
            vals[k] = l < 0 ? NULL : fields[k];
            lens[k] = l < 0 ? 0 : (size_t)l;
        }
        if (cdc__pq_row(pq, vals, lens, &buf, off, &err)) {
            fprintf(stderr, "pqgen: line %llu: %s\n", (unsigned long long)lineno, err.msg);
            if (!keep) return 3;
            bad = 1;
        }
        drain(out, &buf, &off);
    }
    if (cdc__pq_end(pq, &buf, off, &err)) {
        fprintf(stderr, "pqgen: %s\n", err.msg);
        return 1;
    }
    drain(out, &buf, &off);
    if (fclose(out)) {
        perror("close");
        return 1;
    }
    if (stats) {
        cdc__buf_reset(&buf);
        cdc__pq_stats_json(pq, &buf);
        FILE *s = fopen(stats, "w");
        if (!s || fwrite(buf.p, 1, buf.len, s) != buf.len || fclose(s)) {
            perror(stats);
            return 1;
        }
    }
    cdc__buf_free(&buf);
    cdc__pq_free(pq);
    return bad ? 3 : 0;
}
