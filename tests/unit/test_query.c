/*
 * test_query.c: range hashes without a database: md5 and lookup3 against
 * their reference values (lookup3's from PostgreSQL's hashtextextended), the
 * row encoding's unambiguity, order independence of range hashes, values
 * swapped between rows, range splitting (quantiles and widths, negative
 * keys), the SQL pieces, export formats (a header and a footer once around
 * rows in key order, CSV and NDJSON halves joined byte for byte), and the
 * io_uring file writer against write(2).
 * Everything against a real PostgreSQL is in tests/query/run.sh.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "../../query/query.h"

#define T "shop.public.orders"

/* ---- md5 and lookup3 ---- */

static void md5_hex(const char *s, char out[33])
{
    cdc__md5 m;
    unsigned char d[16];
    cdc__md5_init(&m);
    /* Fed in uneven pieces, to exercise the block buffering. */
    size_t n = strlen(s), i = 0, step = 1;
    while (i < n) {
        size_t k = n - i < step ? n - i : step;
        cdc__md5_update(&m, s + i, k);
        i += k;
        step = step * 3 + 1;
    }
    cdc__md5_final(&m, d);
    for (int j = 0; j < 16; j++) sprintf(out + 2 * j, "%02x", d[j]);
}

Test(md5, rfc1321_test_suite)
{
    static const char *v[][2] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    char hex[33];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        md5_hex(v[i][0], hex);
        cr_expect_str_eq(hex, v[i][1], "md5(\"%s\")", v[i][0]);
    }
}

Test(lookup3, equals_postgresql_hashtextextended)
{
    /* SELECT hashtextextended(s COLLATE "C", 0) on PostgreSQL 15, x86-64. */
    static const struct { const char *s; long long h; } v[] = {
        {"", -6939563903564495251LL},
        {"a", 3591986179850072241LL},
        {"abc", -6747756470228489321LL},
        {"abcdefghijkl", -7556637188122330412LL},
        {"abcdefghijklm", 8871624171452417744LL},
        {"h\xc3\xa9llo w\xc3\xb6rld, 12345678901234567890", -1329585777763129983LL},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        cr_expect_eq((long long)cdc__lookup3(v[i].s, strlen(v[i].s)), v[i].h, "lookup3(\"%s\")", v[i].s);
}

/* ---- The row encoding ---- */

static char *encode(size_t n, ...)
{
    const char *vals[8];
    size_t lens[8];
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++) {
        vals[i] = va_arg(ap, const char *);
        lens[i] = vals[i] ? strlen(vals[i]) : 0;
    }
    va_end(ap);
    cdc__buf b = {0};
    cdc__row_encode(vals, lens, NULL, n, &b);
    cdc__buf_putc(&b, 0);
    return b.p;
}

Test(encoding, documented_form)
{
    char *e = encode(4, "1", "a,b", NULL, "");
    cr_expect_str_eq(e, "1,3,-1,0;1a,b");
    free(e);
}

Test(encoding, unambiguous)
{
    /* Pairs of rows that a naive join would confuse. */
    static const char *rows[][2] = {
        {"a|b", "c"}, {"a", "b|c"}, {"a,b", "c"}, {"a", "b,c"}, {"", NULL}, {NULL, ""},
        {"", ""}, {NULL, NULL}, {"ab", ""}, {"a", "b"}, {"1", "1;"}, {"1,1", ";"}, {"-1", ""},
    };
    size_t n = sizeof rows / sizeof rows[0];
    char **enc = calloc(n, sizeof *enc);
    uint64_t *h = calloc(n, sizeof *h), *h3 = calloc(n, sizeof *h3);
    cdc__buf scratch = {0};
    for (size_t i = 0; i < n; i++) {
        enc[i] = encode(2, rows[i][0], rows[i][1]);
        size_t lens[2] = {rows[i][0] ? strlen(rows[i][0]) : 0, rows[i][1] ? strlen(rows[i][1]) : 0};
        h[i] = cdc__row_hash(rows[i], lens, NULL, 2, CDC_HASH_MD5, &scratch);
        h3[i] = cdc__row_hash(rows[i], lens, NULL, 2, CDC_HASH_LOOKUP3, &scratch);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            cr_expect_str_neq(enc[i], enc[j], "rows %zu and %zu encode the same: %s", i, j, enc[i]);
            cr_expect_neq(h[i], h[j], "rows %zu and %zu hash the same", i, j);
            cr_expect_neq(h3[i], h3[j], "rows %zu and %zu hash the same (lookup3)", i, j);
        }
    for (size_t i = 0; i < n; i++) free(enc[i]);
    free(enc);
    free(h);
    free(h3);
    cdc__buf_free(&scratch);
}

Test(encoding, md5_hash_is_first_64_bits_big_endian)
{
    const char *vals[] = {"1", "paid"};
    size_t lens[] = {1, 4};
    cdc__buf scratch = {0};
    uint64_t h = cdc__row_hash(vals, lens, NULL, 2, CDC_HASH_MD5, &scratch);
    char hex[33];
    md5_hex("1,4;1paid", hex);
    char want[17];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)h);
    cr_expect(strncmp(hex, want, 16) == 0, "%s vs %s", hex, want);
    cdc__buf_free(&scratch);
}

/* ---- Stores ---- */

