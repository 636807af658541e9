/*
 * test_filesrc.c: the file source: kcat -J lines and bare envelopes, blank
 * lines, lines that are not JSON (dead-lettered with file and line), the
 * reader/apply pipeline at several batch sizes, --on-error stop and the stop
 * flag ending the pipeline early.
 */
#include <errno.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "testutil.h"

#define DOC "tests/data/doc/events.jsonl"

static char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/cdcfile.XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* The export of public.orders after applying path in batches of bs to a new
 * replica; *r the apply's result. */
static char *apply_file_view(const char *path, size_t bs, cdc_apply_result_t *r)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_file_options_t fo = {.batch_size = bs};
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, &fo, r, &e), 0, "%s", e.msg);
    char *v = tu_export(st, "public.orders", 0);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    return v;
}

Test(filesrc, every_batch_size_gives_the_same_view)
{
    char *ref = NULL;
    for (size_t bs = 1; bs <= 12; bs++) {
        cdc_apply_result_t r;
        char *v = apply_file_view(DOC, bs, &r);
        cr_assert_eq(r.read, 11);
        cr_assert_eq(r.tombstones, 1);
        if (!ref) ref = v;
        else {
            cr_assert_str_eq(v, ref, "batch size %zu", bs);
            free(v);
        }
    }
    cr_assert_str_eq(ref, "order_id,status,amount\n1,shipped,25.00\n3,paid,60.00\n4,paid,15.00\n");
    free(ref);
}

Test(filesrc, bare_envelopes_blank_and_bad_lines)
{
    char *path = write_tmp(
        "{\"op\":\"c\",\"after\":{\"id\":1,\"s\":\"a,b\"},\"source\":{\"schema\":\"public\",\"table\":\"t\",\"lsn\":10}}\n"
        "\n"
        "   \n"
        "this is not json\n"
        "{\"op\":\"u\",\"after\":{\"id\":1,\"s\":\"c\\\"d\"},\"source\":{\"schema\":\"public\",\"table\":\"t\",\"lsn\":20}}\r\n"
        "{\"topic\":\"x.public.t\",\"partition\":0,\"offset\":5,\"key\":\"{\\\"id\\\":2}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":2,\\\"s\\\":\\\"\\\\u00e9\\\"},\\\"source\\\":{\\\"lsn\\\":30}}\"}\n");
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, NULL, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.read, 4);
    cr_assert_eq(r.dead_letters, 1);
    char *v = tu_export(st, "public.t", 0);
    cr_assert_str_eq(v, "id,s\n1,\"c\"\"d\"\n2,é\n");
    cdc_dlq_iter_t *it;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
    cr_assert_eq(cdc_dlq_next(it, &dl, NULL), 1);
    cr_assert_eq(dl.line, 4, "the bad line's number");
    cr_assert_str_eq(dl.source, path);
    cr_assert(strstr(dl.reason, ":4:") || strstr(dl.reason, ":4 ") || strstr(dl.reason, ":4"), "%s", dl.reason);
    cdc_dlq_close(it);
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    unlink(path);
    free(path);
}

