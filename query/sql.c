/*
 * sql.c: the SQL text that computes inside PostgreSQL what digest.c and
 * ranges.c compute over the replica: each source column in the replica's
 * text form, the row encoding and its hash, the key ranges and their
 * buckets, and the whole range-hash query (cdc_hash_sql).  Generating SQL
 * is its own concern: quoting, PostgreSQL's argument limits and its
 * collations matter here and nowhere else.  The contract both sides follow
 * is written at the top of digest.c (row encoding, row hash) and ranges.c
 * (sums, ranges); reconcile.c sends this text through libpq.
 */
#include <stdlib.h>
#include <string.h>

#include "query.h"

/* ---- SQL text ---- */

void cdc__sql_ident(cdc__buf *b, const char *s)
{
    cdc__buf_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"') cdc__buf_putc(b, '"');
        cdc__buf_putc(b, *s);
    }
    cdc__buf_putc(b, '"');
}

void cdc__sql_literal(cdc__buf *b, const char *s, size_t n)
{
    cdc__buf_putc(b, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'') cdc__buf_putc(b, '\'');
        cdc__buf_putc(b, s[i]);
    }
    cdc__buf_putc(b, '\'');
}

void cdc__sql_table(cdc__buf *b, const char *table)
{
    const char *dot = strchr(table, '.');
    if (!dot) {
        cdc__sql_ident(b, table);
        return;
    }
    char *schema = cdc__strndup(table, (size_t)(dot - table));
    cdc__sql_ident(b, schema);
    free(schema);
    cdc__buf_putc(b, '.');
    cdc__sql_ident(b, dot + 1);
}

/* The precision of "timestamp(3) with time zone", 6 when not given. */
static int type_precision(const char *type)
{
    const char *p = strchr(type, '(');
    return p ? atoi(p + 1) : 6;
}

int cdc__sql_numeric(const char *type)
{
    return type && !strncmp(type, "numeric", 7) && (type[7] == 0 || type[7] == '(') && !strchr(type, '[');
}

