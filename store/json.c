/*
 * json.c: JSON text in one place.  The library writes JSON (keys printed by
 * export, get and hash; NDJSON rows; the command's --json output through
 * cdc_json_write_string) and reads three small kinds of it without a parser
 * library: string literals (kcat -J lines), keys given as JSON (get, the
 * iterator's bounds, hash ranges) and the member names of a printed key.
 * Change events themselves are parsed by the decoder (ingest/decode.c), the
 * one file that links the JSON parser library; nothing here knows an
 * envelope.
 *
 * The key JSON read here is the text form of the key codec (store/codec.c):
 * an object naming the key columns, or an array of the values in key order;
 * each value an integer (exact from its digits, any int64) or a string.
 * A number written with a fraction or exponent that is integral (5.0, 1e3)
 * is taken as that integer while it is exact in a double (|v| <= 2^53).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define JSON_PAIRS 1
#endif

#include "internal.h"

/* ---- Writing ---- */

size_t cdc__utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (!len || c > 0xF4 || len > n) return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    if (len == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) return 0;
    if (len == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) return 0;
    return len;
}

int cdc__utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, l; i < n; i += l)
        if (!(l = u[i] < 0x80 ? 1 : cdc__utf8_len(u + i, n - i))) return 0;
    return 1;
}

static void put_u(cdc__buf *b, unsigned cp)
{
    static const char hex[] = "0123456789abcdef";
    char u[6] = {'\\', 'u', hex[cp >> 12 & 15], hex[cp >> 8 & 15], hex[cp >> 4 & 15], hex[cp & 15]};
    cdc__buf_put(b, u, sizeof u);
}

/* Control characters (C0, DEL, C1) are escaped, so that no terminal acts on
 * them; a byte that is not UTF-8 becomes U+FFFD, so that the output stays
 * valid JSON (text the decoder accepted is always valid UTF-8). */
void cdc__json_put_string(cdc__buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    cdc__buf_reserve(b, n + 2);
    cdc__buf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') continue;
        if (c >= 0x80) {
            size_t l = cdc__utf8_len(u + i, n - i);
            if (l && !(c == 0xC2 && u[i + 1] < 0xA0)) { /* printable beyond ASCII */
                i += l - 1;
                continue;
            }
            cdc__buf_put(b, s + run, i - run);
            if (l) put_u(b, u[i + 1]); /* C1: U+0080..U+009F */
            else put_u(b, 0xFFFD);
            i += l ? l - 1 : 0;
            run = i + 1;
            continue;
        }
        cdc__buf_put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': cdc__buf_puts(b, "\\\""); break;
        case '\\': cdc__buf_puts(b, "\\\\"); break;
        case '\n': cdc__buf_puts(b, "\\n"); break;
        case '\r': cdc__buf_puts(b, "\\r"); break;
        case '\t': cdc__buf_puts(b, "\\t"); break;
        default: put_u(b, c);
        }
    }
    cdc__buf_put(b, s + run, n - run);
    cdc__buf_putc(b, '"');
}

int cdc_json_write_string(FILE *f, const char *s, size_t n)
{
    cdc__buf b = {0};
    cdc__json_put_string(&b, s ? s : "", s ? n : 0);
    int rc = fwrite(b.p, 1, b.len, f) == b.len ? 0 : -errno;
    cdc__buf_free(&b);
    return rc;
}

