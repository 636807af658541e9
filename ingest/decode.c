/*
 * decode.c: turns one Kafka record holding a Debezium PostgreSQL change event
 * (JSON, from JsonConverter) into a cdc__event for the guarded apply
 * (ingest/batch.c decodes batches of them and hands them to the store).  It is
 * the only file that knows cJSON, so swapping the JSON parser touches nothing
 * else.  What Debezium really emits is summed up in the project's research
 * note (debezium-postgres.md); the decisions taken here, and why:
 *
 *  - Envelopes.  Both the bare envelope (converter schemas.enable=false) and
 *    {"schema":..., "payload":...} (schemas.enable=true) are read, for the
 *    value and for the key.  A record whose value is NULL, or the JSON
 *    literal null, or a wrapped null payload, is a Kafka tombstone: it carries
 *    no change and decodes to 1.
 *  - Ops.  The op letter stays here: the store is told what the event does
 *    (store/internal.h, CDC__ACT_*).  c, u and r are upserts (r a snapshot
 *    read), d a delete.  t (truncate) decodes to CDC__ACT_FLOOR with its
 *    table, LSN and snapshot marker but no key and no row: every row of the
 *    table below its version is deleted, which the store decides with the
 *    table and the position.  m (a logical decoding message) decodes to
 *    CDC__ACT_NOOP with no table: it changes no row, and the store only
 *    counts it; its LSN and ts_ms are filled when present and never
 *    required.  Any other op is an error, never skipped silently.
 *  - Positions.  source.lsn is required (except for incremental snapshot
 *    reads, which carry none) and must be an integral JSON number in
 *    0..2^64-1, read exactly from its digits past 2^53 ("Exact numbers"
 *    below).  source.sequence, a JSON string holding ["<commit>", "<lsn>"]
 *    (decimal strings or null), gives the commit order: its first element is
 *    the end of the commit record of the transaction delivered before this
 *    one (ev->commit, 0 when null or absent).  An incremental snapshot read
 *    has no lsn and must carry that first element: the read stands for the
 *    table as of that commit, so its lsn is taken to be the same position
 *    (the version rule in store/apply.c).  An "r" event is always a snapshot
 *    read, even when source.snapshot is missing or "false".
 *  - Key.  The Kafka key (a JSON object of the key columns in primary-key
 *    order) is the key; the row must agree with it on every key column it
 *    holds.  A Kafka record without a key is refused: Debezium sends none
 *    for a table without a primary key (or message.key.columns), and no
 *    column of such a row is known to tell it apart; the dead letter says
 *    how to give the table a key.  A record with a Kafka position (offset
 *    0 or more: consumed, or a kcat line) is a Kafka record.  Without one
 *    (bare envelopes read from files), the FIRST
 *    column of the row (after, or before for a delete) is taken as the
 *    primary key: Debezium writes columns in table order and most keys lead
 *    the table, but give the key to be exact.  Key values are integers (any
 *    int64, exact) or strings (text, uuid); nothing else.
 *  - Values are kept in PostgreSQL's text form, which is what COPY CSV and
 *    the reconciliation hashes compare: NULL as a NULL tag, the TOAST
 *    placeholder "__debezium_unavailable_value" (and its binary, text-array
 *    and int-array forms, see UnchangedToastedPlaceholder in Debezium) as an
 *    "unavailable" tag so the stored value is kept, booleans as t/f, integers
 *    as their exact decimal digits (past 2^53 from the JSON text), floats
 *    in PostgreSQL's float8 text (the shortest decimal that reads back to
 *    the same double, 1e+15 / 1.5e-05 in exponent form as PostgreSQL prints
 *    them, -0 too; a float32 of a schema in float4's text, see put_real),
 *    arrays in PostgreSQL's array text ({1,NULL,3}, {"a b",c}), other
 *    objects as compact JSON.  A delete's before image column that does not
 *    decode is kept as unavailable: a delete needs only its key.
 *  - Decimals.  Debezium's default "precise" NUMERIC is the base64 of the
 *    big-endian two's complement unscaled integer; the scale is in the
 *    schema (schemas.enable=true) or must be declared per column by the
 *    caller (the scale callback).  Such bytes are converted with arbitrary
 *    precision here.  A column with no schema and no declared scale is kept
 *    as the text it arrives as (decimal.handling.mode=string sends "40.00"):
 *    the decoder never guesses a scale, and a declared scale with a value
 *    that is not base64 is an error rather than a guess.  The variable-scale
 *    struct {"scale": n, "value": "<base64>"} carries its own scale.
 *  - Schemas.  With schemas.enable=true the field schemas of before/after
 *    give the types: values are checked against them ("wrong type"), Debezium
 *    dates, timestamps and times become PostgreSQL text, plain bytes (bytea)
 *    become \x hex; ZonedTimestamp and other strings stay as they are.
 *  - Errors.  Every problem returns CDC_EDECODE with one sentence naming the
 *    input (topic[partition]@offset, or source:line), the table, the key and
 *    the column where they are known.  No input crashes the decoder, and
 *    every path frees what it allocated.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "ingest.h"

#define TWO53 9007199254740992.0
#define PLACEHOLDER "__debezium_unavailable_value"
/* base64 of the placeholder's bytes: how Debezium fills a bytea column. */
#define PLACEHOLDER_B64 "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
/* UUID.nameUUIDFromBytes of the placeholder's bytes: a uuid[] column's. */
#define PLACEHOLDER_UUID "b68a35a7-17ad-35b3-af2a-ae46edb4545a"
/* An hstore column's with hstore.handling.mode=json: the map as JSON. */
#define PLACEHOLDER_HSTORE_JSON "{\"" PLACEHOLDER "\":\"" PLACEHOLDER "\"}"
/* Largest decimal accepted, in bytes of unscaled integer: PostgreSQL's
 * NUMERIC holds at most 147455 digits, about 61 KiB. */
#define MAX_DECIMAL_BYTES 65536
#define MAX_DECIMAL_SCALE 16383
/* PostgreSQL's MaxHeapAttributeNumber: no table has more columns. */
#define MAX_COLUMNS 1600

/* ---- Error context ---- */

/* What the decoder knows about the record so far, for error messages. */
/* The JSON documents of a record, for reading numbers from their text (see
 * "Exact numbers" below). */
typedef struct numdocs {
    cJSON *root, *kroot;          /* the value and the Kafka key, as parsed */
    int attached;                 /* number nodes point at their text */
} numdocs;

typedef struct dctx {
    const cdc_record_t *rec;
    numdocs *nd;
    cdc_error_t *err;
    const char *table;   /* borrowed; NULL until known */
    char *keytext;       /* malloc'd compact JSON of the key; NULL until known */
    const cJSON *keyobj; /* the Kafka key, printed into keytext only for an error */
    cdc__scale_fn scale;
    void *scale_opaque;
} dctx;

/* Fills the error with "<position>: table T: key K: column C: <message>"
 * (parts that are unknown are left out) and returns CDC_EDECODE. */
static int fail(const dctx *c, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *num_text(const dctx *c, const cJSON *v, size_t *len);

/* v as JSON text for a message, its numbers as the record wrote them (a key
 * of -9223372036854775809 is not shown as -9.2233720368547758e+18, which
 * reads as the smallest bigint). */
static void put_value(const dctx *c, cdc__buf *b, const cJSON *v)
{
    size_t n;
    const char *t;
    if (cJSON_IsNumber(v) && (t = num_text(c, v, &n))) {
        cdc__buf_put(b, t, n);
    } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        int obj = cJSON_IsObject(v);
        cdc__buf_putc(b, obj ? '{' : '[');
        for (const cJSON *k = v->child; k; k = k->next) {
            if (k != v->child) cdc__buf_putc(b, ',');
            if (obj) {
                cdc__json_put_string(b, k->string ? k->string : "", k->string ? strlen(k->string) : 0);
                cdc__buf_putc(b, ':');
            }
            put_value(c, b, k);
            if (b->len > 4096) break; /* a message shows 200 characters of it */
        }
        cdc__buf_putc(b, obj ? '}' : ']');
    } else {
        char *s = cJSON_PrintUnformatted(v);
        if (s) cdc__buf_puts(b, s);
        cJSON_free(s);
    }
}

static int fail(const dctx *c, const char *column, const char *fmt, ...)
{
    if (!c->err) return CDC_EDECODE;
    cdc__buf m = {0};
    const cdc_record_t *r = c->rec;
    if (r->offset >= 0) {
        cdc__buf_printf(&m, "%s[%d]@%lld", r->topic ? r->topic : "(no topic)", (int)r->partition,
                        (long long)r->offset);
    } else {
        cdc__buf_puts(&m, r->source ? r->source : "(input)");
        if (r->line > 0) cdc__buf_printf(&m, ":%lld", (long long)r->line);
    }
    if (c->table) cdc__buf_printf(&m, ": table %s", c->table);
    if (c->keytext) {
        cdc__buf_printf(&m, ": key %s", c->keytext);
    } else if (c->keyobj) {
        /* printed only now: formatting every key would cost each record */
        cdc__buf kt = {0};
        put_value(c, &kt, c->keyobj);
        if (kt.len > 200) {
            kt.len = 196;
            cdc__buf_puts(&kt, "...}");
        }
        cdc__buf_putc(&kt, 0);
        cdc__buf_printf(&m, ": key %s", kt.p);
        cdc__buf_free(&kt);
    }
    if (column) cdc__buf_printf(&m, ": column %s", column);
    cdc__buf_puts(&m, ": ");
    va_list ap;
    va_start(ap, fmt);
    cdc__buf_vprintf(&m, fmt, ap);
    va_end(ap);
    cdc__buf_putc(&m, 0);
    cdc__err(c->err, CDC_EDECODE, "%s", m.p);
    cdc__buf_free(&m);
    return CDC_EDECODE;
}

/* A short printable excerpt of a JSON value for messages, in out (size n). */
static const char *snippet(const cJSON *v, char *out, size_t n)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    if (!s) {
        snprintf(out, n, "%s", v ? "(value)" : "(nothing)");
        return out;
    }
    if (strlen(s) >= n && n > 4) {
        memcpy(out, s, n - 4);
        memcpy(out + n - 4, "...", 4);
    } else {
        snprintf(out, n, "%s", s);
    }
    cJSON_free(s);
    return out;
}

/* snippet, with a number as the record wrote it. */
static const char *value_snippet(const dctx *c, const cJSON *v, char *out, size_t n)
{
    size_t l;
    const char *t = cJSON_IsNumber(v) ? num_text(c, v, &l) : NULL;
    if (!t) return snippet(v, out, n);
    snprintf(out, n, "%.*s", (int)(l < n ? l : n - 1), t);
    return out;
}

static const char *json_kind(const cJSON *v)
{
    if (!v) return "missing";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "invalid";
}

/* ---- JSON helpers ---- */

/* ---- Record arena ----
 *
 * cJSON allocates every node and every string of a document with a malloc of
 * its own, and cJSON_Delete frees them one by one: 30 to 60 allocations per
 * record, which made malloc and free about a sixth of the decoding samples
 * (perf record of cdcstore apply --batch-size 10000 on the bench streams).
 * The documents of a record live only while cdc__decode_record runs: the
 * event it fills copies every name and value into its own buffers and
 * cdc__mallocs its table name, and nothing else keeps a pointer into a
 * document.  So while a record is decoded, the thread's cJSON allocations
 * are carved from a bump arena whose first block lies on
 * cdc__decode_record's stack (a record of the bench's widest rows, 30
 * columns, takes 5 KiB of it); a larger record adds heap blocks.  Freeing
 * into the arena does nothing, the documents are not walked by cJSON_Delete
 * (doc_release), and the arena's heap blocks are freed when the record is
 * done.  Memory the arena does not own (were cJSON's hooks ever changed by
 * someone else) is freed and deleted as before: arena_owns decides.
 *
 * cJSON's hooks take no context, so the arena is found through a
 * thread-local pointer: each decoding thread of a batch has its own, and
 * cJSON used outside a record (cdc__connect_read_*) or on any other thread
 * allocates from the heap as before.  Strings cJSON prints are therefore
 * released with cJSON_free, never with free.  Under AddressSanitizer the
 * first block is on the heap too, so that a pointer kept into a document
 * after its record would be reported as a use after free. */

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ON_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ON_HEAP 1
#endif
#endif
#ifndef ARENA_ON_HEAP
#define ARENA_ON_HEAP 0
#endif

#define ARENA_FIRST 16384  /* the first block, on the stack */
#define ARENA_BLOCK 65536  /* each further block, on the heap */
#define ARENA_ALIGN 16     /* as malloc's: cJSON stores doubles and pointers */

typedef struct arena_block {
    struct arena_block *next;
    size_t size; /* bytes of data after the header (which keeps them aligned) */
} arena_block;

typedef struct arena {
    char *cur, *end;
    const char *first, *first_end; /* the block on the stack, if any */
    arena_block *blocks;           /* heap blocks, freed by arena_done */
} arena;

static __thread arena *tl_arena;

/* A new heap block holding at least n bytes; a request of more than a
 * quarter block gets a block of its own, and the block being carved stays. */
static void *arena_grow(arena *a, size_t n)
{
    int own = n > ARENA_BLOCK / 4;
    size_t size = sizeof(arena_block) + (own ? n : ARENA_BLOCK);
    arena_block *b = cdc__malloc(size);
    b->next = a->blocks;
    b->size = size - sizeof(arena_block);
    a->blocks = b;
    char *p = (char *)(b + 1);
    if (!own) {
        a->cur = p + n;
        a->end = (char *)b + size;
    }
    return p;
}

static void *arena_alloc(arena *a, size_t n)
{
    if (n > SIZE_MAX / 2) return NULL; /* as malloc would fail: cJSON reports it */
    n = (n + (ARENA_ALIGN - 1)) & ~(size_t)(ARENA_ALIGN - 1);
    if ((size_t)(a->end - a->cur) < n) return arena_grow(a, n);
    void *p = a->cur;
    a->cur += n;
    return p;
}

