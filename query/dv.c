/*
 * dv.c: Delta Lake deletion vectors (dv.h), written from the Delta protocol
 * (PROTOCOL.md: "Deletion Vectors", "Deletion Vector Descriptor Schema",
 * appendix "Deletion Vector Format") and the Roaring format specification
 * (RoaringFormatSpec, with its 64-bit "portable" extension), and checked
 * against Spark's bytes (tests/export/dv_readers.sh).
 *
 * A serialized vector.  Little-endian throughout: the magic 1681511377,
 * the number of buckets (uint64), then per bucket its key, the high 32 bits
 * of its rows (uint32, below 2^31: the protocol wants the top bit clear),
 * and a 32-bit Roaring bitmap of the low 32 bits:
 *   cookie 12346 (uint32) and the number of containers (uint32), or cookie
 *   12347 | (containers - 1) << 16 and a bit per container, set for a run
 *   container ((containers + 7) / 8 bytes);
 *   per container its key (the high 16 bits) and cardinality - 1 (uint16
 *   each), ascending by key;
 *   per container the byte offset of its data from the cookie (uint32),
 *   always with cookie 12346, with 12347 only from 4 containers on;
 *   the containers: an array of cardinality sorted uint16 when it is at most
 *   4,096, else a bitmap of 1,024 uint64; a run container is its number of
 *   runs (uint16) and per run its start and length - 1 (uint16 each).
 * We write 12346 only (array and bitmap containers) and the buckets that
 * hold rows.  Spark's RoaringBitmapArray, an array indexed by the key, writes
 * every bucket from 0 to the last, empty ones as 8 bytes (cookie 12346, no
 * container), and reads buckets left out as empty.  So our bytes are Spark's
 * for the same rows below 2^32 (every data file's) when Spark did not
 * run-length encode; past 2^32 they differ by Spark's empty buckets, which we
 * do not write because a row near 2^63 would take 2^31 of them (24 GB).  We
 * read all three container kinds, empty buckets and buckets left out.
 *
 * A vector file.  Big-endian: a version byte (1), then per vector its size
 * (uint32), the serialized bytes and their CRC-32 (uint32).  A descriptor's
 * offset is where the vector's size field starts (1 for the first vector, as
 * Spark writes) and its sizeInBytes the serialized bytes alone (magic
 * included, size field and CRC not).  The file's name is
 * deletion_vector_<uuid>.bin; the descriptor's pathOrInlineDv is an optional
 * random prefix (a subdirectory; we use none) and the Z85 text of the UUID's
 * 16 bytes (most significant first).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dv.h"
#include "query.h"

#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define NO_OFFSET_THRESHOLD 4u
#define ARRAY_MAX 4096u
#define BITMAP_BYTES 8192u
#define DV_MAGIC_NATIVE 1681511376u /* Delta's older "native" format: not read */

/* ---- Little- and big-endian integers ---- */

static void put_u16le(cdc__buf *b, uint32_t v)
{
    char t[2] = {(char)v, (char)(v >> 8)};
    cdc__buf_put(b, t, 2);
}

static void put_u32le(cdc__buf *b, uint32_t v)
{
    char t[4] = {(char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24)};
    cdc__buf_put(b, t, 4);
}

