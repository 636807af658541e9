/*
 * fuzz_decode.c: libFuzzer target for the envelope decoder,
 * cdc__decode_record (ingest/decode.c), with no store behind it.
 *
 * Input (make-seeds.py writes it; any bytes are valid):
 *   byte 0   flags: 0x01 a topic follows, 0x02 a Kafka key follows,
 *            0x04 the value is NULL (a tombstone), 0x08 the record has a
 *            source position (partition 0, offset 7; else offset -1 and a
 *            file name and line), bits 4-6 the declared column types the
 *            scale callback answers (see column_type below);
 *   topic    when 0x01: 2 bytes little-endian length, then the bytes (cut
 *            at the first NUL: a topic is a C string);
 *   key      when 0x02: 2 bytes little-endian length, then the bytes;
 *   value    the rest.
 * Key and value are copied into buffers of exactly their size, not
 * NUL-terminated, as librdkafka hands them over, so that reading one byte
 * past them is an AddressSanitizer report.
 *
 * Checks: no sanitizer report, no leak; 0 or 1 or CDC_EDECODE with a
 * message; a decoded event holds the invariants of fuzz_check_event.
 */
#include "fuzz.h"

static int mode;

/* The declared type of a column, as cdc__store_column_type would answer
 * after `--decimal` / `--column-type`: mode 0 declares nothing; 1-5 declare
 * one type for every column; 6 and 7 pick a type per column from its name,
 * so that one record mixes them. */
static int column_type(void *opaque, const char *table, const char *column)
{
    static const int codes[] = {CDC__COL_NONE, 0, 2, 1000, CDC__COL_MICROTIMESTAMP, CDC__COL_TIMESTAMP_MS,
                                CDC__COL_DATE, CDC__COL_MICROTIME};
    (void)opaque;
    FUZZ_CHECK(table && column, "the decoder asked for a column type without table or column");
    switch (mode) {
    case 0: return CDC__COL_NONE;
    case 1: return 2;
    case 2: return CDC__COL_MICROTIMESTAMP;
    case 3: return CDC__COL_TIMESTAMP_MS;
    case 4: return CDC__COL_DATE;
    case 5: return CDC__COL_MICROTIME;
    default: {
        unsigned h = mode == 7 ? 5381u : 0u;
        for (const char *p = column; *p; p++) h = h * 33u + (unsigned char)*p;
        return codes[h % (sizeof codes / sizeof codes[0])];
    }
    }
}

/* Takes a 2-byte length and that many bytes (or what is left). */
static const uint8_t *take(const uint8_t **p, const uint8_t *end, size_t *len)
{
    size_t n = 0;
    if (end - *p >= 2) n = (size_t)(*p)[0] | (size_t)(*p)[1] << 8, *p += 2;
    else *p = end;
    if (n > (size_t)(end - *p)) n = (size_t)(end - *p);
    const uint8_t *s = *p;
    *p += n;
    *len = n;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const uint8_t *p = data + 1, *end = data + size;
    unsigned flags = data[0];
    char *topic = NULL, *key = NULL, *value = NULL;
    cdc_record_t r = {0};
    mode = (flags >> 4) & 7;
    if (flags & 0x01) {
        size_t n;
        const uint8_t *s = take(&p, end, &n);
        topic = strndup((const char *)s, n);
        r.topic = topic;
    }
    if (flags & 0x02) {
        const uint8_t *s = take(&p, end, &r.key_len);
        key = malloc(r.key_len ? r.key_len : 1);
        if (r.key_len) memcpy(key, s, r.key_len);
        r.key = key;
    }
    if (!(flags & 0x04)) {
        r.value_len = (size_t)(end - p);
        value = malloc(r.value_len ? r.value_len : 1);
        if (r.value_len) memcpy(value, p, r.value_len);
        r.value = value;
    }
    if (flags & 0x08) {
        r.partition = 0;
        r.offset = 7;
    } else {
        r.offset = -1;
        r.source = "fuzz.jsonl";
        r.line = 1;
    }

    cdc__event ev;
    memset(&ev, 0xA5, sizeof ev); /* untouched unless 0 is returned */
    cdc_error_t err;
    memset(&err, 0, sizeof err);
    int rc = cdc__decode_record(&r, column_type, NULL, &ev, &err);
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == CDC_EDECODE, "cdc__decode_record returned %d", rc);
    if (rc == CDC_EDECODE) {
        FUZZ_CHECK(err.code == CDC_EDECODE && err.msg[0] && memchr(err.msg, 0, sizeof err.msg),
                   "an error without a message (code %d)", err.code);
    } else if (rc == 1) {
        FUZZ_CHECK(!r.value || r.value_len > 0, "a tombstone decoded from nothing");
    } else {
        FUZZ_CHECK(ev.action != CDC__ACT_DEAD && ev.action != CDC__ACT_TOMBSTONE,
                   "the decoder returned 0 with action %d", ev.action);
        fuzz_check_event(&ev);
        cdc__event_free(&ev);
    }
    free(topic);
    free(key);
    free(value);
    return 0;
}
