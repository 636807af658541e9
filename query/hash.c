/*
 * hash.c: range hashes of a table in the replica, and the SQL that computes
 * the same hashes in PostgreSQL, so that a comparison with the source only
 * moves (range, count, hash) triples over the network.
 *
 * The row encoding.  Over the columns in the replica's column order (the
 * source's column order), with v_i the column's PostgreSQL text form (what
 * the replica stores):
 *     len(v_1) "," len(v_2) "," ... "," len(v_n) ";" v_1 v_2 ... v_n
 * where len is the decimal byte length, and "-1" for NULL (whose v is empty).
 * The header of lengths makes it parse back in one way only: ("a|b","c")
 * and ("a","b|c") differ, NULL differs from the empty string ("-1" against
 * "0"), and a value cannot swallow its neighbour.  The key columns are
 * columns of the row, so the key is part of the encoding.  Lengths first,
 * rather than before each value, because PostgreSQL builds it with two calls
 * (concat_ws of the lengths, concat of the values), much cheaper than a chain
 * of || per column:
 *     concat_ws(',', coalesce(octet_length(c1::text), -1), ...) || ';' || concat(c1::text, ...)
 *
 * The row hash is the first 64 bits (big-endian) of md5(encoding).  In SQL:
 *     ('x' || substr(md5(<encoding>), 1, 16))::bit(64)::bigint
 * (the bigint is the same 64 bits read as two's complement).  Or, as an
 * option, PostgreSQL's hashtextextended(<encoding>, 0) (Jenkins' lookup3,
 * 64 bits), which costs the source a fraction of md5: PostgreSQL 15 spends
 * about 1 us per md5() call, more than the whole rest of the row.
 *
 * The range hash is the sum of its rows' hashes modulo 2^64, and the range
 * count is its number of rows.  In SQL: sum(h) is numeric (exact), reduced
 * modulo 2^64.  Why a sum and not XOR of CRC32 as pt-table-checksum does:
 *  - a sum is order-independent, so neither side has to sort, yet it is
 *    still a function of which rows are present, each with its key;
 *  - values swapped between two rows (row 1 gets row 2's amount and the
 *    reverse) change both rows' encodings, each holding its own key, and md5
 *    is not linear, so the two new hashes are unrelated to the old ones and
 *    the sum changes except with probability about 2^-64.  CRC32 is affine
 *    over GF(2): for strings of equal length, crc(x) ^ crc(y) depends only on
 *    x ^ y.  Swap equal-length values a and b between rows k1|a and k2|b:
 *    (k1|a) ^ (k2|b) = (k1|b) ^ (k2|a), so XOR of the CRCs stays the same and
 *    the swap goes unseen.  XOR also cancels pairs: a row present twice
 *    contributes h ^ h = 0.  A sum counts it as 2h, and the count differs;
 * *  - sums can be subtracted, so one pass over a range gives the hashes of all
 *    its sub-ranges as differences of prefix sums.
 *
 * Ranges.  Width ranges [k*W, (k+1)*W) for a single integer key (bucket
 * floor(k / W), also for negative keys); or ranges cut every `stride` rows of
 * the replica (quantiles): range i is [lower_i, lower_{i+1}).  In SQL the
 * bucket of a row is width_bucket(key, ARRAY[lower_1, ...]) for a single
 * key column, with COLLATE "C" for text so that the order is the replica's
 * bytewise order, and a binary tree of CASE with row comparisons for
 * composite keys.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"

/* ---- md5 (RFC 1321) ---- */

#define MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
#define MD5_STEP(f, a, b, c, d, x, t, s)                                                          \
    do {                                                                                       \
        (a) += f((b), (c), (d)) + (x) + (t);                                                   \
        (a) = ((a) << (s)) | ((a) >> (32 - (s)));                                              \
        (a) += (b);                                                                            \
    } while (0)

