/*
 * filesrc.c: the file source.  Reads Kafka records one JSON object per line
 * (the format `kcat -C -J` prints, or bare Debezium envelopes) and applies
 * them in batches through cdc_store_apply().
 *
 * The kcat wrapper is flat ({"topic": "...", "partition": 0, "offset": 42,
 * "key": "<json as a string>", "payload": "<json as a string>" | null, ...}),
 * so it is read by the small scanner below instead of a JSON tree: the
 * envelope inside "payload" is the expensive part and is parsed once, by the
 * decoder.  A line is a kcat record when its top level has a "payload" that
 * is a string or null together with "topic" or "offset"; anything else that
 * is a JSON object is taken as a bare envelope (which covers envelopes with
 * schemas.enable=true, whose "payload" is an object).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "ingest.h"

/* ---- A minimal scanner for the flat kcat wrapper ---- */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Skips a JSON string starting at the quote; returns the position after the
 * closing quote, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return NULL;
}

/* Skips any JSON value; NULL when malformed. */
static const char *skip_value(const char *p, const char *end)
{
    p = skip_ws(p, end);
    if (p >= end) return NULL;
    if (*p == '"') return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            if (*p == '"') {
                if (!(p = skip_string(p, end))) return NULL;
                continue;
            }
            if (*p == '{' || *p == '[') depth++;
            else if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
            p++;
        }
        return NULL;
    }
    const char *q = p;
    while (q < end && *q != ',' && *q != '}' && *q != ']' && *q != ' ' && *q != '\n' && *q != '\r' &&
           *q != '\t')
        q++;
    return q > p ? q : NULL;
}

enum { LINE_BARE = 0, LINE_KCAT = 1, LINE_BAD = -1 };

/* The fields of a kcat line: strings already unescaped into the batch text
 * (offsets into it, NONE when absent). */
typedef struct kcat_fields {
    size_t topic, key, payload;
    size_t key_len, payload_len;
    const char *partition, *offset;
    int payload_null;
    int nul;                /* the topic or key holds a NUL character */
    size_t old_key, old_key_len; /* the __debezium.oldkey header's value */
    int key_moved;               /* a __debezium.newkey header */
    const char *twice;           /* why the line is refused: a field it holds twice, or NULL */
} kcat_fields;

#define NONE ((size_t)-1)
#define BATCH_TEXT ((size_t)64 << 20)
#define FLUSH_WAIT_MS 100 /* how long a batch of a slow input waits to fill (line_would_wait) */
static const char OVERLONG[] = "overlong"; /* batch.bad: the reason is the record's value */
/* batch.bad of a kcat record without "payload", whose position is sound and kept */
static const char NOPAYLOAD[] = "a kcat record without \"payload\"";

/* kcat's "headers": ["name", "value", ...] (a value may be null) at p:
 * takes a primary-key change's two headers (cdc_record_t).  Returns the end
 * of the array, or NULL when it has another shape (then nothing is taken:
 * the caller skips it as any other field; text is as it was). */
