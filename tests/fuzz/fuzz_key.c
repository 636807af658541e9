/*
 * fuzz_key.c: libFuzzer target for the key codec: keys given as JSON
 * (cdc__key_from_json, store/json.c) and encoded keys printed as JSON
 * (cdc__key_to_json, store/codec.c).
 *
 * Each input is used two ways:
 *  1. as key JSON text (cut at the first NUL, as the API takes a C
 *     string): read as an array without key columns; and, when it is an
 *     object, with its own member names as the key columns (the first 16).
 *     Whatever reads must print back and read back to the same bytes, and
 *     the printed text must be a fixpoint (printing the bytes read back from
 *     it gives it again);
 *  2. as an encoded key (the raw bytes, in a buffer of exactly their size):
 *     when it prints, the printed JSON must read back to the same bytes, so
 *     the encoding and its JSON form are one-to-one.
 * Printed keys are always valid UTF-8; a key whose text is not (which the
 * decoder never makes) prints with U+FFFD and need not read back.
 * The encoding is order-preserving, so for two integer keys read from one
 * input the order of the bytes must be the order of the numbers; checked on
 * the first two elements of an array.
 */
#include "fuzz.h"

/* Prints key (len bytes) with names, or as an array. */
static void print_key(const char *key, size_t len, const char *const *names, size_t n, cdc__buf *out)
{
    cdc__buf_reset(out);
    int rc = cdc__key_to_json(key, len, names, n, out);
    FUZZ_CHECK(rc == 0, "cdc__key_to_json refused bytes that cdc__key_from_json made (%zu bytes)", len);
    cdc__buf_putc(out, 0);
}

/* The printed key (NUL-terminated in out) is valid UTF-8; 1 when it must
 * also read back: when the key's text and the column names are UTF-8
 * (other bytes print as U+FFFD, store/json.c, so such a key is printed for
 * reading only; the decoder never makes one). */
static int printed_text_ok(const char *key, size_t len, const char *const *names, size_t n, const cdc__buf *out)
{
    int utf8 = 0;
    FUZZ_CHECK(fuzz_utf8_valid(out->p, out->len - 1), "a printed key is not valid UTF-8: %s", out->p);
    FUZZ_CHECK(fuzz_key_walk(key, len, &utf8, NULL) >= 0, "cdc__key_to_json printed a key that does not parse");
    for (size_t i = 0; names && i < n; i++) utf8 &= fuzz_utf8_valid(names[i], strlen(names[i]));
    return utf8;
}

/* The JSON text read with keycols (or as an array when NULL) round-trips. */
static void json_way(const char *json, const char *const *keycols, size_t nkey)
{
    cdc__buf enc = {0}, text = {0}, enc2 = {0}, text2 = {0};
    cdc_error_t e;
    memset(&e, 0, sizeof e);
    int rc = cdc__key_from_json(json, keycols, nkey, &enc, &e);
    FUZZ_CHECK(rc == 0 || rc == CDC_EINVAL, "cdc__key_from_json returned %d", rc);
    if (rc) {
        FUZZ_CHECK(e.code == CDC_EINVAL && e.msg[0] && memchr(e.msg, 0, sizeof e.msg), "an error without a message");
        FUZZ_CHECK(enc.len == 0, "a refused key left %zu bytes in the output", enc.len);
        goto done;
    }
    FUZZ_CHECK(enc.len > 0, "a key read to no bytes");
    print_key(enc.p, enc.len, keycols, nkey, &text);
    if (!printed_text_ok(enc.p, enc.len, keycols, nkey, &text)) goto done;
    rc = cdc__key_from_json(text.p, keycols, nkey, &enc2, &e);
    FUZZ_CHECK(rc == 0, "the printed key %s does not read back: %s (input %s)", text.p, e.msg, json);
    FUZZ_CHECK(enc2.len == enc.len && memcmp(enc2.p, enc.p, enc.len) == 0,
               "the printed key %s reads back to other bytes (input %s)", text.p, json);
    print_key(enc2.p, enc2.len, keycols, nkey, &text2);
    FUZZ_CHECK(strcmp(text.p, text2.p) == 0, "printing is not a fixpoint: %s, then %s", text.p, text2.p);
    /* Bytes as array and as object name the same values. */
    if (keycols) fuzz_check_key_roundtrip(enc.p, enc.len, NULL, 0);
done:
    cdc__buf_free(&enc);
    cdc__buf_free(&text);
    cdc__buf_free(&enc2);
    cdc__buf_free(&text2);
}

/* Integer keys sort by bytes as by value: two one-element keys read from
 * the first two integers of the input text, when it has them. */
static void order_way(const char *json)
{
    long long a, b;
    char ja[64], jb[64];
    if (sscanf(json, " [ %lld , %lld ]", &a, &b) != 2) return;
    snprintf(ja, sizeof ja, "[%lld]", a);
    snprintf(jb, sizeof jb, "[%lld]", b);
    cdc__buf ea = {0}, eb = {0};
    if (cdc__key_from_json(ja, NULL, 0, &ea, NULL) == 0 && cdc__key_from_json(jb, NULL, 0, &eb, NULL) == 0) {
        FUZZ_CHECK(ea.len == 9 && eb.len == 9, "an integer key of %zu and %zu bytes", ea.len, eb.len);
        int c = memcmp(ea.p, eb.p, 9);
        FUZZ_CHECK((c < 0) == (a < b) && (c == 0) == (a == b), "keys %lld and %lld sort the wrong way", a, b);
    }
    cdc__buf_free(&ea);
    cdc__buf_free(&eb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 1. JSON text. */
    char *json = strndup((const char *)data, size);
    json_way(json, NULL, 0);
    enum { MAXCOLS = 16 };
    char *names[MAXCOLS];
    size_t n = 0;
    /* cdc__json_object_keys gives the first n names of an object that has at
     * least n members: take the most it gives, up to MAXCOLS. */
    while (n < MAXCOLS && cdc__json_object_keys(json, names, n + 1) == 0) {
        for (size_t i = 0; i <= n; i++) free(names[i]);
        n++;
    }
    if (n > 0 && cdc__json_object_keys(json, names, n) == 0) {
        json_way(json, (const char *const *)names, n);
        for (size_t i = 0; i < n; i++) free(names[i]);
    }
    order_way(json);
    free(json);

    /* 2. Encoded bytes. */
    if (size > 0) {
        char *key = malloc(size);
        memcpy(key, data, size);
        cdc__buf text = {0};
        if (cdc__key_to_json(key, size, NULL, 0, &text) == 0 && (cdc__buf_putc(&text, 0), 1) &&
            printed_text_ok(key, size, NULL, 0, &text)) {
            cdc__buf back = {0};
            cdc_error_t e;
            memset(&e, 0, sizeof e);
            int rc = cdc__key_from_json(text.p, NULL, 0, &back, &e);
            FUZZ_CHECK(rc == 0, "the printed key %s does not read back: %s", text.p, e.msg);
            FUZZ_CHECK(back.len == size && memcmp(back.p, key, size) == 0,
                       "the printed key %s reads back to other bytes (%zu, not %zu)", text.p, back.len, size);
            cdc__buf_free(&back);
        }
        cdc__buf_free(&text);
        free(key);
    }
    return 0;
}
