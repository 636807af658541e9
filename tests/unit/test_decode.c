/*
 * test_decode.c: unit tests of the Debezium decoder (ingest/decode.c).
 *
 * Each rule of the decoder has a test here: envelopes with and without
 * schemas, ops (including t and m), positions, tables, keys, values and
 * decimals, and every kind of bad input (each in its own test process, so a
 * crash names the case).  The pipeline document's 11 events are decoded with
 * their Kafka keys and as bare envelopes.  When real Debezium output captured
 * from the test stack is present in the .jsonl files of tests/data/debezium (kcat -J
 * lines), every record of every file must decode.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "internal.h"
#include "ingest.h"

/* What the decoder makes of a Debezium op letter. */
static int act(char op)
{
    return op == 'd' ? CDC__ACT_DELETE : op == 't' ? CDC__ACT_FLOOR : op == 'm' ? CDC__ACT_NOOP : CDC__ACT_UPSERT;
}

/* ---- Helpers ---- */

#define TOPIC "shop.public.orders"

/* Declared scales: public.orders.amount 2, any "price" column 3; declared
 * types: any "day" column a date, any "tms" column a time in milliseconds. */
static int scale_cb(void *opaque, const char *table, const char *column)
{
    int *calls = opaque;
    if (calls) (*calls)++;
    if (!strcmp(table, "public.orders") && !strcmp(column, "amount")) return 2;
    if (!strcmp(column, "price")) return 3;
    if (!strcmp(column, "day")) return CDC__COL_DATE;
    if (!strcmp(column, "tms")) return CDC__COL_TIME_MS;
    return -1;
}

static cdc_record_t rec_of(const char *topic, int64_t offset, const char *key, const char *value)
{
    cdc_record_t r = {0};
    r.topic = topic;
    r.partition = 0;
    r.offset = offset;
    r.key = key;
    r.key_len = key ? strlen(key) : 0;
    r.value = value;
    r.value_len = value ? strlen(value) : 0;
    return r;
}

/* Decodes value (and key) from topic shop.public.orders at offset 42.  With
 * no key, value is a bare envelope read from line 42 of orders.jsonl (no
 * Kafka record): a Kafka record without a key is refused (see
 * kafka_record_without_key_is_refused). */
static int dec(const char *key, const char *value, cdc__event *ev, cdc_error_t *err)
{
    cdc_record_t r = rec_of(TOPIC, 42, key, value);
    if (!key) {
        r = rec_of(TOPIC, -1, NULL, value);
        r.source = "orders.jsonl";
        r.line = 42;
    }
    memset(err, 0, sizeof *err);
    return cdc__decode_record(&r, scale_cb, NULL, ev, err);
}

/* Small ring of result strings, so helpers can return text without leaks. */
static char ring[16][8192];
static int ring_i;
static char *ring_next(void) { return ring[ring_i++ % 16]; }

/* The value of column name in the event row: its text, "<NULL>",
 * "<UNAVAILABLE>", or NULL when the row has no such column. */
static const char *col(const cdc__event *ev, const char *name)
{
    const char *p = ev->row.p, *end = p + ev->row.len;
    uint64_t n, nl, tag;
    if (!ev->row.len || cdc__get_varint(&p, end, &n)) return NULL;
    for (uint64_t i = 0; i < n; i++) {
        cr_assert(!cdc__get_varint(&p, end, &nl) && (uint64_t)(end - p) >= nl, "bad event row");
        int match = nl == strlen(name) && !memcmp(p, name, nl);
        p += nl;
        cr_assert(!cdc__get_varint(&p, end, &tag), "bad event row");
        size_t vl = tag >= CDC__V_TEXT ? (size_t)(tag - CDC__V_TEXT) : 0;
        cr_assert((size_t)(end - p) >= vl, "bad event row");
        if (match) {
            char *out = ring_next();
            if (tag == CDC__V_NULL) return "<NULL>";
            if (tag == CDC__V_UNAVAILABLE) return "<UNAVAILABLE>";
            cr_assert(vl < sizeof ring[0]);
            memcpy(out, p, vl);
            out[vl] = 0;
            return out;
        }
        p += vl;
    }
    return NULL;
}

/* The column names of the event row, comma-separated. */
static const char *cols(const cdc__event *ev)
{
    char *out = ring_next();
    out[0] = 0;
    const char *p = ev->row.p, *end = p + ev->row.len;
    uint64_t n, nl, tag;
    if (!ev->row.len || cdc__get_varint(&p, end, &n)) return out;
    for (uint64_t i = 0; i < n; i++) {
        cr_assert(!cdc__get_varint(&p, end, &nl));
        if (i) strcat(out, ",");
        strncat(out, p, nl);
        p += nl;
        cr_assert(!cdc__get_varint(&p, end, &tag));
        if (tag >= CDC__V_TEXT) p += tag - CDC__V_TEXT;
    }
    return out;
}

/* The event's key as JSON, named by its keycols: {"order_id":7}. */
static const char *keyjson(const cdc__event *ev)
{
    const char *p = ev->keycols.p, *end = p + ev->keycols.len;
    uint64_t n = 0, nl;
    char names[8][64];
    const char *np[8];
    if (ev->keycols.len) cr_assert(!cdc__get_varint(&p, end, &n));
    cr_assert(n <= 8);
    for (uint64_t i = 0; i < n; i++) {
        cr_assert(!cdc__get_varint(&p, end, &nl) && nl < 64);
        memcpy(names[i], p, nl);
        names[i][nl] = 0;
        np[i] = names[i];
        p += nl;
    }
    cr_assert(p == end, "keycols has trailing bytes");
    cdc__buf out = {0};
    cr_assert(cdc__key_to_json(ev->key.p, ev->key.len, np, (size_t)n, &out) == 0);
    char *s = ring_next();
    snprintf(s, sizeof ring[0], "%.*s", (int)out.len, out.p);
    cdc__buf_free(&out);
    return s;
}

/* Expects value to decode to CDC_EDECODE with a message containing what. */
static void expect_bad(const char *key, const char *value, const char *what)
{
    cdc__event ev = {0};
    cdc_error_t err;
    int rc = dec(key, value, &ev, &err);
    cr_assert_eq(rc, CDC_EDECODE, "expected CDC_EDECODE (%s) for %s, got %d", what, value, rc);
    cr_assert_eq(err.code, CDC_EDECODE);
    cr_assert(strstr(err.msg, what), "message \"%s\" does not contain \"%s\"", err.msg, what);
    const char *pos = key ? TOPIC "[0]@42: " : "orders.jsonl:42: ";
    cr_assert(strncmp(err.msg, pos, strlen(pos)) == 0, "message \"%s\" does not name the position %s", err.msg,
              pos);
    cr_assert_null(ev.table, "the event must stay untouched on error");
    cr_assert_null(ev.row.p);
}

/* Decodes one value into *ev, asserting success. */
static void expect_ok(const char *key, const char *value, cdc__event *ev)
{
    cdc_error_t err;
    int rc = dec(key, value, ev, &err);
    cr_assert_eq(rc, 0, "decode failed (%d): %s\n  value: %s", rc, err.msg, value);
}

/* The value of one column after decoding {"op":"c", after:{"id":1, <cols>}}. */
static const char *value_of(const char *after_cols, const char *column)
{
    char v[4096];
    snprintf(v, sizeof v, "{\"op\":\"c\",\"after\":{\"id\":1,%s},\"source\":{\"lsn\":5}}", after_cols);
    cdc__event ev = {0};
    expect_ok("{\"id\":1}", v, &ev);
    const char *s = col(&ev, column);
    cdc__event_free(&ev);
    return s;
}

/* ---- Tombstones and envelopes ---- */

Test(decode, tombstones)
{
    cdc__event ev = {0};
    cdc_error_t err;
    cdc_record_t r = rec_of(TOPIC, 8, "{\"order_id\":2}", NULL);
    cr_expect_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 1);
    cr_expect_eq(dec("{\"order_id\":2}", "null", &ev, &err), 1);
    cr_expect_eq(dec(NULL, " null\n", &ev, &err), 1);
    cr_expect_eq(dec(NULL, "{\"schema\":null,\"payload\":null}", &ev, &err), 1);
    cr_expect_null(ev.table);
    cr_expect_null(ev.row.p);
    /* a malformed key does not matter for a tombstone */
    cr_expect_eq(dec("{bad", "null", &ev, &err), 1);
}

/* The pipeline document's topic, offsets 1-11, with their Kafka keys. */
static const struct doc_event {
    int offset, key;
    const char *value;
    char op;
    uint64_t lsn;
    const char *status, *amount;
} doc_events[] = {
    {1, 1, "{\"op\":\"r\",\"after\":{\"order_id\":1,\"status\":\"paid\",\"amount\":\"25.00\"},\"source\":{\"lsn\":100}}", 'r', 100, "paid", "25.00"},
    {2, 2, "{\"op\":\"r\",\"after\":{\"order_id\":2,\"status\":\"paid\",\"amount\":\"10.00\"},\"source\":{\"lsn\":100}}", 'r', 100, "paid", "10.00"},
    {3, 1, "{\"op\":\"u\",\"after\":{\"order_id\":1,\"status\":\"shipped\",\"amount\":\"25.00\"},\"source\":{\"lsn\":120}}", 'u', 120, "shipped", "25.00"},
    {4, 3, "{\"op\":\"c\",\"after\":{\"order_id\":3,\"status\":\"new\",\"amount\":\"60.00\"},\"source\":{\"lsn\":130}}", 'c', 130, "new", "60.00"},
    {5, 1, "{\"op\":\"u\",\"after\":{\"order_id\":1,\"status\":\"shipped\",\"amount\":\"25.00\"},\"source\":{\"lsn\":120}}", 'u', 120, "shipped", "25.00"},
    {6, 3, "{\"op\":\"u\",\"after\":{\"order_id\":3,\"status\":\"paid\",\"amount\":\"60.00\"},\"source\":{\"lsn\":150}}", 'u', 150, "paid", "60.00"},
    {7, 2, "{\"op\":\"d\",\"before\":{\"order_id\":2},\"after\":null,\"source\":{\"lsn\":160}}", 'd', 160, NULL, NULL},
    {8, 2, NULL, 0, 0, NULL, NULL},
    {9, 3, "{\"op\":\"u\",\"after\":{\"order_id\":3,\"status\":\"new\",\"amount\":\"60.00\"},\"source\":{\"lsn\":140}}", 'u', 140, "new", "60.00"},
    {10, 2, "{\"op\":\"u\",\"after\":{\"order_id\":2,\"status\":\"refunded\",\"amount\":\"10.00\"},\"source\":{\"lsn\":155}}", 'u', 155, "refunded", "10.00"},
    {11, 4, "{\"op\":\"c\",\"after\":{\"order_id\":4,\"status\":\"paid\",\"amount\":\"15.00\"},\"source\":{\"lsn\":170}}", 'c', 170, "paid", "15.00"},
};

static void check_doc_events(int with_key)
{
    int tombstones = 0;
    for (size_t i = 0; i < sizeof doc_events / sizeof doc_events[0]; i++) {
        const struct doc_event *d = &doc_events[i];
        char key[64], want_key[64];
        snprintf(key, sizeof key, "{\"order_id\":%d}", d->key);
        snprintf(want_key, sizeof want_key, "{\"order_id\":%d}", d->key);
        /* without a key: the bare envelope of a file's line (no Kafka position) */
        cdc_record_t r = rec_of(TOPIC, with_key ? d->offset : -1, with_key ? key : NULL, d->value);
        cdc__event ev = {0};
        cdc_error_t err = {0};
        /* no scale callback: the document uses decimal.handling.mode=string */
        int rc = cdc__decode_record(&r, NULL, NULL, &ev, &err);
        if (!d->value) {
            cr_expect_eq(rc, 1, "offset %d is a tombstone", d->offset);
            tombstones++;
            continue;
        }
        cr_assert_eq(rc, 0, "offset %d: %s", d->offset, err.msg);
        cr_expect_eq(ev.action, act(d->op), "offset %d op", d->offset);
        cr_expect_eq(ev.lsn, d->lsn, "offset %d lsn", d->offset);
        cr_expect_str_eq(ev.table, "public.orders");
        cr_expect_eq(ev.snapshot, d->op == 'r' ? CDC__SNAP_TRUE : CDC__SNAP_NONE, "offset %d", d->offset);
        cr_expect_str_eq(keyjson(&ev), want_key, "offset %d key", d->offset);
        if (d->op == 'd') {
            cr_expect_str_eq(cols(&ev), "order_id");
        } else {
            cr_expect_str_eq(cols(&ev), "order_id,status,amount");
            cr_expect_str_eq(col(&ev, "status"), d->status, "offset %d", d->offset);
            cr_expect_str_eq(col(&ev, "amount"), d->amount, "offset %d", d->offset);
        }
        cr_expect_eq(ev.nunavailable, 0);
        cdc__event_free(&ev);
    }
    cr_expect_eq(tombstones, 1);
}

Test(decode, document_events_with_kafka_keys) { check_doc_events(1); }
Test(decode, document_events_as_bare_envelopes) { check_doc_events(0); }

Test(decode, document_update_envelope)
{
    /* The update shown in the document's Step 1, with source.table. */
    cdc__event ev = {0};
    cdc_error_t err = {0};
    cdc_record_t r = rec_of(TOPIC, 1, "{\"order_id\":7}",
                            "{\"before\": {\"order_id\": 7, \"status\": \"paid\", \"amount\": \"40.00\"},\n"
                            " \"after\":  {\"order_id\": 7, \"status\": \"shipped\", \"amount\": \"40.00\"},\n"
                            " \"source\": {\"lsn\": 23861720, \"txId\": 771, \"table\": \"orders\"},\n"
                            " \"op\": \"u\", \"ts_ms\": 1791196800123}");
    /* decimal.handling.mode=string: no scale declared, the text is kept */
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s", err.msg);
    cr_expect_eq(ev.action, act('u'));
    cr_expect_eq(ev.lsn, 23861720);
    cr_expect_eq(ev.ts_ms, 1791196800123LL);
    cr_expect_str_eq(ev.table, "public.orders"); /* no source.schema: from the topic */
    cr_expect_str_eq(col(&ev, "status"), "shipped");
    cr_expect_str_eq(col(&ev, "amount"), "40.00");
    cdc__event_free(&ev);
}

