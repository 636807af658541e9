/*
 * test_tables.c: many tables in one replica.  New tables keep their rows in
 * the shared family "rows" under a 4-byte table id (store/store.c's head);
 * these tests check that no read, scan, floor or purge of one table ever
 * reaches its neighbour's rows, including a table whose keys are the largest
 * possible next to a table whose keys are the smallest, that tables of a
 * replica written before the layout (their own family each) keep working
 * beside new prefixed ones, and that a process killed while it creates
 * tables leaves whole batches (a table's id goes with its first rows).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"
#include "store.h"

#define NT 300
#define NK 6 /* keys per table: INT64_MIN, 1..4, INT64_MAX */

static const char *const key_text[NK] = {"-9223372036854775808", "1", "2", "3", "4", "9223372036854775807"};

#define fmt tu_fmt

/* A record of table public.tNNNN (topic shop.public.tNNNN): op c/u/d/r of
 * key k with value v, at lsn; snapshot "false", "first", "true" or "last". */
static cdc_record_t rec(int table, int k, const char *op, const char *v, unsigned long long lsn,
                        const char *snapshot, long offset, char **owned)
{
    char *topic = fmt("shop.public.t%04d", table);
    char *key = fmt("{\"id\":%s}", key_text[k]);
    char *row = v ? fmt("{\"id\":%s,\"v\":\"%s\"}", key_text[k], v) : NULL;
    char *val = fmt("{\"before\":%s,\"after\":%s,\"source\":{\"ts_ms\":1700000000000,\"snapshot\":\"%s\","
                    "\"schema\":\"public\",\"table\":\"t%04d\",\"lsn\":%llu},\"op\":\"%s\",\"ts_ms\":1700000000001}",
                    row ? "null" : key, row ? row : "null", snapshot, table, lsn, op);
    free(row);
    owned[0] = topic;
    owned[1] = key;
    owned[2] = val;
    return tu_rec(topic, 0, offset, key, val);
}

typedef struct batch {
    cdc_record_t *r;
    char **owned;
    size_t n;
} batch;

static void batch_add(batch *b, cdc_record_t r, char **three)
{
    b->r = realloc(b->r, (b->n + 1) * sizeof *b->r);
    b->owned = realloc(b->owned, (b->n + 1) * 3 * sizeof *b->owned);
    b->r[b->n] = r;
    memcpy(b->owned + b->n * 3, three, 3 * sizeof *three);
    b->n++;
}

static void batch_free(batch *b)
{
    for (size_t i = 0; i < b->n * 3; i++) free(b->owned[i]);
    free(b->owned);
    free(b->r);
    memset(b, 0, sizeof *b);
}

/* The model: per table and key, the live value (NULL: absent or deleted);
 * per table, whether any upsert was applied (model_upserts). */
static char *model[NT + 1][NK];
static int model_upserts[NT + 1];

static char *expected_export(int t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    /* A table whose applied events are all deletes (their before image is
     * the key) has shown the replica no other column. */
    fprintf(f, model_upserts[t] ? "id,v\n" : "id\n");
    for (int k = 0; k < NK; k++)
        if (model[t][k]) fprintf(f, "%s,%s\n", key_text[k], model[t][k]);
    fclose(f);
    return buf;
}

static void check_table(cdc_store_t *st, int t)
{
    char name[32];
    snprintf(name, sizeof name, "public.t%04d", t);
    char *want = expected_export(t), *got = tu_export(st, name, 0);
    cr_assert_str_eq(got, want, "table %s: export\n%s\nexpected\n%s", name, got, want);
    free(want);
    free(got);
    for (int k = 0; k < NK; k++) {
        char kj[64];
        snprintf(kj, sizeof kj, "[%s]", key_text[k]);
        cdc_row_t row;
        int rc = cdc_store_get(st, name, kj, &row, NULL);
        if (!model[t][k]) { /* never written, or a tombstone */
            cr_assert(rc == CDC_ENOTFOUND || (rc == 0 && row.deleted), "get %s %s: %d", name, kj, rc);
            continue;
        }
        cr_assert_eq(rc, 0, "get %s %s: %d", name, kj, rc);
        cr_assert(!row.deleted && row.ncols == 2 && row.lens[1] == strlen(model[t][k]) &&
                      !memcmp(row.values[1], model[t][k], row.lens[1]),
                  "get %s %s: its own row", name, kj);
    }
}

