/*
 * output.c: where exports go.  A file is written through the library's
 * export writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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