/* schemas.enable=true, as JsonConverter writes it for public.orders. */
static const char *SCHEMA_VALUE =
    "{\"schema\":{\"type\":\"struct\",\"fields\":["
    "{\"type\":\"struct\",\"fields\":["
    "{\"type\":\"int32\",\"optional\":false,\"field\":\"order_id\"},"
    "{\"type\":\"string\",\"optional\":true,\"field\":\"status\"}"
    "],\"optional\":true,\"name\":\"shop.public.orders.Value\",\"field\":\"before\"},"
    "{\"type\":\"struct\",\"fields\":["
    "{\"type\":\"int32\",\"optional\":false,\"field\":\"order_id\"},"
    "{\"type\":\"string\",\"optional\":true,\"field\":\"status\"},"
    "{\"type\":\"bytes\",\"optional\":true,\"name\":\"org.apache.kafka.connect.data.Decimal\",\"version\":1,"
    "\"parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":\"10\"},\"field\":\"amount\"},"
    "{\"type\":\"string\",\"optional\":true,\"field\":\"note\"},"
    "{\"type\":\"int64\",\"optional\":false,\"name\":\"io.debezium.time.MicroTimestamp\",\"version\":1,\"field\":\"created_at\"},"
    "{\"type\":\"boolean\",\"optional\":true,\"field\":\"paid\"},"
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"scale\"},"
    "{\"type\":\"bytes\",\"optional\":false,\"field\":\"value\"}],\"optional\":true,"
    "\"name\":\"io.debezium.data.VariableScaleDecimal\",\"version\":1,\"field\":\"weight_kg\"},"
    "{\"type\":\"string\",\"optional\":true,\"name\":\"io.debezium.time.ZonedTimestamp\",\"version\":1,\"field\":\"shipped_at\"},"
    "{\"type\":\"int32\",\"optional\":true,\"name\":\"io.debezium.time.Date\",\"version\":1,\"field\":\"due\"},"
    "{\"type\":\"int64\",\"optional\":true,\"name\":\"io.debezium.time.Timestamp\",\"version\":1,\"field\":\"ts3\"},"
    "{\"type\":\"int64\",\"optional\":true,\"name\":\"io.debezium.time.MicroTime\",\"version\":1,\"field\":\"at\"},"
    "{\"type\":\"float64\",\"optional\":true,\"field\":\"ratio\"},"
    "{\"type\":\"bytes\",\"optional\":true,\"field\":\"blob\"},"
    "{\"type\":\"int64\",\"optional\":true,\"field\":\"big\"}"
    "],\"optional\":true,\"name\":\"shop.public.orders.Value\",\"field\":\"after\"},"
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,\"field\":\"schema\"}],"
    "\"optional\":false,\"name\":\"io.debezium.connector.postgresql.Source\",\"field\":\"source\"},"
    "{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},"
    "{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ms\"}"
    "],\"optional\":false,\"name\":\"shop.public.orders.Envelope\",\"version\":2},"
    "\"payload\":{\"before\":null,\"after\":{%s},"
    "\"source\":{\"version\":\"3.6.1.Final\",\"connector\":\"postgresql\",\"name\":\"shop\","
    "\"ts_ms\":1709214307999,\"snapshot\":\"false\",\"db\":\"shop\",\"sequence\":\"[null,\\\"24023128\\\"]\","
    "\"schema\":\"public\",\"table\":\"orders\",\"txId\":780,\"lsn\":24023128,\"xmin\":null},"
    "\"op\":\"%s\",\"ts_ms\":1709214308000}}";

static const char *SCHEMA_KEY =
    "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,"
    "\"field\":\"order_id\"}],\"optional\":false,\"name\":\"shop.public.orders.Key\"},"
    "\"payload\":{\"order_id\":7}}";

static const char *SCHEMA_ROW =
    "\"order_id\":7,\"status\":\"paid\",\"amount\":\"AfQ=\",\"note\":\"__debezium_unavailable_value\","
    "\"created_at\":1709214307120000,\"paid\":true,\"weight_kg\":{\"scale\":3,\"value\":\"MDk=\"},"
    "\"shipped_at\":\"2024-02-29T13:45:07.12Z\",\"due\":19782,\"ts3\":1709214307120,\"at\":49507120000,"
    "\"ratio\":0.1,\"blob\":\"AQL/\",\"big\":9007199254740992";

static char *schema_value(const char *row, const char *op)
{
    char *s = ring_next();
    snprintf(s, sizeof ring[0], SCHEMA_VALUE, row, op);
    return s;
}

Test(decode, schemas_enabled)
{
    cdc__event ev = {0};
    int calls = 0;
    cdc_record_t r = rec_of("shop.public.orders", 3, SCHEMA_KEY, schema_value(SCHEMA_ROW, "u"));
    cdc_error_t err = {0};
    cr_assert_eq(cdc__decode_record(&r, scale_cb, &calls, &ev, &err), 0, "%s", err.msg);
    cr_expect_eq(ev.action, act('u'));
    cr_expect_eq(ev.lsn, 24023128);
    cr_expect_eq(ev.ts_ms, 1709214307999LL, "source.ts_ms wins over the envelope's");
    cr_expect_eq(ev.snapshot, CDC__SNAP_NONE);
    cr_expect_str_eq(ev.table, "public.orders");
    cr_expect_str_eq(keyjson(&ev), "{\"order_id\":7}");
    cr_expect_str_eq(cols(&ev), "order_id,status,amount,note,created_at,paid,weight_kg,shipped_at,due,ts3,at,"
                                "ratio,blob,big");
    cr_expect_str_eq(col(&ev, "order_id"), "7");
    cr_expect_str_eq(col(&ev, "status"), "paid");
    cr_expect_str_eq(col(&ev, "amount"), "5.00");
    cr_expect_str_eq(col(&ev, "note"), "<UNAVAILABLE>");
    cr_expect_eq(ev.nunavailable, 1);
    cr_expect_str_eq(col(&ev, "created_at"), "2024-02-29 13:45:07.12");
    cr_expect_str_eq(col(&ev, "paid"), "t");
    cr_expect_str_eq(col(&ev, "weight_kg"), "12.345");
    cr_expect_str_eq(col(&ev, "shipped_at"), "2024-02-29T13:45:07.12Z");
    cr_expect_str_eq(col(&ev, "due"), "2024-02-29");
    cr_expect_str_eq(col(&ev, "ts3"), "2024-02-29 13:45:07.12");
    cr_expect_str_eq(col(&ev, "at"), "13:45:07.12");
    cr_expect_str_eq(col(&ev, "ratio"), "0.1");
    cr_expect_str_eq(col(&ev, "blob"), "\\x0102ff");
    cr_expect_str_eq(col(&ev, "big"), "9007199254740992");
    cr_expect_eq(calls, 0, "with a schema the declared scales are not consulted");
    cdc__event_free(&ev);
}

Test(decode, schemas_enabled_delete_and_wrapped_null_key)
{
    const char *v =
        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\","
        "\"field\":\"order_id\"}],\"field\":\"before\"}]},"
        "\"payload\":{\"op\":\"d\",\"before\":{\"order_id\":9},\"after\":null,"
        "\"source\":{\"schema\":\"public\",\"table\":\"orders\",\"lsn\":77}}}";
    cdc__event ev = {0};
    expect_ok("{\"schema\":{\"type\":\"struct\"},\"payload\":{\"order_id\":9}}", v, &ev);
    cr_expect_eq(ev.action, act('d'));
    cr_expect_str_eq(keyjson(&ev), "{\"order_id\":9}");
    cr_expect_str_eq(col(&ev, "order_id"), "9");
    cdc__event_free(&ev);
    /* A wrapped null key payload is no key: a Kafka record of a table without one. */
    expect_bad("{\"schema\":null,\"payload\":null}", v, "the Kafka record has no key");
}

Test(decode, schema_time_edges)
{
    const char *fs =
        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
        "{\"type\":\"int32\",\"field\":\"id\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"a\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"b\"},"
        "{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"c\"},"
        "{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"d\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTime\",\"field\":\"e\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"f\"},"
        "{\"type\":\"float64\",\"field\":\"g\"},"
        "{\"type\":\"float32\",\"field\":\"h\"},"
        "{\"type\":\"int32\",\"name\":\"io.debezium.time.Time\",\"field\":\"i\"},"
        "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
        "\"parameters\":{\"scale\":0},\"field\":\"j\"}"
        "]}]},\"payload\":{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"id\":1,"
        "\"a\":-1,\"b\":-2208988800000000,\"c\":-719162,\"d\":-719163,\"e\":0,\"f\":1000000,"
        "\"g\":1e20,\"h\":\"NaN\",\"i\":3723004,\"j\":\"gA==\"}}}";
    cdc__event ev = {0};
    expect_ok("{\"id\":1}", fs, &ev);
    cr_expect_str_eq(col(&ev, "a"), "1969-12-31 23:59:59.999999");
    cr_expect_str_eq(col(&ev, "b"), "1900-01-01 00:00:00");
    cr_expect_str_eq(col(&ev, "c"), "0001-01-01");
    cr_expect_str_eq(col(&ev, "d"), "0001-12-31 BC");
    cr_expect_str_eq(col(&ev, "e"), "00:00:00");
    cr_expect_str_eq(col(&ev, "f"), "1970-01-01 00:00:01");
    cr_expect_str_eq(col(&ev, "g"), "1e+20", "a float64 column is printed as a float, even when integral");
    cr_expect_str_eq(col(&ev, "h"), "NaN");
    cr_expect_str_eq(col(&ev, "i"), "01:02:03.004");
    cr_expect_str_eq(col(&ev, "j"), "-128");
    cdc__event_free(&ev);
}

/* PostgreSQL's array output (array_out): elements quoted when empty, when
 * they read as NULL, or when they hold a brace, quote, backslash, comma or
 * white space; NULL elements bare; more dimensions nested.  Debezium sends
 * int[] and text[] as JSON arrays (schemas.enable=false as well). */
Test(decode, arrays_in_postgres_text)
{
    cr_expect_str_eq(value_of("\"a\":[]", "a"), "{}");
    cr_expect_str_eq(value_of("\"a\":[-2147483648,null,2147483647]", "a"), "{-2147483648,NULL,2147483647}");
    cr_expect_str_eq(value_of("\"a\":[-9223372036854775808,9223372036854775807]", "a"),
                     "{-9223372036854775808,9223372036854775807}", "bigint elements exact");
    cr_expect_str_eq(value_of("\"a\":[1.5,1.0E15,true,false,-0.0]", "a"), "{1.5,1e+15,t,f,-0}");
    cr_expect_str_eq(value_of("\"a\":[\"a b\",\"c,d\",null,\"q\\\"x\",\"\",\"NULL\",\"null\",\"\\\\\\\\\"]", "a"),
                     "{\"a b\",\"c,d\",NULL,\"q\\\"x\",\"\",\"NULL\",\"null\",\"\\\\\\\\\"}");
    cr_expect_str_eq(value_of("\"a\":[\"{}\",\"a\\tb\",\"x\\ny\",\"\\u00e9\\ud83d\\ude00\",\"NULLS\"]", "a"),
                     "{\"{}\",\"a\tb\",\"x\ny\",\xc3\xa9\xf0\x9f\x98\x80,NULLS}");
    cr_expect_str_eq(value_of("\"a\":[[1,2],[3,null]]", "a"), "{{1,2},{3,NULL}}");
    cr_expect_str_eq(value_of("\"a\":[{\"scale\":2,\"value\":\"AfQ=\"},null]", "a"), "{5.00,NULL}",
                     "numeric[] in precise mode: variable-scale elements");
    cr_expect_str_eq(value_of("\"a\":[{\"k\":1}]", "a"), "{\"{\\\"k\\\":1}\"}");
}

/* A float32 of a schema in PostgreSQL's float4 text: the shortest decimal
 * that reads back to the same float.  Debezium (Java 17's Float.toString)
 * sends 1e15::float4 as 9.9999999E14 and 1e-45::float4 as 1.4E-45. */
Test(decode, float32_in_float4_text)
{
    const char *fs =
        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
        "{\"type\":\"int32\",\"field\":\"id\"},"
        "{\"type\":\"float\",\"field\":\"a\"},{\"type\":\"float32\",\"field\":\"b\"},"
        "{\"type\":\"float32\",\"field\":\"c\"},{\"type\":\"float32\",\"field\":\"d\"},"
        "{\"type\":\"float32\",\"field\":\"e\"},{\"type\":\"float32\",\"field\":\"f\"},"
        "{\"type\":\"float32\",\"field\":\"g\"},{\"type\":\"float32\",\"field\":\"h\"},"
        "{\"type\":\"float32\",\"field\":\"i\"},{\"type\":\"float64\",\"field\":\"j\"}"
        "]}]},\"payload\":{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"id\":1,"
        "\"a\":9.9999999E14,\"b\":1.4E-45,\"c\":3.4028235E38,\"d\":1.1,\"e\":1234567.0,\"f\":123456,"
        "\"g\":1.0E-5,\"h\":-0.0,\"i\":\"-Infinity\",\"j\":9.9999999E14}}}";
    cdc__event ev = {0};
    expect_ok("{\"id\":1}", fs, &ev);
    cr_expect_str_eq(col(&ev, "a"), "1e+15");
    cr_expect_str_eq(col(&ev, "b"), "1e-45");
    cr_expect_str_eq(col(&ev, "c"), "3.4028235e+38");
    cr_expect_str_eq(col(&ev, "d"), "1.1");
    cr_expect_str_eq(col(&ev, "e"), "1.234567e+06", "float4 takes the exponent form from 10^6");
    cr_expect_str_eq(col(&ev, "f"), "123456");
    cr_expect_str_eq(col(&ev, "g"), "1e-05");
    cr_expect_str_eq(col(&ev, "h"), "-0");
    cr_expect_str_eq(col(&ev, "i"), "-Infinity");
    cr_expect_str_eq(col(&ev, "j"), "999999990000000", "a float64 stays a double");
    cdc__event_free(&ev);
}

/* Debezium's MicroTimestamp of years before 1685 or after 2254 is past 2^53:
 * read from its digits, as PostgreSQL's limits of common use need
 * (0001-01-01 and 9999-12-31). */
Test(decode, time_types_past_2_53)
{
    const char *fs =
        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
        "{\"type\":\"int32\",\"field\":\"id\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"a\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"b\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.Timestamp\",\"field\":\"c\"}"
        "]}]},\"payload\":{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"id\":1,"
        "\"a\":-62135596800000000,\"b\":253402300799999999,\"c\":-62135596800000}}}";
    cdc__event ev = {0};
    expect_ok("{\"id\":1}", fs, &ev);
    cr_expect_str_eq(col(&ev, "a"), "0001-01-01 00:00:00");
    cr_expect_str_eq(col(&ev, "b"), "9999-12-31 23:59:59.999999");
    cr_expect_str_eq(col(&ev, "c"), "0001-01-01 00:00:00");
    cdc__event_free(&ev);
}

/* PostgreSQL's timestamp 'infinity' and '-infinity' as Debezium sends them:
 * the JDBC driver's sentinels as microseconds (a millisecond Timestamp: a
 * thousandth of them); the numbers one off them are ordinary times. */
Test(decode, timestamp_infinity)
{
    const char *fs =
        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
        "{\"type\":\"int32\",\"field\":\"id\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"a\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"b\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.Timestamp\",\"field\":\"c\"},"
        "{\"type\":\"int64\",\"name\":\"org.apache.kafka.connect.data.Timestamp\",\"field\":\"d\"},"
        "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"e\"}"
        "]}]},\"payload\":{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"id\":1,"
        "\"a\":9223372036825200000,\"b\":-9223372036832400000,\"c\":9223372036825200,"
        "\"d\":-9223372036832400,\"e\":9223372036825199999}}}";
    cdc__event ev = {0};
    expect_ok("{\"id\":1}", fs, &ev);
    cr_expect_str_eq(col(&ev, "a"), "infinity");
    cr_expect_str_eq(col(&ev, "b"), "-infinity");
    cr_expect_str_eq(col(&ev, "c"), "infinity");
    cr_expect_str_eq(col(&ev, "d"), "-infinity");
    cr_expect_str_eq(col(&ev, "e"), "294247-01-10 04:00:25.199999");
    cdc__event_free(&ev);
}

/* A date 'infinity' or '-infinity' arrives in one of two encodings, the
 * snapshot's and the stream's (real output of Debezium 3.6.1 on PostgreSQL
 * 15; ingest/decode.c, date_infinity): both are stored as the word, and a
 * date key holding either is one key, whether the key's schema or a
 * declaration (--column-type) says it is a date. */