Test(filesrc, on_error_stop_and_stop_flag_end_the_pipeline)
{
    /* 300 good records, one bad, 300 more: stop applies what came before */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (int i = 0; i < 601; i++) {
        if (i == 300) fputs("{\"topic\":\"x.public.t\",\"partition\":0,\"offset\":300,\"key\":\"{}\",\"payload\":\"[1]\"}\n", f);
        else
            fprintf(f, "{\"topic\":\"x.public.t\",\"partition\":0,\"offset\":%d,\"key\":\"{\\\"id\\\":%d}\",\"payload\":"
                       "\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":%d},\\\"source\\\":{\\\"lsn\\\":%d}}\"}\n",
                    i, i, i, 100 + i);
    }
    fclose(f);
    char *path = write_tmp(text);
    free(text);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_file_options_t fo = {.batch_size = 7};
    fo.apply.on_error = CDC_ON_ERROR_STOP;
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, &fo, &r, &e), CDC_ESTOPPED);
    int64_t pos;
    cdc_store_position(st, "x.public.t", 0, &pos, NULL);
    cr_assert_eq(pos, 299);
    cdc_stats_t s;
    cdc_store_stats(st, "public.t", &s, NULL);
    cr_assert_eq(s.rows_live, 300);
    cdc_store_close(st);
    tu_rmrf(dir);
    /* the stop flag: set before the run, it gives the first batch up (a
     * signal stops a batch at once; nothing of it is written) */
    st = tu_open(dir);
    volatile int stop = 1;
    cdc_file_options_t fo2 = {.batch_size = 50, .stop = &stop};
    cr_assert_eq(cdc_store_apply_file(st, path, &fo2, &r, &e), -EINTR);
    cr_assert(strstr(e.msg, "interrupted"), "%s", e.msg);
    cr_assert_eq(r.read, 0);
    cr_assert_eq(r.applied, 0);
    cdc_store_close(st);
    st = tu_open(dir);
    cdc_stats_t sx;
    cr_assert_eq(cdc_store_stats(st, NULL, &sx, NULL), 0);
    cr_assert_eq(sx.events_read, 0, "nothing of the given-up batch is stored");
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    unlink(path);
    free(path);
}

Test(filesrc, missing_file_names_it)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_error_t e = {0};
    int rc = cdc_store_apply_file(st, "/nonexistent/events.jsonl", NULL, NULL, &e);
    cr_assert(rc < 0);
    cr_assert(strstr(e.msg, "/nonexistent/events.jsonl") != NULL, "%s", e.msg);
    /* The totals are filled on every return: a caller that adds them up
     * (the command's summary) must not read what its stack held before. */
    cdc_apply_result_t r;
    memset(&r, 0xA5, sizeof r);
    cr_assert(cdc_store_apply_file(st, "/nonexistent/events.jsonl", NULL, &r, &e) < 0);
    cr_assert(r.read == 0 && r.applied == 0 && r.stale == 0 && r.duplicate == 0 && r.tombstones == 0 &&
              r.dead_letters == 0, "totals not zeroed: read %llu, dead letters %llu", (unsigned long long)r.read,
              (unsigned long long)r.dead_letters);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}

/* A source position decides where a rerun resumes: a partition or offset
 * that is not a non-negative integer in range is a dead letter (named by
 * its file and line), never rounded, cut or wrapped; the good records
 * around it apply, and the replica opens again afterwards. */
Test(filesrc, bad_positions_are_dead_letters)
{
#define KREC(part, off, id)                                                                                  \
    "{\"topic\":\"x.public.p\",\"partition\":" part ",\"offset\":" off ",\"key\":\"{\\\"id\\\":" id "}\","      \
    "\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":" id "},\\\"source\\\":{\\\"lsn\\\":10}}\"}\n"
    const char *bad[] = {KREC("0", "9223372036854775813", "1"), /* 2^63 + 5 */
                         KREC("0", "9223372036854775807", "2"), /* 2^63 - 1: no next offset */
                         KREC("1099511627776", "3", "3"),       /* partition 2^40 */
                         KREC("-1", "3", "4"),
                         KREC("0", "1.5", "5"),
                         KREC("0", "\\\"7\\\"", "6"),
                         KREC("0", "null", "7"),
                         KREC("0", "-4", "8"),
                         KREC("0", "1e3", "9"),
                         KREC("0", "007", "10")};
    size_t nbad = sizeof bad / sizeof bad[0];
    char text[8192] = "";
    strcat(text, KREC("0", "40", "100"));
    for (size_t i = 0; i < nbad; i++) strcat(text, bad[i]);
    strcat(text, KREC("2", "41", "101"));
    char *path = write_tmp(text);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, NULL, &r, &e), 0, "%s", e.msg);
    cr_expect_eq(r.read, nbad + 2);
    cr_expect_eq(r.dead_letters, nbad, "every bad position is a dead letter");
    char *v = tu_export(st, "public.p", 0);
    cr_expect_str_eq(v, "id\n100\n101\n", "only the well-placed records apply");
    free(v);
    cdc_dlq_iter_t *it;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
    size_t n = 0;
    while (cdc_dlq_next(it, &dl, NULL) == 1) {
        cr_expect(strstr(dl.reason, "partition") || strstr(dl.reason, "offset"), "%s", dl.reason);
        cr_expect(strstr(dl.reason, path), "the reason names the file: %s", dl.reason);
        cr_expect_eq(dl.offset, -1, "no position is kept for it");
        n++;
    }
    cdc_dlq_close(it);
    cr_expect_eq(n, nbad);
    cdc_store_close(st);
    st = tu_open(dir); /* opens again, with the good positions only */
    int64_t off = -2;
    cr_expect_eq(cdc_store_position(st, "x.public.p", 0, &off, NULL), 0);
    cr_expect_eq(off, 40);
    cr_expect_eq(cdc_store_position(st, "x.public.p", 2, &off, NULL), 0);
    cr_expect_eq(off, 41);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    unlink(path);
    free(path);
