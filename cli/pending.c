/*
 * pending.c: subcommands whose implementation has not landed yet.  They say
 * so and fail, rather than pretend.
 */
#include <stdio.h>

#include "cli.h"

static int not_built(const char *cmd)
{
    fprintf(stderr, "cdcstore %s: not available in this build yet\n", cmd);
    return 1;
}

int cmd_reconcile(int argc, char **argv) { (void)argc; (void)argv; return not_built("reconcile"); }
