/* cw_hdr.h: an HdrHistogram of latencies in nanoseconds, fixed at lowest 1, highest
 * 3,600,000,000,000 (one hour) and 3 significant digits, as cutaway's load summary fixes them
 * (docs/load-format.md); header-only, every name prefixed cw_hdr_.
 *
 * The bucket layout, the percentile rule, the mean and standard deviation, and the V2
 * compressed encoding are HdrHistogram's own (Java's AbstractHistogram and
 * AbstractHistogram.encodeIntoCompressedByteBuffer; https://github.com/HdrHistogram), so that a
 * histogram written here decodes in any HdrHistogram implementation, and in
 * cutaway.probes.load.hdr, to the same counts. Recording is one add to a fixed array: no
 * allocation, bounded memory whatever the number of requests. Not thread-safe: one histogram
 * per thread, merged with cw_hdr_add. */

#ifndef CW_HDR_H
#define CW_HDR_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CW_HDR_SUB_BUCKET_HALF_MAGNITUDE 10
#define CW_HDR_SUB_BUCKET_HALF_COUNT 1024
#define CW_HDR_SUB_BUCKET_MASK 2047
#define CW_HDR_BUCKET_COUNT 32
#define CW_HDR_COUNTS_LENGTH ((CW_HDR_BUCKET_COUNT + 1) * CW_HDR_SUB_BUCKET_HALF_COUNT)
#define CW_HDR_LEADING_ZERO_BASE 53 /* 64 - unit magnitude (0) - sub-bucket magnitude (11) */
#define CW_HDR_LOWEST 1
#define CW_HDR_HIGHEST 3600000000000LL
#define CW_HDR_DIGITS 3
#define CW_HDR_ENCODING_COOKIE 0x1c849313 /* V2 | word size 1 << 4 */
#define CW_HDR_COMPRESSED_COOKIE 0x1c849314
#define CW_HDR_HEADER_SIZE 40

typedef struct {
    int64_t total;
    int64_t counts[CW_HDR_COUNTS_LENGTH];
} cw_hdr;

static inline int cw_hdr_bucket_of(int64_t value) {
    return CW_HDR_LEADING_ZERO_BASE - __builtin_clzll((uint64_t)value | CW_HDR_SUB_BUCKET_MASK);
}

/* The counts index of a value; values outside [0, highest] are clamped into it. */
static inline int cw_hdr_index_of(int64_t value) {
    if (value < 0) value = 0;
    if (value > CW_HDR_HIGHEST) value = CW_HDR_HIGHEST;
    int bucket = cw_hdr_bucket_of(value);
    int sub_bucket = (int)(value >> bucket);
    return ((bucket + 1) << CW_HDR_SUB_BUCKET_HALF_MAGNITUDE) + sub_bucket -
           CW_HDR_SUB_BUCKET_HALF_COUNT;
}

/* The lowest value that lands at index (HdrHistogram's valueFromIndex). */
static inline int64_t cw_hdr_value_at_index(int index) {
    int bucket = (index >> CW_HDR_SUB_BUCKET_HALF_MAGNITUDE) - 1;
    int64_t sub_bucket = (index & (CW_HDR_SUB_BUCKET_HALF_COUNT - 1)) + CW_HDR_SUB_BUCKET_HALF_COUNT;
    if (bucket < 0) {
        sub_bucket -= CW_HDR_SUB_BUCKET_HALF_COUNT;
        bucket = 0;
    }
    return sub_bucket << bucket;
}

static inline int64_t cw_hdr_range_size(int64_t value) {
    return (int64_t)1 << cw_hdr_bucket_of(value);
}

static inline int64_t cw_hdr_highest_equivalent(int64_t value) {
    int64_t lowest = cw_hdr_value_at_index(cw_hdr_index_of(value));
    return lowest + cw_hdr_range_size(value) - 1;
}

static inline int64_t cw_hdr_median_equivalent(int64_t value) {
    int64_t lowest = cw_hdr_value_at_index(cw_hdr_index_of(value));
    return lowest + (cw_hdr_range_size(value) >> 1);
}

static inline void cw_hdr_record(cw_hdr *h, int64_t value) {
    h->counts[cw_hdr_index_of(value)]++;
    h->total++;
}

static inline void cw_hdr_reset(cw_hdr *h) { memset(h, 0, sizeof *h); }

/* into += from, exactly. */
static inline void cw_hdr_add(cw_hdr *into, const cw_hdr *from) {
    if (from->total == 0) return;
    for (int i = 0; i < CW_HDR_COUNTS_LENGTH; i++) into->counts[i] += from->counts[i];
    into->total += from->total;
}

/* HdrHistogram's getValueAtPercentile: the highest equivalent value of the first index where
 * the running count reaches ceil(percentile / 100 * total) (at least 1); 0 when empty. */
static inline int64_t cw_hdr_percentile(const cw_hdr *h, double percentile) {
    if (h->total == 0) return 0;
    if (percentile > 100.0) percentile = 100.0;
    if (percentile < 0.0) percentile = 0.0;
    int64_t wanted = (int64_t)ceil(percentile / 100.0 * (double)h->total);
    if (wanted < 1) wanted = 1;
    int64_t running = 0;
    for (int i = 0; i < CW_HDR_COUNTS_LENGTH; i++) {
        running += h->counts[i];
        if (running >= wanted) {
            int64_t value = cw_hdr_value_at_index(i);
            return percentile == 0.0 ? value : cw_hdr_highest_equivalent(value);
        }
    }
    return 0;
}

