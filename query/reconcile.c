/*
 * reconcile.c: compares a table of the replica with its PostgreSQL source
 * and lists every difference.  The only file that knows libpq: it also
 * lends its connection, its masked messages and a plain query to the other
 * files that ask the source something (cdc__pg_*, "Plain queries" at the
 * end; source.c reads the replication state through them).
 *
 * How.  Both sides compute per key range a row count and a hash (digest.c,
 * ranges.c): the replica by scanning RocksDB, the source by one SQL query
 * (sql.c), so only (range, count, hash) crosses the network.  The first level, for a single
 * integer key: width ranges (the width from the source's key span, read from
 * its index), computed by the source's query while the replica is scanned,
 * so one pass on each side both when the tables are equal and when they
 * differ.  For other keys the ranges are quantiles of the replica's rows,
 * known only once it is scanned: first the whole table (the source's sum
 * runs while the replica is scanned, and the scan records on the way the
 * sums of its quantile ranges); equal totals end the comparison, otherwise
 * the source computes the same ranges.  A range whose count or hash differs
 * is split into `factor`
 * sub-ranges cut at the replica's quantiles, and so on, until a range holds
 * at most `threshold` rows; its rows are then read from both sides in key
 * order and merged by key: a key only in the source is missing, only in the
 * replica extra, in both with other values different.  (--ranges and
 * --range-width skip the whole-table step.)
 *
 * A known point in time.  All source queries of the comparison run in one
 * REPEATABLE READ READ ONLY transaction whose first statement records
 * pg_current_wal_lsn(): they see the source exactly as of that LSN
 * (start_lsn).  The replica is read as it is (each scan a RocksDB snapshot).
 *
 * Rechecks: why a live load raises no alarm.  While the comparison runs, the
 * source keeps changing and the replica follows a little later, so some
 * candidates are only changes in flight: the source changed before start_lsn
 * and the replica had not applied it yet, or the replica applied a change
 * made after start_lsn (row.lsn > start_lsn).  Telling these apart from a real
 * difference needs a second look, not a guess.  So every candidate is read
 * again on both sides (the source outside the snapshot, the replica reopened
 * so that a running writer's rows are seen) after a wait, doubled on each
 * round, up to `rechecks` rounds, and:
 *   - equal now: it was in flight; counted as transient, not reported;
 *   - the same difference as the previous read (the replica row has the same
 *     version LSN and values, the source row the same values): nothing moved
 *     during a whole wait, so it is not in flight: reported;
 *   - moved: read again next round; still moving after the last round:
 *     reported as unsettled.
 * A real difference does not move by itself, so it is always reported (on the
 * first recheck); a change in flight is dropped as soon as the replica has
 * caught up, provided the replica lags by less than the recheck wait.
 *
 * Text forms.  Values are compared as the replica keeps them, PostgreSQL's
 * text output, so the session sets DateStyle=ISO, MDY, TimeZone=UTC,
 * extra_float_digits=1, bytea_output=hex, client_encoding=UTF8; booleans are
 * rendered t/f and timestamptz as Debezium's ZonedTimestamp (sql.c).
 *
 * Credentials come from the connection string, PGPASSFILE or the PG*
 * environment (libpq's own rules); messages name the source by its
 * connection string with the password removed, and any password text that a
 * libpq message might echo is masked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <postgresql/libpq-fe.h> /* Debian puts it under postgresql/ */

#include "query.h"

#define DEFAULT_THRESHOLD 16384
#define DEFAULT_FACTOR 32
#define DEFAULT_RECHECKS 5
#define DEFAULT_RECHECK_MS 500
#define ROWS_PER_RANGE 8192
#define FETCH_ROWS 10000
/* Suspected differences kept (with both rows) for the rechecks; beyond it
 * differences are counted, not listed or rechecked, so that a replica that
 * lost a whole table does not exhaust memory. */
#define MAX_CANDIDATES 1000000

/* One side's view of a key: present or not, with its values. */
typedef struct side {
    int present;
    uint64_t lsn;            /* replica: row version LSN */
    char **v;                /* ncmp values, NULL = SQL NULL */
    size_t *l;
} side;

typedef struct cand {
    cdc__buf key;            /* encoded key */
    side rep, src;
} cand;

typedef struct ctx {
    const char *dir, *table;
    const cdc_reconcile_options_t *o;
    cdc_reconcile_result_t *res;
    cdc_error_t *err;
    cdc_open_options_t oo;
    cdc_store_t *st;
    PGconn *pg;
    char *who;               /* conninfo without password, for messages */
    char *password;          /* to mask in libpq messages */
    cdc__buf tsql;           /* quoted source table */
    /* Columns compared: the replica's columns present at the source. */
    size_t ncmp;
    size_t *rcols;           /* replica column index of each */
    unsigned char *trim;     /* how each is compared (CDC__CMP_*: an unconstrained NUMERIC, a real) */
    cdc__buf *tbuf;          /* each one's text as compared, when it is not the stored text */
    cdc__srccol *scols;
    char **names;
    /* Key. */
    size_t nkey;
    cdc__srckey *keys;
    size_t *keyidx;          /* position of key column j among the compared ones */
    size_t *keycol;          /* result column of key column j's key text (collist) */
    char **keynames;
    cdc__buf rowhash, collist, orderby;
    uint64_t threshold;
    size_t factor;
    /* Candidates. */
    cand *c;
    size_t nc, capc;
    uint64_t unlisted;       /* differences past MAX_CANDIDATES: counted only */
} ctx;

/* ---- Messages ---- */

static void logf_(ctx *x, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(ctx *x, int level, const char *fmt, ...)
{
    if (!x->o->log) return;
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    x->o->log(x->o->log_opaque, level, "reconcile", m);
}

/* libpq's message with the password masked and the trailing newline cut. */
static void pg_message(ctx *x, const char *msg, char *out, size_t outsz)
{
    cdc__buf b = {0};
    const char *p = msg ? msg : "";
    size_t pl = x->password ? strlen(x->password) : 0;
    while (*p) {
        if (pl && !strncmp(p, x->password, pl)) {
            cdc__buf_puts(&b, "***");
            p += pl;
        } else {
            cdc__buf_putc(&b, *p++);
        }
    }
    while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == ' ')) b.len--;
    snprintf(out, outsz, "%.*s", (int)b.len, b.p ? b.p : "");
    cdc__buf_free(&b);
}

static int src_fail(ctx *x, const char *what, const PGresult *r)
{
    char m[700];
    pg_message(x, r ? PQresultErrorMessage(r) : PQerrorMessage(x->pg), m, sizeof m);
    if (!m[0] && x->pg) pg_message(x, PQerrorMessage(x->pg), m, sizeof m);
    return cdc__err(x->err, CDC_ESOURCE, "source %s: %s: %s", x->who, what, m);
}

/* The connection string without its password, for messages. */
static void describe_source(ctx *x, const char *conninfo)
{
    char *e = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &e);
    cdc__buf b = {0};
    if (!opts) {
        cdc__buf_puts(&b, "(unparsable connection string)");
        PQfreemem(e);
    } else {
        for (PQconninfoOption *o = opts; o->keyword; o++) {
            if (!o->val || !o->val[0]) continue;
            if (!strcmp(o->keyword, "password")) {
                free(x->password);
                x->password = cdc__strdup(o->val);
                continue;
            }
            if (strcmp(o->keyword, "host") && strcmp(o->keyword, "hostaddr") && strcmp(o->keyword, "port") &&
                strcmp(o->keyword, "dbname") && strcmp(o->keyword, "user"))
                continue;
            cdc__buf_printf(&b, "%s%s=%s", b.len ? " " : "", o->keyword, o->val);
        }
        PQconninfoFree(opts);
        if (!b.len) cdc__buf_puts(&b, "(defaults)");
    }
    cdc__buf_putc(&b, 0);
    x->who = b.p;
}