#undef KREC
}

/* The same through the API: a record whose offset leaves no next offset
 * (2^63 - 1) or whose partition is negative is a dead letter. */
Test(filesrc, api_positions_out_of_range)
{
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    char *env = tu_env("c", NULL, "{\"id\":1}", 10, NULL);
    cdc_record_t recs[3] = {tu_rec("x.public.q", 0, 5, "{\"id\":1}", env),
                            tu_rec("x.public.q", 0, 0, "{\"id\":1}", env),
                            tu_rec("x.public.q", -3, 6, "{\"id\":1}", env)};
    recs[1].offset = INT64_MAX;
    cdc_apply_result_t r = tu_apply(st, recs, 3);
    cr_expect_eq(r.dead_letters, 2);
    cdc_store_close(st);
    st = tu_open(dir);
    int64_t off = -2;
    cr_expect_eq(cdc_store_position(st, "x.public.q", 0, &off, NULL), 0);
    cr_expect_eq(off, 5);
    cdc_store_close(st);
    free(env);
    tu_rmrf(dir);
    free(dir);
}

/* Hostile but readable lines: a payload written as a JSON object, a line
 * starting with a byte-order mark, an LSN past a double's range; and each
 * dead letter's reason names its position once. */
Test(filesrc, hostile_lines_and_reasons)
{
    char *path = write_tmp(
        "{\"topic\":\"shop.public.evil\",\"partition\":0,\"offset\":1,\"key\":\"{\\\"id\\\":1}\",\"payload\":\"{\\\"op\\\":\\\"x\\\"}\"}\n"
        "{\"topic\":\"shop.public.evil\",\"partition\":0,\"offset\":2,\"key\":{\"id\":2},\"payload\":{\"op\":\"c\",\"after\":{\"id\":2},\"source\":{\"lsn\":5}}}\n"
        "\xef\xbb\xbf{\"topic\":\"shop.public.evil\",\"partition\":0,\"offset\":3,\"key\":\"{\\\"id\\\":3}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":3},\\\"source\\\":{\\\"lsn\\\":6}}\"}\n"
        "{\"topic\":\"shop.public.evil\",\"partition\":0,\"offset\":4,\"key\":\"{\\\"id\\\":4}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":4},\\\"source\\\":{\\\"lsn\\\":1e999}}\"}\n"
        /* a bare envelope after a byte-order mark, as a kcat line */
        "\xef\xbb\xbf{\"op\":\"c\",\"after\":{\"id\":5},\"source\":{\"schema\":\"public\",\"table\":\"evil\",\"lsn\":7}}\n"
        /* a kcat record without its payload: a dead letter as such, with its position */
        "{\"topic\":\"shop.public.evil\",\"partition\":0,\"offset\":6,\"key\":\"{\\\"id\\\":6}\"}\n");
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, NULL, &r, &e), 0, "%s", e.msg);
    cr_expect_eq(r.dead_letters, 3);
    char *v = tu_export(st, "public.evil", 0);
    cr_expect_str_eq(v, "id\n2\n3\n5\n", "the object payload and the lines after a BOM apply");
    free(v);
    cdc_dlq_iter_t *it;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
    cr_assert_eq(cdc_dlq_next(it, &dl, NULL), 1);
    cr_expect_str_eq(dl.reason, "shop.public.evil[0]@1: unknown op \"x\" (expected c, u, d, r, t or m)");
    cr_assert_eq(cdc_dlq_next(it, &dl, NULL), 1);
    cr_expect(strstr(dl.reason, "beyond the range of a double"), "%s", dl.reason);
    cr_expect_null(strstr(dl.reason, "null"), "an overflowed LSN is not reported as null: %s", dl.reason);
    cr_expect_eq(strstr(dl.reason + 1, "shop.public.evil[0]@4"), NULL, "the position once: %s", dl.reason);
    cr_assert_eq(cdc_dlq_next(it, &dl, NULL), 1);
    cr_expect_str_eq(dl.reason, "shop.public.evil[0]@6: a kcat record without \"payload\"");
    cr_expect_eq(dl.offset, 6);
    cr_expect_eq(dl.line, 6);
    cdc_dlq_close(it);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    unlink(path);
    free(path);
}

