/*
 * changegen: a seeded, rate-limited generator of row changes in the test
 * stack's database (tests/stack/schema.sql), for end-to-end tests of the
 * Debezium -> Kafka -> cdcstore path.
 *
 * It writes through libpq a reproducible mix of inserts, updates, deletes and
 * primary-key updates on public.orders, public.order_lines (composite key)
 * and public.customers (uuid key), with NULLs, NUMERIC values of every sign
 * and scale, and TOASTed notes that later updates leave unchanged (so that
 * Debezium sends its unavailable-value placeholder). Given the same seed,
 * options and starting rows, and no other writer in its key range, it makes
 * the same changes in the same order.
 *
 * --hold-open-tx SECONDS is a separate mode: begin, update some rows, keep the
 * transaction open (SECONDS, or until --hold-until-file appears), commit.
 * Tests use it to have a transaction in flight while something else happens.
 * Note: a transaction that already holds an xid when a logical replication
 * slot is being created delays the slot (and so Debezium's snapshot) until it
 * ends; see tests/data/debezium/README.md.
 *
 * The program always ends by itself: after --count changes or --duration
 * seconds (default: 1000 changes), or when the hold is over. It prints one
 * summary line (key=value) on stdout; errors go to stderr with exit code 1.
 */

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- Options ------------------------------------------------------------ */

struct options {
    const char *dsn;        /* libpq conninfo; "" = PG* environment */
    uint64_t seed;
    double rate;            /* changes per second; 0 = as fast as possible */
    long count;             /* stop after this many changes (0 = no limit) */
    double duration;        /* stop after this many seconds (0 = no limit) */
    long keys;              /* order ids key_base+1 .. key_base+keys */
    long key_base;
    long init_rows;         /* rows to insert first, unpaced */
    int txn_max;            /* changes per transaction: 1..txn_max */
    int note_bytes;         /* length of a TOASTed note */
    double hold_seconds;    /* > 0: --hold-open-tx mode */
    long hold_rows;
    const char *hold_file;
    bool verbose;
};

static void usage(FILE *out)
{
    fputs(
        "usage: changegen [options]\n"
        "  --dsn CONNINFO       libpq connection string (default: PG* variables)\n"
        "  --seed N             PRNG seed (default 1)\n"
        "  --rate N             statements per second (default 50; 0 = unpaced); one\n"
        "                       that finds no row is counted as a no-op, not a change\n"
        "  --count N            stop after N changes (default 1000 if no --duration)\n"
        "  --duration S         stop after S seconds (at most 86400)\n"
        "  --keys N             order ids KEY_BASE+1..KEY_BASE+N (default 1000)\n"
        "  --key-base B         (default 0); give concurrent generators disjoint ranges\n"
        "  --init-rows N        first insert up to N orders (10% TOASTed), unpaced\n"
        "  --txn-max N          1..N changes per transaction (default 3)\n"
        "  --note-bytes N       length of a TOASTed note (default 3000, min 2100)\n"
        "  --hold-open-tx S     mode: BEGIN, update --hold-rows orders, wait S seconds\n"
        "                       (or until --hold-until-file exists), COMMIT, exit\n"
        "  --hold-rows N        rows the held transaction updates (default 5)\n"
        "  --hold-until-file P  commit the held transaction as soon as P exists\n"
        "  --verbose            print every change on stderr\n",
        out);
}

/* ---- PRNG: xoshiro256**, seeded through splitmix64 ------------------------ */