void cdc__sql_coltext(cdc__buf *b, const cdc__srccol *c)
{
    const char *t = c->type;
    if (!t) {
        /* Type unknown: the type's output function, as COPY prints it. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " IS NOT NULL THEN format('%s', ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ") END");
    } else if (!strcmp(t, "boolean")) {
        /* boolean::text is 'true'; the output form (and Debezium's) is t/f. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " THEN 't' WHEN NOT ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " THEN 'f' END");
    } else if (!strncmp(t, "character(", 10) || !strcmp(t, "character") || !strcmp(t, "bpchar")) {
        /* char(n)::text drops the padding that the output form keeps. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " IS NOT NULL THEN format('%s', ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ") END");
    } else if (!strncmp(t, "interval", 8) && !strchr(t, '[')) {
        /* Debezium's MicroDuration as the replica stores it (ingest/decode.c,
         * put_interval), computed as Debezium 3.6 computes it: in doubles, a
         * month 30.4375 days, the seconds as the JDBC driver's PGInterval
         * gives them (whole seconds + microseconds / 1e6), truncated to
         * whole microseconds (MicroDuration.durationMicros); then printed as
         * an interval of that many microseconds.  An interval[] is compared
         * as text. */
        cdc__buf id = {0};
        cdc__sql_ident(&id, c->name);
        cdc__buf_putc(&id, 0);
        cdc__buf_printf(b,
                        "make_interval(secs => trunc(((((((extract(year FROM %1$s) * 12 + extract(month FROM %1$s))::float8 * 30.4375"
                        " + extract(day FROM %1$s)::float8) * 24 + extract(hour FROM %1$s)::float8) * 60"
                        " + extract(minute FROM %1$s)::float8) * 60 + (trunc(extract(second FROM %1$s))::float8"
                        " + ((extract(second FROM %1$s) - trunc(extract(second FROM %1$s))) * 1000000)::float8 / 1e6::float8)))"
                        " * 1e6::float8) / 1e6::float8)::text",
                        id.p);
        cdc__buf_free(&id);
    } else if (cdc__sql_numeric(t)) {
        /* compared without trailing fraction zeros (cdc__numeric_trim):
         * an unconstrained NUMERIC's scale is the value's own, and a
         * numeric(p,s) whose scale grew (a type change the replica
         * accepts) holds the old scale in rows untouched since */
        cdc__buf_puts(b, "trim_scale(");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ")::text");
    } else if (!strcmp(t, "money")) {
        /* Debezium's Decimal of money.fraction.digits (2) digits: "-12.34",
         * where money::text is "-$12.34" */
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, "::numeric::text");
    } else if (!strcmp(t, "inet") || !strcmp(t, "cidr")) {
        /* the output form, which Debezium sends: inet::text adds "/32" to a
         * host address that its output leaves without a mask */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " IS NOT NULL THEN format('%s', ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ") END");
    } else if (!strncmp(t, "time", 4) && strncmp(t, "timestamp", 9) && strstr(t, "with time zone") && !strchr(t, '[')) {
        /* Debezium's ZonedTime: in UTC, the fraction without trailing
         * zeros, "07:04:56.789Z" (README, what Debezium carries), which
         * time's output form gives once the value is in UTC */
        cdc__buf_puts(b, "((");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " AT TIME ZONE 'UTC')::time)::text || 'Z'");
    } else if (!strncmp(t, "timestamp", 9) && strstr(t, "with time zone[]") && !strstr(t, "[][]")) {
        /* an array of ZonedTimestamps as the replica stores it, each
         * element as the column above ("{NULL,1970-01-01T00:00:00.000000Z}");
         * the array's own text was always a difference */
        char et[64];
        snprintf(et, sizeof et, "%.*s", (int)(strstr(t, "[]") - t), t);
        cdc__srccol e = {.name = "e", .type = et};
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " IS NOT NULL THEN (SELECT '{' || coalesce(string_agg(CASE WHEN \"e\" IS NULL THEN 'NULL' ELSE ");
        cdc__sql_coltext(b, &e);
        cdc__buf_puts(b, " END, ',' ORDER BY \"o\"), '') || '}' FROM unnest(");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ") WITH ORDINALITY AS u(\"e\", \"o\")) END");
    } else if (!strncmp(t, "timestamp", 9) && strstr(t, "with time zone") && !strchr(t, '[')) {
        /* Debezium's ZonedTimestamp: ISO-8601 in UTC with the column's
         * fraction digits, "2026-01-16T08:30:00.000000Z".  Its year is
         * Java's ISO form: astronomical, so 44 BC is "-0043" and 1 BC
         * "0000", and past 9999 signed ("+10000"); to_char's YYYY prints
         * 44 BC as "0044", which compared equal to 44 AD.  'infinity' and
         * '-infinity' arrive as those words, and to_char gives NULL for
         * them, which compared equal to a NULL.  Years 1 to 9999 keep the
         * plain to_char. */
        int p = type_precision(t);
        cdc__buf_puts(b, "CASE WHEN isfinite(");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, ") THEN CASE WHEN ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " >= '0001-01-01 00:00:00+00' AND ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " < '10000-01-01 00:00:00+00' THEN to_char(");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " AT TIME ZONE 'UTC', 'YYYY') ELSE (SELECT CASE WHEN y = -1 THEN '0000' WHEN y < 0 THEN '-' || "
                         "lpad((-y - 1)::text, 4, '0') ELSE '+' || y::text END FROM (SELECT extract(year FROM ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " AT TIME ZONE 'UTC')::int AS y) AS year) END || to_char(");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, " AT TIME ZONE 'UTC', '-MM-DD\"T\"HH24:MI:SS')");
        if (p > 0 && p <= 6) {
            cdc__buf_puts(b, " || substr(to_char(");
            cdc__sql_ident(b, c->name);
            cdc__buf_printf(b, " AT TIME ZONE 'UTC', '.US'), 1, %d)", p + 1);
        }
        cdc__buf_puts(b, " || 'Z' ELSE ");
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, "::text END");
    } else {
        cdc__sql_ident(b, c->name);
        cdc__buf_puts(b, "::text");
    }
}

/* Appends f(e1, e2, ...) over the column expressions from..to, nesting
 * calls so that no call exceeds PostgreSQL's 100 arguments. */
static void sql_concat(cdc__buf *b, const cdc__srccol *cols, size_t n, int lengths)
{
    const size_t per = 50;
    if (n > per) cdc__buf_puts(b, lengths ? "concat_ws(',', " : "concat(");
    for (size_t g = 0; g < n; g += per) {
        if (g) cdc__buf_puts(b, ", ");
        cdc__buf_puts(b, lengths ? "concat_ws(',', " : "concat(");
        for (size_t i = g; i < n && i < g + per; i++) {
            if (i > g) cdc__buf_puts(b, ", ");
            if (lengths) cdc__buf_puts(b, "coalesce(octet_length(");
            cdc__sql_coltext(b, &cols[i]);
            if (lengths) cdc__buf_puts(b, "), -1)");
        }
        cdc__buf_puts(b, ")");
    }
    if (n > per) cdc__buf_puts(b, ")");
}

