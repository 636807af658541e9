/*
 * test_apply.c: the guarded apply and the ordering version, end to end
 * through the library API: the pipeline document's 11 events, the
 * snapshot-to-stream handover (and the document guard's failure there), a
 * re-snapshot after the slot was recreated, replays, primary-key changes,
 * tombstones, unchanged TOAST values, and a randomized test of generated
 * source histories delivered with duplicates, replays and late events.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>

#include "testutil.h"

#define T "shop.public.orders"

/* Every batch's groups are checked to be in group_cmp's order after the
 * apply's own sort (store/apply.c, sort_groups). */
__attribute__((constructor)) static void check_sort(void) { setenv("CDC_CHECK_SORT", "1", 1); }

/* ---- Builders ---- */

static char *env_t(const char *table, const char *op, const char *before, const char *after,
                   unsigned long long lsn, const char *snapshot)
{
    char *s = NULL;
    const char *dot = strchr(table, '.');
    int rc = asprintf(&s,
                      "{\"before\":%s,\"after\":%s,\"source\":{\"ts_ms\":1700000000000,\"snapshot\":\"%s\","
                      "\"schema\":\"%.*s\",\"table\":\"%s\",\"lsn\":%llu},\"op\":\"%s\",\"ts_ms\":1700000000001}",
                      before ? before : "null", after ? after : "null", snapshot ? snapshot : "false",
                      (int)(dot - table), table, dot + 1, lsn, op);
    cr_assert(rc > 0);
    return s;
}

typedef struct recs {
    cdc_record_t *r;
    char **owned;
    size_t n, nowned;
} recs;

static void recs_add(recs *rs, const char *topic, int part, long off, char *key, char *val)
{
    rs->r = realloc(rs->r, (rs->n + 1) * sizeof *rs->r);
    rs->r[rs->n++] = tu_rec(topic, part, off, key, val);
    rs->owned = realloc(rs->owned, (rs->nowned + 2) * sizeof *rs->owned);
    rs->owned[rs->nowned++] = key;
    rs->owned[rs->nowned++] = val;
}

static void recs_free(recs *rs)
{
    for (size_t i = 0; i < rs->nowned; i++) free(rs->owned[i]);
    free(rs->owned);
    free(rs->r);
    memset(rs, 0, sizeof *rs);
}

#define fmt tu_fmt

/* ---- The pipeline document's events ---- */

static const char *doc_values[11] = {
    "{\"op\":\"r\",\"after\":{\"order_id\":1,\"status\":\"paid\",\"amount\":\"25.00\"},\"source\":{\"lsn\":100}}",
    "{\"op\":\"r\",\"after\":{\"order_id\":2,\"status\":\"paid\",\"amount\":\"10.00\"},\"source\":{\"lsn\":100}}",
    "{\"op\":\"u\",\"after\":{\"order_id\":1,\"status\":\"shipped\",\"amount\":\"25.00\"},\"source\":{\"lsn\":120}}",
    "{\"op\":\"c\",\"after\":{\"order_id\":3,\"status\":\"new\",\"amount\":\"60.00\"},\"source\":{\"lsn\":130}}",
    "{\"op\":\"u\",\"after\":{\"order_id\":1,\"status\":\"shipped\",\"amount\":\"25.00\"},\"source\":{\"lsn\":120}}",
    "{\"op\":\"u\",\"after\":{\"order_id\":3,\"status\":\"paid\",\"amount\":\"60.00\"},\"source\":{\"lsn\":150}}",
    "{\"op\":\"d\",\"before\":{\"order_id\":2},\"after\":null,\"source\":{\"lsn\":160}}",
    NULL,
    "{\"op\":\"u\",\"after\":{\"order_id\":3,\"status\":\"new\",\"amount\":\"60.00\"},\"source\":{\"lsn\":140}}",
    "{\"op\":\"u\",\"after\":{\"order_id\":2,\"status\":\"refunded\",\"amount\":\"10.00\"},\"source\":{\"lsn\":155}}",
    "{\"op\":\"c\",\"after\":{\"order_id\":4,\"status\":\"paid\",\"amount\":\"15.00\"},\"source\":{\"lsn\":170}}",
};
static const int doc_keys[11] = {1, 2, 1, 3, 1, 3, 2, 2, 3, 2, 4};

#define DOC_META                              \
    "order_id,status,amount,__lsn,__deleted\n" \
    "1,shipped,25.00,120,f\n"                   \
    "2,,,160,t\n"                               \
    "3,paid,60.00,150,f\n"                      \
    "4,paid,15.00,170,f\n"

static void doc_records(recs *rs)
{
    for (int i = 0; i < 11; i++)
        recs_add(rs, T, 0, i + 1, fmt("{\"order_id\":%d}", doc_keys[i]),
                 doc_values[i] ? strdup(doc_values[i]) : NULL);
}

Test(document, three_micro_batches_give_its_table)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    doc_records(&rs);
    tu_apply(st, rs.r, 4);
    tu_apply(st, rs.r + 4, 4);
    tu_apply(st, rs.r + 8, 3);
    /* The document's table, but for what deleted order 2 holds besides its
     * key and version: the document's MERGE keeps the columns its batch
     * found stored, which depend on where the stream was cut; a tombstone
     * here keeps the key only, the same for every split (store/apply.c,
     * fold_events; document.any_batch_split). */
    char *meta = tu_export(st, "public.orders", 1);
    cr_assert_str_eq(meta, DOC_META);
    cdc_stats_t s;
    cr_assert_eq(cdc_store_stats(st, "public.orders", &s, NULL), 0);
    cr_assert_eq(s.events_read, 11);
    cr_assert_eq(s.tombstones, 1);
    cr_assert_eq(s.rows_live, 3);
    cr_assert_eq(s.rows_deleted, 1);
    cr_assert_eq(s.resurrections_blocked, 1, "offset 10 (LSN 155) must be counted as a blocked resurrection");

    /* Replay the whole topic as one batch: nothing changes. */
    cdc_apply_result_t r = tu_apply(st, rs.r, 11);
    cr_assert_eq(r.applied, 0);
    char *again = tu_export(st, "public.orders", 1);
    cr_assert_str_eq(again, meta);

    /* Reconciliation against the source rows (the document's orders table). */
    char *view = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(view, "order_id,status,amount\n1,shipped,25.00\n3,paid,60.00\n4,paid,15.00\n");
    int64_t pos;
    cr_assert_eq(cdc_store_position(st, T, 0, &pos, NULL), 0);
    cr_assert_eq(pos, 11);
    free(meta);
    free(again);
    free(view);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* Every batch split of the document's events gives the same table. */
ParameterizedTestParameters(document, any_batch_split)
{
    static int sizes[] = {1, 2, 3, 5, 7, 11};
    return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int *bs, document, any_batch_split)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    doc_records(&rs);
    for (size_t i = 0; i < rs.n; i += (size_t)*bs)
        tu_apply(st, rs.r + i, rs.n - i < (size_t)*bs ? rs.n - i : (size_t)*bs);
    /* The view, the versions and the tombstones are the same whatever the
     * split: the stored state is a function of the events alone. */
    char *view = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(view, "order_id,status,amount\n1,shipped,25.00\n3,paid,60.00\n4,paid,15.00\n");
    char *meta = tu_export(st, "public.orders", 1);
    cr_assert_str_eq(meta, DOC_META, "batch size %d", *bs);
    free(meta);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.orders", "[2]", &row, NULL), 0);
    cr_assert(row.deleted);
    cr_assert_eq(row.lsn, 160);
    cr_assert_eq(cdc_store_get(st, "public.orders", "[3]", &row, NULL), 0);
    cr_assert_eq(row.lsn, 150);
    /* A malformed key is named once in the message, after the table. */
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_get(st, "public.orders", "{bad", &row, &e), CDC_EINVAL);
    cr_assert_str_eq(e.msg, "table public.orders: key {bad: malformed JSON object");
    free(view);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- The snapshot-to-stream handover ---- */

/* The document's guard as a reference model: apply when lsn > stored lsn. */
typedef struct naive_row {
    int present;
    unsigned long long lsn;
    char status[32];
} naive_row;

static void naive_apply(naive_row *r, unsigned long long lsn, const char *status)
{
    if (r->present && !(lsn > r->lsn)) return;
    r->present = 1;
    r->lsn = lsn;
    snprintf(r->status, sizeof r->status, "%s", status);
}

static void handover_records(recs *rs)
{
    /* Snapshot at consistent point C = 500 reads order 1 as 'new'; a
     * transaction that updated order 1 at LSN 450 was still open, commits
     * after C, and is streamed after the snapshot. */
    recs_add(rs, T, 0, 0, strdup("{\"order_id\":1}"),
             env_t("public.orders", "r", NULL, "{\"order_id\":1,\"status\":\"new\"}", 500, "first"));
    recs_add(rs, T, 0, 1, strdup("{\"order_id\":2}"),
             env_t("public.orders", "r", NULL, "{\"order_id\":2,\"status\":\"new\"}", 500, "last"));
    recs_add(rs, T, 0, 2, strdup("{\"order_id\":1}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":1,\"status\":\"paid\"}", 450, "false"));
    recs_add(rs, T, 0, 3, strdup("{\"order_id\":2}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":2,\"status\":\"paid\"}", 520, "false"));
}

Test(handover, document_guard_loses_the_in_flight_update)
{
    /* Reproduces the failure first: the plain lsn guard keeps 'new'. */
    naive_row r = {0};
    naive_apply(&r, 500, "new");   /* snapshot row, LSN C */
    naive_apply(&r, 450, "paid");  /* committed after C, LSN below C */
    cr_assert_str_eq(r.status, "new", "the document's guard drops the committed update");
}

Test(handover, streamed_change_below_the_snapshot_lsn_wins)
{
    for (size_t bs = 1; bs <= 4; bs++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        handover_records(&rs);
        for (size_t i = 0; i < rs.n; i += bs) tu_apply(st, rs.r + i, rs.n - i < bs ? rs.n - i : bs);
        char *v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,status\n1,paid\n2,paid\n", "batch size %zu", bs);
        /* and a replay of everything changes nothing */
        cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
        cr_assert_eq(r.applied, 0);
        char *v2 = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v2, v);
        free(v);
        free(v2);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

Test(handover, survives_reopen_between_snapshot_and_stream)
{
    char *dir = tu_tmpdir();
    recs rs = {0};
    handover_records(&rs);
    cdc_store_t *st = tu_open(dir);
    tu_apply(st, rs.r, 2);
    cdc_store_close(st);
    st = tu_open(dir); /* the epoch mark must come back from the replica */
    tu_apply(st, rs.r + 2, 2);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,status\n1,paid\n2,paid\n");
    free(v);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- Incremental snapshots ---- */

/* An envelope with source.sequence = [commit, lsn]: commit 0 writes null;
 * an incremental read has no lsn and its sequence carries lsn_h. */
static char *env_seq(const char *op, const char *row, unsigned long long lsn, const char *snapshot,
                     unsigned long long commit)
{
    int incremental = !strcmp(snapshot, "incremental");
    char c[32] = "null", l[32] = "null";
    if (commit) snprintf(c, sizeof c, "\\\"%llu\\\"", commit);
    if (!incremental) snprintf(l, sizeof l, "%llu", lsn);
    int del = !strcmp(op, "d");
    return fmt("{\"before\":%s,\"after\":%s,\"source\":{\"ts_ms\":1700000000000,\"snapshot\":\"%s\","
               "\"schema\":\"public\",\"table\":\"orders\",\"lsn\":%s,\"sequence\":\"[%s,\\\"%llu\\\"]\"},"
               "\"op\":\"%s\",\"ts_ms\":1700000000001}",
               del ? row : "null", del ? "null" : row, snapshot, l, c, lsn, op);
}

/* A small table on a topic of two partitions: the snapshot at C = 500 has
 * its reads on partition 0 only.  On partition 1, order 3 inserted by a
 * transaction open during the snapshot (LSN 450), the second the stream
 * delivers after it (the first committed at 510: commit position 510),
 * must survive the completed snapshot's floor; order 4, changed through an
 * older slot (LSN 300, commit position 290) and absent from the snapshot,
 * must not. */
Test(handover, in_flight_change_on_a_partition_without_snapshot_reads)
{
    for (size_t bs = 1; bs <= 4; bs++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        recs_add(&rs, T, 1, 0, strdup("{\"order_id\":4}"),
                 env_seq("c", "{\"order_id\":4,\"status\":\"old\"}", 300, "false", 290));
        recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"),
                 env_t("public.orders", "r", NULL, "{\"order_id\":1,\"status\":\"new\"}", 500, "first"));
        recs_add(&rs, T, 0, 1, strdup("{\"order_id\":2}"),
                 env_t("public.orders", "r", NULL, "{\"order_id\":2,\"status\":\"new\"}", 500, "last"));
        recs_add(&rs, T, 1, 1, strdup("{\"order_id\":3}"),
                 env_seq("c", "{\"order_id\":3,\"status\":\"in flight\"}", 450, "false", 510));
        for (size_t i = 0; i < rs.n; i += bs) tu_apply(st, rs.r + i, rs.n - i < bs ? rs.n - i : bs);
        char *v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,status\n1,new\n2,new\n3,in flight\n", "batch size %zu", bs);
        cdc_apply_result_t r = tu_apply(st, rs.r, rs.n); /* a replay changes nothing */
        cr_assert_eq(r.applied, 0);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

#define ROW1(s) "{\"order_id\":1,\"status\":\"" s "\"}"

/* Order 1 is read by the initial snapshot at C = 100 as 'new'.  Transaction
 * A updates it to 'paid' at LSN 150 and stays open.  An incremental snapshot
 * window opens (low watermark committed at 160), its SELECT reads order 1 as
 * 'new' (A has not committed), and the high watermark's transaction follows:
 * the read is emitted with sequence [160, 170].  A commits after the window:
 * its update arrives after the read with LSN 150 and sequence [171, 150]. */
static void window_records(recs *rs)
{
    recs_add(rs, T, 0, 0, strdup("{\"order_id\":1}"), env_seq("r", ROW1("new"), 100, "last", 0));
    recs_add(rs, T, 0, 1, strdup("{\"order_id\":1}"), env_seq("r", ROW1("new"), 170, "incremental", 160));
    recs_add(rs, T, 0, 2, strdup("{\"order_id\":1}"), env_seq("u", ROW1("paid"), 150, "false", 171));
}

Test(incremental, plain_lsn_guard_loses_the_update_committed_after_the_window)
{
    /* The read stands for the table as of commit 160 (its lsn, by any rule
     * that gives it one from the window); the update's LSN is 150. */
    naive_row r = {0};
    naive_apply(&r, 100, "new");
    naive_apply(&r, 160, "new");
    naive_apply(&r, 150, "paid");
    cr_assert_str_eq(r.status, "new", "the plain lsn guard drops the committed update");
}

Test(incremental, update_committed_after_the_window_wins_at_every_batch_size)
{
    for (size_t bs = 1; bs <= 3; bs++) {
        for (int reopen = 0; reopen < 2; reopen++) {
            char *dir = tu_tmpdir();
            cdc_store_t *st = tu_open(dir);
            recs rs = {0};
            window_records(&rs);
            for (size_t i = 0; i < rs.n; i += bs) {
                cdc_apply_result_t r = tu_apply(st, rs.r + i, rs.n - i < bs ? rs.n - i : bs);
                cr_assert_eq(r.dead_letters, 0);
                if (reopen) { /* the stored version must keep its commit order */
                    cdc_store_close(st);
                    st = tu_open(dir);
                }
            }
            char *v = tu_export(st, "public.orders", 0);
            cr_assert_str_eq(v, "order_id,status\n1,paid\n", "batch size %zu, reopen %d", bs, reopen);
            cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
            cr_assert_eq(r.applied, 0, "a replay changes nothing");
            free(v);
            recs_free(&rs);
            cdc_store_close(st);
            tu_rmrf(dir);
            free(dir);
        }
    }
}

/* The read arrives late (redelivered after a Connect restart, at a new
 * offset): it is older than the changes committed after its window, and a
 * delete stays a delete. */
Test(incremental, a_late_read_neither_overwrites_nor_resurrects)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    window_records(&rs);
    recs_add(&rs, T, 0, 3, strdup("{\"order_id\":2}"),
             env_seq("c", "{\"order_id\":2,\"status\":\"new\"}", 180, "false", 175));
    recs_add(&rs, T, 0, 4, strdup("{\"order_id\":2}"), env_seq("d", "{\"order_id\":2}", 190, "false", 185));
    /* redelivered reads of both keys from the window at 160 */
    recs_add(&rs, T, 0, 5, strdup("{\"order_id\":1}"), env_seq("r", ROW1("new"), 170, "incremental", 160));
    recs_add(&rs, T, 0, 6, strdup("{\"order_id\":2}"),
             env_seq("r", "{\"order_id\":2,\"status\":\"new\"}", 170, "incremental", 160));
    cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 0);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,status\n1,paid\n");
    free(v);
    /* a later window reads order 1 again: newer than everything before it */
    recs more = {0};
    recs_add(&more, T, 0, 7, strdup("{\"order_id\":1}"), env_seq("r", ROW1("refunded"), 200, "incremental", 195));
    r = tu_apply(st, more.r, more.n);
    cr_assert_eq(r.applied, 1);
    v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,status\n1,refunded\n");
    free(v);
    recs_free(&more);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* With a read-only watermark the window closes at the first change of a
 * transaction past it: that change carries the same commit position as the
 * read, and the read (taken before) must not win over it, in either order. */
Test(incremental, read_comes_before_the_changes_of_its_commit)
{
    for (int order = 0; order < 2; order++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        char *rd = env_seq("r", ROW1("new"), 300, "incremental", 300);
        char *ch = env_seq("u", ROW1("paid"), 290, "false", 300);
        recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), order ? ch : rd);
        recs_add(&rs, T, 0, 1, strdup("{\"order_id\":1}"), order ? rd : ch);
        tu_apply(st, rs.r, 1);
        tu_apply(st, rs.r + 1, 1);
        char *v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,status\n1,paid\n", "order %d", order);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* A change without a commit position (the first transaction after the
 * connector starts: sequence [null, lsn]) against a read: by lsn, which is
 * right for every change that committed before the read's commit. */
Test(incremental, change_without_commit_position_compares_by_lsn)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), env_seq("c", ROW1("new"), 120, "false", 0));
    recs_add(&rs, T, 0, 1, strdup("{\"order_id\":1}"), env_seq("r", ROW1("read"), 170, "incremental", 160));
    /* a replay of the first change after the read is stale */
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":1}"), env_seq("c", ROW1("new"), 120, "false", 0));
    cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 0);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,status\n1,read\n");
    free(v);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* An incremental read without a commit position cannot be ordered: a dead
 * letter naming why, never a guess. */
