/*
 * test_connect.c: Kafka Connect's answers as cdc_connect_status reads them
 * (the decoder's readers of GET /connectors/NAME and .../status, captured
 * from Connect 4.3 with Debezium 3.6.1, and of its error bodies), and
 * endpoints that do not answer: Connect at a closed port, a source at a
 * closed port, each an error naming it, never a crash.  doctor's lines on
 * the real stack are tested by tests/e2e/doctor.sh.
 */
#include <criterion/criterion.h>

#include "testutil.h"
#include "ingest.h"

static const char *config_body =
    "{\"name\":\"shop\",\"config\":{\"connector.class\":\"io.debezium.connector.postgresql.PostgresConnector\","
    "\"slot.name\":\"shop_slot\",\"publication.name\":\"shop_pub\",\"tasks.max\":\"1\","
    "\"table.include.list\":\"public.orders,public.products\",\"name\":\"shop\"},"
    "\"tasks\":[{\"connector\":\"shop\",\"task\":0}],\"type\":\"source\"}";

static const char *status_failed =
    "{\"name\":\"shop\",\"connector\":{\"state\":\"RUNNING\",\"worker_id\":\"127.0.0.1:8083\"},"
    "\"tasks\":[{\"id\":0,\"state\":\"FAILED\",\"worker_id\":\"127.0.0.1:8083\","
    "\"trace\":\"org.apache.kafka.connect.errors.ConnectException: An exception occurred\\n\\tat io.debezium...\"}],"
    "\"type\":\"source\"}";

Test(connect, reads_the_config_and_the_status)
{
    cdc_connect_status_t *s = calloc(1, sizeof *s);
    cdc_error_t e = {0};
    cr_assert_eq(cdc__connect_read_config(config_body, strlen(config_body), s, &e), 0, "%s", e.msg);
    cr_assert_eq(cdc__connect_read_status(status_failed, strlen(status_failed), s, &e), 0, "%s", e.msg);
    cr_assert_str_eq(s->name, "shop");
    cr_assert_str_eq(cdc_connect_config(s, "slot.name"), "shop_slot");
    cr_assert_str_eq(cdc_connect_config(s, "publication.name"), "shop_pub");
    cr_assert_null(cdc_connect_config(s, "snapshot.mode"));
    cr_assert_str_eq(s->state, "RUNNING");
    cr_assert_eq(s->ntasks, 1);
    cr_assert_eq(s->tasks[0].id, 0);
    cr_assert_str_eq(s->tasks[0].state, "FAILED");
    cr_assert(strstr(s->tasks[0].trace, "ConnectException"));
    cdc_connect_status_free(s);
}

Test(connect, a_stopped_connector_has_no_task)
{
    const char *body = "{\"name\":\"shop\",\"connector\":{\"state\":\"STOPPED\",\"worker_id\":\"w\"},\"tasks\":[],"
                       "\"type\":\"source\"}";
    cdc_connect_status_t *s = calloc(1, sizeof *s);
    cr_assert_eq(cdc__connect_read_status(body, strlen(body), s, NULL), 0);
    cr_assert_str_eq(s->state, "STOPPED");
    cr_assert_eq(s->ntasks, 0);
    cdc_connect_status_free(s);
}

Test(connect, refuses_what_is_not_the_json_expected)
{
    const char *bodies[] = {"", "not json", "[]", "{\"connector\":{}}", "{\"connector\":{\"state\":1}}",
                            "{\"name\":\"x\"} trailing"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        cdc_connect_status_t *s = calloc(1, sizeof *s);
        cdc_error_t e = {0};
        cr_assert_eq(cdc__connect_read_status(bodies[i], strlen(bodies[i]), s, &e), CDC_ECONNECT, "%s", bodies[i]);
        cr_assert(strstr(e.msg, "not the JSON object expected"), "%s", e.msg);
        cr_assert_eq(cdc__connect_read_config(bodies[i], strlen(bodies[i]), s, &e), CDC_ECONNECT, "%s", bodies[i]);
        cdc_connect_status_free(s);
    }
}

Test(connect, error_bodies_give_their_message)
{
    char m[100];
    const char *b = "{\"error_code\":404,\"message\":\"Connector shop not found\"}";
    cdc__connect_read_error(b, strlen(b), m, sizeof m);
    cr_assert_str_eq(m, "Connector shop not found");
    cdc__connect_read_error("<html>Bad Gateway</html>", 24, m, sizeof m);
    cr_assert_str_eq(m, "<html>Bad Gateway</html>");
    cdc__connect_read_error(NULL, 0, m, sizeof m);
    cr_assert_str_eq(m, "");
}

Test(connect, a_closed_port_is_an_error_naming_the_url)
{
    cdc_connect_status_t *s = (void *)1;
    cdc_error_t e = {0};
    cr_assert_eq(cdc_connect_status("http://127.0.0.1:1", "a b/c", 2000, &s, &e), CDC_ECONNECT);
    cr_assert_null(s);
    /* The name is percent-encoded into the path. */
    cr_assert(strstr(e.msg, "http://127.0.0.1:1/connectors/a%20b%2Fc"), "%s", e.msg);
    cr_assert_eq(cdc_connect_status(NULL, "x", 0, &s, &e), CDC_EINVAL);
}

Test(source, a_closed_port_is_an_error_without_the_password)
{
    cdc_source_status_t *s = (void *)1;
    cdc_error_t e = {0};
    int rc = cdc_source_status("host=127.0.0.1 port=1 dbname=shop user=app password=hunter2", NULL, 2000, &s, &e);
    cr_assert_eq(rc, CDC_ESOURCE);
    cr_assert_null(s);
    cr_assert(strstr(e.msg, "user=app dbname=shop host=127.0.0.1 port=1: cannot connect"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "hunter2"), "%s", e.msg);
    cdc_source_status_free(NULL);
    cdc_connect_status_free(NULL);
}
