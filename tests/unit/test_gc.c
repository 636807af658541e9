/*
 * test_gc.c: the tombstone purge by compaction (store/gc.c).  A tombstone
 * below the horizon is physically gone after the purge (the live SST files
 * hold neither it nor a deletion marker) and a late event older than the
 * horizon is still refused while a newer one inserts; a tombstone above the
 * horizon survives; a crash after the horizon was written and before any
 * compaction keeps the rule, and RocksDB's own later compaction does the
 * removal and its count; an age (older_than_ms) picks the horizon from the
 * tombstones' ts_ms, below the rows that committed after the cutoff and
 * below a snapshot still running.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "store.h"

#define TOPIC "shop.public.orders"
#define TABLE "public.orders"

/* ---- Builders ---- */

typedef struct evs {
    cdc_record_t r[64];
    char *owned[128];
    size_t n, nowned;
    long off;
} evs;

/* A change of key id: op c/u (a row with status s), d, or r (a snapshot
 * read; snap is "true" or "last"), with its source lsn and ts_ms. */
static void ev(evs *e, const char *op, int id, const char *s, unsigned long long lsn, long long ts, const char *snap)
{
    char *row = tu_fmt("{\"order_id\":%d,\"s\":\"%s\"}", id, s ? s : "");
    char *key = tu_fmt("{\"order_id\":%d}", id);
    int del = op[0] == 'd';
    char *val = tu_fmt("{\"before\":%s,\"after\":%s,\"source\":{\"ts_ms\":%lld,\"snapshot\":\"%s\","
                       "\"schema\":\"public\",\"table\":\"orders\",\"lsn\":%llu},\"op\":\"%s\",\"ts_ms\":%lld}",
                       del ? key : "null", del ? "null" : row, ts, snap ? snap : "false", lsn, op, ts + 1);
    free(row);
    cr_assert(e->n < 64);
    e->r[e->n++] = tu_rec(TOPIC, 0, e->off++, key, val);
    e->owned[e->nowned++] = key;
    e->owned[e->nowned++] = val;
}

static void evs_clear(evs *e)
{
    for (size_t i = 0; i < e->nowned; i++) free(e->owned[i]);
    long off = e->off;
    memset(e, 0, sizeof *e);
    e->off = off;
}

static cdc_apply_result_t apply_clear(cdc_store_t *st, evs *e)
{
    cdc_apply_result_t r = tu_apply(st, e->r, e->n);
    evs_clear(e);
    return r;
}

/* Entries (deletion markers included) and deletion markers in the live SST
 * files of the "rows" family, after its memtable was flushed: what is
 * physically there. */
static void raw_rows(cdc_store_t *st, uint64_t *entries, uint64_t *deletions)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    rocksdb_flush_cf(st->db, fo, st->rows_cf, &err);
    cr_assert_null(err, "flush: %s", err);
    rocksdb_flushoptions_destroy(fo);
    *entries = *deletions = 0;
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(st->db);
    for (int i = 0; i < rocksdb_livefiles_count(lf); i++) {
        if (strcmp(rocksdb_livefiles_column_family_name(lf, i), "rows")) continue;
        *entries += rocksdb_livefiles_entries(lf, i);
        *deletions += rocksdb_livefiles_deletions(lf, i);
    }
    rocksdb_livefiles_destroy(lf);
}

static int get_deleted(cdc_store_t *st, const char *key)
{
    cdc_row_t row;
    int rc = cdc_store_get(st, TABLE, key, &row, NULL);
    if (rc == CDC_ENOTFOUND) return -1;
    cr_assert_eq(rc, 0);
    return row.deleted;
}

static cdc_stats_t stats(cdc_store_t *st)
{
    cdc_stats_t s;
    cr_assert_eq(cdc_store_stats(st, TABLE, &s, NULL), 0);
    return s;
}

