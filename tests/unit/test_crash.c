/*
 * test_crash.c: SIGKILL at 100 random points of the three ways records
 * reach a replica (cdc_store_apply batches in memory, cdc_store_apply_file,
 * and the Kafka source against librdkafka's mock cluster), with batch sizes
 * from 37 to 100,000 and enough data that RocksDB flushes memtables and
 * compacts during the runs.  After every kill the replica is reopened and
 * checked, then the run resumes; the last run of each replica goes to the
 * end and must give what one uninterrupted run gives.
 *
 * Lives.  Each replica lives through a chain of processes ("lives"), each
 * a fresh process: fork and exec of this binary, which then does one life
 * in crash_child_entry, before Criterion's main.  (RocksDB's background
 * threads do not survive a plain fork of a process that has used RocksDB:
 * a forked child never flushes, and stalls once its write buffers fill.)
 * The child tells the parent through a pipe when the store is open, when
 * the Kafka consumer has its partitions, and after every committed batch
 * the positions stored.  The parent kills it on one of four triggers drawn
 * from the seed:
 *  - delay: a random time into the apply, or a random share of the records
 *    left, whichever comes first;
 *  - open: a random time from the start, in the open's WAL replay and the
 *    level-0 files it writes (restarts only: a first open recovers nothing);
 *  - flush, compaction: when RocksDB's flush thread ("rocksdb:high") or a
 *    compaction thread ("rocksdb:low") starts working, or when the job's
 *    output .sst appears in the directory (seen in /proc/<pid>/task and by
 *    listing the directory every millisecond), after 0-60 ms; when no such
 *    job comes, late in the life.  They are drawn when the replica's LSM
 *    shape (read after each kill) and the data left make the job possible.
 * What was going on at the signal is recorded: the phase (open, consumer
 * join, apply, close), whether the flush or a compaction thread was busy,
 * and which jobs the kill cut short: an .sst file written in the life that
 * the recovered version does not hold is the output of an unfinished job,
 * attributed to whoever was working when it appeared.
 *
 * What is checked after each kill, on the replica opened read-only (the
 * next life, not the checker, recovers it):
 *  - positions never go back, and cover every batch the child was told was
 *    committed (no acknowledged change lost);
 *  - positions are never ahead of the data, nor the data ahead of the
 *    positions: the view, tombstones included (key, deleted flag, version,
 *    from-snapshot flag, every value of live rows), equals an independent
 *    model of the input applied up to the stored position of each
 *    partition, and the live and deleted row counters match it;
 *  - for the in-memory and file sources, whose batches are cut from one
 *    input order, the positions are those of a whole number of batches.
 * The next life resumes from the stored positions (in memory, Kafka), from
 * a file of the records past them, or by rerunning the whole file, which
 * the version guard makes idempotent.  When a chain ends, the view and
 * every stored version equal those of a replica that applied the whole
 * input once (built in the parent), and the model.
 *
 * The input: a snapshot of two thirds of the keys (the last record marked
 * "last"), then creates, updates, deletes followed by Kafka tombstones,
 * duplicates and late older updates, over two partitions.  Rows carry a
 * padding column: up to 160 bytes in the small input, 2 to 8 KB in the
 * large one, whose 220 MB of rows fill RocksDB's 64 MiB write buffer three
 * times a run.  Each open writes the recovered log as level-0 files, so
 * chains of lives reach the level-0 compaction trigger (4 files).
 *
 * Reproducing: the seed is printed (cr_log_info and stderr); CDC_CRASH_SEED
 * reruns the same schedule: the same inputs and random draws (triggers,
 * delays, batch sizes).  Where a kill lands still depends on the machine's
 * speed, and so does the choice between a flush and a compaction trigger,
 * made from the replica's state.  --verbose shows every kill point; each
 * test ends with a summary (also on stderr).  CDC_TEST_QUICK=1 (the
 * sanitizer run) runs 4 kill points per test on smaller inputs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <rocksdb/c.h>

#include "testutil.h"

#define TABLE "public.items"
#define NPART 2
#define SNAP_LSN 1000
/* A life that takes longer than this has hung. */
#define LIFE_TIMEOUT_MS 240000.0

extern char **environ;

/* ---- Randomness (splitmix64: the whole schedule follows from one seed) ---- */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t *s, uint64_t n) { return rnd(s) % n; }

static double rnd_unit(uint64_t *s) { return (double)(rnd(s) >> 11) * (1.0 / 9007199254740992.0); }

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

/* ---- The input ---- */

typedef struct profile {
    const char *name;
    int nkeys, nrec, pad_min, pad_max;
} profile;

/* large: about 220 MB of row images, three write buffers (64 MiB) in a
 * whole run. */
static const profile PROFILES[2][2] = {
    {{"small", 400, 6000, 8, 160}, {"large", 3000, 45000, 2000, 8000}},
    /* CDC_TEST_QUICK: the large one still overflows one write buffer. */
    {{"small", 300, 3000, 8, 160}, {"large", 1500, 32000, 2000, 4000}},
};

enum { EV_SNAP, EV_SNAP_LAST, EV_INSERT, EV_UPDATE, EV_DELETE, EV_TOMB, EV_STALE };

/* One record; its text is rendered from these fields (render_value). */
typedef struct crec {
    int32_t key;
    uint8_t kind;
    uint8_t part;
    uint16_t padlen;
    uint64_t lsn;
    int64_t offset;
} crec;

typedef struct stream {
    profile prof;
    uint64_t seed;
    char topic[64];
    crec *r;
    size_t n;
    size_t nper[NPART];
    size_t *gidx[NPART]; /* global index of (partition, offset) */
    uint64_t bytes;      /* value bytes of the whole input */
} stream;

static void stream_add(stream *s, int key, int kind, uint64_t lsn, int padlen)
{
    s->r[s->n++] = (crec){.key = key, .kind = (uint8_t)kind, .lsn = lsn, .padlen = (uint16_t)padlen};
}

