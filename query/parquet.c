/*
 * parquet.c: a Parquet file writer (parquet.h), the subset of the Apache
 * Parquet format specification (parquet-format, parquet.thrift) that a flat
 * table of typed columns needs.  No Debian package writes Parquet from C, and
 * the subset is small, so it is written here; zstd and snappy (for the
 * pages) are the only libraries it uses, and only this file includes them.
 *
 * What it writes:
 *  - "PAR1", the row groups, the footer (FileMetaData in the Thrift compact
 *    protocol, its 4-byte little-endian length) and "PAR1".  The compact
 *    protocol encoder is the few functions under "Thrift compact protocol"
 *    below: field headers with id deltas, zigzag varints, binary, lists,
 *    structs and unions.
 *  - A flat schema: the root and one OPTIONAL primitive column per table
 *    column (max definition level 1, no repetition levels), each with its
 *    LogicalType and the legacy ConvertedType beside it for older readers.
 *  - Per row group and column one column chunk of v1 data pages
 *    (DataPageHeader) of about 1 MiB of values each: definition levels in
 *    the RLE/bit-packed hybrid (bit width 1, with its 4-byte length), then
 *    the non-NULL values PLAIN-encoded (booleans bit-packed), or for
 *    integer columns DELTA_BINARY_PACKED when that takes at most a quarter
 *    of PLAIN's bytes (write_page says why); each page body compressed on
 *    its own with zstd, snappy, or not at all.  ColumnMetaData lists the
 *    encodings the chunk's pages use.
 *  - Column chunk statistics (null_count, min_value, max_value) in each
 *    type's sort order, with TypeDefinedOrder for every column in
 *    column_orders; the legacy min/max fields only for INT32 and INT64,
 *    whose legacy signed order is the defined order.  min/max are left
 *    out when every value is NULL, when one is longer than 4 KiB (as
 *    parquet-cpp does), and for a float column when the chunk holds a NaN
 *    (as DuckDB's writer does): the specification has readers take min/max
 *    without NaN, but DuckDB and deltalake order NaN above every number and
 *    skip a row group by its max, so `WHERE f > 5` lost a NaN row from a
 *    chunk whose max was below 5.  The same for a Delta file's stats.
 *
 * What it does not: dictionary encoding, DATA_PAGE_V2, the other encodings
 * (DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT), nested or
 * repeated types (a Debezium struct, map or array column is written as its
 * text), page CRCs, page indexes, bloom filters, key-value metadata,
 * encryption.  PLAIN with a general compressor is what CDC exports need
 * first: it is simple, fast to write, read by every reader, and zstd
 * recovers most of what a dictionary would save on repeated text.  Version
 * 1 data pages because every reader accepts them; FileMetaData.version is 2
 * (logical types are used).  DELTA_BINARY_PACKED, which pyarrow, DuckDB,
 * Spark and deltalake read (tests/export/parquet_read.py, check_delta), is
 * the exception: an integer key in key order is the common first column of
 * an export, and PLAIN gives zstd 8 bytes of it per row that compress
 * badly (on the benchmark's 10,000,000 rows: 80 MB into the compressor,
 * against 0.4 MB as deltas).
 *
 * Types: the column's type descriptor (ingest/decode.c type_descriptor: the
 * Connect type, "/name" for a logical type, "decimal:S[:P]" for NUMERIC)
 * picks the Parquet type, and the value's PostgreSQL text is parsed to it
 * with hand-written parsers (no allocation per value):
 *   int8, int16, int32   INT32 INTEGER(8|16|32, signed)
 *   int64                INT64 INTEGER(64, signed)
 *   float32, float64     FLOAT, DOUBLE ("NaN", "Infinity", "-Infinity")
 *   boolean              BOOLEAN ("t", "f")
 *   string               BYTE_ARRAY STRING (also string/<other name>)
 *   string/...Json*      BYTE_ARRAY JSON
 *   string/...Uuid       FIXED_LEN_BYTE_ARRAY(16) UUID
 *   string/...ZonedTimestamp  INT64 TIMESTAMP(UTC, MICROS) (ISO text, Z or an offset)
 *   decimal:S[:P]        FIXED_LEN_BYTE_ARRAY DECIMAL(P, S), the fewest bytes
 *                        for P; P unknown: 38.  P > 38 (or P < S): STRING.
 *                        A negative S (NUMERIC(p,-s) of PostgreSQL 15, whose
 *                        text is an integer): DECIMAL(P, 0).
 *   decimal              STRING (unconstrained NUMERIC: no fixed scale; "NaN")
 *   int32/...Date        INT32 DATE ("YYYY-MM-DD[ BC]")
 *   int64/...MicroTimestamp, int64/...Timestamp  INT64 TIMESTAMP(local, MICROS)
 *   int64/...MicroTime, int32/...Time            INT64 TIME(local, MICROS)
 *   int64/...MicroDuration INT64 INTEGER(64) (the interval's text "H:MM:SS.f" as
 *                        its microseconds, months at 30.4375 days as Debezium)
 *   bytes                BYTE_ARRAY (PostgreSQL's hex bytea "\x..." decoded)
 *   other intN/floatN/boolean with a logical name: as the plain type;
 *   anything else (struct, array, map, bytes/<name>, unknown, NULL): STRING.
 * PostgreSQL's infinite timestamps and dates ("infinity", "-infinity") are
 * written as the type's largest and smallest value, as DuckDB does.  Strings
 * are not checked for UTF-8 (PostgreSQL's UTF8 databases only hold UTF-8).
 *
 * A row group is buffered in memory column by column (the PLAIN values and
 * a definition level byte per row) and encoded when it has
 * row_group_rows rows or 128 MiB of values.  A row is parsed whole before
 * any of it is buffered, so a bad value rejects its row and nothing else.
 */
#include <math.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "parquet.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "parquet.c writes PLAIN values by copying them: it needs a little-endian machine"
#endif

#define PQ_PAGE_BYTES ((size_t)1 << 20)
#define PQ_RG_BYTES ((size_t)128 << 20)
#define PQ_MAX_STAT 4096
#define PQ_DELTA_PREFIX 32 /* code points of a string Delta's statistics keep */

/* ---- Parquet's enums (parquet.thrift) ---- */

enum { T_BOOLEAN = 0, T_INT32 = 1, T_INT64 = 2, T_FLOAT = 4, T_DOUBLE = 5, T_BYTE_ARRAY = 6, T_FLBA = 7 };
enum {
    CT_NONE = -1, CT_UTF8 = 0, CT_DECIMAL = 5, CT_DATE = 6, CT_TIME_MICROS = 8, CT_TIMESTAMP_MICROS = 10,
    CT_INT_8 = 15, CT_INT_16 = 16, CT_INT_32 = 17, CT_INT_64 = 18, CT_JSON = 19
};
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_DELTA_BINARY_PACKED = 5 };
enum { CODEC_UNCOMPRESSED = 0, CODEC_SNAPPY = 1, CODEC_ZSTD = 6 };

/* How a column's text becomes a value (the column's "conversion"). */
enum {
    C_STRING, C_JSON, C_BYTEA, C_UUID, C_BOOL, C_INT8, C_INT16, C_INT32, C_INT64, C_FLOAT, C_DOUBLE,
    C_DECIMAL, C_DATE, C_TS, C_TSTZ, C_TIME
};

/* ---- The writer ---- */

/* Min/max and NULL count of a column over some rows.  Fixed-width values
 * are kept as numbers (i: integers, booleans, dates, times; d: floats; x:
 * decimals), byte arrays and UUIDs as bytes. */
typedef struct pq_stat {
    uint64_t nulls;
    int has;
    int nan;             /* a NaN among the values: no min/max (cdc__pq's head comment) */
    int64_t imin, imax;
    double dmin, dmax;
    __int128 xmin, xmax;
    cdc__buf bmin, bmax;
} pq_stat;

/* A page boundary inside a column's buffered row group. */
typedef struct pq_cut {
    size_t row, off, nvals;
} pq_cut;

typedef struct pq_col {
    char *name;
    int conv, ptype, width, scale, precision;
    int interval;      /* C_INT64 of an interval's text (MicroDuration): its microseconds */
    cdc__buf vals;     /* PLAIN values of the row group (booleans: a byte each) */
    cdc__buf defs;     /* a definition level (0 NULL, 1 value) per row, from the row
                          group's first NULL on (with_defs); until then every level is 1
                          and none is buffered */
    int with_defs;
    int plain_bytes;   /* the PLAIN size of a value of a fixed-width type (booleans
                          are buffered a byte each) */
    size_t nvals;      /* non-NULL values buffered */
    pq_cut *cuts;      /* where pages after the first start */
    size_t ncuts, capcuts, page_off;
    pq_stat rg, file;  /* this row group's, and the written row groups' */
} pq_col;

/* A written row group and its column chunks, kept until the footer: their
 * file offsets move when the row groups of a second writer are adopted
 * behind the first's (cdc__pq_adopt). */
typedef struct pq_rg {
    uint64_t start, total_u, total_c, rows;
} pq_rg;

typedef struct pq_chunk {
    uint64_t start, usize, csize;
    unsigned encs;         /* the encodings of its pages' values: bit 1 << ENC_* */
    size_t st_off, st_len; /* its Statistics struct in pq->stb */
} pq_chunk;

/* One parsed value of the row being added. */
typedef struct pq_cell {
    int null;
    int64_t i;
    double d;
    __int128 x;
    unsigned char u[16];
    const char *p; /* byte arrays: n bytes at p, or at scratch + off when scratch */
    size_t n, off;
    int scratch;
} pq_cell;