void cdc__sql_rowenc(cdc__buf *b, const cdc__srccol *cols, size_t n)
{
    if (!n) {
        cdc__buf_puts(b, "';'");
        return;
    }
    sql_concat(b, cols, n, 1);
    cdc__buf_puts(b, " || ';' || ");
    sql_concat(b, cols, n, 0);
}

void cdc__sql_rowhash(cdc__buf *b, const cdc__srccol *cols, size_t n, int algorithm)
{
    if (algorithm == CDC_HASH_LOOKUP3) {
        cdc__buf_puts(b, "hashtextextended(");
        cdc__sql_rowenc(b, cols, n);
        cdc__buf_puts(b, " COLLATE \"C\", 0)");
        return;
    }
    cdc__buf_puts(b, "('x' || substr(md5(");
    cdc__sql_rowenc(b, cols, n);
    cdc__buf_puts(b, "), 1, 16))::bit(64)::bigint");
}

void cdc__sql_keyexpr(cdc__buf *b, const cdc__srckey *k)
{
    if (k->expr) {
        cdc__buf_printf(b, "(%s)%s", k->expr, k->kind == CDC__KP_TEXT ? " COLLATE \"C\"" : "");
        return;
    }
    cdc__sql_ident(b, k->name);
    if (k->kind == CDC__KP_TEXT && !k->uuid) cdc__buf_puts(b, k->string ? " COLLATE \"C\"" : "::text COLLATE \"C\"");
}

void cdc__sql_keylit(cdc__buf *b, const cdc__srckey *k, const cdc__keypart *p)
{
    if (p->type == CDC__KP_INT) {
        cdc__buf_printf(b, "%lld", (long long)p->i);
        return;
    }
    cdc__sql_literal(b, p->s, p->n);
    if (k->uuid) cdc__buf_puts(b, "::uuid");
    else cdc__buf_puts(b, "::text");
}

/* (k1, k2) op (v1, v2), or k op v for a single column. */
static int sql_compare(cdc__buf *b, const cdc__srckey *keys, size_t nkey, const char *op,
                       const cdc__buf *key)
{
    cdc__keypart *parts;
    size_t np;
    if (cdc__key_parts(key->p, key->len, &parts, &np)) return CDC_ECORRUPT;
    if (np != nkey) {
        cdc__keyparts_free(parts, np);
        return CDC_EINVAL;
    }
    if (nkey > 1) cdc__buf_puts(b, "ROW(");
    for (size_t i = 0; i < nkey; i++) {
        if (i) cdc__buf_puts(b, ", ");
        cdc__sql_keyexpr(b, &keys[i]);
    }
    cdc__buf_printf(b, "%s %s ", nkey > 1 ? ")" : "", op);
    if (nkey > 1) cdc__buf_puts(b, "ROW(");
    for (size_t i = 0; i < nkey; i++) {
        if (i) cdc__buf_puts(b, ", ");
        cdc__sql_keylit(b, &keys[i], &parts[i]);
    }
    if (nkey > 1) cdc__buf_puts(b, ")");
    cdc__keyparts_free(parts, np);
    return 0;
}

int cdc__sql_range(cdc__buf *b, const cdc__srckey *keys, size_t nkey, const cdc__buf *lo,
                   const cdc__buf *hi)
{
    int any = 0, rc = 0;
    if (lo && lo->len) {
        if ((rc = sql_compare(b, keys, nkey, ">=", lo))) return rc;
        any = 1;
    }
    if (hi && hi->len) {
        if (any) cdc__buf_puts(b, " AND ");
        if ((rc = sql_compare(b, keys, nkey, "<", hi))) return rc;
        any = 1;
    }
    if (!any) cdc__buf_puts(b, "TRUE");
    return 0;
}

/* CASE tree: the index in [from, to] of the range holding the row, where
 * range i starts at bounds[i-1] (range 0 has no lower bound). */