/* Text PostgreSQL cannot hold is a dead letter with its reason, never
 * stored cut or as it is: \u0000 in a value, a NUL in a topic (which would
 * name another table), invalid UTF-8, a column twice in one row. */
Test(filesrc, text_postgresql_cannot_hold)
{
    char *path = write_tmp(
        "{\"topic\":\"shop.public.t\",\"partition\":0,\"offset\":1,\"key\":\"{\\\"id\\\":1}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":1,\\\"s\\\":\\\"a\\\\u0000b\\\"},\\\"source\\\":{\\\"lsn\\\":5}}\"}\n"
        "{\"topic\":\"shop.public.t\\u0000.x\",\"partition\":0,\"offset\":2,\"key\":\"{\\\"id\\\":2}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":2},\\\"source\\\":{\\\"lsn\\\":6}}\"}\n"
        "{\"topic\":\"shop.public.t\",\"partition\":0,\"offset\":3,\"key\":\"{\\\"id\\\":3}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":3,\\\"s\\\":\\\"\xff\xfe\\\"},\\\"source\\\":{\\\"lsn\\\":7}}\"}\n"
        "{\"topic\":\"shop.public.t\",\"partition\":0,\"offset\":4,\"key\":\"{\\\"id\\\":14}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":14,\\\"s\\\":\\\"x\\\",\\\"id\\\":15},\\\"source\\\":{\\\"lsn\\\":8}}\"}\n"
        "{\"topic\":\"shop.public.t\",\"partition\":0,\"offset\":5,\"key\":\"{\\\"id\\\":5}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":5,\\\"s\\\":\\\"\\\\\\\\u0000 is text\\\"},\\\"source\\\":{\\\"lsn\\\":9}}\"}\n");
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, NULL, &r, &e), 0, "%s", e.msg);
    cr_expect_eq(r.dead_letters, 4);
    char *v = tu_export(st, "public.t", 0);
    cr_expect_str_eq(v, "id,s\n5,\\u0000 is text\n", "only the row whose text is text");
    free(v);
    const char *why[] = {"\\u0000", "NUL", "UTF-8", "twice"};
    cdc_dlq_iter_t *it;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(cdc_dlq_next(it, &dl, NULL), 1);
        cr_expect(strstr(dl.reason, why[i]), "dead letter %d: %s", i + 1, dl.reason);
    }
    cdc_dlq_close(it);
    char **names;
    size_t n;
    cr_assert_eq(cdc_store_tables(st, &names, &n, NULL), 0);
    for (size_t i = 0; i < n; i++) cr_expect_str_eq(names[i], "public.t", "no table made of a cut topic");
    cdc_strings_free(names, n);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    unlink(path);
    free(path);
}