Test(decode, date_infinity_in_both_encodings)
{
    static const struct { long long days; const char *text; } v[] = {
        {-622191234, "infinity"},  {-2147472692, "infinity"},  {-622191233, "infinity"},
        {-625821272, "-infinity"}, {-2147472691, "-infinity"}, {18262, "2020-01-01"},
        {-719162, "0001-01-01"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        /* with a schema, the column and the key */
        char k[512], val[1024];
        snprintf(k, sizeof k,
                 "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,"
                 "\"name\":\"io.debezium.time.Date\",\"field\":\"k\"}]},\"payload\":{\"k\":%lld}}",
                 v[i].days);
        snprintf(val, sizeof val,
                 "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\","
                 "\"fields\":[{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"k\"},"
                 "{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"d\"}]}]},"
                 "\"payload\":{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"k\":%lld,\"d\":%lld}}}",
                 v[i].days, v[i].days);
        cdc__event ev = {0};
        expect_ok(k, val, &ev);
        cr_expect_str_eq(col(&ev, "d"), v[i].text, "days %lld", v[i].days);
        cr_expect_str_eq(col(&ev, "k"), v[i].text, "days %lld", v[i].days);
        char want[64];
        if (!strcmp(v[i].text, "infinity")) snprintf(want, sizeof want, "{\"k\":2147483647}");
        else if (!strcmp(v[i].text, "-infinity")) snprintf(want, sizeof want, "{\"k\":-2147483648}");
        else snprintf(want, sizeof want, "{\"k\":%lld}", v[i].days);
        cr_expect_str_eq(keyjson(&ev), want, "key of days %lld (schema)", v[i].days);
        cdc__event_free(&ev);
        /* without a schema, declared a date: the same */
        snprintf(k, sizeof k, "{\"day\":%lld}", v[i].days);
        snprintf(val, sizeof val, "{\"op\":\"u\",\"source\":{\"lsn\":2},\"after\":{\"day\":%lld,\"x\":1}}",
                 v[i].days);
        expect_ok(k, val, &ev);
        cr_expect_str_eq(col(&ev, "day"), v[i].text, "declared, days %lld", v[i].days);
        char dwant[64];
        if (!strcmp(v[i].text, "infinity")) snprintf(dwant, sizeof dwant, "{\"day\":2147483647}");
        else if (!strcmp(v[i].text, "-infinity")) snprintf(dwant, sizeof dwant, "{\"day\":-2147483648}");
        else snprintf(dwant, sizeof dwant, "{\"day\":%lld}", v[i].days);
        cr_expect_str_eq(keyjson(&ev), dwant, "key of days %lld (declared)", v[i].days);
        cdc__event_free(&ev);
    }
    /* without a Kafka key (a bare envelope): the row's first column, a date
     * by the row's schema or declared, keyed alike */
    cdc__event ev2 = {0};
    cdc_error_t err;
    static const long long enc[] = {-622191234, -2147472692};
    for (int i = 0; i < 2; i++) {
        char val[1024];
        snprintf(val, sizeof val, "{\"op\":\"u\",\"source\":{\"lsn\":2},\"after\":{\"day\":%lld,\"x\":1}}", enc[i]);
        cr_assert_eq(dec(NULL, val, &ev2, &err), 0, "%s", err.msg);
        cr_expect_str_eq(keyjson(&ev2), "{\"day\":2147483647}", "keyless, declared, %lld", enc[i]);
        cdc__event_free(&ev2);
        snprintf(val, sizeof val,
                 "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
                 "{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"d\"}]}]},"
                 "\"payload\":{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"d\":%lld}}}", enc[i]);
        cr_assert_eq(dec(NULL, val, &ev2, &err), 0, "%s", err.msg);
        cr_expect_str_eq(keyjson(&ev2), "{\"d\":2147483647}", "keyless, schema, %lld", enc[i]);
        cdc__event_free(&ev2);
    }
    /* a column neither named a date by a schema nor declared one keeps its number */
    cdc__event ev = {0};
    expect_ok("{\"n\":-622191234}", "{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"n\":-622191234}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"n\":-622191234}");
    cr_expect_str_eq(col(&ev, "n"), "-622191234");
    cdc__event_free(&ev);
}

static const char *typed_value(const char *field_schema, const char *value);

/* A point (io.debezium.data.geometry.Point, a struct of x, y, wkb and srid;
 * real output of Debezium 3.6.1) is stored as PostgreSQL's text of it, with
 * or without a schema; an object of other members stays JSON. */
Test(decode, point_as_postgresql_text)
{
    const char *pt = "{\"x\":1.5,\"y\":-2.25,\"wkb\":\"AQEAAAAAAAAAAAD4PwAAAAAAAALA\",\"srid\":null}";
    char v[1024];
    snprintf(v, sizeof v, "\"p\":%s", pt);
    cr_expect_str_eq(value_of(v, "p"), "(1.5,-2.25)");
    cr_expect_str_eq(value_of("\"p\":{\"x\":1e300,\"y\":0.1,\"wkb\":\"AQ==\"}", "p"), "(1e+300,0.1)");
    cr_expect_str_eq(value_of("\"p\":{\"x\":1,\"y\":2,\"z\":3}", "p"), "{\"x\":1,\"y\":2,\"z\":3}");
    cr_expect_str_eq(value_of("\"p\":{\"x\":\"NaN\",\"y\":\"-Infinity\",\"wkb\":\"AQ==\",\"srid\":null}", "p"),
                     "(NaN,-Infinity)");
    cr_expect_str_eq(typed_value("{\"type\":\"struct\",\"name\":\"io.debezium.data.geometry.Point\",\"field\":\"x\","
                                 "\"fields\":[{\"type\":\"double\",\"field\":\"x\"},{\"type\":\"double\",\"field\":\"y\"},"
                                 "{\"type\":\"bytes\",\"field\":\"wkb\"},{\"type\":\"int32\",\"optional\":true,"
                                 "\"field\":\"srid\"}]}",
                                 pt),
                     "(1.5,-2.25)");
}

/* An interval (MicroDuration: microseconds, a month 30.4375 days) is stored
 * as PostgreSQL's text of an interval of that many microseconds, which COPY
 * reads back: with its schema, or declared (any "ivl" column here is not, so
 * it is tested through the schema). */
Test(decode, interval_as_postgresql_text)
{
    static const struct { const char *us, *text; } v[] = {
        {"37091106789000", "10303:05:06.789"}, {"-1", "-00:00:00.000001"}, {"0", "00:00:00"},
        {"86399000000", "23:59:59"},           {"-2457000000001", "-682:30:00.000001"},
        {"9223372036854775807", "2562047788:00:54.775807"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        cr_expect_str_eq(typed_value("{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroDuration\",\"field\":\"x\"}",
                                     v[i].us),
                         v[i].text, "%s us", v[i].us);
}

/* Arrays whose items' schema names a logical type: each element as a value
 * of that type (a date[] of day numbers, a numeric(10,2)[] of base64
 * Decimals, a timestamp[] of MicroTimestamps); arrays of plain items as
 * before. */
Test(decode, typed_array_elements)
{
    cr_expect_str_eq(typed_value("{\"type\":\"array\",\"items\":{\"type\":\"int32\",\"optional\":true,"
                                 "\"name\":\"io.debezium.time.Date\"},\"field\":\"x\"}",
                                 "[18262,-622191234,null,-719162]"),
                     "{2020-01-01,infinity,NULL,0001-01-01}");
    cr_expect_str_eq(typed_value("{\"type\":\"array\",\"items\":{\"type\":\"bytes\",\"optional\":true,"
                                 "\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\"}},"
                                 "\"field\":\"x\"}",
                                 "[\"AJY=\",null,\"/2o=\"]"),
                     "{1.50,NULL,-1.50}");
    cr_expect_str_eq(typed_value("{\"type\":\"array\",\"items\":{\"type\":\"int64\",\"optional\":true,"
                                 "\"name\":\"io.debezium.time.MicroTimestamp\"},\"field\":\"x\"}",
                                 "[1577836800000000,-62135596800000000]"),
                     "{\"2020-01-01 00:00:00\",\"0001-01-01 00:00:00\"}");
    cr_expect_str_eq(typed_value("{\"type\":\"array\",\"items\":{\"type\":\"int32\",\"optional\":true},\"field\":\"x\"}",
                                 "[1,null,-2]"),
                     "{1,NULL,-2}");
    /* a bytea[]: base64 items, in PostgreSQL's array text as its hex form */
    cr_expect_str_eq(typed_value("{\"type\":\"array\",\"items\":{\"type\":\"bytes\",\"optional\":true},\"field\":\"x\"}",
                                 "[\"AAE=\",null,\"\"]"),
                     "{\"\\\\x0001\",NULL,\"\\\\x\"}");
}

/* A NUMERIC(p,s) key in Debezium's default precise mode (base64 of the
 * unscaled integer) is keyed by its decimal text when its scale is known,
 * from the key's schema or declared (--decimal): the text of the row's
 * column, so get and reconcile name it as the source does. */
Test(decode, decimal_keys_by_their_text)
{
    char k[512], v[1024];
    snprintf(k, sizeof k,
             "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"bytes\",\"optional\":false,"
             "\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\","
             "\"connect.decimal.precision\":\"12\"},\"field\":\"k\"}]},\"payload\":{\"k\":\"/xcrWvAB\"}}");
    snprintf(v, sizeof v,
             "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
             "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\"},"
             "\"field\":\"k\"},{\"type\":\"string\",\"field\":\"v\"}]}]},"
             "\"payload\":{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"k\":\"/xcrWvAB\",\"v\":\"b\"}}}");
    cdc__event ev = {0};
    expect_ok(k, v, &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"k\":\"-9999999999.99\"}");
    cr_expect_str_eq(col(&ev, "k"), "-9999999999.99");
    cdc__event_free(&ev);
    /* without a schema, a declared scale (any "price" column: 3) */
    expect_ok("{\"price\":\"AJY=\"}", "{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"price\":\"AJY=\",\"v\":1}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"price\":\"0.150\"}");
    cdc__event_free(&ev);
    /* a delete names the same key */
    expect_ok("{\"price\":\"AJY=\"}", "{\"op\":\"d\",\"source\":{\"lsn\":2},\"before\":{\"price\":\"AJY=\"}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"price\":\"0.150\"}");
    cdc__event_free(&ev);
    /* no scale known: the text as it came */
    expect_ok("{\"code\":\"AJY=\"}", "{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"code\":\"AJY=\"}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"code\":\"AJY=\"}");
    cdc__event_free(&ev);
    /* without a Kafka key, the row's first column, declared */
    cdc_error_t err;
    cr_assert_eq(dec(NULL, "{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"price\":\"AJY=\",\"v\":1}}", &ev, &err), 0,
                 "%s", err.msg);
    cr_expect_str_eq(keyjson(&ev), "{\"price\":\"0.150\"}");
    cdc__event_free(&ev);
    /* declared, but the key is text (decimal.handling.mode=string): refused with the fix */
    expect_bad("{\"price\":\"1.5x\"}", "{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"price\":\"1.5x\"}}",
               "decimal.handling.mode=string");
}

/* TIME(0-3) without a schema: its milliseconds, declared time-ms. */
Test(decode, declared_time_in_milliseconds)
{
    cdc__event ev = {0};
    expect_ok("{\"id\":1}", "{\"op\":\"c\",\"source\":{\"lsn\":1},\"after\":{\"id\":1,\"tms\":45296789}}", &ev);
    cr_expect_str_eq(col(&ev, "tms"), "12:34:56.789");
    cdc__event_free(&ev);
}

/* PostgreSQL primary keys of other types, named by the Kafka key: an
 * unconstrained NUMERIC as Debezium's VariableScaleDecimal (its text, scale
 * kept), a float (float8 text), a boolean (t/f); the row must agree. */
Test(decode, keys_of_numeric_float_and_boolean)
{
    static const struct { const char *k, *row, *json; } ok[] = {
        {"{\"n\":{\"scale\":2,\"value\":\"AJY=\"}}", "{\"n\":{\"scale\":2,\"value\":\"AJY=\"},\"v\":1}",
         "{\"n\":\"1.50\"}"},
        {"{\"f\":1.5}", "{\"f\":1.5,\"v\":1}", "{\"f\":\"1.5\"}"},
        /* a float past 2^53, as Jackson writes it: its float8 text (it was
         * refused as an integer out of a bigint's range) */
        {"{\"f\":1.5E16}", "{\"f\":1.5E16,\"v\":1}", "{\"f\":\"1.5e+16\"}"},
        {"{\"f\":1.0E300}", "{\"f\":1.0E300,\"v\":1}", "{\"f\":\"1e+300\"}"},
        {"{\"b\":true}", "{\"b\":true,\"v\":1}", "{\"b\":\"t\"}"},
        {"{\"a\":7,\"b\":false}", "{\"a\":7,\"b\":false,\"v\":1}", "{\"a\":7,\"b\":\"f\"}"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char v[512];
        snprintf(v, sizeof v, "{\"op\":\"c\",\"after\":%s,\"source\":{\"lsn\":1}}", ok[i].row);
        cdc__event ev = {0};
        expect_ok(ok[i].k, v, &ev);
        cr_expect_str_eq(keyjson(&ev), ok[i].json, "key %s", ok[i].k);
        cdc__event_free(&ev);
    }
    expect_bad("{\"n\":{\"scale\":2,\"value\":\"AJY=\"}}",
               "{\"op\":\"c\",\"after\":{\"n\":{\"scale\":2,\"value\":\"AJc=\"}},\"source\":{\"lsn\":1}}",
               "key does not match the row");
    expect_bad("{\"b\":true}", "{\"op\":\"c\",\"after\":{\"b\":false},\"source\":{\"lsn\":1}}",
               "key does not match the row");
    expect_bad("{\"i\":99999999999999999999}", "{\"op\":\"c\",\"after\":{\"i\":99999999999999999999},\"source\":{\"lsn\":1}}",
               "integer key out of the range of a bigint");
    expect_bad("{\"n\":{\"scale\":2,\"value\":\"%%%\"}}",
               "{\"op\":\"c\",\"after\":{\"n\":{\"scale\":2,\"value\":\"%%%\"}},\"source\":{\"lsn\":1}}",
               "does not decode");
}

/* ---- Ops ---- */

/* Debezium's own topics, which a subscription by pattern also reads: a
 * heartbeat and a transaction's BEGIN and END change no row (not dead
 * letters); an envelope without op that is neither still is one. */
Test(decode, heartbeat_and_transaction_metadata)
{
    static const struct { const char *topic, *key, *value; } own[] = {
        {"__debezium-heartbeat.shop", "{\"serverName\":\"shop\"}", "{\"ts_ms\":1700000000000}"},
        {"__debezium-heartbeat.shop", "{\"serverName\":\"shop\"}",
         "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int64\",\"field\":\"ts_ms\"}],"
         "\"name\":\"io.debezium.connector.common.Heartbeat\"},\"payload\":{\"ts_ms\":1700000000001}}"},
        {"shop.transaction", "{\"id\":\"571:1000\"}",
         "{\"status\":\"BEGIN\",\"id\":\"571:1000\",\"event_count\":null,\"data_collections\":null,"
         "\"ts_ms\":1700000000002}"},
        {"shop.transaction", "{\"id\":\"571:1000\"}",
         "{\"status\":\"END\",\"id\":\"571:1000\",\"event_count\":2,\"data_collections\":"
         "[{\"data_collection\":\"public.tx\",\"event_count\":2}],\"ts_ms\":1700000000003}"},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        cdc_record_t r = rec_of(own[i].topic, 3, own[i].key, own[i].value);
        cdc__event ev = {0};
        cdc_error_t err = {0};
        cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s: %s", own[i].value, err.msg);
        cr_expect_eq(ev.action, CDC__ACT_NOOP, "%s", own[i].value);
        cr_expect_null(ev.table);
        cr_expect_eq(ev.ts_ms, 1700000000000 + (int64_t)i);
        cdc__event_free(&ev);
    }
    expect_bad("{\"order_id\":1}", "{\"ts_ms\":5,\"after\":{\"order_id\":1}}", "no op field");
    expect_bad("{\"order_id\":1}", "{\"status\":\"COMMIT\",\"id\":\"1:2\"}", "no op field");
}

Test(decode, truncate)
{
    cdc__event ev = {0};
    expect_ok(NULL,
              "{\"op\":\"t\",\"before\":null,\"after\":null,\"ts_ms\":5,"
              "\"source\":{\"schema\":\"public\",\"table\":\"orders\",\"lsn\":900,\"ts_ms\":4}}",
              &ev);
    cr_expect_eq(ev.action, act('t'));
    cr_expect_eq(ev.lsn, 900);
    cr_expect_eq(ev.ts_ms, 4);
    cr_expect_str_eq(ev.table, "public.orders");
    cr_expect_eq(ev.key.len, 0);
    cr_expect_str_eq(keyjson(&ev), "{}");
    cr_expect_str_eq(cols(&ev), "");
    cdc__event_free(&ev);
    /* a truncate still needs its LSN */
    expect_bad(NULL, "{\"op\":\"t\",\"source\":{\"schema\":\"public\",\"table\":\"orders\"}}", "missing LSN");
}

Test(decode, message)
{
    cdc__event ev = {0};
    cdc_record_t r = rec_of("shop.message", 3, NULL,
                            "{\"op\":\"m\",\"ts_ms\":7,\"source\":{\"schema\":\"\",\"table\":\"\",\"lsn\":55},"
                            "\"message\":{\"prefix\":\"p\",\"content\":\"aGk=\"}}");
    cdc_error_t err = {0};
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s", err.msg);
    cr_expect_eq(ev.action, act('m'));
    cr_expect_null(ev.table);
    cr_expect_eq(ev.lsn, 55);
    cr_expect_eq(ev.ts_ms, 7);
    cr_expect_eq(ev.key.len, 0);
    cdc__event_free(&ev);
    /* nothing else is required of a message */
    r.topic = NULL;
    r.value = "{\"op\":\"m\",\"source\":\"whatever\"}";
    r.value_len = strlen(r.value);
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s", err.msg);
    cr_expect_eq(ev.action, act('m'));
    cr_expect_eq(ev.lsn, 0);
    cdc__event_free(&ev);
}

Test(decode, ops_c_u_d_r)
{
    const char *ops = "cur";
    for (const char *o = ops; *o; o++) {
        char v[256];
        snprintf(v, sizeof v, "{\"op\":\"%c\",\"after\":{\"order_id\":5,\"x\":1},\"source\":{\"lsn\":9}}", *o);
        cdc__event ev = {0};
        expect_ok("{\"order_id\":5}", v, &ev);
        cr_expect_eq(ev.action, act(*o));
        cr_expect_eq(ev.snapshot, *o == 'r' ? CDC__SNAP_TRUE : CDC__SNAP_NONE);
        cr_expect_str_eq(cols(&ev), "order_id,x");
        cdc__event_free(&ev);
    }
    cdc__event ev = {0};
    expect_ok("{\"order_id\":5}", "{\"op\":\"d\",\"before\":{\"order_id\":5,\"x\":1},\"after\":null,"
                                  "\"source\":{\"lsn\":9}}", &ev);
    cr_expect_eq(ev.action, act('d'));
    cr_expect_str_eq(cols(&ev), "order_id,x", "a delete's row is its before image");
    cdc__event_free(&ev);
}

/* ---- Positions ---- */

static uint64_t lsn_of(const char *lsn_json)
{
    char v[256];
    snprintf(v, sizeof v, "{\"op\":\"u\",\"after\":{\"id\":1},\"source\":{\"lsn\":%s}}", lsn_json);
    cdc__event ev = {0};
    expect_ok(NULL, v, &ev);
    uint64_t l = ev.lsn;
    cdc__event_free(&ev);
    return l;
}

Test(decode, lsn_values)
{
    cr_expect_eq(lsn_of("0"), 0);
    cr_expect_eq(lsn_of("4294967297"), 4294967297ULL, "LSNs pass 2^32 after 4 GiB of WAL");
    cr_expect_eq(lsn_of("9007199254740992"), 9007199254740992ULL);
    cr_expect_eq(lsn_of("1.5e3"), 1500);
}

static int snapshot_of(const char *op, const char *snap_json)
{
    char v[256];
    snprintf(v, sizeof v, "{\"op\":\"%s\",\"after\":{\"id\":1},\"source\":{\"lsn\":3%s%s}}", op,
             snap_json ? ",\"snapshot\":" : "", snap_json ? snap_json : "");
    cdc__event ev = {0};
    expect_ok(NULL, v, &ev);
    int s = ev.snapshot;
    cdc__event_free(&ev);
    return s;
}

Test(decode, snapshot_markers)
{
    cr_expect_eq(snapshot_of("r", "\"true\""), CDC__SNAP_TRUE);
    cr_expect_eq(snapshot_of("r", "\"first\""), CDC__SNAP_TRUE);
    cr_expect_eq(snapshot_of("r", "\"first_in_data_collection\""), CDC__SNAP_TRUE);
    cr_expect_eq(snapshot_of("r", "\"last\""), CDC__SNAP_LAST);
    cr_expect_eq(snapshot_of("r", "\"last_in_data_collection\""), CDC__SNAP_LAST);
    cr_expect_eq(snapshot_of("r", "\"incremental\",\"sequence\":\"[\\\"9\\\",null]\""), CDC__SNAP_INCREMENTAL);
    cr_expect_eq(snapshot_of("r", "true"), CDC__SNAP_TRUE);
    cr_expect_eq(snapshot_of("r", "\"false\""), CDC__SNAP_TRUE, "an r event is a snapshot read");
    cr_expect_eq(snapshot_of("r", NULL), CDC__SNAP_TRUE, "an r event is a snapshot read");
    cr_expect_eq(snapshot_of("r", "null"), CDC__SNAP_TRUE);
    cr_expect_eq(snapshot_of("u", "\"false\""), CDC__SNAP_NONE);
    cr_expect_eq(snapshot_of("u", "false"), CDC__SNAP_NONE);
    cr_expect_eq(snapshot_of("u", "null"), CDC__SNAP_NONE);
    cr_expect_eq(snapshot_of("c", NULL), CDC__SNAP_NONE);
}

/* An incremental snapshot read carries no lsn: it is ordered by the commit
 * position in source.sequence (the first element), which becomes its lsn. */
Test(decode, incremental_snapshot_read_takes_its_commit_position)
{
    cdc__event ev = {0};
    expect_ok("{\"id\":1}",
              "{\"op\":\"r\",\"after\":{\"id\":1},\"source\":{\"snapshot\":\"incremental\",\"lsn\":null,"
              "\"txId\":null,\"xmin\":null,\"ts_ms\":12,\"sequence\":\"[\\\"704413816\\\",\\\"704410568\\\"]\"}}",
              &ev);
    cr_expect_eq(ev.snapshot, CDC__SNAP_INCREMENTAL);
    cr_expect_eq(ev.commit, 704413816);
    cr_expect_eq(ev.lsn, 704413816);
    cr_expect_eq(ev.ts_ms, 12);
    cdc__event_free(&ev);
    /* past 2^53 and at 2^64-1, exact */
    expect_ok("{\"id\":1}",
              "{\"op\":\"r\",\"after\":{\"id\":1},\"source\":{\"snapshot\":\"incremental\","
              "\"sequence\":\"[\\\"18446744073709551615\\\",\\\"1\\\"]\"}}",
              &ev);
    cr_expect_eq(ev.commit, UINT64_MAX);
    cdc__event_free(&ev);
}

/* A streamed change keeps its lsn and takes the commit position too; null
 * (the first transaction after the connector starts) is unknown, 0. */
Test(decode, stream_change_commit_position)
{
    cdc__event ev = {0};
    expect_ok("{\"id\":1}",
              "{\"op\":\"u\",\"after\":{\"id\":1},\"source\":{\"lsn\":68004944,"
              "\"sequence\":\"[\\\"68004900\\\",\\\"68004944\\\"]\"}}",
              &ev);
    cr_expect_eq(ev.lsn, 68004944);
    cr_expect_eq(ev.commit, 68004900);
    cdc__event_free(&ev);
    expect_ok("{\"id\":1}",
              "{\"op\":\"u\",\"after\":{\"id\":1},\"source\":{\"lsn\":68004168,\"sequence\":\"[null,\\\"68004168\\\"]\"}}",
              &ev);
    cr_expect_eq(ev.commit, 0);
    cdc__event_free(&ev);
    expect_ok("{\"id\":1}", "{\"op\":\"u\",\"after\":{\"id\":1},\"source\":{\"lsn\":5,\"sequence\":null}}", &ev);
    cr_expect_eq(ev.commit, 0);
    cdc__event_free(&ev);
}

Test(decode, ts_ms_sources)
{
    cdc__event ev = {0};
    expect_ok(NULL, "{\"op\":\"c\",\"after\":{\"id\":1},\"ts_ms\":20,\"source\":{\"lsn\":1,\"ts_ms\":10}}", &ev);
    cr_expect_eq(ev.ts_ms, 10);
    cdc__event_free(&ev);
    expect_ok(NULL, "{\"op\":\"c\",\"after\":{\"id\":1},\"ts_ms\":20,\"source\":{\"lsn\":1}}", &ev);
    cr_expect_eq(ev.ts_ms, 20);
    cdc__event_free(&ev);
    expect_ok(NULL, "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":1}}", &ev);
    cr_expect_eq(ev.ts_ms, 0);
    cdc__event_free(&ev);
}

/* ---- Tables ---- */

Test(decode, table_from_source_or_topic)
{
    cdc__event ev = {0};
    cdc_error_t err = {0};
    cdc_record_t r = rec_of("a.b.c.d", 0, "{\"id\":1}",
                            "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":1,\"schema\":\"inv\","
                            "\"table\":\"items\"}}");
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s", err.msg);
    cr_expect_str_eq(ev.table, "inv.items");
    cdc__event_free(&ev);
    r.value = "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":1,\"table\":\"items\"}}";
    r.value_len = strlen(r.value);
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s", err.msg);
    cr_expect_str_eq(ev.table, "c.d", "the last two parts of the topic");
    cdc__event_free(&ev);
    /* no table anywhere */
    r.topic = NULL;
    r.offset = -1;
    r.source = "orders.jsonl";
    r.line = 7;
    cr_expect_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), CDC_EDECODE);
    cr_expect(strstr(err.msg, "orders.jsonl:7: "), "%s", err.msg);
    cr_expect(strstr(err.msg, "cannot tell the table"), "%s", err.msg);
    r.topic = "orders";
    cr_expect_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), CDC_EDECODE);
    cr_expect_null(ev.table);
}

