/*
 * test_dv.c: the Delta deletion vector codec (query/dv.c) on its own: round
 * trips at the edges (no row, row 0, 2^32-1 and 2^32, buckets past 2^32 with
 * gaps, 4,096 and 4,097 values in a container, dense and sparse sets), the
 * bytes of the protocol's example rows, run containers read, a table of
 * malformed vectors each refused (and every truncation of a valid one), Z85
 * against the ZeroMQ spec's and the Delta protocol's examples, and vector
 * files: offsets, sizes, the CRC checked on read.  Spark's and deltalake's
 * view of the same bytes is tests/export/dv_readers.sh.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "../../query/dv.h"

#define G32 (UINT64_C(1) << 32)

/* Serializes rows, parses the bytes back and checks they are the rows;
 * returns the serialized length. */
static size_t round_trip(const uint64_t *rows, size_t n)
{
    cdc__buf b = {0};
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_serialize(rows, n, &b, &e), 0, "%s", e.msg);
    uint64_t *back = NULL;
    size_t m = 99;
    cr_assert_eq(cdc__dv_parse(b.p, b.len, 0, &back, &m, &e), 0, "%s", e.msg);
    cr_assert_eq(m, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(back[i], rows[i], "row %zu: %llu, not %llu", i,
                                                (unsigned long long)back[i], (unsigned long long)rows[i]);
    free(back);
    size_t len = b.len;
    cdc__buf_free(&b);
    return len;
}

static uint64_t *range(uint64_t from, uint64_t to, uint64_t step, size_t *n)
{
    *n = 0;
    uint64_t *r = malloc(((to - from) / step + 1) * sizeof *r);
    for (uint64_t v = from; v < to; v += step) r[(*n)++] = v;
    return r;
}

Test(dv, round_trips_at_the_edges)
{
    /* no row: magic and a count of 0 buckets */
    cr_assert_eq(round_trip(NULL, 0), 12);
    uint64_t one[] = {0};
    /* magic, count, key, cookie, 1 container, header, offset, one value */
    cr_assert_eq(round_trip(one, 1), 4 + 8 + 4 + 8 + 4 + 4 + 2);
    uint64_t r1[] = {1}, r2[] = {G32 - 1}, r3[] = {G32}, r4[] = {G32 - 1, G32};
    round_trip(r1, 1);
    round_trip(r2, 1);
    /* 2^32 alone: bucket 1 only (Spark would also write bucket 0 empty) */
    cr_assert_eq(round_trip(r3, 1), 4 + 8 + 4 + 8 + 4 + 4 + 2);
    round_trip(r4, 2);
    uint64_t far[] = {0, 65535, 65536, G32 - 1, G32, G32 + 7, 3 * G32 + 5, 5 * G32 + 65536, CDC__DV_MAX_ROW};
    round_trip(far, sizeof far / sizeof *far);
    size_t n;
    uint64_t *r = range(0, 8192, 2, &n); /* exactly 4096 in one container: an array */
    cr_assert_eq(n, 4096);
    round_trip(r, n);
    free(r);
    r = range(0, 8194, 2, &n); /* 4097: a bitmap */
    cr_assert_eq(n, 4097);
    round_trip(r, n);
    free(r);
    r = range(0, 200000, 1, &n); /* dense: full bitmaps and a partial one */
    round_trip(r, n);
    free(r);
    r = range(3, 10000000, 997, &n); /* sparse: many small arrays */
    round_trip(r, n);
    free(r);
    r = range(G32 - 70000, G32 + 70000, 3, &n); /* across the bucket boundary, both kinds */
    round_trip(r, n);
    free(r);
}