/* The input of profile p from seed: the same in the parent and in a child. */
static void stream_gen(stream *s, const profile *p, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->prof = *p;
    s->seed = seed;
    snprintf(s->topic, sizeof s->topic, "crash%c.public.items", p->name[0]);
    s->r = calloc((size_t)p->nrec + (size_t)p->nkeys + 16, sizeof *s->r);
    int32_t *last = malloc((size_t)p->nkeys * sizeof *last);
    uint64_t *cur = calloc((size_t)p->nkeys, sizeof *cur);
    uint8_t *alive = calloc((size_t)p->nkeys, 1);
    uint64_t rs = seed;
    int span = p->pad_max - p->pad_min + 1;
    int nsnap = 0, seen = 0;
    for (int k = 0; k < p->nkeys; k++) {
        last[k] = -1;
        if (k % 3) nsnap++;
    }
    for (int k = 0; k < p->nkeys; k++) {
        if (k % 3 == 0) continue;
        last[k] = (int32_t)s->n;
        stream_add(s, k, ++seen == nsnap ? EV_SNAP_LAST : EV_SNAP, SNAP_LSN, p->pad_min + (int)rnd_below(&rs, span));
        alive[k] = 1;
        cur[k] = SNAP_LSN;
    }
    uint64_t lsn = SNAP_LSN;
    while (s->n < (size_t)p->nrec) {
        int k = (int)rnd_below(&rs, (uint64_t)p->nkeys);
        int d = (int)rnd_below(&rs, 100);
        int padlen = p->pad_min + (int)rnd_below(&rs, span);
        if (d < 3 && cur[k] > SNAP_LSN) {
            /* a late older update: stale, or a blocked resurrection */
            stream_add(s, k, EV_STALE, cur[k] - 3, padlen);
        } else if (d < 6 && last[k] >= 0) {
            /* a duplicate of the key's last change */
            crec c = s->r[last[k]];
            if (c.kind == EV_SNAP_LAST) c.kind = EV_SNAP;
            s->r[s->n++] = c;
        } else if (d < 20 && alive[k]) {
            lsn += 8;
            last[k] = (int32_t)s->n;
            stream_add(s, k, EV_DELETE, lsn, 0);
            stream_add(s, k, EV_TOMB, lsn, 0);
            alive[k] = 0;
            cur[k] = lsn;
        } else {
            lsn += 8;
            last[k] = (int32_t)s->n;
            stream_add(s, k, alive[k] ? EV_UPDATE : EV_INSERT, lsn, padlen);
            alive[k] = 1;
            cur[k] = lsn;
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        crec *c = &s->r[i];
        c->part = (uint8_t)(c->key % NPART);
        c->offset = (int64_t)s->nper[c->part]++;
        s->bytes += c->padlen + 120;
    }
    for (int q = 0; q < NPART; q++) s->gidx[q] = malloc((s->nper[q] + 1) * sizeof *s->gidx[q]);
    for (size_t i = 0; i < s->n; i++) s->gidx[s->r[i].part][s->r[i].offset] = i;
    free(last);
    free(cur);
    free(alive);
}

static void stream_free(stream *s)
{
    free(s->r);
    for (int q = 0; q < NPART; q++) free(s->gidx[q]);
    memset(s, 0, sizeof *s);
}

/* The padding of (key, lsn): a 24-character word of both, repeated.  It
 * compresses well, on purpose: librdkafka's mock cluster keeps only the
 * last 5 MiB of each partition, and the records are produced compressed
 * (RocksDB's write buffer fills with the uncompressed rows all the same). */
static void pad_fill(char *p, size_t n, int key, uint64_t lsn)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyz012345";
    uint64_t x = ((uint64_t)(key + 1) * 0x9E3779B97F4A7C15ULL) ^ (lsn * 0xBF58476D1CE4E5B9ULL) ^ 1;
    char word[24];
    for (size_t i = 0; i < sizeof word; i++) {
        if ((i & 7) == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        word[i] = al[(x >> ((i & 7) * 5)) & 31];
    }
    for (size_t i = 0; i < n; i++) p[i] = word[i % sizeof word];
}

static size_t value_cap(const stream *s) { return (size_t)s->prof.pad_max + 512; }

static int render_key(const crec *c, char *buf, size_t cap) { return snprintf(buf, cap, "{\"id\":%d}", c->key); }

/* The Debezium envelope of c in buf (at least value_cap bytes); 0 for a
 * Kafka tombstone. */
static size_t render_value(const crec *c, char *buf, size_t cap)
{
    int n;
    const char *src = "\"source\":{\"schema\":\"public\",\"table\":\"items\"";
    switch (c->kind) {
    case EV_TOMB:
        return 0;
    case EV_DELETE:
        n = snprintf(buf, cap, "{\"op\":\"d\",\"before\":{\"id\":%d},\"after\":null,%s,\"lsn\":%llu}}", c->key, src,
                     (unsigned long long)c->lsn);
        return (size_t)n;
    case EV_SNAP:
    case EV_SNAP_LAST:
        n = snprintf(buf, cap, "{\"op\":\"r\",\"before\":null,\"after\":{\"id\":%d,\"v\":%d,\"pad\":\"", c->key,
                     SNAP_LSN);
        break;
    default:
        n = snprintf(buf, cap, "{\"op\":\"%s\",\"before\":null,\"after\":{\"id\":%d,\"v\":%llu,\"pad\":\"",
                     c->kind == EV_INSERT ? "c" : "u", c->key, (unsigned long long)c->lsn);
        break;
    }
    pad_fill(buf + n, c->padlen, c->key, c->lsn);
    n += c->padlen;
    if (c->kind == EV_SNAP || c->kind == EV_SNAP_LAST)
        n += snprintf(buf + n, cap - (size_t)n, "\"},%s,\"snapshot\":\"%s\",\"lsn\":%d}}", src,
                      c->kind == EV_SNAP_LAST ? "last" : "true", SNAP_LSN);
    else
        n += snprintf(buf + n, cap - (size_t)n, "\"},%s,\"lsn\":%llu}}", src, (unsigned long long)c->lsn);
    return (size_t)n;
}

/* The first line where a and b differ, as a malloc'd message. */
static char *first_diff(const char *a, const char *b)
{
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    int na = (int)strcspn(la, "\n"), nb = (int)strcspn(lb, "\n");
    char *m = NULL;
    cr_assert(asprintf(&m, "line %d:\n  got:      %.*s\n  expected: %.*s", line, na > 400 ? 400 : na, la,
                       nb > 400 ? 400 : nb, lb) > 0);
    return m;
}

/* What two replicas of the same input must agree on, whatever the batch
 * boundaries: the export of the view, then every stored key (tombstones
 * included) with its version and flags.  Not the columns a tombstone
 * keeps: those are the row as the replica held it when the delete came,
 * which depends on whether the delete shared a batch with the change
 * before it (test_apply.c, document/any_batch_split). */
static char *final_image(cdc_store_t *st)
{
    char *view = tu_export(st, TABLE, 0), *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs(view, f);
    free(view);
    cdc_iter_options_t io = {.include_deleted = 1};
    cdc_iter_t *it = NULL;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_iter_open(st, TABLE, &io, &it, &e), 0, "%s", e.msg);
    cdc_row_t row;
    int rc;
    while ((rc = cdc_iter_next(it, &row, &e)) == 1)
        fprintf(f, "%s deleted=%d snapshot=%d version=(%llu,%u,%llu)\n", row.key_json, row.deleted, row.from_snapshot,
                (unsigned long long)row.epoch, row.kind, (unsigned long long)row.lsn);
    cr_assert_eq(rc, 0, "%s", e.msg);
    cdc_iter_close(it);
    fclose(f);
    return buf;
}

/* ---- The child: one life of a replica (runs in a fresh process) ---- */

static int child_fd = -1;

static void child_say(const char *fmt, ...)
{
    char b[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > 0 && write(child_fd, b, (size_t)n) < 0) _exit(7);
}

static const char *child_env(const char *name)
{
    const char *v = getenv(name);
    if (!v) {
        fprintf(stderr, "crash child: %s not set\n", name);
        _exit(5);
    }
    return v;
}

/* Tells the parent the stored positions (after a committed batch). */
static void child_report(cdc_store_t *st, const char *topic, int64_t pos[NPART])
{
    for (int q = 0; q < NPART; q++) {
        pos[q] = -2;
        if (cdc_store_position(st, topic, q, &pos[q], NULL)) _exit(6);
    }
    child_say("P %lld %lld\n", (long long)pos[0], (long long)pos[1]);
}

/* In-memory batches: the records past the stored positions, in input order. */
static int child_apply(cdc_store_t *st, size_t bs)
{
    profile p = {"child", 0, 0, 0, 0};
    unsigned long long seed = 0;
    if (sscanf(child_env("CDC_CRASH_STREAM"), "%d:%d:%d:%d:%llu", &p.nkeys, &p.nrec, &p.pad_min, &p.pad_max,
               &seed) != 5)
        return 5;
    stream s;
    stream_gen(&s, &p, seed);
    snprintf(s.topic, sizeof s.topic, "%s", child_env("CDC_CRASH_TOPIC"));
    int64_t pos[NPART];
    for (int q = 0; q < NPART; q++)
        if (cdc_store_position(st, s.topic, q, &pos[q], NULL)) return 6;
    size_t *todo = malloc((s.n + 1) * sizeof *todo), nt = 0;
    for (size_t i = 0; i < s.n; i++)
        if (s.r[i].offset > pos[s.r[i].part]) todo[nt++] = i;
    size_t cap = value_cap(&s);
    char *scratch = malloc(cap);
    cdc_record_t *recs = calloc(bs < nt ? bs : nt + 1, sizeof *recs);
    int rc = 0;
    for (size_t b = 0; b < nt && !rc; b += bs) {
        size_t m = nt - b < bs ? nt - b : bs;
        for (size_t j = 0; j < m; j++) {
            const crec *c = &s.r[todo[b + j]];
            char kb[32];
            int kl = render_key(c, kb, sizeof kb);
            size_t vl = render_value(c, scratch, cap);
            cdc_record_t *r = &recs[j];
            *r = (cdc_record_t){.topic = s.topic, .partition = c->part, .offset = c->offset};
            r->key = strndup(kb, (size_t)kl);
            r->key_len = (size_t)kl;
            r->value = vl ? strndup(scratch, vl) : NULL;
            r->value_len = vl;
        }
        cdc_error_t e = {0};
        if (cdc_store_apply(st, recs, m, NULL, NULL, &e)) {
            fprintf(stderr, "crash child: apply: %s\n", e.msg);
            rc = 3;
        } else {
            child_report(st, s.topic, pos);
        }
        for (size_t j = 0; j < m; j++) {
            free((char *)recs[j].key);
            free((char *)recs[j].value);
        }
    }
    free(recs);
    free(scratch);
    free(todo);
    stream_free(&s);
    return rc;
}

typedef struct child_ctx {
    cdc_store_t *st;
    const char *topic;
    int64_t end[NPART];
    volatile int stop;
} child_ctx;

static void child_progress(void *opaque, const cdc_apply_result_t *total, uint64_t bytes_read)
{
    child_ctx *c = opaque;
    int64_t pos[NPART];
    child_report(c->st, c->topic, pos);
}

static int child_file(cdc_store_t *st, size_t bs)
{
    child_ctx c = {.st = st, .topic = child_env("CDC_CRASH_TOPIC")};
    /* batches of bs records exactly (not cut at 64 MiB of text): the
     * boundaries the parent checks the replica's positions against */
    cdc_file_options_t fo = {.batch_size = bs, .batch_bytes = SIZE_MAX, .progress = child_progress,
                             .progress_opaque = &c};
    cdc_error_t e = {0};
    if (cdc_store_apply_file(st, child_env("CDC_CRASH_FILE"), &fo, NULL, &e)) {
        fprintf(stderr, "crash child: apply file: %s\n", e.msg);
        return 3;
    }
    return 0;
}

