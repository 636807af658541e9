/*
 * doctor.c: `cdcstore doctor`, the pipeline's health in one OK / WARN /
 * FAIL line per check, for a person or for cron and a monitoring system
 * (exit status 0, 1 or 2: the worst line).  status.c answers "how far
 * behind is the replica?" from the replica; doctor also asks the two
 * things upstream that fail silently:
 *
 *  - the source's replication slot.  A slot nobody reads keeps every WAL
 *    segment since its consumer left; past max_slot_wal_keep_size
 *    PostgreSQL invalidates it (wal_status 'lost') and the connector must
 *    snapshot again, and without a limit the WAL fills the server's disk.
 *    So the retained WAL is measured against the limit (or against
 *    absolute thresholds when there is none) while it grows, before either
 *    happens.
 *  - the publication.  A table the replica holds but the publication does
 *    not cover sends no change at all: no error anywhere, the replica just
 *    stops following it.
 *  - Kafka Connect: the connector and its tasks RUNNING (a FAILED task
 *    stops the changes while the worker stays up).
 *
 * Then the replica's side, as status computes it: the consumer lag (records
 * in Kafka not applied yet) and the replica's age behind the source; and
 * the change topics' cleanup.policy (check_topics).
 *
 * The passes, in the order of the lines they print: connector (Connect's
 * REST API, cdc_connect_status), source (cdc_source_status: slots, WAL,
 * publication), replica (cdc_store_positions, cdc_kafka_watermarks,
 * cdc_store_stats).  An endpoint that does not answer is a FAIL line naming
 * it and the error; the other passes still run.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "cdcstore.h"
#include "cli.h"

enum { LV_OK = 0, LV_WARN = 1, LV_FAIL = 2 };
static const char *level_name[] = {"OK", "WARN", "FAIL"};

static const char *doctor_usage =
    "usage: cdcstore doctor --source CONNINFO [--connect URL --connector NAME]\n"
    "                       [--slot NAME] [--publication NAME] [--db DIR [--brokers LIST]]\n"
    "                       [thresholds] [--timeout-ms MS] [--json]\n"
    "Checks the pipeline and prints one line per check, OK, WARN or FAIL, with its\n"
    "figure: the connector and its tasks RUNNING (Kafka Connect's REST API), and\n"
    "sending truncates (skipped.operations=none); the\n"
    "replication slot active, and the WAL it retains against max_slot_wal_keep_size;\n"
    "the publication covering every table the replica holds; the consumer lag, the\n"
    "change topics not compacted, and the replica's age behind the source.\n"
    "  --source CONNINFO   the source database (libpq connection string or URI)\n"
    "  --connect URL       Kafka Connect's REST API, e.g. http://127.0.0.1:8083\n"
    "  --connector NAME    the Debezium connector: its slot.name, publication.name and\n"
    "                      table.include.list say what to check\n"
    "  --slot NAME         the slot to check (default: the connector's, else every\n"
    "                      logical slot of the source database)\n"
    "  --publication NAME  the publication to check (default: the connector's, else\n"
    "                      all publications of the database together)\n"
    "  --db DIR            the replica: its tables, positions and newest change\n"
    "  --brokers LIST      Kafka bootstrap servers, for the consumer lag (with --db)\n"
    "  --kafka-config FILE librdkafka properties, key=value lines (the ingest's file:\n"
    "                      TLS, SASL); its bootstrap.servers serves without --brokers\n"
    "thresholds (SIZE: bytes, or with kB, MB, GB, TB, powers of 1024):\n"
    "  --wal-warn-pct P, --wal-fail-pct P  retained WAL as a percentage of\n"
    "                      max_slot_wal_keep_size (default 50, 80)\n"
    "  --wal-warn SIZE, --wal-fail SIZE    retained WAL when max_slot_wal_keep_size is\n"
    "                      -1, unlimited (default 1GB, 4GB)\n"
    "  --lag-warn N, --lag-fail N          consumer lag in records (default 10000, 1000000)\n"
    "  --age-warn S, --age-fail S          the replica's age in seconds (default 300, 3600;\n"
    "                      OK whatever the age when every record in Kafka is applied:\n"
    "                      the source then had nothing newer to send)\n"
    "  --timeout-ms MS     per request to each endpoint (default 5000)\n"
    "  --json              one JSON object: status, exit and the checks\n"
    "Exit status: 0 all OK, 1 a WARN, 2 a FAIL (also for a usage error).\n";

/* One line of the report. */
typedef struct check {
    int level;
    const char *kind;          /* connector, task, source, slot, wal, publication, replica, lag, age */
    char *subject;             /* what it is about: a slot, a connector, ...; NULL when nothing */
    char *text;                /* the line after the level */
    int has_value;             /* the figure, for --json */
    int64_t value;
    const char *unit;
    int has_limits;
    int64_t warn, fail;
} check;

