/*
 * cw_calls_calibrate.c: what the call interposer costs per call, and the rate of its clock,
 * measured where it runs.
 *
 *   cw_calls_calibrate CALLS     calls close(-1) CALLS times in each of 7 batches and prints
 *                                the fastest batch's nanoseconds per call
 *   cw_calls_calibrate --tsc-hz  prints the time-stamp counter's ticks per second, measured
 *                                against CLOCK_MONOTONIC over 100 ms (exit status 3 where the
 *                                CPU has no TSC that user code can read)
 *
 * close(-1) fails at once in the kernel (EBADF), so the first figure is the call's own floor.
 * The calls probe runs it twice, with libcwcalls.so preloaded and timing `close`, and with
 * nothing preloaded; the difference is the probe's overhead per timed call (a tool that
 * measures must measure itself). The TSC rate is what the probe passes to the library in
 * CUTAWAY_CALLS_TSC_HZ. Exit status 2 on bad usage.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CW_HAVE_TSC 1
#else
#define CW_HAVE_TSC 0
#endif

static int64_t cw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#if CW_HAVE_TSC
/* A TSC reading and the CLOCK_MONOTONIC instant it belongs to: the middle of the tightest of
 * a few brackets of two clock reads around it (a preemption widens a bracket; the tightest
 * is the one to trust). */
static void cw_pair(uint64_t *ticks, double *ns) {
    int64_t best = INT64_MAX;
    for (int i = 0; i < 32; i++) {
        int64_t before = cw_now_ns();
        uint64_t tsc = __rdtsc();
        int64_t after = cw_now_ns();
        if (after - before < best) {
            best = after - before;
            *ticks = tsc;
            *ns = ((double)before + (double)after) / 2.0;
        }
    }
}

static int cw_print_tsc_hz(void) {
    uint64_t ticks_start, ticks_end;
    double ns_start, ns_end;
    cw_pair(&ticks_start, &ns_start);
    struct timespec pause = {0, 100000000};
    while (nanosleep(&pause, &pause) != 0) {
    }
    cw_pair(&ticks_end, &ns_end);
    if (ticks_end <= ticks_start || ns_end <= ns_start) return 3;
    printf("%.0f\n", (double)(ticks_end - ticks_start) * 1e9 / (ns_end - ns_start));
    return 0;
}
#else
static int cw_print_tsc_hz(void) { return 3; }
#endif

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--tsc-hz") == 0) return cw_print_tsc_hz();
    long calls = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
    if (calls <= 0) {
        fprintf(stderr, "usage: cw_calls_calibrate CALLS | --tsc-hz\n");
        return 2;
    }
    int64_t best = INT64_MAX;
    for (int batch = 0; batch < 7; batch++) {
        int64_t start = cw_now_ns();
        for (long i = 0; i < calls; i++) close(-1);
        int64_t elapsed = cw_now_ns() - start;
        if (elapsed < best) best = elapsed;
    }
    printf("%.3f\n", (double)best / (double)calls);
    return 0;
}
