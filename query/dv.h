/*
 * dv.h: Delta Lake deletion vectors (dv.c): the row indexes of a data file
 * that a refresh marks deleted instead of rewriting the file (the
 * "deletionVectors" reader and writer table feature: protocol reader 3,
 * writer 7).  Self-contained: the bitmap codec (Delta's RoaringBitmapArray,
 * "portable" 64-bit serialization), the deletion vector file (version byte,
 * then size, bitmap and CRC-32 per vector), Z85 and the descriptor that an
 * add action carries.  Not API (cdc__ prefix).  Nothing here keeps state
 * between calls except a cdc__dv_file, which one thread uses at a time.
 *
 * Errors are CDC_EINVAL for a bad argument (rows not ascending, a row past
 * what Delta can hold), CDC_ECORRUPT for bytes that do not decode (err says
 * what and at which byte), -errno for the file system.
 */
#ifndef CDC_DV_H
#define CDC_DV_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* The magic number in front of every serialized vector (Delta's
 * "portable" RoaringBitmapArray format), little-endian. */
#define CDC__DV_MAGIC 1681511377u

/* The largest row index Delta's reference reader (Spark's
 * RoaringBitmapArray) can hold: high 32 bits 2^31 - 2. */
#define CDC__DV_MAX_ROW ((UINT64_C(0x7ffffffe) << 32) | UINT64_C(0xffffffff))

/* ---- Bitmap ---- */

/* Appends to out the serialized vector of the n row indexes rows[] (sorted
 * ascending, unique, each <= CDC__DV_MAX_ROW): the magic, the number of
 * 32-bit buckets (8 bytes), then per bucket its high 32 bits (4 bytes) and
 * a 32-bit Roaring bitmap in the standard format with array containers (up
 * to 4,096 values) and bitmap containers, no run containers.  All integers
 * little-endian.  Only buckets that hold rows are written: for rows below
 * 2^32 the bytes equal Spark's when Spark did not run-length encode (Spark
 * also writes empty buckets below the last one; dv.c says why we do not).
 * n may be 0 (12 bytes: magic and a count of 0).  On an
 * error nothing is appended.  Errors: CDC_EINVAL (rows not ascending or a
 * row too large; err names its index). */
int cdc__dv_serialize(const uint64_t *rows, size_t n, cdc__buf *out, cdc_error_t *err);

/* Decodes the serialized vector p[0..len) into *rows (malloc'd, *n rows,
 * sorted ascending; NULL when *n is 0).  Accepts array, bitmap and run
 * containers (cookies 12346 and 12347), empty buckets and buckets left out;
 * refuses anything else, including trailing bytes, and never reads past
 * len.  nrows, when not 0, is the data file's row count (its numRecords):
 * a row at or past it is refused before anything is allocated.  Ownership:
 * the caller frees *rows with free().  Errors: CDC_ECORRUPT (err says what
 * and at which byte); *rows and *n untouched then. */
int cdc__dv_parse(const void *p, size_t len, uint64_t nrows, uint64_t **rows, size_t *n, cdc_error_t *err);

/* CRC-32 (the zlib/IEEE polynomial, as java.util.zip.CRC32) of p[0..n),
 * continuing crc (0 to start). */
uint32_t cdc__dv_crc32(uint32_t crc, const void *p, size_t n);

/* ---- Z85 ---- */

/* Appends the Z85 (ZeroMQ RFC 32) text of p[0..n): 5 characters for every
 * 4 bytes, big-endian.  When n is not a multiple of 4 the bytes are padded
 * with zeros first, as Delta does for inline vectors (the reader cuts them
 * off by sizeInBytes).  The text needs no JSON escaping. */
void cdc__dv_z85_encode(const void *p, size_t n, cdc__buf *out);

/* Appends the bytes of the Z85 text s[0..len) (len a multiple of 5; 4
 * bytes per 5 characters).  Errors: CDC_ECORRUPT for a length not a
 * multiple of 5, a character outside the alphabet or a group above 2^32-1;
 * nothing appended then. */
int cdc__dv_z85_decode(const char *s, size_t len, cdc__buf *out, cdc_error_t *err);

/* ---- Descriptor ---- */

/* A deletion vector stored in a file (storageType "u"). */
typedef struct cdc__dv_desc {
    char path[64];        /* pathOrInlineDv: the random prefix (none from us) and the Z85
                             text of the file's UUID (20 characters); NUL-terminated */
    uint64_t offset;      /* of the vector's size field in the file: 1 for the first */
    uint32_t size;        /* sizeInBytes: the serialized vector, without size and CRC */
    uint64_t cardinality; /* rows it deletes */
} cdc__dv_desc;

