/*
 * cw_calls.c: cutaway's call interposer (libcwcalls.so), which times selected libc calls of an
 * unmodified dynamically linked program and writes one record per call (format and catalog:
 * cw_calls_format.h; reader: src/cutaway/probes/calls_format.py).
 *
 * Usage: LD_PRELOAD=/path/to/libcwcalls.so CUTAWAY_CALLS=getpwnam,fsync
 *        CUTAWAY_CALLS_DIR=/absolute/dir [CUTAWAY_CALLS_THREAD_CPU=1]
 *        [CUTAWAY_CALLS_TSC_HZ=2995200000] program ...
 * (cutaway.probes.calls_format.environment_for() builds these variables.)
 *
 * Contract:
 * - Only catalog functions named in CUTAWAY_CALLS (comma-separated) are timed; every other
 *   interposed function passes straight to libc after one predictable branch. Without both
 *   CUTAWAY_CALLS and CUTAWAY_CALLS_DIR (relative: to the starting cwd), or when the file
 *   cannot be created, the library times nothing and writes nothing.
 * - Each process writes its own file (see cw_calls_format.h), a fork child included (at its
 *   first timed call; it counts its own positions) and each exec'ed image (LD_PRELOAD is
 *   inherited, so the library loads again).
 * - The file is written through a MAP_SHARED mapping: every record is in the page cache as
 *   soon as its call returns, so _exit, exec, a crash or SIGKILL lose nothing that finished.
 * - The hook path takes no lock and allocates nothing: two increments (the call's positions:
 *   relaxed atomics once the process has threads; before that, on x86-64, single
 *   instructions that a signal handler cannot split), two clock reads (RDTSC when
 *   CUTAWAY_CALLS_TSC_HZ gives the counter's rate, else CLOCK_MONOTONIC from the vDSO), and a
 *   32-byte store (40 with thread CPU time) into the thread's chunk of the file. The file is created with its first chunk mapped; a thread maps a new
 *   chunk (a few syscalls, after the call's clock reads) after 128, 2048 and every 32768
 *   records, and at its first record when the first chunk is taken.
 * - errno as the caller sees it is what libc left; the library's own work never changes it.
 * - Async-signal safety: a hook called from a signal handler that interrupted this thread's
 *   record write is counted in the header's dropped_records instead of being written.
 * - Exported symbols: only the interposed libc names; everything else is static.
 *
 * Not seen (documented in docs/calls-format.md): calls libc makes internally (fopen's open,
 * getpwnam's getpwnam_r), statically linked programs, setuid programs (the loader ignores
 * LD_PRELOAD), descendants started with a cleared environment. Calls after this library's
 * destructor (late destructors of other libraries) are not recorded.
 *
 * Internal file operations use raw syscalls (cw_sys_*): calling open or close from here would
 * bind to this library's own hooks.
 */
#define _GNU_SOURCE
#undef _FILE_OFFSET_BITS /* `open` must be open, not a redirect to open64 */
#undef _FORTIFY_SOURCE   /* no inline wrappers around the functions defined here */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cw_calls_format.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CW_HAVE_TSC 1
#else
#define CW_HAVE_TSC 0
#endif
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
#include <sys/single_threaded.h>
#define CW_HAVE_SINGLE_THREADED 1
#else
#define CW_HAVE_SINGLE_THREADED 0
#endif

#define CW_EXPORT __attribute__((visibility("default")))
#define CW_TLS __thread __attribute__((tls_model("initial-exec")))
#define CW_LIKELY(x) __builtin_expect(!!(x), 1)
#define CW_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* A thread's chunks grow: most processes and threads time a few calls, and each page of a
 * chunk costs a page of memory up front (chunks are fallocated and prefaulted). Counted in
 * records: a chunk is a whole number of them whatever their size. */
#ifdef CW_SPANS_LIBRARY
#define CW_FILE_PREFIX CW_SPANS_FILE_PREFIX
#define CW_ENV(suffix) "CUTAWAY_SPANS" suffix
#else
#define CW_FILE_PREFIX CW_CALLS_FILE_PREFIX
#define CW_ENV(suffix) "CUTAWAY_CALLS" suffix
#endif

#define CW_FIRST_CHUNK_RECORDS 128u
#define CW_SECOND_CHUNK_RECORDS 2048u
#define CW_CHUNK_RECORDS 32768u

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* glibc's fortified entry points (_FORTIFY_SOURCE programs call these instead of open). */
extern int __open_2(const char *path, int flags);
extern int __open64_2(const char *path, int flags);
extern int __openat_2(int dirfd, const char *path, int flags);
extern int __openat64_2(int dirfd, const char *path, int flags);

/* The process's recording state, in a page that a fork child sees zeroed (MADV_WIPEONFORK;
 * where the kernel lacks it, a pthread_atfork child handler zeroes it): that is how a child
 * made by fork, _Fork or clone knows it must start a file of its own. */
enum cw_state {
    CW_STATE_FORKED = 0,    /* no file of this process yet: start one at the next timed call */
    CW_STATE_RECORDING = 1, /* the file is open for records */
    CW_STATE_STARTING = 2,  /* creating the file (a signal handler's hook records nothing) */
    CW_STATE_CLOSED = 3,    /* after the destructor, or when no file could be created */
};

/* Per process: reset in a fork child by cw_start_process. */
struct cw_process {
    uint64_t next_offset;                             /* atomic: first unclaimed file byte */
    uint64_t overall_count;                           /* see cw_count: timed calls so far */
    uint64_t call_counts[CW_CALLS_CATALOG_SIZE + 1];  /* see cw_count, by function id */
    struct cw_calls_header *header;                   /* mapped with the first chunk */
    size_t header_map_bytes;                          /* the header page(s) and first chunk */
    char *first_chunk;                                /* atomic: NULL once a thread took it */
    uint32_t generation;                              /* + 1 in each fork child that records */
    char path[PATH_MAX];
};

/* Per thread: the chunk being filled. Zero in a new thread. */
struct cw_thread {
    char *cursor; /* next free record of the chunk (records are cw_record_bytes long) */
    char *end;
    char *chunk;           /* the chunk's first record */
    uint64_t chunk_offset; /* and its offset in the file */
    void *map_base; /* the chunk's own mapping (NULL for the first chunk, which is mapped with
                       the header), unmapped when the next is claimed or at thread exit */
    size_t map_bytes;
    int32_t tid;     /* gettid(), cached at the thread's first record */
    uint16_t depth;  /* timed calls in progress in this thread */
    uint8_t writing; /* inside cw_end's record write: a signal handler's record is dropped */
    uint8_t key_set; /* pthread_setspecific done: cw_thread_exit unmaps the chunk */
    uint32_t chunks; /* chunks claimed so far: the first is small */
#ifdef CW_SPANS_LIBRARY
    struct cw_open_span *spans; /* its open spans, innermost last (cw_span_begin_event) */
    uint32_t open;              /* how many */
    uint32_t capacity;          /* of `spans`, a private anonymous mapping */
    uint32_t overflow;          /* begins past the deepest level kept: dropped, and their ends */
    uint32_t position;          /* event records written by this thread (overall_index) */
#endif
};

#ifdef CW_SPANS_LIBRARY
/* A span begun and not ended yet: its record is written when it ends (version 5). */
struct cw_open_span {
    const char *name;
    int64_t start; /* record clock */
};
#endif

/* One call between cw_begin and cw_end. id 0: not recorded. */
struct cw_call {
    unsigned id;
    uint16_t depth;
    uint32_t generation; /* cw_process.generation at the start */
    uint64_t call_index;
    uint64_t overall_index;
    int64_t start; /* record clock */
    int64_t cpu_start_ns; /* -1: thread CPU time not measured */
};

/* Set once by the constructor; cw_selected is the only thing the untimed path reads. */
static unsigned char cw_selected[CW_CALLS_CATALOG_SIZE + 1];
static uint64_t cw_selected_mask;
static uint32_t cw_header_flags;
static int cw_thread_cpu;
static size_t cw_record_bytes = sizeof(struct cw_calls_record);
static int cw_use_tsc;            /* the record clock is the TSC (CUTAWAY_CALLS_TSC_HZ) */
static uint64_t cw_tsc_hz;
static char cw_directory[PATH_MAX];
static size_t cw_page_bytes = 4096;
static pthread_key_t cw_thread_key;
static int cw_thread_key_ok;