Test(dv, container_kinds_by_cardinality)
{
    size_t n;
    uint64_t *r = range(0, 8192, 2, &n);
    cdc__buf b = {0};
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_serialize(r, n, &b, &e), 0);
    /* header: magic 4, count 8, key 4, cookie 4, n 4, key/card 4, offset 4 = 32 */
    const unsigned char *c = (const unsigned char *)b.p + 32;
    cr_assert_eq(b.len, 32 + 8192);
    cr_assert(c[0] == 0 && c[1] == 0 && c[2] == 2 && c[3] == 0, "an array container: 0, 2, ...");
    cr_assert_eq(((const unsigned char *)b.p)[26], 0xff); /* cardinality - 1 = 4095 */
    cr_assert_eq(((const unsigned char *)b.p)[27], 0x0f);
    free(r);
    b.len = 0;
    r = range(0, 8194, 2, &n);
    cr_assert_eq(cdc__dv_serialize(r, n, &b, &e), 0);
    c = (const unsigned char *)b.p + 32;
    cr_assert_eq(b.len, 32 + 8192);
    cr_assert(c[0] == 0x55 && c[1023] == 0x55 && c[1024] == 0x01 && c[1025] == 0, "a bitmap container");
    free(r);
    cdc__buf_free(&b);
}

/* The rows of the protocol's inline example (3, 4, 7, 11, 18, 29): its
 * 32-bit Roaring bitmap, behind the portable header. */
Test(dv, known_bytes)
{
    uint64_t rows[] = {3, 4, 7, 11, 18, 29};
    static const unsigned char want[] = {
        0xd1, 0xd3, 0x39, 0x64,                         /* magic 1681511377 */
        1,    0,    0,    0,    0, 0, 0, 0,             /* one bucket */
        0,    0,    0,    0,                            /* key 0 */
        0x3a, 0x30, 0,    0,    1, 0, 0, 0,             /* cookie 12346, one container */
        0,    0,    5,    0,                            /* key 0, cardinality 6 */
        16,   0,    0,    0,                            /* offset */
        3,    0,    4,    0,    7, 0, 11, 0, 18, 0, 29, 0};
    cdc__buf b = {0};
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_serialize(rows, 6, &b, &e), 0);
    cr_assert_eq(b.len, sizeof want);
    cr_assert_eq(memcmp(b.p, want, sizeof want), 0);
    cdc__buf_free(&b);
}

Test(dv, serialize_refuses_bad_rows)
{
    cdc__buf b = {0};
    cdc_error_t e = {0};
    uint64_t down[] = {5, 3}, dup[] = {5, 5}, big[] = {1, CDC__DV_MAX_ROW + 1};
    cr_assert_eq(cdc__dv_serialize(down, 2, &b, &e), CDC_EINVAL);
    cr_assert(strstr(e.msg, "index 1"), "%s", e.msg);
    cr_assert_eq(cdc__dv_serialize(dup, 2, &b, &e), CDC_EINVAL);
    cr_assert_eq(cdc__dv_serialize(big, 2, &b, &e), CDC_EINVAL);
    cr_assert(strstr(e.msg, "largest"), "%s", e.msg);
    cr_assert_eq(b.len, 0, "nothing appended on an error");
    cdc__buf_free(&b);
}

/* ---- Hand-made vectors ---- */

static void le16(cdc__buf *b, unsigned v) { cdc__buf_put(b, (char[]){(char)v, (char)(v >> 8)}, 2); }
static void le32(cdc__buf *b, uint32_t v)
{
    cdc__buf_put(b, (char[]){(char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24)}, 4);
}
static void head(cdc__buf *b, uint64_t nbuckets)
{
    le32(b, CDC__DV_MAGIC);
    le32(b, (uint32_t)nbuckets);
    le32(b, (uint32_t)(nbuckets >> 32));
}

/* Bucket 0 with run containers: key 0 runs {1..3, 10..10}; key 1 an array
 * {5}; key 2 the run 0..65535; key 3 a bitmap of 5000 even values.  Four
 * containers: the offsets are there. */
static void runs_vector(cdc__buf *b)
{
    head(b, 1);
    le32(b, 0);
    size_t base = b->len;
    le32(b, 12347u | 3u << 16);
    cdc__buf_putc(b, 0x05); /* containers 0 and 2 are runs */
    le16(b, 0), le16(b, 3);
    le16(b, 1), le16(b, 0);
    le16(b, 2), le16(b, 65535);
    le16(b, 3), le16(b, 4999);
    uint32_t off = 4 + 1 + 16 + 16;
    uint32_t sizes[] = {2 + 8, 2, 2 + 4, 8192};
    for (int k = 0; k < 4; k++) {
        le32(b, off);
        off += sizes[k];
    }
    cr_assert_eq(b->len - base, 4 + 1 + 16 + 16);
    le16(b, 2), le16(b, 1), le16(b, 2), le16(b, 10), le16(b, 0);
    le16(b, 5);
    le16(b, 1), le16(b, 0), le16(b, 65535);
    unsigned char bits[8192] = {0};
    for (int v = 0; v < 10000; v += 2) bits[v / 8] |= (unsigned char)(1 << (v % 8));
    cdc__buf_put(b, bits, sizeof bits);
}

