/*
 * output.c: what the command writes for people and where exports go.
 *
 * Text for a terminal.  Table names, column names, dead-letter reasons and
 * records come from the change events, that is from whoever can write to
 * the source database or the Kafka topic.  Printed raw, a newline in a
 * table name forges a line of `cdcstore tables`, and an escape sequence
 * ("\x1b[2J", or OSC sequences that set the window title or the clipboard)
 * acts on the operator's terminal.  Every piece of record-derived text the
 * command prints as text (not as JSON, which cdc_json_write_string escapes,
 * and not as export data, which must stay the bytes stored) goes through
 * cli_escape(): control bytes become \n, \r, \t or \xNN, and so do the
 * bytes of C1 controls and of invalid UTF-8; printable UTF-8 is kept.  A
 * backslash is not doubled: the escaped text is for reading (JSON records
 * as dlq list prints them stay legible), and --json is the exact form.
 *
 * Export files are written through the library's export writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* ---- Text for a terminal ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left) that is not a C1
 * control, or 0 (the byte is then escaped). */
static size_t utf8_printable(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F; /* up to U+10FFFF */
    } else return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (c == 0xC2 && s[1] < 0xA0) return 0; /* U+0080..U+009F, the C1 controls */
    return len;
}

char *cli_escape(const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    if (!s) n = 0;
    char *out = cli_calloc(4 * n + 1, 1), *o = out;
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        size_t len;
        if (c >= 0x20 && c < 0x7F) {
            *o++ = (char)c;
            i++;
        } else if (c >= 0x80 && (len = utf8_printable(u + i, n - i))) {
            memcpy(o, u + i, len);
            o += len;
            i += len;
        } else {
            *o++ = '\\';
            if (c == '\n') *o++ = 'n';
            else if (c == '\r') *o++ = 'r';
            else if (c == '\t') *o++ = 't';
            else {
                *o++ = 'x';
                *o++ = hex[c >> 4];
                *o++ = hex[c & 15];
            }
            i++;
        }
    }
    *o = 0;
    return out;
}

void cli_write_escaped(FILE *f, const char *s, size_t n)
{
    char *e = cli_escape(s, n);
    fputs(e, f);
    free(e);
}

void cli_printf_escaped(FILE *f, const char *fmt, ...)
{
    char *raw = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&raw, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fprintf(stderr, "cdcstore: out of memory\n");
        abort();
    }
    char *e = cli_escape(raw, (size_t)n);
    size_t len = strlen(e);
    e[len] = '\n'; /* one write, so that lines of different threads do not mix */
    fwrite(e, 1, len + 1, f);
    free(e);
    free(raw);
}

/* ---- Export files ---- */

int cli_open_output(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fprintf(stderr, "cdcstore: %s: cannot open for writing: %s\n", path, strerror(errno));
    return fd;
}

int cli_export_file(cdc_store_t *st, const char *table, const cdc_export_options_t *eo, int fd,
                    uint64_t *rows, cdc_error_t *e)
{
    return cdc_export_fd(st, table, eo, fd, rows, e);
}