struct rng {
    uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* A uniform integer in [0, n), n > 0 (the modulo bias is irrelevant here). */
static uint64_t rng_below(struct rng *r, uint64_t n) { return rng_next(r) % n; }

/* True with probability pct/100. */
static bool rng_pct(struct rng *r, unsigned pct) { return rng_below(r, 100) < pct; }

/* ---- Generator state ------------------------------------------------------ */

/* Per order id: does the row exist, and is its note TOASTed. */
enum { KEY_PRESENT = 1, KEY_TOASTED = 2 };

enum kind {
    K_INSERT,
    K_UPDATE,
    K_UPDATE_TOAST_UNCHANGED,
    K_UPDATE_NOTE,
    K_DELETE,
    K_PK_UPDATE,
    K_LINE_UPSERT,
    K_LINE_DELETE,
    K_LINE_PK_UPDATE,
    K_CUSTOMER_UPSERT,
    K_CUSTOMER_DELETE,
    K_CUSTOMER_PK_UPDATE,
    K_COUNT
};

static const char *const kind_names[K_COUNT] = {
    "inserts",           "updates",          "toast_unchanged_updates",
    "note_updates",      "deletes",          "pk_updates",
    "line_upserts",      "line_deletes",     "line_pk_updates",
    "customer_upserts",  "customer_deletes", "customer_pk_updates",
};

struct gen {
    struct options opt;
    PGconn *conn;
    struct rng rng;
    unsigned char *keys; /* opt.keys entries, index = order_id - key_base - 1 */
    long present;        /* how many keys are KEY_PRESENT */
    char *note;          /* buffer for TOASTed notes */
    long changes;        /* rows changed */
    long per_kind[K_COUNT];
    long txns;
    long noops;          /* statements that changed no row */
};

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("changegen: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_seconds(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- SQL helpers ---------------------------------------------------------- */

/*
 * Runs one statement with text parameters (NULL = SQL NULL); returns the
 * number of rows it changed. Any error ends the program, naming the statement.
 */
static long exec_params(struct gen *g, const char *what, const char *sql, int n,
                        const char *const *vals)
{
    PGresult *res = PQexecParams(g->conn, sql, n, NULL, vals, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", PQresultErrorMessage(res));
        PQclear(res);
        die("%s failed: %s", what, msg);
    }
    long affected = atol(PQcmdTuples(res));
    PQclear(res);
    return affected;
}

static void exec_simple(struct gen *g, const char *sql)
{
    exec_params(g, sql, sql, 0, NULL);
}

/* Loads which order ids of our range exist and which have a TOASTed note. */
static void load_state(struct gen *g)
{
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "%ld", g->opt.key_base + 1);
    snprintf(hi, sizeof hi, "%ld", g->opt.key_base + g->opt.keys);
    const char *vals[] = {lo, hi};
    PGresult *res = PQexecParams(
        g->conn,
        "SELECT order_id, coalesce(length(note) >= 2000, false) FROM public.orders"
        " WHERE order_id BETWEEN $1 AND $2",
        2, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        die("reading public.orders failed: %s", PQresultErrorMessage(res));
    memset(g->keys, 0, (size_t)g->opt.keys);
    g->present = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        long id = atol(PQgetvalue(res, i, 0)) - g->opt.key_base - 1;
        g->keys[id] = KEY_PRESENT | (PQgetvalue(res, i, 1)[0] == 't' ? KEY_TOASTED : 0);
        g->present++;
    }
    PQclear(res);
}

/* ---- Values --------------------------------------------------------------- */

struct values {
    char status[16], amount[32], weight[48], created[48], shipped[48], paid[2];
    const char *p_status, *p_amount, *p_weight, *p_shipped, *p_paid, *p_note;
    char short_note[48];
};

static const char *pick_status(struct gen *g, char *buf, size_t n)
{
    static const char *const st[] = {"new", "paid", "shipped", "cancelled"};
    if (rng_pct(&g->rng, 10))
        return NULL;
    snprintf(buf, n, "%s", st[rng_below(&g->rng, 4)]);
    return buf;
}

/* NUMERIC(10,2): mostly small, sometimes the extremes, sometimes negative. */
static const char *pick_amount(struct gen *g, char *buf, size_t n)
{
    if (rng_pct(&g->rng, 10))
        return NULL;
    int64_t cents;
    unsigned r = (unsigned)rng_below(&g->rng, 100);
    if (r < 70)
        cents = (int64_t)rng_below(&g->rng, 100000);
    else if (r < 80)
        cents = 9999999999LL - (int64_t)rng_below(&g->rng, 3);
    else if (r < 90)
        cents = (int64_t)rng_below(&g->rng, 9999999999ULL);
    else
        cents = -(int64_t)rng_below(&g->rng, 100000) - 1;
    uint64_t a = (uint64_t)(cents < 0 ? -cents : cents);
    snprintf(buf, n, "%s%" PRIu64 ".%02" PRIu64, cents < 0 ? "-" : "", a / 100, a % 100);
    return buf;
}

/* Unconstrained NUMERIC: scale 0..6, trailing zeros kept as written. */
static const char *pick_weight(struct gen *g, char *buf, size_t n)
{
    if (rng_pct(&g->rng, 30))
        return NULL;
    unsigned scale = (unsigned)rng_below(&g->rng, 7);
    uint64_t ip = rng_below(&g->rng, 1000);
    bool neg = rng_pct(&g->rng, 5);
    int len = snprintf(buf, n, "%s%" PRIu64, neg ? "-" : "", ip);
    if (scale > 0) {
        buf[len++] = '.';
        for (unsigned i = 0; i < scale; i++)
            buf[len++] = (char)('0' + rng_below(&g->rng, 10));
        buf[len] = '\0';
    }
    return buf;
}

/* A timestamp in 2026 with microseconds; with_zone appends "+00". */
static void pick_timestamp(struct gen *g, char *buf, size_t n, bool with_zone)
{
    time_t t = (time_t)1767225600 + (time_t)rng_below(&g->rng, 365 * 86400);
    struct tm tm;
    gmtime_r(&t, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, n, "%s.%06u%s", day, (unsigned)rng_below(&g->rng, 1000000),
             with_zone ? "+00" : "");
}

/* Random hex: incompressible enough that pglz gives up and the value is
 * stored out of line once it passes the ~2 kB TOAST threshold. */
static const char *toast_note(struct gen *g)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < g->opt.note_bytes; i++)
        g->note[i] = hex[rng_below(&g->rng, 16)];
    g->note[g->opt.note_bytes] = '\0';
    return g->note;
}