typedef struct doctor {
    /* Options. */
    const char *source, *connect, *connector, *slot, *publication, *db, *brokers, *kcfg;
    uint64_t wal_warn_pct, wal_fail_pct, wal_warn, wal_fail, lag_warn, lag_fail, age_warn, age_fail;
    int timeout_ms, json;
    /* What the passes found, for the passes after them. */
    cdc_connect_status_t *cs;
    char **tables;             /* the replica's */
    size_t ntables;
    cdc_position_t *pos;
    size_t npos;
    cdc_stats_t total;
    int replica_open;
    char replica_err[sizeof ((cdc_error_t *)0)->msg];
    int64_t lag;               /* -1 unknown */
    /* The report. */
    check *c;
    size_t n, cap;
} doctor;

static check *add(doctor *d, int level, const char *kind, const char *subject, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static check *add(doctor *d, int level, const char *kind, const char *subject, const char *fmt, ...)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 16;
        check *c = cli_calloc(d->cap, sizeof *c);
        if (d->n) memcpy(c, d->c, d->n * sizeof *c);
        free(d->c);
        d->c = c;
    }
    check *k = &d->c[d->n++];
    memset(k, 0, sizeof *k);
    k->level = level;
    k->kind = kind;
    k->subject = subject ? cli_strdup(subject) : NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&k->text, fmt, ap) < 0) k->text = NULL;
    va_end(ap);
    if (!k->text) k->text = cli_strdup("(out of memory)");
    /* One line per check: libpq's and Java's messages span several. */
    char *w = k->text;
    for (const char *r = k->text; *r; r++) {
        if (*r == '\n' || *r == '\r' || *r == '\t') {
            if (w > k->text && w[-1] != ' ') *w++ = ' ';
            continue;
        }
        *w++ = *r;
    }
    *w = 0;
    return k;
}

static void figure(check *k, int64_t value, const char *unit, int has_limits, int64_t warn, int64_t fail)
{
    k->has_value = 1;
    k->value = value;
    k->unit = unit;
    k->has_limits = has_limits;
    k->warn = warn;
    k->fail = fail;
}

/* The level of a figure against its thresholds. */
static int grade(int64_t v, int64_t warn, int64_t fail)
{
    return v >= fail ? LV_FAIL : v >= warn ? LV_WARN : LV_OK;
}

/* n bytes in the unit that keeps 1 to 4 digits: "512 B", "12.3 MiB". */
static const char *human(int64_t n, char *buf, size_t size)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)n;
    int i = 0;
    while ((v >= 1024 || v <= -1024) && i < 5) v /= 1024, i++;
    if (i == 0) snprintf(buf, size, "%lld B", (long long)n);
    else snprintf(buf, size, "%.1f %s", v, u[i]);
    return buf;
}

/* The first line of a Java stack trace ("org.apache...Exception: why"). */
static void first_line(const char *s, char *out, size_t size)
{
    size_t n = s ? strcspn(s, "\r\n") : 0;
    snprintf(out, size, "%.*s", (int)(n > 300 ? 300 : n), s ? s : "");
}

/* ---- Pass 1: Kafka Connect ---- */

/* What the connector leaves out of its events (skipped.operations; unset,
 * Debezium skips truncates: "t").  A skipped TRUNCATE leaves every row of
 * the table in the replica while the source has none; skipped creates,
 * updates or deletes lose those changes outright. */