void cdc__utf8_put(cdc__buf *b, unsigned cp)
{
    if (cp < 0x80) cdc__buf_putc(b, (char)cp);
    else if (cp < 0x800) {
        cdc__buf_putc(b, (char)(0xC0 | (cp >> 6)));
        cdc__buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        cdc__buf_putc(b, (char)(0xE0 | (cp >> 12)));
        cdc__buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        cdc__buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else {
        cdc__buf_putc(b, (char)(0xF0 | (cp >> 18)));
        cdc__buf_putc(b, (char)(0x80 | ((cp >> 12) & 0x3F)));
        cdc__buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        cdc__buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    }
}

/* ---- Reading ---- */

static int hex4(const char *p, const char *end, unsigned *v)
{
    if (end - p < 4) return -1;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        *v <<= 4;
        if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    return 0;
}

/* Copies the run of p that holds no quote and no backslash to *o; returns
 * where the run stops (at one of them, or at end).  Sixteen bytes at a time
 * where SSE2 is there (every x86-64): the bytes are stored before they are
 * tested, so the caller must have room for sixteen bytes past what a run
 * writes, which cdc__json_read_string's reservation gives (the output is
 * never longer than the input read, and a block is stored only while
 * sixteen bytes of input remain). */
static inline const char *copy_plain(const char *p, const char *end, char **op)
{
    char *o = *op;
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
        _mm_storeu_si128((__m128i *)(void *)o, v);
        if (m) {
            unsigned k = (unsigned)__builtin_ctz(m);
            *op = o + k;
            return p + k;
        }
        p += 16;
        o += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\') *o++ = *p++;
    *op = o;
    return p;
}

/* A Debezium envelope inside a kcat line's "payload" string escapes every
 * one of its quotes and little else: some sixty \" in a narrow row's 500
 * bytes, a run of eight bytes between two of them, so that copy_plain ended
 * a run at every one (cdc__json_read_string was 9% of the samples of
 * `cdcstore apply` on the bench's narrow stream).  copy_pairs takes sixteen
 * bytes at a time as long as each holds no escape but \" and no bare quote
 * (the literal's end): every backslash there stands right before a quote
 * and every quote right after a backslash, so the backslashes are exactly
 * the bytes to drop, and each half of the block is packed with one PEXT
 * (BMI2) under the mask of the bytes kept.  A pair cut by the block's end
 * takes the next byte (its quote) with it.  Anything else (\\, \n, \u,
 * the closing quote) ends the run where the block begins, for the general
 * loop; the same room rule as copy_plain's holds (the output never outgrows
 * the input read; a block is stored only while 32 bytes of input remain).
 * Used where the processor has BMI2 (cdc__json_pairs: -1 ask the
 * processor, 0 never, which tests set to compare the two). */
int cdc__json_pairs = -1;

#ifdef JSON_PAIRS
/* asked once, before any thread reads it */
__attribute__((constructor)) static void pairs_init(void)
{
    __builtin_cpu_init(); /* this may run before libgcc's own constructor that fills what the next line reads */
    if (cdc__json_pairs < 0) cdc__json_pairs = __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
}

__attribute__((target("bmi2,popcnt"))) static const char *copy_pairs(const char *p, const char *end, char **op)
{
    char *o = *op;
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    while (end - p >= 32) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + 1));
        unsigned bs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, bslash));
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote));
        unsigned qnext = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(w, quote));
        if ((bs & ~qnext) || (q & ~(bs << 1))) break;
        if (!bs) {
            _mm_storeu_si128((__m128i *)(void *)o, v);
            o += 16;
            p += 16;
            continue;
        }
        unsigned keep = ~bs & 0xFFFFu;
        uint64_t lo, hi;
        memcpy(&lo, p, 8);
        memcpy(&hi, p + 8, 8);
        lo = _pext_u64(lo, _pdep_u64(keep & 0xFFu, 0x0101010101010101ULL) * 0xFF);
        hi = _pext_u64(hi, _pdep_u64(keep >> 8, 0x0101010101010101ULL) * 0xFF);
        memcpy(o, &lo, 8);
        o += __builtin_popcount(keep & 0xFFu);
        memcpy(o, &hi, 8);
        o += __builtin_popcount(keep >> 8);
        if (bs & 0x8000u) {
            *o++ = '"';
            p += 17;
        } else {
            p += 16;
        }
    }
    *op = o;
    return p;
}
#endif

