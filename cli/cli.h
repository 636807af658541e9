/*
 * cli.h: what the cdcstore command's files share.
 */
#ifndef CDC_CLI_H
#define CDC_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdcstore.h"

/* Exit status: 0 success, 1 error, 2 usage error, 3 the run finished but
 * wrote dead letters, 4 the run stopped at a bad record (--on-error stop). */
enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_DEAD = 3, EXIT_STOPPED = 4 };

/* The command holds to the library's allocation policy (include/cdcstore.h,
 * "memory"): an allocation that fails ends the process with a message. */
static inline void *cli_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "cdcstore: out of memory\n");
        abort();
    }
    return p;
}

static inline char *cli_strdup(const char *s)
{
    char *p = cli_calloc(strlen(s) + 1, 1);
    return strcpy(p, s);
}

extern int cli_log_json, cli_log_level;
void cli_log(void *opaque, int level, const char *facility, const char *msg);
/* Opens the replica; returns 0 or an exit status after printing the error.
 * With create, *created (when not NULL) is set to 1 when DIR did not exist
 * before: cli_remove_new_replica() may then take it away again. */
int cli_open(const char *db, int create, int read_only, cdc_store_t **st, int *created);
/* Closes st, then removes the replica directory db, which this run created
 * (cli_open's *created), when nothing of any input was applied to it: no
 * record read, no dead letter.  So a command that fails before applying
 * anything leaves no empty replica behind.  Returns 1 when removed, 0 when
 * the replica stays (closed either way). */
int cli_remove_new_replica(cdc_store_t *st, const char *db);
/* Prints "WHO: " and the error's message, with the code's name in brackets
 * when the message does not already say it ("cannot open: No such file or
 * directory" is not followed by "(No such file or directory)"). */
void cli_print_error(const char *who, const cdc_error_t *e, int rc);
/* cli_print_error("cdcstore", e, rc); returns exit status 1. */
int cli_fail(const cdc_error_t *e, int rc);
/* Splits "LOW:HIGH" (JSON keys, either may be empty); 0 ok, -1 malformed. */
int cli_parse_range(const char *spec, char **lo, char **hi);

/* --decimal and --column-type: 0, or an exit status after printing. */
int cli_declare_columns(cdc_store_t *st, const char *cmd, char **decimals, size_t nd, char **types, size_t nt);

/* ---- cli/args.c: option values ---- */

/* Reads the value of a numeric option: decimal digits only (no sign, no
 * space, nothing after them), from min to max.  On anything else prints
 * "cdcstore CMD: FLAG VALUE: expected a whole number from MIN to MAX" (no
 * space after a FLAG that ends in '=', as "--decimal S.T.C=") and
 * returns EXIT_USAGE; 0 with *out set otherwise.  Every numeric option of
 * the command goes through it. */
int cli_parse_uint(const char *cmd, const char *flag, const char *value, uint64_t min, uint64_t max,
                   uint64_t *out);
/* Reads a size in bytes: a whole number, optionally followed by a unit of
 * PostgreSQL's (kB, MB, GB, TB: powers of 1024) or its IEC name (KiB...);
 * as cli_parse_uint otherwise. */
int cli_parse_size(const char *cmd, const char *flag, const char *value, uint64_t *out);
/* Reads an LSN, as a number or in PostgreSQL's X/Y form (two hexadecimal
 * numbers of at most 8 digits); as cli_parse_uint otherwise. */
int cli_parse_lsn(const char *cmd, const char *flag, const char *value, uint64_t *out);
/* Reads a duration: a whole number above 0 and a unit, s, m, h or d
 * ("30m", "12h", "7d"), into milliseconds; as cli_parse_uint otherwise. */
int cli_parse_duration(const char *cmd, const char *flag, const char *value, int64_t *ms);
/* The options of a command that takes only --db DIR, --table T (when table
 * is not NULL; without it --table is a usage error) and --help, followed by
 * exactly nargs operands, which start at argv[optind] afterwards.  --db and
 * --table (when asked for) are required.  Returns -1 to go on, else the
 * exit status to return: EXIT_OK after printing usage for --help,
 * EXIT_USAGE after printing it to stderr. */
int cli_db_table_options(int argc, char **argv, const char *usage, int nargs, const char **db,
                         const char **table);

/* ---- cli/output.c: text for a terminal ---- */