/* Applies rows (id, amount) in the given order, one batch each. */
static void put_rows(cdc_store_t *st, const long *ids, const char *const *amounts, size_t n, long lsn0)
{
    for (size_t i = 0; i < n; i++) {
        char key[64], after[256];
        snprintf(key, sizeof key, "{\"order_id\":%ld}", ids[i]);
        snprintf(after, sizeof after, "{\"order_id\":%ld,\"status\":\"paid\",\"amount\":\"%s\"}", ids[i], amounts[i]);
        char *env = tu_env("c", NULL, after, (unsigned long long)(lsn0 + (long)i), "false");
        cdc_record_t r = tu_rec(T, 0, lsn0 + (long)i, key, env);
        tu_apply(st, &r, 1);
        free(env);
    }
}

static cdc_range_hash_t whole(cdc_store_t *st, int algo)
{
    cdc_hash_options_t o = {.algorithm = algo};
    cdc_range_hash_t *r;
    size_t n;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_hash_ranges(st, "public.orders", &o, &r, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 1);
    cdc_range_hash_t w = r[0];
    w.lower_json = w.upper_json = NULL;
    cdc_range_hashes_free(r, n);
    return w;
}

Test(range_hash, order_independent)
{
    char *d1 = tu_tmpdir(), *d2 = tu_tmpdir();
    cdc_store_t *a = tu_open(d1), *b = tu_open(d2);
    long ids[] = {5, 1, 9, 3, 7};
    const char *am[] = {"5.00", "1.00", "9.00", "3.00", "7.00"};
    long rids[] = {7, 3, 9, 1, 5};
    const char *ram[] = {"7.00", "3.00", "9.00", "1.00", "5.00"};
    put_rows(a, ids, am, 5, 100);
    put_rows(b, rids, ram, 5, 500); /* other order, other versions: same rows */
    for (int algo = 0; algo < 2; algo++) {
        cdc_range_hash_t x = whole(a, algo), y = whole(b, algo);
        cr_expect_eq(x.rows, 5);
        cr_expect_eq(x.rows, y.rows);
        cr_expect_eq(x.hash, y.hash, "algorithm %d", algo);
    }
    /* The range hash is the sum of the row hashes. */
    cdc_iter_t *it;
    cdc_row_t row;
    uint64_t sum = 0;
    cr_assert_eq(cdc_iter_open(a, "public.orders", NULL, &it, NULL), 0);
    while (cdc_iter_next(it, &row, NULL) == 1) sum += cdc_row_hash(&row, CDC_HASH_MD5);
    cdc_iter_close(it);
    cr_expect_eq(sum, whole(a, CDC_HASH_MD5).hash);
    cdc_store_close(a);
    cdc_store_close(b);
    tu_rmrf(d1);
    tu_rmrf(d2);
    free(d1);
    free(d2);
}

Test(range_hash, swapped_values_change_the_hash)
{
    char *d1 = tu_tmpdir(), *d2 = tu_tmpdir();
    cdc_store_t *a = tu_open(d1), *b = tu_open(d2);
    long ids[] = {1, 2, 3};
    const char *am[] = {"10.00", "20.00", "30.00"};
    const char *sw[] = {"20.00", "10.00", "30.00"}; /* amounts of 1 and 2 swapped */
    put_rows(a, ids, am, 3, 100);
    put_rows(b, ids, sw, 3, 100);
    for (int algo = 0; algo < 2; algo++) {
        cdc_range_hash_t x = whole(a, algo), y = whole(b, algo);
        cr_expect_eq(x.rows, y.rows);
        cr_expect_neq(x.hash, y.hash, "algorithm %d misses the swap", algo);
    }
    cdc_store_close(a);
    cdc_store_close(b);
    tu_rmrf(d1);
    tu_rmrf(d2);
    free(d1);
    free(d2);
}

