/*
 * source.c: the source database's replication state, as `cdcstore doctor`
 * checks it (cdc_source_status): the logical replication slots (whether a
 * consumer reads them, and how much WAL each keeps on the server's disk),
 * max_slot_wal_keep_size (past which PostgreSQL invalidates a slot, and the
 * connector must snapshot again), and the publications with the tables they
 * cover (a table missing from the publication sends no change at all, and
 * nothing downstream can tell).  The SQL is here; libpq is behind
 * reconcile.c's plain queries (cdc__pg_*, query.h).
 *
 * Every view read is open to any role: pg_replication_slots,
 * pg_publication_tables, pg_publication, and the settings through
 * current_setting(); pg_current_wal_lsn() is public too.  On a standby the
 * WAL position is the last replayed one.
 */
#include <stdlib.h>
#include <string.h>

#include "query.h"

static const char *sql_server =
    "SELECT current_database(), current_setting('server_version'), "
    "pg_size_bytes(current_setting('max_slot_wal_keep_size'))::text";

/* The retained and unconfirmed WAL in bytes, measured from the server's
 * current position (the last replayed one on a standby). */
static const char *sql_slots =
    "WITH pos AS (SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
    "                         ELSE pg_current_wal_lsn() END AS lsn) "
    "SELECT slot_name, coalesce(plugin, ''), coalesce(database, ''), coalesce(wal_status, ''), "
    "       CASE WHEN active THEN 't' ELSE 'f' END, coalesce(active_pid, 0)::text, "
    "       coalesce(pg_wal_lsn_diff(pos.lsn, restart_lsn)::bigint, -1)::text, "
    "       coalesce(pg_wal_lsn_diff(pos.lsn, confirmed_flush_lsn)::bigint, -1)::text, "
    "       coalesce(safe_wal_size, -1)::text "
    "FROM pg_replication_slots, pos "
    "WHERE slot_type = 'logical' AND "
    "      CASE WHEN $1::text IS NULL THEN database = current_database() ELSE slot_name = $1 END "
    "ORDER BY slot_name";

static const char *sql_publications =
    "SELECT p.pubname, CASE WHEN p.puballtables THEN 't' ELSE 'f' END, t.schemaname || '.' || t.tablename "
    "FROM pg_publication p LEFT JOIN pg_publication_tables t ON t.pubname = p.pubname "
    "ORDER BY 1, 3";

static char *cell(const cdc__pgrows *r, size_t i, size_t j)
{
    const char *v = r->v[i * r->ncols + j];
    return cdc__strdup(v ? v : "");
}

static int64_t cell_i64(const cdc__pgrows *r, size_t i, size_t j)
{
    const char *v = r->v[i * r->ncols + j];
    return v ? strtoll(v, NULL, 10) : -1;
}

/* Pass 1: the server, its database and max_slot_wal_keep_size. */
static int read_server(cdc__pg *pg, cdc_source_status_t *s, cdc_error_t *err)
{
    cdc__pgrows r;
    int rc = cdc__pg_rows(pg, sql_server, 0, NULL, "reading the server settings", &r, err);
    if (rc) return rc;
    s->database = cell(&r, 0, 0);
    s->server_version = cell(&r, 0, 1);
    s->max_slot_wal_keep_size = cell_i64(&r, 0, 2);
    cdc__pgrows_free(&r);
    return 0;
}

/* Pass 2: the slots asked for. */
static int read_slots(cdc__pg *pg, const char *slot, cdc_source_status_t *s, cdc_error_t *err)
{
    cdc__pgrows r;
    const char *params[] = {slot};
    int rc = cdc__pg_rows(pg, sql_slots, 1, params, "reading pg_replication_slots", &r, err);
    if (rc) return rc;
    s->nslots = r.nrows;
    s->slots = cdc__calloc(r.nrows, sizeof *s->slots);
    for (size_t i = 0; i < r.nrows; i++) {
        cdc_source_slot_t *o = &s->slots[i];
        o->name = cell(&r, i, 0);
        o->plugin = cell(&r, i, 1);
        o->database = cell(&r, i, 2);
        o->wal_status = cell(&r, i, 3);
        o->active = r.v[i * r.ncols + 4] && r.v[i * r.ncols + 4][0] == 't';
        o->active_pid = cell_i64(&r, i, 5);
        o->retained_bytes = cell_i64(&r, i, 6);
        o->unconfirmed_bytes = cell_i64(&r, i, 7);
        o->safe_wal_size = cell_i64(&r, i, 8);
    }
    cdc__pgrows_free(&r);
    return 0;
}

/* Pass 3: the publications and their tables (one row per pair, a
 * publication without tables in one row with a NULL table). */
static int read_publications(cdc__pg *pg, cdc_source_status_t *s, cdc_error_t *err)
{
    cdc__pgrows r;
    int rc = cdc__pg_rows(pg, sql_publications, 0, NULL, "reading the publications", &r, err);
    if (rc) return rc;
    s->publications = cdc__calloc(r.nrows, sizeof *s->publications);
    cdc_source_publication_t *cur = NULL;
    for (size_t i = 0; i < r.nrows; i++) {
        const char *name = r.v[i * r.ncols];
        if (!cur || strcmp(cur->name, name ? name : "")) {
            cur = &s->publications[s->npublications++];
            cur->name = cell(&r, i, 0);
            cur->all_tables = r.v[i * r.ncols + 1] && r.v[i * r.ncols + 1][0] == 't';
            cur->tables = cdc__calloc(r.nrows, sizeof *cur->tables);
        }
        if (r.v[i * r.ncols + 2]) cur->tables[cur->ntables++] = cell(&r, i, 2);
    }
    cdc__pgrows_free(&r);
    return 0;
}

int cdc_source_status(const char *conninfo, const char *slot, int timeout_ms, cdc_source_status_t **out,
                      cdc_error_t *err)
{
    if (!conninfo || !out) return cdc__err(err, CDC_EINVAL, "cdc_source_status: bad arguments");
    *out = NULL;
    cdc__pg *pg = NULL;
    int rc = cdc__pg_connect(conninfo, "cdcstore doctor", timeout_ms, &pg, err);
    if (rc) return rc;
    cdc_source_status_t *s = cdc__calloc(1, sizeof *s);
    s->who = cdc__strdup(cdc__pg_who(pg));
    if (!(rc = read_server(pg, s, err)) && !(rc = read_slots(pg, slot, s, err)))
        rc = read_publications(pg, s, err);
    cdc__pg_close(pg);
    if (rc) {
        cdc_source_status_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void cdc_source_status_free(cdc_source_status_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nslots; i++) {
        free(s->slots[i].name);
        free(s->slots[i].plugin);
        free(s->slots[i].database);
        free(s->slots[i].wal_status);
    }
    free(s->slots);
    for (size_t i = 0; i < s->npublications; i++) {
        free(s->publications[i].name);
        cdc_strings_free(s->publications[i].tables, s->publications[i].ntables);
    }
    free(s->publications);
    free(s->who);
    free(s->database);
    free(s->server_version);
    free(s);
}
