/*
 * test_delta.c: the Delta table export (query/delta.c) as its log shows it:
 * version 0 of a new table, a refresh that rewrites only the key ranges that
 * changed (updates, a delete, an insert past the end), nothing committed when
 * nothing changed, every file rewritten with a new metaData after a schema
 * change, commits of another writer refused, and each version's active files
 * covering exactly the rows of the replica at that time.  Readers that are not
 * ours (Spark, deltalake) read these tables in the end-to-end suite
 * (tests/e2e/run.sh, scenario 9b).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdcstore.h"
#include "testutil.h"
#include "store.h"

/* query/query.h's, which cannot be included beside store.h (both name a
 * cdc__scan): the JSON array of an encoded key. */
int cdc__key_json_array(const char *key, size_t len, cdc__buf *out);

#define TOPIC "shop.public.orders"

static void put_rows(cdc_store_t *st, int from, int to, unsigned long long lsn, const char *note)
{
    size_t n = (size_t)(to - from + 1);
    cdc_record_t *r = calloc(n, sizeof *r);
    char **keys = calloc(n, sizeof *keys), **vals = calloc(n, sizeof *vals);
    for (int k = from; k <= to; k++) {
        size_t i = (size_t)(k - from);
        keys[i] = tu_fmt("{\"order_id\":%d}", k);
        char *after = tu_fmt("{\"order_id\":%d,\"v\":%d,\"note\":\"%s\"}", k, k * 3, note);
        vals[i] = tu_env("u", NULL, after, lsn + i, "false");
        free(after);
        r[i] = tu_rec(TOPIC, 0, (long)(lsn + i), keys[i], vals[i]);
    }
    cdc_apply_result_t res = tu_apply(st, r, n);
    cr_assert_eq(res.dead_letters, 0);
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
        free(vals[i]);
    }
    free(keys);
    free(vals);
    free(r);
}

static void delete_row(cdc_store_t *st, int k, unsigned long long lsn)
{
    char *key = tu_fmt("{\"order_id\":%d}", k);
    char *before = tu_fmt("{\"order_id\":%d}", k);
    char *val = tu_env("d", before, NULL, lsn, "false");
    cdc_record_t r = tu_rec(TOPIC, 0, (long)lsn, key, val);
    tu_apply(st, &r, 1);
    free(key);
    free(before);
    free(val);
}

static cdc_delta_result_t export_delta(cdc_store_t *st, const char *dir, uint64_t file_rows)
{
    cdc_export_options_t o = {.file_rows = file_rows};
    cdc_delta_result_t r;
    cdc_error_t e = {0};
    int rc = cdc_export_delta(st, "public.orders", dir, &o, &r, &e);
    cr_assert_eq(rc, 0, "export: %s", e.msg);
    return r;
}

static char *commit_text(const char *dir, int v)
{
    char *p = tu_fmt("%s/_delta_log/%020d.json", dir, v);
    char *t = tu_slurp(p);
    free(p);
    return t;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The rows the active files of the newest version hold: the sum of their
 * cdcstore.rows tags, replaying adds and removes over every commit. */
static long active_rows(const char *dir, int last)
{
    char *paths[4096];
    long rows[4096];
    int n = 0;
    for (int v = 0; v <= last; v++) {
        char *t = commit_text(dir, v);
        for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
            char *pa = strstr(line, "\"path\":\"");
            if (!pa) continue;
            pa += 8;
            char *end = strchr(pa, '"');
            if (!strncmp(line, "{\"add\"", 6)) {
                char *rw = strstr(line, "\"cdcstore.rows\":\"");
                cr_assert_not_null(rw);
                paths[n] = strndup(pa, (size_t)(end - pa));
                rows[n++] = atol(rw + 17);
            } else if (!strncmp(line, "{\"remove\"", 9)) {
                int found = 0;
                for (int i = 0; i < n; i++)
                    if (strlen(paths[i]) == (size_t)(end - pa) && !strncmp(paths[i], pa, (size_t)(end - pa))) {
                        free(paths[i]);
                        paths[i] = paths[--n];
                        rows[i] = rows[n];
                        found = 1;
                        break;
                    }
                cr_assert(found, "version %d removes a file that is not active", v);
            }
        }
        free(t);
    }
    long sum = 0;
    for (int i = 0; i < n; i++) {
        char *full = tu_fmt("%s/%s", dir, paths[i]);
        struct stat sb;
        cr_assert_eq(stat(full, &sb), 0, "active file %s exists", full);
        free(full);
        free(paths[i]);
        sum += rows[i];
    }
    return sum;
}