/* Keys 1..3 inserted; key 1 deleted at LSN 200, key 3 at 400. */
static void seed(cdc_store_t *st, evs *e)
{
    ev(e, "c", 1, "a", 100, 1000, NULL);
    ev(e, "c", 2, "a", 110, 1100, NULL);
    ev(e, "c", 3, "a", 120, 1200, NULL);
    apply_clear(st, e);
    ev(e, "d", 1, NULL, 200, 2000, NULL);
    ev(e, "d", 3, NULL, 400, 4000, NULL);
    apply_clear(st, e);
}

/* ---- The purge ---- */

Test(gc, tombstone_below_the_horizon_is_physically_gone_and_still_blocks)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    evs e = {0};
    seed(st, &e);
    uint64_t entries, dels;
    raw_rows(st, &entries, &dels);
    cr_assert_geq(entries, 3, "before: the 3 keys are stored (%llu entries)", (unsigned long long)entries);

    cdc_gc_options_t o = {.horizon_lsn = 300};
    cdc_gc_result_t res;
    cdc_error_t err = {0};
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.purged, 1, "the tombstone below the horizon goes, the one above stays");
    cr_assert_eq(res.tables, 1);
    cr_assert_eq(res.horizon_lsn, 300);
    cr_assert_gt(res.sst_bytes_before, 0);
    cr_assert_gt(res.sst_bytes_after, 0);
    raw_rows(st, &entries, &dels);
    cr_assert_eq(entries, 2, "key 2 and key 3's tombstone are all the files hold (%llu)", (unsigned long long)entries);
    cr_assert_eq(dels, 0, "no deletion marker is left either");
    cr_assert_eq(get_deleted(st, "[1]"), -1, "key 1 is absent, not a tombstone");
    cr_assert_eq(get_deleted(st, "[3]"), 1, "key 3's tombstone (LSN 400) survives");
    cdc_stats_t s = stats(st);
    cr_assert_eq(s.tombstones_purged, 1);
    cr_assert_eq(s.rows_deleted, 1);
    cr_assert_eq(s.rows_live, 1);

    /* late events for the purged key: below its tombstone, and between the
     * tombstone and the horizon: both stale; a newer one inserts */
    ev(&e, "u", 1, "late", 150, 1500, NULL);
    cdc_apply_result_t r = apply_clear(st, &e);
    cr_assert_eq(r.stale, 1, "older than the purged tombstone: stale");
    ev(&e, "u", 1, "late2", 250, 2500, NULL);
    r = apply_clear(st, &e);
    cr_assert_eq(r.stale, 1, "older than the horizon: stale");
    ev(&e, "u", 1, "new", 500, 5000, NULL);
    r = apply_clear(st, &e);
    cr_assert_eq(r.applied, 1, "newer than the horizon: inserts");
    char *v = tu_export(st, TABLE, 0);
    cr_assert_str_eq(v, "order_id,s\n1,new\n2,a\n");
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* The horizon H promises no event older than H: events at H itself are
 * still to come and apply, whether a change streamed at H (on a key the
 * replica never held, or one whose tombstone below H was purged) or the
 * rest of a snapshot still being read at H; one at H - 1 stays stale.
 * Before, a key absent read as deleted at (e, streamed, H): the change at H
 * counted as a duplicate and the snapshot's later reads as stale, lost. */
Test(gc, events_at_the_horizon_itself_apply)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    evs e = {0};
    seed(st, &e); /* key 1 deleted at 200, key 3 at 400 */
    cdc_gc_options_t o = {.horizon_lsn = 300};
    cdc_gc_result_t res;
    cdc_error_t err = {0};
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.purged, 1);
    ev(&e, "u", 1, "late", 299, 2990, NULL);
    cdc_apply_result_t r0 = apply_clear(st, &e);
    cr_assert_eq(r0.applied, 0, "LSN 299, below the horizon: not applied");
    ev(&e, "c", 1, "at", 300, 3000, NULL);
    ev(&e, "c", 7, "at", 300, 3000, NULL);
    cdc_apply_result_t r = apply_clear(st, &e);
    cr_assert_eq(r.applied, 2, "LSN 300, at the horizon: applied (%llu duplicate, %llu stale)",
                 (unsigned long long)r.duplicate, (unsigned long long)r.stale);
    char *v = tu_export(st, TABLE, 0);
    cr_assert_str_eq(v, "order_id,s\n1,at\n2,a\n7,at\n");
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);

    /* a snapshot at LSN 1000 still being read when the horizon is set at 1000 */
    dir = tu_tmpdir();
    st = tu_open(dir);
    ev(&e, "r", 10, "s", 1000, 1000, "first");
    ev(&e, "r", 11, "s", 1000, 1000, "true");
    apply_clear(st, &e);
    o.horizon_lsn = 1000;
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    ev(&e, "r", 12, "s", 1000, 1000, "true");
    apply_clear(st, &e);
    cdc_store_close(st);
    st = tu_open(dir); /* the horizon as stored */
    ev(&e, "r", 13, "s", 1000, 1000, "last");
    r = apply_clear(st, &e);
    cr_assert_eq(r.applied, 1, "the last read applies (%llu stale)", (unsigned long long)r.stale);
    v = tu_export(st, TABLE, 0);
    cr_assert_str_eq(v, "order_id,s\n10,s\n11,s\n12,s\n13,s\n");
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