Test(dv, run_containers_are_read)
{
    cdc__buf b = {0};
    runs_vector(&b);
    uint64_t *r = NULL;
    size_t n = 0;
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_parse(b.p, b.len, 0, &r, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 4 + 1 + 65536 + 5000);
    cr_assert(r[0] == 1 && r[1] == 2 && r[2] == 3 && r[3] == 10 && r[4] == 65536 + 5);
    cr_assert(r[5] == 2 * 65536 && r[5 + 65535] == 3 * 65536 - 1 && r[5 + 65536] == 3 * 65536);
    cr_assert_eq(r[n - 1], 3 * 65536 + 9998);
    free(r);
    /* one run container alone: cookie 12347 with no offsets (under 4 containers) */
    cdc__buf_reset(&b);
    head(&b, 1);
    le32(&b, 0);
    le32(&b, 12347u);
    cdc__buf_putc(&b, 1);
    le16(&b, 0), le16(&b, 9);
    le16(&b, 1), le16(&b, 100), le16(&b, 9);
    cr_assert_eq(cdc__dv_parse(b.p, b.len, 0, &r, &n, &e), 0, "%s", e.msg);
    cr_assert(n == 10 && r[0] == 100 && r[9] == 109);
    free(r);
    /* buckets left out (keys 0 and 3 only) are read too */
    cdc__buf_reset(&b);
    head(&b, 2);
    le32(&b, 0), le32(&b, 12346), le32(&b, 1), le16(&b, 0), le16(&b, 0), le32(&b, 16), le16(&b, 7);
    le32(&b, 3), le32(&b, 12346), le32(&b, 1), le16(&b, 0), le16(&b, 0), le32(&b, 16), le16(&b, 8);
    cr_assert_eq(cdc__dv_parse(b.p, b.len, 0, &r, &n, &e), 0, "%s", e.msg);
    cr_assert(n == 2 && r[0] == 7 && r[1] == 3 * G32 + 8);
    free(r);
    /* empty buckets, as Spark writes below its last one */
    cdc__buf_reset(&b);
    head(&b, 3);
    le32(&b, 0), le32(&b, 12346), le32(&b, 0);
    le32(&b, 1), le32(&b, 12346), le32(&b, 0);
    le32(&b, 2), le32(&b, 12346), le32(&b, 1), le16(&b, 0), le16(&b, 0), le32(&b, 16), le16(&b, 9);
    cr_assert_eq(cdc__dv_parse(b.p, b.len, 0, &r, &n, &e), 0, "%s", e.msg);
    cr_assert(n == 1 && r[0] == 2 * G32 + 9);
    free(r);
    cdc__buf_free(&b);
}

/* A malformed vector: a valid one and what is done to it. */
typedef struct bad_case {
    const char *name;
    void (*make)(cdc__buf *b);
    const char *msg; /* part of the error message */
} bad_case;

/* rows {1, 2} in bucket 0: bytes 12.. key, 16 cookie, 20 count, 24 key,
 * 26 card-1, 28 offset, 32 values */
static void base2(cdc__buf *b)
{
    head(b, 1);
    le32(b, 0), le32(b, 12346), le32(b, 1), le16(b, 0), le16(b, 1), le32(b, 16), le16(b, 1), le16(b, 2);
}
static void set16(cdc__buf *b, size_t at, unsigned v) { b->p[at] = (char)v, b->p[at + 1] = (char)(v >> 8); }
static void set32(cdc__buf *b, size_t at, uint32_t v) { set16(b, at, v & 0xffff), set16(b, at + 2, v >> 16); }

