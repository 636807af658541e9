/*
 * keys.c: an encoded primary key (store/codec.c's order-preserving form)
 * read back as typed parts, for what the query side builds from keys: SQL
 * literals and range bounds (sql.c, reconcile.c), JSON bounds for the
 * iterator (ranges.c).  The encoding belongs to the store, and so does its
 * one reader (cdc__key_read, store/codec.c); these only arrange the parts.
 */
#include <stdlib.h>
#include <string.h>

#include "query.h"

int cdc__key_parts(const char *key, size_t len, cdc__keypart **parts, size_t *n)
{
    const unsigned char *p = (const unsigned char *)key, *end = p + len;
    size_t cap = 4;
    *n = 0;
    *parts = cdc__calloc(cap, sizeof **parts);
    while (p < end) {
        if (*n == cap) {
            cap *= 2;
            *parts = cdc__realloc(*parts, cap * sizeof **parts);
        }
        cdc__keypart *kp = &(*parts)[*n];
        memset(kp, 0, sizeof *kp);
        cdc__buf t = {0};
        int tag = cdc__key_read(&p, end, &kp->i, &t);
        if (tag == CDC__KEY_INT) {
            kp->type = CDC__KP_INT;
        } else if (tag == CDC__KEY_TEXT) {
            kp->type = CDC__KP_TEXT;
            kp->n = t.len;
            cdc__buf_putc(&t, 0);
            kp->s = t.p;
        } else {
            cdc__buf_free(&t);
            goto bad;
        }
        (*n)++;
    }
    return 0;
bad:
    cdc__keyparts_free(*parts, *n);
    *parts = NULL;
    *n = 0;
    return CDC_ECORRUPT;
}

void cdc__keyparts_free(cdc__keypart *parts, size_t n)
{
    if (!parts) return;
    for (size_t i = 0; i < n; i++) free(parts[i].s);
    free(parts);
}

int cdc__key_json_array(const char *key, size_t len, cdc__buf *out)
{
    cdc__buf_reset(out);
    if (cdc__key_to_json(key, len, NULL, 0, out)) return CDC_ECORRUPT;
    cdc__buf_putc(out, 0);
    return 0;
}

int cdc__key_single_int(const char *key, size_t len, int64_t *v)
{
    const unsigned char *k = (const unsigned char *)key;
    return len == 9 && k[0] == CDC__KEY_INT && cdc__key_read(&k, k + len, v, NULL) == CDC__KEY_INT;
}