Test(delta, refresh_rewrites_only_the_changed_ranges)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_rows(st, 1, 1000, 1000, "first");
    cdc_delta_result_t r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, 0);
    cr_assert(r.created);
    cr_assert_eq(r.rows, 1000);
    cr_assert_eq(r.files_added, 10);
    char *t0 = commit_text(dl, 0);
    cr_assert_eq(count_of(t0, "{\"protocol\""), 1);
    cr_assert_eq(count_of(t0, "{\"metaData\""), 1);
    cr_assert_eq(count_of(t0, "{\"add\""), 10);
    cr_assert(strstr(t0, "\"engineInfo\":\"cdcstore\""));
    free(t0);
    cr_assert_eq(active_rows(dl, 0), 1000);

    /* nothing changed: nothing committed */
    r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, -1);
    cr_assert_eq(r.ranges_changed, 0);
    cr_assert_eq(r.files_kept, 10);
    char *p1 = tu_fmt("%s/_delta_log/%020d.json", dl, 1);
    cr_assert_neq(access(p1, F_OK), 0, "no version 1 when nothing changed");

    /* updates in the range of keys 101-200, a delete in 501-600, inserts past the end */
    put_rows(st, 150, 152, 5000, "second");
    delete_row(st, 555, 6000);
    put_rows(st, 1001, 1250, 7000, "new");
    r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, 1);
    cr_assert_eq(r.ranges_checked, 10);
    cr_assert_eq(r.ranges_changed, 3, "ranges changed: %llu", (unsigned long long)r.ranges_changed);
    cr_assert_eq(r.files_removed, 3);
    cr_assert_eq(r.files_kept, 7);
    /* 100 + 99 rewritten, and the last range (901-1250, 350 rows) split in files of 100 */
    cr_assert_eq(r.rows_written, 100 + 99 + 350);
    cr_assert_eq(r.files_added, 1 + 1 + 4);
    cr_assert_eq(r.rows, 1249);
    char *t1 = commit_text(dl, 1);
    cr_assert_eq(count_of(t1, "{\"remove\""), 3);
    cr_assert_eq(count_of(t1, "{\"add\""), 6);
    cr_assert_eq(count_of(t1, "{\"metaData\""), 0, "same schema: no new metaData");
    free(t1);
    cr_assert_eq(active_rows(dl, 1), 1249);
    cr_assert_eq(active_rows(dl, 0), 1000, "version 0's files are all still there (time travel)");

    /* a schema change: a new column rewrites every file under a new metaData */
    cdc_record_t rec;
    char *key = tu_fmt("{\"order_id\":%d}", 7);
    char *val = tu_env("u", NULL, "{\"order_id\":7,\"v\":1,\"note\":\"x\",\"extra\":5}", 9000, "false");
    rec = tu_rec(TOPIC, 0, 9000, key, val);
    tu_apply(st, &rec, 1);
    r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, 2);
    cr_assert(r.schema_changed);
    cr_assert_eq(r.files_removed, 13);
    cr_assert_eq(r.rows_written, 1249);
    char *t2 = commit_text(dl, 2);
    cr_assert_eq(count_of(t2, "{\"metaData\""), 1);
    cr_assert(strstr(t2, "\\\"name\\\":\\\"extra\\\""), "the new schema names the column");
    free(t2);
    cr_assert_eq(active_rows(dl, 2), 1249);
    free(key);
    free(val);
    free(p1);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}

/* Another writer's maintenance changes no file: VACUUM's two commits hold a
 * commitInfo alone, and a checkpoint repeats the commits; refreshes go on
 * (they were refused as another writer's changes). */