/* ---- Queries ---- */

static PGresult *q(ctx *x, const char *sql, const char *what)
{
    PGresult *r = PQexec(x->pg, sql);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        src_fail(x, what, r);
        PQclear(r);
        return NULL;
    }
    return r;
}

static PGresult *q1(ctx *x, const char *sql, const char *param, const char *what)
{
    PGresult *r = PQexecParams(x->pg, sql, 1, NULL, &param, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        src_fail(x, what, r);
        PQclear(r);
        return NULL;
    }
    return r;
}

/* A numeric's decimal text reduced modulo 2^64. */
static uint64_t numeric_mod64(const char *s)
{
    int neg = *s == '-';
    if (neg || *s == '+') s++;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (uint64_t)(*s - '0');
    return neg ? (uint64_t)0 - v : v;
}

/* "16/B374D848" -> 64-bit LSN. */
static uint64_t parse_lsn(const char *s)
{
    unsigned long hi = strtoul(s, (char **)&s, 16);
    if (*s == '/') s++;
    unsigned long lo = strtoul(s, NULL, 16);
    return (uint64_t)hi << 32 | lo;
}

/* ---- Setup ---- */

static int connect_source(ctx *x, const char *conninfo)
{
    describe_source(x, conninfo);
    x->pg = PQconnectdb(conninfo);
    if (PQstatus(x->pg) != CONNECTION_OK) return src_fail(x, "cannot connect", NULL);
    static const char *setup =
        "SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'; SET extra_float_digits = 1; "
        "SET bytea_output = 'hex'; SET client_encoding = 'UTF8'; SET standard_conforming_strings = on; "
        "SET application_name = 'cdcstore reconcile'; "
        /* Hash queries are one pass of cheap expressions: parallel workers
         * pay off even for small tables, JIT compilation does not (it took
         * longer than the query in tests), and the ranged queries sort
         * (range, row) pairs, better in memory. */
        "SET jit = off; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET work_mem = '64MB'";
    PGresult *r = q(x, setup, "session settings");
    if (!r) return CDC_ESOURCE;
    PQclear(r);
    return 0;
}

/* Reads the source's columns and key, and matches them with the replica's. */
/* A key column of a temporal type, as the replica's key holds it: the
 * value Debezium's key carries (default time.precision.mode=adaptive).
 * date: days since 1970-01-01 (io.debezium.time.Date, an integer);
 * timestamp and time: microseconds (MicroTimestamp, MicroTime), or
 * milliseconds at a precision of 3 or less (Timestamp, Time); timestamptz:
 * the ZonedTimestamp text (cdc__sql_coltext).  Compared as the column's
 * own text, such a key named no replica key: a date key made the source's
 * queries fail (text = integer), and a table keyed (id, created_at
 * timestamptz), as partitioned tables are, came out as every row missing
 * and extra.  NULL for other types; *kind set otherwise. */
static char *key_expr(const cdc__srccol *c, const char *tn, int *kind)
{
    cdc__buf b = {0};
    const char *p = c->type ? strchr(c->type, '(') : NULL;
    int prec = p ? atoi(p + 1) : 6;
    const char *unit = prec <= 3 ? "1000" : "1000000";
    if (!strcmp(tn, "date")) { /* 'infinity': INT32_MAX days, as the decoder keys it (date_infinity) */
        cdc__buf_puts(&b, "(CASE WHEN isfinite(");
        cdc__sql_ident(&b, c->name);
        cdc__buf_puts(&b, ") THEN ");
        cdc__sql_ident(&b, c->name);
        cdc__buf_puts(&b, " - DATE '1970-01-01' WHEN ");
        cdc__sql_ident(&b, c->name);
        cdc__buf_puts(&b, " > DATE '1970-01-01' THEN 2147483647 ELSE -2147483648 END)");
        *kind = CDC__KP_INT;
    } else if (!strcmp(tn, "timestamp") || !strcmp(tn, "time")) {
        /* a timestamp 'infinity': the JDBC driver's sentinels, which Debezium
         * sends as microseconds (or milliseconds) */
        int ts = !strcmp(tn, "timestamp");
        cdc__buf_puts(&b, "(CASE WHEN ");
        if (ts) {
            cdc__buf_puts(&b, "NOT isfinite(");
            cdc__sql_ident(&b, c->name);
            cdc__buf_puts(&b, ") THEN CASE WHEN ");
            cdc__sql_ident(&b, c->name);
            cdc__buf_printf(&b, " > TIMESTAMP 'epoch' THEN %s ELSE %s END WHEN ",
                            prec <= 3 ? "9223372036825200" : "9223372036825200000",
                            prec <= 3 ? "-9223372036832400" : "-9223372036832400000");
        }
        cdc__buf_puts(&b, "true THEN (extract(epoch FROM ");
        cdc__sql_ident(&b, c->name);
        cdc__buf_printf(&b, ") * %s)::bigint END)", unit);
        *kind = CDC__KP_INT;
    } else if (!strcmp(tn, "timestamptz")) {
        cdc__sql_coltext(&b, c);
        *kind = CDC__KP_TEXT;
    } else if (!strcmp(tn, "bpchar")) {
        /* char(n): the padded value, as Debezium's key carries it.  "k"
         * compared with a text literal is compared as char(n)::text, which
         * drops the padding: the recheck of one key found no source row for
         * "b   ", so a row missing from the replica passed for a transient
         * difference (exit 0) and a changed one was reported extra. */
        cdc__sql_coltext(&b, c);
        *kind = CDC__KP_TEXT;
    } else if (!strcmp(tn, "bool")) {
        /* t or f, as a change event's key holds it: boolean::text is 'true'
         * (a boolean in the key made equal tables differ, and a changed row
         * came out as an extra one) */
        cdc__buf_puts(&b, "(CASE WHEN ");
        cdc__sql_ident(&b, c->name);
        cdc__buf_puts(&b, " THEN 't' ELSE 'f' END)");
        *kind = CDC__KP_TEXT;
    } else {
        return NULL;
    }
    cdc__buf_putc(&b, 0);
    return b.p;
}