static void child_on_batch(void *opaque, const cdc_kafka_batch_t *b)
{
    child_ctx *c = opaque;
    int64_t pos[NPART];
    child_report(c->st, c->topic, pos);
    int done = 1;
    for (int q = 0; q < NPART; q++)
        if (pos[q] < c->end[q]) done = 0;
    if (done) c->stop = 1;
}

static void child_log(void *opaque, int level, const char *facility, const char *msg)
{
    if (getenv("CDC_TEST_VERBOSE") || level <= CDC_LOG_ERROR)
        fprintf(stderr, "crash child [%d] %s: %s\n", level, facility, msg);
    /* the consumer has its partitions: consumption starts */
    if (!strncmp(msg, "assigned ", 9)) child_say("A\n");
}

/* The Kafka source until every partition's position reaches its end. */
static int child_kafka(cdc_store_t *st, size_t bs)
{
    child_ctx c = {.st = st, .topic = child_env("CDC_CRASH_TOPIC")};
    long long e0, e1;
    if (sscanf(child_env("CDC_CRASH_END"), "%lld:%lld", &e0, &e1) != 2) return 5;
    c.end[0] = e0;
    c.end[1] = e1;
    int done = 1;
    for (int q = 0; q < NPART; q++) {
        int64_t p = -2;
        if (cdc_store_position(st, c.topic, q, &p, NULL)) return 6;
        if (p < c.end[q]) done = 0;
    }
    if (done) return 0;
    /* A new group for every life: the mock coordinator waits 3 s for the
     * members of an empty group, and a session timeout for the killed
     * member of a group it still knows.  A member that rejoins (librdkafka
     * 2.0 sometimes does, right after its first join) waits the session
     * timeout less a second, and one waiting in its first join must not
     * time out during the 3 s: hence 4 s. */
    static const cdc_kafka_property_t props[] = {
        {"session.timeout.ms", "4000"},
        {"heartbeat.interval.ms", "300"},
        {"topic.metadata.refresh.interval.ms", "1000"},
        {"reconnect.backoff.max.ms", "1000"},
        {"max.partition.fetch.bytes", "8388608"},
    };
    const char *topics[1] = {c.topic};
    cdc_kafka_options_t o = {0};
    o.brokers = child_env("CDC_CRASH_BROKERS");
    o.topics = topics;
    o.ntopics = 1;
    o.group = child_env("CDC_CRASH_GROUP");
    o.batch_max_events = bs;
    o.batch_max_ms = atoi(child_env("CDC_CRASH_MAXMS"));
    o.properties = props;
    o.nproperties = sizeof props / sizeof props[0];
    o.log = child_log;
    o.stop = &c.stop;
    o.on_batch = child_on_batch;
    o.on_batch_opaque = &c;
    cdc_kafka_t *k = NULL;
    cdc_error_t e = {0};
    if (cdc_kafka_open(st, &o, &k, &e)) {
        fprintf(stderr, "crash child: kafka open: %s\n", e.msg);
        return 4;
    }
    int rc = cdc_kafka_run(k, &e);
    if (rc) fprintf(stderr, "crash child: kafka run: %s\n", e.msg);
    cdc_kafka_close(k);
    return rc ? 4 : 0;
}

static int child_main(const char *role)
{
    child_fd = atoi(child_env("CDC_CRASH_FD"));
    const char *dir = child_env("CDC_CRASH_DIR");
    size_t bs = (size_t)strtoull(child_env("CDC_CRASH_BS"), NULL, 10);
    cdc_store_t *st = NULL;
    cdc_error_t e = {0};
    if (cdc_store_open(dir, NULL, &st, &e)) {
        fprintf(stderr, "crash child: open %s: %s\n", dir, e.msg);
        return 2;
    }
    child_say("O\n");
    int rc = !strcmp(role, "apply") ? child_apply(st, bs)
             : !strcmp(role, "file") ? child_file(st, bs)
             : !strcmp(role, "kafka") ? child_kafka(st, bs)
                                      : 5;
    if (!rc) child_say("D\n");
    cdc_store_close(st);
    return rc;
}

/* A life of a replica runs as this binary started again with
 * CDC_CRASH_ROLE set: it does its work before Criterion's main and exits. */
__attribute__((constructor)) static void crash_child_entry(void)
{
    const char *role = getenv("CDC_CRASH_ROLE");
    if (role) _exit(child_main(role));
}

/* ---- The model: the view the input gives up to given positions ---- */

/* A malloc'd description of the first difference between the replica's
 * view (tombstones included) and the input applied up to pos, or NULL. */
static char *check_view(cdc_store_t *st, const stream *s, const int64_t pos[NPART])
{
    int nk = s->prof.nkeys;
    int64_t *win = malloc((size_t)nk * sizeof *win);
    uint8_t *seen = calloc((size_t)nk, 1);
    char *msg = NULL, *pad = malloc(value_cap(s));
    uint64_t live = 0, dead = 0, rows = 0;
    for (int k = 0; k < nk; k++) win[k] = -1;
    for (size_t i = 0; i < s->n; i++) {
        const crec *c = &s->r[i];
        if (c->offset > pos[c->part] || c->kind == EV_TOMB) continue;
        if (win[c->key] < 0 || c->lsn > s->r[win[c->key]].lsn) win[c->key] = (int64_t)i;
    }
    for (int k = 0; k < nk; k++) {
        if (win[k] < 0) continue;
        if (s->r[win[k]].kind == EV_DELETE) dead++;
        else live++;
    }
    cdc_iter_options_t io = {.include_deleted = 1};
    cdc_iter_t *it = NULL;
    cdc_error_t e = {0};
    int rc = cdc_iter_open(st, TABLE, &io, &it, &e);
    if (rc == CDC_ENOTFOUND) {
        rc = 0;
    } else if (rc) {
        cr_assert(asprintf(&msg, "cdc_iter_open: %s", e.msg) > 0);
        goto out;
    }
    cdc_row_t row;
    while (it && (rc = cdc_iter_next(it, &row, &e)) == 1) {
        rows++;
        const char *colon = strchr(row.key_json, ':');
        int k = colon ? atoi(colon + 1) : -1;
        if (k < 0 || k >= nk || seen[k]) {
            cr_assert(asprintf(&msg, "unexpected row key %s", row.key_json) > 0);
            goto out;
        }
        seen[k] = 1;
        if (win[k] < 0) {
            cr_assert(asprintf(&msg,
                               "data ahead of the positions: key %d has a row (lsn %llu, deleted %d) but no record "
                               "at or below the stored position of partition %d (%lld) touches it",
                               k, (unsigned long long)row.lsn, row.deleted, k % NPART, (long long)pos[k % NPART]) > 0);
            goto out;
        }
        const crec *w = &s->r[win[k]];
        if (row.lsn != w->lsn) {
            /* which record put the stored version there */
            long long at = -1;
            for (size_t i = 0; i < s->n; i++)
                if (s->r[i].key == k && s->r[i].lsn == row.lsn && s->r[i].kind != EV_TOMB) at = s->r[i].offset;
            cr_assert(asprintf(&msg,
                               "%s: key %d holds lsn %llu (from offset %lld) but the records up to the stored "
                               "position %lld of partition %d end at lsn %llu (offset %lld)",
                               row.lsn < w->lsn ? "lost change" : "data ahead of the positions", k,
                               (unsigned long long)row.lsn, at, (long long)pos[w->part], (int)w->part,
                               (unsigned long long)w->lsn, (long long)w->offset) > 0);
            goto out;
        }
        int want_deleted = w->kind == EV_DELETE, want_snap = w->kind == EV_SNAP || w->kind == EV_SNAP_LAST;
        if (row.deleted != want_deleted || row.from_snapshot != want_snap || row.kind != (want_snap ? 1u : 2u) ||
            row.epoch != SNAP_LSN) {
            cr_assert(asprintf(&msg,
                               "key %d (offset %lld): deleted %d from_snapshot %d version (%llu,%u,%llu), "
                               "expected deleted %d from_snapshot %d version (%d,%d,%llu)",
                               k, (long long)w->offset, row.deleted, row.from_snapshot, (unsigned long long)row.epoch,
                               row.kind, (unsigned long long)row.lsn, want_deleted, want_snap, SNAP_LSN,
                               want_snap ? 1 : 2, (unsigned long long)w->lsn) > 0);
            goto out;
        }
        if (want_deleted) continue;
        char v[32], id[32];
        snprintf(id, sizeof id, "%d", k);
        snprintf(v, sizeof v, "%llu", (unsigned long long)(want_snap ? SNAP_LSN : w->lsn));
        pad_fill(pad, w->padlen, k, w->lsn);
        int ok = row.ncols == 3 && row.values[0] && row.values[1] && row.values[2] && row.lens[0] == strlen(id) &&
                 !memcmp(row.values[0], id, row.lens[0]) && row.lens[1] == strlen(v) &&
                 !memcmp(row.values[1], v, row.lens[1]) && row.lens[2] == w->padlen &&
                 !memcmp(row.values[2], pad, w->padlen);
        if (!ok) {
            cr_assert(asprintf(&msg, "key %d (offset %lld, lsn %llu): the row's values differ from the record's "
                               "(%zu columns)", k, (long long)w->offset, (unsigned long long)w->lsn, row.ncols) > 0);
            goto out;
        }
    }
    if (rc < 0) {
        cr_assert(asprintf(&msg, "cdc_iter_next: %s", e.msg) > 0);
        goto out;
    }
    for (int k = 0; k < nk; k++)
        if (win[k] >= 0 && !seen[k]) {
            const crec *w = &s->r[win[k]];
            cr_assert(asprintf(&msg,
                               "lost change: key %d has no row, but the record at partition %d offset %lld (lsn %llu, "
                               "at or below the stored position %lld) wrote it",
                               k, (int)w->part, (long long)w->offset, (unsigned long long)w->lsn,
                               (long long)pos[w->part]) > 0);
            goto out;
        }
    cdc_stats_t stt = {0};
    if (rows && cdc_store_stats(st, TABLE, &stt, &e) != 0) {
        cr_assert(asprintf(&msg, "cdc_store_stats: %s", e.msg) > 0);
        goto out;
    }
    if (stt.rows_live != live || stt.rows_deleted != dead)
        cr_assert(asprintf(&msg, "counters: rows_live %llu rows_deleted %llu, the data has %llu and %llu",
                           (unsigned long long)stt.rows_live, (unsigned long long)stt.rows_deleted,
                           (unsigned long long)live, (unsigned long long)dead) > 0);
out:
    cdc_iter_close(it);
    free(win);
    free(seen);
    free(pad);
    return msg;
}