static void put_u32be(cdc__buf *b, uint32_t v)
{
    char t[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
    cdc__buf_put(b, t, 4);
}

static uint32_t get_u16le(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t get_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t get_u32be(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* ---- Serialization ---- */

/* Appends the 32-bit Roaring bitmap of the low 32 bits of rows[0..n), which
 * share their high 32 bits. */
static void put_bitmap32(const uint64_t *rows, size_t n, cdc__buf *out)
{
    /* pass 1: the containers' keys and cardinalities, and the header */
    uint32_t ncont = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || (uint32_t)rows[i] >> 16 != (uint32_t)rows[i - 1] >> 16) ncont++;
    put_u32le(out, COOKIE_NO_RUN);
    put_u32le(out, ncont);
    size_t *start = cdc__malloc((ncont + 1) * sizeof *start);
    uint32_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || (uint32_t)rows[i] >> 16 != (uint32_t)rows[i - 1] >> 16) start[k++] = i;
    start[ncont] = n;
    for (k = 0; k < ncont; k++) {
        put_u16le(out, (uint32_t)rows[start[k]] >> 16);
        put_u16le(out, (uint32_t)(start[k + 1] - start[k] - 1));
    }
    /* pass 2: the offsets, counted from the cookie */
    uint32_t off = 8 + 8 * ncont;
    for (k = 0; k < ncont; k++) {
        put_u32le(out, off);
        size_t card = start[k + 1] - start[k];
        off += card <= ARRAY_MAX ? (uint32_t)(2 * card) : BITMAP_BYTES;
    }
    /* pass 3: the containers */
    for (k = 0; k < ncont; k++) {
        size_t card = start[k + 1] - start[k];
        const uint64_t *r = rows + start[k];
        if (card <= ARRAY_MAX) {
            cdc__buf_reserve(out, 2 * card);
            for (size_t i = 0; i < card; i++) put_u16le(out, (uint32_t)r[i] & 0xffff);
        } else {
            unsigned char bits[BITMAP_BYTES];
            memset(bits, 0, sizeof bits);
            for (size_t i = 0; i < card; i++) {
                uint32_t low = (uint32_t)r[i] & 0xffff;
                bits[low >> 3] |= (unsigned char)(1u << (low & 7));
            }
            /* bit j of uint64 word j / 64, little-endian: byte j / 8, bit j % 8 */
            cdc__buf_put(out, bits, sizeof bits);
        }
    }
    free(start);
}

int cdc__dv_serialize(const uint64_t *rows, size_t n, cdc__buf *out, cdc_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        if (i && rows[i] <= rows[i - 1])
            return cdc__err(err, CDC_EINVAL, "deletion vector: row %" PRIu64 " at index %zu is not above row %" PRIu64,
                            rows[i], i, rows[i - 1]);
        if (rows[i] > CDC__DV_MAX_ROW)
            return cdc__err(err, CDC_EINVAL, "deletion vector: row %" PRIu64 " at index %zu is past Delta's largest (%" PRIu64 ")",
                            rows[i], i, (uint64_t)CDC__DV_MAX_ROW);
    }
    uint64_t nbuckets = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || rows[i] >> 32 != rows[i - 1] >> 32) nbuckets++;
    put_u32le(out, CDC__DV_MAGIC);
    put_u32le(out, (uint32_t)nbuckets);
    put_u32le(out, (uint32_t)(nbuckets >> 32));
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && rows[j] >> 32 == rows[i] >> 32; j++) {
        }
        put_u32le(out, (uint32_t)(rows[i] >> 32));
        put_bitmap32(rows + i, j - i, out);
    }
    return 0;
}

/* ---- Parsing ---- */

/* The state of one parse: the input, and the output (NULL while counting). */
typedef struct parser {
    const unsigned char *p;
    size_t len, pos;
    uint64_t *rows; /* NULL: count and check only */
    size_t n;       /* rows so far */
    uint64_t max;   /* largest row so far (valid when n > 0) */
    cdc_error_t *err;
} parser;

static int bad(parser *ps, size_t at, const char *what)
{
    return cdc__err(ps->err, CDC_ECORRUPT, "deletion vector: byte %zu of %zu: %s", at, ps->len, what);
}

/* Room for need more bytes at pos. */
static int need(parser *ps, size_t need, const char *what)
{
    if (ps->len - ps->pos < need) return bad(ps, ps->pos, what);
    return 0;
}

static void emit(parser *ps, uint64_t v)
{
    if (ps->rows) ps->rows[ps->n] = v;
    ps->n++;
    ps->max = v;
}

/* Reads one 32-bit Roaring bitmap at pos, its rows having the high 32 bits
 * high. */