/* kcat's "headers" (kcat -J, Debezium's as the test stack captures them):
 * a primary-key change's __debezium.oldkey / __debezium.newkey reach the
 * apply, so the new key keeps the unchanged TOASTed note (escapes in the
 * header value, a null header value, headers before or after the payload,
 * every batch size); a "headers" field of another shape is skipped, not a
 * bad line. */
Test(filesrc, key_change_headers)
{
#define ENV(op, before, after, lsn)                                                                               \
    "\"{\\\"op\\\":\\\"" op "\\\",\\\"before\\\":" before ",\\\"after\\\":" after                                \
    ",\\\"source\\\":{\\\"schema\\\":\\\"public\\\",\\\"table\\\":\\\"orders\\\",\\\"lsn\\\":" lsn "}}\""
    char *path = write_tmp(
        "{\"topic\":\"shop.public.orders\",\"partition\":0,\"offset\":0,\"headers\":[\"__debezium.context.taskId\",\"0\"],"
          "\"key\":\"{\\\"order_id\\\":1}\",\"payload\":" ENV("c", "null", "{\\\"order_id\\\":1,\\\"s\\\":\\\"a\\\",\\\"note\\\":\\\"LONG\\\"}", "10") "}\n"
        "{\"topic\":\"shop.public.orders\",\"partition\":0,\"offset\":1,\"headers\":[\"__debezium.newkey\",\"{\\\"order_id\\\":10}\",\"x\",null],"
          "\"key\":\"{\\\"order_id\\\":1}\",\"payload\":" ENV("d", "{\\\"order_id\\\":1,\\\"s\\\":null,\\\"note\\\":null}", "null", "20") "}\n"
        "{\"topic\":\"shop.public.orders\",\"partition\":0,\"offset\":2,\"headers\":[],\"key\":\"{\\\"order_id\\\":1}\",\"payload\":null}\n"
        "{\"topic\":\"shop.public.orders\",\"partition\":0,\"offset\":3,"
          "\"key\":\"{\\\"order_id\\\":10}\",\"payload\":" ENV("c", "null", "{\\\"order_id\\\":10,\\\"s\\\":\\\"b\\\",\\\"note\\\":\\\"__debezium_unavailable_value\\\"}", "20")
          ",\"headers\":[\"__debezium.o\\u006cdkey\",\"{\\\"order_\\u0069d\\\":1}\"]}\n"
        "{\"topic\":\"shop.public.orders\",\"partition\":0,\"offset\":4,\"headers\":[{\"k\":\"v\"}],"
          "\"key\":\"{\\\"order_id\\\":5}\",\"payload\":" ENV("c", "null", "{\\\"order_id\\\":5,\\\"s\\\":\\\"c\\\",\\\"note\\\":\\\"n\\\"}", "30") "}\n");
#undef ENV
    for (size_t bs = 1; bs <= 5; bs++) {
        cdc_apply_result_t r;
        char *v = apply_file_view(path, bs, &r);
        cr_expect_eq(r.dead_letters, 0, "batch size %zu", bs);
        cr_expect_str_eq(v, "order_id,s,note\n5,c,n\n10,b,LONG\n", "batch size %zu", bs);
        free(v);
    }
    unlink(path);
    free(path);
}

/* A line holds one record and nothing else: a second record on the line,
 * or text after one, makes the whole line a dead letter (before, the first
 * record applied and the rest of the line was dropped unseen); blanks after
 * it are fine.  Input the parser stops at gets a reason in plain words. */