static void check_operations(doctor *d, const cdc_connect_status_t *s)
{
    const char *set = cdc_connect_config(s, "skipped.operations");
    const char *ops = set ? set : "t";
    char lost[16] = "";
    size_t nl = 0;
    int truncates = 0;
    for (const char *p = ops; *p; p++) {
        if (*p == ',' || *p == ' ') continue;
        size_t n = strcspn(p, ", ");
        if (n == 4 && !strncmp(p, "none", 4)) break;
        if (n == 1 && *p == 't') truncates = 1;
        else if (n == 1 && strchr("cud", *p) && !strchr(lost, *p) && nl < 6) {
            if (nl) lost[nl++] = ',';
            lost[nl++] = *p;
            lost[nl] = 0;
        }
        p += n - 1;
    }
    if (lost[0])
        add(d, LV_FAIL, "operations", s->name,
            "connector %s skips %s events (skipped.operations=%s): the replica misses those changes", s->name, lost,
            ops);
    else if (truncates)
        add(d, LV_WARN, "operations", s->name,
            "connector %s skips truncates (skipped.operations=%s%s): a TRUNCATE of the source is not replicated "
            "(set skipped.operations=none)",
            s->name, ops, set ? "" : ", Debezium's default");
    else
        add(d, LV_OK, "operations", s->name, "connector %s sends every change, truncates too (skipped.operations=%s)",
            s->name, ops);
}

static void check_connector(doctor *d)
{
    cdc_error_t e = {0};
    int rc = cdc_connect_status(d->connect, d->connector, d->timeout_ms, &d->cs, &e);
    if (rc == CDC_ENOTFOUND) {
        add(d, LV_FAIL, "connector", d->connector, "connector %s not found: %s", d->connector, e.msg);
        return;
    }
    if (rc) {
        add(d, LV_FAIL, "connector", d->connector, "connector %s: %s", d->connector,
            e.msg[0] ? e.msg : cdc_strerror(rc));
        return;
    }
    const cdc_connect_status_t *s = d->cs;
    char why[320];
    first_line(s->trace, why, sizeof why);
    if (!strcmp(s->state, "RUNNING"))
        add(d, LV_OK, "connector", s->name, "connector %s RUNNING on %s", s->name, s->worker_id ? s->worker_id : "?");
    else if (!strcmp(s->state, "PAUSED"))
        add(d, LV_WARN, "connector", s->name, "connector %s PAUSED: no change is read (PUT /connectors/%s/resume)",
            s->name, s->name);
    else
        add(d, LV_FAIL, "connector", s->name, "connector %s %s%s%s", s->name, s->state, why[0] ? ": " : "", why);
    if (!s->ntasks) {
        add(d, LV_FAIL, "task", s->name, "connector %s has no task: no change is read", s->name);
        return;
    }
    for (size_t i = 0; i < s->ntasks; i++) {
        const cdc_connect_task_t *t = &s->tasks[i];
        char subject[300];
        snprintf(subject, sizeof subject, "%s/%d", s->name, t->id);
        first_line(t->trace, why, sizeof why);
        int lv = !strcmp(t->state, "RUNNING") ? LV_OK : !strcmp(t->state, "PAUSED") ? LV_WARN : LV_FAIL;
        if (why[0]) add(d, lv, "task", subject, "task %s %s: %s", subject, t->state, why);
        else if (lv == LV_OK && t->worker_id) add(d, lv, "task", subject, "task %s RUNNING on %s", subject, t->worker_id);
        else add(d, lv, "task", subject, "task %s %s", subject, t->state);
    }
    check_operations(d, s);
}

/* ---- Pass 2: the source ---- */

