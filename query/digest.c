/*
 * digest.c: the row hash, the one function of a row that both sides of a
 * comparison compute: the row encoding (below), and the two digests taken of
 * it, md5 (RFC 1321) and PostgreSQL's lookup3.  Range hashes (ranges.c) add
 * these up over the replica; the SQL in sql.c computes the same in the
 * source.  Both digests are written out here rather than taken from a
 * library because they must give PostgreSQL's md5() and hashtextextended()
 * bit for bit, and because hashing is most of what a range scan costs.
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
 */
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