static void md5_block(cdc__md5 *m, const unsigned char *p)
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)p[i * 4] | (uint32_t)p[i * 4 + 1] << 8 | (uint32_t)p[i * 4 + 2] << 16 |
               (uint32_t)p[i * 4 + 3] << 24;
    uint32_t a = m->a, b = m->b, c = m->c, d = m->d;

    MD5_STEP(MD5_F, a, b, c, d, x[0], 0xd76aa478, 7);
    MD5_STEP(MD5_F, d, a, b, c, x[1], 0xe8c7b756, 12);
    MD5_STEP(MD5_F, c, d, a, b, x[2], 0x242070db, 17);
    MD5_STEP(MD5_F, b, c, d, a, x[3], 0xc1bdceee, 22);
    MD5_STEP(MD5_F, a, b, c, d, x[4], 0xf57c0faf, 7);
    MD5_STEP(MD5_F, d, a, b, c, x[5], 0x4787c62a, 12);
    MD5_STEP(MD5_F, c, d, a, b, x[6], 0xa8304613, 17);
    MD5_STEP(MD5_F, b, c, d, a, x[7], 0xfd469501, 22);
    MD5_STEP(MD5_F, a, b, c, d, x[8], 0x698098d8, 7);
    MD5_STEP(MD5_F, d, a, b, c, x[9], 0x8b44f7af, 12);
    MD5_STEP(MD5_F, c, d, a, b, x[10], 0xffff5bb1, 17);
    MD5_STEP(MD5_F, b, c, d, a, x[11], 0x895cd7be, 22);
    MD5_STEP(MD5_F, a, b, c, d, x[12], 0x6b901122, 7);
    MD5_STEP(MD5_F, d, a, b, c, x[13], 0xfd987193, 12);
    MD5_STEP(MD5_F, c, d, a, b, x[14], 0xa679438e, 17);
    MD5_STEP(MD5_F, b, c, d, a, x[15], 0x49b40821, 22);

    MD5_STEP(MD5_G, a, b, c, d, x[1], 0xf61e2562, 5);
    MD5_STEP(MD5_G, d, a, b, c, x[6], 0xc040b340, 9);
    MD5_STEP(MD5_G, c, d, a, b, x[11], 0x265e5a51, 14);
    MD5_STEP(MD5_G, b, c, d, a, x[0], 0xe9b6c7aa, 20);
    MD5_STEP(MD5_G, a, b, c, d, x[5], 0xd62f105d, 5);
    MD5_STEP(MD5_G, d, a, b, c, x[10], 0x02441453, 9);
    MD5_STEP(MD5_G, c, d, a, b, x[15], 0xd8a1e681, 14);
    MD5_STEP(MD5_G, b, c, d, a, x[4], 0xe7d3fbc8, 20);
    MD5_STEP(MD5_G, a, b, c, d, x[9], 0x21e1cde6, 5);
    MD5_STEP(MD5_G, d, a, b, c, x[14], 0xc33707d6, 9);
    MD5_STEP(MD5_G, c, d, a, b, x[3], 0xf4d50d87, 14);
    MD5_STEP(MD5_G, b, c, d, a, x[8], 0x455a14ed, 20);
    MD5_STEP(MD5_G, a, b, c, d, x[13], 0xa9e3e905, 5);
    MD5_STEP(MD5_G, d, a, b, c, x[2], 0xfcefa3f8, 9);
    MD5_STEP(MD5_G, c, d, a, b, x[7], 0x676f02d9, 14);
    MD5_STEP(MD5_G, b, c, d, a, x[12], 0x8d2a4c8a, 20);

    MD5_STEP(MD5_H, a, b, c, d, x[5], 0xfffa3942, 4);
    MD5_STEP(MD5_H, d, a, b, c, x[8], 0x8771f681, 11);
    MD5_STEP(MD5_H, c, d, a, b, x[11], 0x6d9d6122, 16);
    MD5_STEP(MD5_H, b, c, d, a, x[14], 0xfde5380c, 23);
    MD5_STEP(MD5_H, a, b, c, d, x[1], 0xa4beea44, 4);
    MD5_STEP(MD5_H, d, a, b, c, x[4], 0x4bdecfa9, 11);
    MD5_STEP(MD5_H, c, d, a, b, x[7], 0xf6bb4b60, 16);
    MD5_STEP(MD5_H, b, c, d, a, x[10], 0xbebfbc70, 23);
    MD5_STEP(MD5_H, a, b, c, d, x[13], 0x289b7ec6, 4);
    MD5_STEP(MD5_H, d, a, b, c, x[0], 0xeaa127fa, 11);
    MD5_STEP(MD5_H, c, d, a, b, x[3], 0xd4ef3085, 16);
    MD5_STEP(MD5_H, b, c, d, a, x[6], 0x04881d05, 23);
    MD5_STEP(MD5_H, a, b, c, d, x[9], 0xd9d4d039, 4);
    MD5_STEP(MD5_H, d, a, b, c, x[12], 0xe6db99e5, 11);
    MD5_STEP(MD5_H, c, d, a, b, x[15], 0x1fa27cf8, 16);
    MD5_STEP(MD5_H, b, c, d, a, x[2], 0xc4ac5665, 23);

    MD5_STEP(MD5_I, a, b, c, d, x[0], 0xf4292244, 6);
    MD5_STEP(MD5_I, d, a, b, c, x[7], 0x432aff97, 10);
    MD5_STEP(MD5_I, c, d, a, b, x[14], 0xab9423a7, 15);
    MD5_STEP(MD5_I, b, c, d, a, x[5], 0xfc93a039, 21);
    MD5_STEP(MD5_I, a, b, c, d, x[12], 0x655b59c3, 6);
    MD5_STEP(MD5_I, d, a, b, c, x[3], 0x8f0ccc92, 10);
    MD5_STEP(MD5_I, c, d, a, b, x[10], 0xffeff47d, 15);
    MD5_STEP(MD5_I, b, c, d, a, x[1], 0x85845dd1, 21);
    MD5_STEP(MD5_I, a, b, c, d, x[8], 0x6fa87e4f, 6);
    MD5_STEP(MD5_I, d, a, b, c, x[15], 0xfe2ce6e0, 10);
    MD5_STEP(MD5_I, c, d, a, b, x[6], 0xa3014314, 15);
    MD5_STEP(MD5_I, b, c, d, a, x[13], 0x4e0811a1, 21);
    MD5_STEP(MD5_I, a, b, c, d, x[4], 0xf7537e82, 6);
    MD5_STEP(MD5_I, d, a, b, c, x[11], 0xbd3af235, 10);
    MD5_STEP(MD5_I, c, d, a, b, x[2], 0x2ad7d2bb, 15);
    MD5_STEP(MD5_I, b, c, d, a, x[9], 0xeb86d391, 21);

    m->a += a;
    m->b += b;
    m->c += c;
    m->d += d;
}

