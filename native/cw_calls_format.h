/*
 * cw_calls_format.h: the file format written by cutaway's call interposer (native/cw_calls.c,
 * built as libcwcalls.so and loaded with LD_PRELOAD) and read by
 * src/cutaway/probes/calls_format.py, plus the catalog of functions it can time.
 *
 * Files: every process that loads the library with a selection (CUTAWAY_CALLS) and a
 * directory (CUTAWAY_CALLS_DIR) writes its own file DIR/calls.<pid>.<n>.bin, n = 0, 1, ...:
 * the first name not taken (an exec'ed image keeps its pid and gets the next n). A process
 * started by exec creates its file when the library loads, so a file with no records means
 * "ran, made no timed call". A fork child creates its file at its first timed call.
 *
 * Byte order and layout: the writer and the reader run on the same machine, so every integer
 * is in native byte order (the test vectors are little-endian) with a fixed width; the structs
 * below have no padding (checked by _Static_assert, mirrored by numpy dtypes in the reader).
 *
 *     offset 0            struct cw_calls_header (96 bytes), then the executable's path
 *                         (readlink of /proc/self/exe, NUL-terminated, truncated to fit),
 *                         then zeros up to header_bytes
 *     offset header_bytes records, struct cw_calls_record or cw_calls_record_cpu (record_bytes
 *                         each), back to back
 *
 * Records: one per completed timed call, written after the call returns. Each thread fills
 * its own chunks of the file (128, 2048, then 32768 records each), so records are grouped by
 * thread, not in time order: overall_index gives the order in which calls started. A record
 * whose function_id is 0 is unused space (the unused end of a chunk, or a file left at its
 * preallocated size by _exit, exec, a crash or SIGKILL); the writer stores function_id last
 * (release order), so a record cut short by a kill reads as unused. At a normal exit of a
 * single-threaded process, the file is truncated after its last record. A file whose length
 * is not header_bytes plus a whole number of records was cut short (e.g. copied while being
 * written): readers report the extra bytes, they are not an error.
 *
 * Clock: start and duration are in ticks of the record clock named by the header: either
 * CLOCK_MONOTONIC in nanoseconds (ticks_per_second 1e9), or the CPU's time-stamp counter
 * (x86 RDTSC, when the environment gives its rate in CUTAWAY_CALLS_TSC_HZ: the calls probe
 * measures it once and passes it only where the kernel itself uses the TSC as its clock). The
 * header pairs created_ticks with created_ns, so a start converts to CLOCK_MONOTONIC as
 * created_ns + (start - created_ticks) * 1e9 / ticks_per_second.
 *
 * Versions: a reader accepts only the versions it knows. Adding a catalog function at the end
 * or giving meaning to a reserved field (0 in older files) bumps the version; ids never change.
 *
 * Version history:
 *   1  2026-11-22  first version: 64-byte header, 64-byte records, catalog of 32 functions.
 *   2  2026-11-22  32-byte records (40 with thread CPU time), narrower positions, depth and
 *                  error; a 96-byte header naming the record clock (TSC or CLOCK_MONOTONIC).
 *   3  2026-11-24  catalog of 44: the enumerations (set/get/end of pw, gr, serv; get*ent_r),
 *                  ids 33 to 44. Otherwise as version 2, which readers still accept.
 *   4  2026-11-24  span files: the same library built as libcwspans.so (CW_SPANS_LIBRARY)
 *                  writes spans.<pid>.<n>.bin (header flag CW_CALLS_FLAG_SPANS) with span
 *                  records (function ids CW_SPAN_*, below). Call files are as in version 3,
 *                  which readers still accept.
 *   5  2026-11-24  a span is one CW_SPAN record written at its end (start, duration, level)
 *                  instead of a begin and an end record; CW_SPAN_BEGIN and CW_SPAN_END remain
 *                  for what does not pair up. Call files are as in version 3; readers accept
 *                  version 4 span files (begin and end records) too.
 */
