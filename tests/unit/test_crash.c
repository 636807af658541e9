/*
 * test_crash.c: a child process applies a stream in batches and is killed
 * with SIGKILL at a random moment; the parent reopens the replica, resumes
 * from the stored position, and checks that the result equals an
 * uninterrupted run.  Data and positions commit in one write, so nothing a
 * batch applied can be lost or be applied without its position.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"

#define TOPIC "crash.public.items"
#define NEV 30000

typedef struct stream {
    cdc_record_t *r;
    char **keys, **vals;
    size_t n;
} stream;

static void gen(stream *s)
{
    s->r = calloc(NEV + 600, sizeof *s->r);
    s->keys = calloc(NEV + 600, sizeof *s->keys);
    s->vals = calloc(NEV + 600, sizeof *s->vals);
    uint64_t x = 88172645463325252ULL;
    int alive[500] = {0};
    unsigned long long lsn = 1000;
    size_t n = 0;
    for (int k = 0; k < 500; k += 2) alive[k] = 1;
    for (int k = 0; k < 500; k++) {
        if (!alive[k]) continue;
        cr_assert(asprintf(&s->keys[n], "{\"id\":%d}", k) > 0);
        cr_assert(asprintf(&s->vals[n],
                           "{\"op\":\"r\",\"after\":{\"id\":%d,\"v\":%d},\"source\":{\"schema\":\"public\","
                           "\"table\":\"items\",\"snapshot\":\"%s\",\"lsn\":1000}}",
                           k, k, k == 498 ? "last" : "true") > 0);
        n++;
    }
    while (n < NEV) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int k = (int)(x % 500);
        lsn += 8;
        cr_assert(asprintf(&s->keys[n], "{\"id\":%d}", k) > 0);
        if (alive[k] && x % 5 == 0) {
            cr_assert(asprintf(&s->vals[n],
                               "{\"op\":\"d\",\"before\":{\"id\":%d},\"source\":{\"schema\":\"public\","
                               "\"table\":\"items\",\"lsn\":%llu}}", k, lsn) > 0);
            alive[k] = 0;
            n++;
            cr_assert(asprintf(&s->keys[n], "{\"id\":%d}", k) > 0);
            s->vals[n] = NULL; /* tombstone */
        } else {
            cr_assert(asprintf(&s->vals[n],
                               "{\"op\":\"%s\",\"after\":{\"id\":%d,\"v\":%llu},\"source\":{\"schema\":\"public\","
                               "\"table\":\"items\",\"lsn\":%llu}}", alive[k] ? "u" : "c", k, lsn, lsn) > 0);
            alive[k] = 1;
        }
        n++;
    }
    for (size_t i = 0; i < n; i++) s->r[i] = tu_rec(TOPIC, 0, (long)i, s->keys[i], s->vals[i]);
    s->n = n;
}

static void apply_from(cdc_store_t *st, const stream *s, size_t from, size_t bs)
{
    for (size_t i = from; i < s->n; i += bs) tu_apply(st, s->r + i, s->n - i < bs ? s->n - i : bs);
}

Test(crash, sigkill_mid_apply_then_resume_converges, .timeout = 300)
{
    stream s = {0};
    gen(&s);
    char *ref = tu_tmpdir();
    cdc_store_t *st = tu_open(ref);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    apply_from(st, &s, 0, 250);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long run_ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 + 1;
    char *expect = tu_export(st, "public.items", 1);
    cdc_store_close(st);
    srand((unsigned)time(NULL));
    int rounds = getenv("CDC_TEST_QUICK") ? 3 : 8;
    for (int round = 0; round < rounds; round++) {
        /* tmp, not tmpfs: the crash must go through the real file system */
        char *dir = strdup("/tmp/cdccrash.XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
            cdc_store_t *c = NULL;
            if (cdc_store_open(dir, NULL, &c, NULL)) _exit(2);
            for (size_t i = 0; i < s.n; i += 250)
                if (cdc_store_apply(c, s.r + i, s.n - i < 250 ? s.n - i : 250, NULL, NULL, NULL)) _exit(3);
            _exit(0);
        }
        /* somewhere within the time a whole run takes (plus the open) */
        long ms = 5 + rand() % run_ms;
        struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        cr_assert(!WIFEXITED(status) || WEXITSTATUS(status) == 0, "child failed with %d", WEXITSTATUS(status));
        st = tu_open(dir);
        int64_t pos;
        cr_assert_eq(cdc_store_position(st, TOPIC, 0, &pos, NULL), 0);
        /* positions advance a whole batch at a time, never half */
        cr_assert(pos == -1 || pos % 250 == 249 || pos == (int64_t)s.n - 1, "position %lld", (long long)pos);
        cr_log_info("round %d: killed at position %lld of %zu", round, (long long)pos, s.n);
        apply_from(st, &s, (size_t)(pos + 1), 250);
        char *got = tu_export(st, "public.items", 1);
        cr_assert_str_eq(got, expect, "round %d (killed at position %lld)", round, (long long)pos);
        free(got);
        cdc_store_close(st);
        tu_rmrf(dir);
        free(dir);
    }
    free(expect);
    tu_rmrf(ref);
    free(ref);
    for (size_t i = 0; i < s.n; i++) {
        free(s.keys[i]);
        free(s.vals[i]);
    }
    free(s.keys);
    free(s.vals);
    free(s.r);
}
