/*
 * uring.c: the file writer behind exports, the only file that knows
 * liburing.  An export produces bytes much faster than one write(2) at a time
 * lets them reach the page cache when the writes wait for each other, so the
 * writer keeps several buffers in flight: while the kernel copies buffer i to
 * the file at its offset, the export fills buffer i + 1.  Each buffer is
 * written at an explicit offset, so completions may come in any order and the
 * file is still the bytes in order.
 *
 * Fallback: plain write(2), one buffer at a time, when io_uring_queue_init
 * fails (old kernel, seccomp, io_uring disabled by sysctl), when the
 * descriptor is not a regular file (pipes and terminals have no offsets, and
 * writes in flight together could interleave), when it is opened O_APPEND
 * (the kernel ignores offsets then), or when the environment sets
 * CDC_URING=0 (so that tests can exercise both paths).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <liburing.h>

#include "query.h"

#define DEFAULT_NBUFS 4
#define DEFAULT_BUFSIZE (1u << 20)

typedef struct wbuf {
    char *p;
    size_t len;
    off_t off;       /* file offset it is written at */
    int busy;        /* submitted, not completed */
} wbuf;

struct cdc__writer {
    int fd;
    int uring;               /* 1: ring in use */
    struct io_uring ring;
    wbuf *bufs;
    size_t nbufs, bufsize;
    size_t cur;              /* buffer being filled */
    size_t inflight;
    off_t off;               /* next file offset */
    uint64_t done;           /* bytes completed */
    int err;                 /* first error, -errno */
};

int cdc__write_all(int fd, const char *p, size_t n, off_t off)
{
    while (n) {
        ssize_t w = off >= 0 ? pwrite(fd, p, n, off) : write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (w == 0) return -EIO;
        p += w;
        n -= (size_t)w;
        if (off >= 0) off += w;
    }
    return 0;
}

/* Reaps one completion (waiting when wait); 0 when one was reaped or none
 * was ready, -errno on a ring failure. */
static int reap(cdc__writer *w, int wait)
{
    struct io_uring_cqe *cqe;
    int rc = wait ? io_uring_wait_cqe(&w->ring, &cqe) : io_uring_peek_cqe(&w->ring, &cqe);
    if (rc == -EAGAIN && !wait) return 0;
    if (rc == -EINTR) return 0;
    if (rc < 0) return rc;
    wbuf *b = &w->bufs[(size_t)io_uring_cqe_get_data64(cqe)];
    int res = cqe->res;
    io_uring_cqe_seen(&w->ring, cqe);
    b->busy = 0;
    w->inflight--;
    if (res < 0) {
        if (!w->err) w->err = res;
    } else {
        /* A short write: the rest goes synchronously at its own offset. */
        if ((size_t)res < b->len && !w->err) {
            int e = cdc__write_all(w->fd, b->p + res, b->len - (size_t)res, b->off + res);
            if (e) w->err = e;
        }
        if (!w->err) w->done += b->len;
    }
    b->len = 0;
    return 0;
}

int cdc__writer_open(int fd, size_t nbufs, size_t bufsize, cdc__writer **out)
{
    cdc__writer *w = cdc__calloc(1, sizeof *w);
    w->fd = fd;
    w->nbufs = nbufs ? nbufs : DEFAULT_NBUFS;
    w->bufsize = bufsize ? bufsize : DEFAULT_BUFSIZE;
    w->off = -1;
    struct stat sb;
    const char *env = getenv("CDC_URING");
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && flags >= 0 && !(flags & O_APPEND) &&
        !(env && !strcmp(env, "0"))) {
        off_t pos = lseek(fd, 0, SEEK_CUR);
        if (pos >= 0 && io_uring_queue_init((unsigned)w->nbufs, &w->ring, 0) == 0) {
            w->uring = 1;
            w->off = pos;
        }
    }
    if (!w->uring) w->nbufs = 1;
    w->bufs = cdc__calloc(w->nbufs, sizeof *w->bufs);
    for (size_t i = 0; i < w->nbufs; i++) w->bufs[i].p = cdc__malloc(w->bufsize);
    *out = w;
    return 0;
}

/* Hands the current buffer to the kernel (or writes it, without a ring). */
static void submit_current(cdc__writer *w)
{
    wbuf *b = &w->bufs[w->cur];
    if (!b->len || w->err) return;
    if (!w->uring) {
        int e = cdc__write_all(w->fd, b->p, b->len, -1);
        if (e) w->err = e;
        else w->done += b->len;
        b->len = 0;
        return;
    }
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    while (!sqe) { /* the ring is full: make room */
        int e = reap(w, 1);
        if (e) {
            w->err = e;
            return;
        }
        sqe = io_uring_get_sqe(&w->ring);
    }
    b->off = w->off;
    io_uring_prep_write(sqe, w->fd, b->p, (unsigned)b->len, (uint64_t)b->off);
    io_uring_sqe_set_data64(sqe, w->cur);
    int e = io_uring_submit(&w->ring);
    if (e < 0) {
        w->err = e;
        return;
    }
    b->busy = 1;
    w->inflight++;
    w->off += (off_t)b->len;
    /* The next buffer to fill: wait until it is free. */
    w->cur = (w->cur + 1) % w->nbufs;
    while (w->bufs[w->cur].busy && !w->err) {
        int r = reap(w, 1);
        if (r) w->err = r;
    }
}

int cdc__writer_put(cdc__writer *w, const void *data, size_t n)
{
    const char *p = data;
    while (n && !w->err) {
        wbuf *b = &w->bufs[w->cur];
        size_t take = w->bufsize - b->len < n ? w->bufsize - b->len : n;
        memcpy(b->p + b->len, p, take);
        b->len += take;
        p += take;
        n -= take;
        if (b->len == w->bufsize) submit_current(w);
    }
    return w->err;
}

int cdc__writer_flush(cdc__writer *w)
{
    submit_current(w);
    while (w->uring && w->inflight) {
        int r = reap(w, 1);
        if (r) {
            if (!w->err) w->err = r;
            break;
        }
    }
    /* Leave the descriptor's position after the data, as write(2) would. */
    if (w->uring && !w->err && lseek(w->fd, w->off, SEEK_SET) < 0) w->err = -errno;
    return w->err;
}

uint64_t cdc__writer_bytes(const cdc__writer *w) { return w->done; }

int cdc__writer_uses_uring(const cdc__writer *w) { return w->uring; }

int cdc__writer_close(cdc__writer *w)
{
    if (!w) return 0;
    int rc = w->bufs && w->bufs[w->nbufs - 1].p ? cdc__writer_flush(w) : w->err;
    if (w->uring) io_uring_queue_exit(&w->ring);
    for (size_t i = 0; w->bufs && i < w->nbufs; i++) free(w->bufs[i].p);
    free(w->bufs);
    free(w);
    return rc;
}
