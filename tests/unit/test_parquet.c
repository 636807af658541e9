/*
 * test_parquet.c: the Parquet writer (query/parquet.c) without a reader:
 * the file's frame ("PAR1", the footer and its length), empty and one-row
 * files, row groups cut by row count, every type descriptor accepted with
 * its values and NULLs, bad values rejected naming the column and the value
 * (and leaving the writer usable), and the Delta statistics JSON, which
 * shows what the parsers made of the text.  Reading the files back with
 * pyarrow and DuckDB is tests/export/run_parquet.sh.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "testutil.h"
#include "../../query/parquet.h"

/* A writer over ncols columns, the file in f, its offset in *off. */
typedef struct pqt {
    cdc__pq *pq;
    cdc__buf file;
    size_t ncols;
} pqt;

static void pqt_open(pqt *t, const char *const *names, const char *const *types, size_t n, uint64_t rg)
{
    memset(t, 0, sizeof *t);
    cdc__pq_options o = {.row_group_rows = rg};
    cdc_error_t e = {0};
    cr_assert_eq(cdc__pq_open(names, types, n, &o, &t->pq, &e), 0, "%s", e.msg);
    t->ncols = n;
}

/* Adds a row of NUL-terminated values (NULL: SQL NULL); returns the code. */
static int pqt_row(pqt *t, const char *const *v, cdc_error_t *e)
{
    size_t lens[64];
    for (size_t k = 0; k < t->ncols; k++) lens[k] = v[k] ? strlen(v[k]) : 0;
    cdc__buf out = {0};
    int rc = cdc__pq_row(t->pq, v, lens, &out, t->file.len, e);
    cdc__buf_put(&t->file, out.p, out.len);
    cdc__buf_free(&out);
    return rc;
}

static void pqt_end(pqt *t)
{
    cdc_error_t e = {0};
    cdc__buf out = {0};
    cr_assert_eq(cdc__pq_end(t->pq, &out, t->file.len, &e), 0, "%s", e.msg);
    cdc__buf_put(&t->file, out.p, out.len);
    cdc__buf_free(&out);
}

static char *pqt_stats(pqt *t)
{
    cdc__buf b = {0};
    cdc__pq_stats_json(t->pq, &b);
    cdc__buf_putc(&b, 0);
    return b.p;
}

static void pqt_free(pqt *t)
{
    cdc__pq_free(t->pq);
    cdc__buf_free(&t->file);
}

static int has(const cdc__buf *b, const char *s)
{
    return memmem(b->p, b->len, s, strlen(s)) != NULL;
}

/* The frame: "PAR1", data, footer, its 4-byte length, "PAR1". */
static void check_frame(const cdc__buf *f)
{
    cr_assert_geq(f->len, 12);
    cr_assert_eq(memcmp(f->p, "PAR1", 4), 0);
    cr_assert_eq(memcmp(f->p + f->len - 4, "PAR1", 4), 0);
    uint32_t flen;
    memcpy(&flen, f->p + f->len - 8, 4);
    cr_assert_leq((size_t)flen + 12, f->len, "footer length %u in a file of %zu", flen, f->len);
    /* The footer is a Thrift struct ending in its stop byte. */
    cr_assert_eq(f->p[f->len - 9], 0);
}

Test(parquet, empty_file_is_a_frame_with_the_schema)
{
    const char *names[] = {"id", "name"}, *types[] = {"int64", "string"};
    pqt t;
    pqt_open(&t, names, types, 2, 0);
    pqt_end(&t);
    check_frame(&t.file);
    uint32_t flen;
    memcpy(&flen, t.file.p + t.file.len - 8, 4);
    cr_assert_eq(flen + 12, t.file.len, "nothing between the magic and the footer");
    cr_assert(has(&t.file, "name") && has(&t.file, "cdcstore"));
    char *s = pqt_stats(&t);
    cr_assert_str_eq(s, "{\"numRecords\":0,\"minValues\":{},\"maxValues\":{},\"nullCount\":{\"id\":0,\"name\":0}}");
    free(s);
    cdc_error_t e = {0};
    cdc__buf out = {0};
    cr_assert_eq(cdc__pq_end(t.pq, &out, 0, &e), CDC_EINVAL, "a second end");
    const char *v[] = {"1", "x"};
    cr_assert_eq(pqt_row(&t, v, &e), CDC_EINVAL, "a row after the end");
    pqt_free(&t);
}

Test(parquet, zero_columns)
{
    pqt t;
    pqt_open(&t, NULL, NULL, 0, 0);
    pqt_end(&t);
    check_frame(&t.file);
    pqt_free(&t);
}