static void check_slot(doctor *d, const cdc_source_status_t *s, const cdc_source_slot_t *sl)
{
    char a[32], b[32], c[32];
    /* Whether a consumer reads it, and whether PostgreSQL still keeps
     * what it needs. */
    if (!strcmp(sl->wal_status, "lost"))
        add(d, LV_FAIL, "slot", sl->name,
            "slot %s lost: WAL it needs was removed (max_slot_wal_keep_size); the connector must snapshot again",
            sl->name);
    else if (!strcmp(sl->wal_status, "unreserved"))
        add(d, LV_FAIL, "slot", sl->name,
            "slot %s %s, wal_status unreserved: WAL it needs will be removed at the next checkpoint", sl->name,
            sl->active ? "active" : "inactive");
    else if (sl->active)
        add(d, LV_OK, "slot", sl->name, "slot %s active (pid %lld), wal_status %s", sl->name,
            (long long)sl->active_pid, sl->wal_status[0] ? sl->wal_status : "unknown");
    else
        add(d, LV_WARN, "slot", sl->name, "slot %s inactive: no consumer reads it, its WAL grows (wal_status %s)",
            sl->name, sl->wal_status[0] ? sl->wal_status : "unknown");
    /* How much WAL it keeps (a lost slot keeps none: its line said so). */
    if (!strcmp(sl->wal_status, "lost")) return;
    if (sl->retained_bytes < 0) {
        add(d, LV_WARN, "wal", sl->name, "slot %s retained WAL unknown (no restart_lsn)", sl->name);
        return;
    }
    int64_t max = s->max_slot_wal_keep_size, r = sl->retained_bytes;
    if (max > 0) {
        int64_t warn = (int64_t)((double)max * (double)d->wal_warn_pct / 100);
        int64_t fail = (int64_t)((double)max * (double)d->wal_fail_pct / 100);
        check *k = add(d, grade(r, warn, fail), "wal", sl->name,
                       "slot %s retained WAL %s of max_slot_wal_keep_size %s (%.0f%%; warn at %llu%%, fail at %llu%%)",
                       sl->name, human(r, a, sizeof a), human(max, b, sizeof b), (double)r * 100 / (double)max,
                       (unsigned long long)d->wal_warn_pct, (unsigned long long)d->wal_fail_pct);
        figure(k, r, "bytes", 1, warn, fail);
    } else {
        int64_t warn = (int64_t)d->wal_warn, fail = (int64_t)d->wal_fail;
        check *k = add(d, grade(r, warn, fail), "wal", sl->name,
                       "slot %s retained WAL %s (max_slot_wal_keep_size %s: warn at %s, fail at %s)", sl->name,
                       human(r, a, sizeof a), max < 0 ? "unlimited" : "0", human(warn, b, sizeof b),
                       human(fail, c, sizeof c));
        figure(k, r, "bytes", 1, warn, fail);
    }
}

/* The table names to find in the publication: the replica's, else the
 * connector's table.include.list (its entries are regular expressions;
 * plain names are what it usually holds).  Returns how many, in *out
 * (borrowed or the caller's to free, as *owned says). */
static size_t wanted_tables(doctor *d, char ***out, int *owned, const char **from)
{
    *owned = 0;
    if (d->replica_open) {
        *out = d->tables;
        *from = "the replica holds";
        return d->ntables;
    }
    const char *list = cdc_connect_config(d->cs, "table.include.list");
    if (!list || !*list) return 0;
    size_t n = 0, cap = 1;
    for (const char *p = list; *p; p++) cap += *p == ',';
    char **t = cli_calloc(cap, sizeof *t);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        const char *s = p;
        while (len && (*s == ' ')) s++, len--;
        while (len && s[len - 1] == ' ') len--;
        if (len) {
            t[n] = cli_calloc(len + 1, 1);
            memcpy(t[n++], s, len);
        }
        p += strcspn(p, ",");
        if (*p) p++;
    }
    *out = t;
    *owned = 1;
    *from = "the connector's table.include.list names";
    return n;
}

static int covered(const cdc_source_publication_t *p, const char *table)
{
    for (size_t i = 0; i < p->ntables; i++)
        if (!strcmp(p->tables[i], table)) return 1;
    return 0;
}