static void mk_empty(cdc__buf *b) { (void)b; }
static void mk_short_magic(cdc__buf *b) { cdc__buf_put(b, "\xd1\xd3\x39", 3); }
static void mk_bad_magic(cdc__buf *b) { base2(b), set32(b, 0, 1681511378u); }
static void mk_native(cdc__buf *b) { base2(b), set32(b, 0, 1681511376u); }
static void mk_no_count(cdc__buf *b) { le32(b, CDC__DV_MAGIC), le32(b, 0); }
static void mk_many_buckets(cdc__buf *b) { base2(b), set32(b, 4, 2); }
static void mk_huge_count(cdc__buf *b) { base2(b), set32(b, 8, 1); }
static void mk_key_top_bit(cdc__buf *b) { base2(b), set32(b, 12, 0x80000000u); }
static void mk_keys_equal(cdc__buf *b)
{
    head(b, 2);
    le32(b, 4), le32(b, 12346), le32(b, 0);
    le32(b, 4), le32(b, 12346), le32(b, 0);
}
static void mk_bad_cookie(cdc__buf *b) { base2(b), set32(b, 16, 12345); }
static void mk_too_many_containers(cdc__buf *b) { base2(b), set32(b, 20, 65537); }
static void mk_bad_offset(cdc__buf *b) { base2(b), set32(b, 28, 17); }
static void mk_array_down(cdc__buf *b) { base2(b), set16(b, 32, 3); }
static void mk_array_dup(cdc__buf *b) { base2(b), set16(b, 32, 2); }
static void mk_card_too_big(cdc__buf *b) { base2(b), set16(b, 26, 2); }
static void mk_trailing(cdc__buf *b) { base2(b), cdc__buf_putc(b, 0); }
static void mk_container_keys(cdc__buf *b)
{
    head(b, 1);
    le32(b, 0), le32(b, 12346), le32(b, 2);
    le16(b, 5), le16(b, 0), le16(b, 5), le16(b, 0);
    le32(b, 24), le32(b, 26);
    le16(b, 1), le16(b, 1);
}
static void mk_bitmap_count(cdc__buf *b)
{
    head(b, 1);
    le32(b, 0), le32(b, 12346), le32(b, 1), le16(b, 0), le16(b, 4097), le32(b, 16);
    unsigned char bits[8192];
    memset(bits, 0, sizeof bits);
    memset(bits, 0xff, 512); /* 4096 bits, header says 4098 */
    cdc__buf_put(b, bits, sizeof bits);
}
/* one run container (cookie 12347, no offsets) */
static void run1(cdc__buf *b, unsigned card_m1, unsigned nruns, const unsigned *runs)
{
    head(b, 1);
    le32(b, 0), le32(b, 12347), cdc__buf_putc(b, 1), le16(b, 0), le16(b, card_m1), le16(b, nruns);
    for (unsigned i = 0; i < 2 * nruns; i++) le16(b, runs[i]);
}
static void mk_runs_overlap(cdc__buf *b) { run1(b, 5, 2, (const unsigned[]){1, 3, 4, 1}); }
static void mk_runs_down(cdc__buf *b) { run1(b, 3, 2, (const unsigned[]){10, 1, 1, 1}); }
static void mk_run_past_end(cdc__buf *b) { run1(b, 1, 1, (const unsigned[]){65535, 1}); }
static void mk_runs_fewer(cdc__buf *b) { run1(b, 9, 1, (const unsigned[]){0, 3}); }
static void mk_runs_more(cdc__buf *b) { run1(b, 1, 1, (const unsigned[]){0, 3}); }
static void mk_no_runs(cdc__buf *b) { run1(b, 0, 0, NULL); }
static void mk_runbit_past(cdc__buf *b) { run1(b, 0, 1, (const unsigned[]){0, 0}), b->p[20] = 3; }