Test(decode, table_from_topic)
{
    char out[64];
    cr_expect_eq(cdc__table_from_topic("shop.public.orders", out, sizeof out), 0);
    cr_expect_str_eq(out, "public.orders");
    cr_expect_eq(cdc__table_from_topic("x.y.public.orders", out, sizeof out), 0);
    cr_expect_str_eq(out, "public.orders");
    cr_expect_eq(cdc__table_from_topic("public.orders", out, sizeof out), -1);
    cr_expect_eq(cdc__table_from_topic("orders", out, sizeof out), -1);
    cr_expect_eq(cdc__table_from_topic("", out, sizeof out), -1);
    cr_expect_eq(cdc__table_from_topic(NULL, out, sizeof out), -1);
    cr_expect_eq(cdc__table_from_topic("shop..orders", out, sizeof out), -1);
    cr_expect_eq(cdc__table_from_topic("shop.public.", out, sizeof out), -1);
    cr_expect_eq(cdc__table_from_topic(".public.orders", out, sizeof out), -1);
    cr_expect_eq(cdc__table_from_topic("shop.public.orders", out, 13), -1, "too small for the NUL");
    cr_expect_eq(cdc__table_from_topic("shop.public.orders", out, 14), 0);
    cr_expect_str_eq(out, "public.orders");
}

/* ---- Keys ---- */

Test(decode, composite_and_text_keys)
{
    cdc__event ev = {0};
    expect_ok("{\"order_id\":3,\"line_no\":2}",
              "{\"op\":\"c\",\"after\":{\"order_id\":3,\"line_no\":2,\"sku\":\"A-1\",\"qty\":1,\"price\":\"AwI=\"},"
              "\"source\":{\"lsn\":10,\"schema\":\"public\",\"table\":\"order_lines\"}}",
              &ev);
    cr_expect_str_eq(ev.table, "public.order_lines");
    cr_expect_str_eq(keyjson(&ev), "{\"order_id\":3,\"line_no\":2}");
    cr_expect_str_eq(col(&ev, "price"), "0.770", "price has a declared scale of 3");
    cdc__event_free(&ev);

    expect_ok("{\"customer_id\":\"0b9c6f3e-6a7c-4f39-9a51-3c2b1e0f5a10\"}",
              "{\"op\":\"u\",\"after\":{\"customer_id\":\"0b9c6f3e-6a7c-4f39-9a51-3c2b1e0f5a10\",\"tier\":null},"
              "\"source\":{\"lsn\":10,\"schema\":\"public\",\"table\":\"customers\"}}",
              &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"customer_id\":\"0b9c6f3e-6a7c-4f39-9a51-3c2b1e0f5a10\"}");
    cr_expect_str_eq(col(&ev, "tier"), "<NULL>");
    cdc__event_free(&ev);

    /* The key's column order, not the row's, is the key order. */
    expect_ok("{\"b\":\"x\",\"a\":-4}", "{\"op\":\"c\",\"after\":{\"a\":-4,\"b\":\"x\"},\"source\":{\"lsn\":1}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"b\":\"x\",\"a\":-4}");
    cdc__event_free(&ev);
}

Test(decode, key_from_first_column_without_kafka_key)
{
    cdc__event ev = {0};
    expect_ok(NULL, "{\"op\":\"c\",\"after\":{\"sku\":\"P-9\",\"title\":\"t\"},\"source\":{\"lsn\":1}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"sku\":\"P-9\"}");
    cdc__event_free(&ev);
    /* "null" as the key text of a Kafka record is no key: refused */
    expect_bad("null", "{\"op\":\"d\",\"before\":{\"sku\":\"P-9\"},\"source\":{\"lsn\":1}}",
               "the Kafka record has no key");
}

/* Debezium keys every change of a table with a primary key (or
 * message.key.columns); a Kafka record without a key is a row of a table
 * without one, which no column tells apart: each row event is refused with the
 * fix, whatever its op and envelope, while the keyless records that carry no
 * row (a Kafka tombstone, a truncate, a logical decoding message) decode. */
Test(decode, kafka_record_without_key_is_refused)
{
    const char *rows[] = {
        "{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"a\"},\"source\":{\"lsn\":10,\"schema\":\"public\",\"table\":\"nokey\"}}",
        "{\"op\":\"u\",\"before\":null,\"after\":{\"id\":1,\"v\":\"b\"},\"source\":{\"lsn\":11}}",
        "{\"op\":\"r\",\"after\":{\"id\":1},\"source\":{\"lsn\":9,\"snapshot\":\"true\"}}",
        "{\"op\":\"d\",\"before\":{\"id\":1,\"v\":\"b\"},\"source\":{\"lsn\":12}}",
        "{\"op\":\"d\",\"before\":null,\"source\":{\"lsn\":12}}",
        "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":10}}}",
    };
    const char *keys[] = {NULL, "", "null", "{\"schema\":null,\"payload\":null}"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            cdc_record_t r = rec_of(TOPIC, 7, keys[k], rows[i]);
            cdc__event ev = {0};
            cdc_error_t err = {0};
            cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), CDC_EDECODE, "row %zu key %zu", i, k);
            cr_expect(strstr(err.msg, TOPIC "[0]@7: "), "the position: %s", err.msg);
            cr_expect(strstr(err.msg, "the Kafka record has no key"), "%s", err.msg);
            cr_expect(strstr(err.msg, "primary key") && strstr(err.msg, "REPLICA IDENTITY") &&
                          strstr(err.msg, "message.key.columns"),
                      "the fix is spelled out: %s", err.msg);
            cr_expect_null(ev.table);
        }
    cdc_record_t r = rec_of(TOPIC, 7, NULL, rows[0]);
    cdc__event ev = {0};
    cdc_error_t err = {0};
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), CDC_EDECODE);
    cr_expect(strstr(err.msg, "message.key.columns (e.g. public.nokey:id)"), "%s", err.msg);
    /* no Kafka position: a file's bare envelope, keyed by its first column */
    r = rec_of(TOPIC, -1, NULL, rows[0]);
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s", err.msg);
    cr_expect_str_eq(keyjson(&ev), "{\"id\":1}");
    cdc__event_free(&ev);
    /* keyless records without a row */
    r = rec_of(TOPIC, 8, NULL, NULL);
    cr_expect_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 1, "a Kafka tombstone");
    r = rec_of(TOPIC, 9, NULL, "{\"op\":\"t\",\"source\":{\"lsn\":20,\"schema\":\"public\",\"table\":\"orders\"}}");
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "a truncate: %s", err.msg);
    cr_expect_eq(ev.action, CDC__ACT_FLOOR);
    cdc__event_free(&ev);
    r = rec_of(TOPIC, 10, NULL, "{\"op\":\"m\",\"source\":{\"lsn\":21}}");
    cr_assert_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "a message: %s", err.msg);
    cr_expect_eq(ev.action, CDC__ACT_NOOP);
    cdc__event_free(&ev);
}