/* Appends the descriptor as the JSON object of an add's (or remove's)
 * "deletionVector": {"storageType":"u","pathOrInlineDv":..,"offset":..,
 * "sizeInBytes":..,"cardinality":..}. */
void cdc__dv_desc_json(const cdc__dv_desc *d, cdc__buf *out);

/* Appends the file name, relative to the table's directory, of the vector
 * file a "u" descriptor's pathOrInlineDv s[0..len) names:
 * "[prefix/]deletion_vector_<uuid>.bin", the UUID in lowercase 8-4-4-4-12
 * hex; out is NUL-terminated past its len.  Errors: CDC_ECORRUPT when s is
 * shorter than 20 characters, the last 20 are not Z85 or the prefix is not
 * alphanumeric (nothing appended then). */
int cdc__dv_path(const char *s, size_t len, cdc__buf *out, cdc_error_t *err);

/* The lowercase 8-4-4-4-12 text of a 16-byte UUID, NUL-terminated. */
void cdc__dv_uuid_text(const unsigned char uuid[16], char out[37]);

/* ---- Inline vectors (storageType "i") ---- */

/* Appends the whole inline descriptor of rows[0..n) (as cdc__dv_serialize
 * takes them): {"storageType":"i","pathOrInlineDv":"<Z85>","sizeInBytes":..,
 * "cardinality":..}.  Meant for small vectors: the text is 5/4 of the bytes.
 * Errors: cdc__dv_serialize's; nothing appended then. */
int cdc__dv_inline_json(const uint64_t *rows, size_t n, cdc__buf *out, cdc_error_t *err);

/* Decodes an inline vector: the Z85 text s[0..len) of size (sizeInBytes)
 * bytes, padded to a multiple of 4.  nrows, rows, n as cdc__dv_parse.
 * Errors: CDC_ECORRUPT. */
int cdc__dv_inline_parse(const char *s, size_t len, uint32_t size, uint64_t nrows, uint64_t **rows, size_t *n,
                         cdc_error_t *err);

/* ---- Files ---- */

/* A deletion vector file being written. */
typedef struct cdc__dv_file cdc__dv_file;

/* Creates DIR/deletion_vector_<random uuid>.bin (never an existing file)
 * holding the format's version byte (1).  Ownership: free *out with
 * cdc__dv_file_free.  Errors: -errno (err names the file). */
int cdc__dv_file_create(const char *dir, cdc__dv_file **out, cdc_error_t *err);

/* Appends one vector, rows[0..n) as cdc__dv_serialize takes them: its size
 * (4 bytes big-endian), the serialized bytes and their CRC-32 (4 bytes
 * big-endian), and fills *d with its descriptor (offset: where its size
 * field starts, as Spark counts; size: the serialized bytes alone).  n may
 * be 0, but a Delta writer gives no vector to a file without deleted rows.
 * Errors: cdc__dv_serialize's, -errno (then the file is unusable: only
 * cdc__dv_file_free). */
int cdc__dv_file_add(cdc__dv_file *f, const uint64_t *rows, size_t n, cdc__dv_desc *d, cdc_error_t *err);

/* Ends the file: fsync(2) and close(2).  The directory's entry is the
 * caller's to fsync, with the data files' (delta.c syncs the table
 * directory before the commit).  Errors: -errno. */
int cdc__dv_file_close(cdc__dv_file *f, cdc_error_t *err);

/* The file's name relative to its directory (valid until the free). */
const char *cdc__dv_file_name(const cdc__dv_file *f);

/* Frees f (NULL allowed).  A file not ended by a successful
 * cdc__dv_file_close is closed and removed: no commit can refer to it. */
void cdc__dv_file_free(cdc__dv_file *f);

/* Reads the vector at offset of the vector file path: checks the file's
 * version byte, that the size field there equals size (sizeInBytes) and
 * the CRC-32 after the bytes, then decodes them as cdc__dv_parse (nrows,
 * rows, n as there).  Errors: -errno; CDC_ECORRUPT for a short file, a
 * size, version or checksum that differs, bytes that do not decode (err
 * names the file and the offset). */
int cdc__dv_read_file(const char *path, uint64_t offset, uint32_t size, uint64_t nrows, uint64_t **rows,
                      size_t *n, cdc_error_t *err);

/* Reads the vector a "u" descriptor names, in the table at dir
 * (cdc__dv_path, cdc__dv_read_file), and checks that it holds
 * d->cardinality rows.  Errors: as cdc__dv_read_file; CDC_ECORRUPT for a
 * cardinality that differs. */
int cdc__dv_read(const char *dir, const cdc__dv_desc *d, uint64_t nrows, uint64_t **rows, size_t *n,
                 cdc_error_t *err);

#endif