struct cdc__pq {
    pq_col *cols;
    size_t ncols;
    cdc__pq_options o;
    uint64_t rows, rg_rows;        /* rows added; rows of the row group being built */
    size_t rg_bytes;               /* bytes it buffers */
    int started, ended;
    pq_cell *cells;
    cdc__buf scratch;              /* decoded bytea of the row being added */
    cdc__buf page, z, hdr;         /* encoding buffers, kept between pages */
    pq_rg *rg;                     /* the row groups written so far (and adopted) */
    pq_chunk *ch;                  /* their column chunks, ncols per row group */
    size_t nrgs, caprgs;
    cdc__buf stb;                  /* the chunks' Statistics structs, Thrift-encoded */
    ZSTD_CCtx *zc;
};

/* ---- Thrift compact protocol ---- */

enum { TT_TRUE = 1, TT_FALSE = 2, TT_BYTE = 3, TT_I16 = 4, TT_I32 = 5, TT_I64 = 6, TT_BINARY = 8, TT_LIST = 9,
       TT_STRUCT = 12 };

typedef struct tw {
    cdc__buf *b;
    int d;          /* struct nesting depth */
    int16_t last[16]; /* the last field id written at each depth */
} tw;

static void tw_init(tw *t, cdc__buf *b)
{
    t->b = b;
    t->d = 0;
    t->last[0] = 0;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* A field header: the id as a delta from the previous field's when it is 1
 * to 15, else the type byte and the id as a zigzag varint. */
static void tw_field(tw *t, int id, int type)
{
    int delta = id - t->last[t->d];
    if (delta > 0 && delta <= 15) {
        cdc__buf_putc(t->b, (char)(delta << 4 | type));
    } else {
        cdc__buf_putc(t->b, (char)type);
        cdc__buf_put_varint(t->b, zigzag(id));
    }
    t->last[t->d] = (int16_t)id;
}

static void tw_i32(tw *t, int id, int32_t v)
{
    tw_field(t, id, TT_I32);
    cdc__buf_put_varint(t->b, zigzag(v));
}

static void tw_i64(tw *t, int id, int64_t v)
{
    tw_field(t, id, TT_I64);
    cdc__buf_put_varint(t->b, zigzag(v));
}

static void tw_byte(tw *t, int id, int v)
{
    tw_field(t, id, TT_BYTE);
    cdc__buf_putc(t->b, (char)v);
}

static void tw_bool(tw *t, int id, int v) { tw_field(t, id, v ? TT_TRUE : TT_FALSE); }

static void tw_bin(tw *t, int id, const void *p, size_t n)
{
    tw_field(t, id, TT_BINARY);
    cdc__buf_put_varint(t->b, n);
    cdc__buf_put(t->b, p, n);
}

/* A struct begins with a fresh field-id context; tw_end writes its stop. */
static void tw_push(tw *t) { t->last[++t->d] = 0; }
static void tw_struct(tw *t, int id)
{
    tw_field(t, id, TT_STRUCT);
    tw_push(t);
}
static void tw_end(tw *t)
{
    cdc__buf_putc(t->b, 0);
    t->d--;
}
/* An empty struct (the union members that carry no parameters). */
static void tw_empty(tw *t, int id)
{
    tw_struct(t, id);
    tw_end(t);
}

static void tw_listhdr(cdc__buf *b, int etype, size_t n)
{
    if (n < 15) {
        cdc__buf_putc(b, (char)(n << 4 | etype));
    } else {
        cdc__buf_putc(b, (char)(0xF0 | etype));
        cdc__buf_put_varint(b, n);
    }
}

static void tw_list(tw *t, int id, int etype, size_t n)
{
    tw_field(t, id, TT_LIST);
    tw_listhdr(t->b, etype, n);
}

/* ---- Types ---- */

/* The most decimal digits an n-byte two's complement integer holds. */
static const int dec_digits[17] = {0, 2, 4, 6, 9, 11, 14, 16, 18, 21, 23, 26, 28, 31, 33, 35, 38};

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Reads an integer at *s, advancing it.  0 ok, -1 none. */
static int desc_int(const char **s, long *v)
{
    char *end;
    long x = strtol(*s, &end, 10);
    if (end == *s) return -1;
    *s = end;
    *v = x;
    return 0;
}

/* Sets a column's conversion and Parquet type from its type descriptor. */
static void col_type(pq_col *c, const char *t)
{
    c->conv = C_STRING;
    c->ptype = T_BYTE_ARRAY;
    if (!t) return;
    const char *slash = strchr(t, '/');
    size_t base = slash ? (size_t)(slash - t) : strlen(t);
    const char *name = slash ? slash + 1 : "";
#define BASE(s) (base == strlen(s) && strncmp(t, s, base) == 0)
    if (starts(t, "decimal:")) {
        const char *p = t + 8;
        long s, prec = 38;
        if (desc_int(&p, &s)) return;
        if (*p == ':') {
            p++;
            if (desc_int(&p, &prec)) return;
        }
        if (*p || s > 38 || prec < 1 || prec > 38) return; /* text */
        if (s < 0) {
            /* NUMERIC(p, -k) (PostgreSQL 15) rounds to 10^k: integers of up
             * to p + k digits, the last k zeros (numeric(3,-3) holds 999000),
             * written at scale 0; past 38 digits, text. */
            prec -= s;
            s = 0;
            if (prec > 38) return;
        }
        if (s > prec) return;
        c->conv = C_DECIMAL;
        c->ptype = T_FLBA;
        c->scale = (int)s;
        c->precision = (int)prec;
        for (c->width = 1; dec_digits[c->width] < prec; c->width++) {}
        return;
    }
    if (BASE("string")) {
        if (starts(name, "io.debezium.data.Json")) c->conv = C_JSON;
        else if (!strcmp(name, "io.debezium.data.Uuid")) c->conv = C_UUID, c->ptype = T_FLBA, c->width = 16;
        else if (!strcmp(name, "io.debezium.time.ZonedTimestamp")) c->conv = C_TSTZ, c->ptype = T_INT64;
        return;
    }
    if (!strcmp(t, "bytes")) {
        c->conv = C_BYTEA;
        return;
    }
    if (BASE("int32") && (!strcmp(name, "io.debezium.time.Date") || !strcmp(name, "org.apache.kafka.connect.data.Date"))) {
        c->conv = C_DATE, c->ptype = T_INT32;
        return;
    }
    if (BASE("int64") &&
        (!strcmp(name, "io.debezium.time.MicroTimestamp") || !strcmp(name, "io.debezium.time.Timestamp") ||
         !strcmp(name, "org.apache.kafka.connect.data.Timestamp"))) {
        c->conv = C_TS, c->ptype = T_INT64;
        return;
    }
    if ((BASE("int64") && !strcmp(name, "io.debezium.time.MicroTime")) ||
        (BASE("int32") && (!strcmp(name, "io.debezium.time.Time") || !strcmp(name, "org.apache.kafka.connect.data.Time")))) {
        c->conv = C_TIME, c->ptype = T_INT64;
        return;
    }
    /* An interval (MicroDuration) is stored as its text "[-]H:MM:SS[.f]"
     * (ingest/decode.c, put_interval), its months folded into 30.4375 days by
     * Debezium: written as its microseconds, as Debezium sends it. */
    if (BASE("int64") && !strcmp(name, "io.debezium.time.MicroDuration")) c->interval = 1;
    if (BASE("int8")) c->conv = C_INT8, c->ptype = T_INT32;
    else if (BASE("int16")) c->conv = C_INT16, c->ptype = T_INT32;
    else if (BASE("int32")) c->conv = C_INT32, c->ptype = T_INT32;
    else if (BASE("int64")) c->conv = C_INT64, c->ptype = T_INT64;
    else if (BASE("float32") || BASE("float")) c->conv = C_FLOAT, c->ptype = T_FLOAT;
    else if (BASE("float64") || BASE("double")) c->conv = C_DOUBLE, c->ptype = T_DOUBLE;
    else if (BASE("boolean")) c->conv = C_BOOL, c->ptype = T_BOOLEAN;
#undef BASE
}

/* The SchemaElement of a column. */
static void col_schema(tw *t, const pq_col *c)
{
    static const int ct_of[] = {
        [C_STRING] = CT_UTF8, [C_JSON] = CT_JSON, [C_BYTEA] = CT_NONE, [C_UUID] = CT_NONE,
        [C_BOOL] = CT_NONE, [C_INT8] = CT_INT_8, [C_INT16] = CT_INT_16, [C_INT32] = CT_INT_32,
        [C_INT64] = CT_INT_64, [C_FLOAT] = CT_NONE, [C_DOUBLE] = CT_NONE, [C_DECIMAL] = CT_DECIMAL,
        [C_DATE] = CT_DATE, [C_TS] = CT_TIMESTAMP_MICROS, [C_TSTZ] = CT_TIMESTAMP_MICROS,
        [C_TIME] = CT_TIME_MICROS,
    };
    tw_push(t);
    tw_i32(t, 1, c->ptype);
    if (c->ptype == T_FLBA) tw_i32(t, 2, c->width);
    tw_i32(t, 3, 1); /* OPTIONAL */
    tw_bin(t, 4, c->name, strlen(c->name));
    if (ct_of[c->conv] != CT_NONE) tw_i32(t, 6, ct_of[c->conv]);
    if (c->conv == C_DECIMAL) {
        tw_i32(t, 7, c->scale);
        tw_i32(t, 8, c->precision);
    }
    if (c->conv != C_BYTEA && c->conv != C_BOOL && c->conv != C_FLOAT && c->conv != C_DOUBLE) {
        tw_struct(t, 10); /* LogicalType, a union */
        switch (c->conv) {
        case C_STRING: tw_empty(t, 1); break;
        case C_JSON: tw_empty(t, 12); break;
        case C_UUID: tw_empty(t, 14); break;
        case C_DATE: tw_empty(t, 6); break;
        case C_DECIMAL:
            tw_struct(t, 5);
            tw_i32(t, 1, c->scale);
            tw_i32(t, 2, c->precision);
            tw_end(t);
            break;
        case C_TS: case C_TSTZ: case C_TIME:
            tw_struct(t, c->conv == C_TIME ? 7 : 8);
            tw_bool(t, 1, c->conv == C_TSTZ);
            tw_struct(t, 2); /* TimeUnit */
            tw_empty(t, 2);  /* MICROS */
            tw_end(t);
            tw_end(t);
            break;
        default: /* integers */
            tw_struct(t, 10);
            tw_byte(t, 1, c->conv == C_INT8 ? 8 : c->conv == C_INT16 ? 16 : c->conv == C_INT32 ? 32 : 64);
            tw_bool(t, 2, 1);
            tw_end(t);
        }
        tw_end(t);
    }
    tw_end(t);
}

/* ---- Parsing PostgreSQL's text ---- */

/* An integer in [lo, hi].  0 ok, -1 not one. */
static int parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n && (s[0] == '-' || s[0] == '+')) neg = s[i++] == '-';
    if (i == n || n - i > 20) return -1;
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)((unsigned char)s[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    int64_t x;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return -1;
        x = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return -1;
        x = (int64_t)v;
    }
    if (x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

static const double p10d[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static const float p10f[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};

/* A float8 (or float4 when single) as PostgreSQL prints it.  Decimals of at
 * most 2^53 (2^24) significant value and a power of ten exact in the type
 * take one correctly rounded multiplication or division (Clinger's fast
 * path); the rest go through strtod/strtof, which round correctly.  0 ok. */
static int parse_real(const char *s, size_t n, int single, double *out)
{
    if (n == 3 && !memcmp(s, "NaN", 3)) return *out = NAN, 0;
    if (n == 8 && !memcmp(s, "Infinity", 8)) return *out = INFINITY, 0;
    if (n == 9 && !memcmp(s, "-Infinity", 9)) return *out = -INFINITY, 0;
    size_t i = 0;
    int neg = 0, nd = 0, any = 0;
    uint64_t m = 0;
    int e10 = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
        if (m || s[i] != '0') nd++;
        if (nd <= 19) m = m * 10 + (uint64_t)(s[i] - '0');
        else e10++;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
            if (m || s[i] != '0') nd++;
            if (nd <= 19) {
                m = m * 10 + (uint64_t)(s[i] - '0');
                e10--;
            }
        }
    }
    if (!any) return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int64_t e;
        size_t j = i + 1;
        while (j < n && ((s[j] >= '0' && s[j] <= '9') || (j == i + 1 && (s[j] == '-' || s[j] == '+')))) j++;
        if (j - i > 7 || parse_int(s + i + 1, j - i - 1, -99999, 99999, &e)) return -1;
        e10 += (int)e;
        i = j;
    }
    if (i != n) return -1;
    if (nd <= 19) {
        if (single && m <= (1u << 24) && e10 >= -10 && e10 <= 10) {
            float f = (float)m;
            f = e10 < 0 ? f / p10f[-e10] : f * p10f[e10];
            *out = neg ? -f : f;
            return 0;
        }
        if (!single && m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
            double d = (double)m;
            d = e10 < 0 ? d / p10d[-e10] : d * p10d[e10];
            *out = neg ? -d : d;
            return 0;
        }
    }
    char buf[64];
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    double d = single ? (double)strtof(buf, &end) : strtod(buf, &end);
    if (end != buf + n || isinf(d)) return -1;
    *out = d;
    return 0;
}

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* n digits at s[*i], advancing *i.  -1 when there are fewer. */
static int64_t digits(const char *s, size_t len, size_t *i, int n)
{
    int64_t v = 0;
    for (int k = 0; k < n; k++, (*i)++) {
        if (*i >= len || s[*i] < '0' || s[*i] > '9') return -1;
        v = v * 10 + (s[*i] - '0');
    }
    return v;
}

