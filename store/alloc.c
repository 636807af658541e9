/*
 * alloc.c: the library's allocation wrappers (the policy is written in
 * store/internal.h under "Memory"): on exhaustion they print one line naming
 * the size asked for and abort, so no caller carries an unchecked result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void cdc__oom(size_t n)
{
    fprintf(stderr, "cdcstore: out of memory allocating %zu bytes\n", n);
    abort();
}

void *cdc__calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) cdc__oom(n * size);
    return p;
}


char *cdc__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = cdc__malloc(n);
    memcpy(p, s, n);
    return p;
}

char *cdc__strndup(const char *s, size_t n)
{
    size_t l = strnlen(s, n);
    char *p = cdc__malloc(l + 1);
    memcpy(p, s, l);
    p[l] = 0;
    return p;
}