/* For sources cut from the input order: the length g of the prefix of the
 * input the positions cover, or -1 when they cover no prefix. */
static long global_prefix(const stream *s, const int64_t pos[NPART])
{
    size_t g = 0, cnt[NPART] = {0};
    for (int q = 0; q < NPART; q++) {
        if (pos[q] >= (int64_t)s->nper[q]) return -1;
        if (pos[q] >= 0 && s->gidx[q][pos[q]] + 1 > g) g = s->gidx[q][pos[q]] + 1;
    }
    for (size_t i = 0; i < g; i++) cnt[s->r[i].part]++;
    for (int q = 0; q < NPART; q++)
        if ((int64_t)cnt[q] != pos[q] + 1) return -1;
    return (long)g;
}

/* ---- Watching a life: its pipe, its RocksDB threads, its directory ---- */

enum { SRC_APPLY, SRC_FILE, SRC_KAFKA };
static const char *const SRC_NAME[] = {"apply", "file", "kafka"};

enum { TR_NONE, TR_DELAY, TR_OPEN, TR_FLUSH, TR_COMPACT, TR_COUNT };
static const char *const TR_NAME[] = {"none", "delay", "open", "flush", "compaction"};

enum { PH_OPEN, PH_JOIN, PH_APPLY, PH_CLOSE, PH_COUNT };

/* Who wrote a new .sst file, from what the life was doing when it appeared. */
enum { JOB_RECOVERY, JOB_FLUSH, JOB_COMPACT, JOB_UNKNOWN };
static const char *const JOB_NAME[] = {"the recovery at open", "a flush", "a compaction", "an unknown job"};
static const char *const PH_NAME[] = {"open", "consumer join", "apply", "close"};

typedef struct bgthread {
    int tid;
    int flush; /* 1: rocksdb:high (flushes), 0: rocksdb:low (compactions) */
    uint64_t run;
} bgthread;

typedef struct bgmon {
    pid_t pid;
    bgthread t[16];
    int n;
    int flush, compact; /* working at the last sample */
} bgmon;

static int read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return (int)n;
}

/* Finds RocksDB's background threads of the child. */
static void bg_scan(bgmon *b)
{
    char path[64], comm[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)b->pid);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) && b->n < 16) {
        int tid = atoi(de->d_name), known = 0;
        if (tid <= 0) continue;
        for (int i = 0; i < b->n; i++)
            if (b->t[i].tid == tid) known = 1;
        if (known) continue;
        snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)b->pid, tid);
        if (read_small(path, comm, sizeof comm) <= 0) continue;
        if (!strncmp(comm, "rocksdb:high", 12)) b->t[b->n++] = (bgthread){tid, 1, 0};
        else if (!strncmp(comm, "rocksdb:low", 11)) b->t[b->n++] = (bgthread){tid, 0, 0};
    }
    closedir(d);
}

/* Which of flush and compaction threads are working: running or in I/O
 * now, or ran since the previous sample (about a millisecond ago). */
static void bg_sample(bgmon *b)
{
    char path[80], buf[512];
    b->flush = b->compact = 0;
    for (int i = 0; i < b->n; i++) {
        bgthread *t = &b->t[i];
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)b->pid, t->tid);
        if (read_small(path, buf, sizeof buf) <= 0) continue;
        const char *rp = strrchr(buf, ')');
        char state = rp && rp[1] && rp[2] ? rp[2] : '?';
        snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)b->pid, t->tid);
        uint64_t run = t->run;
        if (read_small(path, buf, sizeof buf) > 0) run = strtoull(buf, NULL, 10);
        int active = state == 'R' || state == 'D' || (t->run && run > t->run);
        t->run = run;
        if (active) *(t->flush ? &b->flush : &b->compact) = 1;
    }
}

/* The highest .sst file number in dir and, in *newer, how many are above base. */
static long sst_scan(const char *dir, long base, int *newer)
{
    DIR *d = opendir(dir);
    long max = 0;
    if (newer) *newer = 0;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".sst")) continue;
        long num = atol(de->d_name);
        if (num > max) max = num;
        if (newer && num > base) (*newer)++;
    }
    closedir(d);
    return max;
}

/* The .sst file numbers in dir (up to cap); returns how many. */
static int sst_list(const char *dir, long *nums, int cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < cap) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".sst")) nums[n++] = atol(de->d_name);
    }
    closedir(d);
    return n;
}

/* The shape of the LSM tree as the replica's MANIFEST has it: which .sst
 * files are live, and how many of the table's are on level 0.  The
 * library does not show it, so the test reads it through RocksDB itself,
 * metadata only, read-only, with the write-ahead logs out of sight (an
 * empty wal_dir) so that nothing is replayed. */
typedef struct lsm {
    int ok, l0, nlive;
    long live[512];
} lsm;

static void lsm_read(const char *dir, const char *nowal, lsm *o)
{
    memset(o, 0, sizeof *o);
    rocksdb_options_t *opt = rocksdb_options_create();
    rocksdb_options_set_wal_dir(opt, nowal);
    rocksdb_options_set_max_open_files(opt, 16);
    char *err = NULL;
    size_t ncf = 0;
    char **names = rocksdb_list_column_families(opt, dir, &ncf, &err);
    if (err) {
        /* No replica yet (the kill came before its first open): the C API
         * still returns a list of zero names, which must be freed too. */
        free(err);
        if (names) rocksdb_list_column_families_destroy(names, ncf);
        rocksdb_options_destroy(opt);
        return;
    }
    const rocksdb_options_t **cfo = calloc(ncf, sizeof *cfo);
    rocksdb_column_family_handle_t **h = calloc(ncf, sizeof *h);
    for (size_t i = 0; i < ncf; i++) cfo[i] = opt;
    rocksdb_t *db = rocksdb_open_for_read_only_column_families(opt, dir, (int)ncf, (const char *const *)names, cfo, h,
                                                                0, &err);
    if (err) {
        cr_log_info("    reading the LSM of %s: %s", dir, err);
        free(err);
    } else {
        const rocksdb_livefiles_t *lf = rocksdb_livefiles(db);
        for (int i = 0; i < rocksdb_livefiles_count(lf) && o->nlive < 512; i++) {
            const char *nm = rocksdb_livefiles_name(lf, i), *sl = strrchr(nm, '/');
            o->live[o->nlive++] = atol(sl ? sl + 1 : nm);
            if (rocksdb_livefiles_level(lf, i) == 0 && !strcmp(rocksdb_livefiles_column_family_name(lf, i), "t:" TABLE))
                o->l0++;
        }
        rocksdb_livefiles_destroy(lf);
        for (size_t i = 0; i < ncf; i++) rocksdb_column_family_handle_destroy(h[i]);
        rocksdb_close(db);
        o->ok = 1;
    }
    rocksdb_list_column_families_destroy(names, ncf);
    free(cfo);
    free(h);
    rocksdb_options_destroy(opt);
}

/* ---- A run of the whole test: the inputs, the references, the tallies ---- */

typedef struct kmock {
    rd_kafka_t *host;
    rd_kafka_mock_cluster_t *mc;
    char boot[256];
} kmock;