static const bad_case bad_cases[] = {
    {"empty input", mk_empty, "truncated magic"},
    {"three bytes", mk_short_magic, "truncated magic"},
    {"wrong magic", mk_bad_magic, "magic number"},
    {"native format", mk_native, "native"},
    {"bucket count cut", mk_no_count, "truncated bucket count"},
    {"more buckets than written", mk_many_buckets, "truncated bucket key"},
    {"2^32 buckets", mk_huge_count, "more buckets"},
    {"key with top bit", mk_key_top_bit, "top bit"},
    {"keys not ascending", mk_keys_equal, "bucket keys not ascending"},
    {"bad cookie", mk_bad_cookie, "cookie"},
    {"65537 containers", mk_too_many_containers, "65536"},
    {"offset off by one", mk_bad_offset, "offset"},
    {"array values descending", mk_array_down, "not ascending"},
    {"array values repeated", mk_array_dup, "not ascending"},
    {"cardinality past the bytes", mk_card_too_big, "truncated array"},
    {"trailing byte", mk_trailing, "past the last bucket"},
    {"container keys repeated", mk_container_keys, "container keys"},
    {"bitmap count differs", mk_bitmap_count, "bit count"},
    {"runs overlap", mk_runs_overlap, "overlap"},
    {"runs descending", mk_runs_down, "overlap"},
    {"run past 65535", mk_run_past_end, "past the container"},
    {"runs fewer than the cardinality", mk_runs_fewer, "fewer"},
    {"runs more than the cardinality", mk_runs_more, "more values"},
    {"no runs", mk_no_runs, "fewer"},
    {"run bit past the last container", mk_runbit_past, "bits set past"},
};

Test(dv, malformed_vectors_are_refused)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        cdc__buf b = {0};
        bad_cases[i].make(&b);
        /* an exact-size copy, so that a read past the end shows under ASan */
        char *exact = malloc(b.len ? b.len : 1);
        if (b.len) memcpy(exact, b.p, b.len);
        uint64_t *r = (uint64_t *)0x1;
        size_t n = 77;
        cdc_error_t e = {0};
        int rc = cdc__dv_parse(exact, b.len, 0, &r, &n, &e);
        cr_expect_eq(rc, CDC_ECORRUPT, "%s: accepted (rc %d)", bad_cases[i].name, rc);
        cr_expect(strstr(e.msg, bad_cases[i].msg), "%s: message \"%s\" lacks \"%s\"", bad_cases[i].name, e.msg,
                  bad_cases[i].msg);
        cr_expect(r == (uint64_t *)0x1 && n == 77, "%s: outputs touched", bad_cases[i].name);
        free(exact);
        cdc__buf_free(&b);
    }
}

Test(dv, every_truncation_is_refused)
{
    cdc__buf b = {0};
    runs_vector(&b);
    uint64_t far[] = {0, 9, G32 + 1, 3 * G32};
    cdc__buf c = {0};
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_serialize(far, 4, &c, &e), 0);
    cdc__buf *vs[] = {&b, &c};
    for (int v = 0; v < 2; v++)
        for (size_t len = 0; len < vs[v]->len; len++) {
            char *exact = malloc(len ? len : 1);
            memcpy(exact, vs[v]->p, len);
            uint64_t *r = NULL;
            size_t n = 0;
            cr_assert_eq(cdc__dv_parse(exact, len, 0, &r, &n, &e), CDC_ECORRUPT, "vector %d cut at %zu accepted", v,
                         len);
            free(exact);
        }
    cdc__buf_free(&b);
    cdc__buf_free(&c);
}

Test(dv, row_bound)
{
    uint64_t rows[] = {5, 10};
    cdc__buf b = {0};
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_serialize(rows, 2, &b, &e), 0);
    uint64_t *r = NULL;
    size_t n = 0;
    cr_assert_eq(cdc__dv_parse(b.p, b.len, 10, &r, &n, &e), CDC_ECORRUPT);
    cr_assert(strstr(e.msg, "row 10"), "%s", e.msg);
    cr_assert_eq(cdc__dv_parse(b.p, b.len, 11, &r, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 2);
    free(r);
    cdc__buf_free(&b);
}

/* ---- Z85, CRC-32, names ---- */