/* "[+-]YYYY[Y...]-MM-DD" at s[*i]: the day number, the year as written.
 * A sign is ISO 8601's (year 0 is 1 BC); PostgreSQL writes " BC" after the
 * whole value instead, which the callers handle.  0 ok. */
static int parse_ymd(const char *s, size_t n, size_t *i, int64_t *year, unsigned *mon, unsigned *day)
{
    int neg = 0;
    if (*i < n && (s[*i] == '-' || s[*i] == '+')) neg = s[(*i)++] == '-';
    int64_t y = 0;
    int nd = 0;
    for (; *i < n && s[*i] >= '0' && s[*i] <= '9' && nd < 9; (*i)++, nd++) y = y * 10 + (s[*i] - '0');
    if (nd < 4 || *i >= n || s[*i] != '-') return -1;
    (*i)++;
    int64_t m = digits(s, n, i, 2);
    if (m < 1 || m > 12 || *i >= n || s[*i] != '-') return -1;
    (*i)++;
    int64_t d = digits(s, n, i, 2);
    static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    y = neg ? -y : y;
    if (d < 1 || d > (int64_t)mdays[m - 1] + (m == 2 && is_leap(y))) return -1;
    *year = y;
    *mon = (unsigned)m;
    *day = (unsigned)d;
    return 0;
}

/* "HH:MM[:SS[.ffffff]]" at s[*i] in microseconds, up to max_hour:00:00. */
static int parse_hms(const char *s, size_t n, size_t *i, int max_hour, int64_t *us)
{
    int64_t h = digits(s, n, i, 2), mi, sec = 0, f = 0;
    if (h < 0 || h > max_hour || *i >= n || s[(*i)++] != ':') return -1;
    if ((mi = digits(s, n, i, 2)) < 0 || mi > 59) return -1;
    if (*i < n && s[*i] == ':') {
        (*i)++;
        if ((sec = digits(s, n, i, 2)) < 0 || sec > 59) return -1;
        if (*i < n && s[*i] == '.') {
            int k = 0;
            for ((*i)++; *i < n && s[*i] >= '0' && s[*i] <= '9'; (*i)++, k++) {
                if (k >= 6) return -1; /* finer than a microsecond would be lost */
                f = f * 10 + (s[*i] - '0');
            }
            if (k == 0) return -1;
            for (; k < 6; k++) f *= 10;
        }
    }
    *us = ((h * 60 + mi) * 60 + sec) * 1000000 + f;
    return h == 24 && *us != 86400000000LL ? -1 : 0; /* 24:00:00 and nothing after it */
}

/* An interval without months or days, as PostgreSQL prints it
 * ("-10303:05:06.789", "00:00:00.000001"), or a bare count of microseconds
 * (a replica written before intervals were stored as text), into *us. */
static int parse_interval(const char *s, size_t n, int64_t *us)
{
    if (!memchr(s, ':', n)) return parse_int(s, n, INT64_MIN, INT64_MAX, us);
    size_t i = 0;
    int neg = n && s[0] == '-';
    i += neg;
    uint64_t h = 0;
    size_t h0 = i;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (h > (uint64_t)INT64_MAX / 36000000000ULL) return -1;
        h = h * 10 + (uint64_t)(s[i] - '0');
    }
    if (i - h0 < 2 || i >= n || s[i++] != ':') return -1;
    int64_t rest;
    /* minutes, seconds and the fraction, as a time of day's */
    char t[32];
    if (n - i + 3 > sizeof t) return -1;
    memcpy(t, "00:", 3);
    memcpy(t + 3, s + i, n - i);
    size_t j = 0;
    if (parse_hms(t, n - i + 3, &j, 0, &rest) || j != n - i + 3) return -1;
    uint64_t v = h * 3600000000ULL + (uint64_t)rest;
    if (v > (uint64_t)INT64_MAX + neg) return -1; /* -2^63 is one more than 2^63 - 1 */
    *us = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* s[*i..n) is " BC" (the rest of the text).  Advances past it. */
static int bc_suffix(const char *s, size_t n, size_t *i)
{
    if (n - *i == 3 && !memcmp(s + *i, " BC", 3)) {
        *i = n;
        return 1;
    }
    return 0;
}

/* PostgreSQL's 'infinity' and '-infinity' of a date or timestamp.  They are
 * written as the largest value and its negation (INT32_MAX / -INT32_MAX
 * days, INT64_MAX / -INT64_MAX microseconds), which DuckDB reads as its
 * infinities (isinf() true); the most negative integer, written for
 * '-infinity' before, is an ordinary date or timestamp to it. */
static int is_infinity(const char *s, size_t n, int *sign)
{
    if (n == 8 && !memcmp(s, "infinity", 8)) return *sign = 1, 1;
    if (n == 9 && !memcmp(s, "-infinity", 9)) return *sign = -1, 1;
    return 0;
}

/* A date: "YYYY-MM-DD[ BC]" in days since 1970-01-01. */
static int parse_date(const char *s, size_t n, int64_t *out)
{
    int sign;
    if (is_infinity(s, n, &sign)) return *out = sign > 0 ? INT32_MAX : -INT32_MAX, 0;
    size_t i = 0;
    int64_t y;
    unsigned m, d;
    if (parse_ymd(s, n, &i, &y, &m, &d)) return -1;
    if (bc_suffix(s, n, &i)) {
        if (y <= 0) return -1;
        y = 1 - y;
    }
    if (i != n) return -1;
    int64_t days = days_from_civil(y, m, d);
    if (days <= INT32_MIN || days >= INT32_MAX) return -2;
    *out = days;
    return 0;
}

/* days * 86400e6 + us without overflow.  0 ok. */
static int micros(int64_t days, int64_t us, int64_t *out)
{
    int64_t t;
    if (__builtin_mul_overflow(days, 86400000000LL, &t) || __builtin_add_overflow(t, us, &t)) return -1;
    *out = t;
    return 0;
}

/* A timestamp: "YYYY-MM-DD HH:MM:SS[.ffffff][ BC]" in microseconds since
 * 1970-01-01 00:00; with zoned, an offset ("Z", "+hh", "+hh:mm", "+hhmm",
 * "+hh:mm:ss") follows the time and the result is UTC. */