static const char *scan_headers(const char *p, const char *end, kcat_fields *f, cdc__buf *text)
{
    size_t mark = text->len, ok = NONE, okl = 0;
    int moved = 0;
    p = skip_ws(p + 1, end);
    while (p < end && *p != ']') {
        if (*p != '"') goto other;
        size_t n0 = text->len;
        if (!(p = cdc__json_read_string(p, end, text))) goto other;
        int is_old = text->len - n0 == 17 && !memcmp(text->p + n0, "__debezium.oldkey", 17);
        int is_new = text->len - n0 == 17 && !memcmp(text->p + n0, "__debezium.newkey", 17);
        text->len = n0;
        p = skip_ws(p, end);
        if (p >= end || *p != ',') goto other;
        p = skip_ws(p + 1, end);
        if (p < end && *p == '"') {
            if (is_old) {
                ok = text->len;
                if (!(p = cdc__json_read_string(p, end, text))) goto other;
                okl = text->len - ok;
                cdc__buf_putc(text, 0);
            } else if (!(p = skip_string(p, end))) {
                goto other;
            }
        } else if (end - p >= 4 && !memcmp(p, "null", 4)) {
            p += 4;
        } else {
            goto other;
        }
        moved |= is_new;
        p = skip_ws(p, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
        else if (p < end && *p != ']') goto other;
    }
    if (p >= end) goto other;
    if (ok != NONE) f->old_key = ok, f->old_key_len = okl;
    f->key_moved = moved;
    return p + 1;
other:
    text->len = mark;
    return NULL;
}

/* One pass over the line: string values of topic, key and payload are
 * unescaped into text as they are met (the payload is most of the line, so
 * it is read once, not skipped and then copied). */
static int scan_line(const char *p, const char *end, kcat_fields *f, cdc__buf *text)
{
    f->topic = f->key = f->payload = NONE;
    f->key_len = f->payload_len = 0;
    f->partition = f->offset = NULL;
    f->payload_null = 0;
    f->nul = 0;
    f->old_key = NONE;
    f->old_key_len = 0;
    f->key_moved = 0;
    f->twice = NULL;
    int seen = 0; /* the fields met so far (bits, below) */
    p = skip_ws(p, end);
    if (end - p >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) p = skip_ws(p + 3, end); /* a byte-order mark */
    if (p >= end || *p != '{') return LINE_BAD;
    p = skip_ws(p + 1, end);
    while (p < end && *p != '}') {
        if (*p != '"') return LINE_BAD;
        const char *ks = p + 1, *ke = skip_string(p, end);
        if (!ke) return LINE_BAD;
        size_t kl = (size_t)(ke - 1 - ks);
        p = skip_ws(ke, end);
        if (p >= end || *p != ':') return LINE_BAD;
        p = skip_ws(p + 1, end);
        const char *v = p;
        size_t *dst = NULL, *dlen = NULL;
        /* A field given twice: JSON leaves which one counts to the reader
         * (kcat's own output never repeats one), so neither is guessed. */
        static const struct { const char *name; size_t len; const char *why; } fields[] = {
            {"topic", 5, "the record holds \"topic\" twice"},
            {"partition", 9, "the record holds \"partition\" twice"},
            {"offset", 6, "the record holds \"offset\" twice"},
            {"key", 3, "the record holds \"key\" twice"},
            {"payload", 7, "the record holds \"payload\" twice"},
            {"headers", 7, "the record holds \"headers\" twice"},
        };
        for (int i = 0; i < 6; i++)
            if (kl == fields[i].len && !memcmp(ks, fields[i].name, kl)) {
                if (seen & (1 << i)) f->twice = fields[i].why;
                seen |= 1 << i;
            }
        if (*v == '"') {
            if (kl == 5 && !memcmp(ks, "topic", 5)) dst = &f->topic;
            else if (kl == 3 && !memcmp(ks, "key", 3)) dst = &f->key, dlen = &f->key_len;
            else if (kl == 7 && !memcmp(ks, "payload", 7)) dst = &f->payload, dlen = &f->payload_len;
        }
        if (dst) {
            *dst = text->len;
            if (!(p = cdc__json_read_string(v, end, text))) return LINE_BAD;
            if (dlen) *dlen = text->len - *dst;
            /* a topic or key cut at a NUL would name another table or row */
            if (dst != &f->payload && text->len > *dst && memchr(text->p + *dst, 0, text->len - *dst)) f->nul = 1;
            cdc__buf_putc(text, 0);
        } else if (*v == '{' && ((kl == 3 && !memcmp(ks, "key", 3)) || (kl == 7 && !memcmp(ks, "payload", 7)))) {
            /* A key or payload written as a JSON object rather than as a
             * string holding one (some tools do): its text is the value. */
            if (!(p = skip_value(p, end))) return LINE_BAD;
            int iskey = kl == 3;
            *(iskey ? &f->key : &f->payload) = text->len;
            *(iskey ? &f->key_len : &f->payload_len) = (size_t)(p - v);
            cdc__buf_put(text, v, (size_t)(p - v));
            cdc__buf_putc(text, 0);
        } else if (*v == '[' && kl == 7 && !memcmp(ks, "headers", 7) && (p = scan_headers(v, end, f, text))) {
            /* taken */
        } else {
            p = v;
            if (!(p = skip_value(p, end))) return LINE_BAD;
            int isnull = (p - v == 4 && !memcmp(v, "null", 4));
            if (kl == 9 && !memcmp(ks, "partition", 9)) f->partition = v;
            else if (kl == 6 && !memcmp(ks, "offset", 6)) f->offset = v;
            else if (kl == 7 && !memcmp(ks, "payload", 7)) f->payload_null = isnull;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
    }
    if (p >= end) return LINE_BAD;
    /* Nothing may follow the object but blanks: a second record on the
     * line, or text after one, makes the line bad (the decoder then gets it
     * whole and dead-letters it), never a record that is read and one that
     * is silently not. */
    if (skip_ws(p + 1, end) != end) return LINE_BAD;
    if ((f->payload != NONE || f->payload_null) && (f->topic != NONE || f->offset)) return LINE_KCAT;
    /* A topic and an offset but no "payload": a kcat record that lost its
     * value (no envelope has those fields), dead-lettered as such with its
     * position rather than as an envelope without an op. */
    if (f->topic != NONE && f->offset) return LINE_KCAT;
    return LINE_BARE;
}

/* ---- Batches ---- */

typedef struct batch {
    cdc_record_t *recs;
    size_t n, cap;
    cdc__buf text;          /* lines and unescaped strings; records hold offsets until sealed */
    size_t *off;            /* per record: offsets of topic, key, value, old key into text (or NONE) */
    const char **bad;       /* per record: why its position is unusable, or NULL */
} batch;

static void batch_add(batch *b, const cdc_record_t *r, size_t topic_off, size_t key_off, size_t val_off,
                      size_t old_key_off, const char *bad)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 1024;
        b->recs = cdc__realloc(b->recs, b->cap * sizeof *b->recs);
        b->off = cdc__realloc(b->off, b->cap * 4 * sizeof *b->off);
        b->bad = cdc__realloc(b->bad, b->cap * sizeof *b->bad);
    }
    b->bad[b->n] = bad;
    b->recs[b->n] = *r;
    b->off[b->n * 4] = topic_off;
    b->off[b->n * 4 + 1] = key_off;
    b->off[b->n * 4 + 2] = val_off;
    b->off[b->n * 4 + 3] = old_key_off;
    b->n++;
}