static void check_publication(doctor *d, const cdc_source_status_t *s)
{
    const char *name = d->publication;
    if (!name && d->cs) {
        name = cdc_connect_config(d->cs, "publication.name");
        if (!name) name = "dbz_publication"; /* Debezium's default */
    }
    char **tables;
    int owned;
    const char *from = "";
    size_t nt = wanted_tables(d, &tables, &owned, &from);
    const cdc_source_publication_t *pub = NULL;
    if (name) {
        for (size_t i = 0; i < s->npublications && !pub; i++)
            if (!strcmp(s->publications[i].name, name)) pub = &s->publications[i];
        if (!pub) {
            add(d, LV_FAIL, "publication", name, "publication %s does not exist in database %s", name, s->database);
            goto out;
        }
    } else if (!nt) {
        goto out; /* no publication named, no table to look for: nothing to check */
    } else if (!s->npublications) {
        add(d, LV_FAIL, "publication", NULL, "no publication in database %s: pgoutput sends nothing", s->database);
        goto out;
    }
    /* Every table wanted, in the publication named or in any of them. */
    char *missing = NULL;
    size_t nmissing = 0;
    for (size_t i = 0; i < nt; i++) {
        int in = 0;
        if (pub) in = covered(pub, tables[i]);
        else
            for (size_t j = 0; j < s->npublications && !in; j++) in = covered(&s->publications[j], tables[i]);
        if (in) continue;
        char *m = NULL;
        if (asprintf(&m, "%s%s%s", missing ? missing : "", missing ? ", " : "", tables[i]) >= 0) {
            free(missing);
            missing = m;
        }
        nmissing++;
    }
    char what[300];
    if (pub) snprintf(what, sizeof what, "publication %s%s", pub->name, pub->all_tables ? " (FOR ALL TABLES)" : "");
    else snprintf(what, sizeof what, "the %zu %s of database %s", s->npublications,
                  cli_plural(s->npublications, "publication", "publications"), s->database);
    check *k;
    if (nmissing)
        k = add(d, LV_FAIL, "publication", pub ? pub->name : NULL,
                "%s does not cover %s: no change of %s reaches the replica (%zu of the %zu tables %s)", what,
                missing, nmissing == 1 ? "it" : "them", nmissing, nt, from);
    else if (nt)
        k = add(d, LV_OK, "publication", pub ? pub->name : NULL, "%s covers the %zu %s %s", what, nt,
                cli_plural(nt, "table", "tables"), from);
    else
        k = add(d, LV_OK, "publication", pub ? pub->name : NULL, "%s exists, %zu %s (no table to check: give --db)",
                what, pub ? pub->ntables : 0, cli_plural(pub ? pub->ntables : 0, "table", "tables"));
    figure(k, (int64_t)nmissing, "tables missing", 0, 0, 0);
    free(missing);
out:
    if (owned) cdc_strings_free(tables, nt);
}

static void check_source(doctor *d)
{
    const char *slot = d->slot;
    if (!slot && d->cs) {
        slot = cdc_connect_config(d->cs, "slot.name");
        if (!slot) slot = "debezium"; /* Debezium's default */
    }
    cdc_source_status_t *s = NULL;
    cdc_error_t e = {0};
    int rc = cdc_source_status(d->source, slot, d->timeout_ms, &s, &e);
    if (rc) {
        add(d, LV_FAIL, "source", NULL, "%s", e.msg[0] ? e.msg : cdc_strerror(rc));
        return;
    }
    char v[64], b[32];
    snprintf(v, sizeof v, "%.*s", (int)strcspn(s->server_version, " ,"), s->server_version);
    const char *cdb = d->cs ? cdc_connect_config(d->cs, "database.dbname") : NULL;
    if (cdb && strcmp(cdb, s->database))
        add(d, LV_WARN, "source", s->who, "source %s is database %s, the connector reads database %s", s->who,
            s->database, cdb);
    else
        add(d, LV_OK, "source", s->who, "source %s: PostgreSQL %s, max_slot_wal_keep_size %s", s->who, v,
            s->max_slot_wal_keep_size < 0 ? "unlimited" : human(s->max_slot_wal_keep_size, b, sizeof b));
    if (!s->nslots) {
        if (slot)
            add(d, LV_FAIL, "slot", slot, "slot %s does not exist in %s: no change is captured", slot, s->who);
        else
            add(d, LV_FAIL, "slot", NULL, "no logical replication slot in database %s: no change is captured",
                s->database);
    }
    for (size_t i = 0; i < s->nslots; i++) check_slot(d, s, &s->slots[i]);
    check_publication(d, s);
    cdc_source_status_free(s);
}