typedef struct tally {
    int kills, scenarios, lives, completed;
    int trig[TR_COUNT], fallback[TR_COUNT];
    int phase[PH_COUNT], open_wrote;
    int in_flush, in_compact, in_both, new_sst;
    int cut_any, cut[4];
    int rerun, large, small;
    size_t bs_min, bs_max;
    int bs_small, bs_mid, bs_big;
} tally;

typedef struct run {
    int src;
    int only;             /* -1: both inputs; 0: the small one only; 1: the large one only */
    int quick;
    uint64_t seed, rng;
    stream s[2];          /* small, large */
    char *ref_export[2];  /* the reference replica's final_image() */
    double us_per_rec[2]; /* apply speed: of the reference build, then as the lives show it */
    char *full_file[2];   /* the whole input as a kcat file (file source) */
    char *work;           /* a directory for files */
    char *nowal;          /* an empty directory (lsm_read) */
    kmock m;
    tally t;
} run;

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    if (getenv("CDC_TEST_VERBOSE")) fprintf(stderr, "rdkafka(test) %d %s: %s\n", level, fac, buf);
}

static rd_kafka_t *new_producer(const char *boot)
{
    char es[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    if (boot) cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", boot, es, sizeof es), 0);
    cr_assert_eq(rd_kafka_conf_set(conf, "linger.ms", "5", es, sizeof es), 0);
    cr_assert_eq(rd_kafka_conf_set(conf, "compression.codec", "lz4", es, sizeof es), 0);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, es, sizeof es);
    cr_assert_not_null(rk, "rd_kafka_new: %s", es);
    return rk;
}

/* Produces the whole input to its topic, record i to its partition, so
 * that the offsets Kafka gives are the input's. */
static void kmock_produce(kmock *m, const stream *s)
{
    cr_assert_eq(rd_kafka_mock_topic_create(m->mc, s->topic, NPART, 1), 0);
    rd_kafka_t *p = new_producer(m->boot);
    size_t cap = value_cap(s);
    char *v = malloc(cap), kb[32];
    for (size_t i = 0; i < s->n; i++) {
        const crec *c = &s->r[i];
        int kl = render_key(c, kb, sizeof kb);
        size_t vl = render_value(c, v, cap);
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                p, RD_KAFKA_V_TOPIC(s->topic), RD_KAFKA_V_PARTITION(c->part), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_KEY(kb, (size_t)kl), RD_KAFKA_V_VALUE(vl ? v : NULL, vl), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(p, 50);
                continue;
            }
            cr_assert_eq(e, 0, "produce: %s", rd_kafka_err2str(e));
            break;
        }
        rd_kafka_poll(p, 0);
    }
    cr_assert_eq(rd_kafka_flush(p, 60000), 0, "produce flush timed out");
    for (int q = 0; q < NPART; q++) {
        int64_t lo = -1, hi = -1;
        cr_assert_eq(rd_kafka_query_watermark_offsets(p, s->topic, q, &lo, &hi, 10000), 0);
        /* the mock's retention must not have dropped the beginning */
        cr_assert(lo == 0 && hi == (int64_t)s->nper[q], "partition %d holds offsets %lld..%lld, the input 0..%zu", q,
                  (long long)lo, (long long)hi - 1, s->nper[q] - 1);
    }
    rd_kafka_destroy(p);
    free(v);
}

/* Writes the input from record `from` on as kcat -J lines. */
static void write_kcat(const char *path, const stream *s, size_t from)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    size_t cap = value_cap(s);
    char *v = malloc(cap), *esc = malloc(2 * cap);
    for (size_t i = from; i < s->n; i++) {
        const crec *c = &s->r[i];
        fprintf(f, "{\"topic\":\"%s\",\"partition\":%d,\"offset\":%lld,\"key\":\"{\\\"id\\\":%d}\",\"payload\":",
                s->topic, (int)c->part, (long long)c->offset, c->key);
        size_t vl = render_value(c, v, cap), el = 0;
        if (!vl) {
            fputs("null}\n", f);
            continue;
        }
        esc[el++] = '"';
        for (size_t j = 0; j < vl; j++) {
            if (v[j] == '"' || v[j] == '\\') esc[el++] = '\\';
            esc[el++] = v[j];
        }
        esc[el++] = '"';
        fwrite(esc, 1, el, f);
        fputs("}\n", f);
    }
    cr_assert_eq(fclose(f), 0);
    free(v);
    free(esc);
}

/* The reference: the whole input applied once, in a clean replica. */
static void build_reference(run *R, int pi)
{
    stream *s = &R->s[pi];
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    size_t cap = value_cap(s), bs = 10000;
    char *v = malloc(cap);
    cdc_record_t *recs = calloc(bs, sizeof *recs);
    double t0 = now_ms();
    for (size_t b = 0; b < s->n; b += bs) {
        size_t m = s->n - b < bs ? s->n - b : bs;
        for (size_t j = 0; j < m; j++) {
            const crec *c = &s->r[b + j];
            char kb[32];
            int kl = render_key(c, kb, sizeof kb);
            size_t vl = render_value(c, v, cap);
            recs[j] = (cdc_record_t){.topic = s->topic, .partition = c->part, .offset = c->offset,
                                     .key = strndup(kb, (size_t)kl), .key_len = (size_t)kl,
                                     .value = vl ? strndup(v, vl) : NULL, .value_len = vl};
        }
        tu_apply(st, recs, m);
        for (size_t j = 0; j < m; j++) {
            free((char *)recs[j].key);
            free((char *)recs[j].value);
        }
    }
    R->us_per_rec[pi] = (now_ms() - t0) * 1000.0 / (double)s->n;
    int64_t end[NPART];
    for (int q = 0; q < NPART; q++) end[q] = (int64_t)s->nper[q] - 1;
    char *why = check_view(st, s, end);
    cr_assert_null(why, "the reference replica (%s input, seed %llu) differs from the model: %s", s->prof.name,
                   (unsigned long long)R->seed, why);
    R->ref_export[pi] = final_image(st);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    free(v);
    free(recs);
}

/* ---- One life ---- */

typedef struct plan {
    int trigger;
    double delay_ms;  /* delay: into the apply; open: from the start; flush/compaction: the fallback delay */
    double target;    /* or when this many records are committed (whichever comes first); -1: none */
    double jitter_ms; /* from the condition to the kill */
    int stage;        /* flush/compaction: 0 when its thread starts working (a flush first syncs the
                       * log), 1 when its output .sst appears */
    size_t bs;
    int max_ms;       /* Kafka batch time bound */
    int rerun;        /* file: the whole file again instead of the records past the positions */
} plan;

typedef struct life {
    int killed, status, fallback;
    int opened, batched, done;
    double t_open, t_assign, t_batch, t_kill, t_end;
    int assigned;
    int flush, compact, new_sst, phase;
    double t_last_ack;
    long sst_base;            /* the highest .sst number before the life */
    struct {
        long num;
        int by;               /* JOB_* at the file's first sight */
    } seen[128];
    int nseen, seen_by[4];
    int cut[4];               /* files a kill cut short, by JOB_* */
    int l0;                   /* the table's level-0 files after the life */
    int64_t ack[NPART]; /* the last positions the child said were committed */
} life;

static void life_read(int fd, life *L, double t, char *line, size_t *ll)
{
    char buf[512];
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < k; i++) {
            if (buf[i] != '\n') {
                if (*ll < 255) line[(*ll)++] = buf[i];
                continue;
            }
            line[*ll] = 0;
            *ll = 0;
            long long a, b;
            if (line[0] == 'O') {
                L->opened = 1;
                L->t_open = t;
            } else if (line[0] == 'D') {
                L->done = 1;
            } else if (line[0] == 'A') {
                if (!L->assigned) L->t_assign = t;
                L->assigned = 1;
            } else if (sscanf(line, "P %lld %lld", &a, &b) == 2) {
                if (!L->batched) L->t_batch = t;
                L->batched = 1;
                L->t_last_ack = t;
                L->ack[0] = a;
                L->ack[1] = b;
            }
        }
    }
}

/* Notes the .sst files that appeared since the last look, and who was
 * working when they did: a compaction or flush thread, else the open's
 * recovery (which writes its level-0 files on the opening thread). */
static void life_note_sst(const char *dir, life *L, const bgmon *bg)
{
    long nums[256];
    int n = sst_list(dir, nums, 256);
    for (int i = 0; i < n; i++) {
        if (nums[i] <= L->sst_base) continue;
        int known = 0;
        for (int k = 0; k < L->nseen; k++)
            if (L->seen[k].num == nums[i]) known = 1;
        if (known || L->nseen >= 128) continue;
        int by = bg->compact ? JOB_COMPACT : bg->flush ? JOB_FLUSH : !L->opened ? JOB_RECOVERY : JOB_UNKNOWN;
        L->seen[L->nseen].num = nums[i];
        L->seen[L->nseen++].by = by;
        L->seen_by[by] = 1;
    }
}

/* Starts a life with the extra environment entries, watches it, and kills
 * it when the plan's trigger fires; returns when it is gone. */