const char *cdc__json_read_string(const char *p, const char *end, cdc__buf *b)
{
    if (p >= end || *p != '"') return NULL;
    /* The unescaped text is never longer than the literal (an escape is at
     * least as long as what it stands for, \uXXXX's UTF-8 included), so
     * room for the rest of the input is made once and bytes are stored
     * directly: a Debezium envelope inside a Kafka record's JSON string
     * escapes every quote, and a call per run was most of this function's
     * cost. */
    cdc__buf_reserve(b, (size_t)(end - p));
    char *o = b->p + b->len;
#ifdef JSON_PAIRS
    int pairs = cdc__json_pairs > 0;
#endif
    for (p++; p < end; p++) {
#ifdef JSON_PAIRS
        if (pairs) p = copy_pairs(p, end, &o);
#endif
        p = copy_plain(p, end, &o);
        if (p >= end) break;
        if (*p == '"') {
            b->len = (size_t)(o - b->p);
            return p + 1;
        }
        if (++p >= end) break;
        switch (*p) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            b->len = (size_t)(o - b->p);
            if (hex4(p + 1, end, &cp)) return NULL;
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && end - p > 6 && p[1] == '\\' && p[2] == 'u' &&
                hex4(p + 3, end, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            b->len = (size_t)(o - b->p);
            cdc__utf8_put(b, cp); /* within the room made above */
            o = b->p + b->len;
            break;
        }
        default: b->len = (size_t)(o - b->p); return NULL;
        }
    }
    b->len = (size_t)(o - b->p);
    return NULL;
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Appends one key element at p (a string or an integer) to key; returns the
 * position after it, or NULL with the reason in *why. */
static const char *key_value(const char *p, const char *end, cdc__buf *key, cdc__buf *tmp,
                             const char **why)
{
    if (p < end && *p == '"') {
        cdc__buf_reset(tmp);
        const char *q = cdc__json_read_string(p, end, tmp);
        if (!q) *why = "malformed string";
        else cdc__key_add_text(key, tmp->p ? tmp->p : "", tmp->len);
        return q;
    }
    const char *q = p;
    if (q < end && *q == '-') q++;
    const char *digits = q;
    while (q < end && *q >= '0' && *q <= '9') q++;
    if (q == digits) {
        *why = "unsupported key type (a key column must be an integer or a string)";
        return NULL;
    }
    int plain = !(q < end && (*q == '.' || *q == 'e' || *q == 'E'));
    while (q < end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' ||
                       *q == '-'))
        q++;
    char num[64];
    if ((size_t)(q - p) >= sizeof num) {
        *why = "number too long for a key";
        return NULL;
    }
    memcpy(num, p, (size_t)(q - p));
    num[q - p] = 0;
    char *e;
    errno = 0;
    if (plain) {
        long long v = strtoll(num, &e, 10);
        if (*e || errno) {
            *why = "integer value out of the range of a bigint";
            return NULL;
        }
        cdc__key_add_int(key, (int64_t)v);
        return q;
    }
    double d = strtod(num, &e);
    if (*e || !isfinite(d) || d != floor(d)) {
        *why = "unsupported key type (a key column must be an integer or a string)";
        return NULL;
    }
    if (fabs(d) > 9007199254740992.0) {
        *why = "integer value exceeds 2^53 and cannot be decoded exactly";
        return NULL;
    }
    cdc__key_add_int(key, (int64_t)d);
    return q;
}

/* One member of a key object: its name and where its value starts. */
typedef struct member {
    char *name;
    const char *value;
} member;

/* Reads the members of the object at p into *ms; the value of each is only
 * located (skipped over as a key value).  0 ok, -1 malformed. */
static int read_members(const char *p, const char *end, member **ms, size_t *n)
{
    cdc__buf name = {0}, scratch = {0}, tmp = {0};
    const char *why;
    int rc = -1;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        rc = skip_ws(p + 1, end) == end ? 0 : -1;
        goto done;
    }
    for (;;) {
        cdc__buf_reset(&name);
        if (!(p = cdc__json_read_string(skip_ws(p, end), end, &name))) goto done;
        p = skip_ws(p, end);
        if (p >= end || *p != ':') goto done;
        p = skip_ws(p + 1, end);
        *ms = cdc__realloc(*ms, (*n + 1) * sizeof **ms);
        (*ms)[*n].name = cdc__strndup(name.p ? name.p : "", name.len);
        (*ms)[*n].value = p;
        (*n)++;
        cdc__buf_reset(&scratch);
        const char *q = key_value(p, end, &scratch, &tmp, &why);
        /* a value that is no key value is reported when its column is read */
        if (!q) {
            q = p;
            while (q < end && *q != ',' && *q != '}') q++;
        }
        p = skip_ws(q, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}' && skip_ws(p + 1, end) == end) rc = 0;
        break;
    }