static int sql_case_tree(cdc__buf *b, const cdc__srckey *keys, size_t nkey, const cdc__buf *bounds,
                         size_t from, size_t to)
{
    if (from == to) {
        cdc__buf_printf(b, "%zu", from);
        return 0;
    }
    size_t mid = from + (to - from + 1) / 2; /* ranges >= mid start at bounds[mid-1] */
    cdc__buf_puts(b, "CASE WHEN ");
    int rc = sql_compare(b, keys, nkey, "<", &bounds[mid - 1]);
    if (rc) return rc;
    cdc__buf_puts(b, " THEN ");
    if ((rc = sql_case_tree(b, keys, nkey, bounds, from, mid - 1))) return rc;
    cdc__buf_puts(b, " ELSE ");
    if ((rc = sql_case_tree(b, keys, nkey, bounds, mid, to))) return rc;
    cdc__buf_puts(b, " END");
    return 0;
}

int cdc__sql_bucket(cdc__buf *b, const cdc__srckey *keys, size_t nkey, int64_t width,
                    const cdc__buf *bounds, size_t nbounds)
{
    if (width > 0) {
        if (nkey != 1 || keys[0].kind != CDC__KP_INT) return CDC_EINVAL;
        /* floor(k / W) without overflow: -1 - (-(k + 1)) / W for negative k. */
        cdc__buf_puts(b, "CASE WHEN ");
        cdc__sql_keyexpr(b, &keys[0]);
        cdc__buf_printf(b, " >= 0 THEN ");
        cdc__sql_keyexpr(b, &keys[0]);
        cdc__buf_printf(b, "::bigint / %lld ELSE -1 - (-(", (long long)width);
        cdc__sql_keyexpr(b, &keys[0]);
        cdc__buf_printf(b, "::bigint + 1)) / %lld END", (long long)width);
        return 0;
    }
    if (nbounds == 0) {
        cdc__buf_puts(b, "0");
        return 0;
    }
    if (nkey > 1) return sql_case_tree(b, keys, nkey, bounds, 0, nbounds);
    cdc__buf_puts(b, "width_bucket(");
    cdc__sql_keyexpr(b, &keys[0]);
    cdc__buf_puts(b, ", ARRAY[");
    for (size_t i = 0; i < nbounds; i++) {
        cdc__keypart *parts;
        size_t np;
        if (cdc__key_parts(bounds[i].p, bounds[i].len, &parts, &np)) return CDC_ECORRUPT;
        if (np != 1) {
            cdc__keyparts_free(parts, np);
            return CDC_EINVAL;
        }
        if (i) cdc__buf_puts(b, ",");
        if (parts[0].type == CDC__KP_INT) cdc__buf_printf(b, "%lld", (long long)parts[0].i);
        else cdc__sql_literal(b, parts[0].s, parts[0].n);
        cdc__keyparts_free(parts, np);
    }
    cdc__buf_puts(b, keys[0].kind == CDC__KP_INT ? "]::bigint[])" : keys[0].uuid ? "]::uuid[])" : "]::text[])");
    return 0;
}

/* ---- The hash query for users (API) ---- */

/* The PostgreSQL type whose text cdc__sql_coltext turns into what Debezium
 * sends, for a replica column's type descriptor; NULL (the type's output
 * form) for the others. */
static const char *sql_type_of(const char *desc)
{
    if (!desc) return NULL;
    const char *slash = strchr(desc, '/');
    if (!slash) return NULL;
    if (!strcmp(slash + 1, "io.debezium.time.ZonedTimestamp")) return "timestamp with time zone";
    if (!strcmp(slash + 1, "io.debezium.time.MicroDuration")) return "interval";
    if (!strcmp(slash + 1, "io.debezium.time.ZonedTime")) return "time with time zone";
    return NULL;
}