static int parse_bitmap32(parser *ps, uint64_t high)
{
    size_t base = ps->pos;
    int rc;
    if ((rc = need(ps, 4, "truncated cookie"))) return rc;
    uint32_t cookie = get_u32le(ps->p + ps->pos);
    uint32_t ncont;
    const unsigned char *runbits = NULL;
    ps->pos += 4;
    if ((cookie & 0xffff) == COOKIE_RUN) {
        ncont = (cookie >> 16) + 1;
        size_t nb = (ncont + 7) / 8;
        if ((rc = need(ps, nb, "truncated run container bitset"))) return rc;
        runbits = ps->p + ps->pos;
        if (ncont % 8 && runbits[nb - 1] >> (ncont % 8))
            return bad(ps, ps->pos + nb - 1, "run container bits set past the last container");
        ps->pos += nb;
    } else if (cookie == COOKIE_NO_RUN) {
        if ((rc = need(ps, 4, "truncated container count"))) return rc;
        ncont = get_u32le(ps->p + ps->pos);
        if (ncont > 65536) return bad(ps, ps->pos, "more than 65536 containers");
        ps->pos += 4;
    } else {
        return bad(ps, base, "not a Roaring cookie (12346 or 12347)");
    }
    if ((rc = need(ps, 4 * (size_t)ncont, "truncated container headers"))) return rc;
    const unsigned char *hdr = ps->p + ps->pos;
    ps->pos += 4 * (size_t)ncont;
    const unsigned char *offs = NULL;
    if (!runbits || ncont >= NO_OFFSET_THRESHOLD) {
        if ((rc = need(ps, 4 * (size_t)ncont, "truncated container offsets"))) return rc;
        offs = ps->p + ps->pos;
        ps->pos += 4 * (size_t)ncont;
    }
    for (uint32_t k = 0; k < ncont; k++) {
        uint32_t key = get_u16le(hdr + 4 * k);
        uint32_t card = get_u16le(hdr + 4 * k + 2) + 1;
        size_t at = (size_t)(hdr - ps->p) + 4 * k;
        if (k && key <= get_u16le(hdr + 4 * (k - 1))) return bad(ps, at, "container keys not ascending");
        if (offs && get_u32le(offs + 4 * k) != ps->pos - base)
            return bad(ps, (size_t)(offs - ps->p) + 4 * k, "container offset does not match the containers");
        uint64_t top = high << 32 | (uint64_t)key << 16;
        if (runbits && runbits[k / 8] >> (k % 8) & 1) {
            if ((rc = need(ps, 2, "truncated run container"))) return rc;
            uint32_t nruns = get_u16le(ps->p + ps->pos);
            ps->pos += 2;
            if ((rc = need(ps, 4 * (size_t)nruns, "truncated runs"))) return rc;
            uint64_t sum = 0;
            int64_t prev_end = -1;
            for (uint32_t r = 0; r < nruns; r++) {
                const unsigned char *q = ps->p + ps->pos + 4 * (size_t)r;
                uint32_t start = get_u16le(q), last = start + get_u16le(q + 2);
                if ((int64_t)start <= prev_end) return bad(ps, (size_t)(q - ps->p), "runs overlap or not ascending");
                if (last > 0xffff) return bad(ps, (size_t)(q - ps->p), "run past the container's end");
                sum += last - start + 1;
                if (sum > card) return bad(ps, (size_t)(q - ps->p), "runs hold more values than the cardinality");
                if (ps->rows) {
                    for (uint32_t v = start; v <= last; v++) emit(ps, top | v);
                } else { /* counting: no loop, so a few bytes cannot cost 2^32 steps */
                    ps->n += last - start + 1;
                    ps->max = top | last;
                }
                prev_end = last;
            }
            if (sum != card) return bad(ps, ps->pos, "runs hold fewer values than the cardinality");
            ps->pos += 4 * (size_t)nruns;
        } else if (card <= ARRAY_MAX) {
            if ((rc = need(ps, 2 * (size_t)card, "truncated array container"))) return rc;
            const unsigned char *q = ps->p + ps->pos;
            for (uint32_t i = 0; i < card; i++) {
                uint32_t v = get_u16le(q + 2 * i);
                if (i && v <= get_u16le(q + 2 * (i - 1)))
                    return bad(ps, ps->pos + 2 * i, "array container values not ascending");
                emit(ps, top | v);
            }
            ps->pos += 2 * (size_t)card;
        } else {
            if ((rc = need(ps, BITMAP_BYTES, "truncated bitmap container"))) return rc;
            const unsigned char *q = ps->p + ps->pos;
            uint32_t count = 0;
            for (uint32_t i = 0; i < BITMAP_BYTES; i++) count += (uint32_t)__builtin_popcount(q[i]);
            if (count != card) return bad(ps, ps->pos, "bitmap container's bit count differs from its cardinality");
            for (uint32_t i = 0; i < BITMAP_BYTES; i++)
                for (unsigned b = q[i]; b; b &= b - 1) emit(ps, top | (i * 8 + (uint32_t)__builtin_ctz(b)));
            ps->pos += BITMAP_BYTES;
        }
    }
    return 0;
}