/* Was p carved from the arena?  Compared as addresses: p may be anywhere. */
static int arena_owns(const arena *a, const void *p)
{
    uintptr_t q = (uintptr_t)p;
    if (q >= (uintptr_t)a->first && q < (uintptr_t)a->first_end) return 1;
    for (const arena_block *b = a->blocks; b; b = b->next)
        if (q >= (uintptr_t)(b + 1) && q < (uintptr_t)(b + 1) + b->size) return 1;
    return 0;
}

static void arena_done(arena *a)
{
    for (arena_block *b = a->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->blocks = NULL;
}

/* cJSON allocates through the library's wrappers (store/internal.h,
 * "Memory"), so that exhausted memory aborts with a message instead of
 * reading as malformed JSON and dead-lettering a good record; within a
 * record, from the thread's arena (above). */
static void *hook_malloc(size_t n)
{
    arena *a = tl_arena;
    return a ? arena_alloc(a, n) : cdc__malloc(n);
}

static void hook_free(void *p)
{
    arena *a = tl_arena;
    if (!a || !arena_owns(a, p)) free(p);
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void hooks_init(void)
{
    cJSON_Hooks h = {hook_malloc, hook_free};
    cJSON_InitHooks(&h);
}

/* Releases a parsed document: nothing to do for one in the record's arena,
 * which goes as a whole. */
static void doc_release(cJSON *j)
{
    arena *a = tl_arena;
    if (j && (!a || !arena_owns(a, j))) cJSON_Delete(j);
}

/* ---- The record parser ----
 *
 * A record's documents are parsed here, into cJSON nodes carved from the
 * record's arena, rather than by cJSON_Parse.  The decoder reads them
 * through cJSON's accessors as before; what differs is the cost.  cJSON
 * scans each string twice and allocates it, allocates a node per value
 * through its hooks, and converts every number with strtod (which takes the
 * locale's lock and multi-precision arithmetic): with the text check and the
 * allocations that was about a third of the decoding thread's samples
 * (perf record of cdcstore apply --batch-size 10000 on the narrow bench
 * stream).  This parser:
 *  - converts an integer of up to 18 digits by itself, and a number of up
 *    to 15 significant digits and a power of ten up to 22 by one IEEE
 *    multiplication or division, both exact (correctly rounded, as strtod);
 *    other numbers go to strtod;
 *  - points each number node at its text in the record (valuestring, with
 *    cJSON_IsReference, as "Exact numbers" below would attach it later), so
 *    that the exact digits of a bigint or decimal need no second pass;
 *  - copies a string without escapes with one memcpy.
 * It accepts what RFC 8259 accepts (cJSON also took a leading zero, a
 * trailing '.' and a bad \u escape, which Debezium never writes), with
 * cJSON's nesting limit and its whitespace (any byte up to a space); \u0000 is refused: PostgreSQL text cannot hold NUL, and
 * cJSON's reading of it cut the string there silently.  Documents outside a
 * record (Kafka Connect's answers) are parsed by cJSON. */

#define FJ_MAX_DEPTH 1000
#define FJ_MAX_DEPTH_TEXT "1,000"

typedef struct fjp {
    const char *p, *end, *err;
    int depth;
} fjp;

static cJSON *fj_node(int type)
{
    cJSON *n = arena_alloc(tl_arena, sizeof *n);
    memset(n, 0, sizeof *n);
    n->type = type;
    return n;
}

static void fj_ws(fjp *s)
{
    while (s->p < s->end && (unsigned char)*s->p <= ' ') s->p++; /* as cJSON: any control byte */
}

static int fj_hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* The string at s->p (its opening quote), unescaped into the arena.  Most
 * strings of an envelope are short (member names, op codes, table names):
 * their first FJ_SHORT bytes are looked at one by one for the closing quote
 * or a backslash, which costs less than the two memchr calls a longer one
 * takes (memchr in fj_string was 7.6% of the decoding thread's samples on
 * the narrow stream, perf record --call-graph dwarf). */
#define FJ_SHORT 24
static char *fj_string(fjp *s)
{
    const char *start = s->p + 1;
    const char *stop = s->end - start < FJ_SHORT ? s->end : start + FJ_SHORT;
    const char *q = start;
    while (q < stop && *q != '"' && *q != '\\') q++;
    const char *bs = NULL;
    if (q == stop) { /* longer */
        q = memchr(stop, '"', (size_t)(s->end - stop));
        if (!q) {
            s->err = s->end;
            return NULL;
        }
        bs = memchr(stop, '\\', (size_t)(q - stop));
    } else if (*q == '\\') {
        bs = q;
    }
    if (!bs) { /* the common case: no escape */
        size_t n = (size_t)(q - start);
        char *out = arena_alloc(tl_arena, n + 1);
        memcpy(out, start, n);
        out[n] = 0;
        s->p = q + 1;
        return out;
    }
    /* With escapes: the unescaped text is never longer than the escaped. */
    const char *p = start;
    for (;;) { /* the closing quote: the first one not escaped */
        if (p >= s->end) {
            s->err = s->end;
            return NULL;
        }
        if (*p == '"') break;
        p += *p == '\\' ? 2 : 1;
    }
    const char *close = p;
    char *out = arena_alloc(tl_arena, (size_t)(close - start) + 1), *o = out;
    for (p = start; p < close;) {
        const char *e = memchr(p, '\\', (size_t)(close - p));
        if (!e) e = close;
        memcpy(o, p, (size_t)(e - p));
        o += e - p;
        p = e;
        if (p == close) break;
        char ch = p[1];
        switch (ch) {
        case '"': case '\\': case '/': *o++ = ch; p += 2; continue;
        case 'b': *o++ = '\b'; p += 2; continue;
        case 'f': *o++ = '\f'; p += 2; continue;
        case 'n': *o++ = '\n'; p += 2; continue;
        case 'r': *o++ = '\r'; p += 2; continue;
        case 't': *o++ = '\t'; p += 2; continue;
        case 'u': break;
        default: s->err = p; return NULL;
        }
        unsigned cp;
        if (close - p < 6 || fj_hex4(p + 2, &cp) || cp == 0) {
            s->err = p;
            return NULL;
        }
        const char *at = p;
        p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) { /* a low surrogate first */
            s->err = at;
            return NULL;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a pair */
            unsigned lo;
            if (close - p < 6 || p[0] != '\\' || p[1] != 'u' || fj_hex4(p + 2, &lo) || lo < 0xDC00 ||
                lo > 0xDFFF) {
                s->err = at;
                return NULL;
            }
            p += 6;
            cp = 0x10000 + (((cp & 0x3FF) << 10) | (lo & 0x3FF));
        }
        if (cp < 0x80) {
            *o++ = (char)cp;
        } else if (cp < 0x800) {
            *o++ = (char)(0xC0 | (cp >> 6));
            *o++ = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            *o++ = (char)(0xE0 | (cp >> 12));
            *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *o++ = (char)(0x80 | (cp & 0x3F));
        } else {
            *o++ = (char)(0xF0 | (cp >> 18));
            *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
            *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *o++ = (char)(0x80 | (cp & 0x3F));
        }
    }
    *o = 0;
    s->p = close + 1;
    return out;
}

static const double fj_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static cJSON *fj_number(fjp *s)
{
    const char *t = s->p, *p = t, *end = s->end;
    int neg = 0;
    if (p < end && *p == '-') neg = 1, p++;
    if (p >= end || *p < '0' || *p > '9') {
        s->err = t;
        return NULL;
    }
    uint64_t m = 0;
    int digits = 0, scale = 0; /* significant digits kept in m; digits dropped or after the point */
    int exact = 1;             /* m holds every significant digit */
    if (*p == '0') {
        p++;
    } else {
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (digits < 19) m = m * 10 + (uint64_t)(*p - '0'), digits += m != 0;
            else exact = 0, scale++;
        }
    }
    int frac = 0, expo = 0;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') {
            s->err = p;
            return NULL;
        }
        frac = 1;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (digits < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                digits += m != 0;
                scale--;
            } else {
                exact = 0;
            }
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p == '-', p++;
        if (p >= end || *p < '0' || *p > '9') {
            s->err = p;
            return NULL;
        }
        frac = 1;
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            if (expo < 100000) expo = expo * 10 + (*p - '0');
        if (eneg) expo = -expo;
    }
    double d;
    int e10 = scale + expo;
    if (exact && !frac && m <= (uint64_t)INT64_MAX) {
        d = (double)m; /* correctly rounded, as strtod would */
    } else if (exact && m <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
        d = e10 >= 0 ? (double)m * fj_pow10[e10] : (double)m / fj_pow10[-e10];
    } else {
        size_t n = (size_t)(p - t);
        char buf[64], *b = n < sizeof buf ? buf : cdc__malloc(n + 1);
        memcpy(b, t, n);
        b[n] = 0;
        d = strtod(b, NULL);
        if (b != buf) free(b);
        neg = 0; /* the sign was in the text */
    }
    if (neg) d = -d;
    cJSON *v = fj_node(cJSON_Number | cJSON_IsReference);
    v->valuedouble = d;
    v->valueint = d >= INT32_MAX ? INT32_MAX : d <= (double)INT32_MIN ? INT32_MIN : (int)d;
    v->valuestring = (char *)t;
    s->p = p;
    return v;
}

static cJSON *fj_value(fjp *s);

/* The members of an object or the items of an array, at s->p (its opening
 * bracket). */
static cJSON *fj_container(fjp *s, int object)
{
    if (++s->depth > FJ_MAX_DEPTH) {
        s->err = s->p;
        return NULL;
    }
    char close = object ? '}' : ']';
    cJSON *c = fj_node(object ? cJSON_Object : cJSON_Array), *last = NULL;
    s->p++;
    fj_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return c;
    }
    for (;;) {
        char *name = NULL;
        if (object) {
            if (s->p >= s->end || *s->p != '"') {
                s->err = s->p;
                return NULL;
            }
            if (!(name = fj_string(s))) return NULL;
            fj_ws(s);
            if (s->p >= s->end || *s->p != ':') {
                s->err = s->p;
                return NULL;
            }
            s->p++;
            fj_ws(s);
        }
        cJSON *v = fj_value(s);
        if (!v) return NULL;
        v->string = name;
        if (last) {
            last->next = v;
            v->prev = last;
        } else {
            c->child = v;
        }
        last = v;
        fj_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            fj_ws(s);
            continue;
        }
        if (s->p < s->end && *s->p == close) break;
        s->err = s->p;
        return NULL;
    }
    c->child->prev = last; /* as cJSON links a list: the first item's prev is the last */
    s->p++;
    s->depth--;
    return c;
}

static cJSON *fj_value(fjp *s)
{
    if (s->p >= s->end) {
        s->err = s->end;
        return NULL;
    }
    size_t left = (size_t)(s->end - s->p);
    switch (*s->p) {
    case '{': return fj_container(s, 1);
    case '[': return fj_container(s, 0);
    case '"': {
        char *str = fj_string(s);
        if (!str) return NULL;
        cJSON *v = fj_node(cJSON_String);
        v->valuestring = str;
        return v;
    }
    case 'n':
        if (left >= 4 && !memcmp(s->p, "null", 4)) {
            s->p += 4;
            return fj_node(cJSON_NULL);
        }
        break;
    case 't':
        if (left >= 4 && !memcmp(s->p, "true", 4)) {
            s->p += 4;
            cJSON *v = fj_node(cJSON_True);
            v->valueint = 1;
            return v;
        }
        break;
    case 'f':
        if (left >= 5 && !memcmp(s->p, "false", 5)) {
            s->p += 5;
            return fj_node(cJSON_False);
        }
        break;
    default:
        if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) return fj_number(s);
        break;
    }
    s->err = s->p;
    return NULL;
}

/* Parses the value at the start of p[0..n), in the record's arena; NULL with
 * *errat at the problem.  *stop is where the value ends. */
static cJSON *fj_parse(const char *p, size_t n, const char **stop, const char **errat)
{
    fjp s = {p, p + n, NULL, 0};
    fj_ws(&s);
    cJSON *v = fj_value(&s);
    if (!v) {
        *errat = s.err ? s.err : s.p;
        return NULL;
    }
    *stop = s.p;
    return v;
}

/* Parses exactly n bytes of JSON text: trailing whitespace (and NUL bytes)
 * is allowed; anything else after the value, or a NUL byte within it, is
 * not.  NULL on failure, with the byte offset of the problem in *errpos. */
static cJSON *parse_json(const char *p, size_t n, size_t *errpos)
{
    /* cJSON takes a NUL byte for whitespace between tokens and for the end
     * of a string, which would silently cut a value short: refuse it. */
    size_t eff = n;
    while (eff > 0 && p[eff - 1] == '\0') eff--;
    const char *nul = memchr(p, 0, eff);
    if (nul) {
        *errpos = (size_t)(nul - p);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j;
    if (tl_arena) { /* a record's document ("The record parser") */
        const char *errat = NULL;
        j = fj_parse(p, eff, &end, &errat);
        if (!j) {
            *errpos = (size_t)(errat - p);
            return NULL;
        }
    } else {
        pthread_once(&hooks_once, hooks_init);
        j = cJSON_ParseWithLengthOpts(p, n, &end, 0);
        if (!j) {
            *errpos = end && end >= p && end <= p + n ? (size_t)(end - p) : 0;
            return NULL;
        }
    }
    const char *q = end ? end : p + n;
    for (; q < p + n; q++) {
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != '\0') {
            *errpos = (size_t)(q - p);
            doc_release(j);
            return NULL;
        }
    }
    return j;
}