Test(incremental, read_without_commit_position_is_a_dead_letter)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), env_seq("r", ROW1("x"), 170, "incremental", 0));
    cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 1);
    cr_assert_eq(r.applied, 0);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- Schema changes ---- */

/* fmt with one int used twice (the builders free nothing of their args) */
static char fmtbuf[8][128];
static int fmtslot;
static const char *fmt_static(int k, const char *f)
{
    char *b = fmtbuf[fmtslot++ % 8];
    snprintf(b, sizeof fmtbuf[0], f, k, k);
    return b;
}

static void schema_records(recs *rs)
{
    long o = 0;
    /* snapshot at 100: id, v */
    for (int k = 1; k <= 3; k++)
        recs_add(rs, T, 0, o++, fmt("{\"order_id\":%d}", k),
                 env_t("public.orders", "r", NULL, fmt_static(k, "{\"order_id\":%d,\"v\":\"a%d\"}"), 100,
                       k == 3 ? "last" : "true"));
    /* ALTER TABLE ADD COLUMN region; order 1 updated after it, order 4 created */
    recs_add(rs, T, 0, o++, strdup("{\"order_id\":1}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":1,\"v\":\"b1\",\"region\":\"eu\"}", 200, "false"));
    recs_add(rs, T, 0, o++, strdup("{\"order_id\":4}"),
             env_t("public.orders", "c", NULL, "{\"order_id\":4,\"v\":\"a4\",\"region\":null}", 210, "false"));
    /* a late change from before the ALTER (order 2 at 150): no region, and
     * it must not make region look dropped */
    recs_add(rs, T, 0, o++, strdup("{\"order_id\":2}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":2,\"v\":\"b2\"}", 150, "false"));
}

Test(schema, added_column_reads_as_unknown_for_older_rows_and_follows_late_events)
{
    for (size_t bs = 1; bs <= 6; bs += 5) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        schema_records(&rs);
        for (size_t i = 0; i < rs.n; i += bs) tu_apply(st, rs.r + i, rs.n - i < bs ? rs.n - i : bs);
        char *v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,v,region\n1,b1,eu\n2,b2,\n3,a3,\n4,a4,\n", "batch size %zu", bs);
        free(v);
        /* rows 2 and 3 were written before region existed: unknown, not NULL */
        cdc_row_t row;
        cr_assert_eq(cdc_store_get(st, "public.orders", "[3]", &row, NULL), 0);
        cr_assert_eq(row.unknown, 1);
        cr_assert_eq(cdc_store_get(st, "public.orders", "[4]", &row, NULL), 0);
        cr_assert_eq(row.unknown, 0, "order 4's region is a real NULL");
        char **cols;
        size_t nc;
        cr_assert_eq(cdc_store_unknown_columns(st, "public.orders", &cols, &nc, NULL), 0);
        cr_assert_eq(nc, 1);
        cr_assert_str_eq(cols[0], "region");
        cdc_strings_free(cols, nc);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

Test(schema, dropped_column_leaves_the_export_and_comes_back_when_added_again)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    schema_records(&rs);
    long o = (long)rs.n;
    /* ALTER TABLE DROP COLUMN region: the next change lacks it */
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":3}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":3,\"v\":\"b3\"}", 300, "false"));
    tu_apply(st, rs.r, rs.n);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,v\n1,b1\n2,b2\n3,b3\n4,a4\n");
    free(v);
    /* a late change from before the drop carries region: still dropped */
    recs late = {0};
    recs_add(&late, T, 0, o++, strdup("{\"order_id\":4}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":4,\"v\":\"c4\",\"region\":\"us\"}", 250, "false"));
    tu_apply(st, late.r, late.n);
    v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,v\n1,b1\n2,b2\n3,b3\n4,c4\n");
    free(v);
    /* the history survives a reopen */
    cdc_store_close(st);
    st = tu_open(dir);
    v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,v\n1,b1\n2,b2\n3,b3\n4,c4\n");
    free(v);
    const char *const *names;
    size_t n;
    cr_assert_eq(cdc_store_columns(st, "public.orders", &names, &n, NULL), 0);
    cr_assert_eq(n, 2);
    /* ADD COLUMN region again: back, with the values of rows changed since
     * (rows untouched since keep what they held before the drop: a limit
     * written in store/store.c, "Column history"; not asserted here) */
    recs again = {0};
    recs_add(&again, T, 0, o++, strdup("{\"order_id\":2}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":2,\"v\":\"c2\",\"region\":\"ap\"}", 400, "false"));
    tu_apply(st, again.r, again.n);
    v = tu_export(st, "public.orders", 0);
    cr_assert(!strncmp(v, "order_id,v,region\n", 18), "%s", v);
    cr_assert(strstr(v, "\n2,c2,ap\n"), "%s", v);
    cr_assert(strstr(v, "\n3,b3,\n"), "%s", v);
    free(v);
    recs_free(&rs);
    recs_free(&late);
    recs_free(&again);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* The first change the replica sees is from after a DROP COLUMN (another
 * partition delivered it first); the change from before the drop, with the
 * column, arrives later: the column stays dropped, whatever the batches. */
Test(schema, column_first_seen_in_a_change_older_than_the_newest_stays_dropped)
{
    for (size_t bs = 1; bs <= 2; bs++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        recs_add(&rs, T, 1, 0, strdup("{\"order_id\":2}"),
                 env_t("public.orders", "u", NULL, "{\"order_id\":2,\"v\":\"after drop\"}", 300, "false"));
        recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"),
                 env_t("public.orders", "c", NULL, "{\"order_id\":1,\"v\":\"x\",\"legacy\":\"L1\"}", 100,
                       "false"));
        for (size_t i = 0; i < rs.n; i += bs) tu_apply(st, rs.r + i, rs.n - i < bs ? rs.n - i : bs);
        char *v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,v\n1,x\n2,after drop\n", "batch size %zu", bs);
        free(v);
        cdc_store_close(st); /* and after a reopen */
        st = tu_open(dir);
        v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,v\n1,x\n2,after drop\n", "batch size %zu, reopened", bs);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* An envelope with a schema: fields is the JSON of the after struct's
 * fields, after the row. */
static char *env_schema(const char *op, const char *fields, const char *after, unsigned long long lsn,
                        const char *snapshot)
{
    return fmt("{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":%s,\"optional\":true,"
               "\"field\":\"after\"}]},\"payload\":{\"before\":null,\"after\":%s,\"source\":{\"ts_ms\":1,"
               "\"snapshot\":\"%s\",\"schema\":\"public\",\"table\":\"orders\",\"lsn\":%llu},\"op\":\"%s\"}}",
               fields, after, snapshot, lsn, op);
}

#define F_ID "{\"type\":\"int32\",\"optional\":false,\"field\":\"order_id\"}"
#define F_V(t) "{\"type\":\"" t "\",\"optional\":true,\"field\":\"v\"}"

/* ALTER TABLE ADD COLUMN region text DEFAULT 'eu', with schemas: rows not
 * touched since read the default, as at the source; a column added without
 * a default reads NULL, known, not unknown. */
Test(schema, added_column_takes_the_schema_default)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    long o = 0;
    for (int k = 1; k <= 2; k++)
        recs_add(&rs, T, 0, o++, fmt("{\"order_id\":%d}", k),
                 env_schema("r", "[" F_ID "," F_V("int32") "]", fmt_static(k, "{\"order_id\":%d,\"v\":%d}"), 100,
                            k == 2 ? "last" : "true"));
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
             env_schema("u",
                        "[" F_ID "," F_V("int32") ",{\"type\":\"string\",\"optional\":true,\"default\":\"eu\","
                        "\"field\":\"region\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"extra\"}]",
                        "{\"order_id\":1,\"v\":5,\"region\":\"us\",\"extra\":7}", 200, "false"));
    cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 0);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,v,region,extra\n1,5,us,7\n2,2,eu,\n");
    free(v);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.orders", "[2]", &row, NULL), 0);
    cr_assert_eq(row.unknown, 0, "both defaults are known from the schema");
    char **cols;
    size_t nc;
    cr_assert_eq(cdc_store_unknown_columns(st, "public.orders", &cols, &nc, NULL), 0);
    cr_assert_eq(nc, 0);
    cdc_strings_free(cols, nc);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A RENAME COLUMN (v to w, whose schema gives a default): rows untouched
 * since hold their value under the old name at the source, so w reads
 * unknown in them (NULL, counted), not the default, at every batch size;
 * a column added while v still existed (and v dropped later) keeps its
 * schema default for the rows before it. */
Test(schema, a_renamed_column_reads_unknown_not_its_default)
{
    const char *renamed = "order_id,u,w\n1,y,1\n2,x,\n3,x,\n";
    const char *added = "order_id,u,a\n1,y,5\n2,x,9\n3,x,9\n";
    for (int bs = 1; bs <= 5; bs++) {
        for (int kase = 0; kase < 2; kase++) {
            char *dir = tu_tmpdir();
            cdc_store_t *st = tu_open(dir);
            recs rs = {0};
            long o = 0;
            for (int k = 1; k <= 3; k++)
                recs_add(&rs, T, 0, o++, fmt("{\"order_id\":%d}", k),
                         env_schema("r",
                                    "[" F_ID ",{\"type\":\"int32\",\"optional\":true,\"default\":7,\"field\":\"v\"},"
                                    "{\"type\":\"string\",\"optional\":true,\"field\":\"u\"}]",
                                    fmt_static(k, "{\"order_id\":%d,\"v\":%d,\"u\":\"x\"}"), 100,
                                    k == 3 ? "last" : "true"));
            if (kase == 0) /* RENAME COLUMN v TO w; UPDATE ... id 1 */
                recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
                         env_schema("u",
                                    "[" F_ID ",{\"type\":\"int32\",\"optional\":true,\"default\":7,\"field\":\"w\"},"
                                    "{\"type\":\"string\",\"optional\":true,\"field\":\"u\"}]",
                                    "{\"order_id\":1,\"w\":1,\"u\":\"y\"}", 200, "false"));
            else { /* ADD COLUMN a DEFAULT 9; UPDATE id 1; DROP COLUMN v; UPDATE id 1 */
                recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
                         env_schema("u",
                                    "[" F_ID ",{\"type\":\"int32\",\"optional\":true,\"default\":7,\"field\":\"v\"},"
                                    "{\"type\":\"string\",\"optional\":true,\"field\":\"u\"},"
                                    "{\"type\":\"int32\",\"optional\":true,\"default\":9,\"field\":\"a\"}]",
                                    "{\"order_id\":1,\"v\":1,\"u\":\"x\",\"a\":4}", 200, "false"));
                recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
                         env_schema("u",
                                    "[" F_ID ",{\"type\":\"string\",\"optional\":true,\"field\":\"u\"},"
                                    "{\"type\":\"int32\",\"optional\":true,\"default\":9,\"field\":\"a\"}]",
                                    "{\"order_id\":1,\"u\":\"y\",\"a\":5}", 300, "false"));
            }
            for (size_t i = 0; i < rs.n; i += (size_t)bs) {
                size_t n = rs.n - i < (size_t)bs ? rs.n - i : (size_t)bs;
                cdc_apply_result_t r = tu_apply(st, rs.r + i, n);
                cr_assert_eq(r.dead_letters, 0);
            }
            char *v = tu_export(st, "public.orders", 0);
            cr_assert_str_eq(v, kase == 0 ? renamed : added, "case %d, batches of %d: %s", kase, bs, v);
            free(v);
            cdc_row_t row;
            cr_assert_eq(cdc_store_get(st, "public.orders", "[2]", &row, NULL), 0);
            cr_assert_eq(row.unknown, kase == 0 ? 1u : 0u, "case %d, batches of %d", kase, bs);
            char **cols;
            size_t nc;
            cr_assert_eq(cdc_store_unknown_columns(st, "public.orders", &cols, &nc, NULL), 0);
            cr_assert_eq(nc, kase == 0 ? 1u : 0u, "case %d, batches of %d: %zu columns of unknown value", kase, bs, nc);
            if (nc) cr_assert_str_eq(cols[0], "w");
            cdc_strings_free(cols, nc);
            recs_free(&rs);
            cdc_store_close(st);
            tu_rmrf(dir);
            free(dir);
        }
    }
}

/* A table whose rows were all deleted keeps the columns its changes had,
 * at every batch size (in one batch the fold skips a change its delete
 * follows: its columns are noted all the same), and its deleted rows, as
 * --meta exports them, hold NULL in every column but the key: not unknown
 * (no warning), and not a schema default they never held. */
Test(schema, deleted_rows_keep_the_columns_and_read_null)
{
    for (size_t bs = 1; bs <= 4; bs++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        long o = 0;
        recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
                 env_schema("c",
                            "[" F_ID "," F_V("int32") ",{\"type\":\"string\",\"optional\":true,\"default\":\"eu\","
                            "\"field\":\"region\"}]",
                            "{\"order_id\":1,\"v\":5,\"region\":\"us\"}", 200, "false"));
        recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
                 env_t("public.orders", "d", "{\"order_id\":1,\"v\":null,\"region\":null}", NULL, 300, "false"));
        recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"), NULL);
        for (size_t i = 0; i < rs.n; i += bs) tu_apply(st, rs.r + i, rs.n - i < bs ? rs.n - i : bs);
        char *v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,v,region\n", "batch size %zu", bs);
        free(v);
        v = tu_export(st, "public.orders", 1);
        cr_assert_str_eq(v, "order_id,v,region,__lsn,__deleted\n1,,,300,t\n", "batch size %zu", bs);
        free(v);
        cdc_row_t row;
        cdc_iter_options_t io = {.include_deleted = 1};
        cdc_iter_t *it;
        cr_assert_eq(cdc_iter_open(st, "public.orders", &io, &it, NULL), 0);
        cr_assert_eq(cdc_iter_next(it, &row, NULL), 1);
        cr_assert(row.deleted);
        cr_assert_eq(row.unknown, 0, "batch size %zu: a deleted row's columns are not unknown", bs);
        cdc_iter_close(it);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* ---- Changed key ranges (store/changes.c) ---- */

typedef struct ranges_seen {
    int n;
    char lo[8][16], hi[8][16];
    size_t lol[8], hil[8];
} ranges_seen;

static int take_range(void *opaque, const char *lo, size_t lol, const char *hi, size_t hil)
{
    ranges_seen *r = opaque;
    cr_assert_lt(r->n, 8);
    cr_assert(lol <= 16 && hil <= 16);
    memcpy(r->lo[r->n], lo, lol);
    memcpy(r->hi[r->n], hi, hil);
    r->lol[r->n] = lol;
    r->hil[r->n++] = hil;
    return 0;
}

static ranges_seen changed_since(cdc_store_t *st, const cdc_change_point_t *p, int *all)
{
    ranges_seen r = {0};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_changed_since(st, "public.orders", p, take_range, &r, all, &e), 0, "%s", e.msg);
    return r;
}

/* The encoded key of one integer (store/codec.c). */
static void int_key(long long v, char out[9])
{
    uint64_t u = (uint64_t)v ^ (1ULL << 63);
    out[0] = 0x20;
    for (int i = 0; i < 8; i++) out[1 + i] = (char)(u >> (56 - 8 * i));
}

Test(changes, buckets_of_written_keys_since_a_point)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    for (int k = 1; k <= 3; k++)
        recs_add(&rs, T, 0, k, fmt("{\"order_id\":%d}", k * 50000),
                 env_t("public.orders", "c", NULL, fmt_static(k * 50000, "{\"order_id\":%d,\"v\":\"a%d\"}"),
                       100 + (unsigned long long)k, "false"));
    tu_apply(st, rs.r, rs.n);
    cdc_change_point_t p0, p1;
    cr_assert_eq(cdc_store_change_point(st, &p0, NULL), 0);
    cr_assert_neq(p0.history, 0);
    int all;
    changed_since(st, &p0, &all);
    cr_assert_eq(all, 0);
    /* 50,000 and 100,000 lie in buckets [0, 65,536) and [65,536, 131,072) */
    recs_add(&rs, T, 0, 4, strdup("{\"order_id\":100000}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":100000,\"v\":\"b\"}", 200, "false"));
    recs_add(&rs, T, 0, 5, strdup("{\"order_id\":50000}"),
             env_t("public.orders", "d", "{\"order_id\":50000}", NULL, 201, "false"));
    tu_apply(st, rs.r + 3, 2);
    ranges_seen r = changed_since(st, &p0, &all);
    cr_assert_eq(all, 0);
    cr_assert_eq(r.n, 2);
    char k[9];
    int_key(0, k);
    cr_assert(r.lol[0] == 7 && !memcmp(r.lo[0], k, 7), "the bucket of 50,000 starts at 0");
    int_key(65536, k);
    cr_assert(r.hil[0] == 7 && !memcmp(r.hi[0], k, 7), "and ends at 65,536");
    cr_assert(r.lol[1] == 7 && !memcmp(r.lo[1], k, 7));
    int_key(131072, k);
    cr_assert(r.hil[1] == 7 && !memcmp(r.hi[1], k, 7));
    /* a stale event writes nothing: no bucket */
    cr_assert_eq(cdc_store_change_point(st, &p1, NULL), 0);
    cr_assert_gt(p1.stamp, p0.stamp);
    recs_add(&rs, T, 0, 6, strdup("{\"order_id\":150000}"),
             env_t("public.orders", "u", NULL, "{\"order_id\":150000,\"v\":\"old\"}", 50, "false"));
    tu_apply(st, rs.r + 5, 1);
    r = changed_since(st, &p1, &all);
    cr_assert_eq(all, 0);
    cr_assert_eq(r.n, 0);
    /* a point of no line of this replica, or ahead of it: not known */
    cdc_change_point_t other = {p1.history ^ 1, 1}, ahead = {p1.history, p1.stamp + 1000000000};
    changed_since(st, &other, &all);
    cr_assert_eq(all, 1);
    changed_since(st, &ahead, &all);
    cr_assert_eq(all, 1);
    /* a reopen starts a new line; the old point still answers */
    cdc_store_close(st);
    st = tu_open(dir);
    cdc_change_point_t p2;
    cr_assert_eq(cdc_store_change_point(st, &p2, NULL), 0);
    cr_assert_neq(p2.history, p1.history);
    cr_assert_gt(p2.stamp, p1.stamp);
    r = changed_since(st, &p0, &all);
    cr_assert_eq(all, 0);
    cr_assert_eq(r.n, 2);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- The key journal ---- */

typedef struct keys_seen {
    long long id[64];
    int n;
} keys_seen;