static int parse_ts(const char *s, size_t n, int zoned, int64_t *out)
{
    int sign;
    if (is_infinity(s, n, &sign)) return *out = sign > 0 ? INT64_MAX : -INT64_MAX, 0;
    size_t i = 0;
    int64_t y, tod, off = 0;
    unsigned m, d;
    if (parse_ymd(s, n, &i, &y, &m, &d)) return -1;
    if (i >= n || (s[i] != ' ' && s[i] != 'T')) return -1;
    i++;
    if (parse_hms(s, n, &i, 23, &tod)) return -1;
    if (zoned) {
        if (i < n && s[i] == 'Z') {
            i++;
        } else if (i < n && (s[i] == '+' || s[i] == '-')) {
            int neg = s[i++] == '-';
            int64_t oh = digits(s, n, &i, 2), om = 0, os = 0;
            if (oh < 0 || oh > 15) return -1;
            if (i < n && s[i] == ':') i++;
            if (i < n && s[i] >= '0' && s[i] <= '9') {
                if ((om = digits(s, n, &i, 2)) < 0 || om > 59) return -1;
                if (i < n && s[i] == ':') {
                    i++;
                    if ((os = digits(s, n, &i, 2)) < 0 || os > 59) return -1;
                }
            }
            off = ((oh * 60 + om) * 60 + os) * 1000000;
            if (neg) off = -off;
        } else {
            return -1;
        }
    }
    if (bc_suffix(s, n, &i)) {
        if (y <= 0) return -1;
        y = 1 - y;
    }
    if (i != n) return -1;
    /* PostgreSQL's last timestamps (to 294276 AD) are past INT64 microseconds
     * since 1970 (294247-01-10): -2, out of range */
    return micros(days_from_civil(y, m, d), tod - off, out) ? -2 : 0;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" (or the 32 digits alone). */
static int parse_uuid(const char *s, size_t n, unsigned char *u)
{
    if (n != 36 && n != 32) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (n == 36 && (i == 8 || i == 13 || i == 18 || i == 23)) {
            if (s[i] != '-') return -1;
            continue;
        }
        int hi = hexval((unsigned char)s[i]), lo = i + 1 < n ? hexval((unsigned char)s[i + 1]) : -1;
        if (hi < 0 || lo < 0) return -1;
        u[k++] = (unsigned char)(hi << 4 | lo);
        i++;
    }
    return k == 16 ? 0 : -1;
}

/* PostgreSQL's hex bytea "\x0a0b" into out. */
static int parse_bytea(const char *s, size_t n, cdc__buf *out)
{
    if (n < 2 || s[0] != '\\' || s[1] != 'x' || n % 2) return -1;
    cdc__buf_reserve(out, (n - 2) / 2 + 1); /* + 1: never a NULL buffer, even for "\x" */
    unsigned char *o = (unsigned char *)out->p + out->len;
    for (size_t i = 2; i < n; i += 2) {
        int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);
        if (hi < 0 || lo < 0) return -1;
        *o++ = (unsigned char)(hi << 4 | lo);
    }
    out->len += (n - 2) / 2;
    return 0;
}

/* A NUMERIC's text "-123.45" as the unscaled integer at scale (fewer
 * fraction digits are padded; more must be zeros), at most prec digits.
 * The digits go into 64 bits while there are at most 18 of them (below
 * 10^18: every NUMERIC(18) or narrower), into 128 bits past that: the
 * 128-bit multiplication per digit was a tenth of the row encoding's time. */
static const uint64_t p10u[19] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
                                  100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
                                  1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
                                  1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
                                  1000000000000000000ULL};

static int parse_decimal_slow(const char *s, size_t n, int scale, int prec, __int128 *out);

/* The common decimal first: [-+]digits[.digits], at most scale digits
 * after the point and at most 18 digits with the scale's zeros appended,
 * taken in one pass; anything else (more digits, zeros past the scale, a
 * bad character) goes to parse_decimal_slow, which also judges it.  The
 * one pass was written because the general one cost a twentieth of a
 * Parquet export of a table with one NUMERIC(12,2) column of six. */
static int parse_decimal(const char *s, size_t n, int scale, int prec, __int128 *out)
{
    size_t i = 0, fd = 0;
    int neg = 0;
    uint64_t v = 0;
    if (n && (s[0] == '-' || s[0] == '+')) neg = s[i++] == '-';
    size_t start = i;
    for (; i < n && (unsigned)(s[i] - '0') <= 9; i++) v = v * 10 + (unsigned)(s[i] - '0');
    size_t id = i - start;
    if (i < n && s[i] == '.') {
        size_t f0 = ++i;
        for (; i < n && (unsigned)(s[i] - '0') <= 9; i++) v = v * 10 + (unsigned)(s[i] - '0');
        fd = i - f0;
    }
    if (i != n || id + fd == 0 || fd > (size_t)scale || id + (size_t)scale > 18)
        return parse_decimal_slow(s, n, scale, prec, out);
    v *= p10u[scale - (int)fd];
    if (prec < 19 && v >= p10u[prec]) return -1; /* more digits than the precision */
    *out = neg ? -(__int128)v : (__int128)v;
    return 0;
}

static int parse_decimal_slow(const char *s, size_t n, int scale, int prec, __int128 *out)
{
    size_t i = 0;
    int neg = 0, nd = 0, fd = 0, any = 0, wide = 0;
    uint64_t v64 = 0;
    unsigned __int128 v = 0;
#define DEC_PUSH(dig)                                                                                           \
    do {                                                                                                        \
        if (!wide && nd > 18) wide = 1, v = v64;                                                                \
        if (wide) v = v * 10 + (unsigned)(dig);                                                                 \
        else v64 = v64 * 10 + (unsigned)(dig);                                                                  \
    } while (0)
    if (n && (s[0] == '-' || s[0] == '+')) neg = s[i++] == '-';
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
        if (nd || s[i] != '0') nd++;
        if (nd > prec) return -1;
        DEC_PUSH(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
            if (fd >= scale) {
                if (s[i] != '0') return -1; /* would be rounded: not this column's value */
                continue;
            }
            fd++;
            if (nd || s[i] != '0') nd++;
            if (nd > prec) return -1;
            DEC_PUSH(s[i] - '0');
        }
    }
    if (!any || i != n) return -1;
    for (; fd < scale; fd++) {
        if (nd) nd++;
        if (nd > prec) return -1;
        DEC_PUSH(0);
    }
#undef DEC_PUSH
    if (!wide) v = v64;
    *out = neg ? -(__int128)v : (__int128)v;
    return 0;
}

/* Parses one value of column c into cell.  0 ok, -1 bad. */
static int parse_cell(cdc__pq *pq, const pq_col *c, const char *s, size_t n, pq_cell *cell)
{
    switch (c->conv) {
    case C_STRING: case C_JSON:
        cell->p = s;
        cell->n = n;
        return 0;
    case C_BYTEA:
        cell->scratch = 1;
        cell->off = pq->scratch.len;
        if (parse_bytea(s, n, &pq->scratch)) return -1;
        cell->n = pq->scratch.len - cell->off;
        return 0;
    case C_UUID: return parse_uuid(s, n, cell->u);
    case C_BOOL:
        if ((n == 1 && s[0] == 't') || (n == 4 && !memcmp(s, "true", 4))) return cell->i = 1, 0;
        if ((n == 1 && s[0] == 'f') || (n == 5 && !memcmp(s, "false", 5))) return cell->i = 0, 0;
        return -1;
    case C_INT8: return parse_int(s, n, INT8_MIN, INT8_MAX, &cell->i);
    case C_INT16: return parse_int(s, n, INT16_MIN, INT16_MAX, &cell->i);
    case C_INT32: return parse_int(s, n, INT32_MIN, INT32_MAX, &cell->i);
    case C_INT64: return c->interval ? parse_interval(s, n, &cell->i) : parse_int(s, n, INT64_MIN, INT64_MAX, &cell->i);
    case C_FLOAT: return parse_real(s, n, 1, &cell->d);
    case C_DOUBLE: return parse_real(s, n, 0, &cell->d);
    case C_DECIMAL: return parse_decimal(s, n, c->scale, c->precision, &cell->x);
    case C_DATE: return parse_date(s, n, &cell->i);
    case C_TS: return parse_ts(s, n, 0, &cell->i);
    case C_TSTZ: return parse_ts(s, n, 1, &cell->i);
    case C_TIME: {
        size_t i = 0;
        return parse_hms(s, n, &i, 24, &cell->i) || i != n ? -1 : 0;
    }
    }
    return -1;
}

static const char *conv_name(int conv)
{
    static const char *names[] = {
        [C_STRING] = "text", [C_JSON] = "json", [C_BYTEA] = "bytea", [C_UUID] = "uuid",
        [C_BOOL] = "boolean", [C_INT8] = "int8", [C_INT16] = "smallint", [C_INT32] = "integer",
        [C_INT64] = "bigint", [C_FLOAT] = "real", [C_DOUBLE] = "double precision",
        [C_DECIMAL] = "numeric", [C_DATE] = "date", [C_TS] = "timestamp",
        [C_TSTZ] = "timestamp with time zone", [C_TIME] = "time",
    };
    return names[conv];
}

/* ---- Statistics ---- */

/* Bytewise order, shorter first on a tie.  Every string value is compared
 * with its column's min and max: the first 8 bytes (or the first byte)
 * decide most of them without a call to memcmp. */
static inline int bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    if (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    } else if (n && *(const unsigned char *)a != *(const unsigned char *)b) {
        return *(const unsigned char *)a < *(const unsigned char *)b ? -1 : 1;
    }
    int r = n ? memcmp(a, b, n) : 0;
    return r ? r : (an > bn) - (an < bn);
}

/* Compares the min (or max, when amax) of a with the min (max, bmax) of b
 * in the column's order. */