/* note: NULL 60%, short 25%, TOASTed 15%; *toasted says which. */
static const char *pick_note(struct gen *g, struct values *v, bool *toasted)
{
    unsigned r = (unsigned)rng_below(&g->rng, 100);
    *toasted = false;
    if (r < 60)
        return NULL;
    if (r < 85) {
        snprintf(v->short_note, sizeof v->short_note, "note %" PRIu64, rng_next(&g->rng) % 100000);
        return v->short_note;
    }
    *toasted = true;
    return toast_note(g);
}

static void pick_row(struct gen *g, struct values *v)
{
    v->p_status = pick_status(g, v->status, sizeof v->status);
    v->p_amount = pick_amount(g, v->amount, sizeof v->amount);
    v->p_weight = pick_weight(g, v->weight, sizeof v->weight);
    pick_timestamp(g, v->created, sizeof v->created, false);
    if (rng_pct(&g->rng, 50)) {
        pick_timestamp(g, v->shipped, sizeof v->shipped, true);
        v->p_shipped = v->shipped;
    } else {
        v->p_shipped = NULL;
    }
    if (rng_pct(&g->rng, 10)) {
        v->p_paid = NULL;
    } else {
        snprintf(v->paid, sizeof v->paid, "%c", rng_pct(&g->rng, 50) ? 't' : 'f');
        v->p_paid = v->paid;
    }
}

/* ---- Key picking ---------------------------------------------------------- */

/* A random order id of our range whose row exists (want_present) or not, and
 * (when want_toasted) whose note is TOASTed; 0 when none was found. */
static long pick_key(struct gen *g, bool want_present, bool want_toasted)
{
    if (want_present && g->present == 0)
        return 0;
    if (!want_present && g->present >= g->opt.keys)
        return 0;
    for (int tries = 0; tries < 64; tries++) {
        long i = (long)rng_below(&g->rng, (uint64_t)g->opt.keys);
        unsigned char k = g->keys[i];
        if (((k & KEY_PRESENT) != 0) != want_present)
            continue;
        if (want_toasted && !(k & KEY_TOASTED))
            continue;
        return g->opt.key_base + 1 + i;
    }
    return 0;
}

static unsigned char *key_slot(struct gen *g, long id) { return &g->keys[id - g->opt.key_base - 1]; }

static void set_present(struct gen *g, long id, bool present, bool toasted)
{
    unsigned char *k = key_slot(g, id);
    if ((*k & KEY_PRESENT) && !present)
        g->present--;
    if (!(*k & KEY_PRESENT) && present)
        g->present++;
    *k = (unsigned char)((present ? KEY_PRESENT : 0) | (present && toasted ? KEY_TOASTED : 0));
}

