/*
 * ranges.c: range hashes of a table in the replica: one pass over a key
 * range in key order that gives, per sub-range, a row count and the sum of
 * the rows' hashes (digest.c), so that a comparison with the source only
 * moves (range, count, hash) triples over the network.  sql.c writes the
 * query that computes the same triples in PostgreSQL; reconcile.c compares
 * the two and bisects.
 *
 * The range hash is the sum of its rows' hashes modulo 2^64, and the range
 * count is its number of rows.  In SQL: sum(h) is numeric (exact), reduced
 * modulo 2^64.  Why a sum and not XOR of CRC32 as pt-table-checksum does:
 *  - a sum is order-independent, so neither side has to sort, yet it is
 *    still a function of which rows are present, each with its key;
 *  - values swapped between two rows (row 1 gets row 2's amount and the
 *    reverse) change both rows' encodings, each holding its own key, and md5
 *    is not linear, so the two new hashes are unrelated to the old ones and
 *    the sum changes except with probability about 2^-64.  CRC32 is affine
 *    over GF(2): for strings of equal length, crc(x) ^ crc(y) depends only on
 *    x ^ y.  Swap equal-length values a and b between rows k1|a and k2|b:
 *    (k1|a) ^ (k2|b) = (k1|b) ^ (k2|a), so XOR of the CRCs stays the same and
 *    the swap goes unseen.  XOR also cancels pairs: a row present twice
 *    contributes h ^ h = 0.  A sum counts it as 2h, and the count differs;
 *  - sums can be subtracted, so one pass over a range gives the hashes of all
 *    its sub-ranges as differences of prefix sums.
 *
 * Ranges.  Width ranges [k*W, (k+1)*W) for a single integer key (bucket
 * floor(k / W), also for negative keys); or ranges cut every `stride` rows of
 * the replica (quantiles): range i is [lower_i, lower_{i+1}).  In SQL the
 * bucket of a row is width_bucket(key, ARRAY[lower_1, ...]) for a single
 * key column, with COLLATE "C" for text so that the order is the replica's
 * bytewise order, and a binary tree of CASE with row comparisons for
 * composite keys (sql.c).
 */
#include <stdlib.h>
#include <string.h>

#include "query.h"

/* ---- Replica range scans ---- */

static cdc__rh *scan_new_range(cdc__scan *s)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->r = cdc__realloc(s->r, s->cap * sizeof *s->r);
    }
    cdc__rh *r = &s->r[s->n++];
    memset(r, 0, sizeof *r);
    return r;
}

size_t cdc__numeric_trim(const char *v, size_t n)
{
    if (!v || !memchr(v, '.', n)) return n;
    while (n > 0 && v[n - 1] == '0') n--;
    if (n > 0 && v[n - 1] == '.') n--;
    return n;
}

const char *cdc__cmp_text(int kind, const char *v, size_t *n, cdc__buf *scratch)
{
    if (!v) return v;
    if (kind == CDC__CMP_NUMERIC) {
        *n = cdc__numeric_trim(v, *n);
        return v;
    }
    if (kind != CDC__CMP_FLOAT4 || *n == 0 || *n >= 64) return v;
    char t[64], *end;
    memcpy(t, v, *n);
    t[*n] = 0;
    double d = strtod(t, &end);
    if (end != t + *n) return v; /* not a number: compared as it is */
    cdc__buf_reset(scratch);
    cdc__put_real(scratch, d, 1);
    *n = scratch->len;
    return scratch->p;
}