Test(parquet, bad_options)
{
    const char *names[] = {"a"};
    cdc__pq *pq = NULL;
    cdc_error_t e = {0};
    cdc__pq_options o = {.compression = 7};
    cr_assert_eq(cdc__pq_open(names, NULL, 1, &o, &pq, &e), CDC_EINVAL);
    cr_assert_null(pq);
    o = (cdc__pq_options){.zstd_level = 99};
    cr_assert_eq(cdc__pq_open(names, NULL, 1, &o, &pq, &e), CDC_EINVAL);
    const char *noname[] = {""};
    cr_assert_eq(cdc__pq_open(noname, NULL, 1, NULL, &pq, &e), CDC_EINVAL);
    cdc__pq_free(NULL);
}

/* Every descriptor with a few values, NULLs in each column. */
static const char *all_names[] = {"i8", "i16", "i32", "i64", "f32", "f64", "b", "s", "j", "u", "d52", "d38",
                                  "dv", "dt", "ts", "tz", "tm", "tms", "by", "st", "un", "dneg", "zt"};
static const char *all_types[] = {"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string",
                                  "string/io.debezium.data.Json", "string/io.debezium.data.Uuid", "decimal:2:5",
                                  "decimal:10", "decimal", "int32/io.debezium.time.Date",
                                  "int64/io.debezium.time.MicroTimestamp", "string/io.debezium.time.ZonedTimestamp",
                                  "int64/io.debezium.time.MicroTime", "int32/io.debezium.time.Time", "bytes",
                                  "struct", NULL, "decimal:-2:5", "string/io.debezium.time.ZonedTime"};
#define NALL (sizeof all_names / sizeof all_names[0])
static const char *all_rows[][NALL] = {
    {"-128", "-32768", "-2147483648", "-9223372036854775808", "NaN", "-Infinity", "t", "héllo", "{\"a\":1}",
     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "-999.99", "1.5", "NaN", "2024-02-29", "2024-01-02 03:04:05.123456",
     "2024-01-02T03:04:05.123456Z", "24:00:00", "00:00:00", "\\x00ff", "{\"x\":1}", "u", "100", "03:04:05Z"},
    {"127", "32767", "2147483647", "9223372036854775807", "1.5", "0.1", "f", "", "[]",
     "00000000-0000-0000-0000-000000000000", "999.99", "-0.0000000001", "1.2", "0044-03-15 BC",
     "0001-01-01 00:00:00 BC", "2024-01-02T03:04:05+05:30", "00:00:00", "23:59:59.999", "\\x", "{}", "", "-500",
     "x"},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL},
    {"0", "0", "0", "9007199254740993", "-0", "1e+300", "t", "zz", "null", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
     "0.5", "0", "-0.5", "9999-12-31", "9999-12-31 23:59:59.999999", "1970-01-01T00:00:00Z", "12:34:56.5",
     "13:00:00", "\\xdeadbeef", "{}", "z", "0", "x"},
};
#define NROWS (sizeof all_rows / sizeof all_rows[0])