static int take_key(void *opaque, const char *k, size_t kl)
{
    keys_seen *s = opaque;
    cr_assert_eq(kl, 9, "an integer key is 9 bytes");
    uint64_t u = 0;
    for (int i = 1; i < 9; i++) u = u << 8 | (unsigned char)k[i];
    long long id = (long long)(u ^ (1ULL << 63));
    for (int i = 0; i < s->n; i++)
        if (s->id[i] == id) return 0;
    cr_assert_lt(s->n, 64);
    s->id[s->n++] = id;
    return 0;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* The distinct keys since p, sorted, as "1,5,..." ("all" when not known). */
static const char *changed_keys(cdc_store_t *st, const cdc_change_point_t *p)
{
    static char out[1024];
    keys_seen s = {0};
    int all = -1;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_changed_keys(st, "public.orders", p, take_key, &s, &all, &e), 0, "%s", e.msg);
    if (all) return "all";
    qsort(s.id, (size_t)s.n, sizeof s.id[0], cmp_ll);
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < s.n; i++) o += (size_t)snprintf(out + o, sizeof out - o, "%s%lld", i ? "," : "", s.id[i]);
    return out;
}

static void order_event(recs *rs, int off, const char *op, int id, unsigned long long lsn)
{
    char key[64], row[128];
    snprintf(key, sizeof key, "{\"order_id\":%d}", id);
    snprintf(row, sizeof row, "{\"order_id\":%d,\"v\":\"%s%llu\"}", id, op, lsn);
    recs_add(rs, T, 0, off, strdup(key),
             env_t("public.orders", op, op[0] == 'd' ? key : NULL, op[0] == 'd' ? NULL : row, lsn, "false"));
}

/* Every key a batch writes is in the journal under the batch's stamp:
 * updates, deletes, creates; a stale event writes nothing and is not
 * there; the answer survives a reopen, and is "all" for a point of no
 * line of this replica or before the journal's start. */
Test(changes, journal_lists_the_keys_written_since_a_point)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    for (int k = 1; k <= 5; k++) order_event(&rs, k, "c", k, 100 + (unsigned long long)k);
    tu_apply(st, rs.r, rs.n);
    cdc_change_point_t p0, p1, p2;
    cr_assert_eq(cdc_store_change_point(st, &p0, NULL), 0);
    cr_assert_str_eq(changed_keys(st, &p0), "");
    size_t at = rs.n;
    order_event(&rs, 10, "u", 3, 200);
    order_event(&rs, 11, "d", 5, 201);
    order_event(&rs, 12, "u", 2, 50); /* older than the stored 102: stale */
    order_event(&rs, 13, "c", 100000, 202);
    tu_apply(st, rs.r + at, rs.n - at);
    cr_assert_str_eq(changed_keys(st, &p0), "3,5,100000");
    cr_assert_eq(cdc_store_change_point(st, &p1, NULL), 0);
    cr_assert_str_eq(changed_keys(st, &p1), "");
    at = rs.n;
    order_event(&rs, 14, "u", 3, 300);
    order_event(&rs, 15, "u", 4, 301);
    tu_apply(st, rs.r + at, rs.n - at);
    cr_assert_str_eq(changed_keys(st, &p1), "3,4");
    cr_assert_str_eq(changed_keys(st, &p0), "3,4,5,100000");
    cdc_store_close(st);
    st = tu_open(dir);
    cr_assert_str_eq(changed_keys(st, &p0), "3,4,5,100000", "the journal survives a reopen");
    cr_assert_str_eq(changed_keys(st, &p1), "3,4");
    cdc_change_point_t other = {p1.history ^ 1, p1.stamp};
    cr_assert_str_eq(changed_keys(st, &other), "all");
    /* a read-only open answers too */
    cdc_store_close(st);
    cdc_open_options_t ro = {.read_only = 1};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_open(dir, &ro, &st, &e), 0, "%s", e.msg);
    cr_assert_str_eq(changed_keys(st, &p1), "3,4");
    cdc_store_close(st);
    st = tu_open(dir);
    cr_assert_eq(cdc_store_change_point(st, &p2, NULL), 0);
    cr_assert_str_eq(changed_keys(st, &p2), "");
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A journal holding more keys than max(its minimum, the table's live rows)
 * is reset: a point before the reset is answered "all", a later one
 * exactly. */
Test(changes, journal_past_its_cap_starts_again)
{
    setenv("CDC_JOURNAL_MIN_CAP", "4", 1);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    for (int k = 1; k <= 3; k++) order_event(&rs, k, "c", k, 100 + (unsigned long long)k);
    tu_apply(st, rs.r, rs.n);
    cdc_change_point_t p0, p1;
    cr_assert_eq(cdc_store_change_point(st, &p0, NULL), 0);
    size_t at = rs.n;
    order_event(&rs, 10, "u", 1, 200);
    tu_apply(st, rs.r + at, rs.n - at);
    cr_assert_str_eq(changed_keys(st, &p0), "1", "4 keys journaled, at the cap");
    at = rs.n;
    order_event(&rs, 11, "u", 2, 201);
    tu_apply(st, rs.r + at, rs.n - at);
    cr_assert_str_eq(changed_keys(st, &p0), "all", "5 keys: the journal started again");
    cr_assert_eq(cdc_store_change_point(st, &p1, NULL), 0);
    at = rs.n;
    order_event(&rs, 12, "u", 3, 202);
    tu_apply(st, rs.r + at, rs.n - at);
    cr_assert_str_eq(changed_keys(st, &p1), "3");
    cdc_store_close(st);
    st = tu_open(dir);
    cr_assert_str_eq(changed_keys(st, &p0), "all");
    cr_assert_str_eq(changed_keys(st, &p1), "3");
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* Text keys: a bucket is the tag and the first two bytes. */
Test(changes, text_keys_by_their_first_two_bytes)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    const char *ids[] = {"aa1", "ab2", "ab3", "zz"};
    for (int k = 0; k < 4; k++) {
        char *after = fmt("{\"sku\":\"%s\",\"v\":%d}", ids[k], k);
        recs_add(&rs, T, 0, k, fmt("{\"sku\":\"%s\"}", ids[k]),
                 env_t("public.orders", "c", NULL, after, 100 + (unsigned long long)k, "false"));
        free(after);
    }
    tu_apply(st, rs.r, rs.n);
    cdc_change_point_t p;
    cr_assert_eq(cdc_store_change_point(st, &p, NULL), 0);
    recs_add(&rs, T, 0, 4, strdup("{\"sku\":\"ab3\"}"),
             env_t("public.orders", "u", NULL, "{\"sku\":\"ab3\",\"v\":9}", 200, "false"));
    recs_add(&rs, T, 0, 5, strdup("{\"sku\":\"ab2\"}"),
             env_t("public.orders", "d", "{\"sku\":\"ab2\"}", NULL, 201, "false"));
    tu_apply(st, rs.r + 4, 2);
    int all;
    ranges_seen r = changed_since(st, &p, &all);
    cr_assert_eq(all, 0);
    cr_assert_eq(r.n, 1, "ab2 and ab3 share a bucket");
    cr_assert(r.lol[0] == 3 && !memcmp(r.lo[0], "\x30" "ab", 3));
    cr_assert(r.hil[0] == 3 && !memcmp(r.hi[0], "\x30" "ac", 3));
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* n updates of 700 keys of shop.public.orders at offsets and LSNs in
 * order, their values padded (a write-ahead log of some length); envs are
 * malloc'd. */
static void padded_updates(char (*keys)[32], char **envs, cdc_record_t *recs, int n)
{
    for (int i = 0; i < n; i++) {
        char after[128];
        snprintf(keys[i], sizeof keys[i], "{\"id\":%d}", i % 700);
        snprintf(after, sizeof after, "{\"id\":%d,\"v\":\"value %d padded to make the log longer\"}", i % 700, i);
        envs[i] = tu_env("u", NULL, after, 1000 + (unsigned long long)i, NULL);
        recs[i] = tu_rec("shop.public.orders", 0, i, keys[i], envs[i]);
    }
}

/* A damaged write-ahead log rolls the replica back: a point it no longer
 * reaches is not known, whatever is applied after. */
Test(changes, a_rollback_past_a_point_forgets_it)
{
    enum { N = 3000, BATCH = 500 };
    char *dir = tu_tmpdir();
    static char keys[N][32], *envs[N];
    static cdc_record_t recs[N];
    padded_updates(keys, envs, recs, N);
    cdc_store_t *st = tu_open(dir);
    for (int i = 0; i < N; i += BATCH) tu_apply(st, recs + i, BATCH);
    cdc_change_point_t p;
    cr_assert_eq(cdc_store_change_point(st, &p, NULL), 0);
    cdc_store_close(st);
    char logpath[600] = "";
    DIR *d = opendir(dir);
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".log")) snprintf(logpath, sizeof logpath, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    FILE *f = fopen(logpath, "r+b");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 3, SEEK_SET);
    int c = fgetc(f);
    fseek(f, size / 3, SEEK_SET);
    fputc(c ^ 0xff, f);
    fclose(f);
    st = tu_open(dir);
    int64_t pos = -1;
    cr_assert_eq(cdc_store_position(st, "shop.public.orders", 0, &pos, NULL), 0);
    cr_assert_lt(pos, N - 1, "the replica rolled back");
    int all;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_changed_since(st, "public.orders", &p, NULL, NULL, &all, &e), 0, "%s", e.msg);
    cr_assert_eq(all, 1);
    tu_apply(st, recs + pos + 1, (size_t)(N - 1 - pos));
    cr_assert_eq(cdc_store_changed_since(st, "public.orders", &p, NULL, NULL, &all, &e), 0, "%s", e.msg);
    cr_assert_eq(all, 1, "the records applied again do not bring the point back");
    cdc_store_close(st);
    for (int i = 0; i < N; i++) free(envs[i]);
    tu_rmrf(dir);
    free(dir);
}

/* A row without a column reads the default the column had when it was
 * added (ADD COLUMN ... DEFAULT fills the rows there and then; a later SET
 * DEFAULT changes no row): the default of the oldest change that gave one,
 * whatever the order the changes arrive in.  When that default becomes
 * known or changes, every row without the column reads differently: the
 * whole table changed; a newer change's default changes nothing. */
Test(changes, a_changed_default_changes_the_whole_table)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    long o = 0;
    for (int k = 1; k <= 2; k++)
        recs_add(&rs, T, 0, o++, fmt("{\"order_id\":%d}", k),
                 env_schema("r", "[" F_ID "," F_V("int32") "]", fmt_static(k, "{\"order_id\":%d,\"v\":%d}"), 100,
                            k == 2 ? "last" : "true"));
    tu_apply(st, rs.r, rs.n);
    const char *region = "[" F_ID "," F_V("int32") ",{\"type\":\"string\",\"optional\":true,\"default\":\"%s\","
                         "\"field\":\"region\"}]";
    char fields[512];
    int all;
    cdc_change_point_t p;
    /* ADD COLUMN region DEFAULT 'eu' (200), a change (201), SET DEFAULT
     * 'asia' (202), then a late insert from before them all (150, with
     * 'af': the column was added with it, and set to 'eu' before 200) */
    const char *dflt[] = {"eu", "eu", "asia", "af"};
    const unsigned long long lsn[] = {200, 201, 202, 150};
    const char *reads[] = {"eu", "eu", "eu", "af"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(cdc_store_change_point(st, &p, NULL), 0);
        snprintf(fields, sizeof fields, region, dflt[i]);
        if (i < 3)
            recs_add(&rs, T, 0, o, strdup("{\"order_id\":1}"),
                     env_schema("u", fields, "{\"order_id\":1,\"v\":5,\"region\":\"us\"}", lsn[i], "false"));
        else
            recs_add(&rs, T, 1, o, strdup("{\"order_id\":3}"),
                     env_schema("c", fields, "{\"order_id\":3,\"v\":6,\"region\":\"x\"}", lsn[i], "false"));
        tu_apply(st, rs.r + o++, 1);
        ranges_seen r = changed_since(st, &p, &all);
        cr_assert_eq(all, i == 0 || i == 3, "default %s at %llu", dflt[i], lsn[i]);
        if (i == 1 || i == 2) cr_assert_leq(r.n, 1, "a newer change's default: only the key written");
        char *v = tu_export(st, "public.orders", 0);
        char *want = fmt("order_id,v,region\n1,5,us\n2,2,%s\n%s", reads[i], i == 3 ? "3,6,x\n" : "");
        cr_assert_str_eq(v, want, "after the default %s at %llu", dflt[i], lsn[i]);
        free(want);
        free(v);
    }
    /* kept across a reopen, and the same in one batch in any order */
    cdc_store_close(st);
    st = tu_open(dir);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,v,region\n1,5,us\n2,2,af\n3,6,x\n");
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    static const int orders[][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}};
    for (size_t k = 0; k < sizeof orders / sizeof *orders; k++) {
        st = tu_open(dir);
        tu_apply(st, rs.r, 2);
        cdc_record_t b[4];
        for (int i = 0; i < 4; i++) b[i] = rs.r[2 + orders[k][i]];
        tu_apply(st, b, 4);
        v = tu_export(st, "public.orders", 0);
        cr_assert_str_eq(v, "order_id,v,region\n1,5,us\n2,2,af\n3,6,x\n", "order %zu", k);
        free(v);
        cdc_store_close(st);
        tu_rmrf(dir);
    }
    recs_free(&rs);
    free(dir);
}

/* A type change that keeps every value (int4 -> int8, a larger NUMERIC
 * scale) is applied; one that can change values the source rewrote
 * without events (int4 -> text here, NUMERIC scale 2 -> 0) stops the table:
 * that event and every later one of the table are dead letters naming why,
 * other tables go on, and `resume` applies the table's events again. */
Test(schema, narrowing_type_change_stops_the_table_until_resumed)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    long o = 0;
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
             env_schema("r", "[" F_ID "," F_V("int32") "]", "{\"order_id\":1,\"v\":1}", 100, "last"));
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
             env_schema("u", "[" F_ID "," F_V("int64") "]", "{\"order_id\":1,\"v\":9007199254740993}", 200, "false"));
    cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 0, "int4 -> int8 keeps values");
    const char *why = NULL;
    cr_assert_eq(cdc_store_table_stopped(st, "public.orders", &why, NULL), 0);
    cr_assert_null(why);
    recs more = {0};
    /* refused as a whole: the key column's widening before the refused
     * column, and the new column after it, are not taken either */
    recs_add(&more, T, 0, o++, strdup("{\"order_id\":2}"),
             env_schema("c",
                        "[{\"type\":\"int64\",\"optional\":false,\"field\":\"order_id\"}," F_V("string")
                        ",{\"type\":\"int16\",\"optional\":true,\"field\":\"w\"}]",
                        "{\"order_id\":2,\"v\":\"x\",\"w\":1}", 300, "false"));
    recs_add(&more, T, 0, o++, strdup("{\"order_id\":3}"),
             env_schema("c", "[{\"type\":\"int64\",\"optional\":false,\"field\":\"order_id\"}," F_V("string") "]",
                        "{\"order_id\":3,\"v\":\"y\"}", 310, "false"));
    /* another table is not stopped */
    recs_add(&more, "shop.public.other", 0, 0, strdup("{\"id\":1}"),
             env_t("public.other", "c", NULL, "{\"id\":1}", 320, "false"));
    r = tu_apply(st, more.r, more.n);
    cr_assert_eq(r.dead_letters, 2);
    cr_assert_eq(r.applied, 1);
    cr_assert_eq(cdc_store_table_stopped(st, "public.orders", &why, NULL), 0);
    cr_assert(why && strstr(why, "column v changed type from int64 to string"), "%s", why ? why : "(null)");
    const char *const *ty;
    size_t nty;
    cr_assert_eq(cdc_store_column_types(st, "public.orders", &ty, &nty, NULL), 0);
    cr_assert_eq(nty, 2, "the refused event's new column was not added");
    cr_assert_str_eq(ty[0], "int32", "the refused event's widening of the key was not taken");
    cr_assert_str_eq(ty[1], "int64");
    /* stopped across a reopen too */
    cdc_store_close(st);
    st = tu_open(dir);
    cr_assert_eq(cdc_store_table_stopped(st, "public.orders", &why, NULL), 0);
    cr_assert_not_null(why);
    cr_assert_eq(cdc_store_column_types(st, "public.orders", &ty, &nty, NULL), 0);
    cr_assert(nty == 2 && !strcmp(ty[0], "int32") && !strcmp(ty[1], "int64"), "the types as before the refusal");
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,v\n1,9007199254740993\n");
    free(v);
    cr_assert_eq(cdc_store_resume_table(st, "public.orders", NULL), 0);
    /* The whole input again, as a file applied again after the resume: its
     * changes of the old type, older, do not stop the table again (they
     * set the old type back, and the refused change stopped it again). */
    r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 0, "the older changes again");
    r = tu_apply(st, more.r, 2);
    cr_assert_eq(r.dead_letters, 0);
    cr_assert_eq(r.applied, 2);
    cr_assert_eq(cdc_store_table_stopped(st, "public.orders", &why, NULL), 0);
    cr_assert_null(why, "%s", why);
    cr_assert_eq(cdc_store_column_types(st, "public.orders", &ty, &nty, NULL), 0);
    cr_assert(nty >= 2 && !strcmp(ty[1], "string"), "v is a string now: %s", nty >= 2 ? ty[1] : "-");
    v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,v\n1,9007199254740993\n2,x\n3,y\n"); /* w left the schema again */
    free(v);
    cdc_store_close(st); /* and once more after a reopen */
    st = tu_open(dir);
    r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 0);
    r = tu_apply(st, more.r, 2);
    cr_assert_eq(r.dead_letters, 0);
    cr_assert_eq(cdc_store_table_stopped(st, "public.orders", &why, NULL), 0);
    cr_assert_null(why, "%s", why);
    recs_free(&rs);
    recs_free(&more);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* The column types the typed exports read: the newest schema's descriptor
 * per live column (a NUMERIC with its scale and precision), the declared
 * type of a column without schemas, NULL when nothing is known; a NUMERIC
 * whose precision grows keeps its values and does not stop the table. */
Test(schema, column_types_follow_the_newest_schema)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    long o = 0;
#define F_AMT(p) "{\"type\":\"bytes\",\"optional\":true,\"name\":\"org.apache.kafka.connect.data.Decimal\"," \
                 "\"parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":\"" p "\"},\"field\":\"amt\"}"