/* Turns the offsets into pointers once the text buffer stops moving.  A
 * record whose topic is the one before's points at that one's text: the
 * store notes each record's position by its topic, and a pointer equal to
 * the last one's spares it a strcmp per record on the apply's thread
 * (store/apply.c pos_note: 2% of the samples of `cdcstore apply` on the
 * narrow stream), paid here on the reader's. */
static void batch_seal(batch *b)
{
    const char *prev = NULL;
    for (size_t i = 0; i < b->n; i++) {
        cdc_record_t *r = &b->recs[i];
        r->topic = b->off[i * 4] == NONE ? NULL : b->text.p + b->off[i * 4];
        if (r->topic) {
            if (prev && !strcmp(r->topic, prev)) r->topic = prev;
            else prev = r->topic;
        }
        r->key = b->off[i * 4 + 1] == NONE ? NULL : b->text.p + b->off[i * 4 + 1];
        r->value = b->off[i * 4 + 2] == NONE ? NULL : b->text.p + b->off[i * 4 + 2];
        r->old_key = b->off[i * 4 + 3] == NONE ? NULL : b->text.p + b->off[i * 4 + 3];
    }
}

static size_t put_text(cdc__buf *t, const char *s, size_t n)
{
    size_t o = t->len;
    cdc__buf_put(t, s, n);
    cdc__buf_putc(t, 0);
    return o;
}