/* Events for every table in random order, applied in batches of random
 * size: every batch mixes tables, each new table's id is allocated in the
 * batch that first names it. */
Test(tables, three_hundred_prefixed_tables_hold_their_own_rows_only, .timeout = 120)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    unsigned seed = 12345;
    memset(model, 0, sizeof model);
    memset(model_upserts, 0, sizeof model_upserts);
    const int nev = 6000;
    batch b = {0};
    unsigned long long lsn = 1000;
    long off = 0;
    for (int i = 0; i < nev; i++) {
        /* the first 2 x NT events give every table both extreme keys, so
         * that the largest key of table t sits next to the smallest of t + 1 */
        int t, k;
        if (i < 2 * NT) {
            t = i / 2 + 1;
            k = i % 2 ? NK - 1 : 0;
        } else {
            t = (int)(rand_r(&seed) % NT) + 1;
            k = (int)(rand_r(&seed) % NK);
        }
        char *three[3];
        int del = i >= 2 * NT && rand_r(&seed) % 5 == 0;
        char v[48];
        snprintf(v, sizeof v, "t%dk%dn%d", t, k, i);
        cdc_record_t r = rec(t, k, del ? "d" : (model[t][k] ? "u" : "c"), del ? NULL : v, lsn++, "false", off++, three);
        batch_add(&b, r, three);
        free(model[t][k]);
        model[t][k] = del ? NULL : strdup(v);
        model_upserts[t] |= !del;
        if (b.n >= 1 + (size_t)(rand_r(&seed) % 700) || i == nev - 1) {
            tu_apply(st, b.r, b.n);
            batch_free(&b);
        }
    }
    char **names;
    size_t n;
    cr_assert_eq(cdc_store_tables(st, &names, &n, NULL), 0);
    cr_assert_eq(n, NT);
    cdc_strings_free(names, n);
    for (int t = 1; t <= NT; t++) check_table(st, t);
    /* a scan from the largest key of table t stops at the end of t, before
     * the smallest key of t + 1 (ids 255 and 256 differ in two bytes) */
    for (int t = 250; t <= 260; t++) {
        char name[32];
        snprintf(name, sizeof name, "public.t%04d", t);
        cdc_iter_options_t io = {.lower_json = "[9223372036854775807]", .include_deleted = 1};
        cdc_iter_t *it;
        cr_assert_eq(cdc_iter_open(st, name, &io, &it, NULL), 0);
        cdc_row_t row;
        int m = 0;
        while (cdc_iter_next(it, &row, NULL) == 1) {
            cr_assert_str_eq(row.key_json, "{\"id\":9223372036854775807}");
            m++;
        }
        cr_assert_eq(m, 1, "table %s: only its own largest key", name);
        cdc_iter_close(it);
    }
    /* the same after a reopen (ids read back from the metadata) */
    cdc_store_close(st);
    st = tu_open(dir);
    for (int t = 1; t <= NT; t++) check_table(st, t);
    cdc__table *tb;
    cr_assert_eq(cdc__table_get(st, "public.t0300", 0, &tb, NULL), 0);
    cr_assert_eq(tb->id, NT, "ids in order of first appearance");
    cr_assert_eq(tb->cf, st->rows_cf);
    /* a replay of nothing new and one more table: the next id */
    char *three[3];
    batch_add(&b, rec(NT, 1, "u", "late", lsn++, "false", off++, three), three);
    free(model[NT][1]);
    model[NT][1] = strdup("late");
    model_upserts[NT] = 1;
    tu_apply(st, b.r, b.n);
    batch_free(&b);
    check_table(st, NT);
    check_table(st, NT - 1);
    for (int t = 0; t <= NT; t++)
        for (int k = 0; k < NK; k++) free(model[t][k]);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A completed snapshot raises the floor of its table only: the rows it does
 * not hold disappear there, and the neighbours (the ids either side) keep
 * every row and counter; gc of one table purges its rows only. */