/* A uuid derived from a small number, so customers stay within a key space. */
static void customer_uuid(long n, char *buf, size_t len)
{
    uint64_t x = (uint64_t)n * 0x9e3779b97f4a7c15ULL;
    uint64_t a = splitmix64(&x), b = splitmix64(&x);
    snprintf(buf, len, "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-8%03" PRIx64 "-%012" PRIx64,
             a >> 32, (a >> 16) & 0xffff, a & 0xfff, (b >> 48) & 0xfff, b & (uint64_t)0xffffffffffff);
}

/* ---- Operations ------------------------------------------------------------ */

static enum kind op_insert(struct gen *g, long *rows)
{
    long id = pick_key(g, false, false);
    if (id == 0)
        return (*rows = 0), K_INSERT;
    struct values v;
    pick_row(g, &v);
    bool toasted;
    const char *note = pick_note(g, &v, &toasted);
    char ids[32];
    snprintf(ids, sizeof ids, "%ld", id);
    const char *vals[] = {ids, v.p_status, v.p_amount, note, v.created, v.p_paid, v.p_weight, v.p_shipped};
    *rows = exec_params(g, "insert into orders",
                        "INSERT INTO public.orders (order_id, status, amount, note, created_at, paid,"
                        " weight_kg, shipped_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                        " ON CONFLICT (order_id) DO NOTHING",
                        8, vals);
    if (*rows > 0)
        set_present(g, id, true, toasted);
    return K_INSERT;
}

static enum kind op_update(struct gen *g, long *rows)
{
    long id = pick_key(g, true, false);
    if (id == 0)
        return op_insert(g, rows);
    struct values v;
    pick_row(g, &v);
    char ids[32];
    snprintf(ids, sizeof ids, "%ld", id);
    /* A random non-empty subset of the non-key columns, note excluded. */
    static const char *const cols[] = {"status", "amount", "paid", "weight_kg", "shipped_at"};
    const char *colvals[] = {v.p_status, v.p_amount, v.p_paid, v.p_weight, v.p_shipped};
    unsigned mask = (unsigned)rng_below(&g->rng, 31) + 1;
    const char *vals[6] = {ids};
    char sql[256];
    int n = 1, len = snprintf(sql, sizeof sql, "UPDATE public.orders SET ");
    for (int c = 0; c < 5; c++) {
        if (!(mask & (1u << c)))
            continue;
        vals[n] = colvals[c];
        n++;
        len += snprintf(sql + len, sizeof sql - (size_t)len, "%s%s = $%d", n > 2 ? ", " : "", cols[c], n);
    }
    snprintf(sql + len, sizeof sql - (size_t)len, " WHERE order_id = $1");
    *rows = exec_params(g, "update orders", sql, n, vals);
    return K_UPDATE;
}

static enum kind op_toast_unchanged(struct gen *g, long *rows)
{
    long id = pick_key(g, true, true);
    if (id == 0)
        return op_update(g, rows);
    struct values v;
    pick_row(g, &v);
    char ids[32];
    snprintf(ids, sizeof ids, "%ld", id);
    const char *vals[] = {ids, v.p_status, v.p_amount};
    *rows = exec_params(g, "update orders (TOASTed note unchanged)",
                        "UPDATE public.orders SET status = $2, amount = $3 WHERE order_id = $1", 3, vals);
    return K_UPDATE_TOAST_UNCHANGED;
}

static enum kind op_update_note(struct gen *g, long *rows)
{
    long id = pick_key(g, true, false);
    if (id == 0)
        return op_insert(g, rows);
    struct values v;
    bool toasted;
    const char *note = pick_note(g, &v, &toasted);
    char ids[32];
    snprintf(ids, sizeof ids, "%ld", id);
    const char *vals[] = {ids, note};
    *rows = exec_params(g, "update orders.note", "UPDATE public.orders SET note = $2 WHERE order_id = $1", 2,
                        vals);
    if (*rows > 0)
        set_present(g, id, true, toasted);
    return K_UPDATE_NOTE;
}

static enum kind op_delete(struct gen *g, long *rows)
{
    long id = pick_key(g, true, false);
    if (id == 0)
        return op_insert(g, rows);
    char ids[32];
    snprintf(ids, sizeof ids, "%ld", id);
    const char *vals[] = {ids};
    *rows = exec_params(g, "delete from orders", "DELETE FROM public.orders WHERE order_id = $1", 1, vals);
    set_present(g, id, false, false);
    return K_DELETE;
}