Test(gc, tombstone_above_the_horizon_survives_compaction)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    evs e = {0};
    seed(st, &e);
    uint64_t purged = 9;
    cdc_error_t err = {0};
    cr_assert_eq(cdc_store_gc(st, TABLE, 200, &purged, &err), 0, "%s", err.msg);
    cr_assert_eq(purged, 0, "LSN 200 is not below the horizon 200, LSN 400 is above");
    /* and a full compaction by RocksDB's own hand changes nothing */
    rocksdb_compact_range_cf(st->db, st->rows_cf, NULL, 0, NULL, 0);
    uint64_t entries, dels;
    raw_rows(st, &entries, &dels);
    cr_assert_eq(entries, 3);
    cr_assert_eq(get_deleted(st, "[1]"), 1);
    cr_assert_eq(get_deleted(st, "[3]"), 1);
    /* the surviving tombstones still block older updates, and newer ones apply */
    ev(&e, "u", 3, "late", 350, 3500, NULL);
    cr_assert_eq(apply_clear(st, &e).stale, 1);
    ev(&e, "u", 3, "new", 450, 4500, NULL);
    cr_assert_eq(apply_clear(st, &e).applied, 1);
    cdc_stats_t s = stats(st);
    cr_assert_eq(s.tombstones_purged, 0);
    cr_assert_eq(s.rows_deleted, 1);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* The horizon is written (synced) and published with no compaction yet;
 * the process is killed.  The reopened replica keeps the horizon; RocksDB's
 * own compaction then removes the tombstone through the filter, its count
 * reaches the counters at the close, and the rule holds throughout. */
Test(gc, crash_after_the_horizon_keeps_the_rule)
{
    char *dir = tu_tmpdir();
    /* the child uses RocksDB; this process has not yet (test_crash.c's
     * note: RocksDB's threads do not survive a fork) */
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        cdc_store_t *st = NULL;
        if (cdc_store_open(dir, NULL, &st, NULL)) _exit(10);
        evs e = {0};
        seed(st, &e);
        cdc_gc_options_t o = {.horizon_lsn = 300, .no_compact = 1};
        cdc_gc_result_t res;
        if (cdc_store_purge(st, TABLE, &o, &res, NULL) || res.horizon_lsn != 300 || res.purged) _exit(11);
        kill(getpid(), SIGKILL);
        _exit(12);
    }
    int wst;
    cr_assert_eq(waitpid(pid, &wst, 0), pid);
    cr_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "the child died of SIGKILL (status %d)", wst);

    cdc_store_t *st = tu_open(dir);
    cr_assert_eq(get_deleted(st, "[1]"), 1, "nothing was compacted before the kill");
    cr_assert(st->tables[0]->horizon_set || (st->ntables > 1 && st->tables[1]->horizon_set));
    rocksdb_compact_range_cf(st->db, st->rows_cf, NULL, 0, NULL, 0);
    uint64_t entries, dels;
    raw_rows(st, &entries, &dels);
    cr_assert_eq(entries, 2, "the filter published at open removed key 1's tombstone");
    cr_assert_eq(dels, 0);
    cr_assert_eq(get_deleted(st, "[1]"), -1);
    evs e = {.off = 100};
    ev(&e, "u", 1, "late", 250, 2500, NULL);
    cr_assert_eq(apply_clear(st, &e).stale, 1, "older than the horizon: stale");
    ev(&e, "c", 4, "new", 310, 3100, NULL);
    cr_assert_eq(apply_clear(st, &e).applied, 1, "newer than the horizon: inserts");
    cdc_store_close(st);

    st = tu_open(dir);
    cdc_stats_t s = stats(st);
    cr_assert_eq(s.tombstones_purged, 1, "the filter's count was written");
    cr_assert_eq(s.rows_deleted, 1, "key 3's tombstone");
    cr_assert_eq(s.rows_live, 2);
    ev(&e, "u", 1, "late3", 290, 2900, NULL);
    cr_assert_eq(apply_clear(st, &e).stale, 1, "the rule holds after a second reopen");
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- The horizon from time ---- */

