/*
 * codec.c: the byte formats of the replica, and the small helpers (buffers,
 * varints, errors) every other file uses.
 *
 * Key format.  A primary-key tuple is encoded element by element so that the
 * bytewise order of encoded keys (RocksDB's default comparator) is the
 * source's ORDER BY pk order:
 *   integer (smallint, int, bigint): 0x20, then 8 bytes big-endian of the
 *     value with the sign bit flipped (so negatives sort first);
 *   text (text, varchar, uuid, anything that arrives as a JSON string): 0x30,
 *     then the bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x00.
 * The terminator makes a shorter text sort before its extensions and keeps
 * composite keys unambiguous ("a","bc" differs from "ab","c").  Text compares
 * bytewise, i.e. like ORDER BY pk COLLATE "C"; a canonical UUID string (lower
 * case hex) sorts like PostgreSQL's uuid order.  Why tags and not a schema:
 * Debezium's JSON key carries no types, and the tag makes the encoding
 * self-describing, so a key can be printed back as JSON without metadata.
 *
 * Value format (versions 1, 2 and 3).  Decisions users live with, so written
 * down:
 *   byte 0   format version: 1, or 2 when the version carries a commit
 *            order, or 3 when the value also records the Kafka partition
 *            its newest event came from; a reader refuses other versions (a
 *            build older than format 2 or 3 refuses such a value rather
 *            than misorder or misread it);
 *   byte 1   flags: 1 deleted (a tombstone that keeps its version), 2 the row
 *            was last written by a snapshot read;
 *   varint   version.epoch, 1 byte version.kind, varint version.lsn (the
 *            ordering version, see store/apply.c);
 *   formats 2 and 3: varint version.commit, 1 byte (bit 0: version.read);
 *            values without a commit order or partition keep format 1 byte
 *            for byte, so replicas written before format 2 read and compare
 *            unchanged;
 *   format 3 only: varint partition: the Kafka partition of the newest
 *            event applied to the key.  Per-key order holds only within one
 *            partition (Debezium keys the record, the producer hashes the key
 *            to a partition), so a key's next event arriving on another
 *            partition means the topic was repartitioned or its partitioner
 *            changed: the apply counts and warns (store/apply.c).  One or
 *            two bytes per row; the stored value is already read for the
 *            version guard, so the check costs no read;
 *   varint   ts_ms (zigzag), the source's commit/snapshot time, for latency;
 *   row      varint n, then n times (varint column index into the table's
 *            column list kept in metadata, varint tag, bytes): tag 0 NULL,
 *            1 unavailable (an unchanged TOASTed value never seen), n + 2 n
 *            bytes of the value in PostgreSQL's text form.
 * Columns are stored by index, not name, so that rows stay small; the list is
 * append-only, so a column added at the source gets a new index and old rows
 * read it as NULL.  Values are kept in PostgreSQL text form because that is
 * what COPY ... CSV and the reconciliation hashes need, without conversion.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- Errors ---- */

int cdc__err(cdc_error_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

const char *cdc_strerror(int code)
{
    switch (code) {
    case CDC_OK: return "success";
    case CDC_EINVAL: return "invalid argument";
    case CDC_EIO: return "input/output error";
    case CDC_ECORRUPT: return "stored data is corrupt";
    case CDC_ENOTFOUND: return "not found";
    case CDC_EDECODE: return "malformed input record";
    case CDC_ENOMEM: return "out of memory";
    case CDC_ELOCKED: return "replica directory in use";
    case CDC_ESTOPPED: return "stopped on a bad record";
    case CDC_EKAFKA: return "Kafka error";
    case CDC_ESOURCE: return "source database error";
    case CDC_ECONNECT: return "Kafka Connect error";
    default:
        if (code < 0 && code > -4096) return strerror(-code);
        return "unknown error";
    }
}

/* ---- Buffers ---- */

void cdc__buf_grow(cdc__buf *b, size_t extra)
{
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra) cap *= 2;
    b->p = cdc__realloc(b->p, cap);
    b->cap = cap;
}

void cdc__buf_put_i64(cdc__buf *b, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    cdc__buf_reserve(b, (size_t)n + 1);
    if (v < 0) b->p[b->len++] = '-';
    while (n) b->p[b->len++] = tmp[--n];
}

void cdc__buf_puts(cdc__buf *b, const char *s) { cdc__buf_put(b, s, strlen(s)); }

/* Formats into the buffer's free room, growing it once when the text does
 * not fit (never a NULL destination: the sanitizers' builds warn on it). */
void cdc__buf_vprintf(cdc__buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    cdc__buf_reserve(b, 64);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    if (n >= 0 && (size_t)n >= b->cap - b->len) {
        cdc__buf_reserve(b, (size_t)n + 1);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
    }
    va_end(again);
    if (n > 0) b->len += (size_t)n;
}