static const cJSON *member(const cJSON *obj, const char *name)
{
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

/* The members of obj named names[0..n-1] (distinct names) into out[], each
 * as member() finds it (the first child of that name), NULL when absent or
 * when obj is not an object; returns one of the names obj holds twice, or
 * NULL.  One pass over the children for all of them:
 * the envelope and its source are read for eleven names, and a scan with
 * strcmp per name (cJSON_GetObjectItemCaseSensitive) was most of the
 * string comparisons of a decode (perf record of cdcstore apply). */
/* strcmp(a, b) == 0 without a call: member names are a few bytes long
 * (strcmp from members was 3.7% of the decoding thread's samples). */
static inline int streq_short(const char *a, const char *b)
{
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

static const char *members(const cJSON *obj, const char *const *names, const cJSON **out, int n)
{
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (!cJSON_IsObject(obj)) return NULL;
    for (const cJSON *e = obj->child; e; e = e->next) {
        const char *s = e->string;
        if (!s) break; /* as cJSON's lookup, which stops at a child without a name */
        for (int i = 0; i < n; i++) {
            if (s[0] == names[i][0] && streq_short(s, names[i])) {
                /* JSON leaves a repeated name to the reader: Jackson (Kafka
                 * Connect) takes the last, this the first; neither is
                 * guessed */
                if (out[i]) return names[i];
                out[i] = e;
                break;
            }
        }
    }
    return NULL;
}

static int is_absent(const cJSON *v) { return v == NULL || cJSON_IsNull(v); }

/* An object of exactly the two members "schema" and "payload": the
 * JsonConverter envelope of schemas.enable=true (a record value; one whose
 * schema is not an object is refused, naming the schema). */
static int is_wrapped(const cJSON *o)
{
    return cJSON_IsObject(o) && cJSON_GetArraySize(o) == 2 && member(o, "schema") &&
           member(o, "payload");
}

/* The same for a Kafka key, whose schema must also be an object or null: a
 * key of two columns named schema and payload is a key, its schema member
 * a column's value, never a Connect schema. */
static int is_wrapped_key(const cJSON *o)
{
    const cJSON *sc = member(o, "schema");
    return is_wrapped(o) && (cJSON_IsObject(sc) || cJSON_IsNull(sc));
}

/* A JSON number whose double is surely its exact integer value: |v| < 2^53
 * (2^53 itself may be 2^53 + 1 rounded). */
static int num_exact_int(const cJSON *v)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    return isfinite(d) && d == floor(d) && fabs(d) < TWO53;
}

static int num_integral(const cJSON *v)
{
    double d = v->valuedouble;
    return isfinite(d) && d == floor(d);
}

/* ---- Text PostgreSQL cannot hold ----
 *
 * PostgreSQL text is valid UTF-8 (in a UTF8 database) and never holds a NUL
 * character, so a record carrying either did not come from it: such a record
 * is a dead letter, never stored cut at the NUL or with its bytes as they
 * are.  Checked on the whole record text once (the common case is ASCII). */

/* A word with no byte >= 0x80 and no backslash: nothing to check in it. */
static int plain_word(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t bs = w ^ (0x5cULL * ones); /* a zero byte where w holds '\\' */
    return !((w | ((bs - ones) & ~bs)) & highs);
}

/* One pass over the record's text: the offset of the first byte that is
 * not valid UTF-8, or of an escape \u0000 (*nul set), or -1.  Words of
 * plain ASCII without a backslash are skipped eight bytes at a time. */
static long text_problem(const unsigned char *s, size_t n, int *nul)
{
    size_t i = 0;
    *nul = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (plain_word(w)) {
                i += 8;
                continue;
            }
        }
        unsigned char ch = s[i];
        if (ch == '\\') { /* an escape: \\ pairs, or \u0000 */
            if (i + 1 < n && s[i + 1] == 'u' && n - i >= 6 && !memcmp(s + i + 2, "0000", 4)) {
                *nul = 1;
                return (long)i;
            }
            i += 2;
            continue;
        }
        if (ch < 0x80) {
            i++;
            continue;
        }
        size_t len = cdc__utf8_len(s + i, n - i);
        if (!len) return (long)i;
        i += len;
    }
    return -1;
}

static int check_text(const dctx *c, const char *s, size_t n, const char *what)
{
    int nul;
    long bad = text_problem((const unsigned char *)s, n, &nul);
    if (bad >= 0 && nul)
        return fail(c, NULL, "the %s holds \\u0000: PostgreSQL text cannot hold a NUL character", what);
    if (bad >= 0)
        return fail(c, NULL, "the %s is not valid UTF-8 (byte %ld): PostgreSQL text cannot hold it", what, bad);
    return 0;
}

/* ---- Exact numbers ----
 *
 * cJSON keeps a number only as a double, which is exact for integers up to
 * 2^53 and says nothing of how the number was written.  Where that is not
 * enough (an integral value of 10^15 or more: a bigint past 2^53, an LSN,
 * or a float written 1.0E15 that PostgreSQL prints 1e+15), the number's own
 * text is read: the record's number tokens, in document order, are matched
 * to cJSON's number nodes in the same (depth-first) order, once per record
 * and only when such a number is met, so ordinary records pay nothing.
 * A matched node's valuestring points at its token in the record (marked
 * as a reference, so cJSON does not free it). */

static int num_char(char ch)
{
    return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E';
}

/* The next number token at or after *pp (skipping strings), or NULL. */
static const char *next_number(const char **pp, const char *end)
{
    const char *p = *pp;
    while (p < end) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\') p++;
            p++;
            continue;
        }
        if (*p == '-' || (*p >= '0' && *p <= '9')) {
            const char *s = p;
            while (p < end && num_char(*p)) p++;
            *pp = p;
            return s;
        }
        p++;
    }
    *pp = end;
    return NULL;
}

static void attach_numbers(cJSON *n, const char **pp, const char *end)
{
    for (; n; n = n->next) {
        if (cJSON_IsNumber(n)) {
            const char *t = next_number(pp, end);
            if (t) {
                n->valuestring = (char *)t;
                n->type |= cJSON_IsReference;
            }
        } else if (n->child) {
            attach_numbers(n->child, pp, end);
        }
    }
}

/* The text of number v as the record wrote it, its length in *len; NULL
 * when it cannot be told. */
static const char *num_text(const dctx *c, const cJSON *v, size_t *len)
{
    numdocs *nd = c->nd;
    if (!v->valuestring && nd && !nd->attached) {
        nd->attached = 1;
        const char *p = c->rec->value, *end;
        if (nd->root && p) {
            end = p + c->rec->value_len;
            attach_numbers(nd->root, &p, end);
        }
        p = c->rec->key;
        if (nd->kroot && p) {
            end = p + c->rec->key_len;
            attach_numbers(nd->kroot, &p, end);
        }
    }
    if (!v->valuestring) return NULL;
    const char *t = v->valuestring;
    size_t n = 0;
    while (num_char(t[n])) n++;
    *len = n;
    return t;
}

/* Integer syntax: -?digits, nothing else. */
static int int_syntax(const char *t, size_t n)
{
    size_t i = t[0] == '-';
    if (i >= n) return 0;
    for (; i < n; i++)
        if (t[i] < '0' || t[i] > '9') return 0;
    return 1;
}

/* The integer text t (int_syntax) as an int64, or -1 when out of range. */
static int int64_of(const char *t, size_t n, int64_t *out)
{
    char s[32];
    if (n >= sizeof s) return -1;
    memcpy(s, t, n);
    s[n] = 0;
    errno = 0;
    char *e;
    long long v = strtoll(s, &e, 10);
    if (errno || *e) return -1;
    *out = v;
    return 0;
}

/* The exact int64 value of an integral number: 0 ok, -1 when it is not
 * written as an integer or is beyond int64. */
static int exact_int64(const dctx *c, const cJSON *v, int64_t *out)
{
    if (num_exact_int(v)) {
        *out = (int64_t)v->valuedouble;
        return 0;
    }
    size_t n;
    const char *t = num_text(c, v, &n);
    if (!t || !int_syntax(t, n)) return -1;
    return int64_of(t, n, out);
}

/* ---- Number and text formatting ---- */

/* PostgreSQL's float8 output (store/codec.c). */
static void put_double(cdc__buf *b, double d) { cdc__put_real(b, d, 0); }

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

/* Standard base64 (padding optional) into out.  0 ok, -1 invalid. */
static int b64_decode(const char *s, size_t n, cdc__buf *out)
{
    size_t pad = 0;
    while (n > 0 && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n % 4 == 1) return -1;
    if (pad && (n + pad) % 4 != 0) return -1;
    uint32_t acc = 0;
    int bits = 0;
    cdc__buf_reserve(out, n / 4 * 3 + 3);
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0) return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            cdc__buf_putc(out, (char)((acc >> bits) & 0xFF));
        }
    }
    return 0;
}

/* The decimal text of the big-endian two's complement integer b (n bytes)
 * divided by 10^scale, as PostgreSQL prints NUMERIC: "5.00", "-0.50", "0".
 * 0 ok, -1 when b is empty or too large. */
static int decimal_text(const unsigned char *b, size_t n, long scale, cdc__buf *out)
{
    if (n == 0 || n > MAX_DECIMAL_BYTES) return -1;
    int neg = (b[0] & 0x80) != 0;
    unsigned char *mag = cdc__malloc(n);
    uint32_t *limb = cdc__malloc((n / 3 + 2) * sizeof *limb); /* base 10^9, little-endian */
    memcpy(mag, b, n);
    if (neg) { /* magnitude = two's complement negation */
        unsigned carry = 1;
        for (size_t i = n; i-- > 0;) {
            unsigned v = (unsigned)(unsigned char)~mag[i] + carry;
            mag[i] = (unsigned char)v;
            carry = v >> 8;
        }
    }
    size_t nl = 0;
    /* Fold the magnitude in 4-byte groups: limb * 2^32 + carry < 2^64. */
    size_t first = n % 4 ? n % 4 : 4;
    for (size_t i = 0; i < n;) {
        size_t g = i == 0 ? first : 4;
        uint64_t chunk = 0;
        for (size_t k = 0; k < g; k++) chunk = (chunk << 8) | mag[i + k];
        uint64_t mult = (uint64_t)1 << (8 * g);
        uint64_t carry = chunk;
        for (size_t k = 0; k < nl; k++) {
            uint64_t t = (uint64_t)limb[k] * mult + carry;
            limb[k] = (uint32_t)(t % 1000000000u);
            carry = t / 1000000000u;
        }
        while (carry) {
            limb[nl++] = (uint32_t)(carry % 1000000000u);
            carry /= 1000000000u;
        }
        i += g;
    }
    char *digits = cdc__malloc(nl * 9 + 16);
    size_t nd = 0;
    if (nl == 0) {
        digits[nd++] = '0';
    } else {
        nd += (size_t)sprintf(digits, "%u", (unsigned)limb[nl - 1]);
        for (size_t k = nl - 1; k-- > 0;) nd += (size_t)sprintf(digits + nd, "%09u", (unsigned)limb[k]);
    }
    int zero = nl == 0;
    if (neg && !zero) cdc__buf_putc(out, '-');
    if (scale <= 0) {
        cdc__buf_put(out, digits, nd);
        if (!zero)
            for (long k = 0; k < -scale; k++) cdc__buf_putc(out, '0');
    } else {
        size_t s = (size_t)scale;
        if (nd <= s) {
            cdc__buf_puts(out, "0.");
            for (size_t k = nd; k < s; k++) cdc__buf_putc(out, '0');
            cdc__buf_put(out, digits, nd);
        } else {
            cdc__buf_put(out, digits, nd - s);
            cdc__buf_putc(out, '.');
            cdc__buf_put(out, digits + nd - s, s);
        }
    }
    free(mag);
    free(limb);
    free(digits);
    return 0;
}

/* base64 text -> decimal text with scale.  0 ok, -1 not base64, -2 empty or
 * too large. */