Test(delta, vacuum_commits_and_a_checkpoint_are_not_changes)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/t.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_rows(st, 1, 10, 1000, "a");
    export_delta(st, dl, 0);
    const char *ops[] = {"VACUUM START", "VACUUM END"};
    for (int v = 1; v <= 2; v++) {
        char *p = tu_fmt("%s/_delta_log/%020d.json", dl, v);
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fprintf(f, "{\"commitInfo\":{\"timestamp\":%d,\"operation\":\"%s\",\"engineInfo\":\"delta-rs:1.0\"}}\n", v,
                ops[v - 1]);
        fclose(f);
        free(p);
    }
    char *cp = tu_fmt("%s/_delta_log/%020d.checkpoint.parquet", dl, 2);
    FILE *f = fopen(cp, "w");
    cr_assert_not_null(f);
    fputs("PAR1", f);
    fclose(f);
    put_rows(st, 3, 3, 2000, "b");
    cdc_delta_result_t r = export_delta(st, dl, 0);
    cr_expect_eq(r.version, 3, "the refresh commits after VACUUM's versions");
    cr_expect_eq(active_rows(dl, 3), 10);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(cp);
    free(db);
    free(dl);
    free(dir);
}

Test(delta, another_writers_commit_is_refused)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/t.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_rows(st, 1, 10, 1000, "a");
    export_delta(st, dl, 0);
    put_rows(st, 3, 3, 2000, "b");
    /* another engine commits version 1 (an OPTIMIZE, say: a file removed, one added) */
    char *p = tu_fmt("%s/_delta_log/%020d.json", dl, 1);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("{\"commitInfo\":{\"timestamp\":1,\"operation\":\"OPTIMIZE\",\"engineInfo\":\"Apache-Spark/4.0\"}}\n"
          "{\"remove\":{\"path\":\"old.parquet\",\"deletionTimestamp\":1,\"dataChange\":false}}\n"
          "{\"add\":{\"path\":\"part-0000-optimized.parquet\",\"size\":10,\"modificationTime\":1,"
          "\"dataChange\":false}}\n",
          f);
    fclose(f);
    cdc_export_options_t o = {0};
    cdc_delta_result_t r;
    cdc_error_t e = {0};
    int rc = cdc_export_delta(st, "public.orders", dl, &o, &r, &e);
    cr_assert_eq(rc, CDC_EINVAL);
    cr_assert(strstr(e.msg, "another writer") && strstr(e.msg, "00000000000000000001.json"), "%s", e.msg);
    /* nothing new was left behind: no file beyond version 0's one */
    DIR *d = opendir(dl);
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".parquet")) files++;
    closedir(d);
    cr_assert_eq(files, 1);
    /* a key range bound on a Delta export is refused */
    o.lower_json = "[3]";
    cr_assert_eq(cdc_export_delta(st, "public.orders", dl, &o, &r, &e), CDC_EINVAL);
    cr_assert_eq(cdc_export_delta(st, "public.none", dl, NULL, &r, &e), CDC_ENOTFOUND);
    free(p);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}

/* ---- Refresh by the replica's change tracking ---- */

/* Every active file of version last holds exactly the rows of its key
 * range as the replica holds them now: the count and the hash sum its tags
 * record against the replica's rows of [cdcstore.lower, cdcstore.upper)
 * (tags summed from the rows written to the file, query/delta.c), and
 * the files' rows add up to the replica's.  Returns the number of files. */
