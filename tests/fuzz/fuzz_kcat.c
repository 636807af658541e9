/*
 * fuzz_kcat.c: libFuzzer target for the file source's line reader: the
 * scanner of `kcat -C -J` lines and bare envelopes (ingest/filesrc.c),
 * then the batch decoder (ingest/batch.c) as the file source runs it.
 *
 * The scanner's functions are static, and cdc_store_apply_file would add
 * a thread and RocksDB writes to every input, so this file includes
 * filesrc.c itself and drives it the way its reader thread (reader_main)
 * does: the input is a file; each line is handed over as getline(3) leaves
 * it (newline included, NUL-terminated, in a buffer of exactly that size,
 * so that a read past it is an AddressSanitizer report), with the trailing
 * CR/LF cut and whitespace-only lines skipped; then the batch is sealed and
 * decoded on one thread, and the records whose position is unusable are
 * dead-lettered.  filesrc.o is then not taken from the library archive (this
 * file defines everything it holds).  Applying lines to a replica is
 * fuzz_apply.c's job.
 *
 * A replica is opened once per process, only for the column types the
 * decoder looks up (fuzz_store_settings); nothing is written to it.
 *
 * Checks: no sanitizer report, no leak; every line yields one record, whose
 * topic, key and value lie inside the batch text (topic NUL-terminated),
 * whose position is a partition >= 0 and an offset >= -1 (-1 when it was
 * refused), and a bare line's value is the line itself; every event holds
 * the invariants of fuzz_check_event.
 */
#include "filesrc.c"

#include "fuzz.h"

static cdc_store_t *store;
static char *store_dir;

static void cleanup(void)
{
    cdc_store_close(store);
    if (store_dir) fuzz_rmrf(store_dir);
    free(store_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    store_dir = fuzz_tmpdir();
    store = fuzz_open(store_dir);
    atexit(cleanup);
    return 0;
}

static int within(const batch *b, const char *p, size_t len)
{
    return p >= b->text.p && len <= b->text.len && (size_t)(p - b->text.p) <= b->text.len - len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    batch b = {0};
    size_t nlines = 0;
    int64_t lineno = 0;
    /* what each added line was: its bytes after the cut, and whether the
     * scanner took it as a kcat record */
    char **lines = NULL;
    size_t *lens = NULL;
    int *kinds = NULL;
    for (size_t i = 0; i < size;) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t raw = nl ? (size_t)(nl - (data + i)) + 1 : size - i;
        char *line = malloc(raw + 1);
        memcpy(line, data + i, raw);
        line[raw] = 0;
        i += raw;
        lineno++;
        size_t len = raw;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (skip_ws(line, line + len) < line + len) {
            kcat_fields f;
            cdc__buf scratch = {0};
            int kind = scan_line(line, line + len, &f, &scratch);
            cdc__buf_free(&scratch);
            size_t before = b.n;
            add_line(&b, line, len, "fuzz.jsonl", lineno);
            FUZZ_CHECK(b.n == before + 1, "line %lld gave %zu records", (long long)lineno, b.n - before);
            lines = realloc(lines, (nlines + 1) * sizeof *lines);
            lens = realloc(lens, (nlines + 1) * sizeof *lens);
            kinds = realloc(kinds, (nlines + 1) * sizeof *kinds);
            lines[nlines] = malloc(len ? len : 1);
            memcpy(lines[nlines], line, len);
            lens[nlines] = len;
            kinds[nlines] = kind;
            nlines++;
        }
        free(line);
    }
    batch_seal(&b);

    for (size_t i = 0; i < b.n; i++) {
        const cdc_record_t *r = &b.recs[i];
        FUZZ_CHECK(r->partition >= 0, "record %zu: partition %d", i, (int)r->partition);
        FUZZ_CHECK(r->offset >= -1, "record %zu: offset %lld", i, (long long)r->offset);
        FUZZ_CHECK(!b.bad[i] || r->offset == -1 || b.bad[i] == NOPAYLOAD, "record %zu: refused position kept", i);
        if (b.bad[i] == NOPAYLOAD) /* a sound position, and no value */
            FUZZ_CHECK(r->topic && !r->value, "record %zu: a record without payload has a topic and no value", i);
        if (r->topic)
            FUZZ_CHECK(within(&b, r->topic, strlen(r->topic) + 1), "record %zu: topic outside the text", i);
        if (r->key) FUZZ_CHECK(within(&b, r->key, r->key_len + 1), "record %zu: key outside the text", i);
        if (r->old_key) {
            FUZZ_CHECK(within(&b, r->old_key, r->old_key_len + 1), "record %zu: old key outside the text", i);
            FUZZ_CHECK(r->old_key[r->old_key_len] == 0, "record %zu: old key not NUL-terminated", i);
        }
        if (r->value) {
            FUZZ_CHECK(within(&b, r->value, r->value_len + 1), "record %zu: value outside the text", i);
            FUZZ_CHECK(r->value[r->value_len] == 0, "record %zu: value not NUL-terminated", i);
        }
        if (kinds[i] != LINE_KCAT) {
            /* the line, less a byte-order mark before it (add_line) */
            const char *want = lines[i], *q = want;
            size_t wl = lens[i];
            while (q < want + wl && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
            if (want + wl - q >= 3 && !memcmp(q, "\xef\xbb\xbf", 3)) {
                wl -= (size_t)(q + 3 - want);
                want = q + 3;
            }
            FUZZ_CHECK(r->value && r->value_len == wl && memcmp(r->value, want, wl) == 0,
                       "record %zu: a bare line's value is not the line", i);
            FUZZ_CHECK(!r->topic && !r->key && r->offset == -1, "record %zu: a bare line with a position", i);
        }
    }

    cdc_apply_options_t ao = {0};
    ao.max_record_bytes = 32768; /* so that the longest inputs meet the limit */
    cdc__event *dec = b.n ? cdc__decode_batch(store, b.recs, b.n, &ao, 1) : NULL;
    for (size_t i = 0; i < b.n; i++)
        if (b.bad[i]) cdc__event_dead(&dec[i], &b.recs[i], b.bad[i]);
    for (size_t i = 0; i < b.n; i++) fuzz_check_event(&dec[i]);
    cdc__events_free(dec, b.n);

    for (size_t i = 0; i < nlines; i++) free(lines[i]);
    free(lines);
    free(lens);
    free(kinds);
    free(b.recs);
    free(b.off);
    free(b.bad);
    cdc__buf_free(&b.text);
    return 0;
}
