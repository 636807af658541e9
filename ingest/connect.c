/*
 * connect.c: asks Kafka Connect's REST API about one connector
 * (cdc_connect_status): GET /connectors/NAME for its stored configuration
 * (which slot, publication and tables it uses) and GET
 * /connectors/NAME/status for its state and its tasks'.  The only file that
 * knows libcurl; the JSON answers are read by the decoder (decode.c), the
 * one file that knows cJSON.
 *
 * Only GET requests, each with its own time limit (the connection and the
 * whole transfer), no redirects followed, no proxy taken from the
 * environment unless curl's own rules say so; an answer larger than 4 MiB
 * is refused (a connector's config and status are a few kilobytes).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ingest.h"

#define MAX_BODY (4u << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* curl_global_init is not thread-safe before 7.84: once, from any thread. */
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static size_t on_body(char *p, size_t size, size_t n, void *opaque)
{
    cdc__buf *b = opaque;
    size_t len = size * n;
    if (b->len + len > MAX_BODY) return 0; /* curl then fails with CURLE_WRITE_ERROR */
    cdc__buf_put(b, p, len);
    return len;
}

/* GET url + path into body; 0, CDC_ENOTFOUND on HTTP 404, CDC_ECONNECT
 * otherwise (err names the URL and why); *status the HTTP status. */
static int get_once(const char *url, const char *path, int timeout_ms, cdc__buf *body, long *status_out,
                    cdc_error_t *err)
{
    cdc__buf u = {0};
    cdc__buf_puts(&u, url);
    while (u.len && u.p[u.len - 1] == '/') u.len--;
    cdc__buf_puts(&u, path);
    cdc__buf_putc(&u, 0);
    body->len = 0;
    CURL *h = curl_easy_init();
    if (!h) {
        int rc = cdc__err(err, CDC_ECONNECT, "Kafka Connect %s: cannot start an HTTP client", u.p);
        cdc__buf_free(&u);
        return rc;
    }
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, u.p);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "cdcstore/" CDC_VERSION_STRING);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    *status_out = cc == CURLE_OK ? status : 0;
    int rc = 0;
    if (cc != CURLE_OK) {
        rc = cdc__err(err, CDC_ECONNECT, "Kafka Connect %s: %s", u.p, cerr[0] ? cerr : curl_easy_strerror(cc));
    } else if (status != 200) {
        char msg[400];
        cdc__connect_read_error(body->p, body->len, msg, sizeof msg);
        rc = cdc__err(err, status == 404 ? CDC_ENOTFOUND : CDC_ECONNECT, "Kafka Connect %s: HTTP %ld: %s", u.p,
                      status, msg);
    }
    cdc__buf_free(&u);
    return rc;
}

/* get_once, asked again (up to 5 times, a second apart) while Kafka Connect
 * answers that its workers are rebalancing: it does so for a moment after
 * any connector's configuration changes (HTTP 409, or 500 "Request cannot
 * be completed because a rebalance is expected"), and doctor run then
 * reported the connector failed. */
static int get(const char *url, const char *path, int timeout_ms, cdc__buf *body, cdc_error_t *err)
{
    for (int attempt = 0;; attempt++) {
        long status = 0;
        int rc = get_once(url, path, timeout_ms, body, &status, err);
        int rebalancing = status == 409 || (status == 500 && body->len && body->p &&
                                            memmem(body->p, body->len, "rebalance", 9) != NULL);
        if (!rc || !rebalancing || attempt == 4) return rc;
        sleep(1);
    }
}

int cdc_connect_status(const char *url, const char *connector, int timeout_ms, cdc_connect_status_t **out,
                       cdc_error_t *err)
{
    if (!url || !connector || !out) return cdc__err(err, CDC_EINVAL, "cdc_connect_status: bad arguments");
    *out = NULL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return cdc__err(err, CDC_ECONNECT, "Kafka Connect %s: libcurl: %s", url, curl_easy_strerror(curl_init_rc));
    if (timeout_ms <= 0) timeout_ms = 5000;
    /* The name goes into the path: percent-encode all but [A-Za-z0-9-._~]. */
    cdc__buf path = {0}, body = {0};
    cdc__buf_puts(&path, "/connectors/");
    for (const unsigned char *p = (const unsigned char *)connector; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p))
            cdc__buf_putc(&path, (char)*p);
        else cdc__buf_printf(&path, "%%%02X", *p);
    }
    size_t base = path.len;
    cdc__buf_putc(&path, 0);
    cdc_connect_status_t *s = cdc__calloc(1, sizeof *s);
    s->name = cdc__strdup(connector);
    int rc = get(url, path.p, timeout_ms, &body, err);
    if (!rc) rc = cdc__connect_read_config(body.p, body.len, s, err);
    if (!rc) {
        path.len = base;
        cdc__buf_puts(&path, "/status");
        cdc__buf_putc(&path, 0);
        rc = get(url, path.p, timeout_ms, &body, err);
    }
    if (!rc) rc = cdc__connect_read_status(body.p, body.len, s, err);
    cdc__buf_free(&path);
    cdc__buf_free(&body);
    if (rc) {
        cdc_connect_status_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

const char *cdc_connect_config(const cdc_connect_status_t *s, const char *key)
{
    if (!s || !key) return NULL;
    for (size_t i = 0; i < s->nconfig; i++)
        if (!strcmp(s->config_keys[i], key)) return s->config_values[i];
    return NULL;
}

void cdc_connect_status_free(cdc_connect_status_t *s)
{
    if (!s) return;
    free(s->name);
    free(s->state);
    free(s->worker_id);
    free(s->trace);
    for (size_t i = 0; i < s->ntasks; i++) {
        free(s->tasks[i].state);
        free(s->tasks[i].worker_id);
        free(s->tasks[i].trace);
    }
    free(s->tasks);
    cdc_strings_free(s->config_keys, s->nconfig);
    cdc_strings_free(s->config_values, s->nconfig);
    free(s);
}