#define F_DAY "{\"type\":\"int32\",\"optional\":true,\"name\":\"io.debezium.time.Date\",\"field\":\"day\"}"
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"),
             env_schema("r", "[" F_ID "," F_AMT("10") "," F_DAY "]", "{\"order_id\":1,\"amt\":\"AQ==\",\"day\":1}",
                        100, "last"));
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":2}"),
             env_schema("c", "[" F_ID "," F_AMT("12") "," F_DAY "]", "{\"order_id\":2,\"amt\":\"Ag==\",\"day\":2}",
                        200, "false"));
    cdc_apply_result_t r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.dead_letters, 0, "a larger precision keeps every value");
    const char *const *ty;
    size_t n;
    cr_assert_eq(cdc_store_column_types(st, "public.orders", &ty, &n, NULL), 0);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(ty[0], "int32");
    cr_assert_str_eq(ty[1], "decimal:2:12");
    cr_assert_str_eq(ty[2], "int32/io.debezium.time.Date");
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,amt,day\n1,0.01,1970-01-02\n2,0.02,1970-01-03\n");
    free(v);
    /* without schemas: declared types, or nothing */
    recs more = {0};
    recs_add(&more, "shop.public.other", 0, 0, strdup("{\"id\":1}"),
             env_t("public.other", "c", NULL, "{\"id\":1,\"at\":86400000000,\"w\":\"x\"}", 320, "false"));
    cr_assert_eq(cdc_store_set_column_type(st, "public.other", "at", "timestamp", NULL), 0);
    cr_assert_eq(cdc_store_set_column_type(st, "public.other", "price", "numeric:3", NULL), 0);
    r = tu_apply(st, more.r, more.n);
    cr_assert_eq(r.dead_letters, 0);
    cr_assert_eq(cdc_store_column_types(st, "public.other", &ty, &n, NULL), 0);
    cr_assert_eq(n, 3);
    cr_assert_null(ty[0]);
    cr_assert_str_eq(ty[1], "int64/io.debezium.time.MicroTimestamp");
    cr_assert_null(ty[2]);
    cr_assert_eq(cdc_store_column_types(st, "public.none", &ty, &n, NULL), CDC_ENOTFOUND);
#undef F_AMT
#undef F_DAY
    recs_free(&rs);
    recs_free(&more);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- Re-snapshot after the slot was dropped and recreated ---- */

Test(resnapshot, rows_deleted_in_the_gap_disappear_and_replay_changes_nothing)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    long o = 0;
    /* epoch 100: rows 1, 2, 3; stream updates 3 */
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"), env_t("public.orders", "r", NULL, "{\"order_id\":1,\"s\":\"a\"}", 100, "first"));
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":2}"), env_t("public.orders", "r", NULL, "{\"order_id\":2,\"s\":\"a\"}", 100, "true"));
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":3}"), env_t("public.orders", "r", NULL, "{\"order_id\":3,\"s\":\"a\"}", 100, "last"));
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":3}"), env_t("public.orders", "u", NULL, "{\"order_id\":3,\"s\":\"b\"}", 150, "false"));
    /* slot dropped; while no slot exists, 2 is deleted and 1 changed; new
     * slot, snapshot at 900 holds 1 (changed) and 3 */
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":1}"), env_t("public.orders", "r", NULL, "{\"order_id\":1,\"s\":\"c\"}", 900, "first"));
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":3}"), env_t("public.orders", "r", NULL, "{\"order_id\":3,\"s\":\"b\"}", 900, "last"));
    /* an in-flight change of 3 committed after the new snapshot, LSN < 900 */
    recs_add(&rs, T, 0, o++, strdup("{\"order_id\":3}"), env_t("public.orders", "u", NULL, "{\"order_id\":3,\"s\":\"d\"}", 880, "false"));
    for (size_t i = 0; i < rs.n; i++) tu_apply(st, rs.r + i, 1);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,s\n1,c\n3,d\n");
    cdc_stats_t s;
    cdc_store_stats(st, "public.orders", &s, NULL);
    cr_assert_eq(s.gap_deletes, 1);
    cr_assert_eq(s.rows_live, 2);
    /* a late event of the old slot for the gap-deleted row cannot revive it */
    recs add = {0};
    recs_add(&add, T, 0, 3, strdup("{\"order_id\":2}"), env_t("public.orders", "u", NULL, "{\"order_id\":2,\"s\":\"z\"}", 170, "false"));
    cdc_apply_result_t r = tu_apply(st, add.r, 1);
    cr_assert_eq(r.applied, 0);
    /* full replay, one batch and one by one */
    r = tu_apply(st, rs.r, rs.n);
    cr_assert_eq(r.applied, 0);
    for (size_t i = 0; i < rs.n; i++) cr_assert_eq(tu_apply(st, rs.r + i, 1).applied, 0);
    char *v2 = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v2, v);
    free(v);
    free(v2);
    recs_free(&rs);
    recs_free(&add);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- Keys, deletes, tombstones ---- */

Test(gc, purged_tombstone_still_blocks_a_late_older_update)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), env_t("public.orders", "c", NULL, "{\"order_id\":1,\"s\":\"a\"}", 100, "false"));
    recs_add(&rs, T, 0, 1, strdup("{\"order_id\":2}"), env_t("public.orders", "c", NULL, "{\"order_id\":2,\"s\":\"a\"}", 110, "false"));
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":1}"), env_t("public.orders", "d", "{\"order_id\":1}", NULL, 200, "false"));
    recs_add(&rs, T, 0, 3, strdup("{\"order_id\":3}"), env_t("public.orders", "d", "{\"order_id\":3}", NULL, 400, "false"));
    tu_apply(st, rs.r, rs.n);
    uint64_t purged = 0;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_gc(st, "public.orders", 300, &purged, &e), 0, "%s", e.msg);
    cr_assert_eq(purged, 1, "only the tombstone below the horizon goes");
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.orders", "[1]", &row, NULL), CDC_ENOTFOUND);
    cr_assert_eq(cdc_store_get(st, "public.orders", "[3]", &row, NULL), 0);
    cdc_stats_t s;
    cdc_store_stats(st, "public.orders", &s, NULL);
    cr_assert_eq(s.tombstones_purged, 1);
    cr_assert_eq(s.rows_deleted, 1);
    cdc_store_close(st);
    st = tu_open(dir); /* the horizon is kept in the replica */
    recs late = {0};
    recs_add(&late, T, 0, 4, strdup("{\"order_id\":1}"), env_t("public.orders", "u", NULL, "{\"order_id\":1,\"s\":\"late\"}", 150, "false"));
    recs_add(&late, T, 0, 5, strdup("{\"order_id\":9}"), env_t("public.orders", "c", NULL, "{\"order_id\":9,\"s\":\"new\"}", 500, "false"));
    cdc_apply_result_t r = tu_apply(st, late.r, late.n);
    cr_assert_eq(r.applied, 1);
    cr_assert_eq(r.stale, 1);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,s\n2,a\n9,new\n");
    free(v);
    recs_free(&rs);
    recs_free(&late);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

Test(deletes, delete_of_unknown_key_is_kept_with_its_version)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":9}"), env_t("public.orders", "d", "{\"order_id\":9}", NULL, 300, "false"));
    recs_add(&rs, T, 0, 1, strdup("{\"order_id\":9}"), NULL);
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":9}"), env_t("public.orders", "c", NULL, "{\"order_id\":9,\"s\":\"old\"}", 250, "false"));
    cdc_apply_result_t r = tu_apply(st, rs.r, 2);
    cr_assert_eq(r.tombstones, 1);
    r = tu_apply(st, rs.r + 2, 1);
    cr_assert_eq(r.applied, 0);
    cr_assert_eq(r.stale, 1);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.orders", "{\"order_id\":9}", &row, NULL), 0);
    cr_assert(row.deleted);
    cr_assert_eq(row.lsn, 300);
    cr_assert_eq(cdc_store_get(st, "public.orders", "[9]", &row, NULL), 0);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id\n", "no live row: only the key column is known");
    free(v);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

Test(keys, primary_key_change_shares_one_lsn)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), env_t("public.orders", "c", NULL, "{\"order_id\":1,\"s\":\"a\"}", 100, "false"));
    recs_add(&rs, T, 0, 1, strdup("{\"order_id\":1}"), env_t("public.orders", "d", "{\"order_id\":1}", NULL, 200, "false"));
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":1}"), NULL);
    recs_add(&rs, T, 0, 3, strdup("{\"order_id\":10}"), env_t("public.orders", "c", NULL, "{\"order_id\":10,\"s\":\"a\"}", 200, "false"));
    tu_apply(st, rs.r, rs.n);
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,s\n10,a\n");
    free(v);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

Test(keys, composite_and_text_keys_iterate_in_pk_order)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    int ids[][2] = {{2, 1}, {1, 10}, {1, 2}, {-5, 3}, {1, -1}};
    for (int i = 0; i < 5; i++) {
        char *k = fmt("{\"a\":%d,\"b\":%d}", ids[i][0], ids[i][1]);
        char *a = fmt("{\"a\":%d,\"b\":%d}", ids[i][0], ids[i][1]);
        recs_add(&rs, "x.public.lines", 0, i, k, env_t("public.lines", "c", NULL, a, 100 + (unsigned)i, "false"));
        free(a);
    }
    const char *names[] = {"b", "", "ab", "a", "a\"b", "é"};
    for (int i = 0; i < 6; i++) {
        char *k = fmt("{\"code\":\"%s\"}", names[i][0] == 'a' && names[i][1] == '"' ? "a\\\"b" : names[i]);
        char *a = fmt("{\"code\":\"%s\",\"n\":%d}", names[i][0] == 'a' && names[i][1] == '"' ? "a\\\"b" : names[i], i);
        recs_add(&rs, "x.public.codes", 0, i, k, env_t("public.codes", "c", NULL, a, 100 + (unsigned)i, "false"));
        free(a);
    }
    tu_apply(st, rs.r, rs.n);
    char *v = tu_export(st, "public.lines", 0);
    cr_assert_str_eq(v, "a,b\n-5,3\n1,-1\n1,2\n1,10\n2,1\n");
    char *c = tu_export(st, "public.codes", 0);
    cr_assert_str_eq(c, "code,n\n\"\",1\na,3\n\"a\"\"b\",4\nab,2\nb,0\né,5\n");
    free(v);
    free(c);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

Test(toast, unchanged_toasted_value_keeps_the_stored_one)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), env_t("public.orders", "c", NULL, "{\"order_id\":1,\"s\":\"a\",\"note\":\"LONG\"}", 100, "false"));
    recs_add(&rs, T, 0, 1, strdup("{\"order_id\":1}"), env_t("public.orders", "u", NULL, "{\"order_id\":1,\"s\":\"b\",\"note\":\"__debezium_unavailable_value\"}", 200, "false"));
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":1}"), env_t("public.orders", "u", NULL, "{\"order_id\":1,\"s\":\"c\",\"note\":\"__debezium_unavailable_value\"}", 300, "false"));
    tu_apply(st, rs.r, 2);   /* insert and first placeholder in one batch */
    tu_apply(st, rs.r + 2, 1); /* then against the stored row */
    char *v = tu_export(st, "public.orders", 0);
    cr_assert_str_eq(v, "order_id,s,note\n1,c,LONG\n");
    cdc_stats_t s;
    cdc_store_stats(st, NULL, &s, NULL);
    cr_assert_eq(s.placeholders_kept, 2);
    free(v);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* Records of public.orders rows (order_id, s, note) for the key-change
 * tests below.  s NULL leaves the column out; PH is Debezium's
 * unchanged-TOAST placeholder. */
#define PH "__debezium_unavailable_value"

static const char *const KJ[] = {"{\"order_id\":0}", "{\"order_id\":1}", "{\"order_id\":2}", "{\"order_id\":3}",
                                 "{\"order_id\":4}"};

static void kc_upsert(recs *rs, const char *op, int part, long off, int id, const char *s, const char *note,
                      unsigned long long lsn)
{
    char key[32], row[160];
    snprintf(key, sizeof key, "{\"order_id\":%d}", id);
    if (s) snprintf(row, sizeof row, "{\"order_id\":%d,\"s\":\"%s\",\"note\":\"%s\"}", id, s, note);
    else snprintf(row, sizeof row, "{\"order_id\":%d,\"note\":\"%s\"}", id, note);
    recs_add(rs, T, part, off, strdup(key), env_t("public.orders", op, NULL, row, lsn, "false"));
}

/* The delete of a key whose row moved to another (header __debezium.newkey);
 * with_s: its before image names s too. */
static void kc_moved_delete(recs *rs, int part, long off, int id, int with_s, unsigned long long lsn)
{
    char key[32], before[96];
    snprintf(key, sizeof key, "{\"order_id\":%d}", id);
    snprintf(before, sizeof before, with_s ? "{\"order_id\":%d,\"s\":null,\"note\":null}" : "{\"order_id\":%d,\"note\":null}",
             id);
    recs_add(rs, T, part, off, strdup(key), env_t("public.orders", "d", before, NULL, lsn, "false"));
    rs->r[rs->n - 1].key_moved = 1;
}

/* The last record is the create of a key change from old_key (header
 * __debezium.oldkey; old_key outlives the records). */
static void kc_from(recs *rs, const char *old_key)
{
    rs->r[rs->n - 1].old_key = old_key;
    rs->r[rs->n - 1].old_key_len = strlen(old_key);
}

/* Applies record order[i] in batch batch_of[order[i]] (-1: not sent),
 * batches in turn. */
static void kc_apply_batches(cdc_store_t *st, const recs *rs, const int *batch_of, const int *order)
{
    for (int b = 0; b < 8; b++) {
        cdc_record_t batch[8];
        size_t n = 0;
        for (size_t i = 0; i < rs->n; i++)
            if (batch_of[order[i]] == b) batch[n++] = rs->r[order[i]];
        if (n) tu_apply(st, batch, n);
    }
}

/* A primary-key change leaving a TOASTed column unchanged (see store/apply.c,
 * "A row whose primary key changed"): Debezium's delete of the old key
 * (key_moved), its tombstone, and the create of the new key (old_key) with
 * the placeholder.  The new key's note is the old key's, however the three
 * fall into batches and partitions, with the old key's changes before the
 * key change; without the header, or when the old key was used again
 * after the change, nothing is taken. */
typedef struct moved_case {
    const char *name;
    int batches[8];   /* batch number of each record below, -1: not sent */
    int order[8];     /* the order records are sent in */
    int header;       /* 0: no __debezium.oldkey header, 2: one of other columns */
    const char *want; /* the export */
    uint64_t kept, unresolved;
} moved_case;