Test(gc, older_than_picks_the_horizon)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    evs e = {0};
    ev(&e, "c", 1, "a", 100, 100, NULL);
    ev(&e, "c", 2, "a", 110, 110, NULL);
    ev(&e, "c", 3, "a", 120, 120, NULL);
    ev(&e, "c", 4, "a", 130, 130, NULL);
    apply_clear(st, &e);
    ev(&e, "d", 1, NULL, 200, 1000, NULL);  /* old */
    ev(&e, "d", 2, NULL, 260, 2000, NULL);  /* old, but above a newer row's LSN */
    ev(&e, "u", 3, "b", 250, 9000, NULL);   /* committed after the first cutoff */
    ev(&e, "d", 4, NULL, 300, 9500, NULL);  /* recent */
    apply_clear(st, &e);

    /* cutoff 5000: tombstones at 200 and 260 are older; key 3's row (LSN
     * 250) committed after it, so the horizon stops at 250 */
    cdc_gc_options_t o = {.older_than_ms = 5000, .now_ms = 10000};
    cdc_gc_result_t res;
    cdc_error_t err = {0};
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.horizon_lsn, 250);
    cr_assert_eq(res.purged, 1);
    cr_assert_eq(get_deleted(st, "[1]"), -1);
    cr_assert_eq(get_deleted(st, "[2]"), 1);

    /* cutoff 9500: key 3's change (9000) is older now; key 4's delete is
     * not: the horizon is just above the tombstone at 260 */
    o.older_than_ms = 500;
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.horizon_lsn, 261);
    cr_assert_eq(res.purged, 1);
    cr_assert_eq(get_deleted(st, "[2]"), -1);
    cr_assert_eq(get_deleted(st, "[4]"), 1);

    /* with a horizon LSN as well, the lower one wins; the horizon never
     * falls */
    o = (cdc_gc_options_t){.older_than_ms = 1, .now_ms = 100000, .horizon_lsn = 200};
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.tables, 0, "200 is below the horizon 261");
    cr_assert_eq(res.purged, 0);
    cr_assert_eq(get_deleted(st, "[4]"), 1);

    /* nothing old enough: no horizon at all */
    o = (cdc_gc_options_t){.older_than_ms = 100000, .now_ms = 100000};
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.tables, 0);
    cr_assert_eq(res.horizon_lsn, 0);

    /* neither: refused */
    o = (cdc_gc_options_t){0};
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), CDC_EINVAL);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A snapshot the replica has not seen complete: its reads may still come,
 * so a derived horizon stays below its epoch; once its last read arrived,
 * the purge goes through. */