static int b64_decimal(const char *s, long scale, cdc__buf *out)
{
    cdc__buf raw = {0};
    int rc = b64_decode(s, strlen(s), &raw);
    if (rc == 0 && decimal_text((const unsigned char *)raw.p, raw.len, scale, out)) rc = -2;
    cdc__buf_free(&raw);
    return rc;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

/* Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's
 * civil_from_days). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* "YYYY-MM-DD"; returns 1 when the year is before Christ (PostgreSQL then
 * prints the year 1 - y and appends " BC" after the whole value). */
static int put_date(cdc__buf *b, int64_t days)
{
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    int bc = y <= 0;
    cdc__buf_printf(b, "%04lld-%02u-%02u", (long long)(bc ? 1 - y : y), m, d);
    return bc;
}

/* "HH:MM:SS[.ffffff]" with the fraction's trailing zeros trimmed. */
static void put_time(cdc__buf *b, int64_t us)
{
    int64_t s = us / 1000000, f = us % 1000000;
    cdc__buf_printf(b, "%02lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
                    (long long)(s % 60));
    if (f) {
        char frac[8];
        snprintf(frac, sizeof frac, "%06lld", (long long)f);
        size_t k = 6;
        while (k > 0 && frac[k - 1] == '0') k--;
        cdc__buf_putc(b, '.');
        cdc__buf_put(b, frac, k);
    }
}

static void put_timestamp(cdc__buf *b, int64_t us)
{
    int64_t days = floor_div(us, 86400000000LL);
    int64_t tod = us % 86400000000LL; /* not us - days * ...: that overflows near INT64_MIN */
    if (tod < 0) tod += 86400000000LL;
    int bc = put_date(b, days);
    cdc__buf_putc(b, ' ');
    put_time(b, tod);
    if (bc) cdc__buf_puts(b, " BC");
}

/* PostgreSQL's timestamp 'infinity' and '-infinity'.  Debezium reads them
 * through the JDBC driver as its sentinels PGStatement.DATE_POSITIVE_INFINITY
 * and DATE_NEGATIVE_INFINITY and sends those numbers as microseconds
 * (PostgresValueConverter.POSITIVE_INFINITY_LOCAL_DATE_TIME; a millisecond
 * Timestamp carries a thousandth of them).  Taken as times they are ordinary
 * dates in the year 294247 and 290309 BC: the first is a valid PostgreSQL
 * timestamp, the second is not, and a typed export refused the whole table
 * for it.  The replica stores PostgreSQL's text for them, which COPY loads,
 * the hashes compare with the source's, and the Parquet writer turns into
 * the largest and smallest timestamp (query/parquet.c, parse_ts).  A
 * timestamp of exactly 294247-01-10 04:00:25.2 in the source reads as
 * infinity here, as it does in Debezium's own sinks. */
#define PG_TS_POS_INFINITY 9223372036825200000LL
#define PG_TS_NEG_INFINITY (-9223372036832400000LL)
static void put_timestamp_pg(cdc__buf *b, int64_t us)
{
    if (us == PG_TS_POS_INFINITY) cdc__buf_puts(b, "infinity");
    else if (us == PG_TS_NEG_INFINITY) cdc__buf_puts(b, "-infinity");
    else put_timestamp(b, us);
}

/* ---- Values ---- */

static const unsigned char placeholder_bytes[] = PLACEHOLDER;

/* Debezium's forms of the unchanged-TOAST placeholder (its
 * UnchangedToastedPlaceholder): the string, its bytes in base64 (bytea),
 * an hstore's map of it to itself (as an object, or as JSON text in
 * hstore.handling.mode=json), one-element arrays of the string (text[]),
 * of the base64 (bytea[]) or of the UUID named by its bytes (uuid[]), and
 * an array of its bytes as numbers (int and bigint arrays).  A form not
 * recognised is stored as data, over the value the source kept. */
static int is_placeholder(const cJSON *v);

/* JSON text of the hstore map {placeholder: placeholder}, however spaced. */
static int hstore_json_placeholder(const char *s)
{
    if (!strcmp(s, PLACEHOLDER_HSTORE_JSON)) return 1;
    if (strlen(s) > 2 * sizeof PLACEHOLDER + 16 || !strstr(s, PLACEHOLDER)) return 0;
    cJSON *j = cJSON_Parse(s);
    int r = j && cJSON_IsObject(j) && is_placeholder(j);
    cJSON_Delete(j);
    return r;
}

static int is_placeholder(const cJSON *v)
{
    if (cJSON_IsString(v)) { /* every text column: the first byte spares most calls */
        const char *s = v->valuestring;
        return (s[0] == PLACEHOLDER[0] && strcmp(s, PLACEHOLDER) == 0) ||
               (s[0] == PLACEHOLDER_B64[0] && strcmp(s, PLACEHOLDER_B64) == 0) ||
               (s[0] == '{' && hstore_json_placeholder(s));
    }
    if (cJSON_IsObject(v)) {
        const cJSON *e = v->child;
        return e && !e->next && e->string && strcmp(e->string, PLACEHOLDER) == 0 && cJSON_IsString(e) &&
               strcmp(e->valuestring, PLACEHOLDER) == 0;
    }
    if (!cJSON_IsArray(v)) return 0;
    int n = cJSON_GetArraySize(v);
    const cJSON *e = v->child;
    if (n == 1)
        return cJSON_IsString(e) && (strcmp(e->valuestring, PLACEHOLDER) == 0 ||
                                     strcmp(e->valuestring, PLACEHOLDER_B64) == 0 ||
                                     strcmp(e->valuestring, PLACEHOLDER_UUID) == 0);
    if (n != (int)sizeof placeholder_bytes - 1) return 0;
    for (int i = 0; e; e = e->next, i++)
        if (!cJSON_IsNumber(e) || e->valuedouble != (double)placeholder_bytes[i]) return 0;
    return 1;
}

/* Appends the text of an integral JSON number: from the double up to 2^53,
 * beyond it from the number's own digits (within int64 when bigint is set:
 * a column the schema says is int64). */
static int put_int(const dctx *c, const char *col, const cJSON *v, int bigint, cdc__buf *out)
{
    char sn[80];
    int64_t x;
    if (!exact_int64(c, v, &x)) {
        cdc__buf_put_i64(out, x);
        return 0;
    }
    size_t n;
    const char *t = num_text(c, v, &n);
    if (!t || !int_syntax(t, n))
        return fail(c, col, "wrong type: %s is not an integer", snippet(v, sn, sizeof sn));
    if (bigint) return fail(c, col, "wrong type: %.*s is out of range for int64", (int)n, t);
    cdc__buf_put(out, t, n); /* a NUMERIC integer beyond int64 */
    return 0;
}

/* An integral number without a schema: an integer when written as one,
 * else a float (1.0E15, 1e20) in PostgreSQL's float8 text.  A negative zero
 * can only be a float's (Debezium sends -0::float8 as -0.0): "-0", as
 * PostgreSQL prints it. */
static int put_integral(const dctx *c, const char *col, const cJSON *v, cdc__buf *out)
{
    if (v->valuedouble == 0 && signbit(v->valuedouble)) {
        put_double(out, v->valuedouble);
        return 0;
    }
    size_t n;
    const char *t = fabs(v->valuedouble) >= 1e15 ? num_text(c, v, &n) : NULL;
    if (t && !int_syntax(t, n)) {
        put_double(out, v->valuedouble);
        return 0;
    }
    return put_int(c, col, v, 0, out);
}

/* {"scale": n, "value": "<base64>"}: Debezium's VariableScaleDecimal. */
static int is_varscale(const cJSON *v)
{
    return cJSON_IsObject(v) && cJSON_GetArraySize(v) == 2 && cJSON_IsNumber(member(v, "scale")) &&
           cJSON_IsString(member(v, "value"));
}

static int put_varscale(const dctx *c, const char *col, const cJSON *v, cdc__buf *out)
{
    char sn[80];
    const cJSON *sc = member(v, "scale");
    if (!num_exact_int(sc) || fabs(sc->valuedouble) > MAX_DECIMAL_SCALE)
        return fail(c, col, "wrong type: variable-scale decimal with scale %s", snippet(sc, sn, sizeof sn));
    int rc = b64_decimal(member(v, "value")->valuestring, (long)sc->valuedouble, out);
    if (rc)
        return fail(c, col, "wrong type: variable-scale decimal %s is not %s", snippet(v, sn, sizeof sn),
                    rc == -1 ? "base64" : "a decimal of 1 to 65536 bytes");
    return 0;
}

/* A value without schema information. */
static int put_typed(const dctx *c, const char *col, const cJSON *v, const cJSON *fs, cdc__buf *out);

/* bytea sent as base64 (Debezium's binary.handling.mode=bytes), in
 * PostgreSQL's hex output: \x00ff10. */
static int put_bytea(const dctx *c, const char *col, const cJSON *v, cdc__buf *out)
{
    static const char hex[] = "0123456789abcdef";
    char sn[80];
    cdc__buf raw = {0};
    if (b64_decode(v->valuestring, strlen(v->valuestring), &raw)) {
        cdc__buf_free(&raw);
        return fail(c, col, "wrong type: bytes value %s is not base64", snippet(v, sn, sizeof sn));
    }
    cdc__buf_reserve(out, 2 + 2 * raw.len);
    cdc__buf_puts(out, "\\x");
    for (size_t i = 0; i < raw.len; i++) {
        cdc__buf_putc(out, hex[(unsigned char)raw.p[i] >> 4]);
        cdc__buf_putc(out, hex[(unsigned char)raw.p[i] & 15]);
    }
    cdc__buf_free(&raw);
    return 0;
}

/* An array element in PostgreSQL's array output: double-quoted (with " and
 * \ escaped) when empty, when it reads as NULL, or when it holds a brace, a
 * quote, a backslash, the delimiter or white space; as it is otherwise
 * (array_out in PostgreSQL's arrayfuncs.c). */
static void put_array_item(cdc__buf *out, const char *s, size_t n)
{
    int quote = n == 0 || (n == 4 && !strncasecmp(s, "NULL", 4));
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] && strchr("{}\",\\ \t\n\r\v\f", s[i]) != NULL;
    if (!quote) {
        cdc__buf_put(out, s, n);
        return;
    }
    cdc__buf_putc(out, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') cdc__buf_putc(out, '\\');
        cdc__buf_putc(out, s[i]);
    }
    cdc__buf_putc(out, '"');
}

/* A JSON array (Debezium's ARRAY, for int[], text[], ...) in PostgreSQL's
 * array text, {1,NULL,3} or {"a b",c}: null elements as NULL, nested arrays
 * as nested braces (more dimensions), every other element as its own text
 * form (numbers and booleans as put_untyped writes them, objects as compact
 * JSON), quoted where PostgreSQL quotes it.  Elements are written without
 * the column's declared type, which describes the column, not its items.
 * items: the schema of the items when it names a logical type (a date[] of
 * day numbers, a numeric(p,s)[] of base64 Decimals, a timestamp[] of
 * MicroTimestamps): then each element is written as put_typed writes a
 * value of that type (without it they were stored as Debezium's numbers and
 * base64, which COPY refuses or loads as other values); NULL otherwise. */
static int put_array(const dctx *c, const char *col, const cJSON *v, const cJSON *items, cdc__buf *out)
{
    char sn[80];
    const cJSON *e;
    cdc__buf item = {0};
    int rc = 0;
    cdc__buf_putc(out, '{');
    cJSON_ArrayForEach(e, v)
    {
        if (e != v->child) cdc__buf_putc(out, ',');
        if (cJSON_IsNull(e)) {
            cdc__buf_puts(out, "NULL");
            continue;
        }
        if (cJSON_IsArray(e)) {
            if ((rc = put_array(c, col, e, items, out))) break;
            continue;
        }
        item.len = 0;
        if (items) {
            if ((rc = put_typed(c, col, e, items, &item))) break;
        } else if (cJSON_IsString(e)) {
            cdc__buf_puts(&item, e->valuestring);
        } else if (cJSON_IsNumber(e)) {
            if (!isfinite(e->valuedouble)) {
                rc = fail(c, col, "array element %s out of range", snippet(e, sn, sizeof sn));
                break;
            }
            if (num_integral(e)) {
                if ((rc = put_integral(c, col, e, &item))) break;
            } else {
                put_double(&item, e->valuedouble);
            }
        } else if (cJSON_IsBool(e)) {
            cdc__buf_putc(&item, cJSON_IsTrue(e) ? 't' : 'f');
        } else if (is_varscale(e)) {
            if ((rc = put_varscale(c, col, e, &item))) break;
        } else {
            char *s = cJSON_PrintUnformatted(e);
            cdc__buf_puts(&item, s);
            cJSON_free(s);
        }
        put_array_item(out, item.p ? item.p : "", item.len);
    }
    cdc__buf_free(&item);
    if (rc) return rc;
    cdc__buf_putc(out, '}');
    return 0;
}

/* PostgreSQL's point as Debezium sends it (io.debezium.data.geometry.Point):
 * a struct {x, y, wkb, srid}.  Stored as the point's own text, "(x,y)" with
 * float8's output, which COPY reads back; the struct's JSON is not a point
 * to PostgreSQL.  Recognised by its members with or without a schema: no
 * other Debezium value is an object with exactly these. */
/* A coordinate: a number, or JsonConverter's "NaN", "Infinity", "-Infinity"
 * (which PostgreSQL prints as those words too). */
static int point_coord(const cJSON *e)
{
    return cJSON_IsNumber(e) || (cJSON_IsString(e) && (!strcmp(e->valuestring, "NaN") ||
                                                       !strcmp(e->valuestring, "Infinity") ||
                                                       !strcmp(e->valuestring, "-Infinity")));
}

static void put_coord(cdc__buf *out, const cJSON *e)
{
    if (cJSON_IsNumber(e)) put_double(out, e->valuedouble);
    else cdc__buf_puts(out, e->valuestring);
}

static int put_point(const cJSON *v, cdc__buf *out)
{
    const cJSON *x = NULL, *y = NULL, *wkb = NULL, *e;
    int n = 0;
    cJSON_ArrayForEach(e, v)
    {
        n++;
        if (!e->string) return 0;
        if (!strcmp(e->string, "x")) x = e;
        else if (!strcmp(e->string, "y")) y = e;
        else if (!strcmp(e->string, "wkb")) wkb = e;
        else if (strcmp(e->string, "srid")) return 0;
    }
    if (!point_coord(x) || !point_coord(y) || !wkb || n > 4 || (n == 4 && !member(v, "srid"))) return 0;
    cdc__buf_putc(out, '(');
    put_coord(out, x);
    cdc__buf_putc(out, ',');
    put_coord(out, y);
    cdc__buf_putc(out, ')');
    return 1;
}

static int put_untyped(const dctx *c, const char *col, const cJSON *v, cdc__buf *out)
{
    char sn[80];
    if (cJSON_IsString(v)) {
        int scale = c->scale && c->table ? c->scale(c->scale_opaque, c->table, col) : CDC__COL_NONE;
        if (scale == CDC__COL_BYTEA) return put_bytea(c, col, v, out);
        if (scale < 0) { /* no scale declared (a declared time type takes numbers only) */
            cdc__buf_puts(out, v->valuestring);
            return 0;
        }
        int rc = b64_decimal(v->valuestring, scale, out);
        if (rc == -1)
            return fail(c, col,
                        "wrong type: the column is declared NUMERIC with scale %d, so its value must be "
                        "Debezium's base64 decimal, but %s is not base64 (was the connector run with "
                        "decimal.handling.mode=string? then declare no scale)",
                        scale, snippet(v, sn, sizeof sn));
        if (rc)
            return fail(c, col, "wrong type: %s is not a decimal of 1 to 65536 bytes",
                        snippet(v, sn, sizeof sn));
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!isfinite(d)) return fail(c, col, "number out of range");
        /* A time type declared for the column (no schema names it). */
        int code = c->scale && c->table ? c->scale(c->scale_opaque, c->table, col) : CDC__COL_NONE;
        if (code == CDC__COL_TIMESTAMPTZ)
            return fail(c, col, "wrong type: the column is declared timestamptz (Debezium's ZonedTimestamp text), "
                                "the value is the number %s", snippet(v, sn, sizeof sn));
        if (code <= CDC__COL_MICROTIMESTAMP) {
            const char *name = code == CDC__COL_MICROTIMESTAMP ? "io.debezium.time.MicroTimestamp"
                               : code == CDC__COL_TIMESTAMP_MS ? "io.debezium.time.Timestamp"
                               : code == CDC__COL_DATE         ? "io.debezium.time.Date"
                               : code == CDC__COL_MICROTIME    ? "io.debezium.time.MicroTime"
                               : code == CDC__COL_TIME_MS      ? "io.debezium.time.Time"
                               : code == CDC__COL_INTERVAL     ? "io.debezium.time.MicroDuration"
                                                               : NULL;
            if (!name) return fail(c, col, "unknown declared column type %d", code);
            cJSON *fs = cJSON_CreateObject();
            cJSON_AddStringToObject(fs, "name", name);
            int rc = put_typed(c, col, v, fs, out);
            doc_release(fs);
            return rc;
        }
        if (num_integral(v)) return put_integral(c, col, v, out);
        put_double(out, d);
        return 0;
    }
    if (cJSON_IsBool(v)) {
        cdc__buf_putc(out, cJSON_IsTrue(v) ? 't' : 'f');
        return 0;
    }
    if (is_varscale(v)) return put_varscale(c, col, v, out);
    if (cJSON_IsArray(v)) return put_array(c, col, v, NULL, out);
    if (cJSON_IsObject(v)) {
        if (put_point(v, out)) return 0;
        char *s = cJSON_PrintUnformatted(v);
        cdc__buf_puts(out, s);
        cJSON_free(s);
        return 0;
    }
    return fail(c, col, "wrong type: unexpected JSON value %s", json_kind(v));
}