Test(toast, key_change_takes_the_old_keys_unchanged_values)
{
    /* 0 create 1 (note LONG), 1 update 1 (note LONG2), 2 delete 1 (moved), 3 tombstone 1,
     * 4 create 10 (note placeholder), 5 create 1 again (note REUSED, later than the change) */
    static const moved_case cases[] = {
        {"one batch each", {0, -1, 1, 2, 3, -1}, {0, 1, 2, 3, 4, 5}, 1, "order_id,s,note\n10,b,LONG\n", 1, 0},
        {"all in one batch", {0, -1, 1, 1, 1, -1}, {0, 1, 2, 3, 4, 5}, 1, "order_id,s,note\n10,b,LONG\n", 1, 0},
        /* applied before its delete, the create cannot know the old key's
         * last updates (unread in its partition): nothing taken */
        {"the create first, a batch before the delete (another partition)", {0, -1, 2, 2, 1, -1}, {0, 1, 4, 2, 3, 5},
         1, "order_id,s,note\n10,b,\n", 0, 1},
        {"create and delete in one batch, create first", {0, -1, 1, 1, 1, -1}, {0, 1, 4, 2, 3, 5}, 1,
         "order_id,s,note\n10,b,LONG\n", 1, 0},
        {"an update of the old key in the batch of the change", {0, 1, 1, 1, 1, -1}, {0, 1, 2, 3, 4, 5}, 1,
         "order_id,s,note\n10,b,LONG2\n", 1, 0},
        {"an update of the old key, then the change a batch later", {0, 1, 1, 1, 2, -1}, {0, 1, 2, 3, 4, 5}, 1,
         "order_id,s,note\n10,b,LONG2\n", 1, 0},
        {"an update of the old key alone in its batch", {0, 1, 2, 2, 3, -1}, {0, 1, 2, 3, 4, 5}, 1,
         "order_id,s,note\n10,b,LONG2\n", 1, 0},
        {"without the header", {0, -1, 1, 2, 3, -1}, {0, 1, 2, 3, 4, 5}, 0, "order_id,s,note\n10,b,\n", 0, 1},
        {"a header naming other key columns", {0, -1, 1, 2, 3, -1}, {0, 1, 2, 3, 4, 5}, 2,
         "order_id,s,note\n10,b,\n", 0, 1},
        {"the old key used again before the create arrives", {0, -1, 1, 2, 4, 3}, {0, 1, 2, 3, 5, 4}, 1,
         "order_id,s,note\n1,r,REUSED\n10,b,\n", 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const moved_case *mc = &cases[c];
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        kc_upsert(&rs, "c", 0, 0, 1, "a", "LONG", 100);
        kc_upsert(&rs, "u", 0, 1, 1, "a2", "LONG2", 150);
        kc_moved_delete(&rs, 0, 2, 1, 1, 200);
        recs_add(&rs, T, 0, 3, strdup(KJ[1]), NULL);
        kc_upsert(&rs, "c", 1, 0, 10, "b", PH, 200);
        if (mc->header) kc_from(&rs, mc->header == 1 ? KJ[1] : "{\"id\":1}");
        kc_upsert(&rs, "c", 0, 4, 1, "r", "REUSED", 300);
        kc_apply_batches(st, &rs, mc->batches, mc->order);
        char *v = tu_export(st, "public.orders", 0);
        cr_expect_str_eq(v, mc->want, "%s", mc->name);
        free(v);
        cdc_stats_t s;
        cdc_store_stats(st, NULL, &s, NULL);
        cr_expect_eq(s.placeholders_kept, mc->kept, "%s: kept %llu", mc->name, (unsigned long long)s.placeholders_kept);
        cr_expect_eq(s.placeholders_unresolved, mc->unresolved, "%s: unresolved %llu", mc->name,
                     (unsigned long long)s.placeholders_unresolved);
        /* a tombstone that kept its row still shows no column */
        v = tu_export(st, "public.orders", 1);
        if (mc->batches[5] < 0) cr_expect(strstr(v, "\n1,,,200,t\n"), "%s: the tombstone of 1: %s", mc->name, v);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* Key changes in a chain, K1 -> K2 -> K3 (each a delete with key_moved
 * and a create with old_key and the placeholder), batched every way: K3
 * keeps K1's note, through K2's tombstone or K2's create in the same
 * batch. */
Test(toast, chained_key_changes_keep_the_first_keys_values)
{
    /* 0 create 1; 1 delete 1 (moved); 2 create 2 (old 1); 3 delete 2 (moved); 4 create 3 (old 2) */
    static const int batchings[][5] = {
        {0, 1, 1, 1, 1}, {0, 1, 1, 2, 2}, {0, 1, 2, 3, 4}, {0, 0, 0, 0, 0}, {0, 1, 1, 1, 2}, {0, 2, 1, 1, 1},
    };
    /* the last: K2's create a batch before K1's delete, so neither K2 nor
     * K3 can know K1's row for certain */
    static const char *const want[] = {"LONG", "LONG", "LONG", "LONG", "LONG", ""};
    for (size_t c = 0; c < sizeof batchings / sizeof batchings[0]; c++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        kc_upsert(&rs, "c", 0, 0, 1, "a", "LONG", 100);
        kc_moved_delete(&rs, 0, 1, 1, 1, 200);
        kc_upsert(&rs, "c", 1, 0, 2, "b", PH, 200);
        kc_from(&rs, KJ[1]);
        kc_moved_delete(&rs, 1, 1, 2, 1, 300);
        kc_upsert(&rs, "c", 2, 0, 3, "c", PH, 300);
        kc_from(&rs, KJ[2]);
        static const int in_order[] = {0, 1, 2, 3, 4};
        kc_apply_batches(st, &rs, batchings[c], in_order);
        char *v = tu_export(st, "public.orders", 0);
        char w[64];
        snprintf(w, sizeof w, "order_id,s,note\n3,c,%s\n", want[c]);
        cr_expect_str_eq(v, w, "batching %zu", c);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* Keys rotated among three rows (1 -> 4, 2 -> 1, 3 -> 2, 4 -> 3, M times),
 * every row's note TOASTed and unchanged: key k ends with the note of row
 * (k - 1 + M) mod 3 + 1, whatever the batches; the old key's row is the
 * one it held at the change, not an earlier row of that key. */
Test(toast, rotated_keys_keep_each_rows_values)
{
    static const size_t sizes[] = {100000, 1, 2, 3, 7, 13};
    for (int M = 1; M <= 30; M += 29) {
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            char *dir = tu_tmpdir();
            cdc_store_t *st = tu_open(dir);
            recs rs = {0};
            char note[16];
            for (int k = 1; k <= 3; k++) {
                snprintf(note, sizeof note, "N%d", k);
                kc_upsert(&rs, "c", 0, k, k, NULL, note, 10);
            }
            tu_apply(st, rs.r, rs.n);
            size_t first = rs.n;
            static const int moves[4][2] = {{1, 4}, {2, 1}, {3, 2}, {4, 3}};
            unsigned long long lsn = 100;
            for (int m = 0; m < M; m++)
                for (int i = 0; i < 4; i++, lsn++) {
                    int from = moves[i][0], to = moves[i][1];
                    kc_moved_delete(&rs, from, (long)lsn, from, 0, lsn);
                    kc_upsert(&rs, "c", to, (long)lsn, to, NULL, PH, lsn);
                    kc_from(&rs, KJ[from]);
                }
            for (size_t i = first; i < rs.n; i += sizes[si])
                tu_apply(st, rs.r + i, rs.n - i < sizes[si] ? rs.n - i : sizes[si]);
            char want[128], *v = tu_export(st, "public.orders", 0);
            snprintf(want, sizeof want, "order_id,note\n1,N%d\n2,N%d\n3,N%d\n", M % 3 + 1, (1 + M) % 3 + 1,
                     (2 + M) % 3 + 1);
            cr_expect_str_eq(v, want, "%d rotations, batches of %zu: %s", M, sizes[si], v);
            free(v);
            recs_free(&rs);
            cdc_store_close(st);
            tu_rmrf(dir);
            free(dir);
        }
    }
}

/* The old key's state is started as any key's: under a truncate's floor a
 * row before it is gone (K1's note from before the truncate is not the
 * row K1 was made from later); a moved delete delivered twice still finds
 * the tombstone it left; a row moved back and forth 5,000 times in one
 * batch keeps its note (each link followed once). */
Test(toast, key_change_edges)
{
    const char *tr = "{\"op\":\"t\",\"source\":{\"schema\":\"public\",\"table\":\"orders\",\"lsn\":200}}";
    for (int split = 0; split <= 1; split++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        kc_upsert(&rs, "c", 0, 0, 1, "a", "OLD1", 100);
        recs_add(&rs, T, 9, 0, NULL, strdup(tr));
        kc_upsert(&rs, "c", 0, 1, 7, "z", "K7NOTE", 250);
        kc_moved_delete(&rs, 0, 2, 7, 1, 300);
        kc_upsert(&rs, "c", 0, 3, 1, "b", PH, 300);
        kc_from(&rs, "{\"order_id\":7}");
        kc_moved_delete(&rs, 0, 4, 1, 1, 400);
        kc_upsert(&rs, "c", 0, 5, 2, "c", PH, 400);
        kc_from(&rs, KJ[1]);
        if (split) {
            tu_apply(st, rs.r, 2);
            tu_apply(st, rs.r + 2, rs.n - 2);
        } else {
            tu_apply(st, rs.r, rs.n);
        }
        char *v = tu_export(st, "public.orders", 0);
        cr_expect_str_eq(v, "order_id,s,note\n2,c,K7NOTE\n", "a truncate before the chain, split %d: %s", split, v);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
    {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        kc_upsert(&rs, "c", 0, 0, 1, "a", "LONG", 100);
        kc_moved_delete(&rs, 0, 1, 1, 1, 200);
        kc_moved_delete(&rs, 0, 1, 1, 1, 200);
        kc_upsert(&rs, "c", 1, 0, 10, "b", PH, 200);
        kc_from(&rs, KJ[1]);
        tu_apply(st, rs.r, 2);
        tu_apply(st, rs.r + 2, 2); /* the delete again, with the create */
        char *v = tu_export(st, "public.orders", 0);
        cr_expect_str_eq(v, "order_id,s,note\n10,b,LONG\n", "a moved delete delivered twice: %s", v);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
    {
        enum { MOVES = 5000 };
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        recs rs = {0};
        kc_upsert(&rs, "c", 0, 0, 1, NULL, "PING", 10);
        tu_apply(st, rs.r, 1);
        for (int m = 0; m < MOVES; m++) {
            int from = m % 2 + 1, to = 3 - from;
            kc_moved_delete(&rs, from - 1, m, from, 0, 100 + (unsigned long long)m);
            kc_upsert(&rs, "c", to - 1, m, to, NULL, PH, 100 + (unsigned long long)m);
            kc_from(&rs, KJ[from]);
        }
        tu_apply(st, rs.r + 1, rs.n - 1);
        char *v = tu_export(st, "public.orders", 0);
        cr_expect_str_eq(v, "order_id,note\n1,PING\n", "%d moves back and forth in one batch: %s", MOVES, v);
        free(v);
        recs_free(&rs);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* ---- Bad input ---- */

Test(bad_input, dead_letters_with_position_and_the_run_goes_on)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), strdup("{not json"));
    recs_add(&rs, T, 0, 1, strdup("{\"order_id\":1}"), strdup("{\"op\":\"u\",\"after\":{\"order_id\":1},\"source\":{}}"));
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":1}"), strdup("{\"op\":\"x\",\"after\":{\"order_id\":1},\"source\":{\"lsn\":5}}"));
    recs_add(&rs, T, 0, 3, strdup("{\"order_id\":1}"), strdup("{\"op\":\"c\",\"after\":{\"order_id\":1},\"source\":{\"lsn\":\"5\"}}"));
    recs_add(&rs, T, 0, 4, strdup("{\"order_id\":1}"), strdup("{\"op\":\"c\",\"after\":{\"order_id\":2},\"source\":{\"lsn\":5}}"));
    recs_add(&rs, T, 0, 5, strdup("{\"order_id\":7}"), env_t("public.orders", "c", NULL, "{\"order_id\":7}", 9, "false"));
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply(st, rs.r, rs.n, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters, 5);
    cr_assert_eq(r.applied, 1);
    cdc_dlq_iter_t *it;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
    int n = 0;
    while (cdc_dlq_next(it, &dl, NULL) == 1) {
        cr_assert_eq(dl.offset, n, "dead letter %d has offset %lld", n, (long long)dl.offset);
        cr_assert_str_eq(dl.topic, T);
        cr_assert(strstr(dl.reason, T "[0]@") != NULL, "reason names the position: %s", dl.reason);
        n++;
    }
    cr_assert_eq(n, 5);
    cdc_dlq_close(it);
    /* the oversize rule */
    cdc_apply_options_t o = {.max_record_bytes = 10};
    cr_assert_eq(cdc_store_apply(st, rs.r + 5, 1, &o, &r, &e), 0);
    cr_assert_eq(r.dead_letters, 1);
    /* --on-error stop: records before the bad one are applied, position stops before it */
    recs s2 = {0};
    recs_add(&s2, "t2.public.orders", 0, 0, strdup("{\"order_id\":1}"), env_t("public.orders", "c", NULL, "{\"order_id\":1}", 9, "false"));
    recs_add(&s2, "t2.public.orders", 0, 1, strdup("{\"order_id\":1}"), strdup("[]"));
    recs_add(&s2, "t2.public.orders", 0, 2, strdup("{\"order_id\":3}"), env_t("public.orders", "c", NULL, "{\"order_id\":3}", 10, "false"));
    cdc_apply_options_t so = {.on_error = CDC_ON_ERROR_STOP};
    cr_assert_eq(cdc_store_apply(st, s2.r, s2.n, &so, &r, &e), CDC_ESTOPPED);
    int64_t pos;
    cdc_store_position(st, "t2.public.orders", 0, &pos, NULL);
    cr_assert_eq(pos, 0);
    cr_assert_eq(cdc_store_get(st, "public.orders", "[3]", &(cdc_row_t){0}, NULL), CDC_ENOTFOUND);
    recs_free(&s2);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* The dead letters of the store as "offset:source:line:reason" lines. */
static char *dlq_lines(cdc_store_t *st, int *n)
{
    cdc_dlq_iter_t *it;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
    char *out = strdup("");
    *n = 0;
    int rc;
    while ((rc = cdc_dlq_next(it, &dl, NULL)) == 1) {
        char *o = out;
        cr_assert_eq(dl.id, (uint64_t)*n + 1, "dead letters are numbered 1, 2, ...: %llu", (unsigned long long)dl.id);
        cr_assert(asprintf(&out, "%s%lld:%s:%lld:%s\n", o, (long long)dl.offset, dl.source ? dl.source : "",
                           (long long)dl.line, dl.reason) > 0);
        free(o);
        (*n)++;
    }
    cr_assert_eq(rc, 0);
    cdc_dlq_close(it);
    return out;
}

/* A bad record met again (a file applied twice, a rerun after a stop at
 * it, the same Kafka record in two files, twice in one batch) is stored
 * once; one that differs in its position, its bytes or its reason is a new
 * dead letter; the counters count every meeting. */
Test(bad_input, a_bad_record_met_again_is_stored_once)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs rs = {0};
    recs_add(&rs, T, 0, 0, strdup("{\"order_id\":1}"), strdup("{not json"));
    recs_add(&rs, T, 0, 1, strdup("{\"order_id\":1}"), env_t("public.orders", "c", NULL, "{\"order_id\":1}", 9, "false"));
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":1}"), strdup("[]"));
    recs_add(&rs, T, 0, 2, strdup("{\"order_id\":1}"), strdup("[]")); /* the same record twice in one batch */
    rs.r[0].source = "a.jsonl";
    rs.r[0].line = 1;
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply(st, rs.r, rs.n, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters, 3);
    cr_assert_eq(r.dead_letters_known, 1, "the second copy in the batch: %llu", (unsigned long long)r.dead_letters_known);
    int n;
    char *first = dlq_lines(st, &n);
    cr_assert_eq(n, 2, "%s", first);
    /* Applied again, in batches of one, and after a reopen: nothing new. */
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < rs.n; i++) {
            cr_assert_eq(cdc_store_apply(st, rs.r + i, 1, NULL, &r, &e), 0, "%s", e.msg);
            cr_assert_eq(r.dead_letters, r.dead_letters_known, "record %zu met again", i);
        }
        char *again = dlq_lines(st, &n);
        cr_assert_str_eq(again, first);
        free(again);
        cdc_store_close(st);
        st = tu_open(dir);
    }
    /* The same Kafka record from another file (or the broker): the same dead letter. */
    rs.r[0].source = "b.jsonl";
    rs.r[0].line = 7;
    cr_assert_eq(cdc_store_apply(st, rs.r, 1, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters_known, 1);
    /* A bare envelope (no offset) is identified by its file and line. */
    recs bare = {0};
    recs_add(&bare, NULL, 0, -1, NULL, strdup("{\"a\":1}"));
    bare.r[0].source = "c.json";
    bare.r[0].line = 3;
    cr_assert_eq(cdc_store_apply(st, bare.r, 1, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters_known, 0);
    cr_assert_eq(cdc_store_apply(st, bare.r, 1, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters_known, 1);
    bare.r[0].line = 4; /* the same bytes on another line: another record */
    cr_assert_eq(cdc_store_apply(st, bare.r, 1, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters_known, 0);
    /* Another offset, other bytes, another reason: new dead letters. */
    recs more = {0};
    recs_add(&more, T, 0, 9, strdup("{\"order_id\":1}"), strdup("{not json"));
    recs_add(&more, T, 1, 0, strdup("{\"order_id\":1}"), strdup("{not json"));
    recs_add(&more, T, 0, 0, strdup("{\"order_id\":1}"), strdup("{not json}"));
    cr_assert_eq(cdc_store_apply(st, more.r, more.n, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters, 3);
    cr_assert_eq(r.dead_letters_known, 0);
    cdc_apply_options_t o = {.max_record_bytes = 5}; /* record 0 again, refused for its size */
    cr_assert_eq(cdc_store_apply(st, rs.r, 1, &o, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.dead_letters, 1);
    cr_assert_eq(r.dead_letters_known, 0);
    /* --on-error stop: every rerun stops at the same record, stored once. */
    recs s2 = {0};
    recs_add(&s2, "t2.public.orders", 0, 0, strdup("{\"order_id\":1}"), strdup("[]"));
    cdc_apply_options_t so = {.on_error = CDC_ON_ERROR_STOP};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cdc_store_apply(st, s2.r, s2.n, &so, &r, &e), CDC_ESTOPPED);
        cr_assert_eq(r.dead_letters_known, (uint64_t)(i > 0));
    }
    char *all = dlq_lines(st, &n);
    cr_assert_eq(n, 2 + 2 + 3 + 1 + 1, "%s", all);
    free(all);
    free(first);
    recs_free(&s2);
    recs_free(&more);
    recs_free(&bare);
    recs_free(&rs);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- Randomized histories ---- */

/* A tiny PRNG so that a failing seed can be replayed. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static int rnd(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }

#define HK 6      /* keys per history */
#define HTX 4     /* concurrent transactions at most */

typedef struct hev {
    int key;      /* 0 = tombstone of key2 */
    char op;
    int val;      /* row value; -1 for deletes */
    unsigned long long lsn;
    const char *snap;
    unsigned long long commit; /* source.sequence[0]: 0 = null or no sequence */
    int seq;                   /* write source.sequence */
} hev;

typedef struct htx {
    int open;
    int locks[HK + 1];
    int nch;
    struct { int key; char op; int val; unsigned long long lsn; } ch[16];
} htx;

typedef struct hist {
    int state[HK + 1];     /* committed value, -1 absent */
    hev *evs;              /* the topic, in Kafka order */
    size_t nev, cap;
} hist;

static void hpush(hist *h, hev e)
{
    if (h->nev == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->evs = realloc(h->evs, h->cap * sizeof *h->evs);
    }
    h->evs[h->nev++] = e;
}

static void snapshot(hist *h, unsigned long long c)
{
    int last = -1;
    for (int k = 1; k <= HK; k++)
        if (h->state[k] >= 0) last = k;
    for (int k = 1; k <= HK; k++)
        if (h->state[k] >= 0) {
            int first = 1;
            for (int j = 1; j < k; j++)
                if (h->state[j] >= 0) first = 0;
            hpush(h, (hev){k, 'r', h->state[k], c, k == last ? "last" : first ? "first" : "true", 0, 0});
        }
}

/* An incremental snapshot window (Debezium's watermark algorithm): the
 * chunk's keys and the values a SELECT right after the low watermark saw;
 * a key a streamed change touches before the high watermark is dropped. */
typedef struct hwin {
    int open;
    int in[HK + 1];   /* in the chunk, not dropped */
    int val[HK + 1];
} hwin;

/* Streams a committed transaction's changes.  With incr, each carries the
 * commit position of the transaction delivered before it (sequence[0]),
 * and the keys it touches leave an open window's chunk. */
static void stream_commit(hist *h, const htx *t, unsigned long long commit_lsn, int incr,
                          unsigned long long *last_commit, hwin *w)
{
    for (int c = 0; c < t->nch; c++) {
        int k = t->ch[c].key;
        hpush(h, (hev){k, t->ch[c].op, t->ch[c].val, t->ch[c].lsn, "false", incr ? *last_commit : 0, incr});
        if (t->ch[c].op == 'd') hpush(h, (hev){0, 't', k, 0, NULL, 0, 0});
        if (w->open) w->in[k] = 0;
    }
    if (incr) *last_commit = commit_lsn;
}

/* Opens a window on a random range of keys (the low watermark commits, then
 * the chunk is read), or closes the open one: the high watermark's insert
 * and commit, and a read of every chunk key no change touched, stamped with
 * the commit position delivered before the high watermark's transaction. */
static void window_step(uint64_t *rs, hist *h, unsigned long long *lsn, unsigned long long *last_commit, hwin *w)
{
    if (!w->open) {
        *last_commit = ++*lsn; /* the low watermark's transaction */
        int lo = 1 + rnd(rs, HK), hi = lo + rnd(rs, HK - lo + 1);
        memset(w, 0, sizeof *w);
        w->open = 1;
        for (int k = lo; k <= hi; k++)
            if (h->state[k] >= 0) {
                w->in[k] = 1;
                w->val[k] = h->state[k];
            }
        return;
    }
    ++*lsn;                     /* the high watermark's insert */
    unsigned long long p = *last_commit;
    for (int k = 1; k <= HK; k++)
        if (w->in[k]) hpush(h, (hev){k, 'r', w->val[k], p, "incremental", p, 1});
    *last_commit = ++*lsn;      /* and its commit */
    w->open = 0;
}

/* Generates a source history: transactions with row locks, an initial
 * snapshot with transactions in flight, and sometimes a slot drop and
 * re-snapshot.  With incr, streamed changes carry source.sequence and
 * incremental snapshot windows run while transactions are open across them.
 * Returns the topic in h->evs and the final state. */
static void gen_history(uint64_t *rs, hist *h, unsigned long long base, int incr)
{
    unsigned long long lsn = base, last_commit = 0;
    hwin w = {0};
    htx tx[HTX];
    memset(tx, 0, sizeof tx);
    int lock_owner[HK + 1];
    for (int k = 0; k <= HK; k++) {
        h->state[k] = rnd(rs, 3) ? rnd(rs, 100) : -1;
        lock_owner[k] = -1;
    }
    h->state[1] = rnd(rs, 100); /* never an empty snapshot */
    int phase = 0;          /* 0 before the slot, 1 streaming, 2 slot dropped, 3 streaming again */
    int resnap = rnd(rs, 3) == 0;
    int steps = 10 + rnd(rs, 40);
    for (int step = 0; step < steps || phase == 0 || phase == 2; step++) {
        int a = rnd(rs, 10);
        if (phase == 0 && (a == 0 || step >= steps)) {
            snapshot(h, ++lsn);
            phase = 1;
            continue;
        }
        if (phase == 1 && resnap && a == 1 && step > steps / 2) {
            phase = 2;
            w.open = 0; /* the slot is gone, and the incremental snapshot with it */
            continue;
        }
        if (phase == 2 && (a == 2 || step >= steps)) {
            int nonempty = 0;
            for (int k = 1; k <= HK; k++) nonempty |= h->state[k] >= 0;
            if (nonempty) {
                snapshot(h, ++lsn);
                last_commit = 0; /* a new connector: no commit delivered yet */
                phase = 3;
                continue;
            }
        }
        if (incr && (phase == 1 || phase == 3) && a == 3 && rnd(rs, 2)) {
            window_step(rs, h, &lsn, &last_commit, &w);
            continue;
        }
        int t = rnd(rs, HTX);
        if (!tx[t].open) {
            tx[t].open = 1;
            tx[t].nch = 0;
            continue;
        }
        if (a < 4 || tx[t].nch >= 14) { /* commit */
            ++lsn;
            int streamed = phase == 1 || phase == 3;
            /* the tx's view is applied to the committed state */
            for (int c = 0; c < tx[t].nch; c++) {
                int k = tx[t].ch[c].key;
                h->state[k] = tx[t].ch[c].op == 'd' ? -1 : tx[t].ch[c].val;
            }
            if (streamed) stream_commit(h, &tx[t], lsn, incr, &last_commit, &w);
            for (int k = 1; k <= HK; k++)
                if (lock_owner[k] == t) lock_owner[k] = -1;
            tx[t].open = 0;
            continue;
        }
        int k = 1 + rnd(rs, HK);
        if (lock_owner[k] >= 0 && lock_owner[k] != t) continue; /* would wait on the row lock */
        lock_owner[k] = t;
        /* the key's current value in this transaction's view */
        int cur = h->state[k];
        for (int c = 0; c < tx[t].nch; c++)
            if (tx[t].ch[c].key == k) cur = tx[t].ch[c].op == 'd' ? -1 : tx[t].ch[c].val;
        char op = cur < 0 ? 'c' : (rnd(rs, 3) == 0 ? 'd' : 'u');
        int val = op == 'd' ? -1 : rnd(rs, 1000);
        tx[t].ch[tx[t].nch].key = k;
        tx[t].ch[tx[t].nch].op = op;
        tx[t].ch[tx[t].nch].val = val;
        tx[t].ch[tx[t].nch].lsn = ++lsn;
        tx[t].nch++;
    }
    /* close an open window, then commit whatever is still open (streamed) */
    if (w.open) window_step(rs, h, &lsn, &last_commit, &w);
    for (int t = 0; t < HTX; t++) {
        if (!tx[t].open) continue;
        ++lsn;
        for (int c = 0; c < tx[t].nch; c++) {
            int k = tx[t].ch[c].key;
            h->state[k] = tx[t].ch[c].op == 'd' ? -1 : tx[t].ch[c].val;
        }
        stream_commit(h, &tx[t], lsn, incr, &last_commit, &w);
    }
}

static char *hist_value(const char *table, const hev *e)
{
    char after[64], before[64];
    if (e->op == 't') return NULL;
    snprintf(after, sizeof after, "{\"id\":%d,\"v\":%d}", e->key, e->val);
    snprintf(before, sizeof before, "{\"id\":%d}", e->key);
    const char *op = e->op == 'd' ? "d" : e->op == 'r' ? "r" : e->op == 'c' ? "c" : "u";
    if (!e->seq)
        return env_t(table, op, e->op == 'd' ? before : NULL, e->op == 'd' ? NULL : after, e->lsn, e->snap);
    int incremental = !strcmp(e->snap, "incremental");
    char commit[32] = "null", lsn[32] = "null";
    if (e->commit) snprintf(commit, sizeof commit, "\\\"%llu\\\"", e->commit);
    if (!incremental) snprintf(lsn, sizeof lsn, "%llu", e->lsn);
    const char *dot = strchr(table, '.');
    return fmt("{\"before\":%s,\"after\":%s,\"source\":{\"ts_ms\":1700000000000,\"snapshot\":\"%s\","
               "\"schema\":\"%.*s\",\"table\":\"%s\",\"lsn\":%s,\"sequence\":\"[%s,\\\"%llu\\\"]\"},"
               "\"op\":\"%s\",\"ts_ms\":1700000000001}",
               e->op == 'd' ? before : "null", e->op == 'd' ? "null" : after, e->snap, (int)(dot - table), table,
               dot + 1, lsn, commit, e->lsn, op);
}

/* An event that stands for a full snapshot's position: late events and
 * replays never cross one (README "The ordering version": positions). */
static int full_read(const hev *e) { return e->op == 'r' && strcmp(e->snap, "incremental"); }

/* One group of histories, each in its own table, delivered interleaved with
 * duplicates, replays (re-reading from an earlier offset) and late events
 * (an older event of a key re-published later), in random batch sizes. */
static void run_group(uint64_t seed, int nhist, int incr)
{
    uint64_t rs = seed * 2654435761u + 1;
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    hist *hs = calloc((size_t)nhist, sizeof *hs);
    recs all = {0};
    char topic[64], table[64];
    for (int i = 0; i < nhist; i++) {
        gen_history(&rs, &hs[i], 1000 + (unsigned long long)rnd(&rs, 1000) * 10, incr);
    }
    /* Build every history's topic with offsets, then deliver. */
    size_t *next = calloc((size_t)nhist, sizeof *next);
    long *off = calloc((size_t)nhist, sizeof *off);
    size_t remaining = 0;
    for (int i = 0; i < nhist; i++) remaining += hs[i].nev;
    char **topics = calloc((size_t)nhist, sizeof *topics);
    char **tables = calloc((size_t)nhist, sizeof *tables);
    for (int i = 0; i < nhist; i++) {
        snprintf(table, sizeof table, "public.h%d", i);
        snprintf(topic, sizeof topic, "hist.public.h%d", i);
        topics[i] = strdup(topic);
        tables[i] = strdup(table);
    }
    /* delivered[i] holds, per history, the records delivered so far (for replays) */
    typedef struct dl { long off; size_t ev; } dl;
    dl **deliv = calloc((size_t)nhist, sizeof *deliv);
    size_t *ndeliv = calloc((size_t)nhist, sizeof *ndeliv);
    for (int i = 0; i < nhist; i++) deliv[i] = calloc(hs[i].nev * 4 + 64, sizeof **deliv);
    while (remaining) {
        int i = rnd(&rs, nhist);
        hist *h = &hs[i];
        int a = rnd(&rs, 20);
        if (a == 0 && ndeliv[i] > 0) {
            /* replay: re-read a segment from an earlier offset (same offsets) */
            size_t from = (size_t)rnd(&rs, (int)ndeliv[i]);
            for (size_t j = from; j < ndeliv[i] && j < from + 8; j++) {
                const hev *e = &h->evs[deliv[i][j].ev];
                recs_add(&all, topics[i], 0, deliv[i][j].off,
                         fmt("{\"id\":%d}", e->op == 't' ? e->val : e->key), hist_value(tables[i], e));
            }
            continue;
        }
        if (a == 1 && next[i] > 0) {
            /* a connector restart re-publishes a suffix of the current stream
             * segment (not crossing a snapshot) at new offsets */
            size_t from = next[i] - 1 - (size_t)rnd(&rs, (int)(next[i] < 4 ? next[i] : 4));
            int crosses = 0;
            for (size_t j = from; j < next[i]; j++) crosses |= full_read(&h->evs[j]);
            if (!crosses)
                for (size_t j = from; j < next[i]; j++) {
                    const hev *e = &h->evs[j];
                    deliv[i][ndeliv[i]++] = (dl){off[i], j};
                    recs_add(&all, topics[i], 0, off[i]++, fmt("{\"id\":%d}", e->op == 't' ? e->val : e->key),
                             hist_value(tables[i], e));
                }
            continue;
        }
        if (a == 2 && next[i] > 1) {
            /* a late event: an older streamed change of the same segment
             * delivered again after newer ones */
            size_t j = (size_t)rnd(&rs, (int)next[i]);
            int crosses = 0;
            for (size_t k = j; k < next[i]; k++) crosses |= full_read(&h->evs[k]);
            if (!crosses && !full_read(&h->evs[j])) {
                const hev *e = &h->evs[j];
                deliv[i][ndeliv[i]++] = (dl){off[i], j};
                recs_add(&all, topics[i], 0, off[i]++, fmt("{\"id\":%d}", e->op == 't' ? e->val : e->key),
                         hist_value(tables[i], e));
            }
            continue;
        }
        if (next[i] >= h->nev) continue;
        const hev *e = &h->evs[next[i]];
        deliv[i][ndeliv[i]++] = (dl){off[i], next[i]};
        recs_add(&all, topics[i], 0, off[i]++, fmt("{\"id\":%d}", e->op == 't' ? e->val : e->key),
                 hist_value(tables[i], e));
        next[i]++;
        remaining--;
    }
    for (size_t p = 0; p < all.n;) {
        size_t bs = 1 + (size_t)rnd(&rs, 40);
        if (bs > all.n - p) bs = all.n - p;
        tu_apply(st, all.r + p, bs);
        p += bs;
    }
    for (int i = 0; i < nhist; i++) {
        char expect[4096] = "id,v\n";
        for (int k = 1; k <= HK; k++)
            if (hs[i].state[k] >= 0)
                snprintf(expect + strlen(expect), sizeof expect - strlen(expect), "%d,%d\n", k, hs[i].state[k]);
        char *got = tu_export(st, tables[i], 0);
        cr_assert_str_eq(got, expect, "seed %llu history %d", (unsigned long long)seed, i);
        free(got);
        /* the live-row counter agrees with the view */
        cdc_stats_t s;
        cr_assert_eq(cdc_store_stats(st, tables[i], &s, NULL), 0);
        uint64_t live = 0;
        for (int k = 1; k <= HK; k++) live += hs[i].state[k] >= 0;
        cr_assert_eq(s.rows_live, live, "seed %llu history %d: rows_live %llu, view %llu", (unsigned long long)seed, i,
                     (unsigned long long)s.rows_live, (unsigned long long)live);
    }
    /* The stored state is a function of the events, not of the batching:
     * the same records in one batch, and one by one, store the same rows,
     * versions and tombstones (export --meta). */
    if (incr) {
        for (int way = 0; way < 2; way++) {
            char *dir2 = tu_tmpdir();
            cdc_store_t *st2 = tu_open(dir2);
            if (way == 0) tu_apply(st2, all.r, all.n);
            else
                for (size_t p = 0; p < all.n; p++) tu_apply(st2, all.r + p, 1);
            for (int i = 0; i < nhist; i++) {
                char *m1 = tu_export(st, tables[i], 1), *m2 = tu_export(st2, tables[i], 1);
                cr_assert_str_eq(m2, m1, "seed %llu history %d: %s:\n%s\nvs\n%s", (unsigned long long)seed, i,
                                 way ? "one by one" : "one batch", m1, m2);
                free(m1);
                free(m2);
            }
            cdc_store_close(st2);
            tu_rmrf(dir2);
            free(dir2);
        }
    }
    /* and a whole replay of everything changes nothing */
    cdc_apply_result_t r = tu_apply(st, all.r, all.n);
    cr_assert_eq(r.applied, 0, "seed %llu: replay applied %llu", (unsigned long long)seed, (unsigned long long)r.applied);
    /* purge every tombstone (horizon above every LSN), replay again: still
     * nothing changes, no deleted row comes back */
    uint64_t purged;
    cr_assert_eq(cdc_store_gc(st, NULL, 1ull << 40, &purged, NULL), 0);
    r = tu_apply(st, all.r, all.n);
    cr_assert_eq(r.applied, 0, "seed %llu: replay after gc applied %llu", (unsigned long long)seed,
                 (unsigned long long)r.applied);
    for (int i = 0; i < nhist; i++) {
        char expect[4096] = "id,v\n";
        for (int k = 1; k <= HK; k++)
            if (hs[i].state[k] >= 0)
                snprintf(expect + strlen(expect), sizeof expect - strlen(expect), "%d,%d\n", k, hs[i].state[k]);
        char *got = tu_export(st, tables[i], 0);
        cr_assert_str_eq(got, expect, "seed %llu history %d after gc", (unsigned long long)seed, i);
        free(got);
    }
    for (int i = 0; i < nhist; i++) {
        free(hs[i].evs);
        free(deliv[i]);
        free(topics[i]);
        free(tables[i]);
    }
    free(hs);
    free(deliv);
    free(ndeliv);
    free(topics);
    free(tables);
    free(next);
    free(off);
    recs_free(&all);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* 10,000 histories: 500 groups of 20 tables (1/10th with CDC_TEST_QUICK,
 * under the sanitizers).  Groups stay small because RocksDB rewrites its
 * options file, listing every column family, each time one is created. */
ParameterizedTestParameters(random, ten_thousand_histories)
{
    static int shards[] = {0, 1, 2, 3};
    return cr_make_param_array(int, shards, 4);
}

ParameterizedTest(int *shard, random, ten_thousand_histories)
{
    int groups = getenv("CDC_TEST_QUICK") ? 50 : 500;
    for (int g = *shard; g < groups; g += 4) run_group((uint64_t)g + 1, 20, 0);
}

/* The same histories with source.sequence on every change and incremental
 * snapshot windows (reads at the high watermark, keys changed inside the
 * window dropped, transactions open across windows), late events and
 * replays crossing the reads: 4,000 histories (400 under CDC_TEST_QUICK). */
ParameterizedTestParameters(random, incremental_snapshot_histories)
{
    static int shards[] = {0, 1};
    return cr_make_param_array(int, shards, 2);
}

ParameterizedTest(int *shard, random, incremental_snapshot_histories)
{
    int groups = getenv("CDC_TEST_QUICK") ? 20 : 200;
    for (int g = *shard; g < groups; g += 2) run_group((uint64_t)g + 100001, 20, 1);
}

/* ---- Hostile shapes: long names, wide rows ---- */

static char *env_named(const char *schema, const char *table, const char *after)
{
    char *s = NULL;
    cr_assert(asprintf(&s, "{\"op\":\"c\",\"after\":%s,\"source\":{\"schema\":\"%s\",\"table\":\"%s\",\"lsn\":7}}",
                       after, schema, table) > 0);
    return s;
}

/* A table name of any length PostgreSQL allows (and far beyond, up to the
 * replica's limit) works and survives a reopen; a longer one is a dead
 * letter written before anything else, and the replica still opens. */
Test(apply, long_table_names)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    char longname[700], huge[2100];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    memset(huge, 'h', sizeof huge - 1);
    huge[sizeof huge - 1] = 0;
    char *a = env_named("public", longname, "{\"id\":1}");
    char *b = env_named("public", huge, "{\"id\":2}");
    cdc_record_t recs[2] = {tu_rec("t", 0, 0, "{\"id\":1}", a), tu_rec("t", 0, 1, "{\"id\":2}", b)};
    cdc_apply_result_t r = tu_apply(st, recs, 2);
    cr_expect_eq(r.applied, 1);
    cr_expect_eq(r.dead_letters, 1);
    cdc_store_close(st);
    st = tu_open(dir);
    char name[720];
    snprintf(name, sizeof name, "public.%s", longname);
    char *v = tu_export(st, name, 0);
    cr_expect_str_eq(v, "id\n1\n");
    free(v);
    char **names;
    size_t n;
    cr_assert_eq(cdc_store_tables(st, &names, &n, NULL), 0);
    cr_expect_eq(n, 1, "the refused name made no table");
    cdc_strings_free(names, n);
    cdc_store_close(st);
    free(a);
    free(b);
    tu_rmrf(dir);
    free(dir);
}

/* A row as wide as a PostgreSQL table can be (1,600 columns) applies, reads
 * back and reopens; a wider one is a dead letter. */
Test(apply, wide_rows)
{
    static char after[32768], wider[32768 + 64];
    size_t n = (size_t)snprintf(after, sizeof after, "{\"id\":1");
    for (int i = 1; i < 1600; i++) n += (size_t)snprintf(after + n, sizeof after - n, ",\"c%d\":%d", i, i);
    snprintf(wider, sizeof wider, "%s,\"c1600\":0}", after);
    snprintf(after + n, sizeof after - n, "}");
    char *a = env_named("public", "wide", after);
    char *b = env_named("public", "wide", wider);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_record_t recs[2] = {tu_rec("t", 0, 0, "{\"id\":1}", a), tu_rec("t", 0, 1, "{\"id\":1}", b)};
    cdc_apply_result_t r = tu_apply(st, recs, 2);
    cr_expect_eq(r.applied, 1);
    cr_expect_eq(r.dead_letters, 1);
    cdc_store_close(st);
    st = tu_open(dir);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.wide", "[1]", &row, NULL), 0);
    cr_expect_eq(row.ncols, 1600);
    for (size_t i = 1; i < row.ncols; i++) {
        char want[24];
        snprintf(want, sizeof want, "%zu", i);
        cr_expect(row.lens[i] == strlen(want) && !memcmp(row.values[i], want, row.lens[i]), "column %zu", i);
    }
    cdc_store_close(st);
    free(a);
    free(b);
    tu_rmrf(dir);
    free(dir);
}

/* A directory holding someone else's files is refused, for writing and
 * for reading, and nothing is written into it; an empty one is taken; a
 * replica with a stray file beside its own opens (one stray file made
 * every command refuse the replica). */
Test(apply, foreign_directory_refused)
{
    char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("not a replica\n", f);
    fclose(f);
    cdc_store_t *st = NULL;
    cdc_error_t e = {0};
    cr_expect_eq(cdc_store_open(dir, NULL, &st, &e), CDC_EINVAL);
    cr_expect(strstr(e.msg, "notes.txt"), "the message names what is there: %s", e.msg);
    cr_expect_null(st);
    cdc_open_options_t ro = {.read_only = 1};
    cr_expect_eq(cdc_store_open(dir, &ro, &st, &e), CDC_EINVAL);
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; (de = readdir(d));) n += de->d_name[0] != '.';
    closedir(d);
    cr_expect_eq(n, 1, "nothing was written beside the foreign file");
    unlink(path);
    st = tu_open(dir); /* empty now: taken */
    cdc_store_close(st);
    st = tu_open(dir); /* and reopened as the replica it became */
    cdc_store_close(st);
    /* a replica's own directory may hold other files: they are left alone */
    f = fopen(path, "w");
    cr_assert(f);
    fputs("a stray note\n", f);
    fclose(f);
    st = tu_open(dir);
    cdc_store_close(st);
    cr_expect_eq(cdc_store_open(dir, &ro, &st, &e), 0, "%s", e.msg);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* ---- The logs a writer leaves ---- */

static uint64_t log_bytes_of(const char *dir)
{
    uint64_t total = 0;
    DIR *d = opendir(dir);
    cr_assert(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 4, ".log")) continue;
        char path[600];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &sb) == 0) total += (uint64_t)sb.st_size;
    }
    closedir(d);
    return total;
}