static volatile uint32_t cw_state_fallback;
static volatile uint32_t *cw_state = &cw_state_fallback;
static struct cw_process cw_process;
static CW_TLS struct cw_thread cw_self;
#ifndef CW_SPANS_LIBRARY
static CW_TLS int cw_resolving; /* inside dlsym from a lazy stub: no recursion */
#endif

#define CW_NAME_ENTRY(id, name) [id] = #name,
static const char *const cw_names[CW_CALLS_CATALOG_SIZE + 1] = {CW_CALLS_CATALOG(CW_NAME_ENTRY)};
#undef CW_NAME_ENTRY

/* ---- raw syscalls for the library's own file work (never the interposed names) ---- */

static int cw_sys_open(const char *path, int flags, mode_t mode) {
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static void cw_sys_close(int fd) { syscall(SYS_close, fd); }

static int64_t cw_clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The record clock. RDTSC is not ordered against the instructions around it: an instant may
 * be off by the depth of the pipeline (tens of cycles, ~10 ns), which a fence would fix at
 * about the cost of a second read; CLOCK_MONOTONIC's vDSO read costs twice as much here. */
static inline int64_t cw_ticks(void) {
#if CW_HAVE_TSC
    if (CW_LIKELY(cw_use_tsc)) return (int64_t)__rdtsc();
#endif
    return cw_clock_ns(CLOCK_MONOTONIC);
}

/* ++*counter for the hook path. Once the process has more than one thread, a relaxed atomic
 * increment. Before, no other thread can race; only a signal handler's hook can interrupt
 * this one, and a single x86 instruction (xadd without lock: ~1 cycle instead of ~20) cannot
 * be split by a signal. Elsewhere the atomic is used throughout. */
static inline uint64_t cw_count(uint64_t *counter) {
#if CW_HAVE_SINGLE_THREADED && defined(__x86_64__)
    if (CW_LIKELY(__libc_single_threaded)) {
        uint64_t value = 1;
        __asm__ volatile("xaddq %0, %1" : "+r"(value), "+m"(*counter));
        return value + 1;
    }
#endif
    return __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

#ifndef CW_SPANS_LIBRARY /* the span library interposes nothing */
/* ---- the real functions: stubs until the constructor resolves them ---- */

/* The stubs serve calls made before the constructor ran (another library's constructor) or
 * from within dlsym (an allocator that opens files while dlsym allocates): the syscall ones go
 * straight to the kernel, the lookup ones resolve lazily, refusing to recurse. */
struct cw_real_functions {
#define CW_REAL_FIELD(id, name) __typeof__(name) *name;
    CW_CALLS_CATALOG(CW_REAL_FIELD)
#undef CW_REAL_FIELD
    __typeof__(open64) *open64;
    __typeof__(__open_2) *__open_2;
    __typeof__(__open64_2) *__open64_2;
    __typeof__(openat64) *openat64;
    __typeof__(__openat_2) *__openat_2;
    __typeof__(__openat64_2) *__openat64_2;
    __typeof__(creat64) *creat64;
};
static struct cw_real_functions cw_real;

static int cw_open_needs_mode(int flags) {
    return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

static int cw_stub_openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    if (cw_open_needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static int cw_stub_open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (cw_open_needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return cw_sys_open(path, flags, mode);
}

static int cw_stub_open_2(const char *path, int flags) { return cw_sys_open(path, flags, 0); }
static int cw_stub_openat_2(int dirfd, const char *path, int flags) {
    return (int)syscall(SYS_openat, dirfd, path, flags, 0);
}
static int cw_stub_creat(const char *path, mode_t mode) {
    return cw_sys_open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
static int cw_stub_close(int fd) { return (int)syscall(SYS_close, fd); }
static int cw_stub_fsync(int fd) { return (int)syscall(SYS_fsync, fd); }
static int cw_stub_fdatasync(int fd) { return (int)syscall(SYS_fdatasync, fd); }
static int cw_stub_sync_file_range(int fd, off64_t offset, off64_t bytes, unsigned int flags) {
    return (int)syscall(SYS_sync_file_range, fd, offset, bytes, flags);
}
static int cw_stub_renameat(int old_dirfd, const char *old_path, int new_dirfd,
                            const char *new_path) {
#ifdef SYS_renameat
    return (int)syscall(SYS_renameat, old_dirfd, old_path, new_dirfd, new_path);
#else
    return (int)syscall(SYS_renameat2, old_dirfd, old_path, new_dirfd, new_path, 0);
#endif
}
static int cw_stub_rename(const char *old_path, const char *new_path) {
    return cw_stub_renameat(AT_FDCWD, old_path, AT_FDCWD, new_path);
}
static int cw_stub_unlinkat(int dirfd, const char *path, int flags) {
    return (int)syscall(SYS_unlinkat, dirfd, path, flags);
}
static int cw_stub_unlink(const char *path) { return cw_stub_unlinkat(AT_FDCWD, path, 0); }
static int cw_stub_mkdir(const char *path, mode_t mode) {
    return (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
}
static int cw_stub_link(const char *old_path, const char *new_path) {
    return (int)syscall(SYS_linkat, AT_FDCWD, old_path, AT_FDCWD, new_path, 0);
}
static int cw_stub_connect(int fd, __CONST_SOCKADDR_ARG address, socklen_t length) {
    return (int)syscall(SYS_connect, fd, address.__sockaddr__, length);
}
static int cw_stub_accept4(int fd, __SOCKADDR_ARG address, socklen_t *length, int flags) {
    return (int)syscall(SYS_accept4, fd, address.__sockaddr__, length, flags);
}
static int cw_stub_accept(int fd, __SOCKADDR_ARG address, socklen_t *length) {
    return cw_stub_accept4(fd, address, length, 0);
}

static void *cw_resolve(const char *name) {
    if (cw_resolving) return NULL;
    cw_resolving = 1;
    void *function = dlsym(RTLD_NEXT, name);
    cw_resolving = 0;
    return function;
}

/* A lookup stub: resolve the real function now (no syscall does its work) and keep it. */
#define CW_LAZY_STUB(name, type, failure, params, args)                                         \
    static type cw_stub_##name params {                                                         \
        __typeof__(name) *real = (__typeof__(name) *)cw_resolve(#name);                         \
        if (real == NULL) {                                                                     \
            errno = ENOSYS;                                                                     \
            return failure;                                                                     \
        }                                                                                       \
        __atomic_store_n(&cw_real.name, real, __ATOMIC_RELAXED);                                \
        return real args;                                                                       \
    }
CW_LAZY_STUB(getpwnam, struct passwd *, NULL, (const char *n), (n))
CW_LAZY_STUB(getpwuid, struct passwd *, NULL, (uid_t u), (u))
CW_LAZY_STUB(getgrnam, struct group *, NULL, (const char *n), (n))
CW_LAZY_STUB(getgrgid, struct group *, NULL, (gid_t g), (g))
CW_LAZY_STUB(getpwnam_r, int, ENOSYS,
             (const char *n, struct passwd *p, char *b, size_t s, struct passwd **r),
             (n, p, b, s, r))
CW_LAZY_STUB(getpwuid_r, int, ENOSYS,
             (uid_t u, struct passwd *p, char *b, size_t s, struct passwd **r), (u, p, b, s, r))
CW_LAZY_STUB(getgrnam_r, int, ENOSYS,
             (const char *n, struct group *g, char *b, size_t s, struct group **r),
             (n, g, b, s, r))
CW_LAZY_STUB(getgrgid_r, int, ENOSYS,
             (gid_t i, struct group *g, char *b, size_t s, struct group **r), (i, g, b, s, r))
CW_LAZY_STUB(getservbyname, struct servent *, NULL, (const char *n, const char *p), (n, p))
CW_LAZY_STUB(getservbyport, struct servent *, NULL, (int port, const char *p), (port, p))
CW_LAZY_STUB(gethostbyname, struct hostent *, NULL, (const char *n), (n))
CW_LAZY_STUB(gethostbyname2, struct hostent *, NULL, (const char *n, int af), (n, af))
CW_LAZY_STUB(getaddrinfo, int, EAI_SYSTEM,
             (const char *n, const char *s, const struct addrinfo *h, struct addrinfo **r),
             (n, s, h, r))
CW_LAZY_STUB(getnameinfo, int, EAI_SYSTEM,
             (const struct sockaddr *a, socklen_t al, char *h, socklen_t hl, char *s,
              socklen_t sl, int f),
             (a, al, h, hl, s, sl, f))
CW_LAZY_STUB(getgrouplist, int, -1, (const char *u, gid_t g, gid_t *gs, int *n), (u, g, gs, n))
CW_LAZY_STUB(initgroups, int, -1, (const char *u, gid_t g), (u, g))
CW_LAZY_STUB(getpwent, struct passwd *, NULL, (void), ())
CW_LAZY_STUB(getgrent, struct group *, NULL, (void), ())
CW_LAZY_STUB(getservent, struct servent *, NULL, (void), ())
CW_LAZY_STUB(getpwent_r, int, ENOSYS, (struct passwd *p, char *b, size_t s, struct passwd **r),
             (p, b, s, r))
CW_LAZY_STUB(getgrent_r, int, ENOSYS, (struct group *g, char *b, size_t s, struct group **r),
             (g, b, s, r))
CW_LAZY_STUB(getservent_r, int, ENOSYS,
             (struct servent *e, char *b, size_t s, struct servent **r), (e, b, s, r))
#undef CW_LAZY_STUB

/* The same for a function that returns nothing (set*ent, end*ent): unresolved, it does nothing,
 * as it would have nothing to report. */
#define CW_LAZY_STUB_VOID(name, params, args)                                                   \
    static void cw_stub_##name params {                                                         \
        __typeof__(name) *real = (__typeof__(name) *)cw_resolve(#name);                         \
        if (real == NULL) return;                                                               \
        __atomic_store_n(&cw_real.name, real, __ATOMIC_RELAXED);                                \
        real args;                                                                              \
    }
CW_LAZY_STUB_VOID(setpwent, (void), ())
CW_LAZY_STUB_VOID(endpwent, (void), ())
CW_LAZY_STUB_VOID(setgrent, (void), ())
CW_LAZY_STUB_VOID(endgrent, (void), ())
CW_LAZY_STUB_VOID(setservent, (int stay_open), (stay_open))
CW_LAZY_STUB_VOID(endservent, (void), ())
#undef CW_LAZY_STUB_VOID

static struct cw_real_functions cw_real = {
    .getpwnam = cw_stub_getpwnam,
    .getpwuid = cw_stub_getpwuid,
    .getgrnam = cw_stub_getgrnam,
    .getgrgid = cw_stub_getgrgid,
    .getpwnam_r = cw_stub_getpwnam_r,
    .getpwuid_r = cw_stub_getpwuid_r,
    .getgrnam_r = cw_stub_getgrnam_r,
    .getgrgid_r = cw_stub_getgrgid_r,
    .getservbyname = cw_stub_getservbyname,
    .getservbyport = cw_stub_getservbyport,
    .gethostbyname = cw_stub_gethostbyname,
    .gethostbyname2 = cw_stub_gethostbyname2,
    .getaddrinfo = cw_stub_getaddrinfo,
    .getnameinfo = cw_stub_getnameinfo,
    .getgrouplist = cw_stub_getgrouplist,
    .initgroups = cw_stub_initgroups,
    .open = cw_stub_open,
    .openat = cw_stub_openat,
    .creat = cw_stub_creat,
    .close = cw_stub_close,
    .fsync = cw_stub_fsync,
    .fdatasync = cw_stub_fdatasync,
    .sync_file_range = cw_stub_sync_file_range,
    .rename = cw_stub_rename,
    .renameat = cw_stub_renameat,
    .unlink = cw_stub_unlink,
    .unlinkat = cw_stub_unlinkat,
    .mkdir = cw_stub_mkdir,
    .link = cw_stub_link,
    .connect = cw_stub_connect,
    .accept = cw_stub_accept,
    .accept4 = cw_stub_accept4,
    .setpwent = cw_stub_setpwent,
    .getpwent = cw_stub_getpwent,
    .endpwent = cw_stub_endpwent,
    .setgrent = cw_stub_setgrent,
    .getgrent = cw_stub_getgrent,
    .endgrent = cw_stub_endgrent,
    .setservent = cw_stub_setservent,
    .getservent = cw_stub_getservent,
    .endservent = cw_stub_endservent,
    .getpwent_r = cw_stub_getpwent_r,
    .getgrent_r = cw_stub_getgrent_r,
    .getservent_r = cw_stub_getservent_r,
    .open64 = cw_stub_open,
    .__open_2 = cw_stub_open_2,
    .__open64_2 = cw_stub_open_2,
    .openat64 = cw_stub_openat,
    .__openat_2 = cw_stub_openat_2,
    .__openat64_2 = cw_stub_openat_2,
    .creat64 = cw_stub_creat,
};

/* Called by the constructor; dlsym may allocate, which is why it is not on the hook path. */
static void cw_resolve_all(void) {
#define CW_RESOLVE(name)                                                                        \
    do {                                                                                        \
        void *function = dlsym(RTLD_NEXT, #name);                                               \
        if (function != NULL)                                                                   \
            __atomic_store_n(&cw_real.name, (__typeof__(name) *)function, __ATOMIC_RELAXED);    \
    } while (0);
#define CW_RESOLVE_ENTRY(id, name) CW_RESOLVE(name)
    CW_CALLS_CATALOG(CW_RESOLVE_ENTRY)
    CW_RESOLVE(open64)
    CW_RESOLVE(__open_2)
    CW_RESOLVE(__open64_2)
    CW_RESOLVE(openat64)
    CW_RESOLVE(__openat_2)
    CW_RESOLVE(__openat64_2)
    CW_RESOLVE(creat64)
#undef CW_RESOLVE_ENTRY
#undef CW_RESOLVE
}

#endif /* !CW_SPANS_LIBRARY */

/* ---- the file ---- */

/* Count a timed call that got no record. */
static void cw_drop_record(void) {
    if (cw_process.header != NULL)
        __atomic_add_fetch(&cw_process.header->dropped_records, 1, __ATOMIC_RELAXED);
}

/* Make [offset, offset + bytes) of the file exist with blocks behind it, so that stores
 * through the mapping cannot SIGBUS. Never shrinks the file (other threads' chunks). */
static int cw_reserve(int fd, uint64_t offset, uint64_t bytes) {
    if (fallocate(fd, 0, (off_t)offset, (off_t)bytes) == 0) return 0;
    if (errno != EOPNOTSUPP && errno != ENOSYS) return -1;
    const char zero = 0; /* no fallocate here: a byte at the end extends the file */
    return pwrite(fd, &zero, 1, (off_t)(offset + bytes - 1)) == 1 ? 0 : -1;
}

/* Start filling the chunk at `base` (file offset `offset`, `records` long). */
static char *cw_use_chunk(struct cw_thread *self, char *base, uint64_t offset, uint32_t records) {
    self->chunk = base;
    self->chunk_offset = offset;
    self->cursor = base + cw_record_bytes;
    self->end = base + (size_t)records * cw_record_bytes;
    self->chunks++;
    if (!self->key_set && cw_thread_key_ok)
        self->key_set = pthread_setspecific(cw_thread_key, self) == 0;
    return base;
}

/* A new chunk of the file for this thread: returns its first record, or NULL (the caller
 * drops the record; the next call tries again). The first thread to ask gets the chunk mapped
 * with the header; the others map one: opening the file by path each time, since holding a
 * descriptor would expose it to programs that close every descriptor. */
/* cw_claim_chunk's work; errno is the caller's to restore. */
static char *cw_map_chunk(struct cw_thread *self) {
    if (self->tid == 0) self->tid = (int32_t)syscall(SYS_gettid);
    if (self->map_base != NULL) munmap(self->map_base, self->map_bytes);
    self->map_base = NULL;
    self->cursor = self->end = self->chunk = NULL;
    char *first = __atomic_exchange_n(&cw_process.first_chunk, NULL, __ATOMIC_ACQ_REL);
    if (first != NULL)
        return cw_use_chunk(self, first, CW_CALLS_HEADER_BYTES, CW_FIRST_CHUNK_RECORDS);
    int fd = cw_sys_open(cw_process.path, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) return NULL;
    uint32_t records = self->chunks == 0   ? CW_FIRST_CHUNK_RECORDS
                       : self->chunks == 1 ? CW_SECOND_CHUNK_RECORDS
                                           : CW_CHUNK_RECORDS;
    uint64_t bytes = (uint64_t)records * cw_record_bytes;
    uint64_t offset = __atomic_fetch_add(&cw_process.next_offset, bytes, __ATOMIC_RELAXED);
    uint64_t map_offset = offset & ~(uint64_t)(cw_page_bytes - 1);
    size_t map_bytes = (size_t)(offset + bytes - map_offset);
    void *base = MAP_FAILED;
    if (cw_reserve(fd, offset, bytes) == 0)
        base = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)map_offset);
    cw_sys_close(fd);
    if (base == MAP_FAILED) return NULL;
    /* Fault the whole chunk in now, in one go (Linux >= 5.14; older kernels fault page by
     * page): a page fault per 128 records costs more than the rest of the hook on a VM. */
    madvise(base, map_bytes, MADV_POPULATE_WRITE);
    self->map_base = base;
    self->map_bytes = map_bytes;
    return cw_use_chunk(self, (char *)base + (offset - map_offset), offset, records);
}

/* A new chunk of the file for this thread: returns its first record, or NULL (the caller
 * drops the record; the next call tries again). The first thread to ask gets the chunk mapped
 * with the header; the others map one: opening the file by path each time, since holding a
 * descriptor would expose it to programs that close every descriptor. errno is kept. */
__attribute__((noinline, cold)) static char *cw_claim_chunk(struct cw_thread *self) {
    int saved_errno = errno;
    char *slot = cw_map_chunk(self);
    errno = saved_errno;
    return slot;
}

/* pthread key destructor: unmap the exiting thread's chunk (a server that starts a thread per
 * connection would otherwise run out of mappings); the span writer first writes the spans the
 * thread left open. */
#ifdef CW_SPANS_LIBRARY
static void cw_span_close_thread(struct cw_thread *self);
#endif

static void cw_thread_exit(void *value) {
    struct cw_thread *self = value;
#ifdef CW_SPANS_LIBRARY
    cw_span_close_thread(self); /* its open spans, while its chunk is still mapped */
#endif
    if (self->map_base != NULL) munmap(self->map_base, self->map_bytes);
    self->map_base = NULL;
    self->cursor = self->end = self->chunk = NULL;
    self->key_set = 0; /* the value is gone: a later record in this thread sets it again */
}

/* Fill the file's header page, mapped at `page` (zero: a new file). */
static void cw_write_header(char *page, int32_t pid, uint32_t sequence) {
    size_t room = CW_CALLS_HEADER_BYTES - sizeof(struct cw_calls_header) - 1;
    ssize_t exe_bytes = readlink("/proc/self/exe", page + sizeof(struct cw_calls_header), room);
    int64_t created_ns = cw_clock_ns(CLOCK_MONOTONIC);
    struct cw_calls_header header = {
        .magic = 0, /* stored last: a file whose magic is 0 was never started */
        .version = CW_CALLS_VERSION,
        .record_bytes = (uint16_t)cw_record_bytes,
        .header_bytes = CW_CALLS_HEADER_BYTES,
        .catalog_size = CW_CALLS_CATALOG_SIZE,
        .pid = pid,
        .ppid = (int32_t)getppid(),
        .flags = cw_header_flags,
        .sequence = sequence,
        .selected = cw_selected_mask,
        .created_ns = created_ns,
        .exe_bytes = exe_bytes > 0 ? (uint32_t)exe_bytes : 0,
        .clock = cw_use_tsc ? CW_CALLS_CLOCK_TSC : CW_CALLS_CLOCK_MONOTONIC,
        .ticks_per_second = cw_use_tsc ? cw_tsc_hz : UINT64_C(1000000000),
        .created_ticks = cw_use_tsc ? cw_ticks() : created_ns,
    };
    if (exe_bytes <= 0) page[sizeof header] = '\0';
    memcpy(page, &header, sizeof header);
    /* A process killed before this store leaves a file of zeros where its magic goes, which
     * the reader counts as a process that never started its file, not as a foreign file. */
    __atomic_store_n((uint32_t *)(void *)page, CW_CALLS_MAGIC, __ATOMIC_RELEASE);
}

/* The file's size when created: the header and the first chunk. */
static uint64_t cw_first_file_bytes(void) {
    return CW_CALLS_HEADER_BYTES + (uint64_t)CW_FIRST_CHUNK_RECORDS * cw_record_bytes;
}

/* Create this process's file (the first free calls.<pid>.<n>.bin) with room for its header
 * and first chunk, map both, write the header and reset the positions. Returns 0 or -1. */
static int cw_start_process(void) {
    struct cw_process *process = &cw_process;
    int32_t pid = (int32_t)getpid();
    int fd = -1;
    uint32_t sequence = 0;
    for (; sequence < 100000; sequence++) {
        int length = snprintf(process->path, sizeof process->path, "%s/" CW_FILE_PREFIX
                              "%d.%u" CW_CALLS_FILE_SUFFIX, cw_directory, (int)pid, sequence);
        if (length < 0 || (size_t)length >= sizeof process->path) return -1;
        fd = cw_sys_open(process->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) break;
    }
    if (fd < 0) return -1;
    uint64_t file_bytes = cw_first_file_bytes();
    size_t map_bytes = (size_t)((file_bytes + cw_page_bytes - 1) & ~(uint64_t)(cw_page_bytes - 1));
    void *map = MAP_FAILED;
    if (cw_reserve(fd, 0, file_bytes) == 0)
        map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    cw_sys_close(fd);
    if (map == MAP_FAILED) return -1;
    cw_write_header(map, pid, sequence);
    process->header = map;
    process->header_map_bytes = map_bytes;
    process->next_offset = file_bytes;
    process->overall_count = 0;
    memset(process->call_counts, 0, sizeof process->call_counts);
    __atomic_store_n(&process->first_chunk, (char *)map + CW_CALLS_HEADER_BYTES, __ATOMIC_RELEASE);
    return 0;
}

/* First timed call in a fork child (state FORKED): drop what belongs to the parent's file and
 * start ours. Returns 1 when recording. One thread wins; a call that loses (made by a signal
 * handler, or a thread the child started meanwhile) is not recorded. */
__attribute__((noinline, cold)) static int cw_resume(void) {
    uint32_t forked = CW_STATE_FORKED; /* else closed, or starting in another frame */
    if (!__atomic_compare_exchange_n(cw_state, &forked, CW_STATE_STARTING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return 0;
    int saved_errno = errno;
    struct cw_thread *self = &cw_self;
    if (self->map_base != NULL) munmap(self->map_base, self->map_bytes);
    if (cw_process.header != NULL) munmap(cw_process.header, cw_process.header_map_bytes);
    cw_process.header = NULL;
    cw_process.first_chunk = NULL;
    uint8_t key_set = self->key_set; /* the key's value is per thread and survives fork */
#ifdef CW_SPANS_LIBRARY
    /* The spans open in the parent are the parent's: the child's end of one is an end
     * without a begin in the child's file, as the child never saw its begin. The stack's
     * mapping (a private copy) is kept for the child's own spans. */
    struct cw_open_span *spans = self->spans;
    uint32_t capacity = self->capacity;
#endif
    memset(self, 0, sizeof *self);
    self->key_set = key_set;
#ifdef CW_SPANS_LIBRARY
    self->spans = spans;
    self->capacity = capacity;
#endif
    int started = cw_start_process() == 0;
    cw_process.generation++;
    *cw_state = started ? CW_STATE_RECORDING : CW_STATE_CLOSED;
    errno = saved_errno;
    return started;
}

static void cw_forked(void) { *cw_state = CW_STATE_FORKED; }

/* ---- the hook path ---- */

__attribute__((always_inline)) static inline void cw_begin(struct cw_call *call, unsigned id) {
    if (CW_UNLIKELY(*cw_state != CW_STATE_RECORDING) && !cw_resume()) {
        call->id = 0;
        return;
    }
    call->id = id;
    call->generation = cw_process.generation;
    call->call_index = cw_count(&cw_process.call_counts[id]);
    call->overall_index = cw_count(&cw_process.overall_count);
    call->depth = cw_self.depth++;
    call->cpu_start_ns = cw_thread_cpu ? cw_clock_ns(CLOCK_THREAD_CPUTIME_ID) : -1;
    call->start = cw_ticks(); /* last: closest to the call */
}

static inline uint32_t cw_saturate32(uint64_t value) {
    return value > UINT32_MAX ? UINT32_MAX : (uint32_t)value;
}

__attribute__((always_inline)) static inline void cw_end(const struct cw_call *call, int failed,
                                                        int error) {
    if (call->id == 0) return;
    int64_t end = cw_ticks(); /* first: closest to the call */
    /* The call forked (an NSS module, a wrapper): in the child, this call belongs to no file of
     * the child's (and the chunk still mapped may be the parent's). */
    if (CW_UNLIKELY(*cw_state != CW_STATE_RECORDING || call->generation != cw_process.generation))
        return;
    int64_t cpu_ns = -1; /* nothing below changes errno but cw_claim_chunk, which restores it */
    if (call->cpu_start_ns >= 0) cpu_ns = cw_clock_ns(CLOCK_THREAD_CPUTIME_ID) - call->cpu_start_ns;
    struct cw_thread *self = &cw_self;
    self->depth--;
    if (CW_UNLIKELY(self->writing)) { /* we are a signal handler inside this thread's write */
        cw_drop_record();
        return;
    }
    self->writing = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    char *slot;
    if (CW_LIKELY(self->cursor != self->end)) {
        slot = self->cursor;
        self->cursor += cw_record_bytes;
    } else {
        slot = cw_claim_chunk(self);
    }
    if (CW_LIKELY(slot != NULL)) {
        struct cw_calls_record *record = (struct cw_calls_record *)(void *)slot;
        uint64_t duration = end > call->start ? (uint64_t)(end - call->start) : 0;
        unsigned flags = failed ? CW_CALL_FAILED : 0;
        if (CW_UNLIKELY(duration >> 48 != 0)) {
            duration = (UINT64_C(1) << 48) - 1;
            flags |= CW_CALL_LONG_DURATION;
        }
        record->depth = call->depth > UINT8_MAX ? UINT8_MAX : (uint8_t)call->depth;
        record->flags = (uint8_t)flags;
        record->thread_id = self->tid;
        record->call_index = cw_saturate32(call->call_index);
        record->overall_index = cw_saturate32(call->overall_index);
        record->start = call->start;
        record->duration_low = (uint32_t)duration;
        record->duration_high = (uint16_t)(duration >> 32);
        record->error = (int16_t)(!failed ? 0 : error > INT16_MAX ? INT16_MAX
                                               : error < INT16_MIN ? INT16_MIN : error);
        if (cw_thread_cpu) ((struct cw_calls_record_cpu *)(void *)slot)->thread_cpu_ns = cpu_ns;
        /* Last, with release order: a record cut short by a kill reads as unused. */
        __atomic_store_n(&record->function_id, (uint16_t)call->id, __ATOMIC_RELEASE);
    } else {
        cw_drop_record();
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    self->writing = 0;
}

#ifndef CW_SPANS_LIBRARY
/* Hooks. Failure conventions are in cw_calls_format.h (struct cw_calls_record). */

/* Each hook is the exported name, which only tests the selection and passes straight through
 * (a compare and a tail jump), and a separate timed function, so that the untimed path pays
 * for no stack frame. */
#define CW_TIMED(type, name) static __attribute__((noinline)) type cw_timed_##name

/* The exported symbol: one well-predicted branch to the real function when not selected. */
#define CW_DISPATCH(type, name, id, params, args)                                               \
    CW_EXPORT type name params {                                                                \
        if (CW_LIKELY(!cw_selected[id])) return cw_real.name args;                              \
        return cw_timed_##name args;                                                            \
    }

/* The timed part of a hook returning int: `failed` and `error` are expressions of `result`. */
#define CW_TIMED_INT(name, id, params, args, failed, error)                                     \
    CW_TIMED(int, name) params {                                                                \
        struct cw_call call;                                                                    \
        cw_begin(&call, id);                                                                    \
        int result = cw_real.name args;                                                         \
        cw_end(&call, failed, error);                                                           \
        return result;                                                                          \
    }

/* -1 and errno: syscalls (errno is always set on failure). */
#define CW_HOOK_MINUS_ONE(name, id, params, args)                                               \
    CW_TIMED_INT(name, id, params, args, result == -1, result == -1 ? errno : 0)                \
    CW_DISPATCH(int, name, id, params, args)

/* A failure that may leave errno alone (NULL from getpwnam: not found; -1 from getgrouplist:
 * too many groups): errno is cleared first, and put back if the function did not set it. */
#define CW_HOOK_ERRNO(name, id, type, failed, params, args)                                     \
    CW_TIMED(type, name) params {                                                               \
        struct cw_call call;                                                                    \
        cw_begin(&call, id);                                                                    \
        int saved_errno = errno;                                                                \
        errno = 0;                                                                              \
        type result = cw_real.name args;                                                        \
        int error = errno;                                                                      \
        if (error == 0) errno = saved_errno;                                                    \
        cw_end(&call, failed, error);                                                           \
        return result;                                                                          \
    }                                                                                           \
    CW_DISPATCH(type, name, id, params, args)

/* A returned status: non-zero is the failure and its error number (or EAI_* code). */
#define CW_HOOK_STATUS(name, id, params, args)                                                  \
    CW_TIMED_INT(name, id, params, args, result != 0, result)                                   \
    CW_DISPATCH(int, name, id, params, args)

/* Returns nothing (set*ent, end*ent): never a failure; errno is what libc left. */
#define CW_HOOK_VOID(name, id, params, args)                                                    \
    CW_TIMED(void, name) params {                                                               \
        struct cw_call call;                                                                    \
        cw_begin(&call, id);                                                                    \
        cw_real.name args;                                                                      \
        cw_end(&call, 0, 0);                                                                    \
    }                                                                                           \
    CW_EXPORT void name params {                                                                \
        if (CW_LIKELY(!cw_selected[id])) {                                                      \
            cw_real.name args;                                                                  \
            return;                                                                             \
        }                                                                                       \
        cw_timed_##name args;                                                                   \
    }

/* open and openat take a mode only with O_CREAT or O_TMPFILE (va_arg otherwise reads junk);
 * the timed part gets it as a plain argument. */
#define CW_HOOK_OPEN(name, id, params, timed_params, args, last)                                \
    CW_TIMED_INT(name, id, timed_params, args, result == -1, result == -1 ? errno : 0)          \
    CW_EXPORT int name params {                                                                 \
        mode_t mode = 0;                                                                        \
        if (cw_open_needs_mode(flags)) {                                                        \
            va_list ap;                                                                         \
            va_start(ap, last);                                                                 \
            mode = (mode_t)va_arg(ap, int);                                                     \
            va_end(ap);                                                                         \
        }                                                                                       \
        if (CW_LIKELY(!cw_selected[id])) return cw_real.name args;                              \
        return cw_timed_##name args;                                                            \
    }

CW_HOOK_ERRNO(getpwnam, CW_FN_getpwnam, struct passwd *, result == NULL, (const char *name),
              (name))
CW_HOOK_ERRNO(getpwuid, CW_FN_getpwuid, struct passwd *, result == NULL, (uid_t uid), (uid))
CW_HOOK_ERRNO(getgrnam, CW_FN_getgrnam, struct group *, result == NULL, (const char *name),
              (name))
CW_HOOK_ERRNO(getgrgid, CW_FN_getgrgid, struct group *, result == NULL, (gid_t gid), (gid))
CW_HOOK_STATUS(getpwnam_r, CW_FN_getpwnam_r,
               (const char *name, struct passwd *entry, char *buffer, size_t size,
                struct passwd **result_entry),
               (name, entry, buffer, size, result_entry))
CW_HOOK_STATUS(getpwuid_r, CW_FN_getpwuid_r,
               (uid_t uid, struct passwd *entry, char *buffer, size_t size,
                struct passwd **result_entry),
               (uid, entry, buffer, size, result_entry))
CW_HOOK_STATUS(getgrnam_r, CW_FN_getgrnam_r,
               (const char *name, struct group *entry, char *buffer, size_t size,
                struct group **result_entry),
               (name, entry, buffer, size, result_entry))
CW_HOOK_STATUS(getgrgid_r, CW_FN_getgrgid_r,
               (gid_t gid, struct group *entry, char *buffer, size_t size,
                struct group **result_entry),
               (gid, entry, buffer, size, result_entry))
CW_HOOK_ERRNO(getservbyname, CW_FN_getservbyname, struct servent *, result == NULL,
              (const char *name, const char *protocol), (name, protocol))
CW_HOOK_ERRNO(getservbyport, CW_FN_getservbyport, struct servent *, result == NULL,
              (int port, const char *protocol), (port, protocol))
CW_HOOK_ERRNO(gethostbyname, CW_FN_gethostbyname, struct hostent *, result == NULL,
              (const char *name), (name))
CW_HOOK_ERRNO(gethostbyname2, CW_FN_gethostbyname2, struct hostent *, result == NULL,
              (const char *name, int family), (name, family))
CW_HOOK_STATUS(getaddrinfo, CW_FN_getaddrinfo,
               (const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **result_list),
               (node, service, hints, result_list))
CW_HOOK_STATUS(getnameinfo, CW_FN_getnameinfo,
               (const struct sockaddr *address, socklen_t address_length, char *host,
                socklen_t host_length, char *service, socklen_t service_length, int flags),
               (address, address_length, host, host_length, service, service_length, flags))
CW_HOOK_ERRNO(getgrouplist, CW_FN_getgrouplist, int, result == -1,
              (const char *user, gid_t group, gid_t *groups, int *count),
              (user, group, groups, count))
CW_HOOK_ERRNO(initgroups, CW_FN_initgroups, int, result == -1, (const char *user, gid_t group),
              (user, group))

CW_HOOK_OPEN(open, CW_FN_open, (const char *path, int flags, ...),
             (const char *path, int flags, mode_t mode), (path, flags, mode), flags)
CW_HOOK_OPEN(open64, CW_FN_open, (const char *path, int flags, ...),
             (const char *path, int flags, mode_t mode), (path, flags, mode), flags)
CW_HOOK_OPEN(openat, CW_FN_openat, (int dirfd, const char *path, int flags, ...),
             (int dirfd, const char *path, int flags, mode_t mode), (dirfd, path, flags, mode),
             flags)
CW_HOOK_OPEN(openat64, CW_FN_openat, (int dirfd, const char *path, int flags, ...),
             (int dirfd, const char *path, int flags, mode_t mode), (dirfd, path, flags, mode),
             flags)
CW_HOOK_MINUS_ONE(__open_2, CW_FN_open, (const char *path, int flags), (path, flags))
CW_HOOK_MINUS_ONE(__open64_2, CW_FN_open, (const char *path, int flags), (path, flags))
CW_HOOK_MINUS_ONE(__openat_2, CW_FN_openat, (int dirfd, const char *path, int flags),
                  (dirfd, path, flags))
CW_HOOK_MINUS_ONE(__openat64_2, CW_FN_openat, (int dirfd, const char *path, int flags),
                  (dirfd, path, flags))
CW_HOOK_MINUS_ONE(creat, CW_FN_creat, (const char *path, mode_t mode), (path, mode))
CW_HOOK_MINUS_ONE(creat64, CW_FN_creat, (const char *path, mode_t mode), (path, mode))
CW_HOOK_MINUS_ONE(close, CW_FN_close, (int fd), (fd))
CW_HOOK_MINUS_ONE(fsync, CW_FN_fsync, (int fd), (fd))
CW_HOOK_MINUS_ONE(fdatasync, CW_FN_fdatasync, (int fd), (fd))
CW_HOOK_MINUS_ONE(sync_file_range, CW_FN_sync_file_range,
                  (int fd, off64_t offset, off64_t bytes, unsigned int flags),
                  (fd, offset, bytes, flags))
CW_HOOK_MINUS_ONE(rename, CW_FN_rename, (const char *old_path, const char *new_path),
                  (old_path, new_path))
CW_HOOK_MINUS_ONE(renameat, CW_FN_renameat,
                  (int old_dirfd, const char *old_path, int new_dirfd, const char *new_path),
                  (old_dirfd, old_path, new_dirfd, new_path))
CW_HOOK_MINUS_ONE(unlink, CW_FN_unlink, (const char *path), (path))
CW_HOOK_MINUS_ONE(unlinkat, CW_FN_unlinkat, (int dirfd, const char *path, int flags),
                  (dirfd, path, flags))
CW_HOOK_MINUS_ONE(mkdir, CW_FN_mkdir, (const char *path, mode_t mode), (path, mode))
CW_HOOK_MINUS_ONE(link, CW_FN_link, (const char *old_path, const char *new_path),
                  (old_path, new_path))
CW_HOOK_MINUS_ONE(connect, CW_FN_connect,
                  (int fd, __CONST_SOCKADDR_ARG address, socklen_t length),
                  (fd, address, length))
CW_HOOK_MINUS_ONE(accept, CW_FN_accept, (int fd, __SOCKADDR_ARG address, socklen_t *length),
                  (fd, address, length))
CW_HOOK_MINUS_ONE(accept4, CW_FN_accept4,
                  (int fd, __SOCKADDR_ARG address, socklen_t *length, int flags),
                  (fd, address, length, flags))

/* Enumerations: glibc's getent calls setpwent, getpwent until NULL, endpwent (and likewise for
 * group and services); the _r forms are what threaded programs call. */
CW_HOOK_VOID(setpwent, CW_FN_setpwent, (void), ())
CW_HOOK_ERRNO(getpwent, CW_FN_getpwent, struct passwd *, result == NULL, (void), ())
CW_HOOK_VOID(endpwent, CW_FN_endpwent, (void), ())
CW_HOOK_VOID(setgrent, CW_FN_setgrent, (void), ())
CW_HOOK_ERRNO(getgrent, CW_FN_getgrent, struct group *, result == NULL, (void), ())
CW_HOOK_VOID(endgrent, CW_FN_endgrent, (void), ())
CW_HOOK_VOID(setservent, CW_FN_setservent, (int stay_open), (stay_open))
CW_HOOK_ERRNO(getservent, CW_FN_getservent, struct servent *, result == NULL, (void), ())
CW_HOOK_VOID(endservent, CW_FN_endservent, (void), ())
CW_HOOK_STATUS(getpwent_r, CW_FN_getpwent_r,
               (struct passwd *entry, char *buffer, size_t size, struct passwd **result_entry),
               (entry, buffer, size, result_entry))
CW_HOOK_STATUS(getgrent_r, CW_FN_getgrent_r,
               (struct group *entry, char *buffer, size_t size, struct group **result_entry),
               (entry, buffer, size, result_entry))
CW_HOOK_STATUS(getservent_r, CW_FN_getservent_r,
               (struct servent *entry, char *buffer, size_t size,
                struct servent **result_entry),
               (entry, buffer, size, result_entry))

#endif /* !CW_SPANS_LIBRARY */

#ifdef CW_SPANS_LIBRARY
/* ---- spans (libcwspans.so, loaded by native/include/cutaway/span.h) ----
 *
 * A span event is one record, like a timed call's: no lock, no allocation, no system call but
 * the chunk's (see cw_map_chunk). Names are interned by their address: a table of
 * CW_SPAN_TABLE slots maps a name pointer to the id its text was defined under in this file
 * (generation: a fork child's file defines its names again). Slots are claimed with a CAS, so
 * two threads never hold the same slot; both may define the same name at once, and the reader
 * merges ids by text. Past CW_SPAN_PROBES collisions, a name is defined again at each use. */

#define CW_SPAN_TABLE 4096u
#define CW_SPAN_PROBES 32u

struct cw_span_slot {
    const char *name; /* atomic: set once by the CAS that claims the slot */
    uint32_t id;      /* atomic: 0 until defined */
    uint32_t generation;
};

static struct cw_span_slot cw_span_table[CW_SPAN_TABLE];
static uint32_t cw_span_next_id; /* atomic: ids are unique in the process's files */

/* The next free record of this thread's chunk, or NULL (counted as dropped by the caller). */
static inline char *cw_next_slot(struct cw_thread *self) {
    if (CW_LIKELY(self->cursor != self->end)) {
        char *slot = self->cursor;
        self->cursor += sizeof(struct cw_calls_record); /* span files: never thread CPU time */
        return slot;
    }
    return cw_claim_chunk(self);
}

/* Write the records that define `id` as the text of `name` (cut to CW_SPAN_NAME_MAX). */
__attribute__((noinline, cold)) static void cw_span_define(struct cw_thread *self, uint32_t id,
                                                           const char *name) {
    size_t length = strnlen(name, CW_SPAN_NAME_MAX + 1);
    unsigned flags = 0;
    if (length > CW_SPAN_NAME_MAX) {
        length = CW_SPAN_NAME_MAX;
        flags = CW_SPAN_NAME_CUT;
    }
    for (uint32_t part = 0; (size_t)part * CW_SPAN_TEXT_BYTES < length; part++) {
        struct cw_span_name_text *text = (struct cw_span_name_text *)(void *)cw_next_slot(self);
        if (text == NULL) {
            cw_drop_record();
            return;
        }
        size_t offset = (size_t)part * CW_SPAN_TEXT_BYTES;
        size_t bytes = length - offset < CW_SPAN_TEXT_BYTES ? length - offset : CW_SPAN_TEXT_BYTES;
        memcpy(text->text, name + offset, bytes);
        text->part = (uint16_t)part;
        text->name_id = id;
        __atomic_store_n(&text->function_id, (uint16_t)CW_SPAN_NAME_TEXT, __ATOMIC_RELEASE);
    }
    struct cw_calls_record *record = (struct cw_calls_record *)(void *)cw_next_slot(self);
    if (record == NULL) {
        cw_drop_record();
        return;
    }
    record->flags = (uint8_t)flags;
    record->thread_id = self->tid;
    record->call_index = id;
    record->overall_index = (uint32_t)length;
    __atomic_store_n(&record->function_id, (uint16_t)CW_SPAN_NAME, __ATOMIC_RELEASE);
}

static uint32_t cw_span_new_id(struct cw_thread *self, const char *name) {
    uint32_t id = __atomic_add_fetch(&cw_span_next_id, 1, __ATOMIC_RELAXED);
    cw_span_define(self, id, name);
    return id;
}

/* The id of `name` in this process's current file, defining it on first use. */
static inline uint32_t cw_span_id(struct cw_thread *self, const char *name) {
    uint64_t hash = ((uint64_t)(uintptr_t)name * UINT64_C(0x9e3779b97f4a7c15)) >> 52;
    for (uint32_t probe = 0; probe < CW_SPAN_PROBES; probe++) {
        struct cw_span_slot *slot = &cw_span_table[(hash + probe) & (CW_SPAN_TABLE - 1)];
        const char *held = __atomic_load_n(&slot->name, __ATOMIC_ACQUIRE);
        if (held == NULL) {
            if (!__atomic_compare_exchange_n(&slot->name, &held, name, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE) &&
                held != name)
                continue; /* another name took it */
            held = name;
        }
        if (held != name) continue;
        uint32_t id = __atomic_load_n(&slot->id, __ATOMIC_ACQUIRE);
        if (CW_LIKELY(id != 0 &&
                      __atomic_load_n(&slot->generation, __ATOMIC_RELAXED) == cw_process.generation))
            return id;
        id = cw_span_new_id(self, name);
        __atomic_store_n(&slot->generation, cw_process.generation, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->id, id, __ATOMIC_RELEASE);
        return id;
    }
    return cw_span_new_id(self, name); /* the table is crowded here: define it again */
}

/* Version 5: one record per span, written when it ends. A begin only pushes the name and the
 * clock on the thread's stack of open spans; an end finds the innermost open span of its name
 * (by address, then by text), writes it as one CW_SPAN record (start, duration, level) and pops
 * it. What does not pair up is written as in version 4, so that readers report it by name: an
 * end with no open span of its name is a CW_SPAN_END record; spans still open above the one
 * an end closes, and spans still open when the thread or the process exits, are CW_SPAN_BEGIN
 * records (innermost first, so that a reader rebuilds the nesting from the levels alone). */

#define CW_SPAN_FIRST_CAPACITY 256u  /* open spans per thread: 4 KiB, then x 4 */
#define CW_SPAN_MAX_CAPACITY 65536u  /* levels 0 to 65535: the record's level is 16 bits */

/* Room for one more open span: maps or grows the thread's stack (a few system calls, once per
 * thread and per factor of 4). Returns 0 when the stack is as deep as it can be. */
__attribute__((noinline, cold)) static int cw_span_grow(struct cw_thread *self) {
    uint32_t capacity = self->capacity == 0 ? CW_SPAN_FIRST_CAPACITY : self->capacity * 4u;
    if (capacity > CW_SPAN_MAX_CAPACITY) return 0;
    int saved_errno = errno;
    size_t bytes = (size_t)capacity * sizeof(struct cw_open_span);
    size_t old_bytes = (size_t)self->capacity * sizeof(struct cw_open_span);
    void *spans = self->spans == NULL ? mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                      : mremap(self->spans, old_bytes, bytes, MREMAP_MAYMOVE);
    if (spans != MAP_FAILED) {
        self->spans = spans;
        self->capacity = capacity;
        /* The thread's exit writes its open spans and unmaps the stack. */
        if (!self->key_set && cw_thread_key_ok)
            self->key_set = pthread_setspecific(cw_thread_key, self) == 0;
    }
    errno = saved_errno;
    return spans != MAP_FAILED;
}

/* Write one event record of this thread: `kind` CW_SPAN, CW_SPAN_BEGIN or CW_SPAN_END. */
static inline void cw_span_write(struct cw_thread *self, uint16_t kind, const char *name,
                                 uint32_t level, int64_t start, int64_t end) {
    uint32_t id = cw_span_id(self, name == NULL ? "" : name);
    struct cw_calls_record *record = (struct cw_calls_record *)(void *)cw_next_slot(self);
    if (CW_UNLIKELY(record == NULL)) {
        cw_drop_record();
        return;
    }
    uint64_t duration = end > start ? (uint64_t)(end - start) : 0;
    unsigned flags = 0;
    if (CW_UNLIKELY(duration >> 48 != 0)) {
        duration = (UINT64_C(1) << 48) - 1;
        flags = CW_CALL_LONG_DURATION;
    }
    record->depth = level > UINT8_MAX ? UINT8_MAX : (uint8_t)level;
    record->flags = (uint8_t)flags;
    record->thread_id = self->tid;
    record->call_index = id;
    record->overall_index = ++self->position;
    record->start = start;
    record->duration_low = (uint32_t)duration;
    record->duration_high = (uint16_t)(duration >> 32);
    record->error = (int16_t)(uint16_t)level;
    /* Last, with release order: a record cut short by a kill reads as unused. */
    __atomic_store_n(&record->function_id, kind, __ATOMIC_RELEASE);
}

/* The open spans from level `from` up, as begins without an end, innermost first. */
__attribute__((noinline, cold)) static void cw_span_abandon(struct cw_thread *self,
                                                            uint32_t from) {
    while (self->open > from) {
        self->open--;
        const struct cw_open_span *open = &self->spans[self->open];
        cw_span_write(self, CW_SPAN_BEGIN, open->name, self->open, open->start, open->start);
    }
}

/* At a thread's exit (the key's destructor) and the process's (cw_finish, for the thread that
 * exits): its spans still open become begins without an end; then the stack is unmapped. */
static void cw_span_close_thread(struct cw_thread *self) {
    if ((self->open > 0 || self->overflow > 0) && *cw_state == CW_STATE_RECORDING &&
        !self->writing) {
        self->writing = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        cw_span_abandon(self, 0);
        self->overflow = 0;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        self->writing = 0;
    }
    if (self->spans != NULL) munmap(self->spans, (size_t)self->capacity * sizeof *self->spans);
    self->spans = NULL;
    self->open = self->capacity = 0;
}

/* The level of the innermost open span named `name` (by address, else by text), or `open` when
 * there is none. The innermost open span is checked by address before calling this. */
__attribute__((noinline)) static uint32_t cw_span_find(const struct cw_thread *self,
                                                       const char *name) {
    for (uint32_t level = self->open; level-- > 0;)
        if (self->spans[level].name == name) return level;
    if (name == NULL) name = "";
    for (uint32_t level = self->open; level-- > 0;) {
        const char *open = self->spans[level].name == NULL ? "" : self->spans[level].name;
        if (strcmp(open, name) == 0) return level;
    }
    return self->open;
}

__attribute__((always_inline)) static inline void cw_span_begin_event(const char *name) {
    if (CW_UNLIKELY(*cw_state != CW_STATE_RECORDING) && !cw_resume()) return;
    struct cw_thread *self = &cw_self;
    if (CW_UNLIKELY(self->writing)) { /* a signal handler inside this thread's event */
        cw_drop_record();
        return;
    }
    self->writing = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (CW_LIKELY(self->open < self->capacity) || cw_span_grow(self)) {
        struct cw_open_span *open = &self->spans[self->open++];
        open->name = name;
        open->start = cw_ticks(); /* last: closest to the work */
    } else {
        self->overflow++; /* deeper than 65536 levels: dropped, with its end */
        cw_drop_record();
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    self->writing = 0;
}

__attribute__((always_inline)) static inline void cw_span_end_event(const char *name) {
    int64_t now = cw_ticks(); /* first: closest to the work */
    if (CW_UNLIKELY(*cw_state != CW_STATE_RECORDING) && !cw_resume()) return;
    struct cw_thread *self = &cw_self;
    if (CW_UNLIKELY(self->writing)) {
        cw_drop_record();
        return;
    }
    self->writing = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint32_t top = self->open; /* (the thread's id is set when it claims its first chunk) */
    uint32_t level = top > 0 && self->spans[top - 1].name == name ? top - 1
                                                                  : cw_span_find(self, name);
    if (CW_UNLIKELY(self->overflow > 0)) {
        self->overflow--; /* the end of a begin that was dropped */
        cw_drop_record();
    } else if (CW_LIKELY(level < top)) {
        if (CW_UNLIKELY(level + 1 < top)) cw_span_abandon(self, level + 1);
        cw_span_write(self, CW_SPAN, name, level, self->spans[level].start, now);
        self->open = level;
    } else {
        cw_span_write(self, CW_SPAN_END, name, top, now, now); /* no begin: reported */
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    self->writing = 0;
}

/* One span event: `begin` 1 for cw_span_begin, 0 for cw_span_end. Called through the pointer
 * that span.h looks up with dlsym; the only symbol the span library exports. */
CW_EXPORT void cw_spans_event(const char *name, unsigned begin) {
    if (begin) cw_span_begin_event(name);
    else cw_span_end_event(name);
}
#endif /* CW_SPANS_LIBRARY */

/* ---- start and finish ---- */

/* Read the selection and the directory from the environment. Returns 0 when there is
 * something to time and somewhere to write. */
static int cw_configure(unsigned char *selected) {
#ifdef CW_SPANS_LIBRARY
    (void)selected;
    const char *names = "";
    const char *directory = getenv("CUTAWAY_SPANS_DIR");
    if (directory == NULL || directory[0] == '\0') return -1;
    cw_header_flags |= CW_CALLS_FLAG_SPANS;
#else
    const char *names = getenv("CUTAWAY_CALLS");
    const char *directory = getenv("CUTAWAY_CALLS_DIR");
    if (names == NULL || directory == NULL || directory[0] == '\0') return -1;
#endif
    while (*names != '\0') {
        size_t length = strcspn(names, ",");
        int known = 0;
        for (unsigned id = 1; id <= CW_CALLS_CATALOG_SIZE; id++) {
            if (length == strlen(cw_names[id]) && strncmp(names, cw_names[id], length) == 0) {
                selected[id] = 1;
                cw_selected_mask |= UINT64_C(1) << (id - 1);
                known = 1;
            }
        }
        if (!known && length > 0) cw_header_flags |= CW_CALLS_FLAG_UNKNOWN_NAME;
        names += length + (names[length] == ',');
    }
#ifdef CW_SPANS_LIBRARY
    const char *cpu = NULL; /* span records are 32 bytes: no thread CPU time */
#else
    const char *cpu = getenv(CW_ENV("_THREAD_CPU"));
#endif
    cw_thread_cpu = cpu != NULL && cpu[0] != '\0' && strcmp(cpu, "0") != 0;
    if (cw_thread_cpu) {
        cw_header_flags |= CW_CALLS_FLAG_THREAD_CPU;
        cw_record_bytes = sizeof(struct cw_calls_record_cpu);
    }
#if CW_HAVE_TSC
    const char *tsc_hz = getenv(CW_ENV("_TSC_HZ"));
    if (tsc_hz != NULL && tsc_hz[0] != '\0') {
        char *rest = NULL;
        unsigned long long hz = strtoull(tsc_hz, &rest, 10);
        if (rest != NULL && *rest == '\0' && hz >= 1000000) { /* else: CLOCK_MONOTONIC */
            cw_tsc_hz = hz;
            cw_use_tsc = 1;
        }
    }
#endif
    char cwd[PATH_MAX];
    int length = directory[0] == '/' || getcwd(cwd, sizeof cwd) == NULL
                     ? snprintf(cw_directory, sizeof cw_directory, "%s", directory)
                     : snprintf(cw_directory, sizeof cw_directory, "%s/%s", cwd, directory);
    if (length < 0 || (size_t)length >= sizeof cw_directory) return -1;
#ifdef CW_SPANS_LIBRARY
    return 0;
#else
    return cw_selected_mask != 0 ? 0 : -1;
#endif
}

/* The fork detection page and handlers, the thread-exit key. */
static void cw_prepare_process_hooks(void) {
    long page_bytes = sysconf(_SC_PAGESIZE);
    if (page_bytes > 0) cw_page_bytes = (size_t)page_bytes;
    void *page = mmap(NULL, cw_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    if (page != MAP_FAILED) {
        if (madvise(page, cw_page_bytes, MADV_WIPEONFORK) == 0) cw_state = page;
        else munmap(page, cw_page_bytes);
    }
    pthread_atfork(NULL, NULL, cw_forked); /* also covers kernels without MADV_WIPEONFORK */
    cw_thread_key_ok = pthread_key_create(&cw_thread_key, cw_thread_exit) == 0;
}

__attribute__((constructor)) static void cw_start(void) {
    int saved_errno = errno;
#ifndef CW_SPANS_LIBRARY
    cw_resolve_all();
#endif
    unsigned char selected[CW_CALLS_CATALOG_SIZE + 1] = {0};
    if (cw_configure(selected) == 0) {
        cw_prepare_process_hooks();
        if (cw_start_process() == 0) {
            *cw_state = CW_STATE_RECORDING;
            memcpy(cw_selected, selected, sizeof cw_selected); /* last: the hooks go live */
        }
    }
    errno = saved_errno;
}

/* True when this process has exactly one thread: glibc's own flag where it has one (it never
 * goes back to true once a thread was started), else field 20 of /proc/self/stat. */
static int cw_single_threaded(void) {
#if CW_HAVE_SINGLE_THREADED
    return __libc_single_threaded != 0;
#else
    char text[1024];
    int fd = cw_sys_open("/proc/self/stat", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return 0;
    ssize_t length = read(fd, text, sizeof text - 1);
    cw_sys_close(fd);
    if (length <= 0) return 0;
    text[length] = '\0';
    const char *cursor = strrchr(text, ')'); /* after the command name, which may hold spaces */
    for (int field = 2; cursor != NULL && field < 20; field++) cursor = strchr(cursor + 1, ' ');
    return cursor != NULL && strtol(cursor + 1, NULL, 10) == 1;
#endif
}

/* At exit: stop recording, and cut the preallocated tail when no other thread can still be
 * writing into it (with other threads alive, or once there were, the file keeps its size:
 * readers skip zeros). A single thread's records end at its cursor: its chunk is the last one
 * claimed, since a fork child starts a file of its own. */
__attribute__((destructor)) static void cw_finish(void) {
    if (*cw_state != CW_STATE_RECORDING) return; /* e.g. a fork child that timed nothing */
    int saved_errno = errno;
#ifdef CW_SPANS_LIBRARY
    cw_span_close_thread(&cw_self);
#endif
    *cw_state = CW_STATE_CLOSED;
    const struct cw_thread *self = &cw_self;
    uint64_t claimed_end = __atomic_load_n(&cw_process.next_offset, __ATOMIC_RELAXED);
    uint64_t used_end = 0; /* 0: another thread's chunk may hold records after ours */
    if (self->chunk != NULL) {
        if (self->chunk_offset + (uint64_t)(self->end - self->chunk) == claimed_end)
            used_end = self->chunk_offset + (uint64_t)(self->cursor - self->chunk);
    } else if (__atomic_load_n(&cw_process.first_chunk, __ATOMIC_ACQUIRE) != NULL &&
               claimed_end == cw_first_file_bytes()) {
        used_end = CW_CALLS_HEADER_BYTES; /* no records at all */
    }
    if (used_end != 0 && cw_single_threaded()) {
        int fd = cw_sys_open(cw_process.path, O_RDWR | O_CLOEXEC, 0);
        if (fd >= 0) {
            if (ftruncate(fd, (off_t)used_end) != 0) {
                /* the file keeps its preallocated size, which readers handle */
            }
            cw_sys_close(fd);
        }
    }
    errno = saved_errno;
}