static int describe_tables(ctx *x)
{
    const char *src = x->o->source_table ? x->o->source_table : x->table;
    cdc__sql_table(&x->tsql, src);
    cdc__buf_putc(&x->tsql, 0);
    x->tsql.len--;
    int rc = 0;
    PGresult *r = q1(x, "SELECT to_regclass($1)::oid", x->tsql.p, "looking up the table");
    if (!r) return CDC_ESOURCE;
    if (PQgetisnull(r, 0, 0)) {
        PQclear(r);
        return cdc__err(x->err, CDC_ESOURCE, "source %s: table %s not found", x->who, src);
    }
    char oid[32];
    snprintf(oid, sizeof oid, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);

    /* A column of a domain type is read as its base type (through domains
     * over domains): Debezium sends a domain's values as its base type's,
     * and the special cases below go by the type's name (a domain over
     * boolean read as 'true' against the replica's 't', a domain over int
     * as the key failed the queries with text = integer). */
    PGresult *cols = q1(x,
                        "SELECT a.attname, format_type(b.oid, b.mod), t.typcategory, t.typname, a.attgenerated <> '' "
                        "FROM pg_attribute a CROSS JOIN LATERAL ("
                        " WITH RECURSIVE d(oid, mod, depth) AS ("
                        "  SELECT a.atttypid, a.atttypmod, 0"
                        "  UNION ALL SELECT t.typbasetype, t.typtypmod, d.depth + 1 FROM d JOIN pg_type t ON t.oid = d.oid"
                        "   WHERE t.typtype = 'd' AND d.depth < 64)"
                        " SELECT oid, mod FROM d ORDER BY depth DESC LIMIT 1) b "
                        "JOIN pg_type t ON t.oid = b.oid "
                        "WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                        oid, "reading the columns");
    if (!cols) return CDC_ESOURCE;
    /* The key Debezium's records carry: the primary key, or without one the
     * unique index that is the table's REPLICA IDENTITY. */
    PGresult *pk = q1(x,
                      "SELECT a.attname FROM (SELECT * FROM pg_index WHERE indrelid = $1::oid "
                      " AND (indisprimary OR indisreplident) ORDER BY indisprimary DESC LIMIT 1) i "
                      "CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) "
                      "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.ord",
                      oid, "reading the primary key");
    if (!pk) {
        PQclear(cols);
        return CDC_ESOURCE;
    }
    const char *const *rnames;
    size_t rn;
    if ((rc = cdc_store_columns(x->st, x->table, &rnames, &rn, x->err))) goto done;
    int ns = PQntuples(cols);
    x->rcols = cdc__calloc(rn + 1, sizeof *x->rcols);
    x->scols = cdc__calloc(rn + 1, sizeof *x->scols);
    x->names = cdc__calloc(rn + 1, sizeof *x->names);
    x->trim = cdc__calloc(rn + 1, 1);
    x->tbuf = cdc__calloc(rn + 1, sizeof *x->tbuf);
    /* Compared: replica columns found at the source, in replica order.  A
     * generated column of the source (GENERATED ALWAYS AS ... STORED) is
     * compared on neither side: PostgreSQL's logical replication does not
     * publish it (the snapshot's reads carry it, streamed changes do not),
     * so the replica cannot hold it, and a table with one was always
     * reported as differing by that column. */
    for (size_t i = 0; i < rn; i++) {
        int found = -1;
        for (int j = 0; j < ns && found < 0; j++)
            if (!strcmp(rnames[i], PQgetvalue(cols, j, 0))) found = j;
        if (found >= 0 && !strcmp(PQgetvalue(cols, found, 4), "t")) continue;
        if (found < 0) {
            cdc_diff_t d = {.kind = CDC_DIFF_EXTRA, .column = rnames[i]};
            x->res->columns++;
            if (x->o->on_diff) x->o->on_diff(x->o->opaque, &d);
            continue;
        }
        x->rcols[x->ncmp] = i;
        x->names[x->ncmp] = cdc__strdup(rnames[i]);
        x->scols[x->ncmp].name = x->names[x->ncmp];
        x->scols[x->ncmp].type = cdc__strdup(PQgetvalue(cols, found, 1));
        x->trim[x->ncmp] = cdc__sql_numeric(x->scols[x->ncmp].type) ? CDC__CMP_NUMERIC
                           : !strcmp(x->scols[x->ncmp].type, "real")  ? CDC__CMP_FLOAT4
                                                                      : CDC__CMP_TEXT;
        x->ncmp++;
    }
    for (int j = 0; j < ns; j++) {
        int found = !strcmp(PQgetvalue(cols, j, 4), "t"); /* generated: see above */
        for (size_t i = 0; i < rn && !found; i++) found = !strcmp(rnames[i], PQgetvalue(cols, j, 0));
        if (!found) {
            cdc_diff_t d = {.kind = CDC_DIFF_MISSING, .column = PQgetvalue(cols, j, 0)};
            x->res->columns++;
            if (x->o->on_diff) x->o->on_diff(x->o->opaque, &d);
        }
    }
    x->nkey = (size_t)PQntuples(pk);
    if (!x->nkey) {
        rc = cdc__err(x->err, CDC_ESOURCE,
                      "source %s: table %s has no primary key and no unique index as its REPLICA IDENTITY, "
                      "so its rows have no key to compare by",
                      x->who, src);
        goto done;
    }
    x->keys = cdc__calloc(x->nkey, sizeof *x->keys);
    x->keyidx = cdc__calloc(x->nkey, sizeof *x->keyidx);
    x->keynames = cdc__calloc(x->nkey, sizeof *x->keynames);
    for (size_t k = 0; k < x->nkey; k++) {
        const char *kn = PQgetvalue(pk, (int)k, 0);
        size_t i = 0;
        while (i < x->ncmp && strcmp(x->names[i], kn)) i++;
        if (i == x->ncmp) {
            rc = cdc__err(x->err, CDC_ESOURCE, "table %s: key column %s of the source is not in the replica",
                          x->table, kn);
            goto done;
        }
        x->keyidx[k] = i;
        x->keynames[k] = cdc__strdup(kn);
        x->keys[k].name = x->keynames[k];
        for (int j = 0; j < ns; j++) {
            if (strcmp(kn, PQgetvalue(cols, j, 0))) continue;
            const char *tn = PQgetvalue(cols, j, 3), *cat = PQgetvalue(cols, j, 2);
            if (!strcmp(tn, "int2") || !strcmp(tn, "int4") || !strcmp(tn, "int8")) {
                x->keys[k].kind = CDC__KP_INT;
            } else if ((x->keys[k].expr = key_expr(&x->scols[i], tn, &x->keys[k].kind))) {
                /* a temporal key, as Debezium sends it */
            } else {
                x->keys[k].kind = CDC__KP_TEXT;
                x->keys[k].uuid = !strcmp(tn, "uuid");
                x->keys[k].string = !strcmp(cat, "S");
            }
        }
    }
    /* SQL pieces used by every query. */
    cdc__sql_rowhash(&x->rowhash, x->scols, x->ncmp, x->o->algorithm);
    /* Output columns are renamed: ORDER BY "id" would otherwise sort by the
     * output column "id", which is the text form (10 before 9). */
    for (size_t i = 0; i < x->ncmp; i++) {
        if (i) cdc__buf_puts(&x->collist, ", ");
        cdc__sql_coltext(&x->collist, &x->scols[i]);
        cdc__buf_printf(&x->collist, " AS c%zu", i);
    }
    if (!x->ncmp) cdc__buf_puts(&x->collist, "NULL");
    /* Each key column's text as the replica's key holds it, read by
     * source_key: the text a change event carried.  That is the compared
     * column's text (its output above) but for two kinds, selected apart:
     * an unconstrained numeric, whose values are compared without trailing
     * fraction zeros (trim_scale) while its key keeps them ("1.50": trimmed,
     * a key read back named no replica key, and one differing row came out
     * as a missing and an extra one too), and a date or timestamp, whose
     * key is a number (key_expr). */
    x->keycol = cdc__calloc(x->nkey, sizeof *x->keycol);
    for (size_t k = 0, extra = x->ncmp; k < x->nkey; k++) {
        x->keycol[k] = x->keyidx[k];
        if (x->keys[k].expr && x->keys[k].kind == CDC__KP_INT) {
            cdc__buf_printf(&x->collist, ", (%s)::text", x->keys[k].expr);
        } else if (x->trim[x->keyidx[k]] == CDC__CMP_NUMERIC) {
            cdc__buf_puts(&x->collist, ", ");
            cdc__sql_ident(&x->collist, x->scols[x->keyidx[k]].name);
            cdc__buf_puts(&x->collist, "::text");
        } else {
            continue;
        }
        cdc__buf_printf(&x->collist, " AS k%zu", k);
        x->keycol[k] = extra++;
    }
    for (size_t k = 0; k < x->nkey; k++) {
        if (k) cdc__buf_puts(&x->orderby, ", ");
        cdc__sql_keyexpr(&x->orderby, &x->keys[k]);
    }
done:
    PQclear(cols);
    PQclear(pk);
    return rc;
}

/* ---- Range hashes at the source ---- */

typedef struct srch {
    int64_t bucket;
    uint64_t rows, hash;
} srch;

/* Sends the bucket query over [lo, hi); collect it with recv_hashes. */
static int send_hashes(ctx *x, const cdc__buf *lo, const cdc__buf *hi, int64_t width, const cdc__buf *bounds,
                       size_t nb)
{
    /* GROUP BY <expression of the key> makes the planner expect one group
     * per row (the key's statistics), so it sorts every row by its bucket
     * before it aggregates.  Grouping the output of an OFFSET 0 subquery
     * instead makes it expect few groups, which it hashes, while the parallel
     * workers scan and hash the rows: the per-range sums of a whole table
     * cost about what its single sum does (10M rows, lookup3: reconcile of
     * equal tables 8.6-9.6 s with per-range sums against 8.6-10.0 s with the
     * sum; tests/query/bench.sh), so the first level asks for them at once. */
    cdc__buf s = {0};
    int rc;
    cdc__buf_puts(&s, "SELECT cdc__b, count(*), sum(cdc__h)::text FROM (SELECT ");
    if ((rc = cdc__sql_bucket(&s, x->keys, x->nkey, width, bounds, nb))) goto done;
    cdc__buf_puts(&s, " AS cdc__b, ");
    cdc__buf_put(&s, x->rowhash.p, x->rowhash.len);
    cdc__buf_puts(&s, " AS cdc__h FROM ");
    cdc__buf_puts(&s, x->tsql.p);
    cdc__buf_puts(&s, " WHERE ");
    if ((rc = cdc__sql_range(&s, x->keys, x->nkey, lo, hi))) goto done;
    cdc__buf_puts(&s, " OFFSET 0) cdc__r GROUP BY 1 ORDER BY 1");
    cdc__buf_putc(&s, 0);
    if (!PQsendQuery(x->pg, s.p)) rc = src_fail(x, "sending the hash query", NULL);
done:
    if (rc && rc != CDC_ESOURCE) rc = cdc__err(x->err, rc, "table %s: bad range bounds", x->table);
    cdc__buf_free(&s);
    return rc;
}

static int recv_hashes(ctx *x, srch **out, size_t *n)
{
    PGresult *r, *last = NULL;
    int rc = 0;
    while ((r = PQgetResult(x->pg))) {
        if (last) PQclear(last);
        last = r;
    }
    if (!last || PQresultStatus(last) != PGRES_TUPLES_OK) {
        rc = src_fail(x, "the hash query", last);
        PQclear(last);
        return rc;
    }
    *n = (size_t)PQntuples(last);
    *out = cdc__calloc(*n + 1, sizeof **out);
    for (size_t i = 0; i < *n; i++) {
        (*out)[i].bucket = strtoll(PQgetvalue(last, (int)i, 0), NULL, 10);
        (*out)[i].rows = strtoull(PQgetvalue(last, (int)i, 1), NULL, 10);
        (*out)[i].hash = numeric_mod64(PQgetvalue(last, (int)i, 2));
    }
    PQclear(last);
    return 0;
}

/* ---- Row by row ---- */

static void side_free(side *s, size_t n)
{
    if (s->v)
        for (size_t i = 0; i < n; i++) free(s->v[i]);
    free(s->v);
    free(s->l);
    memset(s, 0, sizeof *s);
}

static void side_set(side *s, size_t n, const char *const *v, const size_t *l, uint64_t lsn)
{
    side_free(s, n);
    s->present = 1;
    s->lsn = lsn;
    s->v = cdc__calloc(n + 1, sizeof *s->v);
    s->l = cdc__calloc(n + 1, sizeof *s->l);
    for (size_t i = 0; i < n; i++) {
        if (!v[i]) continue;
        s->v[i] = cdc__malloc(l[i] + 1);
        memcpy(s->v[i], v[i], l[i]);
        s->v[i][l[i]] = 0;
        s->l[i] = l[i];
    }
}

static int values_equal(size_t n, char *const *a, const size_t *al, char *const *b, const size_t *bl)
{
    for (size_t i = 0; i < n; i++) {
        if (!a[i] != !b[i]) return 0;
        if (a[i] && (al[i] != bl[i] || memcmp(a[i], b[i], al[i]))) return 0;
    }
    return 1;
}

/* The two sides hold the same row (or neither holds it). */
static int sides_agree(const ctx *x, const side *r, const side *s)
{
    if (r->present != s->present) return 0;
    return !r->present || values_equal(x->ncmp, r->v, r->l, s->v, s->l);
}

/* Nothing moved between two reads of the same side. */
static int side_same(const ctx *x, const side *a, const side *b)
{
    if (a->present != b->present) return 0;
    if (!a->present) return 1;
    return a->lsn == b->lsn && values_equal(x->ncmp, a->v, a->l, b->v, b->l);
}

static cand *add_cand(ctx *x, const char *key, size_t kl)
{
    if (x->nc == x->capc) {
        x->capc = x->capc ? x->capc * 2 : 16;
        x->c = cdc__realloc(x->c, x->capc * sizeof *x->c);
    }
    cand *c = &x->c[x->nc++];
    memset(c, 0, sizeof *c);
    cdc__buf_put(&c->key, key, kl);
    return c;
}

/* The encoded key of a source row (result row i of r). */
static int source_key(const ctx *x, PGresult *r, int i, cdc__buf *out)
{
    cdc__buf_reset(out);
    for (size_t k = 0; k < x->nkey; k++) {
        int col = (int)x->keycol[k];
        if (PQgetisnull(r, i, col)) return -1;
        const char *v = PQgetvalue(r, i, col);
        if (x->keys[k].kind == CDC__KP_INT) cdc__key_add_int(out, strtoll(v, NULL, 10));
        else cdc__key_add_text(out, v, (size_t)PQgetlength(r, i, col));
    }
    return 0;
}

static int keycmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c) return c;
    return al < bl ? -1 : al > bl;
}