/* A writer that wrote more than 16 MiB of log flushes every family at its
 * close, so the next open (every read-only command) replays nothing: the
 * metadata family, written by every batch, had kept every log since its
 * last flush.  The replica reads the same after it, positions included. */
Test(apply, a_writer_closing_over_long_logs_leaves_none_to_replay)
{
    enum { N = 24000, BATCH = 1000, KEYS = 2000 };
    char *dir = tu_tmpdir();
    static char keys[N][32], *envs[N];
    static cdc_record_t recs[N];
    char pad[801];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    for (int i = 0; i < N; i++) {
        char after[1024];
        snprintf(keys[i], sizeof keys[i], "{\"id\":%d}", i % KEYS);
        snprintf(after, sizeof after, "{\"id\":%d,\"v\":\"%d %s\"}", i % KEYS, i, pad);
        envs[i] = tu_env("u", NULL, after, 1000 + (unsigned long long)i, NULL);
        recs[i] = tu_rec("shop.public.orders", 0, i, keys[i], envs[i]);
    }
    cdc_store_t *st = tu_open(dir);
    for (int i = 0; i < N; i += BATCH) tu_apply(st, recs + i, BATCH);
    char *want = tu_export(st, "public.orders", 1);
    cr_assert_gt(log_bytes_of(dir), (uint64_t)16 << 20, "the run wrote more than 16 MiB of log");
    cdc_store_close(st);
    cr_expect_lt(log_bytes_of(dir), (uint64_t)64 << 10, "the close left %llu bytes of log",
                 (unsigned long long)log_bytes_of(dir));
    cdc_open_options_t ro = {.read_only = 1};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_open(dir, &ro, &st, &e), 0, "%s", e.msg);
    char *got = tu_export(st, "public.orders", 1);
    cr_expect_str_eq(got, want);
    int64_t pos = -2;
    cr_expect_eq(cdc_store_position(st, "shop.public.orders", 0, &pos, NULL), 0);
    cr_expect_eq(pos, N - 1);
    cdc_store_close(st);
    free(got);
    free(want);
    for (int i = 0; i < N; i++) free(envs[i]);
    tu_rmrf(dir);
    free(dir);
}

