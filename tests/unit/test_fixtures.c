/*
 * test_fixtures.c: real Debezium 3.6.1 output, captured from PostgreSQL 15
 * through Kafka (tests/data/debezium/, see its README), applied through the
 * file source with several batch sizes.  The expected tables are the source
 * tables at the end of each capture, from the SQL the README gives; for the
 * incremental-snapshot captures, the source table itself, written by COPY
 * next to the capture (<name>.expected.csv).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "testutil.h"

#define FX "tests/data/debezium/"

/* The first dead letter's reason and position, for a failure message (a
 * static buffer: one test per process). */
static const char *first_dead_letter(cdc_store_t *st)
{
    static char msg[512];
    cdc_dlq_iter_t *it = NULL;
    cdc_dead_letter_t dl;
    cdc_error_t e = {0};
    snprintf(msg, sizeof msg, "(none)");
    if (cdc_dlq_open(st, &it, &e) != 0) return msg;
    if (cdc_dlq_next(it, &dl, &e) == 1)
        snprintf(msg, sizeof msg, "%s at %s[%d]@%lld (line %lld)", dl.reason, dl.topic, (int)dl.partition,
                 (long long)dl.offset, (long long)dl.line);
    cdc_dlq_close(it);
    return msg;
}

static char *apply_fixture(const char *file, size_t bs, const char *table, cdc_apply_result_t *res)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_file_options_t fo = {.batch_size = bs};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, file, &fo, res, &e), 0, "%s: %s", file, e.msg);
    cr_assert_eq(res->dead_letters, 0, "%s (batch size %zu): %llu dead letters of %llu records; the first: %s", file,
                 bs, (unsigned long long)res->dead_letters, (unsigned long long)res->read, first_dead_letter(st));
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

/* ---- Incremental snapshots ---- */

/* The captures of tests/stack/capture-fixtures.sh's incremental_* scenarios:
 * reads (op r, snapshot "incremental", lsn null, the window's LSNs in
 * source.sequence) interleaved with streamed changes, the signal table's
 * topic after the table's.  present/absent: rows of the hard case (a
 * transaction open across the read of its rows, committed after it: the
 * read carries the old row, the commit an LSN below the read's window), as
 * the export's line prefix. */
typedef struct inc_fixture {
    const char *name;
    const char *present[3];
    const char *absent;
} inc_fixture_t;

static const inc_fixture_t inc_fixtures[] = {
    {"incremental_adhoc", {"\n1234,held-update,", "\n1235,held-update,", "\n1,after,"}, "\n1250,"},
    {"incremental_added_table", {"\n345,held-update,", "\n99999,last,", NULL}, NULL},
    {"incremental_connect_crash", {"\n99999,last,", NULL, NULL}, NULL},
};
#define N_INC (sizeof inc_fixtures / sizeof inc_fixtures[0])

/* Fails with the first line where the export and the expected CSV differ
 * (a 2,000-row diff in one message would say nothing). */
static void assert_same_csv(const char *got, const char *want, const char *what)
{
    const char *g = got, *w = want;
    for (int line = 1;; line++) {
        const char *ge = strchr(g, '\n'), *we = strchr(w, '\n');
        size_t gl = ge ? (size_t)(ge - g) : strlen(g), wl = we ? (size_t)(we - w) : strlen(w);
        if (gl != wl || memcmp(g, w, gl) != 0)
            cr_assert_fail("%s: line %d of the export differs from the source:\n  replica: %.*s\n  source:  %.*s", what,
                           line, (int)gl, ge || gl ? g : "(end)", (int)wl, we || wl ? w : "(end)");
        if (!ge || !we) {
            cr_assert(!ge && !we, "%s: the export has %s lines than the source (from line %d)", what,
                      ge ? "more" : "fewer", line);
            return;
        }
        g = ge + 1;
        w = we + 1;
    }
}

static char *inc_path(const inc_fixture_t *fx, const char *suffix)
{
    char *p = NULL;
    cr_assert(asprintf(&p, FX "%s%s", fx->name, suffix) > 0);
    return p;
}