static int stat_cmp(const pq_col *c, const pq_stat *a, int amax, const pq_stat *b, int bmax)
{
    switch (c->conv) {
    case C_FLOAT: case C_DOUBLE: {
        double x = amax ? a->dmax : a->dmin, y = bmax ? b->dmax : b->dmin;
        return (x > y) - (x < y);
    }
    case C_DECIMAL: {
        __int128 x = amax ? a->xmax : a->xmin, y = bmax ? b->xmax : b->xmin;
        return (x > y) - (x < y);
    }
    case C_STRING: case C_JSON: case C_BYTEA: case C_UUID: {
        const cdc__buf *x = amax ? &a->bmax : &a->bmin, *y = bmax ? &b->bmax : &b->bmin;
        return bytes_cmp(x->p, x->len, y->p, y->len);
    }
    default: {
        int64_t x = amax ? a->imax : a->imin, y = bmax ? b->imax : b->imin;
        return (x > y) - (x < y);
    }
    }
}

static void buf_set(cdc__buf *b, const void *p, size_t n)
{
    b->len = 0;
    cdc__buf_put(b, p, n);
}

/* Folds the row group's statistics into the file's. */
static void stat_merge(const pq_col *c, pq_stat *f, const pq_stat *r)
{
    f->nulls += r->nulls;
    f->nan |= r->nan;
    if (!r->has) return;
    int first = !f->has;
    f->has = 1;
    if (first || stat_cmp(c, r, 0, f, 0) < 0) {
        f->imin = r->imin, f->dmin = r->dmin, f->xmin = r->xmin;
        buf_set(&f->bmin, r->bmin.p, r->bmin.len);
    }
    if (first || stat_cmp(c, r, 1, f, 1) > 0) {
        f->imax = r->imax, f->dmax = r->dmax, f->xmax = r->xmax;
        buf_set(&f->bmax, r->bmax.p, r->bmax.len);
    }
}

static void stat_reset(pq_stat *s)
{
    s->nulls = 0;
    s->has = 0;
    s->nan = 0;
}

/* The PLAIN bytes of the min (or max) in tmp or the buffer; their length. */
static size_t stat_bytes(const pq_col *c, const pq_stat *s, int max, unsigned char *tmp, const void **p)
{
    *p = tmp;
    switch (c->ptype) {
    case T_BOOLEAN: tmp[0] = (unsigned char)(max ? s->imax : s->imin); return 1;
    case T_INT32: { int32_t v = (int32_t)(max ? s->imax : s->imin); memcpy(tmp, &v, 4); return 4; }
    case T_INT64: { int64_t v = max ? s->imax : s->imin; memcpy(tmp, &v, 8); return 8; }
    case T_FLOAT: {
        /* The specification's rule for zeros: a min of zero is -0, a max +0. */
        float v = (float)(max ? s->dmax : s->dmin);
        if (v == 0) v = max ? 0.0f : -0.0f;
        memcpy(tmp, &v, 4);
        return 4;
    }
    case T_DOUBLE: {
        double v = max ? s->dmax : s->dmin;
        if (v == 0) v = max ? 0.0 : -0.0;
        memcpy(tmp, &v, 8);
        return 8;
    }
    case T_FLBA:
        if (c->conv == C_DECIMAL) {
            __int128 x = max ? s->xmax : s->xmin;
            for (int i = 0; i < c->width; i++) tmp[c->width - 1 - i] = (unsigned char)(x >> (8 * i));
            return (size_t)c->width;
        }
        __attribute__((fallthrough)); /* UUID bytes */
    default: {
        const cdc__buf *b = max ? &s->bmax : &s->bmin;
        *p = b->p;
        return b->len;
    }
    }
}

/* The Statistics struct of a column chunk (ColumnMetaData field 12). */
static void stat_thrift(tw *t, const pq_col *c, const pq_stat *s)
{
    unsigned char tmin[16], tmax[16];
    const void *pmin, *pmax;
    size_t nmin = 0, nmax = 0;
    if (s->has) {
        nmin = stat_bytes(c, s, 0, tmin, &pmin);
        nmax = stat_bytes(c, s, 1, tmax, &pmax);
    }
    int minmax = s->has && !s->nan && nmin <= PQ_MAX_STAT && nmax <= PQ_MAX_STAT;
    int legacy = minmax && (c->ptype == T_INT32 || c->ptype == T_INT64);
    tw_struct(t, 12);
    if (legacy) {
        tw_bin(t, 1, pmax, nmax);
        tw_bin(t, 2, pmin, nmin);
    }
    tw_i64(t, 3, (int64_t)s->nulls);
    if (minmax) {
        tw_bin(t, 5, pmax, nmax);
        tw_bin(t, 6, pmin, nmin);
    }
    tw_end(t);
}

/* ---- Rows ---- */