Test(dv, z85_known_vectors)
{
    static const unsigned char hello[] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
    cdc__buf b = {0};
    cdc__dv_z85_encode(hello, 8, &b);
    cr_assert_eq(b.len, 10);
    cr_assert_eq(memcmp(b.p, "HelloWorld", 10), 0);
    cdc__buf_reset(&b);
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_z85_decode("HelloWorld", 10, &b, &e), 0);
    cr_assert_eq(b.len, 8);
    cr_assert_eq(memcmp(b.p, hello, 8), 0);
    cdc__buf_reset(&b);
    /* unaligned input is padded with zeros, as Delta's encodeBytes does */
    cdc__dv_z85_encode(hello, 5, &b);
    cr_assert_eq(b.len, 10);
    cdc__buf c = {0};
    cr_assert_eq(cdc__dv_z85_decode(b.p, b.len, &c, &e), 0);
    cr_assert(memcmp(c.p, hello, 5) == 0 && c.p[5] == 0 && c.p[6] == 0 && c.p[7] == 0);
    cdc__buf_reset(&b);
    cr_assert_eq(cdc__dv_z85_decode("Hell", 4, &b, &e), CDC_ECORRUPT);
    cr_assert_eq(cdc__dv_z85_decode("Hell\"", 5, &b, &e), CDC_ECORRUPT);
    cr_assert_eq(cdc__dv_z85_decode("Hell~", 5, &b, &e), CDC_ECORRUPT);
    cr_assert_eq(cdc__dv_z85_decode("#####", 5, &b, &e), CDC_ECORRUPT); /* 85^5 - 1 > 2^32 - 1 */
    cr_assert(strstr(e.msg, "2^32"), "%s", e.msg);
    cr_assert_eq(cdc__dv_z85_decode("%nSc0", 5, &b, &e), 0); /* 2^32 - 1, the largest group */
    cr_assert_eq(memcmp(b.p, "\xff\xff\xff\xff", 4), 0);
    cr_assert_eq(b.len, 4);
    cdc__buf_free(&b);
    cdc__buf_free(&c);
}