static int check_matches_replica(cdc_store_t *st, const char *dir, int last)
{
    enum { MAXF = 4096 };
    static char *paths[MAXF], *lows[MAXF], *ups[MAXF];
    static unsigned long long rows[MAXF], hashes[MAXF];
    int n = 0;
    for (int v = 0; v <= last; v++) {
        char *t = commit_text(dir, v);
        for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
            char *pa = strstr(line, "\"path\":\"");
            if (!pa) continue;
            pa += 8;
            size_t pl = (size_t)(strchr(pa, '"') - pa);
            if (!strncmp(line, "{\"add\"", 6)) {
                cr_assert_lt(n, MAXF);
                char *lo = strstr(line, "\"cdcstore.lower\":\"") + 18, *up = strstr(line, "\"cdcstore.upper\":\"") + 18;
                paths[n] = strndup(pa, pl);
                lows[n] = strndup(lo, (size_t)(strchr(lo, '"') - lo));
                ups[n] = strndup(up, (size_t)(strchr(up, '"') - up));
                rows[n] = strtoull(strstr(line, "\"cdcstore.rows\":\"") + 17, NULL, 10);
                hashes[n++] = strtoull(strstr(line, "\"cdcstore.hash\":\"") + 17, NULL, 16);
            } else if (!strncmp(line, "{\"remove\"", 9)) {
                for (int i = 0; i < n; i++)
                    if (strlen(paths[i]) == pl && !strncmp(paths[i], pa, pl)) {
                        free(paths[i]);
                        free(lows[i]);
                        free(ups[i]);
                        n--;
                        paths[i] = paths[n], lows[i] = lows[n], ups[i] = ups[n];
                        rows[i] = rows[n], hashes[i] = hashes[n];
                        break;
                    }
            }
        }
        free(t);
    }
    unsigned long long total = 0, replica = 0;
    for (int i = 0; i < n; i++) {
        cdc__buf json[2] = {{0}, {0}};
        const char *hex[2] = {lows[i], ups[i]};
        for (int b = 0; b < 2; b++) {
            if (!*hex[b]) continue;
            cdc__buf key = {0};
            for (const char *h = hex[b]; h[0] && h[1]; h += 2) {
                unsigned x;
                sscanf(h, "%2x", &x);
                cdc__buf_putc(&key, (char)x);
            }
            cr_assert_eq(cdc__key_json_array(key.p, key.len, &json[b]), 0);
            cdc__buf_putc(&json[b], 0);
            cdc__buf_free(&key);
        }
        cdc_iter_options_t io = {.lower_json = json[0].p, .upper_json = json[1].p};
        cdc_iter_t *it;
        cr_assert_eq(cdc_iter_open(st, "public.orders", &io, &it, NULL), 0);
        cdc_row_t row;
        unsigned long long nr = 0, h = 0;
        while (cdc_iter_next(it, &row, NULL) == 1) {
            nr++;
            h += cdc_row_hash(&row, CDC_HASH_LOOKUP3);
        }
        cdc_iter_close(it);
        cr_assert_eq(nr, rows[i], "file %s [%s, %s): %llu rows, the replica %llu", paths[i], lows[i], ups[i],
                     rows[i], nr);
        cr_assert_eq(h, hashes[i], "file %s [%s, %s): its rows differ from the replica's", paths[i], lows[i], ups[i]);
        total += rows[i];
        cdc__buf_free(&json[0]);
        cdc__buf_free(&json[1]);
        free(paths[i]);
        free(lows[i]);
        free(ups[i]);
    }
    cdc_iter_t *it;
    cr_assert_eq(cdc_iter_open(st, "public.orders", NULL, &it, NULL), 0);
    cdc_row_t row;
    while (cdc_iter_next(it, &row, NULL) == 1) replica++;
    cdc_iter_close(it);
    cr_assert_eq(total, replica, "the files hold %llu rows, the replica %llu", total, replica);
    return n;
}

/* Rows of keys spaced 10,000 apart (ids 10,000 .. 10,000,000): a file of 100
 * rows spans 1,000,000 ids, wider than the replica's change buckets. */
static void put_spaced(cdc_store_t *st, int from, int to, unsigned long long lsn, const char *note,
                       const char *op, const char *snapshot)
{
    size_t n = (size_t)(to - from + 1);
    cdc_record_t *r = calloc(n, sizeof *r);
    char **keys = calloc(n, sizeof *keys), **vals = calloc(n, sizeof *vals);
    for (int k = from; k <= to; k++) {
        size_t i = (size_t)(k - from);
        keys[i] = tu_fmt("{\"order_id\":%d}", k * 10000);
        char *after = tu_fmt("{\"order_id\":%d,\"v\":%d,\"note\":\"%s\"}", k * 10000, k, note);
        const char *snap = snapshot;
        if (snapshot && !strcmp(snapshot, "last") && k != to) snap = k == from ? "first" : "true";
        vals[i] = tu_env(op, NULL, after, lsn + (snapshot ? 0 : i), snap);
        free(after);
        r[i] = tu_rec(TOPIC, 0, (long)(lsn + i), keys[i], vals[i]);
    }
    cdc_apply_result_t res = tu_apply(st, r, n);
    cr_assert_eq(res.dead_letters, 0);
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
        free(vals[i]);
    }
    free(keys);
    free(vals);
    free(r);
}

static void put_one(cdc_store_t *st, long id, unsigned long long lsn, const char *note)
{
    char *key = tu_fmt("{\"order_id\":%ld}", id);
    char *after = tu_fmt("{\"order_id\":%ld,\"v\":-1,\"note\":\"%s\"}", id, note);
    char *val = tu_env("u", NULL, after, lsn, "false");
    cdc_record_t r = tu_rec(TOPIC, 0, (long)lsn, key, val);
    tu_apply(st, &r, 1);
    free(key);
    free(after);
    free(val);
}