Test(range_hash, quantile_ranges_split_evenly_and_add_up)
{
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    enum { N = 1000 };
    long ids[N];
    const char *am[N];
    for (int i = 0; i < N; i++) {
        ids[i] = (i * 7919) % N * 3 - 1500; /* all of -1500..1497 step 3, shuffled */
        am[i] = "1.00";
    }
    put_rows(st, ids, am, N, 1);
    cdc_range_hash_t w = whole(st, CDC_HASH_MD5);
    cr_assert_eq(w.rows, N);
    cdc_hash_options_t o = {.ranges = 7};
    cdc_range_hash_t *r;
    size_t n;
    cr_assert_eq(cdc_hash_ranges(st, "public.orders", &o, &r, &n, NULL), 0);
    cr_expect_eq(n, 7);
    uint64_t rows = 0, hash = 0;
    for (size_t i = 0; i < n; i++) {
        rows += r[i].rows;
        hash += r[i].hash;
        cr_expect(r[i].rows >= N / 7 - 1 && r[i].rows <= N / 7 + 1, "range %zu has %llu rows", i,
                  (unsigned long long)r[i].rows);
        if (i == 0) cr_expect_null(r[i].lower_json);
        else cr_expect_str_eq(r[i].lower_json, r[i - 1].upper_json, "ranges %zu and %zu are not contiguous", i - 1, i);
        cr_expect(r[i].index == (int64_t)i);
    }
    cr_expect_null(r[n - 1].upper_json);
    cr_expect_eq(rows, N);
    cr_expect_eq(hash, w.hash, "range hashes do not add up to the table's");
    cdc_range_hashes_free(r, n);

    /* Width ranges: floor division, also below zero. */
    cdc_hash_options_t wo = {.range_width = 100};
    cr_assert_eq(cdc_hash_ranges(st, "public.orders", &wo, &r, &n, NULL), 0);
    cr_expect_eq(n, 30); /* -1500..1497 */
    cr_expect_eq(r[0].index, -15);
    cr_expect_str_eq(r[0].lower_json, "[-1500]");
    cr_expect_str_eq(r[0].upper_json, "[-1400]");
    rows = hash = 0;
    for (size_t i = 0; i < n; i++) {
        rows += r[i].rows;
        hash += r[i].hash;
        /* Each range holds exactly the keys in [lower, upper). */
        cdc_iter_options_t io = {.lower_json = r[i].lower_json, .upper_json = r[i].upper_json};
        cdc_iter_t *it;
        cdc_row_t row;
        uint64_t c = 0;
        cr_assert_eq(cdc_iter_open(st, "public.orders", &io, &it, NULL), 0);
        while (cdc_iter_next(it, &row, NULL) == 1) c++;
        cdc_iter_close(it);
        cr_expect_eq(c, r[i].rows, "range %lld", (long long)r[i].index);
    }
    cr_expect_eq(rows, N);
    cr_expect_eq(hash, w.hash);
    cdc_range_hashes_free(r, n);
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

Test(range_hash, floordiv)
{
    cr_expect_eq(cdc__floordiv(0, 10), 0);
    cr_expect_eq(cdc__floordiv(9, 10), 0);
    cr_expect_eq(cdc__floordiv(-1, 10), -1);
    cr_expect_eq(cdc__floordiv(-10, 10), -1);
    cr_expect_eq(cdc__floordiv(-11, 10), -2);
    cr_expect_eq(cdc__floordiv(INT64_MIN, 1), INT64_MIN);
    cr_expect_eq(cdc__floordiv(INT64_MAX, INT64_MAX), 1);
}

/* ---- SQL pieces ---- */

Test(sql, quoting_and_ranges)
{
    cdc__buf b = {0};
    cdc__sql_table(&b, "my schema.it\"s");
    cdc__sql_literal(&b, "it's", 4);
    cdc__buf_putc(&b, 0);
    cr_expect_str_eq(b.p, "\"my schema\".\"it\"\"s\"'it''s'");

    cdc__srckey k[2] = {{.name = "a", .kind = CDC__KP_INT}, {.name = "b", .kind = CDC__KP_TEXT, .string = 1}};
    cdc__buf lo = {0}, hi = {0};
    cdc__key_add_int(&lo, -5);
    cdc__key_add_text(&lo, "x'y", 3);
    cdc__key_add_int(&hi, 7);
    cdc__key_add_text(&hi, "", 0);
    cdc__buf_reset(&b);
    cr_assert_eq(cdc__sql_range(&b, k, 2, &lo, &hi), 0);
    cdc__buf_putc(&b, 0);
    cr_expect_str_eq(b.p, "ROW(\"a\", \"b\" COLLATE \"C\") >= ROW(-5, 'x''y'::text) AND "
                          "ROW(\"a\", \"b\" COLLATE \"C\") < ROW(7, ''::text)");

    /* Composite keys: a CASE tree picking range 0, 1 or 2. */
    cdc__buf bounds[2] = {lo, hi};
    cdc__buf_reset(&b);
    cr_assert_eq(cdc__sql_bucket(&b, k, 2, 0, bounds, 2), 0);
    cdc__buf_putc(&b, 0);
    cr_expect(strstr(b.p, "CASE WHEN ROW(") == b.p, "%s", b.p);

    /* Width buckets round toward minus infinity without overflow. */
    cdc__buf_reset(&b);
    cr_assert_eq(cdc__sql_bucket(&b, k, 1, 10, NULL, 0), 0);
    cdc__buf_putc(&b, 0);
    cr_expect_str_eq(b.p, "CASE WHEN \"a\" >= 0 THEN \"a\"::bigint / 10 ELSE -1 - (-(\"a\"::bigint + 1)) / 10 END");
    cr_expect_neq(cdc__sql_bucket(&b, k + 1, 1, 10, NULL, 0), 0, "width buckets over a text key");

    /* Key parts round trip. */
    cdc__keypart *p;
    size_t np;
    cr_assert_eq(cdc__key_parts(lo.p, lo.len, &p, &np), 0);
    cr_expect_eq(np, 2);
    cr_expect_eq(p[0].i, -5);
    cr_expect_str_eq(p[1].s, "x'y");
    cdc__keyparts_free(p, np);
    cdc__buf_free(&b);
    cdc__buf_free(&lo);
    cdc__buf_free(&hi);
}

Test(sql, json_object_keys)
{
    char *names[3] = {0};
    cr_assert_eq(cdc__json_object_keys("{\"a\":1,\"b\\\"c\":\"x,y\",\"\\u00e9\":-2}", names, 3), 0);
    cr_expect_str_eq(names[0], "a");
    cr_expect_str_eq(names[1], "b\"c");
    cr_expect_str_eq(names[2], "\xc3\xa9");
    for (int i = 0; i < 3; i++) free(names[i]);
}

/* ---- Export formats ---- */

/* A format with a header and a footer, as Parquet will have: "B <ncols>",
 * one line per row (its key), "E <offset>" with the offset the footer
 * starts at.  The counters say how often begin and end ran, and how many
 * contexts saw rows (row() marks its context, release() counts the marks). */
static _Atomic int tf_begins, tf_ends, tf_row_contexts;

static int tf_begin(cdc__export_ctx *c, const char *const *names, size_t n)
{
    (void)names;
    tf_begins++;
    cdc__buf_printf(c->out, "B %zu\n", n);
    return 0;
}

static int tf_row(cdc__export_ctx *c, const cdc_row_t *row)
{
    c->state = c; /* bookkeeping only: the bytes depend on the row alone */
    cdc__buf_puts(c->out, row->key_json);
    cdc__buf_putc(c->out, '\n');
    return 0;
}

static int tf_end(cdc__export_ctx *c)
{
    tf_ends++;
    cdc__buf_printf(c->out, "E %llu\n", (unsigned long long)(c->offset + c->out->len));
    return 0;
}

static void tf_release(cdc__export_ctx *c)
{
    if (c->state) tf_row_contexts++;
    c->state = NULL;
}

/* The export of public.orders in fmt as a malloc'd string; *rc its result. */
static char *export_with(cdc_store_t *st, const cdc__export_format *fmt, const cdc_export_options_t *o,
                         int *rc)
{
    char path[] = "/tmp/cdcexport.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    unlink(path);
    cdc_error_t e = {0};
    uint64_t rows = 0;
    *rc = fmt ? cdc__export_run(st, "public.orders", o, fmt, fd, &rows, &e)
              : cdc_export_fd(st, "public.orders", o, fd, &rows, &e);
    struct stat sb;
    cr_assert_eq(fstat(fd, &sb), 0);
    char *buf = calloc(1, (size_t)sb.st_size + 1);
    cr_assert_eq(pread(fd, buf, (size_t)sb.st_size, 0), (ssize_t)sb.st_size);
    close(fd);
    return buf;
}

/* 60 orders, keys 1..60, applied out of order. */
static void put_orders(cdc_store_t *st)
{
    enum { N = 60 };
    long ids[N];
    const char *am[N];
    for (int i = 0; i < N; i++) {
        ids[i] = (long)((i * 37) % N) + 1;
        am[i] = i % 3 ? "1.50" : "";
    }
    put_rows(st, ids, am, N, 100);
}

Test(export, header_and_footer_once_around_the_rows_in_key_order)
{
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    put_orders(st);
    cdc__buf want = {0};
    cdc__buf_puts(&want, "B 3\n");
    cdc_iter_t *it;
    cdc_row_t row;
    cr_assert_eq(cdc_iter_open(st, "public.orders", NULL, &it, NULL), 0);
    while (cdc_iter_next(it, &row, NULL) == 1) cdc__buf_printf(&want, "%s\n", row.key_json);
    cdc_iter_close(it);
    cdc__buf_printf(&want, "E %zu\n", want.len);
    cdc__buf_putc(&want, 0);
    setenv("CDC_EXPORT_THREADS", "2", 1); /* two halves wherever the format allows them */
    cdc_export_options_t o = {0};
    for (int concat = 0; concat <= 1; concat++) {
        cdc__export_format f = {"test", concat, tf_begin, tf_row, tf_end, tf_release, NULL, NULL, .key_json = 1};
        tf_begins = tf_ends = tf_row_contexts = 0;
        int rc;
        char *got = export_with(st, &f, &o, &rc);
        cr_assert_eq(rc, 0);
        cr_expect_str_eq(got, want.p, "concat_rows %d", concat);
        cr_expect_eq(tf_begins, 1, "concat_rows %d: begin ran %d times", concat, tf_begins);
        cr_expect_eq(tf_ends, 1, "concat_rows %d: end ran %d times", concat, tf_ends);
        /* Rows that do not concatenate stay in one context; rows that do are
         * encoded in two at once (the halves) and still come out in order. */
        cr_expect_eq(tf_row_contexts, concat ? 2 : 1, "concat_rows %d: %d contexts saw rows", concat,
                     tf_row_contexts);
        free(got);
    }
    unsetenv("CDC_EXPORT_THREADS");
    cdc__buf_free(&want);
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

/* An export formats no key per row (cdc_iter_options_t.no_key_json), yet a
 * value its format refuses is reported with its row's key: rows stored while
 * amount was text, then amount declared numeric(,2); the Parquet export
 * stops at the first amount that is no decimal, in one piece and in the two
 * halves of CDC_EXPORT_THREADS=2 alike, and the key is the right one. */
Test(export, a_value_the_format_refuses_is_reported_with_its_key)
{
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    long ids[] = {1, 2, 3, 4};
    const char *am[] = {"1.50", "2.25", "not a number", "4.00"};
    put_rows(st, ids, am, 4, 100);
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_set_column_type(st, "public.orders", "amount", "numeric:2", &e), 0, "%s", e.msg);
    cdc_export_options_t o = {.format = CDC_FORMAT_PARQUET};
    for (int halves = 0; halves <= 1; halves++) {
        if (halves) setenv("CDC_EXPORT_THREADS", "2", 1);
        char path[] = "/tmp/cdcexport.XXXXXX";
        int fd = mkstemp(path);
        cr_assert(fd >= 0);
        unlink(path);
        uint64_t rows = 0;
        memset(&e, 0, sizeof e);
        int rc = cdc_export_fd(st, "public.orders", &o, fd, &rows, &e);
        close(fd);
        cr_expect_neq(rc, 0, "halves %d: the export went through", halves);
        cr_expect(strstr(e.msg, "export of public.orders: key {\"order_id\":3}: ") != NULL, "halves %d: %s", halves,
                  e.msg);
        cr_expect(strstr(e.msg, "'not a number'") != NULL, "halves %d: %s", halves, e.msg);
    }
    unsetenv("CDC_EXPORT_THREADS");
    /* The iterator itself: key_json NULL per row, cdc_iter_key_json on demand. */
    cdc_iter_options_t io = {.no_key_json = 1};
    cdc_iter_t *it;
    cdc_row_t row;
    cr_assert_eq(cdc_iter_open(st, "public.orders", &io, &it, NULL), 0);
    cr_expect_null(cdc_iter_key_json(it), "no row returned yet");
    long want = 1;
    while (cdc_iter_next(it, &row, NULL) == 1) {
        cr_expect_null(row.key_json);
        char k[64];
        snprintf(k, sizeof k, "{\"order_id\":%ld}", want++);
        const char *kj = cdc_iter_key_json(it);
        cr_expect(kj && !strcmp(kj, k), "got %s, want %s", kj ? kj : "NULL", k);
    }
    cr_expect_eq(want, 5);
    cr_expect_null(cdc_iter_key_json(it), "after the end");
    cdc_iter_close(it);
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

/* A relocatable format (both halves begin) whose begin keeps the column
 * types it was given and, once both halves have begun, reads them again:
 * the store lends them until its next call, so each half asking the store
 * for them would free the other's (a Parquet export once took a text column
 * for a boolean this way). */
static _Atomic int tb_begun;
static const char *const *tb_types[2];
static char tb_seen[2][3][32];

static int tb_begin(cdc__export_ctx *c, const char *const *names, size_t n)
{
    (void)names;
    int me = atomic_fetch_add(&tb_begun, 1);
    if (me > 1 || n != 3) return CDC_EINVAL;
    tb_types[me] = c->types;
    const char *kept[3]; /* as a writer keeps them: the strings, not the array */
    for (size_t i = 0; i < n; i++) kept[i] = c->types[i];
    for (int w = 0; w < 200 && tb_begun < 2; w++) usleep(10000); /* the other half's begin */
    for (size_t i = 0; i < n; i++) snprintf(tb_seen[me][i], sizeof tb_seen[me][i], "%s", kept[i] ? kept[i] : "(none)");
    c->state = c;
    return 0;
}

static int tb_row(cdc__export_ctx *c, const cdc_row_t *row)
{
    (void)c;
    (void)row;
    return 0;
}

static int tb_end(cdc__export_ctx *c)
{
    (void)c;
    return 0;
}

static int tb_flush(cdc__export_ctx *c)
{
    (void)c;
    return 0;
}

static int tb_adopt(cdc__export_ctx *c, cdc__export_ctx *from, uint64_t shift)
{
    (void)c;
    (void)from;
    (void)shift;
    return 0;
}

static void tb_release(cdc__export_ctx *c) { c->state = NULL; }

Test(export, both_halves_keep_the_column_types_they_began_with)
{
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    put_orders(st);
    cdc_error_t e = {0};
    /* two descriptors of one size: freed and made again, they trade places */
    cr_assert_eq(cdc_store_set_column_type(st, "public.orders", "status", "numeric:3", &e), 0, "%s", e.msg);
    cr_assert_eq(cdc_store_set_column_type(st, "public.orders", "amount", "numeric:2", &e), 0, "%s", e.msg);
    setenv("CDC_EXPORT_THREADS", "2", 1);
    cdc__export_format f = {"types", 0, tb_begin, tb_row, tb_end, tb_release, tb_flush, tb_adopt, .key_json = 0};
    cdc_export_options_t o = {0};
    int rc;
    free(export_with(st, &f, &o, &rc));
    unsetenv("CDC_EXPORT_THREADS");
    cr_assert_eq(rc, 0);
    cr_assert_eq(tb_begun, 2, "%d halves began", (int)tb_begun);
    for (int h = 0; h < 2; h++) {
        cr_expect_str_eq(tb_seen[h][0], "(none)", "half %d: order_id", h);
        cr_expect_str_eq(tb_seen[h][1], "decimal:3", "half %d: status", h);
        cr_expect_str_eq(tb_seen[h][2], "decimal:2", "half %d: amount", h);
    }
    cr_expect_eq(tb_types[0], tb_types[1], "the halves were given different arrays");
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

/* n changes of public.orders from lsn0 on, in one apply: key ids[i] with
 * status st_of(i), or its delete when del(i). */
static void put_many(cdc_store_t *st, long n, long id0, long lsn0, const char *status, int del_every)
{
    cdc_record_t *r = calloc((size_t)n, sizeof *r);
    char **keys = calloc((size_t)n, sizeof *keys), **envs = calloc((size_t)n, sizeof *envs);
    for (long i = 0; i < n; i++) {
        long id = id0 + i;
        char after[256];
        cr_assert(asprintf(&keys[i], "{\"order_id\":%ld}", id) > 0);
        snprintf(after, sizeof after, "{\"order_id\":%ld,\"status\":\"%s\",\"amount\":\"%ld.25\"}", id, status, id);
        int del = del_every && id % del_every == 0;
        envs[i] = del ? tu_env("d", after, "null", (unsigned long long)(lsn0 + i), "false")
                      : tu_env("u", NULL, after, (unsigned long long)(lsn0 + i), "false");
        r[i] = tu_rec(T, 0, lsn0 + i, keys[i], envs[i]);
    }
    tu_apply(st, r, (size_t)n);
    for (long i = 0; i < n; i++) free(keys[i]), free(envs[i]);
    free(keys);
    free(envs);
    free(r);
}

/* cdc_store_get_keys calls back in the order of the keys it is given,
 * whatever that order: sorted (RocksDB is told so and skips its sort),
 * reversed, or shuffled with repeats and keys that have no row, over more
 * than one of its chunks of 1,024 keys; a tombstone comes back deleted. */
typedef struct gk_seen {
    size_t n;
    size_t *idx;
    long *id;
    int *deleted;
} gk_seen;

static int gk_take(void *opaque, size_t i, const cdc_row_t *row)
{
    gk_seen *s = opaque;
    s->idx[s->n] = i;
    s->deleted[s->n] = row->deleted;
    s->id[s->n] = row->deleted ? -1 : strtol(row->values[0], NULL, 10);
    s->n++;
    return 0;
}

Test(get_keys, rows_come_back_in_the_order_of_the_keys_sorted_or_not)
{
    enum { N = 3000 };
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    put_many(st, N, 1, 1000, "paid", 7); /* keys 1..N, every 7th deleted */
    /* the encoded keys, in key order, from the view with its tombstones */
    char **enc = calloc(N + 1, sizeof *enc);
    size_t *encl = calloc(N + 1, sizeof *encl);
    cdc_iter_options_t io = {.include_deleted = 1, .no_key_json = 1};
    cdc_iter_t *it;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_iter_open(st, "public.orders", &io, &it, &e), 0, "%s", e.msg);
    cdc_row_t row;
    size_t n = 0;
    while (cdc_iter_next(it, &row, &e) == 1) {
        cr_assert_lt(n, (size_t)N);
        enc[n] = malloc(row.key_len + 1);
        memcpy(enc[n], row.key, row.key_len);
        encl[n++] = row.key_len;
    }
    cdc_iter_close(it);
    cr_assert_eq(n, (size_t)N);
    /* a key of no row: key 1's with one more byte (no key is a prefix of
     * another stored one) */
    char *none = malloc(encl[0] + 1);
    memcpy(none, enc[0], encl[0]);
    none[encl[0]] = 0x55;
    enum { M = 2 * N + 7 };
    const char **keys = calloc(M, sizeof *keys);
    size_t *lens = calloc(M, sizeof *lens), *want = calloc(M, sizeof *want);
    gk_seen s = {0, calloc(M, sizeof(size_t)), calloc(M, sizeof(long)), calloc(M, sizeof(int))};
    for (int order = 0; order < 3; order++) {
        size_t m = 0;
        uint64_t rng = 88172645463325252ULL;
        if (order == 0)
            for (size_t i = 0; i < N; i++) want[m] = i, keys[m] = enc[i], lens[m++] = encl[i];
        else if (order == 1)
            for (size_t i = N; i-- > 0;) want[m] = i, keys[m] = enc[i], lens[m++] = encl[i];
        else
            for (size_t i = 0; i < M; i++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                if (i % 97 == 0) want[m] = SIZE_MAX, keys[m] = none, lens[m++] = encl[0] + 1;
                else {
                    size_t k = (size_t)(rng % N);
                    want[m] = k, keys[m] = enc[k], lens[m++] = encl[k];
                }
            }
        s.n = 0;
        cr_assert_eq(cdc_store_get_keys(st, "public.orders", keys, lens, m, gk_take, &s, &e), 0, "%s", e.msg);
        size_t got = 0;
        for (size_t i = 0; i < m; i++) {
            if (want[i] == SIZE_MAX) continue; /* no row: skipped */
            cr_assert_lt(got, s.n, "order %d: %zu rows back, key %zu of %zu missing", order, s.n, i, m);
            cr_assert_eq(s.idx[got], i, "order %d: row %zu is key %zu's, expected key %zu's", order, got, s.idx[got], i);
            long id = (long)want[i] + 1;
            if (id % 7 == 0) cr_assert(s.deleted[got], "order %d: key %ld is a tombstone", order, id);
            else cr_assert_eq(s.id[got], id, "order %d: key %zu: row of id %ld, expected %ld", order, i, s.id[got], id);
            got++;
        }
        cr_assert_eq(got, s.n, "order %d: %zu rows back, %zu expected", order, s.n, got);
    }
    for (size_t i = 0; i < N; i++) free(enc[i]);
    free(enc), free(encl), free(none), free(keys), free(lens), free(want);
    free(s.idx), free(s.id), free(s.deleted);
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

/* A long scan of a read-only open is switched to reading ahead after some
 * thousand rows (its RocksDB iterator made again on the same snapshot,
 * store/store.c scan_read_ahead): every row of the view still comes once,
 * in key order, over the switch and past it, with deleted rows among them,
 * whole or between bounds, while a writer changes every key meanwhile.  A
 * scan of the writer's own open is not switched: a tombstone purge in its
 * process while it runs must not take tombstones from it (include_deleted
 * sees all 20,000 keys, every 7th deleted). */
Test(iter, a_long_scan_reads_ahead_and_keeps_its_rows_and_snapshot)
{
    enum { N = 20000 };
    struct { const char *lo, *hi; long first, last; } cases[] = {
        {NULL, NULL, 1, N}, {"{\"order_id\":3}", "{\"order_id\":15003}", 3, 15002}, {"{\"order_id\":9000}", NULL, 9000, N}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *d = tu_tmpdir();
        cdc_store_t *st = tu_open(d);
        put_many(st, N, 1, 1000, "paid", 7); /* keys 1..N, every 7th deleted */
        cdc_store_close(st);
        st = tu_open(d); /* the rows in table files, read through the readahead */
        cdc_store_t *ro = NULL;
        cdc_open_options_t roo = {.read_only = 1};
        cdc_error_t e = {0};
        cr_assert_eq(cdc_store_open(d, &roo, &ro, &e), 0, "%s", e.msg);
        cdc_iter_options_t io = {.lower_json = cases[c].lo, .upper_json = cases[c].hi, .no_key_json = c == 1};
        cdc_iter_t *it;
        cr_assert_eq(cdc_iter_open(ro, "public.orders", &io, &it, &e), 0, "%s", e.msg);
        /* after the open: every key changed, a tenth deleted, keys added */
        put_many(st, N + 50, 1, 100000, "shipped", 10);
        long want = cases[c].first, rows = 0;
        cdc_row_t row;
        int rc;
        while ((rc = cdc_iter_next(it, &row, &e)) == 1) {
            while (want % 7 == 0) want++;
            char key[32], amount[32];
            snprintf(key, sizeof key, "{\"order_id\":%ld}", want);
            snprintf(amount, sizeof amount, "%ld.25", want);
            const char *kj = cdc_iter_key_json(it);
            cr_assert(kj && !strcmp(kj, key), "case %zu row %ld: key %s, expected %s", c, rows, kj ? kj : "?", key);
            cr_assert_eq(row.ncols, 3);
            cr_assert(row.lens[1] == 4 && !memcmp(row.values[1], "paid", 4),
                      "case %zu key %ld: status %.*s: a change made after the open", c, want, (int)row.lens[1],
                      row.values[1]);
            cr_assert(row.lens[2] == strlen(amount) && !memcmp(row.values[2], amount, row.lens[2]),
                      "case %zu key %ld: amount %.*s", c, want, (int)row.lens[2], row.values[2]);
            want++, rows++;
        }
        cr_assert_eq(rc, 0, "case %zu: %s", c, e.msg);
        while (want <= cases[c].last && want % 7 == 0) want++;
        cr_expect_eq(want, cases[c].last + 1, "case %zu: the scan ended before key %ld (at %ld)", c, cases[c].last,
                     want);
        cr_expect_gt(rows, 4096 * 2, "case %zu: %ld rows, not past the switch", c, rows);
        cdc_iter_close(it);
        cdc_store_close(ro);
        cdc_store_close(st);
        tu_rmrf(d);
        free(d);
    }
    /* the writer's own scan, with tombstones, and a purge while it runs */
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    put_many(st, N, 1, 1000, "paid", 7);
    cdc_store_close(st);
    st = tu_open(d);
    cdc_iter_options_t io = {.include_deleted = 1, .no_key_json = 1};
    cdc_iter_t *it;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_iter_open(st, "public.orders", &io, &it, &e), 0, "%s", e.msg);
    cdc_row_t row;
    long rows = 0, deleted = 0;
    int rc;
    uint64_t purged = 0;
    while ((rc = cdc_iter_next(it, &row, &e)) == 1) {
        rows++;
        deleted += row.deleted;
        if (rows == 100) {
            cdc_gc_options_t o = {.horizon_lsn = 1000000};
            cdc_gc_result_t res;
            cdc_error_t pe = {0};
            cr_assert_eq(cdc_store_purge(st, "public.orders", &o, &res, &pe), 0, "%s", pe.msg);
            purged = res.purged;
        }
    }
    cr_assert_eq(rc, 0, "%s", e.msg);
    cr_expect_gt(purged, 0, "the purge removed no tombstone: the check below proves nothing");
    cr_expect_eq(rows, N, "the writer's scan saw %ld keys of %d", rows, (int)N);
    cr_expect_eq(deleted, N / 7, "the writer's scan saw %ld tombstones of %d", deleted, (int)(N / 7));
    cdc_iter_close(it);
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

Test(export, csv_and_ndjson_halves_give_the_bytes_of_one_piece)
{
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    put_orders(st);
    for (int format = CDC_FORMAT_CSV; format <= CDC_FORMAT_NDJSON; format++)
        for (int meta = 0; meta <= 1; meta++) {
            cdc_export_options_t o = {.format = format, .header = 1, .meta = meta};
            int rc1, rc2;
            setenv("CDC_EXPORT_THREADS", "1", 1);
            char *one = export_with(st, NULL, &o, &rc1);
            setenv("CDC_EXPORT_THREADS", "2", 1);
            char *two = export_with(st, NULL, &o, &rc2);
            cr_assert_eq(rc1, 0);
            cr_assert_eq(rc2, 0);
            cr_expect_str_eq(two, one, "format %d meta %d", format, meta);
            const char *first = format == CDC_FORMAT_CSV
                                    ? (meta ? "order_id,status,amount,__lsn,__deleted\n1,paid,\"\",1"
                                            : "order_id,status,amount\n1,paid,\"\"\n2,paid,1.50\n")
                                    : "{\"order_id\":\"1\",\"status\":\"paid\",\"amount\":\"\"";
            cr_expect(!strncmp(one, first, strlen(first)), "format %d meta %d starts: %.60s", format, meta, one);
            free(one);
            free(two);
        }
    unsetenv("CDC_EXPORT_THREADS");
    cdc_export_options_t bad = {.format = 99};
    int rc;
    free(export_with(st, NULL, &bad, &rc));
    cr_expect_eq(rc, CDC_EINVAL, "an unknown format is refused");
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

/* A timestamptz as Debezium carries it (ISO 8601, Java's years) is stored so;
 * CSV and NDJSON write the years PostgreSQL does not read (before year 1,
 * past 9999) in PostgreSQL's form, and only in a ZonedTimestamp column: a
 * text column holding the same characters keeps them.  The 2-thread export
 * (a second context without begin) writes the same bytes. */
Test(export, zoned_timestamps_before_year_1_and_past_9999_in_postgresql_form)
{
    static const struct { const char *in, *out; } v[] = {
        {"-0044-03-15T10:00:00.000000Z", "0045-03-15T10:00:00.000000Z BC"},
        {"0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z BC"},
        {"-4712-01-01T00:00:00.000000Z", "4713-01-01T00:00:00.000000Z BC"},
        {"-0001-12-31T23:59:59.999999Z", "0002-12-31T23:59:59.999999Z BC"},
        {"+10000-01-01T00:00:00.000000Z", "10000-01-01T00:00:00.000000Z"},
        {"+294276-12-31T23:59:59.999999Z", "294276-12-31T23:59:59.999999Z"},
        {"0001-01-01T00:00:00.000000Z", "0001-01-01T00:00:00.000000Z"},
        {"0999-01-01T00:00:00Z", "0999-01-01T00:00:00Z"},
        {"2026-01-16T08:30:00.000000Z", "2026-01-16T08:30:00.000000Z"},
        {"infinity", "infinity"},
        {"-infinity", "-infinity"},
        {"-1", "-1"},
        {"+", "+"},
        {"0000", "0000"},
        {"", ""},
    };
    enum { N = sizeof v / sizeof v[0] };
    char *d = tu_tmpdir();
    cdc_store_t *st = tu_open(d);
    for (int i = 0; i < N; i++) {
        cdc__buf env = {0}, val = {0};
        cdc__json_put_string(&val, v[i].in, strlen(v[i].in));
        cdc__buf_putc(&val, 0);
        cdc__buf_printf(&env,
                        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":["
                        "{\"type\":\"int32\",\"optional\":false,\"field\":\"order_id\"},"
                        "{\"type\":\"string\",\"optional\":true,\"name\":\"io.debezium.time.ZonedTimestamp\","
                        "\"version\":1,\"field\":\"at\"},{\"type\":\"string\",\"optional\":true,\"field\":\"note\"}],"
                        "\"optional\":true,\"field\":\"after\"}]},\"payload\":{\"before\":null,\"after\":"
                        "{\"order_id\":%d,\"at\":%s,\"note\":%s},\"source\":{\"ts_ms\":1,\"snapshot\":\"false\","
                        "\"schema\":\"public\",\"table\":\"orders\",\"lsn\":%d},\"op\":\"c\"}}",
                        i + 1, val.p, val.p, 100 + i);
        cdc__buf_putc(&env, 0);
        char key[32];
        snprintf(key, sizeof key, "{\"order_id\":%d}", i + 1);
        cdc_record_t r = tu_rec(T, 0, i, key, env.p);
        tu_apply(st, &r, 1);
        cdc__buf_free(&env);
        cdc__buf_free(&val);
    }
    for (int format = CDC_FORMAT_CSV; format <= CDC_FORMAT_NDJSON; format++) {
        cdc_export_options_t o = {.format = format};
        int rc1, rc2;
        setenv("CDC_EXPORT_THREADS", "1", 1);
        char *one = export_with(st, NULL, &o, &rc1);
        setenv("CDC_EXPORT_THREADS", "2", 1);
        char *two = export_with(st, NULL, &o, &rc2);
        unsetenv("CDC_EXPORT_THREADS");
        cr_assert_eq(rc1, 0);
        cr_assert_eq(rc2, 0);
        cr_expect_str_eq(two, one, "format %d: two threads", format);
        cdc__buf want = {0};
        for (int i = 0; i < N; i++) {
            if (format == CDC_FORMAT_CSV) {
                cdc__buf_printf(&want, "%d,%s%s%s,%s%s%s\n", i + 1, *v[i].out ? "" : "\"", v[i].out,
                                *v[i].out ? "" : "\"", *v[i].in ? "" : "\"", v[i].in, *v[i].in ? "" : "\"");
            } else {
                cdc__buf_printf(&want, "{\"order_id\":\"%d\",\"at\":\"%s\",\"note\":\"%s\"}\n", i + 1, v[i].out,
                                v[i].in);
            }
        }
        cdc__buf_putc(&want, 0);
        cr_expect_str_eq(one, want.p, "format %d", format);
        cdc__buf_free(&want);
        free(one);
        free(two);
    }
    cdc_store_close(st);
    tu_rmrf(d);
    free(d);
}

/* ---- The file writer ---- */

static void writer_roundtrip(const char *env)
{
    if (env) setenv("CDC_URING", env, 1);
    else unsetenv("CDC_URING");
    char path[] = "/tmp/cdcwriter.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "head:", 5), 5); /* the writer starts at the current offset */
    cdc__writer *w;
    cr_assert_eq(cdc__writer_open(fd, 3, 4096, &w), 0);
    cdc__buf want = {0};
    cdc__buf_puts(&want, "head:");
    char chunk[1000];
    for (int i = 0; i < 200; i++) {
        size_t n = (size_t)(i * 37 % 1000) + 1;
        for (size_t k = 0; k < n; k++) chunk[k] = (char)('a' + (i + k) % 26);
        cr_assert_eq(cdc__writer_put(w, chunk, n), 0);
        cdc__buf_put(&want, chunk, n);
    }
    if (!env) cr_log_info("io_uring in use: %d", cdc__writer_uses_uring(w));
    cr_assert_eq(cdc__writer_close(w), 0);
    cr_assert_eq(write(fd, ":tail", 5), 5); /* the position is after the data */
    cdc__buf_puts(&want, ":tail");
    struct stat sb;
    fstat(fd, &sb);
    cr_assert_eq((size_t)sb.st_size, want.len);
    char *got = malloc(want.len);
    cr_assert_eq(pread(fd, got, want.len, 0), (ssize_t)want.len);
    cr_expect(memcmp(got, want.p, want.len) == 0, "file content differs");
    free(got);
    close(fd);
    unlink(path);
    cdc__buf_free(&want);
}

Test(writer, uring_and_fallback_write_the_same_bytes)
{
    writer_roundtrip(NULL);
    writer_roundtrip("0");
}

Test(writer, pipe_uses_plain_writes)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cdc__writer *w;
    unsetenv("CDC_URING");
    cr_assert_eq(cdc__writer_open(p[1], 0, 0, &w), 0);
    cr_expect_eq(cdc__writer_uses_uring(w), 0);
    cr_assert_eq(cdc__writer_put(w, "hello", 5), 0);
    cr_assert_eq(cdc__writer_close(w), 0);
    char buf[8] = {0};
    cr_assert_eq(read(p[0], buf, sizeof buf), 5);
    cr_expect_str_eq(buf, "hello");
    close(p[0]);
    close(p[1]);
}