/* A position field (the JSON number token at v) as an integer in 0..max;
 * -1 when it is anything else (a fraction, an exponent, a sign, a string,
 * null, or out of range).  Positions decide where a rerun resumes, so a
 * value is taken exactly or not at all. */
static int64_t parse_position(const char *v, int64_t max)
{
    uint64_t x = 0;
    const char *p = v;
    if (!p || *p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        x = x * 10 + (uint64_t)(*p - '0');
        if (x > (uint64_t)max) return -1;
    }
    if (*p && !strchr(",}] \t\r\n", *p)) return -1; /* a fraction, an exponent, a letter */
    if (v[0] == '0' && p > v + 1) return -1;        /* a leading zero is not JSON */
    return (int64_t)x;
}

/* Adds one input line to the batch. */
static void add_line(batch *b, const char *line, size_t len, const char *source, int64_t lineno)
{
    kcat_fields f;
    cdc_record_t r = {0};
    r.source = source;
    r.line = lineno;
    r.offset = -1;
    size_t mark = b->text.len;
    int kind = scan_line(line, line + len, &f, &b->text);
    size_t toff = NONE, koff = NONE, voff = NONE, ooff = NONE;
    const char *bad = NULL;
    if (kind == LINE_KCAT) {
        toff = f.topic;
        koff = f.key;
        voff = f.payload;
        ooff = f.old_key;
        r.old_key_len = f.old_key_len;
        r.key_moved = f.key_moved;
        r.key_len = f.key_len;
        r.value_len = f.payload_len;
        int64_t part = f.partition ? parse_position(f.partition, INT32_MAX) : 0;
        /* INT64_MAX is no offset: the replica stores the next one to read */
        r.offset = f.offset ? parse_position(f.offset, INT64_MAX - 1) : -1;
        r.partition = part >= 0 ? (int32_t)part : 0;
        if (f.twice) bad = f.twice;
        else if (f.nul) bad = "the topic or the key holds a NUL character";
        else if (part < 0) bad = "the partition is not an integer in 0..2^31-1";
        else if (f.offset && r.offset < 0) bad = "the offset is not an integer in 0..2^63-2";
        else if (f.payload == NONE && !f.payload_null) bad = NOPAYLOAD;
    } else {
        /* A bare envelope, or a line that is not JSON at all: the decoder
         * gets the raw line, and rejects the latter with a clear reason (it
         * is dead-lettered with its file and line). */
        b->text.len = mark;
        /* a byte-order mark before it (a file saved by an editor) is
         * skipped, as scan_line skips it before a kcat line */
        const char *q = skip_ws(line, line + len);
        if (line + len - q >= 3 && !memcmp(q, "\xef\xbb\xbf", 3)) {
            len -= (size_t)(q + 3 - line);
            line = q + 3;
        }
        voff = put_text(&b->text, line, len);
        r.value_len = len;
    }
    if (bad && bad != NOPAYLOAD) r.offset = -1; /* dead-lettered by its file and line instead */
    batch_add(b, &r, toff, koff, voff, ooff, bad);
}

/* A line over the reader's limit (next_line): a dead letter with its file,
 * line and length; its text was not kept. */
static void add_overlong(batch *b, size_t len, size_t limit, const char *source, int64_t lineno)
{
    cdc_record_t r = {0};
    r.source = source;
    r.line = lineno;
    r.offset = -1;
    char why[160];
    int n = snprintf(why, sizeof why, "the line is %zu bytes, longer than any record within the record limit could "
                     "be (%zu)", len, limit);
    /* the reason is the record's text, which lives as long as the batch */
    size_t voff = put_text(&b->text, why, (size_t)n);
    r.value_len = (size_t)n;
    batch_add(b, &r, NONE, NONE, voff, NONE, OVERLONG);
}

/* ---- The pipeline ----
 *
 * A reader thread reads, scans and decodes batch k+1 while the caller's
 * thread applies batch k: on two cores, decoding (the larger part of the
 * work) runs beside the RocksDB reads and writes.  Two batch slots
 * alternate; a slot is refilled only after its batch was applied, because
 * the apply reads the records (positions, dead letters). */

