/*
 * dv_write.c: the deletion vector codec (query/dv.c) from the command line,
 * for the reader test (dv_readers.sh), which checks our vectors with Spark
 * and deltalake and Spark's vectors with ours.  Row sets are read from
 * stdin, one set a line, row indexes separated by spaces (ascending).
 *
 *   dv_write file DIR            one vector file in DIR for all the lines;
 *                                prints each line's descriptor JSON
 *   dv_write inline              prints each line's inline descriptor JSON
 *   dv_write serialize           writes the first line's serialized vector
 *                                to stdout (bytes)
 *   dv_write read DIR PATH_OR_INLINE_DV OFFSET SIZE CARDINALITY
 *                                prints the rows of a "u" descriptor's vector,
 *                                one a line (the file's CRC and size checked)
 *
 * Exit 0 ok, 1 an error (on stderr), 2 usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../query/dv.h"

/* The next line's rows into *rows (realloc'd), their count in *n; 0 at the end. */
static int read_set(uint64_t **rows, size_t *n, size_t *cap)
{
    char *line = NULL;
    size_t lcap = 0;
    if (getline(&line, &lcap, stdin) < 0) {
        free(line);
        return 0;
    }
    *n = 0;
    for (char *p = line, *end; *p; p = end) {
        while (*p == ' ' || *p == '\n') p++;
        if (!*p) break;
        uint64_t v = strtoull(p, &end, 10);
        if (end == p) {
            fprintf(stderr, "dv_write: bad row at \"%.20s\"\n", p);
            exit(1);
        }
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 1024;
            *rows = realloc(*rows, *cap * sizeof **rows);
        }
        (*rows)[(*n)++] = v;
    }
    free(line);
    return 1;
}

int main(int argc, char **argv)
{
    cdc_error_t e = {0};
    uint64_t *rows = NULL;
    size_t n = 0, cap = 0;
    if (argc == 3 && !strcmp(argv[1], "file")) {
        cdc__dv_file *f = NULL;
        if (cdc__dv_file_create(argv[2], &f, &e)) goto fail;
        fprintf(stderr, "dv_write: %s/%s\n", argv[2], cdc__dv_file_name(f));
        while (read_set(&rows, &n, &cap)) {
            cdc__dv_desc d;
            if (cdc__dv_file_add(f, rows, n, &d, &e)) goto fail;
            cdc__buf j = {0};
            cdc__dv_desc_json(&d, &j);
            printf("%.*s\n", (int)j.len, j.p);
            cdc__buf_free(&j);
        }
        if (cdc__dv_file_close(f, &e)) goto fail;
        cdc__dv_file_free(f);
    } else if (argc == 2 && !strcmp(argv[1], "inline")) {
        while (read_set(&rows, &n, &cap)) {
            cdc__buf j = {0};
            if (cdc__dv_inline_json(rows, n, &j, &e)) goto fail;
            printf("%.*s\n", (int)j.len, j.p);
            cdc__buf_free(&j);
        }
    } else if (argc == 2 && !strcmp(argv[1], "serialize")) {
        if (!read_set(&rows, &n, &cap)) n = 0;
        cdc__buf b = {0};
        if (cdc__dv_serialize(rows, n, &b, &e)) goto fail;
        fwrite(b.p, 1, b.len, stdout);
        cdc__buf_free(&b);
    } else if (argc == 7 && !strcmp(argv[1], "read")) {
        cdc__dv_desc d = {0};
        snprintf(d.path, sizeof d.path, "%s", argv[3]);
        d.offset = strtoull(argv[4], NULL, 10);
        d.size = (uint32_t)strtoul(argv[5], NULL, 10);
        d.cardinality = strtoull(argv[6], NULL, 10);
        uint64_t *r = NULL;
        size_t m = 0;
        if (cdc__dv_read(argv[2], &d, 0, &r, &m, &e)) goto fail;
        for (size_t i = 0; i < m; i++) printf("%" PRIu64 "\n", r[i]);
        free(r);
    } else {
        fprintf(stderr, "usage: dv_write file DIR | inline | serialize | read DIR PATH OFFSET SIZE CARDINALITY\n");
        return 2;
    }
    free(rows);
    return 0;
fail:
    fprintf(stderr, "dv_write: %s\n", e.msg);
    return 1;
}
