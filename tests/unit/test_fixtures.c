/*
 * test_fixtures.c: real Debezium 3.6.1 output, captured from PostgreSQL 15
 * through Kafka (tests/data/debezium/, see its README), applied through the
 * file source with several batch sizes.  The expected tables are the source
 * tables at the end of each capture, from the SQL the README gives.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "testutil.h"

#define FX "tests/data/debezium/"

static char *apply_fixture(const char *file, size_t bs, const char *table, cdc_apply_result_t *res)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_file_options_t fo = {.batch_size = bs};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, file, &fo, res, &e), 0, "%s: %s", file, e.msg);
    cr_assert_eq(res->dead_letters, 0, "%s: dead letters", file);
    char *v = tu_export(st, table, 0);
    /* replaying the whole file changes nothing */
    cdc_apply_result_t again;
    cr_assert_eq(cdc_store_apply_file(st, file, &fo, &again, &e), 0);
    cr_assert_eq(again.applied, 0, "%s: replay applied %llu", file, (unsigned long long)again.applied);
    char *v2 = tu_export(st, table, 0);
    cr_assert_str_eq(v2, v);
    free(v2);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    return v;
}

ParameterizedTestParameters(fixtures, handover_and_resnapshot)
{
    static size_t sizes[] = {1, 2, 3, 1000};
    return cr_make_param_array(size_t, sizes, 4);
}

ParameterizedTest(size_t *bs, fixtures, handover_and_resnapshot)
{
    cdc_apply_result_t r;
    /* The in-flight update of order 1 (LSN below the snapshot's) must land,
     * then the 'after' update; 2 and 3 as the snapshot read them. */
    char *v = apply_fixture(FX "inflight_handover.jsonl", *bs, "public.orders", &r);
    cr_assert(strstr(v, "\n1,after,11.00,") != NULL, "%s", v);
    cr_assert(strstr(v, "\n2,by-X,20.00,") != NULL, "%s", v);
    cr_assert(strstr(v, "\n3,by-A,30.00,") != NULL, "%s", v);
    free(v);
    /* Re-snapshot on a new slot: order 3 was deleted while no slot existed. */
    v = apply_fixture(FX "resnapshot.jsonl", *bs, "public.orders", &r);
    cr_assert(strstr(v, "\n1,shipped,10.00,") != NULL, "%s", v);
    cr_assert(strstr(v, "\n2,shipped,20.00,") != NULL, "%s", v);
    cr_assert(strstr(v, "\n3,") == NULL, "order 3 must be gone: %s", v);
    cr_assert(strstr(v, "\n4,new,41.00,") != NULL, "%s", v);
    cr_assert(strstr(v, "\n5,new,50.00,") != NULL, "%s", v);
    free(v);
}

Test(fixtures, in_flight_change_wins_before_any_later_change)
{
    /* Only the snapshot (offsets 0-2) and the in-flight update (offset 3). */
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    FILE *in = fopen(FX "inflight_handover.jsonl", "r");
    cr_assert_not_null(in);
    char path[] = "/tmp/cdcfx.XXXXXX";
    int fd = mkstemp(path);
    FILE *out = fdopen(fd, "w");
    char *line = NULL;
    size_t cap = 0;
    for (int i = 0; i < 4 && getline(&line, &cap, in) > 0; i++) fputs(line, out);
    fclose(out);
    fclose(in);
    free(line);
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, NULL, &r, &e), 0, "%s", e.msg);
    unlink(path);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.orders", "{\"order_id\":1}", &row, &e), 0, "%s", e.msg);
    cr_assert_eq(row.lsn, 68004168);
    cr_assert_eq(row.epoch, 68004376, "the in-flight change belongs to the snapshot's epoch");
    cr_assert_eq(row.kind, 2);
    cr_assert_eq(row.lens[1], strlen("in-flight"));
    cr_assert_eq(memcmp(row.values[1], "in-flight", row.lens[1]), 0);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

Test(fixtures, stream_toast_keys_and_schemas)
{
    cdc_apply_result_t r;
    char *v = apply_fixture(FX "snapshot_stream.jsonl", 5, "public.orders", &r);
    /* 2 deleted, 3 renamed to 30 (delete + create with one LSN) */
    cr_assert(strstr(v, "\n2,") == NULL && strstr(v, "\n3,") == NULL, "%s", v);
    cr_assert(strstr(v, "\n30,new,61.99,") != NULL, "%s", v);
    cr_assert(strstr(v, "\n4,paid,16.50,") != NULL, "%s", v);
    cr_assert(strstr(v, "\n5,,-5.25,") != NULL, "NULL status, negative amount: %s", v);
    free(v);
    v = apply_fixture(FX "toast_unchanged.jsonl", 1, "public.orders", &r);
    cr_assert(strstr(v, "__debezium_unavailable_value") == NULL, "placeholder written: %s", v);
    free(v);
    v = apply_fixture(FX "schemas_enabled.jsonl", 4, "public.orders", &r);
    cr_assert(strstr(v, "\n30,new,61.99,") != NULL, "%s", v);
    free(v);
}

Test(fixtures, declared_time_columns_become_postgresql_text)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_set_column_type(st, "public.orders", "created_at", "timestamp", &e), 0, "%s", e.msg);
    cr_assert_eq(cdc_store_set_column_type(st, "public.orders", "x", "nonsense", &e), CDC_EINVAL);
    cdc_store_close(st);
    st = tu_open(dir); /* the declaration is kept by the replica */
    cdc_apply_result_t r;
    cr_assert_eq(cdc_store_apply_file(st, FX "snapshot_stream.jsonl", NULL, &r, &e), 0, "%s", e.msg);
    cdc_row_t row;
    cr_assert_eq(cdc_store_get(st, "public.orders", "[1]", &row, &e), 0, "%s", e.msg);
    size_t i;
    for (i = 0; i < row.ncols && strcmp(row.names[i], "created_at"); i++) {}
    cr_assert(i < row.ncols);
    cr_assert_eq(row.lens[i], strlen("2026-01-15 10:00:00.123456"));
    cr_assert_eq(memcmp(row.values[i], "2026-01-15 10:00:00.123456", row.lens[i]), 0, "%.*s", (int)row.lens[i], row.values[i]);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}