/* Lines are read from the descriptor in blocks of 1 MiB into a buffer of
 * the reader's own, and handed out in place.  Why not getline: it keeps a
 * line however long, so one line of gigabytes without a newline took that
 * much memory before the record limit could refuse it.  A line longer than
 * any record could be (LINE_MAX_FOR: its JSON escapes at most 6 bytes into
 * one) is skipped to its newline as it is read, and becomes a dead letter
 * naming its length. */
#define READ_BLOCK ((size_t)1 << 20)
#define LINE_MAX_FOR(max_record) (6 * (max_record) + ((size_t)1 << 20))

typedef struct line_reader {
    int fd;
    char *buf;
    size_t cap, start, end, scan; /* the unread bytes are buf[start, end); no newline in [start, scan) */
    uint64_t consumed;            /* bytes of the input handed out so far, newlines included */
    int eof, err;
    int pausable;                 /* not a regular file: its input may pause (line_would_wait) */
    volatile int *intr;           /* the stop flag: a wait for input that may pause ends at it */
} line_reader;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the reader would wait for its next line: none is buffered, and
 * the descriptor (a pipe, a terminal) has nothing to read within wait_ms.
 * A regular file always has: poll says so at once. */
static int line_would_wait(line_reader *lr, int wait_ms)
{
    if (!lr->pausable || lr->eof || (lr->scan < lr->end && memchr(lr->buf + lr->scan, '\n', lr->end - lr->scan))) return 0;
    struct pollfd pf = {.fd = lr->fd, .events = POLLIN};
    int n;
    while ((n = poll(&pf, 1, wait_ms)) < 0 && errno == EINTR) {}
    return n == 0;
}

/* The next line (without its newline) at *p, *len bytes; 0, or -1 at the
 * end of the input or on a read error (lr->err).  A line over limit bytes
 * is skipped: *p NULL, *len its length. */
static int next_line(line_reader *lr, size_t limit, const char **p, size_t *len)
{
    size_t skipped = 0; /* bytes of an overlong line dropped so far */
    for (;;) {
        char *nl = lr->scan < lr->end ? memchr(lr->buf + lr->scan, '\n', lr->end - lr->scan) : NULL;
        if (nl || (lr->eof && (lr->start < lr->end || skipped))) { /* a last line may lack its newline */
            size_t at = nl ? (size_t)(nl - lr->buf) : lr->end;
            *len = skipped + (at - lr->start);
            *p = skipped ? NULL : lr->buf + lr->start;
            lr->consumed += *len + (nl != NULL);
            lr->start = lr->scan = nl ? at + 1 : at;
            return 0;
        }
        lr->scan = lr->end;
        if (lr->eof) return -1;
        if (lr->end - lr->start > limit) { /* overlong: drop what is read of it */
            skipped += lr->end - lr->start;
            lr->start = lr->scan = lr->end;
        }
        if (lr->start == lr->end) lr->start = lr->scan = lr->end = 0;
        if (lr->cap - lr->end < READ_BLOCK) {
            if (lr->start) { /* keep the line being read, at the front */
                memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
                lr->end -= lr->start;
                lr->scan -= lr->start;
                lr->start = 0;
            }
            if (lr->cap - lr->end < READ_BLOCK) {
                lr->cap = lr->cap ? 2 * lr->cap : 2 * READ_BLOCK;
                lr->buf = cdc__realloc(lr->buf, lr->cap);
            }
        }
        /* A pipe with nothing in it (kcat following an idle topic) is
         * waited for in steps, so that a stop (SIGINT, SIGTERM) ends the
         * wait at once rather than at the next line or the end of the
         * input; what the pipe holds after the stop is not read. */
        if (lr->pausable && lr->intr) {
            struct pollfd pf = {.fd = lr->fd, .events = POLLIN};
            int pn;
            while ((pn = poll(&pf, 1, 100)) == 0 || (pn < 0 && errno == EINTR))
                if (*lr->intr) {
                    lr->eof = 1;
                    return -1;
                }
        }
        ssize_t n = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            lr->err = errno ? errno : EIO;
            return -1;
        }
        if (n == 0) lr->eof = 1;
        lr->end += (size_t)n;
    }
}