void cdc__md5_init(cdc__md5 *m)
{
    m->a = 0x67452301;
    m->b = 0xefcdab89;
    m->c = 0x98badcfe;
    m->d = 0x10325476;
    m->len = 0;
}

void cdc__md5_update(cdc__md5 *m, const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t have = (size_t)(m->len & 63);
    m->len += n;
    if (have) {
        size_t take = 64 - have < n ? 64 - have : n;
        memcpy(m->buf + have, p, take);
        p += take;
        n -= take;
        if (have + take < 64) return;
        md5_block(m, m->buf);
    }
    for (; n >= 64; p += 64, n -= 64) md5_block(m, p);
    if (n) memcpy(m->buf, p, n);
}

void cdc__md5_final(cdc__md5 *m, unsigned char out[16])
{
    static const unsigned char pad[64] = {0x80};
    uint64_t bits = m->len * 8;
    size_t have = (size_t)(m->len & 63);
    cdc__md5_update(m, pad, have < 56 ? 56 - have : 120 - have);
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (8 * i));
    cdc__md5_update(m, lenb, 8);
    uint32_t s[4] = {m->a, m->b, m->c, m->d};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) out[i * 4 + j] = (unsigned char)(s[i] >> (8 * j));
}

/* ---- Row hashes ---- */

/* ---- PostgreSQL's hash_bytes_extended (lookup3, Bob Jenkins, public domain) ----
 *
 * hashtextextended(text, 0) in PostgreSQL is this function over the text's
 * bytes (deterministic collations).  It is what hash partitioning stores on
 * disk, so it does not change between releases.  The byte order is
 * little-endian, as on the servers PostgreSQL runs on in practice (x86-64,
 * arm64); a big-endian server computes other values. */

#define ROT32(x, k) (((x) << (k)) | ((x) >> (32 - (k))))
#define L3_MIX(a, b, c)                                                                            \
    do {                                                                                       \
        a -= c; a ^= ROT32(c, 4); c += b;                                                      \
        b -= a; b ^= ROT32(a, 6); a += c;                                                      \
        c -= b; c ^= ROT32(b, 8); b += a;                                                      \
        a -= c; a ^= ROT32(c, 16); c += b;                                                     \
        b -= a; b ^= ROT32(a, 19); a += c;                                                     \
        c -= b; c ^= ROT32(b, 4); b += a;                                                      \
    } while (0)
#define L3_FINAL(a, b, c)                                                                          \
    do {                                                                                       \
        c ^= b; c -= ROT32(b, 14);                                                             \
        a ^= c; a -= ROT32(c, 11);                                                             \
        b ^= a; b -= ROT32(a, 25);                                                             \
        c ^= b; c -= ROT32(b, 16);                                                             \
        a ^= c; a -= ROT32(c, 4);                                                              \
        b ^= a; b -= ROT32(a, 14);                                                             \
        c ^= b; c -= ROT32(b, 24);                                                             \
    } while (0)

uint64_t cdc__lookup3(const void *data, size_t n)
{
    const unsigned char *k = data;
    uint32_t len = (uint32_t)n, a, b, c;
    a = b = c = 0x9e3779b9 + len + 3923095;
    while (len >= 12) {
        a += k[0] + ((uint32_t)k[1] << 8) + ((uint32_t)k[2] << 16) + ((uint32_t)k[3] << 24);
        b += k[4] + ((uint32_t)k[5] << 8) + ((uint32_t)k[6] << 16) + ((uint32_t)k[7] << 24);
        c += k[8] + ((uint32_t)k[9] << 8) + ((uint32_t)k[10] << 16) + ((uint32_t)k[11] << 24);
        L3_MIX(a, b, c);
        k += 12;
        len -= 12;
    }
    switch (len) { /* the lowest byte of c is left to the length */
    case 11: c += (uint32_t)k[10] << 24; /* fall through */
    case 10: c += (uint32_t)k[9] << 16; /* fall through */
    case 9: c += (uint32_t)k[8] << 8; /* fall through */
    case 8: b += (uint32_t)k[7] << 24; /* fall through */
    case 7: b += (uint32_t)k[6] << 16; /* fall through */
    case 6: b += (uint32_t)k[5] << 8; /* fall through */
    case 5: b += k[4]; /* fall through */
    case 4: a += (uint32_t)k[3] << 24; /* fall through */
    case 3: a += (uint32_t)k[2] << 16; /* fall through */
    case 2: a += (uint32_t)k[1] << 8; /* fall through */
    case 1: a += k[0];
    }
    L3_FINAL(a, b, c);
    return (uint64_t)b << 32 | c;
}

/* ---- Row hashes ---- */

/* Writes the decimal n at p; returns its length.  (snprintf costs more than
 * hashing a short row.) */