/* A copy of s (n bytes; NULL is "") that is safe to print to a terminal:
 * control bytes as \n, \r, \t or \xNN, and so the bytes of C1 controls and
 * of invalid UTF-8; printable UTF-8 as is.  For all record-derived text the
 * command prints as text (table and column names, log messages, dead
 * letters); JSON output goes through cdc_json_write_string instead.
 * Ownership: the caller frees the result. */
char *cli_escape(const char *s, size_t n);
/* Writes cli_escape(s, n) to f. */
void cli_write_escaped(FILE *f, const char *s, size_t n);
/* Formats, escapes the whole and writes it to f as one line (newline
 * added) in one write. */
void cli_printf_escaped(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line to stderr at a level ("info", "warn", "error"): escaped text, or
 * with --log-format json one JSON object, as the logs (cli_log).
 * cli_printf_escaped(stderr, ...) is cli_note at "error", or "warn" when
 * the text says "warning". */
void cli_note(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One log line as a JSON object {"ts", "level", "facility", "msg"}, in one
 * write; -1 (nothing written) when it cannot be built. */
int cli_json_line(FILE *f, const char *level, const char *facility, const char *msg, size_t n);

/* The word for a count: one when n is 1, else many ("1 tombstone",
 * "0 tombstones"): every count the command prints in a sentence. */
const char *cli_plural(uint64_t n, const char *one, const char *many);

/* The closing line of an apply or ingest that met bad records: how many
 * went to the dead-letter store, how many of them were there already (an
 * earlier run's, or this run's: each is stored once), and the command that
 * lists them. */
void cli_dead_letters_note(FILE *f, const char *cmd, const cdc_apply_result_t *r, const char *db);

/* 1 when the n bytes at s are valid UTF-8. */
int cli_utf8_valid(const char *s, size_t n);
/* Writes the n bytes at data to f in base64. */
void cli_put_base64(FILE *f, const void *data, size_t n);

/* ---- cli/output.c: export files ---- */

/* Exports table to the file at path, replacing it atomically: until the
 * export is complete and synced the file keeps its previous content, and
 * on any failure it is left as it was (see the top of cli/output.c).
 * Returns 0, or a negative code with e filled. */
int cli_export_file(cdc_store_t *st, const char *table, const cdc_export_options_t *eo, const char *path,
                    uint64_t *rows, cdc_error_t *e);

/* ---- cli/metrics.c: ingest's Prometheus endpoint ---- */

typedef struct cli_metrics cli_metrics;
/* Serves /metrics on addr (HOST:PORT) from a thread of its own.  Returns 0
 * with *out set, or an exit status after printing why (2: a malformed
 * address, 1: cannot listen). */
int cli_metrics_start(const char *addr, cli_metrics **out);
/* Hands over a batch's figures (b may be NULL) and, when st is given, the
 * replica's per-table counters (read from st: only in the thread that
 * applies).  m may be NULL. */
void cli_metrics_update(cli_metrics *m, cdc_store_t *st, const cdc_kafka_batch_t *b);
/* Stops the server and frees m; accepts NULL. */
void cli_metrics_stop(cli_metrics *m);

/* ---- cli/latency.c: the last minute's latency, for status ---- */

typedef struct cli_latency {
    int64_t as_of_ms;        /* when the ingest wrote it (Unix ms) */
    long pid;                /* the ingest's process */
    int running;             /* 0: the ingest had stopped when it wrote it */
    int window_s;            /* the window: the last window_s seconds before as_of_ms */
    uint64_t samples;        /* streamed changes applied in the window */
    int64_t p50_ms, p99_ms, max_ms;
} cli_latency;

typedef struct cli_latwin cli_latwin;
/* A window for the replica in directory db. */
cli_latwin *cli_latwin_new(const char *db);
/* Adds a batch's latencies, applied at now_ms (Unix ms); writes the file
 * when a second has passed since it last did.  w may be NULL. */
void cli_latwin_add(cli_latwin *w, const int64_t *ms, size_t n, int64_t now_ms);
/* Writes the file a last time (running 0) and frees w; accepts NULL. */
void cli_latwin_free(cli_latwin *w, int64_t now_ms);
/* Reads what an ingest left for the replica in db: 0, or -1 when there is
 * nothing readable. */
int cli_latwin_read(const char *db, cli_latency *out);

/* Subcommands in their own files. */
int cmd_ingest(int argc, char **argv);
int cmd_hash(int argc, char **argv);
int cmd_reconcile(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

#endif