/* The replica's items after applying the file equals the source's. */
static void check_items(const inc_fixture_t *fx, const char *v, const char *what)
{
    char *csvpath = inc_path(fx, ".expected.csv");
    char *want = tu_slurp(csvpath);
    for (size_t i = 0; i < 3 && fx->present[i]; i++)
        cr_assert(strstr(v, fx->present[i]) != NULL, "%s: no row starting %s", what, fx->present[i] + 1);
    if (fx->absent) cr_assert(strstr(v, fx->absent) == NULL, "%s: row %s must be deleted", what, fx->absent + 1);
    assert_same_csv(v, want, what);
    free(want);
    free(csvpath);
}

typedef struct inc_param {
    size_t fixture;
    size_t batch;
} inc_param_t;

ParameterizedTestParameters(fixtures, incremental_snapshot)
{
    static inc_param_t params[N_INC * 4];
    static const size_t sizes[] = {1, 7, 100, 100000};
    for (size_t f = 0; f < N_INC; f++)
        for (size_t b = 0; b < 4; b++) params[f * 4 + b] = (inc_param_t){f, sizes[b]};
    return cr_make_param_array(inc_param_t, params, N_INC * 4);
}

/* Zero dead letters, public.items equal to the source, and a replay of the
 * file changing nothing (apply_fixture). */
ParameterizedTest(inc_param_t *p, fixtures, incremental_snapshot)
{
    const inc_fixture_t *fx = &inc_fixtures[p->fixture];
    char *path = inc_path(fx, ".jsonl");
    char what[128];
    snprintf(what, sizeof what, "%s, batch size %zu", fx->name, p->batch);
    cdc_apply_result_t r;
    char *v = apply_fixture(path, p->batch, "public.items", &r);
    check_items(fx, v, what);
    free(v);
    free(path);
}

/* The file applied twice, the second time with another batch size (batch
 * boundaries fall elsewhere): the second pass applies nothing and the table
 * stays equal to the source. */
Test(fixtures, incremental_snapshot_twice_other_batch_size)
{
    static const size_t first[] = {1, 100000}, second[] = {100000, 7};
    for (size_t f = 0; f < N_INC; f++)
        for (size_t k = 0; k < 2; k++) {
            const inc_fixture_t *fx = &inc_fixtures[f];
            char *path = inc_path(fx, ".jsonl");
            char what[128];
            snprintf(what, sizeof what, "%s, batch size %zu then %zu", fx->name, first[k], second[k]);
            char *dir = tu_tmpdir();
            cdc_store_t *st = tu_open(dir);
            cdc_error_t e = {0};
            cdc_apply_result_t r1, r2;
            cdc_file_options_t o1 = {.batch_size = first[k]}, o2 = {.batch_size = second[k]};
            cr_assert_eq(cdc_store_apply_file(st, path, &o1, &r1, &e), 0, "%s: %s", what, e.msg);
            cr_assert_eq(r1.dead_letters, 0, "%s: %llu dead letters in the first pass; the first: %s", what,
                         (unsigned long long)r1.dead_letters, first_dead_letter(st));
            char *v1 = tu_export(st, "public.items", 1);
            cr_assert_eq(cdc_store_apply_file(st, path, &o2, &r2, &e), 0, "%s: %s", what, e.msg);
            cr_assert_eq(r2.dead_letters, 0, "%s: %llu dead letters in the second pass; the first: %s", what,
                         (unsigned long long)r2.dead_letters, first_dead_letter(st));
            cr_assert_eq(r2.applied, 0, "%s: the second pass applied %llu", what, (unsigned long long)r2.applied);
            char *v2 = tu_export(st, "public.items", 1);
            cr_assert_str_eq(v2, v1, "%s: export --meta changed by the second pass", what);
            free(v1);
            free(v2);
            char *v = tu_export(st, "public.items", 0);
            check_items(fx, v, what);
            free(v);
            cdc_store_close(st);
            tu_rmrf(dir);
            free(dir);
            free(path);
        }
}