static inline void put_raw(cdc__buf *b, const void *p, size_t n)
{
    if (b->cap - b->len < n) cdc__buf_reserve(b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Appends a parsed value to its column and its statistics. */
static void col_add(pq_col *c, const pq_cell *v)
{
    pq_stat *s = &c->rg;
    int first = !s->has;
    switch (c->ptype) {
    case T_BOOLEAN: {
        char b = (char)v->i;
        put_raw(&c->vals, &b, 1);
        goto ints;
    }
    case T_INT32: {
        int32_t x = (int32_t)v->i;
        put_raw(&c->vals, &x, 4);
        goto ints;
    }
    case T_INT64:
        put_raw(&c->vals, &v->i, 8);
    ints:
        if (first || v->i < s->imin) s->imin = v->i;
        if (first || v->i > s->imax) s->imax = v->i;
        s->has = 1;
        break;
    case T_FLOAT: case T_DOUBLE:
        if (c->ptype == T_FLOAT) {
            float f = (float)v->d;
            put_raw(&c->vals, &f, 4);
        } else {
            put_raw(&c->vals, &v->d, 8);
        }
        if (isnan(v->d)) {
            s->nan = 1;
            break;
        }
        if (first || v->d < s->dmin) s->dmin = v->d;
        if (first || v->d > s->dmax) s->dmax = v->d;
        s->has = 1;
        break;
    case T_FLBA:
        if (c->conv == C_DECIMAL) {
            /* The low width bytes of x, big-endian: x shifted to the top
             * of 16 bytes and byte-swapped, all 16 stored (a copy of a
             * constant size) and width of them kept. */
            if (c->vals.cap - c->vals.len < 16) cdc__buf_reserve(&c->vals, 16);
            unsigned __int128 u = (unsigned __int128)v->x << (8 * (16 - c->width));
            uint64_t be[2] = {__builtin_bswap64((uint64_t)(u >> 64)), __builtin_bswap64((uint64_t)u)};
            memcpy(c->vals.p + c->vals.len, be, 16);
            c->vals.len += (size_t)c->width;
            if (first || v->x < s->xmin) s->xmin = v->x;
            if (first || v->x > s->xmax) s->xmax = v->x;
            s->has = 1;
            break;
        }
        put_raw(&c->vals, v->u, 16);
        if (first || bytes_cmp(v->u, 16, s->bmin.p, 16) < 0) buf_set(&s->bmin, v->u, 16);
        if (first || bytes_cmp(v->u, 16, s->bmax.p, 16) > 0) buf_set(&s->bmax, v->u, 16);
        s->has = 1;
        break;
    default: { /* BYTE_ARRAY */
        uint32_t len = (uint32_t)v->n;
        if (c->vals.cap - c->vals.len < 4 + v->n) cdc__buf_reserve(&c->vals, 4 + v->n);
        memcpy(c->vals.p + c->vals.len, &len, 4);
        if (v->n) memcpy(c->vals.p + c->vals.len + 4, v->p, v->n);
        c->vals.len += 4 + v->n;
        if (first || bytes_cmp(v->p, v->n, s->bmin.p, s->bmin.len) < 0) buf_set(&s->bmin, v->p, v->n);
        if (first || bytes_cmp(v->p, v->n, s->bmax.p, s->bmax.len) > 0) buf_set(&s->bmax, v->p, v->n);
        s->has = 1;
    }
    }
    c->nvals++;
}

/* ---- Row groups ---- */

/* Definition levels of rows [r0, r1) in the RLE/bit-packed hybrid with bit
 * width 1, after their 4-byte length: runs of 8 or more equal levels as RLE
 * runs, the rest bit-packed in groups of 8 (the last group padded). */
static void encode_levels(cdc__buf *b, const unsigned char *lv, size_t n, int any_null)
{
    size_t at = b->len;
    cdc__buf_reserve(b, 4);
    b->len += 4;
    if (!any_null) {
        cdc__buf_put_varint(b, (uint64_t)n << 1);
        cdc__buf_putc(b, 1);
    } else {
        size_t i = 0;
        while (i < n) {
            size_t r = 1;
            while (i + r < n && lv[i + r] == lv[i]) r++;
            if (r >= 8) {
                cdc__buf_put_varint(b, (uint64_t)r << 1);
                cdc__buf_putc(b, (char)lv[i]);
                i += r;
                continue;
            }
            /* Bit-pack groups of 8 until a long run starts at a group boundary. */
            size_t start = i, groups = 0;
            do {
                groups++;
                i += 8;
                if (i >= n) break;
                r = 1;
                while (i + r < n && r < 16 && lv[i + r] == lv[i]) r++;
            } while (r < 16);
            cdc__buf_put_varint(b, (uint64_t)groups << 1 | 1);
            cdc__buf_reserve(b, groups);
            for (size_t g = 0; g < groups; g++) {
                unsigned char byte = 0;
                for (size_t k = 0; k < 8; k++) {
                    size_t j = start + g * 8 + k;
                    if (j < n && lv[j]) byte |= (unsigned char)(1u << k);
                }
                b->p[b->len++] = (char)byte;
            }
            if (i > n) i = n;
        }
    }
    uint32_t len = (uint32_t)(b->len - at - 4);
    memcpy(b->p + at, &len, 4);
}

/* Compresses pq->page into pq->z with the writer's codec; returns the
 * bytes to write (pq->page itself when uncompressed). */
static const cdc__buf *compress_page(cdc__pq *pq)
{
    const cdc__buf *in = &pq->page;
    cdc__buf *z = &pq->z;
    z->len = 0;
    if (pq->o.compression == CDC__PQ_ZSTD) {
        size_t cap = ZSTD_compressBound(in->len);
        cdc__buf_reserve(z, cap);
        size_t r = ZSTD_compressCCtx(pq->zc, z->p, cap, in->p, in->len, pq->o.zstd_level);
        if (ZSTD_isError(r)) cdc__oom(cap); /* only a too small destination fails, and it is not */
        z->len = r;
        return z;
    }
    if (pq->o.compression == CDC__PQ_SNAPPY) {
        size_t cap = snappy_max_compressed_length(in->len);
        cdc__buf_reserve(z, cap);
        if (snappy_compress(in->p, in->len, z->p, &cap) != SNAPPY_OK) cdc__oom(cap);
        z->len = cap;
        return z;
    }
    return in;
}

static inline int32_t ld_i32(const char *p)
{
    int32_t x;
    memcpy(&x, p, 4);
    return x;
}

static inline int64_t ld_i64(const char *p)
{
    int64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* DELTA_BINARY_PACKED (parquet-format Encodings.md) of the nv >= 1 PLAIN
 * integers at v, of w bytes each (4: INT32, 8: INT64), appended to b:
 * blocks of 128 values in 4 miniblocks of 32.  The header (block size,
 * miniblocks per block, value count, the first value zigzag), then per
 * block its least delta (zigzag), the 4 miniblocks' bit widths and the
 * miniblocks, each value less the least delta bit-packed from the least
 * significant bit; the last miniblock padded with zeros to 32 values, and
 * the last block's unused miniblocks left out with a width of 0.  Deltas
 * wrap around in the type's width, as readers undo them.  Gives up (-1,
 * having appended some of it) once it has appended more than limit bytes. */
static int encode_delta(cdc__buf *b, const char *v, size_t nv, int w, size_t limit)
{
    size_t at = b->len;
    int64_t prev, x;
#define DELTA_AT(i) (w == 4 ? (int64_t)ld_i32(v + 4 * (i)) : ld_i64(v + 8 * (i)))
    prev = DELTA_AT(0);
    cdc__buf_put_varint(b, 128);
    cdc__buf_put_varint(b, 4);
    cdc__buf_put_varint(b, nv);
    cdc__buf_put_varint(b, zigzag(prev));
    uint64_t d[128];
    for (size_t i = 1; i < nv;) {
        size_t n = nv - i < 128 ? nv - i : 128;
        int64_t min = 0;
        for (size_t k = 0; k < n; k++) {
            x = DELTA_AT(i + k);
            int64_t dl = w == 4 ? (int64_t)(int32_t)((uint32_t)x - (uint32_t)prev) : (int64_t)((uint64_t)x - (uint64_t)prev);
            d[k] = (uint64_t)dl;
            if (k == 0 || dl < min) min = dl;
            prev = x;
        }
        for (size_t k = 0; k < n; k++) {
            d[k] -= (uint64_t)min;
            if (w == 4) d[k] &= 0xffffffffu;
        }
        for (size_t k = n; k < 128; k++) d[k] = 0;
        cdc__buf_put_varint(b, zigzag(min));
        size_t nmb = (n + 31) / 32;
        unsigned char bw[4] = {0, 0, 0, 0};
        for (size_t m = 0; m < nmb; m++) {
            uint64_t any = 0;
            for (size_t k = m * 32; k < m * 32 + 32; k++) any |= d[k];
            bw[m] = (unsigned char)(any ? 64 - __builtin_clzll(any) : 0);
        }
        cdc__buf_put(b, bw, 4);
        for (size_t m = 0; m < nmb; m++) {
            unsigned width = bw[m];
            if (!width) continue;
            cdc__buf_reserve(b, 4 * width);
            unsigned char *o = (unsigned char *)b->p + b->len;
            unsigned __int128 acc = 0;
            unsigned bits = 0;
            for (size_t k = m * 32; k < m * 32 + 32; k++) {
                acc |= (unsigned __int128)d[k] << bits;
                bits += width;
                while (bits >= 8) {
                    *o++ = (unsigned char)acc;
                    acc >>= 8;
                    bits -= 8;
                }
            }
            b->len += 4 * width; /* 32 values of width bits: whole bytes */
        }
        i += n;
        if (b->len - at > limit) return -1;
    }
#undef DELTA_AT
    return b->len - at > limit ? -1 : 0;
}

/* Writes one data page of rows [r0, r1) (values vals[o0, o1), nv of them)
 * to out; adds its sizes to *usize and *csize. */
static void write_page(cdc__pq *pq, pq_col *c, size_t r0, size_t r1, size_t o0, size_t o1, size_t nv,
                       cdc__buf *out, uint64_t *usize, uint64_t *csize, unsigned *encs)
{
    cdc__buf *pg = &pq->page;
    int enc = ENC_PLAIN;
    pg->len = 0;
    /* levels are read only when some row is NULL, and then c->defs holds them */
    encode_levels(pg, c->with_defs ? (const unsigned char *)c->defs.p + r0 : NULL, r1 - r0, nv != r1 - r0);
    if (nv == 0) {
        /* every value NULL: no values (and maybe no buffer at all) */
    } else if (c->ptype == T_BOOLEAN) {
        const unsigned char *v = (const unsigned char *)c->vals.p + o0;
        size_t nb = (nv + 7) / 8;
        cdc__buf_reserve(pg, nb);
        memset(pg->p + pg->len, 0, nb);
        for (size_t k = 0; k < nv; k++)
            if (v[k]) pg->p[pg->len + k / 8] |= (char)(1u << (k % 8));
        pg->len += nb;
    } else {
        /* Integers as deltas when that takes at most a quarter of PLAIN's
         * bytes: a key column in key order (the export's order) or any
         * slowly growing one, such as a sequence or a timestamp of
         * insertion.  Otherwise PLAIN: packed deltas of unordered values
         * save less, and the compressor then finds less to save. */
        size_t at = pg->len;
        if (c->ptype == T_INT32 || c->ptype == T_INT64) {
            if (encode_delta(pg, c->vals.p + o0, nv, c->ptype == T_INT32 ? 4 : 8, (o1 - o0) / 4) == 0)
                enc = ENC_DELTA_BINARY_PACKED;
            else pg->len = at;
        }
        if (enc == ENC_PLAIN) cdc__buf_put(pg, c->vals.p + o0, o1 - o0);
    }
    if (nv) *encs |= 1u << enc; /* a page of NULLs only has no values to encode */
    const cdc__buf *body = compress_page(pq);
    cdc__buf *h = &pq->hdr;
    h->len = 0;
    tw t;
    tw_init(&t, h);
    tw_push(&t);
    tw_i32(&t, 1, 0); /* DATA_PAGE */
    tw_i32(&t, 2, (int32_t)pg->len);
    tw_i32(&t, 3, (int32_t)body->len);
    tw_struct(&t, 5); /* DataPageHeader */
    tw_i32(&t, 1, (int32_t)(r1 - r0));
    tw_i32(&t, 2, enc);
    tw_i32(&t, 3, ENC_RLE);
    tw_i32(&t, 4, ENC_RLE);
    tw_end(&t);
    tw_end(&t);
    cdc__buf_put(out, h->p, h->len);
    cdc__buf_put(out, body->p, body->len);
    *usize += h->len + pg->len;
    *csize += h->len + body->len;
}

/* Encodes the buffered row group to out and its RowGroup to pq->rgs, then
 * empties the buffers. */
static void flush_row_group(cdc__pq *pq, cdc__buf *out, uint64_t offset)
{
    if (pq->nrgs == pq->caprgs) {
        pq->caprgs = pq->caprgs ? 2 * pq->caprgs : 16;
        pq->rg = cdc__realloc(pq->rg, pq->caprgs * sizeof *pq->rg);
        pq->ch = cdc__realloc(pq->ch, pq->caprgs * (pq->ncols ? pq->ncols : 1) * sizeof *pq->ch);
    }
    pq_rg *rg = &pq->rg[pq->nrgs];
    rg->start = offset + out->len;
    rg->total_u = rg->total_c = 0;
    rg->rows = pq->rg_rows;
    for (size_t k = 0; k < pq->ncols; k++) {
        pq_col *c = &pq->cols[k];
        pq_chunk *ch = &pq->ch[pq->nrgs * pq->ncols + k];
        uint64_t usize = 0, csize = 0;
        ch->start = offset + out->len;
        ch->encs = 0;
        size_t r0 = 0, o0 = 0, v0 = 0;
        for (size_t p = 0; p <= c->ncuts; p++) {
            size_t r1 = p < c->ncuts ? c->cuts[p].row : pq->rg_rows;
            size_t o1 = p < c->ncuts ? c->cuts[p].off : c->vals.len;
            size_t v1 = p < c->ncuts ? c->cuts[p].nvals : c->nvals;
            if (r1 > r0)
                write_page(pq, c, r0, r1, o0, o1, v1 - v0, out, &usize, &csize, &ch->encs);
            r0 = r1, o0 = o1, v0 = v1;
        }
        ch->usize = usize;
        ch->csize = csize;
        rg->total_u += usize;
        rg->total_c += csize;
        /* The Statistics struct as it reads after ColumnMetaData field 9. */
        tw ts;
        tw_init(&ts, &pq->stb);
        ts.last[0] = 9;
        ch->st_off = pq->stb.len;
        stat_thrift(&ts, c, &c->rg);
        ch->st_len = pq->stb.len - ch->st_off;
        /* The row group's statistics join the file's; the buffers empty. */
        stat_merge(c, &c->file, &c->rg);
        stat_reset(&c->rg);
        c->vals.len = c->defs.len = 0;
        c->nvals = c->ncuts = c->page_off = 0;
        c->with_defs = 0;
    }
    pq->nrgs++;
    pq->rg_rows = 0;
    pq->rg_bytes = 0;
}

/* The footer's list of RowGroup structs. */
static void put_row_groups(cdc__pq *pq, tw *t)
{
    static const int codec[] = {[CDC__PQ_ZSTD] = CODEC_ZSTD, [CDC__PQ_SNAPPY] = CODEC_SNAPPY,
                                [CDC__PQ_NONE] = CODEC_UNCOMPRESSED};
    tw_list(t, 4, TT_STRUCT, pq->nrgs);
    for (size_t i = 0; i < pq->nrgs; i++) {
        const pq_rg *rg = &pq->rg[i];
        tw_push(t);
        tw_list(t, 1, TT_STRUCT, pq->ncols);
        for (size_t k = 0; k < pq->ncols; k++) {
            const pq_col *c = &pq->cols[k];
            const pq_chunk *ch = &pq->ch[i * pq->ncols + k];
            tw_push(t); /* ColumnChunk */
            tw_i64(t, 2, (int64_t)ch->start);
            tw_struct(t, 3); /* ColumnMetaData */
            tw_i32(t, 1, c->ptype);
            /* the values' encodings (PLAIN when every page is NULL) and RLE, the levels' */
            unsigned encs = ch->encs ? ch->encs : 1u << ENC_PLAIN;
            tw_list(t, 2, TT_I32, (size_t)__builtin_popcount(encs) + 1);
            for (int e = 0; e < 32; e++)
                if (encs & (1u << e)) cdc__buf_put_varint(t->b, zigzag(e));
            cdc__buf_put_varint(t->b, zigzag(ENC_RLE));
            tw_list(t, 3, TT_BINARY, 1);
            cdc__buf_put_varint(t->b, strlen(c->name));
            cdc__buf_puts(t->b, c->name);
            tw_i32(t, 4, codec[pq->o.compression]);
            tw_i64(t, 5, (int64_t)rg->rows);
            tw_i64(t, 6, (int64_t)ch->usize);
            tw_i64(t, 7, (int64_t)ch->csize);
            tw_i64(t, 9, (int64_t)ch->start);
            cdc__buf_put(t->b, pq->stb.p + ch->st_off, ch->st_len);
            t->last[t->d] = 12;
            tw_end(t);
            tw_end(t);
        }
        tw_i64(t, 2, (int64_t)rg->total_u);
        tw_i64(t, 3, (int64_t)rg->rows);
        tw_i64(t, 5, (int64_t)rg->start);
        tw_i64(t, 6, (int64_t)rg->total_c);
        if (i <= INT16_MAX) { /* the ordinal is an i16: left out past it */
            tw_field(t, 7, TT_I16);
            cdc__buf_put_varint(t->b, zigzag((int64_t)i));
        }
        tw_end(t);
    }
}

/* ---- API ---- */

int cdc__pq_open(const char *const *names, const char *const *types, size_t ncols, const cdc__pq_options *o,
                 cdc__pq **out, cdc_error_t *err)
{
    *out = NULL;
    cdc__pq_options opt = o ? *o : (cdc__pq_options){0};
    if (opt.compression < CDC__PQ_ZSTD || opt.compression > CDC__PQ_NONE)
        return cdc__err(err, CDC_EINVAL, "parquet: unknown compression %d", opt.compression);
    if (opt.zstd_level < 0 || opt.zstd_level > ZSTD_maxCLevel())
        return cdc__err(err, CDC_EINVAL, "parquet: zstd level %d outside 0..%d", opt.zstd_level, ZSTD_maxCLevel());
    if (!opt.row_group_rows) opt.row_group_rows = 1000000;
    if (opt.row_group_rows > INT32_MAX) opt.row_group_rows = INT32_MAX; /* num_values is an i32 per page */
    if (!opt.zstd_level) opt.zstd_level = 1;
    for (size_t k = 0; k < ncols; k++)
        if (!names[k] || !names[k][0]) return cdc__err(err, CDC_EINVAL, "parquet: column %zu has no name", k + 1);
    cdc__pq *pq = cdc__calloc(1, sizeof *pq);
    pq->o = opt;
    pq->ncols = ncols;
    pq->cols = cdc__calloc(ncols ? ncols : 1, sizeof *pq->cols);
    pq->cells = cdc__calloc(ncols ? ncols : 1, sizeof *pq->cells);
    for (size_t k = 0; k < ncols; k++) {
        pq->cols[k].name = cdc__strdup(names[k]);
        pq_col *c = &pq->cols[k];
        col_type(c, types ? types[k] : NULL);
        c->plain_bytes = c->ptype == T_BOOLEAN ? 1 : c->ptype == T_INT32 || c->ptype == T_FLOAT ? 4
                         : c->ptype == T_FLBA ? c->width : 8;
    }
    if (opt.compression == CDC__PQ_ZSTD) {
        pq->zc = ZSTD_createCCtx();
        if (!pq->zc) cdc__oom(0);
    }
    *out = pq;
    return 0;
}

static void start(cdc__pq *pq, cdc__buf *out)
{
    if (pq->started) return;
    if (!pq->o.continuation) cdc__buf_put(out, "PAR1", 4);
    pq->started = 1;
}

int cdc__pq_flush(cdc__pq *pq, cdc__buf *out, uint64_t offset, cdc_error_t *err)
{
    if (pq->ended) return cdc__err(err, CDC_EINVAL, "parquet: the file was already ended");
    start(pq, out);
    if (pq->rg_rows) flush_row_group(pq, out, offset);
    return 0;
}

int cdc__pq_adopt(cdc__pq *pq, const cdc__pq *from, uint64_t shift, cdc_error_t *err)
{
    if (pq->ended || from->rg_rows || from->ncols != pq->ncols)
        return cdc__err(err, CDC_EINVAL, "parquet: cannot adopt the row groups of another writer here");
    for (size_t k = 0; k < pq->ncols; k++)
        if (strcmp(pq->cols[k].name, from->cols[k].name) || pq->cols[k].ptype != from->cols[k].ptype)
            return cdc__err(err, CDC_EINVAL, "parquet: cannot adopt row groups of other columns");
    for (size_t i = 0; i < from->nrgs; i++) {
        if (pq->nrgs == pq->caprgs) {
            pq->caprgs = pq->caprgs ? 2 * pq->caprgs : 16;
            pq->rg = cdc__realloc(pq->rg, pq->caprgs * sizeof *pq->rg);
            pq->ch = cdc__realloc(pq->ch, pq->caprgs * (pq->ncols ? pq->ncols : 1) * sizeof *pq->ch);
        }
        pq_rg *rg = &pq->rg[pq->nrgs];
        *rg = from->rg[i];
        rg->start += shift;
        for (size_t k = 0; k < pq->ncols; k++) {
            pq_chunk *ch = &pq->ch[pq->nrgs * pq->ncols + k];
            *ch = from->ch[i * from->ncols + k];
            ch->start += shift;
            size_t off = pq->stb.len;
            cdc__buf_put(&pq->stb, from->stb.p + ch->st_off, ch->st_len);
            ch->st_off = off;
        }
        pq->nrgs++;
    }
    for (size_t k = 0; k < pq->ncols; k++) stat_merge(&pq->cols[k], &pq->cols[k].file, &from->cols[k].file);
    pq->rows += from->rows;
    return 0;
}

int cdc__pq_row(cdc__pq *pq, const char *const *values, const size_t *lens, cdc__buf *out, uint64_t offset,
                cdc_error_t *err)
{
    if (pq->ended) return cdc__err(err, CDC_EINVAL, "parquet: a row after the end of the file");
    /* 1. Parse the whole row, so that a bad value leaves nothing behind. */
    pq->scratch.len = 0;
    size_t row_bytes = 0;
    for (size_t k = 0; k < pq->ncols; k++) {
        pq_cell *cell = &pq->cells[k];
        cell->scratch = 0;
        cell->null = values[k] == NULL;
        if (cell->null) continue;
        int prc = parse_cell(pq, &pq->cols[k], values[k], lens[k], cell);
        if (prc) {
            int n = lens[k] > 200 ? 200 : (int)lens[k];
            if (prc == -2)
                return cdc__err(err, CDC_EINVAL,
                                "parquet: column %s: '%.*s'%s is outside the range of a Parquet %s (%s since "
                                "1970-01-01)",
                                pq->cols[k].name, n, values[k], lens[k] > 200 ? "..." : "",
                                conv_name(pq->cols[k].conv),
                                pq->cols[k].conv == C_DATE ? "a 32-bit count of days" : "a 64-bit count of microseconds");
            return cdc__err(err, CDC_EINVAL, "parquet: column %s: '%.*s'%s is not a valid %s value%s",
                            pq->cols[k].name, n, values[k], lens[k] > 200 ? "..." : "",
                            conv_name(pq->cols[k].conv),
                            pq->cols[k].conv == C_DECIMAL ? " for its precision and scale" : "");
        }
    }
    start(pq, out);
    /* 2. Buffer it, with a page boundary where a page has its 1 MiB. */
    for (size_t k = 0; k < pq->ncols; k++) {
        pq_col *c = &pq->cols[k];
        pq_cell *cell = &pq->cells[k];
        if (cell->null) {
            if (!c->with_defs) { /* the row group's first NULL: the levels of the rows before */
                cdc__buf_reserve(&c->defs, pq->rg_rows + 1);
                memset(c->defs.p, 1, pq->rg_rows);
                c->defs.len = pq->rg_rows;
                c->with_defs = 1;
            }
            cdc__buf_putc(&c->defs, 0);
            c->rg.nulls++;
        } else {
            if (c->with_defs) cdc__buf_putc(&c->defs, 1);
            if (cell->scratch) cell->p = pq->scratch.p + cell->off;
            col_add(c, cell);
            row_bytes += c->ptype == T_BYTE_ARRAY ? 4 + cell->n : (size_t)c->plain_bytes;
        }
        if (c->vals.len - c->page_off >= PQ_PAGE_BYTES) {
            if (c->ncuts == c->capcuts) {
                c->capcuts = c->capcuts ? 2 * c->capcuts : 16;
                c->cuts = cdc__realloc(c->cuts, c->capcuts * sizeof *c->cuts);
            }
            c->cuts[c->ncuts++] = (pq_cut){pq->rg_rows + 1, c->vals.len, c->nvals};
            c->page_off = c->vals.len;
        }
    }
    /* The row group's size in memory: its values' PLAIN bytes and a level
     * byte per column (counted even while no level is buffered).  Reading
     * each column's buffer lengths before and after instead was a tenth of
     * this function's samples. */
    pq->rg_bytes += row_bytes + pq->ncols;
    pq->rows++;
    pq->rg_rows++;
    if (pq->rg_rows >= pq->o.row_group_rows || pq->rg_bytes >= PQ_RG_BYTES) flush_row_group(pq, out, offset);
    return 0;
}

int cdc__pq_end(cdc__pq *pq, cdc__buf *out, uint64_t offset, cdc_error_t *err)
{
    if (pq->ended) return cdc__err(err, CDC_EINVAL, "parquet: the file was already ended");
    pq->ended = 1;
    start(pq, out);
    if (pq->rg_rows) flush_row_group(pq, out, offset);
    size_t at = out->len;
    tw t;
    tw_init(&t, out);
    tw_push(&t);
    tw_i32(&t, 1, 2);
    tw_list(&t, 2, TT_STRUCT, pq->ncols + 1);
    tw_push(&t); /* the root */
    tw_bin(&t, 4, "schema", 6);
    tw_i32(&t, 5, (int32_t)pq->ncols);
    tw_end(&t);
    for (size_t k = 0; k < pq->ncols; k++) col_schema(&t, &pq->cols[k]);
    tw_i64(&t, 3, (int64_t)pq->rows);
    put_row_groups(pq, &t);
    const char *by = "cdcstore version 0.1.0";
    tw_bin(&t, 6, by, strlen(by));
    tw_list(&t, 7, TT_STRUCT, pq->ncols);
    for (size_t k = 0; k < pq->ncols; k++) { /* ColumnOrder { 1: TypeDefinedOrder {} } */
        tw_push(&t);
        tw_empty(&t, 1);
        tw_end(&t);
    }
    tw_end(&t);
    uint32_t len = (uint32_t)(out->len - at);
    cdc__buf_put(out, &len, 4);
    cdc__buf_put(out, "PAR1", 4);
    return 0;
}

uint64_t cdc__pq_rows(const cdc__pq *pq) { return pq->rows; }

void cdc__pq_free(cdc__pq *pq)
{
    if (!pq) return;
    for (size_t k = 0; k < pq->ncols; k++) {
        pq_col *c = &pq->cols[k];
        free(c->name);
        cdc__buf_free(&c->vals);
        cdc__buf_free(&c->defs);
        free(c->cuts);
        cdc__buf_free(&c->rg.bmin);
        cdc__buf_free(&c->rg.bmax);
        cdc__buf_free(&c->file.bmin);
        cdc__buf_free(&c->file.bmax);
    }
    free(pq->cols);
    free(pq->cells);
    cdc__buf_free(&pq->scratch);
    cdc__buf_free(&pq->page);
    cdc__buf_free(&pq->z);
    cdc__buf_free(&pq->hdr);
    free(pq->rg);
    free(pq->ch);
    cdc__buf_free(&pq->stb);
    ZSTD_freeCCtx(pq->zc);
    free(pq);
}

/* ---- Delta statistics ---- */

static void put_i128(cdc__buf *b, __int128 x, int scale)
{
    char tmp[48];
    int n = 0;
    unsigned __int128 u = x < 0 ? -(unsigned __int128)x : (unsigned __int128)x;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u || n <= scale);
    if (x < 0) cdc__buf_putc(b, '-');
    while (n > 0) {
        cdc__buf_putc(b, tmp[--n]);
        if (n == scale && scale) cdc__buf_putc(b, '.');
    }
}

/* "YYYY-MM-DD" of a day number when its year is 1 to 9999 (the years
 * Delta's readers parse).  0 ok, -1 outside. */
static int put_ymd(cdc__buf *b, int64_t days)
{
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 1 || y > 9999) return -1;
    cdc__buf_printf(b, "%04d-%02u-%02u", (int)y, m, d);
    return 0;
}