Test(filesrc, one_record_per_line_and_plain_reasons)
{
#define KC(off, id, lsn)                                                                                   \
    "{\"topic\":\"shop.public.lines\",\"partition\":0,\"offset\":" #off ",\"key\":\"{\\\"id\\\":" #id       \
    "}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":" #id "},\\\"source\\\":{\\\"lsn\\\":" #lsn \
    "}}\"}"
    char deep[2200];
    strcpy(deep, "{\"topic\":\"shop.public.lines\",\"partition\":0,\"offset\":6,\"key\":\"{\\\"id\\\":6}\","
                 "\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":6,\\\"v\\\":");
    for (int i = 0; i < 1001; i++) strcat(deep, "[");
    strcat(deep, "\"}\n");
    char text[8192];
    snprintf(text, sizeof text,
             KC(1, 1, 10) KC(2, 2, 11) "\n"                       /* two records on a line */
             KC(3, 3, 12) " GARBAGE\n"                             /* text after one */
             KC(4, 4, 13) " \t \r\n"                              /* blanks after one: applied */
             "{\"topic\":\"shop.public.lines\",\"partition\":0,\"offset\":9,\"key\":\"{\\\"id\\\":9}\",\"payload\":null,"
             "\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":9},\\\"source\\\":{\\\"lsn\\\":15}}\"}\n"
             "{\"topic\":\"shop.public.lines\",\"partition\":0,\"offset\":5,\"key\":\"{\\\"id\\\":-9223372036854775809}\","
             "\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":-9223372036854775809},\\\"source\\\":{\\\"lsn\\\":14}}\"}\n"
             "%s"
             "{\"topic\":\"shop.public.lines\",\"partition\":0,\"offset\":7,\"key\":\"{\\\"id\\\":7}\","
             "\"payload\":\"\\ufeff{\\\"op\\\":\\\"c\\\",\\\"after\\\":{\\\"id\\\":7},\\\"source\\\":{\\\"lsn\\\":16}}\"}\n",
             deep);
#undef KC
    char *path = write_tmp(text);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    for (size_t bs = 1; bs <= 3; bs += 2) {
        cr_assert_eq(cdc_store_apply_file(st, path, &(cdc_file_options_t){.batch_size = bs}, &r, &e), 0, "%s", e.msg);
        if (bs == 1) {
            cr_expect_eq(r.read, 7, "every line is one record: %llu", (unsigned long long)r.read);
            cr_expect_eq(r.dead_letters, 6);
        }
    }
    char *v = tu_export(st, "public.lines", 0);
    cr_expect_str_eq(v, "id\n4\n");
    free(v);
    static const char *const want[] = {
        ":1: malformed JSON in the record value at byte 145: text after the JSON value",
        ":2: malformed JSON in the record value at byte 146: text after the JSON value",
        ":4: the record holds \"payload\" twice",
        "key {\"id\":-9223372036854775809}: column id: integer key out of the range of a bigint: "
        "-9223372036854775809",
        "nested deeper than 1,000 objects and arrays",
        "at byte 0: a byte-order mark (U+FEFF)",
    };
    cdc_dlq_iter_t *it;
    cdc_dead_letter_t dl;
    cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cr_assert_eq(cdc_dlq_next(it, &dl, NULL), 1);
        cr_expect(strstr(dl.reason, want[i]), "dead letter %zu: %s", i + 1, dl.reason);
    }
    cdc_dlq_close(it);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
    unlink(path);
    free(path);
}

/* A line longer than any record within the record limit could be (six
 * bytes of JSON escape per byte, and 1 MiB more) is skipped as it is read
 * and dead-lettered with its file, line and length: the reader never holds
 * more of it than the limit (before, getline kept a whole line, gigabytes
 * of one without a newline).  The lines around it apply. */