static inline int64_t cw_hdr_min(const cw_hdr *h) {
    for (int i = 0; i < CW_HDR_COUNTS_LENGTH; i++)
        if (h->counts[i]) return cw_hdr_value_at_index(i);
    return 0;
}

static inline int64_t cw_hdr_max(const cw_hdr *h) {
    for (int i = CW_HDR_COUNTS_LENGTH - 1; i >= 0; i--)
        if (h->counts[i]) return cw_hdr_highest_equivalent(cw_hdr_value_at_index(i));
    return 0;
}

/* Mean and population standard deviation over median equivalent values, as HdrHistogram's
 * getMean and getStdDeviation compute them. */
static inline void cw_hdr_moments(const cw_hdr *h, double *mean, double *stdev) {
    *mean = *stdev = 0.0;
    if (h->total == 0) return;
    double sum = 0.0;
    for (int i = 0; i < CW_HDR_COUNTS_LENGTH; i++)
        if (h->counts[i])
            sum += (double)h->counts[i] * (double)cw_hdr_median_equivalent(cw_hdr_value_at_index(i));
    *mean = sum / (double)h->total;
    double squares = 0.0;
    for (int i = 0; i < CW_HDR_COUNTS_LENGTH; i++)
        if (h->counts[i]) {
            double d = (double)cw_hdr_median_equivalent(cw_hdr_value_at_index(i)) - *mean;
            squares += d * d * (double)h->counts[i];
        }
    *stdev = sqrt(squares / (double)h->total);
}

static inline size_t cw_hdr_put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
    return 4;
}

static inline size_t cw_hdr_put_be64(unsigned char *p, uint64_t v) {
    cw_hdr_put_be32(p, (uint32_t)(v >> 32));
    cw_hdr_put_be32(p + 4, (uint32_t)v);
    return 8;
}

/* HdrHistogram's ZigZag LEB128-64b9B: 7 bits a byte for 8 bytes, then a whole ninth byte. */
static inline size_t cw_hdr_put_zigzag(unsigned char *p, int64_t signed_value) {
    uint64_t value = ((uint64_t)signed_value << 1) ^ (uint64_t)(signed_value >> 63);
    size_t n = 0;
    while (n < 8) {
        if ((value >> 7) == 0) {
            p[n++] = (unsigned char)value;
            return n;
        }
        p[n++] = (unsigned char)((value & 0x7f) | 0x80);
        value >>= 7;
    }
    p[n++] = (unsigned char)value;
    return n;
}

static const char cw_hdr_base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static inline void cw_hdr_base64(const unsigned char *in, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t chunk = (uint32_t)in[i] << 16;
        if (i + 1 < n) chunk |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n) chunk |= in[i + 2];
        out[o++] = cw_hdr_base64_alphabet[(chunk >> 18) & 63];
        out[o++] = cw_hdr_base64_alphabet[(chunk >> 12) & 63];
        out[o++] = i + 1 < n ? cw_hdr_base64_alphabet[(chunk >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? cw_hdr_base64_alphabet[chunk & 63] : '=';
    }
    out[o] = '\0';
}

/* The V2 compressed encoding, base64: a malloc'ed NUL-terminated string the caller frees, or
 * NULL when memory runs out. Counts are written up to the last non-zero one, a run of zeros
 * as its negated length, as encodeIntoByteBuffer writes them. */
static inline char *cw_hdr_encode(const cw_hdr *h) {
    int last = -1;
    for (int i = CW_HDR_COUNTS_LENGTH - 1; i >= 0; i--)
        if (h->counts[i]) {
            last = i;
            break;
        }
    size_t raw_capacity = CW_HDR_HEADER_SIZE + (size_t)(last + 1) * 9;
    unsigned char *raw = malloc(raw_capacity);
    if (!raw) return NULL;
    size_t n = CW_HDR_HEADER_SIZE;
    for (int i = 0; i <= last;) {
        int64_t count = h->counts[i++];
        int64_t zeros = 0;
        if (count == 0) {
            zeros = 1;
            while (i <= last && h->counts[i] == 0) zeros++, i++;
        }
        n += cw_hdr_put_zigzag(raw + n, zeros > 1 ? -zeros : count);
    }
    unsigned char *p = raw;
    p += cw_hdr_put_be32(p, CW_HDR_ENCODING_COOKIE);
    p += cw_hdr_put_be32(p, (uint32_t)(n - CW_HDR_HEADER_SIZE));
    p += cw_hdr_put_be32(p, 0); /* normalizing index offset */
    p += cw_hdr_put_be32(p, CW_HDR_DIGITS);
    p += cw_hdr_put_be64(p, CW_HDR_LOWEST);
    p += cw_hdr_put_be64(p, (uint64_t)CW_HDR_HIGHEST);
    double ratio = 1.0;
    uint64_t ratio_bits;
    memcpy(&ratio_bits, &ratio, sizeof ratio_bits);
    cw_hdr_put_be64(p, ratio_bits);

    uLongf compressed_size = compressBound((uLong)n);
    unsigned char *packed = malloc(8 + compressed_size);
    if (!packed) {
        free(raw);
        return NULL;
    }
    int status = compress2(packed + 8, &compressed_size, raw, (uLong)n, Z_DEFAULT_COMPRESSION);
    free(raw);
    if (status != Z_OK) {
        free(packed);
        return NULL;
    }
    cw_hdr_put_be32(packed, CW_HDR_COMPRESSED_COOKIE);
    cw_hdr_put_be32(packed + 4, (uint32_t)compressed_size);
    size_t total = 8 + compressed_size;
    char *text = malloc((total + 2) / 3 * 4 + 1);
    if (text) cw_hdr_base64(packed, total, text);
    free(packed);
    return text;
}

#endif