static size_t put_dec(char *p, size_t n)
{
    char d[24];
    size_t k = 0, len = 0;
    do {
        d[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    while (k) p[len++] = d[--k];
    return len;
}

void cdc__row_encode(const char *const *values, const size_t *lens, const size_t *cols, size_t ncols,
                     cdc__buf *out)
{
    cdc__buf_reset(out);
    cdc__buf_reserve(out, ncols * 21 + 1);
    for (size_t i = 0; i < ncols; i++) {
        size_t c = cols ? cols[i] : i;
        if (i) out->p[out->len++] = ',';
        if (!values[c]) {
            out->p[out->len++] = '-';
            out->p[out->len++] = '1';
        } else {
            out->len += put_dec(out->p + out->len, lens[c]);
        }
    }
    out->p[out->len++] = ';';
    for (size_t i = 0; i < ncols; i++) {
        size_t c = cols ? cols[i] : i;
        if (values[c]) cdc__buf_put(out, values[c], lens[c]);
    }
}

uint64_t cdc__row_hash(const char *const *values, const size_t *lens, const size_t *cols, size_t ncols,
                       int algorithm, cdc__buf *scratch)
{
    cdc__row_encode(values, lens, cols, ncols, scratch);
    if (algorithm == CDC_HASH_LOOKUP3) return cdc__lookup3(scratch->p, scratch->len);
    cdc__md5 m;
    unsigned char d[16];
    cdc__md5_init(&m);
    cdc__md5_update(&m, scratch->p, scratch->len);
    cdc__md5_final(&m, d);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++) h = h << 8 | d[i];
    return h;
}

uint64_t cdc_row_hash(const cdc_row_t *row, int algorithm)
{
    cdc__buf b = {0};
    uint64_t h = cdc__row_hash(row->values, row->lens, NULL, row->ncols, algorithm, &b);
    cdc__buf_free(&b);
    return h;
}

/* ---- Keys ---- */

int cdc__key_parts(const char *key, size_t len, cdc__keypart **parts, size_t *n)
{
    const unsigned char *p = (const unsigned char *)key, *end = p + len;
    size_t cap = 4;
    *n = 0;
    *parts = cdc__calloc(cap, sizeof **parts);
    while (p < end) {
        if (*n == cap) {
            cap *= 2;
            *parts = cdc__realloc(*parts, cap * sizeof **parts);
        }
        cdc__keypart *kp = &(*parts)[*n];
        memset(kp, 0, sizeof *kp);
        if (*p == CDC__KEY_INT) {
            if (end - p < 9) goto bad;
            uint64_t u = 0;
            for (int k = 1; k <= 8; k++) u = (u << 8) | p[k];
            kp->type = CDC__KP_INT;
            kp->i = (int64_t)(u ^ 0x8000000000000000ULL);
            p += 9;
        } else if (*p == CDC__KEY_TEXT) {
            cdc__buf t = {0};
            p++;
            for (;;) {
                if (p + 1 >= end) {
                    cdc__buf_free(&t);
                    goto bad;
                }
                if (p[0] == 0 && p[1] == 0) break;
                if (p[0] == 0 && p[1] != 0xFF) {
                    cdc__buf_free(&t);
                    goto bad;
                }
                cdc__buf_putc(&t, (char)p[0]);
                p += p[0] == 0 ? 2 : 1;
            }
            p += 2;
            kp->type = CDC__KP_TEXT;
            kp->n = t.len;
            cdc__buf_putc(&t, 0);
            kp->s = t.p;
        } else {
            goto bad;
        }
        (*n)++;
    }
    return 0;
bad:
    cdc__keyparts_free(*parts, *n);
    *parts = NULL;
    *n = 0;
    return CDC_ECORRUPT;
}

void cdc__keyparts_free(cdc__keypart *parts, size_t n)
{
    if (!parts) return;
    for (size_t i = 0; i < n; i++) free(parts[i].s);
    free(parts);
}

int cdc__key_json_array(const char *key, size_t len, cdc__buf *out)
{
    cdc__buf_reset(out);
    if (cdc__key_to_json(key, len, NULL, 0, out)) return CDC_ECORRUPT;
    cdc__buf_putc(out, 0);
    return 0;
}

/* ---- Replica range scans ---- */

static cdc__rh *scan_new_range(cdc__scan *s)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->r = cdc__realloc(s->r, s->cap * sizeof *s->r);
    }
    cdc__rh *r = &s->r[s->n++];
    memset(r, 0, sizeof *r);
    return r;
}

size_t cdc__numeric_trim(const char *v, size_t n)
{
    if (!v || !memchr(v, '.', n)) return n;
    while (n > 0 && v[n - 1] == '0') n--;
    if (n > 0 && v[n - 1] == '.') n--;
    return n;
}