Test(decode, delete_with_key_and_no_before)
{
    cdc__event ev = {0};
    expect_ok("{\"order_id\":2}", "{\"op\":\"d\",\"before\":null,\"after\":null,\"source\":{\"lsn\":160}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"order_id\":2}");
    cr_expect_str_eq(cols(&ev), "");
    cr_expect_gt(ev.row.len, 0, "an empty row is still a valid event row (count 0)");
    cdc__event_free(&ev);
    /* before without the key columns (REPLICA IDENTITY of another index) is not checked */
    expect_ok("{\"order_id\":2}", "{\"op\":\"d\",\"before\":{\"email\":\"a@b\"},\"source\":{\"lsn\":160}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"order_id\":2}");
    cdc__event_free(&ev);
}

Test(decode, key_json)
{
    const char *one[] = {"order_id"};
    const char *two[] = {"order_id", "line_no"};
    cdc__buf out = {0}, want = {0};
    cdc_error_t err = {0};
    cr_assert_eq(cdc__key_from_json("{\"order_id\": 2}", one, 1, &out, &err), 0, "%s", err.msg);
    cdc__key_add_int(&want, 2);
    cr_expect_eq(out.len, want.len);
    cr_expect(!memcmp(out.p, want.p, want.len));
    cdc__buf_reset(&out);
    cr_assert_eq(cdc__key_from_json("[2]", NULL, 0, &out, &err), 0, "%s", err.msg);
    cr_expect(out.len == want.len && !memcmp(out.p, want.p, want.len));
    cdc__buf_reset(&out);
    cdc__buf_reset(&want);
    cr_assert_eq(cdc__key_from_json("{\"line_no\":1,\"order_id\":3}", two, 2, &out, &err), 0, "%s", err.msg);
    cdc__key_add_int(&want, 3);
    cdc__key_add_int(&want, 1);
    cr_expect(out.len == want.len && !memcmp(out.p, want.p, want.len), "object members are put in key order");
    cdc__buf_reset(&out);
    cdc__buf_reset(&want);
    cr_assert_eq(cdc__key_from_json("[\"abc\", -7]", two, 2, &out, &err), 0, "%s", err.msg);
    cdc__key_add_text(&want, "abc", 3);
    cdc__key_add_int(&want, -7);
    cr_expect(out.len == want.len && !memcmp(out.p, want.p, want.len));
    cdc__buf_reset(&out);

    const char *bad[] = {"{\"order_id\":2}", "[]", "[1.5]", "[true]", "[null]", "[[1]]", "{bad", "2",
                         "[18446744073709551616]", "[9223372036854775808]", "[1] x", "{\"order_id\":2} x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        cr_expect_eq(cdc__key_from_json(bad[i], NULL, 0, &out, &err), CDC_EINVAL, "%s", bad[i]);
        cr_expect_eq(err.code, CDC_EINVAL);
        cr_expect_neq(err.msg[0], 0);
        cr_expect_eq(out.len, 0, "nothing appended on error (%s)", bad[i]);
    }
    /* Integers are read exactly from their digits: 2^53 + 1 is not 2^53. */
    cr_assert_eq(cdc__key_from_json("[9007199254740993]", NULL, 0, &out, &err), 0, "%s", err.msg);
    cdc__buf_reset(&want);
    cdc__key_add_int(&want, 9007199254740993LL);
    cr_expect(out.len == want.len && !memcmp(out.p, want.p, want.len), "2^53 + 1 kept exactly");
    cdc__buf_reset(&out);
    cdc__buf_reset(&want);
    cr_assert_eq(cdc__key_from_json("[-9223372036854775808, 9223372036854775807]", two, 2, &out, &err), 0,
                 "%s", err.msg);
    cdc__key_add_int(&want, INT64_MIN);
    cdc__key_add_int(&want, INT64_MAX);
    cr_expect(out.len == want.len && !memcmp(out.p, want.p, want.len), "bigint limits kept exactly");
    cdc__buf_reset(&out);
    cdc__buf_reset(&want);
    cr_expect_eq(cdc__key_from_json("{\"x\":2}", one, 1, &out, &err), CDC_EINVAL);
    cr_expect_eq(cdc__key_from_json("{\"order_id\":2,\"x\":1}", one, 1, &out, &err), CDC_EINVAL);
    cr_expect_eq(cdc__key_from_json("[1,2]", one, 1, &out, &err), CDC_EINVAL);
    cr_expect_eq(cdc__key_from_json("{\"order_id\":2}", two, 2, &out, &err), CDC_EINVAL);
    cdc__buf_free(&out);
    cdc__buf_free(&want);
}

/* ---- Values ---- */

Test(decode, values_untyped)
{
    cr_expect_str_eq(value_of("\"s\":\"hello\"", "s"), "hello");
    cr_expect_str_eq(value_of("\"s\":\"\"", "s"), "");
    cr_expect_str_eq(value_of("\"s\":null", "s"), "<NULL>");
    cr_expect_str_eq(value_of("\"n\":42", "n"), "42");
    cr_expect_str_eq(value_of("\"n\":-42", "n"), "-42");
    cr_expect_str_eq(value_of("\"n\":9007199254740992", "n"), "9007199254740992");
    cr_expect_str_eq(value_of("\"n\":-9007199254740992", "n"), "-9007199254740992");
    cr_expect_str_eq(value_of("\"n\":2.0", "n"), "2");
    cr_expect_str_eq(value_of("\"n\":-0.0", "n"), "-0", "-0::float8 arrives as -0.0 and prints -0");
    cr_expect_str_eq(value_of("\"n\":0.0", "n"), "0");
    cr_expect_str_eq(value_of("\"n\":0", "n"), "0");
    cr_expect_str_eq(value_of("\"n\":0.1", "n"), "0.1");
    cr_expect_str_eq(value_of("\"n\":-2.5", "n"), "-2.5");
    cr_expect_str_eq(value_of("\"n\":0.00001", "n"), "1e-05");
    cr_expect_str_eq(value_of("\"n\":3.141592653589793", "n"), "3.141592653589793");
    cr_expect_str_eq(value_of("\"n\":0.30000000000000004", "n"), "0.30000000000000004");
    cr_expect_str_eq(value_of("\"b\":true", "b"), "t");
    cr_expect_str_eq(value_of("\"b\":false", "b"), "f");
    cr_expect_str_eq(value_of("\"o\":{ \"x\" : [1, 2] }", "o"), "{\"x\":[1,2]}");
    cr_expect_str_eq(value_of("\"a\":[ \"p\", null ]", "a"), "{p,NULL}", "an array in PostgreSQL's array text");
    cr_expect_str_eq(value_of("\"j\":\"{\\\"k\\\": 1}\"", "j"), "{\"k\": 1}", "jsonb arrives as a string");
    cr_expect_str_eq(value_of("\"u\":\"caf\\u00e9\"", "u"), "caf\xc3\xa9");
    cr_expect_str_eq(value_of("\"v\":{\"scale\":2,\"value\":\"AfQ=\"}", "v"), "5.00");
    cr_expect_str_eq(value_of("\"v\":{\"scale\":0,\"value\":\"/w==\"}", "v"), "-1");
    /* a column without a declared scale keeps the text it arrived as */
    cr_expect_str_eq(value_of("\"amount_b64\":\"AfQ=\"", "amount_b64"), "AfQ=");
}

Test(decode, column_order_is_kept)
{
    cdc__event ev = {0};
    expect_ok("{\"id\":1}", "{\"op\":\"c\",\"after\":{\"id\":1,\"z\":1,\"a\":2,\"m\":3},\"source\":{\"lsn\":1}}",
              &ev);
    cr_expect_str_eq(cols(&ev), "id,z,a,m");
    cdc__event_free(&ev);
}

Test(decode, unavailable_placeholders)
{
    cdc__event ev = {0};
    expect_ok("{\"id\":1}",
              "{\"op\":\"u\",\"after\":{\"id\":1,\"note\":\"__debezium_unavailable_value\","
              "\"data\":\"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==\",\"tags\":[\"__debezium_unavailable_value\"],"
              "\"nums\":[95,95,100,101,98,101,122,105,117,109,95,117,110,97,118,97,105,108,97,98,108,101,95,118,"
              "97,108,117,101],\"other\":[\"x\"],\"amount\":\"__debezium_unavailable_value\"},"
              "\"source\":{\"lsn\":1}}",
              &ev);
    cr_expect_str_eq(col(&ev, "note"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "data"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "tags"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "nums"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "other"), "{x}");
    cr_expect_str_eq(col(&ev, "amount"), "<UNAVAILABLE>", "a declared-scale column too");
    cr_expect_eq(ev.nunavailable, 5);
    cdc__event_free(&ev);
}

/* The other forms of Debezium's UnchangedToastedPlaceholder: uuid[] (the
 * UUID named by the placeholder's bytes), bytea[] (its base64), hstore as a
 * map and as JSON text (compact and spaced); values that only resemble them
 * stay data. */
Test(decode, unavailable_placeholders_of_arrays_and_hstore)
{
    cdc__event ev = {0};
    expect_ok("{\"id\":1}",
              "{\"op\":\"u\",\"after\":{\"id\":1,\"uu\":[\"b68a35a7-17ad-35b3-af2a-ae46edb4545a\"],"
              "\"ba\":[\"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==\"],"
              "\"h\":{\"__debezium_unavailable_value\":\"__debezium_unavailable_value\"},"
              "\"hj\":\"{\\\"__debezium_unavailable_value\\\":\\\"__debezium_unavailable_value\\\"}\","
              "\"hs\":\"{\\\"__debezium_unavailable_value\\\": \\\"__debezium_unavailable_value\\\"}\","
              "\"h2\":{\"__debezium_unavailable_value\":\"__debezium_unavailable_value\",\"k\":\"v\"},"
              "\"u2\":[\"b68a35a7-17ad-35b3-af2a-ae46edb4545a\",\"b68a35a7-17ad-35b3-af2a-ae46edb4545a\"],"
              "\"t\":\"{\\\"__debezium_unavailable_value\\\":1}\"},"
              "\"source\":{\"lsn\":1}}",
              &ev);
    cr_expect_str_eq(col(&ev, "uu"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "ba"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "h"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "hj"), "<UNAVAILABLE>");
    cr_expect_str_eq(col(&ev, "hs"), "<UNAVAILABLE>");
    cr_expect_neq(strcmp(col(&ev, "h2"), "<UNAVAILABLE>"), 0, "a map with another key is data");
    cr_expect_neq(strcmp(col(&ev, "u2"), "<UNAVAILABLE>"), 0, "two elements are data");
    cr_expect_str_eq(col(&ev, "t"), "{\"__debezium_unavailable_value\":1}");
    cr_expect_eq(ev.nunavailable, 5);
    cdc__event_free(&ev);
}

/* The text of a base64 decimal with a declared scale (column "price": 3) or,
 * through the variable-scale struct, any scale. */
static const char *decimal(const char *b64, int scale)
{
    char row[2048];
    snprintf(row, sizeof row, "\"v\":{\"scale\":%d,\"value\":\"%s\"}", scale, b64);
    return value_of(row, "v");
}

Test(decode, base64_decimals)
{
    cr_expect_str_eq(decimal("AfQ=", 2), "5.00");
    cr_expect_str_eq(decimal("/gw=", 2), "-5.00");
    cr_expect_str_eq(decimal("AA==", 2), "0.00");
    cr_expect_str_eq(decimal("AA==", 0), "0");
    cr_expect_str_eq(decimal("AQ==", 3), "0.001");
    cr_expect_str_eq(decimal("/w==", 2), "-0.01");
    cr_expect_str_eq(decimal("gA==", 0), "-128");
    cr_expect_str_eq(decimal("gA==", 1), "-12.8");
    cr_expect_str_eq(decimal("AIA=", 0), "128");
    cr_expect_str_eq(decimal("AP8=", 2), "2.55");
    cr_expect_str_eq(decimal("AfQ=", -2), "50000");
    cr_expect_str_eq(decimal("AQAAAAAAAAAA", 0), "18446744073709551616");
    cr_expect_str_eq(decimal("/wAAAAAAAAAA", 4), "-1844674407370955.1616");
    cr_expect_str_eq(decimal("CHJ/Y2mq+DyhUCZ0evjH8ZbOPwrS", 10),
                     "1234567890123456789012345678901234567890.1234567890");
    cr_expect_str_eq(decimal("vGwE2l3LfxfW9zHWqDBJmCiuOYEW", 30),
                     "-98765432109876543210.987654321098765432109876543210");
    cr_expect_str_eq(decimal("AfQ", 2), "5.00", "padding is optional");
    /* declared scale through the callback */
    cr_expect_str_eq(value_of("\"price\":\"AfQ=\"", "price"), "0.500");
    cr_expect_str_eq(value_of("\"price\":\"/gw=\"", "price"), "-0.500");
    cr_expect_str_eq(value_of("\"price\":\"AA==\"", "price"), "0.000");
}

Test(decode, base64_decimal_many_digits)
{
    /* 2^800 - 1 as 101 bytes (leading 0x00), scale 0: compare with a
     * decimal conversion done by doubling. */
    unsigned char raw[101];
    raw[0] = 0;
    memset(raw + 1, 0xFF, 100);
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char b64[256];
    size_t o = 0;
    for (size_t i = 0; i < sizeof raw; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16 | (i + 1 < sizeof raw ? (uint32_t)raw[i + 1] << 8 : 0) |
                     (i + 2 < sizeof raw ? raw[i + 2] : 0);
        b64[o++] = tbl[v >> 18 & 63];
        b64[o++] = tbl[v >> 12 & 63];
        b64[o++] = i + 1 < sizeof raw ? tbl[v >> 6 & 63] : '=';
        b64[o++] = i + 2 < sizeof raw ? tbl[v & 63] : '=';
    }
    b64[o] = 0;
    /* 2^800 by repeated doubling of a decimal digit string, then minus 1 */
    char d[400];
    int nd = 1;
    d[0] = 1; /* little-endian digits */
    for (int k = 0; k < 800; k++) {
        int carry = 0;
        for (int i = 0; i < nd; i++) {
            int v = d[i] * 2 + carry;
            d[i] = (char)(v % 10);
            carry = v / 10;
        }
        if (carry) d[nd++] = (char)carry;
    }
    for (int i = 0; i < nd; i++) {
        if (d[i] > 0) {
            d[i]--;
            break;
        }
        d[i] = 9;
    }
    char want[400];
    for (int i = 0; i < nd; i++) want[i] = (char)('0' + d[nd - 1 - i]);
    want[nd] = 0;
    cr_expect_str_eq(decimal(b64, 0), want);
}

/* ---- Error messages ---- */

