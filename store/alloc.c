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

/* Zeroed memory.  A block of 16 KiB (jemalloc's smallest "large" size;
 * below it, blocks live in slabs that are never discarded one by one) to
 * 64 MiB is taken with malloc and cleared with memset, not with calloc.
 * The apply's arrays of a batch (events, slots, groups: a few MiB at
 * batches of 10,000) are allocated and freed at every batch; jemalloc
 * (which the command links) serves such a calloc from the pages the last
 * batch freed by first discarding them (madvise MADV_DONTNEED: its cheap
 * way to get zeros), so every page was faulted in again, and cleared by the
 * kernel, at every batch: 104,000 minor faults in `cdcstore apply
 * --batch-size 10000` of the narrow stream (bench/gen.py --shape narrow),
 * 5.6% of the apply thread's samples and most of the decoding thread's
 * faults.  memset on pages still resident costs a fraction of that: with
 * it, 23,500 faults, and (runs interleaved, 2 shared cores) 2.28 s against
 * 2.42 s on that stream, 2.83 s against 2.95 s on the medium one, 5.74 s
 * against 6.42 s on the wide one (30 columns), the system time halved or
 * better.  Above 64 MiB a table may be large and used sparsely, and
 * calloc's untouched zero pages are worth keeping. */
#define CALLOC_CLEAR_MIN ((size_t)16 << 10)
#define CALLOC_CLEAR_MAX ((size_t)64 << 20)

void *cdc__calloc(size_t n, size_t size)
{
    if (!n) n = 1;
    if (!size) size = 1;
    if (size <= CALLOC_CLEAR_MAX / n) {
        size_t bytes = n * size;
        if (bytes >= CALLOC_CLEAR_MIN) {
            void *p = malloc(bytes);
            if (!p) cdc__oom(bytes);
            /* kept apart: the compiler turns a malloc and a memset of what
             * it returned back into calloc */
            __asm__ volatile("" : : "r"(p) : "memory");
            return memset(p, 0, bytes);
        }
    }
    void *p = calloc(n, size);
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