Test(gc, older_than_holds_back_from_a_running_snapshot)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    evs e = {0};
    ev(&e, "r", 1, "a", 100, 100, "true");
    ev(&e, "r", 2, "a", 100, 100, "true");
    apply_clear(st, &e);
    ev(&e, "d", 1, NULL, 150, 1000, NULL);
    apply_clear(st, &e);
    cdc_gc_options_t o = {.older_than_ms = 1000, .now_ms = 100000};
    cdc_gc_result_t res;
    cdc_error_t err = {0};
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.horizon_lsn, 99, "below the snapshot's epoch 100");
    cr_assert_eq(res.purged, 0);
    /* a read of the snapshot still arriving is applied */
    ev(&e, "r", 3, "a", 100, 100, "true");
    cr_assert_eq(apply_clear(st, &e).applied, 1, "a snapshot read after the purge is not refused");
    ev(&e, "r", 5, "a", 100, 100, "last");
    apply_clear(st, &e);
    cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.horizon_lsn, 151);
    cr_assert_eq(res.purged, 1, "the delete at 150");
    cr_assert_eq(get_deleted(st, "[1]"), -1);
    char *v = tu_export(st, TABLE, 0);
    cr_assert_str_eq(v, "order_id,s\n2,a\n3,a\n5,a\n");
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- The automatic purge ---- */

/* The tick notes each table's newest applied LSN every after/16 (at least
 * every second) and raises the horizon to a note once it is `after` old,
 * without compacting; RocksDB's own compaction then removes what lies
 * below, and the close writes the count. */