/* ---- Pass 3: the replica ---- */

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* The records in Kafka not applied yet, summed over the stored positions
 * (status's figure).  Brokers that let one query run out of time are not
 * asked again. */
static void check_lag(doctor *d, const cdc_position_t *pos, size_t np)
{
    /* The brokers, or the file that names them. */
    const char *who = d->brokers ? d->brokers : d->kcfg;
    if (!np) {
        add(d, LV_WARN, "lag", who, "consumer lag unknown: the replica holds no Kafka position yet");
        return;
    }
    int64_t lag = 0;
    for (size_t i = 0; i < np; i++) {
        int64_t low, high;
        cdc_error_t e = {0};
        int rc = cdc_kafka_watermarks_config(d->brokers, d->kcfg, pos[i].topic, pos[i].partition, d->timeout_ms,
                                             &low, &high, &e);
        if (rc) {
            /* One failed query is enough: the others would wait as long. */
            add(d, LV_FAIL, "lag", who, "consumer lag unknown: brokers %s: %s", who,
                e.msg[0] ? e.msg : cdc_strerror(rc));
            return;
        }
        int64_t next = pos[i].offset + 1;
        lag += high > next ? high - next : 0;
    }
    d->lag = lag;
    check *k = add(d, grade(lag, (int64_t)d->lag_warn, (int64_t)d->lag_fail), "lag", who,
                   "consumer lag %lld %s over %zu %s (warn at %llu, fail at %llu)", (long long)lag,
                   cli_plural((uint64_t)lag, "record", "records"), np, cli_plural(np, "partition", "partitions"),
                   (unsigned long long)d->lag_warn, (unsigned long long)d->lag_fail);
    figure(k, lag, "records", 1, (int64_t)d->lag_warn, (int64_t)d->lag_fail);
}

/* The change topics' cleanup.policy.  A compacted topic drops the older
 * records of a key, a delete's event among them, and keeps its tombstone
 * (for delete.retention.ms); the replica takes a delete from its event,
 * not from a tombstone alone (which carries no version), so a replica
 * behind the compaction of a topic keeps rows deleted at the source. */
static void check_topics(doctor *d, const cdc_position_t *pos, size_t np)
{
    const char *who = d->brokers ? d->brokers : d->kcfg;
    const char **topics = cli_calloc(np + 1, sizeof *topics);
    char **values = cli_calloc(np + 1, sizeof *values);
    size_t n = 0, ncompact = 0;
    for (size_t i = 0; i < np; i++) {
        size_t j = 0;
        while (j < n && strcmp(topics[j], pos[i].topic)) j++;
        if (j == n) topics[n++] = pos[i].topic;
    }
    cdc_error_t e = {0};
    int rc = cdc_kafka_topic_config(d->brokers, d->kcfg, topics, n, "cleanup.policy", d->timeout_ms, values, &e);
    char *list = NULL;
    size_t listlen = 0;
    FILE *f = rc ? NULL : open_memstream(&list, &listlen);
    if (rc) {
        add(d, LV_WARN, "topics", who, "topics' cleanup.policy unknown: %s", e.msg[0] ? e.msg : cdc_strerror(rc));
    } else if (!f) {
        add(d, LV_WARN, "topics", who, "topics' cleanup.policy not checked: out of memory");
    } else {
        for (size_t i = 0; i < n; i++)
            if (values[i] && strstr(values[i], "compact"))
                fprintf(f, "%s%s (%s)", ncompact++ ? ", " : "", topics[i], values[i]);
        fclose(f);
        if (ncompact)
            add(d, LV_WARN, "topics", who,
                "%zu of %zu %s compacted: %s; compaction removes a delete's event and keeps only its tombstone, "
                "which cdcstore does not take for a delete, so a replica that falls behind the compaction keeps "
                "rows deleted at the source: give change topics cleanup.policy=delete, or keep the lag under the "
                "topic's min.compaction.lag.ms",
                ncompact, n, cli_plural(n, "topic", "topics"), list);
        else if (n)
            add(d, LV_OK, "topics", who, "%zu %s not compacted (cleanup.policy)", n, cli_plural(n, "topic", "topics"));
    }
    for (size_t i = 0; i < n; i++) free(values[i]);
    free(values);
    free(topics);
    free(list);
}

static void check_age(doctor *d, const cdc_stats_t *total)
{
    if (!total->newest_ts_ms) {
        add(d, LV_WARN, "age", d->db, "replica %s age unknown: it holds no change applied by this build yet", d->db);
        return;
    }
    int64_t age_ms = now_ms() - (int64_t)total->newest_ts_ms;
    if (age_ms < 0) age_ms = 0;
    int64_t warn = (int64_t)d->age_warn * 1000, fail = (int64_t)d->age_fail * 1000;
    int lv = grade(age_ms, warn, fail);
    time_t t = (time_t)(total->newest_ts_ms / 1000);
    struct tm tm;
    char when[40];
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *note = "";
    if (lv != LV_OK && d->lag == 0) {
        /* Every record in Kafka is applied: an old newest change is an idle
         * source, not a replica behind (the slot and the connector lines
         * say whether changes could be held up before Kafka). */
        lv = LV_OK;
        note = "; every record in Kafka is applied, so the source sent nothing newer";
    }
    check *k = add(d, lv, "age", d->db, "replica %.1f s behind the source (newest change %s; warn at %llu s, fail at %llu s%s)",
                   (double)age_ms / 1e3, when, (unsigned long long)d->age_warn, (unsigned long long)d->age_fail, note);
    figure(k, age_ms, "ms", 1, warn, fail);
}

/* Reads what the other passes need from the replica: its tables (for the
 * publication), positions and counters.  Opened read-only: no lock, so the
 * doctor answers while an ingest writes. */
static void read_replica(doctor *d)
{
    cdc_open_options_t oo = {.create_if_missing = 0, .read_only = 1, .log = cli_log};
    cdc_store_t *st = NULL;
    cdc_error_t e = {0};
    int rc = cdc_store_open(d->db, &oo, &st, &e);
    if (!rc) rc = cdc_store_tables(st, &d->tables, &d->ntables, &e);
    if (!rc) rc = cdc_store_positions(st, &d->pos, &d->npos, &e);
    if (!rc) rc = cdc_store_stats(st, NULL, &d->total, &e);
    cdc_store_close(st);
    if (rc) snprintf(d->replica_err, sizeof d->replica_err, "%s", e.msg[0] ? e.msg : cdc_strerror(rc));
    else d->replica_open = 1;
}

static void check_replica(doctor *d)
{
    if (!d->replica_open) {
        add(d, LV_FAIL, "replica", d->db, "replica %s: cannot read it: %s", d->db, d->replica_err);
        return;
    }
    if (d->brokers || d->kcfg) {
        check_lag(d, d->pos, d->npos);
        if (d->lag >= 0) check_topics(d, d->pos, d->npos); /* brokers that answered */
    }
    check_age(d, &d->total);
}

/* ---- Output ---- */

static void print_text(const doctor *d)
{
    for (size_t i = 0; i < d->n; i++)
        cli_printf_escaped(stdout, "%-5s%s", level_name[d->c[i].level], d->c[i].text);
}

static void json_str(const char *s)
{
    cdc_json_write_string(stdout, s, strlen(s));
}

static void print_json(const doctor *d, int worst)
{
    printf("{\"status\":\"%s\",\"exit\":%d,\"checks\":[", level_name[worst], worst);
    for (size_t i = 0; i < d->n; i++) {
        const check *k = &d->c[i];
        printf("%s{\"level\":\"%s\",\"check\":\"%s\",\"subject\":", i ? "," : "", level_name[k->level], k->kind);
        if (k->subject) json_str(k->subject);
        else fputs("null", stdout);
        fputs(",\"message\":", stdout);
        json_str(k->text);
        if (k->has_value) {
            printf(",\"value\":%lld,\"unit\":", (long long)k->value);
            json_str(k->unit);
            if (k->has_limits) printf(",\"warn\":%lld,\"fail\":%lld", (long long)k->warn, (long long)k->fail);
        }
        putchar('}');
    }
    fputs("]}\n", stdout);
}

/* ---- Options ---- */

/* Reads the options into d.  Returns -1 to go on, else the exit status to
 * return: EXIT_OK after --help, EXIT_USAGE after saying what is wrong. */
static int parse_options(doctor *d, int argc, char **argv)
{
    enum { O_WWP = 256, O_WFP, O_WW, O_WF, O_LW, O_LF, O_AW, O_AF, O_TMO, O_PUB, O_SLOT, O_CONNECT, O_CONNECTOR, O_KCFG };
    static struct option lo[] = {
        {"source", 1, 0, 's'},         {"connect", 1, 0, O_CONNECT}, {"connector", 1, 0, O_CONNECTOR},
        {"slot", 1, 0, O_SLOT},        {"publication", 1, 0, O_PUB}, {"db", 1, 0, 'd'},
        {"brokers", 1, 0, 'b'},        {"wal-warn-pct", 1, 0, O_WWP}, {"wal-fail-pct", 1, 0, O_WFP},
        {"wal-warn", 1, 0, O_WW},      {"wal-fail", 1, 0, O_WF},     {"lag-warn", 1, 0, O_LW},
        {"lag-fail", 1, 0, O_LF},      {"age-warn", 1, 0, O_AW},     {"age-fail", 1, 0, O_AF},
        {"timeout-ms", 1, 0, O_TMO},   {"json", 0, 0, 'j'},          {"help", 0, 0, 'h'},
        {"kafka-config", 1, 0, O_KCFG}, {0, 0, 0, 0}};
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "s:d:b:jh", lo, NULL)) != -1) {
        int r = 0;
        switch (c) {
        case 's': d->source = optarg; break;
        case O_CONNECT: d->connect = optarg; break;
        case O_CONNECTOR: d->connector = optarg; break;
        case O_SLOT: d->slot = optarg; break;
        case O_PUB: d->publication = optarg; break;
        case 'd': d->db = optarg; break;
        case 'b': d->brokers = optarg; break;
        case O_KCFG: d->kcfg = optarg; break;
        case 'j': d->json = 1; break;
        case O_WWP: r = cli_parse_uint("doctor", "--wal-warn-pct", optarg, 1, 100, &d->wal_warn_pct); break;
        case O_WFP: r = cli_parse_uint("doctor", "--wal-fail-pct", optarg, 1, 100, &d->wal_fail_pct); break;
        case O_WW: r = cli_parse_size("doctor", "--wal-warn", optarg, &d->wal_warn); break;
        case O_WF: r = cli_parse_size("doctor", "--wal-fail", optarg, &d->wal_fail); break;
        case O_LW: r = cli_parse_uint("doctor", "--lag-warn", optarg, 0, INT64_MAX, &d->lag_warn); break;
        case O_LF: r = cli_parse_uint("doctor", "--lag-fail", optarg, 0, INT64_MAX, &d->lag_fail); break;
        case O_AW: r = cli_parse_uint("doctor", "--age-warn", optarg, 0, 100000000, &d->age_warn); break;
        case O_AF: r = cli_parse_uint("doctor", "--age-fail", optarg, 0, 100000000, &d->age_fail); break;
        case O_TMO:
            r = cli_parse_uint("doctor", "--timeout-ms", optarg, 1, 600000, &v);
            d->timeout_ms = (int)v;
            break;
        case 'h': fputs(doctor_usage, stdout); return EXIT_OK;
        default: fputs(doctor_usage, stderr); return EXIT_USAGE;
        }
        if (r) return r;
    }
    const char *why = NULL;
    if (optind != argc) why = "unexpected operand";
    else if (!d->source) why = "--source CONNINFO is required";
    else if (!!d->connect != !!d->connector) why = "--connect URL and --connector NAME go together";
    else if (d->brokers && !d->db) why = "--brokers needs --db DIR (the positions to measure the lag from)";
    else if (d->kcfg && !d->db) why = "--kafka-config needs --db DIR (the positions to measure the lag from)";
    else if (d->wal_warn_pct > d->wal_fail_pct || d->wal_warn > d->wal_fail || d->lag_warn > d->lag_fail ||
             d->age_warn > d->age_fail)
        why = "a warn threshold is above its fail threshold";
    if (why) {
        fprintf(stderr, "cdcstore doctor: %s\n", why);
        fputs(doctor_usage, stderr);
        return EXIT_USAGE;
    }
    return -1;
}