/* The values of result row i of r, as arrays over the compared columns. */
static void source_values(const ctx *x, PGresult *r, int i, const char **v, size_t *l)
{
    for (size_t c = 0; c < x->ncmp; c++) {
        v[c] = PQgetisnull(r, i, (int)c) ? NULL : PQgetvalue(r, i, (int)c);
        l[c] = v[c] ? (size_t)PQgetlength(r, i, (int)c) : 0;
    }
}

/* Reads [lo, hi) from both sides in key order and records every key where
 * they disagree as a candidate. */
static int compare_rows(ctx *x, const cdc__buf *lo, const cdc__buf *hi)
{
    cdc__buf s = {0}, lj = {0}, hj = {0}, sk = {0};
    int rc = 0;
    cdc_iter_t *it = NULL;
    PGresult *r = NULL;
    const char **sv = cdc__calloc(x->ncmp + 1, sizeof *sv), **rv = cdc__calloc(x->ncmp + 1, sizeof *rv);
    size_t *sl = cdc__calloc(x->ncmp + 1, sizeof *sl), *rl = cdc__calloc(x->ncmp + 1, sizeof *rl);
    cdc__buf_puts(&s, "DECLARE cdc_rows NO SCROLL CURSOR FOR SELECT ");
    cdc__buf_put(&s, x->collist.p, x->collist.len);
    cdc__buf_puts(&s, " FROM ");
    cdc__buf_puts(&s, x->tsql.p);
    cdc__buf_puts(&s, " WHERE ");
    if ((rc = cdc__sql_range(&s, x->keys, x->nkey, lo, hi))) {
        rc = cdc__err(x->err, rc, "table %s: bad range bounds", x->table);
        goto done;
    }
    cdc__buf_puts(&s, " ORDER BY ");
    cdc__buf_put(&s, x->orderby.p, x->orderby.len);
    cdc__buf_putc(&s, 0);
    if (!(r = q(x, s.p, "reading rows"))) {
        rc = CDC_ESOURCE;
        goto done;
    }
    PQclear(r);
    r = NULL;
    cdc_iter_options_t io = {0};
    if (lo && lo->len) {
        cdc__key_json_array(lo->p, lo->len, &lj);
        io.lower_json = lj.p;
    }
    if (hi && hi->len) {
        cdc__key_json_array(hi->p, hi->len, &hj);
        io.upper_json = hj.p;
    }
    if ((rc = cdc_iter_open(x->st, x->table, &io, &it, x->err))) goto done;
    cdc_row_t row;
    int have_rep = 0, si = 0, sn = 0, src_done = 0;
    for (;;) {
        if (!have_rep) {
            rc = cdc_iter_next(it, &row, x->err);
            if (rc < 0) goto done;
            have_rep = rc == 1 ? 1 : -1; /* -1: replica exhausted */
            if (have_rep == 1) x->res->rows_fetched++;
        }
        if (!src_done && si >= sn) {
            PQclear(r);
            char fetch[64];
            snprintf(fetch, sizeof fetch, "FETCH %d FROM cdc_rows", FETCH_ROWS);
            if (!(r = q(x, fetch, "reading rows"))) {
                rc = CDC_ESOURCE;
                goto done;
            }
            si = 0;
            sn = PQntuples(r);
            if (sn == 0) src_done = 1;
            x->res->rows_fetched += (uint64_t)sn;
        }
        if (have_rep == -1 && src_done) break;
        if (!src_done && source_key(x, r, si, &sk)) {
            rc = cdc__err(x->err, CDC_ESOURCE, "source %s: a key column is NULL", x->who);
            goto done;
        }
        int cmp;
        if (have_rep == -1) cmp = 1;
        else if (src_done) cmp = -1;
        else cmp = keycmp(row.key, row.key_len, sk.p, sk.len);
        if (have_rep == 1)
            for (size_t c = 0; c < x->ncmp; c++) {
                rv[c] = row.values[x->rcols[c]];
                rl[c] = row.lens[x->rcols[c]];
                if (x->trim[c]) rv[c] = cdc__cmp_text(x->trim[c], rv[c], &rl[c], &x->tbuf[c]);
            }
        if (cmp < 0) { /* only in the replica */
            if (x->nc < MAX_CANDIDATES) {
                cand *c = add_cand(x, row.key, row.key_len);
                side_set(&c->rep, x->ncmp, rv, rl, row.lsn);
            } else {
                x->res->extra++, x->unlisted++;
            }
            have_rep = 0;
        } else if (cmp > 0) { /* only in the source */
            if (x->nc < MAX_CANDIDATES) {
                source_values(x, r, si, sv, sl);
                cand *c = add_cand(x, sk.p, sk.len);
                side_set(&c->src, x->ncmp, sv, sl, 0);
            } else {
                x->res->missing++, x->unlisted++;
            }
            si++;
        } else {
            source_values(x, r, si, sv, sl);
            int same = 1;
            for (size_t k = 0; k < x->ncmp && same; k++)
                same = !rv[k] == !sv[k] && (!rv[k] || (rl[k] == sl[k] && !memcmp(rv[k], sv[k], rl[k])));
            if (!same && x->nc < MAX_CANDIDATES) {
                cand *c = add_cand(x, row.key, row.key_len);
                side_set(&c->rep, x->ncmp, rv, rl, row.lsn);
                side_set(&c->src, x->ncmp, sv, sl, 0);
            } else if (!same) {
                x->res->different++, x->unlisted++;
            }
            have_rep = 0;
            si++;
        }
    }
    rc = 0;
    PQclear(r);
    r = q(x, "CLOSE cdc_rows", "reading rows");
    if (!r) rc = CDC_ESOURCE;
done:
    PQclear(r);
    cdc_iter_close(it);
    cdc__buf_free(&s);
    cdc__buf_free(&lj);
    cdc__buf_free(&hj);
    cdc__buf_free(&sk);
    free(sv);
    free(rv);
    free(sl);
    free(rl);
    return rc;
}