static void delete_one(cdc_store_t *st, long id, unsigned long long lsn)
{
    char *key = tu_fmt("{\"order_id\":%ld}", id);
    char *before = tu_fmt("{\"order_id\":%ld}", id);
    char *val = tu_env("d", before, NULL, lsn, "false");
    cdc_record_t r = tu_rec(TOPIC, 0, (long)lsn, key, val);
    tu_apply(st, &r, 1);
    free(key);
    free(before);
    free(val);
}

/* The paths of version v's add actions, joined by spaces. */
static char *added_paths(const char *dir, int v)
{
    char *t = commit_text(dir, v), *out = strdup("");
    for (char *p = t; (p = strstr(p, "{\"add\":{\"path\":\"")); p++) {
        char *a = p + 16, *e = strchr(a, '"');
        char *o = tu_fmt("%s%.*s ", out, (int)(e - a), a);
        free(out);
        out = o;
    }
    free(t);
    return out;
}

Test(delta_tracked, a_refresh_rewrites_the_changed_ranges_without_reading_the_others)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_spaced(st, 1, 1000, 1000, "first", "u", NULL);
    cdc_delta_result_t r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, 0);
    cr_assert_eq(r.files_added, 10);
    char *t0 = commit_text(dl, 0);
    cr_assert(strstr(t0, "\"cdcstore.stamp\":\""), "the commit records the replica's point");
    free(t0);
    char *v0 = added_paths(dl, 0);

    /* nothing changed: nothing read, nothing committed */
    r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, -1);
    cr_assert(r.tracked);
    cr_assert_eq(r.rows_read, 0);

    /* an update of one key in the second range (ids 1,010,000 .. 2,000,000) */
    put_one(st, 1500000, 5000, "second");
    r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, 1);
    cr_assert(r.tracked, "the changed ranges came from the replica");
    cr_assert_eq(r.ranges_changed, 1);
    cr_assert_eq(r.files_removed, 1);
    cr_assert_eq(r.files_kept, 9);
    cr_assert_eq(r.rows_written, 100);
    cr_assert_eq(r.rows_read, 100, "only the rewritten range was read: %llu rows", (unsigned long long)r.rows_read);
    char *t1 = commit_text(dl, 1);
    /* the removed file is version 0's second one; the others stay active */
    char *second = strchr(v0, ' ') + 1;
    char *rm = tu_fmt("{\"remove\":{\"path\":\"%.*s\"", (int)(strchr(second, ' ') - second), second);
    cr_assert(strstr(t1, rm));
    free(rm);
    free(t1);
    cr_assert_eq(check_matches_replica(st, dl, 1), 10);

    /* a delete in the sixth range */
    delete_one(st, 5550000, 6000);
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    cr_assert_eq(r.rows_written, 99);
    cr_assert_eq(r.rows_read, 99);
    cr_assert_eq(check_matches_replica(st, dl, 2), 10);

    /* an insert in the gap between the second and third ranges (their
     * bound is 2,010,000): its bucket (65,536 ids) straddles the bound, so
     * both files are rewritten, the others not read */
    put_one(st, 2005000, 7000, "gap");
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 2);
    cr_assert_eq(r.rows_read, 201);
    cr_assert_eq(check_matches_replica(st, dl, 3), 11, "the second range, 101 rows now, split");

    /* a primary key change: a delete of 8,100,000 and an insert of
     * 8,500,005, in one transaction, in the ninth range */
    delete_one(st, 8100000, 8000);
    put_one(st, 8500005, 8000, "moved");
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    cr_assert_eq(r.rows_read, 100);
    cr_assert_eq(check_matches_replica(st, dl, 4), 11);

    /* inserts past the end: the last range (open above) grows and splits */
    put_spaced(st, 1001, 1150, 9000, "new", "c", NULL);
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    cr_assert_eq(r.rows_written, 250);
    cr_assert_eq(r.files_added, 3);
    cr_assert_eq(check_matches_replica(st, dl, 5), 13);
    free(v0);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}