static enum kind op_pk_update(struct gen *g, long *rows)
{
    long from = pick_key(g, true, false), to = pick_key(g, false, false);
    if (from == 0 || to == 0)
        return op_update(g, rows);
    char f[32], t[32];
    snprintf(f, sizeof f, "%ld", from);
    snprintf(t, sizeof t, "%ld", to);
    const char *vals[] = {f, t};
    *rows = exec_params(g, "primary-key update of orders",
                        "UPDATE public.orders SET order_id = $2 WHERE order_id = $1"
                        " AND NOT EXISTS (SELECT 1 FROM public.orders WHERE order_id = $2)",
                        2, vals);
    if (*rows > 0) {
        bool toasted = (*key_slot(g, from) & KEY_TOASTED) != 0;
        set_present(g, from, false, false);
        set_present(g, to, true, toasted);
    }
    return K_PK_UPDATE;
}

/* order_lines: lines 1..8 of the first 16 order ids of our range (whether
 * the order exists or not: there is no foreign key), dense enough that
 * deletes and key changes find lines. */
static enum kind op_line(struct gen *g, long *rows)
{
    long id = g->opt.key_base + 1 + (long)rng_below(&g->rng, (uint64_t)(g->opt.keys < 16 ? g->opt.keys : 16));
    char ids[32], line[8], line2[8], qty[16], price[32], sku[16];
    snprintf(ids, sizeof ids, "%ld", id);
    snprintf(line, sizeof line, "%u", (unsigned)rng_below(&g->rng, 8) + 1);
    unsigned r = (unsigned)rng_below(&g->rng, 100);
    if (r < 60) {
        snprintf(qty, sizeof qty, "%u", (unsigned)rng_below(&g->rng, 20) + 1);
        snprintf(sku, sizeof sku, "SKU-%u", (unsigned)rng_below(&g->rng, 50));
        const char *p = NULL;
        if (!rng_pct(&g->rng, 15)) {
            uint64_t m = rng_below(&g->rng, 10000000);
            snprintf(price, sizeof price, "%" PRIu64 ".%03" PRIu64, m / 1000, m % 1000);
            p = price;
        }
        const char *vals[] = {ids, line, sku, qty, p};
        *rows = exec_params(g, "upsert into order_lines",
                            "INSERT INTO public.order_lines (order_id, line_no, sku, qty, price)"
                            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (order_id, line_no)"
                            " DO UPDATE SET qty = EXCLUDED.qty, price = EXCLUDED.price",
                            5, vals);
        return K_LINE_UPSERT;
    }
    if (r < 85) {
        const char *vals[] = {ids, line};
        *rows = exec_params(g, "delete from order_lines",
                            "DELETE FROM public.order_lines WHERE order_id = $1 AND line_no = $2", 2, vals);
        return K_LINE_DELETE;
    }
    snprintf(line2, sizeof line2, "%u", (unsigned)rng_below(&g->rng, 8) + 1);
    const char *vals[] = {ids, line, line2};
    *rows = exec_params(g, "primary-key update of order_lines",
                        "UPDATE public.order_lines SET line_no = $3 WHERE order_id = $1 AND line_no = $2"
                        " AND NOT EXISTS (SELECT 1 FROM public.order_lines WHERE order_id = $1 AND line_no = $3)",
                        3, vals);
    return K_LINE_PK_UPDATE;
}

/*
 * customers: uuid keys derived from numbers key_base+1 .. key_base+keys/16+8.
 *
 * email is UNIQUE: the schema's only unique constraint besides the primary
 * keys (which every operation meets with ON CONFLICT, NOT EXISTS or the key
 * state it keeps). Its values come from a small space per key number,
 * "c<n>-<0..999>@example.com", and what keeps them apart is an invariant: the
 * row of the key derived from n has an email that starts "c<n>-". Inserts
 * write it so, the upsert's update leaves email alone, and the primary-key
 * update from n to m rewrites the prefix to "c<m>-" along with the key (the
 * suffix, name and tier move unchanged). Rows of different keys then never
 * share an email, and an insert for n - made only when no row of key n
 * exists, else ON CONFLICT takes the update - cannot meet its email in any
 * row. Without the rewrite, a row moved away from n kept "c<n>-x", and a later
 * insert for n that drew x failed on customers_email_key.
 *
 * Rows that break the invariant (written by someone else, or by an older
 * changegen) are guarded against too: an insert or key change whose email a
 * row of another key holds changes nothing (a no-op) instead of failing.
 */