int cmd_doctor(int argc, char **argv)
{
    doctor d = {.wal_warn_pct = 50, .wal_fail_pct = 80, .wal_warn = 1ull << 30, .wal_fail = 4ull << 30,
                .lag_warn = 10000, .lag_fail = 1000000, .age_warn = 300, .age_fail = 3600,
                .timeout_ms = 5000, .lag = -1};
    int r = parse_options(&d, argc, argv);
    if (r >= 0) return r;
    /* The replica is read first (its tables are what the publication must
     * cover) and reported last, after the source it follows. */
    if (d.db) read_replica(&d);
    if (d.connector) check_connector(&d);
    check_source(&d);
    if (d.db) check_replica(&d);
    int worst = LV_OK;
    size_t count[3] = {0};
    for (size_t i = 0; i < d.n; i++) {
        count[d.c[i].level]++;
        if (d.c[i].level > worst) worst = d.c[i].level;
    }
    if (d.json) print_json(&d, worst);
    else print_text(&d);
    fflush(stdout);
    cli_note(worst == 2 ? "error" : worst == 1 ? "warn" : "info", "cdcstore doctor: %s: %zu %s, %zu OK, %zu WARN, %zu FAIL",
             level_name[worst], d.n, cli_plural(d.n, "check", "checks"), count[0], count[1], count[2]);
    for (size_t i = 0; i < d.n; i++) {
        free(d.c[i].subject);
        free(d.c[i].text);
    }
    free(d.c);
    cdc_strings_free(d.tables, d.ntables);
    cdc_positions_free(d.pos, d.npos);
    cdc_connect_status_free(d.cs);
    return worst;
}