Test(filesrc, overlong_line_is_a_dead_letter)
{
    size_t big = (3u << 20) + 17;
    const char *r1 = "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"a\",\"amount\":\"1.00\"},"
                     "\"source\":{\"schema\":\"public\",\"table\":\"orders\",\"lsn\":10}}",
               *r2 = "{\"op\":\"c\",\"after\":{\"order_id\":2,\"status\":\"b\",\"amount\":\"2.00\"},"
                     "\"source\":{\"schema\":\"public\",\"table\":\"orders\",\"lsn\":11}}";
    char *longl = malloc(big + 16); /* {"x":"aaa...a"}, big + 8 bytes */
    sprintf(longl, "{\"x\":\"");
    memset(longl + 6, 'a', big);
    strcpy(longl + 6 + big, "\"}");
    char *text = malloc(2 * big + 1024);
    sprintf(text, "%s\n%s\n%s", r1, longl, r2);
    char *path = write_tmp(text);
    sprintf(text, "%s\n%s\n%s", r1, r2, longl); /* the long line last, without its newline */
    char *path_last = write_tmp(text);
    free(text);
    free(longl);
    for (size_t bs = 1; bs <= 3; bs += 2)
        for (int which = 0; which < 2; which++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        cdc_file_options_t fo = {.batch_size = bs, .apply = {.max_record_bytes = 1000}};
        cdc_apply_result_t r;
        cdc_error_t e = {0};
        cr_assert_eq(cdc_store_apply_file(st, which ? path_last : path, &fo, &r, &e), 0, "%s", e.msg);
        cr_expect_eq(r.read, 3, "file %d", which);
        cr_expect_eq(r.applied, 2, "file %d", which);
        cr_expect_eq(r.dead_letters, 1, "file %d: the long line, also last without a newline", which);
        char *v = tu_export(st, "public.orders", 0);
        cr_expect_str_eq(v, "order_id,status,amount\n1,a,1.00\n2,b,2.00\n", "batches of %zu", bs);
        free(v);
        cdc_dlq_iter_t *it;
        cdc_dead_letter_t dl;
        cr_assert_eq(cdc_dlq_open(st, &it, NULL), 0);
        cr_assert_eq(cdc_dlq_next(it, &dl, NULL), 1);
        char *want = tu_fmt(":%d: the line is %zu bytes, longer than any record", which ? 3 : 2, big + 8);
        cr_expect(strstr(dl.reason, want), "%s (want %s)", dl.reason, want);
        free(want);
        cdc_dlq_close(it);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
        }
    unlink(path);
    free(path);
    unlink(path_last);
    free(path_last);
}

static void count_batch(void *opaque, const cdc_apply_result_t *total, uint64_t bytes)
{
    (void)total;
    (void)bytes;
    (*(int *)opaque)++;
}

/* A batch ends at its count of records or at batch_bytes of their text,
 * whichever comes first (a record longer than that is a batch of its own):
 * the view is the same. */
