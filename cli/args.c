/*
 * args.c: reading the command's option values.  Every number an option
 * takes is read by cli_parse_uint(), so that `--batch-size abc`, `-5`,
 * `10x` or a value past the option's range is refused the same way, with
 * the option and the value named and exit status 2, instead of being taken
 * as 0 or as whatever atoi() and strtoul() make of it.  The commands that
 * take only --db and --table share cli_db_table_options().
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* ---- Numbers ---- */

int cli_parse_uint(const char *cmd, const char *flag, const char *value, uint64_t min, uint64_t max,
                   uint64_t *out)
{
    const char *p = value;
    uint64_t v = 0;
    int ok = *p != 0;
    for (; ok && *p; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) ok = 0;
        else v = v * 10 + d;
    }
    if (!ok || v < min || v > max) {
        /* The value is the user's text: escaped like any other. */
        size_t fl = strlen(flag);
        cli_printf_escaped(stderr, "cdcstore %s: %s%s%s: expected a whole number from %" PRIu64 " to %" PRIu64,
                           cmd, flag, fl && flag[fl - 1] == '=' ? "" : " ", value, min, max);
        return EXIT_USAGE;
    }
    *out = v;
    return 0;
}

int cli_parse_size(const char *cmd, const char *flag, const char *value, uint64_t *out)
{
    /* PostgreSQL's units, which are powers of 1024 (kB, MB...), and the IEC
     * names of the same; a bare number is bytes. */
    static const struct { const char *unit; unsigned shift; } units[] = {
        {"", 0},     {"B", 0},     {"k", 10},   {"kB", 10},  {"K", 10},   {"KB", 10},  {"KiB", 10},
        {"M", 20},   {"MB", 20},   {"MiB", 20}, {"G", 30},   {"GB", 30},  {"GiB", 30}, {"T", 40},
        {"TB", 40},  {"TiB", 40},
    };
    size_t digits = strspn(value, "0123456789");
    char num[32];
    uint64_t v;
    if (digits && digits < sizeof num) {
        memcpy(num, value, digits);
        num[digits] = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            if (strcmp(value + digits, units[i].unit)) continue;
            if (cli_parse_uint(cmd, flag, num, 0, UINT64_MAX >> 1 >> units[i].shift, &v)) return EXIT_USAGE;
            *out = v << units[i].shift;
            return 0;
        }
    }
    cli_printf_escaped(stderr, "cdcstore %s: %s %s: expected a size: a whole number of bytes, or followed by kB, MB, "
                               "GB or TB (powers of 1024, as PostgreSQL's)", cmd, flag, value);
    return EXIT_USAGE;
}

/* n hexadecimal digits (1 to 8) at s, up to end; -1 when not. */
static int64_t hex32(const char *s, const char *end)
{
    if (end <= s || end - s > 8) return -1;
    int64_t v = 0;
    for (; s < end; s++) {
        int c = *s, d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                     : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

int cli_parse_lsn(const char *cmd, const char *flag, const char *value, uint64_t *out)
{
    size_t len = strlen(value), digits = strspn(value, "0123456789");
    if (len && digits == len) return cli_parse_uint(cmd, flag, value, 0, UINT64_MAX, out);
    const char *slash = strchr(value, '/');
    int64_t hi = slash ? hex32(value, slash) : -1, lo = slash ? hex32(slash + 1, value + len) : -1;
    if (hi < 0 || lo < 0) {
        cli_printf_escaped(stderr, "cdcstore %s: %s %s: expected an LSN: a whole number or X/Y (hexadecimal)", cmd,
                           flag, value);
        return EXIT_USAGE;
    }
    *out = (uint64_t)hi << 32 | (uint64_t)lo;
    return 0;
}

int cli_parse_duration(const char *cmd, const char *flag, const char *value, int64_t *ms)
{
    static const struct {
        char unit;
        int64_t ms;
    } units[] = {{'s', 1000}, {'m', 60 * 1000}, {'h', 3600 * 1000}, {'d', 86400 * 1000}};
    size_t len = strlen(value), digits = strspn(value, "0123456789");
    int64_t per = 0;
    for (size_t i = 0; len == digits + 1 && i < sizeof units / sizeof *units; i++)
        if (value[digits] == units[i].unit) per = units[i].ms;
    uint64_t n = 0;
    int over = 0;
    for (size_t i = 0; i < digits && !over; i++) {
        n = n * 10 + (uint64_t)(value[i] - '0');
        over = n > (uint64_t)INT64_MAX / 86400000; /* no duration beyond 2^63 ms */
    }
    if (!digits || !per || over || n == 0) {
        cli_printf_escaped(stderr,
                           "cdcstore %s: %s %s: expected a duration: a whole number above 0 followed by s, m, h "
                           "or d (30m, 12h, 7d)",
                           cmd, flag, value);
        return EXIT_USAGE;
    }
    *ms = (int64_t)n * per;
    return 0;
}

/* ---- --db and --table ---- */

int cli_db_table_options(int argc, char **argv, const char *usage, int nargs, const char **db,
                         const char **table)
{
    static const struct option lo[] = {{"db", 1, 0, 'd'}, {"table", 1, 0, 't'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "d:t:h", lo, NULL)) != -1) {
        if (c == 'd') *db = optarg;
        else if (c == 't' && table) *table = optarg;
        else if (c == 'h') {
            fputs(usage, stdout);
            return EXIT_OK;
        } else {
            if (c == 't') fprintf(stderr, "cdcstore %s: no --table option\n", argv[0]);
            fputs(usage, stderr);
            return EXIT_USAGE;
        }
    }
    if (!*db || (table && !*table) || argc - optind != nargs) {
        if (!*db) fprintf(stderr, "cdcstore %s: --db DIR is required\n", argv[0]);
        else if (table && !*table) fprintf(stderr, "cdcstore %s: --table SCHEMA.TABLE is required\n", argv[0]);
        else if (argc - optind > nargs) fprintf(stderr, "cdcstore %s: unexpected argument: %s\n", argv[0], argv[optind + nargs]);
        else fprintf(stderr, "cdcstore %s: an argument is missing\n", argv[0]);
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    return -1;
}