static int name_is(const char *name, const char *a, const char *b)
{
    return name && (strcmp(name, a) == 0 || (b && strcmp(name, b) == 0));
}

/* PostgreSQL's date 'infinity' and '-infinity' as Debezium sends them
 * (io.debezium.time.Date, days since 1970): 1, -1, or 0 for a real date.
 * Debezium has two encodings of each, both out of PostgreSQL's range of
 * dates (4713 BC to 5874897 AD, days -2440588 to 2145031948), so none is
 * a date that could be meant.  Measured with PostgreSQL 15 and Debezium
 * 3.6.1 (tests/stack), schemas on and off alike:
 *  - the snapshot (JDBC) reads the driver's sentinel milliseconds
 *    (PGStatement.DATE_POSITIVE_INFINITY, 9223372036825200000) into days
 *    and wraps them to 32 bits: infinity -622191234, -infinity -625821272;
 *    the JVM's time zone can move a day, so the days either side count too;
 *  - the stream (pgoutput) adds the 10,957 days from 1970 to 2000 to
 *    PostgreSQL's own DATEVAL_NOEND / DATEVAL_NOBEGIN (INT32_MAX /
 *    INT32_MIN), wrapping: infinity -2147472692, -infinity -2147472691.
 * Stored as they came, a date 'infinity' read as 1701533-04-05 BC, which
 * COPY refuses, and a date key of 'infinity' written by the snapshot and
 * then updated named two rows. */
static int date_infinity(int64_t days)
{
    if (days == -2147472692LL || (days >= -622191235LL && days <= -622191233LL)) return 1;
    if (days == -2147472691LL || (days >= -625821273LL && days <= -625821271LL)) return -1;
    return 0;
}

/* An interval as Debezium sends it by default (interval.handling.mode=numeric,
 * io.debezium.time.MicroDuration): microseconds, with a month counted as
 * 30.4375 days and a day as 24 hours, so the source's months and days are
 * no longer there to tell apart.  Stored as PostgreSQL prints an interval of
 * that many microseconds and nothing else, "[-]HH:MM:SS[.ffffff]" (hours
 * past 99 as they are): COPY reads it back to the same microseconds, and
 * its epoch equals the source's (extract(epoch) counts a month as 30.4375
 * days too); the bare number was read by COPY as seconds, or refused. */
static void put_interval(cdc__buf *out, int64_t us)
{
    uint64_t a = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
    uint64_t h = a / 3600000000ULL, r = a % 3600000000ULL;
    cdc__buf_printf(out, "%s%02llu:%02u:%02u", us < 0 ? "-" : "", (unsigned long long)h,
                    (unsigned)(r / 60000000), (unsigned)(r / 1000000 % 60));
    unsigned f = (unsigned)(r % 1000000);
    if (f) {
        char fr[8];
        snprintf(fr, sizeof fr, ".%06u", f);
        size_t n = strlen(fr);
        while (fr[n - 1] == '0') n--;
        cdc__buf_put(out, fr, n);
    }
}

/* The integer of a logical time type, checked. */
static int time_int(const dctx *c, const char *col, const cJSON *v, const char *what, int64_t *out)
{
    char sn[80];
    if (!cJSON_IsNumber(v) || !num_integral(v))
        return fail(c, col, "wrong type: the schema says %s, the value is %s %s", what, json_kind(v),
                    snippet(v, sn, sizeof sn));
    /* Past 2^53 from the number's digits: MicroTimestamps of years before
     * 1685 or after 2254 (0001-01-01 is -62135596800000000) are that large. */
    if (exact_int64(c, v, out))
        return fail(c, col, "wrong type: the schema says %s, %s is out of range for int64", what,
                    snippet(v, sn, sizeof sn));
    return 0;
}

/* A value whose field schema fs is known. */
static int put_typed(const dctx *c, const char *col, const cJSON *v, const cJSON *fs, cdc__buf *out)
{
    char sn[80];
    const cJSON *jt = member(fs, "type"), *jn = member(fs, "name");
    const char *type = cJSON_IsString(jt) ? jt->valuestring : NULL;
    const char *name = cJSON_IsString(jn) ? jn->valuestring : NULL;
    int64_t n;

    if (name_is(name, "org.apache.kafka.connect.data.Decimal", NULL)) {
        const cJSON *sc = member(member(fs, "parameters"), "scale");
        long scale;
        char *endp = NULL;
        if (cJSON_IsString(sc)) scale = strtol(sc->valuestring, &endp, 10);
        else if (num_exact_int(sc)) scale = (long)sc->valuedouble;
        else return fail(c, col, "the schema declares a Decimal without a scale");
        if ((endp && (*endp || endp == sc->valuestring)) || labs(scale) > MAX_DECIMAL_SCALE)
            return fail(c, col, "the schema declares a Decimal with scale %s", snippet(sc, sn, sizeof sn));
        if (!cJSON_IsString(v))
            return fail(c, col, "wrong type: the schema says Decimal (base64 bytes), the value is %s %s",
                        json_kind(v), snippet(v, sn, sizeof sn));
        int rc = b64_decimal(v->valuestring, scale, out);
        if (rc)
            return fail(c, col, "wrong type: Decimal %s is not %s", snippet(v, sn, sizeof sn),
                        rc == -1 ? "base64" : "a decimal of 1 to 65536 bytes");
        return 0;
    }
    if (name_is(name, "io.debezium.data.VariableScaleDecimal", NULL)) {
        if (!is_varscale(v))
            return fail(c, col, "wrong type: the schema says VariableScaleDecimal, the value is %s %s",
                        json_kind(v), snippet(v, sn, sizeof sn));
        return put_varscale(c, col, v, out);
    }
    if (name_is(name, "io.debezium.time.Date", "org.apache.kafka.connect.data.Date")) {
        if (time_int(c, col, v, "Date (days)", &n)) return CDC_EDECODE;
        if (date_infinity(n)) {
            cdc__buf_puts(out, date_infinity(n) > 0 ? "infinity" : "-infinity");
            return 0;
        }
        if (n < -(1LL << 40) || n > (1LL << 40)) /* PostgreSQL's dates end at about 2^31 days */
            return fail(c, col, "wrong type: Date %lld out of range", (long long)n);
        if (put_date(out, n)) cdc__buf_puts(out, " BC");
        return 0;
    }
    if (name_is(name, "io.debezium.time.MicroTimestamp", NULL)) {
        if (time_int(c, col, v, "MicroTimestamp", &n)) return CDC_EDECODE;
        put_timestamp_pg(out, n);
        return 0;
    }
    if (name_is(name, "io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp")) {
        if (time_int(c, col, v, "Timestamp (ms)", &n)) return CDC_EDECODE;
        if (n < INT64_MIN / 1000 || n > INT64_MAX / 1000)
            return fail(c, col, "wrong type: Timestamp %lld ms out of range", (long long)n);
        put_timestamp_pg(out, n * 1000);
        return 0;
    }
    if (name_is(name, "io.debezium.time.MicroTime", NULL)) {
        if (time_int(c, col, v, "MicroTime", &n)) return CDC_EDECODE;
        if (n < 0 || n > 86400000000LL)
            return fail(c, col, "wrong type: MicroTime %lld out of range", (long long)n);
        put_time(out, n);
        return 0;
    }
    if (name_is(name, "io.debezium.time.MicroDuration", NULL)) {
        if (time_int(c, col, v, "MicroDuration", &n)) return CDC_EDECODE;
        put_interval(out, n);
        return 0;
    }
    if (name_is(name, "io.debezium.time.Time", "org.apache.kafka.connect.data.Time")) {
        if (time_int(c, col, v, "Time (ms)", &n)) return CDC_EDECODE;
        if (n < 0 || n > 86400000LL)
            return fail(c, col, "wrong type: Time %lld out of range", (long long)n);
        put_time(out, n * 1000);
        return 0;
    }
    if (!type) return put_untyped(c, col, v, out);

    static const struct { const char *type; double lo, hi; } ints[] = {
        {"int8", -128.0, 127.0},
        {"int16", -32768.0, 32767.0},
        {"int32", -2147483648.0, 2147483647.0},
        {"int64", -TWO53, TWO53},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(type, ints[i].type)) continue;
        if (!cJSON_IsNumber(v) || !num_integral(v))
            return fail(c, col, "wrong type: the schema says %s, the value is %s %s", type, json_kind(v),
                        snippet(v, sn, sizeof sn));
        if (i == 3) return put_int(c, col, v, 1, out);
        if (v->valuedouble < ints[i].lo || v->valuedouble > ints[i].hi)
            return fail(c, col, "wrong type: %s is out of range for %s", snippet(v, sn, sizeof sn), type);
        return put_int(c, col, v, 0, out);
    }
    /* JsonConverter names them float32/float64; "float"/"double" are read alike */
    if (!strcmp(type, "float32") || !strcmp(type, "float64") || !strcmp(type, "float") ||
        !strcmp(type, "double")) {
        if (cJSON_IsString(v) && (!strcmp(v->valuestring, "NaN") || !strcmp(v->valuestring, "Infinity") ||
                                  !strcmp(v->valuestring, "-Infinity"))) {
            cdc__buf_puts(out, v->valuestring);
            return 0;
        }
        if (!cJSON_IsNumber(v))
            return fail(c, col, "wrong type: the schema says %s, the value is %s %s", type, json_kind(v),
                        snippet(v, sn, sizeof sn));
        cdc__put_real(out, v->valuedouble, !strcmp(type, "float32") || !strcmp(type, "float"));
        return 0;
    }
    if (!strcmp(type, "boolean")) {
        if (!cJSON_IsBool(v))
            return fail(c, col, "wrong type: the schema says boolean, the value is %s %s", json_kind(v),
                        snippet(v, sn, sizeof sn));
        cdc__buf_putc(out, cJSON_IsTrue(v) ? 't' : 'f');
        return 0;
    }
    if (!strcmp(type, "string")) {
        if (!cJSON_IsString(v))
            return fail(c, col, "wrong type: the schema says string, the value is %s %s", json_kind(v),
                        snippet(v, sn, sizeof sn));
        cdc__buf_puts(out, v->valuestring);
        return 0;
    }
    if (!strcmp(type, "bytes")) {
        if (!cJSON_IsString(v))
            return fail(c, col, "wrong type: the schema says bytes (base64), the value is %s %s",
                        json_kind(v), snippet(v, sn, sizeof sn));
        if (name) { /* a logical type this decoder does not know: keep the text */
            cdc__buf_puts(out, v->valuestring);
            return 0;
        }
        return put_bytea(c, col, v, out);
    }
    if (!strcmp(type, "struct") || !strcmp(type, "map")) {
        if (!cJSON_IsObject(v))
            return fail(c, col, "wrong type: the schema says %s, the value is %s %s", type, json_kind(v),
                        snippet(v, sn, sizeof sn));
        return put_untyped(c, col, v, out);
    }
    if (!strcmp(type, "array")) {
        if (!cJSON_IsArray(v))
            return fail(c, col, "wrong type: the schema says array, the value is %s %s", json_kind(v),
                        snippet(v, sn, sizeof sn));
        const cJSON *items = member(fs, "items");
        const cJSON *it = member(items, "type");
        /* items naming a logical type (a date[] of day numbers, a
         * numeric(p,s)[] of base64 Decimals), or bytes (a bytea[] of
         * base64, stored as {AAE=} where PostgreSQL prints {"\\x0001"}):
         * each element as a value of it */
        int typed = cJSON_IsString(member(items, "name")) || (cJSON_IsString(it) && !strcmp(it->valuestring, "bytes"));
        return put_array(c, col, v, typed ? items : NULL, out);
    }
    return put_untyped(c, col, v, out);
}

/* The field schema named col in fields (a schema "fields" array), trying
 * index i first since Debezium writes values in schema order. */
static const cJSON *field_schema(const cJSON *fields, const char *col, int i)
{
    if (!fields) return NULL;
    const cJSON *f = cJSON_GetArrayItem(fields, i);
    const cJSON *nm = member(f, "field");
    if (cJSON_IsString(nm) && strcmp(nm->valuestring, col) == 0) return f;
    cJSON_ArrayForEach(f, fields)
    {
        nm = member(f, "field");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, col) == 0) return f;
    }
    return NULL;
}

/* A field's type for the store's type-change check and the typed exports:
 * "decimal:S:P" for a NUMERIC of scale S and precision P ("decimal:S" when
 * the schema gives no precision), "decimal" for an unconstrained one, else the Connect
 * type, with "/name" for a logical type ("int32/io.debezium.time.Date"). */
static void type_descriptor(const cJSON *fs, cdc__buf *out)
{
    const cJSON *ty = member(fs, "type"), *nm = member(fs, "name");
    const char *name = cJSON_IsString(nm) ? nm->valuestring : NULL;
    if (name && !strcmp(name, "org.apache.kafka.connect.data.Decimal")) {
        const cJSON *sc = member(member(fs, "parameters"), "scale");
        const cJSON *pr = member(member(fs, "parameters"), "connect.decimal.precision");
        cdc__buf_printf(out, "decimal:%s", cJSON_IsString(sc) ? sc->valuestring : "?");
        if (cJSON_IsString(pr)) cdc__buf_printf(out, ":%s", pr->valuestring);
    } else if (name && !strcmp(name, "io.debezium.data.VariableScaleDecimal")) {
        cdc__buf_puts(out, "decimal");
    } else {
        cdc__buf_puts(out, cJSON_IsString(ty) ? ty->valuestring : "?");
        if (name) cdc__buf_printf(out, "/%s", name);
    }
}