static void run_life(const char *dir, int src, const plan *P, char **extra, life *L, int64_t start_sum)
{
    memset(L, 0, sizeof *L);
    for (int q = 0; q < NPART; q++) L->ack[q] = -1;
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    cr_assert_eq(fcntl(fds[0], F_SETFD, FD_CLOEXEC), 0);
    cr_assert_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    size_t ne = 0, nx = 0;
    while (environ[ne]) ne++;
    while (extra[nx]) nx++;
    char **envp = calloc(ne + nx + 2, sizeof *envp);
    char fdv[48];
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "CDC_CRASH_", 10)) envp[k++] = environ[i];
    for (size_t i = 0; i < nx; i++) envp[k++] = extra[i];
    snprintf(fdv, sizeof fdv, "CDC_CRASH_FD=%d", fds[1]);
    envp[k++] = fdv;
    char *argv[] = {"test_crash-life", NULL};
    L->sst_base = sst_scan(dir, 0, NULL);
    double t0 = now_ms();
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    close(fds[1]);
    free(envp);
    bgmon bg = {.pid = pid};
    double next_scan = 0, fire_at = -1;
    char line[256];
    size_t ll = 0;
    for (;;) {
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        poll(&pf, 1, 1);
        double t = now_ms() - t0;
        life_read(fds[0], L, t, line, &ll);
        int wst;
        if (waitpid(pid, &wst, WNOHANG) == pid) {
            L->status = wst;
            L->t_end = t;
            life_read(fds[0], L, t, line, &ll);
            break;
        }
        if (t >= next_scan) {
            bg_scan(&bg);
            next_scan = t + 10;
        }
        bg_sample(&bg);
        life_note_sst(dir, L, &bg);
        double base = src == SRC_KAFKA ? (L->assigned ? L->t_assign : -1) : (L->opened ? L->t_open : -1);
        double done = L->batched ? (double)(L->ack[0] + L->ack[1] + 2) : (double)start_sum;
        int late = (base >= 0 && t >= base + P->delay_ms) || (P->target >= 0 && done >= P->target);
        if (fire_at < 0) {
            switch (P->trigger) {
            case TR_OPEN:
                if (t >= P->delay_ms) fire_at = t;
                break;
            case TR_DELAY:
                if (late) fire_at = t + P->jitter_ms;
                break;
            case TR_FLUSH:
            case TR_COMPACT:
                if (P->stage ? L->seen_by[P->trigger == TR_FLUSH ? JOB_FLUSH : JOB_COMPACT]
                             : P->trigger == TR_FLUSH ? bg.flush : bg.compact) {
                    fire_at = t + P->jitter_ms;
                } else if (late) {
                    fire_at = t + P->jitter_ms;
                    L->fallback = 1;
                }
                break;
            }
        }
        int fire = fire_at >= 0 && t >= fire_at;
        if (t > LIFE_TIMEOUT_MS) {
            kill(pid, SIGKILL);
            waitpid(pid, &wst, 0);
            cr_assert_fail("a %s life in %s ran %.0f ms without finishing", SRC_NAME[src], dir, t);
        }
        if (!fire) continue;
        bg_sample(&bg);
        life_note_sst(dir, L, &bg);
        sst_scan(dir, L->sst_base, &L->new_sst);
        L->flush = bg.flush;
        L->compact = bg.compact;
        L->t_kill = now_ms() - t0;
        kill(pid, SIGKILL);
        cr_assert_eq(waitpid(pid, &wst, 0), pid);
        L->status = wst;
        L->t_end = L->t_kill;
        /* a life that exited on its own just before the signal ran to the end */
        L->killed = WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL;
        /* what the child said before the signal */
        life_read(fds[0], L, L->t_kill, line, &ll);
        break;
    }
    close(fds[0]);
    if (!L->killed) sst_scan(dir, L->sst_base, &L->new_sst);
    L->phase = !L->opened ? PH_OPEN : L->done ? PH_CLOSE : src == SRC_KAFKA && !L->assigned ? PH_JOIN : PH_APPLY;
}

/* Where a life's apply starts: the open, or the Kafka partition assignment. */
static double src_base(int src, const life *L) { return src == SRC_KAFKA ? L->t_assign : L->t_open; }

/* ---- Checks between lives ---- */

/* Opens the replica read-only after a kill (the next life recovers it);
 * a replica killed in its first open may lack the families a read-only
 * open needs, and is then opened for writing. */
static cdc_store_t *open_after_kill(const char *dir, int *empty)
{
    char cur[600];
    snprintf(cur, sizeof cur, "%s/CURRENT", dir);
    *empty = access(cur, F_OK) != 0;
    if (*empty) return NULL;
    cdc_open_options_t ro = {.read_only = 1};
    cdc_store_t *st = NULL;
    cdc_error_t e = {0};
    if (cdc_store_open(dir, &ro, &st, &e) == 0) return st;
    cr_log_info("    read-only open failed (%s); opening for writing", e.msg);
    cdc_error_t e2 = {0};
    int rc = cdc_store_open(dir, NULL, &st, &e2);
    cr_assert_eq(rc, 0, "the replica %s does not open after the kill: %s", dir, e2.msg);
    return st;
}

static size_t draw_bs(uint64_t *rng)
{
    int d = (int)rnd_below(rng, 10);
    if (d == 0) return 37;
    if (d == 1) return 100000;
    return (size_t)llround(exp(log(37.0) + rnd_unit(rng) * (log(100000.0) - log(37.0))));
}

static plan draw_plan(run *R, int pi, int want_kill, size_t remaining, size_t committed, double open_ms,
                      int lives_before, int l0)
{
    plan P = {0};
    uint64_t *g = &R->rng;
    P.bs = draw_bs(g);
    static const int maxms[] = {50, 200, 1000};
    P.max_ms = maxms[rnd_below(g, 3)];
    P.rerun = R->src == SRC_FILE && rnd_below(g, 3) == 0;
    double expect = (double)(P.rerun ? R->s[pi].n : remaining) * R->us_per_rec[pi] / 1000.0 + 5;
    /* draws happen whether or not they are used, so that the schedule
     * does not depend on the timing */
    int d = (int)rnd_below(g, 100);
    double u = rnd_unit(g), j = rnd_unit(g), f = rnd_unit(g);
    P.stage = (int)rnd_below(g, 2);
    P.target = -1;
    if (!want_kill || remaining == 0) return P;
    /* A compaction starts when the table has 4 level-0 files: the open
     * adds one (it writes the recovered log), a full write buffer (64 MiB
     * of rows) another.  On the large input two thirds of the kills wait
     * for such a job when one can come: a compaction when it can, else
     * a flush. */
    double left = P.rerun ? (double)R->s[pi].bytes : (double)R->s[pi].bytes * (double)remaining / (double)R->s[pi].n;
    int flushes = (int)(left / 70e6), can_flush = flushes > 0, can_compact = l0 + 1 + flushes >= 4;
    int job = can_compact && (d >= 70 || !can_flush) ? TR_COMPACT : can_flush ? TR_FLUSH : TR_DELAY;
    if (pi == 1)
        P.trigger = d < 20 ? TR_DELAY : d < 33 ? TR_OPEN : job;
    else
        P.trigger = d < 50 ? TR_DELAY : d < 75 ? TR_OPEN : can_compact ? TR_COMPACT : TR_DELAY;
    /* the first open has nothing to recover */
    if (P.trigger == TR_OPEN && lives_before == 0) P.trigger = TR_DELAY;
    switch (P.trigger) {
    case TR_DELAY:
        P.delay_ms = u * expect;
        P.target = (double)committed + (0.02 + 0.96 * f) * (double)remaining;
        P.jitter_ms = j * 10;
        break;
    case TR_OPEN:
        P.delay_ms = u * (open_ms * 1.3 + 2);
        break;
    default:
        /* the fallback: late in the life */
        P.delay_ms = (2 + u) * expect;
        P.target = (double)committed + (0.6 + 0.38 * f) * (double)remaining;
        /* a flush syncs the log (tens of ms), then writes its table (as long) */
        P.jitter_ms = j * (P.stage ? 20 : 60);
        break;
    }
    return P;
}

static void tally_life(tally *T, const plan *P, const life *L, int pi)
{
    T->lives++;
    if (P->rerun) T->rerun++;
    if (!T->bs_min || P->bs < T->bs_min) T->bs_min = P->bs;
    if (P->bs > T->bs_max) T->bs_max = P->bs;
    if (!L->killed) {
        T->completed++;
        return;
    }
    T->kills++;
    if (pi) T->large++;
    else T->small++;
    T->trig[P->trigger]++;
    if (L->fallback) T->fallback[P->trigger]++;
    T->phase[L->phase]++;
    if (L->phase == PH_OPEN && L->new_sst) T->open_wrote++;
    if (L->flush) T->in_flush++;
    if (L->compact) T->in_compact++;
    if (L->flush && L->compact) T->in_both++;
    if (L->new_sst) T->new_sst++;
    int any = 0;
    for (int k = 0; k < 4; k++)
        if (L->cut[k]) {
            T->cut[k]++;
            any = 1;
        }
    T->cut_any += any;
    if (P->bs < 1000) T->bs_small++;
    else if (P->bs < 10000) T->bs_mid++;
    else T->bs_big++;
}

