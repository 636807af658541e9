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

Test(delta, another_writers_commit_is_refused)
{
    char *dir = tu_tmpdir();
    char *db = tu_fmt("%s/db", dir), *dl = tu_fmt("%s/t.delta", dir);
    cdc_store_t *st = tu_open(db);
    put_rows(st, 1, 10, 1000, "a");
    export_delta(st, dl, 0);
    put_rows(st, 3, 3, 2000, "b");
    /* another engine commits version 1 (an OPTIMIZE, say) */
    char *p = tu_fmt("%s/_delta_log/%020d.json", dl, 1);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("{\"commitInfo\":{\"timestamp\":1,\"operation\":\"OPTIMIZE\",\"engineInfo\":\"Apache-Spark/4.0\"}}\n", f);
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