/* One pass over the whole vector. */
static int parse_all(parser *ps)
{
    int rc;
    ps->pos = 0;
    ps->n = 0;
    if ((rc = need(ps, 4, "truncated magic number"))) return rc;
    uint32_t magic = get_u32le(ps->p);
    /* Delta's older "native" format; the protocol's inline example has it
     * with a big-endian header, which Spark itself no longer reads */
    if (magic == DV_MAGIC_NATIVE || magic == __builtin_bswap32(DV_MAGIC_NATIVE))
        return bad(ps, 0, "Delta's \"native\" RoaringBitmapArray format (magic 1681511376) is not read");
    if (magic != CDC__DV_MAGIC) return bad(ps, 0, "not a deletion vector (magic number is not 1681511377)");
    ps->pos = 4;
    if ((rc = need(ps, 8, "truncated bucket count"))) return rc;
    uint64_t nbuckets = (uint64_t)get_u32le(ps->p + 4) | (uint64_t)get_u32le(ps->p + 8) << 32;
    ps->pos = 12;
    /* a bucket takes 12 bytes at least (key, cookie, count or a header) */
    if (nbuckets > (ps->len - 12) / 12) return bad(ps, 4, "more buckets than the bytes can hold");
    int64_t prev = -1;
    for (uint64_t b = 0; b < nbuckets; b++) {
        if ((rc = need(ps, 4, "truncated bucket key"))) return rc;
        uint32_t key = get_u32le(ps->p + ps->pos);
        if (key >> 31) return bad(ps, ps->pos, "bucket key with its top bit set");
        if ((int64_t)key <= prev) return bad(ps, ps->pos, "bucket keys not ascending");
        prev = key;
        ps->pos += 4;
        if ((rc = parse_bitmap32(ps, key))) return rc;
    }
    if (ps->pos != ps->len) return bad(ps, ps->pos, "bytes past the last bucket");
    return 0;
}

int cdc__dv_parse(const void *p, size_t len, uint64_t nrows, uint64_t **rows, size_t *n, cdc_error_t *err)
{
    /* pass 1 checks everything and counts; pass 2 fills */
    parser ps = {.p = p, .len = len, .err = err};
    int rc = parse_all(&ps);
    if (rc) return rc;
    if (nrows && ps.n && ps.max >= nrows)
        return cdc__err(err, CDC_ECORRUPT, "deletion vector: row %" PRIu64 " is past the data file's %" PRIu64 " rows",
                        ps.max, nrows);
    uint64_t *out = NULL;
    if (ps.n) {
        out = cdc__malloc(ps.n * sizeof *out);
        ps.rows = out;
        parse_all(&ps);
    }
    *rows = out;
    *n = ps.n;
    return 0;
}

/* ---- CRC-32 ---- */

/* The reflected polynomial 0xedb88320, four bits at a time (a vector is a
 * few KB; a 16-entry table is enough). */
uint32_t cdc__dv_crc32(uint32_t crc, const void *p, size_t n)
{
    static const uint32_t t[16] = {0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4,
                                   0x4db26158, 0x5005713c, 0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
                                   0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c};
    const unsigned char *q = p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= q[i];
        crc = (crc >> 4) ^ t[crc & 15];
        crc = (crc >> 4) ^ t[crc & 15];
    }
    return ~crc;
}

/* ---- Z85 ---- */

static const char z85_chars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

void cdc__dv_z85_encode(const void *p, size_t n, cdc__buf *out)
{
    const unsigned char *q = p;
    cdc__buf_reserve(out, (n + 3) / 4 * 5);
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        for (size_t k = 0; k < 4; k++) v = v << 8 | (i + k < n ? q[i + k] : 0);
        char t[5];
        for (int k = 4; k >= 0; k--) {
            t[k] = z85_chars[v % 85];
            v /= 85;
        }
        cdc__buf_put(out, t, 5);
    }
}