Test(delta_tracked, a_completed_resnapshot_deletes_the_rows_it_lacks)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_spaced(st, 1, 1000, 100, "first", "r", "last");
    cdc_delta_result_t r = export_delta(st, dl, 100);
    cr_assert_eq(r.rows, 1000);
    /* a new snapshot (epoch 900) without rows 501 .. 1000: the floor it
     * raises deletes them with no event of theirs */
    put_spaced(st, 1, 500, 900, "second", "r", "last");
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.rows, 500);
    cr_assert_eq(r.ranges_changed, 10, "every range changed: 1-5 rewritten, 6-10 emptied by the floor");
    check_matches_replica(st, dl, 1);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}

Test(delta_tracked, a_table_refreshed_from_another_replica_is_hashed)
{
    char *dir = tu_tmpdir();
    char *da = tu_fmt("%s/a", dir), *dbb = tu_fmt("%s/b", dir), *dl = tu_fmt("%s/orders.delta", dir);
    cdc_store_t *a = tu_open(da), *b = tu_open(dbb);
    put_spaced(a, 1, 1000, 1000, "first", "u", NULL);
    put_spaced(b, 1, 1000, 1000, "first", "u", NULL);
    put_one(a, 3500000, 5000, "only in a");
    export_delta(a, dl, 100);
    /* b differs from the table in the fourth range (a's change) and in the
     * eighth (its own, made after a's export) */
    put_one(b, 7500000, 6000, "only in b");
    cdc_delta_result_t r = export_delta(b, dl, 100);
    cr_assert_not(r.tracked, "another replica's point: every row hashed");
    cr_assert_eq(r.ranges_changed, 2);
    cr_assert_eq(r.rows_read, 1000 + 200);
    check_matches_replica(b, dl, 1);
    /* b's own commit is tracked from then on */
    put_one(b, 1500000, 7000, "b again");
    r = export_delta(b, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    check_matches_replica(b, dl, 2);
    /* and a, whose point is not the table's any more, hashes again */
    r = export_delta(a, dl, 100);
    cr_assert_not(r.tracked);
    cr_assert_eq(r.ranges_changed, 3);
    check_matches_replica(a, dl, 3);
    cdc_store_close(a);
    cdc_store_close(b);
    tu_rmrf(dir);
    free(da);
    free(dbb);
    free(dl);
    free(dir);
}

Test(delta_tracked, reopens_and_read_only_opens_keep_the_changes)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_spaced(st, 1, 1000, 1000, "first", "u", NULL);
    export_delta(st, dl, 100);
    put_one(st, 2500000, 5000, "before the reopen");
    cdc_store_close(st);
    /* a read-only open (an export beside a running ingest) */
    cdc_open_options_t ro = {.read_only = 1};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_open(db, &ro, &st, &e), 0, "%s", e.msg);
    cdc_delta_result_t r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    check_matches_replica(st, dl, 1);
    cdc_store_close(st);
    /* a writer's reopen: a new line of history, the old one still known */
    st = tu_open(db);
    put_one(st, 6500000, 6000, "after the reopen");
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    cr_assert_eq(r.rows_read, 100);
    check_matches_replica(st, dl, 2);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}

/* A copy of the replica taken before an export, put back after it: the
 * replica went back past the point the table records (what a roll-back of
 * a damaged write-ahead log does), so a refresh hashes; then the source
 * delivers the lost records again and the refresh after is tracked. */
Test(delta_tracked, a_replica_put_back_before_the_tables_point_is_hashed)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir), *bak = tu_fmt("%s/bak", dir);
    cdc_store_t *st = tu_open(db);
    put_spaced(st, 1, 1000, 1000, "first", "u", NULL);
    export_delta(st, dl, 100);
    cdc_store_close(st);
    char *cmd = tu_fmt("cp -a %s %s", db, bak);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    st = tu_open(db);
    put_one(st, 4500000, 5000, "lost");
    cdc_delta_result_t r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    cdc_store_close(st);
    cmd = tu_fmt("rm -rf %s && mv %s %s", db, bak, db);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    st = tu_open(db);
    r = export_delta(st, dl, 100);
    cr_assert_not(r.tracked, "the replica is behind the table's point");
    cr_assert_eq(r.ranges_changed, 1, "the lost change is taken back out of the table");
    check_matches_replica(st, dl, 2);
    put_one(st, 4500000, 5000, "lost");
    put_one(st, 9500000, 5001, "later");
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 2);
    check_matches_replica(st, dl, 3);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(bak);
    free(dir);
}