/* Batches between the reader and the apply: the reader reads and decodes
 * one while the apply writes another, and with a third it need not wait for
 * a batch the apply has taken longer over (a flush, a compaction's stall)
 * before it starts on the next.  Interleaved `cdcstore apply --batch-size
 * 10000` runs against two slots (bench/gen.py streams of 1,000,000
 * records, seed 42; the first pair of each set left out, a warm-up): narrow
 * 1.81-1.99 -> 1.73-1.92 s (3 pairs), medium 2.42 -> 2.32-2.35 s (2), wide
 * 5.12 -> 5.00 s (1); peak RSS +10, +15 and +35 MB.  Four slots: the same
 * as three (narrow, 4 pairs: 1.69-1.96 s against 1.72-1.76 s).
 * Large batches keep to two: once the batch just read holds THIRD_SLOT_TEXT
 * or more of text, the reader waits for the batch before it to be applied,
 * frees that one's events, and reads the next into its text buffer, as with
 * two slots (batches of 100,000 medium records, 55 MB of text each, took
 * peak RSS from 430 to 543 MiB with a third slot; with this rule, 452 MB
 * against 439 MB for two slots, 2.5 s each). */
#ifndef PIPE_SLOTS
#define PIPE_SLOTS 3
#endif
#define THIRD_SLOT_TEXT ((size_t)16 << 20)

typedef struct slot {
    batch b;
    cdc__event *dec;
    int ready;          /* filled and decoded, waiting to be applied */
    int eof;            /* the last batch (possibly empty) */
    int read_errno;
    uint64_t bytes;     /* bytes read up to the end of this batch */
    int64_t lineno;
    cdc__event *done;   /* the events of the batch applied from this slot, freed by the reader */
    size_t ndone;
} slot;