/* ---- A damaged write-ahead log ---- */

static char warned[4096];

static void capture_warn(void *opaque, int level, const char *facility, const char *msg)
{
    (void)opaque;
    (void)facility;
    if (level == CDC_LOG_WARN) snprintf(warned, sizeof warned, "%s", msg);
}

/* Flips a byte a third of the way into dir's write-ahead log. */
static void flip_wal_byte(const char *dir)
{
    char logpath[600] = "";
    DIR *d = opendir(dir);
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".log")) snprintf(logpath, sizeof logpath, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    cr_assert(logpath[0], "the replica has a write-ahead log");
    FILE *f = fopen(logpath, "r+b");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 3, SEEK_SET);
    int c = fgetc(f);
    fseek(f, size / 3, SEEK_SET);
    fputc(c ^ 0xff, f);
    fclose(f);
}

/* One flipped byte in the middle of the log: the replica rolls back to its
 * last consistent point, says so (with where each position now stands),
 * counts it, and converges once the source is read again from there. */
Test(apply, damaged_wal_rolls_back_with_a_warning)
{
    enum { N = 3000, BATCH = 500 };
    char *dir = tu_tmpdir(), *ref = tu_tmpdir();
    static char keys[N][32], *envs[N];
    static cdc_record_t recs[N];
    padded_updates(keys, envs, recs, N);
    cdc_store_t *st = tu_open(dir), *rs = tu_open(ref);
    for (int i = 0; i < N; i += BATCH) {
        tu_apply(st, recs + i, BATCH);
        tu_apply(rs, recs + i, BATCH);
    }
    cdc_store_close(st);
    char *want = tu_export(rs, "public.orders", 1);
    cdc_store_close(rs);
    flip_wal_byte(dir);

    warned[0] = 0;
    cdc_open_options_t oo = {.create_if_missing = 1, .log = capture_warn};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_open(dir, &oo, &st, &e), 0, "%s", e.msg);
    cr_expect(strstr(warned, "rolled back"), "a warning says so: %s", warned);
    cr_expect(strstr(warned, "shop.public.orders[0] now at offset"), "and where the position stands: %s", warned);
    int64_t pos = -1;
    cr_assert_eq(cdc_store_position(st, "shop.public.orders", 0, &pos, NULL), 0);
    cr_expect(pos >= -1 && pos < N - 1, "the replica went back (position %lld)", (long long)pos);
    cdc_stats_t s;
    cr_assert_eq(cdc_store_stats(st, NULL, &s, NULL), 0);
    cr_expect_eq(s.wal_rollbacks, 1);
    cr_expect_eq(s.events_read, (uint64_t)(pos + 1), "counters rolled back with the data");
    /* read again from the position: the replica converges */
    tu_apply(st, recs + pos + 1, (size_t)(N - 1 - pos));
    char *got = tu_export(st, "public.orders", 1);
    cr_expect_str_eq(got, want);
    cdc_store_close(st);
    warned[0] = 0;
    st = tu_open(dir);
    cr_assert_eq(cdc_store_stats(st, NULL, &s, NULL), 0);
    cr_expect_eq(s.wal_rollbacks, 1, "counted once, not at every open");
    cdc_store_close(st);
    free(got);
    free(want);
    for (int i = 0; i < N; i++) free(envs[i]);
    tu_rmrf(dir);
    tu_rmrf(ref);
    free(dir);
    free(ref);
}

/* A reader beside a writer reads a log the writer is appending to: a record
 * half written when read, with more bytes after it by the next read, looks
 * like damage before the end.  With the replica's LOCK held by another
 * process (a writer runs) a read-only open replays up to the last complete
 * batch, opens, and warns of no roll-back (export beside a running apply
 * printed "the replica rolled back" and sometimes failed); with no writer,
 * the same log is damage and the reader says so. */
Test(apply, reader_beside_a_writer_takes_the_log_up_to_its_last_whole_batch)
{
    enum { N = 3000, BATCH = 500 };
    char *dir = tu_tmpdir();
    static char keys[N][32], *envs[N];
    static cdc_record_t recs[N];
    padded_updates(keys, envs, recs, N);
    cdc_store_t *st = tu_open(dir);
    for (int i = 0; i < N; i += BATCH) tu_apply(st, recs + i, BATCH);
    cdc_store_close(st);
    flip_wal_byte(dir);

    /* a child process takes the LOCK as RocksDB's writer does (fcntl) */
    char lockpath[600];
    snprintf(lockpath, sizeof lockpath, "%s/LOCK", dir);
    int ready[2], release[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(release), 0);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        int fd = open(lockpath, O_RDWR);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        char c = fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1) _exit(1);
        if (read(release[0], &c, 1) < 0) _exit(1);
        _exit(0);
    }
    char c = 0;
    cr_assert_eq(read(ready[0], &c, 1), 1);
    cr_assert_eq(c, 'y', "the child holds the LOCK");

    warned[0] = 0;
    cdc_open_options_t ro = {.read_only = 1, .log = capture_warn};
    cdc_error_t e = {0};
    int rc = cdc_store_open(dir, &ro, &st, &e);
    cr_expect_eq(rc, 0, "a reader beside the writer opens: %s", e.msg);
    cr_expect(!strstr(warned, "rolled back"), "and warns of no roll-back: %s", warned);
    int64_t pos = -2;
    if (rc == 0) {
        cr_expect_eq(cdc_store_position(st, "shop.public.orders", 0, &pos, NULL), 0);
        cr_expect(pos >= -1 && pos < N - 1, "it reads the state up to the last whole batch (position %lld)",
                  (long long)pos);
        cdc_store_close(st);
    }
    cr_assert_eq(write(release[1], "x", 1), 1);
    int status;
    waitpid(child, &status, 0);

    /* no writer: the same log is damage, and the reader says so */
    warned[0] = 0;
    cr_assert_eq(cdc_store_open(dir, &ro, &st, &e), 0, "%s", e.msg);
    cr_expect(strstr(warned, "rolled back"), "without a writer the damage is reported: %s", warned);
    cdc_store_close(st);
    for (int i = 0; i < N; i++) free(envs[i]);
    tu_rmrf(dir);
    free(dir);
}

/* The position keeps the fingerprint of the record at its offset (read
 * from Kafka; none from a file), across a reopen; forgetting it leaves no
 * position, and the next records of the partition are stored as new. */
Test(apply, positions_keep_the_fingerprint_of_their_record_and_can_be_forgotten)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    char *e1 = tu_env("c", NULL, "{\"id\":1,\"v\":\"a\"}", 100, NULL);
    char *e2 = tu_env("u", NULL, "{\"id\":1,\"v\":\"b\"}", 200, NULL);
    cdc_record_t recs[3] = {tu_rec("fp.public.t", 0, 7, "{\"id\":1}", e1), tu_rec("fp.public.t", 0, 8, "{\"id\":1}", e2),
                            tu_rec("fp.public.t", 1, 3, "{\"id\":1}", NULL)};
    tu_apply(st, recs, 3);
    int64_t off;
    uint64_t fp;
    cr_assert_eq(cdc_store_position_fingerprint(st, "fp.public.t", 0, &off, &fp, NULL), 0);
    cr_expect_eq(off, 8);
    cr_expect_eq(fp, cdc_record_fingerprint(recs[1].key, recs[1].key_len, e2, strlen(e2)), "the record at offset 8's");
    cr_expect_neq(fp, cdc_record_fingerprint(recs[0].key, recs[0].key_len, e1, strlen(e1)));
    uint64_t tomb = cdc_record_fingerprint(recs[2].key, recs[2].key_len, NULL, 0);
    cr_expect_neq(tomb, cdc_record_fingerprint(recs[2].key, recs[2].key_len, "", 0), "a tombstone is not an empty value");
    cdc_store_close(st);
    st = tu_open(dir);
    cr_assert_eq(cdc_store_position_fingerprint(st, "fp.public.t", 1, &off, &fp, NULL), 0);
    cr_expect_eq(off, 3);
    cr_expect_eq(fp, tomb, "kept across a reopen");
    /* from a file: no fingerprint */
    cdc_record_t fr = tu_rec("fp.public.t", 2, 5, "{\"id\":1}", e2);
    fr.source = "input.jsonl";
    tu_apply(st, &fr, 1);
    cr_assert_eq(cdc_store_position_fingerprint(st, "fp.public.t", 2, &off, &fp, NULL), 0);
    cr_expect_eq(off, 5);
    cr_expect_eq(fp, 0, "a file's record has none");
    /* forgotten: no position; a record at a lower offset is stored again */
    cr_assert_eq(cdc_store_position_forget(st, "fp.public.t", 0, NULL), 0);
    cr_assert_eq(cdc_store_position_fingerprint(st, "fp.public.t", 0, &off, &fp, NULL), 0);
    cr_expect_eq(off, -1);
    cr_expect_eq(fp, 0);
    cdc_record_t again = tu_rec("fp.public.t", 0, 2, "{\"id\":1}", e1);
    tu_apply(st, &again, 1);
    cdc_store_close(st);
    st = tu_open(dir);
    cr_assert_eq(cdc_store_position(st, "fp.public.t", 0, &off, NULL), 0);
    cr_expect_eq(off, 2, "the new topic's position, lower than the old");
    cr_assert_eq(cdc_store_position(st, "fp.public.t", 1, &off, NULL), 0);
    cr_expect_eq(off, 3, "another partition's untouched");
    cdc_store_close(st);
    free(e1);
    free(e2);
    tu_rmrf(dir);
    free(dir);
}

/* A reader opened in the process that writes the replica (a library user
 * running ingest and reconcile together) leaves the writer's LOCK held:
 * fcntl locks belong to the process, and closing a descriptor of LOCK
 * dropped them (a second writer could then open the replica). */
Test(apply, a_reader_in_the_writers_process_keeps_the_writers_lock)
{
    char *dir = tu_tmpdir();
    cdc_store_t *w = tu_open(dir), *r = NULL;
    char *e1 = tu_env("c", NULL, "{\"id\":1}", 10, NULL);
    cdc_record_t rec = tu_rec("l.public.t", 0, 0, "{\"id\":1}", e1);
    tu_apply(w, &rec, 1);
    cdc_open_options_t ro = {.read_only = 1};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_open(dir, &ro, &r, &e), 0, "%s", e.msg);
    cdc_store_close(r);
    char lockpath[600];
    snprintf(lockpath, sizeof lockpath, "%s/LOCK", dir);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) { /* another process: is LOCK still held? */
        int fd = open(lockpath, O_RDWR);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        _exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer's lock is still held after the reader closed");
    cdc_store_close(w);
    free(e1);
    tu_rmrf(dir);
    free(dir);
}

/* Exact keys end to end: 2^53 and 2^53 + 1 are two rows; and a delete
 * whose before image holds a value that does not decode still deletes. */
Test(apply, exact_keys_and_undecodable_before_images)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    const char *e1 = "{\"op\":\"c\",\"after\":{\"id\":9007199254740992,\"v\":\"a\"},\"source\":{\"schema\":\"public\",\"table\":\"big\",\"lsn\":10}}";
    const char *e2 = "{\"op\":\"c\",\"after\":{\"id\":9007199254740993,\"v\":\"b\"},\"source\":{\"schema\":\"public\",\"table\":\"big\",\"lsn\":11}}";
    const char *e3 = "{\"op\":\"d\",\"before\":{\"id\":9007199254740992,\"v\":1e999},\"after\":null,\"source\":{\"schema\":\"public\",\"table\":\"big\",\"lsn\":12}}";
    cdc_record_t recs[3] = {tu_rec("x.public.big", 0, 0, "{\"id\":9007199254740992}", e1),
                            tu_rec("x.public.big", 0, 1, "{\"id\":9007199254740993}", e2),
                            tu_rec("x.public.big", 0, 2, "{\"id\":9007199254740992}", e3)};
    cdc_apply_result_t r = tu_apply(st, recs, 2);
    cr_expect_eq(r.applied, 2, "two keys, two rows");
    char *v = tu_export(st, "public.big", 0);
    cr_expect_str_eq(v, "id,v\n9007199254740992,a\n9007199254740993,b\n");
    free(v);
    r = tu_apply(st, recs + 2, 1);
    cr_expect_eq(r.dead_letters, 0);
    cr_expect_eq(r.applied, 1, "the delete applies");
    v = tu_export(st, "public.big", 0);
    cr_expect_str_eq(v, "id,v\n9007199254740993,b\n", "no ghost row");
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* bytea under Debezium's default binary.handling.mode=bytes arrives as
 * base64: declared as bytea (no schema), it is stored as PostgreSQL prints
 * it, \x00ff10, and the placeholder of an unchanged TOASTed bytea still
 * keeps the stored value. */
Test(apply, bytea_declared)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_set_column_type(st, "public.bin", "b", "bytea", &e), 0, "%s", e.msg);
    const char *e1 = "{\"op\":\"c\",\"after\":{\"id\":1,\"b\":\"AP8Q\"},\"source\":{\"schema\":\"public\",\"table\":\"bin\",\"lsn\":10}}";
    const char *e2 = "{\"op\":\"u\",\"after\":{\"id\":1,\"b\":\"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==\"},\"source\":{\"schema\":\"public\",\"table\":\"bin\",\"lsn\":11}}";
    const char *e3 = "{\"op\":\"c\",\"after\":{\"id\":2,\"b\":\"not base64!\"},\"source\":{\"schema\":\"public\",\"table\":\"bin\",\"lsn\":12}}";
    cdc_record_t recs[3] = {tu_rec("x.public.bin", 0, 0, "{\"id\":1}", e1), tu_rec("x.public.bin", 0, 1, "{\"id\":1}", e2),
                            tu_rec("x.public.bin", 0, 2, "{\"id\":2}", e3)};
    cdc_apply_result_t r = tu_apply(st, recs, 1);
    r = tu_apply(st, recs + 1, 2);
    cr_expect_eq(r.dead_letters, 1, "a value that is not base64 is a dead letter");
    char *v = tu_export(st, "public.bin", 0);
    cr_expect_str_eq(v, "id,b\n1,\\x00ff10\n");
    free(v);
    cr_expect_eq(cdc_store_set_column_type(st, "public.bin", "b", "blob", &e), CDC_EINVAL);
    cr_expect(strstr(e.msg, "bytea"), "the message lists bytea: %s", e.msg);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* timestamptz declared without a schema: the ZonedTimestamp text is stored
 * as it comes, the column's descriptor says ZonedTimestamp (so the typed
 * exports type it, and CSV writes a year before 1 as PostgreSQL does); a
 * number in it is a dead letter that names the declaration. */
Test(apply, timestamptz_declared)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_set_column_type(st, "public.tz", "at", "timestamptz", &e), 0, "%s", e.msg);
    const char *e1 = "{\"op\":\"c\",\"after\":{\"id\":1,\"at\":\"-0044-03-15T10:00:00.000000Z\"},\"source\":{\"schema\":\"public\",\"table\":\"tz\",\"lsn\":10}}";
    const char *e2 = "{\"op\":\"c\",\"after\":{\"id\":2,\"at\":1700000000000},\"source\":{\"schema\":\"public\",\"table\":\"tz\",\"lsn\":11}}";
    cdc_record_t recs[2] = {tu_rec("x.public.tz", 0, 0, "{\"id\":1}", e1), tu_rec("x.public.tz", 0, 1, "{\"id\":2}", e2)};
    cdc_apply_result_t r = tu_apply(st, recs, 2);
    cr_expect_eq(r.applied, 1);
    cr_expect_eq(r.dead_letters, 1, "a number is not a ZonedTimestamp");
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.tz", "{\"id\":1}", &row, &e), 0, "%s", e.msg);
    cr_expect_eq(row.lens[1], strlen("-0044-03-15T10:00:00.000000Z"));
    cr_expect(!memcmp(row.values[1], "-0044-03-15T10:00:00.000000Z", row.lens[1]), "stored as it came");
    const char *const *types;
    size_t nt;
    cr_assert_eq(cdc_store_column_types(st, "public.tz", &types, &nt, &e), 0, "%s", e.msg);
    cr_assert_eq(nt, 2);
    cr_expect_str_eq(types[1], "string/io.debezium.time.ZonedTimestamp");
    char *v = tu_export(st, "public.tz", 0);
    cr_expect_str_eq(v, "id,at\n1,0045-03-15T10:00:00.000000Z BC\n");
    free(v);
    cdc_dlq_iter_t *di;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &di, &e), 0, "%s", e.msg);
    cr_assert_eq(cdc_dlq_next(di, &dl, &e), 1, "the number's dead letter");
    cr_expect(strstr(dl.reason, "declared timestamptz") && dl.offset == 1, "%s at offset %lld", dl.reason,
              (long long)dl.offset);
    cdc_dlq_close(di);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A key of other columns than the table's primary key (as learnt from its
 * first event) is a dead letter: its row could not be read by key.  A
 * truncate before any row teaches no key. */