Test(tables, floor_and_gc_stay_in_their_table)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    batch b = {0};
    char *three[3];
    long off = 0;
    /* epoch 100: tables 1, 2, 3 get every key; a delete in each at 150 */
    for (int t = 1; t <= 3; t++) {
        for (int k = 0; k < NK; k++)
            batch_add(&b, rec(t, k, "r", "s", 100, k == 0 ? "first" : k == NK - 1 ? "last" : "true", off++, three),
                      three);
        batch_add(&b, rec(t, 2, "d", NULL, 150, "false", off++, three), three);
    }
    tu_apply(st, b.r, b.n);
    batch_free(&b);
    char *before1 = tu_export(st, "public.t0001", 1), *before3 = tu_export(st, "public.t0003", 1);
    /* table 2 snapshotted again at 900 on a new slot: it holds keys 1 and 3 */
    batch_add(&b, rec(2, 1, "r", "n", 900, "first", off++, three), three);
    batch_add(&b, rec(2, 3, "r", "n", 900, "last", off++, three), three);
    tu_apply(st, b.r, b.n);
    batch_free(&b);
    char *v = tu_export(st, "public.t0002", 0);
    cr_assert_str_eq(v, "id,v\n1,n\n3,n\n");
    free(v);
    cdc_stats_t s;
    cdc_store_stats(st, "public.t0002", &s, NULL);
    cr_assert_eq(s.rows_live, 2, "the floor's scan counted table 2's rows only");
    cr_assert_eq(s.gap_deletes, 3, "keys MIN, 4 and MAX (2 was deleted already)");
    for (int t = 1; t <= 3; t += 2) {
        char name[32];
        snprintf(name, sizeof name, "public.t%04d", t);
        cdc_store_stats(st, name, &s, NULL);
        cr_assert_eq(s.rows_live, NK - 1, "%s untouched", name);
        cr_assert_eq(s.gap_deletes, 0);
    }
    v = tu_export(st, "public.t0001", 1);
    cr_assert_str_eq(v, before1);
    free(v);
    v = tu_export(st, "public.t0003", 1);
    cr_assert_str_eq(v, before3);
    free(v);
    /* gc of table 2 above everything: its tombstone and its floor-hidden rows go */
    uint64_t purged = 0;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_gc(st, "public.t0002", 2000, &purged, &e), 0, "%s", e.msg);
    cr_assert_eq(purged, 4, "key 2's tombstone and the three rows below the floor");
    v = tu_export(st, "public.t0002", 1);
    cr_assert_str_eq(v, "id,v,__lsn,__deleted\n1,n,900,f\n3,n,900,f\n");
    free(v);
    v = tu_export(st, "public.t0001", 1);
    cr_assert_str_eq(v, before1, "gc of table 2 left table 1 alone");
    free(v);
    v = tu_export(st, "public.t0003", 1);
    cr_assert_str_eq(v, before3, "gc of table 2 left table 3 alone");
    free(v);
    /* gc of every table: one tombstone each in tables 1 and 3 */
    cr_assert_eq(cdc_store_gc(st, NULL, 2000, &purged, &e), 0, "%s", e.msg);
    cr_assert_eq(purged, 2);
    /* a late event below table 2's floor stays stale after a reopen */
    cdc_store_close(st);
    st = tu_open(dir);
    batch_add(&b, rec(2, 4, "u", "late", 200, "false", off++, three), three);
    cdc_apply_result_t r = tu_apply(st, b.r, b.n);
    batch_free(&b);
    cr_assert_eq(r.applied, 0);
    v = tu_export(st, "public.t0002", 0);
    cr_assert_str_eq(v, "id,v\n1,n\n3,n\n");
    free(v);
    free(before1);
    free(before3);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A replica written before the layout (tests/compat/replica-v1.tar.gz: a
 * family per table) takes new tables as prefixed ones; its old tables stay
 * in their families and read the same. */