static int z85_value(char c)
{
    const char *s = c ? strchr(z85_chars, c) : NULL;
    return s ? (int)(s - z85_chars) : -1;
}

int cdc__dv_z85_decode(const char *s, size_t len, cdc__buf *out, cdc_error_t *err)
{
    if (len % 5)
        return cdc__err(err, CDC_ECORRUPT, "Z85: length %zu is not a multiple of 5", len);
    size_t start = out->len;
    cdc__buf_reserve(out, len / 5 * 4);
    for (size_t i = 0; i < len; i += 5) {
        uint64_t v = 0;
        for (size_t k = 0; k < 5; k++) {
            int d = z85_value(s[i + k]);
            if (d < 0) {
                out->len = start;
                return cdc__err(err, CDC_ECORRUPT, "Z85: character %zu (0x%02x) is not in the alphabet", i + k,
                                (unsigned char)s[i + k]);
            }
            v = v * 85 + (uint64_t)d;
        }
        if (v > 0xffffffffu) {
            out->len = start;
            return cdc__err(err, CDC_ECORRUPT, "Z85: group at character %zu is above 2^32-1", i);
        }
        put_u32be(out, (uint32_t)v);
    }
    return 0;
}

/* ---- Descriptor ---- */

void cdc__dv_uuid_text(const unsigned char b[16], char out[37])
{
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

void cdc__dv_desc_json(const cdc__dv_desc *d, cdc__buf *out)
{
    /* Z85 has no '"' or '\\': the text goes in as it is */
    cdc__buf_printf(out,
                    "{\"storageType\":\"u\",\"pathOrInlineDv\":\"%s\",\"offset\":%" PRIu64 ",\"sizeInBytes\":%" PRIu32
                    ",\"cardinality\":%" PRIu64 "}",
                    d->path, d->offset, d->size, d->cardinality);
}

int cdc__dv_path(const char *s, size_t len, cdc__buf *out, cdc_error_t *err)
{
    if (len < 20)
        return cdc__err(err, CDC_ECORRUPT, "deletion vector path \"%.*s\": shorter than a UUID's 20 characters",
                        (int)len, s);
    size_t plen = len - 20;
    for (size_t i = 0; i < plen; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return cdc__err(err, CDC_ECORRUPT, "deletion vector path \"%.*s\": prefix is not alphanumeric",
                            (int)len, s);
    }
    cdc__buf u = {0};
    int rc = cdc__dv_z85_decode(s + plen, 20, &u, err);
    if (rc) {
        cdc__buf_free(&u);
        return rc;
    }
    char text[37];
    cdc__dv_uuid_text((const unsigned char *)u.p, text);
    cdc__buf_free(&u);
    if (plen) {
        cdc__buf_put(out, s, plen);
        cdc__buf_putc(out, '/');
    }
    cdc__buf_printf(out, "deletion_vector_%s.bin", text);
    cdc__buf_putc(out, 0);
    out->len--;
    return 0;
}

/* ---- Inline vectors ---- */

int cdc__dv_inline_json(const uint64_t *rows, size_t n, cdc__buf *out, cdc_error_t *err)
{
    cdc__buf b = {0};
    int rc = cdc__dv_serialize(rows, n, &b, err);
    if (!rc) {
        cdc__buf_puts(out, "{\"storageType\":\"i\",\"pathOrInlineDv\":\"");
        cdc__dv_z85_encode(b.p, b.len, out);
        cdc__buf_printf(out, "\",\"sizeInBytes\":%zu,\"cardinality\":%zu}", b.len, n);
    }
    cdc__buf_free(&b);
    return rc;
}

int cdc__dv_inline_parse(const char *s, size_t len, uint32_t size, uint64_t nrows, uint64_t **rows, size_t *n,
                         cdc_error_t *err)
{
    if (len != ((size_t)size + 3) / 4 * 5)
        return cdc__err(err, CDC_ECORRUPT, "inline deletion vector: %zu characters for %" PRIu32 " bytes", len, size);
    cdc__buf b = {0};
    int rc = cdc__dv_z85_decode(s, len, &b, err);
    if (!rc) rc = cdc__dv_parse(b.p, size, nrows, rows, n, err);
    cdc__buf_free(&b);
    return rc;
}

/* ---- Files ---- */

struct cdc__dv_file {
    int fd;
    int closed;     /* cdc__dv_file_close succeeded */
    char *path;     /* dir/name */
    char name[64];  /* deletion_vector_<uuid>.bin */
    char id[21];    /* the Z85 text of the UUID */
    uint64_t off;   /* bytes written */
    cdc__buf buf;
};

int cdc__dv_file_create(const char *dir, cdc__dv_file **out, cdc_error_t *err)
{
    unsigned char u[16];
    if (getrandom(u, sizeof u, 0) != sizeof u) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
        for (int i = 0; i < 16; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            u[i] = (unsigned char)(x >> 56);
        }
    }
    u[6] = (u[6] & 0x0f) | 0x40; /* version 4, variant 1: a random UUID */
    u[8] = (u[8] & 0x3f) | 0x80;
    cdc__dv_file *f = cdc__calloc(1, sizeof *f);
    f->fd = -1;
    char text[37];
    cdc__dv_uuid_text(u, text);
    snprintf(f->name, sizeof f->name, "deletion_vector_%s.bin", text);
    cdc__buf id = {0};
    cdc__dv_z85_encode(u, 16, &id);
    memcpy(f->id, id.p, 20);
    cdc__buf_free(&id);
    size_t plen = strlen(dir) + 1 + strlen(f->name) + 1;
    f->path = cdc__malloc(plen);
    snprintf(f->path, plen, "%s/%s", dir, f->name);
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        int rc = cdc__err(err, -errno, "%s: %s", f->path, strerror(errno));
        f->closed = 1; /* nothing of ours to remove */
        cdc__dv_file_free(f);
        return rc;
    }
    int rc = cdc__write_all(f->fd, "\1", 1, -1);
    if (rc) {
        rc = cdc__err(err, rc, "%s: %s", f->path, strerror(-rc));
        cdc__dv_file_free(f);
        return rc;
    }
    f->off = 1;
    *out = f;
    return 0;
}