/* What a build without change tracking leaves: a batch applied, its
 * buckets not recorded and the table's "E" record as before it. */
static void apply_untracked(cdc_store_t *st, long id, unsigned long long lsn)
{
    const char ek[] = "E\0public.orders", lo[] = "C\0public.orders\0", hi[] = "C\0public.orders\1";
    char *e = NULL;
    size_t vl;
    char *v = rocksdb_get_cf(st->db, st->ro, st->meta_cf, ek, sizeof ek - 1, &vl, &e);
    cr_assert(!e && v, "the table has its change record");
    put_one(st, id, lsn, "untracked");
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_writebatch_put_cf(wb, st->meta_cf, ek, sizeof ek - 1, v, vl);
    rocksdb_writebatch_delete_range_cf(wb, st->meta_cf, lo, sizeof lo - 1, hi, sizeof hi - 1);
    rocksdb_write(st->db, st->wo, wb, &e);
    cr_assert(!e);
    rocksdb_writebatch_destroy(wb);
    rocksdb_free(v);
}

Test(delta_tracked, batches_of_a_build_without_tracking_are_hashed)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_spaced(st, 1, 1000, 1000, "first", "u", NULL);
    export_delta(st, dl, 100);
    apply_untracked(st, 3500000, 5000);
    cdc_store_close(st);
    cdc_open_options_t ro = {.read_only = 1};
    cr_assert_eq(cdc_store_open(db, &ro, &st, NULL), 0);
    cdc_delta_result_t r = export_delta(st, dl, 100);
    cr_assert_not(r.tracked, "a read-only open finds the table's counter ahead of its change record");
    cr_assert_eq(r.ranges_changed, 1);
    check_matches_replica(st, dl, 1);
    cdc_store_close(st);
    /* a writable open marks the table changed as a whole once ... */
    st = tu_open(db);
    apply_untracked(st, 5500000, 6000);
    cdc_store_close(st);
    st = tu_open(db);
    r = export_delta(st, dl, 100);
    cr_assert_not(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    check_matches_replica(st, dl, 2);
    /* ... and tracks it from there on */
    put_one(st, 7500000, 7000, "tracked");
    r = export_delta(st, dl, 100);
    cr_assert(r.tracked);
    cr_assert_eq(r.ranges_changed, 1);
    cr_assert_eq(r.rows_read, 100);
    check_matches_replica(st, dl, 3);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}

/* Two writers (CDC_EXPORT_THREADS=2 splits even a small table): a full
 * export cut at the middle of the key span, a refresh's changed ranges
 * shared out between the two; every file holds exactly the rows of its
 * range, and the ranges still cover the table without overlap. */
Test(delta, two_writers_write_what_one_does)
{
    setenv("CDC_EXPORT_THREADS", "2", 1);
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir), *one = tu_fmt("%s/one.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_rows(st, 1, 1000, 1000, "first");
    cdc_delta_result_t r = export_delta(st, dl, 100);
    cr_assert_eq(r.rows, 1000);
    /* keys 1-499 below the middle key (500) in 5 files, 500-1000 in 6 */
    cr_assert_eq(r.files_added, 11, "files: %llu", (unsigned long long)r.files_added);
    cr_assert_eq(check_matches_replica(st, dl, 0), 11);
    /* changes in four ranges: two for each writer */
    put_rows(st, 150, 152, 5000, "second");
    delete_row(st, 555, 6000);
    put_rows(st, 820, 821, 6500, "third");
    put_rows(st, 1001, 1250, 7000, "new");
    r = export_delta(st, dl, 100);
    cr_assert_eq(r.version, 1);
    cr_assert_eq(r.ranges_changed, 4, "ranges changed: %llu", (unsigned long long)r.ranges_changed);
    cr_assert_eq(r.rows, 1249);
    check_matches_replica(st, dl, 1);
    /* one writer: the same rows (each file checked against the replica) */
    setenv("CDC_EXPORT_THREADS", "1", 1);
    r = export_delta(st, one, 100);
    cr_assert_eq(r.rows, 1249);
    check_matches_replica(st, one, 0);
    unsetenv("CDC_EXPORT_THREADS");
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(one);
    free(dir);
}