Test(tables, old_family_tables_beside_new_prefixed_tables)
{
    const char *fixture = "tests/compat/replica-v1.tar.gz";
    if (access(fixture, R_OK) != 0) cr_skip_test("%s not found (run from the source tree)", fixture);
    char *dir = tu_tmpdir();
    char *cmd = fmt("tar -xzf %s -C %s replica", fixture, dir);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    char *db = fmt("%s/replica", dir);
    cdc_store_t *st = tu_open(db);
    char **names;
    size_t nold;
    cr_assert_eq(cdc_store_tables(st, &names, &nold, NULL), 0);
    cr_assert(nold > 0);
    char **before = calloc(nold, sizeof *before);
    for (size_t i = 0; i < nold; i++) {
        before[i] = tu_export(st, names[i], 1);
        cdc__table *t;
        cr_assert_eq(cdc__table_get(st, names[i], 0, &t, NULL), 0);
        cr_assert_eq(t->id, 0, "%s keeps its own family", names[i]);
        cr_assert(t->cf && t->cf != st->rows_cf);
    }
    /* 40 new tables, in batches of 37 records that span tables */
    memset(model, 0, sizeof model);
    memset(model_upserts, 0, sizeof model_upserts);
    batch b = {0};
    char *three[3];
    long off = 0;
    unsigned long long lsn = 80000000;
    for (int t = 1; t <= 40; t++)
        for (int k = 0; k < NK; k++) {
            char v[32];
            snprintf(v, sizeof v, "m%d.%d", t, k);
            batch_add(&b, rec(t, k, "c", v, lsn++, "false", off++, three), three);
            model[t][k] = strdup(v);
            model_upserts[t] = 1;
            if (b.n == 37) {
                tu_apply(st, b.r, b.n);
                batch_free(&b);
            }
        }
    tu_apply(st, b.r, b.n);
    batch_free(&b);
    for (int round = 0; round < 2; round++) {
        for (int t = 1; t <= 40; t++) check_table(st, t);
        for (size_t i = 0; i < nold; i++) {
            char *now = tu_export(st, names[i], 1);
            cr_assert_str_eq(now, before[i], "old table %s reads the same", names[i]);
            free(now);
        }
        cdc__table *t;
        cr_assert_eq(cdc__table_get(st, "public.t0001", 0, &t, NULL), 0);
        cr_assert_eq(t->id, 1);
        cdc_store_close(st);
        st = tu_open(db);
    }
    uint64_t purged = 0;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_gc(st, NULL, lsn, &purged, &e), 0, "%s", e.msg);
    for (int t = 1; t <= 40; t++) check_table(st, t);
    for (int t = 0; t <= NT; t++)
        for (int k = 0; k < NK; k++) free(model[t][k]);
    for (size_t i = 0; i < nold; i++) free(before[i]);
    free(before);
    cdc_strings_free(names, nold);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dir);
}

/* A process killed while it applies batches that create tables keeps whole
 * batches: a table exists with exactly the rows of the applied batches, or
 * not at all (its id is written with its first rows).  Lives applying the
 * same stream from the start are killed at random times; then the replica
 * must equal the model of every record up to the highest stored position. */