/* ---- Bisection ---- */

/* A range of keys [lo, hi) with its row counts on both sides. */
typedef struct krange {
    cdc__buf lo, hi;
    uint64_t rep_rows, src_rows;
} krange;

static void width_bounds(int64_t b, int64_t w, cdc__buf *lo, cdc__buf *hi)
{
    __int128 l = (__int128)b * w, h = l + w;
    if (l >= INT64_MIN && l <= INT64_MAX) cdc__key_add_int(lo, (int64_t)l);
    if (h >= INT64_MIN && h <= INT64_MAX) cdc__key_add_int(hi, (int64_t)h);
}

static int drill(ctx *x, const krange *kr, int depth);

/* Compares the replica's ranges (scan s over [lo, hi)) with the source's
 * (h, n) and goes down into every range that differs. */
static int compare_level(ctx *x, const cdc__scan *s, const srch *h, size_t n, const cdc__buf *lo,
                         const cdc__buf *hi, int depth)
{
    size_t i = 0, j = 0;
    int rc = 0;
    while ((i < s->n || j < n) && !rc) {
        int64_t b;
        uint64_t rr = 0, rh = 0, sr = 0, sh = 0;
        if (j >= n || (i < s->n && s->r[i].bucket < h[j].bucket)) b = s->r[i].bucket;
        else b = h[j].bucket;
        if (i < s->n && s->r[i].bucket == b) {
            rr = s->r[i].rows;
            rh = s->r[i].hash;
        }
        if (j < n && h[j].bucket == b) {
            sr = h[j].rows;
            sh = h[j].hash;
        }
        x->res->ranges_compared++;
        if (rr != sr || rh != sh) {
            x->res->ranges_differing++;
            krange kr = {.rep_rows = rr, .src_rows = sr};
            if (s->width > 0) {
                width_bounds(b, s->width, &kr.lo, &kr.hi);
            } else {
                /* Quantile range b: [its lower, next lower) within [lo, hi).
                 * The replica ranges are 0..s->n-1 in order, bucket = index. */
                size_t ri = (size_t)b;
                if (ri < s->n) {
                    if (s->r[ri].lower.len) cdc__buf_put(&kr.lo, s->r[ri].lower.p, s->r[ri].lower.len);
                    else if (ri == 0 && lo && lo->len) cdc__buf_put(&kr.lo, lo->p, lo->len);
                }
                if (ri + 1 < s->n) cdc__buf_put(&kr.hi, s->r[ri + 1].lower.p, s->r[ri + 1].lower.len);
                else if (hi && hi->len) cdc__buf_put(&kr.hi, hi->p, hi->len);
            }
            logf_(x, CDC_LOG_DEBUG, "level %d: range %lld differs: replica %llu rows, source %llu rows", depth,
                  (long long)b, (unsigned long long)rr, (unsigned long long)sr);
            rc = drill(x, &kr, depth + 1);
            cdc__buf_free(&kr.lo);
            cdc__buf_free(&kr.hi);
        }
        if (i < s->n && s->r[i].bucket == b) i++;
        if (j < n && h[j].bucket == b) j++;
    }
    return rc;
}