Test(filesrc, batches_end_at_their_bytes)
{
    char *ref = apply_file_view(DOC, 100, &(cdc_apply_result_t){0});
    for (size_t cap = 1; cap <= 4096; cap *= 4) {
        int batches = 0;
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        cdc_file_options_t fo = {.batch_size = 100, .batch_bytes = cap, .progress = count_batch,
                                 .progress_opaque = &batches};
        cdc_apply_result_t r;
        cdc_error_t e = {0};
        cr_assert_eq(cdc_store_apply_file(st, DOC, &fo, &r, &e), 0, "%s", e.msg);
        cr_expect_eq(r.read, 11);
        if (cap == 1) cr_expect_geq(batches, 11, "a batch per record at 1 byte: %d", batches);
        if (cap == 4096) cr_expect_leq(batches, 2, "one batch (and the end) at 4 KiB: %d", batches);
        char *v = tu_export(st, "public.orders", 0);
        cr_expect_str_eq(v, ref, "batch_bytes %zu", cap);
        free(v);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
    free(ref);
}

/* Batches of 16 MiB of text or more keep to two in memory (filesrc.c,
 * THIRD_SLOT_TEXT): the reader waits for the batch two before to be
 * applied and reads into its text buffer.  Records of about 200 KB, 100 to
 * a batch (20 MB each): every record counted once and the view the same as
 * with batches of one record and of 10, in which no batch reaches it. */
Test(filesrc, large_batches_keep_to_two_and_lose_nothing)
{
    enum { N = 420, KEYS = 37, NOTE = 200000 };
    char *path = strdup("/tmp/cdcfile.XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    char *note = malloc(NOTE + 1);
    for (int i = 0; i < N; i++) {
        memset(note, 'a' + i % 26, NOTE);
        note[NOTE] = 0;
        char tag[16];
        int tl = snprintf(tag, sizeof tag, "r%05d-", i); /* the record it came from, then its letter */
        memcpy(note, tag, (size_t)tl);
        fprintf(f, "{\"op\":\"%s\",\"after\":{\"id\":%d,\"s\":\"%s\"},\"source\":{\"schema\":\"public\","
                   "\"table\":\"t\",\"lsn\":%d}}\n",
                i < KEYS ? "c" : "u", i % KEYS, note, 100 + i);
    }
    free(note);
    cr_assert_eq(fclose(f), 0);
    char *ref = NULL;
    size_t sizes[] = {100, 1, 10};
    for (size_t b = 0; b < sizeof sizes / sizeof *sizes; b++) {
        char *dir = tu_tmpdir();
        cdc_store_t *st = tu_open(dir);
        cdc_file_options_t fo = {.batch_size = sizes[b]};
        cdc_apply_result_t r;
        cdc_error_t e = {0};
        cr_assert_eq(cdc_store_apply_file(st, path, &fo, &r, &e), 0, "batches of %zu: %s", sizes[b], e.msg);
        cr_assert_eq(r.read, N, "batches of %zu: %llu records read", sizes[b], (unsigned long long)r.read);
        cr_assert_eq(r.dead_letters, 0, "batches of %zu: %llu dead letters", sizes[b],
                     (unsigned long long)r.dead_letters);
        char *v = tu_export(st, "public.t", 0);
        /* each key holds the note of its last record */
        for (int k = 0; k < KEYS; k++) {
            int last = k + ((N - 1 - k) / KEYS) * KEYS;
            char want[32];
            snprintf(want, sizeof want, "\n%d,r%05d-", k, last);
            cr_assert(strstr(v, want), "batches of %zu: key %d does not hold record %d's note", sizes[b], k, last);
        }
        if (!ref) ref = v;
        else {
            cr_assert(!strcmp(v, ref), "batches of %zu: the view differs from batches of 100", sizes[b]);
            free(v);
        }
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
    free(ref);
    unlink(path);
    free(path);
}

typedef struct batch_log {
    uint64_t read[8];
    int n;
} batch_log;

static void log_batch(void *opaque, const cdc_apply_result_t *total, uint64_t bytes)
{
    (void)bytes;
    batch_log *l = opaque;
    if (l->n < 8) l->read[l->n++] = total->read;
}

/* Input that pauses (a pipe: kcat -C -J following a topic) ends the batch
 * it has begun about 100 ms after its first record: the records before a
 * pause are applied then, not when the batch of 100 fills or the input
 * ends.  A regular file's batches stay whole (every_batch_size_...). */
Test(filesrc, a_pause_in_piped_input_ends_the_batch)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        FILE *in = fopen(DOC, "r"), *out = fdopen(fds[1], "w");
        char line[4096];
        for (int i = 0; fgets(line, sizeof line, in); i++) {
            if (i == 3) {
                fflush(out);
                sleep(2); /* the pause */
            }
            fputs(line, out);
        }
        fclose(out);
        _exit(0);
    }
    close(fds[1]);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
    char *dir = tu_tmpdir();
    cdc_store_t *st = tu_open(dir);
    batch_log l = {0};
    cdc_file_options_t fo = {.batch_size = 100, .progress = log_batch, .progress_opaque = &l};
    cdc_apply_result_t r;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_store_apply_file(st, path, &fo, &r, &e), 0, "%s", e.msg);
    waitpid(pid, NULL, 0);
    close(fds[0]);
    cr_expect_eq(r.read, 11);
    cr_expect_geq(l.n, 2, "at least two batches: %d", l.n);
    cr_expect_eq(l.read[0], 3, "the first batch ended at the pause: %llu records", (unsigned long long)l.read[0]);
    char *v = tu_export(st, "public.orders", 0);
    cr_expect_str_eq(v, "order_id,status,amount\n1,shipped,25.00\n3,paid,60.00\n4,paid,15.00\n");
    free(v);
    cdc_store_close(st);
    tu_rmrf(dir);
    free(dir);
}