Test(apply, key_of_other_columns)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    const char *tr = "{\"op\":\"t\",\"source\":{\"schema\":\"public\",\"table\":\"k\",\"lsn\":9}}";
    const char *e1 = "{\"op\":\"c\",\"after\":{\"id\":1,\"x\":2},\"source\":{\"schema\":\"public\",\"table\":\"k\",\"lsn\":10}}";
    const char *e2 = "{\"op\":\"c\",\"after\":{\"id\":2,\"x\":3},\"source\":{\"schema\":\"public\",\"table\":\"k\",\"lsn\":11}}";
    cdc_record_t recs[4] = {tu_rec("x.public.k", 0, 0, NULL, tr), tu_rec("x.public.k", 0, 1, "{\"id\":1}", e1),
                            tu_rec("x.public.k", 0, 2, "{\"id\":2,\"x\":3}", e2),
                            tu_rec("x.public.k", 0, 3, "{\"x\":3}", e2)};
    cdc_apply_result_t r = tu_apply(st, recs, 4);
    cr_expect_eq(r.applied, 2, "the truncate and the first row");
    cr_expect_eq(r.dead_letters, 2);
    cdc_row_t row;
    cdc_error_t e = {0};
    cr_expect_eq(cdc_store_get(st, "public.k", "{\"id\":1}", &row, &e), 0, "%s", e.msg);
    cdc_iter_t *it;
    cr_assert_eq(cdc_iter_open(st, "public.k", NULL, &it, NULL), 0);
    int n = 0;
    while (cdc_iter_next(it, &row, NULL) == 1) {
        cr_expect_str_eq(row.key_json, "{\"id\":1}");
        n++;
    }
    cdc_iter_close(it);
    cr_expect_eq(n, 1);
    cdc_dlq_iter_t *dit;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &dit, NULL), 0);
    cr_assert_eq(cdc_dlq_next(dit, &dl, NULL), 1);
    cr_expect(strstr(dl.reason, "the key's columns (id, x, in that order) are not the table's primary key (id)"), "%s",
              dl.reason);
    cdc_dlq_close(dit);
    cdc_stats_t s;
    cr_assert_eq(cdc_store_stats(st, "public.k", &s, NULL), 0);
    cr_expect_eq(s.events_read, 4);
    cr_expect_eq(s.dead_letters, 2);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* newest_ts_ms and newest_lsn are high-water marks of the applied changes:
 * a late change that is applied, or a stale one however recent its ts_ms,
 * never lowers or raises them wrongly; the totals take the largest of the
 * tables'; they survive a reopen.  cdc_store_positions lists every stored
 * position. */
static char *env_ts(const char *table, const char *op, const char *after, unsigned long long lsn, long long ts)
{
    const char *dot = strchr(table, '.');
    return fmt("{\"before\":null,\"after\":%s,\"source\":{\"ts_ms\":%lld,\"snapshot\":\"false\",\"schema\":\"%.*s\","
               "\"table\":\"%s\",\"lsn\":%llu},\"op\":\"%s\",\"ts_ms\":%lld}",
               after, ts, (int)(dot - table), table, dot + 1, lsn, op, ts + 1);
}

Test(stats, newest_change_is_a_high_water_mark)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    recs a = {0}, b = {0};
    recs_add(&a, T, 0, 0, strdup("{\"order_id\":1}"), env_ts("public.orders", "c", "{\"order_id\":1,\"s\":\"a\"}", 100, 1000));
    recs_add(&a, T, 0, 1, strdup("{\"order_id\":2}"), env_ts("public.orders", "c", "{\"order_id\":2,\"s\":\"a\"}", 300, 3000));
    tu_apply(st, a.r, a.n);
    cdc_stats_t s;
    cr_assert_eq(cdc_store_stats(st, "public.orders", &s, NULL), 0);
    cr_expect_eq(s.newest_ts_ms, 3000);
    cr_expect_eq(s.newest_lsn, 300);
    /* key 1 at LSN 200 is applied (newer than its 100) but older than the
     * newest change; key 2 at LSN 250 is stale whatever its ts_ms */
    recs_add(&b, T, 0, 2, strdup("{\"order_id\":1}"), env_ts("public.orders", "u", "{\"order_id\":1,\"s\":\"b\"}", 200, 2000));
    recs_add(&b, T, 0, 3, strdup("{\"order_id\":2}"), env_ts("public.orders", "u", "{\"order_id\":2,\"s\":\"b\"}", 250, 9999));
    recs_add(&b, "shop.public.lines", 0, 7, strdup("{\"id\":1}"), env_ts("public.lines", "c", "{\"id\":1}", 50, 5000));
    cdc_apply_result_t r = tu_apply(st, b.r, b.n);
    cr_expect_eq(r.applied, 2);
    cr_expect_eq(r.stale, 1);
    cdc_store_close(st);
    st = tu_open(dir);
    cr_assert_eq(cdc_store_stats(st, "public.orders", &s, NULL), 0);
    cr_expect_eq(s.newest_ts_ms, 3000, "got %llu", (unsigned long long)s.newest_ts_ms);
    cr_expect_eq(s.newest_lsn, 300);
    cr_assert_eq(cdc_store_stats(st, NULL, &s, NULL), 0);
    cr_expect_eq(s.newest_ts_ms, 5000, "the totals take the largest");
    cr_expect_eq(s.newest_lsn, 300);
    cr_expect_eq(s.applied, 4, "the other counters still add up");
    cdc_position_t *pos = NULL;
    size_t n = 0;
    cr_assert_eq(cdc_store_positions(st, &pos, &n, NULL), 0);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(pos[0].topic, "shop.public.lines");
    cr_expect_eq(pos[0].offset, 7);
    cr_expect_str_eq(pos[1].topic, T);
    cr_expect_eq(pos[1].partition, 0);
    cr_expect_eq(pos[1].offset, 3);
    cdc_positions_free(pos, n);
    cdc_positions_free(NULL, 0);
    cdc_store_close(st);
    recs_free(&a);
    recs_free(&b);
    tu_rmrf(dir);
    free(dir);
}

/* A key that arrives on another Kafka partition than its stored value's (or
 * than another event of its batch) is counted and logged once per key and
 * batch: the topic was repartitioned and per-key order no longer holds.  The
 * version guard still decides what is applied.  The same partition again, a
 * replay, and records without a Kafka position (bare envelopes) are not
 * counted; the stored partition survives a reopen. */
Test(stats, a_key_on_another_partition_is_counted_and_logged)
{
    char *dir = tu_tmpdir();
    warned[0] = 0;
    cdc_open_options_t oo = {.create_if_missing = 1, .log = capture_warn};
    cdc_error_t e = {0};
    cdc_store_t *st = NULL;
    cr_assert_eq(cdc_store_open(dir, &oo, &st, &e), 0, "%s", e.msg);
    const char *o = "public.orders";
    recs a = {0}, b = {0}, c = {0}, d = {0};
    recs_add(&a, T, 0, 0, strdup("{\"order_id\":1}"), env_ts(o, "c", "{\"order_id\":1,\"s\":\"a\"}", 100, 1000));
    recs_add(&a, T, 1, 0, strdup("{\"order_id\":2}"), env_ts(o, "c", "{\"order_id\":2,\"s\":\"a\"}", 110, 1000));
    /* key 3 on two partitions within one batch */
    recs_add(&a, T, 0, 1, strdup("{\"order_id\":3}"), env_ts(o, "c", "{\"order_id\":3,\"s\":\"a\"}", 120, 1000));
    recs_add(&a, T, 1, 1, strdup("{\"order_id\":3}"), env_ts(o, "u", "{\"order_id\":3,\"s\":\"b\"}", 130, 1000));
    tu_apply(st, a.r, a.n);
    cdc_stats_t s;
    cr_assert_eq(cdc_store_stats(st, o, &s, NULL), 0);
    cr_expect_eq(s.repartitioned_keys, 1, "key 3 only, got %llu", (unsigned long long)s.repartitioned_keys);
    cr_expect(strstr(warned, "table public.orders: key {\"order_id\":3} arrived on partition 1 after partition 0"),
              "the warning names the table, the key and both partitions: %s", warned);
    cr_expect(strstr(warned, "repartitioned"), "%s", warned);
    /* the same partitions again (key 1 on 0, key 2 on 1, key 3 on 1, where its
     * newest event came from), and a replay of the first batch: no count */
    recs_add(&b, T, 0, 2, strdup("{\"order_id\":1}"), env_ts(o, "u", "{\"order_id\":1,\"s\":\"b\"}", 200, 2000));
    recs_add(&b, T, 1, 2, strdup("{\"order_id\":2}"), env_ts(o, "u", "{\"order_id\":2,\"s\":\"b\"}", 210, 2000));
    recs_add(&b, T, 1, 3, strdup("{\"order_id\":3}"), env_ts(o, "u", "{\"order_id\":3,\"s\":\"c\"}", 220, 2000));
    tu_apply(st, b.r, b.n);
    tu_apply(st, a.r + 0, 2);
    cr_assert_eq(cdc_store_stats(st, o, &s, NULL), 0);
    cr_expect_eq(s.repartitioned_keys, 1, "got %llu", (unsigned long long)s.repartitioned_keys);
    cdc_store_close(st);
    /* after a reopen: key 1 arrives on partition 2 (counted, applied by its
     * version), key 2 stale on partition 0 (counted, not applied), and bare
     * envelopes of keys 1 and 2 (no partition: not counted) */
    warned[0] = 0;
    cr_assert_eq(cdc_store_open(dir, &oo, &st, &e), 0, "%s", e.msg);
    recs_add(&c, T, 2, 0, strdup("{\"order_id\":1}"), env_ts(o, "u", "{\"order_id\":1,\"s\":\"c\"}", 300, 3000));
    recs_add(&c, T, 0, 3, strdup("{\"order_id\":2}"), env_ts(o, "u", "{\"order_id\":2,\"s\":\"x\"}", 150, 1500));
    cdc_apply_result_t r = tu_apply(st, c.r, c.n);
    cr_expect_eq(r.applied, 1);
    cr_expect_eq(r.stale, 1);
    cr_assert_eq(cdc_store_stats(st, o, &s, NULL), 0);
    cr_expect_eq(s.repartitioned_keys, 3, "got %llu", (unsigned long long)s.repartitioned_keys);
    cr_expect(strstr(warned, "arrived on partition 2 after partition 0") ||
                  strstr(warned, "arrived on partition 0 after partition 1"),
              "logged again in the new session: %s", warned);
    recs_add(&d, NULL, 0, -1, NULL, env_ts(o, "u", "{\"order_id\":1,\"s\":\"d\"}", 400, 4000));
    recs_add(&d, NULL, 0, -1, NULL, env_ts(o, "u", "{\"order_id\":2,\"s\":\"d\"}", 410, 4000));
    r = tu_apply(st, d.r, d.n);
    cr_expect_eq(r.applied, 2);
    cr_assert_eq(cdc_store_stats(st, o, &s, NULL), 0);
    cr_expect_eq(s.repartitioned_keys, 3, "bare envelopes carry no partition");
    /* the partition a bare envelope leaves is the one before it: key 1 on 2 */
    cdc_store_close(st);
    cr_assert_eq(cdc_store_open(dir, &oo, &st, &e), 0, "%s", e.msg);
    recs_free(&c);
    recs_add(&c, T, 2, 1, strdup("{\"order_id\":1}"), env_ts(o, "u", "{\"order_id\":1,\"s\":\"e\"}", 500, 5000));
    tu_apply(st, c.r, c.n);
    cr_assert_eq(cdc_store_stats(st, o, &s, NULL), 0);
    cr_expect_eq(s.repartitioned_keys, 3, "got %llu", (unsigned long long)s.repartitioned_keys);
    cdc_store_close(st);
    recs_free(&a);
    recs_free(&b);
    recs_free(&c);
    recs_free(&d);
    tu_rmrf(dir);
    free(dir);
}

/* A truncate is counted like a row event (applied, a duplicate of itself,
 * or stale under a newer floor), so that the counters of a table add up to
 * the records it read at every batching; before, it was counted nowhere. */
Test(apply, truncates_are_counted)
{
    const char *evs[] = {
        "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"schema\":\"public\",\"table\":\"tr\",\"lsn\":100}}",
        "{\"op\":\"t\",\"source\":{\"schema\":\"public\",\"table\":\"tr\",\"lsn\":200}}",
        "{\"op\":\"t\",\"source\":{\"schema\":\"public\",\"table\":\"tr\",\"lsn\":200}}", /* again */
        "{\"op\":\"t\",\"source\":{\"schema\":\"public\",\"table\":\"tr\",\"lsn\":150}}", /* older */
        "{\"op\":\"c\",\"after\":{\"id\":2},\"source\":{\"schema\":\"public\",\"table\":\"tr\",\"lsn\":300}}",
    };
    const char *keys[] = {"{\"id\":1}", NULL, NULL, NULL, "{\"id\":2}"};
    for (size_t bs = 1; bs <= 5; bs++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        cdc_record_t recs[5];
        for (int i = 0; i < 5; i++) recs[i] = tu_rec("x.public.tr", 0, i, keys[i], evs[i]);
        for (size_t i = 0; i < 5; i += bs) tu_apply(st, recs + i, i + bs <= 5 ? bs : 5 - i);
        cdc_stats_t s;
        cr_assert_eq(cdc_store_stats(st, "public.tr", &s, NULL), 0);
        cr_expect_eq(s.events_read, 5, "batches of %zu", bs);
        cr_expect_eq(s.applied + s.stale + s.duplicate + s.tombstones + s.other_events + s.dead_letters, 5,
                     "batches of %zu: applied %llu stale %llu duplicate %llu", bs, (unsigned long long)s.applied,
                     (unsigned long long)s.stale, (unsigned long long)s.duplicate);
        cr_expect_eq(s.duplicate, 1, "the second truncate at 200, batches of %zu", bs);
        cr_expect_geq(s.stale, 1, "the truncate at 150, batches of %zu", bs);
        cr_expect_eq(s.rows_live, 1, "batches of %zu", bs);
        char *v = tu_export(st, "public.tr", 0);
        cr_expect_str_eq(v, "id\n2\n", "batches of %zu", bs);
        free(v);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* The columns a table has do not depend on where the stream was cut: rows
 * created and then truncated in one batch (or made stale in it by the
 * completion of a new snapshot) still give the table their columns, as
 * batches of one do; a column of an event below the floor the table had
 * before the batch adds nothing. */
Test(apply, columns_of_rows_a_floor_of_the_same_batch_hides)
{
    const char *evs[] = {
        "{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"a\",\"w\":1},\"source\":{\"schema\":\"public\",\"table\":\"tc\",\"lsn\":100}}",
        "{\"op\":\"c\",\"after\":{\"id\":2,\"v\":\"b\",\"w\":2},\"source\":{\"schema\":\"public\",\"table\":\"tc\",\"lsn\":101}}",
        "{\"op\":\"t\",\"source\":{\"schema\":\"public\",\"table\":\"tc\",\"lsn\":110}}",
        /* older than the truncate, in a later batch: stale, no column */
        "{\"op\":\"u\",\"after\":{\"id\":3,\"v\":\"c\",\"late\":1},\"source\":{\"schema\":\"public\",\"table\":\"tc\",\"lsn\":105}}",
    };
    const char *keys[] = {"{\"id\":1}", "{\"id\":2}", NULL, "{\"id\":3}"};
    for (size_t bs = 1; bs <= 3; bs++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        cdc_record_t recs[4];
        for (int i = 0; i < 4; i++) recs[i] = tu_rec("x.public.tc", 0, i, keys[i], evs[i]);
        for (size_t i = 0; i < 3; i += bs) tu_apply(st, recs + i, i + bs <= 3 ? bs : 3 - i);
        char *v = tu_export(st, "public.tc", 0);
        cr_expect_str_eq(v, "id,v,w\n", "batches of %zu", bs);
        free(v);
        tu_apply(st, recs + 3, 1);
        v = tu_export(st, "public.tc", 0);
        cr_expect_str_eq(v, "id,v,w\n", "batches of %zu, then a stale row below the floor", bs);
        free(v);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
}

/* A replica whose CURRENT file is gone (the file naming its manifest) is
 * damaged: a writing open refuses it, naming the file, and leaves its data
 * files as they are (before, RocksDB started a new replica over them, which
 * came back empty and deleted its tables as obsolete).  A directory without
 * data files (a first open cut short) is still made a replica. */
Test(apply, replica_without_current_refused)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_record_t r = tu_rec(T, 0, 0, "{\"order_id\":1}",
                            "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"a\"},\"source\":{\"schema\":\"public\","
                            "\"table\":\"orders\",\"lsn\":10}}");
    tu_apply(st, &r, 1);
    cdc_store_close(st);
    char path[512];
    snprintf(path, sizeof path, "%s/CURRENT", dir);
    cr_assert_eq(unlink(path), 0);
    int before = 0, after = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; (de = readdir(d));) before += strstr(de->d_name, ".sst") || strstr(de->d_name, ".log");
    closedir(d);
    cr_assert_gt(before, 0);
    cdc_error_t e = {0};
    cr_expect_eq(cdc_store_open(dir, NULL, &st, &e), CDC_ECORRUPT);
    cr_expect(strstr(e.msg, "CURRENT file is missing"), "%s", e.msg);
    cdc_open_options_t ro = {.read_only = 1};
    cr_expect_neq(cdc_store_open(dir, &ro, &st, &e), 0);
    d = opendir(dir);
    for (struct dirent *de; (de = readdir(d));) after += strstr(de->d_name, ".sst") || strstr(de->d_name, ".log");
    closedir(d);
    cr_expect_eq(after, before, "the data files (tables, logs) are kept");
    tu_rmrf(dir);
    /* no data file: a new replica is made */
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/LOG", dir);
    FILE *f = fopen(path, "w");
    fclose(f);
    st = tu_open(dir);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A second writer of a replica is refused in words, CDC_ELOCKED. */
Test(apply, second_writer_refused)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir), *st2 = NULL;
    cdc_error_t e = {0};
    cr_expect_eq(cdc_store_open(dir, NULL, &st2, &e), CDC_ELOCKED, "%s", e.msg);
    cr_expect(strstr(e.msg, "the replica is in use"), "%s", e.msg);
    cr_expect_null(st2);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}