/* One differing range: compared row by row when small, else split. */
static int drill(ctx *x, const krange *kr, int depth)
{
    if (kr->rep_rows <= x->threshold || depth > 12) return compare_rows(x, &kr->lo, &kr->hi);
    cdc__scan s = {0};
    s.table = x->table;
    s.lo = &kr->lo;
    s.hi = &kr->hi;
    s.stride = (kr->rep_rows + x->factor - 1) / x->factor;
    s.cols = x->rcols;
    s.trim = x->trim;
    s.algorithm = x->o->algorithm;
    s.ncols = x->ncmp;
    int rc = cdc__scan_run(x->st, &s, x->err);
    srch *h = NULL;
    size_t n = 0;
    cdc__buf *bounds = NULL;
    if (rc) goto done;
    bounds = cdc__calloc(s.n + 1, sizeof *bounds);
    for (size_t i = 1; i < s.n; i++) bounds[i - 1] = s.r[i].lower; /* borrowed */
    if (!(rc = send_hashes(x, &kr->lo, &kr->hi, 0, bounds, s.n ? s.n - 1 : 0)))
        rc = recv_hashes(x, &h, &n);
    if (rc) goto done;
    if (s.n == 0) { /* no replica rows in the range: one empty range */
        cdc__rh *r = cdc__calloc(1, sizeof *r);
        s.r = r;
        s.n = s.cap = 1;
    }
    rc = compare_level(x, &s, h, n, &kr->lo, &kr->hi, depth);
done:
    free(bounds);
    free(h);
    cdc__scan_free(&s);
    return rc;
}

/* Sends the whole-table count and hash query (no grouping, so PostgreSQL
 * aggregates in parallel workers). */
static int send_total(ctx *x)
{
    cdc__buf s = {0};
    cdc__buf_puts(&s, "SELECT 0, count(*), sum(");
    cdc__buf_put(&s, x->rowhash.p, x->rowhash.len);
    cdc__buf_puts(&s, ")::text FROM ");
    cdc__buf_puts(&s, x->tsql.p);
    cdc__buf_putc(&s, 0);
    int rc = PQsendQuery(x->pg, s.p) ? 0 : src_fail(x, "sending the hash query", NULL);
    cdc__buf_free(&s);
    return rc;
}

/* Compares the replica scan's totals with the source's whole-table row. */
static int totals_equal(ctx *x, const cdc__scan *sc, const srch *h, size_t n)
{
    uint64_t rr = 0, rh = 0, sr = n ? h[0].rows : 0, sh = n ? h[0].hash : 0;
    for (size_t i = 0; i < sc->n; i++) {
        rr += sc->r[i].rows;
        rh += sc->r[i].hash;
    }
    x->res->replica_rows = sc->rows;
    x->res->source_rows = sr;
    x->res->ranges_compared++;
    if (rr == sr && rh == sh) return 1;
    x->res->ranges_differing++;
    logf_(x, CDC_LOG_INFO, "the whole table differs: replica %llu rows, source %llu rows", (unsigned long long)rr,
          (unsigned long long)sr);
    return 0;
}

/* The first level over the whole table.  By default: width ranges on both
 * sides at once for a single integer key; for other keys the whole table's
 * count and hash at the source while the replica is scanned, its ranges cut
 * at quantiles on the way; equal totals end the comparison after one pass on
 * each side (the usual case), otherwise the source computes the same
 * quantile ranges and the differing ones are gone into.  With range_width:
 * width ranges of that width.  With ranges: quantile ranges. */
static int first_level(ctx *x)
{
    cdc_stats_t stats = {0};
    int rc = cdc_store_stats(x->st, x->table, &stats, x->err);
    if (rc) return rc;
    int single_int = x->nkey == 1 && x->keys[0].kind == CDC__KP_INT;
    int64_t width = x->o->range_width;
    if (width > 0 && !single_int)
        return cdc__err(x->err, CDC_EINVAL, "table %s: width ranges need a single integer key", x->table);
    uint64_t est = stats.rows_live;
    size_t target = x->o->ranges ? x->o->ranges : (size_t)(est / ROWS_PER_RANGE);
    if (target < 1) target = 1;
    if (target > 4096 && !x->o->ranges) target = 4096;
    int whole_first = width <= 0 && !x->o->ranges;
    if (whole_first && single_int) {
        /* Width ranges from the source's key span (min and max come from the
         * index): the replica scan then yields the per-range sums on the
         * way, and the source groups by a division, cheaper than a search
         * among quantile bounds. */
        cdc__buf span = {0};
        cdc__buf_puts(&span, "SELECT min(");
        cdc__sql_keyexpr(&span, &x->keys[0]); /* a date key: its days (key_expr) */
        cdc__buf_puts(&span, ")::text, max(");
        cdc__sql_keyexpr(&span, &x->keys[0]);
        cdc__buf_puts(&span, ")::text FROM ");
        cdc__buf_puts(&span, x->tsql.p);
        cdc__buf_putc(&span, 0);
        PGresult *r = q(x, span.p, "reading the key span");
        cdc__buf_free(&span);
        if (!r) return CDC_ESOURCE;
        if (!PQgetisnull(r, 0, 0)) {
            __int128 mn = strtoll(PQgetvalue(r, 0, 0), NULL, 10), mx = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
            __int128 w = (mx - mn + 1 + (__int128)target - 1) / (__int128)target;
            width = w > INT64_MAX ? INT64_MAX : w < 1 ? 1 : (int64_t)w;
        }
        PQclear(r);
    }

    cdc__scan sc = {0};
    sc.table = x->table;
    sc.cols = x->rcols;
    sc.trim = x->trim;
    sc.ncols = x->ncmp;
    sc.algorithm = x->o->algorithm;
    srch *h = NULL;
    size_t n = 0;
    cdc__buf *bounds = NULL;
    if (width > 0) {
        sc.width = width;
        /* The width ranges on both sides at the same time, also when they
         * are expected equal: the per-range sums cost the source about what
         * the whole-table sum does (see send_hashes), and a difference then
         * needs no second pass over the source (10M rows, one changed row:
         * 9.1 s instead of 21 s). */
        logf_(x, CDC_LOG_INFO, "first level: ranges of %lld keys", (long long)width);
        if ((rc = send_hashes(x, NULL, NULL, width, NULL, 0))) goto done;
        rc = cdc__scan_run(x->st, &sc, x->err);
        int src_rc = recv_hashes(x, &h, &n);
        if (rc || (rc = src_rc)) goto done;
    } else {
        sc.stride = (stats.rows_live + target - 1) / target;
        if (!sc.stride) sc.stride = 1;
        if (!x->o->ranges) {
            /* Totals first, computed on both sides at the same time. */
            logf_(x, CDC_LOG_INFO, "whole table first; then %zu ranges of the replica's %llu rows if it differs",
                  target, (unsigned long long)stats.rows_live);
            if ((rc = send_total(x))) goto done;
            rc = cdc__scan_run(x->st, &sc, x->err);
            int src_rc = recv_hashes(x, &h, &n);
            if (rc || (rc = src_rc)) goto done;
            if (totals_equal(x, &sc, h, n)) goto done;
            free(h);
            h = NULL;
            n = 0;
        } else {
            logf_(x, CDC_LOG_INFO, "first level: %zu ranges of the replica's %llu rows", target,
                  (unsigned long long)stats.rows_live);
            if ((rc = cdc__scan_run(x->st, &sc, x->err))) goto done;
        }
        bounds = cdc__calloc(sc.n + 1, sizeof *bounds);
        for (size_t i = 1; i < sc.n; i++) bounds[i - 1] = sc.r[i].lower; /* borrowed */
        if ((rc = send_hashes(x, NULL, NULL, 0, bounds, sc.n ? sc.n - 1 : 0))) goto done;
        if ((rc = recv_hashes(x, &h, &n))) goto done;
        if (sc.n == 0) {
            sc.r = cdc__calloc(1, sizeof *sc.r);
            sc.n = sc.cap = 1;
        }
    }
    x->res->replica_rows = sc.rows;
    x->res->source_rows = 0;
    for (size_t j = 0; j < n; j++) x->res->source_rows += h[j].rows;
    rc = compare_level(x, &sc, h, n, NULL, NULL, 1);
done:
    free(bounds);
    free(h);
    cdc__scan_free(&sc);
    return rc;
}