void cdc__buf_printf(cdc__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cdc__buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void cdc__buf_put_varint(cdc__buf *b, uint64_t v)
{
    cdc__buf_reserve(b, 10);
    while (v >= 0x80) {
        b->p[b->len++] = (char)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (char)v;
}

void cdc__buf_put_u64be(cdc__buf *b, uint64_t v)
{
    cdc__buf_reserve(b, 8);
    for (int i = 7; i >= 0; i--) b->p[b->len++] = (char)(v >> (i * 8));
}

void cdc__buf_free(cdc__buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int cdc__get_varint_long(const char **p, const char *end, uint64_t *v)
{
    uint64_t r = 0;
    int shift = 0;
    const unsigned char *q = (const unsigned char *)*p;
    while ((const char *)q < end && shift < 64) {
        unsigned char c = *q++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            *p = (const char *)q;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* ---- Keys ---- */

void cdc__key_add_int(cdc__buf *b, int64_t v)
{
    cdc__buf_putc(b, (char)CDC__KEY_INT);
    cdc__buf_put_u64be(b, (uint64_t)v ^ 0x8000000000000000ULL);
}

void cdc__key_add_text(cdc__buf *b, const char *s, size_t n)
{
    cdc__buf_reserve(b, n + 3);
    cdc__buf_putc(b, (char)CDC__KEY_TEXT);
    for (size_t i = 0; i < n; i++) {
        cdc__buf_putc(b, s[i]);
        if (s[i] == 0) cdc__buf_putc(b, (char)0xFF);
    }
    cdc__buf_putc(b, 0);
    cdc__buf_putc(b, 0);
}

int cdc__key_read(const unsigned char **pp, const unsigned char *end, int64_t *v, cdc__buf *text)
{
    const unsigned char *p = *pp;
    if (p >= end) return -1;
    if (*p == CDC__KEY_INT) {
        if (end - p < 9) return -1;
        uint64_t u = 0;
        for (int k = 1; k <= 8; k++) u = (u << 8) | p[k];
        *v = (int64_t)(u ^ 0x8000000000000000ULL);
        *pp = p + 9;
        return CDC__KEY_INT;
    }
    if (*p != CDC__KEY_TEXT) return -1;
    cdc__buf_reset(text);
    for (p++;;) {
        if (p + 1 >= end) return -1;
        if (p[0] == 0 && p[1] == 0) break;
        if (p[0] == 0 && p[1] != 0xFF) return -1;
        cdc__buf_putc(text, (char)p[0]);
        p += p[0] == 0 ? 2 : 1;
    }
    *pp = p + 2;
    return CDC__KEY_TEXT;
}

int cdc__key_to_json(const char *key, size_t len, const char *const *names, size_t nnames,
                     cdc__buf *out)
{
    const unsigned char *p = (const unsigned char *)key, *end = p + len;
    cdc__buf text = {0};
    size_t i = 0;
    cdc__buf_putc(out, names ? '{' : '[');
    while (p < end) {
        if (i) cdc__buf_putc(out, ',');
        if (names) {
            if (i < nnames) cdc__json_put_string(out, names[i], strlen(names[i]));
            else cdc__buf_printf(out, "\"key%zu\"", i + 1);
            cdc__buf_putc(out, ':');
        }
        int64_t v;
        int tag = cdc__key_read(&p, end, &v, &text);
        if (tag == CDC__KEY_INT) cdc__buf_put_i64(out, v);
        else if (tag == CDC__KEY_TEXT) cdc__json_put_string(out, text.p ? text.p : "", text.len);
        else goto bad;
        i++;
    }
    cdc__buf_putc(out, names ? '}' : ']');
    cdc__buf_free(&text);
    return 0;
bad:
    cdc__buf_free(&text);
    return CDC_ECORRUPT;
}

/* ---- Event rows ---- */

void cdc__evrow_add(cdc__buf *b, const char *name, size_t name_len, int tag, const char *v,
                    size_t vlen)
{
    cdc__buf_put_varint(b, name_len);
    cdc__buf_put(b, name, name_len);
    if (tag == CDC__V_TEXT) {
        cdc__buf_put_varint(b, vlen + 2);
        cdc__buf_put(b, v, vlen);
    } else {
        cdc__buf_put_varint(b, (uint64_t)tag);
    }
}

int cdc__evrow_next(const char **p, const char *end, const char **name, size_t *name_len, int *tag,
                    const char **v, size_t *vlen)
{
    uint64_t nl, t;
    if (cdc__get_varint(p, end, &nl) || (uint64_t)(end - *p) < nl) return CDC_ECORRUPT;
    *name = *p;
    *name_len = (size_t)nl;
    *p += nl;
    if (cdc__get_varint(p, end, &t)) return CDC_ECORRUPT;
    *vlen = t >= CDC__V_TEXT ? (size_t)(t - CDC__V_TEXT) : 0;
    if ((size_t)(end - *p) < *vlen) return CDC_ECORRUPT;
    *tag = t >= CDC__V_TEXT ? CDC__V_TEXT : (int)t;
    *v = *p;
    *p += *vlen;
    return 0;
}

/* ---- Stored values ---- */

void cdc__value_encode(cdc__buf *out, int flags, const cdc__version *ver, int64_t ts_ms, int32_t partition,
                       const char *row, size_t row_len)
{
    int v3 = partition >= 0, v2 = v3 || ver->commit || ver->read;
    cdc__buf_reserve(out, 56 + row_len);
    cdc__buf_putc(out, v3 ? CDC__VALUE_FORMAT_3 : v2 ? CDC__VALUE_FORMAT_2 : CDC__VALUE_FORMAT);
    cdc__buf_putc(out, (char)flags);
    cdc__buf_put_varint(out, ver->epoch);
    cdc__buf_putc(out, (char)ver->kind);
    cdc__buf_put_varint(out, ver->lsn);
    if (v2) {
        cdc__buf_put_varint(out, ver->commit);
        cdc__buf_putc(out, (char)(ver->read ? 1 : 0));
    }
    if (v3) cdc__buf_put_varint(out, (uint64_t)partition);
    cdc__buf_put_varint(out, ((uint64_t)ts_ms << 1) ^ (uint64_t)(ts_ms >> 63));
    cdc__buf_put(out, row, row_len);
}

int cdc__value_decode(const char *v, size_t len, cdc__value *out)
{
    const char *p = v, *end = v + len;
    uint64_t zz;
    if (len < 5) return CDC_ECORRUPT;
    int format = (unsigned char)p[0];
    if (format != CDC__VALUE_FORMAT && format != CDC__VALUE_FORMAT_2 && format != CDC__VALUE_FORMAT_3)
        return CDC_ECORRUPT;
    out->flags = (unsigned char)p[1];
    p += 2;
    if (cdc__get_varint(&p, end, &out->ver.epoch)) return CDC_ECORRUPT;
    if (p >= end) return CDC_ECORRUPT;
    out->ver.kind = (unsigned char)*p++;
    if (cdc__get_varint(&p, end, &out->ver.lsn)) return CDC_ECORRUPT;
    out->ver.commit = 0;
    out->ver.read = 0;
    out->partition = -1;
    if (format != CDC__VALUE_FORMAT) {
        if (cdc__get_varint(&p, end, &out->ver.commit) || p >= end) return CDC_ECORRUPT;
        out->ver.read = (unsigned char)*p++ & 1;
    }
    if (format == CDC__VALUE_FORMAT_3) {
        uint64_t part;
        if (cdc__get_varint(&p, end, &part) || part > INT32_MAX) return CDC_ECORRUPT;
        out->partition = (int32_t)part;
    }
    if (cdc__get_varint(&p, end, &zz)) return CDC_ECORRUPT;
    out->ts_ms = (int64_t)((zz >> 1) ^ (~(zz & 1) + 1));
    out->row = p;
    out->row_len = (size_t)(end - p);
    return 0;
}

/* PostgreSQL's float8 output: the shortest decimal that reads back to the
 * same double, in exponent form (1e+15, 1.5e-05) when the exponent is below
 * -4 or at least 15, else in positional form.  With float4 set, float4's
 * output: the shortest decimal that reads back to the same float (d rounded
 * to float first), in exponent form from an exponent of 6 (1e+06).  A
 * float4 needs it because Java's Float.toString (JDK 17) is not always the
 * shortest: Debezium sends 1e15::float4 as 9.9999999E14 and 1e-45 as
 * 1.4E-45, decimals that read back to the same float, not to the same
 * double. */
void cdc__put_real(cdc__buf *b, double d, int float4)
{
    char s[40], digits[24];
    if (isnan(d)) {
        cdc__buf_puts(b, "NaN");
        return;
    }
    if (isinf(d)) {
        cdc__buf_puts(b, d > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (d == 0) {
        cdc__buf_puts(b, signbit(d) ? "-0" : "0");
        return;
    }
    if (float4) {
        float f = (float)d;
        if (isinf(f)) { /* beyond float4: no such value came from PostgreSQL */
            float4 = 0;
        } else {
            for (int p = 1; p <= 9; p++) {
                snprintf(s, sizeof s, "%.*e", p - 1, (double)f);
                if (strtof(s, NULL) == f) break;
            }
        }
    }
    if (!float4) {
        for (int p = 1; p <= 17; p++) {
            snprintf(s, sizeof s, "%.*e", p - 1, d);
            if (strtod(s, NULL) == d) break;
        }
    }
    /* s: [-]d[.ddd]e(+|-)xx */
    const char *q = s;
    int neg = *q == '-', nd = 0;
    q += neg;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') digits[nd++] = *q;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int exp = atoi(q + 1);
    if (neg) cdc__buf_putc(b, '-');
    if (exp < -4 || exp >= (float4 ? 6 : 15)) {
        cdc__buf_putc(b, digits[0]);
        if (nd > 1) {
            cdc__buf_putc(b, '.');
            cdc__buf_put(b, digits + 1, (size_t)nd - 1);
        }
        cdc__buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        cdc__buf_puts(b, "0.");
        for (int i = -1; i > exp; i--) cdc__buf_putc(b, '0');
        cdc__buf_put(b, digits, (size_t)nd);
    } else {
        for (int i = 0; i <= exp; i++) cdc__buf_putc(b, i < nd ? digits[i] : '0');
        if (nd > exp + 1) {
            cdc__buf_putc(b, '.');
            cdc__buf_put(b, digits + exp + 1, (size_t)(nd - exp - 1));
        }
    }
}