int cdc__scan_run(cdc_store_t *st, cdc__scan *s, cdc_error_t *err)
{
    size_t *tl = NULL; /* lengths with unconstrained NUMERICs trimmed */
    cdc__buf lj = {0}, hj = {0};
    cdc_iter_options_t io = {0};
    int rc = 0;
    if (s->lo && s->lo->len) {
        if ((rc = cdc__key_json_array(s->lo->p, s->lo->len, &lj))) goto bad_bound;
        io.lower_json = lj.p;
    }
    if (s->hi && s->hi->len) {
        if ((rc = cdc__key_json_array(s->hi->p, s->hi->len, &hj))) goto bad_bound;
        io.upper_json = hj.p;
    }
    cdc_iter_t *it;
    if ((rc = cdc_iter_open(st, s->table, &io, &it, err))) goto done;
    cdc_row_t row;
    cdc__buf scratch = {0};
    uint64_t in_range = 0;
    cdc__rh *cur = NULL;
    while ((rc = cdc_iter_next(it, &row, err)) == 1) {
        if (s->rows++ == 0) cdc__buf_put(&s->first_key, row.key, row.key_len);
        if (row.lsn > s->max_lsn) s->max_lsn = row.lsn;
        const size_t *lens = row.lens;
        if (s->trim && s->cols) {
            tl = cdc__realloc(tl, (row.ncols + 1) * sizeof *tl);
            memcpy(tl, row.lens, row.ncols * sizeof *tl);
            for (size_t c = 0; c < s->ncols; c++)
                if (s->trim[c]) tl[s->cols[c]] = cdc__numeric_trim(row.values[s->cols[c]], tl[s->cols[c]]);
            lens = tl;
        }
        uint64_t h = cdc__row_hash(row.values, lens, s->cols, s->cols ? s->ncols : row.ncols,
                                   s->algorithm, &scratch);
        if (s->width > 0) {
            const unsigned char *k = (const unsigned char *)row.key;
            if (row.key_len != 9 || k[0] != CDC__KEY_INT) {
                rc = cdc__err(err, CDC_EINVAL,
                              "table %s: width ranges need a single integer key, and key %s is not one",
                              s->table, row.key_json);
                break;
            }
            uint64_t u = 0;
            for (int i = 1; i <= 8; i++) u = u << 8 | k[i];
            int64_t b = cdc__floordiv((int64_t)(u ^ 0x8000000000000000ULL), s->width);
            if (!cur || cur->bucket != b) {
                cur = scan_new_range(s);
                cur->bucket = b;
            }
        } else if (!cur || (s->stride && in_range >= s->stride)) {
            cur = scan_new_range(s);
            cur->bucket = (int64_t)s->n - 1;
            if (s->n == 1) {
                if (s->lo && s->lo->len) cdc__buf_put(&cur->lower, s->lo->p, s->lo->len);
            } else {
                cdc__buf_put(&cur->lower, row.key, row.key_len);
            }
            in_range = 0;
        }
        cur->rows++;
        cur->hash += h;
        in_range++;
    }
    if (rc == 0 || rc == 1) rc = 0;
    cdc__buf_free(&scratch);
    free(tl);
    cdc_iter_close(it);
    goto done;
bad_bound:
    rc = cdc__err(err, rc, "table %s: a range bound does not decode", s->table);
done:
    cdc__buf_free(&lj);
    cdc__buf_free(&hj);
    return rc;
}

void cdc__scan_free(cdc__scan *s)
{
    for (size_t i = 0; i < s->n; i++) cdc__buf_free(&s->r[i].lower);
    free(s->r);
    s->r = NULL;
    s->n = s->cap = 0;
    cdc__buf_free(&s->first_key);
}

/* ---- Range hashes (API) ---- */

int cdc_hash_ranges(cdc_store_t *st, const char *table, const cdc_hash_options_t *opts,
                    cdc_range_hash_t **out, size_t *n, cdc_error_t *err)
{
    cdc_hash_options_t defo = {0};
    if (!opts) opts = &defo;
    if (!st || !table || !out || !n) return cdc__err(err, CDC_EINVAL, "cdc_hash_ranges: bad arguments");
    *out = NULL;
    *n = 0;
    if (opts->range_width < 0) return cdc__err(err, CDC_EINVAL, "range width must be positive");
    cdc__scan s = {0};
    s.table = table;
    s.width = opts->range_width;
    s.algorithm = opts->algorithm;
    if (!s.width && opts->ranges > 1) {
        cdc_stats_t stats = {0};
        int rc = cdc_store_stats(st, table, &stats, err);
        if (rc) return rc;
        s.stride = (stats.rows_live + opts->ranges - 1) / opts->ranges;
        if (s.stride == 0) s.stride = 1;
    }
    int rc = cdc__scan_run(st, &s, err);
    if (rc) {
        cdc__scan_free(&s);
        return rc;
    }
    cdc_range_hash_t *r = cdc__calloc(s.n ? s.n : 1, sizeof *r);
    cdc__buf j = {0};
    for (size_t i = 0; i < s.n; i++) {
        r[i].index = s.r[i].bucket;
        r[i].rows = s.r[i].rows;
        r[i].hash = s.r[i].hash;
        if (s.width > 0) {
            /* [b*W, (b+1)*W), open where the bound does not fit in an int64. */
            __int128 lo = (__int128)s.r[i].bucket * s.width, hi = lo + s.width;
            if (lo >= INT64_MIN) {
                cdc__buf_reset(&j);
                cdc__buf_printf(&j, "[%lld]", (long long)lo);
                r[i].lower_json = cdc__strdup(j.p);
            }
            if (hi <= INT64_MAX) {
                cdc__buf_reset(&j);
                cdc__buf_printf(&j, "[%lld]", (long long)hi);
                r[i].upper_json = cdc__strdup(j.p);
            }
        } else {
            if (s.r[i].lower.len && !cdc__key_json_array(s.r[i].lower.p, s.r[i].lower.len, &j))
                r[i].lower_json = cdc__strdup(j.p);
            if (i + 1 < s.n && !cdc__key_json_array(s.r[i + 1].lower.p, s.r[i + 1].lower.len, &j))
                r[i].upper_json = cdc__strdup(j.p);
        }
    }
    cdc__buf_free(&j);
    *out = r;
    *n = s.n;
    cdc__scan_free(&s);
    return 0;
}