/* ---- Rechecks ---- */

/* Opens (again) the replica read-only.  A writer running at the same time
 * replaces its OPTIONS and MANIFEST files, and a read-only open that lists a
 * file just before it is deleted fails: such a failure is retried. */
static int reopen_store(ctx *x)
{
    cdc_store_close(x->st);
    x->st = NULL;
    int rc = 0;
    for (int i = 0; i < 10; i++) {
        if (!(rc = cdc_store_open(x->dir, &x->oo, &x->st, x->err))) return 0;
        if (rc != CDC_EIO) break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return rc;
}

/* Reads the replica row of key into s. */
static int read_replica(ctx *x, const cdc__buf *key, side *s, cdc__buf *kj)
{
    cdc_row_t row;
    cdc_error_t e = {0};
    side_free(s, x->ncmp);
    cdc__key_json_array(key->p, key->len, kj);
    int rc = cdc_store_get(x->st, x->table, kj->p, &row, &e);
    if (rc == CDC_ENOTFOUND) return 0;
    if (rc) {
        if (x->err) *x->err = e;
        return rc;
    }
    if (row.deleted) return 0;
    const char **v = cdc__calloc(x->ncmp + 1, sizeof *v);
    size_t *l = cdc__calloc(x->ncmp + 1, sizeof *l);
    for (size_t c = 0; c < x->ncmp; c++) {
        v[c] = row.values[x->rcols[c]];
        l[c] = row.lens[x->rcols[c]];
        if (x->trim[c]) v[c] = cdc__cmp_text(x->trim[c], v[c], &l[c], &x->tbuf[c]);
    }
    side_set(s, x->ncmp, v, l, row.lsn);
    free(v);
    free(l);
    return 0;
}

/* Reads the source rows of candidates [from, to) (outside any snapshot). */
static int read_source(ctx *x, cand **cs, size_t n, side *out)
{
    cdc__buf s = {0}, sk = {0};
    int rc = 0;
    cdc__buf_puts(&s, "SELECT ");
    cdc__buf_put(&s, x->collist.p, x->collist.len);
    cdc__buf_puts(&s, " FROM ");
    cdc__buf_puts(&s, x->tsql.p);
    cdc__buf_puts(&s, " WHERE ");
    if (x->nkey > 1) cdc__buf_puts(&s, "ROW(");
    cdc__buf_put(&s, x->orderby.p, x->orderby.len);
    cdc__buf_puts(&s, x->nkey > 1 ? ") IN (" : " IN (");
    for (size_t i = 0; i < n; i++) {
        cdc__keypart *p;
        size_t np;
        if (cdc__key_parts(cs[i]->key.p, cs[i]->key.len, &p, &np) || np != x->nkey) {
            cdc__keyparts_free(p, np);
            rc = cdc__err(x->err, CDC_ECORRUPT, "table %s: a key does not decode", x->table);
            goto done;
        }
        if (i) cdc__buf_puts(&s, ", ");
        if (x->nkey > 1) cdc__buf_puts(&s, "ROW(");
        for (size_t k = 0; k < np; k++) {
            if (k) cdc__buf_puts(&s, ", ");
            cdc__sql_keylit(&s, &x->keys[k], &p[k]);
        }
        if (x->nkey > 1) cdc__buf_puts(&s, ")");
        cdc__keyparts_free(p, np);
    }
    cdc__buf_puts(&s, ")");
    cdc__buf_putc(&s, 0);
    PGresult *r = q(x, s.p, "rechecking rows");
    if (!r) {
        rc = CDC_ESOURCE;
        goto done;
    }
    const char **v = cdc__calloc(x->ncmp + 1, sizeof *v);
    size_t *l = cdc__calloc(x->ncmp + 1, sizeof *l);
    for (size_t i = 0; i < n; i++) side_free(&out[i], x->ncmp);
    for (int i = 0; i < PQntuples(r); i++) {
        if (source_key(x, r, i, &sk)) continue;
        for (size_t j = 0; j < n; j++) {
            if (keycmp(sk.p, sk.len, cs[j]->key.p, cs[j]->key.len)) continue;
            source_values(x, r, i, v, l);
            side_set(&out[j], x->ncmp, v, l, 0);
            break;
        }
    }
    free(v);
    free(l);
    PQclear(r);
done:
    cdc__buf_free(&s);
    cdc__buf_free(&sk);
    return rc;
}

static void report(ctx *x, const cand *c, int unsettled)
{
    cdc__buf kj = {0};
    cdc__key_to_json(c->key.p, c->key.len, (const char *const *)x->keynames, x->nkey, &kj);
    cdc__buf_putc(&kj, 0);
    cdc_diff_t d = {0};
    d.kind = !c->rep.present ? CDC_DIFF_MISSING : !c->src.present ? CDC_DIFF_EXTRA : CDC_DIFF_DIFFERENT;
    d.key_json = kj.p;
    d.ncols = x->ncmp;
    d.names = (const char *const *)x->names;
    if (c->rep.present) {
        d.replica = (const char *const *)c->rep.v;
        d.replica_lens = c->rep.l;
        d.replica_lsn = c->rep.lsn;
    }
    if (c->src.present) {
        d.source = (const char *const *)c->src.v;
        d.source_lens = c->src.l;
    }
    d.unsettled = unsettled;
    if (d.kind == CDC_DIFF_MISSING) x->res->missing++;
    else if (d.kind == CDC_DIFF_EXTRA) x->res->extra++;
    else x->res->different++;
    if (x->o->on_diff) x->o->on_diff(x->o->opaque, &d);
    cdc__buf_free(&kj);
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return keycmp(x->key.p, x->key.len, y->key.p, y->key.len);
}

/* Sorts the candidates by key and drops repeated keys (a key is compared in
 * one range only, but a range may be read again after a split). */
static void cand_dedup(ctx *x)
{
    if (x->nc < 2) return;
    qsort(x->c, x->nc, sizeof *x->c, cand_cmp);
    size_t k = 1;
    for (size_t i = 1; i < x->nc; i++) {
        if (!cand_cmp(&x->c[i], &x->c[k - 1])) {
            cdc__buf_free(&x->c[i].key);
            side_free(&x->c[i].rep, x->ncmp);
            side_free(&x->c[i].src, x->ncmp);
            continue;
        }
        x->c[k++] = x->c[i];
    }
    x->nc = k;
}

static int recheck(ctx *x)
{
    cand_dedup(x);
    int rounds = x->o->rechecks > 0 ? x->o->rechecks : DEFAULT_RECHECKS;
    long wait = x->o->recheck_ms > 0 ? x->o->recheck_ms : DEFAULT_RECHECK_MS;
    size_t live = x->nc;
    cand **cs = cdc__calloc(x->nc + 1, sizeof *cs);
    for (size_t i = 0; i < x->nc; i++) cs[i] = &x->c[i];
    side *rep = cdc__calloc(x->nc + 1, sizeof *rep), *src = cdc__calloc(x->nc + 1, sizeof *src);
    cdc__buf kj = {0};
    int rc = 0;
    for (int round = 1; round <= rounds && live && !rc; round++, wait *= 2) {
        logf_(x, CDC_LOG_INFO, "recheck %d of %d: %zu suspected differences, after %ld ms", round, rounds, live,
              wait);
        struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        if ((rc = reopen_store(x))) break;
        for (size_t i = 0; i < live && !rc; i++) rc = read_replica(x, &cs[i]->key, &rep[i], &kj);
        for (size_t i = 0; i < live && !rc; i += 1000)
            rc = read_source(x, cs + i, live - i < 1000 ? live - i : 1000, src + i);
        if (rc) break;
        size_t keep = 0;
        for (size_t i = 0; i < live; i++) {
            cand *c = cs[i];
            if (sides_agree(x, &rep[i], &src[i])) {
                x->res->transient++;
            } else if (side_same(x, &rep[i], &c->rep) && side_same(x, &src[i], &c->src)) {
                report(x, c, 0);
            } else {
                /* Moved: remember this read and look again. */
                side_free(&c->rep, x->ncmp);
                side_free(&c->src, x->ncmp);
                c->rep = rep[i];
                c->src = src[i];
                memset(&rep[i], 0, sizeof rep[i]);
                memset(&src[i], 0, sizeof src[i]);
                cs[keep++] = c;
                continue;
            }
            side_free(&rep[i], x->ncmp);
            side_free(&src[i], x->ncmp);
        }
        live = keep;
    }
    if (!rc)
        for (size_t i = 0; i < live; i++) report(x, cs[i], 1);
    for (size_t i = 0; i < x->nc; i++) {
        side_free(&rep[i], x->ncmp);
        side_free(&src[i], x->ncmp);
    }
    free(rep);
    free(src);
    free(cs);
    cdc__buf_free(&kj);
    return rc;
}

/* ---- Entry ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int cdc_reconcile(const char *dir, const char *table, const char *conninfo, const cdc_reconcile_options_t *opts,
                  cdc_reconcile_result_t *res, cdc_error_t *err)
{
    cdc_reconcile_options_t defo = {0};
    cdc_reconcile_result_t defr;
    if (!opts) opts = &defo;
    if (!res) res = &defr;
    memset(res, 0, sizeof *res);
    if (!dir || !table || !conninfo) return cdc__err(err, CDC_EINVAL, "cdc_reconcile: bad arguments");
    double t0 = now_s();
    ctx x = {0};
    x.dir = dir;
    x.table = table;
    x.o = opts;
    x.res = res;
    x.err = err;
    x.threshold = opts->threshold ? opts->threshold : DEFAULT_THRESHOLD;
    x.factor = opts->factor > 1 ? opts->factor : DEFAULT_FACTOR;
    x.oo.read_only = 1;
    x.oo.log = opts->log;
    x.oo.log_opaque = opts->log_opaque;
    int rc = reopen_store(&x);
    if (rc) goto done;
    if ((rc = connect_source(&x, conninfo))) goto done;
    if ((rc = describe_tables(&x))) goto done;
    PGresult *r = q(&x, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "starting the snapshot");
    if (!r) {
        rc = CDC_ESOURCE;
        goto done;
    }
    PQclear(r);
    r = q(&x, "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END::text",
          "reading the WAL position");
    if (!r) {
        rc = CDC_ESOURCE;
        goto done;
    }
    res->start_lsn = parse_lsn(PQgetvalue(r, 0, 0));
    logf_(&x, CDC_LOG_INFO, "comparing %s with source %s table %s as of LSN %s", table, x.who, x.tsql.p,
          PQgetvalue(r, 0, 0));
    PQclear(r);
    if ((rc = first_level(&x))) goto done;
    r = q(&x, "COMMIT", "ending the snapshot");
    if (!r) {
        rc = CDC_ESOURCE;
        goto done;
    }
    PQclear(r);
    if (x.nc) rc = recheck(&x);
    if (!rc && x.unlisted)
        logf_(&x, CDC_LOG_WARN,
              "%llu more differences were counted but not listed or rechecked (the first %d are listed)",
              (unsigned long long)x.unlisted, MAX_CANDIDATES);
done:
    res->seconds = now_s() - t0;
    for (size_t i = 0; i < x.nc; i++) {
        cdc__buf_free(&x.c[i].key);
        side_free(&x.c[i].rep, x.ncmp);
        side_free(&x.c[i].src, x.ncmp);
    }
    free(x.c);
    for (size_t i = 0; i < x.ncmp; i++) {
        free(x.names[i]);
        free((char *)x.scols[i].type);
    }
    free(x.names);
    free(x.scols);
    free(x.rcols);
    free(x.trim);
    for (size_t i = 0; x.tbuf && i < x.ncmp; i++) cdc__buf_free(&x.tbuf[i]);
    free(x.tbuf);
    for (size_t k = 0; x.keynames && k < x.nkey; k++) free(x.keynames[k]);
    for (size_t k = 0; x.keys && k < x.nkey; k++) free(x.keys[k].expr);
    free(x.keynames);
    free(x.keys);
    free(x.keyidx);
    free(x.keycol);
    cdc__buf_free(&x.tsql);
    cdc__buf_free(&x.rowhash);
    cdc__buf_free(&x.collist);
    cdc__buf_free(&x.orderby);
    if (x.pg) PQfinish(x.pg);
    free(x.who);
    free(x.password);
    cdc_store_close(x.st);
    return rc;
}

/* ---- Plain queries for other files ---- */

/* A session made of the same parts as reconcile's (the password kept out of
 * every message, the source named by its connection string without it), for
 * files that only need a few queries and their rows as text. */
struct cdc__pg {
    ctx x;
};

static const cdc_reconcile_options_t pg_no_options;

int cdc__pg_connect(const char *conninfo, const char *app, int timeout_ms, cdc__pg **out, cdc_error_t *err)
{
    *out = NULL;
    cdc__pg *c = cdc__calloc(1, sizeof *c);
    ctx *x = &c->x;
    x->o = &pg_no_options;
    x->err = err;
    describe_source(x, conninfo);
    /* connect_timeout first: a conninfo that sets its own wins, as the
     * expanded dbname's settings come after it. */
    char tmo[32];
    int ms = timeout_ms > 0 ? timeout_ms : 5000;
    snprintf(tmo, sizeof tmo, "%d", (ms + 999) / 1000);
    const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *vals[] = {tmo, app, conninfo, NULL};
    x->pg = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(x->pg) != CONNECTION_OK) {
        int rc = src_fail(x, "cannot connect", NULL);
        cdc__pg_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

const char *cdc__pg_who(const cdc__pg *c) { return c->x.who; }

int cdc__pg_rows(cdc__pg *c, const char *sql, int nparams, const char *const *params, const char *what,
                 cdc__pgrows *out, cdc_error_t *err)
{
    memset(out, 0, sizeof *out);
    c->x.err = err;
    PGresult *r = PQexecParams(c->x.pg, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        int rc = src_fail(&c->x, what, r);
        PQclear(r);
        return rc;
    }
    out->nrows = (size_t)PQntuples(r);
    out->ncols = (size_t)PQnfields(r);
    out->v = cdc__calloc(out->nrows * out->ncols + 1, sizeof *out->v);
    for (size_t i = 0; i < out->nrows; i++)
        for (size_t j = 0; j < out->ncols; j++)
            if (!PQgetisnull(r, (int)i, (int)j)) out->v[i * out->ncols + j] = cdc__strdup(PQgetvalue(r, (int)i, (int)j));
    PQclear(r);
    return 0;
}

void cdc__pgrows_free(cdc__pgrows *r)
{
    if (!r->v) return;
    for (size_t i = 0; i < r->nrows * r->ncols; i++) free(r->v[i]);
    free(r->v);
    memset(r, 0, sizeof *r);
}

void cdc__pg_close(cdc__pg *c)
{
    if (!c) return;
    if (c->x.pg) PQfinish(c->x.pg);
    free(c->x.who);
    free(c->x.password);
    free(c);
}