done:
    cdc__buf_free(&name);
    cdc__buf_free(&scratch);
    cdc__buf_free(&tmp);
    return rc;
}

static void members_free(member *ms, size_t n)
{
    for (size_t i = 0; i < n; i++) free(ms[i].name);
    free(ms);
}

static int key_from_array(const char *json, const char *p, const char *end, size_t nkey, int known,
                          cdc__buf *out, cdc__buf *tmp, cdc_error_t *err)
{
    const char *why = NULL;
    size_t i = 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') p = NULL;
    while (p) {
        if (!(p = key_value(p, end, out, tmp, &why)))
            return cdc__err(err, CDC_EINVAL, "key %.200s: value %zu: %s", json, i + 1, why);
        i++;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        if (p >= end || *p != ']' || skip_ws(p + 1, end) != end)
            return cdc__err(err, CDC_EINVAL, "key %.200s: malformed JSON array", json);
        break;
    }
    if (i == 0 || (known && i != nkey))
        return cdc__err(err, CDC_EINVAL, "key %.200s: %zu values given, the key has %zu columns", json, i,
                        known ? nkey : (size_t)1);
    return 0;
}

static int key_from_object(const char *json, const char *p, const char *end,
                           const char *const *keycols, size_t nkey, cdc__buf *out, cdc__buf *tmp,
                           cdc_error_t *err)
{
    member *ms = NULL;
    size_t n = 0;
    int rc = 0;
    const char *why = NULL;
    if (!keycols)
        rc = cdc__err(err, CDC_EINVAL,
                      "key %.200s: the table's key columns are not known; give the key as an array", json);
    else if (read_members(p, end, &ms, &n))
        rc = cdc__err(err, CDC_EINVAL, "key %.200s: malformed JSON object", json);
    else if (n != nkey)
        rc = cdc__err(err, CDC_EINVAL, "key %.200s: the key has %zu columns", json, nkey);
    for (size_t i = 0; i < nkey && !rc; i++) {
        size_t m = 0;
        while (m < n && strcmp(ms[m].name, keycols[i])) m++;
        if (m == n)
            rc = cdc__err(err, CDC_EINVAL, "key %.200s: key column %s is missing", json, keycols[i]);
        else if (!key_value(ms[m].value, end, out, tmp, &why))
            rc = cdc__err(err, CDC_EINVAL, "key %.200s: column %s: %s", json, keycols[i], why);
    }
    members_free(ms, n);
    return rc;
}

int cdc__key_from_json(const char *json, const char *const *keycols, size_t nkey, cdc__buf *out,
                       cdc_error_t *err)
{
    if (!json || !out) return cdc__err(err, CDC_EINVAL, "no key given");
    const char *end = json + strlen(json);
    const char *p = skip_ws(json, end);
    size_t start = out->len;
    cdc__buf tmp = {0};
    int rc;
    if (p < end && *p == '[')
        rc = key_from_array(json, p, end, nkey, keycols != NULL, out, &tmp, err);
    else if (p < end && *p == '{')
        rc = key_from_object(json, p, end, keycols, nkey, out, &tmp, err);
    else
        rc = cdc__err(err, CDC_EINVAL, "key %.200s: not a JSON object or array", json);
    cdc__buf_free(&tmp);
    if (rc) out->len = start;
    return rc;
}

int cdc__json_object_keys(const char *json, char **names, size_t n)
{
    member *ms = NULL;
    size_t got = 0;
    const char *end = json + strlen(json), *p = skip_ws(json, end);
    int rc = p < end && *p == '{' ? read_members(p, end, &ms, &got) : -1;
    if (!rc && got < n) rc = -1;
    for (size_t i = 0; i < got; i++) {
        if (!rc && i < n) names[i] = ms[i].name;
        else free(ms[i].name);
    }
    free(ms);
    return rc;
}