int cdc__dv_file_add(cdc__dv_file *f, const uint64_t *rows, size_t n, cdc__dv_desc *d, cdc_error_t *err)
{
    if (f->fd < 0) return cdc__err(err, CDC_EINVAL, "%s: the file is closed or failed", f->path);
    cdc__buf_reset(&f->buf);
    put_u32be(&f->buf, 0);
    int rc = cdc__dv_serialize(rows, n, &f->buf, err);
    if (rc) return rc;
    size_t size = f->buf.len - 4;
    if (size > INT32_MAX) /* sizeInBytes is a Java int */
        return cdc__err(err, CDC_EINVAL, "%s: a vector of %zu bytes is past Delta's 2^31-1", f->path, size);
    uint32_t crc = cdc__dv_crc32(0, f->buf.p + 4, size);
    put_u32be(&f->buf, crc);
    unsigned char be[4] = {(unsigned char)(size >> 24), (unsigned char)(size >> 16), (unsigned char)(size >> 8),
                           (unsigned char)size};
    memcpy(f->buf.p, be, 4);
    if ((rc = cdc__write_all(f->fd, f->buf.p, f->buf.len, -1))) {
        close(f->fd);
        f->fd = -1;
        return cdc__err(err, rc, "%s: %s", f->path, strerror(-rc));
    }
    memset(d, 0, sizeof *d);
    memcpy(d->path, f->id, 21);
    d->offset = f->off;
    d->size = (uint32_t)size;
    d->cardinality = n;
    f->off += f->buf.len;
    return 0;
}

int cdc__dv_file_close(cdc__dv_file *f, cdc_error_t *err)
{
    if (f->fd < 0) return cdc__err(err, CDC_EINVAL, "%s: the file is closed or failed", f->path);
    int rc = fsync(f->fd) ? -errno : 0;
    if (close(f->fd) && !rc) rc = -errno;
    f->fd = -1;
    if (rc) return cdc__err(err, rc, "%s: fsync: %s", f->path, strerror(-rc));
    f->closed = 1;
    return 0;
}