#ifndef CW_CALLS_FORMAT_H
#define CW_CALLS_FORMAT_H

#include <stdint.h>

#define CW_CALLS_MAGIC 0x4c435743u /* bytes "CWCL" on a little-endian machine */
#define CW_CALLS_VERSION 5u
#define CW_CALLS_HEADER_BYTES 4096u /* records start here */
#define CW_CALLS_FILE_PREFIX "calls."
#define CW_CALLS_FILE_SUFFIX ".bin"
#define CW_SPANS_FILE_PREFIX "spans."

/* The catalog: X(id, name). Ids are stable (a record stores the id), start at 1 (0 marks
 * unused space) and are contiguous. Aliases a program may call instead (open64, __open_2,
 * openat64, creat64, ...) are timed under the id of the function they alias. */
#define CW_CALLS_CATALOG(X)                                                                     \
    /* name service */                                                                          \
    X(1, getpwnam)                                                                              \
    X(2, getpwuid)                                                                              \
    X(3, getgrnam)                                                                              \
    X(4, getgrgid)                                                                              \
    X(5, getpwnam_r)                                                                            \
    X(6, getpwuid_r)                                                                            \
    X(7, getgrnam_r)                                                                            \
    X(8, getgrgid_r)                                                                            \
    X(9, getservbyname)                                                                         \
    X(10, getservbyport)                                                                        \
    X(11, gethostbyname)                                                                        \
    X(12, gethostbyname2)                                                                       \
    X(13, getaddrinfo)                                                                          \
    X(14, getnameinfo)                                                                          \
    X(15, getgrouplist)                                                                         \
    X(16, initgroups)                                                                           \
    /* files and durability */                                                                  \
    X(17, open)                                                                                 \
    X(18, openat)                                                                               \
    X(19, creat)                                                                                \
    X(20, close)                                                                                \
    X(21, fsync)                                                                                \
    X(22, fdatasync)                                                                            \
    X(23, sync_file_range)                                                                      \
    X(24, rename)                                                                               \
    X(25, renameat)                                                                             \
    X(26, unlink)                                                                               \
    X(27, unlinkat)                                                                             \
    X(28, mkdir)                                                                                \
    X(29, link)                                                                                 \
    /* network */                                                                               \
    X(30, connect)                                                                              \
    X(31, accept)                                                                               \
    X(32, accept4)                                                                              \
    /* name service: enumerations (getent passwd, group, services without a key) */             \
    X(33, setpwent)                                                                             \
    X(34, getpwent)                                                                             \
    X(35, endpwent)                                                                             \
    X(36, setgrent)                                                                             \
    X(37, getgrent)                                                                             \
    X(38, endgrent)                                                                             \
    X(39, setservent)                                                                           \
    X(40, getservent)                                                                           \
    X(41, endservent)                                                                           \
    X(42, getpwent_r)                                                                           \
    X(43, getgrent_r)                                                                           \
    X(44, getservent_r)

#define CW_CALLS_ID_ENUM(id, name) CW_FN_##name = id,
enum cw_calls_function { CW_CALLS_CATALOG(CW_CALLS_ID_ENUM) };
#undef CW_CALLS_ID_ENUM
#define CW_CALLS_CATALOG_SIZE 44u
_Static_assert(CW_FN_getservent_r == CW_CALLS_CATALOG_SIZE, "catalog ids are contiguous from 1");
_Static_assert(CW_CALLS_CATALOG_SIZE <= 64, "the header's `selected` has one bit per function");

/* Record clocks (header.clock). */
#define CW_CALLS_CLOCK_MONOTONIC 0u /* CLOCK_MONOTONIC, ticks are nanoseconds */
#define CW_CALLS_CLOCK_TSC 1u       /* the CPU's time-stamp counter (RDTSC) */