void cdc_range_hashes_free(cdc_range_hash_t *r, size_t n)
{
    if (!r) return;
    for (size_t i = 0; i < n; i++) {
        free(r[i].lower_json);
        free(r[i].upper_json);
    }
    free(r);
}

/* ---- SQL text ---- */

void cdc__sql_ident(cdc__buf *b, const char *s)
{
    cdc__buf_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"') cdc__buf_putc(b, '"');
        cdc__buf_putc(b, *s);
    }
    cdc__buf_putc(b, '"');
}

void cdc__sql_literal(cdc__buf *b, const char *s, size_t n)
{
    cdc__buf_putc(b, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'') cdc__buf_putc(b, '\'');
        cdc__buf_putc(b, s[i]);
    }
    cdc__buf_putc(b, '\'');
}

void cdc__sql_table(cdc__buf *b, const char *table)
{
    const char *dot = strchr(table, '.');
    if (!dot) {
        cdc__sql_ident(b, table);
        return;
    }
    char *schema = cdc__strndup(table, (size_t)(dot - table));
    cdc__sql_ident(b, schema);
    free(schema);
    cdc__buf_putc(b, '.');
    cdc__sql_ident(b, dot + 1);
}

/* The precision of "timestamp(3) with time zone", 6 when not given. */
static int type_precision(const char *type)
{
    const char *p = strchr(type, '(');
    return p ? atoi(p + 1) : 6;
}

void cdc__sql_coltext(cdc__buf *b, const cdc__srccol *c)
{
    const char *t = c->type;
    if (!t) {
        /* Type unknown: the type's output function, as COPY prints it. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " IS NOT NULL THEN format('%s', ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ") END");
    } else if (!strcmp(t, "boolean")) {
        /* boolean::text is 'true'; the output form (and Debezium's) is t/f. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " THEN 't' WHEN NOT ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " THEN 'f' END");
    } else if (!strncmp(t, "character(", 10) || !strcmp(t, "character") || !strcmp(t, "bpchar")) {
        /* char(n)::text drops the padding that the output form keeps. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " IS NOT NULL THEN format('%s', ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ") END");
    } else if (!strcmp(t, "numeric")) {
        /* unconstrained: compared without trailing fraction zeros (see
         * cdc__numeric_trim) */
        cdc__buf_puts(b, "trim_scale(");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ")::text");
    } else if (!strncmp(t, "timestamp", 9) && strstr(t, "with time zone")) {
        /* Debezium's ZonedTimestamp: ISO-8601 in UTC with the column's
         * fraction digits, "2026-01-16T08:30:00.000000Z". */
        int p = type_precision(t);
        cdc__buf_puts(b, "to_char(");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')");
        if (p > 0 && p <= 6) {
            cdc__buf_puts(b, " || substr(to_char(");
            cdc__sql_ident(b, c->name);
            cdc__buf_printf(b, " AT TIME ZONE 'UTC', '.US'), 1, %d)", p + 1);
        }
        cdc__buf_puts(b, " || 'Z'");
    } else {
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, "::text");
    }
}

/* Appends f(e1, e2, ...) over the column expressions from..to, nesting
 * calls so that no call exceeds PostgreSQL's 100 arguments. */
static void sql_concat(cdc__buf *b, const cdc__srccol *cols, size_t n, int lengths)
{
    const size_t per = 50;
    if (n > per) cdc__buf_puts(b, lengths ? "concat_ws(',', " : "concat(");
    for (size_t g = 0; g < n; g += per) {
        if (g) cdc__buf_puts(b, ", ");
        cdc__buf_puts(b, lengths ? "concat_ws(',', " : "concat(");
        for (size_t i = g; i < n && i < g + per; i++) {
            if (i > g) cdc__buf_puts(b, ", ");
            if (lengths) cdc__buf_puts(b, "coalesce(octet_length(");
            cdc__sql_coltext(b, &cols[i]);
            if (lengths) cdc__buf_puts(b, "), -1)");
        }
        cdc__buf_puts(b, ")");
    }
    if (n > per) cdc__buf_puts(b, ")");
}

void cdc__sql_rowenc(cdc__buf *b, const cdc__srccol *cols, size_t n)
{
    if (!n) {
        cdc__buf_puts(b, "';'");
        return;
    }
    sql_concat(b, cols, n, 1);
    cdc__buf_puts(b, " || ';' || ");
    sql_concat(b, cols, n, 0);
}

void cdc__sql_rowhash(cdc__buf *b, const cdc__srccol *cols, size_t n, int algorithm)
{
    if (algorithm == CDC_HASH_LOOKUP3) {
        cdc__buf_puts(b, "hashtextextended(");
        cdc__sql_rowenc(b, cols, n);
        cdc__buf_puts(b, " COLLATE \"C\", 0)");
        return;
    }
    cdc__buf_puts(b, "('x' || substr(md5(");
    cdc__sql_rowenc(b, cols, n);
    cdc__buf_puts(b, "), 1, 16))::bit(64)::bigint");
}