static enum kind op_customer(struct gen *g, long *rows)
{
    long space = g->opt.keys / 16 + 8;
    long n = g->opt.key_base + 1 + (long)rng_below(&g->rng, (uint64_t)space);
    char id[40], email[64], tier[16];
    customer_uuid(n, id, sizeof id);
    unsigned r = (unsigned)rng_below(&g->rng, 100);
    if (r < 70) {
        static const char *const tiers[] = {"gold", "silver", "bronze"};
        snprintf(email, sizeof email, "c%ld-%" PRIu64 "@example.com", n, rng_below(&g->rng, 1000));
        const char *t = NULL;
        if (!rng_pct(&g->rng, 20)) {
            snprintf(tier, sizeof tier, "%s", tiers[rng_below(&g->rng, 3)]);
            t = tier;
        }
        const char *vals[] = {id, email, t};
        *rows = exec_params(g, "upsert into customers",
                            "INSERT INTO public.customers (customer_id, email, name, tier)"
                            " SELECT $1::uuid, $2::text, 'customer ' || $2::text, $3::text"
                            " WHERE NOT EXISTS (SELECT 1 FROM public.customers"
                            "                   WHERE email = $2::text AND customer_id <> $1::uuid)"
                            " ON CONFLICT (customer_id) DO UPDATE SET tier = EXCLUDED.tier",
                            3, vals);
        return K_CUSTOMER_UPSERT;
    }
    if (r < 85) {
        const char *vals[] = {id};
        *rows = exec_params(g, "delete from customers", "DELETE FROM public.customers WHERE customer_id = $1", 1,
                            vals);
        return K_CUSTOMER_DELETE;
    }
    long m = g->opt.key_base + 1 + (long)rng_below(&g->rng, (uint64_t)space);
    char id2[40], ms[32];
    customer_uuid(m, id2, sizeof id2);
    snprintf(ms, sizeof ms, "%ld", m);
    const char *vals[] = {id, id2, ms};
    *rows = exec_params(g, "primary-key update of customers",
                        "UPDATE public.customers c SET customer_id = $2::uuid,"
                        " email = regexp_replace(c.email, '^c[0-9]+-', 'c' || $3::text || '-')"
                        " WHERE c.customer_id = $1::uuid AND NOT EXISTS (SELECT 1 FROM public.customers o"
                        "   WHERE o.customer_id = $2::uuid OR (o.customer_id <> $1::uuid"
                        "     AND o.email = regexp_replace(c.email, '^c[0-9]+-', 'c' || $3::text || '-')))",
                        3, vals);
    return K_CUSTOMER_PK_UPDATE;
}

/* One change, drawn by weight. */
static void one_change(struct gen *g)
{
    unsigned r = (unsigned)rng_below(&g->rng, 100);
    long rows = 0;
    enum kind k;
    if (r < 25)
        k = op_insert(g, &rows);
    else if (r < 50)
        k = op_update(g, &rows);
    else if (r < 60)
        k = op_toast_unchanged(g, &rows);
    else if (r < 64)
        k = op_update_note(g, &rows);
    else if (r < 74)
        k = op_delete(g, &rows);
    else if (r < 79)
        k = op_pk_update(g, &rows);
    else if (r < 92)
        k = op_line(g, &rows);
    else
        k = op_customer(g, &rows);
    if (rows > 0) {
        g->changes += rows;
        g->per_kind[k] += rows;
    } else {
        g->noops++;
    }
    if (g->opt.verbose)
        fprintf(stderr, "changegen: %s rows=%ld\n", kind_names[k], rows);
}

/* ---- Modes ------------------------------------------------------------------ */

/* Inserts up to init_rows orders of our range (10% with a TOASTed note) in one
 * statement; rows that exist are left alone. */