/* Header flags. */
#define CW_CALLS_FLAG_THREAD_CPU 1u   /* records are struct cw_calls_record_cpu (40 bytes) */
#define CW_CALLS_FLAG_UNKNOWN_NAME 2u /* CUTAWAY_CALLS named a function not in the catalog */
#define CW_CALLS_FLAG_SPANS 4u        /* a span file (version 4): span records only */

struct cw_calls_header {
    uint32_t magic;           /* CW_CALLS_MAGIC */
    uint16_t version;         /* CW_CALLS_VERSION */
    uint16_t record_bytes;    /* sizeof(struct cw_calls_record) */
    uint32_t header_bytes;    /* CW_CALLS_HEADER_BYTES: offset of the first record */
    uint32_t catalog_size;    /* CW_CALLS_CATALOG_SIZE of the writer */
    int32_t pid;              /* the process (getpid) */
    int32_t ppid;             /* its parent when the file was created */
    uint32_t flags;           /* CW_CALLS_FLAG_* bits */
    uint32_t sequence;        /* n in calls.<pid>.<n>.bin */
    uint64_t selected;        /* bit (id - 1) set: that function is timed */
    int64_t created_ns;       /* CLOCK_MONOTONIC when the file was created */
    uint64_t dropped_records; /* timed calls without a record (no space: disk full, chroot) */
    uint32_t exe_bytes;       /* length of the path that follows, without its NUL */
    uint32_t clock;           /* CW_CALLS_CLOCK_*: the clock of start and duration */
    uint64_t ticks_per_second; /* that clock's rate: 1000000000 for CLOCK_MONOTONIC */
    int64_t created_ticks;    /* that clock, read together with created_ns */
    uint64_t reserved[2];     /* 0 */
};

/* Record flags. */
#define CW_CALL_FAILED 1u        /* the call reported failure (see `error`) */
#define CW_CALL_LONG_DURATION 2u /* the duration did not fit 48 bits: it is the maximum */

/* One timed call. Failure, per function: -1 for open ... accept4, getgrouplist and initgroups;
 * NULL for getpwnam, getpwuid, getgrnam, getgrgid, getservby*, gethostbyname*, getpwent,
 * getgrent and getservent; a non-zero return for the _r forms, getaddrinfo and getnameinfo;
 * never for set*ent and end*ent (they return nothing). `error` is then: errno for the first
 * two groups (it may be 0: getpwnam of an unknown name fails without an error), the returned
 * value for the _r forms (an errno value) and for getaddrinfo/getnameinfo (an EAI_* code,
 * negative in glibc). The call that ends an enumeration (getpwent ... getservent_r past the
 * last entry) is a failure: error 0 for getpwent, getgrent, getservent, ENOENT from the _r
 * forms (glibc). On success, error is 0. Counts that do not fit their field saturate:
 * depth at 255, call_index and overall_index at 2^32 - 1 (a position that large is "later"
 * either way). */
struct cw_calls_record {
    uint16_t function_id;    /* catalog id; 0: unused space, not a record */
    uint8_t depth;           /* timed calls of this thread in progress around this one */
    uint8_t flags;           /* CW_CALL_* bits */
    int32_t thread_id;       /* gettid() */
    uint32_t call_index;     /* 1-based: nth timed call of this function in this process */
    uint32_t overall_index;  /* 1-based: nth timed call of any function in this process */
    int64_t start;           /* record clock (header.clock) just before the call */
    uint32_t duration_low;   /* duration in record-clock ticks: duration_low +  */
    uint16_t duration_high;  /*   duration_high * 2^32 (48 bits: 26 hours at 3 GHz) */
    int16_t error;           /* see above; 0 on success */
};

/* With CW_CALLS_FLAG_THREAD_CPU, every record is this longer form. */
struct cw_calls_record_cpu {
    struct cw_calls_record call;
    int64_t thread_cpu_ns; /* CLOCK_THREAD_CPUTIME_ID consumed by the call */
};