Test(dv, crc32)
{
    cr_assert_eq(cdc__dv_crc32(0, "123456789", 9), 0xcbf43926u);
    cr_assert_eq(cdc__dv_crc32(0, "", 0), 0);
    cr_assert_eq(cdc__dv_crc32(cdc__dv_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
}

Test(dv, file_names_from_descriptors)
{
    cdc__buf b = {0};
    cdc_error_t e = {0};
    /* the protocol's example 1: prefix "ab" */
    const char *ex = "ab^-aqEH.-t@S}K{vb[*k^";
    cr_assert_eq(cdc__dv_path(ex, strlen(ex), &b, &e), 0, "%s", e.msg);
    cr_assert_str_eq(b.p, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin");
    cdc__buf_reset(&b);
    /* one Spark wrote (no prefix) */
    const char *sp = "4h}^&zZE&CH]?%hF/M5e";
    cr_assert_eq(cdc__dv_path(sp, strlen(sp), &b, &e), 0, "%s", e.msg);
    cr_assert_str_eq(b.p, "deletion_vector_0d1a48d8-6f26-43a2-88ad-250b821d22a1.bin");
    cdc__buf_reset(&b);
    cr_assert_eq(cdc__dv_path(sp, 19, &b, &e), CDC_ECORRUPT);
    const char *dots = "..4h}^&zZE&CH]?%hF/M5e", *slash = "a/4h}^&zZE&CH]?%hF/M5e", *bad = "4h}^&zZE&CH]?%hF/M5\"";
    cr_assert_eq(cdc__dv_path(dots, strlen(dots), &b, &e), CDC_ECORRUPT);
    cr_assert_eq(cdc__dv_path(slash, strlen(slash), &b, &e), CDC_ECORRUPT);
    cr_assert_eq(cdc__dv_path(bad, strlen(bad), &b, &e), CDC_ECORRUPT);
    cr_assert_eq(b.len, 0);
    cdc__buf_free(&b);
}

Test(dv, inline_vectors)
{
    cdc_error_t e = {0};
    uint64_t *r = NULL;
    size_t n = 0;
    /* The protocol's example 3 is Delta's older "native" format (magic
     * 1681511376, a big-endian header): refused with that said. */
    const char *ex = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L";
    cr_assert_eq(cdc__dv_inline_parse(ex, strlen(ex), 40, 0, &r, &n, &e), CDC_ECORRUPT);
    cr_assert(strstr(e.msg, "native"), "%s", e.msg);
    uint64_t rows[] = {1, 2, 3}; /* 38 bytes: padded to 40 */
    cdc__buf j = {0};
    cr_assert_eq(cdc__dv_inline_json(rows, 3, &j, &e), 0);
    cdc__buf_putc(&j, 0);
    cr_assert(strstr(j.p, "\"storageType\":\"i\"") && strstr(j.p, "\"sizeInBytes\":38,\"cardinality\":3}"), "%s", j.p);
    const char *z = strstr(j.p, "pathOrInlineDv\":\"") + 17;
    size_t zl = (size_t)(strchr(z, '"') - z);
    cr_assert_eq(zl, 50);
    cr_assert_eq(cdc__dv_inline_parse(z, zl, 38, 0, &r, &n, &e), 0, "%s", e.msg);
    cr_assert(n == 3 && r[0] == 1 && r[2] == 3);
    free(r);
    cr_assert_eq(cdc__dv_inline_parse(z, zl, 44, 0, &r, &n, &e), CDC_ECORRUPT);
    cdc__buf_free(&j);
}

/* ---- Files ---- */

static char *file_path(const char *dir, const cdc__dv_file *f) { return tu_fmt("%s/%s", dir, cdc__dv_file_name(f)); }

static void flip(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    cr_assert(fd >= 0);
    unsigned char c;
    cr_assert_eq(pread(fd, &c, 1, at), 1);
    c ^= 0x10;
    cr_assert_eq(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

Test(dv, vector_files)
{
    char *dir = tu_tmpdir();
    cdc__dv_file *f = NULL;
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_file_create(dir, &f, &e), 0, "%s", e.msg);
    char *path = file_path(dir, f);
    size_t n;
    uint64_t *dense = range(0, 70000, 1, &n);
    uint64_t sparse[] = {7, 107, 65543};
    cdc__dv_desc d[3];
    cr_assert_eq(cdc__dv_file_add(f, sparse, 3, &d[0], &e), 0, "%s", e.msg);
    cr_assert_eq(cdc__dv_file_add(f, dense, n, &d[1], &e), 0, "%s", e.msg);
    cr_assert_eq(cdc__dv_file_add(f, sparse, 1, &d[2], &e), 0, "%s", e.msg);
    cr_assert_eq(cdc__dv_file_close(f, &e), 0, "%s", e.msg);
    cr_assert_eq(d[0].offset, 1);
    cr_assert_eq(d[1].offset, 1 + 4 + d[0].size + 4);
    cr_assert_eq(d[2].offset, d[1].offset + 4 + d[1].size + 4);
    cr_assert_eq(d[0].cardinality, 3);
    cr_assert_eq(d[1].cardinality, 70000);
    cr_assert_eq(strlen(d[0].path), 20);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq((uint64_t)st.st_size, d[2].offset + 4 + d[2].size + 4);
    /* the name is the descriptor's UUID */
    cdc__buf name = {0};
    cr_assert_eq(cdc__dv_path(d[0].path, 20, &name, &e), 0);
    cr_assert_str_eq(name.p, cdc__dv_file_name(f));
    cdc__buf_free(&name);
    cdc__buf j = {0};
    cdc__dv_desc_json(&d[1], &j);
    cdc__buf_putc(&j, 0);
    char *want = tu_fmt("{\"storageType\":\"u\",\"pathOrInlineDv\":\"%s\",\"offset\":%llu,\"sizeInBytes\":%u,"
                        "\"cardinality\":70000}",
                        d[1].path, (unsigned long long)d[1].offset, d[1].size);
    cr_assert_str_eq(j.p, want);
    free(want);
    cdc__buf_free(&j);
    cdc__dv_file_free(f);
    cr_assert_eq(access(path, F_OK), 0, "a closed file stays");
    for (int k = 0; k < 3; k++) {
        uint64_t *r = NULL;
        size_t m = 0;
        cr_assert_eq(cdc__dv_read(dir, &d[k], 0, &r, &m, &e), 0, "%s", e.msg);
        cr_assert_eq(m, d[k].cardinality);
        cr_assert_eq(r[m - 1], k == 1 ? 69999 : k == 0 ? 65543 : 7);
        free(r);
    }
    uint64_t *r = NULL;
    size_t m = 0;
    /* descriptors that do not match the file */
    cdc__dv_desc w = d[0];
    w.cardinality = 4;
    cr_assert_eq(cdc__dv_read(dir, &w, 0, &r, &m, &e), CDC_ECORRUPT);
    cr_assert(strstr(e.msg, "descriptor says 4"), "%s", e.msg);
    w = d[0];
    w.size++;
    cr_assert_eq(cdc__dv_read(dir, &w, 0, &r, &m, &e), CDC_ECORRUPT);
    w = d[2];
    w.size = 1u << 30; /* past the file: refused before allocating */
    cr_assert_eq(cdc__dv_read(dir, &w, 0, &r, &m, &e), CDC_ECORRUPT);
    cr_assert(strstr(e.msg, "cannot hold"), "%s", e.msg);
    w = d[0];
    w.offset = 0;
    cr_assert_eq(cdc__dv_read(dir, &w, 0, &r, &m, &e), CDC_ECORRUPT);
    /* the row bound reaches the parser */
    cr_assert_eq(cdc__dv_read(dir, &d[0], 65543, &r, &m, &e), CDC_ECORRUPT);
    /* a flipped byte in the second vector's bitmap: its CRC refuses it, the others read */
    flip(path, (off_t)d[1].offset + 4 + 40);
    cr_assert_eq(cdc__dv_read(dir, &d[1], 0, &r, &m, &e), CDC_ECORRUPT);
    cr_assert(strstr(e.msg, "checksum"), "%s", e.msg);
    cr_assert_eq(cdc__dv_read(dir, &d[0], 0, &r, &m, &e), 0, "%s", e.msg);
    free(r);
    flip(path, (off_t)d[1].offset + 4 + 40);
    /* a flipped byte in a stored CRC */
    flip(path, (off_t)(d[0].offset + 4 + d[0].size + 2));
    cr_assert_eq(cdc__dv_read(dir, &d[0], 0, &r, &m, &e), CDC_ECORRUPT);
    cr_assert(strstr(e.msg, "checksum"), "%s", e.msg);
    flip(path, (off_t)(d[0].offset + 4 + d[0].size + 2));
    /* another format version */
    flip(path, 0);
    cr_assert_eq(cdc__dv_read(dir, &d[0], 0, &r, &m, &e), CDC_ECORRUPT);
    cr_assert(strstr(e.msg, "version"), "%s", e.msg);
    flip(path, 0);
    /* cut short */
    cr_assert_eq(truncate(path, (off_t)(d[2].offset + 4 + d[2].size + 3)), 0);
    cr_assert_eq(cdc__dv_read(dir, &d[2], 0, &r, &m, &e), CDC_ECORRUPT);
    cr_assert_eq(cdc__dv_read(dir, &d[1], 0, &r, &m, &e), 0, "%s", e.msg);
    free(r);
    free(dense);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

Test(dv, unfinished_file_is_removed)
{
    char *dir = tu_tmpdir();
    cdc__dv_file *f = NULL;
    cdc_error_t e = {0};
    cr_assert_eq(cdc__dv_file_create(dir, &f, &e), 0, "%s", e.msg);
    char *path = file_path(dir, f);
    uint64_t rows[] = {1, 2};
    cdc__dv_desc d;
    cr_assert_eq(cdc__dv_file_add(f, rows, 2, &d, &e), 0);
    uint64_t down[] = {2, 1};
    cr_assert_eq(cdc__dv_file_add(f, down, 2, &d, &e), CDC_EINVAL);
    cr_assert_eq(access(path, F_OK), 0);
    cdc__dv_file_free(f);
    cr_assert_neq(access(path, F_OK), 0, "an unfinished file is removed");
    cr_assert_eq(cdc__dv_file_create("/nonexistent/dir", &f, &e), -ENOENT);
    cr_assert(strstr(e.msg, "/nonexistent/dir/deletion_vector_"), "%s", e.msg);
    free(path);
    tu_rmrf(dir);
    free(dir);
}