/* A writer that fails (a NUMERIC(5,2) value of 7 digits in the upper half:
 * not a valid Parquet DECIMAL(5,2)) fails the export with its error, naming
 * the key, whatever the other writer did; no data file is left and nothing
 * is committed; a NULL err is allowed. */
Test(delta, a_failing_writer_fails_the_export_and_leaves_no_file)
{
    setenv("CDC_EXPORT_THREADS", "2", 1);
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/orders.delta", dir);
    cdc_store_t *st = tu_open(db);
    cdc_record_t r[10];
    char *keys[10], *vals[10];
    for (int k = 1; k <= 10; k++) {
        keys[k - 1] = tu_fmt("{\"order_id\":%d}", k);
        vals[k - 1] = tu_fmt(
            "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"optional\":true,\"field\":\"after\","
            "\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"order_id\"},{\"type\":\"bytes\","
            "\"optional\":true,\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\","
            "\"connect.decimal.precision\":\"5\"},\"field\":\"amount\"}]}]},\"payload\":{\"before\":null,"
            "\"after\":{\"order_id\":%d,\"amount\":\"%s\"},\"source\":{\"ts_ms\":1,\"snapshot\":\"false\","
            "\"schema\":\"public\",\"table\":\"orders\",\"lsn\":%d},\"op\":\"c\"}}",
            k, k == 9 ? "EtaH" /* 12345.67 */ : "MDk=" /* 123.45 */, 100 + k);
        r[k - 1] = tu_rec(TOPIC, 0, k, keys[k - 1], vals[k - 1]);
    }
    cr_assert_eq(tu_apply(st, r, 10).dead_letters, 0);
    cdc_export_options_t o = {.file_rows = 2};
    cdc_delta_result_t res;
    cdc_error_t e = {0};
    int rc = cdc_export_delta(st, "public.orders", dl, &o, &res, &e);
    cr_assert_eq(rc, CDC_EINVAL, "rc %d: %s", rc, e.msg);
    cr_assert(strstr(e.msg, "key {\"order_id\":9}") && strstr(e.msg, "precision"), "%s", e.msg);
    cr_assert_neq(access(dl, F_OK), 0, "the directory the failed export made is removed");
    /* into a directory that was there before: it stays, empty of files */
    cr_assert_eq(mkdir(dl, 0755), 0);
    cr_assert_neq(cdc_export_delta(st, "public.orders", dl, &o, &res, NULL), 0);
    DIR *d = opendir(dl);
    cr_assert_not_null(d, "a directory the export did not make is kept");
    for (struct dirent *de; (de = readdir(d));)
        cr_assert(!strstr(de->d_name, ".parquet"), "file %s left", de->d_name);
    closedir(d);
    char *log = tu_fmt("%s/_delta_log/%020d.json", dl, 0);
    cr_assert_neq(access(log, F_OK), 0, "nothing committed");
    free(log);
    for (int k = 0; k < 10; k++) {
        free(keys[k]);
        free(vals[k]);
    }
    unsetenv("CDC_EXPORT_THREADS");
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}

/* A Delta table holds one table of the replica: an export of another table
 * into its directory is refused, naming both, and commits nothing (it
 * replaced the rows with the other table's as a new version). */
Test(delta, another_tables_directory_is_refused)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/t.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_rows(st, 1, 10, 1000, "a");
    cdc_record_t r = tu_rec("shop.public.invoices", 0, 0, "{\"id\":1}",
                            "{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"schema\":\"public\",\"table\":\"invoices\","
                            "\"lsn\":1001}}");
    tu_apply(st, &r, 1);
    export_delta(st, dl, 0);
    cdc_export_options_t o = {0};
    cdc_delta_result_t res;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_export_delta(st, "public.invoices", dl, &o, &res, &e), CDC_EINVAL);
    cr_assert(strstr(e.msg, "holds public.orders, not public.invoices"), "%s", e.msg);
    char *p = tu_fmt("%s/_delta_log/%020d.json", dl, 1);
    cr_assert_neq(access(p, F_OK), 0, "no version 1");
    free(p);
    /* the table's own refresh goes on */
    put_rows(st, 3, 3, 2000, "b");
    cr_assert_eq(cdc_export_delta(st, "public.orders", dl, &o, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(res.version, 1);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(db);
    free(dl);
    free(dir);
}