/* With a schema, an upsert says each column's type and default: the store
 * fills rows written before a column appeared with its default (a column
 * whose schema gives none defaults to NULL), and stops a table whose column
 * changes type in a way that changes values (store/store.c). */
static int schema_columns(const dctx *c, cdc__event *ev, const cJSON *fields)
{
    const cJSON *f;
    int n = 0;
    cJSON_ArrayForEach(f, fields) n += cJSON_IsString(member(f, "field"));
    cdc__buf_put_varint(&ev->coltypes, (uint64_t)n);
    cdc__buf_put_varint(&ev->defaults, (uint64_t)n);
    cdc__buf t = {0};
    dctx quiet = *c; /* a default that does not decode is unknown, not the event's failure */
    quiet.err = NULL;
    cJSON_ArrayForEach(f, fields)
    {
        const cJSON *nm = member(f, "field");
        if (!cJSON_IsString(nm)) continue;
        const char *col = nm->valuestring;
        size_t cl = strlen(col);
        cdc__buf_reset(&t);
        type_descriptor(f, &t);
        cdc__evrow_add(&ev->coltypes, col, cl, CDC__V_TEXT, t.p, t.len);
        const cJSON *d = member(f, "default");
        if (is_absent(d)) {
            cdc__evrow_add(&ev->defaults, col, cl, CDC__V_NULL, NULL, 0);
            continue;
        }
        cdc__buf_reset(&t);
        if (put_typed(&quiet, col, d, f, &t)) cdc__evrow_add(&ev->defaults, col, cl, CDC__V_UNAVAILABLE, NULL, 0);
        else cdc__evrow_add(&ev->defaults, col, cl, CDC__V_TEXT, t.p ? t.p : "", t.len);
    }
    cdc__buf_free(&t);
    return 0;
}

/* The first column name that appears twice in the row, or NULL.  Up to 16
 * columns, pairs (most of them differ in the first byte); past that, a hash
 * set of the names: the sort it replaces, with a strcmp per comparison, was
 * a twelfth of the CPU applying rows of 30 columns. */
static const char *duplicate_column(const cJSON *obj, int n)
{
    if (n <= 16) {
        for (const cJSON *a = obj->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (a->string[0] == b->string[0] && !strcmp(a->string, b->string)) return b->string;
        return NULL;
    }
    size_t cap = 64;
    while (cap < 2 * (size_t)n) cap *= 2;
    const char *small[256], **set = cap <= 256 ? small : cdc__malloc(cap * sizeof *set);
    memset(set, 0, cap * sizeof *set);
    const char *dup = NULL;
    for (const cJSON *v = obj->child; v && !dup; v = v->next) {
        uint32_t h = 2166136261u; /* FNV-1a */
        for (const unsigned char *q = (const unsigned char *)v->string; *q; q++) h = (h ^ *q) * 16777619u;
        size_t i = h & (cap - 1);
        for (; set[i]; i = (i + 1) & (cap - 1))
            if (!strcmp(set[i], v->string)) {
                dup = v->string;
                break;
            }
        set[i] = v->string;
    }
    if (set != small) free(set);
    return dup;
}

/* Appends the event row of obj (an object, or absent/null: no columns) to
 * ev->row.  fields: the schema "fields" of the row struct, or NULL. */
static int decode_row(const dctx *c, cdc__event *ev, const cJSON *obj, const cJSON *fields)
{
    int n = cJSON_IsObject(obj) ? cJSON_GetArraySize(obj) : 0;
    if (n > MAX_COLUMNS)
        return fail(c, NULL, "the row has %d columns; a PostgreSQL table has at most %d", n, MAX_COLUMNS);
    const char *dup = n > 1 ? duplicate_column(obj, n) : NULL;
    if (dup) return fail(c, dup, "the column appears twice in the row");
    cdc__buf_put_varint(&ev->row, (uint64_t)n);
    if (!n) return 0;
    cdc__buf val = {0};
    int i = 0, rc = 0;
    const cJSON *v;
    /* A delete needs only its key: a column of its before image that does
     * not decode is kept as "unavailable" (the store keeps no such value),
     * never the reason a delete is lost and its row left in the replica. */
    int del = ev->action == CDC__ACT_DELETE;
    dctx quiet = *c;
    quiet.err = NULL;
    cJSON_ArrayForEach(v, obj)
    {
        const char *col = v->string;
        size_t cl = strlen(col);
        if (cJSON_IsNull(v)) {
            cdc__evrow_add(&ev->row, col, cl, CDC__V_NULL, NULL, 0);
        } else if (is_placeholder(v)) {
            cdc__evrow_add(&ev->row, col, cl, CDC__V_UNAVAILABLE, NULL, 0);
            ev->nunavailable++;
        } else {
            cdc__buf_reset(&val);
            const cJSON *fs = field_schema(fields, col, i);
            const dctx *dc = del ? &quiet : c;
            rc = fs ? put_typed(dc, col, v, fs, &val) : put_untyped(dc, col, v, &val);
            if (rc && del) {
                cdc__evrow_add(&ev->row, col, cl, CDC__V_UNAVAILABLE, NULL, 0);
                rc = 0;
                i++;
                continue;
            }
            if (rc) break;
            cdc__evrow_add(&ev->row, col, cl, CDC__V_TEXT, val.p ? val.p : "", val.len);
        }
        i++;
    }
    cdc__buf_free(&val);
    return rc;
}

/* ---- Keys ---- */

/* Appends one key element: an integer (any int64, exact from its digits
 * past 2^53) or a string; with named (the Kafka key names it) also a
 * decimal, a float or a boolean, as text.  0 ok; -1 with the reason in *why. */
static int key_element(const dctx *c, cdc__buf *key, const cJSON *v, int named, const char **why)
{
    if (cJSON_IsString(v)) {
        cdc__key_add_text(key, v->valuestring, strlen(v->valuestring));
        return 0;
    }
    if (cJSON_IsNumber(v) && num_integral(v)) {
        int64_t x;
        size_t n;
        const char *t;
        if (!exact_int64(c, v, &x)) {
            cdc__key_add_int(key, x);
            return 0;
        }
        /* Past 2^53 and written as a float (a float8 key of 1.5E16): the
         * float's text below, as every other float key; an integer literal
         * past a bigint has no PostgreSQL integer type. */
        if (!named || !(t = num_text(c, v, &n)) || int_syntax(t, n)) {
            *why = "integer key out of the range of a bigint";
            return -1;
        }
    }
    /* Other PostgreSQL key types, named by a Kafka key, as the text the
     * row's column gets: an unconstrained NUMERIC (VariableScaleDecimal in
     * the default decimal.handling.mode=precise), a float, a boolean (t/f).
     * Without a Kafka key (the row's first column taken as the key) only an
     * integer or a string is taken: anything else is more likely not the
     * primary key. */
    if (!named) {
        *why = "unsupported key type (without a Kafka key, the row's first column must be an integer or a "
               "string to be taken as the key)";
        return -1;
    }
    cdc__buf t = {0};
    if (is_varscale(v)) {
        const cJSON *sc = member(v, "scale");
        if (!num_exact_int(sc) || fabs(sc->valuedouble) > MAX_DECIMAL_SCALE ||
            b64_decimal(member(v, "value")->valuestring, (long)sc->valuedouble, &t)) {
            cdc__buf_free(&t);
            *why = "a variable-scale decimal key that does not decode";
            return -1;
        }
    } else if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        put_double(&t, v->valuedouble);
    } else if (cJSON_IsBool(v)) {
        cdc__buf_putc(&t, cJSON_IsTrue(v) ? 't' : 'f');
    } else {
        *why = "unsupported key type (a key column must be a number, a string, a decimal or a boolean)";
        return -1;
    }
    cdc__key_add_text(key, t.p ? t.p : "", t.len);
    cdc__buf_free(&t);
    return 0;
}

/* Do a key value and the row's value of that column agree?  Raw JSON is
 * compared, so a base64 NUMERIC key matches its undecoded row value. */
static int same_json(const dctx *c, const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) {
        if (a->valuedouble != b->valuedouble) return 0;
        if (num_exact_int(a)) return 1;
        size_t na, nb; /* past 2^53 two numbers may share a double: compare the digits */
        const char *ta = num_text(c, a, &na), *tb = num_text(c, b, &nb);
        return ta && tb && na == nb && !memcmp(ta, tb, na);
    }
    if (cJSON_IsString(a) && cJSON_IsString(b)) return strcmp(a->valuestring, b->valuestring) == 0;
    if ((cJSON_IsObject(a) && cJSON_IsObject(b)) || (cJSON_IsBool(a) && cJSON_IsBool(b)))
        return cJSON_Compare(a, b, 1); /* a variable-scale decimal; a boolean */
    return 0;
}

/* A key column holding date 'infinity' or '-infinity' (date_infinity), as
 * the one value each is keyed by whichever encoding Debezium sent:
 * PostgreSQL's own, INT32_MAX and INT32_MIN days, which sort after and
 * before every date.  The column is a date when the key's schema says so
 * (kfields: the key schema's fields, schemas.enable=true) or when it is
 * declared one (--column-type T.C=date).  1 with *out filled, else 0. */
static int key_date_infinity(const dctx *c, const cJSON *kfields, const cJSON *k, cJSON *out)
{
    if (!cJSON_IsNumber(k) || !num_exact_int(k) || !date_infinity((int64_t)k->valuedouble)) return 0;
    const cJSON *tn = member(field_schema(kfields, k->string, 0), "name");
    int date = cJSON_IsString(tn) &&
               name_is(tn->valuestring, "io.debezium.time.Date", "org.apache.kafka.connect.data.Date");
    if (!date && c->scale && c->table) date = c->scale(c->scale_opaque, c->table, k->string) == CDC__COL_DATE;
    if (!date) return 0;
    memset(out, 0, sizeof *out);
    out->type = cJSON_Number;
    out->valuedouble = date_infinity((int64_t)k->valuedouble) > 0 ? 2147483647.0 : -2147483648.0;
    out->string = k->string;
    return 1;
}

/* A NUMERIC key column in Debezium's default decimal.handling.mode=precise:
 * base64 of the unscaled integer, its scale in the key's schema (a Decimal
 * field, schemas.enable=true) or declared (--decimal T.C=S).  Keyed by the
 * decimal's text, the text the row's column gets ("12.30"), so that the
 * key reads as the source's value (get, reconcile's key ranges, the export's
 * key order follow it); keyed by the base64 text, a table with such a key
 * reconciled with ranges as every row missing and extra.  1 with *out
 * filled, 0 when the column is not such a key, -1 (*why set) when its value
 * does not decode. */
static int key_decimal(const dctx *c, const cJSON *kfields, const cJSON *k, cdc__buf *out, const char **why)
{
    if (!cJSON_IsString(k)) return 0;
    long scale = -1;
    const cJSON *f = field_schema(kfields, k->string, 0);
    if (f) {
        const cJSON *tn = member(f, "name");
        if (!cJSON_IsString(tn) || strcmp(tn->valuestring, "org.apache.kafka.connect.data.Decimal")) return 0;
        const cJSON *sc = member(member(f, "parameters"), "scale");
        char *endp = NULL;
        if (cJSON_IsString(sc)) scale = strtol(sc->valuestring, &endp, 10);
        else if (num_exact_int(sc)) scale = (long)sc->valuedouble;
        if (scale < 0 || (endp && (*endp || endp == sc->valuestring)) || scale > MAX_DECIMAL_SCALE) {
            *why = "the key's schema declares a Decimal without a valid scale";
            return -1;
        }
    }
    if (scale < 0 && c->scale && c->table) {
        int d = c->scale(c->scale_opaque, c->table, k->string);
        if (d >= 0) scale = d;
    }
    if (scale < 0) return 0;
    int rc = b64_decimal(k->valuestring, scale, out);
    if (rc == -1) {
        *why = "the key column is NUMERIC with a scale, so its value must be Debezium's base64 decimal (was the "
               "connector run with decimal.handling.mode=string? then declare no scale)";
        return -1;
    }
    if (rc) {
        *why = "a decimal key of 1 to 65536 bytes was expected";
        return -1;
    }
    return 1;
}

/* Fills ev->key and ev->keycols from the Kafka key object kobj, or, without
 * one, from the first column of row; checks the row against the key.
 * kfields: the key schema's fields (without a Kafka key, the row's), or
 * NULL. */