Test(parquet, every_type_and_row_groups)
{
    for (uint64_t rg = 1; rg <= 5; rg++) {
        pqt t;
        pqt_open(&t, all_names, all_types, NALL, rg);
        cdc_error_t e = {0};
        for (size_t r = 0; r < NROWS; r++) {
            size_t before = t.file.len;
            cr_assert_eq(pqt_row(&t, all_rows[r], &e), 0, "row %zu: %s", r, e.msg);
            /* A row group is appended when its last row comes, not before. */
            size_t first = r == 0 ? 4 : 0;
            if ((r + 1) % rg == 0) cr_assert_gt(t.file.len, before + first, "rg %llu row %zu", (unsigned long long)rg, r);
            else cr_assert_eq(t.file.len, before + first, "rg %llu row %zu", (unsigned long long)rg, r);
        }
        cr_assert_eq(cdc__pq_rows(t.pq), NROWS);
        pqt_end(&t);
        check_frame(&t.file);
        for (size_t k = 0; k < NALL; k++) cr_assert(has(&t.file, all_names[k]));
        char *s = pqt_stats(&t);
        cr_assert(strstr(s, "\"numRecords\":4,"), "%s", s);
        cr_assert(strstr(s, "\"i64\":-9223372036854775808"), "%s", s);
        cr_assert(strstr(s, "\"maxValues\":{\"i8\":127,\"i16\":32767,\"i32\":2147483647,\"i64\":9223372036854775807"),
                  "%s", s);
        cr_assert(strstr(s, "\"d52\":-999.99") && strstr(s, "\"d52\":999.99"), "%s", s);
        cr_assert(strstr(s, "\"d38\":-0.0000000001") && strstr(s, "\"d38\":1.5000000000"), "%s", s);
        cr_assert(strstr(s, "\"dneg\":-500") && strstr(s, "\"dneg\":100"), "%s", s);
        /* -Infinity is no JSON, nor is a date before year 1, and a column
         * has both bounds or neither (delta_string_prefix): f64 and dt
         * appear in nullCount only */
        const char *nc = strstr(s, "\"nullCount\"");
        cr_assert(nc && strstr(s, "\"f64\":") > nc && strstr(s, "\"dt\":") > nc, "%s", s);
        /* a NaN in a float column: no bounds (as DuckDB's writer), so that a
         * reader ordering NaN above every number never skips its file */
        cr_assert(strstr(s, "\"f32\":") > nc, "a column with NaN has no bounds: %s", s);
        cr_assert(strstr(s, "\"tz\":\"1970-01-01T00:00:00.000Z\"") && strstr(s, "\"tz\":\"2024-01-02T03:04:05.124Z\""),
                  "%s", s);
        cr_assert(strstr(s, "\"s\":\"\"") && strstr(s, "\"s\":\"zz\""), "%s", s);
        cr_assert(strstr(s, "\"nullCount\":{\"i8\":1,"), "%s", s);
        free(s);
        pqt_free(&t);
    }
}

Test(parquet, one_row_and_all_null)
{
    const char *names[] = {"a", "b"}, *types[] = {"int32", "string"};
    pqt t;
    pqt_open(&t, names, types, 2, 0);
    const char *v[] = {NULL, NULL};
    cdc_error_t e = {0};
    cr_assert_eq(pqt_row(&t, v, &e), 0);
    pqt_end(&t);
    check_frame(&t.file);
    char *s = pqt_stats(&t);
    cr_assert_str_eq(s, "{\"numRecords\":1,\"minValues\":{},\"maxValues\":{},\"nullCount\":{\"a\":1,\"b\":1}}");
    free(s);
    pqt_free(&t);
}

/* Bad values: the error names the column and the value; the row is not
 * added and the next good row is. */