Test(gc, automatic_purge_follows_what_was_applied_a_while_ago)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    evs e = {0};
    const int64_t after = 16000;
    cdc_gc_result_t res;
    cdc_error_t err = {0};
    ev(&e, "c", 1, "a", 100, 100, NULL);
    ev(&e, "c", 3, "a", 110, 110, NULL);
    apply_clear(st, &e);
    ev(&e, "d", 1, NULL, 200, 200, NULL);
    ev(&e, "u", 3, "b", 210, 210, NULL);
    apply_clear(st, &e);
    cr_assert_eq(cdc__store_purge_tick(st, after, 0, &res, &err), 0, "%s", err.msg); /* note: 210 */
    ev(&e, "c", 2, "a", 250, 250, NULL);
    ev(&e, "d", 2, NULL, 300, 300, NULL);
    apply_clear(st, &e);
    cr_assert_eq(cdc__store_purge_tick(st, after, 500, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(cdc__store_purge_tick(st, after, 1000, &res, &err), 0, "%s", err.msg); /* note: 300 */
    cr_assert_eq(cdc__store_purge_tick(st, after, 15999, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.tables, 0, "no note is %lld ms old yet", (long long)after);
    cr_assert_eq(cdc__store_purge_tick(st, after, 16000, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.tables, 1);
    cr_assert_eq(res.horizon_lsn, 210, "the note taken at 0");
    cr_assert_eq(res.sst_bytes_before + res.sst_bytes_after, 0, "no compaction of its own");
    cr_assert_eq(get_deleted(st, "[1]"), 1, "nothing removed before a compaction");

    rocksdb_compact_range_cf(st->db, st->rows_cf, NULL, 0, NULL, 0);
    cr_assert_eq(get_deleted(st, "[1]"), -1, "RocksDB's compaction removed the tombstone at 200");
    cr_assert_eq(get_deleted(st, "[2]"), 1, "the tombstone at 300 is above the horizon");
    ev(&e, "u", 1, "late", 205, 205, NULL);
    cr_assert_eq(apply_clear(st, &e).stale, 1, "older than the horizon: stale");
    ev(&e, "u", 1, "new", 400, 400, NULL);
    cr_assert_eq(apply_clear(st, &e).applied, 1);

    /* the note taken at 1000 (300) is next, 16 s later */
    cr_assert_eq(cdc__store_purge_tick(st, after, 16999, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.tables, 0);
    cr_assert_eq(cdc__store_purge_tick(st, after, 17000, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.horizon_lsn, 300);
    cdc_store_close(st);

    st = tu_open(dir);
    cdc_stats_t s = stats(st);
    cr_assert_eq(s.tombstones_purged, 1, "the filter's count, written at the close");
    cr_assert_eq(s.rows_deleted, 1);
    rocksdb_compact_range_cf(st->db, st->rows_cf, NULL, 0, NULL, 0);
    cr_assert_eq(get_deleted(st, "[2]"), 1, "the tombstone at 300 is not below the horizon 300");
    e.off = 100;
    ev(&e, "c", 5, "late", 280, 280, NULL);
    cr_assert_eq(apply_clear(st, &e).stale, 1, "the horizon 300 was kept: a key never seen, older than it, is stale");
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- The filter beside the apply ---- */

/* A thread compacts the rows family over and over (RocksDB's background
 * compactions, made frequent) while this thread applies batches and raises
 * the horizon after each: the filter reads only the rule sets published,
 * so the replica ends as the model says, every delete below the horizon is
 * gone or still a tombstone, late older events stay stale, and, each key
 * being deleted once and never written again, rows_deleted +
 * tombstones_purged is the number of deletes. */
typedef struct compactor {
    cdc_store_t *st;
    volatile int stop;
    int rounds;
} compactor;

static void *compact_loop(void *arg)
{
    compactor *c = arg;
    while (!c->stop) {
        rocksdb_compact_range_cf(c->st->db, c->st->rows_cf, NULL, 0, NULL, 0);
        __atomic_add_fetch(&c->rounds, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

#define ROUNDS 30
#define PER 20

Test(gc, the_filter_runs_beside_applies_and_publishes)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    compactor c = {.st = st};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, compact_loop, &c), 0);
    evs e = {0};
    cdc_error_t err = {0};
    int deletes = 0;
    for (int r = 0; r < ROUNDS; r++) {
        /* Each round waits (at most 2 s) for a compaction that began after
         * the round before: the applies got fast enough that all 30 rounds
         * once ended before the compactor's first (CI, 0.01 s), and nothing
         * then ran beside them. */
        int seen = __atomic_load_n(&c.rounds, __ATOMIC_ACQUIRE);
        for (int w = 0; w < 2000 && __atomic_load_n(&c.rounds, __ATOMIC_ACQUIRE) < seen + (r > 0 ? 2 : 1); w++)
            usleep(1000);
        unsigned long long base = 1000 + (unsigned long long)r * 1000;
        for (int k = 0; k < PER; k++) ev(&e, "c", r * PER + k, "v", base + (unsigned)k, (long long)base, NULL);
        apply_clear(st, &e);
        for (int k = 0; k < PER; k += 2, deletes++)
            ev(&e, "d", r * PER + k, NULL, base + 500 + (unsigned)k, (long long)base, NULL);
        apply_clear(st, &e);
        /* everything of the round before this one lies below the horizon */
        cdc_gc_options_t o = {.horizon_lsn = base, .no_compact = 1};
        cdc_gc_result_t res;
        cr_assert_eq(cdc_store_purge(st, TABLE, &o, &res, &err), 0, "%s", err.msg);
    }
    c.stop = 1;
    pthread_join(th, NULL);
    cr_assert_gt(c.rounds, 0);
    /* the model: odd keys live */
    char *v = tu_export(st, TABLE, 0);
    size_t lines = 0;
    for (const char *p = v; *p; p++) lines += *p == '\n';
    cr_assert_eq(lines, 1 + ROUNDS * PER / 2, "header and %d live rows:\n%s", ROUNDS * PER / 2, v);
    free(v);
    for (int k = 0; k < ROUNDS * PER; k++) {
        char key[32];
        snprintf(key, sizeof key, "[%d]", k);
        int d = get_deleted(st, key);
        if (k % 2) cr_assert_eq(d, 0, "key %d is live", k);
        else
            cr_assert(d == 1 || (d == -1 && k < (ROUNDS - 1) * PER), "key %d: a tombstone, or purged below the horizon (%d)",
                      k, d);
    }
    /* a late older update of a purged key stays stale */
    e.off = 100000;
    ev(&e, "u", 0, "late", 1100, 1100, NULL);
    cr_assert_eq(apply_clear(st, &e).stale, 1);
    cdc_store_close(st);
    st = tu_open(dir);
    cdc_stats_t s = stats(st);
    cr_assert_eq(s.rows_live, ROUNDS * PER / 2);
    cr_assert_eq(s.rows_deleted + s.tombstones_purged, (uint64_t)deletes, "%llu kept + %llu purged, %d deletes",
                 (unsigned long long)s.rows_deleted, (unsigned long long)s.tombstones_purged, deletes);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}