/* Appends the JSON value of column c's min (or max) from stat s as Delta
 * writes it; 0, or -1 (nothing appended) for a value Delta has no form for.
 * Timestamps with a zone are Delta's "timestamp", written to the
 * millisecond as Delta's writers do (the min rounded down, the max up, so
 * both stay bounds); timestamps without a zone, times, booleans, UUIDs and
 * bytes are left out, as are strings that are not UTF-8.  A string longer
 * than 32 characters is cut to them: the min as it is (a lower bound), the
 * max with U+10FFFF after it (an upper bound).  A column has both bounds or
 * neither (cdc__pq_stats_json): deltalake (1.6) reads a min without its max
 * as a max of null and then skips the file for every filter on the column,
 * whatever it holds. */
static int delta_value(cdc__buf *b, const pq_col *c, const pq_stat *s, int max)
{
    size_t at = b->len;
    switch (c->conv) {
    case C_INT8: case C_INT16: case C_INT32: case C_INT64:
        cdc__buf_put_i64(b, max ? s->imax : s->imin);
        return 0;
    case C_FLOAT: case C_DOUBLE: {
        double d = max ? s->dmax : s->dmin;
        if (!isfinite(d)) return -1;
        cdc__buf_printf(b, c->conv == C_FLOAT ? "%.9g" : "%.17g", d);
        return 0;
    }
    case C_DECIMAL:
        put_i128(b, max ? s->xmax : s->xmin, c->scale);
        return 0;
    case C_DATE:
        cdc__buf_putc(b, '"');
        if (put_ymd(b, max ? s->imax : s->imin)) break;
        cdc__buf_putc(b, '"');
        return 0;
    case C_TSTZ: {
        int64_t us = max ? s->imax : s->imin;
        int64_t ms = us / 1000 - (us % 1000 < 0);
        if (max && us % 1000 && ms < INT64_MAX / 1000) ms++;
        int64_t days = ms / 86400000 - (ms % 86400000 < 0), tod = ms - days * 86400000;
        cdc__buf_putc(b, '"');
        if (put_ymd(b, days)) break;
        cdc__buf_printf(b, "T%02d:%02d:%02d.%03dZ\"", (int)(tod / 3600000), (int)(tod / 60000 % 60),
                        (int)(tod / 1000 % 60), (int)(tod % 1000));
        return 0;
    }
    case C_STRING: case C_JSON: {
        const cdc__buf *v = max ? &s->bmax : &s->bmin;
        const unsigned char *p = (const unsigned char *)v->p;
        size_t i = 0, cps = 0;
        while (i < v->len && cps < PQ_DELTA_PREFIX) {
            size_t l = p[i] < 0x80 ? 1 : cdc__utf8_len(p + i, v->len - i);
            if (!l) return -1;
            i += l;
            cps++;
        }
        if (i < v->len && !cdc__utf8_valid(v->p + i, v->len - i)) return -1;
        /* A max cut to its prefix would be below the values it stands for:
         * U+10FFFF after the prefix makes it an upper bound again (as Delta's
         * own writer does), unless the cut text starts with U+10FFFF itself. */
        if (i < v->len && max && v->len - i >= 4 && !memcmp(v->p + i, "\xf4\x8f\xbf\xbf", 4)) return -1;
        cdc__json_put_string(b, v->p, i);
        if (i < v->len && max) {
            b->len--; /* the closing quote */
            cdc__buf_puts(b, "\xf4\x8f\xbf\xbf\"");
        }
        return 0;
    }
    default: return -1;
    }
    b->len = at;
    return -1;
}