Test(decode, error_message_names_position_table_key_and_column)
{
    cdc__event ev = {0};
    cdc_error_t err;
    int rc = dec("{\"order_id\":7}", "{\"op\":\"c\",\"after\":{\"order_id\":7,\"amount\":\"40.00\"},\"source\":{\"lsn\":1}}",
                 &ev, &err);
    cr_assert_eq(rc, CDC_EDECODE);
    cr_expect(strncmp(err.msg, "shop.public.orders[0]@42: table public.orders: key {\"order_id\":7}: column amount: "
                               "wrong type",
                      strlen("shop.public.orders[0]@42: table public.orders: key {\"order_id\":7}: column amount: "
                             "wrong type")) == 0,
              "%s", err.msg);
    cr_expect(strstr(err.msg, "\"40.00\""), "the message quotes the value: %s", err.msg);

    cdc_record_t r = rec_of(NULL, -1, NULL, "{\"op\":\"q\"}");
    r.source = "events.jsonl";
    r.line = 12;
    rc = cdc__decode_record(&r, NULL, NULL, &ev, &err);
    cr_assert_eq(rc, CDC_EDECODE);
    cr_expect(strncmp(err.msg, "events.jsonl:12: unknown op", 27) == 0, "%s", err.msg);
    /* err may be NULL */
    cr_expect_eq(cdc__decode_record(&r, NULL, NULL, &ev, NULL), CDC_EDECODE);
}

Test(decode, event_free_is_safe)
{
    cdc__event ev = {0};
    cdc__event_free(&ev);
    cdc__event_free(&ev);
    cdc__event_free(NULL);
    expect_ok(NULL, "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":1}}", &ev);
    cdc__event_free(&ev);
    cr_expect_null(ev.table);
    cdc__event_free(&ev);
}

Test(decode, value_not_nul_terminated)
{
    /* The decoder reads value_len bytes and nothing more. */
    const char *text = "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":1}}GARBAGE";
    size_t n = strlen(text) - 7;
    char *copy = malloc(n);
    memcpy(copy, text, n);
    cdc_record_t r = rec_of(TOPIC, 1, NULL, NULL);
    r.value = copy;
    r.value_len = n;
    char key[] = {'{', '"', 'i', 'd', '"', ':', '1', '}'};
    r.key = key;
    r.key_len = sizeof key;
    cdc__event ev = {0};
    cdc_error_t err = {0};
    cr_expect_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), 0, "%s", err.msg);
    cr_expect_str_eq(keyjson(&ev), "{\"id\":1}");
    cdc__event_free(&ev);
    free(copy);
}

/* ---- Bad input: one test per case ---- */

#define BAD(name, key, value, what) \
    Test(decode_bad, name) { expect_bad(key, value, what); }

#define K "{\"order_id\":1}"
#define ROW "\"after\":{\"order_id\":1}"

BAD(malformed_json, K, "{\"op\":\"c\",", "malformed JSON")
BAD(malformed_json_garbage_after, K, "{\"op\":\"c\"} x", "malformed JSON")
BAD(malformed_two_values, K, "{} {}", "malformed JSON")
BAD(malformed_garbage_after_says_so, K, "{\"op\":\"c\"} x", "text after the JSON value")
/* A member given twice: JSON leaves which one counts to the reader (Jackson
 * takes the last), so the record is refused, never read by a guess. */
BAD(op_twice, K, "{\"op\":\"u\",\"op\":\"d\"," ROW ",\"source\":{\"lsn\":1}}", "the envelope holds op twice")
BAD(after_twice, K,
    "{\"op\":\"c\"," ROW ",\"after\":{\"order_id\":1,\"x\":2},\"source\":{\"lsn\":1}}",
    "the envelope holds after twice")
BAD(lsn_twice, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":300,\"lsn\":50}}",
    "the source block holds lsn twice")
BAD(empty_value, K, "", "empty")
BAD(envelope_array, K, "[1,2]", "not a Debezium envelope")
BAD(envelope_string, K, "\"c\"", "not a Debezium envelope")
BAD(envelope_number, K, "42", "not a Debezium envelope")
BAD(wrapped_payload_array, K, "{\"schema\":{},\"payload\":[]}", "not a Debezium envelope")
BAD(missing_op, K, "{" ROW ",\"source\":{\"lsn\":1}}", "unknown op")
BAD(unknown_op, K, "{\"op\":\"x\"," ROW ",\"source\":{\"lsn\":1}}", "unknown op")
BAD(op_two_letters, K, "{\"op\":\"cu\"," ROW ",\"source\":{\"lsn\":1}}", "unknown op")
BAD(op_empty, K, "{\"op\":\"\"," ROW ",\"source\":{\"lsn\":1}}", "unknown op")
BAD(op_number, K, "{\"op\":1," ROW ",\"source\":{\"lsn\":1}}", "unknown op")
BAD(op_null, K, "{\"op\":null," ROW ",\"source\":{\"lsn\":1}}", "unknown op")
BAD(missing_source, K, "{\"op\":\"c\"," ROW "}", "missing LSN")
BAD(missing_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{}}", "missing LSN")
BAD(null_lsn, K, "{\"op\":\"u\"," ROW ",\"source\":{\"lsn\":null}}", "missing LSN")
BAD(null_lsn_snapshot, K, "{\"op\":\"r\"," ROW ",\"source\":{\"lsn\":null,\"snapshot\":\"true\"}}", "missing LSN")
BAD(string_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":\"23861720\"}}", "non-numeric LSN")
BAD(bool_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":true}}", "non-numeric LSN")
BAD(object_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":{}}}", "non-numeric LSN")
BAD(negative_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":-1}}", "LSN out of range")
BAD(fractional_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1.5}}", "LSN out of range")
BAD(huge_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":18446744073709551616}}", "LSN out of range")
BAD(infinite_lsn, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1e400}}", "LSN out of range")
BAD(incremental_string_lsn, K,
    "{\"op\":\"r\"," ROW ",\"source\":{\"lsn\":\"x\",\"snapshot\":\"incremental\"}}", "non-numeric LSN")
BAD(incremental_without_sequence, K, "{\"op\":\"r\"," ROW ",\"source\":{\"lsn\":null,\"snapshot\":\"incremental\"}}",
    "incremental snapshot read without a commit position")
BAD(incremental_null_commit, K,
    "{\"op\":\"r\"," ROW ",\"source\":{\"snapshot\":\"incremental\",\"sequence\":\"[null,\\\"5\\\"]\"}}",
    "incremental snapshot read without a commit position")
BAD(sequence_number, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"sequence\":5}}", "source.sequence 5 is not")
BAD(sequence_array, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"sequence\":[\"1\",\"2\"]}}", "source.sequence")
BAD(sequence_numbers_inside, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"sequence\":\"[1,2]\"}}",
    "source.sequence")
BAD(sequence_one_element, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"sequence\":\"[\\\"1\\\"]\"}}",
    "source.sequence")
BAD(sequence_trailing, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"sequence\":\"[\\\"1\\\",\\\"2\\\"]x\"}}",
    "source.sequence")
BAD(sequence_overflow, K,
    "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"sequence\":\"[\\\"18446744073709551616\\\",\\\"2\\\"]\"}}",
    "source.sequence")
BAD(sequence_negative, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"sequence\":\"[\\\"-1\\\",\\\"2\\\"]\"}}",
    "source.sequence")
BAD(source_string, K, "{\"op\":\"c\"," ROW ",\"source\":\"pg\"}", "source is a string, not an object")
BAD(source_array, K, "{\"op\":\"c\"," ROW ",\"source\":[]}", "source is an array")
BAD(source_schema_number, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"schema\":1,\"table\":\"t\"}}",
    "source.schema is a number")
BAD(source_table_object, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"schema\":\"s\",\"table\":{}}}",
    "source.table is an object")
BAD(snapshot_number, K, "{\"op\":\"r\"," ROW ",\"source\":{\"lsn\":1,\"snapshot\":1}}", "source.snapshot")
BAD(snapshot_unknown, K, "{\"op\":\"r\"," ROW ",\"source\":{\"lsn\":1,\"snapshot\":\"maybe\"}}",
    "unknown source.snapshot")
BAD(ts_ms_string, K, "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1,\"ts_ms\":\"now\"}}", "ts_ms")
BAD(ts_ms_fraction, K, "{\"op\":\"c\"," ROW ",\"ts_ms\":1.5,\"source\":{\"lsn\":1}}", "ts_ms")
BAD(after_array, K, "{\"op\":\"c\",\"after\":[1],\"source\":{\"lsn\":1}}", "after is an array")
BAD(after_string, K, "{\"op\":\"u\",\"after\":\"x\",\"source\":{\"lsn\":1}}", "after is a string")
BAD(before_number, K, "{\"op\":\"d\",\"before\":5,\"source\":{\"lsn\":1}}", "before is a number")
BAD(after_missing, K, "{\"op\":\"c\",\"source\":{\"lsn\":1}}", "after is missing")
BAD(after_null_update, K, "{\"op\":\"u\",\"after\":null,\"source\":{\"lsn\":1}}", "after is missing")
BAD(key_mismatch, "{\"order_id\":2}", "{\"op\":\"u\"," ROW ",\"source\":{\"lsn\":1}}", "key does not match the row")
BAD(key_mismatch_type, "{\"order_id\":\"1\"}", "{\"op\":\"u\"," ROW ",\"source\":{\"lsn\":1}}",
    "key does not match the row")
BAD(key_mismatch_delete, "{\"order_id\":2}", "{\"op\":\"d\",\"before\":{\"order_id\":1},\"source\":{\"lsn\":1}}",
    "key does not match the row")
BAD(key_column_not_in_after, "{\"id\":1}", "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1}}",
    "key does not match the row")
BAD(key_null, "{\"order_id\":null}", "{\"op\":\"c\",\"after\":{\"order_id\":null},\"source\":{\"lsn\":1}}",
    "unsupported key type")
BAD(key_object, "{\"order_id\":{}}", "{\"op\":\"c\",\"after\":{\"order_id\":{}},\"source\":{\"lsn\":1}}",
    "unsupported key type")
BAD(key_beyond_bigint, "{\"order_id\":9223372036854775808}",
    "{\"op\":\"c\",\"after\":{\"order_id\":9223372036854775808},\"source\":{\"lsn\":1}}",
    "out of the range of a bigint")
BAD(first_column_key_float, NULL, "{\"op\":\"c\",\"after\":{\"v\":0.5,\"id\":1},\"source\":{\"lsn\":1}}",
    "unsupported key type")
BAD(first_column_key_null, NULL, "{\"op\":\"c\",\"after\":{\"id\":null},\"source\":{\"lsn\":1}}",
    "unsupported key type")
BAD(no_key_no_row, NULL, "{\"op\":\"d\",\"before\":null,\"source\":{\"lsn\":1}}", "no Kafka key and no row")
BAD(no_key_empty_row, NULL, "{\"op\":\"c\",\"after\":{},\"source\":{\"lsn\":1}}", "no Kafka key and no row")
BAD(kafka_key_malformed, "{\"order_id\":", "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1}}",
    "malformed JSON in the Kafka key")
BAD(kafka_key_array, "[1]", "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1}}", "Kafka key is an array")
BAD(kafka_key_number, "1", "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1}}", "Kafka key is a number")
BAD(kafka_key_column_twice, "{\"order_id\":1,\"order_id\":2}",
    "{\"op\":\"d\",\"before\":null,\"source\":{\"lsn\":1}}", "names the column twice")
BAD(kafka_key_empty_object, "{}", "{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1}}", "no columns")
BAD(value_infinite, K, "{\"op\":\"c\",\"after\":{\"order_id\":1,\"n\":-1e999},\"source\":{\"lsn\":1}}",
    "out of range")
BAD(declared_scale_not_base64, K, "{\"op\":\"c\",\"after\":{\"order_id\":1,\"amount\":\"40.00\"},\"source\":{\"lsn\":1}}",
    "wrong type")
BAD(declared_scale_empty, K, "{\"op\":\"c\",\"after\":{\"order_id\":1,\"amount\":\"\"},\"source\":{\"lsn\":1}}",
    "wrong type")
BAD(varscale_bad_base64, K,
    "{\"op\":\"c\",\"after\":{\"order_id\":1,\"w\":{\"scale\":1,\"value\":\"!!\"}},\"source\":{\"lsn\":1}}",
    "wrong type")
BAD(varscale_bad_scale, K,
    "{\"op\":\"c\",\"after\":{\"order_id\":1,\"w\":{\"scale\":1.5,\"value\":\"AQ==\"}},\"source\":{\"lsn\":1}}",
    "wrong type")
BAD(unbalanced_brackets, K, "{\"op\":\"c\",\"after\":{\"order_id\":1,\"x\":[[[[[]}}", "malformed JSON")

Test(decode_bad, deep_nesting)
{
    /* 5000 nested arrays: beyond cJSON's nesting limit, refused without
     * exhausting the stack. */
    const char *head = "{\"op\":\"c\",\"after\":{\"order_id\":1,\"x\":";
    size_t depth = 5000, hl = strlen(head);
    char *v = malloc(hl + 2 * depth + 8);
    memcpy(v, head, hl);
    memset(v + hl, '[', depth);
    memset(v + hl + depth, ']', depth);
    strcpy(v + hl + 2 * depth, "}}");
    expect_bad(K, v, "malformed JSON");
    free(v);
}

/* Typed values with a schema that does not match. */
static void expect_bad_typed(const char *field_schema, const char *value, const char *what)
{
    char v[4096];
    snprintf(v, sizeof v,
             "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
             "{\"type\":\"int32\",\"field\":\"order_id\"},%s]}]},"
             "\"payload\":{\"op\":\"c\",\"after\":{\"order_id\":1,\"x\":%s},\"source\":{\"lsn\":1}}}",
             field_schema, value);
    expect_bad(K, v, what);
}

#define BADT(name, fs, value, what) \
    Test(decode_bad_typed, name) { expect_bad_typed(fs, value, what); }

BADT(int32_string, "{\"type\":\"int32\",\"field\":\"x\"}", "\"12\"", "wrong type")
BADT(int32_fraction, "{\"type\":\"int32\",\"field\":\"x\"}", "1.5", "wrong type")
BADT(int16_range, "{\"type\":\"int16\",\"field\":\"x\"}", "40000", "wrong type")
BADT(int64_string, "{\"type\":\"int64\",\"field\":\"x\"}", "\"12\"", "wrong type")
BADT(int64_beyond_range, "{\"type\":\"int64\",\"field\":\"x\"}", "9223372036854775808", "out of range for int64")
BADT(int64_exponent, "{\"type\":\"int64\",\"field\":\"x\"}", "1e19", "wrong type")
BADT(boolean_number, "{\"type\":\"boolean\",\"field\":\"x\"}", "1", "wrong type")
BADT(string_number, "{\"type\":\"string\",\"field\":\"x\"}", "1", "wrong type")
BADT(float_string, "{\"type\":\"float64\",\"field\":\"x\"}", "\"1.5\"", "wrong type")
BADT(bytes_not_base64, "{\"type\":\"bytes\",\"field\":\"x\"}", "\"#\"", "wrong type")
BADT(struct_array, "{\"type\":\"struct\",\"field\":\"x\"}", "[]", "wrong type")
BADT(array_object, "{\"type\":\"array\",\"field\":\"x\"}", "{}", "wrong type")
BADT(decimal_number, "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
     "\"parameters\":{\"scale\":\"2\"},\"field\":\"x\"}", "5.0", "wrong type")
BADT(decimal_not_base64, "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
     "\"parameters\":{\"scale\":\"2\"},\"field\":\"x\"}", "\"5.00\"", "wrong type")
BADT(decimal_without_scale, "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
     "\"field\":\"x\"}", "\"AQ==\"", "without a scale")
BADT(decimal_bad_scale, "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
     "\"parameters\":{\"scale\":\"two\"},\"field\":\"x\"}", "\"AQ==\"", "scale")
BADT(varscale_string, "{\"type\":\"struct\",\"name\":\"io.debezium.data.VariableScaleDecimal\","
     "\"field\":\"x\"}", "\"1.5\"", "wrong type")
BADT(date_string, "{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"x\"}", "\"2024-01-01\"",
     "wrong type")