static void init_rows(struct gen *g)
{
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "%ld", g->opt.key_base + 1);
    snprintf(hi, sizeof hi, "%ld", g->opt.key_base + g->opt.init_rows);
    const char *vals[] = {lo, hi};
    long n = exec_params(
        g, "initial insert into orders",
        "INSERT INTO public.orders (order_id, status, amount, note, created_at, paid, weight_kg)"
        " SELECT i, (ARRAY['new', 'paid', 'shipped', NULL])[1 + i % 4], (i % 100000) / 100.0,"
        " CASE WHEN i % 10 = 0 THEN (SELECT string_agg(md5(i || '-' || j), '') FROM generate_series(1, 80) j)"
        "      WHEN i % 3 = 0 THEN 'note ' || i END,"
        " timestamp '2026-01-01' + i * interval '1 second', i % 2 = 0,"
        " CASE WHEN i % 5 = 0 THEN NULL ELSE round((i % 1000) / 7.0, i % 4) END"
        " FROM generate_series($1::int, $2::int) i ON CONFLICT (order_id) DO NOTHING",
        2, vals);
    fprintf(stderr, "changegen: inserted %ld initial rows\n", n);
}

static bool file_exists(const char *path)
{
    struct stat st;
    return path != NULL && stat(path, &st) == 0;
}

/*
 * --hold-open-tx: updates the first hold_rows orders of our range in one
 * transaction and keeps it open. It prints its xid and the WAL position after
 * its writes on stdout as soon as they are done, so a test can go on.
 */
static int hold_open_tx(struct gen *g)
{
    char lo[32], lim[32];
    snprintf(lo, sizeof lo, "%ld", g->opt.key_base);
    snprintf(lim, sizeof lim, "%ld", g->opt.hold_rows);
    const char *vals[] = {lo, lim};
    exec_simple(g, "BEGIN");
    long n = exec_params(g, "held update of orders",
                         "UPDATE public.orders SET status = 'held-open', amount = coalesce(amount, 0) + 0.01"
                         " WHERE order_id IN (SELECT order_id FROM public.orders WHERE order_id > $1::int"
                         " ORDER BY order_id LIMIT $2::int)",
                         2, vals);
    if (n == 0)
        fprintf(stderr, "changegen: warning: no order id above %ld to update; holding an empty transaction\n",
                g->opt.key_base);
    /* pg_current_xact_id() gives the transaction an xid even when it wrote nothing. */
    PGresult *res = PQexec(g->conn, "SELECT pg_current_xact_id(), pg_current_wal_lsn()");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        die("reading the held transaction's xid failed: %s", PQresultErrorMessage(res));
    printf("changegen: holding xid=%s rows=%ld wrote_before_lsn=%s for %.1fs%s%s\n", PQgetvalue(res, 0, 0), n,
           PQgetvalue(res, 0, 1), g->opt.hold_seconds, g->opt.hold_file ? " or until " : "",
           g->opt.hold_file ? g->opt.hold_file : "");
    fflush(stdout);
    PQclear(res);
    double end = now_seconds() + g->opt.hold_seconds;
    while (now_seconds() < end && !file_exists(g->opt.hold_file))
        sleep_seconds(0.1);
    exec_simple(g, "COMMIT");
    printf("changegen: committed held transaction rows=%ld\n", n);
    return 0;
}

/* The paced change loop: change i is due at start + i / rate. */
static int run(struct gen *g)
{
    double start = now_seconds();
    long due = 0;
    for (;;) {
        int txn = 1 + (int)rng_below(&g->rng, (uint64_t)g->opt.txn_max);
        bool open = false;
        for (int i = 0; i < txn; i++) {
            if (g->opt.count > 0 && g->changes >= g->opt.count)
                break;
            if (g->opt.duration > 0 && now_seconds() - start >= g->opt.duration)
                break;
            if (g->opt.rate > 0)
                sleep_seconds(start + (double)due / g->opt.rate - now_seconds());
            if (!open && txn > 1) {
                exec_simple(g, "BEGIN");
                open = true;
            }
            one_change(g);
            due++;
        }
        if (open)
            exec_simple(g, "COMMIT");
        g->txns++;
        if ((g->opt.count > 0 && g->changes >= g->opt.count) ||
            (g->opt.duration > 0 && now_seconds() - start >= g->opt.duration))
            break;
    }
    printf("changegen: seed=%" PRIu64 " changes=%ld txns=%ld noops=%ld elapsed=%.2fs", g->opt.seed, g->changes,
           g->txns, g->noops, now_seconds() - start);
    for (int k = 0; k < K_COUNT; k++)
        printf(" %s=%ld", kind_names[k], g->per_kind[k]);
    printf("\n");
    return 0;
}