const char *cdc__dv_file_name(const cdc__dv_file *f) { return f->name; }

void cdc__dv_file_free(cdc__dv_file *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    if (!f->closed) unlink(f->path);
    free(f->path);
    cdc__buf_free(&f->buf);
    free(f);
}

/* Reads n bytes at off; a short read is CDC_ECORRUPT.  0, -errno. */
static int read_at(int fd, const char *path, void *p, size_t n, uint64_t off, cdc_error_t *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)p + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return cdc__err(err, -errno, "%s: %s", path, strerror(errno));
        if (r == 0)
            return cdc__err(err, CDC_ECORRUPT, "%s: ends at byte %" PRIu64 ", before the vector at %" PRIu64 " does",
                            path, off + got, off);
        got += (size_t)r;
    }
    return 0;
}

int cdc__dv_read_file(const char *path, uint64_t offset, uint32_t size, uint64_t nrows, uint64_t **rows,
                      size_t *n, cdc_error_t *err)
{
    if (offset < 1) return cdc__err(err, CDC_ECORRUPT, "%s: vector offset 0 is the version byte", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cdc__err(err, -errno, "%s: %s", path, strerror(errno));
    int rc;
    unsigned char *b = NULL;
    struct stat st;
    if (fstat(fd, &st)) {
        rc = cdc__err(err, -errno, "%s: %s", path, strerror(errno));
        goto out;
    }
    /* the size comes from the log: check it against the file before allocating */
    if (offset > (uint64_t)st.st_size || (uint64_t)st.st_size - offset < (uint64_t)size + 8) {
        rc = cdc__err(err, CDC_ECORRUPT, "%s: %lld bytes cannot hold a vector of %" PRIu32 " bytes at %" PRIu64, path,
                      (long long)st.st_size, size, offset);
        goto out;
    }
    unsigned char version;
    if ((rc = read_at(fd, path, &version, 1, 0, err))) goto out;
    if (version != 1) {
        rc = cdc__err(err, CDC_ECORRUPT, "%s: format version %u, not 1", path, version);
        goto out;
    }
    b = cdc__malloc((size_t)size + 8);
    if ((rc = read_at(fd, path, b, (size_t)size + 8, offset, err))) goto out;
    uint32_t stored = get_u32be(b);
    if (stored != size) {
        rc = cdc__err(err, CDC_ECORRUPT, "%s: the vector at %" PRIu64 " has %" PRIu32 " bytes, its descriptor says %" PRIu32,
                      path, offset, stored, size);
        goto out;
    }
    uint32_t crc = cdc__dv_crc32(0, b + 4, size), want = get_u32be(b + 4 + size);
    if (crc != want) {
        rc = cdc__err(err, CDC_ECORRUPT, "%s: the vector at %" PRIu64 " fails its checksum (CRC-32 %08" PRIx32
                      ", stored %08" PRIx32 ")", path, offset, crc, want);
        goto out;
    }
    if ((rc = cdc__dv_parse(b + 4, size, nrows, rows, n, err))) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        if (err) cdc__err(err, rc, "%s at %" PRIu64 ": %s", path, offset, msg);
    }
out:
    free(b);
    close(fd);
    return rc;
}

int cdc__dv_read(const char *dir, const cdc__dv_desc *d, uint64_t nrows, uint64_t **rows, size_t *n,
                 cdc_error_t *err)
{
    cdc__buf p = {0};
    cdc__buf_printf(&p, "%s/", dir);
    int rc = cdc__dv_path(d->path, strlen(d->path), &p, err);
    uint64_t *r = NULL;
    size_t m = 0;
    if (!rc) rc = cdc__dv_read_file(p.p, d->offset, d->size, nrows, &r, &m, err);
    if (!rc && m != d->cardinality) {
        rc = cdc__err(err, CDC_ECORRUPT, "%s: the vector at %" PRIu64 " holds %zu rows, its descriptor says %" PRIu64,
                      p.p, d->offset, m, d->cardinality);
        free(r);
    }
    if (!rc) {
        *rows = r;
        *n = m;
    }
    cdc__buf_free(&p);
    return rc;
}