typedef struct pipe_state {
    cdc_store_t *st;
    FILE *fp;
    line_reader lr;
    const char *source;
    size_t bs, batch_bytes;
    const cdc_apply_options_t *aopts;
    slot slots[PIPE_SLOTS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int abort;
} pipe_state;

/* Waits until the apply is done with slot sl (or the pipeline is aborted:
 * 1) and frees the events it applied from it.  They are freed here, on the
 * thread that allocated them, before their records' text is reused: freed
 * by the applying thread, each block went back to this thread's allocator
 * cache through a lock (jemalloc), and the frees were 3% of the applying
 * thread's samples on the narrow stream.  Interleaved `cdcstore apply
 * --batch-size 10000` runs, means: medium stream 2.62 -> 2.44 s (3 runs, CPU
 * 4.63 -> 4.41 s), narrow 1.89 -> 1.81 s (4 runs, CPU 3.32 -> 3.22 s). */
static int slot_take(pipe_state *ps, slot *sl)
{
    pthread_mutex_lock(&ps->mu);
    while (sl->ready && !ps->abort) pthread_cond_wait(&ps->cv, &ps->mu);
    int ab = ps->abort;
    pthread_mutex_unlock(&ps->mu);
    if (ab) return 1;
    cdc__events_free(sl->done, sl->ndone);
    sl->done = NULL;
    sl->ndone = 0;
    return 0;
}

static void *reader_main(void *arg)
{
    pipe_state *ps = arg;
    size_t max_record = ps->aopts->max_record_bytes ? ps->aopts->max_record_bytes : CDC__DEFAULT_MAX_RECORD;
    size_t limit = LINE_MAX_FOR(max_record);
    int64_t lineno = 0, batch_start = 0;
    for (int k = 0;; k++) {
        slot *sl = &ps->slots[k % PIPE_SLOTS];
        if (slot_take(ps, sl)) break;
        /* Large batches keep to two in memory (PIPE_SLOTS): the batch two
         * before is waited for, and its text buffer read into next (already
         * in memory, where a new buffer of that size costs its page faults). */
        slot *last = &ps->slots[(k + PIPE_SLOTS - 1) % PIPE_SLOTS];
        slot *before = &ps->slots[(k + PIPE_SLOTS - 2) % PIPE_SLOTS];
        if (PIPE_SLOTS > 2 && k >= 2 && last->b.text.len >= THIRD_SLOT_TEXT) {
            if (slot_take(ps, before)) break;
            cdc__buf_free(&sl->b.text);
            sl->b.text = before->b.text;
            memset(&before->b.text, 0, sizeof before->b.text);
        }
        sl->b.n = 0;
        cdc__buf_reset(&sl->b.text);
        int got = 0;
        volatile int *intr = ps->aopts->interrupt;
        /* A batch ends at its count of records, or at batch_bytes of their
         * text (BATCH_TEXT by default): PIPE_SLOTS batches are in memory at once,
         * of records up to 16 MiB each. */
        while (sl->b.n < ps->bs && sl->b.text.len < ps->batch_bytes && !(intr && *intr && lineno % 1024 == 0)) {
            const char *line;
            size_t len;
            /* Input that comes slowly (kcat -C -J piped in, following a
             * topic) ends the batch it has begun FLUSH_WAIT_MS after its
             * first record, when no further line is there by then: its
             * records are applied now, not when the batch fills or the input
             * ends. */
            if (sl->b.n && ps->lr.pausable) {
                int64_t waited = now_ms() - batch_start;
                if (line_would_wait(&ps->lr, waited >= FLUSH_WAIT_MS ? 0 : (int)(FLUSH_WAIT_MS - waited))) break;
            }
            size_t n0 = sl->b.n;
            if ((got = next_line(&ps->lr, limit, &line, &len)) < 0) break;
            lineno++;
            if (!line) {
                add_overlong(&sl->b, len, limit, ps->source, lineno);
                if (!n0 && ps->lr.pausable) batch_start = now_ms();
                continue;
            }
            while (len > 0 && line[len - 1] == '\r') len--;
            const char *q = skip_ws(line, line + len);
            if (q < line + len) add_line(&sl->b, line, len, ps->source, lineno);
            if (!n0 && sl->b.n && ps->lr.pausable) batch_start = now_ms(); /* the batch's first record came */
        }
        sl->eof = got < 0;
        sl->read_errno = got < 0 ? ps->lr.err : 0;
        sl->bytes = ps->lr.consumed;
        sl->lineno = lineno;
        batch_seal(&sl->b);
        sl->dec = sl->b.n ? cdc__decode_batch(ps->st, sl->b.recs, sl->b.n, ps->aopts, 1) : NULL;
        for (size_t i = 0; i < sl->b.n; i++)
            if (sl->b.bad[i])
                cdc__event_dead(&sl->dec[i], &sl->b.recs[i],
                                sl->b.bad[i] == OVERLONG ? sl->b.recs[i].value : sl->b.bad[i]);
        pthread_mutex_lock(&ps->mu);
        sl->ready = 1;
        pthread_cond_broadcast(&ps->cv);
        pthread_mutex_unlock(&ps->mu);
        if (sl->eof) break;
    }
    return NULL;
}

int cdc_store_apply_file(cdc_store_t *st, const char *path, const cdc_file_options_t *o,
                         cdc_apply_result_t *total, cdc_error_t *err)
{
    cdc_file_options_t defo = {0};
    cdc_apply_result_t tot = {0};
    if (total) *total = tot; /* filled on every return, also when nothing was read */
    if (!o) o = &defo;
    if (!st || !path) return cdc__err(err, CDC_EINVAL, "cdc_store_apply_file: bad arguments");
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!fp) return cdc__err(err, -errno, "%s: cannot open: %s", path, strerror(errno));
    pipe_state ps = {0};
    ps.st = st;
    ps.fp = fp;
    ps.lr.fd = fileno(fp); /* read directly (next_line), never through the stream */
    struct stat sb;
    ps.lr.pausable = fstat(ps.lr.fd, &sb) != 0 || !S_ISREG(sb.st_mode);
    ps.source = strcmp(path, "-") == 0 ? "stdin" : path;
    ps.bs = o->batch_size ? o->batch_size : 10000;
    ps.batch_bytes = o->batch_bytes ? o->batch_bytes : BATCH_TEXT;
    /* The stop flag gives up the batch in progress (decoding, reading or
     * applying it): the store looks at it every few thousand records. */
    cdc_apply_options_t ao = o->apply;
    if (!ao.interrupt) ao.interrupt = o->stop;
    ps.aopts = &ao;
    ps.lr.intr = ao.interrupt;
    pthread_mutex_init(&ps.mu, NULL);
    pthread_cond_init(&ps.cv, NULL);
    pthread_t th;
    int rc = 0;
    if (pthread_create(&th, NULL, reader_main, &ps) != 0) {
        if (fp != stdin) fclose(fp);
        return cdc__err(err, CDC_ENOMEM, "%s: cannot start the reader thread", ps.source);
    }
    for (int k = 0;; k++) {
        slot *sl = &ps.slots[k % PIPE_SLOTS];
        pthread_mutex_lock(&ps.mu);
        while (!sl->ready) pthread_cond_wait(&ps.cv, &ps.mu);
        pthread_mutex_unlock(&ps.mu);
        int eof = sl->eof;
        if (sl->b.n && ao.interrupt && *ao.interrupt) {
            rc = cdc__err(err, -EINTR, "%s: interrupted: the batch ending at line %lld was given up, nothing of "
                          "it written", ps.source, (long long)sl->lineno);
            cdc__events_free(sl->dec, sl->b.n);
            sl->dec = NULL;
        } else if (sl->b.n) {
            cdc_apply_result_t r;
            rc = cdc__store_apply_events_kept(st, sl->b.recs, sl->dec, sl->b.n, &ao, &r, err);
            sl->done = sl->dec; /* freed by the reader (reader_main) */
            sl->ndone = sl->b.n;
            sl->dec = NULL;
            /* counted when written: whole, or up to the bad record under
             * --on-error stop; a batch given up (interrupted, a failed
             * write) is not in the replica, nor in the totals */
            if (rc == 0 || rc == CDC_ESTOPPED) {
                cdc__result_add(&tot, &r);
                if (o->progress) o->progress(o->progress_opaque, &tot, sl->bytes);
            }
        }
        if (rc == 0 && sl->read_errno)
            rc = cdc__err(err, CDC_EIO, "%s: read error after line %lld: %s", ps.source,
                          (long long)sl->lineno, strerror(sl->read_errno));
        if (!rc && !eof && o->stop && *o->stop)
            rc = cdc__err(err, -EINTR, "%s: interrupted after line %lld: the batches up to it are applied, "
                          "nothing after it was written", ps.source, (long long)sl->lineno);
        int stop = rc || (o->stop && *o->stop);
        pthread_mutex_lock(&ps.mu);
        sl->ready = 0;
        if (stop) ps.abort = 1;
        pthread_cond_broadcast(&ps.cv);
        pthread_mutex_unlock(&ps.mu);
        if (stop || eof) break;
    }
    pthread_join(th, NULL);
    for (int i = 0; i < PIPE_SLOTS; i++) {
        if (ps.slots[i].ready) cdc__events_free(ps.slots[i].dec, ps.slots[i].b.n);
        cdc__events_free(ps.slots[i].done, ps.slots[i].ndone);
        free(ps.slots[i].b.recs);
        free(ps.slots[i].b.off);
        free(ps.slots[i].b.bad);
        cdc__buf_free(&ps.slots[i].b.text);
    }
    pthread_mutex_destroy(&ps.mu);
    pthread_cond_destroy(&ps.cv);
    if (fp != stdin) fclose(fp);
    free(ps.lr.buf);
    if (total) *total = tot;
    return rc;
}
