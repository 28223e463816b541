/*
 * cutaway/span.h: named, nested spans (phases) for cutaway, in one header, stb-style.
 *
 *     #define CUTAWAY_SPAN_IMPLEMENTATION   // in exactly one C or C++ file of the program
 *     #include "cutaway/span.h"
 *
 *     cw_span_begin("decode");
 *     ...
 *     cw_span_end("decode");
 *
 *     {
 *         CW_SPAN_SCOPE("retrieve");        // ends when the block is left (GCC, Clang)
 *         ...
 *     }
 *
 * Not run under cutaway, a span costs one well-predicted branch per cw_span_begin and
 * cw_span_end: a load of cw_span_hook and a compare with NULL. The environment is read once,
 * by a constructor, before main. Under cutaway's spans probe, CUTAWAY_SPANS_LIBRARY names the
 * span writer (libcwspans.so, installed with cutaway) and CUTAWAY_SPANS_DIR the directory of
 * its files: the constructor loads the writer (dlopen); a begin then notes the name and the
 * time in the thread's memory, and the end writes the span as one 32-byte record in this
 * process's file, spans.<pid>.<n>.bin (docs/spans.md, docs/calls-format.md).
 * The writer is cutaway's call interposer built for spans: same files, same threads, fork and
 * exec behaviour, same reader.
 *
 * Contract:
 * - `name` is a NUL-terminated string that stays valid and unchanged while the process runs
 *   (a string literal): the writer knows a name by its address after its first use. Names are
 *   data, any bytes but NUL; longer than 1024 bytes they are cut (and flagged).
 * - Spans nest per thread by name: cw_span_end("x") closes the innermost open "x" of the
 *   thread. cutaway reports a begin without its end, or an end without its begin, by name,
 *   process and thread, and keeps every other span.
 * - Safe from any thread, no allocation and no lock on the span path; an event from a signal
 *   handler that interrupts the same thread's event is dropped and counted.
 * - Events before the constructors ran (from another constructor) are not recorded.
 * - No dependency but the C library (dlopen, in libc since glibc 2.34; link -ldl before).
 *
 * Names of this header: cw_span_* and CW_SPAN_*; cw_span__* are private.
 */
#ifndef CUTAWAY_SPAN_H
#define CUTAWAY_SPAN_H

#ifdef __cplusplus
extern "C" {
#endif

#define CW_SPAN_VERSION 1 /* of this API; the record format is versioned in docs/spans.md */
#define CW_SPAN_LIBRARY_VARIABLE "CUTAWAY_SPANS_LIBRARY"

typedef void cw_span_event_fn(const char *name, unsigned begin);

/* NULL unless run under cutaway's spans probe; set once, before main. */
extern cw_span_event_fn *cw_span_hook;

#if defined(__GNUC__) || defined(__clang__)
#define CW_SPAN__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define CW_SPAN__UNLIKELY(x) (x)
#endif

/* Start the span `name` in this thread. */
static inline void cw_span_begin(const char *name) {
    if (CW_SPAN__UNLIKELY(cw_span_hook != 0)) cw_span_hook(name, 1u);
}

/* End the innermost open span `name` of this thread. */
static inline void cw_span_end(const char *name) {
    if (CW_SPAN__UNLIKELY(cw_span_hook != 0)) cw_span_hook(name, 0u);
}

/* 1 when spans are being recorded (to skip work that only feeds a span). */
static inline int cw_span_enabled(void) { return cw_span_hook != 0; }

#if defined(__GNUC__) || defined(__clang__)
static inline void cw_span__leave(const char *const *name) { cw_span_end(*name); }
#define CW_SPAN__JOIN2(a, b) a##b
#define CW_SPAN__JOIN(a, b) CW_SPAN__JOIN2(a, b)
/* A span from here to the end of the enclosing block, however it is left. */
#define CW_SPAN_SCOPE(name)                                                                     \
    const char *const CW_SPAN__JOIN(cw_span__scope_, __LINE__)                                  \
        __attribute__((cleanup(cw_span__leave), unused)) = (cw_span_begin(name), (name))
#endif

#ifdef __cplusplus
}
#endif

#endif /* CUTAWAY_SPAN_H */

#ifdef CUTAWAY_SPAN_IMPLEMENTATION
#ifndef CUTAWAY_SPAN_IMPLEMENTED
#define CUTAWAY_SPAN_IMPLEMENTED
#include <dlfcn.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

cw_span_event_fn *cw_span_hook = 0;

/* Once, before main: under cutaway, load the writer it names and take its event function.
 * Anything missing (no variable, a library that does not load) leaves spans off. */
__attribute__((constructor)) static void cw_span__start(void) {
    const char *library = getenv(CW_SPAN_LIBRARY_VARIABLE);
    if (library == 0 || library[0] == '\0') return;
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == 0) return;
    void *event = dlsym(handle, "cw_spans_event");
    /* A data pointer to a function pointer: POSIX guarantees it for dlsym. */
    if (event != 0) *(void **)&cw_span_hook = event;
}

#ifdef __cplusplus
}
#endif
#endif /* CUTAWAY_SPAN_IMPLEMENTED */
#endif /* CUTAWAY_SPAN_IMPLEMENTATION */