void cdc__sql_keyexpr(cdc__buf *b, const cdc__srckey *k)
{
    cdc__sql_ident(b, k->name);
    if (k->kind == CDC__KP_TEXT && !k->uuid) cdc__buf_puts(b, k->string ? " COLLATE \"C\"" : "::text COLLATE \"C\"");
}

void cdc__sql_keylit(cdc__buf *b, const cdc__srckey *k, const cdc__keypart *p)
{
    if (p->type == CDC__KP_INT) {
        cdc__buf_printf(b, "%lld", (long long)p->i);
        return;
    }
    cdc__sql_literal(b, p->s, p->n);
    if (k->uuid) cdc__buf_puts(b, "::uuid");
    else cdc__buf_puts(b, "::text");
}

/* (k1, k2) op (v1, v2), or k op v for a single column. */
static int sql_compare(cdc__buf *b, const cdc__srckey *keys, size_t nkey, const char *op,
                       const cdc__buf *key)
{
    cdc__keypart *parts;
    size_t np;
    if (cdc__key_parts(key->p, key->len, &parts, &np)) return CDC_ECORRUPT;
    if (np != nkey) {
        cdc__keyparts_free(parts, np);
        return CDC_EINVAL;
    }
    if (nkey > 1) cdc__buf_puts(b, "ROW(");
    for (size_t i = 0; i < nkey; i++) {
        if (i) cdc__buf_puts(b, ", ");
        cdc__sql_keyexpr(b, &keys[i]);
    }
    cdc__buf_printf(b, "%s %s ", nkey > 1 ? ")" : "", op);
    if (nkey > 1) cdc__buf_puts(b, "ROW(");
    for (size_t i = 0; i < nkey; i++) {
        if (i) cdc__buf_puts(b, ", ");
        cdc__sql_keylit(b, &keys[i], &parts[i]);
    }
    if (nkey > 1) cdc__buf_puts(b, ")");
    cdc__keyparts_free(parts, np);
    return 0;
}

int cdc__sql_range(cdc__buf *b, const cdc__srckey *keys, size_t nkey, const cdc__buf *lo,
                   const cdc__buf *hi)
{
    int any = 0, rc = 0;
    if (lo && lo->len) {
        if ((rc = sql_compare(b, keys, nkey, ">=", lo))) return rc;
        any = 1;
    }
    if (hi && hi->len) {
        if (any) cdc__buf_puts(b, " AND ");
        if ((rc = sql_compare(b, keys, nkey, "<", hi))) return rc;
        any = 1;
    }
    if (!any) cdc__buf_puts(b, "TRUE");
    return 0;
}

/* CASE tree: the index in [from, to] of the range holding the row, where
 * range i starts at bounds[i-1] (range 0 has no lower bound). */
static int sql_case_tree(cdc__buf *b, const cdc__srckey *keys, size_t nkey, const cdc__buf *bounds,
                         size_t from, size_t to)
{
    if (from == to) {
        cdc__buf_printf(b, "%zu", from);
        return 0;
    }
    size_t mid = from + (to - from + 1) / 2; /* ranges >= mid start at bounds[mid-1] */
    cdc__buf_puts(b, "CASE WHEN ");
    int rc = sql_compare(b, keys, nkey, "<", &bounds[mid - 1]);
    if (rc) return rc;
    cdc__buf_puts(b, " THEN ");
    if ((rc = sql_case_tree(b, keys, nkey, bounds, from, mid - 1))) return rc;
    cdc__buf_puts(b, " ELSE ");
    if ((rc = sql_case_tree(b, keys, nkey, bounds, mid, to))) return rc;
    cdc__buf_puts(b, " END");
    return 0;
}