int cdc_hash_sql(cdc_store_t *st, const char *table, const char *source_table,
                 const cdc_hash_options_t *opts, char **sql, cdc_error_t *err)
{
    cdc_hash_options_t defo = {0};
    if (!opts) opts = &defo;
    if (!st || !table || !sql) return cdc__err(err, CDC_EINVAL, "cdc_hash_sql: bad arguments");
    *sql = NULL;
    const char *const *names;
    size_t ncols;
    int rc = cdc_store_columns(st, table, &names, &ncols, err);
    if (rc) return rc;
    /* The key columns and their kinds come from the first row's key. */
    cdc_iter_t *it;
    cdc_row_t row;
    if ((rc = cdc_iter_open(st, table, NULL, &it, err))) return rc;
    rc = cdc_iter_next(it, &row, err);
    if (rc <= 0) {
        cdc_iter_close(it);
        return rc < 0 ? rc : cdc__err(err, CDC_ENOTFOUND, "table %s: no rows, so no key to range over", table);
    }
    cdc__keypart *parts = NULL;
    size_t np = 0;
    char **knames = NULL;
    cdc__srckey *keys = NULL;
    cdc__srccol *cols = cdc__calloc(ncols ? ncols : 1, sizeof *cols);
    cdc__buf b = {0}, *bounds = NULL;
    size_t nb = 0;
    cdc_range_hash_t *ranges = NULL;
    size_t nr = 0;
    if ((rc = cdc__key_parts(row.key, row.key_len, &parts, &np))) {
        rc = cdc__err(err, rc, "table %s: a stored key does not decode", table);
        goto done;
    }
    knames = cdc__calloc(np, sizeof *knames);
    if ((rc = cdc__json_object_keys(row.key_json, knames, np))) {
        rc = cdc__err(err, CDC_ECORRUPT, "table %s: key %s: cannot read the column names", table, row.key_json);
        goto done;
    }
    keys = cdc__calloc(np, sizeof *keys);
    for (size_t i = 0; i < np; i++) {
        keys[i].name = knames[i];
        keys[i].kind = parts[i].type;
        /* The source's type is not known here: a text key part is compared
         * as its text (::text COLLATE "C"), right for text, varchar, uuid
         * and numeric keys alike; COLLATE on the column itself was an
         * error for uuid and numeric ("collations are not supported by
         * type uuid"). */
        keys[i].string = 0;
    }
    for (size_t i = 0; i < ncols; i++) cols[i].name = names[i];
    /* Where the replica knows a column's Debezium type, the source's value
     * is formatted as Debezium sends it (cdc__sql_coltext, as reconcile
     * does): a timestamptz, interval or timetz printed by PostgreSQL hashed
     * differently from the replica's ZonedTimestamp, MicroDuration or
     * ZonedTime text of the same value. */
    const char *const *types = NULL;
    size_t ntypes = 0;
    if (cdc_store_column_types(st, table, &types, &ntypes, NULL) == 0)
        for (size_t i = 0; i < ncols && i < ntypes; i++) cols[i].type = sql_type_of(types[i]);
    if (!opts->range_width && opts->ranges > 1) {
        /* The bounds are the lower keys of the replica's quantile ranges. */
        if ((rc = cdc_hash_ranges(st, table, opts, &ranges, &nr, err))) goto done;
        bounds = cdc__calloc(nr ? nr : 1, sizeof *bounds);
        for (size_t i = 1; i < nr; i++) {
            if ((rc = cdc__key_from_json(ranges[i].lower_json, NULL, 0, &bounds[nb], err))) goto done;
            nb++;
        }
    }
    cdc__buf_puts(&b, "SELECT bucket AS range, rows,\n"
                      "       lpad(to_hex((CASE WHEN s >= 9223372036854775808 THEN s - 18446744073709551616 ELSE s END)::bigint), 16, '0') AS hash\n"
                      "FROM (SELECT bucket, count(*) AS rows,\n"
                      "             (sum(h) % 18446744073709551616 + 18446744073709551616) % 18446744073709551616 AS s\n"
                      "      FROM (SELECT ");
    if ((rc = cdc__sql_bucket(&b, keys, np, opts->range_width, bounds, nb))) {
        rc = cdc__err(err, rc, "table %s: %s", table,
                      opts->range_width ? "width ranges need a single integer key" : "bad range bounds");
        goto done;
    }
    cdc__buf_puts(&b, " AS bucket,\n                   ");
    cdc__sql_rowhash(&b, cols, ncols, opts->algorithm);
    cdc__buf_puts(&b, " AS h\n            FROM ");
    cdc__sql_table(&b, source_table ? source_table : table);
    cdc__buf_puts(&b, ") r\n      GROUP BY bucket) g\nORDER BY range;\n");
    cdc__buf_putc(&b, 0);
    *sql = b.p;
    b.p = NULL;
    rc = 0;
done:
    cdc_iter_close(it);
    cdc__keyparts_free(parts, np);
    if (knames)
        for (size_t i = 0; i < np; i++) free(knames[i]);
    free(knames);
    free(keys);
    free(cols);
    for (size_t i = 0; i < nb; i++) cdc__buf_free(&bounds[i]);
    free(bounds);
    cdc_range_hashes_free(ranges, nr);
    cdc__buf_free(&b);
    return rc;
}