static inline __attribute__((always_inline)) int decode_key(dctx *c, cdc__event *ev, const cJSON *kobj,
                                                            const cJSON *kfields, const cJSON *row,
                                                            int row_complete)
{
    char sn[80];
    const char *why = NULL;
    const cJSON *k;
    if (kobj) {
        c->keyobj = kobj;
        int n = cJSON_GetArraySize(kobj);
        if (n == 0) return fail(c, NULL, "the Kafka key has no columns");
        const char *dup = n > 1 ? duplicate_column(kobj, n) : NULL;
        if (dup) return fail(c, dup, "the Kafka key names the column twice");
        cdc__buf_put_varint(&ev->keycols, (uint64_t)n);
        cdc__buf dec = {0};
        cJSON_ArrayForEach(k, kobj)
        {
            cJSON canon;
            dec.len = 0;
            int d = key_decimal(c, kfields, k, &dec, &why);
            if (d > 0) {
                cdc__key_add_text(&ev->key, dec.p, dec.len);
            } else if (d < 0 ||
                       key_element(c, &ev->key, key_date_infinity(c, kfields, k, &canon) ? &canon : k, 1, &why)) {
                cdc__buf_free(&dec);
                return fail(c, k->string, "%s: %s", why, value_snippet(c, k, sn, sizeof sn));
            }
            cdc__buf_put_varint(&ev->keycols, strlen(k->string));
            cdc__buf_puts(&ev->keycols, k->string);
        }
        cdc__buf_free(&dec);
        if (!cJSON_IsObject(row)) return 0;
        cJSON_ArrayForEach(k, kobj)
        {
            const cJSON *rv = member(row, k->string);
            if (!rv) {
                if (row_complete)
                    return fail(c, k->string, "key does not match the row: the key column is not in the row");
                continue;
            }
            if (!same_json(c, k, rv)) {
                char rs[80];
                return fail(c, k->string, "key does not match the row: the key holds %s, the row %s",
                            snippet(k, sn, sizeof sn), snippet(rv, rs, sizeof rs));
            }
        }
        return 0;
    }
    /* A Kafka record without a key is a row of a table without one: Debezium
     * keys every change of a table with a primary key or message.key.columns.
     * Taking a column as the key would merge the source's rows that share its
     * value, so the record is refused with the fix (see the top). */
    if (c->rec->offset >= 0)
        return fail(c, NULL,
                    "the Kafka record has no key: the table has no primary key for Debezium, and its "
                    "rows cannot be told apart; give the table a primary key (or a unique index as "
                    "REPLICA IDENTITY), or set the connector's message.key.columns (e.g. %s:id), then "
                    "re-read the table",
                    c->table ? c->table : "schema.table");
    /* No Kafka record (a bare envelope read from a file): the first column of
     * the row is the key (see the top). */
    if (!cJSON_IsObject(row) || !row->child)
        return fail(c, NULL, "the record has no Kafka key and no row to take the key from");
    k = row->child;
    cdc__buf kt = {0};
    cdc__buf_puts(&kt, "{\"");
    cdc__buf_puts(&kt, k->string);
    cdc__buf_puts(&kt, "\":");
    cdc__buf_puts(&kt, snippet(k, sn, sizeof sn));
    cdc__buf_puts(&kt, "}");
    cdc__buf_putc(&kt, 0);
    c->keytext = kt.p;
    cdc__buf dec = {0};
    cJSON canon;
    int d = key_decimal(c, kfields, k, &dec, &why);
    if (d > 0) cdc__key_add_text(&ev->key, dec.p, dec.len);
    cdc__buf_free(&dec);
    if (d < 0 || (!d && key_element(c, &ev->key, key_date_infinity(c, kfields, k, &canon) ? &canon : k, 0, &why)))
        return fail(c, k->string, "%s", why);
    cdc__buf_put_varint(&ev->keycols, 1);
    cdc__buf_put_varint(&ev->keycols, strlen(k->string));
    cdc__buf_puts(&ev->keycols, k->string);
    return 0;
}

/* The key a primary-key change's row had (the record's __debezium.oldkey
 * header, a key object as the Kafka key's payload is), encoded as the
 * Kafka key is, into ev->old_key, for the apply to find the row's unchanged
 * TOASTed columns under it.  A header that does not decode leaves it empty:
 * the event applies as without the header (the placeholders unresolved,
 * counted). */
static void old_key(const dctx *c, cdc__event *ev, const cJSON *kfields)
{
    const cdc_record_t *r = c->rec;
    size_t pos = 0;
    if (!r->old_key_len || !cdc__utf8_valid(r->old_key, r->old_key_len)) return;
    cJSON *doc = parse_json(r->old_key, r->old_key_len, &pos);
    if (!doc) return;
    const cJSON *o = is_wrapped_key(doc) ? member(doc, "payload") : doc;
    if (cJSON_IsObject(o)) {
        dctx quiet = *c;
        quiet.err = NULL;
        quiet.keytext = NULL;
        cdc__event tmp = {0};
        /* the same columns as the record's key, or it names another row */
        if (!decode_key(&quiet, &tmp, o, kfields, NULL, 0) && tmp.keycols.len == ev->keycols.len &&
            !memcmp(tmp.keycols.p, ev->keycols.p, tmp.keycols.len)) {
            ev->old_key = tmp.key;
            tmp.key = (cdc__buf){0};
        }
        cdc__event_free(&tmp);
    }
    doc_release(doc);
}

/* Whether p[0..pos) is one whole JSON value (and pos not blank): the parser
 * stopped at text after it. */
static int value_ends_at(const char *p, size_t pos)
{
    size_t q = 0;
    if (!pos) return 0;
    cJSON *j = parse_json(p, pos, &q);
    if (!j) return 0;
    doc_release(j);
    return 1;
}

/* The brackets open at pos (strings skipped): the nesting depth there. */
static size_t depth_at(const char *p, size_t pos)
{
    size_t d = 0;
    for (size_t i = 0; i < pos; i++) {
        if (p[i] == '"') {
            for (i++; i < pos && p[i] != '"'; i++)
                if (p[i] == '\\') i++;
        } else if (p[i] == '{' || p[i] == '[') {
            d++;
        } else if ((p[i] == '}' || p[i] == ']') && d) {
            d--;
        }
    }
    return d;
}

/* Why the parser stopped at pos, when it can be told more plainly than
 * "malformed": an escaped UTF-16 surrogate without its pair (well-formed
 * JSON, but no character: PostgreSQL text cannot hold one), a byte-order
 * mark, text after a whole value (two records on one line), or nesting
 * deeper than the parser takes.  "" otherwise. */
static const char *json_error_hint(const char *p, size_t n, size_t pos)
{
    if (pos + 3 <= n && !memcmp(p + pos, "\xef\xbb\xbf", 3))
        return ": a byte-order mark (U+FEFF), which JSON text may not hold there";
    if (pos < n && (p[pos] == '{' || p[pos] == '[') && depth_at(p, pos) >= FJ_MAX_DEPTH)
        return ": nested deeper than " FJ_MAX_DEPTH_TEXT " objects and arrays";
    if (pos < n && value_ends_at(p, pos))
        return ": text after the JSON value (one record per line, and nothing after it)";
    if (pos + 6 > n || p[pos] != '\\' || p[pos + 1] != 'u') return "";
    unsigned cp = 0;
    if (fj_hex4(p + pos + 2, &cp)) return "";
    return cp >= 0xD800 && cp <= 0xDFFF
               ? ": an escaped UTF-16 surrogate without its pair, which is no character (PostgreSQL text cannot "
                 "hold it)"
               : "";
}

/* Parses rec->key.  *kroot is the parsed document (to delete), *kobj the key
 * object or NULL when the record has no key. */
static int parse_kafka_key(const dctx *c, cJSON **kroot, const cJSON **kobj)
{
    const cdc_record_t *r = c->rec;
    *kroot = NULL;
    *kobj = NULL;
    if (!r->key || r->key_len == 0) return 0;
    size_t pos = 0;
    cJSON *k = parse_json(r->key, r->key_len, &pos);
    if (!k) return fail(c, NULL, "malformed JSON in the Kafka key at byte %zu%s", pos, json_error_hint(r->key, r->key_len, pos));
    *kroot = k;
    const cJSON *o = k;
    if (is_wrapped_key(o)) o = member(o, "payload");
    if (is_absent(o)) return 0;
    if (!cJSON_IsObject(o))
        return fail(c, NULL, "the Kafka key is %s, not a JSON object of the key columns", json_kind(o));
    *kobj = o;
    return 0;
}

/* ---- Envelope ---- */

static int snapshot_kind(const dctx *c, const cJSON *v, int *out)
{
    char sn[80];
    *out = CDC__SNAP_NONE;
    if (is_absent(v)) return 0;
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? CDC__SNAP_TRUE : CDC__SNAP_NONE;
        return 0;
    }
    if (!cJSON_IsString(v)) return fail(c, NULL, "source.snapshot is %s, not a string", json_kind(v));
    const char *s = v->valuestring;
    if (!strcmp(s, "true") || !strcmp(s, "first") || !strcmp(s, "first_in_data_collection"))
        *out = CDC__SNAP_TRUE;
    else if (!strcmp(s, "last") || !strcmp(s, "last_in_data_collection"))
        *out = CDC__SNAP_LAST;
    else if (!strcmp(s, "incremental"))
        *out = CDC__SNAP_INCREMENTAL;
    else if (!strcmp(s, "false"))
        *out = CDC__SNAP_NONE;
    else
        return fail(c, NULL, "unknown source.snapshot value %s", snippet(v, sn, sizeof sn));
    return 0;
}

/* source.lsn into *lsn; *present = 0 when absent or null. */
static int read_lsn(const dctx *c, const cJSON *v, uint64_t *lsn, int *present)
{
    char sn[80];
    *lsn = 0;
    *present = 0;
    if (is_absent(v)) return 0;
    if (!cJSON_IsNumber(v))
        return fail(c, NULL, "non-numeric LSN: source.lsn is %s %s", json_kind(v), snippet(v, sn, sizeof sn));
    double d = v->valuedouble;
    if (!isfinite(d)) /* cJSON prints an overflowed number as null: do not quote it */
        return fail(c, NULL, "LSN out of range: source.lsn is a number beyond the range of a double");
    if (d != floor(d) || d < 0 || d > 18446744073709551615.0)
        return fail(c, NULL, "LSN out of range: source.lsn %s is not an integer in 0..2^64-1",
                    snippet(v, sn, sizeof sn));
    if (d >= TWO53) { /* exact from its digits */
        size_t n;
        const char *t = num_text(c, v, &n);
        char s[32];
        char *e;
        if (!t || !int_syntax(t, n) || n >= sizeof s)
            return fail(c, NULL, "LSN out of range: source.lsn %s is not an integer", snippet(v, sn, sizeof sn));
        memcpy(s, t, n);
        s[n] = 0;
        errno = 0;
        unsigned long long x = strtoull(s, &e, 10);
        if (errno || *e)
            return fail(c, NULL, "LSN out of range: source.lsn %s is above 2^64-1", s);
        *lsn = x;
        *present = 1;
        return 0;
    }
    *lsn = (uint64_t)d;
    *present = 1;
    return 0;
}

/* One element of source.sequence at *p: null, or a decimal string of an
 * LSN in 0..2^64-1.  Advances *p; -1 when malformed. */
static int sequence_item(const char **p, uint64_t *out)
{
    const char *s = *p;
    while (*s == ' ') s++;
    *out = 0;
    if (!strncmp(s, "null", 4)) {
        *p = s + 4;
        return 0;
    }
    if (*s++ != '"' || *s < '0' || *s > '9') return -1;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (*s++ != '"') return -1;
    *out = v;
    *p = s;
    return 0;
}

/* source.sequence: the commit order of the event (its first element), 0 when
 * the sequence or that element is absent or null. */
static int read_sequence(const dctx *c, const cJSON *v, uint64_t *commit)
{
    char sn[80];
    uint64_t lsn;
    *commit = 0;
    if (is_absent(v)) return 0;
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    if (s) {
        while (*s == ' ') s++;
        if (*s++ == '[' && !sequence_item(&s, commit)) {
            while (*s == ' ') s++;
            if (*s++ == ',' && !sequence_item(&s, &lsn)) {
                while (*s == ' ') s++;
                if (s[0] == ']' && !s[1]) return 0;
            }
        }
    }
    *commit = 0;
    return fail(c, NULL, "source.sequence %s is not a string holding [\"commit LSN\", \"LSN\"]",
                snippet(v, sn, sizeof sn));
}

/* ts_ms: source.ts_ms (src_ts), else the envelope's (env_ts), else 0. */
static int read_ts(const dctx *c, const cJSON *src_ts, const cJSON *env_ts, int64_t *out)
{
    char sn[80];
    const cJSON *v = src_ts;
    const char *where = "source.ts_ms";
    if (is_absent(v)) {
        v = env_ts;
        where = "ts_ms";
    }
    *out = 0;
    if (is_absent(v)) return 0;
    if (!num_exact_int(v)) return fail(c, NULL, "%s %s is not an integer", where, snippet(v, sn, sizeof sn));
    *out = (int64_t)v->valuedouble;
    return 0;
}

/* The "fields" of the before/after struct in the envelope schema, or NULL. */
static int row_fields(const dctx *c, const cJSON *schema, const char *which, const cJSON **out)
{
    *out = NULL;
    if (is_absent(schema)) return 0;
    if (!cJSON_IsObject(schema))
        return fail(c, NULL, "the envelope schema is %s, not an object", json_kind(schema));
    const cJSON *fields = member(schema, "fields"), *f;
    if (!cJSON_IsArray(fields)) return fail(c, NULL, "the envelope schema has no fields array");
    cJSON_ArrayForEach(f, fields)
    {
        const cJSON *nm = member(f, "field");
        if (!cJSON_IsString(nm) || strcmp(nm->valuestring, which)) continue;
        const cJSON *sub = member(f, "fields");
        if (!cJSON_IsArray(sub)) return fail(c, NULL, "the schema of %s has no fields array", which);
        *out = sub;
        return 0;
    }
    return 0;
}

/* The table from source.schema (s) and source.table (t), else the topic. */
static int table_name(const dctx *c, const cJSON *s, const cJSON *t, char **out)
{
    if (!is_absent(s) && !cJSON_IsString(s))
        return fail(c, NULL, "source.schema is %s, not a string", json_kind(s));
    if (!is_absent(t) && !cJSON_IsString(t))
        return fail(c, NULL, "source.table is %s, not a string", json_kind(t));
    if (cJSON_IsString(s) && cJSON_IsString(t) && *s->valuestring && *t->valuestring) {
        size_t a = strlen(s->valuestring), b = strlen(t->valuestring);
        if (a + 1 + b > CDC__TABLE_NAME_MAX)
            return fail(c, NULL, "table name of %zu bytes: longer than %d", a + 1 + b, CDC__TABLE_NAME_MAX);
        char *p = cdc__malloc(a + b + 2);
        memcpy(p, s->valuestring, a);
        p[a] = '.';
        memcpy(p + a + 1, t->valuestring, b + 1);
        *out = p;
        return 0;
    }
    const char *topic = c->rec->topic;
    size_t n = topic ? strlen(topic) + 1 : 1;
    char *p = cdc__malloc(n);
    if (topic && cdc__table_from_topic(topic, p, n) == 0) {
        if (strlen(p) > CDC__TABLE_NAME_MAX) {
            free(p);
            return fail(c, NULL, "table name from the topic: longer than %d bytes", CDC__TABLE_NAME_MAX);
        }
        if (!cdc__utf8_valid(p, strlen(p))) {
            free(p);
            return fail(c, NULL, "table name from the topic: not valid UTF-8, so not a PostgreSQL name");
        }
        *out = p;
        return 0;
    }
    free(p);
    return fail(c, NULL, "cannot tell the table: the source names no schema and table, and %s",
                topic ? "the topic is not prefix.schema.table" : "there is no topic");
}