int cdc__sql_bucket(cdc__buf *b, const cdc__srckey *keys, size_t nkey, int64_t width,
                    const cdc__buf *bounds, size_t nbounds)
{
    if (width > 0) {
        if (nkey != 1 || keys[0].kind != CDC__KP_INT) return CDC_EINVAL;
        /* floor(k / W) without overflow: -1 - (-(k + 1)) / W for negative k. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, keys[0].name);
        cdc__buf_printf(b, " >= 0 THEN ");
        cdc__sql_ident(b, keys[0].name);
        cdc__buf_printf(b, "::bigint / %lld ELSE -1 - (-(", (long long)width);
        cdc__sql_ident(b, keys[0].name);
        cdc__buf_printf(b, "::bigint + 1)) / %lld END", (long long)width);
        return 0;
    }
    if (nbounds == 0) {
        cdc__buf_puts(b, "0");
        return 0;
    }
    if (nkey > 1) return sql_case_tree(b, keys, nkey, bounds, 0, nbounds);
    cdc__buf_puts(b, "width_bucket(");
    cdc__sql_keyexpr(b, &keys[0]);
    cdc__buf_puts(b, ", ARRAY[");
    for (size_t i = 0; i < nbounds; i++) {
        cdc__keypart *parts;
        size_t np;
        if (cdc__key_parts(bounds[i].p, bounds[i].len, &parts, &np)) return CDC_ECORRUPT;
        if (np != 1) {
            cdc__keyparts_free(parts, np);
            return CDC_EINVAL;
        }
        if (i) cdc__buf_puts(b, ",");
        if (parts[0].type == CDC__KP_INT) cdc__buf_printf(b, "%lld", (long long)parts[0].i);
        else cdc__sql_literal(b, parts[0].s, parts[0].n);
        cdc__keyparts_free(parts, np);
    }
    cdc__buf_puts(b, keys[0].kind == CDC__KP_INT ? "]::bigint[])" : keys[0].uuid ? "]::uuid[])" : "]::text[])");
    return 0;
}

/* ---- The hash query for users (API) ---- */

int cdc_hash_sql(cdc_store_t *st, const char *table, const char *source_table,
                 const cdc_hash_options_t *opts, char **sql, cdc_error_t *err)
{
    cdc_hash_options_t defo = {0};
    if (!opts) opts = &defo;
    if (!st || !table || !sql) return cdc__err(err, CDC_EINVAL, "cdc_hash_sql: bad arguments");
    *sql = NULL;
    const char *const *names;
    size_t ncols;
    int rc = cdc_store_columns(st, table, &names, &ncols, err);
    if (rc) return rc;
    /* The key columns and their kinds come from the first row's key. */
    cdc_iter_t *it;
    cdc_row_t row;
    if ((rc = cdc_iter_open(st, table, NULL, &it, err))) return rc;
    rc = cdc_iter_next(it, &row, err);
    if (rc <= 0) {
        cdc_iter_close(it);
        return rc < 0 ? rc : cdc__err(err, CDC_ENOTFOUND, "table %s: no rows, so no key to range over", table);
    }
    cdc__keypart *parts = NULL;
    size_t np = 0;
    char **knames = NULL;
    cdc__srckey *keys = NULL;
    cdc__srccol *cols = cdc__calloc(ncols ? ncols : 1, sizeof *cols);
    cdc__buf b = {0}, *bounds = NULL;
    size_t nb = 0;
    cdc_range_hash_t *ranges = NULL;
    size_t nr = 0;
    if ((rc = cdc__key_parts(row.key, row.key_len, &parts, &np))) {
        rc = cdc__err(err, rc, "table %s: a stored key does not decode", table);
        goto done;
    }
    knames = cdc__calloc(np, sizeof *knames);
    if ((rc = cdc__json_object_keys(row.key_json, knames, np))) {
        rc = cdc__err(err, CDC_ECORRUPT, "table %s: key %s: cannot read the column names", table, row.key_json);
        goto done;
    }
    keys = cdc__calloc(np, sizeof *keys);
    for (size_t i = 0; i < np; i++) {
        keys[i].name = knames[i];
        keys[i].kind = parts[i].type;
        keys[i].string = 1;
    }
    for (size_t i = 0; i < ncols; i++) cols[i].name = names[i];
    if (!opts->range_width && opts->ranges > 1) {
        /* The bounds are the lower keys of the replica's quantile ranges. */
        if ((rc = cdc_hash_ranges(st, table, opts, &ranges, &nr, err))) goto done;
        bounds = cdc__calloc(nr ? nr : 1, sizeof *bounds);
        for (size_t i = 1; i < nr; i++) {
            if ((rc = cdc__key_from_json(ranges[i].lower_json, NULL, 0, &bounds[nb], err))) goto done;
            nb++;
        }
    }
    cdc__buf_puts(&b, "SELECT bucket AS range, rows,\n"
                      "       lpad(to_hex((CASE WHEN s >= 9223372036854775808 THEN s - 18446744073709551616 ELSE s END)::bigint), 16, '0') AS hash\n"
                      "FROM (SELECT bucket, count(*) AS rows,\n"
                      "             (sum(h) % 18446744073709551616 + 18446744073709551616) % 18446744073709551616 AS s\n"
                      "      FROM (SELECT ");
    if ((rc = cdc__sql_bucket(&b, keys, np, opts->range_width, bounds, nb))) {
        rc = cdc__err(err, rc, "table %s: %s", table,
                      opts->range_width ? "width ranges need a single integer key" : "bad range bounds");
        goto done;
    }
    cdc__buf_puts(&b, " AS bucket,\n                   ");
    cdc__sql_rowhash(&b, cols, ncols, opts->algorithm);
    cdc__buf_puts(&b, " AS h\n            FROM ");
    cdc__sql_table(&b, source_table ? source_table : table);
    cdc__buf_puts(&b, ") r\n      GROUP BY bucket) g\nORDER BY range;\n");
    cdc__buf_putc(&b, 0);
    *sql = b.p;
    b.p = NULL;
    rc = 0;
done:
    cdc_iter_close(it);
    cdc__keyparts_free(parts, np);
    if (knames)
        for (size_t i = 0; i < np; i++) free(knames[i]);
    free(knames);
    free(keys);
    free(cols);
    for (size_t i = 0; i < nb; i++) cdc__buf_free(&bounds[i]);
    free(bounds);
    cdc_range_hashes_free(ranges, nr);
    cdc__buf_free(&b);
    return rc;
}