/* ---- A scenario: one replica through a chain of lives ---- */

static void run_scenario(run *R, int pi, int nkills, int scn, int quota)
{
    stream *s = &R->s[pi];
    char *dir = strdup("/tmp/cdccrash.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    int64_t pos[NPART] = {-1, -1};
    long g = 0;
    int kills = 0;
    double open_ms = 20;
    int l0 = 0;
    R->t.scenarios++;
    for (int li = 0;; li++) {
        cr_assert_lt(li, 200, "scenario %d: too many lives", scn);
        size_t committed = (size_t)(pos[0] + 1) + (size_t)(pos[1] + 1), remaining = s->n - committed;
        plan P = draw_plan(R, pi, kills < nkills, remaining, committed, open_ms, li, l0);
        char *extra[16] = {0}, *tail = NULL;
        int nx = 0;
        cr_assert(asprintf(&extra[nx++], "CDC_CRASH_ROLE=%s", SRC_NAME[R->src]) > 0);
        cr_assert(asprintf(&extra[nx++], "CDC_CRASH_DIR=%s", dir) > 0);
        cr_assert(asprintf(&extra[nx++], "CDC_CRASH_BS=%zu", P.bs) > 0);
        cr_assert(asprintf(&extra[nx++], "CDC_CRASH_TOPIC=%s", s->topic) > 0);
        if (R->src == SRC_APPLY)
            cr_assert(asprintf(&extra[nx++], "CDC_CRASH_STREAM=%d:%d:%d:%d:%llu", s->prof.nkeys, s->prof.nrec,
                               s->prof.pad_min, s->prof.pad_max, (unsigned long long)s->seed) > 0);
        if (R->src == SRC_FILE) {
            if (!R->full_file[pi]) {
                cr_assert(asprintf(&R->full_file[pi], "%s/%s-all.jsonl", R->work, s->prof.name) > 0);
                write_kcat(R->full_file[pi], s, 0);
            }
            if (!P.rerun) {
                cr_assert(asprintf(&tail, "%s/%s-from-%ld.jsonl", R->work, s->prof.name, g) > 0);
                write_kcat(tail, s, (size_t)g);
            }
            cr_assert(asprintf(&extra[nx++], "CDC_CRASH_FILE=%s", P.rerun ? R->full_file[pi] : tail) > 0);
        }
        if (R->src == SRC_KAFKA) {
            cr_assert(asprintf(&extra[nx++], "CDC_CRASH_BROKERS=%s", R->m.boot) > 0);
            cr_assert(asprintf(&extra[nx++], "CDC_CRASH_GROUP=crash-%llu-%d-%d-%d", (unsigned long long)R->seed,
                               R->only, scn, li) > 0);
            cr_assert(asprintf(&extra[nx++], "CDC_CRASH_MAXMS=%d", P.max_ms) > 0);
            cr_assert(asprintf(&extra[nx++], "CDC_CRASH_END=%zu:%zu", s->nper[0] - 1, s->nper[1] - 1) > 0);
        }
        life L;
        run_life(dir, R->src, &P, extra, &L, (int64_t)committed);
        for (int i = 0; i < nx; i++) free(extra[i]);
        if (tail) {
            unlink(tail);
            free(tail);
        }
        if (L.opened) open_ms = L.t_open;
        if (L.killed) {
            /* files of this life the recovered version does not hold: the
             * output of a job the kill cut short */
            lsm ls;
            lsm_read(dir, R->nowal, &ls);
            long nums[256];
            int n = ls.ok ? sst_list(dir, nums, 256) : 0;
            for (int i = 0; i < n; i++) {
                int live = nums[i] <= L.sst_base;
                for (int k = 0; k < ls.nlive && !live; k++) live = ls.live[k] == nums[i];
                if (live) continue;
                int by = L.flush ? JOB_FLUSH : L.compact ? JOB_COMPACT : !L.opened ? JOB_RECOVERY : JOB_UNKNOWN;
                for (int k = 0; k < L.nseen; k++)
                    if (L.seen[k].num == nums[i]) by = L.seen[k].by;
                L.cut[by]++;
            }
            if (ls.ok) l0 = ls.l0;
            L.l0 = l0;
        }
        /* the speed this source shows, for the next delays */
        double from = src_base(R->src, &L);
        if (L.batched && !P.rerun && L.t_last_ack > from + 50) {
            double got = (double)(L.ack[0] + L.ack[1] + 2) - (double)committed;
            if (got > 100) R->us_per_rec[pi] = 0.5 * R->us_per_rec[pi] + 0.5 * (L.t_last_ack - from) * 1000.0 / got;
        }
        tally_life(&R->t, &P, &L, pi);
        char where[512];
        snprintf(where, sizeof where,
                 "seed %llu, %s source, scenario %d (%s input, %zu records) life %d in %s: trigger %s%s, batch %zu%s",
                 (unsigned long long)R->seed, SRC_NAME[R->src], scn, s->prof.name, s->n, li, dir, TR_NAME[P.trigger],
                 L.fallback ? " (fell back to its delay)" : "", P.bs, P.rerun ? ", whole file again" : "");

        if (!L.killed) {
            /* the end of the chain: the whole input, equal to the reference */
            cr_assert(WIFEXITED(L.status) && WEXITSTATUS(L.status) == 0 && L.done,
                      "%s: the life failed (status %d, exit %d)", where, L.status,
                      WIFEXITED(L.status) ? WEXITSTATUS(L.status) : -1);
            cr_log_info("  %s %d: life %d ran to the end (%.0f ms, batch %zu, %d new .sst)", SRC_NAME[R->src], scn, li,
                        L.t_end, P.bs, L.new_sst);
            cdc_store_t *st = tu_open(dir);
            int64_t end[NPART];
            for (int q = 0; q < NPART; q++) {
                cr_assert_eq(cdc_store_position(st, s->topic, q, &end[q], NULL), 0);
                cr_assert_eq(end[q], (int64_t)s->nper[q] - 1, "%s: partition %d ends at %lld of %zu", where, q,
                             (long long)end[q], s->nper[q]);
            }
            char *why = check_view(st, s, end);
            cr_assert_null(why, "%s: at the end: %s", where, why);
            char *got = final_image(st);
            if (strcmp(got, R->ref_export[pi])) {
                char *d = first_diff(got, R->ref_export[pi]);
                cr_assert_fail("%s: the final replica differs from the reference at %s", where, d);
            }
            free(got);
            cdc_store_close(st);
            break;
        }

        kills++;
        int kno = R->t.kills;
        cr_assert(!WIFEXITED(L.status), "%s: the life exited with %d before its kill", where, WEXITSTATUS(L.status));
        int empty;
        cdc_store_t *st = open_after_kill(dir, &empty);
        int64_t np[NPART] = {-1, -1};
        for (int q = 0; q < NPART && st; q++) cr_assert_eq(cdc_store_position(st, s->topic, q, &np[q], NULL), 0);
        for (int q = 0; q < NPART; q++) {
            cr_assert_geq(np[q], pos[q], "%s: partition %d's position went back from %lld to %lld", where, q,
                          (long long)pos[q], (long long)np[q]);
            cr_assert_geq(np[q], L.ack[q],
                          "%s: acknowledged batch lost: partition %d was committed up to %lld, the replica says %lld",
                          where, q, (long long)L.ack[q], (long long)np[q]);
            cr_assert_lt(np[q], (int64_t)s->nper[q], "%s: position %lld past the input", where, (long long)np[q]);
        }
        char *why = st ? check_view(st, s, np) : NULL;
        cr_assert_null(why, "%s: after kill %d at %.0f ms (positions %lld, %lld): %s", where, kno, L.t_kill,
                       (long long)np[0], (long long)np[1], why);
        long ng = -1;
        if (R->src != SRC_KAFKA) {
            ng = global_prefix(s, np);
            cr_assert_geq(ng, 0, "%s: positions %lld, %lld cover no prefix of the input", where, (long long)np[0],
                          (long long)np[1]);
            /* whole batches: from where this life started (or the file's start) */
            long start = P.rerun ? 0 : g;
            cr_assert(ng == g || ng == (long)s->n || (ng > start && (ng - start) % (long)P.bs == 0),
                      "%s: positions %lld, %lld (prefix %ld) are not at a batch boundary (start %ld, batch %zu)",
                      where, (long long)np[0], (long long)np[1], ng, start, P.bs);
        }
        cdc_store_close(st);
        char applied[96];
        if (ng >= 0) snprintf(applied, sizeof applied, "%ld of %zu records in", ng, s->n);
        else snprintf(applied, sizeof applied, "%lld of %zu records in", (long long)(np[0] + np[1] + 2), s->n);
        char cut[200] = "", assigned[64] = "";
        if (L.assigned) snprintf(assigned, sizeof assigned, ", partitions assigned at %.0f ms", L.t_assign);
        for (int k = 0; k < 4; k++)
            if (L.cut[k]) {
                size_t l = strlen(cut);
                snprintf(cut + l, sizeof cut - l, "; cut %s (%d unfinished .sst)", JOB_NAME[k], L.cut[k]);
            }
        char maxms[32] = "";
        if (R->src == SRC_KAFKA) snprintf(maxms, sizeof maxms, ", at most %d ms", P.max_ms);
        cr_log_info("kill %d/%d [%s] scenario %d (%s) life %d: trigger %s%s%s, batch %zu%s%s; at %.0f ms in %s%s%s%s; "
                    "%d new .sst, table level-0 files %d; %s (positions %lld, %lld)%s; opened at %.0f ms%s, first "
                    "commit at %.0f ms",
                    kno, quota, SRC_NAME[R->src], scn, s->prof.name, li, TR_NAME[P.trigger],
                    P.trigger == TR_FLUSH || P.trigger == TR_COMPACT ? (P.stage ? " (its .sst)" : " (its start)") : "",
                    L.fallback ? " (fell back to its delay)" : "", P.bs, P.rerun ? ", whole file again" : "",
                    maxms,
                    L.t_kill, PH_NAME[L.phase], L.flush ? ", flush thread busy" : "",
                    L.compact ? ", compaction thread busy" : "", cut, L.new_sst, L.l0, applied, (long long)np[0],
                    (long long)np[1], empty ? " (no database yet)" : "", L.t_open, assigned, L.t_batch);
        memcpy(pos, np, sizeof pos);
        if (ng >= 0) g = ng;
    }
    tu_rmrf(dir);
    free(dir);
}

/* ---- The tests ---- */

static char *crash_work; /* the running test's directory of input files */

static void run_source(int src, int only, int quota_normal)
{
    run *R = calloc(1, sizeof *R);
    R->src = src;
    R->only = only;
    R->quick = getenv("CDC_TEST_QUICK") != NULL;
    const char *se = getenv("CDC_CRASH_SEED");
    R->seed = se ? strtoull(se, NULL, 0) : (uint64_t)time(NULL);
    R->rng = R->seed ^ (0xC0FFEEULL * (uint64_t)(src + 1)) ^ ((uint64_t)(only + 1) << 40);
    int quota = R->quick ? 4 : quota_normal;
    char name[64];
    snprintf(name, sizeof name, "%s%s", SRC_NAME[src], only < 0 ? "" : only ? " (large input)" : " (small input)");
    fprintf(stderr, "[crash] %s: seed %llu (CDC_CRASH_SEED=%llu repeats the schedule), %d kill points\n", name,
            (unsigned long long)R->seed, (unsigned long long)R->seed, quota);
    cr_log_info("%s: seed %llu, %d kill points", name, (unsigned long long)R->seed, quota);
    double t0 = now_ms();
    for (int pi = 0; pi < 2; pi++) {
        if (only >= 0 && pi != only) continue;
        uint64_t ss = R->seed * 31 + (uint64_t)pi;
        stream_gen(&R->s[pi], &PROFILES[R->quick][pi], ss);
        build_reference(R, pi);
    }
    R->work = strdup("/tmp/cdccrashw.XXXXXX");
    cr_assert_not_null(mkdtemp(R->work));
    crash_work = R->work;
    cr_assert(asprintf(&R->nowal, "%s/nowal", R->work) > 0);
    cr_assert_eq(mkdir(R->nowal, 0755), 0);
    {
        /* A kill before the replica's first open leaves no database to read:
         * take that path once in every run, not only when the schedule
         * happens to kill that early (the sanitizers check it frees all). */
        lsm none;
        char *absent = NULL;
        cr_assert(asprintf(&absent, "%s/absent", R->work) > 0);
        lsm_read(absent, R->nowal, &none);
        cr_assert(!none.ok, "no replica at %s, yet its LSM was read", absent);
        free(absent);
    }
    if (src == SRC_KAFKA) {
        char es[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set_log_cb(conf, quiet_log);
        R->m.host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, es, sizeof es);
        cr_assert_not_null(R->m.host, "%s", es);
        R->m.mc = rd_kafka_mock_cluster_new(R->m.host, 1);
        cr_assert_not_null(R->m.mc);
        snprintf(R->m.boot, sizeof R->m.boot, "%s", rd_kafka_mock_cluster_bootstraps(R->m.mc));
        for (int pi = 0; pi < 2; pi++)
            if (only < 0 || pi == only) kmock_produce(&R->m, &R->s[pi]);
    }
    double t_setup = now_ms() - t0;
    /* large and small inputs in turn; chains of 1 to 4 kills on the small
     * input, 3 to 6 on the large one, where restarts pile up level-0 files */
    for (int scn = 0; R->t.kills < quota; scn++) {
        int pi = only >= 0 ? only : R->quick ? scn == 0 : scn % 2 == 0;
        /* Kafka lives wait about 3 s for the mock group's first rebalance:
         * fewer, longer chains there */
        int n = (pi ? 3 : 1) + (R->src == SRC_KAFKA ? 2 : 0) + (int)rnd_below(&R->rng, 4);
        if (R->quick && pi) n = 2;
        if (n > quota - R->t.kills) n = quota - R->t.kills;
        run_scenario(R, pi, n, scn, quota);
    }
    tally *T = &R->t;
    char sum[1600];
    snprintf(sum, sizeof sum,
             "%s: %d kill points (seed %llu) in %d replicas, %d lives (%d ran to the end and matched the "
             "reference); kills on the large input %d, small %d; triggers: delay %d, open %d, flush %d (%d fell "
             "back to a delay), compaction %d (%d fell back); phase at the kill: open %d (%d after it wrote "
             "level-0 files), consumer join %d, apply %d, close %d; cut a RocksDB job short (left an .sst the "
             "recovered version does not hold): %d (a flush %d, a compaction %d, the recovery's level-0 write at "
             "open %d, unknown %d); flush thread busy at the signal %d, compaction thread %d (both %d); lives that "
             "wrote .sst files %d; batch sizes %zu..%zu (<1000: %d, <10000: %d, >=10000: %d); %.0f s (setup %.1f s)",
             name, T->kills, (unsigned long long)R->seed, T->scenarios, T->lives, T->completed, T->large, T->small,
             T->trig[TR_DELAY], T->trig[TR_OPEN], T->trig[TR_FLUSH], T->fallback[TR_FLUSH], T->trig[TR_COMPACT],
             T->fallback[TR_COMPACT], T->phase[PH_OPEN], T->open_wrote, T->phase[PH_JOIN], T->phase[PH_APPLY],
             T->phase[PH_CLOSE], T->cut_any, T->cut[JOB_FLUSH], T->cut[JOB_COMPACT], T->cut[JOB_RECOVERY],
             T->cut[JOB_UNKNOWN], T->in_flush, T->in_compact, T->in_both, T->new_sst, T->bs_min, T->bs_max,
             T->bs_small, T->bs_mid, T->bs_big, (now_ms() - t0) / 1000.0, t_setup / 1000.0);
    if (src == SRC_FILE) {
        size_t l = strlen(sum);
        snprintf(sum + l, sizeof sum - l, "; %d lives reran the whole file", T->rerun);
    }
    cr_log_info("summary %s", sum);
    fprintf(stderr, "[crash] %s\n", sum);
    if (src == SRC_KAFKA) {
        rd_kafka_mock_cluster_destroy(R->m.mc);
        rd_kafka_destroy(R->m.host);
    }
    for (int pi = 0; pi < 2; pi++) {
        if (!R->s[pi].r) continue;
        stream_free(&R->s[pi]);
        free(R->ref_export[pi]);
        if (R->full_file[pi]) unlink(R->full_file[pi]);
        free(R->full_file[pi]);
    }
    tu_rmrf(R->work);
    crash_work = NULL;
    free(R->work);
    free(R->nowal);
    free(R);
}

/* The input files (hundreds of MB) go even when a test fails; a failing
 * replica's directory stays, named in the failure. */
static void crash_fini(void)
{
    if (crash_work) tu_rmrf(crash_work);
}

TestSuite(crash, .timeout = 1800, .fini = crash_fini);

/* 35 + 35 + 16 + 14 = 100 kill points in a normal run, 16 with
 * CDC_TEST_QUICK.  Kafka's are split in two tests so that --jobs 2 runs
 * their group joins (about 3 s a life, idle) side by side. */
Test(crash, sigkill_during_in_memory_apply_batches) { run_source(SRC_APPLY, -1, 35); }

Test(crash, sigkill_during_file_apply) { run_source(SRC_FILE, -1, 35); }

Test(crash, sigkill_during_kafka_ingest_of_large_rows) { run_source(SRC_KAFKA, 1, 16); }

Test(crash, sigkill_during_kafka_ingest_of_small_rows) { run_source(SRC_KAFKA, 0, 14); }