BADT(microtimestamp_string, "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"x\"}",
     "\"2024\"", "wrong type")
BADT(microtimestamp_beyond_int64, "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"x\"}",
     "9223372036854775808", "out of range for int64")
BADT(timestamp_ms_overflow, "{\"type\":\"int64\",\"name\":\"io.debezium.time.Timestamp\",\"field\":\"x\"}",
     "9223372036854776", "out of range")
BADT(date_beyond_range, "{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"x\"}",
     "9007199254740993", "out of range")
BADT(microtime_negative, "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTime\",\"field\":\"x\"}", "-1",
     "out of range")

Test(decode_bad, schema_not_object)
{
    expect_bad(K, "{\"schema\":[],\"payload\":{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1}}}", "schema");
}

Test(decode_bad, schema_fields_not_array)
{
    expect_bad(K, "{\"schema\":{\"fields\":{}},\"payload\":{\"op\":\"c\"," ROW ",\"source\":{\"lsn\":1}}}",
               "fields");
}

Test(decode_bad, embedded_nul)
{
    const char text[] = "{\"op\":\"c\",\0\"after\":{\"order_id\":1},\"source\":{\"lsn\":1}}";
    cdc_record_t r = rec_of(TOPIC, 42, K, NULL);
    r.value = text;
    r.value_len = sizeof text - 1;
    cdc__event ev = {0};
    cdc_error_t err = {0};
    cr_expect_eq(cdc__decode_record(&r, NULL, NULL, &ev, &err), CDC_EDECODE);
    cr_expect(strstr(err.msg, "malformed JSON"), "%s", err.msg);
}

/* Every prefix of a valid schema envelope, and every single-byte corruption
 * of it, decodes or fails cleanly (ASan checks the memory). */
Test(decode_bad, truncations_and_corruptions)
{
    const char *v = schema_value(SCHEMA_ROW, "u");
    size_t n = strlen(v);
    char *buf = malloc(n + 1);
    static const char subst[] = "{}[]\",:0a\\";
    int ok = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        cdc_record_t r = rec_of(TOPIC, 1, SCHEMA_KEY, NULL);
        memcpy(buf, v, i);
        r.value = buf;
        r.value_len = i;
        cdc__event ev = {0};
        cdc_error_t err = {0};
        int rc = cdc__decode_record(&r, scale_cb, NULL, &ev, &err);
        cr_assert_eq(rc, CDC_EDECODE, "prefix %zu: %d", i, rc);
        for (size_t s = 0; s < sizeof subst - 1; s += 3) {
            memcpy(buf, v, n + 1);
            buf[i] = subst[(i + s) % (sizeof subst - 1)];
            r.value = buf;
            r.value_len = n;
            rc = cdc__decode_record(&r, scale_cb, NULL, &ev, &err);
            cr_assert(rc == 0 || rc == 1 || rc == CDC_EDECODE, "corruption at %zu: %d", i, rc);
            if (rc == 0) {
                ok++;
                cdc__event_free(&ev);
            } else if (rc == CDC_EDECODE) {
                bad++;
                cr_assert_neq(err.msg[0], 0);
            }
        }
    }
    free(buf);
    cr_expect_gt(bad, 0);
    cr_expect_gt(ok, 0);
}

/* ---- Real Debezium output (.jsonl files in tests/data/debezium, kcat -J lines) ---- */

#ifndef CDC_TEST_DATA
#define CDC_TEST_DATA "tests/data/debezium"
#endif

/* Calls fn for every record of every file; returns the number of records. */
static size_t for_each_record(void (*fn)(const char *file, long line, const cdc_record_t *r, void *), void *arg)
{
    DIR *d = opendir(CDC_TEST_DATA);
    if (!d) return 0;
    struct dirent *de;
    size_t count = 0;
    char *names[256];
    size_t nn = 0;
    while ((de = readdir(d)) && nn < 256) {
        size_t l = strlen(de->d_name);
        if (l > 6 && !strcmp(de->d_name + l - 6, ".jsonl")) names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    for (size_t f = 0; f < nn; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", CDC_TEST_DATA, names[f]);
        FILE *fp = fopen(path, "r");
        cr_assert_not_null(fp, "%s", path);
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        long ln = 0;
        while ((len = getline(&line, &cap, fp)) >= 0) {
            ln++;
            if (len <= 1) continue;
            cJSON *j = cJSON_ParseWithLength(line, (size_t)len);
            cr_assert_not_null(j, "%s:%ld: not JSON", path, ln);
            const cJSON *topic = cJSON_GetObjectItemCaseSensitive(j, "topic");
            const cJSON *part = cJSON_GetObjectItemCaseSensitive(j, "partition");
            const cJSON *off = cJSON_GetObjectItemCaseSensitive(j, "offset");
            const cJSON *key = cJSON_GetObjectItemCaseSensitive(j, "key");
            const cJSON *payload = cJSON_GetObjectItemCaseSensitive(j, "payload");
            cr_assert(cJSON_IsString(topic) && cJSON_IsNumber(part) && cJSON_IsNumber(off),
                      "%s:%ld: not a kcat -J line", path, ln);
            cdc_record_t r = {0};
            r.topic = topic->valuestring;
            r.partition = (int32_t)part->valuedouble;
            r.offset = (int64_t)off->valuedouble;
            if (cJSON_IsString(key)) {
                r.key = key->valuestring;
                r.key_len = strlen(key->valuestring);
            }
            if (cJSON_IsString(payload)) {
                r.value = payload->valuestring;
                r.value_len = strlen(payload->valuestring);
            }
            r.source = names[f];
            r.line = ln;
            fn(names[f], ln, &r, arg);
            count++;
            cJSON_Delete(j);
        }
        free(line);
        fclose(fp);
        free(names[f]);
    }
    return count;
}

struct real_counts {
    size_t events, tombstones, ops[128];
};

static void decode_real(const char *file, long line, const cdc_record_t *r, void *arg)
{
    struct real_counts *c = arg;
    cdc__event ev = {0};
    cdc_error_t err = {0};
    int rc = cdc__decode_record(r, NULL, NULL, &ev, &err);
    cr_assert(rc == 0 || rc == 1, "%s:%ld: %s", file, line, err.msg);
    if (rc == 1) {
        cr_expect_null(r->value, "%s:%ld: only null values are tombstones", file, line);
        c->tombstones++;
        return;
    }
    c->events++;
    c->ops[ev.action]++;
    if (ev.action != CDC__ACT_NOOP) {
        cr_expect_not_null(ev.table);
        if (ev.snapshot != CDC__SNAP_INCREMENTAL) cr_expect_gt(ev.lsn, 0, "%s:%ld", file, line);
    }
    if (ev.action == CDC__ACT_UPSERT || ev.action == CDC__ACT_DELETE) cr_expect_gt(ev.key.len, 0);
    cdc__event_free(&ev);
}

Test(decode_real, every_captured_record_decodes)
{
    struct real_counts c = {0};
    size_t n = for_each_record(decode_real, &c);
    if (n == 0) {
        cr_log_warn("no captured Debezium output in %s yet", CDC_TEST_DATA);
        return;
    }
    cr_expect_eq(c.events + c.tombstones, n);
    cr_log_info("%zu records: %zu events (upserts %zu, deletes %zu, truncates %zu, messages %zu), %zu tombstones", n,
                c.events, c.ops[CDC__ACT_UPSERT], c.ops[CDC__ACT_DELETE], c.ops[CDC__ACT_FLOOR], c.ops[CDC__ACT_NOOP],
                c.tombstones);
}

/* One captured record, found by topic and offset, decoded. */
struct loaded {
    cdc__event ev;
    int rc;
    char msg[1024];
};

struct find_query {
    const char *file, *topic;
    int64_t offset;
    cdc__scale_fn scale;
    struct loaded *out;
    int found;
};

static void find_cb(const char *file, long line, const cdc_record_t *r, void *arg)
{
    (void)line;
    struct find_query *q = arg;
    if (strcmp(file, q->file) || strcmp(r->topic, q->topic) || r->offset != q->offset) return;
    cdc_error_t err = {0};
    q->out->rc = cdc__decode_record(r, q->scale, NULL, &q->out->ev, &err);
    memcpy(q->out->msg, err.msg, sizeof err.msg);
    q->found++;
}

/* Decodes the record of file at topic/offset; skips the test when the
 * captured files are not there. */
static void load(const char *file, const char *topic, int64_t offset, cdc__scale_fn scale, struct loaded *out)
{
    struct find_query q = {file, topic, offset, scale, out, 0};
    memset(out, 0, sizeof *out);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CDC_TEST_DATA, file);
    FILE *fp = fopen(path, "r");
    if (!fp) cr_skip_test("%s not captured yet", path);
    fclose(fp);
    for_each_record(find_cb, &q);
    cr_assert_eq(q.found, 1, "%s: %s@%lld not found", file, topic, (long long)offset);
}