#define KT 120
#define KEV 3000
#define KBATCH 23
Test(tables, killed_while_creating_tables_keeps_whole_batches, .timeout = 120)
{
    static int ev_t[KEV], ev_k[KEV], ev_del[KEV];
    unsigned seed = 777;
    for (int i = 0; i < KEV; i++) {
        ev_t[i] = (int)(rand_r(&seed) % KT) + 1;
        ev_k[i] = (int)(rand_r(&seed) % NK);
        ev_del[i] = rand_r(&seed) % 6 == 0;
    }
    char *dir = tu_tmpdir(), *scratch = tu_tmpdir();
    const char *env = getenv("CDC_TABLES_SEED"); /* repeats a run's kill times */
    unsigned kseed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    int killed = 0;
    /* life -1 runs to its end in a scratch replica: how long a life takes;
     * every other life is killed within 90% of that */
    long full_ns = 0;
    for (int life = -1; life < 6; life++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) { /* a life: the whole stream from the start */
            const char *dir_ = life < 0 ? scratch : dir;
            cdc_store_t *st = NULL;
            if (cdc_store_open(dir_, NULL, &st, NULL)) _exit(2);
            batch b = {0};
            char *three[3];
            for (int i = 0; i < KEV; i++) {
                char v[48];
                snprintf(v, sizeof v, "t%dk%dn%d", ev_t[i], ev_k[i], i);
                batch_add(&b, rec(ev_t[i], ev_k[i], ev_del[i] ? "d" : "u", ev_del[i] ? NULL : v, 1000 + (unsigned)i,
                                  "false", i, three), three);
                if (b.n == KBATCH || i == KEV - 1) {
                    cdc_apply_result_t res;
                    if (cdc_store_apply(st, b.r, b.n, NULL, &res, NULL)) _exit(3);
                    batch_free(&b);
                }
            }
            cdc_store_close(st);
            _exit(0);
        }
        int wst;
        if (life < 0) {
            cr_assert_eq(waitpid(pid, &wst, 0), pid);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            full_ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
            cr_assert(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the timed life failed: %d", wst);
            continue;
        }
        long ns = (long)((double)rand_r(&kseed) / RAND_MAX * 0.9 * (double)full_ns);
        struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        cr_assert_eq(waitpid(pid, &wst, 0), pid);
        cr_assert(WIFSIGNALED(wst) || (WIFEXITED(wst) && WEXITSTATUS(wst) == 0), "life %d failed: %d", life, wst);
        killed += WIFSIGNALED(wst);
    }
    cdc_store_t *st = tu_open(dir);
    int64_t last = -1;
    for (int t = 1; t <= KT; t++) {
        char topic[40];
        snprintf(topic, sizeof topic, "shop.public.t%04d", t);
        int64_t off;
        cr_assert_eq(cdc_store_position(st, topic, 0, &off, NULL), 0);
        if (off > last) last = off;
    }
    cr_assert(last < 0 || (last + 1) % KBATCH == 0 || last == KEV - 1, "whole batches only: last offset %lld",
              (long long)last);
    fprintf(stderr, "[tables] 6 lives of %.0f ms (CDC_TABLES_SEED=%u), %d killed; the replica holds records 0..%lld of %d\n",
            full_ns / 1e6, kseed, killed, (long long)last, KEV);
    memset(model, 0, sizeof model);
    memset(model_upserts, 0, sizeof model_upserts);
    int seen[KT + 1] = {0}, ntables = 0;
    for (int i = 0; i <= last; i++) {
        char v[48];
        snprintf(v, sizeof v, "t%dk%dn%d", ev_t[i], ev_k[i], i);
        free(model[ev_t[i]][ev_k[i]]);
        model[ev_t[i]][ev_k[i]] = ev_del[i] ? NULL : strdup(v);
        model_upserts[ev_t[i]] |= !ev_del[i];
        if (!seen[ev_t[i]]++) ntables++;
    }
    char **names;
    size_t n;
    cr_assert_eq(cdc_store_tables(st, &names, &n, NULL), 0);
    cr_assert_eq((int)n, ntables, "tables with applied records exist, no other");
    cdc_strings_free(names, n);
    for (int t = 1; t <= KT; t++)
        if (seen[t]) check_table(st, t);
    for (int t = 0; t <= NT; t++)
        for (int k = 0; k < NK; k++) free(model[t][k]);
    cdc_store_close(st);
    tu_rmrf(dir);
    tu_rmrf(scratch);
    free(dir);
    free(scratch);
}