int cdc__scan_run(cdc_store_t *st, cdc__scan *s, cdc_error_t *err)
{
    size_t *tl = NULL; /* lengths (and tv values) as compared (cdc__cmp_text) */
    const char **tv = NULL;
    cdc__buf *tb = NULL;
    cdc__buf lj = {0}, hj = {0};
    cdc_iter_options_t io = {0};
    int rc = 0;
    if (s->lo && s->lo->len) {
        if ((rc = cdc__key_json_array(s->lo->p, s->lo->len, &lj))) goto bad_bound;
        io.lower_json = lj.p;
    }
    if (s->hi && s->hi->len) {
        if ((rc = cdc__key_json_array(s->hi->p, s->hi->len, &hj))) goto bad_bound;
        io.upper_json = hj.p;
    }
    cdc_iter_t *it;
    if ((rc = cdc_iter_open(st, s->table, &io, &it, err))) goto done;
    cdc_row_t row;
    cdc__buf scratch = {0};
    uint64_t in_range = 0;
    cdc__rh *cur = NULL;
    while ((rc = cdc_iter_next(it, &row, err)) == 1) {
        if (s->rows++ == 0) cdc__buf_put(&s->first_key, row.key, row.key_len);
        if (row.lsn > s->max_lsn) s->max_lsn = row.lsn;
        const size_t *lens = row.lens;
        const char *const *vals = row.values;
        if (s->trim && s->cols) {
            tl = cdc__realloc(tl, (row.ncols + 1) * sizeof *tl);
            tv = cdc__realloc(tv, (row.ncols + 1) * sizeof *tv);
            if (!tb) tb = cdc__calloc(s->ncols + 1, sizeof *tb);
            memcpy(tl, row.lens, row.ncols * sizeof *tl);
            memcpy(tv, row.values, row.ncols * sizeof *tv);
            for (size_t c = 0; c < s->ncols; c++)
                if (s->trim[c]) tv[s->cols[c]] = cdc__cmp_text(s->trim[c], tv[s->cols[c]], &tl[s->cols[c]], &tb[c]);
            lens = tl;
            vals = tv;
        }
        uint64_t h = cdc__row_hash(vals, lens, s->cols, s->cols ? s->ncols : row.ncols, s->algorithm, &scratch);
        if (s->width > 0) {
            int64_t k;
            if (!cdc__key_single_int(row.key, row.key_len, &k)) {
                rc = cdc__err(err, CDC_EINVAL,
                              "table %s: width ranges need a single integer key, and key %s is not one",
                              s->table, row.key_json);
                break;
            }
            int64_t b = cdc__floordiv(k, s->width);
            if (!cur || cur->bucket != b) {
                cur = scan_new_range(s);
                cur->bucket = b;
            }
        } else if (!cur || (s->stride && in_range >= s->stride)) {
            cur = scan_new_range(s);
            cur->bucket = (int64_t)s->n - 1;
            if (s->n == 1) {
                if (s->lo && s->lo->len) cdc__buf_put(&cur->lower, s->lo->p, s->lo->len);
            } else {
                cdc__buf_put(&cur->lower, row.key, row.key_len);
            }
            in_range = 0;
        }
        cur->rows++;
        cur->hash += h;
        in_range++;
    }
    if (rc == 0 || rc == 1) rc = 0;
    cdc__buf_free(&scratch);
    free(tl);
    free(tv);
    for (size_t c = 0; tb && c < s->ncols; c++) cdc__buf_free(&tb[c]);
    free(tb);
    cdc_iter_close(it);
    goto done;
bad_bound:
    rc = cdc__err(err, rc, "table %s: a range bound does not decode", s->table);
done:
    cdc__buf_free(&lj);
    cdc__buf_free(&hj);
    return rc;
}

void cdc__scan_free(cdc__scan *s)
{
    for (size_t i = 0; i < s->n; i++) cdc__buf_free(&s->r[i].lower);
    free(s->r);
    s->r = NULL;
    s->n = s->cap = 0;
    cdc__buf_free(&s->first_key);
}

/* ---- Range hashes (API) ---- */

int cdc_hash_ranges(cdc_store_t *st, const char *table, const cdc_hash_options_t *opts,
                    cdc_range_hash_t **out, size_t *n, cdc_error_t *err)
{
    cdc_hash_options_t defo = {0};
    if (!opts) opts = &defo;
    if (!st || !table || !out || !n) return cdc__err(err, CDC_EINVAL, "cdc_hash_ranges: bad arguments");
    *out = NULL;
    *n = 0;
    if (opts->range_width < 0) return cdc__err(err, CDC_EINVAL, "range width must be positive");
    cdc__scan s = {0};
    s.table = table;
    s.width = opts->range_width;
    s.algorithm = opts->algorithm;
    if (!s.width && opts->ranges > 1) {
        cdc_stats_t stats = {0};
        int rc = cdc_store_stats(st, table, &stats, err);
        if (rc) return rc;
        s.stride = (stats.rows_live + opts->ranges - 1) / opts->ranges;
        if (s.stride == 0) s.stride = 1;
    }
    int rc = cdc__scan_run(st, &s, err);
    if (rc) {
        cdc__scan_free(&s);
        return rc;
    }
    cdc_range_hash_t *r = cdc__calloc(s.n ? s.n : 1, sizeof *r);
    cdc__buf j = {0};
    for (size_t i = 0; i < s.n; i++) {
        r[i].index = s.r[i].bucket;
        r[i].rows = s.r[i].rows;
        r[i].hash = s.r[i].hash;
        if (s.width > 0) {
            /* [b*W, (b+1)*W), open where the bound does not fit in an int64. */
            __int128 lo = (__int128)s.r[i].bucket * s.width, hi = lo + s.width;
            if (lo >= INT64_MIN) {
                cdc__buf_reset(&j);
                cdc__buf_printf(&j, "[%lld]", (long long)lo);
                r[i].lower_json = cdc__strdup(j.p);
            }
            if (hi <= INT64_MAX) {
                cdc__buf_reset(&j);
                cdc__buf_printf(&j, "[%lld]", (long long)hi);
                r[i].upper_json = cdc__strdup(j.p);
            }
        } else {
            if (s.r[i].lower.len && !cdc__key_json_array(s.r[i].lower.p, s.r[i].lower.len, &j))
                r[i].lower_json = cdc__strdup(j.p);
            if (i + 1 < s.n && !cdc__key_json_array(s.r[i + 1].lower.p, s.r[i + 1].lower.len, &j))
                r[i].upper_json = cdc__strdup(j.p);
        }
    }
    cdc__buf_free(&j);
    *out = r;
    *n = s.n;
    cdc__scan_free(&s);
    return 0;
}

void cdc_range_hashes_free(cdc_range_hash_t *r, size_t n)
{
    if (!r) return;
    for (size_t i = 0; i < n; i++) {
        free(r[i].lower_json);
        free(r[i].upper_json);
    }
    free(r);
}