/* Span records (version 5, span files only). Ids from the top of the 16-bit range, far from
 * the catalog. A span is one struct cw_calls_record, written when it ends:
 *   function_id    CW_SPAN
 *   depth          spans of this thread open around it, at most 255 (informational)
 *   flags          CW_CALL_LONG_DURATION: the duration did not fit 48 bits
 *   thread_id      gettid()
 *   call_index     the name id (defined by a CW_SPAN_NAME record of the same file)
 *   overall_index  1-based: the nth CW_SPAN, CW_SPAN_BEGIN or CW_SPAN_END record of this
 *                  thread (informational: a thread's records are in file order, since its
 *                  chunks are claimed at growing offsets)
 *   start          the record clock at the begin
 *   duration_*     ticks from the begin to the end
 *   error          read as uint16: the level, the spans of this thread open around it (exact:
 *                  the writer keeps at most 65536 levels and drops, and counts, deeper ones)
 * An end is matched, per thread, with the innermost open span of its name. What does not pair
 * up is written as version 4's events, with the same fields (duration 0, level as above):
 * CW_SPAN_END for an end with no open span of its name (start: the end's instant), and
 * CW_SPAN_BEGIN for a span still open above the one an end closes, or when its thread or the
 * process exits (start: the begin's instant), innermost first. A thread's records thus list
 * its spans in the order they ended, each after the spans that ended inside it: a reader
 * rebuilds the nesting from the levels alone. A span still open at exec, _exit, a crash or a
 * kill, or in a thread other than the exiting one at exit, leaves no record.
 *
 * Version 4 (still read): every begin and end is an event, a struct cw_calls_record with:
 *   function_id    CW_SPAN_BEGIN or CW_SPAN_END
 *   depth          spans of this thread open before this event (informational: readers nest
 *                  by name, so that an unbalanced begin or end is found, not trusted)
 *   thread_id      gettid()
 *   call_index     the name id (defined by a CW_SPAN_NAME record of the same file)
 *   overall_index  1-based: the nth span record of any kind in this process (the order)
 *   start          the record clock at the event
 *   duration_*, error, flags: 0
 * A name is defined once per process (again after a fork, in the child's file) before the
 * first event that uses it: one CW_SPAN_NAME record (call_index = the name id,
 * overall_index = the name's length in bytes, flags bit 0 = the name was cut to
 * CW_SPAN_NAME_MAX bytes) and ceil(length / 24) CW_SPAN_NAME_TEXT records, each carrying
 * its own name id and part number, so they need not be adjacent. Two ids may name the same
 * text (two copies of a literal, two threads defining it at once): readers merge by text. */
#define CW_SPAN 0xfffbu /* version 5: a whole span, written at its end */
#define CW_SPAN_BEGIN 0xffffu
#define CW_SPAN_END 0xfffeu
#define CW_SPAN_NAME 0xfffdu
#define CW_SPAN_NAME_TEXT 0xfffcu
#define CW_SPAN_NAME_MAX 1024u
#define CW_SPAN_NAME_CUT 1u /* CW_SPAN_NAME flags: the name was longer than CW_SPAN_NAME_MAX */
#define CW_SPAN_TEXT_BYTES 24u

struct cw_span_name_text {
    uint16_t function_id; /* CW_SPAN_NAME_TEXT */
    uint16_t part;        /* 0, 1, ...: bytes part * 24 ... part * 24 + 23 of the name */
    uint32_t name_id;
    char text[CW_SPAN_TEXT_BYTES]; /* not NUL-terminated; the last part is padded with 0 */
};

_Static_assert(sizeof(struct cw_span_name_text) == 32, "span name text layout");
_Static_assert(sizeof(struct cw_calls_header) == 96, "header layout");
_Static_assert(sizeof(struct cw_calls_record) == 32, "record layout");
_Static_assert(sizeof(struct cw_calls_record_cpu) == 40, "record layout with thread CPU");

#endif
