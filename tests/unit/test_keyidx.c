/*
 * test_keyidx.c: the keys of a Delta data file kept beside it (query/keyidx.c):
 * every key written is found at its row index, every key not written is not
 * found, whatever the lengths, shared prefixes and counts around a restart;
 * a damaged or foreign file is refused at load.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../../query/query.h"

typedef struct key {
    char *p;
    size_t len;
} key;

static int cmp_key(const void *a, const void *b)
{
    const key *x = a, *y = b;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = m ? memcmp(x->p, y->p, m) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* n distinct keys, sorted: random bytes of random lengths (0 to maxlen) over a
 * small alphabet so that prefixes are shared, some runs of integer-like keys. */
static key *make_keys(size_t n, size_t maxlen, unsigned seed, size_t *out_n)
{
    srand(seed);
    key *k = calloc(n + 1, sizeof *k);
    for (size_t i = 0; i < n; i++) {
        size_t len = (size_t)rand() % (maxlen + 1);
        if (i % 3 == 0) len = 9;
        k[i].p = malloc(len + 1);
        k[i].len = len;
        for (size_t j = 0; j < len; j++) k[i].p[j] = (char)(i % 3 == 0 && j < 7 ? 0x20 * (j == 0) : "ab\0\xff"[rand() % 4]);
    }
    qsort(k, n, sizeof *k, cmp_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !cmp_key(&k[m - 1], &k[i])) {
            free(k[i].p);
            continue;
        }
        k[m++] = k[i];
    }
    *out_n = m;
    return k;
}

static void check_round_trip(size_t n, size_t maxlen, unsigned seed)
{
    char *dir = tu_tmpdir(), path[600];
    snprintf(path, sizeof path, "%s/f.keys", dir);
    size_t m;
    key *k = make_keys(n, maxlen, seed, &m);
    /* write every other key: the others must not be found */
    cdc__keyidx_w w = {0};
    size_t written = 0;
    for (size_t i = 0; i < m; i += 2, written++) cdc__keyidx_add(&w, k[i].p, k[i].len);
    cdc_error_t e = {0};
    cr_assert_eq(cdc__keyidx_write(&w, path, &e), 0, "%s", e.msg);
    cdc__keyidx_w_free(&w);
    cdc__keyidx x;
    cr_assert_eq(cdc__keyidx_load(path, &x, &e), 0, "%s", e.msg);
    cr_assert_eq(x.n, written);
    cdc__buf cur = {0};
    /* ascending (a refresh's order, which the lookup gallops along),
     * descending, and at random: every order finds the same rows */
    unsigned rng = seed * 2654435761u + 1;
    for (int order = 0; order < 3; order++)
        for (size_t j = 0; j < m; j++) {
            size_t i = order == 0 ? j : order == 1 ? m - 1 - j : (rng = rng * 1103515245u + 12345u) % m;
            int64_t got = cdc__keyidx_find(&x, k[i].p, k[i].len, &cur);
            if (i % 2 == 0)
                cr_assert_eq(got, (int64_t)(i / 2), "n %zu, order %d: key %zu found at %lld", m, order, i,
                             (long long)got);
            else
                cr_assert_eq(got, -1, "n %zu, order %d: key %zu not written, found at %lld", m, order, i,
                             (long long)got);
        }
    /* past the last key */
    char big[5000];
    memset(big, 0xff, sizeof big);
    cr_assert_eq(cdc__keyidx_find(&x, big, sizeof big, &cur), -1);
    cdc__buf_free(&cur);
    cdc__keyidx_free(&x);
    for (size_t i = 0; i < m; i++) free(k[i].p);
    free(k);
    tu_rmrf(dir);
    free(dir);
}

Test(keyidx, every_written_key_at_its_row_and_no_other)
{
    /* around the restart interval (16) and across many restarts */
    size_t counts[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 1000, 20000};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) check_round_trip(counts[i], 12, (unsigned)i + 1);
}

Test(keyidx, long_keys)
{
    check_round_trip(200, 6000, 7); /* keys past any fixed buffer */
}

Test(keyidx, damaged_or_foreign_files_are_refused)
{
    char *dir = tu_tmpdir(), path[600];
    snprintf(path, sizeof path, "%s/f.keys", dir);
    cdc__keyidx_w w = {0};
    char kb[9] = {0x20};
    for (int i = 0; i < 100; i++) {
        kb[8] = (char)i;
        cdc__keyidx_add(&w, kb, 9);
    }
    cdc_error_t e = {0};
    cr_assert_eq(cdc__keyidx_write(&w, path, &e), 0, "%s", e.msg);
    cdc__keyidx_w_free(&w);
    FILE *f = fopen(path, "rb");
    char buf[4096];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cdc__keyidx x;
    /* every truncation, and a flipped byte in the trailer */
    for (size_t cut = 0; cut < len; cut++) {
        f = fopen(path, "wb");
        fwrite(buf, 1, cut, f);
        fclose(f);
        cr_assert_eq(cdc__keyidx_load(path, &x, &e), CDC_ECORRUPT, "cut at %zu of %zu", cut, len);
        cr_assert(strstr(e.msg, "f.keys"), "the message names the file: %s", e.msg);
    }
    buf[len - 12] ^= 1; /* the restart count */
    f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    cr_assert_eq(cdc__keyidx_load(path, &x, &e), CDC_ECORRUPT);
    snprintf(path, sizeof path, "%s/missing.keys", dir);
    cr_assert_lt(cdc__keyidx_load(path, &x, &e), 0);
    tu_rmrf(dir);
    free(dir);
}
