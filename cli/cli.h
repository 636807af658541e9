/*
 * cli.h: what the cdcstore command's files share.
 */
#ifndef CDC_CLI_H
#define CDC_CLI_H

#include "cdcstore.h"

extern int cli_log_json, cli_log_level;
void cli_log(void *opaque, int level, const char *facility, const char *msg);
/* Opens the replica; returns 0 or an exit status after printing the error. */
int cli_open(const char *db, int create, int read_only, cdc_store_t **st);
/* Prints the error; returns exit status 1. */
int cli_fail(const cdc_error_t *e, int rc);
/* Splits "LOW:HIGH" (JSON keys, either may be empty); 0 ok, -1 malformed. */
int cli_parse_range(const char *spec, char **lo, char **hi);

/* --decimal and --column-type: 0, or an exit status after printing. */
int cli_declare_columns(cdc_store_t *st, const char *cmd, char **decimals, size_t nd, char **types, size_t nt);

/* cli/output.c */
int cli_open_output(const char *path);
int cli_export_file(cdc_store_t *st, const char *table, const cdc_export_options_t *eo, int fd,
                    uint64_t *rows, cdc_error_t *e);

/* Subcommands in their own files. */
int cmd_ingest(int argc, char **argv);
int cmd_hash(int argc, char **argv);
int cmd_reconcile(int argc, char **argv);

#endif