Test(parquet, bad_values_name_column_and_value)
{
    static const struct { const char *type, *value; } bad[] = {
        {"int8", "128"}, {"int16", "-32769"}, {"int32", "2147483648"}, {"int64", "9223372036854775808"},
        {"int64", "12a"}, {"int64", ""}, {"int64", "-"}, {"float64", "1e999"}, {"float64", "abc"},
        {"float32", "1.5x"}, {"boolean", "yes"}, {"string/io.debezium.data.Uuid", "a0eebc99-9c0b-4ef8-bb6d"},
        {"string/io.debezium.data.Uuid", "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}, {"decimal:2:5", "1000.00"},
        {"decimal:2:5", "1.234"}, {"decimal:2:5", "NaN"}, {"decimal:0:38", "123456789012345678901234567890123456789"},
        /* either side of the one-pass decimal parser's limits (18 digits with the scale) */
        {"decimal:2:5", "."}, {"decimal:2:5", "-"}, {"decimal:2:5", "-."}, {"decimal:2:5", "1.2.3"},
        {"decimal:2:5", "1e3"}, {"decimal:2:5", " 1"}, {"decimal:2:18", "10000000000000000.00"},
        {"decimal:2:18", "0010000000000000000.00"}, {"decimal:4:20", "10000000000000000.0001"},
        {"decimal:2:12", "1.001"}, {"decimal:0:3", "1000"}, {"decimal:0:3", "-1000"},
        {"int32/io.debezium.time.Date", "2023-02-29"}, {"int32/io.debezium.time.Date", "2024-13-01"},
        {"int32/io.debezium.time.Date", "0000-01-01 BC"}, {"int64/io.debezium.time.MicroTimestamp", "2024-01-01"},
        {"int64/io.debezium.time.MicroTimestamp", "2024-01-01 24:00:00"},
        {"int64/io.debezium.time.MicroTimestamp", "2024-01-01 00:00:00.1234567"},
        {"string/io.debezium.time.ZonedTimestamp", "2024-01-01T00:00:00"},
        {"int64/io.debezium.time.MicroTime", "24:00:01"}, {"int64/io.debezium.time.MicroTime", "12:60:00"},
        {"bytes", "\\x0"}, {"bytes", "\\xzz"}, {"bytes", "abc"},
        {"int64/io.debezium.time.MicroDuration", "1 day"}, {"int64/io.debezium.time.MicroDuration", "10:61:00"},
        {"int64/io.debezium.time.MicroDuration", "-"}, {"int64/io.debezium.time.MicroDuration", "9999999999999:00:00"},
        {"int64/io.debezium.time.MicroDuration", "-2562047788:00:54.775809"}, {"int64/io.debezium.time.MicroDuration", "2562047788:00:54.775808"},
        /* PostgreSQL's last timestamps are past 64-bit microseconds since 1970 */
        {"string/io.debezium.time.ZonedTimestamp", "294276-12-31T23:59:59.999999Z"},
        {"string/io.debezium.time.ZonedTimestamp", "+294247-01-10T04:00:54.775808Z"},
        {"int64/io.debezium.time.MicroTimestamp", "294276-12-31 23:59:59.999999"},
        {"int32/io.debezium.time.Date", "5881610-07-12"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *names[] = {"ok", "col_x"}, *types[] = {"int32", bad[i].type};
        pqt t;
        pqt_open(&t, names, types, 2, 0);
        const char *v[] = {"1", bad[i].value};
        cdc_error_t e = {0};
        cr_assert_eq(pqt_row(&t, v, &e), CDC_EINVAL, "%s '%s' accepted", bad[i].type, bad[i].value);
        cr_assert(strstr(e.msg, "col_x") && strstr(e.msg, bad[i].value), "%s", e.msg);
        if (!strncmp(bad[i].value, "294", 3) || !strncmp(bad[i].value, "+294", 4) || !strncmp(bad[i].value, "588", 3))
            cr_assert(strstr(e.msg, "outside the range of a Parquet"), "%s", e.msg);
        cr_assert_eq(cdc__pq_rows(t.pq), 0);
        cr_assert_eq(t.file.len, 0, "nothing appended for a rejected row");
        const char *v2[] = {"2", NULL};
        cr_assert_eq(pqt_row(&t, v2, &e), 0);
        pqt_end(&t);
        check_frame(&t.file);
        char *s = pqt_stats(&t);
        cr_assert(strstr(s, "\"minValues\":{\"ok\":2}"), "%s: %s", bad[i].type, s);
        free(s);
        pqt_free(&t);
    }
}

/* Values at the edges of what the parsers accept. */
Test(parquet, accepted_edges)
{
    static const struct { const char *type, *value, *json; } ok[] = {
        {"decimal:2:5", "0.5", "0.50"},
        {"decimal:2:5", "1.230", "1.23"},
        {"decimal:2:5", "-0.01", "-0.01"},
        {"decimal:2:5", ".5", "0.50"},
        {"decimal:2:5", "+7.", "7.00"},
        {"decimal:2:5", "-000999.99", "-999.99"},
        {"decimal:2:18", "9999999999999999.99", "9999999999999999.99"},
        {"decimal:2:18", "-0009999999999999999.99000", "-9999999999999999.99"},
        {"decimal:4:20", "9999999999999999.9999", "9999999999999999.9999"},
        {"decimal:0:3", "-999", "-999"},
        {"decimal:6:38", "123456789012.000000", "123456789012.000000"},
        {"decimal:6:38", "1234567890123.000000", "1234567890123.000000"},
        {"decimal:0:38", "99999999999999999999999999999999999999", "99999999999999999999999999999999999999"},
        {"decimal:0:38", "-99999999999999999999999999999999999999", "-99999999999999999999999999999999999999"},
        {"int32/io.debezium.time.Date", "1970-01-01", "\"1970-01-01\""},
        {"int32/io.debezium.time.Date", "0001-01-01", "\"0001-01-01\""},
        {"string/io.debezium.time.ZonedTimestamp", "2024-01-02T03:04:05+05:30", "\"2024-01-01T21:34:05.000Z\""},
        {"string/io.debezium.time.ZonedTimestamp", "2024-01-02 03:04:05.5-01", "\"2024-01-02T04:04:05.500Z\""},
        {"int64", "+5", "5"},
        {"float64", "5e-324", "4.9406564584124654e-324"},
        {"float64", "123456789012345678", "1.2345678901234568e+17"},
        {"float32", "3.4028235e+38", "3.40282347e+38"},
        {"int32/io.debezium.time.Year", "2024", "2024"},
        {"int64/io.debezium.time.MicroDuration", "10303:05:06.789", "37091106789000"},
        {"int64/io.debezium.time.MicroDuration", "-00:00:00.000001", "-1"},
        {"int64/io.debezium.time.MicroDuration", "-682:30:00.000001", "-2457000000001"},
        {"int64/io.debezium.time.MicroDuration", "2562047788:00:54.775807", "9223372036854775807"},
        {"int64/io.debezium.time.MicroDuration", "37091106789000", "37091106789000"},
        {"int64/io.debezium.time.MicroDuration", "-2562047788:00:54.775808", "-9223372036854775808"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *names[] = {"c"}, *types[] = {ok[i].type};
        pqt t;
        pqt_open(&t, names, types, 1, 0);
        const char *v[] = {ok[i].value};
        cdc_error_t e = {0};
        cr_assert_eq(pqt_row(&t, v, &e), 0, "%s '%s': %s", ok[i].type, ok[i].value, e.msg);
        pqt_end(&t);
        check_frame(&t.file);
        char *s = pqt_stats(&t);
        char *want = tu_fmt("\"minValues\":{\"c\":%s}", ok[i].json);
        cr_assert(strstr(s, want), "%s '%s': %s", ok[i].type, ok[i].value, s);
        free(want);
        free(s);
        pqt_free(&t);
    }
}

/* Strings in Delta's statistics: cut to 32 characters, the min as it is and
 * the max with U+10FFFF after it, so that both stay bounds.  A column has
 * both bounds or neither: deltalake 1.6 takes a min without a max for a max
 * of null and skips the file for every filter on the column (a UUID, 36
 * characters, was never found by a filter).  Neither when the cut text starts
 * with U+10FFFF (no upper bound of 32 characters and one more exists), or
 * when a float's max is infinite. */
Test(parquet, delta_string_prefix)
{
    const char *names[] = {"s", "short", "edge", "f"}, *types[] = {"string", "string", "string", "float64"};
    pqt t;
    pqt_open(&t, names, types, 4, 0);
    const char *long_s = "ééééééééééééééééééééééééééééééééééééééééé"; /* 41 two-byte characters */
    const char *edge = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xf4\x8f\xbf\xbfz";   /* U+10FFFF as the 33rd */
    const char *r1[] = {long_s, "abc", edge, "1.5"}, *r2[] = {"b", "abd", "a", "Infinity"};
    cdc_error_t e = {0};
    cr_assert_eq(pqt_row(&t, r1, &e), 0, "%s", e.msg);
    cr_assert_eq(pqt_row(&t, r2, &e), 0, "%s", e.msg);
    pqt_end(&t);
    char *s = pqt_stats(&t);
    cr_assert(strstr(s, "\"minValues\":{\"s\":\"b\",\"short\":\"abc\"}"), "%s", s);
    cr_assert(strstr(s, "\"maxValues\":{\"s\":\"éééééééééééééééééééééééééééééééé\xf4\x8f\xbf\xbf\",\"short\":\"abd\"}"),
              "%s", s);
    free(s);
    pqt_free(&t);
}

/* Pages: a column of more than 1 MiB makes several pages and one row
 * group; every compression gives a valid frame. */
Test(parquet, pages_and_codecs)
{
    for (int codec = CDC__PQ_ZSTD; codec <= CDC__PQ_NONE; codec++) {
        const char *names[] = {"id", "s"}, *types[] = {"int64", "string"};
        cdc__pq *pq;
        cdc__pq_options o = {.compression = codec};
        cdc_error_t e = {0};
        cr_assert_eq(cdc__pq_open(names, types, 2, &o, &pq, &e), 0);
        cdc__buf out = {0}, file = {0};
        uint64_t off = 0;
        char num[32], str[64];
        for (int r = 0; r < 200000; r++) {
            snprintf(num, sizeof num, "%d", r);
            snprintf(str, sizeof str, "row %d", r * 7);
            const char *v[] = {num, r % 5 ? str : NULL};
            size_t lens[] = {strlen(num), strlen(str)};
            cr_assert_eq(cdc__pq_row(pq, v, lens, &out, off, &e), 0);
            off += out.len;
            cdc__buf_put(&file, out.p, out.len);
            out.len = 0;
        }
        cr_assert_eq(cdc__pq_end(pq, &out, off, &e), 0);
        cdc__buf_put(&file, out.p, out.len);
        check_frame(&file);
        cr_assert_gt(file.len, (size_t)100000);
        cdc__buf_free(&out);
        cdc__buf_free(&file);
        cdc__pq_free(pq);
    }
}