Test(decode_real, precise_decimals_with_declared_scale)
{
    struct loaded l;
    load("precise_decimal.jsonl", TOPIC, 0, scale_cb, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_eq(l.ev.action, act('r'));
    cr_expect_eq(l.ev.snapshot, CDC__SNAP_TRUE, "snapshot \"first\"");
    cr_expect_eq(l.ev.lsn, 40477152);
    cr_expect_eq(l.ev.ts_ms, 1796232074629LL);
    cr_expect_str_eq(keyjson(&l.ev), "{\"order_id\":1}");
    cr_expect_str_eq(col(&l.ev, "amount"), "25.00");
    /* PostgreSQL holds 1.250: Debezium's variable-scale struct drops the
     * trailing zero (scale 2, 125), so only the value survives. */
    cr_expect_str_eq(col(&l.ev, "weight_kg"), "1.25");
    cr_expect_str_eq(col(&l.ev, "created_at"), "1768471200123456", "no schema: the number as it came");
    cr_expect_str_eq(col(&l.ev, "paid"), "t");
    cr_expect_str_eq(col(&l.ev, "shipped_at"), "2026-01-16T08:30:00.000000Z");
    cdc__event_free(&l.ev);

    load("precise_decimal.jsonl", TOPIC, 6, scale_cb, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_str_eq(col(&l.ev, "amount"), "99999999.99");
    cdc__event_free(&l.ev);

    load("precise_decimal.jsonl", TOPIC, 11, scale_cb, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_eq(l.ev.action, act('u'));
    cr_expect_str_eq(col(&l.ev, "amount"), "-5.25");
    cr_expect_str_eq(col(&l.ev, "weight_kg"), "-0.001");
    cr_expect_str_eq(col(&l.ev, "status"), "<NULL>");
    cdc__event_free(&l.ev);

    /* Without the declared scale the base64 text is kept, not guessed. */
    load("precise_decimal.jsonl", TOPIC, 5, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_str_eq(col(&l.ev, "amount"), "AQ==");
    cdc__event_free(&l.ev);
    load("precise_decimal.jsonl", TOPIC, 5, scale_cb, &l);
    cr_expect_str_eq(col(&l.ev, "amount"), "0.01");
    cdc__event_free(&l.ev);
}

Test(decode_real, schemas_enabled)
{
    struct loaded l;
    load("schemas_enabled.jsonl", TOPIC, 0, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_eq(l.ev.lsn, 45066472);
    cr_expect_str_eq(keyjson(&l.ev), "{\"order_id\":1}");
    cr_expect_str_eq(cols(&l.ev), "order_id,status,amount,note,created_at,paid,weight_kg,shipped_at");
    cr_expect_str_eq(col(&l.ev, "amount"), "25.00", "the scale comes from the schema");
    cr_expect_str_eq(col(&l.ev, "created_at"), "2026-01-15 10:00:00.123456");
    cr_expect_str_eq(col(&l.ev, "weight_kg"), "1.25");
    cdc__event_free(&l.ev);

    load("schemas_enabled.jsonl", TOPIC, 6, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_str_eq(col(&l.ev, "amount"), "99999999.99");
    cr_expect_str_eq(col(&l.ev, "created_at"), "2026-01-16 10:00:01");
    cdc__event_free(&l.ev);

    load("schemas_enabled.jsonl", TOPIC, 12, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_eq(l.ev.action, act('d'));
    cr_expect_eq(l.ev.lsn, 45068312);
    cr_expect_str_eq(keyjson(&l.ev), "{\"order_id\":2}");
    cdc__event_free(&l.ev);

    load("schemas_enabled.jsonl", TOPIC, 13, NULL, &l);
    cr_expect_eq(l.rc, 1, "a tombstone");
}

Test(decode_real, string_decimals_snapshot_markers_and_deletes)
{
    struct loaded l;
    load("snapshot_stream.jsonl", TOPIC, 2, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_eq(l.ev.snapshot, CDC__SNAP_LAST, "snapshot \"last\"");
    cr_expect_str_eq(col(&l.ev, "amount"), "60.00");
    cr_expect_str_eq(col(&l.ev, "weight_kg"), "0.5");
    cdc__event_free(&l.ev);

    load("snapshot_stream.jsonl", TOPIC, 7, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_eq(l.ev.snapshot, CDC__SNAP_NONE);
    cr_expect_eq(l.ev.action, act('u'));
    cr_expect_eq(l.ev.lsn, 31318712);
    cr_expect_str_eq(col(&l.ev, "status"), "shipped");
    cdc__event_free(&l.ev);

    load("snapshot_stream.jsonl", TOPIC, 12, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_eq(l.ev.action, act('d'));
    cr_expect_str_eq(keyjson(&l.ev), "{\"order_id\":2}");
    cr_expect_str_eq(col(&l.ev, "order_id"), "2");
    cdc__event_free(&l.ev);
}

Test(decode_real, toast_placeholder)
{
    struct loaded l;
    load("toast_unchanged.jsonl", TOPIC, 2, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_str_eq(col(&l.ev, "note"), "<UNAVAILABLE>");
    cr_expect_eq(l.ev.nunavailable, 1);
    cr_expect_str_eq(col(&l.ev, "status"), "paid");
    cdc__event_free(&l.ev);
}

Test(decode_real, composite_text_and_uuid_keys)
{
    struct loaded l;
    load("composite_key.jsonl", "shop.public.order_lines", 9, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_str_eq(l.ev.table, "public.order_lines");
    cr_expect_str_eq(keyjson(&l.ev), "{\"order_id\":1,\"line_no\":3}");
    cr_expect_str_eq(col(&l.ev, "price"), "11.000");
    cdc__event_free(&l.ev);

    load("text_uuid_keys.jsonl", "shop.public.products", 2, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_str_eq(keyjson(&l.ev), "{\"sku\":\"sku/\xc3\xbc-1\"}");
    cr_expect_str_eq(col(&l.ev, "title"), "\xc3\x9cnicode key");
    cdc__event_free(&l.ev);

    load("text_uuid_keys.jsonl", "shop.public.customers", 3, NULL, &l);
    cr_assert_eq(l.rc, 0, "%s", l.msg);
    cr_expect_str_eq(l.ev.table, "public.customers");
    cr_expect_str_eq(keyjson(&l.ev), "{\"customer_id\":\"00000000-0000-0000-0000-000000000001\"}");
    cr_expect_str_eq(col(&l.ev, "tier"), "gold");
    cdc__event_free(&l.ev);
}

/* ---- Exact numbers ---- */

/* The value of column x of a typed (schemas.enable=true) event. */
static const char *typed_value(const char *field_schema, const char *value)
{
    static char out[256];
    char v[4096];
    snprintf(v, sizeof v,
             "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
             "{\"type\":\"int32\",\"field\":\"order_id\"},%s]}]},"
             "\"payload\":{\"op\":\"c\",\"after\":{\"order_id\":1,\"x\":%s},\"source\":{\"lsn\":1}}}",
             field_schema, value);
    cdc__event ev = {0};
    expect_ok(K, v, &ev);
    snprintf(out, sizeof out, "%s", col(&ev, "x"));
    cdc__event_free(&ev);
    return out;
}

/* Integers are exact at every size the source holds, from their digits;
 * floats keep PostgreSQL's float8 text (shortest round trip, exponent form
 * from 1e+15 and below 1e-04). */
Test(decode, exact_numbers)
{
    cr_expect_str_eq(value_of("\"n\":9007199254740992", "n"), "9007199254740992");
    cr_expect_str_eq(value_of("\"n\":9007199254740993", "n"), "9007199254740993", "2^53 + 1");
    cr_expect_str_eq(value_of("\"n\":9007199254740991", "n"), "9007199254740991", "2^53 - 1");
    cr_expect_str_eq(value_of("\"n\":1500000000000000001", "n"), "1500000000000000001", "a snowflake id");
    cr_expect_str_eq(value_of("\"n\":9223372036854775807", "n"), "9223372036854775807", "2^63 - 1");
    cr_expect_str_eq(value_of("\"n\":-9223372036854775808", "n"), "-9223372036854775808", "-2^63");
    cr_expect_str_eq(value_of("\"n\":18446744073709551616", "n"), "18446744073709551616", "2^64 (a numeric)");
    cr_expect_str_eq(value_of("\"n\":1e15", "n"), "1e+15");
    cr_expect_str_eq(value_of("\"n\":1.0E15", "n"), "1e+15", "as Jackson writes a double");
    cr_expect_str_eq(value_of("\"n\":1.0E20", "n"), "1e+20");
    cr_expect_str_eq(value_of("\"n\":1.7976931348623157E308", "n"), "1.7976931348623157e+308");
    cr_expect_str_eq(value_of("\"n\":1e308", "n"), "1e+308");
    cr_expect_str_eq(value_of("\"n\":4.9E-324", "n"), "5e-324", "the smallest subnormal");
    cr_expect_str_eq(value_of("\"n\":2.2250738585072014E-308", "n"), "2.2250738585072014e-308");
    cr_expect_str_eq(value_of("\"n\":1.5E-5", "n"), "1.5e-05");
    cr_expect_str_eq(value_of("\"n\":0.0001", "n"), "0.0001");
    cr_expect_str_eq(value_of("\"n\":123456789012345.6", "n"), "123456789012345.6");
    cr_expect_str_eq(value_of("\"n\":1234567890123456.5", "n"), "1.2345678901234565e+15");
    cr_expect_str_eq(typed_value("{\"type\":\"float64\",\"field\":\"x\"}", "-0.0"), "-0");
    cr_expect_str_eq(value_of("\"n\":100.25", "n"), "100.25");
    cr_expect_str_eq(value_of("\"s\":\"x 1e15 9007199254740993\",\"n\":9007199254740993", "n"), "9007199254740993",
                     "numbers inside strings are not matched");
    cr_expect_str_eq(value_of("\"a\":[1,2.5,{\"b\":3}],\"n\":9007199254740995", "n"), "9007199254740995",
                     "numbers nested before it are counted");
    /* typed */
    cr_expect_str_eq(typed_value("{\"type\":\"int64\",\"field\":\"x\"}", "9223372036854775807"), "9223372036854775807");
    cr_expect_str_eq(typed_value("{\"type\":\"int64\",\"field\":\"x\"}", "-9223372036854775808"), "-9223372036854775808");
    cr_expect_str_eq(typed_value("{\"type\":\"int64\",\"field\":\"x\"}", "9007199254740993"), "9007199254740993");
    cr_expect_str_eq(typed_value("{\"type\":\"float64\",\"field\":\"x\"}", "1.0E20"), "1e+20");
    cr_expect_str_eq(typed_value("{\"type\":\"double\",\"field\":\"x\"}", "1.0E15"), "1e+15", "named double");
    cr_expect_str_eq(typed_value("{\"type\":\"float\",\"field\":\"x\"}", "0.1"), "0.1", "named float");
    cr_expect_str_eq(typed_value("{\"type\":\"float64\",\"field\":\"x\"}", "\"NaN\""), "NaN");
    cr_expect_str_eq(typed_value("{\"type\":\"float64\",\"field\":\"x\"}", "\"-Infinity\""), "-Infinity");
}

/* Keys and LSNs past 2^53 are exact: 2^53 and 2^53 + 1 are two rows. */
Test(decode, exact_keys_and_lsns)
{
    cdc__event a = {0}, b = {0}, l = {0};
    expect_ok("{\"id\":9007199254740992}", "{\"op\":\"c\",\"after\":{\"id\":9007199254740992},\"source\":{\"lsn\":5}}", &a);
    expect_ok("{\"id\":9007199254740993}", "{\"op\":\"c\",\"after\":{\"id\":9007199254740993},\"source\":{\"lsn\":5}}", &b);
    cr_expect(a.key.len != b.key.len || memcmp(a.key.p, b.key.p, a.key.len), "two keys, not one");
    cr_expect_str_eq(keyjson(&b), "{\"id\":9007199254740993}");
    expect_ok("{\"id\":1}", "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":9007199254740993}}", &l);
    cr_expect_eq(l.lsn, 9007199254740993ULL);
    cdc__event_free(&l);
    expect_ok("{\"id\":1}", "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":18446744073709551615}}", &l);
    cr_expect_eq(l.lsn, UINT64_MAX);
    cdc__event_free(&l);
    /* the key and the row must agree digit for digit past 2^53 */
    cdc__event m = {0};
    cdc_error_t err = {0};
    cr_expect_eq(dec("{\"id\":9007199254740993}",
                     "{\"op\":\"c\",\"after\":{\"id\":9007199254740992},\"source\":{\"lsn\":5}}", &m, &err),
                 CDC_EDECODE, "a row of 2^53 under a key of 2^53 + 1");
    cdc__event_free(&m);
    cdc__event_free(&a);
    cdc__event_free(&b);
}

/* A primary key of two columns named schema and payload is a key, not the
 * JsonConverter's schemas.enable=true wrapper (whose schema is an object or
 * null); the wrapper itself still unwraps. */
Test(decode, key_columns_named_schema_and_payload)
{
    cdc__event ev = {0};
    expect_ok("{\"schema\":\"a\",\"payload\":\"b\"}",
              "{\"op\":\"c\",\"after\":{\"schema\":\"a\",\"payload\":\"b\",\"v\":1},\"source\":{\"lsn\":5}}", &ev);
    cr_expect_str_eq(keyjson(&ev), "{\"schema\":\"a\",\"payload\":\"b\"}");
    cdc__event_free(&ev);
    cdc__event w = {0};
    expect_ok("{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"}]},"
              "\"payload\":{\"id\":7}}",
              "{\"op\":\"c\",\"after\":{\"id\":7},\"source\":{\"lsn\":5}}", &w);
    cr_expect_str_eq(keyjson(&w), "{\"id\":7}");
    cdc__event_free(&w);
    cdc__event n = {0};
    expect_ok("{\"schema\":null,\"payload\":{\"id\":8}}", "{\"op\":\"c\",\"after\":{\"id\":8},\"source\":{\"lsn\":5}}", &n);
    cr_expect_str_eq(keyjson(&n), "{\"id\":8}");
    cdc__event_free(&n);
}

/* The one JSON string writer: control characters (C0, DEL, C1) escaped,
 * printable UTF-8 kept, a byte that is not UTF-8 replaced so the output
 * stays JSON. */
Test(json, string_writer)
{
    cdc__buf b = {0};
    const char in[] = "a\"b\\c\n\t\x01\x7f\xc2\x9b\xc3\xa9\xe2\x82\xac\xff\xc3";
    cdc__json_put_string(&b, in, sizeof in - 1);
    cdc__buf_putc(&b, 0);
    cr_expect_str_eq(b.p, "\"a\\\"b\\\\c\\n\\t\\u0001\\u007f\\u009b\xc3\xa9\xe2\x82\xac\\ufffd\\ufffd\"");
    cdc__buf_free(&b);
}

/* The string reader (kcat -J lines: the payload is one JSON string) copies
 * plain runs sixteen bytes at a time: every length, with the quotes,
 * backslashes, control characters and UTF-8 the writer escapes at every
 * offset of a block, read back equal, ending just past the closing quote,
 * appended to what the buffer holds; a literal cut anywhere is refused. */
Test(json, string_reader_every_offset)
{
    const char *pieces[] = {"\"", "\\", "\n", "\x01", "\xc3\xa9", "\xf0\x9f\x98\x80", "/", "\x7f"};
    unsigned seed = 7;
    for (size_t len = 0; len < 80; len++)
        for (size_t at = 0; at <= len; at++)
            for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++) {
                cdc__buf in = {0}, lit = {0}, out = {0};
                for (size_t i = 0; i < len; i++) {
                    if (i == at) cdc__buf_put(&in, pieces[k], strlen(pieces[k]));
                    seed = seed * 1103515245u + 12345u;
                    cdc__buf_putc(&in, (char)('a' + (seed >> 16) % 26));
                }
                if (at == len) cdc__buf_put(&in, pieces[k], strlen(pieces[k]));
                cdc__json_put_string(&lit, in.p, in.len);
                size_t litlen = lit.len;
                cdc__buf_put(&lit, ",\"x\":\"tail\"}", 12);
                cdc__buf_put(&out, "prefix", 6);
                const char *end = cdc__json_read_string(lit.p, lit.p + lit.len, &out);
                cr_assert(end == lit.p + litlen, "length %zu, piece %zu at %zu: stopped at %td of %zu", len, k, at,
                          end ? end - lit.p : -1, litlen);
                cr_assert(out.len == 6 + in.len && !memcmp(out.p, "prefix", 6) && !memcmp(out.p + 6, in.p, in.len),
                          "length %zu, piece %zu at %zu: read back different", len, k, at);
                for (size_t cut = 0; cut < litlen; cut++) {
                    out.len = 0;
                    cr_assert(!cdc__json_read_string(lit.p, lit.p + cut, &out), "cut at %zu of %zu read", cut,
                              litlen);
                }
                cdc__buf_free(&in);
                cdc__buf_free(&lit);
                cdc__buf_free(&out);
            }
}

/* The reader's run of quote escapes (copy_pairs, where the processor has
 * BMI2): strings dense in quotes, as an envelope in a kcat line is, mixed
 * with the escapes that end such a run (a backslash, a newline, a control
 * character) and UTF-8, at every length up to 300 and every alignment of a
 * pair to the sixteen-byte blocks, read back equal with the run on and off,
 * ending just past the closing quote; a literal cut anywhere is refused. */
Test(json, string_reader_quote_runs)
{
    const char *pieces[] = {"\"", "\"", "\"", "\"", "a", "b", "\\", "\n", "\x01", "\xc3\xa9", "\xf0\x9f\x98\x80"};
    const size_t np = sizeof pieces / sizeof *pieces;
    unsigned seed = 11;
    int saved = cdc__json_pairs;
    for (int pass = 0; pass < 400; pass++)
        for (size_t len = 0; len < 300; len += 1 + (size_t)(pass % 7)) {
            cdc__buf in = {0}, lit = {0}, out = {0};
            /* mostly quotes and letters; the others rarely, or never in
             * every fourth string (a run to the end) */
            for (size_t i = 0; i < len; i++) {
                seed = seed * 1103515245u + 12345u;
                unsigned r = (seed >> 16) % 100;
                size_t k = r < 40 ? 0 : r < 95 || pass % 4 == 0 ? 4 + (r & 1) : 6 + r % (np - 6);
                cdc__buf_put(&in, pieces[k], strlen(pieces[k]));
            }
            cdc__json_put_string(&lit, in.p, in.len);
            size_t litlen = lit.len;
            cdc__buf_put(&lit, ",\"x\":\"tail, long enough for a block past the end\"}", 48);
            for (int on = 0; on < 2; on++) {
                cdc__json_pairs = on ? saved : 0;
                out.len = 0;
                cdc__buf_put(&out, "prefix", 6);
                const char *end = cdc__json_read_string(lit.p, lit.p + lit.len, &out);
                cr_assert(end == lit.p + litlen, "pass %d length %zu (run %s): stopped at %td of %zu", pass, len,
                          on ? "on" : "off", end ? end - lit.p : -1, litlen);
                cr_assert(out.len == 6 + in.len && !memcmp(out.p, "prefix", 6) &&
                              (!in.len || !memcmp(out.p + 6, in.p, in.len)),
                          "pass %d length %zu (run %s): read back different", pass, len, on ? "on" : "off");
                if (pass % 50 == 0)
                    for (size_t cut = 0; cut < litlen; cut++) {
                        out.len = 0;
                        cr_assert(!cdc__json_read_string(lit.p, lit.p + cut, &out), "cut at %zu of %zu read", cut,
                                  litlen);
                    }
            }
            cdc__json_pairs = saved;
            cdc__buf_free(&in);
            cdc__buf_free(&lit);
            cdc__buf_free(&out);
        }
    cr_log_info("quote runs: the processor's run is %s", saved > 0 ? "on" : "off (no BMI2)");
}

/* A column named twice in a row is refused, naming it, whatever the row's
 * width (pairs up to 16 columns, a hash set past that) and wherever the two
 * stand; the same rows without the repeat decode. */
Test(decode, column_named_twice)
{
    const int widths[] = {2, 3, 16, 17, 31, 64, 200, 1600};
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        int n = widths[w];
        int pairs[][2] = {{0, 1}, {0, n - 1}, {n - 2, n - 1}, {n / 2, n / 2 + 1}, {1, n / 2}};
        for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
            int a = pairs[p][0], b = pairs[p][1];
            if (a < 1 || b <= a || b >= n) continue; /* column 0 is the key, id */
            for (int twice = 0; twice <= 1; twice++) {
                cdc__buf v = {0};
                char col[32];
                cdc__buf_puts(&v, "{\"op\":\"c\",\"after\":{\"id\":1");
                for (int i = 1; i < n; i++) {
                    /* names differing only past a shared first byte, as in a real table */
                    snprintf(col, sizeof col, ",\"c_%d\":%d", twice && i == b ? a : i, i);
                    cdc__buf_puts(&v, col);
                }
                cdc__buf_puts(&v, "},\"source\":{\"lsn\":5}}");
                cdc__buf_putc(&v, 0);
                if (twice) {
                    snprintf(col, sizeof col, "c_%d", a);
                    expect_bad("{\"id\":1}", v.p, "appears twice");
                    cdc__event ev = {0};
                    cdc_error_t err;
                    dec("{\"id\":1}", v.p, &ev, &err);
                    cr_assert(strstr(err.msg, col), "width %d, %d and %d: \"%s\" does not name %s", n, a, b, err.msg,
                              col);
                } else {
                    cdc__event ev = {0};
                    expect_ok("{\"id\":1}", v.p, &ev);
                    cdc__event_free(&ev);
                }
                cdc__buf_free(&v);
            }
        }
    }
}

/* An escaped surrogate without its pair is valid JSON but no character:
 * a dead letter that says so (not just "malformed JSON"); a pair decodes. */
Test(decode, unpaired_surrogate_is_named)
{
    expect_bad("{\"id\":1}", "{\"op\":\"c\",\"after\":{\"id\":1,\"t\":\"a\\ud800b\"},\"source\":{\"lsn\":5}}",
               "surrogate without its pair");
    expect_bad("{\"id\":1}", "{\"op\":\"c\",\"after\":{\"id\":1,\"t\":\"\\udc00\"},\"source\":{\"lsn\":5}}",
               "surrogate without its pair");
    expect_bad("{\"id\":1}", "{\"op\":\"c\",\"after\":{\"id\":1,\"t\":\"\\ud800\\u0041\"},\"source\":{\"lsn\":5}}",
               "surrogate without its pair");
    expect_bad("{\"id\":1,\"x\":\"\\ud800\"}", "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"lsn\":5}}",
               "surrogate without its pair");
    cr_expect_str_eq(value_of("\"t\":\"\\ud83d\\ude00\"", "t"), "\xf0\x9f\x98\x80");
}