/* A record of one of Debezium's own topics, which a subscription by pattern
 * (shop\\..*) or a file of a whole Kafka dump also holds: a heartbeat
 * (topic __debezium-heartbeat.PREFIX, value {"ts_ms": N}: sent every
 * heartbeat.interval.ms, which PostgreSQL setups turn on so that the slot
 * advances on a quiet database) or a transaction's boundary (topic
 * PREFIX.transaction with provide.transaction.metadata, value {"status":
 * "BEGIN" or "END", "id": "txid:lsn", ...}).  Neither changes a row: read
 * and passed over like a logical message, not a dead letter. */
static int debezium_own(const dctx *c, const cJSON *env)
{
    const char *topic = c->rec ? c->rec->topic : NULL;
    const cJSON *ts = member(env, "ts_ms"), *st = member(env, "status"), *id = member(env, "id");
    if (topic && !strncmp(topic, "__debezium-heartbeat", 20) && num_exact_int(ts)) return 1;
    if (num_exact_int(ts) && env->child == ts && !ts->next) return 1; /* {"ts_ms": N} alone */
    return cJSON_IsString(st) && (!strcmp(st->valuestring, "BEGIN") || !strcmp(st->valuestring, "END")) &&
           cJSON_IsString(id) && !member(env, "before") && !member(env, "after") && !member(env, "source");
}

static int decode(dctx *c, cJSON *root, cdc__event *ev)
{
    char sn[80];
    const cJSON *env = root, *schema = NULL;
    if (is_wrapped(env)) {
        schema = member(env, "schema");
        env = member(env, "payload");
    }
    if (!cJSON_IsObject(env))
        return fail(c, NULL, "the record value is %s, not a Debezium envelope object", json_kind(env));

    /* Every member decode reads, found in one pass each (members). */
    enum { E_OP, E_SOURCE, E_BEFORE, E_AFTER, E_TS, E_N };
    static const char *const env_names[E_N] = {"op", "source", "before", "after", "ts_ms"};
    enum { S_SCHEMA, S_TABLE, S_SNAPSHOT, S_LSN, S_SEQUENCE, S_TS, S_N };
    static const char *const src_names[S_N] = {"schema", "table", "snapshot", "lsn", "sequence", "ts_ms"};
    const cJSON *em[E_N], *sm[S_N];
    const char *twice = members(env, env_names, em, E_N);
    if (twice) return fail(c, NULL, "the envelope holds %s twice", twice);

    const cJSON *op = em[E_OP];
    if (!op && debezium_own(c, env)) { /* changes no row; its position counts */
        if (num_exact_int(em[E_TS])) ev->ts_ms = (int64_t)em[E_TS]->valuedouble;
        ev->action = CDC__ACT_NOOP;
        cdc__buf_put_varint(&ev->keycols, 0);
        cdc__buf_put_varint(&ev->row, 0);
        return 0;
    }
    if (!op) return fail(c, NULL, "unknown op: the envelope has no op field");
    if (!cJSON_IsString(op) || strlen(op->valuestring) != 1 || !strchr("cudrtm", op->valuestring[0]))
        return fail(c, NULL, "unknown op %s (expected c, u, d, r, t or m)", snippet(op, sn, sizeof sn));
    /* The op letter is Debezium's; the store is told what the event does. */
    char opl = op->valuestring[0];
    ev->action = opl == 'd' ? CDC__ACT_DELETE : opl == 't' ? CDC__ACT_FLOOR : opl == 'm' ? CDC__ACT_NOOP
                                                                                       : CDC__ACT_UPSERT;

    const cJSON *src = em[E_SOURCE];
    if ((twice = members(src, src_names, sm, S_N))) return fail(c, NULL, "the source block holds %s twice", twice);
    if (opl == 'm') { /* a logical message: positions when usable, nothing required */
        const cJSON *l = sm[S_LSN], *ts = sm[S_TS];
        if (is_absent(ts)) ts = em[E_TS];
        if (num_exact_int(l) && l->valuedouble >= 0) ev->lsn = (uint64_t)l->valuedouble;
        if (num_exact_int(ts)) ev->ts_ms = (int64_t)ts->valuedouble;
        cdc__buf_put_varint(&ev->keycols, 0);
        cdc__buf_put_varint(&ev->row, 0);
        return 0;
    }

    if (!is_absent(src) && !cJSON_IsObject(src))
        return fail(c, NULL, "source is %s, not an object", json_kind(src));
    if (table_name(c, sm[S_SCHEMA], sm[S_TABLE], &ev->table)) return CDC_EDECODE;
    c->table = ev->table;
    if (snapshot_kind(c, sm[S_SNAPSHOT], &ev->snapshot)) return CDC_EDECODE;
    if (opl == 'r' && ev->snapshot == CDC__SNAP_NONE) ev->snapshot = CDC__SNAP_TRUE;
    int present;
    if (read_lsn(c, sm[S_LSN], &ev->lsn, &present)) return CDC_EDECODE;
    if (read_sequence(c, sm[S_SEQUENCE], &ev->commit)) return CDC_EDECODE;
    if (ev->snapshot == CDC__SNAP_INCREMENTAL) {
        if (!ev->commit)
            return fail(c, NULL, "incremental snapshot read without a commit position: source.sequence "
                                 "has no first element, so the read cannot be ordered");
        ev->lsn = ev->commit;
    } else if (!present)
        return fail(c, NULL, "missing LSN: the event has no source.lsn");
    if (read_ts(c, sm[S_TS], em[E_TS], &ev->ts_ms)) return CDC_EDECODE;

    const cJSON *before = em[E_BEFORE], *after = em[E_AFTER];
    if (!is_absent(before) && !cJSON_IsObject(before))
        return fail(c, NULL, "before is %s, not an object", json_kind(before));
    if (!is_absent(after) && !cJSON_IsObject(after))
        return fail(c, NULL, "after is %s, not an object", json_kind(after));

    if (opl == 't') {
        cdc__buf_put_varint(&ev->keycols, 0);
        cdc__buf_put_varint(&ev->row, 0);
        return 0;
    }

    const cJSON *row = opl == 'd' ? before : after;
    const char *which = opl == 'd' ? "before" : "after";
    if (opl != 'd' && !cJSON_IsObject(row))
        return fail(c, NULL, "after is missing: a %c event must carry the new row", opl);

    cJSON *kroot;
    const cJSON *kobj, *fields;
    int rc = parse_kafka_key(c, &kroot, &kobj);
    c->nd->kroot = kroot;
    const cJSON *kfields = is_wrapped_key(kroot) ? member(member(kroot, "schema"), "fields") : NULL;
    if (!kobj) { /* without a Kafka key, the row's schema says the key column's type (errors come below) */
        dctx quiet = *c;
        quiet.err = NULL;
        if (row_fields(&quiet, schema, which, &kfields)) kfields = NULL;
    }
    if (!rc) rc = decode_key(c, ev, kobj, kfields, row, opl != 'd');
    if (!rc) rc = row_fields(c, schema, which, &fields);
    if (!rc) rc = decode_row(c, ev, row, fields);
    if (!rc && fields && opl != 'd') rc = schema_columns(c, ev, fields);
    if (!rc && opl != 'd' && ev->nunavailable && c->rec->old_key) old_key(c, ev, kfields);
    if (!rc && opl == 'd') ev->key_moved = c->rec->key_moved != 0;
    doc_release(kroot);
    return rc;
}

/* ---- Entry points ---- */

static int decode_record(const cdc_record_t *rec, cdc__scale_fn scale, void *scale_opaque, cdc__event *ev,
                         cdc_error_t *err)
{
    numdocs nd = {0};
    dctx c = {.rec = rec, .nd = &nd, .err = err, .scale = scale, .scale_opaque = scale_opaque};
    if (!rec->value) return 1;
    if (rec->value_len == 0) return fail(&c, NULL, "the record value is empty (a tombstone is a null value)");
    if (check_text(&c, rec->value, rec->value_len, "record value") ||
        (rec->key && check_text(&c, rec->key, rec->key_len, "Kafka key")))
        return CDC_EDECODE;
    size_t pos = 0;
    cJSON *root = parse_json(rec->value, rec->value_len, &pos);
    if (!root)
        return fail(&c, NULL, "malformed JSON in the record value at byte %zu%s", pos,
                    json_error_hint(rec->value, rec->value_len, pos));
    if (cJSON_IsNull(root) || (is_wrapped(root) && cJSON_IsNull(member(root, "payload")))) {
        doc_release(root);
        return 1;
    }
    cdc__event tmp = {0};
    nd.root = root;
    int rc = decode(&c, root, &tmp);
    doc_release(root);
    free(c.keytext);
    if (rc) {
        cdc__event_free(&tmp);
        return rc;
    }
    *ev = tmp;
    return 0;
}

/* Decodes the record with the thread's cJSON allocations in an arena that
 * lives as long as this call ("Record arena" above). */
int cdc__decode_record(const cdc_record_t *rec, cdc__scale_fn scale, void *scale_opaque,
                       cdc__event *ev, cdc_error_t *err)
{
    if (!rec || !ev) return cdc__err(err, CDC_EINVAL, "cdc__decode_record: no record or no event");
    /* cJSON's hooks are installed by parse_json, before its first allocation. */
    arena a = {NULL, NULL, NULL, NULL, NULL};
#if ARENA_ON_HEAP
    (void)arena_grow(&a, 0); /* an empty first carve: the whole block is left */
#else
    _Alignas(ARENA_ALIGN) char first[ARENA_FIRST];
    a.cur = first;
    a.end = first + sizeof first;
    a.first = first;
    a.first_end = a.end;
#endif
    arena *outer = tl_arena;
    tl_arena = &a;
    int rc = decode_record(rec, scale, scale_opaque, ev, err);
    tl_arena = outer;
    arena_done(&a);
    return rc;
}

int cdc__table_from_topic(const char *topic, char *out, size_t outsz)
{
    if (!topic) return -1;
    const char *last = strrchr(topic, '.');
    if (!last || last == topic) return -1;
    const char *mid = last - 1;
    while (mid > topic && *mid != '.') mid--;
    if (mid == topic) return -1; /* only two parts */
    /* topic = prefix "." schema "." table; every part non-empty */
    const char *schema = mid + 1;
    if (schema == last || last[1] == 0) return -1;
    size_t n = strlen(schema);
    if (n + 1 > outsz) return -1;
    memcpy(out, schema, n + 1);
    return 0;
}

/* ---- Kafka Connect's answers (connect.c) ---- */

/* Kafka Connect's REST answers are JSON too; they are read here so that
 * cJSON stays behind this one file.  connect.c does the HTTP. */

static char *dup_string(const cJSON *v)
{
    return cJSON_IsString(v) && v->valuestring ? cdc__strdup(v->valuestring) : NULL;
}

int cdc__connect_read_config(const char *body, size_t n, cdc_connect_status_t *out, cdc_error_t *err)
{
    size_t pos = 0;
    cJSON *j = parse_json(body, n, &pos);
    const cJSON *cfg = member(j, "config");
    if (!j || !cJSON_IsObject(cfg)) {
        cJSON_Delete(j);
        return cdc__err(err, CDC_ECONNECT, "the connector's configuration is not the JSON object expected "
                                           "(no \"config\" object; byte %zu)", pos);
    }
    if (!out->name) out->name = dup_string(member(j, "name"));
    size_t k = (size_t)cJSON_GetArraySize(cfg);
    out->config_keys = cdc__calloc(k, sizeof *out->config_keys);
    out->config_values = cdc__calloc(k, sizeof *out->config_values);
    const cJSON *it;
    cJSON_ArrayForEach(it, cfg)
    {
        if (!it->string || !cJSON_IsString(it)) continue;
        out->config_keys[out->nconfig] = cdc__strdup(it->string);
        out->config_values[out->nconfig++] = cdc__strdup(it->valuestring);
    }
    cJSON_Delete(j);
    return 0;
}

int cdc__connect_read_status(const char *body, size_t n, cdc_connect_status_t *out, cdc_error_t *err)
{
    size_t pos = 0;
    cJSON *j = parse_json(body, n, &pos);
    const cJSON *c = member(j, "connector"), *tasks = member(j, "tasks");
    if (!j || !cJSON_IsObject(c) || !cJSON_IsString(member(c, "state"))) {
        cJSON_Delete(j);
        return cdc__err(err, CDC_ECONNECT, "the connector's status is not the JSON object expected "
                                           "(no \"connector\".\"state\"; byte %zu)", pos);
    }
    if (!out->name) out->name = dup_string(member(j, "name"));
    out->state = dup_string(member(c, "state"));
    out->worker_id = dup_string(member(c, "worker_id"));
    out->trace = dup_string(member(c, "trace"));
    size_t k = cJSON_IsArray(tasks) ? (size_t)cJSON_GetArraySize(tasks) : 0;
    out->tasks = cdc__calloc(k, sizeof *out->tasks);
    const cJSON *t;
    if (k)
        cJSON_ArrayForEach(t, tasks)
        {
            if (!cJSON_IsObject(t)) continue;
            cdc_connect_task_t *o = &out->tasks[out->ntasks++];
            const cJSON *id = member(t, "id");
            o->id = cJSON_IsNumber(id) ? id->valueint : (int)out->ntasks - 1;
            o->state = dup_string(member(t, "state"));
            if (!o->state) o->state = cdc__strdup("UNKNOWN");
            o->worker_id = dup_string(member(t, "worker_id"));
            o->trace = dup_string(member(t, "trace"));
        }
    cJSON_Delete(j);
    return 0;
}

void cdc__connect_read_error(const char *body, size_t n, char *msg, size_t size)
{
    size_t pos = 0;
    cJSON *j = n ? parse_json(body, n, &pos) : NULL;
    const cJSON *m = member(j, "message");
    if (cJSON_IsString(m)) snprintf(msg, size, "%s", m->valuestring);
    else snprintf(msg, size, "%.*s", (int)(n > 200 ? 200 : n), body ? body : "");
    cJSON_Delete(j);
}