void cdc__pq_stats_json(const cdc__pq *pq, cdc__buf *out)
{
    cdc__buf_printf(out, "{\"numRecords\":%llu", (unsigned long long)pq->rows);
    for (int max = 0; max < 2; max++) {
        cdc__buf_puts(out, max ? ",\"maxValues\":{" : ",\"minValues\":{");
        int any = 0;
        for (size_t k = 0; k < pq->ncols; k++) {
            const pq_col *c = &pq->cols[k];
            /* The written row groups' and the one being built. */
            const pq_stat *s = c->file.has ? &c->file : &c->rg;
            if (c->file.has && c->rg.has && stat_cmp(c, &c->rg, max, &c->file, max) * (max ? 1 : -1) > 0)
                s = &c->rg;
            if (!s->has || c->file.nan || c->rg.nan) continue;
            /* both bounds or neither: the other must be writable too */
            const pq_stat *o = c->file.has ? &c->file : &c->rg;
            if (c->file.has && c->rg.has && stat_cmp(c, &c->rg, !max, &c->file, !max) * (max ? -1 : 1) > 0)
                o = &c->rg;
            cdc__buf probe = {0};
            int other = delta_value(&probe, c, o, !max);
            cdc__buf_free(&probe);
            if (other) continue;
            size_t at = out->len;
            if (any) cdc__buf_putc(out, ',');
            cdc__json_put_string(out, c->name, strlen(c->name));
            cdc__buf_putc(out, ':');
            if (delta_value(out, c, s, max)) out->len = at;
            else any = 1;
        }
        cdc__buf_putc(out, '}');
    }
    cdc__buf_puts(out, ",\"nullCount\":{");
    for (size_t k = 0; k < pq->ncols; k++) {
        const pq_col *c = &pq->cols[k];
        if (k) cdc__buf_putc(out, ',');
        cdc__json_put_string(out, c->name, strlen(c->name));
        cdc__buf_putc(out, ':');
        cdc__buf_put_i64(out, (int64_t)(c->file.nulls + c->rg.nulls));
    }
    cdc__buf_puts(out, "}}");
}