/* ---- main ------------------------------------------------------------------- */

static long parse_long(const char *opt, const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        die("%s: expected an integer in [%ld, %ld], got '%s'", opt, min, max, s);
    return v;
}

static double parse_double(const char *opt, const char *s, double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= min && v <= max))
        die("%s: expected a number in [%g, %g], got '%s'", opt, min, max, s);
    return v;
}

int main(int argc, char **argv)
{
    struct gen g;
    memset(&g, 0, sizeof g);
    g.opt = (struct options){.dsn = "", .seed = 1, .rate = 50, .keys = 1000, .txn_max = 3,
                             .note_bytes = 3000, .hold_rows = 5};
    static const struct option longopts[] = {
        {"dsn", required_argument, 0, 'd'},        {"seed", required_argument, 0, 's'},
        {"rate", required_argument, 0, 'r'},       {"count", required_argument, 0, 'n'},
        {"duration", required_argument, 0, 't'},   {"keys", required_argument, 0, 'k'},
        {"key-base", required_argument, 0, 'b'},   {"init-rows", required_argument, 0, 'i'},
        {"txn-max", required_argument, 0, 'x'},    {"note-bytes", required_argument, 0, 'N'},
        {"hold-open-tx", required_argument, 0, 'H'}, {"hold-rows", required_argument, 0, 'R'},
        {"hold-until-file", required_argument, 0, 'F'}, {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': g.opt.dsn = optarg; break;
        case 's': g.opt.seed = (uint64_t)parse_long("--seed", optarg, 0, INT64_MAX); break;
        case 'r': g.opt.rate = parse_double("--rate", optarg, 0, 1e6); break;
        case 'n': g.opt.count = parse_long("--count", optarg, 1, 1000000000L); break;
        case 't': g.opt.duration = parse_double("--duration", optarg, 0.001, 86400); break;
        case 'k': g.opt.keys = parse_long("--keys", optarg, 1, 100000000L); break;
        case 'b': g.opt.key_base = parse_long("--key-base", optarg, 0, 1000000000L); break;
        case 'i': g.opt.init_rows = parse_long("--init-rows", optarg, 0, 100000000L); break;
        case 'x': g.opt.txn_max = (int)parse_long("--txn-max", optarg, 1, 10000); break;
        case 'N': g.opt.note_bytes = (int)parse_long("--note-bytes", optarg, 2100, 1 << 20); break;
        case 'H': g.opt.hold_seconds = parse_double("--hold-open-tx", optarg, 0.001, 86400); break;
        case 'R': g.opt.hold_rows = parse_long("--hold-rows", optarg, 1, 100000000L); break;
        case 'F': g.opt.hold_file = optarg; break;
        case 'v': g.opt.verbose = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (g.opt.count == 0 && g.opt.duration == 0)
        g.opt.count = 1000;
    if (g.opt.key_base + g.opt.keys > INT32_MAX || g.opt.key_base + g.opt.init_rows > INT32_MAX)
        die("--key-base plus --keys/--init-rows must stay within int (order_id)");
    if (g.opt.init_rows > g.opt.keys)
        g.opt.keys = g.opt.init_rows;

    g.conn = PQconnectdb(g.opt.dsn);
    if (PQstatus(g.conn) != CONNECTION_OK)
        die("cannot connect to PostgreSQL: %s", PQerrorMessage(g.conn));
    exec_simple(&g, "SET application_name = 'changegen'");
    rng_seed(&g.rng, g.opt.seed);

    int rc;
    if (g.opt.hold_seconds > 0) {
        rc = hold_open_tx(&g);
    } else {
        g.keys = calloc((size_t)g.opt.keys, 1);
        g.note = malloc((size_t)g.opt.note_bytes + 1);
        if (g.keys == NULL || g.note == NULL)
            die("out of memory for %ld keys", g.opt.keys);
        if (g.opt.init_rows > 0)
            init_rows(&g);
        load_state(&g);
        rc = run(&g);
    }
    free(g.keys);
    free(g.note);
    PQfinish(g.conn);
    return rc;
}
